//! The committed header must be exactly what cbindgen generates from the current sources, and its
//! version macros must match the crate version.

use std::path::Path;

fn generate() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("read cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_crate(root)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("header is UTF-8")
}

#[test]
fn header_matches_sources() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/lodtensor.h");
    let generated = generate();
    if std::env::var_os("LODTENSOR_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write header");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/lodtensor.h is stale: regenerate it with `LODTENSOR_BLESS=1 cargo test --test header` and commit it"
    );
}

#[test]
fn header_version_macros_match_crate() {
    let header = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/lodtensor.h")).unwrap();
    for (name, value) in [
        ("LODTENSOR_VERSION_MAJOR", env!("CARGO_PKG_VERSION_MAJOR").to_string()),
        ("LODTENSOR_VERSION_MINOR", env!("CARGO_PKG_VERSION_MINOR").to_string()),
        ("LODTENSOR_VERSION_PATCH", env!("CARGO_PKG_VERSION_PATCH").to_string()),
        ("LODTENSOR_VERSION_STRING", format!("\"{}\"", env!("CARGO_PKG_VERSION"))),
    ] {
        let line = format!("#define {name} {value}\n");
        assert!(header.contains(&line), "header lacks `{}`", line.trim());
    }
}
