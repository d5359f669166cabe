//! What the tests that run Debian's Redis clients against a server (servers' kv-server, redis-server under
//! netstack-preload) share.

/// redis-benchmark 7.0's default tests, as named in its output.
pub const BENCHMARK_DEFAULT_TESTS: &[&str] = &[
    "PING_INLINE",
    "PING_MBULK",
    "SET",
    "GET",
    "INCR",
    "LPUSH",
    "RPUSH",
    "LPOP",
    "RPOP",
    "SADD",
    "HSET",
    "SPOP",
    "ZADD",
    "ZPOPMIN",
    "LPUSH (needed to benchmark LRANGE)",
    "LRANGE_100 (first 100 elements)",
    "LRANGE_300 (first 300 elements)",
    "LRANGE_500 (first 500 elements)",
    "LRANGE_600 (first 600 elements)",
    "MSET (10 keys)",
];
