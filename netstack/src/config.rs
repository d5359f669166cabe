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
//! address = "10.0.0.2/24"                 # a unicast host address, prefix /1 to /31
//! gateway = "10.0.0.1"                    # optional: off-subnet addresses are unreachable without it
//!
//! [memory]
//! pool_size = 8191                        # mbufs
//! hugepages = false                       # true: DMA memory from hugepages (needed by PCI ports)
//!
//! [tcp]                                   # optional; the values shown are the defaults
//! rx_buffer = 65536                       # bytes per connection
//! tx_buffer = 65536                       # bytes per connection
//! backlog = 64                            # listening sockets per listener: SYNs one poll hands to TCP
//! syn_backlog = 256                       # half-open connections per listener; more get SYN cookies
//! syn_cookies = true                      # false: SYNs past syn_backlog are dropped
//! handshake_timeout = 10                  # s: a half-open connection is dropped after this
//! max_connections = 10000                 # per lcore, half-open included; more SYNs are dropped
//! keepalive = 60                          # s of silence before a probe (0: no probes)
//! user_timeout = 120                      # s: unacknowledged data (or, with keepalive, a silent peer) aborts
//! linger = 30                             # s: a closed connection still in its FIN exchange is reset
//!
//! [udp]                                   # optional
//! queue = 256                             # datagrams held per socket
//!
//! [arp]                                   # optional
//! max_entries = 1024                      # neighbours cached
//! pending_per_hop = 16                    # packets held per next hop being resolved
//! max_unresolved = 256                    # next hops being resolved at once
//!
//! [control]                               # optional
//! name = "netstack"                       # the control socket is <dir>/netstack-<name>.<lcore>.sock
//! dir = "/var/run"                        # default: $XDG_RUNTIME_DIR, else /var/run
//! ```
//!
//! A missing or wrong field is an [`Error::Config`] naming the file, the line and the field: values that cannot
//! work are refused here rather than failing later (addresses that are not unicast host addresses of their
//! subnet, a gateway that is not a neighbour, multicast or all-zero MACs, sizes and times outside their range,
//! socket buffers or pools larger than the machine's memory).

use std::net::Ipv4Addr;
use std::ops::{Range, RangeInclusive};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pktio::MacAddr;
use serde::Deserialize;
use toml::Spanned;

use crate::{ArpConfig, Error, Result, StackConfig};

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
    /// Half-open connections per listener ([`StackConfig::tcp_syn_backlog`]).
    pub tcp_syn_backlog: usize,
    /// SYN cookies past the SYN backlog.
    pub tcp_syn_cookies: bool,
    /// Half-open connections are dropped after this.
    pub tcp_handshake_timeout: Duration,
    /// Connections per stack (lcore), half-open included.
    pub tcp_max_connections: usize,
    /// Keep-alive interval; `None`: off.
    pub tcp_keepalive: Option<Duration>,
    /// User timeout ([`StackConfig::tcp_user_timeout`]).
    pub tcp_user_timeout: Duration,
    /// Linger time of connections the application closed.
    pub tcp_linger: Duration,
    /// Datagrams held per UDP socket.
    pub udp_queue: usize,
    /// ARP cache sizes (timers keep their defaults).
    pub arp: ArpConfig,
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
    udp: Option<RawUdp>,
    arp: Option<RawArp>,
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
    pool_size: Option<Spanned<u64>>,
    hugepages: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTcp {
    rx_buffer: Option<Spanned<u64>>,
    tx_buffer: Option<Spanned<u64>>,
    backlog: Option<Spanned<u64>>,
    syn_backlog: Option<Spanned<u64>>,
    syn_cookies: Option<bool>,
    handshake_timeout: Option<Spanned<u64>>,
    max_connections: Option<Spanned<u64>>,
    keepalive: Option<Spanned<u64>>,
    user_timeout: Option<Spanned<u64>>,
    linger: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUdp {
    queue: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArp {
    max_entries: Option<Spanned<u64>>,
    pending_per_hop: Option<Spanned<u64>>,
    max_unresolved: Option<Spanned<u64>>,
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

/// Bytes of memory the machine has (`sysconf`), for refusing sizes that cannot fit; `u64::MAX` if unknown.
fn physical_memory() -> u64 {
    // SAFETY: sysconf takes a constant and touches no memory of ours.
    let (pages, size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    if pages <= 0 || size <= 0 {
        u64::MAX
    } else {
        pages as u64 * size as u64
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// What an IPv4 address is, when it cannot be a host's own unicast address or a neighbour's; `None` if it can.
fn not_unicast(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip.is_unspecified() {
        Some("the unspecified address")
    } else if ip.is_broadcast() {
        Some("the limited broadcast address")
    } else if ip.is_multicast() {
        Some("a multicast address (224.0.0.0/4)")
    } else if o[0] >= 240 {
        Some("a reserved address (240.0.0.0/4)")
    } else if ip.is_loopback() {
        Some("a loopback address (127.0.0.0/8): it never leaves a host")
    } else if o[0] == 0 {
        Some("an address of \"this network\" (0.0.0.0/8)")
    } else {
        None
    }
}

/// Checks a config value against its range; the error names the field, the line and the range.
struct Checker<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Checker<'_> {
    fn err(&self, span: Range<usize>, field: &str, message: String) -> Error {
        Error::Config {
            file: self.file.to_owned(),
            line: line_of(self.text, span.start),
            field: field.to_owned(),
            message,
        }
    }

    /// `value` if within `range` (`unit` names what it counts), else the error.
    fn ranged(&self, v: &Spanned<u64>, field: &str, range: RangeInclusive<u64>, unit: &str) -> Result<u64> {
        let n = *v.get_ref();
        if range.contains(&n) {
            Ok(n)
        } else {
            Err(self.err(v.span(), field, format!("{n} {unit}: expected {} to {}", range.start(), range.end())))
        }
    }

    fn opt(
        &self,
        v: &Option<Spanned<u64>>,
        field: &str,
        range: RangeInclusive<u64>,
        unit: &str,
        default: u64,
    ) -> Result<u64> {
        v.as_ref().map_or(Ok(default), |v| self.ranged(v, field, range, unit))
    }
}

/// Longest configuration file read: far more than any configuration needs (they are a few hundred bytes).
pub const MAX_CONFIG_LEN: usize = 1 << 20;

impl Config {
    /// Reads and checks `path`, at most [`MAX_CONFIG_LEN`] bytes of it: a bigger file (or one without end, such
    /// as `/dev/zero`) is refused without being read whole.
    pub fn load(path: &Path) -> Result<Config> {
        use std::io::Read;
        let read_err = |source| Error::ConfigRead { file: path.to_owned(), source };
        let file = std::fs::File::open(path).map_err(read_err)?;
        let mut bytes = Vec::new();
        file.take(MAX_CONFIG_LEN as u64 + 1).read_to_end(&mut bytes).map_err(read_err)?;
        if bytes.len() > MAX_CONFIG_LEN {
            return Err(read_err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("longer than {MAX_CONFIG_LEN} bytes: not a configuration file"),
            )));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            read_err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not UTF-8 text: {e}")))
        })?;
        Config::parse(path, &text)
    }

    /// Checks `text` (the contents of `file`).
    pub fn parse(file: &Path, text: &str) -> Result<Config> {
        let c = Checker { file, text };
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            let message = e.message().trim().to_owned();
            let field = field_of(text, &span, &message);
            c.err(span, &field, message)
        })?;

        let lcores = match &raw.lcores {
            Some(l) => {
                let ok =
                    !l.get_ref().is_empty() && l.get_ref().chars().all(|c| c.is_ascii_digit() || c == ',' || c == '-');
                if !ok {
                    return Err(c.err(
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
            return Err(c.err(
                port.device.span(),
                "port.device",
                "empty: give a vdev (net_af_packet0,iface=veth0) or a PCI address".into(),
            ));
        }
        let mac = match &port.mac {
            Some(m) => {
                let mac = m.get_ref().parse::<MacAddr>().map_err(|e| {
                    c.err(m.span(), "port.mac", format!("{e}: expected six hex bytes like 02:00:00:00:00:01"))
                })?;
                let why = if mac == MacAddr::ZERO {
                    Some("all zeros")
                } else if mac.is_multicast() {
                    Some("a multicast (or broadcast) address: the first byte's lowest bit is set")
                } else {
                    None
                };
                if let Some(why) = why {
                    return Err(c.err(
                        m.span(),
                        "port.mac",
                        format!("{mac} is {why}; a port needs a unicast MAC like 02:00:00:00:00:01"),
                    ));
                }
                Some(mac)
            }
            None => None,
        };
        let (address, prefix_len, gateway) = c.ipv4(raw.ipv4.get_ref())?;

        let memory = physical_memory();
        let (mut pool_size, mut hugepages) = (8191, false);
        if let Some(m) = &raw.memory {
            if let Some(p) = &m.get_ref().pool_size {
                pool_size = c.ranged(p, "memory.pool_size", 512..=(1 << 24) - 1, "mbufs")? as u32;
                // Each mbuf: its data room, headroom and header.
                let bytes = u64::from(pool_size) * (mempool::DEFAULT_DATA_ROOM as u64 + 256);
                if bytes > memory {
                    return Err(c.err(
                        p.span(),
                        "memory.pool_size",
                        format!("{pool_size} mbufs need {} and this machine has {}", gib(bytes), gib(memory)),
                    ));
                }
            }
            hugepages = m.get_ref().hugepages.unwrap_or(false);
        }

        let d = StackConfig::new(MacAddr::ZERO, address, prefix_len);
        let secs = |d: Option<Duration>| d.map_or(0, |d| d.as_secs());
        let empty = RawTcp {
            rx_buffer: None,
            tx_buffer: None,
            backlog: None,
            syn_backlog: None,
            syn_cookies: None,
            handshake_timeout: None,
            max_connections: None,
            keepalive: None,
            user_timeout: None,
            linger: None,
        };
        let t = raw.tcp.as_ref().unwrap_or(&empty);
        let buffer = 1024..=1 << 30;
        let tcp_rx_buffer = c.opt(&t.rx_buffer, "tcp.rx_buffer", buffer.clone(), "bytes", d.tcp_rx_buffer as u64)?;
        let tcp_tx_buffer = c.opt(&t.tx_buffer, "tcp.tx_buffer", buffer, "bytes", d.tcp_tx_buffer as u64)?;
        let tcp_backlog = c.opt(&t.backlog, "tcp.backlog", 1..=4096, "sockets", d.tcp_backlog as u64)?;
        let tcp_syn_backlog =
            c.opt(&t.syn_backlog, "tcp.syn_backlog", 1..=65536, "connections", d.tcp_syn_backlog as u64)?;
        let tcp_handshake_timeout =
            c.opt(&t.handshake_timeout, "tcp.handshake_timeout", 1..=600, "s", d.tcp_handshake_timeout.as_secs())?;
        let tcp_max_connections = c.opt(
            &t.max_connections,
            "tcp.max_connections",
            1..=1_000_000,
            "connections",
            d.tcp_max_connections as u64,
        )?;
        let buffers = tcp_max_connections * (tcp_rx_buffer + tcp_tx_buffer);
        if buffers > memory {
            let span = t.max_connections.as_ref().or(t.rx_buffer.as_ref()).or(t.tx_buffer.as_ref()).map(|v| v.span());
            return Err(c.err(
                span.unwrap_or(0..0),
                "tcp.max_connections",
                format!(
                    "{tcp_max_connections} connections with {} + {} bytes of buffers each can take {}, and this \
                     machine has {}: lower max_connections or the buffers",
                    tcp_rx_buffer,
                    tcp_tx_buffer,
                    gib(buffers),
                    gib(memory)
                ),
            ));
        }
        let keepalive = c.opt(&t.keepalive, "tcp.keepalive", 0..=86_400, "s", secs(d.tcp_keepalive))?;
        let user_timeout = c.opt(&t.user_timeout, "tcp.user_timeout", 1..=86_400, "s", secs(d.tcp_user_timeout))?;
        if keepalive > 0 && user_timeout < 2 * keepalive {
            let span = t.user_timeout.as_ref().or(t.keepalive.as_ref()).map_or(0..0, |v| v.span());
            return Err(c.err(
                span,
                "tcp.user_timeout",
                format!(
                    "{user_timeout} s is less than twice keepalive ({keepalive} s): an idle peer that is there must \
                     get two probes to answer before it is given up on"
                ),
            ));
        }
        let tcp_linger = c.opt(&t.linger, "tcp.linger", 1..=3600, "s", d.tcp_linger.as_secs())?;

        let udp_queue = match &raw.udp {
            Some(u) => c.opt(&u.queue, "udp.queue", 1..=65536, "datagrams", d.udp_queue as u64)?,
            None => d.udp_queue as u64,
        } as usize;
        let mut arp = d.arp;
        if let Some(a) = &raw.arp {
            arp.max_entries =
                c.opt(&a.max_entries, "arp.max_entries", 16..=1 << 20, "entries", arp.max_entries as u64)? as usize;
            arp.pending_per_hop =
                c.opt(&a.pending_per_hop, "arp.pending_per_hop", 1..=1024, "packets", arp.pending_per_hop as u64)?
                    as usize;
            arp.max_unresolved =
                c.opt(&a.max_unresolved, "arp.max_unresolved", 1..=65536, "next hops", arp.max_unresolved as u64)?
                    as usize;
        }

        let mut control_name = "netstack".to_owned();
        let mut control_dir = default_control_dir();
        if let Some(ctl) = &raw.control {
            if let Some(n) = &ctl.name {
                let ok = !n.get_ref().is_empty()
                    && n.get_ref().chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_');
                if !ok {
                    return Err(c.err(
                        n.span(),
                        "control.name",
                        format!("`{}`: use letters, digits, - and _", n.get_ref()),
                    ));
                }
                control_name = n.get_ref().clone();
            }
            if let Some(dir) = &ctl.dir {
                control_dir = PathBuf::from(dir);
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
            tcp_rx_buffer: tcp_rx_buffer as usize,
            tcp_tx_buffer: tcp_tx_buffer as usize,
            tcp_backlog: tcp_backlog as usize,
            tcp_syn_backlog: tcp_syn_backlog as usize,
            tcp_syn_cookies: t.syn_cookies.unwrap_or(d.tcp_syn_cookies),
            tcp_handshake_timeout: Duration::from_secs(tcp_handshake_timeout),
            tcp_max_connections: tcp_max_connections as usize,
            tcp_keepalive: (keepalive > 0).then(|| Duration::from_secs(keepalive)),
            tcp_user_timeout: Duration::from_secs(user_timeout),
            tcp_linger: Duration::from_secs(tcp_linger),
            udp_queue,
            arp,
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
        s.tcp_syn_backlog = self.tcp_syn_backlog;
        s.tcp_syn_cookies = self.tcp_syn_cookies;
        s.tcp_handshake_timeout = self.tcp_handshake_timeout;
        s.tcp_max_connections = self.tcp_max_connections;
        s.tcp_keepalive = self.tcp_keepalive;
        s.tcp_user_timeout = Some(self.tcp_user_timeout);
        s.tcp_linger = self.tcp_linger;
        s.udp_queue = self.udp_queue;
        s.arp = self.arp;
        s
    }

    /// The control socket of `lcore`.
    pub fn control_socket(&self, lcore: u32) -> PathBuf {
        control_socket_path(&self.control_dir, &self.control_name, lcore)
    }
}

impl Checker<'_> {
    /// `[ipv4]`: a unicast host address of its subnet, a prefix that leaves room for neighbours, and a gateway
    /// that is a neighbour.
    fn ipv4(&self, ipv4: &RawIpv4) -> Result<(Ipv4Addr, u8, Option<Ipv4Addr>)> {
        let a = &ipv4.address;
        let bad = |message: String| self.err(a.span(), "ipv4.address", message);
        let (addr, prefix) = a
            .get_ref()
            .split_once('/')
            .ok_or_else(|| bad(format!("`{}` has no prefix length: write it as 10.0.0.2/24", a.get_ref())))?;
        let address: Ipv4Addr = addr.trim().parse().map_err(|_| bad(format!("`{addr}` is not an IPv4 address")))?;
        let prefix_len: u8 = prefix
            .trim()
            .parse()
            .ok()
            .filter(|p| *p <= 32)
            .ok_or_else(|| bad(format!("prefix length `{prefix}` is not a number from 1 to 31")))?;
        if let Some(what) = not_unicast(address) {
            return Err(bad(format!("{address} is {what}; the stack needs a unicast host address")));
        }
        match prefix_len {
            0 => return Err(bad("a /0 prefix puts every address on the link: expected 1 to 31".into())),
            32 => {
                return Err(bad(format!(
                    "a /32 leaves no neighbour (nor gateway) on the link: give {address}'s subnet prefix, 1 to 31"
                )))
            }
            _ => {}
        }
        let probe = StackConfig::new(MacAddr::ZERO, address, prefix_len);
        let host_bits = if prefix_len >= 31 { 0 } else { !(u32::MAX << (32 - prefix_len as u32)) };
        let host = u32::from(address) & host_bits;
        // A /31 (RFC 3021) has no network or broadcast address.
        if prefix_len < 31 && (host == 0 || host == host_bits) {
            let which = if host == 0 { "network" } else { "broadcast" };
            return Err(bad(format!("{address} is the {which} address of {address}/{prefix_len}, not a host's")));
        }
        let gateway = match &ipv4.gateway {
            Some(g) => {
                let bad = |message: String| self.err(g.span(), "ipv4.gateway", message);
                let gw: Ipv4Addr =
                    g.get_ref().trim().parse().map_err(|_| bad(format!("`{}` is not an IPv4 address", g.get_ref())))?;
                if let Some(what) = not_unicast(gw) {
                    return Err(bad(format!("{gw} is {what}; a gateway is a unicast neighbour")));
                }
                if gw == address {
                    return Err(bad(format!("{gw} is this stack's own address; a gateway is another host")));
                }
                if !probe.on_link(gw) {
                    return Err(bad(format!("{gw} is not on the subnet of {address}/{prefix_len}")));
                }
                let gw_host = u32::from(gw) & host_bits;
                if prefix_len < 31 && (gw_host == 0 || gw_host == host_bits) {
                    return Err(bad(format!("{gw} is the network or broadcast address of the subnet")));
                }
                Some(gw)
            }
            None => None,
        };
        Ok((address, prefix_len, gateway))
    }
}

/// `<dir>/netstack-<name>.<lcore>.sock`.
pub fn control_socket_path(dir: &Path, name: &str, lcore: u32) -> PathBuf {
    dir.join(format!("netstack-{name}.{lcore}.sock"))
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// The name in a table header line (`[name]` or `[[name]]`), trimmed.
fn header(line: &str) -> Option<&str> {
    let l = line.trim();
    let l =
        l.strip_prefix("[[").and_then(|l| l.strip_suffix("]]")).or_else(|| l.strip_prefix('[')?.strip_suffix(']'))?;
    Some(l.trim())
}

/// The dotted name of the field a parse error points at: the key on its line (under the table it is in), the
/// table whose header the error is on (an unknown or repeated table), or for a missing field, the table's name
/// and the field serde names.
fn field_of(text: &str, span: &Range<usize>, message: &str) -> String {
    let start = span.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let here = text[line_start..].lines().next().unwrap_or("");
    let table = text[..line_start].lines().rev().find_map(header).unwrap_or("");
    let join = |t: &str, k: &str| if t.is_empty() { k.to_owned() } else { format!("{t}.{k}") };
    if let Some(rest) = message.split("missing field `").nth(1) {
        let key = rest.split('`').next().unwrap_or("");
        // The span of a missing field is the header of the table lacking it, or empty for a top-level field.
        if span.is_empty() {
            return key.to_owned();
        }
        if let Some(t) = header(here) {
            return join(t, key);
        }
        return join(table, key);
    }
    if let Some(h) = header(here) {
        // An error on a table header (an unknown top-level table, a table given twice) is about that table,
        // not the one before it.
        return h.to_owned();
    }
    if let Some(rest) = message.split("unknown field `").nth(1) {
        return join(table, rest.split('`').next().unwrap_or(""));
    }
    match here.split_once('=') {
        Some((k, _)) => join(table, k.trim()),
        None => table.to_owned(),
    }
}
