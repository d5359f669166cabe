//! The two modes that do not forward: `rxonly` receives, counts and frees every frame of a capture and sends
//! nothing; `flowgen` sends UDP/IPv4 frames cycling over `--flowgen-flows` destination addresses. Both are checked
//! through pcap ports: what the input capture held and what the output capture holds, parsed here.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use swports::pcap_file::{read_all, PcapWriter};

/// Frames of assorted sizes and kinds (IPv4 and not), each with its index in its payload.
fn assorted_frames(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let len = [60, 61, 128, 600, 1514][i % 5];
            let mut f: Vec<u8> = (0..len).map(|k| (k as u8).wrapping_mul(13).wrapping_add(i as u8)).collect();
            f[0..6].copy_from_slice(&[0x02, 0x10, 0, 0, 0, i as u8]);
            f[6..12].copy_from_slice(&[0x02, 0x20, 0, 0, 0, i as u8]);
            f[12..14].copy_from_slice(if i % 3 == 0 { &[0x08, 0x06] } else { &[0x08, 0x00] });
            f
        })
        .collect()
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

#[test]
fn rxonly_counts_and_frees_every_frame_and_sends_nothing() {
    let dir = TempDir::new("rxonly");
    let (input, output) = (dir.path("in.pcap"), dir.path("out.pcap"));
    let frames = assorted_frames(77);
    write_pcap(&input, &frames);
    let v0 = format!("net_pcap0,rx_pcap={input},tx_pcap={output}");
    let mut s = Session::spawn(command(&["--vdev", &v0], &["-i", "--no-flush-rx", "--forward-mode=rxonly"]));
    s.wait_for("testpmd> ", Duration::from_secs(20));
    let started = s.cmd("start");
    assert!(started.contains("rxonly"), "start should name the mode:\n{started}");
    let want = frames.len() as u64;
    wait_fwd(&mut s, "every frame of the capture received", |b| b.rx_packets >= want);
    let stop = s.cmd("stop");
    let total = fwd_total_block(&stop).unwrap_or_else(|| panic!("no accumulated statistics:\n{stop}"));
    assert_eq!(total.rx_packets, want, "RX = frames in the capture:\n{stop}");
    assert_eq!((total.tx_packets, total.tx_dropped), (0, 0), "rxonly sends nothing:\n{stop}");
    let port = fwd_port_block(&stop, 0).unwrap_or_else(|| panic!("no port 0 statistics:\n{stop}"));
    assert_eq!((port.rx_packets, port.tx_packets), (want, 0), "{stop}");
    let nic = s.cmd("show port stats 0");
    assert_eq!(nic_stats(&nic, 0), Some((want, 0)), "the port itself saw {want} in and nothing out:\n{nic}");
    s.send("quit");
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    // Every received mbuf went back to the pool.
    assert_pool_full(&out);
    assert!(read_frames(&output).is_empty(), "rxonly wrote frames to the TX capture");
}

/// (RX, TX, TX-dropped) of the per-stream block of RX queue `q` of port 0 in `text`.
fn stream_counts(text: &str, q: u16) -> Option<(u64, u64, u64)> {
    let header = format!("Forward Stats for RX Port= 0/Queue={q:2} ->");
    let line = text[text.rfind(&header)?..].lines().nth(1)?;
    let field =
        |name: &str| -> Option<u64> { line[line.find(name)? + name.len()..].split_whitespace().next()?.parse().ok() };
    Some((field("RX-packets:")?, field("TX-packets:")?, field("TX-dropped:")?))
}

#[test]
fn rxonly_counts_per_stream_over_two_queues() {
    // One capture per RX queue: each stream's own counter must show exactly its file.
    let dir = TempDir::new("rxonly2");
    let (in0, in1, out0, out1) =
        (dir.path("in0.pcap"), dir.path("in1.pcap"), dir.path("out0.pcap"), dir.path("out1.pcap"));
    let (f0, f1) = (assorted_frames(41), assorted_frames(23));
    write_pcap(&in0, &f0);
    write_pcap(&in1, &f1);
    let v0 = format!("net_pcap0,rx_pcap={in0},rx_pcap={in1},tx_pcap={out0},tx_pcap={out1}");
    let mut s = Session::spawn(command(
        &["--vdev", &v0],
        &["-i", "--no-flush-rx", "--forward-mode=rxonly", "--rxq=2", "--txq=2"],
    ));
    s.wait_for("testpmd> ", Duration::from_secs(20));
    s.cmd("start");
    let want = (f0.len() + f1.len()) as u64;
    wait_fwd(&mut s, "both captures received", |b| b.rx_packets >= want);
    let stop = s.cmd("stop");
    assert_eq!(fwd_total_block(&stop).map(|b| (b.rx_packets, b.tx_packets)), Some((want, 0)), "{stop}");
    assert_eq!(stream_counts(&stop, 0), Some((f0.len() as u64, 0, 0)), "stream of queue 0:\n{stop}");
    assert_eq!(stream_counts(&stop, 1), Some((f1.len() as u64, 0, 0)), "stream of queue 1:\n{stop}");
    s.send("quit");
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    assert_pool_full(&out);
    assert!(read_frames(&out0).is_empty() && read_frames(&out1).is_empty(), "rxonly wrote frames");
}

/// testpmd's flowgen addresses and ports (its documented defaults).
const SRC_MAC: [u8; 6] = [0, 1, 2, 3, 4, 0];
const DST_MAC: [u8; 6] = [0, 1, 2, 3, 4, 1];
const SRC_IP: [u8; 4] = [10, 254, 0, 0];
const DST_IP_BASE: u32 = u32::from_be_bytes([10, 253, 0, 0]);
const UDP_SRC: u16 = 1000;
const UDP_DST: u16 = 1001;

/// The one's complement of the one's complement sum of 16-bit words (RFC 1071): 0 over a header whose checksum
/// field is right.
fn internet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[test]
fn flowgen_cycles_udp_flows_with_valid_ipv4_checksums() {
    const FLOWS: u32 = 24;
    let dir = TempDir::new("flowgen");
    let output = dir.path("out.pcap");
    let v0 = format!("net_pcap0,tx_pcap={output}");
    let flows = format!("--flowgen-flows={FLOWS}");
    let mut s = Session::spawn(command(&["--vdev", &v0], &["-i", "--forward-mode=flowgen", &flows, "--burst=8"]));
    s.wait_for("testpmd> ", Duration::from_secs(20));
    s.cmd("start");
    // Several rounds over the flows, so wrapping back to flow 0 is seen.
    wait_fwd(&mut s, "flowgen sending", |b| b.tx_packets >= 3 * FLOWS as u64);
    let stop = s.cmd("stop");
    s.send("quit");
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    assert_pool_full(&out);
    let total = fwd_total_block(&stop).unwrap();
    let got = read_frames(&output);
    assert_eq!(got.len() as u64, total.tx_packets, "the capture holds every frame counted as sent:\n{stop}");
    assert!(got.len() >= 3 * FLOWS as usize);

    let mut dsts = BTreeSet::new();
    for (i, f) in got.iter().enumerate() {
        // Default --txpkts=64 less the 4-byte FCS.
        assert_eq!(f.len(), 60, "frame {i} length");
        assert_eq!(f[0..6], DST_MAC, "frame {i} Ethernet destination");
        assert_eq!(f[6..12], SRC_MAC, "frame {i} Ethernet source");
        assert_eq!(f[12..14], [0x08, 0x00], "frame {i} EtherType IPv4");
        let ip = &f[14..34];
        assert_eq!(ip[0], 0x45, "frame {i}: IPv4 without options");
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 46, "frame {i} IPv4 total length");
        assert_eq!(ip[9], 17, "frame {i} protocol UDP");
        assert_eq!(internet_checksum(ip), 0, "frame {i}: IPv4 header checksum {:#06x} is wrong", {
            u16::from_be_bytes([ip[10], ip[11]])
        });
        assert_eq!(ip[12..16], SRC_IP, "frame {i} IPv4 source");
        let dst = u32::from_be_bytes(ip[16..20].try_into().unwrap());
        // Flows are taken in turn: frame i belongs to flow i mod FLOWS.
        assert_eq!(dst - DST_IP_BASE, i as u32 % FLOWS, "frame {i} destination {:?}", &ip[16..20]);
        dsts.insert(dst);
        let udp = &f[34..42];
        assert_eq!(u16::from_be_bytes([udp[0], udp[1]]), UDP_SRC, "frame {i} UDP source port");
        assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), UDP_DST, "frame {i} UDP destination port");
        assert_eq!(u16::from_be_bytes([udp[4], udp[5]]), 26, "frame {i} UDP length");
    }
    assert_eq!(dsts.len(), FLOWS as usize, "distinct flows in the capture");
    assert_eq!(dsts.first(), Some(&DST_IP_BASE));
    assert_eq!(dsts.last(), Some(&(DST_IP_BASE + FLOWS - 1)));
}
