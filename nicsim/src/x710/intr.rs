//! Interrupt messages of one PF (docs/hw/i40e.md §14.1). Vector 0 carries the PFINT_ICR0 causes its
//! PFINT_ICR0_ENA enables (the admin queue, link changes); vectors 1.. carry the queue causes that QINT_RQCTL /
//! QINT_TQCTL route to them. A vector signals only while its PFINT_DYN_CTL0/N.INTENA is 1 and clears INTENA when it
//! does, so the driver re-enables it after servicing; a cause that comes while the vector is disabled waits and is
//! signalled when INTENA is set again.
//!
//! A queue's cause reaches its vector only through the vector's queue list (PFINT_LNKLST0/N, then each queue's
//! NEXTQ_INDX/NEXTQ_TYPE, docs/hw/i40e.md §14.2): a queue off its vector's list signals nothing, and the model records
//! a fault, since that is a driver's mistake. The cause's ITR (QINT ITR_INDX, PFINT_ITR0/N, 2 µs units) throttles the
//! vector: it signals again no sooner than that interval after its last message; the waiting cause goes out when the
//! model next runs after the interval. Not modelled: PFINT_RATEN, WB_ON_ITR, SW_ITR_INDX.

use std::time::{Duration, Instant};

use super::regs::*;
use super::{Core, X710State};

/// Per-vector state the registers do not show.
#[derive(Debug, Clone, Default)]
pub(super) struct Intr {
    /// A cause is waiting for INTENA (vector 0's own causes are PFINT_ICR0 & PFINT_ICR0_ENA).
    pending: Vec<bool>,
    /// Messages signalled so far per vector.
    pub(super) sent: Vec<u64>,
    /// The earliest time each vector may signal again (its last message plus the ITR interval of the cause).
    hold_until: Vec<Option<Instant>>,
    /// The ITR index of the cause that waits on each vector (3: none).
    pending_itr: Vec<u32>,
}

/// One unit of PFINT_ITR0/N.INTERVAL (docs/hw/i40e.md §14).
pub const ITR_UNIT: Duration = Duration::from_micros(2);

impl Intr {
    pub(super) fn new(vectors: usize) -> Intr {
        let n = vectors.max(1);
        Intr { pending: vec![false; n], sent: vec![0; n], hold_until: vec![None; n], pending_itr: vec![3; n] }
    }

    pub(super) fn reset(&mut self) {
        self.pending.iter_mut().for_each(|p| *p = false);
        self.hold_until.iter_mut().for_each(|h| *h = None);
    }
}

fn lnklst(vector: usize) -> usize {
    if vector == 0 {
        PFINT_LNKLST0
    } else {
        pfint_lnklstn(vector - 1)
    }
}

fn itr(i: u32, vector: usize) -> usize {
    if vector == 0 {
        pfint_itr0(i as usize)
    } else {
        pfint_itrn(i as usize, vector - 1)
    }
}

fn dyn_ctl(vector: usize) -> usize {
    if vector == 0 {
        PFINT_DYN_CTL0
    } else {
        pfint_dyn_ctln(vector - 1)
    }
}

impl Core {
    /// Latches a vector 0 cause in PFINT_ICR0 and signals it if enabled.
    pub(super) fn raise_icr0(&mut self, shared: &X710State, cause: Field) {
        let icr = self.reg(PFINT_ICR0) | cause.mask();
        self.set_reg(PFINT_ICR0, icr);
        self.try_signal(shared, 0);
    }

    /// A queue finished work the driver asked to hear about (an RX write-back, a TX RS write-back).
    pub(super) fn queue_cause(&mut self, shared: &X710State, q: usize, rx: bool) {
        let ctl = self.reg(if rx { qint_rqctl(q) } else { qint_tqctl(q) });
        if !QINT_CAUSE_ENA.is_set(ctl) {
            return;
        }
        let vector = QINT_MSIX_INDX.get(ctl) as usize;
        if vector >= self.intr.pending.len() {
            shared.fault(format!(
                "QINT_{}CTL({q}).MSIX_INDX = {vector}: this PF has {} MSI-X vectors (docs/hw/i40e.md §14)",
                if rx { "RQ" } else { "TQ" },
                self.intr.pending.len()
            ));
            return;
        }
        if !self.on_list(vector, q, rx) {
            shared.fault(format!(
                "QINT_{}CTL({q}) routes the cause to vector {vector}, but queue {q} is not on that vector's list \
                 (PFINT_LNKLST{}, NEXTQ_INDX; docs/hw/i40e.md §14.2): no interrupt",
                if rx { "RQ" } else { "TQ" },
                if vector == 0 { "0".to_string() } else { format!("N({})", vector - 1) }
            ));
            return;
        }
        self.intr.pending[vector] = true;
        self.intr.pending_itr[vector] = self.intr.pending_itr[vector].min(QINT_ITR_INDX.get(ctl));
        self.try_signal(shared, vector);
    }

    /// Whether queue `q` (RX or TX) is on `vector`'s list: PFINT_LNKLST0/N, then the queues' NEXTQ links.
    fn on_list(&self, vector: usize, q: usize, rx: bool) -> bool {
        // An empty list (0x7FF) is the value after reset (docs/hw/i40e.md §14.2).
        let head = self.regs.get(&lnklst(vector)).copied().unwrap_or(LNKLST_EOL);
        let (mut at, mut is_rx) = (LNKLST_FIRSTQ_INDX.get(head), LNKLST_FIRSTQ_TYPE.get(head) == 0);
        // A list longer than every queue twice loops: stop there.
        for _ in 0..=2 * self.txq.len() {
            if at == LNKLST_EOL || at as usize >= self.txq.len() {
                return false;
            }
            if at as usize == q && is_rx == rx {
                return true;
            }
            let ctl = self.reg(if is_rx { qint_rqctl(at as usize) } else { qint_tqctl(at as usize) });
            (at, is_rx) = (QINT_NEXTQ_INDX.get(ctl), QINT_NEXTQ_TYPE.get(ctl) == 0);
        }
        false
    }

    /// Signals the vectors whose ITR interval has run out while a cause waited.
    pub(super) fn intr_tick(&mut self, shared: &X710State) {
        for v in 0..self.intr.pending.len() {
            if self.intr.pending[v] && self.intr.hold_until[v].is_some() {
                self.try_signal(shared, v);
            }
        }
    }

    /// PFINT_DYN_CTL0 / PFINT_DYN_CTLN writes: INTENA (unless INTENA_MSK), SWINT_TRIG raises a cause at once.
    pub(super) fn write_dyn_ctl(&mut self, shared: &X710State, vector: usize, value: u32) {
        let old = self.reg(dyn_ctl(vector));
        let mut stored = value & !(DYN_CTL_CLEARPBA.mask() | DYN_CTL_SWINT_TRIG.mask() | DYN_CTL_INTENA_MSK.mask());
        if DYN_CTL_INTENA_MSK.is_set(value) {
            stored = (stored & !DYN_CTL_INTENA.mask()) | (old & DYN_CTL_INTENA.mask());
        }
        self.set_reg(dyn_ctl(vector), stored);
        if DYN_CTL_SWINT_TRIG.is_set(value) {
            self.intr.pending[vector] = true;
        }
        self.try_signal(shared, vector);
    }

    /// PFINT_ICR0_ENA writes: an enabled cause already latched signals now.
    pub(super) fn write_icr0_ena(&mut self, shared: &X710State, value: u32) {
        self.set_reg(PFINT_ICR0_ENA, value);
        self.try_signal(shared, 0);
    }

    /// Which DYN_CTL register `offset` is, as its vector.
    pub(super) fn dyn_ctl_vector(&self, offset: usize) -> Option<usize> {
        if offset == PFINT_DYN_CTL0 {
            return Some(0);
        }
        let n = offset.checked_sub(pfint_dyn_ctln(0))?;
        (n.is_multiple_of(4) && n / 4 + 1 < self.intr.pending.len()).then_some(n / 4 + 1)
    }

    fn try_signal(&mut self, shared: &X710State, vector: usize) {
        let causes = self.intr.pending[vector] || (vector == 0 && self.reg(PFINT_ICR0) & self.reg(PFINT_ICR0_ENA) != 0);
        let ctl = self.reg(dyn_ctl(vector));
        if !causes || !DYN_CTL_INTENA.is_set(ctl) {
            return;
        }
        let now = Instant::now();
        if self.intr.hold_until[vector].is_some_and(|t| now < t) {
            return; // throttled: intr_tick sends it when the interval has passed
        }
        let i = std::mem::replace(&mut self.intr.pending_itr[vector], 3);
        let interval = if i < 3 { ITR_UNIT * ITR_INTERVAL.get(self.reg(itr(i, vector))) } else { Duration::ZERO };
        self.intr.hold_until[vector] = (!interval.is_zero()).then(|| now + interval);
        // The vector disables itself until the driver has serviced it and sets INTENA again.
        self.set_reg(dyn_ctl(vector), ctl & !DYN_CTL_INTENA.mask());
        self.intr.pending[vector] = false;
        self.intr.sent[vector] += 1;
        shared.io.signal(vector as u16);
    }
}
