//! One HTTP client connection, independent of the transport that carries its bytes.

use super::parse::{parse_partial, Limits, Parsed, Request};
use crate::carry::Carry;
use crate::SessionAction;

/// What the server serves: the index page's bytes (built once, of a configurable size).
#[derive(Debug, Clone)]
pub struct Site {
    index: Vec<u8>,
}

impl Site {
    /// A site whose index page is an HTML document of exactly `index_size` bytes (just filler bytes when
    /// smaller than the HTML skeleton), so benchmarks choose the response size.
    pub fn new(index_size: usize) -> Self {
        let head = b"<!DOCTYPE html>\n<html><head><title>pktio servers</title></head><body><pre>\n";
        let tail = b"\n</pre></body></html>\n";
        let mut index = Vec::with_capacity(index_size);
        if index_size >= head.len() + tail.len() {
            index.extend_from_slice(head);
            let fill = index_size - head.len() - tail.len();
            index.extend((0..fill).map(|i| if i % 64 == 63 { b'\n' } else { b'a' + (i % 26) as u8 }));
            index.extend_from_slice(tail);
        } else {
            index.resize(index_size, b'x');
        }
        Site { index }
    }

    /// The index page's bytes.
    pub fn index(&self) -> &[u8] {
        &self.index
    }
}

/// A connection's state: bytes of a request not yet complete, and whether it is closing.
#[derive(Debug, Default)]
pub struct Session {
    limits: Limits,
    pending: Vec<u8>,
    closing: bool,
    requests: u64,
    /// The interim 100 (Continue) went out for the request whose body is awaited.
    continue_sent: bool,
    /// Responses sent per code of [`STATUS_CODES`] since [`Session::take_responses`] last took them.
    responses: [u64; STATUS_CODES.len()],
}

/// Every status code a session answers with, in the order of [`Session::take_responses`].
pub const STATUS_CODES: [u16; 10] = [200, 400, 404, 405, 408, 413, 417, 431, 501, 505];

fn status_slot(code: u16) -> usize {
    STATUS_CODES.iter().position(|&c| c == code).unwrap_or(0)
}

impl Session {
    /// A session with default limits (8 KiB head, 1 MiB body).
    pub fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    /// A session with explicit limits.
    pub fn with_limits(limits: Limits) -> Self {
        Session { limits, ..Default::default() }
    }

    /// Consumes `input` (the next bytes received), answers every whole request in it in order by appending to
    /// `out`, and keeps a partial request for the next call. `/status` lists `status` as `name value` lines.
    /// A request whose head asks `Expect: 100-continue` gets the interim `100 Continue` as soon as its head is
    /// in (unless its body is refused, which answers at once).
    ///
    /// Returns [`SessionAction::CloseAfterFlush`] after a response that closes (the client asked, HTTP/1.0
    /// without keep-alive, or an error status: 400, 413, 417, 431, 501, 505); further input is then ignored.
    pub fn feed(&mut self, input: &[u8], site: &Site, status: &[(&str, u64)], out: &mut Vec<u8>) -> SessionAction {
        self.feed_bounded(input, site, status, out, usize::MAX).1
    }

    /// [`Self::feed`] with backpressure: stops before the next request once `out` holds `out_limit` bytes or
    /// more, and returns how many bytes of `input` it consumed with the action; the caller keeps the rest and
    /// feeds it again once `out` has drained.
    pub fn feed_bounded(
        &mut self,
        input: &[u8],
        site: &Site,
        status: &[(&str, u64)],
        out: &mut Vec<u8>,
        out_limit: usize,
    ) -> (usize, SessionAction) {
        if self.closing {
            return (input.len(), SessionAction::CloseAfterFlush);
        }
        let carry = Carry::begin(&mut self.pending, input);
        let data = carry.data(input);
        let mut off = 0;
        let mut stopped = false;
        while off < data.len() {
            if out.len() >= out_limit {
                stopped = true;
                break;
            }
            match parse_partial(&data[off..], &self.limits) {
                Ok(Parsed::Complete(req, used)) => {
                    off += used;
                    self.requests += 1;
                    self.continue_sent = false;
                    let code = respond(&req, site, status, out);
                    self.responses[status_slot(code)] += 1;
                    if !req.keep_alive {
                        self.closing = true;
                        break;
                    }
                }
                Ok(Parsed::Head(waiting)) => {
                    if waiting.expects_continue && !self.continue_sent {
                        out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                        self.continue_sent = true;
                    }
                    break;
                }
                Ok(Parsed::Partial) => break,
                Err(e) => {
                    self.error_response(e.http_status(), &format!("{e}\n"), out);
                    break;
                }
            }
        }
        if self.closing {
            return (input.len(), SessionAction::CloseAfterFlush);
        }
        let consumed = carry.end(&mut self.pending, input, off, stopped);
        (consumed, SessionAction::Continue)
    }

    /// The connection waited too long for the rest of a request: answers 408 (Request Timeout) and closes.
    pub fn timed_out(&mut self, out: &mut Vec<u8>) -> SessionAction {
        if !self.closing {
            self.error_response(408, "request timeout\n", out);
        }
        SessionAction::CloseAfterFlush
    }

    fn error_response(&mut self, code: u16, body: &str, out: &mut Vec<u8>) {
        self.responses[status_slot(code)] += 1;
        write_response(out, code, "text/plain", body.as_bytes(), false, false, &[]);
        self.closing = true;
    }

    /// Bytes received but not yet part of a whole request (bounded by the head and body limits).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Requests answered so far (errors excluded).
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Responses sent per status code (in the order of [`STATUS_CODES`]) since the last call, and resets them:
    /// a server adds them to its totals after each feed.
    pub fn take_responses(&mut self) -> [u64; STATUS_CODES.len()] {
        std::mem::take(&mut self.responses)
    }
}

/// Appends the response to `req` and returns its status code.
fn respond(req: &Request<'_>, site: &Site, status: &[(&str, u64)], out: &mut Vec<u8>) -> u16 {
    let path = req.target.split('?').next().unwrap_or_default();
    let head_only = req.method == "HEAD";
    let keep = req.keep_alive;
    // HTTP/1.0 clients only keep the connection if the response says so.
    let say_keep = keep && req.minor_version == 0;
    let known = matches!(path, "/" | "/index.html" | "/status");
    if known && req.method != "GET" && !head_only {
        let body = b"method not allowed\n";
        write_response(out, 405, "text/plain", body, keep, say_keep, &[("Allow", "GET, HEAD")]);
        return 405;
    }
    let (code, ctype, body): (u16, &str, std::borrow::Cow<'_, [u8]>) = match path {
        "/" | "/index.html" => (200, "text/html", site.index().into()),
        "/status" => {
            let mut text = String::new();
            for (name, value) in status {
                text.push_str(&format!("{name} {value}\n"));
            }
            (200, "text/plain", text.into_bytes().into())
        }
        _ => (404, "text/plain", b"not found\n"[..].into()),
    };
    if head_only {
        write_head(out, code, ctype, body.len(), keep, say_keep, &[]);
    } else {
        write_response(out, code, ctype, &body, keep, say_keep, &[]);
    }
    code
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        417 => "Expectation Failed",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

fn write_head(
    out: &mut Vec<u8>,
    code: u16,
    ctype: &str,
    len: usize,
    keep: bool,
    say_keep: bool,
    extra: &[(&str, &str)],
) {
    // Pieces and digits appended directly: this runs for every response, so no `format!` allocation.
    out.extend_from_slice(b"HTTP/1.1 ");
    push_decimal(out, code as usize);
    out.push(b' ');
    out.extend_from_slice(reason(code).as_bytes());
    out.extend_from_slice(b"\r\nServer: pktio-servers\r\nContent-Type: ");
    out.extend_from_slice(ctype.as_bytes());
    out.extend_from_slice(b"\r\nContent-Length: ");
    push_decimal(out, len);
    out.extend_from_slice(b"\r\n");
    for (k, v) in extra {
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !keep {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if say_keep {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

fn write_response(
    out: &mut Vec<u8>,
    code: u16,
    ctype: &str,
    body: &[u8],
    keep: bool,
    say_keep: bool,
    extra: &[(&str, &str)],
) {
    write_head(out, code, ctype, body.len(), keep, say_keep, extra);
    out.extend_from_slice(body);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(s: &mut Session, site: &Site, input: &[u8]) -> (String, SessionAction) {
        let mut out = Vec::new();
        let a = s.feed(input, site, &[("rx_packets", 7), ("connections", 2)], &mut out);
        (String::from_utf8(out).unwrap(), a)
    }

    #[test]
    fn index_is_exactly_the_configured_size() {
        for size in [0, 10, 100, 4096, 100_000] {
            assert_eq!(Site::new(size).index().len(), size);
        }
    }

    #[test]
    fn serves_index_status_and_404_pipelined() {
        let site = Site::new(128);
        let mut s = Session::new();
        let req = b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /status HTTP/1.1\r\nHost: a\r\n\r\nGET /nope HTTP/1.1\r\nHost: a\r\n\r\n";
        let (out, action) = feed_all(&mut s, &site, req);
        assert_eq!(action, SessionAction::Continue);
        let idx = String::from_utf8(site.index().to_vec()).unwrap();
        let want = format!(
            "HTTP/1.1 200 OK\r\nServer: pktio-servers\r\nContent-Type: text/html\r\nContent-Length: 128\r\n\r\n{idx}\
             HTTP/1.1 200 OK\r\nServer: pktio-servers\r\nContent-Type: text/plain\r\nContent-Length: 27\r\n\r\n\
             rx_packets 7\nconnections 2\n\
             HTTP/1.1 404 Not Found\r\nServer: pktio-servers\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\n\
             not found\n"
        );
        assert_eq!(out, want);
        assert_eq!(s.requests(), 3);
        let mut want = [0u64; STATUS_CODES.len()];
        want[status_slot(200)] = 2;
        want[status_slot(404)] = 1;
        assert_eq!(s.take_responses(), want);
        assert_eq!(s.take_responses(), [0; STATUS_CODES.len()], "taken counts start again from zero");
    }

    #[test]
    fn http10_and_connection_close_end_the_connection() {
        let site = Site::new(10);
        let (out, a) = feed_all(&mut Session::new(), &site, b"GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n");
        assert_eq!(a, SessionAction::CloseAfterFlush);
        assert_eq!(out.matches("HTTP/1.1 200").count(), 1, "nothing after the closing response");
        assert!(out.contains("Connection: close\r\n"));
        let (out, a) = feed_all(&mut Session::new(), &site, b"HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        assert_eq!(a, SessionAction::Continue);
        assert!(out.ends_with("Content-Length: 10\r\nConnection: keep-alive\r\n\r\n"), "{out}");
    }

    #[test]
    fn errors_answer_and_close() {
        let site = Site::new(10);
        for (req, code) in [
            (&b"garbage\r\n\r\n"[..], "400 Bad Request"),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n", "413 Content Too Large"),
        ] {
            let mut s = Session::new();
            let (out, a) = feed_all(&mut s, &site, req);
            assert_eq!(a, SessionAction::CloseAfterFlush);
            assert!(out.starts_with(&format!("HTTP/1.1 {code}\r\n")), "{out}");
            let counted = code[..3].parse::<u16>().unwrap();
            assert_eq!(s.take_responses()[status_slot(counted)], 1, "{code} counted");
            assert!(out.contains("Connection: close\r\n"));
        }
        let mut s = Session::new();
        let mut a = SessionAction::Continue;
        let mut out = String::new();
        for _ in 0..100 {
            let (o, act) = feed_all(&mut s, &site, b"GET / HTTP/1.1\r\nX-Long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
            out.push_str(&o);
            a = act;
            if a == SessionAction::CloseAfterFlush {
                break;
            }
        }
        assert_eq!(a, SessionAction::CloseAfterFlush, "an endless head is cut off");
        assert!(out.starts_with("HTTP/1.1 431 "), "{out}");
        assert!(s.pending.len() <= Limits::default().max_head_len + 200);
    }

    #[test]
    fn expect_100_continue_gets_the_interim_response_once_then_the_answer() {
        let site = Site::new(10);
        let mut s = Session::new();
        let head = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n";
        let (out, a) = feed_all(&mut s, &site, head);
        assert_eq!((out.as_str(), a), ("HTTP/1.1 100 Continue\r\n\r\n", SessionAction::Continue));
        let (out, _) = feed_all(&mut s, &site, b"he");
        assert_eq!(out, "", "sent once per request");
        let (out, a) = feed_all(&mut s, &site, b"llo");
        assert!(out.starts_with("HTTP/1.1 405 "), "{out}");
        assert_eq!(a, SessionAction::Continue);
        // Refused bodies are answered at once, without the 100; HTTP/1.0 gets no 100; other expectations: 417.
        let big = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999\r\nExpect: 100-continue\r\n\r\n";
        let (out, a) = feed_all(&mut Session::new(), &site, big);
        assert!(out.starts_with("HTTP/1.1 413 "), "{out}");
        assert_eq!(a, SessionAction::CloseAfterFlush);
        let old = b"POST / HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n";
        assert_eq!(feed_all(&mut Session::new(), &site, old).0, "");
        let odd = b"GET / HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n";
        assert!(feed_all(&mut Session::new(), &site, odd).0.starts_with("HTTP/1.1 417 "));
    }

    #[test]
    fn input_that_cannot_be_http_is_refused_at_once() {
        let site = Site::new(10);
        let hello = [0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03];
        for input in [&hello[..], b"*1\r\n$4\r\nPING\r\n", b"\x00\x01\x02", b"GET /\x01", b"GET / FTP/1.0"] {
            let (out, a) = feed_all(&mut Session::new(), &site, input);
            assert!(out.starts_with("HTTP/1.1 400 "), "{input:?}: {out}");
            assert_eq!(a, SessionAction::CloseAfterFlush, "{input:?}");
        }
        for partial in [&b"GE"[..], b"GET /ab", b"GET / HT", b"OPTIONS * HTTP/1."] {
            assert_eq!(feed_all(&mut Session::new(), &site, partial), (String::new(), SessionAction::Continue));
        }
    }

    #[test]
    fn pipelined_requests_stop_at_the_output_limit() {
        let site = Site::new(1000);
        let mut s = Session::new();
        let input = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n".repeat(10);
        let mut out = Vec::new();
        let (n, a) = s.feed_bounded(&input, &site, &[], &mut out, 2500);
        assert_eq!(a, SessionAction::Continue);
        assert_eq!(String::from_utf8_lossy(&out).matches("HTTP/1.1 200").count(), 3, "stopped past 2500 bytes");
        assert_eq!(n, 3 * input.len() / 10, "the rest is left to the caller");
        assert_eq!(s.pending_len(), 0, "and not copied");
        let (out, a) = {
            let mut out = Vec::new();
            let a = s.timed_out(&mut out);
            (String::from_utf8(out).unwrap(), a)
        };
        assert!(out.starts_with("HTTP/1.1 408 ") && a == SessionAction::CloseAfterFlush, "{out}");
    }

    #[test]
    fn post_to_index_is_405_and_body_is_skipped() {
        let site = Site::new(10);
        let req = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: a\r\n\r\n";
        let (out, a) = feed_all(&mut Session::new(), &site, req);
        assert_eq!(a, SessionAction::Continue);
        assert!(out.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"));
        assert!(out.contains("Allow: GET, HEAD\r\n"));
        assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 1);
    }
}
