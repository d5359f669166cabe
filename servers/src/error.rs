//! The crate's one error type: why a client's bytes (RESP or HTTP) cannot be parsed.

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
    /// HTTP: a request line or header that does not follow RFC 9112 (the reason says which part).
    #[error("bad request: {0}")]
    HttpBadRequest(&'static str),
    /// HTTP: the request line and headers do not end within the header limit.
    #[error("request header fields too large")]
    HttpHeadersTooLarge,
    /// HTTP: a Content-Length above the body limit.
    #[error("content too large")]
    HttpBodyTooLarge,
    /// HTTP: a Transfer-Encoding (chunked request bodies are not implemented).
    #[error("transfer-encoding not implemented")]
    HttpTransferEncoding,
    /// HTTP: a version other than 1.0 and 1.1.
    #[error("HTTP version not supported")]
    HttpVersion,
    /// HTTP: an `Expect` other than `100-continue`.
    #[error("expectation failed")]
    HttpExpectation,
}

impl ProtocolError {
    /// The HTTP status code answering this error (400 for the RESP variants, which HTTP never produces).
    pub fn http_status(&self) -> u16 {
        match self {
            ProtocolError::HttpHeadersTooLarge => 431,
            ProtocolError::HttpBodyTooLarge => 413,
            ProtocolError::HttpTransferEncoding => 501,
            ProtocolError::HttpVersion => 505,
            ProtocolError::HttpExpectation => 417,
            _ => 400,
        }
    }
}
