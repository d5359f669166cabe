//! Attaching and detaching an XDP program to an interface over rtnetlink (RTM_SETLINK with IFLA_XDP), and
//! reading which program an interface has (RTM_GETLINK). Attaching uses XDP_FLAGS_UPDATE_IF_NOEXIST, so a program
//! someone else attached is never replaced; detaching names the expected program (XDP_FLAGS_REPLACE), so only ours
//! is ever removed. The kernel's extended ack text, when it sends one, goes into the error.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_SETLINK: u16 = 19;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_ACK_TLVS: u16 = 0x200;
const NLA_F_NESTED: u16 = 0x8000;
const NLA_TYPE_MASK: u16 = 0x3fff;
const SOL_NETLINK: libc::c_int = 270;
const NETLINK_CAP_ACK: libc::c_int = 10;
const NETLINK_EXT_ACK: libc::c_int = 11;
const NLMSGERR_ATTR_MSG: u16 = 1;

const IFLA_XDP: u16 = 43;
const IFLA_XDP_FD: u16 = 1;
const IFLA_XDP_ATTACHED: u16 = 2;
const IFLA_XDP_FLAGS: u16 = 3;
const IFLA_XDP_PROG_ID: u16 = 4;
const IFLA_XDP_EXPECTED_FD: u16 = 8;

/// Fail instead of replacing a program already attached.
pub(crate) const XDP_FLAGS_UPDATE_IF_NOEXIST: u32 = 1 << 0;
/// Generic XDP, run by the kernel after the driver built an skb (works on every interface).
pub(crate) const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
/// Native XDP, run by the driver.
pub(crate) const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
/// Replace (here: remove) only the program given as IFLA_XDP_EXPECTED_FD.
const XDP_FLAGS_REPLACE: u32 = 1 << 4;

const NLMSGHDR_LEN: usize = 16;
const IFINFOMSG_LEN: usize = 16;

/// A netlink error: the errno and the kernel's explanation when it gave one.
#[derive(Debug)]
pub(crate) struct NlError {
    pub(crate) source: io::Error,
    pub(crate) message: Option<String>,
}

impl From<io::Error> for NlError {
    fn from(source: io::Error) -> Self {
        NlError { source, message: None }
    }
}

/// Builds an rtnetlink link message for `ifindex`, attributes appended with [`Msg::attr`].
struct Msg(Vec<u8>);

impl Msg {
    fn new(kind: u16, flags: u16, ifindex: i32) -> Msg {
        let mut b = Vec::with_capacity(128);
        b.extend_from_slice(&0u32.to_ne_bytes()); // length, set by finish()
        b.extend_from_slice(&kind.to_ne_bytes());
        b.extend_from_slice(&flags.to_ne_bytes());
        b.extend_from_slice(&1u32.to_ne_bytes()); // sequence
        b.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it
        b.push(libc::AF_UNSPEC as u8); // ifi_family
        b.push(0);
        b.extend_from_slice(&0u16.to_ne_bytes()); // ifi_type
        b.extend_from_slice(&ifindex.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes()); // ifi_flags
        b.extend_from_slice(&0u32.to_ne_bytes()); // ifi_change
        Msg(b)
    }

    fn attr(&mut self, kind: u16, payload: &[u8]) {
        let len = 4 + payload.len();
        self.0.extend_from_slice(&(len as u16).to_ne_bytes());
        self.0.extend_from_slice(&kind.to_ne_bytes());
        self.0.extend_from_slice(payload);
        while !self.0.len().is_multiple_of(4) {
            self.0.push(0);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        let len = self.0.len() as u32;
        self.0[..4].copy_from_slice(&len.to_ne_bytes());
        self.0
    }
}

/// Attributes of a netlink payload as (type without flags, payload).
fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if b.len() < 4 {
            return None;
        }
        let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
        let kind = u16::from_ne_bytes([b[2], b[3]]) & NLA_TYPE_MASK;
        if len < 4 || len > b.len() {
            return None;
        }
        let payload = &b[4..len];
        b = &b[((len + 3) & !3).min(b.len())..];
        Some((kind, payload))
    })
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).map(|s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

/// An rtnetlink socket, bound to the network namespace of the thread that opened it (interface indexes are per
/// namespace, so the port keeps the one it attached through to detach later from any thread).
#[derive(Debug)]
pub(crate) struct Socket(OwnedFd);

impl Socket {
    pub(crate) fn open() -> io::Result<Socket> {
        // SAFETY: plain socket(2) call; the result is checked.
        let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        for opt in [NETLINK_EXT_ACK, NETLINK_CAP_ACK] {
            let one: libc::c_int = 1;
            // SAFETY: passes a live c_int and its size. Failure (old kernels) only loses the error text.
            unsafe { libc::setsockopt(fd.as_raw_fd(), SOL_NETLINK, opt, (&one as *const libc::c_int).cast(), 4) };
        }
        Ok(Socket(fd))
    }

    /// Sends `msg` and returns the first reply message (header included).
    fn request(&self, msg: &[u8]) -> io::Result<Vec<u8>> {
        // SAFETY: sends from a live buffer of the given length (to the kernel: no address needed).
        let rc = unsafe { libc::send(self.0.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buf = vec![0u8; 32 * 1024];
        // SAFETY: receives into a live buffer of the given length.
        let n = unsafe { libc::recv(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        buf.truncate(n as usize);
        let len = u32_at(&buf, 0).unwrap_or(0) as usize;
        if len < NLMSGHDR_LEN || len > buf.len() {
            return Err(io::Error::other("short rtnetlink reply"));
        }
        buf.truncate(len);
        Ok(buf)
    }
}

/// Turns an NLMSG_ERROR reply into a result (error 0 is the ack).
fn check_ack(reply: &[u8]) -> Result<(), NlError> {
    let kind = u16::from_ne_bytes([reply[4], reply[5]]);
    if kind != NLMSG_ERROR {
        return Err(io::Error::other(format!("unexpected rtnetlink reply type {kind}")).into());
    }
    let flags = u16::from_ne_bytes([reply[6], reply[7]]);
    let errno = u32_at(reply, NLMSGHDR_LEN).ok_or_else(|| io::Error::other("short rtnetlink ack"))? as i32;
    if errno == 0 {
        return Ok(());
    }
    // With NETLINK_CAP_ACK the request comes back as its header only; the extended ack attributes follow it.
    let tlvs = reply.get(NLMSGHDR_LEN + 4 + NLMSGHDR_LEN..).unwrap_or(&[]);
    let message = (flags & NLM_F_ACK_TLVS != 0)
        .then(|| attrs(tlvs).find(|(k, _)| *k == NLMSGERR_ATTR_MSG))
        .flatten()
        .map(|(_, v)| String::from_utf8_lossy(v.split(|&b| b == 0).next().unwrap_or(&[])).into_owned());
    Err(NlError { source: io::Error::from_raw_os_error(-errno), message })
}

/// Attaches program `prog` to `ifindex` in `mode` (SKB or DRV flags), failing if a program is already there.
pub(crate) fn attach(nl: &Socket, ifindex: i32, prog: RawFd, mode: u32) -> Result<(), NlError> {
    let mut xdp = Msg(Vec::new());
    xdp.attr(IFLA_XDP_FD, &prog.to_ne_bytes());
    xdp.attr(IFLA_XDP_FLAGS, &(mode | XDP_FLAGS_UPDATE_IF_NOEXIST).to_ne_bytes());
    let mut msg = Msg::new(RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK, ifindex);
    msg.attr(IFLA_XDP | NLA_F_NESTED, &xdp.0);
    check_ack(&nl.request(&msg.finish())?)
}

/// Detaches program `prog` from `ifindex` (attached in `mode`); a different program there is left alone.
pub(crate) fn detach(nl: &Socket, ifindex: i32, prog: RawFd, mode: u32) -> Result<(), NlError> {
    let mut xdp = Msg(Vec::new());
    xdp.attr(IFLA_XDP_FD, &(-1i32).to_ne_bytes());
    xdp.attr(IFLA_XDP_EXPECTED_FD, &prog.to_ne_bytes());
    xdp.attr(IFLA_XDP_FLAGS, &(mode | XDP_FLAGS_REPLACE).to_ne_bytes());
    let mut msg = Msg::new(RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK, ifindex);
    msg.attr(IFLA_XDP | NLA_F_NESTED, &xdp.0);
    check_ack(&nl.request(&msg.finish())?)
}

/// The id of the XDP program attached to `ifindex`, if any.
pub(crate) fn attached_prog(nl: &Socket, ifindex: i32) -> Result<Option<u32>, NlError> {
    let msg = Msg::new(RTM_GETLINK, NLM_F_REQUEST, ifindex).finish();
    let reply = nl.request(&msg)?;
    let kind = u16::from_ne_bytes([reply[4], reply[5]]);
    if kind != RTM_NEWLINK {
        check_ack(&reply)?;
        return Ok(None);
    }
    let body = reply.get(NLMSGHDR_LEN + IFINFOMSG_LEN..).unwrap_or(&[]);
    let Some((_, xdp)) = attrs(body).find(|(k, _)| *k == IFLA_XDP) else {
        return Ok(None);
    };
    let attached = attrs(xdp).find(|(k, _)| *k == IFLA_XDP_ATTACHED).is_some_and(|(_, v)| v.first() != Some(&0));
    let id = attrs(xdp).find(|(k, _)| *k == IFLA_XDP_PROG_ID).and_then(|(_, v)| u32_at(v, 0));
    Ok(if attached { id } else { None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_message_nests_fd_and_flags_under_ifla_xdp() {
        let mut xdp = Msg(Vec::new());
        xdp.attr(IFLA_XDP_FD, &9i32.to_ne_bytes());
        xdp.attr(IFLA_XDP_FLAGS, &(XDP_FLAGS_SKB_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST).to_ne_bytes());
        let mut msg = Msg::new(RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK, 5);
        msg.attr(IFLA_XDP | NLA_F_NESTED, &xdp.0);
        let b = msg.finish();
        assert_eq!(u32_at(&b, 0), Some(b.len() as u32));
        assert_eq!(b.len(), 16 + 16 + 4 + 8 + 8);
        assert_eq!(u32_at(&b, 20), Some(5), "ifi_index");
        let top: Vec<_> = attrs(&b[32..]).collect();
        assert_eq!(top.len(), 1);
        assert_eq!(top[0].0, IFLA_XDP);
        let inner: Vec<_> = attrs(top[0].1).map(|(k, v)| (k, u32_at(v, 0).unwrap())).collect();
        assert_eq!(inner, vec![(IFLA_XDP_FD, 9), (IFLA_XDP_FLAGS, 3)]);
    }

    #[test]
    fn error_ack_carries_errno_and_extended_message() {
        let mut r = Vec::new();
        r.extend_from_slice(&0u32.to_ne_bytes());
        r.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        r.extend_from_slice(&NLM_F_ACK_TLVS.to_ne_bytes());
        r.extend_from_slice(&[0; 8]);
        r.extend_from_slice(&(-libc::EBUSY).to_ne_bytes());
        r.extend_from_slice(&[0; 16]);
        let text = b"XDP program already attached\0";
        r.extend_from_slice(&((4 + text.len()) as u16).to_ne_bytes());
        r.extend_from_slice(&NLMSGERR_ATTR_MSG.to_ne_bytes());
        r.extend_from_slice(text);
        let e = check_ack(&r).unwrap_err();
        assert_eq!(e.source.raw_os_error(), Some(libc::EBUSY));
        assert_eq!(e.message.as_deref(), Some("XDP program already attached"));
    }
}
