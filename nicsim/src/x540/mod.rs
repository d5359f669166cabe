//! The behavioural X540 model: one port (PCI function) per [`X540Port`].
//!
//! See the crate docs for how to instantiate it. Layout: `regs` (the model's own register map), `phy` (MDIO PHY),
//! `queue` (queue state and registers), `rx` and `tx` (ring processing), `intr` (interrupts), `port` (the BAR,
//! the [`crate::Model`] implementation and the X540's own port methods), this module (configuration, register
//! semantics, reset, link).

mod eespi;
mod intr;
mod nvm;
mod phy;
mod port;
mod queue;
pub mod regs;
mod rx;
mod sfp;
mod shutdown;
mod tx;
mod x82599;

pub use crate::model::IrqSink;
pub use port::{SimBar, X540Port, X540};
pub use shutdown::ResetRecord;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::fault::Fault;
use crate::model::Plumbing;
use phy::{Phy, PhyEvent};
use queue::{queue_reg, RxQ, TxCtx, TxQ};
use regs::*;

/// Bytes of BAR0 that hold registers in the model (everything in docs/hw/ixgbe.md is below 0x20000).
const REG_SPACE: usize = 0x20000;

/// Link speeds of the X540's copper PHY (docs/hw/ixgbe.md §5.1: LINKS.SPEED 01/10/11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LinkSpeed {
    /// 100 Mb/s.
    M100,
    /// 1 Gb/s.
    G1,
    /// 10 Gb/s.
    G10,
}

impl LinkSpeed {
    fn links_bits(self) -> u32 {
        match self {
            LinkSpeed::M100 => 0b01,
            LinkSpeed::G1 => 0b10,
            LinkSpeed::G10 => 0b11,
        }
    }

    /// Speed in Mb/s.
    pub fn mbps(self) -> u32 {
        match self {
            LinkSpeed::M100 => 100,
            LinkSpeed::G1 => 1_000,
            LinkSpeed::G10 => 10_000,
        }
    }
}

/// Which member of the family a model port is (docs/hw/ixgbe.md §15 lists the differences).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Chip {
    /// X540 (integrated 10GBASE-T PHY behind MDIO).
    #[default]
    X540,
    /// 82599ES SFP+ (X520): MAC link through AUTOC/AUTOC2, TX laser on ESDP.SDP3, CTRL.LNK_RST resets the link,
    /// and the RX security-block errata (RXEN only while SECRXCTRL.RX_DIS holds the block quiet).
    X82599,
}

/// How to build one model port.
#[derive(Debug, Clone)]
pub struct X540Config {
    /// X540 or 82599 (see [`X540Config::x82599`]).
    pub chip: Chip,
    /// Permanent MAC address, loaded into RAL(0)/RAH(0) at every reset (as if from the NVM).
    pub mac: [u8; 6],
    /// PCI function / port number reported in STATUS.LAN_ID (0 or 1); also the PHY's MDIO address.
    pub lan_id: u8,
    /// Time from PHY power-up or auto-negotiation restart (and from creation) until LINKS.LINK_UP.
    pub link_up_delay: Duration,
    /// How long CTRL.RST reads back 1 after a reset is requested. Make it long to inject a "slow reset".
    pub reset_delay: Duration,
    /// After the reset completes, time until EEC.ARD (auto-read done) reads 1.
    pub eeprom_delay: Duration,
    /// After the reset completes, time until RDRXCTL.DMAIDONE reads 1.
    pub dma_init_delay: Duration,
    /// Time from setting RXDCTL/TXDCTL.ENABLE until the bit reads back 1.
    pub queue_enable_delay: Duration,
    /// Best speed of the link partner (or the cable); the negotiated speed is the best both sides advertise.
    pub partner_speed: LinkSpeed,
    /// Start with the PHY in low-power mode (as a previous DPDK `dev_stop` leaves it): the driver must power it up
    /// through MDIO (docs/hw/ixgbe.md §5.2) before the link comes up. On the 82599: start with the SFP+ TX laser off
    /// (ESDP.SDP3 = 1) and the link not trained; the driver must turn the laser on and restart AUTOC.
    pub phy_powered_down: bool,
    /// 82599: after SECRXCTRL.RX_DIS is set, time until SECRXSTAT.SECRX_RDY reads 1 (docs/hw/ixgbe.md §3.7 step 35).
    pub secrx_ready_delay: Duration,
    /// Panic (in whichever thread notices) at the first fault instead of only recording it.
    pub panic_on_fault: bool,
    /// Deliver frames injected with [`RxError`] with RXE set in the write-back even if FCTRL.SBP is clear (a
    /// real X540 drops them unless SBP is set). On by default so the driver's error path gets exercised.
    pub deliver_bad_frames: bool,
    /// BAR0 size in bytes (2 MiB on the X540-AT2, docs/hw/ixgbe.md §1).
    pub bar0_len: usize,
    /// PCIe master requests never drain: STATUS.GIO stays 1 after CTRL.GIO_DIS, so the driver must clear pending
    /// TX and reset twice (docs/hw/ixgbe.md §3.1 step 3).
    pub gio_stuck: bool,
    /// The firmware holds this port's PHY semaphore (SW_FW_SYNC) for this long after the port is created
    /// (`Duration::MAX`: for ever), as busy management firmware does (docs/hw/ixgbe.md §5.5).
    pub fw_phy_semaphore_hold: Duration,
    /// 82599: management firmware is active and sets MMNGC.MNG_VETO; turning the SFP+ laser off is then a fault
    /// (docs/hw/ixgbe.md §5.6).
    pub mng_veto: bool,
    /// 82599: a module is seated in the SFP+ cage (a passive direct-attach cable, docs/hw/ixgbe.md §18): ESDP.SDP2
    /// reads 1 and its serial-ID EEPROM answers on I2CCTL. Without one the link never comes up.
    pub sfp_module: bool,
}

impl Default for X540Config {
    fn default() -> Self {
        X540Config {
            chip: Chip::X540,
            secrx_ready_delay: Duration::ZERO,
            mac: [0x02, 0x00, 0x00, 0x54, 0x05, 0x00],
            lan_id: 0,
            link_up_delay: Duration::ZERO,
            reset_delay: Duration::ZERO,
            eeprom_delay: Duration::ZERO,
            dma_init_delay: Duration::ZERO,
            queue_enable_delay: Duration::ZERO,
            partner_speed: LinkSpeed::G10,
            phy_powered_down: false,
            panic_on_fault: false,
            deliver_bad_frames: true,
            bar0_len: 2 << 20,
            gio_stuck: false,
            fw_phy_semaphore_hold: Duration::ZERO,
            mng_veto: false,
            sfp_module: true,
        }
    }
}

impl X540Config {
    /// An 82599ES SFP+ port (device 0x10FB, BAR0 512 KiB, docs/hw/ixgbe.md §1) with the other defaults.
    pub fn x82599() -> Self {
        X540Config {
            chip: Chip::X82599,
            mac: [0x02, 0x00, 0x00, 0x82, 0x59, 0x00],
            bar0_len: crate::pci::X82599_BAR0_LEN,
            ..Default::default()
        }
    }
}

/// A receive error to inject with a frame ([`X540Port::inject_error`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxError {
    /// Bad FCS: counted in CRCERRS; written back with RXE.
    Crc,
    /// Length error: counted in RLEC; written back with RXE.
    Length,
}

/// A frame on this model's wires.
pub(crate) type WireFrame = crate::wire::WireFrame<RxError>;

/// Model-side counters that never clear (unlike the statistics registers): handy for exact-count tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelCounters {
    /// Frames written to RX descriptors (complete, EOP written).
    pub rx_delivered: u64,
    /// Frames dropped for lack of descriptors or packet-buffer space (what MPC counts).
    pub rx_missed: u64,
    /// Frames dropped by the address/VLAN filters.
    pub rx_filtered: u64,
    /// Frames dropped because RXCTRL.RXEN was clear, the port was in reset, or the target queue was disabled.
    pub rx_disabled: u64,
    /// Frames dropped as runts, oversize or bad (when not delivered with RXE).
    pub rx_errors: u64,
    /// Frames taken from TX rings and put on the wire.
    pub tx_sent: u64,
    /// Frames taken from TX rings while the link was down (completed but not sent).
    pub tx_dropped_link_down: u64,
    /// Times software set its PHY semaphore bit while the firmware still held the PHY (a take-over after the
    /// reference's wait, docs/hw/ixgbe.md §5.5).
    pub swfw_taken_from_firmware: u64,
}

/// The RX packet buffer.
type Inbound = crate::wire::Inbound<RxError>;

/// State shared by the [`SimBar`], the [`X540Port`] handles and the model thread of one port (opaque: reached
/// through those handles).
pub struct X540State {
    config: X540Config,
    core: Mutex<Core>,
    /// RDT(i) / TDT(i): doorbells, written by the driver without taking the model lock.
    rdt: Box<[AtomicU32]>,
    tdt: Box<[AtomicU32]>,
    inbound: Mutex<Inbound>,
    /// RX packet buffer capacity in bytes (RXPBSIZE(0)).
    pb_capacity: AtomicUsize,
    /// Frames dropped at arrival for a full packet buffer, not yet added to MPC.
    missed_at_arrival: AtomicU64,
    /// Where TX frames go, the thread's parking, the interrupt sink (the packet buffer `inbound` stays a Mutex: its
    /// byte count must change together with its frames).
    io: Plumbing<X540State>,
    /// The PHY is powered and not in a forced-down state: what the link partner sees of us.
    phy_active: AtomicBool,
    counters: Mutex<ModelCounters>,
    /// Every reset the driver requested, with what preceded it.
    resets: Mutex<Vec<ResetRecord>>,
}

impl X540State {
    fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn kick(&self) {
        self.io.kick();
    }

    fn counters(&self) -> MutexGuard<'_, ModelCounters> {
        self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A frame arrives from the wire or a test: into the packet buffer, or dropped (MPC) if it is full.
    fn receive(&self, frame: WireFrame) -> bool {
        let cap = self.pb_capacity.load(Ordering::Relaxed);
        let mut inbound = self.inbound.lock().unwrap_or_else(|e| e.into_inner());
        if inbound.bytes + frame.data.len() > cap {
            drop(inbound);
            self.missed_at_arrival.fetch_add(1, Ordering::Relaxed);
            self.counters().rx_missed += 1;
            return false;
        }
        inbound.bytes += frame.data.len();
        inbound.frames.push_back(frame);
        drop(inbound);
        self.kick();
        true
    }

    fn peer(&self) -> Option<Arc<X540State>> {
        self.io.peer()
    }

    /// Sends a frame out of the MAC.
    fn transmit(self: &Arc<Self>, frame: WireFrame, loopback: bool) {
        if loopback {
            self.receive(frame);
            return;
        }
        self.io.transmit(frame.data, frame.error);
    }

    fn tail_doorbell(offset: usize) -> Option<(bool, usize)> {
        // RDT(i): 0x01018 + 0x40 i (i < 64), 0x0D018 + 0x40 (i - 64); TDT(i): 0x06018 + 0x40 i (docs/hw/ixgbe.md §6.1).
        if offset & 0x3F != 0x18 {
            return None;
        }
        match offset {
            0x01000..0x02000 => Some((true, (offset - 0x01000) / 0x40)),
            0x0D000..0x0E000 => Some((true, 64 + (offset - 0x0D000) / 0x40)),
            0x06000..0x08000 => Some((false, (offset - 0x06000) / 0x40)),
            _ => None,
        }
    }

    /// Processes everything pending: TX rings up to their tails, then frames waiting in the packet buffer. Returns
    /// the amount of work done (descriptors and frames); 0 means idle.
    fn step(self: &Arc<Self>) -> usize {
        let arrived = self.io.pump(self);
        let mut core = self.lock();
        core.update_time(self);
        if core.in_reset(Instant::now()) {
            // Frames arriving during reset are lost.
            let mut inbound = self.inbound.lock().unwrap_or_else(|e| e.into_inner());
            let n = inbound.frames.len();
            inbound.frames.clear();
            inbound.bytes = 0;
            drop(inbound);
            self.counters().rx_disabled += n as u64;
            return n + arrived;
        }
        let mut work = arrived + core.process_tx(self);
        work += core.process_rx(self);
        // Link changes and throttled vectors whose EITR interval has passed.
        core.evaluate_irq(self, Instant::now());
        work
    }
}

/// Link state of the port (docs/hw/ixgbe.md §5).
#[derive(Debug, Clone)]
struct Link {
    cable: bool,
    /// When the PHY finishes negotiating; `None` while powered down or without a common speed.
    ready_at: Option<Instant>,
    speed: Option<LinkSpeed>,
    /// Link forced down until then (link flap fault).
    down_until: Option<Instant>,
    /// Last state seen, to raise LSC on change.
    last_up: bool,
}

/// Registers and device state behind the port's lock.
pub(crate) struct Core {
    regs: Vec<u32>,
    defaults: Arc<Vec<u32>>,
    /// Clear-on-read counters, indexed like `regs` (offset / 4) by their (low) register.
    ctr: Vec<u64>,
    reset_until: Instant,
    rxq: Vec<RxQ>,
    txq: Vec<TxQ>,
    phy: Phy,
    link: Link,
    /// A classified frame waiting for descriptors (the head of the packet buffer).
    rx_blocked: Option<rx::Classified>,
    /// Queues that are enabled (processing order).
    active_tx: Vec<usize>,
    /// Hang injected for every queue (new or re-enabled ones included).
    hang_all: bool,
    reset_delay: Duration,
    /// 82599: when SECRXCTRL.RX_DIS was last set (`None` while clear).
    secrx_dis_at: Option<Instant>,
    /// 82599: the CTRL reset bits (RST, LNK_RST) of the reset in progress, as CTRL reads them until it completes.
    reset_bits: u32,
    /// The shutdown steps seen since the last reset.
    watch: shutdown::Watch,
    /// The firmware holds this port's PHY semaphore until then.
    fw_hold_until: Option<Instant>,
    /// Interrupt state beyond the registers (queue causes and masks per vector, throttling).
    intr: intr::Intr,
    /// The NVM image EERD reads.
    nvm: Vec<u16>,
    /// 82599: the SFP+ module's two-wire bus, and the module's serial-ID page (`None`: the cage is empty).
    i2c: sfp::I2cBus,
    sfp_eeprom: Option<Box<[u8; 256]>>,
    /// 82599: the EEPROM as software bit-bangs it through EEC.
    ee_spi: eespi::SpiEeprom,
}

/// How each statistics register reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StatKind {
    /// A 32-bit clear-on-read counter.
    Single,
    /// Low half of a 64-bit counter: returns the low 32 bits, latches the high part for `High`, clears.
    Low,
    /// High half: returns what the last read of `Low` latched.
    High,
}

fn stat_kind(offset: usize) -> Option<StatKind> {
    use StatKind::*;
    let pairs = [GORCL, GOTCL, TORL, RXNFGBCL, RXDGBCL, TXDGBCL];
    if pairs.contains(&offset) {
        return Some(Low);
    }
    if pairs.iter().any(|&l| l + 4 == offset) {
        return Some(High);
    }
    let singles = [
        CRCERRS, ILLERRC, ERRBC, MSPDC, MLFC, MRFC, RLEC, LXONTXC, LXOFFTXC, LXONRXCNT, LXOFFRXCNT, GPRC, BPRC, MPRC,
        GPTC, RUC, RFC, ROC, RJC, TPR, TPT, MPTC, BPTC, XEC, RXNFGPC, RXDGPC, TXDGPC,
    ];
    if singles.contains(&offset)
        || (PRC64..=PRC64 + 20).contains(&offset)
        || (PTC64..=PTC64 + 20).contains(&offset)
        || (mpc(0)..=mpc(7)).contains(&offset)
        // MNGPRC, MNGPDC, MNGPTC; PXONTXC/PXOFFTXC(0..7); PXONRXCNT/PXOFFRXCNT(0..7) (docs/hw/ixgbe.md §13): never counted here.
        || [0x040B4, 0x040B8, 0x0CF90].contains(&offset)
        || (0x03F00..0x03F40).contains(&offset)
        || (0x04140..0x04180).contains(&offset)
    {
        return Some(Single);
    }
    for n in 0..16 {
        if offset == qprc(n) || offset == qprdc(n) || offset == qptc(n) {
            return Some(Single);
        }
        if offset == qbrc_l(n) || offset == qbtc_l(n) {
            return Some(Low);
        }
        if offset == qbrc_h(n) || offset == qbtc_h(n) {
            return Some(High);
        }
    }
    None
}

/// Canonical storage offset: the 0x1014+0x40i / 0x100C+0x40i forms of SRRCTL / DCA_RXCTRL for i <= 15 are treated as
/// aliases of 0x2100+4i / 0x2200+4i (docs/hw/ixgbe.md §6.1, marked uncertain there).
fn canonical(offset: usize) -> usize {
    if (0x01000..0x01000 + 16 * 0x40).contains(&offset) {
        let q = (offset - 0x01000) / 0x40;
        match offset & 0x3F {
            0x14 => return srrctl(q),
            0x0C => return dca_rxctrl(q),
            _ => {}
        }
    }
    offset
}

fn default_registers(config: &X540Config) -> Vec<u32> {
    let mut r = vec![0u32; REG_SPACE / 4];
    let mut set = |off: usize, v: u32| r[off / 4] = v;
    let m = config.mac;
    set(ral(0), u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
    set(rah(0), u32::from(m[4]) | u32::from(m[5]) << 8 | RAH_AV);
    // RX packet buffer 0 comes out of reset at 512 KiB; the X540 driver rewrites it to 384 KiB (docs/hw/ixgbe.md §3.2 step 8).
    set(rxpbsize(0), 512 << 10);
    set(txpbsize(0), 160 << 10);
    set(MAXFRS, 1518 << 16);
    set(VLNCTRL, 0x8100);
    set(DMATXCTL, 0x8100 << 16);
    set(EEC, EEC_PRES | nvm::EEC_SIZE << EEC_SIZE_SHIFT);
    // The MAC appends the CRC, strips it on receive and pads short frames out of reset (docs/hw/ixgbe.md §4
    // "HLREG0"): Linux's ixgbe relies on it and never sets these bits.
    set(HLREG0, HLREG0_TXCRCEN | HLREG0_RXCRCSTRP | HLREG0_TXPADEN);
    // Firmware valid, no error indication (docs/hw/ixgbe.md §17.1).
    set(FWSM, FWSM_FW_VAL);
    for q in 0..NUM_QUEUES {
        set(srrctl(q), 2 | (4 << 8));
        set(dca_rxctrl(q), 1 << 12);
    }
    if config.chip == Chip::X82599 {
        x82599::default_registers(config, &mut r);
    }
    r
}

impl Core {
    fn new(config: &X540Config) -> Self {
        let defaults = Arc::new(default_registers(config));
        let now = Instant::now();
        let phy = Phy::new(config.lan_id, config.phy_powered_down);
        let (speed, ready_at) = match config.chip {
            Chip::X540 => {
                let speed = phy.resolve(config.partner_speed);
                (speed, (phy.powered() && speed.is_some()).then(|| now + config.link_up_delay))
            }
            Chip::X82599 => x82599::power_up_link(config, &defaults, now),
        };
        Core {
            regs: (*defaults).clone(),
            defaults,
            ctr: vec![0; REG_SPACE / 4],
            reset_until: now,
            rxq: vec![RxQ::default(); NUM_QUEUES],
            txq: vec![TxQ::default(); NUM_QUEUES],
            phy,
            link: Link { cable: true, ready_at, speed, down_until: None, last_up: false },
            rx_blocked: None,
            active_tx: Vec::new(),
            hang_all: false,
            reset_delay: config.reset_delay,
            secrx_dis_at: None,
            reset_bits: 0,
            watch: shutdown::Watch::default(),
            fw_hold_until: (!config.fw_phy_semaphore_hold.is_zero())
                .then(|| now.checked_add(config.fw_phy_semaphore_hold).unwrap_or(now + Duration::from_secs(1 << 30))),
            intr: intr::Intr::default(),
            nvm: nvm::image(config),
            i2c: sfp::I2cBus::new(),
            sfp_eeprom: (config.chip == Chip::X82599 && config.sfp_module)
                .then(|| Box::new(sfp::passive_da_cable_eeprom())),
            ee_spi: eespi::SpiEeprom::default(),
        }
    }

    fn reg(&self, offset: usize) -> u32 {
        self.regs[offset / 4]
    }

    fn set_reg(&mut self, offset: usize, value: u32) {
        self.regs[offset / 4] = value;
    }

    fn in_reset(&self, now: Instant) -> bool {
        now < self.reset_until
    }

    fn count(&mut self, offset: usize, by: u64) {
        self.ctr[offset / 4] = self.ctr[offset / 4].wrapping_add(by);
    }

    fn link_up(&self, shared: &X540State, now: Instant) -> bool {
        let own = self.link.cable
            && self.tx_active(shared)
            && self.link.ready_at.is_some_and(|t| now >= t)
            && self.link.down_until.is_none_or(|t| now >= t);
        own && shared.peer().is_none_or(|p| p.phy_active.load(Ordering::Relaxed))
    }

    /// Time-driven state: link changes raise EICR.LSC.
    fn update_time(&mut self, shared: &X540State) {
        let now = Instant::now();
        // What the partner sees of us: cable and PHY power (a flap is applied to both ends by `link_flap`).
        let active = self.link.cable && self.tx_active(shared);
        shared.phy_active.store(active, Ordering::Relaxed);
        let up = self.link_up(shared, now);
        if up != self.link.last_up {
            self.link.last_up = up;
            let eicr = self.reg(EICR);
            self.set_reg(EICR, eicr | EICR_LSC);
        }
    }

    /// Whether this end transmits (what the partner needs to see for a link): the X540's PHY is powered; the
    /// 82599's laser is on and AUTOC2 does not disable the link.
    fn tx_active(&self, shared: &X540State) -> bool {
        match shared.config.chip {
            Chip::X540 => self.phy.powered(),
            Chip::X82599 => self.laser_and_link_enabled(),
        }
    }

    fn renegotiate(&mut self, config: &X540Config) {
        if config.chip == Chip::X82599 {
            return self.restart_an_82599(config);
        }
        self.link.speed = self.phy.resolve(config.partner_speed);
        self.link.ready_at =
            (self.phy.powered() && self.link.speed.is_some()).then(|| Instant::now() + config.link_up_delay);
    }

    /// A test's slow-reset fault: every later reset, and the one in progress, lasts `delay` from its start.
    fn set_reset_delay(&mut self, delay: Duration) {
        if self.in_reset(Instant::now()) {
            if let Some(began) = self.reset_until.checked_sub(self.reset_delay) {
                self.reset_until = began + delay;
            }
        }
        self.reset_delay = delay;
    }

    fn reset(&mut self, shared: &X540State) {
        let now = Instant::now();
        self.regs.copy_from_slice(&self.defaults);
        self.ctr.iter_mut().for_each(|c| *c = 0);
        self.rxq.iter_mut().for_each(|q| *q = RxQ::default());
        self.txq.iter_mut().for_each(|q| *q = TxQ::default());
        self.active_tx.clear();
        self.hang_all = false;
        self.rx_blocked = None;
        self.secrx_dis_at = None;
        self.ee_spi = eespi::SpiEeprom::default();
        self.intr.reset();
        self.reset_until = now + self.reset_delay;
        shared.rdt.iter().chain(shared.tdt.iter()).for_each(|t| t.store(0, Ordering::Relaxed));
        shared.pb_capacity.store(self.reg(rxpbsize(0)) as usize, Ordering::Relaxed);
        shared.missed_at_arrival.store(0, Ordering::Relaxed);
        let mut inbound = shared.inbound.lock().unwrap_or_else(|e| e.into_inner());
        let lost = inbound.frames.len();
        *inbound = Inbound::default();
        drop(inbound);
        shared.counters().rx_disabled += lost as u64;
        // The PHY keeps its negotiated state across CTRL.RST (docs/hw/ixgbe.md §5.2); LSC starts from the current state.
        self.link.last_up = self.link_up(shared, now);
    }

    fn read(&mut self, shared: &X540State, offset: usize) -> u32 {
        let now = Instant::now();
        let offset = canonical(offset);
        if let Some(kind) = stat_kind(offset) {
            // Frames dropped at arrival for a full packet buffer: MPC, and GPRC too (the X540/82599 erratum
            // DPDK works around, docs/hw/ixgbe.md §13). Taken in at any counter read so both see them together.
            let extra = shared.missed_at_arrival.swap(0, Ordering::Relaxed);
            if extra > 0 {
                self.count(mpc(0), extra);
                self.count(GPRC, extra);
            }
            let slot = offset / 4;
            return match kind {
                StatKind::Single => std::mem::take(&mut self.ctr[slot]) as u32,
                StatKind::Low => {
                    let v = std::mem::take(&mut self.ctr[slot]);
                    self.ctr[slot + 1] = v >> 32;
                    v as u32
                }
                StatKind::High => std::mem::take(&mut self.ctr[slot]) as u32,
            };
        }
        let resetting = self.in_reset(now);
        let done = self.reset_until;
        if shared.config.chip == Chip::X82599 {
            if let Some(v) = self.read_82599(shared, offset, now) {
                return v;
            }
        }
        match offset {
            CTRL => self.reg(CTRL) | if resetting { CTRL_RST } else { 0 },
            STATUS => (u32::from(shared.config.lan_id & 3) << STATUS_LAN_ID_SHIFT) | self.status_gio(shared),
            shutdown::MMNGC => {
                if shared.config.mng_veto {
                    shutdown::MMNGC_MNG_VETO
                } else {
                    0
                }
            }
            EEC => {
                let ard = !resetting && now >= done + shared.config.eeprom_delay;
                let pins = if shared.config.chip == Chip::X82599 { self.ee_spi.lines(self.reg(EEC)) } else { 0 };
                self.reg(EEC) | EEC_PRES | pins | if ard { EEC_ARD } else { 0 }
            }
            RDRXCTL => {
                let dmai = !resetting && now >= done + shared.config.dma_init_delay;
                self.reg(RDRXCTL) | if dmai { RDRXCTL_DMAIDONE } else { 0 }
            }
            LINKS => {
                self.update_time(shared);
                if self.link_up(shared, now) {
                    let speed = self.link.speed.map_or(0, |s| s.links_bits());
                    LINKS_UP | (speed << LINKS_SPEED_SHIFT)
                } else {
                    0
                }
            }
            EICR => {
                self.update_time(shared);
                self.read_eicr(shared)
            }
            // Reading EICS returns the causes without clearing them (docs/hw/ixgbe.md §12.1).
            EICS => {
                self.update_time(shared);
                self.eicr_value()
            }
            EIMS => self.eims_value(),
            EIMC => 0,
            SWSM => {
                let v = self.reg(SWSM);
                self.set_reg(SWSM, v | SWSM_SMBI);
                v
            }
            SW_FW_SYNC => self.read_sw_fw_sync(shared, now),
            _ => {
                if let Some((rx, q)) = queue_reg(offset) {
                    return self.read_queue(rx, q, offset, now);
                }
                if let Some(v) = self.read_intr_ex(offset) {
                    return v;
                }
                self.reg(offset)
            }
        }
    }

    fn write(&mut self, shared: &X540State, offset: usize, value: u32) {
        let now = Instant::now();
        let offset = canonical(offset);
        if self.in_reset(now) {
            return; // the device ignores writes while it resets
        }
        if stat_kind(offset).is_some() {
            return; // read-only counters
        }
        if shared.config.chip == Chip::X82599 && self.write_82599(shared, offset, value, now) {
            return;
        }
        match offset {
            CTRL => {
                if value & (CTRL_RST | CTRL_LNK_RST) != 0 {
                    self.record_reset(shared);
                    self.reset(shared);
                    self.set_reg(CTRL, value & !(CTRL_RST | CTRL_LNK_RST) & !CTRL_GIO_DIS);
                } else {
                    self.saw_ctrl(value, now);
                    self.set_reg(CTRL, value);
                }
            }
            SW_FW_SYNC => self.write_sw_fw_sync(shared, value, now),
            shutdown::GCR_EXT => self.saw_gcr_ext(value),
            shutdown::MMNGC => {}
            STATUS | LINKS => {}
            EEC => self.set_reg(EEC, value & !EEC_ARD),
            RDRXCTL => self.set_reg(RDRXCTL, value & !RDRXCTL_DMAIDONE),
            EERD => self.write_eerd(value),
            _ if self.write_intr(shared, offset, value) => {}
            MSCA => {
                if value & MSCA_MDI_COMMAND != 0 {
                    let status = (self.link_up(shared, now), self.link.speed);
                    let (data, event) = self.phy.command(phy::Msca(value), self.reg(MSRWD) as u16, status);
                    if let Some(d) = data {
                        let w = (self.reg(MSRWD) & 0xFFFF) | u32::from(d) << 16;
                        self.set_reg(MSRWD, w);
                    }
                    match event {
                        PhyEvent::None => {}
                        PhyEvent::Renegotiate => self.renegotiate(&shared.config),
                        PhyEvent::PowerDown => self.link.ready_at = None,
                    }
                    self.update_time(shared);
                }
                self.set_reg(MSCA, value & !MSCA_MDI_COMMAND);
            }
            RXCTRL => {
                if value & RXCTRL_RXEN != 0 && self.reg(RXCTRL) & RXCTRL_RXEN == 0 {
                    let hl = self.reg(HLREG0) & HLREG0_RXCRCSTRP != 0;
                    let rd = self.reg(RDRXCTL) & RDRXCTL_CRCSTRIP != 0;
                    if hl != rd {
                        shared.io.faults.record(Fault::Protocol {
                            what: format!(
                                "RXCTRL.RXEN set with HLREG0.RXCRCSTRP={} but RDRXCTL.CRCSTRIP={} (both must agree, docs/hw/ixgbe.md §3.5 step 21)",
                                hl as u8, rd as u8
                            ),
                        });
                    }
                }
                self.set_reg(RXCTRL, value);
            }
            _ if offset == rxpbsize(0) => {
                shared.pb_capacity.store(value as usize, Ordering::Relaxed);
                self.set_reg(offset, value);
            }
            _ => {
                if let Some((rx, q)) = queue_reg(offset) {
                    self.write_queue(shared, rx, q, offset, value, now);
                } else {
                    self.set_reg(offset, value);
                }
            }
        }
    }
}

impl std::fmt::Debug for X540State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("X540State").field("lan_id", &self.config.lan_id).finish()
    }
}
