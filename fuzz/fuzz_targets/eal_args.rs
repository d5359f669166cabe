//! EAL command lines: any argument vector either parses or yields an error, never a panic; core lists and masks
//! name only the CPUs they were given.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let args: Vec<String> = text.split(['\n', ' ']).map(str::to_string).collect();
    let _ = eal::args::parse(&args, &[0, 1]);
    if let Some(first) = args.first() {
        if let Ok(cores) = eal::args::parse_corelist(first) {
            assert!(cores.iter().all(|&c| c < 1 << 16));
        }
        let _ = eal::args::parse_coremask(first);
        let _ = eal::args::LogLevel::parse(first);
    }
});
