//! RX queue interrupts (docs/hw/hinic3.md §5.5), on a port configured with `intr_conf.rxq`: RQ k signals MSI-X
//! vector k + 1 (vector 0 stays the AEQs'), named in its context; each vector gets DPDK's RX attributes through
//! COMM 23 (pending 2, coalescing 2, resend 7). The vectors come from the port's [`IrqSource`]: VFIO's MSI-X on PCI,
//! the model's eventfds in-process. Not done: link changes as an interrupt (they arrive on AEQ 0, which the port
//! polls; `intr_conf.lsc` is refused).

use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::irq::IrqSource;
use pktio::Result;

use super::queue::lock;
use super::Hinic3;
use crate::mgmt::{self, module};
use crate::rxtx::RqIntr;

/// DPDK's COMM 23 values for RX queue vectors (docs/hw/hinic3.md §7.3).
const RX_PENDING: u8 = 2;
const RX_COALESCE: u8 = 2;
const RX_RESEND: u8 = 7;

impl<R: RegisterSpace> Hinic3<R> {
    /// Where this port's interrupt vectors are delivered; from then on it offers `intr_conf.rxq`.
    pub fn set_irq_source(&mut self, source: Arc<dyn IrqSource>) {
        self.irq = Some(source);
        self.state.intr_capa.rxq = true;
    }

    /// At start, with the RX rings made and their contexts not yet written: vectors 0..=N, each ring its own.
    pub(super) fn intr_start(&mut self) -> Result<()> {
        let Some(source) = self.irq.clone().filter(|_| self.state.config.intr_conf.rxq) else { return Ok(()) };
        let n = self.rx.len() as u32;
        let irqs = crate::regs::attr2::IRQS.get(self.regs.read(crate::regs::FUNC_ATTR2));
        let has = source.max_vectors().min(irqs);
        if n + 1 > has {
            return Err(self.state.invalid(format!(
                "interrupts for {n} RX queues need {} MSI-X vectors (one per queue and vector 0); the function has {has}",
                n + 1
            )));
        }
        let vectors = source.enable(n + 1)?;
        let f = self.func();
        for k in 0..n {
            let v = k + 1;
            let attr = mgmt::cfg_msix_ctrl(f, v as u16, RX_PENDING, RX_COALESCE, RX_RESEND);
            self.call(module::COMM, mgmt::comm::CFG_MSIX_CTRL_REG, &attr.0, &[])?;
            let intr = RqIntr { fd: vectors[v as usize].clone(), regs: self.regs.clone(), vector: v };
            if let Some(ring) = lock(&self.rx[k as usize]).as_mut() {
                ring.set_intr(Some(intr));
            }
        }
        self.vectors = vectors;
        Ok(())
    }

    /// At stop: every RQ vector masked, the vectors disabled.
    pub(super) fn intr_stop(&mut self) {
        if self.vectors.is_empty() {
            return;
        }
        for r in &self.rx {
            if let Some(ring) = lock(r).as_mut() {
                ring.set_intr(None);
            }
        }
        for v in 1..self.vectors.len() as u32 {
            RqIntr { fd: self.vectors[v as usize].clone(), regs: self.regs.clone(), vector: v }.disarm();
        }
        if let Some(source) = &self.irq {
            let _ = source.disable();
        }
        self.vectors.clear();
    }
}
