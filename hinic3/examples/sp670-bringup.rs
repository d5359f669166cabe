//! Bring-up time and firmware-command round trips of the hinic3 driver against the SP670 model: the register
//! bring-up, AEQs, mailbox, command queue and the management conversation (`Hinic3::new`), then configure and start
//! with one queue pair (contexts through the command queue, root context, RX mode, vport and port enable), then
//! single commands: a management round trip (L2NIC GET_VPORT_STAT through `xstats`: DMA-mode mailbox send,
//! write-back, answer on the AEQ) and a command-queue round trip (the RSS indirection table). The model answers in
//! its own thread, as the management CPU would; its own delays are zero, so this is the driver's, the protocol's and
//! the model thread's cost, not a prediction for hardware (real firmware takes milliseconds per command).
//!
//! `cargo run --release -p hinic3 --example sp670-bringup [rounds]` prints the median and the range.

use std::sync::Arc;
use std::time::Instant;

use hinic3::{Bars, Hinic3, Options, Timing};
use hugepage::Allocator;
use mempool::{Mempool, PoolConfig};
use nicsim::{Sp670, Sp670Config};
use pktio::{EthDev, PortConfig};

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let allocator = Allocator::no_huge();
    let pool = Mempool::new("bringup", &PoolConfig::with_size(4095), &allocator).expect("mempool");
    let (mut probe, mut start, mut mgmt, mut cmdq) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    const CALLS: usize = 200;
    for _ in 0..rounds {
        let model = Sp670::new(Sp670Config::default());
        let _thread = model.start_thread();
        let (cfg, mgmt_bar, db) = model.bars();
        let bars = Bars { cfg: Arc::new(cfg), mgmt: Some(Arc::new(mgmt_bar)), db: Arc::new(db) };
        let t0 = Instant::now();
        let options = Options { timing: Timing::fast(), ..Options::new("sim0") };
        let mut dev = Hinic3::new(bars, model.dma_mapper(), allocator.clone(), options).expect("bring-up");
        let t1 = Instant::now();
        dev.configure(&PortConfig { rx_queues: 2, ..PortConfig::default() }).expect("configure");
        dev.start(&pool).expect("start");
        let t2 = Instant::now();
        for _ in 0..CALLS {
            assert_eq!(dev.xstats().len(), 16);
        }
        let t3 = Instant::now();
        let reta: Vec<u16> = (0..256).map(|i| (i % 2) as u16).collect();
        for _ in 0..CALLS {
            dev.reta_update(&reta).expect("RSS table");
        }
        let t4 = Instant::now();
        dev.stop().expect("stop");
        drop(dev);
        model.assert_no_faults();
        probe.push((t1 - t0).as_secs_f64() * 1e3);
        start.push((t2 - t1).as_secs_f64() * 1e3);
        mgmt.push((t3 - t2).as_secs_f64() * 1e6 / CALLS as f64);
        cmdq.push((t4 - t3).as_secs_f64() * 1e6 / CALLS as f64);
    }
    for (what, unit, v) in [
        ("bring-up (Hinic3::new)", "ms", &mut probe),
        ("configure + start, 2 RX queues (contexts, RSS, enables)", "ms", &mut start),
        ("management round trip (L2NIC 9 GET_VPORT_STAT)", "us", &mut mgmt),
        ("command-queue round trip (SET_RSS_INDIR_TABLE)", "us", &mut cmdq),
    ] {
        v.sort_by(f64::total_cmp);
        println!(
            "{what}: median {:.2} {unit}, min {:.2}, max {:.2} over {rounds} rounds",
            v[v.len() / 2],
            v[0],
            v[v.len() - 1]
        );
    }
}
