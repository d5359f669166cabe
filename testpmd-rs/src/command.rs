//! The `testpmd>` command language: a line parsed into a [`Command`] (words, numbers, modes, on/off checked
//! here), which `cli` then runs against the application. Port numbers stay text until then, since only the
//! application knows how many ports there are.

use pktio::MacAddr;

use crate::fwd::FwdMode;
use crate::params::{parse_txpkts, parse_u64, MAX_BURST};

/// At most this many bytes of a user's line are quoted back in an error.
pub const QUOTE_MAX: usize = 200;

/// `text` quoted for an error message, cut after [`QUOTE_MAX`] bytes.
pub fn quote(text: &str) -> String {
    if text.len() <= QUOTE_MAX {
        return format!("{text:?}");
    }
    let mut end = QUOTE_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}... ({} bytes)", &text[..end], text.len())
}

/// What `show port X` and `clear port X` show or clear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortView {
    /// NIC statistics.
    Stats,
    /// Extended statistics.
    Xstats,
    /// Port information.
    Info,
    /// One line per port.
    Summary,
}

/// `show config X`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigView {
    /// Streams and lcores.
    Fwd,
    /// Queues.
    Rxtx,
    /// Forwarding lcores.
    Cores,
    /// Generated packet segments.
    Txpkts,
    /// RX split lengths.
    Rxpkts,
    /// RX split offsets.
    Rxoffs,
}

/// One command line, parsed. `ports`/`port` fields are `all` or a number, checked when run.
#[derive(Debug, Clone, PartialEq)]
pub enum Command<'a> {
    /// Blank line or comment.
    Nothing,
    /// `quit`.
    Quit,
    /// `help [SECTION]`.
    Help(Option<&'a str>),
    /// `start`, `start tx_first [N]`.
    Start { tx_first: u32 },
    /// `stop`.
    Stop,
    /// `show port stats|xstats|info|summary all|N`.
    ShowPort { view: PortView, ports: &'a str },
    /// `show port N rss-hash [key]`.
    ShowRssHash { port: &'a str, key: bool },
    /// `show port N rss reta SIZE MASKS`.
    ShowReta { port: &'a str, size: &'a str, masks: &'a str },
    /// `show port N module_eeprom|eeprom`.
    ShowEeprom { port: &'a str },
    /// `show device info all`.
    ShowDeviceInfo,
    /// `show rxq|txq info PORT QUEUE` (numbers, as dpdk-testpmd's tokens; the port is checked when run).
    ShowQueueInfo { rx: bool, port: u16, queue: u16 },
    /// `clear port stats|xstats all|N`.
    ClearPort { view: PortView, ports: &'a str },
    /// `show fwd stats all`.
    ShowFwdStats,
    /// `clear fwd stats all`.
    ClearFwdStats,
    /// `show config ...`.
    ShowConfig(ConfigView),
    /// `show mempool`.
    ShowMempool,
    /// `set fwd MODE [retry]`.
    SetFwd { mode: FwdMode, retry: bool },
    /// `set nbcore N`.
    SetNbCore(u16),
    /// `set nbport N`.
    SetNbPort(u16),
    /// `set coremask 0xM`.
    SetCoremask(u64),
    /// `set portmask 0xM`.
    SetPortmask(u64),
    /// `set burst N`.
    SetBurst(u16),
    /// `set burst tx delay US retry N`.
    SetTxRetry { delay_us: u32, n: u32 },
    /// `set txpkts ...`.
    SetTxpkts(Vec<u16>),
    /// `set txsplit off|on|rand`.
    SetTxsplit(&'a str),
    /// `set promisc|allmulti all|N on|off`.
    SetPromisc { allmulti: bool, ports: &'a str, on: bool },
    /// `set link-up|link-down port N`.
    SetLink { port: &'a str, up: bool },
    /// `set flush_rx on|off`.
    SetFlushRx(bool),
    /// `set verbose N`.
    SetVerbose(u32),
    /// `set stat_qmap tx|rx N Q MAP`.
    SetStatQmap { dir: &'a str, port: &'a str, queue: u16, map: u8 },
    /// `set record-burst-stats on|off`.
    SetRecordBurstStats(bool),
    /// `set record-core-cycles on|off`.
    SetRecordCoreCycles(bool),
    /// `set eth-peer N MAC`.
    SetEthPeer { port: &'a str, mac: MacAddr },
    /// `set record FILE|off`.
    SetRecord(&'a str),
    /// `port start all|N`.
    PortStart(&'a str),
    /// `port stop all|N`.
    PortStop(&'a str),
    /// `port close all|N`.
    PortClose(&'a str),
    /// `port reset all|N`.
    PortReset(&'a str),
    /// `port config all rxq|txq|rxd|txd N`.
    PortConfigAll { what: &'a str, n: u16 },
    /// `port config all rss ip|udp|tcp|none`.
    PortConfigRss(&'a str),
    /// `port config N rss reta (I,Q)...`.
    PortConfigReta { port: &'a str, pairs: String },
    /// `port config mtu N MTU`.
    PortConfigMtu { ports: &'a str, mtu: u16 },
    /// `mac_addr add|remove|set N MAC`.
    MacAddr { op: &'a str, port: &'a str, mac: &'a str },
    /// `show port N macs`.
    ShowMacs { port: &'a str },
    /// `vlan set filter on|off N`.
    VlanFilter { on: bool, port: &'a str },
    /// `vlan set strip on|off N`.
    VlanStrip { on: bool, port: &'a str },
    /// `rx_vlan add|rm VLAN|all N`.
    RxVlan { op: &'a str, vlan: &'a str, port: &'a str },
}

fn num<T: std::str::FromStr>(what: &str, v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("Bad arguments: {what} {} is not a valid number", quote(v)))
}

fn on_off(v: &str) -> Result<bool, String> {
    match v {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("Bad arguments: expected on or off, not {}", quote(v))),
    }
}

fn mask(what: &str, v: &str) -> Result<u64, String> {
    parse_u64(v).ok_or_else(|| format!("Bad arguments: {what} {}", quote(v)))
}

/// Parses one line. Errors are the messages the prompt prints.
pub fn parse(line: &str) -> Result<Command<'_>, String> {
    use Command as C;
    let w: Vec<&str> = line.split_whitespace().collect();
    if w.is_empty() || w[0].starts_with('#') {
        return Ok(C::Nothing);
    }
    let bad = || Err(format!("Bad arguments: {} (type help)", quote(&w.join(" "))));
    let cmd = match w[..] {
        ["quit"] => C::Quit,
        ["help"] => C::Help(None),
        ["help", section] => C::Help(Some(section)),
        ["start"] => C::Start { tx_first: 0 },
        ["start", "tx_first"] => C::Start { tx_first: 1 },
        // 0 bursts is a plain start, as in dpdk-testpmd.
        ["start", "tx_first", n] => C::Start { tx_first: num("tx_first", n)? },
        ["stop"] => C::Stop,
        ["show", "port", "summary", ports] => C::ShowPort { view: PortView::Summary, ports },
        ["show", "port", port, "rss-hash"] => C::ShowRssHash { port, key: false },
        ["show", "port", port, "rss-hash", "key"] => C::ShowRssHash { port, key: true },
        ["show", "port", port, "rss", "reta", size, masks] => C::ShowReta { port, size, masks },
        ["show", "port", port, "module_eeprom" | "eeprom"] => C::ShowEeprom { port },
        ["show", "port", port, "macs"] => C::ShowMacs { port },
        ["show", "device", "info", "all"] => C::ShowDeviceInfo,
        ["show", which @ ("rxq" | "txq"), "info", port, queue] => {
            C::ShowQueueInfo { rx: which == "rxq", port: num("port", port)?, queue: num("queue", queue)? }
        }
        ["show" | "clear", "port", what, ports] => {
            let view = match what {
                "stats" => PortView::Stats,
                "xstats" => PortView::Xstats,
                "info" if w[0] == "show" => PortView::Info,
                _ => return bad(),
            };
            if w[0] == "show" {
                C::ShowPort { view, ports }
            } else {
                C::ClearPort { view, ports }
            }
        }
        ["show", "fwd", "stats", "all"] => C::ShowFwdStats,
        ["clear", "fwd", "stats", "all"] => C::ClearFwdStats,
        ["show", "config", what] => C::ShowConfig(match what {
            "fwd" => ConfigView::Fwd,
            "rxtx" => ConfigView::Rxtx,
            "cores" => ConfigView::Cores,
            "txpkts" => ConfigView::Txpkts,
            "rxpkts" => ConfigView::Rxpkts,
            "rxoffs" => ConfigView::Rxoffs,
            _ => return bad(),
        }),
        ["show", "mempool"] => C::ShowMempool,
        ["set", "fwd", mode] | ["set", "fwd", mode, "retry"] => {
            C::SetFwd { mode: mode.parse().map_err(|e| format!("Bad arguments: {e}"))?, retry: w.len() == 4 }
        }
        ["set", "nbcore", n] => C::SetNbCore(num("nbcore", n)?),
        ["set", "nbport", n] => C::SetNbPort(num("nbport", n)?),
        ["set", "coremask", m] => C::SetCoremask(mask("coremask", m)?),
        ["set", "portmask", m] => C::SetPortmask(mask("portmask", m)?),
        ["set", "burst", "tx", "delay", d, "retry", n] => {
            C::SetTxRetry { delay_us: num("delay", d)?, n: num("retry", n)? }
        }
        ["set", "burst", n] => {
            let n: u16 = num("burst", n)?;
            if n == 0 || n > MAX_BURST {
                return Err(format!("burst must be >= 1 && <= {MAX_BURST}"));
            }
            C::SetBurst(n)
        }
        ["set", "txpkts", list] => C::SetTxpkts(parse_txpkts(list).map_err(|e| format!("Bad arguments: {e}"))?),
        ["set", "txsplit", how @ ("off" | "on" | "rand")] => C::SetTxsplit(how),
        ["set", which @ ("promisc" | "allmulti"), ports, v] => {
            C::SetPromisc { allmulti: which == "allmulti", ports, on: on_off(v)? }
        }
        ["set", updown @ ("link-up" | "link-down"), "port", port] => C::SetLink { port, up: updown == "link-up" },
        ["set", "flush_rx", v] => C::SetFlushRx(on_off(v)?),
        ["set", "verbose", n] => C::SetVerbose(num("verbose", n)?),
        ["set", "stat_qmap", dir @ ("tx" | "rx"), port, queue, map] => {
            C::SetStatQmap { dir, port, queue: num("queue", queue)?, map: num("map", map)? }
        }
        ["set", "record-burst-stats", v] => C::SetRecordBurstStats(on_off(v)?),
        ["set", "record-core-cycles", v] => C::SetRecordCoreCycles(on_off(v)?),
        ["set", "eth-peer", port, mac] => {
            if port == "all" {
                return Err("Bad arguments: set eth-peer takes one port".into());
            }
            C::SetEthPeer { port, mac: mac.parse().map_err(|e| format!("Error: Invalid ethernet address: {e}"))? }
        }
        ["set", "record", what] => C::SetRecord(what),
        ["port", "start", ports] => C::PortStart(ports),
        ["port", "stop", ports] => C::PortStop(ports),
        ["port", "close", ports] => C::PortClose(ports),
        ["port", "reset", ports] => C::PortReset(ports),
        ["port", "config", "all", "rss", what] => C::PortConfigRss(what),
        ["port", "config", "all", what, n] => C::PortConfigAll { what, n: num(what, n)? },
        ["port", "config", "mtu", ports, mtu] => C::PortConfigMtu { ports, mtu: num("mtu", mtu)? },
        ["port", "config", port, "rss", "reta", ref pairs @ ..] if !pairs.is_empty() => {
            C::PortConfigReta { port, pairs: pairs.concat() }
        }
        ["port", "config", ..] => {
            return Err("Bad arguments: port config all rxq|txq|rxd|txd N, or port config mtu N M".into())
        }
        ["mac_addr", op, port, mac] => C::MacAddr { op, port, mac },
        ["vlan", "set", "strip", v, port] => C::VlanStrip { on: on_off(v)?, port },
        ["vlan", "set", "filter", v, port] => C::VlanFilter { on: on_off(v)?, port },
        ["rx_vlan", op @ ("add" | "rm"), vlan, port] => C::RxVlan { op, vlan, port },
        [first, ..] if ["show", "clear", "set", "port", "start", "mac_addr", "vlan", "rx_vlan"].contains(&first) => {
            return bad()
        }
        _ => return Err(format!("Command not found: {} (type help)", quote(&w.join(" ")))),
    };
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Command as C;

    #[test]
    fn lines_become_commands() {
        assert_eq!(parse("  # a comment").unwrap(), C::Nothing);
        assert_eq!(parse("start tx_first 0").unwrap(), C::Start { tx_first: 0 });
        assert_eq!(parse("start tx_first").unwrap(), C::Start { tx_first: 1 });
        assert_eq!(parse("set fwd mac retry").unwrap(), C::SetFwd { mode: FwdMode::Mac, retry: true });
        assert_eq!(parse("show port 1 rss-hash key").unwrap(), C::ShowRssHash { port: "1", key: true });
        assert_eq!(parse("show port summary all").unwrap(), C::ShowPort { view: PortView::Summary, ports: "all" });
        assert_eq!(parse("clear port xstats 0").unwrap(), C::ClearPort { view: PortView::Xstats, ports: "0" });
        assert_eq!(
            parse("port config 0 rss reta (0,1), (2,3)").unwrap(),
            C::PortConfigReta { port: "0", pairs: "(0,1),(2,3)".into() }
        );
        assert_eq!(parse("set burst tx delay 5 retry 9").unwrap(), C::SetTxRetry { delay_us: 5, n: 9 });
        assert_eq!(parse("set coremask 0x6").unwrap(), C::SetCoremask(6));
        assert_eq!(parse("set link-down port 1").unwrap(), C::SetLink { port: "1", up: false });
        assert_eq!(parse("show txq info 1 3").unwrap(), C::ShowQueueInfo { rx: false, port: 1, queue: 3 });
        assert_eq!(parse("show rxq info 0 0").unwrap(), C::ShowQueueInfo { rx: true, port: 0, queue: 0 });
    }

    #[test]
    fn bad_lines_say_why() {
        for (line, needle) in [
            ("frobnicate", "Command not found"),
            ("clear port info 0", "Bad arguments"),
            ("set burst 0", "burst must be >= 1 && <= 512"),
            ("set burst many", "not a valid number"),
            ("set flush_rx maybe", "on or off"),
            ("set fwd warp", "unknown forwarding mode"),
            ("set eth-peer all 02:00:00:00:00:01", "takes one port"),
            ("set eth-peer 0 zz", "Invalid ethernet address"),
            ("port config 0 what", "port config all"),
            ("set coremask zz", "Bad arguments: coremask"),
            ("show rxq info 0", "Bad arguments"),
            ("show rxq info 0 70000", "Bad arguments: queue"),
            ("show txq info x 0", "Bad arguments: port"),
            ("show rxq stats 0 0", "Bad arguments"),
        ] {
            let e = parse(line).unwrap_err();
            assert!(e.contains(needle), "{line}: {e}");
        }
        let long = format!("bogus {}", "x".repeat(1000));
        let e = parse(&long).unwrap_err();
        assert!(e.len() < QUOTE_MAX + 80 && e.ends_with("(1006 bytes) (type help)"), "{e}");
    }
}
