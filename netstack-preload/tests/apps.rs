//! Unmodified applications under `LD_PRELOAD=libnetstack_preload.so`: every intercepted call (tests/calls.py),
//! Debian's redis-server and nginx, each in a network namespace the test makes, its port an af_packet socket on
//! a veth (or a TAP) whose other end is a client namespace running the kernel's clients (redis-cli,
//! redis-benchmark, curl, wrk, python3). Namespaces, links and files are removed on drop; nothing is sent
//! anywhere else.
//!
//! Needs root and the tools scripts/setup.sh installs; without them a test says why and passes, or fails under
//! NETNS_TESTS_REQUIRED=1 or REAL_CLIENT_TESTS_REQUIRED=1 (scripts/test.sh sets both).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const PYTHON: &str = "/usr/bin/python3";

/// Whether the test can run (root and `tools`); otherwise says why and returns false, or panics when
/// NETNS_TESTS_REQUIRED=1 or REAL_CLIENT_TESTS_REQUIRED=1.
fn usable(tools: &[&str]) -> bool {
    testkit::netns::usable_for(&["NETNS_TESTS_REQUIRED", "REAL_CLIENT_TESTS_REQUIRED"], tools)
}

fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("{cmd}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd} {args:?}:\n{text}");
    text
}

/// The library, built beside this test (cargo builds the crate's cdylib with its tests).
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    for p in [deps.join("libnetstack_preload.so"), deps.parent().unwrap().join("libnetstack_preload.so")] {
        if p.exists() {
            return p;
        }
    }
    panic!("libnetstack_preload.so not found beside {}", exe.display());
}

/// The port kind under the application.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Link {
    /// A veth pair: the application's namespace holds one end (no kernel address), the client namespace the
    /// other; the port is af_packet on the application's end.
    Veth,
    /// A TAP in the application's namespace, whose kernel side is the client's interface (one namespace).
    Tap,
}

/// The namespaces, links and scratch directory of one test.
struct Net {
    app_ns: String,
    cli_ns: String,
    dir: PathBuf,
    app_ip: String,
    cli_ip: String,
    device: String,
}

impl Net {
    fn new(tag: &str, subnet: &str, link: Link) -> Net {
        let pid = std::process::id() % 100_000;
        let app_ns = format!("pl{tag}a{pid}");
        let cli_ns = if link == Link::Tap { app_ns.clone() } else { format!("pl{tag}c{pid}") };
        let dir = std::env::temp_dir().join(format!("netstack-preload-{tag}-{pid}"));
        for ns in [&app_ns, &cli_ns] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let net = Net {
            app_ns: app_ns.clone(),
            cli_ns: cli_ns.clone(),
            dir,
            app_ip: format!("{subnet}.1"),
            cli_ip: format!("{subnet}.2"),
            device: String::new(),
        };
        run("ip", &["netns", "add", &app_ns]);
        if cli_ns != app_ns {
            run("ip", &["netns", "add", &cli_ns]);
        }
        let mut net = net;
        for ns in [&app_ns, &cli_ns] {
            run("ip", &["-n", ns, "link", "set", "lo", "up"]);
            let _ = Command::new("ip")
                .args(["netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
                .output();
        }
        let cli_addr = format!("{}/24", net.cli_ip);
        match link {
            Link::Veth => {
                run(
                    "ip",
                    &["-n", &cli_ns, "link", "add", "cli0", "type", "veth", "peer", "name", "app0", "netns", &app_ns],
                );
                run("ip", &["-n", &cli_ns, "addr", "add", &cli_addr, "dev", "cli0"]);
                run("ip", &["-n", &cli_ns, "link", "set", "cli0", "up"]);
                run("ip", &["-n", &app_ns, "link", "set", "app0", "up"]);
                // veth leaves checksums to "hardware" that is not there; af_packet would hand the stack half sums.
                run("ip", &["netns", "exec", &cli_ns, "ethtool", "-K", "cli0", "tx", "off"]);
                net.device = "net_af_packet0,iface=app0".into();
            }
            Link::Tap => {
                run("ip", &["-n", &app_ns, "tuntap", "add", "dev", "tap0", "mode", "tap"]);
                run("ip", &["-n", &app_ns, "addr", "add", &cli_addr, "dev", "tap0"]);
                run("ip", &["-n", &app_ns, "link", "set", "tap0", "up"]);
                net.device = "net_tap0,iface=tap0".into();
            }
        }
        net
    }

    /// The configuration the library reads.
    fn config(&self, name: &str) -> PathBuf {
        let text = format!(
            "lcores = \"0\"\n[port]\ndevice = \"{}\"\n[ipv4]\naddress = \"{}/24\"\n\
             [memory]\npool_size = 16383\n[tcp]\nrx_buffer = 65536\ntx_buffer = 65536\nbacklog = 256\n\
             [control]\nname = \"{name}\"\ndir = \"{}\"\n",
            self.device,
            self.app_ip,
            self.dir.display()
        );
        let path = self.dir.join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A command in the client namespace.
    fn cli(&self, cmd: &str, args: &[&str]) -> Output {
        Command::new("ip").args(["netns", "exec", &self.cli_ns, "timeout", "120", cmd]).args(args).output().unwrap()
    }

    /// A command in the client namespace that must succeed; its stdout.
    fn cli_ok(&self, cmd: &str, args: &[&str]) -> String {
        let out = self.cli(cmd, args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{cmd} {args:?}: {text}\n{}", String::from_utf8_lossy(&out.stderr));
        text
    }

    /// Starts `cmd args` in the application namespace under the library.
    fn app(&self, name: &'static str, config: &Path, cmd: &str, args: &[&str]) -> App {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.app_ns, cmd])
            .args(args)
            .env("LD_PRELOAD", library())
            .env("NETSTACK_CONFIG", config)
            .current_dir(&self.dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel();
        let pipes: [Box<dyn std::io::Read + Send>; 2] =
            [Box::new(child.stdout.take().unwrap()), Box::new(child.stderr.take().unwrap())];
        for pipe in pipes {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for l in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let _ = tx.send(l);
                }
            });
        }
        App { name, child, lines, seen: Vec::new() }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in [&self.app_ns, &self.cli_ns] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An application process, killed on drop.
struct App {
    name: &'static str,
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl App {
    fn wait_for(&mut self, needle: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.seen.iter().any(|l| l.contains(needle)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!("no `{needle}` from {}; it printed:\n{}", self.name, self.seen.join("\n")),
            }
        }
    }

    fn output(&mut self) -> String {
        while let Ok(l) = self.lines.try_recv() {
            self.seen.push(l);
        }
        self.seen.join("\n")
    }

    /// Waits for the process to exit; its status and output.
    fn wait(&mut self, timeout: Duration) -> (std::process::ExitStatus, String) {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(100));
                return (s, self.output());
            }
            if Instant::now() >= deadline {
                let out = self.output();
                panic!("{} did not exit:\n{out}", self.name);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `f` until it returns Some, for up to `secs`.
fn until<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn tests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests")
}

#[test]
fn every_intercepted_call_on_stack_sockets() {
    if !usable(&["ip", "ethtool", PYTHON]) {
        return;
    }
    let net = Net::new("k", "10.231.0", Link::Veth);
    let config = net.config("calls");
    let peer_py = tests_dir().join("peer.py");
    let mut peer = Command::new("ip")
        .args(["netns", "exec", &net.cli_ns, PYTHON, peer_py.to_str().unwrap(), &net.cli_ip])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    BufReader::new(peer.stdout.as_mut().unwrap()).read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), "ready");
    let calls_py = tests_dir().join("calls.py");
    let mut app =
        net.app("calls.py", &config, PYTHON, &[calls_py.to_str().unwrap(), &net.app_ip, &net.cli_ip, &net.cli_ns]);
    let (status, out) = app.wait(Duration::from_secs(180));
    let _ = peer.kill();
    let _ = peer.wait();
    assert!(status.success() && out.contains("ALL OK"), "calls.py failed:\n{out}");
    assert!(out.contains("up: inet 10.231.0.1/24"), "the stack came up:\n{out}");
    eprintln!("{out}");
}

/// A signal handler that runs while a wait spins in user space: the wait fails with EINTR, as the kernel's do
/// (nginx stops on SIGTERM that way). Python raises from the handler, so a wait that returns EINTR raises; one
/// that swallowed the signal would hang until the test's timeout.
const SIGNAL_DURING_SPIN: &str = r#"
import select, signal, socket, sys, time
host = sys.argv[1]
class Woke(Exception):
    pass
def on_alarm(sig, frame):
    raise Woke()
signal.signal(signal.SIGALRM, on_alarm)
s = socket.socket()
s.bind((host, 7100))
s.listen()
ep = select.epoll()
ep.register(s.fileno(), select.EPOLLIN)
p = select.poll()
p.register(s.fileno(), select.POLLIN)
waits = [("epoll_wait", lambda: ep.poll(-1)), ("poll", lambda: p.poll()), ("select", lambda: select.select([s], [], []))]
for name, wait in waits:
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    start = time.monotonic()
    try:
        got = wait()
        sys.exit(f"{name} returned {got} without the signal")
    except Woke:
        pass
    took = time.monotonic() - start
    assert took < 3, f"{name} saw the signal after {took:.2f} s"
    print(f"{name}: EINTR after {took:.3f} s")
old = signal.signal(signal.SIGALRM, signal.SIG_DFL)
assert old is on_alarm, old
print("signals ok")
"#;

#[test]
fn a_signal_during_the_idle_spin_interrupts_the_wait() {
    if !usable(&["ip", "ethtool", PYTHON]) {
        return;
    }
    let net = Net::new("s", "10.236.0", Link::Veth);
    let config = net.config("signals");
    let out = Command::new("ip")
        .args(["netns", "exec", &net.app_ns, "timeout", "30", PYTHON, "-c", SIGNAL_DURING_SPIN, &net.app_ip])
        .env("LD_PRELOAD", library())
        .env("NETSTACK_CONFIG", &config)
        // Spin for a minute after the last traffic: every signal lands while the wait is in user space.
        .env("NETSTACK_PRELOAD_SPIN_US", "60000000")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("signals ok"), "{}:\n{text}", out.status);
    assert!(text.contains("up: inet 10.236.0.1/24"), "the stack came up:\n{text}");
    eprintln!("{text}");
}

fn redis_cli(net: &Net, args: &[&str]) -> String {
    let mut a = vec!["-h", &net.app_ip, "-p", "6380"];
    a.extend_from_slice(args);
    net.cli_ok("redis-cli", &a)
}

fn start_redis(net: &Net, config: &Path) -> App {
    let dir = net.dir.to_str().unwrap().to_owned();
    let mut app = net.app(
        "redis-server",
        config,
        "redis-server",
        &[
            "--port",
            "6380",
            "--bind",
            &net.app_ip,
            "127.0.0.1",
            "--protected-mode",
            "no",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            &dir,
            "--maxclients",
            "4000",
        ],
    );
    app.wait_for("Ready to accept connections", Duration::from_secs(30));
    app
}

/// redis-benchmark 7.0's default tests, as named in its output.
use testkit::redis::BENCHMARK_DEFAULT_TESTS as DEFAULT_TESTS;

/// Runs redis-benchmark; the tests it reported with a positive rate.
fn redis_benchmark(net: &Net, args: &[&str]) -> Vec<String> {
    let mut a = vec!["-h", &net.app_ip, "-p", "6380", "-q"];
    a.extend_from_slice(args);
    let out = net.cli("redis-benchmark", &a);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "redis-benchmark {args:?}: {stdout}\n{stderr}");
    assert!(!stdout.to_lowercase().contains("error") && !stderr.to_lowercase().contains("error"), "{stdout}\n{stderr}");
    let mut seen = Vec::new();
    for line in stdout.split(['\r', '\n']) {
        if let Some((name, rest)) = line.split_once(": ") {
            if let Some((rps, _)) = rest.split_once(" requests per second") {
                let rps: f64 = rps.trim().parse().unwrap_or_else(|_| panic!("rate in {line:?}"));
                assert!(rps > 0.0, "{line}");
                seen.push(name.trim().to_owned());
            }
        }
    }
    seen
}

fn info_field(info: &str, field: &str) -> Option<String> {
    info.lines().find_map(|l| l.strip_prefix(&format!("{field}:")).map(|v| v.trim().to_owned()))
}

/// 1,000 clients open at once, each sends PING and must read +PONG; with garbage, half commands and clients that
/// vanish (reset) beside them, and a checked SET/GET client after each kind.
const CROWD: &str = r#"
import os, random, resource, socket, struct, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def good(tag):
    c = socket.create_connection((host, port), timeout=20)
    c.sendall(b"*3\r\n$3\r\nSET\r\n$4\r\ngood\r\n$%d\r\n%s\r\n" % (len(tag), tag))
    assert c.recv(100) == b"+OK\r\n"
    c.sendall(b"*2\r\n$3\r\nGET\r\n$4\r\ngood\r\n")
    want = b"$%d\r\n%s\r\n" % (len(tag), tag)
    got = b""
    while len(got) < len(want):
        got += c.recv(100)
    assert got == want, got
    c.close()
cs = [socket.create_connection((host, port), timeout=30) for _ in range(n)]
for c in cs:
    c.sendall(b"PING\r\n")
for c in cs:
    got = b""
    while not got.endswith(b"\r\n"):
        got += c.recv(16)
    assert got == b"+PONG\r\n", got
good(b"after-crowd")
rough = []
for i in range(50):
    r = socket.create_connection((host, port), timeout=10)
    kind = i % 3
    if kind == 0:
        r.sendall(os.urandom(200) + b"\r\n")
    elif kind == 1:
        r.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk")
    else:
        r.sendall(b"*2\r\n$3\r\nGET\r\n")
        r.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        r.close()
        continue
    rough.append(r)
    if i % 10 == 0:
        good(b"beside-rough-%d" % i)
for r in rough:
    r.close()
good(b"after-rough")
for c in cs:
    c.close()
print("crowd ok", n)
"#;

/// The stack's counter `name` from its control socket (`netstack-ctl counters`), read while the server runs.
fn stack_counter(net: &Net, name: &str) -> u64 {
    let path = netstack::config::control_socket_path(&net.dir, "redis", 0);
    let text = netstack::control::request(&path, "counters").unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some(name)).then(|| words.next()?.parse().ok()).flatten()
        })
        .unwrap_or_else(|| panic!("no counter {name} in:\n{text}"))
}

/// One client, one request at a time (`redis-benchmark -c 1`, issue 25's latency shape): each request is one
/// segment in and its reply one segment out, the reply carrying the ACK. A reply that left after smoltcp's ACK
/// delay (a pure ACK first) or split in two would add a segment per request and cost the client a round trip.
fn one_connection_is_one_segment_each_way(net: &Net) {
    const REQUESTS: u64 = 2000;
    // Beside the requests: redis-benchmark's CONFIG GET connection and each connection's handshake and close.
    const SLACK: u64 = 24;
    let before: Vec<u64> =
        ["tcp_rx_segments", "tcp_tx_segments", "tcp_retransmissions"].iter().map(|c| stack_counter(net, c)).collect();
    let seen = redis_benchmark(net, &["-n", &REQUESTS.to_string(), "-c", "1", "-P", "1", "-t", "get"]);
    assert_eq!(seen, ["GET"], "redis-benchmark -c 1 -t get");
    let after: Vec<u64> =
        ["tcp_rx_segments", "tcp_tx_segments", "tcp_retransmissions"].iter().map(|c| stack_counter(net, c)).collect();
    let (rx, tx, retx) = (after[0] - before[0], after[1] - before[1], after[2] - before[2]);
    eprintln!("-c 1: {rx} segments in, {tx} out, {retx} retransmitted for {REQUESTS} requests");
    // smoltcp's minimum retransmission timeout is 10 ms (Linux's 200 ms): a client the loaded machine stalls
    // longer than that gets a reply again, and its duplicate ACK comes back. A few, not a flood.
    assert!(retx <= REQUESTS / 20, "{retx} retransmissions during {REQUESTS} one-at-a-time requests");
    assert!((REQUESTS..=REQUESTS + SLACK + retx).contains(&rx), "{rx} segments received for {REQUESTS} requests");
    assert!(
        (REQUESTS..=REQUESTS + SLACK + retx).contains(&tx),
        "{tx} segments sent for {REQUESTS} replies ({retx} retransmitted): a reply should carry its ACK, in one segment"
    );
}

fn redis_suite(link: Link, tag: &str, subnet: &str, full: bool) {
    if !usable(&["ip", "ethtool", "redis-server", "redis-cli", "redis-benchmark", "redis-check-rdb", PYTHON]) {
        return;
    }
    let net = Net::new(tag, subnet, link);
    let config = net.config("redis");
    let mut redis = start_redis(&net, &config);
    assert_eq!(redis_cli(&net, &["SET", "greeting", "hello world"]), "OK\n");
    assert_eq!(redis_cli(&net, &["GET", "greeting"]), "hello world\n");
    assert_eq!(redis_cli(&net, &["RPUSH", "l", "a", "b", "c"]), "3\n");
    assert_eq!(redis_cli(&net, &["LRANGE", "l", "0", "-1"]), "a\nb\nc\n");
    assert_eq!(redis_cli(&net, &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]), "OK\n");
    assert_eq!(redis_cli(&net, &["CONFIG", "GET", "maxmemory-policy"]), "maxmemory-policy\nallkeys-lru\n");
    assert_eq!(
        redis_cli(&net, &["EVAL", "return redis.call('INCRBY', KEYS[1], ARGV[1]) * 2", "1", "counter", "21"]),
        "42\n"
    );
    // The admin socket on 127.0.0.1 is the kernel's, in the same process.
    let admin = Command::new("ip")
        .args(["netns", "exec", &net.app_ns, "redis-cli", "-h", "127.0.0.1", "-p", "6380", "GET", "greeting"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&admin.stdout), "hello world\n", "{admin:?}");
    one_connection_is_one_segment_each_way(&net);
    let n = if full { "10000" } else { "2000" };
    let seen = redis_benchmark(&net, &["-n", n, "-c", "50"]);
    for t in DEFAULT_TESTS {
        assert!(seen.iter().any(|s| s == t), "redis-benchmark did not report {t}: {seen:?}");
    }
    if full {
        // BGSAVE (a fork) while clients keep writing: the dump file is valid and the server keeps serving.
        let dir = net.dir.to_str().unwrap().to_owned();
        let load = Command::new("ip")
            .args(["netns", "exec", &net.cli_ns, "redis-benchmark", "-h", &net.app_ip, "-p", "6380", "-q"])
            .args(["-n", "20000", "-c", "20", "-t", "set", "-r", "10000"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(redis_cli(&net, &["BGSAVE"]).contains("Background saving started"));
        let mut load = load;
        until(60, "the background save", || {
            let info = redis_cli(&net, &["INFO", "persistence"]);
            (info_field(&info, "rdb_bgsave_in_progress").as_deref() == Some("0")
                && info_field(&info, "rdb_last_bgsave_status").as_deref() == Some("ok")
                && info_field(&info, "rdb_changes_since_last_save").is_some())
            .then_some(())
        });
        assert!(load.wait().unwrap().success(), "the load beside BGSAVE failed");
        let check = run("redis-check-rdb", &[&format!("{dir}/dump.rdb")]);
        assert!(check.contains("RDB looks OK"), "{check}");
        assert_eq!(redis_cli(&net, &["GET", "greeting"]), "hello world\n", "served after the fork");

        let crowd = net.cli_ok(PYTHON, &["-c", CROWD, &net.app_ip, "6380", "1000"]);
        assert!(crowd.contains("crowd ok 1000"), "{crowd}");
        assert_eq!(redis_cli(&net, &["GET", "good"]), "after-rough\n");
        // Every crowd and rough client is released once its FIN (or reset) is handled.
        until(30, "the crowd's connections to be released", || {
            let clients = redis_cli(&net, &["INFO", "clients"]);
            let connected: u32 = info_field(&clients, "connected_clients").unwrap().parse().unwrap();
            (connected <= 2).then_some(())
        });
    }
    assert!(redis.output().contains("up: inet"), "{}", redis.output());
    let _ = Command::new("ip")
        .args(["netns", "exec", &net.app_ns, "redis-cli", "-h", "127.0.0.1", "-p", "6380", "SHUTDOWN", "NOSAVE"])
        .output();
    let (status, out) = redis.wait(Duration::from_secs(20));
    assert!(status.success(), "redis-server exited with {status}:\n{out}");
}

#[test]
fn redis_server_over_veth() {
    redis_suite(Link::Veth, "r", "10.232.0", true);
}

#[test]
fn redis_server_over_tap() {
    redis_suite(Link::Tap, "t", "10.233.0", false);
}

fn nginx_conf(net: &Net, master: bool) -> PathBuf {
    let d = net.dir.display();
    let text = format!(
        // The worker brings the port up, so it keeps root (af_packet needs CAP_NET_RAW; nginx's default user
        // would drop it).
        "daemon off;\nuser root;\nmaster_process {};\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log stderr notice;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n  keepalive_requests 100000;\n\
         client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi;\n\
         uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
         server {{ listen {}:8080; root {d}/www; }}\n}}\n",
        if master { "on" } else { "off" },
        net.app_ip
    );
    let path = net.dir.join(format!("nginx-{master}.conf"));
    std::fs::write(&path, text).unwrap();
    path
}

fn nginx_suite(master: bool, tag: &str, subnet: &str) {
    if !usable(&["ip", "ethtool", "nginx", "curl", "wrk", "sha256sum"]) {
        return;
    }
    let net = Net::new(tag, subnet, Link::Veth);
    let www = net.dir.join("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("index.html"), "<h1>nginx on netstack</h1>\n").unwrap();
    let big: Vec<u8> = (0..10u32 << 20).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(www.join("big.bin"), &big).unwrap();
    let config = net.config("nginx");
    let conf = nginx_conf(&net, master);
    let mut nginx = net.app("nginx", &config, "nginx", &["-c", conf.to_str().unwrap(), "-e", "stderr"]);
    let base = format!("http://{}:8080", net.app_ip);
    let page = until(30, "nginx to answer", || {
        let out = net.cli("curl", &["-s", "--max-time", "2", &format!("{base}/")]);
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    });
    assert_eq!(page, "<h1>nginx on netstack</h1>\n");
    // Keep-alive: two requests on one connection.
    let both = net.cli("curl", &["-sv", "--max-time", "10", &format!("{base}/"), &format!("{base}/")]);
    let err = String::from_utf8_lossy(&both.stderr);
    assert!(both.status.success() && err.contains("Re-using existing connection"), "{err}");
    assert_eq!(String::from_utf8_lossy(&both.stdout).matches("nginx on netstack").count(), 2);
    // A 10 MB file through sendfile, intact.
    let got = net.dir.join("big.got");
    net.cli_ok("curl", &["-s", "--max-time", "60", "-o", got.to_str().unwrap(), &format!("{base}/big.bin")]);
    assert_eq!(std::fs::read(&got).unwrap(), big, "10 MB file differs");
    let sum = |p: &Path| run("sha256sum", &[p.to_str().unwrap()]).split_whitespace().next().unwrap().to_owned();
    assert_eq!(sum(&got), sum(&www.join("big.bin")));
    for conns in ["100", "1000"] {
        let out = net.cli_ok("wrk", &["-t", "2", "-c", conns, "-d", "3s", &format!("{base}/")]);
        let requests: u64 = out
            .lines()
            .find_map(|l| l.trim().split_once(" requests in ").map(|(n, _)| n.trim().parse().unwrap()))
            .unwrap_or_else(|| panic!("wrk printed no total:\n{out}"));
        assert!(requests > 100, "{out}");
        assert!(!out.contains("Non-2xx"), "{out}");
        if conns == "100" {
            assert!(!out.contains("Socket errors"), "{out}");
        } else {
            // 1,000 connections on one stack: connects may be retried, but every answer is a 200.
            let errors = out.lines().find(|l| l.contains("Socket errors")).unwrap_or("");
            assert!(!errors.contains("read") || errors.contains("read 0"), "{out}");
        }
        eprintln!("wrk -c {conns}:\n{out}");
    }
    let out = nginx.output();
    assert!(out.contains("up: inet"), "{out}");
    if master {
        assert_eq!(out.matches("up: inet").count(), 1, "only the worker brings the stack up:\n{out}");
    }
    let pid = std::fs::read_to_string(net.dir.join("nginx.pid")).unwrap();
    run("kill", &["-QUIT", pid.trim()]);
    let (status, out) = nginx.wait(Duration::from_secs(20));
    assert!(status.success(), "nginx exited with {status}:\n{out}");
}

#[test]
fn nginx_one_process_over_veth() {
    nginx_suite(false, "n", "10.234.0");
}

#[test]
fn nginx_master_and_one_worker_over_veth() {
    nginx_suite(true, "m", "10.235.0");
}
