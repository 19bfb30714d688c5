//! Symbolic links in a database directory: the pack (`strata.toml`) and the modules
//! (`modules/**/*.dl`) are read only from inside the database directory. A file reached
//! through a link that leads outside it is refused before it is read, so its contents are
//! neither served as a module resource nor quoted in an error.

use std::path::{Path, PathBuf};

/// How deep the module folders are walked (the module loader allows fewer).
const MAX_DEPTH: usize = 64;

/// A file of the database reached through a link that leads outside it.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The file resolves to a place outside the database directory.
    #[error(
        "{link}: a symbolic link that leads outside the database directory {db}; Strata reads \
         the pack and modules only from inside it (copy the file in, or link to a file inside \
         the database)"
    )]
    Outside {
        /// The file, as it appears in the database directory.
        link: PathBuf,
        /// The database directory.
        db: PathBuf,
    },
    /// The file's real place could not be found (a dangling link, a permission).
    #[error("{path}: cannot resolve it: {source}")]
    Resolve {
        /// The file, as it appears in the database directory.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
}

/// Refuses `path` (inside the database directory `db`) when it, or a folder on the way to
/// it, is a link that leads outside `db`. A path that does not exist passes.
pub fn check_inside(db: &Path, path: &Path) -> Result<(), LinkError> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(());
    }
    let resolve = |p: &Path| {
        std::fs::canonicalize(p).map_err(|source| LinkError::Resolve {
            path: p.to_owned(),
            source,
        })
    };
    let root = resolve(db)?;
    if resolve(path)?.starts_with(&root) {
        Ok(())
    } else {
        Err(LinkError::Outside {
            link: path.to_owned(),
            db: db.to_owned(),
        })
    }
}

/// Refuses the module folder `dir` of the database `db` when it, or a `.dl` file or folder
/// in it that the module loader reads, leads outside `db`.
pub fn check_modules(db: &Path, dir: &Path) -> Result<(), LinkError> {
    check_inside(db, dir)?;
    walk(db, dir, 0)
}

fn walk(db: &Path, dir: &Path, depth: usize) -> Result<(), LinkError> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        // The module loader says what is wrong with it.
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        let is_dir = std::fs::metadata(&path).is_ok_and(|m| m.is_dir());
        let is_module = path.extension().is_some_and(|e| e == "dl");
        if is_dir || is_module {
            check_inside(db, &path)?;
        }
        if is_dir {
            walk(db, &path, depth + 1)?;
        }
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn links_inside_pass_and_outside_are_refused() {
        let db = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let modules = db.path().join("modules");
        std::fs::create_dir_all(modules.join("sub")).unwrap();
        std::fs::write(modules.join("a.dl"), "a(?x) :- imports(?x, _).\n").unwrap();
        std::os::unix::fs::symlink(modules.join("a.dl"), modules.join("b.dl")).unwrap();
        assert!(check_modules(db.path(), &modules).is_ok());
        std::fs::write(outside.path().join("secret"), "root:x:0:0\n").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            modules.join("sub").join("c.dl"),
        )
        .unwrap();
        let e = check_modules(db.path(), &modules).unwrap_err().to_string();
        assert!(e.contains("c.dl") && e.contains("outside"), "{e}");
        assert!(!e.contains("root:x"), "{e}");
    }
}
