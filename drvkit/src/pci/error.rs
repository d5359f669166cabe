//! Errors from PCI sysfs work. Each says what to do about it.

use std::path::PathBuf;

use super::PciAddress;

/// A PCI sysfs operation failed.
#[derive(Debug, thiserror::Error)]
pub enum PciError {
    /// No such device under `/sys/bus/pci/devices`.
    #[error("PCI device {addr} does not exist (see `devbind --status` or `lspci -D` for the addresses here)")]
    NoSuchDevice {
        /// The address asked for.
        addr: PciAddress,
    },
    /// A driver is not loaded (no `/sys/bus/pci/drivers/NAME`).
    #[error("driver {driver} is not loaded: load it as root with `modprobe {module}`")]
    DriverNotLoaded {
        /// The driver name (`vfio-pci`).
        driver: String,
        /// The module to load (`vfio-pci`).
        module: String,
    },
    /// Unbinding would take a network interface away from the kernel while it is in use.
    #[error(
        "{addr} is the network interface {iface}, which {why}; unbinding it would cut that traffic. \
         Take it down first (`ip link set {iface} down`) or pass --force"
    )]
    InterfaceActive {
        /// The device.
        addr: PciAddress,
        /// The interface name.
        iface: String,
        /// "is up", "is up and has 1 route", "has 2 routes".
        why: String,
    },
    /// devbind is for network devices; anything else (a disk controller) is left alone without --force.
    #[error(
        "{addr} is not a network device (class {class:06x}); unbinding it could take away a disk or the console. \
         Pass --force if you really mean it"
    )]
    NotNetwork {
        /// The device.
        addr: PciAddress,
        /// Its class code.
        class: u32,
    },
    /// The kernel did not bind the device to the driver.
    #[error("{addr} did not bind to {driver} (now {now}); see `dmesg | tail` for the kernel's reason{hint}")]
    BindFailed {
        /// The device.
        addr: PciAddress,
        /// The driver asked for.
        driver: String,
        /// The driver it has now ("no driver" if none).
        now: String,
        /// An extra hint.
        hint: String,
    },
    /// A sysfs file could not be read or written.
    #[error("{what} {path}: {source}{hint}", hint = permission_hint(.source))]
    Io {
        /// What we were doing ("writing", "reading").
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A sysfs file did not hold what was expected.
    #[error("unexpected contents in {path}: {text:?}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What it held.
        text: String,
    },
}

fn permission_hint(e: &std::io::Error) -> &'static str {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        " (binding devices needs root: run with sudo)"
    } else {
        ""
    }
}
