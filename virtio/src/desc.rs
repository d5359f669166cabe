//! Split-virtqueue structures (docs/hw/virtio.md §2.7) and the virtio-net header (§5.1.6), as the device sees them in
//! memory: little-endian, with sizes checked at compile time. Descriptor flags stay `const` bits (not
//! `bitfield`): they are independent single bits OR'd into a descriptor written in one go on the hot path.

/// One descriptor of the descriptor table.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VirtqDesc {
    /// Buffer IOVA.
    pub addr: u64,
    /// Buffer length.
    pub len: u32,
    /// [`VirtqDesc::F_NEXT`], [`VirtqDesc::F_WRITE`], [`VirtqDesc::F_INDIRECT`].
    pub flags: u16,
    /// Next descriptor of the chain when `F_NEXT`.
    pub next: u16,
}
const _: () = assert!(std::mem::size_of::<VirtqDesc>() == 16);

impl VirtqDesc {
    /// The chain continues in `next`.
    pub const F_NEXT: u16 = 1;
    /// The device writes this buffer (RX); otherwise it reads it (TX).
    pub const F_WRITE: u16 = 2;
    /// The buffer holds a table of indirect descriptors.
    pub const F_INDIRECT: u16 = 4;

    /// A descriptor in device byte order.
    pub fn new(addr: u64, len: u32, flags: u16, next: u16) -> Self {
        VirtqDesc { addr: addr.to_le(), len: len.to_le(), flags: flags.to_le(), next: next.to_le() }
    }
}

/// Header of the available (driver) ring: `flags`, `idx`, then `ring[size]` of u16, then `used_event`.
pub mod avail {
    /// u16 flags offset.
    pub const FLAGS: usize = 0;
    /// u16 index offset (next slot the driver fills, free-running).
    pub const IDX: usize = 2;
    /// Offset of `ring[0]`.
    pub const RING: usize = 4;
    /// `flags`: the driver does not want interrupts (ignored with EVENT_IDX).
    pub const F_NO_INTERRUPT: u16 = 1;
    /// Bytes of the ring for `size` entries, `used_event` included.
    pub const fn bytes(size: u16) -> usize {
        6 + 2 * size as usize
    }
}

/// Header of the used (device) ring: `flags`, `idx`, then `ring[size]` of [`UsedElem`], then `avail_event`.
pub mod used {
    /// u16 flags offset.
    pub const FLAGS: usize = 0;
    /// u16 index offset (next slot the device fills, free-running).
    pub const IDX: usize = 2;
    /// Offset of `ring[0]`.
    pub const RING: usize = 4;
    /// `flags`: the device does not want notifications (without EVENT_IDX).
    pub const F_NO_NOTIFY: u16 = 1;
    /// Bytes of the ring for `size` entries, `avail_event` included.
    pub const fn bytes(size: u16) -> usize {
        6 + 8 * size as usize
    }
}

/// One element of the used ring.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsedElem {
    /// Head descriptor of the chain the device is done with.
    pub id: u32,
    /// Bytes the device wrote into the chain.
    pub len: u32,
}
const _: () = assert!(std::mem::size_of::<UsedElem>() == 8);

/// `struct virtio_net_hdr_v1` (12 bytes, the layout for VERSION_1 devices whatever MRG_RXBUF says).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetHdr {
    /// [`NetHdr::F_NEEDS_CSUM`], [`NetHdr::F_DATA_VALID`].
    pub flags: u8,
    /// GSO type ([`NetHdr::GSO_NONE`]).
    pub gso_type: u8,
    /// Length of the headers to copy for each GSO segment.
    pub hdr_len: u16,
    /// GSO segment size.
    pub gso_size: u16,
    /// Where checksumming starts (with `F_NEEDS_CSUM`).
    pub csum_start: u16,
    /// Where, after `csum_start`, the checksum goes.
    pub csum_offset: u16,
    /// Buffers this frame spans (RX with MRG_RXBUF; 1 otherwise).
    pub num_buffers: u16,
}
const _: () = assert!(std::mem::size_of::<NetHdr>() == NetHdr::LEN);

impl NetHdr {
    /// Size of the header before each frame.
    pub const LEN: usize = 12;
    /// The checksum from `csum_start` is partial and must be completed (TX: by the device).
    pub const F_NEEDS_CSUM: u8 = 1;
    /// RX: the device validated the checksum.
    pub const F_DATA_VALID: u8 = 2;
    /// No segmentation.
    pub const GSO_NONE: u8 = 0;

    /// Serialises the header (little-endian).
    pub fn to_bytes(&self) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
        b[10..12].copy_from_slice(&self.num_buffers.to_le_bytes());
        b
    }

    /// Parses a header.
    pub fn from_bytes(b: &[u8; 12]) -> Self {
        let u = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        NetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
            num_buffers: u(10),
        }
    }
}

/// Control queue classes and commands (docs/hw/virtio.md §5.1.6.5).
pub mod ctrl {
    /// RX mode class.
    pub const CLASS_RX: u8 = 0;
    /// Promiscuous on/off (u8 argument).
    pub const RX_PROMISC: u8 = 0;
    /// All-multicast on/off (u8 argument).
    pub const RX_ALLMULTI: u8 = 1;
    /// MAC class.
    pub const CLASS_MAC: u8 = 1;
    /// Set the MAC address (6-byte argument).
    pub const MAC_ADDR_SET: u8 = 1;
    /// Multiqueue class.
    pub const CLASS_MQ: u8 = 4;
    /// Number of queue pairs in use (u16 argument).
    pub const MQ_VQ_PAIRS_SET: u8 = 0;
    /// Acknowledgement: success.
    pub const OK: u8 = 0;
    /// Acknowledgement: failure.
    pub const ERR: u8 = 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_header_layout() {
        let h = NetHdr {
            flags: NetHdr::F_NEEDS_CSUM,
            gso_type: 0,
            hdr_len: 0x0102,
            gso_size: 0x0304,
            csum_start: 34,
            csum_offset: 6,
            num_buffers: 1,
        };
        let b = h.to_bytes();
        assert_eq!(b, [1, 0, 2, 1, 4, 3, 34, 0, 6, 0, 1, 0]);
        assert_eq!(NetHdr::from_bytes(&b), h);
        assert_eq!(std::mem::align_of::<VirtqDesc>(), 16);
        let d = VirtqDesc::new(0x1000, 60, VirtqDesc::F_WRITE, 0);
        assert_eq!(u64::from_le(d.addr), 0x1000);
    }
}
