//! The command queue (docs/hw/hinic3.md §8), normal mode: a ring of 64 little-endian 64-byte LCMD WQEs whose data
//! travels in a big-endian-per-dword buffer ([`crate::ctx::to_cmdq_buf`]), a doorbell on page 0, and completion found
//! by polling the WQE's busy bit (no CEQ). Only the SYNC queue (type 0) is used; one command at a time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use drvkit::bar::RegisterSpace;
use drvkit::barrier::{dma_rmb, dma_wmb};
use drvkit::dma::DmaMapper;
use drvkit::reg::{bit, hi32, lo32, Field, Regs};
use hugepage::Allocator;
use pktio::Result;

use crate::ctx::to_cmdq_buf;
use crate::doorbell::{self, DbKind};
use crate::error::Error;
use crate::regs::DB_PAGE_CMDQ;
use drvkit::dma::DmaArea;

/// WQEs per command queue (DPDK's depth, docs/hw/hinic3.md §15).
pub const CMDQ_DEPTH: usize = 64;
/// Bytes per WQE.
pub const CMDQ_WQE: usize = 64;
/// Bytes of the data buffer (DPDK's, docs/hw/hinic3.md §8.1).
pub const CMDQ_BUF: usize = 1024;

/// header_info fields (docs/hw/hinic3.md §8.2).
pub mod header {
    use super::{bit, Field};
    /// Buffer-descriptor length code (2 LCMD).
    pub const BUFDESC_LEN: Field = Field::new(7, 0);
    /// Completion format (0 direct).
    pub const COMPLETE_FMT: u32 = bit(15);
    /// Data format (0 SGE/LCMD).
    pub const DATA_FMT: u32 = bit(22);
    /// Completion request.
    pub const COMPLETE_REQ: u32 = bit(23);
    /// Completion section length (3).
    pub const COMPLETE_SECT_LEN: Field = Field::new(28, 27);
    /// Control section length (1 LCMD).
    pub const CTRL_LEN: Field = Field::new(30, 29);
    /// Hardware busy bit = the current wrapped flag.
    pub const HW_BUSY: Field = Field::new(31, 31);
}

/// ctrl_info fields (docs/hw/hinic3.md §8.2).
pub mod ctrl {
    use super::{bit, Field};
    /// This WQE's PI.
    pub const PI: Field = Field::new(15, 0);
    /// Command.
    pub const CMD: Field = Field::new(23, 16);
    /// Module.
    pub const MOD: Field = Field::new(28, 24);
    /// Ack type (0 = cmdq).
    pub const ACK_TYPE: Field = Field::new(30, 29);
    /// Set by the hardware on completion.
    pub const HW_BUSY: u32 = bit(31);
}

/// status_info: the error code.
pub const STATUS_ERR: Field = Field::new(30, 0);

/// The L2NIC ucode commands sent here (docs/hw/hinic3.md §8.6).
pub mod ucode {
    /// MODIFY_QUEUE_CTX.
    pub const MODIFY_QUEUE_CTX: u8 = 0;
    /// CLEAN_QUEUE_CONTEXT.
    pub const CLEAN_QUEUE_CONTEXT: u8 = 1;
    /// SET_RSS_INDIR_TABLE.
    pub const SET_RSS_INDIR_TABLE: u8 = 4;
    /// SET_RSS_CONTEXT_TABLE.
    pub const SET_RSS_CONTEXT_TABLE: u8 = 5;
    /// SET_RQ_FLUSH.
    pub const SET_RQ_FLUSH: u8 = 10;
}

/// The 64 bytes of an LCMD WQE (little-endian dwords): module/command, the buffer's IOVA and length, PI, and the busy
/// bit = `wrapped`.
pub fn lcmd_wqe(module: u8, cmd: u8, pi: u16, wrapped: u32, buf_iova: u64, len: u32) -> [u32; 16] {
    let mut w = [0u32; 16];
    w[0] = header::BUFDESC_LEN.val(2)
        | header::COMPLETE_REQ
        | header::COMPLETE_SECT_LEN.val(3)
        | header::CTRL_LEN.val(1)
        | header::HW_BUSY.val(wrapped);
    w[3] = ctrl::PI.val(pi as u32) | ctrl::CMD.val(cmd as u32) | ctrl::MOD.val(module as u32) | ctrl::ACK_TYPE.val(0);
    w[8] = hi32(buf_iova);
    w[9] = lo32(buf_iova);
    w[10] = len;
    w
}

/// One command queue.
pub struct Cmdq<D: RegisterSpace> {
    ring: DmaArea,
    buf: DmaArea,
    /// The doorbell BAR.
    db: Regs<D>,
    pi: usize,
    wrapped: u32,
    timeout: Duration,
}

impl<D: RegisterSpace> Cmdq<D> {
    /// Allocates the ring (one 4 KiB page) and the data buffer.
    pub fn new(
        db: &Arc<D>,
        allocator: &Allocator,
        mapper: &Arc<dyn DmaMapper>,
        timeout: Duration,
        port: &str,
    ) -> Result<Self> {
        let ring = DmaArea::new_aligned(
            allocator,
            mapper,
            CMDQ_DEPTH * CMDQ_WQE,
            crate::desc::WQ_ALIGN,
            port,
            "the command queue ring",
        )?;
        let buf = DmaArea::new(allocator, mapper, CMDQ_BUF, port, "the command queue buffer")?;
        Ok(Cmdq { ring, buf, db: Regs::new(db.clone()), pi: 0, wrapped: 1, timeout })
    }

    /// IOVA of the ring (COMM 20).
    pub fn ring_iova(&self) -> u64 {
        self.ring.iova(0)
    }

    /// Sends `data` (CPU-order dwords, swapped here) as L2NIC ucode command `cmd` and waits for its completion; returns
    /// the direct result, which must be 0.
    pub fn send(&mut self, module: u8, cmd: u8, data: &[u32]) -> std::result::Result<(), Error> {
        let bytes = to_cmdq_buf(data);
        assert!(bytes.len() <= CMDQ_BUF, "command-queue buffer of {} bytes", bytes.len());
        self.buf.write(0, &bytes);
        let pi = self.pi;
        let w = lcmd_wqe(module, cmd, pi as u16, self.wrapped, self.buf.iova(0), bytes.len() as u32);
        let base = pi * CMDQ_WQE;
        // Bytes 8 to 63 first, then the header's 8 bytes (docs/hw/hinic3.md §8.2 write order).
        for (k, d) in w.iter().enumerate().skip(2) {
            self.ring.write(base + 4 * k, &d.to_le_bytes());
        }
        dma_wmb();
        self.ring.write(base, &w[0].to_le_bytes());
        self.ring.write(base + 4, &w[1].to_le_bytes());
        let next = (pi + 1) % CMDQ_DEPTH;
        if next == 0 {
            self.wrapped ^= 1;
        }
        self.pi = next;
        dma_wmb();
        doorbell::ring(&self.db, DB_PAGE_CMDQ, doorbell::info(DbKind::Cmdq, 0, 0), next as u32);
        let start = Instant::now();
        let mut ctrl_info;
        loop {
            ctrl_info = self.read_u32(base + 12);
            if ctrl_info & ctrl::HW_BUSY != 0 {
                break;
            }
            if start.elapsed() >= self.timeout {
                return Err(Error::CmdqTimeout { command: cmd, pi: pi as u16, budget: self.timeout });
            }
            // Yield: the firmware takes milliseconds, and a model (or anything else) may need this core meanwhile.
            std::thread::yield_now();
        }
        dma_rmb();
        let code = STATUS_ERR.get(self.read_u32(base + 8));
        let mut r = [0u8; 8];
        self.ring.read(base + 16, &mut r);
        let result = u64::from_le_bytes(r);
        self.ring.write(base + 12, &0u32.to_le_bytes());
        if code != 0 || result != 0 {
            return Err(Error::Cmdq { command: cmd, code, result });
        }
        Ok(())
    }

    fn read_u32(&self, off: usize) -> u32 {
        let mut b = [0u8; 4];
        self.ring.read(off, &mut b);
        u32::from_le_bytes(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcmd_wqe_fields_follow_the_notes() {
        let w = lcmd_wqe(1, ucode::MODIFY_QUEUE_CTX, 5, 1, 0x1_2345_6000, 72);
        // BUFDESC_LEN 2, COMPLETE_REQ (23), COMPLETE_SECT_LEN 3 (28:27), CTRL_LEN 1 (30:29), HW_BUSY (31).
        assert_eq!(w[0], 0xB880_0002);
        // PI 5, CMD MODIFY_QUEUE_CTX (0) in 23:16, MOD 1 in 28:24.
        assert_eq!(w[3], 0x0100_0005);
        assert_eq!((w[8], w[9], w[10]), (1, 0x2345_6000, 72));
        assert_eq!((w[1], w[2], w[4], w[5]), (0, 0, 0, 0), "cookie, status and result zero");
        assert_eq!(Field::new(31, 31).get(lcmd_wqe(1, 4, 63, 0, 0, 0)[0]), 0, "busy bit follows the wrapped flag");
        assert_eq!(Field::new(23, 16).get(lcmd_wqe(1, 4, 63, 0, 0, 0)[3]), 4);
    }
}
