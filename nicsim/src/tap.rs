//! A TAP interface as a model port's wire ([`crate::X540Port::wire_to_tap`]): what the port transmits, the kernel
//! receives on the interface; what the kernel sends out of it arrives at the port's RX. Plumbing only: nothing here
//! is NIC behaviour.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Mutex;

/// Largest frame read from the TAP (more than the X540's 9.5 KiB jumbo limit; longer reads are truncated and then
/// dropped by the model as oversize, as a wire would deliver them).
const READ_MAX: usize = 16 * 1024;

/// The shortest Ethernet frame on a wire, without FCS.
const MIN_FRAME: usize = 60;

/// An open TAP interface (IFF_TAP | IFF_NO_PI, non-blocking). Closing it removes the interface unless it was
/// made persistent elsewhere.
pub(crate) struct TapWire {
    fd: OwnedFd,
    name: String,
    scratch: Mutex<Vec<u8>>,
}

fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    if name.is_empty() || name.len() >= ifr.ifr_name.len() || name.bytes().any(|b| b == 0 || b == b'/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad interface name {name:?}")));
    }
    for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    Ok(ifr)
}

fn ifreq_name(ifr: &libc::ifreq) -> String {
    let bytes: Vec<u8> = ifr.ifr_name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn context(what: String) -> impl FnOnce(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn last_error(what: String) -> io::Error {
    context(what)(io::Error::last_os_error())
}

impl TapWire {
    /// Creates TAP `name` (or attaches to an existing persistent one; `%d` lets the kernel number it) and brings
    /// it up.
    pub(crate) fn open(name: &str) -> io::Result<TapWire> {
        let mut ifr = ifreq(name)?;
        // SAFETY: open(2) of a constant NUL-terminated path; the result is checked.
        let fd = unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(last_error("open /dev/net/tun".into()));
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        ifr.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes the ifreq, which outlives the call.
        if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF as _, &mut ifr as *mut libc::ifreq) } < 0 {
            return Err(last_error(format!("TUNSETIFF {name:?}")));
        }
        let name = ifreq_name(&ifr);
        set_up(&name)?;
        Ok(TapWire { fd, name, scratch: Mutex::new(vec![0; READ_MAX]) })
    }

    /// The interface's name as the kernel knows it.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Hands a frame to the kernel. Frames it refuses (interface down, queue full) are lost, as on a wire.
    pub(crate) fn send(&self, frame: &[u8]) {
        // SAFETY: writes frame.len() bytes from a live slice to our descriptor.
        let _ = unsafe { libc::write(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
    }

    /// Reads one frame the kernel sent out of the interface, if any is waiting. Short frames are padded with zeros
    /// to the Ethernet minimum of 60 bytes (without FCS), as the sending MAC does on a real wire; the kernel hands
    /// them to the TAP unpadded (a 42-byte ARP request).
    pub(crate) fn recv(&self) -> Option<Vec<u8>> {
        let mut buf = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: reads at most buf.len() bytes into a live, exclusively borrowed buffer.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return None;
        }
        let mut frame = buf[..n as usize].to_vec();
        if frame.len() < MIN_FRAME {
            frame.resize(MIN_FRAME, 0);
        }
        Some(frame)
    }
}

/// Sets IFF_UP on interface `name` (in the calling thread's network namespace).
fn set_up(name: &str) -> io::Result<()> {
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        return Err(last_error("socket for interface ioctls".into()));
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let s = unsafe { OwnedFd::from_raw_fd(s) };
    let mut ifr = ifreq(name)?;
    // SAFETY: SIOCGIFFLAGS fills the ifreq, which outlives the call.
    if unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS as _, &mut ifr as *mut libc::ifreq) } < 0 {
        return Err(last_error(format!("SIOCGIFFLAGS {name}")));
    }
    // SAFETY: SIOCGIFFLAGS just wrote the flags member of the union.
    let flags = unsafe { ifr.ifr_ifru.ifru_flags };
    ifr.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
    // SAFETY: SIOCSIFFLAGS reads the ifreq, which outlives the call.
    if unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCSIFFLAGS as _, &ifr as *const libc::ifreq) } < 0 {
        return Err(last_error(format!("SIOCSIFFLAGS {name} (bring it up)")));
    }
    Ok(())
}
