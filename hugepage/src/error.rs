use std::path::PathBuf;

use crate::PageSize;

/// Errors from reserving or mapping DMA memory. Each says what the user can do about it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Not enough free hugepages of the wanted size. The message carries the exact command that reserves them.
    #[error(
        "not enough free {size} hugepages: {needed} needed, {free} free. Reserve them as root with \
         `echo {reserve} > /sys/kernel/mm/hugepages/hugepages-{kib}kB/nr_hugepages` \
         (or `hugepages --pages {reserve} --pagesize {size}`){hint}, or run with --no-huge for software ports only",
        hint = .size.reserve_hint()
    )]
    NotEnoughHugepages {
        /// Page size that was asked for.
        size: PageSize,
        /// Pages needed for the request.
        needed: usize,
        /// Pages free (and not promised to another mapping) when the request failed.
        free: usize,
        /// Page size in KiB, for the sysfs path.
        kib: usize,
        /// The value to write to `nr_hugepages` so that `needed` pages are free: the pages already reserved plus
        /// the shortfall.
        reserve: usize,
    },
    /// No hugetlbfs mount of the wanted page size.
    #[error(
        "no hugetlbfs mount for {size} pages: mount one as root with \
         `mkdir -p /dev/hugepages{suffix} && mount -t hugetlbfs -o pagesize={size} nodev /dev/hugepages{suffix}` \
         (or `hugepages --mount /dev/hugepages{suffix} --pagesize {size}`), or pass --huge-dir DIR"
    )]
    NoHugetlbfsMount {
        /// Page size that was asked for.
        size: PageSize,
        /// Suggested mount point suffix.
        suffix: &'static str,
    },
    /// `--huge-dir` names a directory that is not a hugetlbfs mount.
    #[error(
        "{0} is not a hugetlbfs mount (see /proc/mounts); mount one as root with \
         `mkdir -p {0} && mount -t hugetlbfs nodev {0}` (or `hugepages --mount {0}`)"
    )]
    NotHugetlbfs(PathBuf),
    /// PA mode needs /proc/self/pagemap with physical frame numbers, which only root (CAP_SYS_ADMIN) sees.
    #[error(
        "cannot read physical addresses from /proc/self/pagemap (frame numbers read as 0): \
         --iova-mode pa needs root (CAP_SYS_ADMIN); use --iova-mode va with VFIO and an IOMMU instead"
    )]
    PagemapUnreadable,
    /// A PA-mode request on memory that is not pinned.
    #[error("--iova-mode pa needs hugepages (physical addresses of ordinary pages are not stable); drop --no-huge")]
    PaNeedsHugepages,
    /// The request was empty, overflowed, or asked for a page size that is not a hugepage size.
    #[error("invalid DMA memory request: {0}")]
    InvalidRequest(String),
    /// A system call failed.
    #[error("{what} failed: {source}")]
    Os {
        /// What we were doing.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn os(what: impl Into<String>) -> Self {
        Error::Os { what: what.into(), source: std::io::Error::last_os_error() }
    }

    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Os { what: what.into(), source }
    }
}

impl PageSize {
    /// Extra advice for reserving pages of this size (1 GiB pages are hard to find once memory is fragmented).
    fn reserve_hint(&self) -> &'static str {
        match self {
            PageSize::Huge1G => {
                "; if the kernel cannot find contiguous 1G blocks, boot with \
                 `default_hugepagesz=1G hugepagesz=1G hugepages=N` on the kernel command line"
            }
            _ => "",
        }
    }
}
