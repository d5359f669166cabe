//! A synthesised PCI Express configuration space for a model: the type-0 header with the model's identity and BAR
//! types, and the capabilities real drivers read (power management, MSI, MSI-X, PCI Express). Reads never return
//! all-ones (a driver takes that for a surprise-removed device); writes change only the bits a real function lets
//! software write.

use nicsim::PciIdentity;

/// Config space size of a PCI Express function (the extended space above 0x100 holds no capability here).
pub const CONFIG_LEN: usize = 4096;

// Type-0 header offsets (PCI Local Bus spec).
const VENDOR: usize = 0x00;
const DEVICE: usize = 0x02;
const COMMAND: usize = 0x04;
const STATUS: usize = 0x06;
const REVISION: usize = 0x08;
const CLASS: usize = 0x09;
const CACHE_LINE: usize = 0x0C;
const BAR0: usize = 0x10;
const SUBSYS_VENDOR: usize = 0x2C;
const SUBSYS: usize = 0x2E;
const CAP_PTR: usize = 0x34;
const INT_LINE: usize = 0x3C;
const INT_PIN: usize = 0x3D;

/// STATUS.CAP_LIST: a capability list starts at CAP_PTR.
const STATUS_CAP_LIST: u16 = 1 << 4;
/// COMMAND bits software may write: I/O, memory, bus master, parity error response, SERR, INTx disable.
const COMMAND_RW: u16 = 0x0007 | 0x0040 | 0x0100 | 0x0400;
/// BAR type bits: memory, 64-bit; prefetchable; I/O space.
const BAR_MEM64: u32 = 0b100;
const BAR_PREFETCH: u32 = 0b1000;
const BAR_IO: u32 = 0b1;

// Capability IDs and where this layout places them.
const CAP_PM: u8 = 0x01;
const CAP_MSI: u8 = 0x05;
const CAP_PCIE: u8 = 0x10;
const CAP_MSIX: u8 = 0x11;
/// Power management at 0x40: PMC (version 3), PMCSR (power state and PME bits writable).
pub const PM_AT: usize = 0x40;
/// MSI at 0x50: 64-bit addresses, one message.
pub const MSI_AT: usize = 0x50;
/// MSI-X at 0x70: the table at BAR4 offset 0, the PBA at BAR4 offset 0x2000.
pub const MSIX_AT: usize = 0x70;
/// PCI Express at 0xA0: an endpoint, 5 GT/s x8 (what the X540 and 82599 train to, docs/hw/ixgbe.md §1).
pub const PCIE_AT: usize = 0xA0;
/// PBA offset in the MSI-X BAR.
pub const MSIX_PBA_OFFSET: u32 = 0x2000;

/// The config space of one function: its bytes and which bits software may write.
#[derive(Clone)]
pub struct ConfigSpace {
    bytes: Vec<u8>,
    writable: Vec<u8>,
}

impl std::fmt::Debug for ConfigSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigSpace")
            .field("vendor", &self.u16_at(VENDOR))
            .field("device", &self.u16_at(DEVICE))
            .finish()
    }
}

impl ConfigSpace {
    /// The config space of a function with `id`'s identity, BARs and MSI-X vector count; `prefetchable` marks
    /// the memory BARs prefetchable (the X540's are, docs/hw/ixgbe.md §1); the MSI-X table and PBA live in BAR
    /// `msix_bar` (4 on the X540 and 82599, 3 on the X710, 2 on the SP670).
    pub fn new(id: &PciIdentity, prefetchable: bool, msix_bar: u32) -> Self {
        let mut c = ConfigSpace { bytes: vec![0; CONFIG_LEN], writable: vec![0; CONFIG_LEN] };
        c.put16(VENDOR, id.vendor);
        c.put16(DEVICE, id.device);
        c.put16(STATUS, STATUS_CAP_LIST);
        c.bytes[REVISION] = 0x01;
        c.bytes[CLASS..CLASS + 3].copy_from_slice(&id.class.to_le_bytes()[..3]);
        c.put16(SUBSYS_VENDOR, id.vendor);
        c.put16(SUBSYS, 0x0001);
        c.bytes[INT_PIN] = 1; // INTA
        c.allow(COMMAND, &COMMAND_RW.to_le_bytes());
        c.allow(CACHE_LINE, &[0xFF, 0xFF]);
        c.allow(INT_LINE, &[0xFF]);
        // BARs: only the type bits; QEMU sizes and places them from the region sizes. A memory BAR is 64-bit where
        // the next BAR number is free to hold its upper half (the SP670's BAR1, 2 and 3 are 32-bit, its BAR4 64-bit,
        // docs/hw/hinic3.md §2); a small BAR2 is the 82599's I/O BAR.
        let mut bar = 0;
        while bar < 6 {
            let len = id.bars[bar];
            if len == 0 {
                bar += 1;
                continue;
            }
            let prefetch = if prefetchable { BAR_PREFETCH } else { 0 };
            if len < 0x1000 && bar == 2 {
                c.put32(BAR0 + 4 * bar, BAR_IO);
                bar += 1;
            } else if bar + 1 < 6 && id.bars[bar + 1] == 0 {
                c.put32(BAR0 + 4 * bar, BAR_MEM64 | prefetch);
                bar += 2;
            } else {
                c.put32(BAR0 + 4 * bar, prefetch);
                bar += 1;
            }
        }
        c.bytes[CAP_PTR] = PM_AT as u8;

        // Power management: PMC version 3; PMCSR power state (1:0) and PME_En (8) writable.
        c.cap(PM_AT, CAP_PM, MSI_AT);
        c.put16(PM_AT + 2, 0x0003);
        c.allow(PM_AT + 4, &0x0103u16.to_le_bytes());

        // MSI: 64-bit capable, one message; enable, address and data writable.
        c.cap(MSI_AT, CAP_MSI, MSIX_AT);
        c.put16(MSI_AT + 2, 1 << 7);
        c.allow(MSI_AT + 2, &[0x71, 0x00]);
        c.allow(MSI_AT + 4, &[0xFC, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);

        // MSI-X: table size N-1, enable (15) and function mask (14) writable.
        c.cap(MSIX_AT, CAP_MSIX, PCIE_AT);
        c.put16(MSIX_AT + 2, id.msix_vectors.saturating_sub(1) & 0x7FF);
        c.allow(MSIX_AT + 2, &0xC000u16.to_le_bytes());
        c.put32(MSIX_AT + 4, msix_bar);
        c.put32(MSIX_AT + 8, MSIX_PBA_OFFSET | msix_bar);

        // PCI Express v2 endpoint: 512-byte max payload, link 5 GT/s x8 (capability and status), no FLR.
        c.cap(PCIE_AT, CAP_PCIE, 0);
        c.put16(PCIE_AT + 2, 0x0002);
        c.put32(PCIE_AT + 4, 0x0000_0002);
        c.put16(PCIE_AT + 8, 0x2810); // DevCtl: relaxed ordering, max payload 128, max read request 512
        c.allow(PCIE_AT + 8, &0x7CFFu16.to_le_bytes());
        c.put32(PCIE_AT + 0x0C, 0x0003_0000 | 8 << 4 | 2);
        c.allow(PCIE_AT + 0x10, &0x01C3u16.to_le_bytes());
        c.put16(PCIE_AT + 0x12, 8 << 4 | 2);
        c.put32(PCIE_AT + 0x24, 0x0000_001F); // DevCap2: completion timeout ranges A-D supported
        c.allow(PCIE_AT + 0x28, &0x041Fu16.to_le_bytes());
        c
    }

    fn put16(&mut self, at: usize, v: u16) {
        self.bytes[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }

    fn put32(&mut self, at: usize, v: u32) {
        self.bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }

    fn u16_at(&self, at: usize) -> u16 {
        u16::from_le_bytes([self.bytes[at], self.bytes[at + 1]])
    }

    fn allow(&mut self, at: usize, mask: &[u8]) {
        self.writable[at..at + mask.len()].copy_from_slice(mask);
    }

    fn cap(&mut self, at: usize, id: u8, next: usize) {
        self.bytes[at] = id;
        self.bytes[at + 1] = next as u8;
    }

    /// Reads `buf.len()` bytes at `offset` (any size and alignment inside the space; beyond it reads 0).
    pub fn read(&self, offset: usize, buf: &mut [u8]) {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = self.bytes.get(offset + i).copied().unwrap_or(0);
        }
    }

    /// Writes `data` at `offset`: only writable bits change.
    pub fn write(&mut self, offset: usize, data: &[u8]) {
        for (i, &d) in data.iter().enumerate() {
            let at = offset + i;
            let Some(&m) = self.writable.get(at) else { return };
            self.bytes[at] = (self.bytes[at] & !m) | (d & m);
        }
    }

    /// COMMAND.BUS_MASTER: the function may start DMA.
    pub fn bus_master(&self) -> bool {
        self.u16_at(COMMAND) & 0x4 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(c: &ConfigSpace, at: usize) -> u32 {
        let mut b = [0; 4];
        c.read(at, &mut b);
        u32::from_le_bytes(b)
    }

    #[test]
    fn x540_config_has_identity_capabilities_and_no_all_ones() {
        let c = ConfigSpace::new(&PciIdentity::x540(2 << 20), true, 4);
        assert_eq!(word(&c, 0), 0x1528_8086);
        assert_eq!(word(&c, 8) >> 8, 0x02_0000);
        assert_eq!(word(&c, 0x10) & 0xF, 0xC, "BAR0 64-bit prefetchable memory");
        assert_eq!(word(&c, 0x20) & 0xF, 0xC, "BAR4 64-bit prefetchable memory");
        // Walk the list: PM, MSI, MSI-X, PCIe.
        let mut ids = vec![];
        let mut at = c.bytes[CAP_PTR] as usize;
        while at != 0 {
            ids.push(c.bytes[at]);
            at = c.bytes[at + 1] as usize;
        }
        assert_eq!(ids, vec![CAP_PM, CAP_MSI, CAP_MSIX, CAP_PCIE]);
        assert_eq!(word(&c, MSIX_AT) >> 16 & 0x7FF, 63, "64 MSI-X vectors");
        assert_eq!(word(&c, MSIX_AT + 4), 4, "table in BAR4 at 0");
        assert_eq!(word(&c, PCIE_AT + 0x10) >> 16 & 0x3FF, 8 << 4 | 2, "link 5 GT/s x8");
        assert!((0..CONFIG_LEN).step_by(4).all(|o| word(&c, o) != u32::MAX), "no all-ones dword");
    }

    #[test]
    fn sp670_bars_are_32_bit_but_the_doorbell_bar() {
        let id = PciIdentity { bars: [0, 0x1_0000, 0x4000, 0x8000, 0x1_0000, 0], ..PciIdentity::x540(0) };
        let c = ConfigSpace::new(&id, true, 2);
        assert_eq!(word(&c, 0x10), 0, "no BAR0");
        assert_eq!([word(&c, 0x14), word(&c, 0x18), word(&c, 0x1C)], [0x8; 3], "BAR1-3 32-bit prefetchable memory");
        assert_eq!(word(&c, 0x20) & 0xF, 0xC, "BAR4 64-bit prefetchable memory");
        assert_eq!(word(&c, MSIX_AT + 4), 2, "MSI-X table in BAR2");
    }

    #[test]
    fn only_writable_bits_change() {
        let mut c = ConfigSpace::new(&PciIdentity::x82599(512 << 10), false, 4);
        c.write(0, &[0xFF; 4]);
        assert_eq!(word(&c, 0), 0x10FB_8086, "identity is read-only");
        assert!(!c.bus_master());
        c.write(COMMAND, &[0xFF, 0xFF]);
        assert!(c.bus_master());
        assert_eq!(c.u16_at(COMMAND), COMMAND_RW);
        assert_eq!(word(&c, 0x18) & 1, 1, "82599 BAR2 is I/O");
        c.write(MSIX_AT + 2, &[0xFF, 0xFF]);
        assert_eq!(c.u16_at(MSIX_AT + 2), 0xC000 | 63);
    }
}
