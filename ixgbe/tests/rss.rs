//! The ixgbe's RSS limits: 4-bit redirection entries, so at most 16 queues. The spread over 4 and 16 queues as the
//! Toeplitz hash and the table say is in the conformance suite (conformance.rs), the hash checked against the
//! published vectors in the test kit.
mod common;

use common::*;
use nicsim::X540Config;
use pktio::{EthDev, PortConfig, RssConfig, RssHashFunctions};

#[test]
fn rss_is_limited_to_sixteen_queues_by_the_4_bit_redirection_entries() {
    let (mut dev, _port) = single(X540Config::default());
    let config = PortConfig {
        rx_queues: 17,
        rss: Some(RssConfig { key: None, functions: RssHashFunctions::ALL }),
        ..Default::default()
    };
    let err = dev.configure(&config).unwrap_err().to_string();
    assert!(err.contains("16"), "{err}");
    dev.configure(&PortConfig { rx_queues: 4, rss: Some(RssConfig::default()), ..Default::default() }).unwrap();
    assert!(dev.reta_update(&[0, 1, 2, 4]).is_err());
}
