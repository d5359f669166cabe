//! The shared test support (the `apptest` crate).

pub use apptest::*;
