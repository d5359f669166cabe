//! The packet buffer: a 128-byte metadata header followed by headroom and data room, all in DMA memory.

use std::ptr::NonNull;

use crate::pool::PoolInner;
use crate::TxOffload;

/// "Not received on any port".
pub const NO_PORT: u16 = u16::MAX;

pub(crate) const STATE_FREE: u32 = 0x46524545; // "FREE"
pub(crate) const STATE_IN_USE: u32 = 0x55534544; // "USED"

/// The per-packet words that allocation restores, as one 8-byte value (DPDK's "rearm" word: one store sets the
/// data start, segment count, input port and buffer length of a fresh buffer).
#[repr(C, align(8))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rearm {
    pub(crate) data_off: u16,
    pub(crate) nb_segs: u16,
    pub(crate) port: u16,
    pub(crate) buf_len: u16,
}

impl Rearm {
    /// The word as one 8-byte value, in memory order.
    #[inline(always)]
    pub(crate) fn to_bits(self) -> u64 {
        // SAFETY: four u16 in a repr(C) struct of 8 bytes: no padding, every bit pattern a valid u64.
        unsafe { std::mem::transmute::<Rearm, u64>(self) }
    }
}

/// Two adjacent 32-bit fields as the 8-byte value that stores them with one write (`first` at the lower address).
#[inline(always)]
const fn pack32(first: u32, second: u32) -> u64 {
    if cfg!(target_endian = "little") {
        first as u64 | (second as u64) << 32
    } else {
        (first as u64) << 32 | second as u64
    }
}

/// Two adjacent 16-bit fields as one 32-bit value (`first` at the lower address).
#[inline(always)]
const fn pack16(first: u16, second: u16) -> u32 {
    if cfg!(target_endian = "little") {
        first as u32 | (second as u32) << 16
    } else {
        (first as u32) << 16 | second as u32
    }
}

/// The rearm word of a driver's RX buffers: data start at the pool's headroom, one segment, the driver's input
/// port, the pool's buffer length. Made by [`crate::Mempool::rx_rearm`] and written into a buffer taken with
/// [`crate::Mempool::alloc_raw_bulk`] with one 8-byte store ([`RxRearm::apply`]), as DPDK drivers write their
/// `mbuf_initializer` at refill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxRearm {
    pub(crate) bits: u64,
    pub(crate) pool: *const PoolInner,
}

// SAFETY: the pool pointer is only compared (debug assertion), never dereferenced through this value.
unsafe impl Send for RxRearm {}
// SAFETY: as above.
unsafe impl Sync for RxRearm {}

impl RxRearm {
    /// Writes the rearm word into `hdr`: its data start, segment count, port and buffer length.
    ///
    /// # Safety
    /// `hdr` must be a buffer of the pool this value was made for (the buffer length comes from that pool), owned
    /// by the caller, a single segment (`next` null, as every buffer fresh from a pool is).
    #[inline(always)]
    pub unsafe fn apply(self, hdr: NonNull<MbufHeader>) {
        // SAFETY: the caller owns the header; `rearm` is an aligned 8-byte field of plain integers.
        unsafe {
            debug_assert!((*hdr.as_ptr()).pool == self.pool && (*hdr.as_ptr()).next.is_null());
            std::ptr::addr_of_mut!((*hdr.as_ptr()).rearm).cast::<u64>().write(self.bits);
        }
    }
}

/// What the fill of [`crate::PacketBatch::alloc_rx_with`] reports of the frame it wrote at the start of a fresh
/// buffer's data room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxFrame {
    /// Bytes written (data and packet length); at most the pool's data room.
    pub len: u16,
    /// Receive timestamp ([`Mbuf::timestamp`]).
    pub timestamp: u64,
}

/// Metadata at the start of every pool element, 128 bytes (two cache lines). Everything the RX, TX and free paths
/// touch is in the first line. The buffer itself starts right after the header (its address is derived, not
/// stored).
///
/// Free state (as DPDK's): a free element only guarantees `next` null, besides the fields fixed at pool creation
/// (`buf_iova`, `pool`, `index`); freeing a single-segment packet writes nothing into it. The per-packet fields are
/// restored on allocation instead: the user-facing allocations ([`crate::Mempool::alloc`],
/// [`crate::Mempool::alloc_bulk`], [`crate::PacketBatch::alloc_from`], [`crate::Mempool::adopt_raw`]) reset them
/// all, and a driver's raw allocation ([`crate::Mempool::alloc_raw_bulk`]) writes the rearm word
/// ([`RxRearm::apply`]) and the fields it reports on receive ([`Mbuf::set_rx_unchecked`]).
#[repr(C, align(64))]
#[derive(Debug)]
pub struct MbufHeader {
    // First cache line: the hot fields.
    pub(crate) buf_iova: u64,
    pub(crate) rearm: Rearm,
    pub(crate) ol_flags: u64,
    pub(crate) packet_type: u32,
    pub(crate) pkt_len: u32,
    pub(crate) data_len: u16,
    pub(crate) vlan_tci: u16,
    pub(crate) rss_hash: u32,
    pub(crate) tx_offload: u64,
    pub(crate) next: *mut MbufHeader,
    pub(crate) pool: *const PoolInner,
    // Second cache line: the rest.
    pub(crate) udata64: u64,
    pub(crate) timestamp: u64,
    pub(crate) index: u32,
    pub(crate) state: u32,
    _reserved: [u8; 40],
}

const _: () = assert!(std::mem::size_of::<MbufHeader>() == 128);
const _: () = assert!(std::mem::offset_of!(MbufHeader, pool) + 8 <= 64);

impl MbufHeader {
    pub(crate) fn new(buf_iova: u64, rearm: Rearm, pool: *const PoolInner, index: u32) -> Self {
        MbufHeader {
            buf_iova,
            rearm,
            ol_flags: 0,
            packet_type: 0,
            pkt_len: 0,
            data_len: 0,
            vlan_tci: 0,
            rss_hash: 0,
            tx_offload: 0,
            next: std::ptr::null_mut(),
            pool,
            udata64: 0,
            timestamp: 0,
            index,
            state: STATE_FREE,
            _reserved: [0; 40],
        }
    }

    /// First byte of the buffer (headroom included): right after the header.
    #[inline(always)]
    pub(crate) fn buf_addr(&self) -> *mut u8 {
        (self as *const MbufHeader as *mut u8).wrapping_add(std::mem::size_of::<MbufHeader>())
    }

    /// Puts the per-packet fields back to their allocation state (`next` is already null: the free state).
    /// Done on allocation by the user-facing paths.
    ///
    /// The fields are contiguous (`rearm` through `tx_offload`, 40 bytes), so this is written as one block of
    /// wide stores rather than eight narrow ones.
    #[inline(always)]
    pub(crate) fn reset(&mut self, rearm: Rearm) {
        self.write_block(ResetBlock {
            rearm: rearm.to_bits(),
            ol_flags: 0,
            type_len: 0,
            len_vlan_rss: 0,
            tx_offload: 0,
        });
    }

    /// Writes every per-packet field (`rearm` through `tx_offload`) at once: on x86-64 one 8-byte and two aligned
    /// 16-byte stores (the compiler otherwise emits five 8-byte ones, and this runs once per buffer allocated).
    #[inline(always)]
    pub(crate) fn write_block(&mut self, block: ResetBlock) {
        let h = (self as *mut MbufHeader).cast::<u8>();
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_set_epi64x, _mm_store_si128};
            use std::mem::offset_of;
            // SAFETY: the three stores cover exactly the fields from `rearm` to `tx_offload` (offsets checked
            // below: rearm, then ol_flags + packet_type + pkt_len, then data_len + vlan_tci + rss_hash +
            // tx_offload), plain integers inside `self`, which we borrow mutably; the two 16-byte ones are aligned
            // (16-byte offsets in a 64-byte aligned header). `_mm_set_epi64x` puts its second argument first in
            // memory.
            unsafe {
                h.add(offset_of!(MbufHeader, rearm)).cast::<u64>().write(block.rearm);
                let flags_type_len = _mm_set_epi64x(block.type_len as i64, block.ol_flags as i64);
                _mm_store_si128(h.add(offset_of!(MbufHeader, ol_flags)).cast(), flags_type_len);
                let len_vlan_rss_tx = _mm_set_epi64x(block.tx_offload as i64, block.len_vlan_rss as i64);
                _mm_store_si128(h.add(offset_of!(MbufHeader, data_len)).cast(), len_vlan_rss_tx);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: ResetBlock mirrors the header fields from `rearm` to `tx_offload` (offsets checked below), all
        // plain integers, inside `self`, which we borrow mutably.
        unsafe {
            h.add(std::mem::offset_of!(MbufHeader, rearm)).cast::<ResetBlock>().write(block)
        };
    }
}

/// The per-packet header fields (`rearm` to `tx_offload`) as one block: what `reset` restores, or what a fresh
/// buffer received whole holds ([`ResetBlock::received`]).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ResetBlock {
    /// The rearm word ([`Rearm::to_bits`]).
    rearm: u64,
    ol_flags: u64,
    /// packet_type, pkt_len.
    type_len: u64,
    /// data_len, vlan_tci, rss_hash.
    len_vlan_rss: u64,
    tx_offload: u64,
}

impl ResetBlock {
    /// A fresh buffer holding a frame of `len` bytes received whole: the rearm word `rearm` (data start, one
    /// segment, port, buffer length), data and packet length `len`, every other field 0. Exactly what a reset
    /// followed by [`Mbuf::set_len`] and [`Mbuf::set_port`] leaves.
    #[inline(always)]
    pub(crate) fn received(rearm: u64, len: u16) -> ResetBlock {
        ResetBlock {
            rearm,
            ol_flags: 0,
            type_len: pack32(0, len as u32),
            len_vlan_rss: pack32(pack16(len, 0), 0),
            tx_offload: 0,
        }
    }
}

/// The header fields a receive sets ([`Mbuf::set_rx_unchecked`]): `ResetBlock` without the rearm word.
#[repr(C)]
struct RxBlock {
    ol_flags: u64,
    type_len: u64,
    len_vlan_rss: u64,
    tx_offload: u64,
}

const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(ResetBlock, ol_flags) + std::mem::size_of::<RxBlock>() == std::mem::size_of::<ResetBlock>());
    assert!(
        offset_of!(MbufHeader, ol_flags).is_multiple_of(16)
            && offset_of!(MbufHeader, data_len).is_multiple_of(16)
            && std::mem::align_of::<MbufHeader>().is_multiple_of(16)
    );
    let base = offset_of!(MbufHeader, rearm);
    assert!(offset_of!(MbufHeader, ol_flags) - base == offset_of!(ResetBlock, ol_flags));
    assert!(offset_of!(MbufHeader, packet_type) - base == offset_of!(ResetBlock, type_len));
    assert!(offset_of!(MbufHeader, pkt_len) - base == offset_of!(ResetBlock, type_len) + 4);
    assert!(offset_of!(MbufHeader, data_len) - base == offset_of!(ResetBlock, len_vlan_rss));
    assert!(offset_of!(MbufHeader, vlan_tci) - base == offset_of!(ResetBlock, len_vlan_rss) + 2);
    assert!(offset_of!(MbufHeader, rss_hash) - base == offset_of!(ResetBlock, len_vlan_rss) + 4);
    assert!(offset_of!(MbufHeader, tx_offload) - base == offset_of!(ResetBlock, tx_offload));
    assert!(std::mem::size_of::<ResetBlock>() == 40);
    assert!(base % 8 == 0);
};

/// One packet buffer (or the first segment of a chain), owned. Dropping it returns it (and its chain) to its pool.
///
/// The data lives in DMA memory; [`Mbuf::data_iova`] is the address a NIC uses for it.
#[repr(transparent)]
pub struct Mbuf {
    hdr: NonNull<MbufHeader>,
}

// SAFETY: an Mbuf is the unique owner of its element (like a Box); the pool it returns to is thread-safe.
unsafe impl Send for Mbuf {}
// SAFETY: shared access only reads the element.
unsafe impl Sync for Mbuf {}

impl std::fmt::Debug for Mbuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mbuf")
            .field("index", &self.hdr().index)
            .field("data_len", &self.data_len())
            .field("pkt_len", &self.pkt_len())
            .field("nb_segs", &self.nb_segs())
            .field("port", &self.port())
            .finish()
    }
}

/// One segment of a chain, as a NIC sees it.
#[derive(Debug, Clone, Copy)]
pub struct Segment<'a> {
    /// The segment's data.
    pub data: &'a [u8],
    /// IOVA of the first data byte.
    pub iova: u64,
}

impl Mbuf {
    /// Takes ownership of a header pointer.
    ///
    /// # Safety
    /// `hdr` must come from [`Mbuf::into_raw`] or a pool's raw allocation, and nothing else may own it. A buffer
    /// from a raw allocation ([`crate::Mempool::get_raw`], [`crate::Mempool::alloc_raw_bulk`]) carries stale
    /// metadata: it may be dropped as it is, but its data must not be accessed before its metadata are reset
    /// ([`crate::Mempool::adopt_raw`]) or set ([`RxRearm::apply`] and [`Mbuf::set_rx_unchecked`]).
    #[inline(always)]
    pub unsafe fn from_raw(hdr: NonNull<MbufHeader>) -> Mbuf {
        Mbuf { hdr }
    }

    /// Gives up ownership without freeing (drivers park buffers in descriptor rings this way).
    #[inline(always)]
    pub fn into_raw(self) -> NonNull<MbufHeader> {
        let hdr = self.hdr;
        std::mem::forget(self);
        hdr
    }

    #[inline(always)]
    fn hdr(&self) -> &MbufHeader {
        // SAFETY: we own the element; the header is initialised at pool creation.
        unsafe { self.hdr.as_ref() }
    }

    #[inline(always)]
    fn hdr_mut(&mut self) -> &mut MbufHeader {
        // SAFETY: we own the element uniquely.
        unsafe { self.hdr.as_mut() }
    }

    /// The packet data of this segment.
    #[inline(always)]
    pub fn data(&self) -> &[u8] {
        let h = self.hdr();
        // SAFETY: data_off + data_len <= buf_len is kept by every setter; the buffer is ours.
        unsafe { std::slice::from_raw_parts(h.buf_addr().add(h.rearm.data_off as usize), h.data_len as usize) }
    }

    /// The packet data of this segment, writable.
    #[inline(always)]
    pub fn data_mut(&mut self) -> &mut [u8] {
        let h = self.hdr();
        // SAFETY: as in `data`, and we own the buffer uniquely.
        unsafe { std::slice::from_raw_parts_mut(h.buf_addr().add(h.rearm.data_off as usize), h.data_len as usize) }
    }

    /// The whole buffer after the data start, up to the end of the data room (for writing a frame before setting
    /// its length).
    #[inline(always)]
    pub fn data_room_mut(&mut self) -> &mut [u8] {
        let h = self.hdr();
        // SAFETY: data_off <= buf_len; the buffer is ours.
        unsafe {
            std::slice::from_raw_parts_mut(
                h.buf_addr().add(h.rearm.data_off as usize),
                (h.rearm.buf_len - h.rearm.data_off) as usize,
            )
        }
    }

    /// Bytes of this segment.
    #[inline(always)]
    pub fn data_len(&self) -> u16 {
        self.hdr().data_len
    }

    /// Bytes of the whole packet (all segments).
    #[inline(always)]
    pub fn pkt_len(&self) -> u32 {
        self.hdr().pkt_len
    }

    /// Sets the length of a single-segment packet (data and packet length). Returns false, changing nothing, when
    /// `len` does not fit in the buffer after the data start.
    #[inline(always)]
    pub fn set_len(&mut self, len: u16) -> bool {
        let h = self.hdr_mut();
        if len > h.rearm.buf_len - h.rearm.data_off {
            return false;
        }
        let delta = len as i64 - h.data_len as i64;
        h.data_len = len;
        h.pkt_len = (h.pkt_len as i64 + delta) as u32;
        true
    }

    /// Sets this segment's data length alone (drivers building a chain set `pkt_len` on the head).
    #[inline(always)]
    pub fn set_data_len(&mut self, len: u16) -> bool {
        let h = self.hdr_mut();
        if len > h.rearm.buf_len - h.rearm.data_off {
            return false;
        }
        h.data_len = len;
        true
    }

    /// Records what a NIC reports for a frame received whole into this single-segment buffer: data and packet
    /// length `len`, offload flags, packet type and RSS hash; the VLAN TCI and the TX offload lengths become 0.
    /// With the rearm word ([`RxRearm::apply`], written when the buffer was posted) this sets every per-packet
    /// field of a buffer from [`crate::Mempool::alloc_raw_bulk`]: the RX fast path of a driver, in four 8-byte
    /// stores and without the room check of [`Mbuf::set_data_len`].
    ///
    /// # Safety
    /// `len` must fit in the buffer after the data start (`len <= buf_len() - headroom()`; after
    /// [`RxRearm::apply`] that is the pool's data room), and this must be a single segment.
    #[inline(always)]
    pub unsafe fn set_rx_unchecked(&mut self, len: u16, ol_flags: u64, packet_type: u32, rss_hash: u32) {
        let h = self.hdr_mut();
        debug_assert!(len <= h.rearm.buf_len - h.rearm.data_off && h.next.is_null());
        let block = RxBlock {
            ol_flags,
            type_len: pack32(packet_type, len as u32),
            len_vlan_rss: pack32(pack16(len, 0), rss_hash),
            tx_offload: 0,
        };
        // SAFETY: RxBlock mirrors the header fields from `ol_flags` to `tx_offload` (offsets checked at ResetBlock,
        // whose tail it is), all plain integers, inside the header we own.
        unsafe {
            (h as *mut MbufHeader)
                .cast::<u8>()
                .add(std::mem::offset_of!(MbufHeader, ol_flags))
                .cast::<RxBlock>()
                .write(block)
        };
    }

    /// [`Mbuf::set_rx_unchecked`] with the fields given as the two 16-byte blocks they occupy in the header, for
    /// drivers that build them with SIMD shuffles straight from a descriptor:
    ///
    /// - `flags_type_len`: `ol_flags` (u64), then `packet_type` (u32), then `pkt_len` (u32);
    /// - `len_vlan_rss_tx`: `data_len` (u16), `vlan_tci` (u16), `rss_hash` (u32), then the TX offload word (u64).
    ///
    /// (Little-endian lanes, lowest address first.)
    ///
    /// # Safety
    /// As [`Mbuf::set_rx_unchecked`]: `data_len` must fit in the buffer after the data start (for a buffer posted
    /// with [`RxRearm::apply`], the pool's data room) and this must be a single segment; `pkt_len` must equal
    /// `data_len`.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub unsafe fn set_rx_blocks(
        &mut self,
        flags_type_len: std::arch::x86_64::__m128i,
        len_vlan_rss_tx: std::arch::x86_64::__m128i,
    ) {
        use std::arch::x86_64::_mm_store_si128;
        let h = self.hdr_mut() as *mut MbufHeader as *mut u8;
        // SAFETY: the two blocks are the header fields from `ol_flags` to `tx_offload` (RxBlock, offsets checked at
        // compile time), 16-byte aligned (the header is 64-byte aligned; the assertion below), plain integers, in
        // a header we own. The caller vouches for the values.
        unsafe {
            let at = h.add(std::mem::offset_of!(MbufHeader, ol_flags));
            _mm_store_si128(at.cast(), flags_type_len);
            _mm_store_si128(at.add(16).cast(), len_vlan_rss_tx);
        }
        let h = self.hdr();
        debug_assert!(h.data_len as u32 == h.pkt_len && h.data_len <= h.rearm.buf_len - h.rearm.data_off);
        debug_assert!(h.next.is_null());
    }

    /// [`Mbuf::set_rx_unchecked`] with the fields given as the two 16-byte blocks they occupy in the header, as NEON
    /// registers, for drivers that build them from a descriptor's lanes (aarch64):
    ///
    /// - `flags_type_len`: `ol_flags` (u64), then `packet_type` (u32), then `pkt_len` (u32);
    /// - `len_vlan_rss_tx`: `data_len` (u16), `vlan_tci` (u16), `rss_hash` (u32), then the TX offload word (u64).
    ///
    /// (Little-endian lanes, lowest address first.)
    ///
    /// # Safety
    /// As [`Mbuf::set_rx_unchecked`]: `data_len` must fit in the buffer after the data start (for a buffer posted
    /// with [`RxRearm::apply`], the pool's data room) and this must be a single segment; `pkt_len` must equal
    /// `data_len`.
    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    pub unsafe fn set_rx_blocks(
        &mut self,
        flags_type_len: std::arch::aarch64::uint64x2_t,
        len_vlan_rss_tx: std::arch::aarch64::uint64x2_t,
    ) {
        use std::arch::aarch64::vst1q_u64;
        let h = self.hdr_mut() as *mut MbufHeader as *mut u8;
        // SAFETY: the two blocks are the header fields from `ol_flags` to `tx_offload` (RxBlock, offsets checked at
        // compile time), 16-byte aligned (the header is 64-byte aligned), plain integers, in a header we own. The
        // caller vouches for the values.
        unsafe {
            let at = h.add(std::mem::offset_of!(MbufHeader, ol_flags));
            vst1q_u64(at.cast(), flags_type_len);
            vst1q_u64(at.add(16).cast(), len_vlan_rss_tx);
        }
        let h = self.hdr();
        debug_assert!(h.data_len as u32 == h.pkt_len && h.data_len <= h.rearm.buf_len - h.rearm.data_off);
        debug_assert!(h.next.is_null());
    }

    /// Sets the total packet length kept in the first segment.
    #[inline(always)]
    pub fn set_pkt_len(&mut self, len: u32) {
        self.hdr_mut().pkt_len = len;
    }

    /// Free bytes before the data.
    #[inline(always)]
    pub fn headroom(&self) -> u16 {
        self.hdr().rearm.data_off
    }

    /// Free bytes after the data of this segment.
    #[inline(always)]
    pub fn tailroom(&self) -> u16 {
        let h = self.hdr();
        h.rearm.buf_len - h.rearm.data_off - h.data_len
    }

    /// Size of the whole buffer (headroom + data room).
    #[inline(always)]
    pub fn buf_len(&self) -> u16 {
        self.hdr().rearm.buf_len
    }

    /// Grows the data at the end by `len` bytes and returns them, or `None` without tailroom.
    pub fn append(&mut self, len: u16) -> Option<&mut [u8]> {
        if len > self.tailroom() {
            return None;
        }
        let h = self.hdr_mut();
        let start = h.rearm.data_off as usize + h.data_len as usize;
        h.data_len += len;
        h.pkt_len += len as u32;
        // SAFETY: start + len <= buf_len (checked against tailroom); the buffer is ours.
        Some(unsafe { std::slice::from_raw_parts_mut(h.buf_addr().add(start), len as usize) })
    }

    /// Grows the data at the front by `len` bytes (into the headroom) and returns them, or `None` without room.
    pub fn prepend(&mut self, len: u16) -> Option<&mut [u8]> {
        let h = self.hdr_mut();
        if len > h.rearm.data_off {
            return None;
        }
        h.rearm.data_off -= len;
        h.data_len += len;
        h.pkt_len += len as u32;
        // SAFETY: the new data_off is inside the buffer; the buffer is ours.
        Some(unsafe { std::slice::from_raw_parts_mut(h.buf_addr().add(h.rearm.data_off as usize), len as usize) })
    }

    /// Removes `len` bytes from the front; false if the segment is shorter.
    pub fn adj(&mut self, len: u16) -> bool {
        let h = self.hdr_mut();
        if len > h.data_len {
            return false;
        }
        h.rearm.data_off += len;
        h.data_len -= len;
        h.pkt_len -= len as u32;
        true
    }

    /// Removes `len` bytes from the end of this segment; false if it is shorter.
    pub fn trim(&mut self, len: u16) -> bool {
        let h = self.hdr_mut();
        if len > h.data_len {
            return false;
        }
        h.data_len -= len;
        h.pkt_len -= len as u32;
        true
    }

    /// Resets the data start to `offset` bytes into the buffer with no data (drivers posting RX buffers).
    pub fn reset_data(&mut self, offset: u16) -> bool {
        let h = self.hdr_mut();
        if offset > h.rearm.buf_len {
            return false;
        }
        h.rearm.data_off = offset;
        h.data_len = 0;
        h.pkt_len = 0;
        true
    }

    /// IOVA of the first data byte: what a NIC descriptor points at.
    #[inline(always)]
    pub fn data_iova(&self) -> u64 {
        let h = self.hdr();
        h.buf_iova + h.rearm.data_off as u64
    }

    /// IOVA of the start of the buffer (headroom included).
    #[inline(always)]
    pub fn buf_iova(&self) -> u64 {
        self.hdr().buf_iova
    }

    /// Port the packet arrived on ([`NO_PORT`] if none).
    #[inline(always)]
    pub fn port(&self) -> u16 {
        self.hdr().rearm.port
    }

    /// Records the input port.
    #[inline(always)]
    pub fn set_port(&mut self, port: u16) {
        self.hdr_mut().rearm.port = port;
    }

    /// Offload flags ([`ol_flags`](crate::ol_flags)).
    #[inline(always)]
    pub fn ol_flags(&self) -> u64 {
        self.hdr().ol_flags
    }

    /// Sets the offload flags.
    #[inline(always)]
    pub fn set_ol_flags(&mut self, flags: u64) {
        self.hdr_mut().ol_flags = flags;
    }

    /// Packet type ([`ptype`](crate::ptype)).
    #[inline(always)]
    pub fn packet_type(&self) -> u32 {
        self.hdr().packet_type
    }

    /// Sets the packet type.
    #[inline(always)]
    pub fn set_packet_type(&mut self, ptype: u32) {
        self.hdr_mut().packet_type = ptype;
    }

    /// RSS hash (valid with [`ol_flags::RX_RSS_HASH`](crate::ol_flags::RX_RSS_HASH)).
    #[inline(always)]
    pub fn rss_hash(&self) -> u32 {
        self.hdr().rss_hash
    }

    /// Sets the RSS hash.
    #[inline(always)]
    pub fn set_rss_hash(&mut self, hash: u32) {
        self.hdr_mut().rss_hash = hash;
    }

    /// VLAN TCI (stripped on RX, or to insert on TX).
    #[inline(always)]
    pub fn vlan_tci(&self) -> u16 {
        self.hdr().vlan_tci
    }

    /// Sets the VLAN TCI.
    #[inline(always)]
    pub fn set_vlan_tci(&mut self, tci: u16) {
        self.hdr_mut().vlan_tci = tci;
    }

    /// TX offload lengths: L2, L3 and L4 header lengths and the TSO segment size.
    #[inline(always)]
    pub fn tx_offload(&self) -> TxOffload {
        TxOffload::from_bits(self.hdr().tx_offload)
    }

    /// Sets the TX offload lengths.
    #[inline(always)]
    pub fn set_tx_offload(&mut self, offload: TxOffload) {
        self.hdr_mut().tx_offload = offload.to_bits();
    }

    /// A free 64-bit field for applications.
    #[inline(always)]
    pub fn user_data(&self) -> u64 {
        self.hdr().udata64
    }

    /// Sets the application field.
    #[inline(always)]
    pub fn set_user_data(&mut self, value: u64) {
        self.hdr_mut().udata64 = value;
    }

    /// Receive timestamp, if a driver set one.
    #[inline(always)]
    pub fn timestamp(&self) -> u64 {
        self.hdr().timestamp
    }

    /// Sets the timestamp.
    #[inline(always)]
    pub fn set_timestamp(&mut self, ts: u64) {
        self.hdr_mut().timestamp = ts;
    }

    /// Number of segments in the chain.
    #[inline(always)]
    pub fn nb_segs(&self) -> u16 {
        self.hdr().rearm.nb_segs
    }

    /// Zero exactly when this is a single segment (no chain) of `pool`: a driver ORs it over the packets it sends
    /// and frees them with [`crate::Mempool::free_single_bulk`] when the result is zero.
    #[inline(always)]
    pub fn single_of(&self, pool: crate::PoolId) -> usize {
        let h = self.hdr();
        (h.pool as usize ^ pool.0) | h.next as usize
    }

    /// Index of this buffer in its pool (stable for the pool's life; handy for debugging and tests).
    pub fn pool_index(&self) -> u32 {
        self.hdr().index
    }

    /// Appends `tail` (and its chain) after the last segment; packet length and segment count grow.
    pub fn chain(&mut self, tail: Mbuf) {
        let tail_len = tail.pkt_len();
        let tail_segs = tail.nb_segs();
        let tail = tail.into_raw();
        let mut last = self.hdr;
        // SAFETY: we own every segment of our chain; walking `next` stays inside it.
        unsafe {
            while !last.as_ref().next.is_null() {
                last = NonNull::new_unchecked(last.as_ref().next);
            }
            last.as_mut().next = tail.as_ptr();
        }
        let h = self.hdr_mut();
        h.pkt_len += tail_len;
        h.rearm.nb_segs += tail_segs;
    }

    /// Detaches everything after the first segment, returning it as its own packet; this segment's packet length
    /// becomes its data length.
    pub fn split_first(&mut self) -> Option<Mbuf> {
        let h = self.hdr_mut();
        let next = NonNull::new(h.next)?;
        h.next = std::ptr::null_mut();
        let rest_len = h.pkt_len - h.data_len as u32;
        let rest_segs = h.rearm.nb_segs - 1;
        h.pkt_len = h.data_len as u32;
        h.rearm.nb_segs = 1;
        // SAFETY: `next` was owned through our chain and is now detached: we hand its ownership on.
        let mut rest = unsafe { Mbuf::from_raw(next) };
        rest.hdr_mut().pkt_len = rest_len;
        rest.hdr_mut().rearm.nb_segs = rest_segs;
        Some(rest)
    }

    /// The segments of the chain, first to last.
    pub fn segments(&self) -> impl Iterator<Item = Segment<'_>> + '_ {
        let mut cur = self.hdr.as_ptr().cast_const();
        std::iter::from_fn(move || {
            if cur.is_null() {
                return None;
            }
            // SAFETY: every segment in our chain is owned by us and initialised.
            let h = unsafe { &*cur };
            cur = h.next;
            // SAFETY: data_off + data_len <= buf_len for every segment.
            let data =
                unsafe { std::slice::from_raw_parts(h.buf_addr().add(h.rearm.data_off as usize), h.data_len as usize) };
            Some(Segment { data, iova: h.buf_iova + h.rearm.data_off as u64 })
        })
    }

    /// Copies the whole packet (all segments) into `out`, returning the bytes written (at most `out.len()`).
    pub fn copy_to(&self, out: &mut [u8]) -> usize {
        let mut written = 0;
        for seg in self.segments() {
            let n = seg.data.len().min(out.len() - written);
            out[written..written + n].copy_from_slice(&seg.data[..n]);
            written += n;
            if written == out.len() {
                break;
            }
        }
        written
    }
}

impl Drop for Mbuf {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: we own the chain; it goes back to its pool exactly once.
        unsafe { crate::free::free_chain(self.hdr) };
    }
}
