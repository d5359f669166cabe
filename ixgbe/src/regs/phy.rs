//! X540 PHY (MMD, register) pairs and bits (docs/hw/ixgbe.md §5.3: clause 45, through MSCA/MSRWD).

use super::bit;

/// PMA/PMD MMD.
pub const MMD_PMA_PMD: u32 = 0x01;
/// Auto-negotiation MMD.
pub const MMD_AN: u32 = 0x07;
/// Vendor-specific 1 MMD.
pub const MMD_VEND1: u32 = 0x1E;
/// PHY ID high (PMA/PMD).
pub const PHY_ID_HIGH: u32 = 0x0002;
/// AN control register.
pub const AN_CTRL: u32 = 0x0000;
/// AN control: restart auto-negotiation.
pub const AN_RESTART: u32 = bit(9);
/// 100M advertisement register.
pub const AN_ADV_100M: u32 = 0x0010;
/// 100M full-duplex advertisement bit.
pub const AN_ADV_100M_FD: u32 = bit(8);
/// 10GBASE-T advertisement register.
pub const AN_ADV_10G: u32 = 0x0020;
/// 10GBASE-T advertisement bit.
pub const AN_ADV_10G_BIT: u32 = bit(12);
/// Vendor provisioning 1 (1G advertisement).
pub const AN_VENDOR_PROV1: u32 = 0xC400;
/// 1000BASE-T full-duplex advertisement bit.
pub const AN_ADV_1G_FD: u32 = bit(15);
/// Vendor-1 control register.
pub const VEND1_CTRL: u32 = 0x0000;
/// Low-power mode: clear to power the PHY up.
pub const VEND1_LOW_POWER: u32 = bit(11);
/// PHY addresses probed.
pub const MAX_PHY_ADDR: u32 = 32;
