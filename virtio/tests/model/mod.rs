//! A device-side model of a modern virtio-net PCI function, for driving `virtio::VirtioNet` without a VM.
//!
//! It serves one BAR holding the common configuration, ISR, device (net) configuration and notification
//! structures, and plays the device's half of the split virtqueues: on a notification (or when the test injects
//! frames) it walks the available ring and the descriptor chains in driver memory, consumes TX chains (dropping the
//! 12-byte `virtio_net_hdr_v1`) into [`VirtioNetModel::sent`], fills RX chains from injected frames, and returns
//! every chain on the used ring.
//!
//! Every layout fact below is written from the virtio 1.2 specification (docs/hw/virtio.md §2.7 split virtqueues, §4.1.4 PCI
//! structures, docs/hw/virtio.md §5.1.4 and §5.1.6 network device), not taken from the driver crate: a wrong offset in the driver must show up as
//! a disagreement with this model. Driver memory is reached only through a [`nicsim::IovaMap`], so the driver must
//! map every ring and pool it hands over; any access outside the map is a fault the tests see.
//!
//! Registers are served at the width the driver uses; an access of the wrong width or to an undefined offset is
//! recorded in [`VirtioNetModel::errors`] (the spec requires natural-width accesses, 64-bit fields as two 32-bit
//! halves allowed). Processing is synchronous: it runs inside the driver's notify write or the test's `inject`, so
//! tests need no threads and no waiting.
//!
//! Interrupts: MSI-X vectors are mapped through `queue_msix_vector` / `config_msix_vector` (any vector below
//! [`ModelConfig::msix_vectors`], unless [`ModelConfig::refuse_vectors`]; a failed mapping reads back NO_VECTOR,
//! docs/hw/virtio.md §4.1.5.1.2). After writing a used entry the model interrupts the queue's vector only when the
//! driver's suppression allows (docs/hw/virtio.md §2.7.7): with EVENT_IDX when the entry's index equals
//! `used_event`, without it when the available ring's NO_INTERRUPT flag is clear. [`ModelIrqs`] delivers the
//! vectors to eventfds, as VFIO's MSI-X does.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use drvkit::irq::{IrqSource, IrqVectors};
use drvkit::vfio::{EventFd, VfioError};

use nicsim::{FaultLog, IovaMap};
use virtio::regs::{RegisterSpace, VirtioCap};

/// Feature bits (docs/hw/virtio.md §5.1.3, §6).
pub mod bits {
    pub const NET_MTU: u64 = 1 << 3;
    pub const NET_MAC: u64 = 1 << 5;
    pub const NET_MRG_RXBUF: u64 = 1 << 15;
    pub const NET_STATUS: u64 = 1 << 16;
    pub const NET_CTRL_VQ: u64 = 1 << 17;
    pub const RING_EVENT_IDX: u64 = 1 << 29;
    pub const VERSION_1: u64 = 1 << 32;
    pub const ACCESS_PLATFORM: u64 = 1 << 33;
}

/// Device status bits (docs/hw/virtio.md §2.1).
pub mod dev_status {
    pub const ACKNOWLEDGE: u8 = 1;
    pub const DRIVER: u8 = 2;
    pub const DRIVER_OK: u8 = 4;
    pub const FEATURES_OK: u8 = 8;
    pub const NEEDS_RESET: u8 = 64;
    pub const FAILED: u8 = 128;
}

/// Where the structures sit in the model's one BAR (our choice, announced through the capabilities).
pub mod bar {
    pub const NUMBER: u8 = 4;
    pub const LEN: usize = 0x4000;
    pub const COMMON: usize = 0x0000;
    pub const COMMON_LEN: usize = 0x1000;
    pub const ISR: usize = 0x1000;
    pub const DEVICE: usize = 0x2000;
    pub const DEVICE_LEN: usize = 0x100;
    pub const NOTIFY: usize = 0x3000;
    pub const NOTIFY_LEN: usize = 0x1000;
    /// `notify_off_multiplier`: queue q is notified at `NOTIFY + q * NOTIFY_MULT` (its `queue_notify_off` is q).
    pub const NOTIFY_MULT: u32 = 4;
}

/// `queue_msix_vector` / `config_msix_vector`: no vector (docs/hw/virtio.md §4.1.4.3).
pub const NO_VECTOR: u16 = 0xffff;

/// `struct virtio_pci_common_cfg` (docs/hw/virtio.md §4.1.4.3): offset and width of each field.
mod common {
    pub const DEVICE_FEATURE_SELECT: usize = 0x00; // le32
    pub const DEVICE_FEATURE: usize = 0x04; // le32, read-only
    pub const DRIVER_FEATURE_SELECT: usize = 0x08; // le32
    pub const DRIVER_FEATURE: usize = 0x0c; // le32
    pub const CONFIG_MSIX_VECTOR: usize = 0x10; // le16
    pub const NUM_QUEUES: usize = 0x12; // le16, read-only
    pub const DEVICE_STATUS: usize = 0x14; // u8
    pub const CONFIG_GENERATION: usize = 0x15; // u8, read-only
    pub const QUEUE_SELECT: usize = 0x16; // le16
    pub const QUEUE_SIZE: usize = 0x18; // le16
    pub const QUEUE_MSIX_VECTOR: usize = 0x1a; // le16
    pub const QUEUE_ENABLE: usize = 0x1c; // le16
    pub const QUEUE_NOTIFY_OFF: usize = 0x1e; // le16, read-only
    pub const QUEUE_DESC: usize = 0x20; // le64
    pub const QUEUE_DRIVER: usize = 0x28; // le64
    pub const QUEUE_DEVICE: usize = 0x30; // le64
}

/// `struct virtio_net_config` (docs/hw/virtio.md §5.1.4).
mod netcfg {
    pub const MAC: usize = 0; // u8[6]
    pub const STATUS: usize = 6; // le16
    pub const MAX_VIRTQUEUE_PAIRS: usize = 8; // le16
    pub const MTU: usize = 10; // le16
    pub const LINK_UP: u16 = 1;
}

/// Split virtqueue layouts (docs/hw/virtio.md §2.7: descriptor table, available and used rings).
mod ring {
    /// `struct virtq_desc { le64 addr; le32 len; le16 flags; le16 next; }`.
    pub const DESC_SIZE: u64 = 16;
    pub const DESC_F_NEXT: u16 = 1;
    pub const DESC_F_WRITE: u16 = 2;
    pub const DESC_F_INDIRECT: u16 = 4;
    /// `struct virtq_avail { le16 flags; le16 idx; le16 ring[size]; le16 used_event; }`.
    pub const AVAIL_FLAGS: u64 = 0;
    pub const AVAIL_F_NO_INTERRUPT: u16 = 1;
    pub const AVAIL_IDX: u64 = 2;
    pub const AVAIL_RING: u64 = 4;
    /// `struct virtq_used { le16 flags; le16 idx; struct { le32 id; le32 len; } ring[size]; le16 avail_event; }`.
    pub const USED_FLAGS: u64 = 0;
    pub const USED_RING: u64 = 4;
    pub const USED_ELEM_SIZE: u64 = 8;
}

/// `struct virtio_net_hdr_v1` (docs/hw/virtio.md §5.1.6): 12 bytes before every frame; `num_buffers` (le16) at offset 10.
pub const NET_HDR_LEN: usize = 12;
const NET_HDR_NUM_BUFFERS: usize = 10;

/// What the model offers and how big its queues are.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub features: u64,
    pub mac: [u8; 6],
    pub link_up: bool,
    /// Largest size of every queue (`queue_size` after reset).
    pub queue_size: u16,
    /// Refuse FEATURES_OK whatever the driver accepts.
    pub refuse_features: bool,
    /// MSI-X table size (QEMU's virtio-net-pci without MQ has 3).
    pub msix_vectors: u16,
    /// Fail every vector mapping (read back NO_VECTOR), as a device out of interrupt resources.
    pub refuse_vectors: bool,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            features: bits::VERSION_1 | bits::ACCESS_PLATFORM | bits::NET_MAC | bits::NET_STATUS,
            mac: [0x52, 0x54, 0x00, 0x12, 0x34, 0x56],
            link_up: true,
            queue_size: 64,
            refuse_features: false,
            msix_vectors: 3,
            refuse_vectors: false,
        }
    }
}

/// The device side of one virtqueue.
#[derive(Debug, Clone)]
struct Queue {
    size: u16,
    msix: u16,
    enabled: bool,
    desc: u64,
    driver: u64,
    device: u64,
    /// Next available entry to take (free-running, as the driver's index).
    last_avail: u16,
    /// Next used entry to write (free-running).
    used_idx: u16,
    notifies: u64,
}

impl Queue {
    /// A queue as after reset: unmapped from any vector (docs/hw/virtio.md §4.1.5.1.2).
    fn fresh(size: u16) -> Queue {
        Queue {
            size,
            msix: NO_VECTOR,
            enabled: false,
            desc: 0,
            driver: 0,
            device: 0,
            last_avail: 0,
            used_idx: 0,
            notifies: 0,
        }
    }
}

/// Where the model's MSI-X messages go (set by [`ModelIrqs::enable`]).
type IrqSink = Arc<dyn Fn(u16) + Send + Sync>;

struct Sink(Option<IrqSink>);

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Sink(connected)" } else { "Sink(none)" })
    }
}

#[derive(Debug)]
struct State {
    cfg: ModelConfig,
    device_feature_select: u32,
    driver_feature_select: u32,
    driver_features: u64,
    status: u8,
    /// Every value written to `device_status`, in order.
    status_writes: Vec<u8>,
    config_msix: u16,
    /// `config_generation`: bumped at every device-configuration change.
    generation: u8,
    queue_select: u16,
    queues: Vec<Queue>,
    /// TX frames the device consumed (headers stripped), in order.
    sent: Vec<Vec<u8>>,
    /// Frames waiting for RX buffers.
    rx_pending: VecDeque<Vec<u8>>,
    rx_delivered: u64,
    /// Frames dropped because the RX chain was too small.
    rx_too_big: u64,
    /// MSI-X messages sent, per vector.
    interrupts: Vec<u64>,
    sink: Sink,
    errors: Vec<String>,
}

/// The model: a register space for the driver, and a handle for the test.
#[derive(Debug)]
pub struct VirtioNetModel {
    state: Mutex<State>,
    iova: Arc<IovaMap>,
    faults: Arc<FaultLog>,
}

/// One piece of a descriptor chain.
#[derive(Debug, Clone, Copy)]
struct Piece {
    addr: u64,
    len: u32,
    write: bool,
}

impl VirtioNetModel {
    /// A model with one queue pair (RX queue 0, TX queue 1).
    pub fn new(cfg: ModelConfig) -> Arc<VirtioNetModel> {
        let faults = Arc::new(FaultLog::new(false));
        let queues = vec![Queue::fresh(cfg.queue_size); 2];
        let interrupts = vec![0; cfg.msix_vectors as usize];
        Arc::new(VirtioNetModel {
            state: Mutex::new(State {
                cfg,
                device_feature_select: 0,
                driver_feature_select: 0,
                driver_features: 0,
                status: 0,
                status_writes: Vec::new(),
                config_msix: NO_VECTOR,
                generation: 0,
                queue_select: 0,
                queues,
                sent: Vec::new(),
                rx_pending: VecDeque::new(),
                rx_delivered: 0,
                rx_too_big: 0,
                interrupts,
                sink: Sink(None),
                errors: Vec::new(),
            }),
            iova: Arc::new(IovaMap::new(faults.clone())),
            faults,
        })
    }

    /// The vendor capabilities a driver would find in configuration space (docs/hw/virtio.md §4.1.4).
    pub fn capabilities() -> Vec<VirtioCap> {
        let cap = |cfg_type: u8, offset: usize, length: usize, mult: u32, at: u16| VirtioCap {
            cfg_type,
            bar: bar::NUMBER,
            offset: offset as u32,
            length: length as u32,
            notify_off_multiplier: mult,
            cap_offset: at,
        };
        // cfg_type: 1 common, 2 notify, 3 ISR, 4 device (docs/hw/virtio.md §4.1.4).
        vec![
            cap(1, bar::COMMON, bar::COMMON_LEN, 0, 0x40),
            cap(3, bar::ISR, 4, 0, 0x50),
            cap(4, bar::DEVICE, bar::DEVICE_LEN, 0, 0x60),
            cap(2, bar::NOTIFY, bar::NOTIFY_LEN, bar::NOTIFY_MULT, 0x70),
        ]
    }

    /// The IOVA map the driver must map its memory through.
    pub fn iova_map(&self) -> Arc<IovaMap> {
        self.iova.clone()
    }

    /// DMA faults (accesses outside what the driver mapped).
    pub fn faults(&self) -> Vec<nicsim::Fault> {
        self.faults.faults()
    }

    fn st(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Register protocol errors seen so far.
    pub fn errors(&self) -> Vec<String> {
        self.st().errors.clone()
    }

    /// Asserts the driver made no protocol error and no DMA fault.
    pub fn assert_clean(&self) {
        let e = self.errors();
        assert!(e.is_empty(), "device model saw protocol errors: {e:#?}");
        let f = self.faults();
        assert!(f.is_empty(), "device model saw DMA faults: {f:#?}");
    }

    /// Every value the driver wrote to `device_status`.
    pub fn status_writes(&self) -> Vec<u8> {
        self.st().status_writes.clone()
    }

    /// Current device status.
    pub fn status(&self) -> u8 {
        self.st().status
    }

    /// Features the driver accepted (as last written).
    pub fn driver_features(&self) -> u64 {
        self.st().driver_features
    }

    /// Frames sent by the driver, headers stripped, taking them.
    pub fn take_sent(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.st().sent)
    }

    /// Frames delivered into RX buffers so far.
    pub fn rx_delivered(&self) -> u64 {
        self.st().rx_delivered
    }

    /// Frames still waiting for RX buffers.
    pub fn rx_pending(&self) -> usize {
        self.st().rx_pending.len()
    }

    /// Notifications received for queue `q`.
    pub fn notifies(&self, q: u16) -> u64 {
        self.st().queues[q as usize].notifies
    }

    /// Size, enable and addresses the driver programmed for queue `q`.
    pub fn queue_setup(&self, q: u16) -> (u16, bool, u64, u64, u64) {
        let s = self.st();
        let q = &s.queues[q as usize];
        (q.size, q.enabled, q.desc, q.driver, q.device)
    }

    /// MSI-X messages the model sent on vector `v`.
    pub fn interrupts(&self, v: u16) -> u64 {
        self.st().interrupts.get(v as usize).copied().unwrap_or(0)
    }

    /// The vector queue `q` is mapped to (NO_VECTOR: none).
    pub fn queue_vector(&self, q: u16) -> u16 {
        self.st().queues[q as usize].msix
    }

    /// The vector configuration changes are mapped to.
    pub fn config_vector(&self) -> u16 {
        self.st().config_msix
    }

    fn set_sink(&self, sink: Option<IrqSink>) -> bool {
        let mut s = self.st();
        let was = s.sink.0.is_some();
        s.sink = Sink(sink);
        was
    }

    /// A vector mapping as the device takes it: refused (NO_VECTOR) outside the MSI-X table or when the model
    /// refuses all.
    fn map_vector(s: &State, v: u16) -> u16 {
        if v == NO_VECTOR || s.cfg.refuse_vectors || v >= s.cfg.msix_vectors {
            NO_VECTOR
        } else {
            v
        }
    }

    /// After the used entry at index `old` of queue `q` was written: interrupts its vector if the driver's
    /// suppression allows (docs/hw/virtio.md §2.7.7), and checks the suppression fields are as the spec says.
    fn used_notification(&self, s: &mut State, q: usize, old: u16) {
        let queue = s.queues[q].clone();
        // The used index is visible before the driver's suppression is read.
        fence(Ordering::SeqCst);
        let Some(flags) = self.read_u16(queue.driver + ring::AVAIL_FLAGS, "avail flags") else {
            return Self::dma_failed(s, format!("queue {q}: available ring flags not mapped"));
        };
        let wanted = if s.driver_features & bits::RING_EVENT_IDX != 0 {
            if flags != 0 {
                Self::error(s, format!("queue {q}: available ring flags {flags:#x} with EVENT_IDX (must be 0)"));
            }
            let at = queue.driver + ring::AVAIL_RING + 2 * queue.size as u64;
            let Some(used_event) = self.read_u16(at, "used_event") else {
                return Self::dma_failed(s, format!("queue {q}: used_event not mapped"));
            };
            old == used_event
        } else {
            if flags & !ring::AVAIL_F_NO_INTERRUPT != 0 {
                Self::error(s, format!("queue {q}: available ring flags {flags:#x} (0 or 1 only)"));
            }
            flags & ring::AVAIL_F_NO_INTERRUPT == 0
        };
        if wanted {
            Self::msi(s, queue.msix);
        }
    }

    /// Sends MSI-X vector `v`'s message (nothing for NO_VECTOR).
    fn msi(s: &mut State, v: u16) {
        if v == NO_VECTOR {
            return;
        }
        s.interrupts[v as usize] += 1;
        if let Some(sink) = &s.sink.0 {
            sink(v);
        }
    }

    /// The cable: the link status in the device configuration changes, `config_generation` moves, and a live
    /// device signals the configuration-change vector (docs/hw/virtio.md §4.1.5.1.2), which has no suppression.
    pub fn set_link(&self, up: bool) {
        let mut s = self.st();
        if s.cfg.link_up == up {
            return;
        }
        s.cfg.link_up = up;
        s.generation = s.generation.wrapping_add(1);
        if Self::live(&s) {
            let v = s.config_msix;
            Self::msi(&mut s, v);
        }
    }

    /// A frame arrives from the wire: delivered at once if RX buffers are available, else when some are posted.
    pub fn inject(&self, frame: &[u8]) {
        let mut s = self.st();
        s.rx_pending.push_back(frame.to_vec());
        self.process_rx(&mut s);
    }

    fn error(s: &mut State, e: String) {
        s.errors.push(e);
    }

    fn reset(s: &mut State) {
        let size = s.cfg.queue_size;
        for q in s.queues.iter_mut() {
            *q = Queue::fresh(size);
        }
        s.status = 0;
        s.driver_features = 0;
        s.device_feature_select = 0;
        s.driver_feature_select = 0;
        s.queue_select = 0;
        s.config_msix = NO_VECTOR;
    }

    fn live(s: &State) -> bool {
        s.status & dev_status::DRIVER_OK != 0 && s.status & dev_status::NEEDS_RESET == 0
    }

    /// A DMA failure: the device stops and asks for a reset, as a real one would after an IOMMU fault.
    fn dma_failed(s: &mut State, what: String) {
        s.status |= dev_status::NEEDS_RESET;
        Self::error(s, what);
    }

    fn read_u16(&self, iova: u64, what: &str) -> Option<u16> {
        let mut b = [0u8; 2];
        self.iova.read(iova, &mut b, &|| what.to_string()).ok()?;
        Some(u16::from_le_bytes(b))
    }

    /// The chain starting at `head` of queue `q` (descriptors read from driver memory).
    fn chain(&self, s: &mut State, q: usize, head: u16) -> Option<Vec<Piece>> {
        let queue = s.queues[q].clone();
        let mut out = Vec::new();
        let mut id = head;
        loop {
            if id >= queue.size || out.len() >= queue.size as usize {
                Self::error(s, format!("queue {q}: chain from {head} has descriptor {id} or loops"));
                return None;
            }
            let mut raw = [0u8; 16];
            let at = queue.desc + id as u64 * ring::DESC_SIZE;
            if self.iova.read(at, &mut raw, &|| format!("queue {q} descriptor {id}")).is_err() {
                Self::dma_failed(s, format!("queue {q}: descriptor {id} at {at:#x} not mapped"));
                return None;
            }
            let addr = u64::from_le_bytes(raw[0..8].try_into().unwrap());
            let len = u32::from_le_bytes(raw[8..12].try_into().unwrap());
            let flags = u16::from_le_bytes(raw[12..14].try_into().unwrap());
            let next = u16::from_le_bytes(raw[14..16].try_into().unwrap());
            if flags & ring::DESC_F_INDIRECT != 0 {
                Self::error(s, format!("queue {q}: indirect descriptor {id} without INDIRECT_DESC"));
                return None;
            }
            out.push(Piece { addr, len, write: flags & ring::DESC_F_WRITE != 0 });
            if flags & ring::DESC_F_NEXT == 0 {
                return Some(out);
            }
            id = next;
        }
    }

    /// Takes the next available head of queue `q`, if the driver published one.
    fn next_avail(&self, s: &mut State, q: usize) -> Option<u16> {
        let queue = s.queues[q].clone();
        let idx = match self.read_u16(queue.driver + ring::AVAIL_IDX, "avail idx") {
            Some(i) => i,
            None => {
                Self::dma_failed(s, format!("queue {q}: available ring at {:#x} not mapped", queue.driver));
                return None;
            }
        };
        if idx == queue.last_avail {
            return None;
        }
        if idx.wrapping_sub(queue.last_avail) > queue.size {
            Self::error(
                s,
                format!("queue {q}: avail idx {idx} is more than {} ahead of {}", queue.size, queue.last_avail),
            );
            return None;
        }
        let slot = (queue.last_avail % queue.size) as u64;
        let Some(head) = self.read_u16(queue.driver + ring::AVAIL_RING + 2 * slot, "avail ring") else {
            Self::dma_failed(s, format!("queue {q}: available ring entry {slot} not mapped"));
            return None;
        };
        s.queues[q].last_avail = queue.last_avail.wrapping_add(1);
        Some(head)
    }

    /// Returns chain `head` with `len` bytes written: the element first, then the index (one release store of
    /// the flags/idx word, so a driver that reads the index sees the element).
    fn push_used(&self, s: &mut State, q: usize, head: u16, len: u32) {
        let queue = s.queues[q].clone();
        let slot = (queue.used_idx % queue.size) as u64;
        let mut elem = [0u8; 8];
        elem[0..4].copy_from_slice(&(head as u32).to_le_bytes());
        elem[4..8].copy_from_slice(&len.to_le_bytes());
        let at = queue.device + ring::USED_RING + ring::USED_ELEM_SIZE * slot;
        let new_idx = queue.used_idx.wrapping_add(1);
        // flags = 0: the model wants every notification.
        let ok = self.iova.write(at, &elem, &|| format!("queue {q} used element")).is_ok()
            && self
                .iova
                .write_u32(queue.device + ring::USED_FLAGS, (new_idx as u32) << 16, &|| format!("queue {q} used idx"))
                .is_ok();
        if !ok {
            Self::dma_failed(s, format!("queue {q}: used ring at {:#x} not mapped", queue.device));
            return;
        }
        s.queues[q].used_idx = new_idx;
        self.used_notification(s, q, queue.used_idx);
    }

    fn process_tx(&self, s: &mut State, q: usize) {
        while Self::live(s) {
            let Some(head) = self.next_avail(s, q) else { return };
            let Some(chain) = self.chain(s, q, head) else { return };
            if chain.iter().any(|p| p.write) {
                Self::error(s, format!("queue {q}: TX chain {head} has a device-writable descriptor"));
            }
            let mut bytes = Vec::new();
            for p in &chain {
                let mut b = vec![0u8; p.len as usize];
                if self.iova.read(p.addr, &mut b, &|| format!("queue {q} TX buffer")).is_err() {
                    return Self::dma_failed(s, format!("queue {q}: TX buffer {:#x}+{} not mapped", p.addr, p.len));
                }
                bytes.extend_from_slice(&b);
            }
            if bytes.len() < NET_HDR_LEN {
                Self::error(s, format!("queue {q}: TX chain {head} of {} bytes has no header", bytes.len()));
            } else {
                // Without offloads negotiated the header must be all zero (flags, GSO, checksum fields).
                if bytes[..NET_HDR_LEN].iter().any(|&b| b != 0) {
                    Self::error(s, format!("queue {q}: TX header {:?} is not zero", &bytes[..NET_HDR_LEN]));
                }
                s.sent.push(bytes[NET_HDR_LEN..].to_vec());
            }
            self.push_used(s, q, head, 0);
        }
    }

    fn process_rx(&self, s: &mut State) {
        let q = 0;
        if !Self::live(s) || !s.queues[q].enabled {
            return;
        }
        while !s.rx_pending.is_empty() && Self::live(s) {
            let Some(head) = self.next_avail(s, q) else { return };
            let Some(chain) = self.chain(s, q, head) else { return };
            if chain.iter().any(|p| !p.write) {
                Self::error(s, format!("queue {q}: RX chain {head} has a device-readable descriptor"));
                return;
            }
            let frame = s.rx_pending.pop_front().expect("checked non-empty");
            let mut data = vec![0u8; NET_HDR_LEN];
            data[NET_HDR_NUM_BUFFERS..NET_HDR_NUM_BUFFERS + 2].copy_from_slice(&1u16.to_le_bytes());
            data.extend_from_slice(&frame);
            let room: usize = chain.iter().map(|p| p.len as usize).sum();
            if room < data.len() {
                // Without MRG_RXBUF every buffer must hold a whole frame: drop it and give the chain back.
                s.rx_too_big += 1;
                self.push_used(s, q, head, 0);
                continue;
            }
            let mut off = 0;
            for p in &chain {
                if off == data.len() {
                    break;
                }
                let n = (p.len as usize).min(data.len() - off);
                if self.iova.write(p.addr, &data[off..off + n], &|| format!("queue {q} RX buffer")).is_err() {
                    return Self::dma_failed(s, format!("queue {q}: RX buffer {:#x}+{} not mapped", p.addr, p.len));
                }
                off += n;
            }
            s.rx_delivered += 1;
            self.push_used(s, q, head, data.len() as u32);
        }
    }

    fn notify(&self, s: &mut State, offset: usize, value: u16) {
        let q = value as usize;
        if q >= s.queues.len() || offset != q * bar::NOTIFY_MULT as usize {
            return Self::error(s, format!("notify of queue {value} at offset {offset:#x}"));
        }
        s.queues[q].notifies += 1;
        if !s.queues[q].enabled {
            return Self::error(s, format!("notify of disabled queue {q}"));
        }
        if q % 2 == 1 {
            self.process_tx(s, q);
        } else {
            self.process_rx(s);
        }
    }

    fn write_status(&self, s: &mut State, v: u8) {
        s.status_writes.push(v);
        if v == 0 {
            return Self::reset(s);
        }
        // Status bits are only ever added; clearing one takes a reset (0).
        if (s.status & !v) & !dev_status::NEEDS_RESET != 0 {
            Self::error(s, format!("status {v:#x} clears bits of {:#x} without a reset", s.status));
        }
        let mut v = v;
        if v & dev_status::FEATURES_OK != 0 && s.status & dev_status::FEATURES_OK == 0 {
            let ok = !s.cfg.refuse_features
                && s.driver_features & !s.cfg.features == 0
                && s.driver_features & bits::VERSION_1 != 0;
            if !ok {
                v &= !dev_status::FEATURES_OK;
            }
        }
        if v & dev_status::DRIVER_OK != 0 && s.status & dev_status::FEATURES_OK == 0 {
            Self::error(s, "DRIVER_OK before FEATURES_OK".to_string());
        }
        s.status = v | (s.status & dev_status::NEEDS_RESET);
        if Self::live(s) {
            self.process_rx(s);
        }
    }

    fn common_read(&self, s: &mut State, off: usize, width: usize) -> u32 {
        let q = s.queue_select as usize;
        let queue = s.queues.get(q).cloned().unwrap_or_else(|| Queue::fresh(0));
        let v = match (off, width) {
            (common::DEVICE_FEATURE_SELECT, 4) => s.device_feature_select,
            (common::DEVICE_FEATURE, 4) => match s.device_feature_select {
                0 => s.cfg.features as u32,
                1 => (s.cfg.features >> 32) as u32,
                _ => 0,
            },
            (common::DRIVER_FEATURE_SELECT, 4) => s.driver_feature_select,
            (common::DRIVER_FEATURE, 4) => (s.driver_features >> (32 * (s.driver_feature_select & 1))) as u32,
            (common::CONFIG_MSIX_VECTOR, 2) => s.config_msix as u32,
            (common::NUM_QUEUES, 2) => s.queues.len() as u32,
            (common::DEVICE_STATUS, 1) => s.status as u32,
            (common::CONFIG_GENERATION, 1) => s.generation as u32,
            (common::QUEUE_SELECT, 2) => s.queue_select as u32,
            // A queue that does not exist reads as size 0.
            (common::QUEUE_SIZE, 2) => queue.size as u32,
            (common::QUEUE_MSIX_VECTOR, 2) => queue.msix as u32,
            (common::QUEUE_ENABLE, 2) => queue.enabled as u32,
            (common::QUEUE_NOTIFY_OFF, 2) => q as u32,
            // 64-bit fields, read as two 32-bit halves.
            (o, 4) if o & !4 == common::QUEUE_DESC => (queue.desc >> (8 * (o & 4))) as u32,
            (o, 4) if o & !4 == common::QUEUE_DRIVER => (queue.driver >> (8 * (o & 4))) as u32,
            (o, 4) if o & !4 == common::QUEUE_DEVICE => (queue.device >> (8 * (o & 4))) as u32,
            _ => {
                Self::error(s, format!("common config read of {width} bytes at {off:#x}"));
                0
            }
        };
        v
    }

    fn set_half(field: &mut u64, high: bool, v: u32) {
        *field = if high { (*field & 0xffff_ffff) | (v as u64) << 32 } else { (*field & !0xffff_ffff) | v as u64 };
    }

    fn common_write(&self, s: &mut State, off: usize, width: usize, v: u32) {
        let q = s.queue_select as usize;
        let exists = q < s.queues.len();
        let enabled = exists && s.queues[q].enabled;
        let queue_field = off == common::QUEUE_SIZE || (common::QUEUE_DESC..common::QUEUE_DEVICE + 8).contains(&off);
        if queue_field && enabled {
            return Self::error(s, format!("queue {q} reprogrammed at {off:#x} while enabled"));
        }
        if (queue_field || off == common::QUEUE_ENABLE || off == common::QUEUE_MSIX_VECTOR) && !exists {
            return Self::error(s, format!("write at {off:#x} to queue {q}, which does not exist"));
        }
        match (off, width) {
            (common::DEVICE_FEATURE_SELECT, 4) => s.device_feature_select = v,
            (common::DRIVER_FEATURE_SELECT, 4) => s.driver_feature_select = v,
            (common::DRIVER_FEATURE, 4) => {
                if s.status & dev_status::FEATURES_OK != 0 {
                    return Self::error(s, "driver features written after FEATURES_OK".to_string());
                }
                match s.driver_feature_select {
                    0 => Self::set_half(&mut s.driver_features, false, v),
                    1 => Self::set_half(&mut s.driver_features, true, v),
                    n => Self::error(s, format!("driver feature select {n}")),
                }
            }
            (common::CONFIG_MSIX_VECTOR, 2) => s.config_msix = Self::map_vector(s, v as u16),
            (common::DEVICE_STATUS, 1) => self.write_status(s, v as u8),
            (common::QUEUE_SELECT, 2) => s.queue_select = v as u16,
            (common::QUEUE_SIZE, 2) => {
                let v = v as u16;
                if v == 0 || !v.is_power_of_two() || v > s.cfg.queue_size {
                    return Self::error(s, format!("queue {q} size {v} (max {})", s.cfg.queue_size));
                }
                s.queues[q].size = v;
            }
            (common::QUEUE_MSIX_VECTOR, 2) => s.queues[q].msix = Self::map_vector(s, v as u16),
            (common::QUEUE_ENABLE, 2) => {
                if v != 1 {
                    return Self::error(s, format!("queue {q} enable written with {v}"));
                }
                let qu = &s.queues[q];
                // docs/hw/virtio.md §2.7: descriptor table 16-byte, available ring 2-byte, used ring 4-byte aligned.
                if !qu.desc.is_multiple_of(16)
                    || !qu.driver.is_multiple_of(2)
                    || !qu.device.is_multiple_of(4)
                    || qu.desc == 0
                {
                    return Self::error(s, format!("queue {q} enabled with misaligned or missing rings {qu:?}"));
                }
                s.queues[q].enabled = true;
            }
            // 64-bit fields, written as two 32-bit halves.
            (o, 4) if o & !4 == common::QUEUE_DESC => Self::set_half(&mut s.queues[q].desc, o & 4 != 0, v),
            (o, 4) if o & !4 == common::QUEUE_DRIVER => Self::set_half(&mut s.queues[q].driver, o & 4 != 0, v),
            (o, 4) if o & !4 == common::QUEUE_DEVICE => Self::set_half(&mut s.queues[q].device, o & 4 != 0, v),
            _ => Self::error(s, format!("common config write of {width} bytes at {off:#x} ({v:#x})")),
        }
    }

    fn device_read(&self, s: &mut State, off: usize, width: usize) -> u32 {
        match (off, width) {
            (o, 1) if (netcfg::MAC..netcfg::MAC + 6).contains(&o) => s.cfg.mac[o - netcfg::MAC] as u32,
            (netcfg::STATUS, 2) => {
                if s.cfg.link_up {
                    netcfg::LINK_UP as u32
                } else {
                    0
                }
            }
            (netcfg::MAX_VIRTQUEUE_PAIRS, 2) => 1,
            (netcfg::MTU, 2) => 1500,
            _ => {
                Self::error(s, format!("device config read of {width} bytes at {off:#x}"));
                0
            }
        }
    }

    fn read(&self, offset: usize, width: usize) -> u32 {
        let mut s = self.st();
        if !offset.is_multiple_of(width) {
            Self::error(&mut s, format!("unaligned {width}-byte read at {offset:#x}"));
            return 0;
        }
        match offset {
            o if (bar::COMMON..bar::COMMON + bar::COMMON_LEN).contains(&o) => {
                self.common_read(&mut s, o - bar::COMMON, width)
            }
            o if (bar::DEVICE..bar::DEVICE + bar::DEVICE_LEN).contains(&o) => {
                self.device_read(&mut s, o - bar::DEVICE, width)
            }
            // ISR: read-to-clear, and nothing is ever pending: interrupts are MSI-X messages, which leave the ISR
            // unused (docs/hw/virtio.md §4.1.5.1.2).
            o if o == bar::ISR && width == 1 => 0,
            o => {
                Self::error(&mut s, format!("BAR read of {width} bytes at {o:#x}"));
                0
            }
        }
    }

    fn write(&self, offset: usize, width: usize, v: u32) {
        let mut s = self.st();
        if !offset.is_multiple_of(width) {
            return Self::error(&mut s, format!("unaligned {width}-byte write at {offset:#x}"));
        }
        match offset {
            o if (bar::COMMON..bar::COMMON + bar::COMMON_LEN).contains(&o) => {
                self.common_write(&mut s, o - bar::COMMON, width, v)
            }
            o if (bar::NOTIFY..bar::NOTIFY + bar::NOTIFY_LEN).contains(&o) && width == 2 => {
                self.notify(&mut s, o - bar::NOTIFY, v as u16)
            }
            o => Self::error(&mut s, format!("BAR write of {width} bytes at {o:#x} ({v:#x})")),
        }
    }
}

impl RegisterSpace for VirtioNetModel {
    fn read32(&self, offset: usize) -> u32 {
        self.read(offset, 4)
    }
    fn write32(&self, offset: usize, value: u32) {
        self.write(offset, 4, value)
    }
    fn len(&self) -> usize {
        bar::LEN
    }
    fn read16(&self, offset: usize) -> u16 {
        self.read(offset, 2) as u16
    }
    fn write16(&self, offset: usize, value: u16) {
        self.write(offset, 2, value as u32)
    }
    fn read8(&self, offset: usize) -> u8 {
        self.read(offset, 1) as u8
    }
    fn write8(&self, offset: usize, value: u8) {
        self.write(offset, 1, value as u32)
    }
    fn modify32(&self, offset: usize, _clear: u32, _set: u32) {
        self.st().errors.push(format!("read-modify-write at {offset:#x}: virtio registers are written whole"));
    }
}

/// The model's MSI-X vectors delivered to eventfds, as VFIO's MSI-X delivers a device's: the driver's
/// [`IrqSource`]. Like VFIO it refuses to enable vectors twice without a disable between.
#[derive(Debug)]
pub struct ModelIrqs(pub Arc<VirtioNetModel>);

impl IrqSource for ModelIrqs {
    fn max_vectors(&self) -> u32 {
        self.0.st().cfg.msix_vectors as u32
    }

    fn enable(&self, count: u32) -> drvkit::vfio::Result<IrqVectors> {
        let has = self.max_vectors();
        if count == 0 || count > has {
            return Err(VfioError::IrqVectors { device: "a virtio-net model".into(), asked: count, has });
        }
        let fds = (0..count)
            .map(|_| EventFd::new().map(Arc::new))
            .collect::<std::io::Result<IrqVectors>>()
            .map_err(|e| VfioError::os("eventfd for a model's vector", e))?;
        let to = fds.clone();
        let sink: IrqSink = Arc::new(move |v| {
            if let Some(fd) = to.get(v as usize) {
                let _ = fd.signal();
            }
        });
        if self.0.set_sink(Some(sink)) {
            self.0.st().errors.push("MSI-X vectors enabled twice without a disable".into());
        }
        Ok(fds)
    }

    fn disable(&self) -> drvkit::vfio::Result<()> {
        if !self.0.set_sink(None) {
            self.0.st().errors.push("MSI-X vectors disabled while not enabled".into());
        }
        Ok(())
    }
}
