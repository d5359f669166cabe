//! PCI configuration space: typed reads and writes over any byte-level backend, the command register (bus
//! mastering, which vfio-pci leaves off), and capability lists (how virtio finds its register blocks, how MSI-X
//! is found).
//!
//! A VFIO device implements [`ConfigSpace`] through its config region; `Vec<u8>` and `Mutex<Vec<u8>>` implement it
//! over memory, for tests and device models. Multi-byte fields are little-endian, as PCI defines them.

use std::io;
use std::sync::Mutex;

/// Standard register offsets and bits.
pub mod regs {
    /// Vendor ID (16 bits).
    pub const VENDOR_ID: u16 = 0x00;
    /// Device ID (16 bits).
    pub const DEVICE_ID: u16 = 0x02;
    /// Command register (16 bits).
    pub const COMMAND: u16 = 0x04;
    /// Status register (16 bits).
    pub const STATUS: u16 = 0x06;
    /// Revision ID (8 bits).
    pub const REVISION_ID: u16 = 0x08;
    /// Class code, 24 bits from 0x09.
    pub const CLASS_PROG: u16 = 0x09;
    /// Header type (8 bits).
    pub const HEADER_TYPE: u16 = 0x0e;
    /// BAR 0 (32 bits; BARs 1-5 follow).
    pub const BAR0: u16 = 0x10;
    /// Subsystem vendor ID.
    pub const SUBSYSTEM_VENDOR_ID: u16 = 0x2c;
    /// Subsystem ID.
    pub const SUBSYSTEM_ID: u16 = 0x2e;
    /// Capabilities pointer (8 bits).
    pub const CAPABILITY_LIST: u16 = 0x34;
    /// Interrupt line.
    pub const INTERRUPT_LINE: u16 = 0x3c;

    bitfield::bitfield! {
        /// The command register's bits that drivers use.
        #[derive(Clone, Copy, PartialEq, Eq, Default)]
        pub struct Command(pub u16);
        impl Debug;
        /// I/O space decoding.
        pub io_space, set_io_space: 0;
        /// Memory space decoding (BAR accesses reach the device).
        pub memory_space, set_memory_space: 1;
        /// Bus master: the device may DMA.
        pub bus_master, set_bus_master: 2;
        /// Legacy INTx disabled.
        pub intx_disable, set_intx_disable: 10;
    }

    bitfield::bitfield! {
        /// The status register's bits that drivers use.
        #[derive(Clone, Copy, PartialEq, Eq, Default)]
        pub struct Status(pub u16);
        impl Debug;
        /// A capability list exists (at [`CAPABILITY_LIST`]).
        pub cap_list, set_cap_list: 4;
    }

    /// Capability ID: power management.
    pub const CAP_ID_PM: u8 = 0x01;
    /// Capability ID: MSI.
    pub const CAP_ID_MSI: u8 = 0x05;
    /// Capability ID: vendor specific (virtio uses these).
    pub const CAP_ID_VENDOR: u8 = 0x09;
    /// Capability ID: PCI Express.
    pub const CAP_ID_EXP: u8 = 0x10;
    /// Capability ID: MSI-X.
    pub const CAP_ID_MSIX: u8 = 0x11;
}

/// One entry of the standard capability list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capability {
    /// Capability ID ([`regs::CAP_ID_MSIX`], [`regs::CAP_ID_VENDOR`], ...).
    pub id: u8,
    /// Its offset in configuration space.
    pub offset: u16,
}

/// Byte-level access to a configuration space, with typed helpers on top.
pub trait ConfigSpace {
    /// Reads `buf.len()` bytes at `offset`.
    fn read_config(&self, offset: u16, buf: &mut [u8]) -> io::Result<()>;

    /// Writes `buf` at `offset`.
    fn write_config(&self, offset: u16, buf: &[u8]) -> io::Result<()>;

    /// Reads a byte.
    fn read8(&self, offset: u16) -> io::Result<u8> {
        let mut b = [0u8; 1];
        self.read_config(offset, &mut b)?;
        Ok(b[0])
    }

    /// Reads a little-endian 16-bit field.
    fn read16(&self, offset: u16) -> io::Result<u16> {
        let mut b = [0u8; 2];
        self.read_config(offset, &mut b)?;
        Ok(u16::from_le_bytes(b))
    }

    /// Reads a little-endian 32-bit field.
    fn read32(&self, offset: u16) -> io::Result<u32> {
        let mut b = [0u8; 4];
        self.read_config(offset, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Writes a byte.
    fn write8(&self, offset: u16, value: u8) -> io::Result<()> {
        self.write_config(offset, &[value])
    }

    /// Writes a little-endian 16-bit field.
    fn write16(&self, offset: u16, value: u16) -> io::Result<()> {
        self.write_config(offset, &value.to_le_bytes())
    }

    /// Writes a little-endian 32-bit field.
    fn write32(&self, offset: u16, value: u32) -> io::Result<()> {
        self.write_config(offset, &value.to_le_bytes())
    }

    /// The command register.
    fn command(&self) -> io::Result<regs::Command> {
        self.read16(regs::COMMAND).map(regs::Command)
    }

    /// Turns bus mastering (the device's permission to DMA) on, with memory decoding, or off. vfio-pci leaves bus
    /// mastering off; a driver must switch it on before the device touches any ring. Returns the new value.
    fn set_bus_master(&self, on: bool) -> io::Result<regs::Command> {
        let old = self.command()?;
        let mut new = old;
        new.set_bus_master(on);
        if on {
            new.set_memory_space(true);
        }
        if new != old {
            self.write16(regs::COMMAND, new.0)?;
        }
        Ok(new)
    }

    /// The standard capability list, in list order. Malformed lists (loops, pointers into the header) end the
    /// walk instead of looping.
    fn capabilities(&self) -> io::Result<Vec<Capability>> {
        let mut out = Vec::new();
        if !regs::Status(self.read16(regs::STATUS)?).cap_list() {
            return Ok(out);
        }
        let mut ptr = self.read8(regs::CAPABILITY_LIST)? & !3;
        // At most (256 - 64) / 4 entries fit; more means a loop.
        while ptr >= 0x40 && out.len() < 48 {
            let id = self.read8(ptr as u16)?;
            if out.iter().any(|c: &Capability| c.offset == ptr as u16) {
                break;
            }
            out.push(Capability { id, offset: ptr as u16 });
            ptr = self.read8(ptr as u16 + 1)? & !3;
        }
        Ok(out)
    }

    /// The first capability with ID `id`.
    fn find_capability(&self, id: u8) -> io::Result<Option<Capability>> {
        Ok(self.capabilities()?.into_iter().find(|c| c.id == id))
    }
}

fn range_check(len: usize, offset: u16, n: usize) -> io::Result<std::ops::Range<usize>> {
    let start = offset as usize;
    match start.checked_add(n) {
        Some(end) if end <= len => Ok(start..end),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("config space access at {offset:#x}+{n} past its {len:#x} bytes"),
        )),
    }
}

/// A configuration space in memory (tests, models): reads and writes go straight to the bytes.
impl ConfigSpace for Mutex<Vec<u8>> {
    fn read_config(&self, offset: u16, buf: &mut [u8]) -> io::Result<()> {
        let bytes = self.lock().unwrap_or_else(|e| e.into_inner());
        let range = range_check(bytes.len(), offset, buf.len())?;
        buf.copy_from_slice(&bytes[range]);
        Ok(())
    }

    fn write_config(&self, offset: u16, buf: &[u8]) -> io::Result<()> {
        let mut bytes = self.lock().unwrap_or_else(|e| e.into_inner());
        let range = range_check(bytes.len(), offset, buf.len())?;
        bytes[range].copy_from_slice(buf);
        Ok(())
    }
}

/// A read-only configuration space in memory: writes fail.
impl ConfigSpace for [u8] {
    fn read_config(&self, offset: u16, buf: &mut [u8]) -> io::Result<()> {
        let range = range_check(self.len(), offset, buf.len())?;
        buf.copy_from_slice(&self[range]);
        Ok(())
    }

    fn write_config(&self, offset: u16, _buf: &[u8]) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::PermissionDenied, format!("read-only config space (write at {offset:#x})")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_walk_and_bus_master() {
        let mut c = vec![0u8; 256];
        c[0..2].copy_from_slice(&0x1af4u16.to_le_bytes());
        let mut status = regs::Status(0);
        status.set_cap_list(true);
        c[6..8].copy_from_slice(&status.0.to_le_bytes());
        c[0x34] = 0x40;
        c[0x40] = regs::CAP_ID_VENDOR;
        c[0x41] = 0x50;
        c[0x50] = regs::CAP_ID_MSIX;
        c[0x51] = 0x60;
        c[0x60] = regs::CAP_ID_VENDOR;
        c[0x61] = 0x40; // loops back
        let cfg = Mutex::new(c);
        let caps = cfg.capabilities().unwrap();
        assert_eq!(caps.iter().map(|c| (c.id, c.offset)).collect::<Vec<_>>(), [(9, 0x40), (0x11, 0x50), (9, 0x60)]);
        assert_eq!(cfg.find_capability(regs::CAP_ID_MSIX).unwrap().unwrap().offset, 0x50);
        assert_eq!(cfg.set_bus_master(true).unwrap(), regs::Command(0x6), "bus master and memory decoding");
        assert_eq!(cfg.read16(regs::COMMAND).unwrap(), 0x6);
        assert_eq!(cfg.set_bus_master(false).unwrap(), regs::Command(0x2), "memory decoding stays on");
        assert_eq!(cfg.read16(regs::COMMAND).unwrap(), 0x2);
        assert_eq!(cfg.read16(0).unwrap(), 0x1af4);
        assert!(cfg.read32(254).is_err());
    }
}
