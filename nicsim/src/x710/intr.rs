//! Interrupt messages of one PF (docs/hw/i40e.md §14.1). Vector 0 carries the PFINT_ICR0 causes its
//! PFINT_ICR0_ENA enables (the admin queue, link changes); vectors 1.. carry the queue causes that QINT_RQCTL /
//! QINT_TQCTL route to them. A vector signals only while its PFINT_DYN_CTL0/N.INTENA is 1 and clears INTENA when it
//! does, so the driver re-enables it after servicing; a cause that comes while the vector is disabled waits and is
//! signalled when INTENA is set again. Not modelled: interrupt throttling (ITR, RATE: messages go at once) and the
//! queue linked lists (the vector comes from the queue's MSIX_INDX).

use super::regs::*;
use super::{Core, X710State};

/// Per-vector state the registers do not show.
#[derive(Debug, Clone, Default)]
pub(super) struct Intr {
    /// A cause is waiting for INTENA (vector 0's own causes are PFINT_ICR0 & PFINT_ICR0_ENA).
    pending: Vec<bool>,
    /// Messages signalled so far per vector.
    pub(super) sent: Vec<u64>,
}

impl Intr {
    pub(super) fn new(vectors: usize) -> Intr {
        Intr { pending: vec![false; vectors.max(1)], sent: vec![0; vectors.max(1)] }
    }

    pub(super) fn reset(&mut self) {
        self.pending.iter_mut().for_each(|p| *p = false);
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
        self.intr.pending[vector] = true;
        self.try_signal(shared, vector);
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
        // The vector disables itself until the driver has serviced it and sets INTENA again.
        self.set_reg(dyn_ctl(vector), ctl & !DYN_CTL_INTENA.mask());
        self.intr.pending[vector] = false;
        self.intr.sent[vector] += 1;
        shared.io.signal(vector as u16);
    }
}
