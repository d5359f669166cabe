//! One stack instance: the poll loop, our Ethernet/ARP/IPv4/ICMP/UDP input and output, and the hand-off of TCP
//! segments to and from smoltcp. The socket API (TCP, UDP, events) is in `sockets.rs`.

use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use mempool::{Mbuf, Mempool, PacketBatch};
use pkthdr::{
    ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetFrame, EthernetRepr, IcmpPacket, IcmpType, IpProtocol,
    Ipv4Packet, Sum, UdpPacket,
};
use pktio::capture::QueueTap;
use pktio::{MacAddr, RxQueue, TxQueue};
use smoltcp::iface::{Config as IfaceConfig, Interface, SocketSet};
use smoltcp::wire::{HardwareAddress, IpCidr, Ipv4Address};

use crate::admission::{CookieAck, Flow, FlowKey};
use crate::arp::{ArpCache, ArpConfig, ArpEntry, Queued};
use crate::device::IpDevice;
use crate::sockets::Slot;
use crate::syncookie::Cookies;
use crate::{Counters, Event, BURST};

const ETH_LEN: usize = EthernetFrame::<&[u8]>::HEADER_LEN;
/// Shortest Ethernet frame without its FCS; ARP packets are padded to it.
const ETH_MIN_FRAME: usize = 60;
/// How often the ARP cache is aged.
const ARP_TICK: Duration = Duration::from_millis(100);
/// Receive bursts a poll takes at most, while they come full.
const RX_BURSTS: usize = 8;
/// Extra egress rounds per poll: smoltcp sends at most one segment per socket per egress pass, so a bulk
/// sender needs several passes to fill a burst.
const EGRESS_ROUNDS: usize = 8;

/// What one stack instance is: its addresses and sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackConfig {
    /// Our MAC address (usually the port's).
    pub mac: MacAddr,
    /// Our IPv4 address.
    pub addr: Ipv4Addr,
    /// Prefix length of the on-link subnet.
    pub prefix_len: u8,
    /// Next hop for addresses off the subnet; none means they are unreachable.
    pub gateway: Option<Ipv4Addr>,
    /// IP MTU.
    pub mtu: usize,
    /// ARP timing and sizes.
    pub arp: ArpConfig,
    /// Receive buffer of each TCP connection, bytes.
    pub tcp_rx_buffer: usize,
    /// Send buffer of each TCP connection, bytes.
    pub tcp_tx_buffer: usize,
    /// Listening sockets kept ready per listener: how many SYNs one poll hands to smoltcp (more get SYN cookies).
    pub tcp_backlog: usize,
    /// Half-open connections (SYN received, handshake not complete) held per listener; SYNs past it are answered
    /// with a SYN cookie, or dropped when `tcp_syn_cookies` is off (the kernel's `tcp_max_syn_backlog`).
    pub tcp_syn_backlog: usize,
    /// Answer SYNs past the SYN backlog with SYN cookies (stateless) instead of dropping them.
    pub tcp_syn_cookies: bool,
    /// How long a half-open connection waits for the client's ACK before it is dropped (silently).
    pub tcp_handshake_timeout: Duration,
    /// Connections a stack holds at most, half-open ones included; SYNs (and cookie ACKs) past it are dropped and
    /// counted (`drop_tcp_connection_limit`), as a full accept queue drops them.
    pub tcp_max_connections: usize,
    /// Keep-alive: a connection silent this long sends a probe, and again each time as long again passes;
    /// `None`: no probes.
    pub tcp_keepalive: Option<Duration>,
    /// User timeout (RFC 5482): a connection is aborted when data it sent stays unacknowledged (or unsent behind a
    /// closed window) this long, or, with keep-alive on, when its peer answers nothing this long. It also bounds
    /// retransmissions: smoltcp's timeout doubles from its RTO up to 10 s, so a dead peer gets at most about
    /// `timeout / 10 s + 7` tries. `None`: retransmit for as long as the peer stays silent.
    pub tcp_user_timeout: Option<Duration>,
    /// How long a connection the application closed may take to finish its FIN exchange before it is aborted.
    pub tcp_linger: Duration,
    /// Datagrams held per UDP socket.
    pub udp_queue: usize,
    /// Local ports `connect` picks from (inclusive).
    pub ephemeral_ports: (u16, u16),
}

impl StackConfig {
    /// Defaults for the address `addr/prefix_len` at `mac`.
    pub fn new(mac: MacAddr, addr: Ipv4Addr, prefix_len: u8) -> Self {
        StackConfig {
            mac,
            addr,
            prefix_len,
            gateway: None,
            mtu: 1500,
            arp: ArpConfig::default(),
            tcp_rx_buffer: 64 * 1024,
            tcp_tx_buffer: 64 * 1024,
            tcp_backlog: 64,
            tcp_syn_backlog: 256,
            tcp_syn_cookies: true,
            tcp_handshake_timeout: Duration::from_secs(10),
            tcp_max_connections: 10_000,
            tcp_keepalive: Some(Duration::from_secs(60)),
            tcp_user_timeout: Some(Duration::from_secs(120)),
            tcp_linger: Duration::from_secs(30),
            udp_queue: 256,
            ephemeral_ports: (49152, 65535),
        }
    }

    fn netmask(&self) -> u32 {
        if self.prefix_len == 0 {
            0
        } else {
            u32::MAX << (32 - self.prefix_len.min(32) as u32)
        }
    }

    /// Whether `ip` is on our subnet.
    pub fn on_link(&self, ip: Ipv4Addr) -> bool {
        (u32::from(ip) ^ u32::from(self.addr)) & self.netmask() == 0
    }

    fn subnet_broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) | !self.netmask())
    }
}

/// A TCP/IP stack on one (RX queue, TX queue) pair. Owned and polled by one thread; nothing in it is shared or
/// locked. See the crate docs for the API.
pub struct Stack {
    pub(crate) config: StackConfig,
    rx: Box<dyn RxQueue>,
    tx: Box<dyn TxQueue>,
    pub(crate) pool: Mempool,
    /// Boxed so a poll can take it out (a pointer move) while it hands each packet to `&mut self`.
    rx_batch: Option<Box<PacketBatch>>,
    tx_batch: PacketBatch,
    /// Live-capture taps of the queues ([`QueueTap::detached`] unless [`Stack::enable_capture`]).
    rx_tap: QueueTap,
    tx_tap: QueueTap,
    pub(crate) iface: Interface,
    pub(crate) sockets: SocketSet<'static>,
    pub(crate) dev: IpDevice,
    arp: ArpCache,
    pub(crate) epoch: Instant,
    pub(crate) now: Instant,
    next_arp_tick: Instant,
    announced: bool,
    ip_ident: u16,
    pub(crate) slots: Vec<Slot>,
    pub(crate) free_slots: Vec<u32>,
    pub(crate) udp_ports: HashMap<u16, u32>,
    pub(crate) tcp_ports: HashSet<u16>,
    pub(crate) next_ephemeral: u16,
    /// What we track per TCP connection that sent anything, by (remote address, local port, remote port).
    pub(crate) flows: HashMap<FlowKey, Flow>,
    /// Flows of [`Self::flows`] rebuilt from a SYN cookie (their numbers are shifted on the way in and out).
    pub(crate) shifted_flows: usize,
    /// Listening ports and their listener's slot.
    pub(crate) listeners: HashMap<u16, u32>,
    /// Half-open connections over every listener, and TCP connection slots held: what the connection limit counts.
    pub(crate) half_open: usize,
    pub(crate) tcp_conns: usize,
    pub(crate) cookies: Cookies,
    /// Until when ACKs to a listener that match no connection are checked for a cookie (cookies went out lately).
    pub(crate) cookies_until: Option<Instant>,
    /// Valid cookie ACKs of this poll, waiting to be turned into connections.
    pub(crate) cookie_acks: Vec<CookieAck>,
    /// Cookie connections whose rebuilding SYN smoltcp has taken: the SYN-ACK it answers with is intercepted
    /// (the client has its cookie SYN-ACK already) to learn smoltcp's initial sequence number.
    pub(crate) awaiting_syn_ack: HashMap<FlowKey, u32>,
    pub(crate) counters: Counters,
    /// The application changed a TCP socket (wrote, read, closed, ...) since smoltcp last ran.
    pub(crate) smol_dirty: bool,
    /// When smoltcp's earliest timer (retransmission, delayed ACK, keep-alive) is due; `None`: no timer.
    smol_deadline: Option<Instant>,
    /// The last scan reported level-triggered events (data not yet read, connections not yet accepted).
    pub(crate) rescan: bool,
}

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack").field("config", &self.config).field("counters", &self.counters).finish()
    }
}

impl Stack {
    /// A stack on the queues `rx`/`tx` of a started port, sending from `pool`. It announces its address with a
    /// gratuitous ARP on its first poll.
    pub fn new(config: StackConfig, rx: Box<dyn RxQueue>, tx: Box<dyn TxQueue>, pool: Mempool) -> Stack {
        let now = Instant::now();
        let mut dev = IpDevice::new(pool.clone(), config.mtu, BURST);
        let mut iface_config = IfaceConfig::new(HardwareAddress::Ip);
        // smoltcp draws initial sequence numbers and ephemeral choices from this seed: wall-clock nanoseconds,
        // so a restarted server does not repeat them.
        let wall =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let seed = u64::from(u32::from(config.addr)) ^ wall ^ (u64::from(std::process::id()) << 32);
        iface_config.random_seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut iface = Interface::new(iface_config, &mut dev, smoltcp::time::Instant::ZERO);
        let a = config.addr.octets();
        iface.update_ip_addrs(|addrs| {
            addrs.push(IpCidr::new(Ipv4Address::new(a[0], a[1], a[2], a[3]).into(), config.prefix_len)).ok();
        });
        if let Some(gw) = config.gateway {
            let g = gw.octets();
            let _ = iface.routes_mut().add_default_ipv4_route(Ipv4Address::new(g[0], g[1], g[2], g[3]));
        }
        let ephemeral = config.ephemeral_ports.0;
        Stack {
            arp: ArpCache::new(config.arp),
            config,
            rx,
            tx,
            pool,
            rx_batch: Some(Box::new(PacketBatch::with_capacity(BURST))),
            tx_batch: PacketBatch::with_capacity(BURST),
            rx_tap: QueueTap::detached(),
            tx_tap: QueueTap::detached(),
            iface,
            sockets: SocketSet::new(Vec::new()),
            dev,
            epoch: now,
            now,
            next_arp_tick: now,
            announced: false,
            ip_ident: 0,
            slots: Vec::new(),
            free_slots: Vec::new(),
            udp_ports: HashMap::new(),
            tcp_ports: HashSet::new(),
            next_ephemeral: ephemeral,
            flows: HashMap::new(),
            shifted_flows: 0,
            listeners: HashMap::new(),
            half_open: 0,
            tcp_conns: 0,
            cookies: Cookies::new(),
            cookies_until: None,
            cookie_acks: Vec::new(),
            awaiting_syn_ack: HashMap::new(),
            counters: Counters::default(),
            smol_dirty: false,
            smol_deadline: None,
            rescan: false,
        }
    }

    /// Lets a live capture (`pktio::capture`, `pktio-dumpcap`) see what this stack's queues receive and send, as
    /// port `port`'s RX and TX. While no capture runs this costs one predictable branch per burst.
    pub fn enable_capture(&mut self, port: u16) {
        self.rx_tap = QueueTap::rx(port);
        self.tx_tap = QueueTap::tx(port);
    }

    /// The configuration.
    pub fn config(&self) -> &StackConfig {
        &self.config
    }

    /// The time read at the start of the current poll (the stack's clock: one read per poll).
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The counters so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The ARP cache's resolved entries.
    pub fn arp_entries(&self) -> Vec<ArpEntry> {
        self.arp.entries()
    }

    /// Next hops being resolved, and the packets waiting for them.
    pub fn arp_unresolved(&self) -> (Vec<Ipv4Addr>, usize) {
        (self.arp.unresolved(), self.arp.pending_packets())
    }

    /// The pool the stack sends from.
    pub fn pool(&self) -> &Mempool {
        &self.pool
    }

    /// One round of work: reads the clock once, receives a burst (32) and handles it (and up to 7 more bursts
    /// while they come full), runs smoltcp's timers and output, ages the ARP cache, sends what is ready in
    /// bursts, and fills `events` (cleared first) with what the sockets can do now. Never blocks. Returns the
    /// frames received (0: the port was idle).
    pub fn poll(&mut self, events: &mut Vec<Event>) -> usize {
        events.clear();
        self.now = Instant::now();
        if !self.announced {
            self.announced = true;
            self.send_arp_request(self.config.addr);
        }
        let mut batch = self.rx_batch.take().expect("only poll takes the batch, and puts it back");
        let udp_before = self.counters.udp_rx_datagrams;
        let mut n = 0;
        // Full bursts are followed by more, up to RX_BURSTS: smoltcp then runs once for all of them, since each
        // run walks every socket; a flood drains the queue at that rate instead of one burst per walk.
        for _ in 0..RX_BURSTS {
            self.rx.rx_burst(&mut batch);
            self.rx_tap.observe(batch.as_slice());
            let got = batch.len();
            n += got;
            batch.drain_front(got, |m| self.input(m));
            if got < BURST {
                break;
            }
        }
        self.rx_batch = Some(batch);
        let mut tick = false;
        if self.now >= self.next_arp_tick {
            self.next_arp_tick = self.now + ARP_TICK;
            self.arp_tick();
            tick = true;
        }
        // smoltcp walks every socket each time it runs, so an idle poll skips it: it runs for received
        // segments, for the application's socket calls, and when its earliest timer is due.
        if !self.cookie_acks.is_empty() {
            self.complete_cookies();
        }
        let due = self.smol_deadline.is_some_and(|d| self.now >= d);
        let ran = !self.dev.rx.is_empty() || self.smol_dirty || due;
        if ran {
            self.run_smoltcp();
        }
        if ran || tick || self.rescan || self.counters.udp_rx_datagrams != udp_before {
            self.scan(events);
        }
        self.flush();
        n
    }

    /// Runs smoltcp's ingress, timers and egress now and sends what it produced: for an application that wrote
    /// after [`Self::poll`] and wants the data out before the next poll.
    pub fn flush_writes(&mut self) {
        self.now = Instant::now();
        self.run_smoltcp();
        self.flush();
    }

    /// When the stack next needs a poll although nothing arrives (smoltcp's earliest timer); for a loop that
    /// sleeps when idle.
    pub fn next_timer(&self) -> Option<Instant> {
        self.smol_deadline
    }

    /// The descriptor `poll(2)` reports readable while the RX queue holds a packet (see
    /// [`pktio::RxQueue::wait_fd`]); `None` for ports that must be polled.
    pub fn wait_fd(&self) -> Option<std::os::fd::RawFd> {
        self.rx.wait_fd()
    }

    /// Arms the RX queue's interrupt before sleeping on [`Stack::wait_fd`] ([`pktio::RxQueue::intr_enable`]; a
    /// software port's descriptor needs nothing).
    pub fn rx_intr_enable(&mut self) -> pktio::Result<()> {
        self.rx.intr_enable()
    }

    /// Disarms it after waking: the stack polls while busy.
    pub fn rx_intr_disable(&mut self) -> pktio::Result<()> {
        self.rx.intr_disable()
    }

    /// Until when the stack may sleep if nothing arrives: the earlier of smoltcp's next timer and the next ARP
    /// aging tick. `None`: it has work now (unread data or connections still reported, socket calls smoltcp has
    /// not run yet, frames waiting to be sent), so poll again at once.
    pub fn idle_until(&self) -> Option<Instant> {
        if self.rescan || self.smol_dirty || !self.dev.rx.is_empty() || !self.tx_batch.is_empty() {
            return None;
        }
        Some(self.smol_deadline.map_or(self.next_arp_tick, |d| d.min(self.next_arp_tick)))
    }

    fn smol_now(&self) -> smoltcp::time::Instant {
        smoltcp::time::Instant::from_micros(self.now.duration_since(self.epoch).as_micros() as i64)
    }

    pub(crate) fn run_smoltcp(&mut self) {
        let now = self.smol_now();
        self.iface.poll(now, &mut self.dev, &mut self.sockets);
        for _ in 0..EGRESS_ROUNDS {
            let before = self.dev.tx.len();
            if before >= BURST {
                break;
            }
            self.iface.poll_egress(now, &mut self.dev, &mut self.sockets);
            if self.dev.tx.len() == before {
                break;
            }
        }
        self.smol_dirty = false;
        self.smol_deadline =
            self.iface.poll_at(now, &self.sockets).map(|t| self.epoch + Duration::from_micros(t.total_micros() as u64));
        self.counters.drops.no_mbuf += std::mem::take(&mut self.dev.no_mbuf);
        let mut out = std::mem::take(&mut self.dev.tx);
        for mut m in out.drain(..) {
            if self.output_tcp(&mut m) {
                self.output_ip(m);
            }
        }
        self.dev.tx = out;
    }

    // ---- input ----

    /// Handles one received frame; every path either keeps the mbuf (queued, or sent back) or drops it counted.
    pub(crate) fn input(&mut self, m: Mbuf) {
        self.counters.rx_packets += 1;
        self.counters.rx_bytes += m.pkt_len() as u64;
        if m.nb_segs() != 1 {
            // Jumbo chains are not parsed: the headers are assumed to lie in one segment.
            self.counters.drops.bad_ethernet += 1;
            return;
        }
        let (dst, ethertype) = match EthernetFrame::new_checked(m.data()) {
            Ok(f) => (f.dst_addr(), f.ethertype()),
            Err(_) => {
                self.counters.drops.bad_ethernet += 1;
                return;
            }
        };
        if dst != self.config.mac && dst != MacAddr::BROADCAST {
            self.counters.drops.not_our_mac += 1;
            return;
        }
        match ethertype {
            EtherType::ARP => self.input_arp(m),
            EtherType::IPV4 if dst == self.config.mac => self.input_ipv4(m),
            EtherType::IPV4 => self.counters.drops.not_for_us += 1,
            t if t.is_vlan() => self.counters.drops.bad_ethernet += 1,
            _ => self.counters.drops.unknown_ethertype += 1,
        }
    }

    fn input_arp(&mut self, mut m: Mbuf) {
        let repr = match ArpPacket::new_checked(&m.data()[ETH_LEN..]).and_then(|p| ArpRepr::parse(&p)) {
            Ok(r) => r,
            Err(_) => {
                self.counters.drops.bad_arp += 1;
                return;
            }
        };
        let sender = repr.source_protocol_addr;
        let for_us = repr.target_protocol_addr == self.config.addr;
        let usable_sender =
            !sender.is_unspecified() && sender != self.config.addr && !repr.source_hardware_addr.is_multicast();
        if usable_sender && (for_us || self.arp.knows(sender)) {
            for waiting in self.arp.insert(sender, repr.source_hardware_addr, self.now) {
                self.output_ip(waiting);
            }
        }
        if !for_us || !usable_sender {
            // A gratuitous announcement (sender = target) did its work above; other ARP for other hosts is dropped.
            if !for_us && sender != repr.target_protocol_addr {
                self.counters.drops.bad_arp += 1;
            }
            return;
        }
        if repr.operation == ArpOperation::REQUEST {
            // Answer in the request's own buffer.
            let reply = repr.reply(self.config.mac);
            let d = m.data_mut();
            EthernetRepr { src_addr: self.config.mac, dst_addr: repr.source_hardware_addr, ethertype: EtherType::ARP }
                .emit(&mut EthernetFrame::new_unchecked(&mut d[..]));
            reply.emit(&mut ArpPacket::new_unchecked(&mut d[ETH_LEN..]));
            self.counters.arp_replies_sent += 1;
            self.send(m);
        }
    }

    fn input_ipv4(&mut self, mut m: Mbuf) {
        let (proto, total_len, header_len, src) = {
            let p = match Ipv4Packet::new_checked(&m.data()[ETH_LEN..]) {
                Ok(p) => p,
                Err(_) => {
                    self.counters.drops.bad_ipv4 += 1;
                    return;
                }
            };
            let drops = &mut self.counters.drops;
            if !p.verify_checksum() {
                drops.ipv4_checksum += 1;
                return;
            }
            if p.dst_addr() != self.config.addr {
                drops.not_for_us += 1;
                return;
            }
            if p.is_fragment() {
                drops.fragments += 1;
                return;
            }
            if p.ttl() == 0 {
                drops.ttl_expired += 1;
                return;
            }
            (p.protocol(), p.total_len() as usize, p.header_len(), p.src_addr())
        };
        // An on-link sender we have no entry for is learned from its frame: with several lcores, ARP replies
        // reach only one lcore's stack (RSS sends non-IP traffic to queue 0), but every stack sees the IP
        // traffic of its own flows and can answer it.
        if self.config.on_link(src) && self.arp.lookup(src, self.now).is_none() {
            let mac = EthernetFrame::new_unchecked(m.data()).src_addr();
            if !mac.is_multicast() && !src.is_unspecified() {
                for waiting in self.arp.insert(src, mac, self.now) {
                    self.output_ip(waiting);
                }
            }
        }
        // Ethernet padding after the IP packet goes.
        let extra = m.data_len() as usize - ETH_LEN - total_len;
        if extra > 0 {
            m.trim(extra as u16);
        }
        match proto {
            IpProtocol::ICMP => self.input_icmp(m, header_len),
            IpProtocol::UDP => self.input_udp(m, header_len),
            IpProtocol::TCP => {
                m.adj(ETH_LEN as u16);
                self.input_tcp(m, header_len);
            }
            _ => self.counters.drops.unknown_protocol += 1,
        }
    }

    fn input_icmp(&mut self, mut m: Mbuf, header_len: usize) {
        let at = ETH_LEN + header_len;
        let ok = IcmpPacket::new_checked(&m.data()[at..]).is_ok_and(|icmp| {
            icmp.msg_type() == IcmpType::V4_ECHO_REQUEST && icmp.code() == 0 && icmp.verify_checksum(Sum::ZERO)
        });
        if !ok {
            self.counters.drops.bad_icmp += 1;
            return;
        }
        // The reply is the request turned around in its own buffer; the ICMP checksum is updated, not summed.
        let d = m.data_mut();
        EthernetFrame::new_unchecked(&mut d[..]).swap_addrs();
        let mut ip = Ipv4Packet::new_unchecked(&mut d[ETH_LEN..]);
        ip.swap_addrs();
        ip.set_ttl(64);
        ip.fill_checksum();
        IcmpPacket::new_unchecked(&mut d[at..]).rewrite_msg_type(IcmpType::V4_ECHO_REPLY);
        self.counters.icmp_echo_replies += 1;
        self.send(m);
    }

    fn input_udp(&mut self, mut m: Mbuf, header_len: usize) {
        let at = ETH_LEN + header_len;
        let (src, dst_port, payload_len) = {
            let d = m.data();
            let ip = Ipv4Packet::new_unchecked(&d[ETH_LEN..]);
            let udp = match UdpPacket::new_checked(&d[at..]) {
                Ok(u) => u,
                Err(_) => {
                    self.counters.drops.bad_udp += 1;
                    return;
                }
            };
            if udp.checksum() != 0 && !udp.verify_checksum(ip.pseudo_header(udp.len())) {
                self.counters.drops.bad_udp += 1;
                return;
            }
            (std::net::SocketAddrV4::new(ip.src_addr(), udp.src_port()), udp.dst_port(), udp.len() as usize - 8)
        };
        let Some(&index) = self.udp_ports.get(&dst_port) else {
            self.counters.drops.udp_no_socket += 1;
            return;
        };
        let queue_cap = self.config.udp_queue;
        m.adj((at + UdpPacket::<&[u8]>::HEADER_LEN) as u16);
        let extra = m.data_len() as usize - payload_len;
        if extra > 0 {
            m.trim(extra as u16);
        }
        if self.udp_deliver(index, src, m, queue_cap) {
            self.counters.udp_rx_datagrams += 1;
        } else {
            self.counters.drops.udp_queue_full += 1;
        }
    }

    // ---- output ----

    /// Next hop of `dst`: itself on the subnet, else the gateway.
    fn next_hop(&self, dst: Ipv4Addr) -> Option<Ipv4Addr> {
        if self.config.on_link(dst) {
            Some(dst)
        } else {
            self.config.gateway
        }
    }

    /// Wraps the IPv4 packet that fills `m` in Ethernet and sends it, or holds it while its next hop resolves.
    pub(crate) fn output_ip(&mut self, mut m: Mbuf) {
        let dst = Ipv4Packet::new_unchecked(m.data()).dst_addr();
        let mac = if dst == Ipv4Addr::BROADCAST || dst == self.config.subnet_broadcast() {
            MacAddr::BROADCAST
        } else {
            let Some(hop) = self.next_hop(dst) else {
                self.counters.drops.no_route += 1;
                return;
            };
            match self.arp.lookup(hop, self.now) {
                Some(mac) => mac,
                None => {
                    match self.arp.queue(hop, m, self.now) {
                        Queued::SendRequest => self.send_arp_request(hop),
                        Queued::Held => {}
                        Queued::Dropped => self.counters.drops.arp_unresolved += 1,
                    }
                    return;
                }
            }
        };
        if m.prepend(ETH_LEN as u16).is_none() {
            self.counters.drops.no_mbuf += 1;
            return;
        }
        EthernetRepr { src_addr: self.config.mac, dst_addr: mac, ethertype: EtherType::IPV4 }
            .emit(&mut EthernetFrame::new_unchecked(m.data_mut()));
        self.send(m);
    }

    /// A fresh mbuf holding an IPv4 header for `payload_len` bytes of `protocol` to `dst`; the payload is
    /// written by the caller after the 20 header bytes.
    pub(crate) fn alloc_ip(&mut self, dst: Ipv4Addr, protocol: IpProtocol, payload_len: usize) -> Option<Mbuf> {
        let Some(mut m) = self.pool.alloc() else {
            self.counters.drops.no_mbuf += 1;
            return None;
        };
        let len = Ipv4Packet::<&[u8]>::MIN_HEADER_LEN + payload_len;
        let buf = m.append(len as u16)?;
        self.ip_ident = self.ip_ident.wrapping_add(1);
        let mut ip = Ipv4Packet::new_unchecked(buf);
        pkthdr::Ipv4Repr { src_addr: self.config.addr, dst_addr: dst, protocol, payload_len, ttl: 64 }.emit(&mut ip);
        ip.set_ident(self.ip_ident);
        ip.set_frag(true, false, 0);
        ip.fill_checksum();
        Some(m)
    }

    fn send_arp_request(&mut self, target: Ipv4Addr) {
        let Some(mut m) = self.pool.alloc() else {
            self.counters.drops.no_mbuf += 1;
            return;
        };
        let Some(d) = m.append(ETH_MIN_FRAME as u16) else { return };
        d.fill(0);
        EthernetRepr { src_addr: self.config.mac, dst_addr: MacAddr::BROADCAST, ethertype: EtherType::ARP }
            .emit(&mut EthernetFrame::new_unchecked(&mut d[..]));
        ArpRepr {
            operation: ArpOperation::REQUEST,
            source_hardware_addr: self.config.mac,
            source_protocol_addr: self.config.addr,
            target_hardware_addr: MacAddr::ZERO,
            target_protocol_addr: target,
        }
        .emit(&mut ArpPacket::new_unchecked(&mut d[ETH_LEN..]));
        self.counters.arp_requests_sent += 1;
        self.send(m);
    }

    fn arp_tick(&mut self) {
        let (retry, failed) = self.arp.expire(self.now);
        self.counters.drops.arp_unresolved += failed.len() as u64;
        drop(failed);
        for hop in retry {
            self.send_arp_request(hop);
        }
    }

    /// Queues a frame for the next burst (sending the burst when it is full).
    pub(crate) fn send(&mut self, m: Mbuf) {
        if let Err(m) = self.tx_batch.push(m) {
            self.flush();
            let _ = self.tx_batch.push(m);
        }
        if self.tx_batch.is_full() {
            self.flush();
        }
    }

    /// Sends the queued burst; what the queue does not take is dropped and counted.
    fn flush(&mut self) {
        if self.tx_batch.is_empty() {
            return;
        }
        let bytes: u64 = self.tx_batch.iter().map(|m| m.pkt_len() as u64).sum();
        self.tx_tap.observe(self.tx_batch.as_slice());
        let sent = self.tx.tx_burst(&mut self.tx_batch);
        let unsent: u64 = self.tx_batch.iter().map(|m| m.pkt_len() as u64).sum();
        self.counters.tx_packets += sent as u64;
        self.counters.tx_bytes += bytes - unsent;
        self.counters.drops.tx_full += self.tx_batch.len() as u64;
        self.tx_batch.clear();
    }
}
