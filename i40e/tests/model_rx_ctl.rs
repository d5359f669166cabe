//! RX-control registers (PFQF_CTL_0, PFQF_HENA, GLQF_CTL, PRTQF_CTL_0) go through the firmware's commands
//! 0x0206/0x0207, sent again on EAGAIN up to 5 times before the MMIO fallback (docs/hw/i40e.md §5.6, §6.11; DPDK
//! `i40e_read_rx_ctl` / `i40e_write_rx_ctl`).

mod common;

use common::*;
use drvkit::bar::RegisterSpace;
use nicsim::{AqRc, X710Config};
use pktio::{EthDev, PortConfig, RssConfig, RssHashFunctions};

const RX_CTL_READ: u16 = 0x0206;
const RX_CTL_WRITE: u16 = 0x0207;
/// PFQF_HENA(0) and (1) (docs/hw/i40e.md §12.1).
const PFQF_HENA_0: usize = 0x24_5900;
const PFQF_HENA_1: usize = 0x24_5980;
/// GLQF_CTL and its HTOEP bit (Toeplitz, docs/hw/i40e.md §12.1).
const GLQF_CTL: usize = 0x26_9BA4;
const HTOEP: u32 = 1 << 1;

fn rss_started(pool: &mempool::Mempool) -> Port {
    let mut port = open_one(X710Config::default());
    let rss = RssConfig { key: None, functions: RssHashFunctions::UDP };
    let cfg =
        PortConfig { rx_queues: 2, tx_queues: 2, rx_desc: 128, tx_desc: 128, rss: Some(rss), ..Default::default() };
    port.dev.configure(&cfg).unwrap();
    port.dev.start(pool).unwrap();
    port
}

fn answers(port: &Port, from: usize, op: u16) -> Vec<AqRc> {
    port.model.aq_log()[from..].iter().filter(|(o, _)| *o == op).map(|(_, rc)| *rc).collect()
}

#[test]
fn every_rx_control_register_is_written_through_the_firmware() {
    let pool = pool("rxctl-cmd", 1023);
    let port = rss_started(&pool);
    assert_eq!(port.model.counters().rx_ctl_mmio_writes, 0, "GLQF_CTL and PRTQF_CTL_0 included");
    assert!(!answers(&port, 0, RX_CTL_READ).is_empty(), "the read-modify-writes read through 0x0206");
    assert_ne!(port.model.bar().read32(GLQF_CTL) & HTOEP, 0, "Toeplitz set through 0x0207");
    port.model.assert_no_faults();
    close(port);
}

#[test]
fn an_rx_control_write_answered_eagain_is_sent_again_not_written_by_mmio() {
    let pool = pool("rxctl-eagain", 1023);
    let mut port = rss_started(&pool);
    let from = port.model.aq_log().len();
    port.model.inject_aq_errors(Some(RX_CTL_WRITE), AqRc::Eagain, 5);
    port.dev
        .rss_hash_update(&RssConfig { key: None, functions: RssHashFunctions(RssHashFunctions::IPV4_TCP) })
        .unwrap();
    let a = answers(&port, from, RX_CTL_WRITE);
    assert_eq!(a[..6], [AqRc::Eagain, AqRc::Eagain, AqRc::Eagain, AqRc::Eagain, AqRc::Eagain, AqRc::Ok], "{a:?}");
    assert_eq!(port.model.counters().rx_ctl_mmio_writes, 0, "5 EAGAINs are waited out, no MMIO fallback");
    port.model.assert_no_faults();
    close(port);
}

#[test]
fn an_rx_control_write_still_eagain_after_5_retries_falls_back_to_mmio() {
    let pool = pool("rxctl-fallback", 1023);
    let mut port = rss_started(&pool);
    let from = port.model.aq_log().len();
    // apply_rss writes PFQF_HENA(0) first: six EAGAINs for it, then the firmware answers again.
    port.model.inject_aq_errors(Some(RX_CTL_WRITE), AqRc::Eagain, i40e::RX_CTL_ATTEMPTS);
    port.dev
        .rss_hash_update(&RssConfig { key: None, functions: RssHashFunctions(RssHashFunctions::IPV4_TCP) })
        .unwrap();
    let a = answers(&port, from, RX_CTL_WRITE);
    assert_eq!(a.iter().take_while(|rc| **rc == AqRc::Eagain).count(), 6, "{a:?}");
    assert_eq!(port.model.counters().rx_ctl_mmio_writes, 1, "one write by MMIO, the rest by command");
    // TCP over IPv4 is PCTYPE 33 (docs/hw/i40e.md §12.1): bit 1 of PFQF_HENA(1).
    assert_eq!(port.model.bar().read32(PFQF_HENA_0), 0, "the MMIO write of PFQF_HENA(0) took");
    assert_eq!(port.model.bar().read32(PFQF_HENA_1), 1 << 1, "TCP over IPv4 hashed");
    port.model.assert_no_faults();
    close(port);
}
