//! VFIO logic against a fake kernel ([`FakeVfio`]) and a fake sysfs: the happy path a driver takes, and every
//! failure a user meets on the way, with its fix in the message.

use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::dma::DmaMapper;
use drvkit::pci::fake::{FakeDevice, FakeSysfs};
use drvkit::pci::{ConfigSpace, PciAddress};
use drvkit::vfio::bindings::*;
use drvkit::vfio::fake::{FakeGroup, FakeVfio, FakeVfioDevice};
use drvkit::vfio::{IommuMode, Vfio, VfioConfig, VfioError, MSIX_IRQ};
use hugepage::{Allocator, IovaMode};

const ADDR: &str = "0000:00:02.0";

fn addr(s: &str) -> PciAddress {
    s.parse().unwrap()
}

/// One igb-like device in group 2, bound to vfio-pci.
fn setup(tag: &str) -> (FakeSysfs, Arc<FakeVfio>) {
    let sysfs = FakeSysfs::new(tag);
    sysfs.add_driver("vfio-pci");
    sysfs.add_device(&FakeDevice::net(ADDR, 0x8086, 0x10c9).driver("vfio-pci").iommu_group(2));
    let kernel = Arc::new(FakeVfio::new());
    kernel.add_group(2, FakeGroup::iommu(vec![FakeVfioDevice::pci(ADDR, 0x8086, 0x10c9)]));
    (sysfs, kernel)
}

fn vfio(sysfs: &FakeSysfs, kernel: &Arc<FakeVfio>, mode: IovaMode) -> Vfio {
    Vfio::with_parts(kernel.clone(), sysfs.sysfs(), VfioConfig::with_iova_mode(mode))
}

fn open_err(sysfs: &FakeSysfs, kernel: &Arc<FakeVfio>, mode: IovaMode, a: &str) -> VfioError {
    vfio(sysfs, kernel, mode).open_device(addr(a)).expect_err("open must fail")
}

#[test]
fn a_driver_brings_up_a_device() {
    let (sysfs, kernel) = setup("happy");
    let vfio = vfio(&sysfs, &kernel, IovaMode::Va);
    let dev = vfio.open_device(addr(ADDR)).unwrap();
    assert_eq!(dev.info().num_regions, 9);
    assert!(dev.info().can_reset());
    assert_eq!(dev.container().mode(), Some(IommuMode::Type1v2));
    let info = dev.container().iommu_info().unwrap();
    assert_eq!(info.page_sizes, 0x4020_1000);
    assert_eq!(info.min_page_size(), 4096);
    assert_eq!(info.iova_ranges.len(), 2);
    assert_eq!(info.iova_ranges[0].end, 0xfedf_ffff);
    assert_eq!(info.dma_avail, Some(65535));

    // Config space: IDs, capabilities, bus mastering (vfio-pci leaves it off).
    assert_eq!(dev.read16(0).unwrap(), 0x8086);
    assert_eq!(dev.read16(2).unwrap(), 0x10c9);
    assert_eq!(dev.find_capability(0x11).unwrap().unwrap().offset, 0x70);
    assert!(!dev.command().unwrap().bus_master());
    dev.set_bus_master(true).unwrap();
    let command = dev.command().unwrap();
    assert!(command.bus_master() && command.memory_space(), "{command:?}");
    let fake_config = kernel.device(ADDR).unwrap().config().word(4);
    assert_eq!(fake_config & 0x6, 0x6, "the write reached the device's config space");
    assert!(dev.read32(254).is_err(), "reads past the config region fail");

    // BAR0: fully mmapped; accesses land in the device's memory.
    let bar0 = dev.map_bar(0).unwrap();
    assert!(bar0.is_fully_mapped());
    assert_eq!(bar0.len(), 128 << 10);
    bar0.write32(0x8, 0xdead_beef);
    let fake_bar0 = kernel.device(ADDR).unwrap().regions[0].clone();
    assert_eq!(fake_bar0.word(0x8), 0xdead_beef);
    fake_bar0.set_word(0x10, 0x1234_5678);
    assert_eq!(bar0.read32(0x10), 0x1234_5678);
    bar0.modify32(0x10, 0xff, 0x1);
    assert_eq!(fake_bar0.word(0x10), 0x1234_5601);

    // BAR2: an I/O BAR, not mmap-able: pread/pwrite, including 8- and 16-bit accesses.
    let bar2 = dev.map_bar(2).unwrap();
    assert!(!bar2.is_fully_mapped());
    bar2.write32(4, 0x0102_0304);
    assert_eq!(kernel.device(ADDR).unwrap().regions[2].word(4), 0x0102_0304);
    assert_eq!(bar2.read16(6), 0x0102);
    assert_eq!(bar2.read8(4), 0x04);
    bar2.write8(0, 0xaa);
    bar2.write16(2, 0xbbcc);
    assert_eq!(bar2.read32(0), 0xbbcc_00aa);

    // BAR3: sparse mmap (only the upper 8 KiB): mapped part through memory, the rest through the fd.
    let bar3 = dev.map_bar(3).unwrap();
    assert!(!bar3.is_fully_mapped());
    bar3.write32(0x2000, 7);
    bar3.write32(0x100, 9);
    let fake_bar3 = kernel.device(ADDR).unwrap().regions[3].clone();
    assert_eq!((fake_bar3.word(0x2000), fake_bar3.word(0x100)), (7, 9));
    assert_eq!(bar3.read32(0x100), 9);

    // BAR1 does not exist; 6 is not a BAR.
    assert!(dev.map_bar(1).unwrap_err().to_string().contains("not implemented"));
    assert!(dev.map_bar(6).unwrap_err().to_string().contains("not a BAR"));

    // Reset and MSI-X.
    dev.reset().unwrap();
    assert_eq!(kernel.device(ADDR).unwrap().resets, 1);
    assert_eq!(dev.irq_info(MSIX_IRQ).unwrap().count, 5);
    let fds = dev.enable_irqs(MSIX_IRQ, 2).unwrap();
    assert_eq!(fds.len(), 2);
    assert_eq!(fds[0].read().unwrap(), None, "no interrupt yet");
    assert!(dev.enable_irqs(MSIX_IRQ, 6).unwrap_err().to_string().contains("the device has 5"));
    dev.disable_irqs(MSIX_IRQ).unwrap();
    let sets = kernel.device(ADDR).unwrap().irq_sets;
    assert_eq!(sets[0], (MSIX_IRQ, VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 2));
    assert_eq!(sets[1], (MSIX_IRQ, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0));
    // The same through the drivers' interrupt seam: MSI-X, one eventfd per vector, shared.
    {
        use drvkit::irq::IrqSource;
        assert_eq!(IrqSource::max_vectors(&dev), 5);
        let vectors = IrqSource::enable(&dev, 3).unwrap();
        assert_eq!(vectors.len(), 3);
        assert!(IrqSource::enable(&dev, 6).is_err());
        IrqSource::disable(&dev).unwrap();
        let sets = kernel.device(ADDR).unwrap().irq_sets;
        assert_eq!(sets[2], (MSIX_IRQ, VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 3));
        assert_eq!(sets[3], (MSIX_IRQ, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0));
    }

    // DMA: IOVA = VA, counted guards, unmapped with the last one; the guards own the memory.
    let memory = Arc::new(Allocator::no_huge().allocate(64 << 10).unwrap());
    let va = memory.as_ptr() as u64;
    let mapper = dev.container().clone();
    let m1 = mapper.map(&memory).unwrap();
    let m2 = dev.container().map_memory(&memory).unwrap();
    assert_eq!(kernel.state().dma_maps, vec![(va, va, 64 << 10)]);
    assert_eq!(dev.container().mappings(), [(va as usize, 64 << 10, 2)]);
    let weak = Arc::downgrade(&memory);
    drop(memory);
    drop(m1);
    assert_eq!(kernel.state().dma_maps.len(), 1);
    assert!(weak.upgrade().is_some(), "mapped memory stays alive");
    drop(m2);
    assert!(kernel.state().dma_maps.is_empty());
    assert!(dev.container().mappings().is_empty());
    assert!(weak.upgrade().is_none(), "freed once unmapped");

    drop((bar0, bar2, bar3, fds, dev, mapper, vfio));
    assert_eq!(kernel.state().open_fds(), 0, "every descriptor closed");
}

#[test]
fn devices_share_groups_and_the_container() {
    let sysfs = FakeSysfs::new("share");
    sysfs.add_driver("vfio-pci");
    for (a, g) in [("0000:00:02.0", 2), ("0000:00:02.1", 2), ("0000:00:03.0", 3)] {
        sysfs.add_device(&FakeDevice::net(a, 0x1af4, 0x1041).driver("vfio-pci").iommu_group(g));
    }
    let kernel = Arc::new(FakeVfio::new());
    kernel.add_group(
        2,
        FakeGroup::iommu(vec![
            FakeVfioDevice::pci("0000:00:02.0", 0x1af4, 0x1041).without_reset(),
            FakeVfioDevice::pci("0000:00:02.1", 0x1af4, 0x1041),
        ]),
    );
    kernel.add_group(3, FakeGroup::iommu(vec![FakeVfioDevice::pci("0000:00:03.0", 0x1af4, 0x1041)]));
    let vfio = vfio(&sysfs, &kernel, IovaMode::Va);
    let a = vfio.open_device(addr("0000:00:02.0")).unwrap();
    let b = vfio.open_device(addr("0000:00:02.1")).unwrap();
    let c = vfio.open_device(addr("0000:00:03.0")).unwrap();
    assert!(Arc::ptr_eq(a.group(), b.group()), "one group node, opened once");
    assert!(Arc::ptr_eq(a.container(), c.container()));
    let set_iommu = kernel.state().ioctls.iter().filter(|r| **r == VFIO_SET_IOMMU).count();
    assert_eq!(set_iommu, 1, "the backend is set once, with the first group");
    let memory = Arc::new(Allocator::no_huge().allocate(8192).unwrap());
    let _m1 = a.container().map(&memory).unwrap();
    let _m2 = c.container().map(&memory).unwrap();
    assert_eq!(kernel.state().dma_maps.len(), 1, "one mapping serves every device of the container");
    let err = a.reset().unwrap_err();
    assert!(matches!(err, VfioError::ResetUnsupported { .. }), "{err}");
    assert!(err.to_string().contains("its own registers"), "{err}");
}

#[test]
fn missing_vfio_module_says_modprobe() {
    let (sysfs, kernel) = setup("nomodule");
    kernel.state().vfio_node = false;
    let err = open_err(&sysfs, &kernel, IovaMode::Va, ADDR);
    assert!(matches!(err, VfioError::ModuleNotLoaded { .. }), "{err}");
    assert!(err.to_string().contains("modprobe vfio-pci"), "{err}");
}

#[test]
fn permission_denied_says_root_or_chown() {
    let (sysfs, kernel) = setup("perm");
    kernel.state().container_open_errno = Some(libc::EACCES);
    let err = open_err(&sysfs, &kernel, IovaMode::Va, ADDR);
    assert!(matches!(err, VfioError::Permission { .. }), "{err}");
    assert!(err.to_string().contains("run as root"), "{err}");
}

#[test]
fn wrong_api_version_is_refused() {
    let (sysfs, kernel) = setup("api");
    kernel.state().api_version = 1;
    let err = open_err(&sysfs, &kernel, IovaMode::Va, ADDR);
    assert!(matches!(err, VfioError::ApiVersion { found: 1, expected: 0 }), "{err}");
}

#[test]
fn without_type1v2_falls_back_to_type1_and_without_both_says_enable_the_iommu() {
    let (sysfs, kernel) = setup("type1");
    kernel.state().extensions = vec![VFIO_TYPE1_IOMMU];
    let dev = vfio(&sysfs, &kernel, IovaMode::Va).open_device(addr(ADDR)).unwrap();
    assert_eq!(dev.container().mode(), Some(IommuMode::Type1));
    drop(dev);

    let (sysfs, kernel) = setup("notype1");
    kernel.state().extensions = vec![VFIO_NOIOMMU_IOMMU];
    let err = open_err(&sysfs, &kernel, IovaMode::Va, ADDR);
    assert!(matches!(err, VfioError::NoType1 { noiommu_available: true }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("intel_iommu=on (or amd_iommu=on)") && msg.contains("--iova-mode pa"), "{msg}");
}

#[test]
fn group_not_viable_names_the_devices_to_bind() {
    let (sysfs, kernel) = setup("viable");
    sysfs.add_device(&FakeDevice::net("0000:00:02.1", 0x8086, 0x10c9).driver("igb").iommu_group(2));
    kernel.state().groups.get_mut(&2).unwrap().viable = false;
    let err = open_err(&sysfs, &kernel, IovaMode::Va, ADDR);
    assert!(matches!(err, VfioError::GroupNotViable { group: 2, .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("group 2 is not viable"), "{msg}");
    assert!(msg.contains("bind every device in /sys/kernel/iommu_groups/2/devices to vfio-pci"), "{msg}");
    assert!(msg.contains("0000:00:02.1 (igb)"), "{msg}");
    assert!(!msg.contains("0000:00:02.0 ("), "the device itself is bound: {msg}");
    assert_eq!(kernel.state().open_fds(), 0, "nothing left open after a failure");
}

#[test]
fn busy_group_says_who_to_look_for() {
    let (sysfs, kernel) = setup("busy");
    kernel.state().groups.get_mut(&2).unwrap().open_errno = Some(libc::EBUSY);
    let err = open_err(&sysfs, &kernel, IovaMode::Va, ADDR);
    assert!(matches!(err, VfioError::GroupBusy { group: 2, .. }), "{err}");
    assert!(err.to_string().contains("another process holds /dev/vfio/2 (find it with `fuser /dev/vfio/2`)"), "{err}");

    let (sysfs, kernel) = setup("busy-container");
    kernel.state().groups.get_mut(&2).unwrap().set_container_errno = Some(libc::EBUSY);
    let err = open_err(&sysfs, &kernel, IovaMode::Va, ADDR);
    assert!(matches!(err, VfioError::GroupInUse { group: 2, .. }), "{err}");
    assert!(err.to_string().contains("fuser /dev/vfio/2"), "{err}");
}

#[test]
fn a_second_vfio_in_the_same_process_finds_the_group_busy() {
    let (sysfs, kernel) = setup("twice");
    let first = vfio(&sysfs, &kernel, IovaMode::Va);
    let _dev = first.open_device(addr(ADDR)).unwrap();
    let err = open_err(&sysfs, &kernel, IovaMode::Va, ADDR);
    assert!(matches!(err, VfioError::GroupBusy { .. }), "{err}");
}

#[test]
fn set_iommu_eperm_explains_interrupt_remapping() {
    let (sysfs, kernel) = setup("eperm");
    kernel.state().set_iommu_errno = Some(libc::EPERM);
    let err = open_err(&sysfs, &kernel, IovaMode::Va, ADDR);
    assert!(matches!(err, VfioError::SetIommu { mode: IommuMode::Type1v2, .. }), "{err}");
    assert!(err.to_string().contains("allow_unsafe_interrupts"), "{err}");
}

#[test]
fn unbound_device_says_bind_it() {
    let (sysfs, kernel) = setup("unbound");
    sysfs.add_device(&FakeDevice::net("0000:00:04.0", 0x8086, 0x10c9).driver("igb").iommu_group(4));
    let err = open_err(&sysfs, &kernel, IovaMode::Va, "0000:00:04.0");
    assert!(matches!(err, VfioError::NotBound { .. }), "{err}");
    assert!(err.to_string().contains("(it is bound to igb); bind the device: `devbind -b vfio-pci 0000:00:04.0`"));
    let err = open_err(&sysfs, &kernel, IovaMode::Va, "0000:00:09.0");
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[test]
fn no_iommu_group_says_enable_the_iommu() {
    let sysfs = FakeSysfs::new("nogroup");
    sysfs.add_device(&FakeDevice::net(ADDR, 0x8086, 0x10c9).driver("igb"));
    let kernel = Arc::new(FakeVfio::new());
    let err = open_err(&sysfs, &kernel, IovaMode::Va, ADDR);
    assert!(matches!(err, VfioError::NoIommuGroup { .. }), "{err}");
    assert!(err.to_string().contains("add intel_iommu=on (or amd_iommu=on) to the kernel command line"), "{err}");
}

/// A machine without an IOMMU, VFIO in no-IOMMU mode: only `/dev/vfio/noiommu-0`.
fn setup_noiommu(tag: &str) -> (FakeSysfs, Arc<FakeVfio>) {
    let sysfs = FakeSysfs::new(tag);
    sysfs.add_driver("vfio-pci");
    sysfs.enable_noiommu();
    sysfs.add_device(&FakeDevice::net(ADDR, 0x8086, 0x10c9).driver("vfio-pci").iommu_group(0));
    let kernel = Arc::new(FakeVfio::new());
    kernel.state().extensions = vec![VFIO_TYPE1_IOMMU, VFIO_TYPE1v2_IOMMU, VFIO_NOIOMMU_IOMMU];
    kernel.add_group(0, FakeGroup::noiommu(vec![FakeVfioDevice::pci(ADDR, 0x8086, 0x10c9)]));
    (sysfs, kernel)
}

#[test]
fn no_iommu_needs_the_explicit_opt_in() {
    let (sysfs, kernel) = setup_noiommu("noiommu-refused");
    let err = open_err(&sysfs, &kernel, IovaMode::Va, ADDR);
    assert!(matches!(err, VfioError::NoIommuNotAllowed { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("/dev/vfio/noiommu-0") && msg.contains("--iova-mode pa"), "{msg}");
    assert!(msg.contains("intel_iommu=on"), "{msg}");
    assert!(kernel.state().ioctls.iter().all(|r| *r != VFIO_SET_IOMMU), "nothing was set up");
}

#[test]
fn no_iommu_mode_with_pa_opens_the_device_and_maps_nothing() {
    let (sysfs, kernel) = setup_noiommu("noiommu-pa");
    let vfio = vfio(&sysfs, &kernel, IovaMode::Pa);
    let dev = vfio.open_device(addr(ADDR)).unwrap();
    assert_eq!(dev.container().mode(), Some(IommuMode::NoIommu));
    assert_eq!(dev.container().iommu_info(), None, "no VFIO_IOMMU_GET_INFO in no-IOMMU mode");
    assert!(kernel.state().ioctls.iter().all(|r| *r != VFIO_IOMMU_GET_INFO));
    assert_eq!(kernel.state().iommu_type, Some(VFIO_NOIOMMU_IOMMU));
    // IOVA = VA memory is meaningless without an IOMMU.
    let memory = Arc::new(Allocator::no_huge().allocate(4096).unwrap());
    let err = dev.container().map_memory(&memory).unwrap_err();
    assert!(matches!(err, VfioError::IovaMode { .. }), "{err}");
    assert!(err.to_string().contains("--iova-mode pa"), "{err}");
    assert!(kernel.state().dma_maps.is_empty());
}

#[test]
fn no_iommu_opt_in_without_kernel_support_says_so() {
    let (sysfs, kernel) = setup_noiommu("noiommu-missing");
    kernel.state().extensions = vec![VFIO_TYPE1_IOMMU, VFIO_TYPE1v2_IOMMU];
    let err = open_err(&sysfs, &kernel, IovaMode::Pa, ADDR);
    assert!(matches!(err, VfioError::NoIommuUnavailable), "{err}");
    assert!(err.to_string().contains("enable_unsafe_noiommu_mode"), "{err}");
}

#[test]
fn pa_mode_with_an_iommu_uses_type1() {
    let (sysfs, kernel) = setup("pa-iommu");
    let dev = vfio(&sysfs, &kernel, IovaMode::Pa).open_device(addr(ADDR)).unwrap();
    assert_eq!(dev.container().mode(), Some(IommuMode::Type1v2));
}
