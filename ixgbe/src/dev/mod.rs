//! The X540/82599 control plane: bring-up in the order of docs/hw/ixgbe.md §3, link, filters, MTU, RSS,
//! statistics, and the [`EthDev`] implementation that hands out the [`crate::rxtx`] rings as owned queues.
//!
//! Files: this one (identity tables, options, [`Ixgbe`] and its construction, [`open_vfio`]), `bringup` (reset and
//! initialisation), `link` (semaphores, MDIO, PHY, the 82599's MAC link), `start` (filters, MTU, RSS, the rings),
//! `counters` (the clear-on-read counters and the queue counter sets), `ethdev` (the port API).

mod bringup;
mod counters;
mod ethdev;
mod intr;
mod link;
mod start;

use pktio::TypedQueues;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use drvkit::bar::RegisterSpace;
use drvkit::dma::DmaMapper;
use hugepage::Allocator;
use mempool::Mempool;
use pktio::driver::open_pci;
use pktio::{
    offload, DescLimits, DevInfo, Error, EthDev, LinkStatus, MacAddr, PortConfig, PortState, PortStats, Result,
    RssConfig, RssHashFunctions, RxQueue, TxQueue, XStat,
};

use crate::error::{self, Error as DevError};
use crate::regs::{self, *};
use crate::rxtx::{Family, RingConfig, RxRing, RxSetup, TxRing, TxSetup};

/// Which member of the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacType {
    /// X540 (integrated 10GBASE-T PHY).
    X540,
    /// 82599 / X520.
    X82599,
}

/// The port's media (docs/hw/ixgbe.md §1 and §15): decides how the 82599's MAC link is set up (§5.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Media {
    /// 10GBASE-T copper: the X540's internal PHY (or the 82599 T3 LOM's external PHY).
    Copper,
    /// SFP+ cage (82599ES / X520, QSFP): 10G serial (SFI), TX laser on ESDP.SDP3.
    Sfp,
    /// KX4 / KX / KR backplane.
    Backplane,
    /// CX4 or XAUI: the NVM's AUTOC link mode is kept.
    Other,
}

/// The media of an Intel device ID (the table of docs/hw/ixgbe.md §1).
pub fn media_of(device: u16) -> Media {
    match device {
        0x1528 | 0x1560 | 0x151C => Media::Copper,
        0x10FB | 0x1529 | 0x1507 | 0x154D | 0x154A | 0x1558 | 0x1557 => Media::Sfp,
        0x10F7 | 0x1514 | 0x1517 | 0x10F8 | 0x152A => Media::Backplane,
        _ => Media::Other,
    }
}

/// PCI IDs this driver takes (docs/hw/ixgbe.md §1), with their MAC type.
pub const PCI_IDS: &[(u16, u16, MacType)] = &[
    (0x8086, 0x1528, MacType::X540),
    (0x8086, 0x1560, MacType::X540),
    (0x8086, 0x10FB, MacType::X82599),
    (0x8086, 0x10F7, MacType::X82599),
    (0x8086, 0x1514, MacType::X82599),
    (0x8086, 0x1517, MacType::X82599),
    (0x8086, 0x10F8, MacType::X82599),
    (0x8086, 0x10F9, MacType::X82599),
    (0x8086, 0x10FC, MacType::X82599),
    (0x8086, 0x151C, MacType::X82599),
    (0x8086, 0x1529, MacType::X82599),
    (0x8086, 0x152A, MacType::X82599),
    (0x8086, 0x1507, MacType::X82599),
    (0x8086, 0x154D, MacType::X82599),
    (0x8086, 0x154A, MacType::X82599),
    (0x8086, 0x1558, MacType::X82599),
    (0x8086, 0x1557, MacType::X82599),
];

/// The MAC type of a PCI ID, if this driver takes it.
pub fn mac_type_of(vendor: u16, device: u16) -> Option<MacType> {
    PCI_IDS.iter().find(|(v, d, _)| *v == vendor && *d == device).map(|(_, _, t)| *t)
}

/// Waits and timeouts of the bring-up. The defaults are the hardware's (DPDK's or more generous); a behavioural
/// model may use shorter settle times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timing {
    /// CTRL.RST / LNK_RST must clear within this (docs/hw/ixgbe.md §3.2 step 5).
    pub reset_done: Duration,
    /// Wait after the reset bits clear (X540 100 ms, 82599 50 ms; step 6).
    pub reset_settle: Duration,
    /// PCIe master disable (STATUS.GIO) budget (800 x 100 us).
    pub gio_disable: Duration,
    /// EEC.ARD budget (step 9).
    pub eeprom: Duration,
    /// RDRXCTL.DMAIDONE budget (step 10).
    pub dma_init: Duration,
    /// RXDCTL/TXDCTL enable budget (10 x 1 ms).
    pub queue_enable: Duration,
    /// One MDIO cycle (100 x 10 us).
    pub mdio: Duration,
    /// SWSM.SMBI / SW_FW_SYNC.REGSMP budget.
    pub semaphore: Duration,
    /// 82599: SECRXSTAT.SECRX_RDY budget after SECRXCTRL.RX_DIS (4000 x 10 us, docs/hw/ixgbe.md §3.7 step 35).
    pub security_block: Duration,
    /// 82599 SFP+: wait after turning the TX laser on (100 ms, docs/hw/ixgbe.md §5.6).
    pub laser_on: Duration,
    /// A full TX ring with no completion for this long is a hung queue, restarted ([`ringkit::TxWatchdog`]).
    pub tx_hang: Duration,
}

impl Timing {
    /// The hardware's timing for `mac`.
    pub fn hardware(mac: MacType) -> Timing {
        Timing {
            reset_done: Duration::from_millis(100),
            reset_settle: match mac {
                MacType::X540 => Duration::from_millis(100),
                MacType::X82599 => Duration::from_millis(50),
            },
            gio_disable: Duration::from_millis(80),
            eeprom: Duration::from_secs(1),
            dma_init: Duration::from_secs(1),
            queue_enable: Duration::from_millis(10),
            mdio: Duration::from_millis(1),
            semaphore: Duration::from_millis(100),
            security_block: Duration::from_millis(40),
            laser_on: Duration::from_millis(100),
            tx_hang: ringkit::DEFAULT_TX_HANG_TIMEOUT,
        }
    }
}

/// How to open a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Device name (PCI address or vdev name).
    pub name: String,
    /// Which member of the family.
    pub mac_type: MacType,
    /// Waits and timeouts.
    pub timing: Timing,
    /// The port's media (the 82599's link set-up depends on it; see [`media_of`]).
    pub media: Media,
}

impl Options {
    /// Hardware defaults for a device called `name`; media: copper for the X540, SFP+ for the 82599 (the common
    /// X520; [`open_vfio`] takes it from the device ID).
    pub fn new(name: impl Into<String>, mac_type: MacType) -> Options {
        let media = match mac_type {
            MacType::X540 => Media::Copper,
            MacType::X82599 => Media::Sfp,
        };
        Options { name: name.into(), mac_type, timing: Timing::hardware(mac_type), media }
    }
}

/// The 82599/X540 queue register layout and descriptor bits, for the shared ring code.
#[derive(Debug)]
pub enum IxgbeFamily {}

impl Family for IxgbeFamily {
    const DRIVER: &'static str = "net_ixgbe";
    crate::family_queue_regs!(regs);
    fn srrctl_value(buf_kb: u32, drop_en: bool) -> u32 {
        let v = srrctl::DESCTYPE.val(srrctl::DESCTYPE_ADV_ONEBUF) | srrctl::BSIZEPACKET.val(buf_kb);
        if drop_en {
            v | srrctl::DROP_EN
        } else {
            v
        }
    }
    const QUEUE_ENABLE: u32 = rxdctl::ENABLE;
    const TXDCTL_INIT: u32 = txdctl::PTHRESH.val(txdctl::DEFAULT_PTHRESH);
    const TXDCTL_DISABLE: u32 = txdctl::SWFLSH;
    // docs/hw/ixgbe.md §7.2: RXE bit 29, TCPE/L4E bit 30, IPE bit 31.
    const RX_ERR_RXE: u32 = bit(29);
    const RX_ERR_L4E: u32 = bit(30);
    const RX_ERR_IPE: u32 = bit(31);
    const RX_CSUM_ERR_SHIFT: u32 = 30;
    fn rx_queue_extra<R: RegisterSpace>(regs: &Regs<R>, q: u16) {
        // docs/hw/ixgbe.md §3.5 step 26 / §4: no relaxed-ordering write-back, ixy's bit 12.
        regs.clear_bits(dca_rxctrl(q), dca_rxctrl::BIT12 | dca_rxctrl::DATA_WRO_EN | dca_rxctrl::HEAD_WRO_EN);
    }
    fn tx_queue_extra<R: RegisterSpace>(regs: &Regs<R>, q: u16) {
        // docs/hw/ixgbe.md §6.3 step 6: reordered DD write-backs would break RS-based cleanup.
        regs.clear_bits(dca_txctrl(q), dca_txctrl::DESC_WRO_EN);
        regs.write(tdwbal(q), 0);
        regs.write(tdwbah(q), 0);
    }
}

/// RX queue of an ixgbe port.
pub type IxgbeRxQueue<R> = RxRing<R, IxgbeFamily>;
/// TX queue of an ixgbe port.
pub type IxgbeTxQueue<R> = TxRing<R, IxgbeFamily>;

/// Most RX queues.
pub const MAX_RX_QUEUES: u16 = 128;
/// Most TX queues with MTQC = 0 (docs/hw/ixgbe.md §14).
pub const MAX_TX_QUEUES: u16 = 64;
/// TX queues the hardware has (all flushed before a reset, docs/hw/ixgbe.md §3.1 step 2).
pub const HW_TX_QUEUES: u16 = 128;
/// Wait after flushing the queues, before PCIe mastering is turned off (docs/hw/ixgbe.md §3.1 step 2).
const QUEUE_FLUSH_WAIT: Duration = Duration::from_millis(2);
/// Wait for the last PCIe completions before clearing pending TX (docs/hw/ixgbe.md §3.1 step 3a).
const TX_PENDING_WAIT: Duration = Duration::from_millis(3);
/// SW/FW semaphore: tries, and the sleep between two (docs/hw/ixgbe.md §5.5 step 5).
const SWFW_TRIES: u32 = 200;
const SWFW_RETRY: Duration = Duration::from_millis(5);
/// Ring size limits (docs/hw/ixgbe.md §14).
pub const DESC_LIMITS: DescLimits = DescLimits { min: 64, max: 8192, align: 8 };
/// Largest frame, CRC included (docs/hw/ixgbe.md §11).
pub const MAX_FRAME: u32 = 15872;
/// L2 header + CRC added to the MTU to get the frame size (DPDK).
pub const FRAME_OVERHEAD: u32 = 14 + 4;
/// Standard Ethernet MTU; above it JUMBOEN is set.
pub const STD_MTU: u16 = 1500;

/// Hardware counters accumulated in software (they clear on read).
#[derive(Debug, Clone, Default)]
struct HwStats {
    values: Vec<u64>,
    sets: QueueSets,
}

/// The 16 per-queue counter sets (QPRC, QBRC, QPTC, QBTC by set), accumulated: what DPDK reports as rx_qN_* and
/// tx_qN_*, set N counting the queues RQSMR/TQSM map to it (all of them to set 0 until `set stat_qmap`).
#[derive(Debug, Clone, Copy, Default)]
struct QueueSets {
    rx_packets: [u64; QUEUE_STAT_SETS],
    rx_bytes: [u64; QUEUE_STAT_SETS],
    tx_packets: [u64; QUEUE_STAT_SETS],
    tx_bytes: [u64; QUEUE_STAT_SETS],
}

/// An X540/82599 port.
pub struct Ixgbe<R: RegisterSpace> {
    regs: Regs<R>,
    mapper: Arc<dyn DmaMapper>,
    allocator: Allocator,
    options: Options,
    state: PortState,
    perm_mac: MacAddr,
    rss_key: [u8; RSS_KEY_LEN],
    reta: [u8; RETA_ENTRIES],
    /// The VLAN filter table as the application set it: a reset clears the VFTA, start writes it back.
    vfta: [u32; VFTA_WORDS],
    /// Reset and initialised, not started since: start need not reset again.
    fresh: bool,
    rx: Vec<Option<IxgbeRxQueue<R>>>,
    tx: Vec<Option<IxgbeTxQueue<R>>>,
    /// The burst TX queue 0 was set up with at the last start (what `burst_mode` reports while started).
    tx_path: Option<ringkit::TxPath>,
    /// What each TX queue's hang watchdog found since the port started.
    tx_hang: Vec<Arc<ringkit::TxHangState>>,
    /// The control plane's watchdog of each TX queue (over the same states), looked at from the stats, xstats,
    /// link and `check_tx_hangs` reads.
    tx_watch: Vec<ringkit::TxWatchdog>,
    hw: Mutex<HwStats>,
    xbase: Vec<u64>,
    /// The queue counter sets at the last reset (xstats count from there).
    sets_base: QueueSets,
    /// RQSMR and TQSM as the application mapped them (`queue_stats_mapping`): a reset clears them, start writes
    /// them back.
    qsmr: [[u32; QSMR_REGS]; 2],
    phy_addr: Option<u32>,
    /// Why the PHY could not be set up (the link may still come up: the PHY negotiates by default).
    phy_note: Option<String>,
    /// Where the interrupt vectors come from (none: the port is polled only).
    irqs: Option<Arc<dyn drvkit::irq::IrqSource>>,
    /// The vectors enabled while the port is started with interrupts.
    vectors: drvkit::irq::IrqVectors,
    /// Vector 0's eventfd, with `intr_conf.lsc`.
    lsc_fd: Option<Arc<drvkit::vfio::EventFd>>,
    /// What must outlive the register space (e.g. the VFIO device behind a mapped BAR).
    keep_alive: Vec<Box<dyn std::any::Any + Send>>,
}

impl<R: RegisterSpace> std::fmt::Debug for Ixgbe<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ixgbe")
            .field("name", &self.options.name)
            .field("mac_type", &self.options.mac_type)
            .field("started", &self.state.started)
            .finish()
    }
}

fn default_key() -> [u8; RSS_KEY_LEN] {
    let mut k = [0u8; RSS_KEY_LEN];
    for (i, w) in DEFAULT_RSS_KEY_WORDS.iter().enumerate() {
        k[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    k
}

impl<R: RegisterSpace> Ixgbe<R> {
    /// Opens the device behind `regs`: resets and initialises it (docs/hw/ixgbe.md §3.1-§3.4 and link), reads the
    /// permanent MAC. DMA memory for rings comes from `allocator` and is made reachable through `mapper`.
    pub fn new(regs: Arc<R>, mapper: Arc<dyn DmaMapper>, allocator: Allocator, options: Options) -> Result<Self> {
        let info = DevInfo {
            driver_name: "net_ixgbe",
            device_name: options.name.clone(),
            max_rx_queues: MAX_RX_QUEUES,
            max_tx_queues: MAX_TX_QUEUES,
            rx_desc_lim: DESC_LIMITS,
            tx_desc_lim: DESC_LIMITS,
            min_mtu: 68,
            max_mtu: (MAX_FRAME - FRAME_OVERHEAD) as u16,
            max_rx_pktlen: MAX_FRAME,
            rx_offload_capa: offload::RX_CKSUM | offload::RX_SCATTER | offload::RX_RSS_HASH,
            tx_offload_capa: offload::TX_CKSUM | offload::TX_MULTI_SEGS | offload::TX_MBUF_FAST_FREE,
            max_mac_addrs: RAR_ENTRIES as u32,
            flow_type_rss_offloads: RssHashFunctions::ALL,
            reta_size: RETA_ENTRIES as u16,
            hash_key_size: RSS_KEY_LEN as u8,
            // docs/hw/ixgbe.md §15: the 82599 links at 1G/10G (100M only on copper variants).
            speed_capa: match (options.mac_type, options.media) {
                (MacType::X82599, m) if m != Media::Copper => vec![1_000, 10_000],
                _ => vec![100, 1_000, 10_000],
            },
            numa_node: None,
        };
        let mut dev = Ixgbe {
            regs: Regs::new(regs),
            mapper,
            allocator,
            options,
            state: PortState::new(info, MacAddr::ZERO, PortConfig::default()),
            perm_mac: MacAddr::ZERO,
            rss_key: default_key(),
            reta: [0; RETA_ENTRIES],
            vfta: [0; VFTA_WORDS],
            fresh: false,
            rx: Vec::new(),
            tx: Vec::new(),
            tx_path: None,
            tx_hang: Vec::new(),
            tx_watch: Vec::new(),
            hw: Mutex::new(HwStats { values: vec![0; STATS.len()], sets: QueueSets::default() }),
            xbase: vec![0; STATS.len()],
            sets_base: QueueSets::default(),
            qsmr: [[0; QSMR_REGS]; 2],
            phy_addr: None,
            phy_note: None,
            irqs: None,
            vectors: Vec::new(),
            lsc_fd: None,
            keep_alive: Vec::new(),
        };
        dev.reset_and_init()?;
        dev.state.mac = dev.perm_mac;
        dev.state.reset_stats_to(dev.raw_stats());
        Ok(dev)
    }

    /// Keeps `value` alive as long as the port (dropped after the rings are quiesced).
    pub fn keep_alive(&mut self, value: Box<dyn std::any::Any + Send>) {
        self.keep_alive.push(value);
    }

    /// The register space.
    pub fn regs(&self) -> &Regs<R> {
        &self.regs
    }

    /// The permanent MAC address read from RAL/RAH(0) after reset.
    pub fn permanent_mac(&self) -> MacAddr {
        self.perm_mac
    }

    /// Why the PHY set-up was skipped, if it was (MDIO not answering, semaphore busy).
    pub fn phy_note(&self) -> Option<&str> {
        self.phy_note.as_deref()
    }

    fn invalid(&self, reason: impl Into<String>) -> Error {
        self.state.invalid(reason)
    }

    /// A poll of `register` that gave up: the device's fault, as this crate's [`DevError::Timeout`].
    fn timeout(&self, what: &str, register: &'static str, t: PollTimeout, budget: Duration) -> Error {
        error::timeout(what, register, t.last, budget).at(&self.options.name)
    }

    /// Link state from LINKS. DPDK reads LINKS twice and trusts the second value (docs/hw/ixgbe.md §5.1).
    fn read_link(&self) -> LinkStatus {
        let _ = self.regs.read(LINKS);
        let v = self.regs.read(LINKS);
        if v & links::LINK_UP == 0 {
            return LinkStatus::default();
        }
        let speed_mbps = match links::SPEED.get(v) {
            links::SPEED_100M => 100,
            links::SPEED_1G => 1_000,
            links::SPEED_10G => 10_000,
            _ => 0,
        };
        LinkStatus { up: true, speed_mbps, full_duplex: true, autoneg: true }
    }
}

/// Opens the X540/82599 at `addr` through VFIO ([`open_pci`]: its ID checked, bus mastering on; IOMMU or no-IOMMU, as
/// the container was set up), maps BAR0 and brings the port up. Rings come from `allocator`; rings and mempools are
/// mapped in the device's container.
pub fn open_vfio(
    vfio: &drvkit::vfio::Vfio,
    addr: drvkit::pci::PciAddress,
    allocator: Allocator,
) -> Result<Ixgbe<drvkit::vfio::VfioBar>> {
    let pci = open_pci(vfio, addr, &crate::IXGBE_DRIVER)?;
    let (vendor, device) = (pci.id.vendor, pci.id.device);
    let mac_type = mac_type_of(vendor, device).expect("an ID of the driver's table has a MAC type");
    let bar = pci.device.map_bar(0)?;
    let options = Options { media: media_of(device), ..Options::new(addr.to_string(), mac_type) };
    let mut port = Ixgbe::new(Arc::new(bar), pci.mapper, allocator, options)?;
    // MSI-X through VFIO (docs/hw/ixgbe.md §12): the device fd routes the vectors to eventfds.
    let device = Arc::new(pci.device);
    port.set_irq_source(device.clone());
    port.keep_alive(Box::new(device));
    Ok(port)
}

impl<R: RegisterSpace> Ixgbe<R> {
    /// The control plane's look for hung TX queues (as Linux's netdev watchdog timer), from the reads an
    /// application makes periodically: a queue whose head (TDH) stood still short of its tail (TDT) for the
    /// timeout is counted and logged, even if its ring never fills; the queue's owner restarts it on its next
    /// full-ring burst. Register reads only: the TX path is not involved.
    fn watch_tx_hangs(&self) {
        if !self.state.started {
            return;
        }
        let size = self.state.config.tx_desc as usize;
        for (q, w) in self.tx_watch.iter().enumerate() {
            let q = q as u16;
            let (head, tail) = (self.regs.read(regs::tdh(q)), self.regs.read(regs::tdt(q)));
            let _ = w.look(head as usize, tail as usize, size);
        }
    }

    /// The TX hang watchdog's verdict since the port started: `Err` ([`crate::Error::TxHang`]) once any queue was
    /// found hung (and restarted), naming the last hang.
    pub fn check_tx_hangs(&self) -> Result<()> {
        self.watch_tx_hangs();
        match ringkit::watchdog::worst(&self.tx_hang) {
            None => Ok(()),
            Some((hang, s)) => Err(crate::Error::TxHang { hang, restarts: s.restarts.get(), dropped: s.dropped.get() }
                .at(&self.options.name)),
        }
    }
}
