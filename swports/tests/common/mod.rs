//! Helpers shared by several test binaries (each `mod common;` compiles the lot, and uses part of it).

#[allow(dead_code)]
pub mod netns;
