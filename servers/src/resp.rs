//! RESP2, the Redis wire protocol: an incremental request parser and reply encoders.
//!
//! Requests come as arrays of bulk strings (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) or as inline commands (`GET k\n`,
//! with redis-server's quoting rules); both are accepted, as redis-server does. [`Parser`] keeps its place
//! between calls (array header read, elements read so far), so input split anywhere costs no re-parse, and a
//! pipeline yields one command per call. [`Limits`] bound what one request may make the server hold.

use crate::ProtocolError;

/// Size limits for one request; exceeding one is a protocol error (error reply, then close).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest bulk string (`$<n>`), bytes.
    pub max_bulk_len: usize,
    /// Most elements in one request array (`*<n>`).
    pub max_array_len: usize,
    /// Longest inline command line, and longest `*`/`$` header line, bytes.
    pub max_inline_len: usize,
    /// Most bytes one request may hold: its elements' bytes plus [`ELEMENT_OVERHEAD`] each (so a million
    /// empty elements count too).
    pub max_request_len: usize,
}

/// What one array element costs beyond its bytes (its `Vec` header and allocation), for [`Limits::max_request_len`].
pub const ELEMENT_OVERHEAD: usize = 32;

impl Default for Limits {
    /// Redis's inline limit (64 KiB); bulk, array and request limits far below Redis's 512 MiB so one
    /// connection cannot hold more than 16 MiB of request.
    fn default() -> Self {
        Limits { max_bulk_len: 8 << 20, max_array_len: 1 << 20, max_inline_len: 64 << 10, max_request_len: 16 << 20 }
    }
}

/// Where the parser is inside the current request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between requests.
    Idle,
    /// Inside an array, `remaining` elements still to come.
    Array { remaining: usize },
    /// Read a `$<len>` header; waiting for `len` bytes and CRLF.
    Bulk { remaining: usize, len: usize },
}

/// Outcome of one [`Parser::parse`] call.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole command: its arguments, the command name first.
    Command(Vec<Vec<u8>>),
    /// The input ends inside a request; call again with more.
    NeedMore,
}

/// Incremental RESP2 request parser; one per connection.
#[derive(Debug)]
pub struct Parser {
    limits: Limits,
    state: State,
    args: Vec<Vec<u8>>,
    request_len: usize,
}

impl Parser {
    /// A parser enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        Parser { limits, state: State::Idle, args: Vec::new(), request_len: 0 }
    }

    /// Parses from the start of `buf`, which holds the bytes not yet consumed by earlier calls.
    ///
    /// Returns how many bytes of `buf` it consumed (the caller drops them before the next call, whatever the
    /// outcome) and the outcome. Bytes of a partial header or bulk are left unconsumed until complete.
    pub fn parse(&mut self, buf: &[u8]) -> (usize, Result<Parsed, ProtocolError>) {
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            match self.state {
                State::Idle => {
                    let Some(&first) = rest.first() else { return (pos, Ok(Parsed::NeedMore)) };
                    if first == b'*' {
                        let Some(line) = header_line(rest) else {
                            return self.wait(pos, rest, ProtocolError::MultibulkHeaderTooBig);
                        };
                        pos += line + 2;
                        let n = parse_i64(&rest[1..line]).ok_or(ProtocolError::InvalidMultibulkLength);
                        match n {
                            Err(e) => return (pos, Err(e)),
                            Ok(n) if n > self.limits.max_array_len as i64 => {
                                return (pos, Err(ProtocolError::InvalidMultibulkLength))
                            }
                            // `*0` and `*-1` are empty requests; redis-server skips them.
                            Ok(n) if n <= 0 => continue,
                            Ok(n) => {
                                self.args = Vec::with_capacity((n as usize).min(64));
                                self.request_len = 0;
                                self.state = State::Array { remaining: n as usize };
                            }
                        }
                    } else {
                        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                            return self.wait(pos, rest, ProtocolError::InlineTooBig);
                        };
                        if nl > self.limits.max_inline_len {
                            return (pos + nl + 1, Err(ProtocolError::InlineTooBig));
                        }
                        pos += nl + 1;
                        let line = rest[..nl].strip_suffix(b"\r").unwrap_or(&rest[..nl]);
                        match split_inline(line) {
                            Err(e) => return (pos, Err(e)),
                            Ok(args) if args.is_empty() => continue,
                            Ok(args) => return (pos, Ok(Parsed::Command(args))),
                        }
                    }
                }
                State::Array { remaining: 0 } => {
                    self.state = State::Idle;
                    return (pos, Ok(Parsed::Command(std::mem::take(&mut self.args))));
                }
                State::Array { remaining } => {
                    let Some(&first) = rest.first() else { return (pos, Ok(Parsed::NeedMore)) };
                    if first != b'$' {
                        return (pos, Err(ProtocolError::ExpectedBulk(char::from(first))));
                    }
                    let Some(line) = header_line(rest) else {
                        return self.wait(pos, rest, ProtocolError::BulkHeaderTooBig);
                    };
                    pos += line + 2;
                    let len = parse_i64(&rest[1..line])
                        .filter(|&n| n >= 0 && n as u64 <= self.limits.max_bulk_len as u64)
                        .map(|n| n as usize)
                        .filter(|&n| self.request_len + n + ELEMENT_OVERHEAD <= self.limits.max_request_len);
                    let Some(len) = len else { return (pos, Err(ProtocolError::InvalidBulkLength)) };
                    self.request_len += len + ELEMENT_OVERHEAD;
                    self.state = State::Bulk { remaining, len };
                }
                State::Bulk { remaining, len } => {
                    // The two bytes after the data are skipped unchecked, as redis-server does.
                    if rest.len() < len + 2 {
                        return (pos, Ok(Parsed::NeedMore));
                    }
                    self.args.push(rest[..len].to_vec());
                    pos += len + 2;
                    self.state = State::Array { remaining: remaining - 1 };
                }
            }
        }
    }

    /// What the request being parsed holds or has announced (its elements' declared lengths plus
    /// [`ELEMENT_OVERHEAD`] each); 0 between requests. An upper bound of what it makes the connection hold.
    pub fn request_bytes(&self) -> usize {
        if self.state == State::Idle {
            0
        } else {
            self.request_len
        }
    }

    /// No line end yet: wait for more, unless the line is already longer than any header may be.
    fn wait(&self, pos: usize, rest: &[u8], too_big: ProtocolError) -> (usize, Result<Parsed, ProtocolError>) {
        if rest.len() > self.limits.max_inline_len {
            (pos + rest.len(), Err(too_big))
        } else {
            (pos, Ok(Parsed::NeedMore))
        }
    }
}

/// Index of the `\r` of the first CRLF in `buf`.
fn header_line(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

/// A decimal integer the way Redis's string2ll takes it: optional `-`, digits, no spaces or `+`, no overflow.
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 20 || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            return None;
        }
        if v == 0 {
            return None; // "-0" is refused, as Redis does
        }
        // Negation in u64 then reinterpreting covers i64::MIN, whose magnitude i64 cannot hold.
        Some((v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}

/// Splits an inline command line into arguments with redis-server's rules: blanks separate, `"..."` takes
/// `\n \r \t \b \a \\ \" \xHH` escapes, `'...'` takes `\'`, and a closing quote must end the argument.
fn split_inline(line: &[u8]) -> Result<Vec<Vec<u8>>, ProtocolError> {
    // redis-server splits a C string: a NUL ends the line.
    let line = line.split(|&b| b == 0).next().unwrap_or_default();
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i == line.len() {
            return Ok(args);
        }
        let mut cur = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            let c = line.get(i).copied();
            if in_double {
                match c {
                    None => return Err(ProtocolError::UnbalancedQuotes),
                    Some(b'\\') if i + 3 < line.len() && line[i + 1] == b'x' => {
                        match (hex(line[i + 2]), hex(line[i + 3])) {
                            (Some(h), Some(l)) => {
                                cur.push(h * 16 + l);
                                i += 3;
                            }
                            _ => {
                                cur.push(b'x');
                                i += 1;
                            }
                        }
                    }
                    Some(b'\\') if i + 1 < line.len() => {
                        i += 1;
                        cur.push(match line[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                    }
                    Some(b'"') => {
                        if line.get(i + 1).is_some_and(|&b| !is_space(b)) {
                            return Err(ProtocolError::UnbalancedQuotes);
                        }
                        i += 1;
                        break;
                    }
                    Some(other) => cur.push(other),
                }
            } else if in_single {
                match c {
                    None => return Err(ProtocolError::UnbalancedQuotes),
                    Some(b'\\') if line.get(i + 1) == Some(&b'\'') => {
                        i += 1;
                        cur.push(b'\'');
                    }
                    Some(b'\'') => {
                        if line.get(i + 1).is_some_and(|&b| !is_space(b)) {
                            return Err(ProtocolError::UnbalancedQuotes);
                        }
                        i += 1;
                        break;
                    }
                    Some(other) => cur.push(other),
                }
            } else {
                match c {
                    None | Some(b' ' | b'\n' | b'\r' | b'\t' | 0) => break,
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(other) => cur.push(other),
                }
            }
            i += 1;
        }
        args.push(cur);
    }
}

/// C's isspace in the C locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex(b: u8) -> Option<u8> {
    char::from(b).to_digit(16).map(|d| d as u8)
}

/// Appends `+<s>\r\n`.
pub fn simple(out: &mut Vec<u8>, s: &str) {
    out.push(b'+');
    out.extend_from_slice(s.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Appends `-<msg>\r\n`; `msg` starts with the error code (`ERR`, `WRONGTYPE`); CR and LF become spaces.
pub fn error(out: &mut Vec<u8>, msg: &str) {
    out.push(b'-');
    out.extend(msg.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
    out.extend_from_slice(b"\r\n");
}

/// Appends `:<n>\r\n`.
pub fn integer(out: &mut Vec<u8>, n: i64) {
    out.push(b':');
    decimal(out, n);
    out.extend_from_slice(b"\r\n");
}

/// Appends `$<len>\r\n<bytes>\r\n`.
pub fn bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'$');
    decimal(out, bytes.len() as i64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// Appends the null bulk string `$-1\r\n`.
pub fn null(out: &mut Vec<u8>) {
    out.extend_from_slice(b"$-1\r\n");
}

/// Appends the null array `*-1\r\n`.
pub fn null_array(out: &mut Vec<u8>) {
    out.extend_from_slice(b"*-1\r\n");
}

/// Appends an array header `*<n>\r\n`; the caller appends the `n` elements.
pub fn array_header(out: &mut Vec<u8>, n: usize) {
    out.push(b'*');
    decimal(out, n as i64);
    out.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal without going through `fmt` (replies are on the hot path).
fn decimal(out: &mut Vec<u8>, n: i64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> (Vec<Vec<Vec<u8>>>, Option<ProtocolError>, usize) {
        let mut p = Parser::new(Limits::default());
        let mut cmds = Vec::new();
        let mut off = 0;
        loop {
            let (used, r) = p.parse(&input[off..]);
            off += used;
            match r {
                Ok(Parsed::Command(c)) => cmds.push(c),
                Ok(Parsed::NeedMore) => return (cmds, None, off),
                Err(e) => return (cmds, Some(e), off),
            }
        }
    }

    fn v(args: &[&str]) -> Vec<Vec<u8>> {
        args.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn multibulk_pipeline_skips_empty_arrays() {
        let (cmds, err, used) =
            parse_all(b"*1\r\n$4\r\nPING\r\n*0\r\n*-1\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPI");
        assert_eq!(cmds, vec![v(&["PING"]), v(&["GET", "k"])]);
        assert_eq!(err, None);
        assert_eq!(used, 51, "the partial last request's header is consumed, its partial bulk is not");
    }

    #[test]
    fn inline_quoting_follows_redis() {
        let (cmds, err, _) = parse_all(b"ECHO \"\\x41\\n\"\r\n  \r\nSET 'a\\'b' \"c d\"\nPING\n");
        assert_eq!(cmds, vec![vec![b"ECHO".to_vec(), b"A\n".to_vec()], v(&["SET", "a'b", "c d"]), v(&["PING"])]);
        assert_eq!(err, None);
        assert_eq!(parse_all(b"ECHO \"a\"b\r\n").1, Some(ProtocolError::UnbalancedQuotes));
        assert_eq!(parse_all(b"ECHO \"ab\r\n").1, Some(ProtocolError::UnbalancedQuotes));
        let (cmds, _, _) = parse_all(b"ECHO a\0b\r\n\x0bPING\x0c\r\n");
        // As in redis-server: \v and \f are skipped before an argument but do not end one.
        assert_eq!(cmds, vec![v(&["ECHO", "a"]), v(&["PING\x0c"])], "NUL ends the line");
    }

    #[test]
    fn malformed_headers_are_redis_errors() {
        assert_eq!(parse_all(b"*x\r\n").1, Some(ProtocolError::InvalidMultibulkLength));
        assert_eq!(parse_all(b"*3000000000\r\n").1, Some(ProtocolError::InvalidMultibulkLength));
        assert_eq!(parse_all(b"*1\r\n+PING\r\n").1, Some(ProtocolError::ExpectedBulk('+')));
        assert_eq!(parse_all(b"*1\r\n$-1\r\n").1, Some(ProtocolError::InvalidBulkLength));
        assert_eq!(parse_all(b"*1\r\n$x\r\n").1, Some(ProtocolError::InvalidBulkLength));
        assert_eq!(parse_all(b"*1\r\n$9999999999\r\n").1, Some(ProtocolError::InvalidBulkLength));
        let mut empties = b"*1000000\r\n".to_vec();
        for _ in 0..=(16 << 20) / ELEMENT_OVERHEAD {
            empties.extend_from_slice(b"$0\r\n\r\n");
        }
        let (cmds, err, _) = parse_all(&empties);
        assert!(cmds.is_empty());
        assert_eq!(err, Some(ProtocolError::InvalidBulkLength), "element bookkeeping counts against the request limit");
    }

    #[test]
    fn lines_without_end_are_bounded() {
        let long = vec![b'a'; (64 << 10) + 1];
        assert_eq!(parse_all(&long).1, Some(ProtocolError::InlineTooBig));
        let mut star = b"*".to_vec();
        star.extend_from_slice(&long);
        assert_eq!(parse_all(&star).1, Some(ProtocolError::MultibulkHeaderTooBig));
        assert_eq!(parse_all(&long[..100]), (vec![], None, 0), "a short partial line waits");
    }

    #[test]
    fn integers_parse_like_string2ll() {
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        for bad in [&b"9223372036854775808"[..], b" 1", b"+1", b"01", b"", b"-", b"1.0", b"-0"] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn encoders_write_resp2() {
        let mut out = Vec::new();
        simple(&mut out, "OK");
        error(&mut out, "ERR a\r\nb");
        integer(&mut out, i64::MIN);
        bulk(&mut out, b"hi");
        null(&mut out);
        null_array(&mut out);
        array_header(&mut out, 0);
        assert_eq!(out, b"+OK\r\n-ERR a  b\r\n:-9223372036854775808\r\n$2\r\nhi\r\n$-1\r\n*-1\r\n*0\r\n");
    }
}
