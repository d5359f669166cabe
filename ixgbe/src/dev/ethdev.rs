//! [`EthDev`] and [`TypedQueues`] for [`Ixgbe`]: the port API over the bring-up, start, filters, RSS and counters of
//! the sibling modules.

use super::*;

impl<R: RegisterSpace + 'static> TypedQueues for Ixgbe<R> {
    type Rx = IxgbeRxQueue<R>;
    type Tx = IxgbeTxQueue<R>;

    /// Typed RX queue `queue` (static dispatch; once per start).
    fn rx_queue_typed(&mut self, queue: u16) -> Result<Self::Rx> {
        self.state.take_rx(queue, &mut self.rx)
    }

    /// Typed TX queue `queue` (static dispatch; once per start).
    fn tx_queue_typed(&mut self, queue: u16) -> Result<Self::Tx> {
        self.state.take_tx(queue, &mut self.tx)
    }
}

impl<R: RegisterSpace + 'static> EthDev for Ixgbe<R> {
    fn state(&self) -> &PortState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut PortState {
        &mut self.state
    }

    fn configure(&mut self, config: &PortConfig) -> Result<()> {
        // What the X540/82599 adds to the generic checks: its RSS table and key.
        let mut key = self.rss_key;
        if let Some(rss) = &config.rss {
            if config.rx_queues > RETA_MAX_QUEUES {
                return Err(self.invalid(format!(
                    "RSS over {} RX queues: the X540/82599 redirection table has 4-bit entries, so RSS spreads over \
                     at most {RETA_MAX_QUEUES} queues; configure at most {RETA_MAX_QUEUES} RX queues with RSS",
                    config.rx_queues
                )));
            }
            if let Some(k) = &rss.key {
                if k.len() != RSS_KEY_LEN {
                    return Err(self.invalid(format!("RSS key of {} bytes; the X540 takes {RSS_KEY_LEN}", k.len())));
                }
                key.copy_from_slice(k);
            }
        }
        self.check_vectors(config)?;
        self.state.configure(config)?;
        self.rss_key = key;
        for (e, slot) in self.reta.iter_mut().enumerate() {
            *slot = (e % config.rx_queues as usize) as u8;
        }
        self.state.reset_stats_to(self.raw_stats());
        self.xbase = self.hw_values();
        self.sets_base = self.queue_sets();
        Ok(())
    }

    fn start(&mut self, pool: &Mempool) -> Result<()> {
        if self.state.started {
            return Err(Error::Started { port: self.options.name.clone() });
        }
        if !self.fresh {
            self.reset_and_init()?;
        }
        self.fresh = false;
        match self.hw_start(pool) {
            Ok(()) => self.state.start_with_pool(pool),
            Err(e) => {
                // Rings made so far disable themselves and give their buffers back as they drop.
                self.rx.clear();
                self.tx.clear();
                self.regs.clear_bits(RXCTRL, rxctrl::RXEN);
                self.teardown_interrupts();
                Err(e)
            }
        }
    }

    fn stop(&mut self) -> Result<()> {
        if !self.state.started {
            return Ok(());
        }
        self.state.stop()?;
        self.regs.clear_bits(RXCTRL, rxctrl::RXEN);
        self.rx.clear();
        self.tx.clear();
        self.regs.clear_bits(DMATXCTL, dmatxctl::TE);
        self.teardown_interrupts();
        Ok(())
    }

    fn rx_queue(&mut self, queue: u16) -> Result<Box<dyn RxQueue>> {
        Ok(Box::new(self.rx_queue_typed(queue)?))
    }

    fn tx_queue(&mut self, queue: u16) -> Result<Box<dyn TxQueue>> {
        Ok(Box::new(self.tx_queue_typed(queue)?))
    }

    /// TX: the path queue 0 runs when started, else the one the configuration's TX offloads choose.
    fn burst_mode(&self) -> pktio::BurstMode {
        let chosen = self.tx_path.filter(|_| self.state.started);
        ringkit::burst_mode_for(chosen.unwrap_or(ringkit::TxPath::for_offloads(self.state.config.tx_offloads)))
    }

    fn link(&self) -> LinkStatus {
        self.watch_tx_hangs();
        self.ack_link_event();
        self.read_link()
    }

    fn link_event_fd(&self) -> Result<std::os::fd::RawFd> {
        self.lsc_raw_fd()
    }

    fn set_link_up(&mut self, up: bool) -> Result<()> {
        if self.options.mac_type == MacType::X82599 {
            self.setup_link_82599(up);
            return Ok(());
        }
        self.setup_phy(up).map_err(|e| {
            let reason = format!("cannot set the link {}: {e}", if up { "up" } else { "down" });
            DevError::Phy { reason }.at(&self.options.name)
        })
    }

    fn set_mac_addr(&mut self, mac: MacAddr) -> Result<()> {
        if mac == MacAddr::ZERO || mac.is_multicast() {
            return Err(self.invalid(format!("{mac} is not a unicast address")));
        }
        self.state.mac = mac;
        self.apply_mac();
        Ok(())
    }

    fn set_promiscuous(&mut self, on: bool) -> Result<()> {
        self.state.promiscuous = on;
        self.apply_filters();
        Ok(())
    }

    fn set_allmulticast(&mut self, on: bool) -> Result<()> {
        self.state.allmulticast = on;
        self.apply_filters();
        Ok(())
    }

    fn set_mtu(&mut self, mtu: u16) -> Result<()> {
        self.state.set_mtu(mtu)?;
        // Frames larger than one RX buffer arrive as chains, so the MTU can change while started.
        self.apply_mtu();
        Ok(())
    }

    fn stats(&self) -> PortStats {
        self.watch_tx_hangs();
        self.state.since_reset(self.raw_stats())
    }

    fn reset_stats(&mut self) {
        self.state.reset_stats_to(self.raw_stats());
        self.xbase = self.hw_values();
        self.sets_base = self.queue_sets();
    }

    fn xstats(&self) -> Vec<XStat> {
        let mut out = self.stats().generic_xstats();
        // As DPDK's ixgbe: rx_qN_* and tx_qN_* are counter set N (RQSMR/TQSM), not queue N.
        let (now, base) = (self.queue_sets(), self.sets_base);
        for x in &mut out {
            let Some((dir, rest)) = x.name.split_once("_q") else { continue };
            let Some((n, what)) = rest.split_once('_') else { continue };
            let Ok(n) = n.parse::<usize>() else { continue };
            if n >= QUEUE_STAT_SETS {
                continue;
            }
            let v = |a: &[u64; QUEUE_STAT_SETS], b: &[u64; QUEUE_STAT_SETS]| a[n].wrapping_sub(b[n]);
            x.value = match (dir, what) {
                ("rx", "packets") => v(&now.rx_packets, &base.rx_packets),
                ("rx", "bytes") => v(&now.rx_bytes, &base.rx_bytes),
                ("tx", "packets") => v(&now.tx_packets, &base.tx_packets),
                ("tx", "bytes") => v(&now.tx_bytes, &base.tx_bytes),
                _ => x.value,
            };
        }
        let hw = self.dpdk_values(&self.xbase);
        for (s, v) in STATS.iter().zip(hw) {
            out.push(XStat::new(s.name, v));
        }
        out.extend(ringkit::watchdog::xstats(&self.tx_hang));
        out
    }

    fn rss_hash_update(&mut self, rss: &RssConfig) -> Result<()> {
        let Some(cur) = &mut self.state.config.rss else {
            // Intel datasheet 7.1.2.8 via DPDK, docs/hw/ixgbe.md §9: RSS is only turned on or off as part of a reset.
            return Err(self.state.invalid(
                "RSS was not enabled at configure time; it can only be turned on by configuring the port with RSS \
                 (and restarting it)",
            ));
        };
        if let Some(k) = &rss.key {
            if k.len() != RSS_KEY_LEN {
                return Err(self.invalid(format!("RSS key of {} bytes; the X540 takes {RSS_KEY_LEN}", k.len())));
            }
            self.rss_key.copy_from_slice(k);
        }
        cur.functions = rss.functions;
        if rss.key.is_some() {
            cur.key = rss.key.clone();
        }
        if self.state.started {
            self.apply_rss();
        }
        Ok(())
    }

    fn reta_update(&mut self, table: &[u16]) -> Result<()> {
        if table.is_empty() || !RETA_ENTRIES.is_multiple_of(table.len()) {
            return Err(self.invalid(format!(
                "redirection table of {} entries; give {RETA_ENTRIES} (or a divisor of it, repeated)",
                table.len()
            )));
        }
        let limit = self.state.config.rx_queues.min(RETA_MAX_QUEUES);
        if let Some(bad) = table.iter().find(|&&q| q >= limit) {
            return Err(self.invalid(format!(
                "redirection table entry {bad}: must name one of the first {limit} RX queues (4-bit entries)"
            )));
        }
        for (e, slot) in self.reta.iter_mut().enumerate() {
            *slot = table[e % table.len()] as u8;
        }
        if self.state.started {
            self.apply_reta();
        }
        Ok(())
    }

    fn vlan_filter(&mut self, vlan_id: u16, on: bool) -> Result<()> {
        if vlan_id > MAX_VLAN_ID {
            return Err(self.invalid(format!("VLAN ID {vlan_id}: must be 0..={MAX_VLAN_ID}")));
        }
        let (word, b) = vfta_slot(vlan_id);
        if on {
            self.vfta[word] |= b;
        } else {
            self.vfta[word] &= !b;
        }
        // As DPDK with its VLAN-filter offload on: once filtering, removing the last ID leaves it on, so tagged
        // frames then all drop (untagged ones never meet the VFTA).
        self.state.vlan_filter = true;
        self.regs.write(vfta(word), self.vfta[word]);
        self.regs.set_bits(VLNCTRL, vlnctrl::VFE);
        Ok(())
    }

    fn set_vlan_filter_enabled(&mut self, on: bool) -> Result<()> {
        // VLNCTRL.VFE alone switches the table in or out; the VFTA keeps the IDs meanwhile.
        self.state.vlan_filter = on;
        self.apply_vlan_filter();
        Ok(())
    }

    fn queue_stats_mapping(&mut self, rx: bool, queue: u16, set: u8) -> Result<()> {
        let nq = if rx { self.state.config.rx_queues } else { self.state.config.tx_queues };
        if queue >= nq || set as usize >= QUEUE_STAT_SETS {
            return Err(self.invalid(format!(
                "queue {queue} to counter set {set}: queue must be < {nq}, set < {QUEUE_STAT_SETS}"
            )));
        }
        let (q, dir) = (queue as usize, usize::from(!rx));
        let shift = 8 * (q % 4);
        let word = &mut self.qsmr[dir][q / 4];
        *word = (*word & !(QSMR_MAP.mask() << shift)) | QSMR_MAP.val(set as u32) << shift;
        let reg = if rx { rqsmr(q / 4) } else { tqsm(q / 4) };
        self.regs.write(reg, *word);
        Ok(())
    }

    fn mac_addr_add(&mut self, mac: MacAddr, pool: u32) -> Result<()> {
        if let Some(slot) = self.state.add_mac(mac, pool)? {
            self.write_rar(slot, mac);
        }
        Ok(())
    }

    fn mac_addr_remove(&mut self, mac: MacAddr) -> Result<()> {
        if let Some(slot) = self.state.remove_mac(mac)? {
            self.write_rar(slot, MacAddr::ZERO);
        }
        Ok(())
    }
}

impl<R: RegisterSpace> Drop for Ixgbe<R> {
    fn drop(&mut self) {
        self.regs.clear_bits(RXCTRL, rxctrl::RXEN);
        self.rx.clear();
        self.tx.clear();
        self.teardown_interrupts();
        self.regs.clear_bits(CTRL_EXT, ctrl_ext::DRV_LOAD);
    }
}
