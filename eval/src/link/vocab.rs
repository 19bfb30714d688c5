//! The vocabulary: every relation a program may name.
//!
//! It holds the base relations a [`FactSource`] describes, the builtin predicates, and the
//! derived relations that modules define. A module is a `.dl` file of rules under a modules
//! directory: `modules/deps.dl` is module `deps`, `modules/net/pin.dl` is module `net.pin`.
//! Its heads are bare names: rule `depends_on` in module `deps` defines `deps.depends_on`.
//! Inside a module a bare name means the module's own member first, then the root. A member
//! whose name starts with `_` is private to its module: absent from the schema and refused in
//! a query. Each module is parsed and checked when the vocabulary is built, and an error in
//! one is reported against its file:
//!
//! ```
//! use strata_eval::Vocabulary;
//! use strata_eval::RelationInfo;
//!
//! let imports = RelationInfo {
//!     name: "imports".into(),
//!     columns: vec!["src".into(), "dst".into()],
//!     doc: String::new(),
//!     tier: "default".into(),
//!     rows: 0,
//!     distinct: vec![0, 0],
//!     origin: Default::default(),
//!     spelled: String::new(),
//!     unindexed: Vec::new(),
//! };
//! let deps = "# Everything a package depends on.\n\
//!             depends_on(?a, ?b) :- imports(?a, ?b);\n\
//!             depends_on(?a, ?c) :- depends_on(?a, ?b), imports(?b, ?c);\n";
//! let v = Vocabulary::from_sources(vec![imports.clone()], &[("deps", deps)]).unwrap();
//! assert_eq!(
//!     v.module_schema("deps").unwrap(),
//!     "module deps\ndeps.depends_on(a, b) # Everything a package depends on."
//! );
//!
//! let err = Vocabulary::from_sources(vec![imports], &[("deps", "d(?a) :- import(?a, _);")])
//!     .unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "modules/deps.dl: unknown relation \"import\"; did you mean \"imports\"?\n\
//!      line 1, column 10:\n  d(?a) :- import(?a, _);\n           ^\n\
//!      fix: did you mean \"imports\"?"
//! );
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::data::source::{FactSource, RelationInfo, SourceError};
use crate::front::ast::{self, HeadArg, Span, Term};
use crate::front::diagnostic::Diagnostic;
use crate::ir::Builtin;
use crate::link::linked::{LRule, link_rule};
use crate::link::resolve::{Resolver, Target, arity_error};
use crate::link::safety::check_rule;
use crate::link::strata::check_linked;

/// How deeply module directories may nest.
const MAX_DEPTH: usize = 32;

/// Why a vocabulary could not be built.
#[derive(Debug, thiserror::Error)]
pub enum VocabError {
    /// A module file or directory could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A module's path is not a valid dotted name, or two modules have the same path.
    #[error("{path}: {reason}")]
    ModulePath {
        /// The module's file (or dotted path, for modules given as text).
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A module does not parse or check; the diagnostic renders against its file.
    #[error("{}", diagnostic.render(file, text))]
    Module {
        /// The module's file, as errors name it (`modules/deps.dl`).
        file: String,
        /// The module's text.
        text: String,
        /// What is wrong, and where in `text`.
        diagnostic: Diagnostic,
    },
    /// The fact source could not list its relations.
    #[error(transparent)]
    Source(#[from] SourceError),
}

/// A builtin predicate's signature.
#[derive(Debug)]
pub(crate) struct BuiltinSig {
    /// Which builtin.
    pub builtin: Builtin,
    /// Its parameters' names.
    pub params: &'static [&'static str],
    /// What it tests.
    pub doc: &'static str,
}

/// Every builtin predicate, in the order `schema` lists them.
pub(crate) const BUILTINS: [BuiltinSig; 6] = [
    BuiltinSig {
        builtin: Builtin::Contains,
        params: &["s", "sub"],
        doc: "The text s contains the text sub.",
    },
    BuiltinSig {
        builtin: Builtin::Prefix,
        params: &["s", "p"],
        doc: "The text s starts with the text p.",
    },
    BuiltinSig {
        builtin: Builtin::Suffix,
        params: &["s", "x"],
        doc: "The text s ends with the text x.",
    },
    BuiltinSig {
        builtin: Builtin::Glob,
        params: &["s", "pattern"],
        doc: "The text s matches the glob pattern: * any run of characters, ? any one.",
    },
    BuiltinSig {
        builtin: Builtin::Match,
        params: &["s", "regex"],
        doc: "The text s contains a match of the regular expression regex.",
    },
    BuiltinSig {
        builtin: Builtin::Absent,
        params: &["x"],
        doc: "x is absent: a field the source did not state.",
    },
];

/// The builtin named `name`, if there is one.
pub(crate) fn builtin(name: &str) -> Option<&'static BuiltinSig> {
    BUILTINS.iter().find(|b| b.builtin.name() == name)
}

/// What kind of relation a schema entry describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelationKind {
    /// Stored facts.
    Base,
    /// A builtin predicate.
    Builtin,
    /// Defined by a module's rules.
    Derived,
}

/// A relation as `schema` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct RelationSchema {
    /// Its full name (`imports`, `deps.depends_on`, `str.contains`).
    pub name: String,
    /// Base, builtin or derived.
    pub kind: RelationKind,
    /// The module defining it (derived relations only).
    pub module: Option<String>,
    /// Its columns: a base relation's column names; for a derived relation, the variable
    /// names of its first rule's head (see `docs/language.md`); a builtin's parameters.
    pub columns: Vec<String>,
    /// Its doc, empty when none; lines joined with `\n`.
    pub doc: String,
    /// A derived relation's rules, one a line as written in its module (bare names), without
    /// their docs; empty for other kinds.
    pub rules: Vec<String>,
}

impl RelationSchema {
    /// `deps.depends_on(a, b)`.
    pub fn signature(&self) -> String {
        format!("{}({})", self.name, self.columns.join(", "))
    }

    /// The schema line: `deps.depends_on(a, b) # doc`, the doc's lines joined with spaces,
    /// and no `#` without a doc.
    pub fn line(&self) -> String {
        let doc: Vec<&str> = self
            .doc
            .split('\n')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        if doc.is_empty() {
            self.signature()
        } else {
            format!("{} # {}", self.signature(), doc.join(" "))
        }
    }
}

/// A module: its path, file and text, its syntax tree and its members.
#[derive(Clone, Debug)]
pub(crate) struct ModuleEntry {
    /// The dotted path (`deps`, `net.pin`).
    pub path: String,
    /// The file, as errors name it.
    pub file: String,
    /// The file's text.
    pub text: String,
    /// The parsed module.
    pub ast: ast::Module,
    /// Its members (indexes into [`Vocabulary::members`]), in order of first rule.
    pub members: Vec<usize>,
}

/// A relation a module defines.
#[derive(Clone, Debug)]
pub(crate) struct Member {
    /// The full name (`deps._step`).
    pub name: String,
    /// The defining module (an index into [`Vocabulary::modules`]).
    pub module: usize,
    /// Whether its name starts with `_`.
    pub private: bool,
    /// Its columns.
    pub columns: Vec<String>,
    /// Its doc (the comment above its first rule).
    pub doc: Option<String>,
    /// Its rules: indexes into the module's syntax tree's rules.
    pub rules: Vec<usize>,
    /// The same rules, linked and checked.
    pub linked: Vec<LRule>,
}

/// Every relation a program may name: base relations, builtins and module members.
#[derive(Clone, Debug)]
pub struct Vocabulary {
    pub(crate) base: Vec<RelationInfo>,
    pub(crate) base_index: HashMap<String, usize>,
    pub(crate) modules: Vec<ModuleEntry>,
    pub(crate) members: Vec<Member>,
    pub(crate) member_index: HashMap<String, usize>,
}

/// A module file to load: its dotted path, the name errors give its file, and its text.
struct ModuleFile {
    path: String,
    file: String,
    text: String,
}

/// A module file as [`Vocabulary::read_modules`] read it: its dotted path, its file as
/// errors name it (`modules/deps.dl`), and its text, or why it cannot be loaded (it cannot
/// be read, or its name is no module path) rendered as an error naming the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleText {
    /// The dotted path (`deps`, `net.pin`).
    pub path: String,
    /// The file, as errors name it.
    pub file: String,
    /// The file's text, or why it cannot be loaded.
    pub text: Result<String, ModuleFileError>,
}

/// Why a module file found by [`Vocabulary::read_modules`] cannot be loaded. It is kept with
/// the module set (compared, cloned, remembered between reloads), so an I/O error is kept as
/// its kind and text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModuleFileError {
    /// The file cannot be read.
    #[error("cannot be read: {message}")]
    Unreadable {
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error, rendered.
        message: String,
    },
    /// The file's name is no module path; why not.
    #[error("{0}")]
    NotAModulePath(String),
}

impl ModuleFileError {
    fn unreadable(e: &std::io::Error) -> ModuleFileError {
        ModuleFileError::Unreadable {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

impl Vocabulary {
    /// The vocabulary of `source`'s relations and the modules under `modules_dir` (every
    /// `.dl` file below it, at any depth; names starting with `.` are skipped).
    pub fn load(
        source: &dyn FactSource,
        modules_dir: Option<&Path>,
    ) -> Result<Vocabulary, VocabError> {
        let base = source.relations()?;
        let mut files = Vec::new();
        if let Some(dir) = modules_dir {
            let label = dir
                .file_name()
                .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into());
            read_modules(dir, &label, &mut Vec::new(), &mut files, false)?;
        }
        let files = files
            .into_iter()
            .map(|m| {
                let text = m.text.unwrap_or_default();
                ModuleFile {
                    path: m.path,
                    file: m.file,
                    text,
                }
            })
            .collect();
        build(base, files)
    }

    /// Every module file under `modules_dir`, as [`Vocabulary::load`] reads them, except
    /// that a file that cannot be read or whose name is no module path is answered with
    /// why rather than failing the whole folder: so a server can leave out (or keep the
    /// last good version of) one bad module and load the others. A folder that cannot be
    /// listed, or nests too deep, is still an error.
    pub fn read_modules(modules_dir: &Path) -> Result<Vec<ModuleText>, VocabError> {
        let label = modules_dir.file_name().map_or_else(
            || modules_dir.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        let mut files = Vec::new();
        read_modules(modules_dir, &label, &mut Vec::new(), &mut files, true)?;
        Ok(files)
    }

    /// The vocabulary of the base relations `base` and the modules `modules` as
    /// [`Vocabulary::read_modules`] answers them. A module that could not be read is an
    /// error naming its file ([`VocabError::ModulePath`]); one that does not parse or
    /// check is [`VocabError::Module`], naming its file.
    pub fn from_texts(
        base: Vec<RelationInfo>,
        modules: &[ModuleText],
    ) -> Result<Vocabulary, VocabError> {
        let mut files = Vec::with_capacity(modules.len());
        for m in modules {
            match &m.text {
                Ok(text) => files.push(ModuleFile {
                    path: m.path.clone(),
                    file: m.file.clone(),
                    text: text.clone(),
                }),
                Err(e) => {
                    return Err(VocabError::ModulePath {
                        path: m.file.clone(),
                        reason: e.to_string(),
                    });
                }
            }
        }
        build(base, files)
    }

    /// The vocabulary of the base relations `base` and the modules `modules`, each given as
    /// its dotted path and its text (for tests and embedding). Errors name a module's file as
    /// `modules/<path with / for .>.dl`.
    pub fn from_sources(
        base: Vec<RelationInfo>,
        modules: &[(&str, &str)],
    ) -> Result<Vocabulary, VocabError> {
        let mut files = Vec::new();
        for (path, text) in modules {
            if let Some(reason) = path_problem(path) {
                return Err(VocabError::ModulePath {
                    path: (*path).to_owned(),
                    reason,
                });
            }
            files.push(ModuleFile {
                path: (*path).to_owned(),
                file: format!("modules/{}.dl", path.replace('.', "/")),
                text: (*text).to_owned(),
            });
        }
        build(base, files)
    }

    /// The base relations, as the source describes them.
    pub fn base_relations(&self) -> &[RelationInfo] {
        &self.base
    }

    /// The modules' dotted paths, sorted.
    pub fn modules(&self) -> Vec<&str> {
        self.modules.iter().map(|m| m.path.as_str()).collect()
    }

    /// The builtin predicates.
    pub fn builtins() -> Vec<RelationSchema> {
        BUILTINS.iter().map(builtin_schema).collect()
    }

    /// Every public relation: base relations in the source's order, then each module's
    /// public members in module order and order of first rule. Builtins are listed by
    /// [`Vocabulary::builtins`].
    pub fn relations(&self) -> Vec<RelationSchema> {
        let mut out: Vec<RelationSchema> = self.base.iter().map(base_schema).collect();
        for m in &self.modules {
            out.extend(
                m.members
                    .iter()
                    .filter(|&&i| !self.members[i].private)
                    .map(|&i| self.member_schema(i)),
            );
        }
        out
    }

    /// The public relation, builtin included, named `name` (its full name).
    pub fn relation(&self, name: &str) -> Option<RelationSchema> {
        if let Some(b) = builtin(name) {
            return Some(builtin_schema(b));
        }
        if let Some(&i) = self.base_index.get(name) {
            return Some(base_schema(&self.base[i]));
        }
        let &i = self.member_index.get(name)?;
        (!self.members[i].private).then(|| self.member_schema(i))
    }

    /// The public members of the module at `path`, or `None` when there is no such module.
    pub fn module_members(&self, path: &str) -> Option<Vec<RelationSchema>> {
        let m = self.modules.iter().find(|m| m.path == path)?;
        Some(
            m.members
                .iter()
                .filter(|&&i| !self.members[i].private)
                .map(|&i| self.member_schema(i))
                .collect(),
        )
    }

    /// The schema text of a module: `module deps`, then one [`RelationSchema::line`] per
    /// public member, joined with newlines (no trailing newline).
    pub fn module_schema(&self, path: &str) -> Option<String> {
        let members = self.module_members(path)?;
        let mut out = format!("module {path}");
        for m in members {
            out.push('\n');
            out.push_str(&m.line());
        }
        Some(out)
    }

    /// A module's file (as errors name it) and text.
    pub fn module_source(&self, path: &str) -> Option<(&str, &str)> {
        let m = self.modules.iter().find(|m| m.path == path)?;
        Some((&m.file, &m.text))
    }

    fn member_schema(&self, i: usize) -> RelationSchema {
        let m = &self.members[i];
        let module = &self.modules[m.module];
        let rules = m
            .rules
            .iter()
            .filter_map(|&r| module.ast.rules.get(r))
            .map(|r| {
                let mut r = r.clone();
                r.doc = None;
                r.to_string()
            })
            .collect();
        RelationSchema {
            name: m.name.clone(),
            kind: RelationKind::Derived,
            module: Some(module.path.clone()),
            columns: m.columns.clone(),
            doc: m.doc.clone().unwrap_or_default(),
            rules,
        }
    }
}

fn base_schema(info: &RelationInfo) -> RelationSchema {
    RelationSchema {
        name: info.name.clone(),
        kind: RelationKind::Base,
        module: None,
        columns: info.columns.clone(),
        doc: info.doc.clone(),
        rules: Vec::new(),
    }
}

fn builtin_schema(b: &BuiltinSig) -> RelationSchema {
    RelationSchema {
        name: b.builtin.name().to_owned(),
        kind: RelationKind::Builtin,
        module: None,
        columns: b.params.iter().map(|p| (*p).to_owned()).collect(),
        doc: b.doc.to_owned(),
        rules: Vec::new(),
    }
}

/// Why `path` is not a valid module path, if it is not: one or more segments joined by `.`,
/// each an ASCII letter or `_` followed by ASCII letters, digits, `_` and `-`.
fn path_problem(path: &str) -> Option<String> {
    if path.split('.').all(valid_segment) {
        None
    } else {
        Some(format!(
            "\"{path}\" is not a module path: each segment is an ASCII letter or _ followed by \
             ASCII letters, digits, _ and -"
        ))
    }
}

/// Whether `s` is a valid name segment.
pub(crate) fn valid_segment(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Reads every `.dl` file under `dir` (sorted by name, directories recursed), with `segments`
/// the module path so far.
/// With `lenient`, a file that cannot be read or is named badly is answered with why
/// instead of failing the whole folder.
fn read_modules(
    dir: &Path,
    label: &str,
    segments: &mut Vec<String>,
    out: &mut Vec<ModuleText>,
    lenient: bool,
) -> Result<(), VocabError> {
    let io = |source| VocabError::Io {
        path: dir.to_owned(),
        source,
    };
    let mut entries = std::fs::read_dir(dir)
        .map_err(io)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io)?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let file = || {
            let mut parts = vec![label.to_owned()];
            parts.extend(segments.iter().cloned());
            parts.push(name.clone());
            parts.join("/")
        };
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            Err(source) if lenient && name.ends_with(".dl") => {
                let mut module = segments.clone();
                module.push(name.trim_end_matches(".dl").to_owned());
                out.push(ModuleText {
                    path: module.join("."),
                    file: file(),
                    text: Err(ModuleFileError::unreadable(&source)),
                });
                continue;
            }
            Err(source) => {
                return Err(VocabError::Io {
                    path: path.clone(),
                    source,
                });
            }
        };
        if meta.is_dir() {
            if !valid_segment(&name) {
                continue;
            }
            if segments.len() >= MAX_DEPTH {
                return Err(VocabError::ModulePath {
                    path: file(),
                    reason: format!("modules nest at most {MAX_DEPTH} directories deep"),
                });
            }
            segments.push(name.clone());
            read_modules(&path, label, segments, out, lenient)?;
            segments.pop();
        } else if let Some(stem) = name.strip_suffix(".dl") {
            let mut module = segments.clone();
            module.push(stem.to_owned());
            let module = module.join(".");
            let text = match path_problem(&module) {
                Some(reason) if lenient => Err(ModuleFileError::NotAModulePath(reason)),
                Some(reason) => {
                    return Err(VocabError::ModulePath {
                        path: file(),
                        reason,
                    });
                }
                None => match read_module(&path) {
                    Ok(text) => Ok(text),
                    Err(source) if lenient => Err(ModuleFileError::unreadable(&source)),
                    Err(source) => {
                        return Err(VocabError::Io {
                            path: path.clone(),
                            source,
                        });
                    }
                },
            };
            out.push(ModuleText {
                path: module,
                file: file(),
                text,
            });
        }
    }
    Ok(())
}

/// The most a module file may hold.
const MAX_MODULE_BYTES: u64 = 16 << 20;

/// Reads a module file as what it must be: a regular file of a sane size. It is opened with
/// `O_NONBLOCK` and then `fstat`ed, so a FIFO named `x.dl` is an error at once, not a hang.
fn read_module(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let invalid = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, what);
    let (file, _) = crate::file::open_regular(path, MAX_MODULE_BYTES).map_err(|e| match e {
        crate::file::RegularFileError::Io(e) => e,
        crate::file::RegularFileError::NotRegular { .. } => {
            invalid("not a regular file (a FIFO, a device or a socket?); remove it".to_owned())
        }
        crate::file::RegularFileError::TooLong { len, .. } => invalid(format!(
            "{len} bytes, more than the {MAX_MODULE_BYTES} a module may hold"
        )),
    })?;
    let mut text = String::new();
    file.take(MAX_MODULE_BYTES).read_to_string(&mut text)?;
    Ok(text)
}

/// Builds and checks the vocabulary.
fn build(base: Vec<RelationInfo>, mut files: Vec<ModuleFile>) -> Result<Vocabulary, VocabError> {
    files.sort_by(|a, b| a.path.cmp(&b.path));
    if let Some(w) = files.windows(2).find(|w| w[0].path == w[1].path) {
        return Err(VocabError::ModulePath {
            path: w[1].file.clone(),
            reason: format!("module \"{}\" is given twice", w[1].path),
        });
    }
    let mut base_index = HashMap::new();
    for (i, r) in base.iter().enumerate() {
        base_index.entry(r.name.clone()).or_insert(i);
    }
    let mut v = Vocabulary {
        base,
        base_index,
        modules: Vec::new(),
        members: Vec::new(),
        member_index: HashMap::new(),
    };
    for f in files {
        let ast = crate::front::parse::parse_module(&f.text).map_err(|diagnostic| {
            VocabError::Module {
                file: f.file.clone(),
                text: f.text.clone(),
                diagnostic,
            }
        })?;
        v.modules.push(ModuleEntry {
            path: f.path,
            file: f.file,
            text: f.text,
            ast,
            members: Vec::new(),
        });
    }
    for mi in 0..v.modules.len() {
        declare_members(&mut v, mi).map_err(|d| module_error(&v, mi, d))?;
    }
    for mi in 0..v.modules.len() {
        let linked = link_module(&v, mi).map_err(|d| module_error(&v, mi, d))?;
        for (member, rule) in linked {
            v.members[member].linked.push(rule);
        }
    }
    let rules: Vec<(&LRule, usize)> = v
        .members
        .iter()
        .flat_map(|m| m.linked.iter().map(move |r| (r, m.module)))
        .collect();
    let names = |t: Target| match t {
        Target::Member(i) => v
            .members
            .get(i)
            .map_or_else(String::new, |m| m.name.clone()),
        _ => String::new(),
    };
    if let Err((mi, d)) = check_linked(&rules, &names) {
        return Err(module_error(&v, mi, d));
    }
    Ok(v)
}

fn module_error(v: &Vocabulary, mi: usize, diagnostic: Diagnostic) -> VocabError {
    let m = &v.modules[mi];
    VocabError::Module {
        file: m.file.clone(),
        text: m.text.clone(),
        diagnostic,
    }
}

/// Declares the members module `mi` defines: names, arities, columns, docs.
fn declare_members(v: &mut Vocabulary, mi: usize) -> Result<(), Diagnostic> {
    let module = &v.modules[mi];
    let mut new_members: Vec<usize> = Vec::new();
    for (ri, rule) in module.ast.rules.iter().enumerate() {
        let head = &rule.head;
        let full = format!("{}.{}", module.path, head.relation.text);
        if let Some(&i) = v.member_index.get(&full) {
            let m: &mut Member = &mut v.members[i];
            if m.columns.len() != head.args.len() {
                let sig = format!("{}({})", head.relation.text, m.columns.join(", "));
                let spans: Vec<Span> = head.args.iter().map(HeadArg::span).collect();
                return Err(arity_error(&sig, m.columns.len(), &spans, head.span));
            }
            m.rules.push(ri);
            continue;
        }
        let clash = if builtin(&full).is_some() {
            Some("a builtin")
        } else if v.base_index.contains_key(&full) {
            Some("a base relation")
        } else {
            None
        };
        if let Some(what) = clash {
            return Err(Diagnostic::new(
                format!(
                    "module \"{}\" defines \"{full}\", which is {what}",
                    module.path
                ),
                head.relation.span,
            )
            .with_fix(format!(
                "give the relation another name, such as my_{}",
                head.relation.text.trim_start_matches('_')
            )));
        }
        let i = v.members.len();
        v.members.push(Member {
            name: full.clone(),
            module: mi,
            private: head.relation.is_private(),
            columns: head_columns(&head.args),
            doc: rule.doc.clone(),
            rules: vec![ri],
            linked: Vec::new(),
        });
        v.member_index.insert(full, i);
        new_members.push(i);
    }
    v.modules[mi].members = new_members;
    Ok(())
}

/// A derived relation's column names, from its first rule's head: a variable's name, an
/// aggregate's function and variable (`count_d`), `argN` for a constant; a repeated name gets
/// its position as a suffix (`x_2`).
pub(crate) fn head_columns(args: &[HeadArg]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        let name = match a {
            HeadArg::Term(Term::Var(v)) => v.name.clone(),
            HeadArg::Aggregate(agg) => format!("{}_{}", agg.func, agg.var.name),
            HeadArg::Term(_) => format!("arg{}", i + 1),
        };
        let name = if out.contains(&name) {
            format!("{name}_{}", i + 1)
        } else {
            name
        };
        out.push(name);
    }
    out
}

/// Links and checks every rule of module `mi`: the rules, each with its member's index.
fn link_module(v: &Vocabulary, mi: usize) -> Result<Vec<(usize, LRule)>, Diagnostic> {
    let module = &v.modules[mi];
    let resolver = Resolver {
        vocab: v,
        module: Some(mi),
        locals: &[],
    };
    let mut out = Vec::new();
    for rule in &module.ast.rules {
        let full = format!("{}.{}", module.path, rule.head.relation.text);
        let Some(&member) = v.member_index.get(&full) else {
            continue;
        };
        let linked = link_rule(&resolver, rule, Target::Member(member))?;
        check_rule(&linked)?;
        out.push((member, linked));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::parse::parse_module;

    #[test]
    fn segments() {
        assert!(valid_segment("deps"));
        assert!(valid_segment("_x-1"));
        assert!(!valid_segment(""));
        assert!(!valid_segment("1x"));
        assert!(!valid_segment("a b"));
        assert!(path_problem("net.pin").is_none());
        assert!(path_problem("net..pin").is_some());
    }

    #[test]
    fn columns_of_a_head() {
        let m = parse_module("r(?a, count(?d), \"x\", ?a) :- s(?a, ?d);").unwrap();
        assert_eq!(
            head_columns(&m.rules[0].head.args),
            ["a", "count_d", "arg3", "a_4"]
        );
    }

    #[test]
    fn schema_lines() {
        let mut s = Vocabulary::builtins().remove(0);
        assert_eq!(
            s.line(),
            "str.contains(s, sub) # The text s contains the text sub."
        );
        s.doc = "First.\n\nSecond.".to_owned();
        assert_eq!(s.line(), "str.contains(s, sub) # First. Second.");
        s.doc.clear();
        assert_eq!(s.line(), "str.contains(s, sub)");
    }

    #[test]
    fn modules_given_twice_or_named_badly() {
        let err = Vocabulary::from_sources(Vec::new(), &[("a", ""), ("a", "")]).unwrap_err();
        assert_eq!(err.to_string(), "modules/a.dl: module \"a\" is given twice");
        let err = Vocabulary::from_sources(Vec::new(), &[("a.", "")]).unwrap_err();
        assert!(matches!(err, VocabError::ModulePath { .. }));
    }

    #[test]
    fn empty_modules_and_docs() {
        let v = Vocabulary::from_sources(
            Vec::new(),
            &[
                ("empty", "# nothing here\n"),
                ("m", "# Doc.\n# More.\nx(?a) :- y(?a);\n# Not a doc of x.\nx(?a) :- y(?a);\n\n_y(?a) :- x(?a);\ny(?a) :- _y(?a);"),
            ],
        )
        .unwrap();
        assert_eq!(v.module_schema("empty").unwrap(), "module empty");
        assert_eq!(
            v.module_schema("m").unwrap(),
            "module m\nm.x(a) # Doc. More.\nm.y(a)"
        );
        assert_eq!(v.relation("m.x").unwrap().doc, "Doc.\nMore.");
        assert!(v.module_members("nope").is_none());
        assert_eq!(v.module_source("m").unwrap().0, "modules/m.dl");
    }
}
