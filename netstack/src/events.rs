//! The per-poll walk over a stack's sockets: listeners' SYN backlog (half-open sockets moved along, expired,
//! handed out when established), connections' events, the user timeout, and the release of closed connections.

use smoltcp::iface::SocketHandle;
use smoltcp::socket::tcp;

use crate::sockets::{v4, Conn, Event, EventKind, Handle, SlotKind};
use crate::Stack;

impl Stack {
    /// Walks every socket once: hands out established connections, reaps closed ones, and reports events.
    pub(crate) fn scan(&mut self, events: &mut Vec<Event>) {
        let first = events.len();
        for index in 0..self.slots.len() as u32 {
            let generation = self.slots[index as usize].generation;
            let handle = Handle { index, generation };
            match &self.slots[index as usize].kind {
                SlotKind::Free => {}
                SlotKind::Udp(u) => {
                    if !u.queue.is_empty() {
                        events.push(Event { handle, kind: EventKind::Readable });
                    }
                }
                SlotKind::Listener(_) => self.scan_listener(handle, events),
                SlotKind::Tcp(_) => self.scan_conn(handle, events),
            }
        }
        self.rescan = events[first..].iter().any(|e| matches!(e.kind, EventKind::Readable | EventKind::Accepted));
    }

    fn scan_listener(&mut self, handle: Handle, events: &mut Vec<Event>) {
        let now = self.now;
        let SlotKind::Listener(l) = &mut self.slots[handle.index as usize].kind else { return };
        let (port, mut listening, mut half_open) =
            (l.port, std::mem::take(&mut l.listening), std::mem::take(&mut l.half_open));
        self.half_open -= half_open.len() + std::mem::take(&mut l.admitted);
        // Listening sockets a SYN woke become half-open; fresh ones take their place.
        let mut i = 0;
        while i < listening.len() {
            if self.sockets.get::<tcp::Socket>(listening[i]).state() != tcp::State::Listen {
                half_open.push((listening.swap_remove(i), now));
            } else {
                i += 1;
            }
        }
        while listening.len() < self.config.tcp_backlog.max(1) {
            listening.push(self.listening_socket(port));
        }
        let mut ready = Vec::new();
        let mut expired = Vec::new();
        let timeout = self.config.tcp_handshake_timeout;
        half_open.retain(|&(s, since)| match self.sockets.get::<tcp::Socket>(s).state() {
            tcp::State::SynReceived if now.duration_since(since) >= timeout => {
                expired.push(s);
                false
            }
            tcp::State::SynReceived => true,
            tcp::State::Closed | tcp::State::Listen => {
                ready.push((s, false));
                false
            }
            _ => {
                ready.push((s, true));
                false
            }
        });
        self.half_open += half_open.len();
        // The client never completed the handshake: dropped without a reset, as a SYN queue entry expires.
        self.counters.tcp_handshake_timeouts += expired.len() as u64;
        for s in expired {
            self.forget_flow(s);
            self.sockets.remove(s);
        }
        let mut accepted = Vec::new();
        for (s, ok) in ready {
            if !ok {
                self.forget_flow(s);
                self.sockets.remove(s);
                continue;
            }
            self.counters.connections_opened += 1;
            self.tcp_conns += 1;
            let writable = self.sockets.get::<tcp::Socket>(s).can_send();
            accepted.push(self.new_slot(SlotKind::Tcp(Conn::new(s, false, writable, port, false))));
        }
        let SlotKind::Listener(l) = &mut self.slots[handle.index as usize].kind else { unreachable!() };
        l.listening = listening;
        l.half_open = half_open;
        l.ready.extend(accepted);
        if !l.ready.is_empty() {
            events.push(Event { handle, kind: EventKind::Accepted });
        }
    }

    fn scan_conn(&mut self, handle: Handle, events: &mut Vec<Event>) {
        let index = handle.index;
        let now = self.now;
        let user_timeout = self.config.tcp_user_timeout;
        let SlotKind::Tcp(c) = &mut self.slots[index as usize].kind else { return };
        if c.app_closed.is_some() {
            self.reap(index);
            return;
        }
        let s = self.sockets.get_mut::<tcp::Socket>(c.socket);
        let state = s.state();
        if c.connecting && !matches!(state, tcp::State::SynSent | tcp::State::SynReceived | tcp::State::Closed) {
            c.connecting = false;
            c.established = true;
            self.counters.connections_opened += 1;
            events.push(Event { handle, kind: EventKind::Connected });
        }
        // User timeout: data queued that nothing has taken off the queue (acknowledged) for that long.
        let queued = s.send_queue();
        match (c.stalled, user_timeout) {
            _ if queued == 0 || state == tcp::State::Closed => c.stalled = None,
            (Some((q, since)), Some(limit)) if q == queued => {
                if now.duration_since(since) >= limit {
                    s.abort();
                    self.smol_dirty = true;
                    self.counters.tcp_user_timeouts += 1;
                    c.stalled = None;
                    c.last_state = tcp::State::Closed;
                    c.reset_pending = true;
                }
            }
            _ => c.stalled = Some((queued, now)),
        }
        let state = s.state();
        if s.can_recv() {
            if !c.read_paused {
                events.push(Event { handle, kind: EventKind::Readable });
            }
        } else if c.established && !s.may_recv() && !c.peer_closed && state != tcp::State::Closed {
            c.peer_closed = true;
            events.push(Event { handle, kind: EventKind::PeerClosed });
        }
        let can_send = s.can_send();
        if can_send && !c.writable && c.established {
            events.push(Event { handle, kind: EventKind::Writable });
        }
        c.writable = can_send;
        // Closed waits until the data that came before the end is read, unless the application paused reading
        // (its input waits on output that will now never drain).
        let unread = s.can_recv() && !c.read_paused;
        if state == tcp::State::Closed && !c.closed_reported && !unread && !std::mem::take(&mut c.reset_pending) {
            c.closed_reported = true;
            events.push(Event { handle, kind: EventKind::Closed });
        }
        let last = std::mem::replace(&mut c.last_state, state);
        if state == tcp::State::Closed && last != tcp::State::Closed {
            let socket = c.socket;
            self.count_close(socket, last);
        }
    }

    /// Counts why smoltcp closed a socket we did not abort: the peer's reset, or a timeout (smoltcp gives up on a
    /// silent peer after the user timeout) from a state that expects an answer; an orderly end counts neither.
    fn count_close(&mut self, socket: SocketHandle, last: tcp::State) {
        let s = self.sockets.get::<tcp::Socket>(socket);
        let reset = match (s.local_endpoint(), s.remote_endpoint()) {
            (Some(l), Some(r)) => self.flows.get(&(v4(r.addr), l.port, r.port)).is_some_and(|f| f.reset),
            _ => false,
        };
        use tcp::State::*;
        if !reset && matches!(last, SynSent | SynReceived | Established | FinWait1 | FinWait2 | CloseWait | Closing) {
            self.counters.tcp_timeouts += 1;
        }
    }

    /// Frees the connection in slot `index` once the application closed it and smoltcp is done with it; one that
    /// lingered too long is reset first (and freed by the poll after, once the reset went out).
    pub(crate) fn reap(&mut self, index: u32) {
        let SlotKind::Tcp(c) = &mut self.slots[index as usize].kind else { return };
        let Some(closed_at) = c.app_closed else { return };
        let s = self.sockets.get_mut::<tcp::Socket>(c.socket);
        let state = s.state();
        let last = std::mem::replace(&mut c.last_state, state);
        if !matches!(state, tcp::State::Closed | tcp::State::TimeWait) {
            if self.now.duration_since(closed_at) >= self.config.tcp_linger {
                s.abort();
                c.last_state = tcp::State::Closed;
                self.counters.tcp_linger_aborts += 1;
                self.smol_dirty = true;
            } else if s.recv_queue() > 0 && s.send_queue() == 0 {
                // Input nobody will read (sent after the close, or left unread at it): once what we sent is
                // acknowledged, reset instead of letting the peer fill a window no one drains.
                s.abort();
                c.last_state = tcp::State::Closed;
                self.counters.tcp_aborts_on_data += 1;
                self.smol_dirty = true;
            }
            return;
        }
        let (socket, established, port, owns) = (c.socket, c.established, c.local_port, c.owns_port);
        if state == tcp::State::Closed && last != tcp::State::Closed {
            self.count_close(socket, last);
        }
        self.forget_flow(socket);
        self.sockets.remove(socket);
        if owns {
            self.tcp_ports.remove(&port);
        }
        if established {
            self.counters.connections_closed += 1;
        }
        self.tcp_conns -= 1;
        self.free_slot(index);
    }
}
