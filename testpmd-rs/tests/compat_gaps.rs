//! The last DPDK-compatibility gaps of issue 9, each checked through stdin scripts against null ports and the
//! simulated X540 / X710 ports: secondary MAC addresses, the VLAN filter switch, queue statistics mapping, split
//! txonly packets, RX buffer split options, forwarding cycle records, module EEPROM errors and per-port devargs.

mod common;

use std::time::{Duration, Instant};

use common::*;

const X710: &[&str] = &["--vdev", "net_sim_x710,ports=2"];

/// Runs each command and checks its output holds the needle.
fn script(s: &mut Session, lines: &[(&str, &str)]) {
    for &(cmd, needle) in lines {
        let out = s.cmd(cmd);
        assert!(!out.contains("Command not found") && !out.contains("Bad arguments"), "{cmd}: {out}");
        assert!(out.contains(needle), "{cmd}: expected {needle:?} in:\n{out}");
    }
}

/// mac forwarding started with one burst each way, port 1's peer being `dst`. The wires run port 0 -> port 1 and
/// port 1 -> port 0, so two loops go round: port 1 -> port 0 -> port 1 (port 1 is promiscuous) always, and
/// port 0 -> port 1 -> port 0 only while port 0 (promiscuous off) accepts `dst`. Returns what port 0 received
/// once port 1 has received 2000 packets (the first loop ran a while).
fn received_by_port0(s: &mut Session, dst: &str) -> u64 {
    script(s, &[(&format!("set eth-peer 1 {dst}"), "")]);
    s.cmd("start tx_first");
    let end = Instant::now() + FWD_DEADLINE;
    loop {
        let st = s.cmd("show fwd stats all");
        if fwd_port_block(&st, 1).is_some_and(|b| b.rx_packets >= 2000) {
            break;
        }
        assert!(Instant::now() < end, "port 1 did not receive:\n{st}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let stop = s.cmd("stop");
    fwd_port_block(&stop, 0).unwrap_or_else(|| panic!("no port 0 block:\n{stop}")).rx_packets
}

fn secondary_macs_filter_frames(eal: &[&str], max: &str) {
    let mut s = boot(eal, &["-i", "--forward-mode=mac"]);
    let extra = "02:00:00:00:0A:01";
    script(
        &mut s,
        &[
            ("set promisc 0 off", ""),
            ("show port info 0", max),
            ("mac_addr add 0 02:00:00:00:0a:01", ""),
            ("show port 0 macs", "Number of MAC address added: 2"),
            ("show port 0 macs", &format!("  {extra}")),
            // Adding it again is no error (DPDK: nothing to do).
            ("mac_addr add 0 02:00:00:00:0a:01", ""),
            ("show port 0 macs", "Number of MAC address added: 2"),
        ],
    );
    let default = s.cmd("show port 0 macs").lines().nth(1).unwrap().trim().to_string();
    assert!(s.cmd(&format!("mac_addr remove 0 {default}")).contains("mac_addr_cmd error: (Address already in use)"));
    let got = received_by_port0(&mut s, extra);
    assert!(got >= 1000, "frames to the added address arrive with promiscuous mode off: {got}");
    script(&mut s, &[("mac_addr remove 0 02:00:00:00:0a:01", ""), ("show port 0 macs", "added: 1")]);
    assert_eq!(received_by_port0(&mut s, extra), 0, "frames to a removed address are dropped");
    quit(s);
}

#[test]
fn secondary_macs_filter_frames_on_simulated_x540_ports() {
    secondary_macs_filter_frames(X540, "Maximum number of MAC addresses: 128");
}

#[test]
fn secondary_macs_filter_frames_on_simulated_x710_ports() {
    secondary_macs_filter_frames(X710, "Maximum number of MAC addresses: 64");
}

#[test]
fn ports_without_secondary_macs_answer_as_dpdks_do() {
    let mut s = boot(NULLS, &["-i"]);
    script(
        &mut s,
        &[
            ("mac_addr add 0 02:00:00:00:00:33", "mac_addr_cmd error: (Operation not supported)"),
            ("mac_addr remove 0 02:00:00:00:00:33", "mac_addr_cmd error: (Operation not supported)"),
            ("show port 0 macs", "Number of MAC address added: 1"),
            ("show port info 0", "Maximum number of MAC addresses: 1"),
            ("vlan set filter on 0", "rx_vlan_filter_set(port_pi=0, on=1) failed diag=-95"),
            ("show port info 0", "strip off, filter off, extend off, qinq strip off"),
        ],
    );
    quit(s);
}

#[test]
fn vlan_set_filter_switches_the_ports_filter() {
    for eal in [X540, X710] {
        let mut s = boot(eal, &["-i"]);
        script(
            &mut s,
            &[
                ("show port info 0", "filter off,"),
                ("vlan set filter on 0", ""),
                ("show port info 0", "strip off, filter on, extend off"),
                ("rx_vlan add 7 0", ""),
                ("vlan set filter off 0", ""),
                ("show port info 0", "strip off, filter off, extend off"),
                ("show port info 1", "filter off,"),
            ],
        );
        quit(s);
    }
}

#[test]
fn module_eeprom_says_what_dpdk_says_for_ports_without_one() {
    for eal in [NULLS, X540, X710] {
        let mut s = boot(eal, &["-i"]);
        for cmd in ["show port 0 module_eeprom", "show port 1 eeprom"] {
            let out = s.cmd(cmd);
            assert_eq!(out.lines().next(), Some("operation not supported by device"), "{eal:?} {cmd}: {out}");
        }
        quit(s);
    }
}

#[test]
fn show_port_info_prints_each_ports_devargs() {
    let mut s =
        boot(&["--vdev", "net_sim_x540,ports=2", "--vdev", "net_null0", "--vdev", "net_ring0,size=512"], &["-i"]);
    let devargs = |s: &mut Session, cmd: &str| {
        let out = s.cmd(cmd);
        out.lines().find(|l| l.starts_with("Devargs:")).unwrap_or_else(|| panic!("{cmd}: {out}")).to_string()
    };
    assert_eq!(devargs(&mut s, "show port info 0"), "Devargs: ports=2");
    assert_eq!(devargs(&mut s, "show port info 1"), "Devargs: ports=2");
    assert_eq!(devargs(&mut s, "show port info 2").trim_end(), "Devargs:");
    assert_eq!(devargs(&mut s, "show port info 3"), "Devargs: size=512");
    let dev = s.cmd("show device info all");
    assert!(dev.contains("Devargs: ports=2"), "{dev}");
    quit(s);
}

/// The "CPU cycles/packet=C (total cycles=T / total MODE packets=P) at M MHz Clock" line of `text`.
fn cycles_line(text: &str) -> Option<(f64, u64, String, u64, u64)> {
    let l = text.lines().find(|l| l.starts_with("  CPU cycles/packet="))?;
    let num = |after: &str, end: char| -> Option<&str> {
        let at = l.find(after)? + after.len();
        Some(l[at..].split(end).next()?.trim())
    };
    let mode = l.split("/ total ").nth(1)?.split(' ').next()?.to_string();
    Some((
        num("cycles/packet=", ' ')?.parse().ok()?,
        num("(total cycles=", ' ')?.parse().ok()?,
        mode,
        num("packets=", ')')?.parse().ok()?,
        num(") at ", ' ')?.parse().ok()?,
    ))
}

#[test]
fn record_core_cycles_prints_cycles_per_packet_in_the_stats() {
    // Off (the default): no line.
    let mut s = boot(NULLS, &["-i"]);
    s.cmd("start");
    wait_fwd(&mut s, "forwarding", |b| b.rx_packets > 1000);
    let stop = s.cmd("stop");
    assert!(cycles_line(&stop).is_none(), "{stop}");
    // set record-core-cycles on: from the next start, per packet received in io mode.
    s.cmd("set record-core-cycles on");
    s.cmd("start");
    wait_fwd(&mut s, "forwarding", |b| b.rx_packets > 1000);
    let stop = s.cmd("stop");
    let (per, total, mode, pkts, mhz) = cycles_line(&stop).unwrap_or_else(|| panic!("{stop}"));
    let rx = fwd_total_block(&stop).unwrap().rx_packets;
    assert_eq!((mode.as_str(), pkts), ("io", rx), "{stop}");
    assert!(total > 0 && mhz > 0, "{stop}");
    assert!((per - total as f64 / pkts as f64).abs() < 0.01, "{stop}");
    quit(s);

    // --record-core-cycles in txonly: per packet sent.
    let mut s = boot(NULLS, &["-i", "--record-core-cycles", "--forward-mode=txonly"]);
    s.cmd("start");
    wait_fwd(&mut s, "sending", |b| b.tx_packets > 1000);
    let stop = s.cmd("stop");
    let (_, total, mode, pkts, _) = cycles_line(&stop).unwrap_or_else(|| panic!("{stop}"));
    assert_eq!((mode.as_str(), pkts), ("txonly", fwd_total_block(&stop).unwrap().tx_packets), "{stop}");
    assert!(total > 0);
    quit(s);
}

#[test]
fn rxpkts_without_buffer_split_says_so_once_and_the_offload_is_refused() {
    let mut s = boot(NULLS, &["-i", "--rxpkts=64,1454", "--rxoffs=0,2"]);
    let boot_out = s.output();
    assert_eq!(boot_out.matches("no port here has the BUFFER_SPLIT RX offload").count(), 1, "{boot_out}");
    script(&mut s, &[("show config rxpkts", "Segment sizes: 64,1454"), ("show config rxoffs", "Segment offsets: 0,2")]);
    // Queues are whole-packet: forwarding runs as without the option.
    s.cmd("start");
    wait_fwd(&mut s, "forwarding", |b| b.rx_packets > 1000);
    s.cmd("stop");
    quit(s);

    // Asking for the offload itself fails at configure time with ethdev's words.
    let out = command(NULLS, &["--rx-offloads=0x100000"]).stdin(std::process::Stdio::null()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr) + String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(
            "Ethdev port_id=0 requested Rx offloads 0x100000 doesn't match Rx offloads capabilities 0x0 in \
             rte_eth_dev_configure()"
        ),
        "{err}"
    );
}

/// The frames txonly sent on null ports with `txpkts` segments and split policy `split`, from `set record`.
fn txonly_frames(txpkts: &str, split: &str) -> Vec<Vec<u8>> {
    let dir = TempDir::new(&format!("txsplit-{split}"));
    let out = dir.path("sent.pcap");
    let mut s = boot(NULLS, &["-i", "--forward-mode=txonly"]);
    script(
        &mut s,
        &[
            (&format!("set txpkts {txpkts}"), ""),
            (&format!("set txsplit {split}"), ""),
            ("show config txpkts", &format!("Split packet: {split}")),
            (&format!("set record {out}"), ""),
        ],
    );
    s.cmd("start");
    wait_fwd(&mut s, "sending", |b| b.tx_packets > 2000);
    s.cmd("stop");
    quit(s);
    swports::pcap_file::read_all(&out).unwrap().into_iter().map(|r| r.data).collect()
}

#[test]
fn txsplit_rand_sends_one_to_all_txpkts_segments_with_headers_sized_to_match() {
    let sizes = |frames: &[Vec<u8>]| {
        let mut v: Vec<usize> = frames.iter().map(Vec::len).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    for split in ["off", "on"] {
        let frames = txonly_frames("64,64,64", split);
        assert!(frames.len() > 2000);
        assert_eq!(sizes(&frames), [192], "split {split}: every packet takes the three segments");
    }
    let frames = txonly_frames("64,64,64", "rand");
    assert_eq!(sizes(&frames), [64, 128, 192], "rand: 1, 2 or 3 segments");
    for f in &frames {
        let ip_len = u16::from_be_bytes([f[16], f[17]]) as usize;
        let udp_len = u16::from_be_bytes([f[38], f[39]]) as usize;
        assert_eq!((ip_len, udp_len), (f.len() - 14, f.len() - 34), "headers follow the length");
        let ip = ipv4_checksum_ok(&f[14..34]);
        assert!(ip, "IPv4 header checksum");
    }
    // Roughly uniform: each count gets a fair share.
    for len in [64, 128, 192] {
        let n = frames.iter().filter(|f| f.len() == len).count();
        assert!(n * 5 > frames.len(), "{len}: {n} of {}", frames.len());
    }
}

/// One's complement sum of an IPv4 header (its checksum included) is 0xffff when the checksum is right.
fn ipv4_checksum_ok(h: &[u8]) -> bool {
    let mut sum: u32 = h.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

/// `name: value` of `show port xstats` output.
fn xstat(text: &str, name: &str) -> u64 {
    let prefix = format!("{name}: ");
    let line = text.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no {name}:\n{text}"));
    line[prefix.len()..].trim().parse().unwrap()
}

#[test]
fn stat_qmap_moves_a_queue_to_another_counter_set_on_x540_and_is_refused_elsewhere() {
    let mut s = boot(X540, &["-i", "--rxq=2", "--txq=2"]);
    let run = |s: &mut Session| {
        s.cmd("clear port xstats all");
        s.cmd("start tx_first");
        wait_fwd(s, "forwarding", |b| b.tx_packets > 5000);
        let stop = s.cmd("stop");
        let tx = fwd_port_block(&stop, 0).unwrap().tx_packets;
        // The wires drain into RX rings; the TX counters are final once forwarding stopped.
        (tx, s.cmd("show port xstats 0"))
    };
    // Every queue feeds counter set 0 until mapped, as on the hardware (RQSMR/TQSM reset to 0).
    let (tx, xs) = run(&mut s);
    assert_eq!(xstat(&xs, "tx_q1_packets"), 0, "{xs}");
    assert_eq!(xstat(&xs, "tx_q0_packets"), tx, "{xs}");
    script(
        &mut s,
        &[
            ("set stat_qmap tx 0 1 1", ""),
            ("set stat_qmap rx 0 2 1", "Invalid RX queue 2 (must be < nb_rxq=2)"),
            ("set stat_qmap tx 0 0 16", "map_value not in required range 0..15"),
        ],
    );
    let (tx, xs) = run(&mut s);
    let (q0, q1) = (xstat(&xs, "tx_q0_packets"), xstat(&xs, "tx_q1_packets"));
    assert!(q0 > 0 && q1 > 0, "TX queue 1 now counts in set 1:\n{xs}");
    assert_eq!(q0 + q1, tx, "{xs}");
    // A restart resets the MAC; the mapping is written back.
    script(&mut s, &[("port stop all", ""), ("port start all", "")]);
    let (_, xs) = run(&mut s);
    assert!(xstat(&xs, "tx_q1_packets") > 0, "{xs}");
    quit(s);

    for eal in [NULLS, X710] {
        let mut s = boot(eal, &["-i"]);
        let out = s.cmd("set stat_qmap rx 0 0 1");
        assert_eq!(out.lines().next(), Some("failed to set rx queue stats mapping."), "{eal:?}: {out}");
        quit(s);
    }
}
