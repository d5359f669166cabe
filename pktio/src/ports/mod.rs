//! Software ports, opened from DPDK devargs (`--vdev net_null0,size=64`).

pub mod af_packet;
pub(crate) mod netif;
pub mod null;
pub mod pcap;
pub mod ring;
pub mod tap;

use crate::dev::EthDev;
use crate::devargs::Devargs;
use crate::{Error, Result};

/// Driver names of the virtual devices this crate can open.
pub const VDEV_DRIVERS: &[&str] = &["net_null", "net_ring", "net_pcap", "net_af_packet", "net_tap"];

/// Opens a virtual device from its devargs string.
pub fn open_vdev(devargs: &str) -> Result<Box<dyn EthDev>> {
    let args = Devargs::parse(devargs)?;
    Ok(match args.driver.as_str() {
        "net_null" => Box::new(null::NullPort::from_devargs(&args)?),
        "net_ring" => Box::new(ring::RingPort::from_devargs(&args)?),
        "net_pcap" => Box::new(pcap::PcapPort::from_devargs(&args)?),
        "net_af_packet" => Box::new(af_packet::AfPacketPort::from_devargs(&args)?),
        "net_tap" => Box::new(tap::TapPort::from_devargs(&args)?),
        _ => return Err(Error::UnknownDriver { name: args.name, known: VDEV_DRIVERS.join(", ") }),
    })
}
