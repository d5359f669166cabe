//! The 82599's SFP+ cage and the module in it (docs/hw/ixgbe.md §18): the cage's module-present pin (ESDP.SDP2
//! reads 1 while a module is seated) and the module's serial-ID EEPROM (SFF-8472 page A0h at two-wire address 0xA0),
//! read by software bit-banging the two-wire bus through I2CCTL (clock and data outputs, line levels as inputs).
//!
//! The module is a passive direct-attach copper cable (SFP+ "DA", 10 Gb/s, no laser): the drivers' identification
//! accepts such a cable from any vendor by its cable-technology byte, where an optical module must carry the NIC
//! vendor's OUI or the NVM must allow any module (docs/hw/ixgbe.md §18.3). The bus is a single slave with no clock stretching; writes
//! to the EEPROM only move its address pointer (the ID page is read-only); page A2h (diagnostics) is absent.

use super::regs::*;

/// Two-wire address of the serial-ID page (SFF-8472: A0h; the read address is A1h).
const EEPROM_ADDR: u8 = 0xA0;

/// SFF-8472 page A0h of a 1 m passive SFP+ direct-attach cable (docs/hw/ixgbe.md §18.2).
pub(super) fn passive_da_cable_eeprom() -> [u8; 256] {
    let mut e = [0u8; 256];
    e[SFF_IDENTIFIER] = SFF_IDENTIFIER_SFP;
    e[SFF_EXT_IDENTIFIER] = 0x04; // serial ID defined by two-wire interface
    e[SFF_CONNECTOR] = SFF_CONNECTOR_COPPER_PIGTAIL;
    // Bytes 3..=10: no 10G optical compliance, no 1G code; byte 8 names the cable technology.
    e[SFF_CABLE_TECHNOLOGY] = SFF_DA_PASSIVE_CABLE;
    e[SFF_BIT_RATE_NOMINAL] = 103; // 10.3 Gb/s in units of 100 Mb/s
    e[SFF_LENGTH_COPPER] = 1; // metres
    e[20..36].copy_from_slice(b"NICSIM          ");
    e[SFF_VENDOR_OUI..SFF_VENDOR_OUI + 3].copy_from_slice(&[0x02, 0x00, 0x00]); // locally administered: no vendor
    e[40..56].copy_from_slice(b"DAC-SFP10G-1M   ");
    e[56..60].copy_from_slice(b"A   ");
    e[SFF_CABLE_SPEC_COMP] = 0x01; // passive cable: SFF-8431 appendix E compliant
    e[SFF_CC_BASE] = checksum(&e[0..SFF_CC_BASE]);
    e[68..84].copy_from_slice(b"NS0000000001    ");
    e[84..92].copy_from_slice(b"26120100");
    e[SFF_CC_EXT] = checksum(&e[64..SFF_CC_EXT]);
    e
}

/// SFF-8472 check codes: the low 8 bits of the sum of the bytes covered.
fn checksum(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |s, &b| s.wrapping_add(b))
}

/// Where the slave is in a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Phase {
    /// No transfer (after a STOP, or a NACKed address): waits for a START.
    #[default]
    Idle,
    /// Shifting in a byte from the master (the address byte first after a START).
    Receive,
    /// Holding SDA low through the acknowledge clock of a received byte.
    Ack,
    /// Shifting out a byte to the master, most significant bit first.
    Transmit,
    /// Released SDA for the master's acknowledge clock: low means "send another byte".
    MasterAck,
}

/// The module's side of the two-wire bus, driven by I2CCTL writes (docs/hw/ixgbe.md §18.1).
#[derive(Debug, Clone, Default)]
pub(super) struct I2cBus {
    /// Clock and data as the master drives them (open drain: 1 = released).
    scl: bool,
    sda: bool,
    /// The module pulls SDA low.
    pull_low: bool,
    phase: Phase,
    shift: u8,
    bits: u8,
    /// The byte received is the address byte (the first after a START).
    address_byte: bool,
    /// This transfer reads (address byte's R/W bit set).
    reading: bool,
    /// The next write byte sets the pointer (the first data byte after the address).
    pointer_next: bool,
    /// The EEPROM's address pointer.
    pointer: u8,
    /// The master acknowledged the byte just sent.
    master_acked: bool,
}

impl I2cBus {
    /// A released bus (both lines high).
    pub(super) fn new() -> Self {
        I2cBus { scl: true, sda: true, ..Default::default() }
    }

    /// The data line as everyone on the bus sees it (wired AND).
    fn sda_line(&self) -> bool {
        self.sda && !self.pull_low
    }

    /// I2CCTL as read: the outputs as written, the inputs as the lines are.
    pub(super) fn read(&self) -> u32 {
        let mut v = 0;
        if self.scl {
            v |= I2CCTL_CLK_OUT | I2CCTL_CLK_IN;
        }
        if self.sda {
            v |= I2CCTL_DATA_OUT;
        }
        if self.sda_line() {
            v |= I2CCTL_DATA_IN;
        }
        v
    }

    /// I2CCTL written: new clock and data outputs; `eeprom` is the seated module's page A0h (`None`: cage empty,
    /// nobody answers).
    pub(super) fn write(&mut self, value: u32, eeprom: Option<&[u8; 256]>) {
        let scl = value & I2CCTL_CLK_OUT != 0;
        let sda = value & I2CCTL_DATA_OUT != 0;
        let Some(eeprom) = eeprom else {
            (self.scl, self.sda) = (scl, sda);
            return;
        };
        if self.scl && scl && sda != self.sda {
            // Data changing while the clock is high: START (falling) or STOP (rising).
            self.pull_low = false;
            if sda {
                self.phase = Phase::Idle;
            } else {
                self.start_byte(true);
            }
        } else if !self.scl && scl {
            self.rising_edge(sda && !self.pull_low);
        } else if self.scl && !scl {
            self.falling_edge(eeprom);
        }
        (self.scl, self.sda) = (scl, sda);
    }

    fn start_byte(&mut self, address: bool) {
        self.phase = Phase::Receive;
        self.address_byte = address;
        self.shift = 0;
        self.bits = 0;
    }

    /// The master samples on the rising clock edge; so does the module.
    fn rising_edge(&mut self, line: bool) {
        match self.phase {
            Phase::Receive if self.bits < 8 => {
                self.shift = self.shift << 1 | u8::from(line);
                self.bits += 1;
            }
            Phase::MasterAck => self.master_acked = !line,
            _ => {}
        }
    }

    /// Data may change while the clock is low: the module moves to its next bit here.
    fn falling_edge(&mut self, eeprom: &[u8; 256]) {
        match self.phase {
            Phase::Receive if self.bits == 8 => {
                let byte = self.shift;
                if self.address_byte {
                    if byte & !1 != EEPROM_ADDR {
                        self.phase = Phase::Idle; // not ours: no acknowledge
                        return;
                    }
                    self.reading = byte & 1 != 0;
                    self.pointer_next = !self.reading;
                } else if self.pointer_next {
                    self.pointer = byte;
                    self.pointer_next = false;
                }
                self.pull_low = true;
                self.phase = Phase::Ack;
            }
            Phase::Ack => {
                self.pull_low = false;
                if self.reading {
                    self.load(eeprom);
                } else {
                    self.start_byte(false);
                }
            }
            Phase::Transmit => {
                self.bits += 1;
                if self.bits == 8 {
                    self.pull_low = false;
                    self.phase = Phase::MasterAck;
                } else {
                    self.pull_low = self.shift & (0x80 >> self.bits) == 0;
                }
            }
            Phase::MasterAck => {
                if self.master_acked {
                    self.load(eeprom);
                } else {
                    self.phase = Phase::Idle;
                }
            }
            _ => {}
        }
    }

    /// Puts the byte at the pointer on the bus (its first bit now), advancing the pointer.
    fn load(&mut self, eeprom: &[u8; 256]) {
        self.shift = eeprom[usize::from(self.pointer)];
        self.pointer = self.pointer.wrapping_add(1);
        self.bits = 0;
        self.phase = Phase::Transmit;
        self.pull_low = self.shift & 0x80 == 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A master as the drivers bit-bang it: data set while the clock is low, sampled while high.
    struct Master<'a> {
        bus: I2cBus,
        eeprom: Option<&'a [u8; 256]>,
    }

    impl Master<'_> {
        fn set(&mut self, scl: bool, sda: bool) {
            let v = if scl { I2CCTL_CLK_OUT } else { 0 } | if sda { I2CCTL_DATA_OUT } else { 0 };
            self.bus.write(v, self.eeprom);
        }
        fn start(&mut self) {
            self.set(false, true);
            self.set(true, true);
            self.set(true, false);
            self.set(false, false);
        }
        fn stop(&mut self) {
            self.set(false, false);
            self.set(true, false);
            self.set(true, true);
        }
        /// Clocks one bit; returns the line level sampled while the clock was high.
        fn bit(&mut self, out: bool) -> bool {
            self.set(false, out);
            self.set(true, out);
            let line = self.bus.read() & I2CCTL_DATA_IN != 0;
            self.set(false, out);
            line
        }
        /// Sends a byte; true if acknowledged.
        fn send(&mut self, byte: u8) -> bool {
            (0..8).rev().for_each(|i| {
                self.bit(byte >> i & 1 != 0);
            });
            !self.bit(true)
        }
        fn recv(&mut self, ack: bool) -> u8 {
            let b = (0..8).fold(0u8, |b, _| b << 1 | u8::from(self.bit(true)));
            self.bit(!ack);
            b
        }
        fn read(&mut self, offset: u8, n: usize) -> Option<Vec<u8>> {
            self.start();
            if !self.send(EEPROM_ADDR) || !self.send(offset) {
                self.stop();
                return None;
            }
            self.start();
            if !self.send(EEPROM_ADDR | 1) {
                self.stop();
                return None;
            }
            let v = (0..n).map(|i| self.recv(i + 1 < n)).collect();
            self.stop();
            Some(v)
        }
    }

    #[test]
    fn bit_banged_reads_return_the_module_eeprom() {
        let e = passive_da_cable_eeprom();
        let mut m = Master { bus: I2cBus::new(), eeprom: Some(&e) };
        assert_eq!(m.read(SFF_IDENTIFIER as u8, 1), Some(vec![SFF_IDENTIFIER_SFP]));
        assert_eq!(m.read(SFF_CABLE_TECHNOLOGY as u8, 1), Some(vec![SFF_DA_PASSIVE_CABLE]));
        // Sequential read across bytes, then a fresh random read elsewhere.
        assert_eq!(m.read(0, 64).unwrap(), e[0..64].to_vec());
        assert_eq!(m.read(0x25, 3), Some(vec![0x02, 0x00, 0x00]));
        assert_eq!(checksum(&e[0..63]), e[63], "CC_BASE");
        assert_eq!(checksum(&e[64..95]), e[95], "CC_EXT");
        // Another address (the A2h diagnostics page) is not acknowledged.
        m.start();
        assert!(!m.send(0xA2));
        m.stop();
        assert_eq!(m.read(3, 1), Some(vec![0]), "the bus recovers after a NACK");
    }

    #[test]
    fn an_empty_cage_acknowledges_nothing_and_leaves_sda_to_the_master() {
        let mut m = Master { bus: I2cBus::new(), eeprom: None };
        assert_eq!(m.read(0, 1), None);
        m.set(false, true);
        assert_eq!(m.bus.read() & (I2CCTL_DATA_IN | I2CCTL_CLK_IN), I2CCTL_DATA_IN);
    }
}
