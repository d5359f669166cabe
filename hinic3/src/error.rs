//! What goes wrong with the device itself (a bad argument stays a [`pktio::Error`] such as `InvalidConfig`). These
//! reach the port API as [`pktio::Error::Driver`]: `err.driver_error::<hinic3::Error>()` tells a firmware that refused
//! a command from one that never answered.

use std::time::Duration;

/// A device failure of a hinic3 port.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A register never reached the value the driver polled for.
    #[error(
        "{what} did not complete within {budget:?} ({register} = {last_value:#010x}); the device may be hung, \
         resetting or unreachable (0xffffffff: PCIe link down)"
    )]
    Timeout {
        /// What the driver waited for.
        what: &'static str,
        /// The register polled, as docs/hw/hinic3.md names it.
        register: &'static str,
        /// Its last value (already byte-swapped).
        last_value: u32,
        /// How long the driver waited.
        budget: Duration,
    },
    /// An SQ's watchdog found it hung: its consumer index stood still with the ring full (docs/hw/hinic3.md §10.2, §18).
    /// The SQ is only re-created with its context: stop and start the port.
    #[error("{hang}; stop and start the port to re-create the SQ")]
    TxHang {
        /// The last hang.
        hang: ringkit::TxHang,
    },
    /// The management CPU answered a mailbox command with a non-zero status.
    #[error("management command {module_name} {command} failed: status {status:#04x} ({status_name})")]
    Mgmt {
        /// Module ID (docs/hw/hinic3.md §7.1).
        module: u8,
        /// Its name.
        module_name: &'static str,
        /// Command number.
        command: u16,
        /// The answer's status (header STATUS bit as 0x100, or the body's status byte).
        status: u16,
        /// What the status means.
        status_name: &'static str,
    },
    /// No answer (write-back or AEQ) to a mailbox command in time.
    #[error(
        "management command {module_name} {command} got no {stage} within {budget:?}; the firmware may be busy, \
         hung, or the AEQ is not reaching host memory (check the IOMMU mapping)"
    )]
    MgmtTimeout {
        /// Module ID.
        module: u8,
        /// Its name.
        module_name: &'static str,
        /// Command number.
        command: u16,
        /// "mailbox write-back" or "answer on AEQ 1".
        stage: &'static str,
        /// How long the driver waited.
        budget: Duration,
    },
    /// The mailbox write-back reported a send error.
    #[error("mailbox send of {module_name} {command} failed: write-back error code {code:#06x} ({reason})")]
    MboxSend {
        /// Module ID.
        module: u8,
        /// Its name.
        module_name: &'static str,
        /// Command number.
        command: u16,
        /// Write-back bits 15:8 shifted into place (docs/hw/hinic3.md §6.2).
        code: u16,
        /// What it means.
        reason: &'static str,
    },
    /// An answer that does not fit what was asked (length, module, command).
    #[error("malformed answer to {module_name} {command}: {reason}")]
    BadAnswer {
        /// Module ID.
        module: u8,
        /// Its name.
        module_name: &'static str,
        /// Command number.
        command: u16,
        /// What was wrong.
        reason: String,
    },
    /// A request body the mailbox cannot carry.
    #[error("request {module_name} {command} of {len} bytes: the mailbox carries 1 to 2040 (docs/hw/hinic3.md §6.1)")]
    MboxBody {
        /// Module ID.
        module: u8,
        /// Its name.
        module_name: &'static str,
        /// Command number.
        command: u16,
        /// The body's length.
        len: usize,
    },
    /// A command-queue command did not complete in time.
    #[error("command-queue command L2NIC {command} not completed within {budget:?} (WQE {pi})")]
    CmdqTimeout {
        /// The ucode command number (docs/hw/hinic3.md §8.6).
        command: u8,
        /// The WQE's producer index.
        pi: u16,
        /// How long the driver waited.
        budget: Duration,
    },
    /// A command-queue command completed with an error.
    #[error("command-queue command L2NIC {command} failed: error code {code:#x}, direct result {result:#x}")]
    Cmdq {
        /// The ucode command number.
        command: u8,
        /// status_info bits 30:0.
        code: u32,
        /// The direct result (0 is success).
        result: u64,
    },
    /// The device offers only something this driver does not implement.
    #[error("unsupported device: {0}")]
    Unsupported(String),
}

/// The name of a management module (docs/hw/hinic3.md §7.1).
pub fn module_name(module: u8) -> &'static str {
    match module {
        0 => "COMM",
        1 => "L2NIC",
        7 => "CFGM",
        14 => "HILINK",
        _ => "module?",
    }
}

/// What a management status byte means (docs/hw/hinic3.md §7.1).
pub fn status_name(status: u16) -> &'static str {
    match status {
        0 => "ok",
        0x04 => "the PF already set the VF's MAC",
        0x06 => "already exists",
        0x0B => "table empty",
        0x0C => "table full",
        0xFF => "command not supported",
        0x100 => "error bit in the answer header",
        _ => "unknown status",
    }
}

impl Error {
    /// This error as a port error of `port`.
    pub fn at(self, port: &str) -> pktio::Error {
        pktio::Error::driver(port, self)
    }
}
