//! DPDK's EAL endpoints beyond `/eal/params`: the lcores (`/eal/lcore/list`, `/eal/lcore/info,N`,
//! `/eal/lcore/usage`, DPDK 23.03's shapes) and the memory (`/eal/heap_list`, `/eal/heap_info,N`,
//! `/eal/memzone_list`, `/eal/memzone_info,N`), which DPDK's `dpdk-telemetry-exporter.py` reads for its cpu and
//! memory metrics.
//!
//! The heap is the EAL's allocator ([`hugepage::HeapStats`]): heap 0, `socket_0`, as DPDK names its one heap per
//! NUMA node. The memzones are the published mempools' regions (`MP_<pool>`, as `rte_mempool_create` names
//! them). Cycle counts come from the application, as in DPDK (`rte_lcore_register_usage_cb`): without a
//! [`LcoreUsageFn`], `/eal/lcore/info` has no `total_cycles`/`busy_cycles` and `/eal/lcore/usage` lists no lcore.

use std::sync::Arc;

use super::{Telemetry, Value};

/// An lcore as telemetry shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LcoreView {
    /// The lcore id.
    pub lcore: u32,
    /// Its NUMA node (DPDK's `socket`).
    pub socket: u32,
    /// The CPUs it may run on.
    pub cpuset: Vec<u32>,
}

/// Cycles an lcore has spent, as DPDK's `struct rte_lcore_usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LcoreUsage {
    /// Cycles since the lcore began its work.
    pub total_cycles: u64,
    /// Of those, the cycles spent on work (polls that moved packets).
    pub busy_cycles: u64,
}

/// The application's answer for an lcore's usage (`None`: it has none for this lcore), as DPDK's
/// `rte_lcore_usage_cb`. Called from telemetry threads: it must read shared counters, never wait on an lcore.
pub type LcoreUsageFn = Arc<dyn Fn(u32) -> Option<LcoreUsage> + Send + Sync>;

/// DPDK's heap name for NUMA node 0's heap.
pub const HEAP_NAME: &str = "socket_0";

/// A mempool region as a memzone.
#[derive(Debug, Clone)]
pub(super) struct Memzone {
    pub(super) name: String,
    pub(super) addr: u64,
    pub(super) len: u64,
    pub(super) page_size: u64,
}

/// The NUMA node of `cpu`, from sysfs (`cpuN/nodeM`); 0 where the kernel shows none.
pub fn numa_node_of(cpu: u32) -> u32 {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}");
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .find_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
        .unwrap_or(0)
}

/// DPDK's parameter check for an id: decimal digits and nothing else.
fn id_param(p: Option<&str>) -> Option<u64> {
    p.filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))?.parse().ok()
}

fn hex(addr: u64) -> Value {
    Value::from(format!("{addr:#x}"))
}

pub(super) fn register(t: &Telemetry) {
    t.add("/eal/lcore/list", "List of lcore ids. Takes no parameters", |t, _| {
        Value::uints(t.lcores().iter().map(|l| l.lcore as u64))
    });
    t.add("/eal/lcore/info", "Returns lcore info. Parameters: int lcore_id", |t, p| {
        let Some(id) = id_param(p) else { return Value::Null };
        let lcores = t.lcores();
        let Some(l) = lcores.iter().find(|l| l.lcore as u64 == id) else { return Value::Null };
        let mut fields = vec![
            ("lcore_id", Value::UInt(l.lcore as u64)),
            ("socket", Value::UInt(l.socket as u64)),
            // Every lcore of -l/--lcores is an EAL thread (DPDK's ROLE_RTE); there are no service cores.
            ("role", Value::from("RTE")),
            ("cpuset", Value::uints(l.cpuset.iter().map(|&c| c as u64))),
        ];
        if let Some(u) = t.lcore_usage(l.lcore) {
            fields.push(("total_cycles", Value::UInt(u.total_cycles)));
            fields.push(("busy_cycles", Value::UInt(u.busy_cycles)));
        }
        Value::object(fields)
    });
    t.add("/eal/lcore/usage", "Returns lcore cycles usage. Takes no parameters", |t, _| {
        let used: Vec<(u32, LcoreUsage)> =
            t.lcores().iter().filter_map(|l| Some((l.lcore, t.lcore_usage(l.lcore)?))).collect();
        Value::object([
            ("lcore_ids", Value::uints(used.iter().map(|(l, _)| *l as u64))),
            ("total_cycles", Value::uints(used.iter().map(|(_, u)| u.total_cycles))),
            ("busy_cycles", Value::uints(used.iter().map(|(_, u)| u.busy_cycles))),
        ])
    });
    t.add("/eal/heap_list", "List of heap index setup. Takes no parameters", |t, _| {
        // DPDK lists the heaps that have memory.
        let has = t.heap_usage().is_some_and(|u| u.heap_size > 0);
        Value::uints(has.then_some(0))
    });
    t.add("/eal/heap_info", "Returns malloc heap stats. Parameters: int heap_id", |t, p| {
        let (Some(0), Some(u)) = (id_param(p), t.heap_usage()) else { return Value::Null };
        Value::object([
            // DPDK 22.11 spells it "Head id"; 23.03 and later (the exporter's versions) "Heap_id".
            ("Heap_id", Value::UInt(0)),
            ("Name", Value::from(HEAP_NAME)),
            ("Heap_size", Value::UInt(u.heap_size)),
            ("Free_size", Value::UInt(u.free_size)),
            ("Alloc_size", Value::UInt(u.alloc_size)),
            ("Greatest_free_size", Value::UInt(u.greatest_free_size)),
            ("Alloc_count", Value::UInt(u.alloc_count)),
            ("Free_count", Value::UInt(u.free_count)),
        ])
    });
    t.add("/eal/memzone_list", "List of memzone index reserved. Takes no parameters", |t, _| {
        Value::uints(0..t.memzones().len() as u64)
    });
    t.add("/eal/memzone_info", "Returns memzone info. Parameters: int mz_id", |t, p| {
        let Some(id) = id_param(p) else { return Value::Null };
        let zones = t.memzones();
        let Some(z) = zones.get(id as usize) else { return Value::Null };
        let base = z.addr & !(z.page_size - 1);
        let used = (z.addr + z.len - base).div_ceil(z.page_size);
        Value::object([
            ("Zone", Value::UInt(id)),
            ("Name", Value::from(z.name.as_str())),
            ("Length", Value::UInt(z.len)),
            ("Address", hex(z.addr)),
            ("Socket", Value::UInt(0)),
            ("Flags", Value::UInt(0)),
            ("Hugepage_size", Value::UInt(z.page_size)),
            ("Hugepage_base", hex(base)),
            ("Hugepage_used", Value::UInt(used)),
        ])
    });
}
