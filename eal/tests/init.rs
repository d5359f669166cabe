//! EAL set-up end to end: ports from --vdev, a pool, a pinned worker lcore forwarding between two null ports.
//! One test function: init binds the calling thread to the main lcore, and there is one main lcore per process.

use eal::Error;
use pktio::{PacketBatch, PortConfig};

#[test]
fn init_ports_pool_and_worker_lcore() {
    // Errors first (they fail before binding the main lcore).
    let cpus = eal::cpu::available_cpus();
    let missing_cpu = cpus.last().unwrap() + 1;
    match eal::init(["-l", &missing_cpu.to_string(), "--no-huge"]) {
        Err(Error::CpuUnavailable { lcore, .. }) => assert_eq!(lcore, missing_cpu),
        other => panic!("expected CpuUnavailable, got {other:?}"),
    }
    let err = eal::init(["--no-huge", "--vdev", "net_bogus0"]).unwrap_err().to_string();
    assert!(err.contains("net_null") && err.contains("net_bogus0"), "{err}");
    let err = eal::init(["--no-huge", "-a", "0000:7f:1f.7"]).unwrap_err().to_string();
    assert!(err.contains("does not exist"), "{err}");
    let err = eal::init(["--no-huge", "--vdev", "net_null0", "--vdev", "net_null0"]).unwrap_err().to_string();
    assert!(err.contains("already exists"), "{err}");

    let workers = if cpus.len() > 1 { format!("{},{}", cpus[0], cpus[1]) } else { cpus[0].to_string() };
    let (mut env, app) = eal::init([
        "-l",
        &workers,
        "--no-huge",
        "-m",
        "64",
        "--vdev",
        "net_null0,size=64",
        "--vdev",
        "net_null1,size=128",
        "--",
        "--rxq",
        "1",
    ])
    .unwrap();
    assert_eq!(app, ["--rxq", "1"]);
    assert_eq!(env.nb_ports(), 2);
    assert_eq!(mempool::lcore::current(), Some(env.main_lcore()));
    let err = env.pktmbuf_pool("too-big", 100_000, 256, 2048).unwrap_err();
    assert!(matches!(err, Error::OutOfBudget { .. }), "{err}");
    let pool = env.pktmbuf_pool("eal-test", 4095, 256, 2048).unwrap();
    let mut ports = env.take_ports();
    assert_eq!(ports[0].name, "net_null0");
    assert_eq!(ports[1].name, "net_null1");
    for p in &mut ports {
        p.dev.configure(&PortConfig::default()).unwrap();
        p.dev.start(&pool).unwrap();
    }
    let mut rx = ports[1].dev.rx_queue(0).unwrap();
    let mut tx = ports[0].dev.tx_queue(0).unwrap();
    let mut work = move || {
        let mut batch = PacketBatch::new();
        let mut forwarded = 0u64;
        let mut port_ids_ok = true;
        while forwarded < 100_000 {
            rx.rx_burst(&mut batch);
            port_ids_ok &= batch.iter().all(|m| m.port() == 1 && m.data_len() == 128);
            forwarded += tx.tx_burst(&mut batch) as u64;
        }
        (forwarded, port_ids_ok, mempool::lcore::current())
    };
    let (forwarded, port_ids_ok, lcore) = if let Some(&worker) = env.worker_lcores().first() {
        assert!(env.launch(env.main_lcore(), || ()).is_err(), "the main lcore is not a worker");
        let refused = env.launch_with(env.main_lcore(), vec![1, 2, 3], |v| v.len()).unwrap_err();
        assert_eq!(refused.work, [1, 2, 3], "a refused launch hands its state back");
        // An lcore id another thread holds (this one holds the main lcore): the new thread cannot claim it, and
        // the state comes back unrun.
        let busy = eal::launch_on_with(env.main_lcore(), String::from("queues"), |s| s.len()).unwrap_err();
        assert_eq!(busy.work, "queues");
        assert!(busy.error.to_string().contains("already in use"), "{}", busy.error);
        let thread = env.launch(worker, work).unwrap();
        let out = thread.join().unwrap();
        assert_eq!(out.2, Some(worker), "the worker thread holds its lcore id");
        out
    } else {
        work()
    };
    assert!(port_ids_ok, "null port 1 stamps its port id and size");
    assert!(lcore.is_some());
    let rx_stats = ports[1].dev.stats();
    let tx_stats = ports[0].dev.stats();
    assert_eq!(tx_stats.opackets, forwarded);
    assert_eq!(tx_stats.obytes, forwarded * 128);
    assert_eq!(rx_stats.ipackets, forwarded);
    for p in &mut ports {
        p.dev.stop().unwrap();
    }
    assert!(pool.is_full(), "every buffer back: {} of {}", pool.available(), pool.size());
}
