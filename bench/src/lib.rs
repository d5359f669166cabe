//! Helpers shared by the benchmark binaries: CPU pinning, the TSC, and DMA memory selection; the harness of the
//! driver benchmarks ([`driver`]).
//!
//! The binaries print one `RESULT key=value ...` line per figure; `bench/run.sh` parses those lines and prints
//! the side-by-side table against DPDK.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod driver;

use std::time::{Duration, Instant};

use hugepage::{Allocator, DmaConfig};

/// Reads the time-stamp counter.
#[inline(always)]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions on x86-64 (user mode may read it unless CR4.TSD is set, which Linux
        // does not do).
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // Not x86: count nanoseconds instead (cycles figures are then nanoseconds).
        use std::sync::OnceLock;
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// TSC ticks per second, measured against the monotonic clock over `over`.
pub fn tsc_hz(over: Duration) -> f64 {
    let (t0, c0) = (Instant::now(), rdtsc());
    std::thread::sleep(over);
    let (c1, t1) = (rdtsc(), Instant::now());
    (c1 - c0) as f64 / (t1 - t0).as_secs_f64()
}

/// Pins the calling thread to CPU `cpu`.
pub fn pin_to_cpu(cpu: usize) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes inside `set`; cpu is checked against the set size first.
    unsafe {
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        libc::CPU_SET(cpu, &mut set);
    }
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size given.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// DMA memory for the benchmark pools: hugepages unless `BENCH_MEM=nohuge` (or none are reserved, in which case
/// it says so on stderr and falls back to ordinary pages). Returns the allocator and a label for the report.
pub fn allocator(bytes_needed: usize) -> (Allocator, &'static str) {
    let want_huge = std::env::var("BENCH_MEM").map(|v| v != "nohuge").unwrap_or(true);
    if want_huge {
        match Allocator::new(DmaConfig::default()) {
            Ok(a) => match a.allocate(bytes_needed) {
                // Probe: the pool allocates again; this only checks that hugepages are there.
                Ok(probe) => {
                    drop(probe);
                    return (a, "2M-hugepages");
                }
                Err(e) => eprintln!("bench: hugepages unavailable ({e}); using ordinary pages"),
            },
            Err(e) => eprintln!("bench: hugepages unavailable ({e}); using ordinary pages"),
        }
    }
    (Allocator::no_huge(), "4K-pages")
}

/// Value of environment variable `name` parsed as `T`, or `default`.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}
