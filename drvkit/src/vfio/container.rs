//! The VFIO container (one IOMMU address space, shared by every group attached to it) and groups.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use hugepage::{DmaMemory, IovaMode};

use super::bindings::*;
use super::error::{Result, VfioError};
use super::sys::{Fd, IoctlArg, VfioSys};
use crate::dma::{DmaMapper, DmaMapping};
use crate::pci::{PciAddress, Sysfs};

/// The x86 MSI doorbell window: DMA there is an interrupt, never memory. The IOMMU reserves it.
pub const MSI_WINDOW: IovaRange = IovaRange { start: 0xfee0_0000, end: 0xfeef_ffff };

/// The IOMMU backend of a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IommuMode {
    /// `VFIO_TYPE1v2_IOMMU`: the normal case.
    Type1v2,
    /// `VFIO_TYPE1_IOMMU`: older kernels.
    Type1,
    /// `VFIO_NOIOMMU_IOMMU`: no translation, no protection; the device is given physical addresses.
    NoIommu,
}

impl IommuMode {
    /// The `VFIO_SET_IOMMU` argument.
    pub fn extension(self) -> u32 {
        match self {
            IommuMode::Type1v2 => VFIO_TYPE1v2_IOMMU,
            IommuMode::Type1 => VFIO_TYPE1_IOMMU,
            IommuMode::NoIommu => VFIO_NOIOMMU_IOMMU,
        }
    }
}

impl fmt::Display for IommuMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IommuMode::Type1v2 => "type1v2",
            IommuMode::Type1 => "type1",
            IommuMode::NoIommu => "no-IOMMU",
        })
    }
}

/// An inclusive range of IOVAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IovaRange {
    /// First IOVA.
    pub start: u64,
    /// Last IOVA (inclusive).
    pub end: u64,
}

impl IovaRange {
    /// True when `[start, end]` lies inside this range.
    pub fn contains(&self, start: u64, end: u64) -> bool {
        self.start <= start && end <= self.end
    }

    /// True when `[start, end]` meets this range.
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        start <= self.end && self.start <= end
    }
}

impl fmt::Display for IovaRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}-{:#x}", self.start, self.end)
    }
}

/// What the IOMMU accepts (`VFIO_IOMMU_GET_INFO`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IommuInfo {
    /// Supported page sizes, one bit per size (0x40201000: 4K, 2M, 1G).
    pub page_sizes: u64,
    /// Usable IOVA ranges (empty: the kernel did not say, older than 5.4).
    pub iova_ranges: Vec<IovaRange>,
    /// DMA mappings still available (`dma_entry_limit` minus those in use), if the kernel says.
    pub dma_avail: Option<u32>,
}

impl IommuInfo {
    /// The smallest page the IOMMU maps (4 KiB when unknown).
    pub fn min_page_size(&self) -> u64 {
        if self.page_sizes == 0 {
            4096
        } else {
            1 << self.page_sizes.trailing_zeros()
        }
    }

    /// Checks that `[iova, iova + size)` can be mapped: page aligned, inside one usable IOVA range, clear of the
    /// MSI window.
    pub fn check_range(&self, iova: u64, size: u64) -> Result<()> {
        let err = |reason: String| Err(VfioError::DmaRange { iova, size, reason });
        if size == 0 {
            return err("empty range".into());
        }
        let page = self.min_page_size();
        if !iova.is_multiple_of(page) || !size.is_multiple_of(page) {
            return err(format!("not aligned to the IOMMU's smallest page ({page:#x} bytes)"));
        }
        let Some(end) = iova.checked_add(size - 1) else {
            return err("wraps past the end of the address space".into());
        };
        if cfg!(any(target_arch = "x86_64", target_arch = "x86")) && MSI_WINDOW.overlaps(iova, end) {
            return err(format!("overlaps the MSI window {MSI_WINDOW}, which the IOMMU reserves for interrupts"));
        }
        if !self.iova_ranges.is_empty() && !self.iova_ranges.iter().any(|r| r.contains(iova, end)) {
            let ranges: Vec<String> = self.iova_ranges.iter().map(|r| r.to_string()).collect();
            return err(format!(
                "outside the IOMMU's usable IOVA ranges ({}); with IOVA = VA the virtual address must fit the IOMMU's \
                 address width (virtio-iommu: aw-bits=48), or use --iova-mode pa",
                ranges.join(", ")
            ));
        }
        Ok(())
    }
}

/// Walks a VFIO capability chain in `bytes` starting at `first`; returns `(id, version, offset)` of each.
/// Offsets must point inside `bytes`, past `min_offset` (the fixed struct), and must not repeat.
pub(crate) fn walk_caps(
    bytes: &[u8],
    first: u32,
    min_offset: usize,
    what: &'static str,
) -> Result<Vec<(u32, u16, usize)>> {
    let mut out = Vec::new();
    let mut next = first as usize;
    while next != 0 {
        if next < min_offset || out.iter().any(|c: &(u32, u16, usize)| c.2 == next) || out.len() >= 64 {
            return Err(VfioError::Malformed {
                what,
                reason: format!("capability chain loops or points at {next:#x}"),
            });
        }
        let header: vfio_info_cap_header = read_pod(bytes, next).ok_or_else(|| VfioError::Malformed {
            what,
            reason: format!("capability at {next:#x} past the {} bytes returned", bytes.len()),
        })?;
        out.push((u32::from(header.id), header.version, next));
        next = header.next as usize;
    }
    Ok(out)
}

/// Parses a `VFIO_IOMMU_GET_INFO` answer (the struct and its capability chain).
pub fn parse_iommu_info(bytes: &[u8]) -> Result<IommuInfo> {
    const WHAT: &str = "VFIO_IOMMU_GET_INFO";
    let raw: vfio_iommu_type1_info = read_pod(bytes, 0)
        .ok_or_else(|| VfioError::Malformed { what: WHAT, reason: format!("{} bytes", bytes.len()) })?;
    let mut info = IommuInfo {
        page_sizes: if raw.flags & VFIO_IOMMU_INFO_PGSIZES != 0 { raw.iova_pgsizes } else { 0 },
        ..Default::default()
    };
    if raw.flags & VFIO_IOMMU_INFO_CAPS == 0 || raw.cap_offset == 0 {
        return Ok(info);
    }
    let min = std::mem::size_of::<vfio_iommu_type1_info>();
    for (id, _version, offset) in walk_caps(bytes, raw.cap_offset, min, WHAT)? {
        match id {
            VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE => {
                let cap: vfio_iommu_type1_info_cap_iova_range = read_pod(bytes, offset)
                    .ok_or_else(|| VfioError::Malformed { what: WHAT, reason: "truncated IOVA range cap".into() })?;
                let base = offset + std::mem::size_of::<vfio_iommu_type1_info_cap_iova_range>();
                for i in 0..cap.nr_iovas as usize {
                    let r: vfio_iova_range = read_pod(bytes, base + i * 16).ok_or_else(|| VfioError::Malformed {
                        what: WHAT,
                        reason: format!("IOVA range {i} of {} past the answer", cap.nr_iovas),
                    })?;
                    info.iova_ranges.push(IovaRange { start: r.start, end: r.end });
                }
            }
            VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL => {
                let cap: vfio_iommu_type1_info_dma_avail = read_pod(bytes, offset)
                    .ok_or_else(|| VfioError::Malformed { what: WHAT, reason: "truncated DMA avail cap".into() })?;
                info.dma_avail = Some(cap.avail);
            }
            _ => {}
        }
    }
    Ok(info)
}

/// Calls an info ioctl whose struct starts with `argsz` and may grow capabilities: asks once with `initial`, and
/// again with a buffer as large as the kernel says it needs.
pub(crate) fn info_with_caps(fd: &Fd, request: u64, mut buf: Vec<u8>, what: &'static str) -> Result<Vec<u8>> {
    for _ in 0..3 {
        let len = buf.len() as u32;
        buf[..4].copy_from_slice(&len.to_ne_bytes());
        fd.ioctl(request, IoctlArg::Buf(&mut buf)).map_err(|e| VfioError::os(what, e))?;
        let wanted = u32::from_ne_bytes(buf[..4].try_into().expect("4 bytes")) as usize;
        if wanted <= buf.len() {
            return Ok(buf);
        }
        if wanted > 1 << 20 {
            return Err(VfioError::Malformed { what, reason: format!("asks for a {wanted}-byte buffer") });
        }
        buf.resize(wanted, 0);
    }
    Err(VfioError::Malformed { what, reason: "argsz keeps growing".into() })
}

struct MappedRegion {
    /// The mapped memory, held while it is mapped (the IOMMU lets the device write into it).
    memory: Arc<DmaMemory>,
    runs: Vec<(u64, u64)>,
    /// Live guards ([`RegionGuard`]s inside [`crate::dma::DmaMapping`]s).
    refs: usize,
}

impl MappedRegion {
    fn vaddr(&self) -> usize {
        self.memory.as_ptr() as usize
    }

    fn len(&self) -> usize {
        self.memory.len()
    }
}

#[derive(Default)]
struct State {
    mode: Option<IommuMode>,
    info: Option<IommuInfo>,
    groups: HashMap<u32, Weak<Group>>,
    mappings: Vec<MappedRegion>,
}

/// A VFIO container: one IOMMU address space. Every group (and so every device) opened through it sees the same
/// DMA mappings, so memory mapped once serves every port.
pub struct Container {
    sys: Arc<dyn VfioSys>,
    fd: Fd,
    dev_dir: PathBuf,
    has_type1v2: bool,
    has_type1: bool,
    has_noiommu: bool,
    state: Mutex<State>,
}

impl fmt::Debug for Container {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Container").field("fd", &self.fd).field("mode", &self.mode()).finish()
    }
}

fn open_error(path: &Path, e: io::Error) -> VfioError {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => VfioError::Permission { path: path.to_path_buf(), source: e },
        _ => VfioError::os(format!("opening {}", path.display()), e),
    }
}

impl Container {
    /// Opens `DEV_DIR/vfio` (normally `/dev/vfio/vfio`), checks the API version and which IOMMU backends exist.
    /// The backend is chosen when the first group is attached.
    pub fn open(sys: Arc<dyn VfioSys>, dev_dir: &Path) -> Result<Arc<Container>> {
        let path = dev_dir.join("vfio");
        let raw = sys.open(&path).map_err(|e| match e.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::ENXIO) => {
                VfioError::ModuleNotLoaded { path: path.clone() }
            }
            _ => open_error(&path, e),
        })?;
        let fd = Fd { sys: sys.clone(), raw };
        let version =
            fd.ioctl(VFIO_GET_API_VERSION, IoctlArg::None).map_err(|e| VfioError::os("VFIO_GET_API_VERSION", e))?;
        if version != API_VERSION {
            return Err(VfioError::ApiVersion { found: version, expected: API_VERSION });
        }
        let check =
            |ext: u32| fd.ioctl(VFIO_CHECK_EXTENSION, IoctlArg::Value(ext as u64)).map(|v| v > 0).unwrap_or(false);
        let (has_type1v2, has_type1, has_noiommu) =
            (check(VFIO_TYPE1v2_IOMMU), check(VFIO_TYPE1_IOMMU), check(VFIO_NOIOMMU_IOMMU));
        Ok(Arc::new(Container {
            sys,
            fd,
            dev_dir: dev_dir.to_path_buf(),
            has_type1v2,
            has_type1,
            has_noiommu,
            state: Mutex::new(State::default()),
        }))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The IOMMU backend, once a group is attached.
    pub fn mode(&self) -> Option<IommuMode> {
        self.state().mode
    }

    /// What the IOMMU accepts (type1 only, once a group is attached).
    pub fn iommu_info(&self) -> Option<IommuInfo> {
        self.state().info.clone()
    }

    /// The group `group` attached to this container, opening and attaching it if needed (a group node can be
    /// open only once, so devices of one group share it). `addr` is the device it is opened for (for messages),
    /// `allow_noiommu` the user's opt-in to no-IOMMU mode (`--iova-mode pa`).
    pub fn group(
        self: &Arc<Self>,
        group: u32,
        addr: PciAddress,
        sysfs: &Sysfs,
        allow_noiommu: bool,
    ) -> Result<Arc<Group>> {
        let mut state = self.state();
        if let Some(g) = state.groups.get(&group).and_then(Weak::upgrade) {
            return Ok(g);
        }
        let iommu_path = self.dev_dir.join(group.to_string());
        let noiommu_path = self.dev_dir.join(format!("noiommu-{group}"));
        let (path, mode) = if self.sys.exists(&iommu_path) {
            let mode = if self.has_type1v2 {
                IommuMode::Type1v2
            } else if self.has_type1 {
                IommuMode::Type1
            } else {
                return Err(VfioError::NoType1 { noiommu_available: self.has_noiommu });
            };
            (iommu_path, mode)
        } else if self.sys.exists(&noiommu_path) {
            if !allow_noiommu {
                return Err(VfioError::NoIommuNotAllowed { addr, path: noiommu_path });
            }
            if !self.has_noiommu {
                return Err(VfioError::NoIommuUnavailable);
            }
            (noiommu_path, IommuMode::NoIommu)
        } else {
            let driver = sysfs.device(addr).ok().and_then(|d| d.driver);
            if driver.as_deref() == Some("vfio-pci") {
                return Err(VfioError::os(
                    format!("opening {}", iommu_path.display()),
                    io::Error::from_raw_os_error(libc::ENOENT),
                ));
            }
            return Err(VfioError::NotBound { addr, driver });
        };
        if let Some(current) = state.mode {
            let iommu = |m: IommuMode| m != IommuMode::NoIommu;
            if iommu(current) != iommu(mode) {
                return Err(VfioError::IovaMode {
                    memory: if iommu(current) { IovaMode::Va } else { IovaMode::Pa },
                    container: current,
                    reason: format!(
                        "{addr}: IOMMU group {group} is {mode} but this process already uses a {current} container; \
                         use devices of one kind"
                    ),
                });
            }
        }

        let raw = self.sys.open(&path).map_err(|e| match e.raw_os_error() {
            Some(libc::EBUSY) => VfioError::GroupBusy { group, path: path.clone() },
            Some(libc::ENOENT) => VfioError::NotBound { addr, driver: None },
            _ => open_error(&path, e),
        })?;
        let fd = Fd { sys: self.sys.clone(), raw };

        let mut status = to_bytes(&vfio_group_status { argsz: 8, flags: 0 });
        fd.ioctl(VFIO_GROUP_GET_STATUS, IoctlArg::Buf(&mut status))
            .map_err(|e| VfioError::os(format!("VFIO_GROUP_GET_STATUS on {}", path.display()), e))?;
        let status: vfio_group_status = read_pod(&status, 0).unwrap_or_default();
        if status.flags & VFIO_GROUP_FLAGS_VIABLE == 0 {
            let others = sysfs
                .iommu_group_devices(group)
                .into_iter()
                .filter_map(|a| {
                    let driver = sysfs.device(a).ok()?.driver?;
                    (driver != "vfio-pci" && driver != "pcieport").then(|| format!("{a} ({driver})"))
                })
                .collect();
            return Err(VfioError::GroupNotViable { group, others });
        }
        if status.flags & VFIO_GROUP_FLAGS_CONTAINER_SET != 0 {
            return Err(VfioError::GroupInUse { group, path });
        }
        let mut container_fd = to_bytes(&self.fd.raw);
        fd.ioctl(VFIO_GROUP_SET_CONTAINER, IoctlArg::Buf(&mut container_fd)).map_err(|e| match e.raw_os_error() {
            Some(libc::EBUSY) => VfioError::GroupInUse { group, path: path.clone() },
            _ => VfioError::os(format!("VFIO_GROUP_SET_CONTAINER on {}", path.display()), e),
        })?;

        if state.mode.is_none() {
            self.fd
                .ioctl(VFIO_SET_IOMMU, IoctlArg::Value(mode.extension() as u64))
                .map_err(|source| VfioError::SetIommu { mode, source })?;
            state.mode = Some(mode);
            if mode != IommuMode::NoIommu {
                let initial = to_bytes(&vfio_iommu_type1_info::default());
                let bytes = info_with_caps(&self.fd, VFIO_IOMMU_GET_INFO, initial, "VFIO_IOMMU_GET_INFO")?;
                state.info = Some(parse_iommu_info(&bytes)?);
            }
        }
        let g = Arc::new(Group { number: group, path, fd, container: self.clone() });
        state.groups.insert(group, Arc::downgrade(&g));
        Ok(g)
    }

    /// Maps `memory` for device DMA, at the IOVAs it hands out ([`DmaMemory::iova_at`]): IOVA = VA for
    /// `--iova-mode va` memory, the physical addresses for `pa` memory. The mapping lasts until the returned guard
    /// drops, and the guard (like the container's record of the mapping) holds `memory`, so the memory cannot be
    /// freed while the IOMMU lets the device reach it. Mapping the same region again returns another guard on the
    /// same mapping; the last one to drop unmaps it. In no-IOMMU mode nothing is mapped (the device sees physical
    /// addresses): the guard only keeps the memory alive, and `va` memory is refused.
    ///
    /// This is [`DmaMapper::map`] with the VFIO error.
    pub fn map_memory(self: &Arc<Self>, memory: &Arc<DmaMemory>) -> Result<DmaMapping> {
        let vaddr = memory.as_ptr() as usize;
        let len = memory.len();
        let mut state = self.state();
        let mode = state.mode.ok_or_else(|| VfioError::IovaMode {
            memory: memory.iova_mode(),
            container: IommuMode::Type1v2,
            reason: "no device is open in this VFIO container yet: open the device before mapping memory".into(),
        })?;
        if mode == IommuMode::NoIommu {
            if memory.iova_mode() == IovaMode::Va {
                return Err(VfioError::IovaMode {
                    memory: IovaMode::Va,
                    container: mode,
                    reason: "VFIO runs in no-IOMMU mode, so devices need physical addresses: allocate DMA memory \
                             with --iova-mode pa (hugepages, root)"
                        .into(),
                });
            }
            return Ok(DmaMapping::identity(memory.clone()));
        }
        if let Some(m) = state.mappings.iter_mut().find(|m| Arc::ptr_eq(&m.memory, memory)) {
            m.refs += 1;
            return Ok(self.guard(memory));
        }
        if let Some(m) = state.mappings.iter().find(|m| vaddr < m.vaddr() + m.len() && m.vaddr() < vaddr + len) {
            // Mapped regions are held alive, so two live regions cannot share addresses; refuse rather than
            // map one IOVA twice.
            return Err(VfioError::DmaRange {
                iova: vaddr as u64,
                size: len as u64,
                reason: format!("overlaps the live mapping of {:#x}+{:#x}", m.vaddr(), m.len()),
            });
        }
        let runs = runs_of(memory);
        let info = state.info.clone().unwrap_or_default();
        for &(_, iova, size) in &runs {
            info.check_range(iova, size)?;
        }
        let mut done = Vec::new();
        for &(va, iova, size) in &runs {
            let map = vfio_iommu_type1_dma_map {
                argsz: 32,
                flags: VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
                vaddr: va as u64,
                iova,
                size,
            };
            if let Err(source) = self.fd.ioctl(VFIO_IOMMU_MAP_DMA, IoctlArg::Buf(&mut to_bytes(&map))) {
                for &(iova, size) in &done {
                    let _ = self.unmap_dma(iova, size);
                }
                return Err(VfioError::DmaMap { iova, size, source });
            }
            done.push((iova, size));
        }
        state.mappings.push(MappedRegion { memory: memory.clone(), runs: done, refs: 1 });
        Ok(self.guard(memory))
    }

    fn guard(self: &Arc<Self>, memory: &Arc<DmaMemory>) -> DmaMapping {
        let key = memory.as_ptr() as usize;
        DmaMapping::new(memory.clone(), RegionGuard { container: self.clone(), key })
    }

    /// Unmaps `[iova, iova + size)` (`VFIO_IOMMU_UNMAP_DMA`): only for the last guard of a region (or a failed
    /// map), so the guards' count always matches what the IOMMU holds.
    fn unmap_dma(&self, iova: u64, size: u64) -> Result<()> {
        let unmap = vfio_iommu_type1_dma_unmap { argsz: 24, flags: 0, iova, size, ..Default::default() };
        self.fd
            .ioctl(VFIO_IOMMU_UNMAP_DMA, IoctlArg::Buf(&mut to_bytes(&unmap)))
            .map_err(|e| VfioError::os(format!("VFIO_IOMMU_UNMAP_DMA of {iova:#x}+{size:#x}"), e))?;
        Ok(())
    }

    /// The DMA-mapped regions: `(vaddr, len, guards)`.
    pub fn mappings(&self) -> Vec<(usize, usize, usize)> {
        self.state().mappings.iter().map(|m| (m.vaddr(), m.len(), m.refs)).collect()
    }

    /// Drops one guard of the region at `key`; the last one unmaps it.
    fn release(&self, key: usize) {
        let mut state = self.state();
        let Some(i) = state.mappings.iter().position(|m| m.vaddr() == key) else { return };
        state.mappings[i].refs -= 1;
        if state.mappings[i].refs == 0 {
            let m = state.mappings.swap_remove(i);
            drop(state);
            for &(iova, size) in &m.runs {
                let _ = self.unmap_dma(iova, size);
            }
            // `m.memory` goes only now, after the IOMMU stopped translating to it.
            drop(m);
        }
    }
}

/// `(vaddr, iova, size)` runs of IOVA-contiguous memory.
fn runs_of(memory: &DmaMemory) -> Vec<(usize, u64, u64)> {
    let mut runs = Vec::new();
    let mut offset = 0;
    while offset < memory.len() {
        let n = memory.contiguous_from(offset).max(1);
        let iova = memory.iova_at(offset).expect("offset inside the region");
        runs.push((memory.as_ptr() as usize + offset, iova, n as u64));
        offset += n;
    }
    runs
}

/// The container's half of a [`DmaMapping`]: one counted reference to a mapped region (keyed by its address,
/// unique while the region holds its memory). Dropping the last one unmaps the region.
struct RegionGuard {
    container: Arc<Container>,
    key: usize,
}

impl Drop for RegionGuard {
    fn drop(&mut self) {
        self.container.release(self.key);
    }
}

/// The driver-facing seam: [`Container::map_memory`] with the framework's error.
impl DmaMapper for Arc<Container> {
    fn map(&self, memory: &Arc<DmaMemory>) -> crate::dma::Result<DmaMapping> {
        Ok(self.map_memory(memory)?)
    }
}

/// An IOMMU group attached to a container.
pub struct Group {
    number: u32,
    path: PathBuf,
    pub(crate) fd: Fd,
    container: Arc<Container>,
}

impl fmt::Debug for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Group").field("number", &self.number).field("path", &self.path).finish()
    }
}

impl Group {
    /// The group number.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// The node it was opened from (`/dev/vfio/N` or `/dev/vfio/noiommu-N`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its container.
    pub fn container(&self) -> &Arc<Container> {
        &self.container
    }

    /// `VFIO_GROUP_GET_DEVICE_FD` for `addr`.
    pub(crate) fn device_fd(&self, addr: PciAddress) -> Result<Fd> {
        let mut name = addr.to_string().into_bytes();
        name.push(0);
        let raw = self
            .fd
            .ioctl(VFIO_GROUP_GET_DEVICE_FD, IoctlArg::Buf(&mut name))
            .map_err(|source| VfioError::DeviceNotInGroup { addr, group: self.number, source })?;
        Ok(Fd { sys: self.fd.sys.clone(), raw })
    }
}
