//! Bring-up (docs/hw/hinic3.md §3.2, §14.1) and close (§14.5).

use std::sync::{Arc, Mutex};

use drvkit::bar::RegisterSpace;
use drvkit::dma::DmaMapper;
use hugepage::Allocator;
use pktio::{LinkStatus, MacAddr, PortConfig, PortState, Result};

use super::{Bars, Ctrl, Hinic3, Identity, Options, DEFAULT_RSS_KEY};
use crate::aeq::Aeq;

/// AEQs DPDK programs at most (HINIC3_MAX_AEQS).
const MAX_AEQS: u32 = 4;
use crate::cmdq::{Cmdq, CMDQ_DEPTH};
use crate::error::Error;
use crate::mbox::Mbox;
use crate::mgmt::{self, comm, module, DevCap};
use crate::regs::{self, attr0, attr1, attr2, attr6, msi_clr, BeRegs, ATTR45_DISABLED};
use crate::stats::VportStats;

/// COMM feature bit 8: only the enhanced command queue (docs/hw/hinic3.md §12, §12a.3), which this driver refuses.
const COMM_ONLY_ENHANCE_CMDQ: u64 = 1 << 8;
/// Command queue types (docs/hw/hinic3.md §8.1).
const CMDQ_SYNC: u8 = 0;
const CMDQ_ASYNC: u8 = 1;

pub(super) fn open<R: RegisterSpace>(
    bars: Bars<R>,
    mapper: Arc<dyn DmaMapper>,
    allocator: Allocator,
    options: Options,
) -> Result<Hinic3<R>> {
    let name = options.name.clone();
    let t = options.timing;
    let regs = BeRegs::new(bars.cfg.clone());
    let fail = |e: Error| e.at(&name);
    if options.wq_page_log2 > crate::wq::MAX_WQ_PAGE_LOG2 {
        return Err(Error::Unsupported(format!(
            "WQ page size code {} (4 KiB << {0}): this driver takes 0 (4 KiB) to 8 (1 MiB)",
            options.wq_page_log2
        ))
        .at(&name));
    }
    // docs/hw/hinic3.md §3.2 step 1: firmware ready.
    regs.poll_with(regs::FUNC_ATTR1, t.fw_ready, std::time::Duration::from_millis(1), |v| {
        v != u32::MAX && v & attr1::MGMT_INIT_DONE != 0
    })
    .map_err(|e| {
        fail(Error::Timeout {
            what: "management CPU ready",
            register: "FUNC_ATTR1",
            last_value: e.last,
            budget: t.fw_ready,
        })
    })?;
    // Step 2: attributes.
    let a0 = regs.read(regs::FUNC_ATTR0);
    let a1 = regs.read(regs::FUNC_ATTR1);
    let a2 = regs.read(regs::FUNC_ATTR2);
    if attr0::FUNC_TYPE.get(a0) != 0 {
        return Err(fail(Error::Unsupported("a VF (FUNC_ATTR0 type 1): this driver takes PFs only".into())));
    }
    let func_id = attr0::GLOBAL_IDX.get(a0) as u16;
    let pci_intf = attr0::PCI_INTF_IDX.get(a0);
    let num_aeqs = 1 << attr1::AEQS_LOG2.get(a1);
    if num_aeqs < 2 {
        return Err(fail(Error::Unsupported(format!(
            "{num_aeqs} AEQ: answers come on AEQ 1, two are needed (docs/hw/hinic3.md §4)"
        ))));
    }
    // Step 3: doorbells and outbound DMA enabled.
    for (reg, what, rname) in
        [(regs::FUNC_ATTR4, "doorbell enable", "FUNC_ATTR4"), (regs::FUNC_ATTR5, "outbound enable", "FUNC_ATTR5")]
    {
        regs.poll_with(reg, t.db_outbound, std::time::Duration::from_millis(1), |v| v & ATTR45_DISABLED == 0)
            .map_err(|e| fail(Error::Timeout { what, register: rname, last_value: e.last, budget: t.db_outbound }))?;
    }
    // Step 4: PPF election, then MPF (PF only, with the mgmt BAR).
    let mgmt_bar = bars.mgmt.as_ref().map(|m| BeRegs::new(m.clone()));
    // The election result only tells whether this PF is the PPF; nothing else uses the mgmt BAR.
    let mut ppf = false;
    if let Some(m) = &mgmt_bar {
        let idx = drvkit::reg::Field::new(5, 0);
        m.write_field(regs::PPF_ELECTION, idx, func_id as u32);
        ppf = idx.get(m.read(regs::PPF_ELECTION)) == func_id as u32;
        if ppf {
            m.write_field(regs::MPF_ELECTION, drvkit::reg::Field::new(4, 0), func_id as u32);
        }
    }
    // Step 5: every MSI-X vector masked (nothing here interrupts).
    for v in 0..attr2::IRQS.get(a2) {
        regs.write(regs::FUNC_MSI_CLR_WR, msi_clr::SET_MASK | msi_clr::INDEX.val(v));
    }
    // Step 6: PF status INIT.
    regs.write_field(regs::FUNC_ATTR6, attr6::PF_STATUS, attr6::STATUS_INIT);
    // docs/hw/hinic3.md §14.1 steps 3, 4: the AEQs and the mailbox.
    let aeq0 = Aeq::new(&regs, &allocator, &mapper, 0, pci_intf, &name)?;
    let aeq1 = Aeq::new(&regs, &allocator, &mapper, 1, pci_intf, &name)?;
    let spare_aeqs = (2..num_aeqs.min(MAX_AEQS))
        .map(|q| Aeq::new(&regs, &allocator, &mapper, q, pci_intf, &name))
        .collect::<Result<Vec<_>>>()?;
    let mbox = Mbox::new(&regs, &allocator, &mapper, func_id, [aeq0, aeq1], t.mbox, &name)?;
    let mut dev = Hinic3 {
        state: PortState::new(
            Hinic3::<R>::info_for(&name, &DevCap { port_id: 0, valid_cos_bitmap: 1, max_sqs: 1, max_rqs: 1 }),
            MacAddr::ZERO,
            PortConfig::default(),
        ),
        options,
        regs,
        db: bars.db.clone(),
        mapper,
        allocator,
        ctrl: Mutex::new(Some(Ctrl { mbox, cmdq: None, async_cmdq: None, spare_aeqs })),
        id: Identity {
            func_id,
            pci_intf,
            num_aeqs,
            ppf,
            comm_features: 0,
            nic_features: 0,
            cap: DevCap { port_id: 0, valid_cos_bitmap: 1, max_sqs: 1, max_rqs: 1 },
            mac: MacAddr::ZERO,
            fw_version: None,
            board: None,
        },
        link: Mutex::new(LinkStatus::default()),
        rx: Vec::new(),
        tx: Vec::new(),
        tx_path: None,
        rss_key: DEFAULT_RSS_KEY,
        reta: vec![0; 256],
        rss_on: false,
        rqs_live: 0,
        rx_flushed: 0,
        rx_stopped: Vec::new(),
        tx_stopped: Vec::new(),
        rx_csum: Vec::new(),
        rx_csum_base: Vec::new(),
        vport_base: VportStats::default(),
        port_base: Default::default(),
        tx_hang: Vec::new(),
        tx_watch: Vec::new(),
        closed: false,
        keep_alive: None,
        irq: None,
        vectors: Vec::new(),
        lsc: None,
    };
    // From here a failure drops `dev`, whose close undoes what was done.
    dev.init_functions()?;
    Ok(dev)
}

impl<R: RegisterSpace> Hinic3<R> {
    /// docs/hw/hinic3.md §14.1 steps 6 to 19.
    fn init_functions(&mut self) -> Result<()> {
        let f = self.func();
        // Step 5: board and firmware version, in DPDK's order (hinic3_get_board_info, hinic3_get_mgmt_version):
        // only reported, so a firmware that refuses them does not stop the port (DPDK tolerates the board failing).
        self.id.board = self
            .call(module::COMM, comm::GET_BOARD_INFO, &mgmt::get_board_info().0, &[])
            .ok()
            .and_then(|a| mgmt::BoardInfo::decode(&a));
        self.id.fw_version = self
            .call(module::COMM, comm::GET_FW_VERSION, &mgmt::get_fw_version(comm::FW_TYPE_MPU).0, &[])
            .ok()
            .and_then(|a| mgmt::fw_version(&a));
        self.call(module::COMM, comm::FUNC_RESET, &mgmt::func_reset(f, comm::RESET_FLAGS).0, &[])?;
        let a = self.call(module::COMM, comm::FEATURE_NEGO, &mgmt::feature_nego(f, false, 0).0, &[])?;
        self.id.comm_features = if a.len() >= 24 { mgmt::get_u64(&a, 16) } else { 0 };
        if self.id.comm_features & COMM_ONLY_ENHANCE_CMDQ != 0 {
            return Err(Error::Unsupported(
                "the firmware offers only the enhanced command queue (COMM feature bit 8, docs/hw/hinic3.md §12a.3)"
                    .into(),
            )
            .at(&self.options.name));
        }
        // COMM bit 3: from now on requests go inline in 48-byte segments, as Linux sends them (docs/hw/hinic3.md §6.3).
        let inline = self.id.comm_features & crate::mbox::COMM_MBOX_SEGMENT != 0;
        if let Some(c) = self.ctrl.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            c.mbox.set_inline(inline);
        }
        self.call(module::COMM, comm::SET_FUNC_SVC_USED_STATE, &mgmt::svc_used_state(f, 0, true).0, &[])?;
        self.call(module::COMM, comm::SET_DMA_ATTR, &mgmt::set_dma_attr(f).0, &[])?;
        self.call(module::COMM, comm::CFG_PAGESIZE, &mgmt::cfg_pagesize(f, self.options.wq_page_log2).0, &[])?;
        // Step 12: both command queues, SYNC (id 0) and ASYNC (id 1), each with its own ring, as DPDK's
        // hinic3_set_cmdq_ctxts sets both contexts (docs/hw/hinic3.md §8.1); then their depth. Commands go through SYNC
        // only; the ASYNC ring is kept so that the context the firmware holds never names freed memory.
        let new_cmdq =
            || Cmdq::new(&self.db, &self.allocator, &self.mapper, self.options.timing.cmdq, &self.options.name);
        let (cmdq, async_cmdq) = (new_cmdq()?, new_cmdq()?);
        for (id, q) in [(CMDQ_SYNC, &cmdq), (CMDQ_ASYNC, &async_cmdq)] {
            self.call(module::COMM, comm::SET_CMDQ_CTXT, &mgmt::set_cmdq_ctxt(f, id, q.ring_iova()).0, &[])?;
        }
        self.call(module::COMM, comm::SET_VAT, &mgmt::set_cmdq_depth(f, CMDQ_DEPTH as u16).0, &[])?;
        if let Some(c) = self.ctrl.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            c.cmdq = Some(cmdq);
            c.async_cmdq = Some(async_cmdq);
        }
        // Step 13: events may come now.
        self.regs.write_field(regs::FUNC_ATTR6, attr6::PF_STATUS, attr6::STATUS_ACTIVE);
        let a = self.call(module::CFGM, mgmt::cfgm::GET_DEV_CAP, &mgmt::get_dev_cap(f).0, &[])?;
        self.id.cap = DevCap::decode(&a).ok_or_else(|| {
            Error::BadAnswer {
                module: module::CFGM,
                module_name: "CFGM",
                command: 0,
                reason: format!("GET_DEV_CAP answer of {} bytes", a.len()),
            }
            .at(&self.options.name)
        })?;
        let a = self.call(module::L2NIC, mgmt::l2nic::FEATURE_NEGO, &mgmt::feature_nego(f, false, 0).0, &[])?;
        self.id.nic_features = if a.len() >= 24 { mgmt::get_u64(&a, 16) } else { 0 };
        let a = self.call(module::L2NIC, mgmt::l2nic::GET_MAC, &mgmt::mac(f, 0, [0; 6]).0, &[])?;
        let mut mac = [0u8; 6];
        if a.len() >= 20 {
            mac.copy_from_slice(&a[14..20]);
        }
        let mut mac = MacAddr(mac);
        if mac == MacAddr::ZERO || mac.is_multicast() {
            // No usable factory address: a locally administered one from the function ID (DPDK picks a random one).
            mac = MacAddr::local_from(f as u32);
        }
        self.id.mac = mac;
        self.call(module::L2NIC, mgmt::l2nic::SET_MAC, &mgmt::mac(f, 0, mac.octets()).0, &[0x06])?;
        self.call(module::HILINK, mgmt::mag::SET_LINK_FOLLOW, &mgmt::set_link_follow(f, 1).0, &[0xFF])?;
        let info = Self::info_for(&self.options.name, &self.id.cap);
        self.state = PortState::new(info, mac, PortConfig::default());
        self.reta = vec![0; 256];
        Ok(())
    }
}

/// Close (docs/hw/hinic3.md §14.5): DEL_MAC, link follow 0, PF status INIT, the command queue gone, page size back to 4
/// KiB, COMM unused, the mailbox write-back cleared, the AEQs stopped. Best effort: the device is left for the kernel
/// driver.
pub(super) fn close<R: RegisterSpace>(dev: &mut Hinic3<R>) {
    if dev.closed {
        return;
    }
    dev.closed = true;
    let f = dev.func();
    let mac = dev.state.mac;
    let _ = dev.call(module::L2NIC, mgmt::l2nic::DEL_MAC, &mgmt::mac(f, 0, mac.octets()).0, &[]);
    let _ = dev.call(module::HILINK, mgmt::mag::SET_LINK_FOLLOW, &mgmt::set_link_follow(f, 0).0, &[0xFF]);
    dev.regs.write_field(regs::FUNC_ATTR6, attr6::PF_STATUS, attr6::STATUS_INIT);
    if let Some(c) = dev.ctrl.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        c.cmdq = None;
        c.async_cmdq = None;
    }
    let _ = dev.call(module::COMM, comm::CFG_PAGESIZE, &mgmt::cfg_pagesize(f, 0).0, &[]);
    let _ = dev.call(module::COMM, comm::SET_FUNC_SVC_USED_STATE, &mgmt::svc_used_state(f, 0, false).0, &[]);
    if let Some(c) = dev.ctrl.lock().unwrap_or_else(|e| e.into_inner()).take() {
        c.mbox.shutdown();
        for q in &c.spare_aeqs {
            q.shutdown();
        }
    }
}
