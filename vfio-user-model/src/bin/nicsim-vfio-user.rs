//! `nicsim-vfio-user --model x540|82599|x710 --socket PATH [--tap NAME] [--mac 02:..] [--stats FILE] [--once]`: serves one
//! model port over vfio-user to QEMU (`-device vfio-user-pci,socket=PATH`), one client after another (the device
//! reset in between), or only the first with `--once`.
//!
//! The model runs in its own thread; with `--tap` its wire is that TAP interface (created, or attached to when it
//! exists and is persistent). `--stats FILE` rewrites FILE every 100 ms with the model's counters, interrupt
//! messages, fault count and each fault (`fault=...`) as `key=value` lines; every fault the model records is printed on stderr as it happens
//! (`nicsim-vfio-user: FAULT ...`), so a driver's misuse names its register.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nicsim::{X540Config, X540Port, X710Config, X710Port, X540, X710};
use vfio_user_model::{serve, Error, Model, ModelDevice, X540Model, X710Model};

struct Args {
    model: String,
    socket: PathBuf,
    tap: Option<String>,
    mac: Option<[u8; 6]>,
    stats: Option<PathBuf>,
    once: bool,
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let v: Vec<u8> = s.split(':').map(|p| u8::from_str_radix(p, 16)).collect::<Result<_, _>>().ok()?;
    v.try_into().ok()
}

fn parse() -> Result<Args, String> {
    let mut a = Args { model: "x540".into(), socket: PathBuf::new(), tap: None, mac: None, stats: None, once: false };
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
            "--once" => a.once = true,
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if a.socket.as_os_str().is_empty() {
        return Err("--socket PATH is required".into());
    }
    Ok(a)
}

/// The test's handle on whichever model is served.
#[derive(Clone)]
enum Port {
    X540(X540Port),
    X710(X710Port),
}

impl Port {
    fn faults(&self) -> Vec<nicsim::Fault> {
        match self {
            Port::X540(p) => p.faults(),
            Port::X710(p) => p.faults(),
        }
    }

    /// (rx_delivered, tx_sent, the stats file's other lines).
    fn report(&self) -> (u64, u64, String) {
        match self {
            Port::X540(p) => {
                let c = p.counters();
                let irqs: u64 = p.irq_counts().iter().sum();
                let more = format!(
                    "rx_missed={}\nrx_filtered={}\nrx_disabled={}\nrx_errors={}\ntx_dropped_link_down={}\nlink_up={}\nirq_messages={irqs}\n",
                    c.rx_missed,
                    c.rx_filtered,
                    c.rx_disabled,
                    c.rx_errors,
                    c.tx_dropped_link_down,
                    u8::from(p.link_is_up())
                );
                (c.rx_delivered, c.tx_sent, more)
            }
            Port::X710(p) => {
                let c = p.counters();
                let more = format!(
                    "rx_missed={}\nrx_filtered={}\nrx_disabled={}\ntx_dropped_link_down={}\nlink_up={}\n",
                    c.rx_missed,
                    c.rx_filtered,
                    c.rx_disabled,
                    c.tx_dropped_link_down,
                    u8::from(p.link_up())
                );
                (c.rx_delivered, c.tx_sent, more)
            }
        }
    }
}

/// Serves `device` (one client after another, see the crate docs) while a reporter thread prints faults and
/// rewrites the stats file.
fn run<M: Model>(args: &Args, device: &mut ModelDevice<M>, port: &Port, stats: Option<PathBuf>) -> Result<(), Error> {
    let routes = device.irqs();
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
            if let Some(path) = &stats {
                let (rx, tx, more) = p2.report();
                let sent = routes.sent();
                let mut text = format!(
                    "rx_delivered={rx}\ntx_sent={tx}\n{more}irq_intx={}\nirq_msi={}\nirq_msix={}\nfaults={}\n",
                    sent[0],
                    sent[1],
                    sent[2],
                    faults.len()
                );
                // The faults themselves, one line each, so that a host check can name the register.
                for f in &faults {
                    text += &format!("fault={}\n", format!("{f:?}").replace('\n', " "));
                }
                let tmp = path.with_extension("tmp");
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
        let (rx, tx, _) = port.report();
        eprintln!(
            "nicsim-vfio-user: client gone; rx_delivered={rx} tx_sent={tx} faults={} odd_accesses={}",
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

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("nicsim-vfio-user: {e}\nusage: nicsim-vfio-user --model x540|82599|x710 --socket PATH [--tap NAME] [--mac MAC] [--stats FILE] [--once]");
            return ExitCode::from(2);
        }
    };
    let stats = args.stats.clone();
    let result = match args.model.as_str() {
        "x540" | "82599" => {
            let mut config = if args.model == "x540" { X540Config::default() } else { X540Config::x82599() };
            if let Some(mac) = args.mac {
                config.mac = mac;
            }
            let (bar, port) = X540::new(config);
            if let Err(e) = args.tap.as_deref().map(|t| port.wire_to_tap(t)).transpose() {
                eprintln!("nicsim-vfio-user: TAP: {e}");
                return ExitCode::FAILURE;
            }
            let _thread = port.start_thread();
            let mut device = ModelDevice::new(X540Model { bar, port: port.clone() });
            run(&args, &mut device, &Port::X540(port), stats)
        }
        "x710" => {
            let mut config = X710Config::default();
            if let Some(mac) = args.mac {
                config.mac = mac;
            }
            let (bar, port) = X710::new(config);
            if let Err(e) = args.tap.as_deref().map(|t| port.wire_to_tap(t)).transpose() {
                eprintln!("nicsim-vfio-user: TAP: {e}");
                return ExitCode::FAILURE;
            }
            let _thread = port.start_thread();
            let mut device = ModelDevice::new(X710Model { bar, port: port.clone() });
            run(&args, &mut device, &Port::X710(port), stats)
        }
        other => {
            eprintln!("nicsim-vfio-user: unknown model {other} (x540, 82599, x710)");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nicsim-vfio-user: {e}");
            ExitCode::FAILURE
        }
    }
}
