//! Live capture of a running port's RX and/or TX into a pcapng file, started and stopped while the port forwards
//! (what `dpdk-dumpcap` does for DPDK; here driven through the telemetry socket's `/pktio/capture` and
//! `pktio-dumpcap`).
//!
//! The data path: an application keeps a [`QueueTap`] next to each queue it polls and calls
//! [`QueueTap::observe`] inline, after `rx_burst` and before `tx_burst`. While no capture concerns the queue that
//! call is one relaxed load, one compare and one branch taken the same way every burst (no call, no lock, no
//! allocation); a start or a stop changes the compared value, and only then does the queue's thread fetch the new
//! sink (a lock taken once per start or stop, never per burst). While a capture runs, each burst copies up to the
//! snap length of every packet (all its segments) into buffers taken from a lock-free free list and pushes them on a
//! lock-free ring; a writer thread turns them into pcapng blocks and returns the buffers. A full ring or an empty
//! free list drops the copy (counted: the ISB's `ifdrop`), never the packet.
//!
//! Not supported: capture filters (BPF), and queues the application does not tap (testpmd-rs, l2fwd, l3fwd and
//! the netstack servers tap theirs unless run with `--no-telemetry`).

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

use crate::Mbuf;
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
    /// A port no application queue is tapped for.
    #[error("port {port} {dir}: no queue of it is tapped for capture (the application does not poll it, or runs with --no-telemetry)")]
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
            copy_chain(m, self.snaplen, &mut data);
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

/// Replaces `data` with the first `snaplen` bytes of the packet, across its segments.
fn copy_chain(m: &Mbuf, snaplen: usize, data: &mut Vec<u8>) {
    data.clear();
    let mut left = snaplen;
    for seg in m.segments() {
        let n = seg.data.len().min(left);
        data.extend_from_slice(&seg.data[..n]);
        left -= n;
        if left == 0 {
            break;
        }
    }
}

fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// The capture point of one port and direction, shared by the queues tapped for it. Its generation counts the
/// starts and stops that concerned it (it never reaches [`ACTIVE`]).
#[derive(Default)]
struct Point {
    generation: AtomicU64,
    sink: Mutex<Option<Arc<Sink>>>,
}

impl Point {
    fn set(&self, sink: Option<Arc<Sink>>) {
        *self.sink.lock().unwrap_or_else(|e| e.into_inner()) = sink;
        self.generation.fetch_add(1, Ordering::Release);
    }
}

/// Every capture point of the process, by port and direction.
type Points = Mutex<HashMap<(u16, Direction), Arc<Point>>>;

fn points() -> &'static Points {
    static POINTS: OnceLock<Points> = OnceLock::new();
    POINTS.get_or_init(Default::default)
}

fn point(port: u16, dir: Direction) -> Arc<Point> {
    points().lock().unwrap_or_else(|e| e.into_inner()).entry((port, dir)).or_default().clone()
}

/// What [`QueueTap::fast`] holds while its queue copies packets: a value no generation takes, so that every burst
/// goes to the slow path.
const ACTIVE: u64 = u64::MAX;

/// A queue's capture hook, held by the application next to each queue it polls and called inline: after
/// `rx_burst` with what it received, before `tx_burst` with what it offers (what a capture shows as sent is what
/// was offered to the queue, as DPDK's TX callbacks see it; retries of the same packets are not seen again).
///
/// While no capture concerns the queue, [`QueueTap::observe`] is one relaxed load, one compare and one branch
/// that goes the same way every burst: `fast` equals the point's generation only while this queue has no sink and
/// nothing started or stopped since it last looked. Anything else (a start, a stop, a running capture) takes the
/// out-of-line path, which fetches the sink under a lock once per start or stop and copies while it runs.
pub struct QueueTap {
    /// The generation last seen while idle, or [`ACTIVE`].
    fast: u64,
    point: Arc<Point>,
    /// The generation of `sink`.
    seen: u64,
    sink: Option<Arc<Sink>>,
    port: u16,
    dir: Direction,
}

impl QueueTap {
    /// A tap on one queue of `port` in `dir`; from then on a capture of that port and direction may start.
    pub fn new(port: u16, dir: Direction) -> QueueTap {
        let point = point(port, dir);
        // A capture already running for this point is picked up at the first burst (fast != its generation).
        QueueTap { fast: ACTIVE, point, seen: ACTIVE, sink: None, port, dir }
    }

    /// A tap no capture ever reaches: for a loop that keeps the same shape with capture off (it still costs
    /// the idle check when called, so a loop that wants zero cost does not call it at all).
    pub fn detached() -> QueueTap {
        QueueTap { fast: ACTIVE, point: Arc::default(), seen: ACTIVE, sink: None, port: 0, dir: Direction::Rx }
    }

    /// [`QueueTap::new`] for an RX queue.
    pub fn rx(port: u16) -> QueueTap {
        QueueTap::new(port, Direction::Rx)
    }

    /// [`QueueTap::new`] for a TX queue.
    pub fn tx(port: u16) -> QueueTap {
        QueueTap::new(port, Direction::Tx)
    }

    /// Shows one burst to a running capture, if any. Call it for every burst, empty ones included, so that a
    /// stopping capture sees this queue let go of it promptly.
    #[inline(always)]
    pub fn observe(&mut self, packets: &[Mbuf]) {
        if self.point.generation.load(Ordering::Relaxed) != self.fast {
            self.slow(packets);
        }
    }

    #[cold]
    #[inline(never)]
    fn slow(&mut self, packets: &[Mbuf]) {
        if self.point.generation.load(Ordering::Acquire) != self.seen {
            let guard = self.point.sink.lock().unwrap_or_else(|e| e.into_inner());
            self.seen = self.point.generation.load(Ordering::Acquire);
            self.sink = guard.clone();
        }
        match &self.sink {
            Some(sink) => {
                self.fast = ACTIVE;
                if !packets.is_empty() {
                    sink.take(self.port, self.dir, packets);
                }
            }
            None => self.fast = self.seen,
        }
    }
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

/// Makes both directions of `port` capturable before any of its queues is tapped: an application that creates
/// its taps only when forwarding starts calls it when the port starts, so that a capture may be started first.
pub fn announce(port: u16) {
    point(port, Direction::Rx);
    point(port, Direction::Tx);
}

/// True when `port` can be captured in `dir`: a queue of it was tapped or the port [`announce`]d.
pub fn is_capturable(port: u16, dir: Direction) -> bool {
    points().lock().unwrap_or_else(|e| e.into_inner()).contains_key(&(port, dir))
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
        if !is_capturable(port, dir) {
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
    let points: Vec<Arc<Point>> = config.interfaces.iter().map(|&(p, d)| point(p, d)).collect();
    let (s, st, wr) = (sink.clone(), stop.clone(), written.clone());
    let count = config.count;
    let writer = std::thread::Builder::new()
        .name("capture-writer".into())
        .spawn(move || write_loop(w, s, st, wr, points, count))
        .map_err(file_err)?;
    for &(p, d) in &config.interfaces {
        point(p, d).set(Some(sink.clone()));
    }
    *cur = Some(Running { path: config.path.clone(), stop, written, sink, writer });
    Ok(())
}

fn write_loop(
    mut w: PcapngWriter<BufWriter<File>>,
    sink: Arc<Sink>,
    stop: Arc<AtomicBool>,
    written: Arc<AtomicU64>,
    points: Vec<Arc<Point>>,
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
    for p in &points {
        p.set(None);
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
    // Held until the file is closed: no one sees "no capture" while its writer still writes.
    let mut cur = current().lock().unwrap_or_else(|e| e.into_inner());
    let r = cur.take()?;
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
