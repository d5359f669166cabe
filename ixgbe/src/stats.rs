//! The statistics as DPDK's ixgbe driver reports them (docs/hw/ixgbe.md §13): the counters read raw from the
//! hardware are corrected for what the hardware counts that DPDK does not.
//!
//! - Good packets received are the per-queue sums (QPRC): GPRC also counts the packets missed for lack of buffers.
//! - PAUSE (XON/XOFF) frames the port sends are counted in GPTC, MPTC and PTC64 and, as 64-byte frames, in GOTC;
//!   they are taken out of all four.
//! - GOTC and TOR include each frame's 4 CRC bytes; they are taken out. GORC includes them only while the CRC is
//!   kept (not stripped).
//! - ierrors is the sum of the receive error counters DPDK adds up (CRCERRS, MSPDC, RLEC, RUC, ROC, ILLERRC, ERRBC,
//!   RFC, FCCRC, FCLAST, and XEC except on the 82599, whose XEC miscounts UDP datagrams without a checksum); RJC is
//!   not among them.

use crate::dev::MacType;
use crate::regs::stat_idx as idx;

/// CRC bytes per frame.
const CRC_LEN: u64 = 4;
/// Size of a PAUSE frame on the wire, CRC included.
const PAUSE_FRAME_LEN: u64 = 64;

/// The receive error counters DPDK sums into ierrors, on every ixgbe part.
const IERRORS: [usize; 10] = [
    idx::CRCERRS,
    idx::MSPDC,
    idx::RLEC,
    idx::RUC,
    idx::ROC,
    idx::ILLERRC,
    idx::ERRBC,
    idx::RFC,
    idx::FCCRC,
    idx::FCLAST,
];

/// `raw` (accumulated register values, in `regs::STATS` order) corrected as DPDK reports them; `crc_stripped`
/// says whether the port strips the CRC on receive (HLREG0.RXCRCSTRP).
pub fn dpdk_view(raw: &[u64], crc_stripped: bool) -> Vec<u64> {
    let mut v = raw.to_vec();
    let pause = raw[idx::LXONTXC].wrapping_add(raw[idx::LXOFFTXC]);
    v[idx::GPRC] = raw[idx::QPRC];
    if !crc_stripped {
        v[idx::GORC] = raw[idx::GORC].saturating_sub(raw[idx::QPRC] * CRC_LEN);
    }
    v[idx::GPTC] = raw[idx::GPTC].saturating_sub(pause);
    v[idx::MPTC] = raw[idx::MPTC].saturating_sub(pause);
    v[idx::PTC64] = raw[idx::PTC64].saturating_sub(pause);
    // The data frames' CRCs, then the PAUSE frames whole (CRC included). DPDK subtracts the CRC of every GPTC
    // frame, PAUSE frames too, and then the PAUSE frames whole, so it reports 4 bytes too few per PAUSE frame sent;
    // we report the bytes that were really sent.
    v[idx::GOTC] = raw[idx::GOTC].saturating_sub(v[idx::GPTC] * CRC_LEN).saturating_sub(pause * PAUSE_FRAME_LEN);
    v[idx::TOR] = raw[idx::TOR].saturating_sub(raw[idx::TPR] * CRC_LEN);
    v
}

/// ierrors as DPDK sums it for a `mac` port, from `raw` counters.
pub fn ierrors(raw: &[u64], mac: MacType) -> u64 {
    let sum: u64 = IERRORS.iter().map(|&i| raw[i]).sum();
    match mac {
        MacType::X82599 => sum,
        MacType::X540 => sum + raw[idx::XEC],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regs::STATS;

    fn raw(set: &[(usize, u64)]) -> Vec<u64> {
        let mut r = vec![0; STATS.len()];
        for &(i, v) in set {
            r[i] = v;
        }
        r
    }

    #[test]
    fn good_packets_come_from_the_queues_and_pause_and_crc_are_taken_out() {
        // 10 frames of 100 bytes received (3 more missed, which GPRC also counts), 5 frames of 60 bytes sent plus
        // 2 XON and 1 XOFF.
        let r = raw(&[
            (idx::GPRC, 13),
            (idx::QPRC, 10),
            (idx::GORC, 10 * 104),
            (idx::GPTC, 8),
            (idx::MPTC, 3),
            (idx::PTC64, 8),
            (idx::LXONTXC, 2),
            (idx::LXOFFTXC, 1),
            (idx::GOTC, 5 * 64 + 3 * 64),
            (idx::TPR, 10),
            (idx::TOR, 10 * 104),
        ]);
        let v = dpdk_view(&r, false);
        assert_eq!(v[idx::GPRC], 10);
        assert_eq!(v[idx::GORC], 1000);
        assert_eq!(v[idx::GPTC], 5);
        assert_eq!(v[idx::MPTC], 0);
        assert_eq!(v[idx::PTC64], 5);
        // 5 data-frame CRCs and 3 whole PAUSE frames out: exactly the 5 x 60 bytes sent (DPDK's arithmetic would
        // take each PAUSE frame's CRC out twice and report 12 bytes fewer).
        assert_eq!(v[idx::GOTC], 5 * 60);
        assert_eq!(v[idx::TOR], 1000);
        // With the CRC stripped GORC is left alone.
        assert_eq!(dpdk_view(&r, true)[idx::GORC], 1040);
        // Registers DPDK does not correct pass through.
        assert_eq!(v[idx::LXONTXC], 2);
    }

    #[test]
    fn ierrors_sums_dpdks_registers_and_xec_except_on_the_82599() {
        let mut set: Vec<(usize, u64)> = IERRORS.iter().enumerate().map(|(n, &i)| (i, 1 << n)).collect();
        set.push((idx::RJC, 1 << 20));
        set.push((idx::XEC, 1 << 12));
        set.push((idx::MPC, 1 << 13));
        let r = raw(&set);
        assert_eq!(ierrors(&r, MacType::X82599), 0x3FF);
        assert_eq!(ierrors(&r, MacType::X540), 0x3FF + (1 << 12));
    }
}
