//! The HTTP server's logic: request parsing ([`parse_request`]) and [`Session`], serving a static page at `/`
//! (and `/index.html`) and a status page of caller-supplied counters at `/status`.
//!
//! Not supported: chunked request bodies (501), methods other than GET and HEAD on the served paths (405), a
//! Date header (no wall clock here), absolute-form targets.

mod parse;
mod session;

pub use parse::{parse_partial, parse_request, Limits, Parsed, Request, Waiting};
pub use session::{Session, Site, STATUS_CODES};
