//! Bring-up time of the i40e driver against the X710 model: PF reset, the admin-queue conversation (version,
//! capabilities, MAC, switch config, VSI, PHY, link), then configure and start with one queue pair (LAN HMC,
//! queue contexts, enable handshakes). The model answers in its own thread, as firmware would; its own delays are
//! zero, so this is the driver's and the admin protocol's cost, not a prediction for hardware (real firmware takes
//! milliseconds per command).
//!
//! `cargo run --release -p i40e --example model-bringup [rounds]` prints the median and the range in ms.

use std::sync::Arc;
use std::time::Instant;

use hugepage::Allocator;
use i40e::{I40e, Options, Timing};
use mempool::{Mempool, PoolConfig};
use nicsim::{X710Config, X710};
use pktio::{EthDev, PortConfig};

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let allocator = Allocator::no_huge();
    let pool = Mempool::new("bringup", &PoolConfig::with_size(4095), &allocator).expect("mempool");
    let (mut probe, mut start) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (bar, model) = X710::new(X710Config::default());
        let _thread = model.start_thread();
        let t0 = Instant::now();
        let options = Options { timing: Timing::fast(), ..Options::new("sim0") };
        let mut dev = I40e::new(Arc::new(bar), model.dma_mapper(), allocator.clone(), options).expect("bring-up");
        let t1 = Instant::now();
        dev.configure(&PortConfig::default()).expect("configure");
        dev.start(&pool).expect("start");
        let t2 = Instant::now();
        dev.stop().expect("stop");
        model.assert_no_faults();
        probe.push((t1 - t0).as_secs_f64() * 1e3);
        start.push((t2 - t1).as_secs_f64() * 1e3);
    }
    for (what, v) in
        [("probe (reset + admin queue)", &mut probe), ("configure + start (HMC, contexts, enable)", &mut start)]
    {
        v.sort_by(f64::total_cmp);
        println!(
            "{what}: median {:.2} ms, min {:.2}, max {:.2} over {rounds} rounds",
            v[v.len() / 2],
            v[0],
            v[v.len() - 1]
        );
    }
}
