//! The TX hang watchdog every driver shares, after Linux's ixgbe and i40e (`ixgbe_check_tx_hang`,
//! `i40e_detect_recover_hung`, the netdev TX timeout): a queue is hung when the device has work outstanding and its
//! completion point has not moved for a timeout. Checked only on a burst's slow path (the ring full after cleanup,
//! so the caller could not place everything), never per packet: a full ring is exactly when a stalled queue costs
//! the application, and a queue the device drains never gets there for long.
//!
//! The queue's owner thread runs the check ([`TxWatchdog::stalled`]); the port's control plane reads what it found
//! through [`TxHangState`] (counters with one writer, the last hang's figures), so neither side takes a lock. What
//! to do about a hang (restart the queue, or leave it to a port restart) is the driver's: [`TxWatchdog::stalled`]
//! reports each hang once, as a typed [`TxHang`], and writes one log line.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pktio::stats::Counter;

/// Linux's netdev TX timeout for ixgbe and i40e (`watchdog_timeo`, 5 s): long enough that a device paused by flow
/// control or a loaded host (a model thread) is not taken for hung, short enough that a queue that sends nothing
/// comes back within seconds.
pub const DEFAULT_TX_HANG_TIMEOUT: Duration = Duration::from_secs(5);

/// One detected hang: which queue, how much the device held, and for how long it had not moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxHang {
    /// Queue index.
    pub queue: u16,
    /// Descriptor slots (or work-queue blocks) the device had not completed.
    pub pending: u64,
    /// How long its completion point had stood still.
    pub stalled_for: Duration,
}

impl std::fmt::Display for TxHang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TX queue {} hung: {} slots outstanding and no completion for {:?}",
            self.queue, self.pending, self.stalled_for
        )
    }
}

/// What the watchdog of one queue found, for the control plane (xstats, a typed error) to read.
#[derive(Debug, Default)]
pub struct TxHangState {
    /// Hangs detected.
    pub hangs: Counter,
    /// Queue restarts the driver did to recover.
    pub restarts: Counter,
    /// Packets the restarts dropped (also counted in the queue's errors).
    pub dropped: Counter,
    /// Slots outstanding at the last hang.
    last_pending: AtomicU64,
    /// Its stall, in microseconds.
    last_stall_us: AtomicU64,
}

impl TxHangState {
    /// The last hang of queue `queue`, if there was one.
    pub fn last(&self, queue: u16) -> Option<TxHang> {
        (self.hangs.get() != 0).then(|| TxHang {
            queue,
            pending: self.last_pending.load(Ordering::Relaxed),
            stalled_for: Duration::from_micros(self.last_stall_us.load(Ordering::Relaxed)),
        })
    }
}

/// The watchdog's extended statistics over a port's TX queues: `tx_hangs` (hangs detected), `tx_hang_restarts`
/// (queue restarts the driver did) and `tx_hang_dropped` (packets those restarts dropped).
pub fn xstats(queues: &[Arc<TxHangState>]) -> [pktio::XStat; 3] {
    let sum = |f: fn(&TxHangState) -> u64| queues.iter().map(|q| f(q)).sum::<u64>();
    [
        pktio::XStat::new("tx_hangs", sum(|q| q.hangs.get())),
        pktio::XStat::new("tx_hang_restarts", sum(|q| q.restarts.get())),
        pktio::XStat::new("tx_hang_dropped", sum(|q| q.dropped.get())),
    ]
}

/// The last hang of any of a port's TX queues (the one with the most hangs), with its queue's restart figures.
pub fn worst(queues: &[Arc<TxHangState>]) -> Option<(TxHang, &TxHangState)> {
    let (q, state) =
        queues.iter().enumerate().filter(|(_, s)| s.hangs.get() != 0).max_by_key(|(_, s)| s.hangs.get())?;
    Some((state.last(q as u16)?, state))
}

/// The per-queue watchdog, owned by the queue.
#[derive(Debug)]
pub struct TxWatchdog {
    queue: u16,
    port: String,
    timeout: Duration,
    /// The completion point at the last look, and since when it has stood there with work outstanding.
    mark: Option<(usize, Instant)>,
    /// This stall was reported already.
    reported: bool,
    state: Arc<TxHangState>,
}

impl TxWatchdog {
    /// A watchdog for queue `queue` of `port` that calls a stall of `timeout` a hang, reporting into `state`.
    pub fn new(port: &str, queue: u16, timeout: Duration, state: Arc<TxHangState>) -> Self {
        TxWatchdog { queue, port: port.to_string(), timeout, mark: None, reported: false, state }
    }

    /// What this watchdog reports into.
    pub fn state(&self) -> &Arc<TxHangState> {
        &self.state
    }

    /// The slow-path check: `progress` is the device's completion point as the driver last saw it (a ring index
    /// that moves whenever the device finishes work), `pending` the slots it has not completed. Returns the hang
    /// once, when the point has not moved for the timeout with work pending; moving again (or nothing pending) ends
    /// the stall.
    #[cold]
    #[inline(never)]
    pub fn stalled(&mut self, progress: usize, pending: usize) -> Option<TxHang> {
        let now = Instant::now();
        match self.mark {
            Some((at, since)) if at == progress && pending != 0 => {
                let stalled_for = now.duration_since(since);
                if self.reported || stalled_for < self.timeout {
                    return None;
                }
                self.reported = true;
                let hang = TxHang { queue: self.queue, pending: pending as u64, stalled_for };
                self.state.last_pending.store(hang.pending, Ordering::Relaxed);
                self.state.last_stall_us.store(stalled_for.as_micros() as u64, Ordering::Relaxed);
                self.state.hangs.add(1);
                eprintln!("{}: {hang}", self.port);
                Some(hang)
            }
            _ => {
                self.mark = (pending != 0).then_some((progress, now));
                self.reported = false;
                None
            }
        }
    }

    /// The completion point of a stall already reported as a hang and not ended since (no later look saw it
    /// move): the driver may compare the device's point with it, e.g. to skip waiting for a hung queue to drain.
    pub fn reported_at(&self) -> Option<usize> {
        self.mark.filter(|_| self.reported).map(|(at, _)| at)
    }

    /// Forgets the current stall (after the driver restarted the queue: its indexes start again).
    pub fn reset(&mut self) {
        self.mark = None;
        self.reported = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_with_work_pending_is_reported_once_after_the_timeout_and_progress_ends_it() {
        let state = Arc::new(TxHangState::default());
        let mut w = TxWatchdog::new("t", 3, Duration::from_millis(30), state.clone());
        assert_eq!(w.stalled(5, 10), None, "the first look only marks");
        assert_eq!(w.stalled(5, 10), None, "not yet the timeout");
        let deadline = Instant::now() + Duration::from_secs(5);
        let hang = loop {
            if let Some(h) = w.stalled(5, 10) {
                break h;
            }
            assert!(Instant::now() < deadline, "never reported");
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!((hang.queue, hang.pending), (3, 10));
        assert!(hang.stalled_for >= Duration::from_millis(30));
        assert_eq!(w.stalled(5, 10), None, "reported once");
        assert_eq!(w.reported_at(), Some(5));
        assert_eq!(state.hangs.get(), 1);
        assert_eq!(state.last(3).map(|h| h.pending), Some(10));
        // Progress, or nothing pending, starts over.
        assert_eq!(w.stalled(6, 10), None);
        assert_eq!(w.reported_at(), None, "it moved: the stall ended");
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(w.stalled(7, 10), None, "it moved: no hang");
        assert_eq!(w.stalled(7, 0), None);
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(w.stalled(7, 0), None, "nothing pending is no hang");
        assert_eq!(state.hangs.get(), 1);
    }
}
