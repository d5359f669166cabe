//! RX queue and link-change interrupts (docs/hw/i40e.md §14.2) of the driver on the independent X710 model, the
//! model's vectors delivered to real eventfds as VFIO's MSI-X delivers them: an armed queue wakes its descriptor
//! when a frame comes, a disarmed one does not, a frame that came just before arming still wakes, and a link change
//! wakes the link descriptor.

mod common;

use common::*;
use nicsim::X710Config;
use pktio::{EthDev, IntrConf, PortConfig};
use testkit::intr::{armed_disarmed_and_arrive_before_arm, readable, Wire, QUIET, WAKE};

fn started(pool: &mempool::Mempool) -> Port {
    let mut port = open_one(X710Config::default());
    port.dev.set_irq_source(port.model.irq_source());
    let conf =
        PortConfig { rx_desc: 128, tx_desc: 128, intr_conf: IntrConf { rxq: true, lsc: true }, ..Default::default() };
    port.dev.configure(&conf).unwrap();
    port.dev.start(pool).unwrap();
    wait_for(5, "link up", || port.dev.link().up);
    port
}

fn frame(port: &Port, n: u16) -> Vec<u8> {
    let mac = port.model.config().mac;
    udp_frame(mac, [2, 0, 0, 0, 0, 9], ([10, 0, 0, 9], [10, 0, 0, 1]), (n, 7), 64)
}

#[test]
fn an_armed_queue_wakes_on_a_frame_a_disarmed_one_does_not_and_arming_catches_a_frame_just_before() {
    let pool = pool("rxintr", 1024);
    let mut port = started(&pool);
    let mut rx = port.dev.rx_queue(0).unwrap();
    let wire = Wire {
        inject: &|f| {
            port.model.inject(f);
        },
        delivered: &|| port.model.frame_counts().rx_delivered,
        frame: &|n| frame(&port, n),
    };
    armed_disarmed_and_arrive_before_arm(&mut *rx, &wire);
    drop(rx);
    port.dev.stop().unwrap();
    close(port);
    assert!(pool.is_full());
}

#[test]
fn a_link_change_wakes_the_link_descriptor_and_link_reads_it() {
    let pool = pool("lsc", 1024);
    let port = started(&pool);
    let fd = port.dev.link_event_fd().expect("a link descriptor with intr_conf.lsc");
    let _ = port.dev.link();
    assert!(!readable(fd, QUIET), "no link change yet");
    port.model.set_cable(false);
    assert!(readable(fd, WAKE), "cable out wakes the link descriptor");
    wait_for(5, "link down", || !port.dev.link().up);
    port.model.set_cable(true);
    assert!(readable(fd, WAKE), "cable in wakes it");
    wait_for(5, "link up", || port.dev.link().up);
    let mut port = port;
    port.dev.stop().unwrap();
    close(port);
}
