//! The control plane of a port: [`EthDev`], and the data plane queue traits.

use mempool::{Mempool, PacketBatch};
use pkthdr::MacAddr;

use crate::port_state::PortState;
use crate::queue_info::{QueueBurstMode, RxQueueInfo, TxQueueInfo};
use crate::stats::{PortStats, XStat};
use crate::{Error, Result};

/// Link state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkStatus {
    /// Carrier present.
    pub up: bool,
    /// Speed in Mb/s (0 when down or unknown).
    pub speed_mbps: u32,
    /// Full duplex.
    pub full_duplex: bool,
    /// Speed was auto-negotiated.
    pub autoneg: bool,
}

impl LinkStatus {
    /// An up, full-duplex link at `speed_mbps`.
    pub fn up(speed_mbps: u32) -> Self {
        LinkStatus { up: true, speed_mbps, full_duplex: true, autoneg: false }
    }
}

/// Which packet fields RSS hashes (after DPDK's RTE_ETH_RSS_*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RssHashFunctions(pub u32);

impl RssHashFunctions {
    /// IPv4 addresses.
    pub const IPV4: u32 = 1 << 0;
    /// IPv4 addresses and TCP ports.
    pub const IPV4_TCP: u32 = 1 << 1;
    /// IPv4 addresses and UDP ports.
    pub const IPV4_UDP: u32 = 1 << 2;
    /// IPv6 addresses.
    pub const IPV6: u32 = 1 << 3;
    /// IPv6 addresses and TCP ports.
    pub const IPV6_TCP: u32 = 1 << 4;
    /// IPv6 addresses and UDP ports.
    pub const IPV6_UDP: u32 = 1 << 5;
    /// testpmd's `--rss-ip`.
    pub const IP: RssHashFunctions = RssHashFunctions(Self::IPV4 | Self::IPV6);
    /// testpmd's `--rss-udp`.
    pub const UDP: RssHashFunctions = RssHashFunctions(Self::IPV4_UDP | Self::IPV6_UDP);
    /// IP and TCP/UDP.
    pub const ALL: RssHashFunctions = RssHashFunctions(0x3f);

    /// True when any of `bits` is set.
    pub fn contains(&self, bits: u32) -> bool {
        self.0 & bits != 0
    }
}

/// RSS settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RssConfig {
    /// Toeplitz key; `None` keeps the driver's default.
    pub key: Option<Vec<u8>>,
    /// Fields hashed.
    pub functions: RssHashFunctions,
}

/// Offload capability and request bits (after DPDK's RTE_ETH_RX_OFFLOAD_* / TX_OFFLOAD_*).
pub mod offload {
    /// RX: IPv4 header checksum checked.
    pub const RX_IPV4_CKSUM: u64 = 1 << 1;
    /// RX: UDP checksum checked.
    pub const RX_UDP_CKSUM: u64 = 1 << 2;
    /// RX: TCP checksum checked.
    pub const RX_TCP_CKSUM: u64 = 1 << 3;
    /// RX: VLAN tag stripped.
    pub const RX_VLAN_STRIP: u64 = 1 << 0;
    /// RX: frames larger than one buffer arrive as chains.
    pub const RX_SCATTER: u64 = 1 << 13;
    /// RX: RSS hash delivered in the mbuf.
    pub const RX_RSS_HASH: u64 = 1 << 19;
    /// RX: each packet split over buffers of given lengths from given offsets (no port here has it).
    pub const RX_BUFFER_SPLIT: u64 = 1 << 20;
    /// TX: IPv4 header checksum computed.
    pub const TX_IPV4_CKSUM: u64 = 1 << 1;
    /// TX: UDP checksum computed.
    pub const TX_UDP_CKSUM: u64 = 1 << 2;
    /// TX: TCP checksum computed.
    pub const TX_TCP_CKSUM: u64 = 1 << 3;
    /// TX: TCP segmentation.
    pub const TX_TCP_TSO: u64 = 1 << 5;
    /// TX: chains of several buffers accepted.
    pub const TX_MULTI_SEGS: u64 = 1 << 15;
    /// TX: the driver may free buffers as soon as they are sent (no reference counts).
    pub const TX_MBUF_FAST_FREE: u64 = 1 << 16;
    /// RX: the IPv4, UDP and TCP checksums checked (what a NIC with checksum offload reports together).
    pub const RX_CKSUM: u64 = RX_IPV4_CKSUM | RX_UDP_CKSUM | RX_TCP_CKSUM;
    /// TX: the IPv4, UDP and TCP checksums computed.
    pub const TX_CKSUM: u64 = TX_IPV4_CKSUM | TX_UDP_CKSUM | TX_TCP_CKSUM;
}

/// What a port is asked to be (`rte_eth_dev_configure` plus queue setup).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortConfig {
    /// RX queues.
    pub rx_queues: u16,
    /// TX queues.
    pub tx_queues: u16,
    /// RX descriptors per queue.
    pub rx_desc: u16,
    /// TX descriptors per queue.
    pub tx_desc: u16,
    /// MTU (L3 payload size; the frame adds 14 bytes of header, 4 of CRC).
    pub mtu: u16,
    /// RSS over the RX queues, when more than one.
    pub rss: Option<RssConfig>,
    /// RX offloads requested ([`offload`]).
    pub rx_offloads: u64,
    /// TX offloads requested ([`offload`]).
    pub tx_offloads: u64,
    /// Interrupts asked for (DPDK's `dev_conf.intr_conf`); a port without them refuses the configuration.
    pub intr_conf: IntrConf,
}

/// Which interrupts a port is configured to deliver (DPDK's `rte_eth_intr_conf`). Off, the port is polled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IntrConf {
    /// RX queue interrupts: each RX queue's [`RxQueue::wait_fd`] is the descriptor its interrupt signals, armed
    /// with [`RxQueue::intr_enable`] (DPDK's `intr_conf.rxq`).
    pub rxq: bool,
    /// Link-state-change interrupts: [`EthDev::link_event_fd`] becomes readable when the link changes (DPDK's
    /// `intr_conf.lsc`).
    pub lsc: bool,
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig {
            rx_queues: 1,
            tx_queues: 1,
            rx_desc: 1024,
            tx_desc: 1024,
            mtu: 1500,
            rss: None,
            rx_offloads: 0,
            tx_offloads: 0,
            intr_conf: IntrConf::default(),
        }
    }
}

/// Limits on a descriptor count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescLimits {
    /// Fewest descriptors.
    pub min: u16,
    /// Most descriptors.
    pub max: u16,
    /// The count must be a multiple of this.
    pub align: u16,
}

/// What a port is and can do (`rte_eth_dev_info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevInfo {
    /// Driver name (e.g. `net_null`, `net_ixgbe`).
    pub driver_name: &'static str,
    /// Device name (e.g. `net_null0`, `0000:01:00.0`).
    pub device_name: String,
    /// Most RX queues.
    pub max_rx_queues: u16,
    /// Most TX queues.
    pub max_tx_queues: u16,
    /// RX descriptor count limits.
    pub rx_desc_lim: DescLimits,
    /// TX descriptor count limits.
    pub tx_desc_lim: DescLimits,
    /// Smallest MTU.
    pub min_mtu: u16,
    /// Largest MTU.
    pub max_mtu: u16,
    /// Largest frame received.
    pub max_rx_pktlen: u32,
    /// RX offloads supported.
    pub rx_offload_capa: u64,
    /// TX offloads supported.
    pub tx_offload_capa: u64,
    /// Unicast MAC addresses the receive filter holds, the default one included (DPDK's `max_mac_addrs`).
    pub max_mac_addrs: u32,
    /// RSS hash functions supported.
    pub flow_type_rss_offloads: RssHashFunctions,
    /// Redirection table entries (0: no RSS).
    pub reta_size: u16,
    /// RSS key length in bytes.
    pub hash_key_size: u8,
    /// Link speeds supported, in Mb/s.
    pub speed_capa: Vec<u32>,
    /// NUMA node of the device, if known.
    pub numa_node: Option<u32>,
}

impl DevInfo {
    /// Info for a software port: `queues` queues each way, any descriptor count up to 4096.
    pub fn software(driver_name: &'static str, device_name: &str, queues: u16) -> DevInfo {
        DevInfo {
            driver_name,
            device_name: device_name.to_string(),
            max_rx_queues: queues,
            max_tx_queues: queues,
            rx_desc_lim: DescLimits { min: 1, max: 4096, align: 1 },
            tx_desc_lim: DescLimits { min: 1, max: 4096, align: 1 },
            min_mtu: 68,
            max_mtu: 9600,
            max_rx_pktlen: 9600 + 18,
            rx_offload_capa: 0,
            tx_offload_capa: offload::TX_MULTI_SEGS,
            max_mac_addrs: 1,
            flow_type_rss_offloads: RssHashFunctions(0),
            reta_size: 0,
            hash_key_size: 0,
            speed_capa: vec![],
            numa_node: None,
        }
    }

    fn invalid(&self, reason: String) -> Error {
        Error::InvalidConfig { port: self.device_name.clone(), reason }
    }

    /// Checks `config` against these limits: queue counts, descriptor counts, MTU. The one check every port
    /// applies; a driver adds only what is its own (e.g. how many queues its RSS table can name).
    pub fn check(&self, config: &PortConfig) -> Result<()> {
        for (what, n, max) in
            [("RX", config.rx_queues, self.max_rx_queues), ("TX", config.tx_queues, self.max_tx_queues)]
        {
            if n == 0 || n > max {
                return Err(self.invalid(format!("{n} {what} queues asked, 1..={max} allowed")));
            }
        }
        for (what, n, lim) in [("RX", config.rx_desc, self.rx_desc_lim), ("TX", config.tx_desc, self.tx_desc_lim)] {
            if n < lim.min || n > lim.max || n % lim.align.max(1) != 0 {
                return Err(self.invalid(format!(
                    "{n} {what} descriptors asked, {}..={} in multiples of {} allowed",
                    lim.min, lim.max, lim.align
                )));
            }
        }
        self.check_mtu(config.mtu)
    }

    /// Checks an MTU against the limits.
    pub fn check_mtu(&self, mtu: u16) -> Result<()> {
        if mtu < self.min_mtu || mtu > self.max_mtu {
            return Err(self.invalid(format!("MTU {mtu} outside {}..={}", self.min_mtu, self.max_mtu)));
        }
        Ok(())
    }
}

/// The receive side of one queue. Owned by one thread (`Send`, not `Sync`).
///
/// Sleeping when idle (DPDK's RX interrupts, `l3fwd-power`): when a burst finds nothing, [`Self::intr_enable`],
/// burst once more (a frame may have come in between), then wait for [`Self::wait_fd`] to become readable
/// (`poll(2)`/`epoll` alongside the application's own descriptors); once woken, [`Self::intr_disable`] and poll
/// in bursts again until the queue is idle. On a port whose queues signal an interrupt (a PCI port configured with
/// [`IntrConf::rxq`]) the descriptor is an eventfd the queue's interrupt vector writes: it stays readable until
/// the next [`Self::intr_enable`] drains it. On a software port it is the port's own descriptor (a socket, a TAP),
/// readable while a packet waits, and arming or disarming it does nothing.
pub trait RxQueue: Send {
    /// Appends up to `batch.remaining()` received packets to `batch`; returns how many.
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize;

    /// A file descriptor that `poll(2)` reports readable (`POLLIN`) when a packet arrives on this queue, for a
    /// loop that sleeps when idle instead of spinning. `None` (the default): the queue has no such descriptor and
    /// must be polled. The descriptor stays owned by the queue. A software port's descriptor is readable while a
    /// packet waits, so a packet that arrives between an empty [`Self::rx_burst`] and the `poll` wakes it; an
    /// interrupt's descriptor wakes only while armed ([`Self::intr_enable`]). A wake-up may find nothing
    /// (another reader, a frame the burst drops, a frame already taken before the interrupt was disarmed).
    fn wait_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }

    /// Arms the queue's interrupt (DPDK's `rte_eth_dev_rx_intr_enable`): from now on the next frame makes
    /// [`Self::wait_fd`] readable; a signal left from before is drained first. A frame that arrived just before
    /// arming (after the last empty burst) still wakes the waiter. The default: nothing to arm on a queue whose
    /// descriptor is readable while a packet waits (a software port's), [`Error::NotSupported`] on a queue with
    /// no descriptor.
    fn intr_enable(&mut self) -> Result<()> {
        match self.wait_fd() {
            Some(_) => Ok(()),
            None => Err(no_rx_interrupt()),
        }
    }

    /// Disarms the queue's interrupt (DPDK's `rte_eth_dev_rx_intr_disable`): frames no longer signal
    /// [`Self::wait_fd`]; the application polls. Same defaults as [`Self::intr_enable`].
    fn intr_disable(&mut self) -> Result<()> {
        match self.wait_fd() {
            Some(_) => Ok(()),
            None => Err(no_rx_interrupt()),
        }
    }
}

/// What a queue without a descriptor says when asked to arm one.
fn no_rx_interrupt() -> Error {
    Error::NotSupported {
        port: "(an RX queue)".to_string(),
        driver: "its driver",
        what: "RX queue interrupts (no wait_fd; configure intr_conf.rxq on a port that has them, or poll)",
    }
}

/// The transmit side of one queue. Owned by one thread.
pub trait TxQueue: Send {
    /// Sends packets from the front of `batch`; those sent leave it, those that did not fit stay (in order) for
    /// the caller to retry or drop. Returns how many were sent.
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize;
}

impl<Q: RxQueue + ?Sized> RxQueue for Box<Q> {
    #[inline(always)]
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        (**self).rx_burst(batch)
    }

    fn wait_fd(&self) -> Option<std::os::fd::RawFd> {
        (**self).wait_fd()
    }

    fn intr_enable(&mut self) -> Result<()> {
        (**self).intr_enable()
    }

    fn intr_disable(&mut self) -> Result<()> {
        (**self).intr_disable()
    }
}

impl<Q: TxQueue + ?Sized> TxQueue for Box<Q> {
    #[inline(always)]
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        (**self).tx_burst(batch)
    }
}

/// Which RX and TX burst code a port runs (DPDK's `rte_eth_rx_burst_mode_get`/`tx`): short names such as
/// "Vector SSE2" or "Scalar", for reports that compare runs across platforms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BurstMode {
    /// The RX path.
    pub rx: &'static str,
    /// The TX path.
    pub tx: &'static str,
}

impl BurstMode {
    /// One packet at a time in plain code, both ways (the default).
    pub const SCALAR: BurstMode = BurstMode { rx: "Scalar", tx: "Scalar" };
}

/// A port's control plane: what `rte_eth_dev_*` does. The data plane is handed out as owned queues after
/// [`EthDev::start`]; they must be dropped again before [`EthDev::stop`].
///
/// A port implements [`EthDev::state`]/[`EthDev::state_mut`] (its [`PortState`]), start, stop, queue hand-out
/// and link; the getters and the setters with nothing behind them to tell come from the state. A port with a
/// device or kernel interface behind it overrides the setters that must reach it.
pub trait EthDev: Send {
    /// The state kept for this port. For implementors: callers use the methods below.
    fn state(&self) -> &PortState;

    /// The state, to change. For implementors: changing it directly bypasses the device.
    fn state_mut(&mut self) -> &mut PortState;

    /// What the device is and can do.
    fn info(&self) -> DevInfo {
        self.state().info.clone()
    }

    /// Sets queue counts, descriptor counts, MTU, RSS and offloads. The port must be stopped.
    fn configure(&mut self, config: &PortConfig) -> Result<()> {
        self.state_mut().configure(config)
    }

    /// The configuration in force.
    fn config(&self) -> &PortConfig {
        &self.state().config
    }

    /// Starts the port, filling RX rings from `pool`.
    fn start(&mut self, pool: &Mempool) -> Result<()>;

    /// Stops the port and frees every buffer its rings held. Fails if queue handles are still alive.
    fn stop(&mut self) -> Result<()>;

    /// True between `start` and `stop`.
    fn is_started(&self) -> bool {
        self.state().started
    }

    /// Hands out RX queue `queue` (once per start).
    fn rx_queue(&mut self, queue: u16) -> Result<Box<dyn RxQueue>>;

    /// Hands out TX queue `queue` (once per start).
    fn tx_queue(&mut self, queue: u16) -> Result<Box<dyn TxQueue>>;

    /// Records the port number the application gave this device; drivers stamp it into received packets.
    fn set_port_id(&mut self, port_id: u16) {
        self.state_mut().port_id = port_id;
    }

    /// Link state now. On a port configured with [`IntrConf::lsc`] this also acknowledges a link-state event:
    /// [`EthDev::link_event_fd`] is drained and the link interrupt armed again, so call it after each wake-up.
    fn link(&self) -> LinkStatus;

    /// A descriptor that becomes readable (`POLLIN`) when the link changes, on a started port configured with
    /// [`IntrConf::lsc`] whose device has a link-state interrupt (DPDK's `RTE_ETH_EVENT_INTR_LSC`, delivered as a
    /// descriptor to wait on instead of a callback). It stays readable until [`EthDev::link`] reads the new state.
    /// The descriptor stays owned by the port and lives until it stops. Ports without one say
    /// [`Error::NotSupported`].
    fn link_event_fd(&self) -> Result<std::os::fd::RawFd> {
        Err(self.state().unsupported("link-state-change interrupts"))
    }

    /// The RX and TX burst paths this port runs (or would run once started); drivers with more than one path
    /// override this with the one they chose.
    fn burst_mode(&self) -> BurstMode {
        BurstMode::SCALAR
    }

    /// The burst code RX queue `queue` runs (DPDK's `rte_eth_rx_burst_mode_get`). The default: the port-level
    /// [`EthDev::burst_mode`] name, not flagged per queue, for a queue of the configuration in force
    /// ([`Error::InvalidQueue`] otherwise, DPDK's `-EINVAL`). A driver whose queues can run different paths
    /// overrides it with each queue's own and `per_queue` set.
    fn rx_burst_mode(&self, queue: u16) -> Result<QueueBurstMode> {
        self.state().check_queue(true, queue)?;
        Ok(QueueBurstMode { name: self.burst_mode().rx, per_queue: false })
    }

    /// The burst code TX queue `queue` runs (DPDK's `rte_eth_tx_burst_mode_get`), as [`EthDev::rx_burst_mode`].
    fn tx_burst_mode(&self, queue: u16) -> Result<QueueBurstMode> {
        self.state().check_queue(false, queue)?;
        Ok(QueueBurstMode { name: self.burst_mode().tx, per_queue: false })
    }

    /// What RX queue `queue` is set up with (DPDK's `rte_eth_rx_queue_info_get`). The default reads the
    /// configuration in force and the pool recorded at start ([`PortState::rx_queue_info`]); a bad queue is
    /// [`Error::InvalidQueue`]. A driver that programs thresholds of its own overrides it; one that cannot tell
    /// says [`Error::NotSupported`], and a queue not set up yet is [`Error::NotConfigured`].
    fn rx_queue_info(&self, queue: u16) -> Result<RxQueueInfo> {
        self.state().rx_queue_info(queue)
    }

    /// What TX queue `queue` is set up with (DPDK's `rte_eth_tx_queue_info_get`), as [`EthDev::rx_queue_info`].
    fn tx_queue_info(&self, queue: u16) -> Result<TxQueueInfo> {
        self.state().tx_queue_info(queue)
    }

    /// Sets the administrative link state where the device has one.
    fn set_link_up(&mut self, up: bool) -> Result<()> {
        let _ = up;
        Ok(())
    }

    /// The port's MAC address.
    fn mac_addr(&self) -> MacAddr {
        self.state().mac
    }

    /// Changes the port's MAC address.
    fn set_mac_addr(&mut self, mac: MacAddr) -> Result<()> {
        self.state_mut().mac = mac;
        Ok(())
    }

    /// Adds `mac` to the receive filter beside the default address, for VMDq pool `pool` (DPDK's
    /// `rte_eth_dev_mac_addr_add`; only pool 0 exists here). Adding an address already there does nothing; a full
    /// table is [`Error::TableFull`]. Ports without secondary addresses say [`Error::NotSupported`].
    fn mac_addr_add(&mut self, mac: MacAddr, pool: u32) -> Result<()> {
        let _ = (mac, pool);
        Err(self.state().unsupported("adding MAC addresses"))
    }

    /// Removes a secondary address added by [`EthDev::mac_addr_add`]; an address not there is no error, the
    /// default one is [`Error::DefaultMacAddr`] (as `rte_eth_dev_mac_addr_remove`).
    fn mac_addr_remove(&mut self, mac: MacAddr) -> Result<()> {
        let _ = mac;
        Err(self.state().unsupported("removing MAC addresses"))
    }

    /// Every unicast address the port receives for: the default one first, then the added ones.
    fn mac_addrs(&self) -> Vec<MacAddr> {
        let mut v = vec![self.mac_addr()];
        v.extend(self.state().extra_macs.iter().copied().filter(|m| *m != MacAddr::ZERO));
        v
    }

    /// Promiscuous mode on or off.
    fn set_promiscuous(&mut self, on: bool) -> Result<()> {
        self.state_mut().promiscuous = on;
        Ok(())
    }

    /// Promiscuous mode state.
    fn promiscuous(&self) -> bool {
        self.state().promiscuous
    }

    /// All-multicast mode on or off.
    fn set_allmulticast(&mut self, on: bool) -> Result<()> {
        self.state_mut().allmulticast = on;
        Ok(())
    }

    /// All-multicast mode state.
    fn allmulticast(&self) -> bool {
        self.state().allmulticast
    }

    /// Current MTU.
    fn mtu(&self) -> u16 {
        self.config().mtu
    }

    /// Changes the MTU.
    fn set_mtu(&mut self, mtu: u16) -> Result<()> {
        self.state_mut().set_mtu(mtu)
    }

    /// Counters since the last reset.
    fn stats(&self) -> PortStats {
        self.state().stats()
    }

    /// Zeroes the counters (and the extended ones).
    fn reset_stats(&mut self) {
        self.state_mut().reset_stats()
    }

    /// Extended counters by name: the generic ones from [`PortStats::generic_xstats`] plus the driver's own.
    fn xstats(&self) -> Vec<XStat> {
        self.stats().generic_xstats()
    }

    /// Maps RX (`rx`) or TX queue `queue` to per-queue counter set `set` (0..16), as DPDK's
    /// `rte_eth_dev_set_rx_queue_stats_mapping`/`tx`: on devices with fewer counter sets than queues, set N's
    /// counters are what [`EthDev::xstats`] reports as `rx_qN_*`/`tx_qN_*`. Ports that count every queue on its
    /// own have nothing to map ([`Error::NotSupported`]).
    fn queue_stats_mapping(&mut self, rx: bool, queue: u16, set: u8) -> Result<()> {
        let _ = (rx, queue, set);
        Err(self.state().unsupported("queue statistics mapping"))
    }

    /// Stops RX queue `queue` of a started port (DPDK's `rte_eth_dev_rx_queue_stop`): its handle must have been
    /// dropped; the device takes no more frames into it and its buffers come back. The rest of the port runs on.
    fn rx_queue_stop(&mut self, queue: u16) -> Result<()> {
        let _ = queue;
        Err(self.state().unsupported("per-queue start/stop"))
    }

    /// Starts RX queue `queue` again after [`EthDev::rx_queue_stop`] (DPDK's `rte_eth_dev_rx_queue_start`); it can
    /// then be claimed again.
    fn rx_queue_start(&mut self, queue: u16) -> Result<()> {
        let _ = queue;
        Err(self.state().unsupported("per-queue start/stop"))
    }

    /// Stops TX queue `queue` of a started port (DPDK's `rte_eth_dev_tx_queue_stop`): its handle must have been
    /// dropped; what it had queued is sent first.
    fn tx_queue_stop(&mut self, queue: u16) -> Result<()> {
        let _ = queue;
        Err(self.state().unsupported("per-queue start/stop"))
    }

    /// Starts TX queue `queue` again after [`EthDev::tx_queue_stop`] (DPDK's `rte_eth_dev_tx_queue_start`).
    fn tx_queue_start(&mut self, queue: u16) -> Result<()> {
        let _ = queue;
        Err(self.state().unsupported("per-queue start/stop"))
    }

    /// Changes RSS settings.
    fn rss_hash_update(&mut self, rss: &RssConfig) -> Result<()> {
        let _ = rss;
        Err(self.state().unsupported("RSS"))
    }

    /// Sets the redirection table (entry i: queue for hash values whose low bits are i).
    fn reta_update(&mut self, reta: &[u16]) -> Result<()> {
        let _ = reta;
        Err(self.state().unsupported("RSS redirection table"))
    }

    /// Adds (`on`) or removes VLAN ID `vlan_id` (0..=4095) from the receive VLAN filter, as DPDK's
    /// `rte_eth_dev_vlan_filter`: once a port filters by VLAN it accepts tagged frames only for the IDs added,
    /// while untagged frames still pass.
    fn vlan_filter(&mut self, vlan_id: u16, on: bool) -> Result<()> {
        let _ = (vlan_id, on);
        Err(self.state().unsupported("VLAN filter"))
    }

    /// True while the port filters received tagged frames by VLAN ID (DPDK's VLAN filter offload).
    fn vlan_filter_enabled(&self) -> bool {
        self.state().vlan_filter
    }

    /// Turns the VLAN filter offload on or off (DPDK's `rte_eth_dev_set_vlan_offload` with its FILTER bit): off,
    /// tagged frames pass whatever IDs were added; the IDs are kept for when it is turned on again.
    fn set_vlan_filter_enabled(&mut self, on: bool) -> Result<()> {
        let _ = on;
        Err(self.state().unsupported("VLAN filter"))
    }
}

/// A port's queues as their own types: what [`EthDev::rx_queue`] and [`EthDev::tx_queue`] hand out boxed, without the
/// box, so that an application that knows its driver polls with static dispatch (one call per burst the compiler
/// can inline). Every port implements it; its `EthDev` queue methods box these.
pub trait TypedQueues: EthDev {
    /// The port's RX queue.
    type Rx: RxQueue + 'static;
    /// The port's TX queue.
    type Tx: TxQueue + 'static;

    /// Hands out RX queue `queue` (once per start), as [`EthDev::rx_queue`] does.
    fn rx_queue_typed(&mut self, queue: u16) -> Result<Self::Rx>;

    /// Hands out TX queue `queue` (once per start), as [`EthDev::tx_queue`] does.
    fn tx_queue_typed(&mut self, queue: u16) -> Result<Self::Tx>;
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Q(Option<std::os::fd::RawFd>);

    impl RxQueue for Q {
        fn rx_burst(&mut self, _batch: &mut PacketBatch) -> usize {
            0
        }
        fn wait_fd(&self) -> Option<std::os::fd::RawFd> {
            self.0
        }
    }

    /// A port that answers only what every port must: the burst-mode getters are the defaults.
    struct Port(PortState, BurstMode);

    impl EthDev for Port {
        fn state(&self) -> &PortState {
            &self.0
        }
        fn state_mut(&mut self) -> &mut PortState {
            &mut self.0
        }
        fn start(&mut self, _pool: &Mempool) -> Result<()> {
            self.0.start()
        }
        fn stop(&mut self) -> Result<()> {
            self.0.stop()
        }
        fn rx_queue(&mut self, _queue: u16) -> Result<Box<dyn RxQueue>> {
            Err(self.0.unsupported("queues"))
        }
        fn tx_queue(&mut self, _queue: u16) -> Result<Box<dyn TxQueue>> {
            Err(self.0.unsupported("queues"))
        }
        fn link(&self) -> LinkStatus {
            self.0.virtual_link()
        }
        fn burst_mode(&self) -> BurstMode {
            self.1
        }
    }

    #[test]
    fn per_queue_burst_modes_default_to_the_port_level_names_for_configured_queues() {
        let info = DevInfo::software("net_test", "test0", 4);
        let mut dev = Port(
            PortState::new(info, MacAddr::local_from(1), PortConfig::default()),
            BurstMode { rx: "Vector AVX2", tx: "Scalar simple" },
        );
        dev.configure(&PortConfig { rx_queues: 2, tx_queues: 3, ..Default::default() }).unwrap();
        assert_eq!(dev.rx_burst_mode(1).unwrap(), QueueBurstMode { name: "Vector AVX2", per_queue: false });
        assert_eq!(dev.tx_burst_mode(2).unwrap(), QueueBurstMode { name: "Scalar simple", per_queue: false });
        let e = dev.rx_burst_mode(2).unwrap_err();
        assert!(matches!(e, Error::InvalidQueue { kind: "rx", queue: 2, count: 2, .. }), "{e}");
        let e = dev.tx_burst_mode(3).unwrap_err();
        assert!(matches!(e, Error::InvalidQueue { kind: "tx", queue: 3, count: 3, .. }), "{e}");
        assert_eq!(dev.burst_mode().rx, "Vector AVX2", "the port-level getter still answers");
        assert_eq!(dev.rx_queue_info(1).unwrap().nb_desc, 1024);
        assert!(matches!(dev.tx_queue_info(3), Err(Error::InvalidQueue { .. })));
    }

    #[test]
    fn a_queue_with_a_readiness_descriptor_needs_no_arming_one_without_cannot_sleep() {
        let mut soft: Box<dyn RxQueue> = Box::new(Q(Some(0)));
        soft.intr_enable().unwrap();
        soft.intr_disable().unwrap();
        let mut polled: Box<dyn RxQueue> = Box::new(Q(None));
        let err = polled.intr_enable().unwrap_err();
        assert!(matches!(err, Error::NotSupported { .. }), "{err}");
        assert!(err.to_string().contains("intr_conf.rxq"), "{err}");
        assert!(matches!(polled.intr_disable(), Err(Error::NotSupported { .. })));
    }
}
