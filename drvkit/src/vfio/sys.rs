//! The syscall seam: every system call the VFIO code makes goes through [`VfioSys`], so the logic above it
//! (argsz dances, capability parsing, error mapping, DMA range checks) runs against [`super::fake::FakeVfio`] in
//! tests and against the kernel ([`RealSys`]) in production. This file and the BAR accessors hold the VFIO
//! code's `unsafe`.

use std::ffi::CString;
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::RawFd;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

/// The argument of an ioctl.
#[derive(Debug)]
pub enum IoctlArg<'a> {
    /// No argument (`VFIO_GET_API_VERSION`, `VFIO_DEVICE_RESET`).
    None,
    /// An integer passed by value (`VFIO_CHECK_EXTENSION`, `VFIO_SET_IOMMU`).
    Value(u64),
    /// A buffer passed by pointer, read and written by the kernel (structs with `argsz`, a device name).
    Buf(&'a mut [u8]),
}

/// The system calls VFIO needs. Implementations must be usable from any thread.
pub trait VfioSys: Send + Sync + fmt::Debug {
    /// `open(path, O_RDWR | O_CLOEXEC)`.
    fn open(&self, path: &Path) -> io::Result<RawFd>;
    /// True when `path` exists (a `/dev/vfio` node).
    fn exists(&self, path: &Path) -> bool;
    /// `close(fd)`.
    fn close(&self, fd: RawFd);
    /// `ioctl(fd, request, arg)`; returns the non-negative result.
    fn ioctl(&self, fd: RawFd, request: u64, arg: IoctlArg<'_>) -> io::Result<i32>;
    /// `pread(fd, buf, offset)`.
    fn pread(&self, fd: RawFd, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// `pwrite(fd, buf, offset)`.
    fn pwrite(&self, fd: RawFd, buf: &[u8], offset: u64) -> io::Result<usize>;
    /// `mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset)`, unmapped when the [`Mapping`] drops.
    fn mmap(&self, fd: RawFd, len: usize, offset: u64) -> io::Result<Mapping>;
    /// `eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)`: an owned, real file descriptor (fakes create real ones too).
    fn eventfd(&self) -> io::Result<std::os::fd::OwnedFd>;
}

/// The kernel.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealSys;

impl RealSys {
    /// The kernel, shareable.
    pub fn shared() -> Arc<dyn VfioSys> {
        Arc::new(RealSys)
    }
}

fn cvt(ret: libc::c_int) -> io::Result<i32> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

impl VfioSys for RealSys {
    fn open(&self, path: &Path) -> io::Result<RawFd> {
        let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: c is a valid NUL-terminated path; open has no memory effects beyond reading it.
        cvt(unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) })
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn close(&self, fd: RawFd) {
        // SAFETY: the caller owns fd (the `Fd` wrapper closes each descriptor once).
        unsafe { libc::close(fd) };
    }

    fn ioctl(&self, fd: RawFd, request: u64, arg: IoctlArg<'_>) -> io::Result<i32> {
        // The request type is c_ulong on glibc and c_int on musl; VFIO numbers fit both.
        let ret = match arg {
            // SAFETY: VFIO ioctls without an argument touch no user memory.
            IoctlArg::None => unsafe { libc::ioctl(fd, request as _) },
            // SAFETY: ioctls taking an integer by value touch no user memory.
            IoctlArg::Value(v) => unsafe { libc::ioctl(fd, request as _, v as libc::c_ulong) },
            // SAFETY: the buffer is valid for its length; VFIO ioctls read and write at most `argsz` bytes, which the
            // callers set to the buffer's length (or pass a NUL-terminated string / a 4-byte fd).
            IoctlArg::Buf(buf) => unsafe { libc::ioctl(fd, request as _, buf.as_mut_ptr()) },
        };
        cvt(ret)
    }

    fn pread(&self, fd: RawFd, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        // SAFETY: buf is valid for writes of its length.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), offset as libc::off_t) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    fn pwrite(&self, fd: RawFd, buf: &[u8], offset: u64) -> io::Result<usize> {
        // SAFETY: buf is valid for reads of its length.
        let n = unsafe { libc::pwrite(fd, buf.as_ptr().cast(), buf.len(), offset as libc::off_t) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    fn mmap(&self, fd: RawFd, len: usize, offset: u64) -> io::Result<Mapping> {
        // MmapRaw: a shared read-write mapping handed out as a raw pointer (device registers are never turned into
        // references), unmapped on drop.
        let map = memmap2::MmapOptions::new().offset(offset).len(len).map_raw(fd)?;
        Ok(Mapping {
            ptr: NonNull::new(map.as_mut_ptr()).ok_or_else(|| io::Error::other("mmap returned NULL"))?,
            len,
            _owner: Box::new(map),
        })
    }

    fn eventfd(&self) -> io::Result<std::os::fd::OwnedFd> {
        // SAFETY: eventfd takes no pointers.
        let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
        // SAFETY: fd is a fresh descriptor nobody else owns.
        Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
    }
}

/// A mapped part of a device fd: `len` bytes at [`Mapping::as_ptr`], valid until the mapping drops.
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    /// What keeps the memory alive: the kernel mapping (unmapped on drop) or a fake device's registers.
    _owner: Box<dyn std::any::Any + Send + Sync>,
}

impl Mapping {
    /// A mapping of memory that `owner` keeps alive (a fake kernel's device memory).
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay valid for volatile reads and writes from any thread for as long as `owner` lives,
    /// and writes through it must be allowed (interior mutability, e.g. atomics).
    pub unsafe fn shared(ptr: NonNull<u8>, len: usize, owner: impl std::any::Any + Send + Sync) -> Self {
        Mapping { ptr, len, _owner: Box::new(owner) }
    }

    /// The first byte.
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty mapping.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl fmt::Debug for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Mapping({:p}, {:#x})", self.ptr, self.len)
    }
}

// SAFETY: a Mapping is a raw view of device (or fake device) memory that is only accessed with volatile loads and
// stores by its users; it holds no thread-bound state, and its owner is Send + Sync.
unsafe impl Send for Mapping {}
// SAFETY: as above; &Mapping hands out only the pointer and length.
unsafe impl Sync for Mapping {}

/// A file descriptor owned through a [`VfioSys`], closed on drop.
pub(crate) struct Fd {
    pub(crate) sys: Arc<dyn VfioSys>,
    pub(crate) raw: RawFd,
}

impl fmt::Debug for Fd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fd({})", self.raw)
    }
}

impl Fd {
    pub(crate) fn ioctl(&self, request: u64, arg: IoctlArg<'_>) -> io::Result<i32> {
        self.sys.ioctl(self.raw, request, arg)
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        self.sys.close(self.raw);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};
    use std::os::fd::AsRawFd;

    /// The kernel path maps the asked-for page of the file, shared: a write through the mapping reaches the file.
    #[test]
    fn real_mmap_maps_the_offset_shared_and_unmaps() {
        let page = 4096usize;
        let path = std::env::temp_dir().join(format!("pktio-mmap-{}", std::process::id()));
        let mut file =
            std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        file.write_all(&vec![0u8; 2 * page]).unwrap();
        file.seek(SeekFrom::Start(page as u64)).unwrap();
        file.write_all(&0x1234_5678u32.to_ne_bytes()).unwrap();

        let map = RealSys.mmap(file.as_raw_fd(), page, page as u64).unwrap();
        assert_eq!(map.len(), page);
        let word = map.as_ptr().as_ptr().cast::<u32>();
        // SAFETY: the mapping is live, page-sized and page-aligned.
        assert_eq!(unsafe { word.read_volatile() }, 0x1234_5678, "the second page of the file");
        // SAFETY: as above; the mapping is writable.
        unsafe { word.add(1).write_volatile(0xdead_beef) };
        drop(map);

        let mut back = [0u8; 4];
        assert_eq!(RealSys.pread(file.as_raw_fd(), &mut back, page as u64 + 4).unwrap(), 4);
        assert_eq!(u32::from_ne_bytes(back), 0xdead_beef, "MAP_SHARED: the write reached the file");
    }
}
