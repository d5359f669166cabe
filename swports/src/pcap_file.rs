//! Classic libpcap capture files (the `.pcap` format tcpdump and Wireshark read and write), without libpcap.
//!
//! [`PcapReader`] reads both byte orders and both the microsecond (`a1b2c3d4`) and nanosecond (`a1b23c4d`) magic;
//! [`PcapWriter`] writes little-endian, microsecond files with link type Ethernet, which every tool reads.
//! Not supported: pcapng, link types other than Ethernet (the reader reports the link type and lets the caller
//! decide), modified ("Kuznetzov") pcap.
//!
//! ```no_run
//! use swports::pcap_file::{PcapReader, PcapWriter};
//! let mut reader = PcapReader::open("in.pcap")?;
//! let mut writer = PcapWriter::create("out.pcap")?;
//! let mut buf = Vec::new();
//! while let Some(rec) = reader.next_into(&mut buf)? {
//!     writer.write_packet(rec.timestamp_ns, &buf)?;
//! }
//! writer.flush()?;
//! # Ok::<(), swports::pcap_file::PcapError>(())
//! ```

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Magic of a microsecond-resolution file, as read in the writer's byte order.
pub const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
/// Magic of a nanosecond-resolution file.
pub const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// Link type of Ethernet frames (LINKTYPE_ETHERNET).
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Snapshot length the writer puts in its header (libpcap's MAXIMUM_SNAPLEN).
pub const DEFAULT_SNAPLEN: u32 = 262_144;
/// Largest record the reader accepts; anything larger means a corrupt file.
pub const MAX_RECORD: u32 = 262_144;
/// Size of the file header.
pub const FILE_HEADER_LEN: usize = 24;
/// Size of a record header.
pub const RECORD_HEADER_LEN: usize = 16;

/// What went wrong with a capture file.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// The file could not be opened, read or written.
    #[error("pcap file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The first four bytes are not a pcap magic number.
    #[error("pcap file {path}: magic {magic:#010x} is not a classic pcap file (pcapng is not supported; convert with `editcap -F pcap`)")]
    BadMagic {
        /// The file.
        path: PathBuf,
        /// The magic found.
        magic: u32,
    },
    /// The file ends inside its header or a record header.
    #[error("pcap file {path}: truncated {what}")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// File header, record header or record data.
        what: &'static str,
    },
    /// A record claims an impossible length.
    #[error("pcap file {path}: record {index} claims {len} bytes (at most {MAX_RECORD}); the file is corrupt")]
    BadRecord {
        /// The file.
        path: PathBuf,
        /// Record number, from 0.
        index: u64,
        /// Length claimed.
        len: u32,
    },
}

impl PcapError {
    fn io(path: &Path, source: io::Error) -> Self {
        PcapError::Io { path: path.to_path_buf(), source }
    }
}

/// The file header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// Timestamps carry nanoseconds (else microseconds).
    pub nanos: bool,
    /// The file is big-endian (else little-endian).
    pub big_endian: bool,
    /// Major version (2).
    pub version_major: u16,
    /// Minor version (4).
    pub version_minor: u16,
    /// Snapshot length.
    pub snaplen: u32,
    /// Link type ([`LINKTYPE_ETHERNET`] for Ethernet).
    pub linktype: u32,
}

/// One record's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// Capture time in nanoseconds since the Unix epoch.
    pub timestamp_ns: u64,
    /// Bytes stored in the file.
    pub caplen: u32,
    /// Bytes the packet had on the wire (more than `caplen` when the capture truncated it).
    pub orig_len: u32,
}

/// A record with its data, as [`read_all`] returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapRecord {
    /// The record header.
    pub header: RecordHeader,
    /// The bytes stored.
    pub data: Vec<u8>,
}

/// Reads records from a classic pcap stream.
#[derive(Debug)]
pub struct PcapReader<R> {
    inner: R,
    path: PathBuf,
    header: FileHeader,
    index: u64,
    failed: bool,
}

impl PcapReader<BufReader<File>> {
    /// Opens a capture file and reads its header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, PcapError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| PcapError::io(path, e))?;
        PcapReader::with_path(BufReader::with_capacity(1 << 16, file), path)
    }
}

impl<R: Read> PcapReader<R> {
    /// Reads the header from `inner`.
    pub fn new(inner: R) -> Result<Self, PcapError> {
        PcapReader::with_path(inner, Path::new("<stream>"))
    }

    fn with_path(mut inner: R, path: &Path) -> Result<Self, PcapError> {
        let mut h = [0u8; FILE_HEADER_LEN];
        if read_full(&mut inner, &mut h).map_err(|e| PcapError::io(path, e))? < h.len() {
            return Err(PcapError::Truncated { path: path.to_path_buf(), what: "file header" });
        }
        let le = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let (nanos, big_endian) = match le {
            MAGIC_MICROS => (false, false),
            MAGIC_NANOS => (true, false),
            m if m.swap_bytes() == MAGIC_MICROS => (false, true),
            m if m.swap_bytes() == MAGIC_NANOS => (true, true),
            magic => return Err(PcapError::BadMagic { path: path.to_path_buf(), magic }),
        };
        let u16at = |o: usize| {
            let b = [h[o], h[o + 1]];
            if big_endian {
                u16::from_be_bytes(b)
            } else {
                u16::from_le_bytes(b)
            }
        };
        let u32at = |o: usize| {
            let b = [h[o], h[o + 1], h[o + 2], h[o + 3]];
            if big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let header = FileHeader {
            nanos,
            big_endian,
            version_major: u16at(4),
            version_minor: u16at(6),
            snaplen: u32at(16),
            // The upper bits may carry an FCS length (LINKTYPE with flags); the type is the low 16 bits.
            linktype: u32at(20) & 0xffff,
        };
        Ok(PcapReader { inner, path: path.to_path_buf(), header, index: 0, failed: false })
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// The path given to [`PcapReader::open`] (`<stream>` otherwise).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the next record into `buf` (replacing its contents). `Ok(None)` at a clean end of file; a record cut
    /// short by the end of the file is an error.
    pub fn next_into(&mut self, buf: &mut Vec<u8>) -> Result<Option<RecordHeader>, PcapError> {
        let mut h = [0u8; RECORD_HEADER_LEN];
        match read_full(&mut self.inner, &mut h).map_err(|e| PcapError::io(&self.path, e))? {
            0 => return Ok(None),
            RECORD_HEADER_LEN => {}
            _ => return Err(PcapError::Truncated { path: self.path.clone(), what: "record header" }),
        }
        let u32at = |o: usize| {
            let b = [h[o], h[o + 1], h[o + 2], h[o + 3]];
            if self.header.big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let (sec, frac, caplen, orig_len) = (u32at(0), u32at(4), u32at(8), u32at(12));
        if caplen > MAX_RECORD {
            return Err(PcapError::BadRecord { path: self.path.clone(), index: self.index, len: caplen });
        }
        let frac_ns = if self.header.nanos { frac as u64 } else { frac as u64 * 1000 };
        buf.clear();
        buf.resize(caplen as usize, 0);
        if read_full(&mut self.inner, buf).map_err(|e| PcapError::io(&self.path, e))? < caplen as usize {
            return Err(PcapError::Truncated { path: self.path.clone(), what: "record data" });
        }
        self.index += 1;
        Ok(Some(RecordHeader { timestamp_ns: sec as u64 * 1_000_000_000 + frac_ns, caplen, orig_len }))
    }

    /// Records read so far.
    pub fn records_read(&self) -> u64 {
        self.index
    }
}

impl<R: Read + Seek> PcapReader<R> {
    /// Goes back to the first record.
    pub fn rewind(&mut self) -> Result<(), PcapError> {
        self.inner.seek(SeekFrom::Start(FILE_HEADER_LEN as u64)).map_err(|e| PcapError::io(&self.path, e))?;
        self.index = 0;
        self.failed = false;
        Ok(())
    }
}

impl<R: Read> Iterator for PcapReader<R> {
    type Item = Result<PcapRecord, PcapError>;

    /// The next record; after an error the iterator ends.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let mut data = Vec::new();
        match self.next_into(&mut data) {
            Ok(Some(header)) => Some(Ok(PcapRecord { header, data })),
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Every record of a capture file (for tests and tools; it holds the whole file in memory).
pub fn read_all(path: impl AsRef<Path>) -> Result<Vec<PcapRecord>, PcapError> {
    PcapReader::open(path)?.collect()
}

/// Nanoseconds since the Unix epoch now.
pub fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// Writes a classic pcap stream: little-endian, microsecond timestamps, Ethernet link type.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    inner: W,
    path: PathBuf,
    records: u64,
}

impl PcapWriter<BufWriter<File>> {
    /// Creates (or truncates) `path` and writes the file header.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, PcapError> {
        let path = path.as_ref();
        let file = File::create(path).map_err(|e| PcapError::io(path, e))?;
        PcapWriter::with_path(BufWriter::with_capacity(1 << 16, file), path)
    }
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header to `inner`.
    pub fn new(inner: W) -> Result<Self, PcapError> {
        PcapWriter::with_path(inner, Path::new("<stream>"))
    }

    fn with_path(mut inner: W, path: &Path) -> Result<Self, PcapError> {
        let mut h = [0u8; FILE_HEADER_LEN];
        h[0..4].copy_from_slice(&MAGIC_MICROS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs stay 0.
        h[16..20].copy_from_slice(&DEFAULT_SNAPLEN.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        inner.write_all(&h).map_err(|e| PcapError::io(path, e))?;
        Ok(PcapWriter { inner, path: path.to_path_buf(), records: 0 })
    }

    /// Writes one packet of `len` bytes given as its pieces (the segments of a chain), stamped `timestamp_ns`
    /// (nanoseconds since the Unix epoch; written with microsecond resolution). The record holds exactly `len`
    /// bytes whatever the pieces add up to (extra bytes are cut, missing ones written as zeros), so the file stays
    /// well-formed.
    pub fn write_segments<'a>(
        &mut self,
        timestamp_ns: u64,
        len: u32,
        segments: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<(), PcapError> {
        let mut h = [0u8; RECORD_HEADER_LEN];
        h[0..4].copy_from_slice(&((timestamp_ns / 1_000_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((timestamp_ns % 1_000_000_000 / 1000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&len.to_le_bytes());
        h[12..16].copy_from_slice(&len.to_le_bytes());
        let path = &self.path;
        self.inner.write_all(&h).map_err(|e| PcapError::io(path, e))?;
        let mut left = len as usize;
        for seg in segments {
            let n = seg.len().min(left);
            self.inner.write_all(&seg[..n]).map_err(|e| PcapError::io(path, e))?;
            left -= n;
        }
        while left > 0 {
            let n = left.min(64);
            self.inner.write_all(&[0u8; 64][..n]).map_err(|e| PcapError::io(path, e))?;
            left -= n;
        }
        self.records += 1;
        Ok(())
    }

    /// Writes one packet.
    pub fn write_packet(&mut self, timestamp_ns: u64, data: &[u8]) -> Result<(), PcapError> {
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        self.write_segments(timestamp_ns, len, [data])
    }

    /// Pushes buffered records to the file.
    pub fn flush(&mut self) -> Result<(), PcapError> {
        self.inner.flush().map_err(|e| PcapError::io(&self.path, e))
    }

    /// Records written so far.
    pub fn records_written(&self) -> u64 {
        self.records
    }

    /// The path given to [`PcapWriter::create`] (`<stream>` otherwise).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> Result<W, PcapError> {
        self.flush()?;
        Ok(self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(be: bool, nanos: bool) -> Vec<u8> {
        let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut f = Vec::new();
        f.extend(w32(if nanos { MAGIC_NANOS } else { MAGIC_MICROS }));
        f.extend(w16(2));
        f.extend(w16(4));
        f.extend([0; 8]);
        f.extend(w32(65535));
        f.extend(w32(1));
        for (i, len) in [60u32, 1514].into_iter().enumerate() {
            f.extend(w32(100 + i as u32));
            f.extend(w32(7));
            f.extend(w32(len));
            f.extend(w32(len));
            f.extend((0..len).map(|b| b as u8));
        }
        f
    }

    #[test]
    fn reads_all_four_magics() {
        for be in [false, true] {
            for nanos in [false, true] {
                let bytes = sample(be, nanos);
                let mut r = PcapReader::new(&bytes[..]).unwrap();
                assert_eq!(r.header().nanos, nanos);
                assert_eq!(r.header().linktype, LINKTYPE_ETHERNET);
                let recs: Vec<_> = r.by_ref().collect::<Result<_, _>>().unwrap();
                assert_eq!(recs.len(), 2);
                assert_eq!(recs[1].data.len(), 1514);
                assert_eq!(recs[1].data[300], 44);
                let frac = if nanos { 7 } else { 7000 };
                assert_eq!(recs[0].header.timestamp_ns, 100 * 1_000_000_000 + frac);
            }
        }
    }

    #[test]
    fn writer_round_trips() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_packet(1_500_000_123_456_789, &[1, 2, 3]).unwrap();
        w.write_segments(5, 3, [&[4u8, 5][..], &[6][..]]).unwrap();
        w.write_segments(6, 2, [&[7u8][..]]).unwrap();
        let bytes = w.into_inner().unwrap();
        let recs: Vec<_> = PcapReader::new(&bytes[..]).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(recs[0].data, [1, 2, 3]);
        assert_eq!(recs[0].header.timestamp_ns, 1_500_000_123_456_000);
        assert_eq!(recs[1].data, [4, 5, 6]);
        assert_eq!(recs[2].data, [7, 0]);
    }

    #[test]
    fn rejects_garbage() {
        assert!(matches!(PcapReader::new(&[0u8; 24][..]), Err(PcapError::BadMagic { .. })));
        assert!(matches!(PcapReader::new(&[0u8; 3][..]), Err(PcapError::Truncated { .. })));
        let mut f = sample(false, false);
        f.truncate(f.len() - 10);
        let res: Result<Vec<_>, _> = PcapReader::new(&f[..]).unwrap().collect();
        assert!(res.is_err());
        let mut f = sample(false, false);
        f[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
        let res: Result<Vec<_>, _> = PcapReader::new(&f[..]).unwrap().collect();
        assert!(matches!(res, Err(PcapError::BadRecord { .. })));
    }
}
