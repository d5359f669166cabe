//! The SP670 model driven through raw register writes, mailbox messages, cmdq WQEs, contexts and ring entries built
//! here from docs/hw/hinic3.md (section cited per helper), not from any driver: offsets and bit positions are the
//! notes' tables typed out again, so a model that misreads a table disagrees with these tests.
//!
//! This file: the data path (descriptors, jumbo frames, RSS), exact statistics, threaded forwarding.

mod sp670_rig;

use sp670_rig::*;

#[test]
fn send_and_receive_through_descriptors() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    r.port.assert_no_faults();
    let mac = r.port.config().mac;
    // TX: compact WQE; the frame on the wire byte for byte, the CI slot at 1.
    let f = udp_frame([0x02, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 1000, 100);
    r.send(0, &f);
    r.step();
    assert_eq!(r.port.take_tx(), vec![f.clone()]);
    assert_eq!(r.hw_ci(0), 1);
    // Extended WQE, 3 buffers, IPv4 and UDP checksum offload and VLAN insertion.
    let mut g = udp_frame([0x02, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 1001, 300);
    g[24..26].fill(0);
    r.send_ext(0, &g, 3, Some([1 << 24 | 1 << 25, 0, 0, 1 << 19 | 100]));
    r.step();
    let out = r.port.take_tx();
    assert_eq!(out.len(), 1);
    let o = &out[0];
    assert_eq!(&o[12..16], &[0x81, 0x00, 0x00, 100]);
    assert_eq!(net::internet_checksum(&o[18..38]), 0, "IPv4 header checksum");
    assert_eq!(r.hw_ci(0), 1 + 4, "the compact WQE, then control, task and 2 BDs");
    // RX: byte-exact, length and type in the CQE.
    let h = udp_frame(mac, [10, 0, 0, 9], 7, 64);
    r.port.inject(&h);
    r.step();
    let (cqe, data) = r.recv(0).expect("a frame");
    assert_eq!(data, h);
    assert_eq!(cqe[1] >> 16, h.len() as u32);
    assert_eq!(cqe[2] & 0x1F, 4, "UDP");
    assert_eq!(cqe[0] & 0xFFFF, 0, "no checksum error");
    // Another MAC is filtered (RX mode 0x7 without promiscuous).
    r.port.inject(&udp_frame([0x02, 9, 9, 9, 9, 9], [10, 0, 0, 9], 7, 64));
    r.step();
    assert!(r.recv(0).is_none());
    assert_eq!(r.port.counters().rx_filtered, 1);
    r.port.assert_no_faults();
}

#[test]
fn jumbo_frames_span_buffers_and_descriptors() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    let mac = r.port.config().mac;
    let big = udp_frame(mac, [10, 0, 0, 9], 9, 9000 - 42);
    r.port.inject(&big);
    r.step();
    let (cqe, data) = r.recv(0).expect("jumbo");
    assert_eq!(cqe[1] >> 16, 9000);
    assert_eq!(data, big);
    assert_eq!(r.rq_ci[0], 5, "9000 bytes take five 2 KiB buffers");
    let out = udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 9, 9000 - 42);
    r.send_ext(0, &out, 5, None);
    r.step();
    assert_eq!(r.port.take_tx(), vec![out]);
    r.port.assert_no_faults();
}

#[test]
fn rss_spreads_flows_as_the_indirection_table_says() {
    let nq = 4;
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(nq);
    let mac = r.port.config().mac;
    let mut per_q = vec![0; nq];
    for flow in 0..64u16 {
        let sport = flow.wrapping_mul(7919).wrapping_add(1000);
        let f = udp_frame(mac, [10, 1, (flow >> 8) as u8, flow as u8], sport, 32);
        let mut input = vec![10, 1, (flow >> 8) as u8, flow as u8, 10, 0, 0, 2];
        input.extend_from_slice(&sport.to_be_bytes());
        input.extend_from_slice(&4791u16.to_be_bytes());
        let hash = net::toeplitz(&RSS_KEY, &input);
        let want = ((hash & 0xFF) as usize * 7 + 3) % nq;
        r.port.inject(&f);
        r.step();
        let (cqe, data) = r.recv(want).unwrap_or_else(|| panic!("flow {flow} not on queue {want}"));
        assert_eq!(data, f);
        assert_eq!(cqe[3], hash, "hash in the CQE");
        assert_ne!(cqe[2] >> 24, 0, "RSS type valid");
        per_q[want] += 1;
    }
    assert!(per_q.iter().all(|&n| n > 0), "{per_q:?}");
    assert_eq!(r.port.counters().rx_delivered, 64);
    r.port.assert_no_faults();
}

#[test]
fn stats_count_exactly() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    let mac = r.port.config().mac;
    for i in 0..10 {
        r.send(0, &udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], i, 100));
    }
    r.send(0, &udp_frame([0xFF; 6], [10, 0, 0, 1], 1, 100));
    r.step();
    for i in 0..5 {
        r.port.inject(&udp_frame(mac, [10, 0, 0, 9], i, 200));
    }
    r.step();
    while r.recv(0).is_some() {}
    let s = r.ok(module::L2NIC, 9, &[0; 12]);
    let c = |i: usize| u64::from_le_bytes(s[16 + 8 * i..24 + 8 * i].try_into().unwrap());
    assert_eq!(c(0), 10, "tx unicast");
    assert_eq!(c(1), 10 * (14 + 28 + 100), "tx unicast bytes");
    assert_eq!(c(4), 1, "tx broadcast");
    assert_eq!(c(6), 5, "rx unicast");
    assert_eq!(c(7), 5 * (14 + 28 + 200));
    r.port.assert_no_faults();
}

#[test]
fn threaded_forwarding_between_two_ports_counts_exactly() {
    let (a, b) = Sp670::pair(Sp670Config::default());
    let mut ra = Rig::with(a);
    let mut rb = Rig::with(b);
    ra.init_and_start(1);
    rb.init_and_start(1);
    let dst = rb.port.config().mac;
    let _ta = ra.port.start_thread();
    let _tb = rb.port.start_thread();
    // SP670_FORWARD_PACKETS scales the run (e.g. a release-mode throughput check); 20 000 by default.
    let total: u32 = std::env::var("SP670_FORWARD_PACKETS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let (mut sent, mut got) = (0u32, 0u32);
    let start = Instant::now();
    while got < total {
        assert!(start.elapsed() < Duration::from_secs(60), "sent {sent}, received {got}");
        // Keep at most 32 in flight so nothing waits for a buffer.
        let ci = ra.hw_ci(0) as u32;
        // At most 16 in flight: the rig has 16 TX buffer slots.
        if sent < total && (sent as u16).wrapping_sub(ci as u16) < 16 && sent - got < 16 {
            ra.send(0, &udp_frame(dst, [10, 0, 0, 1], sent as u16, 64));
            sent += 1;
        }
        while let Some((_, d)) = rb.recv(0) {
            assert_eq!(&d[34..36], &(got as u16).to_be_bytes(), "in order");
            assert_eq!(d.len(), 14 + 28 + 64);
            got += 1;
        }
    }
    eprintln!("{total} frames forwarded in {:?}", start.elapsed());
    assert_eq!(rb.port.counters().rx_delivered, u64::from(total));
    assert_eq!(rb.port.counters().rx_no_buffer + rb.port.counters().rx_filtered, 0);
    assert_eq!(ra.port.counters().tx_sent, u64::from(total));
    ra.port.assert_no_faults();
    rb.port.assert_no_faults();
}

/// A doorbell rung while the model works on the previous one of the same queue is not lost: the driver rings once
/// per frame, as fast as it can, and after every round each frame is on the wire (the model once cleared the
/// pending bit after reading the doorbell, wiping one rung in between, and the queue stalled until the next).
#[test]
fn doorbells_rung_back_to_back_are_all_taken() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    let _t = r.port.start_thread();
    let dst = [0x02, 0, 0, 0, 0, 0x99];
    let mut sent = 0u64;
    for round in 0..5_000u32 {
        // At most 8 frames in flight: the rig has 16 TX buffer slots.
        for k in 0..1 + round % 8 {
            r.send(0, &udp_frame(dst, [10, 0, 0, 1], k as u16, 64));
            sent += 1;
        }
        poll(&format!("round {round}: all {sent} frames sent"), Duration::from_secs(5), || {
            r.port.counters().tx_sent == sent
        });
        r.port.take_tx();
    }
    r.port.assert_no_faults();
}
