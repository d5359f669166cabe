//! `show rxq info PORT QUEUE` and `show txq info PORT QUEUE`: one queue's setup and burst mode in dpdk-testpmd
//! 22.11's layout (its `rx_queue_infos_display`/`tx_queue_infos_display`), and its failures as that version
//! prints them: the ethdev log line, then "Failed to retrieve information ..." with the errno.

use std::fmt::Write;

use pktio::{Error, EthDev, QueueBurstMode};

use crate::app::{App, CmdResult};

const BORDER: &str = "*********************";

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// dpdk-testpmd's "Burst mode" line, absent when the port cannot tell (as when `rte_eth_*_burst_mode_get` fails).
fn burst_line(out: &mut String, mode: pktio::Result<QueueBurstMode>) {
    if let Ok(m) = mode {
        let _ = write!(out, "\nBurst mode: {}{}", m.name, if m.per_queue { " (per queue)" } else { "" });
    }
}

/// What `rte_eth_rx_queue_info_get`/`tx` would have failed with, printed as dpdk-testpmd 22.11 prints it.
fn failure(port_id: u16, rx: bool, queue: u16, e: Option<&Error>) -> String {
    let (kind, ethdev_kind) = if rx { ("RX", "Rx") } else { ("TX", "Tx") };
    let (log, desc) = match e {
        None => (Some(format!("Invalid port_id={port_id}")), "No such device(-19)".to_string()),
        Some(Error::InvalidQueue { .. }) => {
            (Some(format!("Invalid {ethdev_kind} queue_id={queue}")), "Invalid argument(-22)".to_string())
        }
        Some(Error::NotConfigured { .. }) => (
            Some(format!("{ethdev_kind} queue {queue} of device with port_id={port_id} has not been setup")),
            "Invalid argument(-22)".to_string(),
        ),
        Some(Error::NotSupported { .. }) => (None, "Operation not supported(-95)".to_string()),
        // No errno of DPDK's says more than the error itself: EIO, then why.
        Some(e) => (None, format!("Input/output error(-5)\n  {e}")),
    };
    let mut out = log.map(|l| l + "\n").unwrap_or_default();
    let _ =
        write!(out, "Failed to retrieve information for port: {port_id}, {kind} queue: {queue}\nerror desc: {desc}");
    out
}

/// What `show rxq info` (`rx`) or `show txq info` prints for queue `queue` of port `port_id`, whose device is `dev`
/// (`None`: no such port, or a closed one). `Ok`: the block, from its leading blank line to its final newline;
/// `Err`: the failure lines.
pub fn queue_infos(port_id: u16, dev: Option<&dyn EthDev>, rx: bool, queue: u16) -> Result<String, String> {
    let Some(dev) = dev else { return Err(failure(port_id, rx, queue, None)) };
    let mut out = String::new();
    if rx {
        let q = dev.rx_queue_info(queue).map_err(|e| failure(port_id, rx, queue, Some(&e)))?;
        let _ = write!(out, "\n{BORDER} Infos for port {port_id:<2}, RX queue {queue:<2} {BORDER}");
        let _ = write!(out, "\nMempool: {}", q.pool.as_ref().map_or("NULL", |p| p.name.as_str()));
        let _ = write!(out, "\nRX prefetch threshold: {}", q.thresh.prefetch);
        let _ = write!(out, "\nRX host threshold: {}", q.thresh.host);
        let _ = write!(out, "\nRX writeback threshold: {}", q.thresh.writeback);
        let _ = write!(out, "\nRX free threshold: {}", q.free_thresh);
        let _ = write!(out, "\nRX drop packets: {}", on_off(q.drop_en));
        let _ = write!(out, "\nRX deferred start: {}", on_off(q.deferred_start));
        let _ = write!(out, "\nRX scattered packets: {}", on_off(q.scattered));
        let _ = write!(out, "\nRx queue state: {}", q.state.name());
        if q.buf_size != 0 {
            let _ = write!(out, "\nRX buffer size: {}", q.buf_size);
        }
        let _ = write!(out, "\nNumber of RXDs: {}", q.nb_desc);
        burst_line(&mut out, dev.rx_burst_mode(queue));
    } else {
        let q = dev.tx_queue_info(queue).map_err(|e| failure(port_id, rx, queue, Some(&e)))?;
        let _ = write!(out, "\n{BORDER} Infos for port {port_id:<2}, TX queue {queue:<2} {BORDER}");
        let _ = write!(out, "\nTX prefetch threshold: {}", q.thresh.prefetch);
        let _ = write!(out, "\nTX host threshold: {}", q.thresh.host);
        let _ = write!(out, "\nTX writeback threshold: {}", q.thresh.writeback);
        let _ = write!(out, "\nTX RS threshold: {}", q.rs_thresh);
        let _ = write!(out, "\nTX free threshold: {}", q.free_thresh);
        let _ = write!(out, "\nTX deferred start: {}", on_off(q.deferred_start));
        let _ = write!(out, "\nNumber of TXDs: {}", q.nb_desc);
        let _ = write!(out, "\nTx queue state: {}", q.state.name());
        burst_line(&mut out, dev.tx_burst_mode(queue));
    }
    out.push('\n');
    Ok(out)
}

impl App {
    /// `show rxq info PORT QUEUE` (`rx`) or `show txq info PORT QUEUE`. A closed port is no port, as in DPDK,
    /// where closing releases the port id.
    pub fn show_queue_info(&self, rx: bool, port_id: u16, queue: u16) -> CmdResult {
        let dev = self.ports.get(port_id as usize).filter(|p| !p.closed).map(|p| &*p.dev);
        print!("{}", queue_infos(port_id, dev, rx, queue)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pktio::{
        BurstMode, DevInfo, LinkStatus, MacAddr, Mempool, PortConfig, PortState, Result, RxQueue, RxQueueInfo, TxQueue,
    };

    /// A port whose driver reports per-queue burst modes (queue 1 runs another path than queue 0), or fails the
    /// getters as `fail` says.
    struct TestPort {
        state: PortState,
        fail: Option<fn(&PortState) -> Error>,
    }

    impl TestPort {
        fn new(fail: Option<fn(&PortState) -> Error>) -> TestPort {
            let info = DevInfo::software("net_test", "test0", 4);
            let config = PortConfig { rx_queues: 2, tx_queues: 2, rx_desc: 128, tx_desc: 64, ..Default::default() };
            let mut state = PortState::new(info, MacAddr::local_from(7), PortConfig::default());
            state.configure(&config).unwrap();
            state.started = true;
            TestPort { state, fail }
        }
    }

    impl EthDev for TestPort {
        fn state(&self) -> &PortState {
            &self.state
        }
        fn state_mut(&mut self) -> &mut PortState {
            &mut self.state
        }
        fn start(&mut self, pool: &Mempool) -> Result<()> {
            self.state.start_with_pool(pool)
        }
        fn stop(&mut self) -> Result<()> {
            self.state.stop()
        }
        fn rx_queue(&mut self, _queue: u16) -> Result<Box<dyn RxQueue>> {
            Err(self.state.unsupported("queues"))
        }
        fn tx_queue(&mut self, _queue: u16) -> Result<Box<dyn TxQueue>> {
            Err(self.state.unsupported("queues"))
        }
        fn link(&self) -> LinkStatus {
            self.state.virtual_link()
        }
        fn burst_mode(&self) -> BurstMode {
            BurstMode { rx: "Vector AVX2", tx: "Vector AVX2" }
        }
        fn rx_burst_mode(&self, queue: u16) -> Result<QueueBurstMode> {
            self.state.check_queue(true, queue)?;
            Ok(QueueBurstMode { name: ["Vector AVX2", "Scalar"][queue as usize], per_queue: true })
        }
        fn tx_burst_mode(&self, queue: u16) -> Result<QueueBurstMode> {
            self.state.check_queue(false, queue)?;
            match self.fail {
                Some(f) => Err(f(&self.state)),
                None => Ok(QueueBurstMode { name: "Scalar simple", per_queue: true }),
            }
        }
        fn rx_queue_info(&self, queue: u16) -> Result<RxQueueInfo> {
            let mut q = self.state.rx_queue_info(queue)?;
            if let Some(f) = self.fail {
                return Err(f(&self.state));
            }
            (q.thresh.prefetch, q.free_thresh, q.drop_en, q.buf_size) = (8, 32, true, 2048);
            Ok(q)
        }
    }

    #[test]
    fn a_port_that_reports_per_queue_burst_modes_gets_the_flag_on_each_queue() {
        let dev = TestPort::new(None);
        let rx1 = queue_infos(3, Some(&dev), true, 1).unwrap();
        let want = "\n********************* Infos for port 3 , RX queue 1  *********************\nMempool: NULL\nRX \
                    prefetch threshold: 8\nRX host threshold: 0\nRX writeback threshold: 0\nRX free threshold: 32\nRX \
                    drop packets: on\nRX deferred start: off\nRX scattered packets: off\nRx queue state: started\nRX \
                    buffer size: 2048\nNumber of RXDs: 128\nBurst mode: Scalar (per queue)\n";
        assert_eq!(rx1, want);
        let rx0 = queue_infos(3, Some(&dev), true, 0).unwrap();
        assert!(rx0.ends_with("\nBurst mode: Vector AVX2 (per queue)\n"), "{rx0}");
        let tx = queue_infos(3, Some(&dev), false, 1).unwrap();
        let want = "\n********************* Infos for port 3 , TX queue 1  *********************\nTX prefetch \
                    threshold: 0\nTX host threshold: 0\nTX writeback threshold: 0\nTX RS threshold: 0\nTX free \
                    threshold: 0\nTX deferred start: off\nNumber of TXDs: 64\nTx queue state: started\nBurst mode: \
                    Scalar simple (per queue)\n";
        assert_eq!(tx, want);
    }

    #[test]
    fn failures_are_printed_with_dpdks_log_line_and_errno() {
        let dev = TestPort::new(None);
        assert_eq!(
            queue_infos(12, None, true, 0).unwrap_err(),
            "Invalid port_id=12\nFailed to retrieve information for port: 12, RX queue: 0\nerror desc: No such \
             device(-19)"
        );
        assert_eq!(
            queue_infos(3, Some(&dev), false, 2).unwrap_err(),
            "Invalid Tx queue_id=2\nFailed to retrieve information for port: 3, TX queue: 2\nerror desc: Invalid \
             argument(-22)"
        );
        let unsupported = TestPort::new(Some(|s| s.unsupported("queue info")));
        assert_eq!(
            queue_infos(0, Some(&unsupported), true, 0).unwrap_err(),
            "Failed to retrieve information for port: 0, RX queue: 0\nerror desc: Operation not supported(-95)"
        );
        // A TX info that works but a burst mode the port cannot tell: no "Burst mode" line, as in DPDK.
        let tx = queue_infos(0, Some(&unsupported), false, 0).unwrap();
        assert!(tx.ends_with("\nTx queue state: started\n"), "{tx}");
        let not_set_up = TestPort::new(Some(|s| Error::NotConfigured { port: s.name().to_string() }));
        assert_eq!(
            queue_infos(1, Some(&not_set_up), true, 1).unwrap_err(),
            "Rx queue 1 of device with port_id=1 has not been setup\nFailed to retrieve information for port: 1, RX \
             queue: 1\nerror desc: Invalid argument(-22)"
        );
    }
}
