//! `--vdev` strings: parsing never panics, a parsed name is a valid device name, and opening the harmless software
//! ports (net_null, net_ring) from any parsed devargs either works or fails with an error, never a panic.
//! Ports that reach the kernel or the file system (tap, af_packet, pcap) are never opened from fuzzed input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pktio::devargs::Devargs;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(args) = Devargs::parse(text) else { return };
    assert!(!args.name.is_empty());
    assert!(args.name.starts_with(args.driver.as_str()));
    for (k, _) in &args.args {
        assert!(!k.is_empty());
        let _ = args.parse_or::<u32>(k, 0);
        let _ = args.flag(k, false);
    }
    let _ = args.check_keys(&["size", "copy", "no-rx", "link", "queues"]);
    if matches!(args.driver.as_str(), "net_null" | "net_ring") && text.len() < 256 {
        let _ = swports::open_vdev(text);
    }
});
