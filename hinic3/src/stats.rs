//! The vport counters of L2NIC 9 and the physical-port counters of MAG 151 (docs/hw/hinic3.md §13): kept with a reset
//! base, and reported as xstats under the notes' (vport) and DPDK's (port) names.

use pktio::XStat;

use crate::mgmt::{PORT_STAT_COUNT, PORT_STAT_NAMES, PORT_STAT_RX_OVERSIZE, VPORT_STAT_NAMES};

/// The sixteen vport counters, in the answer's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VportStats(pub [u64; 16]);

impl VportStats {
    /// These counters since `base` (wrapping: the device's counters are free-running).
    pub fn since(&self, base: &VportStats) -> VportStats {
        let mut out = [0; 16];
        for (k, v) in out.iter_mut().enumerate() {
            *v = self.0[k].wrapping_sub(base.0[k]);
        }
        VportStats(out)
    }

    /// Packets received (unicast + multicast + broadcast).
    pub fn rx_packets(&self) -> u64 {
        self.0[6] + self.0[8] + self.0[10]
    }

    /// tx_discard.
    pub fn tx_discard(&self) -> u64 {
        self.0[12]
    }

    /// rx_discard.
    pub fn rx_discard(&self) -> u64 {
        self.0[13]
    }

    /// tx_err.
    pub fn tx_err(&self) -> u64 {
        self.0[14]
    }

    /// rx_err.
    pub fn rx_err(&self) -> u64 {
        self.0[15]
    }

    /// Every counter by name.
    pub fn xstats(&self) -> Vec<XStat> {
        VPORT_STAT_NAMES.iter().zip(self.0).map(|(n, v)| XStat::new(*n, v)).collect()
    }
}

/// The 86 MAG 151 counters, in the answer's order (42 TX, then 44 RX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortStats(pub [u64; PORT_STAT_COUNT]);

impl Default for PortStats {
    fn default() -> Self {
        PortStats([0; PORT_STAT_COUNT])
    }
}

impl PortStats {
    /// These counters since `base` (wrapping: free-running in the device).
    pub fn since(&self, base: &PortStats) -> PortStats {
        PortStats(std::array::from_fn(|k| self.0[k].wrapping_sub(base.0[k])))
    }

    /// RX frames refused for their size (docs/hw/hinic3.md §19).
    pub fn rx_oversize(&self) -> u64 {
        self.0[PORT_STAT_RX_OVERSIZE]
    }

    /// Every counter by DPDK's name.
    pub fn xstats(&self) -> Vec<XStat> {
        PORT_STAT_NAMES.iter().zip(self.0).map(|(n, v)| XStat::new(*n, v)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_since_a_base_and_by_name() {
        let mut a = [0u64; 16];
        for (k, v) in a.iter_mut().enumerate() {
            *v = 10 * k as u64 + 5;
        }
        let base = VportStats([5; 16]);
        let s = VportStats(a).since(&base);
        assert_eq!(s.rx_packets(), 60 + 80 + 100);
        assert_eq!((s.tx_discard(), s.rx_discard(), s.tx_err(), s.rx_err()), (120, 130, 140, 150));
        let x = s.xstats();
        assert_eq!((x[13].name.as_str(), x[13].value), ("rx_discard", 130));
        assert_eq!(VportStats([0; 16]).since(&VportStats([1; 16])).0[0], u64::MAX, "wraps");
    }

    #[test]
    fn port_counters_by_dpdk_name() {
        let p = PortStats(std::array::from_fn(|k| 3 * k as u64 + 7)).since(&PortStats([7; PORT_STAT_COUNT]));
        let x = p.xstats();
        assert_eq!(x.len(), 86);
        assert_eq!((x[0].name.as_str(), x[0].value), ("mac_tx_fragment_pkt_num", 0));
        assert_eq!((x[41].name.as_str(), x[41].value), ("mac_tx_from_app_bad_pkt_num", 123));
        assert_eq!((x[42 + 17].name.as_str(), p.rx_oversize()), ("mac_rx_oversize_pkt_num", 3 * 59));
        assert_eq!(x[85].name, "mac_rx_unfilter_pkt_num");
    }
}
