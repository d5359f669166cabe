//! Shapes against DPDK 22.11's own answers (dpdk-testpmd from Debian's package, `--no-huge`, two net_null
//! ports, queried with dpdk-telemetry.py; recorded in `tests/data/dpdk-22.11-telemetry.txt`), and the socket.

use super::*;
use serde_json::Value as J;

const DPDK: &str = include_str!("../../tests/data/dpdk-22.11-telemetry.txt");

/// DPDK's recorded answer to `cmd` (its key), the first whose inner value passes `pick`.
fn dpdk(cmd: &str, pick: impl Fn(&J) -> bool) -> J {
    DPDK.lines()
        .map(|l| serde_json::from_str::<J>(l).unwrap())
        .find(|v| v.get(cmd).is_some_and(&pick))
        .unwrap_or_else(|| panic!("no recorded answer to {cmd}"))
}

/// Same keys in the same order with the same JSON types, recursively (values may differ).
fn same_shape(ours: &J, theirs: &J, at: &str) {
    match (ours, theirs) {
        (J::Object(a), J::Object(b)) => {
            let ka: Vec<_> = a.keys().collect();
            let kb: Vec<_> = b.keys().collect();
            assert_eq!(ka, kb, "keys at {at}");
            for (k, v) in a {
                same_shape(v, &b[k], &format!("{at}.{k}"));
            }
        }
        (J::Array(a), J::Array(b)) => {
            // Lists (ports, pools, params) differ in length; a fixed-size array (q_ipackets) must not.
            if at.contains(".q_") {
                assert_eq!(a.len(), b.len(), "length at {at}");
            }
            assert_eq!(a.is_empty(), b.is_empty(), "emptiness at {at}");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                same_shape(x, y, &format!("{at}[{i}]"));
            }
        }
        (J::Number(_), J::Number(_)) | (J::String(_), J::String(_)) | (J::Null, J::Null) => {}
        (a, b) => panic!("type at {at}: ours {a}, DPDK's {b}"),
    }
}

fn null_port(name: &str) -> Box<dyn EthDev> {
    let mut dev = swports::open_vdev(name).unwrap();
    dev.configure(&pktio::PortConfig::default()).unwrap();
    dev
}

/// Telemetry with net_null0 started as port 0 and pool `pool` (pool names are process-wide: one per test).
fn setup(pool: &str) -> (Telemetry, Box<dyn EthDev>, Mempool) {
    let t = Telemetry::new(vec!["testpmd-rs".into(), "--no-huge".into()], vec![0, 1]);
    let alloc = hugepage::Allocator::new(hugepage::DmaConfig {
        page_size: hugepage::PageSize::Small4K,
        no_huge: true,
        ..Default::default()
    })
    .unwrap();
    let cfg = mempool::PoolConfig { size: 1024, cache_size: 32, ..Default::default() };
    let pool = Mempool::new(pool, &cfg, &alloc).unwrap();
    let mut dev = null_port("net_null0");
    dev.start(&pool).unwrap();
    t.publish_port(0, &*dev, 2176);
    t.publish_pool(&pool);
    (t, dev, pool)
}

fn ask(t: &Telemetry, req: &str) -> J {
    serde_json::from_str(&t.handle(req)).unwrap()
}

#[test]
fn answers_have_dpdks_shapes() {
    let (t, dev, _pool) = setup("tm_shapes");
    for req in
        ["/info", "/ethdev/list", "/ethdev/info,0", "/ethdev/stats,0", "/ethdev/xstats,0", "/ethdev/link_status,0"]
    {
        let cmd = req.split(',').next().unwrap();
        same_shape(&ask(&t, req), &dpdk(cmd, |_| true), req);
    }
    same_shape(&ask(&t, "/mempool/info,tm_shapes"), &dpdk("/mempool/info", |_| true), "/mempool/info");
    same_shape(&ask(&t, "/mempool/list"), &dpdk("/mempool/list", |_| true), "/mempool/list");
    same_shape(&ask(&t, "/eal/params")["/eal/params"][0], &dpdk("/eal/params", |_| true)["/eal/params"][0], "params");
    same_shape(&ask(&t, "/help"), &dpdk("/help", J::is_string), "/help");
    drop(dev);
}

#[test]
fn help_texts_and_errors_are_dpdks() {
    let (t, _dev, _pool) = setup("tm_help");
    for line in DPDK.lines().filter(|l| l.starts_with(r#"{"/help":{"#)) {
        let theirs: J = serde_json::from_str(line).unwrap();
        let cmd = theirs["/help"].as_object().unwrap().keys().next().unwrap().clone();
        assert_eq!(ask(&t, &format!("/help,{cmd}")), theirs, "help of {cmd}");
    }
    // Unknown commands, a missing or bad port id, an absent port: DPDK answers null for each.
    assert_eq!(t.handle("/nope"), r#"{"/nope":null}"#);
    assert_eq!(t.handle("/ethdev/stats"), r#"{"/ethdev/stats":null}"#);
    assert_eq!(t.handle("/ethdev/stats,9"), r#"{"/ethdev/stats":null}"#);
    assert_eq!(t.handle("/ethdev/stats,x"), r#"{"/ethdev/stats":null}"#);
    assert_eq!(t.handle("/help,/nope"), r#"{"/help":null}"#);
    assert_eq!(t.handle("/mempool/info,nope"), r#"{"/mempool/info":null}"#);
    let list = ask(&t, "/");
    for cmd in ["/", "/info", "/help", "/eal/params", "/eal/lcore/list", "/ethdev/list", "/ethdev/xstats"] {
        assert!(list["/"].as_array().unwrap().contains(&J::from(cmd)), "{cmd} missing from /");
    }
    assert_eq!(t.handle("/eal/lcore/list"), r#"{"/eal/lcore/list":[0,1]}"#);
}

#[test]
fn stats_are_live_queue_counters_since_reset() {
    let (t, mut dev, pool) = setup("tm_stats");
    let mut rx = dev.rx_queue(0).unwrap();
    let mut batch = pktio::PacketBatch::with_capacity(32);
    let n = rx.rx_burst(&mut batch);
    assert!(n > 0, "net_null receives");
    let s = ask(&t, "/ethdev/stats,0");
    assert_eq!(s["/ethdev/stats"]["ipackets"], n as u64, "{s}");
    assert_eq!(s["/ethdev/stats"]["q_ipackets"][0], n as u64);
    let x = ask(&t, "/ethdev/xstats,0");
    assert_eq!(x["/ethdev/xstats"]["rx_q0_packets"], n as u64);
    // A reset published by the control thread is a new zero.
    dev.reset_stats();
    t.publish_port(0, &*dev, 2176);
    assert_eq!(ask(&t, "/ethdev/stats,0")["/ethdev/stats"]["ipackets"], 0);
    batch.clear();
    drop(rx);
    // Telemetry holds no queue counters of its own: the port stops once the app's handles are gone.
    dev.stop().expect("a published port still stops");
    let m = ask(&t, "/mempool/info,tm_stats");
    assert_eq!(m["/mempool/info"]["size"], 1024);
    assert_eq!(m["/mempool/info"]["cache_size"], 32);
    drop(pool);
}

#[test]
fn socket_speaks_the_v2_protocol() {
    let (t, _dev, _pool) = setup("tm_socket");
    let dir = std::env::temp_dir().join(format!("eal-telemetry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(server::SOCKET_NAME);
    let srv = Server::start_at(t, &path).unwrap();
    let c = server::connect(&path).unwrap();
    let hello: J = serde_json::from_slice(&server::recv(&c, 1024).unwrap()).unwrap();
    assert_eq!(hello["pid"], std::process::id());
    assert_eq!(hello["max_output_len"], MAX_OUTPUT_LEN);
    server::send(&c, b"/ethdev/list").unwrap();
    assert_eq!(server::recv(&c, MAX_OUTPUT_LEN).unwrap(), br#"{"/ethdev/list":[0]}"#);
    // A second live server on the same path is refused; the first one's file goes with it.
    let again = Server::start_at(Telemetry::new(vec![], vec![]), &path).unwrap_err();
    assert_eq!(again.kind(), std::io::ErrorKind::AddrInUse);
    drop(srv);
    assert!(!path.exists(), "the socket file is removed on drop");
    let _ = std::fs::remove_dir(&dir);
}
