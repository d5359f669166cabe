//! The one required-or-skip switch. A test that needs something the machine may lack (root, a namespace, a tool,
//! hugepages, QEMU) asks [`require`] before it starts: where the project's test command set the test group's
//! `*_TESTS_REQUIRED` variable to 1 a missing prerequisite is a broken machine and fails the test; anywhere else the
//! test says loudly what it needs and passes without running.

/// Whether the test group `env_var` names (`NETNS_TESTS_REQUIRED`, `DPDK_TESTS_REQUIRED`, ...) must run here.
pub fn required(env_var: &str) -> bool {
    std::env::var(env_var).is_ok_and(|v| v == "1")
}

/// Skips the calling test, or fails it: panics with `reason` when `env_var` is 1, else prints a `SKIPPED:` line with
/// the reason and the variable that would make it a failure, and returns false (`if !skip(..) { return; }` reads as
/// "skip"). For a test whose prerequisite is known missing.
#[track_caller]
pub fn skip(env_var: &str, reason: &str) -> bool {
    skip_any(&[env_var], reason)
}

/// [`skip`] for a test that belongs to several groups: it fails where any of `env_vars` is 1.
#[track_caller]
pub fn skip_any(env_vars: &[&str], reason: &str) -> bool {
    if let Some(var) = env_vars.iter().find(|v| required(v)) {
        panic!("{var}=1 but the test cannot run: {reason}");
    }
    eprintln!("SKIPPED: {reason} ({}=1 makes this a failure)", env_vars.join("=1 or "));
    false
}

/// The required-or-skip check in one call: true when `available` holds; otherwise [`skip`] (a panic under
/// `env_var=1`, a loud SKIPPED line and false anywhere else).
///
/// ```no_run
/// if !testkit::require("NETNS_TESTS_REQUIRED", testkit::is_root(), "needs root (network namespaces)") {
///     return;
/// }
/// ```
#[track_caller]
pub fn require(env_var: &str, available: bool, reason: &str) -> bool {
    available || skip(env_var, reason)
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn available_runs_and_missing_skips_without_the_variable() {
        assert!(require("TESTKIT_SELFTEST_UNSET_REQUIRED", true, "never printed"));
        assert!(!require("TESTKIT_SELFTEST_UNSET_REQUIRED", false, "a missing thing"));
    }

    #[test]
    fn missing_fails_under_the_variable() {
        // Through a child run of this test binary: the variable is process-wide and tests run in parallel.
        if std::env::var("TESTKIT_SELFTEST_CHILD").is_ok() {
            require("TESTKIT_SELFTEST_REQUIRED", false, "a missing thing");
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "require::tests::missing_fails_under_the_variable", "--nocapture"])
            .env("TESTKIT_SELFTEST_CHILD", "1")
            .env("TESTKIT_SELFTEST_REQUIRED", "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}");
        assert!(text.contains("TESTKIT_SELFTEST_REQUIRED=1 but the test cannot run: a missing thing"), "{text}");
    }
}
