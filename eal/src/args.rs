//! The EAL command line, as DPDK users type it.

use std::path::PathBuf;

use drvkit::pci::PciAddress;
use hugepage::{IovaMode, PageSize};
use pktio::devargs::Devargs;

pub use crate::cores::{parse_corelist, parse_coremask, parse_lcores};
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

/// A per-component `--log-level` setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRule {
    /// The component names it applies to: a shell-style pattern (`pmd.net.*`, from `PATTERN:LEVEL`) or a regular
    /// expression (`^pmd\.net`, from DPDK's `REGEX,LEVEL` form), as [`LogRule::regex`] says.
    pub pattern: String,
    /// True for the `REGEX,LEVEL` form.
    pub regex: bool,
    /// The level.
    pub level: LogLevel,
}

/// A PCI device named with `-a`, with the device arguments given after its address (`-a 0000:01:00.0,key=value`),
/// which go to its driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedDevice {
    /// The address.
    pub address: PciAddress,
    /// The arguments (none when only the address was given).
    pub devargs: Devargs,
}

/// Everything the EAL arguments say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EalConfig {
    /// Lcore ids, sorted, from `-l`/`-c`/`--lcores`; default: every CPU available. With `-l`/`-c` an lcore id is
    /// the CPU number it runs on; `--lcores` may map them otherwise ([`EalConfig::cpus_of`]).
    pub lcores: Vec<u32>,
    /// `--lcores` mappings `lcore@cpus` (and groups `(0-3)@(0,1)`): the CPUs each lcore may run on. Lcores not
    /// listed here run on the CPU of their own number.
    pub lcore_cpus: Vec<(u32, Vec<u32>)>,
    /// The main lcore (`--main-lcore`); default: the first of `lcores`.
    pub main_lcore: u32,
    /// PCI allow list (`-a`), in order. Empty: every supported device bound to vfio-pci is probed (minus `block`).
    pub allow: Vec<AllowedDevice>,
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
    /// Per-component `--log-level=PATTERN:LEVEL` and `--log-level=REGEX,LEVEL` settings, in order.
    pub log_levels: Vec<LogRule>,
    /// `--huge-pagesize` (ours) or the default hugepage size.
    pub page_size: Option<PageSize>,
    /// `-v`: print the version at start-up.
    pub print_version: bool,
    /// `--force-max-simd-bitwidth`, if given (recorded; this build's vector width is fixed when it is compiled).
    pub max_simd_bitwidth: Option<u16>,
    /// Serve DPDK's telemetry socket (default; `--no-telemetry` turns it off).
    pub telemetry: bool,
    /// One line for each option given that means nothing here (accepted so that DPDK scripts run), to be printed
    /// once at start-up.
    pub notes: Vec<String>,
}

impl EalConfig {
    /// The CPUs `lcore` may run on: its `--lcores` mapping, else the CPU of its own number.
    pub fn cpus_of(&self, lcore: u32) -> Vec<u32> {
        match self.lcore_cpus.iter().find(|(l, _)| *l == lcore) {
            Some((_, cpus)) => cpus.clone(),
            None => vec![lcore],
        }
    }
}

impl Default for EalConfig {
    fn default() -> Self {
        EalConfig {
            lcores: Vec::new(),
            lcore_cpus: Vec::new(),
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
            print_version: false,
            max_simd_bitwidth: None,
            telemetry: true,
            notes: Vec::new(),
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
  --lcores MAP           lcores and the CPUs they run on: 0-3, 1@2, (0-3)@(0,1), 0,(1,2)@3
  --main-lcore ID        lcore that runs the main thread (default: the first)
  -a, --allow PCI[,k=v]  use only these PCI devices (repeatable), e.g. -a 0000:01:00.0; key=value arguments go to
                         the driver. Without -a: every supported device bound to vfio-pci
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
  --log-level LEVEL      global log level 1-8 or a name; PATTERN:LEVEL (glob) or REGEX,LEVEL for components
  --no-telemetry         no telemetry socket (default: DPDK's dpdk_telemetry.v2 for the file prefix, which
                         dpdk-telemetry.py -f PREFIX reads); --telemetry turns it back on
  -v                     print the version at start-up
  -h, --help             this text

Accepted for DPDK scripts, meaning nothing here (each says so once on stderr): -n N, -d LIB (drivers are built in),
  --in-memory, --no-shconf, --proc-type primary|auto, --single-file-segments, --legacy-mem, --base-virtaddr ADDR,
  --vfio-intr legacy|msi|msix, --force-max-simd-bitwidth N, --no-hpet,
  --huge-unlink[=MODE], --match-allocations, --syslog[=FACILITY], --vmware-tsc-map, --create-uio-dev.
  Virtual device names also take DPDK's eth_ aliases (eth_null0 = net_null0).",
        drivers = crate::vdev::known_names(registry).join(", ")
    )
}

fn bad(msg: impl Into<String>) -> Error {
    Error::BadArgument(msg.into())
}

/// Options that take a value (`--opt value`, `--opt=value`, `-oVALUE`).
const TAKES_VALUE: &[&str] = &[
    "-l",
    "-c",
    "--lcores",
    "--main-lcore",
    "--master-lcore",
    "-a",
    "--allow",
    "-w",
    "--pci-whitelist",
    "-b",
    "--block",
    "--pci-blacklist",
    "--vdev",
    "--huge-dir",
    "--huge-pagesize",
    "-m",
    "--socket-mem",
    "--socket-limit",
    "--iova-mode",
    "--file-prefix",
    "--log-level",
    "-n",
    "-r",
    "-d",
    "--proc-type",
    "--base-virtaddr",
    "--vfio-intr",
    "--force-max-simd-bitwidth",
];

/// Flags that may carry a value of their own (`--huge-unlink=always`) but never take the next word.
const OPTIONAL_VALUE: &[&str] = &["--huge-unlink", "--syslog"];

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
    let mut lcores_from: Option<String> = None;
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
        let value = if TAKES_VALUE.contains(&name.as_str()) {
            match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    eal.get(i).cloned().ok_or_else(|| bad(format!("option {name} needs a value")))?
                }
            }
        } else if OPTIONAL_VALUE.contains(&name.as_str()) {
            inline.unwrap_or_default()
        } else {
            if inline.is_some() && name.starts_with("--") && is_known_flag(&name) {
                return Err(bad(format!("option {name} takes no value")));
            }
            String::new()
        };
        let mut choose_lcores = |option: &str| -> Result<()> {
            if let Some(previous) = lcores_from.replace(option.to_string()) {
                if previous != option {
                    return Err(bad(format!("{previous} and {option} both choose the lcores: give only one")));
                }
            }
            Ok(())
        };
        match name.as_str() {
            // The caller, who knows the registry, rewrites this with the registry's vdevs.
            "-h" | "--help" => return Err(Error::Help(usage("app", &Default::default()))),
            "-l" => {
                choose_lcores("-l")?;
                cfg.lcores = parse_corelist(&value)?;
                cfg.lcore_cpus.clear();
            }
            "-c" => {
                choose_lcores("-c")?;
                cfg.lcores = parse_coremask(&value)?;
                cfg.lcore_cpus.clear();
            }
            "--lcores" => {
                choose_lcores("--lcores")?;
                let map = parse_lcores(&value)?;
                cfg.lcores = map.iter().map(|(l, _)| *l).collect();
                cfg.lcore_cpus = map;
            }
            "--main-lcore" | "--master-lcore" => {
                main_lcore =
                    Some(value.parse::<u32>().map_err(|_| bad(format!("--main-lcore {value:?}: expected a number")))?)
            }
            "-a" | "--allow" | "-w" | "--pci-whitelist" => {
                // The address first, for its own message; then the key=value arguments after it.
                let address = parse_pci(&name, &value, value.split(',').next().unwrap_or(""))?;
                let (_, devargs) = Devargs::parse_pci(&value).map_err(|e| match e {
                    pktio::Error::Devargs { reason, .. } => bad(format!("{name} {value:?}: {reason}")),
                    e => bad(format!("{name} {value:?}: {e}")),
                })?;
                if cfg.allow.iter().any(|d| d.address == address) {
                    return Err(bad(format!("{name} {value:?}: device {address} is already allowed")));
                }
                cfg.allow.push(AllowedDevice { address, devargs })
            }
            "-b" | "--block" | "--pci-blacklist" => cfg.block.push(parse_pci(&name, &value, &value)?),
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
                cfg.socket_mem = parse_mib_list(&name, &value)?;
                cfg.memory_mb = Some(cfg.socket_mem.iter().sum());
            }
            "--socket-limit" => {
                parse_mib_list(&name, &value)?;
                note(&mut cfg, &name, "memory is taken as needed within -m/--socket-mem, never grown past them");
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
            "--log-level" => parse_log_level(&mut cfg, &value)?,
            "-v" => cfg.print_version = true,
            "-n" | "-r" => {
                value.parse::<u32>().map_err(|_| bad(format!("{name} {value:?}: expected a number")))?;
                note(&mut cfg, &name, "memory channels and ranks only tune DPDK's allocator; nothing uses them here");
            }
            "-d" => note(&mut cfg, &name, "drivers are built in (the application's registry); no library is loaded"),
            "--proc-type" => {
                if value != "primary" && value != "auto" {
                    return Err(bad(format!("--proc-type {value}: only primary processes are supported")));
                }
            }
            "--in-memory" | "--no-shconf" => {
                note(&mut cfg, &name, "no shared configuration or hugepage file is kept after exit anyway")
            }
            "--single-file-segments" | "--legacy-mem" | "--match-allocations" | "--huge-unlink" => {
                note(&mut cfg, &name, "memory is laid out by the hugepage crate; this DPDK memory mode does not apply")
            }
            "--base-virtaddr" => {
                let digits = value.trim_start_matches("0x").trim_start_matches("0X");
                u64::from_str_radix(digits, 16).map_err(|_| {
                    bad(format!("--base-virtaddr {value:?}: expected a hex address such as 0x7f0000000000"))
                })?;
                note(&mut cfg, &name, "no multi-process mapping, so the address space needs no fixed base");
            }
            "--vfio-intr" => {
                if !matches!(value.as_str(), "legacy" | "msi" | "msix") {
                    return Err(bad(format!("--vfio-intr {value:?}: expected legacy, msi or msix")));
                }
                note(&mut cfg, &name, "ports are polled; no interrupt is set up");
            }
            "--telemetry" => cfg.telemetry = true,
            "--no-telemetry" => cfg.telemetry = false,
            "--force-max-simd-bitwidth" => {
                let bits = value.parse::<u16>().ok().filter(|b| *b == 0 || (b.is_power_of_two() && *b >= 64));
                cfg.max_simd_bitwidth = Some(bits.ok_or_else(|| {
                    bad(format!("--force-max-simd-bitwidth {value:?}: expected 64, 128, 256, 512 (or 0: no limit)"))
                })?);
                note(&mut cfg, &name, "the vector width is fixed when this build is compiled");
            }
            "--no-hpet" | "--vmware-tsc-map" => note(&mut cfg, &name, "timing uses the kernel's monotonic clock"),
            "--syslog" => note(&mut cfg, &name, "messages go to stderr"),
            "--create-uio-dev" => note(&mut cfg, &name, "devices are used through vfio-pci only"),
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
    if let Some(d) = cfg.allow.iter().find(|d| cfg.block.contains(&d.address)) {
        return Err(bad(format!("{} is both allowed (-a) and blocked (-b)", d.address)));
    }
    if lcores_from.is_none() {
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

/// True for the flags [`parse`] knows (so `--no-huge=1` says "takes no value", an unknown `--opt=1` "unknown").
fn is_known_flag(name: &str) -> bool {
    matches!(
        name,
        "--help"
            | "--no-pci"
            | "--no-huge"
            | "--in-memory"
            | "--no-shconf"
            | "--single-file-segments"
            | "--legacy-mem"
            | "--match-allocations"
            | "--telemetry"
            | "--no-telemetry"
            | "--no-hpet"
            | "--vmware-tsc-map"
            | "--create-uio-dev"
    )
}

/// Records, once per option, that `option` was accepted and why it changes nothing.
fn note(cfg: &mut EalConfig, option: &str, why: &str) {
    let line = format!("{option} accepted and ignored: {why}");
    if !cfg.notes.iter().any(|n| n.starts_with(&format!("{option} "))) {
        cfg.notes.push(line);
    }
}

fn parse_mib_list(option: &str, value: &str) -> Result<Vec<usize>> {
    let sizes: Option<Vec<usize>> = value.split(',').map(|v| v.trim().parse().ok()).collect();
    sizes.ok_or_else(|| bad(format!("{option} {value:?}: expected MiB per node, e.g. 1024,1024")))
}

/// `--log-level`: `LEVEL` (global), `PATTERN:LEVEL` (shell-style pattern), `REGEX,LEVEL` (DPDK's regex form);
/// `PATTERN=LEVEL` is taken as the pattern form too (older DPDK spelling).
fn parse_log_level(cfg: &mut EalConfig, value: &str) -> Result<()> {
    let level_of = |level: &str| {
        LogLevel::parse(level).ok_or_else(|| {
            bad(format!("--log-level {value:?}: bad level {level:?} (1-8 or emerg, alert, crit, err, warning, notice, info, debug)"))
        })
    };
    let (pattern, regex, level) = if let Some((re, level)) = value.rsplit_once(',') {
        (re, true, level)
    } else if let Some((pattern, level)) = value.rsplit_once(':').or_else(|| value.rsplit_once('=')) {
        (pattern, false, level)
    } else {
        cfg.log_level = LogLevel::parse(value)
            .ok_or_else(|| bad(format!("--log-level {value:?}: expected 1-8 or a level name such as debug")))?;
        return Ok(());
    };
    if pattern.trim().is_empty() {
        return Err(bad(format!("--log-level {value:?}: the component pattern before the level is empty")));
    }
    let level = level_of(level)?;
    cfg.log_levels.push(LogRule { pattern: pattern.to_string(), regex, level });
    Ok(())
}

/// The PCI address `text`, part of `option`'s `value`.
fn parse_pci(option: &str, value: &str, text: &str) -> Result<PciAddress> {
    text.trim().parse().map_err(|e| bad(format!("{option} {value:?}: {e}")))
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
        assert_eq!(cfg.allow[0].address.to_string(), "0000:01:00.0");
        assert!(cfg.allow[0].devargs.args.is_empty());
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
        assert_eq!(
            cfg.log_levels,
            [LogRule { pattern: "pmd.net.null".to_string(), regex: false, level: LogLevel::Debug }]
        );
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
            ("-c +3", "-c \"+3\": expected a hex mask such as 0x3 (hex digits only)"),
            ("-c 0x-3", "hex digits only"),
            ("-c 0x", "hex digits only"),
            ("-c 0x1000000000000000000000000000000000", "over the maximum 127"),
            ("-l +1", "expected a core list"),
            ("-l 0-200", "-l \"0-200\": lcore 200 is over the maximum 127"),
            ("--lcores 200@0", "--lcores \"200@0\": lcore 200 is over the maximum 127"),
            ("--lcores 1@5000", "--lcores \"1@5000\": CPU 5000 is over the maximum 1023"),
            ("--lcores 3-1", "range 3-1 runs backwards"),
            ("-l 0-1 --main-lcore 5", "not in the lcore list"),
            ("-a 01:00", "-a \"01:00\": \"01:00\" is not a PCI address"),
            ("-a 0000:zz:00.0,x=1", "-a \"0000:zz:00.0,x=1\": \"0000:zz:00.0\" is not a PCI address"),
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
            ("--frobnicate=1", "unknown EAL option \"--frobnicate\""),
            ("--huge-pagesize 4K", "2M or 1G"),
            ("--lcores", "needs a value"),
            ("--lcores (0-3@1", "parenthes"),
            ("--lcores 0-3)@1", "parenthes"),
            ("--lcores ((0))", "nest"),
            ("--lcores 0,,1", "empty element"),
            ("--lcores 1,1@2", "given twice"),
            ("--lcores x@1", "not a number"),
            ("--lcores 1@(a)", "not a number"),
            ("-l 0 --lcores 1", "both choose the lcores"),
            ("-c 1 -l 0", "both choose the lcores"),
            ("--log-level pmd,loud", "bad level"),
            ("--log-level ,debug", "pattern before the level is empty"),
            ("--log-level :8", "pattern before the level is empty"),
            ("-d", "needs a value"),
            ("--base-virtaddr nowhere", "hex address"),
            ("--vfio-intr msx", "legacy, msi or msix"),
            ("--force-max-simd-bitwidth 100", "64, 128, 256, 512"),
            ("--force-max-simd-bitwidth 32", "64, 128, 256, 512"),
            ("-a 0000:01:00.0,novalue", "-a \"0000:01:00.0,novalue\": \"novalue\" is not key=value"),
            ("-a 0000:01:00.0 -a 01:00.0", "already allowed"),
            ("-a 0000:01:00.0 -b 01:00.0", "both allowed (-a) and blocked (-b)"),
            ("-n x", "expected a number"),
        ] {
            let err = parse(&args(line), &[0, 1]).unwrap_err().to_string();
            assert!(err.contains(needle), "{line}: {err}");
        }
        assert!(matches!(parse(&args("-h"), &[0]), Err(Error::Help(_))));
    }

    #[test]
    fn lcores_maps_lcores_to_cpus_with_dpdk_groups() {
        let (cfg, _) = parse(&args("--lcores (0-3)@(0,1) --main-lcore 2"), &[0, 1]).unwrap();
        assert_eq!(cfg.lcores, [0, 1, 2, 3]);
        assert_eq!(cfg.main_lcore, 2);
        for l in 0..4 {
            assert_eq!(cfg.cpus_of(l), [0, 1], "lcore {l}");
        }
        let (cfg, _) = parse(&args("--lcores=0,(1,2)@3,4-5,6@1,7@(4-5)"), &[0]).unwrap();
        assert_eq!(cfg.lcores, [0, 1, 2, 4, 5, 6, 7]);
        assert_eq!(cfg.cpus_of(0), [0]);
        assert_eq!(cfg.cpus_of(1), [3]);
        assert_eq!(cfg.cpus_of(2), [3]);
        assert_eq!(cfg.cpus_of(5), [5]);
        assert_eq!(cfg.cpus_of(6), [1]);
        assert_eq!(cfg.cpus_of(7), [4, 5]);
        // -l keeps lcore = CPU.
        let (cfg, _) = parse(&args("-l 2-3"), &[0]).unwrap();
        assert!(cfg.lcore_cpus.is_empty());
        assert_eq!(cfg.cpus_of(3), [3]);
        // The same option twice: the last wins, as with -l before.
        let (cfg, _) = parse(&args("--lcores 1 --lcores 2@0"), &[0]).unwrap();
        assert_eq!(cfg.lcores, [2]);
        assert_eq!(cfg.cpus_of(2), [0]);
    }

    #[test]
    fn log_levels_in_every_dpdk_form() {
        let (cfg, _) = parse(
            &args("--log-level=pmd.net.*:debug --log-level ^lib\\.eal$,5 --log-level 3 --log-level=user1=info"),
            &[0],
        )
        .unwrap();
        assert_eq!(cfg.log_level, LogLevel::Critical);
        assert_eq!(
            cfg.log_levels,
            [
                LogRule { pattern: "pmd.net.*".into(), regex: false, level: LogLevel::Debug },
                LogRule { pattern: "^lib\\.eal$".into(), regex: true, level: LogLevel::Warning },
                LogRule { pattern: "user1".into(), regex: false, level: LogLevel::Info },
            ]
        );
    }

    #[test]
    fn devargs_after_an_allowed_address_are_kept() {
        let (cfg, _) = parse(&args("-a 0000:01:00.0,fiber_sdp3_no_tx_disable=1 -w 02:00.1 -b 03:00.0"), &[0]).unwrap();
        assert_eq!(cfg.allow.len(), 2);
        assert_eq!(cfg.allow[0].devargs.get("fiber_sdp3_no_tx_disable"), Some("1"));
        assert_eq!(cfg.allow[0].devargs.name, "0000:01:00.0");
        assert_eq!(cfg.allow[1].address.to_string(), "0000:02:00.1");
        assert_eq!(cfg.block[0].to_string(), "0000:03:00.0");
    }

    /// Every option that means nothing here is accepted, validated where it has a value, and noted once.
    #[test]
    fn meaningless_options_are_accepted_and_noted_once() {
        let line = "-v -n 4 -r 2 -d librte_net_ixgbe.so -d /usr/lib/dpdk --in-memory --no-shconf --proc-type auto                     --single-file-segments --legacy-mem --base-virtaddr 0x7f0000000000 --vfio-intr=msix --telemetry                     --no-telemetry --force-max-simd-bitwidth 512 --no-hpet --huge-unlink=always --match-allocations                     --syslog --vmware-tsc-map --create-uio-dev --socket-limit 2048";
        let (cfg, app) = parse(&args(&format!("{line} -- -i")), &[0, 1]).unwrap();
        assert_eq!(app, ["-i"]);
        assert!(cfg.print_version);
        assert_eq!(cfg.max_simd_bitwidth, Some(512));
        for option in [
            "-n",
            "-r",
            "-d",
            "--in-memory",
            "--no-shconf",
            "--single-file-segments",
            "--legacy-mem",
            "--base-virtaddr",
            "--vfio-intr",
            "--force-max-simd-bitwidth",
            "--no-hpet",
            "--huge-unlink",
            "--match-allocations",
            "--syslog",
            "--vmware-tsc-map",
            "--create-uio-dev",
            "--socket-limit",
        ] {
            let n = cfg.notes.iter().filter(|n| n.starts_with(&format!("{option} accepted and ignored: "))).count();
            assert_eq!(n, 1, "{option}: {:?}", cfg.notes);
        }
        assert!(cfg.notes.iter().any(|n| n.contains("drivers are built in")), "{:?}", cfg.notes);
        assert!(!cfg.telemetry, "the last of --telemetry/--no-telemetry wins");
        // Nothing meaningful: no notes.
        let (cfg, _) = parse(&args("-l 0 --no-huge"), &[0]).unwrap();
        assert!(cfg.notes.is_empty() && !cfg.print_version);
        assert!(cfg.telemetry, "telemetry is on by default, as in DPDK");
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
