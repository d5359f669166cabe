//! Connection and server commands (CONFIG GET, COMMAND, HELLO, CLIENT, SELECT, DBSIZE, FLUSHALL): what clients
//! send at connect and what benchmarks ask, answered as Redis 7.0 does.

use super::commands::{is, reply_opt_bulk, unknown_subcommand, Ctx, Flow, COMMANDS, NOT_INTEGER, REDIS_VERSION};
use super::store::Store;
use crate::resp::{self, parse_i64};

/// The configuration parameters CONFIG GET knows, in the order Redis 7.0 lists them. No persistence here, so
/// `save` is empty and `appendonly` is `no` (redis-benchmark asks for both at start).
const CONFIG: &[(&str, &str)] = &[("appendonly", "no"), ("save", "")];

pub(super) fn config(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    if !is(&args[1], "GET") {
        unknown_subcommand(ctx.out, &args[1], "CONFIG");
        return Flow::Continue;
    }
    if args.len() < 3 {
        resp::error(ctx.out, "ERR wrong number of arguments for 'config|get' command");
        return Flow::Continue;
    }
    let hits: Vec<&(&str, &str)> =
        CONFIG.iter().filter(|(name, _)| args[2..].iter().any(|pat| glob_match(pat, name.as_bytes()))).collect();
    resp::array_header(ctx.out, hits.len() * 2);
    for (name, value) in hits {
        resp::bulk(ctx.out, name.as_bytes());
        resp::bulk(ctx.out, value.as_bytes());
    }
    Flow::Continue
}

/// Case-insensitive glob with `*` and `?` (what CONFIG GET patterns use in practice).
fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    match (pat.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => glob_match(&pat[1..], s) || (!s.is_empty() && glob_match(pat, &s[1..])),
        (Some(b'?'), Some(_)) => glob_match(&pat[1..], &s[1..]),
        (Some(p), Some(c)) if p.eq_ignore_ascii_case(c) => glob_match(&pat[1..], &s[1..]),
        _ => false,
    }
}

/// COMMAND [COUNT|DOCS ...]: redis-cli 7 asks `COMMAND DOCS` at connect for its hints. This server keeps no
/// command documentation, so it answers as Redis 7.0 does for commands it has no docs for: an empty array.
pub(super) fn command(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    match args.get(1) {
        None => resp::array_header(ctx.out, 0),
        Some(sub) if is(sub, "DOCS") => resp::array_header(ctx.out, 0),
        Some(sub) if is(sub, "COUNT") => resp::integer(ctx.out, COMMANDS.len() as i64),
        Some(sub) => unknown_subcommand(ctx.out, sub, "COMMAND"),
    }
    Flow::Continue
}

/// HELLO [protover [AUTH user pass] [SETNAME name]]: only RESP2 is spoken, so 3 gets NOPROTO (clients then
/// stay on RESP2).
pub(super) fn hello(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    if let Some(v) = args.get(1) {
        match parse_i64(v) {
            None => {
                resp::error(ctx.out, "ERR Protocol version is not an integer or out of range");
                return Flow::Continue;
            }
            Some(2) => {}
            Some(_) => {
                resp::error(ctx.out, "NOPROTO unsupported protocol version");
                return Flow::Continue;
            }
        }
    }
    let mut i = 2;
    while i < args.len() {
        if is(&args[i], "AUTH") && i + 2 < args.len() {
            i += 3; // no users or passwords here: the default user needs none
        } else if is(&args[i], "SETNAME") && i + 1 < args.len() {
            ctx.conn.name = Some(args[i + 1].clone());
            i += 2;
        } else {
            resp::error(ctx.out, &format!("ERR Syntax error in HELLO option '{}'", String::from_utf8_lossy(&args[i])));
            return Flow::Continue;
        }
    }
    resp::array_header(ctx.out, 14);
    for (k, v) in [("server", "redis"), ("version", REDIS_VERSION)] {
        resp::bulk(ctx.out, k.as_bytes());
        resp::bulk(ctx.out, v.as_bytes());
    }
    resp::bulk(ctx.out, b"proto");
    resp::integer(ctx.out, 2);
    resp::bulk(ctx.out, b"id");
    resp::integer(ctx.out, ctx.conn.id as i64);
    for (k, v) in [("mode", "standalone"), ("role", "master")] {
        resp::bulk(ctx.out, k.as_bytes());
        resp::bulk(ctx.out, v.as_bytes());
    }
    resp::bulk(ctx.out, b"modules");
    resp::array_header(ctx.out, 0);
    Flow::Continue
}

/// CLIENT ID|GETNAME|SETNAME; the rest (SETINFO too, which is 7.2's) get 7.0's unknown-subcommand error.
pub(super) fn client(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    let sub = &args[1];
    if is(sub, "ID") && args.len() == 2 {
        resp::integer(ctx.out, ctx.conn.id as i64);
    } else if is(sub, "GETNAME") && args.len() == 2 {
        reply_opt_bulk(ctx.out, ctx.conn.name.as_deref());
    } else if is(sub, "SETNAME") && args.len() == 3 {
        if args[2].iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
            resp::error(ctx.out, "ERR Client names cannot contain spaces, newlines or special characters.");
        } else {
            ctx.conn.name = if args[2].is_empty() { None } else { Some(args[2].clone()) };
            resp::simple(ctx.out, "OK");
        }
    } else {
        unknown_subcommand(ctx.out, sub, "CLIENT");
    }
    Flow::Continue
}

/// SELECT: there is one database, 0.
pub(super) fn select(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    match parse_i64(&args[1]) {
        None => resp::error(ctx.out, NOT_INTEGER),
        Some(0) => resp::simple(ctx.out, "OK"),
        Some(_) => resp::error(ctx.out, "ERR DB index is out of range"),
    }
    Flow::Continue
}

pub(super) fn dbsize(ctx: &mut Ctx<'_>, _: &mut [Vec<u8>]) -> Flow {
    resp::integer(ctx.out, ctx.store.len() as i64);
    Flow::Continue
}

pub(super) fn flushall(ctx: &mut Ctx<'_>, _: &mut [Vec<u8>]) -> Flow {
    let stats = ctx.store.stats;
    *ctx.store = Store::new();
    ctx.store.stats = stats;
    resp::simple(ctx.out, "OK");
    Flow::Continue
}
