//! Virtual devices provided by driver crates (pktio cannot know them: the drivers depend on pktio, not the reverse).
//! The application registers them ([`pktio::driver::Registry`]); the EAL tries these before swports' software
//! ports, and one `--vdev` may yield several ports.

use pktio::devargs::Devargs;
use pktio::driver::Registry;

use crate::Result;

pub use pktio::driver::{VdevDriver, VdevOpen};

/// The registered vdev `devargs` names, if any, with the parsed arguments.
pub fn find(registry: &Registry, devargs: &str) -> Result<Option<(&'static VdevDriver, Devargs)>> {
    let args = Devargs::parse(devargs)?;
    Ok(registry.vdev_driver_for(&args).map(|d| (d, args)))
}

/// Every virtual-device name known with `registry`: swports' software ports, then the registered ones.
pub fn known_names(registry: &Registry) -> Vec<&'static str> {
    swports::VDEV_DRIVERS.iter().copied().chain(registry.vdev_names()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugepage::Allocator;
    use pktio::EthDev;

    /// A driver vdev made of `ports=N` null ports (named after the vdev, so duplicates show).
    fn open_nulls(args: &Devargs, _: &Allocator) -> pktio::Result<Vec<Box<dyn EthDev>>> {
        let n: u16 = args.parse_or("ports", 1)?;
        (0..n).map(|i| swports::open_vdev(&format!("net_null{}{i}", args.name.len()))).collect()
    }

    static NULLS: &[VdevDriver] = &[VdevDriver { name: "net_nulls_x2", open: open_nulls }];

    #[test]
    fn finds_registered_vdevs_by_name_and_opens_them() {
        let registry = Registry::new().with_vdevs(NULLS);
        let (driver, args) = find(&registry, "net_nulls_x21,ports=3").unwrap().unwrap();
        assert_eq!(driver.name, "net_nulls_x2");
        assert_eq!((driver.open)(&args, &Allocator::no_huge()).unwrap().len(), 3);
        assert!(find(&registry, "net_nulls_x2b").unwrap().is_none());
        assert!(find(&registry, "net_null0").unwrap().is_none());
        assert!(find(&Registry::new(), "net_nulls_x2").unwrap().is_none());
        assert!(find(&registry, ",bad").is_err());
        let names = known_names(&registry);
        assert_eq!(names.first(), Some(&"net_null"));
        assert_eq!(names.last(), Some(&"net_nulls_x2"));
    }
}
