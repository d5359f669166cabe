//! Sessions served over netstack: a [`Server`] per lcore keeps each connection's session and the output the
//! socket has not taken yet, and answers a poll's events. It is the [`netstack::runtime::App`] of `kv-server`
//! and `http-server`; a [`Protocol`] says what a session is and how it is fed.
//!
//! Back-pressure, per request: replies go into the connection's output buffer and from there into the socket's
//! send buffer; what the socket does not take stays queued and is sent on [`EventKind::Writable`], so no reply
//! is dropped. A session stops executing pipelined requests as soon as the unsent output reaches
//! [`ServeOptions::max_unsent`]; the rest of the input stays in the socket's receive buffer (TCP's window then
//! holds the client back), the connection's Readable events are paused, and both resume when the socket drains.
//!
//! Memory per connection is therefore bounded by: the socket's buffers (`tcp.rx_buffer + tcp.tx_buffer`, 128 KiB
//! by default), `max_unsent` plus the one reply that crossed it (the largest reply a request can produce: for
//! kv-server the value or range asked for, for http-server the page), and the part of a request not yet complete
//! (kv-server: at most 16 MiB per request; http-server: 8 KiB of head and 1 MiB of body), which over all
//! connections of an lcore is held to [`ServeOptions::max_pending_total`]: the connection that would pass it is
//! reset. With the defaults and small requests that is about 400 KiB per connection.
//!
//! Time limits: a connection that received and sent nothing for [`ServeOptions::idle_timeout`] is closed, and
//! one that has held part of a request for [`ServeOptions::request_timeout`] gets the protocol's answer (HTTP
//! 408) and is closed. Output buffers of closed connections are kept for new ones, so a request costs no
//! allocation here once the buffers have grown to the replies' size.

use std::time::{Duration, Instant};

use netstack::runtime::App;
use netstack::{Error, Event, EventKind, Handle, Stack};

use crate::SessionAction;

/// Output buffers kept for reuse at most, and the largest capacity kept (bigger ones are freed).
const SPARE_BUFFERS: usize = 1024;
const SPARE_CAPACITY: usize = 64 * 1024;
/// How often idle and request timeouts are checked.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// A server's limits (each a command-line option of the servers, [`ServeOptions::parse_arg`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeOptions {
    /// Unsent output per connection at which the session stops executing requests (`--max-unsent-kb`).
    pub max_unsent: usize,
    /// A connection that received nothing and sent nothing this long is closed; `None`: never
    /// (`--idle-timeout-s`, 0 for none).
    pub idle_timeout: Option<Duration>,
    /// A connection that has held part of a request this long is answered (HTTP: 408) and closed; `None`: never
    /// (`--request-timeout-s`, 0 for none).
    pub request_timeout: Option<Duration>,
    /// Bytes of incomplete requests held over every connection of the lcore; the connection that would pass it
    /// is reset (`--max-pending-mb`).
    pub max_pending_total: usize,
}

impl Default for ServeOptions {
    /// 256 KiB unsent, idle timeout 300 s, no request timeout, 1 GiB of incomplete requests.
    fn default() -> Self {
        ServeOptions {
            max_unsent: 256 * 1024,
            idle_timeout: Some(Duration::from_secs(300)),
            request_timeout: None,
            max_pending_total: 1 << 30,
        }
    }
}

/// The options [`ServeOptions::parse_arg`] knows, for `--help`.
pub const SERVE_USAGE: &str =
    "  --idle-timeout-s N    close a connection idle (nothing received or sent) for N s; 0: never
  --request-timeout-s N close a connection holding part of a request for N s; 0: never
  --max-unsent-kb N     stop executing a connection's requests while N KiB of its output are unsent
  --max-pending-mb N    bytes of incomplete requests held over all connections of an lcore, MiB";

impl ServeOptions {
    /// Applies `flag value` if `flag` is one of [`SERVE_USAGE`]'s; `Ok(false)` if it is not.
    pub fn parse_arg(&mut self, flag: &str, value: Option<&String>) -> netstack::Result<bool> {
        let secs = |v: u64| (v > 0).then(|| Duration::from_secs(v));
        let ranged = |max: u64, unit: &str| -> netstack::Result<u64> {
            let v = value.ok_or_else(|| Error::Usage(format!("{flag} needs a value")))?;
            match v.parse::<u64>() {
                Ok(n) if n <= max => Ok(n),
                _ => Err(Error::Usage(format!("{flag}: `{v}`: expected 0 to {max} {unit}"))),
            }
        };
        match flag {
            "--idle-timeout-s" => self.idle_timeout = secs(ranged(86_400, "seconds")?),
            "--request-timeout-s" => self.request_timeout = secs(ranged(86_400, "seconds")?),
            "--max-unsent-kb" => {
                let kb = ranged(1 << 20, "KiB")?;
                if kb == 0 {
                    return Err(Error::Usage(format!("{flag}: 0: expected 1 to {} KiB", 1 << 20)));
                }
                self.max_unsent = kb as usize * 1024;
            }
            "--max-pending-mb" => {
                let mb = ranged(1 << 20, "MiB")?;
                if mb == 0 {
                    return Err(Error::Usage(format!("{flag}: 0: expected 1 to {} MiB", 1 << 20)));
                }
                self.max_pending_total = mb as usize * (1 << 20);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// A `--port` value: 1 to 65535.
pub fn parse_port(value: Option<&String>) -> netstack::Result<u16> {
    let v = value.ok_or_else(|| Error::Usage("--port needs a value".into()))?;
    v.parse::<u16>()
        .ok()
        .filter(|&p| p != 0)
        .ok_or_else(|| Error::Usage(format!("--port: `{v}`: expected a TCP port from 1 to 65535")))
}

/// What a server speaks: its per-connection session and how input is fed to it.
pub trait Protocol: Send + 'static {
    /// One connection's protocol state.
    type Session: Send;

    /// A session for the connection numbered `id` (counting from 1 per lcore).
    fn open(&mut self, id: u64) -> Self::Session;

    /// Feeds `input` (bytes just received) to `session`, appending replies to `out` and stopping before the next
    /// request once `out` holds `out_limit` bytes; returns the bytes of `input` consumed and what to do next.
    fn feed(
        &mut self,
        session: &mut Self::Session,
        input: &[u8],
        out: &mut Vec<u8>,
        out_limit: usize,
    ) -> (usize, SessionAction);

    /// Bytes the session holds of a request not yet complete (0 between requests).
    fn pending(&self, session: &Self::Session) -> usize;

    /// The connection held part of a request past the request timeout: append the protocol's answer, if it has
    /// one (HTTP's 408). Nothing by default.
    fn timed_out(&mut self, session: &mut Self::Session, out: &mut Vec<u8>) {
        let _ = (session, out);
    }

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
    /// Times a connection's requests waited because its output was backed up.
    pub read_stalls: u64,
    /// Replies the socket could not take at once (queued and sent on Writable).
    pub write_stalls: u64,
    /// Connections closed for idleness.
    pub idle_timeouts: u64,
    /// Connections closed for holding part of a request too long.
    pub request_timeouts: u64,
    /// Connections reset because the lcore's incomplete requests would pass `max_pending_total`.
    pub pending_limit_resets: u64,
}

struct Conn<S> {
    handle: Handle,
    session: S,
    out: Vec<u8>,
    /// Bytes of `out` already handed to the socket.
    sent: usize,
    /// The session asked to close after its output (QUIT, a protocol error, a timeout).
    closing: bool,
    /// The peer sent FIN and everything it sent was read.
    eof: bool,
    /// Readable events are paused while the output is backed up.
    paused: bool,
    /// Last time bytes came in or went out.
    last_active: Instant,
    /// Since when the session has held part of a request, and how many bytes.
    partial_since: Option<Instant>,
    held: usize,
}

/// A TCP server on one lcore's stack: a listener and a session per connection.
pub struct Server<P: Protocol> {
    proto: P,
    options: ServeOptions,
    listener: Handle,
    /// Indexed by [`Handle::index`]; the stored handle tells a reused slot from its predecessor.
    conns: Vec<Option<Conn<P::Session>>>,
    spare: Vec<Vec<u8>>,
    next_id: u64,
    stats: ServeStats,
    /// Bytes of incomplete requests over every connection.
    pending_total: usize,
    next_sweep: Option<Instant>,
}

impl<P: Protocol> Server<P> {
    /// Listens on `port` of `stack` and serves `proto` there with the default [`ServeOptions`].
    pub fn listen(stack: &mut Stack, port: u16, proto: P) -> netstack::Result<Self> {
        Self::listen_with(stack, port, proto, ServeOptions::default())
    }

    /// Listens on `port` of `stack` and serves `proto` there within `options`.
    pub fn listen_with(stack: &mut Stack, port: u16, proto: P, options: ServeOptions) -> netstack::Result<Self> {
        let listener = stack.listen(port)?;
        Ok(Server {
            proto,
            options,
            listener,
            conns: Vec::new(),
            spare: Vec::new(),
            next_id: 1,
            stats: ServeStats::default(),
            pending_total: 0,
            next_sweep: None,
        })
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
            self.open(h, stack.now());
            // Events reported while the connection waited to be accepted (data, the peer's FIN or a reset: the
            // last two are reported once) named a handle we did not know yet: read now, which finds all three.
            self.read(stack, h);
        }
    }

    /// Starts serving the connection `h` just accepted.
    fn open(&mut self, h: Handle, now: Instant) {
        let i = h.index();
        if self.conns.len() <= i {
            self.conns.resize_with(i + 1, || None);
        }
        let session = self.proto.open(self.next_id);
        self.next_id += 1;
        let out = self.spare.pop().unwrap_or_default();
        self.conns[i] = Some(Conn {
            handle: h,
            session,
            out,
            sent: 0,
            closing: false,
            eof: false,
            paused: false,
            last_active: now,
            partial_since: None,
            held: 0,
        });
        self.stats.accepted += 1;
        self.stats.active += 1;
        if self.next_sweep.is_none() && (self.options.idle_timeout.is_some() || self.options.request_timeout.is_some())
        {
            self.next_sweep = Some(now + SWEEP_EVERY);
        }
    }

    fn conn(&mut self, h: Handle) -> Option<&mut Conn<P::Session>> {
        self.conns.get_mut(h.index()).and_then(|c| c.as_mut()).filter(|c| c.handle == h)
    }

    /// Feeds what `h` received to its session, request by request while its output is below the limit, then
    /// sends.
    fn read(&mut self, stack: &mut Stack, h: Handle) {
        let Server { proto, conns, stats, options, pending_total, .. } = self;
        let Some(c) = conns.get_mut(h.index()).and_then(|c| c.as_mut()).filter(|c| c.handle == h) else { return };
        let now = stack.now();
        let mut reset = false;
        while !c.closing && !c.eof {
            if c.out.len() - c.sent >= options.max_unsent {
                // What the socket takes now may bring it under the limit.
                push(stack, h, c, stats);
                if c.out.len() - c.sent >= options.max_unsent {
                    stats.read_stalls += 1;
                    if !c.paused && stack.pause_reading(h).is_ok() {
                        c.paused = true;
                    }
                    break;
                }
            }
            if c.paused && stack.resume_reading(h).is_ok() {
                c.paused = false;
            }
            let limit = c.sent + options.max_unsent;
            let mut fed = None;
            let (session, out) = (&mut c.session, &mut c.out);
            match stack.read_with(h, |data| {
                let (n, action) = proto.feed(session, data, out, limit);
                fed = Some((n, action));
                n
            }) {
                Ok(_) => {}
                Err(Error::WouldBlock) => break,
                // The connection is going away; its Closed event releases it.
                Err(_) => break,
            }
            // The closure did not run: end of stream.
            let Some((n, action)) = fed else {
                c.eof = true;
                break;
            };
            stats.bytes_in += n as u64;
            c.last_active = now;
            if action == SessionAction::CloseAfterFlush {
                c.closing = true;
            }
            let held = proto.pending(&c.session);
            *pending_total = *pending_total - c.held + held;
            c.held = held;
            c.partial_since = if held == 0 { None } else { Some(c.partial_since.unwrap_or(now)) };
            if *pending_total > options.max_pending_total {
                reset = true;
                break;
            }
            // Consumed nothing without being over the limit: nothing more to do now.
            if n == 0 && c.out.len() - c.sent < options.max_unsent {
                break;
            }
        }
        if reset {
            stats.pending_limit_resets += 1;
            let _ = stack.abort(h);
            self.release(h);
            return;
        }
        self.flush(stack, h);
    }

    /// Hands `h`'s unsent output to its socket; closes it once everything went and it is done.
    fn flush(&mut self, stack: &mut Stack, h: Handle) {
        let Server { conns, stats, .. } = self;
        let Some(c) = conns.get_mut(h.index()).and_then(|c| c.as_mut()).filter(|c| c.handle == h) else { return };
        push(stack, h, c, stats);
        if c.sent == c.out.len() && (c.closing || c.eof) {
            let _ = stack.close(h);
            self.release(h);
        }
    }

    fn release(&mut self, h: Handle) {
        if let Some(c) = self.conns.get_mut(h.index()).and_then(|c| c.take_if(|c| c.handle == h)) {
            self.stats.active -= 1;
            self.stats.released += 1;
            self.pending_total -= c.held;
            let mut out = c.out;
            if out.capacity() <= SPARE_CAPACITY && self.spare.len() < SPARE_BUFFERS {
                out.clear();
                self.spare.push(out);
            }
        }
    }

    /// Closes connections past the idle timeout, and answers and closes those past the request timeout.
    fn sweep(&mut self, stack: &mut Stack) {
        let now = stack.now();
        let ServeOptions { idle_timeout, request_timeout, .. } = self.options;
        let mut done = Vec::new();
        for c in self.conns.iter_mut().flatten() {
            if c.closing {
                continue;
            }
            if request_timeout.is_some_and(|t| c.partial_since.is_some_and(|s| now.duration_since(s) >= t)) {
                self.proto.timed_out(&mut c.session, &mut c.out);
                c.closing = true;
                self.stats.request_timeouts += 1;
                done.push(c.handle);
            } else if idle_timeout.is_some_and(|t| now.duration_since(c.last_active) >= t) {
                c.closing = true;
                self.stats.idle_timeouts += 1;
                done.push(c.handle);
            }
        }
        for h in done {
            self.flush(stack, h);
        }
    }
}

/// Writes what the socket takes of `c`'s unsent output.
fn push<S>(stack: &mut Stack, h: Handle, c: &mut Conn<S>, stats: &mut ServeStats) {
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
    if c.sent == c.out.len() {
        c.out.clear();
        c.sent = 0;
    }
    if sent_now > 0 {
        c.last_active = stack.now();
    }
    stats.bytes_out += sent_now as u64;
    stats.write_stalls += u64::from(stalled);
}

impl<P: Protocol> App for Server<P> {
    fn on_events(&mut self, stack: &mut Stack, events: &[Event]) {
        self.proto.tick(stack, &self.stats);
        for e in events {
            match e.kind {
                EventKind::Accepted if e.handle == self.listener => self.accept_all(stack),
                EventKind::Readable => self.read(stack, e.handle),
                EventKind::Writable => {
                    // Sent what waited; requests left waiting while the output was backed up run now.
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
        if let Some(at) = self.next_sweep {
            if stack.now() >= at {
                self.sweep(stack);
                self.next_sweep = (self.stats.active > 0).then(|| stack.now() + SWEEP_EVERY);
            }
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.next_sweep
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
            ("server_idle_timeouts", s.idle_timeouts),
            ("server_request_timeouts", s.request_timeouts),
            ("server_pending_resets", s.pending_limit_resets),
        ] {
            out.push_str(&format!("{name:<24} {v}\n"));
        }
        out + &self.proto.report()
    }
}
