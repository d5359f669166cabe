//! The shared test support (the `testkit` crate).

pub use testkit::*;
