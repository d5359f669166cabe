//! http-server: HTTP/1.1 keep-alive server of a static page (`/`) and a status page (`/status`) on a netstack
//! port (issue 13).
//!
//! `http-server --config FILE [--port N] [--page-bytes N]` (defaults 8080 and 1024). Runs on any number of
//! lcores (each serves the flows RSS gives its queue). The status page lists the lcore's counters: connections,
//! responses by status code, packets, retransmissions and drops. Prints them on Ctrl-C beside the stack's.

use std::process::ExitCode;

use netstack::{Error, Stack};
use servers::http::{Session, Site, STATUS_CODES};
use servers::serve::{Protocol, ServeStats, Server};
use servers::SessionAction;

/// `/status` line names of the responses per code, in the order of [`STATUS_CODES`].
const RESPONSE_NAMES: [&str; STATUS_CODES.len()] = [
    "responses_200",
    "responses_400",
    "responses_404",
    "responses_405",
    "responses_413",
    "responses_431",
    "responses_501",
    "responses_505",
];
const STATUS_LINES: usize = 7 + STATUS_CODES.len();

struct Http {
    site: Site,
    responses: [u64; STATUS_CODES.len()],
    /// What `/status` shows, refreshed every poll (a fixed array: serving it allocates nothing here).
    status: [(&'static str, u64); STATUS_LINES],
}

impl Protocol for Http {
    type Session = Session;

    fn open(&mut self, _id: u64) -> Session {
        Session::new()
    }

    fn feed(&mut self, session: &mut Session, input: &[u8], out: &mut Vec<u8>) -> SessionAction {
        let action = session.feed(input, &self.site, &self.status, out);
        for (total, n) in self.responses.iter_mut().zip(session.take_responses()) {
            *total += n;
        }
        action
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
    let usage =
        "  --port N              TCP port (default 8080)\n  --page-bytes N        size of the page at / (default 1024)";
    netstack::runtime::main("http-server", usage, |stack, args| {
        let (mut port, mut page) = (8080u16, 1024usize);
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().ok_or_else(|| Error::Usage(format!("{a} needs a value")));
            match a.as_str() {
                "--port" => {
                    let v = value()?;
                    port = v.parse().map_err(|_| Error::Usage(format!("--port: `{v}` is not a port number")))?;
                }
                "--page-bytes" => {
                    let v = value()?;
                    page = v.parse().map_err(|_| Error::Usage(format!("--page-bytes: `{v}` is not a size")))?;
                }
                other => return Err(Error::Usage(format!("unknown option `{other}` (see --help)"))),
            }
        }
        let http = Http { site: Site::new(page), responses: [0; STATUS_CODES.len()], status: [("", 0); STATUS_LINES] };
        Server::listen(stack, port, http)
    })
}
