//! The key-value server's logic: [`Store`] (the keyspace), command execution with Redis 7.0's replies, and
//! [`Session`], the per-connection driver a transport feeds.
//!
//! Commands: PING, ECHO, SET (NX/XX/GET/EX/PX/EXAT/PXAT/KEEPTTL), GET, DEL, EXISTS, INCR, DECR, INCRBY, DECRBY,
//! MSET, MGET, LPUSH, RPUSH, LPOP, RPOP (with count), LRANGE, SADD, SPOP (with count), HSET, ZADD
//! (NX/XX/GT/LT/CH/INCR), ZPOPMIN, CONFIG GET, COMMAND (DOCS/COUNT), HELLO (RESP2 only), CLIENT
//! ID/GETNAME/SETNAME, SELECT 0, DBSIZE, FLUSHALL, FLUSHDB, QUIT: enough for redis-cli and every default test of
//! redis-benchmark 7.0.

mod admin;
mod commands;
mod session;
mod store;

pub use commands::REDIS_VERSION;
pub use session::Session;
pub use store::{Store, StoreStats, Value, ZSet};

#[cfg(test)]
mod tests;
