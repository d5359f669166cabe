/// Errors from the port API. Each names the port or queue and, where there is one, the fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operation needs `configure` first.
    #[error("port {port}: not configured; call configure() (testpmd: `port config ...`) before starting it")]
    NotConfigured {
        /// Port name.
        port: String,
    },
    /// An operation needs a started port.
    #[error("port {port}: not started; start it first (testpmd: `port start {port}`)")]
    NotStarted {
        /// Port name.
        port: String,
    },
    /// An operation needs a stopped port.
    #[error("port {port}: still started; stop it first (testpmd: `port stop ...`)")]
    Started {
        /// Port name.
        port: String,
    },
    /// A queue index past the configured count.
    #[error("port {port}: {kind} queue {queue} does not exist ({count} configured)")]
    InvalidQueue {
        /// Port name.
        port: String,
        /// "rx" or "tx".
        kind: &'static str,
        /// Queue asked for.
        queue: u16,
        /// Queues configured.
        count: u16,
    },
    /// The queue was already handed out since the last start.
    #[error("port {port}: {kind} queue {queue} is already taken (each queue has one owner)")]
    QueueTaken {
        /// Port name.
        port: String,
        /// "rx" or "tx".
        kind: &'static str,
        /// Queue asked for.
        queue: u16,
    },
    /// Queue handles are still alive where the port needs them back.
    #[error("port {port}: its queues are still in use; drop the RxQueue/TxQueue handles before stopping it")]
    QueuesInUse {
        /// Port name.
        port: String,
    },
    /// A configuration the device cannot take.
    #[error("port {port}: {reason}")]
    InvalidConfig {
        /// Port name.
        port: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// The device does not do this.
    #[error("port {port}: {what} is not supported by {driver}")]
    NotSupported {
        /// Port name.
        port: String,
        /// Driver name.
        driver: &'static str,
        /// The operation.
        what: &'static str,
    },
    /// A table of the device (e.g. its unicast MAC address filters) has no free entry.
    #[error("port {port}: the {what} table is full ({max} entries); remove an entry first")]
    TableFull {
        /// Port name.
        port: String,
        /// The table.
        what: &'static str,
        /// Its size.
        max: u32,
    },
    /// The port's default MAC address cannot be removed, only replaced.
    #[error(
        "port {port}: {mac} is the port's default MAC address; change it with set_mac_addr instead of removing it"
    )]
    DefaultMacAddr {
        /// Port name.
        port: String,
        /// The address.
        mac: crate::MacAddr,
    },
    /// The device itself failed (a register that never settled, firmware that refused, a feature it lacks): not
    /// a bad argument. `source` is the driver's own error type (e.g. `ixgbe::Error`); find it with
    /// [`Error::driver_error`] or through [`std::error::Error::source`].
    #[error("port {port}: {source}")]
    Driver {
        /// Port name.
        port: String,
        /// The driver's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// Bad device arguments (`--vdev NAME,...` or `-a ADDRESS,...`).
    #[error("{option} {devargs:?}: {reason}")]
    Devargs {
        /// The option that gave them: `--vdev` or `-a`.
        option: &'static str,
        /// The devargs string.
        devargs: String,
        /// What is wrong.
        reason: String,
    },
    /// No driver for a device name.
    #[error("no driver for device {name:?}; known virtual devices: {known}")]
    UnknownDriver {
        /// The name.
        name: String,
        /// The known driver names.
        known: String,
    },
    /// Memory or mempool trouble.
    #[error(transparent)]
    Mempool(#[from] mempool::Error),
    /// DMA memory (rings, tables) could not be had: hugepages, mapping, locking.
    #[error(transparent)]
    Memory(#[from] hugepage::Error),
    /// VFIO could not open or drive a device.
    #[error(transparent)]
    Vfio(#[from] drvkit::vfio::VfioError),
    /// PCI sysfs trouble (device missing, binding failed).
    #[error(transparent)]
    Pci(#[from] drvkit::pci::PciError),
    /// Memory could not be made reachable by the device (a DMA mapping or area).
    #[error(transparent)]
    Dma(#[from] drvkit::dma::DmaError),
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        /// What we were doing, with the object (file, interface).
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// An OS error with context, from errno.
    pub fn last_os(what: impl Into<String>) -> Self {
        Error::Os { what: what.into(), source: std::io::Error::last_os_error() }
    }

    /// A driver's own error, for port `port`.
    pub fn driver(port: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Driver { port: port.into(), source: Box::new(source) }
    }

    /// The driver's error of type `E`, when this is an [`Error::Driver`] carrying one.
    pub fn driver_error<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match self {
            Error::Driver { source, .. } => source.downcast_ref::<E>(),
            _ => None,
        }
    }

    /// An OS error with context.
    pub fn os(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Os { what: what.into(), source }
    }
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
