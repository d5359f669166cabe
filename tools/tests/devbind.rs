//! devbind against a fake sysfs tree whose writes act like the kernel's, and the binary against a tree that does
//! not react (so nothing on this machine is ever touched).

use std::fs;
use std::process::Command;

use drvkit::pci::fake::{FakeDevice, FakeSysfs};
use drvkit::pci::{PciAddress, PciError};
use tools::devbind::{main_with, parse_args, Devbind};

fn addr(s: &str) -> PciAddress {
    s.parse().unwrap()
}

/// A machine with: an igb port in use (eth0, up, routed), an idle igb port (eth1, down), a port already on
/// vfio-pci, a NIC without a driver, and a disk controller.
fn machine(tag: &str) -> FakeSysfs {
    let fake = FakeSysfs::new(tag);
    fake.add_driver("vfio-pci");
    fake.add_driver("igb");
    fake.add_device(
        &FakeDevice::net("0000:01:00.0", 0x8086, 0x10c9).driver("igb").iommu_group(10).interface("eth0", true),
    );
    fake.add_device(
        &FakeDevice::net("0000:01:00.1", 0x8086, 0x10c9).driver("igb").iommu_group(11).interface("eth1", false),
    );
    fake.add_device(&FakeDevice::net("0000:02:00.0", 0x1af4, 0x1041).driver("vfio-pci").iommu_group(12).numa_node(0));
    fake.add_device(&FakeDevice::net("0000:03:00.0", 0x8086, 0x1528));
    fake.add_device(&FakeDevice::net("0000:04:00.0", 0x1af4, 0x1042).class(0x010000).driver("virtio-pci"));
    fake.add_route("eth0");
    fake
}

fn tool(fake: &FakeSysfs) -> Devbind {
    let dir = fake.root().parent().unwrap().to_path_buf();
    fs::write(
        dir.join("pci.ids"),
        "# comment\n8086  Intel Corporation\n\t10c9  82576 Virtual Function\n\t\t8086 a03c  sub\n\t1528  Ethernet Controller 10-Gigabit X540-AT2\n1af4  Red Hat, Inc.\n\t1041  Virtio 1.0 network device\nC 02  Network controller\n",
    )
    .unwrap();
    fs::write(
        dir.join("modules.alias"),
        "alias pci:v00008086d000010C9sv*sd*bc*sc*i* igb\nalias pci:v00008086d00001528sv*sd*bc*sc*i* ixgbe\nalias usb:v* nope\n",
    )
    .unwrap();
    Devbind { sysfs: fake.sysfs(), pci_ids: Some(dir.join("pci.ids")), modules_alias: Some(dir.join("modules.alias")) }
}

fn status(tool: &Devbind) -> String {
    let mut out = Vec::new();
    tool.status(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn status_sorts_network_devices_by_driver_kind() {
    let fake = machine("status");
    let text = status(&tool(&fake));
    let expected = "
Network devices using DPDK-compatible driver
============================================
0000:02:00.0 'Virtio 1.0 network device 1041' numa_node=0 drv=vfio-pci unused=

Network devices using kernel driver
===================================
0000:01:00.0 '82576 Virtual Function 10c9' if=eth0 drv=igb unused=vfio-pci *Active*
0000:01:00.1 '82576 Virtual Function 10c9' if=eth1 drv=igb unused=vfio-pci

Other Network devices
=====================
0000:03:00.0 'Ethernet Controller 10-Gigabit X540-AT2 1528' unused=ixgbe,vfio-pci
";
    assert_eq!(text, expected);
}

#[test]
fn binds_an_idle_port_to_vfio_pci_and_back() {
    let fake = machine("bind");
    let tool = tool(&fake);
    let msg = tool.bind(addr("0000:01:00.1"), "vfio-pci", false).unwrap();
    assert_eq!(msg, "0000:01:00.1: bound to vfio-pci (was igb)");
    let dev = tool.sysfs.device(addr("0000:01:00.1")).unwrap();
    assert_eq!(dev.driver.as_deref(), Some("vfio-pci"));
    assert!(dev.net_interfaces.is_empty(), "the kernel interface is gone");
    assert_eq!(dev.driver_override, None, "the override is cleared after binding");
    let text = status(&tool);
    assert!(text.contains("0000:01:00.1 '82576 Virtual Function 10c9' drv=vfio-pci unused=igb\n"), "{text}");
    assert_eq!(tool.bind(addr("0000:01:00.1"), "vfio-pci", false).unwrap(), "0000:01:00.1 already bound to vfio-pci");

    // Back to the kernel.
    let msg = tool.bind(addr("0000:01:00.1"), "igb", false).unwrap();
    assert_eq!(msg, "0000:01:00.1: bound to igb (was vfio-pci)");
    assert_eq!(tool.sysfs.device(addr("0000:01:00.1")).unwrap().net_interfaces, ["eth1"]);
}

#[test]
fn refuses_to_take_an_interface_in_use_unless_forced() {
    let fake = machine("active");
    let tool = tool(&fake);
    let err = tool.bind(addr("0000:01:00.0"), "vfio-pci", false).unwrap_err();
    assert!(matches!(err, PciError::InterfaceActive { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("eth0, which is up and has 1 route"), "{msg}");
    assert!(msg.contains("ip link set eth0 down") && msg.contains("--force"), "{msg}");
    let err = tool.unbind(addr("0000:01:00.0"), false).unwrap_err();
    assert!(matches!(err, PciError::InterfaceActive { .. }), "{err}");
    assert_eq!(tool.sysfs.device(addr("0000:01:00.0")).unwrap().driver.as_deref(), Some("igb"), "untouched");

    // Down but still routed: refused too.
    fs::write(fake.root().join("class/net/eth0/flags"), "0x1002\n").unwrap();
    let err = tool.unbind(addr("0000:01:00.0"), false).unwrap_err();
    assert!(err.to_string().contains("eth0, which has 1 route;"), "{err}");

    assert_eq!(tool.unbind(addr("0000:01:00.0"), true).unwrap(), "0000:01:00.0: unbound from igb");
    assert_eq!(tool.sysfs.device(addr("0000:01:00.0")).unwrap().driver, None);
}

#[test]
fn refuses_non_network_devices_unless_forced() {
    let fake = machine("disk");
    let tool = tool(&fake);
    let err = tool.unbind(addr("0000:04:00.0"), false).unwrap_err();
    assert!(matches!(err, PciError::NotNetwork { class: 0x010000, .. }), "{err}");
    assert!(err.to_string().contains("not a network device"), "{err}");
    assert!(tool.bind(addr("0000:04:00.0"), "vfio-pci", false).is_err());
    assert_eq!(tool.sysfs.device(addr("0000:04:00.0")).unwrap().driver.as_deref(), Some("virtio-pci"));
}

#[test]
fn missing_driver_says_modprobe() {
    let fake = FakeSysfs::new("nomod");
    fake.add_device(&FakeDevice::net("0000:01:00.0", 0x8086, 0x10c9));
    let tool = Devbind { sysfs: fake.sysfs(), pci_ids: None, modules_alias: None };
    let err = tool.bind(addr("0000:01:00.0"), "vfio-pci", false).unwrap_err();
    assert!(matches!(err, PciError::DriverNotLoaded { .. }), "{err}");
    assert!(err.to_string().contains("`modprobe vfio_pci`"), "{err}");
    let err = tool.bind(addr("0000:01:00.0"), "ixgbe", false).unwrap_err();
    assert!(err.to_string().contains("`modprobe ixgbe`"), "{err}");
}

#[test]
fn binding_one_function_of_a_shared_group_warns_about_the_rest() {
    let fake = FakeSysfs::new("group");
    fake.add_driver("vfio-pci");
    fake.add_device(&FakeDevice::net("0000:05:00.0", 0x8086, 0x1528).driver("ixgbe").iommu_group(7));
    fake.add_device(&FakeDevice::net("0000:05:00.1", 0x8086, 0x1528).driver("ixgbe").iommu_group(7));
    let tool = Devbind { sysfs: fake.sysfs(), pci_ids: None, modules_alias: None };
    let msg = tool.bind(addr("0000:05:00.0"), "vfio_pci", false).unwrap();
    assert!(msg.starts_with("0000:05:00.0: bound to vfio-pci (was ixgbe)"), "{msg}");
    assert!(msg.contains("IOMMU group 7 is not viable until these are bound to vfio-pci too: 0000:05:00.1 (ixgbe)"));
    let msg = tool.bind(addr("0000:05:00.1"), "vfio-pci", false).unwrap();
    assert!(!msg.contains("warning"), "{msg}");
}

#[test]
fn run_takes_interface_names_and_reports_each_device() {
    let fake = machine("run");
    let tool = tool(&fake);
    let args =
        parse_args(&["-b", "vfio-pci", "eth1", "0000:01:00.0", "0000:09:00.0", "eth9"].map(String::from)).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tool.run(&args, &mut out, &mut err);
    let (out, err) = (String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap());
    assert_eq!(code, 1, "some devices failed");
    assert_eq!(out, "0000:01:00.1: bound to vfio-pci (was igb)\n");
    assert!(err.contains("devbind: 0000:01:00.0 is the network interface eth0"), "{err}");
    assert!(err.contains("devbind: PCI device 0000:09:00.0 does not exist"), "{err}");
    assert!(err.contains("\"eth9\" is neither a PCI address"), "{err}");

    let args = parse_args(&["-u".to_string(), "01:00.1".to_string()]).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(tool.run(&args, &mut out, &mut err), 0);
    assert_eq!(String::from_utf8(out).unwrap(), "0000:01:00.1: unbound from vfio-pci\n");
}

#[test]
fn usage_errors_exit_2() {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(main_with(&["--bogus".to_string()], &mut out, &mut err), 2);
    assert!(String::from_utf8(err).unwrap().contains("unknown option --bogus"));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(main_with(&["-h".to_string()], &mut out, &mut err), 0);
    assert!(String::from_utf8(out).unwrap().contains("Usage: devbind"));
}

/// The binary, on a fake tree that does not react to writes (no kernel behind it): status works, and a bind that
/// the "kernel" ignores is reported as failed with where to look.
#[test]
fn binary_status_and_an_ignored_bind() {
    let fake = machine("binary");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_devbind"))
            .arg("--sysfs-root")
            .arg(fake.root())
            .arg("--proc-root")
            .arg(fake.proc_root())
            .args(["--pci-ids", "none", "--modules-alias", "none"])
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    let (code, out, _) = run(&["--status"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("0000:01:00.0 'Device 10c9' if=eth0 drv=igb unused=vfio-pci *Active*"), "{out}");
    assert!(out.contains("0000:03:00.0 'Device 1528' unused=vfio-pci"), "{out}");
    assert!(!out.contains("0000:04:00.0"), "not a network device: {out}");

    let (code, out, err) = run(&["-b", "vfio-pci", "0000:01:00.1"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("0000:01:00.1 did not bind to vfio-pci (now igb); see `dmesg | tail`"), "{err}");
    let probe = fs::read_to_string(fake.root().join("bus/pci/drivers_probe")).unwrap();
    assert_eq!(probe, "0000:01:00.1", "the bind went through drivers_probe");
    let unbind = fs::read_to_string(fake.root().join("bus/pci/drivers/igb/unbind")).unwrap();
    assert_eq!(unbind, "0000:01:00.1");
}
