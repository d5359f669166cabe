//! The driver list is the embedder's choice: the EAL links no driver, ixgbe links no model, the default build of
//! this crate holds every driver and no model, and an "only ixgbe" build holds net_ixgbe/net_igb and nothing else. Checked through cargo itself (dependency graphs, a build
//! and the unit tests with only the `ixgbe` feature), so a stray dependency fails here, not in an embedder's build.

use std::path::PathBuf;
use std::process::Command;

/// Crates that only an embedder who asked for them should get.
const OPTIONAL: &[&str] = &["ixgbe", "virtio", "nicsim", "simports", "pmds"];

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("pmds/ sits in the workspace").to_path_buf()
}

/// Runs cargo in the workspace; its stdout, or a panic with its stderr.
fn cargo(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO")).args(args).current_dir(workspace()).output().expect("run cargo");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cargo {}: {}\n{stderr}", args.join(" "), out.status);
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The packages in the normal (non-dev, non-build) dependency graph of `package` with `extra` cargo arguments.
fn normal_deps(package: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["tree", "-p", package, "-e", "normal", "--prefix", "none", "--format", "{p}"];
    args.extend_from_slice(extra);
    let mut names: Vec<String> =
        cargo(&args).lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect();
    names.sort();
    names.dedup();
    names
}

fn assert_none_of(package: &str, deps: &[String], unwanted: &[&str]) {
    let found: Vec<&str> = unwanted.iter().copied().filter(|u| deps.iter().any(|d| d == u)).collect();
    assert!(found.is_empty(), "{package} depends on {found:?} (normal dependencies: {deps:?})");
}

#[test]
fn the_eal_and_the_drivers_link_only_what_the_embedder_asked_for() {
    let eal = normal_deps("eal", &[]);
    assert!(eal.iter().any(|d| d == "pktio"), "the tree was read: {eal:?}");
    assert_none_of("eal", &eal, OPTIONAL);

    let ixgbe = normal_deps("ixgbe", &[]);
    assert_none_of("ixgbe", &ixgbe, &["nicsim", "simports", "virtio", "eal", "pmds"]);

    let only_ixgbe = normal_deps("pmds", &["--no-default-features", "--features", "ixgbe"]);
    assert!(only_ixgbe.iter().any(|d| d == "ixgbe"), "{only_ixgbe:?}");
    assert_none_of("pmds (features = [\"ixgbe\"])", &only_ixgbe, &["nicsim", "simports", "virtio"]);

    // The default (production) build has every driver and no model: `sim` is opt-in.
    let default = normal_deps("pmds", &[]);
    for want in ["hinic3", "i40e", "ixgbe", "virtio"] {
        assert!(default.iter().any(|d| d == want), "default pmds lacks {want}: {default:?}");
    }
    assert_none_of("pmds (default features)", &default, &["nicsim", "simports"]);
    // With `sim` the models are there: the checks above would notice a renamed crate.
    let sim = normal_deps("pmds", &["--features", "sim"]);
    for want in ["simports", "nicsim"] {
        assert!(sim.iter().any(|d| d == want), "pmds with sim lacks {want}: {sim:?}");
    }
}

#[test]
fn pktio_and_ixgbe_build_and_test_alone() {
    cargo(&["build", "--quiet", "-p", "pktio", "-p", "ixgbe", "--lib"]);
    // The registry of an "only ixgbe" build: its unit tests assert exactly net_ixgbe and net_igb are in it.
    let out = cargo(&["test", "--quiet", "-p", "pmds", "--no-default-features", "--features", "ixgbe", "--lib"]);
    assert!(out.contains("test result: ok. 2 passed"), "{out}");
}
