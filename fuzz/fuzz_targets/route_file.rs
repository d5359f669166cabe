//! l3fwd's route files (`--rule_ipv4` / `--rule_ipv6`, LPM and EM forms): any bytes either parse to routes within
//! their limits or give one short error naming a line of the input, never a panic. The bounded reader is what
//! parses them: a line longer than LINE_MAX is refused, and a bad token is quoted in part only.
#![no_main]

use libfuzzer_sys::fuzz_target;
use l3fwd::routes::{self, MAX_LINE_LEN};
use l3fwd::Error;

/// Checks one parse of `data` (which has `lines` lines): routes are at most one per line; an error names a line
/// that exists (0: the file as a whole) and stays short.
fn check<T>(result: Result<Vec<T>, Error>, lines: usize) {
    match result {
        Ok(routes) => assert!(routes.len() <= lines),
        Err(Error::RouteFile { path, line, reason }) => {
            assert_eq!(path, "fuzz.cfg");
            assert!(line <= lines, "line {line} of {lines}");
            assert!(reason.len() < 400, "{} bytes of reason", reason.len());
        }
        Err(e) => panic!("a route file gave another kind of error: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let lines = data.split(|&b| b == b'\n').count();
    check(routes::parse_reader("fuzz.cfg", data, routes::parse_lpm_rule::<u32>), lines);
    check(routes::parse_reader("fuzz.cfg", data, routes::parse_lpm_rule::<u128>), lines);
    check(routes::parse_reader("fuzz.cfg", data, routes::parse_em_rule::<u32>), lines);
    check(routes::parse_reader("fuzz.cfg", data, routes::parse_em_rule::<u128>), lines);
    if let Ok(v4) = routes::parse_reader("fuzz.cfg", data, routes::parse_lpm_rule::<u32>) {
        assert!(v4.iter().all(|r| r.depth <= 32 && r.port <= 255));
    }
    if let Ok(v6) = routes::parse_reader("fuzz.cfg", data, routes::parse_lpm_rule::<u128>) {
        assert!(v6.iter().all(|r| r.depth <= 128 && r.port <= 255));
    }
    // One rule by itself (the text after `R`), as long as a line may be.
    if let Ok(text) = std::str::from_utf8(&data[..data.len().min(MAX_LINE_LEN)]) {
        let _ = routes::parse_lpm_rule::<u32>(text);
        let _ = routes::parse_em_rule::<u128>(text);
    }
});
