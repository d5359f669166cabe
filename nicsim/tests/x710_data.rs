//! The X710 model driven through raw register writes and admin descriptors, queue contexts and ring descriptors
//! built here from docs/hw/i40e.md (section cited per helper), not from any driver. Offsets below are the notes'
//! tables typed out again, so a model that misreads a table disagrees with these tests.
//!
//! This file: HMC, queue contexts and enables, traffic, offloads, jumbo frames, statistics, RSS, two PFs wired.

mod x710_rig;

use x710_rig::*;

// ---- HMC, queues, traffic ------------------------------------------------------------------------------------------

fn bring_up_and_traffic(config: X710Config) {
    let mac = config.mac;
    let mut r = ready(config, 1, 1);
    // TX: one packet out, DD (DTYPE 0xF) written back, bytes on the wire.
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1000, 2000, 100);
    let i = r.send(&f, 0, 0);
    r.step();
    assert!(r.tx_done(i), "DTYPE 0xF after RS");
    assert_eq!(r.port.take_tx(), vec![f.clone()]);
    assert_eq!(r.rd(qtx_head(0)), 1);
    // RX: a frame to our MAC lands in the buffer with DD | EOF and its length.
    let g = udp(mac, 5, 6, 200);
    r.port.inject(&g);
    r.step();
    let (data, _, qw1) = r.recv(0).expect("a frame");
    assert_eq!(data, g);
    assert_eq!((qw1 >> 30) & 0xFF, 24, "PTYPE IPv4 UDP");
    assert_eq!((qw1 >> 9) & 3, 0, "unicast");
    assert_eq!((qw1 >> 19) & 0xFF, 0, "no error");
    r.port.inject(&[&[0xFF; 6][..], &g[6..]].concat());
    r.step();
    let (_, _, qw1) = r.recv(0).expect("a broadcast");
    assert_eq!((qw1 >> 9) & 3, 2, "broadcast");
    // Statistics (docs/hw/i40e.md §13) counted per port and per VSI.
    let port = r.port.config().port as usize;
    assert_eq!(r.rd(stat::GLPRT_UPRC + 8 * port), 1);
    assert_eq!(r.rd(stat::GLPRT_BPRC + 8 * port), 1);
    assert_eq!(r.rd(stat::GLPRT_GORC + 8 * port), (2 * (g.len() + 4)) as u32, "octets include the CRC");
    assert_eq!(r.rd(stat::GLV_UPRC + 8 * r.learnt.stat_idx), 1);
    assert_eq!(r.rd(stat::GLPRT_UPTC + 8 * port), 1);
    r.port.assert_no_faults();
}

#[test]
fn full_bring_up_x710() {
    bring_up_and_traffic(X710Config::default());
}

#[test]
fn full_bring_up_xl710_and_xxv710() {
    for (part, speed_bit, linksta) in
        [(X710Part::Xl710QsfpA, 0x10, 3), (X710Part::Xl710QsfpB, 0x10, 3), (X710Part::Xxv710Sfp28, 0x40, 3)]
    {
        bring_up_and_traffic(X710Config { pf_id: 1, port: 1, first_queue: 64, ..X710Config::part(part) });
        let mut r = Rig::new(X710Config::part(part));
        r.bring_up(1);
        let l = r.direct(0x0607, [0; 16]);
        l.ok();
        assert_eq!(l.desc[16 + 3], speed_bit, "{part:?}: link_speed");
        assert_eq!(l.desc[16 + 4] & 1, 1, "{part:?}: link up");
        let v = r.rd(PRTMAC_LINKSTA);
        assert_eq!(v & 0x4000_0080, 0x4000_0080);
        assert_eq!(v >> 27 & 7, linksta);
        assert_eq!(r.rd(0x1E_24E0) >> 17 & 1, u32::from(part == X710Part::Xxv710Sfp28), "25G flag in PRTMAC_MACC");
    }
}

#[test]
fn a_tx_context_with_a_stray_bit_or_wrong_handle_keeps_the_queue_off() {
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    // qlen one bit too low (bit 160 instead of 161): the model sees head_wb_ena and a wrong qlen.
    r.setup_tx(0, |c| {
        c[20] = 0;
        c[21] = 0;
        pack(c, 160, 13, RING.into());
    });
    let abs = r.learnt.first_queue as usize;
    r.wr(gllan_txpre_qdis(abs / 128), (abs % 128) as u32 | 1 << 31);
    r.wr(qtx_ena(0), 1);
    r.step();
    assert_eq!(r.rd(qtx_ena(0)) & 0x5, 0x1, "REQ set, STAT never follows");
    assert!(protocol_faults(&r.port).iter().any(|f| f.contains("qlen")));
    r.reset();
    r.bring_up(1);
    r.setup_tx(0, |c| pack(c, 980, 10, 0x3FF ^ u64::from(0u16)));
    r.wr(gllan_txpre_qdis(abs / 128), (abs % 128) as u32 | 1 << 31);
    r.wr(qtx_ena(0), 1);
    assert_eq!(r.rd(qtx_ena(0)) & 0x4, 0);
    assert!(protocol_faults(&r.port).iter().any(|f| f.contains("rdylist")));
}

#[test]
fn tx_enable_needs_the_pre_disable_clear_and_a_pf_queue_ctl() {
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    r.setup_tx(0, |_| {});
    r.wr(qtx_ena(0), 1);
    assert_eq!(r.rd(qtx_ena(0)) & 0x4, 0);
    assert!(protocol_faults(&r.port).iter().any(|f| f.contains("CLEAR_QDIS")));
    r.reset();
    r.bring_up(1);
    r.setup_tx(0, |_| {});
    r.wr(qtx_ctl(0), 1); // a VM queue, not a PF queue
    let abs = r.learnt.first_queue as usize;
    r.wr(gllan_txpre_qdis(abs / 128), (abs % 128) as u32 | 1 << 31);
    r.wr(qtx_ena(0), 1);
    assert_eq!(r.rd(qtx_ena(0)) & 0x4, 0);
    assert!(protocol_faults(&r.port).iter().any(|f| f.contains("QTX_CTL")));
}

#[test]
fn an_rx_context_without_prefena_is_refused() {
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    r.setup_rx(0, 9728, |c| c[201 / 8] &= !(1 << (201 % 8)));
    r.wr(qrx_ena(0), 1);
    assert_eq!(r.rd(qrx_ena(0)) & 0x5, 0x1);
    assert!(protocol_faults(&r.port).iter().any(|f| f.contains("prefena")));
}

#[test]
fn paged_hmc_segment() {
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    // Re-program SD 0 as paged (docs/hw/i40e.md §8.3 step 5): a PD page whose entry 0 points at a backing page holding the
    // first 4 KiB of FPM (TX contexts 0..31).
    let pd = 0x4_8000;
    let page = 0x4_9000;
    let mut entry = [0u8; 4096];
    entry[0..8].copy_from_slice(&(r.iova(page) | 1).to_le_bytes());
    r.write_mem(pd, &entry);
    r.write_mem(page, &[0; 4096]);
    let a = r.iova(pd);
    r.wr(PFHMC_SDDATAHIGH, (a >> 32) as u32);
    r.wr(PFHMC_SDDATALOW, (a as u32 & 0xFFFF_F000) | 512 << 2 | 1);
    r.wr(PFHMC_SDCMD, 1 << 31);
    r.setup_tx(0, |_| {});
    // setup_tx wrote the context into the direct area; copy it to where the paged SD points.
    let ctx = r.read_mem(HMC, 128);
    r.write_mem(page, &ctx);
    r.enable_tx(0);
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 50);
    r.send(&f, 0, 0);
    r.step();
    assert_eq!(r.port.take_tx(), vec![f]);
    r.port.assert_no_faults();
}

#[test]
fn checksum_and_vlan_insertion() {
    let mut r = ready(X710Config::default(), 1, 1);
    let mut f = udp([0x02, 0, 0, 0, 0, 0x99], 7, 9, 30);
    let want = f.clone();
    f[24..26].fill(0); // IP checksum cleared
                       // UDP checksum seeded with the pseudo-header sum.
    let p = net::parse(&f, 0x8100);
    let seed = net::fold(net::pseudo_header_sum(&f, &p, 17, 38));
    f[40..42].copy_from_slice(&seed.to_be_bytes());
    // IIPT IPv4 with checksum (0x060), L4T UDP (0x300), IL2TAG1 (0x008); MACLEN 14/2, IPLEN 20/4.
    let offset = 7 | 5 << 7;
    let i = r.send(&f, 0x060 | 0x300 | 0x008, offset);
    // L2TAG1 in bits 63:48.
    let mut d = r.read_mem(TX_RING + i as usize * 16, 16);
    let qw1 = le64(&d, 8) | 0x0123 << 48;
    d[8..16].copy_from_slice(&qw1.to_le_bytes());
    r.write_mem(TX_RING + i as usize * 16, &d);
    r.step();
    let out = r.port.take_tx().pop().expect("sent");
    assert_eq!(&out[12..16], &[0x81, 0x00, 0x01, 0x23], "VLAN tag inserted");
    let untagged = [&out[..12], &out[16..]].concat();
    assert_eq!(&untagged[24..26], &want[24..26], "IPv4 header checksum");
    let p = net::parse(&untagged, 0x8100);
    let sum = net::ones_sum(&untagged[34..], net::pseudo_header_sum(&untagged, &p, 17, 38));
    assert_eq!(net::fold(sum), 0xFFFF, "UDP checksum verifies");
    r.port.assert_no_faults();
}

#[test]
fn jumbo_9000_both_ways() {
    let mut r = ready(X710Config::default(), 1, 1);
    let f = udp(MAC, 1, 2, 9000 - 42);
    assert_eq!(f.len(), 9000);
    r.port.inject(&f);
    r.step();
    let start = r.rx_next[0];
    let (data, _, _) = r.recv(0).expect("the jumbo frame");
    assert_eq!(data, f);
    assert_eq!(r.rx_next[0] - start, 5, "9000 bytes in five 2 KiB buffers");
    let port = 0;
    assert_eq!(r.rd(stat::GLPRT_PRC64 + 6 * 0x20 + 8 * port), 1, "PRC9522 bucket");
    let i = r.send(&f, 0, 0);
    r.step();
    assert!(r.tx_done(i));
    assert_eq!(r.port.take_tx(), vec![f]);
    r.port.assert_no_faults();
}

#[test]
fn statistics_wrap_at_48_bits() {
    let mut r = ready(X710Config::default(), 1, 1);
    r.port.set_stat(stat::GLPRT_UPRC, (1 << 48) - 1);
    r.port.set_stat(stat::GLPRT_GORC, (1 << 48) - 10);
    assert_eq!(r.rd(stat::GLPRT_UPRC), 0xFFFF_FFFF);
    assert_eq!(r.rd(stat::GLPRT_UPRC + 4), 0xFFFF, "H holds bits 47:32 in 15:0");
    let f = udp(MAC, 1, 2, 60);
    r.port.inject(&f);
    r.step();
    assert!(r.recv(0).is_some());
    assert_eq!((r.rd(stat::GLPRT_UPRC), r.rd(stat::GLPRT_UPRC + 4)), (0, 0), "wrapped to 0");
    let gorc = u64::from(r.rd(stat::GLPRT_GORC)) | u64::from(r.rd(stat::GLPRT_GORC + 4)) << 32;
    assert_eq!(gorc, (f.len() + 4 - 10) as u64);
    // 32-bit counters wrap at 2^32.
    r.port.set_stat(stat::GLPRT_RUC, u64::from(u32::MAX));
    r.port.inject(&[0u8; 40]);
    r.step();
    assert_eq!(r.rd(stat::GLPRT_RUC), 0);
    // Read-only to the driver.
    r.wr(stat::GLPRT_UPRC, 77);
    assert_eq!(r.rd(stat::GLPRT_UPRC), 0);
    r.port.assert_no_faults();
}

#[test]
fn rss_spreads_by_toeplitz_hash_and_table() {
    let mut r = ready(X710Config::default(), 4, 4);
    for (i, chunk) in KEY.chunks(4).enumerate() {
        r.wr(pfqf_hkey(i), u32::from_le_bytes(chunk.try_into().unwrap()));
    }
    // 512 entries (HASHLUTSIZE), entry e = (e * 7 / 3) mod 4: not a plain round robin.
    r.wr(PFQF_CTL_0, 1 << 16);
    let lut: Vec<u8> = (0..512).map(|e| ((e * 7 / 3) % 4) as u8).collect();
    for (i, c) in lut.chunks(4).enumerate() {
        r.wr(pfqf_hlut(i), u32::from_le_bytes(c.try_into().unwrap()));
    }
    r.wr(pfqf_hena(0), 1 << 31); // IPv4 UDP
    let mut per_queue = [0usize; 4];
    for n in 0..200u16 {
        let f = udp(MAC, 1000 + n * 13, 4791, 30);
        let mut input = vec![10, 0, 0, 1, 10, 0, 0, 2];
        input.extend_from_slice(&(1000 + n * 13).to_be_bytes());
        input.extend_from_slice(&4791u16.to_be_bytes());
        let hash = net::toeplitz(&KEY, &input);
        let q = usize::from(lut[hash as usize % 512]);
        r.port.inject(&f);
        r.step();
        let (data, qw0, qw1) = r.recv(q).unwrap_or_else(|| panic!("frame {n} not on queue {q}"));
        assert_eq!(data, f);
        assert_eq!(qw0 >> 32, u64::from(hash), "hash in qword 0's high half");
        assert_eq!((qw1 >> 12) & 3, 3, "FLTSTAT = RSS hash");
        per_queue[q] += 1;
    }
    assert!(per_queue.iter().all(|&n| n > 20), "spread {per_queue:?}");
    // A TCP frame is not in HENA: queue 0 of the VSI, no hash.
    let mut t = udp(MAC, 1, 2, 30);
    t[23] = 6;
    r.port.inject(&t);
    r.step();
    let (_, _, qw1) = r.recv(0).expect("unhashed frame on the VSI's first queue");
    assert_eq!((qw1 >> 12) & 3, 0);
    r.port.assert_no_faults();
}

#[test]
fn rss_key_and_table_through_the_admin_queue() {
    let mut r = ready(X710Config::default(), 4, 1);
    let vsi = (r.learnt.vsi_number | 0x8000).to_le_bytes();
    r.indirect(0x0B02, true, [vsi[0], vsi[1], 0, 0, 0, 0, 0, 0], &KEY).ok();
    assert_eq!(r.rd(pfqf_hkey(0)), u32::from_le_bytes([0x44, 0x39, 0x79, 0x6b]));
    let lut: Vec<u8> = (0..512).map(|e| (e % 4) as u8).collect();
    r.indirect(0x0B03, true, [vsi[0], vsi[1], 1, 0, 0, 0, 0, 0], &lut).ok();
    assert_eq!(r.rd(pfqf_hlut(1)), u32::from_le_bytes([0, 1, 2, 3]));
    let got = r.indirect(0x0B05, true, [vsi[0], vsi[1], 1, 0, 0, 0, 0, 0], &[0; 512]);
    got.ok();
    assert_eq!(got.buf, lut);
    // The VSI's SEID is not its number.
    let s = r.learnt.vsi_seid.to_le_bytes();
    r.indirect(0x0B02, true, [s[0], s[1] | 0x80, 0, 0, 0, 0, 0, 0], &KEY).failed(AqRc::Einval);
    assert_eq!(protocol_faults(&r.port).len(), 1);
}

#[test]
fn two_pfs_wired_back_to_back() {
    let ((bar_a, a), (bar_b, b)) = X710::pair(X710Config { num_queues: 16, ..X710Config::part(X710Part::Xl710QsfpA) });
    let mut ra = Rig::with(bar_a, a);
    let mut rb = Rig::with(bar_b, b);
    for r in [&mut ra, &mut rb] {
        r.bring_up(1);
        r.setup_tx(0, |_| {});
        r.setup_rx(0, 9728, |_| {});
        r.enable_rx(0);
        r.enable_tx(0);
    }
    let f = udp(rb.port.config().mac, 3, 4, 64);
    ra.send(&f, 0, 0);
    nicsim::run_until_idle_x710(&[&ra.port, &rb.port]);
    assert_eq!(rb.recv(0).expect("across the wire").0, f);
    assert_eq!(rb.learnt.first_queue, 16, "the second PF's queues follow the first's");
    ra.port.assert_no_faults();
    rb.port.assert_no_faults();
}

#[test]
fn a_disabled_tx_queue_restarts_at_tail_0() {
    // docs/hw/i40e.md §9.4: DPDK's port stop / start re-enables a queue with the head at 0 and no QTX_TAIL write.
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    r.setup_tx(0, |_| {});
    r.enable_tx(0);
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 50);
    let i = r.send(&f, 0, 0);
    poll("sent", || {
        r.step();
        r.tx_done(i)
    });
    assert_eq!(r.rd(qtx_tail(0)), 1);
    // Disable (SET_QDIS first), then the same ring again from descriptor 0.
    let abs = r.learnt.first_queue as usize;
    let b = gllan_txpre_qdis(abs / 128);
    let v = r.rd(b) & !0x7FF;
    r.wr(b, v | (abs % 128) as u32 | 1 << 30);
    r.wr(qtx_ena(0), 0);
    poll("TX disabled", || r.rd(qtx_ena(0)) & 0x5 == 0);
    assert_eq!(r.rd(qtx_tail(0)), 0, "the tail restarts with the head");
    r.setup_tx(0, |_| {});
    r.enable_tx(0);
    r.tx_next = 0;
    let i = r.send(&f, 0, 0);
    poll("sent again", || {
        r.step();
        r.tx_done(i)
    });
    assert_eq!(r.port.take_tx(), vec![f.clone(), f]);
    r.port.assert_no_faults();
}

#[test]
fn fd_ena_is_taken_only_with_the_flow_director_reported() {
    // docs/hw/i40e.md §8.5: Linux's ATR sets fd_ena (bit 91) on its LAN queues once capability 0x45 is reported.
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    r.setup_tx(0, |c| pack(c, 91, 1, 1));
    let abs = r.learnt.first_queue as usize;
    r.wr(gllan_txpre_qdis(abs / 128), (abs % 128) as u32 | 1 << 31);
    r.wr(qtx_head(0), 0);
    r.wr(qtx_ena(0), 1);
    assert_eq!(r.rd(qtx_ena(0)) & 0x4, 0, "refused without the flow director");
    assert!(protocol_faults(&r.port).iter().any(|f| f.contains("fd_ena")));
    let mut r = Rig::new(X710Config { flow_director: true, ..Default::default() });
    r.bring_up(1);
    r.setup_tx(0, |c| pack(c, 91, 1, 1));
    r.enable_tx(0);
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 50);
    let i = r.send(&f, 0, 0);
    poll("sent", || {
        r.step();
        r.tx_done(i)
    });
    assert_eq!(r.port.take_tx(), vec![f]);
    r.port.assert_no_faults();
}
