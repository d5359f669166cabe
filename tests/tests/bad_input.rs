//! The binaries under bad input, table-driven: each row is one command line (with the files and stdin it needs)
//! and what must happen: an exit with a status and a message fragment, or a correct run. Every row also requires
//! no panic and a short output (a bad token is quoted, never echoed whole), and ends within a deadline.
//!
//! The rows marked "issue 29" were accepted, hung or misreported before their fix; the others keep what already
//! held. `devbind` runs on an empty `--sysfs-root`, and `hugepages` only on lines refused before anything is read
//! or written, so nothing here touches the machine's devices or memory settings.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long one row may take: generous, the machine may be loaded.
const DEADLINE: Duration = Duration::from_secs(60);

/// Most output a row may print: a 10 MB token must not come back whole.
const MAX_OUTPUT: usize = 64 * 1024;

/// What a row must do.
#[derive(Debug, Clone, Copy)]
enum Want {
    /// Exit with this status, the fragment in the output.
    Exit(i32, &'static str),
    /// Run until the fragment appears, then stop on SIGINT with status 0.
    Runs(&'static str),
}

/// One row: the binary, its arguments (`{dir}` is the scratch directory), its stdin and the outcome.
struct Row {
    bin: &'static str,
    args: &'static str,
    stdin: &'static str,
    want: Want,
}

const fn row(bin: &'static str, args: &'static str, want: Want) -> Row {
    Row { bin, args, stdin: "", want }
}

const fn session(bin: &'static str, args: &'static str, stdin: &'static str, want: Want) -> Row {
    Row { bin, args, stdin, want }
}

use Want::{Exit, Runs};

/// The EAL part most rows share: two lcores, no hugepages.
macro_rules! eal {
    ($rest:literal) => {
        concat!("-l 0-1 --no-huge ", $rest)
    };
}

const ROWS: &[Row] = &[
    // testpmd-rs: EAL arguments.
    row("testpmd-rs", "-c +3 --no-huge --vdev net_null0 --", Exit(1, "-c \"+3\": expected a hex mask")), // issue 29
    row("testpmd-rs", "-c 0x --no-huge --vdev net_null0 --", Exit(1, "hex digits only")),
    row("testpmd-rs", "-c 0 --no-huge --vdev net_null0 --", Exit(1, "selects no lcore")),
    row("testpmd-rs", "-l +0 --no-huge --vdev net_null0 --", Exit(1, "expected a core list")),
    row("testpmd-rs", "-l 0-200 --no-huge --vdev net_null0 --", Exit(1, "lcore 200 is over the maximum 127")),
    row("testpmd-rs", "--lcores 200@0 --no-huge --vdev net_null0 --", Exit(1, "lcore 200 is over the maximum 127")), // issue 29
    row("testpmd-rs", "--lcores 0@5000 --no-huge --vdev net_null0 --", Exit(1, "CPU 5000 is over the maximum 1023")),
    row("testpmd-rs", "--lcores x@0 --no-huge --vdev net_null0 --", Exit(1, "not a number, a range or a (group)")),
    row("testpmd-rs", eal!("-m lots --vdev net_null0 --"), Exit(1, "-m \"lots\": expected a size in MiB")),
    row("testpmd-rs", eal!("--frobnicate --"), Exit(1, "unknown EAL option")),
    // testpmd-rs: devargs.
    row("testpmd-rs", eal!("--vdev bogus0 --"), Exit(1, "no driver for device \"bogus0\"")),
    row("testpmd-rs", eal!("--vdev net_null0,size=0 --"), Exit(1, "size must be at least 1")),
    row("testpmd-rs", eal!("--vdev net_null0,bogus=1 --"), Exit(1, "unknown argument \"bogus\"")),
    row("testpmd-rs", eal!("--vdev net_ring0,link= --"), Exit(1, "link= needs a name")), // issue 29
    row(
        "testpmd-rs",
        eal!("--vdev net_ring0,link=w,size=512 --vdev net_ring1,link=w,size=1024 --"),
        Exit(1, "link \"w\" has rings of 512 slots, not 1024"),
    ), // issue 29
    row(
        "testpmd-rs",
        eal!("--vdev net_ring0,link=w,size=512 --vdev net_ring1,link=w --"),
        Exit(1, "has rings of 512 slots, not 1024"),
    ), // issue 29
    row(
        "testpmd-rs",
        eal!("--vdev net_ring0,link=w,queues=2 --vdev net_ring1,link=w --"),
        Exit(1, "has 2 queues, not 1"),
    ),
    row("testpmd-rs", eal!("--vdev net_ring0,queues=17 --"), Exit(1, "queues must be 1..=16")),
    row("testpmd-rs", eal!("--vdev net_sim_x710,bogus=1 --"), Exit(1, "net_sim_x710 takes: ports")), // issue 29
    row("testpmd-rs", eal!("--vdev net_sim_sp670,bogus=1 --"), Exit(1, "net_sim_sp670 takes: ports")), // issue 29
    row("testpmd-rs", eal!("--vdev net_sim_x540,ports=3 --"), Exit(1, "ports=3: give an even number")),
    row("testpmd-rs", eal!("--vdev net_sim_x710,part=zz --"), Exit(1, "part=zz: use x710")),
    row("testpmd-rs", eal!("--vdev net_pcap0,rx_pcap={dir}/missing.pcap --"), Exit(1, "No such file or directory")),
    row("testpmd-rs", eal!("--vdev net_pcap0,rx_pcap={dir}/big.cfg --"), Exit(1, "net_pcap0")),
    // testpmd-rs: its own options and files.
    row("testpmd-rs", eal!("--vdev net_null0 -- --nb-cores=0"), Exit(1, "--nb-cores=0: must be between 1 and")),
    row("testpmd-rs", eal!("--vdev net_null0 -- --burst=0"), Exit(1, "--burst=0: must be between 1 and 512")),
    row("testpmd-rs", eal!("--vdev net_null0 -- --forward-mode=warp"), Exit(1, "unknown forwarding mode \"warp\"")),
    row("testpmd-rs", eal!("--vdev net_null0 -- --frobnicate"), Exit(1, "unknown option \"--frobnicate\"")),
    row(
        "testpmd-rs",
        eal!("--vdev net_null0 -- --cmdline-file /nonexistent"),
        Exit(1, "Failed to read CLI commands from /nonexistent"),
    ), // issue 29
    row("testpmd-rs", eal!("--vdev net_null0 -- --cmdline-file /dev/zero"), Exit(1, "/dev/zero:1: line longer than")), // issue 29
    row("testpmd-rs", eal!("--vdev net_null0 -- --cmdline-file {dir}"), Exit(1, "cannot read")),
    session(
        "testpmd-rs",
        eal!("--vdev net_null0 -- -i --cmdline-file /nonexistent"),
        "quit\n",
        Exit(0, "Failed to read CLI commands from /nonexistent"),
    ),
    session("testpmd-rs", eal!("--vdev net_null0 -- -i --cmdline-file /dev/zero"), "quit\n", Exit(0, "Bye...")), // issue 29
    session(
        "testpmd-rs",
        eal!("--vdev net_null0 --vdev net_null1 -- -i --cmdline-file {dir}/cmds.txt"),
        "quit\n",
        Exit(0, "Read CLI commands from"),
    ),
    row(
        "testpmd-rs",
        eal!("--vdev net_null0 --vdev net_null1 -- --cmdline-file {dir}/cmds.txt --stats-period 1"),
        Runs("Read CLI commands from"),
    ), // issue 29
    session(
        "testpmd-rs",
        eal!("--vdev net_null0 --vdev net_null1 -- -i"),
        "show port summary all\nset burst 0\nstart tx_first 4294967295\nstop\nquit\n",
        Exit(0, "burst must be >= 1"),
    ), // issue 29
    session(
        "testpmd-rs",
        eal!("--vdev net_ring0,link=w,size=512 --vdev net_ring1,link=w,size=512 -- -i"),
        "start tx_first\nstop\nquit\n",
        Exit(0, "Bye..."),
    ),
    row("testpmd-rs", "--help", Exit(0, "EAL")),
    // l2fwd.
    row("l2fwd", eal!("--vdev net_null0 --vdev net_null1 -- -p=3"), Exit(1, "invalid portmask \"=3\"")), // issue 29
    row("l2fwd", eal!("--vdev net_null0 --vdev net_null1 -- -p 3 -q=1"), Exit(1, "-q")),
    row("l2fwd", eal!("--vdev net_null0 --vdev net_null1 -- -p 3 --rxqs=2"), Exit(1, "unknown option \"--rxqs=2\"")),
    row("l2fwd", eal!("--vdev net_null0 --vdev net_null1 -- -p 0"), Exit(1, "selects no port")),
    row("l2fwd", eal!("--vdev net_null0 --vdev net_null1 -- -p xyz"), Exit(1, "invalid portmask \"xyz\"")),
    row("l2fwd", eal!("--vdev net_null0 --vdev net_null1 -- -p 3 -q 0"), Exit(1, "invalid -q 0")),
    row("l2fwd", eal!("--vdev net_null0 --vdev net_null1 -- -p 3 -T 100000"), Exit(1, "invalid -T 100000")),
    row("l2fwd", eal!("--vdev net_null0 --vdev net_null1 -- -p 3 --portmap=(0,1"), Exit(1, "not closed")),
    row("l2fwd", eal!("--vdev net_null0 --vdev net_null1 -- -p 3 --rxq 0"), Exit(1, "invalid --rxq 0")),
    row("l2fwd", eal!("--vdev net_null0 --vdev net_null1 -- -p 3 -T 1"), Runs("Port statistics")),
    // l3fwd: route files (issue 29: a 10 MB line was echoed whole to stderr; /dev/zero was read until memory ran
    // out).
    row(
        "l3fwd",
        eal!("--vdev net_null0 -- -p 1 --config=(0,0,0) --rule_ipv4={dir}/big.cfg --rule_ipv6={dir}/v6.cfg"),
        Exit(1, "big.cfg:2: line longer than 2047 bytes"),
    ), // issue 29
    row(
        "l3fwd",
        eal!("--vdev net_null0 -- -p 1 --config=(0,0,0) --rule_ipv4=/dev/zero --rule_ipv6={dir}/v6.cfg"),
        Exit(1, "/dev/zero:1: line longer than"),
    ), // issue 29
    row(
        "l3fwd",
        eal!("--vdev net_null0 -- -p 1 --config=(0,0,0) --rule_ipv4={dir}/token.cfg --rule_ipv6={dir}/v6.cfg"),
        Exit(1, "(1500 bytes) is not an IPv4 address"),
    ),
    row(
        "l3fwd",
        eal!("--vdev net_null0 -- -p 1 --config=(0,0,0) --rule_ipv4={dir}/missing.cfg --rule_ipv6={dir}/v6.cfg"),
        Exit(1, "missing.cfg:0: cannot read"),
    ),
    row(
        "l3fwd",
        eal!("--vdev net_null0 -- -p 1 --config=(0,0,0) --rule_ipv4={dir}/depth.cfg --rule_ipv6={dir}/v6.cfg"),
        Exit(1, "depth.cfg:1: depth 40 is above 32"),
    ),
    row(
        "l3fwd",
        eal!("--vdev net_null0 -- -p 1 --config=(0,0,0) --rule_ipv4={dir}/v4.cfg --rule_ipv6={dir}/v6.cfg -T 1"),
        Runs("LPM: Adding route 10.0.0.0 / 8 (0)"),
    ),
    // l3fwd: its options.
    row("l3fwd", eal!("--vdev net_null0 -- -p=1 --config=(0,0,0)"), Exit(1, "portmask")),
    row("l3fwd", eal!("--vdev net_null0 -- -p 1 --config=(0,0,0"), Exit(1, "not closed")),
    row("l3fwd", eal!("--vdev net_null0 -- -p 1 --config=(1,0,0)"), Exit(1, "port 1 is not present")),
    row("l3fwd", eal!("--vdev net_null0 -- -p 1 --config=(0,0,0) --lookup=radix"), Exit(1, "lpm, em or fib")),
    row("l3fwd", eal!("--vdev net_null0 -- -p 1 --config=(0,0,0) --max-pkt-len=10"), Exit(1, "64..=9600")),
    row("l3fwd", eal!("--vdev net_null0 -- -p 3 --config=(0,0,0)"), Exit(1, "names ports that do not exist")),
    // devbind, on an empty sysfs.
    row("devbind", "--sysfs-root {dir}/sys --frob", Exit(2, "unknown option --frob")),
    row("devbind", "--sysfs-root {dir}/sys -b", Exit(2, "--bind needs a value")),
    row("devbind", "--sysfs-root {dir}/sys -b vfio-pci", Exit(2, "no device given")),
    row("devbind", "--sysfs-root {dir}/sys -b vfio-pci zz:zz", Exit(1, "is neither a PCI address")),
    row(
        "devbind",
        "--sysfs-root {dir}/sys -b vfio-pci 0000:01:00.0",
        Exit(1, "PCI device 0000:01:00.0 does not exist"),
    ),
    row("devbind", "--sysfs-root {dir}/sys -s extra", Exit(2, "devices given without -b or -u")),
    // hugepages: lines refused before anything is read or written.
    row("hugepages", "--frob", Exit(2, "unknown option \"--frob\"")),
    row("hugepages", "--setup", Exit(2, "--setup needs an amount of memory")),
    row("hugepages", "--setup 3X", Exit(2, "not an amount of memory")),
    row("hugepages", "--setup 0", Exit(2, "give an amount of memory with a unit")),
    row("hugepages", "--setup 2M --node x", Exit(2, "not a NUMA node number")),
    row("hugepages", "-p 4K --setup 2M", Exit(2, "not a hugepage size")),
    row("hugepages", "--show extra", Exit(2, "unexpected argument \"extra\"")),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// target/<profile>/, from this test's own path (target/<profile>/deps/bad_input-...).
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test path");
    exe.parent().and_then(|d| d.parent()).expect("target dir").to_path_buf()
}

/// Builds the binaries of the table (a no-op when they are up to date), in this test's profile.
fn build() {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(workspace()).args(["build", "--quiet"]);
    if bin_dir().file_name().is_some_and(|n| n == "release") {
        c.arg("--release");
    }
    for (package, bin) in [
        ("testpmd-rs", "testpmd-rs"),
        ("l2fwd", "l2fwd"),
        ("l3fwd", "l3fwd"),
        ("tools", "devbind"),
        ("tools", "hugepages"),
    ] {
        c.args(["-p", package, "--bin", bin]);
    }
    let out = c.output().expect("cargo build");
    assert!(out.status.success(), "building the binaries failed:\n{}", String::from_utf8_lossy(&out.stderr));
}

/// The scratch directory and the files the rows name.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let dir = std::env::temp_dir().join(format!("bad-input-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sys/bus/pci/devices")).unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
        write("big.cfg", &format!("R10.0.0.0/8 0\nR{}/8 0\n", "1".repeat(10 << 20)));
        write("token.cfg", &format!("R{}/8 0\n", "9".repeat(1500)));
        write("depth.cfg", "R10.0.0.0/40 0\n");
        write("v4.cfg", "# routes\nR10.0.0.0/8 0\n");
        write("v6.cfg", "R2001:db8::/32 0\n");
        write("cmds.txt", "show port summary all\nset fwd rxonly\n");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn collect(mut r: impl Read + Send + 'static, out: Arc<Mutex<Vec<u8>>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.lock().unwrap().extend_from_slice(&buf[..n]),
            }
        }
    })
}

/// Runs one row; returns its exit status and output, or why it failed.
fn run(row: &Row, dir: &Path) -> Result<(ExitStatus, String), String> {
    let args: Vec<String> = row.args.split_whitespace().map(|a| a.replace("{dir}", &dir.to_string_lossy())).collect();
    let mut child = Command::new(bin_dir().join(row.bin))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start: {e}"))?;
    let out = Arc::new(Mutex::new(Vec::new()));
    let readers =
        [collect(child.stdout.take().unwrap(), out.clone()), collect(child.stderr.take().unwrap(), out.clone())];
    let mut stdin = child.stdin.take().unwrap();
    // A process that exits before reading its stdin closes the pipe: not an error here.
    let _ = stdin.write_all(row.stdin.as_bytes());
    // A correct run without -i keeps stdin open (an end of input would end its run).
    let keep_stdin = matches!(row.want, Runs(_)).then_some(stdin);
    let text = || String::from_utf8_lossy(&out.lock().unwrap()).into_owned();
    let end = Instant::now() + DEADLINE;
    let mut interrupted = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if let Runs(fragment) = row.want {
            if !interrupted && text().contains(fragment) {
                // SAFETY: kill() with a pid of our own, not yet reaped child and SIGINT has no memory effects.
                unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
                interrupted = true;
            }
        }
        if Instant::now() > end || out.lock().unwrap().len() > 16 * MAX_OUTPUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("did not end within {DEADLINE:?}; output:\n{}", tail(&text())));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    drop(keep_stdin);
    for r in readers {
        let _ = r.join();
    }
    Ok((status, text()))
}

fn tail(text: &str) -> &str {
    let mut at = text.len().saturating_sub(4000);
    while !text.is_char_boundary(at) {
        at += 1;
    }
    &text[at..]
}

/// Checks a row's outcome.
fn check(row: &Row, status: ExitStatus, out: &str) -> Result<(), String> {
    let (code, fragment) = match row.want {
        Exit(code, fragment) => (code, fragment),
        Runs(fragment) => (0, fragment),
    };
    if status.code() != Some(code) {
        return Err(format!("exit {status}, wanted {code}"));
    }
    if !out.contains(fragment) {
        return Err(format!("no {fragment:?} in the output"));
    }
    if out.contains("panicked") {
        return Err("a panic".into());
    }
    if out.len() > MAX_OUTPUT {
        return Err(format!("{} bytes of output (at most {MAX_OUTPUT})", out.len()));
    }
    Ok(())
}

#[test]
fn every_bad_input_row_ends_as_the_table_says() {
    build();
    let scratch = Scratch::new();
    let mut failures = Vec::new();
    for row in ROWS {
        let verdict = run(row, &scratch.0)
            .and_then(|(status, out)| check(row, status, &out).map_err(|e| format!("{e}; output:\n{}", tail(&out))));
        if let Err(e) = verdict {
            failures.push(format!("{} {} => {e}", row.bin, row.args));
        }
    }
    assert!(failures.is_empty(), "{} of {} rows failed:\n\n{}", failures.len(), ROWS.len(), failures.join("\n\n"));
}
