//! A model port's wire: where the frames it transmits go (kept for the test, another model port, a pcap file or a
//! TAP interface) and, for a TAP, where the kernel's frames come from. Plumbing every model shares; nothing here is
//! NIC behaviour. `P` is the model's per-port shared state, which a peer's frames are delivered to.

use std::collections::VecDeque;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crossbeam_queue::SegQueue;
use swports::pcap_file::{self, PcapError, PcapWriter};

use crate::tap::TapWire;

/// Where transmitted frames go.
enum Sink<P> {
    /// Kept for [`Wire::take_captured`].
    Capture,
    /// The RX side of another port.
    Peer(Weak<P>),
    /// A pcap file.
    Pcap(PcapWriter<BufWriter<File>>),
    /// A TAP interface: the kernel on the other end (its frames come back through [`Wire::pump`]).
    Tap(Arc<TapWire>),
}

/// What became of a frame given to [`Wire::send`].
pub(crate) enum Sent<P> {
    /// Kept, written or handed to the kernel (or lost with a peer that is gone, as on a cut cable).
    Done,
    /// For the peer's RX: delivered by the caller, with the wire's lock already released (the peer takes its own).
    Peer(Arc<P>, Vec<u8>),
    /// The pcap file could not be written.
    Failed(PcapError),
}

/// One port's end of the wire.
pub(crate) struct Wire<P> {
    sink: Mutex<Sink<P>>,
    /// Frames kept while unwired: unbounded, pushed one at a time by the model thread.
    captured: SegQueue<Vec<u8>>,
}

impl<P> Default for Wire<P> {
    fn default() -> Self {
        Wire { sink: Mutex::new(Sink::Capture), captured: SegQueue::new() }
    }
}

impl<P> Wire<P> {
    fn sink(&self) -> MutexGuard<'_, Sink<P>> {
        self.sink.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Connects two ports back to back: each one's frames arrive at the other.
    pub(crate) fn connect(a: (&Wire<P>, &Arc<P>), b: (&Wire<P>, &Arc<P>)) {
        *a.0.sink() = Sink::Peer(Arc::downgrade(b.1));
        *b.0.sink() = Sink::Peer(Arc::downgrade(a.1));
    }

    /// Sends frames to a pcap file (created or truncated).
    pub(crate) fn to_pcap(&self, path: impl AsRef<Path>) -> Result<(), PcapError> {
        *self.sink() = Sink::Pcap(PcapWriter::create(path)?);
        Ok(())
    }

    /// Wires to TAP interface `name` (see [`TapWire::open`]); returns the interface's name. The caller wakes its
    /// model thread so that the kernel's frames start being read.
    pub(crate) fn to_tap(&self, name: &str) -> std::io::Result<String> {
        let tap = TapWire::open(name)?;
        let ifname = tap.name().to_string();
        *self.sink() = Sink::Tap(Arc::new(tap));
        Ok(ifname)
    }

    /// Back to keeping frames for [`Wire::take_captured`].
    pub(crate) fn unwire(&self) {
        *self.sink() = Sink::Capture;
    }

    /// Flushes a pcap sink.
    pub(crate) fn flush_pcap(&self) -> Result<(), PcapError> {
        if let Sink::Pcap(w) = &mut *self.sink() {
            w.flush()?;
        }
        Ok(())
    }

    /// The connected peer, if any and still there.
    pub(crate) fn peer(&self) -> Option<Arc<P>> {
        match &*self.sink() {
            Sink::Peer(w) => w.upgrade(),
            _ => None,
        }
    }

    /// Puts one transmitted frame (Ethernet bytes without FCS) on the wire.
    pub(crate) fn send(&self, data: Vec<u8>) -> Sent<P> {
        let mut sink = self.sink();
        match &mut *sink {
            Sink::Capture => self.captured.push(data),
            Sink::Peer(w) => {
                if let Some(peer) = w.upgrade() {
                    return Sent::Peer(peer, data);
                }
            }
            Sink::Pcap(writer) => {
                if let Err(e) = writer.write_packet(pcap_file::now_ns(), &data) {
                    return Sent::Failed(e);
                }
            }
            Sink::Tap(tap) => tap.send(&data),
        }
        Sent::Done
    }

    /// Frames kept while unwired, oldest first; what the model pushes meanwhile waits for the next call.
    pub(crate) fn take_captured(&self) -> Vec<Vec<u8>> {
        let q = &self.captured;
        (0..q.len()).map_while(|_| q.pop()).collect()
    }

    /// Frames the kernel sent into a TAP wire, at most `max`, each handed to `arrive`; returns how many.
    pub(crate) fn pump(&self, max: usize, mut arrive: impl FnMut(Vec<u8>)) -> usize {
        let tap = match &*self.sink() {
            Sink::Tap(tap) => tap.clone(),
            _ => return 0,
        };
        let mut n = 0;
        while n < max {
            let Some(data) = tap.recv() else { break };
            arrive(data);
            n += 1;
        }
        n
    }
}

/// A frame on a wire: Ethernet bytes without FCS, and whether it arrived damaged (`E`: the model's receive errors).
#[derive(Debug, Clone)]
pub(crate) struct WireFrame<E> {
    pub data: Vec<u8>,
    pub error: Option<E>,
}

/// Frames waiting in a port's RX packet buffer, and their bytes (which change together with the frames).
pub(crate) struct Inbound<E> {
    pub frames: VecDeque<WireFrame<E>>,
    pub bytes: usize,
}

impl<E> Default for Inbound<E> {
    fn default() -> Self {
        Inbound { frames: VecDeque::new(), bytes: 0 }
    }
}
