//! The IOVA map's shared ranges (a vfio-user client's guest memory, `IovaMap::map_shared`): what the VM models boot
//! does at a port stop/start behind the vIOMMU. The same IOVA is unmapped and mapped again onto other memory (the
//! guest process got other hugepages at the same virtual addresses); the model must then reach the new memory.

use std::sync::Arc;

use memmap2::{MmapOptions, MmapRaw};
use nicsim::{FaultLog, IovaMap};

fn page(fill: u8) -> Arc<MmapRaw> {
    let mut m = MmapOptions::new().len(4096).map_anon().unwrap();
    m.fill(fill);
    Arc::new(MmapRaw::from(m))
}

#[test]
fn an_iova_mapped_again_onto_other_memory_reaches_the_new_memory() {
    let map = IovaMap::new(Arc::new(FaultLog::new(false)));
    let (a, b) = (0x7f00_0000_0000u64, 0x7f00_0000_1000u64);
    let first = map.map_shared(a, page(0x11));
    let next = map.map_shared(b, page(0x22));
    let mut buf = [0u8; 8];
    map.read(a, &mut buf, &|| "first".into()).unwrap();
    assert_eq!(buf, [0x11; 8]);
    // Unmapped, then the same IOVAs again, swapped onto each other's kind of memory.
    drop(first);
    drop(next);
    assert!(map.read(a, &mut buf, &|| "gone".into()).is_err(), "an unmapped IOVA is a fault");
    let again_a = map.map_shared(a, page(0x33));
    let again_b = map.map_shared(b, page(0x44));
    map.read(a, &mut buf, &|| "again a".into()).unwrap();
    assert_eq!(buf, [0x33; 8], "the new memory behind {a:#x}, not the old");
    map.read(b, &mut buf, &|| "again b".into()).unwrap();
    assert_eq!(buf, [0x44; 8]);
    // A read across the two ranges takes a piece of each.
    let mut across = [0u8; 8];
    map.read(b - 4, &mut across, &|| "across".into()).unwrap();
    assert_eq!(across, [0x33, 0x33, 0x33, 0x33, 0x44, 0x44, 0x44, 0x44]);
    drop((again_a, again_b));
    assert_eq!(map.region_count(), 0);
}
