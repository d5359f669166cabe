//! Just enough of the VFIO ioctl interface and sysfs for the probe test (independent of drvkit's VFIO layer,
//! so the harness can check the guest set-up on its own).

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// `_IO(';', 100 + n)`.
const fn vfio_io(n: u64) -> u64 {
    (b';' as u64) << 8 | (100 + n)
}
pub const VFIO_GET_API_VERSION: u64 = vfio_io(0);
pub const VFIO_CHECK_EXTENSION: u64 = vfio_io(1);
pub const VFIO_GROUP_GET_STATUS: u64 = vfio_io(3);
pub const VFIO_API_VERSION: i32 = 0;
pub const VFIO_TYPE1V2_IOMMU: u64 = 3;
pub const VFIO_GROUP_FLAGS_VIABLE: u32 = 1;

#[repr(C)]
#[derive(Default)]
pub struct GroupStatus {
    pub argsz: u32,
    pub flags: u32,
}
const _: () = assert!(std::mem::size_of::<GroupStatus>() == 8);

/// Opens a device node read-write.
pub fn open_rw(path: &str) -> io::Result<OwnedFd> {
    let c = CString::new(path).map_err(io::Error::other)?;
    // SAFETY: a valid NUL-terminated path; the returned fd is checked and owned.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a freshly opened descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// An ioctl with an integer argument.
pub fn ioctl_val(fd: &OwnedFd, req: u64, arg: u64) -> io::Result<i32> {
    // SAFETY: the VFIO ioctls used with this take an integer argument, no pointer.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), req as _, arg) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `VFIO_GROUP_GET_STATUS`.
pub fn group_status(fd: &OwnedFd) -> io::Result<u32> {
    let mut st = GroupStatus { argsz: std::mem::size_of::<GroupStatus>() as u32, flags: 0 };
    // SAFETY: st is a live, correctly sized vfio_group_status the kernel writes into.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), VFIO_GROUP_GET_STATUS as _, &mut st as *mut GroupStatus) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.flags)
}

/// A PCI function as sysfs shows it.
#[derive(Debug, Clone)]
pub struct PciFn {
    pub bdf: String,
    pub vendor: u16,
    pub device: u16,
    pub driver: Option<String>,
    pub group: Option<u32>,
}

fn hex_file(p: &Path) -> Option<u16> {
    let s = fs::read_to_string(p).ok()?;
    u16::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

fn link_name(p: &Path) -> Option<String> {
    fs::read_link(p).ok()?.file_name().map(|s| s.to_string_lossy().into_owned())
}

/// Every PCI function, sorted by address.
pub fn pci_functions() -> io::Result<Vec<PciFn>> {
    let mut v = Vec::new();
    for e in fs::read_dir("/sys/bus/pci/devices")? {
        let e = e?;
        let p = e.path();
        v.push(PciFn {
            bdf: e.file_name().to_string_lossy().into_owned(),
            vendor: hex_file(&p.join("vendor")).unwrap_or(0),
            device: hex_file(&p.join("device")).unwrap_or(0),
            driver: link_name(&p.join("driver")),
            group: link_name(&p.join("iommu_group")).and_then(|g| g.parse().ok()),
        });
    }
    v.sort_by(|a, b| a.bdf.cmp(&b.bdf));
    Ok(v)
}

/// The value of `key=` on the kernel command line.
pub fn cmdline_opt(key: &str) -> Option<String> {
    let s = fs::read_to_string("/proc/cmdline").ok()?;
    s.split_whitespace().find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')).map(str::to_string))
}

/// The kernel log from a point on (`/dev/kmsg`, opened at its end): what the kernel logs while a test runs, e.g.
/// the DMAR fault report of a blocked DMA, read as whole records (the console no longer shows them, see init.sh).
pub struct KernelLog {
    f: fs::File,
}

impl KernelLog {
    /// Opens the log positioned after its last record.
    pub fn from_now() -> io::Result<KernelLog> {
        use std::io::{Seek, SeekFrom};
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open("/dev/kmsg")?;
        f.seek(SeekFrom::End(0))?;
        Ok(KernelLog { f })
    }

    /// The messages logged since the last call (or the opening), without their `prio,seq,ts,flags;` prefix.
    pub fn new_messages(&mut self) -> Vec<String> {
        use std::io::Read;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 8192];
        loop {
            match self.f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let rec = String::from_utf8_lossy(&buf[..n]);
                    let first = rec.lines().next().unwrap_or("");
                    out.push(first.split_once(';').map_or(first, |(_, m)| m).to_string());
                }
                // EPIPE: records were overwritten before we read them; the next read goes on from the oldest.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(_) => break, // EAGAIN: nothing more for now
            }
        }
        out
    }
}
