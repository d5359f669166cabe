//! Interrupts of the X540/82599 model (docs/hw/ixgbe.md §12, §12.1): causes (EICR, EICS, EICS_EX), masks (EIMS,
//! EIMC and their _EX forms), auto-clear (EIAC) and auto-mask (EIAM with GPIE.EIAME), the queue-to-vector map
//! (IVAR, IVAR_MISC) and throttling (EITR).
//!
//! Messages leave through an [`IrqSink`] (for a guest: the eventfds a vfio-user client handed over). In MSI-X mode
//! (GPIE.MSIX_MODE) each vector is signalled on its own; otherwise vector 0 stands for MSI or INTx, asserted while
//! any unmasked cause is set. A vector is signalled when its pending-and-unmasked state rises (MSI-X is an edge),
//! at most once per EITR interval: a rise inside the interval waits for the interval's end.

use std::time::{Duration, Instant};

use super::regs::*;
use super::{Core, X540State};

/// Vectors (64 MSI-X vectors, docs/hw/ixgbe.md §1).
const VECTORS: usize = 64;
/// EICR/EIMS bits 15:0: the per-vector queue causes; 31:16: the other causes.
const QUEUE_BITS: u32 = 0xFFFF;
/// EITR's interval unit (docs/hw/ixgbe.md §12).
const EITR_UNIT: Duration = Duration::from_nanos(2048);

/// Interrupt state beyond the plain registers.
#[derive(Debug, Clone)]
pub(super) struct Intr {
    /// Queue causes per vector (EICR 15:0 are vectors 0..15; EICS_EX reach the rest).
    cause: u64,
    /// Queue vector masks (EIMS 15:0, EIMS_EX(0), EIMS_EX(1)).
    mask: u64,
    /// Vectors whose pending-and-unmasked state was high at the last evaluation (signalled, or waiting for EITR).
    asserted: u64,
    /// When each vector was last signalled.
    last: [Option<Instant>; VECTORS],
    /// Messages signalled per vector (never cleared; for tests).
    pub(super) sent: [u64; VECTORS],
}

impl Default for Intr {
    fn default() -> Self {
        Intr { cause: 0, mask: 0, asserted: 0, last: [None; VECTORS], sent: [0; VECTORS] }
    }
}

impl Intr {
    /// Back to the reset state, keeping the message counts.
    pub(super) fn reset(&mut self) {
        let sent = self.sent;
        *self = Intr { sent, ..Intr::default() };
    }
}

impl Core {
    fn msix_mode(&self) -> bool {
        self.reg(GPIE) & GPIE_MSIX_MODE != 0
    }

    /// EICR as software reads it: the other causes and the queue causes of vectors 0..15.
    pub(super) fn eicr_value(&self) -> u32 {
        (self.reg(EICR) & !QUEUE_BITS) | (self.intr.cause as u32 & QUEUE_BITS)
    }

    /// EIMS as software reads it.
    pub(super) fn eims_value(&self) -> u32 {
        (self.reg(EIMS) & !QUEUE_BITS) | (self.intr.mask as u32 & QUEUE_BITS)
    }

    /// Reading EICR returns the causes and clears them all (docs/hw/ixgbe.md §12.1).
    pub(super) fn read_eicr(&mut self, shared: &X540State) -> u32 {
        let v = self.eicr_value();
        self.set_reg(EICR, 0);
        self.intr.cause &= !u64::from(QUEUE_BITS);
        self.evaluate_irq(shared, Instant::now());
        v
    }

    /// The interrupt registers' writes; false if `offset` is none of them.
    pub(super) fn write_intr(&mut self, shared: &X540State, offset: usize, value: u32) -> bool {
        let low = u64::from(value & QUEUE_BITS);
        match offset {
            EICR => {
                let v = self.reg(EICR) & !value;
                self.set_reg(EICR, v);
                self.intr.cause &= !low;
            }
            EICS => {
                let v = self.reg(EICR) | (value & !QUEUE_BITS);
                self.set_reg(EICR, v);
                self.intr.cause |= low;
            }
            EIMS => {
                let v = self.reg(EIMS) | (value & !QUEUE_BITS);
                self.set_reg(EIMS, v);
                self.intr.mask |= low;
            }
            EIMC => {
                let v = self.reg(EIMS) & !(value & !QUEUE_BITS);
                self.set_reg(EIMS, v);
                self.intr.mask &= !low;
            }
            _ => {
                let Some((i, which)) = ex_reg(offset) else { return false };
                let bits = u64::from(value) << (32 * i);
                match which {
                    Ex::Cause => self.intr.cause |= bits,
                    Ex::Set => self.intr.mask |= bits,
                    Ex::Clear => self.intr.mask &= !bits,
                    Ex::AutoMask => {
                        self.set_reg(offset, value);
                        return true;
                    }
                }
            }
        }
        self.evaluate_irq(shared, Instant::now());
        true
    }

    /// Reads of the _EX registers (EIMS_EX reads the mask; the write-only ones read 0); None for other offsets.
    pub(super) fn read_intr_ex(&self, offset: usize) -> Option<u32> {
        let (i, which) = ex_reg(offset)?;
        Some(match which {
            Ex::Set => (self.intr.mask >> (32 * i)) as u32,
            Ex::AutoMask => self.reg(offset),
            Ex::Cause | Ex::Clear => 0,
        })
    }

    /// A queue event (a received frame written back, a transmit descriptor completed): sets the cause of the
    /// vector IVAR maps the queue to, if the entry is valid (docs/hw/ixgbe.md §12).
    pub(super) fn queue_cause(&mut self, shared: &X540State, rx: bool, q: usize) {
        let shift = 16 * (q & 1) + if rx { 0 } else { 8 };
        let entry = (self.reg(ivar(q >> 1)) >> shift) & 0xFF;
        if entry & IVAR_VALID == 0 {
            return;
        }
        // In MSI-X mode the entry names a vector; otherwise one of EICR's 16 queue bits.
        let bit = if self.msix_mode() { entry & 0x3F } else { entry & 0x0F };
        self.intr.cause |= 1 << bit;
        self.evaluate_irq(shared, Instant::now());
    }

    /// Signals every vector whose pending-and-unmasked state rose and whose EITR interval has passed; applies
    /// auto-clear and auto-mask to each vector signalled.
    pub(super) fn evaluate_irq(&mut self, shared: &X540State, now: Instant) {
        let other = self.reg(EICR) & self.reg(EIMS) & !QUEUE_BITS != 0;
        let want: u64 = if self.msix_mode() {
            let misc = (self.reg(IVAR_MISC) >> 8) & 0xFF;
            let other_vec = if other && misc & IVAR_VALID != 0 { 1u64 << (misc & 0x3F) } else { 0 };
            (self.intr.cause & self.intr.mask) | other_vec
        } else {
            u64::from(other || self.intr.cause & self.intr.mask & u64::from(QUEUE_BITS) != 0)
        };
        let rising = want & !self.intr.asserted;
        // A vector no longer pending re-arms: its next rise is a new message.
        self.intr.asserted &= want;
        if rising == 0 {
            return;
        }
        let sink = shared.io.irq_sink();
        for v in (0..VECTORS).filter(|v| rising & (1 << v) != 0) {
            let interval = EITR_UNIT * ((self.reg(eitr(v)) >> EITR_INTERVAL_SHIFT) & EITR_INTERVAL_MASK);
            if self.intr.last[v].is_some_and(|t| now < t + interval) {
                continue; // throttled: stays pending, signalled by a later evaluation
            }
            self.intr.asserted |= 1 << v;
            self.intr.last[v] = Some(now);
            self.intr.sent[v] += 1;
            if let Some(sink) = &sink {
                sink(v as u16);
            }
            if self.msix_mode() {
                self.auto_clear_and_mask(v);
            }
        }
    }

    /// EIAC clears a signalled vector's queue cause (vectors 16..63 always, having no EIAC bit); with
    /// GPIE.EIAME, EIAM/EIAM_EX mask the vector (docs/hw/ixgbe.md §12.1).
    fn auto_clear_and_mask(&mut self, v: usize) {
        let bit = 1u64 << v;
        if v >= 16 || self.reg(EIAC) & (1 << v) != 0 {
            self.intr.cause &= !bit;
            self.intr.asserted &= !bit;
        }
        if self.reg(GPIE) & GPIE_EIAME != 0 {
            // EIAM's queue bits and EIAM_EX(0) name the same vectors 0..15.
            let legacy = v < 16 && self.reg(EIAM) & (1 << v) != 0;
            let eiam = legacy || self.reg(eiam_ex(v / 32)) & (1 << (v % 32)) != 0;
            if eiam {
                self.intr.mask &= !bit;
                self.intr.asserted &= !bit;
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ex {
    Cause,
    Set,
    Clear,
    AutoMask,
}

fn ex_reg(offset: usize) -> Option<(usize, Ex)> {
    (0..2).find_map(|i| {
        [(eics_ex(i), Ex::Cause), (eims_ex(i), Ex::Set), (eimc_ex(i), Ex::Clear), (eiam_ex(i), Ex::AutoMask)]
            .into_iter()
            .find(|&(o, _)| o == offset)
            .map(|(_, w)| (i, w))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use crate::model::IrqSink;

    use super::*;
    use crate::{X540Config, X540};
    use drvkit::bar::RegisterSpace;

    fn sink() -> (IrqSink, Arc<Mutex<Vec<u16>>>) {
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        (Arc::new(move |v| g.lock().unwrap().push(v)), got)
    }

    #[test]
    fn msix_vectors_follow_ivar_eiac_and_eims_ex() {
        let (bar, port) = X540::new(X540Config::default());
        let (s, got) = sink();
        port.set_irq_sink(Some(s));
        bar.write32(GPIE, GPIE_MSIX_MODE | GPIE_EIAME);
        // RX queue 1 → vector 3 (byte at bit 16 of IVAR(0)); other causes → vector 5.
        bar.write32(ivar(0), (IVAR_VALID | 3) << 16);
        bar.write32(IVAR_MISC, (IVAR_VALID | 5) << 8);
        bar.write32(EIAC, 1 << 3);
        // Masked: a cause alone signals nothing.
        bar.write32(eics_ex(0), 1 << 3);
        assert!(got.lock().unwrap().is_empty());
        assert_eq!(bar.read32(EICS) & (1 << 3), 1 << 3, "EICS reads the pending cause without clearing it");
        bar.write32(eims_ex(0), 1 << 3);
        assert_eq!(*got.lock().unwrap(), vec![3], "unmasking a pending vector signals it");
        assert_eq!(bar.read32(EICR) & (1 << 3), 0, "EIAC auto-cleared the cause");
        // A new cause on the still-unmasked vector signals again.
        bar.write32(EICS, 1 << 3);
        assert_eq!(*got.lock().unwrap(), vec![3, 3]);
        // An LSC (other cause) goes to vector 5 once EIMS unmasks it; it stays until software clears it.
        bar.write32(EICS, EICR_LSC);
        bar.write32(EIMS, EICR_LSC);
        assert_eq!(*got.lock().unwrap(), vec![3, 3, 5]);
        bar.write32(EICS, EICR_LSC);
        assert_eq!(got.lock().unwrap().len(), 3, "still pending: no new edge");
        bar.write32(EICR, EICR_LSC);
        bar.write32(EICS, EICR_LSC);
        assert_eq!(*got.lock().unwrap(), vec![3, 3, 5, 5]);
        assert_eq!(port.irq_counts()[3], 2);
    }

    #[test]
    fn eiam_masks_the_vector_it_signalled() {
        let (bar, port) = X540::new(X540Config::default());
        let (s, got) = sink();
        port.set_irq_sink(Some(s));
        bar.write32(GPIE, GPIE_MSIX_MODE | GPIE_EIAME);
        bar.write32(EIAC, 1 << 2);
        bar.write32(EIAM, 1 << 2);
        bar.write32(EIMS, 1 << 2);
        bar.write32(EICS, 1 << 2);
        assert_eq!(*got.lock().unwrap(), vec![2]);
        assert_eq!(bar.read32(EIMS) & (1 << 2), 0, "auto-masked");
        bar.write32(EICS, 1 << 2);
        assert_eq!(got.lock().unwrap().len(), 1, "masked until software unmasks");
        bar.write32(EIMS, 1 << 2);
        assert_eq!(got.lock().unwrap().len(), 2);
    }

    #[test]
    fn eitr_holds_a_second_message_until_the_interval_passes() {
        let (bar, port) = X540::new(X540Config::default());
        let (s, got) = sink();
        port.set_irq_sink(Some(s));
        bar.write32(GPIE, GPIE_MSIX_MODE);
        bar.write32(EIAC, 1);
        // 0x1FF units of 2.048 µs: about 1 ms.
        bar.write32(eitr(0), EITR_INTERVAL_MASK << EITR_INTERVAL_SHIFT);
        bar.write32(EIMS, 1);
        bar.write32(EICS, 1);
        bar.write32(EICS, 1);
        assert_eq!(got.lock().unwrap().len(), 1, "the second cause waits for the interval");
        let deadline = Instant::now() + Duration::from_secs(5);
        while got.lock().unwrap().len() < 2 {
            assert!(Instant::now() < deadline, "throttled vector never signalled");
            port.step();
            std::thread::yield_now();
        }
    }

    #[test]
    fn msi_mode_signals_vector_0_while_any_unmasked_cause_is_set() {
        let (bar, port) = X540::new(X540Config::default());
        let (s, got) = sink();
        port.set_irq_sink(Some(s));
        bar.write32(ivar(0), IVAR_VALID | 1); // RX queue 0 → EICR bit 1
        bar.write32(EIMS, 1 << 1);
        port.inject(&[0xff; 60]);
        bar.write32(EICS, 1 << 1);
        assert_eq!(*got.lock().unwrap(), vec![0]);
        assert_eq!(bar.read32(EICR) & (1 << 1), 1 << 1, "EICR read returns the cause");
        assert_eq!(bar.read32(EICR) & (1 << 1), 0, "and clears it");
        bar.write32(EICS, 1 << 1);
        assert_eq!(*got.lock().unwrap(), vec![0, 0]);
    }
}
