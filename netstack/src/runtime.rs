//! The runtime every sample server uses: `--config FILE` (plus overrides), the port brought up through the EAL,
//! one [`Stack`] per lcore polled in a run-to-completion loop that hands each poll's events to the
//! application, a control socket per lcore, and the counters printed on Ctrl-C.
//!
//! Idle policy: on a port whose RX queue has a descriptor to wait on (af_packet, TAP, af_xdp), the loop polls
//! while traffic flows and, after [`DEFAULT_IDLE_SPIN`] (200 us) without any, sleeps in `ppoll(2)` on that
//! descriptor and the control socket until a packet or a tool arrives or the stack's next timer is due (DPDK's
//! RX-interrupt mode, as l3fwd-power uses it). A spinning server on a core it shares with its clients and the
//! kernel is a CPU hog the scheduler preempts for whole slices while requests wait; a sleeper is woken at once.
//! While it spins, the loop yields the core after each empty poll (`sched_yield`): the kernel wakes a client the
//! server just answered on the server's own core (the reply's receive path runs in the server's `sendto`), and
//! without the yield that client's next request waited for the server's slice to end (the 3-4 ms p99 of one
//! connection before issue 28); with nothing else runnable the yield returns at once. Ports without a descriptor
//! (NIC drivers, ring, null) busy-poll. `--busy-poll`, `--idle-yield` and `--idle-sleep-us` choose another
//! policy.

use std::io::Write as _;
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use pktio::{PortConfig, RssConfig, RssHashFunctions};

use crate::control::ControlServer;
use crate::{Config, Counters, Error, Event, Result, Stack};

/// Polls between control-socket checks: the check is a non-blocking `accept`, kept off most iterations.
const CONTROL_EVERY: u32 = 1024;
/// How long a loop that can sleep keeps polling (yielding the core between polls) after the last packet before it
/// sleeps (`--idle-spin-us`).
pub const DEFAULT_IDLE_SPIN: Duration = Duration::from_micros(200);
/// The largest `--idle-sleep-us` and `--idle-spin-us`: the loop sees Ctrl-C between sleeps.
pub const MAX_IDLE_SLEEP: Duration = Duration::from_secs(1);
const MAX_IDLE_SPIN: Duration = Duration::from_secs(1);
/// The longest sleep: the loop comes back at least this often although no timer asks (a safety net; the ARP
/// tick asks every 100 ms anyway).
const MAX_SLEEP: Duration = Duration::from_millis(200);
/// The longest sleep while a control client has connected but not sent its full line.
const CONTROL_CLIENT_SLEEP: Duration = Duration::from_millis(5);

/// An application on the runtime: one value per lcore, driven by that lcore's poll loop.
pub trait App: Send + 'static {
    /// Handles the events of one poll (called only when there are some).
    fn on_events(&mut self, stack: &mut Stack, events: &[Event]);

    /// Called once per poll, events or not (timers, sending on its own initiative). Does nothing by default.
    /// A loop that sleeps when idle polls again on traffic, on the stack's timers and at
    /// [`Self::next_deadline`], not on a schedule.
    fn on_poll(&mut self, stack: &mut Stack) {
        let _ = stack;
    }

    /// When the application next needs a poll although nothing arrives (its own timer); `None` (the default):
    /// it acts only on events.
    fn next_deadline(&self) -> Option<Instant> {
        None
    }

    /// The application's own counters as `name value` lines, printed on Ctrl-C after the lcore's stack
    /// counters. Empty by default.
    fn report(&self) -> String {
        String::new()
    }
}

/// What the runtime was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// The configuration, with command-line overrides applied.
    pub config: Config,
    /// Sleep this long after a poll that received nothing and reported nothing (a fixed sleep instead of
    /// waiting on the port's descriptor).
    pub idle_sleep: Option<Duration>,
    /// Never sleep or yield: spin on the queue as a dataplane on a dedicated core does.
    pub busy_poll: bool,
    /// Where the port has a descriptor to wait on: poll this long without traffic before sleeping on it.
    pub idle_spin: Duration,
    /// Yield the CPU (`sched_yield`) after an idle poll: still polling, but a client or the kernel's softirq
    /// work runnable on the same core gets it at once (where the server shares cores with its clients).
    pub idle_yield: bool,
    /// Further EAL arguments: `--file-prefix NAME` (the telemetry socket's and `pktio-dumpcap`'s name for this
    /// process) and `--no-telemetry`.
    pub eal_extra: Vec<String>,
    /// Arguments left for the application.
    pub app_args: Vec<String>,
}

/// The runtime's options, for `--help`.
pub const USAGE: &str = "  --config FILE         the TOML configuration (required; see the netstack crate docs)
  --lcores LIST         override `lcores` (DPDK corelist)
  --control-dir DIR     override `control.dir`
  --idle-spin-us N      poll N microseconds without traffic (yielding the core between polls), then sleep on
                        the port's descriptor until a packet or a timer (the default, N = 200, on ports with
                        one: af_packet, TAP, af_xdp); 0 to 1000000
  --busy-poll           never sleep: spin on the queue (the default on ports without a descriptor)
  --idle-sleep-us N     sleep N microseconds after an idle poll instead (0 to 1000000)
  --idle-yield          yield the CPU after an idle poll instead (spin, but let the core's other work run)
  --file-prefix NAME    the EAL file prefix: names the telemetry socket (dpdk-telemetry.py -f NAME) and the
                        process `pktio-dumpcap --file-prefix NAME` captures from (default rte)
  --no-telemetry        no telemetry socket (and no live capture)";

/// Parses the runtime's options out of `args` (without the program name); the rest go to the application.
pub fn parse_args(args: impl IntoIterator<Item = String>) -> Result<RunOptions> {
    let mut args = args.into_iter();
    let (mut config_path, mut lcores, mut dir, mut idle_sleep) = (None, None, None, None);
    let (mut idle_yield, mut busy_poll, mut idle_spin) = (false, false, DEFAULT_IDLE_SPIN);
    let (mut app_args, mut eal_extra) = (Vec::new(), Vec::new());
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| Error::Usage(format!("{name} needs a value")));
        match a.as_str() {
            "--config" => config_path = Some(PathBuf::from(value("--config")?)),
            "--lcores" => lcores = Some(value("--lcores")?),
            "--control-dir" => dir = Some(PathBuf::from(value("--control-dir")?)),
            "--idle-yield" => idle_yield = true,
            "--busy-poll" => busy_poll = true,
            "--idle-sleep-us" => {
                idle_sleep = Some(micros("--idle-sleep-us", value("--idle-sleep-us")?, MAX_IDLE_SLEEP)?)
            }
            "--idle-spin-us" => idle_spin = micros("--idle-spin-us", value("--idle-spin-us")?, MAX_IDLE_SPIN)?,
            "--file-prefix" => eal_extra.extend([a.clone(), value("--file-prefix")?]),
            "--no-telemetry" => eal_extra.push(a),
            _ => app_args.push(a),
        }
    }
    let path = config_path.ok_or_else(|| Error::Usage("--config FILE is required".into()))?;
    let mut config = Config::load(&path)?;
    if let Some(l) = lcores {
        config.lcores = l;
    }
    if let Some(d) = dir {
        config.control_dir = d;
    }
    if usize::from(busy_poll) + usize::from(idle_yield) + usize::from(idle_sleep.is_some()) > 1 {
        return Err(Error::Usage("--busy-poll, --idle-yield and --idle-sleep-us exclude each other".into()));
    }
    Ok(RunOptions { config, idle_sleep, busy_poll, idle_spin, idle_yield, eal_extra, app_args })
}

/// `v` microseconds, at most `max` (a loop checks for Ctrl-C between sleeps, so a sleep must stay short).
fn micros(name: &str, v: String, max: Duration) -> Result<Duration> {
    let max_us = max.as_micros() as u64;
    match v.parse::<u64>() {
        Ok(us) if us <= max_us => Ok(Duration::from_micros(us)),
        Ok(us) => Err(Error::Usage(format!("{name}: {us} microseconds: expected 0 to {max_us}"))),
        Err(_) => Err(Error::Usage(format!("{name}: `{v}` is not a number of microseconds (0 to {max_us})"))),
    }
}

/// The EAL arguments the configuration stands for.
pub fn eal_args(config: &Config) -> Vec<String> {
    let mut args = vec!["-l".to_owned(), config.lcores.clone()];
    if !config.hugepages {
        args.push("--no-huge".into());
    }
    // A PCI address starts with a hex digit group and a colon; everything else is a vdev.
    let is_pci = config.device.split(',').next().is_some_and(|d| d.contains(':') && !d.starts_with("net_"));
    args.push(if is_pci { "-a" } else { "--vdev" }.into());
    args.push(config.device.clone());
    args
}

/// Brings up the port, runs `make_app`'s application on a stack per lcore until Ctrl-C (or
/// [`eal::request_stop`]), prints the counters and returns their sum over the lcores.
pub fn run<A, F>(program: &str, options: RunOptions, mut make_app: F) -> Result<Counters>
where
    A: App,
    F: FnMut(&mut Stack, &[String]) -> Result<A>,
{
    let config = &options.config;
    let mut args = eal_args(config);
    args.extend(options.eal_extra.iter().cloned());
    let (mut eal, _) = eal::init_with(&pmds::registry(), args)?;
    // With telemetry on, `pktio-dumpcap` can capture the port while the server runs.
    let capturable = eal.telemetry().is_some();
    let mut ports = eal.take_ports();
    if ports.is_empty() {
        return Err(Error::Usage(format!("{}: port.device `{}` opened no port", config.file.display(), config.device)));
    }
    let mut port = ports.remove(0);
    drop(ports);
    let lcores: Vec<u32> = eal.lcores().to_vec();
    let queues = lcores.len() as u16;
    let mut port_config = PortConfig { rx_queues: queues, tx_queues: queues, ..PortConfig::default() };
    // The default idle mode sleeps on the RX queue's descriptor: on a PCI port that is its RX interrupt.
    let wakes = options.idle_sleep.is_none() && !options.idle_yield && !options.busy_poll;
    port_config.intr_conf.rxq = wakes && port.dev.state().intr_capa.rxq;
    if queues > 1 {
        // RSS keeps each flow on one queue, so on one lcore's stack.
        port_config.rss = Some(RssConfig { key: None, functions: RssHashFunctions::IP });
    }
    port.dev.configure(&port_config)?;
    let pool = eal.pktmbuf_pool("netstack", config.pool_size, 256, mempool::DEFAULT_DATA_ROOM)?;
    port.dev.start(&pool)?;
    eal.publish_port(0, &*port.dev, &pool);
    let port_mac = port.dev.mac_addr();
    if config.mac.is_some_and(|m| m != port_mac) {
        // Frames to a MAC the port does not own arrive only in promiscuous mode.
        port.dev.set_promiscuous(true)?;
    }
    let stack_config = config.stack_config(port_mac);
    let mut lanes = Vec::new();
    for (q, &lcore) in lcores.iter().enumerate() {
        let rx = port.dev.rx_queue(q as u16)?;
        let tx = port.dev.tx_queue(q as u16)?;
        let mut stack = Stack::new(stack_config.clone(), rx, tx, pool.clone());
        if capturable {
            stack.enable_capture(0);
        }
        let app = make_app(&mut stack, &options.app_args)?;
        let control = ControlServer::bind(&config.control_socket(lcore), lcore)?;
        println!(
            "{program}: lcore {lcore} up: inet {}/{} ether {} on {}; control {}",
            stack_config.addr,
            stack_config.prefix_len,
            stack_config.mac,
            port.name,
            control.path().display()
        );
        lanes.push((lcore, stack, app, control));
    }
    let _ = std::io::stdout().flush();
    let idle = if let Some(d) = options.idle_sleep {
        Idle::Sleep(d)
    } else if options.idle_yield {
        Idle::Yield
    } else if options.busy_poll {
        Idle::Busy
    } else {
        // Per lane: `Wake` falls back to spinning where the queue has no descriptor.
        Idle::Wake(options.idle_spin)
    };
    let main_lcore = eal.main_lcore();
    let mut threads = Vec::new();
    let mut main_lane = None;
    for lane in lanes {
        if lane.0 == main_lcore {
            main_lane = Some(lane);
            continue;
        }
        let lcore = lane.0;
        match eal
            .launch_with(lcore, lane, move |(lcore, stack, app, control)| lcore_loop(lcore, stack, app, control, idle))
        {
            Ok(t) => threads.push(t),
            Err(e) => {
                eal::request_stop();
                return Err(e.error.into());
            }
        }
    }
    let mut results = Vec::new();
    if let Some((lcore, stack, app, control)) = main_lane {
        results.push(lcore_loop(lcore, stack, app, control, idle));
    }
    for t in threads {
        results.push(t.join()?);
    }
    let mut total = Counters::default();
    let mut out = String::new();
    for (lcore, counters, active, report) in &results {
        out.push_str(&format!("== {program}: lcore {lcore} ==\nconnections_active       {active}\n{counters}{report}"));
        total.add(counters);
    }
    if results.len() > 1 {
        out.push_str(&format!("== {program}: total ==\n{total}"));
    }
    print!("{out}");
    let _ = std::io::stdout().flush();
    port.dev.stop()?;
    Ok(total)
}

/// What a poll loop does after a poll that found nothing.
#[derive(Debug, Clone, Copy)]
enum Idle {
    Busy,
    Yield,
    Sleep(Duration),
    /// Spin this long after the last traffic, then sleep on the queue's descriptor.
    Wake(Duration),
}

/// Sleeps in `ppoll(2)` until one of `fds` is readable or `timeout` passes; true when a descriptor woke it.
fn wait_readable(fds: &[RawFd], timeout: Duration) -> bool {
    let mut set = [libc::pollfd { fd: -1, events: 0, revents: 0 }; 2];
    for (p, &fd) in set.iter_mut().zip(fds) {
        *p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    }
    let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
    let n = fds.len().min(set.len());
    // SAFETY: `set` and `ts` live on our stack for the call; a null signal mask keeps the thread's own.
    let rc = unsafe { libc::ppoll(set.as_mut_ptr(), n as libc::nfds_t, &ts, std::ptr::null()) };
    rc > 0
}

/// One lcore's run-to-completion loop; returns its counters, the connections still open at the stop and the
/// application's report.
fn lcore_loop<A: App>(
    lcore: u32,
    mut stack: Stack,
    mut app: A,
    mut control: ControlServer,
    idle: Idle,
) -> (u32, Counters, usize, String) {
    let mut events = Vec::with_capacity(256);
    let mut n: u32 = 0;
    let wake_fd = stack.wait_fd();
    let idle = match idle {
        Idle::Wake(_) if wake_fd.is_none() => Idle::Busy,
        other => other,
    };
    // When the current idle spell began (Wake mode), and how often the loop slept and was woken by a packet.
    let mut idle_since: Option<Instant> = None;
    let (mut sleeps, mut wakeups) = (0u64, 0u64);
    if matches!(idle, Idle::Sleep(_)) {
        // The kernel pads a sleep by the thread's timer slack (50 us by default), which would swamp a sleep of a
        // few microseconds; 1 us keeps an idle server's wake-up close to what was asked.
        // SAFETY: PR_SET_TIMERSLACK takes a plain integer and touches no memory of ours.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0) };
    }
    while !eal::stop_requested() {
        let received = stack.poll(&mut events);
        if !events.is_empty() {
            app.on_events(&mut stack, &events);
        }
        app.on_poll(&mut stack);
        n = n.wrapping_add(1);
        let idle_poll = received == 0 && events.is_empty();
        if n % CONTROL_EVERY == 0 || (idle_poll && matches!(idle, Idle::Sleep(_))) {
            control.serve(&stack);
        }
        if idle_poll {
            match idle {
                Idle::Busy => {}
                Idle::Yield => std::thread::yield_now(),
                Idle::Sleep(d) => std::thread::sleep(d),
                Idle::Wake(spin) => {
                    let now = stack.now();
                    let since = *idle_since.get_or_insert(now);
                    if now.duration_since(since) < spin {
                        // Spinning on a core shared with the client or other work: whatever else is runnable here
                        // gets the core at once instead of waiting for our slice to end (the client's request,
                        // or the kernel's work on our reply, is often exactly that); with nothing else runnable
                        // this returns at once.
                        std::thread::yield_now();
                    } else {
                        control.serve(&stack);
                        let until = match (stack.idle_until(), app.next_deadline()) {
                            (Some(s), Some(a)) => Some(s.min(a)),
                            (until, _) => until,
                        };
                        if let (Some(until), Some(fd)) = (until, wake_fd) {
                            let cap = if control.has_clients() { CONTROL_CLIENT_SLEEP } else { MAX_SLEEP };
                            let timeout = until.saturating_duration_since(Instant::now()).min(cap);
                            sleeps += 1;
                            // No lost wake-up: a software port's descriptor is readable while a frame waits, and
                            // ppoll checks readiness after it starts waiting; a PCI port's RX interrupt is armed
                            // here, and arming wakes for a frame that arrived since the last (empty) burst. An arm
                            // that fails (the device) leaves a timed sleep, bounded by `timeout`.
                            let armed = stack.rx_intr_enable().is_ok();
                            if wait_readable(&[fd, control.wait_fd()], timeout) {
                                // Traffic (or a tool): spin again for a while before the next sleep.
                                wakeups += 1;
                                idle_since = None;
                            }
                            if armed {
                                // Busy again: polled, the interrupt off.
                                let _ = stack.rx_intr_disable();
                            }
                        }
                    }
                }
            }
        } else {
            idle_since = None;
        }
    }
    let active = stack.active_connections();
    let mut report = String::new();
    if matches!(idle, Idle::Wake(_)) {
        report = format!("{:<24} {sleeps}\n{:<24} {wakeups}\n", "lcore_idle_sleeps", "lcore_idle_wakeups");
    }
    (lcore, *stack.counters(), active, report + &app.report())
}

/// `main` for a sample server: parses `std::env::args`, runs, and turns errors into a message and exit code 1.
/// `--help` prints the runtime's options followed by `app_usage`.
pub fn main<A, F>(program: &str, app_usage: &str, make_app: F) -> ExitCode
where
    A: App,
    F: FnMut(&mut Stack, &[String]) -> Result<A>,
{
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("usage: {program} --config FILE [runtime options] [application options]\n{USAGE}\n{app_usage}");
        return ExitCode::SUCCESS;
    }
    let result = parse_args(args).and_then(|options| run(program, options, make_app));
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{program}: {e}");
            ExitCode::FAILURE
        }
    }
}
