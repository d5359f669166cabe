//! Lcore lists as DPDK's EAL takes them: `-l 0-3,5`, `-c 0x3`, and `--lcores` maps of lcores to CPUs with groups
//! (`(0-3)@(0,1)`).

use crate::{Error, Result};

fn bad(msg: impl Into<String>) -> Error {
    Error::BadArgument(msg.into())
}

/// Parses a core list such as `0-3,5,7-8` (sorted, without duplicates).
pub fn parse_corelist(text: &str) -> Result<Vec<u32>> {
    parse_list(text, "lcore", mempool::lcore::MAX_LCORES).map_err(|reason| bad(format!("-l {text:?}: {reason}")))
}

/// The most CPUs a CPU set can name (glibc's `CPU_SETSIZE`, what DPDK's `--lcores` CPU sets are checked against).
const CPU_SETSIZE: usize = 1024;

/// A list of numbers and ranges (`0-3,5`), each below `max`, sorted and without duplicates; `what` names the
/// numbers in the reason of an error.
fn parse_list(text: &str, what: &str, max: usize) -> std::result::Result<Vec<u32>, String> {
    let form = || "expected a core list such as 0-3 or 0,2,4-5".to_string();
    let number = |t: &str| -> std::result::Result<u32, String> {
        let t = t.trim();
        // Digits only: Rust's parse would take a leading '+', which DPDK's strtol-and-check refuses here.
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(form());
        }
        match t.parse::<u32>() {
            Ok(v) if (v as usize) < max => Ok(v),
            _ => Err(format!("{what} {t} is over the maximum {}", max - 1)),
        }
    };
    let mut out = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(form());
        }
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let v = number(part)?;
                (v, v)
            }
        };
        if lo > hi {
            return Err(format!("range {lo}-{hi} runs backwards"));
        }
        out.extend(lo..=hi);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Parses a hexadecimal core mask such as `0x3` or `f`: hex digits only after an optional `0x`, as DPDK's
/// `eal_parse_coremask` takes them (a sign, `+3`, is refused).
pub fn parse_coremask(text: &str) -> Result<Vec<u32>> {
    let t = text.trim();
    let digits = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad(format!("-c {text:?}: expected a hex mask such as 0x3 (hex digits only)")));
    }
    let significant = digits.trim_start_matches('0');
    if significant.len() > 32 {
        return Err(bad(format!(
            "-c {text:?}: the mask names lcores over the maximum {}",
            mempool::lcore::MAX_LCORES - 1
        )));
    }
    let mask =
        u128::from_str_radix(digits, 16).map_err(|_| bad(format!("-c {text:?}: expected a hex mask such as 0x3")))?;
    if mask == 0 {
        return Err(bad(format!("-c {text:?}: the mask selects no lcore")));
    }
    Ok((0..128u32).filter(|i| mask & (1u128 << i) != 0).collect())
}

/// One `--lcores` set: a number, a range `a-b`, or a group `(a,b-c,...)`, of lcores (`cpus` false) or CPUs.
fn parse_lcore_set(text: &str, whole: &str, cpus: bool) -> Result<Vec<u32>> {
    let inner = match text.strip_prefix('(') {
        Some(rest) => rest
            .strip_suffix(')')
            .ok_or_else(|| bad(format!("--lcores {whole:?}: group {text:?} has no closing parenthesis")))?,
        None => text,
    };
    if inner.contains(['(', ')']) {
        return Err(bad(format!("--lcores {whole:?}: groups do not nest ({text:?})")));
    }
    let (what, max) = if cpus { ("CPU", CPU_SETSIZE) } else { ("lcore", mempool::lcore::MAX_LCORES) };
    parse_list(inner, what, max).map_err(|reason| {
        let reason = if reason.starts_with("expected") {
            format!("{text:?} is not a number, a range or a (group)")
        } else {
            reason
        };
        bad(format!("--lcores {whole:?}: {reason}"))
    })
}

/// Parses DPDK's `--lcores` map: comma-separated elements `LCORES[@CPUS]`, each side a number, a range or a
/// parenthesised group, e.g. `0-3`, `1@2`, `(0-3)@(0,1)`, `0,(1,2)@3`. Without `@CPUS` an lcore runs on the CPU of
/// its own number. Returns each lcore with its CPUs, sorted by lcore.
pub fn parse_lcores(text: &str) -> Result<Vec<(u32, Vec<u32>)>> {
    // Split at commas outside parentheses.
    let mut elements = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                elements.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return Err(bad(format!("--lcores {text:?}: unbalanced parentheses")));
        }
    }
    if depth != 0 {
        return Err(bad(format!("--lcores {text:?}: unbalanced parentheses")));
    }
    elements.push(&text[start..]);
    let mut map: Vec<(u32, Vec<u32>)> = Vec::new();
    for element in elements {
        let element = element.trim();
        if element.is_empty() {
            return Err(bad(format!("--lcores {text:?}: empty element")));
        }
        let (lcores, cpus) = match element.split_once('@') {
            Some((l, c)) => (parse_lcore_set(l.trim(), text, false)?, Some(parse_lcore_set(c.trim(), text, true)?)),
            None => (parse_lcore_set(element, text, false)?, None),
        };
        for lcore in lcores {
            if map.iter().any(|(l, _)| *l == lcore) {
                return Err(bad(format!("--lcores {text:?}: lcore {lcore} is given twice")));
            }
            map.push((lcore, cpus.clone().unwrap_or_else(|| vec![lcore])));
        }
    }
    map.sort_by_key(|(l, _)| *l);
    Ok(map)
}
