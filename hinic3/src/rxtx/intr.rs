//! An RQ's interrupt (docs/hw/hinic3.md §5.5): the eventfd its MSI-X vector writes, and the FUNC_MSI_CLR_WR
//! operations that arm it (auto-mask on, unmask) and disarm it (auto-mask off, mask, resend timer cleared), as
//! DPDK's `rx_queue_intr_enable` / `_disable` do. The vector masks itself when it signals; an event that came while
//! it was masked is signalled when it is unmasked, so a frame that arrived just before arming wakes the waiter.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::vfio::EventFd;
use pktio::{Error, Result};

use crate::regs::{msi_clr, BeRegs, FUNC_MSI_CLR_WR};

/// One RQ's vector.
pub struct RqIntr<R: RegisterSpace> {
    /// What the vector writes.
    pub fd: Arc<EventFd>,
    /// The cfg BAR (FUNC_MSI_CLR_WR).
    pub regs: BeRegs<R>,
    /// The MSI-X vector.
    pub vector: u32,
}

impl<R: RegisterSpace> RqIntr<R> {
    /// The descriptor to wait on.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn op(&self, bits: u32) {
        self.regs.write(FUNC_MSI_CLR_WR, bits | msi_clr::INDEX.val(self.vector));
    }

    /// Drains the eventfd, clears the resend timer, auto-mask on, unmask.
    pub fn arm(&self, port: &str) -> Result<()> {
        self.fd.read().map_err(|e| Error::os(format!("{port}: draining an RX interrupt's eventfd"), e))?;
        self.op(msi_clr::CLR_RESEND | msi_clr::SET_AUTO_MASK);
        self.op(msi_clr::CLR_MASK);
        Ok(())
    }

    /// Auto-mask off, mask, resend timer cleared.
    pub fn disarm(&self) {
        self.op(msi_clr::CLR_AUTO_MASK | msi_clr::SET_MASK | msi_clr::CLR_RESEND);
        // A read flushes the posted write: disarmed means no signal for the next frame.
        let _ = self.regs.read(crate::regs::FUNC_ATTR0);
    }
}
