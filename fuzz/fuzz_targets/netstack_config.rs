//! netstack's TOML configuration (`--config FILE` of udp-echo, kv-server, http-server, netstack-ctl): any text
//! either gives a checked configuration or an error naming the file, a line of it and a field, never a panic.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use netstack::{Config, Error};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Config::parse(Path::new("fuzz.toml"), text) {
        Ok(c) => {
            assert!(!c.device.is_empty());
            assert!(c.prefix_len <= 32);
            assert!(!c.lcores.is_empty());
        }
        Err(Error::Config { file, line, .. }) => {
            assert_eq!(file, Path::new("fuzz.toml"));
            assert!(line >= 1 && line <= text.lines().count().max(1) + 1, "line {line}");
        }
        Err(e) => panic!("a configuration text gave another kind of error: {e}"),
    }
});
