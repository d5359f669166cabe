//! netstack-ctl: shows a running netstack server's addresses, ARP table, sockets and counters (in the spirit of
//! F-Stack's ifconfig/arp/netstat tools), over the control sockets the server's lcores answer on.
//!
//! `netstack-ctl [--config FILE | --name NAME] [--dir DIR] [addr|arp|sockets|counters|all]`

use std::path::PathBuf;
use std::process::ExitCode;

use netstack::config::{default_control_dir, Config};
use netstack::control;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("netstack-ctl: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut name, mut dir, mut command) = ("netstack".to_owned(), None, "all".to_owned());
    while let Some(a) = args.next() {
        let mut value = |n: &str| args.next().ok_or(format!("{n} needs a value"));
        match a.as_str() {
            "--config" => {
                let c = Config::load(&PathBuf::from(value("--config")?)).map_err(|e| e.to_string())?;
                name = c.control_name;
                dir.get_or_insert(c.control_dir);
            }
            "--name" => name = value("--name")?,
            "--dir" => dir = Some(PathBuf::from(value("--dir")?)),
            "-h" | "--help" => {
                println!(
                    "usage: netstack-ctl [--config FILE | --name NAME] [--dir DIR] [addr|arp|sockets|counters|all]"
                );
                return Ok(());
            }
            c if !c.starts_with('-') => command = c.to_owned(),
            other => return Err(format!("unknown option `{other}` (see --help)")),
        }
    }
    let dir = dir.unwrap_or_else(default_control_dir);
    let prefix = format!("netstack-{name}.");
    let mut sockets: Vec<(u32, PathBuf)> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let file = e.file_name().into_string().ok()?;
            let lcore = file.strip_prefix(&prefix)?.strip_suffix(".sock")?.parse().ok()?;
            Some((lcore, e.path()))
        })
        .collect();
    sockets.sort();
    if sockets.is_empty() {
        return Err(format!("no server `{name}` in {} (no {prefix}<lcore>.sock)", dir.display()));
    }
    for (lcore, path) in sockets {
        let answer = control::request(&path, &command).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("== lcore {lcore} ==");
        print!("{answer}");
    }
    Ok(())
}
