//! The Debian packages (scripts/package.sh): built for amd64 and arm64, checked by lintian (errors fail the
//! build), installed into a scratch root made for the test (`dpkg --root`, never the machine's own), their programs
//! run from there (every `--help`, a one-second io run of testpmd-rs on null ports; arm64 under qemu-aarch64-static),
//! then purged, leaving nothing behind. Under `PACKAGE_TESTS_REQUIRED=1` (set by scripts/test.sh) a missing tool is
//! a failure.
//!
//! The host's package is built with the `dev` profile, which the test command has built already (package.sh builds
//! the host's architecture into the workspace's own target directory); the other architecture's with
//! `package-check` (dev without debug info: the quickest cross build). What is tested is the package, not the
//! code's speed. The packaging path is the one users run with `bash scripts/package.sh`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use testkit::TempDir;

const REQUIRED: &str = "PACKAGE_TESTS_REQUIRED";

/// Every program the package must ship in /usr/bin.
const PROGRAMS: &[&str] = &[
    "testpmd-rs",
    "l2fwd",
    "l3fwd",
    "devbind",
    "hugepages",
    "pktio-doctor",
    "pktio-dumpcap",
    "kv-server",
    "http-server",
    "udp-echo",
    "netstack-ctl",
];

/// One package build at a time: both tests share the cargo target directory.
static BUILD: Mutex<()> = Mutex::new(());

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The cargo profile of `arch`'s package (see the module docs).
fn profile_for(arch: &str) -> &'static str {
    let host = if cfg!(target_arch = "x86_64") { "amd64" } else { "arm64" };
    if arch == host {
        "dev"
    } else {
        "package-check"
    }
}

/// Builds the package for `arch` into `out` with lintian, returning the .deb's path and lintian's tags.
fn build(arch: &str, out: &TempDir) -> (PathBuf, String) {
    let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let result = run(Command::new("bash").current_dir(workspace()).env("CARGO", cargo).args([
        "scripts/package.sh",
        "--arch",
        arch,
        "--out",
        &out.path("debs"),
        "--profile",
        profile_for(arch),
        "--lintian",
    ]));
    let deb = String::from_utf8_lossy(&result.stdout).lines().last().expect("package.sh printed the .deb").to_string();
    (PathBuf::from(deb), String::from_utf8_lossy(&result.stderr).into_owned())
}

fn field(deb: &Path, name: &str) -> String {
    let out = run(Command::new("dpkg-deb").arg("-f").arg(deb).arg(name));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn workspace_version() -> String {
    let manifest = std::fs::read_to_string(workspace().join("Cargo.toml")).expect("Cargo.toml");
    let line = manifest.lines().find(|l| l.starts_with("version = ")).expect("workspace version");
    line.trim_start_matches("version = ").trim_matches('"').to_string()
}

/// The control fields and the file list every package must have.
fn check_contents(deb: &Path, arch: &str, triplet: &str) {
    assert_eq!(field(deb, "Package"), "pktio");
    assert_eq!(field(deb, "Architecture"), arch);
    assert_eq!(field(deb, "Version"), workspace_version());
    let depends = field(deb, "Depends");
    assert!(depends.starts_with("libc6 (>= 2."), "Depends must name libc6 with a version: {depends}");
    for dep in depends.split(", ") {
        let name = dep.split(' ').next().unwrap_or_default();
        assert!(["libc6", "libgcc-s1"].contains(&name), "unexpected dependency {dep} in {depends}");
    }
    let list = text(&run(Command::new("dpkg-deb").arg("-c").arg(deb)));
    let mut want: Vec<String> = PROGRAMS.iter().map(|p| format!("./usr/bin/{p}")).collect();
    want.extend(PROGRAMS.iter().map(|p| format!("./usr/share/man/man1/{p}.1.gz")));
    want.push(format!("./usr/lib/{triplet}/pktio/libnetstack_preload.so"));
    for f in [
        "./lib/systemd/system/pktio-hugepages.service",
        "./etc/pktio/hugepages.conf",
        "./usr/share/doc/pktio/copyright",
        "./usr/share/doc/pktio/changelog.gz",
        "./usr/share/doc/pktio/examples/netstack.toml",
        "./usr/share/doc/pktio/examples/l3fwd-v4.cfg",
    ] {
        want.push(f.to_string());
    }
    for w in &want {
        assert!(list.lines().any(|l| l.ends_with(&format!(" {w}"))), "{} lacks {w}:\n{list}", deb.display());
    }
    // Disabled by default: no enablement link anywhere in the package.
    assert!(!list.contains("./etc/systemd/"), "the hugepages service must ship disabled:\n{list}");
}

/// An empty dpkg database in `root` (dpkg --root then installs there only).
fn scratch_root(root: &Path) {
    for d in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"] {
        std::fs::create_dir_all(root.join(d)).expect("scratch root");
    }
    for f in ["var/lib/dpkg/status", "var/lib/dpkg/available"] {
        std::fs::write(root.join(f), "").expect("scratch root");
    }
}

/// Every path under `root` but dpkg's own database.
fn tree(root: &Path) -> BTreeSet<PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeSet<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).expect("under root").to_path_buf();
            if rel.starts_with("var/lib/dpkg") {
                continue;
            }
            out.insert(rel);
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&p, root, out);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, root, &mut out);
    out
}

fn dpkg(root: &Path) -> Command {
    let mut c = Command::new("dpkg");
    // The scratch root holds no libc6 package (the host's C library runs the programs): only that is forced.
    c.arg(format!("--root={}", root.display())).arg("--force-depends");
    c
}

/// Runs `program` of `arch` (arm64 through qemu-user with the cross C library).
fn command_for(arch: &str, program: &Path) -> Command {
    if arch == "arm64" {
        let mut c = Command::new("qemu-aarch64-static");
        c.args(["-L", "/usr/aarch64-linux-gnu"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// Every program answers --help; testpmd-rs forwards between two null ports for a second and prints its totals.
fn run_programs(arch: &str, bin: &Path) {
    let machine = if arch == "arm64" { "AArch64" } else { "X86-64" };
    for p in PROGRAMS {
        let header = text(&run(Command::new("readelf").arg("-h").arg(bin.join(p))));
        assert!(header.contains(machine), "{p} in the {arch} package is not an {machine} program:\n{header}");
        let out = run(command_for(arch, &bin.join(p)).arg("--help"));
        let help = text(&out);
        assert!(help.to_lowercase().contains("usage"), "{p} --help ({arch}) printed no usage:\n{help}");
    }
    let out = command_for(arch, &bin.join("testpmd-rs"))
        .args(["-l", "0", "--no-huge", "--vdev", "net_null0", "--vdev", "net_null1", "--", "--forward-mode=io"])
        .args(["--stats-period", "1"])
        .stdin(std::process::Stdio::null())
        .output_with_interrupt_after(std::time::Duration::from_secs(1));
    let log = text(&out);
    let rx = testkit::last_number(&log, "RX-packets:").unwrap_or(0);
    assert!(rx > 0, "testpmd-rs ({arch}) forwarded nothing in its 1 s io run:\n{log}");
    assert!(log.contains("Bye"), "testpmd-rs ({arch}) did not end cleanly on SIGINT:\n{log}");
}

/// `Command::output` with a SIGINT after `after` (testpmd-rs's non-interactive run ends on it, printing totals).
trait InterruptAfter {
    fn output_with_interrupt_after(&mut self, after: std::time::Duration) -> Output;
}

impl InterruptAfter for Command {
    fn output_with_interrupt_after(&mut self, after: std::time::Duration) -> Output {
        let child = self
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{self:?}: {e}"));
        let pid = child.id() as libc::pid_t;
        let killer = std::thread::spawn(move || {
            std::thread::sleep(after);
            // SAFETY: kill(2) on the child this test spawned; no memory is passed.
            unsafe { libc::kill(pid, libc::SIGINT) };
        });
        let out = child.wait_with_output().expect("wait");
        killer.join().expect("killer");
        out
    }
}

/// Installs `deb` into a fresh scratch root, runs its programs from there, purges it and checks nothing is left.
fn install_run_purge(deb: &Path, arch: &str, dir: &TempDir) {
    let root = dir.file("root");
    scratch_root(&root);
    if arch == "arm64" {
        run(dpkg(&root).arg("--add-architecture").arg("arm64"));
    }
    let before = tree(&root);
    run(dpkg(&root).arg("-i").arg(deb));
    let status = text(&run(dpkg(&root).args(["-s", "pktio"])));
    assert!(status.contains("Status: install ok installed"), "not installed:\n{status}");
    let conf = root.join("etc/pktio/hugepages.conf");
    assert!(conf.is_file(), "the conffile was not installed");
    run_programs(arch, &root.join("usr/bin"));
    run(dpkg(&root).args(["--purge", "pktio"]));
    let after = tree(&root);
    let left: Vec<_> = after.difference(&before).collect();
    assert!(left.is_empty(), "purging pktio left files behind: {left:?}");
    let status = text(&dpkg(&root).args(["-s", "pktio"]).output().expect("dpkg -s"));
    assert!(status.contains("not installed"), "pktio still known to dpkg after purge:\n{status}");
}

fn ready(arch: &str) -> bool {
    let mut tools = vec!["dpkg-deb", "lintian", "readelf"];
    if arch == "arm64" {
        tools.extend(["aarch64-linux-gnu-gcc", "aarch64-linux-gnu-strip", "qemu-aarch64-static"]);
    }
    let missing: Vec<_> = tools.into_iter().filter(|t| !have(t)).collect();
    testkit::require(
        REQUIRED,
        missing.is_empty() && testkit::is_root(),
        &format!("the {arch} package test needs root and {missing:?}: run `sudo bash scripts/setup.sh`"),
    )
}

#[test]
fn amd64_package_builds_installs_into_a_scratch_root_runs_and_purges_cleanly() {
    if std::env::consts::ARCH != "x86_64" || !ready("amd64") {
        return;
    }
    let dir = TempDir::new("package-amd64");
    let (deb, lintian) = build("amd64", &dir);
    eprintln!("{}: {} KiB\n{lintian}", deb.display(), std::fs::metadata(&deb).map(|m| m.len() / 1024).unwrap_or(0));
    check_contents(&deb, "amd64", "x86_64-linux-gnu");
    install_run_purge(&deb, "amd64", &dir);
}

#[test]
fn arm64_package_builds_installs_and_its_programs_run_under_qemu_user() {
    if std::env::consts::ARCH != "x86_64" || !ready("arm64") {
        return;
    }
    let dir = TempDir::new("package-arm64");
    let (deb, lintian) = build("arm64", &dir);
    eprintln!("{}: {} KiB\n{lintian}", deb.display(), std::fs::metadata(&deb).map(|m| m.len() / 1024).unwrap_or(0));
    check_contents(&deb, "arm64", "aarch64-linux-gnu");
    install_run_purge(&deb, "arm64", &dir);
}
