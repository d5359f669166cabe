//! Forwarding cycle counts for `--record-core-cycles` / `set record-core-cycles on`: the CPU's time-stamp counter
//! on x86_64 (what DPDK's rte_rdtsc reads), nanoseconds of the monotonic clock elsewhere. Read twice per burst,
//! and only when recording is on: the forwarding loop without it has no clock reads at all.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The counter now.
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC exists on every x86_64 CPU and only reads the time-stamp counter.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// Counter ticks per second (DPDK's rte_get_tsc_hz), measured once against the monotonic clock over 20 ms.
pub fn hz() -> u64 {
    static HZ: OnceLock<u64> = OnceLock::new();
    *HZ.get_or_init(|| {
        if cfg!(not(target_arch = "x86_64")) {
            return 1_000_000_000;
        }
        let (t0, c0) = (Instant::now(), now());
        std::thread::sleep(Duration::from_millis(20));
        let (ns, ticks) = (t0.elapsed().as_nanos() as u64, now().wrapping_sub(c0));
        (ticks as u128 * 1_000_000_000 / ns.max(1) as u128) as u64
    })
}

/// dpdk-testpmd's cycles line under the accumulated forward statistics: cycles spent in bursts that moved
/// packets, per packet received (per packet sent for the generating modes txonly and flowgen).
pub fn stats_line(cycles: u64, mode: &str, rx: u64, tx: u64) -> Option<String> {
    if rx == 0 && tx == 0 {
        return None;
    }
    let pkts = if mode == "txonly" || mode == "flowgen" { tx } else { rx };
    Some(format!(
        "\n  CPU cycles/packet={:.2} (total cycles={cycles} / total {mode} packets={pkts}) at {} MHz Clock",
        cycles as f64 / pkts as f64,
        hz() / 1_000_000
    ))
}

/// dpdk-testpmd's lcore usage for telemetry (`/eal/lcore/info`, `/eal/lcore/usage`), which it registers with
/// `--record-core-cycles`: per forwarding lcore, the ticks since forwarding started (until `stop` is set) and the
/// busy ticks its streams recorded.
pub fn lcore_usage(
    lcores: Vec<(u32, Vec<std::sync::Arc<crate::fwd::StreamCounters>>)>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> eal::telemetry::LcoreUsageFn {
    use std::sync::atomic::{AtomicU64, Ordering};
    let start = now();
    let ended = AtomicU64::new(0);
    std::sync::Arc::new(move |lcore| {
        let (_, streams) = lcores.iter().find(|(l, _)| *l == lcore)?;
        let end = match ended.load(Ordering::Relaxed) {
            0 if stop.load(Ordering::Relaxed) => {
                let t = now();
                ended.store(t, Ordering::Relaxed);
                t
            }
            0 => now(),
            t => t,
        };
        let busy_cycles = streams.iter().map(|s| s.core_cycles.get()).sum();
        Some(eal::telemetry::LcoreUsage { total_cycles: end.wrapping_sub(start), busy_cycles })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_advances_at_a_plausible_rate() {
        let a = now();
        std::thread::sleep(Duration::from_millis(2));
        assert!(now() > a);
        let mhz = hz() / 1_000_000;
        assert!((50..20_000).contains(&mhz), "{mhz} MHz");
    }

    #[test]
    fn the_line_divides_by_the_packets_the_mode_counts() {
        let l = stats_line(1000, "io", 10, 40).unwrap();
        assert!(l.starts_with("\n  CPU cycles/packet=100.00 (total cycles=1000 / total io packets=10) at "), "{l}");
        assert!(l.ends_with(" MHz Clock"), "{l}");
        assert!(stats_line(1000, "txonly", 10, 40)
            .unwrap()
            .contains("=25.00 (total cycles=1000 / total txonly packets=40)"));
        assert_eq!(stats_line(5, "io", 0, 0), None);
    }
}
