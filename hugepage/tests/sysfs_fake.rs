//! sysfs reading and writing against fake trees in a temporary directory.

mod common;

use common::{read, TempDir};
use hugepage::sysfs::{self, NodeHugepages};
use hugepage::testing::fake_sysfs;
use hugepage::{Error, PageSize};

#[test]
fn node_hugepages_reads_every_node_and_size() {
    let tmp = TempDir::new("nodes");
    fake_sysfs(tmp.path(), &[[(512, 500), (0, 0)], [(256, 256), (2, 1)]]);
    let nodes = sysfs::node_hugepages(tmp.path()).unwrap();
    let expect = |node, size, total, free| NodeHugepages { node, size, total, free };
    assert_eq!(
        nodes,
        [
            expect(0, PageSize::Huge2M, 512, 500),
            expect(0, PageSize::Huge1G, 0, 0),
            expect(1, PageSize::Huge2M, 256, 256),
            expect(1, PageSize::Huge1G, 2, 1),
        ]
    );
    assert_eq!(sysfs::numa_nodes(tmp.path()), [0, 1]);
    let system = sysfs::system_hugepages(tmp.path(), PageSize::Huge2M).unwrap();
    assert_eq!((system.total, system.free, system.available()), (768, 756, 756));
}

#[test]
fn page_sizes_lists_only_usable_sizes() {
    let tmp = TempDir::new("sizes");
    fake_sysfs(tmp.path(), &[[(0, 0), (0, 0)]]);
    // hugepages-64kB exists in the fake tree but is not a size this crate maps.
    assert_eq!(sysfs::page_sizes(tmp.path()).unwrap(), [PageSize::Huge2M, PageSize::Huge1G]);
    let err = sysfs::page_sizes(&tmp.path().join("missing")).unwrap_err();
    assert!(err.to_string().contains("CONFIG_HUGETLBFS"), "{err}");
}

#[test]
fn reserve_hugepages_writes_node_and_system_files() {
    let tmp = TempDir::new("reserve");
    fake_sysfs(tmp.path(), &[[(0, 0), (0, 0)], [(0, 0), (0, 0)]]);
    let got = sysfs::reserve_hugepages(tmp.path(), PageSize::Huge2M, Some(1), 64).unwrap();
    assert_eq!(got, 64);
    assert_eq!(read(tmp.path().join("devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages")), "64");
    assert_eq!(read(tmp.path().join("devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages")), "0");

    let got = sysfs::reserve_hugepages(tmp.path(), PageSize::Huge1G, None, 3).unwrap();
    assert_eq!(got, 3);
    assert_eq!(read(tmp.path().join("kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages")), "3");
    assert_eq!(sysfs::system_hugepages(tmp.path(), PageSize::Huge1G).unwrap().total, 3);
}

#[test]
fn reserve_on_missing_node_or_size_is_explained() {
    let tmp = TempDir::new("reserve-bad");
    fake_sysfs(tmp.path(), &[[(0, 0), (0, 0)]]);
    let err = sysfs::reserve_hugepages(tmp.path(), PageSize::Huge2M, Some(7), 1).unwrap_err();
    assert!(matches!(err, Error::InvalidRequest(_)), "{err:?}");
    assert!(err.to_string().contains("NUMA node 7 does not exist (nodes: 0)"), "{err}");

    std::fs::remove_dir_all(tmp.path().join("kernel/mm/hugepages/hugepages-1048576kB")).unwrap();
    let err = sysfs::reserve_hugepages(tmp.path(), PageSize::Huge1G, None, 1).unwrap_err();
    assert!(err.to_string().contains("this kernel has no 1G hugepages"), "{err}");
    assert!(err.to_string().contains("sizes available: 2M"), "{err}");

    let err = sysfs::reserve_hugepages(tmp.path(), PageSize::Small4K, None, 1).unwrap_err();
    assert!(err.to_string().contains("not a hugepage size"), "{err}");
}

#[test]
fn clear_hugepages_zeroes_every_node_and_size() {
    let tmp = TempDir::new("clear");
    fake_sysfs(tmp.path(), &[[(512, 512), (1, 1)], [(16, 16), (2, 2)]]);
    let kept = sysfs::clear_hugepages(tmp.path()).unwrap();
    assert!(kept.is_empty(), "{kept:?}");
    for n in sysfs::node_hugepages(tmp.path()).unwrap() {
        assert_eq!(n.total, 0, "{n:?}");
    }
}

#[test]
fn kernel_without_numa_uses_system_counts() {
    let tmp = TempDir::new("nonuma");
    fake_sysfs(tmp.path(), &[[(8, 8), (0, 0)]]);
    std::fs::remove_dir_all(tmp.path().join("devices")).unwrap();
    assert!(sysfs::numa_nodes(tmp.path()).is_empty());
    assert!(sysfs::node_hugepages(tmp.path()).unwrap().is_empty());
    assert!(sysfs::clear_hugepages(tmp.path()).unwrap().is_empty());
    assert_eq!(read(tmp.path().join("kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")), "0");
}

#[test]
fn garbage_in_sysfs_is_reported_with_the_file() {
    let tmp = TempDir::new("garbage");
    fake_sysfs(tmp.path(), &[[(0, 0), (0, 0)]]);
    let file = tmp.path().join("devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages");
    std::fs::write(&file, "lots\n").unwrap();
    let err = sysfs::node_hugepages(tmp.path()).unwrap_err();
    assert!(err.to_string().contains(&file.display().to_string()), "{err}");
}

#[test]
fn hugetlbfs_mounts_from_a_mount_table_file() {
    let tmp = TempDir::new("mounts");
    let table = tmp.path().join("mounts");
    std::fs::write(
        &table,
        "proc /proc proc rw 0 0\nhugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n\
         nodev /mnt/huge-1G hugetlbfs rw,relatime,pagesize=1024M 0 0\n",
    )
    .unwrap();
    let mounts = sysfs::hugetlbfs_mounts_in(&table).unwrap();
    assert_eq!(mounts.len(), 2);
    assert_eq!((mounts[0].path.to_str(), mounts[0].page_size), (Some("/dev/hugepages"), PageSize::Huge2M));
    assert_eq!((mounts[1].path.to_str(), mounts[1].page_size), (Some("/mnt/huge-1G"), PageSize::Huge1G));
    assert!(sysfs::hugetlbfs_mounts_in(&tmp.path().join("nope")).is_err());
}
