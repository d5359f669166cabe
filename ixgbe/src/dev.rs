//! The X540/82599 control plane: bring-up in the order of docs/hw/ixgbe.md §3, link, filters, MTU, RSS,
//! statistics, and the [`EthDev`] implementation that hands out the [`crate::rxtx`] rings as owned queues.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use drvkit::bar::RegisterSpace;
use drvkit::dma::DmaMapper;
use hugepage::Allocator;
use mempool::Mempool;
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
            hw: Mutex::new(HwStats { values: vec![0; STATS.len()], sets: QueueSets::default() }),
            xbase: vec![0; STATS.len()],
            sets_base: QueueSets::default(),
            qsmr: [[0; QSMR_REGS]; 2],
            phy_addr: None,
            phy_note: None,
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

    /// Typed RX queue `queue` (static dispatch; once per start).
    pub fn rx_queue_typed(&mut self, queue: u16) -> Result<IxgbeRxQueue<R>> {
        self.state.claim_rx(queue, |_| self.rx.get_mut(queue as usize)?.take())
    }

    /// Typed TX queue `queue` (static dispatch; once per start).
    pub fn tx_queue_typed(&mut self, queue: u16) -> Result<IxgbeTxQueue<R>> {
        self.state.claim_tx(queue, |_| self.tx.get_mut(queue as usize)?.take())
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

    // ---- 3.1-3.4 bring-up ----

    fn mask_interrupts(&self) {
        self.regs.write(EIMC, EIMC_ALL);
        self.regs.write(eimc_ex(0), EIMC_ALL);
        self.regs.write(eimc_ex(1), EIMC_ALL);
        let _ = self.regs.read(EICR);
    }

    /// Step 3: turns PCIe mastering off and waits for outstanding requests to end. False if they did not within
    /// `budget` (the reset must then be done twice).
    fn disable_pcie_master(&self, budget: Duration) -> bool {
        self.regs.write(CTRL, ctrl::GIO_DIS);
        // The bit must read back set before STATUS.GIO means anything.
        let _ = self.regs.poll(CTRL, ctrl::GIO_DIS, ctrl::GIO_DIS, budget);
        self.regs.poll(STATUS, status::GIO, 0, budget).is_ok()
    }

    /// Step 3a, before a double reset: with MAC loopback on (so nothing reaches the wire if the link comes up), give
    /// the last completions time, then have the PCIe transaction layer drop what it still holds (GCR_EXT
    /// BUFFERS_CLEAR), and put both registers back. The reference also polls the PCIe device status word for its
    /// transaction-pending bit; that is in config space, which this driver does not keep mapped, so it waits
    /// instead.
    fn clear_tx_pending(&self) {
        let hl = self.regs.read(HLREG0);
        self.regs.write(HLREG0, hl | hlreg0::LPBK);
        let _ = self.regs.read(STATUS);
        std::thread::sleep(TX_PENDING_WAIT);
        let gcr = self.regs.read(GCR_EXT);
        self.regs.write(GCR_EXT, gcr | gcr_ext::BUFFERS_CLEAR);
        let _ = self.regs.read(STATUS);
        std::thread::sleep(Duration::from_micros(20));
        self.regs.write(GCR_EXT, gcr);
        self.regs.write(HLREG0, hl);
    }

    /// Reset and initialisation up to (not including) the start of traffic.
    fn reset_and_init(&mut self) -> Result<()> {
        let t = self.options.timing.clone();
        // Counters clear on reset: keep what they hold.
        self.accumulate();

        // 3.1 quiesce (docs/hw/ixgbe.md §3.1).
        self.mask_interrupts();
        self.regs.clear_bits(RXCTRL, rxctrl::RXEN);
        // Every TX queue the hardware has, not only the ones this driver hands out.
        for q in 0..HW_TX_QUEUES {
            self.regs.write(txdctl(q), txdctl::SWFLSH);
        }
        for q in 0..MAX_RX_QUEUES {
            let v = self.regs.read(rxdctl(q));
            if v & rxdctl::ENABLE != 0 {
                self.regs.write(rxdctl(q), (v & !rxdctl::ENABLE) | rxdctl::SWFLSH);
            }
        }
        // Step 2: let the flushes finish before PCIe mastering is turned off.
        let _ = self.regs.read(STATUS);
        std::thread::sleep(QUEUE_FLUSH_WAIT);
        let double_reset = !self.disable_pcie_master(t.gio_disable);
        if double_reset {
            self.clear_tx_pending();
        }

        // 3.2 global reset (twice if PCIe mastering did not stop).
        for _ in 0..(1 + double_reset as usize) {
            match self.options.mac_type {
                MacType::X540 => {
                    let sem = self.phy_semaphore();
                    let held = self.swfw_acquire(sem);
                    self.regs.set_bits(CTRL, ctrl::RST);
                    let _ = self.regs.read(STATUS); // flush
                    if held {
                        self.swfw_release(sem);
                    }
                }
                MacType::X82599 => {
                    // Step 4: LNK_RST while the link is down, RST while it is up (a link reset with the link up
                    // may disturb manageability).
                    let bit = if self.read_link().up { ctrl::RST } else { ctrl::LNK_RST };
                    self.regs.set_bits(CTRL, bit);
                    let _ = self.regs.read(STATUS); // flush
                }
            }
            self.regs
                .poll(CTRL, ctrl::RST_MASK, 0, t.reset_done)
                .map_err(|e| self.timeout("device reset (CTRL.RST/LNK_RST)", "CTRL", e, t.reset_done))?;
            std::thread::sleep(t.reset_settle);
        }
        self.mask_interrupts();
        if self.options.mac_type == MacType::X540 {
            self.regs.write(rxpbsize(0), X540_RXPBSIZE_384K);
        }

        // 3.3 settle.
        self.regs
            .poll(EEC, eec::ARD, eec::ARD, t.eeprom)
            .map_err(|e| self.timeout("EEPROM auto-read (EEC.ARD)", "EEC", e, t.eeprom))?;
        self.regs
            .poll(RDRXCTL, rdrxctl::DMAIDONE, rdrxctl::DMAIDONE, t.dma_init)
            .map_err(|e| self.timeout("DMA initialisation (RDRXCTL.DMAIDONE)", "RDRXCTL", e, t.dma_init))?;

        // 3.4 identity and bookkeeping.
        let ral0 = self.regs.read(ral(0));
        let rah0 = self.regs.read(rah(0));
        let lo = ral0.to_le_bytes();
        let hi = (rah::ADDR_HI.get(rah0) as u16).to_le_bytes();
        let mac = MacAddr([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]]);
        if rah0 & rah::AV == 0 || mac == MacAddr::ZERO || mac.is_multicast() {
            return Err(DevError::NoPermanentMac { ral: ral0, rah: rah0 }.at(&self.options.name));
        }
        self.perm_mac = mac;
        for i in 1..RAR_ENTRIES {
            self.regs.write(ral(i), 0);
            self.regs.write(rah(i), 0);
        }
        self.regs.write(mpsar_lo(0), 0);
        self.regs.write(mpsar_hi(0), 0);
        self.regs.write(MCSTCTRL, 0);
        for i in 0..MTA_WORDS {
            self.regs.write(mta(i), 0);
        }
        for i in 0..VFTA_WORDS {
            self.regs.write(vfta(i), 0);
        }
        // Step 13: read-clear the counters (the reset zeroed them; anything counted since is kept).
        self.accumulate();
        self.regs.set_bits(CTRL_EXT, ctrl_ext::NS_DIS | ctrl_ext::DRV_LOAD | ctrl_ext::PFRSTD);
        // Step 17: no flow control.
        self.regs.clear_bits(MFLCN, mflcn::RFCE | mflcn::RPFCE);
        self.regs.clear_bits(FCCFG, fccfg::TFCE_802_3X | fccfg::TFCE_PRIORITY);

        // 3.8 link: X540 powers its PHY up and restarts auto-negotiation; the 82599 sets up its MAC link.
        match self.options.mac_type {
            MacType::X540 => self.phy_note = self.setup_phy(true).err(),
            MacType::X82599 => self.setup_link_82599(true),
        }
        self.fresh = true;
        Ok(())
    }

    // ---- 5.4, 5.5: semaphores and MDIO ----

    fn phy_semaphore(&self) -> u32 {
        if status::LAN_ID.get(self.regs.read(STATUS)) == 0 {
            sw_fw_sync::PHY0
        } else {
            sw_fw_sync::PHY1
        }
    }

    /// Takes SW/FW resource `mask` (docs/hw/ixgbe.md §5.5): up to 200 tries 5 ms apart, as the reference. Firmware
    /// that still holds it after that is taken to be hung and the resource is taken anyway (the reference does the
    /// same); another software owner is not overridden. False if it could not be had.
    fn swfw_acquire(&self, mask: u32) -> bool {
        let fw = mask << sw_fw_sync::FW_SHIFT;
        for _ in 0..SWFW_TRIES {
            let Some(v) = self.swfw_helpers() else { return false };
            let free = v & (mask | fw) == 0;
            if free {
                self.regs.write(SW_FW_SYNC, (v | mask) & !sw_fw_sync::REGSMP);
            } else {
                self.regs.clear_bits(SW_FW_SYNC, sw_fw_sync::REGSMP);
            }
            self.regs.clear_bits(SWSM, swsm::SMBI);
            if free {
                return true;
            }
            std::thread::sleep(SWFW_RETRY);
        }
        let Some(v) = self.swfw_helpers() else { return false };
        let forced = v & mask == 0 && v & fw != 0;
        if forced {
            self.regs.write(SW_FW_SYNC, (v | mask) & !sw_fw_sync::REGSMP);
        } else {
            self.regs.clear_bits(SW_FW_SYNC, sw_fw_sync::REGSMP);
        }
        self.regs.clear_bits(SWSM, swsm::SMBI);
        if forced {
            std::thread::sleep(SWFW_RETRY);
        }
        forced
    }

    /// Takes the two helper semaphores (SWSM.SMBI, then SW_FW_SYNC.REGSMP) and returns SW_FW_SYNC as it reads with
    /// them held; `None` (and nothing held) if either stays busy past the budget.
    fn swfw_helpers(&self) -> Option<u32> {
        let t = &self.options.timing;
        self.regs.poll(SWSM, swsm::SMBI, 0, t.semaphore).ok()?;
        if self.regs.poll(SW_FW_SYNC, sw_fw_sync::REGSMP, 0, t.semaphore).is_err() {
            self.regs.clear_bits(SWSM, swsm::SMBI);
            return None;
        }
        Some(self.regs.read(SW_FW_SYNC))
    }

    fn swfw_release(&self, mask: u32) {
        let t = &self.options.timing;
        let _ = self.regs.poll(SWSM, swsm::SMBI, 0, t.semaphore);
        let _ = self.regs.poll(SW_FW_SYNC, sw_fw_sync::REGSMP, 0, t.semaphore);
        self.regs.clear_bits(SW_FW_SYNC, mask | sw_fw_sync::REGSMP);
        self.regs.clear_bits(SWSM, swsm::SMBI);
    }

    fn mdio_cycle(&self, phy: u32, mmd: u32, reg: u32, op: u32) -> std::result::Result<(), PollTimeout> {
        let cmd = msca::NP_ADDR.val(reg)
            | msca::DEV_TYPE.val(mmd)
            | msca::PHY_ADDR.val(phy)
            | msca::OP_CODE.val(op)
            | msca::ST_CODE.val(0)
            | msca::MDI_COMMAND;
        self.regs.write(MSCA, cmd);
        self.regs.poll(MSCA, msca::MDI_COMMAND, 0, self.options.timing.mdio).map(|_| ())
    }

    fn phy_read(&self, phy: u32, mmd: u32, reg: u32) -> std::result::Result<u16, PollTimeout> {
        self.mdio_cycle(phy, mmd, reg, msca::OP_ADDR)?;
        self.mdio_cycle(phy, mmd, reg, msca::OP_READ)?;
        Ok(msrwd::READ_DATA.get(self.regs.read(MSRWD)) as u16)
    }

    fn phy_write(&self, phy: u32, mmd: u32, reg: u32, value: u16) -> std::result::Result<(), PollTimeout> {
        self.regs.write(MSRWD, msrwd::WRITE_DATA.val(value as u32));
        self.mdio_cycle(phy, mmd, reg, msca::OP_ADDR)?;
        self.mdio_cycle(phy, mmd, reg, msca::OP_WRITE)
    }

    fn phy_rmw(&self, phy: u32, mmd: u32, reg: u32, clear: u16, set: u16) -> std::result::Result<(), PollTimeout> {
        let v = self.phy_read(phy, mmd, reg)?;
        self.phy_write(phy, mmd, reg, (v & !clear) | set)
    }

    /// Powers the X540 PHY up (or down) and, when up, advertises 100M/1G/10G and restarts auto-negotiation
    /// (docs/hw/ixgbe.md §5.2, §5.3). Under the PHY semaphore.
    fn setup_phy(&mut self, up: bool) -> std::result::Result<(), String> {
        let sem = self.phy_semaphore();
        if !self.swfw_acquire(sem) {
            return Err("PHY semaphore busy (firmware holds it?)".into());
        }
        let r = self.setup_phy_locked(up);
        self.swfw_release(sem);
        r
    }

    fn setup_phy_locked(&mut self, up: bool) -> std::result::Result<(), String> {
        let mdio_err = |e: PollTimeout| format!("MDIO did not answer (MSCA={:#010x})", e.last);
        let phy = match self.phy_addr {
            Some(p) => p,
            None => {
                let mut found = None;
                for addr in 0..phy::MAX_PHY_ADDR {
                    let id = self.phy_read(addr, phy::MMD_PMA_PMD, phy::PHY_ID_HIGH).map_err(mdio_err)?;
                    if id != 0 && id != u16::MAX {
                        found = Some(addr);
                        break;
                    }
                }
                let p = found.ok_or("no PHY answered on MDIO addresses 0..31")?;
                self.phy_addr = Some(p);
                p
            }
        };
        let (lp_clear, lp_set) = if up { (phy::VEND1_LOW_POWER as u16, 0) } else { (0, phy::VEND1_LOW_POWER as u16) };
        self.phy_rmw(phy, phy::MMD_VEND1, phy::VEND1_CTRL, lp_clear, lp_set).map_err(mdio_err)?;
        if up {
            let adv = [
                (phy::AN_ADV_10G, phy::AN_ADV_10G_BIT),
                (phy::AN_VENDOR_PROV1, phy::AN_ADV_1G_FD),
                (phy::AN_ADV_100M, phy::AN_ADV_100M_FD),
            ];
            for (reg, b) in adv {
                self.phy_rmw(phy, phy::MMD_AN, reg, 0, b as u16).map_err(mdio_err)?;
            }
            self.phy_rmw(phy, phy::MMD_AN, phy::AN_CTRL, 0, phy::AN_RESTART as u16).map_err(mdio_err)?;
        }
        Ok(())
    }

    /// The 82599's MAC link (docs/hw/ixgbe.md §3.8 and §5.6). Up: an SFP+ port turns its TX laser on (ESDP.SDP3 clear) and
    /// waits, selects 10G serial (AUTOC.LMS) with the SFI PMA/PMD (AUTOC2); every port clears AUTOC2's link-disable
    /// bits and restarts auto-negotiation (AUTOC.AN_RESTART). Down: an SFP+ port turns its laser off, others set
    /// AUTOC2's link-disable bits.
    fn setup_link_82599(&self, up: bool) {
        let sfp = self.options.media == Media::Sfp;
        if !up {
            if sfp {
                // Management firmware sharing the port vetoes it: turning the laser off would cut its traffic
                // (docs/hw/ixgbe.md §5.6).
                if self.regs.read(MMNGC) & mmngc::MNG_VETO == 0 {
                    self.regs.set_bits(ESDP, esdp::SDP3);
                }
            } else {
                self.regs.set_bits(AUTOC2, autoc2::LINK_DISABLE_MASK);
            }
            let _ = self.regs.read(STATUS); // flush
            return;
        }
        if sfp && self.regs.read(ESDP) & esdp::SDP3 != 0 {
            self.regs.clear_bits(ESDP, esdp::SDP3);
            let _ = self.regs.read(STATUS); // flush
            std::thread::sleep(self.options.timing.laser_on);
        }
        let mut a2 = self.regs.read(AUTOC2) & !autoc2::LINK_DISABLE_MASK;
        let mut a = self.regs.read(AUTOC);
        if sfp {
            a2 = autoc2::PMA_PMD_10G_SERIAL.set(a2, autoc2::PMA_PMD_10G_SERIAL_SFI);
            a = autoc::LMS.set(a, autoc::LMS_10G_SERIAL);
        }
        self.regs.write(AUTOC2, a2);
        self.regs.write(AUTOC, a | autoc::AN_RESTART);
    }

    /// RXCTRL.RXEN (docs/hw/ixgbe.md §3.7 step 35). The 82599 needs its security block quiesced around it (errata): set
    /// SECRXCTRL.RX_DIS, poll SECRXSTAT.SECRX_RDY, set RXEN, clear RX_DIS. Like DPDK, a security block that never
    /// reports ready does not stop the start.
    fn enable_rx(&self) {
        if self.options.mac_type != MacType::X82599 {
            self.regs.set_bits(RXCTRL, rxctrl::RXEN);
            return;
        }
        self.regs.set_bits(SECRXCTRL, secrxctrl::RX_DIS);
        let budget = self.options.timing.security_block;
        let _ = self.regs.poll(SECRXSTAT, secrxstat::SECRX_RDY, secrxstat::SECRX_RDY, budget);
        self.regs.set_bits(RXCTRL, rxctrl::RXEN);
        self.regs.clear_bits(SECRXCTRL, secrxctrl::RX_DIS);
    }

    // ---- 3.5-3.7 start ----

    fn frame_size(&self) -> u32 {
        self.state.config.mtu as u32 + FRAME_OVERHEAD
    }

    fn apply_mtu(&self) {
        let frame = self.frame_size();
        self.regs.write_field(MAXFRS, maxfrs::MFS, frame);
        if self.state.config.mtu > STD_MTU {
            self.regs.set_bits(HLREG0, hlreg0::JUMBOEN);
        } else {
            self.regs.clear_bits(HLREG0, hlreg0::JUMBOEN);
        }
    }

    fn apply_mac(&self) {
        self.write_rar(0, self.state.mac);
        for (i, &m) in self.state.extra_macs.iter().enumerate() {
            self.write_rar(i + 1, m);
        }
    }

    /// Receive address slot `i` (docs/hw/ixgbe.md §10.1): `mac` valid for pool 0, or cleared for the zero address.
    fn write_rar(&self, i: usize, mac: MacAddr) {
        if mac == MacAddr::ZERO {
            self.regs.write(rah(i), 0);
            self.regs.write(ral(i), 0);
            self.regs.clear_bits(mpsar_lo(i), bit(0));
            return;
        }
        let m = mac.0;
        self.regs.write(ral(i), u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
        self.regs.write(rah(i), rah::ADDR_HI.val(u16::from_le_bytes([m[4], m[5]]) as u32) | rah::AV);
        self.regs.set_bits(mpsar_lo(i), bit(0));
    }

    /// Writes the VLAN filter table and VLNCTRL.VFE (docs/hw/ixgbe.md §10.3).
    fn apply_vlan_filter(&self) {
        for (i, w) in self.vfta.iter().enumerate() {
            self.regs.write(vfta(i), *w);
        }
        if self.state.vlan_filter {
            self.regs.set_bits(VLNCTRL, vlnctrl::VFE);
        } else {
            self.regs.clear_bits(VLNCTRL, vlnctrl::VFE);
        }
    }

    fn apply_filters(&self) {
        let mut set = fctrl::BAM | fctrl::DPF | fctrl::PMCF;
        let mut clear = fctrl::SBP;
        if self.state.promiscuous {
            set |= fctrl::UPE | fctrl::MPE;
        } else {
            clear |= fctrl::UPE;
            if self.state.allmulticast {
                set |= fctrl::MPE;
            } else {
                clear |= fctrl::MPE;
            }
        }
        let v = self.regs.read(FCTRL);
        self.regs.write(FCTRL, (v & !clear) | set);
    }

    fn mrqc_fields(functions: RssHashFunctions) -> u32 {
        let f = functions;
        let mut v = 0;
        if f.contains(RssHashFunctions::IPV4) {
            v |= mrqc::RSS_FIELD_IPV4;
        }
        if f.contains(RssHashFunctions::IPV4_TCP) {
            v |= mrqc::RSS_FIELD_IPV4_TCP;
        }
        if f.contains(RssHashFunctions::IPV4_UDP) {
            v |= mrqc::RSS_FIELD_IPV4_UDP;
        }
        if f.contains(RssHashFunctions::IPV6) {
            v |= mrqc::RSS_FIELD_IPV6 | mrqc::RSS_FIELD_IPV6_EX;
        }
        if f.contains(RssHashFunctions::IPV6_TCP) {
            v |= mrqc::RSS_FIELD_IPV6_TCP | mrqc::RSS_FIELD_IPV6_EX_TCP;
        }
        if f.contains(RssHashFunctions::IPV6_UDP) {
            v |= mrqc::RSS_FIELD_IPV6_UDP | mrqc::RSS_FIELD_IPV6_EX_UDP;
        }
        v
    }

    fn apply_rss(&self) {
        let Some(rss) = &self.state.config.rss else {
            self.regs.write(MRQC, 0);
            return;
        };
        for (i, w) in self.rss_key.chunks(4).enumerate() {
            self.regs.write(rssrk(i), u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
        self.apply_reta();
        self.regs.write(MRQC, mrqc::MRQE.val(mrqc::MRQE_RSS) | Self::mrqc_fields(rss.functions));
    }

    fn apply_reta(&self) {
        for (i, e) in self.reta.chunks(4).enumerate() {
            self.regs.write(reta(i), u32::from_le_bytes([e[0], e[1], e[2], e[3]]));
        }
    }

    fn ring_config(&self, size: u16) -> RingConfig {
        RingConfig { enable_timeout: self.options.timing.queue_enable, ..RingConfig::new(size) }
    }

    fn hw_start(&mut self, pool: &Mempool) -> Result<()> {
        let name = self.options.name.clone();
        // 3.5 RX global.
        self.regs.clear_bits(RXCTRL, rxctrl::RXEN);
        self.apply_mac();
        self.apply_qsmr();
        self.apply_filters();
        self.apply_vlan_filter();
        self.regs.set_bits(HLREG0, hlreg0::RXCRCSTRP | hlreg0::TXCRCEN | hlreg0::TXPADEN);
        self.regs.clear_bits(HLREG0, hlreg0::LPBK);
        let v = self.regs.read(RDRXCTL);
        self.regs.write(
            RDRXCTL,
            rdrxctl::RSCFRSTSIZE.set(v, 0) | rdrxctl::CRCSTRIP | rdrxctl::RSCACKC | rdrxctl::FCOE_WRFIX,
        );
        self.apply_mtu();
        self.regs.write(RXCSUM, rxcsum::PCSD | rxcsum::IPPCSE);
        self.apply_rss();

        let rx_cfg = self.ring_config(self.state.config.rx_desc);
        let tx_cfg = self.ring_config(self.state.config.tx_desc);
        self.rx.clear();
        self.tx.clear();
        for q in 0..self.state.config.rx_queues {
            let ring = RxRing::new(
                RxSetup {
                    regs: &self.regs,
                    allocator: &self.allocator,
                    mapper: &self.mapper,
                    pool,
                    queue: q,
                    port_id: self.state.port_id,
                    stats: self.state.rx_stats(q).expect("a configured queue").clone(),
                    port: &name,
                    // docs/hw/ixgbe.md §7.2, §15: the 82599 only.
                    udp_csum_zero_err: self.options.mac_type == MacType::X82599,
                },
                rx_cfg,
            )?;
            self.rx.push(Some(ring));
        }
        self.regs.set_bits(CTRL_EXT, ctrl_ext::NS_DIS);

        // 3.6 TX global.
        self.regs.write(DTXMXSZRQ, DTXMXSZRQ_MAX);
        self.regs.set_bits(RTTDCS, rttdcs::ARBDIS);
        self.regs.write(MTQC, 0);
        self.regs.clear_bits(RTTDCS, rttdcs::ARBDIS);
        for q in 0..self.state.config.tx_queues {
            let ring = TxRing::new(
                TxSetup {
                    regs: &self.regs,
                    allocator: &self.allocator,
                    mapper: &self.mapper,
                    pool,
                    queue: q,
                    stats: self.state.tx_stats(q).expect("a configured queue").clone(),
                    port: &name,
                },
                tx_cfg,
            )?;
            self.tx.push(Some(ring));
        }
        self.regs.set_bits(DMATXCTL, dmatxctl::TE);

        // 3.7 start queues, then RX.
        let budget = self.options.timing.queue_enable;
        for (q, ring) in self.tx.iter_mut().flatten().enumerate() {
            ring.enable()
                .map_err(|t| error::timeout(format!("TX queue {q} enable"), "TXDCTL", t.last, budget).at(&name))?;
        }
        for (q, ring) in self.rx.iter_mut().flatten().enumerate() {
            ring.enable()
                .map_err(|t| error::timeout(format!("RX queue {q} enable"), "RXDCTL", t.last, budget).at(&name))?;
        }
        self.enable_rx();
        Ok(())
    }

    // ---- statistics ----

    /// Reads every clear-on-read counter into the software totals.
    fn accumulate(&self) {
        let Ok(mut hw) = self.hw.lock() else { return };
        for (i, s) in STATS.iter().enumerate() {
            let v = if i == stat_idx::MPC {
                (0..MPC_COUNT).map(|p| self.regs.read(mpc(p)) as u64).sum()
            } else if i == stat_idx::QPRC {
                let mut sum = 0;
                for n in 0..QUEUE_STAT_SETS {
                    let p = self.regs.read(qprc(n)) as u64;
                    sum += p;
                    let sets = &mut hw.sets;
                    sets.rx_packets[n] += p;
                    sets.rx_bytes[n] += self.regs.read(qbrc_l(n)) as u64 | (self.regs.read(qbrc_h(n)) as u64) << 32;
                    sets.tx_packets[n] += self.regs.read(qptc(n)) as u64;
                    sets.tx_bytes[n] += self.regs.read(qbtc_l(n)) as u64 | (self.regs.read(qbtc_h(n)) as u64) << 32;
                }
                sum
            } else {
                let lo = self.regs.read(s.lo) as u64;
                match s.hi {
                    Some(hi) => lo | (self.regs.read(hi) as u64) << 32,
                    None => lo,
                }
            };
            hw.values[i] = hw.values[i].wrapping_add(v);
        }
    }

    /// The queue counter sets now.
    fn queue_sets(&self) -> QueueSets {
        self.accumulate();
        self.hw.lock().map(|h| h.sets).unwrap_or_default()
    }

    /// Writes RQSMR and TQSM (docs/hw/ixgbe.md §13): after every reset, they come back as all queues to set 0.
    fn apply_qsmr(&self) {
        for i in 0..QSMR_REGS {
            self.regs.write(rqsmr(i), self.qsmr[0][i]);
            self.regs.write(tqsm(i), self.qsmr[1][i]);
        }
    }

    fn hw_values(&self) -> Vec<u64> {
        self.accumulate();
        self.hw.lock().map(|h| h.values.clone()).unwrap_or_else(|_| vec![0; STATS.len()])
    }

    fn raw_stats(&self) -> PortStats {
        let hw = self.hw_values();
        let mut s = self.state.queue_counters();
        // Packets and bytes come from the queues (exact, what the application saw); errors and drops from the
        // MAC's counters, as DPDK reports them.
        s.imissed += hw[stat_idx::MPC];
        // ierrors is the MAC's count, summed as DPDK sums it (crate::stats); frames it passed with an error
        // write-back (RXE, e.g. with FCTRL.SBP) and the driver dropped are already in it, and also show as
        // rx_qN_errors.
        s.ierrors = crate::stats::ierrors(&hw, self.options.mac_type);
        s
    }

    /// The hardware counters as DPDK reports them (crate::stats), since `base`.
    fn dpdk_values(&self, base: &[u64]) -> Vec<u64> {
        // The driver always strips the CRC (hw_start sets HLREG0.RXCRCSTRP).
        let now = crate::stats::dpdk_view(&self.hw_values(), true);
        let then = if base.is_empty() { vec![0; now.len()] } else { crate::stats::dpdk_view(base, true) };
        now.iter().zip(then).map(|(n, t)| n.wrapping_sub(t)).collect()
    }
}

impl<R: RegisterSpace + 'static> EthDev for Ixgbe<R> {
    fn state(&self) -> &PortState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut PortState {
        &mut self.state
    }

    fn configure(&mut self, config: &PortConfig) -> Result<()> {
        // What the X540/82599 adds to the generic checks: its RSS table and key.
        let mut key = self.rss_key;
        if let Some(rss) = &config.rss {
            if config.rx_queues > RETA_MAX_QUEUES {
                return Err(self.invalid(format!(
                    "RSS over {} RX queues: the X540/82599 redirection table has 4-bit entries, so RSS spreads over \
                     at most {RETA_MAX_QUEUES} queues; configure at most {RETA_MAX_QUEUES} RX queues with RSS",
                    config.rx_queues
                )));
            }
            if let Some(k) = &rss.key {
                if k.len() != RSS_KEY_LEN {
                    return Err(self.invalid(format!("RSS key of {} bytes; the X540 takes {RSS_KEY_LEN}", k.len())));
                }
                key.copy_from_slice(k);
            }
        }
        self.state.configure(config)?;
        self.rss_key = key;
        for (e, slot) in self.reta.iter_mut().enumerate() {
            *slot = (e % config.rx_queues as usize) as u8;
        }
        self.state.reset_stats_to(self.raw_stats());
        self.xbase = self.hw_values();
        self.sets_base = self.queue_sets();
        Ok(())
    }

    fn start(&mut self, pool: &Mempool) -> Result<()> {
        if self.state.started {
            return Err(Error::Started { port: self.options.name.clone() });
        }
        if !self.fresh {
            self.reset_and_init()?;
        }
        self.fresh = false;
        match self.hw_start(pool) {
            Ok(()) => self.state.start(),
            Err(e) => {
                // Rings made so far disable themselves and give their buffers back as they drop.
                self.rx.clear();
                self.tx.clear();
                self.regs.clear_bits(RXCTRL, rxctrl::RXEN);
                Err(e)
            }
        }
    }

    fn stop(&mut self) -> Result<()> {
        if !self.state.started {
            return Ok(());
        }
        self.state.stop()?;
        self.regs.clear_bits(RXCTRL, rxctrl::RXEN);
        self.rx.clear();
        self.tx.clear();
        self.regs.clear_bits(DMATXCTL, dmatxctl::TE);
        Ok(())
    }

    fn rx_queue(&mut self, queue: u16) -> Result<Box<dyn RxQueue>> {
        Ok(Box::new(self.rx_queue_typed(queue)?))
    }

    fn tx_queue(&mut self, queue: u16) -> Result<Box<dyn TxQueue>> {
        Ok(Box::new(self.tx_queue_typed(queue)?))
    }

    fn burst_mode(&self) -> pktio::BurstMode {
        crate::rxtx::burst_mode()
    }

    fn link(&self) -> LinkStatus {
        self.read_link()
    }

    fn set_link_up(&mut self, up: bool) -> Result<()> {
        if self.options.mac_type == MacType::X82599 {
            self.setup_link_82599(up);
            return Ok(());
        }
        self.setup_phy(up).map_err(|e| {
            let reason = format!("cannot set the link {}: {e}", if up { "up" } else { "down" });
            DevError::Phy { reason }.at(&self.options.name)
        })
    }

    fn set_mac_addr(&mut self, mac: MacAddr) -> Result<()> {
        if mac == MacAddr::ZERO || mac.is_multicast() {
            return Err(self.invalid(format!("{mac} is not a unicast address")));
        }
        self.state.mac = mac;
        self.apply_mac();
        Ok(())
    }

    fn set_promiscuous(&mut self, on: bool) -> Result<()> {
        self.state.promiscuous = on;
        self.apply_filters();
        Ok(())
    }

    fn set_allmulticast(&mut self, on: bool) -> Result<()> {
        self.state.allmulticast = on;
        self.apply_filters();
        Ok(())
    }

    fn set_mtu(&mut self, mtu: u16) -> Result<()> {
        self.state.set_mtu(mtu)?;
        // Frames larger than one RX buffer arrive as chains, so the MTU can change while started.
        self.apply_mtu();
        Ok(())
    }

    fn stats(&self) -> PortStats {
        self.state.since_reset(self.raw_stats())
    }

    fn reset_stats(&mut self) {
        self.state.reset_stats_to(self.raw_stats());
        self.xbase = self.hw_values();
        self.sets_base = self.queue_sets();
    }

    fn xstats(&self) -> Vec<XStat> {
        let mut out = self.stats().generic_xstats();
        // As DPDK's ixgbe: rx_qN_* and tx_qN_* are counter set N (RQSMR/TQSM), not queue N.
        let (now, base) = (self.queue_sets(), self.sets_base);
        for x in &mut out {
            let Some((dir, rest)) = x.name.split_once("_q") else { continue };
            let Some((n, what)) = rest.split_once('_') else { continue };
            let Ok(n) = n.parse::<usize>() else { continue };
            if n >= QUEUE_STAT_SETS {
                continue;
            }
            let v = |a: &[u64; QUEUE_STAT_SETS], b: &[u64; QUEUE_STAT_SETS]| a[n].wrapping_sub(b[n]);
            x.value = match (dir, what) {
                ("rx", "packets") => v(&now.rx_packets, &base.rx_packets),
                ("rx", "bytes") => v(&now.rx_bytes, &base.rx_bytes),
                ("tx", "packets") => v(&now.tx_packets, &base.tx_packets),
                ("tx", "bytes") => v(&now.tx_bytes, &base.tx_bytes),
                _ => x.value,
            };
        }
        let hw = self.dpdk_values(&self.xbase);
        for (s, v) in STATS.iter().zip(hw) {
            out.push(XStat::new(s.name, v));
        }
        out
    }

    fn rss_hash_update(&mut self, rss: &RssConfig) -> Result<()> {
        let Some(cur) = &mut self.state.config.rss else {
            // Intel datasheet 7.1.2.8 via DPDK, docs/hw/ixgbe.md §9: RSS is only turned on or off as part of a reset.
            return Err(self.state.invalid(
                "RSS was not enabled at configure time; it can only be turned on by configuring the port with RSS \
                 (and restarting it)",
            ));
        };
        if let Some(k) = &rss.key {
            if k.len() != RSS_KEY_LEN {
                return Err(self.invalid(format!("RSS key of {} bytes; the X540 takes {RSS_KEY_LEN}", k.len())));
            }
            self.rss_key.copy_from_slice(k);
        }
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
        if table.is_empty() || !RETA_ENTRIES.is_multiple_of(table.len()) {
            return Err(self.invalid(format!(
                "redirection table of {} entries; give {RETA_ENTRIES} (or a divisor of it, repeated)",
                table.len()
            )));
        }
        let limit = self.state.config.rx_queues.min(RETA_MAX_QUEUES);
        if let Some(bad) = table.iter().find(|&&q| q >= limit) {
            return Err(self.invalid(format!(
                "redirection table entry {bad}: must name one of the first {limit} RX queues (4-bit entries)"
            )));
        }
        for (e, slot) in self.reta.iter_mut().enumerate() {
            *slot = table[e % table.len()] as u8;
        }
        if self.state.started {
            self.apply_reta();
        }
        Ok(())
    }

    fn vlan_filter(&mut self, vlan_id: u16, on: bool) -> Result<()> {
        if vlan_id > MAX_VLAN_ID {
            return Err(self.invalid(format!("VLAN ID {vlan_id}: must be 0..={MAX_VLAN_ID}")));
        }
        let (word, b) = vfta_slot(vlan_id);
        if on {
            self.vfta[word] |= b;
        } else {
            self.vfta[word] &= !b;
        }
        // As DPDK with its VLAN-filter offload on: once filtering, removing the last ID leaves it on, so tagged
        // frames then all drop (untagged ones never meet the VFTA).
        self.state.vlan_filter = true;
        self.regs.write(vfta(word), self.vfta[word]);
        self.regs.set_bits(VLNCTRL, vlnctrl::VFE);
        Ok(())
    }

    fn set_vlan_filter_enabled(&mut self, on: bool) -> Result<()> {
        // VLNCTRL.VFE alone switches the table in or out; the VFTA keeps the IDs meanwhile.
        self.state.vlan_filter = on;
        self.apply_vlan_filter();
        Ok(())
    }

    fn queue_stats_mapping(&mut self, rx: bool, queue: u16, set: u8) -> Result<()> {
        let nq = if rx { self.state.config.rx_queues } else { self.state.config.tx_queues };
        if queue >= nq || set as usize >= QUEUE_STAT_SETS {
            return Err(self.invalid(format!(
                "queue {queue} to counter set {set}: queue must be < {nq}, set < {QUEUE_STAT_SETS}"
            )));
        }
        let (q, dir) = (queue as usize, usize::from(!rx));
        let shift = 8 * (q % 4);
        let word = &mut self.qsmr[dir][q / 4];
        *word = (*word & !(QSMR_MAP.mask() << shift)) | QSMR_MAP.val(set as u32) << shift;
        let reg = if rx { rqsmr(q / 4) } else { tqsm(q / 4) };
        self.regs.write(reg, *word);
        Ok(())
    }

    fn mac_addr_add(&mut self, mac: MacAddr, pool: u32) -> Result<()> {
        if let Some(slot) = self.state.add_mac(mac, pool)? {
            self.write_rar(slot, mac);
        }
        Ok(())
    }

    fn mac_addr_remove(&mut self, mac: MacAddr) -> Result<()> {
        if let Some(slot) = self.state.remove_mac(mac)? {
            self.write_rar(slot, MacAddr::ZERO);
        }
        Ok(())
    }
}

impl<R: RegisterSpace> Drop for Ixgbe<R> {
    fn drop(&mut self) {
        self.regs.clear_bits(RXCTRL, rxctrl::RXEN);
        self.rx.clear();
        self.tx.clear();
        self.regs.clear_bits(CTRL_EXT, ctrl_ext::DRV_LOAD);
    }
}

/// Opens the X540/82599 at `addr` through VFIO (IOMMU or no-IOMMU, as the container was set up): checks its ID,
/// enables bus mastering, maps BAR0 and brings the port up. Rings come from `allocator`; rings and mempools are
/// mapped in the device's container.
pub fn open_vfio(
    vfio: &drvkit::vfio::Vfio,
    addr: drvkit::pci::PciAddress,
    allocator: Allocator,
) -> Result<Ixgbe<drvkit::vfio::VfioBar>> {
    use drvkit::pci::ConfigSpace;
    let dev = vfio.open_device(addr)?;
    let cfg = |e: std::io::Error| Error::os(format!("{addr}: PCI config space"), e);
    let (vendor, device) = (dev.read16(0).map_err(cfg)?, dev.read16(2).map_err(cfg)?);
    let mac_type = mac_type_of(vendor, device).ok_or_else(|| {
        DevError::UnknownDevice { vendor, device, expected: "an X540/82599 this driver knows" }.at(&addr.to_string())
    })?;
    dev.set_bus_master(true).map_err(cfg)?;
    let bar = dev.map_bar(0)?;
    let mapper: Arc<dyn DmaMapper> = Arc::new(dev.container().clone());
    let options = Options { media: media_of(device), ..Options::new(addr.to_string(), mac_type) };
    let mut port = Ixgbe::new(Arc::new(bar), mapper, allocator, options)?;
    port.keep_alive(Box::new(dev));
    Ok(port)
}
