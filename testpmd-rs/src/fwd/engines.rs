//! The forwarding modes' per-burst work ([`Engine`]): io, mac, macswap, rxonly, txonly, flowgen, csum, icmpecho,
//! 5tswap and noisy, each monomorphised into the lcore loop of the parent module.

use super::*;

/// One forwarding mode's work on one burst of one stream.
pub trait Engine {
    /// Does one burst. `b` is empty on entry and must be empty on return. `TAP`: show the bursts to the
    /// stream's capture taps.
    fn burst<const TAP: bool>(s: &mut Stream, b: &mut PacketBatch);
}

/// io.
pub struct Io;
impl Engine for Io {
    #[inline(always)]
    fn burst<const TAP: bool>(s: &mut Stream, b: &mut PacketBatch) {
        if s.receive::<TAP>(b) == 0 {
            return;
        }
        s.send::<TAP>(b);
    }
}

/// mac.
pub struct Mac;
impl Engine for Mac {
    #[inline(always)]
    fn burst<const TAP: bool>(s: &mut Stream, b: &mut PacketBatch) {
        if s.receive::<TAP>(b) == 0 {
            return;
        }
        let addrs = s.eth_addrs;
        for m in b.iter_mut() {
            if let Ok(mut eth) = EthernetFrame::new_checked(m.data_mut()) {
                eth.set_addrs(&addrs);
            }
        }
        s.send::<TAP>(b);
    }
}

/// macswap.
pub struct MacSwap;
impl Engine for MacSwap {
    #[inline(always)]
    fn burst<const TAP: bool>(s: &mut Stream, b: &mut PacketBatch) {
        if s.receive::<TAP>(b) == 0 {
            return;
        }
        for m in b.iter_mut() {
            if let Ok(mut eth) = EthernetFrame::new_checked(m.data_mut()) {
                eth.swap_addrs();
            }
        }
        s.send::<TAP>(b);
    }
}

/// rxonly.
pub struct RxOnly;
impl Engine for RxOnly {
    #[inline(always)]
    fn burst<const TAP: bool>(s: &mut Stream, b: &mut PacketBatch) {
        if s.receive::<TAP>(b) != 0 {
            b.clear();
        }
    }
}

/// txonly.
pub struct TxOnly;
impl Engine for TxOnly {
    #[inline(always)]
    fn burst<const TAP: bool>(s: &mut Stream, b: &mut PacketBatch) {
        let n = b.capacity();
        if !b.alloc_from(&s.pool, n) {
            return;
        }
        if s.tx_segs.len() == 1 {
            let t = &*s.tx_template;
            for m in b.iter_mut() {
                if m.set_len(t.len() as u16) {
                    m.data_mut().copy_from_slice(t);
                }
            }
        } else if s.rand_templates.is_empty() {
            let (t, segs, pool) = (&*s.tx_template, &*s.tx_segs, &s.pool);
            b.retain(|m| build_chain(m, t, segs, pool));
        } else {
            let (ts, segs, pool, min) = (&*s.rand_templates, &*s.tx_segs, &s.pool, s.rand_min_segs);
            let rng = &mut s.rng;
            b.retain(|m| {
                // As dpdk-testpmd: 1..=N segments, uniformly; here never fewer than hold the headers.
                let n = (xorshift(rng) % segs.len() as u64) as usize + 1;
                let n = n.max(min);
                build_chain(m, &ts[n - 1][..], &segs[..n], pool)
            });
        }
        if let Some((lcore, var)) = &mut s.multi_flow {
            vary_sources(b, *lcore, var);
        }
        s.send::<TAP>(b);
    }
}

/// `--txonly-multi-flow`: a different IPv4 source per packet (headers are in the first segment when it holds 34
/// bytes or more; shorter first segments keep the template's source).
#[cold]
fn vary_sources(b: &mut PacketBatch, lcore: u32, var: &mut u8) {
    for m in b.iter_mut() {
        let d = m.data_mut();
        if d.len() >= 34 {
            pkt::set_ipv4_src(d, pkt::multi_flow_src(*var, lcore));
        }
        *var = var.wrapping_add(1);
    }
}

/// The next number of a xorshift64 sequence (cheap; the split only has to vary).
fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Writes a multi-segment txonly packet into `m` (first segment) and freshly allocated segments.
#[cold]
fn build_chain(m: &mut mempool::Mbuf, t: &[u8], segs: &[u16], pool: &Mempool) -> bool {
    let mut off = segs[0] as usize;
    if !m.set_len(segs[0]) {
        return false;
    }
    m.data_mut().copy_from_slice(&t[..off]);
    for &len in &segs[1..] {
        let Some(mut seg) = pool.alloc() else { return false };
        if !seg.set_len(len) {
            return false;
        }
        seg.data_mut().copy_from_slice(&t[off..off + len as usize]);
        off += len as usize;
        m.chain(seg);
    }
    true
}

/// flowgen.
pub struct FlowGen;
impl Engine for FlowGen {
    #[inline(always)]
    fn burst<const TAP: bool>(s: &mut Stream, b: &mut PacketBatch) {
        if s.receive::<TAP>(b) != 0 {
            b.clear();
        }
        let n = b.capacity();
        if !b.alloc_from(&s.pool, n) {
            return;
        }
        let t = &s.flow_template;
        let mut flow = s.next_flow;
        for m in b.iter_mut() {
            if !m.set_len(t.len() as u16) {
                continue;
            }
            t.write(m.data_mut(), flow);
            flow += 1;
            if flow >= s.nb_flows {
                flow = 0;
            }
        }
        if TAP {
            s.tx_tap.observe(b.as_slice());
        }
        if let Some(r) = &s.record {
            record(r, b);
        }
        if crate::dump::tx_on() && !b.is_empty() {
            crate::dump::burst(b, s.pool.name(), s.spec.tx_port, s.spec.tx_queue, false);
        }
        let sent = s.tx.tx_burst(b);
        s.counters.tx_packets.add(sent as u64);
        if let Some(c) = s.counters.tx_bursts.get(sent) {
            c.add(1);
        }
        if !b.is_empty() {
            // Flows not sent are tried again next time, as testpmd does.
            let dropped = b.len() as u32;
            s.counters.fwd_dropped.add(dropped as u64);
            b.clear();
            flow = (flow + s.nb_flows - dropped % s.nb_flows) % s.nb_flows;
        }
        s.next_flow = flow;
    }
}

/// csum.
pub struct Csum;
impl Engine for Csum {
    #[inline(always)]
    fn burst<const TAP: bool>(s: &mut Stream, b: &mut PacketBatch) {
        if s.receive::<TAP>(b) == 0 {
            return;
        }
        let (mut bad_ip, mut bad_l4) = (0u64, 0u64);
        let addrs = s.eth_addrs;
        for m in b.iter_mut() {
            let chained = m.nb_segs() > 1;
            let d = m.data_mut();
            if !chained {
                let r = pkt::check_and_fix_checksums(d);
                bad_ip += r.bad_ip as u64;
                bad_l4 += r.bad_l4 as u64;
            }
            if let Ok(mut eth) = EthernetFrame::new_checked(d) {
                eth.set_addrs(&addrs);
            }
        }
        if bad_ip != 0 {
            s.counters.bad_ip_csum.add(bad_ip);
        }
        if bad_l4 != 0 {
            s.counters.bad_l4_csum.add(bad_l4);
        }
        s.send::<TAP>(b);
    }
}

/// icmpecho.
pub struct IcmpEcho;
impl Engine for IcmpEcho {
    #[inline(always)]
    fn burst<const TAP: bool>(s: &mut Stream, b: &mut PacketBatch) {
        if s.receive::<TAP>(b) == 0 {
            return;
        }
        let mac = s.tx_mac;
        b.retain(|m| pkt::icmpecho_reply(m.data_mut(), &mac));
        if !b.is_empty() {
            s.send::<TAP>(b);
        }
    }
}

/// 5tswap.
pub struct FiveTupleSwap;
impl Engine for FiveTupleSwap {
    #[inline(always)]
    fn burst<const TAP: bool>(s: &mut Stream, b: &mut PacketBatch) {
        if s.receive::<TAP>(b) == 0 {
            return;
        }
        for m in b.iter_mut() {
            pkt::five_tuple_swap(m.data_mut());
        }
        s.send::<TAP>(b);
    }
}

/// noisy.
pub struct Noisy;
impl Engine for Noisy {
    #[inline(always)]
    fn burst<const TAP: bool>(s: &mut Stream, b: &mut PacketBatch) {
        let n = s.receive::<TAP>(b);
        let Some(mut st) = s.noisy.take() else {
            if n > 0 {
                s.send::<TAP>(b);
            }
            return;
        };
        st.touch_memory(n);
        if !st.buffering() {
            if n > 0 {
                s.send::<TAP>(b);
            }
        } else {
            st.enqueue(b);
            if !b.is_empty() {
                // The FIFO is full: what did not fit is dropped, as a full TX ring would.
                s.counters.fwd_dropped.add(b.len() as u64);
                b.clear();
            }
            let now = std::time::Instant::now();
            while st.due(b, now) {
                s.send::<TAP>(b);
            }
            if !b.is_empty() {
                s.send::<TAP>(b);
            }
        }
        s.noisy = Some(st);
    }
}

/// Sends what the noisy FIFOs still hold when forwarding stops.
pub(super) fn flush_noisy(streams: &mut [Stream], b: &mut PacketBatch) {
    for s in streams {
        let Some(mut st) = s.noisy.take() else { continue };
        while st.held() > 0 {
            st.drain_into(b);
            s.send::<true>(b);
        }
        s.noisy = Some(st);
    }
}
