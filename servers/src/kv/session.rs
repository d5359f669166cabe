//! One client connection of the key-value server, independent of the transport that carries its bytes.

use super::commands::{execute, Conn, Ctx, Flow};
use super::store::Store;
use crate::carry::Carry;
use crate::resp::{self, Limits, Parsed, Parser};
use crate::SessionAction;

/// A connection's protocol state: the parser's place and any unparsed bytes, its name and id.
///
/// The transport calls [`Session::feed`] with each chunk it receives and sends what it appended to `out`.
#[derive(Debug)]
pub struct Session {
    parser: Parser,
    /// Received bytes the parser has not consumed yet (a partial request); bounded by the parser's limits.
    pending: Vec<u8>,
    conn: Conn,
    closing: bool,
}

impl Session {
    /// A session for the connection numbered `id` (what CLIENT ID and HELLO report), with default limits.
    pub fn new(id: u64) -> Self {
        Self::with_limits(id, Limits::default())
    }

    /// A session with explicit request size limits.
    pub fn with_limits(id: u64, limits: Limits) -> Self {
        Session { parser: Parser::new(limits), pending: Vec::new(), conn: Conn { id, name: None }, closing: false }
    }

    /// Consumes `input` (the next bytes received), executes every whole command in it against `store` at time
    /// `now_ms` (milliseconds on the caller's clock, which also times key expiry), and appends each reply to
    /// `out` in order. A partial command is kept for the next call. Pass Unix time in milliseconds if clients
    /// may use SET's EXAT/PXAT (absolute deadlines); EX/PX only need a monotonic clock. Expired keys nobody reads
    /// are removed by [`Store::sweep_expired`], which the server loop calls once per poll.
    ///
    /// Returns [`SessionAction::CloseAfterFlush`] after QUIT, a protocol error (whose error reply is the last
    /// thing in `out`) or an HTTP request (`POST`, `Host:`: Redis's cross-protocol guard, no reply); the session
    /// then ignores further input.
    pub fn feed(&mut self, input: &[u8], now_ms: u64, store: &mut Store, out: &mut Vec<u8>) -> SessionAction {
        self.feed_bounded(input, now_ms, store, out, usize::MAX).1
    }

    /// [`Self::feed`] with backpressure: stops before the next command once `out` holds `out_limit` bytes or
    /// more, and returns how many bytes of `input` it consumed with the action; the caller keeps the rest (in
    /// its socket's receive buffer) and feeds it again once `out` has drained. Nothing is copied for later but a
    /// partial command.
    pub fn feed_bounded(
        &mut self,
        input: &[u8],
        now_ms: u64,
        store: &mut Store,
        out: &mut Vec<u8>,
        out_limit: usize,
    ) -> (usize, SessionAction) {
        if self.closing {
            return (input.len(), SessionAction::CloseAfterFlush);
        }
        // Parse straight from `input` when nothing is pending, so the common case copies nothing.
        let carry = Carry::begin(&mut self.pending, input);
        let data = carry.data(input);
        let mut off = 0;
        let mut stopped = false;
        loop {
            if out.len() >= out_limit && off < data.len() {
                stopped = true;
                break;
            }
            let (used, res) = self.parser.parse(&data[off..]);
            off += used;
            match res {
                Ok(Parsed::Command(mut args)) => {
                    let mut ctx = Ctx { store: &mut *store, now: now_ms, out: &mut *out, conn: &mut self.conn };
                    if execute(&mut ctx, &mut args) == Flow::Close {
                        self.closing = true;
                        break;
                    }
                }
                Ok(Parsed::NeedMore) => break,
                Err(e) => {
                    resp::error(out, &format!("ERR {e}"));
                    self.closing = true;
                    break;
                }
            }
        }
        if self.closing {
            return (input.len(), SessionAction::CloseAfterFlush);
        }
        // What the parser did not take: a partial command is kept; input left after a stop is the caller's.
        let consumed = carry.end(&mut self.pending, input, off, stopped);
        (consumed, SessionAction::Continue)
    }

    /// Bytes received but not yet part of a whole command.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// What the command being received makes the session hold: its unparsed bytes and the elements it has
    /// announced or delivered so far (an upper bound; 0 between commands).
    pub fn held_bytes(&self) -> usize {
        self.pending.len() + self.parser.request_bytes()
    }
}
