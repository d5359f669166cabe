//! What the 82599ES (SFP+, X520) does differently from the X540, as docs/hw/ixgbe.md lists it (§3.2 step 4, §3.7
//! step 35, docs/hw/ixgbe.md §5.6, §15), on top of the shared register map and ring model:
//!
//! - Link: no MDIO PHY. The MAC link is trained by writing AUTOC with AN_RESTART (bit 12); the speed follows
//!   AUTOC.LMS (bits 15:13) and the partner. The link needs the SFP+ TX laser on (ESDP.SDP3 clear) and AUTOC2's
//!   LINK_DISABLE bits clear, at both ends of a wire. A laser or LINK_DISABLE change does not retrain by itself.
//!   After CTRL.LNK_RST the link retrains by itself with AUTOC's (reset) mode, as DPDK's ixgbe needs (its port start
//!   resets the link while the laser is off and restarts auto-negotiation only when AUTOC changes: 82599.c
//!   `ixgbe_setup_mac_link_82599`, docs/hw/ixgbe.md §5.6). The model is stricter after a power-up with the laser off:
//!   the link stays down until the driver restarts auto-negotiation.
//! - SFP+ cage (`sfp`, docs/hw/ixgbe.md §18): ESDP.SDP2 reads the module-present pin; I2CCTL reaches the module's ID
//!   EEPROM. With the cage empty ([`X540Config::sfp_module`] false) the link never trains.
//! - Reset: CTRL.RST resets the MAC and keeps the link trained; CTRL.LNK_RST resets the MAC and the link. docs/hw/ixgbe.md §3.2 step 4
//!   has the driver use LNK_RST only while the link is down (resetting the link while it is up can upset
//!   manageability traffic), so LNK_RST with the link up is recorded as a fault. The SDP pins (ESDP) keep their state
//!   across both (an assumption: docs/hw/ixgbe.md says nothing about it).
//! - RX security block: SECRXCTRL.RX_DIS (bit 1) stops the RX security path; SECRXSTAT.SECRX_RDY (bit 0) reads 1
//!   once it is quiet ([`X540Config::secrx_ready_delay`] after RX_DIS was set). While RX_DIS is set, frames wait in
//!   the packet buffer. Setting RXCTRL.RXEN while RX_DIS is clear, or before SECRX_RDY, is the misuse the errata
//!   sequence exists for: a fault.

use std::time::Instant;

use super::regs::*;
use super::{Core, LinkSpeed, X540Config, X540State};
use crate::fault::Fault;

/// 82599 power-up values (the NVM's, as the model assumes them): AUTOC.LMS = 10G serial, AUTOC2 serial PMA/PMD =
/// SFI with the link enabled (an SFP+ part, docs/hw/ixgbe.md §5.6); the laser off if the port starts "powered down".
pub(super) fn default_registers(config: &X540Config, r: &mut [u32]) {
    r[AUTOC / 4] = LMS_10G_SERIAL << AUTOC_LMS_SHIFT;
    r[AUTOC2 / 4] = AUTOC2_10G_SFI << AUTOC2_10G_SERIAL_PMA_PMD_SHIFT;
    r[ESDP / 4] = if config.phy_powered_down { ESDP_SDP3 } else { 0 };
}

/// Link at power-up: trained with the NVM's AUTOC if the laser is on, else down until set up.
pub(super) fn power_up_link(
    config: &X540Config,
    defaults: &[u32],
    now: Instant,
) -> (Option<LinkSpeed>, Option<Instant>) {
    let speed = lms_speed(defaults[AUTOC / 4], config.partner_speed).filter(|_| config.sfp_module);
    let ready = (!config.phy_powered_down && speed.is_some()).then(|| now + config.link_up_delay);
    (speed, ready)
}

/// The speed AUTOC.LMS gives against a partner whose best speed is `partner` (docs/hw/ixgbe.md §5.6 LMS list; `None`: no link).
fn lms_speed(autoc: u32, partner: LinkSpeed) -> Option<LinkSpeed> {
    use LinkSpeed::*;
    match (autoc >> AUTOC_LMS_SHIFT) & AUTOC_LMS_MASK {
        LMS_1G_NO_AN | LMS_1G_AN => (partner >= G1).then_some(G1),
        LMS_10G_NO_AN | LMS_10G_SERIAL => (partner == G10).then_some(G10),
        LMS_KX4_KX_KR | LMS_KX4_KX_KR_1G_AN => (partner >= G1).then_some(partner),
        LMS_SGMII_1G_100M => Some(partner.min(G1)),
        _ => Some(partner), // LMS_KX4_KX_KR_SGMII: everything
    }
}

impl Core {
    /// Laser on (ESDP.SDP3 clear) and AUTOC2.LINK_DISABLE clear.
    pub(super) fn laser_and_link_enabled(&self) -> bool {
        self.reg(ESDP) & ESDP_SDP3 == 0 && self.reg(AUTOC2) & AUTOC2_LINK_DISABLE_MASK == 0
    }

    /// AUTOC.AN_RESTART: the link retrains with the mode in AUTOC.LMS.
    pub(super) fn restart_an_82599(&mut self, config: &X540Config) {
        // No module in the cage: nothing to train against.
        self.link.speed = lms_speed(self.reg(AUTOC), config.partner_speed).filter(|_| config.sfp_module);
        self.link.ready_at = self.link.speed.map(|_| Instant::now() + config.link_up_delay);
    }

    /// 82599 with SECRXCTRL.RX_DIS set: the RX path is stopped at the security block.
    pub(super) fn rx_held_by_security_block(&self, shared: &X540State) -> bool {
        shared.config.chip == super::Chip::X82599 && self.reg(SECRXCTRL) & SECRXCTRL_RX_DIS != 0
    }

    fn secrx_ready(&self, shared: &X540State, now: Instant) -> bool {
        self.secrx_dis_at.is_some_and(|t| now >= t + shared.config.secrx_ready_delay)
    }

    /// 82599-specific reads; `None` for what reads as on the X540.
    pub(super) fn read_82599(&mut self, shared: &X540State, offset: usize, now: Instant) -> Option<u32> {
        Some(match offset {
            CTRL if self.in_reset(now) => self.reg(CTRL) | self.reset_bits,
            SECRXSTAT => {
                if self.secrx_ready(shared, now) {
                    SECRXSTAT_SECRX_RDY
                } else {
                    0
                }
            }
            ANLP1 => u32::from(self.link.ready_at.is_some()) << ANLP1_AN_STATE_SHIFT,
            // SDP2 is the cage's module-present input: it reads the cage, whatever was written.
            ESDP => (self.reg(ESDP) & !ESDP_SDP2) | if self.sfp_eeprom.is_some() { ESDP_SDP2 } else { 0 },
            I2CCTL => self.i2c.read(),
            _ => return None,
        })
    }

    /// 82599-specific writes; false for what behaves as on the X540 (the caller then handles it).
    pub(super) fn write_82599(&mut self, shared: &X540State, offset: usize, value: u32, now: Instant) -> bool {
        match offset {
            CTRL if value & (CTRL_RST | CTRL_LNK_RST) != 0 => {
                let link_reset = value & CTRL_LNK_RST != 0;
                if link_reset && self.link_up(shared, now) {
                    shared.io.faults.record(Fault::Protocol {
                        what: "CTRL.LNK_RST with the link up: the 82599 uses LNK_RST only while the link is down and \
                               CTRL.RST while it is up (docs/hw/ixgbe.md §3.2 step 4)"
                            .into(),
                    });
                }
                let esdp = self.reg(ESDP);
                self.record_reset(shared);
                self.reset(shared);
                self.reset_bits = value & (CTRL_RST | CTRL_LNK_RST);
                self.set_reg(ESDP, esdp);
                self.link.last_up = self.link_up(shared, now);
                if link_reset {
                    // The link goes down now and trains again with AUTOC as the reset left it.
                    self.restart_an_82599(&shared.config);
                    self.update_time(shared);
                }
                self.set_reg(CTRL, value & !(CTRL_RST | CTRL_LNK_RST | CTRL_GIO_DIS));
            }
            ESDP | AUTOC2 => {
                if offset == ESDP && shared.config.mng_veto && value & ESDP_SDP3 != 0 && self.reg(ESDP) & ESDP_SDP3 == 0
                {
                    shared.io.faults.record(Fault::Protocol {
                        what: "ESDP.SDP3 set (SFP+ laser off) while MMNGC.MNG_VETO is set: management firmware loses \
                               its link (docs/hw/ixgbe.md §5.6)"
                            .into(),
                    });
                }
                self.set_reg(offset, value);
                self.update_time(shared);
            }
            AUTOC => {
                self.set_reg(AUTOC, value & !AUTOC_AN_RESTART);
                if value & AUTOC_AN_RESTART != 0 {
                    self.restart_an_82599(&shared.config);
                }
                self.update_time(shared);
            }
            SECRXCTRL => {
                let dis = value & SECRXCTRL_RX_DIS != 0;
                if !dis {
                    self.secrx_dis_at = None;
                } else if self.secrx_dis_at.is_none() {
                    self.secrx_dis_at = Some(now);
                }
                self.set_reg(SECRXCTRL, value);
            }
            SECRXSTAT | ANLP1 => {} // read-only
            I2CCTL => self.i2c.write(value, self.sfp_eeprom.as_deref()),
            EEC => {
                if let Err(what) = self.ee_spi.write(self.reg(EEC), value, &self.nvm) {
                    shared.io.faults.record(Fault::Protocol { what });
                }
                // GNT and DO are the hardware's, ARD the auto-read's (read back in `Core::read`).
                self.set_reg(EEC, value & !(EEC_GNT | EEC_DO | EEC_ARD));
            }
            MSCA => {
                // No MDIO PHY on an SFP+ 82599: the cycle completes and reads all ones.
                if value & MSCA_MDI_COMMAND != 0 {
                    let w = (self.reg(MSRWD) & 0xFFFF) | 0xFFFF << 16;
                    self.set_reg(MSRWD, w);
                }
                self.set_reg(MSCA, value & !MSCA_MDI_COMMAND);
            }
            RXCTRL => {
                if value & RXCTRL_RXEN != 0 && self.reg(RXCTRL) & RXCTRL_RXEN == 0 {
                    let why = if self.reg(SECRXCTRL) & SECRXCTRL_RX_DIS == 0 {
                        Some("while SECRXCTRL.RX_DIS is clear")
                    } else if !self.secrx_ready(shared, now) {
                        Some("before SECRXSTAT.SECRX_RDY reported the security block quiet")
                    } else {
                        None
                    };
                    if let Some(why) = why {
                        shared.io.faults.record(Fault::Protocol {
                            what: format!(
                                "RXCTRL.RXEN set {why}: the 82599 errata sequence is RX_DIS = 1, poll SECRX_RDY, set \
                                 RXEN, clear RX_DIS (docs/hw/ixgbe.md §3.7 step 35)"
                            ),
                        });
                    }
                }
                return false; // stored (and checked for CRC strip) as on the X540
            }
            _ => return false,
        }
        true
    }
}
