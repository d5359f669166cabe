//! Sessions served over netstack: a [`Server`] per lcore keeps each connection's session and the output the
//! socket has not taken yet, and answers a poll's events. It is the [`netstack::runtime::App`] of `kv-server`
//! and `http-server`; a [`Protocol`] says what a session is and how it is fed.
//!
//! Back-pressure: replies go into the connection's output buffer and from there into the socket's send buffer;
//! what the socket does not take stays queued and is sent on [`EventKind::Writable`], so no reply is dropped.
//! While more than [`MAX_UNSENT`] bytes wait, the connection's input is left in its receive buffer (TCP's window
//! then stops the client). Output buffers of closed connections are kept for new ones, so a request costs no
//! allocation here once the buffers have grown to the replies' size.

use netstack::runtime::App;
use netstack::{Error, Event, EventKind, Handle, Stack};

use crate::SessionAction;

/// Unsent output per connection above which the server stops reading that connection's input.
pub const MAX_UNSENT: usize = 256 * 1024;
/// Output buffers kept for reuse at most, and the largest capacity kept (bigger ones are freed).
const SPARE_BUFFERS: usize = 1024;
const SPARE_CAPACITY: usize = 64 * 1024;

/// What a server speaks: its per-connection session and how input is fed to it.
pub trait Protocol: Send + 'static {
    /// One connection's protocol state.
    type Session: Send;

    /// A session for the connection numbered `id` (counting from 1 per lcore).
    fn open(&mut self, id: u64) -> Self::Session;

    /// Feeds `input` (bytes just received) to `session`, appending replies to `out`.
    fn feed(&mut self, session: &mut Self::Session, input: &[u8], out: &mut Vec<u8>) -> SessionAction;

    /// Called at the start of every poll's event handling and once per poll after it (clock, expiry, status
    /// snapshot): `stack` is the lcore's stack, `stats` the server's connection counters.
    fn tick(&mut self, stack: &Stack, stats: &ServeStats) {
        let _ = (stack, stats);
    }

    /// The protocol's own counters, `name value` lines (printed on Ctrl-C).
    fn report(&self) -> String;
}

/// Connection counters of one [`Server`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServeStats {
    /// Connections accepted.
    pub accepted: u64,
    /// Connections released (closed by us, by the peer, or reset).
    pub released: u64,
    /// Connections held now.
    pub active: u64,
    /// Bytes fed to sessions.
    pub bytes_in: u64,
    /// Bytes handed to sockets.
    pub bytes_out: u64,
    /// Times a connection's input was left unread because its output was backed up.
    pub read_stalls: u64,
    /// Replies the socket could not take at once (queued and sent on Writable).
    pub write_stalls: u64,
}

struct Conn<S> {
    handle: Handle,
    session: S,
    out: Vec<u8>,
    /// Bytes of `out` already handed to the socket.
    sent: usize,
    /// The session asked to close after its output (QUIT, a protocol error).
    closing: bool,
    /// The peer sent FIN and everything it sent was read.
    eof: bool,
}

/// A TCP server on one lcore's stack: a listener and a session per connection.
pub struct Server<P: Protocol> {
    proto: P,
    listener: Handle,
    /// Indexed by [`Handle::index`]; the stored handle tells a reused slot from its predecessor.
    conns: Vec<Option<Conn<P::Session>>>,
    spare: Vec<Vec<u8>>,
    next_id: u64,
    stats: ServeStats,
}

impl<P: Protocol> Server<P> {
    /// Listens on `port` of `stack` and serves `proto` there.
    pub fn listen(stack: &mut Stack, port: u16, proto: P) -> netstack::Result<Self> {
        let listener = stack.listen(port)?;
        Ok(Server { proto, listener, conns: Vec::new(), spare: Vec::new(), next_id: 1, stats: ServeStats::default() })
    }

    /// The connection counters.
    pub fn stats(&self) -> &ServeStats {
        &self.stats
    }

    /// The protocol.
    pub fn protocol(&self) -> &P {
        &self.proto
    }

    fn accept_all(&mut self, stack: &mut Stack) {
        while let Ok(h) = stack.accept(self.listener) {
            self.open(h);
            // Events reported while the connection waited to be accepted (data, the peer's FIN or a reset: the
            // last two are reported once) named a handle we did not know yet: read now, which finds all three.
            self.read(stack, h);
        }
    }

    /// Starts serving the connection `h` just accepted.
    fn open(&mut self, h: Handle) {
        let i = h.index();
        if self.conns.len() <= i {
            self.conns.resize_with(i + 1, || None);
        }
        let session = self.proto.open(self.next_id);
        self.next_id += 1;
        let out = self.spare.pop().unwrap_or_default();
        self.conns[i] = Some(Conn { handle: h, session, out, sent: 0, closing: false, eof: false });
        self.stats.accepted += 1;
        self.stats.active += 1;
    }

    fn conn(&mut self, h: Handle) -> Option<&mut Conn<P::Session>> {
        self.conns.get_mut(h.index()).and_then(|c| c.as_mut()).filter(|c| c.handle == h)
    }

    /// Feeds what `h` received to its session, then sends.
    fn read(&mut self, stack: &mut Stack, h: Handle) {
        let Server { proto, conns, stats, .. } = self;
        let Some(c) = conns.get_mut(h.index()).and_then(|c| c.as_mut()).filter(|c| c.handle == h) else { return };
        while !c.closing && !c.eof {
            if c.out.len() - c.sent > MAX_UNSENT {
                stats.read_stalls += 1;
                break;
            }
            let mut action = SessionAction::Continue;
            let (session, out) = (&mut c.session, &mut c.out);
            match stack.read_with(h, |data| {
                action = proto.feed(session, data, out);
                data.len()
            }) {
                Ok(0) => c.eof = true,
                Ok(n) => stats.bytes_in += n as u64,
                Err(Error::WouldBlock) => break,
                // The connection is going away; its Closed event releases it.
                Err(_) => break,
            }
            if action == SessionAction::CloseAfterFlush {
                c.closing = true;
            }
        }
        self.flush(stack, h);
    }

    /// Hands `h`'s unsent output to its socket; closes it once everything went and it is done.
    fn flush(&mut self, stack: &mut Stack, h: Handle) {
        let Some(c) = self.conn(h) else { return };
        let mut stalled = false;
        let mut sent_now = 0;
        while c.sent < c.out.len() {
            match stack.write(h, &c.out[c.sent..]) {
                Ok(n) => {
                    c.sent += n;
                    sent_now += n;
                }
                Err(Error::WouldBlock) => {
                    stalled = true;
                    break;
                }
                Err(_) => {
                    // The peer can no longer receive: nothing more will go out, so finish the connection.
                    c.sent = c.out.len();
                    c.closing = true;
                }
            }
        }
        let done = c.sent == c.out.len();
        if done {
            c.out.clear();
            c.sent = 0;
        }
        let finished = done && (c.closing || c.eof);
        self.stats.bytes_out += sent_now as u64;
        self.stats.write_stalls += u64::from(stalled);
        if finished {
            let _ = stack.close(h);
            self.release(h);
        }
    }

    fn release(&mut self, h: Handle) {
        if let Some(c) = self.conns.get_mut(h.index()).and_then(|c| c.take_if(|c| c.handle == h)) {
            self.stats.active -= 1;
            self.stats.released += 1;
            let mut out = c.out;
            if out.capacity() <= SPARE_CAPACITY && self.spare.len() < SPARE_BUFFERS {
                out.clear();
                self.spare.push(out);
            }
        }
    }
}

impl<P: Protocol> App for Server<P> {
    fn on_events(&mut self, stack: &mut Stack, events: &[Event]) {
        self.proto.tick(stack, &self.stats);
        for e in events {
            match e.kind {
                EventKind::Accepted if e.handle == self.listener => self.accept_all(stack),
                EventKind::Readable => self.read(stack, e.handle),
                EventKind::Writable => {
                    // Sent what waited; input left unread while the output was backed up is read now.
                    self.flush(stack, e.handle);
                    self.read(stack, e.handle);
                }
                EventKind::PeerClosed => self.read(stack, e.handle),
                EventKind::Closed => {
                    if self.conn(e.handle).is_some() {
                        let _ = stack.close(e.handle);
                        self.release(e.handle);
                    }
                }
                EventKind::Accepted | EventKind::Connected => {}
            }
        }
    }

    fn on_poll(&mut self, stack: &mut Stack) {
        self.proto.tick(stack, &self.stats);
    }

    fn report(&self) -> String {
        let s = &self.stats;
        let mut out = String::new();
        for (name, v) in [
            ("server_accepted", s.accepted),
            ("server_released", s.released),
            ("server_active", s.active),
            ("server_bytes_in", s.bytes_in),
            ("server_bytes_out", s.bytes_out),
            ("server_read_stalls", s.read_stalls),
            ("server_write_stalls", s.write_stalls),
        ] {
            out.push_str(&format!("{name:<24} {v}\n"));
        }
        out + &self.proto.report()
    }
}
