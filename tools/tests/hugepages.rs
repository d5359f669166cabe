//! The `hugepages` binary (its logic is `hugepage::cli`, tested there): exit codes and messages against a fake
//! sysfs tree and mount table.

use std::path::{Path, PathBuf};
use std::process::Command;

use hugepage::testing::fake_sysfs;

const MOUNTS: &str = "proc /proc proc rw 0 0\nhugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n";

/// A fake sysfs tree and mount table under a directory removed on drop.
struct Fake(PathBuf);

impl Fake {
    fn new(nodes: &[[(usize, usize); 2]]) -> Fake {
        let dir = std::env::temp_dir().join(format!("tools-hugepages-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        fake_sysfs(&dir.join("sys"), nodes);
        std::fs::write(dir.join("mounts"), MOUNTS).unwrap();
        Fake(dir)
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

fn binary(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hugepages")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn binary_exit_codes_and_messages() {
    let f = Fake::new(&[[(2, 1), (0, 0)]]);
    let (sysfs, mounts) = (f.0.join("sys"), f.0.join("mounts"));
    let (sysfs, mounts) = (sysfs.to_str().unwrap(), mounts.to_str().unwrap());

    let (code, out, err) = binary(&["--sysfs-root", sysfs, "--proc-mounts", mounts, "--show"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("/dev/hugepages  pagesize=2M"), "{out}");

    let (code, out, _) = binary(&["-h"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("Usage: hugepages"));

    for args in [&["--reserve", "12"][..], &["--bogus"], &["--pagesize"], &["--pages", "1", "--node"]] {
        let (code, out, err) = binary(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(err.starts_with("hugepages: ") && err.contains("Try `hugepages --help`."), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }

    let (code, _, err) = binary(&["--sysfs-root", sysfs, "--pages", "1", "--node", "5"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("NUMA node 5 does not exist"), "{err}");

    let (code, _, err) = binary(&["--sysfs-root", sysfs, "--proc-mounts", mounts, "--pages", "3"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(read(Path::new(sysfs).join("kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")), "3");
}
