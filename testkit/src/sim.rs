//! The `net_sim_*` vdevs' forwarding check (simports' tests and the drivers' `src/sim.rs`): a pair of simulated
//! ports opened from devargs forwards byte for byte at its link speed and gives every buffer back.

use std::time::{Duration, Instant};

use hugepage::Allocator;
use mempool::{Mempool, PacketBatch, PoolConfig};
use pktio::{EthDev, PortConfig};

/// Two wired simulated ports opened from `devargs`, driven by `driver`, the first named `device`: 32 frames from
/// port 0 reach port 1 byte for byte at `speed`, and every buffer is back in the pool after stop.
pub fn forward_pair(mut ports: Vec<Box<dyn EthDev>>, devargs: &str, speed: u32, driver: &str, device: &str) {
    assert_eq!(ports.len(), 2, "{devargs}");
    assert_eq!(ports[1].info().driver_name, driver, "{devargs}");
    assert_eq!(ports[0].info().device_name, device, "{devargs}");
    assert_ne!(ports[0].mac_addr(), ports[1].mac_addr(), "{devargs}");
    let pool = Mempool::new(&format!("sim-{devargs}"), &PoolConfig::with_size(4096), &Allocator::no_huge()).unwrap();
    for p in ports.iter_mut() {
        p.configure(&PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() }).unwrap();
        p.set_promiscuous(true).unwrap();
        p.start(&pool).unwrap();
    }
    let t = Instant::now();
    while !(ports[0].link().up && ports[1].link().up) {
        assert!(t.elapsed() < Duration::from_secs(5), "{devargs}: links stay down");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(ports[0].link().speed_mbps, speed, "{devargs}");
    let mut tx0 = ports[0].tx_queue(0).unwrap();
    let mut rx1 = ports[1].rx_queue(0).unwrap();
    let mut b = PacketBatch::new();
    assert!(b.alloc_from(&pool, 32));
    for (i, m) in b.iter_mut().enumerate() {
        m.data_room_mut()[..64].fill(i as u8);
        m.set_len(64);
    }
    assert_eq!(tx0.tx_burst(&mut b), 32, "{devargs}");
    let mut got = 0;
    while got < 32 {
        assert!(t.elapsed() < Duration::from_secs(10), "{devargs}: received {got}");
        rx1.rx_burst(&mut b);
        for m in b.iter() {
            assert_eq!(m.data(), &[got as u8; 64][..], "{devargs}: frame {got}");
            got += 1;
        }
        b.clear();
    }
    drop((tx0, rx1));
    for p in ports.iter_mut() {
        p.stop().unwrap();
    }
    drop(ports);
    assert!(pool.is_full(), "{devargs}: {} buffers leaked", pool.in_use());
}
