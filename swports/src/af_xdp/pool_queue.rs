//! The queues of an `umem=pool` port: frames are the pool's mbufs themselves (see [`super::pool_umem`]).

use std::ptr::NonNull;
use std::sync::Arc;

use mempool::{MbufHeader, PacketBatch};

use pktio::stats::{RxQueueStats, TxQueueStats};
use pktio::{RxQueue, TxQueue};

use super::pool_umem::PoolUmem;
use super::xsk::{Consumer, Producer, Xsk};

/// Descriptors located ahead of building their mbufs.
const RX_STEP: usize = 32;
/// Completions freed per pool call.
const FREE_STEP: usize = 64;

/// RX side of an `umem=pool` port: RX descriptors become the mbufs the kernel wrote into, and fresh buffers top
/// the fill ring up again.
#[derive(Debug)]
pub struct AfXdpPoolRxQueue {
    sock: Arc<Xsk>,
    rx: Consumer,
    fill: Producer,
    stats: Arc<RxQueueStats>,
    port_id: u16,
}

impl AfXdpPoolRxQueue {
    pub(super) fn new(sock: Arc<Xsk>, stats: Arc<RxQueueStats>, port_id: u16) -> Self {
        let (rx, fill) = (Consumer::attach(&sock.rx), Producer::attach(&sock.fill));
        AfXdpPoolRxQueue { sock, rx, fill, stats, port_id }
    }
}

impl RxQueue for AfXdpPoolRxQueue {
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let Some(umem) = self.sock.pool_umem() else { return 0 };
        let room = (batch.capacity() - batch.len()) as u32;
        let ready = self.rx.peek(&self.sock.rx, room);
        let (mut n, mut bytes, mut errors) = (0usize, 0u64, 0u64);
        // Two passes per step: locate the buffers first (starting the loads of their headers), then build the mbufs.
        let mut found = [None; RX_STEP];
        for first in (0..ready).step_by(RX_STEP) {
            let step = (ready - first).min(RX_STEP as u32);
            for (i, slot) in (first..first + step).zip(found.iter_mut()) {
                let desc = self.rx.desc(&self.sock.rx, i);
                *slot = umem.element(desc.addr).map(|at| (at, desc.len));
            }
            for slot in &found[..step as usize] {
                match slot.and_then(|(at, len)| umem.take_rx(at, len).map(|m| (m, len))) {
                    Some((mut m, len)) => {
                        m.set_port(self.port_id);
                        bytes += u64::from(len);
                        let _ = batch.push(m);
                        n += 1;
                    }
                    None => errors += 1,
                }
            }
        }
        if ready > 0 {
            self.rx.release(&self.sock.rx, ready);
        }
        // The kernel keeps its buffers: a dry pool only shrinks what it can receive into until buffers come back.
        let short = umem.refill(&self.sock.fill, &mut self.fill);
        if short > 0 {
            self.stats.nombuf.add(u64::from(short));
        }
        super::end_rx_burst(&self.sock, &self.stats, n, bytes, errors);
        n
    }

    fn wait_fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.sock.raw_fd())
    }
}

/// TX side of an `umem=pool` port: mbufs of the registered pool are posted as they are and freed when the
/// completion ring gives them back; others are copied into one of that pool first.
#[derive(Debug)]
pub struct AfXdpPoolTxQueue {
    sock: Arc<Xsk>,
    tx: Producer,
    comp: Consumer,
    stats: Arc<TxQueueStats>,
}

impl AfXdpPoolTxQueue {
    pub(super) fn new(sock: Arc<Xsk>, stats: Arc<TxQueueStats>) -> Self {
        let (tx, comp) = (Producer::attach(&sock.tx), Consumer::attach(&sock.comp));
        AfXdpPoolTxQueue { sock, tx, comp, stats }
    }

    /// Frees every completed mbuf, in bulk.
    #[inline(always)]
    fn reap(&mut self, umem: &PoolUmem) {
        let done = self.comp.peek(&self.sock.comp, u32::MAX);
        let mut free = [NonNull::<MbufHeader>::dangling(); FREE_STEP];
        let mut k = 0;
        for i in 0..done {
            // An address that is not one sent (never expected) is skipped rather than freed twice.
            if let Some(hdr) = umem.take_tx(self.comp.addr(&self.sock.comp, i)) {
                free[k] = hdr;
                k += 1;
                if k == FREE_STEP {
                    // SAFETY: each is an owned, sent mbuf the kernel has completed; listed once (taken from `held`).
                    unsafe { mempool::free_raw_bulk(&free) };
                    k = 0;
                }
            }
        }
        // SAFETY: as above.
        unsafe { mempool::free_raw_bulk(&free[..k]) };
        if done > 0 {
            self.comp.release(&self.sock.comp, done);
        }
    }
}

impl TxQueue for AfXdpPoolTxQueue {
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let sock = self.sock.clone();
        let Some(umem) = sock.pool_umem() else { return 0 };
        self.reap(umem);
        let take = (batch.len() as u32).min(self.tx.free(&sock.tx, batch.len() as u32));
        let max_len = umem.chunk();
        let (mut queued, mut bytes, mut errors) = (0u32, 0u64, 0u64);
        let tx = &self.tx;
        batch.drain_front(take as usize, |m| {
            let len = m.pkt_len();
            if !(14..=max_len).contains(&len) {
                errors += 1;
                return;
            }
            let m = if umem.owns(&m) {
                m
            } else {
                // Another pool's mbuf, or a chain: one buffer of ours with its bytes (dropped if the pool is dry).
                let Some(mut c) = umem.pool().alloc() else {
                    errors += 1;
                    return;
                };
                match c.append(len as u16) {
                    Some(out) => {
                        m.copy_to(out);
                    }
                    None => {
                        errors += 1;
                        return;
                    }
                }
                c
            };
            let addr = umem.give_tx(m);
            tx.put_desc(&sock.tx, queued, libc::xdp_desc { addr, len, options: 0 });
            queued += 1;
            bytes += u64::from(len);
        });
        if queued > 0 {
            self.tx.submit(&sock.tx, queued);
            // Copy mode always needs the system call to send; zero-copy only when the kernel asks.
            if !sock.zerocopy || sock.tx.needs_wakeup() {
                sock.wake_tx();
            }
        }
        self.stats.packets.add(u64::from(queued));
        self.stats.bytes.add(bytes);
        if errors > 0 {
            self.stats.errors.add(errors);
        }
        take as usize
    }
}

impl Drop for AfXdpPoolTxQueue {
    fn drop(&mut self) {
        self.sock.wake_tx();
    }
}
