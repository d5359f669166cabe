//! The management CPU's commands (docs/hw/hinic3.md §7): each request is checked field by field against the §7.3
//! layout (exact length, our function ID, reserved bytes zero, values in range) and answered with the complete
//! response structure (docs/hw/hinic3.md §6.4). A malformed request is a recorded fault and status [`STATUS_BAD`]; an unknown
//! (module, command) is answered with status 0xFF "not supported", never with a silent success.

use super::stats::{PORT_STATS_LEN, VPORT_STATS_LEN};
use super::Core;

/// Module IDs (docs/hw/hinic3.md §7.1).
pub mod module {
    /// COMM.
    pub const COMM: u8 = 0;
    /// L2NIC.
    pub const L2NIC: u8 = 1;
    /// CFGM.
    pub const CFGM: u8 = 7;
    /// HILINK / MAG.
    pub const MAG: u8 = 14;
}

/// Status 0xFF: command not supported (docs/hw/hinic3.md §7.1).
pub const STATUS_UNSUPPORTED: u8 = 0xFF;
/// The model's status for a request that fails its field checks (the notes list no generic code; 1 is non-zero
/// and distinct from every code docs/hw/hinic3.md §7.1 gives a meaning).
pub const STATUS_BAD: u8 = 0x01;
/// Status 0x0C: table full (RSS templates, MAC table).
pub const STATUS_FULL: u8 = 0x0C;

/// A request body under inspection.
struct Req<'a> {
    b: &'a [u8],
    errs: Vec<String>,
}

impl Req<'_> {
    fn u8(&self, at: usize) -> u8 {
        self.b.get(at).copied().unwrap_or(0)
    }
    fn u16(&self, at: usize) -> u16 {
        u16::from_le_bytes([self.u8(at), self.u8(at + 1)])
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_le_bytes([self.u8(at), self.u8(at + 1), self.u8(at + 2), self.u8(at + 3)])
    }
    fn u64(&self, at: usize) -> u64 {
        u64::from(self.u32(at)) | u64::from(self.u32(at + 4)) << 32
    }
    /// Bytes `from..to` must be zero.
    fn zero(&mut self, from: usize, to: usize, what: &str) {
        let to = to.min(self.b.len());
        if from < to && self.b[from..to].iter().any(|&x| x != 0) {
            self.errs.push(format!("{what}: reserved bytes {from}..{to} not zero"));
        }
    }
    fn expect(&mut self, ok: bool, what: String) {
        if !ok {
            self.errs.push(what);
        }
    }
}

impl Core {
    /// Answers one management request: `(status, response body)`. The head's status byte is set by the caller.
    pub(crate) fn mgmt_command(&mut self, module: u8, cmd: u16, body: &[u8]) -> (u8, Vec<u8>) {
        let Some(len) = request_len(module, cmd) else {
            let mut resp = body.to_vec();
            resp.resize(resp.len().max(8), 0);
            return (STATUS_UNSUPPORTED, resp);
        };
        if let Some(&status) = self.inject.mgmt_errors.get(&(module, cmd)) {
            // The firmware failed the command: nothing of it takes effect.
            let mut resp = body.to_vec();
            resp.resize(resp.len().max(8), 0);
            return (status, resp);
        }
        let name = format!("module {module} cmd {cmd}");
        let mut r = Req { b: body, errs: Vec::new() };
        if !len.contains(&body.len()) {
            r.errs.push(format!(
                "{name}: request of {} bytes, the layout is {len:?} bytes (docs/hw/hinic3.md §7.3)",
                body.len()
            ));
        }
        r.zero(0, 8.min(body.len()), &format!("{name} head"));
        let mut resp = body.to_vec();
        if r.errs.is_empty() {
            self.dispatch(module, cmd, &mut r, &mut resp, &name);
        }
        let resp_len = match (module, cmd) {
            (module::L2NIC, 9) => VPORT_STATS_LEN,
            (module::MAG, 151) => PORT_STATS_LEN,
            _ => body.len(),
        };
        resp.resize(resp_len.max(8), 0);
        match (module, cmd) {
            (module::L2NIC, 9) => self.stats.vport_answer(&mut resp),
            (module::MAG, 151) => self.stats.port_answer(&mut resp),
            _ => {}
        }
        if !r.errs.is_empty() {
            for e in r.errs {
                self.fault(e);
            }
            return (STATUS_BAD, resp);
        }
        (resp[0], resp)
    }

    fn func_id(&self, r: &mut Req, at: usize, name: &str) {
        let f = r.u16(at);
        let own = self.config.func_id;
        r.expect(f == own, format!("{name}: func_id {f} at byte {at} is not this function's {own} (FUNC_ATTR0)"));
    }

    fn dispatch(&mut self, module: u8, cmd: u16, r: &mut Req, out: &mut [u8], name: &str) {
        let put16 = |out: &mut [u8], at: usize, v: u16| out[at..at + 2].copy_from_slice(&v.to_le_bytes());
        let put32 = |out: &mut [u8], at: usize, v: u32| out[at..at + 4].copy_from_slice(&v.to_le_bytes());
        let put64 = |out: &mut [u8], at: usize, v: u64| out[at..at + 8].copy_from_slice(&v.to_le_bytes());
        match (module, cmd) {
            (module::COMM, 0) => {
                self.func_id(r, 8, name);
                r.zero(10, 16, name);
                let flags = r.u64(16);
                r.expect(
                    flags != 0 && flags >> 20 == 0,
                    format!("{name} FUNC_RESET: reset_flag {flags:#x} (bits 0 to 19)"),
                );
                if r.errs.is_empty() {
                    self.func_reset(flags);
                }
            }
            (module::COMM, 1) | (module::L2NIC, 15) => {
                self.func_id(r, 8, name);
                let op = r.u8(10);
                r.expect(op <= 1, format!("{name} FEATURE_NEGO opcode {op}"));
                r.zero(11, 16, name);
                let offered = if module == module::COMM { self.config.comm_features } else { self.config.nic_features };
                if op == 0 {
                    r.zero(16, 48, name);
                    put64(out, 16, offered);
                } else {
                    let want = r.u64(16);
                    r.zero(24, 48, name);
                    r.expect(want & !offered == 0, format!("{name} FEATURE_NEGO set {want:#x} asks for bits {:#x} the device never offered ({offered:#x})", want & !offered));
                    if module == module::L2NIC {
                        self.mgmt.nic_features = Some(want);
                    }
                }
            }
            (module::COMM, 2) | (module::COMM, 3) => {
                self.func_id(r, 8, name);
                r.zero(10, 16, name);
            }
            (module::COMM, 5) => {
                r.zero(8, 48, name);
                out[8] = 1;
                out[9] = 1;
                out[13] = cmdq_count();
            }
            (module::COMM, 7) => {
                self.func_id(r, 8, name);
                let (svc, state) = (r.u16(10), r.u8(12));
                r.expect(
                    svc <= 1 && state <= 1,
                    format!("{name} SET_FUNC_SVC_USED_STATE svc_type {svc} used_state {state}"),
                );
                r.zero(13, 48, name);
                if svc == 0 {
                    self.mgmt.comm_used = state == 1;
                } else {
                    self.mgmt.nic_used = state == 1;
                }
            }
            (module::COMM, 20) => {
                self.func_id(r, 8, name);
                let q = usize::from(r.u8(10));
                r.expect(q < cmdq_count().into(), format!("{name} SET_CMDQ_CTXT cmdq_id {q}"));
                r.zero(11, 16, name);
                let (page, block) = (r.u64(16), r.u64(24));
                r.zero(32, 64, name);
                let ring = (page & super::cmdq::CTX_PFN) << 12;
                r.expect(
                    page & super::cmdq::CTX_HW_BUSY != 0,
                    format!("{name}: curr_wqe_page_pfn {page:#x} without hardware busy (bit 63)"),
                );
                r.expect(ring != 0 && (block & super::cmdq::CTX_PFN) << 12 == ring && block >> 52 == 0, format!("{name}: wq_block_pfn {block:#x} must repeat the ring PFN with start CI 0 (0-level CLA, docs/hw/hinic3.md §8.3)"));
                r.expect(
                    ring.is_multiple_of(super::ctx::WQ_ALIGN),
                    format!("{name}: cmdq {q} ring IOVA {ring:#x} is not 256 KiB-aligned (docs/hw/hinic3.md §9.3)"),
                );
                if r.errs.is_empty() {
                    let depth = self.cmdqs[q].depth;
                    self.cmdqs[q] = super::cmdq::Cmdq { ring, depth, ci: 0, wrapped: true };
                }
            }
            (module::COMM, 21) => {
                self.func_id(r, 8, name);
                r.zero(20, 32, name);
                let set_depth = r.u8(10);
                if set_depth == 1 {
                    let log2 = r.u8(11);
                    r.zero(12, 20, name);
                    r.expect((1..=12).contains(&log2), format!("{name} SET_VAT cmdq_depth log2 {log2}"));
                    if r.errs.is_empty() {
                        self.cmdqs.iter_mut().for_each(|c| c.depth = 1 << log2);
                    }
                } else {
                    r.expect(
                        set_depth == 0 && r.u8(11) == 0,
                        format!(
                            "{name} SET_VAT: set_cmdq_depth {set_depth} / cmdq_depth {} in a root-context use",
                            r.u8(11)
                        ),
                    );
                    let (buf, lro, mode, sq, rq) = (r.u16(12), r.u8(14), r.u8(15), r.u16(16), r.u16(18));
                    r.expect(
                        mode == 0,
                        format!("{name}: cmdq_mode {mode}: the model offers only the normal command queue"),
                    );
                    if buf == 0 && lro == 0 && sq == 0 && rq == 0 {
                        self.mgmt.root = None; // clear (docs/hw/hinic3.md §7.3 use c)
                    } else {
                        r.expect(lro <= 1, format!("{name}: lro_en {lro}"));
                        r.expect(
                            usize::from(buf) < super::RX_BUF_SIZES.len()
                                || self.config.comm_features & super::COMM_REAL_RX_BUF != 0,
                            format!("{name}: rx_buf_sz index {buf} outside the table of docs/hw/hinic3.md §10.4"),
                        );
                        r.expect(
                            (6..=16).contains(&sq) && (7..=17).contains(&rq),
                            format!("{name}: sq_depth {sq} / rq_depth {rq} (log2) out of range"),
                        );
                        // The trap of docs/hw/hinic3.md §10.4: the root context's index and SET_FUNC_TBL's size must
                        // name the same buffer size.
                        let bytes = super::rx_buf_bytes(buf, self.config.comm_features);
                        let tbl = usize::from(self.mgmt.rx_buf_size);
                        r.expect(
                            tbl == 0 || bytes == tbl,
                            format!("{name}: rx_buf_sz {buf} means {bytes} bytes, SET_FUNC_TBL said {tbl}"),
                        );
                        if r.errs.is_empty() {
                            self.mgmt.root =
                                Some(super::Root { rx_buf_sz: buf, sq_depth_log2: sq as u8, rq_depth_log2: rq as u8 });
                        }
                    }
                }
            }
            (module::COMM, 22) => {
                self.func_id(r, 8, name);
                let (op, ps) = (r.u8(10), r.u8(11));
                r.expect(op == 1 && ps <= 20, format!("{name} CFG_PAGESIZE opcode {op} page_size {ps}"));
                r.zero(12, 16, name);
                self.mgmt.wq_page_log2 = ps;
            }
            (module::COMM, 23) => {
                self.func_id(r, 8, name);
                let (op, idx) = (r.u8(10), r.u16(12));
                r.expect(
                    op <= 1 && u32::from(idx) < self.config.num_irqs,
                    format!("{name} CFG_MSIX_CTRL_REG opcode {op} index {idx}"),
                );
                r.zero(11, 12, name);
                r.zero(19, 24, name);
                if r.errs.is_empty() {
                    let v = &mut self.msix.vectors[usize::from(idx)];
                    if op == 0 {
                        let a = v.attr;
                        out[14..19].copy_from_slice(&[
                            a.pending_limit,
                            a.coalesce_timer,
                            a.resend_timer,
                            a.lli_timer,
                            a.lli_credit,
                        ]);
                    } else {
                        v.attr = super::intr::MsixAttr {
                            pending_limit: r.u8(14),
                            coalesce_timer: r.u8(15),
                            resend_timer: r.u8(16),
                            lli_timer: r.u8(17),
                            lli_credit: r.u8(18),
                        };
                    }
                }
            }
            (module::COMM, 25) => {
                self.func_id(r, 8, name);
                r.expect(r.u8(10) == 0, format!("{name} SET_DMA_ATTR entry {}", r.u8(10)));
                r.expect(
                    r.u8(12) <= 3 && r.u8(13) <= 3 && r.u8(14) <= 1 && r.u8(15) <= 1,
                    format!("{name}: at/ph/no_snooping/tph_en out of range"),
                );
                r.zero(16, 20, name);
                self.mgmt.dma_attr_set = true;
            }
            (module::COMM, 60) => {
                let t = r.u16(8);
                r.expect(t <= 4, format!("{name} GET_FW_VERSION fw_type {t}"));
                r.zero(10, 48, name);
                let v = self.config.fw_version.as_bytes();
                out[12..12 + v.len().min(15)].copy_from_slice(&v[..v.len().min(15)]);
            }
            (module::COMM, 61) => {
                r.zero(8, 128, name);
                out[9] = 2; // port_num
                out[10] = super::speed_code(self.config.speed_mbps);
                out[13] = 1; // pf_num
            }
            (module::COMM, 62) => {}
            (module::COMM, 64) => {
                self.func_id(r, 8, name);
                r.zero(10, 12, name);
                r.zero(15, 20, name);
            }
            (module::CFGM, 0) => {
                self.func_id(r, 8, name);
                r.zero(10, 336, name);
                let c = &self.config;
                out[15] = c.port_id;
                put16(out, 16, 1);
                out[18] = 1;
                put16(out, 28, 1);
                out[33] = c.valid_cos_bitmap;
                put16(out, 80, c.max_queues - 1);
                put16(out, 82, c.max_queues - 1);
                put16(out, 84, c.max_queues);
            }
            (module::L2NIC, 5) => {
                self.func_id(r, 8, name);
                r.zero(10, 12, name);
                let bitmap = r.u32(12);
                r.expect(bitmap & !0x7 == 0, format!("{name} SET_FUNC_TBL cfg_bitmap {bitmap:#x}: the model serves INIT, RX_BUF_SIZE and MTU (bit 3 is compact WQE, docs/hw/hinic3.md §12a)"));
                let (buf, mtu) = (r.u16(16), r.u16(18));
                r.zero(20, 56, name);
                if bitmap & 0x2 != 0 {
                    r.expect(
                        super::RX_BUF_SIZES.contains(&(buf as usize))
                            || self.config.comm_features & super::COMM_REAL_RX_BUF != 0,
                        format!("{name}: rx_wqe_buf_size {buf} not in the table of docs/hw/hinic3.md §10.4"),
                    );
                    if let Some(root) = self.mgmt.root {
                        let bytes = super::rx_buf_bytes(root.rx_buf_sz, self.config.comm_features);
                        r.expect(
                            bytes == usize::from(buf),
                            format!("{name}: rx_wqe_buf_size {buf}, the root context says {bytes} bytes"),
                        );
                    }
                    self.mgmt.rx_buf_size = buf;
                }
                if bitmap & 0x4 != 0 {
                    r.expect(
                        mtu == 0x3FFF || (256..=9600).contains(&mtu),
                        format!("{name}: mtu {mtu} (256 to 9600, or 0x3FFF at init)"),
                    );
                    self.mgmt.mtu = mtu;
                }
            }
            (module::L2NIC, 6) => {
                self.func_id(r, 8, name);
                r.zero(10, 12, name);
                let state = r.u8(12);
                r.expect(state <= 1, format!("{name} SET_VPORT_ENABLE state {state}"));
                r.expect(r.u8(14) == 0, format!("{name}: rx_compact_wqe_en set (docs/hw/hinic3.md §12a, not served)"));
                r.zero(15, 16, name);
                if r.errs.is_empty() && state == 1 && !self.mgmt.lro_set {
                    // Not refused (the firmware would take it), but the driver receives whatever LRO merges.
                    self.fault(format!(
                        "{name} SET_VPORT_ENABLE: RX started without L2NIC 13 CFG_RX_LRO since the reset, LRO left on \
                         (DPDK hinic3_set_lro sends it at every start, docs/hw/hinic3.md §7.3)"
                    ));
                }
                self.mgmt.vport_enabled = state == 1;
            }
            (module::L2NIC, 7) => {
                self.func_id(r, 8, name);
                r.zero(10, 12, name);
                let mode = r.u32(12);
                r.expect(mode & !0x1F == 0, format!("{name} SET_RX_MODE {mode:#x}"));
                self.mgmt.rx_mode = mode;
            }
            (module::L2NIC, 8) => {
                self.func_id(r, 8, name);
                let q = r.u32(16);
                let addr = r.u64(24);
                r.expect(
                    q < u32::from(self.config.max_queues),
                    format!("{name} SQ_CI_ATTR_SET l2nic_sqn {q} >= {}", self.config.max_queues),
                );
                r.expect(r.u8(13) <= 1, format!("{name}: intr_en {}", r.u8(13)));
                r.expect(
                    addr != 0 && (addr << 2).is_multiple_of(64),
                    format!("{name}: ci_addr {addr:#x} (IOVA >> 2 of a 64-byte aligned slot)"),
                );
                r.zero(20, 24, name);
                if r.errs.is_empty() {
                    self.mgmt.sq_ci_addr[q as usize] = Some(addr << 2);
                }
            }
            (module::L2NIC, 9) => {
                self.func_id(r, 8, name);
                r.zero(10, 12, name);
            }
            (module::L2NIC, 10) => {
                self.func_id(r, 8, name);
                r.zero(10, 12, name);
                self.stats.clear_vport();
            }
            (module::L2NIC, 11) => {
                self.func_id(r, 8, name);
                r.zero(10, 12, name);
                self.clear_queues();
            }
            (module::L2NIC, 13) => {
                self.func_id(r, 8, name);
                let (op, v4, v6, max) = (r.u8(10), r.u8(12), r.u8(13), r.u8(14));
                r.expect(op <= 1 && v4 <= 1 && v6 <= 1, format!("{name} CFG_RX_LRO fields"));
                r.expect(op == 0 || max >= 1, format!("{name} CFG_RX_LRO max_pkt_len {max} KiB (at least 1)"));
                r.zero(11, 12, name);
                r.zero(15, 28, name);
                if r.errs.is_empty() && op == 1 {
                    self.mgmt.lro = v4 == 1 || v6 == 1;
                    self.mgmt.lro_set = true;
                } else if op == 0 {
                    out[12] = u8::from(self.mgmt.lro);
                    out[13] = u8::from(self.mgmt.lro);
                }
            }
            (module::L2NIC, 14) => {
                let op = r.u8(8);
                r.expect(op <= 1, format!("{name} CFG_LRO_TIMER opcode"));
                r.zero(9, 12, name);
                if op == 1 {
                    self.mgmt.lro_timer = r.u32(12);
                } else {
                    out[12..16].copy_from_slice(&self.mgmt.lro_timer.to_le_bytes());
                }
            }
            (module::L2NIC, 20) | (module::L2NIC, 21) | (module::L2NIC, 22) => {
                self.func_id(r, 8, name);
                let vlan = r.u16(10);
                r.expect(vlan & 0x7FFF < 4096, format!("{name}: vlan_id {vlan:#x}"));
                r.zero(12, 14, name);
                let mac: [u8; 6] = body6(r.b, 14);
                if cmd == 20 {
                    out[14..20].copy_from_slice(&self.config.mac);
                } else if cmd == 21 {
                    r.expect(
                        mac[0] & 1 == 0 && mac != [0; 6],
                        format!("{name} SET_MAC {mac:02x?}: not a unicast address"),
                    );
                    if self.mgmt.macs.contains(&mac) {
                        out[0] = 0x06; // already exists (docs/hw/hinic3.md §7.1)
                    } else if self.mgmt.macs.len() >= 128 {
                        out[0] = STATUS_FULL;
                    } else {
                        self.mgmt.macs.push(mac);
                    }
                } else {
                    self.mgmt.macs.retain(|m| *m != mac);
                }
            }
            (module::L2NIC, 23) => {
                // UPDATE_MAC (docs/hw/hinic3.md §7.3): old_mac replaced by new_mac in the filter table; DPDK's
                // hinic3_update_mac sends it at every port start.
                self.func_id(r, 8, name);
                let vlan = r.u16(10);
                r.expect(vlan & 0x7FFF < 4096, format!("{name}: vlan_id {vlan:#x}"));
                r.zero(12, 14, name);
                r.zero(20, 22, name);
                let (old, new): ([u8; 6], [u8; 6]) = (body6(r.b, 14), body6(r.b, 22));
                r.expect(
                    new[0] & 1 == 0 && new != [0; 6],
                    format!("{name} UPDATE_MAC to {new:02x?}: not a unicast address"),
                );
                self.mgmt.macs.retain(|m| *m != old);
                if self.mgmt.macs.contains(&new) {
                    out[0] = 0x06; // already exists (docs/hw/hinic3.md §7.1)
                } else if self.mgmt.macs.len() >= 128 {
                    out[0] = STATUS_FULL;
                } else {
                    self.mgmt.macs.push(new);
                }
            }
            (module::L2NIC, 25) => {
                self.func_id(r, 8, name);
                r.expect(r.u8(10) <= 1 && r.u16(12) < 4096, format!("{name} CFG_FUNC_VLAN fields"));
            }
            (module::L2NIC, 26) => {
                self.func_id(r, 8, name);
                r.expect(r.u32(12) & !3 == 0, format!("{name} SET_VLAN_FILTER_EN ctrl {:#x}", r.u32(12)));
                r.zero(10, 12, name);
                self.mgmt.vlan_filter = r.u32(12);
            }
            (module::L2NIC, 27) => {
                self.func_id(r, 8, name);
                r.expect(r.u8(10) <= 1, format!("{name} SET_RX_VLAN_OFFLOAD {}", r.u8(10)));
                r.zero(11, 16, name);
                self.mgmt.vlan_strip = r.u8(10) == 1;
            }
            (module::L2NIC, 35) => {
                let (q, en) = (r.u32(8), r.u8(12));
                r.expect(
                    q < u32::from(self.config.max_queues) && en <= 1,
                    format!("{name} SET_RQ_ENABLE_HTN rq_id {q} enable {en}"),
                );
                r.zero(13, 16, name);
            }
            (module::L2NIC, 60) => {
                self.func_id(r, 8, name);
                let en = r.u8(10);
                r.expect(
                    en <= 1 && r.u8(11) == 0,
                    format!("{name} RSS_CFG rss_en {en} rq_priority_number {}", r.u8(11)),
                );
                // num_qps at 20 is unverified (docs/hw/hinic3.md §17 item 6): the model accepts any value and ignores it.
                self.mgmt.rss.enabled = en == 1;
            }
            (module::L2NIC, 61) => {
                self.func_id(r, 8, name);
                match r.u8(10) {
                    1 => {
                        if self.mgmt.rss.template.is_some() {
                            out[0] = STATUS_FULL;
                        } else {
                            self.mgmt.rss.template = Some(0);
                            out[11] = 0;
                        }
                    }
                    2 => self.mgmt.rss.template = None,
                    c => r.errs.push(format!("{name} RSS_TEMP_MGR cmd {c}")),
                }
            }
            (module::L2NIC, 62) | (module::L2NIC, 65) => {
                self.func_id(r, 8, name);
                r.zero(10, 12, name);
                if cmd == 65 {
                    let ctx = r.u32(12);
                    r.expect(
                        ctx & (1 << 23) != 0 && ctx & 0x7F_FFFF == 0,
                        format!("{name} RSS context {ctx:#x}: valid bit 23 and hash types in 31:24 only (docs/hw/hinic3.md §11)"),
                    );
                    self.mgmt.rss.hash_types = ctx;
                } else {
                    put32(out, 12, self.mgmt.rss.hash_types);
                }
            }
            (module::L2NIC, 63) => {
                self.func_id(r, 8, name);
                let op = r.u8(10);
                r.expect(op <= 1, format!("{name} CFG_RSS_HASH_KEY opcode {op}"));
                if op == 1 {
                    self.mgmt.rss.key.copy_from_slice(&r.b[12..52]);
                } else {
                    out[12..52].copy_from_slice(&self.mgmt.rss.key);
                }
            }
            (module::L2NIC, 64) => {
                self.func_id(r, 8, name);
                let (op, engine) = (r.u8(10), r.u8(11));
                r.expect(op <= 1 && engine <= 1, format!("{name} CFG_RSS_HASH_ENGINE opcode {op} engine {engine}"));
                if op == 1 {
                    self.mgmt.rss.toeplitz = engine == 1;
                } else {
                    out[11] = u8::from(self.mgmt.rss.toeplitz);
                }
            }
            (module::L2NIC, 101) | (module::L2NIC, 110) | (module::L2NIC, 113) => {}
            (module::MAG, 5) | (module::MAG, 7) => {
                let p = r.u8(8);
                r.expect(
                    p == self.config.port_id,
                    format!("{name}: port {p} is not this function's port {}", self.config.port_id),
                );
                r.zero(10, 12, name);
                out[9] = if cmd == 5 { self.mgmt.port_enable } else { u8::from(self.link_up()) };
            }
            (module::MAG, 6) => {
                self.func_id(r, 8, name);
                let st = r.u8(12);
                r.expect(st <= 3, format!("{name} SET_PORT_ENABLE state {st}"));
                r.zero(10, 12, name);
                r.zero(13, 16, name);
                self.mgmt.port_enable = st;
            }
            (module::MAG, 8) => {
                self.func_id(r, 8, name);
                let f = r.u8(12);
                r.expect(f <= 2, format!("{name} SET_LINK_FOLLOW follow {f}"));
                r.zero(13, 16, name);
                self.mgmt.link_follow = f;
            }
            (module::MAG, 151) | (module::MAG, 152) => {
                let p = r.u8(8);
                r.expect(p == self.config.port_id, format!("{name}: port {p} is not {}", self.config.port_id));
                r.zero(9, 12, name);
                if cmd == 152 {
                    self.stats.clear_port();
                }
            }
            (module::MAG, 153) => {
                let p = r.u8(8);
                r.expect(p == self.config.port_id, format!("{name}: port {p} is not {}", self.config.port_id));
                r.zero(9, 36, name);
                out[12] = 1; // multi-mode optical
                out[13] = 0;
                out[14] = 2; // autoneg off
                out[15] = 1; // full duplex
                             // The port information follows the link: speed "unset" (0) while it is down, so a flap changes it.
                out[16] = if self.link_up() { super::speed_code(self.config.speed_mbps) } else { 0 };
                out[17] = 3; // no FEC
            }
            _ => unreachable!("request_len lists only handled commands"),
        }
    }
}

fn body6(b: &[u8], at: usize) -> [u8; 6] {
    let mut m = [0u8; 6];
    if b.len() >= at + 6 {
        m.copy_from_slice(&b[at..at + 6]);
    }
    m
}

fn cmdq_count() -> u8 {
    super::cmdq::MAX_CMDQS as u8
}

/// The request length(s) the model takes for each command it answers (docs/hw/hinic3.md §7.3); `None` for unknown.
pub(crate) fn request_len(module: u8, cmd: u16) -> Option<std::ops::RangeInclusive<usize>> {
    let one = |n: usize| Some(n..=n);
    match (module, cmd) {
        (module::COMM, 0) => one(24),
        (module::COMM, 1) | (module::COMM, 5) | (module::COMM, 7) | (module::COMM, 60) => one(48),
        (module::COMM, 2) | (module::COMM, 3) | (module::COMM, 22) => one(16),
        // Linux sends 32 bytes, DPDK 64 (docs/hw/hinic3.md §7.3): both are taken, and answered with the request's length.
        (module::COMM, 20) => Some(32..=64),
        (module::COMM, 21) => one(32),
        (module::COMM, 23) | (module::COMM, 62) => one(24),
        (module::COMM, 25) | (module::COMM, 64) => one(20),
        (module::COMM, 61) => one(128),
        (module::CFGM, 0) => one(336),
        (module::L2NIC, 5) => one(56),
        (module::L2NIC, 6) | (module::L2NIC, 7) | (module::L2NIC, 14) | (module::L2NIC, 25) | (module::L2NIC, 26) => {
            one(16)
        }
        (module::L2NIC, 27) | (module::L2NIC, 35) | (module::L2NIC, 61) | (module::L2NIC, 62) => one(16),
        (module::L2NIC, 65) | (module::L2NIC, 64) => one(16),
        (module::L2NIC, 8) => one(32),
        (module::L2NIC, 9) | (module::L2NIC, 10) | (module::L2NIC, 11) | (module::L2NIC, 113) => one(12),
        (module::L2NIC, 13) | (module::L2NIC, 23) => one(28),
        (module::L2NIC, 15) => one(48),
        (module::L2NIC, 20)
        | (module::L2NIC, 21)
        | (module::L2NIC, 22)
        | (module::L2NIC, 101)
        | (module::L2NIC, 110) => one(20),
        (module::L2NIC, 60) => one(24),
        (module::L2NIC, 63) => one(52),
        (module::MAG, 5) | (module::MAG, 7) | (module::MAG, 151) | (module::MAG, 152) => one(12),
        (module::MAG, 6) | (module::MAG, 8) => one(16),
        (module::MAG, 153) => one(36),
        _ => None,
    }
}
