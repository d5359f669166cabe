//! Faults: things the device side saw go wrong. A model records every DMA outside its IOVA map and every
//! programming error it can detect (a tail past the ring, a legacy descriptor where advanced ones are required...);
//! tests assert that there are none ([`FaultLog::assert_none`]) or have the model panic at once
//! ([`crate::x540::X540Config::panic_on_fault`]).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// One recorded fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The device tried to read or write host memory outside every mapped region.
    Dma {
        /// First IOVA of the access.
        iova: u64,
        /// Length of the access in bytes.
        len: usize,
        /// True for a device write (to host memory).
        write: bool,
        /// What the device was doing (e.g. "RX descriptor fetch, queue 3").
        what: String,
    },
    /// A register access outside the BAR or not 4-byte aligned.
    Register {
        /// Byte offset.
        offset: usize,
        /// Read or write, and why it is wrong.
        what: String,
    },
    /// The driver programmed the device in a way docs/hw/ixgbe.md rules out.
    Protocol {
        /// Description, naming the register or queue.
        what: String,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Dma { iova, len, write, what } => write!(
                f,
                "DMA {} of {len} bytes at IOVA {iova:#x} outside the IOVA map ({what})",
                if *write { "write" } else { "read" }
            ),
            Fault::Register { offset, what } => write!(f, "register {offset:#x}: {what}"),
            Fault::Protocol { what } => write!(f, "protocol: {what}"),
        }
    }
}

/// A shared list of faults, with an optional panic on the first one.
#[derive(Debug, Default)]
pub struct FaultLog {
    faults: Mutex<Vec<Fault>>,
    panic_on_fault: AtomicBool,
}

impl FaultLog {
    /// An empty log; `panic_on_fault` makes [`FaultLog::record`] panic.
    pub fn new(panic_on_fault: bool) -> Self {
        FaultLog { faults: Mutex::new(Vec::new()), panic_on_fault: AtomicBool::new(panic_on_fault) }
    }

    /// Records a fault (and panics if so configured).
    pub fn record(&self, fault: Fault) {
        let panic = self.panic_on_fault.load(Ordering::Relaxed);
        let text = panic.then(|| fault.to_string());
        self.faults.lock().unwrap_or_else(|e| e.into_inner()).push(fault);
        if let Some(text) = text {
            panic!("nicsim fault: {text}");
        }
    }

    /// Turns panic-on-fault on or off.
    pub fn set_panic_on_fault(&self, on: bool) {
        self.panic_on_fault.store(on, Ordering::Relaxed);
    }

    /// All faults so far.
    pub fn faults(&self) -> Vec<Fault> {
        self.faults.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Removes and returns all faults so far.
    pub fn take(&self) -> Vec<Fault> {
        std::mem::take(&mut *self.faults.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Panics with the list if any fault was recorded.
    #[track_caller]
    pub fn assert_none(&self) {
        let faults = self.faults();
        if !faults.is_empty() {
            let list: Vec<String> = faults.iter().map(|f| format!("  - {f}")).collect();
            panic!("nicsim recorded {} fault(s):\n{}", faults.len(), list.join("\n"));
        }
    }
}
