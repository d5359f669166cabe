//! The hot path: RX and TX queues over split virtqueues.
//!
//! RX: every descriptor holds one mbuf, posted so that the 12-byte `virtio_net_hdr_v1` lands in the mbuf's
//! headroom and the frame at its data start (no copy). Used buffers are taken in bulk, refilled in bulk from the
//! mempool once a quarter of the ring (at most 64) is free, and the device is notified only when it asks.
//! With MRG_RXBUF a frame spanning `num_buffers` buffers becomes an mbuf chain.
//!
//! TX: the header is pushed into the first segment's headroom (or, without headroom, taken from a per-descriptor
//! header slot in DMA memory), each segment gets a descriptor, chained; completions are reclaimed lazily when the
//! ring runs short.
//!
//! RX interrupts (on a port configured with `intr_conf.rxq`): each RX queue has its MSI-X vector's eventfd
//! ([`RxIntr`]). Disarmed, the default, the queue's interrupts are suppressed in its available ring, so a polled
//! queue never takes one; [`RxQueue::intr_enable`] drains the eventfd, lifts the suppression and, after a full
//! barrier, signals the eventfd itself when a used entry is already there (the device wrote it while suppressed and
//! will not interrupt for it): no lost wake-up. [`RxQueue::intr_disable`] suppresses again. Without EVENT_IDX an
//! armed queue interrupts for every used entry until disarmed; with it, for the next one after each burst.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex};

use drvkit::vfio::EventFd;

use hugepage::DmaMemory;
use mempool::{ol_flags, Mbuf, Mempool, PacketBatch};
use pktio::stats::{RxQueueStats, TxQueueStats};
use pktio::{Error, RxQueue, TxQueue};

use crate::desc::{NetHdr, VirtqDesc};
use crate::regs::{RegisterSpace, Window};
use crate::virtqueue::SplitQueue;

/// Most mbufs taken from the pool in one refill.
const REFILL_MAX: usize = 64;

/// Where and what to write to notify one queue.
#[derive(Debug)]
pub struct Notifier<B> {
    pub(crate) window: Window<B>,
    pub(crate) offset: usize,
    pub(crate) queue: u16,
}

impl<B: RegisterSpace> Notifier<B> {
    /// Tells the device queue `queue` has new buffers.
    #[inline(always)]
    pub fn notify(&self) {
        self.window.write16(self.offset, self.queue);
    }
}

/// An RX queue's interrupt: the eventfd its MSI-X vector signals.
#[derive(Debug)]
pub struct RxIntr {
    /// What the vector writes (VFIO's eventfd, or a model's).
    pub fd: Arc<EventFd>,
    /// The MSI-X vector, as written to the queue's `queue_msix_vector`.
    pub vector: u16,
}

/// Everything an RX queue owns. Lives in the port while no handle is out.
#[derive(Debug)]
pub struct RxState<B> {
    pub(crate) vq: SplitQueue,
    pub(crate) shadow: Vec<Option<Mbuf>>,
    pub(crate) pool: Mempool,
    pub(crate) notifier: Notifier<B>,
    pub(crate) stats: Arc<RxQueueStats>,
    pub(crate) port_id: u16,
    pub(crate) mergeable: bool,
    pub(crate) guest_csum: bool,
    /// The device writes the header at `headroom - 12`.
    pub(crate) hdr_off: u16,
    pub(crate) refill_threshold: usize,
    /// Frame being assembled from several buffers (MRG_RXBUF): head, buffers still to come.
    pub(crate) partial: Option<(Mbuf, u16)>,
    /// The queue's interrupt, on a port configured with `intr_conf.rxq`.
    pub(crate) intr: Option<RxIntr>,
    pub(crate) _mem: Arc<DmaMemory>,
}

impl<B: RegisterSpace> RxState<B> {
    /// Arms the interrupt: drains the eventfd, asks for an interrupt at the next used entry, and signals the
    /// eventfd itself if an entry is already there.
    fn intr_enable(&mut self) -> pktio::Result<()> {
        let Some(intr) = &self.intr else { return Err(no_intr()) };
        intr.fd.read().map_err(|e| Error::os("net_virtio: draining an RX interrupt's eventfd", e))?;
        if self.vq.intr_enable() {
            intr.fd.signal().map_err(|e| Error::os("net_virtio: signalling an RX interrupt's eventfd", e))?;
        }
        Ok(())
    }

    /// Disarms the interrupt: suppressed again in the available ring.
    fn intr_disable(&mut self) -> pktio::Result<()> {
        if self.intr.is_none() {
            return Err(no_intr());
        }
        self.vq.intr_disable();
        Ok(())
    }

    /// Posts fresh buffers for every free descriptor (in bulks from the pool); returns how many.
    pub(crate) fn refill(&mut self) -> usize {
        let mut posted = 0;
        let mut bufs: [Option<Mbuf>; REFILL_MAX] = [const { None }; REFILL_MAX];
        while self.vq.num_free() > 0 {
            let n = self.vq.num_free().min(REFILL_MAX);
            if !self.pool.alloc_bulk(&mut bufs[..n]) {
                self.stats.nombuf.add(n as u64);
                break;
            }
            for slot in bufs[..n].iter_mut() {
                let mut m = slot.take().expect("alloc_bulk filled the slot");
                let id = self.vq.alloc().expect("counted free descriptors");
                m.reset_data(self.hdr_off);
                let room = m.tailroom() as u32;
                self.vq.set_desc(id, m.data_iova(), room, VirtqDesc::F_WRITE, 0);
                self.shadow[id as usize] = Some(m);
                self.vq.push_avail(id);
            }
            posted += n;
        }
        if posted > 0 {
            self.vq.publish();
            if self.vq.needs_notify() {
                self.notifier.notify();
            }
        }
        posted
    }

    #[inline]
    fn receive(&mut self, batch: &mut PacketBatch) -> usize {
        let start = batch.len();
        let first_used = self.vq.last_used();
        let mut pending = self.vq.used_pending() as usize;
        let mut bytes = 0u64;
        let mut errors = 0u64;
        while pending > 0 && !batch.is_full() {
            pending -= 1;
            let u = self.vq.take_used();
            let id = u.id as u16;
            let Some(mut m) = self.shadow.get_mut(id as usize).and_then(Option::take) else {
                errors += 1; // the device returned a descriptor we never posted
                continue;
            };
            self.vq.free(id);
            let len = u.len as usize;
            if let Some((mut head, left)) = self.partial.take() {
                // A continuation buffer: data from the descriptor's start, no header.
                m.set_len(len.min(u16::MAX as usize) as u16);
                head.chain(m);
                if left > 1 {
                    self.partial = Some((head, left - 1));
                } else {
                    bytes += head.pkt_len() as u64;
                    let _ = batch.push(head);
                }
                continue;
            }
            if len < NetHdr::LEN {
                errors += 1;
                continue;
            }
            // The device is done with the buffer: it is ours to read.
            let hdr = {
                let h = m.data_room_mut();
                NetHdr::from_bytes(h[..NetHdr::LEN].try_into().expect("12 bytes"))
            };
            m.reset_data(self.hdr_off + NetHdr::LEN as u16);
            m.set_len((len - NetHdr::LEN) as u16);
            m.set_port(self.port_id);
            let mut flags = 0;
            if self.guest_csum && hdr.flags & NetHdr::F_DATA_VALID != 0 {
                flags |= ol_flags::RX_L4_CKSUM_GOOD;
            }
            m.set_ol_flags(flags);
            if self.mergeable && hdr.num_buffers > 1 {
                self.partial = Some((m, hdr.num_buffers - 1));
                continue;
            }
            bytes += len as u64 - NetHdr::LEN as u64;
            let _ = batch.push(m);
        }
        if self.intr.is_some() && self.vq.last_used() != first_used {
            // Keep `used_event` in step with what was taken (EVENT_IDX; nothing otherwise).
            self.vq.sync_used_event();
        }
        if self.vq.num_free() >= self.refill_threshold {
            self.refill();
        }
        let n = batch.len() - start;
        if n > 0 {
            self.stats.packets.add(n as u64);
            self.stats.bytes.add(bytes);
        }
        if errors > 0 {
            self.stats.errors.add(errors);
        }
        n
    }

    /// Frees every buffer the ring holds (the device must be stopped).
    pub(crate) fn release(&mut self) {
        self.shadow.iter_mut().for_each(|s| drop(s.take()));
        self.partial = None;
    }
}

/// Everything a TX queue owns.
#[derive(Debug)]
pub struct TxState<B> {
    pub(crate) vq: SplitQueue,
    pub(crate) shadow: Vec<Option<Mbuf>>,
    pub(crate) notifier: Notifier<B>,
    pub(crate) stats: Arc<TxQueueStats>,
    /// Per-descriptor header slots for packets without headroom: (pointer, IOVA) of slot 0, 16 bytes apart.
    pub(crate) hdr_slots: (*mut u8, u64),
    pub(crate) csum: bool,
    pub(crate) free_threshold: usize,
    pub(crate) _mem: Arc<DmaMemory>,
}

// SAFETY: the header slots are part of `_mem`, owned with the queue; the state moves between threads as a whole.
unsafe impl<B: Send> Send for TxState<B> {}

impl<B: RegisterSpace> TxState<B> {
    /// Takes back what the device has sent; returns how many chains.
    #[inline]
    pub(crate) fn reclaim(&mut self) -> usize {
        let n = self.vq.used_pending() as usize;
        for _ in 0..n {
            let u = self.vq.take_used();
            let head = u.id as u16;
            if (head as usize) < self.shadow.len() {
                self.vq.free_chain(head);
                drop(self.shadow[head as usize].take());
            }
        }
        n
    }

    fn header_for(&self, m: &Mbuf) -> NetHdr {
        let mut h = NetHdr::default();
        if self.csum {
            let csum_offset = match m.ol_flags() & ol_flags::TX_UDP_CKSUM {
                ol_flags::TX_TCP_CKSUM => 16,
                ol_flags::TX_UDP_CKSUM => 6,
                _ => return h,
            };
            let o = m.tx_offload();
            h.flags = NetHdr::F_NEEDS_CSUM;
            h.csum_start = o.l2_len as u16 + o.l3_len;
            h.csum_offset = csum_offset;
        }
        h
    }

    #[inline]
    fn transmit(&mut self, batch: &mut PacketBatch) -> usize {
        if self.vq.num_free() < self.free_threshold {
            self.reclaim();
        }
        // How many packets fit, whole.
        let mut free = self.vq.num_free();
        let mut fit = 0;
        for m in batch.iter() {
            let need = m.nb_segs() as usize + usize::from(m.headroom() < NetHdr::LEN as u16);
            if need > free {
                break;
            }
            free -= need;
            fit += 1;
        }
        if fit == 0 {
            return 0;
        }
        let mut bytes = 0u64;
        batch.drain_front(fit, |m| {
            bytes += m.pkt_len() as u64;
            self.post(m);
        });
        self.vq.publish();
        if self.vq.needs_notify() {
            self.notifier.notify();
        }
        self.stats.packets.add(fit as u64);
        self.stats.bytes.add(bytes);
        fit
    }

    #[inline]
    fn post(&mut self, mut m: Mbuf) {
        let hdr = self.header_for(&m);
        let head = self.vq.alloc().expect("counted free descriptors");
        let mut id = head;
        let segs = m.nb_segs();
        // Descriptor list: (addr, len) of each piece, header first.
        if let Some(h) = m.prepend(NetHdr::LEN as u16) {
            h.copy_from_slice(&hdr.to_bytes());
        } else {
            let (ptr, iova) = self.hdr_slots;
            // SAFETY: slot `head` (16 bytes) is inside the header area of `_mem` and only this queue writes it;
            // the device does not read it while `head` is free.
            unsafe { std::ptr::copy_nonoverlapping(hdr.to_bytes().as_ptr(), ptr.add(16 * head as usize), NetHdr::LEN) };
            let next = self.vq.alloc().expect("counted free descriptors");
            self.vq.set_desc(id, iova + 16 * head as u64, NetHdr::LEN as u32, VirtqDesc::F_NEXT, next);
            id = next;
        }
        let mut left = segs as usize;
        for seg in m.segments() {
            left -= 1;
            if left == 0 {
                self.vq.set_desc(id, seg.iova, seg.data.len() as u32, 0, 0);
            } else {
                let next = self.vq.alloc().expect("counted free descriptors");
                self.vq.set_desc(id, seg.iova, seg.data.len() as u32, VirtqDesc::F_NEXT, next);
                id = next;
            }
        }
        self.vq.push_avail(head);
        self.shadow[head as usize] = Some(m);
    }

    /// Frees every buffer the ring holds (the device must be stopped).
    pub(crate) fn release(&mut self) {
        self.shadow.iter_mut().for_each(|s| drop(s.take()));
    }
}

/// An RX queue handle. Dropping it gives the ring back to the port (the device may still be filling it).
#[derive(Debug)]
pub struct VirtioRxQueue<B: RegisterSpace> {
    pub(crate) state: Option<RxState<B>>,
    pub(crate) home: Arc<Mutex<Option<RxState<B>>>>,
}

impl<B: RegisterSpace> RxQueue for VirtioRxQueue<B> {
    #[inline]
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        match self.state.as_mut() {
            Some(s) => s.receive(batch),
            None => 0,
        }
    }

    /// The queue's MSI-X eventfd, on a port configured with `intr_conf.rxq`.
    fn wait_fd(&self) -> Option<RawFd> {
        self.state.as_ref()?.intr.as_ref().map(|i| i.fd.as_raw_fd())
    }

    fn intr_enable(&mut self) -> pktio::Result<()> {
        self.state.as_mut().ok_or_else(no_intr)?.intr_enable()
    }

    fn intr_disable(&mut self) -> pktio::Result<()> {
        self.state.as_mut().ok_or_else(no_intr)?.intr_disable()
    }
}

impl<B: RegisterSpace> VirtioRxQueue<B> {
    /// The queue's MSI-X vector, when it has an interrupt.
    pub fn intr_vector(&self) -> Option<u16> {
        self.state.as_ref()?.intr.as_ref().map(|i| i.vector)
    }
}

/// What a queue without an interrupt says when asked to arm or disarm one.
fn no_intr() -> Error {
    Error::NotSupported {
        port: "(a virtio-net RX queue)".to_string(),
        driver: crate::DRIVER_NAME,
        what: "RX queue interrupts on a port not configured with intr_conf.rxq",
    }
}

impl<B: RegisterSpace> Drop for VirtioRxQueue<B> {
    fn drop(&mut self) {
        *self.home.lock().unwrap_or_else(|e| e.into_inner()) = self.state.take();
    }
}

/// A TX queue handle. Dropping it gives the ring back to the port.
#[derive(Debug)]
pub struct VirtioTxQueue<B: RegisterSpace> {
    pub(crate) state: Option<TxState<B>>,
    pub(crate) home: Arc<Mutex<Option<TxState<B>>>>,
}

impl<B: RegisterSpace> VirtioTxQueue<B> {
    /// Takes back what the device has sent (also done by `tx_burst` when the ring runs short).
    pub fn reclaim(&mut self) -> usize {
        self.state.as_mut().map_or(0, |s| s.reclaim())
    }

    /// Descriptors in flight (posted, not yet reclaimed).
    pub fn in_flight(&self) -> usize {
        self.state.as_ref().map_or(0, |s| s.vq.size() as usize - s.vq.num_free())
    }
}

impl<B: RegisterSpace> TxQueue for VirtioTxQueue<B> {
    #[inline]
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        match self.state.as_mut() {
            Some(s) => s.transmit(batch),
            None => 0,
        }
    }
}

impl<B: RegisterSpace> Drop for VirtioTxQueue<B> {
    fn drop(&mut self) {
        *self.home.lock().unwrap_or_else(|e| e.into_inner()) = self.state.take();
    }
}
