//! Shared by the model tests: the i40e driver opened on the independent X710 model of nicsim.

#![allow(dead_code)] // each test binary uses a part

use std::sync::Arc;

use hugepage::Allocator;
use i40e::{max_speed_of, I40e, Options, Timing};
use nicsim::{X710Bar, X710Config, X710Port, X710Thread, X710};

/// A driver on a model port whose thread runs for as long as this lives. Field order: the driver drops (and
/// quiesces its rings) before the model thread stops.
pub struct Port {
    pub dev: I40e<X710Bar>,
    pub thread: X710Thread,
    pub model: X710Port,
}

pub fn options(name: &str, model: &X710Port) -> Options {
    let max_speed = max_speed_of(0x8086, model.config().part.device_id()).expect("a part the driver takes");
    Options { timing: Timing::fast(), max_speed, ..Options::new(name) }
}

/// Opens the driver on `bar`/`model` with the model thread running.
pub fn open(name: &str, bar: X710Bar, model: X710Port) -> pktio::Result<Port> {
    let thread = model.start_thread();
    let dev = I40e::new(Arc::new(bar), model.dma_mapper(), Allocator::no_huge(), options(name, &model))?;
    Ok(Port { dev, thread, model })
}

pub fn open_one(config: X710Config) -> Port {
    let (bar, model) = X710::new(config);
    let port = open("model0", bar, model).expect("bring-up against the model");
    port.model.assert_no_faults();
    port
}

pub fn open_pair(config: X710Config) -> (Port, Port) {
    let ((b0, m0), (b1, m1)) = X710::pair(config);
    let p0 = open("model0", b0, m0).expect("bring-up of port 0");
    let p1 = open("model1", b1, m1).expect("bring-up of port 1");
    p0.model.assert_no_faults();
    p1.model.assert_no_faults();
    (p0, p1)
}

#[allow(unused_imports)] // each test binary uses a part
pub use testkit::{bytes, checksum, cross, mbuf_from, pool, pseudo, receive, tcp_frame, udp_frame, wait_for};

/// Closes the driver and checks it left nothing: no DMA mapping in the model's IOVA map, no fault (the close's own
/// admin commands and register writes included).
pub fn close(port: Port) {
    let Port { dev, thread, model } = port;
    let map = model.dma_mapper();
    drop(dev);
    assert_eq!(map.region_count(), 0, "DMA mappings left after close");
    drop(thread);
    model.assert_no_faults();
}
