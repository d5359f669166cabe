//! Mempool microbenchmarks, one core, bound to an lcore (so the per-lcore cache is used) and pinned to a CPU.
//!
//! - `pktmbuf_bulk32`: `PacketBatch::alloc_from(pool, 32)` + `batch.clear()` (what DPDK's `rte_pktmbuf_alloc_bulk`
//!   + `rte_pktmbuf_free_bulk` of 32 do: take 32 reset buffers, give them back).
//! - `raw_cache_bulk32`: `Mempool::get_raw` + `put_raw` of 32, cache 512, 1023 elements of 2048 bytes (DPDK's
//!   `mempool_perf_autotest` case cache=512 cores=1 n_get_bulk=32 n_put_bulk=32 n_keep=32).
//! - `raw_nocache_bulk32`: the same without a cache (its case cache=0 ...), straight on the shared ring.
//!
//! Prints `RESULT test=NAME cycles_per_obj=X objs_per_sec=Y mem=...` per test (cycles: median of 100 ms
//! windows). Environment: `BENCH_MEMPOOL_SECONDS` (default 2), `BENCH_CPU` (default 1), `BENCH_MEM=nohuge`.

use std::hint::black_box;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use bench::{allocator, env_or, pin_to_cpu, rdtsc, tsc_hz};
use mempool::{MbufHeader, Mempool, PacketBatch, PoolConfig};

const BULK: usize = 32;

/// Runs `step` (which moves `BULK` objects each call) for `secs` seconds after a short warm-up, in windows of
/// about 100 ms; returns (median over the windows of TSC cycles per object, objects per second over the whole
/// run). The median keeps a window in which another process held the CPU from skewing the figure (the machine is
/// shared), without picking the luckiest window either.
fn measure(secs: f64, mut step: impl FnMut()) -> (f64, f64) {
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(200) {
        for _ in 0..1024 {
            step();
        }
    }
    let window = Duration::from_millis(100);
    let mut per_window = Vec::new();
    let mut calls: u64 = 0;
    let t0 = Instant::now();
    while t0.elapsed().as_secs_f64() < secs || per_window.is_empty() {
        let (w0, c0) = (Instant::now(), rdtsc());
        let mut n: u64 = 0;
        while w0.elapsed() < window {
            for _ in 0..4096 {
                step();
            }
            n += 4096;
        }
        per_window.push((rdtsc() - c0) as f64 / (n * BULK as u64) as f64);
        calls += n;
    }
    let wall = t0.elapsed().as_secs_f64();
    per_window.sort_by(f64::total_cmp);
    (per_window[per_window.len() / 2], (calls * BULK as u64) as f64 / wall)
}

fn main() {
    let secs: f64 = env_or("BENCH_MEMPOOL_SECONDS", 2.0);
    let cpu: usize = env_or("BENCH_CPU", 1);
    if let Err(e) = pin_to_cpu(cpu) {
        eprintln!("mempool_perf: cannot pin to CPU {cpu}: {e} (running unpinned)");
    }
    let _lcore = mempool::lcore::bind_current_thread(1).expect("lcore 1 free in this process");
    let hz = tsc_hz(Duration::from_millis(200));
    println!("INFO tsc_hz={hz:.0} cpu={cpu} seconds={secs}");

    let (alloc, mem) = allocator(8191 * 2304);

    // (a) packet buffers, as testpmd builds its pool: 8191 mbufs, cache 256, 128 B headroom + 2048 B data room.
    {
        let pool = Mempool::new("bench_pktmbuf", &PoolConfig::with_size(8191), &alloc).expect("pool");
        let mut batch = PacketBatch::with_capacity(BULK);
        let (cyc, rate) = measure(secs, || {
            let ok = batch.alloc_from(black_box(&pool), BULK);
            debug_assert!(ok);
            black_box(&mut batch);
            batch.clear();
        });
        assert!(pool.is_full(), "pool not full after the run");
        println!("RESULT test=pktmbuf_bulk32 cycles_per_obj={cyc:.3} objs_per_sec={rate:.0} mem={mem}");
    }

    // (b), (c): raw elements, the pool of mempool_perf_autotest: (1 lcore x (512 keep + 512 cache)) - 1 elements
    // of 2048 bytes (our 128-byte header + 1920 bytes of buffer).
    for (name, cache_size) in [("raw_cache_bulk32", 512), ("raw_nocache_bulk32", 0)] {
        let config = PoolConfig { size: 1023, cache_size, headroom: 0, data_room: 1920, debug: false };
        let pool = Mempool::new(name, &config, &alloc).expect("pool");
        let mut objs = [NonNull::<MbufHeader>::dangling(); BULK];
        let (cyc, rate) = measure(secs, || {
            // SAFETY: the 32 elements taken are given back right below, exactly once, untouched.
            let ok = unsafe { black_box(&pool).get_raw(&mut objs) };
            debug_assert!(ok);
            black_box(&mut objs);
            // SAFETY: they came from this pool, are owned here, and are not used afterwards.
            unsafe { pool.put_raw(&objs) };
        });
        assert!(pool.is_full(), "pool not full after the run");
        println!("RESULT test={name} cycles_per_obj={cyc:.3} objs_per_sec={rate:.0} mem={mem}");
    }
}
