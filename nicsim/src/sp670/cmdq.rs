//! The command queue (docs/hw/hinic3.md §8): rings set by COMM 20/21, doorbells on page 0, 64-byte LCMD WQEs
//! (little-endian) with their data buffers (big-endian per dword), and the completion written back into the WQE
//! (status_info, the direct result, then ctrl_info bit 31 with a release store).

use super::regs::{bit, Field};
use super::Core;
use crate::Error;

/// Command queues the model offers (docs/hw/hinic3.md §8.1: at most 4).
pub const MAX_CMDQS: usize = 4;
/// WQE size in normal mode.
pub const WQE_LEN: usize = 64;
/// Largest data buffer the model reads (Linux's 2048).
pub const BUF_MAX: usize = 2048;

const HDR_BD_LEN: Field = Field::new(7, 0);
const HDR_COMPLETE_FMT: u32 = bit(15);
const HDR_DATA_FMT: u32 = bit(22);
const HDR_COMPLETE_SECT_LEN: Field = Field::new(28, 27);
const HDR_CTRL_SECT_LEN: Field = Field::new(30, 29);
const HDR_BUSY: u32 = bit(31);
const CTRL_PI: Field = Field::new(15, 0);
const CTRL_CMD: Field = Field::new(23, 16);
const CTRL_MODULE: Field = Field::new(28, 24);
const CTRL_ACK_TYPE: Field = Field::new(30, 29);
const CTRL_BUSY: u32 = bit(31);

/// COMM 20 fields (docs/hw/hinic3.md §8.3).
pub const CTX_PFN: u64 = (1 << 52) - 1;
/// curr_wqe_page_pfn bit 63, hardware busy: 1.
pub const CTX_HW_BUSY: u64 = 1 << 63;

/// One command queue.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cmdq {
    /// Ring IOVA from COMM 20 (0: no context).
    pub ring: u64,
    /// Ring depth from COMM 21 (set_cmdq_depth).
    pub depth: u32,
    /// Next WQE the model executes.
    pub ci: u32,
    /// The busy value new WQEs carry: starts at 1, flips with each wrap (docs/hw/hinic3.md §8.1).
    pub wrapped: bool,
}

/// Error code the model writes for an unknown command (status_info is an opaque non-zero code in the notes).
pub const ERR_UNKNOWN: u32 = 0xFF;
/// Error code for a malformed buffer.
pub const ERR_BAD: u32 = 0x1;

/// Undoes the per-dword big-endian order of a cmdq data buffer (docs/hw/hinic3.md §0.1, §8.6).
pub fn unswap(buf: &[u8]) -> Vec<u8> {
    buf.chunks(4).flat_map(|c| c.iter().rev().copied().collect::<Vec<u8>>()).collect()
}

impl Core {
    /// Runs every WQE of queue `q` up to the doorbell's PI. Returns how many completed.
    pub(crate) fn run_cmdq(&mut self, q: usize, pi: u32) -> usize {
        if self.inject.cmdq_stalled {
            return 0;
        }
        let mut done = 0;
        loop {
            let cq = &self.cmdqs[q];
            if cq.ring == 0 || cq.depth == 0 {
                self.fault(format!("cmdq {q} doorbell (PI {pi}) before COMM 20 and COMM 21 set its ring and depth"));
                return done;
            }
            if cq.ci == pi % cq.depth {
                return done;
            }
            let at = cq.ring + u64::from(cq.ci) * WQE_LEN as u64;
            let mut w = [0u8; WQE_LEN];
            if self.dma.read(at, &mut w, &|| format!("cmdq {q} WQE fetch")).is_err() {
                return done;
            }
            let d = |i: usize| u32::from_le_bytes(w[4 * i..4 * i + 4].try_into().expect("4"));
            let (hdr, ctrl) = (d(0), d(3));
            let (err, result) = match self.check_wqe(q, hdr, ctrl) {
                Err(e) => {
                    self.fault(e);
                    (ERR_BAD, 0)
                }
                Ok(()) => {
                    let (hi, lo, len) = (d(8), d(9), d(10) as usize);
                    let mut buf = vec![0u8; len.min(BUF_MAX)];
                    let iova = u64::from(hi) << 32 | u64::from(lo);
                    if len > BUF_MAX || len % 4 != 0 {
                        self.fault(format!(
                            "cmdq {q} WQE {}: buffer length {len} (a multiple of 4, at most {BUF_MAX})",
                            cq.ci
                        ));
                        (ERR_BAD, 0)
                    } else if len > 0 && self.dma.read(iova, &mut buf, &|| format!("cmdq {q} data buffer")).is_err() {
                        (ERR_BAD, 0)
                    } else {
                        let module = CTRL_MODULE.get(ctrl) as u8;
                        let cmd = CTRL_CMD.get(ctrl) as u8;
                        let r = self.cmdq_command(module, cmd, &unswap(&buf));
                        self.cmdq_log.push((cmd, r.0));
                        r
                    }
                }
            };
            let ci = self.cmdqs[q].ci;
            let what = || format!("cmdq {q} completion write-back");
            let _ = self.dma.write(at + 8, &err.to_le_bytes(), &what);
            let _ = self.dma.write(at + 16, &result.to_le_bytes(), &what);
            let _ = self.dma.write_u32(at + 12, ctrl | CTRL_BUSY, &what);
            let cq = &mut self.cmdqs[q];
            cq.ci += 1;
            if cq.ci == cq.depth {
                cq.ci = 0;
                cq.wrapped = !cq.wrapped;
            }
            let _ = ci;
            done += 1;
        }
    }

    fn check_wqe(&self, q: usize, hdr: u32, ctrl: u32) -> Result<(), Error> {
        let cq = &self.cmdqs[q];
        let busy = hdr & HDR_BUSY != 0;
        if busy != cq.wrapped {
            return Err(Error::Violation { at: format!("cmdq {q} WQE {}", cq.ci), rule: format!("header busy bit {} but the ring's wrapped flag is {} (stale WQE or wrong byte order, docs/hw/hinic3.md §8.2)", u8::from(busy), u8::from(cq.wrapped)) });
        }
        if HDR_BD_LEN.get(hdr) != 2
            || hdr & HDR_DATA_FMT != 0
            || HDR_CTRL_SECT_LEN.get(hdr) != 1
            || HDR_COMPLETE_SECT_LEN.get(hdr) != 3
            || hdr & HDR_COMPLETE_FMT != 0
        {
            return Err(Error::Violation { at: format!("cmdq {q} WQE {}", cq.ci), rule: format!("header_info {hdr:#010x} is not an LCMD WQE with a direct completion (BD length 2, SGE data, control-section length 1, completion-section length 3)") });
        }
        if ctrl & CTRL_BUSY != 0 || CTRL_ACK_TYPE.get(ctrl) != 0 || CTRL_PI.get(ctrl) != cq.ci {
            return Err(Error::Violation {
                at: format!("cmdq {q} WQE {}", cq.ci),
                rule: format!("ctrl_info {ctrl:#010x} (PI must be the WQE's index, ack type 0, busy clear)"),
            });
        }
        Ok(())
    }
}
