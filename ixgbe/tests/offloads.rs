//! Checksum offload flags (RX) and insertion (TX). Jumbo frames as chains both ways are in the conformance suite
//! (conformance.rs).
mod common;

use common::*;
use mempool::{ol_flags, PacketBatch};
use nicsim::X540Config;
use pktio::TypedQueues;
use pktio::{EthDev, PortConfig, RxQueue, TxQueue};

use testkit::{bytes, mbuf_from};

#[test]
fn rx_checksum_flags_good_and_bad() {
    let (mut dev, port) = single(X540Config::default());
    let pool = pool(1024, 2048);
    start(&mut dev, &PortConfig { rx_desc: 128, tx_desc: 64, ..Default::default() }, &pool);
    let mac = dev.mac_addr().0;
    let mut rx = dev.rx_queue_typed(0).unwrap();
    let ips = ([10, 1, 1, 1], [10, 1, 1, 2]);
    let good_udp = udp_frame(mac, [2, 0, 0, 0, 0, 1], ips, (5, 6), 100);
    let good_tcp = tcp_frame(mac, [2, 0, 0, 0, 0, 1], ips, (5, 6), 100);
    let mut bad_ip = good_udp.clone();
    bad_ip[24] ^= 0x55;
    let mut bad_l4 = good_tcp.clone();
    bad_l4[60] ^= 0x55; // payload byte: TCP checksum no longer matches
    let cases = [
        (&good_udp, ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD),
        (&good_tcp, ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD),
        (&bad_ip, ol_flags::RX_IP_CKSUM_BAD),
        (&bad_l4, ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_BAD),
    ];
    let mask =
        ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_IP_CKSUM_BAD | ol_flags::RX_L4_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_BAD;
    for (frame, want) in cases {
        port.inject(frame);
        port.step();
        let mut b = PacketBatch::new();
        assert_eq!(rx.rx_burst(&mut b), 1);
        let m = b.pop().unwrap();
        let got = m.ol_flags() & mask;
        // A bad IPv4 header checksum may or may not come with an L4 verdict; the IP verdict must be right.
        if want == ol_flags::RX_IP_CKSUM_BAD {
            assert_eq!(got & (ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_IP_CKSUM_BAD), want);
        } else {
            assert_eq!(got, want, "flags {:#x}", m.ol_flags());
        }
    }
    drop(rx);
    dev.stop().unwrap();
    assert!(pool.is_full());
    port.assert_no_faults();
}

/// A port configured with TX checksum offload runs the full TX path: the flags are honoured, the model computes
/// both checksums.
#[test]
fn tx_checksum_offload_inserts_ip_and_l4_checksums() {
    let (mut dev, port) = single(X540Config::default());
    let pool = pool(1024, 2048);
    let tx_offloads = pktio::offload::TX_CKSUM;
    start(&mut dev, &PortConfig { rx_desc: 64, tx_desc: 128, tx_offloads, ..Default::default() }, &pool);
    assert_eq!(dev.burst_mode().tx, ringkit::TxPath::Full.name());
    let mut tx = dev.tx_queue_typed(0).unwrap();
    let testkit::ChecksumBatch { batch: mut b, done: want, .. } =
        testkit::checksum_batch(&pool, [2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1], 9);
    assert_eq!(tx.tx_burst(&mut b), 9);
    port.step();
    assert_eq!(port.take_tx(), want);
    drop(tx);
    dev.stop().unwrap();
    assert!(pool.is_full());
    port.assert_no_faults();
}

/// A port configured without TX offloads runs the plain TX path, which ignores the offload flags as DPDK's
/// simple TX does: the same packets leave byte for byte as given (checksums not done), in groups of four and one
/// at a time, and a chain still takes the general path.
#[test]
fn a_port_without_tx_offloads_runs_the_plain_path_and_ignores_offload_flags() {
    let (mut dev, port) = single(X540Config::default());
    let pool = pool(1024, 2048);
    let config = PortConfig { rx_desc: 64, tx_desc: 128, ..Default::default() };
    assert_eq!(dev.burst_mode().tx, ringkit::TxPath::Plain.name(), "what the configuration would choose");
    start(&mut dev, &config, &pool);
    assert_eq!(dev.burst_mode().tx, ringkit::TxPath::Plain.name());
    let mut tx = dev.tx_queue_typed(0).unwrap();
    let testkit::ChecksumBatch { batch: mut b, prepared: mut want, .. } =
        testkit::checksum_batch(&pool, [2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1], 9);
    let chain_frame: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
    let mut chain = mbuf_from(&pool, &chain_frame[..100]);
    chain.chain(mbuf_from(&pool, &chain_frame[100..]));
    b.push(chain).unwrap();
    want.push(chain_frame);
    assert_eq!(tx.tx_burst(&mut b), 10);
    port.step();
    assert_eq!(port.take_tx(), want);
    drop(tx);
    dev.stop().unwrap();
    assert!(pool.is_full());
    port.assert_no_faults();
}

/// The 82599's UDP zero-checksum errata (docs/hw/ixgbe.md §7.2, §15): the model flags TCPE/L4E on a UDP frame whose
/// checksum field is 0; the driver reports that frame's L4 checksum as unknown (neither good nor bad) on the 82599
/// only, while a wrong non-zero UDP checksum stays bad. One frame at a time and then in mixed bursts (the fast
/// path's flag memo and its groups of four must keep the two apart).
#[test]
fn udp_zero_checksum_errata_on_the_82599_only() {
    let mask =
        ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_IP_CKSUM_BAD | ol_flags::RX_L4_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_BAD;
    let good_all = ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD;
    let bad_l4 = ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_BAD;
    for (config, zero_flags) in [
        (X540Config { panic_on_fault: true, ..X540Config::x82599() }, ol_flags::RX_IP_CKSUM_GOOD),
        (X540Config { panic_on_fault: true, ..X540Config::default() }, good_all),
    ] {
        let chip = config.chip;
        let (mut dev, port) = single(config);
        let pool = pool(1024, 2048);
        start(&mut dev, &PortConfig { rx_desc: 128, tx_desc: 64, ..Default::default() }, &pool);
        wait_for("link up", std::time::Duration::from_secs(2), || dev.link().up);
        let mac = dev.mac_addr().0;
        let mut rx = dev.rx_queue_typed(0).unwrap();
        let good = udp_frame(mac, [2, 0, 0, 0, 0, 1], ([10, 1, 1, 1], [10, 1, 1, 2]), (5, 6), 100);
        assert_ne!(good[40..42], [0, 0]);
        let mut zero = good.clone();
        zero[40..42].copy_from_slice(&[0, 0]); // UDP checksum field 0: "no checksum"
        let mut wrong = good.clone();
        wrong[60] ^= 0x55; // payload byte: the non-zero checksum no longer matches
        let (z, w, g) = ((&zero, zero_flags), (&wrong, bad_l4), (&good, good_all));
        let one_by_one = [g, z, w, z, z, w, g, z];
        let mixed: Vec<_> = [z, z, z, z, w, w, w, w, z, z, z, z, g, g, g, g, z, w, z, w, z, z, z, z].to_vec();
        for burst in [one_by_one.iter().map(|&c| vec![c]).collect::<Vec<_>>(), vec![mixed]].concat() {
            for (frame, _) in &burst {
                assert!(port.inject(frame));
            }
            port.step();
            let mut b = PacketBatch::new();
            assert_eq!(rx.rx_burst(&mut b), burst.len());
            for (i, ((frame, want), m)) in burst.iter().zip(b.iter()).enumerate() {
                assert_eq!(bytes(m), **frame);
                assert_eq!(m.ol_flags() & mask, *want, "{chip:?} frame {i} of {}: {:#x}", burst.len(), m.ol_flags());
            }
        }
        drop(rx);
        dev.stop().unwrap();
        assert!(pool.is_full());
        port.assert_no_faults();
    }
}
