//! Real 2 MiB hugepages: MAP_HUGETLB and hugetlbfs backings, VA and PA modes, and the errors when pages are missing.
//!
//! These tests need root. Each holds the machine-wide hugepage test lock (`hugepage::testing`) for its whole run, so
//! they never race each other or other test binaries over `nr_hugepages`; pages they add are given back at the end.
//! Without root or hugepages they print `SKIPPED: reason` and pass, unless HUGEPAGE_TESTS_REQUIRED=1.

mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use common::{is_root, skip, TempDir};
use hugepage::cli::{self, Host};
use hugepage::sysfs;
use hugepage::testing::{self, HugepageGuard};
use hugepage::{virt_to_phys, Allocator, Backing, DmaConfig, DmaMemory, Error, IovaMode, PageSize};

const HUGE_2M: usize = 2 << 20;

fn hugepages(pages: usize) -> Option<HugepageGuard> {
    if !is_root() {
        skip("needs root to reserve hugepages and read physical addresses");
        return None;
    }
    match testing::reserve(PageSize::Huge2M, pages) {
        Ok(guard) => Some(guard),
        Err(reason) => {
            skip(&reason);
            None
        }
    }
}

/// PA-mode checks: each hugepage starts 2 MiB-aligned, IOVAs are contiguous inside it, and they match what
/// /proc/self/pagemap says when read again, for every 4 KiB piece.
fn check_pa(memory: &DmaMemory) {
    assert_eq!(memory.iova_mode(), IovaMode::Pa);
    assert_eq!(memory.page_size(), PageSize::Huge2M);
    let base = memory.as_ptr();
    let pages = memory.len() / HUGE_2M;
    let mut starts = Vec::new();
    for p in 0..pages {
        let off = p * HUGE_2M;
        let start = memory.iova_at(off).unwrap();
        assert_eq!(start % HUGE_2M as u64, 0, "hugepage {p} at PA {start:#x} is not 2 MiB aligned");
        for k in [1, 63, 4095, 4096, 4097, 65_536, HUGE_2M / 2, HUGE_2M - 1] {
            assert_eq!(memory.iova_at(off + k), Some(start + k as u64), "page {p} + {k}");
            assert_eq!(memory.iova_of(base.wrapping_add(off + k)), Some(start + k as u64));
        }
        // Stable: pagemap read afresh agrees for every 4 KiB piece of the hugepage.
        for k in (0..HUGE_2M).step_by(4096) {
            let now = virt_to_phys(base.wrapping_add(off + k + 8)).unwrap();
            assert_eq!(now, start + k as u64 + 8, "page {p} + {k}: pagemap says {now:#x}");
        }
        assert!(memory.contiguous_from(off) >= HUGE_2M);
        assert_eq!(memory.contiguous_from(off + 100) % HUGE_2M, HUGE_2M - 100);
        starts.push(start);
    }
    starts.sort_unstable();
    starts.dedup();
    assert_eq!(starts.len(), pages, "two virtual hugepages share a physical page");
    assert_eq!(memory.iova_at(memory.len()), None);
}

fn touch(memory: &DmaMemory) {
    // SAFETY: the whole region is mapped and writable, and nothing else references it.
    let bytes = unsafe { std::slice::from_raw_parts_mut(memory.as_ptr(), memory.len()) };
    assert!(bytes.iter().step_by(4096).all(|&b| b == 0), "zero-filled");
    for (i, chunk) in bytes.chunks_mut(4096).enumerate() {
        chunk[0] = i as u8;
    }
}

#[test]
fn map_hugetlb_pa_and_va() {
    let Some(guard) = hugepages(4) else { return };
    let pa =
        Allocator::with_backing(DmaConfig { iova_mode: IovaMode::Pa, ..Default::default() }, Backing::AnonymousHuge)
            .unwrap();
    let t = Instant::now();
    let memory = pa.allocate(2 * HUGE_2M + 1).unwrap(); // rounds up to three pages
    let took = t.elapsed();
    assert_eq!(memory.backing(), &Backing::AnonymousHuge);
    assert_eq!(memory.len(), 3 * HUGE_2M);
    assert_eq!(memory.as_ptr() as usize % HUGE_2M, 0);
    let before: Vec<u64> = (0..3).map(|p| memory.iova_at(p * HUGE_2M).unwrap()).collect();
    touch(&memory);
    check_pa(&memory);
    let after: Vec<u64> = (0..3).map(|p| virt_to_phys(memory.as_ptr().wrapping_add(p * HUGE_2M)).unwrap()).collect();
    assert_eq!(before, after, "physical addresses moved after writing the memory");
    eprintln!(
        "MAP_HUGETLB PA: 3 x 2M mapped, locked and translated in {took:?} (guard added {} pages to {}); PAs {before:x?}",
        guard.added(),
        guard.before()
    );
    drop(memory);

    let va = Allocator::with_backing(DmaConfig::default(), Backing::AnonymousHuge).unwrap();
    let memory = va.allocate(HUGE_2M).unwrap();
    assert_eq!(memory.iova_mode(), IovaMode::Va);
    assert_eq!(memory.as_ptr() as usize % HUGE_2M, 0);
    for k in [0, 4096, HUGE_2M - 1] {
        assert_eq!(memory.iova_at(k), Some(memory.as_ptr() as u64 + k as u64));
    }
    touch(&memory);
    // Backed by a real hugepage: the physical address is 2 MiB aligned too.
    assert_eq!(virt_to_phys(memory.as_ptr()).unwrap() % HUGE_2M as u64, 0);
}

/// Unmounts (through the tool) when dropped, so a failing assertion leaves no mount behind.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let args = ["--unmount".to_string(), self.0.display().to_string()];
        let (mut out, mut err) = (Vec::new(), Vec::new());
        if let Err(e) = cli::run(&args, &Host::default(), &mut out, &mut err) {
            eprintln!("could not unmount {}: {e}", self.0.display());
        }
    }
}

fn is_mounted(dir: &Path) -> bool {
    sysfs::hugetlbfs_mounts().unwrap().iter().any(|m| m.path == dir)
}

#[test]
fn hugetlbfs_mount_in_a_temp_dir() {
    let Some(_guard) = hugepages(2) else { return };
    let tmp = TempDir::new("hugetlbfs");
    let dir = std::fs::canonicalize(tmp.path()).unwrap().join("mnt");
    let args: Vec<String> = ["--mount", dir.to_str().unwrap(), "--pagesize", "2M"].map(String::from).to_vec();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    if let Err(e) = cli::run(&args, &Host::default(), &mut out, &mut err) {
        skip(&format!("cannot mount hugetlbfs: {e}"));
        return;
    }
    let mounted = Mounted(dir.clone());
    assert!(is_mounted(&dir), "{} not in /proc/mounts", dir.display());
    assert_eq!(String::from_utf8_lossy(&out), format!("mounted hugetlbfs of 2M pages on {}\n", dir.display()));

    // Mounting again is a no-op.
    let (mut out, mut err) = (Vec::new(), Vec::new());
    cli::run(&args, &Host::default(), &mut out, &mut err).unwrap();
    assert!(String::from_utf8_lossy(&out).contains("already a hugetlbfs mount of 2M pages"));

    for mode in [IovaMode::Pa, IovaMode::Va] {
        let config = DmaConfig { huge_dir: Some(dir.clone()), iova_mode: mode, ..Default::default() };
        let allocator = Allocator::new(config).unwrap();
        assert_eq!(allocator.backing(), &Backing::Hugetlbfs(dir.clone()));
        assert_eq!(allocator.config().page_size, PageSize::Huge2M);
        let memory = allocator.allocate(2 * HUGE_2M).unwrap();
        assert_eq!(memory.backing(), &Backing::Hugetlbfs(dir.clone()));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the backing file is unlinked at once");
        touch(&memory);
        match mode {
            IovaMode::Pa => check_pa(&memory),
            IovaMode::Va => assert_eq!(memory.iova_at(5), Some(memory.as_ptr() as u64 + 5)),
        }
    }
    // Without --huge-dir the allocator finds a mount of the right size by itself (ours, or another one).
    let auto = Allocator::new(DmaConfig::default()).unwrap();
    assert!(matches!(auto.backing(), Backing::Hugetlbfs(_)), "{:?}", auto.backing());

    drop(mounted);
    assert!(!is_mounted(&dir), "{} still mounted", dir.display());
}

#[test]
fn missing_1g_pages_name_the_command() {
    if !is_root() {
        // Reading the counts needs no root, but keep to one rule for this file.
        return skip("needs root");
    }
    let _lock = testing::lock().unwrap();
    let Ok(counts) = sysfs::system_hugepages(Path::new(sysfs::SYSFS_ROOT), PageSize::Huge1G) else {
        return skip("this kernel has no 1G hugepages");
    };
    if counts.available() > 0 {
        return skip("1G hugepages are free on this machine, so the shortage cannot be shown");
    }
    let allocator = Allocator::new(DmaConfig { page_size: PageSize::Huge1G, ..Default::default() }).unwrap();
    let err = allocator.allocate(1 << 30).unwrap_err();
    let Error::NotEnoughHugepages { size, needed, free, reserve, .. } = err else { panic!("{err:?}") };
    assert_eq!((size, needed, free, reserve), (PageSize::Huge1G, 1, 0, counts.total + 1));
    let msg = err.to_string();
    let command = format!("echo {} > /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages", counts.total + 1);
    assert!(msg.contains(&command), "{msg}");
    assert!(msg.contains(&format!("hugepages --pages {} --pagesize 1G", counts.total + 1)), "{msg}");
    assert!(msg.contains("hugepagesz=1G"), "{msg}");
    eprintln!("error shown: {msg}");
}

#[test]
fn missing_2m_pages_name_the_command() {
    let Some(_guard) = hugepages(1) else { return };
    let counts = sysfs::system_hugepages(Path::new(sysfs::SYSFS_ROOT), PageSize::Huge2M).unwrap();
    let want = counts.available() + 3;
    {
        let allocator = Allocator::with_backing(DmaConfig::default(), Backing::AnonymousHuge).unwrap();
        let err = allocator.allocate(want * HUGE_2M).unwrap_err();
        assert!(matches!(err, Error::NotEnoughHugepages { needed, .. } if needed == want), "{err:?}");
        let command = format!("echo {} > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", counts.total + 3);
        assert!(err.to_string().contains(&command), "{err}");
    }
}
