//! The VFIO user API (`include/uapi/linux/vfio.h`): ioctl numbers, flags and `#[repr(C)]` structs, each with its
//! size checked at compile time, plus byte (de)serialisation of those plain-data structs for the ioctl seam.
//!
//! All ioctls are `_IO(';', 100 + n)`: no size or direction is encoded; the structs carry `argsz`.

#![allow(missing_docs)] // names and meanings are the kernel's; see linux/vfio.h

use std::mem::size_of;

const VFIO_TYPE: u64 = b';' as u64;
const VFIO_BASE: u64 = 100;
const fn io(nr: u64) -> u64 {
    (VFIO_TYPE << 8) | (VFIO_BASE + nr)
}

pub const VFIO_API_VERSION: i32 = 0;

pub const VFIO_GET_API_VERSION: u64 = io(0);
pub const VFIO_CHECK_EXTENSION: u64 = io(1);
pub const VFIO_SET_IOMMU: u64 = io(2);
pub const VFIO_GROUP_GET_STATUS: u64 = io(3);
pub const VFIO_GROUP_SET_CONTAINER: u64 = io(4);
pub const VFIO_GROUP_UNSET_CONTAINER: u64 = io(5);
pub const VFIO_GROUP_GET_DEVICE_FD: u64 = io(6);
pub const VFIO_DEVICE_GET_INFO: u64 = io(7);
pub const VFIO_DEVICE_GET_REGION_INFO: u64 = io(8);
pub const VFIO_DEVICE_GET_IRQ_INFO: u64 = io(9);
pub const VFIO_DEVICE_SET_IRQS: u64 = io(10);
pub const VFIO_DEVICE_RESET: u64 = io(11);
pub const VFIO_IOMMU_GET_INFO: u64 = io(12);
pub const VFIO_IOMMU_MAP_DMA: u64 = io(13);
pub const VFIO_IOMMU_UNMAP_DMA: u64 = io(14);

const _: () = assert!(VFIO_GET_API_VERSION == 0x3b64);
const _: () = assert!(VFIO_GROUP_GET_DEVICE_FD == 0x3b6a);
const _: () = assert!(VFIO_DEVICE_RESET == 0x3b6f);
const _: () = assert!(VFIO_IOMMU_GET_INFO == 0x3b70);
const _: () = assert!(VFIO_IOMMU_UNMAP_DMA == 0x3b72);

// Extensions (VFIO_CHECK_EXTENSION / VFIO_SET_IOMMU).
pub const VFIO_TYPE1_IOMMU: u32 = 1;
pub const VFIO_TYPE1V2_IOMMU: u32 = 3;
pub const VFIO_NOIOMMU_IOMMU: u32 = 8;

// Group status flags.
pub const VFIO_GROUP_FLAGS_VIABLE: u32 = 1 << 0;
pub const VFIO_GROUP_FLAGS_CONTAINER_SET: u32 = 1 << 1;

// Device info flags.
pub const VFIO_DEVICE_FLAGS_RESET: u32 = 1 << 0;
pub const VFIO_DEVICE_FLAGS_PCI: u32 = 1 << 1;

// Region info flags and capabilities.
pub const VFIO_REGION_INFO_FLAG_READ: u32 = 1 << 0;
pub const VFIO_REGION_INFO_FLAG_WRITE: u32 = 1 << 1;
pub const VFIO_REGION_INFO_FLAG_MMAP: u32 = 1 << 2;
pub const VFIO_REGION_INFO_FLAG_CAPS: u32 = 1 << 3;
pub const VFIO_REGION_INFO_CAP_SPARSE_MMAP: u16 = 1;
pub const VFIO_REGION_INFO_CAP_TYPE: u16 = 2;
pub const VFIO_REGION_INFO_CAP_MSIX_MAPPABLE: u16 = 3;

// vfio-pci region and IRQ indices.
pub const VFIO_PCI_BAR0_REGION_INDEX: u32 = 0;
pub const VFIO_PCI_ROM_REGION_INDEX: u32 = 6;
pub const VFIO_PCI_CONFIG_REGION_INDEX: u32 = 7;
pub const VFIO_PCI_INTX_IRQ_INDEX: u32 = 0;
pub const VFIO_PCI_MSI_IRQ_INDEX: u32 = 1;
pub const VFIO_PCI_MSIX_IRQ_INDEX: u32 = 2;

// IRQ info and set flags.
pub const VFIO_IRQ_INFO_EVENTFD: u32 = 1 << 0;
pub const VFIO_IRQ_SET_DATA_NONE: u32 = 1 << 0;
pub const VFIO_IRQ_SET_DATA_BOOL: u32 = 1 << 1;
pub const VFIO_IRQ_SET_DATA_EVENTFD: u32 = 1 << 2;
pub const VFIO_IRQ_SET_ACTION_MASK: u32 = 1 << 3;
pub const VFIO_IRQ_SET_ACTION_UNMASK: u32 = 1 << 4;
pub const VFIO_IRQ_SET_ACTION_TRIGGER: u32 = 1 << 5;

// IOMMU info flags and capabilities.
pub const VFIO_IOMMU_INFO_PGSIZES: u32 = 1 << 0;
pub const VFIO_IOMMU_INFO_CAPS: u32 = 1 << 1;
pub const VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE: u16 = 1;
pub const VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL: u16 = 3;

// DMA map flags.
pub const VFIO_DMA_MAP_FLAG_READ: u32 = 1 << 0;
pub const VFIO_DMA_MAP_FLAG_WRITE: u32 = 1 << 1;

/// `struct vfio_group_status`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_group_status {
    pub argsz: u32,
    pub flags: u32,
}

/// `struct vfio_device_info` (with `cap_offset`, kernel 5.x+; older kernels fill the first 16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_device_info {
    pub argsz: u32,
    pub flags: u32,
    pub num_regions: u32,
    pub num_irqs: u32,
    pub cap_offset: u32,
    pub pad: u32,
}

/// `struct vfio_region_info`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_region_info {
    pub argsz: u32,
    pub flags: u32,
    pub index: u32,
    pub cap_offset: u32,
    pub size: u64,
    pub offset: u64,
}

/// `struct vfio_info_cap_header`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_info_cap_header {
    pub id: u16,
    pub version: u16,
    pub next: u32,
}

/// `struct vfio_region_info_cap_sparse_mmap` without its flexible array of areas.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_region_info_cap_sparse_mmap {
    pub header: vfio_info_cap_header,
    pub nr_areas: u32,
    pub reserved: u32,
}

/// `struct vfio_region_sparse_mmap_area`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_region_sparse_mmap_area {
    pub offset: u64,
    pub size: u64,
}

/// `struct vfio_irq_info`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_irq_info {
    pub argsz: u32,
    pub flags: u32,
    pub index: u32,
    pub count: u32,
}

/// `struct vfio_irq_set` without its flexible `data`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_irq_set {
    pub argsz: u32,
    pub flags: u32,
    pub index: u32,
    pub start: u32,
    pub count: u32,
}

/// `struct vfio_iommu_type1_info`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_iommu_type1_info {
    pub argsz: u32,
    pub flags: u32,
    pub iova_pgsizes: u64,
    pub cap_offset: u32,
    pub pad: u32,
}

/// `struct vfio_iommu_type1_info_cap_iova_range` without its ranges.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_iommu_type1_info_cap_iova_range {
    pub header: vfio_info_cap_header,
    pub nr_iovas: u32,
    pub reserved: u32,
}

/// `struct vfio_iova_range` (inclusive end).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_iova_range {
    pub start: u64,
    pub end: u64,
}

/// `struct vfio_iommu_type1_info_dma_avail`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_iommu_type1_info_dma_avail {
    pub header: vfio_info_cap_header,
    pub avail: u32,
}

/// `struct vfio_iommu_type1_dma_map`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_iommu_type1_dma_map {
    pub argsz: u32,
    pub flags: u32,
    pub vaddr: u64,
    pub iova: u64,
    pub size: u64,
}

/// `struct vfio_iommu_type1_dma_unmap` without its flexible `data`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vfio_iommu_type1_dma_unmap {
    pub argsz: u32,
    pub flags: u32,
    pub iova: u64,
    pub size: u64,
}

const _: () = assert!(size_of::<vfio_group_status>() == 8);
const _: () = assert!(size_of::<vfio_device_info>() == 24);
const _: () = assert!(size_of::<vfio_region_info>() == 32);
const _: () = assert!(size_of::<vfio_info_cap_header>() == 8);
const _: () = assert!(size_of::<vfio_region_info_cap_sparse_mmap>() == 16);
const _: () = assert!(size_of::<vfio_region_sparse_mmap_area>() == 16);
const _: () = assert!(size_of::<vfio_irq_info>() == 16);
const _: () = assert!(size_of::<vfio_irq_set>() == 20);
const _: () = assert!(size_of::<vfio_iommu_type1_info>() == 24);
const _: () = assert!(size_of::<vfio_iommu_type1_info_cap_iova_range>() == 16);
const _: () = assert!(size_of::<vfio_iova_range>() == 16);
const _: () = assert!(size_of::<vfio_iommu_type1_info_dma_avail>() == 12);
const _: () = assert!(size_of::<vfio_iommu_type1_dma_map>() == 32);
const _: () = assert!(size_of::<vfio_iommu_type1_dma_unmap>() == 24);

/// Plain data that can be copied to and from bytes.
///
/// # Safety
/// Implementors are `#[repr(C)]`, have no padding bytes and accept every bit pattern (integers only).
pub unsafe trait Pod: Copy + Default + 'static {}

// SAFETY: each is repr(C), made of u16/u32/u64 fields with no padding (sizes asserted above equal the field sums).
unsafe impl Pod for vfio_group_status {}
// SAFETY: as above.
unsafe impl Pod for vfio_device_info {}
// SAFETY: as above.
unsafe impl Pod for vfio_region_info {}
// SAFETY: as above.
unsafe impl Pod for vfio_info_cap_header {}
// SAFETY: as above.
unsafe impl Pod for vfio_region_info_cap_sparse_mmap {}
// SAFETY: as above.
unsafe impl Pod for vfio_region_sparse_mmap_area {}
// SAFETY: as above.
unsafe impl Pod for vfio_irq_info {}
// SAFETY: as above.
unsafe impl Pod for vfio_irq_set {}
// SAFETY: as above.
unsafe impl Pod for vfio_iommu_type1_info {}
// SAFETY: as above.
unsafe impl Pod for vfio_iommu_type1_info_cap_iova_range {}
// SAFETY: as above.
unsafe impl Pod for vfio_iova_range {}
// SAFETY: as above (4-byte aligned: header u16,u16,u32 then u32; 12 bytes, no tail padding).
unsafe impl Pod for vfio_iommu_type1_info_dma_avail {}
// SAFETY: as above.
unsafe impl Pod for vfio_iommu_type1_dma_map {}
// SAFETY: as above.
unsafe impl Pod for vfio_iommu_type1_dma_unmap {}
// SAFETY: primitive integers.
unsafe impl Pod for i32 {}
// SAFETY: primitive integers.
unsafe impl Pod for u32 {}

/// The bytes of `value`.
pub fn to_bytes<T: Pod>(value: &T) -> Vec<u8> {
    // SAFETY: T is Pod: size_of::<T>() initialised bytes with no padding, readable as u8.
    unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
}

/// Reads a `T` at `offset` of `bytes`, or `None` when it does not fit.
pub fn read_pod<T: Pod>(bytes: &[u8], offset: usize) -> Option<T> {
    let end = offset.checked_add(size_of::<T>())?;
    let src = bytes.get(offset..end)?;
    let mut value = T::default();
    // SAFETY: T is Pod (any bit pattern is valid); src has exactly size_of::<T>() bytes; the regions are distinct.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), (&mut value as *mut T).cast::<u8>(), size_of::<T>()) };
    Some(value)
}

/// Writes `value` at `offset` of `bytes`; false when it does not fit.
pub fn write_pod<T: Pod>(bytes: &mut [u8], offset: usize, value: &T) -> bool {
    let Some(end) = offset.checked_add(size_of::<T>()) else { return false };
    match bytes.get_mut(offset..end) {
        Some(dst) => {
            dst.copy_from_slice(&to_bytes(value));
            true
        }
        None => false,
    }
}
