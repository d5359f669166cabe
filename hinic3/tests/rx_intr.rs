//! RX queue interrupts (docs/hw/hinic3.md §5.5) of the driver on the independent SP670 model, the model's vectors
//! delivered to real eventfds as VFIO's MSI-X delivers them: an armed queue wakes its descriptor when a frame comes
//! (after the model's coalescing timer), a disarmed one does not, a frame that came just before arming still wakes;
//! with `intr_conf.lsc` a link event on AEQ 0 wakes the link descriptor (vector 0).

mod common;

use common::*;
use nicsim::Sp670Config;
use pktio::{EthDev, IntrConf, PortConfig};
use testkit::intr::{armed_disarmed_and_arrive_before_arm, readable, Wire, QUIET, WAKE};

fn started(pool: &mempool::Mempool) -> Port {
    let mut port = open_one(Sp670Config::default());
    port.dev.set_irq_source(port.model.irq_source());
    let conf =
        PortConfig { rx_desc: 128, tx_desc: 128, intr_conf: IntrConf { rxq: true, lsc: false }, ..Default::default() };
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
fn a_link_change_wakes_the_link_descriptor_through_aeq_0_and_link_reads_it() {
    let pool = pool("lsc", 1024);
    let mut port = open_one(Sp670Config::default());
    port.dev.set_irq_source(port.model.irq_source());
    let conf =
        PortConfig { rx_desc: 128, tx_desc: 128, intr_conf: IntrConf { rxq: true, lsc: true }, ..Default::default() };
    port.dev.configure(&conf).unwrap();
    port.dev.start(&pool).unwrap();
    let fd = port.dev.link_event_fd().expect("a link descriptor with intr_conf.lsc");
    wait_for(5, "link up", || port.dev.link().up);
    let _ = port.dev.link();
    assert!(!readable(fd, QUIET), "no link change since the last link()");
    let before = port.model.irq_counts()[0];
    port.model.set_cable(false);
    assert!(readable(fd, WAKE), "cable out wakes the link descriptor (a HILINK event on AEQ 0)");
    assert!(!port.dev.link().up, "link() reads the event");
    assert!(!readable(fd, QUIET), "quiet again once link() took the event");
    port.model.set_cable(true);
    assert!(readable(fd, WAKE), "cable in wakes it");
    wait_for(5, "link up", || port.dev.link().up);
    assert!(port.model.irq_counts()[0] >= before + 2, "vector 0, AEQ 0's, carried both changes");
    port.dev.stop().unwrap();
    assert!(matches!(port.dev.link_event_fd(), Err(pktio::Error::NotStarted { .. })));
    close(port);
    assert!(pool.is_full());
}

#[test]
fn without_intr_conf_lsc_there_is_no_link_descriptor() {
    let pool = pool("nolsc", 1024);
    let port = started(&pool);
    assert!(matches!(port.dev.link_event_fd(), Err(pktio::Error::NotSupported { .. })));
    let mut port = port;
    port.dev.stop().unwrap();
    close(port);
}
