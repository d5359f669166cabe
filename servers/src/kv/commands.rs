//! Command execution: each command's arguments, effect on the [`Store`] and reply, in Redis 7.0's bytes.

use std::collections::{HashMap, HashSet, VecDeque};

use super::admin::{client, command, config, dbsize, flushall, hello, select};
use super::store::{Store, Value, ZSet};
use crate::resp::{self, parse_i64};

pub(super) const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub(super) const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
const NOT_FLOAT: &str = "ERR value is not a valid float";
const MUST_BE_POSITIVE: &str = "ERR value is out of range, must be positive";
const SYNTAX: &str = "ERR syntax error";

/// What this server reports as its version to HELLO (the Redis version whose replies it reproduces).
pub const REDIS_VERSION: &str = "7.0.15";

/// Per-connection state some commands read or set.
#[derive(Debug, Default)]
pub(crate) struct Conn {
    pub(crate) id: u64,
    pub(crate) name: Option<Vec<u8>>,
}

/// Name, arity (Redis's convention: n exact, -n at least n, counting the name) and handler.
pub(super) type Handler = fn(&mut Ctx<'_>, &mut [Vec<u8>]) -> Flow;

/// Whether the connection goes on after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Close,
}

pub(crate) struct Ctx<'a> {
    pub(crate) store: &'a mut Store,
    pub(crate) now: u64,
    pub(crate) out: &'a mut Vec<u8>,
    pub(crate) conn: &'a mut Conn,
}

pub(super) const COMMANDS: &[(&str, i32, Handler)] = &[
    ("ping", -1, ping),
    ("echo", 2, echo),
    ("set", -3, set),
    ("get", 2, get),
    ("del", -2, del),
    ("exists", -2, exists),
    ("incr", 2, incr),
    ("decr", 2, decr),
    ("incrby", 3, incrby),
    ("decrby", 3, decrby),
    ("mset", -3, mset),
    ("mget", -2, mget),
    ("lpush", -3, lpush),
    ("rpush", -3, rpush),
    ("lpop", -2, lpop),
    ("rpop", -2, rpop),
    ("lrange", 4, lrange),
    ("sadd", -3, sadd),
    ("spop", -2, spop),
    ("hset", -4, hset),
    ("zadd", -4, zadd),
    ("zpopmin", -2, zpopmin),
    ("config", -2, config),
    ("command", -1, command),
    ("hello", -1, hello),
    ("client", -2, client),
    ("select", 2, select),
    ("dbsize", 1, dbsize),
    ("flushall", -1, flushall),
    ("flushdb", -1, flushall),
    ("quit", -1, quit),
];

/// Runs one command (`args[0]` is its name, any case) and appends its reply.
pub(crate) fn execute(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    ctx.store.stats.commands += 1;
    let name = &args[0];
    // An HTTP request line or header sent to the key-value port (a browser, or a cross-protocol attack): closed
    // without a reply, as redis-server does for `POST` and `Host:`.
    if is(name, "post") || is(name, "host:") {
        return Flow::Close;
    }
    let Some(&(cname, arity, handler)) = COMMANDS.iter().find(|(n, _, _)| n.as_bytes().eq_ignore_ascii_case(name))
    else {
        unknown_command(ctx.out, args);
        return Flow::Continue;
    };
    let argc = args.len() as i32;
    if (arity > 0 && argc != arity) || (arity < 0 && argc < -arity) {
        resp::error(ctx.out, &format!("ERR wrong number of arguments for '{cname}' command"));
        return Flow::Continue;
    }
    handler(ctx, args)
}

fn unknown_command(out: &mut Vec<u8>, args: &[Vec<u8>]) {
    // Redis quotes the arguments until 128 characters of them have been quoted.
    let mut quoted = String::new();
    for a in &args[1..] {
        if quoted.len() >= 128 {
            break;
        }
        let room = 128 - quoted.len();
        let a = String::from_utf8_lossy(&a[..a.len().min(room)]).into_owned();
        quoted.push_str(&format!("'{a}' "));
    }
    let name = String::from_utf8_lossy(&args[0][..args[0].len().min(128)]).into_owned();
    resp::error(out, &format!("ERR unknown command '{name}', with args beginning with: {quoted}"));
}

pub(super) fn unknown_subcommand(out: &mut Vec<u8>, sub: &[u8], cmd: &str) {
    let sub = String::from_utf8_lossy(&sub[..sub.len().min(128)]).into_owned();
    resp::error(out, &format!("ERR unknown subcommand '{sub}'. Try {cmd} HELP."));
}

pub(super) fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

fn ping(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    match args {
        [_] => resp::simple(ctx.out, "PONG"),
        [_, msg] => resp::bulk(ctx.out, msg),
        _ => resp::error(ctx.out, "ERR wrong number of arguments for 'ping' command"),
    }
    Flow::Continue
}

fn echo(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    resp::bulk(ctx.out, &args[1]);
    Flow::Continue
}

fn quit(ctx: &mut Ctx<'_>, _: &mut [Vec<u8>]) -> Flow {
    resp::simple(ctx.out, "OK");
    Flow::Close
}

/// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]
fn set(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    let (mut nx, mut xx, mut get_old, mut keepttl) = (false, false, false, false);
    let mut expire: Option<(&[u8], u64, bool)> = None; // (unit word, ms per unit, absolute)
    let mut value_of_expire: Option<&[u8]> = None;
    let mut i = 3;
    while i < args.len() {
        let a = &args[i];
        let next = args.get(i + 1);
        if is(a, "NX") && !xx {
            nx = true;
        } else if is(a, "XX") && !nx {
            xx = true;
        } else if is(a, "GET") {
            get_old = true;
        } else if is(a, "KEEPTTL") && expire.is_none() {
            keepttl = true;
        } else if let (Some(unit), Some(n), None, false) =
            (["EX", "PX", "EXAT", "PXAT"].iter().find(|u| is(a, u)), next, expire, keepttl)
        {
            let (ms, abs) = match *unit {
                "EX" => (1000, false),
                "PX" => (1, false),
                "EXAT" => (1000, true),
                _ => (1, true),
            };
            expire = Some((a, ms, abs));
            value_of_expire = Some(n);
            i += 1;
        } else {
            resp::error(ctx.out, SYNTAX);
            return Flow::Continue;
        }
        i += 1;
    }
    let mut deadline = None;
    if let (Some((_, ms, abs)), Some(v)) = (expire, value_of_expire) {
        let Some(n) = parse_i64(v) else {
            resp::error(ctx.out, NOT_INTEGER);
            return Flow::Continue;
        };
        // Redis refuses non-positive times and times whose milliseconds overflow.
        let when = if n <= 0 { None } else { (n as u64).checked_mul(ms).filter(|&t| t <= i64::MAX as u64) };
        let when = when.and_then(|t| if abs { Some(t) } else { ctx.now.checked_add(t) });
        match when {
            Some(t) if t <= i64::MAX as u64 => deadline = Some(t),
            _ => {
                resp::error(ctx.out, "ERR invalid expire time in 'set' command");
                return Flow::Continue;
            }
        }
    }
    let key = &args[1];
    let old = match ctx.store.get(key, ctx.now) {
        None => None,
        // The old value is copied only when the reply needs it; otherwise only its existence matters.
        Some(Value::Str(s)) => Some(if get_old { s.clone() } else { Vec::new() }),
        Some(_) if get_old => {
            resp::error(ctx.out, WRONGTYPE);
            return Flow::Continue;
        }
        Some(_) => Some(Vec::new()),
    };
    let exists = old.is_some();
    if (nx && exists) || (xx && !exists) {
        if get_old {
            reply_opt_bulk(ctx.out, old.as_deref());
        } else {
            resp::null(ctx.out);
        }
        return Flow::Continue;
    }
    if keepttl {
        deadline = ctx.store.deadline(key, ctx.now);
    }
    let value = std::mem::take(&mut args[2]); // the argument's buffer becomes the stored value
    ctx.store.set(&args[1], Value::Str(value), deadline);
    if get_old {
        reply_opt_bulk(ctx.out, old.as_deref());
    } else {
        resp::simple(ctx.out, "OK");
    }
    Flow::Continue
}

pub(super) fn reply_opt_bulk(out: &mut Vec<u8>, v: Option<&[u8]>) {
    match v {
        Some(v) => resp::bulk(out, v),
        None => resp::null(out),
    }
}

fn get(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    match ctx.store.get(&args[1], ctx.now) {
        None => resp::null(ctx.out),
        Some(Value::Str(s)) => resp::bulk(ctx.out, s),
        Some(_) => resp::error(ctx.out, WRONGTYPE),
    }
    Flow::Continue
}

fn del(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    let mut n = 0;
    for k in &args[1..] {
        if ctx.store.get(k, ctx.now).is_some() && ctx.store.remove(k) {
            n += 1;
        }
    }
    resp::integer(ctx.out, n);
    Flow::Continue
}

fn exists(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    let n = args[1..].iter().filter(|k| ctx.store.get(k, ctx.now).is_some()).count();
    resp::integer(ctx.out, n as i64);
    Flow::Continue
}

fn incr(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    add_to(ctx, &args[1], 1)
}

fn decr(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    add_to(ctx, &args[1], -1)
}

fn incrby(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    match parse_i64(&args[2]) {
        Some(by) => add_to(ctx, &args[1], by),
        None => {
            resp::error(ctx.out, NOT_INTEGER);
            Flow::Continue
        }
    }
}

fn decrby(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    match parse_i64(&args[2]).map(i64::checked_neg) {
        Some(Some(by)) => add_to(ctx, &args[1], by),
        Some(None) => {
            resp::error(ctx.out, "ERR decrement would overflow");
            Flow::Continue
        }
        None => {
            resp::error(ctx.out, NOT_INTEGER);
            Flow::Continue
        }
    }
}

fn add_to(ctx: &mut Ctx<'_>, key: &[u8], by: i64) -> Flow {
    let cur = match ctx.store.get(key, ctx.now) {
        None => 0,
        Some(Value::Str(s)) => match parse_i64(s) {
            Some(v) => v,
            None => {
                resp::error(ctx.out, NOT_INTEGER);
                return Flow::Continue;
            }
        },
        Some(_) => {
            resp::error(ctx.out, WRONGTYPE);
            return Flow::Continue;
        }
    };
    let Some(new) = cur.checked_add(by) else {
        resp::error(ctx.out, "ERR increment or decrement would overflow");
        return Flow::Continue;
    };
    let mut text = Vec::with_capacity(20);
    resp::integer(&mut text, new);
    let digits = text[1..text.len() - 2].to_vec();
    match ctx.store.get_mut(key, ctx.now) {
        Some(v) => *v = Value::Str(digits),
        None => ctx.store.set(key, Value::Str(digits), None),
    }
    resp::integer(ctx.out, new);
    Flow::Continue
}

fn mset(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    if args.len().is_multiple_of(2) {
        resp::error(ctx.out, "ERR wrong number of arguments for 'mset' command");
        return Flow::Continue;
    }
    for kv in args[1..].chunks_exact_mut(2) {
        let value = std::mem::take(&mut kv[1]);
        ctx.store.set(&kv[0], Value::Str(value), None);
    }
    resp::simple(ctx.out, "OK");
    Flow::Continue
}

fn mget(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    resp::array_header(ctx.out, args.len() - 1);
    for k in &args[1..] {
        match ctx.store.get(k, ctx.now) {
            Some(Value::Str(s)) => resp::bulk(ctx.out, s),
            _ => resp::null(ctx.out),
        }
    }
    Flow::Continue
}

/// The list at `key` for writing, created empty if missing; None (WRONGTYPE sent) if another type.
fn list_for_push<'s>(
    store: &'s mut Store,
    key: &[u8],
    now: u64,
    out: &mut Vec<u8>,
) -> Option<&'s mut VecDeque<Vec<u8>>> {
    if store.get(key, now).is_none() {
        store.set(key, Value::List(VecDeque::new()), None);
    }
    match store.get_mut(key, now) {
        Some(Value::List(l)) => Some(l),
        _ => {
            resp::error(out, WRONGTYPE);
            None
        }
    }
}

fn lpush(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    push(ctx, args, true)
}

fn rpush(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    push(ctx, args, false)
}

fn push(ctx: &mut Ctx<'_>, args: &[Vec<u8>], front: bool) -> Flow {
    if let Some(list) = list_for_push(ctx.store, &args[1], ctx.now, ctx.out) {
        for v in &args[2..] {
            if front {
                list.push_front(v.clone());
            } else {
                list.push_back(v.clone());
            }
        }
        let len = list.len();
        resp::integer(ctx.out, len as i64);
    }
    Flow::Continue
}

/// The optional positive count argument of LPOP/RPOP/SPOP/ZPOPMIN; Err after replying the error.
fn pop_count(ctx: &mut Ctx<'_>, args: &[Vec<u8>], name: &str) -> Result<Option<usize>, ()> {
    match args.len() {
        2 => Ok(None),
        3 => match parse_i64(&args[2]) {
            Some(n) if n >= 0 => Ok(Some(n as usize)),
            _ => {
                resp::error(ctx.out, MUST_BE_POSITIVE);
                Err(())
            }
        },
        _ => {
            resp::error(ctx.out, &format!("ERR wrong number of arguments for '{name}' command"));
            Err(())
        }
    }
}

fn lpop(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    pop(ctx, args, true)
}

fn rpop(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    pop(ctx, args, false)
}

fn pop(ctx: &mut Ctx<'_>, args: &[Vec<u8>], front: bool) -> Flow {
    let Ok(count) = pop_count(ctx, args, if front { "lpop" } else { "rpop" }) else { return Flow::Continue };
    let key = &args[1];
    let list = match ctx.store.get_mut(key, ctx.now) {
        None if count.is_some() => {
            resp::null_array(ctx.out);
            return Flow::Continue;
        }
        None => {
            resp::null(ctx.out);
            return Flow::Continue;
        }
        Some(Value::List(l)) => l,
        Some(_) => {
            resp::error(ctx.out, WRONGTYPE);
            return Flow::Continue;
        }
    };
    match count {
        None => reply_opt_bulk(ctx.out, if front { list.pop_front() } else { list.pop_back() }.as_deref()),
        Some(n) => {
            let n = n.min(list.len());
            resp::array_header(ctx.out, n);
            for _ in 0..n {
                let v = if front { list.pop_front() } else { list.pop_back() };
                resp::bulk(ctx.out, v.as_deref().unwrap_or_default());
            }
        }
    }
    ctx.store.remove_if_empty(key);
    Flow::Continue
}

fn lrange(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    let (Some(start), Some(stop)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
        resp::error(ctx.out, NOT_INTEGER);
        return Flow::Continue;
    };
    let list = match ctx.store.get(&args[1], ctx.now) {
        None => {
            resp::array_header(ctx.out, 0);
            return Flow::Continue;
        }
        Some(Value::List(l)) => l,
        Some(_) => {
            resp::error(ctx.out, WRONGTYPE);
            return Flow::Continue;
        }
    };
    let len = list.len() as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop.min(len - 1) };
    if start > stop || start >= len {
        resp::array_header(ctx.out, 0);
        return Flow::Continue;
    }
    resp::array_header(ctx.out, (stop - start + 1) as usize);
    for v in list.range(start as usize..=stop as usize) {
        resp::bulk(ctx.out, v);
    }
    Flow::Continue
}

fn sadd(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    let key = &args[1];
    if ctx.store.get(key, ctx.now).is_none() {
        ctx.store.set(key, Value::Set(HashSet::new()), None);
    }
    match ctx.store.get_mut(key, ctx.now) {
        Some(Value::Set(s)) => {
            let added = args[2..].iter().filter(|m| s.insert(m.to_vec())).count();
            resp::integer(ctx.out, added as i64);
        }
        _ => resp::error(ctx.out, WRONGTYPE),
    }
    Flow::Continue
}

fn spop(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    let Ok(count) = pop_count(ctx, args, "spop") else { return Flow::Continue };
    let key = &args[1];
    let len = match ctx.store.get(key, ctx.now) {
        None => {
            match count {
                Some(_) => resp::array_header(ctx.out, 0),
                None => resp::null(ctx.out),
            }
            return Flow::Continue;
        }
        Some(Value::Set(s)) => s.len(),
        Some(_) => {
            resp::error(ctx.out, WRONGTYPE);
            return Flow::Continue;
        }
    };
    let n = count.unwrap_or(1).min(len);
    let picks: Vec<u64> = (0..n).map(|_| ctx.store.random()).collect();
    let Some(Value::Set(set)) = ctx.store.get_mut(key, ctx.now) else { return Flow::Continue };
    if count.is_some() {
        resp::array_header(ctx.out, n);
    }
    for r in picks {
        // A uniformly random member: O(set size) per pop, which SPOP's small sets in practice afford.
        let idx = (r % set.len() as u64) as usize;
        let member = set.iter().nth(idx).cloned().unwrap_or_default();
        set.remove(&member);
        resp::bulk(ctx.out, &member);
    }
    ctx.store.remove_if_empty(key);
    Flow::Continue
}

fn hset(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    if args.len() % 2 == 1 {
        resp::error(ctx.out, "ERR wrong number of arguments for 'hset' command");
        return Flow::Continue;
    }
    let key = &args[1];
    if ctx.store.get(key, ctx.now).is_none() {
        ctx.store.set(key, Value::Hash(HashMap::new()), None);
    }
    match ctx.store.get_mut(key, ctx.now) {
        Some(Value::Hash(h)) => {
            let added = args[2..].chunks_exact(2).filter(|fv| h.insert(fv[0].clone(), fv[1].clone()).is_none()).count();
            resp::integer(ctx.out, added as i64);
        }
        _ => resp::error(ctx.out, WRONGTYPE),
    }
    Flow::Continue
}

/// A score as Redis's strtod-based parsing takes it: no blanks, no NaN.
fn parse_score(s: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(s).ok()?;
    if s.is_empty() || s.starts_with(|c: char| c.is_whitespace()) || s.ends_with(|c: char| c.is_whitespace()) {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| !v.is_nan())
}

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
fn zadd(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) = (false, false, false, false, false, false);
    let mut i = 2;
    while i < args.len() {
        let a = &args[i];
        match () {
            _ if is(a, "NX") => nx = true,
            _ if is(a, "XX") => xx = true,
            _ if is(a, "GT") => gt = true,
            _ if is(a, "LT") => lt = true,
            _ if is(a, "CH") => ch = true,
            _ if is(a, "INCR") => incr = true,
            _ => break,
        }
        i += 1;
    }
    let pairs = &args[i..];
    if pairs.is_empty() || pairs.len() % 2 == 1 {
        resp::error(ctx.out, "ERR wrong number of arguments for 'zadd' command");
        return Flow::Continue;
    }
    if nx && xx {
        resp::error(ctx.out, "ERR XX and NX options at the same time are not compatible");
        return Flow::Continue;
    }
    if (nx && (gt || lt)) || (gt && lt) {
        resp::error(ctx.out, "ERR GT, LT, and/or NX options at the same time are not compatible");
        return Flow::Continue;
    }
    if incr && pairs.len() > 2 {
        resp::error(ctx.out, "ERR INCR option supports a single increment-element pair");
        return Flow::Continue;
    }
    let mut scores = Vec::with_capacity(pairs.len() / 2);
    for p in pairs.chunks_exact(2) {
        match parse_score(&p[0]) {
            Some(s) => scores.push(s),
            None => {
                resp::error(ctx.out, NOT_FLOAT);
                return Flow::Continue;
            }
        }
    }
    let key = &args[1];
    match ctx.store.get(key, ctx.now) {
        None if xx => {
            if incr {
                resp::null(ctx.out);
            } else {
                resp::integer(ctx.out, 0);
            }
            return Flow::Continue;
        }
        None => ctx.store.set(key, Value::ZSet(ZSet::default()), None),
        Some(Value::ZSet(_)) => {}
        Some(_) => {
            resp::error(ctx.out, WRONGTYPE);
            return Flow::Continue;
        }
    }
    let Some(Value::ZSet(z)) = ctx.store.get_mut(key, ctx.now) else { return Flow::Continue };
    let (mut added, mut changed) = (0i64, 0i64);
    let mut incr_result = None;
    for (p, &score) in pairs.chunks_exact(2).zip(&scores) {
        let member = &p[1];
        match z.score(member) {
            Some(cur) => {
                if nx {
                    continue;
                }
                let new = if incr { cur + score } else { score };
                if new.is_nan() {
                    resp::error(ctx.out, "ERR resulting score is not a number (NaN)");
                    return Flow::Continue;
                }
                if (gt && new <= cur) || (lt && new >= cur) {
                    continue;
                }
                incr_result = Some(new);
                if new != cur {
                    z.insert(member, new);
                    changed += 1;
                }
            }
            None => {
                if xx {
                    continue;
                }
                z.insert(member, score);
                added += 1;
                incr_result = Some(score);
            }
        }
    }
    ctx.store.remove_if_empty(key);
    if incr {
        match incr_result {
            Some(s) => resp::bulk(ctx.out, format_double(s).as_bytes()),
            None => resp::null(ctx.out),
        }
    } else {
        resp::integer(ctx.out, if ch { added + changed } else { added });
    }
    Flow::Continue
}

fn zpopmin(ctx: &mut Ctx<'_>, args: &mut [Vec<u8>]) -> Flow {
    let Ok(count) = pop_count(ctx, args, "zpopmin") else { return Flow::Continue };
    let key = &args[1];
    let z = match ctx.store.get_mut(key, ctx.now) {
        None => {
            resp::array_header(ctx.out, 0);
            return Flow::Continue;
        }
        Some(Value::ZSet(z)) => z,
        Some(_) => {
            resp::error(ctx.out, WRONGTYPE);
            return Flow::Continue;
        }
    };
    let n = count.unwrap_or(1).min(z.len());
    resp::array_header(ctx.out, n * 2);
    for _ in 0..n {
        if let Some((m, s)) = z.pop_min() {
            resp::bulk(ctx.out, &m);
            resp::bulk(ctx.out, format_double(s).as_bytes());
        }
    }
    ctx.store.remove_if_empty(key);
    Flow::Continue
}

/// A double as Redis 7.0 replies it: C's `%.17g`, with `inf`/`-inf`.
pub(crate) fn format_double(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let sci = format!("{:.16e}", d); // 17 significant digits, rounded as printf rounds
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    if !(-4..17).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        s.push_str(first);
        let rest = rest.trim_end_matches('0');
        if !rest.is_empty() {
            s.push('.');
            s.push_str(rest);
        }
        s.push_str(&format!("e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs()));
    } else if exp >= 0 {
        let (int, frac) = digits.split_at(exp as usize + 1);
        s.push_str(int);
        let frac = frac.trim_end_matches('0');
        if !frac.is_empty() {
            s.push('.');
            s.push_str(frac);
        }
    } else {
        s.push_str("0.");
        s.push_str(&"0".repeat((-exp - 1) as usize));
        s.push_str(digits.trim_end_matches('0'));
    }
    s
}
