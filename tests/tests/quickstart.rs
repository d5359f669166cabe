//! The real-NIC quick start (docs/quickstart.md, and the README) names the tools' flags: each command line in its
//! `sh` blocks is checked against that tool's real `--help`, so a renamed or removed flag fails here instead of in
//! a user's first hour. Only `--help` is run: nothing touches this machine's devices.
//!
//! `l3fwd`'s lines are checked like the others (its EAL options and its own, after `--`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The tools the guide runs, and the package holding each binary.
const TOOLS: &[(&str, &str)] = &[
    ("devbind", "tools"),
    ("hugepages", "tools"),
    ("pktio-doctor", "tools"),
    ("testpmd-rs", "testpmd-rs"),
    ("l3fwd", ""),
];

/// EAL applications: flags before `--` are the EAL's, after it the application's.
const EAL_APPS: &[&str] = &["testpmd-rs", "l3fwd"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(workspace());
    c
}

/// target/<profile>/, from this test's own path (target/<profile>/deps/quickstart-...).
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test path");
    exe.parent().and_then(|d| d.parent()).expect("target dir").to_path_buf()
}

/// Builds the tools (a no-op when they are up to date), l3fwd included.
fn build_tools() {
    let mut c = cargo();
    c.args(["build", "--quiet"]);
    for (bin, package) in TOOLS.iter().filter(|(_, p)| !p.is_empty()) {
        c.args(["-p", package, "--bin", bin]);
    }
    assert!(c.status().expect("cargo build").success(), "building the quick start's tools failed");
    let l3fwd = cargo().args(["build", "--quiet", "-p", "l3fwd", "--bin", "l3fwd"]).output().expect("cargo build");
    assert!(l3fwd.status.success(), "building l3fwd failed:\n{}", String::from_utf8_lossy(&l3fwd.stderr));
}

/// The command lines of the `sh` code blocks of a Markdown file, split at `&&` and without comments.
fn commands(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in markdown.lines() {
        let t = line.trim();
        if let Some(lang) = t.strip_prefix("```") {
            in_sh = !in_sh && (lang == "sh" || lang == "bash");
            continue;
        }
        if in_sh {
            let code = t.split(" #").next().unwrap_or("");
            out.extend(code.split("&&").map(|c| c.trim().to_string()).filter(|c| !c.is_empty()));
        }
    }
    out
}

/// `flag` appears in `usage` as an option: preceded by a space, `[` or `,`, and followed by neither a letter, a
/// digit nor `-` (so `-l` does not match `-lVALUE` or `--log-level`).
fn documents(usage: &str, flag: &str) -> bool {
    usage.match_indices(flag).any(|(i, _)| {
        let before = usage[..i].chars().next_back();
        let after = usage[i + flag.len()..].chars().next();
        matches!(before, None | Some(' ' | '[' | ',' | '\n' | '\t'))
            && !matches!(after, Some(c) if c.is_ascii_alphanumeric() || c == '-')
    })
}

fn help(tool: &Path, args: &[&str]) -> String {
    let out = Command::new(tool).args(args).output().unwrap_or_else(|e| panic!("{}: {e}", tool.display()));
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn the_quick_start_uses_only_flags_the_tools_have() {
    build_tools();
    let guide = std::fs::read_to_string(workspace().join("docs/quickstart.md")).expect("docs/quickstart.md");
    let readme = std::fs::read_to_string(workspace().join("README.md")).expect("README.md");
    assert!(readme.contains("(docs/quickstart.md)"), "the README links the quick start");
    let mut lines = commands(&guide);
    lines.extend(commands(&readme));

    let mut seen = std::collections::BTreeSet::new();
    let mut checked = 0;
    for line in &lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(&(tool, _)) = TOOLS.iter().find(|(t, _)| words.first() == Some(t)) else { continue };
        seen.insert(tool);
        let path = bin_dir().join(tool);
        let split = words.iter().position(|w| *w == "--");
        let (eal_words, app_words) = match split {
            Some(i) if EAL_APPS.contains(&tool) => (&words[1..i], &words[i + 1..]),
            _ => (&words[1..], &words[..0]),
        };
        let usage = help(&path, &["--help"]);
        let app_usage = if EAL_APPS.contains(&tool) {
            help(&path, &["--no-huge", "--no-pci", "--", "--help"])
        } else {
            String::new()
        };
        for (words, usage) in [(eal_words, &usage), (app_words, &app_usage)] {
            for word in words.iter().filter(|w| w.starts_with('-') && w.len() > 1) {
                let flag = word.split('=').next().unwrap();
                assert!(documents(usage, flag), "`{line}`: {tool} has no {flag} option; its help says:\n{usage}");
                checked += 1;
            }
        }
    }
    for (tool, _) in TOOLS {
        assert!(seen.contains(tool), "the quick start never runs {tool}");
    }
    assert!(checked >= 20, "only {checked} flags found: is the guide still parsed?");
}

#[test]
fn the_flag_matcher() {
    let usage = "  -l CORELIST    lcores\n  -a, --allow PCI\n  --log-level LEVEL\n  --config=(p,q,l)\n  [-p]";
    assert!(documents(usage, "-l") && documents(usage, "-a") && documents(usage, "--allow"));
    assert!(documents(usage, "--config") && documents(usage, "-p") && documents(usage, "--log-level"));
    assert!(!documents(usage, "--log") && !documents(usage, "-c") && !documents(usage, "--level"));
    assert_eq!(
        commands("x\n```sh\na -b 1 && c # d\n```\n```text\ne -f\n```\n```sh\ng --h=1   # i\n```"),
        ["a -b 1", "c", "g --h=1"]
    );
}
