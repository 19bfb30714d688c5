//! The modules an application serves: each `.dl` file under the database's `modules/` is
//! loaded on its own account, so one that does not parse or check (or cannot be read) fails
//! alone. It is refused, said once on standard error, and the last version of it that
//! loaded keeps serving (when there is none, its relations are left out); every other
//! module, and every program that does not use the refused one, is unaffected. A call whose
//! program uses a refused module says so in its answer (a note, or beside its error), with
//! the module's own error, line and caret.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use strata_eval::{FactSource, ModuleText, VocabError, Vocabulary};

use crate::error::CallError;

/// A module left out of the vocabulary, or served from its last good version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    /// Its dotted path (`deps`).
    pub(crate) path: String,
    /// Its file, as errors name it (`modules/deps.dl`).
    pub(crate) file: String,
    /// Why it was refused: the loader's error, with its line and caret.
    pub(crate) error: String,
    /// Whether the last version of it that loaded serves in its place.
    pub(crate) kept: bool,
}

impl Refused {
    /// What an answer says of it.
    pub(crate) fn note(&self) -> String {
        let serves = if self.kept {
            format!(
                "the last version of module {} that loaded answered",
                self.path
            )
        } else {
            format!(
                "module {} is left out until it loads (no earlier version of it loaded)",
                self.path
            )
        };
        format!("{} does not load, so {serves}:\n{}", self.file, self.error)
    }

    /// Whether `name`, a relation's full name, is one of this module's members.
    pub(crate) fn owns(&self, name: &str) -> bool {
        name.strip_prefix(self.path.as_str())
            .and_then(|rest| rest.strip_prefix('.'))
            .is_some_and(|member| !member.contains('.'))
    }
}

/// What an answer of a program reading the derived relations `derived` says of the
/// refused modules it uses: one [`Refused::note`] each.
pub(crate) fn used(derived: &[&str], refused: &[Refused]) -> Vec<String> {
    refused
        .iter()
        .filter(|r| derived.iter().any(|d| r.owns(d)))
        .map(Refused::note)
        .collect()
}

/// A program's error `e`, with the refused modules it names (`deps.` in its message: the
/// program named a member of a module left out) said beside it.
pub(crate) fn beside(e: CallError, refused: &[Refused]) -> CallError {
    let text = e.to_string();
    let notes: Vec<String> = refused
        .iter()
        .filter(|r| text.contains(&format!("{}.", r.path)))
        .map(Refused::note)
        .collect();
    if notes.is_empty() {
        e
    } else {
        CallError::ModuleRefused {
            program: Box::new(e),
            notes,
        }
    }
}

/// What loading the modules remembers between loads: the last text of each module that
/// loaded, and the refusals already said on standard error.
#[derive(Debug, Default)]
pub(crate) struct LastGood {
    /// Each module's last text that loaded, by dotted path.
    texts: BTreeMap<String, String>,
    /// The refusals said on standard error, by file and error, so each is said once.
    said: BTreeSet<(String, String)>,
}

/// A vocabulary and the modules refused building it.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The vocabulary: the base relations and every module that loaded.
    pub(crate) vocab: Vocabulary,
    /// The modules refused, by path.
    pub(crate) refused: Vec<Refused>,
}

/// The vocabulary of `source` and the modules under `dir`, each module failing alone: one
/// that does not load is replaced by its last good version in `last` (or left out when
/// that does not load either, or there is none), and reported. Fails only when the
/// source's relations cannot be listed or the folder cannot be walked.
pub(crate) fn load(
    source: &dyn FactSource,
    dir: Option<&Path>,
    last: &mut LastGood,
) -> Result<Loaded, VocabError> {
    let base = source.relations()?;
    let mut texts = match dir {
        Some(d) => Vocabulary::read_modules(d)?,
        None => Vec::new(),
    };
    let (vocab, refused) = build(&base, &mut texts, &last.texts)?;
    remember(last, &texts, &refused);
    Ok(Loaded { vocab, refused })
}

/// Builds the vocabulary from `texts`, replacing (once) or removing each module the build
/// names as failing, until it builds; `texts` is left holding what was built.
fn build(
    base: &[strata_eval::RelationInfo],
    texts: &mut Vec<ModuleText>,
    good: &BTreeMap<String, String>,
) -> Result<(Vocabulary, Vec<Refused>), VocabError> {
    let mut refused: Vec<Refused> = Vec::new();
    loop {
        let err = match Vocabulary::from_texts(base.to_vec(), texts) {
            Ok(vocab) => return Ok((vocab, refused)),
            Err(e) => e,
        };
        let file = match &err {
            VocabError::Module { file, .. } => file.clone(),
            VocabError::ModulePath { path, .. } => path.clone(),
            _ => return Err(err),
        };
        // Every round removes or replaces one module, so this ends.
        let Some(i) = texts.iter().position(|t| t.file == file) else {
            return Err(err);
        };
        let path = texts[i].path.clone();
        let earlier = refused.iter_mut().find(|r| r.path == path);
        let last = good
            .get(&path)
            .filter(|g| texts[i].text.as_ref().ok() != Some(*g));
        match (earlier, last) {
            (None, Some(g)) => {
                refused.push(Refused {
                    path,
                    file,
                    error: err.to_string(),
                    kept: true,
                });
                texts[i].text = Ok(g.clone());
            }
            (None, None) => {
                refused.push(Refused {
                    path,
                    file,
                    error: err.to_string(),
                    kept: false,
                });
                texts.remove(i);
            }
            // Its last good version does not load either (a module it uses changed).
            (Some(r), _) => {
                r.kept = false;
                texts.remove(i);
            }
        }
    }
}

/// Keeps what was built as each module's last good text (a module whose file is gone is
/// forgotten), and says each new refusal on standard error.
fn remember(last: &mut LastGood, built: &[ModuleText], refused: &[Refused]) {
    for t in built {
        if let Ok(text) = &t.text {
            last.texts.insert(t.path.clone(), text.clone());
        }
    }
    last.texts.retain(|path, _| {
        built.iter().any(|t| &t.path == path) || refused.iter().any(|r| &r.path == path)
    });
    let now: BTreeSet<(String, String)> = refused
        .iter()
        .map(|r| (r.file.clone(), r.error.clone()))
        .collect();
    for r in refused {
        if !last.said.contains(&(r.file.clone(), r.error.clone())) {
            eprintln!("strata: {}", r.note());
        }
    }
    last.said = now;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use strata_eval::{MemorySource, Value};

    use super::*;

    fn source() -> MemorySource {
        let mut src = MemorySource::new();
        src.add_relation("imports", &["src", "dst"]);
        src.insert("imports", &[Value::text("a"), Value::text("b")])
            .unwrap();
        src
    }

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn a_bad_module_keeps_its_last_good_version_and_the_others_load() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("modules");
        std::fs::create_dir(&dir).unwrap();
        write(&dir, "deps.dl", "d(?a, ?b) :- imports(?a, ?b);\n");
        write(&dir, "other.dl", "o(?a) :- imports(?a, _);\n");
        let mut last = LastGood::default();
        let first = load(&source(), Some(&dir), &mut last).unwrap();
        assert!(first.refused.is_empty());

        write(&dir, "deps.dl", "d(?a, ?b) :- imports(?a ?b);\n");
        let second = load(&source(), Some(&dir), &mut last).unwrap();
        assert_eq!(second.refused.len(), 1);
        let r = &second.refused[0];
        assert!(r.kept);
        assert_eq!(r.file, "modules/deps.dl");
        assert!(r.error.contains("line 1, column"), "{}", r.error);
        assert!(r.error.contains('^'), "{}", r.error);
        assert!(second.vocab.relation("deps.d").is_some());
        assert!(second.vocab.relation("other.o").is_some());
        assert!(r.owns("deps.d") && !r.owns("other.o") && !r.owns("deps.x.y"));

        // Fixed: served as written, nothing refused.
        write(&dir, "deps.dl", "d2(?a, ?b) :- imports(?a, ?b);\n");
        let third = load(&source(), Some(&dir), &mut last).unwrap();
        assert!(third.refused.is_empty());
        assert!(third.vocab.relation("deps.d2").is_some());
        assert!(third.vocab.relation("deps.d").is_none());
    }

    #[test]
    fn a_module_bad_from_the_start_is_left_out_and_one_using_it_too() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("modules");
        std::fs::create_dir(&dir).unwrap();
        write(&dir, "bad.dl", "b(?a) :- nothing(?a);\n");
        write(&dir, "user.dl", "u(?a) :- bad.b(?a);\n");
        write(&dir, "fine.dl", "f(?a) :- imports(?a, _);\n");
        write(&dir, "9name.dl", "n(?a) :- imports(?a, _);\n");
        let mut last = LastGood::default();
        let out = load(&source(), Some(&dir), &mut last).unwrap();
        let files: Vec<&str> = out.refused.iter().map(|r| r.file.as_str()).collect();
        assert_eq!(
            files,
            ["modules/9name.dl", "modules/bad.dl", "modules/user.dl"]
        );
        assert!(out.refused.iter().all(|r| !r.kept));
        assert!(out.vocab.relation("fine.f").is_some());
        assert_eq!(out.vocab.modules(), ["fine"]);
    }

    #[test]
    fn a_last_good_version_that_no_longer_loads_is_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("modules");
        std::fs::create_dir(&dir).unwrap();
        write(&dir, "base.dl", "b(?a) :- imports(?a, _);\n");
        write(&dir, "user.dl", "u(?a) :- base.b(?a);\n");
        let mut last = LastGood::default();
        load(&source(), Some(&dir), &mut last).unwrap();
        // `base` renames its member and `user` breaks: its last good version uses the old
        // name, so it is left out; `base` serves as written.
        write(&dir, "base.dl", "c(?a) :- imports(?a, _);\n");
        write(&dir, "user.dl", "u(?a) :- base.b(?a) ;; \n");
        let out = load(&source(), Some(&dir), &mut last).unwrap();
        assert_eq!(out.refused.len(), 1);
        assert!(!out.refused[0].kept);
        assert_eq!(out.vocab.modules(), ["base"]);
    }
}
