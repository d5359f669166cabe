//! pcapng, the blocks a live capture writes (section header, one interface description per port and direction,
//! enhanced packets with nanosecond timestamps, interface statistics with drop counts at the end) and a reader for
//! them, so tests can check what Wireshark and tcpdump will see.

use std::io::{self, Write};

/// Section Header Block type.
pub const SHB: u32 = 0x0A0D_0D0A;
/// Interface Description Block type.
pub const IDB: u32 = 1;
/// Enhanced Packet Block type.
pub const EPB: u32 = 6;
/// Interface Statistics Block type.
pub const ISB: u32 = 5;
/// The byte-order magic in a section header.
pub const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u16 = 1;

/// Option codes used here (the pcapng specification, draft-ietf-opsawg-pcapng: its options chapter).
mod opt {
    pub const END: u16 = 0;
    pub const COMMENT: u16 = 1;
    pub const SHB_USERAPPL: u16 = 4;
    pub const IF_NAME: u16 = 2;
    pub const IF_DESCRIPTION: u16 = 3;
    pub const IF_TSRESOL: u16 = 9;
    pub const ISB_STARTTIME: u16 = 2;
    pub const ISB_ENDTIME: u16 = 3;
    pub const ISB_IFRECV: u16 = 4;
    pub const ISB_IFDROP: u16 = 5;
}

fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// Options of one block, encoded as they go on disk (little-endian, each padded to 4 bytes, closed by opt_endofopt).
#[derive(Default)]
struct Options(Vec<u8>);

impl Options {
    fn add(&mut self, code: u16, value: &[u8]) -> &mut Self {
        self.0.extend_from_slice(&code.to_le_bytes());
        self.0.extend_from_slice(&(value.len() as u16).to_le_bytes());
        self.0.extend_from_slice(value);
        self.0.resize(pad4(self.0.len()), 0);
        self
    }

    fn finish(mut self) -> Vec<u8> {
        if !self.0.is_empty() {
            self.0.extend_from_slice(&opt::END.to_le_bytes());
            self.0.extend_from_slice(&0u16.to_le_bytes());
        }
        self.0
    }
}

/// Splits nanoseconds into the high and low 32-bit words an EPB or ISB carries (with if_tsresol = 9).
fn ts_words(ts_ns: u64) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
    b[4..].copy_from_slice(&(ts_ns as u32).to_le_bytes());
    b
}

/// Writes pcapng blocks to `W`.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    out: W,
    interfaces: u32,
}

impl<W: Write> PcapngWriter<W> {
    /// Starts a section, naming the writing application (`shb_userappl`).
    pub fn new(mut out: W, application: &str) -> io::Result<Self> {
        let mut body = Vec::new();
        body.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        // Section length unknown: it is written as it goes.
        body.extend_from_slice(&(-1i64).to_le_bytes());
        let mut o = Options::default();
        o.add(opt::SHB_USERAPPL, application.as_bytes());
        body.extend(o.finish());
        write_block(&mut out, SHB, &body)?;
        Ok(PcapngWriter { out, interfaces: 0 })
    }

    /// Describes the next interface (Ethernet, nanosecond timestamps); returns its id for [`PcapngWriter::packet`].
    pub fn interface(&mut self, name: &str, description: &str, snaplen: u32) -> io::Result<u32> {
        let mut body = Vec::new();
        body.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&snaplen.to_le_bytes());
        let mut o = Options::default();
        o.add(opt::IF_NAME, name.as_bytes())
            .add(opt::IF_DESCRIPTION, description.as_bytes())
            .add(opt::IF_TSRESOL, &[9]);
        body.extend(o.finish());
        write_block(&mut self.out, IDB, &body)?;
        self.interfaces += 1;
        Ok(self.interfaces - 1)
    }

    /// One packet seen on `interface` at `ts_ns` (ns since the epoch), `orig_len` bytes long on the wire, of which
    /// `data` was kept.
    pub fn packet(&mut self, interface: u32, ts_ns: u64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        let mut head = [0u8; 20];
        head[..4].copy_from_slice(&interface.to_le_bytes());
        head[4..12].copy_from_slice(&ts_words(ts_ns));
        head[12..16].copy_from_slice(&(data.len() as u32).to_le_bytes());
        head[16..20].copy_from_slice(&orig_len.to_le_bytes());
        let len = (12 + 20 + pad4(data.len())) as u32;
        self.out.write_all(&EPB.to_le_bytes())?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(&head)?;
        self.out.write_all(data)?;
        self.out.write_all(&[0u8; 3][..pad4(data.len()) - data.len()])?;
        self.out.write_all(&len.to_le_bytes())
    }

    /// The statistics of `interface` for the capture: packets it saw (`ifrecv`) and those it could not keep
    /// (`ifdrop`), between `start_ns` and `end_ns`.
    pub fn statistics(&mut self, interface: u32, start_ns: u64, end_ns: u64, recv: u64, drop: u64) -> io::Result<()> {
        let mut body = Vec::new();
        body.extend_from_slice(&interface.to_le_bytes());
        body.extend_from_slice(&ts_words(end_ns));
        let mut o = Options::default();
        o.add(opt::ISB_STARTTIME, &ts_words(start_ns))
            .add(opt::ISB_ENDTIME, &ts_words(end_ns))
            .add(opt::ISB_IFRECV, &recv.to_le_bytes())
            .add(opt::ISB_IFDROP, &drop.to_le_bytes())
            .add(opt::COMMENT, b"counters from the capture's start");
        body.extend(o.finish());
        write_block(&mut self.out, ISB, &body)
    }

    /// Flushes and returns the output.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

fn write_block(out: &mut impl Write, kind: u32, body: &[u8]) -> io::Result<()> {
    let len = (12 + pad4(body.len())) as u32;
    out.write_all(&kind.to_le_bytes())?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(body)?;
    out.write_all(&[0u8; 3][..pad4(body.len()) - body.len()])?;
    out.write_all(&len.to_le_bytes())
}

/// One block read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// A section header with its application name.
    Section {
        /// shb_userappl.
        application: String,
    },
    /// An interface.
    Interface {
        /// Link type.
        linktype: u16,
        /// Snap length.
        snaplen: u32,
        /// if_name.
        name: String,
        /// if_tsresol (9: nanoseconds).
        tsresol: u8,
    },
    /// A packet.
    Packet {
        /// Interface id.
        interface: u32,
        /// Timestamp in units of the interface's resolution.
        ts: u64,
        /// Length on the wire.
        orig_len: u32,
        /// Bytes kept.
        data: Vec<u8>,
    },
    /// Interface statistics.
    Statistics {
        /// Interface id.
        interface: u32,
        /// isb_ifrecv.
        recv: Option<u64>,
        /// isb_ifdrop.
        drop: Option<u64>,
    },
    /// Any other block type.
    Other(u32),
}

fn options(mut b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    while b.len() >= 4 {
        let code = u16::from_le_bytes([b[0], b[1]]);
        let len = u16::from_le_bytes([b[2], b[3]]) as usize;
        if code == opt::END || 4 + len > b.len() {
            break;
        }
        out.push((code, &b[4..4 + len]));
        b = &b[(4 + pad4(len)).min(b.len())..];
    }
    out
}

fn u64_opt(opts: &[(u16, &[u8])], code: u16) -> Option<u64> {
    opts.iter().find(|(c, _)| *c == code).and_then(|(_, v)| Some(u64::from_le_bytes((*v).try_into().ok()?)))
}

/// Parses a little-endian pcapng file into blocks; a malformed one is an [`io::ErrorKind::InvalidData`] error.
pub fn read_blocks(mut b: &[u8]) -> io::Result<Vec<Block>> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("pcapng: {what}"));
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let mut out = Vec::new();
    while !b.is_empty() {
        if b.len() < 12 {
            return Err(bad("truncated block header"));
        }
        let (kind, len) = (u32_at(b, 0), u32_at(b, 4) as usize);
        if len < 12 || len % 4 != 0 || len > b.len() || u32_at(b, len - 4) as usize != len {
            return Err(bad("bad block length"));
        }
        let body = &b[8..len - 4];
        let block = match kind {
            SHB => {
                if u32_at(body, 0) != BYTE_ORDER_MAGIC {
                    return Err(bad("not little-endian or not pcapng"));
                }
                let o = options(&body[16..]);
                let app = o.iter().find(|(c, _)| *c == opt::SHB_USERAPPL).map(|(_, v)| v.to_vec()).unwrap_or_default();
                Block::Section { application: String::from_utf8_lossy(&app).into_owned() }
            }
            IDB => {
                let o = options(&body[8..]);
                let name = o.iter().find(|(c, _)| *c == opt::IF_NAME).map(|(_, v)| v.to_vec()).unwrap_or_default();
                Block::Interface {
                    linktype: u16::from_le_bytes([body[0], body[1]]),
                    snaplen: u32_at(body, 4),
                    name: String::from_utf8_lossy(&name).into_owned(),
                    tsresol: o.iter().find(|(c, _)| *c == opt::IF_TSRESOL).map_or(6, |(_, v)| v[0]),
                }
            }
            EPB => {
                let caplen = u32_at(body, 12) as usize;
                if 20 + caplen > body.len() {
                    return Err(bad("packet longer than its block"));
                }
                Block::Packet {
                    interface: u32_at(body, 0),
                    ts: (u32_at(body, 4) as u64) << 32 | u32_at(body, 8) as u64,
                    orig_len: u32_at(body, 16),
                    data: body[20..20 + caplen].to_vec(),
                }
            }
            ISB => {
                let o = options(&body[12..]);
                Block::Statistics {
                    interface: u32_at(body, 0),
                    recv: u64_opt(&o, opt::ISB_IFRECV),
                    drop: u64_opt(&o, opt::ISB_IFDROP),
                }
            }
            other => Block::Other(other),
        };
        out.push(block);
        b = &b[len..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_trip() {
        let mut w = PcapngWriter::new(Vec::new(), "test").unwrap();
        assert_eq!(w.interface("net_null0", "port 0 rx", 96).unwrap(), 0);
        assert_eq!(w.interface("net_null0", "port 0 tx", 96).unwrap(), 1);
        w.packet(1, 0x1_0000_0002, 60, &[0xAB; 5]).unwrap();
        w.statistics(1, 1, 9, 7, 2).unwrap();
        let bytes = w.into_inner().unwrap();
        assert_eq!(bytes.len() % 4, 0);
        let blocks = read_blocks(&bytes).unwrap();
        assert_eq!(blocks[0], Block::Section { application: "test".into() });
        assert_eq!(blocks[2], Block::Interface { linktype: 1, snaplen: 96, name: "net_null0".into(), tsresol: 9 });
        assert_eq!(blocks[3], Block::Packet { interface: 1, ts: 0x1_0000_0002, orig_len: 60, data: vec![0xAB; 5] });
        assert_eq!(blocks[4], Block::Statistics { interface: 1, recv: Some(7), drop: Some(2) });
        // A block whose trailing length disagrees is refused.
        let mut broken = bytes.clone();
        let n = broken.len();
        broken[n - 1] ^= 1;
        assert!(read_blocks(&broken).is_err());
    }
}
