//! Port and queue counters with DPDK's names.

use std::sync::atomic::{AtomicU64, Ordering};

/// A counter with one writer (the thread owning a queue) and any number of readers. Updating it is a plain load
/// and store, no locked instruction: the hot path pays nothing for the control plane being able to read it.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`. Only the owning thread may call this (two writers would lose counts, never corrupt memory).
    #[inline(always)]
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }

    /// Current value.
    #[inline(always)]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counters of one RX queue.
#[derive(Debug, Default)]
pub struct RxQueueStats {
    /// Packets received.
    pub packets: Counter,
    /// Bytes received.
    pub bytes: Counter,
    /// Packets received with errors (and dropped).
    pub errors: Counter,
    /// Packets dropped because the ring was full (or the device had no room).
    pub missed: Counter,
    /// Buffer allocation failures while refilling.
    pub nombuf: Counter,
}

/// Counters of one TX queue.
#[derive(Debug, Default)]
pub struct TxQueueStats {
    /// Packets sent.
    pub packets: Counter,
    /// Bytes sent.
    pub bytes: Counter,
    /// Packets that failed to send (and were dropped by the driver).
    pub errors: Counter,
}

/// Port counters as `rte_eth_stats` names them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Packets received.
    pub ipackets: u64,
    /// Packets sent.
    pub opackets: u64,
    /// Bytes received.
    pub ibytes: u64,
    /// Bytes sent.
    pub obytes: u64,
    /// Packets dropped by the device for lack of RX room.
    pub imissed: u64,
    /// Erroneous packets received.
    pub ierrors: u64,
    /// Failed transmissions.
    pub oerrors: u64,
    /// RX buffer allocation failures.
    pub rx_nombuf: u64,
    /// Packets received per queue.
    pub q_ipackets: Vec<u64>,
    /// Packets sent per queue.
    pub q_opackets: Vec<u64>,
    /// Bytes received per queue.
    pub q_ibytes: Vec<u64>,
    /// Bytes sent per queue.
    pub q_obytes: Vec<u64>,
    /// Errors per RX queue.
    pub q_errors: Vec<u64>,
}

impl PortStats {
    /// Sums queue counters into port counters.
    pub fn from_queues<'a>(
        rx: impl IntoIterator<Item = &'a RxQueueStats>,
        tx: impl IntoIterator<Item = &'a TxQueueStats>,
    ) -> PortStats {
        let mut s = PortStats::default();
        for q in rx {
            s.q_ipackets.push(q.packets.get());
            s.q_ibytes.push(q.bytes.get());
            s.q_errors.push(q.errors.get());
            s.ipackets += q.packets.get();
            s.ibytes += q.bytes.get();
            s.ierrors += q.errors.get();
            s.imissed += q.missed.get();
            s.rx_nombuf += q.nombuf.get();
        }
        for q in tx {
            s.q_opackets.push(q.packets.get());
            s.q_obytes.push(q.bytes.get());
            s.opackets += q.packets.get();
            s.obytes += q.bytes.get();
            s.oerrors += q.errors.get();
        }
        s
    }

    /// `self - base`, counter by counter (a reset is a new base, since queue threads own the live counters).
    pub fn since(&self, base: &PortStats) -> PortStats {
        fn sub(a: &[u64], b: &[u64]) -> Vec<u64> {
            a.iter().enumerate().map(|(i, v)| v.saturating_sub(b.get(i).copied().unwrap_or(0))).collect()
        }
        PortStats {
            ipackets: self.ipackets.saturating_sub(base.ipackets),
            opackets: self.opackets.saturating_sub(base.opackets),
            ibytes: self.ibytes.saturating_sub(base.ibytes),
            obytes: self.obytes.saturating_sub(base.obytes),
            imissed: self.imissed.saturating_sub(base.imissed),
            ierrors: self.ierrors.saturating_sub(base.ierrors),
            oerrors: self.oerrors.saturating_sub(base.oerrors),
            rx_nombuf: self.rx_nombuf.saturating_sub(base.rx_nombuf),
            q_ipackets: sub(&self.q_ipackets, &base.q_ipackets),
            q_opackets: sub(&self.q_opackets, &base.q_opackets),
            q_ibytes: sub(&self.q_ibytes, &base.q_ibytes),
            q_obytes: sub(&self.q_obytes, &base.q_obytes),
            q_errors: sub(&self.q_errors, &base.q_errors),
        }
    }

    /// The generic extended statistics every port has, with DPDK's names (rx_good_packets, rx_q0_packets, ...).
    pub fn generic_xstats(&self) -> Vec<XStat> {
        let mut out = vec![
            XStat::new("rx_good_packets", self.ipackets),
            XStat::new("tx_good_packets", self.opackets),
            XStat::new("rx_good_bytes", self.ibytes),
            XStat::new("tx_good_bytes", self.obytes),
            XStat::new("rx_missed_errors", self.imissed),
            XStat::new("rx_errors", self.ierrors),
            XStat::new("tx_errors", self.oerrors),
            XStat::new("rx_mbuf_allocation_errors", self.rx_nombuf),
        ];
        for (q, (p, b)) in self.q_ipackets.iter().zip(&self.q_ibytes).enumerate() {
            out.push(XStat::new(format!("rx_q{q}_packets"), *p));
            out.push(XStat::new(format!("rx_q{q}_bytes"), *b));
            out.push(XStat::new(format!("rx_q{q}_errors"), self.q_errors.get(q).copied().unwrap_or(0)));
        }
        for (q, (p, b)) in self.q_opackets.iter().zip(&self.q_obytes).enumerate() {
            out.push(XStat::new(format!("tx_q{q}_packets"), *p));
            out.push(XStat::new(format!("tx_q{q}_bytes"), *b));
        }
        out
    }
}

/// One extended statistic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XStat {
    /// Name, as DPDK's xstats name it where there is an equivalent.
    pub name: String,
    /// Value.
    pub value: u64,
}

impl XStat {
    /// A named value.
    pub fn new(name: impl Into<String>, value: u64) -> Self {
        XStat { name: name.into(), value }
    }
}
