//! `vfio-probe`: the guest set-up itself (modules, IOMMU, binding) before any driver runs.

use crate::sys;

pub const IGB: (u16, u16) = (0x8086, 0x10c9);
pub const VIRTIO_NET: (u16, u16) = (0x1af4, 0x1041);

/// The extra functions the harness asked /init to bind (`vt.vfio_ids=8086:1528,...`: the vfio-user models).
fn extra_ids() -> Vec<(u16, u16)> {
    let ids = sys::cmdline_opt("vt.vfio_ids").unwrap_or_default();
    ids.split(',')
        .filter_map(|id| {
            let (v, d) = id.split_once(':')?;
            Some((u16::from_str_radix(v, 16).ok()?, u16::from_str_radix(d, 16).ok()?))
        })
        .collect()
}

pub fn vfio_probe() -> Result<(), String> {
    let container = sys::open_rw("/dev/vfio/vfio").map_err(|e| format!("open /dev/vfio/vfio: {e}"))?;
    let api = sys::ioctl_val(&container, sys::VFIO_GET_API_VERSION, 0).map_err(|e| format!("API version: {e}"))?;
    if api != sys::VFIO_API_VERSION {
        return Err(format!("VFIO API version {api}, expected {}", sys::VFIO_API_VERSION));
    }
    let t1v2 = sys::ioctl_val(&container, sys::VFIO_CHECK_EXTENSION, sys::VFIO_TYPE1V2_IOMMU)
        .map_err(|e| format!("CHECK_EXTENSION: {e}"))?;
    println!("container: API {api}, type1v2 {t1v2}");
    if t1v2 != 1 {
        return Err("no type1v2 IOMMU: is intel_iommu=on and the vIOMMU there?".into());
    }
    let extra = extra_ids();
    let nics: Vec<_> = sys::pci_functions()
        .map_err(|e| format!("sysfs: {e}"))?
        .into_iter()
        .filter(|f| [IGB, VIRTIO_NET].contains(&(f.vendor, f.device)) || extra.contains(&(f.vendor, f.device)))
        .collect();
    let (mut igb, mut virtio, mut models) = (0, 0, 0);
    let mut groups = Vec::new();
    for f in &nics {
        let g = f.group.ok_or_else(|| format!("{} has no IOMMU group", f.bdf))?;
        if f.driver.as_deref() != Some("vfio-pci") {
            return Err(format!("{} is bound to {:?}, not vfio-pci", f.bdf, f.driver));
        }
        let path = format!("/dev/vfio/{g}");
        let group = sys::open_rw(&path).map_err(|e| format!("open {path}: {e}"))?;
        let flags = sys::group_status(&group).map_err(|e| format!("{path} status: {e}"))?;
        let viable = flags & sys::VFIO_GROUP_FLAGS_VIABLE != 0;
        println!("{} {:04x}:{:04x} group {g} flags {flags:#x} viable {viable}", f.bdf, f.vendor, f.device);
        if !viable {
            return Err(format!("group {g} of {} is not viable", f.bdf));
        }
        // Each function in a group of its own, as on a server where each card sits behind its own IOMMU unit.
        if groups.contains(&g) {
            return Err(format!("{} shares IOMMU group {g} with another NIC under test", f.bdf));
        }
        groups.push(g);
        match (f.vendor, f.device) {
            IGB => igb += 1,
            VIRTIO_NET => virtio += 1,
            _ => models += 1,
        }
    }
    // The harness says which NICs it gave the guest: vt.nics=vnet0,vnet1,igb0.
    let want = sys::cmdline_opt("vt.nics").unwrap_or_default();
    let want_igb = want.split(',').filter(|n| n.starts_with("igb")).count();
    let want_virtio = want.split(',').filter(|n| n.starts_with("vnet")).count();
    println!(
        "found {igb} igb, {virtio} virtio-net NICs and {models} model functions (expected {want_igb}, {want_virtio} \
         and {})",
        extra.len()
    );
    if (igb, virtio, models) != (want_igb, want_virtio, extra.len()) || nics.is_empty() {
        return Err("NIC count mismatch".into());
    }
    Ok(())
}
