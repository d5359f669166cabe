//! Starting traffic (docs/hw/ixgbe.md §3.5 to §3.7): receive filters, MTU, RSS, the rings, RX enable.

use super::*;

impl<R: RegisterSpace> Ixgbe<R> {
    /// RXCTRL.RXEN (docs/hw/ixgbe.md §3.7 step 35). The 82599 needs its security block quiesced around it (errata): set
    /// SECRXCTRL.RX_DIS, poll SECRXSTAT.SECRX_RDY, set RXEN, clear RX_DIS. Like DPDK, a security block that never
    /// reports ready does not stop the start.
    pub(super) fn enable_rx(&self) {
        if self.options.mac_type != MacType::X82599 {
            self.regs.set_bits(RXCTRL, rxctrl::RXEN);
            return;
        }
        self.regs.set_bits(SECRXCTRL, secrxctrl::RX_DIS);
        let budget = self.options.timing.security_block;
        let _ = self.regs.poll(SECRXSTAT, secrxstat::SECRX_RDY, secrxstat::SECRX_RDY, budget);
        self.regs.set_bits(RXCTRL, rxctrl::RXEN);
        self.regs.clear_bits(SECRXCTRL, secrxctrl::RX_DIS);
    }

    pub(super) fn frame_size(&self) -> u32 {
        self.state.config.mtu as u32 + FRAME_OVERHEAD
    }

    pub(super) fn apply_mtu(&self) {
        let frame = self.frame_size();
        self.regs.write_field(MAXFRS, maxfrs::MFS, frame);
        if self.state.config.mtu > STD_MTU {
            self.regs.set_bits(HLREG0, hlreg0::JUMBOEN);
        } else {
            self.regs.clear_bits(HLREG0, hlreg0::JUMBOEN);
        }
    }

    pub(super) fn apply_mac(&self) {
        self.write_rar(0, self.state.mac);
        for (i, &m) in self.state.extra_macs.iter().enumerate() {
            self.write_rar(i + 1, m);
        }
    }

    /// Receive address slot `i` (docs/hw/ixgbe.md §10.1): `mac` valid for pool 0, or cleared for the zero address.
    pub(super) fn write_rar(&self, i: usize, mac: MacAddr) {
        if mac == MacAddr::ZERO {
            self.regs.write(rah(i), 0);
            self.regs.write(ral(i), 0);
            self.regs.clear_bits(mpsar_lo(i), bit(0));
            return;
        }
        let m = mac.0;
        self.regs.write(ral(i), u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
        self.regs.write(rah(i), rah::ADDR_HI.val(u16::from_le_bytes([m[4], m[5]]) as u32) | rah::AV);
        self.regs.set_bits(mpsar_lo(i), bit(0));
    }

    /// Writes the VLAN filter table and VLNCTRL.VFE (docs/hw/ixgbe.md §10.3).
    pub(super) fn apply_vlan_filter(&self) {
        for (i, w) in self.vfta.iter().enumerate() {
            self.regs.write(vfta(i), *w);
        }
        if self.state.vlan_filter {
            self.regs.set_bits(VLNCTRL, vlnctrl::VFE);
        } else {
            self.regs.clear_bits(VLNCTRL, vlnctrl::VFE);
        }
    }

    pub(super) fn apply_filters(&self) {
        let mut set = fctrl::BAM | fctrl::DPF | fctrl::PMCF;
        let mut clear = fctrl::SBP;
        if self.state.promiscuous {
            set |= fctrl::UPE | fctrl::MPE;
        } else {
            clear |= fctrl::UPE;
            if self.state.allmulticast {
                set |= fctrl::MPE;
            } else {
                clear |= fctrl::MPE;
            }
        }
        let v = self.regs.read(FCTRL);
        self.regs.write(FCTRL, (v & !clear) | set);
    }

    pub(super) fn mrqc_fields(functions: RssHashFunctions) -> u32 {
        let f = functions;
        let mut v = 0;
        if f.contains(RssHashFunctions::IPV4) {
            v |= mrqc::RSS_FIELD_IPV4;
        }
        if f.contains(RssHashFunctions::IPV4_TCP) {
            v |= mrqc::RSS_FIELD_IPV4_TCP;
        }
        if f.contains(RssHashFunctions::IPV4_UDP) {
            v |= mrqc::RSS_FIELD_IPV4_UDP;
        }
        if f.contains(RssHashFunctions::IPV6) {
            v |= mrqc::RSS_FIELD_IPV6 | mrqc::RSS_FIELD_IPV6_EX;
        }
        if f.contains(RssHashFunctions::IPV6_TCP) {
            v |= mrqc::RSS_FIELD_IPV6_TCP | mrqc::RSS_FIELD_IPV6_EX_TCP;
        }
        if f.contains(RssHashFunctions::IPV6_UDP) {
            v |= mrqc::RSS_FIELD_IPV6_UDP | mrqc::RSS_FIELD_IPV6_EX_UDP;
        }
        v
    }

    pub(super) fn apply_rss(&self) {
        let Some(rss) = &self.state.config.rss else {
            self.regs.write(MRQC, 0);
            return;
        };
        for (i, w) in self.rss_key.chunks(4).enumerate() {
            self.regs.write(rssrk(i), u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
        self.apply_reta();
        self.regs.write(MRQC, mrqc::MRQE.val(mrqc::MRQE_RSS) | Self::mrqc_fields(rss.functions));
    }

    pub(super) fn apply_reta(&self) {
        for (i, e) in self.reta.chunks(4).enumerate() {
            self.regs.write(reta(i), u32::from_le_bytes([e[0], e[1], e[2], e[3]]));
        }
    }

    pub(super) fn ring_config(&self, size: u16) -> RingConfig {
        RingConfig {
            enable_timeout: self.options.timing.queue_enable,
            tx_hang: self.options.timing.tx_hang,
            ..RingConfig::new(size)
        }
    }

    pub(super) fn hw_start(&mut self, pool: &Mempool) -> Result<()> {
        let name = self.options.name.clone();
        // 3.5 RX global.
        self.regs.clear_bits(RXCTRL, rxctrl::RXEN);
        self.apply_mac();
        self.apply_qsmr();
        self.apply_filters();
        self.apply_vlan_filter();
        self.regs.set_bits(HLREG0, hlreg0::RXCRCSTRP | hlreg0::TXCRCEN | hlreg0::TXPADEN);
        self.regs.clear_bits(HLREG0, hlreg0::LPBK);
        let v = self.regs.read(RDRXCTL);
        self.regs.write(
            RDRXCTL,
            rdrxctl::RSCFRSTSIZE.set(v, 0) | rdrxctl::CRCSTRIP | rdrxctl::RSCACKC | rdrxctl::FCOE_WRFIX,
        );
        self.apply_mtu();
        self.regs.write(RXCSUM, rxcsum::PCSD | rxcsum::IPPCSE);
        self.apply_rss();

        let rx_cfg = self.ring_config(self.state.config.rx_desc);
        let tx_cfg = self.ring_config(self.state.config.tx_desc);
        self.rx.clear();
        self.tx.clear();
        for q in 0..self.state.config.rx_queues {
            let ring = RxRing::new(
                RxSetup {
                    regs: &self.regs,
                    allocator: &self.allocator,
                    mapper: &self.mapper,
                    pool,
                    queue: q,
                    port_id: self.state.port_id,
                    stats: self.state.rx_stats(q).expect("a configured queue").clone(),
                    port: &name,
                    // docs/hw/ixgbe.md §7.2, §15: the 82599 only.
                    udp_csum_zero_err: self.options.mac_type == MacType::X82599,
                },
                rx_cfg,
            )?;
            self.rx.push(Some(ring));
        }
        self.regs.set_bits(CTRL_EXT, ctrl_ext::NS_DIS);

        // 3.6 TX global.
        self.regs.write(DTXMXSZRQ, DTXMXSZRQ_MAX);
        self.regs.set_bits(RTTDCS, rttdcs::ARBDIS);
        self.regs.write(MTQC, 0);
        self.regs.clear_bits(RTTDCS, rttdcs::ARBDIS);
        self.tx_hang = (0..self.state.config.tx_queues).map(|_| Default::default()).collect();
        let timeout = self.options.timing.tx_hang;
        self.tx_watch = (self.tx_hang.iter().enumerate())
            .map(|(q, s)| ringkit::TxWatchdog::new(&name, q as u16, timeout, s.clone()))
            .collect();
        for q in 0..self.state.config.tx_queues {
            let ring = TxRing::new(
                TxSetup {
                    regs: &self.regs,
                    allocator: &self.allocator,
                    mapper: &self.mapper,
                    pool,
                    queue: q,
                    stats: self.state.tx_stats(q).expect("a configured queue").clone(),
                    hang: self.tx_hang[q as usize].clone(),
                    port: &name,
                    path: ringkit::TxPath::for_offloads(self.state.config.tx_offloads),
                },
                tx_cfg,
            )?;
            self.tx.push(Some(ring));
        }
        self.tx_path = self.tx.first().and_then(Option::as_ref).map(TxRing::path);
        self.regs.set_bits(DMATXCTL, dmatxctl::TE);

        // Vectors before the queues run: a frame's write-back then finds its IVAR entry.
        self.setup_interrupts()?;

        // 3.7 start queues, then RX.
        let budget = self.options.timing.queue_enable;
        for (q, ring) in self.tx.iter_mut().flatten().enumerate() {
            ring.enable()
                .map_err(|t| error::timeout(format!("TX queue {q} enable"), "TXDCTL", t.last, budget).at(&name))?;
        }
        for (q, ring) in self.rx.iter_mut().flatten().enumerate() {
            ring.enable()
                .map_err(|t| error::timeout(format!("RX queue {q} enable"), "RXDCTL", t.last, budget).at(&name))?;
        }
        self.enable_rx();
        Ok(())
    }
}
