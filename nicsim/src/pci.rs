//! PCI identity of the models, for probing by vendor:device (docs/hw/ixgbe.md §1).

/// Intel's PCI vendor ID.
pub const VENDOR_INTEL: u16 = 0x8086;
/// X540-AT2 (dual port) device ID.
pub const DEVICE_X540T: u16 = 0x1528;
/// X540-AT2 BAR0 size: 2 MiB (CSR + flash window).
pub const X540_BAR0_LEN: usize = 2 << 20;
/// 82599ES (SFP+, X520) device ID (docs/hw/ixgbe.md §1).
pub const DEVICE_82599_SFP: u16 = 0x10FB;
/// 82599ES BAR0 size: 512 KiB typical (docs/hw/ixgbe.md §1: NVM dependent; 1 MiB and 16 MiB seen on OEM boards).
pub const X82599_BAR0_LEN: usize = 512 << 10;
/// 82599ES BAR2: a 32-byte I/O BAR (docs/hw/ixgbe.md §1).
pub const X82599_BAR2_LEN: usize = 32;
/// X540 BAR4 size (MSI-X table and PBA): 16 KiB.
pub const X540_BAR4_LEN: usize = 16 << 10;

/// What a model presents on the PCI bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PciIdentity {
    /// Vendor ID.
    pub vendor: u16,
    /// Device ID.
    pub device: u16,
    /// PCI class code (0x020000: Ethernet controller).
    pub class: u32,
    /// BAR sizes in bytes, index = BAR number (0 = unimplemented).
    pub bars: [usize; 6],
    /// MSI-X vectors.
    pub msix_vectors: u16,
}

impl PciIdentity {
    /// The X540-AT2 with a BAR0 of `bar0_len` bytes.
    pub const fn x540(bar0_len: usize) -> Self {
        PciIdentity {
            vendor: VENDOR_INTEL,
            device: DEVICE_X540T,
            class: 0x02_0000,
            bars: [bar0_len, 0, 0, 0, X540_BAR4_LEN, 0],
            msix_vectors: 64,
        }
    }

    /// The 82599ES (SFP+) with a BAR0 of `bar0_len` bytes (docs/hw/ixgbe.md §1).
    pub const fn x82599(bar0_len: usize) -> Self {
        PciIdentity {
            vendor: VENDOR_INTEL,
            device: DEVICE_82599_SFP,
            class: 0x02_0000,
            bars: [bar0_len, 0, X82599_BAR2_LEN, 0, X540_BAR4_LEN, 0],
            msix_vectors: 64,
        }
    }

    /// BAR0 size.
    pub const fn bar0_len(&self) -> usize {
        self.bars[0]
    }
}
