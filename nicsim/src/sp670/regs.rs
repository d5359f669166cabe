//! The SP670 model's register map: the function CSRs of the cfg BAR (docs/hw/hinic3.md §3), the mgmt BAR's election
//! registers, the mailbox header and doorbell fields, written from the notes for the model, independently of any
//! driver. Every CSR is big-endian on the bus (docs/hw/hinic3.md §0.1): the model keeps the logical value and
//! presents it byte-swapped, so a driver that forgets the swap reads and writes garbage.

pub use drvkit::reg::{bit, Field};

/// A field `hi:lo` of a 64-bit word (the mailbox header, context words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field64 {
    /// Lowest bit.
    pub lo: u32,
    /// Width in bits.
    pub width: u32,
}

impl Field64 {
    /// The field `hi:lo`.
    pub const fn new(hi: u32, lo: u32) -> Field64 {
        Field64 { lo, width: hi - lo + 1 }
    }
    /// The field's mask in place.
    pub const fn mask(self) -> u64 {
        (if self.width == 64 { u64::MAX } else { (1u64 << self.width) - 1 }) << self.lo
    }
    /// The field's value in `word`.
    pub const fn get(self, word: u64) -> u64 {
        (word & self.mask()) >> self.lo
    }
    /// `value` placed in the field.
    pub const fn val(self, value: u64) -> u64 {
        (value << self.lo) & self.mask()
    }
}

/// cfg BAR (BAR1 of the PF) size the model presents; the notes give none (docs/hw/hinic3.md §2).
pub const CFG_BAR_LEN: usize = 0x1_0000;
/// The interrupt region's size (BAR2; the notes give no BAR sizes, docs/hw/hinic3.md §2): the MSI-X table and PBA
/// of the model's vectors, as the X540's 16 KiB MSI-X BAR holds them.
pub const INTR_BAR_LEN: usize = 16 << 10;
/// mgmt BAR (BAR3) size the model presents (it must reach 0x6020).
pub const MGMT_BAR_LEN: usize = 0x8000;
/// Doorbell BAR (BAR4): 16 pages of 4 KiB in the model (docs/hw/hinic3.md §2).
pub const DB_BAR_LEN: usize = 16 * 4096;
/// One doorbell page.
pub const DB_PAGE: usize = 4096;

// ---- function CSRs (docs/hw/hinic3.md §3) -------------------------------------------------------------------------

/// FUNC_ATTR0..6.
pub const FUNC_ATTR0: usize = 0x000;
/// FUNC_ATTR1: PPF index, number of AEQs, management ready.
pub const FUNC_ATTR1: usize = 0x004;
/// FUNC_ATTR2: CEQs, DMA attribute entries, IRQs.
pub const FUNC_ATTR2: usize = 0x008;
/// FUNC_ATTR3: VF ID range.
pub const FUNC_ATTR3: usize = 0x00C;
/// FUNC_ATTR4: doorbell control.
pub const FUNC_ATTR4: usize = 0x010;
/// FUNC_ATTR5: outbound control.
pub const FUNC_ATTR5: usize = 0x014;
/// FUNC_ATTR6: PF status, most queues.
pub const FUNC_ATTR6: usize = 0x018;
/// AEQ_CI_SIMPLE_INDIR.
pub const AEQ_CI_SIMPLE_INDIR: usize = 0x050;
/// FUNC_MSI_CLR_WR.
pub const FUNC_MSI_CLR_WR: usize = 0x058;
/// First dword of the 64-byte mailbox window.
pub const MBOX_DATA: usize = 0x080;
/// MAILBOX_CONTROL.
pub const MBOX_CONTROL: usize = 0x100;
/// MAILBOX_INT_OFFSET.
pub const MBOX_INT_OFFSET: usize = 0x104;
/// MAILBOX_RESULT_H.
pub const MBOX_RESULT_H: usize = 0x108;
/// MAILBOX_RESULT_L.
pub const MBOX_RESULT_L: usize = 0x10C;
/// AEQ_CTRL_0 (indirect).
pub const AEQ_CTRL_0: usize = 0x200;
/// AEQ_CTRL_1 (indirect).
pub const AEQ_CTRL_1: usize = 0x204;
/// AEQ_CONS_IDX (indirect, read-only).
pub const AEQ_CONS_IDX: usize = 0x208;
/// AEQ_PROD_IDX (indirect).
pub const AEQ_PROD_IDX: usize = 0x20C;
/// AEQ_INDIR_IDX.
pub const AEQ_INDIR_IDX: usize = 0x210;
/// AEQ page 0 address, high dword; low at +4, page pg at + 8·pg.
pub const AEQ_PAGE_HI: usize = 0x240;
/// mgmt BAR: PPF election.
pub const PPF_ELECTION: usize = 0x6000;
/// mgmt BAR: MPF election.
pub const MPF_ELECTION: usize = 0x6020;

/// FUNC_ATTR0 fields (docs/hw/hinic3.md §3.1).
pub const ATTR0_FUNC_IDX: Field = Field::new(11, 0);
/// FUNC_ATTR0 port-to-port index.
pub const ATTR0_P2P_IDX: Field = Field::new(16, 12);
/// FUNC_ATTR0 PCIe interface.
pub const ATTR0_PCI_INTF: Field = Field::new(19, 17);
/// FUNC_ATTR0 function type (0 PF).
pub const ATTR0_FUNC_TYPE: Field = Field::new(28, 28);
/// FUNC_ATTR1 PPF index.
pub const ATTR1_PPF_IDX: Field = Field::new(5, 0);
/// FUNC_ATTR1 log2 of the AEQ count.
pub const ATTR1_AEQS_LOG2: Field = Field::new(9, 8);
/// FUNC_ATTR1 management init done.
pub const ATTR1_MGMT_INIT_DONE: u32 = bit(30);
/// FUNC_ATTR1 PF init status.
pub const ATTR1_PF_INIT: u32 = bit(31);
/// FUNC_ATTR2 CEQ count.
pub const ATTR2_CEQS: Field = Field::new(8, 0);
/// FUNC_ATTR2 log2 of the DMA attribute entries.
pub const ATTR2_DMA_ATTR_LOG2: Field = Field::new(11, 9);
/// FUNC_ATTR2 IRQ count.
pub const ATTR2_IRQS: Field = Field::new(26, 16);
/// FUNC_ATTR4/5 bit 0: 1 disabled.
pub const ATTR45_DISABLED: u32 = bit(0);
/// FUNC_ATTR6 PF status.
pub const ATTR6_PF_STATUS: Field = Field::new(15, 0);
/// FUNC_ATTR6 most queues.
pub const ATTR6_MAX_QUEUES: Field = Field::new(31, 23);
/// PF status values (docs/hw/hinic3.md §3.1).
pub const PF_STATUS_INIT: u32 = 0x00;
/// ACTIVE: events may be sent.
pub const PF_STATUS_ACTIVE: u32 = 0x11;
/// FLR started.
pub const PF_STATUS_FLR_START: u32 = 0x12;
/// FLR finished.
pub const PF_STATUS_FLR_DONE: u32 = 0x13;

/// AEQ_CI_SIMPLE_INDIR: CI with the wrap flag in bit 20 (docs/hw/hinic3.md §5.2).
pub const AEQ_CI_CI: Field = Field::new(19, 0);
/// AEQ_CI_SIMPLE_INDIR: the wrap flag.
pub const AEQ_CI_WRAP: u32 = bit(20);
/// AEQ_CI_SIMPLE_INDIR: the AEQ index.
pub const AEQ_CI_IDX: Field = Field::new(31, 30);
/// AEQ_CTRL_1 queue length.
pub const AEQ_CTRL1_LEN: Field = Field::new(20, 0);
/// AEQ_CTRL_1 element size code (1 = 64 bytes).
pub const AEQ_CTRL1_ELEM_SIZE: Field = Field::new(25, 24);
/// AEQ_CTRL_1 page size code (log2 of page / 4 KiB).
pub const AEQ_CTRL1_PAGE_SIZE: Field = Field::new(31, 28);
/// AEQ_CTRL_0 bits outside its fields (9:0, 17:12, 22:20, 31).
pub const AEQ_CTRL0_RESERVED: u32 =
    !(Field::new(9, 0).mask() | Field::new(17, 12).mask() | Field::new(22, 20).mask() | bit(31));

/// FUNC_MSI_CLR_WR vector index.
pub const MSI_CLR_IDX: Field = Field::new(31, 22);
/// FUNC_MSI_CLR_WR: clear the resend timer.
pub const MSI_CLR_RESEND: u32 = bit(0);
/// FUNC_MSI_CLR_WR: set the interrupt mask.
pub const MSI_SET_MASK: u32 = bit(1);
/// FUNC_MSI_CLR_WR: clear the interrupt mask.
pub const MSI_CLR_MASK: u32 = bit(2);
/// FUNC_MSI_CLR_WR: set auto-mask.
pub const MSI_SET_AUTO_MASK: u32 = bit(3);
/// FUNC_MSI_CLR_WR: clear auto-mask.
pub const MSI_CLR_AUTO_MASK: u32 = bit(4);
/// AEQ_CTRL_0: the AEQ's MSI-X vector.
pub const AEQ_CTRL0_MSIX: Field = Field::new(9, 0);
/// AEQ_CTRL_0: interrupt mode "always" (0: only when armed).
pub const AEQ_CTRL0_INT_ALWAYS: u32 = bit(31);
/// AEQ_CI_SIMPLE_INDIR: armed (interrupt at the next element).
pub const AEQ_CI_ARMED: u32 = bit(21);

/// MAILBOX_CONTROL: TX status (write 1 to send).
pub const MBOX_CTRL_TX_STATUS: u32 = bit(1);
/// MAILBOX_CONTROL: destination function.
pub const MBOX_CTRL_DST: Field = Field::new(28, 16);
/// MAILBOX_INT_OFFSET: TX size in dwords.
pub const MBOX_INT_TX_SIZE: Field = Field::new(24, 20);
/// MAILBOX_INT_OFFSET: write-back enable.
pub const MBOX_INT_WB_EN: u32 = bit(28);
/// The management CPU's function number.
pub const MGMT_FUNC: u32 = 0x1FFF;

// ---- mailbox header (docs/hw/hinic3.md §6.1) ------------------------------------------------------------------------

/// Source global function.
pub const H_SRC: Field64 = Field64::new(12, 0);
/// STATUS (error in an answer).
pub const H_STATUS: Field64 = Field64::new(13, 13);
/// SOURCE (1: mailbox).
pub const H_SOURCE: Field64 = Field64::new(15, 15);
/// AEQ for the answer.
pub const H_AEQ_ID: Field64 = Field64::new(17, 16);
/// Message sequence number.
pub const H_MSG_ID: Field64 = Field64::new(21, 18);
/// Command.
pub const H_CMD: Field64 = Field64::new(31, 22);
/// Total length.
pub const H_MSG_LEN: Field64 = Field64::new(42, 32);
/// Module.
pub const H_MODULE: Field64 = Field64::new(47, 43);
/// Segment length.
pub const H_SEG_LEN: Field64 = Field64::new(53, 48);
/// No answer wanted.
pub const H_NO_ACK: Field64 = Field64::new(54, 54);
/// 1: body by DMA.
pub const H_DATA_TYPE: Field64 = Field64::new(55, 55);
/// Segment number.
pub const H_SEQID: Field64 = Field64::new(61, 56);
/// Last segment.
pub const H_LAST: Field64 = Field64::new(62, 62);
/// 0 request, 1 answer.
pub const H_DIRECTION: Field64 = Field64::new(63, 63);
/// Bytes per inline segment.
pub const SEG_MAX: usize = 48;
/// Most bytes of a message body.
pub const MSG_MAX: usize = 2048;

// ---- AEQ element descriptor (docs/hw/hinic3.md §5.2) -------------------------------------------------------------

/// Event type.
pub const AEQE_TYPE: Field = Field::new(6, 0);
/// Element data size.
pub const AEQE_SIZE: Field = Field::new(15, 8);
/// Wrap (owner) bit.
pub const AEQE_WRAP: u32 = bit(31);
/// Event type 1: mailbox from a function (the model's choice for answers and events, docs/hw/hinic3.md §5.2 lets both 1 and 2 carry them).
pub const AEQE_TYPE_MBOX: u32 = 1;

// ---- doorbells (docs/hw/hinic3.md §8.4, §10.1) ---------------------------------------------------------------------

/// Data path: queue ID.
pub const DB_QID: Field = Field::new(12, 0);
/// Data path: 0 SQ, 1 RQ. For the cmdq (source type 0) this bit is "queue type = cmdq".
pub const DB_CFLAG: u32 = bit(23);
/// CoS (data path) or cmdq type (cmdq).
pub const DB_COS: Field = Field::new(26, 24);
/// Source type: 0 cmdq, 1 data path.
pub const DB_SRC_TYPE: Field = Field::new(31, 27);
/// High dword: PI bits 15:8.
pub const DB_PI_HI: Field = Field::new(7, 0);
