//! Bring-up, start/stop, RSS, filters, link events and the data path against [`crate::testing::FakeRegs`] (a
//! scripted firmware, not a model); the tests play the device's DMA through the ring addresses.

use pktio::TypedQueues;
use std::sync::Arc;

use drvkit::dma::IdentityMapper;
use hugepage::Allocator;
use mempool::{ol_flags, ptype as pt, Mempool, PacketBatch, PoolConfig, TxOffload};
use pktio::{EthDev, PortConfig, RssConfig, RssHashFunctions, RxQueue, TxQueue};

use super::*;
use crate::desc::{tx, RxDesc, TxDesc};
use crate::hmc::{RXQ_CTX_FIELDS, TXQ_CTX_FIELDS};
use crate::regs::qena;
use crate::testing::{FakeRegs, Firmware, MAIN_VSI_SEID, QS_HANDLE, STAT_IDX};

fn open_with(fw: Firmware) -> (Arc<FakeRegs>, Result<I40e<FakeRegs>>) {
    let fake = Arc::new(FakeRegs::new(fw));
    let opts = Options { timing: Timing::fast(), ..Options::new("fake0") };
    let dev = I40e::new(fake.clone(), Arc::new(IdentityMapper), Allocator::no_huge(), opts);
    (fake, dev)
}

fn open() -> (Arc<FakeRegs>, I40e<FakeRegs>) {
    let (f, d) = open_with(Firmware::default());
    (f, d.unwrap())
}

fn pool(name: &str) -> Mempool {
    Mempool::new(name, &PoolConfig { size: 2047, ..Default::default() }, &Allocator::no_huge()).unwrap()
}

fn bits(b: &[u8], lsb: u32, width: u32) -> u64 {
    (0..width).fold(0, |v, i| v | (((b[((lsb + i) / 8) as usize] >> ((lsb + i) % 8)) & 1) as u64) << i)
}

fn field(fields: &[crate::hmc::CtxField], b: &[u8], name: &str) -> u64 {
    let f = fields.iter().find(|f| f.name == name).unwrap();
    bits(b, f.lsb, f.width)
}

#[test]
fn bring_up_reads_identity_and_maps_the_main_vsi_in_order() {
    let (fake, dev) = open();
    let id = dev.identity();
    assert_eq!(id.mac, MacAddr([0x02, 0, 0, 0, 0x07, 0x10]));
    assert_eq!((id.api, id.fw, id.queues, id.first_queue, id.rss_table), ((1, 15), (9, 20), 64, 128, 512));
    assert_eq!(dev.mac_addr(), id.mac);
    let vsi = *dev.main_vsi();
    assert_eq!(
        (vsi.seid, vsi.stat_idx, vsi.qs_handle, vsi.base_queue, vsi.queues),
        (MAIN_VSI_SEID, STAT_IDX, QS_HANDLE, 0, 64)
    );
    let fw = fake.firmware();
    assert_eq!(
        fw.sent,
        [
            0x0001, 0x0002, 0x0110, 0x000A, 0x0107, 0x0200, 0x0212, 0x0407, 0x0211, 0x0607, 0x0613, 0x0207, 0x0206,
            0x0207, 0x0600
        ],
        "the order of docs/hw/i40e.md §3"
    );
    let upd = fw.vsi_update.unwrap();
    assert_eq!(upd.valid_sections, cmds::vsi::SECTION_VLAN | cmds::vsi::SECTION_QUEUE_MAP);
    assert_eq!((upd.queue_mapping[0], upd.tc_mapping[0]), (0, 6 << 9), "64 queues from PF queue 0");
    assert!(fw.lse, "link events on");
    drop(fw);
    assert_eq!(fake.peek(GLLAN_RCTL_0), gllan_rctl_0::PXE_MODE);
    assert_eq!(fake.peek(glhmc_lantxcnt(0)), 64);
    assert_eq!(fake.peek(glhmc_lanrxcnt(0)), 64);
    assert_eq!(fake.peek(PFGEN_CTRL) & pfgen_ctrl::PFSWR, 0, "the reset completed");
    let info = dev.info();
    assert_eq!((info.max_rx_queues, info.reta_size, info.hash_key_size), (64, 512, 52));
    assert!(dev.link().up);
}

#[test]
fn an_unknown_api_major_names_both_versions() {
    let (_, e) = open_with(Firmware { api: (2, 3), ..Firmware::default() });
    let e = e.unwrap_err();
    assert_eq!(
        e.driver_error::<DevError>(),
        Some(&DevError::ApiVersion { driver_knows: (1, 15), device_has: (2, 3), fw: "9.20".into() })
    );
    let msg = e.to_string();
    assert!(msg.contains("2.3") && msg.contains("1.x"), "{msg}");
}

#[test]
fn recovery_mode_and_a_failing_command_are_device_errors() {
    let fake = Arc::new(FakeRegs::default());
    fake.store(GL_FWSTS, gl_fwsts::FWS1B.val(1));
    let opts = Options { timing: Timing::fast(), ..Options::new("fake0") };
    let e = I40e::new(fake, Arc::new(IdentityMapper), Allocator::no_huge(), opts).unwrap_err();
    assert!(matches!(e.driver_error::<DevError>(), Some(DevError::RecoveryMode { .. })), "{e}");
    let (_, e) = open_with(Firmware { fail: Some((0x0212, 2)), ..Firmware::default() });
    let e = e.unwrap_err();
    assert_eq!(
        e.driver_error::<DevError>(),
        Some(&DevError::AdminQueue { opcode: 0x0212, name: "get VSI parameters", status: 2, status_name: "ENOENT" })
    );
}

#[test]
fn with_a_flow_director_the_vsi_starts_at_pf_queue_1() {
    let (fake, mut dev) = open_with(Firmware { flow_director: true, queues: 16, ..Firmware::default() });
    let dev = dev.as_mut().unwrap();
    assert_eq!((dev.main_vsi().base_queue, dev.main_vsi().queues), (1, 8));
    assert_eq!(fake.firmware().vsi_update.unwrap().queue_mapping[0], 1);
    let p = pool("fd");
    dev.start(&p).unwrap();
    assert_eq!(fake.peek(qrx_ena(1)) & qena::QENA_REQ, qena::QENA_REQ, "ethdev queue 0 is PF queue 1");
    assert_eq!(fake.peek(qrx_ena(0)), 0);
    assert_eq!(fake.peek(gllan_txpre_qdis(1)) & gllan_txpre_qdis::QINDX.mask(), 1, "absolute 129 = block 1, index 1");
}

#[test]
fn start_writes_the_contexts_and_enables_queues_stop_undoes_it() {
    let (fake, mut dev) = open();
    let p = pool("start");
    dev.configure(&PortConfig {
        rx_queues: 2,
        tx_queues: 2,
        rx_desc: 256,
        tx_desc: 128,
        mtu: 9000,
        ..Default::default()
    })
    .unwrap();
    dev.start(&p).unwrap();
    let rxq = dev.rx_queue_typed(1).unwrap();
    let txq = dev.tx_queue_typed(1).unwrap();
    let hmc = dev.hmc().unwrap();
    let rc = hmc.read_rx(1);
    assert_eq!(field(&RXQ_CTX_FIELDS, &rc, "base"), rxq.ring_iova() / 128);
    assert_eq!(field(&RXQ_CTX_FIELDS, &rc, "qlen"), 256);
    assert_eq!(field(&RXQ_CTX_FIELDS, &rc, "dbuff") * 128, rxq.buf_len() as u64);
    assert_eq!(field(&RXQ_CTX_FIELDS, &rc, "dsize"), 1);
    assert_eq!(field(&RXQ_CTX_FIELDS, &rc, "crcstrip"), 1);
    assert_eq!(field(&RXQ_CTX_FIELDS, &rc, "prefena"), 1);
    assert_eq!(field(&RXQ_CTX_FIELDS, &rc, "rxmax"), 9026);
    let tc = hmc.read_tx(1);
    assert_eq!(field(&TXQ_CTX_FIELDS, &tc, "base"), txq.ring_iova() / 128);
    assert_eq!(field(&TXQ_CTX_FIELDS, &tc, "qlen"), 128);
    assert_eq!(field(&TXQ_CTX_FIELDS, &tc, "new_context"), 1);
    assert_eq!(field(&TXQ_CTX_FIELDS, &tc, "rdylist"), QS_HANDLE as u64);
    assert_eq!(fake.peek(qtx_ctl(1)), qtx_ctl::PFVF_Q.val(qtx_ctl::PFVF_Q_PF));
    assert_eq!(fake.peek(qrx_tail(1)), 255);
    for q in 0..2 {
        assert_eq!(fake.peek(qrx_ena(q)) & qena::QENA_REQ, qena::QENA_REQ);
        assert_eq!(fake.peek(qtx_ena(q)) & qena::QENA_REQ, qena::QENA_REQ);
    }
    {
        let fw = fake.firmware();
        assert_eq!(fw.promisc, cmds::promisc::BROADCAST);
        assert_eq!(fw.max_frame, 9026);
        assert_eq!(
            fw.phy_abilities, None,
            "the PHY already has a type and a speed: nothing to set (docs/hw/i40e.md §7.2)"
        );
    }
    assert!(dev.set_mtu(1500).is_err(), "not while started");
    drop((rxq, txq));
    dev.stop().unwrap();
    for q in 0..2 {
        assert_eq!(fake.peek(qrx_ena(q)) & qena::QENA_REQ, 0);
        assert_eq!(fake.peek(qtx_ena(q)) & qena::QENA_REQ, 0);
    }
    assert_eq!(fake.firmware().phy_abilities.map(|a| a & cmds::phy::ENABLE_LINK), Some(0), "link down at stop");
    assert!(p.is_full(), "every buffer back");
    dev.start(&p).unwrap();
    let a = fake.firmware().phy_abilities.unwrap();
    let want = cmds::phy::ENABLE_LINK | cmds::phy::ENABLE_AN | cmds::phy::ENABLE_ATOMIC_LINK;
    assert_eq!(a & want, want, "the link switched on again at start");
}

#[test]
fn rss_programs_key_table_relative_to_the_vsi_and_hena() {
    let (fake, mut dev) = open();
    let p = pool("rss");
    let rss =
        RssConfig { key: None, functions: RssHashFunctions(RssHashFunctions::IPV4_UDP | RssHashFunctions::IPV6_TCP) };
    dev.configure(&PortConfig {
        rx_queues: 4,
        tx_queues: 1,
        rx_desc: 128,
        tx_desc: 128,
        rss: Some(rss),
        ..Default::default()
    })
    .unwrap();
    dev.start(&p).unwrap();
    assert_eq!(fake.peek(pfqf_hkey(0)), u32::from_le_bytes([0x44, 0x39, 0x79, 0x6b]));
    assert_eq!(fake.peek(pfqf_hkey(12)), u32::from_le_bytes([0x81, 0x15, 0x03, 0x66]));
    for i in [0, 77, 127] {
        assert_eq!(fake.peek(pfqf_hlut(i)), u32::from_le_bytes([0, 1, 2, 3]), "HLUT({i})");
    }
    assert_eq!(fake.peek(PFQF_CTL_0) & pfqf_ctl_0::HASHLUTSIZE, pfqf_ctl_0::HASHLUTSIZE, "512 entries");
    assert_eq!(fake.peek(pfqf_hena(0)), 1 << pctype::IPV4_UDP);
    assert_eq!(fake.peek(pfqf_hena(1)), 1 << (pctype::IPV6_TCP - 32));
    assert!(fake.firmware().sent.contains(&0x0207), "HENA through the RX control command (API 1.15)");
    assert_eq!(fake.peek(GLQF_CTL) & glqf_ctl::HTOEP, glqf_ctl::HTOEP);
    dev.reta_update(&[3, 2]).unwrap();
    assert_eq!(fake.peek(pfqf_hlut(5)), u32::from_le_bytes([3, 2, 3, 2]));
    assert!(dev.reta_update(&[4]).is_err(), "queue 4 of 4");
    let key: Vec<u8> = (0..52).collect();
    dev.rss_hash_update(&RssConfig { key: Some(key), functions: RssHashFunctions::ALL }).unwrap();
    assert_eq!(fake.peek(pfqf_hkey(1)), u32::from_le_bytes([4, 5, 6, 7]));
    assert!(dev.rss_hash_update(&RssConfig { key: Some(vec![0; 40]), functions: RssHashFunctions::ALL }).is_err());
}

#[test]
fn before_api_1_5_rx_filter_registers_are_written_directly_and_rx_only_is_not_used() {
    let (fake, mut dev) = open_with(Firmware { api: (1, 4), ..Firmware::default() });
    let dev = dev.as_mut().unwrap();
    let p = pool("api14");
    let rss = RssConfig { key: None, functions: RssHashFunctions(RssHashFunctions::IPV4_TCP) };
    dev.configure(&PortConfig { rx_queues: 2, rx_desc: 128, tx_desc: 128, rss: Some(rss), ..Default::default() })
        .unwrap();
    dev.start(&p).unwrap();
    dev.set_promiscuous(true).unwrap();
    assert_eq!(fake.peek(pfqf_hena(1)), 1 << (pctype::IPV4_TCP - 32), "written by MMIO");
    let fw = fake.firmware();
    assert!(!fw.sent.contains(&0x0207), "no RX control command before API 1.5");
    assert_eq!(fw.promisc & cmds::promisc::RX_ONLY, 0);
    assert_eq!(fw.promisc & cmds::promisc::UNICAST, cmds::promisc::UNICAST);
}

#[test]
fn promiscuous_allmulti_and_mac_filters_go_through_the_firmware() {
    let (fake, mut dev) = open();
    dev.set_promiscuous(true).unwrap();
    let rx_only = cmds::promisc::RX_ONLY;
    assert_eq!(
        fake.firmware().promisc,
        rx_only | cmds::promisc::UNICAST | cmds::promisc::MULTICAST | cmds::promisc::BROADCAST
    );
    dev.set_promiscuous(false).unwrap();
    dev.set_allmulticast(true).unwrap();
    assert_eq!(fake.firmware().promisc, cmds::promisc::MULTICAST | cmds::promisc::BROADCAST);
    let a = MacAddr([0x02, 1, 2, 3, 4, 5]);
    dev.set_mac_addr(a).unwrap();
    assert_eq!(fake.firmware().filters, [a.0]);
    let b = MacAddr([0x02, 1, 2, 3, 4, 6]);
    dev.set_mac_addr(b).unwrap();
    assert_eq!(fake.firmware().filters, [b.0], "the old non-permanent address removed");
    assert!(dev.set_mac_addr(MacAddr([0x01, 0, 0x5e, 0, 0, 1])).is_err());
}

#[test]
fn link_events_on_the_arq_update_the_link() {
    let (fake, dev) = open();
    assert_eq!(dev.link().speed_mbps, 10_000);
    fake.firmware().link_up = false;
    let p = fake.firmware().link_params();
    assert!(fake.post_event(0x0607, p));
    assert!(!dev.link().up);
    fake.firmware().link_up = true;
    let p = fake.firmware().link_params();
    assert!(fake.post_event(0x0607, p));
    assert!(dev.link().up);
}

/// Completes RX descriptors `from..from + n` with `len`-byte IPv4/UDP frames (EOF unless `chain`).
fn complete_rx(ring: u64, from: usize, lens: &[(u16, bool)]) {
    for (k, &(len, eof)) in lens.iter().enumerate() {
        let d = (ring as usize + (from + k) * 32) as *mut RxDesc;
        // SAFETY: a descriptor of the driver's ring (IOVA = VA) before its tail, which the device owns.
        unsafe { d.write_volatile(RxDesc::writeback(len, 24, Some(0xABCD_0000 + k as u32), eof, 0)) };
    }
}

/// Marks every RS descriptor among the first `n` done.
fn complete_tx(ring: u64, n: usize) -> Vec<TxDesc> {
    (0..n)
        .map(|i| {
            let d = (ring as usize + i * 16) as *mut TxDesc;
            // SAFETY: a descriptor of the driver's ring (IOVA = VA) that the driver handed over.
            unsafe {
                let v = d.read_volatile();
                if v.qw1 & tx::CMD_RS != 0 {
                    d.write_volatile(TxDesc { qw0: v.qw0, qw1: tx::DTYPE_DONE });
                }
                v
            }
        })
        .collect()
}

#[test]
fn frames_go_through_rx_and_back_out_through_tx() {
    let (fake, mut dev) = open();
    let p = pool("fwd");
    dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
    dev.start(&p).unwrap();
    let mut rxq = dev.rx_queue_typed(0).unwrap();
    let mut txq = dev.tx_queue_typed(0).unwrap();
    let lens: Vec<(u16, bool)> = (0..40).map(|i| (60 + i as u16, true)).collect();
    complete_rx(rxq.ring_iova(), 0, &lens);
    let mut batch = PacketBatch::with_capacity(64);
    assert_eq!(rxq.rx_burst(&mut batch), 40);
    for (i, m) in batch.iter().enumerate() {
        assert_eq!(m.pkt_len(), 60 + i as u32);
        assert_eq!(m.packet_type(), pt::L2_ETHER | pt::L3_IPV4 | pt::L4_UDP);
        assert_eq!(m.ol_flags(), ol_flags::RX_RSS_HASH | ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD);
        assert_eq!(m.rss_hash(), 0xABCD_0000 + i as u32);
    }
    assert_eq!(fake.peek(qrx_tail(0)), 127 + 40 - 128, "the 40 consumed refilled at once, past the threshold");
    assert_eq!(txq.tx_burst(&mut batch), 40);
    assert!(batch.is_empty());
    assert_eq!(fake.peek(qtx_tail(0)), 40);
    let sent = complete_tx(txq.ring_iova(), 40);
    for (i, d) in sent.iter().enumerate() {
        assert_eq!(tx::BUF_SZ.get(d.qw1), 60 + i as u64);
        assert_eq!(d.qw1 & (tx::CMD_EOP | tx::CMD_ICRC), tx::CMD_EOP | tx::CMD_ICRC);
        assert_eq!(d.qw1 & tx::CMD_RS != 0, i == 31, "RS on the 32nd descriptor only");
    }
    let s = dev.stats();
    assert_eq!((s.ipackets, s.opackets), (40, 40));
    assert_eq!(s.ibytes, (0..40).map(|i| 60 + i).sum::<u64>());
    drop((rxq, txq));
    dev.stop().unwrap();
    assert!(p.is_full(), "everything back in the pool");
}

#[test]
fn a_jumbo_frame_arrives_as_a_chain() {
    let (_, mut dev) = open();
    let p = pool("jumbo");
    dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, mtu: 9000, ..Default::default() }).unwrap();
    dev.start(&p).unwrap();
    let mut rxq = dev.rx_queue_typed(0).unwrap();
    let b = rxq.buf_len();
    complete_rx(rxq.ring_iova(), 0, &[(b, false), (b, false), (100, true), (64, true)]);
    let mut batch = PacketBatch::with_capacity(32);
    assert_eq!(rxq.rx_burst(&mut batch), 2);
    let first = batch.iter().next().unwrap();
    assert_eq!((first.nb_segs(), first.pkt_len()), (3, 2 * b as u32 + 100));
    assert_eq!(first.packet_type(), pt::L2_ETHER | pt::L3_IPV4 | pt::L4_UDP);
    assert_eq!(batch.iter().nth(1).unwrap().pkt_len(), 64);
}

#[test]
fn tx_enforces_the_mdd_limits_and_encodes_checksum_offloads() {
    let (_, mut dev) = open();
    let p = pool("mdd");
    // The checksum offloads asked (they run on the full TX path only); chains besides.
    let tx_offloads = pktio::offload::TX_CKSUM | pktio::offload::TX_MULTI_SEGS;
    dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, tx_offloads, ..Default::default() }).unwrap();
    dev.start(&p).unwrap();
    let mut txq = dev.tx_queue_typed(0).unwrap();
    let mut batch = PacketBatch::with_capacity(32);
    let mut short = p.alloc().unwrap();
    assert!(short.set_len(16));
    batch.push(short).unwrap();
    let mut long_chain = p.alloc().unwrap();
    assert!(long_chain.set_len(64));
    for _ in 0..8 {
        let mut s = p.alloc().unwrap();
        assert!(s.set_len(64));
        long_chain.chain(s);
    }
    assert_eq!(long_chain.nb_segs(), 9);
    batch.push(long_chain).unwrap();
    let mut csum = p.alloc().unwrap();
    assert!(csum.set_len(74));
    csum.set_ol_flags(ol_flags::TX_IPV4 | ol_flags::TX_IP_CKSUM | ol_flags::TX_TCP_CKSUM);
    csum.set_tx_offload(TxOffload { l2_len: 14, l3_len: 20, l4_len: 20, tso_segsz: 0 });
    batch.push(csum).unwrap();
    assert_eq!(txq.tx_burst(&mut batch), 3);
    let d = complete_tx(txq.ring_iova(), 1)[0];
    assert_eq!(tx::BUF_SZ.get(d.qw1), 74, "only the checksum packet reached the ring");
    assert_eq!(d.qw1 & (tx::CMD_IIPT_IPV4_CSUM | tx::CMD_L4T_UDP), tx::CMD_IIPT_IPV4_CSUM | tx::CMD_L4T_TCP);
    assert_eq!((tx::MACLEN.get(d.qw1), tx::IPLEN.get(d.qw1), tx::L4LEN.get(d.qw1)), (7, 5, 5));
    let s = dev.stats();
    assert_eq!((s.opackets, s.oerrors), (1, 2), "the short packet and the 9-segment chain dropped as errors");
    assert_eq!(p.in_use(), 128 + 1, "the bad packets went back; RX holds its ring, TX the packet in flight");
    drop(txq);
}

#[test]
fn tso_puts_a_context_descriptor_before_the_data() {
    let (_, mut dev) = open();
    let p = pool("tso");
    dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
    dev.start(&p).unwrap();
    let mut txq = dev.tx_queue_typed(0).unwrap();
    let mut batch = PacketBatch::with_capacity(8);
    let mk = |mss: u16| {
        let mut m = p.alloc().unwrap();
        assert!(m.set_len(1500));
        let mut tail = p.alloc().unwrap();
        assert!(tail.set_len(1000));
        m.chain(tail);
        m.set_ol_flags(ol_flags::TX_IPV4 | ol_flags::TX_IP_CKSUM | ol_flags::TX_TCP_SEG);
        m.set_tx_offload(TxOffload { l2_len: 14, l3_len: 20, l4_len: 32, tso_segsz: mss });
        m
    };
    batch.push(mk(1400)).unwrap();
    batch.push(mk(100)).unwrap(); // MSS below 256: MDD would trip
    assert_eq!(txq.tx_burst(&mut batch), 2);
    let d = complete_tx(txq.ring_iova(), 3);
    assert_eq!(tx::DTYPE.get(d[0].qw1), tx::DTYPE_CONTEXT);
    assert_eq!(d[0].qw1 & tx::CTX_CMD_TSO, tx::CTX_CMD_TSO);
    assert_eq!((tx::CTX_TSO_LEN.get(d[0].qw1), tx::CTX_MSS.get(d[0].qw1)), (2500 - 66, 1400));
    assert_eq!((tx::BUF_SZ.get(d[1].qw1), tx::BUF_SZ.get(d[2].qw1)), (1500, 1000));
    assert_eq!(d[1].qw1 & tx::CMD_EOP, 0);
    assert_eq!(d[2].qw1 & (tx::CMD_EOP | tx::CMD_L4T_TCP), tx::CMD_EOP | tx::CMD_L4T_TCP);
    assert_eq!(tx::L4LEN.get(d[2].qw1), 8, "the real TCP header length under TSO");
    assert_eq!(dev.stats().oerrors, 1);
    drop(txq);
}

#[test]
fn port_statistics_come_from_the_48_bit_counters_with_offsets() {
    let (fake, mut dev) = open();
    let crc = stats::index_of("rx_crc_errors");
    let uprc = stats::index_of("rx_unicast_packets");
    fake.store(glprt(stats::COUNTERS[crc].base, 0), 5);
    dev.reset_stats();
    fake.store(glprt(stats::COUNTERS[crc].base, 0), 12);
    let lo = glprt(stats::COUNTERS[uprc].base, 0);
    fake.store(lo, 0xFFFF_FFF0);
    fake.store(Reg(lo.0 + 4), 0x1);
    assert_eq!(dev.stats().ierrors, 7);
    let x = dev.xstats();
    assert_eq!(x.iter().find(|s| s.name == "rx_unicast_packets").unwrap().value, 0x1_FFFF_FFF0);
    assert_eq!(x.iter().find(|s| s.name == "rx_crc_errors").unwrap().value, 7);
}

#[test]
fn a_paged_hmc_carries_the_same_contexts() {
    let fake = Arc::new(FakeRegs::default());
    let opts = Options { timing: Timing::fast(), hmc_mode: crate::hmc::HmcMode::Paged, ..Options::new("fake0") };
    let mut dev = I40e::new(fake.clone(), Arc::new(IdentityMapper), Allocator::no_huge(), opts).unwrap();
    assert!(dev.hmc().unwrap().is_paged());
    assert_eq!(fake.peek(PFHMC_SDDATALOW) & pfhmc_sddatalow::PMSDTYPE, 0, "a paged SD");
    let p = pool("paged");
    dev.configure(&PortConfig { rx_queues: 2, tx_queues: 2, rx_desc: 64, tx_desc: 64, ..Default::default() }).unwrap();
    dev.start(&p).unwrap();
    let rxq = dev.rx_queue_typed(1).unwrap();
    let rc = dev.hmc().unwrap().read_rx(1);
    assert_eq!(field(&RXQ_CTX_FIELDS, &rc, "base"), rxq.ring_iova() / 128);
    assert_eq!(field(&RXQ_CTX_FIELDS, &rc, "qlen"), 64);
    drop(rxq);
}

#[test]
fn close_leaves_the_device_clean() {
    let (fake, mut dev) = open();
    let p = pool("close");
    dev.start(&p).unwrap();
    drop(dev);
    assert_eq!(fake.firmware().sent.last(), Some(&0x0003), "Queue Shutdown last");
    for r in [PF_ATQLEN, PF_ARQLEN, PF_ATQBAL, PF_ARQBAL, glhmc_lantxcnt(0), glhmc_lanrxcnt(0)] {
        assert_eq!(fake.peek(r), 0, "{r:?}");
    }
    assert_eq!(fake.peek(PFHMC_SDDATALOW) & pfhmc_sddatalow::PMSDVALID, 0);
    assert_eq!(fake.peek(qrx_ena(0)) | fake.peek(qtx_ena(0)), 0);
    assert!(p.is_full());
}

mod rings {
    use super::*;
    use proptest::prelude::*;

    /// The test plays the device: RX write-backs up to the tail, TX descriptors read up to the tail.
    struct Device {
        fake: Arc<FakeRegs>,
        rx_ring: u64,
        tx_ring: u64,
        rx_head: usize,
        tx_head: usize,
        size: usize,
        /// Lengths received by the device's RX side, in order.
        rx_lens: Vec<u16>,
        /// Lengths seen on the wire, in order.
        tx_lens: Vec<u64>,
    }

    impl Device {
        fn receive(&mut self, n: usize, len_seed: u16) {
            let tail = self.fake.peek(qrx_tail(0)) as usize;
            for k in 0..n {
                if self.rx_head == tail {
                    break;
                }
                let len = 60 + (len_seed.wrapping_mul(31).wrapping_add(k as u16 * 7)) % 1400;
                complete_rx(self.rx_ring, self.rx_head, &[(len, true)]);
                self.rx_lens.push(len);
                self.rx_head = (self.rx_head + 1) % self.size;
            }
        }

        fn transmit(&mut self) {
            let tail = self.fake.peek(qtx_tail(0)) as usize;
            while self.tx_head != tail {
                let d = (self.tx_ring as usize + self.tx_head * 16) as *mut TxDesc;
                // SAFETY: a descriptor the driver handed over (before the tail), IOVA = VA.
                unsafe {
                    let v = d.read_volatile();
                    self.tx_lens.push(tx::BUF_SZ.get(v.qw1));
                    if v.qw1 & tx::CMD_RS != 0 {
                        d.write_volatile(TxDesc { qw0: v.qw0, qw1: tx::DTYPE_DONE });
                    }
                }
                self.tx_head = (self.tx_head + 1) % self.size;
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

        /// Any sequence of device completions and burst sizes: every frame comes out once, in order, with its
        /// length, the counters match, and every buffer is back in the pool at the end.
        #[test]
        fn frames_are_forwarded_in_order_and_nothing_leaks(
            steps in prop::collection::vec((0usize..70, 1usize..65, any::<u16>()), 1..120),
        ) {
            let (fake, mut dev) = open();
            let p = pool("prop");
            dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
            dev.start(&p).unwrap();
            let mut rxq = dev.rx_queue_typed(0).unwrap();
            let mut txq = dev.tx_queue_typed(0).unwrap();
            let mut device = Device {
                fake: fake.clone(),
                rx_ring: rxq.ring_iova(),
                tx_ring: txq.ring_iova(),
                rx_head: 0,
                tx_head: 0,
                size: 128,
                rx_lens: Vec::new(),
                tx_lens: Vec::new(),
            };
            let mut batch = PacketBatch::with_capacity(64);
            for (n, burst, seed) in steps {
                device.receive(n, seed);
                batch.set_capacity(burst.max(batch.len()));
                rxq.rx_burst(&mut batch);
                txq.tx_burst(&mut batch);
                device.transmit();
            }
            // Drain: whatever is still on the RX ring, then whatever the batch holds.
            for _ in 0..16 {
                batch.set_capacity(64);
                rxq.rx_burst(&mut batch);
                txq.tx_burst(&mut batch);
                device.transmit();
            }
            prop_assert!(batch.is_empty());
            let want: Vec<u64> = device.rx_lens.iter().map(|&l| l as u64).collect();
            prop_assert_eq!(&device.tx_lens, &want);
            let s = dev.stats();
            prop_assert_eq!((s.ipackets, s.opackets), (want.len() as u64, want.len() as u64));
            prop_assert_eq!(s.obytes, want.iter().sum::<u64>());
            drop((rxq, txq));
            dev.stop().unwrap();
            prop_assert!(p.is_full());
        }
    }
}
