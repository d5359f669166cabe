//! Writes the body of `pmds::registry()` from the features this build enables, so that the driver list is
//! pmds/Cargo.toml alone: every enabled feature but `default` and `sim` is a driver crate of the same name, whose
//! `PCI_DRIVERS` is registered (in the features' alphabetical order); `sim` registers `simports::VDEV_DRIVERS`.

use std::fmt::Write;

fn main() {
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| k.strip_prefix("CARGO_FEATURE_").map(|f| f.to_lowercase()))
        .filter(|f| f != "default")
        .collect();
    features.sort();
    let mut body = String::from("{\n");
    for f in &features {
        if f == "sim" {
            continue;
        }
        writeln!(body, "    registry.add_pci({f}::PCI_DRIVERS);").unwrap();
    }
    if features.iter().any(|f| f == "sim") {
        writeln!(body, "    registry.add_vdevs(simports::VDEV_DRIVERS);").unwrap();
    }
    body.push_str("}\n");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("registry.rs");
    std::fs::write(&out, body).unwrap_or_else(|e| panic!("write {}: {e}", out.display()));
    println!("cargo:rerun-if-changed=build.rs");
}
