//! The NVM shadow RAM as a probing driver reads it (docs/hw/i40e.md §18.1): GLNVM_GENS gives its size, GLNVM_SRCTL
//! and GLNVM_SRDATA read it one word at a time, and word 0x3F holds the software checksum that makes the 16-bit sum
//! of the image 0xBABA. Writes to the shadow RAM are not modelled (a fault).

use super::regs::*;
use super::{Core, X710State};

/// GLNVM_GENS.SR_SIZE of the model: 4 KB (2048 words), one 4 KB sector. Real parts have 64 KB; the driver takes the
/// size from the register and a small image keeps a probe's checksum pass short, but it reads whole sectors, so the
/// image is at least one (docs/hw/i40e.md §18.1).
pub(super) const SR_SIZE_LOG2_KB: u32 = 2;
/// Words in the shadow RAM.
pub(super) const SR_WORDS: usize = (1 << SR_SIZE_LOG2_KB) * 512;

/// Word addresses of docs/hw/i40e.md §18.1.
pub(super) mod word {
    /// NVM control word: bits 7:6 = 01 mark a valid image.
    pub const CONTROL: usize = 0x00;
    /// Boot configuration module pointer.
    pub const BOOT_CONFIG_PTR: usize = 0x17;
    /// NVM image version: major in bits 15:12, minor in bits 7:0.
    pub const NVM_VERSION: usize = 0x18;
    /// EETRACK ID, low and high word.
    pub const EETRACK_LO: usize = 0x2D;
    /// EETRACK ID, high word.
    pub const EETRACK_HI: usize = 0x2E;
    /// VPD module pointer (its 1 KB is left out of the checksum).
    pub const VPD_PTR: usize = 0x2F;
    /// PCIe alternate auto-load module pointer (its 1 KB is left out of the checksum).
    pub const PCIE_ALT_PTR: usize = 0x3E;
    /// Software checksum word.
    pub const SW_CHECKSUM: usize = 0x3F;
}

/// Control word bits 7:6 = 01: the image is valid (drivers check it before the checksum).
const CONTROL_VALID: u16 = 0b01 << 6;
/// The image's version, 9.20 (shown by drivers as "nvm 9.20").
const NVM_VERSION: u16 = 0x9020;
/// The image's EETRACK ID (the model's own; it identifies no real image).
const EETRACK: u32 = 0x8000_7710;
/// "Not present" in a module pointer word.
const ABSENT: u16 = 0xFFFF;
/// The sum the checksum word completes.
const CHECKSUM_BASE: u16 = 0xBABA;
/// Words of the VPD and PCIe alternate modules left out of the sum (1 KB each).
const SKIPPED_MODULE_WORDS: usize = 512;

/// A shadow RAM image: the version words, absent modules and a valid checksum.
#[derive(Debug, Clone)]
pub(super) struct ShadowRam {
    words: Vec<u16>,
}

impl ShadowRam {
    pub(super) fn new() -> ShadowRam {
        let mut words = vec![0u16; SR_WORDS];
        words[word::CONTROL] = CONTROL_VALID;
        words[word::NVM_VERSION] = NVM_VERSION;
        words[word::EETRACK_LO] = EETRACK as u16;
        words[word::EETRACK_HI] = (EETRACK >> 16) as u16;
        for ptr in [word::BOOT_CONFIG_PTR, word::VPD_PTR, word::PCIE_ALT_PTR] {
            words[ptr] = ABSENT;
        }
        words[word::SW_CHECKSUM] = checksum(&words);
        ShadowRam { words }
    }

    pub(super) fn word(&self, addr: usize) -> Option<u16> {
        self.words.get(addr).copied()
    }
}

/// The software checksum of docs/hw/i40e.md §18.1: 0xBABA minus the sum of every word but the checksum word and the
/// VPD and PCIe alternate modules.
pub(super) fn checksum(words: &[u16]) -> u16 {
    let skipped = |ptr: usize, i: usize| {
        let start = usize::from(words[ptr]);
        (start..start + SKIPPED_MODULE_WORDS).contains(&i)
    };
    let sum = words
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != word::SW_CHECKSUM && !skipped(word::VPD_PTR, i) && !skipped(word::PCIE_ALT_PTR, i))
        .fold(0u16, |acc, (_, &w)| acc.wrapping_add(w));
    CHECKSUM_BASE.wrapping_sub(sum)
}

impl Core {
    /// GLNVM_GENS, GLNVM_SRCTL and GLNVM_SRDATA reads.
    pub(super) fn nvm_read(&self, offset: usize) -> u32 {
        match offset {
            GLNVM_GENS => GLNVM_GENS_NVM_PRES.val(1) | GLNVM_GENS_SR_SIZE.val(SR_SIZE_LOG2_KB),
            // Accesses complete at once: DONE reads 1 whenever the driver looks.
            GLNVM_SRCTL => self.reg(GLNVM_SRCTL) | GLNVM_SRCTL_DONE.mask(),
            _ => self.reg(offset),
        }
    }

    /// GLNVM_SRCTL and GLNVM_SRDATA writes: START with WRITE clear reads the word at ADDR into SRDATA.RDDATA.
    pub(super) fn nvm_write(&mut self, shared: &X710State, offset: usize, value: u32) {
        if offset != GLNVM_SRCTL {
            self.set_reg(offset, GLNVM_SRDATA_WRDATA.get(value) | (self.reg(offset) & GLNVM_SRDATA_RDDATA.mask()));
            return;
        }
        self.set_reg(GLNVM_SRCTL, value & !GLNVM_SRCTL_START.mask());
        if !GLNVM_SRCTL_START.is_set(value) {
            return;
        }
        let addr = GLNVM_SRCTL_ADDR.get(value) as usize;
        if GLNVM_SRCTL_WRITE.is_set(value) {
            shared.fault(format!(
                "GLNVM_SRCTL = {value:#x}: a shadow RAM write (word {addr:#x}); the model's NVM is read-only"
            ));
            return;
        }
        let Some(w) = self.sr.word(addr) else {
            shared.fault(format!(
                "GLNVM_SRCTL = {value:#x}: word {addr:#x} is past the shadow RAM's {SR_WORDS} words \
                 (GLNVM_GENS.SR_SIZE, docs/hw/i40e.md §18.1)"
            ));
            return;
        };
        self.set_reg(GLNVM_SRDATA, GLNVM_SRDATA_RDDATA.val(w.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_sums_to_the_checksum_base() {
        let sr = ShadowRam::new();
        let sum = sr.words.iter().fold(0u16, |a, &w| a.wrapping_add(w));
        assert_eq!(sum, CHECKSUM_BASE, "with the checksum word and no skipped modules the whole image sums to 0xBABA");
        assert_eq!(sr.word(word::NVM_VERSION), Some(0x9020));
        assert_eq!(sr.word(word::CONTROL).map(|w| (w >> 6) & 3), Some(0b01), "valid-image mark");
        assert_eq!(sr.word(SR_WORDS), None);
    }

    #[test]
    fn checksum_leaves_out_the_vpd_module() {
        let mut words = vec![1u16; SR_WORDS];
        words[word::PCIE_ALT_PTR] = ABSENT;
        words[word::VPD_PTR] = 0x100;
        // 2048 words of 1, less the checksum word, the 512 VPD words; the pointer words themselves count.
        let counted = ((SR_WORDS - 1 - 512 - 2) as u16).wrapping_add(0x100).wrapping_add(ABSENT);
        assert_eq!(checksum(&words), CHECKSUM_BASE.wrapping_sub(counted));
    }
}
