//! The socket API of a [`Stack`]: handles, TCP listen/accept/connect/read/write/close on smoltcp sockets, our
//! UDP sockets, and the events each poll reports (the walk that finds them is in events.rs).
//!
//! smoltcp has no accept: a listening socket becomes the connection. A listener therefore keeps
//! `tcp_backlog` smoltcp sockets listening on its port; each poll, those that left the listen state move to the
//! listener's half-open list and are replaced, and those that reached Established are handed out by
//! [`Stack::accept`].

use std::collections::VecDeque;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use mempool::Mbuf;
use pkthdr::{IpProtocol, Ipv4Packet, UdpPacket, UdpRepr};
use smoltcp::iface::SocketHandle;
use smoltcp::socket::tcp;
use smoltcp::wire::{IpAddress, IpEndpoint, IpListenEndpoint};

use crate::{Error, Result, Stack};

mod foreign;
pub use foreign::{Readiness, SocketError};

/// A socket of one stack (a TCP listener, a TCP connection or a UDP socket). Stale handles (of a closed
/// socket) are refused, not confused with a newer socket in the same slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl Handle {
    /// The slot number: small and dense (slots are reused), so an application can index its own per-socket
    /// state by it; compare the whole handle to tell a reused slot from the socket it held before.
    pub fn index(&self) -> usize {
        self.index as usize
    }
}

impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.index)
    }
}

/// What a socket can do now, as one [`Stack::poll`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A listener has connections to [`Stack::accept`].
    Accepted,
    /// A [`Stack::connect`] completed: the connection is established.
    Connected,
    /// Data to read (TCP), or datagrams to receive (UDP). Reported every poll while true.
    Readable,
    /// Room to write, newly (reported when the send buffer goes from full, or not yet open, to having room).
    Writable,
    /// The peer closed its side: reads return `Ok(0)` once the data is read. Reported once.
    PeerClosed,
    /// The connection is gone (reset, timed out, or closed both ways): close the handle. Reported once.
    Closed,
}

/// One entry of the event list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Which socket.
    pub handle: Handle,
    /// What it can do.
    pub kind: EventKind,
}

/// A received UDP datagram, still in the buffer it arrived in.
#[derive(Debug)]
pub struct Datagram {
    /// Sender.
    pub from: SocketAddrV4,
    mbuf: Mbuf,
}

impl Datagram {
    /// The payload.
    pub fn payload(&self) -> &[u8] {
        self.mbuf.data()
    }
}

/// One row of [`Stack::sockets`], for tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketInfo {
    /// Handle.
    pub handle: Handle,
    /// `tcp-listen`, `tcp` or `udp`.
    pub kind: &'static str,
    /// TCP state (`LISTEN`, `ESTABLISHED`, ...) or `-` for UDP.
    pub state: String,
    /// Local address.
    pub local: SocketAddrV4,
    /// Remote address (connected TCP only).
    pub remote: Option<SocketAddrV4>,
    /// Bytes (TCP) or datagrams (UDP) waiting to be read.
    pub recv_queue: usize,
    /// Bytes waiting to be sent and acknowledged (TCP).
    pub send_queue: usize,
}

pub(crate) struct Slot {
    pub(crate) generation: u32,
    pub(crate) kind: SlotKind,
}

pub(crate) enum SlotKind {
    Free,
    Listener(Listener),
    Tcp(Conn),
    Udp(UdpSocket),
}

impl SlotKind {
    /// Whether the application may still use it: a connection it closed lingers here until its FIN exchange
    /// ends, but its handle is already gone.
    fn is_live(&self) -> bool {
        match self {
            SlotKind::Free => false,
            SlotKind::Tcp(c) => c.app_closed.is_none(),
            _ => true,
        }
    }
}

pub(crate) struct Listener {
    pub(crate) port: u16,
    /// Sockets in smoltcp's LISTEN state, one per SYN a poll can take.
    pub(crate) listening: Vec<SocketHandle>,
    /// Sockets a SYN woke, and when: dropped if the handshake does not complete in `tcp_handshake_timeout`.
    pub(crate) half_open: Vec<(SocketHandle, Instant)>,
    pub(crate) ready: VecDeque<Handle>,
    /// SYNs admitted since the last scan (each takes one of `listening`).
    pub(crate) admitted: usize,
}

pub(crate) struct Conn {
    pub(crate) socket: SocketHandle,
    pub(crate) connecting: bool,
    pub(crate) established: bool,
    pub(crate) writable: bool,
    pub(crate) peer_closed: bool,
    pub(crate) closed_reported: bool,
    pub(crate) app_closed: Option<Instant>,
    pub(crate) local_port: u16,
    pub(crate) owns_port: bool,
    /// The application paused its Readable events ([`Stack::pause_reading`]).
    pub(crate) read_paused: bool,
    /// The send queue's length and since when it has not changed (for the user timeout); `None` while empty.
    pub(crate) stalled: Option<(usize, Instant)>,
    /// The state the last scan saw, to tell a timeout from an orderly end when smoltcp closes the socket.
    pub(crate) last_state: tcp::State,
    /// We reset it in this scan: its Closed event waits for the next one, after smoltcp sent the reset.
    pub(crate) reset_pending: bool,
}

impl Conn {
    pub(crate) fn new(
        socket: SocketHandle,
        connecting: bool,
        writable: bool,
        local_port: u16,
        owns_port: bool,
    ) -> Conn {
        Conn {
            socket,
            connecting,
            established: !connecting,
            writable,
            peer_closed: false,
            closed_reported: false,
            app_closed: None,
            local_port,
            owns_port,
            read_paused: false,
            stalled: None,
            last_state: if connecting { tcp::State::SynSent } else { tcp::State::Established },
            reset_pending: false,
        }
    }
}

pub(crate) struct UdpSocket {
    port: u16,
    pub(crate) queue: VecDeque<Datagram>,
}

fn state_name(s: tcp::State) -> &'static str {
    use tcp::State::*;
    match s {
        Closed => "CLOSED",
        Listen => "LISTEN",
        SynSent => "SYN-SENT",
        SynReceived => "SYN-RECEIVED",
        Established => "ESTABLISHED",
        FinWait1 => "FIN-WAIT-1",
        FinWait2 => "FIN-WAIT-2",
        CloseWait => "CLOSE-WAIT",
        Closing => "CLOSING",
        LastAck => "LAST-ACK",
        TimeWait => "TIME-WAIT",
    }
}

pub(crate) fn v4(addr: IpAddress) -> Ipv4Addr {
    match addr {
        IpAddress::Ipv4(a) => Ipv4Addr::from(a.octets()),
    }
}

fn v4_endpoint(e: IpEndpoint) -> SocketAddrV4 {
    SocketAddrV4::new(v4(e.addr), e.port)
}

impl Stack {
    pub(crate) fn new_slot(&mut self, kind: SlotKind) -> Handle {
        if let Some(index) = self.free_slots.pop() {
            let slot = &mut self.slots[index as usize];
            slot.kind = kind;
            Handle { index, generation: slot.generation }
        } else {
            self.slots.push(Slot { generation: 0, kind });
            Handle { index: self.slots.len() as u32 - 1, generation: 0 }
        }
    }

    pub(crate) fn free_slot(&mut self, index: u32) {
        let slot = &mut self.slots[index as usize];
        slot.kind = SlotKind::Free;
        slot.generation = slot.generation.wrapping_add(1);
        self.free_slots.push(index);
    }

    fn slot(&self, h: Handle) -> Result<&SlotKind> {
        match self.slots.get(h.index as usize) {
            Some(s) if s.generation == h.generation && s.kind.is_live() => Ok(&s.kind),
            _ => Err(Error::BadHandle(h.index)),
        }
    }

    fn slot_mut(&mut self, h: Handle) -> Result<&mut SlotKind> {
        match self.slots.get_mut(h.index as usize) {
            Some(s) if s.generation == h.generation && s.kind.is_live() => Ok(&mut s.kind),
            _ => Err(Error::BadHandle(h.index)),
        }
    }

    fn tcp_socket(&self) -> tcp::Socket<'static> {
        let rx = tcp::SocketBuffer::new(vec![0; self.config.tcp_rx_buffer]);
        let tx = tcp::SocketBuffer::new(vec![0; self.config.tcp_tx_buffer]);
        let mut s = tcp::Socket::new(rx, tx);
        s.set_nagle_enabled(false);
        let smol = |d: Duration| smoltcp::time::Duration::from_micros(d.as_micros() as u64);
        s.set_keep_alive(self.config.tcp_keepalive.map(smol));
        // smoltcp's timeout counts the peer's silence while it waits for it: with keep-alive probes that is the
        // dead-peer detection; without them it would close idle connections, so unacknowledged data alone is
        // timed by the scan then (`Conn::stalled`).
        if self.config.tcp_keepalive.is_some() {
            s.set_timeout(self.config.tcp_user_timeout.map(smol));
        }
        s
    }

    pub(crate) fn listening_socket(&mut self, port: u16) -> SocketHandle {
        let mut s = self.tcp_socket();
        s.listen(IpListenEndpoint { addr: None, port }).expect("port is not zero and the socket is new");
        self.sockets.add(s)
    }

    fn conn(&self, h: Handle) -> Result<&Conn> {
        match self.slot(h)? {
            SlotKind::Tcp(c) => Ok(c),
            _ => Err(Error::BadHandle(h.index)),
        }
    }

    fn conn_mut(&mut self, h: Handle) -> Result<&mut Conn> {
        match self.slot_mut(h)? {
            SlotKind::Tcp(c) => Ok(c),
            _ => Err(Error::BadHandle(h.index)),
        }
    }

    // ---- TCP ----

    /// Listens for TCP connections on `port` (any of our addresses); connections come as
    /// [`EventKind::Accepted`] on the returned handle and are taken with [`Self::accept`].
    pub fn listen(&mut self, port: u16) -> Result<Handle> {
        self.smol_dirty = true;
        if port == 0 {
            return Err(Error::PortZero);
        }
        if self.tcp_ports.contains(&port) {
            return Err(Error::PortInUse(port));
        }
        self.tcp_ports.insert(port);
        let listening = (0..self.config.tcp_backlog.max(1)).map(|_| self.listening_socket(port)).collect();
        let h = self.new_slot(SlotKind::Listener(Listener {
            port,
            listening,
            half_open: Vec::new(),
            ready: VecDeque::new(),
            admitted: 0,
        }));
        self.listeners.insert(port, h.index);
        Ok(h)
    }

    /// The next established connection of `listener`, or [`Error::WouldBlock`].
    pub fn accept(&mut self, listener: Handle) -> Result<Handle> {
        match self.slot_mut(listener)? {
            SlotKind::Listener(l) => l.ready.pop_front().ok_or(Error::WouldBlock),
            _ => Err(Error::BadHandle(listener.index)),
        }
    }

    /// Opens a TCP connection to `remote` from an ephemeral port; [`EventKind::Connected`] (or
    /// [`EventKind::Closed`] if refused) follows.
    pub fn connect(&mut self, remote: SocketAddrV4) -> Result<Handle> {
        self.smol_dirty = true;
        let (lo, hi) = self.config.ephemeral_ports;
        let span = (hi - lo) as u32 + 1;
        let mut port = None;
        for _ in 0..span {
            let p = self.next_ephemeral;
            self.next_ephemeral = if p >= hi { lo } else { p + 1 };
            if !self.tcp_ports.contains(&p) {
                port = Some(p);
                break;
            }
        }
        let port = port.ok_or(Error::NoEphemeralPort(remote))?;
        let mut s = self.tcp_socket();
        let r = remote.ip().octets();
        let remote_ep = IpEndpoint::new(IpAddress::v4(r[0], r[1], r[2], r[3]), remote.port());
        s.connect(self.iface.context(), remote_ep, port).map_err(|e| Error::Tcp(format!("connect: {e}")))?;
        self.tcp_ports.insert(port);
        let socket = self.sockets.add(s);
        self.tcp_conns += 1;
        Ok(self.new_slot(SlotKind::Tcp(Conn::new(socket, true, false, port, true))))
    }

    /// Reads up to `buf.len()` bytes: `Ok(0)` at end of stream (the peer closed and everything was read),
    /// [`Error::WouldBlock`] when nothing is there yet.
    pub fn read(&mut self, h: Handle, buf: &mut [u8]) -> Result<usize> {
        self.smol_dirty = true;
        let socket = self.conn(h)?.socket;
        let s = self.sockets.get_mut::<tcp::Socket>(socket);
        match s.recv_slice(buf) {
            Ok(0) if s.may_recv() || buf.is_empty() => Err(Error::WouldBlock),
            Ok(n) => Ok(n),
            Err(tcp::RecvError::Finished) => Ok(0),
            Err(tcp::RecvError::InvalidState) => Ok(0),
        }
    }

    /// Reads in place: `f` gets the contiguous bytes at the head of the receive buffer and returns how many it
    /// consumed. `Ok(0)` at end of stream, [`Error::WouldBlock`] when nothing is there.
    pub fn read_with(&mut self, h: Handle, f: impl FnOnce(&[u8]) -> usize) -> Result<usize> {
        self.smol_dirty = true;
        let socket = self.conn(h)?.socket;
        let s = self.sockets.get_mut::<tcp::Socket>(socket);
        if !s.can_recv() {
            return if s.may_recv() { Err(Error::WouldBlock) } else { Ok(0) };
        }
        s.recv(|data| {
            let n = f(data).min(data.len());
            (n, n)
        })
        .map_err(|e| Error::Tcp(format!("recv: {e}")))
    }

    /// Queues up to `data.len()` bytes to send (sent by the next poll); [`Error::WouldBlock`] when the send
    /// buffer is full, [`Error::NotConnected`] once the connection cannot send any more.
    pub fn write(&mut self, h: Handle, data: &[u8]) -> Result<usize> {
        self.smol_dirty = true;
        let socket = self.conn(h)?.socket;
        let s = self.sockets.get_mut::<tcp::Socket>(socket);
        if !s.may_send() {
            return if s.state() == tcp::State::SynSent || s.state() == tcp::State::SynReceived {
                Err(Error::WouldBlock)
            } else {
                Err(Error::NotConnected)
            };
        }
        match s.send_slice(data) {
            Ok(0) if !data.is_empty() => {
                if let Ok(SlotKind::Tcp(c)) = self.slot_mut(h) {
                    c.writable = false;
                }
                Err(Error::WouldBlock)
            }
            Ok(n) => Ok(n),
            Err(_) => Err(Error::NotConnected),
        }
    }

    /// Writes in place: `f` gets the free contiguous room at the tail of the send buffer, fills some of it and
    /// returns how many bytes it wrote (a reply serialised straight into the socket, no intermediate buffer).
    /// [`Error::WouldBlock`] when there is no room; call again for room that wrapped around the buffer's end.
    pub fn write_with(&mut self, h: Handle, f: impl FnOnce(&mut [u8]) -> usize) -> Result<usize> {
        self.smol_dirty = true;
        let socket = self.conn(h)?.socket;
        let s = self.sockets.get_mut::<tcp::Socket>(socket);
        if !s.may_send() {
            return if matches!(s.state(), tcp::State::SynSent | tcp::State::SynReceived) {
                Err(Error::WouldBlock)
            } else {
                Err(Error::NotConnected)
            };
        }
        if !s.can_send() {
            return Err(Error::WouldBlock);
        }
        s.send(|room| {
            let n = f(room).min(room.len());
            (n, n)
        })
        .map_err(|_| Error::NotConnected)
    }

    /// Bytes that [`Self::write`] would take now.
    pub fn write_room(&self, h: Handle) -> Result<usize> {
        let s = self.sockets.get::<tcp::Socket>(self.conn(h)?.socket);
        Ok(if s.may_send() { s.send_capacity() - s.send_queue() } else { 0 })
    }

    /// Stops reporting [`EventKind::Readable`] for the connection `h`: its input stays in the receive buffer and
    /// TCP's window closes as the buffer fills (the peer is held back), and an idle loop can sleep although data
    /// waits. For an application whose output to this peer backed up; [`Self::resume_reading`] undoes it.
    pub fn pause_reading(&mut self, h: Handle) -> Result<()> {
        self.conn_mut(h)?.read_paused = true;
        Ok(())
    }

    /// Reports [`EventKind::Readable`] for `h` again (from the next poll, if data waits).
    pub fn resume_reading(&mut self, h: Handle) -> Result<()> {
        let c = self.conn_mut(h)?;
        if std::mem::take(&mut c.read_paused) {
            self.rescan = true;
        }
        Ok(())
    }

    /// Closes a socket: a TCP connection sends FIN after its queued data and its resources go once the FIN
    /// exchange ends (TIME-WAIT is not kept: a late retransmitted FIN gets a reset) or after `tcp_linger`; a
    /// listener stops listening (connections not yet accepted are reset); a UDP socket frees its port and queue.
    /// The handle is invalid afterwards.
    pub fn close(&mut self, h: Handle) -> Result<()> {
        self.smol_dirty = true;
        let now = self.now;
        if let SlotKind::Tcp(c) = self.slot_mut(h)? {
            c.app_closed = Some(now);
            let socket = c.socket;
            self.sockets.get_mut::<tcp::Socket>(socket).close();
            self.reap(h.index);
            return Ok(());
        }
        let kind = std::mem::replace(self.slot_mut(h)?, SlotKind::Free);
        match kind {
            SlotKind::Free => unreachable!("slot_mut() refuses free slots"),
            SlotKind::Listener(l) => {
                self.tcp_ports.remove(&l.port);
                self.listeners.remove(&l.port);
                self.half_open -= l.half_open.len() + l.admitted;
                for s in l.listening.into_iter().chain(l.half_open.into_iter().map(|(s, _)| s)) {
                    self.sockets.get_mut::<tcp::Socket>(s).abort();
                    self.forget_flow(s);
                    self.sockets.remove(s);
                }
                for c in l.ready {
                    let _ = self.abort(c);
                }
                self.free_slot(h.index);
            }
            SlotKind::Udp(u) => {
                self.udp_ports.remove(&u.port);
                self.free_slot(h.index);
            }
            SlotKind::Tcp(_) => unreachable!("handled above"),
        }
        Ok(())
    }

    /// Resets a TCP connection at once (RST) and frees it; the handle is invalid afterwards.
    pub fn abort(&mut self, h: Handle) -> Result<()> {
        self.smol_dirty = true;
        let socket = self.conn(h)?.socket;
        self.sockets.get_mut::<tcp::Socket>(socket).abort();
        self.abort_slot(h.index);
        Ok(())
    }

    fn abort_slot(&mut self, index: u32) {
        let now = self.now;
        if let SlotKind::Tcp(c) = &mut self.slots[index as usize].kind {
            c.app_closed = Some(now);
            c.last_state = tcp::State::Closed;
        }
        // Freed by the next poll's scan, after smoltcp sent the reset.
    }

    pub(crate) fn forget_flow(&mut self, socket: SocketHandle) {
        let s = self.sockets.get::<tcp::Socket>(socket);
        if let (Some(local), Some(remote)) = (s.local_endpoint(), s.remote_endpoint()) {
            self.forget_flow_key((v4(remote.addr), local.port, remote.port));
        }
    }

    // ---- UDP ----

    /// Binds a UDP socket to `port`; datagrams come as [`EventKind::Readable`] and [`Self::recv_from`].
    pub fn udp_bind(&mut self, port: u16) -> Result<Handle> {
        if port == 0 {
            return Err(Error::PortZero);
        }
        if self.udp_ports.contains_key(&port) {
            return Err(Error::PortInUse(port));
        }
        let h = self.new_slot(SlotKind::Udp(UdpSocket { port, queue: VecDeque::new() }));
        self.udp_ports.insert(port, h.index);
        Ok(h)
    }

    /// The oldest datagram received on `h`, or [`Error::WouldBlock`].
    pub fn recv_from(&mut self, h: Handle) -> Result<Datagram> {
        match self.slot_mut(h)? {
            SlotKind::Udp(u) => u.queue.pop_front().ok_or(Error::WouldBlock),
            _ => Err(Error::BadHandle(h.index)),
        }
    }

    /// Sends `data` from `h`'s port to `to` (held while `to`'s next hop resolves).
    pub fn send_to(&mut self, h: Handle, to: SocketAddrV4, data: &[u8]) -> Result<()> {
        let port = match self.slot(h)? {
            SlotKind::Udp(u) => u.port,
            _ => return Err(Error::BadHandle(h.index)),
        };
        let max = self.config.mtu - 28;
        if data.len() > max {
            return Err(Error::TooLong { len: data.len(), max });
        }
        let udp_len = UdpPacket::<&[u8]>::HEADER_LEN + data.len();
        let mut m = self.alloc_ip(*to.ip(), IpProtocol::UDP, udp_len).ok_or(Error::NoBuffers)?;
        let mut ip = Ipv4Packet::new_unchecked(m.data_mut());
        let pseudo = ip.pseudo_header(udp_len as u16);
        let mut udp = UdpPacket::new_unchecked(ip.payload_mut());
        UdpRepr { src_port: port, dst_port: to.port() }.emit(&mut udp, data.len());
        udp.payload_mut().copy_from_slice(data);
        udp.fill_checksum(pseudo);
        self.counters.udp_tx_datagrams += 1;
        self.output_ip(m);
        Ok(())
    }

    pub(crate) fn udp_deliver(&mut self, index: u32, from: SocketAddrV4, mbuf: Mbuf, cap: usize) -> bool {
        match &mut self.slots[index as usize].kind {
            SlotKind::Udp(u) if u.queue.len() < cap => {
                u.queue.push_back(Datagram { from, mbuf });
                true
            }
            _ => false,
        }
    }

    // ---- inspection ----

    /// Every socket, for tools (allocates; not for the fast path).
    pub fn sockets(&self) -> Vec<SocketInfo> {
        let ours = self.config.addr;
        let mut out = Vec::new();
        for (index, slot) in self.slots.iter().enumerate() {
            let handle = Handle { index: index as u32, generation: slot.generation };
            match &slot.kind {
                SlotKind::Free => {}
                SlotKind::Udp(u) => out.push(SocketInfo {
                    handle,
                    kind: "udp",
                    state: "-".into(),
                    local: SocketAddrV4::new(ours, u.port),
                    remote: None,
                    recv_queue: u.queue.len(),
                    send_queue: 0,
                }),
                SlotKind::Listener(l) => out.push(SocketInfo {
                    handle,
                    kind: "tcp-listen",
                    state: format!(
                        "LISTEN (backlog {}, half-open {}, ready {})",
                        l.listening.len(),
                        l.half_open.len(),
                        l.ready.len()
                    ),
                    local: SocketAddrV4::new(ours, l.port),
                    remote: None,
                    recv_queue: l.ready.len(),
                    send_queue: 0,
                }),
                SlotKind::Tcp(c) => {
                    let s = self.sockets.get::<tcp::Socket>(c.socket);
                    out.push(SocketInfo {
                        handle,
                        kind: "tcp",
                        state: state_name(s.state()).into(),
                        local: s.local_endpoint().map(v4_endpoint).unwrap_or(SocketAddrV4::new(ours, c.local_port)),
                        remote: s.remote_endpoint().map(v4_endpoint),
                        recv_queue: s.recv_queue(),
                        send_queue: s.send_queue(),
                    });
                }
            }
        }
        out
    }

    /// TCP connections held (established or closing, not yet released).
    pub fn active_connections(&self) -> usize {
        self.tcp_conns
    }

    /// Half-open TCP connections held over every listener (SYN received, handshake not complete).
    pub fn half_open_connections(&self) -> usize {
        self.half_open
    }

    /// smoltcp sockets in the socket set (listening ones included): what every poll iterates over.
    pub fn smoltcp_sockets(&self) -> usize {
        self.sockets.iter().count()
    }

    /// State of a TCP connection, e.g. `ESTABLISHED` (for tests and tools).
    pub fn tcp_state(&self, h: Handle) -> Result<&'static str> {
        Ok(state_name(self.sockets.get::<tcp::Socket>(self.conn(h)?.socket).state()))
    }
}
