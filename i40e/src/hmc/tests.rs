use std::sync::Arc;

use drvkit::dma::{DmaMapper, IdentityMapper};
use hugepage::Allocator;
use proptest::prelude::*;

use super::*;
use crate::testing::FakeRegs;

/// An independent reader: bit by bit, little-endian bit string.
fn read_bits(b: &[u8], lsb: u32, width: u32) -> u64 {
    (0..width).fold(0u64, |v, i| {
        let bit = lsb + i;
        v | (((b[(bit / 8) as usize] >> (bit % 8)) & 1) as u64) << i
    })
}

fn mask(width: u32) -> u64 {
    if width == 64 {
        u64::MAX
    } else {
        (1 << width) - 1
    }
}

#[test]
fn field_tables_fit_their_objects_and_do_not_overlap() {
    for (fields, len) in [(&TXQ_CTX_FIELDS[..], TXQ_CTX_LEN), (&RXQ_CTX_FIELDS[..], RXQ_CTX_LEN)] {
        let mut used = vec![false; len * 8];
        for fd in fields {
            assert!(fd.lsb + fd.width <= (len * 8) as u32, "{} past the object", fd.name);
            for b in fd.lsb..fd.lsb + fd.width {
                assert!(!used[b as usize], "{} overlaps bit {b}", fd.name);
                used[b as usize] = true;
            }
        }
    }
}

proptest! {
    #[test]
    fn tx_context_round_trips_every_field(vals in prop::array::uniform18(any::<u64>())) {
        let mut b = [0u8; TXQ_CTX_LEN];
        pack(&TXQ_CTX_FIELDS, &vals, &mut b);
        for (fd, v) in TXQ_CTX_FIELDS.iter().zip(vals) {
            prop_assert_eq!(read_bits(&b, fd.lsb, fd.width), v & mask(fd.width), "field {}", fd.name);
        }
        // Nothing outside the fields.
        let covered: u32 = TXQ_CTX_FIELDS.iter().map(|f| f.width).sum();
        let ones: u32 = b.iter().map(|x| x.count_ones()).sum();
        let field_ones: u32 = TXQ_CTX_FIELDS.iter().zip(vals).map(|(f, v)| (v & mask(f.width)).count_ones()).sum();
        prop_assert_eq!(ones, field_ones);
        prop_assert!(covered < (TXQ_CTX_LEN * 8) as u32);
    }

    #[test]
    fn rx_context_round_trips_every_field(vals in prop::array::uniform21(any::<u64>())) {
        let mut b = [0u8; RXQ_CTX_LEN];
        pack(&RXQ_CTX_FIELDS, &vals, &mut b);
        for (fd, v) in RXQ_CTX_FIELDS.iter().zip(vals) {
            prop_assert_eq!(read_bits(&b, fd.lsb, fd.width), v & mask(fd.width), "field {}", fd.name);
        }
        let ones: u32 = b.iter().map(|x| x.count_ones()).sum();
        let field_ones: u32 = RXQ_CTX_FIELDS.iter().zip(vals).map(|(f, v)| (v & mask(f.width)).count_ones()).sum();
        prop_assert_eq!(ones, field_ones);
    }
}

#[test]
fn typed_contexts_put_values_where_the_tables_say() {
    let tx = TxQueueContext {
        new_context: true,
        base: 0x0012_3456_789A >> 7,
        qlen: 1024,
        rdylist: 0x120,
        head_wb_addr: 0xDEAD_BEEF_0000,
        ..Default::default()
    };
    let b = tx.pack();
    assert_eq!(read_bits(&b, 30, 1), 1);
    assert_eq!(read_bits(&b, 32, 57), 0x0012_3456_789A >> 7);
    assert_eq!(read_bits(&b, 161, 13), 1024);
    assert_eq!(read_bits(&b, 980, 10), 0x120);
    assert_eq!(read_bits(&b, 192, 64), 0xDEAD_BEEF_0000);
    // base at bit 32 is byte 4 onwards, little-endian.
    let rx = RxQueueContext {
        base: 0x0102_0304,
        qlen: 512,
        dbuff: 16,
        dsize: true,
        crcstrip: true,
        rxmax: 9728,
        prefena: true,
        ..Default::default()
    };
    let b = rx.pack();
    assert_eq!(b[4..8], [0x04, 0x03, 0x02, 0x01]);
    assert_eq!(read_bits(&b, 89, 13), 512);
    assert_eq!(read_bits(&b, 102, 7), 16);
    assert_eq!(read_bits(&b, 116, 2), 0b11);
    assert_eq!(read_bits(&b, 174, 14), 9728);
    assert_eq!(read_bits(&b, 201, 1), 1);
}

#[test]
fn the_fpm_layout_aligns_bases_to_512() {
    let l = FpmLayout::new(3, 3, 7, 5);
    assert_eq!((l.tx_base, l.rx_base, l.total), (0, 512, 1024));
    assert_eq!((l.tx_ctx(2), l.rx_ctx(2)), (256, 576));
    let l = FpmLayout::new(1536, 1536, 7, 5);
    assert_eq!(l.rx_base, 1536 * 128);
    assert_eq!(l.total, 1536 * 160);
    assert_eq!(l.sd_count(), 1);
    assert_eq!(FpmLayout::new(16384, 16384, 7, 5).sd_count(), 2);
}

fn setup(mode: HmcMode, n: u32) -> (Arc<FakeRegs>, LanHmc) {
    let fake = Arc::new(FakeRegs::default());
    let regs = Regs::new(fake.clone());
    let mapper: Arc<dyn DmaMapper> = Arc::new(IdentityMapper);
    let hmc = LanHmc::new(&regs, &Allocator::no_huge(), &mapper, "t", 2, n, n, mode).unwrap();
    (fake, hmc)
}

#[test]
fn direct_backing_programs_one_sd_and_the_function_bases() {
    let (fake, hmc) = setup(HmcMode::Direct, 64);
    assert!(!hmc.is_paged());
    let low = fake.peek(regs::PFHMC_SDDATALOW);
    assert_eq!(low & (pfhmc_sddatalow::PMSDVALID | pfhmc_sddatalow::PMSDTYPE), 0b11, "valid, direct");
    assert_eq!(pfhmc_sddatalow::PMSDBPCOUNT.get(low), 512);
    assert_eq!(fake.peek(regs::PFHMC_SDCMD), pfhmc_sdcmd::PMSDWR, "SD 0 written");
    let addr = (fake.peek(regs::PFHMC_SDDATAHIGH) as u64) << 32 | (low & pfhmc_sddatalow::PMSDDATALOW.mask()) as u64;
    assert_eq!(fake.peek(regs::glhmc_lantxcnt(2)), 64);
    assert_eq!(fake.peek(regs::glhmc_lanrxbase(2)), (64 * 128 / 512) as u32);
    assert_eq!(fake.peek(regs::glhmc_lanrxcnt(2)), 64);
    // A context lands at backing + its FPM address.
    let ctx = RxQueueContext { base: 77, qlen: 128, ..Default::default() };
    hmc.write_rx(5, &ctx);
    let at = (addr as usize + hmc.layout().rx_ctx(5)) as *const [u8; RXQ_CTX_LEN];
    // SAFETY: IOVA = VA (identity mapper, ordinary memory); inside the backing area, which `hmc` keeps alive.
    assert_eq!(unsafe { at.read_volatile() }, ctx.pack());
    hmc.clear(&Regs::new(fake.clone()));
    assert_eq!(fake.peek(regs::PFHMC_SDDATALOW) & pfhmc_sddatalow::PMSDVALID, 0);
    assert_eq!(fake.peek(regs::glhmc_lanrxcnt(2)), 0);
}

#[test]
fn paged_backing_points_pd_entries_at_pages() {
    let (fake, hmc) = setup(HmcMode::Paged, 64);
    assert!(hmc.is_paged());
    let low = fake.peek(regs::PFHMC_SDDATALOW);
    assert_eq!(low & (pfhmc_sddatalow::PMSDVALID | pfhmc_sddatalow::PMSDTYPE), pfhmc_sddatalow::PMSDVALID, "paged");
    let pd = ((fake.peek(regs::PFHMC_SDDATAHIGH) as u64) << 32 | (low & 0xFFFF_F000) as u64) as *const u64;
    // 64 x 128 + 64 x 32 = 10240 bytes: three pages.
    let pages: Vec<u64> = (0..3)
        .map(|k| {
            // SAFETY: the PD page (IOVA = VA) kept alive by `hmc`; k < 512.
            unsafe { pd.add(k).read_volatile() }
        })
        .collect();
    assert!(pages.iter().all(|e| e & PD_VALID == 1));
    // SAFETY: as above.
    assert_eq!(unsafe { pd.add(3).read_volatile() }, 0);
    let tx = TxQueueContext { new_context: true, base: 9, qlen: 64, rdylist: 3, ..Default::default() };
    hmc.write_tx(40, &tx); // FPM 5120: page 1, offset 1024
    let at = ((pages[1] & !PD_VALID) as usize + 1024) as *const [u8; TXQ_CTX_LEN];
    // SAFETY: inside backing page 1, kept alive by `hmc`.
    assert_eq!(unsafe { at.read_volatile() }, tx.pack());
    assert_eq!(hmc.read_tx(40), tx.pack());
}

#[test]
fn more_contexts_than_lanqmax_is_an_hmc_error() {
    let fake = Arc::new(FakeRegs::default());
    fake.store(regs::GLHMC_LANQMAX, 16);
    let mapper: Arc<dyn DmaMapper> = Arc::new(IdentityMapper);
    let e = LanHmc::new(&Regs::new(fake), &Allocator::no_huge(), &mapper, "t", 0, 32, 32, HmcMode::Auto).unwrap_err();
    assert!(e.to_string().contains("GLHMC_LANQMAX allows 16"), "{e}");
}
