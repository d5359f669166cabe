//! Parsing of the kernel's VFIO answers (region info with capability chains, IOMMU info) and the DMA range checks.

use std::sync::Arc;

use drvkit::pci::fake::{FakeDevice, FakeSysfs};
use drvkit::vfio::bindings::*;
use drvkit::vfio::fake::{FakeGroup, FakeVfio, FakeVfioDevice};
use drvkit::vfio::{
    parse_iommu_info, parse_region_info, IommuInfo, IovaRange, SparseArea, Vfio, VfioConfig, VfioError,
};
use hugepage::{Allocator, IovaMode};

fn region(flags: u32, cap_offset: u32, size: u64) -> Vec<u8> {
    to_bytes(&vfio_region_info { argsz: 0, flags, index: 3, cap_offset, size, offset: 3 << 40 })
}

fn cap(id: u32, next: u32) -> Vec<u8> {
    to_bytes(&vfio_info_cap_header { id: u16::try_from(id).unwrap(), version: 1, next })
}

#[test]
fn region_info_without_caps() {
    let r = parse_region_info(&region(VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_MMAP, 0, 0x4000)).unwrap();
    assert_eq!((r.index, r.size, r.offset), (3, 0x4000, 3 << 40));
    assert!(r.readable() && !r.writable() && r.mmappable());
    assert_eq!(r.sparse_areas, None);
    assert_eq!(r.mmap_areas(), [SparseArea { offset: 0, size: 0x4000 }]);
    // Not mmap-able, or empty: nothing to map.
    assert!(parse_region_info(&region(VFIO_REGION_INFO_FLAG_READ, 0, 32)).unwrap().mmap_areas().is_empty());
    assert!(parse_region_info(&region(VFIO_REGION_INFO_FLAG_MMAP, 0, 0)).unwrap().mmap_areas().is_empty());
    assert!(matches!(parse_region_info(&[0u8; 31]), Err(VfioError::Malformed { .. })));
}

#[test]
fn region_info_with_sparse_mmap_and_msix_caps() {
    let flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_MMAP | VFIO_REGION_INFO_FLAG_CAPS;
    let mut bytes = region(flags, 32, 0x4000);
    // Sparse mmap at 32: two areas (the MSI-X table page at 0x1000 left out), then MSI-X mappable at 80.
    bytes.extend(cap(VFIO_REGION_INFO_CAP_SPARSE_MMAP, 80));
    bytes.extend(2u32.to_ne_bytes());
    bytes.extend(0u32.to_ne_bytes());
    bytes.extend(to_bytes(&vfio_region_sparse_mmap_area { offset: 0, size: 0x1000 }));
    bytes.extend(to_bytes(&vfio_region_sparse_mmap_area { offset: 0x2000, size: 0x2000 }));
    assert_eq!(bytes.len(), 80);
    bytes.extend(cap(VFIO_REGION_INFO_CAP_MSIX_MAPPABLE, 0));
    let r = parse_region_info(&bytes).unwrap();
    assert_eq!(
        r.sparse_areas,
        Some(vec![SparseArea { offset: 0, size: 0x1000 }, SparseArea { offset: 0x2000, size: 0x2000 }])
    );
    assert!(r.msix_mappable);
    assert_eq!(r.mmap_areas().len(), 2);

    // An area past the region's end is never mapped; zero areas means nothing is mmap-able.
    let mut odd = region(flags, 32, 0x2000);
    odd.extend(cap(VFIO_REGION_INFO_CAP_SPARSE_MMAP, 0));
    odd.extend(2u32.to_ne_bytes());
    odd.extend(0u32.to_ne_bytes());
    odd.extend(to_bytes(&vfio_region_sparse_mmap_area { offset: 0, size: 0x1000 }));
    odd.extend(to_bytes(&vfio_region_sparse_mmap_area { offset: 0x1000, size: 0x2000 }));
    assert_eq!(parse_region_info(&odd).unwrap().mmap_areas(), [SparseArea { offset: 0, size: 0x1000 }]);
    let mut none = region(flags, 32, 0x2000);
    none.extend(cap(VFIO_REGION_INFO_CAP_SPARSE_MMAP, 0));
    none.extend([0u8; 8]);
    assert!(parse_region_info(&none).unwrap().mmap_areas().is_empty());
}

#[test]
fn malformed_capability_chains_are_errors_not_hangs() {
    let flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_CAPS;
    // A cap pointing at itself.
    let mut looped = region(flags, 32, 0x1000);
    looped.extend(cap(99, 32));
    assert!(matches!(parse_region_info(&looped), Err(VfioError::Malformed { .. })));
    // A cap offset inside the fixed struct.
    assert!(matches!(parse_region_info(&region(flags, 8, 0x1000)), Err(VfioError::Malformed { .. })));
    // A cap past the end of the answer.
    assert!(matches!(parse_region_info(&region(flags, 64, 0x1000)), Err(VfioError::Malformed { .. })));
    // More sparse areas announced than present.
    let mut short = region(flags, 32, 0x1000);
    short.extend(cap(VFIO_REGION_INFO_CAP_SPARSE_MMAP, 0));
    short.extend(3u32.to_ne_bytes());
    short.extend(0u32.to_ne_bytes());
    short.extend(to_bytes(&vfio_region_sparse_mmap_area { offset: 0, size: 0x1000 }));
    let err = parse_region_info(&short).unwrap_err();
    assert!(err.to_string().contains("sparse area 1 of 3"), "{err}");
    // Unknown capabilities are skipped.
    let mut unknown = region(flags, 32, 0x1000);
    unknown.extend(cap(VFIO_REGION_INFO_CAP_TYPE, 0));
    unknown.extend([0u8; 8]);
    assert_eq!(parse_region_info(&unknown).unwrap().sparse_areas, None);
}

#[test]
fn iommu_info_with_ranges_and_dma_avail() {
    let mut bytes = to_bytes(&vfio_iommu_type1_info {
        argsz: 0,
        flags: VFIO_IOMMU_INFO_PGSIZES | VFIO_IOMMU_INFO_CAPS,
        iova_pgsizes: 0x4020_1000,
        cap_offset: 24,
        pad: 0,
    });
    bytes.extend(cap(VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE, 72));
    bytes.extend(2u32.to_ne_bytes());
    bytes.extend(0u32.to_ne_bytes());
    bytes.extend(to_bytes(&vfio_iova_range { start: 0, end: 0xfedf_ffff }));
    bytes.extend(to_bytes(&vfio_iova_range { start: 0xfef0_0000, end: 0xffff_ffff_ffff }));
    assert_eq!(bytes.len(), 72);
    bytes.extend(cap(VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL, 0));
    bytes.extend(65000u32.to_ne_bytes());
    let info = parse_iommu_info(&bytes).unwrap();
    assert_eq!(info.page_sizes, 0x4020_1000);
    assert_eq!(
        info.iova_ranges,
        [IovaRange { start: 0, end: 0xfedf_ffff }, IovaRange { start: 0xfef0_0000, end: 0xffff_ffff_ffff }]
    );
    assert_eq!(info.dma_avail, Some(65000));

    // An old kernel: page sizes only.
    let old =
        to_bytes(&vfio_iommu_type1_info { flags: VFIO_IOMMU_INFO_PGSIZES, iova_pgsizes: 0x1000, ..Default::default() });
    let info = parse_iommu_info(&old).unwrap();
    assert!(info.iova_ranges.is_empty() && info.dma_avail.is_none());
}

fn vtd() -> IommuInfo {
    IommuInfo {
        page_sizes: 0x4020_1000,
        iova_ranges: vec![
            IovaRange { start: 0, end: 0xfedf_ffff },
            IovaRange { start: 0xfef0_0000, end: 0xffff_ffff_ffff },
        ],
        dma_avail: None,
    }
}

#[test]
fn dma_range_checks() {
    let info = vtd();
    info.check_range(0x4000_0000, 2 << 20).unwrap();
    info.check_range(0x7f12_3456_0000, 0x1000).unwrap();
    info.check_range(0xfef0_0000, 0x1000).unwrap();
    let reason = |iova: u64, size: u64| info.check_range(iova, size).unwrap_err().to_string();
    // The MSI window, whole or touched at either end.
    assert!(reason(0xfee0_0000, 0x1000).contains("MSI window"));
    assert!(reason(0xfed0_0000, 0x20_0000).contains("MSI window"));
    assert!(reason(0xfeef_f000, 0x2000).contains("MSI window"));
    // Outside the address width (a 39-bit virtio-iommu would refuse IOVA = VA).
    let narrow = IommuInfo {
        iova_ranges: vec![
            IovaRange { start: 0, end: 0xfedf_ffff },
            IovaRange { start: 0xfef0_0000, end: 0x7f_ffff_ffff },
        ],
        ..vtd()
    };
    let msg = narrow.check_range(0x7f12_3456_0000, 0x1000).unwrap_err().to_string();
    assert!(msg.contains("outside the IOMMU's usable IOVA ranges") && msg.contains("aw-bits=48"), "{msg}");
    assert!(reason(0x1_0000_0000_0000, 0x1000).contains("outside"));
    // Alignment, emptiness, wrap-around.
    assert!(reason(0x4000_0800, 0x1000).contains("not aligned"));
    assert!(reason(0x4000_0000, 0x800).contains("not aligned"));
    assert!(reason(0x4000_0000, 0).contains("empty"));
    assert!(reason(u64::MAX - 0xfff, 0x2000).contains("wraps"));
    // Unknown ranges (old kernel): only the MSI window and alignment are checked.
    let old = IommuInfo { page_sizes: 0, iova_ranges: vec![], dma_avail: None };
    old.check_range(0x7f12_3456_0000, 0x1000).unwrap();
    assert!(old.check_range(0xfee0_0000, 0x1000).is_err());
}

fn open_one(tag: &str) -> (FakeSysfs, Arc<FakeVfio>, drvkit::vfio::VfioDevice) {
    let sysfs = FakeSysfs::new(tag);
    sysfs.add_driver("vfio-pci");
    sysfs.add_device(&FakeDevice::net("0000:00:02.0", 0x8086, 0x10c9).driver("vfio-pci").iommu_group(2));
    let kernel = Arc::new(FakeVfio::new());
    kernel.add_group(2, FakeGroup::iommu(vec![FakeVfioDevice::pci("0000:00:02.0", 0x8086, 0x10c9)]));
    let vfio = Vfio::with_parts(kernel.clone(), sysfs.sysfs(), VfioConfig::with_iova_mode(IovaMode::Va));
    let dev = vfio.open_device("0000:00:02.0".parse().unwrap()).unwrap();
    (sysfs, kernel, dev)
}

#[test]
fn map_memory_checks_ranges_before_asking_the_kernel() {
    let sysfs = FakeSysfs::new("narrow");
    sysfs.add_driver("vfio-pci");
    sysfs.add_device(&FakeDevice::net("0000:00:02.0", 0x8086, 0x10c9).driver("vfio-pci").iommu_group(2));
    let kernel = Arc::new(FakeVfio::new());
    kernel.state().iova_ranges = vec![(0, 0xfedf_ffff), (0xfef0_0000, 0x7f_ffff_ffff)];
    kernel.add_group(2, FakeGroup::iommu(vec![FakeVfioDevice::pci("0000:00:02.0", 0x8086, 0x10c9)]));
    let vfio = Vfio::with_parts(kernel.clone(), sysfs.sysfs(), VfioConfig::default());
    let dev = vfio.open_device("0000:00:02.0".parse().unwrap()).unwrap();
    let memory = Arc::new(Allocator::no_huge().allocate(4096).unwrap());
    if (memory.as_ptr() as u64) > 0x7f_ffff_ffff {
        let err = dev.container().map_memory(&memory).unwrap_err();
        assert!(matches!(err, VfioError::DmaRange { .. }), "{err}");
        assert!(kernel.state().ioctls.iter().all(|r| *r != VFIO_IOMMU_MAP_DMA), "refused before the ioctl");
    }
}

#[test]
fn map_dma_failures_carry_the_fix() {
    let (_sysfs, kernel, dev) = open_one("enomem");
    let memory = Arc::new(Allocator::no_huge().allocate(4096).unwrap());
    kernel.state().map_errno = Some(libc::ENOMEM);
    let err = dev.container().map_memory(&memory).unwrap_err();
    assert!(matches!(err, VfioError::DmaMap { .. }), "{err}");
    assert!(err.to_string().contains("ulimit -l"), "{err}");
    kernel.state().map_errno = Some(libc::ENOSPC);
    assert!(dev.container().map_memory(&memory).unwrap_err().to_string().contains("dma_entry_limit"));
    kernel.state().map_errno = None;
    let _m = dev.container().map_memory(&memory).unwrap();
    assert_eq!(dev.container().mappings(), [(memory.as_ptr() as usize, 4096, 1)]);
}

#[test]
fn region_access_is_bounds_checked() {
    let (_sysfs, _kernel, dev) = open_one("bounds");
    let mut buf = [0u8; 4];
    dev.read_region(2, 28, &mut buf).unwrap();
    let err = dev.read_region(2, 30, &mut buf).unwrap_err();
    assert!(err.to_string().contains("past the region's 0x20 bytes"), "{err}");
    assert!(dev.write_region(9, 0, &buf).unwrap_err().to_string().contains("the device has 9 regions"));
    let bar0 = dev.map_bar(0).unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        use drvkit::bar::RegisterSpace;
        bar0.read32(128 << 10)
    }));
    assert!(caught.is_err(), "an access past the BAR panics instead of touching other memory");
}
