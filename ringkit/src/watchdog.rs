//! The TX hang watchdog every driver shares, after Linux's ixgbe and i40e (`ixgbe_check_tx_hang`,
//! `i40e_detect_recover_hung`, the netdev TX timeout): a queue is hung when the device has work outstanding and its
//! completion point (the head it fetches from) has not moved for a timeout.
//!
//! Two places look, never the per-packet path: the queue's owner on a burst's slow path (the ring full after
//! cleanup: exactly when a stalled queue costs the application), and the port's control plane when the application
//! reads statistics or the link, or calls the driver's `check_tx_hangs` (as Linux's netdev watchdog timer does), so
//! that a stalled queue whose ring never fills (a few frames, then nothing) is found too. Both read the device's
//! head themselves (a register, or the consumer index the device writes to memory) and feed the same per-queue
//! state ([`TxHangState`]): one packed atomic word holds the completion point seen, since when, and whether that
//! stall was reported, so each stall is counted once whoever sees it first, and neither side takes a lock.
//!
//! What to do about a hang is the queue owner's: [`crate::TxCore`] restarts the queue through the driver's
//! [`TxRestart`] when its slow path finds the queue hung (detected there or by the control plane), as Linux resets
//! a hung ring; the control plane only detects, counts and logs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use pktio::stats::Counter;

use crate::idx;

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

/// The packed stall mark of [`TxHangState`]: the completion point (a ring index, below 2^24), whether a mark is
/// set, whether its stall was reported, and the mark's time in milliseconds since [`epoch`].
mod mark {
    pub const POINT_BITS: u32 = 24;
    pub const POINT: u64 = (1 << POINT_BITS) - 1;
    pub const MARKED: u64 = 1 << POINT_BITS;
    pub const REPORTED: u64 = 1 << (POINT_BITS + 1);
    pub const SINCE_SHIFT: u32 = POINT_BITS + 2;

    pub fn new(point: usize, since_ms: u64) -> u64 {
        (point as u64 & POINT) | MARKED | since_ms << SINCE_SHIFT
    }
}

/// The clock the marks count from (milliseconds fit the packed word for years).
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64
}

/// What the watchdog of one queue found, shared by the queue's owner and the port's control plane.
#[derive(Debug, Default)]
pub struct TxHangState {
    /// Hangs detected (by either side: a read-modify-write, as two threads count here).
    hangs: AtomicU64,
    /// Queue restarts the driver did to recover (the owner's).
    pub restarts: Counter,
    /// Packets the restarts dropped (also counted in the queue's errors; the owner's).
    pub dropped: Counter,
    /// Slots outstanding at the last hang.
    last_pending: AtomicU64,
    /// Its stall, in microseconds.
    last_stall_us: AtomicU64,
    /// The current stall (see [`mark`]); 0 when none is being timed.
    mark: AtomicU64,
}

impl TxHangState {
    /// Hangs detected.
    pub fn hangs(&self) -> u64 {
        self.hangs.load(Ordering::Relaxed)
    }

    /// The last hang of queue `queue`, if there was one.
    pub fn last(&self, queue: u16) -> Option<TxHang> {
        (self.hangs() != 0).then(|| TxHang {
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
        pktio::XStat::new("tx_hangs", sum(|q| q.hangs())),
        pktio::XStat::new("tx_hang_restarts", sum(|q| q.restarts.get())),
        pktio::XStat::new("tx_hang_dropped", sum(|q| q.dropped.get())),
    ]
}

/// The last hang of any of a port's TX queues (the one with the most hangs), with its queue's restart figures.
pub fn worst(queues: &[Arc<TxHangState>]) -> Option<(TxHang, &TxHangState)> {
    let (q, state) = queues.iter().enumerate().filter(|(_, s)| s.hangs() != 0).max_by_key(|(_, s)| s.hangs())?;
    Some((state.last(q as u16)?, state))
}

/// How a queue's owner restarts a hung queue, and reads the device's head for the slow-path check: the driver's
/// registers, called only from [`crate::TxCore`]'s slow path (a full ring), never per packet.
pub trait TxRestart: Send {
    /// The device's head now: the next slot it will fetch (TDH, QTX_HEAD, the consumer index).
    fn head(&mut self) -> usize;
    /// Stops the device reading the ring (the queue disabled), before the core drops what the ring holds.
    fn stop(&mut self);
    /// Starts the queue again at slot 0 (head and tail 0, enabled).
    fn start(&mut self);
}

/// The watchdog of one queue: its name, timeout and the state it reports into. Cheap to clone: the queue's owner
/// and the port's control plane each hold one over the same [`TxHangState`].
#[derive(Debug, Clone)]
pub struct TxWatchdog {
    queue: u16,
    port: Arc<str>,
    timeout: Duration,
    state: Arc<TxHangState>,
}

impl TxWatchdog {
    /// A watchdog for queue `queue` of `port` that calls a stall of `timeout` a hang, reporting into `state`.
    pub fn new(port: &str, queue: u16, timeout: Duration, state: Arc<TxHangState>) -> Self {
        TxWatchdog { queue, port: port.into(), timeout, state }
    }

    /// What this watchdog reports into.
    pub fn state(&self) -> &Arc<TxHangState> {
        &self.state
    }

    /// One look at a ring of `size` slots whose device is at `head` with the driver's tail at `tail`: the slots
    /// between them are outstanding (see [`TxWatchdog::stalled`]).
    #[cold]
    #[inline(never)]
    pub fn look(&self, head: usize, tail: usize, size: usize) -> Option<TxHang> {
        if head >= size || tail >= size {
            // A register read of a device gone away (all ones), or a queue being set up: nothing to time.
            return self.stalled(0, 0);
        }
        self.stalled(head, idx::dist(head, tail, size))
    }

    /// The check: `progress` is the device's completion point (an index that moves whenever the device finishes
    /// work), `pending` the slots it has not completed. Returns the hang once, to whichever caller first finds the
    /// point unmoved for longer than the timeout with work pending (counted, logged); moving again (or nothing
    /// pending) ends the stall. Millisecond resolution.
    #[cold]
    #[inline(never)]
    pub fn stalled(&self, progress: usize, pending: usize) -> Option<TxHang> {
        let now = now_ms();
        let timeout_ms = self.timeout.as_nanos().div_ceil(1_000_000) as u64;
        let point = progress as u64 & mark::POINT;
        let word = &self.state.mark;
        let mut m = word.load(Ordering::Acquire);
        loop {
            let same = m & mark::MARKED != 0 && m & mark::POINT == point && pending != 0;
            let next = if same {
                let stalled_ms = now.saturating_sub(m >> mark::SINCE_SHIFT);
                // Strictly more: the mark's time is rounded down, so the stall is at least the timeout.
                if m & mark::REPORTED != 0 || stalled_ms <= timeout_ms {
                    return None;
                }
                m | mark::REPORTED
            } else if pending != 0 {
                mark::new(progress, now)
            } else {
                0
            };
            if next == m {
                return None;
            }
            match word.compare_exchange_weak(m, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) if same => break,
                Ok(_) => return None,
                Err(seen) => m = seen,
            }
        }
        let stalled_for = Duration::from_millis(now.saturating_sub(m >> mark::SINCE_SHIFT));
        let hang = TxHang { queue: self.queue, pending: pending as u64, stalled_for };
        self.state.last_pending.store(hang.pending, Ordering::Relaxed);
        self.state.last_stall_us.store(stalled_for.as_micros() as u64, Ordering::Relaxed);
        self.state.hangs.fetch_add(1, Ordering::Relaxed);
        eprintln!("{}: {hang}", self.port);
        Some(hang)
    }

    /// The completion point of a stall already reported as a hang and not ended since (no later look saw it
    /// move): the owner restarts a queue whose device is still there, and may skip waiting for it to drain.
    pub fn reported_at(&self) -> Option<usize> {
        let m = self.state.mark.load(Ordering::Acquire);
        (m & mark::REPORTED != 0).then_some((m & mark::POINT) as usize)
    }

    /// Forgets the current stall (after the driver restarted the queue: its indexes start again).
    pub fn reset(&self) {
        self.state.mark.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_with_work_pending_is_reported_once_after_the_timeout_and_progress_ends_it() {
        let state = Arc::new(TxHangState::default());
        let w = TxWatchdog::new("t", 3, Duration::from_millis(30), state.clone());
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
        assert_eq!(state.hangs(), 1);
        assert_eq!(state.last(3).map(|h| h.pending), Some(10));
        // Progress, or nothing pending, starts over.
        assert_eq!(w.stalled(6, 10), None);
        assert_eq!(w.reported_at(), None, "it moved: the stall ended");
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(w.stalled(7, 10), None, "it moved: no hang");
        assert_eq!(w.stalled(7, 0), None);
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(w.stalled(7, 0), None, "nothing pending is no hang");
        assert_eq!(state.hangs(), 1);
    }
    #[test]
    fn the_owner_and_the_control_plane_count_one_stall_once_and_look_reads_head_and_tail() {
        let state = Arc::new(TxHangState::default());
        let owner = TxWatchdog::new("t", 1, Duration::from_millis(20), state.clone());
        let control = owner.clone();
        assert_eq!(control.look(4, 4, 128), None, "head at the tail: nothing outstanding");
        assert_eq!(control.look(4, 14, 128), None, "marks");
        let deadline = Instant::now() + Duration::from_secs(5);
        let hang = loop {
            if let Some(h) = control.look(4, 14, 128) {
                break h;
            }
            assert!(Instant::now() < deadline, "never reported");
            std::thread::sleep(Duration::from_millis(2));
        };
        assert_eq!((hang.queue, hang.pending), (1, 10));
        assert!(hang.stalled_for >= Duration::from_millis(20), "{hang}");
        // The owner's slow path sees the same stall (a wrapped tail too): already reported, so not counted again,
        // and it knows where the device stood.
        assert_eq!(owner.look(4, 3, 128), None);
        assert_eq!(owner.reported_at(), Some(4));
        assert_eq!(state.hangs(), 1);
        assert_eq!(control.look(u32::MAX as usize, 14, 128), None, "a bad head read is no stall");
        assert_eq!(owner.reported_at(), None);
        owner.reset();
        assert_eq!(state.hangs(), 1);
    }
}
