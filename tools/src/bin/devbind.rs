//! `devbind`: show network devices and bind them to vfio-pci or back to their kernel driver, like
//! `dpdk-devbind.py`. See [`tools::devbind`].

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = tools::devbind::main_with(&args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
