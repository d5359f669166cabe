//! The advanced RX write-back for the shared engine ([`ringkit::RxFormat`]): what a completed descriptor says about
//! its frame (offload flags, packet type, from the packet-info and status/error dwords), the memo the fast run keeps
//! of the last combination, the common frame one at a time and any completion for the general path. The groups of
//! four are in [`super::rx_simd`].

use std::marker::PhantomData;
use std::mem::offset_of;
use std::sync::atomic::{AtomicU32, Ordering};

use drvkit::barrier::dma_rmb;
use mempool::{ol_flags, ptype};
use ringkit::rx::{FastFrame, RxEntry, RxMeta};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use ringkit::rx::{Isa, RxRun};
use ringkit::{RxDescriptor, RxFormat};

use super::Family;
use crate::desc::{rx, RxDesc, RxWriteback};

/// The advanced descriptor's read format in the shared buffer core: packet address, header address 0 (the
/// default post).
impl RxDescriptor for RxDesc {}

/// The advanced one-buffer write-back of family `F` (its error bits), for the shared RX engine.
pub struct AdvRx<F: Family> {
    /// The device has the 82599's UDP zero-checksum errata (`rx_flags`).
    udp_csum_zero_err: bool,
    _family: PhantomData<F>,
}

impl<F: Family> AdvRx<F> {
    /// The format of a queue whose device has (or not) the 82599's UDP zero-checksum errata.
    pub fn new(udp_csum_zero_err: bool) -> Self {
        AdvRx { udp_csum_zero_err, _family: PhantomData }
    }
}

/// Reads the status dword of a descriptor the device may be writing (an atomic acquire load: the rest of the
/// descriptor is read only after DD was seen, and [`dma_rmb`]).
///
/// # Safety
/// `d` must point into ring memory that lives as long as the call.
#[inline(always)]
pub(super) unsafe fn rx_status(d: *const RxDesc) -> u32 {
    // SAFETY: an aligned dword of the ring memory (caller's contract).
    unsafe { AtomicU32::from_ptr(RxDesc::status_ptr(d).cast_mut()).load(Ordering::Acquire) }
}

/// Write-back dword 0-1 (packet info, RSS hash) and the length of a descriptor whose DD was seen.
///
/// # Safety
/// `d` must point into ring memory, and its DD must have been seen (then [`dma_rmb`]).
#[inline(always)]
unsafe fn rx_info_len(d: *const RxDesc) -> (u64, u16) {
    // SAFETY: the caller's contract: the device is done with this descriptor. Fields read one by one.
    unsafe {
        (
            std::ptr::addr_of!((*d).qw0).read_volatile(),
            d.cast::<u8>().add(offset_of!(RxWriteback, length)).cast::<u16>().read_volatile(),
        )
    }
}

// SAFETY: fast_one and the groups take only descriptors with DD and EOP (one buffer), no MAC error and a length
// of at most max_len, reading the rest after DD (acquire load, then dma_rmb).
unsafe impl<F: Family> RxFormat for AdvRx<F> {
    type Desc = RxDesc;
    type Wb = RxDesc;
    type Memo = RxMemo;

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn groups<I: Isa>(&self, run: RxRun<RxDesc>, memo: &RxMemo) -> (usize, u64) {
        // SAFETY: the trait's contract, passed on.
        unsafe { super::rx_simd::rx_groups::<F, I>(run, memo) }
    }

    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    unsafe fn groups<I: Isa>(&self, run: RxRun<RxDesc>, memo: &RxMemo) -> (usize, u64) {
        // SAFETY: the trait's contract, passed on.
        unsafe { super::rx_neon::rx_groups_neon::<F>(run, memo) }
    }

    /// DD and EOP, no MAC error, a length that fits the buffer, and not a UDP zero-checksum error
    /// (`udp_zero_csum_error`, whose flags depend on the queue; checked only on a flag-key miss).
    #[inline(always)]
    unsafe fn fast_one(&self, d: *mut RxDesc, max_len: u16, m0: &mut RxMemo) -> Option<FastFrame> {
        const FAST: u32 = rx::STAT_DD | rx::STAT_EOP;
        // SAFETY: ring memory (the trait's contract).
        let st = unsafe { rx_status(d) };
        if st & (FAST | F::RX_ERR_RXE) != FAST {
            return None;
        }
        dma_rmb();
        // SAFETY: DD is set: the device is done with this descriptor.
        let (qw0, len) = unsafe { rx_info_len(d) };
        if len > max_len {
            return None;
        }
        let info = RxDesc::pkt_info_of(qw0);
        let key = RxMemo::key::<F>(info, st);
        if key != m0.key {
            if udp_zero_csum_error::<F>(info, st) {
                // Its flags depend on the queue (the 82599's errata): the general path knows it.
                return None;
            }
            let (flags, ptype) = rx_flags::<F>(info, st, false);
            *m0 = RxMemo { key, flags, ptype };
        }
        Some(FastFrame { len, flags: m0.flags, ptype: m0.ptype, rss: RxDesc::rss_hash_of(qw0) })
    }

    /// Any write-back: a chain's buffers (EOP clear), MAC errors (RXE, on the frame's last descriptor).
    #[inline(always)]
    unsafe fn decode(&mut self, d: *mut RxDesc, _memo: &mut RxMemo) -> RxEntry {
        // SAFETY: ring memory (the trait's contract).
        let st = unsafe { rx_status(d) };
        if st & rx::STAT_DD == 0 {
            return RxEntry::Pending;
        }
        dma_rmb();
        // SAFETY: DD is set, so the device is done with it.
        let wb = unsafe { d.read_volatile() }.as_writeback();
        let last = st & rx::STAT_EOP != 0;
        let mut meta = RxMeta::default();
        if last {
            (meta.flags, meta.ptype) = rx_flags::<F>(wb.pkt_info, st, self.udp_csum_zero_err);
            meta.rss = wb.rss_hash;
        }
        RxEntry::Buf { len: wb.length, last, bad: last && st & F::RX_ERR_RXE != 0, meta }
    }
}

/// Packet type from write-back dword 0 bits 9:4 ([`rx::PTYPE_L3_L4`]: IPv4, IPv4-ext, IPv6, IPv6-ext, TCP, UDP).
const PTYPE_TABLE: [u32; 64] = {
    let mut t = [0u32; 64];
    let mut i = 0;
    while i < 64 {
        // The packet-info bits this index stands for.
        let bits = rx::PTYPE_L3_L4.val(i as u32);
        let mut v = ptype::L2_ETHER;
        if bits & (rx::PTYPE_IPV4 | rx::PTYPE_IPV4_EX) != 0 {
            v |= ptype::L3_IPV4;
        } else if bits & (rx::PTYPE_IPV6 | rx::PTYPE_IPV6_EX) != 0 {
            v |= ptype::L3_IPV6;
        }
        if v & ptype::L3_MASK != 0 {
            if bits & rx::PTYPE_TCP != 0 {
                v |= ptype::L4_TCP;
            } else if bits & rx::PTYPE_UDP != 0 {
                v |= ptype::L4_UDP;
            }
        }
        t[i] = v;
        i += 1;
    }
    t
};

/// Index bits of [`CSUM_TABLE`]: [`rx::STAT_CSUM_DONE`] (L4CS, IPCS) in bits 1:0, the family's checksum error
/// pair ([`Family::RX_CSUM_ERR`]: L4E, IPE) in bits 3:2.
const CSUM_ERR_AT: u32 = rx::STAT_CSUM_DONE.width;

/// Checksum flags from (L4CS, IPCS, L4E, IPE) in bits 0..3 of the index.
const CSUM_TABLE: [u64; 16] = {
    let mut t = [0u64; 16];
    let mut i = 0;
    while i < 16 {
        let (l4cs, ipcs, l4e, ipe) = (i & 1 != 0, i & 2 != 0, i & 4 != 0, i & 8 != 0);
        let mut f = 0;
        if ipcs {
            f |= if ipe { ol_flags::RX_IP_CKSUM_BAD } else { ol_flags::RX_IP_CKSUM_GOOD };
        }
        if l4cs {
            f |= if l4e { ol_flags::RX_L4_CKSUM_BAD } else { ol_flags::RX_L4_CKSUM_GOOD };
        }
        t[i] = f;
        i += 1;
    }
    t
};

/// Write-back dword 0 bits that [`rx_flags`] reads: RSS type 3:0, packet type 9:4.
pub(super) const RX_INFO_KEY: u32 = rx::RSS_TYPE.mask() | rx::PTYPE_L3_L4.mask();

/// Status/error bits that [`rx_flags`] reads: L4CS, IPCS, UDPV (for the 82599's UDP zero-checksum errata), and
/// the two checksum error bits.
#[inline(always)]
pub(super) const fn rx_csum_bits<F: Family>() -> u32 {
    rx::STAT_CSUM_DONE.mask() | rx::STAT_UDPV | F::RX_CSUM_ERR.mask()
}

/// An L4 checksum error on a UDP frame whose checksum field is 0 (UDPV clear): what the 82599's UDP zero-checksum
/// errata reports (docs/hw/ixgbe.md §7.2, §15: TCPE/L4E on a UDP frame with checksum 0, "no checksum").
#[inline(always)]
pub(super) fn udp_zero_csum_error<F: Family>(pkt_info: u32, status_error: u32) -> bool {
    status_error & (F::RX_ERR_L4E | rx::STAT_UDPV) == F::RX_ERR_L4E && pkt_info & rx::PTYPE_UDP != 0
}

/// Offload flags and packet type of a completed descriptor. `udp_csum_zero_err`: the queue's device has the
/// 82599's UDP zero-checksum errata (`udp_zero_csum_error`), so such an error is not reported as
/// `RX_L4_CKSUM_BAD` but as unknown (neither flag), as DPDK does (`rx_udp_csum_zero_err`). DPDK masks every UDP
/// L4 error on the 82599; testing UDPV keeps a wrong non-zero checksum reported bad.
#[inline(always)]
pub(super) fn rx_flags<F: Family>(pkt_info: u32, status_error: u32, udp_csum_zero_err: bool) -> (u64, u32) {
    const {
        assert!(F::RX_CSUM_ERR.mask() == F::RX_ERR_L4E | F::RX_ERR_IPE && F::RX_ERR_L4E < F::RX_ERR_IPE);
    }
    let done = rx::STAT_CSUM_DONE.get(status_error);
    let errs = F::RX_CSUM_ERR.get(status_error);
    let mut csum = CSUM_TABLE[(done | errs << CSUM_ERR_AT) as usize];
    if udp_csum_zero_err && udp_zero_csum_error::<F>(pkt_info, status_error) {
        csum &= !ol_flags::RX_L4_CKSUM_BAD;
    }
    // RSS type != 0 -> RX_RSS_HASH, without a branch.
    let rss = (((pkt_info & rx::RSS_TYPE.mask()) + rx::RSS_TYPE.mask()) >> rx::RSS_TYPE.width) as u64;
    let pt = PTYPE_TABLE[rx::PTYPE_L3_L4.get(pkt_info) as usize];
    (csum | (rss * ol_flags::RX_RSS_HASH), pt)
}

/// The last fast-path frame's flag key with its offload flags and packet type: those depend only on a few status
/// bits and the packet-info bits, and a burst mostly repeats one combination. Starts as key 0 (no packet-info
/// bits, no checksum bits) with its flags, so it is always a valid entry. Never a key of
/// `udp_zero_csum_error`: the fast run leaves those frames to the slow path, whose flags depend on the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxMemo {
    /// [`RxMemo::key`] of the frame these flags are for.
    key: u64,
    /// Its `ol_flags`.
    pub(super) flags: u64,
    /// Its packet type.
    pub(super) ptype: u32,
}

impl RxMemo {
    pub(super) fn new<F: Family>() -> RxMemo {
        let (flags, ptype) = rx_flags::<F>(0, 0, false);
        RxMemo { key: 0, flags, ptype }
    }

    /// What the flags of a frame depend on: its packet info's [`RX_INFO_KEY`] bits (low dword) and its status
    /// dword's [`rx_csum_bits`] (high dword).
    #[inline(always)]
    pub(super) fn key<F: Family>(pkt_info: u32, status_error: u32) -> u64 {
        (pkt_info & RX_INFO_KEY) as u64 | ((status_error & rx_csum_bits::<F>()) as u64) << 32
    }

    /// The packet-info bits of the key (the rest of [`RX_INFO_KEY`] is 0).
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64", test))]
    #[inline(always)]
    pub(super) fn key_info(&self) -> u32 {
        self.key as u32
    }

    /// The status bits of the key (the rest of [`rx_csum_bits`] is 0).
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64", test))]
    #[inline(always)]
    pub(super) fn key_status(&self) -> u32 {
        (self.key >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_type_and_checksum_tables() {
        assert_eq!(PTYPE_TABLE[0], ptype::L2_ETHER);
        assert_eq!(PTYPE_TABLE[0b01_0001], ptype::L2_ETHER | ptype::L3_IPV4 | ptype::L4_TCP);
        assert_eq!(PTYPE_TABLE[0b10_0100], ptype::L2_ETHER | ptype::L3_IPV6 | ptype::L4_UDP);
        assert_eq!(PTYPE_TABLE[0b01_0000], ptype::L2_ETHER); // TCP without IP: not trusted
        assert_eq!(CSUM_TABLE[0b0011], ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD);
        assert_eq!(CSUM_TABLE[0b1011], ol_flags::RX_IP_CKSUM_BAD | ol_flags::RX_L4_CKSUM_GOOD);
        assert_eq!(CSUM_TABLE[0b0111], ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_BAD);
        assert_eq!(CSUM_TABLE[0b1100], 0); // errors without the "computed" bits mean nothing
    }

    /// The named fields pick the right bits of a write-back, in both families (their error bits differ).
    fn decodes_a_write_back<F: Family>() {
        let info = 5 | rx::PTYPE_IPV4 | rx::PTYPE_UDP; // RSS type 5
        let st = rx::STAT_DD | rx::STAT_EOP | rx::STAT_IPCS | rx::STAT_L4CS | rx::STAT_UDPV | F::RX_ERR_IPE;
        let (flags, pt) = rx_flags::<F>(info, st, false);
        assert_eq!(pt, ptype::L2_ETHER | ptype::L3_IPV4 | ptype::L4_UDP);
        assert_eq!(flags, ol_flags::RX_IP_CKSUM_BAD | ol_flags::RX_L4_CKSUM_GOOD | ol_flags::RX_RSS_HASH);
        let st = rx::STAT_DD | rx::STAT_EOP | rx::STAT_L4CS | F::RX_ERR_L4E;
        let (flags, pt) = rx_flags::<F>(rx::PTYPE_IPV6 | rx::PTYPE_TCP, st, false);
        assert_eq!(pt, ptype::L2_ETHER | ptype::L3_IPV6 | ptype::L4_TCP);
        assert_eq!(flags, ol_flags::RX_L4_CKSUM_BAD);
        // The 82599's UDP zero-checksum errata: an L4 error on UDP without UDPV is unknown, not bad.
        let st = rx::STAT_DD | rx::STAT_EOP | rx::STAT_L4CS | F::RX_ERR_L4E;
        assert_eq!(rx_flags::<F>(rx::PTYPE_IPV4 | rx::PTYPE_UDP, st, true).0, 0);
        // The memo key keeps exactly what the flags depend on.
        let key = RxMemo::key::<F>(u32::MAX, u32::MAX);
        let memo = RxMemo { key, flags: 0, ptype: 0 };
        assert_eq!((memo.key_info(), memo.key_status()), (RX_INFO_KEY, rx_csum_bits::<F>()));
    }

    #[test]
    fn decodes_a_write_back_ixgbe() {
        decodes_a_write_back::<crate::IxgbeFamily>();
    }

    #[test]
    fn decodes_a_write_back_igb() {
        decodes_a_write_back::<crate::igb::IgbFamily>();
    }
}
