//! What each file descriptor number is, readable from any thread (and from signal handlers) without a lock, so
//! that a call on a kernel descriptor goes straight to libc: one atomic byte per descriptor, written only by the
//! thread that holds the state lock.

use std::sync::atomic::{AtomicU8, Ordering};

/// Descriptors we track: Linux's default `fs.nr_open`. A stack socket never gets a number above it (the
/// reserved descriptor is refused with EMFILE); kernel descriptors above it pass through.
pub const MAX_FD: usize = 1 << 20;

/// The kinds of descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Anything of the kernel's, untouched.
    Kernel = 0,
    /// A kernel AF_INET socket that may still become a stack socket (at bind or connect).
    Pending = 1,
    /// A stack socket: the number is a reserved kernel descriptor (an eventfd).
    Stack = 2,
    /// An epoll instance with stack sockets in its interest list.
    Epoll = 3,
}

static KINDS: [AtomicU8; MAX_FD] = [const { AtomicU8::new(0) }; MAX_FD];

/// The kind of `fd` (kernel for numbers out of range).
#[inline(always)]
pub fn kind(fd: i32) -> Kind {
    match KINDS.get(fd as u32 as usize).map(|k| k.load(Ordering::Acquire)) {
        Some(1) => Kind::Pending,
        Some(2) => Kind::Stack,
        Some(3) => Kind::Epoll,
        _ => Kind::Kernel,
    }
}

/// Whether `fd` is a kernel descriptor we know nothing about (the fast path of every call).
#[inline(always)]
pub fn is_kernel(fd: i32) -> bool {
    kind(fd) == Kind::Kernel
}

/// Records the kind of `fd`; false if the number is beyond [`MAX_FD`].
pub fn set(fd: i32, kind: Kind) -> bool {
    match KINDS.get(fd as u32 as usize) {
        Some(k) => {
            k.store(kind as u8, Ordering::Release);
            true
        }
        None => kind == Kind::Kernel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_out_of_range_numbers_are_the_kernels() {
        assert_eq!(kind(5000), Kind::Kernel);
        assert!(set(5000, Kind::Stack));
        assert_eq!(kind(5000), Kind::Stack);
        assert!(!is_kernel(5000));
        assert!(set(5000, Kind::Epoll));
        assert_eq!(kind(5000), Kind::Epoll);
        assert!(set(5000, Kind::Kernel));
        assert!(is_kernel(5000));
        assert_eq!(kind(-1), Kind::Kernel);
        assert_eq!(kind(MAX_FD as i32), Kind::Kernel);
        assert!(!set(MAX_FD as i32, Kind::Stack), "no stack socket beyond the table");
        assert!(set(MAX_FD as i32, Kind::Kernel));
    }
}
