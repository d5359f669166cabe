//! `--config="(port,queue,lcore)..."`: which lcore polls which RX queue, and its checks against the ports, the
//! EAL lcores and the port mask.

use crate::{Error, Result};

/// One `(port,queue,lcore)` tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxQueueParam {
    /// Port id.
    pub port: u16,
    /// RX queue of that port.
    pub queue: u16,
    /// Lcore that polls it.
    pub lcore: u32,
}

/// DPDK's l3fwd default when `--config` is absent.
pub const DEFAULT_CONFIG: &str = "(0,0,2),(0,1,2),(0,2,2),(1,0,2),(1,1,2),(1,2,2),(2,0,2),(3,0,3),(3,1,3)";

fn bad(msg: String) -> Error {
    Error::Config(msg)
}

/// Parses tuples `(p,q,l)`, with or without commas (or spaces) between them. Each value fits in 8 bits, as in
/// DPDK's l3fwd.
pub fn parse(s: &str) -> Result<Vec<RxQueueParam>> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        if rest.is_empty() {
            break;
        }
        let Some(body) = rest.strip_prefix('(') else {
            return Err(bad(format!("--config {s:?}: expected '(' at {rest:?}; tuples look like (port,queue,lcore)")));
        };
        let Some(end) = body.find(')') else {
            return Err(bad(format!("--config {s:?}: tuple ({body} is not closed with ')'")));
        };
        let inner = &body[..end];
        let fields: Vec<&str> = inner.split(',').map(str::trim).collect();
        let [p, q, l] = fields[..] else {
            return Err(bad(format!("--config tuple ({inner}): expected three numbers (port,queue,lcore)")));
        };
        let num = |f: &str, what: &str| -> Result<u32> {
            match f.parse::<u32>() {
                Ok(v) if v <= 255 => Ok(v),
                _ => Err(bad(format!("--config tuple ({inner}): {what} {f:?} is not a number in 0..=255"))),
            }
        };
        out.push(RxQueueParam {
            port: num(p, "port")? as u16,
            queue: num(q, "queue")? as u16,
            lcore: num(l, "lcore")?,
        });
        rest = &body[end + 1..];
    }
    if out.is_empty() {
        return Err(bad(format!("--config {s:?}: no (port,queue,lcore) tuple")));
    }
    Ok(out)
}

/// Checks the tuples: lcores among the EAL's, ports present and in the mask, each port's queues 0..n each named
/// once and within `max_rx_queues(port)`. Returns the RX queue count per port (index: port id).
pub fn check(
    params: &[RxQueueParam],
    lcores: &[u32],
    nb_ports: u16,
    portmask: u64,
    max_rx_queues: impl Fn(u16) -> u16,
) -> Result<Vec<u16>> {
    let mut nb_rxq = vec![0u16; nb_ports as usize];
    for p in params {
        if !lcores.contains(&p.lcore) {
            return Err(bad(format!(
                "--config ({},{},{}): lcore {} is not enabled in the lcore list (-l/-c gives {lcores:?})",
                p.port, p.queue, p.lcore, p.lcore
            )));
        }
        if p.port >= nb_ports {
            return Err(bad(format!(
                "--config ({},{},{}): port {} is not present (there are {nb_ports} ports)",
                p.port, p.queue, p.lcore, p.port
            )));
        }
        if p.port >= 64 || portmask & (1 << p.port) == 0 {
            return Err(bad(format!(
                "--config ({},{},{}): port {} is not enabled in the port mask {portmask:#x}",
                p.port, p.queue, p.lcore, p.port
            )));
        }
        let max = max_rx_queues(p.port);
        if p.queue >= max {
            return Err(bad(format!(
                "--config ({},{},{}): queue {} is out of range, port {} has at most {max} RX queues",
                p.port, p.queue, p.lcore, p.queue, p.port
            )));
        }
        let n = &mut nb_rxq[p.port as usize];
        *n = (*n).max(p.queue + 1);
    }
    for (port, &n) in nb_rxq.iter().enumerate() {
        for q in 0..n {
            let uses = params.iter().filter(|p| p.port as usize == port && p.queue == q).count();
            if uses != 1 {
                let what = if uses == 0 { "is missing" } else { "is named more than once" };
                return Err(bad(format!(
                    "--config: queue {q} of port {port} {what}: each port's queues must be 0..{n}, each once"
                )));
            }
        }
    }
    Ok(nb_rxq)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(port: u16, queue: u16, lcore: u32) -> RxQueueParam {
        RxQueueParam { port, queue, lcore }
    }

    #[test]
    fn tuples_with_and_without_commas() {
        assert_eq!(parse("(0,0,0)(0,1,1)").unwrap(), vec![t(0, 0, 0), t(0, 1, 1)]);
        assert_eq!(parse("(0,0,0)(0,1,1)(1,0,2)(1,1,3)").unwrap(), parse("(0,0,0),(0,1,1),(1,0,2),(1,1,3)").unwrap());
        assert_eq!(parse(" ( 1 , 0 , 2 ) ").unwrap(), vec![t(1, 0, 2)]);
        assert_eq!(parse(DEFAULT_CONFIG).unwrap().len(), 9);
    }

    #[test]
    fn syntax_errors() {
        for s in ["", "(0,0)", "(0,0,0", "0,0,0", "(0,0,0)x(1,0,1)", "(0,0,256)", "(a,0,0)", "(0,0,0,0)"] {
            assert!(parse(s).is_err(), "{s:?} accepted");
        }
    }

    #[test]
    fn checks_against_ports_lcores_and_mask() {
        let max = |_| 4u16;
        let ok = parse("(0,0,0)(0,1,1)(1,0,0)").unwrap();
        assert_eq!(check(&ok, &[0, 1], 2, 0x3, max).unwrap(), vec![2, 1]);
        let err = |s: &str, lcores: &[u32], mask: u64| check(&parse(s).unwrap(), lcores, 2, mask, max).unwrap_err();
        assert!(err("(0,0,5)", &[0, 1], 3).to_string().contains("lcore 5 is not enabled"));
        assert!(err("(2,0,0)", &[0, 1], 7).to_string().contains("port 2 is not present"));
        assert!(err("(1,0,0)", &[0, 1], 1).to_string().contains("not enabled in the port mask"));
        assert!(err("(0,4,0)", &[0, 1], 1).to_string().contains("queue 4 is out of range"));
        assert!(err("(0,1,0)", &[0, 1], 1).to_string().contains("queue 0 of port 0 is missing"));
        assert!(err("(0,0,0)(0,0,1)", &[0, 1], 1).to_string().contains("more than once"));
    }
}
