//! The application's command line (after the EAL arguments and `--`), as dpdk-testpmd spells it.

use pktio::{offload, MacAddr};

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
    /// IP addresses and TCP ports (`port config all rss tcp`).
    Tcp,
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
    /// `--coremask`: forwarding lcores as a mask.
    pub coremask: Option<u64>,
    /// `--mbcache`: per-lcore mempool cache.
    pub mbcache: u32,
    /// RX queues are emptied before forwarding starts (`--no-flush-rx` turns it off).
    pub flush_rx: bool,
    /// `--rx-offloads`, `--enable-rx-cksum`, `--enable-scatter`, `--enable-hw-vlan-strip`.
    pub rx_offloads: u64,
    /// `--tx-offloads`.
    pub tx_offloads: u64,
    /// `--rxpkts`: RX buffer-split segment lengths (shown by `show config rxpkts`).
    pub rxpkts: Vec<u16>,
    /// `--rxoffs`: RX buffer-split segment offsets (shown by `show config rxoffs`).
    pub rxoffs: Vec<u16>,
    /// `--disable-link-check`.
    pub link_check: bool,
    /// `--record-core-cycles`.
    pub record_core_cycles: bool,
    /// `--record-burst-stats`.
    pub record_burst_stats: bool,
    /// `--display-xstats`: extended statistics shown with the port statistics.
    pub display_xstats: Vec<String>,
    /// `--txonly-multi-flow`.
    pub txonly_multi_flow: bool,
    /// `--mlockall` (true) / `--no-mlockall` (false, the default).
    pub mlockall: bool,
    /// `--cmdline-file`: commands run before the prompt (or before forwarding without -i).
    pub cmdline_file: Option<String>,
    /// `--noisy-*`: the noisy forwarding mode's settings.
    pub noisy: NoisyParams,
    /// Options accepted that change nothing here, each with why (printed once at start-up).
    pub notes: Vec<String>,
}

/// The `noisy` forwarding mode's settings (`--noisy-*`), as dpdk-testpmd's noisy_vnf takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoisyParams {
    /// `--noisy-tx-sw-buffer-size`: packets held per stream before sending (0: send at once).
    pub tx_sw_buffer_size: u32,
    /// `--noisy-tx-sw-buffer-flushtime`: milliseconds after which a partly filled buffer is sent (0: never).
    pub tx_sw_buffer_flushtime_ms: u32,
    /// `--noisy-lkup-memory`: MiB of memory that each stream touches per packet (0: none).
    pub lkup_memory_mb: u32,
    /// `--noisy-lkup-num-writes`: random writes into that memory per packet.
    pub lkup_num_writes: u32,
    /// `--noisy-lkup-num-reads`: random reads per packet.
    pub lkup_num_reads: u32,
    /// `--noisy-lkup-num-reads-writes`: random read-modify-writes per packet.
    pub lkup_num_reads_writes: u32,
}

/// Default descriptors per queue.
pub const DEFAULT_DESC: u16 = 1024;
/// Default mbuf size (2048 bytes of data room after 128 of headroom, RTE_MBUF_DEFAULT_BUF_SIZE).
pub const DEFAULT_MBUF_SIZE: u32 = 2048 + 128;
/// Per-lcore mempool cache (testpmd's default, `--mbcache`).
pub const DEFAULT_MBCACHE: u32 = 250;
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
            coremask: None,
            mbcache: DEFAULT_MBCACHE,
            flush_rx: true,
            rx_offloads: 0,
            tx_offloads: 0,
            rxpkts: Vec::new(),
            rxoffs: Vec::new(),
            link_check: true,
            record_core_cycles: false,
            record_burst_stats: false,
            display_xstats: Vec::new(),
            cmdline_file: None,
            txonly_multi_flow: false,
            mlockall: false,
            noisy: NoisyParams::default(),
            notes: Vec::new(),
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
  --coremask=0xMASK          forwarding lcores as a mask (of the worker lcores)
  --portlist=LIST            forwarding ports as a list such as 0,2-3
  --mbcache=N                per-lcore mempool cache (0..512, default {DEFAULT_MBCACHE})
  --no-flush-rx              do not empty the RX queues before forwarding starts
  --disable-link-check       do not report link statuses at port start
  --enable-rx-cksum          request RX checksum offloads
  --enable-scatter           request RX scatter
  --enable-hw-vlan-strip     request RX VLAN stripping
  --rx-offloads=0xMASK       RX offloads (DPDK's bits)
  --tx-offloads=0xMASK       TX offloads (DPDK's bits)
  --rx-mq-mode=0xMASK        0x1: RSS (the only mode); 0: no RSS
  --display-xstats=N1,N2     extended statistics shown with show port stats
  --record-burst-stats       show the burst sizes with the forward statistics
  --txonly-multi-flow        txonly varies the IPv4 source per packet
  --record-core-cycles       CPU cycles per packet in the forward statistics
  --mlockall, --no-mlockall  lock all the process's memory (mlockall) or not (default)
  --cmdline-file=FILE        run the commands of FILE first (before the prompt, or before forwarding without -i)
  --noisy-tx-sw-buffer-size=N, --noisy-tx-sw-buffer-flushtime=MS,
  --noisy-lkup-memory=MB, --noisy-lkup-num-writes=N, --noisy-lkup-num-reads=N,
  --noisy-lkup-num-reads-writes=N
                             the noisy mode: a TX FIFO per stream and memory touched per packet
  Accepted for dpdk-testpmd scripts, with a note of why they change nothing here: --numa, --no-numa,
  --socket-num, --rxpt, --rxht, --rxwt, --rxfreet, --txpt, --txfreet, --txrst, --rxoffs, --rxpkts,
  --no-lsc-interrupt, --no-rmv-interrupt, --flow-isolate-all, --mp-alloc
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

/// Options that take a value.
const VALUE_OPTIONS: &[&str] = &[
    "--nb-cores",
    "--nb-ports",
    "--rxq",
    "--txq",
    "--rxd",
    "--txd",
    "--burst",
    "--mbuf-size",
    "--total-num-mbufs",
    "--forward-mode",
    "--stats-period",
    "--eth-peer",
    "--txpkts",
    "--portmask",
    "--port-topology",
    "--max-pkt-len",
    "--flowgen-flows",
    "--coremask",
    "--portlist",
    "--socket-num",
    "--mbcache",
    "--rxpt",
    "--rxht",
    "--rxwt",
    "--rxfreet",
    "--txpt",
    "--txht",
    "--txwt",
    "--txfreet",
    "--txrst",
    "--rxoffs",
    "--rxpkts",
    "--rx-offloads",
    "--tx-offloads",
    "--mp-alloc",
    "--rx-mq-mode",
    "--display-xstats",
    "--cmdline-file",
    "--noisy-tx-sw-buffer-size",
    "--noisy-tx-sw-buffer-flushtime",
    "--noisy-lkup-memory",
    "--noisy-lkup-num-writes",
    "--noisy-lkup-num-reads",
    "--noisy-lkup-num-reads-writes",
    "--port-numa-config",
    "--ring-numa-config",
];

/// Options without a value.
const FLAG_OPTIONS: &[&str] = &[
    "-h",
    "--help",
    "-i",
    "--interactive",
    "-a",
    "--auto-start",
    "--tx-first",
    "--rss-ip",
    "--rss-udp",
    "--disable-rss",
    "--no-promisc",
    "--disable-promisc",
    "--numa",
    "--no-numa",
    "--no-flush-rx",
    "--txonly-multi-flow",
    "--disable-link-check",
    "--no-lsc-interrupt",
    "--no-rmv-interrupt",
    "--record-core-cycles",
    "--record-burst-stats",
    "--enable-rx-cksum",
    "--enable-scatter",
    "--enable-hw-vlan-strip",
    "--flow-isolate-all",
    "--mlockall",
    "--no-mlockall",
];

/// Parses `0,2-3`-style lists of numbers (port and lcore lists).
pub fn parse_list(v: &str, max: u64) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for part in v.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let (a, b) = match (a.trim().parse::<u64>(), b.trim().parse::<u64>()) {
            (Ok(a), Ok(b)) if a <= b && b <= max => (a, b),
            _ => return Err(format!("{v:?}: expected numbers or ranges up to {max}, such as 0,2-3")),
        };
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn parse_u16_list(opt: &str, v: &str) -> Result<Vec<u16>, String> {
    v.split(',')
        .map(|x| x.trim().parse::<u16>().map_err(|_| format!("{opt}={v:?}: expected numbers such as 64,128")))
        .collect()
}

/// Parses the application options.
pub fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut p = Params::default();
    let mut i = 0;
    let note = |p: &mut Params, what: String| {
        if !p.notes.contains(&what) {
            p.notes.push(what)
        }
    };
    while i < args.len() {
        let arg = args[i].as_str();
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg, None),
        };
        let v = if VALUE_OPTIONS.contains(&name) {
            match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    args.get(i).cloned().ok_or_else(|| format!("option {name} needs a value"))?
                }
            }
        } else if FLAG_OPTIONS.contains(&name) {
            if inline.is_some() {
                return Err(format!("option {name} takes no value"));
            }
            String::new()
        } else {
            return Err(format!("unknown option {arg:?} (see --help)"));
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
            "--portlist" => {
                let ports = parse_list(&v, 63).map_err(|e| format!("--portlist={e}"))?;
                p.portmask = Some(ports.iter().fold(0u64, |m, &i| m | 1 << i));
            }
            "--coremask" => {
                let m = parse_u64(&v).ok_or_else(|| format!("--coremask={v:?}: expected a hex mask such as 0x6"))?;
                if m == 0 {
                    return Err(format!("--coremask={v}: the mask selects no lcore"));
                }
                p.coremask = Some(m)
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
            "--mbcache" => p.mbcache = num(name, &v, 0, 512)?,
            "--no-flush-rx" => p.flush_rx = false,
            "--disable-link-check" => p.link_check = false,
            "--record-core-cycles" => p.record_core_cycles = true,
            "--record-burst-stats" => p.record_burst_stats = true,
            "--enable-rx-cksum" => {
                p.rx_offloads |= offload::RX_IPV4_CKSUM | offload::RX_UDP_CKSUM | offload::RX_TCP_CKSUM
            }
            "--enable-scatter" => p.rx_offloads |= offload::RX_SCATTER,
            "--enable-hw-vlan-strip" => p.rx_offloads |= offload::RX_VLAN_STRIP,
            "--rx-offloads" => {
                p.rx_offloads = parse_u64(&v).ok_or_else(|| format!("--rx-offloads={v:?}: expected a hex mask"))?
            }
            "--tx-offloads" => {
                p.tx_offloads = parse_u64(&v).ok_or_else(|| format!("--tx-offloads={v:?}: expected a hex mask"))?
            }
            "--rxpkts" => p.rxpkts = parse_u16_list(name, &v)?,
            "--rxoffs" => p.rxoffs = parse_u16_list(name, &v)?,
            "--display-xstats" => {
                p.display_xstats = v.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect();
                if p.display_xstats.is_empty() {
                    return Err(format!("--display-xstats={v:?}: expected extended statistic names"));
                }
            }
            "--cmdline-file" => p.cmdline_file = Some(v),
            "--noisy-tx-sw-buffer-size" => p.noisy.tx_sw_buffer_size = num(name, &v, 0, 1 << 20)?,
            "--noisy-tx-sw-buffer-flushtime" => p.noisy.tx_sw_buffer_flushtime_ms = num(name, &v, 0, 1 << 30)?,
            "--noisy-lkup-memory" => p.noisy.lkup_memory_mb = num(name, &v, 0, 1 << 14)?,
            "--noisy-lkup-num-writes" => p.noisy.lkup_num_writes = num(name, &v, 0, 1 << 20)?,
            "--noisy-lkup-num-reads" => p.noisy.lkup_num_reads = num(name, &v, 0, 1 << 20)?,
            "--noisy-lkup-num-reads-writes" => p.noisy.lkup_num_reads_writes = num(name, &v, 0, 1 << 20)?,
            "--mp-alloc" => match v.as_str() {
                "native" => {}
                "anon" | "xmem" | "xmemhuge" | "xbuf" => {
                    note(&mut p, format!("--mp-alloc={v}: the pool always comes from the EAL's memory (as native)"))
                }
                _ => return Err(format!("--mp-alloc={v:?}: expected native, anon, xmem, xmemhuge or xbuf")),
            },
            "--numa" | "--no-numa" | "--socket-num" | "--port-numa-config" | "--ring-numa-config" => {
                if name == "--socket-num" {
                    num::<u32>(name, &v, 0, 63)?;
                }
                note(&mut p, format!("{name}: the pool and rings are allocated once, on the EAL's memory"));
            }
            "--rxpt" | "--rxht" | "--rxwt" | "--rxfreet" | "--txpt" | "--txht" | "--txwt" | "--txfreet" | "--txrst" => {
                num::<u32>(name, &v, 0, 65535)?;
                note(&mut p, format!("{name}: the drivers pick their own descriptor thresholds"));
            }
            "--txonly-multi-flow" => p.txonly_multi_flow = true,
            "--no-lsc-interrupt" | "--no-rmv-interrupt" => {
                note(&mut p, format!("{name}: link state is polled; there are no interrupts to turn off"))
            }
            "--flow-isolate-all" => note(&mut p, "--flow-isolate-all: there are no flow rules here".to_string()),
            "--mlockall" => p.mlockall = true,
            "--no-mlockall" => p.mlockall = false,
            "--rx-mq-mode" => {
                let m = parse_u64(&v).ok_or_else(|| format!("--rx-mq-mode={v:?}: expected a hex mask"))?;
                if m & !1 != 0 {
                    note(&mut p, format!("--rx-mq-mode={v}: only RSS (0x1) is supported; DCB and VMDq are not"));
                }
                if m & 1 == 0 {
                    p.rss = RssMode::Disabled;
                }
            }
            other => return Err(format!("unknown option {other:?} (see --help)")),
        }
        i += 1;
    }
    if !p.rxpkts.is_empty() || !p.rxoffs.is_empty() {
        // dpdk-testpmd splits only on queues with the BUFFER_SPLIT offload and otherwise sets them up whole,
        // silently; no port here has the offload, so say once that the lengths change nothing.
        note(
            &mut p,
            "--rxpkts/--rxoffs: no port here has the BUFFER_SPLIT RX offload, so RX queues are set up without \
             buffer split (as dpdk-testpmd does for such ports); show config rxpkts|rxoffs shows the values"
                .to_string(),
        );
    }
    if p.stats_period > 0 && p.interactive {
        // As in dpdk-testpmd: the period only drives the non-interactive display.
        note(&mut p, "--stats-period: statistics are shown periodically only without -i".to_string());
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
            ("--tx-first=1", "takes no value"),
            ("--bogus=3", "unknown option"),
            ("--portlist=3-1", "expected numbers"),
            ("--mp-alloc=magic", "native"),
            ("--coremask=0", "no lcore"),
        ] {
            let e = run(line).unwrap_err();
            assert!(e.contains(needle), "{line}: {e}");
        }
        assert_eq!(run("-h").unwrap_err(), "help");
    }

    #[test]
    fn dpdk_options_are_accepted_and_take_effect_or_say_why() {
        let p = run("--coremask=0x6 --portlist=0,2-3 --numa --no-numa --socket-num=0 --mbcache=64 --rxpt=8 \
                     --rxht=8 --rxwt=0 --rxfreet=32 --txpt=36 --txfreet=32 --txrst=32 --no-flush-rx --rxoffs=0,64 \
                     --rxpkts=64,1454 --txonly-multi-flow --disable-link-check --no-lsc-interrupt \
                     --no-rmv-interrupt --record-core-cycles --record-burst-stats --enable-rx-cksum \
                     --enable-scatter --enable-hw-vlan-strip --rx-offloads=0x80000 --tx-offloads=0x8000 \
                     --flow-isolate-all --mp-alloc=anon --mlockall --no-mlockall --rx-mq-mode=0x1 \
                     --display-xstats=rx_good_packets,tx_good_packets --cmdline-file=/tmp/x --forward-mode=noisy \
                     --noisy-tx-sw-buffer-size=64 --noisy-tx-sw-buffer-flushtime=10 --noisy-lkup-memory=1 \
                     --noisy-lkup-num-writes=2 --noisy-lkup-num-reads=3 --noisy-lkup-num-reads-writes=4")
        .unwrap();
        assert_eq!(p.coremask, Some(6));
        assert_eq!(p.portmask, Some(0b1101));
        assert_eq!(p.mbcache, 64);
        assert!(!p.flush_rx && !p.link_check && p.record_core_cycles && p.record_burst_stats);
        // --rx-offloads replaces what the --enable-* flags before it asked for, as in DPDK.
        assert_eq!(p.rx_offloads, 0x80000);
        assert_eq!(p.tx_offloads, offload::TX_MULTI_SEGS);
        assert_eq!((p.rxpkts.clone(), p.rxoffs.clone()), (vec![64, 1454], vec![0, 64]));
        assert_eq!(p.display_xstats, ["rx_good_packets", "tx_good_packets"]);
        assert_eq!(p.cmdline_file.as_deref(), Some("/tmp/x"));
        assert_eq!(p.fwd_mode, FwdMode::Noisy);
        assert_eq!(
            p.noisy,
            NoisyParams {
                tx_sw_buffer_size: 64,
                tx_sw_buffer_flushtime_ms: 10,
                lkup_memory_mb: 1,
                lkup_num_writes: 2,
                lkup_num_reads: 3,
                lkup_num_reads_writes: 4
            }
        );
        assert!(p.txonly_multi_flow);
        assert!(!p.mlockall, "--no-mlockall came last");
        for opt in ["--numa", "--rxpt", "--mp-alloc=anon", "--flow-isolate-all"] {
            assert!(p.notes.iter().any(|n| n.starts_with(opt)), "no note for {opt}: {:?}", p.notes);
        }
        let q = run("--enable-rx-cksum --enable-scatter --enable-hw-vlan-strip --rx-mq-mode=0").unwrap();
        assert_eq!(q.rx_offloads, 0b1110 | 1 | offload::RX_SCATTER);
        assert_eq!(q.rss, RssMode::Disabled);
        let r = run("-i --stats-period 1").unwrap();
        assert!(r.interactive && r.stats_period == 1 && r.notes.iter().any(|n| n.contains("without -i")));
    }
}
