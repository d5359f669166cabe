//! The settings commands: `set nbcore|nbport|coremask|portmask|txpkts|record` and `port config`, each checked
//! when given (not only at the next start).

use crate::app::{App, CmdResult};

impl App {
    /// `set record FILE` / `set record off`.
    pub fn set_record(&mut self, what: &str) -> CmdResult {
        if self.is_forwarding() {
            return Err("Please stop forwarding first (stop)".into());
        }
        if what == "off" {
            self.record = None;
            println!("Recording off");
        } else {
            std::fs::File::create(what).map_err(|e| format!("set record: cannot create {what}: {e}"))?;
            self.record = Some((what.to_string(), None));
            println!("Packets sent will be recorded into {what} (pcap) from the next start");
        }
        Ok(())
    }
    /// `set nbcore N`.
    pub fn set_nb_cores(&mut self, n: u16) -> CmdResult {
        let max = self.fwd_lcore_ids().len();
        if n == 0 || n as usize > max {
            return Err(format!("nb fwd cores {n} must be between 1 and {max} (the forwarding lcores)"));
        }
        self.set.nb_cores = n;
        println!("Number of forwarding cores set to {n}");
        Ok(())
    }
    /// `set coremask MASK`.
    pub fn set_coremask(&mut self, mask: u64) -> CmdResult {
        if self.is_forwarding() {
            return Err("Please stop forwarding first (stop)".into());
        }
        let w = self.eal.worker_lcores();
        if !w.is_empty() && !w.iter().any(|&id| id < 64 && mask & (1u64 << id) != 0) {
            return Err(format!("coremask {mask:#x} selects none of the forwarding lcores {w:?}"));
        }
        self.set.coremask = Some(mask);
        Ok(())
    }
    /// `set portmask MASK`.
    pub fn set_portmask(&mut self, mask: u64) -> CmdResult {
        if self.is_forwarding() {
            return Err("Please stop forwarding first (stop)".into());
        }
        if (0..self.ports.len().min(64)).all(|i| mask & (1u64 << i) == 0) {
            return Err(format!("portmask {mask:#x} selects none of the {} ports", self.ports.len()));
        }
        self.set.portmask = mask;
        Ok(())
    }
    /// `set nbport N`.
    pub fn set_nb_ports(&mut self, n: u16) -> CmdResult {
        let max = self.ports.len();
        if n == 0 || n as usize > max {
            return Err(format!("nb fwd ports {n} must be between 1 and {max}"));
        }
        self.set.nb_ports = Some(n);
        println!("Number of forwarding ports set to {n}");
        Ok(())
    }
    /// `set txpkts ...`.
    pub fn set_txpkts(&mut self, segs: Vec<u16>) -> CmdResult {
        let room = self.pool.data_room();
        if segs.iter().any(|&l| l > room) {
            return Err(format!("a segment is longer than the mbuf data room ({room} bytes)"));
        }
        self.set.txpkts = segs;
        Ok(())
    }
    /// `port config all rxq|txq|rxd|txd N`.
    pub fn port_config_all(&mut self, what: &str, n: u16) -> CmdResult {
        if self.ports.iter().any(|p| p.dev.is_started()) {
            return Err("Please stop all ports first (port stop all)".into());
        }
        if n == 0 {
            return Err(format!("{what} must be at least 1"));
        }
        match what {
            "rxq" | "txq" => {
                let max = self
                    .ports
                    .iter()
                    .map(|p| if what == "rxq" { p.dev.info().max_rx_queues } else { p.dev.info().max_tx_queues })
                    .min()
                    .unwrap_or(1);
                if n > max {
                    return Err(format!("{what} {n} is more than the ports allow ({max})"));
                }
                if what == "rxq" {
                    self.set.rxq = n
                } else {
                    self.set.txq = n
                }
            }
            "rxd" | "txd" => {
                for p in &self.ports {
                    let info = p.dev.info();
                    let lim = if what == "rxd" { info.rx_desc_lim } else { info.tx_desc_lim };
                    if n < lim.min || n > lim.max || (lim.align > 1 && !n.is_multiple_of(lim.align)) {
                        return Err(format!(
                            "Invalid {what} {n} for port {}: {}..{} in steps of {}",
                            p.id, lim.min, lim.max, lim.align
                        ));
                    }
                }
                if what == "rxd" {
                    self.set.rxd = n
                } else {
                    self.set.txd = n
                }
            }
            _ => return Err(format!("port config all: unknown setting {what:?} (rxq, txq, rxd, txd)")),
        }
        for p in &mut self.ports {
            p.need_reconfig = true;
        }
        Ok(())
    }
    /// `port config mtu N M`.
    pub fn set_mtu(&mut self, id: u16, mtu: u16) -> CmdResult {
        let port = &mut self.ports[id as usize];
        port.dev.set_mtu(mtu).map_err(|e| format!("Set MTU failed: {e}"))
    }
}
