//! The command-line tools a DPDK user runs around a dataplane, as binaries of one crate: `devbind` (show network
//! devices, bind them to vfio-pci and back, like `dpdk-devbind.py`), `pktio-doctor` (is this machine ready to
//! drive NICs from user space, and which command fixes each problem) and `hugepages` (show, reserve, clear and
//! mount hugepages per NUMA node, like `dpdk-hugepages.py`).
//!
//! The library holds the logic of the first two ([`devbind`], [`doctor`]), each an entry point taking the
//! arguments and the output streams and working under chosen sysfs/procfs/`/dev` roots, so tests run them against
//! fake trees; `hugepages` is `hugepage::cli`, next to the sysfs code it drives and the tests that need real
//! hugepages. `pktio-doctor` knows the drivers of this build through `pmds::registry()`.
//!
//! Not supported: devbind's in-use check looks at network interfaces only (up, or carrying routes); a device that
//! is not a network controller is refused without `--force` rather than checked. The doctor reads and never fixes,
//! and does not check link state, cabling, firmware versions or NUMA placement.

pub mod devbind;
pub mod doctor;
