//! The port commands that go beyond start/stop: close and reset, RSS hash and redirection table, MAC addresses,
//! VLAN stripping and filters, link up/down, the summary and device listings. Each either does what
//! dpdk-testpmd's does or says why the port cannot.

use pktio::{offload, RssConfig, RssHashFunctions};

use crate::app::{App, CmdResult};
use crate::params::RssMode;

/// The highest 802.1Q VLAN ID (12 bits).
const MAX_VLAN_ID: u16 = 4095;

/// The hash functions of an RSS mode.
pub fn rss_functions(m: RssMode) -> RssHashFunctions {
    match m {
        RssMode::Ip | RssMode::Disabled => RssHashFunctions::IP,
        RssMode::Udp => RssHashFunctions::UDP,
        RssMode::Tcp => RssHashFunctions(RssHashFunctions::IPV4_TCP | RssHashFunctions::IPV6_TCP),
    }
}

/// DPDK's names of the hash types, in its order.
pub const RSS_TYPE_NAMES: [(u32, &str); 6] = [
    (RssHashFunctions::IPV4, "ipv4"),
    (RssHashFunctions::IPV4_TCP, "ipv4-tcp"),
    (RssHashFunctions::IPV4_UDP, "ipv4-udp"),
    (RssHashFunctions::IPV6, "ipv6"),
    (RssHashFunctions::IPV6_TCP, "ipv6-tcp"),
    (RssHashFunctions::IPV6_UDP, "ipv6-udp"),
];

/// The names of the hash types in `f`, space separated.
pub fn rss_names(f: RssHashFunctions) -> String {
    RSS_TYPE_NAMES.iter().filter(|(b, _)| f.contains(*b)).map(|(_, n)| *n).collect::<Vec<_>>().join(" ")
}

fn need_stopped(app: &App, ids: &[u16], what: &str) -> CmdResult {
    if let Some(p) = ids.iter().find(|&&id| app.ports[id as usize].dev.is_started()) {
        return Err(format!("Can not {what} port(s), please stop port(s) first (port {p} is started)."));
    }
    Ok(())
}

impl App {
    /// `port close N|all`.
    pub fn close_ports(&mut self, ids: &[u16]) -> CmdResult {
        if self.is_forwarding() {
            return Err("Please stop forwarding first (stop)".into());
        }
        need_stopped(self, ids, "close")?;
        println!("Closing ports...");
        for &id in ids {
            let port = &mut self.ports[id as usize];
            if !port.closed {
                port.closed = true;
                println!("Port {id} is closed");
            }
        }
        println!("Done");
        Ok(())
    }

    /// `port reset N|all`: the port is configured afresh at its next start.
    pub fn reset_ports(&mut self, ids: &[u16]) -> CmdResult {
        need_stopped(self, ids, "reset")?;
        println!("Resetting ports...");
        for &id in ids {
            let port = &mut self.ports[id as usize];
            port.need_reconfig = true;
            port.port_rx_offloads = 0;
        }
        println!("Done");
        Ok(())
    }

    /// `port config all rss ip|udp|tcp|none`.
    pub fn port_config_rss(&mut self, what: &str) -> CmdResult {
        let mode = match what {
            "ip" => RssMode::Ip,
            "udp" => RssMode::Udp,
            "tcp" => RssMode::Tcp,
            "none" => RssMode::Disabled,
            _ => return Err(format!("Bad arguments: port config all rss {what:?}: expected ip, udp, tcp or none")),
        };
        self.set.rss = mode;
        let mut errors = Vec::new();
        for port in &mut self.ports {
            if port.closed {
                continue;
            }
            if port.dev.config().rx_queues <= 1 {
                errors.push(format!(
                    "Multi-queue RSS mode isn't enabled.\nConfiguration of RSS hash at ethernet port {} failed: the \
                     port has 1 RX queue (port config all rxq N first)",
                    port.id
                ));
                continue;
            }
            let functions = if mode == RssMode::Disabled { RssHashFunctions(0) } else { rss_functions(mode) };
            if let Err(e) = port.dev.rss_hash_update(&RssConfig { key: None, functions }) {
                errors.push(format!("Configuration of RSS hash at ethernet port {} failed: {e}", port.id));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("\n"))
        }
    }

    /// `port config N rss reta (index,queue)[,(index,queue)...]`.
    pub fn port_config_reta(&mut self, id: u16, pairs: &str) -> CmdResult {
        let port = &mut self.ports[id as usize];
        let size = port.dev.info().reta_size;
        println!("The reta size of port {id} is {size}");
        if size == 0 {
            return Err(format!("Bad redirection table parameter: port {id} has no redirection table"));
        }
        let nq = port.dev.config().rx_queues;
        let mut reta = if port.reta.len() == size as usize { port.reta.clone() } else { vec![0; size as usize] };
        let cleaned: String = pairs.chars().filter(|c| !c.is_whitespace()).collect();
        for pair in cleaned.split("),") {
            let pair = pair.trim_start_matches('(').trim_end_matches(')');
            let (i, q) = pair
                .split_once(',')
                .and_then(|(i, q)| Some((i.parse::<u16>().ok()?, q.parse::<u16>().ok()?)))
                .ok_or_else(|| format!("Bad arguments: {pair:?}: expected (hash_index,queue) pairs"))?;
            if i >= size {
                return Err(format!("Invalid RETA hash index={i}: the table has {size} entries"));
            }
            if q >= nq {
                return Err(format!("Invalid RETA queue={q}: port {id} has {nq} RX queues"));
            }
            reta[i as usize] = q;
        }
        port.dev.reta_update(&reta).map_err(|e| format!("Bad redirection table parameter: {e}"))?;
        port.reta = reta;
        Ok(())
    }

    /// `show port N rss reta SIZE MASK[,MASK...]`.
    pub fn show_reta(&self, id: u16, size: &str, masks: &str) -> CmdResult {
        let port = &self.ports[id as usize];
        let want = port.dev.info().reta_size;
        let size: u16 = size.parse().map_err(|_| format!("Bad arguments: reta size {size:?}"))?;
        if size == 0 || size != want {
            return Err(format!("Invalid redirection table size: {size} (port {id} has {want} entries)"));
        }
        let parsed: Option<Vec<u64>> = masks.split(',').map(crate::params::parse_u64).collect();
        let masks = parsed.ok_or_else(|| format!("Invalid string: {masks} for reta masks"))?;
        for i in 0..size as usize {
            let on = masks.get(i / 64).is_some_and(|m| m & (1u64 << (i % 64)) != 0);
            if on {
                let q = port.reta.get(i).copied().unwrap_or(0);
                println!("RSS RETA configuration: hash index={i}, queue={q}");
            }
        }
        Ok(())
    }

    /// `show port N rss-hash [key]`.
    pub fn show_rss_hash(&self, id: u16, key: bool) -> CmdResult {
        let port = &self.ports[id as usize];
        let info = port.dev.info();
        if info.hash_key_size == 0 {
            return Err("dev_info did not provide a valid hash key size".into());
        }
        match &port.dev.config().rss {
            None => println!("RSS disabled"),
            Some(r) if r.functions.0 == 0 => println!("RSS disabled"),
            Some(r) => {
                println!("RSS functions:\n {} ", rss_names(r.functions));
                if key {
                    println!("RSS key:");
                    match &r.key {
                        Some(k) => println!("{}", k.iter().map(|b| format!("{b:02X}")).collect::<String>()),
                        None => println!("(the driver's default key: not readable through this port's interface)"),
                    }
                }
            }
        }
        Ok(())
    }

    /// `mac_addr add|remove|set N MAC`: DPDK's first line (the errno text of the failure), then why.
    pub fn mac_addr(&mut self, op: &str, id: u16, mac: &str) -> CmdResult {
        let mac: pktio::MacAddr = mac.parse().map_err(|e| format!("Bad arguments: {e}"))?;
        let dev = &mut self.ports[id as usize].dev;
        let r = match op {
            "set" => dev.set_mac_addr(mac),
            // testpmd adds to pool 0, as DPDK's does.
            "add" => dev.mac_addr_add(mac, 0),
            "remove" => dev.mac_addr_remove(mac),
            _ => return Err(format!("Bad arguments: mac_addr {op:?}: expected add, remove or set")),
        };
        r.map_err(|e| format!("mac_addr_cmd error: ({})\n  {e}", errno_text(&e)))
    }

    /// `set stat_qmap rx|tx N QUEUE MAP`: dpdk-testpmd's checks and messages, then the port's mapping (the
    /// counter sets of DPDK's ixgbe); ports that count each queue on its own refuse, as DPDK's do (-ENOTSUP).
    pub fn set_stat_qmap(&mut self, id: u16, rx: bool, queue: u16, map: u8) -> CmdResult {
        let (nq, dir) = if rx { (self.set.rxq, "rx") } else { (self.set.txq, "tx") };
        if queue >= nq {
            let d = dir.to_uppercase();
            return Err(format!("Invalid {d} queue {queue} (must be < nb_{dir}q={nq})"));
        }
        if map >= QUEUE_STAT_CNTRS {
            return Err(format!("map_value not in required range 0..{}", QUEUE_STAT_CNTRS - 1));
        }
        let dev = &mut self.ports[id as usize].dev;
        dev.queue_stats_mapping(rx, queue, map).map_err(|e| format!("failed to set {dir} queue stats mapping.\n  {e}"))
    }

    /// `show port N macs`: every unicast address the port receives for, as DPDK lists them.
    pub fn show_macs(&self, id: u16) {
        let macs = self.ports[id as usize].dev.mac_addrs();
        println!("Number of MAC address added: {}", macs.len());
        for m in macs {
            println!("  {m}");
        }
    }

    /// `vlan set filter on|off N`: the port's VLAN filter offload (DPDK's `rx_vlan_filter_set`).
    pub fn vlan_filter_set(&mut self, id: u16, on: bool) -> CmdResult {
        let dev = &mut self.ports[id as usize].dev;
        dev.set_vlan_filter_enabled(on).map_err(|e| {
            let diag = if matches!(e, pktio::Error::NotSupported { .. }) { -95 } else { -22 };
            format!("rx_vlan_filter_set(port_pi={id}, on={}) failed diag={diag}\n  {e}", u8::from(on))
        })
    }

    /// `vlan set strip on|off N`: asked of the port at its next configuration.
    pub fn vlan_strip(&mut self, id: u16, on: bool) -> CmdResult {
        let port = &mut self.ports[id as usize];
        let capa = port.dev.info().rx_offload_capa;
        if on && capa & offload::RX_VLAN_STRIP == 0 {
            return Err(format!(
                "rx_vlan_strip_set(port_pi={id}, on=1) failed: VLAN stripping is not among the port's RX offload \
                 capabilities ({capa:#x})"
            ));
        }
        let was = port.port_rx_offloads;
        if on {
            port.port_rx_offloads |= offload::RX_VLAN_STRIP;
        } else {
            port.port_rx_offloads &= !offload::RX_VLAN_STRIP;
        }
        if was != port.port_rx_offloads && port.dev.is_started() {
            println!("Port {id}: VLAN stripping changes at the next port stop/start (ports are reconfigured there)");
        }
        Ok(())
    }

    /// `rx_vlan add|rm VLAN|all N`: the port's VLAN filter (`all`: every ID, stopping at the first failure).
    pub fn rx_vlan(&mut self, op: &str, vlan: &str, id: u16) -> CmdResult {
        let ids = if vlan == "all" {
            0..=MAX_VLAN_ID
        } else {
            let v: u16 = vlan.parse().map_err(|_| format!("Bad arguments: VLAN id {vlan:?}"))?;
            if v > MAX_VLAN_ID {
                return Err(format!("Invalid vlan_id {v} (must be < {})", MAX_VLAN_ID + 1));
            }
            v..=v
        };
        let on = op == "add";
        let dev = &mut self.ports[id as usize].dev;
        for v in ids {
            if let Err(e) = dev.vlan_filter(v, on) {
                // DPDK's diag is the negative errno rte_eth_dev_vlan_filter returned.
                let diag = if matches!(e, pktio::Error::NotSupported { .. }) { -95 } else { -22 };
                return Err(format!(
                    "rte_eth_dev_vlan_filter(port_pi={id}, vlan_id={v}, on={}) failed diag={diag}: {e}",
                    u8::from(on)
                ));
            }
        }
        Ok(())
    }

    /// `set link-up|link-down port N`.
    pub fn set_link(&mut self, id: u16, up: bool) -> CmdResult {
        let r = self.ports[id as usize].dev.set_link_up(up);
        r.map_err(|e| format!("\nSet link {} fail: {e}", if up { "up" } else { "down" }))
    }

    /// `show port summary all`.
    pub fn show_port_summary(&self) {
        let open: Vec<_> = self.ports.iter().filter(|p| !p.closed).collect();
        println!("Number of available ports: {}", open.len());
        println!("Port MAC Address       Name         Driver         Status   Link");
        for p in open {
            let link = p.dev.link();
            let speed = match link.speed_mbps {
                0 => "None".to_string(),
                s if s % 1000 == 0 => format!("{} Gbps", s / 1000),
                s => format!("{s} Mbps"),
            };
            println!(
                "{:<4} {} {:<12} {:<14} {:<8} {}",
                p.id,
                p.dev.mac_addr(),
                p.name,
                p.dev.info().driver_name,
                if link.up { "up" } else { "down" },
                speed
            );
        }
    }

    /// `show device info all`.
    pub fn show_device_info(&self) {
        for p in self.ports.iter().filter(|p| !p.closed) {
            let info = p.dev.info();
            println!("\n********************* Infos for device {} *********************", p.name);
            println!("Bus name: {}", if p.name.starts_with("net_") { "vdev" } else { "pci" });
            println!("Bus information: ");
            println!("Driver name: {}", info.driver_name);
            println!("Devargs: {}", p.devargs);
            println!("Connect to socket: {}", p.socket());
            println!("\n\tPort id: {} ", p.id);
            println!("\tMAC address: {}", p.dev.mac_addr());
            println!("\tDevice name: {}", p.name);
            let caps: Vec<String> = info.speed_capa.iter().map(|s| format!("{} Gbps", s / 1000)).collect();
            let caps = if caps.is_empty() { "Autonegotiate (all speeds)".to_string() } else { caps.join(" ") };
            println!("\tDevice speed capability: {caps}");
        }
    }
}

/// DPDK's RTE_ETHDEV_QUEUE_STAT_CNTRS: counter sets a queue can be mapped to.
const QUEUE_STAT_CNTRS: u8 = 16;

/// The C library's text for the errno DPDK's ethdev returns where pktio returns `e` (what dpdk-testpmd prints).
pub fn errno_text(e: &pktio::Error) -> &'static str {
    match e {
        pktio::Error::NotSupported { .. } => "Operation not supported",
        pktio::Error::TableFull { .. } => "No space left on device",
        pktio::Error::DefaultMacAddr { .. } => "Address already in use",
        pktio::Error::Started { .. } => "Device or resource busy",
        _ => "Invalid argument",
    }
}
