//! RSS: flows spread over the queues exactly as the Toeplitz hash over the programmed key and the redirection
//! table say, the hash computed here ([`crate::toeplitz`]), independently of both the driver and the model.

use pktio::{EthDev, PortConfig, RssConfig, RssHashFunctions, TypedQueues};

use super::{pool_for, Conformance};
use crate::{rss_flows, toeplitz, wait_for};

const FLOWS: u32 = 200;

fn run<P: Conformance>(nq: u16, reta: Option<Vec<u16>>) {
    let key: Vec<u8> = (0..P::SPEC.rss_key_len as u8).map(|i| i.wrapping_mul(37).wrapping_add(11)).collect();
    let mut port = P::open_one();
    let pool = pool_for::<P>("rss", 4095);
    let config = PortConfig {
        rx_queues: nq,
        tx_queues: 1,
        rx_desc: 128,
        tx_desc: 128,
        rss: Some(RssConfig { key: Some(key.clone()), functions: RssHashFunctions::ALL }),
        ..Default::default()
    };
    port.dev_mut().configure(&config).unwrap();
    port.dev_mut().start(&pool).unwrap();
    let size = port.dev().info().reta_size as usize;
    assert_eq!(size, P::SPEC.reta_size, "{}: the redirection table's size", P::SPEC.name);
    let table: Vec<u16> = match &reta {
        Some(t) => {
            let full: Vec<u16> = (0..size).map(|e| t[e % t.len()]).collect();
            if P::SPEC.reta_repeats {
                port.dev_mut().reta_update(t).unwrap();
            } else {
                let err = port.dev_mut().reta_update(t).expect_err("a table shorter than the device's");
                assert!(matches!(err, pktio::Error::InvalidConfig { .. }), "{}: {err:?}", P::SPEC.name);
                port.dev_mut().reta_update(&full).unwrap();
            }
            full
        }
        None => (0..size).map(|e| (e % nq as usize) as u16).collect(),
    };
    if let Some((held_key, held_table)) = port.rss_state() {
        assert_eq!(held_key, key, "{}: the key the device holds", P::SPEC.name);
        assert_eq!(held_table, table, "{}: the table the device holds", P::SPEC.name);
    }
    let mac = port.dev().mac_addr().0;
    let mut queues: Vec<_> = (0..nq).map(|q| port.dev_mut().rx_queue_typed(q).unwrap()).collect();
    let mut expected = vec![Vec::new(); nq as usize];
    for (i, flow) in rss_flows(mac, FLOWS).into_iter().enumerate() {
        let hash = toeplitz(&key, &flow.tuple);
        assert!(port.inject(&flow.frame));
        expected[table[hash as usize % size] as usize].push((hash, flow.frame));
        if i % 32 == 31 {
            wait_for(5, "the model to take the frames", || port.rx_pending() == 0);
        }
    }
    wait_for(5, "every frame delivered", || port.counts().rx_delivered == u64::from(FLOWS));
    crate::assert_rss_spread(&mut queues, &expected);
    drop(queues);
    port.dev_mut().stop().unwrap();
    assert!(pool.is_full(), "{}: {} buffers leaked", P::SPEC.name, pool.in_use());
    port.assert_no_faults();
    port.close();
}

pub fn rss_spreads_flows_over_four_queues_as_toeplitz_and_the_table_say<P: Conformance>() {
    run::<P>(4, None);
}

pub fn rss_follows_an_updated_table_over_sixteen_queues<P: Conformance>() {
    run::<P>(16, Some((0..16).rev().collect()));
}
