//! Socket calls for an event loop that is not netstack's own: a library that serves POSIX sockets from a stack
//! (netstack-preload) asks what a socket can do now ([`Stack::readiness`]) instead of waiting for the events of
//! the next poll, and needs the few calls POSIX has beside read and write: half-close, peek, the addresses, the
//! bytes waiting, Nagle's algorithm.

use std::net::SocketAddrV4;

use smoltcp::socket::tcp;

use super::{v4_endpoint, SlotKind};
use crate::{Error, Handle, Result, Stack};

/// Why a connection ended without an orderly close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketError {
    /// A connection being opened was refused (or never answered).
    Refused,
    /// An established connection was reset, or timed out.
    Reset,
}

/// What a socket can do now, in the terms `poll(2)` uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Readiness {
    /// A read would not block: data, the end of the stream, or an error (a listener: a connection to accept;
    /// UDP: a datagram).
    pub readable: bool,
    /// A write would not block: room in the send buffer, or an error (writes after a shutdown fail at once).
    pub writable: bool,
    /// The peer closed its sending side (its FIN arrived), or the connection is gone.
    pub peer_closed: bool,
    /// Both directions are closed: the connection is over.
    pub hung_up: bool,
    /// The connection ended abnormally.
    pub error: Option<SocketError>,
}

impl Stack {
    /// What `h` can do now. A connection still opening reports nothing until it is established or refused.
    pub fn readiness(&self, h: Handle) -> Result<Readiness> {
        let c = match self.slot(h)? {
            SlotKind::Listener(l) => return Ok(Readiness { readable: !l.ready.is_empty(), ..Readiness::default() }),
            SlotKind::Udp(u) => {
                return Ok(Readiness { readable: !u.queue.is_empty(), writable: true, ..Readiness::default() })
            }
            SlotKind::Tcp(c) => c,
            SlotKind::Free => return Err(Error::BadHandle(h.index)),
        };
        let s = self.sockets.get::<tcp::Socket>(c.socket);
        let state = s.state();
        if state == tcp::State::Closed {
            let error = if c.peer_closed {
                None
            } else if c.connecting || !c.established {
                Some(SocketError::Refused)
            } else {
                Some(SocketError::Reset)
            };
            return Ok(Readiness { readable: true, writable: true, peer_closed: true, hung_up: true, error });
        }
        if matches!(state, tcp::State::SynSent | tcp::State::SynReceived) {
            return Ok(Readiness::default());
        }
        let fin_in = !s.may_recv();
        Ok(Readiness {
            readable: s.can_recv() || fin_in,
            writable: s.can_send() || !s.may_send(),
            peer_closed: fin_in,
            hung_up: fin_in && !s.may_send(),
            error: None,
        })
    }

    /// Bytes waiting to be read on a TCP connection, datagrams on a UDP socket, connections to accept on a
    /// listener.
    pub fn recv_queue(&self, h: Handle) -> Result<usize> {
        match self.slot(h)? {
            SlotKind::Listener(l) => Ok(l.ready.len()),
            SlotKind::Udp(u) => Ok(u.queue.len()),
            SlotKind::Tcp(c) => Ok(self.sockets.get::<tcp::Socket>(c.socket).recv_queue()),
            SlotKind::Free => Err(Error::BadHandle(h.index)),
        }
    }

    /// Copies up to `buf.len()` bytes from the head of the receive buffer without consuming them (`MSG_PEEK`):
    /// `Ok(0)` at the end of the stream, [`Error::WouldBlock`] when nothing is there.
    pub fn peek(&mut self, h: Handle, buf: &mut [u8]) -> Result<usize> {
        let socket = self.conn(h)?.socket;
        let s = self.sockets.get_mut::<tcp::Socket>(socket);
        match s.peek_slice(buf) {
            Ok(0) if s.may_recv() || buf.is_empty() => Err(Error::WouldBlock),
            Ok(n) => Ok(n),
            Err(_) => Ok(0),
        }
    }

    /// Closes the sending side (`shutdown(SHUT_WR)`): FIN goes after the queued data; reads go on until the
    /// peer closes too, and the handle stays valid until [`Self::close`].
    pub fn shutdown_write(&mut self, h: Handle) -> Result<()> {
        self.smol_dirty = true;
        let socket = self.conn(h)?.socket;
        self.sockets.get_mut::<tcp::Socket>(socket).close();
        Ok(())
    }

    /// Our address and port of `h` (a connection, a listener or a UDP socket).
    pub fn local_addr(&self, h: Handle) -> Result<SocketAddrV4> {
        let ours = self.config.addr;
        match self.slot(h)? {
            SlotKind::Listener(l) => Ok(SocketAddrV4::new(ours, l.port)),
            SlotKind::Udp(u) => Ok(SocketAddrV4::new(ours, u.port)),
            SlotKind::Tcp(c) => Ok(self
                .sockets
                .get::<tcp::Socket>(c.socket)
                .local_endpoint()
                .map(v4_endpoint)
                .unwrap_or(SocketAddrV4::new(ours, c.local_port))),
            SlotKind::Free => Err(Error::BadHandle(h.index)),
        }
    }

    /// The peer of a TCP connection; [`Error::NotConnected`] once it has none (closed, or not yet opened).
    pub fn peer_addr(&self, h: Handle) -> Result<SocketAddrV4> {
        let s = self.sockets.get::<tcp::Socket>(self.conn(h)?.socket);
        s.remote_endpoint().map(v4_endpoint).ok_or(Error::NotConnected)
    }

    /// Turns Nagle's algorithm off (`TCP_NODELAY`, netstack's default) or on for a connection.
    pub fn set_nodelay(&mut self, h: Handle, nodelay: bool) -> Result<()> {
        let socket = self.conn(h)?.socket;
        self.sockets.get_mut::<tcp::Socket>(socket).set_nagle_enabled(!nodelay);
        Ok(())
    }
}
