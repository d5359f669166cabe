//! Which capture files the open `net_pcap` ports read and write, process-wide, so that a port cannot truncate a
//! file it or another port replays, nor two ports interleave their records into one file (where the later
//! port's truncation would lose the earlier's): the second open is refused, as DPDK's pcap PMD fails it.
//!
//! Files are told apart by device and inode (a hard link or another spelling of the path is the same file). Only
//! regular files are claimed: `/dev/null` or a FIFO may be written by several ports without loss.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// How a port uses a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// `rx_pcap=`: replayed.
    Read,
    /// `tx_pcap=`: written.
    Write,
}

#[derive(Debug)]
struct Entry {
    file: (u64, u64),
    token: u64,
    port: String,
    path: PathBuf,
    how: Use,
}

static CLAIMS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

fn claims() -> MutexGuard<'static, Vec<Entry>> {
    CLAIMS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The identity (device, inode) of `path` if it names an existing regular file.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    let m = std::fs::metadata(path).ok()?;
    m.is_file().then(|| (m.dev(), m.ino()))
}

/// A port's hold on its files; dropping it (the port closes) lets other ports use them.
#[derive(Debug)]
pub(crate) struct Claim {
    token: u64,
    port: String,
}

impl Claim {
    /// Claims `rx` for reading and the existing files among `tx` for writing for port `port`, before any is
    /// created or truncated. Refused, with the reason, when a file would be both read and written, or written
    /// twice, by this port or another open one.
    pub(crate) fn new(port: &str, rx: &[PathBuf], tx: &[PathBuf]) -> Result<Claim, String> {
        let claim = Claim { token: NEXT_TOKEN.fetch_add(1, Ordering::Relaxed), port: port.to_string() };
        let mut all = claims();
        let wanted = rx.iter().map(|p| (p, Use::Read)).chain(tx.iter().map(|p| (p, Use::Write)));
        for (path, how) in wanted {
            let Some(file) = file_id(path) else { continue };
            if let Some(e) = all.iter().find(|e| e.file == file && (e.how == Use::Write || how == Use::Write)) {
                let (theirs, ours) = (name(e.how), name(how));
                let who = if e.token == claim.token { "this port".to_string() } else { e.port.clone() };
                let consequence = match (e.how, how) {
                    (Use::Read, _) | (_, Use::Read) => "writing it would truncate the input it replays",
                    _ => "two ports writing one file lose each other's records",
                };
                let same = if e.path == *path { String::new() } else { format!(" (as {})", e.path.display()) };
                return Err(format!(
                    "{ours}={} is the file {who} has as {theirs}{same}: {consequence}; give another file",
                    path.display()
                ));
            }
            all.push(Entry { file, token: claim.token, port: port.to_string(), path: path.clone(), how });
        }
        Ok(claim)
    }

    /// Claims `tx` files this port has just created.
    pub(crate) fn add_created(&self, tx: &[PathBuf]) {
        let mut all = claims();
        for path in tx {
            let Some(file) = file_id(path) else { continue };
            if !all.iter().any(|e| e.file == file && e.token == self.token) {
                all.push(Entry {
                    file,
                    token: self.token,
                    port: self.port.clone(),
                    path: path.clone(),
                    how: Use::Write,
                });
            }
        }
    }
}

fn name(how: Use) -> &'static str {
    match how {
        Use::Read => "rx_pcap",
        Use::Write => "tx_pcap",
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        claims().retain(|e| e.token != self.token);
    }
}
