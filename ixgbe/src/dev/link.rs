//! The SW/FW semaphores, MDIO and the PHY (docs/hw/ixgbe.md §5.2 to §5.5), and the 82599's MAC link (§3.8, §5.6).

use super::*;

impl<R: RegisterSpace> Ixgbe<R> {
    pub(super) fn phy_semaphore(&self) -> u32 {
        if status::LAN_ID.get(self.regs.read(STATUS)) == 0 {
            sw_fw_sync::PHY0
        } else {
            sw_fw_sync::PHY1
        }
    }

    /// Takes SW/FW resource `mask` (docs/hw/ixgbe.md §5.5): up to 200 tries 5 ms apart, as the reference. Firmware
    /// that still holds it after that is taken to be hung and the resource is taken anyway (the reference does the
    /// same); another software owner is not overridden. False if it could not be had.
    pub(super) fn swfw_acquire(&self, mask: u32) -> bool {
        let fw = mask << sw_fw_sync::FW_SHIFT;
        for _ in 0..SWFW_TRIES {
            let Some(v) = self.swfw_helpers() else { return false };
            let free = v & (mask | fw) == 0;
            if free {
                self.regs.write(SW_FW_SYNC, (v | mask) & !sw_fw_sync::REGSMP);
            } else {
                self.regs.clear_bits(SW_FW_SYNC, sw_fw_sync::REGSMP);
            }
            self.regs.clear_bits(SWSM, swsm::SMBI);
            if free {
                return true;
            }
            std::thread::sleep(SWFW_RETRY);
        }
        let Some(v) = self.swfw_helpers() else { return false };
        let forced = v & mask == 0 && v & fw != 0;
        if forced {
            self.regs.write(SW_FW_SYNC, (v | mask) & !sw_fw_sync::REGSMP);
        } else {
            self.regs.clear_bits(SW_FW_SYNC, sw_fw_sync::REGSMP);
        }
        self.regs.clear_bits(SWSM, swsm::SMBI);
        if forced {
            std::thread::sleep(SWFW_RETRY);
        }
        forced
    }

    /// Takes the two helper semaphores (SWSM.SMBI, then SW_FW_SYNC.REGSMP) and returns SW_FW_SYNC as it reads with
    /// them held; `None` (and nothing held) if either stays busy past the budget.
    pub(super) fn swfw_helpers(&self) -> Option<u32> {
        let t = &self.options.timing;
        self.regs.poll(SWSM, swsm::SMBI, 0, t.semaphore).ok()?;
        if self.regs.poll(SW_FW_SYNC, sw_fw_sync::REGSMP, 0, t.semaphore).is_err() {
            self.regs.clear_bits(SWSM, swsm::SMBI);
            return None;
        }
        Some(self.regs.read(SW_FW_SYNC))
    }

    pub(super) fn swfw_release(&self, mask: u32) {
        let t = &self.options.timing;
        let _ = self.regs.poll(SWSM, swsm::SMBI, 0, t.semaphore);
        let _ = self.regs.poll(SW_FW_SYNC, sw_fw_sync::REGSMP, 0, t.semaphore);
        self.regs.clear_bits(SW_FW_SYNC, mask | sw_fw_sync::REGSMP);
        self.regs.clear_bits(SWSM, swsm::SMBI);
    }

    pub(super) fn mdio_cycle(&self, phy: u32, mmd: u32, reg: u32, op: u32) -> std::result::Result<(), PollTimeout> {
        let cmd = msca::NP_ADDR.val(reg)
            | msca::DEV_TYPE.val(mmd)
            | msca::PHY_ADDR.val(phy)
            | msca::OP_CODE.val(op)
            | msca::ST_CODE.val(0)
            | msca::MDI_COMMAND;
        self.regs.write(MSCA, cmd);
        self.regs.poll(MSCA, msca::MDI_COMMAND, 0, self.options.timing.mdio).map(|_| ())
    }

    pub(super) fn phy_read(&self, phy: u32, mmd: u32, reg: u32) -> std::result::Result<u16, PollTimeout> {
        self.mdio_cycle(phy, mmd, reg, msca::OP_ADDR)?;
        self.mdio_cycle(phy, mmd, reg, msca::OP_READ)?;
        Ok(msrwd::READ_DATA.get(self.regs.read(MSRWD)) as u16)
    }

    pub(super) fn phy_write(&self, phy: u32, mmd: u32, reg: u32, value: u16) -> std::result::Result<(), PollTimeout> {
        self.regs.write(MSRWD, msrwd::WRITE_DATA.val(value as u32));
        self.mdio_cycle(phy, mmd, reg, msca::OP_ADDR)?;
        self.mdio_cycle(phy, mmd, reg, msca::OP_WRITE)
    }

    pub(super) fn phy_rmw(
        &self,
        phy: u32,
        mmd: u32,
        reg: u32,
        clear: u16,
        set: u16,
    ) -> std::result::Result<(), PollTimeout> {
        let v = self.phy_read(phy, mmd, reg)?;
        self.phy_write(phy, mmd, reg, (v & !clear) | set)
    }

    /// Powers the X540 PHY up (or down) and, when up, advertises 100M/1G/10G and restarts auto-negotiation
    /// (docs/hw/ixgbe.md §5.2, §5.3). Under the PHY semaphore.
    pub(super) fn setup_phy(&mut self, up: bool) -> std::result::Result<(), String> {
        let sem = self.phy_semaphore();
        if !self.swfw_acquire(sem) {
            return Err("PHY semaphore busy (firmware holds it?)".into());
        }
        let r = self.setup_phy_locked(up);
        self.swfw_release(sem);
        r
    }

    pub(super) fn setup_phy_locked(&mut self, up: bool) -> std::result::Result<(), String> {
        let mdio_err = |e: PollTimeout| format!("MDIO did not answer (MSCA={:#010x})", e.last);
        let phy = match self.phy_addr {
            Some(p) => p,
            None => {
                let mut found = None;
                for addr in 0..phy::MAX_PHY_ADDR {
                    let id = self.phy_read(addr, phy::MMD_PMA_PMD, phy::PHY_ID_HIGH).map_err(mdio_err)?;
                    if id != 0 && id != u16::MAX {
                        found = Some(addr);
                        break;
                    }
                }
                let p = found.ok_or("no PHY answered on MDIO addresses 0..31")?;
                self.phy_addr = Some(p);
                p
            }
        };
        let (lp_clear, lp_set) = if up { (phy::VEND1_LOW_POWER as u16, 0) } else { (0, phy::VEND1_LOW_POWER as u16) };
        self.phy_rmw(phy, phy::MMD_VEND1, phy::VEND1_CTRL, lp_clear, lp_set).map_err(mdio_err)?;
        if up {
            let adv = [
                (phy::AN_ADV_10G, phy::AN_ADV_10G_BIT),
                (phy::AN_VENDOR_PROV1, phy::AN_ADV_1G_FD),
                (phy::AN_ADV_100M, phy::AN_ADV_100M_FD),
            ];
            for (reg, b) in adv {
                self.phy_rmw(phy, phy::MMD_AN, reg, 0, b as u16).map_err(mdio_err)?;
            }
            self.phy_rmw(phy, phy::MMD_AN, phy::AN_CTRL, 0, phy::AN_RESTART as u16).map_err(mdio_err)?;
        }
        Ok(())
    }

    /// The 82599's MAC link (docs/hw/ixgbe.md §3.8 and §5.6). Up: an SFP+ port turns its TX laser on (ESDP.SDP3 clear) and
    /// waits, selects 10G serial (AUTOC.LMS) with the SFI PMA/PMD (AUTOC2); every port clears AUTOC2's link-disable
    /// bits and restarts auto-negotiation (AUTOC.AN_RESTART). Down: an SFP+ port turns its laser off, others set
    /// AUTOC2's link-disable bits.
    pub(super) fn setup_link_82599(&self, up: bool) {
        let sfp = self.options.media == Media::Sfp;
        if !up {
            if sfp {
                // Management firmware sharing the port vetoes it: turning the laser off would cut its traffic
                // (docs/hw/ixgbe.md §5.6).
                if self.regs.read(MMNGC) & mmngc::MNG_VETO == 0 {
                    self.regs.set_bits(ESDP, esdp::SDP3);
                }
            } else {
                self.regs.set_bits(AUTOC2, autoc2::LINK_DISABLE_MASK);
            }
            let _ = self.regs.read(STATUS); // flush
            return;
        }
        if sfp && self.regs.read(ESDP) & esdp::SDP3 != 0 {
            self.regs.clear_bits(ESDP, esdp::SDP3);
            let _ = self.regs.read(STATUS); // flush
            std::thread::sleep(self.options.timing.laser_on);
        }
        let mut a2 = self.regs.read(AUTOC2) & !autoc2::LINK_DISABLE_MASK;
        let mut a = self.regs.read(AUTOC);
        if sfp {
            a2 = autoc2::PMA_PMD_10G_SERIAL.set(a2, autoc2::PMA_PMD_10G_SERIAL_SFI);
            a = autoc::LMS.set(a, autoc::LMS_10G_SERIAL);
        }
        self.regs.write(AUTOC2, a2);
        self.regs.write(AUTOC, a | autoc::AN_RESTART);
    }
}
