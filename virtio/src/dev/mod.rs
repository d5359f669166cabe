//! Bring-up and the control plane of a virtio-net device: capabilities, feature negotiation, virtqueues, the
//! control queue, and [`EthDev`].
//!
//! Interrupts: the `intr` module (RX queue and link vectors).

mod intr;
pub use intr::{CONFIG_VECTOR, RX_VECTOR_BASE};

use pktio::driver::open_pci;
use pktio::TypedQueues;
use std::any::Any;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drvkit::dma::{DmaMapper, DmaMapping};
use drvkit::irq::{IrqSource, IrqVectors};
use drvkit::pci::PciAddress;
use drvkit::vfio::{Vfio, VfioBar};
use hugepage::{Allocator, IovaMode};
use mempool::Mempool;
use pktio::{
    offload, BurstMode, DescLimits, DevInfo, EthDev, LinkStatus, MacAddr, PortConfig, PortState, RxQueue, TxQueue,
    XStat,
};

use crate::desc::{ctrl, VirtqDesc};
use crate::error::Error;
use crate::regs::{
    cfg_type, feature, netcfg, status, virtio_caps, CommonCfg, RegisterSpace, VirtioCap, Window, NO_VECTOR,
};
use crate::rxtx::{Notifier, RxIntr, RxState, TxState, VirtioRxQueue, VirtioTxQueue};
use crate::virtqueue::{Layout, SplitQueue};

/// Driver name.
pub const DRIVER_NAME: &str = "net_virtio";
/// PCI vendor ID of virtio devices.
pub const VENDOR_ID: u16 = 0x1af4;
/// PCI device ID of a modern (virtio 1.x only) network device.
pub const DEVICE_ID_NET_MODERN: u16 = 0x1041;
/// PCI device ID of a transitional network device (legacy I/O BAR plus modern capabilities).
pub const DEVICE_ID_NET_TRANSITIONAL: u16 = 0x1000;

/// Features this driver can use (the device's offer is intersected with it).
pub const DRIVER_FEATURES: u64 = feature::VERSION_1
    | feature::ACCESS_PLATFORM
    | feature::NET_MAC
    | feature::NET_STATUS
    | feature::NET_MRG_RXBUF
    | feature::NET_CTRL_VQ
    | feature::NET_CTRL_RX
    | feature::NET_MQ
    | feature::NET_CTRL_MAC_ADDR
    | feature::NET_MTU
    | feature::NET_CSUM
    | feature::NET_GUEST_CSUM
    | feature::RING_EVENT_IDX
    | feature::NET_SPEED_DUPLEX;

type VResult<T> = std::result::Result<T, Error>;

/// The structures of a modern virtio PCI function, located through its vendor capabilities.
#[derive(Debug)]
pub struct Transport<B> {
    /// Common configuration.
    pub common: CommonCfg<B>,
    /// Notification area.
    pub notify: Window<B>,
    /// `notify_off_multiplier`.
    pub notify_mult: u32,
    /// Device-specific configuration.
    pub device: Window<B>,
    /// ISR status (unused: interrupts are MSI-X messages, which leave it alone; read to acknowledge).
    pub isr: Option<Window<B>>,
}

impl<B: RegisterSpace> Transport<B> {
    /// Locates the structures from `caps`, with `bar(n)` giving BAR `n`'s registers.
    pub fn new(dev: &str, caps: &[VirtioCap], mut bar: impl FnMut(u8) -> VResult<Arc<B>>) -> VResult<Transport<B>> {
        let mut bars: Vec<(u8, Arc<B>)> = Vec::new();
        let mut window = |ty: u8, min_len: usize, what: &str| -> VResult<Option<(Window<B>, VirtioCap)>> {
            // The first capability of a type that this driver can use wins (docs/hw/virtio.md §4.1.4.1).
            let Some(c) = caps.iter().find(|c| c.cfg_type == ty && c.bar <= 5) else {
                return Ok(None);
            };
            let io = match bars.iter().find(|(n, _)| *n == c.bar) {
                Some((_, io)) => io.clone(),
                None => {
                    let io = bar(c.bar)?;
                    bars.push((c.bar, io.clone()));
                    io
                }
            };
            if (c.length as usize) < min_len {
                return Err(Error::Capability {
                    dev: dev.to_string(),
                    what: format!("{what} structure is {} bytes, at least {min_len} expected", c.length),
                });
            }
            let w = Window::new(io, c.offset as usize, c.length as usize).ok_or_else(|| Error::Capability {
                dev: dev.to_string(),
                what: format!("{what} structure {:#x}+{:#x} lies outside BAR {}", c.offset, c.length, c.bar),
            })?;
            Ok(Some((w, *c)))
        };
        let missing = |what: &str| Error::Capability {
            dev: dev.to_string(),
            what: format!(
                "no {what} capability: not a modern (virtio 1.x) device; a transitional device needs \
                 disable-legacy=off handling, which this driver lacks"
            ),
        };
        let (common, _) = window(cfg_type::COMMON, crate::regs::common::LEN, "common configuration")?
            .ok_or_else(|| missing("common configuration"))?;
        let (notify, ncap) = window(cfg_type::NOTIFY, 2, "notification")?.ok_or_else(|| missing("notification"))?;
        let (device, _) =
            window(cfg_type::DEVICE, 6, "device configuration")?.ok_or_else(|| missing("device configuration"))?;
        let isr = window(cfg_type::ISR, 1, "ISR")?.map(|(w, _)| w);
        Ok(Transport { common: CommonCfg(common), notify, notify_mult: ncap.notify_off_multiplier, device, isr })
    }
}

/// What `start` built: the control queue, and the mappings of the ring memory and of every pool the device may
/// reach (each guard owns its memory). Dropped only after the device is reset (`teardown`, `Drop`).
struct Running {
    ctrl: Option<CtrlQueue>,
    _ring_map: DmaMapping,
    _pool_maps: Vec<DmaMapping>,
}

struct CtrlQueue {
    vq: SplitQueue,
    /// Command buffer: (pointer, IOVA).
    buf: (*mut u8, u64),
    notify_off: usize,
    index: u16,
}

// SAFETY: the control queue's memory is part of the ring memory `Running::_ring_map` owns (and keeps mapped);
// only the port touches it.
unsafe impl Send for CtrlQueue {}

const CTRL_SIZE: u16 = 16;
const CTRL_BUF: usize = 256;

/// A virtio-net port.
pub struct VirtioNet<B: RegisterSpace> {
    state: PortState,
    t: Transport<B>,
    device_features: u64,
    features: u64,
    max_pairs: u16,
    max_queue_size: u16,
    allocator: Allocator,
    mapper: Arc<dyn DmaMapper>,
    iova_mode: IovaMode,
    running: Option<Running>,
    rx_homes: Vec<Arc<Mutex<Option<RxState<B>>>>>,
    tx_homes: Vec<Arc<Mutex<Option<TxState<B>>>>>,
    ctrl_errors: u64,
    /// Where the interrupt vectors are delivered (VFIO's MSI-X, or a model's); `None`: the port only polls.
    irq: Option<Arc<dyn IrqSource>>,
    /// The vectors enabled while started with `intr_conf.rxq` or `lsc`.
    vectors: IrqVectors,
    /// The configuration-change vector's eventfd, while started with `intr_conf.lsc`.
    lsc_fd: Option<Arc<drvkit::vfio::EventFd>>,
    /// Keeps the device (VFIO fds, BAR mappings) alive as long as the port.
    _owner: Option<Box<dyn Any + Send + Sync>>,
}

impl<B: RegisterSpace> std::fmt::Debug for VirtioNet<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtioNet")
            .field("name", &self.state.info.device_name)
            .field("features", &feature::names(self.features))
            .field("max_pairs", &self.max_pairs)
            .field("started", &self.state.started)
            .finish()
    }
}

fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    loop {
        if f() {
            return true;
        }
        if t0.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

impl<B: RegisterSpace + 'static> VirtioNet<B> {
    /// Takes a device whose structures are located (`t`): resets it, checks its features and reads its
    /// configuration. `iova_mode` says whether an IOMMU translates the device's DMA (`Va`), which makes
    /// ACCESS_PLATFORM mandatory.
    pub fn new(
        name: &str,
        t: Transport<B>,
        allocator: Allocator,
        mapper: Arc<dyn DmaMapper>,
        owner: Option<Box<dyn Any + Send + Sync>>,
    ) -> VResult<Self> {
        let iova_mode = allocator.config().iova_mode;
        let mut dev = VirtioNet {
            state: PortState::new(DevInfo::software(DRIVER_NAME, name, 1), MacAddr::ZERO, PortConfig::default()),
            t,
            device_features: 0,
            features: 0,
            max_pairs: 1,
            max_queue_size: 256,
            allocator,
            mapper,
            iova_mode,
            running: None,
            rx_homes: Vec::new(),
            tx_homes: Vec::new(),
            ctrl_errors: 0,
            irq: None,
            vectors: IrqVectors::new(),
            lsc_fd: None,
            _owner: owner,
        };
        dev.state.promiscuous = true;
        dev.reset()?;
        dev.negotiate()?;
        dev.read_config();
        dev.reset()?;
        Ok(dev)
    }

    fn name(&self) -> String {
        self.state.info.device_name.clone()
    }

    fn dev_err(&self, what: impl Into<String>) -> Error {
        Error::Device { dev: self.name(), what: what.into() }
    }

    /// Resets the device (status 0) and waits for it to read back 0: all DMA stops.
    pub fn reset(&mut self) -> VResult<()> {
        let c = &self.t.common;
        c.set_status(0);
        let budget = Duration::from_secs(2);
        if !wait_until(budget, || c.status() == 0) {
            let last_value = c.status() as u32;
            return Err(Error::Timeout {
                dev: self.name(),
                what: "reset",
                register: "device_status",
                last_value,
                budget,
            });
        }
        Ok(())
    }

    /// ACKNOWLEDGE, DRIVER, feature negotiation, FEATURES_OK (docs/hw/virtio.md §3.1.1 steps 1-6). Leaves the device waiting for
    /// its queues.
    fn negotiate(&mut self) -> VResult<()> {
        let c = &self.t.common;
        c.set_status(status::ACKNOWLEDGE);
        c.set_status(status::ACKNOWLEDGE | status::DRIVER);
        let offered = c.device_features();
        self.device_features = offered;
        let ferr =
            |what: String| Error::Features { dev: self.name(), what, offered: feature::names(offered).join("|") };
        if offered & feature::VERSION_1 == 0 {
            return Err(ferr("VERSION_1 not offered: a legacy device, which this driver does not drive".into()));
        }
        if offered & feature::ACCESS_PLATFORM == 0 && self.iova_mode == IovaMode::Va {
            return Err(ferr(
                "ACCESS_PLATFORM not offered: the device would bypass the IOMMU and treat IOVAs as \
                 physical addresses; give QEMU `iommu_platform=on` for this device (or use --iova-mode pa)"
                    .into(),
            ));
        }
        let mut want = offered & DRIVER_FEATURES;
        // Offloads only when configured.
        if self.state.config.tx_offloads & (offload::TX_TCP_CKSUM | offload::TX_UDP_CKSUM) == 0 {
            want &= !feature::NET_CSUM;
        }
        if self.state.config.rx_offloads & (offload::RX_TCP_CKSUM | offload::RX_UDP_CKSUM) == 0 {
            want &= !feature::NET_GUEST_CSUM;
        }
        // MQ and the control-queue features need the control queue.
        if want & feature::NET_CTRL_VQ == 0 {
            want &= !(feature::NET_MQ | feature::NET_CTRL_RX | feature::NET_CTRL_MAC_ADDR);
        }
        c.set_driver_features(want);
        c.set_status(status::ACKNOWLEDGE | status::DRIVER | status::FEATURES_OK);
        if c.status() & status::FEATURES_OK == 0 {
            return Err(ferr(format!("device refused features {}", feature::names(want).join("|"))));
        }
        self.features = want;
        Ok(())
    }

    fn has(&self, f: u64) -> bool {
        self.features & f != 0
    }

    /// Reads MAC, queue pairs, MTU from the device configuration (generation-checked) and fills the info.
    fn read_config(&mut self) {
        let d = &self.t.device;
        let c = &self.t.common;
        let (mac, pairs, mtu) = loop {
            let gen = c.config_generation();
            let mut mac = [0u8; 6];
            for (i, b) in mac.iter_mut().enumerate() {
                *b = d.read8(netcfg::MAC + i);
            }
            let pairs = if self.features & feature::NET_MQ != 0 { d.read16(netcfg::MAX_VIRTQUEUE_PAIRS) } else { 1 };
            let mtu = if self.features & feature::NET_MTU != 0 && d.len() >= netcfg::MTU + 2 {
                d.read16(netcfg::MTU)
            } else {
                0
            };
            if gen == c.config_generation() {
                break (mac, pairs.max(1), mtu);
            }
        };
        self.max_pairs = pairs;
        c.select_queue(0);
        self.max_queue_size = c.queue_size().max(1);
        let mac = if self.has(feature::NET_MAC) {
            MacAddr(mac)
        } else {
            MacAddr::local_from(self.name().bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32)))
        };
        self.state.mac = mac;
        let max_q = pairs.min(256);
        let size = self.max_queue_size;
        let mut info = DevInfo::software(DRIVER_NAME, &self.name(), max_q);
        info.rx_desc_lim = DescLimits { min: 32.min(size), max: size, align: 1 };
        info.tx_desc_lim = DescLimits { min: 32.min(size), max: size, align: 1 };
        info.max_mtu = if mtu >= 68 { mtu } else { 9000 };
        info.max_rx_pktlen = info.max_mtu as u32 + 18;
        info.rx_offload_capa = 0;
        info.tx_offload_capa = offload::TX_MULTI_SEGS;
        if self.device_features & feature::NET_CSUM != 0 {
            info.tx_offload_capa |= offload::TX_TCP_CKSUM | offload::TX_UDP_CKSUM;
        }
        if self.device_features & feature::NET_GUEST_CSUM != 0 {
            info.rx_offload_capa |= offload::RX_TCP_CKSUM | offload::RX_UDP_CKSUM;
        }
        info.speed_capa = vec![10_000];
        self.state.info = info;
        let cfg = PortConfig {
            rx_desc: self.state.config.rx_desc.min(size),
            tx_desc: self.state.config.tx_desc.min(size),
            ..self.state.config.clone()
        };
        // The defaults (1024 descriptors) may exceed the device's queue size: clamp them.
        let _ = self.state.configure(&cfg);
    }

    /// The negotiated feature bits.
    pub fn features(&self) -> u64 {
        self.features
    }

    /// The device's offered feature bits.
    pub fn device_features(&self) -> u64 {
        self.device_features
    }

    /// Device status register (DEVICE_NEEDS_RESET shows a device that hit an error, e.g. an IOMMU fault).
    pub fn device_status(&self) -> u8 {
        self.t.common.status()
    }

    /// Maps another mempool for the device (packets from it may then be sent; the start pool is mapped already).
    pub fn map_pool(&mut self, pool: &Mempool) -> pktio::Result<()> {
        let map = self.mapper.map(pool.memory())?;
        match self.running.as_mut() {
            Some(r) => {
                r._pool_maps.push(map);
                Ok(())
            }
            None => Err(pktio::Error::NotStarted { port: self.name() }),
        }
    }

    fn queue_size(&self, asked: u16) -> u16 {
        let max = self.max_queue_size;
        let n = asked.clamp(1, max);
        // Split virtqueue sizes are powers of two: round down.
        if n.is_power_of_two() {
            n
        } else {
            1 << (15 - n.leading_zeros())
        }
    }

    /// Sets up queue `index` in the device from `vq`, its interrupts on MSI-X `vector` (or [`NO_VECTOR`]); returns
    /// its notification offset in the notify window.
    fn setup_queue(&self, index: u16, vq: &SplitQueue, vector: u16) -> VResult<usize> {
        let c = &self.t.common;
        c.select_queue(index);
        let max = c.queue_size();
        if max == 0 {
            return Err(self.dev_err(format!("virtqueue {index} does not exist")));
        }
        if vq.size() > max {
            return Err(self.dev_err(format!("virtqueue {index}: {} entries, the device allows {max}", vq.size())));
        }
        c.set_queue_size(vq.size());
        c.set_queue_msix_vector(vector);
        if vector != NO_VECTOR {
            // The device says NO_VECTOR when it could not map the vector (docs/hw/virtio.md §4.1.5.1.2).
            let answer = c.queue_msix_vector();
            if answer != vector {
                return Err(Error::Vector { dev: self.name(), queue: index, vector, answer });
            }
        }
        let (d, a, u) = vq.addrs();
        c.set_queue_addrs(d, a, u);
        let off = c.queue_notify_off() as usize * self.t.notify_mult as usize;
        if off + 2 > self.t.notify.len() {
            return Err(self.dev_err(format!("virtqueue {index}: notify offset {off:#x} outside the notify area")));
        }
        c.enable_queue();
        Ok(off)
    }

    fn bring_up(&mut self, pool: &Mempool) -> VResult<()> {
        let cfg = self.state.config.clone();
        if pool.headroom() < crate::desc::NetHdr::LEN as u16 {
            return Err(self.dev_err(format!(
                "the pool's headroom ({} bytes) cannot hold the {}-byte virtio-net header",
                pool.headroom(),
                crate::desc::NetHdr::LEN
            )));
        }
        self.reset()?;
        self.negotiate()?;
        let pairs = cfg.rx_queues.max(cfg.tx_queues);
        if pairs > self.max_pairs {
            return Err(self.dev_err(format!("{pairs} queue pairs asked, the device has {}", self.max_pairs)));
        }
        let rx_size = self.queue_size(cfg.rx_desc);
        let tx_size = self.queue_size(cfg.tx_desc);
        let has_ctrl = self.has(feature::NET_CTRL_VQ);
        // Memory: rings, TX header slots, control queue and its command buffer. No piece crosses a page boundary
        // (IOVA = PA memory is contiguous only within a page).
        let page = self.allocator.config().page_size.bytes();
        let mut pieces: Vec<usize> = Vec::new();
        for _ in 0..cfg.rx_queues {
            pieces.push(Layout::new(rx_size).total);
        }
        for _ in 0..cfg.tx_queues {
            pieces.push(Layout::new(tx_size).total);
            pieces.push((16 * tx_size as usize).next_multiple_of(64));
        }
        if has_ctrl {
            pieces.push(Layout::new(CTRL_SIZE).total);
            pieces.push(CTRL_BUF);
        }
        let mut offsets = Vec::new();
        let mut cur = 0usize;
        for &p in &pieces {
            if p > page {
                return Err(self.dev_err(format!("a {p}-byte ring does not fit a {page}-byte page")));
            }
            if cur / page != (cur + p - 1) / page {
                cur = cur.next_multiple_of(page);
            }
            offsets.push(cur);
            cur += p;
        }
        let mem = Arc::new(self.allocator.allocate(cur.max(1))?);
        let ring_map = self.mapper.map(&mem)?;
        let pool_map = self.mapper.map(pool.memory())?;
        let base = mem.as_ptr();
        let at = |i: usize| -> (std::ptr::NonNull<u8>, u64) {
            // SAFETY: offsets[i] + pieces[i] <= mem.len() by construction.
            let p = unsafe { base.add(offsets[i]) };
            (std::ptr::NonNull::new(p).expect("mapped memory"), mem.iova_at(offsets[i]).expect("inside the region"))
        };
        let event_idx = self.has(feature::RING_EVENT_IDX);
        self.enable_vectors(&cfg)?;
        let mut next = 0;
        let mut rx_states = Vec::new();
        for q in 0..cfg.rx_queues {
            let (p, iova) = at(next);
            next += 1;
            // SAFETY: a fresh piece of `mem`, 64-byte aligned, large enough, kept alive by the state's Arc.
            let vq = unsafe { SplitQueue::new(p, iova, rx_size, event_idx) };
            let vector = RX_VECTOR_BASE + q;
            let intr = self.vectors.get(usize::from(vector)).map(|fd| RxIntr { fd: fd.clone(), vector });
            let off = self.setup_queue(2 * q, &vq, intr.as_ref().map_or(NO_VECTOR, |i| i.vector))?;
            let stats = self.state.rx_stats(q).expect("configured queue").clone();
            rx_states.push(RxState {
                shadow: (0..rx_size).map(|_| None).collect(),
                vq,
                pool: pool.clone(),
                notifier: Notifier { window: self.t.notify.clone(), offset: off, queue: 2 * q },
                stats,
                port_id: self.state.port_id,
                mergeable: self.has(feature::NET_MRG_RXBUF),
                guest_csum: self.has(feature::NET_GUEST_CSUM),
                hdr_off: pool.headroom() - crate::desc::NetHdr::LEN as u16,
                refill_threshold: (rx_size as usize / 4).clamp(1, 64),
                partial: None,
                intr,
                _mem: mem.clone(),
            });
        }
        let mut tx_states = Vec::new();
        for q in 0..cfg.tx_queues {
            let (p, iova) = at(next);
            let (hp, hiova) = at(next + 1);
            next += 2;
            // SAFETY: as for RX.
            let vq = unsafe { SplitQueue::new(p, iova, tx_size, event_idx) };
            let off = self.setup_queue(2 * q + 1, &vq, NO_VECTOR)?;
            let stats = self.state.tx_stats(q).expect("configured queue").clone();
            tx_states.push(TxState {
                shadow: (0..tx_size).map(|_| None).collect(),
                vq,
                notifier: Notifier { window: self.t.notify.clone(), offset: off, queue: 2 * q + 1 },
                stats,
                hdr_slots: (hp.as_ptr(), hiova),
                csum: self.has(feature::NET_CSUM),
                free_threshold: (tx_size as usize / 4).clamp(1, 64),
                _mem: mem.clone(),
            });
        }
        let ctrl = if has_ctrl {
            let (p, iova) = at(next);
            let (bp, biova) = at(next + 1);
            let index = if self.has(feature::NET_MQ) { 2 * self.max_pairs } else { 2 };
            // SAFETY: as for RX.
            let vq = unsafe { SplitQueue::new(p, iova, CTRL_SIZE, event_idx) };
            let notify_off = self.setup_queue(index, &vq, NO_VECTOR)?;
            Some(CtrlQueue { vq, buf: (bp.as_ptr(), biova), notify_off, index })
        } else {
            None
        };
        self.map_config_vector(&cfg)?;
        let c = &self.t.common;
        c.set_status(status::ACKNOWLEDGE | status::DRIVER | status::FEATURES_OK | status::DRIVER_OK);
        let st = c.status();
        if st & status::DEVICE_NEEDS_RESET != 0 || st & status::DRIVER_OK == 0 {
            return Err(self.dev_err(format!("device did not accept DRIVER_OK (status {st:#x})")));
        }
        self.running = Some(Running { ctrl, _ring_map: ring_map, _pool_maps: vec![pool_map] });
        if self.has(feature::NET_MQ) {
            self.ctrl_cmd(ctrl::CLASS_MQ, ctrl::MQ_VQ_PAIRS_SET, &pairs.to_le_bytes())?;
        }
        if self.has(feature::NET_CTRL_RX) {
            self.ctrl_cmd(ctrl::CLASS_RX, ctrl::RX_PROMISC, &[self.state.promiscuous as u8])?;
            self.ctrl_cmd(ctrl::CLASS_RX, ctrl::RX_ALLMULTI, &[self.state.allmulticast as u8])?;
        }
        for mut s in rx_states {
            s.refill();
            self.rx_homes.push(Arc::new(Mutex::new(Some(s))));
        }
        for s in tx_states {
            self.tx_homes.push(Arc::new(Mutex::new(Some(s))));
        }
        Ok(())
    }

    /// Sends one control command and waits for the device's acknowledgement.
    fn ctrl_cmd(&mut self, class: u8, cmd: u8, data: &[u8]) -> VResult<()> {
        let name = self.name();
        let cerr = |what: String| Error::Control { dev: name.clone(), class, cmd, what };
        let Some(r) = self.running.as_mut() else {
            return Err(cerr("the port is not started".into()));
        };
        let Some(cq) = r.ctrl.as_mut() else {
            return Err(cerr("no control queue".into()));
        };
        assert!(data.len() + 3 <= CTRL_BUF);
        let (p, iova) = cq.buf;
        // Layout in the buffer: [class, cmd] at 0, data at 16, ack at 128.
        // SAFETY: the command buffer is CTRL_BUF bytes of the ring memory `r._ring_map` owns, unused by the device until
        // published.
        unsafe {
            p.write_volatile(class);
            p.add(1).write_volatile(cmd);
            std::ptr::copy_nonoverlapping(data.as_ptr(), p.add(16), data.len());
            p.add(128).write_volatile(0xff);
        }
        let (a, b, c) = (cq.vq.alloc(), cq.vq.alloc(), cq.vq.alloc());
        let (Some(a), Some(b), Some(c)) = (a, b, c) else {
            return Err(cerr("control queue full".into()));
        };
        cq.vq.set_desc(a, iova, 2, VirtqDesc::F_NEXT, b);
        cq.vq.set_desc(b, iova + 16, data.len() as u32, VirtqDesc::F_NEXT, c);
        cq.vq.set_desc(c, iova + 128, 1, VirtqDesc::F_WRITE, 0);
        cq.vq.push_avail(a);
        cq.vq.publish();
        cq.vq.needs_notify();
        self.t.notify.write16(cq.notify_off, cq.index);
        let done = wait_until(Duration::from_secs(5), || cq.vq.used_pending() > 0);
        if !done {
            self.ctrl_errors += 1;
            return Err(cerr("no answer within 5 s".into()));
        }
        let u = cq.vq.take_used();
        cq.vq.free_chain(u.id as u16);
        // SAFETY: the device is done with the chain: the ack byte is ours to read.
        let ack = unsafe { p.add(128).read_volatile() };
        if ack != ctrl::OK {
            self.ctrl_errors += 1;
            return Err(cerr(format!("device answered {ack}")));
        }
        Ok(())
    }

    /// True while a queue handle is out. The rings go home when their handle drops, holding their counters, so
    /// the state's reference-count check does not apply here.
    /// True while a queue handle is out.
    fn queues_in_use(&self) -> bool {
        let out = |h: &Arc<Mutex<Option<RxState<B>>>>| h.lock().unwrap_or_else(|e| e.into_inner()).is_none();
        let out_tx = |h: &Arc<Mutex<Option<TxState<B>>>>| h.lock().unwrap_or_else(|e| e.into_inner()).is_none();
        self.rx_homes.iter().any(out) || self.tx_homes.iter().any(out_tx)
    }

    fn teardown(&mut self) {
        // The reset unmaps every queue's vector; then the vectors go (their eventfds stay valid, and silent).
        let _ = self.reset();
        if !self.vectors.is_empty() {
            if let Some(source) = &self.irq {
                // Fails only if the device went away; nothing is left to undo.
                let _ = source.disable();
            }
            self.vectors.clear();
        }
        self.lsc_fd = None;
        for h in self.rx_homes.drain(..) {
            if let Some(mut s) = h.lock().unwrap_or_else(|e| e.into_inner()).take() {
                s.release();
            }
        }
        for h in self.tx_homes.drain(..) {
            if let Some(mut s) = h.lock().unwrap_or_else(|e| e.into_inner()).take() {
                s.release();
            }
        }
        self.running = None;
    }
}

impl<B: RegisterSpace> Drop for VirtioNet<B> {
    fn drop(&mut self) {
        // Stop all DMA before the rings and buffers go.
        self.t.common.set_status(0);
        let _ = wait_until(Duration::from_millis(500), || self.t.common.status() == 0);
    }
}

impl<B: RegisterSpace + 'static> TypedQueues for VirtioNet<B> {
    type Rx = VirtioRxQueue<B>;
    type Tx = VirtioTxQueue<B>;

    /// Typed RX queue (static dispatch). Dropping it hands the ring back to the port.
    fn rx_queue_typed(&mut self, queue: u16) -> pktio::Result<Self::Rx> {
        let homes = &self.rx_homes;
        let port_id = self.state.port_id;
        self.state.claim_rx(queue, |_| {
            let home = homes.get(queue as usize)?.clone();
            let mut state = home.lock().unwrap_or_else(|e| e.into_inner()).take()?;
            state.port_id = port_id;
            Some(VirtioRxQueue { state: Some(state), home })
        })
    }

    /// Typed TX queue. Dropping it hands the ring back to the port.
    fn tx_queue_typed(&mut self, queue: u16) -> pktio::Result<Self::Tx> {
        let homes = &self.tx_homes;
        self.state.claim_tx(queue, |_| {
            let home = homes.get(queue as usize)?.clone();
            let state = home.lock().unwrap_or_else(|e| e.into_inner()).take()?;
            Some(VirtioTxQueue { state: Some(state), home })
        })
    }
}

impl<B: RegisterSpace + 'static> EthDev for VirtioNet<B> {
    fn state(&self) -> &PortState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut PortState {
        &mut self.state
    }

    fn configure(&mut self, config: &PortConfig) -> pktio::Result<()> {
        self.check_vectors(config)?;
        let c = PortConfig {
            rx_desc: config.rx_desc.min(self.max_queue_size),
            tx_desc: config.tx_desc.min(self.max_queue_size),
            ..config.clone()
        };
        self.state.configure(&c)
    }

    fn start(&mut self, pool: &Mempool) -> pktio::Result<()> {
        if self.state.started {
            return Err(pktio::Error::Started { port: self.name() });
        }
        if let Err(e) = self.bring_up(pool) {
            self.teardown();
            return Err(e.into());
        }
        self.state.start_with_pool(pool)
    }

    fn stop(&mut self) -> pktio::Result<()> {
        if !self.state.started {
            return Ok(());
        }
        if self.queues_in_use() {
            return Err(pktio::Error::QueuesInUse { port: self.name() });
        }
        self.state.started = false;
        self.teardown();
        Ok(())
    }

    fn rx_queue(&mut self, queue: u16) -> pktio::Result<Box<dyn RxQueue>> {
        Ok(Box::new(self.rx_queue_typed(queue)?))
    }

    fn tx_queue(&mut self, queue: u16) -> pktio::Result<Box<dyn TxQueue>> {
        Ok(Box::new(self.tx_queue_typed(queue)?))
    }

    /// Split virtqueues, one packet at a time; RX takes chains of buffers once MRG_RXBUF is negotiated (known
    /// after start).
    fn burst_mode(&self) -> BurstMode {
        let rx = if self.has(feature::NET_MRG_RXBUF) { "Scalar split, mergeable" } else { "Scalar split" };
        BurstMode { rx, tx: "Scalar split" }
    }

    /// Also acknowledges a link event on a port started with `intr_conf.lsc`: drains the configuration-change
    /// eventfd before reading the status, so a change after this read signals it again.
    fn link(&self) -> LinkStatus {
        self.ack_link_event();
        if !self.state.started || self.t.common.status() & status::DEVICE_NEEDS_RESET != 0 {
            return LinkStatus::default();
        }
        let up = !self.has(feature::NET_STATUS) || self.t.device.read16(netcfg::STATUS) & netcfg::S_LINK_UP != 0;
        if !up {
            return LinkStatus::default();
        }
        let mut speed = 10_000;
        if self.has(feature::NET_SPEED_DUPLEX) && self.t.device.len() > netcfg::DUPLEX {
            let s = self.t.device.read32(netcfg::SPEED);
            if s != 0 && s != u32::MAX {
                speed = s;
            }
        }
        LinkStatus { up: true, speed_mbps: speed, full_duplex: true, autoneg: false }
    }

    fn link_event_fd(&self) -> pktio::Result<std::os::fd::RawFd> {
        self.lsc_raw_fd()
    }

    fn set_mac_addr(&mut self, mac: MacAddr) -> pktio::Result<()> {
        if self.state.started && self.has(feature::NET_CTRL_MAC_ADDR) {
            self.ctrl_cmd(ctrl::CLASS_MAC, ctrl::MAC_ADDR_SET, &mac.0)?;
        } else if self.state.started {
            return Err(self.state.unsupported("MAC change"));
        }
        self.state.mac = mac;
        Ok(())
    }

    fn set_promiscuous(&mut self, on: bool) -> pktio::Result<()> {
        if self.state.started && self.has(feature::NET_CTRL_RX) {
            self.ctrl_cmd(ctrl::CLASS_RX, ctrl::RX_PROMISC, &[on as u8])?;
        }
        self.state.promiscuous = on;
        Ok(())
    }

    fn set_allmulticast(&mut self, on: bool) -> pktio::Result<()> {
        if self.state.started && self.has(feature::NET_CTRL_RX) {
            self.ctrl_cmd(ctrl::CLASS_RX, ctrl::RX_ALLMULTI, &[on as u8])?;
        }
        self.state.allmulticast = on;
        Ok(())
    }

    fn xstats(&self) -> Vec<XStat> {
        let mut x = self.stats().generic_xstats();
        x.push(XStat::new("ctrl_errors", self.ctrl_errors));
        x.push(XStat::new("device_needs_reset", (self.t.common.status() & status::DEVICE_NEEDS_RESET != 0) as u64));
        x
    }
}

/// Opens the virtio-net device at `addr` through VFIO with `vfio` ([`open_pci`]: its ID checked, bus mastering on),
/// DMA memory from `allocator`.
pub fn open_vfio(vfio: &Vfio, addr: PciAddress, allocator: Allocator) -> pktio::Result<VirtioNet<VfioBar>> {
    let name = addr.to_string();
    let pci = open_pci(vfio, addr, &crate::VIRTIO_DRIVER)?;
    let caps = virtio_caps(&pci.device).map_err(|source| Error::Config { dev: name.clone(), source })?;
    let t = Transport::new(&name, &caps, |n| Ok(Arc::new(pci.device.map_bar(n as u32)?)))?;
    // MSI-X through VFIO (VFIO_DEVICE_SET_IRQS) for `intr_conf.rxq`.
    let device = Arc::new(pci.device);
    let mut port = VirtioNet::new(&name, t, allocator, pci.mapper, Some(Box::new(device.clone())))?;
    port.set_irq_source(device);
    Ok(port)
}
