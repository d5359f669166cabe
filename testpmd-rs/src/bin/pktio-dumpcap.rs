//! `pktio-dumpcap`: captures the packets of a running pktio-rs application's ports into a pcapng file, in the
//! spirit of `dpdk-dumpcap`, through the application's telemetry socket (`/pktio/capture`). The application
//! writes the file itself; this tool starts the capture, waits for the count, the duration or Ctrl-C, and stops it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use eal::telemetry;

const USAGE: &str = "Usage: pktio-dumpcap [options]
  -i, --interface PORT   port id to capture (repeatable, or 0,1); default 0
  --rx | --tx            capture only received or only sent packets (default: both)
  -s, --snapshot-length N  bytes kept per packet (default 262144)
  -c N                   stop after N packets
  -a duration:SECS       stop after SECS seconds
  -w FILE                pcapng file to write (default /tmp/pktio-dumpcap_<pid>.pcapng)
  --file-prefix NAME     the application's EAL --file-prefix (default rte)
  -q                     print only the final counts
  -h, --help             this text";

struct Options {
    ports: Vec<u16>,
    dir: &'static str,
    snaplen: u32,
    count: u64,
    duration: Option<Duration>,
    file: PathBuf,
    prefix: String,
    quiet: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        ports: Vec::new(),
        dir: "both",
        snaplen: 262_144,
        count: 0,
        duration: None,
        file: std::env::temp_dir().join(format!("pktio-dumpcap_{}.pcapng", std::process::id())),
        prefix: "rte".into(),
        quiet: false,
    };
    let (mut rx, mut tx) = (false, false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| it.next().cloned()).ok_or_else(|| format!("{name} needs a value"));
        match name {
            "-h" | "--help" => return Err(String::new()),
            "-i" | "--interface" => {
                for p in value()?.split(',') {
                    o.ports.push(p.parse().map_err(|_| format!("-i {p:?}: expected a port id"))?);
                }
            }
            "--rx" => rx = true,
            "--tx" => tx = true,
            "-s" | "--snapshot-length" => {
                let v = value()?;
                o.snaplen = v.parse().ok().filter(|s| *s > 0).ok_or_else(|| format!("-s {v:?}: expected bytes"))?;
            }
            "-c" => {
                let v = value()?;
                o.count = v.parse().ok().filter(|c| *c > 0).ok_or_else(|| format!("-c {v:?}: expected a count"))?;
            }
            "-a" | "--autostop" => {
                let v = value()?;
                let secs = v.strip_prefix("duration:").and_then(|s| s.parse::<f64>().ok()).filter(|s| *s > 0.0);
                o.duration =
                    Some(Duration::from_secs_f64(secs.ok_or_else(|| format!("-a {v:?}: expected duration:SECONDS"))?));
            }
            "-w" => o.file = PathBuf::from(value()?),
            "--file-prefix" => o.prefix = value()?,
            "-q" => o.quiet = true,
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    if o.ports.is_empty() {
        o.ports.push(0);
    }
    o.dir = match (rx, tx) {
        (true, false) => "rx",
        (false, true) => "tx",
        _ => "both",
    };
    if o.file.is_relative() {
        o.file = std::env::current_dir().map_err(|e| e.to_string())?.join(&o.file);
    }
    Ok(o)
}

/// One request, one answer, parsed just enough: the text of `"key":"value"` or the number of `"key":N`.
fn ask(fd: &std::os::fd::OwnedFd, req: &str) -> Result<String, String> {
    telemetry::send(fd, req.as_bytes()).map_err(|e| format!("telemetry socket: {e}"))?;
    let answer = telemetry::recv(fd, telemetry::MAX_OUTPUT_LEN).map_err(|e| format!("telemetry socket: {e}"))?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

fn field<'a>(json: &'a str, key: &str) -> Option<&'a str> {
    let at = json.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &json[at..];
    Some(match rest.strip_prefix('"') {
        Some(s) => &s[..s.find('"')?],
        None => &rest[..rest.find([',', '}'])?],
    })
}

fn run(o: &Options) -> Result<(), String> {
    let dir = telemetry::runtime_dir(&o.prefix);
    let path = dir.join(telemetry::SOCKET_NAME);
    let fd = telemetry::connect(&path).map_err(|e| {
        format!(
            "cannot connect to {} ({e}): is an application with --file-prefix {} running with telemetry?",
            path.display(),
            o.prefix
        )
    })?;
    telemetry::recv(&fd, 1024).map_err(|e| format!("telemetry socket: {e}"))?;
    let ports = o.ports.iter().map(u16::to_string).collect::<Vec<_>>().join(":");
    let req = format!("/pktio/capture,start,{ports},{},{},{},{}", o.dir, o.snaplen, o.count, o.file.display());
    let answer = ask(&fd, &req)?;
    if let Some(e) = field(&answer, "error") {
        return Err(format!("capture refused: {e}"));
    }
    if !o.quiet {
        eprintln!("Capturing on port(s) {ports} ({}) to {}", o.dir, o.file.display());
    }
    eal::signal::install_handlers();
    let start = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let st = ask(&fd, "/pktio/capture,status")?;
        if field(&st, "status") != Some("running") {
            break;
        }
        if eal::stop_requested() || o.duration.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
    }
    let end = ask(&fd, "/pktio/capture,stop")?;
    if let Some(e) = field(&end, "error") {
        return Err(format!("stopping the capture: {e}"));
    }
    let n = |k| field(&end, k).unwrap_or("?").to_string();
    println!("Packets received/dropped on interface(s): {}/{}", n("received"), n("dropped"));
    println!("Packets written: {} to {}", n("written"), o.file.display());
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return;
        }
        Err(e) => {
            eprintln!("pktio-dumpcap: {e}\n{USAGE}");
            std::process::exit(1);
        }
    };
    if let Err(e) = run(&o) {
        eprintln!("pktio-dumpcap: {e}");
        std::process::exit(1);
    }
}
