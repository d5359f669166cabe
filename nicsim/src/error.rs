//! The model's one error type: what a model reports, as a [`crate::Fault`] or to its caller, when the driver broke
//! a rule of the NIC's hardware notes or pointed the device at memory outside its IOVA map.

/// What went wrong on the device side.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The driver broke a rule of the hardware notes.
    #[error("{}{rule}", if at.is_empty() { String::new() } else { format!("{at}: ") })]
    Violation {
        /// The register, queue, context or descriptor the rule is about (empty where the caller names it).
        at: String,
        /// What was wrong, and the rule (with its section of docs/hw/ where there is one).
        rule: String,
    },
    /// Host memory the device had to reach (a descriptor, a buffer, a context, a write-back) is outside the IOVA
    /// map: what it was, and where.
    #[error("{0}")]
    Unmapped(String),
}

impl From<Error> for crate::Fault {
    fn from(e: Error) -> Self {
        crate::Fault::Protocol { what: e.to_string() }
    }
}
