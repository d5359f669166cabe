//! The behavioural Huawei SP670 (hinic3, PCI 19e5:0222) model: one PF, written from the project's notes,
//! docs/hw/hinic3.md, independently of any hinic3 driver.
//!
//! Layout: `regs` (the register map and field names), `aeq` (event queues), `mbox` (the mailbox window,
//! segments, the write-back and answers), `mgmt` (the management CPU's commands, checked field by field), `cmdq`
//! (the command queue), `ctx` (SQ/RQ contexts), `tx` / `rx` (the data path, RSS), `stats`, `bars` (the three
//! BARs), `port` (the port handle, wires, the model thread), this module (configuration and the device state).
//!
//! Like the firmware, the model answers asynchronously: a mailbox send, a cmdq doorbell or a data-path doorbell
//! takes effect when the model runs ([`Sp670Port::step`], [`crate::run_until_idle`] or the thread of
//! [`Sp670Port::start_thread`]); a driver polls the write-back, the AEQ, the WQE busy bit and the CI slot.
//!
//! Work queues larger than COMM 22's WQ page are read through their page table (1-level CLA, docs/hw/hinic3.md §20);
//! the MAG 151 counters are kept as frames pass (docs/hw/hinic3.md §22). `intr` raises the MSI-X vectors of RQs and
//! AEQs (masks, auto-mask, coalescing, resend; docs/hw/hinic3.md §5.5).
//!
//! Not modelled: CEQs, TX (SQ CI) interrupts, VFs, the enhanced cmdq and
//! the compact/HTN formats of docs/hw/hinic3.md §12a (their feature bits are never offered), TSO, LRO merging (only
//! its state: on until L2NIC 13 turns it off, and a fault when RX starts without that), UFO,
//! tunnels, VLAN filtering, multicast MAC filters, MTU enforcement, SQ CI coalescing (the CI is written after every
//! batch), the MAG 150 port-information event (GET_PORT_INFO follows the link instead).
//!
//! Choices where the notes leave a point unverified (docs/hw/hinic3.md §17), one line each:
//! - descriptors are little-endian (docs/hw/hinic3.md §0.1, item 1): the conversion mode current firmware enables by default;
//! - the mailbox DMA descriptor may be 16 (DPDK) or 24 (Linux) bytes (item 5): both are taken;
//! - RSS_CFG num_qps (item 6) is accepted with any value and ignored;
//! - COMM 64 / COMM 62 (item 7) are answered but not required;
//! - the device ID is 0x0222 (item 8);
//! - RQ context dword 1 bit 31 and the "PI address" words (item 3) are accepted as written and not used;
//! - the SQ owner bit is checked in compact WQEs too (item 4), as Linux and the older DPDK set it;
//! - where the firmware's default is unknown the model takes the case that breaks a driver leaving it unset: LRO and
//!   VLAN strip on, every SQ/RQ/cmdq ring checked on 256 KiB, the WQ page 4 KiB until COMM 22, COMM bit 9 (buffer
//!   size in bytes) offered when the configuration's `comm_features` has it.

mod aeq;
mod bars;
mod cmdq;
pub mod ctx;
mod events;
pub mod intr;
mod mbox;
mod mgmt;
mod port;
pub mod regs;
mod rx;
mod stats;
mod tx;

pub use bars::{Sp670Bar, Sp670CfgBar, Sp670DbBar, Sp670MgmtBar};
pub use mgmt::{module, STATUS_BAD, STATUS_UNSUPPORTED};
pub use port::{Sp670, Sp670Port, Sp670State, Sp670Thread};
pub use rx::hash_type;
pub use stats::{port as port_stat, vport as vport_stat};

use crate::Error;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::dma::IovaMap;
use crate::fault::{Fault, FaultLog};
use aeq::{Aeq, MAX_AEQS};
use cmdq::{Cmdq, MAX_CMDQS};
use ctx::{RqCtx, SqCtx};
use mbox::{Mailbox, Segment};
use regs::*;
use rx::{Rq, Rss};
use stats::Stats;
use tx::Sq;

/// PCI vendor (Huawei) and device (the hinic3 PF) IDs (docs/hw/hinic3.md §1).
pub const VENDOR_HUAWEI: u16 = 0x19E5;
/// The standard hinic3 PF.
pub const DEVICE_HINIC3_PF: u16 = 0x0222;

/// FUNC_RESET flag bit 12: the command channel (cmdq and CEQ) (docs/hw/hinic3.md §7.3).
pub const FUNC_RESET_CMD_CHANNEL: u64 = 1 << 12;

/// COMM feature bit 9 USE_REAL_RX_BUF_SIZE (docs/hw/hinic3.md §12).
pub const COMM_REAL_RX_BUF: u64 = 1 << 9;

/// The RX buffer size table of docs/hw/hinic3.md §10.4.
pub const RX_BUF_SIZES: [usize; 16] =
    [32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192, 16384];

/// Bytes of a root-context rx_buf_sz value.
fn rx_buf_bytes(v: u16, comm_features: u64) -> usize {
    if comm_features & COMM_REAL_RX_BUF != 0 {
        usize::from(v)
    } else {
        RX_BUF_SIZES.get(usize::from(v)).copied().unwrap_or(0)
    }
}

/// MAG speed code (docs/hw/hinic3.md §7.3, GET_PORT_INFO).
fn speed_code(mbps: u32) -> u8 {
    match mbps {
        10 => 1,
        100 => 2,
        1000 => 3,
        10_000 => 4,
        25_000 => 5,
        40_000 => 6,
        50_000 => 7,
        100_000 => 8,
        200_000 => 9,
        _ => 0,
    }
}

/// NIC features the model offers by default: the classic formats only (docs/hw/hinic3.md §12): CSUM, SCTP_CRC,
/// TSO, LRO, RSS, VLAN filter/strip/insert, PROMISC, ALLMULTI. TSO and LRO are offered but not modelled.
pub const DEFAULT_NIC_FEATURES: u64 = 0b11_0001_1110_1111;

/// How to build one model PF.
#[derive(Debug, Clone)]
pub struct Sp670Config {
    /// Global function index (FUNC_ATTR0 11:0): the func_id every command must carry.
    pub func_id: u16,
    /// Physical port (GET_DEV_CAP port_id; every HILINK command's port).
    pub port_id: u8,
    /// Factory MAC (L2NIC 20 GET_MAC).
    pub mac: [u8; 6],
    /// SQs and RQs of the function (GET_DEV_CAP nic_max_sq_id + 1, FUNC_ATTR6 31:23), at most 256.
    pub max_queues: u16,
    /// AEQs (2 to 4; FUNC_ATTR1 9:8 holds log2).
    pub num_aeqs: usize,
    /// CEQs (FUNC_ATTR2 8:0; the model writes none).
    pub num_ceqs: u32,
    /// MSI-X vectors (FUNC_ATTR2 26:16).
    pub num_irqs: u32,
    /// Firmware version string (COMM 60, at most 15 bytes).
    pub fw_version: String,
    /// NIC features offered (L2NIC 15 get).
    pub nic_features: u64,
    /// COMM features offered (COMM 1 get).
    pub comm_features: u64,
    /// GET_DEV_CAP valid_cos_bitmap.
    pub valid_cos_bitmap: u8,
    /// Link speed in Mb/s (GET_PORT_INFO).
    pub speed_mbps: u32,
    /// Time from creation until FUNC_ATTR1 reports the management CPU ready.
    pub fw_ready_delay: Duration,
    /// Cable in at power-up (the link comes up once the port is enabled).
    pub cable: bool,
    /// Panic at the first fault instead of only recording it.
    pub panic_on_fault: bool,
    /// How long the mailbox must be idle before an event goes out on its own; until then it waits for a request to
    /// go out with (`events`). Zero (the default) posts at once, as the firmware does: a driver that sends requests
    /// and acknowledgements from one thread cannot tear its own mailbox window. The vfio-user server sets it for
    /// DPDK's PMD, which acknowledges from its interrupt thread (docs/hw/hinic3.md §6.5).
    pub event_quiet: Duration,
}

impl Default for Sp670Config {
    fn default() -> Self {
        Sp670Config {
            func_id: 0,
            port_id: 0,
            mac: [0x02, 0x19, 0xE5, 0x67, 0x00, 0x00],
            max_queues: 64,
            num_aeqs: 4,
            num_ceqs: 4,
            num_irqs: 32,
            fw_version: "17.12.0.1".into(),
            nic_features: DEFAULT_NIC_FEATURES,
            comm_features: 0,
            valid_cos_bitmap: 0x01,
            speed_mbps: 100_000,
            fw_ready_delay: Duration::ZERO,
            cable: true,
            panic_on_fault: false,
            event_quiet: Duration::ZERO,
        }
    }
}

/// A receive error to inject with a frame ([`Sp670Port::inject_error`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sp670RxError {
    /// Bad FCS: dropped, counted in the port's FCS errors and the vport's rx_err.
    Crc,
    /// Delivered with CQE checksum-error bit 0 (IP header, docs/hw/hinic3.md §10.5).
    IpChecksum,
    /// Delivered with CQE checksum-error bit 1 (TCP) or 2 (UDP).
    L4Checksum,
}

/// Model-side counters that never clear: exact counts for tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sp670Counters {
    /// Frames written to RX buffers.
    pub rx_delivered: u64,
    /// Frames dropped for want of a queue or posted buffer.
    pub rx_no_buffer: u64,
    /// Frames dropped by the RX mode, MAC table, a disabled vport/port, link down, or a bad FCS.
    pub rx_filtered: u64,
    /// Frames put on the wire.
    pub tx_sent: u64,
    /// Frames completed but dropped (link down, vport or port TX off).
    pub tx_dropped: u64,
    /// Management commands answered (any status).
    pub mgmt_commands: u64,
    /// cmdq WQEs completed.
    pub cmdq_commands: u64,
    /// AEQ elements written.
    pub aeq_elements: u64,
}

/// Root context (COMM 21 use b).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Root {
    pub rx_buf_sz: u16,
    pub sq_depth_log2: u8,
    pub rq_depth_log2: u8,
}

/// State set by management commands.
#[derive(Debug, Default)]
pub(crate) struct Mgmt {
    pub comm_used: bool,
    pub nic_used: bool,
    pub dma_attr_set: bool,
    pub wq_page_log2: u8,
    pub root: Option<Root>,
    pub nic_features: Option<u64>,
    pub rx_buf_size: u16,
    pub mtu: u16,
    pub vport_enabled: bool,
    pub port_enable: u8,
    pub link_follow: u8,
    pub rx_mode: u32,
    pub macs: Vec<[u8; 6]>,
    pub sq_ci_addr: Vec<Option<u64>>,
    pub rss: Rss,
    /// L2NIC 27: strip VLAN tags on RX.
    pub vlan_strip: bool,
    /// L2NIC 26's ctrl word (bit 0 VLAN filter, bit 1 broadcast filter).
    pub vlan_filter: u32,
    /// L2NIC 13: LRO (IPv4 or IPv6) on.
    pub lro: bool,
    /// L2NIC 13 set since the last reset: a driver that starts RX without it leaves LRO as the firmware had it.
    pub lro_set: bool,
    /// L2NIC 14's timer.
    pub lro_timer: u32,
}

impl Mgmt {
    /// The state at power-on and after FUNC_RESET. The firmware's defaults for LRO and VLAN strip are not known
    /// (docs/hw/hinic3.md §7.3): the model takes the case that breaks a driver which leaves them unset, both on.
    pub(crate) fn fresh(queues: usize, wq_page_log2: u8) -> Mgmt {
        Mgmt { sq_ci_addr: vec![None; queues], wq_page_log2, vlan_strip: true, lro: true, ..Default::default() }
    }
}

/// Faults armed by a test.
#[derive(Debug, Default)]
pub(crate) struct Inject {
    pub mgmt_errors: HashMap<(u8, u16), u8>,
    pub cmdq_errors: HashMap<u8, u32>,
    pub mbox_stalled: bool,
    pub cmdq_stalled: bool,
    pub tx_hang: Vec<bool>,
}

/// The device state behind the model lock.
pub(crate) struct Core {
    pub config: Sp670Config,
    pub dma: Arc<IovaMap>,
    pub faults: Arc<FaultLog>,
    pub created: Instant,
    pub attr4: u32,
    pub attr5: u32,
    pub pf_status: u32,
    pub ppf: u32,
    pub mpf: u32,
    pub msix: intr::Msix,
    pub aeqs: [Aeq; MAX_AEQS],
    pub aeq_indir: usize,
    pub mbox: Mailbox,
    pub mgmt: Mgmt,
    pub cmdqs: [Cmdq; MAX_CMDQS],
    pub sq_ctx: Vec<Option<SqCtx>>,
    pub rq_ctx: Vec<Option<RqCtx>>,
    pub sqs: Vec<Option<Sq>>,
    pub rqs: Vec<Option<Rq>>,
    pub stats: Stats,
    pub counters: Counters,
    pub inject: Inject,
    pub cable: bool,
    pub down_until: Option<Instant>,
    pub reported_link: bool,
    pub events: events::Events,
    pub mgmt_log: Vec<(u8, u16, u8)>,
    pub cmdq_log: Vec<(u8, u32)>,
    /// Set by a function reset: doorbells rung before it are forgotten.
    pub drop_doorbells: bool,
    /// Set when the queue resources are freed (CLEAR_QP_RESOURCE): SQ/RQ doorbells rung before are forgotten.
    pub drop_queue_doorbells: bool,
}

/// Counters kept under the model lock (copied out as [`Sp670Counters`]).
pub(crate) type Counters = Sp670Counters;

impl Core {
    fn new(config: Sp670Config, dma: Arc<IovaMap>, faults: Arc<FaultLog>) -> Core {
        let n = usize::from(config.max_queues);
        Core {
            msix: intr::Msix::new(config.num_irqs as usize),
            cable: config.cable,
            config,
            dma,
            faults,
            created: Instant::now(),
            attr4: 0,
            attr5: 0,
            pf_status: PF_STATUS_INIT,
            ppf: 0,
            mpf: 0,
            aeqs: Default::default(),
            aeq_indir: 0,
            mbox: Mailbox::default(),
            mgmt: Mgmt::fresh(n, 0),
            cmdqs: Default::default(),
            sq_ctx: vec![None; n],
            rq_ctx: vec![None; n],
            sqs: vec![None; n],
            rqs: vec![None; n],
            stats: Stats::default(),
            counters: Counters::default(),
            inject: Inject { tx_hang: vec![false; n], ..Default::default() },
            down_until: None,
            reported_link: false,
            events: events::Events::default(),
            mgmt_log: Vec::new(),
            cmdq_log: Vec::new(),
            drop_doorbells: false,
            drop_queue_doorbells: false,
        }
    }

    pub(crate) fn fault(&self, what: impl std::fmt::Display) {
        self.faults.record(Fault::Protocol { what: what.to_string() });
    }

    /// The management CPU has finished its init (FUNC_ATTR1 bit 30).
    pub(crate) fn fw_ready(&self) -> bool {
        self.created.elapsed() >= self.config.fw_ready_delay
    }

    /// Link up: cable in, not in an injected flap, port enabled (MAG 6) for TX or RX.
    pub(crate) fn link_up(&self) -> bool {
        self.cable && self.down_until.is_none() && self.mgmt.port_enable != 0
    }

    /// COMM 0 FUNC_RESET: queues, contexts and NIC settings go back to power-up, and the command queues too when
    /// flag bit 12 asks; the management channel (AEQs, mailbox registers) stays, since the driver talks through it.
    fn func_reset(&mut self, flags: u64) {
        let n = usize::from(self.config.max_queues);
        // A reset is how a driver recovers a hung queue or command queue: the injected hangs end here.
        self.inject.tx_hang.iter_mut().for_each(|h| *h = false);
        self.inject.cmdq_stalled = false;
        if flags & FUNC_RESET_CMD_CHANNEL != 0 {
            self.cmdqs = Default::default();
        }
        self.drop_doorbells = true;
        self.mgmt = Mgmt::fresh(n, self.mgmt.wq_page_log2);
        self.clear_queues();
    }

    /// L2NIC 11 CLEAR_QP_RESOURCE: every queue resource of the function goes (docs/hw/hinic3.md §7.3): contexts,
    /// started queues, CI write-back addresses and doorbells not yet taken (a stale PI must not run a later context).
    fn clear_queues(&mut self) {
        self.drop_queue_doorbells = true;
        self.mgmt.sq_ci_addr.iter_mut().for_each(|a| *a = None);
        self.sq_ctx.iter_mut().for_each(|c| *c = None);
        self.rq_ctx.iter_mut().for_each(|c| *c = None);
        self.sqs.iter_mut().for_each(|c| *c = None);
        self.rqs.iter_mut().for_each(|c| *c = None);
    }

    /// The WQ pages of a ring (docs/hw/hinic3.md §9.3), or a fault (the queue then does not start).
    fn pages(&self, ring: u64, block: u64, bytes: u64, what: &str) -> Option<ctx::WqPages> {
        let read = |at: u64, buf: &mut [u8]| self.dma.read(at, buf, &|| format!("{what} WQ page table")).is_ok();
        ctx::wq_pages(ring, block, bytes, self.mgmt.wq_page_log2, read, what).map_err(|e| self.fault(e)).ok()
    }

    /// A started SQ/RQ needs its context (cmdq 0) and the root context's depths (COMM 21).
    fn start_sq(&mut self, q: usize) -> bool {
        if self.sqs[q].is_none() {
            if let (Some(ctx), Some(root)) = (self.sq_ctx[q], self.mgmt.root) {
                let depth = 1u32 << root.sq_depth_log2;
                if let Some(pages) = self.pages(ctx.ring, ctx.block, u64::from(depth) * 16, &format!("SQ {q}")) {
                    self.sqs[q] = Some(Sq::new(ctx, depth, pages));
                } else {
                    self.sq_ctx[q] = None; // one fault, not one per doorbell
                }
            }
        }
        self.sqs[q].is_some()
    }

    fn start_rq(&mut self, q: usize) -> bool {
        if self.rqs[q].is_none() {
            if let (Some(ctx), Some(root)) = (self.rq_ctx[q], self.mgmt.root) {
                // rq_depth counts 8-byte units: entries << 1 for the 16-byte WQE (docs/hw/hinic3.md §7.3).
                let depth = 1u32 << (root.rq_depth_log2 - 1);
                if let Some(pages) = self.pages(ctx.ring, ctx.block, u64::from(depth) * 16, &format!("RQ {q}")) {
                    self.rqs[q] = Some(Rq::new(ctx, depth, pages));
                } else {
                    self.rq_ctx[q] = None;
                }
            }
        }
        self.rqs[q].is_some()
    }

    /// An L2NIC "ucode" command through the cmdq (docs/hw/hinic3.md §8.6), `buf` already in little-endian order:
    /// (error code, direct result).
    fn cmdq_command(&mut self, module: u8, cmd: u8, buf: &[u8]) -> (u32, u64) {
        if let Some(&e) = self.inject.cmdq_errors.get(&cmd) {
            return (e, 0);
        }
        if module != mgmt::module::L2NIC {
            self.fault(format!("cmdq command {cmd} of module {module}: the model's cmdq serves module L2NIC (1) only"));
            return (cmdq::ERR_UNKNOWN, 0);
        }
        let u16at =
            |at: usize| u16::from_le_bytes([buf.get(at).copied().unwrap_or(0), buf.get(at + 1).copied().unwrap_or(0)]);
        let max = usize::from(self.config.max_queues);
        let r = match cmd {
            0 | 1 => {
                let (n, ty, start, rsvd) = (usize::from(u16at(0)), u16at(2), usize::from(u16at(4)), u16at(6));
                if cmd == 1 {
                    if buf.len() < 8 || ty > 1 || n == 0 || n > max || start != 0 {
                        Err(Error::Violation {
                            at: "cmdq CLEAN_QUEUE_CONTEXT header".into(),
                            rule: format!("{n} queues of type {ty} from {start} (docs/hw/hinic3.md §8.6)"),
                        })
                    } else {
                        Ok(())
                    }
                } else if ty > 1 || n == 0 || start + n > max || rsvd != 0 || buf.len() < 8 + 64 * n {
                    Err(Error::Violation { at: "cmdq MODIFY_QUEUE_CTX header".into(), rule: format!("{n} contexts of type {ty} from queue {start}, reserved {rsvd:#x}, buffer {} bytes (a wrong byte order swaps these fields)", buf.len()) })
                } else {
                    (0..n).try_for_each(|i| {
                        let c: &[u8; 64] = buf[8 + 64 * i..8 + 64 * (i + 1)].try_into().expect("64");
                        let q = start + i;
                        if ty == 0 {
                            self.sq_ctx[q] = Some(ctx::parse_sq(c, q as u16)?);
                            self.sqs[q] = None;
                        } else {
                            self.rq_ctx[q] = Some(ctx::parse_rq(c, q as u16)?);
                            self.rqs[q] = None;
                        }
                        Ok(())
                    })
                }
            }
            4 => {
                if buf.len() < 16 + 512 || buf[..16].iter().any(|&b| b != 0) {
                    Err(Error::Violation {
                        at: "cmdq SET_RSS_INDIR_TABLE".into(),
                        rule: format!("{} bytes (16 reserved zero bytes and 256 entries expected)", buf.len()),
                    })
                } else {
                    let t: Vec<u16> = (0..256).map(|k| u16at(16 + 2 * k)).collect();
                    match t.iter().find(|&&e| e != 0xFFFF && usize::from(e) >= max) {
                        Some(e) => Err(Error::Violation {
                            at: String::new(),
                            rule: format!("cmdq SET_RSS_INDIR_TABLE entry {e} >= {max} queues"),
                        }),
                        None => {
                            self.mgmt.rss.indir.copy_from_slice(&t);
                            Ok(())
                        }
                    }
                }
            }
            5 => {
                let ctx = u32::from_le_bytes(buf.get(16..20).and_then(|s| s.try_into().ok()).unwrap_or([0; 4]));
                if ctx & hash_type::VALID == 0 || ctx & 0x7F_FFFF != 0 {
                    Err(Error::Violation {
                        at: String::new(),
                        rule: format!("cmdq SET_RSS_CONTEXT_TABLE context {ctx:#010x}"),
                    })
                } else {
                    self.mgmt.rss.hash_types = ctx;
                    Ok(())
                }
            }
            10 => {
                let v = u32::from_le_bytes(buf.get(..4).and_then(|s| s.try_into().ok()).unwrap_or([0; 4]));
                let local = (v >> 16) as usize;
                if local >= max {
                    Err(Error::Violation { at: String::new(), rule: format!("cmdq SET_RQ_FLUSH local RQ {local}") })
                } else {
                    self.flush_rq(local)
                }
            }
            _ => return (cmdq::ERR_UNKNOWN, 0),
        };
        self.counters.cmdq_commands += 1;
        match r {
            Ok(()) => (0, 0),
            Err(e) => {
                self.fault(e);
                (cmdq::ERR_BAD, 0)
            }
        }
    }

    /// Posts `body` as a message from the management CPU on AEQ `q`.
    fn post_message(&mut self, q: usize, header: u64, body: &[u8]) {
        if q >= self.config.num_aeqs {
            self.fault(format!("answer for AEQ {q}, but the function has {} AEQs", self.config.num_aeqs));
            return;
        }
        for (data, size) in mbox::segments(header, body) {
            match self.aeqs[q].post(q, &self.dma, &data, AEQE_TYPE_MBOX, size) {
                Ok(()) => self.counters.aeq_elements += 1,
                Err(e) => {
                    self.fault(e);
                    return;
                }
            }
            self.aeq_event(q);
        }
    }

    /// A triggered mailbox send.
    fn run_mailbox(&mut self) {
        self.mbox.pending = false;
        let msg = match self.mbox.take_segment(&self.dma) {
            Segment::Partial => return,
            Segment::Refused(e) => return self.fault(e),
            Segment::Complete(m) => m,
        };
        self.handle_message(msg);
    }
}
