//! Send queues (docs/hw/hinic3.md §10.1, §10.2): 16-byte WQEBBs in the compact (one WQEBB) and extended (control,
//! optional task section, buffer descriptors) shapes, the owner bit checked against the ring's pass, VLAN insertion
//! and checksum offloads from the task section, and the free-running consumer index written back to the slot L2NIC 8
//! registered.

use super::ctx::SqCtx;
use super::regs::{bit, Field};
use super::Core;
use crate::net;
use crate::Error;

const CTRL_LEN: Field = Field::new(17, 0);
const CTRL_BUFDESC_NUM: Field = Field::new(26, 19);
const CTRL_TASKSECT: u32 = bit(27);
const CTRL_DF: u32 = bit(28);
const CTRL_DIRECT: u32 = bit(29);
const CTRL_EXTENDED: u32 = bit(30);
const CTRL_OWNER: u32 = bit(31);
const QI_TSO: u32 = bit(11);
const QI_UFO: u32 = bit(10);
const QI_UC: u32 = bit(28);
/// MSS of queue_info: never 0 in an extended WQE; without TSO the drivers put TX_MSS_DEFAULT 0x3E00 there (DPDK
/// `hinic3_prepare_sq_ctrl`, docs/hw/hinic3.md §10.2).
const QI_MSS: Field = Field::new(26, 13);
const TASK_L4_CSUM: u32 = bit(24);
const TASK_L3_CSUM: u32 = bit(25);
const VLAN_TCI: Field = Field::new(15, 0);
const VLAN_TPID_SEL: Field = Field::new(18, 16);
const VLAN_VALID: u32 = bit(19);
/// Most BD0 bytes in a compact WQE.
const COMPACT_MAX: u32 = 16383;
/// Smallest frame the SQ takes (docs/hw/hinic3.md §18): a shorter WQE is malformed and stops the queue.
pub const FRAME_MIN: usize = 32;
/// Largest frame the model sends (a 9600-byte MTU with its overhead, docs/hw/hinic3.md §15).
pub const FRAME_MAX: usize = 9600 + 14 + 4 + 8;

/// One started SQ.
#[derive(Debug, Clone)]
pub(crate) struct Sq {
    pub depth: u32,
    /// Next WQEBB to read.
    pub ci: u32,
    /// Owner value the next WQE must carry.
    pub owner: bool,
    /// Free-running CI written back (WQEBBs).
    pub hw_ci: u16,
    /// Where the ring's WQEBBs are.
    pub pages: super::ctx::WqPages,
}

impl Sq {
    pub fn new(ctx: SqCtx, depth: u32, pages: super::ctx::WqPages) -> Sq {
        Sq { depth, ci: u32::from(ctx.ci) % depth, owner: true, hw_ci: ctx.ci, pages }
    }
}

impl Core {
    /// Sends every WQE of SQ `q` up to `pi`; frames go to `out`. Returns the number sent.
    pub(crate) fn run_sq(&mut self, q: usize, pi: u32, out: &mut Vec<Vec<u8>>) -> usize {
        if self.inject.tx_hang.get(q).copied().unwrap_or(false) {
            return 0;
        }
        let Some(mut sq) = self.sqs[q].take() else { return 0 };
        let Some(slot) = self.mgmt.sq_ci_addr[q] else {
            self.fault(format!("SQ {q} doorbell before L2NIC 8 SQ_CI_ATTR_SET gave its CI slot"));
            self.sqs[q] = Some(sq);
            return 0;
        };
        let mut sent = 0;
        while sq.ci != pi % sq.depth {
            match self.take_wqe(q, &mut sq) {
                Ok((n, frame)) => {
                    sq.ci = (sq.ci + n) % sq.depth;
                    sq.hw_ci = sq.hw_ci.wrapping_add(n as u16);
                    if let Some(f) = frame {
                        if self.link_up() && self.mgmt.vport_enabled && self.mgmt.port_enable & 1 != 0 {
                            self.stats.tx(&f);
                            out.push(f);
                            sent += 1;
                        } else {
                            self.stats.vport[super::stats::vport::TX_DISCARD] += 1;
                            self.counters.tx_dropped += 1;
                        }
                    }
                }
                Err(e) => {
                    self.fault(e);
                    self.stats.vport[super::stats::vport::TX_ERR] += 1;
                    // The queue stops at a malformed WQE, as a hung queue would: the driver sees the CI stall.
                    break;
                }
            }
        }
        let _ = self.dma.write_u32(slot, u32::from(sq.hw_ci), &|| format!("SQ {q} CI write-back"));
        self.sqs[q] = Some(sq);
        sent
    }

    fn wqebb(&self, q: usize, sq: &Sq, i: u32) -> Result<[u32; 4], Error> {
        let at = sq.pages.at(u64::from((sq.ci + i) % sq.depth) * 16);
        let mut b = [0u8; 16];
        self.dma
            .read(at, &mut b, &|| format!("SQ {q} WQEBB fetch"))
            .map_err(|_| Error::Unmapped(format!("SQ {q} WQEBB at {at:#x} outside the IOVA map")))?;
        Ok(std::array::from_fn(|k| u32::from_le_bytes(b[4 * k..4 * k + 4].try_into().expect("4"))))
    }

    fn gather(&self, q: usize, frame: &mut Vec<u8>, hi: u32, lo: u32, len: u32) -> Result<(), Error> {
        let iova = u64::from(hi) << 32 | u64::from(lo);
        let at = frame.len();
        if len == 0 || at + len as usize > FRAME_MAX {
            return Err(Error::Violation {
                at: format!("SQ {q}"),
                rule: format!("buffer of {len} bytes (frame so far {at}, at most {FRAME_MAX})"),
            });
        }
        frame.resize(at + len as usize, 0);
        self.dma
            .read(iova, &mut frame[at..], &|| format!("SQ {q} packet buffer"))
            .map_err(|_| Error::Unmapped(format!("SQ {q} buffer at {iova:#x} outside the IOVA map")))
    }

    /// Reads one WQE: (WQEBBs used, the frame).
    fn take_wqe(&mut self, q: usize, sq: &mut Sq) -> Result<(u32, Option<Vec<u8>>), Error> {
        let w0 = self.wqebb(q, sq, 0)?;
        let ctrl = w0[0];
        if (ctrl & CTRL_OWNER != 0) != sq.owner {
            return Err(Error::Violation {
                at: format!("SQ {q} WQE at {}", sq.ci),
                rule: format!(
                    "owner bit {} but this pass expects {} (docs/hw/hinic3.md §10.2)",
                    ctrl >> 31,
                    u8::from(sq.owner)
                ),
            });
        }
        if ctrl & (CTRL_DF | CTRL_DIRECT | bit(18)) != 0 {
            return Err(Error::Violation {
                at: format!("SQ {q} WQE at {}", sq.ci),
                rule: format!("control {ctrl:#010x} sets data format, direct WQE or a reserved bit"),
            });
        }
        let mut frame = Vec::new();
        let (n, task) = if ctrl & CTRL_EXTENDED == 0 {
            if w0[1] != 0 || CTRL_BUFDESC_NUM.get(ctrl) != 0 || ctrl & CTRL_TASKSECT != 0 {
                return Err(Error::Violation {
                    at: format!("SQ {q} compact WQE at {}", sq.ci),
                    rule: format!("queue_info {:#x} / control {ctrl:#010x} must carry only BD0's length", w0[1]),
                });
            }
            if CTRL_LEN.get(ctrl) > COMPACT_MAX {
                return Err(Error::Violation {
                    at: format!("SQ {q} compact WQE at {}", sq.ci),
                    rule: format!("BD0 length {} above {COMPACT_MAX}", CTRL_LEN.get(ctrl)),
                });
            }
            self.gather(q, &mut frame, w0[2], w0[3], CTRL_LEN.get(ctrl))?;
            (1, None)
        } else {
            let bds = CTRL_BUFDESC_NUM.get(ctrl);
            let tasksect = u32::from(ctrl & CTRL_TASKSECT != 0);
            let qi = w0[1];
            if bds == 0 || qi & QI_UC == 0 || qi & (QI_TSO | QI_UFO) != 0 {
                return Err(Error::Violation {
                    at: format!("SQ {q} extended WQE at {}", sq.ci),
                    rule: format!(
                        "{bds} buffer descriptors, queue_info {qi:#010x} (UC must be 1; TSO and UFO are not modelled)"
                    ),
                });
            }
            if QI_MSS.get(qi) == 0 {
                return Err(Error::Violation {
                    at: format!("SQ {q} extended WQE at {}", sq.ci),
                    rule: format!(
                        "queue_info {qi:#010x} has MSS 0; without TSO it must carry TX_MSS_DEFAULT 0x3E00 \
                         (DPDK hinic3_prepare_sq_ctrl, docs/hw/hinic3.md §10.2)"
                    ),
                });
            }
            if tasksect + bds >= sq.depth {
                return Err(Error::Violation {
                    at: format!("SQ {q}"),
                    rule: format!("WQE at {} of {} WQEBBs does not fit the ring", sq.ci, bds + tasksect),
                });
            }
            self.gather(q, &mut frame, w0[2], w0[3], CTRL_LEN.get(ctrl))?;
            let task = if tasksect == 1 { Some(self.wqebb(q, sq, 1)?) } else { None };
            for i in 1..bds {
                let bd = self.wqebb(q, sq, tasksect + i)?;
                if bd[1] != 0 || bd[0] & !CTRL_LEN.mask() != 0 {
                    return Err(Error::Violation {
                        at: format!("SQ {q} buffer descriptor {i}"),
                        rule: format!("length word {:#x} / reserved word {:#x} (reserved must be 0)", bd[0], bd[1]),
                    });
                }
                self.gather(q, &mut frame, bd[2], bd[3], bd[0])?;
            }
            (1 + tasksect + bds - 1, task)
        };
        let flips = sq.ci + n >= sq.depth;
        if flips {
            sq.owner = !sq.owner;
        }
        if let Some(t) = task {
            apply_task(q, &mut frame, t)?;
        }
        if frame.len() < FRAME_MIN {
            return Err(Error::Violation {
                at: format!("SQ {q}"),
                rule: format!(
                    "a frame of {} bytes, below the SQ's {FRAME_MIN}-byte minimum (docs/hw/hinic3.md §18)",
                    frame.len()
                ),
            });
        }
        Ok((n, Some(frame)))
    }
}

/// Task-section offloads (docs/hw/hinic3.md §10.2): VLAN insertion, IPv4 header and TCP/UDP checksums.
fn apply_task(q: usize, frame: &mut Vec<u8>, t: [u32; 4]) -> Result<(), Error> {
    let info = t[0];
    if info & !(TASK_L4_CSUM | TASK_L3_CSUM) != 0 {
        return Err(Error::Violation {
            at: format!("SQ {q} task section pkt_info0 {info:#010x}"),
            rule: "only the inner L3/L4 checksum bits are modelled".into(),
        });
    }
    if t[1] != 0 || t[2] != 0 || t[3] & !(VLAN_TCI.mask() | VLAN_TPID_SEL.mask() | VLAN_VALID) != 0 {
        return Err(Error::Violation {
            at: format!("SQ {q} task section {t:#010x?}"),
            rule: "reserved words must be 0".into(),
        });
    }
    if t[3] & VLAN_VALID != 0 {
        if VLAN_TPID_SEL.get(t[3]) > 4 {
            return Err(Error::Violation {
                at: format!("SQ {q}"),
                rule: format!("VLAN TPID select {} (0 to 4)", VLAN_TPID_SEL.get(t[3])),
            });
        }
        let tci = VLAN_TCI.get(t[3]) as u16;
        let mut tag = vec![0x81, 0x00];
        tag.extend_from_slice(&tci.to_be_bytes());
        frame.splice(12..12, tag);
    }
    let p = net::parse(frame, 0x8100);
    if info & TASK_L3_CSUM != 0 {
        let net::L3::V4 { off, ihl, .. } = p.l3 else {
            return Err(Error::Violation {
                at: format!("SQ {q}"),
                rule: "IPv4 header checksum asked for a non-IPv4 frame".into(),
            });
        };
        frame[off + 10..off + 12].fill(0);
        let c = net::internet_checksum(&frame[off..off + ihl]);
        frame[off + 10..off + 12].copy_from_slice(&c.to_be_bytes());
    }
    if info & TASK_L4_CSUM != 0 {
        let Some((proto, l4)) = p.l4.filter(|(pr, _)| *pr == net::IPPROTO_TCP || *pr == net::IPPROTO_UDP) else {
            return Err(Error::Violation {
                at: format!("SQ {q}"),
                rule: "L4 checksum asked for a frame without TCP or UDP".into(),
            });
        };
        let len = net::l4_len(frame, &p, l4);
        let field = l4 + if proto == net::IPPROTO_TCP { 16 } else { 6 };
        frame[field..field + 2].fill(0);
        let sum = net::ones_sum(&frame[l4..l4 + len], net::pseudo_header_sum(frame, &p, proto, len));
        let mut c = !net::fold(sum);
        if c == 0 && proto == net::IPPROTO_UDP {
            c = 0xFFFF;
        }
        frame[field..field + 2].copy_from_slice(&c.to_be_bytes());
    }
    Ok(())
}
