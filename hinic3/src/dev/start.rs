//! Start (docs/hw/hinic3.md §14.3) and stop (§14.4), RSS (§11).

use std::time::Instant;

use drvkit::bar::RegisterSpace;
use mempool::Mempool;
use pktio::{Error, LinkStatus, Result, RssHashFunctions};

use super::queue::{lock, slot};
use super::Hinic3;
use crate::cmdq::ucode;
use crate::ctx::{self, QueueType, CTX_PER_CMD};
use crate::mgmt::{self, l2nic, mag, module, rss_type};
use crate::rxtx::{rx_buf_size_index, RxRing, RxSetup};
use crate::rxtx::{TxRing, TxSetup};

/// SET_FUNC_TBL bits (docs/hw/hinic3.md §7.3).
const FUNC_TBL_INIT: u32 = 1 << 0;
const FUNC_TBL_RX_BUF: u32 = 1 << 1;
const FUNC_TBL_MTU: u32 = 1 << 2;
/// The MTU SET_FUNC_TBL carries at init.
const INIT_MTU: u16 = 0x3FFF;
/// RSS_TEMP_MGR commands.
const TEMPLATE_ALLOC: u8 = 1;
const TEMPLATE_FREE: u8 = 2;
/// Toeplitz.
const ENGINE_TOEPLITZ: u8 = 1;
/// LRO merge limit sent while LRO is off (KiB; DPDK `hinic3_set_lro`'s floor).
const LRO_MAX_KIB_OFF: u8 = 1;
/// LRO timer (DPDK HINIC3_LRO_DEFAULT_TIME_LIMIT).
const LRO_TIMER: u32 = 16;

pub(super) fn start<R: RegisterSpace>(dev: &mut Hinic3<R>, pool: &Mempool) -> Result<()> {
    if dev.state.started {
        return Err(Error::Started { port: dev.options.name.clone() });
    }
    match hw_start(dev, pool) {
        Ok(()) => dev.state.start_with_pool(pool),
        Err(e) => {
            let _ = hw_stop(dev);
            Err(e)
        }
    }
}

fn hw_start<R: RegisterSpace>(dev: &mut Hinic3<R>, pool: &Mempool) -> Result<()> {
    let f = dev.func();
    let cfg = dev.state.config.clone();
    let name = dev.options.name.clone();
    let room = (pool.data_room() as u32).min(16384);
    let (buf_idx, buf_len) = rx_buf_size_index(room)
        .filter(|&(_, s)| s >= 256)
        .ok_or_else(|| dev.state.invalid(format!("mempool {} data room {room}: at least 256 bytes", pool.name())))?;
    // Steps 2, 3.
    dev.call(
        module::L2NIC,
        l2nic::SET_FUNC_TBL,
        &mgmt::set_func_tbl(f, FUNC_TBL_INIT | FUNC_TBL_RX_BUF | FUNC_TBL_MTU, buf_len as u16, INIT_MTU).0,
        &[],
    )?;
    let nic = dev.id.nic_features & l2nic::FEATURES_KEPT;
    dev.call(module::L2NIC, l2nic::FEATURE_NEGO, &mgmt::feature_nego(f, true, nic).0, &[])?;
    // Rings (docs/hw/hinic3.md §14.2).
    let cos = dev.id.cap.default_cos();
    dev.tx_hang = (0..cfg.tx_queues).map(|_| Default::default()).collect();
    dev.tx_watch.clear();
    for q in 0..cfg.tx_queues {
        let stats = dev.state.tx_stats(q).cloned().unwrap_or_default();
        let ring = TxRing::new(TxSetup {
            db: &dev.db,
            allocator: &dev.allocator,
            mapper: &dev.mapper,
            queue: q,
            depth: cfg.tx_desc,
            wq_page_log2: dev.options.wq_page_log2,
            cos,
            pool,
            stats,
            hang: dev.tx_hang[q as usize].clone(),
            hang_timeout: dev.options.timing.tx_hang,
            port: &name,
            path: ringkit::TxPath::for_offloads(cfg.tx_offloads),
        })?;
        if q == 0 {
            dev.tx_path = Some(ring.path());
        }
        let watch = ringkit::TxWatchdog::new(&name, q, dev.options.timing.tx_hang, dev.tx_hang[q as usize].clone());
        dev.tx_watch.push((watch, ring.progress().clone()));
        dev.tx.push(slot(ring));
    }
    if dev.rx_csum.len() < cfg.rx_queues as usize {
        dev.rx_csum.resize_with(cfg.rx_queues as usize, Default::default);
        dev.rx_csum_base.resize(cfg.rx_queues as usize, 0);
    }
    for q in 0..cfg.rx_queues {
        let stats = dev.state.rx_stats(q).cloned().unwrap_or_default();
        let ring = RxRing::new(RxSetup {
            db: &dev.db,
            allocator: &dev.allocator,
            mapper: &dev.mapper,
            pool,
            queue: q,
            depth: cfg.rx_desc,
            wq_page_log2: dev.options.wq_page_log2,
            buf_len,
            port_id: dev.state.port_id,
            stats,
            csum_errors: dev.rx_csum[q as usize].clone(),
            port: &name,
        })?;
        dev.rx.push(slot(ring));
    }
    dev.intr_start()?;
    // Step 5: contexts, SQs then RQs, in batches.
    let sq: Vec<_> = dev
        .tx
        .iter()
        .filter_map(|t| lock(t).as_ref().map(|t| ctx::sq_ctx(t.queue(), t.ring_iova(), t.block_iova())))
        .collect();
    let rq: Vec<_> = dev
        .rx
        .iter()
        .filter_map(|r| lock(r).as_ref().map(|r| ctx::rq_ctx(r.ring_iova(), r.block_iova(), r.intr_vector())))
        .collect();
    for (kind, ctxs) in [(QueueType::Sq, &sq), (QueueType::Rq, &rq)] {
        for (b, chunk) in ctxs.chunks(CTX_PER_CMD).enumerate() {
            dev.cmdq(ucode::MODIFY_QUEUE_CTX, &ctx::modify_queue_ctx(kind, (b * CTX_PER_CMD) as u16, chunk))?;
        }
    }
    dev.rqs_live = cfg.rx_queues;
    dev.rx_stopped = vec![false; cfg.rx_queues as usize];
    dev.tx_stopped = vec![false; cfg.tx_queues as usize];
    // Step 6: clean TSO/LRO space for the function's queues.
    let most = dev.id.cap.max_sqs.max(dev.id.cap.max_rqs);
    dev.cmdq(ucode::CLEAN_QUEUE_CONTEXT, &ctx::clean_queue_ctx(QueueType::Sq, most))?;
    dev.cmdq(ucode::CLEAN_QUEUE_CONTEXT, &ctx::clean_queue_ctx(QueueType::Rq, most))?;
    // Step 7: root context.
    // With COMM bit 9 the firmware reads the buffer size in bytes (DPDK get_hw_rx_buf_size's caller).
    let rx_buf_sz =
        if dev.id.comm_features & mgmt::comm::FEATURE_USE_REAL_RX_BUF_SIZE != 0 { buf_len as u16 } else { buf_idx };
    dev.call(module::COMM, mgmt::comm::SET_VAT, &mgmt::set_root_ctx(f, rx_buf_sz, cfg.tx_desc, cfg.rx_desc).0, &[])?;
    // Step 8: CI attributes.
    let cis: Vec<_> = dev.tx.iter().filter_map(|t| lock(t).as_ref().map(|t| (t.queue(), t.ci_iova()))).collect();
    for (q, ci) in cis {
        dev.call(module::L2NIC, l2nic::SQ_CI_ATTR_SET, &mgmt::sq_ci_attr(f, q as u32, ci).0, &[])?;
    }
    // Steps 10, 11.
    dev.call(module::L2NIC, l2nic::SET_FUNC_TBL, &mgmt::set_func_tbl(f, FUNC_TBL_MTU, 0, cfg.mtu).0, &[])?;
    dev.state.started = true; // for apply_rx_mode; PortState::start sets it again
    let r = dev.apply_rx_mode();
    dev.state.started = false;
    r?;
    // The firmware's LRO, VLAN filter and strip state is whatever it was left in: each set explicitly, as DPDK's
    // hinic3_set_lro and hinic3_set_vlan at every start (docs/hw/hinic3.md §7.3, §14.3 step 11). This driver offers
    // none of the three, so all go off.
    dev.call(module::L2NIC, l2nic::CFG_RX_LRO, &mgmt::cfg_rx_lro(f, false, LRO_MAX_KIB_OFF).0, &[])?;
    dev.call(module::L2NIC, l2nic::CFG_LRO_TIMER, &mgmt::cfg_lro_timer(LRO_TIMER).0, &[])?;
    let filter = if dev.state.vlan_filter { mgmt::vlan_filter::VLAN } else { 0 };
    dev.call(module::L2NIC, l2nic::SET_VLAN_FILTER_EN, &mgmt::set_vlan_filter(f, filter).0, &[])?;
    let strip = cfg.rx_offloads & pktio::offload::RX_VLAN_STRIP != 0;
    dev.call(module::L2NIC, l2nic::SET_RX_VLAN_OFFLOAD, &mgmt::set_rx_vlan_offload(f, strip).0, &[])?;
    dev.rss_on = cfg.rx_queues > 1;
    if dev.rss_on {
        dev.call(module::L2NIC, l2nic::RSS_TEMP_MGR, &mgmt::rss_temp_mgr(f, TEMPLATE_ALLOC, 0).0, &[])?;
        program_rss(dev)?;
    }
    // Step 12: buffers are posted; ring the RQ doorbells, then the indirection table.
    for r in &dev.rx {
        if let Some(r) = lock(r).as_ref() {
            r.ring_doorbell();
        }
    }
    if dev.rss_on {
        program_reta(dev)?;
    }
    // Steps 13 to 15.
    dev.call(module::L2NIC, l2nic::SET_VPORT_ENABLE, &mgmt::set_vport_enable(f, true, cfg.rx_queues as u8).0, &[])?;
    dev.call(module::HILINK, mag::SET_PORT_ENABLE, &mgmt::set_port_enable(f, true).0, &[])?;
    let link = dev.query_link().unwrap_or_default();
    *dev.link.lock().unwrap_or_else(|e| e.into_inner()) = link;
    Ok(())
}

/// The docs/hw/hinic3.md §11 hash-type word for the configured functions.
fn rss_context(f: RssHashFunctions) -> u32 {
    let mut c = rss_type::VALID;
    for (bit, t) in [
        (RssHashFunctions::IPV4, rss_type::IPV4),
        (RssHashFunctions::IPV4_TCP, rss_type::TCP_IPV4),
        (RssHashFunctions::IPV4_UDP, rss_type::UDP_IPV4),
        (RssHashFunctions::IPV6, rss_type::IPV6),
        (RssHashFunctions::IPV6_TCP, rss_type::TCP_IPV6),
        (RssHashFunctions::IPV6_UDP, rss_type::UDP_IPV6),
    ] {
        if f.contains(bit) {
            c |= t;
        }
    }
    c
}

/// Key, hash types (L2NIC 65, or cmdq 5 when it is not supported), engine, enable: DPDK's order, docs/hw/hinic3.md §11.
pub(super) fn program_rss<R: RegisterSpace>(dev: &mut Hinic3<R>) -> Result<()> {
    let f = dev.func();
    let funcs = dev.state.config.rss.as_ref().map(|r| r.functions).unwrap_or(RssHashFunctions::ALL);
    let funcs = if funcs.0 == 0 { RssHashFunctions::ALL } else { funcs };
    let context = rss_context(funcs);
    dev.call(module::L2NIC, l2nic::CFG_RSS_HASH_KEY, &mgmt::rss_hash_key(f, &dev.rss_key).0, &[])?;
    let a = dev.call(module::L2NIC, l2nic::SET_RSS_CTX_TBL, &mgmt::rss_ctx_tbl(f, context).0, &[0xFF])?;
    if a.first() == Some(&0xFF) {
        dev.cmdq(ucode::SET_RSS_CONTEXT_TABLE, &[0, 0, 0, 0, context])?;
    }
    dev.call(module::L2NIC, l2nic::CFG_RSS_HASH_ENGINE, &mgmt::rss_hash_engine(f, ENGINE_TOEPLITZ).0, &[])?;
    // RSS_CFG.num_qps is unverified (docs/hw/hinic3.md §17 item 6): the queue count is written, as Linux does; DPDK
    // writes 0.
    dev.call(module::L2NIC, l2nic::RSS_CFG, &mgmt::rss_cfg(f, true, dev.state.config.rx_queues).0, &[])?;
    Ok(())
}

/// The indirection table through cmdq 4.
pub(super) fn program_reta<R: RegisterSpace>(dev: &mut Hinic3<R>) -> Result<()> {
    let t = super::queue_ctl::effective_reta(&dev.reta, &dev.rx_stopped);
    dev.cmdq(ucode::SET_RSS_INDIR_TABLE, &ctx::rss_indir_table(&t))
}

pub(super) fn stop<R: RegisterSpace>(dev: &mut Hinic3<R>) -> Result<()> {
    if !dev.state.started {
        return Ok(());
    }
    dev.state.stop()?;
    hw_stop(dev)
}

/// docs/hw/hinic3.md §14.4, best effort after the first failure is recorded.
fn hw_stop<R: RegisterSpace>(dev: &mut Hinic3<R>) -> Result<()> {
    let f = dev.func();
    let mut first: Option<Error> = None;
    let mut keep = |r: Result<Vec<u8>>| {
        if let Err(e) = r {
            first.get_or_insert(e);
        }
    };
    keep(dev.call(module::HILINK, mag::SET_PORT_ENABLE, &mgmt::set_port_enable(f, false).0, &[]));
    // num_qps as at enable (DPDK hinic3_set_vport_enable sends num_rqs both ways).
    let rqs = dev.state.config.rx_queues as u8;
    keep(dev.call(module::L2NIC, l2nic::SET_VPORT_ENABLE, &mgmt::set_vport_enable(f, false, rqs).0, &[]));
    // Drain: the hardware CI reaches each SQ's PI (the rings are back in the port: a dropped handle gives its ring
    // back, and the port refuses to stop while one is alive).
    let deadline = Instant::now() + dev.options.timing.drain;
    for t in &dev.tx {
        if let Some(t) = lock(t).as_ref() {
            // A hung SQ never drains: the watchdog said so, no need to wait it out.
            while t.hw_ci() != t.pi() && !t.hung() && Instant::now() < deadline {
                std::thread::yield_now();
            }
        }
    }
    std::thread::sleep(dev.options.timing.vport_settle);
    // RQ flush (docs/hw/hinic3.md §10.6, §14.6; cmdq 10, since NIC bit 25 HTN_FDIR is never negotiated): every
    // posted buffer comes back, and is freed once back, before the contexts are cleared. Only rings the port holds
    // (a ring whose handle is somehow still alive is left alone: the device must not be sent to memory in use).
    for q in 0..dev.rqs_live {
        if dev.rx.get(q as usize).is_some_and(|r| lock(r).is_some()) {
            keep(dev.cmdq(ucode::SET_RQ_FLUSH, &ctx::rq_flush(q)).map(|()| Vec::new()));
        }
    }
    dev.rqs_live = 0;
    let deadline = Instant::now() + dev.options.timing.drain;
    dev.rx_flushed = dev.rx.iter().filter_map(|r| lock(r).as_mut().map(|r| r.reclaim_flushed(deadline))).sum();
    keep(dev.call(module::L2NIC, l2nic::CLEAR_QP_RESOURCE, &mgmt::func_only(f).0, &[]));
    keep(dev.call(module::L2NIC, l2nic::SET_RX_MODE, &mgmt::set_rx_mode(f, 0).0, &[]));
    if dev.rss_on {
        keep(dev.call(module::L2NIC, l2nic::RSS_CFG, &mgmt::rss_cfg(f, false, 0).0, &[]));
        keep(dev.call(module::L2NIC, l2nic::RSS_TEMP_MGR, &mgmt::rss_temp_mgr(f, TEMPLATE_FREE, 0).0, &[]));
        dev.rss_on = false;
    }
    keep(dev.call(module::COMM, mgmt::comm::SET_VAT, &mgmt::clear_root_ctx(f).0, &[]));
    dev.intr_stop();
    dev.tx.clear();
    dev.rx.clear();
    *dev.link.lock().unwrap_or_else(|e| e.into_inner()) = LinkStatus::default();
    match first {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
