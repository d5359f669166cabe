//! The `devbind` tool, in the spirit of `dpdk-devbind.py`: show which network devices user space can drive, bind
//! them to vfio-pci, unbind them, and give them back to their kernel driver.
//!
//! ```text
//! devbind --status
//! devbind -b vfio-pci 0000:01:00.0 0000:01:00.1
//! devbind -u 0000:01:00.0
//! devbind -b ixgbe 0000:01:00.0
//! ```
//!
//! A device whose network interface is up or carries routes is left alone unless `--force`: unbinding it would
//! cut the machine's traffic (perhaps the SSH session running the command). All of it works against any sysfs
//! root ([`Devbind::sysfs`]), so tests use a fake tree.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use drvkit::pci::{is_userspace_driver, PciAddress, PciDevice, PciError, Sysfs};

/// The usage text.
pub const USAGE: &str = "\
Usage: devbind [OPTIONS] [--status | -b DRIVER ADDR... | -u ADDR...]

Show and change which driver owns PCI network devices.

  -s, --status           show network devices and their drivers (the default)
  -b, --bind DRIVER      bind the devices to DRIVER: vfio-pci for pktio, or a kernel driver (ixgbe, i40e,
                         virtio-pci, ...) to give them back to the kernel
  -u, --unbind           unbind the devices from their driver
      --force            also unbind devices whose network interface is up or has routes
  -h, --help             this text

ADDR is a PCI address (0000:01:00.0 or 01:00.0) or a network interface name (eth1).
Binding needs root. Examples:
  devbind -b vfio-pci 0000:01:00.0
  devbind -b ixgbe 0000:01:00.0";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `--status`.
    Status,
    /// `-b DRIVER ADDR...`.
    Bind {
        /// The driver.
        driver: String,
        /// The devices (addresses or interface names).
        devices: Vec<String>,
    },
    /// `-u ADDR...`.
    Unbind {
        /// The devices.
        devices: Vec<String>,
    },
    /// `-h`.
    Help,
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// What to do.
    pub action: Action,
    /// `--force`.
    pub force: bool,
    /// `--sysfs-root DIR` (tests; default `/sys`).
    pub sysfs_root: Option<PathBuf>,
    /// `--proc-root DIR` (tests; default `/proc`).
    pub proc_root: Option<PathBuf>,
    /// `--pci-ids FILE` (default: `/usr/share/misc/pci.ids` or `/usr/share/hwdata/pci.ids`; `none` to skip).
    pub pci_ids: Option<PathBuf>,
    /// `--modules-alias FILE` (default: `/lib/modules/$(uname -r)/modules.alias`; `none` to skip).
    pub modules_alias: Option<PathBuf>,
}

/// Parses the arguments (without the program name).
pub fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut out = Args {
        action: Action::Status,
        force: false,
        sysfs_root: None,
        proc_root: None,
        pci_ids: None,
        modules_alias: None,
    };
    let mut bind: Option<String> = None;
    let mut unbind = false;
    let mut status = false;
    let mut devices = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            inline.clone().or_else(|| it.next().cloned()).ok_or_else(|| format!("{what} needs a value\n\n{USAGE}"))
        };
        match name {
            "-h" | "--help" => out.action = Action::Help,
            "-s" | "--status" => status = true,
            "--status-dev" => {
                let class = value("--status-dev")?;
                if class != "net" {
                    return Err(format!("--status-dev {class}: only network devices (net) are shown"));
                }
                status = true;
            }
            "-b" | "--bind" => bind = Some(value("--bind")?),
            "-u" | "--unbind" => unbind = true,
            "--force" => out.force = true,
            "--sysfs-root" => out.sysfs_root = Some(value("--sysfs-root")?.into()),
            "--proc-root" => out.proc_root = Some(value("--proc-root")?.into()),
            "--pci-ids" => out.pci_ids = Some(value("--pci-ids")?.into()),
            "--modules-alias" => out.modules_alias = Some(value("--modules-alias")?.into()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}\n\n{USAGE}")),
            _ => devices.push(arg.clone()),
        }
    }
    if out.action == Action::Help {
        return Ok(out);
    }
    out.action = match (bind, unbind) {
        (Some(_), true) => return Err("choose one of -b and -u".into()),
        (Some(driver), false) => Action::Bind { driver, devices },
        (None, true) => Action::Unbind { devices },
        (None, false) => {
            if !devices.is_empty() {
                return Err(format!("devices given without -b or -u: {}\n\n{USAGE}", devices.join(" ")));
            }
            let _ = status;
            Action::Status
        }
    };
    if let Action::Bind { devices, .. } | Action::Unbind { devices } = &out.action {
        if devices.is_empty() {
            return Err(format!("no device given\n\n{USAGE}"));
        }
    }
    Ok(out)
}

/// Device names from a `pci.ids` file.
#[derive(Debug, Default)]
pub struct PciIds {
    names: std::collections::HashMap<(u16, u16), String>,
}

impl PciIds {
    /// Loads the device names of the vendors in `wanted` from `path` (missing file: no names).
    pub fn load(path: &Path, wanted: &BTreeSet<u16>) -> PciIds {
        let mut names = std::collections::HashMap::new();
        let Ok(text) = fs::read(path) else { return PciIds { names } };
        let text = String::from_utf8_lossy(&text);
        let mut vendor: Option<u16> = None;
        for line in text.lines() {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix('\t') {
                if rest.starts_with('\t') {
                    continue; // subsystem line
                }
                if let Some(v) = vendor {
                    if let Some((id, name)) = rest.split_once("  ") {
                        if let Ok(id) = u16::from_str_radix(id.trim(), 16) {
                            names.insert((v, id), name.trim().to_string());
                        }
                    }
                }
            } else if line.starts_with('C') && line.as_bytes().get(1) == Some(&b' ') {
                break; // the class list follows the vendors
            } else {
                vendor = line
                    .split_once("  ")
                    .and_then(|(id, _)| u16::from_str_radix(id.trim(), 16).ok())
                    .filter(|v| wanted.contains(v));
            }
        }
        PciIds { names }
    }

    /// The name of a device, if known.
    pub fn device_name(&self, vendor: u16, device: u16) -> Option<&str> {
        self.names.get(&(vendor, device)).map(String::as_str)
    }
}

/// Kernel modules whose aliases match a modalias (`modules.alias`).
#[derive(Debug, Default)]
pub struct ModuleAliases {
    aliases: Vec<(String, String)>,
}

impl ModuleAliases {
    /// Loads the `pci:` aliases from `path` (missing file: none).
    pub fn load(path: &Path) -> ModuleAliases {
        let text = fs::read_to_string(path).unwrap_or_default();
        let aliases = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                match (f.next(), f.next(), f.next()) {
                    (Some("alias"), Some(pattern), Some(module)) if pattern.starts_with("pci:") => {
                        Some((pattern.to_string(), module.to_string()))
                    }
                    _ => None,
                }
            })
            .collect();
        ModuleAliases { aliases }
    }

    /// The modules whose alias pattern matches `modalias`, sorted, without duplicates.
    pub fn modules_for(&self, modalias: &str) -> Vec<String> {
        let set: BTreeSet<String> =
            self.aliases.iter().filter(|(p, _)| glob_match(p, modalias)).map(|(_, m)| m.clone()).collect();
        set.into_iter().collect()
    }
}

/// Matches `text` against a pattern with `*` (any run) and `?` (any one character).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == b'*')
}

/// The tool, over a sysfs tree and the optional name and alias databases.
#[derive(Debug)]
pub struct Devbind {
    /// Where devices are read and bound.
    pub sysfs: Sysfs,
    /// Device names for `--status`.
    pub pci_ids: Option<PathBuf>,
    /// Kernel module aliases for `unused=`.
    pub modules_alias: Option<PathBuf>,
}

fn default_modules_alias() -> Option<PathBuf> {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    Some(PathBuf::from(format!("/lib/modules/{}/modules.alias", release.trim())))
}

fn default_pci_ids() -> Option<PathBuf> {
    ["/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids", "/usr/share/pci.ids"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

fn none_means_off(p: Option<PathBuf>, default: impl FnOnce() -> Option<PathBuf>) -> Option<PathBuf> {
    match p {
        Some(p) if p.as_os_str() == "none" => None,
        Some(p) => Some(p),
        None => default(),
    }
}

/// The same driver name with `-` and `_` swapped (module `vfio_pci` is driver `vfio-pci`).
fn driver_spellings(name: &str) -> [String; 3] {
    [name.to_string(), name.replace('_', "-"), name.replace('-', "_")]
}

impl Devbind {
    /// From parsed arguments (real `/sys` unless overridden).
    pub fn from_args(args: &Args) -> Devbind {
        let sysfs = Sysfs::new(
            args.sysfs_root.clone().unwrap_or_else(|| "/sys".into()),
            args.proc_root.clone().unwrap_or_else(|| "/proc".into()),
        );
        Devbind {
            sysfs,
            pci_ids: none_means_off(args.pci_ids.clone(), default_pci_ids),
            modules_alias: none_means_off(args.modules_alias.clone(), default_modules_alias),
        }
    }

    /// Resolves a device argument: a PCI address, or the name of a network interface.
    pub fn resolve(&self, arg: &str) -> Result<PciAddress, String> {
        if let Ok(addr) = arg.parse::<PciAddress>() {
            return if self.sysfs.exists(addr) { Ok(addr) } else { Err(PciError::NoSuchDevice { addr }.to_string()) };
        }
        let devices = self.sysfs.devices().map_err(|e| e.to_string())?;
        devices.iter().find(|d| d.net_interfaces.iter().any(|i| i == arg)).map(|d| d.address).ok_or_else(|| {
            format!("{arg:?} is neither a PCI address (0000:01:00.0) nor a network interface of a PCI device")
        })
    }

    fn unused(&self, dev: &PciDevice, aliases: &ModuleAliases) -> Vec<String> {
        let mut out: Vec<String> = dev.modalias.as_deref().map(|m| aliases.modules_for(m)).unwrap_or_default();
        if self.sysfs.driver_loaded("vfio-pci") && !out.iter().any(|m| m == "vfio_pci" || m == "vfio-pci") {
            out.push("vfio-pci".into());
        }
        let current = dev.driver.as_deref().map(driver_spellings);
        out.retain(|m| current.as_ref().is_none_or(|c| !c.contains(m)));
        out
    }

    /// Writes the `--status` report.
    pub fn status(&self, out: &mut dyn Write) -> io::Result<()> {
        let devices = self.sysfs.devices().map_err(io::Error::other)?;
        let net: Vec<&PciDevice> = devices.iter().filter(|d| d.is_network()).collect();
        let vendors: BTreeSet<u16> = net.iter().map(|d| d.id.vendor).collect();
        let ids = self.pci_ids.as_deref().map(|p| PciIds::load(p, &vendors)).unwrap_or_default();
        let aliases = self.modules_alias.as_deref().map(ModuleAliases::load).unwrap_or_default();
        let line = |d: &PciDevice| {
            let name = ids.device_name(d.id.vendor, d.id.device).unwrap_or("Device");
            let mut s = format!("{} '{} {:04x}'", d.address, name, d.id.device);
            if let Some(node) = d.numa_node {
                s.push_str(&format!(" numa_node={node}"));
            }
            if !d.net_interfaces.is_empty() {
                s.push_str(&format!(" if={}", d.net_interfaces.join(",")));
            }
            if let Some(drv) = &d.driver {
                s.push_str(&format!(" drv={drv}"));
            }
            s.push_str(&format!(" unused={}", self.unused(d, &aliases).join(",")));
            if self.sysfs.active_interface(d).is_some() {
                s.push_str(" *Active*");
            }
            s
        };
        let sections: [(&str, Vec<&PciDevice>); 3] = [
            (
                "Network devices using DPDK-compatible driver",
                net.iter().copied().filter(|d| d.is_userspace_bound()).collect(),
            ),
            (
                "Network devices using kernel driver",
                net.iter().copied().filter(|d| d.driver.is_some() && !d.is_userspace_bound()).collect(),
            ),
            ("Other Network devices", net.iter().copied().filter(|d| d.driver.is_none()).collect()),
        ];
        for (title, list) in sections {
            writeln!(out)?;
            writeln!(out, "{title}")?;
            writeln!(out, "{}", "=".repeat(title.len()))?;
            if list.is_empty() {
                writeln!(out, "<none>")?;
            }
            for d in list {
                writeln!(out, "{}", line(d))?;
            }
        }
        Ok(())
    }

    /// Refuses (unless `force`) to take a device from the kernel while its interface is up or routed, and to
    /// touch anything that is not a network device (a disk controller, say).
    fn check_not_active(&self, dev: &PciDevice, force: bool) -> Result<(), PciError> {
        if dev.driver.as_deref().is_some_and(is_userspace_driver) {
            return Ok(());
        }
        if !dev.is_network() && dev.driver.is_some() && !force {
            return Err(PciError::NotNetwork { addr: dev.address, class: dev.class });
        }
        match self.sysfs.active_interface(dev) {
            Some((iface, state)) if !force => {
                Err(PciError::InterfaceActive { addr: dev.address, iface, why: state.describe() })
            }
            _ => Ok(()),
        }
    }

    /// Binds `addr` to `driver`; returns what was done, for the user.
    pub fn bind(&self, addr: PciAddress, driver: &str, force: bool) -> Result<String, PciError> {
        let dev = self.sysfs.device(addr)?;
        let driver = driver_spellings(driver)
            .into_iter()
            .find(|d| self.sysfs.driver_loaded(d))
            .unwrap_or_else(|| driver.to_string());
        if dev.driver.as_deref() == Some(driver.as_str()) {
            return Ok(format!("{addr} already bound to {driver}"));
        }
        self.check_not_active(&dev, force)?;
        if !self.sysfs.driver_loaded(&driver) {
            return Err(PciError::DriverNotLoaded { module: driver.replace('-', "_"), driver });
        }
        self.sysfs.bind(addr, &driver)?;
        let mut msg = format!(
            "{addr}: bound to {driver}{}",
            dev.driver.as_deref().map(|d| format!(" (was {d})")).unwrap_or_default()
        );
        if driver == "vfio-pci" {
            if let Some(group) = self.sysfs.device(addr)?.iommu_group {
                let blockers: Vec<String> = self
                    .sysfs
                    .iommu_group_devices(group)
                    .into_iter()
                    .filter(|a| *a != addr)
                    .filter_map(|a| {
                        let d = self.sysfs.device(a).ok()?.driver?;
                        (!is_userspace_driver(&d) && d != "pcieport" && d != "pci-stub").then(|| format!("{a} ({d})"))
                    })
                    .collect();
                if !blockers.is_empty() {
                    msg.push_str(&format!(
                        "\nwarning: IOMMU group {group} is not viable until these are bound to vfio-pci too: {}",
                        blockers.join(", ")
                    ));
                }
            }
        }
        Ok(msg)
    }

    /// Unbinds `addr` from its driver.
    pub fn unbind(&self, addr: PciAddress, force: bool) -> Result<String, PciError> {
        let dev = self.sysfs.device(addr)?;
        let Some(driver) = dev.driver.clone() else {
            return Ok(format!("{addr} has no driver"));
        };
        self.check_not_active(&dev, force)?;
        self.sysfs.unbind(addr)?;
        let _ = self.sysfs.set_driver_override(addr, None);
        Ok(format!("{addr}: unbound from {driver}"))
    }

    /// Runs `args`, printing to `out` and `err`; returns the exit code (0 all done, 1 something failed, 2 usage).
    pub fn run(&self, args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
        let mut failed = false;
        let mut each = |devices: &[String], f: &dyn Fn(PciAddress) -> Result<String, PciError>| {
            for arg in devices {
                let result = self.resolve(arg).and_then(|a| f(a).map_err(|e| e.to_string()));
                match result {
                    Ok(msg) => {
                        let _ = writeln!(out, "{msg}");
                    }
                    Err(e) => {
                        failed = true;
                        let _ = writeln!(err, "devbind: {e}");
                    }
                }
            }
        };
        match &args.action {
            Action::Help => {
                let _ = writeln!(out, "{USAGE}");
                return 0;
            }
            Action::Status => {
                if let Err(e) = self.status(out) {
                    let _ = writeln!(err, "devbind: {e}");
                    return 1;
                }
            }
            Action::Bind { driver, devices } => each(devices, &|a| self.bind(a, driver, args.force)),
            Action::Unbind { devices } => each(devices, &|a| self.unbind(a, args.force)),
        }
        i32::from(failed)
    }
}

/// The whole tool: parses `args` (without the program name) and runs them. Returns the exit code.
pub fn main_with(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match parse_args(args) {
        Ok(args) => Devbind::from_args(&args).run(&args, out, err),
        Err(e) => {
            let _ = writeln!(err, "devbind: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_modaliases() {
        let alias = "pci:v00008086d000010C9sv00008086sd0000A03Cbc02sc00i00";
        assert!(glob_match("pci:v00008086d000010C9sv*sd*bc*sc*i*", alias));
        assert!(!glob_match("pci:v00008086d000010FBsv*sd*bc*sc*i*", alias));
        assert!(glob_match("pci:v*d*sv*sd*bc02sc00i*", alias));
        assert!(glob_match("*", ""));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a?c", "ac"));
    }

    #[test]
    fn arguments() {
        let p = |s: &str| parse_args(&s.split_whitespace().map(String::from).collect::<Vec<_>>());
        assert_eq!(p("").unwrap().action, Action::Status);
        assert_eq!(p("--status").unwrap().action, Action::Status);
        assert_eq!(
            p("-b vfio-pci 01:00.0 01:00.1").unwrap().action,
            Action::Bind { driver: "vfio-pci".into(), devices: vec!["01:00.0".into(), "01:00.1".into()] }
        );
        assert_eq!(
            p("--bind=ixgbe 01:00.0 --force").unwrap(),
            Args {
                action: Action::Bind { driver: "ixgbe".into(), devices: vec!["01:00.0".into()] },
                force: true,
                sysfs_root: None,
                proc_root: None,
                pci_ids: None,
                modules_alias: None
            }
        );
        assert_eq!(p("-u 01:00.0").unwrap().action, Action::Unbind { devices: vec!["01:00.0".into()] });
        assert!(p("-u").unwrap_err().contains("no device"));
        assert!(p("-b").unwrap_err().contains("needs a value"));
        assert!(p("-b vfio-pci -u 01:00.0").is_err());
        assert!(p("--frobnicate").unwrap_err().contains("unknown option"));
        assert!(p("01:00.0").unwrap_err().contains("without -b or -u"));
    }
}
