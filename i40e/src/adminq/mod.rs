//! The admin queue (docs/hw/i40e.md §5): the send ring (ATQ) carrying commands to the firmware and the receive ring
//! (ARQ) carrying events back, both 32-byte descriptors in DMA memory with one 4 KiB DMA buffer per slot.
//!
//! [`AdminQueue::send`] builds a descriptor (SI; BUF, LB and RD for an indirect command), copies it into the ring,
//! moves PF_ATQT and polls PF_ATQH until the firmware has passed it (docs/hw/i40e.md §5.4: the head register, not DD, is the
//! completion), then copies the descriptor and the buffer back. A non-zero `retval` is
//! [`crate::Error::AdminQueue`] naming the opcode and the code; no completion in time is
//! [`crate::Error::AdminTimeout`]. [`AdminQueue::receive`] takes one event off the ARQ and re-arms its slot (docs/hw/i40e.md §5.5).
//!
//! The control plane only: nothing here is on the packet path, so it may allocate.

pub mod cmds;
pub(crate) mod layout;

use std::sync::Arc;
use std::time::{Duration, Instant};

use drvkit::bar::RegisterSpace;
use drvkit::dma::DmaMapper;
use hugepage::Allocator;

use self::cmds::{flags, status, BufAddr, Opcode, LB_THRESHOLD};
use self::layout::aq_layout;
use crate::error::Error;
use crate::regs::{self, aq_index, atqlen, Regs};
use drvkit::dma::DmaArea;

/// Slots per ring (DPDK's choice, docs/hw/i40e.md §5.3).
pub const RING_LEN: usize = 32;
/// Bytes per slot buffer (docs/hw/i40e.md §5.3).
pub const BUF_LEN: usize = 4096;
/// Bytes per descriptor.
pub const DESC_LEN: usize = 32;

aq_layout!(
    /// The 32-byte admin-queue descriptor (docs/hw/i40e.md §5.2) without its parameter area, which [`AqDesc::params`] holds.
    DescHead, 16, {
        /// [`cmds::flags`].
        flags: u16 = 0,
        /// Opcode.
        opcode: u16 = 2,
        /// Buffer length; on the ARQ the event's length.
        datalen: u16 = 4,
        /// Firmware status; the low 8 bits are the error code.
        retval: u16 = 6,
        /// Opaque, returned unchanged.
        cookie_high: u32 = 8,
        /// Opaque, returned unchanged.
        cookie_low: u32 = 12,
    }
);

/// An admin-queue descriptor: the head and the 16 parameter bytes (descriptor bytes 16 to 31).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AqDesc {
    /// Bytes 0 to 15.
    pub head: DescHead,
    /// Bytes 16 to 31.
    pub params: [u8; 16],
}

const _: () = assert!(DescHead::SIZE + 16 == DESC_LEN);

impl AqDesc {
    /// The 32 bytes.
    pub fn encode(&self) -> [u8; DESC_LEN] {
        let mut b = [0u8; DESC_LEN];
        self.head.encode_into(&mut b);
        b[16..].copy_from_slice(&self.params);
        b
    }

    /// From 32 bytes.
    pub fn decode(b: &[u8; DESC_LEN]) -> AqDesc {
        let mut params = [0u8; 16];
        params.copy_from_slice(&b[16..]);
        AqDesc { head: DescHead::decode(b), params }
    }

    /// The admin-queue error code (`retval & 0xFF`).
    pub fn status(&self) -> u8 {
        self.head.retval as u8
    }
}

/// An event from the ARQ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Its descriptor.
    pub desc: AqDesc,
    /// Its message (the slot buffer's first `datalen` bytes).
    pub data: Vec<u8>,
}

/// An indirect command's buffer: the payload to send, and where the answer goes.
#[derive(Debug)]
pub struct Buffer<'a> {
    /// Sent (when `rd`) and overwritten with the firmware's answer.
    pub data: &'a mut [u8],
    /// The buffer carries data for the firmware (set, add, update commands).
    pub rd: bool,
}

/// One ring: descriptor memory and slot buffers.
struct Ring {
    desc: DmaArea,
    bufs: DmaArea,
    /// Next slot to use (ATQ) or to clean (ARQ).
    next: usize,
}

impl Ring {
    fn new(allocator: &Allocator, mapper: &Arc<dyn DmaMapper>, port: &str, what: &str) -> pktio::Result<Ring> {
        Ok(Ring {
            desc: DmaArea::new(allocator, mapper, RING_LEN * DESC_LEN, port, what)?,
            bufs: DmaArea::new(allocator, mapper, RING_LEN * BUF_LEN, port, what)?,
            next: 0,
        })
    }

    fn read_desc(&self, i: usize) -> AqDesc {
        let mut b = [0u8; DESC_LEN];
        self.desc.read(i * DESC_LEN, &mut b);
        AqDesc::decode(&b)
    }

    fn write_desc(&self, i: usize, d: &AqDesc) {
        self.desc.write(i * DESC_LEN, &d.encode());
    }

    /// The ARQ descriptor of slot `i` armed with its buffer (docs/hw/i40e.md §5.3 step 2).
    fn armed(&self, i: usize) -> AqDesc {
        let mut f = flags::BUF;
        if BUF_LEN > LB_THRESHOLD {
            f |= flags::LB;
        }
        let addr = self.bufs.iova(i * BUF_LEN);
        let mut d =
            AqDesc { head: DescHead { flags: f, datalen: BUF_LEN as u16, ..Default::default() }, params: [0; 16] };
        BufAddr { addr_high: (addr >> 32) as u32, addr_low: addr as u32 }.encode_into(&mut d.params);
        d
    }
}

/// The admin queue of one PF.
pub struct AdminQueue {
    atq: Ring,
    arq: Ring,
    /// How long a command may take (DPDK: 250 ms).
    timeout: Duration,
    /// Poll step (DPDK: 50 µs).
    step: Duration,
}

impl std::fmt::Debug for AdminQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminQueue").field("atq_next", &self.atq.next).field("arq_next", &self.arq.next).finish()
    }
}

impl AdminQueue {
    /// Allocates both rings and their buffers (docs/hw/i40e.md §5.3 step 1). The registers are programmed by
    /// [`AdminQueue::program`].
    pub fn new(
        allocator: &Allocator,
        mapper: &Arc<dyn DmaMapper>,
        port: &str,
        timeout: Duration,
        step: Duration,
    ) -> pktio::Result<AdminQueue> {
        Ok(AdminQueue {
            atq: Ring::new(allocator, mapper, port, "the admin send queue")?,
            arq: Ring::new(allocator, mapper, port, "the admin receive queue")?,
            timeout,
            step,
        })
    }

    /// IOVA of the ATQ ring (for tests playing the firmware).
    pub fn atq_iova(&self) -> u64 {
        self.atq.desc.iova(0)
    }

    /// Programs both rings' registers in docs/hw/i40e.md §5.3's order (steps 2 to 4), software indices reset. Returns false when a
    /// base register does not read back what was written (no device behind the BAR).
    pub fn program<R: RegisterSpace>(&mut self, regs: &Regs<R>) -> bool {
        self.atq.next = 0;
        self.arq.next = 0;
        self.atq.desc.fill(0, RING_LEN * DESC_LEN, 0);
        for i in 0..RING_LEN {
            self.arq.write_desc(i, &self.arq.armed(i));
        }
        let len = atqlen::LEN.val(RING_LEN as u32) | atqlen::ENABLE;
        let atq = self.atq.desc.iova(0);
        regs.write(regs::PF_ATQH, 0);
        regs.write(regs::PF_ATQT, 0);
        regs.write(regs::PF_ATQLEN, len);
        regs.write(regs::PF_ATQBAL, atq as u32);
        regs.write(regs::PF_ATQBAH, (atq >> 32) as u32);
        let arq = self.arq.desc.iova(0);
        regs.write(regs::PF_ARQH, 0);
        regs.write(regs::PF_ARQT, 0);
        regs.write(regs::PF_ARQLEN, len);
        regs.write(regs::PF_ARQBAL, arq as u32);
        regs.write(regs::PF_ARQBAH, (arq >> 32) as u32);
        // Every buffer to the firmware.
        regs.write(regs::PF_ARQT, (RING_LEN - 1) as u32);
        regs.read(regs::PF_ATQBAL) == atq as u32 && regs.read(regs::PF_ARQBAL) == arq as u32
    }

    /// Zeroes both rings' registers (docs/hw/i40e.md §5.3 shutdown).
    pub fn shutdown<R: RegisterSpace>(&mut self, regs: &Regs<R>) {
        for r in [
            regs::PF_ATQH,
            regs::PF_ATQT,
            regs::PF_ATQLEN,
            regs::PF_ATQBAL,
            regs::PF_ATQBAH,
            regs::PF_ARQH,
            regs::PF_ARQT,
            regs::PF_ARQLEN,
            regs::PF_ARQBAL,
            regs::PF_ARQBAH,
        ] {
            regs.write(r, 0);
        }
    }

    /// Sends one command and waits for its completion (docs/hw/i40e.md §5.4). `params` are the command's 16 parameter bytes (for
    /// an indirect command the buffer address, bytes 8 to 15, is filled in here). Returns the completed
    /// descriptor; `buf.data` then holds the firmware's answer. A non-zero status is an error unless it is in
    /// `accept` (the caller handles it, e.g. ENOMEM from List Capabilities, EEXIST from an add).
    pub fn send<R: RegisterSpace>(
        &mut self,
        regs: &Regs<R>,
        opcode: Opcode,
        params: [u8; 16],
        buf: Option<Buffer<'_>>,
        accept: &[u8],
    ) -> Result<AqDesc, Error> {
        let slot = self.atq.next;
        let mut d =
            AqDesc { head: DescHead { flags: flags::SI, opcode: opcode.value(), ..Default::default() }, params };
        // Reclaim finished slots: those before the head are done (and zeroed).
        let head = aq_index::INDEX.get(regs.read(regs::PF_ATQH)) as usize;
        if head >= RING_LEN {
            return Err(Error::BadAnswer {
                opcode: opcode.value(),
                name: opcode.name(),
                reason: format!("PF_ATQH = {head} is beyond the ring of {RING_LEN}: the admin queue is corrupt"),
            });
        }
        let mut buf = buf;
        if let Some(b) = &buf {
            let len = b.data.len().min(BUF_LEN);
            d.head.flags |= flags::BUF;
            if len > LB_THRESHOLD {
                d.head.flags |= flags::LB;
            }
            if b.rd {
                d.head.flags |= flags::RD;
            }
            d.head.datalen = len as u16;
            self.atq.bufs.fill(slot * BUF_LEN, BUF_LEN, 0);
            self.atq.bufs.write(slot * BUF_LEN, &b.data[..len]);
            let addr = self.atq.bufs.iova(slot * BUF_LEN);
            BufAddr { addr_high: (addr >> 32) as u32, addr_low: addr as u32 }.encode_into(&mut d.params);
        }
        self.atq.write_desc(slot, &d);
        self.atq.next = (slot + 1) % RING_LEN;
        drvkit::barrier::dma_wmb();
        regs.write(regs::PF_ATQT, self.atq.next as u32);
        let start = Instant::now();
        let want = self.atq.next as u32;
        loop {
            let h = aq_index::INDEX.get(regs.read(regs::PF_ATQH));
            if h == want {
                break;
            }
            if start.elapsed() >= self.timeout {
                return Err(Error::AdminTimeout {
                    opcode: opcode.value(),
                    name: opcode.name(),
                    head: h,
                    atqlen: regs.read(regs::PF_ATQLEN),
                    budget: self.timeout,
                });
            }
            std::thread::sleep(self.step);
        }
        drvkit::barrier::dma_rmb();
        let done = self.atq.read_desc(slot);
        if let Some(b) = &mut buf {
            let len = b.data.len().min(BUF_LEN);
            self.atq.bufs.read(slot * BUF_LEN, &mut b.data[..len]);
        }
        let code = done.status();
        if code != status::OK && !accept.contains(&code) {
            return Err(Error::AdminQueue {
                opcode: opcode.value(),
                name: opcode.name(),
                status: code,
                status_name: cmds::status_name(code),
            });
        }
        Ok(done)
    }

    /// Takes the next event off the ARQ, if the firmware posted one, and re-arms its slot (docs/hw/i40e.md §5.5).
    pub fn receive<R: RegisterSpace>(&mut self, regs: &Regs<R>) -> Option<Event> {
        let ntu = aq_index::INDEX.get(regs.read(regs::PF_ARQH)) as usize;
        let i = self.arq.next;
        if ntu == i || ntu >= RING_LEN {
            return None;
        }
        drvkit::barrier::dma_rmb();
        let desc = self.arq.read_desc(i);
        let len = (desc.head.datalen as usize).min(BUF_LEN);
        let mut data = vec![0u8; len];
        self.arq.bufs.read(i * BUF_LEN, &mut data);
        self.arq.write_desc(i, &self.arq.armed(i));
        drvkit::barrier::dma_wmb();
        regs.write(regs::PF_ARQT, i as u32);
        self.arq.next = (i + 1) % RING_LEN;
        Some(Event { desc, data })
    }
}

#[cfg(test)]
mod tests;
