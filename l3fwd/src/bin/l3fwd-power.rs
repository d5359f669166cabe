//! The l3fwd-power binary: l3fwd (its code and command line) whose lcores sleep on their RX queues' interrupts
//! when idle (`l3fwd::power`); `--interrupt-only` sleeps at the first empty round.

fn main() {
    l3fwd::app::main_of("l3fwd-power", l3fwd::params::parse_power, "L3FWD_POWER");
}
