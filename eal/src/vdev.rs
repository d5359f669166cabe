//! Virtual devices provided by driver crates (pktio cannot know them: the drivers depend on pktio, not the reverse).
//! The EAL tries these before pktio's software ports; one `--vdev` may yield several ports.

use hugepage::Allocator;
use pktio::devargs::Devargs;
use pktio::EthDev;

use crate::Result;

/// Opens a driver-provided vdev: its ports, with the EAL's DMA memory for rings.
pub type VdevOpen = fn(&Devargs, &Allocator) -> pktio::Result<Vec<Box<dyn EthDev>>>;

/// A driver crate's virtual device.
pub struct VdevDriver {
    /// Device-name prefix users type (`net_sim_x540`); an instance number may follow (`net_sim_x5401`).
    pub name: &'static str,
    /// Opens the device's ports, with the EAL's DMA memory for rings.
    pub open: VdevOpen,
}

/// Every driver-provided virtual device in this build.
pub const VDEV_DRIVERS: &[VdevDriver] = &[
    VdevDriver { name: ixgbe::sim::VDEV_DRIVER, open: ixgbe::sim::open_vdev },
    VdevDriver { name: ixgbe::sim::VDEV_DRIVER_82599, open: ixgbe::sim::open_vdev_82599 },
];

/// The driver-provided vdev `devargs` names, if any, with the parsed arguments. Matched on the device name, since
/// names like `net_sim_x540` end in digits that are not an instance number.
pub fn find(devargs: &str) -> Result<Option<(&'static VdevDriver, Devargs)>> {
    let args = Devargs::parse(devargs)?;
    let driver = VDEV_DRIVERS
        .iter()
        .find(|d| args.name.strip_prefix(d.name).is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit())));
    Ok(driver.map(|d| (d, args)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_driver_vdevs_by_name_prefix() {
        assert_eq!(find("net_sim_x540,ports=2").unwrap().unwrap().0.name, "net_sim_x540");
        assert!(find("net_sim_x5401").unwrap().is_some());
        assert!(find("net_sim_x540b").unwrap().is_none());
        assert!(find("net_null0").unwrap().is_none());
    }

    #[test]
    fn opens_two_wired_simulated_ports() {
        let (driver, args) = find("net_sim_x540,ports=2").unwrap().unwrap();
        let ports = (driver.open)(&args, &Allocator::no_huge()).unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[1].info().driver_name, "net_ixgbe");
    }

    #[test]
    fn finds_and_opens_the_82599_variant() {
        let (driver, args) = find("net_sim_82599,ports=2").unwrap().unwrap();
        assert_eq!(driver.name, "net_sim_82599");
        let ports = (driver.open)(&args, &Allocator::no_huge()).unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0].info().speed_capa, vec![1_000, 10_000]);
        let (driver, args) = find("net_sim_x540,ports=2,mac=82599").unwrap().unwrap();
        assert_eq!(driver.name, "net_sim_x540");
        assert_eq!((driver.open)(&args, &Allocator::no_huge()).unwrap()[0].info().speed_capa, vec![1_000, 10_000]);
    }
}
