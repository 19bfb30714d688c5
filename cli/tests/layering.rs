//! The adapters reach the store only through the application core (issue 29): no file under
//! `cli/src` or `mcp/src` names `strata_store` (in code, a path or a comment), and neither
//! crate lists `strata-store` among its dependencies (its tests may, as dev-dependencies).
//! What an adapter needs of the store (the options its flags set, the `Store` a server is
//! built over) it takes from `strata_app`, which re-exports it; what a resource, a check or a
//! compaction answers is the core's. Read from the sources, so a new import fails here
//! rather than in a review.

#[path = "../../eval/tests/sources/mod.rs"]
mod sources;

use std::path::{Path, PathBuf};

use sources::files;

/// The adapters' source folders, from the workspace's root.
const ADAPTERS: [&str; 2] = ["cli", "mcp"];

/// The workspace's root.
fn root() -> PathBuf {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR"));
    cli.parent().unwrap_or(cli).to_path_buf()
}

/// The lines of `text` that name the store's crate, as `FILE:LINE: line`.
fn naming(file: &str, text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains("strata_store"))
        .map(|(n, l)| format!("{file}:{}: {}", n + 1, l.trim()))
        .collect()
}

/// The dependencies a `Cargo.toml` lists in its `[dependencies]` tables (the target-specific
/// ones too), dev- and build-dependencies left out.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]" || line.ends_with(".dependencies]");
            continue;
        }
        if inside && let Some((name, _)) = line.split_once('=') {
            let name = name.trim();
            let name = name.split('.').next().unwrap_or(name);
            if !name.is_empty() && !name.starts_with('#') {
                out.push(name.to_owned());
            }
        }
    }
    out
}

#[test]
fn issue_29_adapters_name_no_store() {
    let root = root();
    let mut broken = Vec::new();
    let mut read = 0;
    for adapter in ADAPTERS {
        let src = root.join(adapter).join("src");
        let mut found = Vec::new();
        files(&src, &mut found);
        assert!(!found.is_empty(), "no source at {}", src.display());
        for f in found {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            read += 1;
            let name = f.strip_prefix(&root).unwrap_or(&f).display().to_string();
            broken.extend(naming(&name, &text));
        }
        let manifest = root.join(adapter).join("Cargo.toml");
        let manifest = std::fs::read_to_string(&manifest)
            .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
        if dependencies(&manifest).iter().any(|d| d == "strata-store") {
            broken.push(format!(
                "{adapter}/Cargo.toml: strata-store in [dependencies]"
            ));
        }
    }
    assert!(read > 20, "read only {read} files");
    assert!(
        broken.is_empty(),
        "an adapter reaches past the core:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_reader_sees_names_and_dependency_tables() {
    assert_eq!(
        naming("a.rs", "use strata_app::App;\n// see strata_store::Store\n"),
        vec!["a.rs:2: // see strata_store::Store"]
    );
    let manifest = "[package]\nname = \"x\"\n\n[dependencies]\nstrata-app.workspace = true\n\
                    serde = { version = \"1\" }\n\n[target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n\n\
                    [dev-dependencies]\nstrata-store.workspace = true\n";
    assert_eq!(dependencies(manifest), vec!["strata-app", "serde", "libc"]);
}
