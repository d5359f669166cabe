//! Forwarding modes over pcap ports: the frames written to the output captures are exactly what each mode must
//! produce from the input captures (expected frames computed here, independently of the application).

mod common;

use std::time::Duration;

use common::*;
use swports::pcap_file::{read_all, PcapWriter};

fn sum16(data: &[u8]) -> u32 {
    let mut s = 0u32;
    for c in data.chunks(2) {
        s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    s
}

fn finish(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// Sets correct IPv4 and TCP/UDP checksums in a frame built by `ipv4_frame`.
fn set_checksums(f: &mut [u8]) {
    f[24..26].fill(0);
    let c = finish(sum16(&f[14..34]));
    f[24..26].copy_from_slice(&c.to_be_bytes());
    let proto = f[23];
    let at = if proto == 17 { 34 + 6 } else { 34 + 16 };
    f[at..at + 2].fill(0);
    let l4_len = f.len() - 34;
    let pseudo = sum16(&f[26..34]) + proto as u32 + l4_len as u32;
    let mut c = finish(pseudo + sum16(&f[34..]));
    if proto == 17 && c == 0 {
        c = 0xffff;
    }
    f[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

/// An Ethernet/IPv4/UDP (proto 17) or TCP (6) frame of `len` bytes with a payload pattern and correct checksums.
fn ipv4_frame(i: u8, proto: u8, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&[0x02, 0xaa, 0, 0, 0, i]);
    f[6..12].copy_from_slice(&[0x02, 0xbb, 0, 0, 0, i]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
    f[18..20].copy_from_slice(&(i as u16).to_be_bytes());
    f[22] = 64;
    f[23] = proto;
    f[26..30].copy_from_slice(&[10, 0, 0, i]);
    f[30..34].copy_from_slice(&[10, 0, 1, i]);
    f[34..36].copy_from_slice(&(1000 + i as u16).to_be_bytes());
    f[36..38].copy_from_slice(&2000u16.to_be_bytes());
    if proto == 17 {
        f[38..40].copy_from_slice(&((len - 34) as u16).to_be_bytes());
    } else {
        f[46] = 0x50;
        f[47] = 0x10;
    }
    let payload_at = if proto == 17 { 42 } else { 54 };
    for (k, b) in f[payload_at..].iter_mut().enumerate() {
        *b = (k as u8).wrapping_mul(7).wrapping_add(i);
    }
    set_checksums(&mut f);
    f
}

fn arp_frame(i: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[0..6].fill(0xff);
    f[6..12].copy_from_slice(&[0x02, 0xcc, 0, 0, 0, i]);
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    f[22..28].copy_from_slice(&[0x02, 0xcc, 0, 0, 0, i]);
    f[28..32].copy_from_slice(&[10, 0, 0, i]);
    f[38..42].copy_from_slice(&[10, 0, 0, 200]);
    f
}

/// A mixed set of frames: UDP and TCP of several sizes, an ARP request, a runt.
fn frames(seed: u8) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for i in 0..24u8 {
        let id = seed.wrapping_add(i);
        let len = [60, 64, 128, 333, 1000, 1514][i as usize % 6];
        v.push(ipv4_frame(id, if i % 3 == 0 { 6 } else { 17 }, len));
    }
    v.push(arp_frame(seed));
    v.push(vec![0x5a; 10]);
    v
}

fn write_pcap(path: &str, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::create(path).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(1_700_000_000_000_000_000 + i as u64 * 1000, f).unwrap();
    }
    w.flush().unwrap();
}

fn read_frames(path: &str) -> Vec<Vec<u8>> {
    read_all(path).unwrap().into_iter().map(|r| r.data).collect()
}

struct Run {
    out0: Vec<Vec<u8>>,
    out1: Vec<Vec<u8>>,
    macs: [[u8; 6]; 2],
    stop: String,
}

/// Runs `mode` between two pcap ports replaying `in0`/`in1` until both were forwarded, then quits.
fn run_mode(tag: &str, mode: &str, in0: &[Vec<u8>], in1: &[Vec<u8>], extra: &[&str]) -> Run {
    let dir = TempDir::new(tag);
    let (i0, i1, o0, o1) = (dir.path("in0.pcap"), dir.path("in1.pcap"), dir.path("out0.pcap"), dir.path("out1.pcap"));
    write_pcap(&i0, in0);
    write_pcap(&i1, in1);
    let v0 = format!("net_pcap0,rx_pcap={i0},tx_pcap={o0}");
    let v1 = format!("net_pcap1,rx_pcap={i1},tx_pcap={o1}");
    // --no-flush-rx: otherwise the start empties the RX queues, which for a pcap port is its capture (as in DPDK).
    let mut app = vec!["-i".to_string(), "--no-flush-rx".to_string(), format!("--forward-mode={mode}")];
    app.extend(extra.iter().map(|s| s.to_string()));
    let app: Vec<&str> = app.iter().map(String::as_str).collect();
    let mut s = Session::spawn(command(&["--vdev", &v0, "--vdev", &v1], &app));
    let boot = s.wait_for("testpmd> ", Duration::from_secs(20));
    let mac = |port: u16| -> [u8; 6] {
        let line = boot.lines().find(|l| l.starts_with(&format!("Port {port}: "))).unwrap();
        let m: pktio::MacAddr = line[8..].trim().parse().unwrap();
        m.0
    };
    let macs = [mac(0), mac(1)];
    s.cmd("start");
    let want = (in0.len() + in1.len()) as u64;
    let seen = wait_fwd(&mut s, "every input frame received", |b| b.rx_packets >= want).rx_packets;
    assert_eq!(seen, want, "no more frames received than the captures hold");
    let stop = s.cmd("stop");
    s.send("quit");
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    assert_pool_full(&out);
    Run { out0: read_frames(&o0), out1: read_frames(&o1), macs, stop }
}

fn assert_frames_eq(got: &[Vec<u8>], want: &[Vec<u8>]) {
    assert_eq!(got.len(), want.len(), "frame count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "frame {i} differs");
    }
}

#[test]
fn io_copies_frames_unchanged() {
    let (in0, in1) = (frames(1), frames(100));
    let r = run_mode("io", "io", &in0, &in1, &[]);
    assert_frames_eq(&r.out1, &in0);
    assert_frames_eq(&r.out0, &in1);
}

#[test]
fn macswap_swaps_ethernet_addresses() {
    let (in0, in1) = (frames(3), frames(50));
    let swap = |v: &[Vec<u8>]| -> Vec<Vec<u8>> {
        v.iter()
            .map(|f| {
                let mut g = f.clone();
                if g.len() >= 12 {
                    g[..12].copy_from_slice(&[&f[6..12], &f[0..6]].concat());
                }
                g
            })
            .collect()
    };
    let r = run_mode("macswap", "macswap", &in0, &in1, &[]);
    assert_frames_eq(&r.out1, &swap(&in0));
    assert_frames_eq(&r.out0, &swap(&in1));
}

#[test]
fn mac_sets_peer_and_port_addresses() {
    let (in0, in1) = (frames(7), frames(70));
    let peer0 = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
    let r = run_mode("mac", "mac", &in0, &in1, &["--eth-peer=0,02:11:22:33:44:55"]);
    let set = |v: &[Vec<u8>], dst: [u8; 6], src: [u8; 6]| -> Vec<Vec<u8>> {
        v.iter()
            .map(|f| {
                let mut g = f.clone();
                if g.len() >= 12 {
                    g[..6].copy_from_slice(&dst);
                    g[6..12].copy_from_slice(&src);
                }
                g
            })
            .collect()
    };
    // Port 0's frames leave through port 1: source port 1's MAC, destination port 1's default peer.
    assert_frames_eq(&r.out1, &set(&in0, [2, 0, 0, 0, 0, 1], r.macs[1]));
    assert_frames_eq(&r.out0, &set(&in1, peer0, r.macs[0]));
}

#[test]
fn five_tuple_swap_swaps_every_layer() {
    let (in0, in1) = (frames(9), frames(90));
    let swap = |v: &[Vec<u8>]| -> Vec<Vec<u8>> {
        v.iter()
            .map(|f| {
                let mut g = f.clone();
                if g.len() < 14 {
                    return g;
                }
                g[..12].copy_from_slice(&[&f[6..12], &f[0..6]].concat());
                if f[12..14] == [8, 0] {
                    g[26..34].copy_from_slice(&[&f[30..34], &f[26..30]].concat());
                    g[34..38].copy_from_slice(&[&f[36..38], &f[34..36]].concat());
                }
                g
            })
            .collect()
    };
    let r = run_mode("5tswap", "5tswap", &in0, &in1, &[]);
    assert_frames_eq(&r.out1, &swap(&in0));
    assert_frames_eq(&r.out0, &swap(&in1));
}

#[test]
fn csum_counts_bad_checksums_and_fixes_them() {
    let mut in0 = frames(11);
    let mut bad_ip = 0;
    let mut bad_l4 = 0;
    for (i, f) in in0.iter_mut().enumerate().take(24) {
        if i % 4 == 1 {
            f[25] ^= 0x5a;
            bad_ip += 1;
        }
        if i % 5 == 2 {
            let at = if f[23] == 17 { 40 } else { 50 };
            f[at] ^= 0x33;
            bad_l4 += 1;
        }
    }
    // A UDP frame without a checksum is not bad, and leaves without one (as dpdk-testpmd's csum engine does).
    in0[4][40..42].fill(0);
    let in1 = vec![ipv4_frame(1, 17, 80)];
    let r = run_mode("csum", "csum", &in0, &in1, &[]);
    let want: Vec<Vec<u8>> = in0
        .iter()
        .map(|f| {
            let mut g = f.clone();
            if g.len() >= 34 && g[12..14] == [8, 0] {
                let no_udp_csum = g[23] == 17 && g[40..42] == [0, 0];
                set_checksums(&mut g);
                if no_udp_csum {
                    g[40..42].fill(0);
                }
            }
            if g.len() >= 12 {
                g[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
                g[6..12].copy_from_slice(&r.macs[1]);
            }
            g
        })
        .collect();
    assert_frames_eq(&r.out1, &want);
    assert!(
        r.stop.contains(&format!("Bad-ipcsum: {bad_ip:<14} Bad-l4csum: {bad_l4:<14}")),
        "expected {bad_ip} bad IP and {bad_l4} bad L4 checksums:\n{}",
        r.stop
    );
}

#[test]
fn txonly_writes_testpmd_default_udp_frames() {
    let dir = TempDir::new("txonly");
    let out = dir.path("out.pcap");
    let v0 = format!("net_pcap0,tx_pcap={out}");
    let mut s = Session::spawn(command(&["--vdev", &v0], &["-i", "--forward-mode=txonly", "--txpkts=80", "--burst=4"]));
    let boot = s.wait_for("testpmd> ", Duration::from_secs(20));
    let line = boot.lines().find(|l| l.starts_with("Port 0: ")).unwrap();
    let mac: pktio::MacAddr = line[8..].trim().parse().unwrap();
    s.cmd("start");
    wait_fwd(&mut s, "txonly sending", |b| b.tx_packets > 0);
    let stop = s.cmd("stop");
    s.send("quit");
    let (status, all) = s.finish();
    assert!(status.success(), "{all}");
    assert_pool_full(&all);
    let sent = fwd_total_block(&stop).unwrap().tx_packets;
    let got = read_frames(&out);
    assert_eq!(got.len() as u64, sent);
    assert!(sent > 0);
    // One port, paired with itself: destination is its own default peer 02:00:00:00:00:00.
    let mut want = vec![0u8; 80];
    want[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 0]);
    want[6..12].copy_from_slice(&mac.0);
    want[12..14].copy_from_slice(&[8, 0]);
    want[14] = 0x45;
    want[16..18].copy_from_slice(&66u16.to_be_bytes());
    want[22] = 64;
    want[23] = 17;
    want[26..30].copy_from_slice(&[198, 18, 0, 1]);
    want[30..34].copy_from_slice(&[198, 18, 0, 2]);
    want[34..36].copy_from_slice(&9u16.to_be_bytes());
    want[36..38].copy_from_slice(&9u16.to_be_bytes());
    want[38..40].copy_from_slice(&46u16.to_be_bytes());
    let c = finish(sum16(&want[14..34]));
    want[24..26].copy_from_slice(&c.to_be_bytes());
    for (i, f) in got.iter().enumerate() {
        assert_eq!(f, &want, "frame {i}");
    }
}

#[test]
fn set_record_captures_what_is_sent() {
    let dir = TempDir::new("record");
    let cap = dir.path("rec.pcap");
    let mut s = Session::spawn(command(&["--vdev", "net_ring0,link=r", "--vdev", "net_ring1,link=r"], &["-i"]));
    s.wait_for("testpmd> ", Duration::from_secs(20));
    assert!(s.cmd(&format!("set record {cap}")).contains("from the next start"));
    assert!(s.cmd("set record /nonexistent-dir/x.pcap").contains("cannot create"));
    s.cmd(&format!("set record {cap}"));
    s.cmd("start tx_first");
    wait_fwd(&mut s, "forwarding", |b| b.rx_packets >= 64);
    let stop = s.cmd("stop");
    let total = fwd_total_block(&stop).unwrap();
    assert!(total.rx_packets >= 64 && total.tx_packets == total.rx_packets + 64, "{stop}");
    let recorded: u64 = stop
        .lines()
        .find_map(|l| l.strip_prefix("Recorded ")?.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no Recorded line:\n{stop}"));
    assert_eq!(recorded, total.tx_packets + total.tx_dropped, "{stop}");
    let frames = read_frames(&cap);
    assert_eq!(frames.len() as u64, recorded);
    // The first 64 are the tx_first bursts: 64-byte UDP frames 198.18.0.1 -> 198.18.0.2 that then circulate.
    assert!(frames.iter().all(|f| f.len() == 64 && f[26..34] == [198, 18, 0, 1, 198, 18, 0, 2]));
    assert!(s.cmd("set record off").contains("Recording off"));
    s.send("quit");
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    assert_pool_full(&out);
}

/// The number after `key` in `text`'s last `NIC statistics for port {port}` block.
fn port_counter(text: &str, port: u16, key: &str) -> u64 {
    let at = text.rfind(&format!("NIC statistics for port {port:<2} ")).unwrap_or_else(|| panic!("{text}"));
    let block = &text[at..];
    let v = &block[block.find(key).unwrap_or_else(|| panic!("{key} in {block}")) + key.len()..];
    v.split_whitespace().next().unwrap().parse().unwrap()
}

/// `tx_pcap=/dev/full`: every write fails once the file's buffer is flushed; testpmd-rs's statistics show the 10
/// frames as TX errors, none as sent, and testpmd-rs exits 1 (they were 10 sent, 0 errors, a message at port stop
/// and exit status 0).
#[test]
fn tx_pcap_write_errors_are_tx_errors_in_the_statistics() {
    let dir = TempDir::new("devfull");
    let input = dir.path("in.pcap");
    let sent = frames(7);
    write_pcap(&input, &sent[..10]);
    let v0 = format!("net_pcap0,rx_pcap={input},tx_pcap=/dev/full");
    let mut s = Session::spawn(command(&["--vdev", &v0], &["-i", "--no-flush-rx", "--forward-mode=io"]));
    s.wait_for("testpmd> ", Duration::from_secs(20));
    s.cmd("start");
    wait_fwd(&mut s, "the 10 frames forwarded", |b| b.rx_packets >= 10);
    s.cmd("stop");
    let stats = s.cmd("show port stats 0");
    assert_eq!(port_counter(&stats, 0, "RX-packets:"), 10, "{stats}");
    assert_eq!(port_counter(&stats, 0, "TX-errors:"), 10, "{stats}");
    assert_eq!(port_counter(&stats, 0, "TX-packets:"), 0, "{stats}");
    s.send("quit");
    let (status, out) = s.finish();
    assert_pool_full(&out);
    // The port's last flush at quit fails too: said, and the exit status is not 0.
    assert!(out.contains("Fail to stop port 0") && out.contains("/dev/full"), "{out}");
    assert_eq!(status.code(), Some(1), "{out}");
}
