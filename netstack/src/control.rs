//! The control socket: a Unix stream socket per lcore on which tools (`netstack-ctl`) ask a running server for
//! its addresses, ARP table, sockets and counters. The lcore's own poll loop answers between bursts, with
//! non-blocking calls only: nothing is shared with the fast path and nothing is locked.
//!
//! Protocol: the client sends one command line (`addr`, `arp`, `sockets`, `counters` or `all`), the server
//! answers with text and closes.

use std::fmt::Write as _;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::{Error, Result, Stack};

/// Requests held at most; more wait in the kernel's backlog.
const MAX_CLIENTS: usize = 8;
/// A client that sends no full line in this time is dropped.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// The listening side, owned by one lcore's loop.
#[derive(Debug)]
pub struct ControlServer {
    path: PathBuf,
    listener: UnixListener,
    clients: Vec<(UnixStream, Vec<u8>, Instant)>,
    lcore: u32,
}

impl ControlServer {
    /// Binds `path` (replacing a stale socket file left by a server that died).
    pub fn bind(path: &Path, lcore: u32) -> Result<ControlServer> {
        let io = |source| Error::Control { path: path.to_owned(), source };
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(io(std::io::Error::new(ErrorKind::AddrInUse, "another server answers on it")));
            }
            std::fs::remove_file(path).map_err(io)?;
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let listener = UnixListener::bind(path).map_err(io)?;
        listener.set_nonblocking(true).map_err(io)?;
        Ok(ControlServer { path: path.to_owned(), listener, clients: Vec::new(), lcore })
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The listening socket, for a loop that sleeps in `poll(2)`: readable when a tool connects.
    pub fn wait_fd(&self) -> std::os::fd::RawFd {
        self.listener.as_raw_fd()
    }

    /// Whether a client is connected and not answered yet (its line is still coming): a sleeping loop should
    /// come back soon to read it.
    pub fn has_clients(&self) -> bool {
        !self.clients.is_empty()
    }

    /// Accepts and answers what is pending, without blocking.
    pub fn serve(&mut self, stack: &Stack) {
        while self.clients.len() < MAX_CLIENTS {
            match self.listener.accept() {
                Ok((s, _)) => {
                    if s.set_nonblocking(true).is_ok() {
                        self.clients.push((s, Vec::new(), Instant::now()));
                    }
                }
                Err(_) => break,
            }
        }
        let lcore = self.lcore;
        self.clients.retain_mut(|(stream, line, since)| {
            let mut buf = [0u8; 256];
            loop {
                match stream.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => line.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => return false,
                }
                if line.contains(&b'\n') || line.len() > 1024 {
                    break;
                }
            }
            let Some(end) = line.iter().position(|&b| b == b'\n') else {
                return since.elapsed() < CLIENT_TIMEOUT && line.len() <= 1024;
            };
            let command = String::from_utf8_lossy(&line[..end]).trim().to_owned();
            let answer = report(stack, lcore, &command);
            // The answer is small: it fits the socket buffer, so a short blocking write with a timeout is safe.
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
            let _ = stream.write_all(answer.as_bytes());
            false
        });
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The text answer to `command`.
pub fn report(stack: &Stack, lcore: u32, command: &str) -> String {
    let mut out = String::new();
    let all = command == "all" || command.is_empty();
    let c = stack.config();
    if all || command == "addr" {
        let _ = writeln!(out, "lcore {lcore}: inet {}/{} ether {}", c.addr, c.prefix_len, c.mac);
        match c.gateway {
            Some(gw) => {
                let _ = writeln!(out, "default via {gw}");
            }
            None => {
                let _ = writeln!(out, "no default gateway");
            }
        }
    }
    if all || command == "arp" {
        let _ = writeln!(out, "{:<16} {:<18} Expires in", "Address", "HWaddress");
        let now = Instant::now();
        for e in stack.arp_entries() {
            let left = e.expires.saturating_duration_since(now).as_secs();
            let _ = writeln!(out, "{:<16} {:<18} {left}s", e.ip.to_string(), e.mac.to_string());
        }
        let (unresolved, waiting) = stack.arp_unresolved();
        for ip in unresolved {
            let _ = writeln!(out, "{:<16} {:<18} -", ip.to_string(), "(incomplete)");
        }
        if waiting > 0 {
            let _ = writeln!(out, "{waiting} packets wait for resolution");
        }
    }
    if all || command == "sockets" {
        let _ = writeln!(
            out,
            "{:<6} {:<10} {:>8} {:>8} {:<22} {:<22} State",
            "Handle", "Proto", "Recv-Q", "Send-Q", "Local", "Foreign"
        );
        for s in stack.sockets() {
            let remote = s.remote.map_or("*:*".to_owned(), |r| r.to_string());
            let _ = writeln!(
                out,
                "{:<6} {:<10} {:>8} {:>8} {:<22} {:<22} {}",
                s.handle.to_string(),
                s.kind,
                s.recv_queue,
                s.send_queue,
                s.local.to_string(),
                remote,
                s.state
            );
        }
    }
    if all || command == "counters" {
        let _ = writeln!(out, "connections_active       {}", stack.active_connections());
        let _ = writeln!(out, "tcp_half_open            {}", stack.half_open_connections());
        let _ = writeln!(out, "mbufs_in_use             {} of {}", stack.pool().in_use(), stack.pool().size());
        let _ = write!(out, "{}", stack.counters());
    }
    if out.is_empty() {
        let _ = writeln!(out, "unknown command `{command}`: addr, arp, sockets, counters or all");
    }
    out
}

/// Sends `command` to the server at `path` and returns its answer (client side, for `netstack-ctl`).
pub fn request(path: &Path, command: &str) -> std::io::Result<String> {
    let mut s = UnixStream::connect(path)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(format!("{command}\n").as_bytes())?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    Ok(answer)
}
