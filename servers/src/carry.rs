//! The bytes of a partial request a session keeps between feeds, and what a bounded feed consumed: shared by
//! the RESP and HTTP sessions.

/// One feed's view of the input: the kept bytes followed by the new input (copied together only when something
/// was kept, so the common case parses `input` in place).
pub(crate) struct Carry {
    buf: Vec<u8>,
    held: usize,
}

impl Carry {
    /// Takes `pending` (the bytes kept by the last feed) for a feed of `input`.
    pub(crate) fn begin(pending: &mut Vec<u8>, input: &[u8]) -> Carry {
        let mut buf = std::mem::take(pending);
        let held = buf.len();
        if held > 0 {
            buf.extend_from_slice(input);
        }
        Carry { buf, held }
    }

    /// The bytes to parse: the kept ones and `input`.
    pub(crate) fn data<'a>(&'a self, input: &'a [u8]) -> &'a [u8] {
        if self.held > 0 {
            &self.buf
        } else {
            input
        }
    }

    /// Ends the feed after `off` bytes of [`Self::data`] were parsed: the rest is kept in `pending` (a partial
    /// request), or, when the feed `stopped` at the output limit, left to the caller (only what came before
    /// `input` is kept). Returns how many bytes of `input` were consumed.
    pub(crate) fn end(mut self, pending: &mut Vec<u8>, input: &[u8], off: usize, stopped: bool) -> usize {
        let consumed = if !stopped {
            self.buf.drain(..off.min(self.buf.len()));
            if self.held == 0 {
                self.buf.extend_from_slice(&input[off..]);
            }
            input.len()
        } else if off >= self.held {
            self.buf.clear();
            off - self.held
        } else {
            self.buf.truncate(self.held);
            self.buf.drain(..off);
            0
        };
        *pending = self.buf;
        consumed
    }
}
