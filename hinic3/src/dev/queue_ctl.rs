//! Per-queue start and stop on a started port (docs/hw/hinic3.md §14.6, DPDK's `hinic3_dev_rx_queue_start/stop` and
//! `hinic3_dev_tx_queue_start/stop`). A queue's handle must have been dropped first: its ring is then back in the
//! port, which alone touches it while the queue is stopped.

use std::time::Instant;

use drvkit::bar::RegisterSpace;
use pktio::Result;

use super::queue::lock;
use super::{start, Hinic3};
use crate::cmdq::ucode;
use crate::ctx;
use crate::mgmt::{self, l2nic, module};

/// The RX queues running (started and not stopped one by one).
fn live_rx<R: RegisterSpace>(dev: &Hinic3<R>) -> usize {
    (0..dev.state.config.rx_queues as usize).filter(|&q| !dev.rx_stopped.get(q).copied().unwrap_or(false)).count()
}

/// The port's ring `q` must be back in its slot (the handle dropped: `PortState::release_*` checked it).
fn held<T>(slots: &[super::queue::Slot<T>], q: u16) -> bool {
    slots.get(q as usize).is_some_and(|s| lock(s).is_some())
}

/// RX stop: the last running queue turns the vport off; otherwise the queue leaves the RSS table. Then the RQ flush
/// (cmdq 10; NIC bit 25 HTN_FDIR is never negotiated) and every posted buffer taken back.
pub(super) fn rx_stop<R: RegisterSpace>(dev: &mut Hinic3<R>, q: u16) -> Result<()> {
    dev.state.release_rx(q)?;
    if dev.rx_stopped[q as usize] {
        return Ok(());
    }
    if !held(&dev.rx, q) {
        return Err(dev.state.invalid(format!("RX queue {q} has no ring to stop")));
    }
    let f = dev.func();
    dev.rx_stopped[q as usize] = true;
    if live_rx(dev) == 0 {
        let rqs = dev.state.config.rx_queues as u8;
        dev.call(module::L2NIC, l2nic::SET_VPORT_ENABLE, &mgmt::set_vport_enable(f, false, rqs).0, &[])?;
    } else if dev.rss_on {
        start::program_reta(dev)?;
    }
    dev.cmdq(ucode::SET_RQ_FLUSH, &ctx::rq_flush(q))?;
    let deadline = Instant::now() + dev.options.timing.drain;
    let back = lock(&dev.rx[q as usize]).as_mut().map(|r| r.reclaim_flushed(deadline)).unwrap_or(0);
    dev.rx_flushed += back;
    Ok(())
}

/// RX start: buffers posted again and the doorbell rung; the queue back in the RSS table; the first running queue
/// turns the vport on.
pub(super) fn rx_start<R: RegisterSpace>(dev: &mut Hinic3<R>, q: u16) -> Result<()> {
    check_started(dev, q, dev.state.config.rx_queues, "RX")?;
    if !dev.rx_stopped[q as usize] {
        return Ok(());
    }
    if let Some(r) = lock(&dev.rx[q as usize]).as_mut() {
        r.repost();
    }
    let was_live = live_rx(dev);
    dev.rx_stopped[q as usize] = false;
    if dev.rss_on {
        start::program_reta(dev)?;
    }
    if was_live == 0 {
        let f = dev.func();
        let rqs = dev.state.config.rx_queues as u8;
        dev.call(module::L2NIC, l2nic::SET_VPORT_ENABLE, &mgmt::set_vport_enable(f, true, rqs).0, &[])?;
    }
    Ok(())
}

/// TX stop: the hardware CI reaches the software PI (what was queued is sent), within the drain time.
pub(super) fn tx_stop<R: RegisterSpace>(dev: &mut Hinic3<R>, q: u16) -> Result<()> {
    dev.state.release_tx(q)?;
    if !held(&dev.tx, q) {
        return Err(dev.state.invalid(format!("TX queue {q} has no ring to stop")));
    }
    let deadline = Instant::now() + dev.options.timing.drain;
    let drained = {
        let t = lock(&dev.tx[q as usize]);
        let t = t.as_ref().expect("held");
        while t.hw_ci() != t.pi() && !t.hung() && Instant::now() < deadline {
            std::thread::yield_now();
        }
        t.hw_ci() == t.pi()
    };
    if !drained {
        return Err(dev.state.invalid(format!(
            "TX queue {q} did not drain within {:?} (hung SQ?); stop the port",
            dev.options.timing.drain
        )));
    }
    dev.tx_stopped[q as usize] = true;
    Ok(())
}

/// TX start: the queue may be claimed and used again.
pub(super) fn tx_start<R: RegisterSpace>(dev: &mut Hinic3<R>, q: u16) -> Result<()> {
    check_started(dev, q, dev.state.config.tx_queues, "TX")?;
    dev.tx_stopped[q as usize] = false;
    Ok(())
}

fn check_started<R: RegisterSpace>(dev: &Hinic3<R>, q: u16, count: u16, what: &str) -> Result<()> {
    if !dev.state.started {
        return Err(pktio::Error::NotStarted { port: dev.options.name.clone() });
    }
    if q >= count {
        return Err(dev.state.invalid(format!("{what} queue {q}: the port has {count}")));
    }
    Ok(())
}

/// The indirection table as programmed: entries naming a stopped queue go to the running ones in turn (DPDK
/// rebuilds its table from the started queues, `hinic3_refill_indir_rqid`); 0xFFFF (invalid) when none runs.
pub(super) fn effective_reta(reta: &[u16], stopped: &[bool]) -> [u16; 256] {
    let live: Vec<u16> = (0..stopped.len() as u16).filter(|&q| !stopped[q as usize]).collect();
    std::array::from_fn(|i| {
        let q = reta.get(i).copied().unwrap_or(0);
        match stopped.get(q as usize) {
            Some(true) if live.is_empty() => 0xFFFF,
            Some(true) => live[i % live.len()],
            _ => q,
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_stopped_queue_leaves_the_indirection_table() {
        let reta: Vec<u16> = (0..256).map(|i| i % 4).collect();
        let t = super::effective_reta(&reta, &[false, true, false, false]);
        assert!(t.iter().all(|&q| q != 1));
        assert_eq!((t[0], t[2], t[3]), (0, 2, 3), "running queues keep their entries");
        assert!(super::effective_reta(&reta, &[true; 4]).iter().all(|&q| q == 0xFFFF));
    }
}
