//! Receive VLAN filtering (`EthDev::vlan_filter`) with MAC + VLAN filters (docs/hw/i40e.md §6.7).
//!
//! The VSI matches a frame against perfect filters; a MAC-only filter (IGNORE_VLAN) lets every tag through. So
//! VLAN filtering, once asked for, replaces each MAC's MAC-only filter by MAC + VLAN 0 (untagged frames carry VLAN
//! ID 0 for the switch) and adds MAC + VLAN v for each VLAN v the application adds, as DPDK does.

use drvkit::bar::RegisterSpace;
use pktio::{MacAddr, Result};

use super::I40e;

/// Unicast addresses one VSI takes, the default one included (the share of switch filters DPDK gives a PF VSI).
pub(super) const MAX_MAC_ADDRS: u32 = 64;

/// The highest 802.1Q VLAN ID (12 bits).
pub(super) const MAX_VLAN_ID: u16 = 4095;

impl<R: RegisterSpace> I40e<R> {
    /// The MACs the VSI has filters for: the permanent one (the firmware's default filter), the port's address
    /// and the secondary addresses added.
    fn filtered_macs(&self) -> Vec<MacAddr> {
        let mut macs = vec![self.id.mac];
        for &m in std::iter::once(&self.state.mac).chain(&self.state.extra_macs) {
            if m != MacAddr::ZERO && !macs.contains(&m) {
                macs.push(m);
            }
        }
        macs
    }

    /// `EthDev::mac_addr_add`: the address gets the filters every other MAC has (MAC-only, or MAC + each VLAN).
    pub(super) fn add_mac_addr(&mut self, mac: MacAddr, pool: u32) -> Result<()> {
        let already = self.filtered_macs().contains(&mac);
        if self.state.add_mac(mac, pool)?.is_none() || already {
            return Ok(());
        }
        if let Err(e) = self.mac_filters(mac, true) {
            let _ = self.state.remove_mac(mac);
            return Err(e);
        }
        Ok(())
    }

    /// `EthDev::mac_addr_remove`: the address's filters go, unless the permanent address still needs them.
    pub(super) fn remove_mac_addr(&mut self, mac: MacAddr) -> Result<()> {
        if self.state.remove_mac(mac)?.is_some() && mac != self.id.mac {
            self.mac_filters(mac, false)?;
        }
        Ok(())
    }

    /// `EthDev::set_vlan_filter_enabled`: on, as the first `vlan_filter` call does; off, every MAC goes back to a
    /// MAC-only filter (all tags pass) and the VLAN IDs are kept for the next time it is turned on.
    pub(super) fn set_vlan_filtering(&mut self, on: bool) -> Result<()> {
        if on == self.vlan_filtering {
            return Ok(());
        }
        if on {
            self.start_vlan_filtering()?;
            for v in self.vlans.clone() {
                for mac in self.filtered_macs() {
                    self.mac_filter(mac, Some(v), true)?;
                }
            }
            return Ok(());
        }
        let macs = self.filtered_macs();
        for &mac in &macs {
            self.mac_filter(mac, None, true)?;
        }
        for &mac in &macs {
            for &v in std::iter::once(&0).chain(&self.vlans) {
                self.mac_filter(mac, Some(v), false)?;
            }
        }
        self.vlan_filtering = false;
        Ok(())
    }

    /// Adds or removes every filter `mac` needs: MAC-only while the port does not filter by VLAN, else MAC + VLAN 0
    /// and MAC + each VLAN added.
    pub(super) fn mac_filters(&self, mac: MacAddr, add: bool) -> Result<()> {
        if !self.vlan_filtering {
            return self.mac_filter(mac, None, add);
        }
        for &v in std::iter::once(&0).chain(&self.vlans) {
            self.mac_filter(mac, Some(v), add)?;
        }
        Ok(())
    }

    /// Turns VLAN filtering on: each MAC-only filter becomes MAC + VLAN 0. The VLAN-0 filter goes in first so that
    /// untagged frames never stop passing.
    fn start_vlan_filtering(&mut self) -> Result<()> {
        let macs = self.filtered_macs();
        for &mac in &macs {
            self.mac_filter(mac, Some(0), true)?;
        }
        for (i, &mac) in macs.iter().enumerate() {
            if let Err(e) = self.mac_filter(mac, None, false) {
                // A firmware that keeps its default filter (docs/hw/i40e.md §6.7, newer NVMs) lets every tag in:
                // go back to MAC-only filters rather than claim to filter.
                for &m in &macs[..i] {
                    let _ = self.mac_filter(m, None, true);
                }
                for &m in &macs {
                    let _ = self.mac_filter(m, Some(0), false);
                }
                return Err(e);
            }
        }
        self.vlan_filtering = true;
        Ok(())
    }

    pub(super) fn set_vlan_filter(&mut self, vlan_id: u16, on: bool) -> Result<()> {
        if vlan_id > MAX_VLAN_ID {
            return Err(self.state.invalid(format!("VLAN ID {vlan_id}: must be 0..={MAX_VLAN_ID}")));
        }
        if vlan_id == 0 {
            // The VLAN-0 filter is what lets untagged frames in once the port filters by VLAN.
            return if on {
                self.set_vlan_filtering(true)
            } else {
                Err(self.state.invalid(
                    "VLAN ID 0 carries untagged and priority-tagged frames and stays in the filter; remove other IDs",
                ))
            };
        }
        // Filtering switched off (`set_vlan_filter_enabled`) comes back on with the IDs it kept.
        self.set_vlan_filtering(true)?;
        if self.vlans.contains(&vlan_id) == on {
            return Ok(());
        }
        let macs = self.filtered_macs();
        for (i, &mac) in macs.iter().enumerate() {
            if let Err(e) = self.mac_filter(mac, Some(vlan_id), on) {
                // Keep the MACs consistent: undo the ones done.
                for &m in &macs[..i] {
                    let _ = self.mac_filter(m, Some(vlan_id), !on);
                }
                return Err(e);
            }
        }
        if on {
            self.vlans.push(vlan_id);
        } else {
            self.vlans.retain(|&v| v != vlan_id);
        }
        Ok(())
    }
}
