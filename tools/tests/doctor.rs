//! The readiness check (`pktio-doctor`) against fake sysfs, procfs and /dev trees: a machine that is ready, then
//! the same machine with one thing broken at a time, each time checking that exactly that item fails and that its
//! fix is the command that repairs it. Never run against this machine's own /sys.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use drvkit::pci::fake::{FakeDevice, FakeSysfs};
use drvkit::pci::{PciAddress, PciId};
use pktio::driver::{PciDriver, PciProbe, Registry};
use tools::doctor::{self, Doctor, Finding, Item, Roots, Status};

fn never_probe(_: &PciProbe<'_>) -> pktio::Result<Box<dyn pktio::EthDev>> {
    unreachable!("the doctor never opens a device")
}

static DRIVERS: &[PciDriver] = &[PciDriver {
    name: "net_ixgbe",
    ids: &[PciId::new(0x8086, 0x10fb), PciId::new(0x8086, 0x1528)],
    probe: never_probe,
}];

const NIC: &str = "0000:01:00.0";
const NIC2: &str = "0000:01:00.1";
const OTHER: &str = "0000:02:00.0";

fn addr(s: &str) -> PciAddress {
    s.parse().unwrap()
}

/// A machine ready for pktio: IOMMU on, vfio-pci loaded, 512 x 2M hugepages mounted, unlimited memlock, an 82599
/// pair in IOMMU group 12 bound to vfio-pci, and an unsupported X710 in group 13 in use by the kernel (eth1, up).
struct Machine {
    fake: FakeSysfs,
}

impl Machine {
    fn ready() -> Self {
        let fake = FakeSysfs::new("doctor");
        fake.add_driver("vfio-pci");
        fake.add_device(&FakeDevice::net(NIC, 0x8086, 0x10fb).driver("vfio-pci").iommu_group(12));
        fake.add_device(&FakeDevice::net(NIC2, 0x8086, 0x10fb).driver("vfio-pci").iommu_group(12));
        fake.add_device(&FakeDevice::net(OTHER, 0x8086, 0x1572).driver("i40e").iommu_group(13).interface("eth1", true));
        let m = Machine { fake };
        m.write_dev("vfio/vfio", "");
        m.write_dev("vfio/12", "");
        m.set_hugepages(512, 512);
        m.write_proc(
            "mounts",
            "sysfs /sys sysfs rw 0 0\nhugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n",
        );
        m.write_proc("self/status", "Name:\tpktio-doctor\nUid:\t1000\t1000\t1000\t1000\n");
        m.set_memlock("unlimited");
        m.write_proc("cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro intel_iommu=on iommu=pt\n");
        m.write_proc("cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\n");
        m
    }

    fn dev_root(&self) -> PathBuf {
        self.fake.root().parent().unwrap().join("dev")
    }

    fn roots(&self) -> Roots {
        Roots { sysfs: self.fake.root(), proc: self.fake.proc_root(), dev: self.dev_root() }
    }

    fn write(path: PathBuf, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn write_dev(&self, rel: &str, text: &str) {
        Self::write(self.dev_root().join(rel), text);
    }

    fn write_proc(&self, rel: &str, text: &str) {
        Self::write(self.fake.proc_root().join(rel), text);
    }

    fn set_hugepages(&self, total: usize, free: usize) {
        let dir = self.fake.root().join("kernel/mm/hugepages/hugepages-2048kB");
        Self::write(dir.join("nr_hugepages"), &format!("{total}\n"));
        Self::write(dir.join("free_hugepages"), &format!("{free}\n"));
        Self::write(dir.join("resv_hugepages"), "0\n");
    }

    fn set_memlock(&self, soft: &str) {
        self.write_proc(
            "self/limits",
            &format!(
                "Limit                     Soft Limit           Hard Limit           Units\n\
                 Max processes             63704                63704                processes\n\
                 Max locked memory         {soft:<20} {soft:<20} bytes\n"
            ),
        );
    }

    fn remove_iommu_groups(&self) {
        fs::remove_dir_all(self.fake.root().join("kernel/iommu_groups")).unwrap();
        fs::create_dir_all(self.fake.root().join("kernel/iommu_groups")).unwrap();
    }

    fn check(&self, devices: &[&str]) -> Vec<Finding> {
        let registry = Registry::new().with_pci(DRIVERS);
        let devices: Vec<PciAddress> = devices.iter().map(|d| addr(d)).collect();
        Doctor::new(self.roots(), &registry).check(&devices)
    }

    /// Runs the tool's whole command line (as the binary does) on this tree: exit code and output.
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let roots = self.roots();
        let mut full: Vec<String> = vec![
            format!("--sysfs-root={}", roots.sysfs.display()),
            "--proc-root".into(),
            roots.proc.display().to_string(),
            "--dev-root".into(),
            roots.dev.display().to_string(),
        ];
        full.extend(args.iter().map(|a| a.to_string()));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = doctor::main_with(&Registry::new().with_pci(DRIVERS), &full, &mut out, &mut err);
        (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
    }
}

fn find(findings: &[Finding], item: Item) -> &Finding {
    findings.iter().find(|f| f.item == item).unwrap_or_else(|| panic!("no {item} item in {findings:#?}"))
}

/// Exactly `item` is not Ok (everything else still is), with the given status; returns its fix.
fn only_problem(findings: &[Finding], item: Item, status: Status) -> String {
    let bad: Vec<&Finding> = findings.iter().filter(|f| f.status != Status::Ok).collect();
    assert_eq!(bad.len(), 1, "expected only {item} to be flagged: {bad:#?}");
    assert_eq!(bad[0].item, item, "{bad:#?}");
    assert_eq!(bad[0].status, status, "{bad:#?}");
    bad[0].fix.clone().expect("a flagged item says how to fix it")
}

#[test]
fn a_ready_machine_passes_every_item() {
    let m = Machine::ready();
    let findings = m.check(&[NIC]);
    assert!(findings.iter().all(|f| f.status == Status::Ok), "{findings:#?}");
    let items: Vec<Item> = findings.iter().map(|f| f.item).collect();
    let a = addr(NIC);
    for item in [
        Item::Iommu,
        Item::VfioPci,
        Item::Hugepages,
        Item::Hugetlbfs,
        Item::Memlock,
        Item::Device(a),
        Item::Supported(a),
        Item::Bound(a),
        Item::Group(a),
        Item::InUse(a),
    ] {
        assert!(items.contains(&item), "{item} not checked: {items:?}");
    }
    assert!(find(&findings, Item::Supported(a)).detail.contains("net_ixgbe"));
    assert!(find(&findings, Item::Hugepages).detail.contains("512 x 2M"), "{findings:#?}");
    let (code, out, err) = m.run(&[NIC]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.trim_end().ends_with("ready"), "{out}");
    assert!(!out.contains("FAIL") && !out.contains("fix:"), "{out}");
}

#[test]
fn without_devices_named_it_checks_those_bound_to_vfio_pci() {
    let m = Machine::ready();
    let findings = m.check(&[]);
    assert!(findings.iter().all(|f| f.status == Status::Ok), "{findings:#?}");
    assert!(findings.iter().any(|f| f.item == Item::Bound(addr(NIC))));
    assert!(findings.iter().any(|f| f.item == Item::Bound(addr(NIC2))));
    assert!(!findings.iter().any(|f| f.item == Item::Device(addr(OTHER))), "the kernel's NIC is not ours to check");

    let empty = FakeSysfs::new("doctor-empty");
    empty.add_driver("vfio-pci");
    let roots = Roots { sysfs: empty.root(), proc: empty.proc_root(), dev: empty.root().parent().unwrap().join("dev") };
    let registry = Registry::new();
    let findings = Doctor::new(roots, &registry).check(&[]);
    let f = find(&findings, Item::Devices);
    assert_eq!(f.status, Status::Warn);
    assert!(f.fix.as_deref().unwrap().starts_with("devbind --status"), "{f:?}");
}

#[test]
fn no_iommu_says_which_kernel_parameter_to_add() {
    let m = Machine::ready();
    m.remove_iommu_groups();
    m.write_proc("cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n");
    let fix = only_problem(&m.check(&[]), Item::Iommu, Status::Fail);
    assert!(fix.starts_with("add intel_iommu=on iommu=pt to GRUB_CMDLINE_LINUX"), "{fix}");
    assert!(fix.contains("update-grub && reboot"), "{fix}");
    assert!(fix.contains("modprobe vfio enable_unsafe_noiommu_mode=1"), "the no-IOMMU way out: {fix}");

    m.write_proc("cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\n");
    let fix = only_problem(&m.check(&[]), Item::Iommu, Status::Fail);
    assert!(fix.starts_with("add amd_iommu=on iommu=pt"), "{fix}");
}

#[test]
fn iommu_asked_for_but_absent_points_at_the_firmware() {
    let m = Machine::ready();
    m.remove_iommu_groups();
    let f = m.check(&[]);
    let fix = only_problem(&f, Item::Iommu, Status::Fail);
    assert!(fix.starts_with("enable VT-d"), "{fix}");
    assert!(find(&f, Item::Iommu).detail.contains("firmware"));
}

#[test]
fn no_iommu_mode_is_a_warning_that_names_what_it_gives_up() {
    let m = Machine::ready();
    m.remove_iommu_groups();
    m.fake.enable_noiommu();
    let f = m.check(&[]);
    only_problem(&f, Item::Iommu, Status::Warn);
    let detail = &find(&f, Item::Iommu).detail;
    assert!(detail.contains("DMA anywhere") && detail.contains("--iova-mode pa"), "{detail}");
    let (code, out, _) = m.run(&[]);
    assert_eq!(code, 0, "warnings do not fail the check: {out}");
    assert!(out.contains("WARN") && out.contains("ready, with the warnings above"), "{out}");
}

#[test]
fn vfio_pci_not_loaded_or_its_device_node_missing() {
    let m = Machine::ready();
    fs::remove_dir_all(m.fake.root().join("bus/pci/drivers/vfio-pci")).unwrap();
    assert_eq!(only_problem(&m.check(&[]), Item::VfioPci, Status::Fail), "modprobe vfio-pci");

    let m = Machine::ready();
    fs::remove_file(m.dev_root().join("vfio/vfio")).unwrap();
    let fix = only_problem(&m.check(&[]), Item::VfioPci, Status::Fail);
    assert!(fix.starts_with("modprobe vfio && udevadm trigger"), "{fix}");
}

#[test]
fn hugepages_not_reserved_not_free_or_not_mounted() {
    let m = Machine::ready();
    m.set_hugepages(0, 0);
    assert_eq!(only_problem(&m.check(&[]), Item::Hugepages, Status::Fail), "hugepages --setup 1G");

    m.set_hugepages(512, 0);
    let f = m.check(&[]);
    let fix = only_problem(&f, Item::Hugepages, Status::Fail);
    assert!(fix.contains("hugepages --setup 2G"), "{fix}");
    assert!(find(&f, Item::Hugepages).detail.contains("none free"));

    let m = Machine::ready();
    m.write_proc("mounts", "sysfs /sys sysfs rw 0 0\n");
    assert!(only_problem(&m.check(&[]), Item::Hugetlbfs, Status::Fail).starts_with("hugepages --mount"));
}

#[test]
fn a_low_memlock_limit_fails_unless_root() {
    let m = Machine::ready();
    m.set_memlock("8388608");
    let f = m.check(&[]);
    let fix = only_problem(&f, Item::Memlock, Status::Fail);
    assert!(fix.starts_with("ulimit -l unlimited"), "{fix}");
    assert!(fix.contains("/etc/security/limits.conf"), "{fix}");
    assert!(find(&f, Item::Memlock).detail.contains("8192 KiB"));

    m.write_proc("self/status", "Name:\tpktio-doctor\nUid:\t0\t0\t0\t0\n");
    let f = m.check(&[]);
    assert_eq!(find(&f, Item::Memlock).status, Status::Ok, "root has CAP_IPC_LOCK");
}

#[test]
fn a_missing_device_points_to_the_status_list() {
    let m = Machine::ready();
    let f = m.check(&["0000:09:00.0"]);
    let fix = only_problem(&f, Item::Device(addr("0000:09:00.0")), Status::Fail);
    assert!(fix.starts_with("devbind --status"), "{fix}");
}

#[test]
fn a_device_we_do_not_drive_and_still_with_the_kernel() {
    let m = Machine::ready();
    let f = m.check(&[OTHER]);
    let a = addr(OTHER);
    let bad: Vec<&Finding> = f.iter().filter(|x| x.status != Status::Ok).collect();
    assert_eq!(bad.iter().map(|x| x.item).collect::<Vec<_>>(), [Item::Supported(a), Item::Bound(a)], "{bad:#?}");
    let supported = find(&f, Item::Supported(a));
    assert!(
        supported.detail.contains("8086:1572") && supported.detail.contains("net_ixgbe (8086:10fb"),
        "{supported:?}"
    );
    assert!(supported.fix.as_deref().unwrap().contains("--vdev net_af_packet0,iface=eth1"), "{supported:?}");
    // Its interface is up: take it down first, or devbind refuses.
    let bound = find(&f, Item::Bound(a));
    assert_eq!(bound.fix.as_deref(), Some("ip link set eth1 down && devbind -b vfio-pci 0000:02:00.0"));
    assert!(bound.detail.contains("bound to i40e"));
}

#[test]
fn an_unbound_supported_device_gets_the_bind_command() {
    let m = Machine::ready();
    m.fake.add_device(&FakeDevice::net("0000:03:00.0", 0x8086, 0x1528).iommu_group(14));
    let a = addr("0000:03:00.0");
    let fix = only_problem(&m.check(&["0000:03:00.0"]), Item::Bound(a), Status::Fail);
    assert_eq!(fix, "devbind -b vfio-pci 0000:03:00.0");
}

#[test]
fn a_group_shared_with_a_kernel_bound_device_is_not_viable() {
    let m = Machine::ready();
    // A third function in group 12, still with the kernel; a bridge (pcieport) in the group is fine.
    m.fake.add_device(&FakeDevice::net("0000:01:00.2", 0x8086, 0x10fb).driver("ixgbe").iommu_group(12));
    m.fake.add_device(
        &FakeDevice::net("0000:00:01.0", 0x8086, 0x1901).class(0x060400).driver("pcieport").iommu_group(12),
    );
    let f = m.check(&[NIC]);
    let fix = only_problem(&f, Item::Group(addr(NIC)), Status::Fail);
    assert_eq!(fix, "devbind -b vfio-pci 0000:01:00.2");
    let detail = &find(&f, Item::Group(addr(NIC))).detail;
    assert!(detail.contains("group 12") && detail.contains("0000:01:00.2 (ixgbe)") && !detail.contains("pcieport"));
}

#[test]
fn a_bound_device_without_its_group_node() {
    let m = Machine::ready();
    fs::remove_file(m.dev_root().join("vfio/12")).unwrap();
    let fix = only_problem(&m.check(&[NIC]), Item::Group(addr(NIC)), Status::Fail);
    assert_eq!(fix, "devbind -u 0000:01:00.0 && devbind -b vfio-pci 0000:01:00.0   # vfio-pci creates it on bind");
}

#[test]
fn a_device_held_by_another_process() {
    let m = Machine::ready();
    m.write_proc("4242/comm", "testpmd-rs\n");
    m.write_proc("4242/fd/0", "");
    symlink(m.dev_root().join("vfio/12"), m.fake.proc_root().join("4242/fd/7")).unwrap();
    // Another process with unrelated files open.
    m.write_proc("77/comm", "sshd\n");
    symlink("/dev/null", {
        fs::create_dir_all(m.fake.proc_root().join("77/fd")).unwrap();
        m.fake.proc_root().join("77/fd/0")
    })
    .unwrap();
    let f = m.check(&[NIC]);
    let fix = only_problem(&f, Item::InUse(addr(NIC)), Status::Fail);
    assert!(fix.starts_with("kill 4242"), "{fix}");
    assert!(find(&f, Item::InUse(addr(NIC))).detail.contains("4242 (testpmd-rs)"));
}

#[test]
fn the_report_prints_each_fix_under_its_item_and_fails() {
    let m = Machine::ready();
    m.set_hugepages(0, 0);
    fs::remove_dir_all(m.fake.root().join("bus/pci/drivers/vfio-pci")).unwrap();
    let (code, out, _) = m.run(&["01:00.0"]);
    assert_eq!(code, 1, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    let at = |s: &str| lines.iter().position(|l| l.contains(s)).unwrap_or_else(|| panic!("{s:?} not in\n{out}"));
    assert!(lines[at("FAIL  vfio-pci") + 1].contains("fix: modprobe vfio-pci"), "{out}");
    assert!(lines[at("FAIL  hugepages") + 1].contains("fix: hugepages --setup 1G"), "{out}");
    assert!(out.contains("not ready"), "{out}");
}

#[test]
fn usage() {
    let m = Machine::ready();
    let (code, out, _) = m.run(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("Usage: pktio-doctor"));
    assert_eq!(m.run(&["--frobnicate"]).0, 2);
    let (code, _, err) = m.run(&["not-an-address"]);
    assert_eq!(code, 2);
    assert!(err.contains("not-an-address"), "{err}");
    let (code, _, err) = doctor_run(&["--sysfs-root"]);
    assert_eq!(code, 2);
    assert!(err.contains("needs a directory"), "{err}");
}

fn doctor_run(args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = doctor::main_with(&Registry::new(), &args, &mut out, &mut err);
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

/// Every `devbind` and `hugepages` command the doctor suggests uses options those tools really have.
#[test]
fn suggested_tool_commands_use_real_options() {
    let mut fixes = Vec::new();
    let m = Machine::ready();
    m.set_hugepages(0, 0);
    m.write_proc("mounts", "");
    fixes.extend(m.check(&[OTHER, NIC, "0000:09:00.0"]));
    m.set_hugepages(512, 0);
    m.fake.add_device(&FakeDevice::net("0000:01:00.2", 0x8086, 0x10fb).driver("ixgbe").iommu_group(12));
    fs::remove_file(m.dev_root().join("vfio/12")).unwrap();
    fixes.extend(m.check(&[NIC, "0000:01:00.2"]));
    let commands: Vec<String> = fixes
        .iter()
        .filter_map(|f| f.fix.clone())
        .flat_map(|fix| {
            fix.split(['#', ';']).next().unwrap().split("&&").map(str::trim).map(String::from).collect::<Vec<_>>()
        })
        .filter(|c| c.starts_with("devbind") || c.starts_with("hugepages"))
        .collect();
    assert!(commands.iter().any(|c| c.starts_with("devbind -b")), "{commands:?}");
    assert!(commands.iter().any(|c| c.starts_with("hugepages --mount")), "{commands:?}");
    for c in &commands {
        let usage = if c.starts_with("devbind") { tools::devbind::USAGE } else { hugepage::cli::USAGE };
        for flag in c.split_whitespace().filter(|w| w.starts_with('-')) {
            assert!(usage.contains(&format!("{flag} ")) || usage.contains(&format!("{flag},")), "{c}: no {flag}");
        }
    }
}
