//! Real clients against the sessions: redis-cli, redis-benchmark, curl and wrk talk to a tiny threaded std::net
//! server on loopback that moves bytes between sockets and [`servers::kv::Session`] / [`servers::http::Session`].
//! This adapter is test-only; the real servers put the same sessions behind netstack's sockets.
//!
//! A missing client binary makes a test print `SKIPPED: reason` and pass, or fail when
//! REAL_CLIENT_TESTS_REQUIRED=1 (scripts/test.sh sets it; scripts/setup.sh installs the clients).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use servers::http::{self, Site};
use servers::kv::{self, Store};
use servers::SessionAction;

/// True if `tool` runs; otherwise skips (or fails when REAL_CLIENT_TESTS_REQUIRED=1) and returns false.
fn have(tool: &str) -> bool {
    if Command::new(tool).arg("--version").output().is_ok() {
        return true;
    }
    testkit::skip("REAL_CLIENT_TESTS_REQUIRED", &format!("{tool} is not installed (scripts/setup.sh installs it)"))
}

/// A loopback listener whose every connection runs `serve` on its own thread; stops accepting on drop.
struct Server {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(serve: impl Fn(TcpStream) + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let serve = Arc::new(serve);
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let serve = serve.clone();
                thread::spawn(move || serve(conn));
            }
        });
        Server { port, stop }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port)); // wakes the accept loop so it sees the flag
    }
}

/// Reads, feeds the session, writes its output, until the peer or the session closes.
fn pump(mut conn: TcpStream, mut feed: impl FnMut(&[u8], &mut Vec<u8>) -> SessionAction) {
    let _ = conn.set_nodelay(true);
    let mut buf = vec![0u8; 64 << 10];
    let mut out = Vec::new();
    loop {
        let n = match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        out.clear();
        let action = feed(&buf[..n], &mut out);
        if conn.write_all(&out).is_err() {
            return;
        }
        if action == SessionAction::CloseAfterFlush {
            let _ = conn.shutdown(Shutdown::Both);
            return;
        }
    }
}

fn kv_server() -> (Server, Arc<Mutex<Store>>) {
    let store = Arc::new(Mutex::new(Store::new()));
    let shared = store.clone();
    let ids = AtomicU64::new(1);
    let epoch = Instant::now();
    let server = Server::start(move |conn| {
        let mut session = kv::Session::new(ids.fetch_add(1, Ordering::Relaxed));
        let store = shared.clone();
        pump(conn, |input, out| {
            let now = epoch.elapsed().as_millis() as u64;
            let mut store = store.lock().unwrap();
            let action = session.feed(input, now, &mut store, out);
            store.sweep_expired(now, 64);
            action
        });
    });
    (server, store)
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = run(Command::new("redis-cli").args(["-h", "127.0.0.1", "-p", &port.to_string()]).args(args));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn redis_cli_round_trips() {
    if !have("redis-cli") {
        return;
    }
    let (server, _store) = kv_server();
    let p = server.port;
    assert_eq!(redis_cli(p, &["SET", "greeting", "hello world"]), "OK\n");
    assert_eq!(redis_cli(p, &["GET", "greeting"]), "hello world\n");
    assert_eq!(redis_cli(p, &["LPUSH", "l", "a", "b", "c"]), "3\n");
    assert_eq!(redis_cli(p, &["LRANGE", "l", "0", "-1"]), "c\nb\na\n");
    assert_eq!(redis_cli(p, &["INCR", "n"]), "1\n");
    assert_eq!(redis_cli(p, &["INCR", "n"]), "2\n");
    assert_eq!(
        redis_cli(p, &["GET", "l"]),
        "WRONGTYPE Operation against a key holding the wrong kind of value\n\n",
        "redis-cli prints errors this way for redis-server too"
    );
    assert_eq!(redis_cli(p, &["PING"]), "PONG\n");
}

/// redis-benchmark 7.0's default tests, as named in its output.
use testkit::redis::BENCHMARK_DEFAULT_TESTS as DEFAULT_TESTS;

#[test]
fn redis_benchmark_runs_every_default_test_without_errors() {
    if !have("redis-benchmark") {
        return;
    }
    let (server, store) = kv_server();
    let n = 20_000;
    let out = run(Command::new("redis-benchmark").args([
        "-h",
        "127.0.0.1",
        "-p",
        &server.port.to_string(),
        "-q",
        "-n",
        &n.to_string(),
        "-c",
        "20",
    ]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stdout.to_lowercase().contains("error") && !stderr.to_lowercase().contains("error"), "{stdout}\n{stderr}");
    // -q prints "NAME: R requests per second, p50=L msec" per test after \r-separated progress lines.
    let mut seen = Vec::new();
    for line in stdout.split(['\r', '\n']) {
        if let Some((name, rest)) = line.split_once(": ") {
            if let Some(rps) = rest.split_once(" requests per second").map(|(r, _)| r.trim()) {
                let rps: f64 = rps.parse().unwrap_or_else(|_| panic!("rate in {line:?}"));
                assert!(rps > 0.0, "{line}");
                seen.push(name.trim().to_string());
            }
        }
    }
    assert_eq!(seen, DEFAULT_TESTS, "\n{stdout}");
    // Without -r every INCR hits one key: the server really executed all of them.
    let mut st = store.lock().unwrap();
    assert_eq!(st.get(b"counter:__rand_int__", 0), Some(&kv::Value::Str(n.to_string().into_bytes())));
}

fn http_server(site: Site) -> (Server, Arc<AtomicU64>) {
    let requests = Arc::new(AtomicU64::new(0));
    let counted = requests.clone();
    let site = Arc::new(site);
    let server = Server::start(move |conn| {
        let mut session = http::Session::new();
        let site = site.clone();
        let counted = counted.clone();
        pump(conn, |input, out| {
            let before = session.requests();
            let status = [("requests", counted.load(Ordering::Relaxed))];
            let action = session.feed(input, &site, &status, out);
            counted.fetch_add(session.requests() - before, Ordering::Relaxed);
            action
        });
    });
    (server, requests)
}

#[test]
fn curl_fetches_the_page_byte_for_byte() {
    if !have("curl") {
        return;
    }
    let site = Site::new(10_000);
    let want = site.index().to_vec();
    let (server, _) = http_server(site);
    let url = |path: &str| format!("http://127.0.0.1:{}{path}", server.port);
    let out = run(Command::new("curl").args(["-sS", "--fail", &url("/")]));
    assert_eq!(out.stdout, want);
    let out = run(Command::new("curl").args(["-sS", "--http1.0", &url("/status")]));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "requests 1\n");
    let out = run(Command::new("curl").args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", &url("/missing")]));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "404");
    // Two requests over one kept-alive connection.
    let out = run(Command::new("curl").args(["-sS", "-v", &url("/"), &url("/")]));
    assert_eq!(out.stdout, [want.clone(), want].concat());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Re-using existing connection"), "keep-alive was not used");
}

#[test]
fn wrk_gets_only_200s() {
    if !have("wrk") {
        return;
    }
    let (server, requests) = http_server(Site::new(1024));
    let out = Command::new("wrk")
        .args(["-t1", "-c10", "-d1s", &format!("http://127.0.0.1:{}/", server.port)])
        .output()
        .expect("run wrk");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let done: u64 = text
        .lines()
        .find_map(|l| l.trim().split_once(" requests in ").map(|(n, _)| n.trim().parse().unwrap()))
        .unwrap_or_else(|| panic!("no request count in:\n{text}"));
    assert!(done > 100, "{text}");
    assert!(!text.contains("Non-2xx") && !text.contains("Socket errors"), "{text}");
    assert!(requests.load(Ordering::Relaxed) >= done, "the sessions answered every request wrk counted");
}
