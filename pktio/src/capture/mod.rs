//! Live capture of a running port's RX and/or TX into a pcapng file, started and stopped while the port forwards
//! (what `dpdk-dumpcap` does for DPDK; here driven through the telemetry socket's `/pktio/capture` and
//! `pktio-dumpcap`).
//!
//! The data path: an application wraps the queues it polls with [`wrap_rx`]/[`wrap_tx`]. Each wrapper keeps the
//! generation number of its port and direction's [`Tap`] and, per burst, compares it with the tap's current one:
//! one relaxed load and a branch that is always taken the same way while nothing changes. Only when a capture
//! starts or stops does the queue's thread fetch the new sink (a lock taken once per start/stop, never per burst).
//! While a capture runs, each burst copies up to the snap length of every packet into buffers taken from a
//! lock-free free list and pushes them on a lock-free ring; a writer thread turns them into pcapng blocks and
//! returns the buffers. A full ring or an empty free list drops the copy (counted: the ISB's `ifdrop`), never
//! the packet.
//!
//! Not supported: capture filters (BPF), multi-segment packets beyond their first segment's bytes, and ports
//! whose queues the application does not wrap.

pub mod pcapng;

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;

use crate::{Mbuf, PacketBatch, RxQueue, TxQueue};
use pcapng::PcapngWriter;

/// Which way packets go through a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Received.
    Rx,
    /// Sent.
    Tx,
}

impl Direction {
    fn name(self) -> &'static str {
        match self {
            Direction::Rx => "rx",
            Direction::Tx => "tx",
        }
    }
}

/// Errors from starting a capture.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// Another capture is running.
    #[error("a capture is already running (to {0}); stop it first")]
    Busy(PathBuf),
    /// Nothing to capture.
    #[error("no port or direction to capture: give at least one port and rx and/or tx")]
    Empty,
    /// A port no application queue was wrapped for.
    #[error("port {port} {dir}: no queue of it is wrapped for capture (the application does not poll it)")]
    UnknownPort {
        /// Port id.
        port: u16,
        /// rx or tx.
        dir: &'static str,
    },
    /// The output file.
    #[error("cannot write {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What one record carries from a queue thread to the writer.
struct Record {
    interface: u32,
    ts_ns: u64,
    orig_len: u32,
    data: Vec<u8>,
}

/// One interface (port and direction) of a running capture.
struct Interface {
    id: u32,
    recv: AtomicU64,
    drop: AtomicU64,
}

/// A running capture, as the queue threads see it.
struct Sink {
    full: ArrayQueue<Record>,
    free: ArrayQueue<Vec<u8>>,
    snaplen: usize,
    /// Packets still to take; `u64::MAX`: no limit.
    remaining: AtomicU64,
    interfaces: HashMap<(u16, Direction), Interface>,
}

impl Sink {
    /// Claims one packet of the count limit; false once it is exhausted.
    fn claim(&self) -> bool {
        let mut left = self.remaining.load(Ordering::Relaxed);
        loop {
            match left {
                0 => return false,
                u64::MAX => return true,
                n => match self.remaining.compare_exchange_weak(n, n - 1, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return true,
                    Err(now) => left = now,
                },
            }
        }
    }

    fn take(&self, port: u16, dir: Direction, packets: &[Mbuf]) {
        let Some(iface) = self.interfaces.get(&(port, dir)) else { return };
        let ts_ns = now_ns();
        // Counted per burst, not per packet: one shared update each.
        let (mut recv, mut drop) = (0u64, 0u64);
        for m in packets {
            if !self.claim() {
                break;
            }
            recv += 1;
            let Some(mut data) = self.free.pop() else {
                drop += 1;
                continue;
            };
            let bytes = m.data();
            data.clear();
            data.extend_from_slice(&bytes[..bytes.len().min(self.snaplen)]);
            let rec = Record { interface: iface.id, ts_ns, orig_len: m.pkt_len(), data };
            if let Err(rec) = self.full.push(rec) {
                drop += 1;
                let _ = self.free.push(rec.data);
            }
        }
        iface.recv.fetch_add(recv, Ordering::Relaxed);
        if drop > 0 {
            iface.drop.fetch_add(drop, Ordering::Relaxed);
        }
    }
}

fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// The capture point of one port and direction, shared by the queues wrapped for it.
#[derive(Default)]
pub struct Tap {
    generation: AtomicU64,
    sink: Mutex<Option<Arc<Sink>>>,
}

impl Tap {
    fn set(&self, sink: Option<Arc<Sink>>) {
        *self.sink.lock().unwrap_or_else(|e| e.into_inner()) = sink;
        self.generation.fetch_add(1, Ordering::Release);
    }
}

/// Every tap of the process, by port and direction.
type Taps = Mutex<HashMap<(u16, Direction), Arc<Tap>>>;

fn taps() -> &'static Taps {
    static TAPS: OnceLock<Taps> = OnceLock::new();
    TAPS.get_or_init(Default::default)
}

fn tap(port: u16, dir: Direction) -> Arc<Tap> {
    taps().lock().unwrap_or_else(|e| e.into_inner()).entry((port, dir)).or_default().clone()
}

/// A queue's view of its tap: the generation it last saw and the sink of that generation.
struct Hook {
    port: u16,
    dir: Direction,
    tap: Arc<Tap>,
    seen: u64,
    sink: Option<Arc<Sink>>,
}

impl Hook {
    fn new(port: u16, dir: Direction) -> Hook {
        Hook { port, dir, tap: tap(port, dir), seen: 0, sink: None }
    }

    #[inline(always)]
    fn observe(&mut self, packets: &[Mbuf]) {
        // The one check per burst while no capture starts or stops.
        if self.tap.generation.load(Ordering::Acquire) != self.seen {
            self.refresh();
        }
        if let Some(sink) = &self.sink {
            sink.take(self.port, self.dir, packets);
        }
    }

    #[cold]
    fn refresh(&mut self) {
        let guard = self.tap.sink.lock().unwrap_or_else(|e| e.into_inner());
        self.seen = self.tap.generation.load(Ordering::Acquire);
        self.sink = guard.clone();
    }
}

/// An RX queue whose received packets a capture can see.
pub struct CapturedRx {
    inner: Box<dyn RxQueue>,
    hook: Hook,
}

impl RxQueue for CapturedRx {
    #[inline]
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let before = batch.len();
        let n = self.inner.rx_burst(batch);
        if n > 0 {
            self.hook.observe(&batch.as_slice()[before..]);
        }
        n
    }
}

/// A TX queue whose sent packets a capture can see (those offered to the queue and accepted by it).
pub struct CapturedTx {
    inner: Box<dyn TxQueue>,
    hook: Hook,
}

impl TxQueue for CapturedTx {
    #[inline]
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        // Copied before sending, since the queue takes the buffers: what is captured is what was offered to the
        // queue (as DPDK's TX capture callbacks see it); packets it refuses and the caller retries are seen again.
        if !batch.is_empty() {
            self.hook.observe(batch.as_slice());
        }
        self.inner.tx_burst(batch)
    }
}

/// Wraps RX queue of port `port` so that captures can see it.
pub fn wrap_rx(port: u16, queue: Box<dyn RxQueue>) -> Box<dyn RxQueue> {
    Box::new(CapturedRx { inner: queue, hook: Hook::new(port, Direction::Rx) })
}

/// Wraps TX queue of port `port` so that captures can see it.
pub fn wrap_tx(port: u16, queue: Box<dyn TxQueue>) -> Box<dyn TxQueue> {
    Box::new(CapturedTx { inner: queue, hook: Hook::new(port, Direction::Tx) })
}

/// What to capture.
#[derive(Debug, Clone)]
pub struct CaptureConfig {
    /// Ports and directions, each one pcapng interface.
    pub interfaces: Vec<(u16, Direction)>,
    /// Bytes kept of each packet.
    pub snaplen: u32,
    /// Stop after this many packets (all interfaces together); `None`: until stopped.
    pub count: Option<u64>,
    /// The pcapng file to write.
    pub path: PathBuf,
    /// Records in flight between the queues and the writer.
    pub ring_size: usize,
}

impl CaptureConfig {
    /// Defaults as dpdk-dumpcap's: snap length 262144 bytes, no count limit, a 2048-record ring.
    pub fn new(interfaces: Vec<(u16, Direction)>, path: impl Into<PathBuf>) -> CaptureConfig {
        CaptureConfig { interfaces, snaplen: 262_144, count: None, path: path.into(), ring_size: 2048 }
    }
}

/// Counters of a capture: packets seen, copies dropped, packets written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Packets the capture saw.
    pub received: u64,
    /// Copies lost to a full ring.
    pub dropped: u64,
    /// Packets written to the file.
    pub written: u64,
}

struct Running {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    written: Arc<AtomicU64>,
    sink: Arc<Sink>,
    writer: JoinHandle<std::io::Result<()>>,
}

fn current() -> &'static Mutex<Option<Running>> {
    static CURRENT: OnceLock<Mutex<Option<Running>>> = OnceLock::new();
    CURRENT.get_or_init(Default::default)
}

/// True when `port` has a queue wrapped in `dir` (an application polls it).
pub fn is_wrapped(port: u16, dir: Direction) -> bool {
    taps().lock().unwrap_or_else(|e| e.into_inner()).contains_key(&(port, dir))
}

/// Starts the process's capture (one at a time). `names` gives each port's device name for the interface blocks.
pub fn start(config: &CaptureConfig, names: &dyn Fn(u16) -> String) -> Result<(), CaptureError> {
    let mut cur = current().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = cur.as_ref() {
        if !r.writer.is_finished() {
            return Err(CaptureError::Busy(r.path.clone()));
        }
    }
    // A finished capture (count reached) is collected first.
    if let Some(r) = cur.take() {
        let _ = finish(r);
    }
    if config.interfaces.is_empty() {
        return Err(CaptureError::Empty);
    }
    for &(port, dir) in &config.interfaces {
        if !is_wrapped(port, dir) {
            return Err(CaptureError::UnknownPort { port, dir: dir.name() });
        }
    }
    let file_err = |source| CaptureError::File { path: config.path.clone(), source };
    let file = File::create(&config.path).map_err(file_err)?;
    let mut w = PcapngWriter::new(BufWriter::new(file), "pktio-rs capture").map_err(file_err)?;
    let mut interfaces = HashMap::new();
    for &(port, dir) in &config.interfaces {
        let name = names(port);
        let id = w.interface(&name, &format!("port {port} {}", dir.name()), config.snaplen).map_err(file_err)?;
        interfaces.insert((port, dir), Interface { id, recv: AtomicU64::new(0), drop: AtomicU64::new(0) });
    }
    let ring = config.ring_size.max(1);
    let free = ArrayQueue::new(ring);
    let snaplen = config.snaplen as usize;
    for _ in 0..ring {
        let _ = free.push(Vec::with_capacity(snaplen.min(16384)));
    }
    let sink = Arc::new(Sink {
        full: ArrayQueue::new(ring),
        free,
        snaplen,
        remaining: AtomicU64::new(config.count.unwrap_or(u64::MAX)),
        interfaces,
    });
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let taps: Vec<Arc<Tap>> = config.interfaces.iter().map(|&(p, d)| tap(p, d)).collect();
    let (s, st, wr) = (sink.clone(), stop.clone(), written.clone());
    let count = config.count;
    let writer = std::thread::Builder::new()
        .name("capture-writer".into())
        .spawn(move || write_loop(w, s, st, wr, taps, count))
        .map_err(file_err)?;
    for &(p, d) in &config.interfaces {
        tap(p, d).set(Some(sink.clone()));
    }
    *cur = Some(Running { path: config.path.clone(), stop, written, sink, writer });
    Ok(())
}

fn write_loop(
    mut w: PcapngWriter<BufWriter<File>>,
    sink: Arc<Sink>,
    stop: Arc<AtomicBool>,
    written: Arc<AtomicU64>,
    taps: Vec<Arc<Tap>>,
    count: Option<u64>,
) -> std::io::Result<()> {
    let start_ns = now_ns();
    let drain = |w: &mut PcapngWriter<BufWriter<File>>| -> std::io::Result<bool> {
        let mut any = false;
        while let Some(rec) = sink.full.pop() {
            w.packet(rec.interface, rec.ts_ns, rec.orig_len, &rec.data)?;
            let _ = sink.free.push(rec.data);
            written.fetch_add(1, Ordering::Relaxed);
            any = true;
        }
        Ok(any)
    };
    loop {
        let any = drain(&mut w)?;
        let done = count.is_some_and(|c| written.load(Ordering::Relaxed) >= c);
        if done || stop.load(Ordering::Acquire) {
            break;
        }
        if !any {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    // Detach, then wait (bounded) for every queue to drop its handle, so no copy lands after the last drain.
    for t in &taps {
        t.set(None);
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    // Ours, the Running's, and the queue threads' until their next burst.
    while Arc::strong_count(&sink) > 2 && Instant::now() < deadline {
        drain(&mut w)?;
        std::thread::sleep(Duration::from_millis(1));
    }
    drain(&mut w)?;
    let end_ns = now_ns();
    let mut ifaces: Vec<&Interface> = sink.interfaces.values().collect();
    ifaces.sort_by_key(|i| i.id);
    for i in ifaces {
        let (recv, drop) = (i.recv.load(Ordering::Relaxed), i.drop.load(Ordering::Relaxed));
        w.statistics(i.id, start_ns, end_ns, recv, drop)?;
    }
    w.into_inner()?;
    Ok(())
}

fn stats_of(sink: &Sink, written: &AtomicU64) -> CaptureStats {
    let (mut received, mut dropped) = (0, 0);
    for i in sink.interfaces.values() {
        received += i.recv.load(Ordering::Relaxed);
        dropped += i.drop.load(Ordering::Relaxed);
    }
    CaptureStats { received, dropped, written: written.load(Ordering::Relaxed) }
}

fn finish(r: Running) -> std::io::Result<CaptureStats> {
    r.stop.store(true, Ordering::Release);
    let res = r.writer.join().unwrap_or_else(|_| Err(std::io::Error::other("capture writer panicked")));
    res.map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", r.path.display())))?;
    Ok(stats_of(&r.sink, &r.written))
}

/// Stops the running capture, writes its statistics blocks and closes the file. `None`: no capture was running.
pub fn stop() -> Option<std::io::Result<(PathBuf, CaptureStats)>> {
    let r = current().lock().unwrap_or_else(|e| e.into_inner()).take()?;
    let path = r.path.clone();
    Some(finish(r).map(|s| (path, s)))
}

/// The capture's state: its file, counters and whether it is still writing (false once its count is reached).
pub fn status() -> Option<(PathBuf, CaptureStats, bool)> {
    let cur = current().lock().unwrap_or_else(|e| e.into_inner());
    cur.as_ref().map(|r| (r.path.clone(), stats_of(&r.sink, &r.written), !r.writer.is_finished()))
}

/// Parses `rx`, `tx` or `both` (`rxtx`).
pub fn parse_directions(text: &str) -> Option<Vec<Direction>> {
    match text {
        "rx" => Some(vec![Direction::Rx]),
        "tx" => Some(vec![Direction::Tx]),
        "both" | "rxtx" => Some(vec![Direction::Rx, Direction::Tx]),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
