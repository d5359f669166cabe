//! The one lock over the library's state, and who holds it. A spin lock rather than a mutex: it must be reset in
//! a forked child (whose forking thread holds it through `fork`, see `exports::fork`), and a signal handler that
//! calls into a stack socket while its thread is inside the library must be refused rather than deadlock.

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

thread_local! {
    /// This thread's id, cached (reset in a forked child, whose thread has a new one).
    static TID: Cell<i32> = const { Cell::new(0) };
}

/// The calling thread's kernel id.
pub fn tid() -> i32 {
    TID.with(|t| {
        let mut v = t.get();
        if v == 0 {
            // SAFETY: gettid has no preconditions.
            v = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
            t.set(v);
        }
        v
    })
}

/// Forgets the cached thread id (in a forked child).
pub fn reset_tid() {
    TID.with(|t| t.set(0));
}

/// A value behind a spin lock that knows its holder.
pub struct SpinCell<T> {
    locked: AtomicBool,
    holder: AtomicI32,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through `lock`, which admits one thread at a time.
unsafe impl<T: Send> Sync for SpinCell<T> {}

/// Why the lock was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reentered;

impl<T> SpinCell<T> {
    /// An unlocked cell.
    pub const fn new(value: T) -> Self {
        SpinCell { locked: AtomicBool::new(false), holder: AtomicI32::new(0), value: UnsafeCell::new(value) }
    }

    /// Runs `f` with the value, waiting for another thread that holds it; [`Reentered`] if this thread holds it
    /// already (a signal handler interrupted it inside the library).
    pub fn lock<R>(&self, f: impl FnOnce(&mut T) -> R) -> Result<R, Reentered> {
        let me = tid();
        if self.holder.load(Ordering::Relaxed) == me {
            return Err(Reentered);
        }
        self.acquire(me);
        struct Release<'a>(&'a AtomicBool, &'a AtomicI32);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.1.store(0, Ordering::Relaxed);
                self.0.store(false, Ordering::Release);
            }
        }
        let _release = Release(&self.locked, &self.holder);
        // SAFETY: we hold the lock until `_release` drops, so no other reference to the value exists.
        Ok(f(unsafe { &mut *self.value.get() }))
    }

    fn acquire(&self, me: i32) {
        let mut spins = 0u32;
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            spins += 1;
            if spins % 64 == 0 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        self.holder.store(me, Ordering::Relaxed);
    }

    /// Whether the calling thread holds the lock (a call the library itself makes, e.g. while bringing the port
    /// up, comes back through the exported symbols).
    pub fn held_here(&self) -> bool {
        self.holder.load(Ordering::Relaxed) == tid()
    }

    /// Takes the lock and keeps it (before `fork`: the child must not inherit it held by a thread it lacks).
    pub fn hold(&self) {
        self.acquire(tid());
    }

    /// Releases a lock taken with [`Self::hold`] (in the parent after `fork`, and in the child).
    pub fn release(&self) {
        self.holder.store(0, Ordering::Relaxed);
        self.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_holder_is_refused_and_other_threads_wait() {
        let cell = Arc::new(SpinCell::new(0u64));
        let nested = cell.lock(|v| {
            *v += 1;
            cell.lock(|_| ()).err()
        });
        assert_eq!(nested, Ok(Some(Reentered)));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let c = cell.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        c.lock(|v| *v += 1).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(cell.lock(|v| *v).unwrap(), 20_001);
    }

    #[test]
    fn hold_and_release_bracket_a_fork() {
        let cell = SpinCell::new(1);
        cell.hold();
        assert_eq!(cell.lock(|_| ()), Err(Reentered), "held by this thread");
        cell.release();
        assert_eq!(cell.lock(|v| *v), Ok(1));
    }
}
