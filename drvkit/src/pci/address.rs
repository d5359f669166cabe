//! PCI addresses as users type them (`0000:01:00.0`, `01:00.0`).

use std::fmt;
use std::str::FromStr;

/// A PCI address: domain, bus, device, function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PciAddress {
    /// Domain (segment).
    pub domain: u32,
    /// Bus.
    pub bus: u8,
    /// Device (0..32).
    pub device: u8,
    /// Function (0..8).
    pub function: u8,
}

/// Why a PCI address did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a PCI address (expected DDDD:BB:DD.F such as 0000:01:00.0, or BB:DD.F)")]
pub struct PciAddressError(pub String);

impl FromStr for PciAddress {
    type Err = PciAddressError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || PciAddressError(s.to_string());
        let (rest, function) = s.trim().rsplit_once('.').ok_or_else(err)?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (domain, bus, device) = match parts.as_slice() {
            [d, b, dev] => (*d, *b, *dev),
            [b, dev] => ("0", *b, *dev),
            _ => return Err(err()),
        };
        let hex =
            |t: &str, max: u32| u32::from_str_radix(t, 16).ok().filter(|v| *v <= max && !t.is_empty() && t.len() <= 8);
        let function = function.parse::<u8>().ok().filter(|f| *f < 8).ok_or_else(err)?;
        Ok(PciAddress {
            domain: hex(domain, u32::MAX).ok_or_else(err)?,
            bus: hex(bus, 0xff).ok_or_else(err)? as u8,
            device: hex(device, 0x1f).ok_or_else(err)? as u8,
            function,
        })
    }
}

impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{:02x}:{:02x}.{}", self.domain, self.bus, self.device, self.function)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_full_and_short_forms() {
        let a: PciAddress = "0000:01:00.0".parse().unwrap();
        assert_eq!(a, PciAddress { domain: 0, bus: 1, device: 0, function: 0 });
        assert_eq!("3b:1f.7".parse::<PciAddress>().unwrap().to_string(), "0000:3b:1f.7");
        for bad in ["", "01:00", "0000:01:20.0", "0000:01:00.8", "zz:00.0", "0000:100:00.0"] {
            assert!(bad.parse::<PciAddress>().is_err(), "{bad}");
        }
    }
}
