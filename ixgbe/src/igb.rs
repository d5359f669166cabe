//! 82576 (igb; QEMU's `-device igb`, 8086:10c9) on the same advanced-descriptor ring code as the X540.
//!
//! Register offsets are the 82576's (public e1000/igb register map: queues at 0xC000/0xE000 with a 0x40 stride,
//! RCTL/TCTL instead of RXCTRL/DMATXCTL, MDIC for the PHY); descriptor formats are shared, except the RX extended
//! error bits (TCPE 29, IPE 30, RXE 31). Facts from `docs/hw/vm-vfio.md` §5 and §9 item 3: QEMU's igb
//! only does advanced descriptors, and its link stays down after reset until the driver restarts PHY
//! auto-negotiation (MDIC write of PHY register 0 = 0x1340); RX is silently off while the link is down.
//!
//! Scope: one queue pair, no RSS, no offloads on TX beyond checksum context descriptors, statistics (GPRC, GPTC,
//! CRCERRS, RLEC, MPC...) accumulated from their clear-on-read registers.

use pktio::TypedQueues;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use drvkit::bar::RegisterSpace;
use drvkit::dma::DmaMapper;
use drvkit::pci::PciId;
use hugepage::Allocator;
use mempool::Mempool;
use pktio::{
    offload, DescLimits, DevInfo, EthDev, LinkStatus, MacAddr, PortConfig, PortState, PortStats, Result,
    RssHashFunctions, RxQueue, TxQueue, XStat,
};

use crate::error::{self, Error as DevError};
use pktio::driver::{open_pci, PciDriver, PciProbe};

use crate::regs::{bit, Field, Reg, Regs};
use crate::rxtx::{Family, RingConfig, RxRing, RxSetup, TxRing, TxSetup};

/// 82576 PCI ID (QEMU's igb).
pub const PCI_ID: (u16, u16) = (0x8086, 0x10c9);

/// The 82576 driver (`net_igb`). Device arguments: none (DPDK's igb keys tune SR-IOV, which this driver does not
/// have), so any key is refused before the device is touched.
pub const IGB_DRIVER: PciDriver =
    PciDriver { name: "net_igb", ids: &[PciId::new(PCI_ID.0, PCI_ID.1)], devargs: &[], probe: probe_igb };

/// 82576 (QEMU's igb) through VFIO, on the shared ring code.
fn probe_igb(ctx: &PciProbe<'_>) -> Result<Box<dyn EthDev>> {
    Ok(Box::new(open_vfio(ctx.vfio(), ctx.address(), ctx.allocator().clone())?))
}

/// 82576 registers.
pub mod regs {
    use super::{bit, Field, Reg};

    /// Device control.
    pub const CTRL: Reg = Reg(0x0000);
    /// CTRL: set link up.
    pub const CTRL_SLU: u32 = bit(6);
    /// CTRL: software reset.
    pub const CTRL_RST: u32 = bit(26);
    /// Device status.
    pub const STATUS: Reg = Reg(0x0008);
    /// STATUS: link up.
    pub const STATUS_LU: u32 = bit(1);
    /// STATUS: speed (00 10M, 01 100M, 1x 1G).
    pub const STATUS_SPEED: Field = Field::new(7, 6);
    /// EEPROM control.
    pub const EECD: Reg = Reg(0x0010);
    /// EECD: EEPROM present.
    pub const EECD_PRES: u32 = bit(8);
    /// EECD: auto-read done.
    pub const EECD_AUTO_RD: u32 = bit(9);
    /// Extended control.
    pub const CTRL_EXT: Reg = Reg(0x0018);
    /// CTRL_EXT: driver loaded.
    pub const CTRL_EXT_DRV_LOAD: u32 = bit(28);
    /// MDI control (PHY access).
    pub const MDIC: Reg = Reg(0x0020);
    /// MDIC fields.
    pub const MDIC_DATA: Field = Field::new(15, 0);
    /// PHY register.
    pub const MDIC_REGADD: Field = Field::new(20, 16);
    /// PHY address.
    pub const MDIC_PHYADD: Field = Field::new(25, 21);
    /// Operation (01 write, 10 read).
    pub const MDIC_OP: Field = Field::new(27, 26);
    /// MDIC_OP: write.
    pub const MDIC_OP_WRITE: u32 = 0b01;
    /// Ready.
    pub const MDIC_READY: u32 = bit(28);
    /// Error.
    pub const MDIC_ERROR: u32 = bit(30);
    /// Interrupt cause read.
    pub const ICR: Reg = Reg(0x00C0);
    /// Interrupt mask clear.
    pub const IMC: Reg = Reg(0x00D8);
    /// Extended interrupt mask clear.
    pub const EIMC: Reg = Reg(0x1528);
    /// Receive control.
    pub const RCTL: Reg = Reg(0x0100);
    /// RCTL: enable.
    pub const RCTL_EN: u32 = bit(1);
    /// RCTL: unicast promiscuous.
    pub const RCTL_UPE: u32 = bit(3);
    /// RCTL: multicast promiscuous.
    pub const RCTL_MPE: u32 = bit(4);
    /// RCTL: long packets (up to RLPML).
    pub const RCTL_LPE: u32 = bit(5);
    /// RCTL: broadcast accept.
    pub const RCTL_BAM: u32 = bit(15);
    /// RCTL: strip CRC.
    pub const RCTL_SECRC: u32 = bit(26);
    /// Transmit control.
    pub const TCTL: Reg = Reg(0x0400);
    /// TCTL: enable.
    pub const TCTL_EN: u32 = bit(1);
    /// TCTL: pad short packets.
    pub const TCTL_PSP: u32 = bit(3);
    /// RX checksum control.
    pub const RXCSUM: Reg = Reg(0x5000);
    /// RXCSUM: IP checksum offload.
    pub const RXCSUM_IPOFLD: u32 = bit(8);
    /// RXCSUM: TCP/UDP checksum offload.
    pub const RXCSUM_TUOFLD: u32 = bit(9);
    /// Long packet maximum length.
    pub const RLPML: Reg = Reg(0x5004);
    /// What RLPML allows beyond the MTU: Ethernet header (14), CRC (4) and one VLAN tag (4), as the reference igb
    /// driver sets it; without the tag's 4 bytes a tagged full-size frame would be dropped as too long.
    pub const RLPML_OVERHEAD: u32 = 14 + 4 + 4;
    /// Receive address low 0.
    pub const RAL0: Reg = Reg(0x5400);
    /// Receive address high 0.
    pub const RAH0: Reg = Reg(0x5404);
    /// RAH: address valid.
    pub const RAH_AV: u32 = bit(31);
    /// PHY control register (PHY address 1, register 0): auto-negotiation enable + restart, full duplex, 1000.
    pub const PHY_CTRL_AUTONEG_RESTART: u32 = 0x1340;
    /// The PHY's MDIO address.
    pub const PHY_ADDR: u32 = 1;
    /// PHY register 0 (control).
    pub const PHY_REG_CTRL: u32 = 0;

    /// Queue register `n` of the block at `base`. The 82576 answers for queues 0-3 at two addresses: the
    /// e1000-compatible ones (RX 0x2800, TX 0x3800, 0x100 apart), which the reference base code uses for n < 4, and
    /// the 0xC000/0xE000 block (0x40 apart) that holds all 16 queues. Using the block alone gives one formula for
    /// every queue, and it is the range QEMU's igb model decodes.
    const fn q(base: usize, n: u16) -> Reg {
        Reg(base + 0x40 * n as usize)
    }
    /// RX descriptor base low.
    pub const fn rdbal(n: u16) -> Reg {
        q(0xC000, n)
    }
    /// RX descriptor base high.
    pub const fn rdbah(n: u16) -> Reg {
        q(0xC004, n)
    }
    /// RX ring length.
    pub const fn rdlen(n: u16) -> Reg {
        q(0xC008, n)
    }
    /// Split receive control.
    pub const fn srrctl(n: u16) -> Reg {
        q(0xC00C, n)
    }
    /// RX head.
    pub const fn rdh(n: u16) -> Reg {
        q(0xC010, n)
    }
    /// RX tail.
    pub const fn rdt(n: u16) -> Reg {
        q(0xC018, n)
    }
    /// RX descriptor control.
    pub const fn rxdctl(n: u16) -> Reg {
        q(0xC028, n)
    }
    /// TX descriptor base low.
    pub const fn tdbal(n: u16) -> Reg {
        q(0xE000, n)
    }
    /// TX descriptor base high.
    pub const fn tdbah(n: u16) -> Reg {
        q(0xE004, n)
    }
    /// TX ring length.
    pub const fn tdlen(n: u16) -> Reg {
        q(0xE008, n)
    }
    /// TX head.
    pub const fn tdh(n: u16) -> Reg {
        q(0xE010, n)
    }
    /// TX tail.
    pub const fn tdt(n: u16) -> Reg {
        q(0xE018, n)
    }
    /// TX descriptor control.
    pub const fn txdctl(n: u16) -> Reg {
        q(0xE028, n)
    }
    /// SRRCTL: buffer size in KiB.
    pub const SRRCTL_BSIZEPACKET: Field = Field::new(6, 0);
    /// SRRCTL: descriptor type (001 advanced one buffer).
    pub const SRRCTL_DESCTYPE: Field = Field::new(27, 25);
    /// SRRCTL: drop when out of descriptors.
    pub const SRRCTL_DROP_EN: u32 = bit(31);
    /// RXDCTL/TXDCTL: queue enable.
    pub const QUEUE_ENABLE: u32 = bit(25);
    /// TXDCTL: prefetch threshold.
    pub const TXDCTL_PTHRESH: Field = Field::new(4, 0);
    /// TXDCTL: write-back threshold (0: write back on RS).
    pub const TXDCTL_WTHRESH: Field = Field::new(20, 16);

    /// Clear-on-read statistics: (xstats name, register).
    pub const STATS: &[(&str, Reg)] = &[
        ("rx_crc_errors", Reg(0x4000)),
        ("rx_missed_errors_hw", Reg(0x4010)),
        ("rx_length_errors", Reg(0x4040)),
        ("rx_good_packets_hw", Reg(0x4074)),
        ("tx_good_packets_hw", Reg(0x4080)),
        ("rx_undersize_errors", Reg(0x40A4)),
        ("rx_oversize_errors", Reg(0x40AC)),
        ("rx_total_packets", Reg(0x40D0)),
        ("tx_total_packets", Reg(0x40D4)),
    ];
    /// Index of CRCERRS in [`STATS`].
    pub const STAT_CRCERRS: usize = 0;
    /// Index of MPC in [`STATS`].
    pub const STAT_MPC: usize = 1;
    /// Index of RLEC in [`STATS`].
    pub const STAT_RLEC: usize = 2;
}

/// The 82576 queue register layout and RX error bits, for the shared ring code.
#[derive(Debug)]
pub enum IgbFamily {}

impl Family for IgbFamily {
    const DRIVER: &'static str = "net_igb";
    crate::family_queue_regs!(regs);
    fn srrctl_value(buf_kb: u32, drop_en: bool) -> u32 {
        let v = regs::SRRCTL_DESCTYPE.val(0b001) | regs::SRRCTL_BSIZEPACKET.val(buf_kb);
        if drop_en {
            v | regs::SRRCTL_DROP_EN
        } else {
            v
        }
    }
    const QUEUE_ENABLE: u32 = regs::QUEUE_ENABLE;
    const TXDCTL_INIT: u32 = regs::TXDCTL_PTHRESH.val(8) | regs::TXDCTL_WTHRESH.val(0);
    const TXDCTL_DISABLE: u32 = 0;
    const RX_ERR_RXE: u32 = bit(31);
    const RX_ERR_L4E: u32 = bit(29);
    const RX_ERR_IPE: u32 = bit(30);
    const RX_CSUM_ERR_SHIFT: u32 = 29;
}

/// RX queue of an igb port.
pub type IgbRxQueue<R> = RxRing<R, IgbFamily>;
/// TX queue of an igb port.
pub type IgbTxQueue<R> = TxRing<R, IgbFamily>;

/// Waits of the bring-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgbTiming {
    /// CTRL.RST must clear within this.
    pub reset_done: Duration,
    /// Wait after reset.
    pub reset_settle: Duration,
    /// EECD.AUTO_RD budget. Not reaching it is not an error (as in Linux's igb, `igb_reset_hw_82575`): QEMU's
    /// igb never sets AUTO_RD (EECD reads 0x1110 after reset); the MAC check that follows catches a real failure.
    pub eeprom: Duration,
    /// MDIC ready budget.
    pub mdio: Duration,
    /// Queue enable budget.
    pub queue_enable: Duration,
}

impl Default for IgbTiming {
    fn default() -> Self {
        IgbTiming {
            reset_done: Duration::from_millis(100),
            reset_settle: Duration::from_millis(10),
            eeprom: Duration::from_millis(20),
            mdio: Duration::from_millis(10),
            queue_enable: Duration::from_millis(10),
        }
    }
}

/// An 82576 port (one queue pair).
pub struct Igb<R: RegisterSpace> {
    regs: Regs<R>,
    mapper: Arc<dyn DmaMapper>,
    allocator: Allocator,
    timing: IgbTiming,
    state: PortState,
    rx: Option<IgbRxQueue<R>>,
    tx: Option<IgbTxQueue<R>>,
    /// The burst the TX queue was set up with at the last start (what `burst_mode` reports while started).
    tx_path: Option<ringkit::TxPath>,
    hw: Mutex<Vec<u64>>,
    keep_alive: Vec<Box<dyn std::any::Any + Send>>,
}

impl<R: RegisterSpace> std::fmt::Debug for Igb<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Igb").field("name", &self.state.info.device_name).field("started", &self.state.started).finish()
    }
}

impl<R: RegisterSpace> Igb<R> {
    /// Resets the device, restarts PHY auto-negotiation (the link comes up asynchronously) and reads the MAC.
    pub fn new(
        regs: Arc<R>,
        mapper: Arc<dyn DmaMapper>,
        allocator: Allocator,
        name: &str,
        timing: IgbTiming,
    ) -> Result<Self> {
        let limits = DescLimits { min: 32, max: 4096, align: 8 };
        let info = DevInfo {
            driver_name: "net_igb",
            device_name: name.to_string(),
            max_rx_queues: 1,
            max_tx_queues: 1,
            rx_desc_lim: limits,
            tx_desc_lim: limits,
            min_mtu: 68,
            max_mtu: 9216,
            max_rx_pktlen: 9216 + 18,
            rx_offload_capa: offload::RX_CKSUM | offload::RX_SCATTER,
            tx_offload_capa: offload::TX_CKSUM | offload::TX_MULTI_SEGS,
            max_mac_addrs: 1,
            flow_type_rss_offloads: RssHashFunctions(0),
            reta_size: 0,
            hash_key_size: 0,
            speed_capa: vec![10, 100, 1_000],
            numa_node: None,
        };
        let mut dev = Igb {
            regs: Regs::new(regs),
            mapper,
            allocator,
            timing,
            state: PortState::new(info, MacAddr::ZERO, PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() }),
            rx: None,
            tx: None,
            tx_path: None,
            hw: Mutex::new(vec![0; regs::STATS.len()]),
            keep_alive: Vec::new(),
        };
        dev.reset()?;
        dev.state.reset_stats_to(dev.raw_stats());
        Ok(dev)
    }

    /// Keeps `value` alive as long as the port.
    pub fn keep_alive(&mut self, value: Box<dyn std::any::Any + Send>) {
        self.keep_alive.push(value);
    }

    fn device_error(&self, e: DevError) -> pktio::Error {
        e.at(self.state.name())
    }

    fn mask_interrupts(&self) {
        self.regs.write(regs::IMC, u32::MAX);
        self.regs.write(regs::EIMC, u32::MAX);
        let _ = self.regs.read(regs::ICR);
    }

    fn reset(&mut self) -> Result<()> {
        let t = self.timing.clone();
        self.accumulate();
        self.mask_interrupts();
        self.regs.write(regs::RCTL, 0);
        self.regs.write(regs::TCTL, 0);
        self.regs.set_bits(regs::CTRL, regs::CTRL_RST);
        self.regs
            .poll(regs::CTRL, regs::CTRL_RST, 0, t.reset_done)
            .map_err(|e| self.device_error(error::timeout("device reset (CTRL.RST)", "CTRL", e.last, t.reset_done)))?;
        std::thread::sleep(t.reset_settle);
        self.mask_interrupts();
        // EEPROM auto-read: waited for, but not required (see IgbTiming::eeprom).
        let _ = self.regs.poll(regs::EECD, regs::EECD_AUTO_RD, regs::EECD_AUTO_RD, t.eeprom);
        let (ral, rah) = (self.regs.read(regs::RAL0), self.regs.read(regs::RAH0));
        let lo = ral.to_le_bytes();
        let hi = (rah as u16).to_le_bytes();
        let mac = MacAddr([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]]);
        if rah & regs::RAH_AV == 0 || mac == MacAddr::ZERO || mac.is_multicast() {
            return Err(self.device_error(DevError::NoPermanentMac { ral, rah }));
        }
        if self.state.mac == MacAddr::ZERO {
            self.state.mac = mac;
        }
        self.accumulate();
        self.regs.set_bits(regs::CTRL_EXT, regs::CTRL_EXT_DRV_LOAD);
        // Link: set link up, then restart PHY auto-negotiation (QEMU's igb keeps the link down until then).
        self.regs.set_bits(regs::CTRL, regs::CTRL_SLU);
        self.phy_write(regs::PHY_ADDR, regs::PHY_REG_CTRL, regs::PHY_CTRL_AUTONEG_RESTART)?;
        Ok(())
    }

    fn phy_write(&self, phy: u32, reg: u32, value: u32) -> Result<()> {
        let cmd = regs::MDIC_DATA.val(value)
            | regs::MDIC_REGADD.val(reg)
            | regs::MDIC_PHYADD.val(phy)
            | regs::MDIC_OP.val(regs::MDIC_OP_WRITE);
        self.regs.write(regs::MDIC, cmd);
        let budget = self.timing.mdio;
        let v = self.regs.poll(regs::MDIC, regs::MDIC_READY, regs::MDIC_READY, budget).map_err(|e| {
            self.device_error(error::timeout(format!("MDIC write of PHY register {reg}"), "MDIC", e.last, budget))
        })?;
        if v & regs::MDIC_ERROR != 0 {
            let reason = format!("MDIC write of PHY register {reg} failed (MDIC={v:#010x})");
            return Err(self.device_error(DevError::Phy { reason }));
        }
        Ok(())
    }

    fn apply_mac(&self) {
        let m = self.state.mac.0;
        self.regs.write(regs::RAL0, u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
        self.regs.write(regs::RAH0, u16::from_le_bytes([m[4], m[5]]) as u32 | regs::RAH_AV);
    }

    fn rctl(&self) -> u32 {
        let mut v = regs::RCTL_BAM | regs::RCTL_SECRC;
        if self.state.promiscuous {
            v |= regs::RCTL_UPE | regs::RCTL_MPE;
        } else if self.state.allmulticast {
            v |= regs::RCTL_MPE;
        }
        if self.state.config.mtu > 1500 {
            v |= regs::RCTL_LPE;
        }
        v
    }

    fn apply_rctl(&self) {
        let en = self.regs.read(regs::RCTL) & regs::RCTL_EN;
        self.regs.write(regs::RLPML, self.state.config.mtu as u32 + regs::RLPML_OVERHEAD);
        self.regs.write(regs::RCTL, self.rctl() | en);
    }

    fn hw_start(&mut self, pool: &Mempool) -> Result<()> {
        let name = self.state.name().to_string();
        self.apply_mac();
        self.regs.write(regs::RXCSUM, regs::RXCSUM_IPOFLD | regs::RXCSUM_TUOFLD);
        let ring = |size| RingConfig { enable_timeout: self.timing.queue_enable, ..RingConfig::new(size) };
        let (rx_cfg, tx_cfg) = (ring(self.state.config.rx_desc), ring(self.state.config.tx_desc));
        let mut rx = RxRing::new(
            RxSetup {
                regs: &self.regs,
                allocator: &self.allocator,
                mapper: &self.mapper,
                pool,
                queue: 0,
                port_id: self.state.port_id,
                stats: self.state.rx_stats(0).expect("one configured queue").clone(),
                port: &name,
                udp_csum_zero_err: false,
            },
            rx_cfg,
        )?;
        let mut tx = TxRing::new(
            TxSetup {
                regs: &self.regs,
                allocator: &self.allocator,
                mapper: &self.mapper,
                pool,
                queue: 0,
                stats: self.state.tx_stats(0).expect("one configured queue").clone(),
                hang: Default::default(),
                port: &name,
                path: ringkit::TxPath::for_offloads(self.state.config.tx_offloads),
            },
            tx_cfg,
        )?;
        self.tx_path = Some(tx.path());
        let budget = self.timing.queue_enable;
        tx.enable().map_err(|t| self.device_error(error::timeout("TX queue 0 enable", "TXDCTL", t.last, budget)))?;
        self.regs.write(regs::TCTL, regs::TCTL_EN | regs::TCTL_PSP);
        rx.enable().map_err(|t| self.device_error(error::timeout("RX queue 0 enable", "RXDCTL", t.last, budget)))?;
        self.apply_rctl();
        self.regs.set_bits(regs::RCTL, regs::RCTL_EN);
        self.rx = Some(rx);
        self.tx = Some(tx);
        Ok(())
    }

    fn accumulate(&self) {
        let Ok(mut hw) = self.hw.lock() else { return };
        for (i, (_, r)) in regs::STATS.iter().enumerate() {
            hw[i] = hw[i].wrapping_add(self.regs.read(*r) as u64);
        }
    }

    fn hw_values(&self) -> Vec<u64> {
        self.accumulate();
        self.hw.lock().map(|h| h.clone()).unwrap_or_default()
    }

    fn raw_stats(&self) -> PortStats {
        let hw = self.hw_values();
        let mut s = self.state.queue_counters();
        s.imissed += hw.get(regs::STAT_MPC).copied().unwrap_or(0);
        s.ierrors = hw.get(regs::STAT_CRCERRS).copied().unwrap_or(0) + hw.get(regs::STAT_RLEC).copied().unwrap_or(0);
        s
    }
}

impl<R: RegisterSpace + 'static> TypedQueues for Igb<R> {
    type Rx = IgbRxQueue<R>;
    type Tx = IgbTxQueue<R>;

    /// Typed RX queue 0.
    fn rx_queue_typed(&mut self, queue: u16) -> Result<Self::Rx> {
        self.state.claim_rx(queue, |_| self.rx.take())
    }

    /// Typed TX queue 0.
    fn tx_queue_typed(&mut self, queue: u16) -> Result<Self::Tx> {
        self.state.claim_tx(queue, |_| self.tx.take())
    }
}

impl<R: RegisterSpace + 'static> EthDev for Igb<R> {
    fn state(&self) -> &PortState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut PortState {
        &mut self.state
    }

    fn configure(&mut self, config: &PortConfig) -> Result<()> {
        if config.rss.is_some() {
            return Err(self.state.unsupported("RSS"));
        }
        self.state.configure(config)?;
        self.state.reset_stats_to(self.raw_stats());
        Ok(())
    }

    fn start(&mut self, pool: &Mempool) -> Result<()> {
        if self.state.started {
            return Err(pktio::Error::Started { port: self.state.name().to_string() });
        }
        if let Err(e) = self.hw_start(pool) {
            self.rx = None;
            self.tx = None;
            self.regs.clear_bits(regs::RCTL, regs::RCTL_EN);
            return Err(e);
        }
        self.state.start_with_pool(pool)
    }

    fn stop(&mut self) -> Result<()> {
        if !self.state.started {
            return Ok(());
        }
        self.state.stop()?;
        self.regs.clear_bits(regs::RCTL, regs::RCTL_EN);
        self.rx = None;
        self.tx = None;
        self.regs.clear_bits(regs::TCTL, regs::TCTL_EN);
        Ok(())
    }

    fn rx_queue(&mut self, queue: u16) -> Result<Box<dyn RxQueue>> {
        Ok(Box::new(self.rx_queue_typed(queue)?))
    }

    fn tx_queue(&mut self, queue: u16) -> Result<Box<dyn TxQueue>> {
        Ok(Box::new(self.tx_queue_typed(queue)?))
    }

    /// TX: the path the queue runs when started, else the one the configuration's TX offloads choose.
    fn burst_mode(&self) -> pktio::BurstMode {
        let chosen = self.tx_path.filter(|_| self.state.started);
        ringkit::burst_mode_for(chosen.unwrap_or(ringkit::TxPath::for_offloads(self.state.config.tx_offloads)))
    }

    fn link(&self) -> LinkStatus {
        let s = self.regs.read(regs::STATUS);
        if s & regs::STATUS_LU == 0 {
            return LinkStatus::default();
        }
        let speed = match regs::STATUS_SPEED.get(s) {
            0 => 10,
            1 => 100,
            _ => 1_000,
        };
        LinkStatus { up: true, speed_mbps: speed, full_duplex: true, autoneg: true }
    }

    fn set_mac_addr(&mut self, mac: MacAddr) -> Result<()> {
        if mac == MacAddr::ZERO || mac.is_multicast() {
            return Err(self.state.invalid(format!("{mac} is not a unicast address")));
        }
        self.state.mac = mac;
        self.apply_mac();
        Ok(())
    }

    fn set_promiscuous(&mut self, on: bool) -> Result<()> {
        self.state.promiscuous = on;
        self.apply_rctl();
        Ok(())
    }

    fn set_allmulticast(&mut self, on: bool) -> Result<()> {
        self.state.allmulticast = on;
        self.apply_rctl();
        Ok(())
    }

    fn set_mtu(&mut self, mtu: u16) -> Result<()> {
        self.state.set_mtu(mtu)?;
        self.apply_rctl();
        Ok(())
    }

    fn stats(&self) -> PortStats {
        self.state.since_reset(self.raw_stats())
    }

    fn reset_stats(&mut self) {
        self.state.reset_stats_to(self.raw_stats());
    }

    fn xstats(&self) -> Vec<XStat> {
        let mut out = self.stats().generic_xstats();
        for ((name, _), v) in regs::STATS.iter().zip(self.hw_values()) {
            out.push(XStat::new(*name, v));
        }
        out
    }
}

impl<R: RegisterSpace> Drop for Igb<R> {
    fn drop(&mut self) {
        self.regs.clear_bits(regs::RCTL, regs::RCTL_EN);
        self.rx = None;
        self.tx = None;
        self.regs.clear_bits(regs::CTRL_EXT, regs::CTRL_EXT_DRV_LOAD);
    }
}

/// Opens the 82576 at `addr` through VFIO ([`open_pci`]: its ID checked, bus mastering on), maps BAR0, resets it and
/// restarts PHY auto-negotiation (poll [`EthDev::link`]: QEMU's model brings the link up about 500 ms later).
pub fn open_vfio(
    vfio: &drvkit::vfio::Vfio,
    addr: drvkit::pci::PciAddress,
    allocator: Allocator,
) -> Result<Igb<drvkit::vfio::VfioBar>> {
    let pci = open_pci(vfio, addr, &IGB_DRIVER)?;
    let bar = pci.device.map_bar(0)?;
    let mut port = Igb::new(Arc::new(bar), pci.mapper, allocator, &addr.to_string(), IgbTiming::default())?;
    port.keep_alive(Box::new(pci.device));
    Ok(port)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desc::{rx, tx, RxDesc, RxWriteback, TxDesc};
    use crate::testing::FakeRegs;
    use drvkit::dma::IdentityMapper;
    use mempool::{ol_flags, PacketBatch, PoolConfig};

    #[test]
    fn igb_bring_up_and_one_packet_each_way_on_the_shared_rings() {
        let fake = Arc::new(
            FakeRegs::new([0x52, 0x54, 0x00, 0x12, 0x34, 0x56])
                .with_read_bits(regs::EECD, regs::EECD_AUTO_RD)
                .with_read_bits(regs::MDIC, regs::MDIC_READY)
                .with_read_bits(regs::STATUS, regs::STATUS_LU | regs::STATUS_SPEED.val(2)),
        );
        // FakeRegs preloads the ixgbe RAL/RAH(0), which are at the same offsets on the 82576.
        let timing = IgbTiming { reset_settle: Duration::ZERO, ..Default::default() };
        let mut dev = Igb::new(fake.clone(), Arc::new(IdentityMapper), Allocator::no_huge(), "igb0", timing).unwrap();
        assert_eq!(dev.mac_addr().to_string(), "52:54:00:12:34:56");
        // docs/hw/vm-vfio.md §5: SLU and an MDIC write of PHY register 0 = 0x1340.
        assert_ne!(fake.peek(regs::CTRL) & regs::CTRL_SLU, 0);
        let mdic = fake.peek(regs::MDIC);
        assert_eq!(regs::MDIC_DATA.get(mdic), 0x1340);
        assert_eq!(regs::MDIC_PHYADD.get(mdic), 1);
        assert_eq!(dev.link().speed_mbps, 1_000);

        let pool = Mempool::new("igb-unit", &PoolConfig::with_size(512), &Allocator::no_huge()).unwrap();
        dev.configure(&PortConfig { rx_desc: 64, tx_desc: 64, ..Default::default() }).unwrap();
        dev.start(&pool).unwrap();
        assert_ne!(fake.peek(regs::RCTL) & regs::RCTL_EN, 0);
        assert_eq!(fake.peek(regs::TCTL), regs::TCTL_EN | regs::TCTL_PSP);
        assert_eq!(fake.peek(regs::rdlen(0)), 64 * 16);
        assert_eq!(fake.peek(regs::rdt(0)), 63);
        assert_eq!(regs::SRRCTL_DESCTYPE.get(fake.peek(regs::srrctl(0))), 1);
        let mut rxq = dev.rx_queue_typed(0).unwrap();
        let mut txq = dev.tx_queue_typed(0).unwrap();

        // The "device" completes RX descriptor 0 with a 60-byte frame whose TCP checksum is bad (TCPE = bit 29).
        let ring: *mut RxDesc = fake.ring(regs::rdbal(0), regs::rdbah(0));
        let wb = RxWriteback {
            pkt_info: rx::PTYPE_IPV4 | rx::PTYPE_TCP,
            rss_hash: 0,
            status_error: rx::STAT_DD | rx::STAT_EOP | rx::STAT_IPCS | rx::STAT_L4CS | bit(29),
            length: 60,
            vlan: 0,
        };
        // SAFETY: descriptor 0 of the 64-entry ring the driver programmed, owned by the device.
        unsafe { ring.write_volatile(RxDesc::writeback(wb)) };
        let mut b = PacketBatch::new();
        assert_eq!(rxq.rx_burst(&mut b), 1);
        let f = b.as_slice()[0].ol_flags();
        assert_eq!(
            f & (ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_BAD),
            ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_BAD
        );
        assert_eq!(txq.tx_burst(&mut b), 1);
        assert_eq!(fake.peek(regs::tdt(0)), 1);
        let tring: *const TxDesc = fake.ring(regs::tdbal(0), regs::tdbah(0));
        // SAFETY: descriptor 0 of the TX ring, just written by the driver.
        let raw = unsafe { tring.read_volatile() };
        let d = raw.as_data().unwrap();
        assert!(d.eop);
        assert_eq!((d.len, d.paylen), (60, 60));
        assert_eq!(tx::DTYP.get(raw.cmd_type_len), tx::DTYP_DATA);
        drop((rxq, txq));
        dev.stop().unwrap();
        assert!(pool.is_full());
        assert_eq!(dev.stats().ipackets, 1);
        assert_eq!(dev.stats().opackets, 1);
    }

    #[test]
    fn igb_bring_up_without_eeprom_auto_read_done_as_qemu_reports_it() {
        // QEMU's igb: EECD reads 0x1110 after reset (PRES, no AUTO_RD). The MAC in RAL/RAH(0) is what counts.
        let fake = Arc::new(
            FakeRegs::new([0x52, 0x54, 0x00, 0x00, 0x00, 0x20])
                .with_read_bits(regs::EECD, regs::EECD_PRES)
                .with_read_bits(regs::MDIC, regs::MDIC_READY),
        );
        let timing = IgbTiming { reset_settle: Duration::ZERO, eeprom: Duration::from_millis(2), ..Default::default() };
        let dev = Igb::new(fake, Arc::new(IdentityMapper), Allocator::no_huge(), "igb0", timing).unwrap();
        assert_eq!(dev.mac_addr().to_string(), "52:54:00:00:00:20");
        assert!(!dev.link().up);
    }

    /// RLPML leaves room for one VLAN tag: MTU + 22, at start and after an MTU change.
    #[test]
    fn rlpml_allows_a_vlan_tagged_full_size_frame() {
        let fake = Arc::new(
            FakeRegs::new([0x52, 0x54, 0x00, 0x12, 0x34, 0x57])
                .with_read_bits(regs::EECD, regs::EECD_AUTO_RD)
                .with_read_bits(regs::MDIC, regs::MDIC_READY)
                .with_read_bits(regs::STATUS, regs::STATUS_LU | regs::STATUS_SPEED.val(2)),
        );
        let timing = IgbTiming { reset_settle: Duration::ZERO, ..Default::default() };
        let mut dev = Igb::new(fake.clone(), Arc::new(IdentityMapper), Allocator::no_huge(), "igb0", timing).unwrap();
        let pool = Mempool::new("igb-rlpml", &PoolConfig::with_size(512), &Allocator::no_huge()).unwrap();
        dev.configure(&PortConfig { rx_desc: 64, tx_desc: 64, ..Default::default() }).unwrap();
        dev.start(&pool).unwrap();
        // 1500-byte payload + 14 header + 4 tag + 4 CRC = 1522.
        assert_eq!(fake.peek(regs::RLPML), 1522);
        dev.stop().unwrap();
        dev.set_mtu(9000).unwrap();
        dev.start(&pool).unwrap();
        assert_eq!(fake.peek(regs::RLPML), 9022);
        assert_ne!(fake.peek(regs::RCTL) & regs::RCTL_LPE, 0);
        dev.stop().unwrap();
    }
}
