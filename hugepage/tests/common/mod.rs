//! Helpers shared by the integration tests: temporary directories and fake sysfs trees.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A directory under the system temp dir, removed (recursively) on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("hugepage-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write_counts(dir: &Path, total: usize, free: usize) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("nr_hugepages"), format!("{total}\n")).unwrap();
    std::fs::write(dir.join("free_hugepages"), format!("{free}\n")).unwrap();
    std::fs::write(dir.join("surplus_hugepages"), "0\n").unwrap();
}

/// A fake sysfs root: `kernel/mm/hugepages` with 2M and 1G sizes (plus an unsupported 64K size), and
/// `nodes.len()` NUMA nodes whose 2M/1G counts are `(total, free)` pairs.
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

pub fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

/// Whether the tests may change hugepages (root); otherwise they skip with a printed reason.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Skips the calling test with a reason, or fails it when HUGEPAGE_TESTS_REQUIRED=1 (CI on a machine that must have
/// hugepages).
pub fn skip(reason: &str) {
    if std::env::var("HUGEPAGE_TESTS_REQUIRED").is_ok_and(|v| v == "1") {
        panic!("HUGEPAGE_TESTS_REQUIRED=1 but the test cannot run: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}
