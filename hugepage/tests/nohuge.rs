//! Ordinary (no-huge) memory: IOVA = VA, translation at the edges, configuration errors. Needs no privileges.

mod common;

use common::TempDir;
use hugepage::{Allocator, Backing, DmaConfig, DmaMemory, Error, IovaMode, PageSize};

#[test]
fn no_huge_memory_translates_va() {
    let allocator = Allocator::no_huge();
    assert_eq!(allocator.backing(), &Backing::NoHuge);
    assert_eq!(allocator.config().iova_mode, IovaMode::Va);
    let memory = allocator.allocate(10_000).unwrap();
    assert_eq!(memory.len(), 12_288, "rounded up to whole 4K pages");
    assert!(!memory.is_empty());
    assert_eq!(memory.page_size(), PageSize::Small4K);
    assert_eq!(memory.iova_mode(), IovaMode::Va);
    let base = memory.as_ptr();
    assert_eq!(base as usize % 4096, 0);
    // SAFETY: the region is len bytes of mapped, writable memory that nothing else uses.
    let bytes = unsafe { std::slice::from_raw_parts_mut(base, memory.len()) };
    assert!(bytes.iter().all(|&b| b == 0), "zero-filled");
    bytes.fill(0xa5);

    for offset in [0, 1, 4095, 4096, 10_000, memory.len() - 1] {
        assert_eq!(memory.iova_at(offset), Some(base as u64 + offset as u64));
        assert_eq!(memory.iova_of(base.wrapping_add(offset)), Some(base as u64 + offset as u64));
        assert_eq!(memory.contiguous_from(offset), memory.len() - offset);
    }
    assert_eq!(memory.iova_at(memory.len()), None);
    assert_eq!(memory.iova_at(usize::MAX), None);
    assert_eq!(memory.iova_of(base.wrapping_add(memory.len())), None);
    assert_eq!(memory.iova_of(base.wrapping_sub(1)), None);
    assert_eq!(memory.iova_of(std::ptr::null()), None);
}

#[test]
fn no_huge_config_through_new() {
    let allocator = Allocator::new(DmaConfig::no_huge()).unwrap();
    assert_eq!(allocator.backing(), &Backing::NoHuge);
    // no_huge wins over a hugepage size.
    let allocator =
        Allocator::new(DmaConfig { no_huge: true, page_size: PageSize::Huge1G, ..Default::default() }).unwrap();
    assert_eq!(allocator.config().page_size, PageSize::Small4K);
    let memory = allocator.allocate(1).unwrap();
    assert_eq!(memory.len(), 4096);
    let with_backing = Allocator::with_backing(DmaConfig::default(), Backing::NoHuge).unwrap();
    assert_eq!(with_backing.backing(), &Backing::NoHuge);
}

#[test]
fn bad_requests_are_refused() {
    let err = Allocator::no_huge().allocate(0).unwrap_err();
    assert!(matches!(err, Error::InvalidRequest(_)), "{err:?}");
    let err = Allocator::no_huge().allocate(usize::MAX).unwrap_err();
    assert!(err.to_string().contains("overflows"), "{err}");

    let err = Allocator::new(DmaConfig { iova_mode: IovaMode::Pa, ..DmaConfig::no_huge() }).unwrap_err();
    assert!(matches!(err, Error::PaNeedsHugepages), "{err:?}");
    assert!(err.to_string().contains("drop --no-huge"), "{err}");

    let err = Allocator::new(DmaConfig { page_size: PageSize::Small4K, ..Default::default() }).unwrap_err();
    assert!(err.to_string().contains("4K is not a hugepage size"), "{err}");
}

#[test]
fn huge_dir_that_is_not_hugetlbfs_says_how_to_mount() {
    let tmp = TempDir::new("not-hugetlbfs");
    let dir = tmp.path().to_path_buf();
    let err = Allocator::new(DmaConfig { huge_dir: Some(dir.clone()), ..Default::default() }).unwrap_err();
    assert!(matches!(&err, Error::NotHugetlbfs(d) if *d == dir), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&format!("mount -t hugetlbfs nodev {}", dir.display())), "{msg}");
    assert!(msg.contains(&format!("hugepages --mount {}", dir.display())), "{msg}");

    let missing = dir.join("missing");
    let err = Allocator::new(DmaConfig { huge_dir: Some(missing.clone()), ..Default::default() }).unwrap_err();
    assert!(err.to_string().contains(&format!("mkdir -p {}", missing.display())), "{err}");
}

#[test]
fn parsing_modes_and_sizes() {
    assert_eq!(IovaMode::parse("va"), Some(IovaMode::Va));
    assert_eq!(IovaMode::parse(" PA "), Some(IovaMode::Pa));
    assert_eq!(IovaMode::parse("dc"), None);
    assert_eq!(PageSize::parse("2M"), Some(PageSize::Huge2M));
    assert_eq!(PageSize::parse("2048kB"), Some(PageSize::Huge2M));
    assert_eq!(PageSize::parse("1g"), Some(PageSize::Huge1G));
    assert_eq!(PageSize::parse("1048576kB"), Some(PageSize::Huge1G));
    assert_eq!(PageSize::parse("4k"), Some(PageSize::Small4K));
    assert_eq!(PageSize::parse("3M"), None);
    for size in [PageSize::Small4K, PageSize::Huge2M, PageSize::Huge1G] {
        assert_eq!(PageSize::parse(&size.to_string()), Some(size));
        assert_eq!(PageSize::from_bytes(size.bytes()), Some(size));
    }
    assert_eq!(PageSize::Huge1G.kib(), 1_048_576);
}

#[test]
fn dma_memory_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<DmaMemory>();
    check::<Allocator>();
}
