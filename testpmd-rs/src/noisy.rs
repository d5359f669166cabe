//! The `noisy` forwarding mode's state (dpdk-testpmd's noisy_vnf): a software TX FIFO per stream that holds
//! packets until it is nearly full or a flush time passes, and a block of memory that every packet reads and writes
//! at random places, to look like a virtual network function with a working set. With every setting at 0 the
//! mode forwards as `io` does.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use mempool::{Mbuf, PacketBatch};

use crate::params::NoisyParams;

/// One stream's FIFO and lookup memory. Everything is allocated when forwarding starts, nothing per packet.
pub struct NoisyState {
    fifo: VecDeque<Mbuf>,
    fifo_size: usize,
    flush_after: Option<Duration>,
    last_flush: Instant,
    mem: Box<[u64]>,
    rng: u64,
    reads: u32,
    writes: u32,
    reads_writes: u32,
}

impl NoisyState {
    /// The state for `p`; `seed` varies the lookup pattern between streams.
    pub fn new(p: &NoisyParams, seed: u64) -> NoisyState {
        let words = p.lkup_memory_mb as usize * (1 << 20) / 8;
        NoisyState {
            fifo: VecDeque::with_capacity(p.tx_sw_buffer_size as usize),
            fifo_size: p.tx_sw_buffer_size as usize,
            flush_after: (p.tx_sw_buffer_flushtime_ms > 0)
                .then(|| Duration::from_millis(p.tx_sw_buffer_flushtime_ms as u64)),
            last_flush: Instant::now(),
            mem: vec![0u64; words].into_boxed_slice(),
            rng: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
            reads: p.lkup_num_reads,
            writes: p.lkup_num_writes,
            reads_writes: p.lkup_num_reads_writes,
        }
    }

    /// True when packets are held in the FIFO rather than sent at once.
    pub fn buffering(&self) -> bool {
        self.fifo_size > 0
    }

    fn next(&mut self) -> usize {
        // xorshift64: cheap, and the pattern only has to defeat the caches, not be unpredictable.
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        (x % self.mem.len() as u64) as usize
    }

    /// The memory work of `n` packets.
    pub fn touch_memory(&mut self, n: usize) {
        if self.mem.is_empty() {
            return;
        }
        let mut sum = 0u64;
        for _ in 0..n {
            for _ in 0..self.writes {
                let i = self.next();
                self.mem[i] = i as u64;
            }
            for _ in 0..self.reads {
                let i = self.next();
                sum = sum.wrapping_add(self.mem[i]);
            }
            for _ in 0..self.reads_writes {
                let i = self.next();
                self.mem[i] = self.mem[i].wrapping_add(1);
            }
        }
        std::hint::black_box(sum);
    }

    /// Moves the received packets into the FIFO; what does not fit stays in `b` (the caller drops it).
    pub fn enqueue(&mut self, b: &mut PacketBatch) {
        let room = self.fifo_size - self.fifo.len();
        let fifo = &mut self.fifo;
        b.drain_front(room, |m| fifo.push_back(m));
    }

    /// Fills `out` (empty, of burst capacity) with what should leave now: a burst when the FIFO has less than a
    /// burst of room left, everything (a burst at a time) once the flush time has passed since the last flush.
    /// Returns true when the caller should call again (more is due).
    pub fn due(&mut self, out: &mut PacketBatch, now: Instant) -> bool {
        let burst = out.capacity();
        let full = self.fifo_size - self.fifo.len() < burst;
        let timed = self.flush_after.is_some_and(|t| now.duration_since(self.last_flush) >= t);
        if !(full || timed) || self.fifo.is_empty() {
            if timed {
                self.last_flush = now;
            }
            return false;
        }
        while !out.is_full() {
            let Some(m) = self.fifo.pop_front() else { break };
            let _ = out.push(m);
        }
        if self.fifo.is_empty() {
            self.last_flush = now;
        }
        timed && !self.fifo.is_empty()
    }

    /// Packets still held.
    pub fn held(&self) -> usize {
        self.fifo.len()
    }

    /// Takes up to a burst of the held packets into `out` (to send them when forwarding stops).
    pub fn drain_into(&mut self, out: &mut PacketBatch) {
        while !out.is_full() {
            let Some(m) = self.fifo.pop_front() else { break };
            let _ = out.push(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_stay_inside_the_memory() {
        let p = NoisyParams {
            lkup_memory_mb: 1,
            lkup_num_writes: 3,
            lkup_num_reads: 3,
            lkup_num_reads_writes: 3,
            ..Default::default()
        };
        let mut s = NoisyState::new(&p, 7);
        s.touch_memory(1000);
        let touched = s.mem.iter().filter(|&&w| w != 0).count();
        // 6000 writes over 131072 words: most land on distinct words.
        assert!(touched > 4000, "{touched}");
        assert!(!s.buffering());
    }
}
