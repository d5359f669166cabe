//! dpdk-testpmd compatibility: every 22.11 option a script may pass is accepted (doing what it does in DPDK or
//! saying why not), every interactive command of issue 9 runs against null ports and simulated X540 ports, and
//! input that is not UTF-8 does not end the session.

mod common;

use std::time::Duration;

use common::*;

#[test]
fn every_dpdk_option_is_accepted_on_null_ports() {
    let dir = TempDir::new("opts");
    let file = dir.path("cmds.txt");
    std::fs::write(&file, "set burst 16\nshow config rxpkts\n").unwrap();
    let cmdline = format!("--cmdline-file={file}");
    let args = [
        "-i",
        "--coremask=0x2",
        "--portlist=0-1",
        "--numa",
        "--no-numa",
        "--socket-num=0",
        "--mbcache=128",
        "--rxpt=8",
        "--rxht=8",
        "--rxwt=4",
        "--rxfreet=32",
        "--txpt=36",
        "--txfreet=32",
        "--txrst=32",
        "--no-flush-rx",
        "--rxoffs=0",
        "--rxpkts=2048",
        "--txonly-multi-flow",
        "--disable-link-check",
        "--no-lsc-interrupt",
        "--no-rmv-interrupt",
        "--record-core-cycles",
        "--record-burst-stats",
        "--enable-rx-cksum",
        "--enable-scatter",
        "--enable-hw-vlan-strip",
        "--rx-offloads=0x0",
        "--tx-offloads=0x0",
        "--flow-isolate-all",
        "--mp-alloc=xmem",
        "--mlockall",
        "--no-mlockall",
        "--rx-mq-mode=0x1",
        "--display-xstats=rx_good_packets,tx_good_packets",
        &cmdline,
        "--forward-mode=noisy",
        "--noisy-tx-sw-buffer-size=128",
        "--noisy-tx-sw-buffer-flushtime=1",
        "--noisy-lkup-memory=1",
        "--noisy-lkup-num-writes=1",
        "--noisy-lkup-num-reads=1",
        "--noisy-lkup-num-reads-writes=1",
        "--stats-period=1",
    ];
    let mut s = boot(NULLS, &args);
    let boot_out = s.output();
    for why in ["Note: --numa", "Note: --rxpt", "Note: --mp-alloc", "Note: --flow-isolate-all"] {
        assert!(boot_out.contains(why), "{why} missing:\n{boot_out}");
    }
    // --disable-link-check: no link report at start.
    assert!(!boot_out.contains("Checking link statuses"), "{boot_out}");
    // --cmdline-file ran before the prompt.
    assert!(boot_out.contains("Number of packets per burst set to 16"), "{boot_out}");
    assert!(boot_out.contains("Read CLI commands from"), "{boot_out}");
    assert!(s.cmd("show config cores").contains("List of forwarding lcores:  1"));
    assert!(s.cmd("show config fwd").contains("noisy packet forwarding - ports=2"));
    // noisy with a FIFO forwards: null ports always have packets.
    s.cmd("start");
    let t = wait_fwd(&mut s, "noisy forwarding", |b| b.tx_packets > 1000);
    assert!(t.rx_packets >= t.tx_packets, "{t:?}");
    let stop = s.cmd("stop");
    let total = fwd_total_block(&stop).unwrap();
    // Everything received was sent or dropped: the FIFO is emptied at stop.
    assert_eq!(total.rx_packets, total.tx_packets + total.tx_dropped, "{stop}");
    // --record-burst-stats: each port's bursts; null ports always fill a burst (16, from the --cmdline-file).
    assert!(stop.contains("  RX-bursts : ") && stop.contains("% of 16 pkts"), "{stop}");
    assert!(stop.contains("  TX-bursts : "), "{stop}");
    let st = s.cmd("show port stats 0");
    assert!(st.contains("rx_good_packets: ") && st.contains("tx_good_packets: "), "{st}");
    quit(s);

    // An unknown option with a value is unknown, not "takes no value".
    let out = command(NULLS, &["--frobnicate=3"]).stdin(std::process::Stdio::null()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("unknown option"), "{err}");
    // --coremask must name a forwarding lcore.
    let out = command(NULLS, &["--coremask=0x1"]).stdin(std::process::Stdio::null()).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("selects none of the forwarding lcores"));
}

/// Every command of issue 9 item 5, with what each must print (a needle), run in order.
const SCRIPT: &[(&str, &str)] = &[
    ("show port summary all", "Number of available ports: 2"),
    ("show config txpkts", "Segment sizes: 64"),
    ("set txsplit off", ""),
    ("show config txpkts", "Split packet: off"),
    ("show device info all", "Infos for device"),
    ("show port 0 rss-hash", ""),
    ("show port 0 module_eeprom", "operation not supported by device"),
    ("set coremask 0x2", ""),
    ("set portmask 0x3", ""),
    ("set link-up port 0", ""),
    ("set link-down port 0", ""),
    ("set link-up port 0", ""),
    ("set flush_rx off", ""),
    ("set flush_rx on", ""),
    ("set verbose 1", "Change verbose level from 0 to 1"),
    ("set verbose 0", "Change verbose level from 1 to 0"),
    ("set stat_qmap rx 0 0 0", ""),
    ("set record-burst-stats on", ""),
    ("set record-core-cycles on", ""),
    ("set record-burst-stats off", ""),
    ("set record-core-cycles off", ""),
    ("mac_addr add 0 02:00:00:00:00:33", ""),
    ("mac_addr remove 0 02:00:00:00:00:33", ""),
    ("mac_addr set 0 02:00:00:00:00:34", ""),
    ("show port info 0", "MAC address: 02:00:00:00:00:34"),
    ("set fwd mac retry", "Set mac packet forwarding mode with retry"),
    ("set burst tx delay 2 retry 8", ""),
    ("show config fwd", "mac packet forwarding with retry - ports=2"),
    ("show config rxtx", "TX retry num: 8, delay between TX retries: 2us"),
    ("set fwd io", "Set io packet forwarding mode"),
    ("help control", "start tx_first"),
    ("help config", "set verbose"),
    ("help ports", "port close"),
    ("help registers", "none of these commands"),
    ("start tx_first 0", "io packet forwarding"),
    ("stop", "Done."),
    ("port stop all", "Done"),
    ("port config all rxd 0", "rxd must be at least 1"),
    ("port reset 0", "Resetting ports"),
    ("port start all", "Port 0: 02:00:00:00:00:34"),
    ("port reset 0", "please stop port(s) first"),
    ("port stop 1", "Done"),
    ("port close 1", "Port 1 is closed"),
    ("show port summary all", "Number of available ports: 1"),
    ("port start 1", "Port 1 is closed"),
];

fn run_script(eal: &[&str], extra: &[(&str, &str)]) -> String {
    let mut s = boot(eal, &["-i"]);
    let mut all = String::new();
    for &(cmd, needle) in SCRIPT.iter().chain(extra) {
        let out = s.cmd(cmd);
        assert!(!out.contains("Command not found") && !out.contains("Bad arguments"), "{cmd}: {out}");
        assert!(out.contains(needle), "{cmd}: expected {needle:?} in:\n{out}");
        all.push_str(&out);
    }
    all.push_str(&quit(s));
    all
}

#[test]
fn every_item5_command_runs_on_null_ports() {
    run_script(
        NULLS,
        &[
            ("show port 0 rss reta 128 0x1", "Invalid redirection table size"),
            ("port config all rss udp", "Multi-queue RSS mode isn't enabled"),
            ("port config 0 rss reta (0,0)", "no redirection table"),
            ("vlan set strip on 0", "not among the port's RX offload capabilities"),
            ("vlan set strip off 0", ""),
            // A null port has no VLAN filter: DPDK's message with -ENOTSUP.
            ("rx_vlan add 5 0", "rte_eth_dev_vlan_filter(port_pi=0, vlan_id=5, on=1) failed diag=-95"),
            ("rx_vlan rm 5 0", "rte_eth_dev_vlan_filter(port_pi=0, vlan_id=5, on=0) failed diag=-95"),
            ("rx_vlan add all 1", "rte_eth_dev_vlan_filter(port_pi=1, vlan_id=0, on=1) failed diag=-95"),
            ("rx_vlan add 4096 0", "Invalid vlan_id 4096 (must be < 4096)"),
        ],
    );
}

#[test]
fn every_item5_command_runs_on_simulated_x540_ports() {
    let mut s = boot(X540, &["-i", "--rxq=4", "--txq=4"]);
    let rss = s.cmd("show port 0 rss-hash");
    assert!(rss.contains("RSS functions:") && rss.contains("ipv4"), "{rss}");
    let reta = s.cmd("show port 0 rss reta 128 0xf");
    assert!(reta.contains("hash index=3, queue=3"), "{reta}");
    assert!(s.cmd("port config all rss udp").is_empty());
    assert!(s.cmd("show port 0 rss-hash").contains("ipv4-udp"));
    assert!(s.cmd("port config 0 rss reta (3,1),(2,0)").contains("The reta size of port 0 is 128"));
    let reta = s.cmd("show port 0 rss reta 128 0xc");
    assert!(reta.contains("hash index=3, queue=1") && reta.contains("hash index=2, queue=0"), "{reta}");
    assert!(s.cmd("port config 0 rss reta (3,9)").contains("Invalid RETA queue=9"));
    // The X540 filters by VLAN (VFTA): adding and removing IDs succeeds silently, as in DPDK's testpmd.
    for cmd in ["rx_vlan add 100 0", "rx_vlan rm 100 0", "rx_vlan add all 1", "rx_vlan rm all 1"] {
        let out = s.cmd(cmd);
        assert!(out.is_empty(), "{cmd}: {out}");
    }
    assert!(s.cmd("rx_vlan add 4096 0").contains("Invalid vlan_id 4096 (must be < 4096)"));
    let info = s.cmd("show port info 0");
    assert!(
        info.contains("Devargs:") && info.contains("VLAN offload:") && info.contains("Redirection table size: 128"),
        "{info}"
    );
    quit(s);
    run_script(
        X540,
        &[
            ("vlan set strip off 0", ""),
            ("port stop all", "Done"),
            // Checked when set, against the X540's descriptor limits (multiples of 8).
            ("port config all rxd 7", "Invalid rxd 7"),
        ],
    );
}

#[test]
fn a_byte_that_is_not_utf8_does_not_end_the_session() {
    let mut s = boot(NULLS, &["-i"]);
    s.send_bytes(b"\xff\xfeshow\n");
    s.wait_for("Command not found", Duration::from_secs(20));
    let long = format!("set burst {}", "9".repeat(5000));
    let out = s.cmd(&long);
    assert!(out.contains("bytes)") && out.len() < 600, "a long line is quoted shortened: {} bytes", out.len());
    assert!(s.cmd("set burst 8").contains("Number of packets per burst set to 8"));
    assert!(s.cmd("show port summary all").contains("net_null1"));
    quit(s);
}

#[test]
fn set_verbose_dumps_bursts_as_dpdk_testpmd_does() {
    let dir = TempDir::new("verbose");
    let input = dir.path("in.pcap");
    let mut w = swports::pcap_file::PcapWriter::create(&input).unwrap();
    let mut udp = vec![0u8; 64];
    udp[0..6].copy_from_slice(&[2, 0xaa, 0, 0, 0, 1]);
    udp[6..12].copy_from_slice(&[2, 0xbb, 0, 0, 0, 1]);
    udp[12..14].copy_from_slice(&[8, 0]);
    udp[14] = 0x45;
    udp[16..18].copy_from_slice(&50u16.to_be_bytes());
    udp[22] = 64;
    udp[23] = 17;
    let mut arp = vec![0u8; 60];
    arp[0..6].fill(0xff);
    arp[12..14].copy_from_slice(&[8, 6]);
    w.write_packet(1, &udp).unwrap();
    w.write_packet(2, &arp).unwrap();
    w.flush().unwrap();
    drop(w);
    let v0 = format!("net_pcap0,rx_pcap={input},tx_pcap={}", dir.path("out.pcap"));
    let mut s = boot(&["--vdev", &v0], &["-i", "--no-flush-rx"]);
    assert!(s.cmd("set verbose 3").contains("Change verbose level from 0 to 3"));
    s.cmd("start");
    let out = s.wait_for("port 0/queue 0: sent 2 packets", Duration::from_secs(20));
    let rx = "port 0/queue 0: received 2 packets\n  src=02:BB:00:00:00:01 - dst=02:AA:00:00:00:01 - pool=mb_pool_0 - \
              type=0x0800 - length=64 - nb_segs=1 - sw ptype: L2_ETHER L3_IPV4 L4_UDP  - l2_len=14 - l3_len=20 - \
              l4_len=8 - Receive queue=0x0\n  ol_flags: RTE_MBUF_F_RX_L4_CKSUM_UNKNOWN \
              RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN RTE_MBUF_F_RX_OUTER_L4_CKSUM_UNKNOWN \n  src=00:00:00:00:00:00 - \
              dst=FF:FF:FF:FF:FF:FF - pool=mb_pool_0 - type=0x0806 - length=60 - nb_segs=1 - sw ptype: L2_ETHER  - \
              l2_len=14 - Receive queue=0x0\n";
    assert!(out.contains(rx), "{out}");
    assert!(out.contains("l4_len=8 - Send queue=0x0\n  ol_flags: RTE_MBUF_F_TX_L4_NO_CKSUM \n"), "{out}");
    s.cmd("stop");
    assert!(s.cmd("set verbose 0").contains("from 3 to 0"));
    quit(s);
}

#[test]
fn txonly_multi_flow_varies_the_source_address_per_packet() {
    let dir = TempDir::new("multiflow");
    let out = dir.path("out.pcap");
    let v0 = format!("net_pcap0,tx_pcap={out}");
    let mut s = boot(&["--vdev", &v0], &["-i", "--forward-mode=txonly", "--txonly-multi-flow", "--burst=16"]);
    s.cmd("start");
    wait_fwd(&mut s, "txonly sending", |b| b.tx_packets >= 300);
    s.cmd("stop");
    quit(s);
    let frames = swports::pcap_file::read_all(&out).unwrap();
    assert!(frames.len() >= 300);
    for (i, f) in frames.iter().enumerate() {
        let d = &f.data;
        // Lcore 1 forwards (-l 0-1): 198.18.0.2 with the packet counter in the third byte, plus 1.
        assert_eq!(d[26..30], [198, 18, (i % 256) as u8, 3], "frame {i}");
        assert_eq!(d[30..34], [198, 18, 0, 2], "frame {i}");
        let sum: u32 = d[14..34].chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32).sum();
        assert_eq!((sum & 0xffff) + (sum >> 16), 0xffff, "frame {i}: IPv4 header checksum");
    }
}

#[test]
fn mlockall_locks_the_process_memory() {
    let s = boot(NULLS, &["-i", "--mlockall"]);
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.pid())).unwrap();
    let locked_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmLck:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmLck in:\n{status}"));
    let out = s.output();
    if out.contains("mlockall() failed") {
        // Without CAP_IPC_LOCK and a low RLIMIT_MEMLOCK it fails, said once, and the run goes on.
        assert_eq!(locked_kb, 0);
    } else {
        assert!(locked_kb > 1024, "VmLck {locked_kb} kB after --mlockall");
    }
    quit(s);
}

#[test]
fn rx_vlan_reaches_the_x710_filters() {
    let mut s = boot(&["--vdev", "net_sim_x710,ports=2"], &["-i"]);
    for cmd in ["rx_vlan add 100 0", "rx_vlan add 200 0", "rx_vlan rm 100 0", "rx_vlan add 0 1"] {
        let out = s.cmd(cmd);
        assert!(out.is_empty(), "{cmd}: {out}");
    }
    // VLAN 0 lets untagged frames in once the port filters by VLAN: the driver refuses to remove it.
    let out = s.cmd("rx_vlan rm 0 1");
    assert!(out.contains("rte_eth_dev_vlan_filter(port_pi=1, vlan_id=0, on=0) failed diag=-22"), "{out}");
    quit(s);
}
