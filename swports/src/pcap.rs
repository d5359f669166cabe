//! `net_pcap`: replays capture files on RX and writes what is sent into capture files, as DPDK's pcap PMD does
//! (without libpcap: see [`crate::pcap_file`]).
//!
//! Devargs:
//! - `rx_pcap=FILE`: one RX queue replays FILE (classic pcap, either byte order, micro- or nanosecond timestamps,
//!   Ethernet link type). Each record is copied into a buffer; records larger than the pool's data room arrive as
//!   chains of buffers. At the end of the file `rx_burst` returns 0. Each start replays from the beginning.
//! - `tx_pcap=FILE`: one TX queue writes every packet it is given into FILE (created or truncated when the port is
//!   opened; classic pcap, microsecond timestamps of the moment of sending; chains are written whole). Each burst
//!   is flushed to the file, as DPDK's pcap PMD does, so that a write error is the burst's. A file is refused when
//!   this or another open pcap port replays it (`rx_pcap` and `tx_pcap` naming one file would truncate the input)
//!   or writes it (two writers lose each other's records): as DPDK, the second open fails.
//! - `infinite_rx=1`: when a file ends, start it again (the file must hold at least one packet). As DPDK's pcap PMD
//!   does, the file is read once at start into memory and replayed from there, each record copied into fresh
//!   buffers per burst (records on 64-byte boundaries, copied as whole chunks: `pcap_replay`); without
//!   `infinite_rx` files are streamed, since they can be large.
//!
//! Repeat `rx_pcap`/`tx_pcap` for more queues: the n-th of each is queue n. With `rx_pcap` alone, TX queues count
//! and drop what they are given (DPDK's behaviour); with `tx_pcap` alone, RX queues receive nothing.
//! Live interfaces (`iface=`, `rx_iface=`, `tx_iface=`) need libpcap and are not supported: use `net_af_packet`.
//!
//! MAC address: 02:70:63:61:70:NN (locally administered, then "pcap" in ASCII), NN counting the pcap ports this
//! process has opened from 0, as DPDK's pcap PMD numbers them, so that what a `mac` forwarding run writes matches
//! DPDK's capture byte for byte.
//!
//! Counters: ipackets/ibytes per record delivered; a corrupt or truncated record ends the file and counts one
//! ierror; a pool running dry counts rx_nombuf and the record is delivered on a later burst; a record needing more
//! buffers than the pool has in all is dropped and counts one ierror (as DPDK's pcap PMD counts a chain it cannot
//! make). opackets/obytes per record written; a failed write or flush (disk full) counts the burst's records as
//! oerrors and frees them.

use pktio::TypedQueues;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mempool::{Mempool, PacketBatch};

use crate::netif::mbuf_from_bytes;
use crate::pcap_claims::Claim;
use crate::pcap_file::{self, PcapError, PcapReader, PcapWriter, RecordHeader, LINKTYPE_ETHERNET};
use crate::pcap_replay::{fits_pool, Replay, ReplayRx};
use pktio::devargs::Devargs;
use pktio::stats::{RxQueueStats, TxQueueStats};
use pktio::MacAddr;
use pktio::PortState;
use pktio::{BurstMode, DevInfo, EthDev, LinkStatus, PortConfig, RxQueue, TxQueue};
use pktio::{Error, Result};

/// Most RX (or TX) files, hence queues, of one pcap port.
pub const MAX_QUEUES: u16 = 16;

/// The first five bytes of every pcap port's MAC address: locally administered (0x02), then "pcap".
pub const MAC_PREFIX: [u8; 5] = [0x02, 0x70, 0x63, 0x61, 0x70];

/// How many pcap ports this process has opened (the last MAC byte; wraps after 256 as DPDK's one-byte index does).
static OPENED: AtomicU8 = AtomicU8::new(0);

/// The next pcap port's MAC address.
fn next_mac() -> MacAddr {
    let n = OPENED.fetch_add(1, Ordering::Relaxed);
    let p = MAC_PREFIX;
    MacAddr([p[0], p[1], p[2], p[3], p[4], n])
}

type FileReader = PcapReader<BufReader<File>>;
type FileWriter = PcapWriter<BufWriter<File>>;
type SharedWriter = Arc<Mutex<FileWriter>>;

fn lock(w: &SharedWriter) -> MutexGuard<'_, FileWriter> {
    w.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A pcap port.
#[derive(Debug)]
pub struct PcapPort {
    state: PortState,
    rx_files: Vec<PathBuf>,
    tx_files: Vec<SharedWriter>,
    infinite_rx: bool,
    /// Opened (or, with `infinite_rx`, loaded) at start, moved into the RX queue when it is taken.
    sources: Vec<Option<RxSource>>,
    pool: Option<Mempool>,
    /// The files it reads and writes, held until it closes (dropped after the writers' last flush).
    _claim: Claim,
}

impl PcapPort {
    /// A pcap port named `name` replaying `rx_files` (queue i replays file i) and writing `tx_files`.
    pub fn new(name: &str, rx_files: &[PathBuf], tx_files: &[PathBuf], infinite_rx: bool) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidConfig { port: name.to_string(), reason };
        if rx_files.is_empty() && tx_files.is_empty() {
            return Err(invalid("net_pcap needs at least one rx_pcap=FILE or tx_pcap=FILE".into()));
        }
        if rx_files.len() > MAX_QUEUES as usize || tx_files.len() > MAX_QUEUES as usize {
            return Err(invalid(format!("at most {MAX_QUEUES} rx_pcap and {MAX_QUEUES} tx_pcap files")));
        }
        for (i, a) in tx_files.iter().enumerate() {
            if tx_files[..i].contains(a) {
                return Err(invalid(format!("tx_pcap={} is given twice", a.display())));
            }
        }
        for path in rx_files {
            let mut reader = open_reader(name, path)?;
            if infinite_rx {
                let mut buf = Vec::new();
                if !matches!(reader.next_into(&mut buf), Ok(Some(_))) {
                    return Err(invalid(format!(
                        "infinite_rx=1 needs packets, and rx_pcap={} has none that can be read",
                        path.display()
                    )));
                }
            }
        }
        // Before any tx file is created or truncated.
        let claim = Claim::new(name, rx_files, tx_files).map_err(invalid)?;
        let writers = tx_files
            .iter()
            .map(|p| PcapWriter::create(p).map(|w| Arc::new(Mutex::new(w))).map_err(|e| pcap_error(name, e)))
            .collect::<Result<Vec<_>>>()?;
        claim.add_created(tx_files);
        let queues_rx = (rx_files.len() as u16).max(1);
        let queues_tx = (tx_files.len() as u16).max(1);
        let mut info = DevInfo::software("net_pcap", name, queues_rx.max(queues_tx));
        info.max_rx_queues = queues_rx;
        info.max_tx_queues = queues_tx;
        info.rx_offload_capa = pktio::offload::RX_SCATTER;
        // Every file is a queue: the default configuration uses them all.
        let config = PortConfig { rx_queues: queues_rx, tx_queues: queues_tx, ..PortConfig::default() };
        info.check(&config)?;
        // Numbered only once nothing can fail any more, so a rejected port takes no number.
        let mut state = PortState::new(info, next_mac(), config);
        state.promiscuous = true;
        Ok(PcapPort {
            state,
            rx_files: rx_files.to_vec(),
            tx_files: writers,
            infinite_rx,
            sources: Vec::new(),
            pool: None,
            _claim: claim,
        })
    }

    /// Opens from devargs (`net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap`).
    pub fn from_devargs(args: &Devargs) -> Result<Self> {
        for live in ["iface", "rx_iface", "rx_iface_in", "tx_iface", "phy_mac"] {
            if args.get(live).is_some() {
                return Err(args.error(format!(
                    "{live}= (live capture) needs libpcap, which this pure-Rust port does not use; open the interface \
                     with net_af_packet,iface=NAME instead"
                )));
            }
        }
        args.check_keys(&["rx_pcap", "tx_pcap", "infinite_rx"])?;
        let rx: Vec<PathBuf> = args.get_all("rx_pcap").map(PathBuf::from).collect();
        let tx: Vec<PathBuf> = args.get_all("tx_pcap").map(PathBuf::from).collect();
        if rx.iter().chain(&tx).any(|p| p.as_os_str().is_empty()) {
            return Err(args.error("rx_pcap= and tx_pcap= need a file name"));
        }
        let infinite = args.flag("infinite_rx", false)?;
        if infinite && rx.is_empty() {
            return Err(args.error("infinite_rx=1 needs an rx_pcap=FILE"));
        }
        if rx.is_empty() && tx.is_empty() {
            return Err(args.error("net_pcap needs at least one rx_pcap=FILE or tx_pcap=FILE"));
        }
        PcapPort::new(&args.name, &rx, &tx, infinite)
    }

    /// Writes buffered TX records to their files.
    pub fn flush(&self) -> Result<()> {
        for w in &self.tx_files {
            lock(w).flush().map_err(|e| pcap_error(self.state.name(), e))?;
        }
        Ok(())
    }
}

fn open_reader(port: &str, path: &PathBuf) -> Result<FileReader> {
    let reader = PcapReader::open(path).map_err(|e| pcap_error(port, e))?;
    if reader.header().linktype != LINKTYPE_ETHERNET {
        return Err(Error::InvalidConfig {
            port: port.to_string(),
            reason: format!(
                "rx_pcap={}: link type {} is not Ethernet (1); only Ethernet captures can be replayed",
                path.display(),
                reader.header().linktype
            ),
        });
    }
    Ok(reader)
}

/// Where an RX queue's records come from.
#[derive(Debug)]
enum RxSource {
    /// Read from the file as the queue goes (a single pass).
    Stream(FileReader),
    /// The whole file, loaded once (`infinite_rx=1`).
    Memory(Replay),
}

/// Reads the whole of `path` into memory; refuses a file with no readable record (nothing to loop over).
fn load_replay(port: &str, path: &PathBuf) -> Result<Replay> {
    Replay::load(open_reader(port, path)?).ok_or_else(|| Error::InvalidConfig {
        port: port.to_string(),
        reason: format!("infinite_rx=1 needs packets, and rx_pcap={} has none that can be read", path.display()),
    })
}

fn pcap_error(port: &str, e: PcapError) -> Error {
    match e {
        PcapError::Io { path, source } => Error::os(format!("{port}: pcap file {}", path.display()), source),
        other => Error::InvalidConfig { port: port.to_string(), reason: other.to_string() },
    }
}

impl TypedQueues for PcapPort {
    type Rx = PcapRxQueue;
    type Tx = PcapTxQueue;

    /// Typed RX queue.
    fn rx_queue_typed(&mut self, queue: u16) -> Result<Self::Rx> {
        let stats = self.state.claim_rx(queue, Some)?;
        let pool = self.pool.clone().ok_or_else(|| Error::NotStarted { port: self.state.name().to_string() })?;
        let source = self.sources.get_mut(queue as usize).and_then(Option::take);
        let (reader, replay) = match source {
            Some(RxSource::Stream(r)) => (Some(r), None),
            Some(RxSource::Memory(m)) => (None, Some(m)),
            None => (None, None),
        };
        let port_id = self.state.port_id;
        Ok(PcapRxQueue {
            reader,
            replay: replay.map(|r| ReplayRx::new(r, pool.clone(), port_id)),
            pool,
            stats,
            port_id,
            buf: Vec::with_capacity(2048),
            pending: None,
            error_counted: false,
        })
    }

    /// Typed TX queue.
    fn tx_queue_typed(&mut self, queue: u16) -> Result<Self::Tx> {
        let stats = self.state.claim_tx(queue, Some)?;
        Ok(PcapTxQueue { sink: self.tx_files.get(queue as usize).cloned(), stats })
    }
}

impl EthDev for PcapPort {
    fn state(&self) -> &PortState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut PortState {
        &mut self.state
    }

    fn start(&mut self, pool: &Mempool) -> Result<()> {
        if self.state.started {
            return Err(Error::Started { port: self.state.name().to_string() });
        }
        let name = self.state.name().to_string();
        let infinite = self.infinite_rx;
        let sources = self
            .rx_files
            .iter()
            .map(|p| {
                if infinite {
                    load_replay(&name, p).map(|r| Some(RxSource::Memory(r)))
                } else {
                    open_reader(&name, p).map(|r| Some(RxSource::Stream(r)))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        self.state.start_with_pool(pool)?;
        self.sources = sources;
        self.pool = Some(pool.clone());
        Ok(())
    }

    fn stop(&mut self) -> Result<()> {
        self.state.stop()?;
        self.sources.clear();
        self.pool = None;
        self.flush()
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

    fn burst_mode(&self) -> BurstMode {
        let rx = if self.infinite_rx { "Scalar, replay from memory" } else { "Scalar, streamed from file" };
        BurstMode { rx, tx: "Scalar" }
    }
}

impl Drop for PcapPort {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// RX side of a pcap port: replays one file.
#[derive(Debug)]
pub struct PcapRxQueue {
    /// Single pass over the file.
    reader: Option<FileReader>,
    /// Endless replay from memory (`infinite_rx=1`).
    replay: Option<ReplayRx>,
    pool: Mempool,
    stats: Arc<RxQueueStats>,
    port_id: u16,
    buf: Vec<u8>,
    /// A record read into `buf` that the pool had no buffer for yet.
    pending: Option<RecordHeader>,
    error_counted: bool,
}

impl PcapRxQueue {
    /// True once the file is exhausted (never with `infinite_rx=1`).
    pub fn at_eof(&self) -> bool {
        self.reader.is_none() && self.replay.is_none() && self.pending.is_none()
    }

    /// The next record into `self.buf`; `None` at the end of the file.
    fn next_record(&mut self) -> Option<RecordHeader> {
        let reader = self.reader.as_mut()?;
        match reader.next_into(&mut self.buf) {
            Ok(Some(h)) => return Some(h),
            Ok(None) => {}
            // A corrupt tail ends the file.
            Err(_) => self.count_error_once(),
        }
        self.reader = None;
        None
    }

    fn count_error_once(&mut self) {
        if !self.error_counted {
            self.stats.errors.add(1);
            self.error_counted = true;
        }
    }

    /// `rx_burst` for `infinite_rx=1`: copies records from memory, wrapping at the end ([`ReplayRx::burst`]).
    #[inline]
    fn replay_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let Some(replay) = self.replay.as_mut() else { return 0 };
        let count = replay.burst(batch);
        if count.wrapped && replay.corrupt_tail() {
            self.count_error_once();
        }
        if count.nombuf {
            self.stats.nombuf.add(1);
        }
        if count.skipped > 0 {
            self.stats.errors.add(count.skipped);
        }
        self.stats.packets.add(count.packets);
        self.stats.bytes.add(count.bytes);
        count.packets as usize
    }
}

impl RxQueue for PcapRxQueue {
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        if self.replay.is_some() {
            return self.replay_burst(batch);
        }
        let mut n = 0;
        let mut bytes = 0u64;
        // Records dropped count against the burst, so that a file of them takes many bursts, not one long one.
        let mut budget = batch.remaining();
        while !batch.is_full() && budget > 0 {
            budget -= 1;
            let hdr = match self.pending.take() {
                Some(h) => h,
                None => match self.next_record() {
                    Some(h) => h,
                    None => break,
                },
            };
            if !fits_pool(&self.pool, self.buf.len()) {
                // Waiting would never end: dropped and counted, as DPDK drops a record it cannot chain.
                self.stats.errors.add(1);
                continue;
            }
            match mbuf_from_bytes(&self.pool, &self.buf) {
                Some(mut m) => {
                    m.set_port(self.port_id);
                    m.set_timestamp(hdr.timestamp_ns);
                    bytes += m.pkt_len() as u64;
                    // Cannot fail: the batch is not full.
                    let _ = batch.push(m);
                    n += 1;
                }
                None => {
                    self.pending = Some(hdr);
                    self.stats.nombuf.add(1);
                    break;
                }
            }
        }
        self.stats.packets.add(n as u64);
        self.stats.bytes.add(bytes);
        n
    }
}

/// TX side of a pcap port: writes one file (or drops, counting, when the port has no file for this queue).
#[derive(Debug)]
pub struct PcapTxQueue {
    sink: Option<SharedWriter>,
    stats: Arc<TxQueueStats>,
}

impl TxQueue for PcapTxQueue {
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let n = batch.len();
        if n == 0 {
            return 0;
        }
        let (mut ok, mut bytes, mut errors) = (0u64, 0u64, 0u64);
        match &self.sink {
            Some(w) => {
                let ts = pcap_file::now_ns();
                let mut w = lock(w);
                let mut failed = false;
                for m in batch.iter() {
                    let len = m.pkt_len();
                    if w.write_segments(ts, len, m.segments().map(|s| s.data)).is_ok() {
                        ok += 1;
                        bytes += len as u64;
                    } else {
                        errors += 1;
                        failed = true;
                    }
                }
                // Flushed per burst, as DPDK's pcap PMD does: a write error (disk full) then belongs to this
                // burst's records, which are counted as errors instead of sent.
                if failed || w.flush().is_err() {
                    errors += ok;
                    (ok, bytes) = (0, 0);
                }
            }
            None => {
                ok = n as u64;
                bytes = batch.iter().map(|m| m.pkt_len() as u64).sum();
            }
        }
        batch.clear();
        self.stats.packets.add(ok);
        self.stats.bytes.add(bytes);
        self.stats.errors.add(errors);
        n
    }
}

impl Drop for PcapTxQueue {
    fn drop(&mut self) {
        if let Some(w) = &self.sink {
            let _ = lock(w).flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only this test opens pcap ports in the library's test binary, so the numbering starts at 0 here.
    #[test]
    fn ports_take_dpdks_mac_addresses_in_opening_order() {
        let dir = std::env::temp_dir().join(format!("pktio-pcap-mac-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = |i: u32| dir.join(format!("out{i}.pcap"));
        // A port that is refused takes no number.
        assert!(PcapPort::new("net_pcap9", &[dir.join("missing.pcap")], &[], false).is_err());
        let a = PcapPort::new("net_pcap0", &[], &[out(0)], false).unwrap();
        let b = PcapPort::new("net_pcap1", &[], &[out(1)], false).unwrap();
        assert_eq!(a.mac_addr().to_string(), "02:70:63:61:70:00");
        assert_eq!(b.mac_addr().to_string(), "02:70:63:61:70:01");
        let c = PcapPort::from_devargs(&Devargs::parse(&format!("eth_pcap7,tx_pcap={}", out(2).display())).unwrap());
        assert_eq!(c.unwrap().mac_addr().0, [0x02, 0x70, 0x63, 0x61, 0x70, 0x02]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
