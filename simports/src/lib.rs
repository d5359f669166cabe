//! Simulated ports: each `net_sim_*` virtual device opens a real driver on a behavioural NIC model ([`nicsim`]), so
//! the driver runs, and applications such as testpmd-rs forward, with no hardware. This is the one crate that
//! depends on both drivers and models; driver crates use the models only in their tests.
//!
//! - [`x540`]: `net_sim_x540` and `net_sim_82599`, the ixgbe driver on the X540 model and its 82599 variant.
//! - [`x710`]: `net_sim_x710`, the i40e driver on the X710 / XL710 / XXV710 model.
//! - [`sp670`]: `net_sim_sp670`, the hinic3 driver on the SP670 model.
//!
//! [`SIM_NICS`] is **the model list**: one line per simulated NIC (its vdev, the driver that runs on it, the devargs
//! a forwarding test runs it with and the link speed it then reports). [`VDEV_DRIVERS`] (for an application's
//! [`pktio::driver::Registry`]) and the tests that walk every simulated NIC (testpmd-rs/tests/sim_nics.rs) derive
//! from it. Every vdev opens through the one generic [`vdev::open_vdev`] over the model trait ([`nicsim::Model`]);
//! a NIC's module says only what is its own ([`vdev::SimDriver`]). Not supported: PCI-style probing of a model
//! (models are vdevs only).

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

mod port;
pub mod vdev;

pub use port::SimPort;

use pktio::driver::VdevDriver;

/// One simulated NIC: its vdev, and what a test that runs every simulated NIC needs to know of it.
#[derive(Debug, Clone, Copy)]
pub struct SimNic {
    /// The vdev (name, devargs keys, open).
    pub vdev: VdevDriver,
    /// The driver that runs on the model (`DevInfo::driver_name`).
    pub driver: &'static str,
    /// Devargs of a forwarding run on two wired ports, and the link speed in Mb/s the ports then report.
    pub runs: &'static [(&'static str, u32)],
}

impl SimNic {
    /// A NIC of the model list: its vdev, the driver that runs on it, its forwarding runs.
    pub const fn new(vdev: VdevDriver, driver: &'static str, runs: &'static [(&'static str, u32)]) -> Self {
        SimNic { vdev, driver, runs }
    }
}

/// Declares each NIC's module (`simports/src/<module>.rs`, its [`vdev::SimDriver`] and `VDEV`s) and lists its
/// simulated NICs in [`SIM_NICS`]: one line per model.
macro_rules! model_list {
    ($($module:ident => [$($nic:expr),+ $(,)?],)+) => {
        $(pub mod $module;)+
        /// **The model list**, in the order of `model_list!`.
        const NICS: &[SimNic] = &[$($($nic),+),+];
    };
}

// The model list: one line per model module (the X540 module has two vdevs).
model_list! {
    x540 => [
        SimNic::new(x540::VDEV, "net_ixgbe", &[("net_sim_x540,ports=2", 10_000)]),
        SimNic::new(x540::VDEV_82599, "net_ixgbe", &[("net_sim_82599,ports=2", 10_000)]),
    ],
    x710 => [SimNic::new(x710::VDEV, "net_i40e", &[("net_sim_x710,ports=2", 10_000), ("net_sim_x710,ports=2,part=xl710", 40_000)])],
    sp670 => [SimNic::new(sp670::VDEV, "net_hinic3", &[("net_sim_sp670,ports=2", 100_000), ("net_sim_sp670,ports=2,speed=25000", 25_000)])],
}

/// Every simulated NIC: the model list.
pub static SIM_NICS: &[SimNic] = NICS;

/// Every simulated port this crate provides, for an application's registry: the vdevs of [`SIM_NICS`].
pub static VDEV_DRIVERS: &[VdevDriver] = &vdevs_of::<{ NICS.len() }>(NICS);

const fn vdevs_of<const N: usize>(nics: &[SimNic]) -> [VdevDriver; N] {
    let mut out = [nics[0].vdev; N];
    let mut i = 0;
    while i < N {
        out[i] = nics[i].vdev;
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugepage::Allocator;
    use pktio::devargs::Devargs;
    use pktio::driver::Registry;

    /// Opens `devargs` the way the EAL does: look the name up in a registry, then call the driver's `open`.
    fn open(devargs: &str) -> pktio::Result<Vec<Box<dyn pktio::EthDev>>> {
        let registry = Registry::new().with_vdevs(VDEV_DRIVERS);
        let args = Devargs::parse(devargs)?;
        let driver = registry.vdev_driver_for(&args).unwrap_or_else(|| panic!("{devargs}: not registered"));
        (driver.open)(&args, &Allocator::no_huge())
    }

    #[test]
    fn opens_two_wired_simulated_ports_through_a_registry() {
        let ports = open("net_sim_x540,ports=2").unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[1].info().driver_name, "net_ixgbe");
        assert_eq!(ports[1].info().device_name, "net_sim_x540_p1");
        assert_eq!(open("net_sim_x5401,ports=4").unwrap().len(), 4);
        let x710 = open("net_sim_x710,ports=2,part=xxv710").unwrap();
        assert_eq!(x710[1].info().driver_name, "net_i40e");
        assert_eq!(x710[1].info().device_name, "net_sim_x710_p1");
        let sp670 = open("net_sim_sp670,ports=2").unwrap();
        assert_eq!(sp670[1].info().driver_name, "net_hinic3");
        assert_eq!(sp670[1].info().device_name, "net_sim_sp670_p1");
    }

    /// An unknown key is named with the driver's whole name, digits included, even when the driver's own open is
    /// called directly (the name used to lose them: "net_sim_x takes: ...").
    #[test]
    fn unknown_keys_name_the_whole_driver() {
        for (devargs, driver) in [
            ("net_sim_x710,bogus=1", "net_sim_x710"),
            ("net_sim_x7101,bogus=1", "net_sim_x710"),
            ("net_sim_sp670,bogus=1", "net_sim_sp670"),
            ("net_sim_sp6702,bogus=1", "net_sim_sp670"),
        ] {
            let e = open(devargs).err().unwrap_or_else(|| panic!("{devargs} accepted")).to_string();
            assert!(e.contains(&format!("unknown argument \"bogus\"; {driver} takes: ports")), "{devargs}: {e}");
        }
    }

    #[test]
    fn every_nic_of_the_model_list_is_registered_and_forwards_on_each_run() {
        let names: Vec<_> = VDEV_DRIVERS.iter().map(|d| d.name).collect();
        assert_eq!(names, SIM_NICS.iter().map(|n| n.vdev.name).collect::<Vec<_>>());
        for nic in SIM_NICS {
            assert!(nic.vdev.devargs.contains(&"ports") && nic.vdev.devargs.contains(&"tap"), "{}", nic.vdev.name);
            for &(devargs, mbps) in nic.runs {
                let device = format!("{}_p0", nic.vdev.name);
                testing::forward_pair(open(devargs).unwrap(), devargs, mbps, nic.driver, &device);
            }
        }
    }

    #[test]
    fn finds_and_opens_the_82599_variant() {
        let ports = open("net_sim_82599,ports=2").unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0].info().speed_capa, vec![1_000, 10_000]);
        assert_eq!(open("net_sim_x540,ports=2,mac=82599").unwrap()[0].info().speed_capa, vec![1_000, 10_000]);
        assert_eq!(open("net_sim_x540,ports=2").unwrap()[0].info().speed_capa, vec![100, 1_000, 10_000]);
    }
}

/// Test support shared by the net_sim_* families.
#[cfg(test)]
pub(crate) mod testing {
    use std::time::{Duration, Instant};

    use hugepage::Allocator;
    use mempool::{Mempool, PacketBatch, PoolConfig};
    use pktio::{EthDev, PortConfig};

    /// Two wired simulated ports opened from `devargs`, driven by `driver`, the first named `device`: 32 frames from port 0 reach port 1 byte
    /// for byte at `speed`, and every buffer is back in the pool after stop.
    pub(crate) fn forward_pair(mut ports: Vec<Box<dyn EthDev>>, devargs: &str, speed: u32, driver: &str, device: &str) {
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[1].info().driver_name, driver);
        assert_eq!(ports[0].info().device_name, device);
        assert_ne!(ports[0].mac_addr(), ports[1].mac_addr());
        let pool =
            Mempool::new(&format!("sim-{devargs}"), &PoolConfig::with_size(4096), &Allocator::no_huge()).unwrap();
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
        assert_eq!(tx0.tx_burst(&mut b), 32);
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
}
