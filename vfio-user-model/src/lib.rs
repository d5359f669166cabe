//! Serves nicsim's NIC models as PCI devices over the vfio-user protocol, so that a QEMU guest (QEMU ≥ 10.1,
//! `-device vfio-user-pci,socket=PATH`) probes them with its own drivers: Linux's ixgbe against the X540 and 82599
//! models is the judge of a model written by the same team as our drivers.
//!
//! It serves any model through the model trait ([`nicsim::Model`]): the X540 and 82599, the X710 family and the
//! SP670 (`--model x540|82599|x710|sp670`). What the client gets ([`ModelDevice`]): every register BAR of the model
//! as a region backed by its register space (every access a message: no mmap; the SP670's three, cfg BAR1, mgmt
//! BAR3 and doorbell BAR4, an 8-byte aligned write going to the model as one 64-bit store), the MSI-X BAR (table
//! and PBA: BAR4 on the X540 and 82599, BAR3 on the X710, BAR2 on the SP670) as plain memory, a synthesised PCI Express config space
//! ([`config::ConfigSpace`]: PM, MSI, MSI-X and PCIe capabilities; never all-ones), guest memory mapped from the
//! memfd the client passes with each DMA map into the model's IOVA map, and the model's interrupt messages
//! written to the eventfds the client hands over (MSI-X per vector; MSI or INTx for vector 0).
//!
//! The protocol itself is the `vfio_user` crate's server (version 0.0, which QEMU accepts).
//!
//! Not supported: DMA through messages (memory a client maps without a file descriptor stays outside the model's
//! IOVA map: the model faults on DMA there),
//! mmap of BARs, migration, the 82599's I/O BAR (reads 0), INTx level semantics (a message per rising edge only),
//! more than one client per server.

#![deny(unsafe_code)]

pub mod config;
mod device;

use std::path::Path;

pub use device::{IrqRoutes, ModelDevice};

/// What can go wrong serving a model.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The client mapped guest memory without a file descriptor (reported, not fatal).
    #[error("DMA map of {size:#x} bytes at IOVA {iova:#x} came without a file descriptor: the model cannot reach it (guest RAM must be shared: -object memory-backend-memfd,share=on and -machine memory-backend=...)")]
    DmaWithoutFd {
        /// IOVA of the range.
        iova: u64,
        /// Its length.
        size: u64,
    },
    /// Mapping the client's memory file failed.
    #[error("mmap of the DMA range {iova:#x}+{size:#x} failed: {source}")]
    DmaMmap {
        /// IOVA of the range.
        iova: u64,
        /// Its length.
        size: u64,
        /// The mmap error.
        source: std::io::Error,
    },
    /// SET_IRQS with a count that does not match the file descriptors sent.
    #[error("SET_IRQS for index {index}: {count} vectors but {fds} eventfds")]
    IrqFds {
        /// VFIO IRQ index.
        index: u32,
        /// Vectors named.
        count: u32,
        /// Descriptors received.
        fds: usize,
    },
    /// The vfio-user server failed (socket, protocol).
    #[error("vfio-user server on {path}: {source}")]
    Server {
        /// The socket path.
        path: String,
        /// The server's error.
        source: vfio_user::Error,
    },
}

/// Binds `socket`, serves `device` to the first client that connects until it disconnects.
pub fn serve<S: nicsim::Model>(socket: &Path, device: &mut ModelDevice<S>) -> Result<(), Error> {
    let wrap = |source| Error::Server { path: socket.display().to_string(), source };
    let server = vfio_user::Server::new(socket, true, device.irq_infos(), device.regions()).map_err(wrap)?;
    server.run(device).map_err(wrap)
}
