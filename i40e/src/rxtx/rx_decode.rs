//! The 32-byte RX write-back for the shared engine ([`ringkit::RxFormat`], docs/hw/i40e.md §10.2): what a completed
//! descriptor says about its frame (offload flags, packet type, from qword 1), the memo the fast run keeps of the
//! last combination, the common frame one at a time and any completion for the general path. The groups of four
//! are in `rx_simd` (x86-64) and `rx_neon` (aarch64).

use std::sync::atomic::{AtomicU64, Ordering};

use drvkit::barrier::dma_rmb;
use mempool::{ol_flags, ptype as pt};
use ringkit::rx::{FastFrame, RxEntry, RxMeta};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use ringkit::rx::{Isa, RxRun};
use ringkit::{RxDescriptor, RxFormat};

use crate::desc::{ptype, rx, RxDesc};

/// The 32-byte descriptor's read format in the shared buffer core: packet address, header address 0 (the default
/// post; the write-back rewrites the other two qwords).
impl RxDescriptor for RxDesc {}

/// qword-1 bits a fast frame must have as [`FAST`]: DD, EOF, and no frame error.
pub(super) const FAST_MASK: u64 = rx::DD | rx::EOF | rx::FRAME_ERRORS;
/// DD and EOF.
pub(super) const FAST: u64 = rx::DD | rx::EOF;

/// Qword 1 of a descriptor the device may be writing (an acquire load: the rest is read only after DD).
///
/// # Safety
/// `d` must point into live ring memory.
#[inline(always)]
pub(super) unsafe fn rx_qw1(d: *const RxDesc) -> u64 {
    // SAFETY: an aligned qword of the ring memory (caller's contract).
    unsafe { AtomicU64::from_ptr(std::ptr::addr_of!((*d).qw1).cast_mut()).load(Ordering::Acquire) }
}

/// Qword 0 (RSS hash, L2TAG1) of a descriptor whose DD was seen (then [`dma_rmb`]).
///
/// # Safety
/// `d` must point into live ring memory, its DD seen.
#[inline(always)]
pub(super) unsafe fn rx_qw0(d: *const RxDesc) -> u64 {
    // SAFETY: the caller's contract: the device is done with this descriptor.
    unsafe { std::ptr::addr_of!((*d).qw0).read_volatile() }
}

/// The 700 series' 32-byte write-back, for the shared RX engine.
#[derive(Debug, Default)]
pub struct Desc32;

// SAFETY: fast_one and the groups take only descriptors with DD and EOF (one buffer), no frame error and a length
// of at most max_len, reading qword 0 after DD (acquire load, then dma_rmb).
unsafe impl RxFormat for Desc32 {
    type Desc = RxDesc;
    type Wb = RxDesc;
    type Memo = RxMemo;

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn groups<I: Isa>(&self, run: RxRun<RxDesc>, memo: &RxMemo) -> (usize, u64) {
        // SAFETY: the trait's contract, passed on.
        unsafe { super::rx_simd::rx_groups::<I>(run, memo) }
    }

    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    unsafe fn groups<I: Isa>(&self, run: RxRun<RxDesc>, memo: &RxMemo) -> (usize, u64) {
        // SAFETY: the trait's contract, passed on.
        unsafe { super::rx_neon::rx_groups_neon(run, memo) }
    }

    /// One descriptor, DD and EOF, no frame error, a length within `max_len`.
    #[inline(always)]
    unsafe fn fast_one(&self, d: *mut RxDesc, max_len: u16, m0: &mut RxMemo) -> Option<FastFrame> {
        // SAFETY: ring memory (the trait's contract).
        let q = unsafe { rx_qw1(d) };
        if (q ^ FAST) & FAST_MASK != 0 {
            return None;
        }
        let len = rx::LENGTH_PBUF.get(q);
        if len > max_len as u64 {
            return None;
        }
        dma_rmb();
        if q & KEY != m0.key {
            *m0 = RxMemo::of(q);
        }
        // SAFETY: DD seen, then dma_rmb.
        let qw0 = unsafe { rx_qw0(d) };
        Some(FastFrame { len: len as u16, flags: m0.flags, ptype: m0.ptype, rss: rx::RSS_HASH.get(qw0) as u32 })
    }

    /// Any write-back: a chain's buffers (EOF clear), frame errors (on the frame's last descriptor).
    #[inline(always)]
    unsafe fn decode(&mut self, d: *mut RxDesc, _memo: &mut RxMemo) -> RxEntry {
        // SAFETY: ring memory (the trait's contract).
        let qw1 = unsafe { rx_qw1(d) };
        if qw1 & rx::DD == 0 {
            return RxEntry::Pending;
        }
        dma_rmb();
        let last = qw1 & rx::EOF != 0;
        let mut meta = RxMeta::default();
        if last {
            (meta.flags, meta.ptype) = rx_flags(qw1);
            // SAFETY: DD is set: the device is done with it.
            meta.rss = rx::RSS_HASH.get(unsafe { rx_qw0(d) }) as u32;
        }
        let len = rx::LENGTH_PBUF.get(qw1) as u16;
        RxEntry::Buf { len, last, bad: last && qw1 & rx::FRAME_ERRORS != 0, meta }
    }
}

/// mempool packet type of each 8-bit hardware packet type (the non-tunnelled IPv4 and IPv6 blocks and L2).
pub(super) const PTYPE_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let p = i as u8;
        let (l3, first) = if p >= ptype::IPV4_FIRST && p <= ptype::IPV4_LAST {
            (pt::L3_IPV4, ptype::IPV4_FIRST)
        } else if p >= ptype::IPV6_FIRST && p <= ptype::IPV6_LAST {
            (pt::L3_IPV6, ptype::IPV6_FIRST)
        } else {
            (0, 0)
        };
        t[i] = if l3 != 0 {
            let l4 = match p - first {
                ptype::OFF_UDP => pt::L4_UDP,
                ptype::OFF_TCP => pt::L4_TCP,
                ptype::OFF_ICMP => pt::L4_ICMP,
                _ => 0,
            };
            pt::L2_ETHER | l3 | l4
        } else if p != 0 && p != 255 {
            pt::L2_ETHER
        } else {
            0
        };
        i += 1;
    }
    t
};

/// qword-1 bits the flags depend on: L3L4P, FLTSTAT, the checksum error bits and the packet type.
pub(super) const KEY: u64 =
    rx::L3L4P | rx::FLTSTAT.mask() | rx::ERR_IPE | rx::ERR_L4E | rx::ERR_EIPE | rx::PTYPE.mask();

/// Offload flags and packet type of a write-back's qword 1.
pub(super) fn rx_flags(qw1: u64) -> (u64, u32) {
    let p = rx::PTYPE.get(qw1) as u8;
    let ptype = PTYPE_TABLE[p as usize];
    let mut flags = 0;
    if rx::FLTSTAT.get(qw1) == rx::FLTSTAT_RSS {
        flags |= ol_flags::RX_RSS_HASH;
    }
    if qw1 & rx::L3L4P != 0 {
        if ptype & pt::L3_MASK == pt::L3_IPV4 {
            flags |= if qw1 & (rx::ERR_IPE | rx::ERR_EIPE) != 0 {
                ol_flags::RX_IP_CKSUM_BAD
            } else {
                ol_flags::RX_IP_CKSUM_GOOD
            };
        }
        let l4 = ptype & pt::L4_MASK;
        let sctp = p == ptype::IPV4_FIRST + ptype::OFF_SCTP || p == ptype::IPV6_FIRST + ptype::OFF_SCTP;
        if l4 == pt::L4_TCP || l4 == pt::L4_UDP || sctp {
            flags |= if qw1 & rx::ERR_L4E != 0 { ol_flags::RX_L4_CKSUM_BAD } else { ol_flags::RX_L4_CKSUM_GOOD };
        }
    }
    (flags, ptype)
}

/// The last combination of flag bits seen, and its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxMemo {
    /// `qw1 & KEY`.
    pub(super) key: u64,
    /// Its offload flags.
    pub(super) flags: u64,
    /// Its packet type.
    pub(super) ptype: u32,
}

impl RxMemo {
    /// The memo of `qw1`.
    pub fn of(qw1: u64) -> RxMemo {
        let (flags, ptype) = rx_flags(qw1);
        RxMemo { key: qw1 & KEY, flags, ptype }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desc::RxDesc;

    #[test]
    fn checksums_rss_and_packet_types_decode() {
        let d = RxDesc::writeback(60, 24, Some(1), true, 0); // IPv4 UDP
        let (f, p) = rx_flags(d.qw1);
        assert_eq!(p, pt::L2_ETHER | pt::L3_IPV4 | pt::L4_UDP);
        assert_eq!(f, ol_flags::RX_RSS_HASH | ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD);
        let d = RxDesc::writeback(60, 26, None, true, rx::ERR_L4E | rx::ERR_IPE); // IPv4 TCP, both bad
        let (f, p) = rx_flags(d.qw1);
        assert_eq!(p, pt::L2_ETHER | pt::L3_IPV4 | pt::L4_TCP);
        assert_eq!(f, ol_flags::RX_IP_CKSUM_BAD | ol_flags::RX_L4_CKSUM_BAD);
        let d = RxDesc::writeback(60, 92, None, true, 0); // IPv6 TCP: no IP checksum
        let (f, p) = rx_flags(d.qw1);
        assert_eq!(p, pt::L2_ETHER | pt::L3_IPV6 | pt::L4_TCP);
        assert_eq!(f, ol_flags::RX_L4_CKSUM_GOOD);
        let mut d = RxDesc::writeback(60, 24, None, true, 0);
        d.qw1 &= !rx::L3L4P;
        assert_eq!(rx_flags(d.qw1).0, 0, "not checked: no checksum flags");
        assert_eq!(PTYPE_TABLE[1], pt::L2_ETHER);
        assert_eq!(PTYPE_TABLE[88 + 6], pt::L2_ETHER | pt::L3_IPV6 | pt::L4_ICMP);
        assert_eq!(PTYPE_TABLE[40], pt::L2_ETHER, "a tunnel type: L2 only");
    }
}
