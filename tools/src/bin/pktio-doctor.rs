//! `pktio-doctor [ADDR...]`: is this machine ready to drive NICs from user space? Checks the IOMMU, vfio-pci,
//! hugepages, the locked-memory limit and each device (driver of this build, binding, IOMMU group, other users),
//! and prints the command that fixes each problem. It lives here because this crate knows which NICs the build
//! drives. See [`tools::doctor`].

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = tools::doctor::main_with(&pmds::registry(), &args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
