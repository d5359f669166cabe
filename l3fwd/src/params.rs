//! l3fwd's own arguments (those after `--`), as DPDK's l3fwd reads them.

use pktio::MacAddr;

use crate::config::{self, RxQueueParam};
use crate::{Error, Result};

/// The lookup method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LookupMode {
    /// Longest prefix match (DIR-24-8 for IPv4).
    #[default]
    Lpm,
    /// Exact match on the 5-tuple.
    Em,
    /// DPDK's FIB: here the same DIR-24-8 tables as LPM (DPDK's rte_fib is another DIR-24-8 variant with the
    /// same results).
    Fib,
}

impl LookupMode {
    /// The name `--lookup` takes.
    pub fn name(self) -> &'static str {
        match self {
            LookupMode::Lpm => "lpm",
            LookupMode::Em => "em",
            LookupMode::Fib => "fib",
        }
    }
}

/// The parsed options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// Ports to use (`-p`, hex).
    pub portmask: u64,
    /// Promiscuous mode (`-P`).
    pub promiscuous: bool,
    /// RX queue to lcore map (`--config`).
    pub config: Vec<RxQueueParam>,
    /// Destination MAC per port (`--eth-dest`).
    pub eth_dest: Vec<(u16, MacAddr)>,
    /// Lookup method (`--lookup`, `-L`, `-E`).
    pub lookup: LookupMode,
    /// IPv4 route file (`--rule_ipv4`).
    pub rule_ipv4: Option<String>,
    /// IPv6 route file (`--rule_ipv6`).
    pub rule_ipv6: Option<String>,
    /// Largest frame (`--max-pkt-len`).
    pub max_pkt_len: Option<u32>,
    /// Parse packet types in software (`--parse-ptype`; always done here).
    pub parse_ptype: bool,
    /// RX descriptors (`--rx-queue-size`).
    pub rx_queue_size: u16,
    /// TX descriptors (`--tx-queue-size`).
    pub tx_queue_size: u16,
    /// EM: IPv6 flows instead of IPv4 (`--ipv6`).
    pub ipv6: bool,
    /// EM: table size (`--hash-entry-num`, hex).
    pub hash_entry_num: Option<u32>,
    /// NUMA awareness off (`--no-numa`; one socket here either way).
    pub no_numa: bool,
    /// Extension: print the statistics every PERIOD seconds (`-T`, 0 = only on exit).
    pub stats_period: u64,
    /// l3fwd-power: how the lcores sleep when idle (`None`: l3fwd, which always polls).
    pub power: Option<PowerMode>,
}

/// How l3fwd-power's lcores sleep (DPDK's `l3fwd-power` modes this project has).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerMode {
    /// The default (DPDK's legacy mode): poll while busy; after an idle spell of
    /// [`crate::power::IDLE_ROUNDS`] empty rounds, sleep on the RX queues' interrupts.
    Legacy,
    /// `--interrupt-only`: sleep on the interrupts as soon as a round over the queues finds nothing.
    InterruptOnly,
}

/// l3fwd-power's options that this project does not have (DPDK's other power modes need CPU frequency control).
const POWER_UNSUPPORTED: &[&str] =
    &["--empty-poll", "--telemetry", "--pmd-mgmt", "--max-empty-poll", "--high-perf-cores", "--perf-config"];

/// Parses l3fwd-power's application arguments: l3fwd's, plus `--interrupt-only`.
pub fn parse_power(args: &[String]) -> Result<Parsed> {
    let mut mode = PowerMode::Legacy;
    let mut rest = Vec::with_capacity(args.len());
    for a in args {
        if a == "--interrupt-only" {
            mode = PowerMode::InterruptOnly;
        } else if POWER_UNSUPPORTED.iter().any(|o| a == o || a.starts_with(&format!("{o}="))) {
            return Err(usage_err(format!(
                "{a}: l3fwd-power's frequency-scaling modes are not supported here; the default mode (poll, sleep                  on RX interrupts when idle) and --interrupt-only are"
            )));
        } else {
            rest.push(a.clone());
        }
    }
    Ok(match parse(&rest)? {
        Parsed::Run(mut p) => {
            p.power = Some(mode);
            Parsed::Run(p)
        }
        help => help,
    })
}

impl Default for Params {
    fn default() -> Self {
        Params {
            portmask: 0,
            promiscuous: false,
            config: config::parse(config::DEFAULT_CONFIG).expect("the default parses"),
            eth_dest: Vec::new(),
            lookup: LookupMode::Lpm,
            rule_ipv4: None,
            rule_ipv6: None,
            max_pkt_len: None,
            parse_ptype: false,
            rx_queue_size: 1024,
            tx_queue_size: 1024,
            ipv6: false,
            hash_entry_num: None,
            no_numa: false,
            stats_period: 0,
            power: None,
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// Forward.
    Run(Box<Params>),
    /// Print the usage.
    Help,
}

/// The usage text.
pub fn usage(program: &str) -> String {
    format!(
        "{program} [EAL options] -- -p PORTMASK [-P] [-E] [-L] --config (port,queue,lcore)[,(port,queue,lcore)]\n\
         \x20 [--rx-queue-size NPKTS] [--tx-queue-size NPKTS] [--eth-dest=X,MM:MM:MM:MM:MM:MM] [--max-pkt-len PKTLEN]\n\
         \x20 [--no-numa] [--hash-entry-num] [--ipv6] [--parse-ptype] [--lookup=lpm|em|fib]\n\
         \x20 [--rule_ipv4=FILE] [--rule_ipv6=FILE] [-T PERIOD]\n\n\
         \x20 -p PORTMASK: Hexadecimal bitmask of ports to configure\n\
         \x20 -P : Enable promiscuous mode\n\
         \x20 -E : Enable exact match, legacy flag please use --lookup=em instead\n\
         \x20 -L : Enable longest prefix match, legacy flag please use --lookup=lpm instead\n\
         \x20 --config (port,queue,lcore): Rx queue configuration\n\
         \x20 --rx-queue-size NPKTS: Rx queue size in decimal (default 1024)\n\
         \x20 --tx-queue-size NPKTS: Tx queue size in decimal (default 1024)\n\
         \x20 --eth-dest=X,MM:MM:MM:MM:MM:MM: Ethernet destination for port X (default 02:00:00:00:00:X)\n\
         \x20 --max-pkt-len PKTLEN: maximum packet length in decimal (64-9600)\n\
         \x20 --no-numa: Disable numa awareness\n\
         \x20 --hash-entry-num: Specify the hash entry number in hexadecimal to be setup\n\
         \x20 --ipv6: Set if running ipv6 packets (exact match)\n\
         \x20 --parse-ptype: Set to use software to analyze packet type\n\
         \x20 --lookup: Select the lookup method (lpm, em or fib; default lpm)\n\
         \x20 --rule_ipv4=FILE: Specify the ipv4 rules entries file (R<prefix>/<depth> <port> per line)\n\
         \x20 --rule_ipv6=FILE: Specify the ipv6 rules entries file\n\
         \x20 -T PERIOD: (extension) print the statistics every PERIOD seconds; always printed on exit"
    )
}

fn usage_err(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

/// A hexadecimal number, with or without 0x.
fn hex(s: &str, what: &str) -> Result<u64> {
    let t = s.trim();
    let digits = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
    u64::from_str_radix(digits, 16)
        .map_err(|_| usage_err(format!("invalid {what} {s:?}: expected a hexadecimal number")))
}

fn number<T: std::str::FromStr>(v: &str, opt: &str) -> Result<T> {
    v.trim().parse().map_err(|_| usage_err(format!("invalid {opt} value {v:?}: expected a decimal number")))
}

/// The value of option `opt` at `args[*i]`: `-pV`, `-p V`, `--opt=V` or `--opt V`.
fn value<'a>(args: &'a [String], i: &mut usize, opt: &str) -> Result<&'a str> {
    let a = &args[*i];
    if let Some(v) = a.strip_prefix(opt) {
        let v = if opt.starts_with("--") { v.strip_prefix('=').unwrap_or(v) } else { v };
        if !v.is_empty() {
            return Ok(v);
        }
    }
    *i += 1;
    args.get(*i).map(String::as_str).ok_or_else(|| usage_err(format!("option {opt} needs a value")))
}

/// True when `a` is the long option `name`, alone or with `=value`.
fn is_long(a: &str, name: &str) -> bool {
    a == name || a.strip_prefix(name).is_some_and(|r| r.starts_with('='))
}

/// Parses the application arguments (after `--`).
pub fn parse(args: &[String]) -> Result<Parsed> {
    let mut p = Params::default();
    let mut lookup_set: Option<LookupMode> = None;
    let mut set_lookup = |m: LookupMode| -> Result<()> {
        if lookup_set.is_some_and(|o| o != m) {
            return Err(usage_err("only one lookup mode is allowed (--lookup, -L, -E)"));
        }
        lookup_set = Some(m);
        Ok(())
    };
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-h" | "--help" => return Ok(Parsed::Help),
            "-P" => p.promiscuous = true,
            "-L" => set_lookup(LookupMode::Lpm)?,
            "-E" => set_lookup(LookupMode::Em)?,
            "--parse-ptype" => p.parse_ptype = true,
            "--ipv6" => p.ipv6 = true,
            "--no-numa" => p.no_numa = true,
            _ if is_long(a, "--config") => p.config = config::parse(value(args, &mut i, "--config")?)?,
            _ if is_long(a, "--eth-dest") => {
                let v = value(args, &mut i, "--eth-dest")?;
                let (port, mac) = v
                    .split_once(',')
                    .ok_or_else(|| usage_err(format!("invalid --eth-dest {v:?}: expected PORT,MM:MM:MM:MM:MM:MM")))?;
                let port: u16 = number(port, "--eth-dest port")?;
                let mac: MacAddr = mac.parse().map_err(|e| usage_err(format!("invalid --eth-dest: {e}")))?;
                p.eth_dest.push((port, mac));
            }
            _ if is_long(a, "--lookup") => {
                let v = value(args, &mut i, "--lookup")?;
                let m = match v {
                    "lpm" => LookupMode::Lpm,
                    "em" => LookupMode::Em,
                    "fib" => LookupMode::Fib,
                    _ => return Err(usage_err(format!("invalid --lookup {v:?}: expected lpm, em or fib"))),
                };
                set_lookup(m)?;
            }
            _ if is_long(a, "--rule_ipv4") => p.rule_ipv4 = Some(value(args, &mut i, "--rule_ipv4")?.to_string()),
            _ if is_long(a, "--rule_ipv6") => p.rule_ipv6 = Some(value(args, &mut i, "--rule_ipv6")?.to_string()),
            _ if is_long(a, "--max-pkt-len") => {
                let v: u32 = number(value(args, &mut i, "--max-pkt-len")?, "--max-pkt-len")?;
                if !(64..=9600).contains(&v) {
                    return Err(usage_err(format!("invalid --max-pkt-len {v}: 64..=9600")));
                }
                p.max_pkt_len = Some(v);
            }
            _ if is_long(a, "--rx-queue-size") => {
                p.rx_queue_size = number(value(args, &mut i, "--rx-queue-size")?, "--rx-queue-size")?;
            }
            _ if is_long(a, "--tx-queue-size") => {
                p.tx_queue_size = number(value(args, &mut i, "--tx-queue-size")?, "--tx-queue-size")?;
            }
            _ if is_long(a, "--hash-entry-num") => {
                let v = hex(value(args, &mut i, "--hash-entry-num")?, "--hash-entry-num")?;
                if v == 0 || v > 1 << 24 {
                    return Err(usage_err(format!("invalid --hash-entry-num {v:#x}: 1..=0x1000000")));
                }
                p.hash_entry_num = Some(v as u32);
            }
            _ if a.starts_with("-p") && !a.starts_with("--") => {
                p.portmask = hex(value(args, &mut i, "-p")?, "portmask")?;
            }
            _ if a.starts_with("-T") && !a.starts_with("--") => {
                p.stats_period = number(value(args, &mut i, "-T")?, "-T")?;
            }
            _ => return Err(usage_err(format!("unknown option {a:?}"))),
        }
        i += 1;
    }
    if p.portmask == 0 {
        return Err(usage_err("invalid portmask: give the ports to use with -p PORTMASK"));
    }
    p.lookup = lookup_set.unwrap_or_default();
    Ok(Parsed::Run(Box::new(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &[&str]) -> Params {
        let a: Vec<String> = s.iter().map(|x| x.to_string()).collect();
        match parse(&a).unwrap() {
            Parsed::Run(p) => *p,
            Parsed::Help => panic!("help"),
        }
    }

    fn err(s: &[&str]) -> String {
        let a: Vec<String> = s.iter().map(|x| x.to_string()).collect();
        parse(&a).unwrap_err().to_string()
    }

    #[test]
    fn l3fwd_power_takes_l3fwds_options_and_interrupt_only() {
        let v = |s: &[&str]| -> Vec<String> { s.iter().map(|x| x.to_string()).collect() };
        let power = |s: &[&str]| match parse_power(&v(s)).unwrap() {
            Parsed::Run(p) => *p,
            Parsed::Help => panic!("help"),
        };
        let p = power(&["-p", "0x3", "--config=(0,0,0),(1,0,0)"]);
        assert_eq!((p.power, p.portmask, p.config.len()), (Some(PowerMode::Legacy), 3, 2));
        assert_eq!(power(&["-p", "1", "--interrupt-only"]).power, Some(PowerMode::InterruptOnly));
        assert_eq!(run(&["-p", "1"]).power, None, "l3fwd itself polls");
        assert!(err(&["-p", "1", "--interrupt-only"]).contains("--interrupt-only"), "l3fwd does not take it");
        let e = parse_power(&v(&["-p", "1", "--empty-poll"])).unwrap_err().to_string();
        assert!(e.contains("not supported"), "{e}");
        assert!(matches!(parse_power(&v(&["-h"])).unwrap(), Parsed::Help));
    }

    #[test]
    fn seed_command_lines_parse() {
        // As a shell passes them: --config="(0,0,0)(0,1,1)" arrives as --config=(0,0,0)(0,1,1).
        let p = run(&["-p1", "-P", "--config=(0,0,0)(0,1,1)"]);
        assert_eq!(p.portmask, 1);
        assert!(p.promiscuous);
        assert_eq!(p.config.len(), 2);
        let p = run(&["-p0xf", "-P", "--config=(0,0,0)(0,1,1)(1,0,2)(1,1,3)"]);
        assert_eq!(p.portmask, 0xf);
        assert_eq!(p.config[3], RxQueueParam { port: 1, queue: 1, lcore: 3 });
        for (eal, app) in [
            (&["-l", "0,1", "-n4"][..], &["-p1", "-P", "--config=(0,0,0)(0,1,1)"][..]),
            (&["-l", "0,1,2,3", "-n4"], &["-p0xf", "-P", "--config=(0,0,0)(0,1,1)(1,0,2)(1,1,3)"]),
        ] {
            let mut all: Vec<String> = eal.iter().map(|s| s.to_string()).collect();
            all.push("--".into());
            all.extend(app.iter().map(|s| s.to_string()));
            let (cfg, rest) = eal::args::parse(&all, &[0, 1, 2, 3]).unwrap();
            assert_eq!(cfg.lcores.len(), eal.last().map(|_| if app[0] == "-p1" { 2 } else { 4 }).unwrap());
            run(&rest.iter().map(String::as_str).collect::<Vec<_>>());
        }
    }

    #[test]
    fn every_option() {
        let p = run(&[
            "-p",
            "3",
            "-E",
            "--eth-dest=1,02:11:22:33:44:55",
            "--rule_ipv4",
            "a.cfg",
            "--rule_ipv6=b.cfg",
            "--max-pkt-len",
            "9000",
            "--parse-ptype",
            "--rx-queue-size=512",
            "--tx-queue-size",
            "256",
            "--ipv6",
            "--hash-entry-num",
            "0x10",
            "--no-numa",
            "--config",
            "(0,0,1)",
            "-T",
            "2",
        ]);
        assert_eq!(p.lookup, LookupMode::Em);
        assert_eq!(p.eth_dest, vec![(1, MacAddr([2, 0x11, 0x22, 0x33, 0x44, 0x55]))]);
        assert_eq!((p.rule_ipv4.as_deref(), p.rule_ipv6.as_deref()), (Some("a.cfg"), Some("b.cfg")));
        assert_eq!((p.max_pkt_len, p.rx_queue_size, p.tx_queue_size), (Some(9000), 512, 256));
        assert!(p.parse_ptype && p.ipv6 && p.no_numa);
        assert_eq!((p.hash_entry_num, p.stats_period), (Some(16), 2));
        assert_eq!(run(&["-p", "1", "--lookup=fib"]).lookup, LookupMode::Fib);
        assert_eq!(run(&["-p", "1", "-L"]).lookup, LookupMode::Lpm);
    }

    #[test]
    fn bad_options() {
        assert!(err(&["-p", "0"]).contains("portmask"));
        assert!(err(&["-p", "q"]).contains("portmask"));
        assert!(err(&["-p", "1", "--lookup=trie"]).contains("lpm, em or fib"));
        assert!(err(&["-p", "1", "-L", "-E"]).contains("only one lookup"));
        assert!(err(&["-p", "1", "--eth-dest=1"]).contains("PORT,MM"));
        assert!(err(&["-p", "1", "--eth-dest=1,zz"]).contains("not a MAC"));
        assert!(err(&["-p", "1", "--max-pkt-len=10"]).contains("64..=9600"));
        assert!(err(&["-p", "1", "--config=(0,0)"]).contains("three numbers"));
        assert!(err(&["-p", "1", "--what"]).contains("unknown option"));
    }
}
