//! Why a virtio-net device could not be driven. Device failures reach [`pktio::Error`] as
//! [`pktio::Error::Driver`] with this error as the source, so a caller can tell a dead device from a bad argument.

use std::time::Duration;

/// A virtio-net device failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A vendor capability is missing or points outside its BAR.
    #[error("{dev}: {what}")]
    Capability {
        /// Device name.
        dev: String,
        /// What is wrong.
        what: String,
    },
    /// Feature negotiation failed.
    #[error("{dev}: {what} (device offers {offered})")]
    Features {
        /// Device name.
        dev: String,
        /// What is wrong and what to do.
        what: String,
        /// The device's feature names.
        offered: String,
    },
    /// A register never reached the value the driver waited for.
    #[error(
        "{dev}: {what} did not complete within {budget:?} ({register} = {last_value:#x}); the device may be hung: \
         reset it (e.g. unbind and rebind vfio-pci) or restart the VM"
    )]
    Timeout {
        /// Device name.
        dev: String,
        /// What the driver waited for.
        what: &'static str,
        /// The register polled, as the virtio specification names it.
        register: &'static str,
        /// Its last value.
        last_value: u32,
        /// How long the driver waited.
        budget: Duration,
    },
    /// The device did not do what it was asked.
    #[error("{dev}: {what}")]
    Device {
        /// Device name.
        dev: String,
        /// What happened.
        what: String,
    },
    /// The device did not take the MSI-X vector written to a queue's `queue_msix_vector`.
    #[error(
        "{dev}: virtqueue {queue}: queue_msix_vector reads back {answer:#06x} after MSI-X vector {vector} was \
         written (0xffff is NO_VECTOR: the device could not map it), so the queue cannot interrupt; configure the \
         port without intr_conf.rxq and poll, or give the device more MSI-X vectors (QEMU: virtio-net-pci,vectors=N)"
    )]
    Vector {
        /// Device name.
        dev: String,
        /// The virtqueue.
        queue: u16,
        /// The vector written.
        vector: u16,
        /// What the device read back.
        answer: u16,
    },
    /// The device did not take the MSI-X vector written to `config_msix_vector`.
    #[error(
        "{dev}: config_msix_vector reads back {answer:#06x} after MSI-X vector {vector} was written (0xffff is \
         NO_VECTOR: the device could not map it), so link changes cannot interrupt; configure the port without \
         intr_conf.lsc and poll link()"
    )]
    ConfigVector {
        /// Device name.
        dev: String,
        /// The vector written.
        vector: u16,
        /// What the device read back.
        answer: u16,
    },
    /// A control queue command failed.
    #[error("{dev}: control command class {class} cmd {cmd}: {what}")]
    Control {
        /// Device name.
        dev: String,
        /// Command class.
        class: u8,
        /// Command.
        cmd: u8,
        /// What happened.
        what: String,
    },
    /// VFIO failed.
    #[error(transparent)]
    Vfio(#[from] drvkit::vfio::VfioError),
    /// DMA mapping failed.
    #[error(transparent)]
    Dma(#[from] drvkit::dma::DmaError),
    /// Memory failed.
    #[error(transparent)]
    Memory(#[from] hugepage::Error),
    /// Configuration space access failed.
    #[error("{dev}: configuration space: {source}")]
    Config {
        /// Device name.
        dev: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The device the error is about, where the error names one.
    pub fn device(&self) -> Option<&str> {
        match self {
            Error::Capability { dev, .. }
            | Error::Features { dev, .. }
            | Error::Timeout { dev, .. }
            | Error::Device { dev, .. }
            | Error::Control { dev, .. }
            | Error::Vector { dev, .. }
            | Error::ConfigVector { dev, .. }
            | Error::Config { dev, .. } => Some(dev),
            Error::Vfio(_) | Error::Dma(_) | Error::Memory(_) => None,
        }
    }
}

impl From<Error> for pktio::Error {
    fn from(e: Error) -> Self {
        match e {
            // Already the port API's own errors.
            Error::Dma(e) => pktio::Error::Dma(e),
            Error::Vfio(e) => pktio::Error::Vfio(e),
            other => {
                let port = other.device().unwrap_or(crate::DRIVER_NAME).to_string();
                pktio::Error::driver(port, other)
            }
        }
    }
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_failure_reaches_the_port_api_as_this_crates_error() {
        let e = Error::Timeout {
            dev: "0000:00:04.0".into(),
            what: "reset",
            register: "device_status",
            last_value: 0x8f,
            budget: Duration::from_secs(2),
        };
        let p = pktio::Error::from(e);
        let text = p.to_string();
        assert!(text.contains("0000:00:04.0") && text.contains("device_status = 0x8f"), "{text}");
        match p.driver_error::<Error>() {
            Some(Error::Timeout { register, last_value, .. }) => {
                assert_eq!((*register, *last_value), ("device_status", 0x8f))
            }
            other => panic!("not a virtio timeout: {other:?}"),
        }
        let dma = drvkit::dma::DmaError::Area { port: "p".into(), reason: "no memory".into() };
        let arg = pktio::Error::from(Error::Dma(dma));
        assert!(matches!(arg, pktio::Error::Dma(_)), "DMA errors pass through as the port API's own");
    }
}
