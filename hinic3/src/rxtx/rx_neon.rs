//! The groups of the RX fast run on aarch64 (docs/hw/hinic3.md §10.5), for SP670 hosts on Kunpeng: four CQEs per
//! test with NEON (part of every aarch64 CPU), the same test as one CQE at a time in [`super::rx_decode`] (the
//! memo's status and offload word, a length of 1 to the buffer size), the Mbuf fields from the vector lanes.

use std::mem::ManuallyDrop;

use drvkit::barrier::dma_rmb;
use mempool::Mbuf;
use ringkit::rx::RxRun;

use super::rx_decode::{clear, status, Memo};
use crate::desc::{cqe, RxCqe};

/// Takes groups of four completed single-buffer frames at the start of `run` while each repeats the memo's status
/// and offload word with a length of 1 to the buffer size; clears their done bits, writes each buffer's RX fields
/// and moves it to `out`. Returns how many it took (a multiple of four) and their bytes. The four status dwords are
/// read first (acquire loads, the done bit tested on all), the CQEs' first 16 bytes only after them and
/// [`dma_rmb`].
///
/// # Safety
/// As [`ringkit::RxFormat::groups`]; `run.max_len` is the buffer size.
#[inline(always)]
pub(super) unsafe fn rx_groups_neon(run: RxRun<RxCqe>, memo: &Memo) -> (usize, u64) {
    use std::arch::aarch64::{
        uint32x4_t, vandq_u32, vdupq_n_u32, veorq_u32, vgetq_lane_u32, vld1q_u32, vmaxq_u32, vmaxvq_u32, vorrq_u32,
        vsetq_lane_u32, vshrq_n_u32, vsubq_u32,
    };
    /// Dwords per CQE.
    const DW: usize = size_of::<RxCqe>() / 4;
    // The CQE's first four dwords as lanes: 0 status, 1 VLAN and length, 2 offload word, 3 RSS hash.
    const LANE_LEN: i32 = 1;
    const LANE_OFFLOAD: i32 = 2;
    const LANE_RSS: i32 = 3;
    const LEN_SHIFT: i32 = cqe::LEN.lo as i32;
    const { assert!(cqe::LEN.lo + cqe::LEN.width == 32) };
    let RxRun { wb, shadow, out, n, max_len } = run;
    let cqes = wb.cast::<u32>();
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands (NEON is part of the aarch64 target).
    let (want, sel, one) = unsafe {
        let z = vdupq_n_u32(0);
        (
            // The status and offload word must be the memo's exactly (lanes 0 and 2), the rest is not compared.
            vsetq_lane_u32::<LANE_OFFLOAD>(memo.offload, vsetq_lane_u32::<0>(memo.status, z)),
            vsetq_lane_u32::<LANE_OFFLOAD>(u32::MAX, vsetq_lane_u32::<0>(u32::MAX, z)),
            // Subtracted from the length lane: the length field becomes length − 1 (0 wraps to all ones).
            vsetq_lane_u32::<LANE_LEN>(cqe::LEN.val(1), z),
        )
    };
    let (mut k, mut bytes) = (0, 0u64);
    let end = n & !3;
    while k != end {
        // SAFETY: k + 3 < n: CQEs of the array (the caller's contract), status dwords read with acquire order.
        let done = unsafe {
            let st = |j: usize| status(cqes.add((k + j) * DW));
            st(0) & st(1) & st(2) & st(3)
        };
        if done & cqe::DONE == 0 {
            break;
        }
        dma_rmb();
        // SAFETY: done seen on all four (then dma_rmb): the device is done with them; 32-byte aligned CQEs.
        let v: [uint32x4_t; 4] = std::array::from_fn(|j| unsafe { vld1q_u32(cqes.add((k + j) * DW)) });
        #[allow(unused_unsafe)]
        // SAFETY: no memory operands.
        let (odd, len_max) = unsafe {
            let diff = |j: usize| vandq_u32(veorq_u32(v[j], want), sel);
            let len1 = |j: usize| vshrq_n_u32::<LEN_SHIFT>(vsubq_u32(v[j], one));
            let d = vorrq_u32(vorrq_u32(diff(0), diff(1)), vorrq_u32(diff(2), diff(3)));
            let l = vmaxq_u32(vmaxq_u32(len1(0), len1(1)), vmaxq_u32(len1(2), len1(3)));
            (vmaxvq_u32(d), vgetq_lane_u32::<LANE_LEN>(l))
        };
        // The largest length − 1 below the buffer size: every length 1 to max_len.
        if odd != 0 || len_max >= max_len as u32 {
            break;
        }
        for (j, v) in v.iter().enumerate() {
            #[allow(unused_unsafe)]
            // SAFETY: no memory operands.
            let (len, rss) =
                unsafe { (cqe::LEN.get(vgetq_lane_u32::<LANE_LEN>(*v)) as u16, vgetq_lane_u32::<LANE_RSS>(*v)) };
            // SAFETY: k + j < n: a CQE of the array, consumed (docs/hw/hinic3.md §10.6 step 3: its done bit cleared);
            // an owned buffer posted with the rearm word whose ownership moves to out[k + j]; 1 <= len <= max_len,
            // within its data room, one segment.
            unsafe {
                clear(cqes.add((k + j) * DW));
                let p = *shadow.add(k + j);
                ManuallyDrop::new(Mbuf::from_raw(p)).set_rx_unchecked(len, memo.flags, memo.ptype, rss);
                out.add(k + j).write(p);
            }
            bytes += len as u64;
        }
        k += 4;
    }
    (k, bytes)
}
