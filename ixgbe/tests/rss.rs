//! RSS spreads flows exactly as the Toeplitz hash over the programmed key and the redirection table say. The
//! expected hash is computed here, independently of both the driver and the model.
mod common;

use common::*;
use mempool::{ol_flags, ptype, PacketBatch};
use nicsim::X540Config;
use pktio::TypedQueues;
use pktio::{EthDev, PortConfig, RssConfig, RssHashFunctions, RxQueue};

/// Microsoft's RSS verification key.
const MS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b,
    0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac,
    0x01, 0xfa,
];

fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
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

fn tuple(ips: ([u8; 4], [u8; 4]), ports: Option<(u16, u16)>) -> Vec<u8> {
    let mut v = [ips.0, ips.1].concat();
    if let Some((s, d)) = ports {
        v.extend_from_slice(&s.to_be_bytes());
        v.extend_from_slice(&d.to_be_bytes());
    }
    v
}

#[test]
fn toeplitz_matches_the_published_vector() {
    let ips = ([66, 9, 149, 187], [161, 142, 100, 80]);
    assert_eq!(toeplitz(&MS_KEY, &tuple(ips, None)), 0x323e_8fc2);
    assert_eq!(toeplitz(&MS_KEY, &tuple(ips, Some((2794, 1766)))), 0x51cc_c178);
}

fn run(nq: u16, reta: Option<Vec<u16>>) {
    let (mut dev, port) = single(X540Config::default());
    let pool = pool(4096, 2048);
    let config = PortConfig {
        rx_queues: nq,
        rx_desc: 256,
        tx_desc: 64,
        rss: Some(RssConfig { key: Some(MS_KEY.to_vec()), functions: RssHashFunctions::ALL }),
        ..Default::default()
    };
    start(&mut dev, &config, &pool);
    let table: Vec<u16> = match &reta {
        Some(t) => {
            dev.reta_update(t).unwrap();
            (0..128).map(|e| t[e % t.len()]).collect()
        }
        None => (0..128).map(|e| e as u16 % nq).collect(),
    };
    let mac = dev.mac_addr().0;
    let mut queues: Vec<_> = (0..nq).map(|q| dev.rx_queue_typed(q).unwrap()).collect();
    let mut expected = vec![Vec::new(); nq as usize];
    let mut sent = 0;
    for i in 0..200u32 {
        let ips = ([10, 0, (i >> 8) as u8, i as u8], [192, 168, 1, (i * 7) as u8]);
        let ports = (1024 + i as u16 * 13, 80 + (i % 5) as u16);
        let tcp = i % 3 == 0;
        let frame = if tcp {
            tcp_frame(mac, [2, 0, 0, 0, 0, 9], ips, ports, 80)
        } else {
            udp_frame(mac, [2, 0, 0, 0, 0, 9], ips, ports, 64 + i as usize % 100)
        };
        let hash = toeplitz(&MS_KEY, &tuple(ips, Some(ports)));
        let q = table[(hash & 127) as usize] as usize;
        expected[q].push((hash, frame.clone(), tcp));
        assert!(port.inject(&frame));
        sent += 1;
        if sent % 64 == 0 {
            port.step();
        }
    }
    port.step();
    let mut total = 0;
    for (q, rxq) in queues.iter_mut().enumerate() {
        let mut got = Vec::new();
        let mut batch = PacketBatch::with_capacity(64);
        while rxq.rx_burst(&mut batch) > 0 {
            for m in batch.iter() {
                assert_eq!(m.ol_flags() & ol_flags::RX_RSS_HASH, ol_flags::RX_RSS_HASH);
                let l4 = if m.data()[23] == 6 { ptype::L4_TCP } else { ptype::L4_UDP };
                assert_eq!(m.packet_type(), ptype::L2_ETHER | ptype::L3_IPV4 | l4);
                got.push((m.rss_hash(), m.data().to_vec()));
            }
            batch.clear();
        }
        let want: Vec<(u32, Vec<u8>)> = expected[q].iter().map(|(h, f, _)| (*h, f.clone())).collect();
        assert_eq!(got.len(), want.len(), "queue {q}");
        assert_eq!(got, want, "queue {q}: hashes and frames in order");
        total += got.len();
    }
    assert_eq!(total, 200);
    assert!(
        expected.iter().all(|e| !e.is_empty()),
        "every queue got some flows: {:?}",
        expected.iter().map(Vec::len).collect::<Vec<_>>()
    );
    drop(queues);
    dev.stop().unwrap();
    assert!(pool.is_full());
    port.assert_no_faults();
}

#[test]
fn rss_spreads_flows_over_four_queues_as_toeplitz_and_reta_say() {
    run(4, None);
}

#[test]
fn rss_follows_an_updated_redirection_table_over_sixteen_queues() {
    run(16, Some((0..16).rev().collect()));
}

#[test]
fn rss_is_limited_to_sixteen_queues_by_the_4_bit_redirection_entries() {
    let (mut dev, _port) = single(X540Config::default());
    let config = PortConfig {
        rx_queues: 17,
        rss: Some(RssConfig { key: None, functions: RssHashFunctions::ALL }),
        ..Default::default()
    };
    let err = dev.configure(&config).unwrap_err().to_string();
    assert!(err.contains("16"), "{err}");
    dev.configure(&PortConfig { rx_queues: 4, rss: Some(RssConfig::default()), ..Default::default() }).unwrap();
    assert!(dev.reta_update(&[0, 1, 2, 4]).is_err());
}
