//! The groups of the RX fast run on aarch64: four advanced write-backs per test with NEON (part of every aarch64
//! CPU, so the base build has it), the Mbuf fields from the vector lanes. The same tests as the x86-64 groups
//! ([`super::rx_decode`] is the one-at-a-time path they must agree with).

use std::mem::{offset_of, ManuallyDrop};

use drvkit::barrier::dma_rmb;
use mempool::Mbuf;
use ringkit::rx::RxRun;

use super::rx_decode::{rx_csum_bits, rx_status, RxMemo, RX_INFO_KEY};
use super::Family;
use crate::desc::{rx, RxDesc, RxWriteback};

/// Takes groups of four descriptors while each repeats the memo's flag key, and returns how many it took (a
/// multiple of four) and their bytes.
///
/// A group's four status dwords are read first (acquire loads) and tested together: DD, EOP, no MAC error, the
/// memo's checksum bits. Only then (after [`dma_rmb`]) are the four descriptors read whole, one 16-byte NEON load
/// each, and their packet info (the memo's key bits) and lengths (their OR bounds each one) tested together; each
/// buffer then gets the memo's flags and type and its descriptor's length and hash.
///
/// # Safety
/// As [`ringkit::RxFormat::groups`].
#[inline(always)]
pub(super) unsafe fn rx_groups_neon<F: Family>(run: RxRun<RxDesc>, m0: &RxMemo) -> (usize, u64) {
    use std::arch::aarch64::{
        uint32x4_t, vdupq_n_u32, veorq_u32, vgetq_lane_u32, vld1q_u32, vorrq_u32, vsetq_lane_u32,
    };
    const FAST: u32 = rx::STAT_DD | rx::STAT_EOP;
    // Write-back dwords as vector lanes.
    const DW_INFO: i32 = (offset_of!(RxWriteback, pkt_info) / 4) as i32;
    const DW_RSS: i32 = (offset_of!(RxWriteback, rss_hash) / 4) as i32;
    const DW_LEN: i32 = (offset_of!(RxWriteback, length) / 4) as i32;
    const LEN: u32 = rx::LENGTH.mask();
    const { assert!(size_of::<RxDesc>() == 16 && offset_of!(RxWriteback, length) % 4 == 0) };
    let group_status = FAST | m0.key_status();
    let group_mask = FAST | F::RX_ERR_RXE | rx_csum_bits::<F>();
    let RxRun { wb, shadow, out, n, max_len } = run;
    let d = wb.cast_const();
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands (NEON is part of the aarch64 target).
    let info = unsafe { vsetq_lane_u32::<DW_INFO>(m0.key_info(), vdupq_n_u32(0)) };
    let (mut k, mut bytes) = (0, 0u64);
    let end = n & !3;
    while k != end {
        // SAFETY: k + 3 < n: inside the ring (the caller's contract).
        let g = unsafe { d.add(k) };
        // SAFETY: as above.
        let (s0, s1, s2, s3) = unsafe { (rx_status(g), rx_status(g.add(1)), rx_status(g.add(2)), rx_status(g.add(3))) };
        if ((s0 ^ group_status) | (s1 ^ group_status) | (s2 ^ group_status) | (s3 ^ group_status)) & group_mask != 0 {
            break;
        }
        dma_rmb();
        // SAFETY: DD was seen on all four (then dma_rmb): the device is done with them; 16 bytes each.
        let v: [uint32x4_t; 4] = std::array::from_fn(|j| unsafe { vld1q_u32(g.add(j).cast()) });
        #[allow(unused_unsafe)]
        // SAFETY: no memory operands.
        let (info_diff, lens) = unsafe {
            let x = |j: usize| veorq_u32(v[j], info);
            let acc = vorrq_u32(vorrq_u32(x(0), x(1)), vorrq_u32(x(2), x(3)));
            // `info` is zero in the length lane: there the OR of the raw length dwords.
            (vgetq_lane_u32::<DW_INFO>(acc), vgetq_lane_u32::<DW_LEN>(acc) & LEN)
        };
        // The OR of the lengths bounds each of them (a false alarm only sends the group one at a time).
        if info_diff & RX_INFO_KEY != 0 || lens > max_len as u32 {
            break;
        }
        for (j, v) in v.iter().enumerate() {
            #[allow(unused_unsafe)]
            // SAFETY: no memory operands.
            let (len, rss) = unsafe { ((vgetq_lane_u32::<DW_LEN>(*v) & LEN) as u16, vgetq_lane_u32::<DW_RSS>(*v)) };
            // SAFETY: k + j < n: an owned buffer posted with the rearm word (the caller's contract), whose ownership
            // moves to out[k + j]; len <= max_len, within its data room, one segment.
            unsafe {
                let p = *shadow.add(k + j);
                ManuallyDrop::new(Mbuf::from_raw(p)).set_rx_unchecked(len, m0.flags, m0.ptype, rss);
                out.add(k + j).write(p);
            }
            bytes += len as u64;
        }
        k += 4;
    }
    (k, bytes)
}
