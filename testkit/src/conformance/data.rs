//! The data path over a wired pair: frames byte for byte both ways, jumbo frames as chains both ways, and the port
//! statistics.

use mempool::{ol_flags, PacketBatch};
use pktio::{EthDev, PortConfig, RxQueue, TxQueue, TypedQueues};

use super::{finish, pool_for, started_pair, Conformance};
use crate::{cross, mbuf_from, receive, udp_frame, wait_for};

const IPS: ([u8; 4], [u8; 4]) = ([10, 0, 0, 1], [10, 0, 0, 2]);
const GOOD: u64 = ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD;

pub fn frames_cross_each_way_byte_for_byte<P: Conformance>() {
    let pool = pool_for::<P>("each-way", 1023);
    let (mut a, mut b) = started_pair::<P>(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }, &pool);
    let (mac0, mac1) = (a.dev().mac_addr().0, b.dev().mac_addr().0);
    let (mut rx0, mut tx0) = (a.dev_mut().rx_queue_typed(0).unwrap(), a.dev_mut().tx_queue_typed(0).unwrap());
    let (mut rx1, mut tx1) = (b.dev_mut().rx_queue_typed(0).unwrap(), b.dev_mut().tx_queue_typed(0).unwrap());
    let lens = [60usize, 64, 65, 127, 1514];
    for (i, len) in lens.into_iter().enumerate() {
        let f01 = udp_frame(mac1, mac0, IPS, (1000 + i as u16, 2000), len);
        let f10 = udp_frame(mac0, mac1, (IPS.1, IPS.0), (2000, 1000 + i as u16), len);
        for (tx, rx, want) in [(&mut tx0, &mut rx1, &f01), (&mut tx1, &mut rx0, &f10)] {
            let got = cross(&pool, tx, rx, want);
            let m = got.iter().next().unwrap();
            assert_eq!(m.ol_flags() & GOOD, GOOD, "{}: {len}-byte frame's checksums flagged good", P::SPEC.name);
        }
    }
    let n = lens.len() as u64;
    // A model may count a delivery after its write-back, which the driver can see first: poll for the counts.
    wait_for(2, "the model's counters", || {
        let (c0, c1) = (a.counts(), b.counts());
        (c0.tx_sent, c0.rx_delivered, c1.tx_sent, c1.rx_delivered) == (n, n, n, n)
    });
    wait_for(2, "TX counted", || a.dev().stats().opackets == n && b.dev().stats().opackets == n);
    assert_eq!((a.dev().stats().ipackets, b.dev().stats().ipackets), (n, n));
    drop((rx0, tx0, rx1, tx1));
    finish(vec![a, b], &pool);
}

/// Frames cross each way, both ports stop (their queues given back) and start again on the same pool, and frames
/// cross again byte for byte: what testpmd's `port stop all` / `port start all` does between two rounds of traffic
/// (the VM models boot saw the X710 and SP670 send nothing after it, tests/vm/README.md).
pub fn frames_cross_again_after_a_stop_and_start<P: Conformance>() {
    let pool = pool_for::<P>("restart", 1023);
    let config = PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() };
    let (mut a, mut b) = started_pair::<P>(&config, &pool);
    let (mac0, mac1) = (a.dev().mac_addr().0, b.dev().mac_addr().0);
    for round in 0..2u16 {
        if round == 1 {
            for p in [&mut a, &mut b] {
                p.dev_mut().stop().unwrap();
                p.dev_mut().start(&pool).unwrap();
            }
            wait_for(5, "both links up again", || a.dev().link().up && b.dev().link().up);
        }
        let (mut rx0, mut tx0) = (a.dev_mut().rx_queue_typed(0).unwrap(), a.dev_mut().tx_queue_typed(0).unwrap());
        let (mut rx1, mut tx1) = (b.dev_mut().rx_queue_typed(0).unwrap(), b.dev_mut().tx_queue_typed(0).unwrap());
        for (i, len) in [60usize, 1514].into_iter().enumerate() {
            let port = 1000 + 10 * round + i as u16;
            let f01 = udp_frame(mac1, mac0, IPS, (port, 2000), len);
            let f10 = udp_frame(mac0, mac1, (IPS.1, IPS.0), (2000, port), len);
            for (tx, rx, want) in [(&mut tx0, &mut rx1, &f01), (&mut tx1, &mut rx0, &f10)] {
                cross(&pool, tx, rx, want);
            }
        }
    }
    wait_for(2, "the model's counters", || {
        let (c0, c1) = (a.counts(), b.counts());
        (c0.tx_sent, c0.rx_delivered, c1.tx_sent, c1.rx_delivered) == (4, 4, 4, 4)
    });
    finish(vec![a, b], &pool);
}

pub fn jumbo_9000_byte_frames_both_ways_as_chains<P: Conformance>() {
    let pool = pool_for::<P>("jumbo", 2047);
    let config = PortConfig { mtu: 9000, rx_desc: 256, tx_desc: 256, ..Default::default() };
    let (mut a, mut b) = started_pair::<P>(&config, &pool);
    let (mac0, mac1) = (a.dev().mac_addr().0, b.dev().mac_addr().0);
    let (mut rx0, mut tx0) = (a.dev_mut().rx_queue_typed(0).unwrap(), a.dev_mut().tx_queue_typed(0).unwrap());
    let (mut rx1, mut tx1) = (b.dev_mut().rx_queue_typed(0).unwrap(), b.dev_mut().tx_queue_typed(0).unwrap());
    let room = pool.data_room() as usize;
    let max = 9000 + 14;
    for (i, len) in [max, 9000, 4097, room, room + 1, max].into_iter().enumerate() {
        let f01 = udp_frame(mac1, mac0, IPS, (1000 + i as u16, 2000), len);
        let f10 = udp_frame(mac0, mac1, (IPS.1, IPS.0), (2000, 1000 + i as u16), len);
        for (tx, rx, want) in [(&mut tx0, &mut rx1, &f01), (&mut tx1, &mut rx0, &f10)] {
            let got = cross(&pool, tx, rx, want);
            let m = got.iter().next().unwrap();
            assert_eq!(m.pkt_len() as usize, len);
            assert_eq!(
                m.nb_segs() as usize,
                len.div_ceil(room),
                "{}: {len} bytes in {room}-byte buffers",
                P::SPEC.name
            );
            assert_eq!(m.ol_flags() & GOOD, GOOD, "{}: {len}-byte frame's checksums flagged good", P::SPEC.name);
        }
    }
    // A frame from the wire one byte over the largest the port takes at this MTU is not delivered whole.
    match P::SPEC.frame_over_mtu.map(|over| 9000 + over) {
        Some(largest) => {
            let over = udp_frame(mac1, mac0, IPS, (1, 2), largest + 1);
            let delivered = b.counts().rx_delivered;
            assert!(b.inject(&over));
            wait_for(5, "the model to take the frame", || b.rx_pending() == 0);
            // The model has taken it: whatever it made of it is in the ring or was never written.
            let mut got = PacketBatch::new();
            rx1.rx_burst(&mut got);
            assert!(
                got.iter().all(|m| m.pkt_len() as usize != over.len()),
                "{}: a {}-byte frame beyond the port's largest ({largest}) was delivered whole ({delivered} \
                 delivered before, {} after)",
                P::SPEC.name,
                over.len(),
                b.counts().rx_delivered
            );
        }
        None => eprintln!("{}: the over-size frame check does not apply: the model enforces no MTU", P::SPEC.name),
    }
    drop((rx0, tx0, rx1, tx1));
    finish(vec![a, b], &pool);
}

pub fn stats_count_packets_bytes_and_errors_and_reset<P: Conformance>() {
    let pool = pool_for::<P>("stats", 1023);
    let (mut a, mut b) = started_pair::<P>(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }, &pool);
    let (mac0, mac1) = (a.dev().mac_addr().0, b.dev().mac_addr().0);
    let mut tx0 = a.dev_mut().tx_queue_typed(0).unwrap();
    let mut rx1 = b.dev_mut().rx_queue_typed(0).unwrap();
    let lens = [60usize, 100, 1514, 64, 999];
    for (i, &len) in lens.iter().enumerate() {
        let mut out = PacketBatch::new();
        out.push(mbuf_from(&pool, &udp_frame(mac1, mac0, IPS, (i as u16, 9), len))).unwrap();
        assert_eq!(tx0.tx_burst(&mut out), 1);
    }
    drop(receive(&mut rx1, lens.len()));
    let n = lens.len() as u64;
    let total: u64 = lens.iter().map(|&l| l as u64).sum();
    wait_for(2, "TX counted", || a.dev().stats().opackets == n);
    let (s0, s1) = (a.dev().stats(), b.dev().stats());
    assert_eq!(
        (s0.opackets, s0.obytes, s1.ipackets, s1.ibytes),
        (n, total, n, total),
        "{}: bytes without FCS",
        P::SPEC.name
    );
    assert_eq!((s0.ipackets, s1.opackets, s1.ierrors, s1.imissed), (0, 0, 0, 0), "{}", P::SPEC.name);

    // A bad FCS: dropped by the device, counted as an RX error and in the CRC counter.
    assert!(b.inject_bad_fcs(&udp_frame(mac1, mac0, IPS, (7, 9), 80)));
    wait_for(2, "the FCS error counted", || b.dev().stats().ierrors == 1);
    let crc = b.dev().xstats().into_iter().find(|x| x.name == P::SPEC.crc_xstat).map(|x| x.value);
    assert_eq!(crc, Some(1), "{}: {}", P::SPEC.name, P::SPEC.crc_xstat);
    assert_eq!(b.dev().stats().ipackets, n, "{}: the bad frame is not a received packet", P::SPEC.name);

    a.dev_mut().reset_stats();
    b.dev_mut().reset_stats();
    let (s0, s1) = (a.dev().stats(), b.dev().stats());
    assert_eq!(
        (s0.opackets, s0.obytes, s1.ipackets, s1.ibytes, s1.ierrors),
        (0, 0, 0, 0, 0),
        "{}: reset",
        P::SPEC.name
    );
    let crc = b.dev().xstats().into_iter().find(|x| x.name == P::SPEC.crc_xstat).map(|x| x.value);
    assert_eq!(crc, Some(0), "{}: {} after reset", P::SPEC.name, P::SPEC.crc_xstat);
    // Counting goes on from zero.
    let mut out = PacketBatch::new();
    out.push(mbuf_from(&pool, &udp_frame(mac1, mac0, IPS, (1, 9), 200))).unwrap();
    assert_eq!(tx0.tx_burst(&mut out), 1);
    drop(receive(&mut rx1, 1));
    wait_for(2, "TX counted after reset", || a.dev().stats().opackets == 1);
    assert_eq!((a.dev().stats().obytes, b.dev().stats().ipackets, b.dev().stats().ibytes), (200, 1, 200));
    drop((tx0, rx1));
    finish(vec![a, b], &pool);
}

/// Frames above the receiving port's largest frame at MTU 1500 cross the wire from the peer's TX and are counted
/// where the NIC counts them (its over-size xstat and `ierrors`); the ones that fit arrive; none vanishes.
pub fn frames_above_the_mtu_are_counted_as_oversize_and_in_ierrors<P: Conformance>() {
    let (Some(over), Some(oversize_xstat)) = (P::SPEC.frame_over_mtu, P::SPEC.oversize_xstat) else {
        eprintln!(
            "{}: the over-size counting check does not apply: the model counts no over-size frames",
            P::SPEC.name
        );
        return;
    };
    let pool = pool_for::<P>("oversize", 4095);
    let (mut a, mut b) = started_pair::<P>(&PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() }, &pool);
    let (src, dst) = (a.dev().mac_addr().0, b.dev().mac_addr().0);
    let mut tx = a.dev_mut().tx_queue_typed(0).unwrap();
    let mut rx = b.dev_mut().rx_queue_typed(0).unwrap();
    let largest = 1500 + over;
    let mut fits = vec![1514];
    if largest > 1514 {
        fits.push(largest);
    }
    let oversize = [largest + 1, 2000, 4000, 9000, 9600];
    let mut sent = 0;
    for len in fits.iter().chain(&oversize) {
        let mut batch = PacketBatch::new();
        batch.push(mbuf_from(&pool, &udp_frame(dst, src, IPS, (1, 2), *len))).unwrap();
        sent += tx.tx_burst(&mut batch);
    }
    assert_eq!(sent, fits.len() + oversize.len(), "{}: every frame taken for sending", P::SPEC.name);
    let got = receive(&mut rx, fits.len());
    let lens: Vec<usize> = got.iter().map(|m| m.pkt_len() as usize).collect();
    assert_eq!(lens, fits, "{}: only the frames that fit arrive", P::SPEC.name);
    drop(got);
    let xstat = |p: &P| p.dev().xstats().into_iter().find(|x| x.name == oversize_xstat).map(|x| x.value);
    wait_for(5, "the over-size frames counted", || xstat(&b) == Some(oversize.len() as u64));
    let (s0, s1) = (a.dev().stats(), b.dev().stats());
    assert_eq!((s0.opackets, s0.oerrors), (sent as u64, 0), "{}: {s0:?}", P::SPEC.name);
    assert_eq!((s1.ipackets, s1.ierrors), (fits.len() as u64, oversize.len() as u64), "{}: {s1:?}", P::SPEC.name);
    drop((tx, rx));
    finish(vec![a, b], &pool);
}
