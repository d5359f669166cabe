//! The RSS flow set the drivers' tests inject, the per-queue check of where each flow landed, and a Toeplitz hash
//! of this crate's own (checked against the published verification vectors), independent of every driver and model.

use mempool::{ol_flags, ptype, PacketBatch};
use pktio::RxQueue;

use crate::frames::{tcp_frame, udp_frame};

/// One flow of the RSS tests: its frame and the Toeplitz input of it (IPv4 addresses then ports, as every NIC here
/// hashes TCP/UDP over IPv4).
pub struct RssFlow {
    /// The hash input.
    pub tuple: Vec<u8>,
    /// The frame (to `mac`), a third of them TCP, the rest UDP of varying lengths.
    pub frame: Vec<u8>,
}

/// The `n` flows the drivers' RSS tests inject, addressed to `mac`.
pub fn rss_flows(mac: [u8; 6], n: u32) -> Vec<RssFlow> {
    (0..n)
        .map(|i| {
            let ips = ([10, 0, (i >> 8) as u8, i as u8], [192, 168, 1, (i * 7) as u8]);
            let ports = (1024 + i as u16 * 13, 80 + (i % 5) as u16);
            let src = [2, 0, 0, 0, 0, 9];
            let frame = if i % 3 == 0 {
                tcp_frame(mac, src, ips, ports, 80)
            } else {
                udp_frame(mac, src, ips, ports, 64 + i as usize % 100)
            };
            let mut tuple = [ips.0, ips.1].concat();
            tuple.extend_from_slice(&ports.0.to_be_bytes());
            tuple.extend_from_slice(&ports.1.to_be_bytes());
            RssFlow { tuple, frame }
        })
        .collect()
}

/// Drains every queue and requires, per queue, exactly the `(hash, frame)` pairs of `expected` in order, each
/// packet flagged with its RSS hash and typed Ethernet/IPv4/TCP or UDP, and every queue to have received some
/// flows.
pub fn assert_rss_spread<Q: RxQueue>(queues: &mut [Q], expected: &[Vec<(u32, Vec<u8>)>]) {
    let mut total = 0;
    for (q, rxq) in queues.iter_mut().enumerate() {
        let mut got = Vec::new();
        let mut batch = PacketBatch::with_capacity(64);
        while rxq.rx_burst(&mut batch) > 0 {
            for m in batch.iter() {
                assert_eq!(m.ol_flags() & ol_flags::RX_RSS_HASH, ol_flags::RX_RSS_HASH);
                let l4 = if m.data()[23] == 6 { ptype::L4_TCP } else { ptype::L4_UDP };
                assert_eq!(m.packet_type(), ptype::L2_ETHER | ptype::L3_IPV4 | l4, "queue {q}: packet type");
                got.push((m.rss_hash(), m.data().to_vec()));
            }
            batch.clear();
        }
        assert_eq!(got, expected[q], "queue {q}: hashes and frames in order");
        total += got.len();
    }
    assert_eq!(total, expected.iter().map(Vec::len).sum::<usize>());
    assert!(
        expected.iter().all(|e| !e.is_empty()),
        "every queue got flows: {:?}",
        expected.iter().map(Vec::len).collect::<Vec<_>>()
    );
}

/// The Toeplitz hash of `input` under `key` (Microsoft's RSS definition: for every set bit of the input, the 32
/// key bits starting at that bit's position are XORed into the hash; key bits past the end read as 0).
pub fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    let mut hash = 0u32;
    let mut window = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
    let mut next_bit = 32;
    for byte in input {
        for b in (0..8).rev() {
            if byte >> b & 1 == 1 {
                hash ^= window;
            }
            let kb = key.get(next_bit / 8).map_or(0, |k| k >> (7 - next_bit % 8) & 1);
            window = window << 1 | kb as u32;
            next_bit += 1;
        }
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Microsoft's RSS verification key.
    const MS_KEY: [u8; 40] = [
        0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca,
        0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b,
        0xbe, 0xac, 0x01, 0xfa,
    ];

    fn tuple(ips: ([u8; 4], [u8; 4]), ports: Option<(u16, u16)>) -> Vec<u8> {
        let mut v = [ips.0, ips.1].concat();
        if let Some((s, d)) = ports {
            v.extend_from_slice(&s.to_be_bytes());
            v.extend_from_slice(&d.to_be_bytes());
        }
        v
    }

    #[test]
    fn toeplitz_matches_the_published_vectors() {
        let ips = ([66, 9, 149, 187], [161, 142, 100, 80]);
        assert_eq!(toeplitz(&MS_KEY, &tuple(ips, None)), 0x323e_8fc2);
        assert_eq!(toeplitz(&MS_KEY, &tuple(ips, Some((2794, 1766)))), 0x51cc_c178);
        let ips = ([199, 92, 111, 2], [65, 69, 140, 83]);
        assert_eq!(toeplitz(&MS_KEY, &tuple(ips, None)), 0xd718_262a);
        assert_eq!(toeplitz(&MS_KEY, &tuple(ips, Some((14230, 4739)))), 0xc626_b0ea);
    }

    #[test]
    fn the_flow_set_carries_its_own_hash_input() {
        let flows = rss_flows([2, 0, 0, 0, 0, 1], 6);
        for f in &flows {
            // IPv4 source and destination, then the two ports, as in the frame.
            assert_eq!(&f.tuple[..8], &f.frame[26..34]);
            assert_eq!(&f.tuple[8..12], &f.frame[34..38]);
        }
        assert_eq!(flows[0].frame[23], 6, "a third TCP");
        assert_eq!(flows[1].frame[23], 17, "the rest UDP");
    }
}
