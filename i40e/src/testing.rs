//! A fake register space with a scripted firmware, for unit tests and the benchmark. Registers are plain memory
//! with the few side effects bring-up waits for (PFGEN_CTRL.PFSWR clears itself, GLNVM_ULD reports the
//! configuration loaded, QTX_ENA/QRX_ENA report the state that was requested), and a write of PF_ATQT runs the
//! commands up to the new tail: each gets a fixed, plausible answer from [`Firmware`] and PF_ATQH moves past it.
//!
//! This is not a model of the X710 (that lives in `nicsim`, written independently): it answers only the commands
//! this driver sends, in the simplest way, and it does no packet DMA. Tests and the benchmark play the data path
//! themselves through the ring addresses the driver programmed (IOVA = VA with [`drvkit::dma::IdentityMapper`]).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use drvkit::bar::RegisterSpace;

use crate::adminq::cmds::{self, flags, Opcode};
use crate::adminq::{AqDesc, DESC_LEN, RING_LEN};
use crate::regs::{self, qena, Reg};

/// Register-space size: everything the driver touches is below 4 MiB.
const SPACE: usize = 0x40_0000;

/// What the scripted firmware reports and what it was told.
#[derive(Debug, Clone)]
pub struct Firmware {
    /// The LAN MAC address of MAC Address Read.
    pub mac: [u8; 6],
    /// Get Version's API (major, minor).
    pub api: (u16, u16),
    /// Queue pairs of the capabilities.
    pub queues: u32,
    /// First absolute queue of the capabilities.
    pub first_queue: u32,
    /// Report the flow-director capability (the main VSI then starts at PF queue 1).
    pub flow_director: bool,
    /// A command to fail, with this status.
    pub fail: Option<(u16, u8)>,
    /// Link up in Get Link Status.
    pub link_up: bool,
    /// Every opcode received, in order.
    pub sent: Vec<u16>,
    /// The last Update VSI buffer.
    pub vsi_update: Option<cmds::VsiProperties>,
    /// The promiscuous flags in force.
    pub promisc: u16,
    /// MAC filters added and not removed.
    pub filters: Vec<[u8; 6]>,
    /// The last Set MAC Config's largest frame.
    pub max_frame: u16,
    /// The last Set PHY Config's abilities.
    pub phy_abilities: Option<u8>,
    /// The PHY types configured (Get PHY Abilities reports them; Set PHY Config changes them).
    pub phy_type: u32,
    /// Link status events enabled.
    pub lse: bool,
    /// The ATQ head the firmware has reached.
    pub head: usize,
}

impl Default for Firmware {
    fn default() -> Self {
        Firmware {
            mac: [0x02, 0x00, 0x00, 0x00, 0x07, 0x10],
            api: (1, 15),
            queues: 64,
            first_queue: 128,
            flow_director: false,
            fail: None,
            link_up: true,
            sent: Vec::new(),
            vsi_update: None,
            promisc: 0,
            filters: Vec::new(),
            max_frame: 0,
            phy_abilities: None,
            phy_type: 1 << 0x14,
            lse: false,
            head: 0,
        }
    }
}

/// SEIDs the scripted switch reports.
pub const MAIN_VSI_SEID: u16 = 0x0210;
/// The uplink (MAC) SEID.
pub const MAC_SEID: u16 = 0x0002;
/// The main VSI's statistics index.
pub const STAT_IDX: u16 = 5;
/// The queue-set handle of TC 0.
pub const QS_HANDLE: u16 = 0x0120;

/// Memory-backed registers with a scripted firmware behind PF_ATQT.
#[derive(Debug)]
pub struct FakeRegs {
    words: Box<[AtomicU32]>,
    /// The firmware's script and record.
    pub fw: Mutex<Firmware>,
}

impl Default for FakeRegs {
    fn default() -> Self {
        Self::new(Firmware::default())
    }
}

impl FakeRegs {
    /// A device with firmware `fw`; the NVM has loaded, no reset is under way, 1024 queues per HMC function.
    pub fn new(fw: Firmware) -> FakeRegs {
        let f = FakeRegs { words: (0..SPACE / 4).map(|_| AtomicU32::new(0)).collect(), fw: Mutex::new(fw) };
        f.store(regs::GLNVM_ULD, regs::glnvm_uld::CONF_CORE_DONE | regs::glnvm_uld::CONF_GLOBAL_DONE);
        f.store(regs::GLHMC_LANQMAX, 1536);
        f.store(regs::GLHMC_LANTXOBJSZ, 7);
        f.store(regs::GLHMC_LANRXOBJSZ, 5);
        f
    }

    /// The value last written to `reg` (no side effects).
    pub fn peek(&self, reg: Reg) -> u32 {
        self.words[reg.0 / 4].load(Ordering::Relaxed)
    }

    /// Sets `reg` without side effects.
    pub fn store(&self, reg: Reg, v: u32) {
        self.words[reg.0 / 4].store(v, Ordering::Relaxed);
    }

    /// The firmware's record.
    pub fn firmware(&self) -> std::sync::MutexGuard<'_, Firmware> {
        self.fw.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn base(&self, lo: Reg, hi: Reg) -> usize {
        (self.peek(lo) as u64 | (self.peek(hi) as u64) << 32) as usize
    }

    /// Posts an event on the ARQ (`params` into the descriptor, no buffer data), as the firmware does for a link
    /// change; false when the ARQ is not set up or full.
    pub fn post_event(&self, opcode: u16, params: [u8; 16]) -> bool {
        let base = self.base(regs::PF_ARQBAL, regs::PF_ARQBAH);
        let head = self.peek(regs::PF_ARQH) as usize;
        if base == 0 || (head + 1) % RING_LEN == (self.peek(regs::PF_ARQT) as usize + 1) % RING_LEN {
            return false;
        }
        let p = (base + head * DESC_LEN) as *mut [u8; DESC_LEN];
        // SAFETY: the driver programmed an ARQ of RING_LEN descriptors at `base` (IOVA = VA), and owns it for
        // as long as the registers point there; head < RING_LEN.
        let mut d = AqDesc::decode(&unsafe { p.read_volatile() });
        d.head.opcode = opcode;
        d.head.flags |= flags::DD | flags::CMP;
        d.head.datalen = 0;
        d.params = params;
        // SAFETY: as above.
        unsafe { p.write_volatile(d.encode()) };
        self.store(regs::PF_ARQH, ((head + 1) % RING_LEN) as u32);
        true
    }

    /// A write of PF_ATQT runs the commands up to it; one of PF_ATQH (re)starts the firmware at that head. Out of
    /// line, so that the queue tails' writes stay a store.
    #[cold]
    #[inline(never)]
    fn atq_write(&self, offset: usize, value: u32) {
        if Reg(offset) == regs::PF_ATQT {
            self.run_atq(value as usize);
        } else {
            self.firmware().head = value as usize % RING_LEN;
        }
    }

    /// Runs the ATQ commands up to `tail`.
    fn run_atq(&self, tail: usize) {
        let base = self.base(regs::PF_ATQBAL, regs::PF_ATQBAH);
        if base == 0 || self.peek(regs::PF_ATQLEN) & regs::atqlen::ENABLE == 0 {
            return;
        }
        let mut fw = self.firmware();
        while fw.head != tail % RING_LEN {
            let p = (base + fw.head * DESC_LEN) as *mut [u8; DESC_LEN];
            // SAFETY: the driver programmed an ATQ of RING_LEN descriptors at `base` (IOVA = VA) and handed
            // this slot over by moving the tail past it.
            let mut d = AqDesc::decode(&unsafe { p.read_volatile() });
            let addr = {
                let a = cmds::BufAddr::decode(&d.params);
                (a.addr_low as u64 | (a.addr_high as u64) << 32) as usize
            };
            let len = d.head.datalen as usize;
            let buf: &mut [u8] = if d.head.flags & flags::BUF != 0 && addr != 0 {
                // SAFETY: the driver's slot buffer of at least `len` bytes (IOVA = VA), not touched by the driver
                // until the head passes this slot.
                unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len) }
            } else {
                &mut []
            };
            let status = fw.answer(&mut d, buf);
            if status == 0 && d.head.opcode == Opcode::RxCtlWrite.value() {
                // The firmware writes the register for the driver (docs/hw/i40e.md §6.11).
                let w = cmds::RxCtlWriteCmd::decode(&d.params);
                self.store(Reg(w.address as usize), w.value);
            }
            if status == 0 && d.head.opcode == Opcode::RxCtlRead.value() {
                // The firmware reads the register for the driver (docs/hw/i40e.md §6.11).
                let mut r = cmds::RxCtlWriteCmd::decode(&d.params);
                r.value = self.peek(Reg(r.address as usize));
                r.encode_into(&mut d.params);
            }
            d.head.flags |= flags::DD | flags::CMP;
            if status != 0 {
                d.head.flags |= flags::ERR;
            }
            d.head.retval = status as u16;
            // SAFETY: as above.
            unsafe { p.write_volatile(d.encode()) };
            fw.head = (fw.head + 1) % RING_LEN;
        }
        self.store(regs::PF_ATQH, fw.head as u32);
    }
}

impl Firmware {
    /// Answers one command in place; returns its status.
    fn answer(&mut self, d: &mut AqDesc, buf: &mut [u8]) -> u8 {
        let op = d.head.opcode;
        self.sent.push(op);
        if let Some((o, st)) = self.fail {
            if o == op {
                return st;
            }
        }
        let params = &mut d.params;
        match op {
            x if x == Opcode::GetVersion.value() => {
                let v = cmds::GetVersionResp {
                    fw_major: 9,
                    fw_minor: 20,
                    api_major: self.api.0,
                    api_minor: self.api.1,
                    ..Default::default()
                };
                *params = v.encode();
            }
            x if x == Opcode::ListFuncCaps.value() => {
                let mut caps = vec![
                    cmds::CapElement {
                        id: cmds::cap::RXQ,
                        number: self.queues,
                        phys_id: self.first_queue,
                        ..Default::default()
                    },
                    cmds::CapElement {
                        id: cmds::cap::TXQ,
                        number: self.queues,
                        phys_id: self.first_queue,
                        ..Default::default()
                    },
                    cmds::CapElement { id: cmds::cap::RSS, number: 512, logical_id: 6, ..Default::default() },
                    cmds::CapElement { id: cmds::cap::MSIX, number: 129, ..Default::default() },
                    cmds::CapElement { id: cmds::cap::VSI, number: 384, ..Default::default() },
                ];
                if self.flow_director {
                    caps.push(cmds::CapElement { id: cmds::cap::FLOW_DIRECTOR, number: 1, ..Default::default() });
                }
                if buf.len() < caps.len() * cmds::CapElement::SIZE {
                    d.head.datalen = (caps.len() * cmds::CapElement::SIZE) as u16;
                    return cmds::status::ENOMEM;
                }
                for (i, c) in caps.iter().enumerate() {
                    c.encode_into(&mut buf[i * 32..]);
                }
                let mut c = cmds::ListCapsCmd::decode(params);
                c.count = caps.len() as u32;
                c.encode_into(params);
            }
            x if x == Opcode::MacAddressRead.value() => {
                buf[..6].copy_from_slice(&self.mac);
                cmds::MacReadCmd { command_flags: cmds::mac_read::LAN_ADDR_VALID }.encode_into(params);
            }
            x if x == Opcode::GetSwitchConfig.value() => {
                cmds::SwitchConfigHeader { num_reported: 1, num_total: 1 }.encode_into(buf);
                cmds::SwitchElement {
                    element_type: cmds::element::VSI,
                    seid: MAIN_VSI_SEID,
                    uplink_seid: MAC_SEID,
                    connection_type: 1,
                    ..Default::default()
                }
                .encode_into(&mut buf[16..]);
                cmds::SwitchSeidCmd { seid: 0 }.encode_into(params);
            }
            x if x == Opcode::GetVsiParams.value() || x == Opcode::UpdateVsi.value() => {
                if cmds::VsiCmd::decode(params).uplink_seid != MAIN_VSI_SEID {
                    return 2; // ENOENT
                }
                if x == Opcode::UpdateVsi.value() {
                    self.vsi_update = Some(cmds::VsiProperties::decode(buf));
                } else {
                    let v = cmds::VsiProperties {
                        qs_handle: [QS_HANDLE, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF],
                        stat_counter_idx: STAT_IDX,
                        ..Default::default()
                    };
                    v.encode_into(buf);
                }
                cmds::VsiResp { seid: MAIN_VSI_SEID, vsi_number: 3, vsi_used: 1, vsi_free: 383 }.encode_into(params);
            }
            x if x == Opcode::VsiTcBandwidth.value() => {
                let mut b = cmds::TcBandwidthBuf::decode(buf);
                b.qs_handles[0] = QS_HANDLE;
                b.encode_into(buf);
            }
            x if x == Opcode::SetVsiPromisc.value() => {
                let c = cmds::PromiscCmd::decode(params);
                self.promisc = (self.promisc & !c.valid_flags) | (c.promiscuous_flags & c.valid_flags);
            }
            x if x == Opcode::AddMacVlan.value() || x == Opcode::RemoveMacVlan.value() => {
                let n = cmds::MacVlanCmd::decode(params).num_addresses as usize;
                for i in 0..n {
                    let e = cmds::AddMacVlanElem::decode(&buf[i * 16..]);
                    if x == Opcode::AddMacVlan.value() {
                        if self.filters.contains(&e.mac) {
                            return cmds::status::EEXIST;
                        }
                        self.filters.push(e.mac);
                    } else if let Some(at) = self.filters.iter().position(|m| *m == e.mac) {
                        self.filters.remove(at);
                    } else {
                        return 2; // ENOENT
                    }
                }
            }
            x if x == Opcode::GetPhyAbilities.value() => {
                let a = cmds::PhyAbilities {
                    phy_type: self.phy_type,
                    link_speed: 0x08,
                    abilities: self.phy_abilities.unwrap_or(0x38),
                    ..Default::default()
                };
                a.encode_into(buf);
            }
            x if x == Opcode::SetPhyConfig.value() => {
                let c = cmds::SetPhyConfigCmd::decode(params);
                self.phy_abilities = Some(c.abilities);
                self.phy_type = c.phy_type;
            }
            x if x == Opcode::SetMacConfig.value() => {
                self.max_frame = cmds::SetMacConfigCmd::decode(params).max_frame_size;
            }
            x if x == Opcode::GetLinkStatus.value() => {
                let c = cmds::LinkStatusCmd::decode(params).command_flags;
                if c == cmds::link::LSE_ENABLE {
                    self.lse = true;
                } else if c == cmds::link::LSE_DISABLE {
                    self.lse = false;
                }
                *params = self.link_params();
            }
            _ => {}
        }
        0
    }

    /// Get Link Status parameters for the current link (10G when up).
    pub fn link_params(&self) -> [u8; 16] {
        let mut p = [0u8; 16];
        cmds::LinkStatus {
            command_flags: self.lse as u16,
            phy_type: 0x14,
            link_speed: if self.link_up { 0x08 } else { 0 },
            link_info: if self.link_up { cmds::link::LINK_UP } else { 0 },
            an_info: cmds::link::AN_COMPLETED,
            max_frame_size: 9728,
            ..Default::default()
        }
        .encode_into(&mut p);
        p
    }
}

impl RegisterSpace for FakeRegs {
    fn read32(&self, offset: usize) -> u32 {
        let Some(w) = self.words.get(offset / 4) else { return u32::MAX };
        let v = w.load(Ordering::Relaxed);
        let r = Reg(offset);
        if r == regs::PFGEN_CTRL {
            w.store(v & !regs::pfgen_ctrl::PFSWR, Ordering::Relaxed);
            return v & !regs::pfgen_ctrl::PFSWR;
        }
        let is_ena = (regs::qtx_ena(0).0..regs::qtx_ena(1536).0).contains(&offset)
            || (regs::qrx_ena(0).0..regs::qrx_ena(1536).0).contains(&offset);
        if is_ena {
            // The queue follows its request at once.
            let stat = if v & qena::QENA_REQ != 0 { qena::QENA_STAT } else { 0 };
            return (v & !qena::QENA_STAT) | stat;
        }
        v
    }

    #[inline]
    fn write32(&self, offset: usize, value: u32) {
        if let Some(w) = self.words.get(offset / 4) {
            w.store(value, Ordering::Relaxed);
        }
        if Reg(offset) == regs::PF_ATQT || Reg(offset) == regs::PF_ATQH {
            self.atq_write(offset, value);
        }
    }

    fn len(&self) -> usize {
        SPACE
    }
}
