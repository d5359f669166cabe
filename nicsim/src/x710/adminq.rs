//! The admin queue (docs/hw/i40e.md §5): the ATQ (driver → firmware) and ARQ (firmware → driver) rings, and the
//! firmware's side of every command a bring-up sends (docs/hw/i40e.md §3, §6, §7, §12.3), each decoded field by field.
//!
//! Strictness: a descriptor whose flags contradict its opcode (BUF on a direct command, RD missing on a set
//! command, LB not matching a buffer above 512 bytes, DD/CMP/ERR left set by the driver), a non-zero reserved
//! parameter byte, a wrong length or an invalid field value is recorded as a fault and answered with EINVAL (and
//! ERR). An opcode the model does not know is answered with ESRCH, the "unknown opcode" code of docs/hw/i40e.md §5.2, never with
//! success. Indirect buffers move only by DMA through the IOVA map.

use crate::fault::Fault;

use super::aqdecode::{spec, Buf, Command};
use super::regs::*;
use super::{Core, X710Config, X710State, QS_HANDLE_BASE, VSI_SEID_BASE};

/// Opcodes (docs/hw/i40e.md §6).
pub mod opcode {
    /// Get Version.
    pub const GET_VERSION: u16 = 0x0001;
    /// Driver Version.
    pub const DRIVER_VERSION: u16 = 0x0002;
    /// Queue Shutdown.
    pub const QUEUE_SHUTDOWN: u16 = 0x0003;
    /// Set PF Context.
    pub const SET_PF_CONTEXT: u16 = 0x0004;
    /// Request Resource.
    pub const REQUEST_RESOURCE: u16 = 0x0008;
    /// Release Resource.
    pub const RELEASE_RESOURCE: u16 = 0x0009;
    /// List Function Capabilities.
    pub const LIST_FUNC_CAPS: u16 = 0x000A;
    /// List Device Capabilities.
    pub const LIST_DEV_CAPS: u16 = 0x000B;
    /// MAC Address Read.
    pub const MAC_ADDRESS_READ: u16 = 0x0107;
    /// Clear PXE Mode.
    pub const CLEAR_PXE_MODE: u16 = 0x0110;
    /// Get Switch Config.
    pub const GET_SWITCH_CONFIG: u16 = 0x0200;
    /// Set Switch Config.
    pub const SET_SWITCH_CONFIG: u16 = 0x0205;
    /// RX Control Register Read.
    pub const RX_CTL_READ: u16 = 0x0206;
    /// RX Control Register Write.
    pub const RX_CTL_WRITE: u16 = 0x0207;
    /// Debug Read Register (docs/hw/i40e.md §18.2).
    pub const DEBUG_READ_REG: u16 = 0xFF03;
    /// Update VSI.
    pub const UPDATE_VSI: u16 = 0x0211;
    /// Get VSI Parameters.
    pub const GET_VSI_PARAMS: u16 = 0x0212;
    /// Add MAC-VLAN.
    pub const ADD_MACVLAN: u16 = 0x0250;
    /// Remove MAC-VLAN.
    pub const REMOVE_MACVLAN: u16 = 0x0251;
    /// Set VSI Promiscuous Modes.
    pub const SET_VSI_PROMISC: u16 = 0x0254;
    /// Configure VSI Bandwidth Limit (docs/hw/i40e.md §6.12).
    pub const VSI_BW_LIMIT: u16 = 0x0400;
    /// Query VSI Bandwidth Configuration (docs/hw/i40e.md §6.13).
    pub const QUERY_VSI_BW: u16 = 0x0408;
    /// Query VSI ETS SLA Configuration (docs/hw/i40e.md §6.13).
    pub const QUERY_VSI_ETS_SLA: u16 = 0x040A;
    /// Configure VSI TC Bandwidth.
    pub const VSI_TC_BW: u16 = 0x0407;
    /// Suspend Port TX (docs/hw/i40e.md §6.14).
    pub const SUSPEND_PORT_TX: u16 = 0x041B;
    /// Resume Port TX (docs/hw/i40e.md §6.14).
    pub const RESUME_PORT_TX: u16 = 0x041C;
    /// Get PHY Abilities.
    pub const GET_PHY_ABILITIES: u16 = 0x0600;
    /// Set PHY Config.
    pub const SET_PHY_CONFIG: u16 = 0x0601;
    /// Set MAC Config.
    pub const SET_MAC_CONFIG: u16 = 0x0603;
    /// Set Link Restart AN.
    pub const SET_LINK_RESTART_AN: u16 = 0x0605;
    /// Get Link Status (also the link event).
    pub const GET_LINK_STATUS: u16 = 0x0607;
    /// Set PHY Interrupt Mask.
    pub const SET_PHY_INT_MASK: u16 = 0x0613;
    /// Set Loopback Modes.
    pub const SET_LOOPBACK: u16 = 0x0618;
    /// LLDP agent stop.
    pub const LLDP_STOP: u16 = 0x0A05;
    /// LLDP agent start.
    pub const LLDP_START: u16 = 0x0A06;
    /// Set RSS Key.
    pub const SET_RSS_KEY: u16 = 0x0B02;
    /// Set RSS LUT.
    pub const SET_RSS_LUT: u16 = 0x0B03;
    /// Get RSS Key.
    pub const GET_RSS_KEY: u16 = 0x0B04;
    /// Get RSS LUT.
    pub const GET_RSS_LUT: u16 = 0x0B05;
}

/// Admin-queue return codes, `retval & 0xFF` (docs/hw/i40e.md §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
#[allow(missing_docs)] // the names are the codes of docs/hw/i40e.md §5.2
pub enum AqRc {
    Ok = 0,
    Eperm = 1,
    Enoent = 2,
    /// Unknown opcode.
    Esrch = 3,
    Eintr = 4,
    Eio = 5,
    Enxio = 6,
    E2big = 7,
    Eagain = 8,
    Enomem = 9,
    Eacces = 10,
    Efault = 11,
    Ebusy = 12,
    Eexist = 13,
    Einval = 14,
    Enotty = 15,
    Enospc = 16,
    Enosys = 17,
    Erange = 18,
    Eflushed = 19,
    BadAddr = 20,
    Emode = 21,
    Efbig = 22,
}

/// Descriptor flags (docs/hw/i40e.md §5.2).
pub mod flag {
    /// The firmware processed the descriptor.
    pub const DD: u16 = 0x0001;
    /// The firmware completed the command.
    pub const CMP: u16 = 0x0002;
    /// The command failed.
    pub const ERR: u16 = 0x0004;
    /// Large buffer (> 512 bytes).
    pub const LB: u16 = 0x0200;
    /// The buffer carries data for the firmware.
    pub const RD: u16 = 0x0400;
    /// The descriptor has an indirect buffer.
    pub const BUF: u16 = 0x1000;
    /// No completion interrupt.
    pub const SI: u16 = 0x2000;
}

/// Descriptor length (docs/hw/i40e.md §5.2).
pub(crate) const DESC_LEN: usize = 32;
/// Largest indirect buffer the model accepts (docs/hw/i40e.md §15: 4 KiB buffers).
const MAX_BUF: usize = 4096;
/// A buffer above this needs LB (docs/hw/i40e.md §5.4).
const LB_THRESHOLD: usize = 512;
/// Set PHY Interrupt Mask bit that suppresses link up/down events (docs/hw/i40e.md §7.6).
pub(crate) const PHY_EVENT_LINK_UPDOWN: u16 = 0x0002;

/// A 32-byte admin descriptor (docs/hw/i40e.md §5.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Desc {
    pub flags: u16,
    pub opcode: u16,
    pub datalen: u16,
    pub retval: u16,
    pub cookie_high: u32,
    pub cookie_low: u32,
    pub params: [u8; 16],
}

pub(super) fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(super) fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(super) fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

pub(super) fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

impl Desc {
    pub fn parse(raw: &[u8; DESC_LEN]) -> Desc {
        Desc {
            flags: le16(raw, 0),
            opcode: le16(raw, 2),
            datalen: le16(raw, 4),
            retval: le16(raw, 6),
            cookie_high: le32(raw, 8),
            cookie_low: le32(raw, 12),
            params: raw[16..32].try_into().expect("16 bytes"),
        }
    }

    pub fn bytes(&self) -> [u8; DESC_LEN] {
        let mut b = [0u8; DESC_LEN];
        put16(&mut b, 0, self.flags);
        put16(&mut b, 2, self.opcode);
        put16(&mut b, 4, self.datalen);
        put16(&mut b, 6, self.retval);
        put32(&mut b, 8, self.cookie_high);
        put32(&mut b, 12, self.cookie_low);
        b[16..].copy_from_slice(&self.params);
        b
    }

    /// The indirect buffer's address: high half at parameter byte 8, low half at 12 (docs/hw/i40e.md §5.2).
    pub fn buffer_addr(&self) -> u64 {
        u64::from(le32(&self.params, 8)) << 32 | u64::from(le32(&self.params, 12))
    }
}

/// One ring's registers (docs/hw/i40e.md §5.1).
#[derive(Debug, Clone, Copy, Default)]
struct Ring {
    bal: u32,
    bah: u32,
    len: u32,
    head: u32,
    tail: u32,
}

impl Ring {
    fn base(&self) -> u64 {
        u64::from(self.bah) << 32 | u64::from(self.bal)
    }

    fn entries(&self) -> u32 {
        AQLEN_LEN.get(self.len)
    }

    fn enabled(&self) -> bool {
        AQLEN_ENABLE.is_set(self.len) && self.entries() > 0
    }
}

/// The result of one command.
pub(super) struct Outcome {
    pub rc: AqRc,
    pub params: [u8; 16],
    /// A new datalen for the completion (List Capabilities' needed size on ENOMEM).
    pub datalen: Option<u16>,
    /// Write the buffer back to host memory.
    pub write_buf: bool,
}

/// The admin queue's state: ring registers, fault injection, and what the firmware remembers.
#[derive(Debug, Default)]
pub(crate) struct AdminQ {
    atq: Ring,
    /// Where the driver's last ATQT write (the doorbell) put the end of the work. ATQH is the firmware's pointer
    /// (docs/hw/i40e.md §5.1): a driver writing it (ring setup, shutdown: H = 0 before T = 0, §5.3) moves where
    /// the firmware stands and rings nothing, so completed descriptors between the new head and the old tail are
    /// not run again.
    atq_rung: u32,
    arq: Ring,
    arq_overflow: bool,
    stalled: bool,
    critical: bool,
    /// An armed error: the opcode it waits for (`None`: any), its code, and how many commands it still hits.
    inject: Option<(Option<u16>, AqRc, u32)>,
    pub driver_version: Option<([u8; 4], String)>,
    pub log: Vec<(u16, AqRc)>,
}

impl AdminQ {
    pub fn read(&self, offset: usize) -> u32 {
        match offset {
            PF_ATQBAL => self.atq.bal,
            PF_ATQBAH => self.atq.bah,
            PF_ATQLEN => self.atq.len | AQLEN_CRIT.val(self.critical.into()),
            PF_ATQH => self.atq.head,
            PF_ATQT => self.atq.tail,
            PF_ARQBAL => self.arq.bal,
            PF_ARQBAH => self.arq.bah,
            PF_ARQLEN => self.arq.len | AQLEN_OVFL.val(self.arq_overflow.into()),
            PF_ARQH => self.arq.head,
            PF_ARQT => self.arq.tail,
            _ => 0,
        }
    }

    pub fn write(&mut self, shared: &X710State, offset: usize, value: u32) {
        let fault = |what: String| shared.io.faults.record(Fault::Protocol { what });
        let ptr = |name: &str, ring: &Ring| {
            if AQ_PTR.get(value) != value || (ring.enabled() && value >= ring.entries()) {
                fault(format!(
                    "{name} = {value} outside the ring of {} entries (docs/hw/i40e.md §5.1)",
                    ring.entries()
                ));
                return None;
            }
            Some(value)
        };
        match offset {
            PF_ATQBAL => self.atq.bal = value,
            PF_ATQBAH => self.atq.bah = value,
            PF_ARQBAL => self.arq.bal = value,
            PF_ARQBAH => self.arq.bah = value,
            PF_ATQLEN | PF_ARQLEN => {
                let reserved = !(AQLEN_LEN.mask() | AQLEN_ENABLE.mask());
                if value & reserved != 0 {
                    fault(format!("{offset:#x} = {value:#x}: only LEN (9:0) and ENABLE (31) are the driver's (docs/hw/i40e.md §5.1)"));
                }
                if AQLEN_ENABLE.is_set(value) && AQLEN_LEN.get(value) == 0 {
                    fault(format!("{offset:#x}: ENABLE with a length of 0"));
                }
                let ring = if offset == PF_ATQLEN { &mut self.atq } else { &mut self.arq };
                ring.len = value & !reserved;
                if offset == PF_ARQLEN {
                    self.arq_overflow = false;
                }
            }
            PF_ATQH => {
                if let Some(v) = ptr("ATQH", &self.atq) {
                    self.atq.head = v;
                    self.atq_rung = v;
                }
            }
            PF_ARQH => {
                if let Some(v) = ptr("ARQH", &self.arq) {
                    self.arq.head = v;
                }
            }
            PF_ATQT => {
                if let Some(v) = ptr("ATQT", &self.atq) {
                    self.atq.tail = v;
                    self.atq_rung = v;
                }
            }
            PF_ARQT => {
                if let Some(v) = ptr("ARQT", &self.arq) {
                    self.arq.tail = v;
                }
            }
            _ => {}
        }
    }

    /// Arms an error for the next `times` commands (of `opcode`). Test harness state, not firmware state: it
    /// survives a PF reset, so a test can arm it before a driver's bring-up (which resets the PF first).
    pub fn inject_error(&mut self, opcode: Option<u16>, rc: AqRc, times: u32) {
        self.inject = (times > 0).then_some((opcode, rc, times));
    }

    pub fn stall(&mut self, stalled: bool, critical: bool) {
        self.stalled = stalled;
        self.critical = stalled && critical;
    }

    /// The queue-set handles the firmware gave out (Get VSI Parameters and TC bandwidth both hand out these).
    pub fn qs_handles(&self, config: &X710Config) -> Vec<u32> {
        vec![qs_handle(config).into()]
    }
}

pub(super) fn qs_handle(config: &X710Config) -> u16 {
    QS_HANDLE_BASE + u16::from(config.pf_id)
}

/// The main VSI's SEID, number and statistics index.
pub(crate) fn vsi_seid(config: &X710Config) -> u16 {
    VSI_SEID_BASE + u16::from(config.pf_id)
}

pub(crate) fn vsi_number(config: &X710Config) -> u16 {
    16 + u16::from(config.pf_id)
}

pub(crate) fn vsi_stat_index(config: &X710Config) -> usize {
    32 + usize::from(config.pf_id)
}

impl Core {
    pub(super) fn aq_fault(&self, shared: &X710State, op: u16, why: String) {
        shared.io.faults.record(Fault::Protocol { what: format!("admin command {op:#06x}: {why}") });
    }

    /// Processes the ATQ from head to the last tail the driver rang (docs/hw/i40e.md §5.4). Returns the number of commands completed.
    pub(crate) fn process_atq(&mut self, shared: &X710State) -> usize {
        let ring = self.aq.atq;
        let end = self.aq.atq_rung;
        if self.aq.stalled || !ring.enabled() || ring.head == end {
            return 0;
        }
        let n = ring.entries();
        if end >= n {
            return 0;
        }
        let mut done = 0;
        let mut head = ring.head;
        while head != end {
            let at = ring.base() + u64::from(head) * DESC_LEN as u64;
            let mut raw = [0u8; DESC_LEN];
            if shared.io.dma.read(at, &mut raw, &|| format!("ATQ descriptor {head}")).is_err() {
                // A ring the firmware cannot reach: it stops and reports a critical error (docs/hw/i40e.md §5.4 step 7).
                self.aq.critical = true;
                break;
            }
            let desc = Desc::parse(&raw);
            let done_desc = self.execute(shared, desc);
            if shared.io.dma.write(at, &done_desc.bytes(), &|| format!("ATQ write-back {head}")).is_err() {
                self.aq.critical = true;
                break;
            }
            head = (head + 1) % n;
            self.aq.atq.head = head;
            self.aq.log.push((desc.opcode, rc_of(done_desc.retval)));
            shared.counters().aq_commands += 1;
            done += 1;
        }
        if done > 0 {
            let icr = self.reg(PFINT_ICR0) | PFINT_ICR0_ADMINQ.mask();
            self.set_reg(PFINT_ICR0, icr);
        }
        done
    }

    /// Runs one command and returns the completed descriptor.
    fn execute(&mut self, shared: &X710State, desc: Desc) -> Desc {
        let outcome = self.answer(shared, &desc);
        let mut out = desc;
        out.flags |= flag::DD | flag::CMP;
        if outcome.rc != AqRc::Ok {
            out.flags |= flag::ERR;
        }
        out.retval = outcome.rc as u16;
        out.params = outcome.params;
        if let Some(len) = outcome.datalen {
            out.datalen = len;
        }
        out
    }

    fn answer(&mut self, shared: &X710State, d: &Desc) -> Outcome {
        let op = d.opcode;
        let einval = |core: &Core, why: String| {
            core.aq_fault(shared, op, why);
            Outcome { rc: AqRc::Einval, params: d.params, datalen: None, write_buf: false }
        };
        if d.flags & (flag::DD | flag::CMP | flag::ERR) != 0 {
            return einval(self, format!("flags {:#06x}: DD/CMP/ERR set by the driver (a stale descriptor?)", d.flags));
        }
        if d.retval != 0 {
            return einval(self, format!("retval {:#x} set by the driver (the firmware's field)", d.retval));
        }
        if let Some((which, rc, times)) = self.aq.inject {
            if which.is_none_or(|o| o == op) {
                self.aq.inject = (times > 1).then_some((which, rc, times - 1));
                return Outcome { rc, params: d.params, datalen: None, write_buf: false };
            }
        }
        let Some(spec) = spec(op, shared.config.api_version) else {
            return Outcome { rc: AqRc::Esrch, params: d.params, datalen: None, write_buf: false };
        };
        let has_buf = d.flags & flag::BUF != 0;
        let rd = d.flags & flag::RD != 0;
        let lb = d.flags & flag::LB != 0;
        let len = usize::from(d.datalen);
        match spec.buf {
            Buf::None => {
                if has_buf || rd || lb {
                    return einval(
                        self,
                        format!("direct command with flags {:#06x} (BUF/RD/LB, docs/hw/i40e.md §5.4)", d.flags),
                    );
                }
                if len != 0 {
                    return einval(self, format!("direct command with datalen {len}"));
                }
            }
            Buf::Get | Buf::Set | Buf::GetRdAllowed => {
                if !has_buf {
                    return einval(
                        self,
                        format!("indirect command without BUF (flags {:#06x}, docs/hw/i40e.md §5.4)", d.flags),
                    );
                }
                if spec.buf == Buf::Set && !rd {
                    return einval(self, "buffer for the firmware to read without RD (docs/hw/i40e.md §5.4)".into());
                }
                if spec.buf == Buf::Get && rd {
                    return einval(
                        self,
                        "RD on a command whose buffer the firmware writes (docs/hw/i40e.md §5.4)".into(),
                    );
                }
                if len == 0 || len > MAX_BUF {
                    return einval(self, format!("datalen {len} (1..=4096)"));
                }
                if lb != (len > LB_THRESHOLD) {
                    return einval(
                        self,
                        format!("LB {} with a {len}-byte buffer (LB iff > 512, docs/hw/i40e.md §5.4)", lb as u8),
                    );
                }
            }
        }
        let indirect = spec.buf != Buf::None;
        for (i, b) in d.params.iter().enumerate() {
            let used = spec.params.iter().any(|&(at, n)| (at..at + n).contains(&i)) || (indirect && i >= 8);
            if *b != 0 && !used {
                return einval(self, format!("reserved parameter byte {i} (descriptor byte {}) = {b:#x}", 16 + i));
            }
        }
        let cmd = match Command::decode(op, &d.params) {
            Ok(cmd) => cmd,
            Err(why) => return einval(self, why.to_string()),
        };
        let mut buf = vec![0u8; if indirect { len } else { 0 }];
        let addr = d.buffer_addr();
        if indirect && rd && shared.io.dma.read(addr, &mut buf, &|| format!("admin command {op:#06x} buffer")).is_err()
        {
            return Outcome { rc: AqRc::BadAddr, params: d.params, datalen: None, write_buf: false };
        }
        let outcome = self.command(shared, d, cmd, &mut buf);
        if outcome.write_buf
            && shared.io.dma.write(addr, &buf, &|| format!("admin command {op:#06x} response buffer")).is_err()
        {
            return Outcome { rc: AqRc::BadAddr, params: d.params, datalen: None, write_buf: false };
        }
        outcome
    }

    /// Posts an event on the ARQ (docs/hw/i40e.md §5.5): into the descriptor at ARQH if the driver has given the firmware that
    /// slot (ARQH != ARQT), else the event is lost and ARQLEN.ARQOVFL set.
    pub(crate) fn post_event(&mut self, shared: &X710State, op: u16, params: [u8; 16], body: &[u8]) {
        let ring = self.aq.arq;
        if !ring.enabled() {
            return;
        }
        let n = ring.entries();
        if ring.head == ring.tail || ring.head >= n {
            self.aq.arq_overflow = true;
            return;
        }
        let at = ring.base() + u64::from(ring.head) * DESC_LEN as u64;
        let mut raw = [0u8; DESC_LEN];
        if shared.io.dma.read(at, &mut raw, &|| format!("ARQ descriptor {}", ring.head)).is_err() {
            return;
        }
        let armed = Desc::parse(&raw);
        if armed.flags & flag::BUF == 0 || usize::from(armed.datalen) < body.len() {
            shared.io.faults.record(Fault::Protocol {
                what: format!(
                    "ARQ descriptor {} not armed: flags {:#06x}, datalen {} (want BUF and a buffer, docs/hw/i40e.md §5.3 step 2)",
                    ring.head, armed.flags, armed.datalen
                ),
            });
            self.aq.arq_overflow = true;
            return;
        }
        if !body.is_empty()
            && shared.io.dma.write(armed.buffer_addr(), body, &|| format!("ARQ event {op:#06x} body")).is_err()
        {
            return;
        }
        let mut ev = Desc {
            flags: armed.flags | flag::DD | flag::CMP,
            opcode: op,
            datalen: body.len() as u16,
            ..Desc::default()
        };
        // The event's parameters take all 16 bytes (a link event is laid out like Get Link Status, docs/hw/i40e.md §5.5); the
        // driver keeps its own record of the slot's buffer and re-arms it.
        ev.params = params;
        if shared.io.dma.write(at, &ev.bytes(), &|| format!("ARQ descriptor {} write-back", ring.head)).is_err() {
            return;
        }
        self.aq.arq.head = (ring.head + 1) % n;
        shared.counters().arq_events += 1;
        self.raise_icr0(shared, PFINT_ICR0_ADMINQ);
    }
}

fn rc_of(retval: u16) -> AqRc {
    use AqRc::*;
    const ALL: [AqRc; 23] = [
        Ok, Eperm, Enoent, Esrch, Eintr, Eio, Enxio, E2big, Eagain, Enomem, Eacces, Efault, Ebusy, Eexist, Einval,
        Enotty, Enospc, Enosys, Erange, Eflushed, BadAddr, Emode, Efbig,
    ];
    ALL.get(usize::from(retval & 0xFF)).copied().unwrap_or(Einval)
}
