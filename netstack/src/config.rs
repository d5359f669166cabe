//! The configuration file (TOML), in the spirit of F-Stack's config.ini and K-NET's knet_comm.conf:
//!
//! ```toml
//! lcores = "0"                      # DPDK corelist: one stack (and one port queue pair) per lcore
//!
//! [port]
//! device = "net_af_packet0,iface=veth0"   # a vdev with devargs, or a PCI address ("0000:01:00.0[,key=val]")
//! mac = "02:00:00:00:00:01"               # optional: the port's own MAC if left out
//!
//! [ipv4]
//! address = "10.0.0.2/24"
//! gateway = "10.0.0.1"                    # optional: off-subnet addresses are unreachable without it
//!
//! [memory]
//! pool_size = 8191                        # mbufs
//! hugepages = false                       # true: DMA memory from hugepages (needed by PCI ports)
//!
//! [tcp]                                   # optional
//! rx_buffer = 65536
//! tx_buffer = 65536
//! backlog = 64
//!
//! [control]                               # optional
//! name = "netstack"                       # the control socket is <dir>/netstack-<name>.<lcore>.sock
//! dir = "/var/run"                        # default: $XDG_RUNTIME_DIR, else /var/run
//! ```
//!
//! A missing or wrong field is an [`Error::Config`] naming the file, the line and the field.

use std::net::Ipv4Addr;
use std::ops::Range;
use std::path::{Path, PathBuf};

use pktio::MacAddr;
use serde::Deserialize;
use toml::Spanned;

use crate::{Error, Result, StackConfig};

/// A parsed, checked configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The file it came from.
    pub file: PathBuf,
    /// EAL corelist (`"0"`, `"0-3"`, `"1,3"`).
    pub lcores: String,
    /// The port: a vdev with its devargs, or a PCI address (with devargs).
    pub device: String,
    /// MAC to use; `None` takes the port's.
    pub mac: Option<MacAddr>,
    /// IPv4 address.
    pub address: Ipv4Addr,
    /// Prefix length of its subnet.
    pub prefix_len: u8,
    /// Default gateway.
    pub gateway: Option<Ipv4Addr>,
    /// Mbufs in the pool.
    pub pool_size: u32,
    /// DMA memory from hugepages.
    pub hugepages: bool,
    /// TCP receive buffer per connection, bytes.
    pub tcp_rx_buffer: usize,
    /// TCP send buffer per connection, bytes.
    pub tcp_tx_buffer: usize,
    /// Listening sockets kept ready per listener.
    pub tcp_backlog: usize,
    /// Control socket name.
    pub control_name: String,
    /// Control socket directory.
    pub control_dir: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    lcores: Option<Spanned<String>>,
    port: Spanned<RawPort>,
    ipv4: Spanned<RawIpv4>,
    memory: Option<Spanned<RawMemory>>,
    tcp: Option<RawTcp>,
    control: Option<RawControl>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPort {
    device: Spanned<String>,
    mac: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIpv4 {
    address: Spanned<String>,
    gateway: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMemory {
    pool_size: Option<Spanned<u32>>,
    hugepages: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTcp {
    rx_buffer: Option<Spanned<usize>>,
    tx_buffer: Option<Spanned<usize>>,
    backlog: Option<Spanned<usize>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawControl {
    name: Option<Spanned<String>>,
    dir: Option<String>,
}

/// The directory control sockets go in when the configuration names none.
pub fn default_control_dir() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/var/run"))
}

impl Config {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Config> {
        let text =
            std::fs::read_to_string(path).map_err(|source| Error::ConfigRead { file: path.to_owned(), source })?;
        Config::parse(path, &text)
    }

    /// Checks `text` (the contents of `file`).
    pub fn parse(file: &Path, text: &str) -> Result<Config> {
        let err = |span: Range<usize>, field: &str, message: String| Error::Config {
            file: file.to_owned(),
            line: line_of(text, span.start),
            field: field.to_owned(),
            message,
        };
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            let message = e.message().trim().to_owned();
            let field = field_of(text, &span, &message);
            err(span, &field, message)
        })?;

        let lcores = match &raw.lcores {
            Some(l) => {
                let ok =
                    !l.get_ref().is_empty() && l.get_ref().chars().all(|c| c.is_ascii_digit() || c == ',' || c == '-');
                if !ok {
                    return Err(err(
                        l.span(),
                        "lcores",
                        format!("`{}` is not a corelist like \"0\" or \"0-3\"", l.get_ref()),
                    ));
                }
                l.get_ref().clone()
            }
            None => "0".to_owned(),
        };
        let port = raw.port.get_ref();
        let device = port.device.get_ref().trim().to_owned();
        if device.is_empty() {
            return Err(err(
                port.device.span(),
                "port.device",
                "empty: give a vdev (net_af_packet0,iface=veth0) or a PCI address".into(),
            ));
        }
        let mac = match &port.mac {
            Some(m) => Some(m.get_ref().parse::<MacAddr>().map_err(|e| {
                err(m.span(), "port.mac", format!("{e}: expected six hex bytes like 02:00:00:00:00:01"))
            })?),
            None => None,
        };
        let ipv4 = raw.ipv4.get_ref();
        let a = &ipv4.address;
        let (addr, prefix) = a.get_ref().split_once('/').ok_or_else(|| {
            err(a.span(), "ipv4.address", format!("`{}` has no prefix length: write it as 10.0.0.2/24", a.get_ref()))
        })?;
        let address: Ipv4Addr = addr
            .trim()
            .parse()
            .map_err(|_| err(a.span(), "ipv4.address", format!("`{addr}` is not an IPv4 address")))?;
        let prefix_len: u8 = prefix
            .trim()
            .parse()
            .ok()
            .filter(|p| *p <= 32)
            .ok_or_else(|| err(a.span(), "ipv4.address", format!("prefix length `{prefix}` is not 0 to 32")))?;
        let gateway = match &ipv4.gateway {
            Some(g) => {
                let gw: Ipv4Addr =
                    g.get_ref().trim().parse().map_err(|_| {
                        err(g.span(), "ipv4.gateway", format!("`{}` is not an IPv4 address", g.get_ref()))
                    })?;
                let probe = StackConfig::new(MacAddr::ZERO, address, prefix_len);
                if !probe.on_link(gw) {
                    return Err(err(
                        g.span(),
                        "ipv4.gateway",
                        format!("{gw} is not on the subnet of {address}/{prefix_len}"),
                    ));
                }
                Some(gw)
            }
            None => None,
        };
        let (mut pool_size, mut hugepages) = (8191, false);
        if let Some(m) = &raw.memory {
            if let Some(p) = &m.get_ref().pool_size {
                if *p.get_ref() < 512 {
                    return Err(err(
                        p.span(),
                        "memory.pool_size",
                        format!("{} mbufs is too few: at least 512", p.get_ref()),
                    ));
                }
                pool_size = *p.get_ref();
            }
            hugepages = m.get_ref().hugepages.unwrap_or(false);
        }
        let defaults = StackConfig::new(MacAddr::ZERO, address, prefix_len);
        let (mut tcp_rx_buffer, mut tcp_tx_buffer, mut tcp_backlog) =
            (defaults.tcp_rx_buffer, defaults.tcp_tx_buffer, defaults.tcp_backlog);
        if let Some(t) = &raw.tcp {
            for (field, value, out) in [
                ("tcp.rx_buffer", &t.rx_buffer, &mut tcp_rx_buffer),
                ("tcp.tx_buffer", &t.tx_buffer, &mut tcp_tx_buffer),
            ] {
                if let Some(v) = value {
                    if !(1024..=(1 << 30)).contains(v.get_ref()) {
                        return Err(err(
                            v.span(),
                            field,
                            format!("{} bytes: expected 1024 to 1073741824", v.get_ref()),
                        ));
                    }
                    *out = *v.get_ref();
                }
            }
            if let Some(b) = &t.backlog {
                if !(1..=4096).contains(b.get_ref()) {
                    return Err(err(b.span(), "tcp.backlog", format!("{}: expected 1 to 4096", b.get_ref())));
                }
                tcp_backlog = *b.get_ref();
            }
        }
        let mut control_name = "netstack".to_owned();
        let mut control_dir = default_control_dir();
        if let Some(c) = &raw.control {
            if let Some(n) = &c.name {
                let ok = !n.get_ref().is_empty()
                    && n.get_ref().chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_');
                if !ok {
                    return Err(err(
                        n.span(),
                        "control.name",
                        format!("`{}`: use letters, digits, - and _", n.get_ref()),
                    ));
                }
                control_name = n.get_ref().clone();
            }
            if let Some(d) = &c.dir {
                control_dir = PathBuf::from(d);
            }
        }
        Ok(Config {
            file: file.to_owned(),
            lcores,
            device,
            mac,
            address,
            prefix_len,
            gateway,
            pool_size,
            hugepages,
            tcp_rx_buffer,
            tcp_tx_buffer,
            tcp_backlog,
            control_name,
            control_dir,
        })
    }

    /// The stack configuration for a port whose own MAC is `port_mac`.
    pub fn stack_config(&self, port_mac: MacAddr) -> StackConfig {
        let mut s = StackConfig::new(self.mac.unwrap_or(port_mac), self.address, self.prefix_len);
        s.gateway = self.gateway;
        s.tcp_rx_buffer = self.tcp_rx_buffer;
        s.tcp_tx_buffer = self.tcp_tx_buffer;
        s.tcp_backlog = self.tcp_backlog;
        s
    }

    /// The control socket of `lcore`.
    pub fn control_socket(&self, lcore: u32) -> PathBuf {
        control_socket_path(&self.control_dir, &self.control_name, lcore)
    }
}

/// `<dir>/netstack-<name>.<lcore>.sock`.
pub fn control_socket_path(dir: &Path, name: &str, lcore: u32) -> PathBuf {
    dir.join(format!("netstack-{name}.{lcore}.sock"))
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// The dotted name of the field a parse error points at: the key on its line (under the table it is in), or
/// for a missing field, the table's name and the field serde names.
fn field_of(text: &str, span: &Range<usize>, message: &str) -> String {
    let start = span.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let table = text[..line_start]
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix('[').and_then(|l| l.strip_suffix(']')).map(str::trim))
        .unwrap_or("");
    let join = |t: &str, k: &str| if t.is_empty() { k.to_owned() } else { format!("{t}.{k}") };
    if let Some(rest) = message.split("missing field `").nth(1) {
        let key = rest.split('`').next().unwrap_or("");
        let here = text[line_start..].lines().next().unwrap_or("").trim();
        // The span of a missing field is the header of the table lacking it, or empty for a top-level field.
        if span.is_empty() {
            return key.to_owned();
        }
        if let Some(t) = here.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            return join(t.trim(), key);
        }
        return join(table, key);
    }
    if let Some(rest) = message.split("unknown field `").nth(1) {
        return join(table, rest.split('`').next().unwrap_or(""));
    }
    let line = text[line_start..].lines().next().unwrap_or("");
    match line.split_once('=') {
        Some((k, _)) if !line.trim_start().starts_with('[') => join(table, k.trim()),
        _ => table.to_owned(),
    }
}
