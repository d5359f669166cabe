//! http-server: HTTP/1.1 keep-alive server of a static page (`/`) and a status page (`/status`) on a netstack
//! port (issue 13).
//!
//! `http-server --config FILE [--port N] [--page-bytes N]` (defaults 8080 and 1024). Runs on any number of
//! lcores (each serves the flows RSS gives its queue). The status page lists the lcore's counters: connections,
//! responses by status code, packets, retransmissions and drops. Prints them on Ctrl-C beside the stack's.

use std::process::ExitCode;
use std::time::Duration;

use netstack::{Error, Stack};
use servers::http::{Session, Site, STATUS_CODES};
use servers::serve::{parse_port, Protocol, ServeOptions, ServeStats, Server, SERVE_USAGE};
use servers::SessionAction;

/// `/status` line names of the responses per code, in the order of [`STATUS_CODES`].
const RESPONSE_NAMES: [&str; STATUS_CODES.len()] = [
    "responses_200",
    "responses_400",
    "responses_404",
    "responses_405",
    "responses_408",
    "responses_413",
    "responses_417",
    "responses_431",
    "responses_501",
    "responses_505",
];
/// The largest page `--page-bytes` takes (each pipelined request for it may add one page to the output).
const MAX_PAGE: usize = 64 << 20;
const STATUS_LINES: usize = 7 + STATUS_CODES.len();

struct Http {
    site: Site,
    responses: [u64; STATUS_CODES.len()],
    /// What `/status` shows, refreshed every poll (a fixed array: serving it allocates nothing here).
    status: [(&'static str, u64); STATUS_LINES],
}

impl Http {
    fn count(&mut self, session: &mut Session) {
        for (total, n) in self.responses.iter_mut().zip(session.take_responses()) {
            *total += n;
        }
    }
}

impl Protocol for Http {
    type Session = Session;

    fn open(&mut self, _id: u64) -> Session {
        Session::new()
    }

    fn feed(&mut self, session: &mut Session, input: &[u8], out: &mut Vec<u8>, limit: usize) -> (usize, SessionAction) {
        let fed = session.feed_bounded(input, &self.site, &self.status, out, limit);
        self.count(session);
        fed
    }

    fn pending(&self, session: &Session) -> usize {
        session.pending_len()
    }

    fn timed_out(&mut self, session: &mut Session, out: &mut Vec<u8>) {
        session.timed_out(out);
        self.count(session);
    }

    fn tick(&mut self, stack: &Stack, stats: &ServeStats) {
        let c = stack.counters();
        let head = [
            ("connections_active", stats.active),
            ("connections_accepted", stats.accepted),
            ("rx_packets", c.rx_packets),
            ("tx_packets", c.tx_packets),
            ("tcp_retransmissions", c.tcp_retransmissions),
            ("drops", c.total_drops()),
            ("mbufs_in_use", stack.pool().in_use() as u64),
        ];
        for (slot, line) in
            self.status.iter_mut().zip(head.into_iter().chain(RESPONSE_NAMES.into_iter().zip(self.responses)))
        {
            *slot = line;
        }
    }

    fn report(&self) -> String {
        RESPONSE_NAMES.iter().zip(self.responses).map(|(name, v)| format!("{name:<24} {v}\n")).collect()
    }
}

fn main() -> ExitCode {
    let usage = format!(
        "  --port N              TCP port (default 8080)\n  --page-bytes N        size of the page at / (default 1024, \
         at most {MAX_PAGE})\n{SERVE_USAGE}\n  (http-server: idle timeout 60 s, request timeout 30 s)"
    );
    netstack::runtime::main("http-server", &usage, |stack, args| {
        let (mut port, mut page) = (8080u16, 1024usize);
        let mut options = ServeOptions {
            idle_timeout: Some(Duration::from_secs(60)),
            request_timeout: Some(Duration::from_secs(30)),
            ..ServeOptions::default()
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--port" => port = parse_port(it.next())?,
                "--page-bytes" => {
                    let v = it.next().ok_or_else(|| Error::Usage("--page-bytes needs a value".into()))?;
                    page =
                        v.parse().ok().filter(|&n| n <= MAX_PAGE).ok_or_else(|| {
                            Error::Usage(format!("--page-bytes: `{v}`: expected 0 to {MAX_PAGE} bytes"))
                        })?;
                }
                flag if options.parse_arg(flag, it.clone().next())? => {
                    it.next();
                }
                other => return Err(Error::Usage(format!("unknown option `{other}` (see --help)"))),
            }
        }
        let http = Http { site: Site::new(page), responses: [0; STATUS_CODES.len()], status: [("", 0); STATUS_LINES] };
        Server::listen_with(stack, port, http, options)
    })
}
