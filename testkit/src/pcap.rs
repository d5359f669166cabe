//! pcap files for tests: write inputs, read outputs, compare frame by frame.

use swports::pcap_file::{read_all, PcapWriter};

pub fn write_pcap(path: &str, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::create(path).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(1_700_000_000_000_000_000 + i as u64 * 1000, f).unwrap();
    }
    w.flush().unwrap();
}

pub fn read_frames(path: &str) -> Vec<Vec<u8>> {
    read_all(path).unwrap().into_iter().map(|r| r.data).collect()
}

pub fn assert_frames_eq(got: &[Vec<u8>], want: &[Vec<u8>]) {
    assert_eq!(got.len(), want.len(), "frame count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "frame {i} differs");
    }
}

/// Requires `got` to be `want` repeated in order from some frame on (an input replayed without end, captured
/// from an arbitrary point): every frame byte for byte.
pub fn assert_cyclic_run(got: &[Vec<u8>], want: &[Vec<u8>]) {
    assert!(!got.is_empty(), "nothing captured");
    let first = want.iter().position(|w| w == &got[0]).unwrap_or_else(|| {
        panic!("captured frame 0 is none of the expected ones: {:02x?}", &got[0][..got[0].len().min(64)])
    });
    for (k, g) in got.iter().enumerate() {
        assert_eq!(g, &want[(first + k) % want.len()], "captured frame {k} (from expected frame {first} on)");
    }
}
