//! The Host Memory Cache (docs/hw/i40e.md §8): segment descriptors programmed through PFHMC_SD*, the function's
//! FPM layout (GLHMC_LAN{TX,RX}{BASE,CNT}), and the queue contexts read from host memory and unpacked bit by bit.
//!
//! The model reads a context only when its queue is enabled (as the device does, docs/hw/i40e.md §8.1), so a context written after
//! the enable is not seen. Every bit of a context outside the fields of docs/hw/i40e.md §8.5 / §8.6 must be zero: a packer with a
//! wrong offset lands there and is reported instead of being silently ignored.

use crate::dma::IovaMap;
use crate::Error;

use super::regs::*;

/// FPM bytes one segment descriptor covers (docs/hw/i40e.md §8.1).
pub(crate) const SD_SPAN: u64 = 2 << 20;
/// Backing page size (docs/hw/i40e.md §8.1).
const PAGE: u64 = 4096;
/// PD entries per paged SD (docs/hw/i40e.md §8.1).
const PDS_PER_SD: u64 = 512;
/// FPM base unit of GLHMC_LAN*BASE (docs/hw/i40e.md §8.2).
pub(crate) const FPM_BASE_UNIT: u64 = 512;
/// TX context object size (docs/hw/i40e.md §8.1).
pub(crate) const TX_CTX_LEN: usize = 128;
/// RX context object size (docs/hw/i40e.md §8.1).
pub(crate) const RX_CTX_LEN: usize = 32;
/// SD entries the model keeps (PMSDIDX is 12 bits).
pub(crate) const MAX_SDS: usize = 4096;

/// One segment descriptor as the PF programmed it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sd {
    pub valid: bool,
    pub direct: bool,
    pub bp_count: u32,
    /// IOVA of the backing area (direct) or of the PD page (paged).
    pub addr: u64,
}

impl Sd {
    /// Decodes PFHMC_SDDATALOW / SDDATAHIGH (docs/hw/i40e.md §8.2).
    pub fn decode(low: u32, high: u32) -> Sd {
        Sd {
            valid: PFHMC_SDDATALOW_PMSDVALID.is_set(low),
            direct: PFHMC_SDDATALOW_PMSDTYPE.is_set(low),
            bp_count: PFHMC_SDDATALOW_PMSDBPCOUNT.get(low),
            addr: u64::from(high) << 32 | u64::from(PFHMC_SDDATALOW_PMSDDATALOW.get(low)) << 12,
        }
    }
}

/// The SD table of the PF.
#[derive(Debug, Clone)]
pub(crate) struct SdTable {
    pub sds: Vec<Sd>,
}

impl Default for SdTable {
    fn default() -> Self {
        SdTable { sds: vec![Sd::default(); MAX_SDS] }
    }
}

impl SdTable {
    /// Translates `len` bytes at FPM address `fpm` to an IOVA, walking a paged SD's PD page by DMA. The object
    /// must not straddle a direct SD's extent or a backing page.
    pub fn translate(&self, dma: &IovaMap, fpm: u64, len: usize) -> Result<u64, Error> {
        let idx = (fpm / SD_SPAN) as usize;
        let sd = self.sds.get(idx).copied().unwrap_or_default();
        if !sd.valid {
            return Err(Error::Violation {
                at: "FPM".into(),
                rule: format!("address {fpm:#x} lies in SD {idx}, which is not valid (docs/hw/i40e.md §8.3)"),
            });
        }
        let off = fpm % SD_SPAN;
        if sd.direct {
            let extent = u64::from(sd.bp_count) * PAGE;
            if off + len as u64 > extent {
                return Err(Error::Violation {
                    at: "FPM".into(),
                    rule: format!(
                        "address {fpm:#x} + {len} is past direct SD {idx}'s {} backing pages (docs/hw/i40e.md §8.3)",
                        sd.bp_count
                    ),
                });
            }
            return Ok(sd.addr + off);
        }
        let pd = off / PAGE;
        if pd >= PDS_PER_SD || (off % PAGE) + len as u64 > PAGE {
            return Err(Error::Violation {
                at: "FPM".into(),
                rule: format!("address {fpm:#x} + {len} straddles a backing page of paged SD {idx}"),
            });
        }
        let mut raw = [0u8; 8];
        let at = sd.addr + pd * 8;
        dma.read(at, &mut raw, &|| format!("HMC PD entry {pd} of SD {idx}")).map_err(|_| {
            Error::Unmapped(format!("PD entry {pd} of SD {idx} at IOVA {at:#x} is outside the IOVA map"))
        })?;
        let entry = u64::from_le_bytes(raw);
        if entry & 1 == 0 {
            return Err(Error::Violation {
                at: "PD".into(),
                rule: format!("entry {pd} of SD {idx} is not valid (bit 0 clear, docs/hw/i40e.md §8.3 step 5)"),
            });
        }
        Ok((entry & !(PAGE - 1)) + off % PAGE)
    }
}

/// Extracts `width` (≤ 64) bits at bit `lsb` of a little-endian bit string (docs/hw/i40e.md §8.4).
pub(crate) fn get_bits(obj: &[u8], lsb: usize, width: usize) -> u64 {
    let mut v: u128 = 0;
    let first = lsb / 8;
    let last = (lsb + width).div_ceil(8);
    for (i, b) in obj[first..last].iter().enumerate() {
        v |= u128::from(*b) << (8 * i);
    }
    ((v >> (lsb % 8)) & ((1u128 << width) - 1)) as u64
}

/// Stores `width` bits of `value` at bit `lsb` (the inverse of [`get_bits`]; the unit tests pack with it).
#[cfg(test)]
pub(crate) fn set_bits(obj: &mut [u8], lsb: usize, width: usize, value: u64) {
    for i in 0..width {
        let bit = lsb + i;
        let on = (value >> i) & 1 != 0;
        if on {
            obj[bit / 8] |= 1 << (bit % 8);
        } else {
            obj[bit / 8] &= !(1 << (bit % 8));
        }
    }
}

/// A context field: (name, lsb, width) from docs/hw/i40e.md §8.5 / §8.6.
pub type CtxField = (&'static str, usize, usize);

/// TX queue context fields (docs/hw/i40e.md §8.5).
pub const TX_CTX_FIELDS: &[CtxField] = &[
    ("head", 0, 13),
    ("new_context", 30, 1),
    ("base", 32, 57),
    ("fc_ena", 89, 1),
    ("timesync_ena", 90, 1),
    ("fd_ena", 91, 1),
    ("alt_vlan_ena", 92, 1),
    ("cpuid", 96, 8),
    ("thead_wb", 128, 13),
    ("head_wb_ena", 160, 1),
    ("qlen", 161, 13),
    ("tphrdesc_ena", 174, 1),
    ("tphrpacket_ena", 175, 1),
    ("tphwdesc_ena", 176, 1),
    ("head_wb_addr", 192, 64),
    ("crc", 896, 32),
    ("rdylist", 980, 10),
    ("rdylist_act", 990, 1),
];

/// RX queue context fields (docs/hw/i40e.md §8.6).
pub const RX_CTX_FIELDS: &[CtxField] = &[
    ("head", 0, 13),
    ("cpuid", 13, 8),
    ("base", 32, 57),
    ("qlen", 89, 13),
    ("dbuff", 102, 7),
    ("hbuff", 109, 5),
    ("dtype", 114, 2),
    ("dsize", 116, 1),
    ("crcstrip", 117, 1),
    ("fc_ena", 118, 1),
    ("l2tsel", 119, 1),
    ("hsplit_0", 120, 4),
    ("hsplit_1", 124, 2),
    ("showiv", 127, 1),
    ("rxmax", 174, 14),
    ("tphrdesc_ena", 193, 1),
    ("tphwdesc_ena", 194, 1),
    ("tphdata_ena", 195, 1),
    ("tphhead_ena", 196, 1),
    ("lrxqthresh", 198, 3),
    ("prefena", 201, 1),
];

/// Unpacked fields of a context, by name.
#[derive(Debug, Clone)]
pub(crate) struct Unpacked {
    values: Vec<(&'static str, u64)>,
}

impl Unpacked {
    pub fn get(&self, name: &str) -> u64 {
        self.values.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)
    }
}

/// Unpacks `obj` by `fields`, failing on any set bit outside them.
pub(crate) fn unpack(obj: &[u8], fields: &[CtxField], what: &str) -> Result<Unpacked, Error> {
    let mut covered = vec![false; obj.len() * 8];
    for &(_, lsb, width) in fields {
        covered[lsb..lsb + width].iter_mut().for_each(|c| *c = true);
    }
    if let Some(bit) = (0..obj.len() * 8).find(|&b| !covered[b] && obj[b / 8] & (1 << (b % 8)) != 0) {
        return Err(Error::Violation {
            at: what.to_string(),
            rule: format!("reserved bit {bit} is set (no field of docs/hw/i40e.md §8.5/§8.6 is there)"),
        });
    }
    Ok(Unpacked { values: fields.iter().map(|&(n, lsb, w)| (n, get_bits(obj, lsb, w))).collect() })
}

/// Smallest and largest ring lengths in descriptors, and their granularity (docs/hw/i40e.md §15).
pub(crate) const RING_MIN: u64 = 64;
/// Largest ring (13-bit QLEN, a multiple of 32).
pub(crate) const RING_MAX: u64 = 8160;
/// Ring length granularity.
pub(crate) const RING_MULTIPLE: u64 = 32;

/// Checks a context's ring length (docs/hw/i40e.md §15: 64 to 8160, a multiple of 32).
pub(crate) fn check_qlen(qlen: u64, what: &str) -> Result<(), Error> {
    if !(RING_MIN..=RING_MAX).contains(&qlen) || !qlen.is_multiple_of(RING_MULTIPLE) {
        return Err(Error::Violation {
            at: what.to_string(),
            rule: format!("qlen {qlen} (must be a multiple of 32 from 64 to 8160, docs/hw/i40e.md §15)"),
        });
    }
    Ok(())
}

/// The TX context as the model uses it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TxCtx {
    pub base: u64,
    pub qlen: u32,
    pub head_wb: Option<u64>,
    /// timesync_ena: the queue may ask for IEEE 1588 TX timestamps (context descriptor TSYN).
    pub timesync: bool,
}

/// The RX context as the model uses it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RxCtx {
    pub base: u64,
    pub qlen: u32,
    pub dbuff: usize,
    pub desc_len: usize,
    pub crcstrip: bool,
    pub l2tsel: bool,
    pub rxmax: usize,
}

/// Largest frame the device accepts (docs/hw/i40e.md §15).
pub(crate) const MAX_FRAME: u64 = 9728;

/// Validates an unpacked TX context (docs/hw/i40e.md §8.5). `handles` are the queue-set handles the firmware handed out.
/// `flow_director`: the firmware reports capability 0x45, so fd_ena may be 1 (Linux's ATR sets it on LAN queues).
pub(crate) fn tx_ctx(u: &Unpacked, what: &str, handles: &[u32], flow_director: bool) -> Result<TxCtx, Error> {
    check_qlen(u.get("qlen"), what)?;
    // timesync_ena only allows TSYN context descriptors (docs/hw/i40e.md §8.5, §10.4); the TX path refuses those.
    // fd_ena only allows filter-programming descriptors, which the TX path refuses as not modelled.
    for f in ["fc_ena", "fd_ena", "alt_vlan_ena", "rdylist_act"] {
        if u.get(f) != 0 && !(f == "fd_ena" && flow_director) {
            return Err(Error::Violation {
                at: what.to_string(),
                rule: format!("{f} = 1 (the model supports plain LAN queues only; docs/hw/i40e.md §8.5 wants 0)"),
            });
        }
    }
    if u.get("new_context") != 1 {
        return Err(Error::Violation {
            at: what.to_string(),
            rule: "new_context = 0 (docs/hw/i40e.md §8.5: set it to 1)".into(),
        });
    }
    if u.get("base") == 0 {
        return Err(Error::Violation { at: what.to_string(), rule: "base = 0 (ring IOVA / 128)".into() });
    }
    let rdylist = u.get("rdylist") as u32;
    if !handles.contains(&rdylist) {
        return Err(Error::Violation { at: what.to_string(), rule: format!("rdylist {rdylist:#x} is not a queue-set handle the firmware gave out ({handles:#x?}; docs/hw/i40e.md §6.6, §8.5)") });
    }
    let head_wb = (u.get("head_wb_ena") == 1).then(|| u.get("head_wb_addr"));
    if head_wb.is_some_and(|a| !a.is_multiple_of(4)) {
        return Err(Error::Violation {
            at: what.to_string(),
            rule: format!("head_wb_addr {:#x} not 4-byte aligned", u.get("head_wb_addr")),
        });
    }
    Ok(TxCtx { base: u.get("base") << 7, qlen: u.get("qlen") as u32, head_wb, timesync: u.get("timesync_ena") == 1 })
}

/// Validates an unpacked RX context (docs/hw/i40e.md §8.6).
pub(crate) fn rx_ctx(u: &Unpacked, what: &str) -> Result<RxCtx, Error> {
    check_qlen(u.get("qlen"), what)?;
    if u.get("base") == 0 {
        return Err(Error::Violation { at: what.to_string(), rule: "base = 0 (ring IOVA / 128)".into() });
    }
    let dbuff = u.get("dbuff");
    if dbuff == 0 {
        return Err(Error::Violation {
            at: what.to_string(),
            rule: "dbuff = 0 (data buffer size / 128, docs/hw/i40e.md §8.6)".into(),
        });
    }
    if u.get("dtype") != 0 || u.get("hsplit_0") != 0 || u.get("hsplit_1") != 0 || u.get("hbuff") != 0 {
        return Err(Error::Violation {
            at: what.to_string(),
            rule: "header split requested (dtype/hsplit/hbuff); the model supports none".into(),
        });
    }
    if u.get("fc_ena") != 0 || u.get("showiv") != 0 {
        return Err(Error::Violation {
            at: what.to_string(),
            rule: "fc_ena/showiv set (FCoE and inner-VLAN display are not modelled)".into(),
        });
    }
    let rxmax = u.get("rxmax");
    if rxmax == 0 || rxmax > MAX_FRAME {
        return Err(Error::Violation {
            at: what.to_string(),
            rule: format!("rxmax {rxmax} (1..=9728 bytes, docs/hw/i40e.md §8.6/§15)"),
        });
    }
    if u.get("prefena") != 1 {
        return Err(Error::Violation {
            at: what.to_string(),
            rule: "prefena = 0 (docs/hw/i40e.md §8.6: the manual demands 1)".into(),
        });
    }
    Ok(RxCtx {
        base: u.get("base") << 7,
        qlen: u.get("qlen") as u32,
        dbuff: (dbuff as usize) << 7,
        desc_len: if u.get("dsize") == 1 { 32 } else { 16 },
        crcstrip: u.get("crcstrip") == 1,
        l2tsel: u.get("l2tsel") == 1,
        rxmax: rxmax as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_across_bytes() {
        let mut obj = [0u8; 128];
        set_bits(&mut obj, 32, 57, 0x1_2345_6789_ABCD);
        set_bits(&mut obj, 161, 13, 512);
        set_bits(&mut obj, 980, 10, 0x3FF);
        assert_eq!(get_bits(&obj, 32, 57), 0x1_2345_6789_ABCD);
        assert_eq!(get_bits(&obj, 161, 13), 512);
        assert_eq!(get_bits(&obj, 980, 10), 0x3FF);
        // qlen at 161: bit 1 of byte 20 upwards.
        assert_eq!(obj[20] & 1, 0);
        assert_eq!(get_bits(&obj, 160, 1), 0);
    }

    #[test]
    fn a_stray_bit_is_reported() {
        let mut obj = [0u8; 32];
        set_bits(&mut obj, 150, 4, 0xF);
        let err = unpack(&obj, RX_CTX_FIELDS, "RX ctx").map(|_| ()).unwrap_err();
        let Error::Violation { at, rule } = &err else { panic!("{err:?}") };
        assert_eq!(at, "RX ctx");
        assert!(rule.contains("reserved bit 150"), "{err}");
    }
}
