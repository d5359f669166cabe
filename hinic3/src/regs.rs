//! The function CSRs of the cfg BAR and the election registers of the mgmt BAR (docs/hw/hinic3.md §2, §3), named as the
//! notes name them, and [`BeRegs`]: the typed access through which all of them are read and written, in CPU order
//! (their big-endian byte order, docs/hw/hinic3.md §0.1, is converted in drvkit's `Regs`). No other code swaps
//! register bytes.

pub use drvkit::reg::{bit, Field, Reg};

/// Typed access to a big-endian register space (the cfg BAR, the mgmt BAR): every value the driver sees or writes
/// is in CPU order; the bus carries it big-endian (docs/hw/hinic3.md §0.1). drvkit's [`Regs`](drvkit::reg::Regs)
/// does the conversion.
pub type BeRegs<R> = drvkit::reg::Regs<R, true>;

/// FUNC_ATTR0: identity (docs/hw/hinic3.md §3.1).
pub const FUNC_ATTR0: Reg = Reg(0x000);
/// FUNC_ATTR1: PPF index, AEQ count, management ready.
pub const FUNC_ATTR1: Reg = Reg(0x004);
/// FUNC_ATTR2: CEQs, DMA attribute entries, IRQs.
pub const FUNC_ATTR2: Reg = Reg(0x008);
/// FUNC_ATTR3: VF ID range.
pub const FUNC_ATTR3: Reg = Reg(0x00C);
/// FUNC_ATTR4: doorbell control.
pub const FUNC_ATTR4: Reg = Reg(0x010);
/// FUNC_ATTR5: outbound (DMA) control.
pub const FUNC_ATTR5: Reg = Reg(0x014);
/// FUNC_ATTR6: PF status, most queues.
pub const FUNC_ATTR6: Reg = Reg(0x018);
/// AEQ_CI_SIMPLE_INDIR: an AEQ's consumer index (docs/hw/hinic3.md §5.2).
pub const AEQ_CI_SIMPLE_INDIR: Reg = Reg(0x050);
/// FUNC_MSI_CLR_WR: mask/unmask an MSI-X vector by index.
pub const FUNC_MSI_CLR_WR: Reg = Reg(0x058);
/// MAILBOX_DATA: the 64-byte mailbox window, dword `i` (docs/hw/hinic3.md §6.2, §6.3).
pub const fn mailbox_data(i: usize) -> Reg {
    Reg(0x080 + 4 * i)
}
/// MAILBOX_CONTROL: starts a send.
pub const MAILBOX_CONTROL: Reg = Reg(0x100);
/// MAILBOX_INT_OFFSET: send attributes.
pub const MAILBOX_INT_OFFSET: Reg = Reg(0x104);
/// MAILBOX_RESULT_H: IOVA of the write-back area, high.
pub const MAILBOX_RESULT_H: Reg = Reg(0x108);
/// MAILBOX_RESULT_L: IOVA of the write-back area, low.
pub const MAILBOX_RESULT_L: Reg = Reg(0x10C);
/// AEQ_CTRL_0 of the AEQ selected by AEQ_INDIR_IDX.
pub const AEQ_CTRL_0: Reg = Reg(0x200);
/// AEQ_CTRL_1 of the selected AEQ.
pub const AEQ_CTRL_1: Reg = Reg(0x204);
/// AEQ_PROD_IDX of the selected AEQ.
pub const AEQ_PROD_IDX: Reg = Reg(0x20C);
/// AEQ_INDIR_IDX: selects the AEQ.
pub const AEQ_INDIR_IDX: Reg = Reg(0x210);
/// AEQ page `pg` address, high dword.
pub const fn aeq_page_hi(pg: usize) -> Reg {
    Reg(0x240 + 8 * pg)
}
/// AEQ page `pg` address, low dword.
pub const fn aeq_page_lo(pg: usize) -> Reg {
    Reg(0x244 + 8 * pg)
}
/// PPF election register of the mgmt BAR (docs/hw/hinic3.md §3.1).
pub const PPF_ELECTION: Reg = Reg(0x6000);
/// MPF election register of the mgmt BAR.
pub const MPF_ELECTION: Reg = Reg(0x6020);

/// FUNC_ATTR0 fields.
pub mod attr0 {
    use super::Field;
    /// Global function index: every command's func_id.
    pub const GLOBAL_IDX: Field = Field::new(11, 0);
    /// PCIe interface (host) index.
    pub const PCI_INTF_IDX: Field = Field::new(19, 17);
    /// 0 PF, 1 VF.
    pub const FUNC_TYPE: Field = Field::new(28, 28);
}

/// FUNC_ATTR1 fields.
pub mod attr1 {
    use super::{bit, Field};
    /// PPF index.
    pub const PPF_IDX: Field = Field::new(5, 0);
    /// log2 of the number of AEQs.
    pub const AEQS_LOG2: Field = Field::new(9, 8);
    /// The management CPU finished its init.
    pub const MGMT_INIT_DONE: u32 = bit(30);
}

/// FUNC_ATTR2 fields.
pub mod attr2 {
    use super::Field;
    /// Number of CEQs.
    pub const CEQS: Field = Field::new(8, 0);
    /// Number of IRQs.
    pub const IRQS: Field = Field::new(26, 16);
}

/// FUNC_ATTR4 bit 0: doorbells disabled. FUNC_ATTR5 bit 0: outbound DMA disabled.
pub const ATTR45_DISABLED: u32 = bit(0);

/// FUNC_ATTR6 fields.
pub mod attr6 {
    use super::Field;
    /// PF status.
    pub const PF_STATUS: Field = Field::new(15, 0);
    /// INIT: the management CPU sends this function no events.
    pub const STATUS_INIT: u32 = 0x00;
    /// ACTIVE: events may come.
    pub const STATUS_ACTIVE: u32 = 0x11;
    /// The function's most SQs.
    pub const MAX_QUEUES: Field = Field::new(31, 23);
}

/// FUNC_MSI_CLR_WR fields.
pub mod msi_clr {
    use super::{bit, Field};
    /// Clear the resend timer.
    pub const CLR_RESEND: u32 = bit(0);
    /// Set the interrupt mask (vector off).
    pub const SET_MASK: u32 = bit(1);
    /// Clear the interrupt mask (vector on).
    pub const CLR_MASK: u32 = bit(2);
    /// Auto-mask on: the vector masks itself when it signals.
    pub const SET_AUTO_MASK: u32 = bit(3);
    /// Auto-mask off.
    pub const CLR_AUTO_MASK: u32 = bit(4);
    /// The vector the operation applies to.
    pub const INDEX: Field = Field::new(31, 22);
}

/// AEQ_CTRL_0 fields (docs/hw/hinic3.md §5.2).
pub mod aeq_ctrl0 {
    use super::Field;
    /// MSI-X index.
    pub const MSIX_IDX: Field = Field::new(9, 0);
    /// DMA attribute index.
    pub const DMA_ATTR: Field = Field::new(17, 12);
    /// PCIe interface index.
    pub const PCI_INTF: Field = Field::new(22, 20);
    /// Interrupt mode (0 armed).
    pub const INTR_MODE: Field = Field::new(31, 31);
}

/// AEQ_CTRL_1 fields.
pub mod aeq_ctrl1 {
    use super::Field;
    /// Queue length in elements.
    pub const LEN: Field = Field::new(20, 0);
    /// log2(element size / 32).
    pub const ELEM_SIZE: Field = Field::new(25, 24);
    /// log2(page size / 4 KiB).
    pub const PAGE_SIZE: Field = Field::new(31, 28);
}

/// AEQ_CI_SIMPLE_INDIR fields.
pub mod aeq_ci {
    use super::Field;
    /// Consumer index with the wrap flag in its bit 20.
    pub const CI: Field = Field::new(20, 0);
    /// Wrap flag position inside CI.
    pub const WRAP_SHIFT: u32 = 20;
    /// Arm (interrupt on the next event).
    pub const ARMED: Field = Field::new(21, 21);
    /// The AEQ's index.
    pub const AEQ_IDX: Field = Field::new(31, 30);
}

/// MAILBOX_INT_OFFSET fields (docs/hw/hinic3.md §6.2).
pub mod mbox_int {
    use super::Field;
    /// Destination AEQ.
    pub const DST_AEQ: Field = Field::new(11, 10);
    /// TX size in dwords.
    pub const TX_SIZE: Field = Field::new(24, 20);
    /// Write-back enable.
    pub const WB_EN: Field = Field::new(28, 28);
}

/// MAILBOX_CONTROL fields.
pub mod mbox_ctrl {
    use super::Field;
    /// Write 1 to start ("in process").
    pub const TX_STATUS: Field = Field::new(1, 1);
    /// Destination function.
    pub const DST_FUNC: Field = Field::new(28, 16);
}

/// Doorbell pages of the doorbell BAR (docs/hw/hinic3.md §2): 4 KiB each; page 0 command queues, 1 SQs, 2 RQs.
pub const DB_PAGE: usize = 4096;
/// Doorbell page of the command queues.
pub const DB_PAGE_CMDQ: usize = 0;
/// Doorbell page of every SQ.
pub const DB_PAGE_SQ: usize = 1;
/// Doorbell page of every RQ.
pub const DB_PAGE_RQ: usize = 2;

#[cfg(test)]
mod tests {
    use super::*;
    use drvkit::bar::RegisterSpace;
    use std::sync::{Arc, Mutex};

    /// Words as the bus carries them.
    struct Raw(Mutex<Vec<u32>>);
    impl RegisterSpace for Raw {
        fn read32(&self, o: usize) -> u32 {
            self.0.lock().unwrap()[o / 4]
        }
        fn write32(&self, o: usize, v: u32) {
            self.0.lock().unwrap()[o / 4] = v;
        }
        fn len(&self) -> usize {
            self.0.lock().unwrap().len() * 4
        }
    }

    #[test]
    fn registers_are_big_endian_on_the_bus() {
        let raw = Arc::new(Raw(Mutex::new(vec![0; 64])));
        let regs = BeRegs::new(raw.clone());
        regs.write(FUNC_ATTR6, 0x0000_0011);
        // Byte 0 on the bus is the most significant byte of the value.
        assert_eq!(raw.read32(0x18).to_ne_bytes(), [0x00, 0x00, 0x00, 0x11]);
        raw.write32(0x04, u32::from_ne_bytes([0x40, 0x00, 0x01, 0x05]));
        let a1 = regs.read(FUNC_ATTR1);
        assert_ne!(a1 & attr1::MGMT_INIT_DONE, 0);
        assert_eq!(attr1::AEQS_LOG2.get(a1), 1);
        assert_eq!(attr1::PPF_IDX.get(a1), 5);
    }
}
