//! Behavioural NIC models for testing drivers without hardware: the Intel X540 (and 82599), the X710 family and the
//! Huawei SP670 (hinic3).
//!
//! The model of an Intel X540 port sits behind the same seams as the real device (the three seams a
//! driver is written against: registers, DMA memory, PCI identity):
//!
//! | seam | hardware | here |
//! |---|---|---|
//! | registers | VFIO-mapped BAR0 (`drvkit::bar::MmioBar`) | [`SimBar`] (a `drvkit::bar::RegisterSpace`) |
//! | DMA | IOMMU mappings (`drvkit::dma::DmaMapper`) | the model's [`IovaMap`]: DMA outside it is a [`Fault`] |
//! | PCI identity | sysfs / VFIO config space | [`PciIdentity`] (8086:1528, BAR0 2 MiB) |
//!
//! The model is written from the hardware notes (`docs/hw/ixgbe.md`) with its own register map ([`x540::regs`]),
//! independently of the `ixgbe` driver, so that a mistake shared by both cannot hide. The one register the
//! model decodes field by field, MSCA (MDIO), is a `bitfield` struct; the rest are single-bit flags, named
//! `const`s.
//!
//! # One shape for every model
//!
//! Every model implements one trait, [`Model`], for its per-port state ([`X540State`], [`X710State`],
//! [`Sp670State`]): its PCI identity and every register BAR, its function-level reset, how a frame arrives and what
//! one step of the device does, its link and its counters. The rest is written once in [`ModelPort`], the handle
//! of every model port ([`X540Port`], [`X710Port`] and [`Sp670Port`] are `ModelPort`s): wires (a twin, a pcap file,
//! a TAP), frame injection and capture, stepping, the [`ModelThread`], faults, counters. Consumers (simports'
//! `net_sim_*` vdevs, the vfio-user server, the drivers' tests) are written over `ModelPort<S: Model>`. The
//! models' one error type is [`Error`]; what a driver gets wrong is recorded as a [`Fault`].
//!
//! [`vdev`] is the `net_sim_*` vdevs' machinery over the trait (one generic [`vdev::open_vdev`], the
//! [`vdev::SimPort`] it hands out, the [`vdev::SimDriver`] a driver crate with a model implements in its
//! `src/sim.rs`); it depends on the port API and on no driver. [`irq`] delivers a model port's interrupt vectors
//! to real eventfds in-process ([`ModelPort::irq_source`], a `drvkit::irq::IrqSource`), as VFIO's MSI-X does on
//! a PCI device, so a driver's interrupt code runs unchanged on either.
//!
//! # Instantiating a port
//!
//! ```
//! use nicsim::{X540, X540Config};
//! use drvkit::bar::RegisterSpace;
//!
//! let (bar, port) = X540::new(X540Config::default());
//! let mapper = port.dma_mapper();            // Arc<IovaMap>: give it to the driver as its DmaMapper
//! assert_eq!(bar.read32(0x10010) & (1 << 9), 1 << 9); // EEC.ARD after power-up
//! // ... the driver maps its rings and mempool memory with `mapper`, brings the port up through `bar` ...
//! port.inject(&[0xff; 60]);                   // a frame arrives on the wire (no FCS)
//! port.step();                                // deterministic: process everything pending now
//! let sent: Vec<Vec<u8>> = port.take_tx();    // frames the driver transmitted (while unwired)
//! port.assert_no_faults();                    // no DMA outside the map, no protocol violation
//! # drop((mapper, sent));
//! ```
//!
//! - Two ports back to back: [`X540::pair`] (LAN_ID 0 and 1), or [`X540Port::wire_to`]. Then
//!   [`run_until_idle`]`(&[&a, &b])` steps both until frames stop moving.
//! - Asynchronous, like hardware: [`X540Port::start_thread`] returns a [`ModelThread`] guard; the model polls
//!   the doorbells (RDT/TDT, written without any lock) and rings in its own thread until the guard is dropped.
//! - Other wires: [`X540Port::wire_to_pcap`] (TX to a pcap file), [`X540Port::inject_pcap`] (pcap records to RX),
//!   [`X540Port::wire_to_tap`] (a TAP interface: the kernel is the link partner).
//! - Faults: [`X540Port::link_flap`], [`X540Port::set_cable`], [`X540Port::inject_error`] (CRC / length error
//!   write-backs), [`X540Port::tx_hang`], [`X540Port::set_reset_delay`] (slow reset),
//!   [`X540Config::phy_powered_down`]. Detected driver faults: [`X540Port::faults`],
//!   [`X540Port::assert_no_faults`], [`X540Config::panic_on_fault`].
//!
//! # What the model does
//!
//! Reset (CTRL.RST/LNK_RST, self-clearing after [`X540Config::reset_delay`], registers back to defaults, RAL/RAH(0)
//! reloaded with the permanent MAC), EEC.ARD and RDRXCTL.DMAIDONE after the reset, STATUS.LAN_ID/GIO, SW/FW
//! semaphores (SWSM.SMBI, SW_FW_SYNC.REGSMP granted on read), an MDIO PHY (ID, low-power bit, advertisement,
//! AN restart, status), LINKS (link and speed, after [`X540Config::link_up_delay`]), EICR.LSC; filters
//! (RAL/RAH exact match over 128 entries, FCTRL.BAM/UPE/MPE, MTA with MCSTCTRL.MO, VFTA with VLNCTRL.VFE, DPF);
//! RSS (MRQC field enables, RSSRK key, RETA 4-bit entries, Toeplitz); RX rings (advanced one-buffer descriptors,
//! SRRCTL buffer size, multi-descriptor frames, DROP_EN, write-back with DD/EOP/length/RSS type and hash/packet
//! type/checksum status/VLAN, RXDCTL.VME strip, CRC strip per HLREG0.RXCRCSTRP, jumbo per HLREG0.JUMBOEN and
//! MAXFRS); TX rings (advanced data and context descriptors, multi-descriptor frames, IXSM/TXSM checksum insertion,
//! VLE, IFCS, TXPADEN, RS → DD write-back, TDWBAL head write-back); clear-on-read statistics (docs/hw/ixgbe.md §13,
//! L/H pairs latched on the L read); HLREG0.LPBK loopback; interrupts (causes, masks, IVAR vectors, auto-clear and
//! auto-mask, EITR throttling) signalled through [`x540::IrqSink`]; the NVM read through EERD (checksum, MAC).
//!
//! # What it does not do
//!
//! Interrupts beyond what docs/hw/ixgbe.md §12.1 lists (LLI, the real EITR counter, INTx level semantics), TSO, SCTP CRC offload, header split, RSC,
//! flow director, DCB/VMDq/SR-IOV pools, flow control (PAUSE frames are neither sent nor honoured), link timing of a
//! real 10GBASE-T PHY; of the 82599's differences: modules other than one passive DA cable, SFP+ hot-plug, LESM firmware
//! and its AUTOC semaphore, backplane/copper media, the UDP zero-checksum errata, the SDP interrupt bits.
//!
//! # The 82599 variant
//!
//! [`X540Config::x82599`] (or [`Chip::X82599`]) makes an 82599ES SFP+ port (8086:10FB, BAR0 512 KiB) on the same
//! register map: MAC link through AUTOC/AUTOC2 and the TX laser on ESDP.SDP3, an SFP+ cage holding a passive DA cable
//! (ESDP.SDP2, its ID EEPROM bit-banged over I2CCTL), CTRL.LNK_RST versus CTRL.RST, and the
//! RX security-block errata handshake (SECRXCTRL.RX_DIS / SECRXSTAT.SECRX_RDY around RXCTRL.RXEN), with faults
//! for its misuse. See [`x540`]'s `x82599` module docs for the exact rules.
//!
//! # The X710 / XL710 / XXV710 model
//!
//! [`X710::new`]`(`[`X710Config`]`)` makes one PF of a 700-series adapter ([`X710Part`]: X710 8086:1572, XL710
//! 8086:1583 / 8086:1584, XXV710 8086:158B; BAR0 8 MiB) as an [`X710Bar`] (the driver's `RegisterSpace`) and an
//! [`X710Port`]; [`X710::pair`] wires two PFs back to back. It is written from the project's notes,
//! `docs/hw/i40e.md`, independently of any i40e driver (see [`x710`]). Its firmware answers the admin queue
//! asynchronously (a command completes when the model runs: [`X710Port::step`], [`run_until_idle_x710`] or
//! [`X710Port::start_thread`]), checks each descriptor's flags, lengths and every parameter byte against the
//! notes' tables, and answers an unknown opcode with ESRCH. Queue contexts are read from host memory through the
//! HMC segment descriptors when a queue is enabled, and any bit outside the context fields is a fault. Faults to
//! inject: [`X710Port::inject_aq_error`] (and [`X710Port::inject_aq_errors`], N times: a firmware answering EAGAIN
//! while busy), [`X710Port::stall_admin_queue`], [`X710Port::link_flap`], [`X710Port::set_cable`],
//! [`X710Port::inject_error`], [`X710Port::tx_hang`], [`X710Port::set_stat`], [`X710Port::set_loopback`] (a port
//! left in loopback); parts that differ: [`X710Config::mac_config_needs_link`] (Set MAC Config taken only with the
//! link up), [`X710Config::nvm_pause`] (flow control the NVM leaves on); RX-control registers written by MMIO rather
//! than command 0x0207 are counted ([`X710Counters::rx_ctl_mmio_writes`]); detected
//! driver faults land in the same [`FaultLog`] as the X540's (including malicious-driver detection on TX).
//! MSI-X messages go to [`X710Port::set_irq_sink`] (vector 0 for PFINT_ICR0 causes, queue vectors by QINT_*CTL);
//! the NVM shadow RAM reads through GLNVM_SRCTL. Not modelled: interrupt throttling, VFs and SR-IOV, more than one VSI or TC,
//! flow director, header split, TSO, SCTP CRC offload, hash (non-perfect) MAC filters, the X722.
//!
//! # The SP670 (hinic3) model
//!
//! [`Sp670::new`]`(`[`Sp670Config`]`)` makes one hinic3 PF (19e5:0222) as an [`Sp670Port`], whose three BARs are
//! [`Sp670Port::cfg_bar`] (BAR1, the function CSRs, big-endian per 32-bit word as on the bus: a driver that forgets
//! the swap reads garbage and its writes are refused as faults), [`Sp670Port::mgmt_bar`] (BAR3, PPF/MPF election)
//! and [`Sp670Port::db_bar`] (BAR4, 64-bit doorbells), or all three as one type, [`Sp670Bar`], from
//! [`Sp670Port::bars`]; [`Sp670::pair`] wires two cards back to back. It is written from the project's notes,
//! `docs/hw/hinic3.md`, independently of any hinic3 driver (see [`sp670`]). The management
//! CPU answers mailbox requests (inline segments or DMA mode) on the AEQ the request names, checks each request
//! field by field against the notes' layouts, answers an unknown command with status 0xFF and a malformed one with
//! [`sp670::STATUS_BAD`] and a fault; the command queue parses SQ/RQ contexts, the RSS tables and RQ flushes; SQs
//! and RQs run on 16-byte WQEBBs with CI write-back and 32-byte CQEs. Faults to inject:
//! [`Sp670Port::inject_mgmt_error`], [`Sp670Port::inject_cmdq_error`], [`Sp670Port::stall_mailbox`],
//! [`Sp670Port::stall_cmdq`], [`Sp670Port::link_flap`], [`Sp670Port::inject_error`], [`Sp670Port::tx_hang`]. Not
//! modelled: interrupts, CEQs and MSI-X delivery, VFs, the enhanced cmdq and the compact/HTN formats of docs/hw/hinic3.md §12a (their
//! feature bits are never offered), TSO, LRO, UFO, tunnels, VLAN filtering, multicast MAC filters.
//!
//! Conventions the model assumes that a driver must meet: frames on wires and in [`X540Port::inject`] carry no FCS;
//! frames shorter than 60 bytes are runts (RUC) unless padded by the sender's TXPADEN; TCP/UDP checksum offload
//! expects the checksum field seeded with the pseudo-header sum and IPv4 header checksum offload expects the field
//! zeroed (as DPDK's `rte_net_intel_cksum_prepare` does), because the hardware sums what is there.

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod dma;
mod error;
pub mod fault;
pub mod irq;
pub mod model;
pub mod net;
pub mod pci;
pub mod sp670;
mod tap;
pub mod vdev;
mod wire;
pub mod x540;
pub mod x710;

pub use dma::IovaMap;
pub use error::Error;
pub use fault::{Fault, FaultLog};
/// The names the X710 and SP670 models' stepping had before every model shared [`run_until_idle`].
pub use model::{run_until_idle as run_until_idle_x710, run_until_idle as run_until_idle_sp670};
pub use model::{run_until_idle, FrameCounts, IrqSink, Model, ModelPort, ModelThread, SharedBar};
pub use pci::PciIdentity;
pub use sp670::{
    Sp670, Sp670Bar, Sp670CfgBar, Sp670Config, Sp670Counters, Sp670DbBar, Sp670MgmtBar, Sp670Port, Sp670RxError,
    Sp670State, Sp670Thread,
};
pub use x540::{Chip, LinkSpeed, ModelCounters, ResetRecord, RxError, SimBar, X540Config, X540Port, X540State, X540};
pub use x710::{AqRc, X710Bar, X710Config, X710Counters, X710Part, X710Port, X710RxError, X710State, X710Thread, X710};
