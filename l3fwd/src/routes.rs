//! Route tables as l3fwd reads them: the built-in ones (DPDK's defaults: 198.18.P.0/24 and 2001:200:0:P::/64 to
//! port P, and the matching exact-match flows) and route files in l3fwd's format:
//!
//! ```text
//! # LPM (--rule_ipv4 / --rule_ipv6): R<prefix>/<depth> <port>
//! R198.18.0.0/24 0
//! R2001:0200:0000:0001:0000:0000:0000:0000/64 1
//! # EM: R<dst addr> <src addr> <dst port> <src port> <protocol> <out port>
//! R198.18.0.0 198.18.0.1 9 9 0x11 0
//! ```
//!
//! Numbers are read as C's strtoul with base 0 reads them (decimal, 0x hex, 0 octal). Lines starting with `#` and
//! blank lines are skipped; any other line must start with `R`. A bad line is reported with its number and reason.
//!
//! Reads are bounded: a line is at most [`MAX_LINE_LEN`] bytes (DPDK's l3fwd reads lines with
//! `fgets(buff, LINE_MAX, ...)`; where it would split a longer line silently, this refuses it), a file holds at
//! most [`MAX_ROUTES`] rules, and error messages quote at most [`QUOTED_LEN`] bytes of a bad token, so that a
//! file such as `/dev/zero` or one huge line ends in a short, clear error instead of exhausting memory or the
//! terminal.

use std::io::{BufRead, BufReader, Read};
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::{Error, Result};

/// Number of built-in routes per table (ports 0..16).
pub const DEFAULT_ROUTES: u16 = 16;

/// Longest line of a route file, its newline included: C's `LINE_MAX`, the buffer DPDK's l3fwd reads lines into.
pub const MAX_LINE_LEN: usize = 2048;

/// Most rules in one route file: DPDK's largest l3fwd table (`L3FWD_HASH_ENTRIES`, 4M flows).
pub const MAX_ROUTES: usize = 4 << 20;

/// Most bytes of a bad token quoted in an error message.
pub const QUOTED_LEN: usize = 48;

/// `tok` quoted for an error message: at most [`QUOTED_LEN`] bytes of it, with its length when cut.
fn quoted(tok: &str) -> String {
    if tok.len() <= QUOTED_LEN {
        return format!("{tok:?}");
    }
    let mut end = QUOTED_LEN;
    while !tok.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}... ({} bytes)", &tok[..end], tok.len())
}

/// An LPM route: prefix (host order, as a u32 or u128), depth, output port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LpmRoute<A> {
    /// Prefix.
    pub prefix: A,
    /// Prefix length.
    pub depth: u8,
    /// Output port.
    pub port: u16,
}

/// An exact-match route: the 5-tuple (host order) and the output port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmRoute<A> {
    /// Destination address.
    pub dst: A,
    /// Source address.
    pub src: A,
    /// Destination port.
    pub dst_port: u16,
    /// Source port.
    pub src_port: u16,
    /// IP protocol.
    pub proto: u8,
    /// Output port.
    pub port: u16,
}

/// UDP's protocol number (the built-in flows').
const UDP: u8 = 17;

/// DPDK's built-in IPv4 LPM routes: 198.18.P.0/24 -> P.
pub fn default_lpm4() -> Vec<LpmRoute<u32>> {
    (0..DEFAULT_ROUTES)
        .map(|p| LpmRoute { prefix: u32::from(Ipv4Addr::new(198, 18, p as u8, 0)), depth: 24, port: p })
        .collect()
}

/// DPDK's built-in IPv6 LPM routes: 2001:200:0:P::/64 -> P.
pub fn default_lpm6() -> Vec<LpmRoute<u128>> {
    (0..DEFAULT_ROUTES)
        .map(|p| LpmRoute { prefix: u128::from(Ipv6Addr::new(0x2001, 0x200, 0, p, 0, 0, 0, 0)), depth: 64, port: p })
        .collect()
}

/// DPDK's built-in IPv4 flows: 198.18.P.1 -> 198.18.P.0, UDP 9 -> 9, to port P.
pub fn default_em4() -> Vec<EmRoute<u32>> {
    (0..DEFAULT_ROUTES)
        .map(|p| EmRoute {
            dst: u32::from(Ipv4Addr::new(198, 18, p as u8, 0)),
            src: u32::from(Ipv4Addr::new(198, 18, p as u8, 1)),
            dst_port: 9,
            src_port: 9,
            proto: UDP,
            port: p,
        })
        .collect()
}

/// DPDK's built-in IPv6 flows: 2001:200:0:P::1 -> 2001:200:0:P::, UDP 9 -> 9, to port P.
pub fn default_em6() -> Vec<EmRoute<u128>> {
    (0..DEFAULT_ROUTES)
        .map(|p| EmRoute {
            dst: u128::from(Ipv6Addr::new(0x2001, 0x200, 0, p, 0, 0, 0, 0)),
            src: u128::from(Ipv6Addr::new(0x2001, 0x200, 0, p, 0, 0, 0, 1)),
            dst_port: 9,
            src_port: 9,
            proto: UDP,
            port: p,
        })
        .collect()
}

/// strtoul(s, base 0) for a whole token, at most `max`.
fn number(tok: &str, max: u64, what: &str) -> std::result::Result<u64, String> {
    let parsed = if let Some(h) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else if tok.len() > 1 && tok.starts_with('0') {
        u64::from_str_radix(&tok[1..], 8)
    } else {
        tok.parse()
    };
    match parsed {
        Ok(v) if v <= max => Ok(v),
        Ok(v) => Err(format!("{what} {v} is above {max}")),
        Err(_) => Err(format!("{what} {} is not a number", quoted(tok))),
    }
}

/// An address family of route files.
pub trait Addr: Copy + Sized {
    /// Most prefix bits.
    const BITS: u8;
    /// Parses a textual address.
    fn parse(s: &str) -> Option<Self>;
}

impl Addr for u32 {
    const BITS: u8 = 32;
    fn parse(s: &str) -> Option<u32> {
        s.parse::<Ipv4Addr>().ok().map(u32::from)
    }
}

impl Addr for u128 {
    const BITS: u8 = 128;
    fn parse(s: &str) -> Option<u128> {
        s.parse::<Ipv6Addr>().ok().map(u128::from)
    }
}

fn address<A: Addr>(tok: &str) -> std::result::Result<A, String> {
    A::parse(tok).ok_or_else(|| format!("{} is not an IPv{} address", quoted(tok), if A::BITS == 32 { 4 } else { 6 }))
}

fn fields<'a>(line: &'a str, n: usize, form: &str) -> std::result::Result<Vec<&'a str>, String> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() != n {
        return Err(format!("expected {n} fields ({form}), found {}", f.len()));
    }
    Ok(f)
}

/// One LPM rule (the text after `R`).
pub fn parse_lpm_rule<A: Addr>(rule: &str) -> std::result::Result<LpmRoute<A>, String> {
    let f = fields(rule, 2, "<prefix>/<depth> <port>")?;
    let (addr, depth) = f[0].split_once('/').ok_or_else(|| format!("{} has no /<depth>", quoted(f[0])))?;
    Ok(LpmRoute {
        prefix: address(addr)?,
        depth: number(depth, A::BITS as u64, "depth")? as u8,
        port: number(f[1], 255, "port")? as u16,
    })
}

/// One EM rule (the text after `R`).
pub fn parse_em_rule<A: Addr>(rule: &str) -> std::result::Result<EmRoute<A>, String> {
    let f = fields(rule, 6, "<dst> <src> <dst port> <src port> <proto> <port>")?;
    Ok(EmRoute {
        dst: address(f[0])?,
        src: address(f[1])?,
        dst_port: number(f[2], 65535, "destination port")? as u16,
        src_port: number(f[3], 65535, "source port")? as u16,
        proto: number(f[4], 255, "protocol")? as u8,
        port: number(f[5], 255, "output port")? as u16,
    })
}

/// Parses route-file text with `rule` for each `R` line; `path` names the file in errors.
pub fn parse_text<T>(path: &str, text: &str, rule: impl Fn(&str) -> std::result::Result<T, String>) -> Result<Vec<T>> {
    parse_reader(path, text.as_bytes(), rule)
}

/// Reads a route file.
pub fn read_file<T>(path: &str, rule: impl Fn(&str) -> std::result::Result<T, String>) -> Result<Vec<T>> {
    let file = std::fs::File::open(path).map_err(|e| Error::RouteFile {
        path: path.to_string(),
        line: 0,
        reason: format!("cannot read: {e}"),
    })?;
    parse_reader(path, BufReader::new(file), rule)
}

/// Parses route-file lines from `input` with `rule` for each `R` line, reading at most [`MAX_LINE_LEN`] bytes per
/// line and [`MAX_ROUTES`] rules; `path` names the file in errors.
pub fn parse_reader<T>(
    path: &str,
    mut input: impl BufRead,
    rule: impl Fn(&str) -> std::result::Result<T, String>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    let mut buf = Vec::with_capacity(MAX_LINE_LEN);
    for line_no in 1.. {
        let err = |reason: String| Error::RouteFile { path: path.to_string(), line: line_no, reason };
        buf.clear();
        let n = (&mut input)
            .take(MAX_LINE_LEN as u64)
            .read_until(b'\n', &mut buf)
            .map_err(|e| err(format!("cannot read: {e}")))?;
        if n == 0 {
            break;
        }
        if buf.last() != Some(&b'\n') && n == MAX_LINE_LEN {
            return Err(err(format!(
                "line longer than {} bytes (LINE_MAX, the longest line l3fwd reads)",
                MAX_LINE_LEN - 1
            )));
        }
        let line = std::str::from_utf8(&buf).map_err(|e| err(format!("not UTF-8 text: {e}")))?;
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let Some(body) = line.strip_prefix('R') else {
            return Err(err("should start with the leading char R (or # for a comment)".into()));
        };
        if out.len() == MAX_ROUTES {
            return Err(err(format!("more than {MAX_ROUTES} rules in one file")));
        }
        out.push(rule(body).map_err(err)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lpm_files_as_dpdk_ships_them() {
        let v4 = "# Copy of hard-coded IPv4 FWD table\nR198.18.0.0/24 0\n\nR198.18.15.0/24 15\n";
        let r = parse_text("v4", v4, parse_lpm_rule::<u32>).unwrap();
        assert_eq!(r, vec![default_lpm4()[0], default_lpm4()[15]]);
        let v6 = "R2001:0200:0000:000F:0000:0000:0000:0000/64 15\n";
        assert_eq!(parse_text("v6", v6, parse_lpm_rule::<u128>).unwrap(), vec![default_lpm6()[15]]);
    }

    #[test]
    fn em_files_as_dpdk_ships_them() {
        let v4 = "#EM\nR198.18.3.0 198.18.3.1 9 9 0x11 3\n";
        assert_eq!(parse_text("v4", v4, parse_em_rule::<u32>).unwrap(), vec![default_em4()[3]]);
        let v6 = "R2001:0200:0000:000D:0000:0000:0000:0000 2001:0200:0000:000D:0000:0000:0000:0001 9 9 0x11 13\n";
        assert_eq!(parse_text("v6", v6, parse_em_rule::<u128>).unwrap(), vec![default_em6()[13]]);
    }

    #[test]
    fn bad_lines_name_their_number_and_reason() {
        for (text, line, reason) in [
            ("R10.0.0.0/8 1\nX10.0.0.0/8 1\n", 2, "leading char R"),
            ("\n\nR10.0.0.0/33 1\n", 3, "depth 33 is above 32"),
            ("R10.0.0/8 1\n", 1, "not an IPv4 address"),
            ("R10.0.0.0 1\n", 1, "no /<depth>"),
            ("R10.0.0.0/8 256\n", 1, "port 256 is above 255"),
            ("R10.0.0.0/8\n", 1, "expected 2 fields"),
        ] {
            let e = parse_text("f.cfg", text, parse_lpm_rule::<u32>).unwrap_err();
            match &e {
                Error::RouteFile { line: l, reason: r, .. } => {
                    assert_eq!(*l, line, "{text:?}: {e}");
                    assert!(r.contains(reason), "{text:?}: {e}");
                }
                _ => panic!("{e}"),
            }
            assert!(e.to_string().contains(&format!("f.cfg:{line}")), "{e}");
        }
        assert!(parse_text("e", "R1.1.1.1 2.2.2.2 9 9 zz 1\n", parse_em_rule::<u32>).is_err());
    }

    /// A huge line or a file without newlines (`/dev/zero`) ends in a short error naming the line; a bad token is
    /// quoted in part; a line of exactly the limit still parses, CRLF line ends too.
    #[test]
    fn reads_are_bounded_and_errors_short() {
        let huge = format!("R10.0.0.0/8 1\nR{}/8 1\n", "1".repeat(10 << 20));
        let e = parse_text("big.cfg", &huge, parse_lpm_rule::<u32>).unwrap_err().to_string();
        assert!(e.starts_with("big.cfg:2: line longer than 2047 bytes"), "{}", &e[..e.len().min(200)]);
        assert!(e.len() < 200, "{} bytes of message", e.len());
        let e = read_file("/dev/zero", parse_lpm_rule::<u32>).unwrap_err().to_string();
        assert!(e.starts_with("/dev/zero:1: line longer than"), "{e}");
        let long_tok = format!("R{}/8 1\n", "9".repeat(1500));
        let e = parse_text("t.cfg", &long_tok, parse_lpm_rule::<u32>).unwrap_err().to_string();
        assert!(e.contains("... (1500 bytes) is not an IPv4 address") && e.len() < 160, "{e}");
        let pad = " ".repeat(MAX_LINE_LEN - 1 - "R10.0.0.0/8 1".len());
        let exact = format!("R10.0.0.0/8 1{pad}\nR10.1.0.0/16 2\r\n");
        assert_eq!(parse_text("x", &exact, parse_lpm_rule::<u32>).unwrap().len(), 2);
        let over = format!("R10.0.0.0/8 1 {pad}\n");
        assert!(parse_text("x", &over, parse_lpm_rule::<u32>).is_err());
        let e = parse_reader("b", &b"R10.0.0.0/8 1\nR\xff\n"[..], parse_lpm_rule::<u32>).unwrap_err().to_string();
        assert!(e.starts_with("b:2: not UTF-8"), "{e}");
        let e = read_file("/nonexistent/v4.cfg", parse_lpm_rule::<u32>).unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent/v4.cfg:0: cannot read"), "{e}");
    }
}
