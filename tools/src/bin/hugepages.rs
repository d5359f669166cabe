//! `hugepages`: show, reserve, clear and mount hugepages per NUMA node (like DPDK's `dpdk-hugepages.py`).
//! Run `hugepages --help` for the options; the logic lives in [`hugepage::cli`].

use std::process::ExitCode;

use hugepage::cli::{self, Host};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    match cli::run(&args, &Host::default(), &mut out, &mut err) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hugepages: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
