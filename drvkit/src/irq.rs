//! Interrupt vectors as eventfds: what a driver that takes interrupts is written against, whoever delivers them.
//!
//! An [`IrqSource`] routes a device's interrupt vectors to eventfds, vector `i` to element `i` of the
//! [`IrqVectors`] it hands back. On a PCI device that is VFIO's MSI-X (`VFIO_DEVICE_SET_IRQS` with eventfds,
//! [`crate::vfio::VfioDevice`] implements it); for a behavioural model in the same process, the driver's model
//! glue implements it by creating the eventfds itself and having the model write vector `i`'s when it signals
//! vector `i`. The driver code above it (which vector a queue uses, masking, arming) is the same both ways.
//!
//! An application waits on the descriptors with `poll(2)`/`epoll` ([`poll_readable`] for one); the driver
//! drains a descriptor ([`EventFd::read`]) when it arms its interrupt again.

use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::Duration;

use crate::vfio::{EventFd, Result, VfioDevice, MSIX_IRQ};

/// Vectors routed to eventfds: element `i` is vector `i`'s. Shared by the device and the queues that wait on them.
pub type IrqVectors = Vec<Arc<EventFd>>;

/// Where a device's interrupt vectors are delivered.
pub trait IrqSource: Send + Sync + fmt::Debug {
    /// Vectors the device has (its MSI-X table size); 0 when it has none to give.
    fn max_vectors(&self) -> u32;
    /// Routes vectors `0..count` to new eventfds. Fails if the device has fewer. Call it with the vectors
    /// disabled (never enabled, or [`IrqSource::disable`]d since): VFIO refuses to resize an enabled MSI-X set and
    /// to disable one that is not enabled.
    fn enable(&self, count: u32) -> Result<IrqVectors>;
    /// Stops delivering every vector enabled (the eventfds handed out stay valid, and silent).
    fn disable(&self) -> Result<()>;
}

/// MSI-X through VFIO: the kernel programs the MSI-X table and signals the eventfds.
impl IrqSource for VfioDevice {
    fn max_vectors(&self) -> u32 {
        self.irq_info(MSIX_IRQ).map(|i| i.count).unwrap_or(0)
    }

    fn enable(&self, count: u32) -> Result<IrqVectors> {
        Ok(self.enable_irqs(MSIX_IRQ, count)?.into_iter().map(Arc::new).collect())
    }

    fn disable(&self) -> Result<()> {
        self.disable_irqs(MSIX_IRQ)
    }
}

impl<T: IrqSource + ?Sized> IrqSource for Arc<T> {
    fn max_vectors(&self) -> u32 {
        (**self).max_vectors()
    }
    fn enable(&self, count: u32) -> Result<IrqVectors> {
        (**self).enable(count)
    }
    fn disable(&self) -> Result<()> {
        (**self).disable()
    }
}

/// Waits up to `timeout` for `fd` to become readable (`poll(2)`, `POLLIN`); true if it is. Interrupted waits
/// are resumed with the time left.
pub fn poll_readable(fd: RawFd, timeout: Duration) -> io::Result<bool> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let ms = left.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: `pfd` is one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n >= 0 {
            return Ok(n > 0 && pfd.revents & libc::POLLIN != 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_eventfd_is_readable_once_signalled_until_drained() {
        let fd = EventFd::new().unwrap();
        use std::os::fd::AsRawFd;
        assert!(!poll_readable(fd.as_raw_fd(), Duration::ZERO).unwrap());
        fd.signal().unwrap();
        fd.signal().unwrap();
        assert!(poll_readable(fd.as_raw_fd(), Duration::from_secs(5)).unwrap());
        assert_eq!(fd.read().unwrap(), Some(2), "the count of signals");
        assert!(!poll_readable(fd.as_raw_fd(), Duration::ZERO).unwrap(), "drained");
        assert_eq!(fd.read().unwrap(), None);
    }
}
