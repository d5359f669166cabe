//! l3fwd-power's sleeping (DPDK's `l3fwd-power` sample, its interrupt part): an lcore polls while its queues are
//! busy and, once idle, arms every RX queue's interrupt and sleeps in `poll(2)` on their descriptors until a
//! frame arrives, then disarms them and polls again. Interrupts are off while busy, so the forwarding rate under
//! load is the polling one.
//!
//! The queues' descriptors are [`pktio::RxQueue::wait_fd`]: a PCI port's RX-queue interrupt (the port configured
//! with `intr_conf.rxq`), or a software port's own descriptor. A frame that arrives between the last empty round and
//! the sleep still wakes it: the driver's `intr_enable` sees to that on an interrupt, a software port's descriptor
//! is readable while a frame waits.

use std::os::fd::RawFd;

use crate::fwd::{LcoreCounters, RxUnit};
use crate::params::PowerMode;

/// Empty rounds before the default mode sleeps: DPDK's l3fwd-power sleeps on the interrupt once an lcore has
/// been idle past its suspend threshold (300); here one round over the queues counts as one.
pub const IDLE_ROUNDS: u32 = 300;
/// Longest sleep before the lcore looks at its stop flag again.
pub const SLEEP_CHECK_MS: i32 = 100;

/// Counts empty rounds and says when to sleep.
#[derive(Debug)]
pub struct Idle {
    threshold: u32,
    empty: u32,
}

impl Idle {
    /// For `mode`.
    pub fn new(mode: PowerMode) -> Idle {
        let threshold = match mode {
            PowerMode::Legacy => IDLE_ROUNDS,
            PowerMode::InterruptOnly => 1,
        };
        Idle { threshold, empty: 0 }
    }

    /// After a round that received `n` packets: true when the lcore should sleep now.
    #[inline(always)]
    pub fn after_round(&mut self, n: usize) -> bool {
        if n > 0 {
            self.empty = 0;
            return false;
        }
        self.empty += 1;
        if self.empty >= self.threshold {
            self.empty = 0;
            return true;
        }
        false
    }
}

/// Arms every queue's interrupt, sleeps until one of their descriptors is readable (or [`SLEEP_CHECK_MS`] pass),
/// and disarms them. A queue that cannot be armed (checked at start-up, so only a device failure) leaves the lcore
/// polling: it does not sleep.
pub fn sleep_until_rx(units: &mut [RxUnit], counters: &LcoreCounters) {
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(units.len());
    let mut armed = 0;
    for u in units.iter_mut() {
        let Some(fd) = u.rx.wait_fd() else { break };
        if u.rx.intr_enable().is_err() {
            break;
        }
        armed += 1;
        fds.push(pollfd(fd));
    }
    if armed == units.len() && !fds.is_empty() {
        counters.sleeps.add(1);
        // SAFETY: `fds` is a valid array of `fds.len()` pollfds for the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, SLEEP_CHECK_MS) };
        if n > 0 {
            counters.wakeups.add(1);
        }
    }
    for u in units.iter_mut().take(armed) {
        let _ = u.rx.intr_disable();
    }
}

fn pollfd(fd: RawFd) -> libc::pollfd {
    libc::pollfd { fd, events: libc::POLLIN, revents: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_mode_sleeps_after_an_idle_spell_interrupt_only_at_once() {
        let mut legacy = Idle::new(PowerMode::Legacy);
        assert!((1..IDLE_ROUNDS).all(|_| !legacy.after_round(0)));
        assert!(legacy.after_round(0), "the spell is over");
        assert!(!legacy.after_round(0), "counting again");
        assert!(!legacy.after_round(5));
        let mut at_once = Idle::new(PowerMode::InterruptOnly);
        assert!(!at_once.after_round(1));
        assert!(at_once.after_round(0));
    }
}
