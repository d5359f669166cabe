//! MSI-X vectors of the function (docs/hw/hinic3.md §5.5): the FUNC_MSI_CLR_WR mask, auto-mask and resend-timer
//! operations, the per-vector attributes of COMM 23 CFG_MSIX_CTRL_REG (pending limit, coalescing and resend timers),
//! and the sources that raise a vector: an RQ's CQE write when its context has interrupts on (dword 1: the MSI-X
//! index, bit 31 clear), an AEQ element when AEQ_CTRL_0 says "always" or the last CI write armed it.
//!
//! A vector holds the events it could not signal yet (masked, or waiting for coalescing) and signals them once it
//! is unmasked and the pending limit or the coalescing timer is reached, like an MSI-X pending bit; with auto-mask
//! on it masks itself when it signals. A signalled vector whose resend timer the driver does not clear signals
//! again when the timer runs out while it is unmasked. Timers run in 5 µs units and the pending limit counts
//! 8 events (docs/hw/hinic3.md §5.5); the model looks at them each time it runs, so they are as coarse as its
//! stepping (at most a park of 200 µs). Not modelled: the LLI timer and credit (stored, echoed, unused).

use std::time::{Duration, Instant};

use super::regs::*;
use super::Core;

/// One unit of the coalescing and resend timers (docs/hw/hinic3.md §5.5).
pub const TIMER_UNIT: Duration = Duration::from_micros(5);
/// Events one unit of the pending limit stands for (docs/hw/hinic3.md §5.5).
pub const PENDING_UNIT: u32 = 8;

/// COMM 23 attributes of one vector (docs/hw/hinic3.md §7.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsixAttr {
    /// pending_cnt.
    pub pending_limit: u8,
    /// coalesce_timer_cnt.
    pub coalesce_timer: u8,
    /// resend_timer_cnt.
    pub resend_timer: u8,
    /// lli_timer_cnt (stored only).
    pub lli_timer: u8,
    /// lli_credit_cnt (stored only).
    pub lli_credit: u8,
}

impl Default for MsixAttr {
    /// The values the notes give for a vector nobody configured (the AEQ defaults, docs/hw/hinic3.md §7.3).
    fn default() -> Self {
        MsixAttr { pending_limit: 0, coalesce_timer: 0xFF, resend_timer: 7, lli_timer: 0, lli_credit: 0 }
    }
}

/// One vector's state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Vector {
    pub masked: bool,
    pub auto_mask: bool,
    pub attr: MsixAttr,
    /// Events not signalled yet, and when the first of them came.
    held: u32,
    first_held: Option<Instant>,
    /// When a signalled vector signals again unless the driver clears its resend timer.
    resend_due: Option<Instant>,
    /// Messages sent.
    pub sent: u64,
}

/// The function's vectors and the messages waiting to leave the model lock.
#[derive(Debug, Default)]
pub(crate) struct Msix {
    pub vectors: Vec<Vector>,
    /// Vectors signalled under the lock, sent by the caller once it let go of it.
    pub outbox: Vec<u16>,
}

impl Msix {
    pub fn new(n: usize) -> Msix {
        Msix { vectors: vec![Vector::default(); n], outbox: Vec::new() }
    }

    /// An event for `vector`: held, then signalled if the vector lets it through now.
    pub fn event(&mut self, vector: usize, now: Instant) {
        let Some(v) = self.vectors.get_mut(vector) else { return };
        v.held += 1;
        v.first_held.get_or_insert(now);
        self.try_signal(vector, now);
    }

    /// Signals `vector` if it is unmasked and has held events past the pending limit or the coalescing time, or a
    /// resend that ran out.
    pub fn try_signal(&mut self, vector: usize, now: Instant) {
        let Some(v) = self.vectors.get_mut(vector) else { return };
        if v.masked {
            return;
        }
        let coalesce = TIMER_UNIT * u32::from(v.attr.coalesce_timer);
        let due = v.held > 0
            && (v.attr.pending_limit == 0
                || v.held >= PENDING_UNIT * u32::from(v.attr.pending_limit)
                || v.first_held.is_some_and(|t| now.duration_since(t) >= coalesce));
        let resend = v.resend_due.is_some_and(|t| now >= t);
        if !due && !resend {
            return;
        }
        v.held = 0;
        v.first_held = None;
        v.resend_due = Some(now + TIMER_UNIT * u32::from(v.attr.resend_timer));
        v.masked |= v.auto_mask;
        v.sent += 1;
        self.outbox.push(vector as u16);
    }

    /// Runs the timers of every vector.
    pub fn tick(&mut self, now: Instant) {
        for i in 0..self.vectors.len() {
            let v = &self.vectors[i];
            if !v.masked && (v.held > 0 || v.resend_due.is_some()) {
                self.try_signal(i, now);
            }
        }
    }

    /// FUNC_MSI_CLR_WR (docs/hw/hinic3.md §3.1): the operations of the bits written as 1, in the order clear-resend,
    /// mask, unmask, auto-mask on, auto-mask off.
    pub fn clr_wr(&mut self, vector: usize, v: u32, now: Instant) {
        let Some(vec) = self.vectors.get_mut(vector) else { return };
        if v & MSI_CLR_RESEND != 0 {
            vec.resend_due = None;
        }
        if v & MSI_SET_MASK != 0 {
            vec.masked = true;
        }
        if v & MSI_CLR_MASK != 0 {
            vec.masked = false;
        }
        if v & MSI_SET_AUTO_MASK != 0 {
            vec.auto_mask = true;
        }
        if v & MSI_CLR_AUTO_MASK != 0 {
            vec.auto_mask = false;
        }
        self.try_signal(vector, now);
    }
}

impl Core {
    /// RQ `q` wrote a CQE: its vector gets an event when the context asked for interrupts (docs/hw/hinic3.md §9.2).
    pub(crate) fn rq_event(&mut self, q: usize) {
        if let Some(Some(ctx)) = self.rq_ctx.get(q) {
            if let Some(vector) = ctx.msix {
                self.msix.event(usize::from(vector), Instant::now());
            }
        }
    }

    /// AEQ `q` got an element: its AEQ_CTRL_0 vector gets an event in mode "always", or when armed by the last CI
    /// write (one event per arming) (docs/hw/hinic3.md §5.2).
    pub(crate) fn aeq_event(&mut self, q: usize) {
        let aeq = &mut self.aeqs[q];
        if aeq.ctrl0 & AEQ_CTRL0_INT_ALWAYS == 0 && !std::mem::take(&mut aeq.armed) {
            return;
        }
        let vector = AEQ_CTRL0_MSIX.get(aeq.ctrl0) as usize;
        self.msix.event(vector, Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx(v: usize) -> u32 {
        MSI_CLR_IDX.val(v as u32)
    }

    fn fast(m: &mut Msix, v: usize) {
        m.vectors[v].attr = MsixAttr { pending_limit: 0, coalesce_timer: 0, resend_timer: 7, ..MsixAttr::default() };
    }

    #[test]
    fn a_masked_vector_holds_its_event_and_signals_on_unmask() {
        let mut m = Msix::new(4);
        let now = Instant::now();
        m.clr_wr(2, MSI_SET_MASK | idx(2), now);
        m.event(2, now);
        assert!(m.outbox.is_empty(), "masked: nothing leaves");
        m.clr_wr(2, MSI_CLR_MASK | idx(2), now);
        assert_eq!(m.outbox, vec![2], "the held event goes at unmask");
        assert_eq!(m.vectors[2].sent, 1);
    }

    #[test]
    fn auto_mask_masks_at_the_signal_until_the_driver_unmasks() {
        let mut m = Msix::new(4);
        let now = Instant::now();
        fast(&mut m, 1);
        m.clr_wr(1, MSI_SET_AUTO_MASK | idx(1), now);
        m.event(1, now);
        m.event(1, now);
        assert_eq!(m.outbox, vec![1], "one message, then masked");
        assert!(m.vectors[1].masked);
        m.clr_wr(1, MSI_CLR_RESEND | MSI_CLR_MASK | idx(1), now);
        assert_eq!(m.outbox, vec![1, 1], "the event held while auto-masked goes at unmask");
        m.clr_wr(1, MSI_CLR_AUTO_MASK | MSI_CLR_RESEND | MSI_CLR_MASK | idx(1), now);
        m.event(1, now);
        m.event(1, now);
        assert_eq!(m.outbox.len(), 4, "without auto-mask every event signals");
    }

    #[test]
    fn the_pending_limit_and_the_coalescing_timer_hold_events() {
        let mut m = Msix::new(2);
        let t0 = Instant::now();
        m.vectors[0].attr = MsixAttr { pending_limit: 2, coalesce_timer: 2, resend_timer: 7, ..MsixAttr::default() };
        m.event(0, t0);
        assert!(m.outbox.is_empty(), "one event under a limit of 16 waits for the timer");
        m.tick(t0 + TIMER_UNIT);
        assert!(m.outbox.is_empty(), "the 10 µs coalescing time has not passed");
        m.tick(t0 + TIMER_UNIT * 2);
        assert_eq!(m.outbox, vec![0], "the coalescing timer sends it");
        m.clr_wr(0, MSI_CLR_RESEND | idx(0), t0);
        for _ in 0..16 {
            m.event(0, t0 + TIMER_UNIT * 3);
        }
        assert_eq!(m.outbox, vec![0, 0], "16 events reach the limit at once");
    }

    #[test]
    fn an_uncleared_resend_timer_signals_again() {
        let mut m = Msix::new(2);
        let t0 = Instant::now();
        fast(&mut m, 0);
        m.event(0, t0);
        assert_eq!(m.outbox.len(), 1);
        m.tick(t0 + TIMER_UNIT * 6);
        assert_eq!(m.outbox.len(), 1, "resend timer 7 not run out");
        m.tick(t0 + TIMER_UNIT * 7);
        assert_eq!(m.outbox.len(), 2, "resent");
        m.clr_wr(0, MSI_CLR_RESEND | idx(0), t0 + TIMER_UNIT * 7);
        m.tick(t0 + TIMER_UNIT * 100);
        assert_eq!(m.outbox.len(), 2, "cleared: no more");
    }
}
