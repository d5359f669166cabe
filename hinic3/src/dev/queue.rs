//! Queue handles. A claimed ring goes back to its port when the handle drops: the port has no per-queue disable to
//! send from a drop, so the ring's memory and posted buffers must live until the port's stop has drained the SQs and
//! flushed the RQs (docs/hw/hinic3.md §14.4, §14.6).

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};

use drvkit::bar::RegisterSpace;
use mempool::PacketBatch;
use pktio::{RxQueue, TxQueue};

use crate::rxtx::RxRing;
use crate::rxtx::TxRing;

/// Where a port keeps a ring while no handle holds it.
pub(crate) type Slot<T> = Arc<Mutex<Option<T>>>;

/// A slot holding `ring`.
pub(crate) fn slot<T>(ring: T) -> Slot<T> {
    Arc::new(Mutex::new(Some(ring)))
}

/// The slot's content (a poisoned lock still holds a whole ring: a ring is only ever moved in or out).
pub(crate) fn lock<T>(s: &Slot<T>) -> MutexGuard<'_, Option<T>> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// A ring that gives up its share of the queue's counters when its handle drops: the port state counts a handle as
/// alive while a second reference to the counters is ([`pktio::PortState::stop`]); the ring is not used for traffic
/// again, and the counts stay in the port's reference.
pub trait Homed {
    /// Drops the ring's reference to its queue's counters.
    fn detach_stats(&mut self);
}

impl<D: RegisterSpace> Homed for RxRing<D> {
    fn detach_stats(&mut self) {
        self.detach_stats();
    }
}

impl<D: RegisterSpace> Homed for TxRing<D> {
    fn detach_stats(&mut self) {
        self.detach_stats();
    }
}

/// A ring handed out by the port; dropping it puts the ring back into the port's slot.
pub struct QueueHandle<T: Homed> {
    ring: ManuallyDrop<T>,
    home: Slot<T>,
}

impl<T: Homed> QueueHandle<T> {
    pub(crate) fn new(ring: T, home: Slot<T>) -> Self {
        QueueHandle { ring: ManuallyDrop::new(ring), home }
    }
}

impl<T: Homed> Deref for QueueHandle<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.ring
    }
}

impl<T: Homed> DerefMut for QueueHandle<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.ring
    }
}

impl<T: Homed> Drop for QueueHandle<T> {
    fn drop(&mut self) {
        // SAFETY: the ring is taken out once, here, and `self.ring` is never used after.
        let mut ring = unsafe { ManuallyDrop::take(&mut self.ring) };
        ring.detach_stats();
        *lock(&self.home) = Some(ring);
    }
}

impl<D: RegisterSpace> RxQueue for QueueHandle<RxRing<D>> {
    #[inline]
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        self.ring.rx_burst(batch)
    }

    fn wait_fd(&self) -> Option<std::os::fd::RawFd> {
        self.ring.wait_fd()
    }

    fn intr_enable(&mut self) -> pktio::Result<()> {
        self.ring.intr_enable()
    }

    fn intr_disable(&mut self) -> pktio::Result<()> {
        self.ring.intr_disable()
    }
}

impl<D: RegisterSpace> TxQueue for QueueHandle<TxRing<D>> {
    #[inline]
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        self.ring.tx_burst(batch)
    }
}
