//! A device opened through VFIO: regions (BARs, config space), reset, interrupts.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use volatile::VolatilePtr;

use super::bindings::*;
use super::container::{info_with_caps, walk_caps, Container, Group};
use super::error::{Result, VfioError};
use super::sys::{Fd, IoctlArg, Mapping, VfioSys};
use crate::bar::{MmioBar, RegisterSpace};
use crate::pci::{ConfigSpace, PciAddress};

/// Region index of the PCI configuration space.
pub const CONFIG_REGION: u32 = VFIO_PCI_CONFIG_REGION_INDEX;
/// IRQ index of MSI-X.
pub const MSIX_IRQ: u32 = VFIO_PCI_MSIX_IRQ_INDEX;
/// IRQ index of MSI.
pub const MSI_IRQ: u32 = VFIO_PCI_MSI_IRQ_INDEX;
/// IRQ index of legacy INTx.
pub const INTX_IRQ: u32 = VFIO_PCI_INTX_IRQ_INDEX;

/// What `VFIO_DEVICE_GET_INFO` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `VFIO_DEVICE_FLAGS_*`.
    pub flags: u32,
    /// Number of regions (9 for PCI: BARs 0-5, ROM, config, VGA).
    pub num_regions: u32,
    /// Number of IRQ indices (INTx, MSI, MSI-X, ERR, REQ).
    pub num_irqs: u32,
}

impl DeviceInfo {
    /// `VFIO_DEVICE_RESET` works (FLR, PM or bus reset available).
    pub fn can_reset(&self) -> bool {
        self.flags & VFIO_DEVICE_FLAGS_RESET != 0
    }

    /// A vfio-pci device.
    pub fn is_pci(&self) -> bool {
        self.flags & VFIO_DEVICE_FLAGS_PCI != 0
    }
}

/// An mmap-able part of a region (sparse mmap capability), relative to the region's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SparseArea {
    /// Offset in the region.
    pub offset: u64,
    /// Bytes.
    pub size: u64,
}

/// What `VFIO_DEVICE_GET_REGION_INFO` says about a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionInfo {
    /// Region index.
    pub index: u32,
    /// `VFIO_REGION_INFO_FLAG_*`.
    pub flags: u32,
    /// Bytes (0: not implemented).
    pub size: u64,
    /// Offset of the region in the device fd (for pread/pwrite/mmap).
    pub offset: u64,
    /// With the sparse mmap capability: the only parts that may be mmapped.
    pub sparse_areas: Option<Vec<SparseArea>>,
    /// The MSI-X table in this BAR may be mmapped too (`VFIO_REGION_INFO_CAP_MSIX_MAPPABLE`).
    pub msix_mappable: bool,
}

impl RegionInfo {
    /// Readable through the fd.
    pub fn readable(&self) -> bool {
        self.flags & VFIO_REGION_INFO_FLAG_READ != 0
    }

    /// Writable through the fd.
    pub fn writable(&self) -> bool {
        self.flags & VFIO_REGION_INFO_FLAG_WRITE != 0
    }

    /// May be mmapped (all of it, or the sparse areas).
    pub fn mmappable(&self) -> bool {
        self.flags & VFIO_REGION_INFO_FLAG_MMAP != 0
    }

    /// The parts to mmap: the sparse areas, or the whole region; none if not mmap-able.
    pub fn mmap_areas(&self) -> Vec<SparseArea> {
        if !self.mmappable() || self.size == 0 {
            return Vec::new();
        }
        match &self.sparse_areas {
            Some(areas) => areas.iter().copied().filter(|a| a.size > 0 && a.offset + a.size <= self.size).collect(),
            None => vec![SparseArea { offset: 0, size: self.size }],
        }
    }
}

/// Parses a `VFIO_DEVICE_GET_REGION_INFO` answer (the struct and its capability chain).
pub fn parse_region_info(bytes: &[u8]) -> Result<RegionInfo> {
    const WHAT: &str = "VFIO_DEVICE_GET_REGION_INFO";
    let raw: vfio_region_info = read_pod(bytes, 0)
        .ok_or_else(|| VfioError::Malformed { what: WHAT, reason: format!("{} bytes", bytes.len()) })?;
    let mut info = RegionInfo {
        index: raw.index,
        flags: raw.flags,
        size: raw.size,
        offset: raw.offset,
        sparse_areas: None,
        msix_mappable: false,
    };
    if raw.flags & VFIO_REGION_INFO_FLAG_CAPS == 0 || raw.cap_offset == 0 {
        return Ok(info);
    }
    let min = std::mem::size_of::<vfio_region_info>();
    for (id, _version, offset) in walk_caps(bytes, raw.cap_offset, min, WHAT)? {
        match id {
            VFIO_REGION_INFO_CAP_SPARSE_MMAP => {
                let cap: vfio_region_info_cap_sparse_mmap = read_pod(bytes, offset)
                    .ok_or_else(|| VfioError::Malformed { what: WHAT, reason: "truncated sparse mmap cap".into() })?;
                let base = offset + std::mem::size_of::<vfio_region_info_cap_sparse_mmap>();
                let mut areas = Vec::new();
                for i in 0..cap.nr_areas as usize {
                    let a: vfio_region_sparse_mmap_area =
                        read_pod(bytes, base + i * 16).ok_or_else(|| VfioError::Malformed {
                            what: WHAT,
                            reason: format!("sparse area {i} of {} past the answer", cap.nr_areas),
                        })?;
                    areas.push(SparseArea { offset: a.offset, size: a.size });
                }
                info.sparse_areas = Some(areas);
            }
            VFIO_REGION_INFO_CAP_MSIX_MAPPABLE => info.msix_mappable = true,
            _ => {}
        }
    }
    Ok(info)
}

/// What `VFIO_DEVICE_GET_IRQ_INFO` says about an IRQ index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrqInfo {
    /// IRQ index.
    pub index: u32,
    /// `VFIO_IRQ_INFO_*`.
    pub flags: u32,
    /// Vectors available.
    pub count: u32,
}

/// An eventfd a device interrupt signals.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// A new eventfd (non-blocking, close-on-exec, count 0): what a device's interrupt vector signals.
    pub fn new() -> io::Result<EventFd> {
        super::sys::RealSys.eventfd().map(EventFd)
    }

    /// Adds 1 to the counter, as an interrupt does: the descriptor becomes readable.
    pub fn signal(&self) -> io::Result<()> {
        use std::io::Write;
        // SAFETY: fd stays open for the call (owned by the EventFd); ManuallyDrop keeps File from closing it.
        let mut file = std::mem::ManuallyDrop::new(unsafe {
            <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(self.0.as_raw_fd())
        });
        match file.write(&1u64.to_ne_bytes()) {
            Ok(8) => Ok(()),
            Ok(_) => Err(io::Error::other("short eventfd write")),
            // The counter is at its maximum: it is readable already, which is all a signal means.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Reads and clears the counter: `Some(n)` interrupts since the last read, `None` if none (non-blocking).
    pub fn read(&self) -> io::Result<Option<u64>> {
        let mut buf = [0u8; 8];
        match rustix_like_read(self.0.as_raw_fd(), &mut buf) {
            Ok(8) => Ok(Some(u64::from_ne_bytes(buf))),
            Ok(_) => Err(io::Error::other("short eventfd read")),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

fn rustix_like_read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    use std::io::Read;
    // Borrow the fd as a File without taking ownership.
    // SAFETY: fd stays open for the call (owned by the EventFd); ManuallyDrop keeps File from closing it.
    let mut file = std::mem::ManuallyDrop::new(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    file.read(buf)
}

/// A PCI device opened through VFIO.
///
/// Typical bring-up: [`VfioDevice::reset`] (when [`DeviceInfo::can_reset`]), [`VfioDevice::map_bar`] for the
/// registers, `set_bus_master(true)` ([`ConfigSpace`]) before any DMA, the container's
/// [`crate::dma::DmaMapper`] ([`VfioDevice::container`]) for rings and packet buffers.
pub struct VfioDevice {
    addr: PciAddress,
    fd: Arc<Fd>,
    group: Arc<Group>,
    info: DeviceInfo,
    config: RegionInfo,
}

impl fmt::Debug for VfioDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VfioDevice")
            .field("addr", &self.addr)
            .field("group", &self.group.number())
            .field("info", &self.info)
            .finish()
    }
}

impl VfioDevice {
    pub(crate) fn open(group: Arc<Group>, addr: PciAddress) -> Result<VfioDevice> {
        let fd = Arc::new(group.device_fd(addr)?);
        let initial = to_bytes(&vfio_device_info { argsz: 24, ..Default::default() });
        let mut bytes = initial.clone();
        fd.ioctl(VFIO_DEVICE_GET_INFO, IoctlArg::Buf(&mut bytes))
            .map_err(|e| VfioError::os(format!("VFIO_DEVICE_GET_INFO on {addr}"), e))?;
        let raw: vfio_device_info = read_pod(&bytes, 0).unwrap_or_default();
        let info = DeviceInfo { flags: raw.flags, num_regions: raw.num_regions, num_irqs: raw.num_irqs };
        if !info.is_pci() || info.num_regions <= CONFIG_REGION {
            return Err(VfioError::Region {
                addr,
                index: CONFIG_REGION,
                reason: format!("not a vfio-pci device (flags {:#x}, {} regions)", info.flags, info.num_regions),
            });
        }
        let config = region_info(&fd, addr, CONFIG_REGION)?;
        Ok(VfioDevice { addr, fd, group, info, config })
    }

    /// The device's address.
    pub fn address(&self) -> PciAddress {
        self.addr
    }

    /// What the kernel says about it.
    pub fn info(&self) -> DeviceInfo {
        self.info
    }

    /// Its IOMMU group.
    pub fn group(&self) -> &Arc<Group> {
        &self.group
    }

    /// Its container (the IOMMU address space DMA mappings go to).
    pub fn container(&self) -> &Arc<Container> {
        self.group.container()
    }

    /// Region `index`: BARs 0-5, ROM 6, config 7.
    pub fn region_info(&self, index: u32) -> Result<RegionInfo> {
        if index >= self.info.num_regions {
            return Err(VfioError::Region {
                addr: self.addr,
                index,
                reason: format!("the device has {} regions", self.info.num_regions),
            });
        }
        region_info(&self.fd, self.addr, index)
    }

    /// Reads `buf.len()` bytes at `offset` of region `index` through the fd (any region, mmap-able or not).
    pub fn read_region(&self, index: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        let r = self.region_info(index)?;
        check_span(self.addr, &r, offset, buf.len())?;
        full_pread(&*self.fd.sys, self.fd.raw, buf, r.offset + offset)
            .map_err(|e| VfioError::os(format!("{}: reading region {index} at {offset:#x}", self.addr), e))
    }

    /// Writes `buf` at `offset` of region `index` through the fd.
    pub fn write_region(&self, index: u32, offset: u64, buf: &[u8]) -> Result<()> {
        let r = self.region_info(index)?;
        check_span(self.addr, &r, offset, buf.len())?;
        full_pwrite(&*self.fd.sys, self.fd.raw, buf, r.offset + offset)
            .map_err(|e| VfioError::os(format!("{}: writing region {index} at {offset:#x}", self.addr), e))
    }

    /// BAR `index` (0-5) as a [`RegisterSpace`]: mmapped where the kernel allows (all of it, or its sparse
    /// areas), through pread/pwrite elsewhere (I/O BARs, the MSI-X table on older kernels).
    pub fn map_bar(&self, index: u32) -> Result<VfioBar> {
        if index > 5 {
            return Err(VfioError::Region { addr: self.addr, index, reason: "not a BAR (BARs are 0-5)".into() });
        }
        let r = self.region_info(index)?;
        if r.size == 0 {
            return Err(VfioError::Region {
                addr: self.addr,
                index,
                reason: "BAR not implemented by the device".into(),
            });
        }
        let len = usize::try_from(r.size).map_err(|_| VfioError::Region {
            addr: self.addr,
            index,
            reason: format!("{:#x} bytes do not fit the address space", r.size),
        })?;
        let sys = self.fd.sys.clone();
        let mut areas = Vec::new();
        for a in r.mmap_areas() {
            // On failure, the areas mapped so far unmap as `areas` drops.
            let map = sys
                .mmap(self.fd.raw, a.size as usize, r.offset + a.offset)
                .map_err(|e| VfioError::os(format!("{}: mmap of BAR {index} (+{:#x})", self.addr, a.offset), e))?;
            areas.push(MappedArea { offset: a.offset as usize, map });
        }
        let whole = match areas.as_slice() {
            [a] if a.offset == 0 && a.len() == len && (a.map.as_ptr().as_ptr() as usize).is_multiple_of(4) => {
                // SAFETY: the area is a live mapping of the whole BAR, 4-byte aligned, unmapped only when VfioBar's
                // `areas` drop, after this MmioBar (a field declared before it, so dropped first) is gone.
                Some(unsafe { MmioBar::new(a.map.as_ptr(), len) })
            }
            _ => None,
        };
        Ok(VfioBar {
            addr: self.addr,
            index,
            len,
            region_offset: r.offset,
            fd: self.fd.clone(),
            whole,
            areas,
            readable: r.readable(),
            writable: r.writable(),
        })
    }

    /// Resets the device (`VFIO_DEVICE_RESET`: FLR or similar). Fails with
    /// [`VfioError::ResetUnsupported`] when [`DeviceInfo::can_reset`] is false (virtio-net under QEMU).
    pub fn reset(&self) -> Result<()> {
        if !self.info.can_reset() {
            return Err(VfioError::ResetUnsupported { addr: self.addr });
        }
        self.fd
            .ioctl(VFIO_DEVICE_RESET, IoctlArg::None)
            .map_err(|e| VfioError::os(format!("VFIO_DEVICE_RESET on {}", self.addr), e))?;
        Ok(())
    }

    /// IRQ index `index` ([`MSIX_IRQ`], [`MSI_IRQ`], [`INTX_IRQ`]).
    pub fn irq_info(&self, index: u32) -> Result<IrqInfo> {
        let mut bytes = to_bytes(&vfio_irq_info { argsz: 16, index, ..Default::default() });
        self.fd
            .ioctl(VFIO_DEVICE_GET_IRQ_INFO, IoctlArg::Buf(&mut bytes))
            .map_err(|e| VfioError::os(format!("VFIO_DEVICE_GET_IRQ_INFO({index}) on {}", self.addr), e))?;
        let raw: vfio_irq_info = read_pod(&bytes, 0).unwrap_or_default();
        Ok(IrqInfo { index, flags: raw.flags, count: raw.count })
    }

    /// Routes `count` vectors of IRQ index `index` (normally [`MSIX_IRQ`]) to new eventfds, vector i to element i.
    /// Enabling MSI-X this way also programs the device's MSI-X table (the kernel owns it).
    pub fn enable_irqs(&self, index: u32, count: u32) -> Result<Vec<EventFd>> {
        let available = self.irq_info(index)?.count;
        if count == 0 || count > available {
            return Err(VfioError::Region {
                addr: self.addr,
                index,
                reason: format!("asked for {count} interrupt vectors, the device has {available}"),
            });
        }
        let fds = (0..count)
            .map(|_| self.fd.sys.eventfd().map(EventFd))
            .collect::<io::Result<Vec<_>>>()
            .map_err(|e| VfioError::os("eventfd", e))?;
        let head = vfio_irq_set {
            argsz: 20 + 4 * count,
            flags: VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
            index,
            start: 0,
            count,
            ..Default::default()
        };
        let mut bytes = to_bytes(&head);
        for fd in &fds {
            bytes.extend_from_slice(&fd.as_raw_fd().to_ne_bytes());
        }
        self.fd.ioctl(VFIO_DEVICE_SET_IRQS, IoctlArg::Buf(&mut bytes)).map_err(|e| {
            VfioError::os(format!("VFIO_DEVICE_SET_IRQS({index}, {count} eventfds) on {}", self.addr), e)
        })?;
        Ok(fds)
    }

    /// Disables every vector of IRQ index `index`.
    pub fn disable_irqs(&self, index: u32) -> Result<()> {
        let head = vfio_irq_set {
            argsz: 20,
            flags: VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
            index,
            start: 0,
            count: 0,
            ..Default::default()
        };
        self.fd
            .ioctl(VFIO_DEVICE_SET_IRQS, IoctlArg::Buf(&mut to_bytes(&head)))
            .map_err(|e| VfioError::os(format!("VFIO_DEVICE_SET_IRQS({index}, disable) on {}", self.addr), e))?;
        Ok(())
    }
}

/// Configuration space through the VFIO config region (pread/pwrite). The kernel virtualises parts of it (BARs,
/// MSI-X) and passes the rest through.
impl ConfigSpace for VfioDevice {
    fn read_config(&self, offset: u16, buf: &mut [u8]) -> io::Result<()> {
        if offset as u64 + buf.len() as u64 > self.config.size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("config read past {:#x}", self.config.size),
            ));
        }
        full_pread(&*self.fd.sys, self.fd.raw, buf, self.config.offset + offset as u64)
    }

    fn write_config(&self, offset: u16, buf: &[u8]) -> io::Result<()> {
        if offset as u64 + buf.len() as u64 > self.config.size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("config write past {:#x}", self.config.size),
            ));
        }
        full_pwrite(&*self.fd.sys, self.fd.raw, buf, self.config.offset + offset as u64)
    }
}

fn region_info(fd: &Fd, addr: PciAddress, index: u32) -> Result<RegionInfo> {
    let initial = to_bytes(&vfio_region_info { argsz: 32, index, ..Default::default() });
    let bytes = info_with_caps(fd, VFIO_DEVICE_GET_REGION_INFO, initial, "VFIO_DEVICE_GET_REGION_INFO").map_err(
        |e| match e {
            VfioError::Os { source, .. } => VfioError::Region { addr, index, reason: format!("region info: {source}") },
            other => other,
        },
    )?;
    parse_region_info(&bytes)
}

fn check_span(addr: PciAddress, r: &RegionInfo, offset: u64, len: usize) -> Result<()> {
    if offset.checked_add(len as u64).is_none_or(|end| end > r.size) {
        return Err(VfioError::Region {
            addr,
            index: r.index,
            reason: format!("access at {offset:#x}+{len} past the region's {:#x} bytes", r.size),
        });
    }
    Ok(())
}

fn full_pread(sys: &dyn VfioSys, fd: RawFd, buf: &mut [u8], offset: u64) -> io::Result<()> {
    match sys.pread(fd, buf, offset)? {
        n if n == buf.len() => Ok(()),
        n => Err(io::Error::new(io::ErrorKind::UnexpectedEof, format!("short read: {n} of {} bytes", buf.len()))),
    }
}

fn full_pwrite(sys: &dyn VfioSys, fd: RawFd, buf: &[u8], offset: u64) -> io::Result<()> {
    match sys.pwrite(fd, buf, offset)? {
        n if n == buf.len() => Ok(()),
        n => Err(io::Error::new(io::ErrorKind::WriteZero, format!("short write: {n} of {} bytes", buf.len()))),
    }
}

/// A mmapped part of a BAR, `map.len()` bytes from `offset` of the BAR.
struct MappedArea {
    offset: usize,
    map: Mapping,
}

impl MappedArea {
    fn len(&self) -> usize {
        self.map.len()
    }
}

/// A BAR of a VFIO device as a [`RegisterSpace`]. Fully mmapped BARs go straight to memory (one predictable
/// branch per access on top of [`MmioBar`]); sparse-mmapped and non-mmap-able BARs go through pread/pwrite of the
/// device fd where no mapping covers the register. Unmapped on drop.
///
/// Reads that fail return all ones, as a PCI read of a vanished device does.
pub struct VfioBar {
    // Fields drop in order: the MmioBar view, then the mappings it points into, then the fd they were made from.
    whole: Option<MmioBar>,
    areas: Vec<MappedArea>,
    fd: Arc<Fd>,
    addr: PciAddress,
    index: u32,
    len: usize,
    region_offset: u64,
    readable: bool,
    writable: bool,
}

// SAFETY: the mappings are device registers accessed only with single volatile loads/stores (or pread/pwrite); they
// stay mapped until drop. The fd's VfioSys is Send + Sync.
unsafe impl Send for VfioBar {}
// SAFETY: as above; shared access only performs volatile register accesses, which the device serialises.
unsafe impl Sync for VfioBar {}

impl fmt::Debug for VfioBar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VfioBar")
            .field("addr", &self.addr)
            .field("index", &self.index)
            .field("len", &self.len)
            .field("mmapped", &self.areas.iter().map(|a| (a.offset, a.len())).collect::<Vec<_>>())
            .finish()
    }
}

impl VfioBar {
    /// The BAR index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// All of the BAR is mmapped (no syscall on any access).
    pub fn is_fully_mapped(&self) -> bool {
        self.whole.is_some()
    }

    /// The whole BAR as an [`MmioBar`], when it is fully mmapped.
    pub fn as_mmio(&self) -> Option<&MmioBar> {
        self.whole.as_ref()
    }

    #[inline(always)]
    fn check(&self, offset: usize, width: usize) {
        assert!(
            offset.is_multiple_of(width) && offset + width <= self.len,
            "{}: BAR {} access at {offset:#x} (width {width}) outside its {:#x} bytes",
            self.addr,
            self.index,
            self.len
        );
    }

    /// The register of type `T` at `offset` (checked in bounds and aligned by the caller), when a mapping covers it.
    fn area_reg<T: Copy>(&self, offset: usize) -> Option<VolatilePtr<'_, T>> {
        let width = std::mem::size_of::<T>();
        let a = self.areas.iter().find(|a| a.offset <= offset && offset + width <= a.offset + a.len())?;
        // SAFETY: offset - a.offset + width <= a.len(): inside a mapping that lives as long as the borrow of self.
        // Mappings and area offsets are page aligned and `check` made offset a multiple of the width, so the
        // pointer is aligned for T. Device registers are only accessed with volatile loads and stores.
        Some(unsafe { VolatilePtr::new(a.map.as_ptr().add(offset - a.offset).cast()) })
    }

    fn slow_read(&self, offset: usize, buf: &mut [u8]) {
        let ok =
            self.readable && full_pread(&*self.fd.sys, self.fd.raw, buf, self.region_offset + offset as u64).is_ok();
        if !ok {
            buf.fill(0xff);
        }
    }

    fn slow_write(&self, offset: usize, buf: &[u8]) {
        if self.writable {
            let _ = full_pwrite(&*self.fd.sys, self.fd.raw, buf, self.region_offset + offset as u64);
        }
    }

    #[cold]
    fn read32_slow(&self, offset: usize) -> u32 {
        match self.area_reg::<u32>(offset) {
            Some(r) => u32::from_le(r.read()),
            None => {
                let mut b = [0u8; 4];
                self.slow_read(offset, &mut b);
                u32::from_le_bytes(b)
            }
        }
    }

    #[cold]
    fn write32_slow(&self, offset: usize, value: u32) {
        match self.area_reg::<u32>(offset) {
            Some(r) => r.write(value.to_le()),
            None => self.slow_write(offset, &value.to_le_bytes()),
        }
    }
}

impl RegisterSpace for VfioBar {
    #[inline(always)]
    fn read32(&self, offset: usize) -> u32 {
        match &self.whole {
            Some(bar) => bar.read32(offset),
            None => {
                self.check(offset, 4);
                self.read32_slow(offset)
            }
        }
    }

    #[inline(always)]
    fn write32(&self, offset: usize, value: u32) {
        match &self.whole {
            Some(bar) => bar.write32(offset, value),
            None => {
                self.check(offset, 4);
                self.write32_slow(offset, value)
            }
        }
    }

    /// One 64-bit store where the BAR is mapped whole; two 32-bit writes (low, then high) through the slow path
    /// otherwise.
    #[inline(always)]
    fn write64(&self, offset: usize, value: u64) {
        match &self.whole {
            Some(bar) => bar.write64(offset, value),
            None => {
                self.check(offset, 8);
                self.write32_slow(offset, value as u32);
                self.write32_slow(offset + 4, (value >> 32) as u32);
            }
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Reads the 8-bit register at `offset`.
    fn read8(&self, offset: usize) -> u8 {
        self.check(offset, 1);
        match self.area_reg::<u8>(offset) {
            Some(r) => r.read(),
            None => {
                let mut b = [0u8; 1];
                self.slow_read(offset, &mut b);
                b[0]
            }
        }
    }

    /// Writes the 8-bit register at `offset`.
    fn write8(&self, offset: usize, value: u8) {
        self.check(offset, 1);
        match self.area_reg::<u8>(offset) {
            Some(r) => r.write(value),
            None => self.slow_write(offset, &[value]),
        }
    }

    /// Reads the little-endian 16-bit register at `offset` (2-byte aligned).
    fn read16(&self, offset: usize) -> u16 {
        self.check(offset, 2);
        match self.area_reg::<u16>(offset) {
            Some(r) => u16::from_le(r.read()),
            None => {
                let mut b = [0u8; 2];
                self.slow_read(offset, &mut b);
                u16::from_le_bytes(b)
            }
        }
    }

    /// Writes the little-endian 16-bit register at `offset` (2-byte aligned).
    fn write16(&self, offset: usize, value: u16) {
        self.check(offset, 2);
        match self.area_reg::<u16>(offset) {
            Some(r) => r.write(value.to_le()),
            None => self.slow_write(offset, &value.to_le_bytes()),
        }
    }
}
