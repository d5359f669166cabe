//! The model's NVM (the X540's flash that emulates an EEPROM, the 82599's EEPROM) and its read path through EERD
//! (docs/hw/ixgbe.md §17).
//!
//! The image holds what a driver reads at probe: the control words with their checksum (words 0x00..0x3F summing to
//! 0xBABA, no pointed-to sections: every section pointer reads 0xFFFF, "not present"), the LAN MAC addresses in
//! words 0x40..0x45 (port 0) and 0x48..0x4D (port 1) as this model's layout (RAL/RAH(0) are loaded from them at every
//! reset), no SAN MAC or alternate MAC; on the 82599 a firmware module with its patch version (no LESM parameters) and the SFP+ init-sequence list.

use super::regs::*;
use super::{Core, X540Config};

/// The EEC.SIZE the model reports: 2^(2 + 6) = 256 words.
pub(super) const EEC_SIZE: u32 = 2;
/// Words in the image.
pub(super) const WORDS: usize = 1 << (EEC_SIZE + 6);
/// Word holding the checksum, and the end of the summed control words (docs/hw/ixgbe.md §17).
pub(super) const CHECKSUM_WORD: usize = 0x3F;
/// What the control words (checksum included) sum to.
pub(super) const CHECKSUM_SUM: u16 = 0xBABA;
/// First and last section pointer words (docs/hw/ixgbe.md §17).
const POINTERS: std::ops::RangeInclusive<usize> = 0x03..=0x0F;
/// Pointer words to the SAN MAC and alternate-MAC blocks (docs/hw/ixgbe.md §17): absent here.
const SAN_MAC_PTR: usize = 0x28;
const ALT_MAC_PTR: usize = 0x37;
const ALT_SAN_MAC_PTR: usize = 0x27;
/// The firmware module pointer (docs/hw/ixgbe.md §17.2).
const FW_PTR: usize = 0x0F;
/// Where this model places the firmware module, its pass-through patch configuration block, and the patch version it
/// reports (above 5: a released part, docs/hw/ixgbe.md §17.2).
const FW_MODULE: usize = 0x60;
const FW_PATCH_CONFIG: usize = 0x70;
const FW_PATCH_VERSION: u16 = 0x0006;
/// Offsets inside those blocks (docs/hw/ixgbe.md §17.2).
const FW_LESM_PARAMETERS_PTR: usize = 0x2;
const FW_PASSTHROUGH_PATCH_CONFIG_PTR: usize = 0x4;
const FW_PATCH_VERSION_4: usize = 0x7;
/// The SFP+ module init-sequence list pointer (docs/hw/ixgbe.md §18.4), where this model places the list, and the
/// (empty) sequence every listed module type shares.
const SFP_INIT_PTR: usize = 0x2B;
const SFP_INIT_LIST: usize = 0x80;
const SFP_INIT_SEQUENCE: usize = 0x90;
/// Module types listed (docs/hw/ixgbe.md §18.4): passive DA cable and SR/LR optics, on LAN port 0 and 1.
const SFP_INIT_TYPES: [u16; 4] = [3, 4, 5, 6];
/// Ends the list and a sequence.
const SFP_INIT_END: u16 = 0xFFFF;
/// Where this model keeps port `lan_id`'s MAC address (three little-endian words).
pub(super) const fn mac_word(lan_id: u8) -> usize {
    0x40 + 8 * (lan_id as usize & 1)
}

/// The NVM image of a port built from `config` (its MAC at [`mac_word`]).
pub(super) fn image(config: &X540Config) -> Vec<u16> {
    let mut w = vec![0u16; WORDS];
    for p in POINTERS.chain([SAN_MAC_PTR, ALT_MAC_PTR, ALT_SAN_MAC_PTR]) {
        w[p] = 0xFFFF;
    }
    if config.chip == super::Chip::X82599 {
        // The SFP+ part's firmware module: a patch version, and no LESM parameters (LESM is not modelled).
        w[FW_PTR] = FW_MODULE as u16;
        w[FW_MODULE + FW_LESM_PARAMETERS_PTR] = 0;
        w[FW_MODULE + FW_PASSTHROUGH_PATCH_CONFIG_PTR] = FW_PATCH_CONFIG as u16;
        w[FW_PATCH_CONFIG + FW_PATCH_VERSION_4] = FW_PATCH_VERSION;
        // The SFP+ init-sequence list: (module type, sequence) pairs after a header word, all sharing one sequence
        // with no CORECTL writes (the model has no analog front end to tune).
        w[SFP_INIT_PTR] = SFP_INIT_LIST as u16;
        for (i, t) in SFP_INIT_TYPES.iter().enumerate() {
            w[SFP_INIT_LIST + 1 + 2 * i] = *t;
            w[SFP_INIT_LIST + 2 + 2 * i] = SFP_INIT_SEQUENCE as u16;
        }
        w[SFP_INIT_LIST + 1 + 2 * SFP_INIT_TYPES.len()] = SFP_INIT_END;
        w[SFP_INIT_SEQUENCE + 1] = SFP_INIT_END;
    }
    let m = config.mac;
    let at = mac_word(config.lan_id);
    for i in 0..3 {
        w[at + i] = u16::from_le_bytes([m[2 * i], m[2 * i + 1]]);
    }
    let sum = w[..CHECKSUM_WORD].iter().fold(0u16, |s, &x| s.wrapping_add(x));
    w[CHECKSUM_WORD] = CHECKSUM_SUM.wrapping_sub(sum);
    w
}

impl Core {
    /// EERD: a write with START reads the word at ADDR at once; DONE and DATA then read back (docs/hw/ixgbe.md §17).
    pub(super) fn write_eerd(&mut self, value: u32) {
        if value & EERD_START == 0 {
            return self.set_reg(EERD, value & !EERD_DONE);
        }
        let addr = ((value >> EERD_ADDR_SHIFT) & EERD_ADDR_MASK) as usize;
        // Past the end of the part: the address wraps, as a real part's address lines do.
        let data = self.nvm[addr % self.nvm.len()];
        let keep = value & (EERD_ADDR_MASK << EERD_ADDR_SHIFT);
        self.set_reg(EERD, keep | EERD_DONE | u32::from(data) << EERD_DATA_SHIFT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::X540;
    use drvkit::bar::RegisterSpace;

    fn eerd(bar: &crate::SimBar, word: usize) -> u16 {
        bar.write32(EERD, (word as u32) << EERD_ADDR_SHIFT | EERD_START);
        let v = bar.read32(EERD);
        assert_ne!(v & EERD_DONE, 0, "EERD.DONE after a read of word {word:#x}");
        (v >> EERD_DATA_SHIFT) as u16
    }

    #[test]
    fn eerd_reads_a_valid_checksum_and_the_mac() {
        let (bar, _port) = X540::new(X540Config { mac: [0x02, 0x11, 0x22, 0x33, 0x44, 0x55], ..Default::default() });
        let size = 1usize << (((bar.read32(EEC) >> EEC_SIZE_SHIFT) & 0xF) + 6);
        assert_eq!(size, WORDS);
        let words: Vec<u16> = (0..size).map(|i| eerd(&bar, i)).collect();
        let sum = words[..=CHECKSUM_WORD].iter().fold(0u16, |s, &x| s.wrapping_add(x));
        assert_eq!(sum, CHECKSUM_SUM, "control words sum to 0xBABA");
        assert!(POINTERS.clone().filter(|&p| p != FW_PTR).all(|p| words[p] == 0xFFFF), "no sections");
        assert_eq!(&words[0x40..0x43], &[0x1102, 0x3322, 0x5544]);
        // RAL/RAH(0) hold the same address after reset.
        assert_eq!(bar.read32(ral(0)), 0x3322_1102);
        assert_eq!(bar.read32(rah(0)) & 0xFFFF, 0x5544);
    }

    #[test]
    fn eerd_without_start_does_not_report_done() {
        let (bar, _port) = X540::new(X540Config::default());
        bar.write32(EERD, 5 << EERD_ADDR_SHIFT);
        assert_eq!(bar.read32(EERD) & EERD_DONE, 0);
    }

    #[test]
    fn reset_values_a_vendor_driver_relies_on() {
        let (bar, _port) = X540::new(X540Config::default());
        bar.write32(CTRL, CTRL_RST);
        let hl = bar.read32(HLREG0);
        assert_eq!(
            hl & (HLREG0_TXCRCEN | HLREG0_RXCRCSTRP | HLREG0_TXPADEN),
            HLREG0_TXCRCEN | HLREG0_RXCRCSTRP | HLREG0_TXPADEN
        );
        assert_eq!(hl & HLREG0_JUMBOEN, 0);
        assert_ne!(bar.read32(FWSM) & FWSM_FW_VAL, 0, "firmware valid");
    }

    #[test]
    fn the_82599_nvm_holds_a_released_firmware_patch_version_and_no_lesm() {
        let (bar, _port) = X540::new(X540Config::x82599());
        let fw = eerd(&bar, FW_PTR) as usize;
        assert!(fw != 0 && fw != 0xFFFF && fw < WORDS);
        assert_eq!(eerd(&bar, fw + FW_LESM_PARAMETERS_PTR), 0, "no LESM parameters");
        let cfg = eerd(&bar, fw + FW_PASSTHROUGH_PATCH_CONFIG_PTR) as usize;
        assert!(eerd(&bar, cfg + FW_PATCH_VERSION_4) > 5);
        let sum = (0..=CHECKSUM_WORD).map(|i| eerd(&bar, i)).fold(0u16, |s, x| s.wrapping_add(x));
        assert_eq!(sum, CHECKSUM_SUM, "the firmware pointer is outside the checksum's sections but inside its words");
        // The SFP+ init-sequence list names the passive DA cable on port 0 (type 3) with a sequence that ends at once.
        let list = eerd(&bar, SFP_INIT_PTR) as usize;
        assert!(list != 0 && list != 0xFFFF && list < WORDS);
        let mut at = list + 1;
        let seq = loop {
            match eerd(&bar, at) {
                SFP_INIT_END => panic!("type 3 not listed"),
                3 => break eerd(&bar, at + 1) as usize,
                _ => at += 2,
            }
        };
        assert!(seq != 0 && seq != 0xFFFF && seq + 1 < WORDS);
        assert_eq!(eerd(&bar, seq + 1), SFP_INIT_END);
        // The X540 has no firmware module.
        let (x540, _p) = X540::new(X540Config::default());
        assert_eq!(eerd(&x540, FW_PTR), 0xFFFF);
    }
}
