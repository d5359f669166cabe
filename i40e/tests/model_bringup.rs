//! Bring-up of the i40e driver against the independent X710 model (nicsim) on every modelled part: the model
//! checks every admin command's byte layout against docs/hw/i40e.md as it executes it, and records a fault for any
//! departure, so `assert_no_faults` after bring-up, start and stop is the layout check.

mod common;

use nicsim::{X710Config, X710Part};
use pktio::{EthDev, PortConfig};

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
