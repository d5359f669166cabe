//! The X540's internal copper PHY as seen through MDIO (MSCA/MSRWD, fact sheet §5.3-§5.4): enough registers for a
//! driver to probe the PHY address, read its ID, power it up, program the advertisement and restart
//! auto-negotiation. Link timing lives in the port model; this module only keeps register state.

use std::collections::HashMap;

use super::LinkSpeed;

/// MMD numbers (§5.3).
pub const MMD_PMA_PMD: u8 = 0x01;
/// Auto-negotiation MMD.
pub const MMD_AN: u8 = 0x07;
/// Vendor-specific 1 MMD.
pub const MMD_VEND1: u8 = 0x1E;

/// PHY ID of the X540's PHY: reg 2 = high half, reg 3 = low half (§5.3).
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
    pub fn command(&mut self, msca: u32, wdata: u16, status: (bool, Option<LinkSpeed>)) -> (Option<u16>, PhyEvent) {
        let reg = msca as u16;
        let dev = ((msca >> 16) & 0x1F) as u8;
        let phy_addr = ((msca >> 21) & 0x1F) as u8;
        let op = (msca >> 26) & 0x3;
        let st = (msca >> 28) & 0x3;
        if st != 0 || phy_addr != self.addr {
            // Clause 22 or nobody at that address: reads float high.
            return (matches!(op, 2 | 3).then_some(0xFFFF), PhyEvent::None);
        }
        match op {
            0 => {
                self.latched.insert(dev, reg);
                (None, PhyEvent::None)
            }
            1 => {
                let at = self.latched.get(&dev).copied().unwrap_or(0);
                (None, self.write(dev, at, wdata))
            }
            _ => {
                let at = self.latched.get(&dev).copied().unwrap_or(0);
                let value = self.read(dev, at, status);
                if op == 2 {
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
