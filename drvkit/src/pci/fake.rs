//! A fake sysfs tree with a small kernel emulation, for tests of anything that reads PCI devices from sysfs or
//! binds them (devbind, VFIO probing, EAL probing).
//!
//! ```
//! use drvkit::pci::fake::{FakeDevice, FakeSysfs};
//! let fake = FakeSysfs::new("doc");
//! fake.add_driver("vfio-pci");
//! fake.add_device(&FakeDevice::net("0000:01:00.0", 0x8086, 0x10fb).driver("ixgbe").iommu_group(12));
//! let sysfs = fake.sysfs(); // writes to unbind/driver_override/drivers_probe act as the kernel would
//! sysfs.bind("0000:01:00.0".parse().unwrap(), "vfio-pci").unwrap();
//! assert_eq!(sysfs.device("01:00.0".parse().unwrap()).unwrap().driver.as_deref(), Some("vfio-pci"));
//! ```

use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::{PciAddress, Sysfs};

/// A device to put in a [`FakeSysfs`].
#[derive(Debug, Clone)]
pub struct FakeDevice {
    /// Its address.
    pub address: PciAddress,
    /// Vendor ID.
    pub vendor: u16,
    /// Device ID.
    pub device: u16,
    /// Class code.
    pub class: u32,
    /// Bound driver.
    pub driver: Option<String>,
    /// IOMMU group.
    pub iommu_group: Option<u32>,
    /// NUMA node (-1 for none).
    pub numa_node: i32,
    /// Network interfaces: name, up.
    pub interfaces: Vec<(String, bool)>,
    /// The `resource` file.
    pub resource: String,
}

impl FakeDevice {
    /// An Ethernet controller (class 0x020000) with one 128 KiB memory BAR, no driver.
    pub fn net(addr: &str, vendor: u16, device: u16) -> Self {
        FakeDevice {
            address: addr.parse().expect("a PCI address"),
            vendor,
            device,
            class: 0x020000,
            driver: None,
            iommu_group: None,
            numa_node: -1,
            interfaces: Vec::new(),
            resource: "0x00000000fe000000 0x00000000fe01ffff 0x0000000000040200\n".into(),
        }
    }

    /// Bound to `driver`.
    pub fn driver(mut self, driver: &str) -> Self {
        self.driver = Some(driver.to_string());
        self
    }

    /// In IOMMU group `group`.
    pub fn iommu_group(mut self, group: u32) -> Self {
        self.iommu_group = Some(group);
        self
    }

    /// With a network interface (shown only while a non-userspace driver is bound).
    pub fn interface(mut self, name: &str, up: bool) -> Self {
        self.interfaces.push((name.to_string(), up));
        self
    }

    /// With this class code.
    pub fn class(mut self, class: u32) -> Self {
        self.class = class;
        self
    }

    /// On NUMA node `node`.
    pub fn numa_node(mut self, node: i32) -> Self {
        self.numa_node = node;
        self
    }
}

/// A temporary directory holding `sys/` and `proc/` trees. Removed on drop.
#[derive(Debug)]
pub struct FakeSysfs {
    dir: PathBuf,
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

fn w(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("fake sysfs dir");
    }
    fs::write(path, text).expect("fake sysfs file");
}

impl FakeSysfs {
    /// An empty tree under the system temp directory; `tag` makes the name readable.
    pub fn new(tag: &str) -> Self {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("pktio-fake-sysfs-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("sys/bus/pci/devices")).expect("fake sysfs");
        fs::create_dir_all(dir.join("sys/bus/pci/drivers")).expect("fake sysfs");
        fs::create_dir_all(dir.join("sys/kernel/iommu_groups")).expect("fake sysfs");
        fs::create_dir_all(dir.join("sys/class/net")).expect("fake sysfs");
        w(&dir.join("sys/bus/pci/drivers_probe"), "");
        w(&dir.join("proc/net/route"), "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n");
        w(&dir.join("proc/net/ipv6_route"), "");
        FakeSysfs { dir }
    }

    /// The sysfs root (`.../sys`).
    pub fn root(&self) -> PathBuf {
        self.dir.join("sys")
    }

    /// The procfs root (`.../proc`).
    pub fn proc_root(&self) -> PathBuf {
        self.dir.join("proc")
    }

    /// A [`Sysfs`] over this tree whose writes act like the kernel: `unbind` drops the driver link,
    /// `driver_override` is stored, `drivers_probe` binds the override (or, without one, the driver the device
    /// had first), `drivers/NAME/bind` binds.
    pub fn sysfs(&self) -> Sysfs {
        let root = self.root();
        Sysfs::new(self.root(), self.proc_root())
            .with_write_hook(Arc::new(move |path, text| emulate(&root, path, text)))
    }

    /// A [`Sysfs`] whose writes only land in the files (nothing reacts, as when the kernel refuses silently).
    pub fn sysfs_inert(&self) -> Sysfs {
        Sysfs::new(self.root(), self.proc_root())
    }

    /// Registers a driver (`bus/pci/drivers/NAME` with `bind`/`unbind`).
    pub fn add_driver(&self, name: &str) {
        let d = self.root().join("bus/pci/drivers").join(name);
        w(&d.join("bind"), "");
        w(&d.join("unbind"), "");
        w(&d.join("new_id"), "");
    }

    /// Adds a device (and its driver, group and interfaces).
    pub fn add_device(&self, dev: &FakeDevice) {
        let root = self.root();
        let addr = dev.address.to_string();
        let d = root.join("bus/pci/devices").join(&addr);
        w(&d.join("vendor"), &format!("0x{:04x}\n", dev.vendor));
        w(&d.join("device"), &format!("0x{:04x}\n", dev.device));
        w(&d.join("subsystem_vendor"), &format!("0x{:04x}\n", dev.vendor));
        w(&d.join("subsystem_device"), "0x0000\n");
        w(&d.join("class"), &format!("0x{:06x}\n", dev.class));
        w(&d.join("revision"), "0x01\n");
        w(&d.join("numa_node"), &format!("{}\n", dev.numa_node));
        w(&d.join("driver_override"), "(null)\n");
        w(&d.join("resource"), &dev.resource);
        w(&d.join("modalias"), &format!("pci:v{:08X}d{:08X}sv*sd*bc02sc00i00\n", dev.vendor, dev.device));
        if let Some(g) = dev.iommu_group {
            let gdir = root.join(format!("kernel/iommu_groups/{g}"));
            fs::create_dir_all(gdir.join("devices")).expect("fake sysfs");
            let _ = symlink(&gdir, d.join("iommu_group"));
            let _ = symlink(&d, gdir.join("devices").join(&addr));
        }
        for (name, up) in &dev.interfaces {
            w(&root.join("class/net").join(name).join("flags"), if *up { "0x1003\n" } else { "0x1002\n" });
        }
        // Remember the interfaces and the first driver so that the emulation can restore them.
        let meta: Vec<String> = dev.interfaces.iter().map(|(n, _)| n.clone()).collect();
        w(&d.join(".fake_interfaces"), &meta.join("\n"));
        w(&d.join(".fake_default_driver"), dev.driver.as_deref().unwrap_or(""));
        if let Some(driver) = &dev.driver {
            self.add_driver(driver);
            link_driver(&root, &addr, driver).expect("fake sysfs link");
        }
    }

    /// Adds an IPv4 route through `iface` to `/proc/net/route`.
    pub fn add_route(&self, iface: &str) {
        let path = self.proc_root().join("net/route");
        let mut text = fs::read_to_string(&path).unwrap_or_default();
        text.push_str(&format!("{iface}\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\n"));
        w(&path, &text);
    }

    /// Switches VFIO's no-IOMMU mode parameter on.
    pub fn enable_noiommu(&self) {
        w(&self.root().join("module/vfio/parameters/enable_unsafe_noiommu_mode"), "Y\n");
    }
}

impl Drop for FakeSysfs {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn link_driver(root: &Path, addr: &str, driver: &str) -> io::Result<()> {
    let d = root.join("bus/pci/devices").join(addr);
    let drv = root.join("bus/pci/drivers").join(driver);
    let _ = fs::remove_file(d.join("driver"));
    symlink(&drv, d.join("driver"))?;
    let _ = symlink(&d, drv.join(addr));
    // A kernel network driver brings its interfaces; a userspace driver takes them away.
    let names = fs::read_to_string(d.join(".fake_interfaces")).unwrap_or_default();
    for name in names.lines().filter(|n| !n.is_empty()) {
        if super::sysfs::is_userspace_driver(driver) {
            let _ = fs::remove_dir_all(d.join("net").join(name));
        } else {
            fs::create_dir_all(d.join("net").join(name))?;
        }
    }
    Ok(())
}

fn unlink_driver(root: &Path, addr: &str) -> io::Result<()> {
    let d = root.join("bus/pci/devices").join(addr);
    if let Ok(target) = fs::read_link(d.join("driver")) {
        let _ = fs::remove_file(target.join(addr));
    }
    let _ = fs::remove_file(d.join("driver"));
    let _ = fs::remove_dir_all(d.join("net"));
    Ok(())
}

fn emulate(root: &Path, path: &Path, text: &str) -> io::Result<()> {
    fs::write(path, text)?;
    let value = text.trim();
    let rel = path.strip_prefix(root).map_err(|_| io::Error::other("write outside the fake sysfs"))?;
    let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let device_exists = |addr: &str| root.join("bus/pci/devices").join(addr).is_dir();
    match parts.as_slice() {
        ["bus", "pci", "drivers", driver, "unbind"] => {
            let d = root.join("bus/pci/devices").join(value);
            if fs::read_link(d.join("driver")).ok().and_then(|t| t.file_name().map(|n| n == *driver)) != Some(true) {
                return Err(io::Error::from_raw_os_error(libc::ENODEV));
            }
            unlink_driver(root, value)
        }
        ["bus", "pci", "drivers", driver, "bind"] => {
            if !device_exists(value) {
                return Err(io::Error::from_raw_os_error(libc::ENODEV));
            }
            link_driver(root, value, driver)
        }
        ["bus", "pci", "devices", _, "driver_override"] => Ok(()),
        ["bus", "pci", "drivers_probe"] => {
            let d = root.join("bus/pci/devices").join(value);
            if !device_exists(value) {
                return Err(io::Error::from_raw_os_error(libc::ENODEV));
            }
            if d.join("driver").exists() {
                return Ok(());
            }
            let ovr = fs::read_to_string(d.join("driver_override")).unwrap_or_default();
            let ovr = ovr.trim();
            let target = if !ovr.is_empty() && ovr != "(null)" {
                ovr.to_string()
            } else {
                fs::read_to_string(d.join(".fake_default_driver")).unwrap_or_default().trim().to_string()
            };
            if !target.is_empty() && root.join("bus/pci/drivers").join(&target).is_dir() {
                link_driver(root, value, &target)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
