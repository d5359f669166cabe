//! A scripted VFIO kernel for tests: [`FakeVfio`] implements [`VfioSys`] with containers, groups and devices held
//! in memory, answering the ioctls as the kernel does (argsz growth, capability chains, EBUSY, viability), and
//! recording what was asked (DMA maps, resets, interrupt routing) for the test to check.
//!
//! ```
//! use std::sync::Arc;
//! use drvkit::pci::fake::{FakeDevice, FakeSysfs};
//! use drvkit::vfio::fake::{FakeGroup, FakeVfio, FakeVfioDevice};
//! use drvkit::vfio::{Vfio, VfioConfig};
//!
//! let sysfs = FakeSysfs::new("doc-vfio");
//! sysfs.add_device(&FakeDevice::net("0000:00:02.0", 0x8086, 0x10c9).driver("vfio-pci").iommu_group(2));
//! let kernel = Arc::new(FakeVfio::new());
//! kernel.add_group(2, FakeGroup::iommu(vec![FakeVfioDevice::pci("0000:00:02.0", 0x8086, 0x10c9)]));
//! let vfio = Vfio::with_parts(kernel.clone(), sysfs.sysfs(), VfioConfig::default());
//! let dev = vfio.open_device("0000:00:02.0".parse().unwrap()).unwrap();
//! assert_eq!(dev.info().num_regions, 9);
//! ```

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::os::unix::io::RawFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::bindings::*;
use super::sys::{IoctlArg, Mapping, VfioSys};

/// One region of a fake device. The bytes are shared between pread/pwrite and mmap.
#[derive(Debug, Clone)]
pub struct FakeRegion {
    /// `VFIO_REGION_INFO_FLAG_*` (the CAPS flag is added when there are capabilities).
    pub flags: u32,
    /// Bytes.
    pub size: u64,
    /// Sparse mmap areas `(offset, size)`, reported as a capability.
    pub sparse: Option<Vec<(u64, u64)>>,
    /// Report the MSI-X mappable capability.
    pub msix_mappable: bool,
    /// The contents (words, so that mmap gives aligned memory).
    pub data: Arc<Vec<AtomicU32>>,
}

impl FakeRegion {
    /// A region of `size` bytes with `flags`.
    pub fn new(flags: u32, size: u64) -> Self {
        let words = (size as usize).div_ceil(4);
        FakeRegion {
            flags,
            size,
            sparse: None,
            msix_mappable: false,
            data: Arc::new((0..words).map(|_| AtomicU32::new(0)).collect()),
        }
    }

    /// A readable, writable, mmap-able memory BAR.
    pub fn mmio(size: u64) -> Self {
        FakeRegion::new(VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE | VFIO_REGION_INFO_FLAG_MMAP, size)
    }

    /// A readable, writable region that cannot be mmapped (I/O BAR, config space).
    pub fn rw(size: u64) -> Self {
        FakeRegion::new(VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE, size)
    }

    /// A region the device does not implement.
    pub fn absent() -> Self {
        FakeRegion::new(0, 0)
    }

    /// With sparse mmap areas.
    pub fn sparse(mut self, areas: &[(u64, u64)]) -> Self {
        self.sparse = Some(areas.to_vec());
        self
    }

    /// Reads a byte.
    pub fn byte(&self, offset: usize) -> u8 {
        (self.data[offset / 4].load(Ordering::SeqCst) >> ((offset % 4) * 8)) as u8
    }

    /// Writes a byte.
    pub fn set_byte(&self, offset: usize, value: u8) {
        let shift = (offset % 4) * 8;
        let word = &self.data[offset / 4];
        let old = word.load(Ordering::SeqCst);
        word.store((old & !(0xff << shift)) | ((value as u32) << shift), Ordering::SeqCst);
    }

    /// Reads a little-endian u32 (4-byte aligned).
    pub fn word(&self, offset: usize) -> u32 {
        u32::from_le(self.data[offset / 4].load(Ordering::SeqCst))
    }

    /// Writes a little-endian u32 (4-byte aligned).
    pub fn set_word(&self, offset: usize, value: u32) {
        self.data[offset / 4].store(value.to_le(), Ordering::SeqCst);
    }
}

/// A fake vfio-pci device.
#[derive(Debug, Clone)]
pub struct FakeVfioDevice {
    /// Its name (the PCI address).
    pub name: String,
    /// `VFIO_DEVICE_FLAGS_*`.
    pub flags: u32,
    /// Regions by index (9 for PCI).
    pub regions: Vec<FakeRegion>,
    /// Vectors per IRQ index (INTx, MSI, MSI-X, ERR, REQ).
    pub irqs: Vec<u32>,
    /// Resets done.
    pub resets: usize,
    /// `VFIO_DEVICE_SET_IRQS` calls: (index, flags, count).
    pub irq_sets: Vec<(u32, u32, u32)>,
}

impl FakeVfioDevice {
    /// An igb-like device: BAR0 128 KiB mmap-able, BAR1 absent, BAR2 a 32-byte I/O BAR (not mmap-able), BAR3
    /// 16 KiB with a sparse area (the second 8 KiB), config space of 256 bytes with the IDs and a capability list
    /// (MSI-X at 0x70), resettable, 5 MSI-X vectors.
    pub fn pci(name: &str, vendor: u16, device: u16) -> Self {
        let config = FakeRegion::rw(256);
        config.set_word(0, vendor as u32 | (device as u32) << 16);
        config.set_word(4, 0x0010_0000); // status: capability list
        config.set_byte(0x34, 0x70);
        config.set_byte(0x70, 0x11);
        let mut bar3 = FakeRegion::mmio(16 << 10).sparse(&[(8 << 10, 8 << 10)]);
        bar3.msix_mappable = false;
        FakeVfioDevice {
            name: name.to_string(),
            flags: VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET,
            regions: vec![
                FakeRegion::mmio(128 << 10),
                FakeRegion::absent(),
                FakeRegion::rw(32),
                bar3,
                FakeRegion::absent(),
                FakeRegion::absent(),
                FakeRegion::absent(),
                config,
                FakeRegion::absent(),
            ],
            irqs: vec![1, 1, 5, 1, 1],
            resets: 0,
            irq_sets: Vec::new(),
        }
    }

    /// Without `VFIO_DEVICE_FLAGS_RESET` (virtio-net under QEMU).
    pub fn without_reset(mut self) -> Self {
        self.flags &= !VFIO_DEVICE_FLAGS_RESET;
        self
    }

    /// The config space region.
    pub fn config(&self) -> &FakeRegion {
        &self.regions[VFIO_PCI_CONFIG_REGION_INDEX as usize]
    }
}

/// A fake IOMMU group.
#[derive(Debug, Clone)]
pub struct FakeGroup {
    /// A no-IOMMU group (`/dev/vfio/noiommu-N`).
    pub noiommu: bool,
    /// `VFIO_GROUP_FLAGS_VIABLE`.
    pub viable: bool,
    /// Error number for `open` (EBUSY: another process holds it).
    pub open_errno: Option<i32>,
    /// Error number for `VFIO_GROUP_SET_CONTAINER`.
    pub set_container_errno: Option<i32>,
    /// Devices in the group.
    pub devices: Vec<FakeVfioDevice>,
    open: bool,
    container: Option<RawFd>,
}

impl FakeGroup {
    /// A viable IOMMU group with `devices`.
    pub fn iommu(devices: Vec<FakeVfioDevice>) -> Self {
        FakeGroup {
            noiommu: false,
            viable: true,
            open_errno: None,
            set_container_errno: None,
            devices,
            open: false,
            container: None,
        }
    }

    /// A no-IOMMU group with `devices`.
    pub fn noiommu(devices: Vec<FakeVfioDevice>) -> Self {
        FakeGroup { noiommu: true, ..FakeGroup::iommu(devices) }
    }
}

#[derive(Debug, Clone)]
enum Node {
    Container,
    Group(u32),
    Device(u32, usize),
}

/// The fake kernel's state: set it up before the test, inspect it after ([`FakeVfio::state`]).
#[derive(Debug)]
pub struct FakeState {
    /// Where the nodes live (`/dev/vfio`).
    pub dev_dir: PathBuf,
    /// `/dev/vfio/vfio` exists (vfio module loaded).
    pub vfio_node: bool,
    /// Error number for opening `/dev/vfio/vfio`.
    pub container_open_errno: Option<i32>,
    /// `VFIO_GET_API_VERSION` answer.
    pub api_version: i32,
    /// Extensions `VFIO_CHECK_EXTENSION` says yes to.
    pub extensions: Vec<u32>,
    /// Error number for `VFIO_SET_IOMMU` (EPERM: no interrupt remapping).
    pub set_iommu_errno: Option<i32>,
    /// IOMMU page sizes.
    pub iova_pgsizes: u64,
    /// Usable IOVA ranges (inclusive); empty: no IOVA range capability.
    pub iova_ranges: Vec<(u64, u64)>,
    /// DMA mappings available (capability), if reported.
    pub dma_avail: Option<u32>,
    /// Error number for `VFIO_IOMMU_MAP_DMA`.
    pub map_errno: Option<i32>,
    /// Groups by number.
    pub groups: BTreeMap<u32, FakeGroup>,
    /// The IOMMU backend set on the container.
    pub iommu_type: Option<u32>,
    /// Live DMA mappings: (vaddr, iova, size).
    pub dma_maps: Vec<(u64, u64, u64)>,
    /// Every ioctl request number, in order.
    pub ioctls: Vec<u64>,
    fds: HashMap<RawFd, Node>,
    next_fd: RawFd,
}

impl FakeState {
    /// Descriptors still open (a test's leak check).
    pub fn open_fds(&self) -> usize {
        self.fds.len()
    }
}

/// A fake VFIO kernel. Defaults: API 0, type1 and type1v2, 4K/2M/1G pages, the IOVA ranges a VT-d guest shows
/// (`0-0xfedfffff`, `0xfef00000-0xffffffffffff`), 65535 DMA mappings available.
#[derive(Debug)]
pub struct FakeVfio {
    state: Mutex<FakeState>,
}

impl Default for FakeVfio {
    fn default() -> Self {
        FakeVfio::new()
    }
}

fn errno(e: i32) -> io::Error {
    io::Error::from_raw_os_error(e)
}

impl FakeVfio {
    /// A kernel with VFIO and type1 IOMMU, no groups yet.
    pub fn new() -> Self {
        FakeVfio {
            state: Mutex::new(FakeState {
                dev_dir: PathBuf::from("/dev/vfio"),
                vfio_node: true,
                container_open_errno: None,
                api_version: API_VERSION,
                extensions: vec![VFIO_TYPE1_IOMMU, VFIO_TYPE1v2_IOMMU],
                set_iommu_errno: None,
                iova_pgsizes: 0x4020_1000,
                iova_ranges: vec![(0, 0xfedf_ffff), (0xfef0_0000, 0xffff_ffff_ffff)],
                dma_avail: Some(65535),
                map_errno: None,
                groups: BTreeMap::new(),
                iommu_type: None,
                dma_maps: Vec::new(),
                ioctls: Vec::new(),
                fds: HashMap::new(),
                next_fd: 1000,
            }),
        }
    }

    /// The state, to change or inspect.
    pub fn state(&self) -> MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds group `n`.
    pub fn add_group(&self, n: u32, group: FakeGroup) {
        self.state().groups.insert(n, group);
    }

    /// A copy of device `name` as the fake holds it now (resets and IRQ settings recorded).
    pub fn device(&self, name: &str) -> Option<FakeVfioDevice> {
        self.state().groups.values().flat_map(|g| g.devices.iter()).find(|d| d.name == name).cloned()
    }
}

/// Writes an info answer: the whole of `full` when it fits `buf`, else just the fixed part with argsz = the
/// size needed and no capability offset (as the kernel does).
fn answer(buf: &mut [u8], full: &[u8], fixed: usize, cap_offset_at: usize) {
    if buf.len() >= full.len() {
        buf[..full.len()].copy_from_slice(full);
    } else {
        let n = fixed.min(buf.len());
        buf[..n].copy_from_slice(&full[..n]);
        if cap_offset_at + 4 <= n {
            buf[cap_offset_at..cap_offset_at + 4].copy_from_slice(&0u32.to_ne_bytes());
        }
    }
    buf[..4].copy_from_slice(&(full.len() as u32).to_ne_bytes());
}

fn region_answer(region: &FakeRegion, index: u32) -> Vec<u8> {
    let mut caps: Vec<(u32, Vec<u8>)> = Vec::new();
    if let Some(areas) = &region.sparse {
        let mut body = Vec::new();
        body.extend_from_slice(&(areas.len() as u32).to_ne_bytes());
        body.extend_from_slice(&0u32.to_ne_bytes());
        for &(offset, size) in areas {
            body.extend_from_slice(&to_bytes(&vfio_region_sparse_mmap_area { offset, size }));
        }
        caps.push((VFIO_REGION_INFO_CAP_SPARSE_MMAP, body));
    }
    if region.msix_mappable {
        caps.push((VFIO_REGION_INFO_CAP_MSIX_MAPPABLE, Vec::new()));
    }
    let fixed = std::mem::size_of::<vfio_region_info>();
    let mut info = vfio_region_info {
        argsz: 0,
        flags: region.flags,
        index,
        cap_offset: 0,
        size: region.size,
        offset: (index as u64) << 40,
    };
    if !caps.is_empty() {
        info.flags |= VFIO_REGION_INFO_FLAG_CAPS;
        info.cap_offset = fixed as u32;
    }
    let mut out = to_bytes(&info);
    chain(&mut out, caps);
    out
}

/// Appends capabilities as a chain (each header's `next` pointing at the following one).
fn chain(out: &mut Vec<u8>, caps: Vec<(u32, Vec<u8>)>) {
    let n = caps.len();
    for (i, (id, body)) in caps.into_iter().enumerate() {
        let start = out.len();
        let next = if i + 1 < n { (start + 8 + body.len()) as u32 } else { 0 };
        out.extend_from_slice(&to_bytes(&vfio_info_cap_header {
            id: u16::try_from(id).expect("capability ids fit u16"),
            version: 1,
            next,
        }));
        out.extend_from_slice(&body);
    }
}

impl FakeState {
    fn node(&self, fd: RawFd) -> io::Result<Node> {
        self.fds.get(&fd).cloned().ok_or_else(|| errno(libc::EBADF))
    }

    fn new_fd(&mut self, node: Node) -> RawFd {
        let fd = self.next_fd;
        self.next_fd += 1;
        self.fds.insert(fd, node);
        fd
    }

    fn region(&self, fd: RawFd, offset: u64) -> io::Result<(FakeRegion, usize)> {
        let Node::Device(g, d) = self.node(fd)? else { return Err(errno(libc::EINVAL)) };
        let index = (offset >> 40) as usize;
        let region = self.groups[&g].devices[d].regions.get(index).cloned().ok_or_else(|| errno(libc::EINVAL))?;
        Ok((region, (offset & ((1 << 40) - 1)) as usize))
    }

    fn container_ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> io::Result<i32> {
        match (request, arg) {
            (VFIO_GET_API_VERSION, _) => Ok(self.api_version),
            (VFIO_CHECK_EXTENSION, IoctlArg::Value(ext)) => Ok(self.extensions.contains(&(ext as u32)) as i32),
            (VFIO_SET_IOMMU, IoctlArg::Value(ext)) => {
                if let Some(e) = self.set_iommu_errno {
                    return Err(errno(e));
                }
                if !self.groups.values().any(|g| g.container.is_some()) || !self.extensions.contains(&(ext as u32)) {
                    return Err(errno(libc::EINVAL));
                }
                let noiommu_groups = self.groups.values().filter(|g| g.container.is_some()).all(|g| g.noiommu);
                if (ext as u32 == VFIO_NOIOMMU_IOMMU) != noiommu_groups {
                    return Err(errno(libc::EINVAL));
                }
                self.iommu_type = Some(ext as u32);
                Ok(0)
            }
            (VFIO_IOMMU_GET_INFO, IoctlArg::Buf(buf)) => {
                if !matches!(self.iommu_type, Some(t) if t == VFIO_TYPE1_IOMMU || t == VFIO_TYPE1v2_IOMMU) {
                    return Err(errno(libc::EINVAL));
                }
                let mut caps = Vec::new();
                if !self.iova_ranges.is_empty() {
                    let mut body = Vec::new();
                    body.extend_from_slice(&(self.iova_ranges.len() as u32).to_ne_bytes());
                    body.extend_from_slice(&0u32.to_ne_bytes());
                    for &(start, end) in &self.iova_ranges {
                        body.extend_from_slice(&to_bytes(&vfio_iova_range { start, end }));
                    }
                    caps.push((VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE, body));
                }
                if let Some(avail) = self.dma_avail {
                    caps.push((VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL, avail.to_ne_bytes().to_vec()));
                }
                let fixed = std::mem::size_of::<vfio_iommu_type1_info>();
                let mut info = vfio_iommu_type1_info {
                    argsz: 0,
                    flags: VFIO_IOMMU_INFO_PGSIZES,
                    iova_pgsizes: self.iova_pgsizes,
                    cap_offset: 0,
                    pad: 0,
                };
                if !caps.is_empty() {
                    info.flags |= VFIO_IOMMU_INFO_CAPS;
                    info.cap_offset = fixed as u32;
                }
                let mut full = to_bytes(&info);
                chain(&mut full, caps);
                answer(buf, &full, fixed, 16);
                Ok(0)
            }
            (VFIO_IOMMU_MAP_DMA, IoctlArg::Buf(buf)) => {
                let m: vfio_iommu_type1_dma_map = read_pod(buf, 0).ok_or_else(|| errno(libc::EINVAL))?;
                if let Some(e) = self.map_errno {
                    return Err(errno(e));
                }
                if self.iommu_type.is_none() || self.iommu_type == Some(VFIO_NOIOMMU_IOMMU) || m.size == 0 {
                    return Err(errno(libc::EINVAL));
                }
                let end = m.iova + m.size - 1;
                if !self.iova_ranges.is_empty() && !self.iova_ranges.iter().any(|&(s, e)| s <= m.iova && end <= e) {
                    return Err(errno(libc::EINVAL));
                }
                if self.dma_maps.iter().any(|&(_, i, s)| m.iova < i + s && i <= end) {
                    return Err(errno(libc::EEXIST));
                }
                self.dma_maps.push((m.vaddr, m.iova, m.size));
                Ok(0)
            }
            (VFIO_IOMMU_UNMAP_DMA, IoctlArg::Buf(buf)) => {
                let mut u: vfio_iommu_type1_dma_unmap = read_pod(buf, 0).ok_or_else(|| errno(libc::EINVAL))?;
                let before: u64 = self.dma_maps.iter().map(|m| m.2).sum();
                let end = u.iova.saturating_add(u.size);
                self.dma_maps.retain(|&(_, i, s)| !(u.iova <= i && i + s <= end));
                u.size = before - self.dma_maps.iter().map(|m| m.2).sum::<u64>();
                write_pod(buf, 0, &u);
                Ok(0)
            }
            _ => Err(errno(libc::ENOTTY)),
        }
    }

    fn group_ioctl(&mut self, n: u32, request: u64, arg: IoctlArg<'_>) -> io::Result<i32> {
        let iommu_set = self.iommu_type.is_some();
        let containers: Vec<RawFd> =
            self.fds.iter().filter(|(_, n)| matches!(n, Node::Container)).map(|(fd, _)| *fd).collect();
        let g = self.groups.get_mut(&n).ok_or_else(|| errno(libc::ENODEV))?;
        match (request, arg) {
            (VFIO_GROUP_GET_STATUS, IoctlArg::Buf(buf)) => {
                let mut flags = 0;
                if g.viable {
                    flags |= VFIO_GROUP_FLAGS_VIABLE;
                }
                if g.container.is_some() {
                    flags |= VFIO_GROUP_FLAGS_CONTAINER_SET;
                }
                write_pod(buf, 0, &vfio_group_status { argsz: 8, flags });
                Ok(0)
            }
            (VFIO_GROUP_SET_CONTAINER, IoctlArg::Buf(buf)) => {
                if let Some(e) = g.set_container_errno {
                    return Err(errno(e));
                }
                if !g.viable {
                    return Err(errno(libc::EPERM));
                }
                if g.container.is_some() {
                    return Err(errno(libc::EBUSY));
                }
                let cfd: i32 = read_pod(buf, 0).ok_or_else(|| errno(libc::EINVAL))?;
                if !containers.contains(&cfd) {
                    return Err(errno(libc::EBADF));
                }
                g.container = Some(cfd);
                Ok(0)
            }
            (VFIO_GROUP_GET_DEVICE_FD, IoctlArg::Buf(buf)) => {
                if g.container.is_none() || !iommu_set {
                    return Err(errno(libc::EINVAL));
                }
                let name = buf.split(|b| *b == 0).next().unwrap_or_default();
                let name = String::from_utf8_lossy(name).into_owned();
                let d = g.devices.iter().position(|d| d.name == name).ok_or_else(|| errno(libc::ENODEV))?;
                Ok(self.new_fd(Node::Device(n, d)))
            }
            _ => Err(errno(libc::ENOTTY)),
        }
    }

    fn device_ioctl(&mut self, g: u32, d: usize, request: u64, arg: IoctlArg<'_>) -> io::Result<i32> {
        let dev = &mut self.groups.get_mut(&g).ok_or_else(|| errno(libc::ENODEV))?.devices[d];
        match (request, arg) {
            (VFIO_DEVICE_GET_INFO, IoctlArg::Buf(buf)) => {
                let info = vfio_device_info {
                    argsz: 24,
                    flags: dev.flags,
                    num_regions: dev.regions.len() as u32,
                    num_irqs: dev.irqs.len() as u32,
                    cap_offset: 0,
                    pad: 0,
                };
                let n = buf.len().min(24);
                buf[..n].copy_from_slice(&to_bytes(&info)[..n]);
                Ok(0)
            }
            (VFIO_DEVICE_GET_REGION_INFO, IoctlArg::Buf(buf)) => {
                let q: vfio_region_info = read_pod(buf, 0).ok_or_else(|| errno(libc::EINVAL))?;
                let region = dev.regions.get(q.index as usize).ok_or_else(|| errno(libc::EINVAL))?;
                let full = region_answer(region, q.index);
                answer(buf, &full, std::mem::size_of::<vfio_region_info>(), 12);
                Ok(0)
            }
            (VFIO_DEVICE_GET_IRQ_INFO, IoctlArg::Buf(buf)) => {
                let mut q: vfio_irq_info = read_pod(buf, 0).ok_or_else(|| errno(libc::EINVAL))?;
                q.count = *dev.irqs.get(q.index as usize).ok_or_else(|| errno(libc::EINVAL))?;
                q.flags = VFIO_IRQ_INFO_EVENTFD;
                write_pod(buf, 0, &q);
                Ok(0)
            }
            (VFIO_DEVICE_SET_IRQS, IoctlArg::Buf(buf)) => {
                let s: vfio_irq_set = read_pod(buf, 0).ok_or_else(|| errno(libc::EINVAL))?;
                let max = *dev.irqs.get(s.index as usize).ok_or_else(|| errno(libc::EINVAL))?;
                if s.start + s.count > max || s.argsz as usize != buf.len() {
                    return Err(errno(libc::EINVAL));
                }
                if s.flags & VFIO_IRQ_SET_DATA_EVENTFD != 0 && buf.len() != 20 + 4 * s.count as usize {
                    return Err(errno(libc::EINVAL));
                }
                dev.irq_sets.push((s.index, s.flags, s.count));
                Ok(0)
            }
            (VFIO_DEVICE_RESET, _) => {
                if dev.flags & VFIO_DEVICE_FLAGS_RESET == 0 {
                    return Err(errno(libc::ENOTTY));
                }
                dev.resets += 1;
                Ok(0)
            }
            _ => Err(errno(libc::ENOTTY)),
        }
    }
}

impl VfioSys for FakeVfio {
    fn open(&self, path: &Path) -> io::Result<RawFd> {
        let mut s = self.state();
        let name = path.strip_prefix(&s.dev_dir).map_err(|_| errno(libc::ENOENT))?.to_string_lossy().into_owned();
        if name == "vfio" {
            if !s.vfio_node {
                return Err(errno(libc::ENOENT));
            }
            if let Some(e) = s.container_open_errno {
                return Err(errno(e));
            }
            return Ok(s.new_fd(Node::Container));
        }
        let (noiommu, number) = match name.strip_prefix("noiommu-") {
            Some(n) => (true, n),
            None => (false, name.as_str()),
        };
        let number: u32 = number.parse().map_err(|_| errno(libc::ENOENT))?;
        let g = s.groups.get_mut(&number).filter(|g| g.noiommu == noiommu).ok_or_else(|| errno(libc::ENOENT))?;
        if let Some(e) = g.open_errno {
            return Err(errno(e));
        }
        if g.open {
            return Err(errno(libc::EBUSY));
        }
        g.open = true;
        Ok(s.new_fd(Node::Group(number)))
    }

    fn exists(&self, path: &Path) -> bool {
        let s = self.state();
        let Ok(name) = path.strip_prefix(&s.dev_dir) else { return false };
        let name = name.to_string_lossy();
        if name == "vfio" {
            return s.vfio_node;
        }
        match name.strip_prefix("noiommu-") {
            Some(n) => n.parse::<u32>().ok().and_then(|n| s.groups.get(&n)).is_some_and(|g| g.noiommu),
            None => name.parse::<u32>().ok().and_then(|n| s.groups.get(&n)).is_some_and(|g| !g.noiommu),
        }
    }

    fn close(&self, fd: RawFd) {
        let mut s = self.state();
        match s.fds.remove(&fd) {
            Some(Node::Group(n)) => {
                if let Some(g) = s.groups.get_mut(&n) {
                    g.open = false;
                    g.container = None;
                }
                if !s.groups.values().any(|g| g.container.is_some()) {
                    s.iommu_type = None;
                    s.dma_maps.clear();
                }
            }
            Some(Node::Container) => {
                for g in s.groups.values_mut() {
                    if g.container == Some(fd) {
                        g.container = None;
                    }
                }
                s.iommu_type = None;
                s.dma_maps.clear();
            }
            _ => {}
        }
    }

    fn ioctl(&self, fd: RawFd, request: u64, arg: IoctlArg<'_>) -> io::Result<i32> {
        let mut s = self.state();
        s.ioctls.push(request);
        match s.node(fd)? {
            Node::Container => s.container_ioctl(request, arg),
            Node::Group(n) => s.group_ioctl(n, request, arg),
            Node::Device(g, d) => s.device_ioctl(g, d, request, arg),
        }
    }

    fn pread(&self, fd: RawFd, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let (region, at) = self.state().region(fd, offset)?;
        if region.flags & VFIO_REGION_INFO_FLAG_READ == 0 {
            return Err(errno(libc::EINVAL));
        }
        let n = buf.len().min((region.size as usize).saturating_sub(at));
        for (i, b) in buf[..n].iter_mut().enumerate() {
            *b = region.byte(at + i);
        }
        Ok(n)
    }

    fn pwrite(&self, fd: RawFd, buf: &[u8], offset: u64) -> io::Result<usize> {
        let (region, at) = self.state().region(fd, offset)?;
        if region.flags & VFIO_REGION_INFO_FLAG_WRITE == 0 {
            return Err(errno(libc::EINVAL));
        }
        let n = buf.len().min((region.size as usize).saturating_sub(at));
        for (i, b) in buf[..n].iter().enumerate() {
            region.set_byte(at + i, *b);
        }
        Ok(n)
    }

    fn mmap(&self, fd: RawFd, len: usize, offset: u64) -> io::Result<Mapping> {
        let (region, at) = self.state().region(fd, offset)?;
        if region.flags & VFIO_REGION_INFO_FLAG_MMAP == 0 || at % 4096 != 0 || at + len > region.size as usize {
            return Err(errno(libc::EINVAL));
        }
        if let Some(areas) = &region.sparse {
            if !areas.iter().any(|&(o, s)| o as usize <= at && at + len <= (o + s) as usize) {
                return Err(errno(libc::EINVAL));
            }
        }
        let base = region.data.as_ptr() as *mut u8;
        let ptr = NonNull::new(base.wrapping_add(at)).ok_or_else(|| errno(libc::EINVAL))?;
        // SAFETY: at + len is inside the words, which the mapping keeps alive through its clone of the Arc;
        // AtomicU32 has interior mutability, so writes through the pointer are allowed.
        Ok(unsafe { Mapping::shared(ptr, len, region.data.clone()) })
    }

    fn eventfd(&self) -> io::Result<std::os::fd::OwnedFd> {
        super::sys::RealSys.eventfd()
    }
}
