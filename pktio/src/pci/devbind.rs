//! The logic of the `devbind` tool (filled in below).
