//! The asynchronous event queues (docs/hw/hinic3.md §5): set up in host memory and polled; AEQ 0 can be armed to
//! signal its MSI-X vector at the next element (the link-event descriptor, dev/intr.rs). Elements
//! are 64 bytes, big-endian per dword (docs/hw/hinic3.md §0.1); [`Aeq::poll`] hands out each new element with its
//! dwords swapped, i.e. the 60 data bytes as the little-endian byte stream they carry and the descriptor in CPU order.

use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::barrier::{dma_rmb, mb};
use drvkit::dma::DmaMapper;
use drvkit::reg::Field;
use hugepage::Allocator;
use pktio::Result;

use crate::regs::{self, aeq_ci, aeq_ctrl0, aeq_ctrl1, BeRegs};
use drvkit::dma::DmaArea;

/// Elements per AEQ (DPDK's length, docs/hw/hinic3.md §15).
pub const AEQ_LEN: usize = 64;
/// Bytes per element.
pub const AEQE_SIZE: usize = 64;

/// Descriptor fields (docs/hw/hinic3.md §5.2).
pub mod desc {
    use super::Field;
    /// Event type.
    pub const TYPE: Field = Field::new(6, 0);
    /// Source: a software/ucode event.
    pub const SRC: Field = Field::new(7, 7);
    /// Size.
    pub const SIZE: Field = Field::new(15, 8);
    /// Wrap (owner) bit.
    pub const WRAP: Field = Field::new(31, 31);
    /// Type 1: a mailbox message from a function.
    pub const TYPE_MBOX: u32 = 1;
    /// Type 2: a message from the management CPU.
    pub const TYPE_MSG_FROM_MGMT: u32 = 2;
}

/// One element, swapped: data as a little-endian byte stream, the descriptor in CPU order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AeqElem {
    /// The 60 data bytes.
    pub data: [u8; 60],
    /// The descriptor.
    pub desc: u32,
}

/// One AEQ.
pub struct Aeq<R: RegisterSpace> {
    regs: BeRegs<R>,
    mem: DmaArea,
    q: u32,
    ci: usize,
    wrapped: u32,
    /// Every CI write arms the queue's interrupt (docs/hw/hinic3.md §5.2 bit 21: one element per arming).
    armed: bool,
}

impl<R: RegisterSpace> Aeq<R> {
    /// Sets up AEQ `q` as docs/hw/hinic3.md §5.3 says: one 4 KiB page of 64 elements, MSI-X 0, interrupts unarmed.
    pub fn new(
        regs: &BeRegs<R>,
        allocator: &Allocator,
        mapper: &Arc<dyn DmaMapper>,
        q: u32,
        pci_intf: u32,
        port: &str,
    ) -> Result<Self> {
        regs.write(regs::AEQ_INDIR_IDX, q);
        mb();
        regs.write(regs::AEQ_CTRL_1, 0);
        regs.write(regs::AEQ_PROD_IDX, 0);
        let mem = DmaArea::new(allocator, mapper, AEQ_LEN * AEQE_SIZE, port, "an AEQ page")?;
        regs.write(regs::aeq_page_hi(0), (mem.iova(0) >> 32) as u32);
        regs.write(regs::aeq_page_lo(0), mem.iova(0) as u32);
        // Every descriptor: wrap 0 (the area is zeroed, which is that value in either byte order).
        let c0 = regs.read(regs::AEQ_CTRL_0);
        let c0 = aeq_ctrl0::MSIX_IDX.set(c0, 0);
        let c0 = aeq_ctrl0::DMA_ATTR.set(c0, 0);
        let c0 = aeq_ctrl0::PCI_INTF.set(c0, pci_intf);
        let c0 = aeq_ctrl0::INTR_MODE.set(c0, 0);
        regs.write(regs::AEQ_CTRL_0, c0);
        regs.write(
            regs::AEQ_CTRL_1,
            aeq_ctrl1::LEN.val(AEQ_LEN as u32) | aeq_ctrl1::ELEM_SIZE.val(1) | aeq_ctrl1::PAGE_SIZE.val(0),
        );
        let aeq = Aeq { regs: regs.clone(), mem, q, ci: 0, wrapped: 0, armed: false };
        aeq.write_ci();
        Ok(aeq)
    }

    /// IOVA of the element page (for tests playing the device).
    pub fn page_iova(&self) -> u64 {
        self.mem.iova(0)
    }

    fn write_ci(&self) {
        let ci = (self.ci as u32) | self.wrapped << aeq_ci::WRAP_SHIFT;
        let arm = aeq_ci::ARMED.val(u32::from(self.armed));
        self.regs.write(regs::AEQ_CI_SIMPLE_INDIR, aeq_ci::CI.val(ci) | arm | aeq_ci::AEQ_IDX.val(self.q));
    }

    /// Arms (or stops arming) the interrupt: from now on each CI write asks for one at the next element. Arming
    /// serves one element, so this writes the CI at once. True when an element is already waiting: it came before
    /// the arming and will not signal, so the caller must wake its waiter itself.
    pub fn arm(&mut self, on: bool) -> bool {
        self.armed = on;
        self.write_ci();
        mb();
        self.has_new()
    }

    /// An element the consumer has not taken yet.
    fn has_new(&self) -> bool {
        desc::WRAP.get(self.desc_at_ci()) != self.wrapped
    }

    /// The descriptor of the element at the consumer index, in CPU order.
    fn desc_at_ci(&self) -> u32 {
        let mut raw = [0u8; 4];
        self.mem.read(self.ci * AEQE_SIZE + 60, &mut raw);
        u32::from_be_bytes(raw)
    }

    /// The next new element, if any (docs/hw/hinic3.md §5.4); the CI register is written after every element taken.
    pub fn poll(&mut self) -> Option<AeqElem> {
        let base = self.ci * AEQE_SIZE;
        let d = self.desc_at_ci();
        if desc::WRAP.get(d) == self.wrapped {
            return None;
        }
        dma_rmb();
        let mut bytes = [0u8; 60];
        self.mem.read(base, &mut bytes);
        let mut data = [0u8; 60];
        for k in 0..15 {
            let w = u32::from_be_bytes([bytes[4 * k], bytes[4 * k + 1], bytes[4 * k + 2], bytes[4 * k + 3]]);
            data[4 * k..4 * k + 4].copy_from_slice(&w.to_le_bytes());
        }
        self.ci += 1;
        if self.ci == AEQ_LEN {
            self.ci = 0;
            self.wrapped ^= 1;
        }
        self.write_ci();
        Some(AeqElem { data, desc: d })
    }

    /// Teardown (docs/hw/hinic3.md §5.3): stop the queue and give its producer index back as the CI.
    pub fn shutdown(&self) {
        self.regs.write(regs::AEQ_INDIR_IDX, self.q);
        self.regs.write(regs::AEQ_CTRL_1, 0);
        let pi = self.regs.read(regs::AEQ_PROD_IDX);
        self.regs.write(regs::AEQ_CI_SIMPLE_INDIR, aeq_ci::CI.val(pi) | aeq_ci::AEQ_IDX.val(self.q));
    }
}
