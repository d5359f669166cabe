//! Side by side with Debian's dpdk-testpmd 22.11: the same pcap input through io, mac, macswap and csum in both
//! programs, and the captures they write compared frame by frame, byte for byte.
//!
//! Both get the same peers (`--eth-peer`), so the destination MAC of mac and csum does not depend on defaults.
//! The source MAC those modes write is the TX port's own address: each capture must carry its own program's port
//! MAC there (as printed at start-up), and every other byte must be equal. Once net_pcap ports take DPDK's MACs
//! (02:70:63:61:70:0N) the two addresses are the same and the frames equal in full; the test says which held.
//!
//! Needs `dpdk-testpmd` (apt-get install dpdk). Without it the test says so and passes, unless
//! DPDK_TESTS_REQUIRED=1 (set by scripts/test.sh, whose setup installs the package), where it fails.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use swports::pcap_file::{read_all, PcapWriter};

fn dpdk_testpmd() -> Option<&'static str> {
    let found = Command::new("dpdk-testpmd").arg("--version").output().is_ok();
    let stdbuf = Command::new("stdbuf").arg("--version").output().is_ok();
    let why = "needs dpdk-testpmd and stdbuf (apt-get install dpdk coreutils)";
    testkit::require("DPDK_TESTS_REQUIRED", found && stdbuf, why).then_some("dpdk-testpmd")
}

fn sum16(data: &[u8]) -> u32 {
    data.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32).sum()
}

fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// IPv4 frames, UDP (17) or TCP (6), with correct checksums; then some wrong ones and UDP without a checksum.
fn frames(seed: u8) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for i in 0..30u8 {
        let id = seed.wrapping_add(i);
        let len = [60, 64, 128, 333, 1000, 1514][i as usize % 6];
        let proto = if i % 3 == 0 { 6 } else { 17 };
        let mut f = vec![0u8; len];
        f[0..6].copy_from_slice(&[0x02, 0xaa, 0, 0, 0, id]);
        f[6..12].copy_from_slice(&[0x02, 0xbb, 0, 0, 0, id]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        f[18..20].copy_from_slice(&(id as u16).to_be_bytes());
        f[22] = 64;
        f[23] = proto;
        f[26..30].copy_from_slice(&[10, 0, 0, id]);
        f[30..34].copy_from_slice(&[10, 0, 1, id]);
        f[34..36].copy_from_slice(&(1000 + id as u16).to_be_bytes());
        f[36..38].copy_from_slice(&2000u16.to_be_bytes());
        let at = if proto == 17 {
            f[38..40].copy_from_slice(&((len - 34) as u16).to_be_bytes());
            40
        } else {
            f[46] = 0x50;
            f[47] = 0x10;
            50
        };
        for (k, b) in f[at + 4..].iter_mut().enumerate() {
            *b = (k as u8).wrapping_mul(7).wrapping_add(id);
        }
        let c = fold(sum16(&f[14..34]));
        f[24..26].copy_from_slice(&c.to_be_bytes());
        let l4_len = (len - 34) as u32;
        let c = fold(sum16(&f[26..34]) + proto as u32 + l4_len + sum16(&f[34..]));
        f[at..at + 2].copy_from_slice(&c.to_be_bytes());
        match i % 5 {
            1 => f[25] ^= 0x5a,                    // wrong IPv4 header checksum
            2 => f[at] ^= 0x33,                    // wrong L4 checksum
            3 if proto == 17 => f[40..42].fill(0), // UDP without a checksum
            _ => {}
        }
        v.push(f);
    }
    // An ARP request: not IP, forwarded with only the Ethernet header touched.
    let mut arp = vec![0u8; 60];
    arp[0..6].fill(0xff);
    arp[6..12].copy_from_slice(&[0x02, 0xcc, 0, 0, 0, seed]);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    arp[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    v.push(arp);
    v
}

fn write_pcap(path: &str, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::create(path).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(1_700_000_000_000_000_000 + i as u64 * 1000, f).unwrap();
    }
    w.flush().unwrap();
}

struct Out {
    frames: [Vec<Vec<u8>>; 2],
    macs: [[u8; 6]; 2],
}

/// Runs one program (`cmd` set up with its EAL arguments) in `mode` until it has received every input frame.
fn run(mut cmd: Command, dir: &TempDir, tag: &str, mode: &str, want: u64) -> Out {
    let (o0, o1) = (dir.path(&format!("{tag}-out0.pcap")), dir.path(&format!("{tag}-out1.pcap")));
    let (i0, i1) = (dir.path("in0.pcap"), dir.path("in1.pcap"));
    cmd.args(["--vdev", &format!("net_pcap0,rx_pcap={i0},tx_pcap={o0}")]);
    cmd.args(["--vdev", &format!("net_pcap1,rx_pcap={i1},tx_pcap={o1}")]);
    cmd.args(["--", "-i", "--no-flush-rx", "--total-num-mbufs=8192", &format!("--forward-mode={mode}")]);
    cmd.args(["--eth-peer=0,02:00:00:00:0a:00", "--eth-peer=1,02:00:00:00:0a:01"]);
    let mut s = Session::spawn(cmd);
    let boot = s.wait_for("testpmd> ", Duration::from_secs(60));
    let mac = |port: u16| -> [u8; 6] {
        let line = boot.lines().find(|l| l.starts_with(&format!("Port {port}: "))).unwrap_or_else(|| panic!("{boot}"));
        line[8..].trim().parse::<pktio::MacAddr>().unwrap().0
    };
    let macs = [mac(0), mac(1)];
    s.cmd("start");
    let seen = wait_fwd(&mut s, &format!("{tag}: every input frame received"), |b| b.rx_packets >= want);
    assert_eq!(seen.rx_packets, want, "{tag}");
    s.cmd("stop");
    s.send("quit");
    let (status, out) = s.finish();
    assert!(status.success(), "{tag}:\n{out}");
    let read =
        |p: &str| read_all(p).unwrap_or_else(|e| panic!("{tag}: {p}: {e}")).into_iter().map(|r| r.data).collect();
    Out { frames: [read(&o0), read(&o1)], macs }
}

fn compare(mode: &str) {
    let Some(dpdk) = dpdk_testpmd() else { return };
    let dir = TempDir::new(&format!("dpdk-{mode}"));
    let (in0, in1) = (frames(1), frames(100));
    write_pcap(&dir.path("in0.pcap"), &in0);
    write_pcap(&dir.path("in1.pcap"), &in1);
    let want = (in0.len() + in1.len()) as u64;

    let mut d = Command::new("stdbuf");
    let prefix = format!("testpmd-rs-cmp-{}-{mode}", std::process::id());
    d.args(["-oL", "-eL", dpdk, "-l", "0,1", "--no-huge", "-m", "512", "--no-pci", "--file-prefix", &prefix]);
    let theirs = run(d, &dir, "dpdk", mode, want);
    // DPDK leaves its runtime directory (sockets, config) behind; it is ours to remove.
    let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{prefix}"));
    let mut r = Command::new(BIN);
    r.args(["-l", "0-1", "--no-huge"]);
    let ours = run(r, &dir, "rs", mode, want);

    let rewrites_src = matches!(mode, "mac" | "csum");
    let same_macs = ours.macs == theirs.macs;
    for port in 0..2 {
        let (a, b) = (&ours.frames[port], &theirs.frames[port]);
        assert_eq!(a.len(), b.len(), "{mode}: frames written on port {port}");
        assert_eq!(a.len(), [in1.len(), in0.len()][port], "{mode}: port {port} sends what the other received");
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            if rewrites_src && !same_macs {
                assert_eq!(x[6..12], ours.macs[port], "{mode}: port {port} frame {i}: our source MAC");
                assert_eq!(y[6..12], theirs.macs[port], "{mode}: port {port} frame {i}: DPDK's source MAC");
                assert_eq!(x[..6], y[..6], "{mode}: port {port} frame {i}: destination");
                assert_eq!(x[12..], y[12..], "{mode}: port {port} frame {i}: after the MACs");
            } else {
                assert_eq!(x, y, "{mode}: port {port} frame {i}");
            }
        }
    }
    eprintln!(
        "{mode}: {} frames equal to dpdk-testpmd's{}",
        want,
        if rewrites_src && !same_macs { " (source MACs: each program's own port address)" } else { " in full" }
    );
}

#[test]
fn io_writes_what_dpdk_testpmd_writes() {
    compare("io");
}

#[test]
fn mac_writes_what_dpdk_testpmd_writes() {
    compare("mac");
}

#[test]
fn macswap_writes_what_dpdk_testpmd_writes() {
    compare("macswap");
}

#[test]
fn csum_writes_what_dpdk_testpmd_writes() {
    compare("csum");
}
