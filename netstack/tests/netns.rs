//! Real clients: udp-echo runs on a net_af_packet port on one end of a veth pair; from a network namespace on the
//! other end, the kernel's `ping` gets replies, a UDP datagram sent by a tiny python3 client comes back byte for
//! byte, and netstack-ctl shows the peer's ARP entry. Both namespaces are created here and removed on drop
//! (panics included); nothing is sent anywhere else.
//!
//! Needs root, `ip`, `ping`, `ethtool` and `python3`; without them the test says why and passes, or fails under
//! NETNS_TESTS_REQUIRED=1 (scripts/test.sh sets it).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

fn usable() -> bool {
    let reason = if unsafe_geteuid() != 0 {
        "needs root to create network namespaces"
    } else if !["ip", "ping", "ethtool", "python3"].iter().all(|t| have(t)) {
        "needs ip, ping, ethtool and python3 (bash scripts/setup.sh installs them)"
    } else {
        return true;
    };
    if std::env::var("NETNS_TESTS_REQUIRED").is_ok_and(|v| v == "1") {
        panic!("NETNS_TESTS_REQUIRED=1 but the test cannot run: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
    false
}

fn unsafe_geteuid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd} {args:?}:\n{text}");
    text
}

/// Network namespaces (and the interfaces in them) and a scratch directory, removed on drop.
struct Netns(Vec<String>, PathBuf);

impl Netns {
    fn new(names: &[&str]) -> Netns {
        let ns: Vec<String> = names.iter().map(|n| format!("{n}-{}", std::process::id())).collect();
        let dir = std::env::temp_dir().join(format!("netstack-netns-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let guard = Netns(ns, dir);
        for n in &guard.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
            run("ip", &["netns", "add", n]);
            run("ip", &["-n", n, "link", "set", "lo", "up"]);
            let _ = Command::new("ip")
                .args(["netns", "exec", n, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
                .output();
        }
        guard
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

/// The server process, interrupted (then killed) on drop.
struct Server {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Server {
    fn wait_for(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(l) = self.seen.iter().find(|l| l.contains(needle)) {
                return l.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!("no `{needle}` from udp-echo; it printed:\n{}", self.seen.join("\n")),
            }
        }
    }

    fn interrupt(&mut self) -> String {
        // SAFETY: kill has no memory preconditions; the pid is our own child's.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "udp-echo did not stop on SIGINT");
            std::thread::sleep(Duration::from_millis(20));
        }
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
            self.seen.push(l);
        }
        assert!(self.child.wait().unwrap().success(), "udp-echo failed:\n{}", self.seen.join("\n"));
        self.seen.join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn counter(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).map(|v| v.trim().parse::<u64>().unwrap()))
        .unwrap_or_else(|| panic!("no counter {name} in:\n{text}"))
}

const ECHO_CLIENT: &str = r#"
import socket, sys
data = bytes(range(256)) * 4 + b"netstack"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
for attempt in range(5):
    s.sendto(data, (sys.argv[1], int(sys.argv[2])))
    try:
        reply, peer = s.recvfrom(4096)
        break
    except socket.timeout:
        continue
else:
    sys.exit("no reply")
sys.exit(0 if reply == data and peer == (sys.argv[1], int(sys.argv[2])) else "reply differs: %r" % reply[:64])
"#;

#[test]
fn kernel_ping_and_udp_client_reach_udp_echo_over_veth() {
    if !usable() {
        return;
    }
    let ns = Netns::new(&["nstk-cli", "nstk-srv"]);
    let (cli, srv) = (&ns.0[0], &ns.0[1]);
    run("ip", &["-n", cli, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", srv]);
    run("ip", &["-n", cli, "addr", "add", "10.193.0.1/24", "dev", "va"]);
    run("ip", &["-n", cli, "link", "set", "va", "up"]);
    run("ip", &["-n", srv, "link", "set", "vb", "up"]);
    // veth leaves UDP checksums to "hardware" that is not there; af_packet would hand the stack half-done sums.
    run("ip", &["netns", "exec", cli, "ethtool", "-K", "va", "tx", "off"]);
    let mac_va = run("ip", &["-n", cli, "-br", "link", "show", "va"]);
    let mac_va = mac_va.split_whitespace().nth(2).unwrap().to_owned();

    let config = ns.1.join("udp-echo.toml");
    std::fs::write(
        &config,
        format!(
            "lcores = \"0\"\n[port]\ndevice = \"net_af_packet0,iface=vb\"\n[ipv4]\naddress = \"10.193.0.2/24\"\n\
             [memory]\npool_size = 2048\n[control]\nname = \"echo-test\"\ndir = \"{}\"\n",
            ns.1.display()
        ),
    )
    .unwrap();
    let mut child = Command::new("ip")
        .args(["netns", "exec", srv, env!("CARGO_BIN_EXE_udp-echo"), "--config"])
        .arg(&config)
        .args(["--idle-sleep-us", "200", "--port", "7007"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel();
    for pipe in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
    }
    let mut server = Server { child, lines, seen: Vec::new() };
    let up = server.wait_for("lcore 0 up", Duration::from_secs(20));
    assert!(up.contains("inet 10.193.0.2/24"), "{up}");

    let ping = run("ip", &["netns", "exec", cli, "ping", "-c", "3", "-i", "0.2", "-W", "2", "10.193.0.2"]);
    assert!(ping.contains("3 received"), "{ping}");
    let echo = Command::new("ip")
        .args(["netns", "exec", cli, "python3", "-c", ECHO_CLIENT, "10.193.0.2", "7007"])
        .output()
        .unwrap();
    assert!(echo.status.success(), "UDP echo: {}", String::from_utf8_lossy(&echo.stderr));

    let ctl = |what: &str| run(env!("CARGO_BIN_EXE_netstack-ctl"), &["--config", config.to_str().unwrap(), what]);
    let arp = ctl("arp");
    assert!(
        arp.lines().any(|l| l.starts_with("10.193.0.1 ") && l.to_lowercase().contains(&mac_va.to_lowercase())),
        "no ARP entry for 10.193.0.1 at {mac_va}:\n{arp}"
    );
    let sockets = ctl("sockets");
    assert!(sockets.contains("udp") && sockets.contains("10.193.0.2:7007"), "{sockets}");
    let addr = ctl("addr");
    assert!(addr.contains("inet 10.193.0.2/24"), "{addr}");

    let out = server.interrupt();
    assert!(counter(&out, "icmp_echo_replies") >= 3, "{out}");
    assert!(counter(&out, "udp_rx_datagrams") >= 1 && counter(&out, "udp_tx_datagrams") >= 1, "{out}");
    assert!(!ns.1.join("netstack-echo-test.0.sock").exists(), "control socket left behind");
}
