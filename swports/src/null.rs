//! `net_null`: a port with nothing behind it. RX hands out fresh buffers of `size` bytes as fast as the pool allows;
//! TX frees what it is given. It measures the framework's own cost, as DPDK's null PMD does.
//!
//! Devargs: `size=N` (packet length, default 64), `copy=0|1` (copy a template packet on RX and the data on TX, to
//! include memory traffic), `no-rx=0|1` (RX returns nothing).

use pktio::TypedQueues;
use std::sync::Arc;

use mempool::{Mempool, PacketBatch, RxRearm};

use pktio::devargs::Devargs;
use pktio::stats::{RxQueueStats, TxQueueStats};
use pktio::MacAddr;
use pktio::PortState;
use pktio::{DevInfo, EthDev, LinkStatus, PortConfig, RxQueue, TxQueue};
use pktio::{Error, Result};

/// Most queues a null port offers.
pub const MAX_QUEUES: u16 = 64;

/// Settings of a null port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NullConfig {
    /// Length of received packets.
    pub size: u16,
    /// Copy data on RX and TX.
    pub copy: bool,
    /// Receive nothing.
    pub no_rx: bool,
}

impl Default for NullConfig {
    fn default() -> Self {
        NullConfig { size: 64, copy: false, no_rx: false }
    }
}

/// A null port.
#[derive(Debug)]
pub struct NullPort {
    state: PortState,
    settings: NullConfig,
    pool: Option<Mempool>,
}

impl NullPort {
    /// A null port named `name`.
    pub fn new(name: &str, settings: NullConfig) -> Self {
        let info = DevInfo::software("net_null", name, MAX_QUEUES);
        let seed = name.bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
        let mut state = PortState::new(info, MacAddr::local_from(seed), PortConfig::default());
        state.promiscuous = true;
        NullPort { state, settings, pool: None }
    }

    /// Opens from devargs (`net_null0,size=64,copy=1`).
    pub fn from_devargs(args: &Devargs) -> Result<Self> {
        args.check_keys(&["size", "copy", "no-rx"])?;
        let size: u16 = args.parse_or("size", 64)?;
        if size == 0 {
            return Err(args.error("size must be at least 1"));
        }
        let settings = NullConfig { size, copy: args.flag("copy", false)?, no_rx: args.flag("no-rx", false)? };
        Ok(NullPort::new(&args.name, settings))
    }
}

impl TypedQueues for NullPort {
    type Rx = NullRxQueue;
    type Tx = NullTxQueue;

    /// Typed RX queue (static dispatch for embedders).
    fn rx_queue_typed(&mut self, queue: u16) -> Result<Self::Rx> {
        let pool = self.pool.clone().ok_or_else(|| Error::NotStarted { port: self.state.name().to_string() })?;
        if self.settings.size > pool.data_room() {
            return Err(self.state.invalid(format!(
                "size={} does not fit the pool's {}-byte data room",
                self.settings.size,
                pool.data_room()
            )));
        }
        let stats = self.state.claim_rx(queue, Some)?;
        let template = vec![0u8; self.settings.size as usize];
        let rearm = pool.rx_rearm(self.state.port_id);
        Ok(NullRxQueue { pool, stats, settings: self.settings, template, rearm })
    }

    /// Typed TX queue.
    fn tx_queue_typed(&mut self, queue: u16) -> Result<Self::Tx> {
        let stats = self.state.claim_tx(queue, Some)?;
        Ok(NullTxQueue { stats, copy: self.settings.copy, sink: vec![0u8; 65536] })
    }
}

impl EthDev for NullPort {
    fn state(&self) -> &PortState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut PortState {
        &mut self.state
    }

    fn start(&mut self, pool: &Mempool) -> Result<()> {
        self.state.start_with_pool(pool)?;
        self.pool = Some(pool.clone());
        Ok(())
    }

    fn stop(&mut self) -> Result<()> {
        self.state.stop()?;
        self.pool = None;
        Ok(())
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
}

/// RX side of a null port.
#[derive(Debug)]
pub struct NullRxQueue {
    pool: Mempool,
    stats: Arc<RxQueueStats>,
    settings: NullConfig,
    template: Vec<u8>,
    /// The pool's rearm word with this port: what every buffer handed out starts with.
    rearm: RxRearm,
}

impl RxQueue for NullRxQueue {
    #[inline]
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        if self.settings.no_rx {
            return 0;
        }
        let n = batch.remaining();
        let start = batch.len();
        if n == 0 {
            return 0;
        }
        let size = self.settings.size;
        // Every header field in one block store per buffer (size fits the data room: checked at queue setup).
        if !batch.alloc_rx(&self.pool, n, self.rearm, size) {
            self.stats.nombuf.add(n as u64);
            return 0;
        }
        if self.settings.copy {
            for m in &mut batch.as_mut_slice()[start..] {
                m.data_mut().copy_from_slice(&self.template);
            }
        }
        self.stats.packets.add(n as u64);
        self.stats.bytes.add(n as u64 * size as u64);
        n
    }
}

/// TX side of a null port.
#[derive(Debug)]
pub struct NullTxQueue {
    stats: Arc<TxQueueStats>,
    copy: bool,
    sink: Vec<u8>,
}

impl TxQueue for NullTxQueue {
    #[inline]
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let n = batch.len();
        if self.copy {
            for m in batch.iter() {
                m.copy_to(&mut self.sink);
            }
        }
        // The bytes are summed in the free's own pass over the headers.
        let bytes = batch.clear_counting_bytes();
        self.stats.packets.add(n as u64);
        self.stats.bytes.add(bytes);
        n
    }
}
