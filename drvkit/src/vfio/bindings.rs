//! The VFIO user API (`include/uapi/linux/vfio.h`): the kernel's structs and constants come from the
//! `vfio-bindings` crate (generated from the kernel header); this file adds what that crate lacks (the ioctl
//! request numbers), the struct sizes checked at compile time, and byte (de)serialisation of those plain-data
//! structs for the [`super::sys::VfioSys`] seam.
//!
//! All ioctls are `_IO(VFIO_TYPE, VFIO_BASE + n)`: no size or direction is encoded; the structs carry `argsz`.
//! `vfio-bindings` gives no request numbers (its sibling `vfio-ioctls` computes them privately), so they are
//! computed here from its `VFIO_TYPE` and `VFIO_BASE`.

#![allow(missing_docs)] // names and meanings are the kernel's; see linux/vfio.h

use std::mem::size_of;

pub use vfio_bindings::bindings::vfio::{
    vfio_device_info, vfio_group_status, vfio_info_cap_header, vfio_iommu_type1_dma_map, vfio_iommu_type1_dma_unmap,
    vfio_iommu_type1_info, vfio_iommu_type1_info_cap_iova_range, vfio_iommu_type1_info_dma_avail, vfio_iova_range,
    vfio_irq_info, vfio_irq_set, vfio_region_info, vfio_region_info_cap_sparse_mmap, vfio_region_sparse_mmap_area,
    VFIO_TYPE1v2_IOMMU, VFIO_API_VERSION, VFIO_BASE, VFIO_DEVICE_FLAGS_PCI, VFIO_DEVICE_FLAGS_RESET,
    VFIO_DMA_MAP_FLAG_READ, VFIO_DMA_MAP_FLAG_WRITE, VFIO_GROUP_FLAGS_CONTAINER_SET, VFIO_GROUP_FLAGS_VIABLE,
    VFIO_IOMMU_INFO_CAPS, VFIO_IOMMU_INFO_PGSIZES, VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE,
    VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL, VFIO_IRQ_INFO_EVENTFD, VFIO_IRQ_SET_ACTION_MASK, VFIO_IRQ_SET_ACTION_TRIGGER,
    VFIO_IRQ_SET_ACTION_UNMASK, VFIO_IRQ_SET_DATA_BOOL, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE,
    VFIO_NOIOMMU_IOMMU, VFIO_PCI_BAR0_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX, VFIO_PCI_INTX_IRQ_INDEX,
    VFIO_PCI_MSIX_IRQ_INDEX, VFIO_PCI_MSI_IRQ_INDEX, VFIO_PCI_ROM_REGION_INDEX, VFIO_REGION_INFO_CAP_MSIX_MAPPABLE,
    VFIO_REGION_INFO_CAP_SPARSE_MMAP, VFIO_REGION_INFO_CAP_TYPE, VFIO_REGION_INFO_FLAG_CAPS,
    VFIO_REGION_INFO_FLAG_MMAP, VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE, VFIO_TYPE, VFIO_TYPE1_IOMMU,
};

const fn io(nr: u32) -> u64 {
    ((VFIO_TYPE as u64) << 8) | (VFIO_BASE + nr) as u64
}

/// `VFIO_API_VERSION` as `VFIO_GET_API_VERSION` returns it (the ioctl's `int` result).
pub const API_VERSION: i32 = VFIO_API_VERSION as i32;

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

// The kernel ABI sizes (flexible array members add nothing); a binding that drifted would fail here.
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
/// Implementors are `#[repr(C)]`, have no padding bytes and accept every bit pattern (integers only, plus
/// zero-sized flexible-array markers).
pub unsafe trait Pod: Default + 'static {}

// SAFETY: each is bindgen's repr(C) struct of u16/u32/u64 fields with no padding (sizes asserted above equal the
// field sums); the flexible-array tails of some are zero-sized `[T; 0]` markers that hold no bytes.
unsafe impl Pod for vfio_group_status {}
// SAFETY: as above.
unsafe impl Pod for vfio_device_info {}
// SAFETY: as above.
unsafe impl Pod for vfio_region_info {}
// SAFETY: as above.
unsafe impl Pod for vfio_info_cap_header {}
// SAFETY: as above (header 8 + two u32 = 16, the areas tail is zero-sized and 8-aligned at 16).
unsafe impl Pod for vfio_region_info_cap_sparse_mmap {}
// SAFETY: as above.
unsafe impl Pod for vfio_region_sparse_mmap_area {}
// SAFETY: as above.
unsafe impl Pod for vfio_irq_info {}
// SAFETY: as above (five u32 = 20, the u8 data tail is zero-sized).
unsafe impl Pod for vfio_irq_set {}
// SAFETY: as above.
unsafe impl Pod for vfio_iommu_type1_info {}
// SAFETY: as above (header 8 + two u32 = 16, the ranges tail is zero-sized and 8-aligned at 16).
unsafe impl Pod for vfio_iommu_type1_info_cap_iova_range {}
// SAFETY: as above.
unsafe impl Pod for vfio_iova_range {}
// SAFETY: as above (4-byte aligned: header u16,u16,u32 then u32; 12 bytes, no tail padding).
unsafe impl Pod for vfio_iommu_type1_info_dma_avail {}
// SAFETY: as above.
unsafe impl Pod for vfio_iommu_type1_dma_map {}
// SAFETY: as above (u32,u32,u64,u64 = 24, the u8 data tail is zero-sized).
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
