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

/// The environment variable that makes [`fd_exhaustion_child`] the server of [`accept_survives_fd_exhaustion`].
const CHILD_SOCKET: &str = "EAL_TELEMETRY_TEST_CHILD_SOCKET";
/// The child's descriptor limit: far fewer than the clients the parent connects.
const CHILD_NOFILE: u64 = 48;

/// The server half of [`accept_survives_fd_exhaustion`], run in a child process (the limit is process-wide):
/// serves at `$EAL_TELEMETRY_TEST_CHILD_SOCKET` with `RLIMIT_NOFILE` lowered until its stdin closes.
#[test]
#[ignore = "the child process of accept_survives_fd_exhaustion"]
fn fd_exhaustion_child() {
    let path = std::path::PathBuf::from(std::env::var_os(CHILD_SOCKET).expect("run by accept_survives_fd_exhaustion"));
    let srv = Server::start_at(Telemetry::new(vec![], vec![0]), &path).unwrap();
    let lim = libc::rlimit { rlim_cur: CHILD_NOFILE, rlim_max: CHILD_NOFILE };
    // SAFETY: lim is a valid rlimit for the call.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
    // On its own line: libtest writes "test NAME ... " before it.
    println!("\nchild server ready");
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
    drop(srv);
}

/// A client that does not wait: connect fails with EAGAIN when the server's queue is full.
fn connect_nonblocking(path: &std::path::Path) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd};
    // SAFETY: socket() takes no pointers; a non-negative result is a new descriptor we own.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK, 0) };
    assert!(fd >= 0);
    // SAFETY: fd was just returned by socket().
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in addr.sun_path.iter_mut().zip(path.as_os_str().as_encoded_bytes()) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: addr is a valid sockaddr_un of `len` bytes living across the call.
    let rc = unsafe { libc::connect(fd.as_raw_fd(), (&addr as *const libc::sockaddr_un).cast(), len) };
    (rc == 0).then_some(fd)
}

/// The hello of a new client within `timeout`, if the server answers.
fn hello_within(path: &std::path::Path, timeout: std::time::Duration) -> Option<J> {
    use std::os::fd::AsRawFd;
    let c = server::connect(path).ok()?;
    let tv = libc::timeval { tv_sec: timeout.as_secs() as libc::time_t, tv_usec: timeout.subsec_micros() as _ };
    // SAFETY: tv is a valid timeval of the size given.
    let rc = unsafe {
        libc::setsockopt(
            c.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0);
    let msg = server::recv(&c, 1024).ok()?;
    serde_json::from_slice(&msg).ok()
}

#[test]
fn accept_survives_fd_exhaustion() {
    use std::io::BufRead;
    use std::time::{Duration, Instant};
    let dir = std::env::temp_dir().join(format!("eal-telemetry-emfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(server::SOCKET_NAME);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "telemetry::tests::fd_exhaustion_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_SOCKET, &path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("child server ready") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the child server did not start");
    }
    // The child's stderr, line by line, as it comes.
    let (err_tx, err_rx) = std::sync::mpsc::channel::<String>();
    let child_err = std::io::BufReader::new(child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        for l in child_err.lines().map_while(Result::ok) {
            let _ = err_tx.send(l);
        }
    });
    // Clients until the child's accepts fail with EMFILE (a full queue refuses a connect with EAGAIN: try again).
    let mut clients = Vec::new();
    let mut stderr = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !stderr.iter().any(|l: &String| l.contains("EAL: telemetry: accept failed")) {
        assert!(Instant::now() < deadline, "the child never ran out of descriptors ({} clients)", clients.len());
        match connect_nonblocking(&path) {
            Some(c) => clients.push(c),
            None => std::thread::sleep(Duration::from_millis(1)),
        }
        stderr.extend(err_rx.try_iter());
    }
    assert!(clients.len() as u64 > CHILD_NOFILE / 2, "{} clients", clients.len());
    drop(clients);
    // Every client gone: the service answers a new one (the accept loop outlived EMFILE).
    let deadline = Instant::now() + Duration::from_secs(20);
    let hello = loop {
        if let Some(h) = hello_within(&path, Duration::from_millis(500)) {
            break h;
        }
        assert!(Instant::now() < deadline, "telemetry no longer answers after descriptors ran out");
    };
    assert_eq!(hello["max_output_len"], MAX_OUTPUT_LEN);
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    reader.join().unwrap();
    stderr.extend(err_rx.try_iter());
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = stderr.join("\n");
    assert!(status.success(), "child: {stderr}");
    assert_eq!(stderr.matches("EAL: telemetry: accept failed").count(), 1, "said once: {stderr}");
    assert!(stderr.contains("Too many open files"), "the reason is given: {stderr}");
}

/// One request on a client socket, its answer parsed.
fn ask_on(c: &std::os::fd::OwnedFd, req: &str) -> J {
    server::send(c, req.as_bytes()).unwrap();
    serde_json::from_slice(&server::recv(c, MAX_OUTPUT_LEN).unwrap()).unwrap()
}

#[test]
fn a_capture_ends_when_the_client_that_started_it_goes() {
    use std::time::{Duration, Instant};
    let dir = std::env::temp_dir().join(format!("eal-telemetry-lease-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(server::SOCKET_NAME);
    let srv = Server::start_at(Telemetry::new(vec![], vec![0]), &path).unwrap();
    // A port nobody else in this process captures.
    pktio::capture::announce(4077);
    let file = dir.join("lease.pcapng");
    let start = format!("/pktio/capture,start,4077,rx,128,0,{}", file.display());
    let first = server::connect(&path).unwrap();
    server::recv(&first, 1024).unwrap();
    assert_eq!(ask_on(&first, &start)["/pktio/capture"]["status"], "started");
    let second = server::connect(&path).unwrap();
    server::recv(&second, 1024).unwrap();
    let busy = ask_on(&second, &start);
    assert!(busy["/pktio/capture"]["error"].as_str().unwrap().contains("already"), "{busy}");
    // The first client goes without a stop (as a killed pktio-dumpcap): its capture ends with it.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(10);
    // Ended: no capture, and the file closed with its statistics (the writer finishes just after the state goes).
    let closed = || {
        let bytes = std::fs::read(&file).unwrap();
        let blocks = pktio::capture::pcapng::read_blocks(&bytes).unwrap_or_default();
        blocks.iter().any(|b| matches!(b, pktio::capture::pcapng::Block::Statistics { .. }))
    };
    while ask_on(&second, "/pktio/capture,status")["/pktio/capture"]["status"] != "none" || !closed() {
        assert!(Instant::now() < deadline, "the capture outlived the client that started it");
        std::thread::sleep(Duration::from_millis(5));
    }
    // The next client may capture, and a capture stopped by its client is not stopped twice.
    assert_eq!(ask_on(&second, &start)["/pktio/capture"]["status"], "started");
    assert_eq!(ask_on(&second, "/pktio/capture,stop")["/pktio/capture"]["status"], "stopped");
    drop(second);
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The keys of an answer's object, in order.
fn keys(v: &J) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn lcore_heap_and_memzone_endpoints_show_real_figures_in_dpdks_shapes() {
    let t = Telemetry::new(vec!["app".into()], vec![0, 1]);
    t.publish_lcores(vec![
        LcoreView { lcore: 0, socket: 0, cpuset: vec![0] },
        LcoreView { lcore: 1, socket: 0, cpuset: vec![1, 3] },
    ]);
    assert_eq!(t.handle("/eal/lcore/list"), r#"{"/eal/lcore/list":[0,1]}"#);
    let info = ask(&t, "/eal/lcore/info,1");
    // DPDK's keys in DPDK's order (lib/eal/common/eal_common_lcore.c); no cycles without the application's.
    assert_eq!(keys(&info["/eal/lcore/info"]), ["lcore_id", "socket", "role", "cpuset"]);
    assert_eq!(info["/eal/lcore/info"]["cpuset"], serde_json::json!([1, 3]));
    assert_eq!(info["/eal/lcore/info"]["role"], "RTE");
    for bad in ["/eal/lcore/info", "/eal/lcore/info,7", "/eal/lcore/info,x", "/eal/lcore/info,1x"] {
        assert_eq!(ask(&t, bad)["/eal/lcore/info"], J::Null, "{bad}");
    }
    assert_eq!(
        t.handle("/eal/lcore/usage"),
        r#"{"/eal/lcore/usage":{"lcore_ids":[],"total_cycles":[],"busy_cycles":[]}}"#
    );
    t.register_lcore_usage(Some(Arc::new(|l| (l == 1).then_some(LcoreUsage { total_cycles: 900, busy_cycles: 300 }))));
    let info = ask(&t, "/eal/lcore/info,1");
    assert_eq!(keys(&info["/eal/lcore/info"]), ["lcore_id", "socket", "role", "cpuset", "total_cycles", "busy_cycles"]);
    assert_eq!(info["/eal/lcore/info"]["busy_cycles"], 300);
    assert_eq!(
        t.handle("/eal/lcore/usage"),
        r#"{"/eal/lcore/usage":{"lcore_ids":[1],"total_cycles":[900],"busy_cycles":[300]}}"#
    );

    // The heap is the allocator's: nothing listed before it has memory, its figures after.
    let alloc = hugepage::Allocator::no_huge();
    t.publish_heap(&alloc);
    assert_eq!(t.handle("/eal/heap_list"), r#"{"/eal/heap_list":[]}"#);
    let cfg = mempool::PoolConfig { size: 512, cache_size: 0, ..Default::default() };
    let pool = Mempool::new("tm_heap", &cfg, &alloc).unwrap();
    t.publish_pool(&pool);
    assert_eq!(t.handle("/eal/heap_list"), r#"{"/eal/heap_list":[0]}"#);
    let heap = &ask(&t, "/eal/heap_info,0")["/eal/heap_info"];
    let names = ["Name", "Heap_size", "Free_size", "Alloc_size", "Greatest_free_size", "Alloc_count", "Free_count"];
    assert_eq!(keys(heap)[0], "Heap_id");
    assert_eq!(keys(heap)[1..], names);
    let usage = alloc.heap().usage();
    assert_eq!(heap["Heap_size"], usage.heap_size);
    assert!(usage.heap_size >= pool.memory().len() as u64, "{usage:?}");
    assert_eq!(heap["Alloc_count"], usage.alloc_count);
    assert_eq!(heap["Name"], "socket_0");
    assert_eq!(ask(&t, "/eal/heap_info,1")["/eal/heap_info"], J::Null);

    // The pool's region is a memzone, as the exporter's memory metrics read it.
    let list = ask(&t, "/eal/memzone_list");
    assert_eq!(list["/eal/memzone_list"], serde_json::json!([0]));
    let z = &ask(&t, "/eal/memzone_info,0")["/eal/memzone_info"];
    assert_eq!(
        keys(z),
        ["Zone", "Name", "Length", "Address", "Socket", "Flags", "Hugepage_size", "Hugepage_base", "Hugepage_used"]
    );
    assert_eq!(z["Name"], "MP_tm_heap");
    assert_eq!(z["Length"], pool.memory().len() as u64);
    assert_eq!(z["Address"], format!("{:#x}", pool.memory().as_ptr() as u64));
    assert_eq!(z["Hugepage_size"], 4096);
    assert_eq!(z["Hugepage_used"], pool.memory().len() as u64 / 4096);
    drop(pool);
    assert_eq!(alloc.heap().usage().heap_size, 0, "the pool's memory is given back");
}
