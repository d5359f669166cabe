//! `net_ring`: ports joined by in-memory rings, zero-copy (buffers move by pointer).
//!
//! Alone, a ring port is a loopback: what queue q sends, queue q receives. Two ports naming the same
//! `link=NAME` form a pair, like a cable: what one sends the other receives.
//!
//! Devargs: `link=NAME` (pair with the other port of that name; not empty), `size=N` (ring slots per queue,
//! default 1024; the same at both ends of a link), `queues=N`
//! (queue pairs, default 1, at most 16; the same at both ends).

use pktio::TypedQueues;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use mempool::ring::Ring;
use mempool::{Mbuf, MbufHeader, Mempool, PacketBatch};

use pktio::devargs::Devargs;
use pktio::stats::{RxQueueStats, TxQueueStats};
use pktio::MacAddr;
use pktio::PortState;
use pktio::Result;
use pktio::{DevInfo, EthDev, LinkStatus, PortConfig, RxQueue, TxQueue};

/// Most queue pairs of a ring port.
pub const MAX_QUEUES: u16 = 16;

/// One direction of one queue: a ring of owned buffers.
pub struct MbufRing {
    ring: Ring<NonNull<MbufHeader>>,
}

// SAFETY: the ring holds owned buffer pointers; a buffer is owned by exactly one side at a time (enqueued by the
// sender, which gives up ownership; dequeued by the receiver, which takes it).
unsafe impl Send for MbufRing {}
// SAFETY: as above; Ring itself is a thread-safe MPMC ring.
unsafe impl Sync for MbufRing {}

impl std::fmt::Debug for MbufRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MbufRing").field("len", &self.ring.len()).finish()
    }
}

impl MbufRing {
    /// A ring of at least `slots` buffers.
    pub fn new(slots: usize) -> Self {
        MbufRing { ring: Ring::new(slots) }
    }

    /// Moves as many packets from the front of `batch` into the ring as fit.
    #[inline]
    pub fn enqueue(&self, batch: &mut PacketBatch) -> usize {
        self.enqueue_at_most(batch, usize::MAX)
    }

    /// Moves up to `max` packets from the front of `batch` into the ring, as many as fit.
    #[inline]
    pub fn enqueue_at_most(&self, batch: &mut PacketBatch, max: usize) -> usize {
        // SAFETY: the ring takes ownership of exactly the `n` buffers it enqueued; the rest stay in the batch.
        unsafe { batch.drain_raw(|raw| self.ring.enqueue_burst(&raw[..raw.len().min(max)])) }
    }

    /// Moves up to `batch.remaining()` packets from the ring into `batch`.
    #[inline]
    pub fn dequeue(&self, batch: &mut PacketBatch) -> usize {
        // SAFETY: each dequeued pointer is an owned buffer that left the ring, now owned by the batch.
        unsafe { batch.fill_raw(|spare| self.ring.dequeue_burst(spare)) }
    }

    /// Buffers waiting.
    pub fn len(&self) -> usize {
        self.ring.len()
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }
}

impl Drop for MbufRing {
    fn drop(&mut self) {
        let mut out = [NonNull::dangling(); 64];
        loop {
            let n = self.ring.dequeue_burst(&mut out);
            if n == 0 {
                break;
            }
            for hdr in &out[..n] {
                // SAFETY: buffers left in the ring are owned by it; freeing each once.
                drop(unsafe { Mbuf::from_raw(*hdr) });
            }
        }
    }
}

/// The rings of a link: `a_to_b[q]` and `b_to_a[q]`, of `size` slots each (as the first end's devargs asked).
#[derive(Debug)]
struct Link {
    a_to_b: Vec<Arc<MbufRing>>,
    b_to_a: Vec<Arc<MbufRing>>,
    size: usize,
}

/// Live links by name, and whether their second end is taken.
type LinkRegistry = Mutex<HashMap<String, (Weak<Link>, bool)>>;

fn links() -> &'static LinkRegistry {
    static LINKS: OnceLock<LinkRegistry> = OnceLock::new();
    LINKS.get_or_init(Default::default)
}

/// A ring port.
#[derive(Debug)]
pub struct RingPort {
    state: PortState,
    /// Where TX queue q sends.
    tx_rings: Vec<Arc<MbufRing>>,
    /// Where RX queue q receives from.
    rx_rings: Vec<Arc<MbufRing>>,
    _link: Arc<Link>,
}

impl RingPort {
    /// A loopback ring port with `queues` queue pairs of `size` slots.
    pub fn loopback(name: &str, queues: u16, size: usize) -> Self {
        let rings: Vec<_> = (0..queues).map(|_| Arc::new(MbufRing::new(size))).collect();
        let link = Arc::new(Link { a_to_b: rings.clone(), b_to_a: rings.clone(), size });
        RingPort::with_rings(name, queues, rings.clone(), rings, link)
    }

    /// Two ring ports joined back to back.
    pub fn pair(name_a: &str, name_b: &str, queues: u16, size: usize) -> (Self, Self) {
        let link = Link::new(queues, size);
        let a = RingPort::with_rings(name_a, queues, link.a_to_b.clone(), link.b_to_a.clone(), link.clone());
        let b = RingPort::with_rings(name_b, queues, link.b_to_a.clone(), link.a_to_b.clone(), link);
        (a, b)
    }

    fn with_rings(name: &str, queues: u16, tx: Vec<Arc<MbufRing>>, rx: Vec<Arc<MbufRing>>, link: Arc<Link>) -> Self {
        let info = DevInfo::software("net_ring", name, queues);
        let seed = name.bytes().fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
        let mut state = PortState::new(info, MacAddr::local_from(seed), PortConfig::default());
        state.promiscuous = true;
        RingPort { state, tx_rings: tx, rx_rings: rx, _link: link }
    }

    /// Opens from devargs (`net_ring0`, `net_ring1,link=wire0`).
    pub fn from_devargs(args: &Devargs) -> Result<Self> {
        args.check_keys(&["link", "size", "queues"])?;
        let size: usize = args.parse_or("size", 1024)?;
        let queues: u16 = args.parse_or("queues", 1)?;
        if size == 0 || size > 1 << 20 {
            return Err(args.error("size must be 1..=1048576"));
        }
        if queues == 0 || queues > MAX_QUEUES {
            return Err(args.error(format!("queues must be 1..={MAX_QUEUES}")));
        }
        let Some(name) = args.get("link") else {
            return Ok(RingPort::loopback(&args.name, queues, size));
        };
        if name.is_empty() {
            return Err(args.error("link= needs a name (link=NAME pairs the two ports that give the same NAME)"));
        }
        let mut links = links().lock().map_err(|_| args.error("ring link registry poisoned"))?;
        match links.get(name).and_then(|(w, b_taken)| Some((w.upgrade()?, *b_taken))) {
            Some((_, true)) => Err(args.error(format!("link {name:?} already joins two ports"))),
            Some((link, false)) => {
                if link.a_to_b.len() != queues as usize {
                    return Err(args.error(format!("link {name:?} has {} queues, not {queues}", link.a_to_b.len())));
                }
                // One ring size per link, as one queue count: the first end made the rings, and a second end with
                // another size (its own or the default) would run on rings it did not ask for.
                if link.size != size {
                    return Err(args.error(format!(
                        "link {name:?} has rings of {} slots, not {size}: give both ends the same size=",
                        link.size
                    )));
                }
                links.insert(name.to_string(), (Arc::downgrade(&link), true));
                Ok(RingPort::with_rings(&args.name, queues, link.b_to_a.clone(), link.a_to_b.clone(), link))
            }
            None => {
                let link = Link::new(queues, size);
                links.insert(name.to_string(), (Arc::downgrade(&link), false));
                Ok(RingPort::with_rings(&args.name, queues, link.a_to_b.clone(), link.b_to_a.clone(), link))
            }
        }
    }
}

impl Link {
    fn new(queues: u16, size: usize) -> Arc<Link> {
        Arc::new(Link {
            a_to_b: (0..queues).map(|_| Arc::new(MbufRing::new(size))).collect(),
            b_to_a: (0..queues).map(|_| Arc::new(MbufRing::new(size))).collect(),
            size,
        })
    }
}

impl TypedQueues for RingPort {
    type Rx = RingRxQueue;
    type Tx = RingTxQueue;

    /// Typed RX queue.
    fn rx_queue_typed(&mut self, queue: u16) -> Result<Self::Rx> {
        let stats = self.state.claim_rx(queue, Some)?;
        Ok(RingRxQueue { ring: self.rx_rings[queue as usize].clone(), stats, port_id: self.state.port_id })
    }

    /// Typed TX queue.
    fn tx_queue_typed(&mut self, queue: u16) -> Result<Self::Tx> {
        let stats = self.state.claim_tx(queue, Some)?;
        Ok(RingTxQueue { ring: self.tx_rings[queue as usize].clone(), stats })
    }
}

impl EthDev for RingPort {
    fn state(&self) -> &PortState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut PortState {
        &mut self.state
    }

    fn start(&mut self, pool: &Mempool) -> Result<()> {
        self.state.start_with_pool(pool)
    }

    fn stop(&mut self) -> Result<()> {
        self.state.stop()
    }

    fn rx_queue(&mut self, queue: u16) -> Result<Box<dyn RxQueue>> {
        Ok(Box::new(self.rx_queue_typed(queue)?))
    }

    fn tx_queue(&mut self, queue: u16) -> Result<Box<dyn TxQueue>> {
        Ok(Box::new(self.tx_queue_typed(queue)?))
    }

    fn link(&self) -> LinkStatus {
        self.state.virtual_link()
    }

    // As DPDK's net_ring: the operations exist, but its table holds one address, so only the default one "adds".
    fn mac_addr_add(&mut self, mac: MacAddr, pool: u32) -> Result<()> {
        self.state.add_mac(mac, pool).map(drop)
    }

    fn mac_addr_remove(&mut self, mac: MacAddr) -> Result<()> {
        self.state.remove_mac(mac).map(drop)
    }
}

/// RX side of a ring port.
#[derive(Debug)]
pub struct RingRxQueue {
    ring: Arc<MbufRing>,
    stats: Arc<RxQueueStats>,
    port_id: u16,
}

impl RxQueue for RingRxQueue {
    #[inline]
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let start = batch.len();
        let n = self.ring.dequeue(batch);
        let got = &mut batch.as_mut_slice()[start..];
        for m in got.iter_mut() {
            m.set_port(self.port_id);
        }
        let bytes = crate::total_len(got);
        self.stats.packets.add(n as u64);
        self.stats.bytes.add(bytes);
        n
    }
}

/// TX side of a ring port.
#[derive(Debug)]
pub struct RingTxQueue {
    ring: Arc<MbufRing>,
    stats: Arc<TxQueueStats>,
}

impl TxQueue for RingTxQueue {
    #[inline]
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let fits = batch.len().min(self.ring.ring.capacity() - self.ring.len());
        let bytes = crate::total_len(&batch.as_slice()[..fits]);
        // Only what was counted: the receiver may free more room meanwhile, but this queue is the ring's only
        // producer, so the room seen above cannot shrink.
        let n = self.ring.enqueue_at_most(batch, fits);
        debug_assert_eq!(n, fits);
        self.stats.packets.add(n as u64);
        self.stats.bytes.add(bytes);
        n
    }
}
