//! The `testpmd> ` prompt: command parsing and dispatch, help, tab completion, and the line sources (rustyline on
//! a terminal, plain lines from stdin otherwise so scripts can drive it).

use std::io::{IsTerminal, Write};

use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};

use crate::app::{App, CmdResult};
use crate::command::{self, quote, Command, ConfigView, PortView};
use crate::fwd::FwdMode;
use crate::lines::{self, Line};

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

/// Command templates: what `help` lists (by dpdk-testpmd's sections) and what tab completion offers. `<...>` are
/// values.
const COMMANDS: &[(&str, &str, &str)] = &[
    ("control", "start", "start packet forwarding"),
    (
        "control",
        "start tx_first <n>",
        "send n bursts (default 1; 0: none) of txonly packets on every stream, then forward",
    ),
    ("control", "stop", "stop forwarding and print the forward statistics"),
    ("control", "quit", "stop everything and exit"),
    ("display", "show port stats all|<port>", "NIC statistics with throughput since the last show"),
    ("display", "show port xstats all|<port>", "extended statistics"),
    ("display", "show port info all|<port>", "port information"),
    ("display", "show port summary all|<port>", "one line per port"),
    ("display", "show port <port> rss-hash [key]", "RSS hash functions (and key)"),
    ("display", "show port <port> rss reta <size> <mask>[,<mask>...]", "redirection table entries"),
    ("display", "show port <port> module_eeprom", "module EEPROM (no port here has one readable)"),
    ("display", "show port <port> macs", "unicast MAC addresses the port receives for"),
    ("display", "show device info all", "devices probed"),
    ("display", "clear port stats all|<port>", "zero the NIC statistics"),
    ("display", "clear port xstats all|<port>", "zero the extended statistics"),
    ("display", "show rxq|txq info <port> <queue>", "information for a configured RX/TX queue"),
    ("display", "show fwd stats all", "forward statistics since forwarding started"),
    ("display", "clear fwd stats all", "restart the forward statistics"),
    ("display", "show config fwd|rxtx|cores|txpkts|rxpkts|rxoffs", "forwarding configuration"),
    ("display", "show mempool", "free buffers in the packet pool"),
    ("config", "set fwd <mode> [retry]", "forwarding mode (retry: offer a partly sent burst again)"),
    ("config", "set nbcore <n>", "number of forwarding cores"),
    ("config", "set nbport <n>", "number of forwarding ports"),
    ("config", "set coremask <mask>", "forwarding lcores as a mask"),
    ("config", "set portmask <mask>", "forwarding ports as a mask"),
    ("config", "set burst <n>", "packets per burst (1..512)"),
    ("config", "set burst tx delay <us> retry <n>", "TX retries of the retry modes (default 1 us, 64)"),
    ("config", "set txpkts <len>[,<len>...]", "segment lengths of generated packets"),
    ("config", "set txsplit off|on|rand", "txonly packets: all txpkts segments (off, on) or 1..N at random (rand)"),
    ("config", "set verbose <n>", "verbosity: 1 dumps received bursts, 2 sent ones, 3 both"),
    ("config", "set flush_rx on|off", "empty the RX queues when forwarding starts"),
    ("config", "set record-burst-stats on|off", "burst sizes in the forward statistics (from the next start)"),
    (
        "config",
        "set record-core-cycles on|off",
        "CPU cycles per packet in the forward statistics (from the next start)",
    ),
    ("config", "set eth-peer <port> <mac>", "peer MAC address of a port (mac, csum, txonly)"),
    ("config", "set record <file>|off", "write every packet sent into a pcap file (from the next start)"),
    ("config", "vlan set strip on|off <port>", "VLAN stripping (where the port can)"),
    ("config", "vlan set filter on|off <port>", "receive VLAN filter on or off (X540/82599 and X710 ports)"),
    ("config", "rx_vlan add|rm <vlan>|all <port>", "receive VLAN filter (X540/82599 and X710 ports)"),
    ("ports", "port start all|<port>", "start ports"),
    ("ports", "port stop all|<port>", "stop ports"),
    ("ports", "port close all|<port>", "close stopped ports"),
    ("ports", "port reset all|<port>", "configure stopped ports afresh at their next start"),
    ("ports", "port config all rxq|txq|rxd|txd <n>", "queues or descriptors per port (ports stopped)"),
    ("ports", "port config all rss ip|udp|tcp|none", "RSS hash functions"),
    ("ports", "port config <port> rss reta (<index>,<queue>)[,...]", "redirection table entries"),
    ("ports", "port config mtu <port> <mtu>", "MTU of a port"),
    ("ports", "set promisc all|<port> on|off", "promiscuous mode"),
    ("ports", "set allmulti all|<port> on|off", "all-multicast mode"),
    ("ports", "set link-up|link-down port <port>", "administrative link state"),
    (
        "ports",
        "set stat_qmap tx|rx <port> <queue> <map>",
        "queue to counter set N of rx_qN_*/tx_qN_* in xstats (X540/82599)",
    ),
    ("ports", "mac_addr add|remove|set <port> <mac>", "default (set) or secondary (add/remove) MAC addresses"),
    ("help", "help [control|display|config|ports|registers|filters|traffic_management|devices|drivers|all]", "help"),
];

/// dpdk-testpmd's help sections and what each holds here.
const SECTIONS: &[(&str, &str)] = &[
    ("control", "Start and stop forwarding."),
    ("display", "Displaying port, stats and config information."),
    ("config", "Configuration information."),
    ("ports", "Configuring ports."),
    ("registers", "Reading and setting port registers (none here)."),
    ("filters", "Filters configuration help (none here)."),
    ("traffic_management", "Traffic Management commands (none here)."),
    ("devices", "Device related commands."),
    ("drivers", "Driver specific commands (none here)."),
    ("all", "All of the above sections."),
];

fn print_help(section: Option<&str>) -> CmdResult {
    let Some(section) = section else {
        println!("\nHelp is available for the following sections:\n");
        for (name, what) in SECTIONS {
            println!("    help {name:<28}: {what}");
        }
        println!("\nForwarding modes: {}", FwdMode::names());
        return Ok(());
    };
    if !SECTIONS.iter().any(|(n, _)| *n == section) {
        return Err(format!("Bad arguments: help {}: sections are {}", quote(section), {
            SECTIONS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        }));
    }
    let wanted = |s: &str| section == "all" || s == section || (section == "devices" && s == "display");
    let mut any = false;
    for (s, cmd, what) in COMMANDS {
        if wanted(s) && (section != "devices" || cmd.contains("device")) {
            if !any {
                println!("\n{section}:\n");
            }
            any = true;
            println!("{cmd}\n    {what}\n");
        }
    }
    if !any {
        println!("\n{section}: testpmd-rs has none of these commands.");
    }
    Ok(())
}

/// Runs one command line.
pub fn execute(app: &mut App, line: &str) -> (Flow, CmdResult) {
    match command::parse(line) {
        Ok(Command::Quit) => (Flow::Quit, Ok(())),
        Ok(cmd) => (Flow::Continue, run(app, cmd)),
        Err(e) => (Flow::Continue, Err(e)),
    }
}

fn not_forwarding(app: &App) -> CmdResult {
    if app.is_forwarding() {
        return Err("Please stop forwarding first (stop)".into());
    }
    Ok(())
}

/// Runs a parsed command.
pub fn run(app: &mut App, cmd: Command<'_>) -> CmdResult {
    use Command as C;
    match cmd {
        C::Nothing | C::Quit => Ok(()),
        C::Help(section) => print_help(section),
        C::Start { tx_first } => app.start(tx_first),
        C::Stop => app.stop(),
        C::ShowPort { view, ports } => {
            let ids = app.ports_arg(ports)?;
            match view {
                PortView::Stats => app.show_port_stats(&ids),
                PortView::Xstats => app.show_port_xstats(&ids),
                PortView::Info => app.show_port_info(&ids),
                PortView::Summary => app.show_port_summary(),
            }
            Ok(())
        }
        C::ShowRssHash { port, key } => app.show_rss_hash(one_port(app, port)?, key),
        C::ShowReta { port, size, masks } => app.show_reta(one_port(app, port)?, size, masks),
        C::ShowEeprom { port } => {
            let id = one_port(app, port)?;
            // dpdk-testpmd's -ENOTSUP line, then why: no driver here reads a module EEPROM (the X540 is copper,
            // with no SFP cage; DPDK's own ixgbe tries I2C there and reports the failure as -EIO).
            Err(format!(
                "operation not supported by device\n  port {id} ({}): no module EEPROM is readable through this \
                 driver",
                app.ports[id as usize].dev.info().driver_name
            ))
        }
        C::ShowDeviceInfo => {
            app.show_device_info();
            Ok(())
        }
        C::ShowQueueInfo { rx, port, queue } => app.show_queue_info(rx, port, queue),
        C::ClearPort { view, ports } => {
            let ids = app.ports_arg(ports)?;
            if view == PortView::Xstats {
                app.clear_port_xstats(&ids)
            } else {
                app.clear_port_stats(&ids)
            }
            Ok(())
        }
        C::ShowFwdStats => {
            app.show_fwd_stats();
            Ok(())
        }
        C::ClearFwdStats => {
            app.clear_fwd_stats();
            Ok(())
        }
        C::ShowConfig(view) => {
            match view {
                ConfigView::Fwd => app.show_config_fwd(),
                ConfigView::Rxtx => app.show_config_rxtx(),
                ConfigView::Cores => app.show_config_cores(),
                ConfigView::Txpkts => app.show_config_txpkts(),
                ConfigView::Rxpkts => app.show_config_rxpkts(),
                ConfigView::Rxoffs => app.show_config_rxoffs(),
            }
            Ok(())
        }
        C::ShowMempool => {
            app.show_mempool();
            Ok(())
        }
        C::SetFwd { mode, retry } => {
            not_forwarding(app)?;
            app.set.mode = mode;
            app.set.retry = retry;
            println!("Set {mode} packet forwarding mode{}", if retry { " with retry" } else { "" });
            Ok(())
        }
        C::SetNbCore(n) => {
            not_forwarding(app)?;
            app.set_nb_cores(n)
        }
        C::SetNbPort(n) => {
            not_forwarding(app)?;
            app.set_nb_ports(n)
        }
        C::SetCoremask(m) => app.set_coremask(m),
        C::SetPortmask(m) => app.set_portmask(m),
        C::SetBurst(n) => {
            not_forwarding(app)?;
            app.set.burst = n;
            println!("Number of packets per burst set to {n}");
            Ok(())
        }
        C::SetTxRetry { delay_us, n } => {
            not_forwarding(app)?;
            app.set.retry_num_delay = (n, delay_us);
            Ok(())
        }
        C::SetTxpkts(segs) => {
            not_forwarding(app)?;
            app.set_txpkts(segs)
        }
        C::SetTxsplit(how) => {
            if how == "on" {
                // dpdk-testpmd's txonly builds every packet from all the txpkts segments with split off or on; on
                // matters to its csum mode, which re-splits forwarded packets (not done here).
                println!("Note: txonly packets use all the txpkts segments either way; csum mode does not re-split");
            }
            app.set.txsplit = how.to_string();
            Ok(())
        }
        C::SetPromisc { allmulti, ports, on } => {
            let what = if allmulti { "allmulti" } else { "promisc" };
            for id in app.ports_arg(ports)? {
                let dev = &mut app.ports[id as usize].dev;
                let r = if allmulti { dev.set_allmulticast(on) } else { dev.set_promiscuous(on) };
                r.map_err(|e| format!("Error during setting {what} mode of port {id}: {e}"))?;
            }
            Ok(())
        }
        C::SetLink { port, up } => {
            let id = one_port(app, port)?;
            app.set_link(id, up)
        }
        C::SetFlushRx(on) => {
            app.set.flush_rx = on;
            Ok(())
        }
        C::SetVerbose(n) => {
            println!("Change verbose level from {} to {n}", app.set.verbose);
            app.set.verbose = n;
            crate::dump::VERBOSE.store(n, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        }
        C::SetStatQmap { dir, port, queue, map } => {
            let id = one_port(app, port)?;
            app.set_stat_qmap(id, dir == "rx", queue, map)
        }
        C::SetRecordBurstStats(on) => {
            app.set.record_burst_stats = on;
            Ok(())
        }
        C::SetRecordCoreCycles(on) => {
            app.set.record_core_cycles = on;
            Ok(())
        }
        C::SetEthPeer { port, mac } => {
            let id = one_port(app, port)?;
            not_forwarding(app)?;
            app.peers[id as usize] = mac;
            Ok(())
        }
        C::SetRecord(what) => app.set_record(what),
        C::PortStart(ports) => {
            let ids = app.ports_arg(ports)?;
            app.start_ports(&ids)
        }
        C::PortStop(ports) => {
            let ids = app.ports_arg(ports)?;
            app.stop_ports(&ids)
        }
        C::PortClose(ports) => {
            let ids = app.ports_arg(ports)?;
            app.close_ports(&ids)
        }
        C::PortReset(ports) => {
            let ids = app.ports_arg(ports)?;
            app.reset_ports(&ids)
        }
        C::PortConfigAll { what, n } => app.port_config_all(what, n),
        C::PortConfigRss(what) => app.port_config_rss(what),
        C::PortConfigReta { port, pairs } => {
            let id = one_port(app, port)?;
            app.port_config_reta(id, &pairs)
        }
        C::PortConfigMtu { ports, mtu } => {
            for id in app.ports_arg(ports)? {
                app.set_mtu(id, mtu)?;
            }
            Ok(())
        }
        C::MacAddr { op, port, mac } => {
            let id = one_port(app, port)?;
            app.mac_addr(op, id, mac)
        }
        C::ShowMacs { port } => {
            let id = one_port(app, port)?;
            app.show_macs(id);
            Ok(())
        }
        C::VlanFilter { on, port } => {
            let id = one_port(app, port)?;
            app.vlan_filter_set(id, on)
        }
        C::VlanStrip { on, port } => {
            let id = one_port(app, port)?;
            app.vlan_strip(id, on)
        }
        C::RxVlan { op, vlan, port } => {
            let id = one_port(app, port)?;
            app.rx_vlan(op, vlan, id)
        }
    }
}

/// A single port id (not `all`).
fn one_port(app: &App, arg: &str) -> Result<u16, String> {
    if arg == "all" {
        return Err("Bad arguments: this command takes one port, not all".into());
    }
    Ok(app.ports_arg(arg)?[0])
}

/// Tab completion over [`COMMANDS`].
struct CmdHelper;

fn completions(line: &str) -> (usize, Vec<String>) {
    let start = line.rfind(char::is_whitespace).map(|i| i + 1).unwrap_or(0);
    let done: Vec<&str> = line[..start].split_whitespace().collect();
    let partial = &line[start..];
    let mut out: Vec<String> = Vec::new();
    for (_, tmpl, _) in COMMANDS {
        let words: Vec<&str> = tmpl.split_whitespace().collect();
        if words.len() <= done.len() {
            continue;
        }
        let matches = done.iter().zip(&words).all(|(d, t)| {
            let number = d.parse::<u64>().is_ok();
            (t.starts_with('<') && (number || !t.contains("port>")))
                || t.starts_with('(')
                || t.trim_matches(['[', ']']).split('|').any(|alt| alt == *d || (alt == "<port>" && number))
        });
        if !matches {
            continue;
        }
        let next = words[done.len()];
        let alts: Vec<String> = if next == "<mode>" {
            FwdMode::ALL.iter().map(|m| m.name().to_string()).collect()
        } else {
            next.trim_matches(['[', ']']).split('|').filter(|a| !a.starts_with(['<', '('])).map(String::from).collect()
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

/// `--cmdline-file FILE`: runs each line of FILE as a command before the prompt, echoing it (dpdk-testpmd's
/// `Read CLI commands from` step). A `quit` in the file is not obeyed: the prompt follows. The file is read a line
/// at a time with lines of at most [`lines::MAX_LINE_LEN`] bytes, and a stop request (SIGINT, SIGTERM) ends it
/// between two lines. A file that cannot be opened or read, or a longer line, ends it with the error (the lines
/// before it have run).
pub fn run_file(app: &mut App, path: &str) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("Failed to read CLI commands from {path}: {e}"))?;
    let mut input = std::io::BufReader::new(file);
    let mut buf = Vec::new();
    for line_no in 1.. {
        if eal::stop_requested() {
            return Err(format!("Stopped reading CLI commands from {path} at line {line_no}: signal received"));
        }
        let line = match lines::read_line(&mut input, &mut buf) {
            Ok(Line::Text(line)) => line,
            Ok(Line::End) => break,
            Ok(Line::TooLong) => {
                return Err(format!(
                    "{path}:{line_no}: line longer than {} bytes: not a command; stopped reading the file",
                    lines::MAX_LINE_LEN
                ))
            }
            Err(e) => return Err(format!("{path}:{line_no}: cannot read: {e}")),
        };
        println!("{PROMPT}{line}");
        let (_, r) = execute(app, &line);
        report(r);
    }
    println!("Read CLI commands from {path}");
    Ok(())
}

/// What the plain-input reader thread hands the prompt.
enum Input {
    /// A line.
    Line(String),
    /// A line longer than [`lines::MAX_LINE_LEN`], dropped.
    TooLong,
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
                        Err(rustyline::error::ReadlineError::Interrupted)
                        | Err(rustyline::error::ReadlineError::WindowResized) => continue,
                        // A byte that is not UTF-8 spoils that line only; dpdk-testpmd carries on too.
                        Err(rustyline::error::ReadlineError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                            println!("Bad input: the line was not UTF-8 text; ignored");
                            continue;
                        }
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
    let (tx, rx) = std::sync::mpsc::channel::<Option<Input>>();
    std::thread::spawn(move || {
        let mut input = stdin.lock();
        let mut raw = Vec::new();
        loop {
            // Bytes, not a String: a byte that is not UTF-8 must not end the session (read_line would fail on it
            // and every later command would be lost). It becomes U+FFFD and the line fails as a command. A line
            // longer than the bound is dropped with a message, its bytes never kept.
            match lines::read_line(&mut input, &mut raw) {
                Ok(Line::End) => {
                    let _ = tx.send(None);
                    return;
                }
                Ok(Line::Text(line)) => {
                    if tx.send(Some(Input::Line(line))).is_err() {
                        return;
                    }
                }
                Ok(Line::TooLong) => {
                    if tx.send(Some(Input::TooLong)).is_err() {
                        return;
                    }
                    if lines::skip_rest_of_line(&mut input).is_err() {
                        let _ = tx.send(None);
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    let _ = tx.send(None);
                    return;
                }
            }
        }
    });
    'prompt: loop {
        print!("{PROMPT}");
        let _ = std::io::stdout().flush();
        let line = loop {
            match rx.recv_timeout(std::time::Duration::from_millis(50)) {
                Ok(Some(Input::Line(line))) => break line,
                Ok(Some(Input::TooLong)) => {
                    println!("\nBad input: a line longer than {} bytes; ignored", lines::MAX_LINE_LEN);
                    continue 'prompt;
                }
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
        assert_eq!(completions("show port ").1, ["stats", "xstats", "info", "summary"]);
        assert_eq!(completions("help ").1.len(), 10);
        assert_eq!(completions("set fwd noisy ").1, ["retry"]);
        assert_eq!(completions("set fwd mac").1, ["mac", "macswap"]);
        assert_eq!(completions("show port stats ").1, ["all"]);
        assert_eq!(completions("start ").1, ["tx_first"]);
        assert_eq!(completions("show rx").1, ["rxq"]);
        assert_eq!(completions("show txq ").1, ["info"]);
        assert!(completions("bogus ").1.is_empty());
    }
}
