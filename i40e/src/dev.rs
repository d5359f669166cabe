//! The 700-series control plane: bring-up in docs/hw/i40e.md §3's order (firmware state, leftovers cleared, PF
//! reset, admin queue, identity and capabilities, HMC, MAC address, switch and main VSI, link events), start and
//! stop of the rings, link, receive modes and MAC filters through the firmware, MTU, RSS, statistics, and the
//! [`EthDev`] implementation. Close (drop) undoes it in reverse and leaves the device as the kernel driver expects
//! to find it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hugepage::Allocator;
use mempool::Mempool;
use pktio::bar::RegisterSpace;
use pktio::dma::DmaMapper;
use pktio::{
    offload, DescLimits, DevInfo, Error, EthDev, LinkStatus, MacAddr, PortConfig, PortState, PortStats, Result,
    RssConfig, RssHashFunctions, RxQueue, TxQueue, XStat,
};

use crate::adminq::cmds::{self, Opcode};
use crate::adminq::{AdminQueue, Buffer, BUF_LEN};
use crate::error::{self, Error as DevError};
use crate::hmc::{HmcMode, LanHmc};
use crate::queue::{self, QueueTiming};
use crate::regs::*;
use crate::ring::{RingConfig, RING_ALIGN, RING_MAX, RING_MIN};
use crate::rx::{RxRing, RxSetup, MAX_FRAME};
use crate::stats::{self, HwStats};
use crate::tx::{TxRing, TxSetup};

/// PCI IDs this driver takes (docs/hw/i40e.md §1): every one of the XL710 MAC type, with its fastest speed.
pub const PCI_IDS: &[(u16, u16, u32)] = &[
    (0x8086, 0x1572, 10_000),
    (0x8086, 0x1574, 10_000),
    (0x8086, 0x1580, 40_000),
    (0x8086, 0x1581, 10_000),
    (0x8086, 0x1583, 40_000),
    (0x8086, 0x1584, 40_000),
    (0x8086, 0x1585, 40_000),
    (0x8086, 0x1586, 10_000),
    (0x8086, 0x1587, 20_000),
    (0x8086, 0x1588, 20_000),
    (0x8086, 0x1589, 10_000),
    (0x8086, 0x158A, 25_000),
    (0x8086, 0x158B, 25_000),
    (0x8086, 0x15FF, 10_000),
    (0x8086, 0x101F, 5_000),
    (0x8086, 0x0DD2, 1_000),
    (0x8086, 0x104E, 10_000),
    (0x8086, 0x104F, 10_000),
    (0x8086, 0x0CF8, 10_000),
    (0x8086, 0x0D58, 25_000),
];

/// The fastest speed of a PCI ID this driver takes.
pub fn max_speed_of(vendor: u16, device: u16) -> Option<u32> {
    PCI_IDS.iter().find(|(v, d, _)| *v == vendor && *d == device).map(|(_, _, s)| *s)
}

/// The newest admin-queue API this driver was written for (§6.1: API major 1; the headers target 1.15).
pub const API_KNOWN: (u16, u16) = (1, 15);
/// Largest frame (§15).
pub const MAX_FRAME_SIZE: u32 = MAX_FRAME;
/// Header, CRC and two VLAN tags added to the MTU (§7.3).
pub const FRAME_OVERHEAD: u32 = 14 + 4 + 2 * 4;
/// The default RSS key (§12.2).
pub const DEFAULT_RSS_KEY: [u8; RSS_KEY_LEN] = [
    0x44, 0x39, 0x79, 0x6b, 0xb5, 0x4c, 0x50, 0x23, 0xb6, 0x75, 0xea, 0x5b, 0x12, 0x4f, 0x9f, 0x30, 0xb8, 0xa2, 0xc0,
    0x3d, 0xdf, 0xdc, 0x4d, 0x02, 0xa0, 0x8c, 0x9b, 0x33, 0x4a, 0xf6, 0x4a, 0x4c, 0x05, 0xc6, 0xfa, 0x34, 0x39, 0x58,
    0xd8, 0x55, 0x7d, 0x99, 0x58, 0x3a, 0xe1, 0x38, 0xc9, 0x2e, 0x81, 0x15, 0x03, 0x66,
];

/// Waits and timeouts of the bring-up. The defaults are the hardware's (DPDK's); a model may use shorter ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timing {
    /// Poll step while a global reset finishes (§4.1 step 1: 100 ms; the count comes from GRSTDEL).
    pub global_reset_step: Duration,
    /// NVM configuration loaded (§4.1 step 2: 1000 x 10 ms).
    pub nvm_ready: Duration,
    /// PFGEN_CTRL.PFSWR clears (§4.1 step 3: 1000 x 1 ms).
    pub pf_reset: Duration,
    /// One admin-queue command (§5.4: 250 ms).
    pub aq_command: Duration,
    /// Admin-queue poll step (50 µs).
    pub aq_step: Duration,
    /// Get Version attempts and the pause between them (§5.3 step 5: 10, 100 ms).
    pub version_attempts: u32,
    /// Pause between Get Version attempts.
    pub version_retry: Duration,
    /// Queue enable/disable.
    pub queue: QueueTiming,
    /// Pause after the TX pre-disable of every queue when clearing leftovers (§4.3 step 6: 400 µs).
    pub clear_pre_disable: Duration,
}

impl Timing {
    /// The hardware's.
    pub fn hardware() -> Timing {
        Timing {
            global_reset_step: Duration::from_millis(100),
            nvm_ready: Duration::from_secs(10),
            pf_reset: Duration::from_secs(1),
            aq_command: Duration::from_millis(250),
            aq_step: Duration::from_micros(50),
            version_attempts: 10,
            version_retry: Duration::from_millis(100),
            queue: QueueTiming::HARDWARE,
            clear_pre_disable: Duration::from_micros(400),
        }
    }

    /// Short waits for a model or a fake device that answers at once.
    pub fn fast() -> Timing {
        Timing {
            global_reset_step: Duration::from_millis(1),
            nvm_ready: Duration::from_millis(100),
            pf_reset: Duration::from_millis(100),
            aq_command: Duration::from_millis(250),
            aq_step: Duration::from_micros(5),
            version_attempts: 2,
            version_retry: Duration::from_millis(1),
            queue: QueueTiming { switch: Duration::from_millis(100), step: Duration::from_micros(10), pre_cfg: Duration::ZERO },
            clear_pre_disable: Duration::ZERO,
        }
    }
}

/// How to open a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Device name (PCI address or vdev name).
    pub name: String,
    /// Waits and timeouts.
    pub timing: Timing,
    /// How the LAN HMC is backed.
    pub hmc_mode: HmcMode,
    /// The fastest link speed of the part (from the device ID; [`max_speed_of`]).
    pub max_speed: u32,
}

impl Options {
    /// Hardware defaults for a device called `name` (10G).
    pub fn new(name: impl Into<String>) -> Options {
        Options { name: name.into(), timing: Timing::hardware(), hmc_mode: HmcMode::Auto, max_speed: 10_000 }
    }
}

/// What the firmware reported about the function (§6.1, §6.2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    /// Firmware (major, minor).
    pub fw: (u16, u16),
    /// Admin-queue API (major, minor).
    pub api: (u16, u16),
    /// Physical port (PFGEN_PORTNUM).
    pub port: u8,
    /// PF number, the HMC function (PF_FUNC_RID).
    pub pf_id: u8,
    /// Queue pairs of the function (capabilities 0x41/0x42).
    pub queues: u16,
    /// Its first absolute queue.
    pub first_queue: u32,
    /// RSS table size (capability 0x40).
    pub rss_table: u16,
    /// MSI-X vectors.
    pub msix: u32,
    /// The flow director is present (its queue is PF queue 0, §6.6).
    pub flow_director: bool,
    /// The permanent MAC (MAC Address Read).
    pub mac: MacAddr,
}

/// The PF's main VSI (§6.5, §6.6).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MainVsi {
    /// Its SEID.
    pub seid: u16,
    /// The uplink (MAC) SEID.
    pub uplink: u16,
    /// Its VSI number.
    pub number: u16,
    /// Index of its GLV_* counters.
    pub stat_idx: u16,
    /// Queue-set handle of TC 0 (the TX contexts' rdylist).
    pub qs_handle: u16,
    /// Its first PF queue.
    pub base_queue: u16,
    /// Queues mapped to it (a power of two).
    pub queues: u16,
}

/// RX queue of an i40e port.
pub type I40eRxQueue<R> = RxRing<R>;
/// TX queue of an i40e port.
pub type I40eTxQueue<R> = TxRing<R>;

/// A 700-series port (one PF).
pub struct I40e<R: RegisterSpace> {
    regs: Regs<R>,
    mapper: Arc<dyn DmaMapper>,
    allocator: Allocator,
    options: Options,
    state: PortState,
    aq: Mutex<AdminQueue>,
    hmc: Option<LanHmc>,
    id: Identity,
    vsi: MainVsi,
    rss_key: [u8; RSS_KEY_LEN],
    lut: Vec<u8>,
    rx: Vec<Option<I40eRxQueue<R>>>,
    tx: Vec<Option<I40eTxQueue<R>>>,
    link: Mutex<LinkStatus>,
    hw: Mutex<HwStats>,
    xbase: Vec<u64>,
    /// What must outlive the register space (e.g. the VFIO device behind a mapped BAR).
    keep_alive: Vec<Box<dyn std::any::Any + Send>>,
}

impl<R: RegisterSpace> std::fmt::Debug for I40e<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("I40e").field("name", &self.options.name).field("id", &self.id).field("vsi", &self.vsi).finish()
    }
}

impl<R: RegisterSpace> I40e<R> {
    /// Opens the PF behind `regs`: brings it up to the point where it can be configured and started (§3 steps 1
    /// to 17). DMA memory (admin queue, HMC, rings) comes from `allocator` and is made reachable through `mapper`.
    pub fn new(regs: Arc<R>, mapper: Arc<dyn DmaMapper>, allocator: Allocator, options: Options) -> Result<Self> {
        let name = options.name.clone();
        let t = options.timing.clone();
        let aq = AdminQueue::new(&allocator, &mapper, &name, t.aq_command, t.aq_step)?;
        let regs = Regs::new(regs);
        let info = DevInfo::software("net_i40e", &name, 1);
        let mut dev = I40e {
            regs,
            mapper,
            allocator,
            options,
            state: PortState::new(info, MacAddr::ZERO, PortConfig::default()),
            aq: Mutex::new(aq),
            hmc: None,
            id: Identity::default(),
            vsi: MainVsi::default(),
            rss_key: DEFAULT_RSS_KEY,
            lut: Vec::new(),
            rx: Vec::new(),
            tx: Vec::new(),
            link: Mutex::new(LinkStatus::default()),
            hw: Mutex::new(HwStats::default()),
            xbase: vec![0; stats::COUNTERS.len()],
            keep_alive: Vec::new(),
        };
        dev.bring_up()?;
        Ok(dev)
    }

    /// Keeps `value` alive as long as the port.
    pub fn keep_alive(&mut self, value: Box<dyn std::any::Any + Send>) {
        self.keep_alive.push(value);
    }

    /// The register space.
    pub fn regs(&self) -> &Regs<R> {
        &self.regs
    }

    /// What the firmware reported.
    pub fn identity(&self) -> &Identity {
        &self.id
    }

    /// The main VSI.
    pub fn main_vsi(&self) -> &MainVsi {
        &self.vsi
    }

    /// The LAN HMC (after bring-up).
    pub fn hmc(&self) -> Option<&LanHmc> {
        self.hmc.as_ref()
    }

    /// Typed RX queue `queue` (static dispatch; once per start).
    pub fn rx_queue_typed(&mut self, queue: u16) -> Result<I40eRxQueue<R>> {
        self.state.claim_rx(queue, |_| self.rx.get_mut(queue as usize)?.take())
    }

    /// Typed TX queue `queue` (static dispatch; once per start).
    pub fn tx_queue_typed(&mut self, queue: u16) -> Result<I40eTxQueue<R>> {
        self.state.claim_tx(queue, |_| self.tx.get_mut(queue as usize)?.take())
    }

    fn name(&self) -> &str {
        &self.options.name
    }

    fn dev_err(&self, e: DevError) -> Error {
        e.at(&self.options.name)
    }

    fn timeout(&self, what: &str, register: &'static str, t: PollTimeout, budget: Duration) -> Error {
        self.dev_err(error::timeout(what, register, t.last, budget))
    }

    /// Sends one admin-queue command (see [`AdminQueue::send`]).
    fn aq(&self, op: Opcode, params: [u8; 16], buf: Option<Buffer<'_>>, accept: &[u8]) -> Result<cmds_desc::Desc> {
        let mut aq = self.aq.lock().unwrap_or_else(|e| e.into_inner());
        aq.send(&self.regs, op, params, buf, accept).map_err(|e| self.dev_err(e))
    }

    // ---- §4 reset ----

    /// §4.3: what an earlier driver left behind (interrupt causes, queue lists, enabled queues).
    fn clear_leftovers(&self) {
        let t = &self.options.timing;
        let vectors = glpci_cnf2::MSI_X_PF_N.get(self.regs.read(GLPCI_CNF2));
        let qalloc = self.regs.read(PFLAN_QALLOC);
        let (first, count) = if qalloc & pflan_qalloc::VALID != 0 {
            let (f, l) = (pflan_qalloc::FIRSTQ.get(qalloc), pflan_qalloc::LASTQ.get(qalloc));
            (f, if l >= f { l - f + 1 } else { 0 })
        } else {
            (0, 0)
        };
        self.regs.write(PFINT_ICR0_ENA, 0);
        for n in 0..vectors.saturating_sub(2) {
            self.regs.write(pfint_dyn_ctln(n), pfint_dyn_ctl::ITR_INDX.val(pfint_dyn_ctl::ITR_NONE));
        }
        self.regs.write(PFINT_LNKLST0, pfint_lnklst::EOL);
        for n in 0..vectors.saturating_sub(1) {
            self.regs.write(pfint_lnklstn(n), pfint_lnklst::EOL);
        }
        let no_wait = QueueTiming { pre_cfg: Duration::ZERO, ..t.queue };
        for q in 0..count {
            queue::tx_pre_cfg(&self.regs, first + q, false, &no_wait);
        }
        std::thread::sleep(t.clear_pre_disable);
        for q in 0..count as u16 {
            self.regs.write(qint_tqctl(q), 0);
            self.regs.write(qtx_ena(q), 0);
            self.regs.write(qint_rqctl(q), 0);
            self.regs.write(qrx_ena(q), 0);
        }
        std::thread::sleep(Duration::from_micros(50));
    }

    /// §4.1: wait out a global reset, wait for the firmware's configuration, PF software reset.
    fn pf_reset(&self) -> Result<()> {
        let t = &self.options.timing;
        let polls = (glgen_rstctl::GRSTDEL.get(self.regs.read(GLGEN_RSTCTL)) * 20).clamp(1, 160);
        let global_budget = t.global_reset_step * polls;
        let mut first_clear = true;
        loop {
            let rstat = self
                .regs
                .poll_with(GLGEN_RSTAT, global_budget, t.global_reset_step, |v| glgen_rstat::DEVSTATE.get(v) == 0);
            match rstat {
                Ok(_) => {}
                Err(p) => return Err(self.timeout("global reset", "GLGEN_RSTAT", p, global_budget)),
            }
            let uld_done = glnvm_uld::CONF_CORE_DONE | glnvm_uld::CONF_GLOBAL_DONE;
            let step = t.nvm_ready / 1000;
            if let Err(p) = self.regs.poll_with(GLNVM_ULD, t.nvm_ready, step, |v| v & uld_done == uld_done) {
                // DPDK goes on when one of the two is done.
                if p.last & uld_done == 0 {
                    return Err(self.timeout("firmware configuration load", "GLNVM_ULD", p, t.nvm_ready));
                }
            }
            if !first_clear {
                // A global reset happened: it reset the PF as well.
                return Ok(());
            }
            self.regs.set_bits(PFGEN_CTRL, pfgen_ctrl::PFSWR);
            let start = Instant::now();
            loop {
                let v = self.regs.read(PFGEN_CTRL);
                if v & pfgen_ctrl::PFSWR == 0 {
                    return Ok(());
                }
                if glgen_rstat::DEVSTATE.get(self.regs.read(GLGEN_RSTAT)) != 0 {
                    first_clear = false;
                    break;
                }
                if start.elapsed() >= t.pf_reset {
                    return Err(self.timeout("PF software reset", "PFGEN_CTRL", PollTimeout { reg: PFGEN_CTRL, last: v }, t.pf_reset));
                }
                std::thread::sleep(t.pf_reset / 1000);
            }
        }
    }

    // ---- §3 bring-up ----

    fn bring_up(&mut self) -> Result<()> {
        let t = self.options.timing.clone();
        let fwsts = self.regs.read(GL_FWSTS);
        if gl_fwsts::FWS1B.get(fwsts) != 0 {
            return Err(self.dev_err(DevError::RecoveryMode { gl_fwsts: fwsts }));
        }
        self.clear_leftovers();
        self.pf_reset()?;
        // §3 step 4.
        self.id.port = pfgen_portnum::PORT_NUM.get(self.regs.read(PFGEN_PORTNUM)) as u8;
        let rid = self.regs.read(PF_FUNC_RID);
        self.id.pf_id = if self.regs.read(GLPCI_CAPSUP) & glpci_capsup::ARI_EN != 0 {
            pf_func_rid::FUNCTION_NUMBER_ARI.get(rid)
        } else {
            pf_func_rid::FUNCTION_NUMBER.get(rid)
        } as u8;
        // §3 step 5, §5.3.
        let mut version = None;
        let mut last_err = None;
        for attempt in 0..t.version_attempts.max(1) {
            let ok = self.aq.get_mut().unwrap_or_else(|e| e.into_inner()).program(&self.regs);
            if !ok && attempt + 1 == t.version_attempts.max(1) {
                return Err(self.dev_err(DevError::Timeout {
                    what: "admin queue set-up (base register read back)".into(),
                    register: "PF_ATQBAL",
                    last_value: self.regs.read(PF_ATQBAL),
                    budget: Duration::ZERO,
                }));
            }
            match self.aq(Opcode::GetVersion, [0; 16], None, &[]) {
                Ok(d) => {
                    version = Some(cmds::GetVersionResp::decode(&d.params));
                    break;
                }
                Err(e) => last_err = Some(e),
            }
            std::thread::sleep(t.version_retry);
        }
        let Some(v) = version else { return Err(last_err.unwrap_or_else(|| self.state.invalid("no admin queue"))) };
        self.id.fw = (v.fw_major, v.fw_minor);
        self.id.api = (v.api_major, v.api_minor);
        if v.api_major != API_KNOWN.0 {
            return Err(self.dev_err(DevError::ApiVersion {
                driver_knows: API_KNOWN,
                device_has: self.id.api,
                fw: format!("{}.{}", v.fw_major, v.fw_minor),
            }));
        }
        self.send_driver_version();
        // §3 step 7: leave PXE mode; the register is written whatever the firmware said.
        let mut pxe = [0u8; 16];
        cmds::ClearPxeCmd { rx_cnt: 2 }.encode_into(&mut pxe);
        match self.aq(Opcode::ClearPxeMode, pxe, None, &[]) {
            Ok(_) => {}
            Err(e) if e.driver_error::<DevError>().is_some_and(|d| matches!(d, DevError::AdminQueue { .. })) => {}
            Err(e) => return Err(e),
        }
        self.regs.write(GLLAN_RCTL_0, gllan_rctl_0::PXE_MODE);
        self.read_capabilities()?;
        // §3 step 10.
        let n = self.id.queues as u32;
        self.hmc = Some(LanHmc::new(&self.regs, &self.allocator, &self.mapper, &self.options.name.clone(), self.id.pf_id as u32, n, n, self.options.hmc_mode)?);
        self.read_mac()?;
        self.setup_main_vsi()?;
        // Link events on (Get Link Status with LSE enable, §5.5), and only the events the driver wants (§3 step
        // 24; its mask suppresses the others).
        let ls = self.get_link(cmds::link::LSE_ENABLE)?;
        *self.link.lock().unwrap_or_else(|e| e.into_inner()) = ls;
        let mut mask = [0u8; 16];
        let keep = cmds::phy_event::LINK_UPDOWN | cmds::phy_event::MODULE_QUAL_FAIL | cmds::phy_event::MEDIA_NA;
        cmds::PhyIntMaskCmd { event_mask: !keep }.encode_into(&mut mask);
        self.aq(Opcode::SetPhyIntMask, mask, None, &[])?;
        self.update_info();
        self.state.mac = self.id.mac;
        *self.hw.lock().unwrap_or_else(|e| e.into_inner()) = HwStats::new(&self.regs, self.id.port, self.vsi.stat_idx);
        Ok(())
    }

    fn send_driver_version(&self) {
        let mut p = [0u8; 16];
        cmds::DriverVersionCmd { major: 0, minor: 1, build: 0, subbuild: 0 }.encode_into(&mut p);
        let mut name = *b"pktio-rs i40e\0\0\0";
        // Informational only: a firmware that refuses it is no reason to fail.
        let _ = self.aq(Opcode::DriverVersion, p, Some(Buffer { data: &mut name, rd: true }), &[]);
    }

    /// §6.2: queues, first queue, RSS table, vectors, flow director.
    fn read_capabilities(&mut self) -> Result<()> {
        let mut len = BUF_LEN;
        loop {
            let mut buf = vec![0u8; len];
            let mut p = [0u8; 16];
            cmds::ListCapsCmd::default().encode_into(&mut p);
            let d = self.aq(Opcode::ListFuncCaps, p, Some(Buffer { data: &mut buf, rd: false }), &[cmds::status::ENOMEM])?;
            if d.status() == cmds::status::ENOMEM {
                let need = d.head.datalen as usize;
                if need <= len || need > BUF_LEN {
                    return Err(self.dev_err(DevError::BadAnswer {
                        opcode: Opcode::ListFuncCaps.value(),
                        name: Opcode::ListFuncCaps.name(),
                        reason: format!("ENOMEM asking for {need} bytes with a {len}-byte buffer"),
                    }));
                }
                len = need;
                continue;
            }
            let count = cmds::ListCapsCmd::decode(&d.params).count as usize;
            let (mut rxq, mut txq) = (None, None);
            for e in buf.chunks_exact(cmds::CapElement::SIZE).take(count).map(cmds::CapElement::decode) {
                match e.id {
                    cmds::cap::RXQ => rxq = Some((e.number, e.phys_id)),
                    cmds::cap::TXQ => txq = Some((e.number, e.phys_id)),
                    cmds::cap::RSS => self.id.rss_table = e.number as u16,
                    cmds::cap::MSIX => self.id.msix = e.number,
                    cmds::cap::FLOW_DIRECTOR => self.id.flow_director = e.number != 0,
                    _ => {}
                }
            }
            let (Some((nrx, first)), Some((ntx, _))) = (rxq, txq) else {
                return Err(self.dev_err(DevError::BadAnswer {
                    opcode: Opcode::ListFuncCaps.value(),
                    name: Opcode::ListFuncCaps.name(),
                    reason: format!("no RX/TX queue capability among {count} elements"),
                }));
            };
            self.id.queues = nrx.min(ntx).min(1536) as u16;
            self.id.first_queue = first;
            if self.id.queues == 0 {
                return Err(self.dev_err(DevError::BadAnswer {
                    opcode: Opcode::ListFuncCaps.value(),
                    name: Opcode::ListFuncCaps.name(),
                    reason: "the function has no queues".into(),
                }));
            }
            return Ok(());
        }
    }

    /// §6.4.
    fn read_mac(&mut self) -> Result<()> {
        let mut buf = [0u8; cmds::mac_read::BUF_LEN];
        let d = self.aq(Opcode::MacAddressRead, [0; 16], Some(Buffer { data: &mut buf, rd: false }), &[])?;
        let flags = cmds::MacReadCmd::decode(&d.params).command_flags;
        let mac = MacAddr([buf[0], buf[1], buf[2], buf[3], buf[4], buf[5]]);
        if flags & cmds::mac_read::LAN_ADDR_VALID == 0 || mac == MacAddr::ZERO || mac.is_multicast() {
            return Err(self.dev_err(DevError::BadAnswer {
                opcode: Opcode::MacAddressRead.value(),
                name: Opcode::MacAddressRead.name(),
                reason: format!("no valid LAN address (flags {flags:#x}, {mac})"),
            }));
        }
        self.id.mac = mac;
        Ok(())
    }

    /// §6.5, §6.6: the main VSI's SEID, its parameters, its TC 0 queue set, and its queue map.
    fn setup_main_vsi(&mut self) -> Result<()> {
        let bad = |reason: String| DevError::BadAnswer {
            opcode: Opcode::GetSwitchConfig.value(),
            name: Opcode::GetSwitchConfig.name(),
            reason,
        };
        let mut buf = vec![0u8; cmds::element::BUF_LEN];
        self.aq(Opcode::GetSwitchConfig, [0; 16], Some(Buffer { data: &mut buf, rd: false }), &[])?;
        let h = cmds::SwitchConfigHeader::decode(&buf);
        let vsi = (0..h.num_reported as usize)
            .map(|i| cmds::SwitchElement::decode(&buf[16 + 16 * i..]))
            .take_while(|_| true)
            .find(|e| e.element_type == cmds::element::VSI)
            .ok_or_else(|| self.dev_err(bad(format!("no VSI among {} elements", h.num_reported))))?;
        self.vsi.seid = vsi.seid;
        self.vsi.uplink = vsi.uplink_seid;

        let mut p = [0u8; 16];
        cmds::VsiCmd { uplink_seid: self.vsi.seid, ..Default::default() }.encode_into(&mut p);
        let mut props = [0u8; cmds::VsiProperties::SIZE];
        let d = self.aq(Opcode::GetVsiParams, p, Some(Buffer { data: &mut props, rd: false }), &[])?;
        let r = cmds::VsiResp::decode(&d.params);
        let cur = cmds::VsiProperties::decode(&props);
        self.vsi.number = r.vsi_number;
        self.vsi.stat_idx = cur.stat_counter_idx;
        self.vsi.qs_handle = cur.qs_handle[0];

        // TC 0 with one credit; its handle replaces the one above (§6.6).
        let mut p = [0u8; 16];
        cmds::VsiCmd { uplink_seid: self.vsi.seid, ..Default::default() }.encode_into(&mut p);
        let mut bw = cmds::TcBandwidthBuf { tc_valid_bits: 1, tc_bw_credits: [1, 0, 0, 0, 0, 0, 0, 0], ..Default::default() }.encode();
        self.aq(Opcode::VsiTcBandwidth, p, Some(Buffer { data: &mut bw, rd: true }), &[])?;
        let handle = cmds::TcBandwidthBuf::decode(&bw).qs_handles[0];
        if handle != cmds::vsi::QS_HANDLE_INVALID {
            self.vsi.qs_handle = handle;
        }

        // Queue map: contiguous from the VSI's first PF queue, a power of two of them, at most 64 per TC.
        self.vsi.base_queue = self.id.flow_director as u16;
        let avail = self.id.queues.saturating_sub(self.vsi.base_queue).min(cmds::vsi::MAX_Q_PER_TC);
        if avail == 0 {
            return Err(self.dev_err(bad("no queue left for the main VSI".into())));
        }
        let log2 = 15 - avail.leading_zeros() as u16;
        self.vsi.queues = 1 << log2;
        let mut upd = cmds::VsiProperties {
            valid_sections: cmds::vsi::SECTION_VLAN | cmds::vsi::SECTION_QUEUE_MAP,
            port_vlan_flags: cmds::vsi::PVLAN_MODE_ALL | cmds::vsi::PVLAN_EMOD_NOTHING,
            mapping_flags: cmds::vsi::MAP_CONTIG,
            ..cur
        };
        upd.queue_mapping = [0; 16];
        upd.queue_mapping[0] = self.vsi.base_queue;
        upd.tc_mapping = [0; 8];
        upd.tc_mapping[0] = cmds::vsi::TC_QUEUE_OFFSET.val(0) as u16 | cmds::vsi::TC_QUEUE_NUMBER.val(log2 as u32) as u16;
        let mut p = [0u8; 16];
        cmds::VsiCmd { uplink_seid: self.vsi.seid, ..Default::default() }.encode_into(&mut p);
        upd.encode_into(&mut props);
        self.aq(Opcode::UpdateVsi, p, Some(Buffer { data: &mut props, rd: true }), &[])?;
        Ok(())
    }

    /// Device limits once the capabilities are known.
    fn update_info(&mut self) {
        let lim = DescLimits { min: RING_MIN, max: RING_MAX, align: RING_ALIGN };
        let reta = if self.id.rss_table >= 512 { 512 } else { HLUT_ENTRIES as u16 };
        self.lut = vec![0; reta as usize];
        let speeds: Vec<u32> = [1_000, 10_000, 25_000, 40_000].into_iter().filter(|&s| s <= self.options.max_speed).collect();
        self.state.info = DevInfo {
            driver_name: "net_i40e",
            device_name: self.options.name.clone(),
            max_rx_queues: self.vsi.queues,
            max_tx_queues: self.vsi.queues,
            rx_desc_lim: lim,
            tx_desc_lim: lim,
            min_mtu: 68,
            max_mtu: (MAX_FRAME_SIZE - FRAME_OVERHEAD) as u16,
            max_rx_pktlen: MAX_FRAME_SIZE,
            rx_offload_capa: offload::RX_IPV4_CKSUM
                | offload::RX_UDP_CKSUM
                | offload::RX_TCP_CKSUM
                | offload::RX_SCATTER
                | offload::RX_RSS_HASH,
            tx_offload_capa: offload::TX_IPV4_CKSUM
                | offload::TX_UDP_CKSUM
                | offload::TX_TCP_CKSUM
                | offload::TX_MULTI_SEGS
                | offload::TX_MBUF_FAST_FREE,
            flow_type_rss_offloads: RssHashFunctions::ALL,
            reta_size: reta,
            hash_key_size: RSS_KEY_LEN as u8,
            speed_capa: speeds,
            numa_node: None,
        };
        let q = self.state.config.rx_queues.min(self.vsi.queues).max(1);
        self.fill_lut(q);
    }

    fn fill_lut(&mut self, queues: u16) {
        // Entries are relative to the VSI's first queue (§12.1).
        let n = queues.min(HLUT_MAX_QUEUE + 1) as usize;
        for (e, slot) in self.lut.iter_mut().enumerate() {
            *slot = (e % n) as u8;
        }
    }

    // ---- link (§7) ----

    fn get_link(&self, lse: u16) -> Result<LinkStatus> {
        let mut p = [0u8; 16];
        cmds::LinkStatusCmd { command_flags: lse }.encode_into(&mut p);
        let d = self.aq(Opcode::GetLinkStatus, p, None, &[])?;
        Ok(link_of(&cmds::LinkStatus::decode(&d.params)))
    }

    /// Takes the pending ARQ events; a link event updates the port's link.
    pub fn poll_events(&self) {
        loop {
            let ev = {
                let mut aq = self.aq.lock().unwrap_or_else(|e| e.into_inner());
                aq.receive(&self.regs)
            };
            let Some(ev) = ev else { break };
            if ev.desc.head.opcode == Opcode::GetLinkStatus.value() {
                *self.link.lock().unwrap_or_else(|e| e.into_inner()) = link_of(&cmds::LinkStatus::decode(&ev.desc.params));
            }
        }
    }

    /// Set PHY Config (§7.2): the link up with auto-negotiation, or administratively down.
    fn set_phy(&self, up: bool) -> Result<()> {
        let mut p = [0u8; 16];
        cmds::PhyAbilitiesCmd { param0: 0 }.encode_into(&mut p);
        let mut buf = vec![0u8; cmds::phy::ABILITIES_LEN];
        self.aq(Opcode::GetPhyAbilities, p, Some(Buffer { data: &mut buf, rd: false }), &[])?;
        let cur = cmds::PhyAbilities::decode(&buf);
        if up && cur.phy_type != 0 && cur.link_speed != 0 && cur.abilities & cmds::phy::ENABLE_LINK != 0 {
            return Ok(());
        }
        let keep = cur.abilities & cmds::phy::KEEP_MASK;
        let cfg = if up {
            cmds::SetPhyConfigCmd {
                phy_type: cmds::phy::ALL_TYPES,
                phy_type_ext: cmds::phy::ALL_TYPES_EXT,
                link_speed: cur.link_speed,
                abilities: keep | cmds::phy::ENABLE_ATOMIC_LINK | cmds::phy::ENABLE_LINK | cmds::phy::ENABLE_AN,
                eee_capability: cur.eee_capability,
                eeer: cur.eeer_val,
                low_power_ctrl: cur.d3_lpan,
                fec_config: cur.fec_cfg_curr_mod_ext_info,
            }
        } else {
            cmds::SetPhyConfigCmd {
                link_speed: cur.link_speed,
                abilities: keep | cmds::phy::ENABLE_ATOMIC_LINK | cmds::phy::ENABLE_AN,
                eee_capability: cur.eee_capability,
                eeer: cur.eeer_val,
                low_power_ctrl: cur.d3_lpan,
                fec_config: cur.fec_cfg_curr_mod_ext_info,
                ..Default::default()
            }
        };
        let mut p = [0u8; 16];
        cfg.encode_into(&mut p);
        self.aq(Opcode::SetPhyConfig, p, None, &[])?;
        Ok(())
    }

    fn set_mac_config(&self) -> Result<()> {
        let frame = (self.state.config.mtu as u32 + FRAME_OVERHEAD).min(MAX_FRAME_SIZE);
        let mut p = [0u8; 16];
        cmds::SetMacConfigCmd {
            max_frame_size: frame as u16,
            params: cmds::mac_config::CRC_EN,
            fc_refresh_threshold: cmds::mac_config::FC_REFRESH,
            ..Default::default()
        }
        .encode_into(&mut p);
        self.aq(Opcode::SetMacConfig, p, None, &[])?;
        Ok(())
    }

    // ---- receive modes and filters (§6.7, §6.8) ----

    fn promisc(&self, flags: u16, valid: u16) -> Result<()> {
        let mut p = [0u8; 16];
        cmds::PromiscCmd { promiscuous_flags: flags, valid_flags: valid, seid: self.vsi.seid, vlan_tag: 0 }.encode_into(&mut p);
        self.aq(Opcode::SetVsiPromisc, p, None, &[])?;
        Ok(())
    }

    fn apply_rx_modes(&self) -> Result<()> {
        use cmds::promisc::*;
        // RX_ONLY (API 1.5) keeps the PF from receiving its own transmissions.
        let rx_only = if self.id.api >= (1, 5) { RX_ONLY } else { 0 };
        let uc = if self.state.promiscuous { UNICAST | rx_only } else { 0 };
        self.promisc(uc, UNICAST | rx_only)?;
        let mc = if self.state.promiscuous || self.state.allmulticast { MULTICAST } else { 0 };
        self.promisc(mc, MULTICAST)?;
        self.promisc(BROADCAST, BROADCAST)
    }

    fn mac_filter(&self, mac: MacAddr, add: bool) -> Result<()> {
        let mut p = [0u8; 16];
        cmds::MacVlanCmd { num_addresses: 1, seid0: self.vsi.seid | cmds::macvlan::SEID_VALID, ..Default::default() }.encode_into(&mut p);
        let mut buf = [0u8; 16];
        let op = if add {
            cmds::AddMacVlanElem { mac: mac.0, flags: cmds::macvlan::PERFECT_MATCH | cmds::macvlan::IGNORE_VLAN, ..Default::default() }
                .encode_into(&mut buf);
            Opcode::AddMacVlan
        } else {
            cmds::RemoveMacVlanElem {
                mac: mac.0,
                flags: cmds::macvlan::PERFECT_MATCH as u8 | cmds::macvlan::REMOVE_IGNORE_VLAN,
                ..Default::default()
            }
            .encode_into(&mut buf);
            Opcode::RemoveMacVlan
        };
        self.aq(op, p, Some(Buffer { data: &mut buf, rd: true }), &[cmds::status::EEXIST])?;
        Ok(())
    }

    // ---- RSS (§12) ----

    /// Writes an RX-filter register: through command 0x0207 from API 1.5 on, falling back to MMIO (§6.11).
    fn write_rx_ctl(&self, reg: Reg, value: u32) {
        if self.id.api >= (1, 5) {
            let mut p = [0u8; 16];
            cmds::RxCtlWriteCmd { address: reg.0 as u32, value }.encode_into(&mut p);
            if self.aq(Opcode::RxCtlWrite, p, None, &[]).is_ok() {
                return;
            }
        }
        self.regs.write(reg, value);
    }

    fn hena_of(functions: RssHashFunctions) -> u64 {
        let f = functions;
        let mut v = 0u64;
        let mut set = |bits: &[u32]| bits.iter().for_each(|&b| v |= 1 << b);
        if f.contains(RssHashFunctions::IPV4) {
            set(&[pctype::IPV4_OTHER, pctype::FRAG_IPV4]);
        }
        if f.contains(RssHashFunctions::IPV4_TCP) {
            set(&[pctype::IPV4_TCP]);
        }
        if f.contains(RssHashFunctions::IPV4_UDP) {
            set(&[pctype::IPV4_UDP]);
        }
        if f.contains(RssHashFunctions::IPV6) {
            set(&[pctype::IPV6_OTHER, pctype::FRAG_IPV6]);
        }
        if f.contains(RssHashFunctions::IPV6_TCP) {
            set(&[pctype::IPV6_TCP]);
        }
        if f.contains(RssHashFunctions::IPV6_UDP) {
            set(&[pctype::IPV6_UDP]);
        }
        v
    }

    /// §12.2: HENA off, Toeplitz, no symmetric hash, table size, key, table, then the hashed types.
    fn apply_rss(&self) {
        self.write_rx_ctl(pfqf_hena(0), 0);
        self.write_rx_ctl(pfqf_hena(1), 0);
        let Some(rss) = &self.state.config.rss else { return };
        self.regs.clear_bits(PRTQF_CTL_0, prtqf_ctl_0::HSYM_ENA);
        self.regs.set_bits(GLQF_CTL, glqf_ctl::HTOEP);
        let ctl = self.regs.read(PFQF_CTL_0);
        let ctl = if self.lut.len() > HLUT_ENTRIES { ctl | pfqf_ctl_0::HASHLUTSIZE } else { ctl & !pfqf_ctl_0::HASHLUTSIZE };
        self.write_rx_ctl(PFQF_CTL_0, ctl);
        self.apply_key();
        self.apply_lut();
        let hena = Self::hena_of(rss.functions);
        self.write_rx_ctl(pfqf_hena(0), hena as u32);
        self.write_rx_ctl(pfqf_hena(1), (hena >> 32) as u32);
    }

    fn apply_key(&self) {
        for (i, w) in self.rss_key.chunks(4).enumerate() {
            self.regs.write(pfqf_hkey(i), u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
    }

    fn apply_lut(&self) {
        for (i, e) in self.lut.chunks(4).enumerate() {
            self.regs.write(pfqf_hlut(i), u32::from_le_bytes([e[0], e[1], e[2], e[3]]));
        }
    }

    // ---- start / stop ----

    fn ring_config(&self, size: u16) -> RingConfig {
        let thresh = 32.min(size / 4);
        RingConfig { size, free_thresh: thresh, rs_thresh: thresh, timing: self.options.timing.queue }
    }

    fn hw_start(&mut self, pool: &Mempool) -> Result<()> {
        let name = self.options.name.clone();
        let Some(hmc) = self.hmc.as_ref() else { return Err(self.state.invalid("the port was closed")) };
        let base = self.vsi.base_queue;
        let max_frame = (self.state.config.mtu as u32 + FRAME_OVERHEAD).min(MAX_FRAME_SIZE);
        let (rx_cfg, tx_cfg) = (self.ring_config(self.state.config.rx_desc), self.ring_config(self.state.config.tx_desc));
        self.rx.clear();
        self.tx.clear();
        let mut tx = Vec::new();
        for k in 0..self.state.config.tx_queues {
            let q = base + k;
            tx.push(Some(TxRing::new(
                TxSetup {
                    regs: &self.regs,
                    allocator: &self.allocator,
                    mapper: &self.mapper,
                    hmc,
                    pool,
                    queue: q,
                    abs_queue: self.id.first_queue + q as u32,
                    pf_id: self.id.pf_id,
                    qs_handle: self.vsi.qs_handle,
                    stats: self.state.tx_stats(k).expect("a configured queue").clone(),
                    port: &name,
                },
                tx_cfg,
            )?));
        }
        let mut rx = Vec::new();
        for k in 0..self.state.config.rx_queues {
            rx.push(Some(RxRing::new(
                RxSetup {
                    regs: &self.regs,
                    allocator: &self.allocator,
                    mapper: &self.mapper,
                    hmc,
                    pool,
                    queue: base + k,
                    port_id: self.state.port_id,
                    max_frame,
                    stats: self.state.rx_stats(k).expect("a configured queue").clone(),
                    port: &name,
                },
                rx_cfg,
            )?));
        }
        self.apply_rss();
        let budget = self.options.timing.queue.switch;
        for (k, ring) in rx.iter_mut().flatten().enumerate() {
            ring.enable().map_err(|t| self.timeout(&format!("RX queue {k} enable"), "QRX_ENA", t, budget))?;
        }
        for (k, ring) in tx.iter_mut().flatten().enumerate() {
            ring.enable().map_err(|t| self.timeout(&format!("TX queue {k} enable"), "QTX_ENA", t, budget))?;
        }
        self.rx = rx;
        self.tx = tx;
        self.apply_rx_modes()?;
        self.set_phy(true)?;
        self.set_mac_config()?;
        self.poll_events();
        Ok(())
    }

    fn raw_stats(&self) -> PortStats {
        let hw = self.hw_totals();
        let mut s = self.state.queue_counters();
        s.ierrors = stats::IERRORS.iter().map(|&i| hw[i]).sum();
        s.imissed += stats::IMISSED.iter().map(|&i| hw[i]).sum::<u64>();
        s.oerrors += hw[stats::OERRORS];
        s
    }

    fn hw_totals(&self) -> Vec<u64> {
        let mut hw = self.hw.lock().unwrap_or_else(|e| e.into_inner());
        hw.update(&self.regs, self.id.port, self.vsi.stat_idx).to_vec()
    }

    /// Undoes the bring-up in reverse (§3 shutdown): queues off, HMC cleared, Queue Shutdown, admin queue off, PF
    /// reset. Called on drop.
    fn close(&mut self) {
        self.tx.clear();
        self.rx.clear();
        if let Some(hmc) = self.hmc.take() {
            hmc.clear(&self.regs);
        }
        let mut p = [0u8; 16];
        cmds::QueueShutdownCmd { driver_unloading: 1 }.encode_into(&mut p);
        let _ = self.aq(Opcode::QueueShutdown, p, None, &[]);
        self.aq.get_mut().unwrap_or_else(|e| e.into_inner()).shutdown(&self.regs);
        let _ = self.pf_reset();
    }
}

/// Types `adminq` hands back, under a name `dev` can use in signatures.
mod cmds_desc {
    pub use crate::adminq::AqDesc as Desc;
}

/// The port's link from a Get Link Status answer or event.
fn link_of(l: &cmds::LinkStatus) -> LinkStatus {
    if l.link_info & cmds::link::LINK_UP == 0 {
        return LinkStatus::default();
    }
    LinkStatus {
        up: true,
        speed_mbps: cmds::link::speed_mbps(l.link_speed),
        full_duplex: true,
        autoneg: l.an_info & cmds::link::AN_COMPLETED != 0,
    }
}

impl<R: RegisterSpace + 'static> EthDev for I40e<R> {
    fn state(&self) -> &PortState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut PortState {
        &mut self.state
    }

    fn configure(&mut self, config: &PortConfig) -> Result<()> {
        let mut key = self.rss_key;
        if let Some(rss) = &config.rss {
            if let Some(k) = &rss.key {
                if k.len() != RSS_KEY_LEN {
                    return Err(self.state.invalid(format!("RSS key of {} bytes; the 700 series takes {RSS_KEY_LEN}", k.len())));
                }
                key.copy_from_slice(k);
            }
        }
        self.state.configure(config)?;
        self.rss_key = key;
        self.fill_lut(config.rx_queues);
        self.state.reset_stats_to(self.raw_stats());
        self.xbase = self.hw_totals();
        Ok(())
    }

    fn start(&mut self, pool: &Mempool) -> Result<()> {
        if self.state.started {
            return Err(Error::Started { port: self.name().to_string() });
        }
        match self.hw_start(pool) {
            Ok(()) => self.state.start(),
            Err(e) => {
                // Rings made so far disable themselves and give their buffers back as they drop.
                self.tx.clear();
                self.rx.clear();
                Err(e)
            }
        }
    }

    fn stop(&mut self) -> Result<()> {
        if !self.state.started {
            return Ok(());
        }
        self.state.stop()?;
        // TX first, then RX (§9.4); each ring disables its queue as it drops.
        self.tx.clear();
        self.rx.clear();
        // DPDK takes the link down administratively at stop; start brings it up again.
        self.set_phy(false)
    }

    fn rx_queue(&mut self, queue: u16) -> Result<Box<dyn RxQueue>> {
        Ok(Box::new(self.rx_queue_typed(queue)?))
    }

    fn tx_queue(&mut self, queue: u16) -> Result<Box<dyn TxQueue>> {
        Ok(Box::new(self.tx_queue_typed(queue)?))
    }

    fn link(&self) -> LinkStatus {
        self.poll_events();
        *self.link.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_link_up(&mut self, up: bool) -> Result<()> {
        self.set_phy(up)
    }

    fn set_mac_addr(&mut self, mac: MacAddr) -> Result<()> {
        if mac == MacAddr::ZERO || mac.is_multicast() {
            return Err(self.state.invalid(format!("{mac} is not a unicast address")));
        }
        let old = self.state.mac;
        if mac != old {
            self.mac_filter(mac, true)?;
            if old != self.id.mac {
                self.mac_filter(old, false)?;
            }
        }
        self.state.mac = mac;
        Ok(())
    }

    fn set_promiscuous(&mut self, on: bool) -> Result<()> {
        self.state.promiscuous = on;
        self.apply_rx_modes()
    }

    fn set_allmulticast(&mut self, on: bool) -> Result<()> {
        self.state.allmulticast = on;
        self.apply_rx_modes()
    }

    fn set_mtu(&mut self, mtu: u16) -> Result<()> {
        if self.state.started {
            return Err(self.state.invalid(
                "the MTU of a started 700-series port cannot change: its RX queue contexts hold the largest frame; \
                 stop the port, set the MTU, start it again",
            ));
        }
        self.state.set_mtu(mtu)
    }

    fn stats(&self) -> PortStats {
        self.state.since_reset(self.raw_stats())
    }

    fn reset_stats(&mut self) {
        self.state.reset_stats_to(self.raw_stats());
        self.xbase = self.hw_totals();
    }

    fn xstats(&self) -> Vec<XStat> {
        let mut out = self.stats().generic_xstats();
        let hw = self.hw_totals();
        for (i, d) in stats::COUNTERS.iter().enumerate() {
            out.push(XStat::new(d.name, hw[i].wrapping_sub(self.xbase.get(i).copied().unwrap_or(0))));
        }
        out
    }

    fn rss_hash_update(&mut self, rss: &RssConfig) -> Result<()> {
        if let Some(k) = &rss.key {
            if k.len() != RSS_KEY_LEN {
                return Err(self.state.invalid(format!("RSS key of {} bytes; the 700 series takes {RSS_KEY_LEN}", k.len())));
            }
            self.rss_key.copy_from_slice(k);
        }
        let cur = self.state.config.rss.get_or_insert_with(RssConfig::default);
        cur.functions = rss.functions;
        if rss.key.is_some() {
            cur.key = rss.key.clone();
        }
        if self.state.started {
            self.apply_rss();
        }
        Ok(())
    }

    fn reta_update(&mut self, table: &[u16]) -> Result<()> {
        let size = self.lut.len();
        if table.is_empty() || !size.is_multiple_of(table.len()) {
            return Err(self.state.invalid(format!(
                "redirection table of {} entries; give {size} (or a divisor of it, repeated)",
                table.len()
            )));
        }
        let limit = self.state.config.rx_queues.min(HLUT_MAX_QUEUE + 1);
        if let Some(bad) = table.iter().find(|&&q| q >= limit) {
            return Err(self.state.invalid(format!("redirection table entry {bad}: must name one of the first {limit} RX queues")));
        }
        for (e, slot) in self.lut.iter_mut().enumerate() {
            *slot = table[e % table.len()] as u8;
        }
        if self.state.started {
            self.apply_lut();
        }
        Ok(())
    }
}

impl<R: RegisterSpace> Drop for I40e<R> {
    fn drop(&mut self) {
        self.close();
    }
}

/// Opens the 700-series PF at `addr` through VFIO (IOMMU or no-IOMMU, as the container was set up): checks its
/// ID, enables bus mastering, maps BAR0 and brings the port up.
pub fn open_vfio(vfio: &pktio::vfio::Vfio, addr: pktio::pci::PciAddress, allocator: Allocator) -> Result<I40e<pktio::vfio::VfioBar>> {
    use pktio::pci::ConfigSpace;
    let dev = vfio.open_device(addr)?;
    let cfg = |e: std::io::Error| Error::os(format!("{addr}: PCI config space"), e);
    let (vendor, device) = (dev.read16(0).map_err(cfg)?, dev.read16(2).map_err(cfg)?);
    let max_speed = max_speed_of(vendor, device).ok_or_else(|| {
        DevError::UnknownDevice { vendor, device, expected: "a 700-series (X710/XL710/XXV710) PF this driver knows" }
            .at(&addr.to_string())
    })?;
    dev.set_bus_master(true).map_err(cfg)?;
    let bar = dev.map_bar(0)?;
    let mapper: Arc<dyn DmaMapper> = Arc::new(dev.container().clone());
    let options = Options { max_speed, ..Options::new(addr.to_string()) };
    let mut port = I40e::new(Arc::new(bar), mapper, allocator, options)?;
    port.keep_alive(Box::new(dev));
    Ok(port)
}
