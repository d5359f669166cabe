//! HTTP/1.1 request parsing (RFC 9112): request line, header fields, Content-Length body, persistence.
//!
//! The parser borrows from the caller's buffer and allocates nothing; it keeps no state between calls, since a
//! request head is bounded by [`Limits::max_head_len`] and re-scanning it when more bytes arrive is cheap.

use crate::ProtocolError;

/// Size limits for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Request line plus header fields, bytes (431 past it).
    pub max_head_len: usize,
    /// Content-Length, bytes (413 past it).
    pub max_body_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_head_len: 8 << 10, max_body_len: 1 << 20 }
    }
}

/// A parsed request; the strings borrow from the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// The method token (`GET`, `HEAD`, ...), case-sensitive as RFC 9110 says.
    pub method: &'a str,
    /// The request target as sent (origin form `/path?query` for the clients served here).
    pub target: &'a str,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor_version: u8,
    /// Whether the connection stays open after the response: HTTP/1.1 unless `Connection: close`, HTTP/1.0
    /// only with `Connection: keep-alive`.
    pub keep_alive: bool,
    /// The body (Content-Length bytes; empty without one).
    pub body: &'a [u8],
}

/// A request whose head is complete but whose body is still to come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    /// The client sent `Expect: 100-continue` (HTTP/1.1): it waits for an interim 100 before the body.
    pub expects_continue: bool,
}

/// Longest method token accepted (the longest registered method, UPDATEREDIRECTREF, has 17 characters).
const MAX_METHOD_LEN: usize = 32;

/// tchar of RFC 9110: what method and field names are made of.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Parses one request from the start of `buf`.
///
/// Returns `Ok(None)` if `buf` holds only part of it, `Ok(Some((request, len)))` with the bytes it spans, or
/// the error to answer (after which the connection closes). Input that cannot begin an HTTP request (binary
/// bytes, a TLS handshake, another protocol) is an error as soon as its first line shows it, not once the head
/// limit is reached.
pub fn parse_request<'a>(buf: &'a [u8], limits: &Limits) -> Result<Option<(Request<'a>, usize)>, ProtocolError> {
    Ok(match parse_partial(buf, limits)? {
        Parsed::Complete(r, n) => Some((r, n)),
        Parsed::Head(_) | Parsed::Partial => None,
    })
}

/// What [`parse_partial`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A whole request and the bytes it spans.
    Complete(Request<'a>, usize),
    /// The head is complete, the body is not.
    Head(Waiting),
    /// The head is not complete yet.
    Partial,
}

/// Like [`parse_request`], and also tells a request whose head is complete but whose body is still to come
/// (for `Expect: 100-continue`).
pub fn parse_partial<'a>(buf: &'a [u8], limits: &Limits) -> Result<Parsed<'a>, ProtocolError> {
    use ProtocolError::HttpBadRequest as Bad;
    // RFC 9112 (message format): a server ignores empty lines before the request line.
    let mut start = 0;
    while buf[start..].starts_with(b"\r\n") || buf[start..].starts_with(b"\n") {
        start += if buf[start] == b'\r' { 2 } else { 1 };
    }
    let head = &buf[start..];
    let Some(head_end) = find_head_end(head) else {
        check_request_line_prefix(head)?;
        // Counting the skipped blank lines too, so an endless run of them is cut off like an endless head.
        return if buf.len() > limits.max_head_len {
            Err(ProtocolError::HttpHeadersTooLarge)
        } else {
            Ok(Parsed::Partial)
        };
    };
    if head_end.0 > limits.max_head_len {
        return Err(ProtocolError::HttpHeadersTooLarge);
    }
    let text = std::str::from_utf8(&head[..head_end.0]).map_err(|_| Bad("non-ASCII bytes in the request head"))?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Bad("request line is not METHOD SP TARGET SP VERSION"));
    };
    if method.is_empty() || !method.bytes().all(is_tchar) {
        return Err(Bad("invalid method"));
    }
    if target.is_empty() || !target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Bad("invalid request target"));
    }
    let minor_version = match version {
        "HTTP/1.1" => 1,
        "HTTP/1.0" => 0,
        v if v.len() == 8 && v.starts_with("HTTP/") && v.as_bytes()[6] == b'.' => {
            return Err(ProtocolError::HttpVersion)
        }
        _ => return Err(Bad("invalid HTTP version")),
    };
    let (mut content_length, mut host, mut close, mut keep) = (None::<usize>, false, false, false);
    let mut expects_continue = false;
    for field in lines {
        if field.starts_with([' ', '\t']) {
            return Err(Bad("obsolete line folding"));
        }
        let Some((name, value)) = field.split_once(':') else { return Err(Bad("header field without a colon")) };
        if name.is_empty() || !name.bytes().all(is_tchar) {
            return Err(Bad("invalid header field name"));
        }
        let value = value.trim_matches([' ', '\t']);
        if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
            return Err(Bad("control character in a header field value"));
        }
        if name.eq_ignore_ascii_case("content-length") {
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Bad("invalid Content-Length"));
            }
            let n = value.parse::<usize>().map_err(|_| ProtocolError::HttpBodyTooLarge)?;
            if content_length.is_some_and(|c| c != n) {
                return Err(Bad("conflicting Content-Length fields"));
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(ProtocolError::HttpTransferEncoding);
        } else if name.eq_ignore_ascii_case("host") {
            if host {
                return Err(Bad("more than one Host field"));
            }
            host = true;
        } else if name.eq_ignore_ascii_case("expect") {
            // RFC 9110 section 10.1.1: 100-continue is the only expectation defined.
            if !value.eq_ignore_ascii_case("100-continue") {
                return Err(ProtocolError::HttpExpectation);
            }
            // An HTTP/1.0 client does not know the interim response; it is not sent one.
            expects_continue = minor_version == 1;
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                close |= token.eq_ignore_ascii_case("close");
                keep |= token.eq_ignore_ascii_case("keep-alive");
            }
        }
    }
    if minor_version == 1 && !host {
        return Err(Bad("HTTP/1.1 request without Host"));
    }
    let body_len = content_length.unwrap_or(0);
    if body_len > limits.max_body_len {
        return Err(ProtocolError::HttpBodyTooLarge);
    }
    let body_start = start + head_end.1;
    if buf.len() - body_start < body_len {
        return Ok(Parsed::Head(Waiting { expects_continue }));
    }
    let keep_alive = if minor_version == 1 { !close } else { keep && !close };
    let request = Request { method, target, minor_version, keep_alive, body: &buf[body_start..body_start + body_len] };
    Ok(Parsed::Complete(request, body_start + body_len))
}

/// Refuses the start of a request line that can no longer become `METHOD SP TARGET SP HTTP/1.x`: a byte that
/// is not a token character before the first space, an over-long method, a control byte in the target, or a
/// version that does not start as `HTTP/`.
fn check_request_line_prefix(head: &[u8]) -> Result<(), ProtocolError> {
    use ProtocolError::HttpBadRequest as Bad;
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut parts = line.splitn(3, |&b| b == b' ');
    let method = parts.next().unwrap_or_default();
    // Within the line, so without its end: the method may still be growing when no space came yet.
    if !method.iter().all(|&b| is_tchar(b)) || method.len() > MAX_METHOD_LEN {
        return Err(Bad("not an HTTP request"));
    }
    if let Some(target) = parts.next() {
        if !target.iter().all(|b| b.is_ascii_graphic()) {
            return Err(Bad("invalid request target"));
        }
        if let Some(version) = parts.next() {
            let version = version.strip_suffix(b"\r").unwrap_or(version);
            let n = version.len().min(5);
            if version[..n] != b"HTTP/"[..n] {
                return Err(Bad("invalid HTTP version"));
            }
        }
    }
    Ok(())
}

/// (end of the last header line, start of the body) if the blank line ending the head is in `buf`.
fn find_head_end(buf: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while let Some(nl) = buf[i..].iter().position(|&b| b == b'\n') {
        let nl = i + nl;
        let rest = &buf[nl + 1..];
        if rest.starts_with(b"\r\n") {
            return Some((nl, nl + 3));
        }
        if rest.starts_with(b"\n") {
            return Some((nl, nl + 2));
        }
        i = nl + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(b: &[u8]) -> Result<Option<(Request<'_>, usize)>, ProtocolError> {
        parse_request(b, &Limits::default())
    }

    #[test]
    fn wrk_and_curl_requests_parse() {
        let wrk = b"GET / HTTP/1.1\r\nHost: 10.0.0.1:8080\r\n\r\n";
        let (r, n) = parse(wrk).unwrap().unwrap();
        assert_eq!((r.method, r.target, r.minor_version, r.keep_alive, n), ("GET", "/", 1, true, wrk.len()));
        let curl = b"GET /status HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n";
        let (r, _) = parse(curl).unwrap().unwrap();
        assert_eq!(r.target, "/status");
    }

    #[test]
    fn persistence_follows_version_and_connection() {
        let keep = |req: &[u8]| parse(req).unwrap().unwrap().0.keep_alive;
        assert!(!keep(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"));
        assert!(!keep(b"GET / HTTP/1.0\r\n\r\n"));
        assert!(keep(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
        assert!(keep(b"GET / HTTP/1.1\nHost: a\n\n"), "bare LF line ends are accepted");
    }

    #[test]
    fn bodies_wait_for_content_length() {
        let req = b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(parse(&req[..req.len() - 1]), Ok(None));
        let (r, n) = parse(req).unwrap().unwrap();
        assert_eq!((r.body, n), (&b"hello"[..], req.len()));
    }

    #[test]
    fn errors_map_to_their_status() {
        let status = |req: &[u8]| parse(req).unwrap_err().http_status();
        assert_eq!(status(b"GET /\r\n\r\n"), 400);
        assert_eq!(status(b"GET / HTTP/1.1\r\n\r\n"), 400, "Host is required in 1.1");
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost : a\r\n\r\n"), 400);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n"), 400);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), 400);
        assert_eq!(status(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999\r\n\r\n"), 413);
        assert_eq!(status(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"), 501);
        assert_eq!(status(b"GET / HTTP/2.0\r\nHost: a\r\n\r\n"), 505);
        assert_eq!(status(&b"\r\n".repeat(5000)), 431, "blank lines before the request line are bounded too");
        let mut big = b"GET / HTTP/1.1\r\nHost: a\r\nX: ".to_vec();
        big.resize(9000, b'a');
        assert_eq!(status(&big), 431, "no end of head within the limit");
    }
}
