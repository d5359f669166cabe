//! Asynchronous event queues (docs/hw/hinic3.md §5): per-queue registers reached through AEQ_INDIR_IDX, and the
//! writer that posts 64-byte elements into host memory, big-endian per dword, with the wrap bit toggled per pass.

use super::regs::*;
use crate::dma::IovaMap;
use crate::Error;

/// Most AEQs the model offers (docs/hw/hinic3.md §5.1: at most 4).
pub const MAX_AEQS: usize = 4;
/// Element size.
pub const AEQE_LEN: usize = 64;
/// Data bytes of an element.
pub const AEQE_DATA: usize = 60;

/// One AEQ's registers and producer state.
#[derive(Debug, Default, Clone)]
pub(crate) struct Aeq {
    pub ctrl0: u32,
    pub ctrl1: u32,
    pub pages: [u64; 4],
    /// Producer index (elements).
    pub pi: u32,
    /// Flips each time the producer wraps; the hardware writes the wrap bit as its complement, so the first pass
    /// carries 1 against a driver whose `wrapped` starts at 0 (docs/hw/hinic3.md §5.3, §5.4).
    pub pass_odd: bool,
    /// The driver's last consumer index (AEQ_CI_SIMPLE_INDIR).
    pub ci: u32,
    /// The last CI write armed the queue's interrupt (bit 21), not yet used by an element.
    pub armed: bool,
}

impl Aeq {
    /// Length in elements, 0 while the queue is off.
    pub fn len(&self) -> u32 {
        AEQ_CTRL1_LEN.get(self.ctrl1)
    }

    fn page_bytes(&self) -> u64 {
        4096u64 << AEQ_CTRL1_PAGE_SIZE.get(self.ctrl1)
    }

    /// Checks a new AEQ_CTRL_1 value (docs/hw/hinic3.md §5.2); `Err` names what is wrong.
    pub fn check_ctrl1(v: u32) -> Result<(), Error> {
        if v == 0 {
            return Ok(()); // off, during reconfiguration (docs/hw/hinic3.md §5.3 step 2)
        }
        let reserved = !(AEQ_CTRL1_LEN.mask() | AEQ_CTRL1_ELEM_SIZE.mask() | AEQ_CTRL1_PAGE_SIZE.mask());
        if v & reserved != 0 {
            return Err(Error::Violation {
                at: format!("AEQ_CTRL_1 = {v:#010x}"),
                rule: format!("sets reserved bits {:#x}", v & reserved),
            });
        }
        if AEQ_CTRL1_ELEM_SIZE.get(v) != 1 {
            return Err(Error::Violation {
                at: "AEQ_CTRL_1".into(),
                rule: format!(
                    "element size code {} (the model's elements are 64 bytes, code 1)",
                    AEQ_CTRL1_ELEM_SIZE.get(v)
                ),
            });
        }
        let len = u64::from(AEQ_CTRL1_LEN.get(v));
        let page = 4096u64 << AEQ_CTRL1_PAGE_SIZE.get(v);
        if len < 2 || len * AEQE_LEN as u64 > 4 * page {
            return Err(Error::Violation {
                at: "AEQ_CTRL_1".into(),
                rule: format!("length {len} does not fit 4 pages of {page} bytes"),
            });
        }
        Ok(())
    }

    /// IOVA of element `i`.
    fn element(&self, i: u32) -> u64 {
        let at = u64::from(i) * AEQE_LEN as u64;
        self.pages[(at / self.page_bytes()) as usize] + at % self.page_bytes()
    }

    /// Writes one element: `data` (a little-endian byte stream) swapped per dword, then the descriptor dword with
    /// a release store, so a driver that sees the wrap bit change sees the data. `Err` when the queue is off or full.
    pub fn post(
        &mut self,
        q: usize,
        dma: &IovaMap,
        data: &[u8; AEQE_DATA],
        etype: u32,
        size: u32,
    ) -> Result<(), Error> {
        let len = self.len();
        if len == 0 || self.pages[0] == 0 {
            return Err(Error::Violation { at: format!("AEQ {q}"), rule: "not set up; event dropped".into() });
        }
        if (self.pi + 1) % len == self.ci % len {
            return Err(Error::Violation {
                at: format!("AEQ {q} full (PI {}, CI {})", self.pi, self.ci),
                rule: "the driver does not consume it; event dropped".into(),
            });
        }
        let mut raw = [0u8; AEQE_DATA];
        for (o, i) in raw.chunks_exact_mut(4).zip(data.chunks_exact(4)) {
            o.copy_from_slice(&[i[3], i[2], i[1], i[0]]);
        }
        let at = self.element(self.pi);
        let what = || format!("AEQ {q} element write");
        dma.write(at, &raw, &what).map_err(|_| Error::Unmapped(format!("AEQ {q} element outside the IOVA map")))?;
        let wrap = if self.pass_odd { 0 } else { AEQE_WRAP };
        let desc = AEQE_TYPE.val(etype) | AEQE_SIZE.val(size) | wrap;
        // write_u32 stores little-endian: hand it the swapped value so memory holds the big-endian descriptor.
        dma.write_u32(at + AEQE_DATA as u64, desc.swap_bytes(), &what)
            .map_err(|_| Error::Unmapped(format!("AEQ {q} descriptor outside the IOVA map")))?;
        self.pi += 1;
        if self.pi == len {
            self.pi = 0;
            self.pass_odd = !self.pass_odd;
        }
        Ok(())
    }
}
