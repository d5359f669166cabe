//! The crate's one error type: why a client's bytes cannot be parsed.

use thiserror::Error;

/// A request a client sent that the parser refuses; the session answers it and closes the connection.
///
/// The RESP messages are redis-server's wording (after `ERR `), so clients see what they would see from Redis.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// `*<n>` with n not an integer or above the array limit.
    #[error("Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    /// `$<n>` with n not an integer, negative, or above the bulk limit.
    #[error("Protocol error: invalid bulk length")]
    InvalidBulkLength,
    /// An array element that is not a bulk string.
    #[error("Protocol error: expected '$', got '{0}'")]
    ExpectedBulk(char),
    /// An inline command line longer than the inline limit without its newline.
    #[error("Protocol error: too big inline request")]
    InlineTooBig,
    /// A `*` header line longer than the inline limit.
    #[error("Protocol error: too big mbulk count string")]
    MultibulkHeaderTooBig,
    /// A `$` header line longer than the inline limit.
    #[error("Protocol error: too big bulk count string")]
    BulkHeaderTooBig,
    /// An inline command with an unterminated quote, or a closing quote not followed by a space.
    #[error("Protocol error: unbalanced quotes in request")]
    UnbalancedQuotes,
}
