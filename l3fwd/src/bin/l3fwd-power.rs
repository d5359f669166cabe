//! The l3fwd-power binary: l3fwd (its code and command line) whose lcores sleep on their RX queues' interrupts
//! when idle (`l3fwd::power`); `--interrupt-only` sleeps at the first empty round.

#![deny(clippy::undocumented_unsafe_blocks)]

use l3fwd::app::App;
use l3fwd::params::{self, Parsed};

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let program = if args.is_empty() { "l3fwd-power".to_string() } else { args.remove(0) };
    let (eal, app_args) = eal::init_with_or_exit(&program, &pmds::registry(), args);
    let params = match params::parse_power(&app_args) {
        Ok(Parsed::Run(p)) => *p,
        Ok(Parsed::Help) => {
            println!("{}", params::usage(&program));
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!(
                "{}\nEAL: Error - exiting with code: 1\n  Cause: Invalid L3FWD_POWER parameters: {e}",
                params::usage(&program)
            );
            std::process::exit(1);
        }
    };
    if let Err(e) = App::new(eal, params).and_then(App::run) {
        eprintln!("EAL: Error - exiting with code: 1\n  Cause: {e}");
        std::process::exit(1);
    }
}
