//! The driver's queue-context packing (i40e::hmc) against the model's unpacking tables (nicsim's, written
//! separately from the same notes): every field round-trips, alone and all at once, with no bit outside its place.

use i40e::hmc::{CtxField, RxQueueContext, TxQueueContext, RXQ_CTX_FIELDS, TXQ_CTX_FIELDS};
use nicsim::x710::hmc::{RX_CTX_FIELDS, TX_CTX_FIELDS};

/// `width` bits at bit `lsb` of a little-endian bit string, one bit at a time (independent of both sides' code).
fn bits(b: &[u8], lsb: usize, width: usize) -> u64 {
    (0..width).fold(0, |v, i| v | (u64::from((b[(lsb + i) / 8] >> ((lsb + i) % 8)) & 1) << i))
}

fn mask(width: u32) -> u64 {
    if width == 64 {
        u64::MAX
    } else {
        (1 << width) - 1
    }
}

/// Packs each driver field alone (all ones, then a pattern) and reads every model field back.
fn round_trip(driver: &[CtxField], model: &[(&'static str, usize, usize)], len: usize) {
    assert_eq!(driver.len(), model.len(), "both sides know the same number of fields");
    for (d, &(name, lsb, width)) in driver.iter().zip(model) {
        assert_eq!((d.name, d.lsb as usize, d.width as usize), (name, lsb, width), "field tables differ");
    }
    for (k, d) in driver.iter().enumerate() {
        for value in [u64::MAX, 0x5A5A_A5A5_DEAD_BEEF] {
            let mut values = vec![0u64; driver.len()];
            values[k] = value;
            let mut obj = vec![0u8; len];
            i40e::hmc::pack(driver, &values, &mut obj);
            for &(name, lsb, width) in model {
                let want = if name == d.name { value & mask(d.width) } else { 0 };
                assert_eq!(bits(&obj, lsb, width), want, "{} packed alone, read as {name}", d.name);
            }
            let set: u32 = obj.iter().map(|b| b.count_ones()).sum();
            assert_eq!(set, (value & mask(d.width)).count_ones(), "{}: bits outside the field", d.name);
        }
    }
}

#[test]
fn every_tx_context_field_round_trips_through_the_models_table() {
    round_trip(&TXQ_CTX_FIELDS, TX_CTX_FIELDS, 128);
}

#[test]
fn every_rx_context_field_round_trips_through_the_models_table() {
    round_trip(&RXQ_CTX_FIELDS, RX_CTX_FIELDS, 32);
}

#[test]
fn whole_contexts_unpack_to_what_was_packed() {
    let tx = TxQueueContext {
        head: 0x1ABC,
        new_context: true,
        base: 0x01_2345_6789_ABCD,
        cpuid: 0xA5,
        head_wb_ena: true,
        qlen: 0x1FE0,
        head_wb_addr: 0xFEDC_BA98_7654_3210,
        crc: 0x1234_5678,
        rdylist: 0x3C5,
        ..Default::default()
    };
    let obj = tx.pack();
    for (f, v) in TX_CTX_FIELDS.iter().zip(tx.values()) {
        assert_eq!(bits(&obj, f.1, f.2), v, "TX {}", f.0);
    }
    let rx = RxQueueContext {
        head: 0x0ABC,
        cpuid: 0x5A,
        base: 0x00_7654_3210_FEDC,
        qlen: 0x1FE0,
        dbuff: 0x7F,
        hbuff: 0x1F,
        dtype: 2,
        dsize: true,
        crcstrip: true,
        l2tsel: true,
        hsplit_0: 0xF,
        hsplit_1: 3,
        showiv: true,
        rxmax: 0x25FF,
        lrxqthresh: 5,
        prefena: true,
        ..Default::default()
    };
    let obj = rx.pack();
    for (f, v) in RX_CTX_FIELDS.iter().zip(rx.values()) {
        assert_eq!(bits(&obj, f.1, f.2), v, "RX {}", f.0);
    }
}
