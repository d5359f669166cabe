//! TCP admission: what a peer can make a stack hold before a connection is established, and for how long.
//!
//! Every TCP segment passes [`Stack::input_tcp`] on its way to smoltcp. A SYN for a listener is admitted while the
//! listener has fewer than `tcp_syn_backlog` half-open connections and a listening socket free in this poll,
//! and the stack holds fewer than `tcp_max_connections`; past the backlog it gets a SYN cookie
//! ([`crate::syncookie`]) instead (nothing is kept), or is dropped when cookies are off; past the connection limit
//! it is dropped. Half-open connections older than `tcp_handshake_timeout` are dropped by the listener's scan.
//!
//! While cookies went out in the last two cookie ticks, an ACK to a listening port that matches no connection is
//! checked; a valid one becomes a connection: smoltcp's listening socket is fed the SYN the cookie stands for,
//! its SYN-ACK is intercepted (the client holds the cookie SYN-ACK already) and the client's ACK is fed shifted
//! by the difference of the two initial sequence numbers, which the flow keeps for its lifetime
//! ([`crate::syncookie::Shift`]). So a SYN flood costs one SYN-ACK per SYN and no memory, and a client that
//! completes the handshake is served as usual (without window scaling, SACK or timestamps).
//!
//! The output side ([`Stack::output_tcp`]) counts smoltcp's segments and retransmissions per flow, shifts cookie
//! flows' sequence numbers and intercepts those SYN-ACKs.

use std::net::Ipv4Addr;

use mempool::Mbuf;
use pkthdr::{IpProtocol, Ipv4Packet, TcpFlags, TcpPacket};

use crate::sockets::SlotKind;
use crate::syncookie::{Shift, TICK};
use crate::Stack;

/// (remote address, local port, remote port).
pub(crate) type FlowKey = (Ipv4Addr, u16, u16);

/// What the stack tracks per TCP flow that sent anything.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flow {
    /// Highest sequence number sent (smoltcp's numbering), to count retransmissions.
    pub(crate) snd_max: u32,
    /// The peer reset it.
    pub(crate) reset: bool,
    /// Rebuilt from a SYN cookie: the shift of our sequence numbers.
    pub(crate) shift: Option<Shift>,
}

/// A valid cookie ACK waiting to become a connection.
pub(crate) struct CookieAck {
    /// The ACK, and the flow's segments that came after it in the same poll.
    segments: Vec<Mbuf>,
    listener: u32,
    key: FlowKey,
    client_isn: u32,
    cookie: u32,
    mss: u16,
    window: u16,
}

/// What to do with a SYN for a listener.
enum Admit {
    Pass,
    Cookie,
    Drop,
}

/// The MSS option of a SYN's TCP header, 536 (RFC 9293's default) without one.
fn mss_option(tcp: &[u8], header_len: usize) -> u16 {
    let mut opts = &tcp[20.min(header_len)..header_len.min(tcp.len())];
    while let [kind, rest @ ..] = opts {
        match kind {
            0 => break,
            1 => opts = rest,
            _ => {
                let Some(&len) = rest.first() else { break };
                let len = len as usize;
                if len < 2 || len > opts.len() {
                    break;
                }
                if *kind == 2 && len == 4 {
                    return u16::from_be_bytes([opts[2], opts[3]]);
                }
                opts = &opts[len..];
            }
        }
    }
    536
}

impl Stack {
    /// Connections held now and being made: what `tcp_max_connections` bounds.
    fn tcp_load(&self) -> usize {
        self.tcp_conns + self.half_open + self.cookie_acks.len()
    }

    fn cookie_tick(&self) -> u64 {
        self.now.duration_since(self.epoch).as_secs() / TICK.as_secs()
    }

    /// One received TCP segment (`m` holds the IPv4 packet, its header `ip_len` bytes): admission of SYNs and
    /// cookie ACKs, the inbound shift of cookie flows, then smoltcp.
    pub(crate) fn input_tcp(&mut self, mut m: Mbuf, ip_len: usize) {
        self.counters.tcp_rx_segments += 1;
        let (src, sport, dport, flags, seq, ack, window, header_len) = {
            let ip = Ipv4Packet::new_unchecked(m.data());
            let Ok(tcp) = TcpPacket::new_checked(ip.payload()) else {
                // Malformed: smoltcp drops it.
                self.dev.rx.push_back(m);
                return;
            };
            let t = (ip.src_addr(), tcp.src_port(), tcp.dst_port(), tcp.flags(), tcp.seq_number(), tcp.ack_number());
            (t.0, t.1, t.2, t.3, t.4, t.5, tcp.window_len(), tcp.header_len())
        };
        let key = (src, dport, sport);
        let (syn, ack_flag, rst) =
            (flags.contains(TcpFlags::SYN), flags.contains(TcpFlags::ACK), flags.contains(TcpFlags::RST));
        // The data path (established flows) looks nothing up here: only SYNs, resets, and bare ACKs while cookies
        // are out do.
        if rst {
            self.counters.tcp_resets_received += 1;
            if let Some(f) = self.flows.get_mut(&key) {
                f.reset = true;
            }
        } else if syn && !ack_flag {
            if let Some(li) = self.new_flow_listener(&key) {
                if !self.tcp_checksum_ok(&m) {
                    self.dev.rx.push_back(m);
                    return;
                }
                match self.admit_syn(li) {
                    Admit::Pass => {}
                    Admit::Drop => return,
                    Admit::Cookie => {
                        let mss = mss_option(&m.data()[ip_len..], header_len);
                        self.send_cookie(src, sport, dport, seq, mss);
                        return;
                    }
                }
            }
        } else if ack_flag && !syn && self.cookies_until.is_some_and(|t| self.now < t) {
            if let Some(li) = self.new_flow_listener(&key).filter(|_| !self.awaiting_syn_ack.contains_key(&key)) {
                match self.cookie_ack(m, li, key, seq, ack, window) {
                    Some(back) => m = back,
                    None => return,
                }
            }
        }
        if self.shifted_flows > 0 {
            if let Some(shift) = self.flows.get(&key).and_then(|f| f.shift) {
                shift.inbound(&mut m.data_mut()[ip_len..]);
            }
        }
        self.dev.rx.push_back(m);
    }

    /// The listener's slot for a segment to a listening port that belongs to no flow yet.
    fn new_flow_listener(&self, key: &FlowKey) -> Option<u32> {
        let li = *self.listeners.get(&key.1)?;
        (!self.flows.contains_key(key)).then_some(li)
    }

    /// An ACK to listener `li` of no known flow: kept (for [`Self::complete_cookies`]) when it carries a valid
    /// cookie, dropped when it does but the connection limit is reached; otherwise handed back for smoltcp,
    /// which answers it with a reset. A segment of a flow whose cookie ACK came earlier in this poll waits
    /// behind that ACK.
    fn cookie_ack(&mut self, m: Mbuf, li: u32, key: FlowKey, seq: u32, ack: u32, window: u16) -> Option<Mbuf> {
        if let Some(a) = self.cookie_acks.iter_mut().find(|a| a.key == key) {
            a.segments.push(m);
            return None;
        }
        if !self.tcp_checksum_ok(&m) {
            return Some(m);
        }
        let (client_isn, cookie) = (seq.wrapping_sub(1), ack.wrapping_sub(1));
        let Some(d) = self.cookies.check(self.cookie_tick(), key.0, key.2, key.1, client_isn, cookie) else {
            self.counters.tcp_syn_cookies_rejected += 1;
            return Some(m);
        };
        if self.tcp_load() >= self.config.tcp_max_connections {
            self.counters.drops.tcp_connection_limit += 1;
            return None;
        }
        self.cookie_acks.push(CookieAck {
            segments: vec![m],
            listener: li,
            key,
            client_isn,
            cookie,
            mss: d.mss,
            window,
        });
        None
    }

    fn tcp_checksum_ok(&self, m: &Mbuf) -> bool {
        let ip = Ipv4Packet::new_unchecked(m.data());
        let payload = ip.payload();
        TcpPacket::new_unchecked(payload).verify_checksum(ip.pseudo_header(payload.len() as u16))
    }

    fn admit_syn(&mut self, li: u32) -> Admit {
        if self.tcp_load() >= self.config.tcp_max_connections {
            self.counters.drops.tcp_connection_limit += 1;
            return Admit::Drop;
        }
        let (backlog, cookies) = (self.config.tcp_syn_backlog, self.config.tcp_syn_cookies);
        let SlotKind::Listener(l) = &mut self.slots[li as usize].kind else { return Admit::Pass };
        if l.half_open.len() + l.admitted < backlog && l.admitted < l.listening.len() {
            l.admitted += 1;
            self.half_open += 1;
            return Admit::Pass;
        }
        if cookies {
            Admit::Cookie
        } else {
            self.counters.drops.tcp_syn_backlog_full += 1;
            Admit::Drop
        }
    }

    /// Answers a SYN with a SYN-ACK whose sequence number is its cookie; keeps nothing.
    fn send_cookie(&mut self, client: Ipv4Addr, client_port: u16, our_port: u16, client_isn: u32, client_mss: u16) {
        let tick = self.cookie_tick();
        let cookie = self.cookies.make(tick, client, client_port, our_port, client_isn, client_mss);
        let our_mss = (self.config.mtu - 40).min(u16::MAX as usize) as u16;
        let window = self.config.tcp_rx_buffer.min(u16::MAX as usize) as u16;
        let Some(mut m) = self.alloc_ip(client, IpProtocol::TCP, 24) else { return };
        let mut ip = Ipv4Packet::new_unchecked(m.data_mut());
        let pseudo = ip.pseudo_header(24);
        ip.payload_mut().fill(0);
        let mut tcp = TcpPacket::new_unchecked(ip.payload_mut());
        tcp.set_src_port(our_port);
        tcp.set_dst_port(client_port);
        tcp.set_seq_number(cookie);
        tcp.set_ack_number(client_isn.wrapping_add(1));
        tcp.set_header_len(24);
        tcp.set_flags(TcpFlags::SYN.union(TcpFlags::ACK));
        tcp.set_window_len(window);
        let opts = &mut tcp.into_inner()[20..24];
        opts.copy_from_slice(&[2, 4, (our_mss >> 8) as u8, our_mss as u8]);
        let mut ip = Ipv4Packet::new_unchecked(m.data_mut());
        TcpPacket::new_unchecked(ip.payload_mut()).fill_checksum(pseudo);
        self.counters.tcp_syn_cookies_sent += 1;
        // ACKs to listeners are checked for cookies while one sent now can still come back.
        self.cookies_until = Some(self.now + TICK * 2);
        self.output_ip(m);
    }

    /// Turns this poll's valid cookie ACKs into connections (see the module docs).
    pub(crate) fn complete_cookies(&mut self) {
        let acks = std::mem::take(&mut self.cookie_acks);
        for a in &acks {
            let SlotKind::Listener(l) = &self.slots[a.listener as usize].kind else { continue };
            let port = l.port;
            // A listening socket of its own for the rebuilding SYN (the scan moves it along as usual).
            let socket = self.listening_socket(port);
            let SlotKind::Listener(l) = &mut self.slots[a.listener as usize].kind else { unreachable!() };
            l.listening.push(socket);
            let Some(syn) = self.rebuilt_syn(a) else { continue };
            self.awaiting_syn_ack.insert(a.key, a.cookie);
            self.dev.rx.push_back(syn);
        }
        self.run_smoltcp();
        for a in acks {
            self.awaiting_syn_ack.remove(&a.key);
            let Some(shift) = self.flows.get(&a.key).and_then(|f| f.shift) else {
                // smoltcp did not answer the SYN (no buffer for it): the client's retransmission comes back.
                continue;
            };
            self.counters.tcp_syn_cookies_accepted += 1;
            for mut m in a.segments {
                let ip_len = Ipv4Packet::new_unchecked(m.data()).header_len();
                shift.inbound(&mut m.data_mut()[ip_len..]);
                self.dev.rx.push_back(m);
            }
        }
    }

    /// The SYN a cookie stands for: the client's addresses, ports and initial sequence number, its MSS, and the
    /// window of its ACK (unscaled: the cookie SYN-ACK offered no scaling).
    fn rebuilt_syn(&mut self, a: &CookieAck) -> Option<Mbuf> {
        let (client, our_port, client_port) = a.key;
        let Some(mut m) = self.pool.alloc() else {
            self.counters.drops.no_mbuf += 1;
            return None;
        };
        let buf = m.append(44)?;
        let mut ip = Ipv4Packet::new_unchecked(&mut buf[..]);
        pkthdr::Ipv4Repr {
            src_addr: client,
            dst_addr: self.config.addr,
            protocol: IpProtocol::TCP,
            payload_len: 24,
            ttl: 64,
        }
        .emit(&mut ip);
        ip.fill_checksum();
        let pseudo = ip.pseudo_header(24);
        ip.payload_mut().fill(0);
        let mut tcp = TcpPacket::new_unchecked(ip.payload_mut());
        tcp.set_src_port(client_port);
        tcp.set_dst_port(our_port);
        tcp.set_seq_number(a.client_isn);
        tcp.set_ack_number(0);
        tcp.set_header_len(24);
        tcp.set_flags(TcpFlags::SYN);
        tcp.set_window_len(a.window);
        let buf = tcp.into_inner();
        buf[20..24].copy_from_slice(&[2, 4, (a.mss >> 8) as u8, a.mss as u8]);
        TcpPacket::new_unchecked(&mut buf[..]).fill_checksum(pseudo);
        Some(m)
    }

    /// One segment smoltcp sent (`m` holds the IPv4 packet): counted (retransmissions: data ending at or below
    /// what the flow sent before, keep-alive probes apart), shifted for a cookie flow; false when it is to be dropped (the SYN-ACK of a
    /// cookie connection being rebuilt).
    pub(crate) fn output_tcp(&mut self, m: &mut Mbuf) -> bool {
        self.counters.tcp_tx_segments += 1;
        let ip_len = Ipv4Packet::new_unchecked(m.data()).header_len();
        let (key, flags, seq, seg_len, probe_like) = {
            let ip = Ipv4Packet::new_unchecked(m.data());
            let Ok(tcp) = TcpPacket::new_checked(ip.payload()) else { return true };
            let flags = tcp.flags();
            let seg_len = tcp.payload().len() as u32
                + flags.contains(TcpFlags::SYN) as u32
                + flags.contains(TcpFlags::FIN) as u32;
            // smoltcp's keep-alive probe: one zero byte just below what was sent.
            let probe_like = tcp.payload() == [0] && !flags.contains(TcpFlags::SYN) && !flags.contains(TcpFlags::FIN);
            ((ip.dst_addr(), tcp.src_port(), tcp.dst_port()), flags, tcp.seq_number(), seg_len, probe_like)
        };
        if flags.contains(TcpFlags::SYN) && !self.awaiting_syn_ack.is_empty() {
            if let Some(cookie) = self.awaiting_syn_ack.remove(&key) {
                let shift = Shift(cookie.wrapping_sub(seq));
                let flow = Flow { snd_max: seq.wrapping_add(1), reset: false, shift: Some(shift) };
                if self.flows.insert(key, flow).map_or(true, |f| f.shift.is_none()) {
                    self.shifted_flows += 1;
                }
                self.counters.tcp_tx_segments -= 1;
                return false;
            }
        }
        // Segments that occupy no sequence space (ACKs, resets) only look their flow up: a reset answering a
        // stray segment has no socket, and must leave no entry behind.
        let flow = if seg_len == 0 {
            match self.flows.get(&key) {
                Some(f) => *f,
                None => return true,
            }
        } else {
            let end = seq.wrapping_add(seg_len);
            match self.flows.entry(key) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    *v.insert(Flow { snd_max: end, reset: false, shift: None })
                }
                std::collections::hash_map::Entry::Occupied(o) => {
                    let f = o.into_mut();
                    if probe_like && end == f.snd_max {
                        self.counters.tcp_keepalive_probes += 1;
                    } else if (end.wrapping_sub(f.snd_max) as i32) <= 0 {
                        self.counters.tcp_retransmissions += 1;
                    } else {
                        f.snd_max = end;
                    }
                    *f
                }
            }
        };
        if let Some(shift) = flow.shift {
            shift.outbound(&mut m.data_mut()[ip_len..]);
        }
        true
    }

    /// Forgets what was tracked for the flow of a socket being removed.
    pub(crate) fn forget_flow_key(&mut self, key: FlowKey) {
        if let Some(f) = self.flows.remove(&key) {
            if f.shift.is_some() {
                self.shifted_flows -= 1;
            }
        }
        self.awaiting_syn_ack.remove(&key);
    }
}
