//! Reading a tree of sources, for the layering tests: eval's `tests/layering.rs` and the
//! adapters' `cli/tests/layering.rs` (which includes this file).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Every file at or below `at`, appended to `out`.
pub fn files(at: &Path, out: &mut Vec<PathBuf>) {
    if at.is_file() {
        out.push(at.to_path_buf());
        return;
    }
    let Ok(dir) = std::fs::read_dir(at) else {
        return;
    };
    for e in dir.flatten() {
        files(&e.path(), out);
    }
}
