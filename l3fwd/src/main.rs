//! The l3fwd binary: EAL arguments, then l3fwd's (see the library's documentation).

fn main() {
    l3fwd::app::main_of("l3fwd", l3fwd::params::parse, "L3FWD");
}
