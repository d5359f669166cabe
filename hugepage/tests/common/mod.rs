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

pub fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

/// Whether the tests may change hugepages (root); otherwise they skip with a printed reason.
#[allow(unused_imports)] // each test binary uses a part
pub use testkit::is_root;

/// Skips the calling test with a reason, or fails it when HUGEPAGE_TESTS_REQUIRED=1 (CI on a machine that must have
/// hugepages).
pub fn skip(reason: &str) {
    testkit::skip("HUGEPAGE_TESTS_REQUIRED", reason);
}
