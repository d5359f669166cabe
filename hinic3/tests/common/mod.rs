//! Shared by the model tests: the hinic3 driver opened on the independent SP670 model of nicsim.

#![allow(dead_code)] // each test binary uses a part

use std::sync::Arc;

use hinic3::{Bars, Hinic3, Options, Timing};
use hugepage::Allocator;
use nicsim::{Sp670, Sp670Bar, Sp670Config, Sp670Port, Sp670Thread};

/// A driver on a model port whose thread runs for as long as this lives. Field order: the driver drops (and
/// quiesces its rings, closes the function) before the model thread stops.
pub struct Port {
    pub dev: Hinic3<Sp670Bar>,
    pub thread: Sp670Thread,
    pub model: Sp670Port,
}

/// Opens the driver on `model` with the model thread running.
pub fn open(name: &str, model: Sp670Port) -> pktio::Result<Port> {
    open_with(model, Options { timing: Timing::fast(), ..Options::new(name) })
}

/// `open` with the driver's `options`.
pub fn open_with(model: Sp670Port, options: Options) -> pktio::Result<Port> {
    let thread = model.start_thread();
    let (cfg, mgmt, db) = model.bars();
    let bars = Bars { cfg: Arc::new(cfg), mgmt: Some(Arc::new(mgmt)), db: Arc::new(db) };
    let dev = Hinic3::new(bars, model.dma_mapper(), Allocator::no_huge(), options)?;
    Ok(Port { dev, thread, model })
}

pub fn open_one(config: Sp670Config) -> Port {
    let port = open("model0", Sp670::new(config)).expect("bring-up against the model");
    port.model.assert_no_faults();
    port
}

pub fn open_pair(config: Sp670Config) -> (Port, Port) {
    let (m0, m1) = Sp670::pair(config);
    let p0 = open("model0", m0).expect("bring-up of port 0");
    let p1 = open("model1", m1).expect("bring-up of port 1");
    p0.model.assert_no_faults();
    p1.model.assert_no_faults();
    (p0, p1)
}

/// Drops the driver (stop and close) while the model runs, then checks the model saw a clean close: no fault (the
/// close's own commands and register writes included) and no DMA mapping left in its IOVA map.
pub fn close(port: Port) {
    let Port { dev, thread, model } = port;
    let map = model.dma_mapper();
    drop(dev);
    assert_eq!(map.region_count(), 0, "DMA mappings left after close");
    drop(thread);
    model.assert_no_faults();
}

#[allow(unused_imports)] // each test binary uses a part
pub use testkit::{bytes, checksum, cross, mbuf_from, pool, pseudo, receive, tcp_frame, udp_frame, wait_for};
