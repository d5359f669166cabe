//! DPDK device arguments: `net_null0,size=64,copy=1`.

use std::str::FromStr;

use crate::{Error, Result};

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
        let bad = |reason: String| Error::Devargs { devargs: text.to_string(), reason };
        let mut parts = text.split(',');
        let name = parts.next().unwrap_or("").trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(bad("expected a device name such as net_null0 first".into()));
        }
        let driver = name.trim_end_matches(|c: char| c.is_ascii_digit()).to_string();
        let mut args = Vec::new();
        for part in parts {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (k, v) = part.split_once('=').ok_or_else(|| bad(format!("{part:?} is not key=value")))?;
            if k.is_empty() {
                return Err(bad(format!("{part:?} has an empty key")));
            }
            args.push((k.trim().to_string(), v.trim().to_string()));
        }
        Ok(Devargs { raw: text.to_string(), name: name.to_string(), driver, args })
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

    /// Fails on any key not in `known`.
    pub fn check_keys(&self, known: &[&str]) -> Result<()> {
        for (k, _) in &self.args {
            if !known.contains(&k.as_str()) {
                return Err(self.error(format!("unknown argument {k:?}; {} takes: {}", self.driver, known.join(", "))));
            }
        }
        Ok(())
    }

    /// An error about these devargs.
    pub fn error(&self, reason: impl Into<String>) -> Error {
        Error::Devargs { devargs: self.raw.clone(), reason: reason.into() }
    }
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
}
