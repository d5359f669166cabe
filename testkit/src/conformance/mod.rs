//! The conformance suite every driver and model pair runs. A driver's `tests/conformance.rs` implements
//! [`Conformance`] for its port on its model (open the driver on the model with the model running, inject and take
//! frames through the model handle, trigger the faults every model has) and calls [`crate::conformance_tests!`], which
//! writes one `#[test]` per check:
//!
//! - [`bringup`]: one port comes up, starts, links at its speed, hands each queue out once, refuses to stop with a
//!   queue out, stops and closes leaving no buffer, no DMA mapping and no model fault;
//! - [`data`]: frames byte for byte both ways over a wired pair (60 to 1514 bytes, checksum flags good), model and
//!   port counters; 9000-byte jumbo frames as chains both ways and a frame over the largest not delivered whole;
//!   the port statistics (packets, bytes, a bad FCS as an RX error, reset);
//! - [`rss`]: flows spread over 4 and 16 queues as the Toeplitz hash (computed here, [`crate::toeplitz`]) over the
//!   programmed key and the redirection table say, hash and packet type flagged;
//! - [`faults`]: a link flap and a pulled cable reach `link()`, a hung TX queue fills without harm and a restart
//!   recovers, damaged frames are dropped and counted while good ones arrive;
//! - [`forward`]: the threaded forwarding run ([`crate::forward_run`]): 100 000 packets in debug builds, 10 million
//!   in release builds, or the count in the driver's `*_FWD_PACKETS` variable; every count exact.
//!
//! Every check ends with the pool full (no buffer leaked) and no fault recorded by the model. What is particular to
//! one driver (its control plane, its filters, its firmware's faults) stays in that driver's own test files.

pub mod bringup;
pub mod data;
pub mod faults;
pub mod forward;
pub mod rss;

use std::time::Duration;

pub use nicsim::ModelPort;
use nicsim::{FrameCounts, Model};
use pktio::TypedQueues;

/// The figures a driver and model pair gives the suite.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The driver's name, for pool names and messages.
    pub name: &'static str,
    /// The environment variable that sets the forwarding run's packet count (`IXGBE_FWD_PACKETS`, ...).
    pub fwd_packets_var: &'static str,
    /// The link speed the default model reports, in Mb/s.
    pub link_mbps: u32,
    /// The RSS key length the device takes, in bytes.
    pub rss_key_len: usize,
    /// The redirection table's size, as the driver reports it in `info().reta_size`.
    pub reta_size: usize,
    /// The extended statistic counting frames with a bad FCS.
    pub crc_xstat: &'static str,
    /// Whether `reta_update` takes a shorter table whose length divides the size, repeated (ixgbe's and i40e's
    /// extension); where not, it must refuse one as a bad argument (DPDK's rule: the device's size).
    pub reta_repeats: bool,
    /// How many bytes past the MTU the largest frame the port delivers holds, without FCS (the header and what
    /// the NIC's limit adds), where the model enforces a limit; `None` where it does not (the over-size check then
    /// says it does not apply).
    pub frame_over_mtu: Option<usize>,
    /// The extended statistic that counts frames received over that limit (`rx_oversize_errors`, ...), where the
    /// NIC counts them; `None` skips the over-size counting check, saying so.
    pub oversize_xstat: Option<&'static str>,
}

/// A driver port opened on its model, as a conformance check needs it. Field order in the implementing struct:
/// the driver first, so that it drops (and quiesces its rings) before the model's thread stops.
pub trait Conformance: Sized {
    /// The driver's port type.
    type Dev: TypedQueues<Rx: Send, Tx: Send>;
    /// The driver's error type, which a failure of the device must reach `pktio::Error` as.
    type Error: std::error::Error + 'static;
    /// The model's port state (`X540State`, ...): the model port is a [`ModelPort`] of it.
    type Model: Model;

    /// What the suite expects of this device.
    const SPEC: Spec;

    /// One port of the default model, the driver brought up on it and the model running; no fault yet.
    fn open_one() -> Self;
    /// Two ports of the default model wired back to back, the driver on each.
    fn open_pair() -> (Self, Self);

    /// The driver.
    fn dev(&self) -> &Self::Dev;
    /// The driver, to configure, start and take queues.
    fn dev_mut(&mut self) -> &mut Self::Dev;
    /// The model port the driver runs on.
    fn model(&self) -> &ModelPort<Self::Model>;
    /// The model's receive error for a frame with a bad FCS.
    fn bad_fcs() -> <Self::Model as Model>::RxError;

    /// Puts `frame` on the port's wire (into the model's RX); false if the model's wire queue is full.
    fn inject(&self, frame: &[u8]) -> bool {
        self.model().inject(frame)
    }
    /// Puts `frame` on the wire with a bad FCS.
    fn inject_bad_fcs(&self, frame: &[u8]) -> bool {
        self.model().inject_error(frame, Self::bad_fcs())
    }
    /// Frames injected that the model has not yet taken.
    fn rx_pending(&self) -> usize {
        self.model().rx_pending()
    }
    /// The frames the device sent since the last call (with the port unwired).
    fn take_tx(&self) -> Vec<Vec<u8>> {
        self.model().take_tx()
    }
    /// The frame counts every model keeps alike (its own, not the driver's).
    fn counts(&self) -> FrameCounts {
        self.model().frame_counts()
    }
    /// Disconnects the port from its peer: what it sends is kept for [`Conformance::take_tx`].
    fn unwire(&self) {
        self.model().unwire()
    }
    /// Stops (or lets go again) the device's processing of TX queue `queue`.
    fn set_tx_hang(&self, queue: u16, hung: bool);
    /// Takes the link down for `down_for`, then up again.
    fn link_flap(&self, down_for: Duration) {
        self.model().link_flap(down_for)
    }
    /// Pulls or plugs the cable.
    fn set_cable(&self, connected: bool) {
        self.model().set_cable(connected)
    }
    /// Panics with the model's faults, if it recorded any.
    fn assert_no_faults(&self) {
        self.model().assert_no_faults()
    }
    /// Closes the driver while the model runs and requires that it left no DMA mapping and caused no fault.
    fn close(self);

    /// The RSS key and redirection table the model holds, where it exposes them.
    fn rss_state(&self) -> Option<(Vec<u8>, Vec<u16>)> {
        None
    }
    /// Waits for what a model must see after link changes (events acknowledged, ...); nothing by default.
    fn settle_link_events(&self) {}
    /// The checks of the forwarding run particular to this device (its own counters), given the two ports and
    /// the packet count; nothing by default.
    fn after_forward(_a: &Self, _b: &Self, _total: u64) {}
}

/// Inside an `impl Conformance for Port`: the three accessors of a port type whose driver and model are its `dev`
/// and `model` fields (as every driver's `tests/common::Port` has them).
#[macro_export]
macro_rules! conformance_fields {
    () => {
        fn dev(&self) -> &Self::Dev {
            &self.dev
        }
        fn dev_mut(&mut self) -> &mut Self::Dev {
            &mut self.dev
        }
        fn model(&self) -> &$crate::conformance::ModelPort<Self::Model> {
            &self.model
        }
    };
}

/// Writes one `#[test]` per conformance check for the port type `$port` (an implementation of [`Conformance`]).
#[macro_export]
macro_rules! conformance_tests {
    ($port:ty) => {
        $crate::conformance_tests!(@each $port;
            bringup::one_port_comes_up_links_starts_and_stops_clean,
            data::frames_cross_each_way_byte_for_byte,
            data::frames_cross_again_after_a_stop_and_start,
            data::jumbo_9000_byte_frames_both_ways_as_chains,
            data::stats_count_packets_bytes_and_errors_and_reset,
            data::frames_above_the_mtu_are_counted_as_oversize_and_in_ierrors,
            rss::rss_spreads_flows_over_four_queues_as_toeplitz_and_the_table_say,
            rss::rss_follows_an_updated_table_over_sixteen_queues,
            faults::a_link_flap_and_a_pulled_cable_reach_link,
            faults::a_hung_tx_queue_fills_without_harm_and_a_restart_recovers,
            faults::damaged_frames_are_dropped_and_counted_and_good_ones_still_arrive,
            forward::threaded_forwarding_between_two_model_ports_counts_exactly,
        );
    };
    (@each $port:ty; $($module:ident :: $check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                $crate::conformance::$module::$check::<$port>();
            }
        )*
    };
}

/// Opens a pair, configures and starts both ports with `config` on `pool`, and waits for both links.
pub fn started_pair<P: Conformance>(config: &pktio::PortConfig, pool: &mempool::Mempool) -> (P, P) {
    use pktio::EthDev;
    let (mut a, mut b) = P::open_pair();
    for p in [&mut a, &mut b] {
        p.dev_mut().configure(config).unwrap();
        p.dev_mut().start(pool).unwrap();
    }
    crate::wait_for(5, "both links up", || a.dev().link().up && b.dev().link().up);
    (a, b)
}

/// Opens one port, configures and starts it with `config` on `pool`, and waits for its link.
pub fn started_one<P: Conformance>(config: &pktio::PortConfig, pool: &mempool::Mempool) -> P {
    use pktio::EthDev;
    let mut p = P::open_one();
    p.dev_mut().configure(config).unwrap();
    p.dev_mut().start(pool).unwrap();
    crate::wait_for(5, "link up", || p.dev().link().up);
    p
}

/// Stops every port, requires the pool full and no model fault, and closes them.
pub fn finish<P: Conformance>(ports: Vec<P>, pool: &mempool::Mempool) {
    use pktio::EthDev;
    let mut ports = ports;
    for p in &mut ports {
        p.dev_mut().stop().unwrap();
    }
    assert!(pool.is_full(), "{}: {} buffers leaked", P::SPEC.name, pool.in_use());
    for p in ports {
        p.assert_no_faults();
        p.close();
    }
}

/// A pool for a check of driver `P`.
pub fn pool_for<P: Conformance>(check: &str, size: u32) -> mempool::Mempool {
    crate::pool(&format!("{}-{check}", P::SPEC.name), size)
}
