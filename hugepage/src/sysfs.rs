//! Hugepage counts and mounts as the kernel reports them (/sys/kernel/mm/hugepages, per-node sysfs, /proc/mounts),
//! and the few system calls that change them (reserving pages, mounting hugetlbfs).
//!
//! Every function that reads or writes sysfs takes the sysfs root (normally [`SYSFS_ROOT`]) so that it can be tested
//! against a fake tree in a temporary directory.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::memory::read_trimmed;
use crate::{Error, PageSize, Result};

/// Where sysfs is mounted.
pub const SYSFS_ROOT: &str = "/sys";
/// The kernel's mount table.
pub const PROC_MOUNTS: &str = "/proc/mounts";
/// Where hugetlbfs is mounted by default (systemd's `dev-hugepages.mount`, `hugepages --mount`).
pub const DEFAULT_MOUNT: &str = "/dev/hugepages";

/// A hugetlbfs mount point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HugetlbfsMount {
    /// Mount point.
    pub path: PathBuf,
    /// Page size of the mount (`pagesize=` option, else the system default).
    pub page_size: PageSize,
}

/// Every hugetlbfs mount in /proc/mounts.
pub fn hugetlbfs_mounts() -> Result<Vec<HugetlbfsMount>> {
    hugetlbfs_mounts_in(Path::new(PROC_MOUNTS))
}

/// Every hugetlbfs mount listed in `mounts` (a file in /proc/mounts format).
pub fn hugetlbfs_mounts_in(mounts: &Path) -> Result<Vec<HugetlbfsMount>> {
    let text =
        std::fs::read_to_string(mounts).map_err(|source| Error::io(format!("reading {}", mounts.display()), source))?;
    Ok(parse_mounts(&text, default_page_size()))
}

/// Parses /proc/mounts text; `default` is the page size of mounts without a `pagesize=` option.
pub fn parse_mounts(text: &str, default: PageSize) -> Vec<HugetlbfsMount> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (_dev, path, fstype, options) = (fields.next()?, fields.next()?, fields.next()?, fields.next()?);
            if fstype != "hugetlbfs" {
                return None;
            }
            let page_size = options
                .split(',')
                .find_map(|o| o.strip_prefix("pagesize="))
                .and_then(PageSize::parse)
                .unwrap_or(default);
            Some(HugetlbfsMount { path: PathBuf::from(unescape_mount_path(path)), page_size })
        })
        .collect()
}

/// Undoes the kernel's octal escapes in /proc/mounts (`\040` for a space, `\011` tab, `\012` newline, `\134` a
/// backslash), in one pass so that an escaped backslash followed by digits stays as written.
fn unescape_mount_path(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) {
            let value = bytes[i + 1..i + 4].iter().fold(0u32, |v, b| v * 8 + u32::from(b - b'0'));
            if let Ok(byte) = u8::try_from(value) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The kernel's default hugepage size (`Hugepagesize:` in /proc/meminfo), 2 MiB if unknown.
pub fn default_page_size() -> PageSize {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("Hugepagesize:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        })
        .and_then(|kib| PageSize::from_bytes(kib << 10))
        .filter(|size| *size != PageSize::Small4K)
        .unwrap_or(PageSize::Huge2M)
}

fn size_dir(root: &Path, size: PageSize) -> PathBuf {
    root.join(format!("hugepages-{}kB", size.kib()))
}

fn system_dir(root: &Path) -> PathBuf {
    root.join("kernel/mm/hugepages")
}

fn node_dir(root: &Path, node: u32) -> PathBuf {
    root.join(format!("devices/system/node/node{node}/hugepages"))
}

fn read_count(path: &Path) -> Result<usize> {
    let text = read_trimmed(path).map_err(|source| Error::io(format!("reading {}", path.display()), source))?;
    text.parse().map_err(|_| Error::InvalidRequest(format!("{} holds {text:?}, not a number", path.display())))
}

/// Hugepage counts of one page size, system-wide or on one NUMA node, as sysfs reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HugepageCounts {
    /// Page size.
    pub size: PageSize,
    /// Reserved pages (`nr_hugepages`).
    pub total: usize,
    /// Pages not mapped by anyone (`free_hugepages`).
    pub free: usize,
    /// Free pages already promised to a mapping that has not touched them yet (`resv_hugepages`, system-wide only;
    /// 0 per node).
    pub reserved: usize,
    /// Pages beyond `nr_hugepages` handed out from the overcommit pool (`surplus_hugepages`).
    pub surplus: usize,
}

impl HugepageCounts {
    /// Pages a new mapping can still get: free and not promised to another mapping.
    pub fn available(&self) -> usize {
        self.free.saturating_sub(self.reserved)
    }

    fn read(dir: &Path, size: PageSize) -> Result<HugepageCounts> {
        let optional = |name: &str| {
            let path = dir.join(name);
            if path.exists() {
                read_count(&path)
            } else {
                Ok(0)
            }
        };
        Ok(HugepageCounts {
            size,
            total: read_count(&dir.join("nr_hugepages"))?,
            free: read_count(&dir.join("free_hugepages"))?,
            reserved: optional("resv_hugepages")?,
            surplus: optional("surplus_hugepages")?,
        })
    }
}

/// Page sizes the kernel supports (directories under `root/kernel/mm/hugepages`), smallest first. Sizes this crate
/// cannot use (for example 64K or 32M on aarch64) are left out.
pub fn page_sizes(root: &Path) -> Result<Vec<PageSize>> {
    let dir = system_dir(root);
    let entries = std::fs::read_dir(&dir).map_err(|source| {
        Error::io(format!("listing {} (is this kernel built with CONFIG_HUGETLBFS?)", dir.display()), source)
    })?;
    let mut sizes: Vec<PageSize> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name();
            let kib: usize = name.to_str()?.strip_prefix("hugepages-")?.strip_suffix("kB")?.parse().ok()?;
            PageSize::from_bytes(kib << 10).filter(|s| *s != PageSize::Small4K)
        })
        .collect();
    sizes.sort_unstable_by_key(|s| s.bytes());
    Ok(sizes)
}

/// System-wide counts of one page size under `root` (normally [`SYSFS_ROOT`]).
pub fn system_hugepages(root: &Path, size: PageSize) -> Result<HugepageCounts> {
    HugepageCounts::read(&size_dir(&system_dir(root), size), size)
}

/// Free hugepages of a size, system-wide.
pub fn free_hugepages(size: PageSize) -> Result<usize> {
    Ok(system_hugepages(Path::new(SYSFS_ROOT), size)?.free)
}

/// Hugepages of a size that a new mapping can get, system-wide: free minus those promised to other mappings.
pub fn available_hugepages(size: PageSize) -> Result<usize> {
    Ok(system_hugepages(Path::new(SYSFS_ROOT), size)?.available())
}

/// Reserved (total) hugepages of a size, system-wide.
pub fn total_hugepages(size: PageSize) -> Result<usize> {
    Ok(system_hugepages(Path::new(SYSFS_ROOT), size)?.total)
}

/// NUMA nodes under `root/devices/system/node`, sorted; empty on kernels without NUMA support.
pub fn numa_nodes(root: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(root.join("devices/system/node")) else {
        return Vec::new();
    };
    let mut nodes: Vec<u32> =
        entries.filter_map(|e| e.ok()?.file_name().to_str()?.strip_prefix("node")?.parse().ok()).collect();
    nodes.sort_unstable();
    nodes
}

/// Per-NUMA-node hugepage counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHugepages {
    /// NUMA node number.
    pub node: u32,
    /// Page size.
    pub size: PageSize,
    /// Reserved pages.
    pub total: usize,
    /// Free pages.
    pub free: usize,
}

/// Hugepage counts for every NUMA node and supported page size, from `root` (normally [`SYSFS_ROOT`]). Empty when
/// the kernel has no NUMA nodes in sysfs; use [`system_hugepages`] then.
pub fn node_hugepages(root: &Path) -> Result<Vec<NodeHugepages>> {
    let mut out = Vec::new();
    for node in numa_nodes(root) {
        for size in [PageSize::Huge2M, PageSize::Huge1G] {
            let dir = size_dir(&node_dir(root, node), size);
            if !dir.exists() {
                continue;
            }
            let counts = HugepageCounts::read(&dir, size)?;
            out.push(NodeHugepages { node, size, total: counts.total, free: counts.free });
        }
    }
    Ok(out)
}

/// Sets the number of reserved hugepages of `size` on `node` (or system-wide when `None`), under `root` (normally
/// [`SYSFS_ROOT`]). Returns the count the kernel actually reserved, which can be lower when memory is fragmented
/// (and higher when more pages are in use than asked for).
pub fn reserve_hugepages(root: &Path, size: PageSize, node: Option<u32>, count: usize) -> Result<usize> {
    if size == PageSize::Small4K {
        return Err(Error::InvalidRequest("4K is not a hugepage size; use 2M or 1G".into()));
    }
    let dir = match node {
        Some(n) => size_dir(&node_dir(root, n), size),
        None => size_dir(&system_dir(root), size),
    };
    if !dir.exists() {
        return Err(Error::InvalidRequest(match node {
            Some(n) if !node_dir(root, n).exists() => {
                let nodes = numa_nodes(root);
                format!("NUMA node {n} does not exist (nodes: {})", list(&nodes))
            }
            _ => format!(
                "this kernel has no {size} hugepages ({} is missing; sizes available: {})",
                dir.display(),
                list(&page_sizes(root).unwrap_or_default())
            ),
        }));
    }
    let path = dir.join("nr_hugepages");
    std::fs::write(&path, format!("{count}\n")).map_err(|source| {
        let hint = if source.kind() == std::io::ErrorKind::PermissionDenied { " (run as root)" } else { "" };
        Error::io(format!("writing {count} to {}{hint}", path.display()), source)
    })?;
    read_count(&path)
}

fn list<T: std::fmt::Display>(items: &[T]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    items.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

/// Releases every reserved hugepage of every size, on every NUMA node (system-wide on kernels without NUMA), under
/// `root`. Pages still mapped by a process (or held by a file on a hugetlbfs mount) cannot be released; they are
/// returned, with `total` the count the kernel kept.
pub fn clear_hugepages(root: &Path) -> Result<Vec<NodeHugepages>> {
    let nodes = numa_nodes(root);
    let mut kept = Vec::new();
    for size in page_sizes(root)? {
        if nodes.is_empty() {
            let left = reserve_hugepages(root, size, None, 0)?;
            if left > 0 {
                let free = system_hugepages(root, size)?.free;
                kept.push(NodeHugepages { node: 0, size, total: left, free });
            }
        }
        for &node in &nodes {
            let dir = size_dir(&node_dir(root, node), size);
            if !dir.exists() {
                continue;
            }
            let left = reserve_hugepages(root, size, Some(node), 0)?;
            if left > 0 {
                let free = HugepageCounts::read(&dir, size)?.free;
                kept.push(NodeHugepages { node, size, total: left, free });
            }
        }
    }
    Ok(kept)
}

/// Parses an amount of memory: a number with a binary suffix `K`, `M`, `G` or `T` (optionally followed by `B` or
/// `iB`, case-insensitive), as in `512M` or `1G`. A plain number is refused (`None`): it is too easily meant as a
/// page count.
pub fn parse_memory_size(text: &str) -> Option<u64> {
    let text = text.trim().to_ascii_lowercase();
    let text = text.strip_suffix("ib").or_else(|| text.strip_suffix('b')).unwrap_or(&text);
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    let shift = match unit {
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return None,
    };
    let value: u64 = digits.parse().ok()?;
    value.checked_mul(1 << shift)
}

fn cstring(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::InvalidRequest(format!("{} has a NUL byte", path.display())))
}

/// Mounts a hugetlbfs of `size` pages on `dir` (created if missing), like
/// `mount -t hugetlbfs -o pagesize=SIZE nodev DIR`. Needs root (CAP_SYS_ADMIN).
pub fn mount_hugetlbfs(dir: &Path, size: PageSize) -> Result<()> {
    if size == PageSize::Small4K {
        return Err(Error::InvalidRequest("4K is not a hugepage size; use 2M or 1G".into()));
    }
    std::fs::create_dir_all(dir).map_err(|source| Error::io(format!("creating {}", dir.display()), source))?;
    let target = cstring(dir)?;
    let options = CString::new(format!("pagesize={size}")).expect("no NUL in page size");
    // SAFETY: every pointer is a valid NUL-terminated string that outlives the call.
    let rc =
        unsafe { libc::mount(c"nodev".as_ptr(), target.as_ptr(), c"hugetlbfs".as_ptr(), 0, options.as_ptr().cast()) };
    if rc != 0 {
        let source = std::io::Error::last_os_error();
        let hint = if source.raw_os_error() == Some(libc::EPERM) { " (run as root)" } else { "" };
        return Err(Error::io(format!("mount -t hugetlbfs -o pagesize={size} nodev {}{hint}", dir.display()), source));
    }
    Ok(())
}

/// Unmounts the file system on `dir`, like `umount DIR`. Needs root (CAP_SYS_ADMIN).
pub fn unmount(dir: &Path) -> Result<()> {
    let target = cstring(dir)?;
    // SAFETY: target is a valid NUL-terminated string that outlives the call.
    if unsafe { libc::umount2(target.as_ptr(), 0) } != 0 {
        let source = std::io::Error::last_os_error();
        let hint = match source.raw_os_error() {
            Some(libc::EBUSY) => " (files on it are still open or mapped: stop the programs using it)",
            Some(libc::EPERM) => " (run as root)",
            _ => "",
        };
        return Err(Error::io(format!("umount {}{hint}", dir.display()), source));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0
nodev /mnt/huge1g hugetlbfs rw,relatime,pagesize=1024M 0 0
none /mnt/old hugetlbfs rw,relatime 0 0
nodev /mnt/with\\040space hugetlbfs rw,pagesize=2M 0 0
nodev /mnt/back\\134040slash hugetlbfs rw,pagesize=1G 0 0
tmpfs /mnt/hugepages-not tmpfs rw 0 0
truncated line
";

    #[test]
    fn parse_mounts_finds_hugetlbfs_and_page_sizes() {
        let mounts = parse_mounts(MOUNTS, PageSize::Huge1G);
        let got: Vec<(&str, PageSize)> = mounts.iter().map(|m| (m.path.to_str().unwrap(), m.page_size)).collect();
        assert_eq!(
            got,
            [
                ("/dev/hugepages", PageSize::Huge2M),
                ("/mnt/huge1g", PageSize::Huge1G),
                ("/mnt/old", PageSize::Huge1G), // no pagesize= option: the default passed in
                ("/mnt/with space", PageSize::Huge2M),
                ("/mnt/back\\040slash", PageSize::Huge1G),
            ]
        );
        assert!(parse_mounts("", PageSize::Huge2M).is_empty());
    }

    #[test]
    fn unescape_keeps_text_without_escapes() {
        assert_eq!(unescape_mount_path("/a/b"), "/a/b");
        assert_eq!(unescape_mount_path("/a\\0"), "/a\\0");
        assert_eq!(unescape_mount_path("/a\\011b\\012"), "/a\tb\n");
        assert_eq!(unescape_mount_path("/a\\999"), "/a\\999");
    }

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory_size("1G"), Some(1 << 30));
        assert_eq!(parse_memory_size("1g"), Some(1 << 30));
        assert_eq!(parse_memory_size("512M"), Some(512 << 20));
        assert_eq!(parse_memory_size("512MB"), Some(512 << 20));
        assert_eq!(parse_memory_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_memory_size("4096k"), Some(4 << 20));
        assert_eq!(parse_memory_size("1T"), Some(1 << 40));
        for bad in ["", "G", "512", "1X", "-1G", "1.5G", "99999999999999999999G", "1 G G"] {
            assert_eq!(parse_memory_size(bad), None, "{bad:?}");
        }
    }
}
