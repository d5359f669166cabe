//! The readiness check behind `pktio-doctor`: is this machine ready to drive a NIC from user space, and if not,
//! which exact command fixes each problem?
//!
//! ```text
//! pktio-doctor 0000:01:00.0
//!   ok    iommu        IOMMU on: 17 groups
//!   FAIL  vfio-pci     the vfio-pci driver is not loaded
//!         fix: modprobe vfio-pci
//!   ...
//! ```
//!
//! Machine-wide items: the IOMMU (or VFIO's no-IOMMU mode), the vfio-pci driver and `/dev/vfio/vfio`, reserved
//! and mounted hugepages, the locked-memory limit that VFIO DMA mapping counts against. Per device: it exists, a
//! driver of this build claims its IDs, it is bound to vfio-pci, its IOMMU group is viable (every member bound to
//! vfio-pci, or to nothing) and has its `/dev/vfio` node, and no other process holds that group open.
//!
//! Everything is read under three roots (sysfs, procfs, `/dev`), so tests run against fake trees; nothing is
//! changed. Not checked: link state and cabling, firmware versions, NUMA placement of memory versus the device.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use drvkit::pci::{is_userspace_driver, PciAddress, PciDevice, Sysfs};
use pktio::driver::Registry;

/// The usage text.
pub const USAGE: &str = "\
Usage: pktio-doctor [OPTIONS] [ADDR...]

Checks that this machine is ready to drive NICs from user space, and prints the command that fixes each
problem: IOMMU, vfio-pci, hugepages, the locked-memory limit, and for each device ADDR (default: every device
bound to vfio-pci) its driver, binding, IOMMU group and whether another process holds it.

  -h, --help             this text

ADDR is a PCI address (0000:01:00.0 or 01:00.0). Exit status: 0 ready, 1 something to fix, 2 usage.

Testing:
      --sysfs-root DIR   read DIR instead of /sys
      --proc-root DIR    read DIR instead of /proc
      --dev-root DIR     read DIR instead of /dev";

/// Where the check looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// sysfs (`/sys`).
    pub sysfs: PathBuf,
    /// procfs (`/proc`): `cmdline`, `cpuinfo`, `mounts`, `self/limits`, `self/status`, `PID/fd`.
    pub proc: PathBuf,
    /// devtmpfs (`/dev`): `vfio/vfio`, `vfio/GROUP`.
    pub dev: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots { sysfs: "/sys".into(), proc: "/proc".into(), dev: "/dev".into() }
    }
}

/// What an item is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// The IOMMU (or VFIO's no-IOMMU mode).
    Iommu,
    /// The vfio-pci driver and `/dev/vfio/vfio`.
    VfioPci,
    /// Reserved hugepages.
    Hugepages,
    /// A hugetlbfs mount.
    Hugetlbfs,
    /// `RLIMIT_MEMLOCK`.
    Memlock,
    /// Which devices are checked (none given and none bound).
    Devices,
    /// The device exists.
    Device(PciAddress),
    /// A driver of this build claims the device.
    Supported(PciAddress),
    /// The device is bound to vfio-pci.
    Bound(PciAddress),
    /// The device's IOMMU group is viable and has its `/dev/vfio` node.
    Group(PciAddress),
    /// No other process has the device's group open.
    InUse(PciAddress),
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Iommu => f.write_str("iommu"),
            Item::VfioPci => f.write_str("vfio-pci"),
            Item::Hugepages => f.write_str("hugepages"),
            Item::Hugetlbfs => f.write_str("hugetlbfs"),
            Item::Memlock => f.write_str("memlock"),
            Item::Devices => f.write_str("devices"),
            Item::Device(a) => write!(f, "{a} device"),
            Item::Supported(a) => write!(f, "{a} driver"),
            Item::Bound(a) => write!(f, "{a} bound"),
            Item::Group(a) => write!(f, "{a} group"),
            Item::InUse(a) => write!(f, "{a} in use"),
        }
    }
}

/// How an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Ready.
    Ok,
    /// Works, with a caveat (no-IOMMU mode, no device given).
    Warn,
    /// Must be fixed first.
    Fail,
}

/// One checked item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What was checked.
    pub item: Item,
    /// The verdict.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// The command (or commands) that fix it, for warnings and failures.
    pub fix: Option<String>,
}

impl Finding {
    fn ok(item: Item, detail: impl Into<String>) -> Self {
        Finding { item, status: Status::Ok, detail: detail.into(), fix: None }
    }
    fn warn(item: Item, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Finding { item, status: Status::Warn, detail: detail.into(), fix: Some(fix.into()) }
    }
    fn fail(item: Item, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Finding { item, status: Status::Fail, detail: detail.into(), fix: Some(fix.into()) }
    }
}

/// Drivers that leave an IOMMU group viable for VFIO besides vfio-pci itself: bridges' port driver and pci-stub.
fn harmless_in_group(driver: &str) -> bool {
    matches!(driver, "vfio-pci" | "pcieport" | "pci-stub")
}

fn read(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok()
}

/// The checker.
#[derive(Debug)]
pub struct Doctor<'a> {
    roots: Roots,
    sysfs: Sysfs,
    registry: &'a Registry,
}

impl<'a> Doctor<'a> {
    /// A checker over `roots` that judges devices against the drivers in `registry`.
    pub fn new(roots: Roots, registry: &'a Registry) -> Self {
        let sysfs = Sysfs::new(&roots.sysfs, &roots.proc);
        Doctor { roots, sysfs, registry }
    }

    /// Every item: machine-wide first, then each device in `devices` (or, when empty, each bound to vfio-pci).
    pub fn check(&self, devices: &[PciAddress]) -> Vec<Finding> {
        let mut out = vec![self.iommu(), self.vfio_pci()];
        out.extend(self.hugepages());
        out.push(self.memlock());
        let devices = if devices.is_empty() {
            let bound: Vec<PciAddress> = self
                .sysfs
                .devices()
                .unwrap_or_default()
                .into_iter()
                .filter(|d| d.driver.as_deref() == Some("vfio-pci"))
                .map(|d| d.address)
                .collect();
            if bound.is_empty() {
                out.push(Finding::warn(
                    Item::Devices,
                    "no device is bound to vfio-pci and none was named, so no device was checked",
                    "devbind --status   # then: pktio-doctor ADDR",
                ));
            }
            bound
        } else {
            devices.to_vec()
        };
        for addr in devices {
            out.extend(self.device(addr));
        }
        out
    }

    fn cpu_vendor_param(&self) -> &'static str {
        let cpuinfo = read(&self.roots.proc.join("cpuinfo")).unwrap_or_default();
        if cpuinfo.contains("AuthenticAMD") {
            "amd_iommu=on"
        } else {
            "intel_iommu=on"
        }
    }

    /// The IOMMU: groups present, else no-IOMMU mode (a warning), else the kernel command line to fix.
    pub fn iommu(&self) -> Finding {
        let groups = fs::read_dir(self.roots.sysfs.join("kernel/iommu_groups")).map(|d| d.count()).unwrap_or(0);
        if self.sysfs.iommu_enabled() {
            return Finding::ok(Item::Iommu, format!("IOMMU on: {groups} groups"));
        }
        if self.sysfs.noiommu_enabled() {
            return Finding::warn(
                Item::Iommu,
                "no IOMMU; VFIO's unsafe no-IOMMU mode is on: devices can DMA anywhere in memory, and pktio needs \
                 hugepages with --iova-mode pa",
                format!(
                    "for isolation, enable the IOMMU: add {} iommu=pt to GRUB_CMDLINE_LINUX in /etc/default/grub, \
                     then update-grub && reboot",
                    self.cpu_vendor_param()
                ),
            );
        }
        let cmdline = read(&self.roots.proc.join("cmdline")).unwrap_or_default();
        let param = self.cpu_vendor_param();
        let has_param = cmdline.split_whitespace().any(|w| w == "intel_iommu=on" || w == "amd_iommu=on");
        if has_param {
            Finding::fail(
                Item::Iommu,
                "the kernel command line asks for the IOMMU but there are no IOMMU groups: the firmware has it off",
                "enable VT-d (Intel) or AMD-Vi/IOMMU in the firmware setup, then reboot; or, without isolation: \
                 modprobe vfio enable_unsafe_noiommu_mode=1",
            )
        } else {
            Finding::fail(
                Item::Iommu,
                format!("no IOMMU groups, and {param} is not on the kernel command line"),
                format!(
                    "add {param} iommu=pt to GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub && reboot; \
                     or, without isolation: modprobe vfio enable_unsafe_noiommu_mode=1"
                ),
            )
        }
    }

    /// The vfio-pci driver and the VFIO container device.
    pub fn vfio_pci(&self) -> Finding {
        if !self.sysfs.driver_loaded("vfio-pci") {
            return Finding::fail(Item::VfioPci, "the vfio-pci driver is not loaded", "modprobe vfio-pci");
        }
        let container = self.roots.dev.join("vfio/vfio");
        if !container.exists() {
            return Finding::fail(
                Item::VfioPci,
                format!("vfio-pci is loaded but {} is missing", container.display()),
                "modprobe vfio && udevadm trigger   # or: mknod /dev/vfio/vfio c 10 196",
            );
        }
        Finding::ok(Item::VfioPci, "vfio-pci loaded, /dev/vfio/vfio present")
    }

    /// Reserved hugepages (any size) and a hugetlbfs mount.
    pub fn hugepages(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        let sizes = hugepage::sysfs::page_sizes(&self.roots.sysfs).unwrap_or_default();
        let counts: Vec<_> =
            sizes.iter().filter_map(|s| hugepage::sysfs::system_hugepages(&self.roots.sysfs, *s).ok()).collect();
        let reserved: Vec<String> = counts
            .iter()
            .filter(|c| c.total > 0)
            .map(|c| format!("{} x {} ({} free)", c.total, c.size, c.free))
            .collect();
        let free: usize = counts.iter().map(|c| c.available()).sum();
        out.push(if reserved.is_empty() {
            Finding::fail(
                Item::Hugepages,
                "no hugepages reserved (packet buffers and rings need them; --no-huge suits software ports only)",
                "hugepages --setup 1G",
            )
        } else if free == 0 {
            Finding::fail(
                Item::Hugepages,
                format!("hugepages reserved but none free: {}", reserved.join(", ")),
                "stop the process holding them (grep -l huge /proc/*/maps), or reserve more: hugepages --setup 2G",
            )
        } else {
            Finding::ok(Item::Hugepages, format!("reserved: {}", reserved.join(", ")))
        });
        let mounts = hugepage::sysfs::hugetlbfs_mounts_in(&self.roots.proc.join("mounts")).unwrap_or_default();
        out.push(if mounts.is_empty() {
            Finding::fail(Item::Hugetlbfs, "no hugetlbfs is mounted", "hugepages --mount   # on /dev/hugepages")
        } else {
            let list: Vec<String> = mounts.iter().map(|m| format!("{} ({})", m.path.display(), m.page_size)).collect();
            Finding::ok(Item::Hugetlbfs, format!("mounted: {}", list.join(", ")))
        });
        out
    }

    /// The locked-memory limit: VFIO pins every DMA-mapped page and counts it against `RLIMIT_MEMLOCK`, unless the
    /// process has `CAP_IPC_LOCK` (root does).
    pub fn memlock(&self) -> Finding {
        let status = read(&self.roots.proc.join("self/status")).unwrap_or_default();
        let euid = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|v| v.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u32>().ok());
        let limits = read(&self.roots.proc.join("self/limits")).unwrap_or_default();
        let soft = limits
            .lines()
            .find_map(|l| l.strip_prefix("Max locked memory"))
            .and_then(|v| v.split_whitespace().next().map(str::to_string));
        let bytes = match soft.as_deref() {
            Some("unlimited") => u64::MAX,
            Some(v) => v.parse().unwrap_or(0),
            None => 0,
        };
        let shown = if bytes == u64::MAX { "unlimited".to_string() } else { format!("{} KiB", bytes >> 10) };
        if euid == Some(0) {
            return Finding::ok(
                Item::Memlock,
                format!("running as root (CAP_IPC_LOCK): the limit ({shown}) does not apply"),
            );
        }
        // Room for the default pool and rings of two ports, with margin.
        const ENOUGH: u64 = 1 << 30;
        if bytes >= ENOUGH {
            Finding::ok(Item::Memlock, format!("locked-memory limit {shown}"))
        } else {
            Finding::fail(
                Item::Memlock,
                format!("locked-memory limit {shown}: VFIO DMA mapping of the hugepages will fail with ENOMEM"),
                "ulimit -l unlimited   # as root, in the shell that starts the app; for good: \
                 add '<user> - memlock unlimited' to /etc/security/limits.conf",
            )
        }
    }

    /// The items of one device.
    pub fn device(&self, addr: PciAddress) -> Vec<Finding> {
        let dev = match self.sysfs.device(addr) {
            Ok(d) => d,
            Err(e) => {
                return vec![Finding::fail(Item::Device(addr), e.to_string(), "devbind --status   # lists the NICs")]
            }
        };
        let mut out = vec![Finding::ok(Item::Device(addr), format!("{} class {:06x}", dev.id, dev.class))];
        out.push(self.supported(&dev));
        out.push(self.bound(&dev));
        if let Some(group) = self.group(&dev) {
            out.push(group);
        }
        out.push(self.in_use(&dev));
        out
    }

    fn supported(&self, dev: &PciDevice) -> Finding {
        let addr = dev.address;
        match self.registry.pci_driver_for(dev.id) {
            Some(d) => Finding::ok(Item::Supported(addr), format!("{} drives {}", d.name, dev.id)),
            None => {
                let iface = dev.net_interfaces.first().map(String::as_str).unwrap_or("IFACE");
                let known = match self.registry.describe_pci() {
                    k if k.is_empty() => "this build has no PCI driver".to_string(),
                    k => format!("supported: {k}"),
                };
                Finding::fail(
                    Item::Supported(addr),
                    format!("no driver in this build claims {} ({known})", dev.id),
                    format!(
                        "use a supported NIC, or reach this one through its kernel driver: \
                         devbind -b KERNEL_DRIVER {addr} and --vdev net_af_packet0,iface={iface}"
                    ),
                )
            }
        }
    }

    fn bound(&self, dev: &PciDevice) -> Finding {
        let addr = dev.address;
        match dev.driver.as_deref() {
            Some("vfio-pci") => Finding::ok(Item::Bound(addr), "bound to vfio-pci"),
            other => {
                let now = other.map(|d| format!("bound to {d}")).unwrap_or_else(|| "bound to no driver".into());
                let fix = match self.sysfs.active_interface(dev) {
                    Some((iface, _)) => format!("ip link set {iface} down && devbind -b vfio-pci {addr}"),
                    None => format!("devbind -b vfio-pci {addr}"),
                };
                let hint = if other.is_some_and(is_userspace_driver) { " (pktio uses vfio-pci only)" } else { "" };
                Finding::fail(Item::Bound(addr), format!("{now}{hint}"), fix)
            }
        }
    }

    /// `None` when the device has no group and the IOMMU item already says why.
    fn group(&self, dev: &PciDevice) -> Option<Finding> {
        let addr = dev.address;
        let Some(group) = dev.iommu_group else {
            if !self.sysfs.iommu_enabled() {
                return None;
            }
            return Some(Finding::fail(
                Item::Group(addr),
                "the IOMMU is on but the device has no IOMMU group",
                "check dmesg | grep -i -e DMAR -e IOMMU for why the IOMMU skipped this device",
            ));
        };
        let blockers: Vec<(PciAddress, String)> = self
            .sysfs
            .iommu_group_devices(group)
            .into_iter()
            .filter(|a| *a != addr)
            .filter_map(|a| {
                let d = self.sysfs.device(a).ok()?.driver?;
                (!harmless_in_group(&d)).then_some((a, d))
            })
            .collect();
        if !blockers.is_empty() {
            let list: Vec<String> = blockers.iter().map(|(a, d)| format!("{a} ({d})")).collect();
            let addrs: Vec<String> = blockers.iter().map(|(a, _)| a.to_string()).collect();
            return Some(Finding::fail(
                Item::Group(addr),
                format!(
                    "IOMMU group {group} is not viable: {} must be bound to vfio-pci or to nothing",
                    list.join(", ")
                ),
                format!("devbind -b vfio-pci {}", addrs.join(" ")),
            ));
        }
        let node = self.group_node(group);
        if dev.driver.as_deref() == Some("vfio-pci") && node.is_none() {
            return Some(Finding::fail(
                Item::Group(addr),
                format!("IOMMU group {group} has no {}", self.roots.dev.join("vfio").join(group.to_string()).display()),
                format!("devbind -u {addr} && devbind -b vfio-pci {addr}   # vfio-pci creates it on bind"),
            ));
        }
        Some(Finding::ok(Item::Group(addr), format!("IOMMU group {group} viable")))
    }

    /// `/dev/vfio/N`, or `/dev/vfio/noiommu-N` in no-IOMMU mode.
    fn group_node(&self, group: u32) -> Option<PathBuf> {
        let dir = self.roots.dev.join("vfio");
        [dir.join(group.to_string()), dir.join(format!("noiommu-{group}"))].into_iter().find(|p| p.exists())
    }

    fn in_use(&self, dev: &PciDevice) -> Finding {
        let addr = dev.address;
        let Some(node) = dev.iommu_group.and_then(|g| self.group_node(g)) else {
            return Finding::ok(Item::InUse(addr), "no process holds it (no /dev/vfio node yet)");
        };
        let holders = self.holders(&node);
        if holders.is_empty() {
            return Finding::ok(Item::InUse(addr), "no other process has its group open");
        }
        let list: Vec<String> = holders.iter().map(|(pid, comm)| format!("{pid} ({comm})")).collect();
        let pids: Vec<String> = holders.iter().map(|(pid, _)| pid.to_string()).collect();
        Finding::fail(
            Item::InUse(addr),
            format!("{} is open in process {}: VFIO lets one process own a group", node.display(), list.join(", ")),
            format!("kill {}   # or quit that app first", pids.join(" ")),
        )
    }

    /// Processes (other than this one) with `node` open: `PROC/PID/fd/*` links pointing to it.
    fn holders(&self, node: &Path) -> Vec<(u32, String)> {
        let me = std::process::id();
        let Ok(entries) = fs::read_dir(&self.roots.proc) else { return Vec::new() };
        let mut out: Vec<(u32, String)> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| *pid != me)
            .filter(|pid| {
                let fds = fs::read_dir(self.roots.proc.join(pid.to_string()).join("fd"));
                fds.map(|d| d.flatten().any(|fd| fs::read_link(fd.path()).is_ok_and(|t| t == node))).unwrap_or(false)
            })
            .map(|pid| {
                let comm = read(&self.roots.proc.join(pid.to_string()).join("comm")).unwrap_or_default();
                (pid, comm.trim().to_string())
            })
            .collect();
        out.sort();
        out
    }
}

/// Writes the findings, one line each and the fix under it; returns the worst status.
pub fn report(findings: &[Finding], out: &mut dyn Write) -> io::Result<Status> {
    let width = findings.iter().map(|f| f.item.to_string().len()).max().unwrap_or(0);
    for f in findings {
        let tag = match f.status {
            Status::Ok => "ok  ",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        };
        writeln!(out, "  {tag}  {:<width$}  {}", f.item.to_string(), f.detail)?;
        if let Some(fix) = &f.fix {
            writeln!(out, "        {:<width$}  fix: {fix}", "")?;
        }
    }
    let worst = findings.iter().map(|f| f.status).max().unwrap_or(Status::Ok);
    writeln!(
        out,
        "{}",
        match worst {
            Status::Ok => "ready",
            Status::Warn => "ready, with the warnings above",
            Status::Fail => "not ready: run the fixes above, in order, then check again",
        }
    )?;
    Ok(worst)
}

/// The whole tool: parses `args` (without the program name), checks, prints. Returns the exit code (0 ready or
/// only warnings, 1 something to fix, 2 usage).
pub fn main_with(registry: &Registry, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut roots = Roots::default();
    let mut devices = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| it.next().cloned());
        let target = match name {
            "-h" | "--help" => {
                let _ = writeln!(out, "{USAGE}");
                return 0;
            }
            "--sysfs-root" => &mut roots.sysfs,
            "--proc-root" => &mut roots.proc,
            "--dev-root" => &mut roots.dev,
            s if s.starts_with('-') => {
                let _ = writeln!(err, "pktio-doctor: unknown option {s}\n\n{USAGE}");
                return 2;
            }
            _ => match arg.parse::<PciAddress>() {
                Ok(a) => {
                    devices.push(a);
                    continue;
                }
                Err(e) => {
                    let _ = writeln!(err, "pktio-doctor: {arg}: {e}");
                    return 2;
                }
            },
        };
        match value() {
            Some(v) => *target = v.into(),
            None => {
                let _ = writeln!(err, "pktio-doctor: {name} needs a directory");
                return 2;
            }
        }
    }
    let findings = Doctor::new(roots, registry).check(&devices);
    match report(&findings, out) {
        Ok(Status::Fail) => 1,
        Ok(_) => 0,
        Err(e) => {
            let _ = writeln!(err, "pktio-doctor: {e}");
            1
        }
    }
}
