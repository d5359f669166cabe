//! Interrupts (docs/hw/ixgbe.md §12, §12.1), for a port configured with `intr_conf`: MSI-X vectors from the
//! port's [`IrqSource`] (VFIO's MSI-X eventfds on a PCI device, the model's glue in-process), laid out as DPDK's
//! `ixgbe_configure_msix` does: vector 0 for the other causes (LSC), vector 1 + q for RX queue q.
//!
//! Each RX queue's vector auto-clears (EIAC; vectors 16 and up have no EIAC bit) and auto-masks (EIAM_EX with
//! GPIE.EIAME) when it fires, so an armed queue wakes its waiter once and then stays quiet until armed again
//! ([`crate::rxtx::RxRing`]'s `intr_enable`); EITR throttles it at DPDK's default interval. The other-cause vector
//! is neither: LSC stays pending until [`Ixgbe::ack_link_event`] clears it, and its clearing re-arms the vector.

use std::os::fd::AsRawFd;

use drvkit::irq::IrqSource;
use pktio::IntrConf;

use super::*;
use crate::rxtx::RxIntr;

/// The other causes' vector (DPDK's IXGBE_MISC_VEC_ID).
pub(super) const MISC_VECTOR: u16 = 0;
/// RX queue q's vector is this plus q (DPDK's IXGBE_RX_VEC_START).
pub(super) const RX_VECTOR_BASE: u16 = 1;
/// MSI-X vectors of the X540 and 82599 (docs/hw/ixgbe.md §1).
pub(super) const MAX_VECTORS: u32 = 64;

/// A vector's bit in its 32-bit _EX register.
fn ex_bit(v: u16) -> (usize, u32) {
    (usize::from(v / 32), 1 << (v % 32))
}

impl<R: RegisterSpace> Ixgbe<R> {
    /// Gives the port its interrupt vectors: from now on `configure` takes `intr_conf.rxq` and `intr_conf.lsc`.
    pub fn set_irq_source(&mut self, source: Arc<dyn IrqSource>) {
        self.irqs = Some(source);
        self.state.intr_capa = IntrConf { rxq: true, lsc: true };
    }

    /// Vectors `config` needs, checked against what the device has.
    pub(super) fn check_vectors(&self, config: &PortConfig) -> Result<()> {
        let Some(source) = &self.irqs else { return Ok(()) };
        if !config.intr_conf.rxq {
            return Ok(());
        }
        let has = source.max_vectors().min(MAX_VECTORS);
        let need = u32::from(RX_VECTOR_BASE) + u32::from(config.rx_queues);
        if need > has {
            return Err(self.invalid(format!(
                "RX interrupts on {} queues need {need} MSI-X vectors (one for the other causes), the device has {has}; \
                 configure at most {} RX queues with intr_conf.rxq",
                config.rx_queues,
                has.saturating_sub(u32::from(RX_VECTOR_BASE))
            )));
        }
        Ok(())
    }

    /// At start, rings made and queues not yet enabled: routes the vectors to eventfds and programs GPIE, IVAR,
    /// IVAR_MISC, EITR, EIAC and EIAM_EX (docs/hw/ixgbe.md §12); every vector stays masked but LSC (when asked
    /// for) until a queue is armed.
    pub(super) fn setup_interrupts(&mut self) -> Result<()> {
        let conf = self.state.config.intr_conf;
        if conf == IntrConf::default() {
            return Ok(());
        }
        let source = self.irqs.clone().ok_or_else(|| self.state.unsupported("interrupts (no vectors)"))?;
        let rx_vectors = if conf.rxq { self.state.config.rx_queues } else { 0 };
        let vectors =
            source.enable(u32::from(RX_VECTOR_BASE + rx_vectors)).map_err(|e| Error::driver(&self.options.name, e))?;
        self.regs.write(GPIE, gpie::MSIX_MODE | gpie::PBA_SUPPORT | gpie::OCD | gpie::EIAME);
        self.regs.write(IVAR_MISC, (ivar::VALID | u32::from(MISC_VECTOR)) << ivar::MISC_OTHER_SHIFT);
        let itr = eitr::INTERVAL.val(eitr::DEFAULT_US * 1000 / eitr::UNIT_NS);
        let (mut eiac, mut eiam) = (0u32, [0u32; 2]);
        for q in 0..rx_vectors {
            let v = RX_VECTOR_BASE + q;
            let reg = ivar(usize::from(q >> 1));
            let shift = ivar::shift(q, false);
            let entry = (self.regs.read(reg) & !(0xFF << shift)) | ((ivar::VALID | u32::from(v)) << shift);
            self.regs.write(reg, entry);
            self.regs.write(eitr(usize::from(v)), itr);
            if v < EICR_QUEUE_VECTORS {
                eiac |= 1 << v;
            }
            let (i, bit) = ex_bit(v);
            eiam[i] |= bit;
            let ring = self.rx[usize::from(q)].as_mut().expect("rings are made before the interrupts");
            ring.set_intr(rx_intr(vectors[usize::from(v)].clone(), v));
        }
        self.regs.write(EIAC, eiac);
        self.regs.write(eiam_ex(0), eiam[0]);
        self.regs.write(eiam_ex(1), eiam[1]);
        if conf.lsc {
            self.regs.write(EICR, eicr::LSC);
            self.regs.write(EIMS, eicr::LSC);
            self.lsc_fd = Some(vectors[usize::from(MISC_VECTOR)].clone());
        }
        self.vectors = vectors;
        Ok(())
    }

    /// At stop (queues dropped): masks everything and gives the vectors back.
    pub(super) fn teardown_interrupts(&mut self) {
        if self.vectors.is_empty() {
            return;
        }
        self.mask_interrupts();
        self.regs.write(GPIE, 0);
        if let Some(source) = &self.irqs {
            // Disabling vectors that are enabled fails only if the device went away; nothing is left to undo.
            let _ = source.disable();
        }
        self.vectors.clear();
        self.lsc_fd = None;
    }

    /// After a link-state wake-up: drains the LSC eventfd, then clears EICR.LSC, which re-arms the other-cause
    /// vector for the next change (a change after the clear signals again); the caller then reads LINKS.
    pub(super) fn ack_link_event(&self) {
        if let Some(fd) = &self.lsc_fd {
            let _ = fd.read();
            self.regs.write(EICR, eicr::LSC);
        }
    }

    /// The LSC eventfd of a started port configured with `intr_conf.lsc`.
    pub(super) fn lsc_raw_fd(&self) -> Result<std::os::fd::RawFd> {
        match &self.lsc_fd {
            Some(fd) => Ok(fd.as_raw_fd()),
            None if !self.state.config.intr_conf.lsc => {
                Err(self.state.unsupported("link-state events on a port configured without intr_conf.lsc"))
            }
            None => Err(Error::NotStarted { port: self.options.name.clone() }),
        }
    }
}

/// The register writes that arm, disarm, clear and set RX vector `v` (docs/hw/ixgbe.md §12.1): the _EX masks and
/// cause set cover every vector; EICR's per-vector bits exist for vectors 0..15 only.
fn rx_intr(fd: Arc<drvkit::vfio::EventFd>, v: u16) -> RxIntr {
    let (i, bit) = ex_bit(v);
    RxIntr {
        fd,
        unmask: (eims_ex(i), bit),
        mask: (eimc_ex(i), bit),
        clear: (v < EICR_QUEUE_VECTORS).then(|| (EICR, eicr::RTX_QUEUE.val(1 << v))),
        trigger: (eics_ex(i), bit),
    }
}
