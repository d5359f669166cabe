//! VFIO errors. Every variant names the object (device, group, file) and what to do about it.

use std::path::PathBuf;

use hugepage::IovaMode;

use super::IommuMode;
use crate::pci::{PciAddress, PciError};

/// A VFIO operation failed.
#[derive(Debug, thiserror::Error)]
pub enum VfioError {
    /// `/dev/vfio/vfio` is missing: the VFIO modules are not loaded.
    #[error("{path} does not exist: the VFIO modules are not loaded; load them as root with `modprobe vfio-pci`")]
    ModuleNotLoaded {
        /// The container node.
        path: PathBuf,
    },
    /// A `/dev/vfio` node could not be opened for lack of permission.
    #[error(
        "cannot open {path}: {source}; run as root, or give your user the device \
         (`chown $USER {path}` and raise `ulimit -l` for DMA mappings)"
    )]
    Permission {
        /// The node.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The kernel speaks another VFIO API version.
    #[error("VFIO API version {found} is not supported (expected {expected}); this kernel's VFIO is incompatible")]
    ApiVersion {
        /// What the kernel reported.
        found: i32,
        /// What this code speaks.
        expected: i32,
    },
    /// No type1 IOMMU backend.
    #[error(
        "the kernel's VFIO offers no type1 IOMMU (VFIO_TYPE1v2_IOMMU): load `modprobe vfio_iommu_type1` and enable the \
         IOMMU: add intel_iommu=on (or amd_iommu=on) to the kernel command line{noiommu}",
        noiommu = if *.noiommu_available { "; or, accepting unprotected DMA, run with --iova-mode pa (no-IOMMU mode)" } else { "" }
    )]
    NoType1 {
        /// The no-IOMMU backend is available instead.
        noiommu_available: bool,
    },
    /// `--iova-mode pa` was asked for on a system with neither an IOMMU nor no-IOMMU mode.
    #[error(
        "VFIO no-IOMMU mode is not enabled: enable the IOMMU (add intel_iommu=on or amd_iommu=on to the kernel \
         command line), or, accepting unprotected DMA, `echo 1 > /sys/module/vfio/parameters/enable_unsafe_noiommu_mode` \
         (needs a kernel built with CONFIG_VFIO_NOIOMMU; Debian's is not)"
    )]
    NoIommuUnavailable,
    /// The device has no IOMMU group.
    #[error(
        "{addr} has no IOMMU group{driver}: enable the IOMMU: add intel_iommu=on (or amd_iommu=on) to the kernel \
         command line; then bind the device: `devbind -b vfio-pci {addr}` (with virtio-iommu the group appears only \
         once a driver is bound)",
        driver = match .driver { Some(d) => format!(" (bound to {d})"), None => String::new() }
    )]
    NoIommuGroup {
        /// The device.
        addr: PciAddress,
        /// Its driver.
        driver: Option<String>,
    },
    /// Only a no-IOMMU group node exists and the user did not opt in.
    #[error(
        "{addr}: this kernel runs VFIO without an IOMMU ({path} exists), so the device could DMA anywhere in memory. \
         To accept that, run with --iova-mode pa; better, enable the IOMMU: add intel_iommu=on (or amd_iommu=on) to \
         the kernel command line"
    )]
    NoIommuNotAllowed {
        /// The device.
        addr: PciAddress,
        /// The noiommu group node.
        path: PathBuf,
    },
    /// The device is not bound to vfio-pci, so VFIO cannot open it.
    #[error(
        "{addr} is not bound to vfio-pci{driver}; bind the device: `devbind -b vfio-pci {addr}`",
        driver = match .driver { Some(d) => format!(" (it is bound to {d})"), None => " (it has no driver)".to_string() }
    )]
    NotBound {
        /// The device.
        addr: PciAddress,
        /// Its current driver.
        driver: Option<String>,
    },
    /// The group node is held by someone else.
    #[error(
        "IOMMU group {group} is busy: another process holds {path} (find it with `fuser {path}`) and must close it first"
    )]
    GroupBusy {
        /// The group.
        group: u32,
        /// The node.
        path: PathBuf,
    },
    /// A device of the group is bound to a kernel driver.
    #[error(
        "IOMMU group {group} is not viable: bind every device in /sys/kernel/iommu_groups/{group}/devices to vfio-pci \
         (or unbind it){others}",
        others = if .others.is_empty() { String::new() } else { format!("; still bound elsewhere: {}", .others.join(", ")) }
    )]
    GroupNotViable {
        /// The group.
        group: u32,
        /// `ADDR (driver)` of the other devices that block it.
        others: Vec<String>,
    },
    /// The group is already attached to a container (in this or another process).
    #[error(
        "IOMMU group {group} is already attached to another VFIO container (another process uses it: `fuser {path}`)"
    )]
    GroupInUse {
        /// The group.
        group: u32,
        /// The node.
        path: PathBuf,
    },
    /// `VFIO_SET_IOMMU` failed.
    #[error("setting the {mode} IOMMU backend failed: {source}{hint}",
        hint = if .source.raw_os_error() == Some(libc::EPERM) {
            "; the IOMMU has no interrupt remapping (virtio-iommu, old hardware): load vfio_iommu_type1 with \
             allow_unsafe_interrupts=1 (`echo 1 > /sys/module/vfio_iommu_type1/parameters/allow_unsafe_interrupts`) \
             if you accept that"
        } else { "" })]
    SetIommu {
        /// The backend.
        mode: IommuMode,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The group does not have that device.
    #[error("IOMMU group {group} has no device {addr} (VFIO_GROUP_GET_DEVICE_FD: {source})")]
    DeviceNotInGroup {
        /// The device.
        addr: PciAddress,
        /// The group.
        group: u32,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A region (BAR, config space) cannot be used as asked.
    #[error("{addr}: region {index}: {reason}")]
    Region {
        /// The device.
        addr: PciAddress,
        /// Region index (BARs 0-5, ROM 6, config 7).
        index: u32,
        /// What is wrong.
        reason: String,
    },
    /// A kernel answer did not parse (truncated or malformed capability chain).
    #[error("malformed VFIO answer to {what}: {reason}")]
    Malformed {
        /// The ioctl.
        what: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A DMA mapping is outside what the IOMMU accepts.
    #[error("cannot DMA-map IOVA {iova:#x}+{size:#x}: {reason}")]
    DmaRange {
        /// First IOVA.
        iova: u64,
        /// Bytes.
        size: u64,
        /// Why: outside the IOMMU's ranges, in the MSI window, misaligned.
        reason: String,
    },
    /// `VFIO_IOMMU_MAP_DMA` failed.
    #[error("VFIO_IOMMU_MAP_DMA of IOVA {iova:#x}+{size:#x} failed: {source}{hint}",
        hint = match .source.raw_os_error() {
            Some(libc::ENOMEM) => "; the pages cannot be pinned: raise the locked-memory limit (`ulimit -l unlimited`) or run as root",
            Some(libc::ENOSPC) => "; the IOMMU's mapping count limit is reached (vfio_iommu_type1 dma_entry_limit): use bigger hugepages (1G)",
            Some(libc::EEXIST) => "; that IOVA range is already mapped",
            _ => "",
        })]
    DmaMap {
        /// First IOVA.
        iova: u64,
        /// Bytes.
        size: u64,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The memory's IOVA mode does not fit the container's IOMMU mode.
    #[error("{reason}")]
    IovaMode {
        /// The memory's mode.
        memory: IovaMode,
        /// The container's mode.
        container: IommuMode,
        /// What to do.
        reason: String,
    },
    /// The device cannot be reset through VFIO.
    #[error("{addr} has no VFIO reset (no FLR or PM reset); reset it through its own registers")]
    ResetUnsupported {
        /// The device.
        addr: PciAddress,
    },
    /// More interrupt vectors asked for than a device has.
    #[error("{device}: {asked} interrupt vectors asked for, it has {has}; configure fewer RX queues with interrupts")]
    IrqVectors {
        /// The device.
        device: String,
        /// Vectors asked for.
        asked: u32,
        /// Vectors it has.
        has: u32,
    },
    /// Another system call failed.
    #[error("{what}: {source}")]
    Os {
        /// What we were doing, with the object.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Reading sysfs failed.
    #[error(transparent)]
    Pci(#[from] PciError),
}

impl VfioError {
    /// A failed system call, with what was being done.
    pub fn os(what: impl Into<String>, source: std::io::Error) -> Self {
        VfioError::Os { what: what.into(), source }
    }
}

/// Result alias for VFIO operations.
pub type Result<T, E = VfioError> = std::result::Result<T, E>;
