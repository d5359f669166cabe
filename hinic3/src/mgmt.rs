//! Management commands (docs/hw/hinic3.md §7): module and command numbers, and each request as an explicit
//! little-endian byte layout of natural C alignment with the 8-byte head zeroed (docs/hw/hinic3.md §7.1, §16a). Every
//! encoder returns the whole structure at the size the notes give, reserved bytes zero.

use drvkit::reg::{bit, bit64, Field64};

/// Module IDs (docs/hw/hinic3.md §7.1).
pub mod module {
    /// COMM.
    pub const COMM: u8 = 0;
    /// L2NIC.
    pub const L2NIC: u8 = 1;
    /// CFGM.
    pub const CFGM: u8 = 7;
    /// HILINK (MAG).
    pub const HILINK: u8 = 14;
}

/// COMM commands (docs/hw/hinic3.md §7.2).
pub mod comm {
    /// FUNC_RESET.
    pub const FUNC_RESET: u16 = 0;
    /// FEATURE_NEGO.
    pub const FEATURE_NEGO: u16 = 1;
    /// SET_FUNC_SVC_USED_STATE.
    pub const SET_FUNC_SVC_USED_STATE: u16 = 7;
    /// SET_CMDQ_CTXT.
    pub const SET_CMDQ_CTXT: u16 = 20;
    /// SET_VAT (root context, cmdq depth).
    pub const SET_VAT: u16 = 21;
    /// CFG_PAGESIZE.
    pub const CFG_PAGESIZE: u16 = 22;
    /// CFG_MSIX_CTRL_REG (per-vector coalescing, docs/hw/hinic3.md §5.5).
    pub const CFG_MSIX_CTRL_REG: u16 = 23;
    /// SET_DMA_ATTR.
    pub const SET_DMA_ATTR: u16 = 25;
    /// GET_FW_VERSION.
    pub const GET_FW_VERSION: u16 = 60;
    /// GET_BOARD_INFO.
    pub const GET_BOARD_INFO: u16 = 61;
    /// GET_FW_VERSION's fw_type for the management CPU's firmware (DPDK HINIC3_FW_VER_TYPE_MPU).
    pub const FW_TYPE_MPU: u16 = 1;
    /// COMM feature bit 9 USE_REAL_RX_BUF_SIZE: the root context's rx_buf_sz is in bytes, not a table index
    /// (docs/hw/hinic3.md §10.4, DPDK `get_hw_rx_buf_size`).
    pub const FEATURE_USE_REAL_RX_BUF_SIZE: u64 = 1 << 9;
    /// DPDK's FUNC_RESET flags: NIC | COMM | FLUSH | MQM | SMF | command channel (docs/hw/hinic3.md §7.3).
    pub const RESET_FLAGS: u64 = 0x3407;
}

/// CFGM commands.
pub mod cfgm {
    /// GET_DEV_CAP.
    pub const GET_DEV_CAP: u16 = 0;
}

/// L2NIC commands (docs/hw/hinic3.md §7.2).
pub mod l2nic {
    /// SET_FUNC_TBL.
    pub const SET_FUNC_TBL: u16 = 5;
    /// SET_VPORT_ENABLE.
    pub const SET_VPORT_ENABLE: u16 = 6;
    /// SET_RX_MODE.
    pub const SET_RX_MODE: u16 = 7;
    /// SQ_CI_ATTR_SET.
    pub const SQ_CI_ATTR_SET: u16 = 8;
    /// GET_VPORT_STAT.
    pub const GET_VPORT_STAT: u16 = 9;
    /// CLEAN_VPORT_STAT.
    pub const CLEAN_VPORT_STAT: u16 = 10;
    /// CLEAR_QP_RESOURCE.
    pub const CLEAR_QP_RESOURCE: u16 = 11;
    /// CFG_RX_LRO.
    pub const CFG_RX_LRO: u16 = 13;
    /// CFG_LRO_TIMER.
    pub const CFG_LRO_TIMER: u16 = 14;
    /// FEATURE_NEGO (NIC features).
    pub const FEATURE_NEGO: u16 = 15;
    /// GET_MAC.
    pub const GET_MAC: u16 = 20;
    /// SET_MAC.
    pub const SET_MAC: u16 = 21;
    /// DEL_MAC.
    pub const DEL_MAC: u16 = 22;
    /// SET_VLAN_FILTER_EN.
    pub const SET_VLAN_FILTER_EN: u16 = 26;
    /// SET_RX_VLAN_OFFLOAD (VLAN strip).
    pub const SET_RX_VLAN_OFFLOAD: u16 = 27;
    /// RSS_CFG.
    pub const RSS_CFG: u16 = 60;
    /// RSS_TEMP_MGR.
    pub const RSS_TEMP_MGR: u16 = 61;
    /// CFG_RSS_HASH_KEY.
    pub const CFG_RSS_HASH_KEY: u16 = 63;
    /// CFG_RSS_HASH_ENGINE.
    pub const CFG_RSS_HASH_ENGINE: u16 = 64;
    /// SET_RSS_CTX_TBL_INTO_FUNC.
    pub const SET_RSS_CTX_TBL: u16 = 65;
    /// The NIC feature bits a first driver keeps of DPDK's mask (docs/hw/hinic3.md §12, §12a: the feature-gated formats
    /// declined). Unverified (docs/hw/hinic3.md §17 item 10) that firmware offering them serves the classic formats once
    /// they are declined; declining is the choice.
    pub const FEATURES_KEPT: u64 = super::nic_feature::DPDK_MASK & !super::nic_feature::GATED_FORMATS;
}

/// NIC feature bits of L2NIC 15 (docs/hw/hinic3.md §12).
pub mod nic_feature {
    use super::bit64;
    /// RSS.
    pub const RSS: u64 = bit64(5);
    /// TX_WQE_COMPACT_TASK (docs/hw/hinic3.md §12a.2).
    pub const TX_WQE_COMPACT_TASK: u64 = bit64(19);
    /// RX_HW_COMPACT_CQE (docs/hw/hinic3.md §12a.1).
    pub const RX_HW_COMPACT_CQE: u64 = bit64(20);
    /// HTN_CMDQ (docs/hw/hinic3.md §12a.4).
    pub const HTN_CMDQ: u64 = bit64(21);
    /// HTN_FDIR (docs/hw/hinic3.md §12a.4).
    pub const HTN_FDIR: u64 = bit64(25);
    /// RX_SW_COMPACT_CQE.
    pub const RX_SW_COMPACT_CQE: u64 = bit64(27);
    /// The features DPDK keeps of what the firmware offers.
    pub const DPDK_MASK: u64 = 0x3FC3FFF;
    /// The bits of the feature-gated formats (docs/hw/hinic3.md §12a), which a first driver declines.
    pub const GATED_FORMATS: u64 = TX_WQE_COMPACT_TASK | RX_HW_COMPACT_CQE | HTN_CMDQ | HTN_FDIR | RX_SW_COMPACT_CQE;
}

/// The command queue context words of COMM 20 (docs/hw/hinic3.md §8.3).
pub mod cmdq_ctxt {
    use super::{bit64, Field64};
    /// curr_wqe_page_pfn / wq_block_pfn: the ring's page frame number.
    pub const PFN: Field64 = Field64::new(51, 0);
    /// curr_wqe_page_pfn: hardware busy.
    pub const HW_BUSY: u64 = bit64(63);
    /// The page a PFN counts.
    pub const PAGE: u64 = 4096;
}

/// HILINK commands (docs/hw/hinic3.md §7.2).
pub mod mag {
    /// SET_PORT_ENABLE.
    pub const SET_PORT_ENABLE: u16 = 6;
    /// GET_LINK_STATUS (also the link event).
    pub const GET_LINK_STATUS: u16 = 7;
    /// SET_LINK_FOLLOW.
    pub const SET_LINK_FOLLOW: u16 = 8;
    /// GET_PORT_INFO.
    pub const GET_PORT_INFO: u16 = 153;
    /// GET_PORT_STAT: the physical port's 86 counters (docs/hw/hinic3.md §13).
    pub const GET_PORT_STAT: u16 = 151;
}

/// Index in the MAG 151 answer of the RX "oversize" counter: frames refused for being longer than the MTU allows
/// (docs/hw/hinic3.md §13, §19): the 42 TX counters, then the 18th RX one.
pub const PORT_STAT_RX_OVERSIZE: usize = 42 + 17;
/// Counters in the MAG 151 answer.
pub const PORT_STAT_COUNT: usize = 86;

/// A request being built: `N` bytes, head zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg<const N: usize>(pub [u8; N]);

impl<const N: usize> Msg<N> {
    /// All zero.
    pub const fn new() -> Self {
        Msg([0; N])
    }
    /// `v` at `off`.
    pub fn u8(mut self, off: usize, v: u8) -> Self {
        self.0[off] = v;
        self
    }
    /// `v` little-endian at `off` (even).
    pub fn u16(mut self, off: usize, v: u16) -> Self {
        debug_assert!(off.is_multiple_of(2));
        self.0[off..off + 2].copy_from_slice(&v.to_le_bytes());
        self
    }
    /// `v` little-endian at `off` (a multiple of 4).
    pub fn u32(mut self, off: usize, v: u32) -> Self {
        debug_assert!(off.is_multiple_of(4));
        self.0[off..off + 4].copy_from_slice(&v.to_le_bytes());
        self
    }
    /// `v` little-endian at `off` (a multiple of 8).
    pub fn u64(mut self, off: usize, v: u64) -> Self {
        debug_assert!(off.is_multiple_of(8));
        self.0[off..off + 8].copy_from_slice(&v.to_le_bytes());
        self
    }
    /// `v` at `off`.
    pub fn bytes(mut self, off: usize, v: &[u8]) -> Self {
        self.0[off..off + v.len()].copy_from_slice(v);
        self
    }
}

impl<const N: usize> Default for Msg<N> {
    fn default() -> Self {
        Msg::new()
    }
}

/// A little-endian u16 of an answer.
pub fn get_u16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

/// A little-endian u64 of an answer.
pub fn get_u64(b: &[u8], off: usize) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

/// COMM 0 FUNC_RESET (24 bytes).
pub fn func_reset(func_id: u16, flags: u64) -> Msg<24> {
    Msg::new().u16(8, func_id).u64(16, flags)
}

/// COMM 1 / L2NIC 15 FEATURE_NEGO (48 bytes); `set` false: get.
pub fn feature_nego(func_id: u16, set: bool, features: u64) -> Msg<48> {
    Msg::new().u16(8, func_id).u8(10, set as u8).u64(16, features)
}

/// COMM 7 SET_FUNC_SVC_USED_STATE (48 bytes); svc 0 COMM, 1 NIC.
pub fn svc_used_state(func_id: u16, svc: u16, used: bool) -> Msg<48> {
    Msg::new().u16(8, func_id).u16(10, svc).u8(12, used as u8)
}

/// COMM 20 SET_CMDQ_CTXT (32 bytes, Linux's length): the two context words of docs/hw/hinic3.md §8.3.
pub fn set_cmdq_ctxt(func_id: u16, cmdq_id: u8, ring_iova: u64) -> Msg<32> {
    let pfn = cmdq_ctxt::PFN.val(ring_iova / cmdq_ctxt::PAGE);
    // EQ ID 0, CEQ arm 0, CEQ enable 0 (polled, as DPDK), hardware busy 1.
    let curr = pfn | cmdq_ctxt::HW_BUSY;
    Msg::new().u16(8, func_id).u8(10, cmdq_id).u64(16, curr).u64(24, pfn)
}

/// COMM 21 SET_VAT use (a): the command queue depth.
pub fn set_cmdq_depth(func_id: u16, depth: u16) -> Msg<32> {
    Msg::new().u16(8, func_id).u8(10, 1).u8(11, depth.trailing_zeros() as u8)
}

/// COMM 21 SET_VAT use (b): the root context. `rx_buf_sz` is the index of docs/hw/hinic3.md §10.4, or the size in
/// bytes with COMM bit 9 ([`comm::FEATURE_USE_REAL_RX_BUF_SIZE`]); depths are entry counts (powers of two).
pub fn set_root_ctx(func_id: u16, rx_buf_sz: u16, sq_depth: u16, rq_depth: u16) -> Msg<32> {
    Msg::new()
        .u16(8, func_id)
        .u16(12, rx_buf_sz)
        .u8(14, 1)
        .u16(16, sq_depth.trailing_zeros() as u16)
        // RQ depth in 8-byte units: entries << wqe shift (1 for the normal WQE, docs/hw/hinic3.md §7.3).
        .u16(18, rq_depth.trailing_zeros() as u16 + crate::desc::RQ_WQE_SHIFT as u16)
}

/// COMM 21 SET_VAT use (c): clear the root context.
pub fn clear_root_ctx(func_id: u16) -> Msg<32> {
    Msg::new().u16(8, func_id)
}

/// COMM 22 CFG_PAGESIZE (16 bytes): `log2_4k` = log2(bytes / 4 KiB).
pub fn cfg_pagesize(func_id: u16, log2_4k: u8) -> Msg<16> {
    Msg::new().u16(8, func_id).u8(10, 1).u8(11, log2_4k)
}

/// COMM 23 CFG_MSIX_CTRL_REG set (24 bytes): vector `index`'s pending limit, coalescing and resend timers
/// (docs/hw/hinic3.md §7.3, §5.5).
pub fn cfg_msix_ctrl(func_id: u16, index: u16, pending: u8, coalesce: u8, resend: u8) -> Msg<24> {
    Msg::new().u16(8, func_id).u8(10, 1).u16(12, index).u8(14, pending).u8(15, coalesce).u8(16, resend)
}

/// COMM 25 SET_DMA_ATTR (20 bytes): entry 0, all zero (snooping on, TPH off).
pub fn set_dma_attr(func_id: u16) -> Msg<20> {
    Msg::new().u16(8, func_id)
}

/// CFGM 0 GET_DEV_CAP request (336 bytes).
pub fn get_dev_cap(func_id: u16) -> Msg<336> {
    Msg::new().u16(8, func_id)
}

/// COMM 60 GET_FW_VERSION (48 bytes): fw_type u16 at 8; the answer's version string at 12 (16 bytes, NUL-padded),
/// its build time at 28 (20 bytes) (DPDK `hinic3_get_mgmt_version`).
pub fn get_fw_version(fw_type: u16) -> Msg<48> {
    Msg::new().u16(8, fw_type)
}

/// The version string of a GET_FW_VERSION answer.
pub fn fw_version(answer: &[u8]) -> Option<String> {
    let v = answer.get(12..28)?;
    let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
    Some(String::from_utf8_lossy(&v[..end]).into_owned())
}

/// COMM 61 GET_BOARD_INFO (128 bytes, the request all zero; DPDK `hinic3_get_board_info`).
pub fn get_board_info() -> Msg<128> {
    Msg::new()
}

/// What a GET_BOARD_INFO answer says (bytes 8 on: board_type, port_num, port_speed, pcie_width, host_num, pf_num).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BoardInfo {
    /// Board type.
    pub board_type: u8,
    /// Physical ports on the board.
    pub port_num: u8,
    /// Port speed code (the MAG speed codes of docs/hw/hinic3.md §7.3).
    pub port_speed: u8,
    /// PFs on the board.
    pub pf_num: u8,
}

impl BoardInfo {
    /// Decodes a GET_BOARD_INFO answer.
    pub fn decode(answer: &[u8]) -> Option<BoardInfo> {
        let b = answer.get(8..14)?;
        Some(BoardInfo { board_type: b[0], port_num: b[1], port_speed: b[2], pf_num: b[5] })
    }
}

/// What GET_DEV_CAP says (docs/hw/hinic3.md §7.3 CFGM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevCap {
    /// Physical port of every HILINK command.
    pub port_id: u8,
    /// Valid CoS bitmap.
    pub valid_cos_bitmap: u8,
    /// SQs (nic_max_sq_id + 1).
    pub max_sqs: u16,
    /// RQs.
    pub max_rqs: u16,
}

impl DevCap {
    /// Decodes the answer (`None` when it is shorter than the fields).
    pub fn decode(b: &[u8]) -> Option<DevCap> {
        (b.len() >= 84).then(|| DevCap {
            port_id: b[15],
            valid_cos_bitmap: b[33],
            max_sqs: get_u16(b, 80) + 1,
            max_rqs: get_u16(b, 82) + 1,
        })
    }

    /// The default CoS: the highest bit set below 8 (docs/hw/hinic3.md §14.1 step 18).
    pub fn default_cos(&self) -> u8 {
        if self.valid_cos_bitmap == 0 {
            0
        } else {
            7 - self.valid_cos_bitmap.leading_zeros() as u8
        }
    }
}

/// L2NIC 5 SET_FUNC_TBL (56 bytes): `bitmap` bit 0 INIT, 1 RX_BUF_SIZE, 2 MTU.
pub fn set_func_tbl(func_id: u16, bitmap: u32, rx_buf: u16, mtu: u16) -> Msg<56> {
    Msg::new().u16(8, func_id).u32(12, bitmap).u16(16, rx_buf).u16(18, mtu)
}

/// L2NIC 6 SET_VPORT_ENABLE (16 bytes).
pub fn set_vport_enable(func_id: u16, enable: bool, num_rqs: u8) -> Msg<16> {
    Msg::new().u16(8, func_id).u8(12, enable as u8).u8(13, num_rqs)
}

/// RX mode bits of L2NIC 7.
pub mod rx_mode {
    use super::bit;
    /// Unicast.
    pub const UCAST: u32 = bit(0);
    /// Multicast (filtered).
    pub const MCAST: u32 = bit(1);
    /// Broadcast.
    pub const BCAST: u32 = bit(2);
    /// All multicast.
    pub const ALLMULTI: u32 = bit(3);
    /// Promiscuous.
    pub const PROMISC: u32 = bit(4);
}

/// L2NIC 7 SET_RX_MODE (16 bytes).
pub fn set_rx_mode(func_id: u16, mode: u32) -> Msg<16> {
    Msg::new().u16(8, func_id).u32(12, mode)
}

/// The unit of L2NIC 8's CI address (docs/hw/hinic3.md §7.3: the IOVA of the CI write-back slot in 4-byte units).
const CI_ADDR_UNIT: u64 = 4;

/// L2NIC 8 SQ_CI_ATTR_SET (32 bytes), polled: pending 3, coalescing 16, no interrupt (DPDK's values).
pub fn sq_ci_attr(func_id: u16, sq: u32, ci_iova: u64) -> Msg<32> {
    Msg::new().u16(8, func_id).u8(11, 3).u8(12, 16).u32(16, sq).u64(24, ci_iova / CI_ADDR_UNIT)
}

/// L2NIC 9/10/11: the 12-byte requests carrying only func_id.
pub fn func_only(func_id: u16) -> Msg<12> {
    Msg::new().u16(8, func_id)
}

/// The opcode of L2NIC 13 and 14 that sets (0 reads).
const OP_SET: u8 = 1;

/// L2NIC 13 CFG_RX_LRO (28 bytes), set: LRO for IPv4 and IPv6 on or off, merged packets of at most `max_kib` KiB
/// (at least 1, DPDK `hinic3_set_lro`).
pub fn cfg_rx_lro(func_id: u16, enable: bool, max_kib: u8) -> Msg<28> {
    Msg::new().u16(8, func_id).u8(10, OP_SET).u8(12, enable as u8).u8(13, enable as u8).u8(14, max_kib.max(1))
}

/// L2NIC 14 CFG_LRO_TIMER (16 bytes), set (PF only).
pub fn cfg_lro_timer(timer: u32) -> Msg<16> {
    Msg::new().u8(8, OP_SET).u32(12, timer)
}

/// L2NIC 26 SET_VLAN_FILTER_EN ctrl bits.
pub mod vlan_filter {
    use super::bit;
    /// Filter by the VLAN table.
    pub const VLAN: u32 = bit(0);
}

/// L2NIC 26 SET_VLAN_FILTER_EN (16 bytes).
pub fn set_vlan_filter(func_id: u16, ctrl: u32) -> Msg<16> {
    Msg::new().u16(8, func_id).u32(12, ctrl)
}

/// L2NIC 27 SET_RX_VLAN_OFFLOAD (16 bytes): VLAN strip on or off.
pub fn set_rx_vlan_offload(func_id: u16, strip: bool) -> Msg<16> {
    Msg::new().u16(8, func_id).u8(10, strip as u8)
}

/// L2NIC 20/21/22 GET/SET/DEL_MAC (20 bytes).
pub fn mac(func_id: u16, vlan: u16, mac: [u8; 6]) -> Msg<20> {
    Msg::new().u16(8, func_id).u16(10, vlan).bytes(14, &mac)
}

/// L2NIC 60 RSS_CFG (24 bytes).
pub fn rss_cfg(func_id: u16, enable: bool, num_qps: u16) -> Msg<24> {
    Msg::new().u16(8, func_id).u8(10, enable as u8).u16(20, num_qps)
}

/// L2NIC 61 RSS_TEMP_MGR (16 bytes): cmd 1 allocate, 2 free.
pub fn rss_temp_mgr(func_id: u16, cmd: u8, template: u8) -> Msg<16> {
    Msg::new().u16(8, func_id).u8(10, cmd).u8(11, template)
}

/// L2NIC 63 CFG_RSS_HASH_KEY set (52 bytes).
pub fn rss_hash_key(func_id: u16, key: &[u8; 40]) -> Msg<52> {
    Msg::new().u16(8, func_id).u8(10, 1).bytes(12, key)
}

/// L2NIC 64 CFG_RSS_HASH_ENGINE set (16 bytes): 0 XOR, 1 Toeplitz.
pub fn rss_hash_engine(func_id: u16, engine: u8) -> Msg<16> {
    Msg::new().u16(8, func_id).u8(10, 1).u8(11, engine)
}

/// L2NIC 65 SET_RSS_CTX_TBL_INTO_FUNC (16 bytes): the docs/hw/hinic3.md §11 hash-type word.
pub fn rss_ctx_tbl(func_id: u16, context: u32) -> Msg<16> {
    Msg::new().u16(8, func_id).u32(12, context)
}

/// RSS hash-type bits (docs/hw/hinic3.md §11).
pub mod rss_type {
    use super::bit;
    /// Valid.
    pub const VALID: u32 = bit(23);
    /// TCP over IPv6.
    pub const TCP_IPV6: u32 = bit(26);
    /// IPv6.
    pub const IPV6: u32 = bit(27);
    /// TCP over IPv4.
    pub const TCP_IPV4: u32 = bit(28);
    /// IPv4.
    pub const IPV4: u32 = bit(29);
    /// UDP over IPv6.
    pub const UDP_IPV6: u32 = bit(30);
    /// UDP over IPv4.
    pub const UDP_IPV4: u32 = bit(31);
}

/// MAG 6 SET_PORT_ENABLE (16 bytes): state 3 (TX and RX) or 0.
pub fn set_port_enable(func_id: u16, enable: bool) -> Msg<16> {
    Msg::new().u16(8, func_id).u8(12, if enable { 3 } else { 0 })
}

/// MAG 7 GET_LINK_STATUS (12 bytes); the answer's byte 9 is the state.
pub fn get_link_status(port_id: u8) -> Msg<12> {
    Msg::new().u8(8, port_id)
}

/// MAG 8 SET_LINK_FOLLOW (16 bytes).
pub fn set_link_follow(func_id: u16, follow: u8) -> Msg<16> {
    Msg::new().u16(8, func_id).u8(12, follow)
}

/// MAG 151 GET_PORT_STAT (12 bytes: port_id at 8; docs/hw/hinic3.md §7.3).
pub fn get_port_stat(port_id: u8) -> Msg<12> {
    Msg::new().u8(8, port_id)
}

/// The 86 counters of a MAG 151 answer (u64 from offset 8), or `None` for a short answer.
pub fn port_stats(b: &[u8]) -> Option<[u64; PORT_STAT_COUNT]> {
    (b.len() >= 8 + 8 * PORT_STAT_COUNT).then(|| std::array::from_fn(|i| get_u64(b, 8 + 8 * i)))
}

/// MAG 153 GET_PORT_INFO (36 bytes); the answer's byte 16 is the speed code.
pub fn get_port_info(port_id: u8) -> Msg<36> {
    Msg::new().u8(8, port_id)
}

/// Mbit/s of a GET_PORT_INFO speed code (docs/hw/hinic3.md §7.3).
pub fn speed_mbps(code: u8) -> u32 {
    match code {
        1 => 10,
        2 => 100,
        3 => 1_000,
        4 => 10_000,
        5 => 25_000,
        6 => 40_000,
        7 => 50_000,
        8 => 100_000,
        9 => 200_000,
        _ => 0,
    }
}

/// The physical-port counters of the MAG 151 answer (docs/hw/hinic3.md §13), in order: 42 TX then 44 RX, under the
/// field names of DPDK's `struct mag_phy_port_stats`, which its hinic3 PMD reports as xstats.
pub const PORT_STAT_NAMES: [&str; PORT_STAT_COUNT] = [
    "mac_tx_fragment_pkt_num",
    "mac_tx_undersize_pkt_num",
    "mac_tx_undermin_pkt_num",
    "mac_tx_64_oct_pkt_num",
    "mac_tx_65_127_oct_pkt_num",
    "mac_tx_128_255_oct_pkt_num",
    "mac_tx_256_511_oct_pkt_num",
    "mac_tx_512_1023_oct_pkt_num",
    "mac_tx_1024_1518_oct_pkt_num",
    "mac_tx_1519_2047_oct_pkt_num",
    "mac_tx_2048_4095_oct_pkt_num",
    "mac_tx_4096_8191_oct_pkt_num",
    "mac_tx_8192_9216_oct_pkt_num",
    "mac_tx_9217_12287_oct_pkt_num",
    "mac_tx_12288_16383_oct_pkt_num",
    "mac_tx_1519_max_bad_pkt_num",
    "mac_tx_1519_max_good_pkt_num",
    "mac_tx_oversize_pkt_num",
    "mac_tx_jabber_pkt_num",
    "mac_tx_bad_pkt_num",
    "mac_tx_bad_oct_num",
    "mac_tx_good_pkt_num",
    "mac_tx_good_oct_num",
    "mac_tx_total_pkt_num",
    "mac_tx_total_oct_num",
    "mac_tx_uni_pkt_num",
    "mac_tx_multi_pkt_num",
    "mac_tx_broad_pkt_num",
    "mac_tx_pause_num",
    "mac_tx_pfc_pkt_num",
    "mac_tx_pfc_pri0_pkt_num",
    "mac_tx_pfc_pri1_pkt_num",
    "mac_tx_pfc_pri2_pkt_num",
    "mac_tx_pfc_pri3_pkt_num",
    "mac_tx_pfc_pri4_pkt_num",
    "mac_tx_pfc_pri5_pkt_num",
    "mac_tx_pfc_pri6_pkt_num",
    "mac_tx_pfc_pri7_pkt_num",
    "mac_tx_control_pkt_num",
    "mac_tx_err_all_pkt_num",
    "mac_tx_from_app_good_pkt_num",
    "mac_tx_from_app_bad_pkt_num",
    "mac_rx_fragment_pkt_num",
    "mac_rx_undersize_pkt_num",
    "mac_rx_undermin_pkt_num",
    "mac_rx_64_oct_pkt_num",
    "mac_rx_65_127_oct_pkt_num",
    "mac_rx_128_255_oct_pkt_num",
    "mac_rx_256_511_oct_pkt_num",
    "mac_rx_512_1023_oct_pkt_num",
    "mac_rx_1024_1518_oct_pkt_num",
    "mac_rx_1519_2047_oct_pkt_num",
    "mac_rx_2048_4095_oct_pkt_num",
    "mac_rx_4096_8191_oct_pkt_num",
    "mac_rx_8192_9216_oct_pkt_num",
    "mac_rx_9217_12287_oct_pkt_num",
    "mac_rx_12288_16383_oct_pkt_num",
    "mac_rx_1519_max_bad_pkt_num",
    "mac_rx_1519_max_good_pkt_num",
    "mac_rx_oversize_pkt_num",
    "mac_rx_jabber_pkt_num",
    "mac_rx_bad_pkt_num",
    "mac_rx_bad_oct_num",
    "mac_rx_good_pkt_num",
    "mac_rx_good_oct_num",
    "mac_rx_total_pkt_num",
    "mac_rx_total_oct_num",
    "mac_rx_uni_pkt_num",
    "mac_rx_multi_pkt_num",
    "mac_rx_broad_pkt_num",
    "mac_rx_pause_num",
    "mac_rx_pfc_pkt_num",
    "mac_rx_pfc_pri0_pkt_num",
    "mac_rx_pfc_pri1_pkt_num",
    "mac_rx_pfc_pri2_pkt_num",
    "mac_rx_pfc_pri3_pkt_num",
    "mac_rx_pfc_pri4_pkt_num",
    "mac_rx_pfc_pri5_pkt_num",
    "mac_rx_pfc_pri6_pkt_num",
    "mac_rx_pfc_pri7_pkt_num",
    "mac_rx_control_pkt_num",
    "mac_rx_sym_err_pkt_num",
    "mac_rx_fcs_err_pkt_num",
    "mac_rx_send_app_good_pkt_num",
    "mac_rx_send_app_bad_pkt_num",
    "mac_rx_unfilter_pkt_num",
];

/// The vport counters of the L2NIC 9 answer (docs/hw/hinic3.md §13), in order.
pub const VPORT_STAT_NAMES: [&str; 16] = [
    "tx_unicast_pkts",
    "tx_unicast_bytes",
    "tx_multicast_pkts",
    "tx_multicast_bytes",
    "tx_broadcast_pkts",
    "tx_broadcast_bytes",
    "rx_unicast_pkts",
    "rx_unicast_bytes",
    "rx_multicast_pkts",
    "rx_multicast_bytes",
    "rx_broadcast_pkts",
    "rx_broadcast_bytes",
    "tx_discard",
    "rx_discard",
    "tx_err",
    "rx_err",
];

/// Decodes the 192-byte L2NIC 9 answer into its sixteen counters.
pub fn vport_stats(b: &[u8]) -> Option<[u64; 16]> {
    if b.len() < 144 {
        return None;
    }
    let mut out = [0; 16];
    for (k, v) in out.iter_mut().enumerate() {
        *v = get_u64(b, 16 + 8 * k);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comm_structs_match_the_notes_byte_by_byte() {
        let r = func_reset(0x123, comm::RESET_FLAGS).0;
        assert_eq!(&r[..8], &[0; 8], "head zero");
        assert_eq!(&r[8..10], &[0x23, 0x01]);
        assert_eq!(&r[16..24], &0x3407u64.to_le_bytes());
        let f = feature_nego(5, true, 0xABCD).0;
        assert_eq!((f.len(), f[10], get_u64(&f, 16)), (48, 1, 0xABCD));
        let c = set_cmdq_ctxt(1, 0, 0x1234_5000).0;
        assert_eq!(get_u64(&c, 16), 0x8000_0000_0001_2345, "PFN with hardware busy (bit 63), CEQ off");
        assert_eq!(get_u64(&c, 24), 0x12345, "0-level CLA block = the ring, CI 0");
        let d = set_cmdq_depth(1, 64).0;
        assert_eq!((d[10], d[11]), (1, 6));
        let v = set_root_ctx(1, 11, 1024, 1024).0;
        assert_eq!((v[10], get_u16(&v, 12), v[14], get_u16(&v, 16), get_u16(&v, 18)), (0, 11, 1, 10, 11));
        assert_eq!(&clear_root_ctx(1).0[10..], &[0; 22]);
        let p = cfg_pagesize(1, 8).0;
        assert_eq!((p.len(), p[10], p[11]), (16, 1, 8));
        assert_eq!(set_dma_attr(1).0.len(), 20);
    }

    #[test]
    fn l2nic_and_mag_structs_match_the_notes() {
        let t = set_func_tbl(2, 7, 2048, 0x3FFF).0;
        assert_eq!((t.len(), get_u16(&t, 8), t[12], get_u16(&t, 16), get_u16(&t, 18)), (56, 2, 7, 2048, 0x3FFF));
        let e = set_vport_enable(2, true, 4).0;
        assert_eq!((e[12], e[13]), (1, 4));
        let m = set_rx_mode(2, rx_mode::UCAST | rx_mode::MCAST | rx_mode::BCAST).0;
        assert_eq!(&m[12..16], &[7, 0, 0, 0]);
        let s = sq_ci_attr(2, 3, 0x1000_0040).0;
        assert_eq!((s[11], s[12], s[13], s[16], get_u64(&s, 24)), (3, 16, 0, 3, 0x0400_0010));
        let mac = mac(2, 0, [2, 0, 0, 0, 0, 9]).0;
        assert_eq!(&mac[14..20], &[2, 0, 0, 0, 0, 9]);
        let key = rss_hash_key(2, &[0xAA; 40]).0;
        assert_eq!((key.len(), key[10], key[12], key[51]), (52, 1, 0xAA, 0xAA));
        let pe = set_port_enable(2, true).0;
        assert_eq!((get_u16(&pe, 8), pe[12]), (2, 3));
        assert_eq!(get_link_status(1).0[8], 1);
        assert_eq!(get_port_info(1).0.len(), 36);
        assert_eq!(speed_mbps(8), 100_000);
    }

    #[test]
    fn dev_cap_and_vport_stats_decode() {
        let mut cap = [0u8; 336];
        cap[15] = 2;
        cap[33] = 0b0000_1011;
        cap[80..82].copy_from_slice(&63u16.to_le_bytes());
        cap[82..84].copy_from_slice(&31u16.to_le_bytes());
        let c = DevCap::decode(&cap).unwrap();
        assert_eq!(c, DevCap { port_id: 2, valid_cos_bitmap: 0b1011, max_sqs: 64, max_rqs: 32 });
        assert_eq!(c.default_cos(), 3);
        let mut st = [0u8; 192];
        for k in 0..16 {
            st[16 + 8 * k..24 + 8 * k].copy_from_slice(&(100 + k as u64).to_le_bytes());
        }
        let v = vport_stats(&st).unwrap();
        assert_eq!((v[0], v[13], v[15]), (100, 113, 115));
        assert!(vport_stats(&st[..100]).is_none());
    }

    #[test]
    fn declined_feature_bits_are_not_kept() {
        for b in [19, 20, 21, 25, 27] {
            assert_eq!(l2nic::FEATURES_KEPT & bit64(b), 0, "bit {b}");
        }
        assert_ne!(l2nic::FEATURES_KEPT & bit64(5), 0, "RSS kept");
        assert_eq!(l2nic::FEATURES_KEPT & nic_feature::RSS, nic_feature::RSS);
    }
}
