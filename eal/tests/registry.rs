//! The EAL opens what the application registered, and only that: a registered vdev yields its ports (in `--vdev`
//! order, among swports' software ports), `-h` and the unknown-device error list it, and [`eal::init`] (no registry)
//! does not know it. One test function: a successful init binds the main lcore, one per process.

use eal::Error;
use hugepage::Allocator;
use pktio::devargs::Devargs;
use pktio::driver::{Registry, VdevDriver};
use pktio::EthDev;

/// Two null ports named after the device (`net_twin3` gives `net_null30` and `net_null31`).
fn open_twin(args: &Devargs, _: &Allocator) -> pktio::Result<Vec<Box<dyn EthDev>>> {
    let n = args.name.trim_start_matches("net_twin");
    (0..2).map(|i| swports::open_vdev(&format!("net_null{n}{i}"))).collect()
}

static TWIN: &[VdevDriver] = &[VdevDriver { name: "net_twin", open: open_twin }];

#[test]
fn init_with_opens_the_registered_vdevs() {
    let registry = Registry::new().with_vdevs(TWIN);
    match eal::init_with(&registry, ["-h"]) {
        Err(Error::Help(text)) => assert!(text.contains("net_null, net_ring") && text.contains("net_twin"), "{text}"),
        other => panic!("expected the usage, got {other:?}"),
    }
    let err = eal::init_with(&registry, ["--no-huge", "--vdev", "net_bogus0"]).unwrap_err().to_string();
    assert!(err.contains("net_bogus0") && err.contains("net_tap, net_twin"), "{err}");
    let err = eal::init(["--no-huge", "--vdev", "net_twin3"]).unwrap_err().to_string();
    assert!(err.contains("no driver for device \"net_twin3\"") && !err.contains("net_twin,"), "{err}");

    let args = ["--no-huge", "--vdev", "net_null9", "--vdev", "net_twin3", "--vdev", "net_ring0"];
    let (mut env, _) = eal::init_with(&registry, args).unwrap();
    let mut ports = env.take_ports();
    let names: Vec<&str> = ports.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["net_null9", "net_null30", "net_null31", "net_ring0"]);
    // The registered vdev's second port got port id 2: a null port stamps it on what it receives.
    let pool = env.pktmbuf_pool("eal-registry", 255, 0, 2048).unwrap();
    let dev = &mut ports[2].dev;
    dev.configure(&pktio::PortConfig::default()).unwrap();
    dev.start(&pool).unwrap();
    let mut batch = pktio::PacketBatch::new();
    assert!(dev.rx_queue(0).unwrap().rx_burst(&mut batch) > 0);
    assert!(batch.iter().all(|m| m.port() == 2));
    batch.clear();
    dev.stop().unwrap();
}
