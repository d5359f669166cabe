//! The TX ring (docs/hw/i40e.md §9.2, §10.3, §11): 16-byte data descriptors on the shared TX core
//! ([`ringkit::TxCore`]: the common burst four at a time, RS on the packet that completes each group of
//! `rs_thresh` descriptors, the cleanup of a group once its RS descriptor reads DTYPE 0xF, one QTX_TAIL write per
//! burst after a store fence); here the descriptor layout, the plain test, checksum offload in the data
//! descriptor's command and offset fields, TSO context descriptors and the queue context.
//!
//! The limits that trip malicious-driver detection (docs/hw/i40e.md §11) are enforced before anything reaches the ring: packets of
//! at least 17 bytes, at most 8 data descriptors per packet, no empty buffer, at most 16383 bytes per buffer. A
//! packet that breaks them is dropped and counted as an error. No allocation, lock or dynamic call per packet.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::dma::{DmaArea, DmaMapper, DmaMapping};
use hugepage::Allocator;
use mempool::{ol_flags, Mbuf, MbufHeader, Mempool, PacketBatch};
use pktio::stats::TxQueueStats;
use pktio::{Error, Result, TxQueue};
use ringkit::{TxCore, TxDescriptor, TxHangState, TxPath, TxRestart, TxWatchdog, RS_CHECK, RS_HOLES};

use super::ring::RingConfig;
use crate::desc::{tx, TxDesc};
use crate::hmc::{LanHmc, TxQueueContext, CTX_BASE_UNIT};
use crate::queue::switch_tx;
use crate::regs::{self, qtx_ctl, PollTimeout, Reg, Regs};

/// Offload flags the data descriptor carries (checksums, VLAN insertion) or that need a context descriptor (TSO).
const TX_OFFLOAD_FLAGS: u64 = ol_flags::TX_IP_CKSUM | ol_flags::TX_UDP_CKSUM | ol_flags::TX_VLAN | ol_flags::TX_TCP_SEG;
/// TSO limits (docs/hw/i40e.md §11, §15): the MSS range and the largest TSO frame.
const TSO_MSS_MIN: u16 = 256;
const TSO_MSS_MAX: u16 = 9674;
const TSO_MAX_LEN: u32 = 256 * 1024;
/// Bits of a length-minus-minimum at and above which a plain packet is not plain: with the pool's data room at
/// most [`tx::MAX_BUF`] (checked at creation), a single segment is at most that long, so only a length below
/// [`tx::MIN_PKT_LEN`] (which wraps) sets them.
const LEN_PLAIN_BITS: u32 = 14;

const TX_L4_SHIFT: u32 = 52;
const TX_L4_MASK: u64 = 0b11;
const TX_L4_TCP: u64 = 1;
const TX_L4_UDP: u64 = 3;
/// L4LEN written for a checksum without TSO (docs/hw/i40e.md §10.3): the fixed header sizes DPDK uses, in 4-byte units.
const L4LEN_TCP: u64 = 5;
const L4LEN_UDP: u64 = 2;

/// The command and offset bits of a packet's data descriptors for its offloads (docs/hw/i40e.md §10.3).
#[inline]
fn tx_offload_bits(m: &Mbuf) -> u64 {
    let flags = m.ol_flags();
    let o = m.tx_offload();
    let mut v = tx::MACLEN.val(o.l2_len as u64 / 2);
    if flags & ol_flags::TX_IP_CKSUM != 0 {
        v |= tx::CMD_IIPT_IPV4_CSUM | tx::IPLEN.val(o.l3_len as u64 / 4);
    } else if flags & ol_flags::TX_IPV4 != 0 {
        v |= tx::CMD_IIPT_IPV4 | tx::IPLEN.val(o.l3_len as u64 / 4);
    } else if flags & ol_flags::TX_IPV6 != 0 {
        v |= tx::CMD_IIPT_IPV6 | tx::IPLEN.val(o.l3_len as u64 / 4);
    }
    if flags & ol_flags::TX_TCP_SEG != 0 {
        // TSO: the TCP header's real length (docs/hw/i40e.md §10.3).
        v |= tx::CMD_L4T_TCP | tx::L4LEN.val(o.l4_len as u64 / 4);
    } else {
        match (flags >> TX_L4_SHIFT) & TX_L4_MASK {
            TX_L4_TCP => v |= tx::CMD_L4T_TCP | tx::L4LEN.val(L4LEN_TCP),
            TX_L4_UDP => v |= tx::CMD_L4T_UDP | tx::L4LEN.val(L4LEN_UDP),
            _ => {}
        }
    }
    if flags & ol_flags::TX_VLAN != 0 {
        v |= tx::CMD_IL2TAG1 | tx::L2TAG1.val(m.vlan_tci() as u64);
    }
    v
}

/// i40e's 16-byte data descriptor in the shared TX core: the plain test and the fast write below, the DTYPE
/// write-back (0xF) as done, RS in the command field.
impl TxDescriptor for TxDesc {
    /// Plain: one descriptor, no offload, a length the MDD rules allow.
    #[inline(always)]
    fn is_plain(not_single: usize, flags: u64, len_keys: u64) -> bool {
        not_single == 0 && flags & TX_OFFLOAD_FLAGS == 0 && len_keys >> LEN_PLAIN_BITS == 0
    }

    /// The length minus the smallest packet, wrapping (see `LEN_PLAIN_BITS`).
    #[inline(always)]
    fn len_key(len: u16) -> u64 {
        (len as u64).wrapping_sub(tx::MIN_PKT_LEN as u64)
    }

    #[inline(always)]
    unsafe fn write_plain(d: *mut Self, iova: u64, len: u16) {
        // SAFETY: the trait's contract is write_tx_data's.
        unsafe { write_tx_data(d, iova, len) }
    }

    #[inline(always)]
    unsafe fn set_rs(d: *mut Self) {
        // SAFETY: the trait's contract: a written slot not yet handed over.
        unsafe {
            let c = std::ptr::addr_of_mut!((*d).qw1);
            c.write_volatile(c.read_volatile() | tx::CMD_RS);
        }
    }

    #[inline(always)]
    unsafe fn done(d: *mut Self) -> bool {
        // SAFETY: a slot of the ring; an acquire load of a qword the device may be writing.
        let qw1 = unsafe { AtomicU64::from_ptr(std::ptr::addr_of_mut!((*d).qw1)).load(Ordering::Acquire) };
        TxDesc::done(qw1)
    }
}

/// One TX queue: the shared ring core (shadow ring, RS groups, counters) and its registers.
pub struct TxRing<R: RegisterSpace> {
    core: TxCore<TxDesc>,
    regs: Regs<R>,
    tail_reg: Reg,
    queue: u16,
    abs_queue: u32,
    config: RingConfig,
    // Dropped after `Drop::drop` disabled the queue and the core freed its packets.
    _mem: DmaArea,
    _pool_map: DmaMapping,
}

/// What a TX ring needs from its port.
pub struct TxSetup<'a, R> {
    /// Register access.
    pub regs: &'a Regs<R>,
    /// Ring memory.
    pub allocator: &'a Allocator,
    /// DMA map of the device.
    pub mapper: &'a Arc<dyn DmaMapper>,
    /// The HMC its context goes into.
    pub hmc: &'a LanHmc,
    /// The port's pool (mapped for the ring's life).
    pub pool: &'a Mempool,
    /// PF queue number.
    pub queue: u16,
    /// Absolute queue number (for GLLAN_TXPRE_QDIS).
    pub abs_queue: u32,
    /// The PF's number (QTX_CTL.PF_INDX).
    pub pf_id: u8,
    /// The main VSI's queue-set handle of TC 0 (the context's rdylist).
    pub qs_handle: u16,
    /// Counters.
    pub stats: Arc<TxQueueStats>,
    /// What the hang watchdog found (shared with the port, for its xstats and [`crate::Error::TxHang`]).
    pub hang: Arc<TxHangState>,
    /// Port name for errors.
    pub port: &'a str,
    /// The burst the queue runs: [`TxPath::for_offloads`] of its configuration (offload flags are ignored on
    /// [`TxPath::Plain`]).
    pub path: TxPath,
}

impl<R: RegisterSpace> TxRing<R> {
    /// Allocates the ring, writes its TX context and QTX_CTL (docs/hw/i40e.md §9.2), queue disabled.
    pub fn new(setup: TxSetup<'_, R>, config: RingConfig) -> Result<Self> {
        let size = config.size as usize;
        let bad = |reason: String| Error::InvalidConfig { port: setup.port.to_string(), reason };
        RingConfig::check_size(config.size).map_err(bad)?;
        let (rs, free) = (config.rs_thresh as usize, config.free_thresh as usize);
        if rs == 0 || !size.is_multiple_of(rs) || rs > free || rs + free > size || rs + 2 >= size || free + 3 >= size {
            return Err(bad(format!(
                "TX thresholds rs={rs} free={free} for a ring of {size}: need rs dividing N, rs <= free, rs + free <= \
                 N, rs < N - 2, free < N - 3 (docs/hw/i40e.md §11)"
            )));
        }
        if setup.pool.data_room() > tx::MAX_BUF {
            return Err(bad(format!(
                "mempool {} has a {}-byte data room; one TX descriptor carries at most {} bytes",
                setup.pool.name(),
                setup.pool.data_room(),
                tx::MAX_BUF
            )));
        }
        let pool_map = setup.mapper.map(setup.pool.memory())?;
        let mem = DmaArea::new(setup.allocator, setup.mapper, size * size_of::<TxDesc>(), setup.port, "a TX ring")?;
        let ring = NonNull::new(mem.as_ptr().cast::<TxDesc>()).ok_or_else(|| bad("null ring".into()))?;
        let q = setup.queue;
        let regs = setup.regs.clone();
        switch_tx(&regs, q, setup.abs_queue, false, &config.timing).map_err(|t| {
            crate::error::timeout(format!("TX queue {q} disable"), "QTX_ENA", t.last, config.timing.switch)
                .at(setup.port)
        })?;
        // DPDK marks every slot done for its own bookkeeping (docs/hw/i40e.md §9.2 step 1).
        for i in 0..size {
            // SAFETY: i < size: the ring memory, not read by the device while the queue is disabled.
            unsafe { ring.as_ptr().add(i).write_volatile(TxDesc { qw0: 0, qw1: tx::DTYPE_DONE }) };
        }
        setup.hmc.write_tx(
            q,
            &TxQueueContext {
                new_context: true,
                base: mem.iova(0) / CTX_BASE_UNIT,
                qlen: config.size,
                rdylist: setup.qs_handle,
                ..Default::default()
            },
        );
        regs.write(regs::qint_tqctl(q), 0);
        regs.write(
            regs::qtx_ctl(q),
            qtx_ctl::PFVF_Q.val(qtx_ctl::PFVF_Q_PF) | qtx_ctl::PF_INDX.val(setup.pf_id as u32),
        );
        let _ = regs.read(regs::GLGEN_RSTAT);
        regs.write(regs::qtx_tail(q), 0);
        // SAFETY: `ring` is `size` descriptors of `mem`, which the ring keeps until after the core drops.
        let mut core = unsafe { TxCore::new(ring, size, rs, free, setup.pool, setup.stats) };
        core.set_path(setup.path);
        let restart = QueueRestart { regs: regs.clone(), queue: q, abs_queue: setup.abs_queue, timing: config.timing };
        core.set_watchdog(TxWatchdog::new(setup.port, q, config.tx_hang, setup.hang), Box::new(restart));
        Ok(TxRing {
            core,
            tail_reg: regs::qtx_tail(q),
            regs,
            queue: q,
            abs_queue: setup.abs_queue,
            config,
            _mem: mem,
            _pool_map: pool_map,
        })
    }

    /// Enables the queue (docs/hw/i40e.md §9.4).
    pub fn enable(&mut self) -> std::result::Result<(), PollTimeout> {
        switch_tx(&self.regs, self.queue, self.abs_queue, true, &self.config.timing)
    }

    /// PF queue number.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// The burst this queue runs.
    pub fn path(&self) -> TxPath {
        self.core.path()
    }

    /// IOVA of the ring (for tests playing the device).
    pub fn ring_iova(&self) -> u64 {
        self._mem.iova(0)
    }

    /// Free descriptor slots.
    pub fn free_slots(&self) -> usize {
        self.core.free_slots()
    }
}

/// How the core restarts a hung queue: the queue disabled (docs/hw/i40e.md §9.4), every packet on it dropped
/// and counted (the core), the tail back to 0, the queue enabled again (which zeroes QTX_HEAD). The queue context
/// in the HMC stays as written: only the ring's position starts again. The head the slow-path check reads is
/// QTX_HEAD.
struct QueueRestart<R: RegisterSpace> {
    regs: Regs<R>,
    queue: u16,
    abs_queue: u32,
    timing: crate::queue::QueueTiming,
}

impl<R: RegisterSpace> TxRestart for QueueRestart<R> {
    fn head(&mut self) -> usize {
        regs::qtx_head::HEAD.get(self.regs.read(regs::qtx_head(self.queue))) as usize
    }

    fn stop(&mut self) {
        let _ = switch_tx(&self.regs, self.queue, self.abs_queue, false, &self.timing);
    }

    fn start(&mut self) {
        self.regs.write(regs::qtx_tail(self.queue), 0);
        if switch_tx(&self.regs, self.queue, self.abs_queue, true, &self.timing).is_err() {
            // Left disabled: the ring fills again and the watchdog tries again after its timeout.
            eprintln!("TX queue {}: did not enable again after the hang restart (QTX_ENA)", self.queue);
        }
    }
}

/// Queues one packet that is not plain (offloads, chains) on `core`; false when it does not fit now. Packets that
/// break the MDD rules are consumed and counted as errors (`Err`).
#[inline(never)]
fn queue_packet(core: &mut TxCore<TxDesc>, m: &Mbuf, p: NonNull<MbufHeader>) -> std::result::Result<bool, ()> {
    let flags = m.ol_flags();
    let segs = m.nb_segs() as usize;
    if segs == 0 || segs > tx::MAX_DATA_PER_PKT || m.pkt_len() < tx::MIN_PKT_LEN as u32 {
        return Err(());
    }
    // Above the largest frame only TSO is allowed (docs/hw/i40e.md §15, §19, as DPDK's i40e_prep_pkts). A single
    // segment is at most the pool's data room; the fast run checks no more than that.
    if flags & ol_flags::TX_TCP_SEG == 0 && m.pkt_len() > super::rx::MAX_FRAME {
        return Err(());
    }
    if m.segments().any(|s| s.data.is_empty() || s.data.len() > tx::MAX_BUF as usize) {
        return Err(());
    }
    // TSO: a context descriptor before the data (docs/hw/i40e.md §10.4). With at most 8 data descriptors in the
    // whole packet, no segment the NIC cuts can span more than 8 (the MDD rule), whatever the MSS.
    let tso = if flags & ol_flags::TX_TCP_SEG != 0 {
        let o = m.tx_offload();
        let hdr = o.l2_len as u32 + o.l3_len as u32 + o.l4_len as u32;
        let len = m.pkt_len();
        if !(TSO_MSS_MIN..=TSO_MSS_MAX).contains(&o.tso_segsz) || len > TSO_MAX_LEN || len <= hdr || o.l4_len < 20 {
            return Err(());
        }
        Some(TxDesc::tso_context(len - hdr, o.tso_segsz))
    } else {
        None
    };
    let need = segs + tso.is_some() as usize;
    if need > core.free_slots() {
        return Ok(false);
    }
    let bits = if flags & TX_OFFLOAD_FLAGS != 0 { tx_offload_bits(m) } else { 0 };
    if let Some(ctx) = tso {
        core.put(ctx);
    }
    let rs = core.rs_due(need);
    let mut last = core.tail();
    for (k, s) in m.segments().enumerate() {
        let mut cmd = bits;
        if k + 1 == segs {
            cmd |= tx::CMD_EOP;
            if rs {
                cmd |= tx::CMD_RS;
            }
        }
        last = core.put(TxDesc::data(s.iova, s.data.len() as u16, cmd));
    }
    core.finish(last, p, need, rs, if need > 1 { RS_HOLES | RS_CHECK } else { RS_CHECK });
    Ok(true)
}

/// Writes a plain packet's data descriptor: the address, then ICRC | EOP and the length.
///
/// # Safety
/// `d` must be a free slot of the ring.
#[inline(always)]
unsafe fn write_tx_data(d: *mut TxDesc, iova: u64, len: u16) {
    // SAFETY: the caller's contract.
    unsafe {
        std::ptr::addr_of_mut!((*d).qw0).write_volatile(iova);
        // qword 1 as its two little-endian dwords: the command in the low one, the length (BUF_SZ starts in the
        // high one) in the other, one instruction fewer than building the qword. The length is not masked: a
        // packet placed here is checked plain (at most the pool's data room, itself at most 14 bits) before its
        // descriptor is handed over, or rewritten by the general path.
        const LO: u32 = tx::PLAIN as u32;
        const _: () = assert!(tx::PLAIN >> 32 == 0 && tx::BUF_SZ.lo >= 32);
        let qw1 = std::ptr::addr_of_mut!((*d).qw1).cast::<u32>();
        qw1.write_volatile(LO);
        qw1.add(1).write_volatile((len as u32) << (tx::BUF_SZ.lo - 32));
    }
}

impl<R: RegisterSpace> TxQueue for TxRing<R> {
    #[inline]
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let (taken, tail) = self.core.tx_burst(batch, queue_packet);
        if let Some(tail) = tail {
            self.regs.write(self.tail_reg, tail);
        }
        taken
    }
}

impl<R: RegisterSpace> Drop for TxRing<R> {
    fn drop(&mut self) {
        // Stop the device reading our buffers; the core then frees whatever it had not confirmed.
        let _ = switch_tx(&self.regs, self.queue, self.abs_queue, false, &self.config.timing);
    }
}
