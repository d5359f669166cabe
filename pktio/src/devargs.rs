//! DPDK device arguments: `net_null0,size=64,copy=1` for virtual devices, `0000:01:00.0,key=value` for PCI ones.

use std::str::FromStr;

use crate::{Error, Result};
use drvkit::pci::PciAddress;

/// A parsed `--vdev` string: device name, driver name (the name without its trailing instance number) and the
/// `key=value` arguments in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Devargs {
    /// The whole string as given.
    pub raw: String,
    /// Device name, e.g. `net_null0`.
    pub name: String,
    /// Driver name, e.g. `net_null`.
    pub driver: String,
    /// Arguments, in order (keys may repeat, e.g. several `rx_pcap`).
    pub args: Vec<(String, String)>,
}

impl Devargs {
    /// Parses `name[,key=value]...`.
    pub fn parse(text: &str) -> Result<Devargs> {
        let bad = |reason: String| Error::Devargs { option: "--vdev", devargs: text.to_string(), reason };
        let mut parts = text.split(',');
        let name = parts.next().unwrap_or("").trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(bad("expected a device name such as net_null0 first".into()));
        }
        let driver = name.trim_end_matches(|c: char| c.is_ascii_digit()).to_string();
        let args = parse_pairs(parts, &bad)?;
        Ok(Devargs { raw: text.to_string(), name: name.to_string(), driver, args })
    }

    /// Parses `-a`'s `ADDRESS[,key=value]...` (DPDK keeps these arguments for the PCI driver). The name is the
    /// address in its full form; the driver name is empty until the EAL knows which driver claims the device
    /// ([`Devargs::for_driver`]).
    pub fn parse_pci(text: &str) -> Result<(PciAddress, Devargs)> {
        let bad = |reason: String| Error::Devargs { option: "-a", devargs: text.to_string(), reason };
        let mut parts = text.split(',');
        let addr_text = parts.next().unwrap_or("").trim();
        let addr: PciAddress = addr_text.parse().map_err(|e| bad(format!("{e}")))?;
        let args = parse_pairs(parts, &bad)?;
        Ok((addr, Devargs { raw: text.to_string(), name: addr.to_string(), driver: String::new(), args }))
    }

    /// No arguments for device `name` (a PCI device given without any, or found by scanning).
    pub fn empty(name: &str) -> Devargs {
        Devargs { raw: name.to_string(), name: name.to_string(), driver: String::new(), args: Vec::new() }
    }

    /// The same arguments, with the name of the driver that will read them (for its error messages).
    pub fn for_driver(mut self, driver: &str) -> Devargs {
        self.driver = driver.to_string();
        self
    }

    /// The last value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.args.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Every value of `key`, in order.
    pub fn get_all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.args.iter().filter(move |(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of `key` parsed as `T`, or `default` when absent; a clear error when malformed.
    pub fn parse_or<T: FromStr>(&self, key: &str, default: T) -> Result<T> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| self.error(format!("{key}={v} is not a valid value"))),
        }
    }

    /// A boolean argument (`0`/`1`, `true`/`false`, `yes`/`no`, `on`/`off`).
    pub fn flag(&self, key: &str, default: bool) -> Result<bool> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => match v.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" | "y" => Ok(true),
                "0" | "false" | "no" | "off" | "n" => Ok(false),
                _ => Err(self.error(format!("{key}={v} is not a boolean (use 0 or 1)"))),
            },
        }
    }

    /// Fails on any key not in `known` (with an empty `known`, on any key at all).
    pub fn check_keys(&self, known: &[&str]) -> Result<()> {
        for (k, _) in &self.args {
            if !known.contains(&k.as_str()) {
                let takes = if known.is_empty() {
                    "takes no device arguments".to_string()
                } else {
                    format!("takes: {}", known.join(", "))
                };
                let driver = if self.driver.is_empty() { "this device" } else { self.driver.as_str() };
                return Err(self.error(format!("unknown argument {k:?}; {driver} {takes}")));
            }
        }
        Ok(())
    }

    /// An error about these devargs.
    pub fn error(&self, reason: impl Into<String>) -> Error {
        // PCI devices get their arguments from -a, virtual ones from --vdev.
        let option = if self.name.parse::<PciAddress>().is_ok() { "-a" } else { "--vdev" };
        Error::Devargs { option, devargs: self.raw.clone(), reason: reason.into() }
    }
}

/// `key=value` pairs, in order; empty parts (`a=1,,b=2`) are skipped.
fn parse_pairs<'a>(
    parts: impl Iterator<Item = &'a str>,
    bad: &dyn Fn(String) -> Error,
) -> Result<Vec<(String, String)>> {
    let mut args = Vec::new();
    for part in parts {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (k, v) = part.split_once('=').ok_or_else(|| bad(format!("{part:?} is not key=value")))?;
        if k.trim().is_empty() {
            return Err(bad(format!("{part:?} has an empty key")));
        }
        args.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_name_driver_and_args() {
        let d = Devargs::parse("net_pcap0,rx_pcap=a.pcap,tx_pcap=b.pcap,rx_pcap=c.pcap").unwrap();
        assert_eq!(d.name, "net_pcap0");
        assert_eq!(d.driver, "net_pcap");
        assert_eq!(d.get("tx_pcap"), Some("b.pcap"));
        assert_eq!(d.get_all("rx_pcap").collect::<Vec<_>>(), ["a.pcap", "c.pcap"]);
        assert_eq!(d.parse_or("size", 64u16).unwrap(), 64);
        assert!(d.check_keys(&["rx_pcap", "tx_pcap"]).is_ok());
        assert!(d.check_keys(&["rx_pcap"]).is_err());
    }

    #[test]
    fn rejects_bad_input() {
        assert!(Devargs::parse("").is_err());
        assert!(Devargs::parse(",size=1").is_err());
        assert!(Devargs::parse("net_null0,size").is_err());
        assert!(Devargs::parse("net_null0,=3").is_err());
        let d = Devargs::parse("net_null0,size=huge,copy=maybe").unwrap();
        assert!(d.parse_or("size", 64u16).is_err());
        assert!(d.flag("copy", false).is_err());
    }

    #[test]
    fn pci_devargs_keep_the_address_and_the_arguments() {
        let (addr, d) = Devargs::parse_pci("01:00.0,foo=bar,x=1").unwrap();
        assert_eq!(addr.to_string(), "0000:01:00.0");
        assert_eq!(d.name, "0000:01:00.0");
        assert_eq!(d.args, [("foo".to_string(), "bar".to_string()), ("x".to_string(), "1".to_string())]);
        let err = d.clone().for_driver("net_ixgbe").check_keys(&[]).unwrap_err().to_string();
        assert!(err.contains("unknown argument \"foo\"; net_ixgbe takes no device arguments"), "{err}");
        assert!(err.starts_with("-a \"01:00.0,foo=bar,x=1\": "), "{err}");
        assert!(d.check_keys(&["foo", "x"]).is_ok());
        let (_, plain) = Devargs::parse_pci("0000:02:00.1").unwrap();
        assert!(plain.args.is_empty() && plain.check_keys(&[]).is_ok());
        assert!(Devargs::parse_pci("01:00").is_err());
        assert!(Devargs::parse_pci("01:00.0,novalue").is_err());
        assert!(Devargs::parse_pci("01:00.0,=1").is_err());
    }
}
