//! Lcore lists as DPDK's EAL takes them: `-l 0-3,5`, `-c 0x3`, and `--lcores` maps of lcores to CPUs with groups
//! (`(0-3)@(0,1)`).

use crate::{Error, Result};

fn bad(msg: impl Into<String>) -> Error {
    Error::BadArgument(msg.into())
}

/// Parses a core list such as `0-3,5,7-8` (sorted, without duplicates).
pub fn parse_corelist(text: &str) -> Result<Vec<u32>> {
    let err = || bad(format!("-l {text:?}: expected a core list such as 0-3 or 0,2,4-5"));
    let mut out = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(err());
        }
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().map_err(|_| err())?, b.trim().parse::<u32>().map_err(|_| err())?),
            None => {
                let v = part.parse::<u32>().map_err(|_| err())?;
                (v, v)
            }
        };
        if lo > hi {
            return Err(bad(format!("-l {text:?}: range {lo}-{hi} runs backwards")));
        }
        if hi as usize >= mempool::lcore::MAX_LCORES {
            return Err(bad(format!("-l {text:?}: lcore {hi} is over the maximum {}", mempool::lcore::MAX_LCORES - 1)));
        }
        out.extend(lo..=hi);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Parses a hexadecimal core mask such as `0x3` or `f`.
pub fn parse_coremask(text: &str) -> Result<Vec<u32>> {
    let digits = text.trim().trim_start_matches("0x").trim_start_matches("0X");
    let mask =
        u128::from_str_radix(digits, 16).map_err(|_| bad(format!("-c {text:?}: expected a hex mask such as 0x3")))?;
    if mask == 0 {
        return Err(bad(format!("-c {text:?}: the mask selects no lcore")));
    }
    Ok((0..128u32).filter(|i| mask & (1u128 << i) != 0).collect())
}

/// One `--lcores` set: a number, a range `a-b`, or a group `(a,b-c,...)`.
fn parse_lcore_set(text: &str, whole: &str) -> Result<Vec<u32>> {
    let inner = match text.strip_prefix('(') {
        Some(rest) => rest
            .strip_suffix(')')
            .ok_or_else(|| bad(format!("--lcores {whole:?}: group {text:?} has no closing parenthesis")))?,
        None => text,
    };
    if inner.contains(['(', ')']) {
        return Err(bad(format!("--lcores {whole:?}: groups do not nest ({text:?})")));
    }
    parse_corelist(inner)
        .map_err(|_| bad(format!("--lcores {whole:?}: {text:?} is not a number, a range or a (group)")))
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
            Some((l, c)) => (parse_lcore_set(l.trim(), text)?, Some(parse_lcore_set(c.trim(), text)?)),
            None => (parse_lcore_set(element, text)?, None),
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
