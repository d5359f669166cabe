/// Errors from EAL set-up. `Display` is the message for the user; [`crate::init_or_exit`] prints it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `-h`/`--help` was given: not a failure, the caller prints the usage and exits 0.
    #[error("{0}")]
    Help(String),
    /// An argument is unknown or malformed.
    #[error("{0}\nRun with -h for the EAL options.")]
    BadArgument(String),
    /// A CPU the lcore list names is not available to this process.
    #[error("lcore {lcore} is not a CPU this process may run on (available: {available}); pick lcores with -l from that set")]
    CpuUnavailable {
        /// The lcore (= CPU) asked for.
        lcore: u32,
        /// The CPUs available, as a list.
        available: String,
    },
    /// A PCI device cannot be used.
    #[error("{0}")]
    Pci(String),
    /// A port could not be opened or used.
    #[error(transparent)]
    Port(#[from] pktio::Error),
    /// DMA memory could not be had.
    #[error(transparent)]
    Memory(#[from] hugepage::Error),
    /// A mempool could not be built.
    #[error(transparent)]
    Mempool(#[from] mempool::Error),
    /// The memory budget (`-m` / `--socket-mem`) is exhausted.
    #[error("memory budget exceeded: {asked} MiB more asked, {left} MiB left of the {total} MiB given with -m/--socket-mem; raise -m")]
    OutOfBudget {
        /// MiB asked.
        asked: usize,
        /// MiB left.
        left: usize,
        /// MiB in all.
        total: usize,
    },
    /// An lcore could not be claimed or its thread started.
    #[error("lcore {lcore}: {reason}")]
    Lcore {
        /// The lcore.
        lcore: u32,
        /// What went wrong.
        reason: String,
    },
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
