//! The kernel's TCP talks to ours: a test stack runs a TCP echo server on a net_af_packet port opened inside a
//! network namespace (from a thread that entered it), and python3 clients in a second namespace open 50
//! connections at once over a veth pair, each sending 64 KB and reading it back byte for byte, then closing.
//! Both namespaces are created here and removed on drop; nothing is sent anywhere else.
//!
//! Needs root, `ip`, `ethtool` and `python3`; without them the test says why and passes, or fails under
//! NETNS_TESTS_REQUIRED=1.

use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hugepage::Allocator;
use netstack::{Counters, Error, EventKind, Handle, Stack, StackConfig};
use pktio::{Mempool, PoolConfig, PortConfig};

fn usable() -> bool {
    testkit::netns::usable(&["ip", "ethtool", "python3"])
}

use testkit::netns::{run, Netns};

const CLIENTS: &str = r#"
import socket, sys, threading
addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
errors = []
def client(i):
    try:
        data = bytes((i * 31 + k) % 251 for k in range(65536))
        s = socket.create_connection((addr, port), timeout=10)
        s.sendall(data)
        got = b""
        while len(got) < len(data):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        s.close()
        if got != data:
            errors.append("connection %d: %d bytes back, differ" % (i, len(got)))
    except Exception as e:
        errors.append("connection %d: %r" % (i, e))
threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
for t in threads: t.start()
for t in threads: t.join()
sys.exit("\n".join(errors) if errors else 0)
"#;

/// A TCP echo server on `stack` until `stop`; echoes what it can write, keeps the rest for later.
fn echo_server(mut stack: Stack, stop: Arc<AtomicBool>) -> (Counters, usize) {
    let listener = stack.listen(7000).unwrap();
    let mut events = Vec::new();
    let mut pending: HashMap<Handle, Vec<u8>> = HashMap::new();
    let mut buf = vec![0u8; 16384];
    while !stop.load(Ordering::Relaxed) {
        stack.poll(&mut events);
        for e in events.clone() {
            match e.kind {
                EventKind::Accepted => {
                    while let Ok(h) = stack.accept(listener) {
                        pending.insert(h, Vec::new());
                    }
                }
                EventKind::Readable | EventKind::Writable | EventKind::PeerClosed => {
                    let Some(out) = pending.get_mut(&e.handle) else { continue };
                    let mut eof = false;
                    if out.len() < 65536 {
                        match stack.read(e.handle, &mut buf) {
                            Ok(0) => eof = true,
                            Ok(n) => out.extend_from_slice(&buf[..n]),
                            Err(Error::WouldBlock) => {}
                            Err(err) => panic!("read: {err}"),
                        }
                    }
                    if !out.is_empty() {
                        if let Ok(n) = stack.write(e.handle, out) {
                            out.drain(..n);
                        }
                    }
                    if eof && out.is_empty() {
                        stack.close(e.handle).unwrap();
                        pending.remove(&e.handle);
                    }
                }
                EventKind::Closed => {
                    stack.close(e.handle).unwrap();
                    pending.remove(&e.handle);
                }
                EventKind::Connected => {}
            }
        }
        // Data left to echo waits for room: try again every poll.
        for (h, out) in pending.iter_mut().filter(|(_, o)| !o.is_empty()) {
            if let Ok(n) = stack.write(*h, out) {
                out.drain(..n);
            }
        }
        if events.is_empty() {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    // Let the last FIN exchanges finish.
    for _ in 0..200 {
        stack.poll(&mut events);
        std::thread::sleep(Duration::from_millis(1));
    }
    (*stack.counters(), stack.active_connections())
}

#[test]
fn kernel_tcp_clients_echo_through_netstack_over_veth() {
    if !usable() {
        return;
    }
    let ns = Netns::new(&["nstk-tcpc", "nstk-tcps"]);
    for i in 0..2 {
        ns.sysctl(i, "net.ipv6.conf.all.disable_ipv6=1");
    }
    let (cli, srv) = (ns.0[0].clone(), ns.0[1].clone());
    run("ip", &["-n", &cli, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", &srv]);
    run("ip", &["-n", &cli, "addr", "add", "10.192.0.1/24", "dev", "va"]);
    run("ip", &["-n", &cli, "link", "set", "va", "up"]);
    run("ip", &["-n", &srv, "link", "set", "vb", "up"]);
    run("ip", &["netns", "exec", &cli, "ethtool", "-K", "va", "tx", "off"]);

    let stop = Arc::new(AtomicBool::new(false));
    let server = {
        let stop = stop.clone();
        let srv = srv.clone();
        std::thread::spawn(move || {
            // Only this thread enters the server namespace: the port's socket is opened in it.
            let f = std::fs::File::open(format!("/var/run/netns/{srv}")).unwrap();
            // SAFETY: setns on a valid namespace fd changes this thread's namespace only.
            assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns");
            let pool = Mempool::new(
                &format!("tcpns-{}", std::process::id()),
                &PoolConfig::with_size(4096),
                &Allocator::no_huge(),
            )
            .unwrap();
            let mut port = swports::open_vdev("net_af_packet0,iface=vb").unwrap();
            port.configure(&PortConfig::default()).unwrap();
            port.start(&pool).unwrap();
            let mut config = StackConfig::new(port.mac_addr(), "10.192.0.2".parse().unwrap(), 24);
            config.tcp_rx_buffer = 32768;
            config.tcp_tx_buffer = 32768;
            let stack = Stack::new(config, port.rx_queue(0).unwrap(), port.tx_queue(0).unwrap(), pool.clone());
            let result = echo_server(stack, stop);
            port.stop().unwrap();
            drop(port);
            (result, pool.in_use())
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let out = Command::new("ip")
        .args(["netns", "exec", &cli, "timeout", "60", "python3", "-c", CLIENTS, "10.192.0.2", "7000", "50"])
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let ((counters, active), in_use) = server.join().unwrap();
    assert!(
        out.status.success(),
        "clients: {}{}\n{counters}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!((counters.connections_opened, counters.connections_closed), (50, 50), "{counters}");
    assert_eq!(active, 0);
    assert_eq!(in_use, 0, "buffers leaked");
    assert!(counters.tcp_rx_segments > 50 * 16, "{counters}");
    eprintln!("{counters}");
}
