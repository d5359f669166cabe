//! `infinite_rx=1`: a capture loaded once into memory and replayed round and round by an RX queue of
//! [`crate::pcap`].
//!
//! The records are laid out for the copy: each starts on a [`CHUNK`]-byte boundary and is padded with zeros to the
//! next one, so a record is copied as whole chunks of a fixed size (no copy of a variable length, no read past the
//! buffer). When the pool's data room holds every record rounded up to chunks (the common case), a burst takes its
//! buffers in one bulk get and writes each header once, after its data ([`PacketBatch::alloc_rx_with`]). When it
//! holds every record but not rounded, records are copied at their exact length; records needing chains, and
//! bursts the pool cannot serve whole, go one by one.

use mempool::{Mempool, PacketBatch, RxFrame, RxRearm};

use crate::netif::mbuf_from_bytes;
use crate::pcap_file::PcapReader;

/// The copy unit: records are stored and copied in chunks of this many bytes (a 60-byte frame is one chunk).
pub(crate) const CHUNK: usize = 64;

/// [`ReplayRx::bulk`]'s copies: [`CopyMode::Chunks`] with every record one chunk, with records of several, and
/// [`CopyMode::Exact`].
const SINGLE_CHUNK: u8 = 0;
const CHUNKS: u8 = 1;
const EXACT: u8 = 2;

/// One record: where its chunks start, its length, its timestamp.
#[derive(Debug, Clone, Copy)]
struct Record {
    timestamp_ns: u64,
    /// Index of its first chunk.
    first: u32,
    len: u32,
}

impl Record {
    /// Chunks it takes (at least one, so that records of one chunk each are numbered as their chunks).
    fn chunks(self) -> usize {
        (self.len as usize).div_ceil(CHUNK).max(1)
    }
}

/// A capture held in memory: every record's bytes in chunks, back to back.
#[derive(Debug)]
pub(crate) struct Replay {
    chunks: Vec<[u8; CHUNK]>,
    records: Vec<Record>,
    /// The file ended in a corrupt or truncated record (counted as one ierror at the first wrap).
    pub(crate) corrupt_tail: bool,
    /// The longest record.
    max_len: usize,
}

impl Replay {
    /// Reads every record of `reader`; `None` when it holds none that can be read (nothing to loop over).
    pub(crate) fn load<R: std::io::Read>(mut reader: PcapReader<R>) -> Option<Replay> {
        let mut replay = Replay { chunks: Vec::new(), records: Vec::new(), corrupt_tail: false, max_len: 0 };
        let mut buf = Vec::with_capacity(2048);
        loop {
            match reader.next_into(&mut buf) {
                Ok(Some(h)) => replay.push(h.timestamp_ns, &buf),
                Ok(None) => break,
                Err(_) => {
                    replay.corrupt_tail = true;
                    break;
                }
            }
        }
        (!replay.records.is_empty()).then_some(replay)
    }

    fn push(&mut self, timestamp_ns: u64, data: &[u8]) {
        let rec = Record { timestamp_ns, first: self.chunks.len() as u32, len: data.len() as u32 };
        for _ in 0..rec.chunks() {
            self.chunks.push([0; CHUNK]);
        }
        self.chunks.as_flattened_mut()[rec.first as usize * CHUNK..][..data.len()].copy_from_slice(data);
        self.max_len = self.max_len.max(data.len());
        self.records.push(rec);
    }

    fn data(&self, rec: Record) -> &[u8] {
        &self.chunks.as_flattened()[rec.first as usize * CHUNK..][..rec.len as usize]
    }
}

/// True when a record of `len` bytes fits the buffers `pool` has in all (a chain of data-room-sized segments).
pub(crate) fn fits_pool(pool: &Mempool, len: usize) -> bool {
    len.div_ceil((pool.data_room() as usize).max(1)).max(1) <= pool.size() as usize
}

/// How a burst's records reach their buffers, decided once per queue from the pool's data room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CopyMode {
    /// The data room holds every record rounded up to chunks: bulk get, whole chunks, one header store.
    Chunks {
        /// Every record is one chunk (then record i is chunk i).
        single: bool,
    },
    /// The data room holds every record, not rounded: bulk get, exact copy.
    Exact,
    /// Some record needs a chain: one by one.
    OneByOne,
}

/// What a burst did, for the queue's counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BurstCount {
    pub(crate) packets: u64,
    pub(crate) bytes: u64,
    /// The replay went past the last record.
    pub(crate) wrapped: bool,
    /// The pool ran dry (the record that found no buffer is the next one delivered).
    pub(crate) nombuf: bool,
    /// Records the pool can never hold, skipped.
    pub(crate) skipped: u64,
}

/// An RX queue's replay: the capture, the record the next burst starts with, the pool and how to copy.
#[derive(Debug)]
pub(crate) struct ReplayRx {
    replay: Replay,
    next: usize,
    pool: Mempool,
    rearm: RxRearm,
    port_id: u16,
    copy: CopyMode,
}

impl ReplayRx {
    pub(crate) fn new(replay: Replay, pool: Mempool, port_id: u16) -> Self {
        let room = pool.data_room() as usize;
        let rounded = replay.records.iter().map(|r| r.chunks() * CHUNK).max().unwrap_or(0);
        let copy = if rounded <= room {
            CopyMode::Chunks { single: replay.chunks.len() == replay.records.len() }
        } else if replay.max_len <= room {
            CopyMode::Exact
        } else {
            CopyMode::OneByOne
        };
        let rearm = pool.rx_rearm(port_id);
        ReplayRx { replay, next: 0, pool, rearm, port_id, copy }
    }

    /// True when the capture ended in a corrupt record.
    pub(crate) fn corrupt_tail(&self) -> bool {
        self.replay.corrupt_tail
    }

    /// Fills `batch` with the next records, wrapping at the end of the capture.
    #[inline]
    pub(crate) fn burst(&mut self, batch: &mut PacketBatch) -> BurstCount {
        let mut count = BurstCount::default();
        match self.copy {
            CopyMode::Chunks { single: true } => self.bulk::<{ SINGLE_CHUNK }>(batch, &mut count),
            CopyMode::Chunks { single: false } => self.bulk::<{ CHUNKS }>(batch, &mut count),
            CopyMode::Exact => self.bulk::<{ EXACT }>(batch, &mut count),
            CopyMode::OneByOne => {}
        }
        if !batch.is_full() {
            self.one_by_one(batch, &mut count);
        }
        count
    }

    /// Moves `next` on by `n` records (the caller keeps it within the capture).
    #[inline(always)]
    fn advance(&mut self, n: usize, count: &mut BurstCount) {
        self.next += n;
        if self.next == self.replay.records.len() {
            self.next = 0;
            count.wrapped = true;
        }
    }

    /// Runs of records up to the end of the capture, each in one bulk get with each header written once after its
    /// data, until the batch is full or the pool cannot serve a run whole (the rest then go one by one). `HOW`
    /// ([`SINGLE_CHUNK`], [`CHUNKS`], [`EXACT`]) is the queue's [`CopyMode`], a constant so each copy is straight
    /// code.
    #[inline(always)]
    fn bulk<const HOW: u8>(&mut self, batch: &mut PacketBatch, count: &mut BurstCount) {
        while !batch.is_full() {
            let next = self.next;
            let run = batch.remaining().min(self.replay.records.len() - next);
            let replay = &self.replay;
            let records = &replay.records[next..next + run];
            let chunks = &replay.chunks;
            let mut bytes = 0u64;
            let mut frame = |rec: &Record| {
                bytes += rec.len as u64;
                RxFrame { len: rec.len as u16, timestamp: rec.timestamp_ns }
            };
            let ok = match HOW {
                // Record i is chunk i; the data room holds a chunk (every record's rounded length fits it).
                SINGLE_CHUNK => batch.alloc_rx_with(
                    &self.pool,
                    self.rearm,
                    records.iter().zip(&chunks[next..next + run]),
                    |(rec, chunk), room| {
                        room[..CHUNK].copy_from_slice(chunk);
                        frame(rec)
                    },
                ),
                CHUNKS => batch.alloc_rx_with(&self.pool, self.rearm, records.iter(), |rec, room| {
                    let src = &chunks[rec.first as usize..][..rec.chunks()];
                    for (to, from) in room.chunks_exact_mut(CHUNK).zip(src) {
                        to.copy_from_slice(from);
                    }
                    frame(rec)
                }),
                _ => batch.alloc_rx_with(&self.pool, self.rearm, records.iter(), |rec, room| {
                    // The data room holds every record, not rounded up to chunks: the exact length.
                    let data = replay.data(*rec);
                    room[..data.len()].copy_from_slice(data);
                    frame(rec)
                }),
            };
            if !ok {
                return;
            }
            count.packets += run as u64;
            count.bytes += bytes;
            self.advance(run, count);
        }
    }

    /// One by one: jumbo records (chained buffers), or a pool too low for a bulk get. A record the pool can never
    /// hold is skipped and counted (at most once round the capture per burst, should all be such).
    #[cold]
    fn one_by_one(&mut self, batch: &mut PacketBatch, count: &mut BurstCount) {
        let total = self.replay.records.len() as u64;
        let mut skipped = 0u64;
        while !batch.is_full() && skipped < total {
            let rec = self.replay.records[self.next];
            if !fits_pool(&self.pool, rec.len as usize) {
                skipped += 1;
                self.advance(1, count);
                continue;
            }
            let Some(mut m) = mbuf_from_bytes(&self.pool, self.replay.data(rec)) else {
                // The record stays next: it is delivered on a later burst.
                count.nombuf = true;
                break;
            };
            m.set_port(self.port_id);
            m.set_timestamp(rec.timestamp_ns);
            count.bytes += rec.len as u64;
            // Cannot fail: the batch is not full.
            let _ = batch.push(m);
            count.packets += 1;
            self.advance(1, count);
        }
        count.skipped += skipped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_start_on_chunks_and_are_zero_padded() {
        let mut r = Replay { chunks: Vec::new(), records: Vec::new(), corrupt_tail: false, max_len: 0 };
        let big: Vec<u8> = (0..130u32).map(|i| i as u8 | 1).collect();
        r.push(1, &[7; 60]);
        r.push(2, &big);
        r.push(3, &[]);
        r.push(4, &[9; 64]);
        let firsts: Vec<u32> = r.records.iter().map(|x| x.first).collect();
        assert_eq!(firsts, [0, 1, 4, 5]);
        assert_eq!(r.chunks.len(), 6);
        assert_eq!(r.data(r.records[1]), &big[..]);
        assert_eq!(r.data(r.records[2]), &[] as &[u8]);
        assert!(r.chunks[0][60..].iter().all(|&b| b == 0) && r.chunks[3][2..].iter().all(|&b| b == 0));
        assert_eq!(r.max_len, 130);
    }

    /// Each queue picks the copy its pool's data room allows (the replay test in tests/pcap_port.rs checks the
    /// bytes of each; this that each is the one taken).
    #[test]
    fn the_copy_mode_follows_the_data_room() {
        use hugepage::Allocator;
        use mempool::PoolConfig;
        let replay = |sizes: &[usize]| {
            let mut r = Replay { chunks: Vec::new(), records: Vec::new(), corrupt_tail: false, max_len: 0 };
            for (i, &len) in sizes.iter().enumerate() {
                r.push(i as u64, &vec![i as u8; len]);
            }
            r
        };
        let cases: [(&[usize], u16, CopyMode); 5] = [
            (&[60, 64, 1], 2048, CopyMode::Chunks { single: true }),
            (&[60, 65], 2048, CopyMode::Chunks { single: false }),
            (&[60, 64], 64, CopyMode::Chunks { single: true }),
            (&[60, 97, 100], 100, CopyMode::Exact),
            (&[60, 101], 100, CopyMode::OneByOne),
        ];
        for (k, (sizes, data_room, want)) in cases.into_iter().enumerate() {
            let pool = Mempool::new(
                &format!("replay-mode-{k}-{}", std::process::id()),
                &PoolConfig { size: 8, data_room, ..PoolConfig::default() },
                &Allocator::no_huge(),
            )
            .unwrap();
            assert_eq!(ReplayRx::new(replay(sizes), pool, 0).copy, want, "{sizes:?} in a data room of {data_room}");
        }
    }
}
