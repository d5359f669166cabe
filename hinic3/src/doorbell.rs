//! Doorbells (docs/hw/hinic3.md §8.4, §10.1): one native little-endian 64-bit store at `page + (PI & 0xFF) * 8`, the
//! low dword the information word, the high dword PI bits 15:8.

use drvkit::bar::RegisterSpace;
use drvkit::reg::Field;

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

/// The 64-bit doorbell value and its offset in the doorbell BAR for producer index `pi` on `page`.
#[inline(always)]
pub const fn value(page: usize, info: u32, pi: u32) -> (usize, u64) {
    let off = page * DB_PAGE + (pi as usize & 0xFF) * 8;
    (off, info as u64 | (PI_HI.val(pi >> 8) as u64) << 32)
}

/// Rings a doorbell (the caller has issued the store barrier that orders the WQEs before it).
#[inline(always)]
pub fn ring<D: RegisterSpace + ?Sized>(db: &D, page: usize, info: u32, pi: u32) {
    let (off, v) = value(page, info, pi);
    db.write64(off, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doorbell_words_follow_the_notes() {
        let (off, v) = value(1, info(DbKind::Sq, 5, 3), 0x1234);
        assert_eq!(off, 4096 + 0x34 * 8);
        assert_eq!(v as u32, 5 | 3 << 24 | 1 << 27);
        assert_eq!((v >> 32) as u32, 0x12);
        let (off, v) = value(2, info(DbKind::Rq, 7, 0), 0x1FE);
        assert_eq!(off, 2 * 4096 + 0xFE * 8);
        assert_eq!(v as u32, 7 | 1 << 23 | 1 << 27);
        assert_eq!(v >> 32, 1);
        let (off, v) = value(0, info(DbKind::Cmdq, 0, 0), 3);
        assert_eq!((off, v), (24, 1 << 23));
    }
}
