//! kv-server and http-server on netstack, against real clients: each test makes a network namespace and a veth
//! pair, runs the server on the host-side end through net_af_packet (the kernel keeps no address on it) and the
//! clients (ping, redis-cli, redis-benchmark, curl, python3) inside the namespace. The namespace, the veth pair
//! and a scratch directory are removed on drop (panics included); nothing is sent anywhere else.
//!
//! Needs root, `ip`, `ethtool`, `ping`, `python3`, `redis-cli`, `redis-benchmark` and `curl`; without them a test
//! says why and passes, or fails under NETNS_TESTS_REQUIRED=1 or REAL_CLIENT_TESTS_REQUIRED=1 (scripts/test.sh
//! sets both).

mod common;

use common::{counter, text, usable, Net, Server};

/// Connections open, all idle, then closed: none left held and every buffer back in the pool.
fn assert_drained(server: &Server) {
    server.ctl_until(30, "connections back to 0 and the pool full", |t| {
        counter(t, "connections_active") == 0 && counter(t, "mbufs_in_use") == 0
    });
}

/// Misbehaving clients beside a good one: garbage, half a command held open, half a command then a reset; the
/// good clients' answers are checked the whole time.
const ROUGH_CLIENTS: &str = r#"
import socket, struct, sys, threading, time
addr, port = sys.argv[1], int(sys.argv[2])
errors = []
stop = time.time() + 4
def cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out
def good(i):
    try:
        s = socket.create_connection((addr, port), timeout=10)
        f = s.makefile("rb")
        n = 0
        while time.time() < stop:
            key, val = b"good:%d" % i, b"v%d-%d" % (i, n)
            s.sendall(cmd(b"SET", key, val) + cmd(b"GET", key))
            if f.readline() != b"+OK\r\n":
                errors.append("good %d: SET reply" % i); return
            if f.readline() != b"$%d\r\n" % len(val) or f.readline() != val + b"\r\n":
                errors.append("good %d: GET reply differs" % i); return
            n += 1
        s.close()
        if n < 10:
            errors.append("good %d: only %d round trips" % (i, n))
    except Exception as e:
        errors.append("good %d: %r" % (i, e))
def garbage(i):
    try:
        s = socket.create_connection((addr, port), timeout=10)
        s.sendall(b"*2\r\n$3\r\nGET\r\n$-7\r\n" + bytes(range(256)))
        reply = s.recv(4096)
        if not reply.startswith(b"-ERR"):
            errors.append("garbage %d: reply %r" % (i, reply[:40]))
        s.close()
    except Exception as e:
        errors.append("garbage %d: %r" % (i, e))
held = []
def half(i, reset):
    try:
        s = socket.create_connection((addr, port), timeout=10)
        s.sendall(b"*3\r\n$3\r\nSET\r\n$5\r\nhalf" + b"x" * (i % 7))
        if reset:
            time.sleep(0.2)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        else:
            held.append(s)
    except Exception as e:
        errors.append("half %d: %r" % (i, e))
threads = [threading.Thread(target=good, args=(i,)) for i in range(4)]
threads += [threading.Thread(target=garbage, args=(i,)) for i in range(20)]
threads += [threading.Thread(target=half, args=(i, i % 2 == 0)) for i in range(40)]
for t in threads: t.start()
for t in threads: t.join()
for s in held:
    s.close()
sys.exit("\n".join(errors) if errors else 0)
"#;

#[test]
fn kv_server_serves_redis_cli_redis_benchmark_and_survives_rough_clients() {
    if !usable(&["ip", "ethtool", "ping", "python3", "redis-cli", "redis-benchmark"]) {
        return;
    }
    let net = Net::new("kvs", "10.221.0");
    let ip = net.server_ip.clone();
    let mut server = Server::start("kv-server", env!("CARGO_BIN_EXE_kv-server"), net.config("kv"), &["--port", "6390"]);

    let ping = text(&net.exec("ping", &["-c", "3", "-i", "0.2", "-W", "5", &ip]));
    assert!(ping.contains("3 received"), "{ping}");

    let set = net.exec("redis-cli", &["-h", &ip, "-p", "6390", "SET", "greeting", "hello netstack"]);
    assert_eq!(text(&set).trim(), "OK");
    let get = net.exec("redis-cli", &["-h", &ip, "-p", "6390", "GET", "greeting"]);
    assert_eq!(text(&get).trim(), "hello netstack");
    // A key that expires while nobody reads it: the sweep on the poll's clock removes it (counted at the end).
    let set = net.exec("redis-cli", &["-h", &ip, "-p", "6390", "SET", "short-lived", "x", "PX", "300"]);
    assert_eq!(text(&set).trim(), "OK");

    // Every default test of redis-benchmark: each prints a rate, and nothing reports an error.
    let bench = net.exec("redis-benchmark", &["-h", &ip, "-p", "6390", "-q", "-n", "100000", "-c", "50"]);
    let out = text(&bench).replace('\r', "\n");
    assert!(bench.status.success(), "{out}");
    let results: Vec<&str> = out.lines().filter(|l| l.contains("requests per second")).collect();
    let tests = ["PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP", "SADD"];
    let more = ["HSET", "SPOP", "ZADD", "ZPOPMIN", "LRANGE_100", "LRANGE_300", "LRANGE_500", "LRANGE_600", "MSET"];
    for t in tests.iter().chain(&more) {
        // LRANGE_100 prints as "LRANGE_100 (first 100 elements): ...", MSET as "MSET (10 keys): ...".
        let line = results.iter().find(|l| l.starts_with(&format!("{t}:")) || l.starts_with(&format!("{t} (")));
        let rate = line
            .and_then(|l| l.split_once(": "))
            .and_then(|(_, r)| r.split_whitespace().next())
            .and_then(|r| r.parse::<f64>().ok());
        assert!(rate.is_some_and(|r| r > 0.0), "redis-benchmark: no rate for {t}:\n{}", results.join("\n"));
    }
    let bad: Vec<&str> = out.lines().filter(|l| l.to_lowercase().contains("error")).collect();
    assert!(bad.is_empty(), "redis-benchmark reported errors:\n{}", bad.join("\n"));

    let rough = net.exec("python3", &["-c", ROUGH_CLIENTS, &ip, "6390"]);
    assert!(rough.status.success(), "rough clients:\n{}", text(&rough));
    assert_drained(&server);

    // netstack-ctl: the listener among the sockets, the client's ARP entry.
    let sockets = server.ctl("sockets");
    assert!(sockets.lines().any(|l| l.contains("tcp-listen") && l.contains(&format!("{ip}:6390"))), "{sockets}");
    let arp = server.ctl("arp");
    let client_ip = format!("{}.2 ", ip.rsplit_once('.').unwrap().0);
    assert!(arp.lines().any(|l| l.starts_with(&client_ip)), "no ARP entry for the client:\n{arp}");

    let report = server.interrupt();
    assert!(counter(&report, "kv_commands") >= 19 * 100_000, "{report}");
    assert!(counter(&report, "kv_expired_keys") >= 1, "the unread key with PX 300 was not swept: {report}");
    assert!(counter(&report, "icmp_echo_replies") >= 3, "{report}");
    assert_eq!(counter(&report, "server_active"), 0, "{report}");
    assert_eq!(counter(&report, "server_accepted"), counter(&report, "server_released"), "{report}");
}

/// 1,000 connections held open at once, each asking for the page once, then all closed.
const THOUSAND: &str = r#"
import socket, sys, time
addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
req = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"
socks, errors = [], []
for i in range(n):
    for attempt in range(20):
        try:
            socks.append(socket.create_connection((addr, port), timeout=20)); break
        except OSError as e:
            time.sleep(0.05)
    else:
        errors.append("connection %d: refused" % i)
for s in socks:
    s.sendall(req)
for i, s in enumerate(socks):
    got = b""
    while b"\r\n\r\n" not in got or len(got) < got.index(b"\r\n\r\n") + 4 + int(sys.argv[4]):
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    if not got.startswith(b"HTTP/1.1 200 OK\r\n"):
        errors.append("connection %d: %r" % (i, got[:40]))
print("open", len(socks))
for s in socks:
    s.close()
sys.exit("\n".join(errors[:10]) if errors else 0)
"#;

#[test]
fn http_server_serves_curl_and_a_thousand_concurrent_connections() {
    if !usable(&["ip", "ethtool", "python3", "curl"]) {
        return;
    }
    let net = Net::new("hts", "10.222.0");
    let ip = net.server_ip.clone();
    let page_bytes = 3000;
    let mut server = Server::start(
        "http-server",
        env!("CARGO_BIN_EXE_http-server"),
        net.config("http"),
        &["--port", "8090", "--page-bytes", &page_bytes.to_string()],
    );
    let url = format!("http://{ip}:8090/");
    let page = net.exec("curl", &["-sS", "--fail", &url]);
    assert!(page.status.success(), "{}", text(&page));
    assert_eq!(page.stdout, servers::http::Site::new(page_bytes).index(), "the page, byte for byte");

    let thousand = net.exec("python3", &["-c", THOUSAND, &ip, "8090", "1000", &page_bytes.to_string()]);
    assert!(thousand.status.success(), "1000 connections:\n{}", text(&thousand));
    assert!(text(&thousand).contains("open 1000"), "{}", text(&thousand));
    assert_drained(&server);

    let missing = net.exec("curl", &["-s", "-o", "/dev/null", "-w", "%{http_code}", &format!("{url}nope")]);
    assert_eq!(text(&missing), "404");
    let status = net.exec("curl", &["-sS", "--fail", &format!("{url}status")]);
    let status = text(&status);
    assert!(counter(&status, "responses_200") >= 1001, "{status}");
    assert_eq!(counter(&status, "responses_404"), 1, "{status}");
    // The page is refreshed once per poll: the connection asking for it may have been accepted and read in the
    // same poll, after the refresh (the exact count is checked in the report below).
    assert!(counter(&status, "connections_accepted") >= 1002, "{status}");
    assert_drained(&server);

    let report = server.interrupt();
    assert!(counter(&report, "responses_200") >= 1002, "{report}");
    assert_eq!(counter(&report, "server_active"), 0, "{report}");
    assert_eq!(counter(&report, "connections_opened"), 1003, "curl thrice and the thousand: {report}");
}
