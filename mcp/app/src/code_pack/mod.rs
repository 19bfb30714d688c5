//! The bundled `code` pack: after a SCIP index is ingested into a database that has no pack
//! of its own, its directory gets `strata.toml` (from [`strata_store::scip::CODE_PACK`], its
//! examples written with the ingested code's own files and symbols, chosen by `sample.rs`) and
//! `modules/code.dl` ([`strata_store::scip::CODE_MODULE`]), so the instructions, the agent
//! line, the prompts and `ask`'s examples speak about this code from the first connection.
//!
//! Both are written or neither: a database with a `strata.toml` or a `modules/code.dl` of
//! its user's is left alone. Each file Strata writes opens with a marker line holding a
//! fingerprint of the rest; while both files still match theirs (nobody edited them), a
//! later SCIP ingest rewrites them, with examples from what is stored then and the module of
//! the running version. An edited file is never rewritten.

mod sample;

use std::io::Write;
use std::path::{Path, PathBuf};

use strata_eval::FactSource;
use strata_store::scip::{CODE_MODULE, CODE_PACK};

use crate::pack::PACK_FILE;

pub(crate) use sample::Sample;

/// The bundled module's path inside a database directory.
pub const CODE_MODULE_FILE: &str = "modules/code.dl";

/// What an ingest did about the bundled `code` pack.
#[derive(Debug, Default)]
pub enum CodePack {
    /// Nothing: the batch read no SCIP index, the database has a pack or a `code` module of
    /// its own, or Strata's are current.
    #[default]
    Untouched,
    /// Wrote `strata.toml` and `modules/code.dl`.
    Written,
    /// Rewrote Strata's own, unedited `strata.toml` and `modules/code.dl`: examples from the
    /// code stored now, the module of this version.
    Refreshed,
    /// Writing failed; the batch itself is committed.
    Failed(CodePackError),
}

/// Why the bundled pack could not be written.
#[derive(Debug, thiserror::Error)]
pub enum CodePackError {
    /// A file or folder could not be read or written.
    #[error("writing the bundled code pack: {}: {source}", .path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// The stored facts could not be read to choose the examples.
    #[error("writing the bundled code pack: reading the examples' names: {0}")]
    Read(#[from] strata_eval::SourceError),
}

/// The pack text for `source`'s code: the template's placeholders filled with its names, or
/// with neutral ones when it holds no document.
pub fn pack_for(source: &dyn FactSource) -> Result<String, CodePackError> {
    let sample = Sample::choose(source)?.unwrap_or_else(|| Sample {
        file: "REPO/src/main.py".into(),
        dir: "REPO/src".into(),
        method: "main".into(),
        owner: "App".into(),
        ty: "App".into(),
        symbol: "scip-python python REPO 1.0 `src.main`/App#main().".into(),
    });
    Ok(sample.fill(CODE_PACK))
}

/// Writes the bundled pack (examples from `source`) and module into the database directory
/// `db` when it has neither, or rewrites Strata's own when neither was edited since.
pub fn write(db: &Path, source: &dyn FactSource) -> Result<CodePack, CodePackError> {
    let pack = db.join(PACK_FILE);
    let module = db.join(CODE_MODULE_FILE);
    let (pack_state, module_state) = (state(&pack)?, state(&module)?);
    match (pack_state, module_state) {
        (State::Missing, State::Missing) => {}
        (State::Ours(old_pack), module_state @ (State::Ours(_) | State::Missing)) => {
            let old_module = match module_state {
                State::Ours(text) => text,
                _ => String::new(),
            };
            let modules = db.join("modules");
            std::fs::create_dir_all(&modules).map_err(io(&modules))?;
            let new_pack = marked(&pack_for(source)?);
            let new_module = marked(CODE_MODULE);
            if old_pack == new_pack && old_module == new_module {
                return Ok(CodePack::Untouched);
            }
            replace(&module, &new_module).map_err(io(&module))?;
            replace(&pack, &new_pack).map_err(io(&pack))?;
            return Ok(CodePack::Refreshed);
        }
        _ => return Ok(CodePack::Untouched),
    }
    let modules = db.join("modules");
    std::fs::create_dir_all(&modules).map_err(io(&modules))?;
    // The module first: the pack's examples call it.
    if !create_new(&module, &marked(CODE_MODULE)).map_err(io(&module))? {
        return Ok(CodePack::Untouched);
    }
    let text = match pack_for(source) {
        Ok(t) => t,
        Err(e) => {
            let _ = std::fs::remove_file(&module);
            return Err(e);
        }
    };
    match create_new(&pack, &marked(&text)) {
        Ok(true) => Ok(CodePack::Written),
        // Somebody wrote a pack in between: theirs stays, and so no bundled module either.
        Ok(false) => {
            let _ = std::fs::remove_file(&module);
            Ok(CodePack::Untouched)
        }
        Err(source) => {
            let _ = std::fs::remove_file(&module);
            Err(CodePackError::Io { path: pack, source })
        }
    }
}

/// The marker line's start; the fingerprint of the rest of the file follows it.
const MARKER: &str = "# Written by strata from the indexed code; edit freely (an edited file is never rewritten). fingerprint ";

/// `text` with the marker line on top.
fn marked(text: &str) -> String {
    format!("{MARKER}{:016x}\n{text}", fingerprint(text))
}

/// FNV-1a over the bytes: stable across versions and machines.
fn fingerprint(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Who a pack file belongs to.
enum State {
    /// There is none.
    Missing,
    /// Strata wrote it and nobody edited it since: its whole text.
    Ours(String),
    /// Its user's (or edited).
    Theirs,
}

fn state(path: &Path) -> Result<State, CodePackError> {
    if !exists(path)? {
        return Ok(State::Missing);
    }
    let Ok(text) = crate::regular::read_text(path) else {
        return Ok(State::Theirs);
    };
    let ours = text
        .strip_prefix(MARKER)
        .and_then(|rest| rest.split_once('\n'))
        .is_some_and(|(hex, body)| u64::from_str_radix(hex, 16) == Ok(fingerprint(body)));
    Ok(if ours {
        State::Ours(text)
    } else {
        State::Theirs
    })
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CodePackError {
    let path = path.to_owned();
    move |source| CodePackError::Io { path, source }
}

/// Writes `text` to `path` through a temporary file renamed over it, so a reader sees the
/// old file or the new one.
fn replace(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp-strata");
    let _ = std::fs::remove_file(&tmp);
    if !create_new(&tmp, text)? {
        return Err(std::io::Error::other("a temporary file is in the way"));
    }
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

fn exists(path: &Path) -> Result<bool, CodePackError> {
    path.try_exists().map_err(io(path))
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

    use strata_eval::{MemorySource, Value};

    use super::*;

    /// A small SCIP-shaped database: `a.py` defines `Model` and `Model#save().`, `b.py` and
    /// `c.py` call save from their functions, and `Child` implements `Model`.
    fn code() -> MemorySource {
        let mut m = MemorySource::new();
        for (rel, cols) in strata_store::scip::RELATIONS
            .iter()
            .map(|r| (r.name, r.columns))
        {
            m.add_relation(rel, cols);
        }
        let t = |s: &str| Value::Text(s.into());
        let model = "py r 1 `a`/Model#";
        let save = "py r 1 `a`/Model#save().";
        let child = "py r 1 `b`/Child#";
        for (rel, row) in [
            ("document", vec![t("r/a.py"), t("Python")]),
            ("document", vec![t("r/b.py"), t("Python")]),
            ("document", vec![t("r/c.py"), t("Python")]),
            ("in_directory", vec![t("r/a.py"), t("r")]),
            ("defines", vec![t("r/a.py"), t(model)]),
            ("defines", vec![t("r/a.py"), t(save)]),
            ("defines", vec![t("r/b.py"), t(child)]),
            ("references", vec![t("r/b.py"), t(save)]),
            ("references", vec![t("r/c.py"), t(save)]),
            ("symbol", vec![t(model), t("Class"), t("Model")]),
            ("symbol", vec![t(save), t("Method"), t("save")]),
            ("symbol", vec![t(child), t("Class"), t("Child")]),
            ("descriptor", vec![t(model), t("Type")]),
            ("descriptor", vec![t(save), t("Method")]),
            ("member_of", vec![t(save), t(model)]),
            ("implements", vec![t(child), t(model)]),
            (
                "call_site",
                vec![
                    t(save),
                    t("py r 1 `b`/f()."),
                    t("r/b.py"),
                    Value::Number(3.0),
                ],
            ),
            (
                "call_site",
                vec![
                    t(save),
                    t("py r 1 `c`/g()."),
                    t("r/c.py"),
                    Value::Number(9.0),
                ],
            ),
        ] {
            m.insert(rel, &row).unwrap();
        }
        m
    }

    #[test]
    fn examples_name_the_ingested_code() {
        let sample = Sample::choose(&code()).unwrap().unwrap();
        assert_eq!(
            sample,
            Sample {
                file: "r/a.py".into(),
                dir: "r".into(),
                method: "save".into(),
                owner: "Model".into(),
                ty: "Model".into(),
                symbol: "py r 1 `a`/Model#save().".into(),
            }
        );
        let text = pack_for(&code()).unwrap();
        assert!(!text.contains("{{"), "a placeholder left: {text}");
        assert!(!text.contains("myrepo"), "{text}");
        let pack = crate::pack::Pack::parse(&text).unwrap();
        assert!(pack.examples[0].program.contains("\"Model\""));
        assert!(pack.examples[1].program.contains("code.outline(\"r/a.py\""));
        // Each code question once.
        for q in [
            "code.call_sites(",
            "code.outline(",
            "code.callers(",
            "code.all_callers(",
            "code.callees(",
            "code.all_callees(",
            "code.other_sites(",
            "code.symbol_impact(",
            "code.defined_in(",
            "code.implementations(",
            "code.depends_on(",
            "code.dependents(",
            "code.impact(",
            "code.unreferenced(",
            "code.dir_deps(",
            "code.dir_cycles(",
        ] {
            let n = pack
                .examples
                .iter()
                .filter(|e| e.program.contains(q))
                .count();
            assert_eq!(n, 1, "{q} in {n} examples");
        }
        // The instructions an agent reads stay under Claude Code's 2 KB cut.
        let instructions = crate::instructions::instructions(&pack);
        assert!(instructions.len() < 2048, "{} bytes", instructions.len());
    }

    #[test]
    fn writes_both_refreshes_its_own_and_never_touches_a_users() {
        let dir = tempfile::tempdir().unwrap();
        let empty = MemorySource::new();
        assert!(matches!(
            write(dir.path(), &empty).unwrap(),
            CodePack::Written
        ));
        let pack = dir.path().join(PACK_FILE);
        let module = dir.path().join(CODE_MODULE_FILE);
        assert!(
            std::fs::read_to_string(&module)
                .unwrap()
                .ends_with(CODE_MODULE)
        );
        assert!(
            std::fs::read_to_string(&pack)
                .unwrap()
                .contains("REPO/src/main.py")
        );
        // Nothing new: nothing written.
        assert!(matches!(
            write(dir.path(), &empty).unwrap(),
            CodePack::Untouched
        ));
        // More code stored: Strata's own files are rewritten.
        assert!(matches!(
            write(dir.path(), &code()).unwrap(),
            CodePack::Refreshed
        ));
        assert!(std::fs::read_to_string(&pack).unwrap().contains("r/a.py"));
        // Edited: never again.
        let edited = format!("{}# mine\n", std::fs::read_to_string(&pack).unwrap());
        std::fs::write(&pack, &edited).unwrap();
        assert!(matches!(
            write(dir.path(), &empty).unwrap(),
            CodePack::Untouched
        ));
        assert_eq!(std::fs::read_to_string(&pack).unwrap(), edited);

        // A user's pack alone: no module added either.
        let user = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join(PACK_FILE), "name = \"mine\"\n").unwrap();
        assert!(matches!(
            write(user.path(), &code()).unwrap(),
            CodePack::Untouched
        ));
        assert!(!user.path().join(CODE_MODULE_FILE).exists());
        // A user's code module alone: no pack that would call into it.
        let user = tempfile::tempdir().unwrap();
        std::fs::create_dir(user.path().join("modules")).unwrap();
        std::fs::write(user.path().join(CODE_MODULE_FILE), "// mine\n").unwrap();
        assert!(matches!(
            write(user.path(), &code()).unwrap(),
            CodePack::Untouched
        ));
        assert!(!user.path().join(PACK_FILE).exists());
    }
}
