//! Writes the model list from simports/Cargo.toml, so that it is one line per driver there: every dependency with
//! `features = ["sim"]` is a driver crate with a model, whose `sim::SIM_NICS` goes into `SIM_NICS` (in the order of
//! the lines).

fn main() {
    let manifest = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let path = manifest.join("Cargo.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let drivers = drivers_with_sim(&text);
    assert!(
        !drivers.is_empty(),
        "{}: no dependency with features = [\"sim\"]: the model list is empty",
        path.display()
    );
    let lists: Vec<String> = drivers.iter().map(|d| format!("{}::sim::SIM_NICS", d.replace('-', "_"))).collect();
    let body = format!("&[{}]\n", lists.join(", "));
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("model_list.rs");
    std::fs::write(&out, body).unwrap_or_else(|e| panic!("write {}: {e}", out.display()));
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rerun-if-changed=build.rs");
}

/// The `[dependencies]` that turn on a `sim` feature, in the order of the file.
fn drivers_with_sim(text: &str) -> Vec<String> {
    let doc: toml::Table = text.parse().unwrap_or_else(|e| panic!("simports/Cargo.toml: {e}"));
    let Some(deps) = doc.get("dependencies").and_then(|d| d.as_table()) else { return Vec::new() };
    let mut drivers: Vec<(usize, String)> = deps
        .iter()
        .filter(|(_, spec)| {
            spec.get("features").and_then(|f| f.as_array()).is_some_and(|f| f.iter().any(|x| x.as_str() == Some("sim")))
        })
        // `toml::Table` need not keep the file's order: order by where each name's line starts.
        .map(|(name, _)| (line_of(text, name), name.clone()))
        .collect();
    drivers.sort();
    drivers.into_iter().map(|(_, name)| name).collect()
}

/// Where the line declaring dependency `name` starts.
fn line_of(text: &str, name: &str) -> usize {
    text.lines()
        .position(|l| l.split('=').next().is_some_and(|k| k.trim() == name))
        .unwrap_or_else(|| panic!("simports/Cargo.toml: no line declares {name}"))
}
