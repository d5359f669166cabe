//! Bring-up of the i40e driver against the independent X710 model (nicsim) on every modelled part: the model
//! checks every admin command's byte layout against docs/hw/i40e.md as it executes it, and records a fault for any
//! departure, so `assert_no_faults` after bring-up, start and stop is the layout check.

mod common;

use common::{bytes, mbuf_from, receive, udp_frame, wait_for, Port};
use mempool::PacketBatch;
use nicsim::{X710Config, X710Part};
use pktio::{EthDev, PortConfig, TxQueue, TypedQueues};

const IPS: ([u8; 4], [u8; 4]) = ([10, 0, 0, 1], [10, 0, 0, 2]);

#[test]
fn every_part_comes_up_starts_links_at_its_speed_and_stops() {
    for part in [X710Part::X710Sfp, X710Part::Xl710QsfpA, X710Part::Xl710QsfpB, X710Part::Xxv710Sfp28] {
        let mut port = common::open_one(X710Config::part(part));
        let id = port.dev.identity().clone();
        let c = port.model.config().clone();
        assert_eq!(id.mac.0, c.mac, "{part:?}: MAC Address Read");
        assert_eq!((id.queues, id.first_queue as u16, id.rss_table), (c.num_queues, c.first_queue, c.rss_table_size));
        assert_eq!((id.fw, id.api, id.port, id.pf_id), (c.fw_version, c.api_version, c.port, c.pf_id), "{part:?}");
        assert_eq!(port.model.vsi_queues(), (port.dev.main_vsi().base_queue, port.dev.main_vsi().queues));
        let pool = common::pool(&format!("bringup-{part:?}"), 1023);
        port.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
        port.dev.start(&pool).unwrap();
        common::wait_for(5, "link up", || port.dev.link().up);
        // The speed comes from the firmware's Get Link Status (docs/hw/i40e.md §7.4, §7.5), not from the options.
        assert_eq!(port.dev.link().speed_mbps, part.mbps(), "{part:?}");
        assert_eq!(port.model.mac_config().0, 1500 + 26, "{part:?}: Set MAC Config's largest frame");
        port.dev.stop().unwrap();
        assert!(!port.model.link_up(), "{part:?}: the link goes down administratively at stop");
        port.model.assert_no_faults();
        let map = port.model.dma_mapper();
        drop(port.dev);
        assert_eq!(map.region_count(), 0, "{part:?}: close leaves no DMA mapping");
        assert!(pool.is_full());
        port.model.assert_no_faults();
    }
}

#[test]
fn a_second_pf_of_the_adapter_finds_its_own_port_and_queues() {
    let (a, b) = common::open_pair(X710Config::default());
    let (ia, ib) = (a.dev.identity(), b.dev.identity());
    assert_eq!((ia.port, ia.pf_id, ib.port, ib.pf_id), (0, 0, 1, 1), "PFGEN_PORTNUM and PF_FUNC_RID");
    assert_eq!(ib.first_queue, u32::from(b.model.config().first_queue));
    assert_ne!(ia.mac, ib.mac);
}

#[test]
fn a_paged_hmc_carries_the_contexts_as_a_direct_one_does() {
    use i40e::hmc::HmcMode;
    let pool = common::pool("model-paged", 1023);
    let mut ports = Vec::new();
    let ((b0, m0), (b1, m1)) = nicsim::X710::pair(X710Config::default());
    for (name, bar, model) in [("paged0", b0, m0), ("paged1", b1, m1)] {
        let thread = model.start_thread();
        let options = i40e::Options { hmc_mode: HmcMode::Paged, ..common::options(name, &model) };
        let dev =
            i40e::I40e::new(std::sync::Arc::new(bar), model.dma_mapper(), hugepage::Allocator::no_huge(), options)
                .expect("bring-up with a paged HMC");
        assert!(dev.hmc().unwrap().is_paged());
        ports.push(Port { dev, thread, model });
    }
    let mut b = ports.pop().unwrap();
    let mut a = ports.pop().unwrap();
    for p in [&mut a, &mut b] {
        p.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
        p.dev.start(&pool).unwrap();
    }
    wait_for(5, "links", || a.dev.link().up && b.dev.link().up);
    let (mac0, mac1) = (a.dev.mac_addr().0, b.dev.mac_addr().0);
    let mut tx0 = a.dev.tx_queue_typed(0).unwrap();
    let mut rx1 = b.dev.rx_queue_typed(0).unwrap();
    let f = udp_frame(mac1, mac0, IPS, (7, 8), 300);
    let mut out = PacketBatch::new();
    out.push(mbuf_from(&pool, &f)).unwrap();
    assert_eq!(tx0.tx_burst(&mut out), 1);
    let got = receive(&mut rx1, 1);
    assert_eq!(bytes(got.iter().next().unwrap()), f);
    drop((got, tx0, rx1));
    a.dev.stop().unwrap();
    b.dev.stop().unwrap();
    assert!(pool.is_full());
    common::close(a);
    common::close(b);
}
