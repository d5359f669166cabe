use super::*;
use crate::lookup::LpmRouter;
use crate::routes;

fn ipv4(dst: [u8; 4], ttl: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[12..14].copy_from_slice(&[8, 0]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&46u16.to_be_bytes());
    f[22] = ttl;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&dst);
    let c = !pkthdr::checksum::data(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f
}

fn router() -> LpmRouter {
    LpmRouter::new(&routes::default_lpm4(), &routes::default_lpm6()).unwrap()
}

#[test]
fn ttl_and_checksum_rewrite_is_byte_exact() {
    let r = router();
    let mut f = ipv4([198, 18, 1, 9], 64);
    let before = f.clone();
    assert_eq!(route(&mut f, 0, &r), Ok(1));
    assert_eq!(f[22], 63);
    // The header still sums right, and only TTL and checksum changed.
    assert!(Ipv4Packet::new_checked(&f[14..]).unwrap().verify_checksum());
    let changed: Vec<usize> = (0..f.len()).filter(|&i| f[i] != before[i]).collect();
    assert!(changed.iter().all(|i| [22, 24, 25].contains(i)), "{changed:?}");
}

#[test]
fn checksum_update_matches_dpdk_at_the_wrap() {
    // DPDK: 0xfeff -> 0xffff (RFC 1624 eqn 3 would give 0x0000); 0xff12 -> 0x0013 (carry wraps round).
    assert_eq!(checksum_after_ttl_decrement(0xfeff), 0xffff);
    assert_eq!(checksum_after_ttl_decrement(0xff12), 0x0013);
    assert_eq!(checksum_after_ttl_decrement(0x1234), 0x1334);
    // Against a full recomputation over many headers.
    for ttl in 2..=255u8 {
        for id in [0u16, 1, 0x7fff, 0xfffe] {
            let mut f = ipv4([198, 18, 0, ttl], ttl);
            f[18..20].copy_from_slice(&id.to_be_bytes());
            let c = !pkthdr::checksum::data(&{
                let mut h = f[14..34].to_vec();
                h[10..12].fill(0);
                h
            });
            f[24..26].copy_from_slice(&c.to_be_bytes());
            route(&mut f, 0, &router()).unwrap();
            assert!(Ipv4Packet::new_checked(&f[14..]).unwrap().verify_checksum(), "ttl {ttl} id {id}");
        }
    }
}

#[test]
fn no_route_and_non_ip_go_back_to_the_input_port() {
    let r = router();
    assert_eq!(route(&mut ipv4([10, 1, 2, 3], 9), 3, &r), Ok(3));
    let mut arp = vec![0u8; 60];
    arp[12..14].copy_from_slice(&[8, 6]);
    assert_eq!(route(&mut arp, 2, &r), Ok(2));
}

/// The burst path gives every packet the output (or drop reason) and the bytes the one-packet path gives, in
/// a burst mixing hits, misses, drops, IPv6 and ARP, with both kinds of table.
#[test]
fn burst_routing_matches_one_packet_routing() {
    use crate::lookup::EmRouter;
    use mempool::{Mempool, PoolConfig};

    fn v6(dst: &str, hops: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 48];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14] = 0x60;
        f[18..20].copy_from_slice(&8u16.to_be_bytes());
        f[20] = 17;
        f[21] = hops;
        f[38..54].copy_from_slice(&dst.parse::<std::net::Ipv6Addr>().unwrap().octets());
        f
    }
    let mut frames = Vec::new();
    for i in 0..40u8 {
        frames.push(match i % 8 {
            0 => ipv4([198, 18, i % 8, i], 64),
            1 => ipv4([10, 9, 8, i], 5),
            2 => v6("2001:200:0:3::1", 9),
            3 => v6("2001:db8::1", 9),
            4 => ipv4([198, 18, 2, 0], 1),
            5 => {
                let mut arp = vec![0u8; 60];
                arp[12..14].copy_from_slice(&[8, 6]);
                arp
            }
            6 => {
                // The built-in EM flow to port 2 (UDP 9 -> 9).
                let mut f = ipv4([198, 18, 2, 0], 64);
                f[26..30].copy_from_slice(&[198, 18, 2, 1]);
                f[34..38].copy_from_slice(&[0, 9, 0, 9]);
                let c = !pkthdr::checksum::data(&{
                    let mut h = f[14..34].to_vec();
                    h[10..12].fill(0);
                    h
                });
                f[24..26].copy_from_slice(&c.to_be_bytes());
                f
            }
            _ => {
                let mut f = ipv4([198, 18, 1, i], 64);
                f[25] ^= 1;
                f
            }
        });
    }
    let pool = Mempool::new(
        &format!("l3fwd-burst-{}", std::process::id()),
        &PoolConfig::with_size(256),
        &hugepage::Allocator::no_huge(),
    )
    .unwrap();
    fn check<R: Router>(r: &R, frames: &[Vec<u8>], pool: &Mempool) -> Vec<Result<u16, Drop>> {
        let mut br = BurstRouter::<R>::default();
        let mut all = Vec::new();
        for chunk in frames.chunks(MAX_PKT_BURST) {
            let mut pkts: Vec<Mbuf> = chunk
                .iter()
                .map(|f| {
                    let mut m = pool.alloc().unwrap();
                    m.append(f.len() as u16).unwrap().copy_from_slice(f);
                    m
                })
                .collect();
            let one_port = br.route_burst(&mut pkts, 7, r);
            let outputs: Vec<_> = (0..pkts.len()).map(|i| br.output(i)).collect();
            let same = outputs.iter().all(|o| o.is_ok() && *o == outputs[0]);
            assert_eq!(one_port, same.then(|| outputs[0].unwrap()), "{outputs:?}");
            for (i, (m, f)) in pkts.iter().zip(chunk).enumerate() {
                let mut one = f.clone();
                let want = route(&mut one, 7, r);
                assert_eq!(br.output(i), want, "packet {i}");
                if want.is_ok() {
                    assert_eq!(m.data(), &one[..], "packet {i}'s bytes");
                }
                all.push(want);
            }
        }
        all
    }
    let lpm = check(&router(), &frames, &pool);
    let em = check(&EmRouter::new(&routes::default_em4(), &routes::default_em6(), 1024).unwrap(), &frames, &pool);
    // The mix really has hits, misses and drops.
    for got in [&lpm, &em] {
        assert!(got.contains(&Ok(7)) && got.contains(&Ok(2)), "{got:?}");
        assert!(got.contains(&Err(Drop::TtlExceeded)) && got.contains(&Err(Drop::BadChecksum)), "{got:?}");
    }
    assert!(lpm.contains(&Ok(3)), "{lpm:?}");
    assert!(pool.is_full());
}

/// Bursts of plain IPv4 (the fast path's case): all to one port, all missing, and mixed ports.
#[test]
fn plain_ipv4_bursts_report_their_one_port() {
    use mempool::{Mempool, PoolConfig};
    let pool = Mempool::new(
        &format!("l3fwd-plain-{}", std::process::id()),
        &PoolConfig::with_size(128),
        &hugepage::Allocator::no_huge(),
    )
    .unwrap();
    let r = router();
    let mut br = BurstRouter::<LpmRouter>::default();
    let mut burst = |dsts: &[[u8; 4]]| {
        let mut pkts: Vec<Mbuf> = dsts
            .iter()
            .map(|&d| {
                let f = ipv4(d, 64);
                let mut m = pool.alloc().unwrap();
                m.append(f.len() as u16).unwrap().copy_from_slice(&f);
                m
            })
            .collect();
        let one = br.route_burst(&mut pkts, 5, &r);
        let outs: Vec<_> = (0..dsts.len()).map(|i| br.output(i)).collect();
        assert!(pkts.iter().all(|m| m.data()[22] == 63), "TTL rewritten");
        (one, outs)
    };
    let to1 = [[198, 18, 1, 9]; MAX_PKT_BURST];
    assert_eq!(burst(&to1), (Some(1), vec![Ok(1); MAX_PKT_BURST]));
    assert_eq!(burst(&[[10, 0, 0, 1]; 3]), (Some(5), vec![Ok(5); 3]), "misses go back to the input port");
    let (one, outs) = burst(&[[198, 18, 1, 9], [198, 18, 2, 9], [10, 0, 0, 1]]);
    assert_eq!((one, outs), (None, vec![Ok(1), Ok(2), Ok(5)]));
    assert_eq!(burst(&[]), (None, vec![]));
    assert!(pool.is_full());
}

/// [`fast_v4`] against [`validate`] on many damaged headers: when the fast path takes a frame, validate finds
/// it valid IPv4 and writes the same bytes; when it declines, it wrote nothing and (options aside) validate
/// does not find valid IPv4 either.
#[test]
fn fast_path_agrees_with_validate() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let fix_checksum = |f: &mut Vec<u8>| {
        f[24..26].fill(0);
        let c = !pkthdr::checksum::data(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
    };
    let (mut taken, mut declined) = (0, 0);
    for round in 0..200_000u32 {
        let mut f = ipv4([198, 18, (round >> 8) as u8, round as u8], 2 + (round % 254) as u8);
        let r = next();
        // Damage one byte of the Ethernet type or IP header, or none.
        if r & 3 != 0 {
            let at = 12 + (r >> 8) as usize % 22;
            f[at] = (r >> 32) as u8;
        }
        match (r >> 40) % 4 {
            0 => fix_checksum(&mut f),
            // The one's complement edge: the rest of the header sums to 0xffff, so 0x0000 is the right
            // checksum and 0xffff the other encoding of it, which validate rejects.
            1 => {
                f[18..20].fill(0);
                f[24..26].fill(0);
                let x = pkthdr::checksum::data(&f[14..34]);
                f[18..20].copy_from_slice(&(0xffff - x).to_be_bytes());
                let c = if r & (1 << 50) != 0 { 0xffff } else { 0 };
                f[24..26].copy_from_slice(&u16::to_be_bytes(c));
            }
            _ => {}
        }
        let cut = if (r >> 52) % 8 == 0 { (r >> 56) as usize % f.len() } else { f.len() };
        // One in four: the cut is the first segment of a chain holding the whole frame.
        let pkt_len = if (r >> 44) % 4 == 0 { f.len() } else { cut };
        let mut fast = f[..cut].to_vec();
        let mut slow = fast.clone();
        let before = fast.clone();
        if fast_v4(&mut fast, pkt_len) {
            taken += 1;
            assert_eq!(validate(&mut slow, pkt_len), Ok(Class::V4), "round {round}: {before:02x?}");
            assert_eq!(fast, slow, "round {round}");
        } else {
            declined += 1;
            assert_eq!(fast, before, "round {round}: declined but wrote");
            // Headers with options are validate's alone; a plain valid one must not be left to it.
            if before.get(14) == Some(&0x45) {
                assert_ne!(validate(&mut slow, pkt_len), Ok(Class::V4), "round {round}: declined {before:02x?}");
            }
        }
    }
    assert!(taken > 50_000 && declined > 50_000, "{taken} taken, {declined} declined");
}

#[test]
fn malformed_packets_are_dropped_by_reason() {
    let r = router();
    let mut f = ipv4([198, 18, 1, 9], 64);
    f[25] ^= 1;
    assert_eq!(route(&mut f, 0, &r), Err(Drop::BadChecksum));
    assert_eq!(route(&mut ipv4([198, 18, 1, 9], 1), 0, &r), Err(Drop::TtlExceeded));
    assert_eq!(route(&mut ipv4([198, 18, 1, 9], 0), 0, &r), Err(Drop::TtlExceeded));
    let mut f = ipv4([198, 18, 1, 9], 64);
    f[14] = 0x55;
    assert_eq!(route(&mut f, 0, &r), Err(Drop::BadVersion));
    let mut f = ipv4([198, 18, 1, 9], 64);
    f[14] = 0x44;
    assert_eq!(route(&mut f, 0, &r), Err(Drop::BadHeaderLength));
    let mut f = ipv4([198, 18, 1, 9], 64);
    f[16..18].copy_from_slice(&200u16.to_be_bytes());
    assert_eq!(route(&mut f, 0, &r), Err(Drop::Truncated));
    assert_eq!(route(&mut ipv4([198, 18, 1, 9], 64)[..30].to_vec(), 0, &r), Err(Drop::Truncated));
    assert_eq!(route(&mut [0u8; 10], 0, &r), Err(Drop::Truncated));
    let mut v6 = vec![0u8; 14 + 40];
    v6[12..14].copy_from_slice(&[0x86, 0xdd]);
    v6[14] = 0x60;
    v6[21] = 1;
    assert_eq!(route(&mut v6, 0, &r), Err(Drop::TtlExceeded));
    v6[21] = 64;
    assert_eq!(route(&mut v6, 4, &r), Ok(4));
    v6[14] = 0x40;
    assert_eq!(route(&mut v6, 0, &r), Err(Drop::BadVersion));
}

/// A jumbo IPv4 header (total length `total`) at the start of a first segment of `seg` bytes.
fn jumbo_v4(dst: [u8; 4], ttl: u8, total: u16, seg: usize) -> Vec<u8> {
    let mut f = ipv4(dst, ttl);
    f.resize(seg, 0x5a);
    f[16..18].copy_from_slice(&total.to_be_bytes());
    f[24..26].fill(0);
    let c = !pkthdr::checksum::data(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f
}

/// A chain's IP lengths are checked against the whole packet (DPDK checks `m->pkt_len`), its header in the
/// first segment: a complete jumbo frame forwards with the same rewrite, a chain shorter than its IP length is
/// truncated, and the other reasons keep their order.
#[test]
fn chained_jumbo_frames_are_checked_against_the_whole_packet() {
    let total = 9000u16 - 14;
    let mut first = jumbo_v4([198, 18, 1, 9], 64, total, 2048);
    let before = first.clone();
    assert!(fast_v4(&mut first, 9000));
    assert_eq!(first[22], 63);
    assert!(Ipv4Packet::new_unchecked(&first[14..34]).verify_checksum());
    let mut slow = before.clone();
    assert_eq!(validate(&mut slow, 9000), Ok(Class::V4));
    assert_eq!(slow, first);
    // Without the rest of the chain the same segment is a truncated packet.
    assert!(!fast_v4(&mut before.clone(), 2048));
    assert_eq!(validate(&mut before.clone(), 2048), Err(Drop::Truncated));
    // A chain shorter than the IP total length.
    assert_eq!(validate(&mut before.clone(), 8999), Err(Drop::Truncated));
    // Options: validate's alone, then the same checks.
    let mut opts = jumbo_v4([198, 18, 1, 9], 64, total, 2048);
    opts[14] = 0x46;
    opts[24..26].fill(0);
    let c = !pkthdr::checksum::data(&opts[14..38]);
    opts[24..26].copy_from_slice(&c.to_be_bytes());
    assert!(!fast_v4(&mut opts.clone(), 9000));
    assert_eq!(validate(&mut opts, 9000), Ok(Class::V4));
    // Headers that do not fit the first segment.
    assert_eq!(validate(&mut before[..20].to_vec(), 9000), Err(Drop::Truncated));
    assert_eq!(validate(&mut before[..30].to_vec(), 9000), Err(Drop::Truncated));
    let mut long_hdr = before.clone();
    long_hdr[14] = 0x4f;
    assert_eq!(validate(&mut long_hdr[..60].to_vec(), 9000), Err(Drop::Truncated));
    // The other reasons, in the single-segment order.
    for (at, value, want) in
        [(14, 0x55, Drop::BadVersion), (14, 0x44, Drop::BadHeaderLength), (25, before[25] ^ 1, Drop::BadChecksum)]
    {
        let mut f = before.clone();
        f[at] = value;
        assert_eq!(validate(&mut f, 9000), Err(want), "byte {at} = {value:#x}");
    }
    let mut small_total = before.clone();
    small_total[16..18].copy_from_slice(&10u16.to_be_bytes());
    assert_eq!(validate(&mut small_total, 9000), Err(Drop::BadHeaderLength));
    assert_eq!(validate(&mut jumbo_v4([198, 18, 1, 9], 1, total, 2048), 9000), Err(Drop::TtlExceeded));
    // IPv6: the payload length against the whole packet.
    let mut v6 = vec![0u8; 2048];
    v6[12..14].copy_from_slice(&[0x86, 0xdd]);
    v6[14] = 0x60;
    v6[18..20].copy_from_slice(&(9000u16 - 54).to_be_bytes());
    v6[21] = 64;
    assert_eq!(validate(&mut v6.clone(), 9000), Ok(Class::V6));
    assert_eq!(validate(&mut v6.clone(), 8000), Err(Drop::Truncated));
    assert_eq!(validate(&mut v6[..40].to_vec(), 9000), Err(Drop::Truncated));
    v6[21] = 1;
    assert_eq!(validate(&mut v6.clone(), 9000), Err(Drop::TtlExceeded));
    v6[14] = 0x40;
    assert_eq!(validate(&mut v6, 9000), Err(Drop::BadVersion));
}

/// The burst path reads the packet length from the mbuf: a real chain of two buffers routes to its port.
#[test]
fn burst_routing_forwards_a_chain_whole() {
    use mempool::{Mempool, PoolConfig};
    let pool = Mempool::new(
        &format!("l3fwd-chain-{}", std::process::id()),
        &PoolConfig::with_size(64),
        &hugepage::Allocator::no_huge(),
    )
    .unwrap();
    let total = 3000u16 - 14;
    let first = jumbo_v4([198, 18, 2, 9], 64, total, 1500);
    let mut head = pool.alloc().unwrap();
    head.append(1500).unwrap().copy_from_slice(&first);
    let mut tail = pool.alloc().unwrap();
    tail.append(1500).unwrap().fill(0x5a);
    head.chain(tail);
    assert_eq!((head.pkt_len(), head.nb_segs()), (3000, 2));
    let mut short = pool.alloc().unwrap();
    short.append(1500).unwrap().copy_from_slice(&first);
    let mut pkts = vec![head, short];
    let mut br = BurstRouter::<LpmRouter>::default();
    assert_eq!(br.route_burst(&mut pkts, 0, &router()), None);
    assert_eq!(br.output(0), Ok(2));
    assert_eq!(br.output(1), Err(Drop::Truncated));
    assert_eq!(pkts[0].data()[22], 63);
    drop(pkts);
    assert!(pool.is_full());
}
