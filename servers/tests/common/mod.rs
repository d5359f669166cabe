//! Shared by the namespace tests of the servers: a client network namespace joined to the host by a veth pair,
//! a server process on the host-side end (net_af_packet), and reading its control socket. Everything made here
//! is removed on drop (panics included); nothing is sent anywhere but into the namespace.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Whether the test can run (root and `tools`); otherwise says why and returns false, or panics when
/// NETNS_TESTS_REQUIRED=1 or REAL_CLIENT_TESTS_REQUIRED=1 (scripts/test.sh sets both).
pub fn usable(tools: &[&str]) -> bool {
    testkit::netns::usable_for(&["NETNS_TESTS_REQUIRED", "REAL_CLIENT_TESTS_REQUIRED"], tools)
}

pub use testkit::netns::run;

/// A client namespace joined to the host by a veth pair: `<tag>n` (`<subnet>.2/24`) inside, `<tag>h` (no address,
/// for the server) outside; and a scratch directory. All removed on drop.
pub struct Net {
    pub ns: String,
    pub host_if: String,
    pub ns_if: String,
    pub dir: PathBuf,
    pub server_ip: String,
    pub client_ip: String,
    subnet: String,
}

impl Net {
    pub fn new(tag: &str, subnet: &str) -> Net {
        let pid = std::process::id() % 100_000;
        let ns = format!("{tag}{pid}");
        let (host_if, ns_if) = (format!("{tag}{pid}h"), format!("{tag}{pid}n"));
        let dir = std::env::temp_dir().join(format!("servers-{tag}-{pid}"));
        let _ = Command::new("ip").args(["netns", "del", &ns]).output();
        let _ = Command::new("ip").args(["link", "del", &host_if]).output();
        std::fs::create_dir_all(&dir).unwrap();
        let net = Net {
            ns,
            host_if,
            ns_if,
            dir,
            server_ip: format!("{subnet}.1"),
            client_ip: format!("{subnet}.2"),
            subnet: subnet.to_owned(),
        };
        run("ip", &["netns", "add", &net.ns]);
        run("ip", &["link", "add", &net.host_if, "type", "veth", "peer", "name", &net.ns_if]);
        run("ip", &["link", "set", &net.ns_if, "netns", &net.ns]);
        run("ip", &["-n", &net.ns, "addr", "add", &format!("{}/24", net.client_ip), "dev", &net.ns_if]);
        run("ip", &["-n", &net.ns, "link", "set", "lo", "up"]);
        run("ip", &["-n", &net.ns, "link", "set", &net.ns_if, "up"]);
        run("ip", &["link", "set", &net.host_if, "up"]);
        let _ = Command::new("ip")
            .args(["netns", "exec", &net.ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
            .output();
        let _ = Command::new("sysctl").args(["-qw", &format!("net.ipv6.conf.{}.disable_ipv6=1", net.host_if)]).output();
        // veth leaves checksums to "hardware" that is not there; af_packet would hand the stack half-done sums.
        run("ip", &["netns", "exec", &net.ns, "ethtool", "-K", &net.ns_if, "tx", "off"]);
        net
    }

    /// `<subnet>.<host>`.
    pub fn addr(&self, host: u8) -> String {
        format!("{}.{host}", self.subnet)
    }

    /// Adds `addr/32` to the namespace's interface (a second client address).
    pub fn add_client_addr(&self, addr: &str) {
        run("ip", &["-n", &self.ns, "addr", "add", &format!("{addr}/32"), "dev", &self.ns_if]);
    }

    /// Runs `cmd args` in the client namespace.
    pub fn exec(&self, cmd: &str, args: &[&str]) -> Output {
        Command::new("ip").args(["netns", "exec", &self.ns, cmd]).args(args).output().unwrap()
    }

    /// Starts `cmd args` in the client namespace with its output piped.
    pub fn spawn(&self, cmd: &str, args: &[&str]) -> Child {
        Command::new("ip")
            .args(["netns", "exec", &self.ns, cmd])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The servers' usual configuration, named `name`.
    pub fn config(&self, name: &str) -> PathBuf {
        self.config_with(name, "", "rx_buffer = 16384\ntx_buffer = 65536\nbacklog = 128\n")
    }

    /// A configuration with `ipv4` lines added to `[ipv4]` and `tcp` as the `[tcp]` table.
    pub fn config_with(&self, name: &str, ipv4: &str, tcp: &str) -> PathBuf {
        let text = format!(
            "lcores = \"0\"\n[port]\ndevice = \"net_af_packet0,iface={}\"\n[ipv4]\naddress = \"{}/24\"\n{ipv4}\
             [memory]\npool_size = 8191\n[tcp]\n{tcp}[control]\nname = \"{name}\"\ndir = \"{}\"\n",
            self.host_if,
            self.server_ip,
            self.dir.display()
        );
        let path = self.dir.join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
        let _ = Command::new("ip").args(["link", "del", &self.host_if]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server process, interrupted (then killed) on drop.
pub struct Server {
    pub name: &'static str,
    pub child: Child,
    lines: mpsc::Receiver<String>,
    pub seen: Vec<String>,
    pub config: PathBuf,
    /// netstack-ctl to read the control socket with (`None`: the request goes through netstack::control).
    ctl_exe: Option<PathBuf>,
}

impl Server {
    pub fn start(name: &'static str, exe: &str, config: PathBuf, args: &[&str]) -> Server {
        let mut cmd = Command::new(exe);
        cmd.arg("--config").arg(&config).args(args);
        // The netstack-ctl built beside the server when there (scripts/test.sh builds every target first).
        let ctl_exe = Some(Path::new(exe).with_file_name("netstack-ctl")).filter(|p| p.exists());
        Server::start_command(name, cmd, config, &["lcore 0 up"], ctl_exe)
    }

    /// Starts `cmd` (a server whose stack reads `config`), waiting until it printed each of `ready`;
    /// `ctl_exe` reads its control socket (`None`: the request goes through netstack::control).
    pub fn start_command(
        name: &'static str,
        mut cmd: Command,
        config: PathBuf,
        ready: &[&str],
        ctl_exe: Option<PathBuf>,
    ) -> Server {
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
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
        let mut s = Server { name, child, lines, seen: Vec::new(), config, ctl_exe };
        for needle in ready {
            s.wait_for(needle, Duration::from_secs(30));
        }
        s
    }

    pub fn wait_for(&mut self, needle: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.seen.iter().any(|l| l.contains(needle)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!("no `{needle}` from {}; it printed:\n{}", self.name, self.seen.join("\n")),
            }
        }
    }

    /// What `netstack-ctl --config FILE <what>` prints.
    pub fn ctl(&self, what: &str) -> String {
        if let Some(exe) = &self.ctl_exe {
            return run(exe.to_str().unwrap(), &["--config", self.config.to_str().unwrap(), what]);
        }
        let c = netstack::Config::load(&self.config).unwrap();
        netstack::control::request(&c.control_socket(0), what).unwrap()
    }

    /// What `netstack-ctl <what>` prints, or `None` if the server did not answer (busy under an attack).
    pub fn try_ctl(&self, what: &str) -> Option<String> {
        if let Some(exe) = &self.ctl_exe {
            let out = std::process::Command::new(exe)
                .args(["--config", self.config.to_str().unwrap(), what])
                .output()
                .ok()?;
            return out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let c = netstack::Config::load(&self.config).ok()?;
        netstack::control::request(&c.control_socket(0), what).ok()
    }

    /// Polls the control socket's counters until `done` holds, for up to `secs` seconds.
    pub fn ctl_until(&self, secs: u64, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let text = self.ctl("counters");
            if done(&text) {
                return text;
            }
            assert!(Instant::now() < deadline, "{}: timed out waiting for {what}:\n{text}", self.name);
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The server's resident memory, KiB (VmRSS).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    pub fn interrupt(&mut self) -> String {
        // SAFETY: kill has no memory preconditions; the pid is our own child's.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "{} did not stop on SIGINT", self.name);
            std::thread::sleep(Duration::from_millis(20));
        }
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
            self.seen.push(l);
        }
        assert!(self.child.wait().unwrap().success(), "{} failed:\n{}", self.name, self.seen.join("\n"));
        self.seen.join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of the `name value` line `name` of `text`.
pub fn counter(text: &str, name: &str) -> u64 {
    try_counter(text, name).unwrap_or_else(|| panic!("no counter {name} in:\n{text}"))
}

/// The value of the `name value` line `name` of `text`, if there is one.
pub fn try_counter(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(char::is_whitespace)?;
        (k == name).then(|| v.split_whitespace().next()?.parse().ok())?
    })
}

pub fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}
