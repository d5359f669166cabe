//! Logical cores ("lcores"): small integer ids that threads claim, so per-lcore state (mempool caches) can be
//! reached without locks. A thread holds at most one id, an id belongs to at most one thread at a time.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};

/// The largest number of lcores (ids `0..MAX_LCORES`).
pub const MAX_LCORES: usize = 128;

static CLAIMED: [AtomicBool; MAX_LCORES] = [const { AtomicBool::new(false) }; MAX_LCORES];

thread_local! {
    static CURRENT: Cell<u32> = const { Cell::new(u32::MAX) };
}

/// Why an lcore id could not be claimed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LcoreError {
    /// The id is out of range.
    #[error("lcore {0} is out of range: at most {MAX_LCORES} lcores (ids 0..{MAX_LCORES})", MAX_LCORES = MAX_LCORES)]
    OutOfRange(u32),
    /// Another thread holds this id.
    #[error("lcore {0} is already in use by another thread")]
    InUse(u32),
    /// This thread already holds an id.
    #[error("this thread is already lcore {0}")]
    ThreadAlreadyBound(u32),
}

/// Proof that the current thread is lcore `id`; the id is released when it drops. Not `Send`: the binding belongs
/// to the thread that made it.
#[derive(Debug)]
pub struct LcoreGuard {
    id: u32,
    _not_send: PhantomData<*const ()>,
}

impl LcoreGuard {
    /// The lcore id held.
    pub fn id(&self) -> u32 {
        self.id
    }
}

impl Drop for LcoreGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(u32::MAX));
        // Release: whatever this thread did to per-lcore state happens-before the next claimer's use.
        CLAIMED[self.id as usize].store(false, Ordering::Release);
    }
}

/// Makes the current thread lcore `id` until the guard drops.
pub fn bind_current_thread(id: u32) -> Result<LcoreGuard, LcoreError> {
    if id as usize >= MAX_LCORES {
        return Err(LcoreError::OutOfRange(id));
    }
    if let Some(current) = current() {
        return Err(LcoreError::ThreadAlreadyBound(current));
    }
    if CLAIMED[id as usize].compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        return Err(LcoreError::InUse(id));
    }
    CURRENT.with(|c| c.set(id));
    Ok(LcoreGuard { id, _not_send: PhantomData })
}

/// The current thread's lcore id, if it holds one.
#[inline]
pub fn current() -> Option<u32> {
    let id = CURRENT.with(|c| c.get());
    (id != u32::MAX).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_exclusive_and_released() {
        let guard = bind_current_thread(100).unwrap();
        assert_eq!(current(), Some(100));
        assert_eq!(bind_current_thread(101).unwrap_err(), LcoreError::ThreadAlreadyBound(100));
        std::thread::spawn(|| assert_eq!(bind_current_thread(100).unwrap_err(), LcoreError::InUse(100)))
            .join()
            .unwrap();
        drop(guard);
        assert_eq!(current(), None);
        std::thread::spawn(|| assert_eq!(bind_current_thread(100).unwrap().id(), 100)).join().unwrap();
        assert_eq!(bind_current_thread(MAX_LCORES as u32).unwrap_err(), LcoreError::OutOfRange(MAX_LCORES as u32));
    }
}
