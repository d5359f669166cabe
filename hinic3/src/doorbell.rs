//! Doorbells (docs/hw/hinic3.md §8.4, §10.1): one native little-endian 64-bit store at `page + (PI & 0xFF) * 8`, the
//! low dword the information word, the high dword PI bits 15:8.

use drvkit::bar::RegisterSpace;
use drvkit::reg::{qword, Field, Reg64, Regs};

use crate::regs::DB_PAGE;

/// Data-path doorbell, low dword: queue ID.
pub const QID: Field = Field::new(12, 0);
/// Low dword: 0 SQ, 1 RQ (and the command queue's "queue type" bit, docs/hw/hinic3.md §8.4).
pub const CFLAG: Field = Field::new(23, 23);
/// Low dword: CoS (SQ: the default CoS; RQ: 0). For a command queue: the cmdq type.
pub const COS: Field = Field::new(26, 24);
/// Low dword: source type (1 for the data path, 0 for command queues).
pub const SRC_TYPE: Field = Field::new(31, 27);
/// High dword: PI bits 15:8.
pub const PI_HI: Field = Field::new(7, 0);

/// Which queue a doorbell is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbKind {
    /// A send queue.
    Sq,
    /// A receive queue.
    Rq,
    /// The synchronous command queue.
    Cmdq,
}

/// The information dword of a doorbell.
pub const fn info(kind: DbKind, qid: u16, cos: u8) -> u32 {
    match kind {
        DbKind::Sq => QID.val(qid as u32) | COS.val(cos as u32) | SRC_TYPE.val(1),
        DbKind::Rq => QID.val(qid as u32) | CFLAG.val(1) | SRC_TYPE.val(1),
        // Queue type 1 (cmdq), cmdq type 0 (SYNC), source type 0 (docs/hw/hinic3.md §8.4).
        DbKind::Cmdq => CFLAG.val(1),
    }
}

/// PI bits 7:0: the doorbell's slot in its page (8 bytes each).
pub const PI_LO: Field = Field::new(7, 0);
/// PI bits 15:8: the high dword's [`PI_HI`].
pub const PI_HIGH_BITS: Field = Field::new(15, 8);
/// Bytes per doorbell slot.
const SLOT: usize = 8;

/// The doorbell register and its 64-bit value for producer index `pi` on `page`.
#[inline(always)]
pub const fn value(page: usize, info: u32, pi: u32) -> (Reg64, u64) {
    let reg = Reg64(page * DB_PAGE + PI_LO.get(pi) as usize * SLOT);
    (reg, qword(info, PI_HI.val(PI_HIGH_BITS.get(pi))))
}

/// Rings a doorbell on the doorbell BAR `db` (the caller has issued the store barrier that orders the WQEs before
/// it): one 64-bit store.
#[inline(always)]
pub fn ring<D: RegisterSpace>(db: &Regs<D>, page: usize, info: u32, pi: u32) {
    let (reg, v) = value(page, info, pi);
    db.write64(reg, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doorbell_words_follow_the_notes() {
        // Queue 5 (12:0), CoS 3 (26:24), source type 1 (31:27); PI 0x1234: slot 0x34, high dword 0x12.
        let (reg, v) = value(1, info(DbKind::Sq, 5, 3), 0x1234);
        assert_eq!(reg, Reg64(4096 + 0x34 * 8));
        assert_eq!(v, 0x0000_0012_0B00_0005);
        // Queue 7, CFLAG (23), source type 1; PI 0x1FE.
        let (reg, v) = value(2, info(DbKind::Rq, 7, 0), 0x1FE);
        assert_eq!(reg, Reg64(2 * 4096 + 0xFE * 8));
        assert_eq!(v, 0x0000_0001_0880_0007);
        let (reg, v) = value(0, info(DbKind::Cmdq, 0, 0), 3);
        assert_eq!((reg, v), (Reg64(24), 0x0080_0000));
    }
}
