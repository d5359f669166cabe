//! SQ and RQ contexts (docs/hw/hinic3.md §9) and the command-queue data buffers that carry them (§8.6): built as
//! little-endian dwords, then swapped per dword into the big-endian buffer ([`to_cmdq_buf`], the one place).

use drvkit::reg::Field;

use crate::desc::RQ_WQE_TYPE_NORMAL;

/// A 64-byte queue context as sixteen dwords in CPU order.
pub type Ctx = [u32; 16];

const PFN_HI: Field = Field::new(19, 0);
const OWNER_SQ: Field = Field::new(23, 23);
const PI: Field = Field::new(15, 0);
const CI: Field = Field::new(31, 16);
const SQ_ID: Field = Field::new(12, 0);
const VLAN_INSERT_MODE: Field = Field::new(20, 19);
const PREF_THRESH: Field = Field::new(13, 0);
const PREF_MAX: Field = Field::new(24, 14);
const PREF_MIN: Field = Field::new(31, 25);
const PREF_CI_HI: Field = Field::new(3, 0);
const PREF_OWNER: Field = Field::new(4, 4);
const PREF_CI_LO: Field = Field::new(31, 20);
const BLOCK_PFN_HI: Field = Field::new(22, 0);
const DROP_ON: Field = Field::new(15, 0);
const RQ_WQE_TYPE: Field = Field::new(29, 28);
const RQ_OWNER: Field = Field::new(31, 31);
const RQ_INTR_DISABLE: Field = Field::new(31, 31);
const RQ_MSIX: Field = Field::new(30, 21);
const RQ_CQE_LEN: Field = Field::new(29, 28);

/// The SQ context (docs/hw/hinic3.md §9.1) of a ring whose first WQ page is at `ring_iova` and whose WQ block (the
/// ring for 0-level CLA, its page table for 1-level, [`crate::wq`]) is at `block_iova`; queue `sq_id`, indexes 0.
pub fn sq_ctx(sq_id: u16, ring_iova: u64, block_iova: u64) -> Ctx {
    let page_pfn = ring_iova >> 12;
    let block_pfn = block_iova >> 9;
    let mut c = [0u32; 16];
    c[0] = PI.val(0) | CI.val(0);
    c[2] = PFN_HI.val((page_pfn >> 32) as u32) | OWNER_SQ.val(1);
    c[3] = page_pfn as u32;
    c[5] = DROP_ON.val(0xFFFF);
    c[6] = SQ_ID.val(sq_id as u32);
    c[7] = VLAN_INSERT_MODE.val(1);
    c[8] = PREF_THRESH.val(256) | PREF_MAX.val(6) | PREF_MIN.val(1);
    c[9] = PREF_CI_HI.val(0) | PREF_OWNER.val(1);
    c[10] = PFN_HI.val((page_pfn >> 32) as u32) | PREF_CI_LO.val(0);
    c[11] = page_pfn as u32;
    c[14] = BLOCK_PFN_HI.val((block_pfn >> 32) as u32);
    c[15] = block_pfn as u32;
    c
}

/// The RQ context (docs/hw/hinic3.md §9.2) of a normal-WQE ring (first WQ page and WQ block as for [`sq_ctx`]):
/// polled (dword 1 bit 31 = 1, MSI-X 0), or interrupting on vector `msix` (bit 31 = 0, the index in 30:21;
/// docs/hw/hinic3.md §5.5).
pub fn rq_ctx(ring_iova: u64, block_iova: u64, msix: Option<u16>) -> Ctx {
    let page_pfn = ring_iova >> 12;
    let block_pfn = block_iova >> 9;
    let mut c = [0u32; 16];
    c[1] = match msix {
        None => RQ_INTR_DISABLE.val(1),
        Some(v) => RQ_MSIX.val(v.into()),
    };
    c[2] = PFN_HI.val((page_pfn >> 32) as u32) | RQ_WQE_TYPE.val(RQ_WQE_TYPE_NORMAL) | RQ_OWNER.val(1);
    c[3] = page_pfn as u32;
    c[7] = RQ_CQE_LEN.val(1);
    c[8] = PREF_THRESH.val(256) | PREF_MAX.val(6) | PREF_MIN.val(1);
    c[9] = PREF_CI_HI.val(0) | PREF_OWNER.val(1);
    c[10] = PFN_HI.val((page_pfn >> 32) as u32) | PREF_CI_LO.val(0);
    c[11] = page_pfn as u32;
    // Unverified (docs/hw/hinic3.md §17 item 3): the §9.2 "PI address" (dwords 12, 13): left 0 as Linux does; its
    // meaning is unverified.
    c[14] = BLOCK_PFN_HI.val((block_pfn >> 32) as u32);
    c[15] = block_pfn as u32;
    c
}

/// Queue type of the MODIFY_QUEUE_CTX header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueType {
    /// Send queues.
    Sq = 0,
    /// Receive queues.
    Rq = 1,
}

/// Contexts per MODIFY_QUEUE_CTX command with a 1 KiB buffer (docs/hw/hinic3.md §8.1: DPDK's 13).
pub const CTX_PER_CMD: usize = 13;

/// The MODIFY_QUEUE_CTX (cmdq 0) buffer in CPU-order dwords: the header {num, type, start, 0} and the contexts.
pub fn modify_queue_ctx(kind: QueueType, start_qid: u16, ctxs: &[Ctx]) -> Vec<u32> {
    let mut v = Vec::with_capacity(2 + 16 * ctxs.len());
    // The u16 pairs as a little-endian structure: num_queues at byte 0, queue_type at 2, start_qid at 4.
    v.push(ctxs.len() as u32 | (kind as u32) << 16);
    v.push(start_qid as u32);
    for c in ctxs {
        v.extend_from_slice(c);
    }
    v
}

/// The CLEAN_QUEUE_CONTEXT (cmdq 1) buffer: the header for `num` queues from 0, and 4 reserved bytes.
pub fn clean_queue_ctx(kind: QueueType, num: u16) -> Vec<u32> {
    vec![num as u32 | (kind as u32) << 16, 0, 0]
}

/// The SET_RSS_INDIR_TABLE (cmdq 4) buffer: 16 reserved bytes, then 256 u16 queue IDs as a little-endian array.
pub fn rss_indir_table(table: &[u16; 256]) -> Vec<u32> {
    let mut v = vec![0u32; 4];
    for pair in table.chunks(2) {
        v.push(pair[0] as u32 | (pair[1] as u32) << 16);
    }
    v
}

/// The SET_RQ_FLUSH (cmdq 10) buffer: (local RQ id << 16) | global RQ id 0.
pub fn rq_flush(local_rq: u16) -> Vec<u32> {
    vec![(local_rq as u32) << 16]
}

/// Bytes of a command-queue data buffer: each dword big-endian (docs/hw/hinic3.md §0.1, §8.6).
pub fn to_cmdq_buf(dwords: &[u32]) -> Vec<u8> {
    dwords.iter().flat_map(|d| d.to_be_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sq_context_fields_land_where_the_notes_say() {
        let iova = 0x0000_0123_4560_0000u64;
        let c = sq_ctx(7, iova, iova);
        let pfn = iova >> 12;
        assert_eq!(c[2], (pfn >> 32) as u32 | 1 << 23, "PFN high and owner 1");
        assert_eq!(c[3], pfn as u32);
        assert_eq!(c[5], 0xFFFF);
        assert_eq!(c[6], 7);
        assert_eq!(c[7], 1 << 19, "C-VLAN insert mode");
        assert_eq!(c[8], 256 | 6 << 14 | 1 << 25);
        assert_eq!(c[9], 1 << 4);
        assert_eq!((c[10], c[11]), ((pfn >> 32) as u32, pfn as u32));
        assert_eq!((c[14], c[15]), (((iova >> 9) >> 32) as u32, (iova >> 9) as u32));
        assert_eq!((c[0], c[1], c[4], c[12], c[13]), (0, 0, 0, 0, 0));
    }

    #[test]
    fn rq_context_is_polled_normal_wqe_with_32_byte_cqes() {
        let c = rq_ctx(0x8000_0000, 0x8000_0000, None);
        assert_eq!(c[1], 1 << 31);
        assert_eq!(c[2] >> 28, 0b1010, "owner 1, WQE type 2");
        assert_eq!(c[3], 0x80000);
        assert_eq!(c[7], 1 << 28);
        assert_eq!(c[15], 0x8000_0000 >> 9);
        // 1-level CLA: the block PFN names the page table, the page PFNs still the first page.
        let c = rq_ctx(0x8000_0000, 0x1234_5000, None);
        assert_eq!((c[3], c[11], c[15]), (0x80000, 0x80000, 0x1234_5000 >> 9));
    }

    #[test]
    fn cmdq_buffers_are_big_endian_per_dword() {
        let b = to_cmdq_buf(&modify_queue_ctx(QueueType::Rq, 4, &[[0; 16]]));
        // In memory: queue_type, num_queues, reserved, start_qid, each big-endian (docs/hw/hinic3.md §8.6).
        assert_eq!(&b[..8], &[0, 1, 0, 1, 0, 0, 0, 4]);
        assert_eq!(b.len(), 8 + 64);
        let mut t = [0u16; 256];
        for (i, e) in t.iter_mut().enumerate() {
            *e = i as u16 % 4;
        }
        let r = to_cmdq_buf(&rss_indir_table(&t));
        assert_eq!(r.len(), 16 + 512);
        // Each 4-byte group holds entry 2k + 1, then entry 2k, each big-endian.
        assert_eq!(&r[16..24], &[0, 1, 0, 0, 0, 3, 0, 2]);
        assert_eq!(to_cmdq_buf(&rq_flush(3)), vec![0, 3, 0, 0]);
        assert_eq!(to_cmdq_buf(&clean_queue_ctx(QueueType::Sq, 256)).len(), 12);
    }
}
