//! What differs between the device families that share the ring code: where each keeps its queue registers, and
//! the few bits (queue enable, TXDCTL thresholds, RX error bits) that are not in the same place.

use drvkit::bar::RegisterSpace;

use crate::regs::{Field, Reg, Regs};

/// Implements the per-queue register functions of [`Family`] by forwarding to the functions of the same names in
/// the register module `$regs` (each family's module has its own offsets).
#[macro_export]
#[doc(hidden)]
macro_rules! family_queue_regs {
    ($regs:ident) => {
        $crate::family_queue_regs!(@fns $regs; rdbal rdbah rdlen srrctl rdh rdt rxdctl tdbal tdbah tdlen tdh tdt txdctl);
    };
    (@fns $regs:ident; $($name:ident)*) => {
        $(
            fn $name(q: u16) -> Reg {
                $regs::$name(q)
            }
        )*
    };
}

/// Where a device family keeps its queue registers, and the bits that differ between families.
pub trait Family: Send + Sync + 'static {
    /// Driver name, for errors.
    const DRIVER: &'static str;
    /// RX descriptor base low of queue `q`.
    fn rdbal(q: u16) -> Reg;
    /// RX descriptor base high.
    fn rdbah(q: u16) -> Reg;
    /// RX ring length.
    fn rdlen(q: u16) -> Reg;
    /// Split receive control.
    fn srrctl(q: u16) -> Reg;
    /// RX head.
    fn rdh(q: u16) -> Reg;
    /// RX tail.
    fn rdt(q: u16) -> Reg;
    /// RX descriptor control.
    fn rxdctl(q: u16) -> Reg;
    /// TX descriptor base low.
    fn tdbal(q: u16) -> Reg;
    /// TX descriptor base high.
    fn tdbah(q: u16) -> Reg;
    /// TX ring length.
    fn tdlen(q: u16) -> Reg;
    /// TX head.
    fn tdh(q: u16) -> Reg;
    /// TX tail.
    fn tdt(q: u16) -> Reg;
    /// TX descriptor control.
    fn txdctl(q: u16) -> Reg;
    /// SRRCTL value for advanced one-buffer descriptors with `buf_kb` KiB buffers (drop when out of descriptors
    /// when `drop_en`).
    fn srrctl_value(buf_kb: u32, drop_en: bool) -> u32;
    /// RXDCTL/TXDCTL queue enable bit.
    const QUEUE_ENABLE: u32;
    /// TXDCTL value (thresholds) before the enable bit; WTHRESH must be 0 with RS batching.
    const TXDCTL_INIT: u32;
    /// TXDCTL bits written to disable a queue.
    const TXDCTL_DISABLE: u32;
    /// RX extended error: MAC error (CRC, length, symbol...).
    const RX_ERR_RXE: u32;
    /// RX extended error: IPv4 header checksum bad.
    const RX_ERR_IPE: u32;
    /// RX extended error: L4 checksum bad.
    const RX_ERR_L4E: u32;
    /// Bit of L4E, the lower of the two checksum error bits; IPE is the next one in both families (see
    /// [`Family::RX_CSUM_ERR`]).
    const RX_CSUM_ERR_SHIFT: u32;
    /// The two checksum error bits as one 2-bit field: L4E in its bit 0, IPE in its bit 1 (derived from
    /// [`Family::RX_CSUM_ERR_SHIFT`]).
    const RX_CSUM_ERR: Field = Field::new(Self::RX_CSUM_ERR_SHIFT + 1, Self::RX_CSUM_ERR_SHIFT);
    /// Largest RX buffer SRRCTL can describe, in KiB.
    const MAX_RX_BUF_KB: u32 = 16;
    /// Family-specific per-queue RX set-up (e.g. DCA bits), queue disabled.
    fn rx_queue_extra<R: RegisterSpace>(_regs: &Regs<R>, _q: u16) {}
    /// Family-specific per-queue TX set-up, queue disabled.
    fn tx_queue_extra<R: RegisterSpace>(_regs: &Regs<R>, _q: u16) {}
}
