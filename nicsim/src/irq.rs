//! A model port's interrupts as eventfds, in-process: the [`drvkit::irq::IrqSource`] a driver's model glue
//! (its `src/sim.rs`) hands the driver, so that the driver code that runs on VFIO's MSI-X eventfds runs here
//! unchanged. Enabling `n` vectors creates `n` real eventfds and connects the model's [`crate::IrqSink`] to them:
//! the model signalling vector `i` writes eventfd `i`, as the kernel does for an MSI-X message. A vector the
//! model signals beyond those enabled goes nowhere, as on a device whose MSI-X table entry is not set up.

use std::sync::Arc;

use drvkit::irq::{IrqSource, IrqVectors};
use drvkit::vfio::{EventFd, Result, VfioError};

use crate::{Model, ModelPort};

/// The interrupt vectors of model port `S`, delivered to eventfds.
pub struct ModelIrqs<S> {
    port: ModelPort<S>,
}

impl<S> std::fmt::Debug for ModelIrqs<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ModelIrqs")
    }
}

impl<S: Model> ModelIrqs<S> {
    /// The vectors of `port`.
    pub fn new(port: &ModelPort<S>) -> Self {
        ModelIrqs { port: port.clone() }
    }
}

impl<S: Model> IrqSource for ModelIrqs<S> {
    fn max_vectors(&self) -> u32 {
        u32::from(self.port.shared.identity().msix_vectors)
    }

    fn enable(&self, count: u32) -> Result<IrqVectors> {
        let max = self.max_vectors();
        if count == 0 || count > max {
            return Err(VfioError::IrqVectors {
                device: format!("a {} model port", S::FAMILY),
                asked: count,
                has: max,
            });
        }
        let fds = (0..count)
            .map(|_| EventFd::new().map(Arc::new))
            .collect::<std::io::Result<IrqVectors>>()
            .map_err(|e| VfioError::os("eventfd for a model's interrupt vector", e))?;
        let sink_fds = fds.clone();
        self.port.set_irq_sink(Some(Arc::new(move |v: u16| {
            if let Some(fd) = sink_fds.get(usize::from(v)) {
                // Only a full counter fails (readable already); the model has no one to tell.
                let _ = fd.signal();
            }
        })));
        Ok(fds)
    }

    fn disable(&self) -> Result<()> {
        self.port.set_irq_sink(None);
        Ok(())
    }
}

impl<S: Model> ModelPort<S> {
    /// This port's interrupt vectors as eventfds, for the driver's [`IrqSource`] ([`ModelIrqs`]).
    pub fn irq_source(&self) -> Arc<dyn IrqSource> {
        Arc::new(ModelIrqs::new(self))
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    use drvkit::bar::RegisterSpace;
    use drvkit::irq::poll_readable;

    use crate::x540::regs::*;
    use crate::{X540Config, X540};

    #[test]
    fn a_vector_the_model_signals_writes_its_eventfd() {
        let (bar, port) = X540::new(X540Config::default());
        let source = port.irq_source();
        assert_eq!(source.max_vectors(), 64);
        assert!(source.enable(65).is_err());
        let fds = source.enable(4).unwrap();
        bar.write32(GPIE, GPIE_MSIX_MODE);
        bar.write32(EIAC, 1 << 2);
        bar.write32(EIMS, 1 << 2);
        assert!(!poll_readable(fds[2].as_raw_fd(), Duration::ZERO).unwrap());
        bar.write32(EICS, 1 << 2);
        assert!(poll_readable(fds[2].as_raw_fd(), Duration::from_secs(5)).unwrap(), "vector 2 signalled");
        assert!(!poll_readable(fds[1].as_raw_fd(), Duration::ZERO).unwrap(), "vector 1 was not");
        assert_eq!(fds[2].read().unwrap(), Some(1));
        source.disable().unwrap();
        bar.write32(EICS, 1 << 2);
        assert!(!poll_readable(fds[2].as_raw_fd(), Duration::ZERO).unwrap(), "disabled: nothing delivered");
    }
}
