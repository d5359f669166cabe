//! The EAL command line, as DPDK users type it.

use std::path::PathBuf;

use hugepage::{IovaMode, PageSize};
use pktio::pci::PciAddress;

use crate::{Error, Result};

/// Log levels, as DPDK numbers them (1 emergency .. 8 debug).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// 1.
    Emergency = 1,
    /// 2.
    Alert = 2,
    /// 3.
    Critical = 3,
    /// 4.
    Error = 4,
    /// 5.
    Warning = 5,
    /// 6.
    Notice = 6,
    /// 7 (the default).
    Info = 7,
    /// 8.
    Debug = 8,
}

impl LogLevel {
    /// Parses `1`..`8` or a name (`emerg`, `alert`, `crit`, `err`, `warning`, `notice`, `info`, `debug`).
    pub fn parse(text: &str) -> Option<LogLevel> {
        use LogLevel::*;
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "1" | "emerg" | "emergency" => Emergency,
            "2" | "alert" => Alert,
            "3" | "crit" | "critical" => Critical,
            "4" | "err" | "error" => Error,
            "5" | "warn" | "warning" => Warning,
            "6" | "notice" => Notice,
            "7" | "info" => Info,
            "8" | "debug" => Debug,
            _ => return None,
        })
    }
}

/// Everything the EAL arguments say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EalConfig {
    /// Lcore ids (= CPU numbers), sorted, from `-l`/`-c`; default: every CPU available.
    pub lcores: Vec<u32>,
    /// The main lcore (`--main-lcore`); default: the first of `lcores`.
    pub main_lcore: u32,
    /// PCI allow list (`-a`), in order.
    pub allow: Vec<PciAddress>,
    /// PCI block list (`-b`).
    pub block: Vec<PciAddress>,
    /// `--no-pci`.
    pub no_pci: bool,
    /// Virtual devices (`--vdev`), in order.
    pub vdevs: Vec<String>,
    /// `--huge-dir`.
    pub huge_dir: Option<PathBuf>,
    /// `--no-huge`.
    pub no_huge: bool,
    /// Memory budget in MiB (`-m`, or the sum of `--socket-mem`); `None`: no limit.
    pub memory_mb: Option<usize>,
    /// `--socket-mem` per node, in MiB.
    pub socket_mem: Vec<usize>,
    /// `--iova-mode`; `None`: chosen by the EAL (VA).
    pub iova_mode: Option<IovaMode>,
    /// `--file-prefix`.
    pub file_prefix: String,
    /// Global `--log-level`.
    pub log_level: LogLevel,
    /// Per-component `--log-level=PATTERN:LEVEL` settings.
    pub log_levels: Vec<(String, LogLevel)>,
    /// `--huge-pagesize` (ours) or the default hugepage size.
    pub page_size: Option<PageSize>,
}

impl Default for EalConfig {
    fn default() -> Self {
        EalConfig {
            lcores: Vec::new(),
            main_lcore: 0,
            allow: Vec::new(),
            block: Vec::new(),
            no_pci: false,
            vdevs: Vec::new(),
            huge_dir: None,
            no_huge: false,
            memory_mb: None,
            socket_mem: Vec::new(),
            iova_mode: None,
            file_prefix: "rte".to_string(),
            log_level: LogLevel::Info,
            log_levels: Vec::new(),
            page_size: None,
        }
    }
}

/// The EAL usage text, listing the virtual devices of pktio and of `registry`.
pub fn usage(program: &str, registry: &pktio::driver::Registry) -> String {
    format!(
        "Usage: {program} [EAL options] -- [application options]

EAL options:
  -l CORELIST            lcores to run on, e.g. 0-3 or 0,2,4-5 (lcore id = CPU number)
  -c COREMASK            lcores as a hexadecimal mask, e.g. 0x3
  --main-lcore ID        lcore that runs the main thread (default: the first)
  -a, --allow PCI        use only these PCI devices (repeatable), e.g. -a 0000:01:00.0
  -b, --block PCI        never use this PCI device (repeatable)
  --no-pci               use no PCI device
  --vdev DEVARGS         add a virtual device, e.g. --vdev net_null0,size=64 (repeatable)
                         drivers: {drivers}
  --huge-dir DIR         hugetlbfs mount to take hugepages from
  --huge-pagesize SIZE   hugepage size: 2M or 1G (default: the kernel's default)
  --no-huge              ordinary memory instead of hugepages (software ports only)
  -m MB                  memory budget in MiB
  --socket-mem MB[,MB]   memory budget per NUMA node in MiB
  --iova-mode va|pa      device addressing: va (IOMMU, default) or pa (physical, no IOMMU; needs root)
  --file-prefix NAME     prefix of hugepage files (run several processes side by side)
  --log-level LEVEL      global log level 1-8 or a name; or PATTERN:LEVEL for one component
  -n N                   memory channels (accepted for compatibility; unused)
  --in-memory            accepted for compatibility (no files are ever kept)
  -h, --help             this text",
        drivers = crate::vdev::known_names(registry).join(", ")
    )
}

fn bad(msg: impl Into<String>) -> Error {
    Error::BadArgument(msg.into())
}

/// Parses a core list such as `0-3,5,7-8` (sorted, without duplicates).
pub fn parse_corelist(text: &str) -> Result<Vec<u32>> {
    let err = || bad(format!("-l {text:?}: expected a core list such as 0-3 or 0,2,4-5"));
    let mut out = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(err());
        }
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().map_err(|_| err())?, b.trim().parse::<u32>().map_err(|_| err())?),
            None => {
                let v = part.parse::<u32>().map_err(|_| err())?;
                (v, v)
            }
        };
        if lo > hi {
            return Err(bad(format!("-l {text:?}: range {lo}-{hi} runs backwards")));
        }
        if hi as usize >= mempool::lcore::MAX_LCORES {
            return Err(bad(format!("-l {text:?}: lcore {hi} is over the maximum {}", mempool::lcore::MAX_LCORES - 1)));
        }
        out.extend(lo..=hi);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Parses a hexadecimal core mask such as `0x3` or `f`.
pub fn parse_coremask(text: &str) -> Result<Vec<u32>> {
    let digits = text.trim().trim_start_matches("0x").trim_start_matches("0X");
    let mask =
        u128::from_str_radix(digits, 16).map_err(|_| bad(format!("-c {text:?}: expected a hex mask such as 0x3")))?;
    if mask == 0 {
        return Err(bad(format!("-c {text:?}: the mask selects no lcore")));
    }
    Ok((0..128u32).filter(|i| mask & (1u128 << i) != 0).collect())
}

/// Splits `args` (without the program name) at the first `--`, parses the EAL part and returns it with the
/// application's arguments. `available_cpus` is used for the default lcore list.
pub fn parse(args: &[String], available_cpus: &[u32]) -> Result<(EalConfig, Vec<String>)> {
    let split = args.iter().position(|a| a == "--");
    let (eal, app) = match split {
        Some(i) => (&args[..i], args[i + 1..].to_vec()),
        None => (args, Vec::new()),
    };
    let mut cfg = EalConfig::default();
    let mut main_lcore = None;
    let mut lcores_given = false;
    let mut i = 0;
    while i < eal.len() {
        let arg = eal[i].as_str();
        // --opt=value and -lVALUE forms as well as "--opt value".
        let (name, inline) = if let Some(rest) = arg.strip_prefix("--") {
            match rest.split_once('=') {
                Some((n, v)) => (format!("--{n}"), Some(v.to_string())),
                None => (arg.to_string(), None),
            }
        } else if arg.len() > 2 && arg.starts_with('-') && !arg.starts_with("--") {
            // The option letter may be any character (a typo can be multi-byte): split after it, not at byte 2.
            let at = 1 + arg[1..].chars().next().map_or(0, char::len_utf8);
            (arg[..at].to_string(), Some(arg[at..].to_string()))
        } else {
            (arg.to_string(), None)
        };
        let takes_value = matches!(
            name.as_str(),
            "-l" | "-c"
                | "--main-lcore"
                | "--master-lcore"
                | "-a"
                | "--allow"
                | "-w"
                | "--pci-whitelist"
                | "-b"
                | "--block"
                | "--vdev"
                | "--huge-dir"
                | "--huge-pagesize"
                | "-m"
                | "--socket-mem"
                | "--iova-mode"
                | "--file-prefix"
                | "--log-level"
                | "-n"
                | "--proc-type"
        );
        let value = if takes_value {
            match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    eal.get(i).cloned().ok_or_else(|| bad(format!("option {name} needs a value")))?
                }
            }
        } else {
            if inline.is_some() && name.starts_with("--") {
                return Err(bad(format!("option {name} takes no value")));
            }
            String::new()
        };
        match name.as_str() {
            // The caller, who knows the registry, rewrites this with the registry's vdevs.
            "-h" | "--help" => return Err(Error::Help(usage("app", &Default::default()))),
            "-l" => {
                cfg.lcores = parse_corelist(&value)?;
                lcores_given = true;
            }
            "-c" => {
                cfg.lcores = parse_coremask(&value)?;
                lcores_given = true;
            }
            "--main-lcore" | "--master-lcore" => {
                main_lcore =
                    Some(value.parse::<u32>().map_err(|_| bad(format!("--main-lcore {value:?}: expected a number")))?)
            }
            "-a" | "--allow" | "-w" | "--pci-whitelist" => cfg.allow.push(parse_pci(&name, &value)?),
            "-b" | "--block" => cfg.block.push(parse_pci(&name, &value)?),
            "--no-pci" => cfg.no_pci = true,
            "--vdev" => {
                pktio::devargs::Devargs::parse(&value)?;
                cfg.vdevs.push(value)
            }
            "--huge-dir" => cfg.huge_dir = Some(PathBuf::from(value)),
            "--huge-pagesize" => {
                cfg.page_size = Some(
                    PageSize::parse(&value)
                        .filter(|p| *p != PageSize::Small4K)
                        .ok_or_else(|| bad(format!("--huge-pagesize {value:?}: expected 2M or 1G")))?,
                )
            }
            "--no-huge" => cfg.no_huge = true,
            "-m" => {
                let mb = value.parse::<usize>().ok().filter(|m| *m > 0);
                cfg.memory_mb = Some(mb.ok_or_else(|| bad(format!("-m {value:?}: expected a size in MiB")))?)
            }
            "--socket-mem" => {
                let sizes: Option<Vec<usize>> = value.split(',').map(|v| v.trim().parse().ok()).collect();
                cfg.socket_mem = sizes
                    .ok_or_else(|| bad(format!("--socket-mem {value:?}: expected MiB per node, e.g. 1024,1024")))?;
                cfg.memory_mb = Some(cfg.socket_mem.iter().sum());
            }
            "--iova-mode" => {
                cfg.iova_mode = Some(
                    IovaMode::parse(&value).ok_or_else(|| bad(format!("--iova-mode {value:?}: expected va or pa")))?,
                )
            }
            "--file-prefix" => {
                if value.is_empty() || value.contains('/') {
                    return Err(bad(format!("--file-prefix {value:?}: expected a plain name")));
                }
                cfg.file_prefix = value
            }
            "--log-level" => match value.rsplit_once(':').or_else(|| value.rsplit_once('=')) {
                Some((pattern, level)) => {
                    let level = LogLevel::parse(level)
                        .ok_or_else(|| bad(format!("--log-level {value:?}: bad level {level:?}")))?;
                    cfg.log_levels.push((pattern.to_string(), level));
                }
                None => {
                    cfg.log_level = LogLevel::parse(&value).ok_or_else(|| {
                        bad(format!("--log-level {value:?}: expected 1-8 or a level name such as debug"))
                    })?
                }
            },
            "-n" => {
                value.parse::<u32>().map_err(|_| bad(format!("-n {value:?}: expected a number")))?;
            }
            "--proc-type" => {
                if value != "primary" && value != "auto" {
                    return Err(bad(format!("--proc-type {value}: only primary processes are supported")));
                }
            }
            "--in-memory" | "--no-shconf" | "--no-telemetry" => {}
            other if other.starts_with('-') => return Err(bad(format!("unknown EAL option {other:?}"))),
            other => {
                return Err(bad(format!(
                    "unexpected argument {other:?} among the EAL options; put application options after --"
                )))
            }
        }
        i += 1;
    }
    if cfg.no_huge && cfg.iova_mode == Some(IovaMode::Pa) {
        return Err(bad("--iova-mode pa needs hugepages: drop --no-huge"));
    }
    if cfg.no_pci && !cfg.allow.is_empty() {
        return Err(bad("--no-pci and -a contradict each other"));
    }
    if !lcores_given {
        cfg.lcores = available_cpus.to_vec();
    }
    if cfg.lcores.is_empty() {
        return Err(bad("no lcore to run on"));
    }
    cfg.main_lcore = match main_lcore {
        Some(m) if !cfg.lcores.contains(&m) => {
            return Err(bad(format!("--main-lcore {m} is not in the lcore list {:?}", cfg.lcores)))
        }
        Some(m) => m,
        None => cfg.lcores[0],
    };
    Ok((cfg, app))
}

fn parse_pci(option: &str, value: &str) -> Result<PciAddress> {
    // DPDK allows device arguments after the address (0000:01:00.0,foo=bar): keep the address part.
    let addr = value.split(',').next().unwrap_or("");
    addr.parse().map_err(|e| bad(format!("{option} {value:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `eal_args` fuzz target: a short option whose letter is multi-byte (`-Ӭ...`) sliced inside the
    /// character and panicked; it must be an unknown-option error.
    #[test]
    fn a_multibyte_short_option_is_an_error_not_a_panic() {
        let args: Vec<String> = ["-\u{4ec}l]]", "-0"].iter().map(|s| s.to_string()).collect();
        let err = parse(&args, &[0, 1]).unwrap_err().to_string();
        assert!(err.contains('\u{4ec}'), "{err}");
        assert!(parse(&["-\u{4ec}".to_string()], &[0, 1]).is_err());
    }

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn typical_command_lines() {
        let (cfg, app) = parse(
            &args("-l 0-1 --main-lcore 1 -a 0000:01:00.0 --vdev net_null0 --vdev=net_ring0 --no-huge -m 256 --file-prefix t1 -- -i --rxq 2"),
            &[0, 1],
        )
        .unwrap();
        assert_eq!(cfg.lcores, [0, 1]);
        assert_eq!(cfg.main_lcore, 1);
        assert_eq!(cfg.allow[0].to_string(), "0000:01:00.0");
        assert_eq!(cfg.vdevs, ["net_null0", "net_ring0"]);
        assert!(cfg.no_huge);
        assert_eq!(cfg.memory_mb, Some(256));
        assert_eq!(cfg.file_prefix, "t1");
        assert_eq!(app, ["-i", "--rxq", "2"]);

        let (cfg, app) =
            parse(&args("-l0,2 --iova-mode pa --socket-mem 512,512 --log-level=pmd.net.null:debug"), &[0]).unwrap();
        assert_eq!(cfg.lcores, [0, 2]);
        assert_eq!(cfg.iova_mode, Some(IovaMode::Pa));
        assert_eq!(cfg.memory_mb, Some(1024));
        assert_eq!(cfg.log_levels, [("pmd.net.null".to_string(), LogLevel::Debug)]);
        assert!(app.is_empty());

        let (cfg, _) = parse(&args("-c 0x5 --log-level 8"), &[0]).unwrap();
        assert_eq!(cfg.lcores, [0, 2]);
        assert_eq!(cfg.log_level, LogLevel::Debug);

        let (cfg, _) = parse(&[], &[0, 1]).unwrap();
        assert_eq!(cfg.lcores, [0, 1], "default: every available CPU");
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        for (line, needle) in [
            ("-l", "needs a value"),
            ("-l 3-1", "backwards"),
            ("-l a-b", "core list"),
            ("-l 0-200", "maximum"),
            ("-c 0x0", "no lcore"),
            ("-c zz", "hex mask"),
            ("-l 0-1 --main-lcore 5", "not in the lcore list"),
            ("-a 01:00", "PCI address"),
            ("--vdev ,x=1", "device name"),
            ("--iova-mode xx", "va or pa"),
            ("--no-huge --iova-mode pa", "needs hugepages"),
            ("-m lots", "MiB"),
            ("--socket-mem 1,x", "MiB per node"),
            ("--log-level loud", "level"),
            ("--frobnicate", "unknown EAL option"),
            ("-i", "unknown EAL option"),
            ("stray", "put application options after --"),
            ("--no-pci -a 0000:01:00.0", "contradict"),
            ("--no-huge=1", "takes no value"),
            ("--huge-pagesize 4K", "2M or 1G"),
        ] {
            let err = parse(&args(line), &[0, 1]).unwrap_err().to_string();
            assert!(err.contains(needle), "{line}: {err}");
        }
        assert!(matches!(parse(&args("-h"), &[0]), Err(Error::Help(_))));
    }

    proptest::proptest! {
        #[test]
        fn corelist_round_trips(cores in proptest::collection::btree_set(0u32..128, 1..20)) {
            let text = cores.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
            proptest::prop_assert_eq!(parse_corelist(&text).unwrap(), cores.into_iter().collect::<Vec<_>>());
        }

        #[test]
        fn parse_never_panics(words in proptest::collection::vec("(-l|-c|-a|--vdev|--|-m|[-a-z0-9,.:=x]{0,12})", 0..8)) {
            let _ = parse(&words, &[0, 1]);
        }
    }
}
