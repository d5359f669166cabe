//! Hugepage counts and mounts as the kernel reports them (/sys/kernel/mm/hugepages, per-node sysfs, /proc/mounts).

use std::path::{Path, PathBuf};

use crate::memory::read_trimmed;
use crate::{Error, PageSize, Result};

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
    let text = std::fs::read_to_string("/proc/mounts")
        .map_err(|source| Error::Os { what: "reading /proc/mounts".into(), source })?;
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

fn unescape_mount_path(path: &str) -> String {
    path.replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
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
        .unwrap_or(PageSize::Huge2M)
}

fn size_dir(root: &Path, size: PageSize) -> PathBuf {
    root.join(format!("hugepages-{}kB", size.kib()))
}

fn read_count(path: &Path) -> Result<usize> {
    let text =
        read_trimmed(path).map_err(|source| Error::Os { what: format!("reading {}", path.display()), source })?;
    text.parse().map_err(|_| Error::InvalidRequest(format!("{} holds {text:?}, not a number", path.display())))
}

/// Free hugepages of a size, system-wide.
pub fn free_hugepages(size: PageSize) -> Result<usize> {
    read_count(&size_dir(Path::new("/sys/kernel/mm/hugepages"), size).join("free_hugepages"))
}

/// Reserved (total) hugepages of a size, system-wide.
pub fn total_hugepages(size: PageSize) -> Result<usize> {
    read_count(&size_dir(Path::new("/sys/kernel/mm/hugepages"), size).join("nr_hugepages"))
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

/// Hugepage counts for every NUMA node and supported page size, from `root` (normally `/sys`).
pub fn node_hugepages(root: &Path) -> Result<Vec<NodeHugepages>> {
    let nodes_dir = root.join("devices/system/node");
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(&nodes_dir) {
        Ok(entries) => entries,
        Err(source) => return Err(Error::Os { what: format!("listing {}", nodes_dir.display()), source }),
    };
    let mut nodes: Vec<u32> =
        entries.filter_map(|e| e.ok()?.file_name().to_str()?.strip_prefix("node")?.parse().ok()).collect();
    nodes.sort_unstable();
    for node in nodes {
        for size in [PageSize::Huge2M, PageSize::Huge1G] {
            let dir = size_dir(&nodes_dir.join(format!("node{node}/hugepages")), size);
            if !dir.exists() {
                continue;
            }
            out.push(NodeHugepages {
                node,
                size,
                total: read_count(&dir.join("nr_hugepages"))?,
                free: read_count(&dir.join("free_hugepages"))?,
            });
        }
    }
    Ok(out)
}

/// Sets the number of reserved hugepages of `size` on `node` (or system-wide when `None`), under `root` (normally
/// `/sys`). Returns the count the kernel actually reserved, which can be lower when memory is fragmented.
pub fn reserve_hugepages(root: &Path, size: PageSize, node: Option<u32>, count: usize) -> Result<usize> {
    let dir = match node {
        Some(n) => size_dir(&root.join(format!("devices/system/node/node{n}/hugepages")), size),
        None => size_dir(&root.join("kernel/mm/hugepages"), size),
    };
    let path = dir.join("nr_hugepages");
    std::fs::write(&path, count.to_string())
        .map_err(|source| Error::Os { what: format!("writing {count} to {} (needs root)", path.display()), source })?;
    read_count(&path)
}
