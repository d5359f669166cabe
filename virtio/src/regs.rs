//! Registers of a virtio 1.x modern PCI device: the vendor capabilities that locate its structures, the common
//! configuration, notifications, ISR and the virtio-net device configuration (docs/hw/virtio.md §4.1.4, §5.1.4).
//!
//! All volatile access sits in [`RegisterSpace`] implementations (a VFIO BAR, `drvkit::bar::MmioBar`, or memory in
//! tests);
//! driver code goes through [`Window`]s of a BAR and the typed [`CommonCfg`] accessors and the device-configuration window.

use std::sync::Arc;

pub use drvkit::bar::RegisterSpace;

/// Feature bits (docs/hw/virtio.md §5.1.3 and §6).
pub mod feature {
    /// Device handles packets with partial checksum (TX checksum offload).
    pub const NET_CSUM: u64 = 1 << 0;
    /// Driver handles packets with partial checksum (RX).
    pub const NET_GUEST_CSUM: u64 = 1 << 1;
    /// Control channel offloads reconfiguration.
    pub const NET_CTRL_GUEST_OFFLOADS: u64 = 1 << 2;
    /// Device reports its maximum MTU.
    pub const NET_MTU: u64 = 1 << 3;
    /// Device has a MAC address in its configuration.
    pub const NET_MAC: u64 = 1 << 5;
    /// Driver can merge receive buffers.
    pub const NET_MRG_RXBUF: u64 = 1 << 15;
    /// Configuration status field (link) available.
    pub const NET_STATUS: u64 = 1 << 16;
    /// Control virtqueue.
    pub const NET_CTRL_VQ: u64 = 1 << 17;
    /// Control channel RX mode (promiscuous, all-multicast).
    pub const NET_CTRL_RX: u64 = 1 << 18;
    /// Multiple queue pairs (steering through the control queue).
    pub const NET_MQ: u64 = 1 << 22;
    /// MAC address set through the control queue.
    pub const NET_CTRL_MAC_ADDR: u64 = 1 << 23;
    /// Indirect descriptors.
    pub const RING_INDIRECT_DESC: u64 = 1 << 28;
    /// used_event / avail_event notification suppression.
    pub const RING_EVENT_IDX: u64 = 1 << 29;
    /// Virtio 1.x (modern) device.
    pub const VERSION_1: u64 = 1 << 32;
    /// Device DMA goes through the platform's IOMMU (must be accepted when offered).
    pub const ACCESS_PLATFORM: u64 = 1 << 33;
    /// Packed virtqueues.
    pub const RING_PACKED: u64 = 1 << 34;
    /// Buffers are used in the order they were made available.
    pub const IN_ORDER: u64 = 1 << 35;
    /// Link speed and duplex in the configuration.
    pub const NET_SPEED_DUPLEX: u64 = 1 << 63;

    /// Human-readable names of the bits this driver knows (for logs and errors).
    pub fn names(bits: u64) -> Vec<&'static str> {
        const ALL: &[(u64, &str)] = &[
            (NET_CSUM, "CSUM"),
            (NET_GUEST_CSUM, "GUEST_CSUM"),
            (NET_CTRL_GUEST_OFFLOADS, "CTRL_GUEST_OFFLOADS"),
            (NET_MTU, "MTU"),
            (NET_MAC, "MAC"),
            (NET_MRG_RXBUF, "MRG_RXBUF"),
            (NET_STATUS, "STATUS"),
            (NET_CTRL_VQ, "CTRL_VQ"),
            (NET_CTRL_RX, "CTRL_RX"),
            (NET_MQ, "MQ"),
            (NET_CTRL_MAC_ADDR, "CTRL_MAC_ADDR"),
            (RING_INDIRECT_DESC, "INDIRECT_DESC"),
            (RING_EVENT_IDX, "EVENT_IDX"),
            (VERSION_1, "VERSION_1"),
            (ACCESS_PLATFORM, "ACCESS_PLATFORM"),
            (RING_PACKED, "RING_PACKED"),
            (IN_ORDER, "IN_ORDER"),
            (NET_SPEED_DUPLEX, "SPEED_DUPLEX"),
        ];
        ALL.iter().filter(|(b, _)| bits & b != 0).map(|(_, n)| *n).collect()
    }
}

/// Device status bits (docs/hw/virtio.md §2.1).
pub mod status {
    /// The guest found the device.
    pub const ACKNOWLEDGE: u8 = 1;
    /// The guest knows how to drive it.
    pub const DRIVER: u8 = 2;
    /// The driver is ready.
    pub const DRIVER_OK: u8 = 4;
    /// Feature negotiation is complete.
    pub const FEATURES_OK: u8 = 8;
    /// The device hit an error and must be reset.
    pub const DEVICE_NEEDS_RESET: u8 = 64;
    /// The driver gave up.
    pub const FAILED: u8 = 128;
}

/// Vendor capability `cfg_type` values (docs/hw/virtio.md §4.1.4).
pub mod cfg_type {
    /// Common configuration.
    pub const COMMON: u8 = 1;
    /// Notifications.
    pub const NOTIFY: u8 = 2;
    /// ISR status.
    pub const ISR: u8 = 3;
    /// Device-specific configuration.
    pub const DEVICE: u8 = 4;
    /// PCI configuration access window.
    pub const PCI: u8 = 5;
}

/// `queue_msix_vector` / `config_msix_vector` value for "no interrupt", and what the device reads back when it could
/// not map a vector (docs/hw/virtio.md §4.1.5.1.2).
pub const NO_VECTOR: u16 = 0xffff;

/// Offsets in `struct virtio_pci_common_cfg` (docs/hw/virtio.md §4.1.4.3), each accessed at its natural width.
pub mod common {
    /// u32: which 32-bit half of the device features `DEVICE_FEATURE` shows.
    pub const DEVICE_FEATURE_SELECT: usize = 0x00;
    /// u32 (read-only): device features, half selected.
    pub const DEVICE_FEATURE: usize = 0x04;
    /// u32: which half of the driver features `DRIVER_FEATURE` shows.
    pub const DRIVER_FEATURE_SELECT: usize = 0x08;
    /// u32: driver (accepted) features, half selected.
    pub const DRIVER_FEATURE: usize = 0x0c;
    /// u16: MSI-X vector for configuration changes.
    pub const CONFIG_MSIX_VECTOR: usize = 0x10;
    /// u16 (read-only): number of virtqueues.
    pub const NUM_QUEUES: usize = 0x12;
    /// u8: device status.
    pub const DEVICE_STATUS: usize = 0x14;
    /// u8 (read-only): configuration generation.
    pub const CONFIG_GENERATION: usize = 0x15;
    /// u16: queue the fields below refer to.
    pub const QUEUE_SELECT: usize = 0x16;
    /// u16: queue size (max on reset; the driver may lower it).
    pub const QUEUE_SIZE: usize = 0x18;
    /// u16: MSI-X vector of the queue.
    pub const QUEUE_MSIX_VECTOR: usize = 0x1a;
    /// u16: queue enabled.
    pub const QUEUE_ENABLE: usize = 0x1c;
    /// u16 (read-only): notification offset, in multiples of `notify_off_multiplier`.
    pub const QUEUE_NOTIFY_OFF: usize = 0x1e;
    /// u64: descriptor table address.
    pub const QUEUE_DESC: usize = 0x20;
    /// u64: driver (available) ring address.
    pub const QUEUE_DRIVER: usize = 0x28;
    /// u64: device (used) ring address.
    pub const QUEUE_DEVICE: usize = 0x30;
    /// Size of the structure this driver uses.
    pub const LEN: usize = 0x38;
}

/// Offsets in `struct virtio_net_config` (docs/hw/virtio.md §5.1.4).
pub mod netcfg {
    /// `u8[6]`: MAC address (with `NET_MAC`).
    pub const MAC: usize = 0;
    /// u16: link status (with `NET_STATUS`).
    pub const STATUS: usize = 6;
    /// u16: most queue pairs (with `NET_MQ`).
    pub const MAX_VIRTQUEUE_PAIRS: usize = 8;
    /// u16: MTU (with `NET_MTU`).
    pub const MTU: usize = 10;
    /// u32: speed in Mb/s (with `NET_SPEED_DUPLEX`).
    pub const SPEED: usize = 12;
    /// u8: duplex (1 full).
    pub const DUPLEX: usize = 16;
    /// `STATUS` bit: link up.
    pub const S_LINK_UP: u16 = 1;
    /// `STATUS` bit: announce requested.
    pub const S_ANNOUNCE: u16 = 2;
}

/// One structure inside a BAR: `[offset, offset + len)` of region `io`.
#[derive(Debug)]
pub struct Window<B> {
    io: Arc<B>,
    offset: usize,
    len: usize,
}

impl<B> Clone for Window<B> {
    fn clone(&self) -> Self {
        Window { io: self.io.clone(), offset: self.offset, len: self.len }
    }
}

impl<B: RegisterSpace> Window<B> {
    /// A window of `io`; `None` if it does not fit.
    pub fn new(io: Arc<B>, offset: usize, len: usize) -> Option<Self> {
        (offset.checked_add(len)? <= io.len()).then_some(Window { io, offset, len })
    }

    /// Length of the window.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty window.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    fn off(&self, offset: usize, width: usize) -> usize {
        assert!(offset + width <= self.len, "access at {offset:#x}+{width} outside a {:#x}-byte window", self.len);
        self.offset + offset
    }

    /// Reads a byte.
    #[inline(always)]
    pub fn read8(&self, offset: usize) -> u8 {
        self.io.read8(self.off(offset, 1))
    }
    /// Reads a u16.
    #[inline(always)]
    pub fn read16(&self, offset: usize) -> u16 {
        self.io.read16(self.off(offset, 2))
    }
    /// Reads a u32.
    #[inline(always)]
    pub fn read32(&self, offset: usize) -> u32 {
        self.io.read32(self.off(offset, 4))
    }
    /// Writes a byte.
    #[inline(always)]
    pub fn write8(&self, offset: usize, v: u8) {
        self.io.write8(self.off(offset, 1), v)
    }
    /// Writes a u16.
    #[inline(always)]
    pub fn write16(&self, offset: usize, v: u16) {
        self.io.write16(self.off(offset, 2), v)
    }
    /// Writes a u32.
    #[inline(always)]
    pub fn write32(&self, offset: usize, v: u32) {
        self.io.write32(self.off(offset, 4), v)
    }
    /// Writes a u64 as two u32 halves, low first (allowed for the 64-bit common configuration fields).
    #[inline(always)]
    pub fn write64(&self, offset: usize, v: u64) {
        self.write32(offset, v as u32);
        self.write32(offset + 4, (v >> 32) as u32);
    }
}

/// The common configuration structure, typed.
#[derive(Debug, Clone)]
pub struct CommonCfg<B>(pub Window<B>);

impl<B: RegisterSpace> CommonCfg<B> {
    /// All 64 device feature bits.
    pub fn device_features(&self) -> u64 {
        self.0.write32(common::DEVICE_FEATURE_SELECT, 0);
        let lo = self.0.read32(common::DEVICE_FEATURE) as u64;
        self.0.write32(common::DEVICE_FEATURE_SELECT, 1);
        let hi = self.0.read32(common::DEVICE_FEATURE) as u64;
        hi << 32 | lo
    }

    /// Writes the accepted feature bits.
    pub fn set_driver_features(&self, f: u64) {
        self.0.write32(common::DRIVER_FEATURE_SELECT, 0);
        self.0.write32(common::DRIVER_FEATURE, f as u32);
        self.0.write32(common::DRIVER_FEATURE_SELECT, 1);
        self.0.write32(common::DRIVER_FEATURE, (f >> 32) as u32);
    }

    /// Device status.
    pub fn status(&self) -> u8 {
        self.0.read8(common::DEVICE_STATUS)
    }

    /// Sets the device status (0 resets the device).
    pub fn set_status(&self, s: u8) {
        self.0.write8(common::DEVICE_STATUS, s)
    }

    /// Number of virtqueues.
    pub fn num_queues(&self) -> u16 {
        self.0.read16(common::NUM_QUEUES)
    }

    /// Configuration generation (changes when the device configuration changes).
    pub fn config_generation(&self) -> u8 {
        self.0.read8(common::CONFIG_GENERATION)
    }

    /// Selects queue `q` for the queue fields.
    pub fn select_queue(&self, q: u16) {
        self.0.write16(common::QUEUE_SELECT, q)
    }

    /// Size of the selected queue (0: it does not exist).
    pub fn queue_size(&self) -> u16 {
        self.0.read16(common::QUEUE_SIZE)
    }

    /// Sets the size of the selected queue.
    pub fn set_queue_size(&self, n: u16) {
        self.0.write16(common::QUEUE_SIZE, n)
    }

    /// Sets the MSI-X vector of the selected queue.
    pub fn set_queue_msix_vector(&self, v: u16) {
        self.0.write16(common::QUEUE_MSIX_VECTOR, v)
    }

    /// The MSI-X vector the device mapped to the selected queue ([`NO_VECTOR`]: none, or the mapping failed).
    pub fn queue_msix_vector(&self) -> u16 {
        self.0.read16(common::QUEUE_MSIX_VECTOR)
    }

    /// Sets the MSI-X vector of configuration changes.
    pub fn set_config_msix_vector(&self, v: u16) {
        self.0.write16(common::CONFIG_MSIX_VECTOR, v)
    }

    /// The MSI-X vector the device mapped to configuration changes ([`NO_VECTOR`]: none).
    pub fn config_msix_vector(&self) -> u16 {
        self.0.read16(common::CONFIG_MSIX_VECTOR)
    }

    /// Notification offset of the selected queue.
    pub fn queue_notify_off(&self) -> u16 {
        self.0.read16(common::QUEUE_NOTIFY_OFF)
    }

    /// Ring addresses of the selected queue.
    pub fn set_queue_addrs(&self, desc: u64, driver: u64, device: u64) {
        self.0.write64(common::QUEUE_DESC, desc);
        self.0.write64(common::QUEUE_DRIVER, driver);
        self.0.write64(common::QUEUE_DEVICE, device);
    }

    /// Enables the selected queue.
    pub fn enable_queue(&self) {
        self.0.write16(common::QUEUE_ENABLE, 1)
    }

    /// Is the selected queue enabled.
    pub fn queue_enabled(&self) -> bool {
        self.0.read16(common::QUEUE_ENABLE) != 0
    }
}

/// One parsed `virtio_pci_cap` (docs/hw/virtio.md §4.1.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VirtioCap {
    /// `cfg_type` ([`cfg_type`]).
    pub cfg_type: u8,
    /// BAR number (0..=5).
    pub bar: u8,
    /// Offset of the structure in the BAR.
    pub offset: u32,
    /// Length of the structure.
    pub length: u32,
    /// `notify_off_multiplier` (notify capability only).
    pub notify_off_multiplier: u32,
    /// Offset of the capability in configuration space.
    pub cap_offset: u16,
}

/// Offsets inside a `virtio_pci_cap`.
pub mod cap {
    /// u8: capability length.
    pub const CAP_LEN: u16 = 2;
    /// u8: structure type.
    pub const CFG_TYPE: u16 = 3;
    /// u8: BAR.
    pub const BAR: u16 = 4;
    /// u32: offset in the BAR.
    pub const OFFSET: u16 = 8;
    /// u32: length.
    pub const LENGTH: u16 = 12;
    /// u32: notify offset multiplier (notify capability).
    pub const NOTIFY_OFF_MULTIPLIER: u16 = 16;
    /// Bytes of a `virtio_pci_cap`.
    pub const SIZE: u8 = 16;
}

/// Walks the capability list of `cfg` and parses the virtio vendor capabilities, in list order.
pub fn virtio_caps<C: drvkit::pci::ConfigSpace + ?Sized>(cfg: &C) -> std::io::Result<Vec<VirtioCap>> {
    let mut out = Vec::new();
    for c in cfg.capabilities()? {
        if c.id != drvkit::pci::config::regs::CAP_ID_VENDOR {
            continue;
        }
        let o = c.offset;
        let len = cfg.read8(o + cap::CAP_LEN)?;
        if len < cap::SIZE {
            continue;
        }
        let cfg_type = cfg.read8(o + cap::CFG_TYPE)?;
        let notify_off_multiplier = if cfg_type == cfg_type::NOTIFY && len >= cap::SIZE + 4 {
            cfg.read32(o + cap::NOTIFY_OFF_MULTIPLIER)?
        } else {
            0
        };
        out.push(VirtioCap {
            cfg_type,
            bar: cfg.read8(o + cap::BAR)?,
            offset: cfg.read32(o + cap::OFFSET)?,
            length: cfg.read32(o + cap::LENGTH)?,
            notify_off_multiplier,
            cap_offset: o,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dev::Transport;
    use std::sync::Mutex;

    /// A BAR in memory.
    #[derive(Debug)]
    struct MemBar(Mutex<Vec<u8>>);

    impl RegisterSpace for MemBar {
        fn read32(&self, offset: usize) -> u32 {
            let b = self.0.lock().unwrap();
            u32::from_le_bytes(b[offset..offset + 4].try_into().unwrap())
        }
        fn write32(&self, offset: usize, value: u32) {
            self.0.lock().unwrap()[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
        }
        fn len(&self) -> usize {
            self.0.lock().unwrap().len()
        }
    }

    /// Config space with QEMU's virtio-net-pci layout: caps at 0x40.. pointing into BAR 4.
    fn qemu_like_config(skip_common: bool, notify_len: u32) -> Mutex<Vec<u8>> {
        let mut c = vec![0u8; 256];
        c[0..2].copy_from_slice(&0x1af4u16.to_le_bytes());
        c[2..4].copy_from_slice(&0x1041u16.to_le_bytes());
        c[6] = 0x10; // capability list
        c[0x34] = 0x40;
        let caps: &[(u8, u32, u32, u8)] = &[
            (cfg_type::COMMON, 0x0, 0x1000, 16),
            (cfg_type::ISR, 0x1000, 0x1000, 16),
            (cfg_type::DEVICE, 0x2000, 0x1000, 16),
            (cfg_type::NOTIFY, 0x3000, notify_len, 20),
        ];
        let mut at = 0x40usize;
        let caps: Vec<_> = caps.iter().filter(|c| !(skip_common && c.0 == cfg_type::COMMON)).collect();
        for (i, &&(ty, off, len, caplen)) in caps.iter().enumerate() {
            let next = if i + 1 < caps.len() { at + 0x14 } else { 0x90 };
            c[at] = 0x09;
            c[at + 1] = next as u8;
            c[at + 2] = caplen;
            c[at + 3] = ty;
            c[at + 4] = 4; // BAR 4
            c[at + 8..at + 12].copy_from_slice(&off.to_le_bytes());
            c[at + 12..at + 16].copy_from_slice(&len.to_le_bytes());
            if ty == cfg_type::NOTIFY {
                c[at + 16..at + 20].copy_from_slice(&4u32.to_le_bytes());
            }
            at += 0x14;
        }
        c[0x90] = 0x11; // MSI-X, end of list
        Mutex::new(c)
    }

    #[test]
    fn capabilities_are_parsed_as_qemu_lays_them_out() {
        let cfg = qemu_like_config(false, 0x1000);
        let caps = virtio_caps(&cfg).unwrap();
        let got: Vec<_> = caps.iter().map(|c| (c.cfg_type, c.bar, c.offset, c.length)).collect();
        assert_eq!(got, [(1, 4, 0, 0x1000), (3, 4, 0x1000, 0x1000), (4, 4, 0x2000, 0x1000), (2, 4, 0x3000, 0x1000)]);
        assert_eq!(caps[3].notify_off_multiplier, 4);
        let mut asked = Vec::new();
        let t = Transport::new("test", &caps, |n| {
            asked.push(n);
            Ok(Arc::new(MemBar(Mutex::new(vec![0u8; 0x4000]))))
        })
        .unwrap();
        assert_eq!(asked, [4], "BAR 4 mapped once");
        assert_eq!(t.notify_mult, 4);
        assert_eq!(t.device.len(), 0x1000);
        // Typed common-configuration access lands at the right offsets.
        t.common.set_status(status::ACKNOWLEDGE);
        t.common.select_queue(3);
        t.common.set_queue_addrs(0x1122_3344_5566_7788, 2, 3);
        assert_eq!(t.common.status(), status::ACKNOWLEDGE);
        assert_eq!(t.common.0.read16(common::QUEUE_SELECT), 3);
        assert_eq!(t.common.0.read32(common::QUEUE_DESC), 0x5566_7788);
        assert_eq!(t.common.0.read32(common::QUEUE_DESC + 4), 0x1122_3344);
    }

    #[test]
    fn missing_or_misplaced_structures_are_refused_with_the_reason() {
        let bar = || Ok(Arc::new(MemBar(Mutex::new(vec![0u8; 0x4000]))));
        let caps = virtio_caps(&qemu_like_config(true, 0x1000)).unwrap();
        let err = Transport::<MemBar>::new("dev0", &caps, |_| bar()).unwrap_err().to_string();
        assert!(err.contains("no common configuration capability") && err.contains("modern"), "{err}");
        let caps = virtio_caps(&qemu_like_config(false, 0x2000)).unwrap();
        let err = Transport::<MemBar>::new("dev0", &caps, |_| bar()).unwrap_err().to_string();
        assert!(err.contains("outside BAR 4"), "{err}");
    }

    #[test]
    fn feature_names() {
        assert_eq!(feature::names(feature::VERSION_1 | feature::ACCESS_PLATFORM), ["VERSION_1", "ACCESS_PLATFORM"]);
    }
}
