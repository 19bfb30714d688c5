//! The bundled `code` pack: after a SCIP index is ingested into a database that has no pack
//! of its own, its directory gets `strata.toml` ([`strata_store::scip::CODE_PACK`]) and
//! `modules/code.dl` ([`strata_store::scip::CODE_MODULE`]), so the instructions, the agent
//! line, the prompts and `ask`'s examples speak about code from the first connection.
//!
//! Both are written or neither: a database with a `strata.toml` or a `modules/code.dl`
//! already is left alone, and no existing file is ever overwritten.

use std::io::Write;
use std::path::{Path, PathBuf};

use strata_store::scip::{CODE_MODULE, CODE_PACK};

use crate::pack::PACK_FILE;

/// The bundled module's path inside a database directory.
pub const CODE_MODULE_FILE: &str = "modules/code.dl";

/// What an ingest did about the bundled `code` pack.
#[derive(Debug, Default)]
pub enum CodePack {
    /// Nothing: the batch read no SCIP index, or the database has a pack or a `code`
    /// module of its own.
    #[default]
    Untouched,
    /// Wrote `strata.toml` and `modules/code.dl`.
    Written,
    /// Writing failed; the batch itself is committed.
    Failed(CodePackError),
}

/// Why the bundled pack could not be written.
#[derive(Debug, thiserror::Error)]
#[error("writing the bundled code pack: {}: {source}", .path.display())]
pub struct CodePackError {
    /// The file or folder that could not be written.
    pub path: PathBuf,
    /// What went wrong.
    #[source]
    pub source: std::io::Error,
}

/// Writes the bundled pack and module into the database directory `db` when it has neither
/// a `strata.toml` nor a `modules/code.dl`; answers whether it wrote them.
pub fn write_if_missing(db: &Path) -> Result<bool, CodePackError> {
    let pack = db.join(PACK_FILE);
    let module = db.join(CODE_MODULE_FILE);
    if exists(&pack)? || exists(&module)? {
        return Ok(false);
    }
    let fail = |path: &Path| {
        let path = path.to_owned();
        move |source| CodePackError { path, source }
    };
    let modules = db.join("modules");
    std::fs::create_dir_all(&modules).map_err(fail(&modules))?;
    // The module first: the pack's examples call it.
    if !create_new(&module, CODE_MODULE).map_err(fail(&module))? {
        return Ok(false);
    }
    match create_new(&pack, CODE_PACK) {
        Ok(true) => Ok(true),
        // Somebody wrote a pack in between: theirs stays, and so no bundled module either.
        Ok(false) => {
            let _ = std::fs::remove_file(&module);
            Ok(false)
        }
        Err(source) => {
            let _ = std::fs::remove_file(&module);
            Err(CodePackError { path: pack, source })
        }
    }
}

fn exists(path: &Path) -> Result<bool, CodePackError> {
    path.try_exists().map_err(|source| CodePackError {
        path: path.to_owned(),
        source,
    })
}

/// Writes `text` to a new file at `path`; answers false, writing nothing, when a file is
/// there already.
fn create_new(path: &Path, text: &str) -> std::io::Result<bool> {
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(e),
    };
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn writes_both_once_and_never_over_a_users_files() {
        let dir = tempfile::tempdir().unwrap();
        assert!(write_if_missing(dir.path()).unwrap());
        let pack = dir.path().join(PACK_FILE);
        let module = dir.path().join(CODE_MODULE_FILE);
        assert_eq!(std::fs::read_to_string(&pack).unwrap(), CODE_PACK);
        assert_eq!(std::fs::read_to_string(&module).unwrap(), CODE_MODULE);
        // The second time: there already, nothing written.
        std::fs::write(&module, "// mine\n").unwrap();
        assert!(!write_if_missing(dir.path()).unwrap());
        assert_eq!(std::fs::read_to_string(&module).unwrap(), "// mine\n");

        // A user's pack alone: no module added either.
        let user = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join(PACK_FILE), "name = \"mine\"\n").unwrap();
        assert!(!write_if_missing(user.path()).unwrap());
        assert!(!user.path().join(CODE_MODULE_FILE).exists());
        assert_eq!(
            std::fs::read_to_string(user.path().join(PACK_FILE)).unwrap(),
            "name = \"mine\"\n"
        );
        // A user's code module alone: no pack that would call into it.
        let user = tempfile::tempdir().unwrap();
        std::fs::create_dir(user.path().join("modules")).unwrap();
        std::fs::write(user.path().join(CODE_MODULE_FILE), "// mine\n").unwrap();
        assert!(!write_if_missing(user.path()).unwrap());
        assert!(!user.path().join(PACK_FILE).exists());
    }
}
