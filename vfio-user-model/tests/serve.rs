//! The server against the `vfio_user` crate's own client, in process: config space, BAR0 registers, guest memory
//! from a shared file mapped for DMA (the model transmits a frame it reads from there and writes DD back), and an
//! MSI-X vector fired through the eventfd the client handed over; the SP670 with its three register BARs.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use drvkit::bar::RegisterSpace;
use nicsim::sp670::regs::{DB_QID, DB_SRC_TYPE, FUNC_ATTR1, FUNC_ATTR6, PPF_ELECTION};
use nicsim::x540::regs::*;
use nicsim::{Sp670, Sp670Config, X540Config, X540};
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_PCI_BAR0_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX,
    VFIO_PCI_MSIX_IRQ_INDEX,
};
use vfio_user::Client;
use vfio_user_model::{serve, ModelDevice};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vfio-user-model-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn connect(socket: &Path) -> Client {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match Client::new(socket) {
            Ok(c) => return c,
            Err(e) => {
                assert!(Instant::now() < deadline, "server never listened: {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

fn read32(c: &mut Client, region: u32, offset: u64) -> u32 {
    let mut b = [0u8; 4];
    c.region_read(region, offset, &mut b).unwrap();
    u32::from_le_bytes(b)
}

fn write32(c: &mut Client, offset: usize, v: u32) {
    c.region_write(VFIO_PCI_BAR0_REGION_INDEX, offset as u64, &v.to_le_bytes()).unwrap();
}

fn eventfd() -> File {
    // SAFETY: eventfd(2) takes no pointers; a non-negative result is a new descriptor nobody else owns.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    assert!(fd >= 0, "eventfd: {}", std::io::Error::last_os_error());
    // SAFETY: `fd` is a fresh, valid descriptor owned by nobody else; the File becomes its only owner.
    unsafe { File::from_raw_fd(fd) }
}

#[test]
fn a_client_probes_maps_memory_transmits_and_gets_an_msix_message() {
    let dir = scratch("probe");
    let socket = dir.join("x540.sock");
    let (bar, port) = X540::new(X540Config::default());
    let _thread = port.start_thread();
    let _ = bar;
    let mut device = ModelDevice::new(port.clone());
    let s2 = socket.clone();
    let server = std::thread::spawn(move || serve(&s2, &mut device).map(|()| device.irqs().sent()));
    let mut c = connect(&socket);

    // Config space: identity, MSI-X capability reachable.
    assert_eq!(read32(&mut c, VFIO_PCI_CONFIG_REGION_INDEX, 0), 0x1528_8086);
    assert_eq!(read32(&mut c, VFIO_PCI_CONFIG_REGION_INDEX, 0x34) & 0xFF, 0x40);
    // BAR0: the model's registers (EEC.PRES after power-up, EERD reading the NVM checksum word).
    assert_ne!(read32(&mut c, VFIO_PCI_BAR0_REGION_INDEX, EEC as u64) & EEC_PRES, 0);
    write32(&mut c, EERD, 0x3F << EERD_ADDR_SHIFT | EERD_START);
    assert_ne!(read32(&mut c, VFIO_PCI_BAR0_REGION_INDEX, EERD as u64) & EERD_DONE, 0);

    // Guest memory: a shared file, mapped at IOVA 0x100000.
    let mem_path = dir.join("guest-ram");
    let mem = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&mem_path).unwrap();
    mem.set_len(0x10000).unwrap();
    let iova = 0x10_0000u64;
    c.dma_map(0, iova, 0x10000, mem.as_raw_fd()).unwrap();

    // MSI-X vector 1 ← TX queue 0, through an eventfd.
    let efd = eventfd();
    c.set_irqs(
        VFIO_PCI_MSIX_IRQ_INDEX,
        VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
        1,
        1,
        &[efd.as_raw_fd()],
    )
    .unwrap();
    write32(&mut c, GPIE, GPIE_MSIX_MODE);
    write32(&mut c, ivar(0), (IVAR_VALID | 1) << 8);
    write32(&mut c, EIAC, 1 << 1);
    write32(&mut c, EIMS, 1 << 1);

    // One TX descriptor at the start of guest memory, a 60-byte frame at +0x1000.
    let frame: Vec<u8> = (0..60u8).collect();
    mem.write_at(&frame, 0x1000).unwrap();
    let cmd = 60 | TXD_DTYP_DATA << TXD_DTYP_SHIFT | TXD_CMD_DEXT | TXD_CMD_EOP | TXD_CMD_RS | TXD_CMD_IFCS;
    let mut desc = [0u8; 16];
    desc[..8].copy_from_slice(&(iova + 0x1000).to_le_bytes());
    desc[8..12].copy_from_slice(&cmd.to_le_bytes());
    desc[12..].copy_from_slice(&(60u32 << TXD_PAYLEN_SHIFT).to_le_bytes());
    mem.write_at(&desc, 0).unwrap();
    write32(&mut c, DMATXCTL, DMATXCTL_TE);
    write32(&mut c, tdbal(0), iova as u32);
    write32(&mut c, tdbah(0), (iova >> 32) as u32);
    write32(&mut c, tdlen(0), 128);
    write32(&mut c, txdctl(0), QCTL_ENABLE);
    write32(&mut c, tdt(0), 1);

    let mut buf = [0u8; 8];
    (&efd).read_exact(&mut buf).unwrap(); // blocks until the model signals vector 1
    assert_eq!(u64::from_ne_bytes(buf), 1);
    let mut status = [0u8; 4];
    mem.read_at(&mut status, 12).unwrap();
    assert_ne!(u32::from_le_bytes(status) & TXD_STAT_DD, 0, "DD written back into guest memory");
    assert_eq!(port.take_tx(), vec![frame]);
    port.assert_no_faults();

    drop(c);
    let sent = server.join().unwrap().unwrap();
    assert_eq!(sent[VFIO_PCI_MSIX_IRQ_INDEX as usize], 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_sp670_is_served_with_its_three_register_bars_and_its_msix_bar() {
    let dir = scratch("sp670");
    let socket = dir.join("sp670.sock");
    let port = Sp670::new(Sp670Config { max_queues: 16, ..Sp670Config::default() });
    let _thread = port.start_thread();
    let mut device = ModelDevice::new(port.clone());
    let s2 = socket.clone();
    let server = std::thread::spawn(move || serve(&s2, &mut device));
    let mut c = connect(&socket);

    assert_eq!(read32(&mut c, VFIO_PCI_CONFIG_REGION_INDEX, 0), 0x0222_19E5);
    let sizes: Vec<u64> = (0..6).map(|i| c.region(i).map_or(0, |r| r.size)).collect();
    assert_eq!(sizes, [0, 0x1_0000, 0x4000, 0x8000, 0x1_0000, 0], "BAR1 cfg, BAR2 MSI-X, BAR3 mgmt, BAR4 doorbells");
    // BAR1: the function CSRs exactly as the model's cfg BAR gives them (big-endian on the bus).
    for reg in [FUNC_ATTR1, FUNC_ATTR6] {
        let direct = port.cfg_bar().read32(reg);
        assert_ne!(direct, 0, "FUNC_ATTR at {reg:#x} carries the AEQ count / queue count");
        assert_eq!(read32(&mut c, 1, reg as u64), direct, "cfg BAR register {reg:#x} through the client");
    }
    // BAR3: the PPF/MPF election register, written and read back through the client.
    c.region_write(3, PPF_ELECTION as u64, &port.mgmt_bar().read32(PPF_ELECTION).to_le_bytes()).unwrap();
    assert_eq!(read32(&mut c, 3, PPF_ELECTION as u64), port.mgmt_bar().read32(PPF_ELECTION));
    // BAR2: the MSI-X table as plain memory.
    c.region_write(2, 0x10, &0xDEAD_BEEFu32.to_le_bytes()).unwrap();
    assert_eq!(read32(&mut c, 2, 0x10), 0xDEAD_BEEF);
    // BAR4: a data-path doorbell for queue 200 of 16, one 8-byte write, is refused by the model as a fault naming
    // the queue (so the write reached the doorbell BAR whole).
    let doorbell = u64::from(DB_SRC_TYPE.val(1) | DB_QID.val(200));
    c.region_write(4, 0x1000, &doorbell.to_le_bytes()).unwrap();
    let faults = port.take_faults();
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert!(faults[0].to_string().contains("queue 200 of 16"), "{faults:?}");
    drop(c);
    server.join().unwrap().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
