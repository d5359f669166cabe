//! Mapping DMA memory and translating it to IOVAs.

use std::ffi::CString;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use memmap2::{MmapOptions, MmapRaw};

use crate::heap::HeapStats;
use crate::sysfs;
use crate::{Error, Result};

/// Size of the pages behind a [`DmaMemory`] region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PageSize {
    /// Ordinary 4 KiB pages (`--no-huge`): software ports only, no stable physical address.
    Small4K,
    /// 2 MiB hugepages, the x86-64 default.
    #[default]
    Huge2M,
    /// 1 GiB hugepages.
    Huge1G,
}

impl PageSize {
    /// Page size in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            PageSize::Small4K => 4 << 10,
            PageSize::Huge2M => 2 << 20,
            PageSize::Huge1G => 1 << 30,
        }
    }

    /// Page size in KiB, as sysfs names it (`hugepages-2048kB`).
    pub const fn kib(self) -> usize {
        self.bytes() >> 10
    }

    /// Parses `2M`, `2048kB`, `1G`, `1048576kB`, `4K` (case-insensitive).
    pub fn parse(text: &str) -> Option<PageSize> {
        match text.trim().to_ascii_lowercase().as_str() {
            "2m" | "2mb" | "2048k" | "2048kb" => Some(PageSize::Huge2M),
            "1g" | "1gb" | "1024m" | "1048576k" | "1048576kb" => Some(PageSize::Huge1G),
            "4k" | "4kb" => Some(PageSize::Small4K),
            _ => None,
        }
    }

    /// Hugepage size from a byte count, if it is one we support.
    pub const fn from_bytes(bytes: usize) -> Option<PageSize> {
        match bytes {
            4096 => Some(PageSize::Small4K),
            0x20_0000 => Some(PageSize::Huge2M),
            0x4000_0000 => Some(PageSize::Huge1G),
            _ => None,
        }
    }

    /// log2 of the size: what `MAP_HUGETLB` mappings encode in their flags to pick a hugepage size.
    const fn shift(self) -> u8 {
        self.bytes().trailing_zeros() as u8
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PageSize::Small4K => "4K",
            PageSize::Huge2M => "2M",
            PageSize::Huge1G => "1G",
        })
    }
}

/// How a device addresses memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IovaMode {
    /// IOVA = virtual address; VFIO maps it in the IOMMU. The safe default.
    #[default]
    Va,
    /// IOVA = physical address (from /proc/self/pagemap), for no-IOMMU setups. Needs root and hugepages.
    Pa,
}

impl IovaMode {
    /// Parses `va` or `pa`.
    pub fn parse(text: &str) -> Option<IovaMode> {
        match text.trim().to_ascii_lowercase().as_str() {
            "va" => Some(IovaMode::Va),
            "pa" => Some(IovaMode::Pa),
            _ => None,
        }
    }
}

/// Where the pages of a region come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backing {
    /// A file on a hugetlbfs mount (unlinked right after mapping).
    Hugetlbfs(PathBuf),
    /// Anonymous `MAP_HUGETLB` memory.
    AnonymousHuge,
    /// Ordinary anonymous memory (`--no-huge`).
    NoHuge,
}

/// What memory an [`Allocator`] hands out: the EAL arguments `--no-huge`, `--huge-dir`, `--iova-mode`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmaConfig {
    /// Hugepage size to use.
    pub page_size: PageSize,
    /// Ordinary pages instead of hugepages (software ports only).
    pub no_huge: bool,
    /// A hugetlbfs mount to create files on; `None` finds one in /proc/mounts or falls back to `MAP_HUGETLB`.
    pub huge_dir: Option<PathBuf>,
    /// IOVA mode.
    pub iova_mode: IovaMode,
    /// Prefix of hugetlbfs file names (`--file-prefix`), so that several processes do not collide.
    pub file_prefix: String,
}

impl Default for DmaConfig {
    fn default() -> Self {
        DmaConfig {
            page_size: PageSize::Huge2M,
            no_huge: false,
            huge_dir: None,
            iova_mode: IovaMode::Va,
            file_prefix: "pktio".to_string(),
        }
    }
}

impl DmaConfig {
    /// Ordinary memory, IOVA = VA: enough for software ports and tests.
    pub fn no_huge() -> Self {
        DmaConfig { no_huge: true, page_size: PageSize::Small4K, ..Default::default() }
    }
}

/// Hands out [`DmaMemory`] regions according to a [`DmaConfig`].
#[derive(Debug, Clone)]
pub struct Allocator {
    config: DmaConfig,
    backing: Backing,
    // Shared with its clones and the regions they map.
    heap: Arc<HeapStats>,
}

impl Allocator {
    /// Checks the configuration against the system (mounts, page size) and picks a backing: the `--huge-dir`
    /// mount if given, else a writable hugetlbfs mount of the wanted page size from /proc/mounts, else anonymous
    /// `MAP_HUGETLB` memory. Whether enough hugepages are free is checked by [`Allocator::allocate`].
    pub fn new(config: DmaConfig) -> Result<Self> {
        if config.no_huge {
            if config.iova_mode == IovaMode::Pa {
                return Err(Error::PaNeedsHugepages);
            }
            return Ok(Allocator {
                config: DmaConfig { page_size: PageSize::Small4K, ..config },
                backing: Backing::NoHuge,
                heap: Arc::default(),
            });
        }
        if config.page_size == PageSize::Small4K {
            return Err(Error::InvalidRequest(
                "4K is not a hugepage size: use 2M or 1G pages, or --no-huge for ordinary memory".into(),
            ));
        }
        let mounts = sysfs::hugetlbfs_mounts()?;
        let (backing, page_size) = if let Some(dir) = &config.huge_dir {
            let canonical = std::fs::canonicalize(dir).map_err(|_| Error::NotHugetlbfs(dir.clone()))?;
            // The last of several mounts stacked on one directory is the visible one.
            match mounts.iter().rev().find(|m| m.path == canonical || m.path == *dir) {
                Some(m) => (Backing::Hugetlbfs(m.path.clone()), m.page_size),
                None => return Err(Error::NotHugetlbfs(dir.clone())),
            }
        } else {
            match mounts.into_iter().find(|m| m.page_size == config.page_size && writable(&m.path)) {
                Some(m) => (Backing::Hugetlbfs(m.path), config.page_size),
                None => (Backing::AnonymousHuge, config.page_size),
            }
        };
        Ok(Allocator { config: DmaConfig { page_size, ..config }, backing, heap: Arc::default() })
    }

    /// Like [`Allocator::new`], but with the backing chosen by the caller: `AnonymousHuge` forces `MAP_HUGETLB`
    /// even when a hugetlbfs is mounted, `Hugetlbfs(dir)` is `--huge-dir dir`, `NoHuge` is `--no-huge`.
    pub fn with_backing(config: DmaConfig, backing: Backing) -> Result<Self> {
        match backing {
            Backing::NoHuge => Allocator::new(DmaConfig { no_huge: true, ..config }),
            Backing::Hugetlbfs(dir) => Allocator::new(DmaConfig { no_huge: false, huge_dir: Some(dir), ..config }),
            Backing::AnonymousHuge => {
                let allocator = Allocator::new(DmaConfig { no_huge: false, huge_dir: None, ..config })?;
                Ok(Allocator { backing: Backing::AnonymousHuge, ..allocator })
            }
        }
    }

    /// Ordinary memory for software ports and tests; never fails.
    pub fn no_huge() -> Self {
        Allocator { config: DmaConfig::no_huge(), backing: Backing::NoHuge, heap: Arc::default() }
    }

    /// The configuration in force (page size resolved from the mount when `--huge-dir` was given).
    pub fn config(&self) -> &DmaConfig {
        &self.config
    }

    /// The chosen backing.
    pub fn backing(&self) -> &Backing {
        &self.backing
    }

    /// Maps at least `len` bytes (rounded up to whole pages), zeroed, locked in memory for hugepages.
    pub fn allocate(&self, len: usize) -> Result<DmaMemory> {
        let mut memory = DmaMemory::map(len, &self.config, &self.backing)?;
        self.heap.add(memory.len, len);
        memory.heap = Some((self.heap.clone(), len));
        Ok(memory)
    }

    /// What this allocator and its clones have mapped and not yet unmapped (DPDK's heap statistics).
    pub fn heap(&self) -> &HeapStats {
        &self.heap
    }
}

static FILE_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A mapped, page-aligned, zero-filled region of DMA-able memory. Unmapped on drop.
///
/// The region is shared memory in the device's sense: it hands out raw pointers, and it is up to the owner of each
/// part (a mempool, a descriptor ring) to keep Rust references and device writes apart.
pub struct DmaMemory {
    /// The mapping (unmapped on drop); raw, since the device writes it behind the compiler's back.
    map: MmapRaw,
    len: usize,
    page_size: PageSize,
    iova_mode: IovaMode,
    backing: Backing,
    /// IOVA of each page in PA mode; empty in VA mode.
    page_iovas: Vec<u64>,
    /// The heap it counts in and the bytes asked for.
    heap: Option<(Arc<HeapStats>, usize)>,
}

impl Drop for DmaMemory {
    fn drop(&mut self) {
        if let Some((heap, requested)) = &self.heap {
            heap.remove(self.len, *requested);
        }
    }
}

impl fmt::Debug for DmaMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DmaMemory")
            .field("base", &self.as_ptr())
            .field("len", &self.len)
            .field("page_size", &self.page_size)
            .field("iova_mode", &self.iova_mode)
            .field("backing", &self.backing)
            .finish()
    }
}

impl DmaMemory {
    fn map(len: usize, config: &DmaConfig, backing: &Backing) -> Result<DmaMemory> {
        if len == 0 {
            return Err(Error::InvalidRequest("zero-length region".into()));
        }
        let page_size = if *backing == Backing::NoHuge { PageSize::Small4K } else { config.page_size };
        let page = page_size.bytes();
        let len = len
            .checked_next_multiple_of(page)
            .ok_or_else(|| Error::InvalidRequest(format!("{len} bytes overflows")))?;
        let pages = len / page;
        if page_size != PageSize::Small4K {
            // Fail early, with the command that fixes it, rather than on a half-made mapping.
            if let Ok(counts) = sysfs::system_hugepages(Path::new(sysfs::SYSFS_ROOT), page_size) {
                if counts.available() + overcommit_headroom(page_size) < pages {
                    return Err(not_enough(&counts, pages));
                }
            }
        }

        // Read-write private anonymous memory, or a shared mapping of a hugetlbfs file; MAP_HUGETLB with the page
        // size bits and MAP_POPULATE are memmap2's `huge` and `populate`.
        let anon_error = |source| {
            let what = format!("mmap of {len} bytes of {page_size} pages ({})", backing_name(backing));
            map_error(what, source, page_size, pages)
        };
        let map = match backing {
            Backing::NoHuge => MmapOptions::new().len(len).map_anon().map(MmapRaw::from).map_err(anon_error)?,
            Backing::AnonymousHuge => MmapOptions::new()
                .len(len)
                .populate()
                .huge(Some(page_size.shift()))
                .map_anon()
                .map(MmapRaw::from)
                .map_err(anon_error)?,
            Backing::Hugetlbfs(dir) => map_hugetlbfs_file(dir, &config.file_prefix, len, pages, page_size)?,
        };
        let mut memory = DmaMemory {
            map,
            len,
            page_size,
            iova_mode: config.iova_mode,
            backing: backing.clone(),
            page_iovas: Vec::new(),
            heap: None,
        };

        if page_size != PageSize::Small4K {
            // Touch every page so a shortfall shows up now (SIGBUS later would be worse), then lock them: hugepages
            // are never swapped, but mlock also keeps their physical address fixed for PA mode.
            for i in 0..pages {
                // SAFETY: offset i * page is inside the mapping, which is writable.
                unsafe { memory.as_ptr().add(i * page).write_volatile(0) };
            }
            if memory.map.lock().is_err() && config.iova_mode == IovaMode::Pa {
                return Err(Error::os(format!(
                    "mlock of {len} bytes of hugepage memory for --iova-mode pa (raise `ulimit -l` or run as root)"
                )));
            }
        }
        if config.iova_mode == IovaMode::Pa {
            memory.page_iovas = physical_addresses(memory.as_ptr() as usize, pages, page)?;
        }
        Ok(memory)
    }

    /// First byte of the region.
    #[inline]
    pub fn as_ptr(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    /// Length in bytes (a whole number of pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: regions are at least one page.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Page size behind the region.
    pub fn page_size(&self) -> PageSize {
        self.page_size
    }

    /// IOVA mode the region was mapped for.
    pub fn iova_mode(&self) -> IovaMode {
        self.iova_mode
    }

    /// Where the pages came from.
    pub fn backing(&self) -> &Backing {
        &self.backing
    }

    /// IOVA of the byte at `offset`, or `None` past the end.
    #[inline]
    pub fn iova_at(&self, offset: usize) -> Option<u64> {
        if offset >= self.len {
            return None;
        }
        Some(match self.iova_mode {
            IovaMode::Va => self.as_ptr() as u64 + offset as u64,
            IovaMode::Pa => {
                let page = self.page_size.bytes();
                self.page_iovas[offset / page] + (offset % page) as u64
            }
        })
    }

    /// IOVA of the byte at `ptr`, or `None` if it is outside the region.
    #[inline]
    pub fn iova_of(&self, ptr: *const u8) -> Option<u64> {
        let offset = (ptr as usize).checked_sub(self.as_ptr() as usize)?;
        self.iova_at(offset)
    }

    /// The largest `n` such that `[offset, offset + n)` is contiguous in IOVA space (to the end of its page in PA
    /// mode, to the end of the region in VA mode).
    pub fn contiguous_from(&self, offset: usize) -> usize {
        match self.iova_mode {
            IovaMode::Va => self.len.saturating_sub(offset),
            IovaMode::Pa => {
                let page = self.page_size.bytes();
                let mut end = (offset / page + 1) * page;
                while end < self.len && self.page_iovas[end / page] == self.page_iovas[end / page - 1] + page as u64 {
                    end += page;
                }
                end.min(self.len).saturating_sub(offset)
            }
        }
    }
}

/// `NotEnoughHugepages` for a request of `needed` pages when `counts` were found.
fn not_enough(counts: &sysfs::HugepageCounts, needed: usize) -> Error {
    let free = counts.available();
    Error::NotEnoughHugepages {
        size: counts.size,
        needed,
        free,
        kib: counts.size.kib(),
        reserve: counts.total + needed.saturating_sub(free),
    }
}

/// Pages of `size` the kernel may still hand out beyond `nr_hugepages` (`nr_overcommit_hugepages - surplus`).
fn overcommit_headroom(size: PageSize) -> usize {
    let dir = Path::new(sysfs::SYSFS_ROOT).join(format!("kernel/mm/hugepages/hugepages-{}kB", size.kib()));
    let read = |name: &str| read_trimmed(&dir.join(name)).ok().and_then(|t| t.parse::<usize>().ok()).unwrap_or(0);
    read("nr_overcommit_hugepages").saturating_sub(read("surplus_hugepages"))
}

/// Turns a failed mapping into an error: out of hugepages becomes the actionable `NotEnoughHugepages`.
fn map_error(what: String, source: std::io::Error, size: PageSize, pages: usize) -> Error {
    let out_of_pages = matches!(source.raw_os_error(), Some(libc::ENOMEM) | Some(libc::ENOSPC));
    if size != PageSize::Small4K && out_of_pages {
        if let Ok(counts) = sysfs::system_hugepages(Path::new(sysfs::SYSFS_ROOT), size) {
            return not_enough(&counts, pages);
        }
    }
    Error::Os { what, source }
}

fn backing_name(backing: &Backing) -> String {
    match backing {
        Backing::Hugetlbfs(dir) => format!("hugetlbfs {}", dir.display()),
        Backing::AnonymousHuge => "MAP_HUGETLB".into(),
        Backing::NoHuge => "ordinary pages".into(),
    }
}

/// Whether this process may create files in `dir`.
fn writable(dir: &Path) -> bool {
    let Ok(path) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: path is a valid NUL-terminated string; access only reads it.
    unsafe { libc::access(path.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// Creates, sizes and maps a file on a hugetlbfs mount; the file is unlinked at once (the mapping keeps the pages).
fn map_hugetlbfs_file(dir: &Path, prefix: &str, len: usize, pages: usize, size: PageSize) -> Result<MmapRaw> {
    let n = FILE_COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{prefix}map_{}_{n}", std::process::id()));
    // O_CREAT | O_EXCL | O_RDWR (std adds O_CLOEXEC), mode 0600.
    let file = std::fs::OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(&path).map_err(
        |source| {
            let hint =
                if source.kind() == std::io::ErrorKind::PermissionDenied { " (run as root or chown it)" } else { "" };
            Error::io(format!("creating {} on hugetlbfs{hint}", path.display()), source)
        },
    )?;
    // The mapping keeps the pages; the name is only needed to create them.
    let _ = std::fs::remove_file(&path);
    file.set_len(len as u64)
        .map_err(|source| map_error(format!("sizing {} to {len} bytes", path.display()), source, size, pages))?;
    // Shared, read-write, populated; the mapping stays valid after the file is closed.
    MmapOptions::new().len(len).populate().map_raw(&file).map_err(|source| {
        let what = format!("mmap of {len} bytes of {size} pages from {}", path.display());
        map_error(what, source, size, pages)
    })
}

/// Physical address of the byte at `addr` in this process, from /proc/self/pagemap. Needs root (CAP_SYS_ADMIN);
/// the page must be resident (touch it first). Used for `--iova-mode pa`, and to check that an address is stable.
pub fn virt_to_phys(addr: *const u8) -> Result<u64> {
    let addr = addr as usize;
    let file = File::open("/proc/self/pagemap").map_err(|source| Error::io("opening /proc/self/pagemap", source))?;
    Ok(pagemap_entry(&file, addr / 4096)? + (addr % 4096) as u64)
}

/// Physical address of virtual 4 KiB page `vpn` (one u64 per page: bit 63 "present", bits 0..=54 the page frame
/// number; frame numbers read as 0 without CAP_SYS_ADMIN).
fn pagemap_entry(file: &File, vpn: usize) -> Result<u64> {
    const PAGEMAP_PRESENT: u64 = 1 << 63;
    const PAGEMAP_PFN_MASK: u64 = (1 << 55) - 1;
    let mut entry = [0u8; 8];
    file.read_exact_at(&mut entry, (vpn * 8) as u64)
        .map_err(|source| Error::io("reading /proc/self/pagemap", source))?;
    let entry = u64::from_le_bytes(entry);
    let pfn = entry & PAGEMAP_PFN_MASK;
    if entry & PAGEMAP_PRESENT == 0 || pfn == 0 {
        return Err(Error::PagemapUnreadable);
    }
    Ok(pfn * 4096)
}

/// Physical address of the first byte of each page of a region at `base`.
fn physical_addresses(base: usize, pages: usize, page: usize) -> Result<Vec<u64>> {
    let file = File::open("/proc/self/pagemap").map_err(|source| Error::io("opening /proc/self/pagemap", source))?;
    (0..pages).map(|i| pagemap_entry(&file, (base + i * page) / 4096)).collect()
}

/// Reads a small text file, trimmed.
pub(crate) fn read_trimmed(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    File::open(path)?.read_to_string(&mut text)?;
    Ok(text.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_enough_names_the_total_to_write() {
        let counts = sysfs::HugepageCounts { size: PageSize::Huge2M, total: 10, free: 4, reserved: 1, surplus: 0 };
        let err = not_enough(&counts, 5);
        assert!(matches!(err, Error::NotEnoughHugepages { needed: 5, free: 3, reserve: 12, kib: 2048, .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("`echo 12 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages`"), "{msg}");
        assert!(msg.contains("`hugepages --pages 12 --pagesize 2M`"), "{msg}");
        assert!(!msg.contains("hugepagesz"), "the boot-time hint is for 1G pages only: {msg}");
    }

    #[test]
    fn map_error_keeps_other_os_errors() {
        let err = map_error("mmap".into(), std::io::Error::from_raw_os_error(libc::EINVAL), PageSize::Huge2M, 1);
        assert!(matches!(err, Error::Os { .. }), "{err:?}");
        assert!(err.to_string().starts_with("mmap failed: "), "{err}");
    }
}
