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

fn usable() -> bool {
    testkit::netns::usable(&["ip", "ping", "ethtool", "python3"])
}

use testkit::netns::run;

/// Network namespaces (and the interfaces in them) and a scratch directory, removed on drop.
struct Netns(testkit::netns::Netns, testkit::TempDir);

impl Netns {
    fn new(names: &[&str]) -> Netns {
        let ns = testkit::netns::Netns::new(names);
        for i in 0..names.len() {
            ns.sysctl(i, "net.ipv6.conf.all.disable_ipv6=1");
        }
        Netns(ns, testkit::TempDir::new(&format!("netstack-{}", names[0])))
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

/// Two namespaces joined by a veth pair: `va` (`<subnet>.1/24`) in the client's, `vb` (no address) in the
/// server's. Returns them and va's MAC.
fn veth_pair(names: [&str; 2], subnet: &str) -> (Netns, String) {
    let ns = Netns::new(&names);
    let (cli, srv) = (&ns.0 .0[0], &ns.0 .0[1]);
    run("ip", &["-n", cli, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", srv]);
    run("ip", &["-n", cli, "addr", "add", &format!("{subnet}.1/24"), "dev", "va"]);
    run("ip", &["-n", cli, "link", "set", "va", "up"]);
    run("ip", &["-n", srv, "link", "set", "vb", "up"]);
    // veth leaves UDP checksums to "hardware" that is not there; af_packet would hand the stack half-done sums.
    run("ip", &["netns", "exec", cli, "ethtool", "-K", "va", "tx", "off"]);
    let mac = run("ip", &["-n", cli, "-br", "link", "show", "va"]);
    let mac = mac.split_whitespace().nth(2).unwrap().to_owned();
    (ns, mac)
}

/// Writes the configuration and starts udp-echo on port 7007 in the server namespace (sleeping 200 us after an
/// idle poll); returns once it is up.
fn spawn_echo(ns: &Netns, config_text: &str) -> (Server, PathBuf) {
    spawn_echo_with(ns, config_text, &["--idle-sleep-us", "200"])
}

/// As [`spawn_echo`], with `idle_args` as the runtime's idle options.
fn spawn_echo_with(ns: &Netns, config_text: &str, idle_args: &[&str]) -> (Server, PathBuf) {
    let config = ns.1 .0.join("udp-echo.toml");
    std::fs::write(&config, config_text).unwrap();
    let mut child = Command::new("ip")
        .args(["netns", "exec", &ns.0 .0[1], env!("CARGO_BIN_EXE_udp-echo"), "--config"])
        .arg(&config)
        .args(idle_args)
        .args(["--port", "7007"])
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
    let mut server = Server { child, lines, seen: Vec::new() };
    server.wait_for("lcore 0 up", Duration::from_secs(20));
    (server, config)
}

fn ctl(config: &std::path::Path, what: &str) -> String {
    run(env!("CARGO_BIN_EXE_netstack-ctl"), &["--config", config.to_str().unwrap(), what])
}

#[test]
fn kernel_ping_and_udp_client_reach_udp_echo_over_veth() {
    if !usable() {
        return;
    }
    let (ns, mac_va) = veth_pair(["nstk-cli", "nstk-srv"], "10.193.0");
    let cli = &ns.0 .0[0];
    let text = format!(
        "lcores = \"0\"\n[port]\ndevice = \"net_af_packet0,iface=vb\"\n[ipv4]\naddress = \"10.193.0.2/24\"\n\
         [memory]\npool_size = 2048\n[control]\nname = \"echo-test\"\ndir = \"{}\"\n",
        ns.1 .0.display()
    );
    let (mut server, config) = spawn_echo(&ns, &text);
    let up = server.wait_for("lcore 0 up", Duration::from_secs(1));
    assert!(up.contains("inet 10.193.0.2/24"), "{up}");

    let ping = run("ip", &["netns", "exec", cli, "ping", "-c", "3", "-i", "0.2", "-W", "2", "10.193.0.2"]);
    assert!(ping.contains("3 received"), "{ping}");
    let echo = Command::new("ip")
        .args(["netns", "exec", cli, "python3", "-c", ECHO_CLIENT, "10.193.0.2", "7007"])
        .output()
        .unwrap();
    assert!(echo.status.success(), "UDP echo: {}", String::from_utf8_lossy(&echo.stderr));

    let arp = ctl(&config, "arp");
    assert!(
        arp.lines().any(|l| l.starts_with("10.193.0.1 ") && l.to_lowercase().contains(&mac_va.to_lowercase())),
        "no ARP entry for 10.193.0.1 at {mac_va}:\n{arp}"
    );
    let sockets = ctl(&config, "sockets");
    assert!(sockets.contains("udp") && sockets.contains("10.193.0.2:7007"), "{sockets}");
    let addr = ctl(&config, "addr");
    assert!(addr.contains("inet 10.193.0.2/24"), "{addr}");

    let out = server.interrupt();
    assert!(counter(&out, "icmp_echo_replies") >= 3, "{out}");
    assert!(counter(&out, "udp_rx_datagrams") >= 1 && counter(&out, "udp_tx_datagrams") >= 1, "{out}");
    assert!(!ns.1 .0.join("netstack-echo-test.0.sock").exists(), "control socket left behind");
}

const MANY_FLOWS: &str = r#"
import socket, sys
errors = []
for i in range(24):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1)
    data = b"flow %d " % i + bytes(range(i, i + 100))
    for attempt in range(5):
        s.sendto(data, (sys.argv[1], int(sys.argv[2])))
        try:
            reply, _ = s.recvfrom(4096)
            if reply != data:
                errors.append("flow %d: reply differs" % i)
            break
        except socket.timeout:
            continue
    else:
        errors.append("flow %d: no reply" % i)
    s.close()
sys.exit("\n".join(errors) if errors else 0)
"#;

/// Two lcores, two af_packet queues in a fanout group: 24 flows (source ports) spread over both stacks, each
/// answered by the stack its flow reached; both lcores answer netstack-ctl and print counters on Ctrl-C.
#[test]
fn udp_echo_on_two_lcores_answers_every_flow() {
    if !usable() {
        return;
    }
    let (ns, _) = veth_pair(["nstk-cli2", "nstk-srv2"], "10.194.0");
    let cli = &ns.0 .0[0];
    let text = format!(
        "lcores = \"0-1\"\n[port]\ndevice = \"net_af_packet0,iface=vb,qpairs=2\"\n[ipv4]\n\
         address = \"10.194.0.2/24\"\n[control]\nname = \"echo-two\"\ndir = \"{}\"\n",
        ns.1 .0.display()
    );
    let (mut server, config) = spawn_echo(&ns, &text);
    server.wait_for("lcore 1 up", Duration::from_secs(5));
    let flows = Command::new("ip")
        .args(["netns", "exec", cli, "python3", "-c", MANY_FLOWS, "10.194.0.2", "7007"])
        .output()
        .unwrap();
    assert!(flows.status.success(), "UDP flows: {}", String::from_utf8_lossy(&flows.stderr));
    let counters = ctl(&config, "counters");
    assert!(counters.contains("== lcore 0 ==") && counters.contains("== lcore 1 =="), "{counters}");
    let out = server.interrupt();
    let total = out.split("== udp-echo: total ==").nth(1).unwrap_or_else(|| panic!("no total:\n{out}"));
    assert!(counter(total, "udp_rx_datagrams") >= 24 && counter(total, "udp_tx_datagrams") >= 24, "{out}");
    let per_lcore: Vec<u64> =
        out.split("== udp-echo: lcore ").skip(1).map(|block| counter(block, "udp_rx_datagrams")).collect();
    assert_eq!(per_lcore.len(), 2, "{out}");
    // Both stacks served flows: the one ARP never reached answered from what it learned off the IP frames.
    assert!(per_lcore.iter().all(|&n| n > 0), "flows per lcore {per_lcore:?}:\n{out}");
}

/// CPU time (user + system) the process `pid` has used so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) start at state; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = rest.split_whitespace().skip(11).take(2).map(|v| v.parse().unwrap()).collect();
    // SAFETY: sysconf has no memory preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis((f[0] + f[1]) * 1000 / hz)
}

/// The default idle policy on an af_packet port: with no traffic the server sleeps on the socket (its CPU time over
/// a second stays far below the second a spinning loop burns), and each ping and datagram wakes it through the
/// descriptor (counted as wake-ups, which a timeout is not) and is answered.
#[test]
fn udp_echo_sleeps_on_the_port_fd_and_wakes_for_traffic() {
    if !usable() {
        return;
    }
    let (ns, _) = veth_pair(["nstk-cliw", "nstk-srvw"], "10.195.0");
    let cli = &ns.0 .0[0];
    let text = format!(
        "lcores = \"0\"\n[port]\ndevice = \"net_af_packet0,iface=vb\"\n[ipv4]\naddress = \"10.195.0.2/24\"\n\
         [memory]\npool_size = 2048\n[control]\nname = \"echo-wake\"\ndir = \"{}\"\n",
        ns.1 .0.display()
    );
    let (mut server, config) = spawn_echo_with(&ns, &text, &[]);
    let pid = server.child.id();
    std::thread::sleep(Duration::from_millis(200));
    let (cpu0, t0) = (cpu_time(pid), Instant::now());
    std::thread::sleep(Duration::from_secs(1));
    let (cpu, wall) = (cpu_time(pid) - cpu0, t0.elapsed());
    assert!(cpu < wall / 10, "an idle server used {cpu:?} of CPU in {wall:?}: it spins instead of sleeping");

    // Each ping comes 300 ms after the last: the server is asleep by then, and must be woken by the frame.
    let start = Instant::now();
    let ping = run("ip", &["netns", "exec", cli, "ping", "-c", "4", "-i", "0.3", "-W", "2", "10.195.0.2"]);
    assert!(ping.contains("4 received"), "{ping}");
    assert!(start.elapsed() < Duration::from_secs(5), "pings took {:?}:\n{ping}", start.elapsed());
    let echo = Command::new("ip")
        .args(["netns", "exec", cli, "python3", "-c", ECHO_CLIENT, "10.195.0.2", "7007"])
        .output()
        .unwrap();
    assert!(echo.status.success(), "UDP echo: {}", String::from_utf8_lossy(&echo.stderr));
    // The control socket wakes it too.
    assert!(ctl(&config, "addr").contains("inet 10.195.0.2/24"));

    let out = server.interrupt();
    assert!(counter(&out, "icmp_echo_replies") >= 4, "{out}");
    assert!(counter(&out, "udp_tx_datagrams") >= 1, "{out}");
    assert!(counter(&out, "lcore_idle_sleeps") > 0, "{out}");
    // Four pings, a datagram and a control request arrived while it slept, each 300 ms or more after the last: a
    // wake-up by descriptor each, but on a loaded host the lcore can still be in its spin (not yet asleep) when the
    // next one comes, so two may share a wake-up (seen: 5 of 6 at load ~5). Most must have woken it.
    assert!(counter(&out, "lcore_idle_wakeups") >= 4, "{out}");
}

/// The UDP payload of an IPv4 frame (no options) to or from port 7007, with the port on the far side.
fn udp_7007(frame: &[u8]) -> Option<(bool, &[u8])> {
    let ip = frame.get(14..)?;
    if frame.get(12..14)? != [0x08, 0x00] || ip.first()? != &0x45 || ip.get(9)? != &17 {
        return None;
    }
    let udp = ip.get(20..)?;
    let (src, dst) = (u16::from_be_bytes([udp[0], udp[1]]), u16::from_be_bytes([udp[2], udp[3]]));
    let len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    let payload = udp.get(8..len)?;
    match (src, dst) {
        (_, 7007) => Some((false, payload)),
        (7007, _) => Some((true, payload)),
        _ => None,
    }
}

/// `pktio-dumpcap` captures a running udp-echo's port (RX and TX) while a kernel client talks to it: the capture
/// holds the client's datagrams and udp-echo's replies (and nothing else but ARP), byte for byte, as tcpdump reads
/// the file back.
#[test]
fn a_running_server_is_captured_by_pktio_dumpcap() {
    if !usable() || !testkit::have_tcpdump() {
        return;
    }
    let (ns, _) = veth_pair(["nstk-capc", "nstk-caps"], "10.193.2");
    let cli = &ns.0 .0[0];
    let prefix = format!("nstk-cap-{}", std::process::id());
    let text = format!(
        "lcores = \"0\"\n[port]\ndevice = \"net_af_packet0,iface=vb\"\n[ipv4]\naddress = \"10.193.2.2/24\"\n\
         [memory]\npool_size = 2048\n[control]\nname = \"cap-test\"\ndir = \"{}\"\n",
        ns.1 .0.display()
    );
    let (mut server, _config) = spawn_echo_with(&ns, &text, &["--file-prefix", &prefix]);
    // Resolve ARP both ways first, so that the capture sees the datagrams.
    let ping = run("ip", &["netns", "exec", cli, "ping", "-c", "1", "-W", "2", "10.193.2.2"]);
    assert!(ping.contains("1 received"), "{ping}");

    let file = ns.1 .0.join("echo.pcapng");
    let mut dumpcap = Command::new(testkit::dumpcap())
        .args(["--file-prefix", &prefix, "-i", "0", "--rx", "--tx", "-c", "10", "-a", "duration:60", "-w"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Datagrams until the capture has its ten frames: it may start after the first ones.
    let deadline = Instant::now() + Duration::from_secs(60);
    while dumpcap.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the capture never got its 10 frames");
        let echo = Command::new("ip")
            .args(["netns", "exec", cli, "python3", "-c", ECHO_CLIENT, "10.193.2.2", "7007"])
            .output()
            .unwrap();
        assert!(echo.status.success(), "UDP echo: {}", String::from_utf8_lossy(&echo.stderr));
    }
    let out = dumpcap.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && said.contains("Packets written: 10"), "pktio-dumpcap: {said}");
    let pcap = ns.1 .0.join("echo.pcap");
    let td = Command::new("tcpdump").arg("-r").arg(&file).arg("-w").arg(&pcap).output().unwrap();
    assert!(td.status.success(), "tcpdump: {}", String::from_utf8_lossy(&td.stderr));
    let frames = swports::pcap_file::read_all(&pcap).unwrap();
    assert_eq!(frames.len(), 10);
    let data: Vec<u8> = (0..=255u8).cycle().take(1024).chain(*b"netstack").collect();
    let (mut requests, mut replies) = (0, 0);
    for f in &frames {
        if f.data.get(12..14) == Some(&[0x08, 0x06]) {
            continue; // an ARP refresh may fall inside the capture
        }
        let (reply, payload) = udp_7007(&f.data).unwrap_or_else(|| panic!("not a 7007 datagram: {:02x?}", f.data));
        assert_eq!(payload, &data[..], "the datagram's bytes");
        if reply {
            replies += 1;
        } else {
            requests += 1;
        }
    }
    assert!(requests >= 4 && replies >= 4, "both directions captured: {requests} requests, {replies} replies");
    server.interrupt();
}
