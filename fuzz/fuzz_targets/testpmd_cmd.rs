//! The `testpmd>` prompt: any sequence of command lines, run against a live application on two null ports, either
//! works or prints an error; it never panics, and after `stop` every buffer is back in the pool. Lines that write
//! files (`set record`) or leave (`quit`) are not run.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use testpmd_rs::app::App;
use testpmd_rs::cli;
use testpmd_rs::params::{self, Parsed};

thread_local! {
    static APP: RefCell<App> = RefCell::new(new_app());
}

fn new_app() -> App {
    // The commands print statistics blocks: keep them off the fuzzer's output.
    let devnull = std::fs::OpenOptions::new().write(true).open("/dev/null").expect("/dev/null");
    // SAFETY: dup2 on two valid descriptors; stdout is replaced for the whole (single-threaded) fuzzing process.
    unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&devnull), 1) };
    let eal_args = ["-l", "0", "--no-huge", "--vdev", "net_null0", "--vdev", "net_null1"];
    let (eal, _) = eal::init(eal_args).expect("EAL on two null ports");
    let Ok(Parsed::Run(p)) = params::parse(&[]) else { panic!("default testpmd parameters") };
    App::new(eal, &p).expect("application")
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    APP.with(|app| {
        let mut app = app.borrow_mut();
        for line in text.lines().take(16) {
            if line.contains("record") || line.split_whitespace().next() == Some("quit") {
                continue;
            }
            let _ = cli::execute(&mut app, line);
        }
        if app.is_forwarding() {
            app.stop().expect("stop after forwarding");
        }
    });
});
