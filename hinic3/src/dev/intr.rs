//! RX queue interrupts (docs/hw/hinic3.md §5.5), on a port configured with `intr_conf.rxq`: RQ k signals MSI-X
//! vector k + 1 (vector 0 stays the AEQs'), named in its context; each vector gets DPDK's RX attributes through
//! COMM 23 (pending 2, coalescing 2, resend 7). The vectors come from the port's [`IrqSource`]: VFIO's MSI-X on PCI,
//! the model's eventfds in-process. With `intr_conf.lsc`, vector 0 is the link-event descriptor: AEQ 0 (where link
//! events arrive, docs/hw/hinic3.md §6.5) is armed at every CI write (docs/hw/hinic3.md §5.2 bit 21, one element per
//! arming), so an event signals vector 0; `link()` takes the events and arms again.

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
    /// Where this port's interrupt vectors are delivered; from then on it offers `intr_conf.rxq` and `intr_conf.lsc`.
    pub fn set_irq_source(&mut self, source: Arc<dyn IrqSource>) {
        self.irq = Some(source);
        self.state.intr_capa = pktio::IntrConf { rxq: true, lsc: true };
    }

    /// At start, with the RX rings made and their contexts not yet written: vectors 0..=N, each ring its own.
    pub(super) fn intr_start(&mut self) -> Result<()> {
        let conf = self.state.config.intr_conf;
        let Some(source) = self.irq.clone().filter(|_| conf.rxq || conf.lsc) else { return Ok(()) };
        let n = if conf.rxq { self.rx.len() as u32 } else { 0 };
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
        if conf.lsc {
            let v0 = RqIntr { fd: vectors[0].clone(), regs: self.regs.clone(), vector: 0 };
            v0.arm(self.state.name())?;
            self.lsc = Some(v0);
            self.arm_link_event(true);
        }
        self.vectors = vectors;
        Ok(())
    }

    /// Arms AEQ 0 for the next link event (or stops arming it). An event already waiting would not signal, so
    /// the descriptor is signalled here for it.
    fn arm_link_event(&self, on: bool) {
        let mut c = self.ctrl.lock().unwrap_or_else(|e| e.into_inner());
        let waiting = c.as_mut().is_some_and(|c| c.mbox.arm_events(on));
        if let (true, Some(v0)) = (on && waiting, &self.lsc) {
            let _ = v0.fd.signal();
        }
    }

    /// After `link()` took AEQ 0's events: drains the link-event descriptor, unmasks vector 0 (auto-masked when it
    /// signalled) and arms AEQ 0 again; an event that came meanwhile signals or is signalled for.
    pub(super) fn ack_link_event(&self) {
        if let Some(v0) = &self.lsc {
            let _ = v0.arm(self.state.name());
            self.arm_link_event(true);
        }
    }

    /// The link-event descriptor of a started port configured with `intr_conf.lsc`.
    pub(super) fn lsc_raw_fd(&self) -> Result<std::os::fd::RawFd> {
        match &self.lsc {
            Some(v0) => Ok(v0.raw_fd()),
            None if !self.state.config.intr_conf.lsc => {
                Err(self.state.unsupported("link-state events on a port configured without intr_conf.lsc"))
            }
            None => Err(pktio::Error::NotStarted { port: self.state.name().to_string() }),
        }
    }

    /// At stop: every RQ vector masked, the vectors disabled.
    pub(super) fn intr_stop(&mut self) {
        if self.vectors.is_empty() {
            return;
        }
        if let Some(v0) = self.lsc.take() {
            self.arm_link_event(false);
            v0.disarm();
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
