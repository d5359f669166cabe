//! The forwarding loop: each lcore polls its RX queues ("units") and sends every burst through the paired port's
//! TX queue of the same number, rewriting MAC addresses on the way when asked. One dynamic call per burst each way,
//! no allocation, no lock. With telemetry on, each unit's queues also have live-capture taps
//! ([`pktio::capture::QueueTap`]) checked once per burst each way; without, the loop is a separate
//! monomorphisation that checks nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mempool::PacketBatch;
use pkthdr::EthernetFrame;
use pktio::capture::QueueTap;
use pktio::stats::Counter;
use pktio::{MacAddr, RxQueue, TxQueue};

/// Packets per RX burst (DPDK's MAX_PKT_BURST).
pub const MAX_PKT_BURST: usize = 32;

/// Counters of one unit, written by its lcore only, read by the statistics screen.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct UnitCounters {
    /// Packets received.
    pub rx: Counter,
    /// Packets sent.
    pub tx: Counter,
    /// Packets the TX queue did not take (freed).
    pub dropped: Counter,
}

/// One RX queue and the TX queue its packets leave by.
pub struct Unit {
    /// RX port.
    pub rx_port: u16,
    /// RX queue on it.
    pub rx_queue: u16,
    /// TX port (the partner of the RX port).
    pub tx_port: u16,
    /// The RX queue.
    pub rx: Box<dyn RxQueue>,
    /// TX queue `rx_queue` of `tx_port`.
    pub tx: Box<dyn TxQueue>,
    /// Destination then source MAC written into each frame (02:00:00:00:00:TX_PORT, then the TX port's MAC).
    pub eth_addrs: [u8; 12],
    /// Counters.
    pub counters: Arc<UnitCounters>,
    /// Live-capture taps of the RX and TX queue (detached until [`Unit::tapped`]).
    rx_tap: QueueTap,
    tx_tap: QueueTap,
    tapped: bool,
}

impl Unit {
    /// A unit; `tx_mac` is the TX port's MAC address.
    pub fn new(
        rx_port: u16,
        rx_queue: u16,
        tx_port: u16,
        rx: Box<dyn RxQueue>,
        tx: Box<dyn TxQueue>,
        tx_mac: MacAddr,
    ) -> Unit {
        Unit {
            rx_port,
            rx_queue,
            tx_port,
            rx,
            tx,
            eth_addrs: eth_addrs(tx_port, tx_mac),
            counters: Arc::default(),
            rx_tap: QueueTap::detached(),
            tx_tap: QueueTap::detached(),
            tapped: false,
        }
    }

    /// The unit with its queues tapped for live capture (`/pktio/capture`, pktio-dumpcap).
    pub fn tapped(mut self) -> Unit {
        self.rx_tap = QueueTap::rx(self.rx_port);
        self.tx_tap = QueueTap::tx(self.tx_port);
        self.tapped = true;
        self
    }
}

/// l2fwd's rewrite for packets leaving by `tx_port`: destination 02:00:00:00:00:TX_PORT (the low byte of the port
/// id, as DPDK writes it), source the port's MAC.
pub fn eth_addrs(tx_port: u16, tx_mac: MacAddr) -> [u8; 12] {
    let mut a = [0u8; 12];
    a[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, tx_port as u8]);
    a[6..].copy_from_slice(&tx_mac.0);
    a
}

/// One burst of one unit; `TAP`: shown to the capture taps (every RX burst, empty ones too, so that a stopping
/// capture is let go of promptly).
#[inline(always)]
fn burst<const MAC_UPDATING: bool, const TAP: bool>(u: &mut Unit, b: &mut PacketBatch) {
    let n = u.rx.rx_burst(b);
    if TAP {
        u.rx_tap.observe(b.as_slice());
    }
    if n == 0 {
        return;
    }
    u.counters.rx.add(n as u64);
    if MAC_UPDATING {
        let addrs = &u.eth_addrs;
        for m in b.iter_mut() {
            if let Ok(mut eth) = EthernetFrame::new_checked(m.data_mut()) {
                eth.set_addrs(addrs);
            }
        }
    }
    if TAP {
        u.tx_tap.observe(b.as_slice());
    }
    let sent = u.tx.tx_burst(b);
    u.counters.tx.add(sent as u64);
    if !b.is_empty() {
        u.counters.dropped.add(b.len() as u64);
        b.clear();
    }
}

#[inline(never)]
fn run<const MAC_UPDATING: bool, const TAP: bool>(units: &mut [Unit], stop: &AtomicBool, mut tick: impl FnMut()) {
    let mut b = PacketBatch::with_capacity(MAX_PKT_BURST);
    while !stop.load(Ordering::Relaxed) {
        for u in units.iter_mut() {
            burst::<MAC_UPDATING, TAP>(u, &mut b);
        }
        tick();
    }
}

/// What one lcore does until `stop`: poll `units`, calling `tick` after each round (the main lcore prints the
/// statistics from it). Returns the units (and so the queues).
pub fn lcore_main(mut units: Vec<Unit>, mac_updating: bool, stop: Arc<AtomicBool>, tick: impl FnMut()) -> Vec<Unit> {
    match (mac_updating, units.iter().any(|u| u.tapped)) {
        (true, true) => run::<true, true>(&mut units, &stop, tick),
        (true, false) => run::<true, false>(&mut units, &stop, tick),
        (false, true) => run::<false, true>(&mut units, &stop, tick),
        (false, false) => run::<false, false>(&mut units, &stop, tick),
    }
    units
}
