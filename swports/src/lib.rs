//! Software ports: [`pktio::EthDev`]s with no NIC behind them, opened from DPDK devargs (`--vdev net_null0,size=64`)
//! by [`open_vdev`], which the EAL calls for every `--vdev` no registered driver claims. They let every application
//! run and be tested without hardware, and let the kernel talk to a dataplane.
//!
//! - [`null`] (`net_null`): RX hands out fresh buffers, TX frees them (the framework's own cost).
//! - [`ring`] (`net_ring`): ports joined by in-memory rings, zero-copy; a loopback alone, a cable in pairs.
//! - [`pcap`] (`net_pcap`): RX from and TX to classic pcap files, read and written by [`pcap_file`] (no libpcap).
//! - [`af_packet`] (`net_af_packet`): a kernel interface through TPACKET_V2 rings.
//! - [`af_xdp`] (`net_af_xdp`): a kernel interface through AF_XDP sockets and an XDP program of our own.
//! - [`tap`] (`net_tap`): a TAP interface the port creates, so ping, curl or tcpdump reach the dataplane.
//!
//! DPDK's older `eth_*` names are accepted as aliases ([`VDEV_ALIASES`]). Each module's documentation lists its
//! devargs, counters and limits.
//!
//! Not supported: DPDK's other software PMDs (vhost, memif, bonding, failsafe, ...), pcap on live interfaces (use
//! `net_af_packet`), pcapng files (pktio's live capture writes those), and AF_XDP UMEMs shared between ports.

pub mod af_packet;
pub mod af_xdp;
pub(crate) mod netif;
pub mod null;
pub mod pcap;
mod pcap_claims;
pub mod pcap_file;
mod pcap_replay;
pub mod ring;
pub mod tap;

use pktio::devargs::Devargs;
use pktio::EthDev;
use pktio::{Error, Result};

/// Driver names of the virtual devices this crate can open.
pub const VDEV_DRIVERS: &[&str] = &["net_null", "net_ring", "net_pcap", "net_af_packet", "net_af_xdp", "net_tap"];

/// DPDK's older driver names, still accepted as aliases (`eth_null0` opens a `net_null` port named `eth_null0`).
pub const VDEV_ALIASES: &[(&str, &str)] = &[
    ("eth_null", "net_null"),
    ("eth_ring", "net_ring"),
    ("eth_pcap", "net_pcap"),
    ("eth_af_packet", "net_af_packet"),
    ("eth_af_xdp", "net_af_xdp"),
];

/// The driver a vdev driver name (or its DPDK alias) stands for.
pub fn canonical_driver(driver: &str) -> &str {
    VDEV_ALIASES.iter().find(|(alias, _)| *alias == driver).map_or(driver, |(_, name)| name)
}

/// Opens a virtual device from its devargs string.
pub fn open_vdev(devargs: &str) -> Result<Box<dyn EthDev>> {
    let mut args = Devargs::parse(devargs)?;
    args.driver = canonical_driver(&args.driver).to_string();
    Ok(match args.driver.as_str() {
        "net_null" => Box::new(null::NullPort::from_devargs(&args)?),
        "net_ring" => Box::new(ring::RingPort::from_devargs(&args)?),
        "net_pcap" => Box::new(pcap::PcapPort::from_devargs(&args)?),
        "net_af_packet" => Box::new(af_packet::AfPacketPort::from_devargs(&args)?),
        "net_af_xdp" => Box::new(af_xdp::AfXdpPort::from_devargs(&args)?),
        "net_tap" => Box::new(tap::TapPort::from_devargs(&args)?),
        _ => return Err(Error::UnknownDriver { name: args.name, known: VDEV_DRIVERS.join(", ") }),
    })
}

/// Sum of the packets' lengths, in four independent sums (no chain of dependent adds through the burst).
#[inline(always)]
pub(crate) fn total_len(pkts: &[pktio::Mbuf]) -> u64 {
    let mut sums = [0u64; 4];
    let mut quads = pkts.chunks_exact(4);
    for q in &mut quads {
        for (sum, m) in sums.iter_mut().zip(q) {
            *sum += m.pkt_len() as u64;
        }
    }
    let rest: u64 = quads.remainder().iter().map(|m| m.pkt_len() as u64).sum();
    sums.iter().sum::<u64>() + rest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpdk_eth_aliases_open_the_same_drivers_under_the_given_name() {
        let port = open_vdev("eth_null0,size=128").unwrap();
        assert_eq!(port.info().driver_name, "net_null");
        assert_eq!(port.info().device_name, "eth_null0");
        assert_eq!(open_vdev("eth_ring3").unwrap().info().driver_name, "net_ring");
        assert_eq!(canonical_driver("eth_af_packet"), "net_af_packet");
        assert_eq!(canonical_driver("net_tap"), "net_tap");
        let err = open_vdev("eth_bogus0").err().unwrap().to_string();
        assert!(err.contains("eth_bogus0"), "{err}");
    }
}
