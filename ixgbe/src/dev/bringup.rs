//! Reset and initialisation up to the start of traffic (docs/hw/ixgbe.md §3.1 to §3.4): quiesce, global reset
//! (twice if PCIe mastering does not stop), settle, identity and bookkeeping, then the link.

use super::*;

impl<R: RegisterSpace> Ixgbe<R> {
    pub(super) fn mask_interrupts(&self) {
        self.regs.write(EIMC, EIMC_ALL);
        self.regs.write(eimc_ex(0), EIMC_ALL);
        self.regs.write(eimc_ex(1), EIMC_ALL);
        let _ = self.regs.read(EICR);
    }

    /// Step 3: turns PCIe mastering off and waits for outstanding requests to end. False if they did not within
    /// `budget` (the reset must then be done twice).
    pub(super) fn disable_pcie_master(&self, budget: Duration) -> bool {
        self.regs.write(CTRL, ctrl::GIO_DIS);
        // The bit must read back set before STATUS.GIO means anything.
        let _ = self.regs.poll(CTRL, ctrl::GIO_DIS, ctrl::GIO_DIS, budget);
        self.regs.poll(STATUS, status::GIO, 0, budget).is_ok()
    }

    /// Step 3a, before a double reset: with MAC loopback on (so nothing reaches the wire if the link comes up), give
    /// the last completions time, then have the PCIe transaction layer drop what it still holds (GCR_EXT
    /// BUFFERS_CLEAR), and put both registers back. The reference also polls the PCIe device status word for its
    /// transaction-pending bit; that is in config space, which this driver does not keep mapped, so it waits
    /// instead.
    pub(super) fn clear_tx_pending(&self) {
        let hl = self.regs.read(HLREG0);
        self.regs.write(HLREG0, hl | hlreg0::LPBK);
        let _ = self.regs.read(STATUS);
        std::thread::sleep(TX_PENDING_WAIT);
        let gcr = self.regs.read(GCR_EXT);
        self.regs.write(GCR_EXT, gcr | gcr_ext::BUFFERS_CLEAR);
        let _ = self.regs.read(STATUS);
        std::thread::sleep(Duration::from_micros(20));
        self.regs.write(GCR_EXT, gcr);
        self.regs.write(HLREG0, hl);
    }

    /// Reset and initialisation up to (not including) the start of traffic.
    pub(super) fn reset_and_init(&mut self) -> Result<()> {
        let t = self.options.timing.clone();
        // Counters clear on reset: keep what they hold.
        self.accumulate();

        // 3.1 quiesce (docs/hw/ixgbe.md §3.1).
        self.mask_interrupts();
        self.regs.clear_bits(RXCTRL, rxctrl::RXEN);
        // Every TX queue the hardware has, not only the ones this driver hands out.
        for q in 0..HW_TX_QUEUES {
            self.regs.write(txdctl(q), txdctl::SWFLSH);
        }
        for q in 0..MAX_RX_QUEUES {
            let v = self.regs.read(rxdctl(q));
            if v & rxdctl::ENABLE != 0 {
                self.regs.write(rxdctl(q), (v & !rxdctl::ENABLE) | rxdctl::SWFLSH);
            }
        }
        // Step 2: let the flushes finish before PCIe mastering is turned off.
        let _ = self.regs.read(STATUS);
        std::thread::sleep(QUEUE_FLUSH_WAIT);
        let double_reset = !self.disable_pcie_master(t.gio_disable);
        if double_reset {
            self.clear_tx_pending();
        }

        // 3.2 global reset (twice if PCIe mastering did not stop).
        for _ in 0..(1 + double_reset as usize) {
            match self.options.mac_type {
                MacType::X540 => {
                    let sem = self.phy_semaphore();
                    let held = self.swfw_acquire(sem);
                    self.regs.set_bits(CTRL, ctrl::RST);
                    let _ = self.regs.read(STATUS); // flush
                    if held {
                        self.swfw_release(sem);
                    }
                }
                MacType::X82599 => {
                    // Step 4: LNK_RST while the link is down, RST while it is up (a link reset with the link up
                    // may disturb manageability).
                    let bit = if self.read_link().up { ctrl::RST } else { ctrl::LNK_RST };
                    self.regs.set_bits(CTRL, bit);
                    let _ = self.regs.read(STATUS); // flush
                }
            }
            self.regs
                .poll(CTRL, ctrl::RST_MASK, 0, t.reset_done)
                .map_err(|e| self.timeout("device reset (CTRL.RST/LNK_RST)", "CTRL", e, t.reset_done))?;
            std::thread::sleep(t.reset_settle);
        }
        self.mask_interrupts();
        if self.options.mac_type == MacType::X540 {
            self.regs.write(rxpbsize(0), X540_RXPBSIZE_384K);
        }

        // 3.3 settle.
        self.regs
            .poll(EEC, eec::ARD, eec::ARD, t.eeprom)
            .map_err(|e| self.timeout("EEPROM auto-read (EEC.ARD)", "EEC", e, t.eeprom))?;
        self.regs
            .poll(RDRXCTL, rdrxctl::DMAIDONE, rdrxctl::DMAIDONE, t.dma_init)
            .map_err(|e| self.timeout("DMA initialisation (RDRXCTL.DMAIDONE)", "RDRXCTL", e, t.dma_init))?;

        // 3.4 identity and bookkeeping.
        let ral0 = self.regs.read(ral(0));
        let rah0 = self.regs.read(rah(0));
        let lo = ral0.to_le_bytes();
        let hi = (rah::ADDR_HI.get(rah0) as u16).to_le_bytes();
        let mac = MacAddr([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]]);
        if rah0 & rah::AV == 0 || mac == MacAddr::ZERO || mac.is_multicast() {
            return Err(DevError::NoPermanentMac { ral: ral0, rah: rah0 }.at(&self.options.name));
        }
        self.perm_mac = mac;
        for i in 1..RAR_ENTRIES {
            self.regs.write(ral(i), 0);
            self.regs.write(rah(i), 0);
        }
        self.regs.write(mpsar_lo(0), 0);
        self.regs.write(mpsar_hi(0), 0);
        self.regs.write(MCSTCTRL, 0);
        for i in 0..MTA_WORDS {
            self.regs.write(mta(i), 0);
        }
        for i in 0..VFTA_WORDS {
            self.regs.write(vfta(i), 0);
        }
        // Step 13: read-clear the counters (the reset zeroed them; anything counted since is kept).
        self.accumulate();
        self.regs.set_bits(CTRL_EXT, ctrl_ext::NS_DIS | ctrl_ext::DRV_LOAD | ctrl_ext::PFRSTD);
        // Step 17: no flow control.
        self.regs.clear_bits(MFLCN, mflcn::RFCE | mflcn::RPFCE);
        self.regs.clear_bits(FCCFG, fccfg::TFCE_802_3X | fccfg::TFCE_PRIORITY);

        // 3.8 link: X540 powers its PHY up and restarts auto-negotiation; the 82599 sets up its MAC link.
        match self.options.mac_type {
            MacType::X540 => self.phy_note = self.setup_phy(true).err(),
            MacType::X82599 => self.setup_link_82599(true),
        }
        self.fresh = true;
        Ok(())
    }
}
