//! l3fwd through the real binary: pcap in, pcap out, compared frame by frame with what l3fwd must send (expected
//! frames computed here: TTL - 1, checksum recomputed from scratch, MACs rewritten); drops by reason; --config
//! with several queues and lcores; EM mode; route files; bad input; simulated X540 ports.

mod common;

use common::*;

const BIN: &str = env!("CARGO_BIN_EXE_l3fwd");

/// An IPv4/UDP frame `src -> dst`, ports `sport -> 9`, TTL `ttl`, `len` bytes, checksum right.
fn v4(src: [u8; 4], dst: [u8; 4], sport: u16, ttl: u8, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&[0x02, 0xaa, 0, 0, 0, 1]);
    f[6..12].copy_from_slice(&[0x02, 0xbb, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
    f[18..20].copy_from_slice(&(sport ^ 0x5a5a).to_be_bytes());
    f[22] = ttl;
    f[23] = 17;
    f[26..30].copy_from_slice(&src);
    f[30..34].copy_from_slice(&dst);
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&9u16.to_be_bytes());
    f[38..40].copy_from_slice(&((len - 34) as u16).to_be_bytes());
    for (k, b) in f[42..].iter_mut().enumerate() {
        *b = (k as u8).wrapping_mul(13).wrapping_add(sport as u8);
    }
    set_ipv4_checksum(&mut f[14..34]);
    f
}

/// An IPv6/UDP frame to `dst`, hop limit `hops`.
fn v6(dst: &str, hops: u8, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&[0x02, 0xaa, 0, 0, 0, 6]);
    f[6..12].copy_from_slice(&[0x02, 0xbb, 0, 0, 0, 6]);
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    f[14] = 0x60;
    f[18..20].copy_from_slice(&((len - 54) as u16).to_be_bytes());
    f[20] = 17;
    f[21] = hops;
    f[22..38].copy_from_slice(&"2001:db8::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
    f[38..54].copy_from_slice(&dst.parse::<std::net::Ipv6Addr>().unwrap().octets());
    f
}

/// What l3fwd sends for a valid frame leaving by a port with `src` MAC towards `dst` MAC.
fn forwarded(f: &[u8], dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
    let mut g = f.to_vec();
    g[0..6].copy_from_slice(&dst);
    g[6..12].copy_from_slice(&src);
    if g[12..14] == [8, 0] {
        g[22] -= 1;
        set_ipv4_checksum(&mut g[14..34]);
    }
    g
}

fn default_dest(p: u8) -> [u8; 6] {
    [2, 0, 0, 0, 0, p]
}

/// The "Address:" MAC printed for port `p`.
fn port_mac(out: &str, p: u16) -> [u8; 6] {
    let prefix = format!("Initializing port {p} ");
    let line = out.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no {prefix:?} in:\n{out}"));
    let at = line.find("Address:").unwrap() + "Address:".len();
    let m: pktio::MacAddr = line[at..at + 17].parse().unwrap();
    m.0
}

/// Runs l3fwd over pcap ports: `rx[p]` lists port p's RX files' frames (one file per queue), each port gets
/// `ntx` TX files. Waits until the statistics show `want_rx` received and everything accounted for, then Ctrl-C.
/// Returns the TX files' frames ([port][queue]) and the output.
fn run(
    tag: &str,
    rx: &[Vec<Vec<Vec<u8>>>],
    ntx: usize,
    eal_extra: &[&str],
    app: &[&str],
) -> (Vec<Vec<Vec<Vec<u8>>>>, String) {
    run_until(tag, rx, ntx, eal_extra, app, None)
}

/// [`run`], waiting for `done` (on the output) instead when given.
fn run_until(
    tag: &str,
    rx: &[Vec<Vec<Vec<u8>>>],
    ntx: usize,
    eal_extra: &[&str],
    app: &[&str],
    done: Option<&dyn Fn(&str) -> bool>,
) -> (Vec<Vec<Vec<Vec<u8>>>>, String) {
    let dir = TempDir::new(tag);
    let mut args: Vec<String> = ["-l", "0-1", "--no-huge"].iter().map(|s| s.to_string()).collect();
    args.extend(eal_extra.iter().map(|s| s.to_string()));
    let mut outs = Vec::new();
    for (p, files) in rx.iter().enumerate() {
        let mut dev = format!("net_pcap{p}");
        for (q, frames) in files.iter().enumerate() {
            let path = dir.path(&format!("in{p}_{q}.pcap"));
            write_pcap(&path, frames);
            dev.push_str(&format!(",rx_pcap={path}"));
        }
        let mut port_outs = Vec::new();
        for q in 0..ntx {
            let path = dir.path(&format!("out{p}_{q}.pcap"));
            dev.push_str(&format!(",tx_pcap={path}"));
            port_outs.push(path);
        }
        outs.push(port_outs);
        args.push("--vdev".into());
        args.push(dev);
    }
    args.push("--".into());
    args.extend(app.iter().map(|s| s.to_string()));
    args.extend(["-T", "1"].iter().map(|s| s.to_string()));
    let want_rx: u64 = rx.iter().flatten().map(|f| f.len() as u64).sum();
    let mut p = App::spawn(BIN, &args);
    p.wait_until("every frame received and handled", |o| {
        if let Some(d) = done {
            return d(o);
        }
        let Some(at) = o.rfind("Total   RX-packets:") else { return false };
        let t = &o[at..];
        let rx = last_number(t, "RX-packets:");
        let tx = last_number(t, "TX-packets:").unwrap_or(0);
        let dropped = last_number(t, "total:").unwrap_or(0);
        rx == Some(want_rx) && tx + dropped == want_rx
    });
    let (status, out) = p.interrupt();
    assert!(status.success(), "{out}");
    assert!(out.contains("Bye..."), "{out}");
    let frames = outs.iter().map(|qs| qs.iter().map(|f| read_frames(f)).collect()).collect();
    (frames, out)
}

#[test]
fn lpm_routes_rewrites_and_drops_like_dpdk_l3fwd() {
    // Port 0's input, in order: routed to 1, routed to 0, no route (back to 0), ARP (back to 0), IPv6 routed to 1,
    // IPv6 without route (back to 0), then malformed ones that must be dropped.
    let to1 = v4([10, 0, 0, 1], [198, 18, 1, 7], 1000, 64, 60);
    let to0 = v4([10, 0, 0, 2], [198, 18, 0, 9], 1001, 2, 128);
    let miss = v4([10, 0, 0, 3], [192, 0, 2, 1], 1002, 17, 333);
    let mut arp = vec![0u8; 60];
    arp[0..6].fill(0xff);
    arp[12..14].copy_from_slice(&[8, 6]);
    let v6_to1 = v6("2001:200:0:1::42", 64, 86);
    let v6_miss = v6("2001:db8:1::1", 5, 86);
    let mut bad_sum = v4([10, 0, 0, 4], [198, 18, 1, 1], 1003, 64, 60);
    bad_sum[25] ^= 0xff;
    let ttl1 = v4([10, 0, 0, 5], [198, 18, 1, 1], 1004, 1, 60);
    let mut bad_ver = v4([10, 0, 0, 6], [198, 18, 1, 1], 1005, 64, 60);
    bad_ver[14] = 0x65;
    let mut short_ihl = v4([10, 0, 0, 7], [198, 18, 1, 1], 1006, 64, 60);
    short_ihl[14] = 0x44;
    let truncated = v4([10, 0, 0, 8], [198, 18, 1, 1], 1007, 64, 200)[..100].to_vec();
    let hop1 = v6("2001:200:0:1::1", 1, 86);
    let runt = vec![0x11u8; 9];
    let in0 = vec![
        to1.clone(),
        to0.clone(),
        miss.clone(),
        arp.clone(),
        v6_to1.clone(),
        v6_miss.clone(),
        bad_sum,
        ttl1,
        bad_ver,
        short_ihl,
        truncated,
        hop1,
        runt,
    ];
    // Port 1's input (polled by lcore 1, so it leaves by TX queue 1): many flows to port 0.
    let in1: Vec<Vec<u8>> =
        (0..50u16).map(|i| v4([10, 1, 0, i as u8], [198, 18, 0, i as u8], 2000 + i, 64, 64 + i as usize)).collect();
    let (out, text) = run(
        "l3lpm",
        &[vec![in0], vec![in1.clone()]],
        2,
        &[],
        &["-p", "0x3", "-P", "--config=(0,0,0),(1,0,1)", "--eth-dest=1,02:11:22:33:44:55"],
    );
    let (mac0, mac1) = (port_mac(&text, 0), port_mac(&text, 1));
    let d1 = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
    // Lcore 0 sends by TX queue 0.
    assert_frames_eq(&out[1][0], &[forwarded(&to1, d1, mac1), forwarded(&v6_to1, d1, mac1)]);
    let back: Vec<Vec<u8>> =
        [&to0, &miss, &arp, &v6_miss].iter().map(|f| forwarded(f, default_dest(0), mac0)).collect();
    assert_frames_eq(&out[0][0], &back);
    // Lcore 1 sends by TX queue 1.
    let want1: Vec<Vec<u8>> = in1.iter().map(|f| forwarded(f, default_dest(0), mac0)).collect();
    assert_frames_eq(&out[0][1], &want1);
    assert!(out[1][1].is_empty());
    assert!(
        text.contains("Dropped: truncated: 2 bad-checksum: 1 bad-version: 1 bad-header-length: 1 ttl-exceeded: 2 tx-full: 0; total: 7"),
        "{text}"
    );
    assert!(text.contains("LPM: Adding route 198.18.1.0 / 24 (1)"), "{text}");
    // The driver's own answer for each port, once each.
    for p in 0..2 {
        let line =
            format!("Port {p}: driver net_pcap, RX burst mode: Scalar, streamed from file, TX burst mode: Scalar");
        assert_eq!(text.matches(&line).count(), 1, "{line:?} in:\n{text}");
    }
    assert!(!text.contains("(2) ["), "routes to ports outside the mask are skipped:\n{text}");
}

/// Without --max-pkt-len, jumbo frames that the port delivers as chains of buffers (net_pcap chains a record
/// longer than a buffer, as DPDK's does) are forwarded whole, byte for byte: their IP lengths are checked against
/// the packet, not its first buffer (before the fix 4 of these 7 were dropped as "truncated"). A chain shorter than
/// its IP length is still truncated.
#[test]
fn chained_jumbo_frames_forward_whole_without_max_pkt_len() {
    let sizes = [1514usize, 2000, 2048, 3000, 4000, 9000, 9600];
    let jumbo: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| v4([10, 0, 0, i as u8], [198, 18, 1, 7], 4000 + i as u16, 64, n))
        .collect();
    let mut short = v4([10, 0, 0, 99], [198, 18, 1, 7], 4099, 64, 5000);
    short.truncate(4000);
    let mut input = jumbo.clone();
    input.push(short);
    let (out, text) = run("l3jumbo", &[vec![input], vec![vec![]]], 2, &[], &["-p", "3", "--config=(0,0,0)(1,0,1)"]);
    let mac1 = port_mac(&text, 1);
    let want: Vec<Vec<u8>> = jumbo.iter().map(|f| forwarded(f, default_dest(1), mac1)).collect();
    assert_frames_eq(&out[1][0], &want);
    assert!(text.contains("Dropped: truncated: 1 bad-checksum: 0"), "{text}");
}

#[test]
fn two_ports_two_queues_two_lcores_forward_every_packet_once() {
    // Queue 0 of each port on lcore 0, queue 1 on lcore 1; each input file's flows go to the other port.
    let mk = |p: u8, q: u8| -> Vec<Vec<u8>> {
        (0..40u16)
            .map(|i| v4([10, p, q, i as u8], [198, 18, 1 - p, i as u8], 3000 + i + 100 * q as u16, 64, 60 + i as usize))
            .collect()
    };
    let ins = [[mk(0, 0), mk(0, 1)], [mk(1, 0), mk(1, 1)]];
    let (out, text) = run(
        "l3cfg",
        &[ins[0].to_vec(), ins[1].to_vec()],
        2,
        &[],
        &["-p", "3", "--config=(0,0,0)(0,1,1)(1,0,0)(1,1,1)"],
    );
    let mac = [port_mac(&text, 0), port_mac(&text, 1)];
    for (p, files) in ins.iter().enumerate() {
        for (q, input) in files.iter().enumerate() {
            let o = 1 - p;
            let want: Vec<Vec<u8>> = input.iter().map(|f| forwarded(f, default_dest(o as u8), mac[o])).collect();
            // RX queue q of port p is polled by lcore q, which sends by TX queue q.
            let got: Vec<Vec<u8>> = out[o][q].iter().filter(|f| f[26] == 10 && f[27] == p as u8).cloned().collect();
            assert_frames_eq(&got, &want);
        }
    }
    let total: usize = out.iter().flatten().map(Vec::len).sum();
    assert_eq!(total, 160, "each frame exactly once");
}

#[test]
fn exact_match_uses_the_built_in_flows() {
    // 198.18.1.1 -> 198.18.1.0 UDP 9 -> 9 is a built-in flow to port 1; anything else goes back to the input port.
    let mut hit = v4([198, 18, 1, 1], [198, 18, 1, 0], 9, 64, 60);
    hit[36..38].copy_from_slice(&9u16.to_be_bytes());
    set_ipv4_checksum(&mut hit[14..34]);
    let miss = v4([198, 18, 1, 1], [198, 18, 1, 0], 10, 64, 60);
    let (out, text) = run(
        "l3em",
        &[vec![vec![hit.clone(), miss.clone()]], vec![vec![]]],
        2,
        &[],
        &["-p", "3", "-E", "--config=(0,0,0)(1,0,1)"],
    );
    let mac = [port_mac(&text, 0), port_mac(&text, 1)];
    assert_frames_eq(&out[1][0], &[forwarded(&hit, default_dest(1), mac[1])]);
    assert_frames_eq(&out[0][0], &[forwarded(&miss, default_dest(0), mac[0])]);
    assert!(text.contains("Hash: Adding 0x2 keys"), "{text}");
}

#[test]
fn route_files_replace_the_built_in_tables() {
    let dir = TempDir::new("l3rules");
    let (r4, r6) = (dir.path("v4.cfg"), dir.path("v6.cfg"));
    std::fs::write(&r4, "# test routes\nR10.0.0.0/8 1\nR10.1.0.0/16 0\n\n").unwrap();
    std::fs::write(&r6, "R2001:db8::/32 1\n").unwrap();
    let a = v4([1, 1, 1, 1], [10, 2, 3, 4], 1, 64, 60);
    let b = v4([1, 1, 1, 1], [10, 1, 3, 4], 2, 64, 60);
    let c = v4([1, 1, 1, 1], [198, 18, 1, 1], 3, 64, 60);
    let d = v6("2001:db8:5::1", 9, 80);
    let (out, text) = run(
        "l3rulesrun",
        &[vec![vec![a.clone(), b.clone(), c.clone(), d.clone()]], vec![vec![]]],
        2,
        &[],
        &[
            "-p",
            "3",
            "--config=(0,0,0)(1,0,1)",
            &format!("--rule_ipv4={r4}"),
            &format!("--rule_ipv6={r6}"),
            "--lookup=fib",
        ],
    );
    let mac = [port_mac(&text, 0), port_mac(&text, 1)];
    assert_frames_eq(&out[1][0], &[forwarded(&a, default_dest(1), mac[1]), forwarded(&d, default_dest(1), mac[1])]);
    // 10.1/16 -> 0 (longest match), 198.18.1.1 has no route in the file -> back to 0.
    assert_frames_eq(&out[0][0], &[forwarded(&b, default_dest(0), mac[0]), forwarded(&c, default_dest(0), mac[0])]);
}

#[test]
fn bad_input_exits_1_with_a_reason() {
    let dir = TempDir::new("l3bad");
    let (r4, r6) = (dir.path("v4.cfg"), dir.path("v6.cfg"));
    std::fs::write(&r4, "R10.0.0.0/8 1\n# fine\nR10.1.0.0/40 0\n").unwrap();
    std::fs::write(&r6, "R2001:db8::/32 1\n").unwrap();
    let rule4 = format!("--rule_ipv4={r4}");
    let rule6 = format!("--rule_ipv6={r6}");
    let o = dir.path("o.pcap");
    let o2 = dir.path("o2.pcap");
    let dev0 = format!("net_pcap0,tx_pcap={o},tx_pcap={o2}");
    let dev1 = format!("net_pcap1,tx_pcap={o}1,tx_pcap={o2}1");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["-p", "3", "--config=(0,0,0"], "not closed"),
        (vec!["-p", "3", "--config=(0,0)"], "three numbers"),
        (vec!["-p", "3", "--config=(2,0,0)"], "port 2 is not present"),
        (vec!["-p", "1", "--config=(1,0,0)"], "not enabled in the port mask"),
        (vec!["-p", "3", "--config=(0,1,0)"], "queue 1 is out of range"),
        (vec!["-p", "3", "--config=(0,0,7)"], "lcore 7 is not enabled"),
        (vec!["-p", "0x7", "--config=(0,0,0)"], "names ports that do not exist"),
        (vec!["-p", "3", "--config=(0,0,0)", &rule4, &rule6], "v4.cfg:3: depth 40 is above 32"),
        (vec!["-p", "3", "--config=(0,0,0)", "--lookup=radix"], "lpm, em or fib"),
    ];
    for (app, needle) in cases {
        let mut all = vec!["-l", "0-1", "--no-huge", "--vdev", &dev0, "--vdev", &dev1, "--"];
        all.extend(app.iter().copied());
        let (status, out) = run_to_exit(BIN, &all);
        assert_eq!(status.code(), Some(1), "{app:?}: {out}");
        assert!(out.contains(needle), "{app:?}: expected {needle:?} in:\n{out}");
        assert!(!out.contains("panicked"), "{out}");
    }
}

#[test]
fn forwards_through_simulated_x540_ports() {
    forwards_through_simulated_ports("net_sim_x540,ports=2", "l3sim");
}

#[test]
fn forwards_through_simulated_x710_ports() {
    forwards_through_simulated_ports("net_sim_x710,ports=2", "l3sim710");
}

#[test]
fn forwards_through_simulated_sp670_ports() {
    forwards_through_simulated_ports("net_sim_sp670,ports=2", "l3sim670");
}

fn forwards_through_simulated_ports(vdev: &str, tmp: &str) {
    // Ports 0, 1: two simulated NICs (X540, X710 or SP670) wired back to back (their vdev comes first); port 2: pcap. 198.18.0.0/24 -> port 0. A frame from the pcap
    // leaves by sim port 0, crosses the wire, arrives on sim port 1 and is routed to port 0 again, TTL one less
    // each time, until its TTL reaches 1 and it is dropped: TTL 4 makes three trips through the driver. -P: the
    // frames carry the default destination 02:00:00:00:00:00, which the model filters out otherwise.
    let frames: Vec<Vec<u8>> =
        (0..10u16).map(|i| v4([10, 9, 0, i as u8], [198, 18, 0, i as u8], 500 + i, 4, 64)).collect();
    let all_dropped =
        |o: &str| o.rfind("ttl-exceeded:").is_some_and(|at| last_number(&o[at..], "ttl-exceeded:") == Some(10));
    let (out, text) = run_until(
        tmp,
        &[vec![frames]],
        2,
        &["--vdev", vdev],
        &["-p", "0x7", "-P", "--config=(2,0,0)(1,0,1)"],
        Some(&all_dropped),
    );
    // The real driver reports its vector RX path through the simulated port (x86-64 builds: SSE2 always there,
    // AVX2 where the CPU has it).
    if cfg!(target_arch = "x86_64") {
        assert!(
            text.lines().any(|l| l.starts_with("Port 0: driver")
                && (l.contains("RX burst mode: Vector SSE2") || l.contains("RX burst mode: Vector AVX2"))),
            "{text}"
        );
    }
    assert!(out[0].iter().all(Vec::is_empty), "nothing routes to the pcap port");
    let at = text.rfind("l3fwd statistics").unwrap();
    let t = &text[at..];
    assert!(t.contains("Port 0  RX-packets: 0              TX-packets: 30"), "{t}");
    assert!(t.contains("Port 1  RX-packets: 30             TX-packets: 0"), "{t}");
    assert!(t.contains("ttl-exceeded: 10"), "{t}");
}
