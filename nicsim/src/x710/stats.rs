//! Statistics registers (docs/hw/i40e.md §13): per-port GLPRT_* and per-VSI GLV_* counters, 48 bits (an L/H
//! register pair, H holding bits 47:32 in its bits 15:0) or 32 bits wide. Reading does not clear them; they wrap
//! at 2^48 or 2^32, and only a CORER/GLOBR (not modelled) would reset them, so a PF reset leaves them alone.

use std::collections::HashMap;

use super::regs::stat::*;

/// Width of a counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Width {
    W48,
    W32,
}

impl Width {
    fn modulus_mask(self) -> u64 {
        match self {
            Width::W48 => (1 << 48) - 1,
            Width::W32 => (1 << 32) - 1,
        }
    }
}

/// Per-port counter bases (L offsets for port 0) and widths.
const PORT: &[(usize, Width)] = &[
    (GLPRT_GORC, Width::W48),
    (GLPRT_CRCERRS, Width::W32),
    (GLPRT_RLEC, Width::W32),
    (GLPRT_ILLERRC, Width::W32),
    (GLPRT_RUC, Width::W32),
    (GLPRT_ROC, Width::W32),
    (GLPRT_UPRC, Width::W48),
    (GLPRT_MPRC, Width::W48),
    (GLPRT_BPRC, Width::W48),
    (GLPRT_RDPC, Width::W32),
    (GLPRT_LDPC, Width::W32),
    (GLPRT_GOTC, Width::W48),
    (GLPRT_UPTC, Width::W48),
    (GLPRT_MPTC, Width::W48),
    (GLPRT_BPTC, Width::W48),
    (GLPRT_TDOLD, Width::W32),
];

/// Per-VSI counter bases and widths.
const VSI: &[(usize, Width)] = &[
    (GLV_GORC, Width::W48),
    (GLV_UPRC, Width::W48),
    (GLV_MPRC, Width::W48),
    (GLV_BPRC, Width::W48),
    (GLV_RDPC, Width::W32),
    (GLV_RUPP, Width::W32),
    (GLV_GOTC, Width::W48),
    (GLV_UPTC, Width::W48),
    (GLV_MPTC, Width::W48),
    (GLV_BPTC, Width::W48),
    (GLV_TEPC, Width::W32),
];

/// Per-function counters (docs/hw/i40e.md §13: GL_RXERR1, 144 functions). The model has no receive error that
/// feeds it; a test presets it ([`crate::X710Port::set_stat`]).
const FUNCTION: &[(usize, Width)] = &[(GL_RXERR1, Width::W48)];
/// Functions GL_RXERR1 indexes: 128 VFs, 16 PFs.
const FUNCTIONS: usize = 144;

/// Size histogram buckets (upper bounds, bytes with CRC): PRC/PTC 64, 127, 255, 511, 1023, 1522, 9522 (docs/hw/i40e.md §13).
const HISTOGRAM: [usize; 7] = [64, 127, 255, 511, 1023, 1522, 9522];
/// Histogram registers are 0x20 apart.
const HISTOGRAM_STRIDE: usize = 0x20;
/// Ports and VSIs addressed (docs/hw/i40e.md §13: ports 0..3, VSIs 0..383).
const PORTS: usize = 4;
const VSIS: usize = 384;
/// L/H pairs of one index are 8 bytes apart.
const INDEX_STRIDE: usize = 8;

/// The counters of one device, keyed by their L register offset.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    values: HashMap<usize, u64>,
}

/// What a register offset is to the statistics block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Low(Width),
    High,
}

fn classify(offset: usize) -> Option<(usize, Kind)> {
    let in_table = |table: &[(usize, Width)], count: usize| {
        table.iter().find_map(|&(base, w)| {
            let rel = offset.checked_sub(base)?;
            if rel >= count * INDEX_STRIDE {
                return None;
            }
            match (rel % INDEX_STRIDE, w) {
                (0, _) => Some((offset, Kind::Low(w))),
                (4, Width::W48) => Some((offset - 4, Kind::High)),
                _ => None,
            }
        })
    };
    if let Some(k) = in_table(PORT, PORTS).or_else(|| in_table(VSI, VSIS)).or_else(|| in_table(FUNCTION, FUNCTIONS)) {
        return Some(k);
    }
    for hist in [GLPRT_PRC64, GLPRT_PTC64] {
        for b in 0..HISTOGRAM.len() {
            let base = hist + b * HISTOGRAM_STRIDE;
            if (base..base + PORTS * INDEX_STRIDE).contains(&offset) {
                return match (offset - base) % INDEX_STRIDE {
                    0 => Some((offset, Kind::Low(Width::W48))),
                    4 => Some((offset - 4, Kind::High)),
                    _ => None,
                };
            }
        }
    }
    None
}

fn width_of(l_offset: usize) -> Option<Width> {
    match classify(l_offset)? {
        (_, Kind::Low(w)) => Some(w),
        _ => None,
    }
}

impl Stats {
    /// True if `offset` is a statistics register (read-only to the driver).
    pub fn owns(offset: usize) -> bool {
        classify(offset).is_some()
    }

    /// A register read, or `None` if `offset` is not a counter.
    pub fn read(&self, offset: usize) -> Option<u32> {
        let (l, kind) = classify(offset)?;
        let v = self.values.get(&l).copied().unwrap_or(0);
        Some(match kind {
            Kind::Low(_) => v as u32,
            Kind::High => ((v >> 32) & 0xFFFF) as u32,
        })
    }

    /// Adds `by` to the counter whose L register is `l_offset`, wrapping at its width.
    pub fn add(&mut self, l_offset: usize, by: u64) {
        let Some(w) = width_of(l_offset) else { return };
        let v = self.values.entry(l_offset).or_insert(0);
        *v = v.wrapping_add(by) & w.modulus_mask();
    }

    /// Sets a counter (fault injection: start near the wrap). Returns false if `l_offset` is not a counter's L.
    pub fn set(&mut self, l_offset: usize, value: u64) -> bool {
        let Some(w) = width_of(l_offset) else { return false };
        self.values.insert(l_offset, value & w.modulus_mask());
        true
    }

    /// The counter's current value.
    pub fn get(&self, l_offset: usize) -> u64 {
        self.values.get(&l_offset).copied().unwrap_or(0)
    }

    /// Counts one frame of `len` bytes (without CRC) received or sent on `port`, through VSI counter index `vsi`
    /// (bytes counted with the 4 CRC bytes, as docs/hw/i40e.md §13 implies: DPDK subtracts them).
    pub fn count_frame(&mut self, rx: bool, port: usize, vsi: usize, len: usize, dst: &[u8]) {
        let wire = (len + 4) as u64;
        let (bcast, mcast) = (dst.iter().all(|&b| b == 0xFF), dst.first().is_some_and(|b| b & 1 == 1));
        let p = INDEX_STRIDE * port;
        let v = INDEX_STRIDE * vsi;
        let (octets, uni, multi, broad, hist) = if rx {
            (
                (GLPRT_GORC, GLV_GORC),
                (GLPRT_UPRC, GLV_UPRC),
                (GLPRT_MPRC, GLV_MPRC),
                (GLPRT_BPRC, GLV_BPRC),
                GLPRT_PRC64,
            )
        } else {
            (
                (GLPRT_GOTC, GLV_GOTC),
                (GLPRT_UPTC, GLV_UPTC),
                (GLPRT_MPTC, GLV_MPTC),
                (GLPRT_BPTC, GLV_BPTC),
                GLPRT_PTC64,
            )
        };
        let kind = if bcast {
            broad
        } else if mcast {
            multi
        } else {
            uni
        };
        self.add(octets.0 + p, wire);
        self.add(octets.1 + v, wire);
        self.add(kind.0 + p, 1);
        self.add(kind.1 + v, 1);
        if let Some(b) = HISTOGRAM.iter().position(|&max| wire as usize <= max) {
            self.add(hist + b * HISTOGRAM_STRIDE + p, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_split_and_wrap_at_48_bits() {
        let mut s = Stats::default();
        assert!(s.set(GLPRT_GORC + 8, (1 << 48) - 2));
        s.add(GLPRT_GORC + 8, 5);
        assert_eq!(s.get(GLPRT_GORC + 8), 3);
        s.set(GLPRT_UPRC, 0x1234_5678_9ABC);
        assert_eq!(s.read(GLPRT_UPRC), Some(0x5678_9ABC));
        assert_eq!(s.read(GLPRT_UPRC + 4), Some(0x1234));
        assert_eq!(s.read(GLPRT_RDPC + 4), None, "a 32-bit counter has no H register");
        s.set(GLPRT_RDPC, u64::from(u32::MAX));
        s.add(GLPRT_RDPC, 2);
        assert_eq!(s.read(GLPRT_RDPC), Some(1));
        assert!(Stats::owns(GLPRT_PRC64 + 6 * 0x20 + 12));
    }
}
