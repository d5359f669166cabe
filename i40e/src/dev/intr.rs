//! Interrupts (docs/hw/i40e.md §14.2), on a port configured with `intr_conf`: vector 0 for link changes
//! (PFINT_ICR0.LINK_STAT_CHANGE), vector k + 1 for RX queue k (QINT_RQCTL to the vector, a one-queue list in
//! PFINT_LNKLSTN, ITR 0 at [`RX_ITR_INTERVAL`]). The vectors come from the port's [`IrqSource`]: VFIO's MSI-X on
//! PCI, the model's eventfds in-process.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::irq::IrqSource;
use pktio::{Error, Result};

use super::I40e;
use crate::regs::*;
use crate::rxtx::{RxIntr, RxRing};

/// The RX queues' ITR 0 interval, in 2 µs units: DPDK's default of 32 µs (docs/hw/i40e.md §14.2).
pub const RX_ITR_INTERVAL: u32 = 16;
/// The ITR the RX causes use.
const RX_ITR: u32 = 0;

impl<R: RegisterSpace> I40e<R> {
    /// Where this port's interrupt vectors are delivered; from then on it offers `intr_conf.rxq` and `.lsc`.
    pub fn set_irq_source(&mut self, source: Arc<dyn IrqSource>) {
        self.irq = Some(source);
        self.state.intr_capa = pktio::IntrConf { rxq: true, lsc: true };
    }

    /// At start, with the RX rings made and not yet enabled: the vectors the configuration asks for.
    pub(super) fn intr_start(&mut self, rx: &mut [Option<RxRing<R>>]) -> Result<()> {
        let conf = self.state.config.intr_conf;
        let Some(source) = self.irq.clone() else { return Ok(()) };
        if !conf.rxq && !conf.lsc {
            return Ok(());
        }
        let want = 1 + if conf.rxq { rx.len() as u32 } else { 0 };
        let has = source.max_vectors().min(self.id.msix);
        if want > has {
            return Err(self.state.invalid(format!(
                "interrupts for {} RX queues need {want} MSI-X vectors (one per queue and vector 0); the PF has {has}",
                rx.len()
            )));
        }
        let vectors = source.enable(want)?;
        if conf.rxq {
            for (k, ring) in rx.iter_mut().enumerate() {
                let Some(ring) = ring.as_mut() else { continue };
                let (q, n) = (ring.queue(), k as u32);
                self.regs.write(pfint_itrn(RX_ITR, n), RX_ITR_INTERVAL);
                self.regs.write(
                    qint_rqctl(q),
                    qint_ctl::MSIX_INDX.val(n + 1)
                        | qint_ctl::ITR_INDX.val(RX_ITR)
                        | qint_ctl::NEXTQ_INDX.val(pfint_lnklst::EOL)
                        | qint_ctl::CAUSE_ENA,
                );
                self.regs.write(
                    pfint_lnklstn(n),
                    pfint_lnklst::FIRSTQ_INDX.val(q.into()) | pfint_lnklst::FIRSTQ_TYPE.val(0),
                );
                ring.set_intr(RxIntr { fd: vectors[k + 1].clone(), dyn_ctl: pfint_dyn_ctln(n) });
            }
        }
        if conf.lsc {
            self.regs.write(PFINT_ICR0_ENA, pfint_icr0::LINK_STAT_CHANGE);
            self.arm_vector0();
        }
        self.vectors = vectors;
        Ok(())
    }

    /// At stop and close: causes off, lists empty, vectors disabled.
    pub(super) fn intr_stop(&mut self) {
        if self.vectors.is_empty() {
            return;
        }
        self.regs.write(PFINT_ICR0_ENA, 0);
        self.regs.write(PFINT_DYN_CTL0, pfint_dyn_ctl::ITR_INDX.val(pfint_dyn_ctl::ITR_NONE));
        for n in 0..self.vectors.len() as u32 - 1 {
            self.regs.write(pfint_dyn_ctln(n), pfint_dyn_ctl::ITR_INDX.val(pfint_dyn_ctl::ITR_NONE));
            self.regs.write(pfint_lnklstn(n), pfint_lnklst::EOL);
            self.regs.write(qint_rqctl(self.vsi.base_queue + n as u16), 0);
        }
        if let Some(source) = &self.irq {
            let _ = source.disable();
        }
        self.vectors.clear();
    }

    fn arm_vector0(&self) {
        let v = pfint_dyn_ctl::INTENA | pfint_dyn_ctl::CLEARPBA | pfint_dyn_ctl::ITR_INDX.val(pfint_dyn_ctl::ITR_NONE);
        self.regs.write(PFINT_DYN_CTL0, v);
    }

    /// The link-change descriptor (vector 0's eventfd) of a started port configured with `intr_conf.lsc`.
    pub(super) fn lsc_fd(&self) -> Result<RawFd> {
        match self.vectors.first() {
            Some(fd) if self.state.config.intr_conf.lsc => Ok(fd.as_raw_fd()),
            _ => Err(Error::NotSupported {
                port: self.name().to_string(),
                driver: "net_i40e",
                what: "link-state-change interrupts: configure intr_conf.lsc and start the port",
            }),
        }
    }

    /// From `link()`: drains vector 0, clears PFINT_ICR0 by reading it, takes the ARQ's link events, re-arms
    /// vector 0; a change after the ARQ was read is latched and signalled at the re-arm.
    pub(super) fn lsc_ack(&self) {
        let Some(fd) = self.vectors.first().filter(|_| self.state.config.intr_conf.lsc) else {
            self.poll_events();
            return;
        };
        let _ = fd.read();
        let _ = self.regs.read(PFINT_ICR0);
        self.poll_events();
        self.arm_vector0();
    }
}
