//! udp-echo: sends every UDP datagram back to its sender, on a netstack port.
//!
//! `udp-echo --config FILE [--port N]` (default port 7); prints its counters on Ctrl-C.

use std::process::ExitCode;

use netstack::runtime::{self, App};
use netstack::{Error, Event, EventKind, Handle, Stack};

struct Echo {
    socket: Handle,
}

impl App for Echo {
    fn on_events(&mut self, stack: &mut Stack, events: &[Event]) {
        for e in events {
            if e.handle != self.socket || e.kind != EventKind::Readable {
                continue;
            }
            while let Ok(d) = stack.recv_from(self.socket) {
                // A failed send (no buffer, an unresolved sender) is counted by the stack as a drop.
                let _ = stack.send_to(self.socket, d.from, d.payload());
            }
        }
    }
}

fn main() -> ExitCode {
    runtime::main("udp-echo", "  --port N              UDP port to echo on (default 7)", |stack, args| {
        let mut port = 7u16;
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--port" => {
                    let v = it.next().ok_or_else(|| Error::Usage("--port needs a value".into()))?;
                    port = v.parse().map_err(|_| Error::Usage(format!("--port: `{v}` is not a port number")))?;
                }
                other => return Err(Error::Usage(format!("unknown option `{other}` (see --help)"))),
            }
        }
        Ok(Echo { socket: stack.udp_bind(port)? })
    })
}
