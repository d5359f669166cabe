//! kv-server: the Redis-protocol (RESP2) key-value server on a netstack port (issue 13).
//!
//! `kv-server --config FILE [--port N]` (default 6379). One lcore: the keyspace is one [`Store`] owned by the
//! lcore that polls it, so several lcores would each see a different keyspace; a configuration with more is
//! refused. Prints the stack's and its own counters (commands, keys, expired keys) on Ctrl-C.

use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use netstack::{Error, Stack};
use servers::kv::{Session, Store};
use servers::serve::{parse_port, Protocol, ServeOptions, ServeStats, Server, SERVE_USAGE};
use servers::SessionAction;

/// Keys with a deadline removed at most per sweep (one sweep per millisecond of poll time: a bounded share).
const SWEEP_PER_POLL: usize = 32;

struct Kv {
    store: Store,
    /// The poll's time as Unix milliseconds (SET's EXAT/PXAT are absolute).
    now_ms: u64,
    /// A monotonic instant and the Unix milliseconds it stood for, so the clock follows the stack's poll time.
    base: (Instant, u64),
}

impl Protocol for Kv {
    type Session = Session;

    fn open(&mut self, id: u64) -> Session {
        Session::new(id)
    }

    fn feed(&mut self, session: &mut Session, input: &[u8], out: &mut Vec<u8>, limit: usize) -> (usize, SessionAction) {
        session.feed_bounded(input, self.now_ms, &mut self.store, out, limit)
    }

    fn pending(&self, session: &Session) -> usize {
        session.held_bytes()
    }

    fn tick(&mut self, stack: &Stack, _stats: &ServeStats) {
        let now_ms = self.base.1 + stack.now().saturating_duration_since(self.base.0).as_millis() as u64;
        // Deadlines are in milliseconds: sweep once per millisecond, not on every idle poll.
        if now_ms != self.now_ms {
            self.now_ms = now_ms;
            self.store.sweep_expired(now_ms, SWEEP_PER_POLL);
        }
    }

    fn report(&self) -> String {
        let s = self.store.stats();
        format!(
            "{:<24} {}\n{:<24} {}\n{:<24} {}\n",
            "kv_commands",
            s.commands,
            "kv_keys",
            self.store.len(),
            "kv_expired_keys",
            s.expired_keys
        )
    }
}

fn main() -> ExitCode {
    let usage = format!("  --port N              TCP port (default 6379)\n{SERVE_USAGE}\n  (kv-server: idle timeout 300 s; 0 keeps idle clients forever, as redis-server's `timeout 0`)");
    let mut lanes = 0;
    netstack::runtime::main("kv-server", &usage, |stack, args| {
        lanes += 1;
        if lanes > 1 {
            return Err(Error::Usage("kv-server keeps one keyspace: run it on one lcore (lcores = \"N\")".into()));
        }
        let mut port = 6379u16;
        let mut options = ServeOptions::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--port" => port = parse_port(it.next())?,
                flag if options.parse_arg(flag, it.clone().next())? => {
                    it.next();
                }
                other => return Err(Error::Usage(format!("unknown option `{other}` (see --help)"))),
            }
        }
        let unix_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let kv = Kv { store: Store::new(), now_ms: unix_ms, base: (Instant::now(), unix_ms) };
        Server::listen_with(stack, port, kv, options)
    })
}
