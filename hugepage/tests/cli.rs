//! The `hugepages` tool's logic against a fake sysfs tree and a fake mount table (the binary's own test is in the
//! tools crate, which builds it).

mod common;

use common::{read, TempDir};
use hugepage::cli::{self, CliError, Host};
use hugepage::testing::fake_sysfs;

struct Fake {
    _dir: TempDir,
    host: Host,
}

fn fake(tag: &str, nodes: &[[(usize, usize); 2]], mounts: &str) -> Fake {
    let dir = TempDir::new(tag);
    let sysfs = dir.path().join("sys");
    fake_sysfs(&sysfs, nodes);
    let table = dir.path().join("mounts");
    std::fs::write(&table, mounts).unwrap();
    Fake { host: Host { sysfs, mounts: table }, _dir: dir }
}

fn run(f: &Fake, args: &[&str]) -> (Result<(), CliError>, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let result = cli::run(&args, &f.host, &mut out, &mut err);
    (result, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

fn node_file(f: &Fake, node: u32, kib: usize) -> String {
    read(f.host.sysfs.join(format!("devices/system/node/node{node}/hugepages/hugepages-{kib}kB/nr_hugepages")))
}

fn system_file(f: &Fake, kib: usize) -> String {
    read(f.host.sysfs.join(format!("kernel/mm/hugepages/hugepages-{kib}kB/nr_hugepages")))
}

const MOUNTS: &str = "proc /proc proc rw 0 0\nhugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n";

#[test]
fn show_lists_nodes_sizes_and_mounts() {
    let f = fake("show", &[[(512, 500), (0, 0)], [(0, 0), (2, 1)]], MOUNTS);
    let (result, out, _) = run(&f, &["--show"]);
    result.unwrap();
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["Node", "Size", "Total", "Free", "Memory"]);
    assert_eq!(lines[1], ["0", "2M", "512", "500", "1G"]);
    assert_eq!(lines[2], ["0", "1G", "0", "0", "0"]);
    assert_eq!(lines[3], ["1", "2M", "0", "0", "0"]);
    assert_eq!(lines[4], ["1", "1G", "2", "1", "2G"]);
    assert!(out.contains("Hugetlbfs mounts:\n  /dev/hugepages  pagesize=2M\n"), "{out}");

    let f = fake("show-nomount", &[[(0, 0), (0, 0)]], "proc /proc proc rw 0 0\n");
    let (result, out, _) = run(&f, &["-s"]);
    result.unwrap();
    assert!(out.contains("No hugetlbfs mounted (mount one with `hugepages --mount`)"), "{out}");
}

#[test]
fn show_without_numa_prints_system_counts() {
    let f = fake("show-nonuma", &[[(4, 3), (0, 0)]], MOUNTS);
    std::fs::remove_dir_all(f.host.sysfs.join("devices")).unwrap();
    let (result, out, _) = run(&f, &["--show"]);
    result.unwrap();
    assert!(out.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["-", "2M", "4", "3", "8M"]), "{out}");
}

#[test]
fn reserve_memory_pages_and_nodes() {
    let f = fake("reserve", &[[(0, 0), (0, 0)], [(0, 0), (0, 0)]], MOUNTS);
    let (result, out, _) = run(&f, &["--reserve", "1G", "--pagesize", "2M"]);
    result.unwrap();
    assert_eq!(system_file(&f, 2048), "512");
    assert_eq!(out, "reserved 512 2M hugepages (1G)\n");

    let (result, out, _) = run(&f, &["-r", "2G", "-p", "1G", "-n", "1"]);
    result.unwrap();
    assert_eq!(node_file(&f, 1, 1048576), "2");
    assert_eq!(node_file(&f, 0, 1048576), "0");
    assert_eq!(out, "reserved 2 1G hugepages (2G) on node 1\n");

    let (result, _, _) = run(&f, &["--pages=64", "--node=0", "--pagesize=2M"]);
    result.unwrap();
    assert_eq!(node_file(&f, 0, 2048), "64");

    // The amount sets the count, it does not add to it.
    let (result, _, _) = run(&f, &["--reserve", "64M", "--node", "0", "--pagesize", "2M"]);
    result.unwrap();
    assert_eq!(node_file(&f, 0, 2048), "32");
}

#[test]
fn clear_then_setup() {
    let f = fake(
        "setup",
        &[[(100, 100), (1, 1)], [(7, 7), (0, 0)]],
        // The setup directory is already a 2M hugetlbfs in the fake table, so no real mount is made.
        "hugetlbfs /mnt/fake-huge hugetlbfs rw,pagesize=2M 0 0\n",
    );
    let (result, out, _) = run(&f, &["--clear"]);
    result.unwrap();
    assert_eq!(out, "cleared all hugepage reservations\n");
    for (node, kib) in [(0, 2048), (0, 1048576), (1, 2048), (1, 1048576)] {
        assert_eq!(node_file(&f, node, kib), "0");
    }
    let (result, out, _) = run(&f, &["--setup", "1G", "--pagesize", "2M", "--directory", "/mnt/fake-huge"]);
    result.unwrap();
    assert_eq!(system_file(&f, 2048), "512");
    assert!(out.contains("reserved 512 2M hugepages (1G)"), "{out}");
    assert!(out.contains("/mnt/fake-huge is already a hugetlbfs mount of 2M pages"), "{out}");

    // Mounting over a hugetlbfs of another page size is refused with the command that fixes it.
    let (result, _, _) = run(&f, &["--mount", "/mnt/fake-huge", "--pagesize", "1G"]);
    let err = result.unwrap_err();
    assert_eq!(err.exit_code(), 1);
    assert!(err.to_string().contains("unmount it first with `hugepages --unmount /mnt/fake-huge`"), "{err}");
    // Unmounting a directory that is no hugetlbfs is refused before any system call.
    let (result, _, _) = run(&f, &["--unmount", "/mnt/not-a-mount"]);
    assert!(result.unwrap_err().to_string().contains("/mnt/not-a-mount is not a hugetlbfs mount"));
}

#[test]
fn bad_input_is_a_usage_error_with_advice() {
    let f = fake("bad", &[[(0, 0), (0, 0)]], MOUNTS);
    let usage: &[(&[&str], &str)] = &[
        (&["--reserve", "512"], "for a number of pages use --pages 512"),
        (&["--reserve", "lots"], "not an amount of memory"),
        (&["--reserve"], "--reserve needs an amount of memory"),
        (&["--reserve", "3M", "--pagesize", "2M"], "3M is not a multiple of the 2M page size; use 2M or 4M"),
        (&["--reserve", "1G", "--pages", "3"], "only one of --reserve, --pages and --setup"),
        (&["--pages", "-3"], "--pages needs a page count"),
        (&["--pages", "many"], "not a page count"),
        (&["--pagesize", "4K", "--show"], "not a hugepage size; use 2M or 1G"),
        (&["--pagesize", "3M", "--show"], "not a hugepage size"),
        (&["--node", "0"], "--node applies to --reserve"),
        (&["--node", "x", "--pages", "1"], "not a NUMA node number"),
        (&["--frobnicate"], "unknown option \"--frobnicate\""),
        (&["show"], "unexpected argument \"show\""),
    ];
    for (args, want) in usage {
        let (result, out, _) = run(&f, args);
        let err = result.expect_err(&format!("{args:?} should fail"));
        assert!(matches!(err, CliError::Usage(_)), "{args:?}: {err:?}");
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains(want), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?} wrote {out:?}");
    }
    let failed: &[(&[&str], &str)] = &[
        (&["--pages", "1", "--node", "9"], "NUMA node 9 does not exist (nodes: 0)"),
        (&["--sysfs-root", "/nonexistent", "--show"], "CONFIG_HUGETLBFS"),
        (&["--reserve", "1024T", "--pagesize", "1G"], "more than this machine's memory"),
    ];
    for (args, want) in failed {
        let (result, _, _) = run(&f, args);
        let err = result.expect_err(&format!("{args:?} should fail"));
        assert_eq!(err.exit_code(), 1, "{args:?}: {err}");
        assert!(err.to_string().contains(want), "{args:?}: {err}");
    }
    // A size the kernel lacks.
    std::fs::remove_dir_all(f.host.sysfs.join("kernel/mm/hugepages/hugepages-1048576kB")).unwrap();
    let (result, _, _) = run(&f, &["--pages", "1", "--pagesize", "1G"]);
    assert!(result.unwrap_err().to_string().contains("this kernel has no 1G hugepages (sizes available: 2M)"));
}

#[test]
fn help_and_no_arguments_print_usage() {
    let f = fake("help", &[[(0, 0), (0, 0)]], MOUNTS);
    for args in [&["-h"][..], &["--help"], &[]] {
        let (result, out, _) = run(&f, args);
        result.unwrap();
        assert!(out.starts_with("Usage: hugepages"), "{out}");
        assert!(out.contains("--reserve SIZE") && out.contains("--setup SIZE"), "{out}");
    }
}
