//! An RX queue's interrupt (docs/hw/i40e.md §14.2): the eventfd its MSI-X vector writes and the vector's
//! PFINT_DYN_CTLN, which arms it (INTENA) and disarms it. The vector disables itself when it signals; a cause that
//! came while it was disarmed is signalled when it is armed again, so a frame that arrived just before arming wakes
//! the waiter.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::vfio::EventFd;
use pktio::{Error, Result};

use crate::regs::{pfint_dyn_ctl, Reg, Regs};

/// One RX queue's vector.
#[derive(Debug)]
pub struct RxIntr {
    /// What the vector writes.
    pub fd: Arc<EventFd>,
    /// The vector's PFINT_DYN_CTLN.
    pub dyn_ctl: Reg,
}

impl RxIntr {
    /// The descriptor to wait on.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Drains the eventfd, then INTENA | CLEARPBA with no ITR update (DPDK's `rx_queue_intr_enable`).
    pub fn arm<R: RegisterSpace>(&self, regs: &Regs<R>, port: &str) -> Result<()> {
        self.fd.read().map_err(|e| Error::os(format!("{port}: draining an RX interrupt's eventfd"), e))?;
        let v = pfint_dyn_ctl::INTENA | pfint_dyn_ctl::CLEARPBA | pfint_dyn_ctl::ITR_INDX.val(pfint_dyn_ctl::ITR_NONE);
        regs.write(self.dyn_ctl, v);
        Ok(())
    }

    /// INTENA 0 (DPDK's `rx_queue_intr_disable`), then a read to flush the posted write (docs/hw/i40e.md: "flush
    /// (read any register)"): once this returns the queue no longer signals, even for a frame arriving next.
    pub fn disarm<R: RegisterSpace>(&self, regs: &Regs<R>) {
        regs.write(self.dyn_ctl, pfint_dyn_ctl::ITR_INDX.val(pfint_dyn_ctl::ITR_NONE));
        let _ = regs.read(self.dyn_ctl);
    }
}
