//! setsockopt and getsockopt on stack sockets: the options the library knows are recorded and reported back,
//! those the stack has a knob for take effect (TCP_NODELAY; SO_LINGER 0 makes close reset); the rest fail with
//! ENOPROTOOPT and a one-time log line.

use std::time::Duration;

use libc::c_int;

use crate::state::{Opts, Phase, Proto, Res, State};

fn int(val: &[u8]) -> Res<c_int> {
    let b: [u8; 4] = val.get(..4).ok_or(libc::EINVAL)?.try_into().map_err(|_| libc::EINVAL)?;
    Ok(c_int::from_ne_bytes(b))
}

fn timeval(val: &[u8]) -> Res<Option<Duration>> {
    if val.len() < std::mem::size_of::<libc::timeval>() {
        return Err(libc::EINVAL);
    }
    // SAFETY: at least a timeval of bytes; read unaligned.
    let tv = unsafe { std::ptr::read_unaligned(val.as_ptr() as *const libc::timeval) };
    if tv.tv_sec < 0 || !(0..1_000_000).contains(&tv.tv_usec) {
        return Err(libc::EDOM);
    }
    let d = Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64);
    Ok((!d.is_zero()).then_some(d))
}

/// Records option `name` at `level` into `o`; false if it is not one we know.
fn record(o: &mut Opts, level: c_int, name: c_int, val: &[u8]) -> Res<bool> {
    match (level, name) {
        (libc::SOL_SOCKET, libc::SO_REUSEADDR) => o.reuseaddr = int(val)? != 0,
        (libc::SOL_SOCKET, libc::SO_REUSEPORT) => o.reuseport = int(val)? != 0,
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE) => o.keepalive = int(val)? != 0,
        (libc::SOL_SOCKET, libc::SO_RCVBUF) => o.rcvbuf = int(val)?,
        (libc::SOL_SOCKET, libc::SO_SNDBUF) => o.sndbuf = int(val)?,
        (libc::SOL_SOCKET, libc::SO_RCVTIMEO) => o.rcvtimeo = timeval(val)?,
        (libc::SOL_SOCKET, libc::SO_SNDTIMEO) => o.sndtimeo = timeval(val)?,
        (libc::SOL_SOCKET, libc::SO_LINGER) => {
            if val.len() < std::mem::size_of::<libc::linger>() {
                return Err(libc::EINVAL);
            }
            // SAFETY: a struct linger of bytes; read unaligned.
            let l = unsafe { std::ptr::read_unaligned(val.as_ptr() as *const libc::linger) };
            o.linger = (l.l_onoff != 0).then_some(l.l_linger);
        }
        (libc::IPPROTO_TCP, libc::TCP_NODELAY) => o.nodelay = int(val)? != 0,
        (libc::IPPROTO_TCP, libc::TCP_CORK) => o.cork = int(val)? != 0,
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE) => o.keepidle = int(val)?,
        (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL) => o.keepintvl = int(val)?,
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT) => o.keepcnt = int(val)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn option_name(level: c_int, name: c_int) -> String {
    let level_name = match level {
        libc::SOL_SOCKET => "SOL_SOCKET",
        libc::IPPROTO_TCP => "IPPROTO_TCP",
        libc::IPPROTO_IP => "IPPROTO_IP",
        _ => "level",
    };
    format!("{level_name} {level}/{name}")
}

impl State {
    /// Records an option set on a pending kernel socket, for the stack socket it may become.
    pub fn record_pending(&mut self, fd: c_int, level: c_int, name: c_int, val: &[u8]) {
        if let Some((_, o)) = self.pending.get_mut(&fd) {
            let _ = record(o, level, name, val);
        }
    }

    /// `setsockopt` on stack socket `fd`.
    pub fn setsockopt(&mut self, fd: c_int, level: c_int, name: c_int, val: &[u8]) -> Res<()> {
        let i = self.sock_of(fd)?;
        let s = self.at(i);
        if !record(&mut s.opts, level, name, val)? {
            self.log_once(format!(
                "fd {fd}: setsockopt {} is not supported on stack sockets",
                option_name(level, name)
            ));
            return Err(libc::ENOPROTOOPT);
        }
        let (nodelay, h, proto) = (s.opts.nodelay, s.handle, s.proto);
        if (level, name) == (libc::IPPROTO_TCP, libc::TCP_NODELAY) && proto == Proto::Tcp {
            if let (Some(h), true) = (h, self.polls_here()) {
                let _ = self.up.as_mut().expect("polls_here").stack.set_nodelay(h, nodelay);
            }
        }
        Ok(())
    }

    /// `getsockopt` on stack socket `fd`: the bytes of the value.
    pub fn getsockopt(&mut self, fd: c_int, level: c_int, name: c_int) -> Res<Vec<u8>> {
        let i = self.sock_of(fd)?;
        let (tcp_rx, tcp_tx) = (self.config.tcp_rx_buffer as c_int, self.config.tcp_tx_buffer as c_int);
        self.events_of(i);
        let s = self.at(i);
        let o = s.opts;
        let i32v = |v: c_int| Ok(v.to_ne_bytes().to_vec());
        let tv = |d: Option<Duration>| {
            let d = d.unwrap_or_default();
            let t =
                libc::timeval { tv_sec: d.as_secs() as libc::time_t, tv_usec: d.subsec_micros() as libc::suseconds_t };
            // SAFETY: viewing a plain struct as bytes.
            Ok(unsafe { std::slice::from_raw_parts(&t as *const _ as *const u8, std::mem::size_of_val(&t)) }.to_vec())
        };
        match (level, name) {
            (libc::SOL_SOCKET, libc::SO_ERROR) => i32v(std::mem::take(&mut s.so_error)),
            (libc::SOL_SOCKET, libc::SO_TYPE) => {
                i32v(if s.proto == Proto::Tcp { libc::SOCK_STREAM } else { libc::SOCK_DGRAM })
            }
            (libc::SOL_SOCKET, libc::SO_DOMAIN) => i32v(libc::AF_INET),
            (libc::SOL_SOCKET, libc::SO_PROTOCOL) => {
                i32v(if s.proto == Proto::Tcp { libc::IPPROTO_TCP } else { libc::IPPROTO_UDP })
            }
            (libc::SOL_SOCKET, libc::SO_ACCEPTCONN) => i32v((s.phase == Phase::Listening) as c_int),
            (libc::SOL_SOCKET, libc::SO_REUSEADDR) => i32v(o.reuseaddr as c_int),
            (libc::SOL_SOCKET, libc::SO_REUSEPORT) => i32v(o.reuseport as c_int),
            (libc::SOL_SOCKET, libc::SO_KEEPALIVE) => i32v(o.keepalive as c_int),
            // What the stack's buffers are (the configuration's), whatever was asked.
            (libc::SOL_SOCKET, libc::SO_RCVBUF) => i32v(tcp_rx),
            (libc::SOL_SOCKET, libc::SO_SNDBUF) => i32v(tcp_tx),
            (libc::SOL_SOCKET, libc::SO_RCVTIMEO) => tv(o.rcvtimeo),
            (libc::SOL_SOCKET, libc::SO_SNDTIMEO) => tv(o.sndtimeo),
            (libc::SOL_SOCKET, libc::SO_LINGER) => {
                let l = libc::linger { l_onoff: o.linger.is_some() as c_int, l_linger: o.linger.unwrap_or(0) };
                // SAFETY: viewing a plain struct as bytes.
                Ok(unsafe { std::slice::from_raw_parts(&l as *const _ as *const u8, std::mem::size_of_val(&l)) }
                    .to_vec())
            }
            (libc::IPPROTO_TCP, libc::TCP_NODELAY) => i32v(o.nodelay as c_int),
            (libc::IPPROTO_TCP, libc::TCP_CORK) => i32v(o.cork as c_int),
            (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE) => i32v(if o.keepidle > 0 { o.keepidle } else { 7200 }),
            (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL) => i32v(if o.keepintvl > 0 { o.keepintvl } else { 75 }),
            (libc::IPPROTO_TCP, libc::TCP_KEEPCNT) => i32v(if o.keepcnt > 0 { o.keepcnt } else { 9 }),
            _ => {
                self.log_once(format!(
                    "fd {fd}: getsockopt {} is not supported on stack sockets",
                    option_name(level, name)
                ));
                Err(libc::ENOPROTOOPT)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_options_are_recorded_and_others_are_not() {
        let mut o = Opts::default();
        assert!(record(&mut o, libc::SOL_SOCKET, libc::SO_KEEPALIVE, &1i32.to_ne_bytes()).unwrap());
        assert!(record(&mut o, libc::IPPROTO_TCP, libc::TCP_NODELAY, &1i32.to_ne_bytes()).unwrap());
        assert!(record(&mut o, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, &300i32.to_ne_bytes()).unwrap());
        let l = libc::linger { l_onoff: 1, l_linger: 0 };
        // SAFETY: viewing a plain struct as bytes.
        let lb = unsafe { std::slice::from_raw_parts(&l as *const _ as *const u8, std::mem::size_of_val(&l)) };
        assert!(record(&mut o, libc::SOL_SOCKET, libc::SO_LINGER, lb).unwrap());
        assert!(o.keepalive && o.nodelay && o.keepidle == 300 && o.linger == Some(0), "{o:?}");
        assert!(!record(&mut o, libc::IPPROTO_IP, libc::IP_TOS, &0i32.to_ne_bytes()).unwrap());
        assert_eq!(record(&mut o, libc::SOL_SOCKET, libc::SO_KEEPALIVE, &[1]), Err(libc::EINVAL), "short value");
    }

    #[test]
    fn timeouts_parse_as_timevals() {
        let tv = libc::timeval { tv_sec: 1, tv_usec: 500_000 };
        // SAFETY: viewing a plain struct as bytes.
        let b = unsafe { std::slice::from_raw_parts(&tv as *const _ as *const u8, std::mem::size_of_val(&tv)) };
        assert_eq!(timeval(b), Ok(Some(Duration::from_millis(1500))));
        let zero = libc::timeval { tv_sec: 0, tv_usec: 0 };
        // SAFETY: as above.
        let z = unsafe { std::slice::from_raw_parts(&zero as *const _ as *const u8, std::mem::size_of_val(&zero)) };
        assert_eq!(timeval(z), Ok(None), "zero means no timeout");
        let bad = libc::timeval { tv_sec: 0, tv_usec: 2_000_000 };
        // SAFETY: as above.
        let b = unsafe { std::slice::from_raw_parts(&bad as *const _ as *const u8, std::mem::size_of_val(&bad)) };
        assert_eq!(timeval(b), Err(libc::EDOM));
    }
}
