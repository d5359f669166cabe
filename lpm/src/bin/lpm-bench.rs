//! Lookup throughput of the route tables on one core, for bench/lpm.sh.
//!
//! Builds a large IPv4 table with an Internet-like prefix-length mix (deterministic from a seed), then times
//! single, x8 and bulk lookups of random addresses, against a floor: random 4-byte loads from an array the size
//! of tbl24 (what a lookup cannot beat). Also times IPv6 and 5-tuple exact-match lookups. Prints one
//! `RESULT key=value ...` line per measurement.
//!
//! `lpm-bench [--routes N] [--seed S] [--secs F] [--addrs uniform|routed]`

use lpm::{ExactMatch, Ipv4Tuple, Lpm4, Lpm4Config, Lpm6, Lpm6Config};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// splitmix64: a tiny deterministic generator, so the table is the same on every run and machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Share of routes per prefix length, in parts per 10 000, shaped like a current full IPv4 BGP table: over half
/// at /24, then /22-/23, a spread over /16-/21, a few shorter, and a few hundred longer than /24.
const LENGTH_MIX: [(u8, u32); 21] = [
    (8, 2),
    (10, 3),
    (11, 5),
    (12, 10),
    (13, 20),
    (14, 40),
    (15, 60),
    (16, 150),
    (17, 100),
    (18, 170),
    (19, 300),
    (20, 430),
    (21, 480),
    (22, 1150),
    (23, 1000),
    (24, 5880),
    (25, 60),
    (26, 60),
    (27, 40),
    (28, 20),
    (32, 20),
];

fn pick_length(rng: &mut Rng) -> u8 {
    let total: u32 = LENGTH_MIX.iter().map(|&(_, w)| w).sum();
    let mut x = rng.below(u64::from(total)) as u32;
    for &(len, w) in &LENGTH_MIX {
        if x < w {
            return len;
        }
        x -= w;
    }
    24
}

/// A unicast-looking prefix (first octet 1..=223) of length `len`.
fn random_prefix(rng: &mut Rng, len: u8) -> u32 {
    let first = 1 + rng.below(223) as u32;
    let ip = first << 24 | (rng.next() as u32 & 0x00ff_ffff);
    ip & (u32::MAX << (32 - len))
}

struct Args {
    routes: usize,
    seed: u64,
    secs: f64,
    routed: bool,
}

fn parse_args() -> Args {
    let mut args = Args { routes: 1_000_000, seed: 1, secs: 2.0, routed: false };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--routes" => args.routes = value().parse().expect("--routes N"),
            "--seed" => args.seed = value().parse().expect("--seed S"),
            "--secs" => args.secs = value().parse().expect("--secs F"),
            "--addrs" => args.routed = value() == "routed",
            _ => panic!("usage: lpm-bench [--routes N] [--seed S] [--secs F] [--addrs uniform|routed]"),
        }
    }
    args
}

/// Timestamp counter, to report cycles per lookup like DPDK's lpm_perf_autotest.
fn cycles() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86-64; it only reads the timestamp counter.
        unsafe { std::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// Runs `pass` (which looks up `per_pass` addresses) until `secs` elapse; returns (lookups/s, cycles/lookup).
fn measure(secs: f64, per_pass: usize, mut pass: impl FnMut() -> u64) -> (f64, f64) {
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(200) {
        black_box(pass());
    }
    let (mut n, mut sum) = (0u64, 0u64);
    let (t0, c0) = (Instant::now(), cycles());
    while t0.elapsed().as_secs_f64() < secs {
        sum = sum.wrapping_add(pass());
        n += per_pass as u64;
    }
    let (dt, dc) = (t0.elapsed().as_secs_f64(), cycles() - c0);
    black_box(sum);
    (n as f64 / dt, dc as f64 / n as f64)
}

fn report(what: &str, extra: &str, (rate, cyc): (f64, f64)) {
    println!(
        "RESULT test={what} mlookups_per_s={:.2} ns_per_lookup={:.2} cycles_per_lookup={:.2}{extra}",
        rate / 1e6,
        1e9 / rate,
        cyc
    );
}

/// Addresses per throughput pass: far more distinct tbl24 lines than any cache holds, so a pass cannot warm the
/// cache for the next (a small batch reused would measure cache hits, not the table).
const BATCH: usize = 1 << 24;
/// Addresses (or keys) per pass for the IPv6 and exact-match tables (64 MiB of them).
const BATCH_WIDE: usize = 1 << 22;

/// Addresses per timed batch in lpm_perf_autotest.
const DPDK_BATCH: usize = 4096;

/// Times `lookups` (which returns its misses) over fresh random batches until `secs` elapse; returns
/// (cycles/lookup, miss %).
fn dpdk_loop(secs: f64, rng: &mut Rng, mut lookups: impl FnMut(&[u32; DPDK_BATCH]) -> usize) -> (f64, f64) {
    let mut batch = [0u32; DPDK_BATCH];
    let (mut spent, mut n, mut fails) = (0u64, 0u64, 0u64);
    let t0 = Instant::now();
    while t0.elapsed().as_secs_f64() < secs {
        batch.iter_mut().for_each(|ip| *ip = rng.next() as u32);
        let c0 = cycles();
        fails += black_box(lookups(black_box(&batch))) as u64;
        spent += cycles() - c0;
        n += DPDK_BATCH as u64;
    }
    (spent as f64 / n as f64, 100.0 * fails as f64 / n as f64)
}

fn report_dpdk(what: &str, (cyc, fail): (f64, f64)) {
    println!("RESULT test={what} cycles_per_lookup={cyc:.2} fails={fail:.1}%");
}

/// A tbl24-sized array of ones, advised onto transparent hugepages like the tables (so the floor and the
/// lookups pay the same TLB costs).
fn floor_table() -> Vec<u32> {
    const HUGE: usize = 2 << 20;
    let mut table = vec![0u32; 1 << 24];
    let start = (table.as_ptr() as usize).next_multiple_of(HUGE);
    let end = (table.as_ptr() as usize + table.len() * 4) / HUGE * HUGE;
    // SAFETY: [start, end) lies inside `table`'s live allocation; the advice changes only how it is backed.
    unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    table.fill(1);
    table
}

/// Transparent hugepages backing this process (MiB), to show whether tbl24 got them.
fn anon_huge_mib() -> u64 {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    rollup
        .lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb >> 10)
}

fn main() -> Result<(), lpm::Error> {
    let args = parse_args();
    let mut rng = Rng(args.seed);

    // IPv4 table.
    let mut lpm = Lpm4::new(Lpm4Config::default())?;
    let mut installed = Vec::with_capacity(args.routes);
    let t = Instant::now();
    while lpm.len() < args.routes {
        let len = pick_length(&mut rng);
        let p = random_prefix(&mut rng, len);
        lpm.add(p, len, (rng.next() as u32) & 0xffff)?;
        installed.push((p, len));
    }
    let build = t.elapsed();
    let mut hist = [0usize; 33];
    for (_, d, _) in lpm.routes() {
        hist[usize::from(d)] += 1;
    }
    let le24: usize = hist[..=24].iter().sum();
    println!(
        "RESULT test=lpm4_build routes={} add_ns={:.0} tbl8_groups={} table_mib={} at_24={:.1}% upto_24={:.1}% over_24={} thp_mib={}",
        lpm.len(),
        build.as_nanos() as f64 / installed.len() as f64,
        lpm.tbl8_groups_used(),
        lpm.table_bytes() >> 20,
        100.0 * hist[24] as f64 / lpm.len() as f64,
        100.0 * le24 as f64 / lpm.len() as f64,
        lpm.len() - le24,
        anon_huge_mib(),
    );

    // Addresses: uniform over 2^32 (as lpm_perf_autotest draws them) or inside installed routes.
    let addrs: Vec<u32> = (0..BATCH)
        .map(|_| {
            if args.routed {
                let (p, d) = installed[rng.below(installed.len() as u64) as usize];
                p | (rng.next() as u32 & !(u32::MAX.checked_shl(32 - u32::from(d)).unwrap_or(0)))
            } else {
                rng.next() as u32
            }
        })
        .collect();
    let hits = addrs.iter().filter(|&&a| lpm.lookup(a).is_some()).count();
    let mode = if args.routed { "routed" } else { "uniform" };
    let info = format!(" addrs={mode} hit={:.1}%", 100.0 * hits as f64 / BATCH as f64);

    // Floor: one random 4-byte load per address from a tbl24-sized array on the same kind of pages.
    let floor_table = floor_table();
    let floor = measure(args.secs, BATCH, || {
        let mut s = 0u64;
        for &a in &addrs {
            s += u64::from(floor_table[(a >> 8) as usize]);
        }
        s
    });
    report("floor_tbl24_loads", &format!("{info} thp_mib={}", anon_huge_mib()), floor);
    drop(floor_table);

    let single = measure(args.secs, BATCH, || {
        let mut s = 0u64;
        for &a in &addrs {
            s += u64::from(lpm.lookup(a).unwrap_or(0));
        }
        s
    });
    report("lpm4_single", &info, single);

    let x8 = measure(args.secs, BATCH, || {
        let mut s = 0u64;
        for chunk in addrs.chunks_exact(8) {
            let hops = lpm.lookup_x8(chunk.try_into().expect("8"), 0);
            s += hops.iter().map(|&h| u64::from(h)).sum::<u64>();
        }
        s
    });
    report("lpm4_x8", &info, x8);

    let mut out = vec![0u32; 32];
    let bulk = measure(args.secs, BATCH, || {
        let mut s = 0u64;
        for chunk in addrs.chunks_exact(32) {
            lpm.lookup_bulk(chunk, &mut out, 0);
            s += u64::from(out[31]);
        }
        s
    });
    report("lpm4_bulk32", &info, bulk);

    let mut out = vec![0u32; 256];
    let bulk256 = measure(args.secs, BATCH, || {
        let mut s = 0u64;
        for chunk in addrs.chunks_exact(256) {
            lpm.lookup_bulk(chunk, &mut out, 0);
            s += u64::from(out[255]);
        }
        s
    });
    report("lpm4_bulk256", &info, bulk256);
    // The loop lpm_perf_autotest times, for a like-for-like ratio: fresh random addresses per 4096-address batch
    // (untimed), the timestamp counter around each batch, a miss counted per lookup.
    let single_d = dpdk_loop(args.secs, &mut rng, |batch| batch.iter().filter(|&&ip| lpm.lookup(ip).is_none()).count());
    report_dpdk("lpm4_single_dpdkloop", single_d);
    let mut hops = [0u32; 32];
    let bulk_d = dpdk_loop(args.secs, &mut rng, |batch| {
        let mut fails = 0;
        for chunk in batch.chunks_exact(32) {
            lpm.lookup_bulk(chunk, &mut hops, u32::MAX);
            fails += hops.iter().filter(|&&h| h == u32::MAX).count();
        }
        fails
    });
    report_dpdk("lpm4_bulk32_dpdkloop", bulk_d);
    let x4_d = dpdk_loop(args.secs, &mut rng, |batch| {
        let mut fails = 0;
        for chunk in batch.chunks_exact(4) {
            let hops = lpm.lookup_x4(chunk.try_into().expect("4"), u32::MAX);
            fails += hops.iter().filter(|&&h| h == u32::MAX).count();
        }
        fails
    });
    report_dpdk("lpm4_x4_dpdkloop", x4_d);
    println!(
        "RESULT test=lpm4_vs_floor single={:.2} x8={:.2} bulk32={:.2}",
        single.0 / floor.0,
        x8.0 / floor.0,
        bulk.0 / floor.0
    );
    drop(lpm);

    // Fresh generators per table, so each table is the same whatever the timed loops above consumed.
    let mut rng = Rng(args.seed ^ 6);
    // IPv6: 100k routes under 10k provider /32s in 2000::/3 (as real tables cluster): mostly /48, some /32-/44,
    // a few /64 and /128.
    let mut lpm6 = Lpm6::new(Lpm6Config { max_rules: 1 << 20, groups: 1 << 20 })?;
    let providers: Vec<u128> =
        (0..10_000).map(|_| (2u128 << 124 | u128::from(rng.next()) << 64) & (u128::MAX << 96)).collect();
    let mut v6_routes = Vec::new();
    while lpm6.len() < 100_000 {
        let len = match rng.below(100) {
            0..=59 => 48,
            60..=89 => 32 + 4 * rng.below(4) as u8,
            90..=97 => 64,
            _ => 128,
        };
        let provider = providers[rng.below(providers.len() as u64) as usize];
        let p = (provider | u128::from(rng.next()) << 32 | u128::from(rng.next())) & (u128::MAX << (128 - len));
        lpm6.add(p, len, rng.below(1 << 16) as u32)?;
        v6_routes.push((p, len));
    }
    let addrs6: Vec<u128> = (0..BATCH_WIDE)
        .map(|_| {
            let (p, _) = v6_routes[rng.below(v6_routes.len() as u64) as usize];
            p | u128::from(rng.next())
        })
        .collect();
    let hits6 = addrs6.iter().filter(|&&a| lpm6.lookup(a).is_some()).count();
    let info6 = format!(
        " routes={} groups={} addrs=routed hit={:.1}%",
        lpm6.len(),
        lpm6.groups_used(),
        100.0 * hits6 as f64 / BATCH_WIDE as f64
    );
    let v6 = measure(args.secs, BATCH_WIDE, || {
        let mut s = 0u64;
        for chunk in addrs6.chunks_exact(8) {
            s += u64::from(lpm6.lookup_x8(chunk.try_into().expect("8"), 0)[0]);
        }
        s
    });
    report("lpm6_x8", &info6, v6);
    drop(lpm6);

    let mut rng = Rng(args.seed ^ 5);
    // Exact match: 1M IPv4 flows, lookups of present keys.
    let flows = 1 << 20;
    let mut em = ExactMatch::<Ipv4Tuple>::with_capacity(flows)?;
    let keys: Vec<Ipv4Tuple> = (0..flows)
        .map(|_| Ipv4Tuple {
            src_ip: rng.next() as u32,
            dst_ip: rng.next() as u32,
            src_port: rng.next() as u16,
            dst_port: 80,
            proto: 6,
        })
        .collect();
    for (i, k) in keys.iter().enumerate() {
        em.add(*k, i as u32)?;
    }
    let probes: Vec<Ipv4Tuple> = (0..BATCH_WIDE).map(|_| keys[rng.below(flows as u64) as usize]).collect();
    let mut vals = vec![0u32; 32];
    let emr = measure(args.secs, BATCH_WIDE, || {
        let mut s = 0u64;
        for chunk in probes.chunks_exact(32) {
            s += em.lookup_bulk(chunk, &mut vals, u32::MAX) as u64;
        }
        s
    });
    report("exact_v4_bulk32", &format!(" flows={} hit=100%", em.len()), emr);
    Ok(())
}
