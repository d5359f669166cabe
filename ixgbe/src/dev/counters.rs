//! The clear-on-read counters accumulated in software, the per-queue counter sets and their mapping
//! (docs/hw/ixgbe.md §13).

use super::*;

impl<R: RegisterSpace> Ixgbe<R> {
    /// Reads every clear-on-read counter into the software totals.
    pub(super) fn accumulate(&self) {
        let Ok(mut hw) = self.hw.lock() else { return };
        for (i, s) in STATS.iter().enumerate() {
            let v = if i == stat_idx::MPC {
                (0..MPC_COUNT).map(|p| self.regs.read(mpc(p)) as u64).sum()
            } else if i == stat_idx::QPRC {
                let mut sum = 0;
                for n in 0..QUEUE_STAT_SETS {
                    let p = self.regs.read(qprc(n)) as u64;
                    sum += p;
                    let sets = &mut hw.sets;
                    sets.rx_packets[n] += p;
                    sets.rx_bytes[n] += self.regs.read(qbrc_l(n)) as u64 | (self.regs.read(qbrc_h(n)) as u64) << 32;
                    sets.tx_packets[n] += self.regs.read(qptc(n)) as u64;
                    sets.tx_bytes[n] += self.regs.read(qbtc_l(n)) as u64 | (self.regs.read(qbtc_h(n)) as u64) << 32;
                }
                sum
            } else {
                let lo = self.regs.read(s.lo) as u64;
                match s.hi {
                    Some(hi) => lo | (self.regs.read(hi) as u64) << 32,
                    None => lo,
                }
            };
            hw.values[i] = hw.values[i].wrapping_add(v);
        }
    }

    /// The queue counter sets now.
    pub(super) fn queue_sets(&self) -> QueueSets {
        self.accumulate();
        self.hw.lock().map(|h| h.sets).unwrap_or_default()
    }

    /// Writes RQSMR and TQSM (docs/hw/ixgbe.md §13): after every reset, they come back as all queues to set 0.
    pub(super) fn apply_qsmr(&self) {
        for i in 0..QSMR_REGS {
            self.regs.write(rqsmr(i), self.qsmr[0][i]);
            self.regs.write(tqsm(i), self.qsmr[1][i]);
        }
    }

    pub(super) fn hw_values(&self) -> Vec<u64> {
        self.accumulate();
        self.hw.lock().map(|h| h.values.clone()).unwrap_or_else(|_| vec![0; STATS.len()])
    }

    pub(super) fn raw_stats(&self) -> PortStats {
        let hw = self.hw_values();
        let mut s = self.state.queue_counters();
        // Packets and bytes come from the queues (exact, what the application saw); errors and drops from the
        // MAC's counters, as DPDK reports them.
        s.imissed += hw[stat_idx::MPC];
        // ierrors is the MAC's count, summed as DPDK sums it (crate::stats); frames it passed with an error
        // write-back (RXE, e.g. with FCTRL.SBP) and the driver dropped are already in it, and also show as
        // rx_qN_errors.
        s.ierrors = crate::stats::ierrors(&hw, self.options.mac_type);
        s
    }

    /// The hardware counters as DPDK reports them (crate::stats), since `base`.
    pub(super) fn dpdk_values(&self, base: &[u64]) -> Vec<u64> {
        // The driver always strips the CRC (hw_start sets HLREG0.RXCRCSTRP).
        let now = crate::stats::dpdk_view(&self.hw_values(), true);
        let then = if base.is_empty() { vec![0; now.len()] } else { crate::stats::dpdk_view(base, true) };
        now.iter().zip(then).map(|(n, t)| n.wrapping_sub(t)).collect()
    }
}
