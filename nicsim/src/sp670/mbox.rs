//! The mailbox to the management CPU (docs/hw/hinic3.md §6): the 64-byte register window, the header, inline
//! segments and their reassembly, the DMA ("TLP") descriptor with its XOR checksum, the 16-byte write-back status,
//! and the answer cut into inline segments for the AEQ the request named.

use super::aeq::AEQE_DATA;
use super::regs::*;
use crate::dma::IovaMap;
use crate::Error;

/// A complete message from the driver.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    pub header: u64,
    pub body: Vec<u8>,
}

impl Message {
    pub fn module(&self) -> u8 {
        H_MODULE.get(self.header) as u8
    }
    pub fn cmd(&self) -> u16 {
        H_CMD.get(self.header) as u16
    }
    pub fn msg_id(&self) -> u8 {
        H_MSG_ID.get(self.header) as u8
    }
}

/// Segments of an inline message being reassembled.
#[derive(Debug, Clone)]
struct Reasm {
    first: u64,
    next_seq: u64,
    body: Vec<u8>,
}

/// Mailbox registers and reassembly state.
#[derive(Debug, Default)]
pub(crate) struct Mailbox {
    /// The window, as logical (byte-swapped back) dwords.
    pub window: [u32; 16],
    pub int_offset: u32,
    pub control: u32,
    pub result_hi: u32,
    pub result_lo: u32,
    /// A send was triggered and not processed yet.
    pub pending: bool,
    reasm: Option<Reasm>,
}

/// Write-back status codes (docs/hw/hinic3.md §6.2).
pub const WB_DONE: u64 = 0xFF;
/// Finished with an error.
pub const WB_ERROR: u64 = 0xFE;
/// Error code: a PF sent to a wrong function.
pub const WB_ERR_PF_WRONG_FUNC: u64 = 0x300;
/// Error code: zero size.
pub const WB_ERR_ZERO_SIZE: u64 = 0x400;

/// What one triggered send produced.
pub(crate) enum Segment {
    /// Accepted; more segments follow.
    Partial,
    /// A whole message.
    Complete(Message),
    /// Refused (already written back with an error and recorded by the caller).
    Refused(String),
}

impl Mailbox {
    fn result_iova(&self) -> u64 {
        u64::from(self.result_hi) << 32 | u64::from(self.result_lo)
    }

    /// Writes the 16-byte status: bytes 0..8 a big-endian u64 (docs/hw/hinic3.md §6.2), bytes 8..16 zero.
    pub fn write_back(&self, dma: &IovaMap, status: u64) -> Result<(), Error> {
        let mut wb = [0u8; 16];
        wb[..8].copy_from_slice(&status.to_be_bytes());
        let at = self.result_iova();
        if at == 0 {
            return Err(Error::Violation {
                at: "MAILBOX_RESULT_H/L".into(),
                rule: "never set before a mailbox send (no write-back area)".into(),
            });
        }
        dma.write(at, &wb, &|| "mailbox write-back status".into())
            .map_err(|_| Error::Unmapped("mailbox write-back outside the IOVA map".into()))
    }

    /// Takes the triggered segment out of the window (docs/hw/hinic3.md §6.1 to §6.3). `dma_desc_len` is checked
    /// against the descriptor length, unverified in the notes (docs/hw/hinic3.md §17 item 5): the model takes 16 (DPDK) and 24 (Linux) alike,
    /// since neither source says the firmware refuses the other.
    pub fn take_segment(&mut self, dma: &IovaMap) -> Segment {
        let header = u64::from(self.window[0]) | u64::from(self.window[1]) << 32;
        let dst = MBOX_CTRL_DST.get(self.control);
        let refuse = |me: &mut Self, code: u64, why: String| {
            me.reasm = None;
            let _ = me.write_back(dma, WB_ERROR | code);
            Segment::Refused(why)
        };
        if dst != MGMT_FUNC {
            return refuse(
                self,
                WB_ERR_PF_WRONG_FUNC,
                format!("mailbox destination {dst:#x}: the model is only the management CPU (0x1FFF)"),
            );
        }
        if self.int_offset & MBOX_INT_WB_EN == 0 {
            return refuse(self, 0, "MAILBOX_INT_OFFSET without write-back enable (bit 28)".into());
        }
        let seg_len = H_SEG_LEN.get(header) as usize;
        let msg_len = H_MSG_LEN.get(header) as usize;
        let tx_size = MBOX_INT_TX_SIZE.get(self.int_offset) as usize;
        if tx_size != (seg_len + 8).div_ceil(4) {
            return refuse(
                self,
                0,
                format!(
                    "MAILBOX_INT_OFFSET TX size {tx_size} dwords, segment of {seg_len} bytes needs {}",
                    (seg_len + 8).div_ceil(4)
                ),
            );
        }
        if seg_len == 0 || msg_len == 0 {
            return refuse(self, WB_ERR_ZERO_SIZE, format!("mailbox header {header:#018x}: zero length"));
        }
        if H_DATA_TYPE.get(header) == 1 {
            if !(seg_len == 16 || seg_len == 24)
                || msg_len != seg_len
                || H_SEQID.get(header) != 0
                || H_LAST.get(header) != 1
            {
                return refuse(self, 0, format!("mailbox DMA-mode header {header:#018x}: MSG_LEN = SEG_LEN must be 16 or 24, one segment (SEQID 0, LAST)"));
            }
            let [csum, hi, lo, len] = [self.window[2], self.window[3], self.window[4], self.window[5]];
            let len = len as usize;
            // DMA mode carries the whole buffer: up to MBOX_MAX_BUF_SZ (2048) bytes, where an inline message's body
            // stops at 2040 (docs/hw/hinic3.md §6.5: DPDK's first acknowledgement of a HILINK message is that size).
            if len == 0 || len > MSG_MAX {
                return refuse(self, WB_ERR_ZERO_SIZE, format!("mailbox DMA body length {len} (1 to 2048)"));
            }
            let mut body = vec![0u8; len.div_ceil(4) * 4];
            let iova = u64::from(hi) << 32 | u64::from(lo);
            if dma.read(iova, &mut body, &|| "mailbox DMA body".into()).is_err() {
                return refuse(self, 0, "mailbox DMA body outside the IOVA map".into());
            }
            let x = body.chunks_exact(4).fold(0x5A5A_5A5Au32, |a, w| a ^ u32::from_le_bytes(w.try_into().expect("4")));
            if x != csum {
                return refuse(
                    self,
                    0,
                    format!("mailbox DMA checksum {csum:#010x}, body gives {x:#010x} (docs/hw/hinic3.md §6.3)"),
                );
            }
            body.truncate(len);
            self.reasm = None;
            if let Err(e) = self.write_back(dma, WB_DONE) {
                return Segment::Refused(e.to_string());
            }
            return Segment::Complete(Message { header, body });
        }
        // Inline: up to 48 bytes from window dword 2.
        let seq = H_SEQID.get(header);
        if seg_len > SEG_MAX || seq > 42 || (seq == 42 && seg_len > MSG_MAX - 42 * SEG_MAX) || msg_len > MSG_MAX - 8 {
            return refuse(self, 0, format!("mailbox inline header {header:#018x}: SEQID {seq}, SEG_LEN {seg_len}, MSG_LEN {msg_len} out of range"));
        }
        let mut seg = Vec::with_capacity(SEG_MAX);
        for d in &self.window[2..2 + seg_len.div_ceil(4)] {
            seg.extend_from_slice(&d.to_le_bytes());
        }
        seg.truncate(seg_len);
        let same = |a: u64, b: u64| {
            H_MSG_ID.get(a) == H_MSG_ID.get(b) && H_MODULE.get(a) == H_MODULE.get(b) && H_CMD.get(a) == H_CMD.get(b)
        };
        if seq == 0 {
            self.reasm = Some(Reasm { first: header, next_seq: 0, body: Vec::new() });
        }
        let Some(r) = self.reasm.as_mut() else {
            return refuse(self, 0, format!("mailbox segment SEQID {seq} without a SEQID 0 before it"));
        };
        if seq != r.next_seq || !same(r.first, header) || H_MSG_LEN.get(r.first) != msg_len as u64 {
            let why = format!(
                "mailbox segment SEQID {seq} (expected {}) or its MSG_ID/MODULE/CMD/MSG_LEN differs from segment 0",
                r.next_seq
            );
            return refuse(self, 0, why);
        }
        if H_LAST.get(header) == 0 && seg_len != SEG_MAX {
            return refuse(
                self,
                0,
                format!("mailbox segment SEQID {seq} of {seg_len} bytes is not the last, so must carry 48"),
            );
        }
        r.body.extend_from_slice(&seg);
        r.next_seq += 1;
        if let Err(e) = self.write_back(dma, WB_DONE) {
            self.reasm = None;
            return Segment::Refused(e.to_string());
        }
        if H_LAST.get(header) == 0 {
            return Segment::Partial;
        }
        let r = self.reasm.take().expect("present");
        if r.body.len() != msg_len {
            return Segment::Refused(format!(
                "mailbox message of {} bytes in segments, MSG_LEN says {msg_len}",
                r.body.len()
            ));
        }
        Segment::Complete(Message {
            header: r.first & !(H_SEQID.mask() | H_LAST.mask() | H_SEG_LEN.mask()) | (header & H_LAST.mask()),
            body: r.body,
        })
    }
}

/// The header of a message from the management CPU: answers (`direction` 1) carry the request's MSG_ID, MODULE and
/// CMD, source 0x1FFF and SOURCE = 1 (docs/hw/hinic3.md §6.4); events (`direction` 0) the same shape.
pub(crate) fn mgmt_header(
    module: u8,
    cmd: u16,
    msg_id: u8,
    aeq: u32,
    msg_len: usize,
    direction: u64,
    no_ack: bool,
) -> u64 {
    H_SRC.val(u64::from(MGMT_FUNC))
        | H_SOURCE.val(1)
        | H_AEQ_ID.val(u64::from(aeq))
        | H_MSG_ID.val(u64::from(msg_id))
        | H_CMD.val(u64::from(cmd))
        | H_MSG_LEN.val(msg_len as u64)
        | H_MODULE.val(u64::from(module))
        | H_NO_ACK.val(u64::from(no_ack))
        | H_DIRECTION.val(direction)
}

/// Cuts `body` into AEQ element data blocks: the 8-byte header (SEG_LEN, SEQID, LAST filled in) and up to 48 bytes.
pub(crate) fn segments(header: u64, body: &[u8]) -> Vec<([u8; AEQE_DATA], u32)> {
    let chunks: Vec<&[u8]> = if body.is_empty() { vec![&[][..]] } else { body.chunks(SEG_MAX).collect() };
    let n = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let h = header | H_SEG_LEN.val(c.len() as u64) | H_SEQID.val(i as u64) | H_LAST.val(u64::from(i + 1 == n));
            let mut data = [0u8; AEQE_DATA];
            data[..8].copy_from_slice(&h.to_le_bytes());
            data[8..8 + c.len()].copy_from_slice(c);
            (data, (8 + c.len()) as u32)
        })
        .collect()
}
