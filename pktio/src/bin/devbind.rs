//! `devbind`: show network devices and bind them to vfio-pci or back to their kernel driver, like
//! `dpdk-devbind.py`. See [`pktio::pci::devbind`].

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = pktio::pci::devbind::main_with(&args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
