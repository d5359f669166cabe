//! What goes wrong with the device itself (as opposed to a bad argument, which stays a [`pktio::Error`] such as
//! `InvalidConfig`). These reach the port API as [`pktio::Error::Driver`] with this error as the source:
//! `err.driver_error::<i40e::Error>()` tells a firmware that refused a command from a queue that never enabled.

use std::time::Duration;

/// A device failure of a 700-series port.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A register never reached the value the driver polled for.
    #[error(
        "{what} did not complete within {budget:?} ({register} = {last_value:#010x}); the device may be hung or \
         still resetting: try again, or reset it (e.g. unbind and rebind vfio-pci)"
    )]
    Timeout {
        /// What the driver waited for (e.g. "PF software reset", "TX queue 3 enable").
        what: String,
        /// The register polled, as docs/hw/i40e.md names it (e.g. "PFGEN_CTRL", "QTX_ENA").
        register: &'static str,
        /// Its last value.
        last_value: u32,
        /// How long the driver waited.
        budget: Duration,
    },
    /// A TX queue's watchdog found it hung: the driver restarted the queue (docs/hw/i40e.md §9.4) and dropped the
    /// packets it held.
    #[error("{hang}; the driver restarted the queue ({restarts} restarts, {dropped} packets dropped)")]
    TxHang {
        /// The last hang.
        hang: ringkit::TxHang,
        /// Queue restarts so far.
        restarts: u64,
        /// Packets they dropped.
        dropped: u64,
    },
    /// The firmware did not complete an admin-queue command (PF_ATQH never reached the tail).
    #[error(
        "admin-queue command {opcode:#06x} ({name}) not completed by the firmware within {budget:?} \
         (PF_ATQH = {head}, PF_ATQLEN = {atqlen:#010x}{crit}); the firmware may be busy or in recovery mode",
        crit = if *atqlen & crate::regs::atqlen::ATQCRIT != 0 { ", critical error" } else { "" }
    )]
    AdminTimeout {
        /// The command's opcode.
        opcode: u16,
        /// Its name.
        name: &'static str,
        /// PF_ATQH when the driver gave up.
        head: u32,
        /// PF_ATQLEN when the driver gave up (ATQCRIT: the firmware reports a critical error).
        atqlen: u32,
        /// How long the driver waited.
        budget: Duration,
    },
    /// The firmware completed an admin-queue command with an error code.
    #[error("admin-queue command {opcode:#06x} ({name}) failed: firmware status {status} ({status_name})")]
    AdminQueue {
        /// The command's opcode.
        opcode: u16,
        /// Its name.
        name: &'static str,
        /// `retval & 0xFF`, the admin-queue error code (docs/hw/i40e.md §5.2).
        status: u8,
        /// The code's name (e.g. "EINVAL").
        status_name: &'static str,
    },
    /// The firmware speaks an admin-queue API this driver was not written for.
    #[error(
        "admin-queue API {}.{} reported by the firmware (firmware {fw}); this driver knows API {}.x (up to {}.{}): \
         update the driver, or flash an NVM with a supported firmware",
        device_has.0, device_has.1, driver_knows.0, driver_knows.0, driver_knows.1
    )]
    ApiVersion {
        /// The newest (major, minor) the driver knows.
        driver_knows: (u16, u16),
        /// What the device reported.
        device_has: (u16, u16),
        /// The firmware version, "major.minor".
        fw: String,
    },
    /// The firmware is in recovery mode (GL_FWSTS.FWS1B non-zero): it runs no LAN function.
    #[error("the firmware is in recovery mode (GL_FWSTS = {gl_fwsts:#010x}); update or restore the NVM")]
    RecoveryMode {
        /// GL_FWSTS.
        gl_fwsts: u32,
    },
    /// The firmware's answer to a command does not make sense (too short, no element of the expected kind).
    #[error("admin-queue command {opcode:#06x} ({name}): unexpected answer: {reason}")]
    BadAnswer {
        /// The command's opcode.
        opcode: u16,
        /// Its name.
        name: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The HMC cannot hold the contexts asked for.
    #[error("LAN HMC: {reason}")]
    Hmc {
        /// What does not fit.
        reason: String,
    },
}

impl Error {
    /// This error as the port API's, for port `port`.
    pub fn at(self, port: &str) -> pktio::Error {
        pktio::Error::driver(port, self)
    }
}

/// The register a poll gave up on, named, with its last value.
pub(crate) fn timeout(what: impl Into<String>, register: &'static str, last_value: u32, budget: Duration) -> Error {
    Error::Timeout { what: what.into(), register, last_value, budget }
}
