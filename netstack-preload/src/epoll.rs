//! epoll, poll and select over a mix of kernel descriptors and stack sockets.
//!
//! An epoll set is the kernel's (the application's kernel descriptors stay in it) plus a user-space interest
//! list for its stack sockets, with a ready list in the way of the kernel's: a stack event queues the entries
//! watching that socket, a wait reports those whose readiness matches, level-triggered ones stay queued while
//! ready, edge-triggered ones are reported once per new event ([`crate::state::Sock::seq`]), one-shot ones are
//! disarmed. When nothing is ready the wait spins for a while and then sleeps in the kernel's `epoll_wait` on
//! the set itself, to which the port's descriptor (and the control socket) were added with tags of ours that
//! are filtered out of what the application sees.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use libc::{c_int, epoll_event, pollfd};

use crate::fdtable::{self, Kind};
use crate::real;
use crate::state::{errno, sock_events, Res, Sleep, State};

/// The `data` of the port's descriptor in an application's epoll set (filtered out of its events).
pub const PORT_TAG: u64 = 0x6e65_7473_7461_636b;
/// The `data` of the control socket.
pub const CONTROL_TAG: u64 = PORT_TAG + 1;

const IN: u32 = libc::EPOLLIN as u32;
const OUT: u32 = libc::EPOLLOUT as u32;
const ERR: u32 = libc::EPOLLERR as u32;
const HUP: u32 = libc::EPOLLHUP as u32;
const ET: u32 = libc::EPOLLET as u32;
const ONESHOT: u32 = libc::EPOLLONESHOT as u32;

#[derive(Debug)]
struct Entry {
    fd: c_int,
    sock: u32,
    events: u32,
    data: u64,
    /// The socket's `seq` when this entry last reported (edge-triggered).
    seen: u32,
    queued: bool,
    live: bool,
}

/// The user-space part of one epoll set.
#[derive(Debug, Default)]
pub struct EpollSet {
    entries: Vec<Entry>,
    by_fd: HashMap<c_int, u32>,
    free: Vec<u32>,
    ready: VecDeque<u32>,
    port_fd: Option<c_int>,
    control_fd: Option<c_int>,
}

impl EpollSet {
    /// Puts entry `e` on the ready list (if live and not there yet).
    pub fn queue(&mut self, e: u32) {
        if let Some(en) = self.entries.get_mut(e as usize) {
            if en.live && !en.queued {
                en.queued = true;
                self.ready.push_back(e);
            }
        }
    }

    /// Adds the port's descriptor (and the control socket's) to the kernel set `set_fd`, once.
    pub fn watch_port(&mut self, set_fd: c_int, port_fd: c_int, control_fd: Option<c_int>) {
        for (have, fd, tag) in
            [(&mut self.port_fd, Some(port_fd), PORT_TAG), (&mut self.control_fd, control_fd, CONTROL_TAG)]
        {
            let Some(fd) = fd else { continue };
            if *have == Some(fd) {
                continue;
            }
            let mut ev = epoll_event { events: IN, u64: tag };
            // SAFETY: `ev` lives across the call; a descriptor already in the set fails with EEXIST, harmlessly.
            unsafe { real::epoll_ctl(set_fd, libc::EPOLL_CTL_ADD, fd, &mut ev) };
            *have = Some(fd);
        }
    }

    /// Whether any stack socket is in the set.
    pub fn has_entries(&self) -> bool {
        !self.by_fd.is_empty()
    }

    /// The descriptors of its stack sockets.
    pub fn fds(&self) -> Vec<c_int> {
        self.by_fd.keys().copied().collect()
    }
}

/// Keeps only the application's events of the `n` the kernel wrote at `out` (ours are the port's and the
/// control socket's); returns how many are left, packed at the front.
///
/// # Safety
/// `out` holds `n` initialised events.
pub unsafe fn filter_ours(out: *mut epoll_event, n: usize) -> usize {
    // SAFETY: the caller's events.
    let evs = unsafe { std::slice::from_raw_parts_mut(out, n) };
    let mut kept = 0;
    for i in 0..n {
        let data = evs[i].u64;
        if data != PORT_TAG && data != CONTROL_TAG {
            evs[kept] = evs[i];
            kept += 1;
        }
    }
    kept
}

impl State {
    /// `epoll_ctl` for stack socket `fd` in set `epfd`.
    pub fn epoll_ctl(&mut self, epfd: c_int, op: c_int, fd: c_int, ev: Option<epoll_event>) -> Res<()> {
        let i = self.sock_of(fd)?;
        if epfd == fd {
            return Err(libc::EINVAL);
        }
        let set = self.epolls.entry(epfd).or_default();
        match op {
            libc::EPOLL_CTL_ADD => {
                let ev = ev.ok_or(libc::EFAULT)?;
                if set.by_fd.contains_key(&fd) {
                    return Err(libc::EEXIST);
                }
                let seq = self.socks[i as usize].as_ref().expect("live").seq;
                let entry = Entry {
                    fd,
                    sock: i,
                    events: ev.events,
                    data: ev.u64,
                    seen: seq.wrapping_sub(1),
                    queued: false,
                    live: true,
                };
                let e = match set.free.pop() {
                    Some(e) => {
                        set.entries[e as usize] = entry;
                        e
                    }
                    None => {
                        set.entries.push(entry);
                        set.entries.len() as u32 - 1
                    }
                };
                set.by_fd.insert(fd, e);
                set.queue(e);
                fdtable::set(epfd, Kind::Epoll);
                self.at(i).watchers.push((epfd, e));
            }
            libc::EPOLL_CTL_MOD => {
                let ev = ev.ok_or(libc::EFAULT)?;
                let &e = set.by_fd.get(&fd).ok_or(libc::ENOENT)?;
                let seq = self.socks[i as usize].as_ref().expect("live").seq;
                let en = &mut set.entries[e as usize];
                en.events = ev.events;
                en.data = ev.u64;
                en.seen = seq.wrapping_sub(1);
                set.queue(e);
            }
            libc::EPOLL_CTL_DEL => {
                let e = set.by_fd.remove(&fd).ok_or(libc::ENOENT)?;
                set.entries[e as usize].live = false;
                set.free.push(e);
                self.at(i).watchers.retain(|&(s, x)| (s, x) != (epfd, e));
            }
            _ => return Err(libc::EINVAL),
        }
        Ok(())
    }

    /// Drops the entries of socket `i` (its last descriptor closed) from every set.
    pub fn unwatch(&mut self, watchers: &[(c_int, u32)]) {
        for &(epfd, e) in watchers {
            if let Some(set) = self.epolls.get_mut(&epfd) {
                if let Some(en) = set.entries.get_mut(e as usize) {
                    if en.live {
                        en.live = false;
                        set.by_fd.remove(&en.fd);
                        set.free.push(e);
                    }
                }
            }
        }
    }

    /// Forgets set `epfd` (closed).
    pub fn drop_epoll(&mut self, epfd: c_int) {
        if let Some(set) = self.epolls.remove(&epfd) {
            for (fd, e) in set.by_fd {
                if let Ok(i) = self.sock_of(fd) {
                    self.at(i).watchers.retain(|&(s, x)| (s, x) != (epfd, e));
                }
            }
        }
    }

    /// Writes the set's ready stack entries to `out` (at most `max`); returns how many.
    fn collect(&mut self, epfd: c_int, out: &mut [epoll_event]) -> usize {
        let State { up, socks, epolls, .. } = self;
        let Some(set) = epolls.get_mut(&epfd) else { return 0 };
        let mut n = 0;
        for _ in 0..set.ready.len() {
            if n == out.len() {
                break;
            }
            let Some(e) = set.ready.pop_front() else { break };
            let en = &mut set.entries[e as usize];
            en.queued = false;
            if !en.live {
                continue;
            }
            let Some(s) = socks[en.sock as usize].as_mut() else { continue };
            let ev = sock_events(up.as_ref(), s) & (en.events | ERR | HUP);
            if ev == 0 || (en.events & ET != 0 && en.seen == s.seq) {
                continue;
            }
            en.seen = s.seq;
            out[n] = epoll_event { events: ev, u64: en.data };
            n += 1;
            if en.events & ONESHOT != 0 {
                en.events = 0;
            } else if en.events & ET == 0 {
                en.queued = true;
                set.ready.push_back(e);
            }
        }
        n
    }

    /// `epoll_wait` on a set holding stack sockets.
    ///
    /// # Safety
    /// `out` has room for `max` events.
    pub unsafe fn epoll_wait(&mut self, epfd: c_int, out: *mut epoll_event, max: c_int, timeout: c_int) -> Res<usize> {
        if max <= 0 {
            return Err(libc::EINVAL);
        }
        // Counted from the call's start: a signal that lands while the first wait brings the stack up (slow on a
        // loaded host) came during the application's wait, which the kernel's would have ended with EINTR.
        let signals = crate::signals::delivered();
        if self.up.is_none() && self.epolls.get(&epfd).is_some_and(|s| s.has_entries()) {
            // First use: bring the stack up from the thread that waits (errors are logged once; the kernel part
            // of the set is still served).
            let _ = self.stack();
        }
        let deadline = (timeout >= 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
        let mut idle_since = None;
        loop {
            if self.poll_stack() {
                idle_since = None;
            }
            // SAFETY: the caller's array of `max` events.
            let all = unsafe { std::slice::from_raw_parts_mut(out, max as usize) };
            let mut n = if self.polls_here() { self.collect(epfd, all) } else { 0 };
            if n < max as usize {
                // SAFETY: the rest of the caller's array.
                let k = unsafe { real::epoll_wait(epfd, out.add(n), max - n as c_int, 0) };
                if k < 0 {
                    return if n > 0 { Ok(n) } else { Err(errno()) };
                }
                // SAFETY: the kernel wrote `k` events there.
                n += unsafe { filter_ours(out.add(n), k as usize) };
            }
            if n > 0 || timeout == 0 || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(n);
            }
            if crate::signals::delivered() != signals {
                // A handler ran while we spun in user space: the kernel's wait would have failed with EINTR.
                return Err(libc::EINTR);
            }
            let k = self.idle(&mut idle_since, deadline, Sleep::Epoll(epfd, out, max))?;
            // SAFETY: the kernel wrote `k` events to `out`.
            let kept = unsafe { filter_ours(out, k) };
            if kept > 0 {
                // Kernel events are the caller's now (edge-triggered ones are not reported again): add the stack's.
                self.poll_stack();
                // SAFETY: the caller's array of `max` events.
                let all = unsafe { std::slice::from_raw_parts_mut(out, max as usize) };
                let more = if self.polls_here() { self.collect(epfd, &mut all[kept..]) } else { 0 };
                return Ok(kept + more);
            }
        }
    }

    /// `poll` over an array with stack sockets in it.
    pub fn poll(&mut self, fds: &mut [pollfd], timeout: Option<Duration>) -> Res<usize> {
        // From the call's start, as in epoll_wait.
        let signals = crate::signals::delivered();
        if self.up.is_none() && fds.iter().any(|p| fdtable::kind(p.fd) == Kind::Stack) {
            let _ = self.stack();
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut kernel: Vec<pollfd> = fds
            .iter()
            .map(|p| pollfd {
                fd: if fdtable::kind(p.fd) == Kind::Stack { -1 } else { p.fd },
                events: p.events,
                revents: 0,
            })
            .collect();
        let any_kernel = kernel.iter().any(|p| p.fd >= 0);
        let mut idle_since = None;
        loop {
            if self.poll_stack() {
                idle_since = None;
            }
            let mut n = 0;
            for p in fds.iter_mut() {
                p.revents = 0;
                if fdtable::kind(p.fd) != Kind::Stack {
                    continue;
                }
                let Ok(i) = self.sock_of(p.fd) else {
                    p.revents = libc::POLLNVAL;
                    n += 1;
                    continue;
                };
                let mut ev = self.events_of(i);
                if ev & IN != 0 {
                    ev |= libc::POLLRDNORM as u32;
                }
                if ev & OUT != 0 {
                    ev |= libc::POLLWRNORM as u32;
                }
                let wanted = p.events as u16 as u32 | ERR | HUP;
                p.revents = (ev & wanted) as i16;
                if p.revents != 0 {
                    n += 1;
                }
            }
            if any_kernel {
                // SAFETY: `kernel` is a valid array of its length.
                let k = unsafe { real::poll(kernel.as_mut_ptr(), kernel.len() as libc::nfds_t, 0) };
                if k < 0 && n == 0 {
                    return Err(errno());
                }
                for (p, k) in fds.iter_mut().zip(&kernel) {
                    if k.fd >= 0 && k.revents != 0 {
                        p.revents = k.revents;
                        n += 1;
                    }
                }
            }
            if n > 0 || timeout == Some(Duration::ZERO) || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(n);
            }
            if crate::signals::delivered() != signals {
                return Err(libc::EINTR);
            }
            self.idle(&mut idle_since, deadline, Sleep::Poll(&mut kernel))?;
        }
    }
}

/// `select` through [`State::poll`]: the sets become a poll array and back.
///
/// # Safety
/// The sets are null or valid `fd_set`s; `nfds` is at most `FD_SETSIZE`.
pub unsafe fn select(
    state: &mut State,
    nfds: c_int,
    r: *mut libc::fd_set,
    w: *mut libc::fd_set,
    e: *mut libc::fd_set,
    timeout: Option<Duration>,
) -> Res<usize> {
    let nfds = nfds.clamp(0, libc::FD_SETSIZE as c_int);
    // SAFETY: FD_ISSET reads a set the caller vouched for.
    let isset = |set: *mut libc::fd_set, fd: c_int| !set.is_null() && unsafe { libc::FD_ISSET(fd, set) };
    let mut fds = Vec::new();
    for fd in 0..nfds {
        let mut ev = 0;
        if isset(r, fd) {
            ev |= libc::POLLIN;
        }
        if isset(w, fd) {
            ev |= libc::POLLOUT;
        }
        if isset(e, fd) {
            ev |= libc::POLLPRI;
        }
        if ev != 0 {
            fds.push(pollfd { fd, events: ev, revents: 0 });
        }
    }
    state.poll(&mut fds, timeout)?;
    if fds.iter().any(|p| p.revents & libc::POLLNVAL != 0) {
        return Err(libc::EBADF);
    }
    for set in [r, w, e] {
        if !set.is_null() {
            // SAFETY: a set the caller vouched for.
            unsafe { libc::FD_ZERO(set) };
        }
    }
    let mut count = 0;
    for p in &fds {
        let re = p.revents;
        let marks = [
            (r, re & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 && p.events & libc::POLLIN != 0),
            (w, re & (libc::POLLOUT | libc::POLLERR) != 0 && p.events & libc::POLLOUT != 0),
            (e, re & libc::POLLPRI != 0),
        ];
        for (set, on) in marks {
            if on && !set.is_null() {
                // SAFETY: as above.
                unsafe { libc::FD_SET(p.fd, set) };
                count += 1;
            }
        }
    }
    Ok(count)
}
