//! Statistics (docs/hw/i40e.md §13): the port (GLPRT_*) and VSI (GLV_*) counters. They are 48 or 32 bits wide,
//! wrap, and are not cleared by reading or by a PF reset, so the driver keeps, per counter, the last raw value
//! and a 64-bit total of the differences modulo the width: the first reading is the offset, later ones add what
//! changed, wraps included (as long as a counter is read at least once per wrap).
//!
//! What the port API reports follows DPDK's `i40e_dev_stats_get` / `i40e_read_stats_registers`
//! (docs/hw/i40e.md §13): `ierrors` sums [`IERRORS`] (GL_RXERR1 of the PF in, GLPRT_ILLERRC out), and the byte xstats leave the
//! 4 CRC bytes of each packet out ([`exclude_crc`]).

use drvkit::bar::RegisterSpace;

use crate::regs::{self, Regs};

/// Which index a counter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The port number.
    Port,
    /// The VSI's statistics index.
    Vsi,
    /// The function's index among GL_RXERR1's 144: VFs 0 to 127, then PF `pf_id` at 128 + `pf_id`
    /// (docs/hw/i40e.md §13; DPDK `hw->pf_id + I40E_MAX_VF`).
    Function,
}

/// Where the counters of one PF are: its port, its main VSI's statistics index, its PF number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatIndex {
    /// The physical port (GLPRT_*).
    pub port: u8,
    /// The main VSI's statistics index (GLV_*).
    pub vsi: u16,
    /// The PF number (GL_RXERR1).
    pub pf: u8,
}

/// GL_RXERR1's first PF index: the 128 VFs come first (docs/hw/i40e.md §13).
pub const RXERR1_FIRST_PF: usize = 128;

/// One hardware counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterDef {
    /// The xstat name.
    pub name: &'static str,
    /// Offset of its low word for index 0.
    pub base: usize,
    /// 48 or 32.
    pub width: u32,
    /// Its index.
    pub scope: Scope,
}

const fn c(name: &'static str, base: usize, width: u32, scope: Scope) -> CounterDef {
    CounterDef { name, base, width, scope }
}

/// The counters read (docs/hw/i40e.md §13), in xstats order.
pub const COUNTERS: &[CounterDef] = &[
    c("rx_good_bytes", 0x300000, 48, Scope::Port),
    c("rx_unicast_packets", 0x3005A0, 48, Scope::Port),
    c("rx_multicast_packets", 0x3005C0, 48, Scope::Port),
    c("rx_broadcast_packets", 0x3005E0, 48, Scope::Port),
    c("rx_dropped_packets", 0x300600, 32, Scope::Port),
    c("rx_crc_errors", 0x300080, 32, Scope::Port),
    c("rx_length_errors", 0x3000A0, 32, Scope::Port),
    c("rx_illegal_byte_errors", 0x3000E0, 32, Scope::Port),
    c("rx_undersize_errors", 0x300100, 32, Scope::Port),
    c("rx_fragmented_errors", 0x300560, 32, Scope::Port),
    c("rx_oversize_errors", 0x300120, 32, Scope::Port),
    c("rx_jabber_errors", 0x300580, 32, Scope::Port),
    c("mac_local_faults", 0x300020, 32, Scope::Port),
    c("mac_remote_faults", 0x300040, 32, Scope::Port),
    c("rx_xon_packets", 0x300140, 32, Scope::Port),
    c("rx_xoff_packets", 0x300160, 32, Scope::Port),
    c("rx_unknown_protocol_packets", 0x300660, 32, Scope::Port),
    c("rx_size_64_packets", 0x300480, 48, Scope::Port),
    c("rx_size_65_to_127_packets", 0x3004A0, 48, Scope::Port),
    c("rx_size_128_to_255_packets", 0x3004C0, 48, Scope::Port),
    c("rx_size_256_to_511_packets", 0x3004E0, 48, Scope::Port),
    c("rx_size_512_to_1023_packets", 0x300500, 48, Scope::Port),
    c("rx_size_1024_to_1522_packets", 0x300520, 48, Scope::Port),
    c("rx_size_1523_to_max_packets", 0x300540, 48, Scope::Port),
    c("tx_good_bytes", 0x300680, 48, Scope::Port),
    c("tx_unicast_packets", 0x3009C0, 48, Scope::Port),
    c("tx_multicast_packets", 0x3009E0, 48, Scope::Port),
    c("tx_broadcast_packets", 0x300A00, 48, Scope::Port),
    c("tx_dropped_link_down_packets", 0x300A20, 32, Scope::Port),
    c("tx_xon_packets", 0x300980, 32, Scope::Port),
    c("tx_xoff_packets", 0x3009A0, 32, Scope::Port),
    c("rx_local_dropped_packets", 0x300620, 32, Scope::Port),
    c("vsi_rx_good_bytes", 0x358000, 48, Scope::Vsi),
    c("vsi_rx_unicast_packets", 0x36C000, 48, Scope::Vsi),
    c("vsi_rx_multicast_packets", 0x36CC00, 48, Scope::Vsi),
    c("vsi_rx_broadcast_packets", 0x36D800, 48, Scope::Vsi),
    c("vsi_rx_dropped_packets", 0x310000, 32, Scope::Vsi),
    c("vsi_rx_unknown_protocol_packets", 0x36E400, 32, Scope::Vsi),
    c("vsi_tx_good_bytes", 0x328000, 48, Scope::Vsi),
    c("vsi_tx_unicast_packets", 0x33C000, 48, Scope::Vsi),
    c("vsi_tx_multicast_packets", 0x33CC00, 48, Scope::Vsi),
    c("vsi_tx_broadcast_packets", 0x33D800, 48, Scope::Vsi),
    c("vsi_tx_error_packets", 0x344000, 32, Scope::Vsi),
    c("rx_function_error_packets", 0x318000, 48, Scope::Function),
];

/// Index into [`COUNTERS`] by name (compile-time lookups for the port statistics).
pub const fn index_of(name: &str) -> usize {
    let mut i = 0;
    while i < COUNTERS.len() {
        let (a, b) = (COUNTERS[i].name.as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("no such counter")
}

/// The counters that make up `ierrors`, as DPDK's `i40e_dev_stats_get` sums them: CRCERRS, RLEC, RUC, ROC, RFC,
/// RJC and the PF's GL_RXERR1 (`pf->rx_err1`). GLPRT_ILLERRC counts bytes, not packets: DPDK leaves it out.
pub const IERRORS: [usize; 7] = [
    index_of("rx_crc_errors"),
    index_of("rx_length_errors"),
    index_of("rx_undersize_errors"),
    index_of("rx_oversize_errors"),
    index_of("rx_fragmented_errors"),
    index_of("rx_jabber_errors"),
    index_of("rx_function_error_packets"),
];
/// Byte counters that count the 4 CRC bytes of every packet, with the packet counters of the same frames: DPDK
/// subtracts 4 per packet from the port's RX and TX bytes and the VSI's RX bytes, not from the VSI's TX bytes
/// (`i40e_read_stats_registers`, `i40e_update_vsi_stats`; docs/hw/i40e.md §13).
pub const CRC_INCLUDED: [(usize, [usize; 3]); 3] = [
    (
        index_of("rx_good_bytes"),
        [index_of("rx_unicast_packets"), index_of("rx_multicast_packets"), index_of("rx_broadcast_packets")],
    ),
    (
        index_of("tx_good_bytes"),
        [index_of("tx_unicast_packets"), index_of("tx_multicast_packets"), index_of("tx_broadcast_packets")],
    ),
    (
        index_of("vsi_rx_good_bytes"),
        [
            index_of("vsi_rx_unicast_packets"),
            index_of("vsi_rx_multicast_packets"),
            index_of("vsi_rx_broadcast_packets"),
        ],
    ),
];
/// Ethernet CRC length.
pub const CRC_LEN: u64 = 4;

/// Takes the CRC bytes out of the byte counters of `counts` (values of [`COUNTERS`], e.g. since a reset).
pub fn exclude_crc(counts: &mut [u64]) {
    for (bytes, packets) in CRC_INCLUDED {
        let n: u64 = packets.iter().map(|&p| counts[p]).sum();
        counts[bytes] = counts[bytes].saturating_sub(n * CRC_LEN);
    }
}
/// The counters that make up `imissed`.
pub const IMISSED: [usize; 2] = [index_of("rx_dropped_packets"), index_of("vsi_rx_dropped_packets")];
/// The counter of `oerrors`.
pub const OERRORS: usize = index_of("vsi_tx_error_packets");

/// `now - prev` modulo 2^`width`.
pub const fn wrapping_delta(now: u64, prev: u64, width: u32) -> u64 {
    now.wrapping_sub(prev) & ((1u64 << width) - 1)
}

/// Reads a counter's raw value: a 48-bit pair as high, low, high again (re-reading the low word if the high one
/// moved in between, so a carry between the two reads cannot tear it).
pub fn read_raw<R: RegisterSpace>(regs: &Regs<R>, d: &CounterDef, at: StatIndex) -> u64 {
    let lo = match d.scope {
        Scope::Port => regs::glprt(d.base, at.port),
        Scope::Vsi => regs::glv(d.base, at.vsi),
        Scope::Function => regs::glv(d.base, (RXERR1_FIRST_PF + usize::from(at.pf)) as u16),
    };
    if d.width == 32 {
        return regs.read(lo) as u64;
    }
    let hi = regs::Reg(lo.0 + 4);
    const HI_BITS: u32 = 0xFFFF;
    let h1 = regs.read(hi) & HI_BITS;
    let mut l = regs.read(lo);
    let h2 = regs.read(hi) & HI_BITS;
    if h2 != h1 {
        l = regs.read(lo);
    }
    (h2 as u64) << 32 | l as u64
}

/// The running totals of [`COUNTERS`].
#[derive(Debug, Clone, Default)]
pub struct HwStats {
    prev: Vec<u64>,
    total: Vec<u64>,
}

impl HwStats {
    /// Totals from zero, the current raw values the offsets.
    pub fn new<R: RegisterSpace>(regs: &Regs<R>, at: StatIndex) -> HwStats {
        let prev = COUNTERS.iter().map(|d| read_raw(regs, d, at)).collect();
        HwStats { prev, total: vec![0; COUNTERS.len()] }
    }

    /// Adds what changed since the last reading; returns the totals.
    pub fn update<R: RegisterSpace>(&mut self, regs: &Regs<R>, at: StatIndex) -> &[u64] {
        for (i, d) in COUNTERS.iter().enumerate() {
            let now = read_raw(regs, d, at);
            self.total[i] = self.total[i].wrapping_add(wrapping_delta(now, self.prev[i], d.width));
            self.prev[i] = now;
        }
        &self.total
    }

    /// The totals as of the last update.
    pub fn totals(&self) -> &[u64] {
        &self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeRegs;
    use std::sync::Arc;

    fn at(port: u8, vsi: u16) -> StatIndex {
        StatIndex { port, vsi, pf: 0 }
    }

    fn set48(f: &FakeRegs, base: usize, port: u8, v: u64) {
        let lo = regs::glprt(base, port);
        f.store(lo, v as u32);
        f.store(regs::Reg(lo.0 + 4), (v >> 32) as u32 & 0xFFFF);
    }

    #[test]
    fn a_48_bit_counter_that_wraps_keeps_counting_from_its_offset() {
        let f = Arc::new(FakeRegs::default());
        let regs = Regs::new(f.clone());
        let i = index_of("rx_unicast_packets");
        let base = COUNTERS[i].base;
        // Not zero at start (the counters survive a PF reset): that is the offset.
        set48(&f, base, 2, (1 << 48) - 10);
        let mut s = HwStats::new(&regs, at(2, 0));
        assert_eq!(s.update(&regs, at(2, 0))[i], 0);
        set48(&f, base, 2, (1 << 48) - 1);
        assert_eq!(s.update(&regs, at(2, 0))[i], 9);
        set48(&f, base, 2, 5); // wrapped
        assert_eq!(s.update(&regs, at(2, 0))[i], 15);
        // Other ports' counters are not this port's.
        set48(&f, base, 1, 1000);
        assert_eq!(s.update(&regs, at(2, 0))[i], 15);
    }

    #[test]
    fn a_32_bit_counter_wraps_at_2_to_the_32() {
        let f = Arc::new(FakeRegs::default());
        let regs = Regs::new(f.clone());
        let i = index_of("vsi_rx_dropped_packets");
        f.store(regs::glv(COUNTERS[i].base, 7), u32::MAX - 1);
        let mut s = HwStats::new(&regs, at(0, 7));
        f.store(regs::glv(COUNTERS[i].base, 7), 3);
        assert_eq!(s.update(&regs, at(0, 7))[i], 5);
        assert_eq!(wrapping_delta(3, u32::MAX as u64 - 1, 32), 5);
        assert_eq!(wrapping_delta(0, (1 << 48) - 1, 48), 1);
    }

    #[test]
    fn every_counter_has_a_distinct_name_and_a_documented_width() {
        for (i, a) in COUNTERS.iter().enumerate() {
            assert!(a.width == 32 || a.width == 48);
            assert!(COUNTERS[i + 1..].iter().all(|b| b.name != a.name), "{}", a.name);
        }
        assert_eq!(COUNTERS[IERRORS[0]].name, "rx_crc_errors");
        assert!(IERRORS.iter().all(|&i| COUNTERS[i].name != "rx_illegal_byte_errors"), "DPDK leaves ILLERRC out");
    }

    #[test]
    fn the_byte_counters_lose_4_crc_bytes_per_packet_except_vsi_tx() {
        let mut v = vec![0u64; COUNTERS.len()];
        for name in ["rx_good_bytes", "tx_good_bytes", "vsi_rx_good_bytes", "vsi_tx_good_bytes"] {
            v[index_of(name)] = 1000;
        }
        for name in ["rx_unicast_packets", "rx_broadcast_packets", "tx_multicast_packets", "vsi_rx_unicast_packets"] {
            v[index_of(name)] = 5;
        }
        v[index_of("vsi_tx_unicast_packets")] = 5;
        exclude_crc(&mut v);
        assert_eq!(v[index_of("rx_good_bytes")], 1000 - 10 * 4);
        assert_eq!(v[index_of("tx_good_bytes")], 1000 - 5 * 4);
        assert_eq!(v[index_of("vsi_rx_good_bytes")], 1000 - 5 * 4);
        assert_eq!(v[index_of("vsi_tx_good_bytes")], 1000, "DPDK leaves the VSI's TX bytes as they are");
    }

    #[test]
    fn gl_rxerr1_is_read_at_the_pf_s_index_after_the_128_vfs() {
        let f = Arc::new(FakeRegs::default());
        let regs = Regs::new(f.clone());
        let i = index_of("rx_function_error_packets");
        let mut s = HwStats::new(&regs, StatIndex { port: 0, vsi: 0, pf: 3 });
        f.store(regs::glv(COUNTERS[i].base, 128 + 3), 7);
        f.store(regs::glv(COUNTERS[i].base, 3), 100); // VF 3's, not this PF's
        assert_eq!(s.update(&regs, StatIndex { port: 0, vsi: 0, pf: 3 })[i], 7);
    }
}
