//! Test support for the sample applications (l2fwd, l3fwd): spawn a binary with its output collected, poll for
//! text with a deadline, stop it with SIGINT, and pcap helpers to write inputs and compare outputs frame by frame.
//! Used only as a dev-dependency; not part of any application build.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use swports::pcap_file::{read_all, PcapWriter};

/// How long a test waits for the application: generous, the machine may be loaded.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// A running application with its stdout and stderr collected.
pub struct App {
    child: Child,
    out: Arc<Mutex<String>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

fn collect(mut r: impl Read + Send + 'static, out: Arc<Mutex<String>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
    })
}

impl App {
    /// Starts `bin` with `args`.
    pub fn spawn(bin: &str, args: &[String]) -> App {
        let mut child = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let out = Arc::new(Mutex::new(String::new()));
        let readers = vec![
            collect(child.stdout.take().unwrap(), out.clone()),
            collect(child.stderr.take().unwrap(), out.clone()),
        ];
        App { child, out, readers }
    }

    /// Everything printed so far.
    pub fn output(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    /// Polls the output until `done` holds; panics with the output after the deadline or if the process exits.
    pub fn wait_until(&mut self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + DEADLINE;
        loop {
            let o = self.output();
            if done(&o) {
                return o;
            }
            if let Some(s) = self.child.try_wait().unwrap() {
                panic!("exited ({s}) while waiting for {what}; output:\n{}", self.output());
            }
            assert!(Instant::now() < end, "timed out waiting for {what}; output:\n{o}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGINT and waits for the exit; returns the status and the whole output.
    pub fn interrupt(self) -> (ExitStatus, String) {
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped; no memory is involved.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        self.wait()
    }

    /// Waits for the exit; returns the status and the whole output.
    pub fn wait(mut self) -> (ExitStatus, String) {
        let end = Instant::now() + DEADLINE;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                panic!("did not exit; output:\n{}", self.output());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        (status, self.output())
    }
}

impl Drop for App {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs `bin` with `args` to its exit (for argument errors).
pub fn run_to_exit(bin: &str, args: &[&str]) -> (ExitStatus, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    App::spawn(bin, &args).wait()
}

/// A scratch directory removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("l2l3-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn write_pcap(path: &str, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::create(path).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(1_700_000_000_000_000_000 + i as u64 * 1000, f).unwrap();
    }
    w.flush().unwrap();
}

pub fn read_frames(path: &str) -> Vec<Vec<u8>> {
    read_all(path).unwrap().into_iter().map(|r| r.data).collect()
}

pub fn assert_frames_eq(got: &[Vec<u8>], want: &[Vec<u8>]) {
    assert_eq!(got.len(), want.len(), "frame count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "frame {i} differs");
    }
}

/// The number after `label` on the last line that holds it.
pub fn last_number(text: &str, label: &str) -> Option<u64> {
    let at = text.rfind(label)? + label.len();
    text[at..].split_whitespace().next()?.parse().ok()
}

/// The MAC address printed on a line starting with `prefix`.
pub fn mac_after(text: &str, prefix: &str) -> [u8; 6] {
    let line = text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no {prefix:?} in:\n{text}"));
    let m: pktio::MacAddr = line[prefix.len()..].trim().parse().unwrap();
    m.0
}

/// Ethernet/IPv4/UDP frames with a payload pattern (`n` of them, seeded), checksum right, TTL 64.
pub fn udp_frames(seed: u8, n: usize, dst: impl Fn(usize) -> [u8; 4]) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let len = [60usize, 64, 128, 333, 1000, 1514][i % 6];
            let mut f = vec![0u8; len];
            f[0..6].copy_from_slice(&[0x02, 0xaa, 0, 0, 0, seed]);
            f[6..12].copy_from_slice(&[0x02, 0xbb, 0, 0, 0, i as u8]);
            f[12..14].copy_from_slice(&[0x08, 0x00]);
            f[14] = 0x45;
            f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
            f[18..20].copy_from_slice(&(i as u16).to_be_bytes());
            f[22] = 64;
            f[23] = 17;
            f[26..30].copy_from_slice(&[10, seed, (i >> 8) as u8, i as u8]);
            f[30..34].copy_from_slice(&dst(i));
            f[34..36].copy_from_slice(&(1000 + i as u16).to_be_bytes());
            f[36..38].copy_from_slice(&9u16.to_be_bytes());
            f[38..40].copy_from_slice(&((len - 34) as u16).to_be_bytes());
            for (k, b) in f[42..].iter_mut().enumerate() {
                *b = (k as u8).wrapping_mul(7).wrapping_add(seed);
            }
            set_ipv4_checksum(&mut f[14..34]);
            f
        })
        .collect()
}

/// Writes a correct IPv4 header checksum into a 20-byte header.
pub fn set_ipv4_checksum(h: &mut [u8]) {
    h[10..12].fill(0);
    let mut s = 0u32;
    for c in h.chunks(2) {
        s += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    h[10..12].copy_from_slice(&(!(s as u16)).to_be_bytes());
}

/// The `pktio-dumpcap` binary (built by the testpmd-rs package) of the target directory this test runs from;
/// built there first when a narrower `cargo test -p` did not build it.
pub fn dumpcap() -> std::path::PathBuf {
    static PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        // target/PROFILE/deps/TEST -> target/PROFILE
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(|d| d.parent()).unwrap().to_path_buf();
        let bin = profile_dir.join("pktio-dumpcap");
        if !bin.exists() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.args(["build", "--quiet", "-p", "testpmd-rs", "--bin", "pktio-dumpcap"]);
            if profile_dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            let target = profile_dir.parent().unwrap();
            let out = cmd.env("CARGO_TARGET_DIR", target).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
            assert!(out.status.success(), "building pktio-dumpcap: {}", String::from_utf8_lossy(&out.stderr));
        }
        assert!(bin.exists(), "no {} after building it", bin.display());
        bin
    })
    .clone()
}

/// True when tcpdump is installed; without it a capture test says so and passes, unless DPDK_TESTS_REQUIRED=1
/// (scripts/test.sh) makes it fail.
pub fn have_tcpdump() -> bool {
    if Command::new("tcpdump").arg("--version").output().is_ok() {
        return true;
    }
    if std::env::var("DPDK_TESTS_REQUIRED").as_deref() == Ok("1") {
        panic!("DPDK_TESTS_REQUIRED=1 but tcpdump is missing: apt-get install tcpdump");
    }
    eprintln!("skipped: needs tcpdump (apt-get install tcpdump)");
    false
}

/// Captures from the application running with EAL `--file-prefix prefix` with `pktio-dumpcap` (`args`: which
/// ports and directions, the count) into `dir`, requires it to write `count` packets, and returns the frames as
/// tcpdump reads them back from the pcapng file.
pub fn dumpcap_frames(dir: &TempDir, prefix: &str, args: &[&str], count: usize) -> Vec<Vec<u8>> {
    let name = format!("cap-{}.pcapng", args.join("").replace([' ', ','], "_"));
    let out = dir.path(&name);
    let n = count.to_string();
    let res = Command::new(dumpcap())
        // A capture that never reaches its count ends (and fails the check below) instead of hanging the test.
        .args(["--file-prefix", prefix, "-s", "65535", "-c", &n, "-a", "duration:60", "-w", &out])
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&res.stdout).into_owned() + &String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "pktio-dumpcap {args:?}: {text}");
    assert!(text.contains(&format!("Packets written: {count}")), "{text}");
    let copy = dir.path(&format!("{name}.pcap"));
    let td = Command::new("tcpdump").args(["-r", &out, "-w", &copy]).output().unwrap();
    assert!(td.status.success(), "tcpdump: {}", String::from_utf8_lossy(&td.stderr));
    read_frames(&copy)
}

/// Requires `got` to be `want` repeated in order from some frame on (an input replayed without end, captured
/// from an arbitrary point): every frame byte for byte.
pub fn assert_cyclic_run(got: &[Vec<u8>], want: &[Vec<u8>]) {
    assert!(!got.is_empty(), "nothing captured");
    let first = want.iter().position(|w| w == &got[0]).unwrap_or_else(|| {
        panic!("captured frame 0 is none of the expected ones: {:02x?}", &got[0][..got[0].len().min(64)])
    });
    for (k, g) in got.iter().enumerate() {
        assert_eq!(g, &want[(first + k) % want.len()], "captured frame {k} (from expected frame {first} on)");
    }
}
