//! The TX path each queue runs, chosen from the port's TX offloads (`ringkit::TxPath`): without offloads the plain
//! path, which ignores the offload flags (DPDK's simple TX), so the frames leave byte for byte as given; with the
//! checksum offloads the full path, on which the X710 model computes both checksums. Each burst has groups of four,
//! packets one at a time and a chain (always the general path).

mod common;

use common::*;
use nicsim::X710Config;
use pktio::TypedQueues;
use pktio::{offload, EthDev, PortConfig, TxQueue};
use ringkit::TxPath;

/// Sends nine checksum-prepared frames and a chain from port a to port b with `tx_offloads`; returns the path port a
/// reported and whether b got the frames as prepared or with their checksums done.
fn send(tx_offloads: u64) -> (&'static str, Vec<Vec<u8>>, testkit::ChecksumBatch) {
    let pool = pool("tx-path", 1023);
    let (mut a, mut b) = open_pair(X710Config::default());
    for p in [&mut a, &mut b] {
        p.dev.configure(&PortConfig { rx_desc: 256, tx_desc: 256, tx_offloads, ..Default::default() }).unwrap();
        p.dev.start(&pool).unwrap();
    }
    wait_for(5, "links", || a.dev.link().up && b.dev.link().up);
    let mode = a.dev.burst_mode().tx;
    let (src, dst) = (a.dev.mac_addr().0, b.dev.mac_addr().0);
    let mut frames = testkit::checksum_batch(&pool, dst, src, 9);
    let chain = udp_frame(dst, src, ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 300);
    let mut m = mbuf_from(&pool, &chain[..100]);
    m.chain(mbuf_from(&pool, &chain[100..]));
    frames.batch.push(m).unwrap();
    frames.prepared.push(chain.clone());
    frames.done.push(chain);
    let mut tx = a.dev.tx_queue_typed(0).unwrap();
    assert_eq!(tx.tx_burst(&mut frames.batch), 10);
    let mut rx = b.dev.rx_queue_typed(0).unwrap();
    let got: Vec<Vec<u8>> = receive(&mut rx, 10).iter().map(bytes).collect();
    drop((tx, rx));
    a.dev.stop().unwrap();
    b.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers held", pool.in_use());
    close(a);
    close(b);
    (mode, got, frames)
}

#[test]
fn a_port_without_tx_offloads_runs_the_plain_path_and_sends_the_bytes_as_given() {
    let (mode, got, frames) = send(0);
    assert_eq!(mode, TxPath::Plain.name());
    assert_eq!(got, frames.prepared, "offload flags ignored: the frames as given");
}

#[test]
fn a_port_with_tx_checksum_offload_runs_the_full_path_and_the_checksums_are_done() {
    let (mode, got, frames) = send(offload::TX_CKSUM);
    assert_eq!(mode, TxPath::Full.name());
    assert_eq!(got, frames.done, "both checksums computed");
}
