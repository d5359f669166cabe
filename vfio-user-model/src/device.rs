//! The vfio-user server backend over any model ([`nicsim::Model`]): every register BAR of the model as a region,
//! the MSI-X BAR as plain memory, the synthesised config space, guest memory mapped into the model's IOVA map, and
//! the model's interrupt messages written to the eventfds the client handed over.

use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex};

use memmap2::MmapOptions;
use nicsim::dma::SharedMapping;
use nicsim::{Model, ModelPort, SharedBar};
use vfio_bindings::bindings::vfio::{
    vfio_region_info, VFIO_IRQ_INFO_EVENTFD, VFIO_IRQ_INFO_NORESIZE, VFIO_IRQ_SET_ACTION_TRIGGER,
    VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE, VFIO_PCI_CONFIG_REGION_INDEX, VFIO_PCI_INTX_IRQ_INDEX,
    VFIO_PCI_MSIX_IRQ_INDEX, VFIO_PCI_MSI_IRQ_INDEX, VFIO_PCI_NUM_IRQS, VFIO_PCI_NUM_REGIONS,
    VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE,
};
use vfio_user::{DmaMapFlags, DmaUnmapFlags, IrqInfo, ServerBackend, ServerRegion};

use crate::config::{ConfigSpace, CONFIG_LEN};
use crate::Error;

/// The eventfds per VFIO IRQ index (INTx, MSI, MSI-X), by vector.
#[derive(Debug, Default)]
pub struct IrqRoutes {
    fds: Mutex<[Vec<Option<File>>; 3]>,
    /// Messages written to an eventfd, per index.
    sent: Mutex<[u64; 3]>,
}

impl IrqRoutes {
    /// Signals vector `v`: its MSI-X eventfd if MSI-X is set up, else the MSI or INTx eventfd for vector 0.
    pub fn fire(&self, v: u16) {
        let fds = self.fds.lock().unwrap_or_else(|e| e.into_inner());
        let msix = VFIO_PCI_MSIX_IRQ_INDEX as usize;
        let pick = if fds[msix].iter().any(Option::is_some) {
            fds[msix].get(usize::from(v)).and_then(Option::as_ref).map(|f| (msix, f))
        } else if v == 0 {
            [VFIO_PCI_MSI_IRQ_INDEX as usize, VFIO_PCI_INTX_IRQ_INDEX as usize]
                .into_iter()
                .find_map(|i| fds[i].first().and_then(Option::as_ref).map(|f| (i, f)))
        } else {
            None
        };
        if let Some((index, mut f)) = pick {
            // Counted before the write: whoever wakes on the eventfd then already sees it counted.
            self.sent.lock().unwrap_or_else(|e| e.into_inner())[index] += 1;
            if let Err(e) = f.write_all(&1u64.to_ne_bytes()) {
                eprintln!("vfio-user-model: eventfd of vector {v} (IRQ index {index}): {e}");
            }
        }
    }

    /// Messages signalled so far through INTx, MSI and MSI-X eventfds.
    pub fn sent(&self) -> [u64; 3] {
        *self.sent.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, index: usize, start: usize, count: usize, fds: Vec<File>) {
        let mut all = self.fds.lock().unwrap_or_else(|e| e.into_inner());
        let v = &mut all[index];
        if v.len() < start + count {
            v.resize_with(start + count, || None);
        }
        if fds.is_empty() {
            // A run of -1 descriptors (or DATA_NONE): those vectors are disconnected.
            v[start..start + count].iter_mut().for_each(|f| *f = None);
        } else {
            for (slot, f) in v[start..start + count].iter_mut().zip(fds.into_iter().map(Some)) {
                *slot = f;
            }
        }
    }

    fn clear(&self, index: usize) {
        self.fds.lock().unwrap_or_else(|e| e.into_inner())[index].clear();
    }
}

/// The device a vfio-user client sees: a port of any model.
pub struct ModelDevice<S> {
    model: ModelPort<S>,
    /// The model's register BARs, by BAR number.
    bars: [Option<SharedBar>; 6],
    config: ConfigSpace,
    /// The MSI-X BAR (table and PBA) as the client reads it when it does not emulate it itself.
    msix_bar: Vec<u8>,
    irqs: Arc<IrqRoutes>,
    /// Guest memory ranges mapped into the model's IOVA map: (iova, length, guard).
    maps: Vec<(u64, u64, SharedMapping)>,
    /// Register accesses the server could not carry out (reported, then ignored).
    pub odd_accesses: u64,
}

impl<S> std::fmt::Debug for ModelDevice<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelDevice").field("config", &self.config).field("maps", &self.maps.len()).finish()
    }
}

fn config_space<S: Model>(model: &ModelPort<S>) -> ConfigSpace {
    ConfigSpace::new(&model.pci_identity(), model.prefetchable(), model.msix_bar() as u32)
}

impl<S: Model> ModelDevice<S> {
    /// A device around `model`, its interrupts connected to the eventfds the client will send.
    pub fn new(model: ModelPort<S>) -> Self {
        let id = model.pci_identity();
        let irqs = Arc::new(IrqRoutes::default());
        let routes = irqs.clone();
        model.set_irq_sink(Some(Arc::new(move |v| routes.fire(v))));
        let mut bars: [Option<SharedBar>; 6] = Default::default();
        for (i, bar) in model.pci_bars() {
            bars[i] = Some(bar);
        }
        ModelDevice {
            config: config_space(&model),
            msix_bar: vec![0; id.bars[model.msix_bar()]],
            bars,
            model,
            irqs,
            maps: Vec::new(),
            odd_accesses: 0,
        }
    }

    /// After a client disconnected: its memory unmapped, its eventfds dropped, the device reset, as a new VM
    /// would find it.
    pub fn client_gone(&mut self) {
        self.maps.clear();
        for i in 0..3 {
            self.irqs.clear(i);
        }
        self.config = config_space(&self.model);
        self.msix_bar.fill(0);
        self.model.function_reset();
    }

    /// The model.
    pub fn model(&self) -> &ModelPort<S> {
        &self.model
    }

    /// The interrupt routes (for their counters).
    pub fn irqs(&self) -> Arc<IrqRoutes> {
        self.irqs.clone()
    }

    /// The regions to announce: BARs with their sizes, the config space; the ROM and VGA regions empty.
    pub fn regions(&self) -> Vec<ServerRegion> {
        let id = self.model.pci_identity();
        (0..VFIO_PCI_NUM_REGIONS)
            .map(|index| {
                let size = match index {
                    i if i < 6 => id.bars[i as usize] as u64,
                    VFIO_PCI_CONFIG_REGION_INDEX => CONFIG_LEN as u64,
                    _ => 0,
                };
                let flags = if size > 0 { VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE } else { 0 };
                let region_info = vfio_region_info {
                    argsz: std::mem::size_of::<vfio_region_info>() as u32,
                    index,
                    size,
                    flags,
                    ..Default::default()
                };
                ServerRegion { region_info, sparse_areas: Vec::new(), mmap_fd: None }
            })
            .collect()
    }

    /// The interrupts to announce: INTx, one MSI, the model's MSI-X vectors; no error or request IRQ.
    pub fn irq_infos(&self) -> Vec<IrqInfo> {
        let vectors = u32::from(self.model.pci_identity().msix_vectors);
        (0..VFIO_PCI_NUM_IRQS)
            .map(|index| {
                let (count, flags) = match index {
                    VFIO_PCI_INTX_IRQ_INDEX | VFIO_PCI_MSI_IRQ_INDEX => (1, VFIO_IRQ_INFO_EVENTFD),
                    VFIO_PCI_MSIX_IRQ_INDEX => (vectors, VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_NORESIZE),
                    _ => (0, 0),
                };
                IrqInfo { index, flags, count }
            })
            .collect()
    }

    fn bar_read(&mut self, index: usize, offset: usize, data: &mut [u8]) {
        let Some(bar) = &self.bars[index] else { return data.fill(0) };
        if offset.is_multiple_of(4) && data.len().is_multiple_of(4) {
            for (i, chunk) in data.chunks_mut(4).enumerate() {
                chunk.copy_from_slice(&bar.read32(offset + 4 * i).to_le_bytes());
            }
        } else {
            // Narrower than a register: the register's bytes (drivers of these NICs use 32-bit accesses).
            self.odd_accesses += 1;
            let base = offset & !3;
            let v = bar.read32(base).to_le_bytes();
            let at = offset - base;
            let n = data.len().min(4 - at);
            data[..n].copy_from_slice(&v[at..at + n]);
        }
    }

    fn bar_write(&mut self, index: usize, offset: usize, data: &[u8]) {
        let Some(bar) = &self.bars[index] else { return };
        if data.len() == 8 && offset.is_multiple_of(8) {
            // One 64-bit store (a doorbell of a NIC that takes them whole).
            bar.write64(offset, u64::from_le_bytes(data.try_into().expect("8 bytes")));
            return;
        }
        if !(offset.is_multiple_of(4) && data.len().is_multiple_of(4)) {
            self.odd_accesses += 1;
            eprintln!("nicsim-vfio-user: ignored a {}-byte BAR{index} write at {offset:#x}", data.len());
            return;
        }
        for (i, chunk) in data.chunks(4).enumerate() {
            bar.write32(offset + 4 * i, u32::from_le_bytes(chunk.try_into().expect("4 bytes")));
        }
    }
}

fn io_err(e: Error) -> std::io::Error {
    std::io::Error::other(e)
}

impl<S: Model> ServerBackend for ModelDevice<S> {
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> std::io::Result<()> {
        let offset = offset as usize;
        match region {
            VFIO_PCI_CONFIG_REGION_INDEX => self.config.read(offset, data),
            r if r as usize == self.model.msix_bar() => {
                for (i, b) in data.iter_mut().enumerate() {
                    *b = self.msix_bar.get(offset + i).copied().unwrap_or(0);
                }
            }
            // A BAR the model has no registers in (the 82599's I/O BAR, indirect register access) reads 0.
            r if r < 6 => self.bar_read(r as usize, offset, data),
            _ => data.fill(0),
        }
        Ok(())
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> std::io::Result<()> {
        let offset = offset as usize;
        match region {
            VFIO_PCI_CONFIG_REGION_INDEX => self.config.write(offset, data),
            r if r as usize == self.model.msix_bar() => {
                let end = (offset + data.len()).min(self.msix_bar.len());
                if offset < end {
                    self.msix_bar[offset..end].copy_from_slice(&data[..end - offset]);
                }
            }
            r if r < 6 => self.bar_write(r as usize, offset, data),
            _ => {}
        }
        Ok(())
    }

    fn dma_map(
        &mut self,
        _flags: DmaMapFlags,
        offset: u64,
        address: u64,
        size: u64,
        fd: Option<File>,
    ) -> std::io::Result<()> {
        // Without a file the client expects DMA through messages, which this server does not offer. QEMU sends
        // such maps for memory that is not in the shared backend (firmware ROMs): accepted but left out of the
        // IOVA map, so a model DMA there is a fault that names the address.
        let Some(fd) = fd else {
            eprintln!("vfio-user-model: {}", Error::DmaWithoutFd { iova: address, size });
            return Ok(());
        };
        let map = MmapOptions::new()
            .offset(offset)
            .len(size as usize)
            .map_raw(&fd)
            .map_err(|e| io_err(Error::DmaMmap { iova: address, size, source: e }))?;
        if std::env::var_os("NICSIM_TRACE_DMA").is_some() {
            eprintln!("dma map iova {address:#x} size {size:#x} offset {offset:#x}");
        }
        let guard = self.model.dma_mapper().map_shared(address, Arc::new(map));
        self.maps.push((address, size, guard));
        Ok(())
    }

    fn dma_unmap(&mut self, flags: DmaUnmapFlags, address: u64, size: u64) -> std::io::Result<()> {
        if std::env::var_os("NICSIM_TRACE_DMA").is_some() {
            eprintln!("dma unmap iova {address:#x} size {size:#x} flags {flags:?}");
        }
        if flags.contains(DmaUnmapFlags::UNMAP_ALL) {
            self.maps.clear();
        } else {
            self.maps.retain(|&(iova, len, _)| iova + len <= address || iova >= address + size);
        }
        Ok(())
    }

    fn reset(&mut self) -> std::io::Result<()> {
        self.model.function_reset();
        Ok(())
    }

    fn set_irqs(&mut self, index: u32, flags: u32, start: u32, count: u32, fds: Vec<File>) -> std::io::Result<()> {
        let i = index as usize;
        if i > VFIO_PCI_MSIX_IRQ_INDEX as usize || flags & VFIO_IRQ_SET_ACTION_TRIGGER == 0 {
            return Ok(()); // masking of INTx/MSI-X is QEMU's own business; error/request IRQs do not exist
        }
        if flags & VFIO_IRQ_SET_DATA_NONE != 0 && count == 0 {
            self.irqs.clear(i);
        } else if flags & VFIO_IRQ_SET_DATA_EVENTFD != 0 {
            if !fds.is_empty() && fds.len() != count as usize {
                return Err(io_err(Error::IrqFds { index, count, fds: fds.len() }));
            }
            self.irqs.set(i, start as usize, count as usize, fds);
        }
        Ok(())
    }
}
