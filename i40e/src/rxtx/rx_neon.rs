//! The groups of the RX fast run on aarch64 (docs/hw/i40e.md §10.2, §10.5): four 32-byte write-backs per test with
//! NEON (part of every aarch64 CPU, so the base build has it), the same test as one descriptor at a time in
//! [`super::rx_decode`] (DD and EOF, no frame error, the memo's flag bits, a length within the buffer), the Mbuf
//! fields built in vector registers from the lanes.

use std::mem::{offset_of, ManuallyDrop};

use drvkit::barrier::dma_rmb;
use drvkit::reg::Field;
use mempool::Mbuf;
use ringkit::rx::RxRun;

use super::rx_decode::{rx_qw1, RxMemo, FAST, FAST_MASK, KEY};
use crate::desc::{rx, RxDesc};

/// LENGTH_PBUF as a field of qword 1's high dword (the vector lanes below are dwords).
const LEN_HI: Field = Field::new(rx::LENGTH_PBUF.lo + rx::LENGTH_PBUF.width - 1 - 32, rx::LENGTH_PBUF.lo - 32);
/// The RSS hash is qword 0's whole high dword.
const _: () = assert!(rx::RSS_HASH.lo == 32 && rx::RSS_HASH.width == 32);

/// Takes groups of four descriptors while each repeats the memo's flag bits, and returns how many it took (a
/// multiple of four) and their bytes.
///
/// A group's four qword 1s are read first (acquire loads) and DD tested on all of them. Only then (after
/// [`dma_rmb`]) are the descriptors read, two per load (`LD4`: one 64-byte line de-interleaved, so that one register
/// holds the two qword 0s and another the two qword 1s), and tested together in vector registers: DD, EOF, no
/// frame error and the memo's key bits in each qword 1, the largest of the four lengths within `max_len`. Each
/// buffer's two RX blocks are then built from the memo's flags and type and the length and hash lanes (zips), and
/// stored whole ([`Mbuf::set_rx_blocks`]); the lengths' sum is the group's bytes.
///
/// # Safety
/// As [`ringkit::RxFormat::groups`].
#[inline(always)]
pub(super) unsafe fn rx_groups_neon(run: RxRun<RxDesc>, m0: &RxMemo) -> (usize, u64) {
    use std::arch::aarch64::{
        uint64x2_t, vaddvq_u32, vandq_u32, vandq_u64, vdupq_n_u32, vdupq_n_u64, veorq_u64, vld4q_u64, vmaxvq_u32,
        vorrq_u64, vreinterpretq_u32_u64, vreinterpretq_u64_u32, vshrq_n_u32, vuzp2q_u32, vzip1q_u32, vzip1q_u64,
        vzip2q_u32, vzip2q_u64,
    };
    const { assert!(size_of::<RxDesc>() == 32 && offset_of!(RxDesc, qw0) == 0 && offset_of!(RxDesc, qw1) == 8) };
    const LEN_SHIFT: i32 = LEN_HI.lo as i32;
    // qword-1 bits every descriptor of a group must have as `want`.
    const MASK: u64 = FAST_MASK | KEY;
    let want = FAST | m0.key;
    let RxRun { wb, shadow, out, n, max_len } = run;
    let d = wb.cast_const();
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands (NEON is part of the aarch64 target).
    let (want_v, mask_v, len_v, flags_v, ptype_v, zero) = unsafe {
        (
            vdupq_n_u64(want),
            vdupq_n_u64(MASK),
            vdupq_n_u32(LEN_HI.mask()),
            vdupq_n_u64(m0.flags),
            vdupq_n_u32(m0.ptype),
            vdupq_n_u64(0),
        )
    };
    let (mut k, mut bytes) = (0, 0u64);
    let end = n & !3;
    while k != end {
        // SAFETY: k + 3 < n: inside the ring (the caller's contract).
        let g = unsafe { d.add(k) };
        // SAFETY: as above; acquire loads of qword 1.
        let dd = unsafe { rx_qw1(g) & rx_qw1(g.add(1)) & rx_qw1(g.add(2)) & rx_qw1(g.add(3)) };
        if dd & rx::DD == 0 {
            break;
        }
        dma_rmb();
        // SAFETY: DD was seen on all four (then dma_rmb): the device is done with them; descriptors k .. k + 1 and
        // k + 2 .. k + 3 are 64 contiguous bytes each. `.0` holds a pair's qword 0s, `.1` its qword 1s.
        let (a, b) = unsafe { (vld4q_u64(g.cast()), vld4q_u64(g.add(2).cast())) };
        #[allow(unused_unsafe)]
        // SAFETY: no memory operands.
        let (odd, lens, rss) = unsafe {
            let diff = |q: uint64x2_t| vandq_u64(veorq_u64(q, want_v), mask_v);
            let odd = vmaxvq_u32(vreinterpretq_u32_u64(vorrq_u64(diff(a.1), diff(b.1))));
            // The high dwords of the four qword 1s (the lengths) and of the four qword 0s (the hashes), in
            // descriptor order.
            let hi1 = vuzp2q_u32(vreinterpretq_u32_u64(a.1), vreinterpretq_u32_u64(b.1));
            let lens = vshrq_n_u32::<LEN_SHIFT>(vandq_u32(hi1, len_v));
            (odd, lens, vuzp2q_u32(vreinterpretq_u32_u64(a.0), vreinterpretq_u32_u64(b.0)))
        };
        #[allow(unused_unsafe)]
        // SAFETY: no memory operands.
        let longest = unsafe { vmaxvq_u32(lens) };
        if odd != 0 || longest > max_len as u32 {
            break;
        }
        // Each buffer's two RX blocks from the lanes: [ol_flags, packet_type | pkt_len << 32] and [data_len |
        // vlan_tci 0 << 16 | rss_hash << 32, tx_offload 0] (a length of 14 bits leaves the VLAN half zero).
        #[allow(unused_unsafe)]
        // SAFETY: no memory operands.
        let (blocks, group_bytes) = unsafe {
            let type_len = |lo: bool| {
                let v = if lo { vzip1q_u32(ptype_v, lens) } else { vzip2q_u32(ptype_v, lens) };
                vreinterpretq_u64_u32(v)
            };
            let len_rss = |lo: bool| {
                let v = if lo { vzip1q_u32(lens, rss) } else { vzip2q_u32(lens, rss) };
                vreinterpretq_u64_u32(v)
            };
            // Frames 0 and 1 in the low pair, 2 and 3 in the high one.
            let (tl, lr) = ([type_len(true), type_len(false)], [len_rss(true), len_rss(false)]);
            let blocks: [(uint64x2_t, uint64x2_t); 4] = std::array::from_fn(|j| {
                let (t, l) = (tl[j / 2], lr[j / 2]);
                if j % 2 == 0 {
                    (vzip1q_u64(flags_v, t), vzip1q_u64(l, zero))
                } else {
                    (vzip2q_u64(flags_v, t), vzip2q_u64(l, zero))
                }
            });
            (blocks, vaddvq_u32(lens))
        };
        for (j, &(b1, b2)) in blocks.iter().enumerate() {
            // SAFETY: k + j < n: an owned buffer posted with the rearm word (the caller's contract), whose ownership
            // moves to out[k + j]; its length is at most max_len (tested above), within its data room, one segment,
            // pkt_len = data_len (both from the length lane).
            unsafe {
                let p = *shadow.add(k + j);
                ManuallyDrop::new(Mbuf::from_raw(p)).set_rx_blocks(b1, b2);
                out.add(k + j).write(p);
            }
        }
        // Four lengths of 14 bits: no overflow.
        bytes += group_bytes as u64;
        k += 4;
    }
    (k, bytes)
}
