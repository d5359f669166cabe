//! What the `show ...` commands print, in dpdk-testpmd's layout: configuration, forward and port statistics,
//! port and device information, the pool.

use std::time::Instant;

use crate::app::{sub, App};
use crate::fwd::{self, FwdMode};

impl App {
    /// `show config fwd` (also printed by `start`).
    pub fn show_config_fwd(&self) {
        let plan = self.plan();
        println!(
            "{} packet forwarding{} - ports={} - cores={} - streams={} - NUMA support enabled, MP allocation mode: \
             native",
            self.set.mode,
            if self.set.retry { " with retry" } else { "" },
            plan.ports.len(),
            plan.lcores.len(),
            plan.streams.len()
        );
        for &(lcore, first, n) in &plan.lcores {
            print!("Logical Core {lcore} (socket 0) forwards packets on {n} streams:");
            for s in &plan.streams[first..first + n] {
                let rs = self.ports[s.rx_port as usize].socket();
                let ts = self.ports[s.tx_port as usize].socket();
                print!(
                    "\n  RX P={}/Q={} (socket {rs}) -> TX P={}/Q={} (socket {ts}) peer={}",
                    s.rx_port, s.rx_queue, s.tx_port, s.tx_queue, self.peers[s.tx_port as usize]
                );
            }
            println!();
        }
        println!();
    }

    /// `show config rxtx`.
    pub fn show_config_rxtx(&self) {
        let plan = self.plan();
        let retry = if self.set.retry { " with retry" } else { "" };
        println!("  {} packet forwarding{retry} packets/burst={}", self.set.mode, self.set.burst);
        if self.set.retry {
            let (n, us) = self.set.retry_num_delay;
            println!("  TX retry num: {n}, delay between TX retries: {us}us");
        }
        if self.set.mode.generates() {
            let len: u32 = self.set.txpkts.iter().map(|&l| l as u32).sum();
            println!("  packet len={len} - nb packet segments={}", self.set.txpkts.len());
        }
        println!("  nb forwarding cores={} - nb forwarding ports={}", plan.lcores.len(), plan.ports.len());
        for port in &self.ports {
            let c = port.dev.config();
            println!("  port {}: RX queue number: {} Tx queue number: {}", port.id, c.rx_queues, c.tx_queues);
            println!("    Rx offloads={:#x} Tx offloads={:#x}", c.rx_offloads, c.tx_offloads);
            println!("    RX queue: 0");
            println!("      RX desc={} - RX free threshold=0", c.rx_desc);
            println!("      RX threshold registers: pthresh=0 hthresh=0  wthresh=0");
            println!("      RX Offloads={:#x}", c.rx_offloads);
            println!("    TX queue: 0");
            println!("      TX desc={} - TX free threshold=0", c.tx_desc);
            println!("      TX threshold registers: pthresh=0 hthresh=0  wthresh=0");
            println!("      TX offloads={:#x} - TX RS bit threshold=0", c.tx_offloads);
        }
    }

    /// `show config cores`.
    pub fn show_config_cores(&self) {
        let ids = self.fwd_lcore_ids();
        let n = (self.set.nb_cores as usize).min(ids.len()).max(1);
        print!("List of forwarding lcores:");
        for id in &ids[..n] {
            print!(" {id:2}");
        }
        println!();
    }
    /// `show fwd stats all`: the forward statistics since forwarding started.
    pub fn show_fwd_stats(&self) {
        let nports = self.ports.len();
        let mut tx_dropped = vec![0u64; nports];
        let mut bad_ip = vec![0u64; nports];
        let mut bad_l4 = vec![0u64; nports];
        let fwd_ports: Vec<u16> = {
            let mut v: Vec<u16> = self.streams.iter().flat_map(|(s, _)| [s.rx_port, s.tx_port]).collect();
            v.sort_unstable();
            v.dedup();
            if v.is_empty() {
                self.fwd_ports()
            } else {
                v
            }
        };
        let csum = self.run_mode == FwdMode::Csum;
        for (s, c) in &self.streams {
            if self.streams.len() > fwd_ports.len() {
                let (rx, tx, dr) = (c.rx_packets.get(), c.tx_packets.get(), c.fwd_dropped.get());
                if rx != 0 || tx != 0 || dr != 0 {
                    println!(
                        "\n  ------- Forward Stats for RX Port={:2}/Queue={:2} -> TX Port={:2}/Queue={:2} -------",
                        s.rx_port, s.rx_queue, s.tx_port, s.tx_queue
                    );
                    print!("  RX-packets: {rx:<14} TX-packets: {tx:<14} TX-dropped: {dr:<14}");
                    if csum {
                        println!(
                            "  RX- bad IP checksum: {:<14}  Rx- bad L4 checksum: {:<14} Rx- bad outer L4 checksum: {:<14}",
                            c.bad_ip_csum.get(),
                            c.bad_l4_csum.get(),
                            0
                        );
                        println!(" RX- bad outer IP checksum: {:<14}", 0);
                    } else {
                        println!();
                    }
                    if let Some(l) = fwd::burst_stats_line("RX", &c.rx_bursts) {
                        println!("{l}");
                    }
                    if let Some(l) = fwd::burst_stats_line("TX", &c.tx_bursts) {
                        println!("{l}");
                    }
                }
            }
            tx_dropped[s.tx_port as usize] += c.fwd_dropped.get();
            bad_ip[s.rx_port as usize] += c.bad_ip_csum.get();
            bad_l4[s.rx_port as usize] += c.bad_l4_csum.get();
        }
        let (mut total_rx, mut total_tx, mut total_rx_drop, mut total_tx_drop, mut total_nombuf) = (0, 0, 0, 0, 0);
        for &p in &fwd_ports {
            let port = &self.ports[p as usize];
            let now = port.dev.stats();
            let b = &port.fwd_base;
            let (ipk, opk) = (sub(now.ipackets, b.ipackets), sub(now.opackets, b.opackets));
            let (imiss, ierr) = (sub(now.imissed, b.imissed), sub(now.ierrors, b.ierrors));
            let (oerr, nombuf) = (sub(now.oerrors, b.oerrors), sub(now.rx_nombuf, b.rx_nombuf));
            let txd = tx_dropped[p as usize] + oerr;
            total_rx += ipk;
            total_tx += opk;
            total_rx_drop += imiss;
            total_tx_drop += txd;
            total_nombuf += nombuf;
            let border = "----------------------";
            println!("\n  {border} Forward statistics for port {p:<2} {border}");
            println!("  RX-packets: {ipk:<14} RX-dropped: {imiss:<14}RX-total: {}", ipk + imiss);
            if csum {
                println!(
                    "  Bad-ipcsum: {:<14} Bad-l4csum: {:<14}Bad-outer-l4csum: {:<14}",
                    bad_ip[p as usize], bad_l4[p as usize], 0
                );
                println!("  Bad-outer-ipcsum: {:<14}", 0);
            }
            if ierr + nombuf > 0 {
                println!("  RX-error: {ierr}");
                println!("  RX-nombufs: {nombuf:<14}");
            }
            println!("  TX-packets: {opk:<14} TX-dropped: {txd:<14}TX-total: {}", opk + txd);
            if self.streams.len() <= fwd_ports.len() {
                // One stream per port: its burst sizes go with the port, as dpdk-testpmd shows them.
                let rx = self.streams.iter().rev().find(|(s, _)| s.rx_port == p);
                let tx = self.streams.iter().rev().find(|(s, _)| s.tx_port == p);
                if let Some(l) = rx.and_then(|(_, c)| fwd::burst_stats_line("RX", &c.rx_bursts)) {
                    println!("{l}");
                }
                if let Some(l) = tx.and_then(|(_, c)| fwd::burst_stats_line("TX", &c.tx_bursts)) {
                    println!("{l}");
                }
            }
            println!("  {border}--------------------------------{border}");
        }
        let acc = "+++++++++++++++";
        println!("\n  {acc} Accumulated forward statistics for all ports{acc}");
        println!("  RX-packets: {total_rx:<14} RX-dropped: {total_rx_drop:<14}RX-total: {}", total_rx + total_rx_drop);
        println!("  TX-packets: {total_tx:<14} TX-dropped: {total_tx_drop:<14}TX-total: {}", total_tx + total_tx_drop);
        if total_nombuf > 0 {
            println!("  RX-nombufs: {total_nombuf:<14}");
        }
        println!("  {acc}++++++++++++++++++++++++++++++++++++++++++++++{acc}");
        let cycles: u64 = self.streams.iter().map(|(_, c)| c.core_cycles.get()).sum();
        if self.set.record_core_cycles || cycles > 0 {
            if let Some(l) = crate::cycles::stats_line(cycles, self.run_mode.name(), total_rx, total_tx) {
                println!("{l}");
            }
        }
    }

    /// `show port stats N`.
    pub fn show_port_stats(&mut self, ids: &[u16]) {
        for &id in ids {
            let port = &mut self.ports[id as usize];
            let s = port.dev.stats();
            let border = "########################";
            println!("\n  {border} NIC statistics for port {id:<2} {border}");
            println!("  RX-packets: {:<10} RX-missed: {:<10} RX-bytes:  {}", s.ipackets, s.imissed, s.ibytes);
            println!("  RX-errors: {}", s.ierrors);
            println!("  RX-nombuf:  {:<10}", s.rx_nombuf);
            println!("  TX-packets: {:<10} TX-errors: {:<10} TX-bytes:  {}", s.opackets, s.oerrors, s.obytes);
            let now = Instant::now();
            let (mut rx_pps, mut rx_bps, mut tx_pps, mut tx_bps) = (0u64, 0u64, 0u64, 0u64);
            if let Some((t, prev)) = &port.show_prev {
                let ns = now.duration_since(*t).as_nanos() as f64;
                if ns > 0.0 {
                    let rate = |a: u64, b: u64| (sub(a, b) as f64 / ns * 1e9) as u64;
                    rx_pps = rate(s.ipackets, prev.ipackets);
                    tx_pps = rate(s.opackets, prev.opackets);
                    rx_bps = rate(s.ibytes, prev.ibytes) * 8;
                    tx_bps = rate(s.obytes, prev.obytes) * 8;
                }
            }
            port.show_prev = Some((now, s));
            println!("\n  Throughput (since last show)");
            println!("  Rx-pps: {rx_pps:>12}          Rx-bps: {rx_bps:>12}");
            println!("  Tx-pps: {tx_pps:>12}          Tx-bps: {tx_bps:>12}");
            if !self.set.display_xstats.is_empty() {
                let xs = port.dev.xstats();
                println!("\n  Xstats");
                for name in &self.set.display_xstats {
                    match xs.iter().find(|x| &x.name == name) {
                        Some(x) => println!("  {name}: {}", x.value),
                        None => println!("  {name}: (no such extended statistic on this port)"),
                    }
                }
            }
            println!("  {border}############################{border}");
        }
    }

    /// `show port xstats N`.
    pub fn show_port_xstats(&self, ids: &[u16]) {
        for &id in ids {
            println!("###### NIC extended statistics for port {id:<2}");
            for x in self.ports[id as usize].dev.xstats() {
                println!("{}: {}", x.name, x.value);
            }
        }
    }

    /// `show port info N`.
    pub fn show_port_info(&self, ids: &[u16]) {
        for &id in ids {
            let port = &self.ports[id as usize];
            let info = port.dev.info();
            let link = port.dev.link();
            let c = port.dev.config();
            let border = "*********************";
            println!("\n{border} Infos for port {id:<2} {border}");
            print!("MAC address: {}", port.dev.mac_addr());
            print!("\nDevice name: {}", port.name);
            print!("\nDriver name: {}", info.driver_name);
            print!("\nFirmware-version: not available");
            print!("\nDevargs: {}", port.devargs);
            print!("\nConnect to socket: {}", port.socket());
            print!("\nmemory allocation on the socket: {}", port.socket());
            println!("\nLink status: {}", if link.up { "up" } else { "down" });
            let speed = match link.speed_mbps {
                0 => "None".to_string(),
                s if s % 1000 == 0 => format!("{} Gbps", s / 1000),
                s => format!("{s} Mbps"),
            };
            println!("Link speed: {speed}");
            println!("Link duplex: {}", if link.full_duplex { "full-duplex" } else { "half-duplex" });
            println!("Autoneg status: {}", if link.autoneg { "On" } else { "Off" });
            println!("MTU: {}", port.dev.mtu());
            println!("Minimum MTU: {}", info.min_mtu);
            println!("Maximum MTU: {}", info.max_mtu);
            println!("Promiscuous mode: {}", if port.dev.promiscuous() { "enabled" } else { "disabled" });
            println!("Allmulticast mode: {}", if port.dev.allmulticast() { "enabled" } else { "disabled" });
            println!("Maximum number of MAC addresses: {}", info.max_mac_addrs);
            println!("Maximum number of MAC addresses of hash filtering: 0");
            let strip = c.rx_offloads & pktio::offload::RX_VLAN_STRIP != 0;
            println!("VLAN offload: ");
            let on_off = |b: bool| if b { "on" } else { "off" };
            let filter = port.dev.vlan_filter_enabled();
            println!("  strip {}, filter {}, extend off, qinq strip off", on_off(strip), on_off(filter));
            if info.hash_key_size > 0 {
                println!("Hash key size in bytes: {}", info.hash_key_size);
            }
            if info.reta_size > 0 {
                println!("Redirection table size: {}", info.reta_size);
            }
            if info.flow_type_rss_offloads.0 != 0 {
                println!("Supported RSS offload flow types:");
                println!("  {}", crate::port_cmds::rss_names(info.flow_type_rss_offloads).replace(' ', "  "));
            } else {
                println!("No RSS offload flow type is supported.");
            }
            println!("Maximum configurable length of RX packet: {}", info.max_rx_pktlen);
            println!("Current number of RX queues: {}", c.rx_queues);
            println!("Max possible RX queues: {}", info.max_rx_queues);
            println!("Max possible number of RXDs per queue: {}", info.rx_desc_lim.max);
            println!("Min possible number of RXDs per queue: {}", info.rx_desc_lim.min);
            println!("RXDs number alignment: {}", info.rx_desc_lim.align);
            println!("Current number of TX queues: {}", c.tx_queues);
            println!("Max possible TX queues: {}", info.max_tx_queues);
            println!("Max possible number of TXDs per queue: {}", info.tx_desc_lim.max);
            println!("Min possible number of TXDs per queue: {}", info.tx_desc_lim.min);
            println!("TXDs number alignment: {}", info.tx_desc_lim.align);
            println!("Rx offload capabilities: {:#x}", info.rx_offload_capa);
            println!("Tx offload capabilities: {:#x}", info.tx_offload_capa);
            println!("Device capabilities: 0x0( )");
            println!("Port started: {}", if port.dev.is_started() { "yes" } else { "no" });
        }
    }

    /// `show mempool`: buffers free in each pool. The free count is read once and the rest derived from it, so the
    /// line is consistent while forwarding moves buffers.
    pub fn show_mempool(&self) {
        let p = &self.pool;
        let (size, available) = (p.size() as usize, p.available());
        let in_use = size.saturating_sub(available);
        println!("mbuf pool {}: {available}/{size} available ({in_use} in use)", p.name());
    }

    /// `show config txpkts`.
    pub fn show_config_txpkts(&self) {
        let segs = &self.set.txpkts;
        println!("Number of segments: {}", segs.len());
        println!("Segment sizes: {}", segs.iter().map(u16::to_string).collect::<Vec<_>>().join(","));
        println!("Split packet: {}", self.set.txsplit);
    }

    /// `show config rxpkts` (buffer split is not supported: what --rxpkts gave).
    pub fn show_config_rxpkts(&self) {
        let segs = &self.set.rxpkts;
        println!("Number of segments: {}", segs.len());
        if !segs.is_empty() {
            println!("Segment sizes: {}", segs.iter().map(u16::to_string).collect::<Vec<_>>().join(","));
        }
    }

    /// `show config rxoffs`.
    pub fn show_config_rxoffs(&self) {
        let offs = &self.set.rxoffs;
        println!("Number of segments: {}", offs.len());
        if !offs.is_empty() {
            println!("Segment offsets: {}", offs.iter().map(u16::to_string).collect::<Vec<_>>().join(","));
        }
    }
}
