//! `net_sim_x710`: the real i40e driver on behavioural 700-series models ([`nicsim::X710`]), so users can run it
//! without hardware: `testpmd-rs --vdev net_sim_x710,ports=2 -- -i` forwards between two simulated X710 ports wired
//! back to back.
//!
//! Devargs: `ports=N` (even, default 2: N/2 two-port adapters, each pair of PFs wired back to back),
//! `part=x710|xl710|xl710b|xxv710` (the model's part: X710 10G 8086:1572, XL710 40G 8086:1583 or 8086:1584, XXV710
//! 25G 8086:158B; default x710). Each model port runs in its own thread, like the firmware and the hardware, for as
//! long as the port lives.
//!
//! `tap=NAME` wires one port to a TAP interface instead of a twin (`ports=1`, the default then and the only count
//! allowed with it; `%d` in NAME lets the kernel number it): the kernel is the link partner, e.g.
//! `testpmd-rs --vdev net_sim_x710,tap=simtap0 -- --forward-mode=icmpecho`, then
//! `ip addr add 10.0.0.1/24 dev simtap0; ping 10.0.0.2`. The interface is created (and brought up) when the vdev
//! opens, in the caller's network namespace, and disappears with the port; it needs CAP_NET_ADMIN and /dev/net/tun.

use std::sync::Arc;

use hugepage::Allocator;
use i40e::{max_speed_of, I40e, Options, Timing};
use nicsim::{X710Bar, X710Config, X710Part, X710Port, X710Thread, X710};
use pktio::devargs::Devargs;
use pktio::{EthDev, Result};

/// The driver name users type.
pub const VDEV_DRIVER: &str = "net_sim_x710";
/// Most ports one `--vdev` may create.
pub const MAX_PORTS: u16 = 8;

/// One simulated 700-series port: the i40e driver, and the X710 model (with its thread) behind it.
pub type SimPort = crate::port::SimPort<I40e<X710Bar>, X710Thread, X710Port>;

/// The part a `part=` devarg names.
fn part_of(name: &str) -> Option<X710Part> {
    Some(match name {
        "x710" | "X710" => X710Part::X710Sfp,
        "xl710" | "XL710" => X710Part::Xl710QsfpA,
        "xl710b" | "XL710B" => X710Part::Xl710QsfpB,
        "xxv710" | "XXV710" => X710Part::Xxv710Sfp28,
        _ => return None,
    })
}

fn open_one(name: String, bar: X710Bar, model: X710Port, allocator: &Allocator) -> Result<SimPort> {
    let device = model.config().part.device_id();
    let max_speed = max_speed_of(0x8086, device).unwrap_or(10_000);
    let options = Options { timing: Timing::fast(), max_speed, ..Options::new(name) };
    // The firmware answers the admin queue only while the model runs: its thread starts before the bring-up.
    let thread = model.start_thread();
    let dev = I40e::new(Arc::new(bar), model.dma_mapper(), allocator.clone(), options)?;
    Ok(SimPort::new(dev, thread, model))
}

/// Opens the ports of a `net_sim_x710` vdev.
pub fn open_vdev(args: &Devargs, allocator: &Allocator) -> Result<Vec<Box<dyn EthDev>>> {
    // Named by the driver, not by the device name with its digits trimmed ("net_sim_x" from "net_sim_x710").
    args.clone().for_driver(VDEV_DRIVER).check_keys(&["ports", "part", "tap"])?;
    let part_name = args.get("part").unwrap_or("x710");
    let part =
        part_of(part_name).ok_or_else(|| args.error(format!("part={part_name}: use x710, xl710, xl710b or xxv710")))?;
    let base = X710Config::part(part);
    let tap = args.get("tap");
    if tap == Some("") {
        return Err(args.error("tap= needs an interface name"));
    }
    let ports: u16 = args.parse_or("ports", if tap.is_some() { 1 } else { 2 })?;
    if tap.is_some() && ports != 1 {
        return Err(args.error(format!("ports={ports}: a tap= vdev has one port (wired to the TAP)")));
    }
    if tap.is_none() && (ports == 0 || !ports.is_multiple_of(2) || ports > MAX_PORTS) {
        return Err(
            args.error(format!("ports={ports}: give an even number up to {MAX_PORTS} (ports are wired in pairs)"))
        );
    }
    let mut out: Vec<Box<dyn EthDev>> = Vec::new();
    if let Some(tap) = tap {
        let (bar, model) = X710::new(base);
        model.wire_to_tap(tap).map_err(|e| pktio::Error::os(format!("{}: TAP wire {tap:?}", args.name), e))?;
        out.push(Box::new(open_one(format!("{}_p0", args.name), bar, model, allocator)?));
        return Ok(out);
    }
    for pair in 0..ports / 2 {
        // Distinct MACs per adapter: the model's pair differs in the last byte, the adapter index goes in byte 4.
        let mut mac = base.mac;
        mac[4] = pair as u8;
        let ((bar0, m0), (bar1, m1)) = X710::pair(X710Config { mac, ..base.clone() });
        for (k, (bar, model)) in [(bar0, m0), (bar1, m1)].into_iter().enumerate() {
            let name = format!("{}_p{}", args.name, pair * 2 + k as u16);
            out.push(Box::new(open_one(name, bar, model, allocator)?));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(devargs: &str) -> Result<Vec<Box<dyn EthDev>>> {
        open_vdev(&Devargs::parse(devargs).unwrap(), &Allocator::no_huge())
    }

    #[test]
    fn every_part_makes_wired_pairs_that_forward() {
        for (part, speed) in [("x710", 10_000), ("xl710", 40_000), ("xl710b", 40_000), ("xxv710", 25_000)] {
            forward_on(&format!("net_sim_x710,ports=2,part={part}"), speed);
        }
    }

    #[test]
    fn bad_devargs_are_refused_before_any_port_opens() {
        for bad in [
            "net_sim_x710,ports=3",
            "net_sim_x710,ports=0",
            "net_sim_x710,bogus=1",
            "net_sim_x710,part=x722",
            "net_sim_x710,tap=simtap0,ports=2",
            "net_sim_x710,tap=",
        ] {
            let err = open(bad).err().expect(bad).to_string();
            assert!(
                err.contains("ports") || err.contains("part") || err.contains("tap") || err.contains("bogus"),
                "{bad}: {err}"
            );
        }
    }

    fn forward_on(devargs: &str, speed: u32) {
        crate::testing::forward_pair(open(devargs).unwrap(), devargs, speed, "net_i40e", "net_sim_x710_p0");
    }
}
