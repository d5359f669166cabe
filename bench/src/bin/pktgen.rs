//! Kernel-side traffic source for the af_packet benchmark: sends 64-byte Ethernet frames (EtherType 0x88B5, local
//! experimental, so no protocol stack handles them) on raw AF_PACKET sockets with `sendmmsg`, in batches, round
//! robin over the interfaces given, until the time is up. Pinned to one CPU.
//!
//! Usage: `pktgen [--seconds S] [--cpu C] [--batch B] IFACE...`. Prints one `RESULT test=pktgen ...` line.

use std::time::{Duration, Instant};

use bench::pin_to_cpu;

const FRAME_LEN: usize = 60; // 64 on the wire with the FCS

struct Sock {
    fd: libc::c_int,
}

impl Drop for Sock {
    fn drop(&mut self) {
        // SAFETY: fd is an open socket owned by this value.
        unsafe { libc::close(self.fd) };
    }
}

fn open(iface: &str) -> std::io::Result<Sock> {
    let name = std::ffi::CString::new(iface).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a valid NUL-terminated name.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        return Err(std::io::Error::last_os_error());
    }
    // Protocol 0: this socket sends only, it receives nothing.
    // SAFETY: plain socket(2) call.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let sock = Sock { fd };
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid starting value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: `sll` is a sockaddr_ll of the length given.
    let rc = unsafe {
        libc::bind(
            fd,
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let one: libc::c_int = 1;
    // PACKET_QDISC_BYPASS = 20: straight to the driver, as the forwarders' TX does. Best effort.
    // SAFETY: an int option of the size given.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            20,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    Ok(sock)
}

fn main() {
    let mut seconds = 10.0f64;
    let mut cpu = 0usize;
    let mut batch = 64usize;
    let mut ifaces = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut num = |what: &str| -> f64 {
            it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
                eprintln!("pktgen: {what} needs a number");
                std::process::exit(2)
            })
        };
        match a.as_str() {
            "--seconds" => seconds = num("--seconds"),
            "--cpu" => cpu = num("--cpu") as usize,
            "--batch" => batch = (num("--batch") as usize).clamp(1, 1024),
            s => ifaces.push(s.to_string()),
        }
    }
    if ifaces.is_empty() {
        eprintln!("usage: pktgen [--seconds S] [--cpu C] [--batch B] IFACE...");
        std::process::exit(2);
    }
    if let Err(e) = pin_to_cpu(cpu) {
        eprintln!("pktgen: cannot pin to CPU {cpu}: {e}");
    }
    let socks: Vec<Sock> = ifaces
        .iter()
        .map(|i| {
            open(i).unwrap_or_else(|e| {
                eprintln!("pktgen: {i}: {e}");
                std::process::exit(1)
            })
        })
        .collect();

    let mut frame = [0u8; FRAME_LEN];
    frame[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
    frame[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
    frame[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    let mut iov = libc::iovec { iov_base: frame.as_mut_ptr().cast(), iov_len: FRAME_LEN };
    // SAFETY: mmsghdr is plain data; all-zero is valid (no name, no control data).
    let mut msgs: Vec<libc::mmsghdr> = (0..batch).map(|_| unsafe { std::mem::zeroed() }).collect();
    for m in msgs.iter_mut() {
        m.msg_hdr.msg_iov = &mut iov;
        m.msg_hdr.msg_iovlen = 1;
    }

    let (mut sent, mut errors) = (0u64, 0u64);
    let start = Instant::now();
    let end = Duration::from_secs_f64(seconds);
    'outer: loop {
        for s in &socks {
            // SAFETY: `msgs` holds `batch` headers that each point at `iov`, which points at `frame`; all live
            // for the call.
            let n = unsafe { libc::sendmmsg(s.fd, msgs.as_mut_ptr(), batch as libc::c_uint, 0) };
            if n > 0 {
                sent += n as u64;
            } else {
                errors += 1;
            }
        }
        if start.elapsed() >= end {
            break 'outer;
        }
    }
    let wall = start.elapsed().as_secs_f64();
    println!(
        "RESULT test=pktgen sent={sent} pps={:.0} send_errors={errors} seconds={wall:.3} ifaces={}",
        sent as f64 / wall,
        ifaces.join(",")
    );
}
