//! What the model sees of a driver's shutdown before a reset (docs/hw/ixgbe.md §3.1, §3.2), the firmware side of
//! the SW/FW semaphore (docs/hw/ixgbe.md §5.5), and PAUSE frames the MAC sends (§13).
//!
//! Each CTRL.RST / LNK_RST leaves a [`ResetRecord`]: how many TX queues were flushed (TXDCTL.SWFLSH) since the
//! previous reset, how long after the last queue flush PCIe mastering was turned off (CTRL.GIO_DIS), and whether
//! pending TX was cleared (GCR_EXT.BUFFERS_CLEAR written with HLREG0.LPBK set). Tests compare these with the
//! reference order; the model cannot tell a wait from a slow driver, so it records rather than faults.

use std::time::{Duration, Instant};

use super::regs::*;
use super::{Core, X540State};

/// One reset as the model saw it arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResetRecord {
    /// TX queues (of 128) that got TXDCTL.SWFLSH since the previous reset.
    pub tx_queues_flushed: u32,
    /// Time from the last queue flush (TXDCTL/RXDCTL.SWFLSH) to CTRL.GIO_DIS; `None` if either did not happen.
    pub flush_to_gio_disable: Option<Duration>,
    /// CTRL.GIO_DIS was set before this reset.
    pub gio_disabled: bool,
    /// GCR_EXT.BUFFERS_CLEAR was written with HLREG0.LPBK set since the previous reset (pending TX cleared).
    pub tx_pending_cleared: bool,
}

/// The shutdown steps seen since the last reset.
#[derive(Debug, Default, Clone)]
pub(crate) struct Watch {
    tx_flushed: u128,
    last_flush_at: Option<Instant>,
    gio_dis_at: Option<Instant>,
    tx_pending_cleared: bool,
}

/// PCIe control extended, and its buffers-clear bit.
pub const GCR_EXT: usize = 0x11050;
/// GCR_EXT.BUFFERS_CLEAR bit 30.
pub const GCR_EXT_BUFFERS_CLEAR: u32 = 1 << 30;
/// Manageability control, and its veto bit (management firmware active, docs/hw/ixgbe.md §5.6).
pub const MMNGC: usize = 0x042D0;
/// MMNGC.MNG_VETO bit 0.
pub const MMNGC_MNG_VETO: u32 = 1 << 0;
/// SW_FW_SYNC software bits of PHY0 / PHY1; the firmware's are these shifted left by 5 (docs/hw/ixgbe.md §5.5).
const SW_FW_SYNC_PHY0: u32 = 1 << 1;
const SW_FW_SYNC_PHY1: u32 = 1 << 2;
const SW_FW_SYNC_FW_SHIFT: u32 = 5;
/// A PAUSE frame on the wire, CRC included.
const PAUSE_FRAME_LEN: u64 = 64;

impl Core {
    /// TXDCTL/RXDCTL written with SWFLSH.
    pub(super) fn saw_queue_flush(&mut self, rx: bool, q: usize, now: Instant) {
        if !rx && q < 128 {
            self.watch.tx_flushed |= 1 << q;
        }
        self.watch.last_flush_at = Some(now);
    }

    /// CTRL written without a reset bit.
    pub(super) fn saw_ctrl(&mut self, value: u32, now: Instant) {
        if value & CTRL_GIO_DIS != 0 && self.watch.gio_dis_at.is_none() {
            self.watch.gio_dis_at = Some(now);
        }
    }

    /// GCR_EXT written.
    pub(super) fn saw_gcr_ext(&mut self, value: u32) {
        if value & GCR_EXT_BUFFERS_CLEAR != 0 && self.reg(HLREG0) & HLREG0_LPBK != 0 {
            self.watch.tx_pending_cleared = true;
        }
        self.set_reg(GCR_EXT, value & !GCR_EXT_BUFFERS_CLEAR);
    }

    /// A reset arrives: record what preceded it and start watching afresh.
    pub(super) fn record_reset(&mut self, shared: &X540State) {
        let w = std::mem::take(&mut self.watch);
        let record = ResetRecord {
            tx_queues_flushed: w.tx_flushed.count_ones(),
            flush_to_gio_disable: match (w.last_flush_at, w.gio_dis_at) {
                (Some(f), Some(g)) if g >= f => Some(g - f),
                _ => None,
            },
            gio_disabled: w.gio_dis_at.is_some(),
            tx_pending_cleared: w.tx_pending_cleared,
        };
        shared.resets.lock().unwrap_or_else(|e| e.into_inner()).push(record);
    }

    /// STATUS.GIO: master requests still pending. Clear once GIO_DIS is set, unless the model keeps them pending
    /// (`X540Config::gio_stuck`, which makes the driver reset twice).
    pub(super) fn status_gio(&self, shared: &X540State) -> u32 {
        if self.reg(CTRL) & CTRL_GIO_DIS == 0 || shared.config.gio_stuck {
            STATUS_GIO
        } else {
            0
        }
    }

    /// The firmware's bit of this port's PHY semaphore, while the firmware holds it.
    fn fw_phy_bit(&mut self, shared: &X540State, now: Instant) -> u32 {
        match self.fw_hold_until {
            Some(t) if now < t => {
                let sw = if shared.config.lan_id == 0 { SW_FW_SYNC_PHY0 } else { SW_FW_SYNC_PHY1 };
                sw << SW_FW_SYNC_FW_SHIFT
            }
            Some(_) => {
                self.fw_hold_until = None;
                0
            }
            None => 0,
        }
    }

    /// SW_FW_SYNC as read: the software bits stored, the firmware's while it holds; reading takes REGSMP.
    pub(super) fn read_sw_fw_sync(&mut self, shared: &X540State, now: Instant) -> u32 {
        let v = self.reg(SW_FW_SYNC);
        self.set_reg(SW_FW_SYNC, v | SW_FW_SYNC_REGSMP);
        v | self.fw_phy_bit(shared, now)
    }

    /// SW_FW_SYNC written by software: firmware bits are the firmware's, not stored; a software PHY bit set while
    /// the firmware holds the PHY is counted as a take-over.
    pub(super) fn write_sw_fw_sync(&mut self, shared: &X540State, value: u32, now: Instant) {
        let fw = self.fw_phy_bit(shared, now);
        let newly = value & !self.reg(SW_FW_SYNC);
        if fw != 0 && newly & (fw >> SW_FW_SYNC_FW_SHIFT) != 0 {
            shared.counters().swfw_taken_from_firmware += 1;
        }
        let fw_all = (0x3FF << SW_FW_SYNC_FW_SHIFT) & !SW_FW_SYNC_REGSMP;
        self.set_reg(SW_FW_SYNC, value & !fw_all);
    }

    /// The MAC sends one PAUSE frame (XOFF or XON): counted as DPDK's ixgbe driver expects (docs/hw/ixgbe.md §13).
    pub(super) fn send_pause(&mut self, xoff: bool) {
        self.count(if xoff { LXOFFTXC } else { LXONTXC }, 1);
        self.count(GPTC, 1);
        self.count(MPTC, 1);
        self.count(PTC64, 1);
        self.count(TPT, 1);
        self.count(GOTCL, PAUSE_FRAME_LEN);
    }
}

#[cfg(test)]
mod tests {
    use drvkit::bar::RegisterSpace;

    use super::*;
    use crate::x540::{X540Config, X540};

    #[test]
    fn pause_frames_count_where_the_hardware_counts_them() {
        let (bar, port) = X540::new(X540Config::default());
        port.send_pause(true);
        port.send_pause(true);
        port.send_pause(false);
        assert_eq!(bar.read32(LXOFFTXC), 2);
        assert_eq!(bar.read32(LXONTXC), 1);
        assert_eq!(bar.read32(GPTC), 3);
        assert_eq!(bar.read32(MPTC), 3);
        assert_eq!(bar.read32(PTC64), 3);
        assert_eq!(bar.read32(TPT), 3);
        assert_eq!(bar.read32(GOTCL), 3 * 64);
        assert_eq!(bar.read32(GPTC), 0, "clear on read");
    }

    #[test]
    fn gprc_also_counts_frames_missed_for_a_full_packet_buffer() {
        let (bar, port) = X540::new(X540Config::default());
        bar.write32(rxpbsize(0), 2048);
        let frame = vec![0u8; 1000];
        assert!(port.inject(&frame));
        assert!(port.inject(&frame));
        assert!(!port.inject(&frame), "the third does not fit");
        // Nothing was received into a ring (RX is off): GPRC holds only the missed frame, and so does MPC.
        assert_eq!(bar.read32(GPRC), 1);
        assert_eq!(bar.read32(mpc(0)), 1);
        assert_eq!(bar.read32(GPRC), 0);
    }

    #[test]
    fn the_firmware_holds_the_phy_semaphore_for_its_time_and_take_overs_are_counted() {
        let config = X540Config { fw_phy_semaphore_hold: Duration::from_millis(50), ..Default::default() };
        let (bar, port) = X540::new(config);
        let fw_phy0 = SW_FW_SYNC_PHY0 << SW_FW_SYNC_FW_SHIFT;
        assert_eq!(bar.read32(SW_FW_SYNC) & fw_phy0, fw_phy0);
        // Software takes PHY0 anyway: counted, and the firmware bit is not stored.
        bar.write32(SW_FW_SYNC, fw_phy0 | SW_FW_SYNC_PHY0);
        assert_eq!(port.counters().swfw_taken_from_firmware, 1);
        bar.write32(SW_FW_SYNC, 0);
        let deadline = Instant::now() + Duration::from_secs(5);
        while bar.read32(SW_FW_SYNC) & fw_phy0 != 0 {
            assert!(Instant::now() < deadline, "the firmware never let go");
            std::thread::sleep(Duration::from_millis(5));
        }
        bar.write32(SW_FW_SYNC, SW_FW_SYNC_PHY0);
        assert_eq!(port.counters().swfw_taken_from_firmware, 1, "a free semaphore is not a take-over");
    }

    #[test]
    fn resets_record_the_shutdown_steps_before_them() {
        let (bar, port) = X540::new(X540Config::default());
        for q in 0..128 {
            bar.write32(txdctl(q), QCTL_SWFLSH);
        }
        std::thread::sleep(Duration::from_millis(3));
        bar.write32(CTRL, CTRL_GIO_DIS);
        bar.write32(HLREG0, HLREG0_LPBK);
        bar.write32(GCR_EXT, GCR_EXT_BUFFERS_CLEAR);
        bar.write32(CTRL, CTRL_RST);
        // A bare reset: nothing before it.
        bar.write32(CTRL, CTRL_RST);
        let r = port.resets();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].tx_queues_flushed, 128);
        assert!(r[0].gio_disabled && r[0].tx_pending_cleared);
        assert!(r[0].flush_to_gio_disable.unwrap() >= Duration::from_millis(3));
        assert_eq!(
            r[1],
            ResetRecord {
                tx_queues_flushed: 0,
                flush_to_gio_disable: None,
                gio_disabled: false,
                tx_pending_cleared: false
            }
        );
    }
}
