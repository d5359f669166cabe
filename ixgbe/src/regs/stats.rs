//! The statistics registers (docs/hw/ixgbe.md §13): clear-on-read counters, the per-queue counter sets and their
//! mapping, and the table the driver accumulates with the names DPDK reports.

use super::{Field, Reg};

/// A statistics register and its xstats name.
#[derive(Debug, Clone, Copy)]
pub struct StatReg {
    /// DPDK's xstats name.
    pub name: &'static str,
    /// Low (or only) register.
    pub lo: Reg,
    /// High register of a 64-bit (36-bit) counter, read after the low one.
    pub hi: Option<Reg>,
}

const fn stat(name: &'static str, off: usize) -> StatReg {
    StatReg { name, lo: Reg(off), hi: None }
}
const fn stat64(name: &'static str, lo: usize, hi: usize) -> StatReg {
    StatReg { name, lo: Reg(lo), hi: Some(Reg(hi)) }
}

/// CRC errors.
pub const CRCERRS: Reg = Reg(0x04000);
/// Missed packets per packet buffer `i` (0..8).
pub const fn mpc(i: usize) -> Reg {
    Reg(0x03FA0 + 4 * i)
}
/// Packet buffers with a missed-packet counter.
pub const MPC_COUNT: usize = 8;
/// Packets received into per-queue counter set `n` (0..16; docs/hw/ixgbe.md §6.1). Every queue feeds set 0 until
/// RQSMR maps it elsewhere.
pub const fn qprc(n: usize) -> Reg {
    Reg(0x01030 + 0x40 * n)
}
/// Per-queue counter sets.
pub const QUEUE_STAT_SETS: usize = 16;
/// Bytes received into counter set `n`, low 32 bits (docs/hw/ixgbe.md §6.1).
pub const fn qbrc_l(n: usize) -> Reg {
    Reg(0x01034 + 0x40 * n)
}
/// Bytes received into counter set `n`, high bits.
pub const fn qbrc_h(n: usize) -> Reg {
    Reg(0x01038 + 0x40 * n)
}
/// Packets sent from counter set `n` (docs/hw/ixgbe.md §6.1).
pub const fn qptc(n: usize) -> Reg {
    Reg(0x06030 + 0x40 * n)
}
/// Bytes sent from counter set `n`, low 32 bits (docs/hw/ixgbe.md §6.1).
pub const fn qbtc_l(n: usize) -> Reg {
    Reg(0x08700 + 8 * n)
}
/// Bytes sent from counter set `n`, high bits.
pub const fn qbtc_h(n: usize) -> Reg {
    Reg(0x08704 + 8 * n)
}
/// RX queues `4i..4i+4` to counter sets, one byte each (docs/hw/ixgbe.md §2, §13).
pub const fn rqsmr(i: usize) -> Reg {
    Reg(0x02300 + 4 * i)
}
/// TX queues `4i..4i+4` to counter sets, one byte each (docs/hw/ixgbe.md §2, §13).
pub const fn tqsm(i: usize) -> Reg {
    Reg(0x08600 + 4 * i)
}
/// RQSMR/TQSM registers: four queues each, 128 queues.
pub const QSMR_REGS: usize = 32;
/// The counter set field of a queue in its RQSMR/TQSM byte (the upper four bits are reserved).
pub const QSMR_MAP: Field = Field::new(3, 0);

/// Index of each statistic in [`STATS`] (kept in step with the table).
pub mod stat_idx {
    /// CRCERRS.
    pub const CRCERRS: usize = 0;
    /// ILLERRC.
    pub const ILLERRC: usize = 1;
    /// ERRBC.
    pub const ERRBC: usize = 2;
    /// MSPDC.
    pub const MSPDC: usize = 3;
    /// MLFC.
    pub const MLFC: usize = 4;
    /// MRFC.
    pub const MRFC: usize = 5;
    /// RLEC.
    pub const RLEC: usize = 6;
    /// RUC.
    pub const RUC: usize = 7;
    /// RFC.
    pub const RFC: usize = 8;
    /// ROC.
    pub const ROC: usize = 9;
    /// RJC.
    pub const RJC: usize = 10;
    /// XEC.
    pub const XEC: usize = 11;
    /// GPRC.
    pub const GPRC: usize = 12;
    /// GPTC.
    pub const GPTC: usize = 13;
    /// GORC.
    pub const GORC: usize = 14;
    /// GOTC.
    pub const GOTC: usize = 15;
    /// MPC (sum over packet buffers; not a register of its own).
    pub const MPC: usize = 16;
    /// MPTC.
    pub const MPTC: usize = 19;
    /// TPR.
    pub const TPR: usize = 21;
    /// TOR.
    pub const TOR: usize = 23;
    /// PTC64.
    pub const PTC64: usize = 30;
    /// LXONTXC.
    pub const LXONTXC: usize = 36;
    /// LXOFFTXC.
    pub const LXOFFTXC: usize = 37;
    /// FCCRC.
    pub const FCCRC: usize = 43;
    /// FCLAST.
    pub const FCLAST: usize = 44;
    /// QPRC summed over the 16 counter sets (not a register of its own).
    pub const QPRC: usize = 45;
}

/// The statistics the driver accumulates (docs/hw/ixgbe.md §13), in [`stat_idx`] order; names are DPDK's xstats names.
/// Entry [`stat_idx::MPC`] is the sum of MPC(0..8) and entry [`stat_idx::QPRC`] the sum of QPRC(0..16); their
/// registers are the first of each set.
pub const STATS: &[StatReg] = &[
    stat("rx_crc_errors", 0x04000),
    stat("rx_illegal_byte_errors", 0x04004),
    stat("rx_error_bytes", 0x04008),
    stat("rx_mac_short_packet_dropped", 0x04010),
    stat("mac_local_errors", 0x04034),
    stat("mac_remote_errors", 0x04038),
    stat("rx_length_errors", 0x04040),
    stat("rx_undersize_errors", 0x040A4),
    stat("rx_fragment_errors", 0x040A8),
    stat("rx_oversize_errors", 0x040AC),
    stat("rx_jabber_errors", 0x040B0),
    stat("rx_l3_l4_xsum_error", 0x04120),
    stat("rx_good_packets_hw", 0x04074),
    stat("tx_good_packets_hw", 0x04080),
    stat64("rx_good_bytes_hw", 0x04088, 0x0408C),
    stat64("tx_good_bytes_hw", 0x04090, 0x04094),
    stat("rx_missed_errors_hw", 0x03FA0),
    stat("rx_broadcast_packets", 0x04078),
    stat("rx_multicast_packets", 0x0407C),
    stat("tx_multicast_packets", 0x040F0),
    stat("tx_broadcast_packets", 0x040F4),
    stat("rx_total_packets", 0x040D0),
    stat("tx_total_packets", 0x040D4),
    stat64("rx_total_bytes", 0x040C0, 0x040C4),
    stat("rx_size_64_packets", 0x0405C),
    stat("rx_size_65_to_127_packets", 0x04060),
    stat("rx_size_128_to_255_packets", 0x04064),
    stat("rx_size_256_to_511_packets", 0x04068),
    stat("rx_size_512_to_1023_packets", 0x0406C),
    stat("rx_size_1024_to_max_packets", 0x04070),
    stat("tx_size_64_packets", 0x040D8),
    stat("tx_size_65_to_127_packets", 0x040DC),
    stat("tx_size_128_to_255_packets", 0x040E0),
    stat("tx_size_256_to_511_packets", 0x040E4),
    stat("tx_size_512_to_1023_packets", 0x040E8),
    stat("tx_size_1024_to_max_packets", 0x040EC),
    stat("tx_xon_packets", 0x03F60),
    stat("tx_xoff_packets", 0x03F68),
    stat("rx_xon_packets", 0x041A4),
    stat("rx_xoff_packets", 0x041A8),
    stat("rx_management_packets", 0x040B4),
    stat("rx_management_dropped", 0x040B8),
    stat("tx_management_packets", 0x0CF90),
    stat("rx_fcoe_crc_errors", 0x05118),
    stat("rx_fcoe_mbuf_allocation_errors", 0x02424),
    stat("rx_queue_packets_hw", 0x01030),
];
