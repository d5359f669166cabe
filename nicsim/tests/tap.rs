//! The TAP wire ([`X540Port::wire_to_tap`]) in a private network namespace of a test thread: a frame the kernel
//! sends out of the TAP reaches the model's RX (here: dropped as RX-disabled, no driver runs); unwiring removes the
//! interface. The kernel-to-driver-and-back path is in testpmd-rs/tests/netns.rs.
//!
//! Needs root and /dev/net/tun; without them the test says why and passes, or fails when NETNS_TESTS_REQUIRED=1
//! (scripts/test.sh sets it).

use std::ffi::CString;

use nicsim::{X540Config, X540};

#[test]
fn kernel_frames_reach_the_model_through_a_tap() {
    let why = "needs root and /dev/net/tun (run as root; modprobe tun)";
    if !testkit::require(
        "NETNS_TESTS_REQUIRED",
        testkit::is_root() && std::path::Path::new("/dev/net/tun").exists(),
        why,
    ) {
        return;
    }
    // A thread of its own, moved into a fresh network namespace: the host's interfaces are never touched.
    std::thread::spawn(|| {
        // SAFETY: unshare(2) with a constant flag; affects only this thread.
        assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "unshare: {}", std::io::Error::last_os_error());
        let (_bar, port) = X540::new(X540Config::default());
        let name = port.wire_to_tap("nstap%d").unwrap();
        assert!(name.starts_with("nstap"), "{name}");
        let cname = CString::new(name.clone()).unwrap();
        // SAFETY: a NUL-terminated name that outlives the call.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        assert_ne!(ifindex, 0, "{name} exists");

        // SAFETY: socket(2) with constant arguments; checked below.
        let s = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, (libc::ETH_P_ALL as u16).to_be() as i32) };
        assert!(s >= 0, "AF_PACKET socket: {}", std::io::Error::last_os_error());
        // SAFETY: sockaddr_ll is plain old data.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_ifindex = ifindex as i32;
        sll.sll_halen = 6;
        // A 42-byte ARP request, as the kernel would send it (unpadded).
        let mut arp = vec![0xff; 6];
        arp.extend_from_slice(&[0x02, 0, 0, 0, 0, 1, 0x08, 0x06]);
        arp.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2]);
        assert_eq!(arp.len(), 42);
        // SAFETY: sends arp.len() bytes from a live buffer to a valid, initialised address.
        let n = unsafe {
            libc::sendto(
                s,
                arp.as_ptr().cast(),
                arp.len(),
                0,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        assert_eq!(n, 42, "sendto: {}", std::io::Error::last_os_error());
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(s) };

        // The model pumps the TAP when it steps; RX is not enabled (no driver), so the frame is dropped as such
        // (the kernel may send IPv6 frames of its own too: at least one).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while port.counters().rx_disabled == 0 && std::time::Instant::now() < deadline {
            port.step();
        }
        let c = port.counters();
        assert!(c.rx_disabled >= 1 && c.rx_errors == 0, "{c:?}");
        port.assert_no_faults();

        port.unwire();
        // SAFETY: as above.
        assert_eq!(unsafe { libc::if_nametoindex(cname.as_ptr()) }, 0, "{name} is gone after unwire");
    })
    .join()
    .unwrap();
}
