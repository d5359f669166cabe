//! The 82599's EEPROM pins behind EEC (docs/hw/ixgbe.md §17.3): software that sets EEC.REQ gets EEC.GNT and then
//! drives a SPI EEPROM itself, clock (SK), chip select (CS, low selects), data in (DI), and reads data out (DO).
//!
//! DPDK's ixgbe reads the 82599's first NVM word this way (its EEPROM type is still unknown then), the rest through
//! EERD. The part modelled is the image EERD reads, as a small SPI EEPROM (EEC.ADDR_SIZE clear: 8 address bits, bit 8
//! in the opcode) that only reads: READ and RDSR (never busy); any other opcode is a fault, the image never changes.

use super::regs::*;

/// SPI opcodes (docs/hw/ixgbe.md §17.3).
const OP_READ: u8 = 0x03;
const OP_RDSR: u8 = 0x05;
/// Opcode bit 3 carries address bit 8 on a part with 8 address bits.
const OP_A8: u8 = 0x08;
const OPCODE_BITS: u32 = 8;
/// Address bits the modelled part takes (EEC.ADDR_SIZE clear).
const ADDR_BITS: u32 = 8;

/// What the part shifts out on DO once the command is in.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// Still taking the opcode and address.
    #[default]
    Command,
    /// RDSR: the status register, again and again (0: ready, no write in progress).
    Status { bit: u32 },
    /// READ: the bytes from `byte` on, MSB first; the address counts up and wraps at the end of the part.
    Read { byte: usize, bit: u32 },
    /// An opcode the model does not know: nothing until chip select goes high.
    Ignored,
}

/// The SPI EEPROM's state between EEC writes.
#[derive(Debug, Default)]
pub(super) struct SpiEeprom {
    shift_in: u32,
    bits_in: u32,
    opcode: u8,
    out: Output,
    /// The level the part drives on DO.
    data_out: bool,
}

impl SpiEeprom {
    /// GNT and DO as EEC reads them, with `eec` the stored value (the grant follows REQ: no firmware contends).
    pub(super) fn lines(&self, eec: u32) -> u32 {
        let granted = eec & EEC_REQ != 0;
        let selected = granted && eec & EEC_CS == 0;
        (if granted { EEC_GNT } else { 0 }) | if selected && self.data_out { EEC_DO } else { 0 }
    }

    /// Software wrote EEC (`old` the stored value before): clock edges with the part selected move bits. `Err` says
    /// what the part cannot do (a fault for the caller to record).
    pub(super) fn write(&mut self, old: u32, new: u32, nvm: &[u16]) -> Result<(), String> {
        let rising = old & EEC_SK == 0 && new & EEC_SK != 0;
        let falling = old & EEC_SK != 0 && new & EEC_SK == 0;
        if new & EEC_REQ == 0 {
            *self = Self::default();
            return if rising {
                Err("EEC.SK raised without EEC.GNT: the EEPROM's pins are not software's until REQ is granted \
                     (docs/hw/ixgbe.md §17.3)"
                    .into())
            } else {
                Ok(())
            };
        }
        if new & EEC_CS != 0 {
            // Deselected: the command ends; the next one starts when CS goes low.
            *self = Self::default();
            return Ok(());
        }
        if rising && self.out == Output::Command {
            self.shift_in = self.shift_in << 1 | u32::from(new & EEC_DI != 0);
            self.bits_in += 1;
            if self.bits_in == OPCODE_BITS {
                let opcode = self.shift_in as u8;
                self.opcode = opcode;
                if opcode == OP_RDSR {
                    self.out = Output::Status { bit: 0 };
                } else if opcode & !OP_A8 != OP_READ {
                    self.out = Output::Ignored;
                    return Err(format!(
                        "SPI EEPROM opcode {opcode:#04x} through EEC: the model's EEPROM only reads (READ, RDSR; \
                         docs/hw/ixgbe.md §17.3)"
                    ));
                }
            } else if self.bits_in == OPCODE_BITS + ADDR_BITS {
                let a8 = if self.opcode & OP_A8 != 0 { 1 << ADDR_BITS } else { 0 };
                let byte = (self.shift_in as usize & ((1 << ADDR_BITS) - 1)) | a8;
                self.out = Output::Read { byte, bit: 0 };
            }
        } else if falling {
            // The part changes DO after the falling edge; software samples it after the next rising one.
            match &mut self.out {
                Output::Status { bit } => {
                    self.data_out = false; // every status bit 0: ready, nothing protected
                    *bit = (*bit + 1) % 8;
                }
                Output::Read { byte, bit } => {
                    let bytes = 2 * nvm.len();
                    let word = nvm[(*byte % bytes) / 2];
                    // Byte 2w is word w's low byte.
                    let value = word.to_le_bytes()[*byte % 2];
                    self.data_out = value & (0x80 >> *bit) != 0;
                    *bit += 1;
                    if *bit == 8 {
                        *bit = 0;
                        *byte = (*byte + 1) % bytes;
                    }
                }
                Output::Command | Output::Ignored => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::x540::{X540Config, X540};
    use drvkit::bar::RegisterSpace;

    /// Drives the pins as DPDK's bit-banged read does (docs/hw/ixgbe.md §17.3).
    struct Pins<'a>(&'a crate::SimBar, u32);

    impl Pins<'_> {
        fn set(&mut self, v: u32) {
            self.1 = v;
            self.0.write32(EEC, v);
        }
        fn clock(&mut self) -> bool {
            self.set(self.1 | EEC_SK);
            let d = self.0.read32(EEC) & EEC_DO != 0;
            self.set(self.1 & !EEC_SK);
            d
        }
        fn out(&mut self, value: u32, bits: u32) {
            for i in (0..bits).rev() {
                self.set(if value >> i & 1 != 0 { self.1 | EEC_DI } else { self.1 & !EEC_DI });
                self.clock();
            }
            self.set(self.1 & !EEC_DI);
        }
        fn take(&mut self, bits: u32) -> u32 {
            (0..bits).fold(0, |v, _| v << 1 | u32::from(self.clock()))
        }
        fn standby(&mut self) {
            self.set(self.1 | EEC_CS);
            self.set(self.1 & !EEC_CS);
        }
        fn read_word(&mut self, word: u32) -> u16 {
            self.standby();
            let byte = 2 * word;
            let op = u32::from(OP_READ) | if byte >= 256 { u32::from(OP_A8) } else { 0 };
            self.out(op, OPCODE_BITS);
            self.out(byte & 0xFF, ADDR_BITS);
            (self.take(16) as u16).swap_bytes()
        }
    }

    fn eerd(bar: &crate::SimBar, word: u32) -> u16 {
        bar.write32(EERD, word << EERD_ADDR_SHIFT | EERD_START);
        (bar.read32(EERD) >> EERD_DATA_SHIFT) as u16
    }

    #[test]
    fn the_82599_eeprom_reads_by_bit_bang_as_through_eerd() {
        let (bar, port) = X540::new(X540Config { mac: [0x02, 0x11, 0x22, 0x33, 0x44, 0x55], ..X540Config::x82599() });
        let eec = bar.read32(EEC);
        assert_eq!(eec & (EEC_GNT | EEC_ADDR_SIZE), 0, "no grant before REQ; a part with 8 address bits");
        let mut p = Pins(&bar, eec & !(EEC_ARD | EEC_PRES) | EEC_REQ);
        p.set(p.1);
        assert_ne!(bar.read32(EEC) & EEC_GNT, 0, "REQ is granted");
        p.set(p.1 & !(EEC_CS | EEC_SK));
        // RDSR: ready (bit 0 clear), and again on the following byte.
        p.out(u32::from(OP_RDSR), OPCODE_BITS);
        assert_eq!(p.take(16), 0);
        // Word 0, the MAC words, the checksum word and a word past 0x7F (address bit 8 in the opcode).
        for w in [0, 0x3F, 0x40, 0x41, 0x42, 0x90, 0xFF] {
            assert_eq!(p.read_word(w), eerd(&bar, w), "word {w:#x}");
        }
        assert_eq!(p.read_word(0x40), 0x1102);
        // A READ keeps going into the next word.
        p.standby();
        p.out(u32::from(OP_READ), OPCODE_BITS);
        p.out(0x80, ADDR_BITS);
        let (a, b) = ((p.take(16) as u16).swap_bytes(), (p.take(16) as u16).swap_bytes());
        assert_eq!((a, b), (eerd(&bar, 0x40), eerd(&bar, 0x41)));
        // Release: CS high, REQ clear, the grant goes.
        p.set(p.1 | EEC_CS);
        p.set(p.1 & !EEC_REQ);
        assert_eq!(bar.read32(EEC) & (EEC_GNT | EEC_DO), 0);
        port.assert_no_faults();
    }

    #[test]
    fn bit_bang_writes_and_ungranted_clocks_are_faults() {
        let (bar, port) = X540::new(X540Config::x82599());
        let mut p = Pins(&bar, EEC_REQ);
        p.set(EEC_REQ);
        p.out(0x06, OPCODE_BITS); // WREN: the model's EEPROM only reads
        assert_eq!(port.take_faults().len(), 1);
        p.set(0);
        p.set(EEC_SK); // a clock without the grant
        assert_eq!(port.take_faults().len(), 1);
        // The X540 (flash behind EERD only) grants nothing.
        let (x540, _p) = X540::new(X540Config::default());
        x540.write32(EEC, EEC_REQ);
        assert_eq!(x540.read32(EEC) & EEC_GNT, 0);
    }
}
