//! Forwarding runs of the application: which ports and lcores forward (the plan, as testpmd's fwd_config_setup
//! computes it), `start` (the queues moved into streams on the forwarding lcores), `stop` (the lcores joined and
//! the queues taken back) and the recording of a run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pktio::{RxQueue, TxQueue};

use super::{App, CmdResult, FwdPlan, Running, Worker};
use crate::fwd::{self, FwdMode, GenConfig, Stream, StreamSpec};
use crate::params::Topology;

impl App {
    /// The forwarding ports (mask, count).
    pub fn fwd_ports(&self) -> Vec<u16> {
        let mut v: Vec<u16> = (0..self.ports.len() as u16)
            .filter(|&i| i >= 64 || self.set.portmask & (1u64 << i) != 0)
            .filter(|&i| !self.ports[i as usize].closed)
            .collect();
        if let Some(n) = self.set.nb_ports {
            v.truncate(n as usize);
        }
        v
    }

    pub(crate) fn fwd_lcore_ids(&self) -> Vec<u32> {
        let mut w = self.eal.worker_lcores();
        if let Some(mask) = self.set.coremask {
            w.retain(|&id| id < 64 && mask & (1u64 << id) != 0);
        }
        if w.is_empty() {
            vec![self.eal.main_lcore()]
        } else {
            w
        }
    }

    fn tx_port_of(&self, rxp: usize, nports: usize) -> usize {
        match self.set.topology {
            Topology::Paired => {
                if rxp & 1 == 0 {
                    if rxp + 1 < nports {
                        rxp + 1
                    } else {
                        rxp
                    }
                } else {
                    rxp - 1
                }
            }
            Topology::Chained => (rxp + 1) % nports,
            Topology::Loop => rxp,
        }
    }

    /// Computes the streams and their lcores as testpmd's fwd_config_setup does.
    pub fn plan(&self) -> FwdPlan {
        let ports = self.fwd_ports();
        let np = ports.len();
        let nb_lcores = (self.set.nb_cores as usize).min(self.fwd_lcore_ids().len()).max(1);
        let (rxq, txq) = (self.set.rxq, self.set.txq);
        let mut streams = Vec::new();
        let mut cores;
        if self.set.mode == FwdMode::IcmpEcho {
            for &p in &ports {
                for q in 0..rxq {
                    streams.push(StreamSpec { rx_port: p, rx_queue: q, tx_port: p, tx_queue: q.min(txq - 1) });
                }
            }
            cores = nb_lcores.min(txq as usize * np);
        } else if rxq > 1 && txq > 1 {
            let nq = rxq.min(txq);
            for q in 0..nq {
                for (i, &p) in ports.iter().enumerate() {
                    let t = ports[self.tx_port_of(i, np)];
                    streams.push(StreamSpec { rx_port: p, rx_queue: q, tx_port: t, tx_queue: q });
                }
            }
            cores = nb_lcores;
        } else {
            for (i, &p) in ports.iter().enumerate() {
                let t = ports[self.tx_port_of(i, np)];
                streams.push(StreamSpec { rx_port: p, rx_queue: 0, tx_port: t, tx_queue: 0 });
            }
            cores = nb_lcores.min(np);
        }
        cores = cores.min(streams.len()).max(1);
        let ids = self.fwd_lcore_ids();
        let ns = streams.len();
        let (per, extra) = if ns <= cores { (1, 0) } else { (ns / cores, ns % cores) };
        let mut lcores = Vec::new();
        let mut at = 0;
        for (c, &id) in ids.iter().enumerate().take(cores) {
            let n = if c < cores - extra { per } else { per + 1 };
            let n = n.min(ns - at);
            lcores.push((id, at, n));
            at += n;
        }
        FwdPlan { streams, lcores, ports }
    }

    /// `start` / `start tx_first N`.
    pub fn start(&mut self, tx_first: u32) -> CmdResult {
        if self.is_forwarding() {
            return Err("Packet forwarding already started".into());
        }
        let plan = self.plan();
        for &p in &plan.ports {
            if !self.ports[p as usize].dev.is_started() {
                return Err(format!("Port {p} is not started: run port start {p} (or port start all)"));
            }
        }
        let gen_len: usize = self.set.txpkts.iter().map(|&l| l as usize).sum();
        if (self.set.mode.generates() || tx_first > 0)
            && self.set.txpkts.len() == 1
            && gen_len > self.pool.data_room() as usize
        {
            return Err(format!("txpkts {gen_len} exceeds the mbuf data room {}", self.pool.data_room()));
        }
        let single = self.eal.worker_lcores().is_empty();
        if single && !self.warned_single_lcore {
            println!(
                "Warning: no worker lcore (the EAL has only lcore {}): forwarding runs on an unpinned thread without \
                 a mempool cache; give two lcores or more with -l for speed",
                self.eal.main_lcore()
            );
            self.warned_single_lcore = true;
        }
        self.show_config_fwd();
        if self.set.mode == FwdMode::FlowGen {
            for &p in &plan.ports {
                println!("  number of flows for port {p}: {}", self.set.flowgen_flows);
            }
        }
        self.show_config_rxtx();

        if self.set.flush_rx {
            self.flush_rx_queues(&plan.ports);
        }
        for &p in &plan.ports {
            let port = &mut self.ports[p as usize];
            port.fwd_base = port.dev.stats();
        }
        // Move the queues into streams, grouped by lcore.
        let mut recorder = None;
        if let Some((path, current)) = &mut self.record {
            let w = swports::pcap_file::PcapWriter::create(path.as_str())
                .map_err(|e| format!("set record: cannot create {path}: {e}"))?;
            let r: fwd::Recorder = Arc::new(std::sync::Mutex::new(w));
            println!("Recording the packets sent into {path}");
            *current = Some(r.clone());
            recorder = Some(r);
        }
        let gen = GenConfig {
            pool: self.pool.clone(),
            txpkts: self.set.txpkts.clone(),
            flowgen_flows: self.set.flowgen_flows,
            record: recorder,
            noisy: (self.set.mode == FwdMode::Noisy).then_some(self.set.noisy),
            multi_flow: self.set.txonly_multi_flow,
            burst_stats: self.set.record_burst_stats,
            core_cycles: self.set.record_core_cycles,
            txsplit_rand: self.set.txsplit == "rand",
            capture: self.eal.telemetry().is_some(),
            retry: (self.set.retry && !self.set.mode.generates()).then(|| {
                let (n, us) = self.set.retry_num_delay;
                (n, std::time::Duration::from_micros(us as u64))
            }),
        };
        let mut groups: Vec<(u32, Vec<Stream>)> = Vec::new();
        let mut failure = None;
        'outer: for &(lcore, first, n) in &plan.lcores {
            let mut v = Vec::with_capacity(n);
            for spec in &plan.streams[first..first + n] {
                let rx = self.ports[spec.rx_port as usize].rxq.get_mut(spec.rx_queue as usize).and_then(Option::take);
                let tx = self.ports[spec.tx_port as usize].txq.get_mut(spec.tx_queue as usize).and_then(Option::take);
                match (rx, tx) {
                    (Some(rx), Some(tx)) => {
                        let tx_mac = self.ports[spec.tx_port as usize].dev.mac_addr();
                        let mut st = Stream::new(*spec, rx, tx, tx_mac, self.peers[spec.tx_port as usize], &gen);
                        st.set_lcore(lcore);
                        v.push(st);
                    }
                    (rx, tx) => {
                        self.give_back_queues(spec, rx, tx);
                        failure = Some(format!(
                            "stream RX P={}/Q={} -> TX P={}/Q={}: queue not available (port config changed? run port \
                             stop all / port start all)",
                            spec.rx_port, spec.rx_queue, spec.tx_port, spec.tx_queue
                        ));
                        groups.push((lcore, v));
                        break 'outer;
                    }
                }
            }
            groups.push((lcore, v));
        }
        if let Some(e) = failure {
            for (_, v) in groups {
                self.return_streams(v);
            }
            return Err(e);
        }
        self.streams = groups.iter().flat_map(|(_, v)| v.iter().map(|s| (s.spec, s.counters.clone()))).collect();
        self.run_mode = self.set.mode;
        let stop = Arc::new(AtomicBool::new(false));
        if let (Some(t), true) = (self.eal.telemetry(), self.set.record_core_cycles) {
            let lcores = groups.iter().map(|(l, v)| (*l, v.iter().map(|s| s.counters.clone()).collect())).collect();
            t.register_lcore_usage(Some(crate::cycles::lcore_usage(lcores, stop.clone())));
        }
        let mode = self.set.mode;
        let burst = self.set.burst as usize;
        let mut workers = Vec::new();
        let mut launch_error = None;
        for (lcore, v) in groups {
            let st = stop.clone();
            if single {
                let h = std::thread::Builder::new()
                    .name("fwd".into())
                    .spawn(move || fwd::lcore_main(mode, v, burst, tx_first, st));
                match h {
                    Ok(h) => workers.push(Worker::Thread(h)),
                    Err(e) => {
                        launch_error = Some(format!("cannot start the forwarding thread: {e}"));
                        break;
                    }
                }
            } else {
                match self.eal.launch_with(lcore, v, move |v| fwd::lcore_main(mode, v, burst, tx_first, st)) {
                    Ok(t) => workers.push(Worker::Lcore(t)),
                    Err(e) => {
                        // The lcore never started: its streams come back with the error.
                        self.return_streams(e.work);
                        launch_error = Some(format!("cannot launch lcore {lcore}: {}", e.error));
                        break;
                    }
                }
            }
        }
        self.running = Some(Running { stop, workers });
        if let Some(e) = launch_error {
            self.stop_quiet();
            return Err(e);
        }
        Ok(())
    }

    /// Empties the RX queues of `ports` before forwarding, as dpdk-testpmd does unless `--no-flush-rx`: what
    /// waited in a ring since the last run is not forwarded. Bounded by twice the ring size per queue, so that a
    /// port that always has packets (null, pcap replay) does not hold the start up.
    fn flush_rx_queues(&mut self, ports: &[u16]) {
        let mut b = mempool::PacketBatch::with_capacity(crate::params::MAX_BURST as usize);
        for &p in ports {
            let port = &mut self.ports[p as usize];
            let limit = 2 * port.dev.config().rx_desc as usize;
            for q in port.rxq.iter_mut().flatten() {
                let mut flushed = 0;
                while flushed < limit {
                    let n = q.rx_burst(&mut b);
                    b.clear();
                    if n == 0 {
                        break;
                    }
                    flushed += n;
                }
            }
        }
    }

    fn give_back_queues(&mut self, spec: &StreamSpec, rx: Option<Box<dyn RxQueue>>, tx: Option<Box<dyn TxQueue>>) {
        if let Some(rx) = rx {
            if let Some(slot) = self.ports[spec.rx_port as usize].rxq.get_mut(spec.rx_queue as usize) {
                *slot = Some(rx);
            }
        }
        if let Some(tx) = tx {
            if let Some(slot) = self.ports[spec.tx_port as usize].txq.get_mut(spec.tx_queue as usize) {
                *slot = Some(tx);
            }
        }
    }

    fn return_streams(&mut self, v: Vec<Stream>) {
        for s in v {
            let (spec, rx, tx) = s.into_queues();
            self.give_back_queues(&spec, Some(rx), Some(tx));
        }
    }

    /// Stops the lcores and takes the queues back; returns false when nothing ran.
    fn stop_quiet(&mut self) -> bool {
        let Some(run) = self.running.take() else { return false };
        run.stop.store(true, Ordering::SeqCst);
        for w in run.workers {
            let r = match w {
                Worker::Lcore(t) => t.join().map_err(|e| e.to_string()),
                Worker::Thread(h) => h.join().map_err(|_| "the forwarding thread panicked".to_string()),
            };
            match r {
                Ok(v) => self.return_streams(v),
                Err(e) => println!("Error: {e}; its queues are lost until the ports restart"),
            }
        }
        true
    }

    /// `stop`.
    pub fn stop(&mut self) -> CmdResult {
        if !self.is_forwarding() {
            return Err("Packet forwarding not started".into());
        }
        print!("Telling cores to stop...");
        println!("\nWaiting for lcores to finish...");
        self.stop_quiet();
        self.finish_record();
        self.show_fwd_stats();
        println!("\nDone.");
        Ok(())
    }

    fn finish_record(&mut self) {
        let Some((path, current)) = &mut self.record else { return };
        let Some(r) = current.take() else { return };
        let mut w = r.lock().unwrap_or_else(|e| e.into_inner());
        match w.flush() {
            Ok(()) => println!("Recorded {} packets into {path}", w.records_written()),
            Err(e) => println!("Error: recording into {path}: {e}"),
        }
    }
}
