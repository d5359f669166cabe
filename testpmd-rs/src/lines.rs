//! Command lines read with a bound: the `testpmd>` prompt's plain input and `--cmdline-file` take lines of at most
//! [`MAX_LINE_LEN`] bytes, so that input without newlines (`/dev/zero`, a binary file, one huge line) costs a
//! bounded buffer and a clear message instead of all the memory there is.

use std::io::{BufRead, Read};

/// Longest command line, its newline excluded. dpdk-testpmd's own line buffer is 512 bytes (`RDLINE_BUF_SIZE`)
/// and cuts longer lines; this bound is far above any command, and only there to keep the buffer bounded.
pub const MAX_LINE_LEN: usize = 16 * 1024;

/// One read of [`read_line`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line, without its `\n` (or `\r\n`); bytes that are not UTF-8 become U+FFFD, so that the line fails as a
    /// command instead of ending the input.
    Text(String),
    /// A line longer than [`MAX_LINE_LEN`]: its first `MAX_LINE_LEN + 1` bytes were read, the rest is still in the
    /// input ([`skip_rest_of_line`] drops it).
    TooLong,
    /// End of input.
    End,
}

/// Reads the next line of `input` into `buf` (cleared first, at most `MAX_LINE_LEN + 1` bytes long).
pub fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Line> {
    buf.clear();
    // The newline counts in the read: a line of exactly MAX_LINE_LEN bytes and its "\n" fit.
    let n = (&mut *input).take(MAX_LINE_LEN as u64 + 1).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(Line::End);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    } else if n > MAX_LINE_LEN {
        return Ok(Line::TooLong);
    }
    Ok(Line::Text(String::from_utf8_lossy(buf).into_owned()))
}

/// Drops the input up to and including the next newline (or to its end), without keeping any of it.
pub fn skip_rest_of_line(input: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(());
        }
        match chunk.iter().position(|&b| b == b'\n') {
            Some(at) => {
                input.consume(at + 1);
                return Ok(());
            }
            None => {
                let n = chunk.len();
                input.consume(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<Line> {
        let mut r = input;
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let l = read_line(&mut r, &mut buf).unwrap();
            let end = l == Line::End;
            if l == Line::TooLong {
                skip_rest_of_line(&mut r).unwrap();
            }
            out.push(l);
            if end {
                return out;
            }
        }
    }

    #[test]
    fn lines_are_cut_at_newlines_and_bounded() {
        let text = |s: &str| Line::Text(s.to_string());
        assert_eq!(lines(b"start\r\nstop\n\nquit"), [text("start"), text("stop"), text(""), text("quit"), Line::End]);
        let exact = format!("{}\nshow\n", "x".repeat(MAX_LINE_LEN));
        assert_eq!(lines(exact.as_bytes()), [text(&"x".repeat(MAX_LINE_LEN)), text("show"), Line::End]);
        let over = format!("{}\nshow\n", "x".repeat(MAX_LINE_LEN + 1));
        assert_eq!(lines(over.as_bytes()), [Line::TooLong, text("show"), Line::End]);
        assert_eq!(lines(b"\xffshow\n"), [text("\u{fffd}show"), Line::End]);
    }

    #[test]
    fn endless_input_without_newlines_costs_a_bounded_buffer() {
        let mut zero = std::io::BufReader::new(std::fs::File::open("/dev/zero").unwrap());
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut zero, &mut buf).unwrap(), Line::TooLong);
        assert_eq!(buf.len(), MAX_LINE_LEN + 1);
    }
}
