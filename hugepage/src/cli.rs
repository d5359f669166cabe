//! The `hugepages` tool: show, reserve, clear and mount hugepages per NUMA node, in the spirit of DPDK's
//! `dpdk-hugepages.py`. The binary is a thin wrapper around [`run`], which takes the sysfs root and mount table as
//! parameters ([`Host`]) so that it can be tested against a fake tree.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::sysfs::{self, HugetlbfsMount, NodeHugepages};
use crate::PageSize;

/// The usage text printed by `hugepages -h`.
pub const USAGE: &str = "\
Usage: hugepages [OPTIONS]

Show, reserve, clear and mount hugepages (like DPDK's dpdk-hugepages.py).

Options:
  -s, --show              show hugepages per NUMA node and page size (total, free) and the hugetlbfs mounts
  -r, --reserve SIZE      reserve SIZE of memory in hugepages (K, M, G or T suffix, e.g. 1G or 512M); this sets the
                          number of reserved pages, it does not add to it
      --pages N           reserve N hugepages (a page count instead of an amount of memory)
  -n, --node N            reserve on NUMA node N only (default: the kernel spreads pages over all nodes)
  -p, --pagesize SIZE     hugepage size: 2M or 1G (default: the kernel's default hugepage size)
  -c, --clear             release every reserved hugepage, of every size, on every node
  -m, --mount [DIR]       mount a hugetlbfs of --pagesize pages on DIR (default /dev/hugepages)
  -d, --directory DIR     the mount point for --mount and --setup
  -u, --unmount [DIR]     unmount the hugetlbfs on DIR (default: every hugetlbfs mount)
      --setup SIZE        clear, reserve SIZE and mount: the one command to run before the apps
  -h, --help              show this help

Actions run in this order: clear, unmount, reserve, mount, show. Changing hugepages needs root.

Examples:
  hugepages --show
  hugepages --setup 1G                     # 512 x 2M pages, mounted on /dev/hugepages
  hugepages --reserve 2G --pagesize 1G --node 0
  hugepages --pages 64 --pagesize 2M
  hugepages --clear --unmount

Testing:
      --sysfs-root DIR    read and write DIR instead of /sys
      --proc-mounts FILE  read the mount table from FILE instead of /proc/mounts
";

/// Where the tool looks at the system: normally `/sys` and `/proc/mounts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// sysfs root (`/sys`).
    pub sysfs: PathBuf,
    /// The mount table (`/proc/mounts`).
    pub mounts: PathBuf,
}

impl Default for Host {
    fn default() -> Self {
        Host { sysfs: PathBuf::from(sysfs::SYSFS_ROOT), mounts: PathBuf::from(sysfs::PROC_MOUNTS) }
    }
}

/// Why the tool stopped.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The command line is wrong; exit code 2.
    #[error("{0}\nTry `hugepages --help`.")]
    Usage(String),
    /// An action failed; exit code 1.
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Failed(_) => 1,
        }
    }
}

impl From<crate::Error> for CliError {
    fn from(e: crate::Error) -> Self {
        CliError::Failed(e.to_string())
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `--show`.
    pub show: bool,
    /// `--clear`.
    pub clear: bool,
    /// `--reserve SIZE`, in bytes.
    pub reserve: Option<u64>,
    /// `--pages N`.
    pub pages: Option<usize>,
    /// `--setup SIZE`, in bytes.
    pub setup: Option<u64>,
    /// `--node N`.
    pub node: Option<u32>,
    /// `--pagesize SIZE`.
    pub page_size: Option<PageSize>,
    /// `--mount`.
    pub mount: bool,
    /// `--unmount`.
    pub unmount: bool,
    /// The directory given to `--mount DIR`, `--unmount DIR` or `--directory DIR`.
    pub directory: Option<PathBuf>,
    /// `--help`.
    pub help: bool,
    /// `--sysfs-root DIR`.
    pub sysfs_root: Option<PathBuf>,
    /// `--proc-mounts FILE`.
    pub proc_mounts: Option<PathBuf>,
}

fn usage(msg: impl Into<String>) -> CliError {
    CliError::Usage(msg.into())
}

/// Parses the arguments (without the program name).
pub fn parse_args(args: &[String]) -> Result<Options, CliError> {
    let mut o = Options::default();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        i += 1;
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg, None),
        };
        // A required value: inline (`--opt=v`) or the next argument.
        let mut value = |what: &str| -> Result<String, CliError> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            match args.get(i) {
                Some(v) if !v.starts_with('-') || v.len() == 1 => {
                    i += 1;
                    Ok(v.clone())
                }
                _ => Err(usage(format!("{name} needs {what}"))),
            }
        };
        match name {
            "-h" | "--help" => o.help = true,
            "-s" | "--show" => o.show = true,
            "-c" | "--clear" => o.clear = true,
            "-r" | "--reserve" => o.reserve = Some(memory(name, &value("an amount of memory such as 1G")?)?),
            "--setup" => o.setup = Some(memory(name, &value("an amount of memory such as 1G")?)?),
            "--pages" => {
                let v = value("a page count")?;
                o.pages = Some(v.parse().map_err(|_| usage(format!("--pages {v:?}: not a page count")))?);
            }
            "-n" | "--node" => {
                let v = value("a NUMA node number")?;
                o.node = Some(v.parse().map_err(|_| usage(format!("--node {v:?}: not a NUMA node number")))?);
            }
            "-p" | "--pagesize" => {
                let v = value("a page size (2M or 1G)")?;
                o.page_size = match PageSize::parse(&v) {
                    Some(PageSize::Small4K) | None => {
                        return Err(usage(format!("--pagesize {v:?}: not a hugepage size; use 2M or 1G")))
                    }
                    size => size,
                };
            }
            "-d" | "--directory" => o.directory = Some(PathBuf::from(value("a directory")?)),
            "-m" | "--mount" | "-u" | "--unmount" => {
                if matches!(name, "-m" | "--mount") {
                    o.mount = true;
                } else {
                    o.unmount = true;
                }
                // The directory is optional: `--mount=DIR`, or a next argument that is not an option.
                let dir = inline.clone().or_else(|| match args.get(i) {
                    Some(v) if !v.starts_with('-') => {
                        i += 1;
                        Some(v.clone())
                    }
                    _ => None,
                });
                if let Some(dir) = dir {
                    if dir.is_empty() {
                        return Err(usage(format!("{name}: empty directory")));
                    }
                    o.directory = Some(PathBuf::from(dir));
                }
            }
            "--sysfs-root" => o.sysfs_root = Some(PathBuf::from(value("a directory")?)),
            "--proc-mounts" => o.proc_mounts = Some(PathBuf::from(value("a file")?)),
            _ if arg.starts_with('-') => return Err(usage(format!("unknown option {arg:?}"))),
            _ => return Err(usage(format!("unexpected argument {arg:?}"))),
        }
    }
    if o.reserve.is_some() as u8 + o.pages.is_some() as u8 + o.setup.is_some() as u8 > 1 {
        return Err(usage("give only one of --reserve, --pages and --setup"));
    }
    if o.node.is_some() && o.reserve.is_none() && o.pages.is_none() && o.setup.is_none() {
        return Err(usage("--node applies to --reserve, --pages or --setup; give one of them"));
    }
    Ok(o)
}

fn memory(name: &str, text: &str) -> Result<u64, CliError> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(usage(format!(
            "{name} {text}: give an amount of memory with a unit, such as {text}M or {text}G; \
             for a number of pages use --pages {text}"
        )));
    }
    sysfs::parse_memory_size(text).ok_or_else(|| {
        usage(format!("{name} {text:?}: not an amount of memory; use a number with K, M, G or T, such as 1G"))
    })
}

/// Runs the tool with `args` (without the program name) against `host`, writing the report to `out` and
/// warnings to `err`.
pub fn run(args: &[String], host: &Host, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), CliError> {
    let o = parse_args(args)?;
    let host = Host {
        sysfs: o.sysfs_root.clone().unwrap_or_else(|| host.sysfs.clone()),
        mounts: o.proc_mounts.clone().unwrap_or_else(|| host.mounts.clone()),
    };
    let nothing =
        !(o.show || o.clear || o.mount || o.unmount) && o.reserve.is_none() && o.pages.is_none() && o.setup.is_none();
    if o.help || nothing {
        write_out(out, USAGE)?;
        return Ok(());
    }

    let sizes = sysfs::page_sizes(&host.sysfs)?;
    let page_size = match o.page_size {
        Some(size) if !sizes.contains(&size) => {
            return Err(CliError::Failed(format!(
                "this kernel has no {size} hugepages (sizes available: {})",
                join(&sizes)
            )))
        }
        Some(size) => size,
        None => {
            let default = sysfs::default_page_size();
            match sizes.first() {
                _ if sizes.contains(&default) => default,
                Some(&first) => first,
                None => return Err(CliError::Failed("this kernel supports no hugepage size (2M or 1G)".into())),
            }
        }
    };

    let setup = o.setup.is_some();
    if o.clear || setup {
        clear(&host, out, err, !setup)?;
    }
    if o.unmount {
        unmount(&host, o.directory.as_deref(), out)?;
    }
    let pages = match (o.reserve.or(o.setup), o.pages) {
        (Some(bytes), _) => {
            let size = page_size.bytes() as u64;
            if bytes % size != 0 {
                return Err(usage(format!(
                    "{} is not a multiple of the {page_size} page size; use {} or {}",
                    human(bytes),
                    human(bytes / size * size),
                    human((bytes / size + 1) * size)
                )));
            }
            Some(usize::try_from(bytes / size).map_err(|_| usage(format!("{} is too much", human(bytes))))?)
        }
        (None, pages) => pages,
    };
    if let Some(pages) = pages {
        reserve(&host, page_size, o.node, pages, out)?;
    }
    if o.mount || setup {
        let dir = o.directory.clone().unwrap_or_else(|| PathBuf::from(sysfs::DEFAULT_MOUNT));
        mount(&host, &dir, page_size, out)?;
    }
    if o.show {
        show(&host, out)?;
    }
    Ok(())
}

fn write_out(out: &mut dyn Write, text: &str) -> Result<(), CliError> {
    out.write_all(text.as_bytes()).map_err(|e| CliError::Failed(format!("writing output: {e}")))
}

fn join<T: std::fmt::Display>(items: &[T]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    items.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

/// `bytes` as the largest binary unit that divides it: `1G`, `512M`, `4K`, `0`.
pub fn human(bytes: u64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes & ((1 << shift) - 1) == 0 {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// `bytes` rounded down to whole units of the largest binary unit it reaches: `23G`.
fn human_approx(bytes: u64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

fn where_(node: Option<u32>) -> String {
    node.map(|n| format!(" on node {n}")).unwrap_or_default()
}

/// Total memory of the machine (`MemTotal:` in /proc/meminfo), if known.
fn mem_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 =
        text.lines().find_map(|l| l.strip_prefix("MemTotal:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib << 10)
}

fn reserve(host: &Host, size: PageSize, node: Option<u32>, pages: usize, out: &mut dyn Write) -> Result<(), CliError> {
    let bytes = (pages as u64).saturating_mul(size.bytes() as u64);
    if let Some(total) = mem_total().filter(|&total| bytes > total) {
        return Err(CliError::Failed(format!(
            "{pages} {size} hugepages ({}) is more than this machine's memory ({}); ask for less",
            human(bytes),
            human_approx(total)
        )));
    }
    let got = sysfs::reserve_hugepages(&host.sysfs, size, node, pages)?;
    let memory = human((got * size.bytes()) as u64);
    if got < pages {
        return Err(CliError::Failed(format!(
            "asked for {pages} {size} hugepages{} but the kernel reserved only {got} ({memory}): memory is too \
             fragmented or too small. Free some (`sync; echo 3 > /proc/sys/vm/drop_caches; \
             echo 1 > /proc/sys/vm/compact_memory`) and retry, or reserve them at boot with `hugepagesz={size} \
             hugepages={pages}` on the kernel command line. The {got} pages stay reserved; `hugepages --pages 0 \
             --pagesize {size}` releases them",
            where_(node)
        )));
    }
    if got > pages {
        return Err(CliError::Failed(format!(
            "asked for {pages} {size} hugepages{} but {got} stay reserved: they are in use by running programs \
             (or by files left on a hugetlbfs mount); stop those programs or remove the files, then retry",
            where_(node)
        )));
    }
    write_out(out, &format!("reserved {pages} {size} hugepages ({memory}){}\n", where_(node)))
}

fn clear(host: &Host, out: &mut dyn Write, err: &mut dyn Write, strict: bool) -> Result<(), CliError> {
    let kept = sysfs::clear_hugepages(&host.sysfs)?;
    if kept.is_empty() {
        return write_out(out, "cleared all hugepage reservations\n");
    }
    let numa = !sysfs::numa_nodes(&host.sysfs).is_empty();
    let what: Vec<String> = kept
        .iter()
        .map(|k| {
            let node = if numa { format!(" on node {}", k.node) } else { String::new() };
            format!("{} {} pages{node}", k.total - k.free.min(k.total), k.size)
        })
        .collect();
    let files = files_on_mounts(host);
    let files = if files.is_empty() {
        String::new()
    } else {
        format!("; files on hugetlbfs hold pages until removed: rm {}", files.join(" "))
    };
    let msg = format!("could not release every hugepage: {} still in use by running programs{files}", what.join(", "));
    if strict {
        return Err(CliError::Failed(msg));
    }
    writeln!(err, "warning: {msg}").map_err(|e| CliError::Failed(format!("writing output: {e}")))
}

fn files_on_mounts(host: &Host) -> Vec<String> {
    let Ok(mounts) = sysfs::hugetlbfs_mounts_in(&host.mounts) else {
        return Vec::new();
    };
    mounts
        .iter()
        .filter_map(|m| std::fs::read_dir(&m.path).ok())
        .flatten()
        .filter_map(|e| Some(e.ok()?.path().display().to_string()))
        .collect()
}

fn mounts(host: &Host) -> Result<Vec<HugetlbfsMount>, CliError> {
    Ok(sysfs::hugetlbfs_mounts_in(&host.mounts)?)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || std::fs::canonicalize(b).is_ok_and(|c| c == a)
}

fn mount(host: &Host, dir: &Path, size: PageSize, out: &mut dyn Write) -> Result<(), CliError> {
    if let Some(m) = mounts(host)?.iter().rev().find(|m| same_dir(&m.path, dir)) {
        if m.page_size == size {
            return write_out(out, &format!("{} is already a hugetlbfs mount of {size} pages\n", dir.display()));
        }
        return Err(CliError::Failed(format!(
            "{} is already a hugetlbfs mount of {} pages; unmount it first with `hugepages --unmount {}`",
            dir.display(),
            m.page_size,
            dir.display()
        )));
    }
    sysfs::mount_hugetlbfs(dir, size)?;
    write_out(out, &format!("mounted hugetlbfs of {size} pages on {}\n", dir.display()))
}

fn unmount(host: &Host, dir: Option<&Path>, out: &mut dyn Write) -> Result<(), CliError> {
    let all = mounts(host)?;
    let targets: Vec<&HugetlbfsMount> = match dir {
        Some(dir) => match all.iter().rev().find(|m| same_dir(&m.path, dir)) {
            Some(m) => vec![m],
            None => {
                return Err(CliError::Failed(format!(
                    "{} is not a hugetlbfs mount (see `hugepages --show`)",
                    dir.display()
                )))
            }
        },
        None => all.iter().rev().collect(),
    };
    if targets.is_empty() {
        return write_out(out, "no hugetlbfs mounted\n");
    }
    for m in targets {
        sysfs::unmount(&m.path)?;
        write_out(out, &format!("unmounted {}\n", m.path.display()))?;
    }
    Ok(())
}

fn show(host: &Host, out: &mut dyn Write) -> Result<(), CliError> {
    let mut rows: Vec<NodeHugepages> = sysfs::node_hugepages(&host.sysfs)?;
    let numa = !rows.is_empty();
    if !numa {
        for size in sysfs::page_sizes(&host.sysfs)? {
            let c = sysfs::system_hugepages(&host.sysfs, size)?;
            rows.push(NodeHugepages { node: 0, size, total: c.total, free: c.free });
        }
    }
    let mut text = format!("{:<6}{:<6}{:>8}{:>8}{:>10}\n", "Node", "Size", "Total", "Free", "Memory");
    for r in &rows {
        let node = if numa { r.node.to_string() } else { "-".into() };
        let memory = human((r.total * r.size.bytes()) as u64);
        text += &format!("{node:<6}{:<6}{:>8}{:>8}{memory:>10}\n", r.size.to_string(), r.total, r.free);
    }
    let mounts = mounts(host)?;
    if mounts.is_empty() {
        text += "\nNo hugetlbfs mounted (mount one with `hugepages --mount`)\n";
    } else {
        text += "\nHugetlbfs mounts:\n";
        for m in &mounts {
            text += &format!("  {}  pagesize={}\n", m.path.display(), m.page_size);
        }
    }
    write_out(out, &text)
}
