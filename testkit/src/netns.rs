//! Network namespaces for tests that talk to the kernel (swports' af_packet/af_xdp/tap ports, testpmd-rs, netstack,
//! the servers): whether the machine can (root and the tools), `ip` itself, and namespaces removed on drop. Test
//! traffic stays inside the namespaces a test made; the machine's own interfaces are never touched.

use std::process::Command;

/// Whether `tool` is on `PATH`.
pub fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

/// Whether a namespace test can run here: root, and every one of `tools` on `PATH`; otherwise it is skipped with
/// what is missing, or fails where any of `groups` (`NETNS_TESTS_REQUIRED`, ...) is 1 ([`crate::skip_any`]).
pub fn usable_for(groups: &[&str], tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !have(t)).collect();
    if !crate::is_root() {
        return crate::skip_any(groups, "needs root to create network namespaces (run as root: sudo -E cargo test)");
    }
    if !missing.is_empty() {
        let reason = format!("needs {} (bash scripts/setup.sh installs them)", missing.join(", "));
        return crate::skip_any(groups, &reason);
    }
    true
}

/// [`usable_for`] the namespace tests (`NETNS_TESTS_REQUIRED`).
pub fn usable(tools: &[&str]) -> bool {
    usable_for(&["NETNS_TESTS_REQUIRED"], tools)
}

/// Runs `cmd args`, requires success, and returns its stdout and stderr.
#[track_caller]
pub fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("{cmd}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd} {args:?}:\n{text}");
    text
}

/// `ip args`, required to succeed.
#[track_caller]
pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

/// The standard output of `ip args`.
pub fn ip_out(args: &[&str]) -> String {
    String::from_utf8_lossy(&Command::new("ip").args(args).output().expect("run ip").stdout).into_owned()
}

/// Network namespaces, each named after the test's tag and this process, loopback up; removed on drop with every
/// interface in them.
pub struct Netns(pub Vec<String>);

impl Netns {
    /// Fresh namespaces `NAME-PID` for each of `names` (a stale one of the same name is removed first).
    pub fn new(names: &[&str]) -> Netns {
        let ns = Netns(names.iter().map(|n| format!("{n}-{}", std::process::id())).collect());
        for n in &ns.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
            ip(&["netns", "add", n]);
            ip(&["-n", n, "link", "set", "lo", "up"]);
        }
        ns
    }

    /// Namespace `i`'s name.
    pub fn name(&self, i: usize) -> &str {
        &self.0[i]
    }

    /// Sets a sysctl inside namespace `i` (best effort: a setting this kernel lacks is left).
    pub fn sysctl(&self, i: usize, setting: &str) {
        let _ = Command::new("ip").args(["netns", "exec", &self.0[i], "sysctl", "-qw", setting]).output();
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}
