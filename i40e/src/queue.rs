//! Queue enable and disable (docs/hw/i40e.md §9.4): the TX pre-configuration announcement through
//! GLLAN_TXPRE_QDIS, the request/status handshake of QTX_ENA and QRX_ENA, and their waits.

use std::time::Duration;

use drvkit::bar::RegisterSpace;

use crate::regs::{self, gllan_txpre_qdis, qena, PollTimeout, Regs};

/// Waits of the queue handshakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueTiming {
    /// How long a queue may take to follow its request (DPDK: 1000 polls 1 ms apart).
    pub switch: Duration,
    /// Poll step.
    pub step: Duration,
    /// Pause after the TX pre-configuration write (DPDK: 10 µs).
    pub pre_cfg: Duration,
}

impl QueueTiming {
    /// The hardware's.
    pub const HARDWARE: QueueTiming = QueueTiming {
        switch: Duration::from_secs(1),
        step: Duration::from_millis(1),
        pre_cfg: Duration::from_micros(10),
    };
}

/// Announces a TX queue's enable (`enable`) or disable through GLLAN_TXPRE_QDIS (docs/hw/i40e.md §9.4 step 1); `abs_queue` is
/// the absolute queue number.
pub fn tx_pre_cfg<R: RegisterSpace>(regs: &Regs<R>, abs_queue: u32, enable: bool, t: &QueueTiming) {
    let reg = regs::gllan_txpre_qdis(abs_queue / gllan_txpre_qdis::QUEUES_PER_BLOCK);
    let v =
        regs.read(reg) & !(gllan_txpre_qdis::QINDX.mask() | gllan_txpre_qdis::SET_QDIS | gllan_txpre_qdis::CLEAR_QDIS);
    let cmd = if enable { gllan_txpre_qdis::CLEAR_QDIS } else { gllan_txpre_qdis::SET_QDIS };
    regs.write(reg, v | gllan_txpre_qdis::QINDX.val(abs_queue % gllan_txpre_qdis::QUEUES_PER_BLOCK) | cmd);
    std::thread::sleep(t.pre_cfg);
}

fn settled(v: u32) -> bool {
    (v & qena::QENA_REQ != 0) == (v & qena::QENA_STAT != 0)
}

/// Switches the queue whose enable register is `ena` on or off: waits for no change under way, returns at once if
/// it is already there, else flips QENA_REQ (after `before_on` when switching on) and waits for REQ and STAT to
/// both read the new state.
fn switch<R: RegisterSpace>(
    regs: &Regs<R>,
    ena: regs::Reg,
    on: bool,
    t: &QueueTiming,
    before_on: impl FnOnce(),
) -> Result<(), PollTimeout> {
    let v = regs.poll_with(ena, t.switch, t.step, settled)?;
    if (v & qena::QENA_STAT != 0) == on {
        return Ok(());
    }
    // QENA_STAT is read-only: not written back.
    let v = v & !qena::QENA_STAT;
    if on {
        before_on();
        regs.write(ena, v | qena::QENA_REQ);
    } else {
        regs.write(ena, v & !qena::QENA_REQ);
    }
    let want = if on { qena::QENA_REQ | qena::QENA_STAT } else { 0 };
    regs.poll_with(ena, t.switch, t.step, |v| v & (qena::QENA_REQ | qena::QENA_STAT) == want).map(|_| ())
}

/// Enables or disables PF TX queue `q` (absolute number `abs_queue`) as docs/hw/i40e.md §9.4 says.
pub fn switch_tx<R: RegisterSpace>(
    regs: &Regs<R>,
    q: u16,
    abs_queue: u32,
    on: bool,
    t: &QueueTiming,
) -> Result<(), PollTimeout> {
    tx_pre_cfg(regs, abs_queue, on, t);
    switch(regs, regs::qtx_ena(q), on, t, || regs.write(regs::qtx_head(q), 0))
}

/// Enables or disables PF RX queue `q` as docs/hw/i40e.md §9.4 says.
pub fn switch_rx<R: RegisterSpace>(regs: &Regs<R>, q: u16, on: bool, t: &QueueTiming) -> Result<(), PollTimeout> {
    switch(regs, regs::qrx_ena(q), on, t, || {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeRegs;
    use std::sync::Arc;

    const FAST: QueueTiming =
        QueueTiming { switch: Duration::from_millis(20), step: Duration::from_micros(50), pre_cfg: Duration::ZERO };

    #[test]
    fn tx_enable_announces_zeroes_the_head_and_waits_for_status() {
        let fake = Arc::new(FakeRegs::default());
        let regs = Regs::new(fake.clone());
        fake.store(regs::qtx_head(3), 77);
        switch_tx(&regs, 3, 128 + 3 + 256, true, &FAST).unwrap();
        let pre = fake.peek(regs::gllan_txpre_qdis(3));
        assert_eq!(pre, gllan_txpre_qdis::CLEAR_QDIS | 3, "block 3 (abs 387), index 3, CLEAR_QDIS");
        assert_eq!(fake.peek(regs::qtx_head(3)), 0);
        assert_eq!(regs.read(regs::qtx_ena(3)) & (qena::QENA_REQ | qena::QENA_STAT), 0b101);
        switch_tx(&regs, 3, 387, false, &FAST).unwrap();
        assert_eq!(fake.peek(regs::gllan_txpre_qdis(3)), gllan_txpre_qdis::SET_QDIS | 3);
        assert_eq!(regs.read(regs::qtx_ena(3)) & (qena::QENA_REQ | qena::QENA_STAT), 0);
    }

    #[test]
    fn a_queue_that_never_follows_times_out_with_its_register_value() {
        /// QRX_ENA never reports the state asked.
        #[derive(Debug, Default)]
        struct Stuck(std::sync::atomic::AtomicU32);
        impl RegisterSpace for Stuck {
            fn read32(&self, _: usize) -> u32 {
                self.0.load(std::sync::atomic::Ordering::Relaxed) & !qena::QENA_STAT
            }
            fn write32(&self, _: usize, v: u32) {
                self.0.store(v, std::sync::atomic::Ordering::Relaxed)
            }
            fn len(&self) -> usize {
                0x20_0000
            }
        }
        let regs = Regs::new(Arc::new(Stuck::default()));
        let e = switch_rx(&regs, 0, true, &FAST).unwrap_err();
        assert_eq!(e.last & qena::QENA_REQ, qena::QENA_REQ, "the request stays, the status never follows");
    }
}
