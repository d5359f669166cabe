//! testpmd-rs: dpdk-testpmd's command line, prompt and statistics on this project's ports.
//!
//! ```text
//! testpmd-rs -l 0-1 --no-huge --vdev net_ring0,link=w --vdev net_ring1,link=w -- -i
//! testpmd> start tx_first
//! testpmd> stop
//! testpmd> quit
//! ```
//!
//! Forwarding runs on the EAL's worker lcores (`-l 0-1`: lcore 0 keeps the prompt, lcore 1 forwards). With a
//! single lcore, forwarding runs on an unpinned helper thread (without a mempool cache) and a warning says so.
//!
//! Without `-i`, forwarding starts at once; with `--stats-period N` port statistics are printed every N seconds
//! until Ctrl-C (SIGINT) or SIGTERM, as testpmd does; without it, until Enter, end of input or Ctrl-C. Then the
//! forward statistics are printed and the ports closed.

#![deny(clippy::undocumented_unsafe_blocks)]

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use testpmd_rs::app::App;
use testpmd_rs::cli;
use testpmd_rs::params::{self, Parsed};

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let program = if args.is_empty() { "testpmd-rs".to_string() } else { args.remove(0) };
    let (eal, app_args) = eal::init_with_or_exit(&program, &pmds::registry(), args);
    let params = match params::parse(&app_args) {
        Ok(Parsed::Run(p)) => p,
        Ok(Parsed::Help) => {
            println!("{}", params::usage(&program));
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!("testpmd-rs: {e}");
            eprintln!("(testpmd options come after --; see {program} -- --help)");
            std::process::exit(1);
        }
    };
    for n in &params.notes {
        println!("Note: {n}");
    }
    if params.mlockall {
        lock_memory();
    }
    let mut app = match App::new(eal, &params) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("EAL: Error - exiting with code: 1\n  Cause: {e}");
            std::process::exit(1);
        }
    };
    let tx_first = u32::from(params.tx_first);
    if params.interactive {
        // As dpdk-testpmd: a file that fails is reported and the prompt comes anyway.
        if let Some(file) = &params.cmdline_file {
            if let Err(e) = cli::run_file(&mut app, file) {
                println!("{e}");
            }
        }
        if params.auto_start {
            println!("Start automatic packet forwarding");
            if let Err(e) = app.start(tx_first) {
                println!("{e}");
            }
        }
        cli::run_prompt(app);
        return;
    }
    // dpdk-testpmd runs the file without -i too, before forwarding starts. Here a file that cannot be read is an
    // error: a script that names a missing file must not forward as if it had run.
    if let Some(file) = &params.cmdline_file {
        if let Err(e) = cli::run_file(&mut app, file) {
            eprintln!("EAL: Error - exiting with code: 1\n  Cause: {e}");
            app.quit();
            std::process::exit(1);
        }
    }
    println!("No commandline core given, start packet forwarding");
    if app.is_forwarding() {
        println!("Packet forwarding already started");
    } else if let Err(e) = app.start(tx_first) {
        eprintln!("{e}");
        app.quit();
        std::process::exit(1);
    }
    if params.stats_period > 0 {
        let period = Duration::from_secs(params.stats_period);
        let clear = std::io::stdout().is_terminal();
        let mut next = Instant::now() + period;
        while !eal::stop_requested() {
            std::thread::sleep(Duration::from_millis(20));
            if Instant::now() >= next {
                next += period;
                if clear {
                    print!("\x1b[2J\x1b[1;1H");
                }
                print!("\nPort statistics ====================================");
                let ids = app.fwd_ports();
                app.show_port_stats(&ids);
                let _ = std::io::stdout().flush();
            }
        }
        println!("\nSignal received, preparing to exit...");
    } else {
        println!("Press enter to exit");
        let _ = std::io::stdout().flush();
        std::thread::spawn(|| {
            // Any line ends the run; a bounded read, so that input without newlines cannot fill the memory.
            let mut line = Vec::new();
            let _ = testpmd_rs::lines::read_line(&mut std::io::stdin().lock(), &mut line);
            eal::request_stop();
        });
        while !eal::stop_requested() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    app.quit();
}

/// `--mlockall`: keeps every page of the process in memory, as dpdk-testpmd does with it; a failure (no
/// CAP_IPC_LOCK, a low RLIMIT_MEMLOCK) is reported and the run goes on, as there.
fn lock_memory() {
    // SAFETY: mlockall takes flags only and touches no memory of ours.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc != 0 {
        println!("testpmd-rs: mlockall() failed with error \"{}\"", std::io::Error::last_os_error());
    }
}
