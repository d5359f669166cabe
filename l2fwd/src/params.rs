//! l2fwd's own arguments (those after `--`), parsed as DPDK's l2fwd parses them.

use crate::{Error, Result};

/// Longest statistics period DPDK's l2fwd accepts, in seconds.
pub const MAX_TIMER_PERIOD: u64 = 86_400;
/// Most ports (or RX queues) one lcore may poll (`-q`).
pub const MAX_RX_QUEUE_PER_LCORE: u32 = 16;

/// The parsed options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// Ports to forward (`-p`, hex).
    pub portmask: u64,
    /// Ports (RX queues) polled per lcore (`-q`).
    pub queues_per_lcore: u32,
    /// Statistics period in seconds, 0 = none (`-T`).
    pub stats_period: u64,
    /// Rewrite MAC addresses (`--[no-]mac-updating`).
    pub mac_updating: bool,
    /// Explicit port pairs (`--portmap`).
    pub portmap: Vec<(u16, u16)>,
    /// RX (and TX) queues per port (`--rxq`).
    pub rxq: u16,
}

impl Default for Params {
    fn default() -> Self {
        Params { portmask: 0, queues_per_lcore: 1, stats_period: 10, mac_updating: true, portmap: Vec::new(), rxq: 1 }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// Forward with these options.
    Run(Params),
    /// Print the usage.
    Help,
}

/// The usage text.
pub fn usage(program: &str) -> String {
    format!(
        "{program} [EAL options] -- -p PORTMASK [-P] [-q NQ] [-T PERIOD] [--rxq N]\n\
         \x20 -p PORTMASK: hexadecimal bitmask of ports to configure\n\
         \x20 -P: promiscuous mode (always on here; accepted for compatibility)\n\
         \x20 -q NQ: number of queues (=ports) per lcore (default is 1)\n\
         \x20 -T PERIOD: statistics will be refreshed each PERIOD seconds (0 to disable, 10 default, 86400 maximum)\n\
         \x20 --no-mac-updating: Disable MAC addresses updating (enabled by default)\n\
         \x20     When enabled:\n\
         \x20      - The source MAC address is replaced by the TX port MAC address\n\
         \x20      - The destination MAC address is replaced by 02:00:00:00:00:TX_PORT_ID\n\
         \x20 --portmap: Configure forwarding port pair mapping, e.g. --portmap=\"(0,1),(2,3)\"\n\
         \x20 --rxq N: RX queues per port, spread over the lcores like ports (default 1)"
    )
}

fn usage_err(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

/// A hexadecimal port mask, with or without 0x (as strtoul base 16 reads it).
pub fn parse_portmask(s: &str) -> Result<u64> {
    let t = s.trim();
    let digits = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
    match u64::from_str_radix(digits, 16) {
        Ok(0) => Err(usage_err(format!("invalid portmask {s:?}: it selects no port"))),
        Ok(m) => Ok(m),
        Err(_) => Err(usage_err(format!("invalid portmask {s:?}: expected a hexadecimal mask such as 0x3"))),
    }
}

/// `--portmap="(0,1),(2,3)"`: pairs of port ids; the commas between pairs are optional.
pub fn parse_portmap(s: &str) -> Result<Vec<(u16, u16)>> {
    let mut pairs = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        rest = rest.trim_start_matches([',', ' ']);
        if rest.is_empty() {
            break;
        }
        let Some(body) = rest.strip_prefix('(') else {
            return Err(usage_err(format!("invalid --portmap {s:?}: expected pairs like (0,1),(2,3)")));
        };
        let Some(end) = body.find(')') else {
            return Err(usage_err(format!("invalid --portmap {s:?}: a pair is not closed with ')'")));
        };
        let fields: Vec<&str> = body[..end].split(',').map(str::trim).collect();
        let [a, b] = fields[..] else {
            return Err(usage_err(format!("invalid --portmap pair ({}): expected two port ids", &body[..end])));
        };
        let port = |f: &str| {
            f.parse::<u16>()
                .map_err(|_| usage_err(format!("invalid --portmap pair ({}): {f:?} is not a port", &body[..end])))
        };
        pairs.push((port(a)?, port(b)?));
        rest = &body[end + 1..];
    }
    if pairs.is_empty() {
        return Err(usage_err(format!("invalid --portmap {s:?}: no pair given")));
    }
    Ok(pairs)
}

/// Splits `-pVALUE`, `-p VALUE`, `--name=VALUE` and `--name VALUE` forms: the value of option `opt` at `args[*i]`.
/// As getopt reads them, a short option's value is the rest of the word as it is (`-p=3` gives `=3`, which is no
/// port mask), and only a long option takes `=` as the separator.
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

/// `a` is long option `name`, alone or as `name=VALUE` (not a longer option that starts the same way).
fn is_long(a: &str, name: &str) -> bool {
    a == name || a.strip_prefix(name).is_some_and(|r| r.starts_with('='))
}

fn number<T: std::str::FromStr>(v: &str, opt: &str) -> Result<T> {
    v.trim().parse().map_err(|_| usage_err(format!("invalid {opt} value {v:?}: expected a number")))
}

/// Parses the application arguments (after `--`).
pub fn parse(args: &[String]) -> Result<Parsed> {
    let mut p = Params::default();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-h" | "--help" => return Ok(Parsed::Help),
            "-P" => {}
            "--mac-updating" => p.mac_updating = true,
            "--no-mac-updating" => p.mac_updating = false,
            _ if is_long(a, "--portmap") => p.portmap = parse_portmap(value(args, &mut i, "--portmap")?)?,
            _ if is_long(a, "--rxq") => {
                p.rxq = number(value(args, &mut i, "--rxq")?, "--rxq")?;
                if p.rxq == 0 {
                    return Err(usage_err("invalid --rxq 0: at least one RX queue per port"));
                }
            }
            _ if a.starts_with("-p") && !a.starts_with("--") => {
                p.portmask = parse_portmask(value(args, &mut i, "-p")?)?;
            }
            _ if a.starts_with("-q") && !a.starts_with("--") => {
                let q: u32 = number(value(args, &mut i, "-q")?, "-q")?;
                if q == 0 || q > MAX_RX_QUEUE_PER_LCORE {
                    return Err(usage_err(format!("invalid -q {q}: 1..={MAX_RX_QUEUE_PER_LCORE} queues per lcore")));
                }
                p.queues_per_lcore = q;
            }
            _ if a.starts_with("-T") && !a.starts_with("--") => {
                let t: u64 = number(value(args, &mut i, "-T")?, "-T")?;
                if t > MAX_TIMER_PERIOD {
                    return Err(usage_err(format!("invalid -T {t}: 0..={MAX_TIMER_PERIOD} seconds")));
                }
                p.stats_period = t;
            }
            _ => return Err(usage_err(format!("unknown option {a:?}"))),
        }
        i += 1;
    }
    if p.portmask == 0 {
        return Err(usage_err("invalid portmask: give the ports to forward with -p PORTMASK"));
    }
    Ok(Parsed::Run(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    fn run(s: &[&str]) -> Params {
        match parse(&args(s)).unwrap() {
            Parsed::Run(p) => p,
            Parsed::Help => panic!("help"),
        }
    }

    #[test]
    fn seed_command_line_parses() {
        let p = run(&["-p0x1"]);
        assert_eq!(p.portmask, 1);
        assert_eq!((p.queues_per_lcore, p.stats_period, p.mac_updating, p.rxq), (1, 10, true, 1));
    }

    #[test]
    fn seed_command_line_through_the_eal_parses() {
        let all = args(&["-c0xf", "-n4", "--", "-p0x1"]);
        let (eal, app) = eal::args::parse(&all, &[0, 1, 2, 3]).unwrap();
        assert_eq!(eal.lcores, vec![0, 1, 2, 3]);
        assert_eq!(run(&app.iter().map(String::as_str).collect::<Vec<_>>()).portmask, 1);
    }

    #[test]
    fn every_option_in_both_spellings() {
        let p = run(&["-p", "f", "-q", "2", "-T0", "--no-mac-updating", "--portmap=(0,3),(1,2)", "--rxq", "4"]);
        assert_eq!(p.portmask, 0xf);
        assert_eq!(p.queues_per_lcore, 2);
        assert_eq!(p.stats_period, 0);
        assert!(!p.mac_updating);
        assert_eq!(p.portmap, vec![(0, 3), (1, 2)]);
        assert_eq!(p.rxq, 4);
        assert_eq!(run(&["-p", "0x3", "--portmap", "(0,1)(2,3)"]).portmap, vec![(0, 1), (2, 3)]);
    }

    #[test]
    fn bad_input_is_an_error() {
        for bad in [
            &["-p", "0"][..],
            &["-p", "xyz"],
            &["-q", "0", "-p", "1"],
            &["-p", "1", "-T", "100000"],
            &["-p", "1", "--portmap=(0,1"],
            &["-p", "1", "--portmap=(0)"],
            &["-p", "1", "--portmap=(a,b)"],
            &["-p", "1", "--bogus"],
            &[],
            &["-p"],
            // getopt gives a short option the rest of its word: "=3" is no port mask (DPDK's l2fwd refuses it).
            &["-p=3"],
            &["-p", "3", "-q=1"],
            &["-p", "3", "-T=1"],
            &["-p", "3", "--rxqs=2"],
            &["-p", "3", "--portmapx=(0,1)"],
        ] {
            assert!(matches!(parse(&args(bad)), Err(Error::Usage(_))), "{bad:?} accepted");
        }
    }
}
