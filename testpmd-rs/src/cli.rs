//! The `testpmd> ` prompt: command parsing and dispatch, help, tab completion, and the line sources (rustyline on
//! a terminal, plain lines from stdin otherwise so scripts can drive it).

use std::io::{BufRead, IsTerminal, Write};

use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};

use crate::app::{App, CmdResult};
use crate::fwd::FwdMode;
use crate::params::{parse_txpkts, MAX_BURST};

/// The prompt.
pub const PROMPT: &str = "testpmd> ";

/// What the loop should do after a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    /// Read the next command.
    Continue,
    /// Leave.
    Quit,
}

/// Command templates: what `help` lists and what tab completion offers. `<...>` are values.
const COMMANDS: &[(&str, &str)] = &[
    ("start", "start packet forwarding"),
    ("start tx_first <n>", "send n bursts (default 1) of txonly packets on every stream, then forward"),
    ("stop", "stop forwarding and print the forward statistics"),
    ("show port stats all|<port>", "NIC statistics with throughput since the last show"),
    ("show port xstats all|<port>", "extended statistics"),
    ("show port info all|<port>", "port information"),
    ("clear port stats all|<port>", "zero the NIC statistics"),
    ("clear port xstats all|<port>", "zero the extended statistics"),
    ("show fwd stats all", "forward statistics since forwarding started"),
    ("clear fwd stats all", "restart the forward statistics"),
    ("show config fwd", "streams and their lcores"),
    ("show config rxtx", "queue configuration"),
    ("show config cores", "forwarding lcores"),
    ("show mempool", "free buffers in the packet pool"),
    ("set fwd <mode>", "forwarding mode"),
    ("set nbcore <n>", "number of forwarding cores"),
    ("set nbport <n>", "number of forwarding ports"),
    ("set burst <n>", "packets per burst (1..512)"),
    ("set txpkts <len>[,<len>...]", "segment lengths of generated packets"),
    ("set promisc all|<port> on|off", "promiscuous mode"),
    ("set allmulti all|<port> on|off", "all-multicast mode"),
    ("set eth-peer <port> <mac>", "peer MAC address of a port (mac, csum, txonly)"),
    ("set record <file>|off", "write every packet sent into a pcap file (from the next start)"),
    ("port start all|<port>", "start ports"),
    ("port stop all|<port>", "stop ports"),
    ("port config all rxq|txq|rxd|txd <n>", "queues or descriptors per port (ports stopped)"),
    ("port config mtu <port> <mtu>", "MTU of a port"),
    ("help", "this list"),
    ("quit", "stop everything and exit"),
];

fn print_help() {
    println!("Commands (modes: {}):", FwdMode::names());
    for (cmd, what) in COMMANDS {
        println!("  {cmd:<40} {what}");
    }
}

fn parse_num<T: std::str::FromStr>(what: &str, v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("Bad arguments: {what} {v:?} is not a valid number"))
}

fn on_off(v: &str) -> Result<bool, String> {
    match v {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("Bad arguments: expected on or off, not {v:?}")),
    }
}

/// Runs one command line.
pub fn execute(app: &mut App, line: &str) -> (Flow, CmdResult) {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.is_empty() || words[0].starts_with('#') {
        return (Flow::Continue, Ok(()));
    }
    if words == ["quit"] {
        return (Flow::Quit, Ok(()));
    }
    (Flow::Continue, dispatch(app, &words))
}

fn dispatch(app: &mut App, w: &[&str]) -> CmdResult {
    let bad = || Err::<(), String>(format!("Bad arguments: {:?} (type help)", w.join(" ")));
    match w {
        ["help", ..] => {
            print_help();
            Ok(())
        }
        ["start"] => app.start(0),
        ["start", "tx_first"] => app.start(1),
        ["start", "tx_first", n] => {
            let n: u32 = parse_num("tx_first", n)?;
            if n == 0 {
                return Err("Bad arguments: tx_first needs at least 1 burst".into());
            }
            app.start(n)
        }
        ["stop"] => app.stop(),
        ["show", "port", what, which] => {
            let ids = app.ports_arg(which)?;
            match *what {
                "stats" => app.show_port_stats(&ids),
                "xstats" => app.show_port_xstats(&ids),
                "info" => app.show_port_info(&ids),
                _ => return bad(),
            }
            Ok(())
        }
        ["clear", "port", what, which] => {
            let ids = app.ports_arg(which)?;
            match *what {
                "stats" => app.clear_port_stats(&ids),
                "xstats" => app.clear_port_xstats(&ids),
                _ => return bad(),
            }
            Ok(())
        }
        ["show", "fwd", "stats", "all"] => {
            app.show_fwd_stats();
            Ok(())
        }
        ["clear", "fwd", "stats", "all"] => {
            app.clear_fwd_stats();
            Ok(())
        }
        ["show", "config", what] => {
            match *what {
                "fwd" => app.show_config_fwd(),
                "rxtx" => app.show_config_rxtx(),
                "cores" => app.show_config_cores(),
                _ => return bad(),
            }
            Ok(())
        }
        ["show", "mempool"] => {
            app.show_mempool();
            Ok(())
        }
        ["set", "fwd", mode] | ["set", "fwd", mode, "retry"] => {
            let m: FwdMode = mode.parse().map_err(|e| format!("Bad arguments: {e}"))?;
            if app.is_forwarding() {
                return Err("Please stop forwarding first (stop)".into());
            }
            app.set.mode = m;
            println!("Set {m} packet forwarding mode");
            Ok(())
        }
        ["set", "nbcore", n] => {
            if app.is_forwarding() {
                return Err("Please stop forwarding first (stop)".into());
            }
            app.set_nb_cores(parse_num("nbcore", n)?)
        }
        ["set", "nbport", n] => {
            if app.is_forwarding() {
                return Err("Please stop forwarding first (stop)".into());
            }
            app.set_nb_ports(parse_num("nbport", n)?)
        }
        ["set", "burst", n] => {
            let n: u16 = parse_num("burst", n)?;
            if n == 0 || n > MAX_BURST {
                return Err(format!("burst must be >= 1 && <= {MAX_BURST}"));
            }
            if app.is_forwarding() {
                return Err("Please stop forwarding first (stop)".into());
            }
            app.set.burst = n;
            println!("Number of packets per burst set to {n}");
            Ok(())
        }
        ["set", "txpkts", list] => {
            if app.is_forwarding() {
                return Err("Please stop forwarding first (stop)".into());
            }
            app.set_txpkts(parse_txpkts(list).map_err(|e| format!("Bad arguments: {e}"))?)
        }
        ["set", "promisc", which, v] | ["set", "allmulti", which, v] => {
            let ids = app.ports_arg(which)?;
            let on = on_off(v)?;
            for id in ids {
                let dev = &mut app.ports[id as usize].dev;
                let r = if w[1] == "promisc" { dev.set_promiscuous(on) } else { dev.set_allmulticast(on) };
                r.map_err(|e| format!("Error during setting {} mode of port {id}: {e}", w[1]))?;
            }
            Ok(())
        }
        ["set", "eth-peer", port, mac] => {
            let id = *app.ports_arg(port)?.first().ok_or("Bad arguments")?;
            if *port == "all" {
                return Err("Bad arguments: set eth-peer takes one port".into());
            }
            let mac = mac.parse().map_err(|e| format!("Error: Invalid ethernet address: {e}"))?;
            if app.is_forwarding() {
                return Err("Please stop forwarding first (stop)".into());
            }
            app.peers[id as usize] = mac;
            Ok(())
        }
        ["set", "record", what] => app.set_record(what),
        ["port", "start", which] => {
            let ids = app.ports_arg(which)?;
            app.start_ports(&ids)
        }
        ["port", "stop", which] => {
            let ids = app.ports_arg(which)?;
            app.stop_ports(&ids)
        }
        ["port", "config", "all", what, n] => {
            let n: u16 = parse_num(what, n)?;
            app.port_config_all(what, n)
        }
        ["port", "config", "mtu", port, mtu] => {
            let ids = app.ports_arg(port)?;
            let mtu: u16 = parse_num("mtu", mtu)?;
            for id in ids {
                app.set_mtu(id, mtu)?;
            }
            Ok(())
        }
        ["port", "config", _, ..] => {
            Err("Bad arguments: port config all rxq|txq|rxd|txd N, or port config mtu N M".into())
        }
        [first, ..] if ["show", "clear", "set", "port", "start"].contains(first) => bad(),
        _ => Err(format!("Command not found: {:?} (type help)", w.join(" "))),
    }
}

/// Tab completion over [`COMMANDS`].
struct CmdHelper;

fn completions(line: &str) -> (usize, Vec<String>) {
    let start = line.rfind(char::is_whitespace).map(|i| i + 1).unwrap_or(0);
    let done: Vec<&str> = line[..start].split_whitespace().collect();
    let partial = &line[start..];
    let mut out: Vec<String> = Vec::new();
    for (tmpl, _) in COMMANDS {
        let words: Vec<&str> = tmpl.split_whitespace().collect();
        if words.len() <= done.len() {
            continue;
        }
        let matches = done.iter().zip(&words).all(|(d, t)| t.starts_with('<') || t.split('|').any(|alt| alt == *d));
        if !matches {
            continue;
        }
        let next = words[done.len()];
        let alts: Vec<String> = if next == "<mode>" {
            FwdMode::ALL.iter().map(|m| m.name().to_string()).collect()
        } else {
            next.split('|').filter(|a| !a.starts_with('<')).map(String::from).collect()
        };
        for a in alts {
            if a.starts_with(partial) && !out.contains(&a) {
                out.push(a);
            }
        }
    }
    (start, out)
}

impl Completer for CmdHelper {
    type Candidate = String;
    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(completions(&line[..pos]))
    }
}
impl Hinter for CmdHelper {
    type Hint = String;
}
impl Highlighter for CmdHelper {}
impl Validator for CmdHelper {}
impl Helper for CmdHelper {}

fn report(r: CmdResult) {
    if let Err(e) = r {
        println!("{e}");
    }
}

/// Runs the prompt until `quit` or end of input, then quits the application.
pub fn run_prompt(mut app: App) {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        match Editor::<CmdHelper, DefaultHistory>::new() {
            Ok(mut ed) => {
                ed.set_helper(Some(CmdHelper));
                loop {
                    match ed.readline(PROMPT) {
                        Ok(line) => {
                            if !line.trim().is_empty() {
                                let _ = ed.add_history_entry(line.as_str());
                            }
                            let (flow, r) = execute(&mut app, &line);
                            report(r);
                            if flow == Flow::Quit {
                                break;
                            }
                        }
                        Err(rustyline::error::ReadlineError::Interrupted) => continue,
                        Err(_) => {
                            println!();
                            break;
                        }
                    }
                }
                app.quit();
                return;
            }
            Err(e) => println!("Warning: no line editing ({e}); reading plain lines"),
        }
    }
    // Lines come from a reader thread so that a stop request (SIGINT, SIGTERM) is seen while waiting for input.
    let (tx, rx) = std::sync::mpsc::channel::<Option<String>>();
    std::thread::spawn(move || {
        let mut input = stdin.lock();
        loop {
            let mut line = String::new();
            match input.read_line(&mut line) {
                Ok(0) | Err(_) => {
                    let _ = tx.send(None);
                    return;
                }
                Ok(_) => {
                    if tx.send(Some(line)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    'prompt: loop {
        print!("{PROMPT}");
        let _ = std::io::stdout().flush();
        let line = loop {
            match rx.recv_timeout(std::time::Duration::from_millis(50)) {
                Ok(Some(line)) => break line,
                Ok(None) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    println!();
                    break 'prompt;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if eal::stop_requested() {
                        println!("\nSignal received, preparing to exit...");
                        break 'prompt;
                    }
                }
            }
        };
        // Echo the command so a script's output reads like a session.
        println!("{}", line.trim_end());
        let (flow, r) = execute(&mut app, &line);
        report(r);
        if flow == Flow::Quit {
            break;
        }
    }
    app.quit();
}

#[cfg(test)]
mod tests {
    use super::completions;

    #[test]
    fn completion_follows_the_templates() {
        assert_eq!(completions("sh").1, ["show"]);
        assert_eq!(completions("show po").1, ["port"]);
        assert_eq!(completions("show port ").1, ["stats", "xstats", "info"]);
        assert_eq!(completions("set fwd mac").1, ["mac", "macswap"]);
        assert_eq!(completions("show port stats ").1, ["all"]);
        assert_eq!(completions("start ").1, ["tx_first"]);
        assert!(completions("bogus ").1.is_empty());
    }
}
