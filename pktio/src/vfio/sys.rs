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
    /// `mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset)`.
    fn mmap(&self, fd: RawFd, len: usize, offset: u64) -> io::Result<NonNull<u8>>;
    /// `munmap(ptr, len)`.
    ///
    /// # Safety
    /// `ptr..ptr+len` must be a mapping returned by [`VfioSys::mmap`] of this object that nothing uses any more.
    unsafe fn munmap(&self, ptr: NonNull<u8>, len: usize);
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

    fn mmap(&self, fd: RawFd, len: usize, offset: u64) -> io::Result<NonNull<u8>> {
        // SAFETY: a fresh shared mapping chosen by the kernel; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned NULL"))
    }

    unsafe fn munmap(&self, ptr: NonNull<u8>, len: usize) {
        // SAFETY: the caller guarantees this is our mapping and unused.
        unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
    }

    fn eventfd(&self) -> io::Result<std::os::fd::OwnedFd> {
        // SAFETY: eventfd takes no pointers.
        let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
        // SAFETY: fd is a fresh descriptor nobody else owns.
        Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
    }
}

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
