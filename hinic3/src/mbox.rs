//! The mailbox to the management CPU (docs/hw/hinic3.md §6): the 64-bit message header, a request sent through the
//! big-endian MMIO window in DMA mode or, when the firmware offers COMM feature bit 3 (MBOX_SEGMENT), inline in
//! 48-byte segments (docs/hw/hinic3.md §6.3), the write-back wait per segment, and the answer reassembled from
//! AEQ 1 segments (docs/hw/hinic3.md §6.4); events from AEQ 0 and their acknowledgements (§6.5). One request in flight
//! at a time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use drvkit::bar::RegisterSpace;
use drvkit::barrier::{dma_rmb, dma_wmb};
use drvkit::dma::DmaMapper;
use drvkit::reg::{bit64, hi32, lo32, qword, Field, Field64};
use hugepage::Allocator;
use pktio::Result;

use crate::aeq::{desc, Aeq, AeqElem};
use crate::error::{module_name, status_name, Error};
use crate::regs::{self, mbox_ctrl, mbox_int, BeRegs};
use drvkit::dma::DmaArea;

/// Header fields (docs/hw/hinic3.md §6.1).
pub mod hdr {
    use super::Field;
    /// SRC_GLB_FUNC_IDX.
    pub const SRC: Field = Field::new(12, 0);
    /// STATUS (answer: 1 = error).
    pub const STATUS: Field = Field::new(13, 13);
    /// SOURCE (1 = mailbox).
    pub const SOURCE: Field = Field::new(15, 15);
    /// AEQ_ID for the answer.
    pub const AEQ_ID: Field = Field::new(17, 16);
    /// MSG_ID.
    pub const MSG_ID: Field = Field::new(21, 18);
    /// CMD.
    pub const CMD: Field = Field::new(31, 22);
    /// MSG_LEN (high dword bits 10:0).
    pub const MSG_LEN: Field = Field::new(10, 0);
    /// MODULE.
    pub const MODULE: Field = Field::new(15, 11);
    /// SEG_LEN.
    pub const SEG_LEN: Field = Field::new(21, 16);
    /// NO_ACK.
    pub const NO_ACK: Field = Field::new(22, 22);
    /// DATA_TYPE (1 DMA).
    pub const DATA_TYPE: Field = Field::new(23, 23);
    /// SEQID.
    pub const SEQID: Field = Field::new(29, 24);
    /// LAST.
    pub const LAST: Field = Field::new(30, 30);
    /// DIRECTION (1 answer).
    pub const DIRECTION: Field = Field::new(31, 31);
}

/// DPDK's hinic3_msg_aeq_type: the AEQ a request names (HINIC3_ASYNC_MSG_AEQ) and the one a response names
/// (HINIC3_MBOX_RSP_MSG_AEQ), in the header's AEQ_ID and MAILBOX_INT_OFFSET's destination AEQ.
const ASYNC_MSG_AEQ: u32 = 0;
const RSP_MSG_AEQ: u32 = 1;

/// The send write-back (docs/hw/hinic3.md §6.2): its first 8 bytes as a big-endian u64.
pub mod wb {
    use super::Field64;
    /// Send status.
    pub const STATUS: Field64 = Field64::new(7, 0);
    /// STATUS: finished.
    pub const FINISHED: u64 = 0xFF;
    /// STATUS: finished with an error.
    pub const FAILED: u64 = 0xFE;
    /// The error code, its values listed in place (0x100 "VF to a wrong function", ...).
    pub const ERROR: Field64 = Field64::new(15, 8);
}

/// The management CPU's function ID.
pub const MGMT_FUNC: u16 = 0x1FFF;
/// Bytes per received segment.
pub const SEG_MAX: usize = 48;
/// Highest SEQID.
pub const SEQ_MAX: u32 = 42;
/// Largest message.
pub const MSG_MAX: usize = 2048;
/// Largest request body: the message less its 8-byte header (docs/hw/hinic3.md §6.1).
pub const BODY_MAX: usize = MSG_MAX - 8;
/// COMM feature bit 3 MBOX_SEGMENT: send to the management CPU inline (docs/hw/hinic3.md §6.3, §12).
pub const COMM_MBOX_SEGMENT: u64 = bit64(3);
/// Seed of the DMA body's XOR checksum (docs/hw/hinic3.md §6.3 step 5).
const XOR_SEED: u32 = 0x5A5A_5A5A;
/// MSG_LEN = SEG_LEN of the DMA descriptor. Unverified (docs/hw/hinic3.md §17 item 5): 16 (DPDK) or 24 (Linux); 16
/// chosen, DPDK being the PF reference and this driver reusing one buffer for synchronous requests as DPDK does.
const DMA_DESC_LEN: u32 = 16;

/// A decoded 64-bit mailbox header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// Source function.
    pub src: u16,
    /// Error flag of an answer.
    pub status: bool,
    /// From the mailbox.
    pub source: bool,
    /// AEQ for the answer.
    pub aeq_id: u8,
    /// Sequence number.
    pub msg_id: u8,
    /// Command.
    pub cmd: u16,
    /// Message length.
    pub msg_len: u16,
    /// Module.
    pub module: u8,
    /// Segment length.
    pub seg_len: u8,
    /// No answer wanted.
    pub no_ack: bool,
    /// Body by DMA.
    pub dma: bool,
    /// Segment number.
    pub seq_id: u8,
    /// Last segment.
    pub last: bool,
    /// An answer.
    pub answer: bool,
}

impl Header {
    /// The header as the u64 the notes lay out (low dword first on the wire).
    pub fn encode(&self) -> u64 {
        let lo = hdr::SRC.val(self.src as u32)
            | hdr::STATUS.val(self.status as u32)
            | hdr::SOURCE.val(self.source as u32)
            | hdr::AEQ_ID.val(self.aeq_id as u32)
            | hdr::MSG_ID.val(self.msg_id as u32)
            | hdr::CMD.val(self.cmd as u32);
        let hi = hdr::MSG_LEN.val(self.msg_len as u32)
            | hdr::MODULE.val(self.module as u32)
            | hdr::SEG_LEN.val(self.seg_len as u32)
            | hdr::NO_ACK.val(self.no_ack as u32)
            | hdr::DATA_TYPE.val(self.dma as u32)
            | hdr::SEQID.val(self.seq_id as u32)
            | hdr::LAST.val(self.last as u32)
            | hdr::DIRECTION.val(self.answer as u32);
        qword(lo, hi)
    }

    /// Decodes a header.
    pub fn decode(v: u64) -> Header {
        let (lo, hi) = (lo32(v), hi32(v));
        Header {
            src: hdr::SRC.get(lo) as u16,
            status: hdr::STATUS.get(lo) != 0,
            source: hdr::SOURCE.get(lo) != 0,
            aeq_id: hdr::AEQ_ID.get(lo) as u8,
            msg_id: hdr::MSG_ID.get(lo) as u8,
            cmd: hdr::CMD.get(lo) as u16,
            msg_len: hdr::MSG_LEN.get(hi) as u16,
            module: hdr::MODULE.get(hi) as u8,
            seg_len: hdr::SEG_LEN.get(hi) as u8,
            no_ack: hdr::NO_ACK.get(hi) != 0,
            dma: hdr::DATA_TYPE.get(hi) != 0,
            seq_id: hdr::SEQID.get(hi) as u8,
            last: hdr::LAST.get(hi) != 0,
            answer: hdr::DIRECTION.get(hi) != 0,
        }
    }
}

/// The XOR checksum of a DMA body: the seed XOR every little-endian dword (the length rounded up to 4).
pub fn dma_xor(body: &[u8]) -> u32 {
    body.chunks(4).fold(XOR_SEED, |x, c| {
        let mut w = [0u8; 4];
        w[..c.len()].copy_from_slice(c);
        x ^ u32::from_le_bytes(w)
    })
}

/// The mailbox window dwords 0 to 7 (CPU order; [`BeRegs`] makes them big-endian) of a DMA-mode send.
pub fn dma_window(h: &Header, body: &[u8], body_iova: u64) -> [u32; 8] {
    let v = h.encode();
    [lo32(v), hi32(v), dma_xor(body), hi32(body_iova), lo32(body_iova), body.len() as u32, 0, 0]
}

/// The headers and bytes of an inline send of `body` (docs/hw/hinic3.md §6.3, inline mode): MSG_LEN the whole body,
/// SEG_LEN 48 except on the last segment, SEQID counting from 0, LAST on the final one, DATA_TYPE 0.
pub fn inline_segments<'a>(h: &Header, body: &'a [u8]) -> impl Iterator<Item = (Header, &'a [u8])> {
    let n = body.len().div_ceil(SEG_MAX);
    let base = Header { msg_len: body.len() as u16, dma: false, ..*h };
    body.chunks(SEG_MAX)
        .enumerate()
        .map(move |(i, c)| (Header { seg_len: c.len() as u8, seq_id: i as u8, last: i + 1 == n, ..base }, c))
}

/// The mailbox window dwords (CPU order) of one inline segment and how many to write: the header, then the data
/// from dword 2 as little-endian dwords, the last partial one padded with zeros. The count is also the TX size.
pub fn inline_window(h: &Header, seg: &[u8]) -> ([u32; 16], usize) {
    let v = h.encode();
    let mut w = [0u32; 16];
    w[0] = lo32(v);
    w[1] = hi32(v);
    for (k, c) in seg.chunks(4).enumerate() {
        let mut b = [0u8; 4];
        b[..c.len()].copy_from_slice(c);
        w[2 + k] = u32::from_le_bytes(b);
    }
    (w, 2 + seg.len().div_ceil(4))
}

/// What the mailbox has sent, by mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MboxStats {
    /// Messages sent in DMA mode.
    pub dma_messages: u64,
    /// Messages sent inline.
    pub inline_messages: u64,
    /// Inline segments sent.
    pub inline_segments: u64,
}

/// Time limits of the management channel (docs/hw/hinic3.md §15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MboxTiming {
    /// Write-back of a segment.
    pub writeback: Duration,
    /// The answer on AEQ 1.
    pub answer: Duration,
}

impl MboxTiming {
    /// The hardware's (DPDK's) values.
    pub const HARDWARE: MboxTiming = MboxTiming { writeback: Duration::from_secs(5), answer: Duration::from_secs(40) };
}

/// An asynchronous message from the management CPU (AEQ 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Module.
    pub module: u8,
    /// Command.
    pub cmd: u16,
    /// Body.
    pub body: Vec<u8>,
}

/// A message being reassembled.
#[derive(Debug, Default)]
struct Reasm {
    hdr: Option<Header>,
    next_seq: u8,
    buf: Vec<u8>,
}

impl Reasm {
    /// Takes a segment; returns the complete message (its first segment's header and the body) on LAST.
    fn push(&mut self, h: Header, seg: &[u8]) -> Option<(Header, Vec<u8>)> {
        if h.seq_id as u32 > SEQ_MAX || h.seg_len as usize > SEG_MAX {
            *self = Reasm::default();
            return None;
        }
        if h.seq_id == 0 {
            *self = Reasm { hdr: Some(h), next_seq: 0, buf: vec![0; MSG_MAX] };
        }
        let first = self.hdr?;
        if h.seq_id != self.next_seq || h.msg_id != first.msg_id || h.module != first.module || h.cmd != first.cmd {
            *self = Reasm::default();
            return None;
        }
        let at = h.seq_id as usize * SEG_MAX;
        let n = (h.seg_len as usize).min(seg.len()).min(MSG_MAX - at);
        self.buf[at..at + n].copy_from_slice(&seg[..n]);
        self.next_seq += 1;
        if !h.last {
            return None;
        }
        let mut body = std::mem::take(&mut self.buf);
        body.truncate((h.msg_len as usize).min(MSG_MAX));
        *self = Reasm::default();
        Some((Header { status: h.status, msg_len: h.msg_len, ..first }, body))
    }
}

/// The management channel: the mailbox window and its DMA areas, AEQ 1 for answers, AEQ 0 for events.
pub struct Mbox<R: RegisterSpace> {
    regs: BeRegs<R>,
    func_id: u16,
    body: DmaArea,
    wb: DmaArea,
    answers: Aeq<R>,
    events: Aeq<R>,
    msg_id: u8,
    timing: MboxTiming,
    reasm_answer: Reasm,
    reasm_event: Reasm,
    /// Events seen on AEQ 0, for [`Mbox::take_events`].
    pending: Vec<Event>,
    /// Send inline (COMM feature bit 3) instead of by DMA.
    inline: bool,
    stats: MboxStats,
}

impl<R: RegisterSpace> Mbox<R> {
    /// Allocates the body buffer and the write-back area and registers the latter (docs/hw/hinic3.md §14.1 step 4);
    /// events come on the first AEQ (AEQ 0), answers on the second (AEQ 1).
    pub fn new(
        regs: &BeRegs<R>,
        allocator: &Allocator,
        mapper: &Arc<dyn DmaMapper>,
        func_id: u16,
        [events, answers]: [Aeq<R>; 2],
        timing: MboxTiming,
        port: &str,
    ) -> Result<Self> {
        let body = DmaArea::new(allocator, mapper, MSG_MAX, port, "the mailbox body buffer")?;
        let wb = DmaArea::new(allocator, mapper, 16, port, "the mailbox write-back area")?;
        regs.write(regs::MAILBOX_RESULT_H, hi32(wb.iova(0)));
        regs.write(regs::MAILBOX_RESULT_L, lo32(wb.iova(0)));
        Ok(Mbox {
            regs: regs.clone(),
            func_id,
            body,
            wb,
            answers,
            events,
            msg_id: 0,
            timing,
            reasm_answer: Reasm::default(),
            reasm_event: Reasm::default(),
            pending: Vec::new(),
            inline: false,
            stats: MboxStats::default(),
        })
    }

    /// Chooses inline sends (the firmware offered COMM feature bit 3, docs/hw/hinic3.md §6.3) or DMA ones.
    pub fn set_inline(&mut self, on: bool) {
        self.inline = on;
    }

    /// What was sent so far.
    pub fn stats(&self) -> MboxStats {
        self.stats
    }

    /// Sends `req` (a whole management structure) to `module`/`cmd` and returns the answer's body, checked: matching
    /// module and command, header status 0 and body status byte 0 (`ok_status` lists other accepted status bytes, e.g.
    /// 0x06 for SET_MAC).
    pub fn call(&mut self, module: u8, cmd: u16, req: &[u8], ok_status: &[u8]) -> std::result::Result<Vec<u8>, Error> {
        let err = |status: u16| Error::Mgmt {
            module,
            module_name: module_name(module),
            command: cmd,
            status,
            status_name: status_name(status),
        };
        self.msg_id = hdr::MSG_ID.get(hdr::MSG_ID.val(self.msg_id as u32 + 1)) as u8;
        let h = Header {
            src: self.func_id,
            source: true,
            aeq_id: 1,
            msg_id: self.msg_id,
            cmd,
            msg_len: DMA_DESC_LEN as u16,
            module,
            seg_len: DMA_DESC_LEN as u8,
            dma: true,
            last: true,
            ..Header::default()
        };
        self.send(&h, req)?;
        let deadline = Instant::now() + self.timing.answer;
        loop {
            if let Some(e) = self.answers.poll() {
                if let Some((ah, body)) = self.take_answer(&e) {
                    if ah.msg_id != self.msg_id {
                        continue; // a late answer to an earlier, timed-out request
                    }
                    if ah.module != module || ah.cmd != cmd {
                        return Err(Error::BadAnswer {
                            module,
                            module_name: module_name(module),
                            command: cmd,
                            reason: format!("answer names module {} command {}", ah.module, ah.cmd),
                        });
                    }
                    if ah.status {
                        return Err(err(0x100));
                    }
                    let s = body.first().copied().unwrap_or(0);
                    if s != 0 && !ok_status.contains(&s) {
                        return Err(err(s as u16));
                    }
                    return Ok(body);
                }
                continue;
            }
            // Events on AEQ 0 are kept for the caller while an answer is awaited.
            self.poll_events_once();
            if Instant::now() >= deadline {
                return Err(Error::MgmtTimeout {
                    module,
                    module_name: module_name(module),
                    command: cmd,
                    stage: "answer on AEQ 1",
                    budget: self.timing.answer,
                });
            }
            std::thread::yield_now();
        }
    }

    /// Sends `body` with `h`'s module, command and MSG_ID, inline or by DMA as chosen. A DMA header (`h`) names the
    /// descriptor's length; an inline send rewrites the length, segment and data-type fields per segment.
    fn send(&mut self, h: &Header, body: &[u8]) -> std::result::Result<(), Error> {
        if body.is_empty() || body.len() > BODY_MAX {
            return Err(Error::MboxBody {
                module: h.module,
                module_name: module_name(h.module),
                command: h.cmd,
                len: body.len(),
            });
        }
        if !self.inline {
            self.stats.dma_messages += 1;
            return self.send_dma(h, body);
        }
        for (sh, seg) in inline_segments(h, body) {
            let (words, n) = inline_window(&sh, seg);
            self.wb.fill(0, 16, 0);
            dma_wmb();
            for (i, w) in words[..n].iter().enumerate() {
                self.regs.write(regs::mailbox_data(i), *w);
            }
            self.stats.inline_segments += 1;
            self.kick(&sh, n as u32)?;
        }
        self.stats.inline_messages += 1;
        Ok(())
    }

    /// Writes `body` to the DMA buffer, the header and descriptor to the window, starts the send and waits for the
    /// write-back (docs/hw/hinic3.md §6.3 steps 2 to 7).
    fn send_dma(&mut self, h: &Header, body: &[u8]) -> std::result::Result<(), Error> {
        self.body.fill(0, MSG_MAX, 0);
        self.body.write(0, body);
        self.wb.fill(0, 16, 0);
        let words = dma_window(h, body, self.body.iova(0));
        dma_wmb();
        for (i, w) in words.iter().enumerate() {
            self.regs.write(regs::mailbox_data(i), *w);
        }
        self.kick(h, (DMA_DESC_LEN + 8).div_ceil(4))
    }

    /// Starts the send of what the window holds (`tx_dwords` of it) and waits for the write-back
    /// (docs/hw/hinic3.md §6.2, §6.3 steps 6 and 7).
    fn kick(&mut self, h: &Header, tx_dwords: u32) -> std::result::Result<(), Error> {
        let (module, cmd) = (h.module, h.cmd);
        // DPDK send_mbox_seg: a request to HINIC3_ASYNC_MSG_AEQ (0), a response (an event's acknowledgement) to
        // HINIC3_MBOX_RSP_MSG_AEQ (1); the management CPU ignores it (docs/hw/hinic3.md §6.5).
        let dst_aeq = if h.answer { RSP_MSG_AEQ } else { ASYNC_MSG_AEQ };
        self.regs.write(
            regs::MAILBOX_INT_OFFSET,
            mbox_int::TX_SIZE.val(tx_dwords) | mbox_int::DST_AEQ.val(dst_aeq) | mbox_int::WB_EN.val(1),
        );
        dma_wmb();
        self.regs.write(regs::MAILBOX_CONTROL, mbox_ctrl::TX_STATUS.val(1) | mbox_ctrl::DST_FUNC.val(MGMT_FUNC as u32));
        let start = Instant::now();
        loop {
            let mut raw = [0u8; 8];
            self.wb.read(0, &mut raw);
            let v = u64::from_be_bytes(raw);
            match wb::STATUS.get(v) {
                wb::FINISHED => {
                    dma_rmb();
                    return Ok(());
                }
                wb::FAILED => {
                    let code = wb::ERROR.bits(v) as u16;
                    return Err(Error::MboxSend {
                        module,
                        module_name: module_name(module),
                        command: cmd,
                        code,
                        reason: wb_reason(code),
                    });
                }
                _ => {}
            }
            if start.elapsed() >= self.timing.writeback {
                return Err(Error::MgmtTimeout {
                    module,
                    module_name: module_name(module),
                    command: cmd,
                    stage: "mailbox write-back",
                    budget: self.timing.writeback,
                });
            }
            // Yield: the firmware takes milliseconds, and a model (or anything else) may need this core meanwhile.
            std::thread::yield_now();
        }
    }

    /// An answer segment of AEQ 1 (docs/hw/hinic3.md §6.4); `Some` once complete.
    fn take_answer(&mut self, e: &AeqElem) -> Option<(Header, Vec<u8>)> {
        let (h, seg) = mbox_message(e)?;
        if !h.answer || h.src != MGMT_FUNC {
            return None;
        }
        self.reasm_answer.push(h, seg)
    }

    /// Takes what AEQ 0 holds now: events are acknowledged when they ask for it and kept for [`Mbox::take_events`].
    pub fn poll_events_once(&mut self) {
        while let Some(e) = self.events.poll() {
            let Some((h, seg)) = mbox_message(&e) else { continue };
            if h.answer {
                continue;
            }
            if let Some((fh, body)) = self.reasm_event.push(h, seg) {
                if !fh.no_ack {
                    // docs/hw/hinic3.md §6.5: the body echoed, DIRECTION 1, NO_ACK 1, same module, command and MSG_ID.
                    // A failed acknowledgement only delays the firmware's next event; the event itself is kept.
                    let ack = Header {
                        src: self.func_id,
                        source: true,
                        aeq_id: RSP_MSG_AEQ as u8,
                        msg_len: DMA_DESC_LEN as u16,
                        seg_len: DMA_DESC_LEN as u8,
                        no_ack: true,
                        dma: true,
                        last: true,
                        answer: true,
                        ..fh
                    };
                    let echo = if body.is_empty() { vec![0] } else { body.clone() };
                    let _ = self.send(&ack, &echo);
                }
                self.pending.push(Event { module: fh.module, cmd: fh.cmd, body });
            }
        }
    }

    /// Arms AEQ 0's interrupt for the next event (or stops arming it); true when an event is already waiting
    /// (it will not signal: see [`crate::aeq::Aeq::arm`]).
    pub fn arm_events(&mut self, on: bool) -> bool {
        self.events.arm(on)
    }

    /// The events collected so far.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.pending)
    }

    /// Clears the write-back registration and stops the AEQs (docs/hw/hinic3.md §14.5).
    pub fn shutdown(&self) {
        self.regs.write(regs::MAILBOX_RESULT_H, 0);
        self.regs.write(regs::MAILBOX_RESULT_L, 0);
        self.answers.shutdown();
        self.events.shutdown();
    }
}

/// The header and segment of a mailbox-carrying element: type 1, or type 2 with SOURCE = 1 (docs/hw/hinic3.md §5.2);
/// also type 2 with SOURCE = 0 (management CPU messages in the same format).
fn mbox_message(e: &AeqElem) -> Option<(Header, &[u8])> {
    let t = desc::TYPE.get(e.desc);
    if desc::SRC.get(e.desc) != 0 || (t != desc::TYPE_MBOX && t != desc::TYPE_MSG_FROM_MGMT) {
        return None;
    }
    let mut w = [0u8; 8];
    w.copy_from_slice(&e.data[..8]);
    Some((Header::decode(u64::from_le_bytes(w)), &e.data[8..]))
}

/// What a write-back error code means (docs/hw/hinic3.md §6.2).
fn wb_reason(code: u16) -> &'static str {
    match code {
        0x100 => "VF to a wrong function",
        0x200 => "PPF to a wrong function",
        0x300 => "PF to a wrong function",
        0x400 => "zero size",
        0x500 => "unknown source function",
        0x600 => "unknown destination function",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bits `hi:lo` of `v`, the positions as docs/hw/hinic3.md §6.1 lists them (not through `hdr`, which this checks).
    fn at(v: u64, hi: u32, lo: u32) -> u64 {
        Field64::new(hi, lo).get(v)
    }

    #[test]
    fn header_fields_round_trip_and_sit_where_the_notes_say() {
        let h = Header {
            src: 0x123,
            source: true,
            aeq_id: 1,
            msg_id: 9,
            cmd: 20,
            msg_len: 16,
            module: 0,
            seg_len: 16,
            dma: true,
            last: true,
            ..Header::default()
        };
        let v = h.encode();
        assert_eq!(at(v, 12, 0), 0x123);
        assert_eq!(at(v, 15, 15), 1);
        assert_eq!(at(v, 17, 16), 1);
        assert_eq!(at(v, 21, 18), 9);
        assert_eq!(at(v, 31, 22), 20);
        assert_eq!(at(v, 42, 32), 16);
        assert_eq!(at(v, 53, 48), 16);
        assert_eq!(at(v, 55, 55), 1, "DMA");
        assert_eq!(at(v, 62, 62), 1, "LAST");
        assert_eq!(at(v, 63, 63), 0, "a request");
        assert_eq!(Header::decode(v), h);
        let a = Header { answer: true, module: 14, status: true, no_ack: true, seq_id: 42, ..h };
        assert_eq!(Header::decode(a.encode()), a);
    }

    #[test]
    fn dma_descriptor_carries_checksum_address_and_length() {
        let body = [1u8, 0, 0, 0, 2, 0, 0, 0, 3];
        assert_eq!(dma_xor(&body), 0x5A5A_5A5A ^ 1 ^ 2 ^ 3);
        let w = dma_window(&Header::default(), &body, 0x1_2345_6000);
        assert_eq!(&w[2..], &[0x5A5A_5A5A ^ 1 ^ 2 ^ 3, 1, 0x2345_6000, 9, 0, 0]);
    }

    #[test]
    fn inline_segments_carry_the_notes_fields_one_by_one() {
        let h = Header { src: 5, source: true, aeq_id: 1, msg_id: 7, cmd: 0, module: 7, ..Header::default() };
        let body: Vec<u8> = (0..=99u8).collect();
        let segs: Vec<_> = inline_segments(&h, &body).collect();
        assert_eq!(segs.len(), 3, "100 bytes: 48 + 48 + 4");
        for (i, (sh, seg)) in segs.iter().enumerate() {
            let v = sh.encode();
            assert_eq!(at(v, 12, 0), 5, "SRC");
            assert_eq!(at(v, 15, 15), 1, "SOURCE");
            assert_eq!(at(v, 17, 16), 1, "AEQ_ID");
            assert_eq!(at(v, 21, 18), 7, "MSG_ID");
            assert_eq!(at(v, 31, 22), 0, "CMD");
            assert_eq!(at(v, 42, 32), 100, "MSG_LEN is the whole body");
            assert_eq!(at(v, 47, 43), 7, "MODULE");
            assert_eq!(at(v, 53, 48), [48, 48, 4][i], "SEG_LEN");
            assert_eq!(at(v, 54, 54), 0, "NO_ACK");
            assert_eq!(at(v, 55, 55), 0, "DATA_TYPE inline");
            assert_eq!(at(v, 61, 56), i as u64, "SEQID");
            assert_eq!(at(v, 62, 62), (i == 2) as u64, "LAST");
            assert_eq!(at(v, 63, 63), 0, "a request");
            assert_eq!(*seg, &body[i * 48..(i * 48 + 48).min(100)]);
        }
        // The window: header dwords, then the data as little-endian dwords; TX size (seg_len + 8) / 4 rounded up.
        let (w, n) = inline_window(&segs[0].0, segs[0].1);
        assert_eq!(n, 14);
        assert_eq!((w[0], w[1]), (lo32(segs[0].0.encode()), hi32(segs[0].0.encode())));
        assert_eq!((w[2], w[13]), (0x0302_0100, 0x2F2E_2D2C));
        let (w, n) = inline_window(&Header { seg_len: 5, ..segs[2].0 }, &[1, 2, 3, 4, 5]);
        assert_eq!((n, w[2], w[3], w[4]), (4, 0x0403_0201, 5, 0), "the partial dword padded with zeros");
        // The largest body: 43 segments, the last of 2040 − 42 × 48 = 24 bytes.
        let big = vec![0u8; BODY_MAX];
        let last = inline_segments(&h, &big).last().unwrap().0;
        assert_eq!((last.seq_id, last.seg_len, last.last, last.msg_len), (42, 24, true, 2040));
    }

    #[test]
    fn segments_reassemble_in_order_and_reject_gaps() {
        let mut r = Reasm::default();
        let h0 = Header { msg_id: 3, module: 1, cmd: 9, seg_len: 48, msg_len: 60, answer: true, ..Header::default() };
        assert!(r.push(h0, &[7; 52]).is_none());
        let h1 = Header { seq_id: 1, seg_len: 12, last: true, ..h0 };
        let (h, body) = r.push(h1, &[8; 52]).unwrap();
        assert_eq!((h.msg_id, h.msg_len, body.len()), (3, 60, 60));
        assert!(body[..48].iter().all(|&b| b == 7) && body[48..].iter().all(|&b| b == 8));
        // A missing segment: the message is dropped.
        assert!(r.push(h0, &[7; 52]).is_none());
        assert!(r.push(Header { seq_id: 2, ..h1 }, &[8; 52]).is_none());
        // Too many segments.
        assert!(r.push(Header { seq_id: 43, ..h0 }, &[0; 52]).is_none());
    }
}
