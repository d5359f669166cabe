//! The TX path each queue runs, chosen from the port's TX offloads (`ringkit::TxPath`, hinic3's own WQE walk):
//! without offloads the plain path, which ignores the offload flags (DPDK's simple TX), so the frames leave as
//! compact WQEs byte for byte as given; with the checksum offloads the full path, whose extended WQEs carry the task
//! section on which the SP670 model computes both checksums. Each burst has groups of four, packets one at a time
//! and a chain (always the extended WQE).

mod common;

use common::*;
use nicsim::Sp670Config;
use pktio::TypedQueues;
use pktio::{offload, EthDev, PortConfig, TxQueue};
use ringkit::TxPath;

/// Sends nine checksum-prepared frames and a chain with `tx_offloads`; returns the path the port reported, the
/// frames on the wire and what was sent.
fn send(tx_offloads: u64) -> (&'static str, Vec<Vec<u8>>, testkit::ChecksumBatch) {
    let pool = pool("tx-path", 1023);
    let mut port = open_one(Sp670Config::default());
    port.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, tx_offloads, ..Default::default() }).unwrap();
    port.dev.start(&pool).unwrap();
    wait_for(5, "link up", || port.dev.link().up);
    port.model.unwire();
    let mode = port.dev.burst_mode().tx;
    let mac = port.dev.mac_addr().0;
    let mut frames = testkit::checksum_batch(&pool, [2, 0, 0, 0, 0, 9], mac, 9);
    let chain = udp_frame([2, 0, 0, 0, 0, 9], mac, ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 300);
    let mut m = mbuf_from(&pool, &chain[..100]);
    m.chain(mbuf_from(&pool, &chain[100..]));
    frames.batch.push(m).unwrap();
    frames.prepared.push(chain.clone());
    frames.done.push(chain);
    let mut tx = port.dev.tx_queue_typed(0).unwrap();
    assert_eq!(tx.tx_burst(&mut frames.batch), 10);
    let mut out = Vec::new();
    wait_for(5, "every frame on the wire", || {
        out.extend(port.model.take_tx());
        out.len() >= 10
    });
    drop(tx);
    port.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers held", pool.in_use());
    close(port);
    (mode, out, frames)
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
