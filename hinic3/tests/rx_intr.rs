//! RX queue interrupts (docs/hw/hinic3.md §5.5) of the driver on the independent SP670 model, the model's vectors
//! delivered to real eventfds as VFIO's MSI-X delivers them: an armed queue wakes its descriptor when a frame comes
//! (after the model's coalescing timer), a disarmed one does not, a frame that came just before arming still wakes.
//! Link changes come on AEQ 0, which the driver polls: no link interrupt (refused with NotSupported).

mod common;

use common::*;
use nicsim::Sp670Config;
use pktio::{EthDev, IntrConf, PortConfig};
use testkit::intr::{armed_disarmed_and_arrive_before_arm, Wire};

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
fn link_interrupts_are_refused_naming_them() {
    let mut port = open_one(Sp670Config::default());
    port.dev.set_irq_source(port.model.irq_source());
    let conf = PortConfig { intr_conf: IntrConf { rxq: false, lsc: true }, ..Default::default() };
    let e = port.dev.configure(&conf).unwrap_err();
    assert!(matches!(e, pktio::Error::NotSupported { .. }), "{e}");
    close(port);
}
