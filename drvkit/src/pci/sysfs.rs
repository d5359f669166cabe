//! PCI devices as sysfs shows them, and binding them to drivers.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{PciAddress, PciError};

/// Vendor and device ID of a PCI function (or subsystem vendor and subsystem ID).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PciId {
    /// Vendor ID (e.g. 0x8086 Intel, 0x1af4 Red Hat/virtio).
    pub vendor: u16,
    /// Device ID.
    pub device: u16,
}

impl PciId {
    /// An ID from its two halves.
    pub const fn new(vendor: u16, device: u16) -> Self {
        PciId { vendor, device }
    }
}

/// The `[PciId; N]` of a driver's ID table whose entries start with `(vendor, device, ...)`, built at compile time,
/// so that a driver keeps one table to edit: `static IDS: [PciId; TABLE.len()] = drvkit::pci_ids_of!(TABLE);`.
#[macro_export]
macro_rules! pci_ids_of {
    ($table:expr) => {{
        let mut ids = [$crate::pci::PciId::new(0, 0); $table.len()];
        let mut i = 0;
        while i < ids.len() {
            ids[i] = $crate::pci::PciId::new($table[i].0, $table[i].1);
            i += 1;
        }
        ids
    }};
}

impl fmt::Display for PciId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{:04x}", self.vendor, self.device)
    }
}

/// One line of a device's `resource` file: a BAR (indices 0-5), the expansion ROM (6), or a bridge window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    /// Line number: BAR index for 0-5.
    pub index: usize,
    /// First bus address.
    pub start: u64,
    /// Last bus address (inclusive).
    pub end: u64,
    /// Linux `IORESOURCE_*` flags.
    pub flags: u64,
}

impl Resource {
    const IO: u64 = 0x100;
    const MEM: u64 = 0x200;
    const PREFETCH: u64 = 0x2000;
    const MEM_64: u64 = 0x0010_0000;

    /// Size in bytes (0 for an unimplemented BAR).
    pub fn size(&self) -> u64 {
        if self.end == 0 && self.start == 0 {
            0
        } else {
            self.end.wrapping_sub(self.start).wrapping_add(1)
        }
    }
    /// A memory BAR.
    pub fn is_memory(&self) -> bool {
        self.flags & Self::MEM != 0
    }
    /// An I/O port BAR.
    pub fn is_io(&self) -> bool {
        self.flags & Self::IO != 0
    }
    /// A 64-bit memory BAR.
    pub fn is_64bit(&self) -> bool {
        self.flags & Self::MEM_64 != 0
    }
    /// A prefetchable memory BAR.
    pub fn is_prefetchable(&self) -> bool {
        self.flags & Self::PREFETCH != 0
    }
}

/// A PCI function as sysfs describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciDevice {
    /// Its address.
    pub address: PciAddress,
    /// Vendor and device ID.
    pub id: PciId,
    /// Subsystem vendor and subsystem device ID (the board maker's).
    pub subsystem: PciId,
    /// Class code: base class, subclass, programming interface (0x020000 is an Ethernet controller).
    pub class: u32,
    /// Revision ID.
    pub revision: u8,
    /// NUMA node, where the platform says (`None` for -1 or unknown).
    pub numa_node: Option<u32>,
    /// The bound driver (`vfio-pci`, `ixgbe`, ...), if any.
    pub driver: Option<String>,
    /// The `driver_override` setting, if any.
    pub driver_override: Option<String>,
    /// The IOMMU group, if the device has one (no IOMMU: none, unless VFIO's no-IOMMU mode made one).
    pub iommu_group: Option<u32>,
    /// The `resource` lines (BARs first).
    pub resources: Vec<Resource>,
    /// Kernel network interfaces of this function (`eth0`), when a network driver is bound.
    pub net_interfaces: Vec<String>,
    /// The `modalias` (matched against `modules.alias` to find kernel drivers).
    pub modalias: Option<String>,
}

impl PciDevice {
    /// The class is 0x02 (network controller).
    pub fn is_network(&self) -> bool {
        self.class >> 16 == 0x02
    }

    /// BAR `index` (0-5), if implemented.
    pub fn bar(&self, index: usize) -> Option<&Resource> {
        self.resources.iter().find(|r| r.index == index && index < 6 && r.size() != 0)
    }

    /// Bound to a driver that gives the device to user space (vfio-pci, uio_pci_generic, igb_uio).
    pub fn is_userspace_bound(&self) -> bool {
        self.driver.as_deref().is_some_and(is_userspace_driver)
    }
}

/// True for drivers that hand the device to user space.
pub fn is_userspace_driver(name: &str) -> bool {
    matches!(name, "vfio-pci" | "uio_pci_generic" | "igb_uio")
}

/// Whether a network interface is in use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InterfaceState {
    /// Administratively up (`IFF_UP`).
    pub up: bool,
    /// Number of IPv4 and IPv6 routes through it.
    pub routes: usize,
}

impl InterfaceState {
    /// Up or routed: unbinding it would cut traffic.
    pub fn is_active(&self) -> bool {
        self.up || self.routes > 0
    }

    /// "is up", "is up and has 2 routes", "has 1 route".
    pub fn describe(&self) -> String {
        let routes = match self.routes {
            0 => String::new(),
            1 => "has 1 route".to_string(),
            n => format!("has {n} routes"),
        };
        match (self.up, routes.is_empty()) {
            (true, true) => "is up".into(),
            (true, false) => format!("is up and {routes}"),
            (false, _) => routes,
        }
    }
}

/// A hook that performs sysfs writes instead of the file system: tests emulate the kernel with it
/// ([`super::fake::FakeSysfs::sysfs`]). Arguments: the file and the text written.
pub type WriteHook = Arc<dyn Fn(&Path, &str) -> io::Result<()> + Send + Sync>;

/// The PCI part of sysfs (and the few `/proc` files the binding checks read), under chosen roots.
#[derive(Clone)]
pub struct Sysfs {
    root: PathBuf,
    proc_root: PathBuf,
    hook: Option<WriteHook>,
}

impl fmt::Debug for Sysfs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sysfs").field("root", &self.root).field("proc_root", &self.proc_root).finish()
    }
}

impl Default for Sysfs {
    fn default() -> Self {
        Sysfs::system()
    }
}

fn io_err(what: &'static str, path: &Path, source: io::Error) -> PciError {
    PciError::Io { what, path: path.to_path_buf(), source }
}

fn read_text(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|t| t.trim().to_string())
}

fn read_hex(path: &Path) -> Option<u64> {
    let text = read_text(path)?;
    u64::from_str_radix(text.trim_start_matches("0x"), 16).ok()
}

fn link_name(path: &Path) -> Option<String> {
    let target = fs::read_link(path).ok()?;
    Some(target.file_name()?.to_string_lossy().into_owned())
}

impl Sysfs {
    /// The real `/sys` and `/proc`.
    pub fn system() -> Self {
        Sysfs::new("/sys", "/proc")
    }

    /// Sysfs mounted at `root` and procfs at `proc_root` (a fake tree in tests).
    pub fn new(root: impl Into<PathBuf>, proc_root: impl Into<PathBuf>) -> Self {
        Sysfs { root: root.into(), proc_root: proc_root.into(), hook: None }
    }

    /// The same tree, with writes going through `hook` (a kernel emulation in tests).
    pub fn with_write_hook(mut self, hook: WriteHook) -> Self {
        self.hook = Some(hook);
        self
    }

    /// The sysfs root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `ROOT/bus/pci/devices/ADDR`.
    pub fn device_dir(&self, addr: PciAddress) -> PathBuf {
        self.root.join("bus/pci/devices").join(addr.to_string())
    }

    /// `ROOT/bus/pci/drivers/NAME`.
    pub fn driver_dir(&self, driver: &str) -> PathBuf {
        self.root.join("bus/pci/drivers").join(driver)
    }

    /// True when the device exists.
    pub fn exists(&self, addr: PciAddress) -> bool {
        self.device_dir(addr).exists()
    }

    /// Every PCI function, sorted by address.
    pub fn devices(&self) -> Result<Vec<PciDevice>, PciError> {
        let dir = self.root.join("bus/pci/devices");
        let entries = fs::read_dir(&dir).map_err(|e| io_err("listing", &dir, e))?;
        let mut out = Vec::new();
        for entry in entries.flatten() {
            if let Ok(addr) = entry.file_name().to_string_lossy().parse::<PciAddress>() {
                out.push(self.device(addr)?);
            }
        }
        out.sort_by_key(|d| d.address);
        Ok(out)
    }

    /// The device at `addr`.
    pub fn device(&self, addr: PciAddress) -> Result<PciDevice, PciError> {
        let dir = self.device_dir(addr);
        if !dir.exists() {
            return Err(PciError::NoSuchDevice { addr });
        }
        let hex16 = |name: &str| -> Result<u16, PciError> {
            let path = dir.join(name);
            read_hex(&path)
                .and_then(|v| u16::try_from(v).ok())
                .ok_or_else(|| PciError::Parse { text: read_text(&path).unwrap_or_else(|| "<missing>".into()), path })
        };
        let id = PciId { vendor: hex16("vendor")?, device: hex16("device")? };
        let subsystem =
            PciId { vendor: hex16("subsystem_vendor").unwrap_or(0), device: hex16("subsystem_device").unwrap_or(0) };
        let numa_node = read_text(&dir.join("numa_node")).and_then(|t| t.parse::<i64>().ok());
        Ok(PciDevice {
            address: addr,
            id,
            subsystem,
            class: read_hex(&dir.join("class")).unwrap_or(0) as u32,
            revision: read_hex(&dir.join("revision")).unwrap_or(0) as u8,
            numa_node: numa_node.filter(|n| *n >= 0).map(|n| n as u32),
            driver: link_name(&dir.join("driver")),
            driver_override: read_text(&dir.join("driver_override")).filter(|t| !t.is_empty() && t != "(null)"),
            iommu_group: link_name(&dir.join("iommu_group")).and_then(|n| n.parse().ok()),
            resources: parse_resources(&read_text(&dir.join("resource")).unwrap_or_default()),
            net_interfaces: self.interfaces_of(&dir),
            modalias: read_text(&dir.join("modalias")),
        })
    }

    /// Network interfaces of the function at `dir`: `DIR/net/*` (most NICs), `DIR/*/net/*` (virtio-net, whose
    /// interface hangs off the `virtioN` child device), and any `ROOT/class/net/IF/device` that resolves into `DIR`.
    fn interfaces_of(&self, dir: &Path) -> Vec<String> {
        let mut names = list_names(&dir.join("net"));
        if let Ok(children) = fs::read_dir(dir) {
            for child in children.flatten() {
                let path = child.path();
                // Only real child directories (virtio2), not the driver/subsystem/iommu_group links.
                if child.file_type().is_ok_and(|t| t.is_dir()) {
                    names.extend(list_names(&path.join("net")));
                }
            }
        }
        if let Ok(canonical) = fs::canonicalize(dir) {
            for iface in list_names(&self.root.join("class/net")) {
                let link = self.root.join("class/net").join(&iface).join("device");
                if fs::canonicalize(&link).is_ok_and(|target| target.starts_with(&canonical)) {
                    names.push(iface);
                }
            }
        }
        names.sort();
        names.dedup();
        names
    }

    /// True when the driver is registered with the PCI bus (its module is loaded).
    pub fn driver_loaded(&self, driver: &str) -> bool {
        self.driver_dir(driver).is_dir()
    }

    /// The devices in IOMMU group `group` (`ROOT/kernel/iommu_groups/N/devices`).
    pub fn iommu_group_devices(&self, group: u32) -> Vec<PciAddress> {
        let dir = self.root.join(format!("kernel/iommu_groups/{group}/devices"));
        let mut out: Vec<PciAddress> = list_names(&dir).iter().filter_map(|n| n.parse().ok()).collect();
        out.sort();
        out
    }

    /// True when the kernel has an IOMMU in use (any IOMMU group or `/sys/class/iommu` entry).
    pub fn iommu_enabled(&self) -> bool {
        !list_names(&self.root.join("kernel/iommu_groups")).is_empty()
            || !list_names(&self.root.join("class/iommu")).is_empty()
    }

    /// True when VFIO's unsafe no-IOMMU mode is switched on.
    pub fn noiommu_enabled(&self) -> bool {
        read_text(&self.root.join("module/vfio/parameters/enable_unsafe_noiommu_mode"))
            .is_some_and(|t| t == "Y" || t == "1")
    }

    /// Whether network interface `iface` is up and how many routes use it (`/proc/net/route`, `ipv6_route`).
    pub fn interface_state(&self, iface: &str) -> InterfaceState {
        let flags = read_hex(&self.root.join("class/net").join(iface).join("flags")).unwrap_or(0);
        let v4 = read_text(&self.proc_root.join("net/route")).unwrap_or_default();
        let v6 = read_text(&self.proc_root.join("net/ipv6_route")).unwrap_or_default();
        let routes = v4.lines().skip(1).filter(|l| l.split_whitespace().next() == Some(iface)).count()
            + v6.lines().filter(|l| l.split_whitespace().last() == Some(iface) && is_real_v6_route(l)).count();
        InterfaceState { up: flags & 1 != 0, routes }
    }

    /// The first interface of `dev` that is in use, with its state.
    pub fn active_interface(&self, dev: &PciDevice) -> Option<(String, InterfaceState)> {
        dev.net_interfaces.iter().map(|i| (i.clone(), self.interface_state(i))).find(|(_, s)| s.is_active())
    }

    /// Writes `text` to the sysfs file `path` (through the write hook when one is set).
    pub fn write(&self, path: &Path, text: &str) -> Result<(), PciError> {
        let result = match &self.hook {
            Some(hook) => hook(path, text),
            None => fs::OpenOptions::new().write(true).open(path).and_then(|mut f| {
                use io::Write;
                f.write_all(text.as_bytes())
            }),
        };
        result.map_err(|e| io_err("writing", path, e))
    }

    /// Unbinds the device from its driver (nothing to do when it has none). No safety checks: see
    /// the `tools` crate's `devbind` for those.
    pub fn unbind(&self, addr: PciAddress) -> Result<(), PciError> {
        let dev = self.device(addr)?;
        if let Some(driver) = &dev.driver {
            self.write(&self.driver_dir(driver).join("unbind"), &addr.to_string())?;
        }
        Ok(())
    }

    /// Sets (`Some`) or clears (`None`) the device's `driver_override`.
    pub fn set_driver_override(&self, addr: PciAddress, driver: Option<&str>) -> Result<(), PciError> {
        let path = self.device_dir(addr).join("driver_override");
        self.write(&path, driver.unwrap_or("\n"))
    }

    /// Asks the kernel to bind a driver to the device (`ROOT/bus/pci/drivers_probe`).
    pub fn drivers_probe(&self, addr: PciAddress) -> Result<(), PciError> {
        self.write(&self.root.join("bus/pci/drivers_probe"), &addr.to_string())
    }

    /// Binds the device to `driver` the way dpdk-devbind does: unbind from the current driver, set
    /// `driver_override`, `drivers_probe`, clear the override again, and check the result. Returns false when the
    /// device was already bound to `driver`. No safety checks on interfaces in use: see `tools::devbind`.
    pub fn bind(&self, addr: PciAddress, driver: &str) -> Result<bool, PciError> {
        let dev = self.device(addr)?;
        if dev.driver.as_deref() == Some(driver) {
            return Ok(false);
        }
        if !self.driver_loaded(driver) {
            return Err(PciError::DriverNotLoaded { driver: driver.to_string(), module: module_name(driver) });
        }
        self.unbind(addr)?;
        self.set_driver_override(addr, Some(driver))?;
        let probed = self.drivers_probe(addr);
        // Clearing the override lets the device go back to its kernel driver later; a failure to clear is harmless.
        let _ = self.set_driver_override(addr, None);
        probed?;
        let now = self.device(addr)?.driver;
        if now.as_deref() != Some(driver) {
            let hint = if driver == "vfio-pci" && !self.iommu_enabled() && !self.noiommu_enabled() {
                ". No IOMMU is enabled: add intel_iommu=on (or amd_iommu=on) to the kernel command line, or, \
                 accepting unprotected DMA, `echo 1 > /sys/module/vfio/parameters/enable_unsafe_noiommu_mode`"
                    .to_string()
            } else {
                String::new()
            };
            return Err(PciError::BindFailed {
                addr,
                driver: driver.to_string(),
                now: now.unwrap_or_else(|| "no driver".into()),
                hint,
            });
        }
        Ok(true)
    }
}

/// The module that provides a PCI driver (`vfio-pci` is module `vfio-pci`; most are named alike).
fn module_name(driver: &str) -> String {
    driver.to_string()
}

/// An `/proc/net/ipv6_route` line that is a route someone configured: not link-local (fe80::/10), not multicast
/// (ff00::/8), not a host entry for a local address (/128).
fn is_real_v6_route(line: &str) -> bool {
    let mut f = line.split_whitespace();
    let (Some(dest), Some(plen)) = (f.next(), f.next()) else { return false };
    !(dest.starts_with("fe8") || dest.starts_with("ff") || plen == "80")
}

fn list_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = match fs::read_dir(dir) {
        Ok(entries) => entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

/// Parses a sysfs `resource` file: one `0xSTART 0xEND 0xFLAGS` line per resource.
pub(crate) fn parse_resources(text: &str) -> Vec<Resource> {
    text.lines()
        .enumerate()
        .filter_map(|(index, line)| {
            let mut f = line.split_whitespace().map(|t| u64::from_str_radix(t.trim_start_matches("0x"), 16));
            match (f.next(), f.next(), f.next()) {
                (Some(Ok(start)), Some(Ok(end)), Some(Ok(flags))) => Some(Resource { index, start, end, flags }),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_and_interface_states() {
        let r = parse_resources(
            "0x00000000fe000000 0x00000000fe01ffff 0x0000000000040200\n\
             0x0000000000000000 0x0000000000000000 0x0000000000000000\n\
             0x000000000000c000 0x000000000000c01f 0x0000000000040101\n\
             0x0000000800000000 0x0000000800003fff 0x000000000014220c\n",
        );
        assert_eq!(r.len(), 4);
        assert_eq!(r[0].size(), 0x20000);
        assert!(r[0].is_memory() && !r[0].is_64bit());
        assert_eq!(r[1].size(), 0);
        assert!(r[2].is_io());
        assert!(r[3].is_64bit() && r[3].is_prefetchable());
        assert_eq!(InterfaceState { up: true, routes: 2 }.describe(), "is up and has 2 routes");
        assert_eq!(InterfaceState { up: false, routes: 1 }.describe(), "has 1 route");
        assert!(!InterfaceState::default().is_active());
    }
}
