//! Replies checked byte for byte against redis-server 7.0.15 (Debian's), command by command in one sequence.

use super::commands::format_double;
use super::{Session, Store};
use crate::SessionAction;

fn encode(args: &[&str]) -> Vec<u8> {
    let mut v = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        v.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    v
}

/// Each command, then the exact bytes redis-server 7.0.15 answered, with the store carried through the list.
const REDIS_7_0_REPLIES: &[(&[&str], &[u8])] = &[
    (&["PING"], b"+PONG\r\n"),
    (&["PING", "hi"], b"$2\r\nhi\r\n"),
    (&["PING", "a", "b"], b"-ERR wrong number of arguments for 'ping' command\r\n"),
    (&["FOO"], b"-ERR unknown command 'FOO', with args beginning with: \r\n"),
    (&["FOO", "a", "b"], b"-ERR unknown command 'FOO', with args beginning with: 'a' 'b' \r\n"),
    (&["ECHO"], b"-ERR wrong number of arguments for 'echo' command\r\n"),
    (&["SET", "k"], b"-ERR wrong number of arguments for 'set' command\r\n"),
    (&["SET", "k", "v", "EX", "0"], b"-ERR invalid expire time in 'set' command\r\n"),
    (&["SET", "k", "v", "EX", "x"], b"-ERR value is not an integer or out of range\r\n"),
    (&["SET", "k", "v", "NX", "XX"], b"-ERR syntax error\r\n"),
    (&["SET", "k", "v", "FOO"], b"-ERR syntax error\r\n"),
    (&["SET", "k", "v", "PX", "-5"], b"-ERR invalid expire time in 'set' command\r\n"),
    (&["SET", "k", "v", "EX", "10", "PX", "5"], b"-ERR syntax error\r\n"),
    (&["SET", "k", "v", "GET"], b"$-1\r\n"),
    (&["SET", "k", "w", "NX", "GET"], b"$1\r\nv\r\n"),
    (&["SET", "k", "w", "XX", "GET"], b"$1\r\nv\r\n"),
    (&["GET", "k"], b"$1\r\nw\r\n"),
    (&["LPUSH", "l", "a", "b", "c"], b":3\r\n"),
    (&["GET", "l"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    (&["SET", "l", "x", "GET"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    (&["INCR", "k"], b"-ERR value is not an integer or out of range\r\n"),
    (&["SET", "n", "9223372036854775807"], b"+OK\r\n"),
    (&["INCR", "n"], b"-ERR increment or decrement would overflow\r\n"),
    (&["SET", "m", "-9223372036854775808"], b"+OK\r\n"),
    (&["DECR", "m"], b"-ERR increment or decrement would overflow\r\n"),
    (&["INCR", "new"], b":1\r\n"),
    (&["DECR", "new2"], b":-1\r\n"),
    (&["SET", "sp", " 1"], b"+OK\r\n"),
    (&["INCR", "sp"], b"-ERR value is not an integer or out of range\r\n"),
    (&["INCR", "l"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    (&["MSET", "a"], b"-ERR wrong number of arguments for 'mset' command\r\n"),
    (&["MSET", "a", "1", "b", "2"], b"+OK\r\n"),
    (&["MGET", "a", "l", "zz"], b"*3\r\n$1\r\n1\r\n$-1\r\n$-1\r\n"),
    (&["LPOP", "l", "0"], b"*0\r\n"),
    (&["LPOP", "l", "-1"], b"-ERR value is out of range, must be positive\r\n"),
    (&["LPOP", "l", "x"], b"-ERR value is out of range, must be positive\r\n"),
    (&["LPOP", "l", "2"], b"*2\r\n$1\r\nc\r\n$1\r\nb\r\n"),
    (&["LPOP", "nol", "2"], b"*-1\r\n"),
    (&["LPOP", "nol"], b"$-1\r\n"),
    (&["RPOP", "l"], b"$1\r\na\r\n"),
    (&["RPOP", "l", "5"], b"*-1\r\n"),
    (&["LPOP", "l", "1", "2"], b"-ERR wrong number of arguments for 'lpop' command\r\n"),
    (&["RPUSH", "l2", "1", "2", "3", "4"], b":4\r\n"),
    (&["LRANGE", "l2", "0", "-1"], b"*4\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n"),
    (&["LRANGE", "l2", "-100", "100"], b"*4\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n"),
    (&["LRANGE", "l2", "3", "1"], b"*0\r\n"),
    (&["LRANGE", "l2", "x", "1"], b"-ERR value is not an integer or out of range\r\n"),
    (&["LRANGE", "nol", "0", "1"], b"*0\r\n"),
    (&["SADD", "s", "a", "b", "a"], b":2\r\n"),
    (&["SPOP", "s", "0"], b"*0\r\n"),
    (&["SPOP", "nos"], b"$-1\r\n"),
    (&["SPOP", "nos", "3"], b"*0\r\n"),
    (&["SPOP", "s", "-1"], b"-ERR value is out of range, must be positive\r\n"),
    (&["HSET", "h", "f"], b"-ERR wrong number of arguments for 'hset' command\r\n"),
    (&["HSET", "h", "f", "v", "g", "w", "f", "x"], b":2\r\n"),
    (&["ZADD", "z", "1", "a", "2", "b"], b":2\r\n"),
    (&["ZADD", "z", "x", "a"], b"-ERR value is not a valid float\r\n"),
    (&["ZADD", "z", "1"], b"-ERR wrong number of arguments for 'zadd' command\r\n"),
    (&["ZADD", "z", "NX", "XX", "1", "a"], b"-ERR XX and NX options at the same time are not compatible\r\n"),
    (&["ZADD", "z", "CH", "5", "a", "3", "c"], b":2\r\n"),
    (&["ZADD", "z", "GT", "LT", "1", "a"], b"-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"),
    (&["ZADD", "z", "INCR", "1", "a", "2", "b"], b"-ERR INCR option supports a single increment-element pair\r\n"),
    (&["ZADD", "z", "INCR", "1.5", "a"], b"$3\r\n6.5\r\n"),
    (&["ZADD", "z", "0.1", "d"], b":1\r\n"),
    (&["ZADD", "z", "inf", "e"], b":1\r\n"),
    (&["ZPOPMIN", "z"], b"*2\r\n$1\r\nd\r\n$19\r\n0.10000000000000001\r\n"),
    (&["ZPOPMIN", "z", "2"], b"*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n"),
    (&["ZPOPMIN", "z", "-1"], b"-ERR value is out of range, must be positive\r\n"),
    (&["ZPOPMIN", "noz"], b"*0\r\n"),
    (&["ZPOPMIN", "z", "10"], b"*4\r\n$1\r\na\r\n$3\r\n6.5\r\n$1\r\ne\r\n$3\r\ninf\r\n"),
    (&["ZADD", "z2", "1e300", "a", "-0.0", "b", "123456789012345678", "c"], b":3\r\n"),
    (&["ZPOPMIN", "z2", "5"], b"*6\r\n$1\r\nb\r\n$1\r\n0\r\n$1\r\nc\r\n$22\r\n1.2345678901234568e+17\r\n$1\r\na\r\n$23\r\n1.0000000000000001e+300\r\n"),
    (&["CONFIG", "GET", "save"], b"*2\r\n$4\r\nsave\r\n$0\r\n\r\n"),
    (&["CONFIG", "GET", "appendonly"], b"*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"),
    (&["CONFIG", "GET", "nosuch"], b"*0\r\n"),
    (&["CONFIG", "GET", "save", "appendonly"], b"*4\r\n$10\r\nappendonly\r\n$2\r\nno\r\n$4\r\nsave\r\n$0\r\n\r\n"),
    (&["CONFIG", "FOO"], b"-ERR unknown subcommand 'FOO'. Try CONFIG HELP.\r\n"),
    (&["CONFIG"], b"-ERR wrong number of arguments for 'config' command\r\n"),
    (&["COMMAND", "DOCS", "nosuch"], b"*0\r\n"),
    (&["HELLO", "4"], b"-NOPROTO unsupported protocol version\r\n"),
    (&["HELLO", "x"], b"-ERR Protocol version is not an integer or out of range\r\n"),
    (&["CLIENT", "SETINFO", "lib-name", "x"], b"-ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.\r\n"),
    (&["CLIENT", "SETNAME", "x"], b"+OK\r\n"),
    (&["CLIENT", "GETNAME"], b"$1\r\nx\r\n"),
    (&["SELECT", "0"], b"+OK\r\n"),
    (&["SELECT", "20"], b"-ERR DB index is out of range\r\n"),
    (&["SELECT", "x"], b"-ERR value is not an integer or out of range\r\n"),
    (&["DEL", "a", "b", "a"], b":2\r\n"),
    (&["EXISTS", "k", "k", "zz"], b":2\r\n"),
    (&["GET"], b"-ERR wrong number of arguments for 'get' command\r\n"),
    (&["get", "a", "b"], b"-ERR wrong number of arguments for 'get' command\r\n"),
    (&["SET", "k", "v", "KEEPTTL", "EX", "5"], b"-ERR syntax error\r\n"),
    (&["SET", "big", "v", "EX", "9999999999999999"], b"-ERR invalid expire time in 'set' command\r\n"),
    (&["DECR", "sp"], b"-ERR value is not an integer or out of range\r\n"),
    (&["INCR", "k2", "x"], b"-ERR wrong number of arguments for 'incr' command\r\n"),
    (&["ECHO", "a", "b"], b"-ERR wrong number of arguments for 'echo' command\r\n"),
    (&["SADD", "l2", "x"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    (&["HSET", "l2", "a", "b"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    (&["ZADD", "l2", "1", "a"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    (&["LPUSH", "s", "x"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    (&["ZPOPMIN", "s"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    (&["SPOP", "l2"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    (&["SPOP", "l2", "2"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    (&["LRANGE", "s", "0", "1"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    (&["RPOP", "s"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    (&["LPOP", "s", "2"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
];

#[test]
fn replies_match_redis_7_0_byte_for_byte() {
    let mut store = Store::new();
    let mut s = Session::new(1);
    for (args, want) in REDIS_7_0_REPLIES {
        let mut out = Vec::new();
        assert_eq!(s.feed(&encode(args), 0, &mut store, &mut out), SessionAction::Continue);
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(want), "reply to {args:?}");
    }
}

fn run(store: &mut Store, now: u64, args: &[&str]) -> String {
    let mut out = Vec::new();
    Session::new(1).feed(&encode(args), now, store, &mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn expiry_follows_the_callers_clock() {
    let mut st = Store::new();
    assert_eq!(run(&mut st, 1000, &["SET", "k", "v", "EX", "2"]), "+OK\r\n");
    assert_eq!(run(&mut st, 1000, &["SET", "p", "v", "PX", "10"]), "+OK\r\n");
    assert_eq!(run(&mut st, 2999, &["GET", "k"]), "$1\r\nv\r\n");
    assert_eq!(run(&mut st, 3000, &["GET", "k"]), "$-1\r\n");
    assert_eq!(run(&mut st, 3000, &["EXISTS", "p"]), ":0\r\n");
    assert_eq!(run(&mut st, 3000, &["SET", "k", "v", "PXAT", "5000"]), "+OK\r\n");
    assert_eq!(run(&mut st, 3000, &["SET", "k", "w", "KEEPTTL"]), "+OK\r\n");
    assert_eq!(st.sweep_expired(4999, 10), 0);
    assert_eq!(st.sweep_expired(5000, 10), 1, "KEEPTTL kept the PXAT deadline");
    assert_eq!(run(&mut st, 5000, &["SET", "k", "v", "EX", "1"]), "+OK\r\n");
    assert_eq!(run(&mut st, 5000, &["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(run(&mut st, 99_999, &["GET", "k"]), "$1\r\nv\r\n", "a plain SET clears the deadline");
}

#[test]
fn pipelined_commands_answer_in_order_across_any_split() {
    let mut input = Vec::new();
    for c in [&["SET", "a", "1"][..], &["INCR", "a"], &["LPUSH", "l", "x", "y"], &["LRANGE", "l", "0", "-1"]] {
        input.extend_from_slice(&encode(c));
    }
    input.extend_from_slice(b"PING\r\nECHO \"a b\"\r\n");
    let want = "+OK\r\n:2\r\n:2\r\n*2\r\n$1\r\ny\r\n$1\r\nx\r\n+PONG\r\n$3\r\na b\r\n";
    for split in 0..=input.len() {
        let mut st = Store::new();
        let mut s = Session::new(1);
        let mut out = Vec::new();
        s.feed(&input[..split], 0, &mut st, &mut out);
        s.feed(&input[split..], 0, &mut st, &mut out);
        assert_eq!(String::from_utf8_lossy(&out), want, "split at {split}");
        assert_eq!(s.pending_len(), 0);
    }
}

#[test]
fn garbage_gets_an_error_and_a_close() {
    let mut st = Store::new();
    let mut s = Session::new(1);
    let mut out = Vec::new();
    let action = s.feed(b"PING\r\n*1\r\n+PING\r\nPING\r\n", 0, &mut st, &mut out);
    assert_eq!(action, SessionAction::CloseAfterFlush);
    assert_eq!(out, b"+PONG\r\n-ERR Protocol error: expected '$', got '+'\r\n");
    out.clear();
    assert_eq!(s.feed(b"PING\r\n", 0, &mut st, &mut out), SessionAction::CloseAfterFlush);
    assert!(out.is_empty(), "a closing session answers nothing more");
}

/// A pipeline stops at the output limit and resumes where it stopped, whatever the split of the input and of
/// a partial command held from the previous call.
#[test]
fn pipelines_stop_at_the_output_limit_and_resume_where_they_stopped() {
    let mut input = Vec::new();
    for i in 0..20 {
        input.extend_from_slice(&encode(&["ECHO", &format!("{i:0100}")]));
    }
    let reply_len = 4 + 2 + 100 + 2; // "$100\r\n" + the value + CRLF
    for split in [0, 1, 7, 60, 300, input.len() - 3, input.len()] {
        let mut st = Store::new();
        let mut s = Session::new(1);
        let mut out = Vec::new();
        // The transport's receive buffer: the first part arrives, then the rest; what a call leaves stays there.
        let mut buffer: Vec<u8> = input[..split].to_vec();
        let mut later = input[split..].to_vec();
        let (mut rounds, mut replies) = (0, 0);
        while !buffer.is_empty() || !later.is_empty() {
            let (n, action) = s.feed_bounded(&buffer, 0, &mut st, &mut out, 3 * reply_len);
            assert_eq!(action, SessionAction::Continue);
            assert!(out.len() < 4 * reply_len, "split {split}: one reply past the limit at most ({})", out.len());
            buffer.drain(..n);
            buffer.append(&mut later);
            // The output went out.
            replies += out.len() / reply_len;
            out.clear();
            rounds += 1;
            assert!(rounds < 100, "split {split}: no progress");
        }
        assert_eq!((replies, s.pending_len()), (20, 0), "split {split}");
        assert!(rounds >= 7, "split {split}: 20 replies at 3 per round take 7 rounds, not {rounds}");
    }
    // Every reply, in order, once: fed in one piece with a small limit, the output is the same as unlimited.
    let mut st = Store::new();
    let (mut a, mut b) = (Session::new(1), Session::new(2));
    let (mut bounded, mut whole) = (Vec::new(), Vec::new());
    let mut rest = &input[..];
    while !rest.is_empty() {
        let mut out = Vec::new();
        let (n, _) = a.feed_bounded(rest, 0, &mut st, &mut out, 1);
        assert!(n > 0);
        bounded.extend_from_slice(&out);
        rest = &rest[n..];
    }
    b.feed(&input, 0, &mut st, &mut whole);
    assert_eq!(bounded, whole);
}

#[test]
fn http_requests_close_without_a_reply() {
    for req in [&b"POST / HTTP/1.1\r\nHost: x\r\n\r\n"[..], b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"] {
        let mut st = Store::new();
        let mut s = Session::new(1);
        let mut out = Vec::new();
        assert_eq!(s.feed(req, 0, &mut st, &mut out), SessionAction::CloseAfterFlush);
        let text = String::from_utf8_lossy(&out);
        assert!(!text.contains("PONG") && text.matches('\n').count() <= 1, "{text}");
    }
}

#[test]
fn quit_replies_then_closes() {
    let mut st = Store::new();
    let mut s = Session::new(1);
    let mut out = Vec::new();
    assert_eq!(
        s.feed(&[encode(&["QUIT"]), encode(&["PING"])].concat(), 0, &mut st, &mut out),
        SessionAction::CloseAfterFlush
    );
    assert_eq!(out, b"+OK\r\n");
}

#[test]
fn redis_benchmark_default_commands_work() {
    // What redis-benchmark 7.0 sends for its default tests (with -r's __rand_int__ already replaced).
    let mut st = Store::new();
    assert_eq!(run(&mut st, 0, &["CONFIG", "GET", "save"]), "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
    assert_eq!(run(&mut st, 0, &["CONFIG", "GET", "appendonly"]), "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");
    assert_eq!(run(&mut st, 0, &["SET", "key:000000000042", "xxx"]), "+OK\r\n");
    assert_eq!(run(&mut st, 0, &["GET", "key:000000000042"]), "$3\r\nxxx\r\n");
    assert_eq!(run(&mut st, 0, &["INCR", "counter:000000000042"]), ":1\r\n");
    assert_eq!(run(&mut st, 0, &["SADD", "myset", "element:1"]), ":1\r\n");
    assert_eq!(run(&mut st, 0, &["SPOP", "myset"]), "$9\r\nelement:1\r\n");
    assert_eq!(run(&mut st, 0, &["HSET", "myhash", "element:1", "xxx"]), ":1\r\n");
    assert_eq!(run(&mut st, 0, &["ZADD", "myzset", "0", "element:1"]), ":1\r\n");
    assert_eq!(run(&mut st, 0, &["ZPOPMIN", "myzset"]), "*2\r\n$9\r\nelement:1\r\n$1\r\n0\r\n");
    for _ in 0..600 {
        run(&mut st, 0, &["LPUSH", "mylist", "xxx"]);
    }
    let r = run(&mut st, 0, &["LRANGE", "mylist", "0", "599"]);
    assert!(r.starts_with("*600\r\n$3\r\nxxx\r\n") && r.len() == 6 + 600 * 9, "{}", &r[..20]);
    let mut mset = vec!["MSET"];
    let keys: Vec<String> = (0..10).map(|i| format!("key:{i}")).collect();
    for k in &keys {
        mset.push(k);
        mset.push("xxx");
    }
    assert_eq!(run(&mut st, 0, &mset), "+OK\r\n");
    assert_eq!(run(&mut st, 0, &["PING"]), "+PONG\r\n");
    assert_eq!(st.len(), 14, "emptied myset and myzset are gone");
}

#[test]
fn spop_with_count_removes_distinct_members() {
    let mut st = Store::new();
    run(&mut st, 0, &["SADD", "s", "a", "b", "c", "d"]);
    let r = run(&mut st, 0, &["SPOP", "s", "3"]);
    assert!(r.starts_with("*3\r\n"), "{r}");
    let mut members: Vec<&str> = r.split("\r\n").skip(2).step_by(2).filter(|m| !m.is_empty()).collect();
    members.sort();
    members.dedup();
    assert_eq!(members.len(), 3, "{r}");
    assert_eq!(run(&mut st, 0, &["SPOP", "s", "3"]).matches('$').count(), 1);
    assert_eq!(run(&mut st, 0, &["EXISTS", "s"]), ":0\r\n", "an emptied set is removed");
}

#[test]
fn doubles_print_like_printf_17g() {
    for (d, want) in [
        (0.0, "0"),
        (6.5, "6.5"),
        (0.1, "0.10000000000000001"),
        (-2.0, "-2"),
        (1e300, "1.0000000000000001e+300"),
        (123456789012345678.0, "1.2345678901234568e+17"),
        (0.0001, "0.0001"),
        (0.00001, "1.0000000000000001e-05"),
        (f64::NEG_INFINITY, "-inf"),
    ] {
        assert_eq!(format_double(d), want);
    }
}

#[test]
fn protocol_errors_match_redis_and_close() {
    // Each input, then what redis-server 7.0.15 answered before closing (limits at their defaults; redis-server's
    // bulk limit is 512 MiB, ours 8 MiB, so the 600000000-byte bulk is refused by both).
    let long = |prefix: &[u8]| [prefix, &[b'1'; 70_000][..]].concat();
    let cases: [(Vec<u8>, &str); 9] = [
        (long(b""), "-ERR Protocol error: too big inline request\r\n"),
        (long(b"*"), "-ERR Protocol error: too big mbulk count string\r\n"),
        (long(b"*1\r\n$"), "-ERR Protocol error: too big bulk count string\r\n"),
        (b"*1\r\n$600000000\r\n".to_vec(), "-ERR Protocol error: invalid bulk length\r\n"),
        (b"*x\r\n".to_vec(), "-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*3000000000\r\n".to_vec(), "-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*1\r\n+PING\r\n".to_vec(), "-ERR Protocol error: expected '$', got '+'\r\n"),
        (b"*1\r\n$-1\r\n".to_vec(), "-ERR Protocol error: invalid bulk length\r\n"),
        (b"ECHO \"unbal\r\n".to_vec(), "-ERR Protocol error: unbalanced quotes in request\r\n"),
    ];
    for (input, want) in cases {
        let mut st = Store::new();
        let mut s = Session::new(1);
        let mut out = Vec::new();
        assert_eq!(s.feed(&input, 0, &mut st, &mut out), SessionAction::CloseAfterFlush, "{want}");
        assert_eq!(String::from_utf8_lossy(&out), want);
    }
}
