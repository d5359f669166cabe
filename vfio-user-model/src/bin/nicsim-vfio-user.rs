//! `nicsim-vfio-user --model x540|82599|x710|sp670 --socket PATH [--tap NAME] [--mac 02:..] [--stats FILE]
//! [--control FILE] [--once]`: serves one
//! model port over vfio-user to QEMU (`-device vfio-user-pci,socket=PATH`), one client after another (the device
//! reset in between), or only the first with `--once`.
//!
//! The model runs in its own thread; with `--tap` its wire is that TAP interface (created, or attached to when it
//! exists and is persistent). `--stats FILE` rewrites FILE every 100 ms with the model's counters, interrupt
//! messages, fault count and each fault (`fault=...`) as `key=value` lines (the counters are the model's own, by
//! name: `rx_delivered` and `tx_sent` for every model); every fault the model records is printed on stderr as it happens
//! (`nicsim-vfio-user: FAULT ...`), so a driver's misuse names its register. `--control FILE`: a file written there
//! (checked every 100 ms, then removed) holds commands for the model's wire, one per line: `cable 0` pulls the
//! cable, `cable 1` plugs it in (the guest sees a link change, and its link-state interrupt where it has one).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nicsim::{Model, ModelPort, Sp670Config, Sp670State, X540Config, X540State, X710Config, X710State};
use vfio_user_model::{serve, Error, ModelDevice};

struct Args {
    model: String,
    socket: PathBuf,
    tap: Option<String>,
    mac: Option<[u8; 6]>,
    stats: Option<PathBuf>,
    control: Option<PathBuf>,
    once: bool,
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let v: Vec<u8> = s.split(':').map(|p| u8::from_str_radix(p, 16)).collect::<Result<_, _>>().ok()?;
    v.try_into().ok()
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        model: "x540".into(),
        socket: PathBuf::new(),
        tap: None,
        mac: None,
        stats: None,
        control: None,
        once: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--model" => a.model = val()?,
            "--socket" => a.socket = val()?.into(),
            "--tap" => a.tap = Some(val()?),
            "--mac" => {
                let v = val()?;
                a.mac = Some(parse_mac(&v).ok_or_else(|| format!("--mac {v}: want six hex bytes with colons"))?);
            }
            "--stats" => a.stats = Some(val()?.into()),
            "--control" => a.control = Some(val()?.into()),
            "--once" => a.once = true,
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if a.socket.as_os_str().is_empty() {
        return Err("--socket PATH is required".into());
    }
    Ok(a)
}

/// The stats file's text: the model's counters by name, link, interrupt messages per kind, faults.
fn report<S: Model>(port: &ModelPort<S>, sent: [u64; 3], faults: &[nicsim::Fault]) -> String {
    let mut text: String = port.named_counters().iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    text += &format!(
        "link_up={}\nirq_intx={}\nirq_msi={}\nirq_msix={}\nfaults={}\n",
        u8::from(port.link_up()),
        sent[0],
        sent[1],
        sent[2],
        faults.len()
    );
    // The faults themselves, one line each, so that a host check can name the register.
    for f in faults {
        text += &format!("fault={}\n", format!("{f:?}").replace('\n', " "));
    }
    text
}

/// Runs the commands of a control file (see the crate docs) and removes it; a bad line is reported and skipped.
fn control<S: Model>(port: &ModelPort<S>, path: &std::path::Path) {
    let Ok(text) = std::fs::read_to_string(path) else { return };
    let _ = std::fs::remove_file(path);
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["cable", "0"] => port.set_cable(false),
            ["cable", "1"] => port.set_cable(true),
            _ => eprintln!("nicsim-vfio-user: control {}: unknown command {line:?} (cable 0|1)", path.display()),
        }
    }
}

/// Serves `device` (one client after another, see the crate docs) while a reporter thread prints faults, runs the
/// control file's commands and rewrites the stats file.
fn run<S: Model>(args: &Args, device: &mut ModelDevice<S>, stats: Option<PathBuf>) -> Result<(), Error> {
    let control_file = args.control.clone();
    let routes = device.irqs();
    let port = device.model().clone();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let p2 = port.clone();
    let reporter = std::thread::spawn(move || {
        let mut seen = 0;
        while !stop2.load(Ordering::Acquire) {
            let faults = p2.faults();
            for f in &faults[seen.min(faults.len())..] {
                eprintln!("nicsim-vfio-user: FAULT {f:?}");
            }
            seen = faults.len();
            if let Some(path) = &control_file {
                control(&p2, path);
            }
            if let Some(path) = &stats {
                let tmp = path.with_extension("tmp");
                let text = report(&p2, routes.sent(), &faults);
                if std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path)).is_err() {
                    eprintln!("nicsim-vfio-user: cannot write {}", path.display());
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    // One client at a time, one after the other (a guest that reboots reconnects), until a client fails or the
    // process is killed.
    let result = loop {
        eprintln!("nicsim-vfio-user: serving {} on {}", args.model, args.socket.display());
        let r = serve(&args.socket, device);
        let _ = std::fs::remove_file(&args.socket);
        let counts = port.frame_counts();
        eprintln!(
            "nicsim-vfio-user: client gone; rx_delivered={} tx_sent={} faults={} odd_accesses={}",
            counts.rx_delivered,
            counts.tx_sent,
            port.faults().len(),
            device.odd_accesses
        );
        if r.is_err() || args.once {
            break r;
        }
        device.client_gone();
    };
    stop.store(true, Ordering::Release);
    let _ = reporter.join();
    result
}

/// Builds the model port, wires it to the TAP if asked, runs its thread and serves it.
fn serve_model<S: Model>(args: &Args, config: S::Config) -> ExitCode {
    let port = ModelPort::<S>::create(config);
    if let Err(e) = args.tap.as_deref().map(|t| port.wire_to_tap(t)).transpose() {
        eprintln!("nicsim-vfio-user: TAP: {e}");
        return ExitCode::FAILURE;
    }
    let _thread = port.start_thread();
    let mut device = ModelDevice::new(port);
    match run(args, &mut device, args.stats.clone()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nicsim-vfio-user: {e}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str =
    "usage: nicsim-vfio-user --model x540|82599|x710|sp670 --socket PATH [--tap NAME] [--mac MAC] [--stats FILE] [--control FILE] [--once]";

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("nicsim-vfio-user: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mac = |default: [u8; 6]| args.mac.unwrap_or(default);
    match args.model.as_str() {
        "x540" => {
            serve_model::<X540State>(&args, X540Config { mac: mac(X540Config::default().mac), ..Default::default() })
        }
        "82599" => {
            let base = X540Config::x82599();
            serve_model::<X540State>(&args, X540Config { mac: mac(base.mac), ..base })
        }
        "x710" => {
            // A real X710's firmware reports the flow director (capability 0x45, docs/hw/i40e.md §6.2), and a PF
            // has more queue pairs than the 64 of a main VSI: DPDK's PMD wants 64 for it plus one for the flow
            // director ("Failed to allocate 65 queues" with only 64).
            let base = X710Config { flow_director: true, num_queues: 128, ..Default::default() };
            serve_model::<X710State>(&args, X710Config { mac: mac(base.mac), ..base })
        }
        "sp670" => {
            // DPDK's PMD acknowledges events from its interrupt thread into the mailbox window its main thread
            // writes requests to, unserialised; guest MMIO is slow enough for the two to meet. Events therefore go
            // out with a request's answer, or after 200 ms without requests (docs/hw/hinic3.md §6.5).
            let quiet = Duration::from_millis(200);
            serve_model::<Sp670State>(
                &args,
                Sp670Config { mac: mac(Sp670Config::default().mac), event_quiet: quiet, ..Default::default() },
            )
        }
        other => {
            eprintln!("nicsim-vfio-user: unknown model {other} (x540, 82599, x710, sp670)\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
