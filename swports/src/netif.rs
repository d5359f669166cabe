//! Helpers shared by the ports that sit on a kernel network interface (af_packet, tap): interface ioctls through a
//! small control socket, and copying frames into and out of buffer chains.
//!
//! Every socket is created in the network namespace of the calling thread, so a port opened by a thread that
//! entered a namespace (`setns`) keeps working on that namespace's interfaces.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use mempool::{Mbuf, Mempool};

use pktio::MacAddr;
use pktio::PortState;
use pktio::{Error, Result};
use pktio::{LinkStatus, PortConfig};

/// Largest interface name, with its NUL.
pub(crate) const IFNAMSIZ: usize = libc::IFNAMSIZ;

/// Checks an interface name: 1..=15 bytes, no '/', ':', whitespace or NUL.
pub(crate) fn check_ifname(name: &str) -> std::result::Result<(), String> {
    if name.is_empty() || name.len() >= IFNAMSIZ {
        return Err(format!("interface name {name:?} must be 1..={} bytes", IFNAMSIZ - 1));
    }
    if name.bytes().any(|b| b == b'/' || b == b':' || b == 0 || b.is_ascii_whitespace()) || name == "." || name == ".."
    {
        return Err(format!("interface name {name:?} has a character Linux does not allow"));
    }
    Ok(())
}

/// An `ifreq` for `name` (which must have passed [`check_ifname`] or fit otherwise).
pub(crate) fn ifreq(name: &str) -> libc::ifreq {
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes().take(IFNAMSIZ - 1)) {
        *d = s as libc::c_char;
    }
    ifr
}

/// The name in an `ifreq`.
pub(crate) fn ifreq_name(ifr: &libc::ifreq) -> String {
    let bytes: Vec<u8> = ifr.ifr_name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Turns an OS error into the crate error, with a hint for the usual causes.
pub(crate) fn os_error(what: String, err: io::Error) -> Error {
    let hint = match err.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => " (needs CAP_NET_ADMIN and CAP_NET_RAW: run as root)",
        Some(libc::ENODEV) | Some(libc::ENXIO) => " (no such network interface in this network namespace)",
        _ => "",
    };
    Error::os(format!("{what}{hint}"), err)
}

/// A datagram socket used for interface ioctls, in the caller's network namespace.
#[derive(Debug)]
pub(crate) struct IfCtl {
    fd: OwnedFd,
    name: String,
}

impl IfCtl {
    /// A control socket for interface `name`.
    pub(crate) fn new(name: &str) -> Result<IfCtl> {
        // SAFETY: plain socket(2) call; the result is checked.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(os_error("socket(AF_INET) for interface ioctls".into(), io::Error::last_os_error()));
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(IfCtl { fd, name: name.to_string() })
    }

    /// The interface name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    fn ioctl(&self, req: libc::c_ulong, ifr: &mut libc::ifreq, what: &str) -> Result<()> {
        // SAFETY: `ifr` is a valid ifreq for the duration of the call; every request used here reads or writes
        // only the ifreq.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), req as _, ifr as *mut libc::ifreq) };
        if rc < 0 {
            return Err(os_error(format!("{what} of interface {}", self.name), io::Error::last_os_error()));
        }
        Ok(())
    }

    /// The interface index; a clear error when the interface does not exist.
    pub(crate) fn ifindex(&self) -> Result<i32> {
        let mut ifr = ifreq(&self.name);
        self.ioctl(libc::SIOCGIFINDEX, &mut ifr, "SIOCGIFINDEX")?;
        // SAFETY: SIOCGIFINDEX filled the ifindex member.
        Ok(unsafe { ifr.ifr_ifru.ifru_ifindex })
    }

    /// Interface flags (IFF_*).
    pub(crate) fn flags(&self) -> Result<i32> {
        let mut ifr = ifreq(&self.name);
        self.ioctl(libc::SIOCGIFFLAGS, &mut ifr, "SIOCGIFFLAGS")?;
        // SAFETY: SIOCGIFFLAGS filled the flags member.
        Ok(unsafe { ifr.ifr_ifru.ifru_flags } as u16 as i32)
    }

    /// Sets or clears `bits` in the interface flags.
    pub(crate) fn change_flags(&self, bits: i32, on: bool) -> Result<()> {
        let cur = self.flags()?;
        let new = if on { cur | bits } else { cur & !bits };
        if new == cur {
            return Ok(());
        }
        let mut ifr = ifreq(&self.name);
        ifr.ifr_ifru.ifru_flags = new as u16 as libc::c_short;
        self.ioctl(libc::SIOCSIFFLAGS, &mut ifr, "SIOCSIFFLAGS")
    }

    /// The hardware address.
    pub(crate) fn mac(&self) -> Result<MacAddr> {
        let mut ifr = ifreq(&self.name);
        self.ioctl(libc::SIOCGIFHWADDR, &mut ifr, "SIOCGIFHWADDR")?;
        // SAFETY: SIOCGIFHWADDR filled the hwaddr member.
        let sa = unsafe { ifr.ifr_ifru.ifru_hwaddr };
        let mut m = [0u8; 6];
        for (d, s) in m.iter_mut().zip(sa.sa_data.iter()) {
            *d = *s as u8;
        }
        Ok(MacAddr(m))
    }

    /// Sets the hardware address.
    pub(crate) fn set_mac(&self, mac: MacAddr) -> Result<()> {
        let mut ifr = ifreq(&self.name);
        // SAFETY: writing a plain-data union member.
        let sa = unsafe { &mut ifr.ifr_ifru.ifru_hwaddr };
        sa.sa_family = libc::ARPHRD_ETHER;
        for (d, s) in sa.sa_data.iter_mut().zip(mac.0) {
            *d = s as libc::c_char;
        }
        self.ioctl(libc::SIOCSIFHWADDR, &mut ifr, "SIOCSIFHWADDR")
    }

    /// The MTU.
    pub(crate) fn mtu(&self) -> Result<u32> {
        let mut ifr = ifreq(&self.name);
        self.ioctl(libc::SIOCGIFMTU, &mut ifr, "SIOCGIFMTU")?;
        // SAFETY: SIOCGIFMTU filled the mtu member.
        Ok(unsafe { ifr.ifr_ifru.ifru_mtu } as u32)
    }

    /// Sets the MTU.
    pub(crate) fn set_mtu(&self, mtu: u32) -> Result<()> {
        let mut ifr = ifreq(&self.name);
        ifr.ifr_ifru.ifru_mtu = mtu as i32;
        self.ioctl(libc::SIOCSIFMTU, &mut ifr, "SIOCSIFMTU")
    }

    /// Link speed in Mb/s from ethtool (`None` when the driver does not say).
    pub(crate) fn ethtool_speed(&self) -> Option<(u32, bool)> {
        // struct ethtool_cmd (ETHTOOL_GSET): cmd u32, supported u32, advertising u32, speed u16, duplex u8, ...,
        // speed_hi u16 at offset 28; 44 bytes in all.
        let mut cmd = [0u32; 11];
        cmd[0] = 0x0000_0001; // ETHTOOL_GSET
        let mut ifr = ifreq(&self.name);
        ifr.ifr_ifru.ifru_data = cmd.as_mut_ptr().cast();
        // SAFETY: SIOCETHTOOL with ETHTOOL_GSET writes at most sizeof(struct ethtool_cmd) = 44 bytes into `cmd`,
        // which lives for the call.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SIOCETHTOOL as _, &mut ifr as *mut libc::ifreq) };
        if rc < 0 {
            return None;
        }
        let bytes: Vec<u8> = cmd.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let lo = u16::from_ne_bytes([bytes[12], bytes[13]]) as u32;
        let hi = u16::from_ne_bytes([bytes[28], bytes[29]]) as u32;
        let speed = (hi << 16) | lo;
        let full = bytes[14] == 1;
        (speed != 0 && speed != u32::MAX && speed != 0xffff).then_some((speed, full))
    }

    /// Link state: up when the interface is up and running (carrier), speed from ethtool, then sysfs, else
    /// `default_speed`.
    pub(crate) fn link(&self, default_speed: u32) -> LinkStatus {
        let Ok(flags) = self.flags() else {
            return LinkStatus::default();
        };
        if flags & libc::IFF_UP == 0 || flags & libc::IFF_RUNNING == 0 {
            return LinkStatus::default();
        }
        let (speed, full) = self
            .ethtool_speed()
            .or_else(|| {
                let s = std::fs::read_to_string(format!("/sys/class/net/{}/speed", self.name)).ok()?;
                let v: i64 = s.trim().parse().ok()?;
                (v > 0).then_some((v as u32, true))
            })
            .unwrap_or((default_speed, true));
        LinkStatus { up: true, speed_mbps: speed, full_duplex: full, autoneg: false }
    }

    // What a port over a kernel interface does for the EthDev calls that are the interface's own settings: the
    // kernel holds the setting, `state` the port's view of it.

    /// `configure` after the port's own checks: the port state, then the interface's MTU where it differs.
    pub(crate) fn configure_port(&self, state: &mut PortState, config: &PortConfig) -> Result<()> {
        state.configure(config)?;
        if u32::from(config.mtu) != self.mtu()? {
            self.set_mtu(u32::from(config.mtu))?;
        }
        Ok(())
    }

    /// `set_mac_addr`: a unicast address only.
    pub(crate) fn set_port_mac(&self, state: &mut PortState, mac: MacAddr) -> Result<()> {
        if mac.is_multicast() || mac == MacAddr::ZERO {
            return Err(state.invalid(format!("{mac} is not a unicast address")));
        }
        self.set_mac(mac)?;
        state.mac = mac;
        Ok(())
    }

    /// `set_promiscuous` through the interface flag.
    pub(crate) fn set_port_promiscuous(&self, state: &mut PortState, on: bool) -> Result<()> {
        self.change_flags(libc::IFF_PROMISC, on)?;
        state.promiscuous = on;
        Ok(())
    }

    /// `set_allmulticast` through the interface flag.
    pub(crate) fn set_port_allmulticast(&self, state: &mut PortState, on: bool) -> Result<()> {
        self.change_flags(libc::IFF_ALLMULTI, on)?;
        state.allmulticast = on;
        Ok(())
    }

    /// `set_mtu`: checked against the port's limits, then set on the interface.
    pub(crate) fn set_port_mtu(&self, state: &mut PortState, mtu: u16) -> Result<()> {
        state.info.check_mtu(mtu)?;
        self.set_mtu(u32::from(mtu))?;
        state.config.mtu = mtu;
        Ok(())
    }
}

/// Copies `data` into a fresh buffer from `pool`, chaining further buffers when it exceeds one data room. `None`
/// when the pool runs dry (nothing is kept).
#[inline]
pub(crate) fn mbuf_from_bytes(pool: &Mempool, data: &[u8]) -> Option<Mbuf> {
    let mut head = pool.alloc()?;
    let room = head.tailroom() as usize;
    let first = data.len().min(room);
    head.append(first as u16)?.copy_from_slice(&data[..first]);
    let mut rest = &data[first..];
    while !rest.is_empty() {
        let mut seg = pool.alloc()?;
        let n = rest.len().min(seg.tailroom() as usize);
        if n == 0 {
            return None;
        }
        seg.append(n as u16)?.copy_from_slice(&rest[..n]);
        head.chain(seg);
        rest = &rest[n..];
    }
    Some(head)
}

/// Random bytes from the kernel (for locally administered MAC addresses).
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    // SAFETY: getrandom writes at most N bytes into `out`.
    let n = unsafe { libc::getrandom(out.as_mut_ptr().cast(), N, 0) };
    if n != N as isize {
        // Fall back on time and pid; uniqueness, not secrecy, is what matters here.
        let seed = crate::pcap_file::now_ns() ^ ((std::process::id() as u64) << 32);
        for (i, b) in out.iter_mut().enumerate() {
            *b = (seed >> ((i % 8) * 8)) as u8 ^ (i as u8).wrapping_mul(151);
        }
    }
    out
}

/// A random locally administered unicast MAC address.
pub(crate) fn random_mac() -> MacAddr {
    let mut m = random_bytes::<6>();
    m[0] = (m[0] & 0xfe) | 0x02;
    MacAddr(m)
}
