//! The X540's internal copper PHY as seen through MDIO (MSCA/MSRWD, docs/hw/ixgbe.md §5.3-§5.4): enough registers for a
//! driver to probe the PHY address, read its ID, power it up, program the advertisement and restart
//! auto-negotiation. Link timing lives in the port model; this module only keeps register state.

use std::collections::HashMap;

use super::LinkSpeed;

/// MMD numbers (docs/hw/ixgbe.md §5.3).
pub const MMD_PMA_PMD: u8 = 0x01;
/// Auto-negotiation MMD.
pub const MMD_AN: u8 = 0x07;
/// Vendor-specific 1 MMD.
pub const MMD_VEND1: u8 = 0x1E;

/// PHY ID of the X540's PHY: reg 2 = high half, reg 3 = low half (docs/hw/ixgbe.md §5.3).
pub const PHY_ID: u32 = 0x0154_0200;

/// AN control (MMD 7 reg 0): bit 9 restart AN, bit 12 AN enable.
pub const AN_CTRL: u16 = 0x0000;
/// AN restart bit.
pub const AN_RESTART: u16 = 1 << 9;
/// AN status (MMD 7 reg 1): bit 2 link, bit 5 AN complete.
pub const AN_STATUS: u16 = 0x0001;
/// 100M advertisement (MMD 7 reg 0x10), bit 8 100 FD.
pub const AN_ADV_100M: u16 = 0x0010;
/// 10G advertisement (MMD 7 reg 0x20), bit 12.
pub const AN_ADV_10G: u16 = 0x0020;
/// Vendor provisioning 1 (MMD 7 reg 0xC400), bit 15 1000BASE-T FD.
pub const AN_ADV_1G: u16 = 0xC400;
/// Vendor status (MMD 7 reg 0xC800), bits 2:0.
pub const AN_VEND_STATUS: u16 = 0xC800;
/// Vendor 1 control (MMD 0x1E reg 0): bit 11 low power.
pub const VEND1_CTRL: u16 = 0x0000;
/// Low-power bit.
pub const VEND1_LOW_POWER: u16 = 1 << 11;
/// Vendor 1 status (MMD 0x1E reg 1): bit 3 link, bit 4 speed (0 = 10G, 1 = 1G).
pub const VEND1_STATUS: u16 = 0x0001;

bitfield::bitfield! {
    /// MSCA, the MDIO command register, as the PHY decodes it (docs/hw/ixgbe.md §5.4).
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub struct Msca(pub u32);
    impl Debug;
    /// NP_ADDR: the Clause 45 register address (latched by an address cycle).
    pub u16, np_addr, set_np_addr: 15, 0;
    /// DEV_TYPE: the MMD.
    pub u8, dev_type, set_dev_type: 20, 16;
    /// PHY_ADDR: the MDIO address.
    pub u8, phy_addr, set_phy_addr: 25, 21;
    /// OP_CODE: 0 address cycle, 1 write, 2 read-increment, 3 read.
    pub u8, op_code, set_op_code: 27, 26;
    /// ST_CODE: 0 Clause 45, 1 Clause 22.
    pub u8, st_code, set_st_code: 29, 28;
    /// MDI_COMMAND: start; cleared by hardware when done.
    pub mdi_command, set_mdi_command: 30;
}

/// MSCA.OP_CODE values.
pub mod op {
    /// Latch the register address.
    pub const ADDRESS: u8 = 0;
    /// Write MSRWD's low half to the latched register.
    pub const WRITE: u8 = 1;
    /// Read, then advance the latched address.
    pub const READ_INCREMENT: u8 = 2;
    /// Read the latched register.
    pub const READ: u8 = 3;
}

/// What a PHY register write asks of the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhyEvent {
    /// Nothing for the link.
    None,
    /// Auto-negotiation restarted (or the PHY was powered up): the link drops and renegotiates.
    Renegotiate,
    /// The PHY entered low-power mode: link down until powered up.
    PowerDown,
}

/// Register state of the PHY.
#[derive(Debug, Clone)]
pub struct Phy {
    /// MDIO address the PHY answers on.
    pub addr: u8,
    regs: HashMap<(u8, u16), u16>,
    /// Clause 45 address latched per MMD by the last address cycle.
    latched: HashMap<u8, u16>,
}

impl Phy {
    /// A PHY at `addr`, in low-power mode if `powered_down`.
    pub fn new(addr: u8, powered_down: bool) -> Self {
        let mut regs = HashMap::new();
        regs.insert((MMD_PMA_PMD, 0x0002), (PHY_ID >> 16) as u16);
        regs.insert((MMD_PMA_PMD, 0x0003), PHY_ID as u16);
        regs.insert((MMD_PMA_PMD, 0x0004), 1 | (1 << 4) | (1 << 5));
        regs.insert((MMD_PMA_PMD, 0x000B), (1 << 2) | (1 << 5) | (1 << 7));
        regs.insert((MMD_AN, AN_CTRL), 1 << 12);
        regs.insert((MMD_AN, AN_ADV_100M), 1 << 8);
        regs.insert((MMD_AN, AN_ADV_10G), 1 << 12);
        regs.insert((MMD_AN, AN_ADV_1G), 1 << 15);
        regs.insert((MMD_VEND1, VEND1_CTRL), if powered_down { VEND1_LOW_POWER } else { 0 });
        Phy { addr, regs, latched: HashMap::new() }
    }

    /// True unless in low-power mode.
    pub fn powered(&self) -> bool {
        self.get(MMD_VEND1, VEND1_CTRL) & VEND1_LOW_POWER == 0
    }

    fn get(&self, dev: u8, reg: u16) -> u16 {
        self.regs.get(&(dev, reg)).copied().unwrap_or(0)
    }

    /// The best speed both our advertisement and a partner capable of `partner` support.
    pub fn resolve(&self, partner: LinkSpeed) -> Option<LinkSpeed> {
        let adv10 = self.get(MMD_AN, AN_ADV_10G) & (1 << 12) != 0;
        let adv1 = self.get(MMD_AN, AN_ADV_1G) & (1 << 15) != 0;
        let adv100 = self.get(MMD_AN, AN_ADV_100M) & (1 << 8) != 0;
        if adv10 && partner >= LinkSpeed::G10 {
            Some(LinkSpeed::G10)
        } else if adv1 && partner >= LinkSpeed::G1 {
            Some(LinkSpeed::G1)
        } else if adv100 {
            Some(LinkSpeed::M100)
        } else {
            None
        }
    }

    /// One MSCA command (already known to carry MDI_COMMAND). Returns the read data (if a read) and an event.
    /// `status` supplies the live link state for status registers: (link up, speed).
    pub fn command(&mut self, msca: Msca, wdata: u16, status: (bool, Option<LinkSpeed>)) -> (Option<u16>, PhyEvent) {
        let dev = msca.dev_type();
        let op = msca.op_code();
        if msca.st_code() != 0 || msca.phy_addr() != self.addr {
            // Clause 22 or nobody at that address: reads float high.
            return (matches!(op, op::READ_INCREMENT | op::READ).then_some(0xFFFF), PhyEvent::None);
        }
        match op {
            op::ADDRESS => {
                self.latched.insert(dev, msca.np_addr());
                (None, PhyEvent::None)
            }
            op::WRITE => {
                let at = self.latched.get(&dev).copied().unwrap_or(0);
                (None, self.write(dev, at, wdata))
            }
            _ => {
                let at = self.latched.get(&dev).copied().unwrap_or(0);
                let value = self.read(dev, at, status);
                if op == op::READ_INCREMENT {
                    self.latched.insert(dev, at.wrapping_add(1));
                }
                (Some(value), PhyEvent::None)
            }
        }
    }

    fn read(&self, dev: u8, reg: u16, (up, speed): (bool, Option<LinkSpeed>)) -> u16 {
        match (dev, reg) {
            (MMD_AN, AN_STATUS) => {
                if up {
                    (1 << 2) | (1 << 5)
                } else {
                    0
                }
            }
            (MMD_AN, AN_VEND_STATUS) => match (up, speed) {
                (true, Some(LinkSpeed::G10)) => 0b111,
                (true, Some(LinkSpeed::G1)) => 0b101,
                (true, Some(LinkSpeed::M100)) => 0b011,
                _ => 0,
            },
            (MMD_VEND1, VEND1_STATUS) => {
                let link = if up { 1 << 3 } else { 0 };
                let one_g = if speed == Some(LinkSpeed::G1) { 1 << 4 } else { 0 };
                link | one_g
            }
            _ => self.get(dev, reg),
        }
    }

    fn write(&mut self, dev: u8, reg: u16, value: u16) -> PhyEvent {
        match (dev, reg) {
            (MMD_AN, AN_CTRL) => {
                self.regs.insert((dev, reg), value & !AN_RESTART);
                if value & AN_RESTART != 0 {
                    PhyEvent::Renegotiate
                } else {
                    PhyEvent::None
                }
            }
            (MMD_VEND1, VEND1_CTRL) => {
                let was = self.powered();
                self.regs.insert((dev, reg), value);
                match (was, self.powered()) {
                    (true, false) => PhyEvent::PowerDown,
                    (false, true) => PhyEvent::Renegotiate,
                    _ => PhyEvent::None,
                }
            }
            (MMD_PMA_PMD, 0x0002..=0x0004) | (MMD_PMA_PMD, 0x000B) => PhyEvent::None, // read-only
            _ => {
                self.regs.insert((dev, reg), value);
                PhyEvent::None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msca(phy: u8, dev: u8, op: u8, addr: u16) -> Msca {
        let mut m = Msca(0);
        m.set_phy_addr(phy);
        m.set_dev_type(dev);
        m.set_op_code(op);
        m.set_np_addr(addr);
        m.set_mdi_command(true);
        m
    }

    #[test]
    fn msca_fields_sit_where_the_fact_sheet_puts_them() {
        let m = msca(3, MMD_AN, op::READ, 0xC800);
        assert_eq!(m.0, 0xC800 | 7 << 16 | 3 << 21 | 3 << 26 | 1 << 30);
        let back = Msca(0x4000_0000 | 1 << 28 | 0x1F << 21 | 0x1E << 16 | 0x1234);
        assert_eq!((back.st_code(), back.phy_addr(), back.dev_type(), back.np_addr()), (1, 0x1F, 0x1E, 0x1234));
        assert!(back.mdi_command());
    }

    #[test]
    fn clause45_address_then_read_increment_walks_the_phy_id() {
        let mut phy = Phy::new(2, false);
        let down = (false, None);
        assert_eq!(phy.command(msca(2, MMD_PMA_PMD, op::ADDRESS, 2), 0, down), (None, PhyEvent::None));
        let hi = phy.command(msca(2, MMD_PMA_PMD, op::READ_INCREMENT, 0), 0, down).0;
        let lo = phy.command(msca(2, MMD_PMA_PMD, op::READ, 0), 0, down).0;
        assert_eq!((hi, lo), (Some((PHY_ID >> 16) as u16), Some(PHY_ID as u16)));
        assert_eq!(phy.command(msca(5, MMD_PMA_PMD, op::READ, 0), 0, down).0, Some(0xFFFF), "nobody at address 5");
    }
}
