//! Help for tests that need real hugepages, and fake sysfs trees ([`fake_sysfs`]) for those that must not.
//!
//! Tests that reserve hugepages (write `nr_hugepages`) must not race each other, in this process or in another test
//! binary running at the same time: [`reserve`] takes a machine-wide lock (`flock` on [`LOCK_PATH`]) for as long as
//! the returned guard lives, makes sure enough pages are available (reserving more as root if needed), and on drop
//! gives back exactly the pages it added.
//!
//! ```no_run
//! use hugepage::{testing, PageSize};
//! let _pages = match testing::reserve(PageSize::Huge2M, 4) {
//!     Ok(guard) => guard,
//!     Err(reason) => {
//!         eprintln!("skipped: {reason}");
//!         return;
//!     }
//! };
//! // ... allocate hugepage memory ...
//! ```

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::sysfs::{self, SYSFS_ROOT};
use crate::PageSize;

/// The lock file every hugepage-reserving test holds (`flock`, exclusive).
pub const LOCK_PATH: &str = "/tmp/hugepage-tests.lock";

/// Holds the hugepage test lock and the pages reserved for a test. Dropping it gives the added pages back.
#[derive(Debug)]
pub struct HugepageGuard {
    _lock: File,
    size: PageSize,
    added: usize,
    before: usize,
}

impl HugepageGuard {
    /// Pages this guard added to `nr_hugepages` (0 when enough were free already).
    pub fn added(&self) -> usize {
        self.added
    }

    /// `nr_hugepages` before the guard changed it.
    pub fn before(&self) -> usize {
        self.before
    }

    /// The page size reserved.
    pub fn size(&self) -> PageSize {
        self.size
    }
}

impl Drop for HugepageGuard {
    fn drop(&mut self) {
        if self.added == 0 {
            return;
        }
        let root = Path::new(SYSFS_ROOT);
        // Give back what we added rather than writing the old value: someone outside the lock may have changed it.
        if let Ok(counts) = sysfs::system_hugepages(root, self.size) {
            let target = counts.total.saturating_sub(self.added).max(self.before.min(counts.total));
            if let Err(e) = sysfs::reserve_hugepages(root, self.size, None, target) {
                eprintln!("hugepage test guard: could not restore nr_hugepages of {} pages: {e}", self.size);
            }
        }
    }
}

/// Takes the machine-wide hugepage test lock, blocking until it is free.
pub fn lock() -> std::io::Result<File> {
    // flock works on a read-only descriptor, so a lock file created by root still serves other users.
    let file = match File::open(LOCK_PATH) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(LOCK_PATH)?
        }
        Err(e) => return Err(e),
    };
    loop {
        // SAFETY: flock on a file descriptor we own; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(file);
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Takes the hugepage test lock and makes sure at least `pages` pages of `size` are available, reserving the
/// shortfall (needs root). `Err` carries the reason the test should print when it skips.
pub fn reserve(size: PageSize, pages: usize) -> Result<HugepageGuard, String> {
    let lock = lock().map_err(|e| format!("cannot take the hugepage test lock {LOCK_PATH}: {e}"))?;
    let root = Path::new(SYSFS_ROOT);
    let counts = sysfs::system_hugepages(root, size).map_err(|e| format!("no {size} hugepages on this kernel: {e}"))?;
    let mut guard = HugepageGuard { _lock: lock, size, added: 0, before: counts.total };
    let missing = pages.saturating_sub(counts.available());
    if missing == 0 {
        return Ok(guard);
    }
    let want = counts.total + missing;
    let got = sysfs::reserve_hugepages(root, size, None, want)
        .map_err(|e| format!("{pages} free {size} hugepages needed, {} free, cannot reserve more: {e}", counts.free))?;
    guard.added = got.saturating_sub(counts.total);
    if got < want {
        return Err(format!("{pages} free {size} hugepages needed; the kernel reserved only {got} of {want}"));
    }
    Ok(guard)
}

fn write_counts(dir: &Path, total: usize, free: usize) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("nr_hugepages"), format!("{total}\n")).unwrap();
    std::fs::write(dir.join("free_hugepages"), format!("{free}\n")).unwrap();
    std::fs::write(dir.join("surplus_hugepages"), "0\n").unwrap();
}

/// A fake sysfs root for tests of what reads and writes hugepage counts (this crate's sysfs code, the `hugepages`
/// tool): `kernel/mm/hugepages` with 2M and 1G sizes (plus an unsupported 64K size), and `nodes.len()` NUMA nodes
/// whose 2M/1G counts are `(total, free)` pairs. Panics if the tree cannot be written.
pub fn fake_sysfs(root: &Path, nodes: &[[(usize, usize); 2]]) {
    let system = root.join("kernel/mm/hugepages");
    let sum = |i: usize| nodes.iter().fold((0, 0), |(t, f), n| (t + n[i].0, f + n[i].1));
    for (i, kib) in [2048, 1048576].into_iter().enumerate() {
        let (t, f) = sum(i);
        let dir = system.join(format!("hugepages-{kib}kB"));
        write_counts(&dir, t, f);
        std::fs::write(dir.join("resv_hugepages"), "0\n").unwrap();
        std::fs::write(dir.join("nr_overcommit_hugepages"), "0\n").unwrap();
    }
    write_counts(&system.join("hugepages-64kB"), 0, 0);
    let node_root = root.join("devices/system/node");
    std::fs::create_dir_all(&node_root).unwrap();
    std::fs::write(node_root.join("online"), "0\n").unwrap();
    for (n, counts) in nodes.iter().enumerate() {
        for (i, kib) in [2048, 1048576].into_iter().enumerate() {
            write_counts(&node_root.join(format!("node{n}/hugepages/hugepages-{kib}kB")), counts[i].0, counts[i].1);
        }
    }
}
