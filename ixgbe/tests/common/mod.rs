//! Helpers shared by the driver-against-model tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hugepage::Allocator;
use ixgbe::{Ixgbe, MacType, Media, Options, Timing};
use mempool::{Mempool, PoolConfig};
use nicsim::{Chip, SimBar, X540Config, X540Port, X540};
use pktio::{EthDev, PortConfig};

/// A fresh, unique mempool of `n` buffers with `data_room` bytes each.
pub fn pool(n: u32, data_room: u16) -> Mempool {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!("ixgbe-test-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let config = PoolConfig { size: n, cache_size: 0, data_room, ..Default::default() };
    Mempool::new(&name, &config, &Allocator::no_huge()).expect("mempool")
}

/// Timing for the model: no settle waits, short budgets.
pub fn fast_timing() -> Timing {
    Timing {
        reset_done: Duration::from_millis(200),
        reset_settle: Duration::ZERO,
        gio_disable: Duration::from_millis(10),
        eeprom: Duration::from_millis(200),
        dma_init: Duration::from_millis(200),
        queue_enable: Duration::from_millis(100),
        mdio: Duration::from_millis(10),
        semaphore: Duration::from_millis(10),
        security_block: Duration::from_millis(100),
        laser_on: Duration::ZERO,
        // Long enough that no test but the watchdog's own (which opens with a short one) sees a restart.
        tx_hang: Duration::from_secs(30),
    }
}

/// Opens the driver on a model port.
pub fn open(bar: SimBar, port: &X540Port, name: &str) -> pktio::Result<Ixgbe<SimBar>> {
    open_with(bar, port, name, fast_timing())
}

/// Opens the driver on a model port with `timing`.
pub fn open_with(bar: SimBar, port: &X540Port, name: &str, timing: Timing) -> pktio::Result<Ixgbe<SimBar>> {
    let (mac_type, media) = match port.config().chip {
        Chip::X540 => (MacType::X540, Media::Copper),
        Chip::X82599 => (MacType::X82599, Media::Sfp),
    };
    let options = Options { name: name.to_string(), mac_type, timing, media };
    Ixgbe::new(Arc::new(bar), port.dma_mapper(), Allocator::no_huge(), options)
}

/// One model port and the driver on it.
pub fn single(config: X540Config) -> (Ixgbe<SimBar>, X540Port) {
    let (bar, port) = X540::new(config);
    let dev = open(bar, &port, "sim0").expect("bring-up");
    (dev, port)
}

/// Two model ports wired back to back, with the driver on each.
pub fn pair(config: X540Config) -> ((Ixgbe<SimBar>, X540Port), (Ixgbe<SimBar>, X540Port)) {
    let ((bar0, p0), (bar1, p1)) = X540::pair(config);
    let d0 = open(bar0, &p0, "sim0").expect("bring-up port 0");
    let d1 = open(bar1, &p1, "sim1").expect("bring-up port 1");
    ((d0, p0), (d1, p1))
}

/// Configures and starts a port.
pub fn start(dev: &mut Ixgbe<SimBar>, config: &PortConfig, pool: &Mempool) {
    dev.configure(config).expect("configure");
    dev.start(pool).expect("start");
}

/// Waits (bounded) for `cond`.
pub fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[allow(unused_imports)] // each test binary uses a part
pub use testkit::{checksum, pseudo, tcp_frame, udp_frame};
