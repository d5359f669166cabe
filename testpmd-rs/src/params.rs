//! The application's command line (after the EAL arguments and `--`), as dpdk-testpmd spells it.

use pktio::MacAddr;

use crate::fwd::FwdMode;

/// How forwarding ports are joined into streams (`--port-topology`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Topology {
    /// 0<->1, 2<->3, ... (an odd last port pairs with itself).
    #[default]
    Paired,
    /// 0->1->2->...->0.
    Chained,
    /// Each port to itself.
    Loop,
}

/// RSS hash selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RssMode {
    /// IP addresses (testpmd's default, `--rss-ip`).
    #[default]
    Ip,
    /// IP addresses and UDP ports (`--rss-udp`).
    Udp,
    /// No RSS (`--disable-rss`).
    Disabled,
}

/// Everything the application options say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// `-i`.
    pub interactive: bool,
    /// `-a`.
    pub auto_start: bool,
    /// `--nb-cores`.
    pub nb_cores: u16,
    /// `--nb-ports` (None: all).
    pub nb_ports: Option<u16>,
    /// `--rxq`.
    pub rxq: u16,
    /// `--txq`.
    pub txq: u16,
    /// `--rxd`.
    pub rxd: u16,
    /// `--txd`.
    pub txd: u16,
    /// `--burst`.
    pub burst: u16,
    /// `--mbuf-size`: data room including the headroom, as in DPDK.
    pub mbuf_size: u32,
    /// `--total-num-mbufs`.
    pub total_num_mbufs: Option<u32>,
    /// `--forward-mode`.
    pub fwd_mode: FwdMode,
    /// `--stats-period` in seconds (0: off).
    pub stats_period: u64,
    /// `--eth-peer=N,MAC`.
    pub eth_peers: Vec<(u16, MacAddr)>,
    /// `--txpkts`.
    pub txpkts: Vec<u16>,
    /// `--portmask`.
    pub portmask: Option<u64>,
    /// `--port-topology`.
    pub topology: Topology,
    /// `--rss-ip`, `--rss-udp`, `--disable-rss`.
    pub rss: RssMode,
    /// `--max-pkt-len`.
    pub max_pkt_len: Option<u32>,
    /// `--tx-first`.
    pub tx_first: bool,
    /// `--flowgen-flows`.
    pub flowgen_flows: u32,
    /// `--no-promisc`? (testpmd's `--disable-promisc`... we accept `--no-promisc`).
    pub promisc: bool,
}

/// Default descriptors per queue.
pub const DEFAULT_DESC: u16 = 1024;
/// Default mbuf size (2048 bytes of data room after 128 of headroom, RTE_MBUF_DEFAULT_BUF_SIZE).
pub const DEFAULT_MBUF_SIZE: u32 = 2048 + 128;
/// Most packets per burst.
pub const MAX_BURST: u16 = mempool::MAX_BURST as u16;

impl Default for Params {
    fn default() -> Self {
        Params {
            interactive: false,
            auto_start: false,
            nb_cores: 1,
            nb_ports: None,
            rxq: 1,
            txq: 1,
            rxd: DEFAULT_DESC,
            txd: DEFAULT_DESC,
            burst: 32,
            mbuf_size: DEFAULT_MBUF_SIZE,
            total_num_mbufs: None,
            fwd_mode: FwdMode::Io,
            stats_period: 0,
            eth_peers: Vec::new(),
            txpkts: vec![64],
            portmask: None,
            topology: Topology::Paired,
            rss: RssMode::Ip,
            max_pkt_len: None,
            tx_first: false,
            flowgen_flows: 1024,
            promisc: true,
        }
    }
}

/// The usage text of the application options.
pub fn usage(program: &str) -> String {
    format!(
        "Usage: {program} [EAL options] -- [testpmd options]

testpmd options:
  -i, --interactive          run the interactive prompt (testpmd> )
  -a, --auto-start           start forwarding at once in interactive mode
  --tx-first                 send a first burst of txonly packets on every stream when starting
  --stats-period=N           non-interactive: print port statistics every N seconds
  --nb-cores=N               forwarding cores (1..number of worker lcores, default 1)
  --nb-ports=N               forwarding ports (default: all)
  --portmask=0xMASK          forwarding ports as a mask
  --port-topology=MODE       paired (default), chained or loop
  --rxq=N, --txq=N           queues per port (default 1)
  --rxd=N, --txd=N           descriptors per queue (default {DEFAULT_DESC})
  --burst=N                  packets per burst (1..{MAX_BURST}, default 32)
  --mbuf-size=N              mbuf data size including the 128-byte headroom (default {DEFAULT_MBUF_SIZE})
  --total-num-mbufs=N        mbufs in the pool
  --forward-mode=MODE        {modes} (default io)
  --eth-peer=N,MAC           peer MAC of port N (mac and csum modes, txonly)
  --txpkts=LEN[,LEN...]      segment lengths of generated packets (default 64)
  --flowgen-flows=N          flows flowgen cycles through (default 1024)
  --rss-ip, --rss-udp        RSS on IP addresses (default) or also on UDP ports, when --rxq > 1
  --disable-rss              no RSS
  --max-pkt-len=N            largest frame (sets the MTU to N - 18)
  --no-promisc               leave promiscuous mode off
  -h, --help                 this text",
        modes = FwdMode::names()
    )
}

/// Parses a number in decimal or 0x hexadecimal.
pub fn parse_u64(text: &str) -> Option<u64> {
    let t = text.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

fn num<T: TryFrom<u64>>(opt: &str, v: &str, min: u64, max: u64) -> Result<T, String> {
    let n = parse_u64(v).ok_or_else(|| format!("{opt}={v:?}: expected a number"))?;
    if n < min || n > max {
        return Err(format!("{opt}={v}: must be between {min} and {max}"));
    }
    T::try_from(n).map_err(|_| format!("{opt}={v}: out of range"))
}

/// Parses `LEN[,LEN...]` segment lengths.
pub fn parse_txpkts(v: &str) -> Result<Vec<u16>, String> {
    let segs: Option<Vec<u16>> = v.split(',').map(|s| s.trim().parse::<u16>().ok().filter(|&l| l > 0)).collect();
    let segs = segs.ok_or_else(|| format!("txpkts {v:?}: expected lengths such as 64 or 64,1454"))?;
    if segs.is_empty() || segs.len() > 8 {
        return Err(format!("txpkts {v:?}: 1 to 8 segments"));
    }
    let total: u32 = segs.iter().map(|&l| l as u32).sum();
    if total < 42 {
        return Err(format!("txpkts {v:?}: total length {total} is below 42 (Ethernet, IPv4 and UDP headers)"));
    }
    if total > u16::MAX as u32 {
        return Err(format!("txpkts {v:?}: total length {total} is too large"));
    }
    Ok(segs)
}

/// Parses `N,MAC`.
pub fn parse_eth_peer(v: &str) -> Result<(u16, MacAddr), String> {
    let (port, mac) =
        v.split_once(',').ok_or_else(|| format!("--eth-peer={v:?}: expected PORT,MAC such as 0,02:00:00:00:00:01"))?;
    let port = port.trim().parse::<u16>().map_err(|_| format!("--eth-peer={v:?}: {port:?} is not a port number"))?;
    let mac = mac.trim().parse::<MacAddr>().map_err(|e| format!("--eth-peer={v:?}: {e}"))?;
    Ok((port, mac))
}

/// What the command line asked for.
#[derive(Debug)]
pub enum Parsed {
    /// Run with these parameters.
    Run(Box<Params>),
    /// Print the usage and exit 0.
    Help,
}

/// Parses the application options.
pub fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut p = Params::default();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg, None),
        };
        let takes_value = matches!(
            name,
            "--nb-cores"
                | "--nb-ports"
                | "--rxq"
                | "--txq"
                | "--rxd"
                | "--txd"
                | "--burst"
                | "--mbuf-size"
                | "--total-num-mbufs"
                | "--forward-mode"
                | "--stats-period"
                | "--eth-peer"
                | "--txpkts"
                | "--portmask"
                | "--port-topology"
                | "--max-pkt-len"
                | "--flowgen-flows"
        );
        let v = if takes_value {
            match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    args.get(i).cloned().ok_or_else(|| format!("option {name} needs a value"))?
                }
            }
        } else {
            if inline.is_some() {
                return Err(format!("option {name} takes no value"));
            }
            String::new()
        };
        match name {
            "-h" | "--help" => return Ok(Parsed::Help),
            "-i" | "--interactive" => p.interactive = true,
            "-a" | "--auto-start" => p.auto_start = true,
            "--tx-first" => p.tx_first = true,
            "--nb-cores" => p.nb_cores = num(name, &v, 1, mempool::lcore::MAX_LCORES as u64)?,
            "--nb-ports" => p.nb_ports = Some(num(name, &v, 1, 1024)?),
            "--rxq" => p.rxq = num(name, &v, 1, 1024)?,
            "--txq" => p.txq = num(name, &v, 1, 1024)?,
            "--rxd" => p.rxd = num(name, &v, 1, 65535)?,
            "--txd" => p.txd = num(name, &v, 1, 65535)?,
            "--burst" => p.burst = num(name, &v, 1, MAX_BURST as u64)?,
            "--mbuf-size" => p.mbuf_size = num(name, &v, 128 + 64, 65535)?,
            "--total-num-mbufs" => p.total_num_mbufs = Some(num(name, &v, 1024, u32::MAX as u64 / 2)?),
            "--forward-mode" => p.fwd_mode = v.parse().map_err(|e| format!("--forward-mode: {e}"))?,
            "--stats-period" => p.stats_period = num(name, &v, 0, 86400)?,
            "--eth-peer" => p.eth_peers.push(parse_eth_peer(&v)?),
            "--txpkts" => p.txpkts = parse_txpkts(&v).map_err(|e| format!("--{e}"))?,
            "--portmask" => {
                let m = parse_u64(&v).ok_or_else(|| format!("--portmask={v:?}: expected a hex mask such as 0x3"))?;
                if m == 0 {
                    return Err(format!("--portmask={v}: the mask selects no port"));
                }
                p.portmask = Some(m)
            }
            "--port-topology" => {
                p.topology = match v.as_str() {
                    "paired" => Topology::Paired,
                    "chained" => Topology::Chained,
                    "loop" => Topology::Loop,
                    _ => return Err(format!("--port-topology={v:?}: expected paired, chained or loop")),
                }
            }
            "--rss-ip" => p.rss = RssMode::Ip,
            "--rss-udp" => p.rss = RssMode::Udp,
            "--disable-rss" => p.rss = RssMode::Disabled,
            "--max-pkt-len" => p.max_pkt_len = Some(num(name, &v, 64, 9618)?),
            "--flowgen-flows" => p.flowgen_flows = num(name, &v, 1, 1 << 24)?,
            "--no-promisc" | "--disable-promisc" => p.promisc = false,
            other => return Err(format!("unknown option {other:?} (see --help)")),
        }
        i += 1;
    }
    if p.stats_period > 0 && p.interactive {
        return Err("--stats-period is for non-interactive mode: drop -i or --stats-period".into());
    }
    Ok(Parsed::Run(Box::new(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &str) -> Result<Params, String> {
        let args: Vec<String> = s.split_whitespace().map(String::from).collect();
        match parse(&args)? {
            Parsed::Run(p) => Ok(*p),
            Parsed::Help => Err("help".into()),
        }
    }

    #[test]
    fn typical() {
        let p = run("-i --nb-cores=1 --rxq 2 --txq=2 --forward-mode=macswap --eth-peer=1,02:00:00:00:00:09 \
                     --txpkts=64,64 --port-topology=chained --portmask=0x3 --burst=64 --tx-first")
        .unwrap();
        assert!(p.interactive && p.tx_first);
        assert_eq!((p.rxq, p.txq, p.burst), (2, 2, 64));
        assert_eq!(p.fwd_mode, FwdMode::MacSwap);
        assert_eq!(p.eth_peers, [(1, MacAddr([2, 0, 0, 0, 0, 9]))]);
        assert_eq!(p.txpkts, [64, 64]);
        assert_eq!(p.topology, Topology::Chained);
        assert_eq!(p.portmask, Some(3));
    }

    #[test]
    fn bad_input() {
        for (line, needle) in [
            ("--rxq 0", "between 1"),
            ("--burst 0", "between 1"),
            ("--burst 513", "between 1"),
            ("--eth-peer=0", "PORT,MAC"),
            ("--eth-peer=0,zz:00", "not a MAC"),
            ("--eth-peer=x,02:00:00:00:00:01", "port number"),
            ("--forward-mode=warp", "unknown forwarding mode"),
            ("--txpkts=10", "below 42"),
            ("--portmask=0", "no port"),
            ("--port-topology=star", "paired"),
            ("--rxq", "needs a value"),
            ("--bogus", "unknown option"),
            ("-i --stats-period 1", "non-interactive"),
            ("--tx-first=1", "takes no value"),
        ] {
            let e = run(line).unwrap_err();
            assert!(e.contains(needle), "{line}: {e}");
        }
        assert_eq!(run("-h").unwrap_err(), "help");
    }
}
