//! `/pktio/capture`: starts, stops and reports the process's live capture ([`pktio::capture`]) from the socket,
//! which is how `pktio-dumpcap` drives a running application.
//!
//! `/pktio/capture,start,PORTS,DIR,SNAPLEN,COUNT,FILE`: PORTS as `0` or `0:1`, DIR `rx`, `tx` or `both`, SNAPLEN
//! bytes, COUNT packets (0: no limit), FILE an absolute path the application writes. `/pktio/capture,stop` and
//! `/pktio/capture,status`. A refusal answers `{"error":"..."}` with the reason.

use std::path::PathBuf;
use std::sync::Mutex;

use pktio::capture::{self, CaptureConfig, CaptureStats};

use super::{Telemetry, Value};

/// The command's help text.
pub const HELP: &str = "Live pcapng capture. Parameters: start,PORTS(0:1),rx|tx|both,SNAPLEN,COUNT(0: none),FILE | \
                        stop | status";

fn error(msg: impl Into<String>) -> Value {
    Value::object([("error", Value::Str(msg.into()))])
}

fn stats(status: &str, path: &std::path::Path, s: CaptureStats) -> Value {
    Value::object([
        ("status", Value::from(status)),
        ("file", Value::from(path.display().to_string())),
        ("received", Value::UInt(s.received)),
        ("dropped", Value::UInt(s.dropped)),
        ("written", Value::UInt(s.written)),
    ])
}

/// Parses the start parameters (after `start,`).
pub fn parse_start(params: &str) -> Result<CaptureConfig, String> {
    let mut f = params.splitn(5, ',');
    let (Some(ports), Some(dir), Some(snaplen), Some(count), Some(file)) =
        (f.next(), f.next(), f.next(), f.next(), f.next())
    else {
        return Err("expected start,PORTS,rx|tx|both,SNAPLEN,COUNT,FILE".into());
    };
    let ports: Vec<u16> = ports
        .split(':')
        .map(|p| p.parse().map_err(|_| format!("port {p:?}: expected a port number (several as 0:1)")))
        .collect::<Result<_, _>>()?;
    let dirs = capture::parse_directions(dir).ok_or_else(|| format!("direction {dir:?}: expected rx, tx or both"))?;
    let snaplen: u32 = snaplen.parse().ok().filter(|s| *s > 0).ok_or_else(|| format!("snap length {snaplen:?}"))?;
    let count: u64 = count.parse().map_err(|_| format!("count {count:?}: expected a number (0: no limit)"))?;
    let path = PathBuf::from(file);
    if !path.is_absolute() {
        return Err(format!("file {file:?}: give an absolute path (the application writes it)"));
    }
    let interfaces = ports.iter().flat_map(|&p| dirs.iter().map(move |&d| (p, d))).collect();
    let mut cfg = CaptureConfig::new(interfaces, path);
    cfg.snaplen = snaplen;
    cfg.count = (count > 0).then_some(count);
    Ok(cfg)
}

/// The client connection holding the running capture, if it was started from one.
static LEASE: Mutex<Option<u64>> = Mutex::new(None);

fn lease() -> std::sync::MutexGuard<'static, Option<u64>> {
    LEASE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Client connection `client` closed: the capture it started (if still its own) stops.
pub(super) fn release(client: u64) {
    let mut owner = lease();
    if *owner != Some(client) {
        return;
    }
    *owner = None;
    if let Some(Err(e)) = capture::stop() {
        eprintln!("EAL: telemetry: the capture of a closed client ended with an error: {e}");
    }
}

/// `/pktio/capture,stop`: anyone may stop the capture (as always); the lease goes with it.
fn stop_and_release() -> Option<std::io::Result<(PathBuf, CaptureStats)>> {
    let mut owner = lease();
    *owner = None;
    capture::stop()
}

pub(super) fn register(t: &Telemetry) {
    t.add("/pktio/capture", HELP, |t, p| {
        let (verb, rest) = match p {
            Some(p) => p.split_once(',').unwrap_or((p, "")),
            None => return error("expected start,..., stop or status"),
        };
        match verb {
            "start" => match parse_start(rest) {
                Ok(cfg) => {
                    let name = |port: u16| t.port_name(port).unwrap_or_else(|| format!("port{port}"));
                    // Held across the start, so that a closing client cannot release between the two.
                    let mut owner = lease();
                    match capture::start(&cfg, &name) {
                        Ok(()) => {
                            *owner = super::server::current_client();
                            stats("started", &cfg.path, CaptureStats::default())
                        }
                        Err(e) => error(e.to_string()),
                    }
                }
                Err(e) => error(e),
            },
            "stop" => match stop_and_release() {
                Some(Ok((path, s))) => stats("stopped", &path, s),
                Some(Err(e)) => error(e.to_string()),
                None => error("no capture is running"),
            },
            "status" => match capture::status() {
                Some((path, s, true)) => stats("running", &path, s),
                Some((path, s, false)) => stats("done", &path, s),
                None => Value::object([("status", Value::from("none"))]),
            },
            other => error(format!("{other:?}: expected start, stop or status")),
        }
    });
}
