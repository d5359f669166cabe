//! DPDK's own Prometheus/OpenMetrics exporter (`usertools/dpdk-telemetry-exporter.py`, DPDK 23.07 and later)
//! against a forwarding testpmd-rs: the OpenMetrics page it serves has every port's counters, the memory in use
//! (from `/eal/memzone_*`) and the forwarding lcore's cycles (from `/eal/lcore/info` with `--record-core-cycles`,
//! as dpdk-testpmd).
//!
//! The exporter comes from DPDK's 25.11 source that `scripts/setup.sh` unpacks under
//! `$PKTIO_CACHE/src/dpdk-25.11` (default `/var/cache/pktio`), or, where the mirror has sid's `dpdk` package but
//! not its source, from that package, unpacked under `$PKTIO_CACHE/dpdk-25.11-usertools`. Without it the test says so and passes, unless
//! DPDK_TESTS_REQUIRED=1 (scripts/test.sh), where it fails. The endpoints it reads are also checked on their own,
//! without the exporter.

mod common;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// DPDK's usertools directory with the exporter and its endpoints, if set up.
fn usertools() -> Option<PathBuf> {
    let cache = std::env::var_os("PKTIO_CACHE").map_or_else(|| PathBuf::from("/var/cache/pktio"), PathBuf::from);
    let dir = cache.join("src/dpdk-25.11/usertools");
    for d in [dir.clone(), cache.join("dpdk-25.11-usertools")] {
        if d.join("dpdk-telemetry-exporter.py").is_file() && d.join("telemetry-endpoints").is_dir() {
            return Some(d);
        }
    }
    let why = format!("needs DPDK's exporter at {}/dpdk-telemetry-exporter.py (bash scripts/setup.sh)", dir.display());
    if std::env::var("DPDK_TESTS_REQUIRED").as_deref() == Ok("1") {
        panic!("DPDK_TESTS_REQUIRED=1 but it {why}");
    }
    eprintln!("skipped: {why}; set DPDK_TESTS_REQUIRED=1 to fail");
    None
}

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `GET /` of the exporter: the status line and the body, or `None` while it does not answer yet.
fn scrape(port: u16) -> Option<(String, String)> {
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    c.write_all(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut out = String::new();
    c.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_string(), body.to_string()))
}

/// The value of the metric line starting with `prefix` (name and labels).
fn metric(body: &str, prefix: &str) -> f64 {
    let line = body.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no {prefix} in:\n{body}"));
    line.rsplit(' ').next().unwrap().parse().unwrap_or_else(|_| panic!("{line}"))
}

#[test]
fn dpdk_exporter_exports_ports_memory_and_cpu_of_testpmd_rs() {
    let Some(tools) = usertools() else { return };
    let prefix = format!("tpmd-exporter-{}", std::process::id());
    let mut s = boot(
        &["--file-prefix", &prefix, "--vdev", "net_ring0,link=w", "--vdev", "net_ring1,link=w"],
        &["-i", "--forward-mode=io", "--record-core-cycles"],
    );
    s.cmd("start tx_first");
    wait_port_rx(&mut s, 1, 1000);
    let http = free_port();
    let socket = eal::telemetry::socket_path(&prefix);
    let mut exporter = Command::new("python3")
        .arg(tools.join("dpdk-telemetry-exporter.py"))
        .args(["-o", &format!("openmetrics://127.0.0.1:{http}"), "-s", socket.to_str().unwrap()])
        .arg("-p")
        .arg(tools.join("telemetry-endpoints"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let deadline = Instant::now() + Duration::from_secs(30);
    let page = loop {
        if let Some(p) = scrape(http) {
            break p;
        }
        if let Some(st) = exporter.try_wait().unwrap() {
            panic!("the exporter exited: {st}");
        }
        assert!(Instant::now() < deadline, "the exporter never answered on 127.0.0.1:{http}");
        std::thread::sleep(Duration::from_millis(50));
    };
    s.cmd("stop");
    quit(s);
    let _ = exporter.kill();
    let out = exporter.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let (status, body) = page;
    assert!(status.contains("200"), "{status}\n{body}\n{log}");
    // No endpoint failed (the cpu one crashed on an /eal/lcore/info without answer).
    assert!(!log.contains("metrics collection failed"), "{log}");
    for port in ["net_ring0", "net_ring1"] {
        assert!(metric(&body, &format!("dpdk_counters_rx_packets{{port=\"{port}\"}}")) > 0.0, "{body}");
        assert!(metric(&body, &format!("dpdk_counters_tx_packets{{port=\"{port}\"}}")) > 0.0, "{body}");
        metric(&body, &format!("dpdk_counters_rx_nombuf{{port=\"{port}\"}}"));
    }
    assert!(metric(&body, "dpdk_memory_total_bytes") > 0.0, "{body}");
    assert!(metric(&body, "dpdk_memory_used_bytes") > 0.0, "{body}");
    // Lcore 1 forwards (lcore 0 is the main one, without forwarding streams).
    let total = metric(&body, "dpdk_cpu_total_cycles{cpu=\"1\"");
    let busy = metric(&body, "dpdk_cpu_busy_cycles{cpu=\"1\"");
    assert!(total > 0.0 && busy > 0.0 && busy <= total, "busy {busy} of {total}:\n{body}");
}

/// One request on testpmd-rs's telemetry socket, its answer's inner value as text.
fn ask(prefix: &str, req: &str) -> String {
    use eal::telemetry;
    let fd = telemetry::connect(&telemetry::socket_path(prefix)).expect("testpmd-rs serves telemetry");
    telemetry::recv(&fd, 1024).unwrap();
    telemetry::send(&fd, req.as_bytes()).unwrap();
    String::from_utf8(telemetry::recv(&fd, telemetry::MAX_OUTPUT_LEN).unwrap()).unwrap()
}

/// The number after `"key":` in `json`.
fn json_number(json: &str, key: &str) -> u64 {
    let at = json.find(&format!("\"{key}\":")).unwrap_or_else(|| panic!("{key} in {json}")) + key.len() + 3;
    json[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

/// What the exporter reads, checked without it: with `--record-core-cycles` the forwarding lcore's
/// `/eal/lcore/info` has its cycles (busy ones growing while it forwards), and the memory endpoints real sizes.
#[test]
fn lcore_and_memory_endpoints_have_testpmd_rs_figures() {
    let prefix = format!("tpmd-lcore-{}", std::process::id());
    let mut s = boot(
        &["--file-prefix", &prefix, "--vdev", "net_ring0,link=w", "--vdev", "net_ring1,link=w"],
        &["-i", "--forward-mode=io", "--record-core-cycles"],
    );
    let idle = ask(&prefix, "/eal/lcore/info,1");
    assert!(idle.contains(r#""cpuset":[1]"#) && !idle.contains("total_cycles"), "no cycles before forwarding: {idle}");
    s.cmd("start tx_first");
    wait_port_rx(&mut s, 1, 1000);
    let first = ask(&prefix, "/eal/lcore/info,1");
    let deadline = Instant::now() + Duration::from_secs(20);
    let later = loop {
        let now = ask(&prefix, "/eal/lcore/info,1");
        if json_number(&now, "busy_cycles") > json_number(&first, "busy_cycles") {
            break now;
        }
        assert!(Instant::now() < deadline, "busy cycles do not grow: {first} then {now}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(json_number(&later, "total_cycles") > json_number(&first, "total_cycles"), "{first} then {later}");
    assert!(json_number(&later, "busy_cycles") <= json_number(&later, "total_cycles"), "{later}");
    let usage = ask(&prefix, "/eal/lcore/usage");
    assert!(usage.contains(r#""lcore_ids":[1]"#), "{usage}");
    s.cmd("stop");
    let heap = ask(&prefix, "/eal/heap_info,0");
    assert!(json_number(&heap, "Heap_size") > 0 && json_number(&heap, "Alloc_count") > 0, "{heap}");
    let zone = ask(&prefix, "/eal/memzone_info,0");
    assert!(zone.contains(r#""Name":"MP_mb_pool_0""#) && json_number(&zone, "Length") > 0, "{zone}");
    quit(s);
}
