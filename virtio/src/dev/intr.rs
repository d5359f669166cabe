//! Interrupts of a virtio-net port: MSI-X vectors from the port's [`IrqSource`] (VFIO's MSI-X eventfds on PCI, a
//! model's in-process), laid out as DPDK's virtio PMD does: vector 0 for configuration changes (`intr_conf.lsc`:
//! the link-status change of VIRTIO_NET_F_STATUS), vector 1 + q for RX queue q (`intr_conf.rxq`). Each is written
//! to `config_msix_vector` / the queue's `queue_msix_vector` and read back, NO_VECTOR meaning the device could not
//! map it (docs/hw/virtio.md §4.1.5.1.2); TX and control queues, and whatever is not configured, stay NO_VECTOR.
//! Arming an RX queue is the queue's ([`crate::rxtx`]); the configuration vector has no suppression: the device
//! signals every change, and [`pktio::EthDev::link`] drains the eventfd before reading the status.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use drvkit::irq::IrqSource;
use pktio::{IntrConf, PortConfig};

use super::{VResult, VirtioNet};
use crate::error::Error;
use crate::regs::{feature, RegisterSpace, NO_VECTOR};

/// The configuration-change vector (first, as in DPDK's layout).
pub const CONFIG_VECTOR: u16 = 0;
/// RX queue q's MSI-X vector is this plus q.
pub const RX_VECTOR_BASE: u16 = 1;

/// Vectors `config` needs: none without interrupts; the configuration vector for LSC; it and one per RX queue
/// for RX interrupts (vector 0 is then allocated even without LSC, keeping the layout fixed).
fn vectors_needed(config: &PortConfig) -> u32 {
    match config.intr_conf {
        IntrConf { rxq: true, .. } => u32::from(RX_VECTOR_BASE) + u32::from(config.rx_queues),
        IntrConf { lsc: true, .. } => u32::from(CONFIG_VECTOR) + 1,
        _ => 0,
    }
}

impl<B: RegisterSpace + 'static> VirtioNet<B> {
    /// Where this port's interrupt vectors are delivered; from then on it offers `intr_conf.rxq`, and
    /// `intr_conf.lsc` when the device reports its link (VIRTIO_NET_F_STATUS).
    pub fn set_irq_source(&mut self, source: Arc<dyn IrqSource>) {
        self.irq = Some(source);
        let lsc = self.device_features & feature::NET_STATUS != 0;
        self.state.intr_capa = IntrConf { rxq: true, lsc };
    }

    /// The vectors `config` needs, checked against what the source has.
    pub(super) fn check_vectors(&self, config: &PortConfig) -> pktio::Result<()> {
        let Some(source) = &self.irq else { return Ok(()) };
        let need = vectors_needed(config);
        let has = source.max_vectors();
        if need <= has {
            return Ok(());
        }
        let what = if config.intr_conf.rxq {
            format!(
                "RX interrupts on {} queues need {need} MSI-X vectors (vector 0 for configuration changes, one per \
                 RX queue), the device has {has}; configure at most {} RX queues with intr_conf.rxq",
                config.rx_queues,
                has.saturating_sub(u32::from(RX_VECTOR_BASE))
            )
        } else {
            format!("link-change interrupts need {need} MSI-X vector, the device has {has}; poll link() instead")
        };
        Err(self
            .state
            .invalid(format!("{what}, or give the device more vectors (QEMU: virtio-net-pci,vectors={need})")))
    }

    /// At start, before the queues are set up: routes the vectors `config` needs to eventfds.
    pub(super) fn enable_vectors(&mut self, config: &PortConfig) -> VResult<()> {
        let need = vectors_needed(config);
        if need == 0 {
            return Ok(());
        }
        let source = self.irq.clone().ok_or_else(|| self.dev_err("interrupts configured without interrupt vectors"))?;
        self.vectors = source.enable(need)?;
        Ok(())
    }

    /// Before DRIVER_OK: configuration changes on [`CONFIG_VECTOR`] with `intr_conf.lsc` (read back), else none.
    pub(super) fn map_config_vector(&mut self, config: &PortConfig) -> VResult<()> {
        let c = &self.t.common;
        if !config.intr_conf.lsc {
            c.set_config_msix_vector(NO_VECTOR);
            return Ok(());
        }
        c.set_config_msix_vector(CONFIG_VECTOR);
        let answer = c.config_msix_vector();
        if answer != CONFIG_VECTOR {
            return Err(Error::ConfigVector { dev: self.name(), vector: CONFIG_VECTOR, answer });
        }
        self.lsc_fd = self.vectors.get(usize::from(CONFIG_VECTOR)).cloned();
        Ok(())
    }

    /// Drains the configuration-change eventfd (a started port with `intr_conf.lsc`).
    pub(super) fn ack_link_event(&self) {
        if let Some(fd) = &self.lsc_fd {
            // Only a closed descriptor fails; the next change signals again anyway.
            let _ = fd.read();
        }
    }

    /// The configuration-change eventfd of a started port configured with `intr_conf.lsc`.
    pub(super) fn lsc_raw_fd(&self) -> pktio::Result<RawFd> {
        match &self.lsc_fd {
            Some(fd) => Ok(fd.as_raw_fd()),
            None if !self.state.config.intr_conf.lsc => {
                Err(self.state.unsupported("link-state events on a port configured without intr_conf.lsc"))
            }
            None => Err(pktio::Error::NotStarted { port: self.name() }),
        }
    }
}
