//! What goes wrong with the device itself (as opposed to a bad argument, which stays a [`pktio::Error`] such as
//! `InvalidConfig`). These reach the port API as [`pktio::Error::Driver`] with this error as the source:
//! `err.driver_error::<ixgbe::Error>()` tells a hung reset from a queue that never enabled.

use std::time::Duration;

/// A device failure of an X540/82599 or 82576 port.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A register never reached the value the driver polled for.
    #[error(
        "{what} did not complete within {budget:?} ({register} = {last_value:#010x}); the device may be hung or \
         still resetting: try again, or reset it (e.g. unbind and rebind vfio-pci)"
    )]
    Timeout {
        /// What the driver waited for (e.g. "device reset (CTRL.RST/LNK_RST)", "RX queue 3 enable").
        what: String,
        /// The register polled, as the datasheet names it (e.g. "CTRL", "RXDCTL").
        register: &'static str,
        /// Its last value.
        last_value: u32,
        /// How long the driver waited.
        budget: Duration,
    },
    /// RAL/RAH(0) hold no usable address after reset.
    #[error("no valid permanent MAC address in RAL/RAH(0) (RAL={ral:#010x} RAH={rah:#010x}); the NVM may be blank")]
    NoPermanentMac {
        /// RAL(0).
        ral: u32,
        /// RAH(0).
        rah: u32,
    },
    /// A TX queue's watchdog found it hung (docs/hw/ixgbe.md §6.3): the driver restarted the queue and dropped
    /// the packets it held.
    #[error("{hang}; the driver restarted the queue ({restarts} restarts, {dropped} packets dropped)")]
    TxHang {
        /// The last hang.
        hang: ringkit::TxHang,
        /// Queue restarts so far.
        restarts: u64,
        /// Packets they dropped.
        dropped: u64,
    },
    /// The PHY could not be reached or refused a command.
    #[error("PHY: {reason}")]
    Phy {
        /// What failed, with the register value seen.
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
