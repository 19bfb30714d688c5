//! SCIP indexes: the code facts real indexers write (`scip-typescript`, `scip-python`,
//! `rust-analyzer scip`, `scip-go`, `scip-java`, `scip-clang`...), read as a dump.
//!
//! An index is read as a stream: its top-level fields are framed here (module `wire`) and each
//! document is decoded on its own with the `scip` crate, so memory holds one document at a
//! time (plus what the batch keeps), never the whole index.
//!
//! # Units and paths
//!
//! Every document is one ownership unit, named `REPO/relative_path`, and that is also its
//! `path` in every relation. `REPO` is the `--repo` (or `--unit`) of the ingest when given
//! (`strata ingest --repo myrepo DB index.scip`), else the last segment of the index's
//! `metadata.project_root` (`file:///home/me/src/myrepo` gives `myrepo`). So two repositories'
//! `src/index.ts` are `a/src/index.ts` and `b/src/index.ts`, and `--replace` of one
//! repository's index replaces only that repository's documents. The facts of the index's
//! `external_symbols` belong to the unit `REPO` itself.
//!
//! A `relative_path` is normalized (`a//b`, `./a`, `a/x/../b`); a document whose path is empty,
//! absolute, holds a NUL or leaves the repository, or whose positions are out of range
//! (negative, ending before they start), is skipped and named, the rest read. Documents of one
//! index that share a path are merged under it (see `fresh`). `REPO` follows the rules of
//! [`valid_repository`] wherever it comes from.
//!
//! # How complete `uses` is
//!
//! `uses(from_symbol, to_symbol)` comes from `Occurrence.enclosing_range`, which SCIP leaves
//! optional: a reference counts only inside a definition that has one, and an indexer that
//! writes none gives no `uses` at all. Measured on the indexes the tests make: scip-typescript
//! 0.4.0 over rxjs 7.8.2 gives enclosing ranges on 1,076 of its 3,529 global definitions
//! (functions, methods, classes), scip-python 0.6.6 over packaging 24.2 on 261 of 847; so
//! `uses`, `callers` and `callees` there cover calls made inside functions, methods and
//! classes, not from module-level code. `defines`, `references` and everything built on them
//! (the `code` module's `depends_on`, `dependents`, `impact`) need no enclosing ranges and are
//! complete for every indexer.
//!
//! # Fresh after every commit
//!
//! Read with `--replace`, a new index of a repository skips every document whose bytes are
//! the ones stored (`document_hash`), replaces the others and retracts the repository's
//! documents it no longer has; [`crate::Batch::documents`] counts each (see `fresh`).
//! An index with no document that can be read never retracts the repository's documents
//! unless the batch allows it ([`crate::BatchOptions::allow_empty`]): [`ScipError::Empty`].
//!
//! # Relations
//!
//! See [`RELATIONS`] for the names, columns and what each holds. Global symbols are SCIP's
//! symbol strings (`scip-typescript npm rxjs 7.8.2 src/`Observable.ts`/Observable#pipe().`),
//! the same in every index, which is what joins the facts of several repositories;
//! document-local symbols (`local 12`) are left out of every relation.

mod checkout;
mod error;
mod facts;
mod fresh;
mod repair;
mod symbol;
mod wire;
mod worker;

use std::io::BufRead;
use std::sync::Arc;

use protobuf::Message;
use scip::types::Metadata;

pub use checkout::{Checkout, SOURCE_MAX_BYTES, SourceCounts, SourceRefusal, source_hash};
pub use error::{Place, Problem, ScipError};
pub use fresh::{DocumentChanges, SkippedDocument};
use fresh::{Fresh, Held, Verdict};
use wire::{FieldHead, Fields, LEN, WireError};
use worker::{Field, Hashed, Pipe};

use crate::dump::{DumpSpec, FactSink};
use crate::error::IngestError;

type Result<T, E = IngestError> = std::result::Result<T, E>;

/// The bundled `code` module (`modules/code.dl`) over the relations of [`RELATIONS`]: file
/// questions (`depends_on`, `dependents`, `impact`), call questions (`call_sites`, `callers`,
/// `all_callers`, `callees`, `all_callees`, `other_sites`, `symbol_impact`), `outline`,
/// `unreferenced`, `implementations`, `defined_in` and directory questions (`dir_deps`,
/// `dir_depends_on`, `dir_cycles`).
pub const CODE_MODULE: &str = include_str!("code.dl");

/// The bundled pack's template (`strata.toml`) for a database of SCIP indexes: what it is
/// about, an example for each of the `code` module's questions (with placeholders such as
/// `{{FILE}}` and `{{METHOD}}` that the application fills with the ingested code's names),
/// a hint, and the Cypher labels
/// `Document`, `Symbol` and types `DEFINES`, `REFERENCES`, `USES`, `IMPLEMENTS`, `MEMBER_OF`.
pub const CODE_PACK: &str = include_str!("code.toml");

/// One relation a SCIP index is read into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relation {
    /// Its name.
    pub name: &'static str,
    /// Its columns' names.
    pub columns: &'static [&'static str],
    /// What a fact of it says (stored as the relation's doc line).
    pub doc: &'static str,
}

/// The relations, indexed by [`Rel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rel {
    Document,
    Defines,
    References,
    DefinitionAt,
    ReferenceAt,
    Symbol,
    Documentation,
    Implements,
    TypeDefinition,
    ReferencesSymbol,
    DefinitionOf,
    MemberOf,
    Package,
    Uses,
    DocumentHash,
    CallSite,
    OtherSite,
    Descriptor,
    InDirectory,
    SourceFile,
    Checkout,
}

/// Every relation a SCIP index is read into: the contract agents and the `code` module rely on.
pub const RELATIONS: &[Relation] = &[
    Relation {
        name: "document",
        columns: &["path", "language"],
        doc: "a source file of the index, its path qualified by its repository (REPO/relative_path), \
              and its language (SCIP's Language name, e.g. TypeScript, Python)",
    },
    Relation {
        name: "defines",
        columns: &["path", "symbol"],
        doc: "the document holds a definition of the global symbol",
    },
    Relation {
        name: "references",
        columns: &["path", "symbol"],
        doc: "the document holds an occurrence of the global symbol that is not a definition",
    },
    Relation {
        name: "definition_at",
        columns: &["symbol", "path", "line"],
        doc: "the symbol is defined at this 1-based line of the document",
    },
    Relation {
        name: "reference_at",
        columns: &["path", "symbol", "line"],
        doc: "the document refers to the symbol at this 1-based line",
    },
    Relation {
        name: "symbol",
        columns: &["symbol", "kind", "display_name"],
        doc: "a global symbol, its kind (SCIP's SymbolInformation.Kind name where the indexer \
              gives one, else its last descriptor's: Namespace, Type, Term, Method, \
              TypeParameter, Parameter, Macro, Meta) and the name to show for it",
    },
    Relation {
        name: "documentation",
        columns: &["symbol", "text"],
        doc: "the first prose paragraph of the symbol's documentation",
    },
    Relation {
        name: "implements",
        columns: &["symbol", "target"],
        doc: "the symbol implements (or overrides, or extends) target",
    },
    Relation {
        name: "type_definition",
        columns: &["symbol", "target"],
        doc: "target is the type of the symbol",
    },
    Relation {
        name: "references_symbol",
        columns: &["symbol", "target"],
        doc: "a reference to the symbol is also a reference to target (SCIP's is_reference)",
    },
    Relation {
        name: "definition_of",
        columns: &["symbol", "target"],
        doc: "the symbol's definition also defines target (SCIP's is_definition)",
    },
    Relation {
        name: "member_of",
        columns: &["symbol", "owner"],
        doc: "the symbol is a member of owner, read from its descriptors \
              (pkg/Foo#bar(). is a member of pkg/Foo#)",
    },
    Relation {
        name: "package",
        columns: &["symbol", "manager", "name", "version"],
        doc: "the package the symbol belongs to: its manager (npm, python...), name and version",
    },
    Relation {
        name: "uses",
        columns: &["from_symbol", "to_symbol"],
        doc: "a reference to to_symbol lies inside the enclosing range of from_symbol's \
              definition (the innermost enclosing definition of a global symbol)",
    },
    Relation {
        name: "document_hash",
        columns: &["path", "hash"],
        doc: "a hash of the document's bytes in the index, by which a re-ingest with \
              --replace skips the documents that did not change",
    },
    Relation {
        name: "call_site",
        columns: &["callee", "caller", "path", "line"],
        doc: "a reference to callee at this 1-based line of the document lies inside the \
              definition of caller, the innermost global definition enclosing it, which can \
              be a caller (a method, function, term or macro, from its last descriptor); a \
              definition is not its own caller",
    },
    Relation {
        name: "other_site",
        columns: &["symbol", "holder", "path", "line"],
        doc: "a reference to the symbol at this 1-based line of the document that no caller \
              holds: its innermost enclosing definition (holder) is a type or a namespace \
              (a class body, a module's own code), or absent when none encloses it (a file's \
              top-level code, decorators)",
    },
    Relation {
        name: "descriptor",
        columns: &["symbol", "kind"],
        doc: "the kind the global symbol's last descriptor gives it, whatever the indexer: \
              Namespace, Type, Term, Method, TypeParameter, Parameter, Macro or Meta",
    },
    Relation {
        name: "in_directory",
        columns: &["path", "dir"],
        doc: "the document lies directly in the directory dir (REPO/a/b for REPO/a/b/c.py, \
              REPO for a file at the repository's top)",
    },
    Relation {
        name: "source_file",
        columns: &["path", "hash"],
        doc: "the document's source file as it was in the repository's checkout at ingest: \
              its content hash (128 bits, 32 hex digits, see docs/scip.md), by which an \
              answer shows a cited line only while the file is unchanged",
    },
    Relation {
        name: "checkout",
        columns: &["repo", "dir"],
        doc: "the directory the repository's source files were read from at ingest \
              (--checkout, else a local file:// metadata.project_root), resolved",
    },
];

/// The top-level fields of `scip.Index`.
const METADATA: u64 = 1;
const DOCUMENTS: u64 = 2;
const EXTERNAL_SYMBOLS: u64 = 3;

/// The fields of `scip.Document` and their wire types.
const DOCUMENT_FIELDS: &[(u64, u8, &str)] = &[
    (1, LEN, "Document.relative_path, a string"),
    (2, LEN, "Document.occurrences, a message"),
    (3, LEN, "Document.symbols, a message"),
    (4, LEN, "Document.language, a string"),
    (5, LEN, "Document.text, a string"),
    (6, wire::VARINT, "Document.position_encoding, an enum"),
];

/// Reads a whole SCIP index into `sink`; returns the number of facts read. A malformed index
/// stops the read with a [`ScipError`] naming the document.
///
/// The index is framed and each document's content hash checked on this thread; worker
/// threads decode the documents and gather their facts (see `worker`), which are written
/// into `sink` here, in the index's order.
pub fn read(input: impl BufRead, spec: &DumpSpec, sink: &mut dyn FactSink) -> Result<u64> {
    if let Some(name) = &spec.unit
        && !valid_repository(name)
    {
        return Err(ScipError::Repository {
            file: spec.label.clone(),
            name: name.clone(),
        }
        .into());
    }
    let mut reader = Reader {
        file: spec.label.clone(),
        repo: spec.unit.clone(),
        root: None,
        documents: 0,
        externals: 0,
        paths: Default::default(),
        merged: 0,
        checkout_given: spec.checkout.is_some(),
        checkout: spec
            .checkout
            .as_deref()
            .and_then(|d| Checkout::open(d).ok())
            .map(Arc::new),
        sources: SourceCounts::default(),
    };
    let stored = sink.stored().map_err(|e| ScipError::Stored {
        file: spec.label.clone(),
        cause: e.into(),
    })?;
    let allow_empty = sink.allow_empty();
    let mut fresh = stored.map(Fresh::new);
    let mut fields = Fields::new(input);
    std::thread::scope(|scope| {
        let mut pipe = Pipe::start(scope, spec.label.clone(), sink, fresh.is_some());
        pipe.checkout = reader.checkout.clone();
        let read = reader
            .fields(&mut fields, &mut pipe, fresh.as_mut())
            .and_then(|()| match fresh.as_mut() {
                Some(fresh) => reader.release(fresh, &mut pipe, fields.offset()),
                None => Ok(()),
            });
        if let Err(e) = read {
            return Err(pipe.stop(e));
        }
        pipe.finish()?;
        reader.record_checkout(&mut pipe)?;
        let mut changes = DocumentChanges::default();
        if let (Some(fresh), Some(repo)) = (fresh.as_mut(), reader.repo.as_deref()) {
            let written = std::mem::take(&mut pipe.written);
            let any = fresh.anything(&written);
            let gone = fresh
                .finish(repo, &written)
                .map_err(|cause| reader.stored_err(cause))?;
            if !any && !allow_empty && !gone.is_empty() {
                return Err(ScipError::Empty {
                    file: reader.file.clone(),
                    repo: repo.to_owned(),
                    documents: reader.documents,
                    stored: gone.len() as u64,
                }
                .into());
            }
            for path in gone {
                pipe.sink().retract_unit(&path)?;
            }
            changes = std::mem::take(&mut fresh.changes);
        }
        changes.read = reader.documents;
        changes.merged += reader.merged;
        changes.repaired = pipe.repaired;
        changes.skipped = std::mem::take(&mut pipe.skipped);
        changes.sources = std::mem::take(&mut reader.sources);
        changes.sources.add(&pipe.sources);
        pipe.sink().documents(&changes);
        declare_all(pipe.sink(), reader.documents + reader.externals)?;
        let facts = pipe.facts;
        pipe.sink().progress(fields.offset(), facts);
        Ok(facts)
    })
}

/// Declares every relation of [`RELATIONS`], so that each exists (maybe empty) once the batch
/// commits: the `code` module reads `uses` and `implements`, which an indexer without
/// enclosing ranges or relationships gives no fact of.
fn declare_all(sink: &mut dyn FactSink, line: u64) -> Result<()> {
    for r in facts::group_relations().iter() {
        sink.declare(&crate::dump::Fact {
            spelled: &r.name,
            relation: &r.name,
            origin: crate::dump::Origin::Facts,
            columns: &r.columns,
            doc: r.doc.as_deref(),
            indexed: None,
            fields: &[],
            unit: None,
            line,
        })?;
    }
    Ok(())
}

/// What is known of the index being read.
struct Reader {
    file: String,
    repo: Option<String>,
    /// The metadata's project root when it names no repository.
    root: Option<String>,
    documents: u64,
    externals: u64,
    /// The paths read, when the read does not replace (a replacing read's [`Fresh`] has
    /// them), to count the documents merged.
    paths: rustc_hash::FxHashSet<String>,
    merged: u64,
    /// Whether the ingest named the checkout (`--checkout`), which a project root does not
    /// override.
    checkout_given: bool,
    /// Where the repository's source files are read from, if anywhere.
    checkout: Option<Arc<Checkout>>,
    /// The source files this thread hashed (for a replacing read).
    sources: SourceCounts,
}

impl Reader {
    /// Frames the index's top-level fields and hands each document and external symbol to
    /// the workers.
    fn fields<R: BufRead>(
        &mut self,
        fields: &mut Fields<R>,
        pipe: &mut Pipe<'_>,
        mut fresh: Option<&mut Fresh>,
    ) -> Result<()> {
        loop {
            let at = fields.offset();
            let head = match fields.next_head() {
                Ok(Some(head)) => head,
                Ok(None) => return Ok(()),
                Err(e) => return Err(self.index_err(Place::Byte(at), e).into()),
            };
            match head.number {
                METADATA => {
                    self.payload(fields, head, Place::Metadata)?;
                    let meta = Metadata::parse_from_bytes(&fields.payload).map_err(|cause| {
                        self.index_problem(Place::Metadata, decode("Metadata", cause))
                    })?;
                    if self.repo.is_none() {
                        self.repo = repository(&meta.project_root);
                        if self.repo.is_none() && !meta.project_root.is_empty() {
                            self.root = Some(meta.project_root.clone());
                        }
                    }
                    if !self.checkout_given && self.checkout.is_none() {
                        self.checkout =
                            Checkout::from_project_root(&meta.project_root).map(Arc::new);
                        pipe.checkout = self.checkout.clone();
                    }
                }
                DOCUMENTS => {
                    self.documents += 1;
                    fields.payload = pipe.buffer();
                    self.document(fields, head, pipe, fresh.as_deref_mut())?;
                }
                EXTERNAL_SYMBOLS => {
                    self.externals += 1;
                    let place = Place::ExternalSymbol(self.externals);
                    fields.payload = pipe.buffer();
                    self.payload(fields, head, place)?;
                    let payload = std::mem::take(&mut fields.payload);
                    pipe.send(
                        Field::External,
                        self.externals,
                        self.work_repo(),
                        payload,
                        fields.offset(),
                    )?;
                }
                _ => fields
                    .skip(head)
                    .map_err(|e| self.index_err(Place::Byte(head.offset), e))?,
            }
        }
    }

    /// The repository handed to the workers: the one known, or what the metadata said
    /// instead of one, for their error.
    fn work_repo(&self) -> Result<String, Problem> {
        match (&self.repo, &self.root) {
            (Some(r), _) => Ok(r.clone()),
            (None, Some(root)) => Err(Problem::RootNamesNoRepository(root.clone())),
            (None, None) => Err(Problem::NoRepository),
        }
    }

    /// Reads the documents held back to the end of the index (see [`Fresh::release`]).
    fn release(&mut self, fresh: &mut Fresh, pipe: &mut Pipe<'_>, offset: u64) -> Result<()> {
        for held in fresh.release() {
            pipe.send(
                Field::Document {
                    path: Some(held.path),
                    hash: Some(held.hash),
                },
                held.number,
                self.work_repo(),
                held.payload,
                offset,
            )?;
        }
        Ok(())
    }

    /// Reads a document's bytes and hands them to the workers, unless it is stored with
    /// the same bytes (skipped before it is even decoded) or held back (see [`Fresh`]).
    fn document<R: BufRead>(
        &mut self,
        fields: &mut Fields<R>,
        head: FieldHead,
        pipe: &mut Pipe<'_>,
        fresh: Option<&mut Fresh>,
    ) -> Result<()> {
        self.document_bytes(fields, head)?;
        let number = self.documents;
        let offset = fields.offset();
        // The path the worker's protobuf decoder reads: the last `relative_path` field.
        let path = match (&self.repo, wire::peek_string(&fields.payload, 1)) {
            (Some(repo), Some(relative)) => unit_path(repo, &relative).ok(),
            _ => None,
        };
        let payload = std::mem::take(&mut fields.payload);
        let send = |pipe: &mut Pipe<'_>, me: &Self, path: Option<String>, hash, payload, n, at| {
            pipe.send(
                Field::Document { path, hash },
                n,
                me.work_repo(),
                payload,
                at,
            )
        };
        let (Some(fresh), Some(path), Some(repo)) = (fresh, path.clone(), self.repo.clone()) else {
            if let Some(p) = &path
                && !self.paths.insert(p.clone())
            {
                self.merged += 1;
            }
            return send(pipe, self, path, None, payload, number, offset);
        };
        let source = match &self.checkout {
            Some(c) => {
                let hashed = source_of(c, &repo, &path);
                self.sources.count(hashed.is_some());
                hashed
            }
            None => None,
        };
        let hash = Hashed {
            document: checkout::document_hash(
                fresh::content_hash(&path, &payload),
                source.as_deref(),
            ),
            source,
        };
        match fresh
            .verdict(&repo, &path, &hash.document)
            .map_err(|cause| self.stored_err(cause))?
        {
            Verdict::Unchanged => {
                pipe.give_back(payload);
                let facts = pipe.facts;
                pipe.sink().progress(offset, facts);
                Ok(())
            }
            Verdict::Hold => {
                fresh.hold(
                    &path,
                    Held {
                        number,
                        path: path.clone(),
                        hash,
                        payload,
                        offset,
                    },
                );
                Ok(())
            }
            Verdict::Read { held } => {
                for h in held {
                    send(
                        pipe,
                        self,
                        Some(h.path),
                        Some(h.hash),
                        h.payload,
                        h.number,
                        h.offset,
                    )?;
                }
                send(pipe, self, Some(path), Some(hash), payload, number, offset)
            }
            Verdict::Add { keep } => {
                if keep {
                    pipe.sink().keep_unit(&path)?;
                }
                send(pipe, self, Some(path), Some(hash), payload, number, offset)
            }
        }
    }

    /// Records `checkout(REPO, dir)` in the unit `REPO`, when the index has both.
    fn record_checkout(&mut self, pipe: &mut Pipe<'_>) -> Result<()> {
        let (Some(repo), Some(c)) = (&self.repo, &self.checkout) else {
            return Ok(());
        };
        let mut g = crate::dump::FactGroup::new(facts::group_relations());
        g.clear(repo, self.documents + self.externals + 1);
        let r = crate::dump::Cell::Text(g.add_text(repo));
        let d = crate::dump::Cell::Text(g.add_text(&c.dir().to_string_lossy()));
        g.add(Rel::Checkout as usize, &[r, d]);
        pipe.sink().group(&g)?;
        pipe.facts += g.facts();
        self.sources
            .checkouts
            .push(c.dir().to_string_lossy().into_owned());
        Ok(())
    }

    /// Reads a length-delimited top-level field's payload.
    fn payload<R: BufRead>(
        &self,
        fields: &mut Fields<R>,
        head: FieldHead,
        place: Place,
    ) -> Result<(), ScipError> {
        check_len(head).map_err(|p| self.index_problem(place, p))?;
        fields
            .read_payload(head)
            .map_err(|e| self.index_err(place, e))
    }

    /// Reads a document's bytes into `fields.payload`.
    fn document_bytes<R: BufRead>(&self, fields: &mut Fields<R>, head: FieldHead) -> Result<()> {
        let number = self.documents;
        let err = |fields: &Fields<R>, problem: Problem| ScipError::Document {
            file: self.file.clone(),
            number,
            path: wire::peek_string(&fields.payload, 1).unwrap_or_else(|| "no path".to_owned()),
            problem,
        };
        fields.payload.clear();
        check_len(head).map_err(|p| err(fields, p))?;
        match fields.read_payload(head) {
            Ok(()) => Ok(()),
            Err(WireError::Bytes(p)) => Err(err(fields, p).into()),
            Err(WireError::Read(cause)) => Err(ScipError::Read {
                file: self.file.clone(),
                cause,
            }
            .into()),
        }
    }

    fn stored_err(&self, cause: strata_eval::SourceError) -> ScipError {
        ScipError::Stored {
            file: self.file.clone(),
            cause,
        }
    }

    fn index_problem(&self, place: Place, problem: Problem) -> ScipError {
        ScipError::Index {
            file: self.file.clone(),
            place,
            problem,
        }
    }

    fn index_err(&self, place: Place, e: WireError) -> ScipError {
        match e {
            WireError::Bytes(problem) => self.index_problem(place, problem),
            WireError::Read(cause) => ScipError::Read {
                file: self.file.clone(),
                cause,
            },
        }
    }
}

/// The known top-level fields are messages: wire type 2.
fn check_len(head: FieldHead) -> Result<(), Problem> {
    if head.wire_type == LEN {
        return Ok(());
    }
    Err(Problem::WrongWireType {
        field: head.number,
        found: head.wire_type,
        expected: LEN,
        what: match head.number {
            METADATA => "Index.metadata, a message",
            DOCUMENTS => "Index.documents, a message",
            _ => "Index.external_symbols, a message",
        },
    })
}

fn decode(what: &'static str, cause: protobuf::Error) -> Problem {
    Problem::Decode { what, cause }
}

/// The unit (and `path`) of a document: `REPO/relative_path`, the relative path normalized
/// (empty and `.` segments dropped, `..` taking back the segment before it), or what is
/// wrong with it when it cannot name a file of the repository: empty, absolute, holding a
/// NUL byte, or leaving the repository through `..`.
pub(crate) fn unit_path(repo: &str, relative: &str) -> Result<String, &'static str> {
    if relative.contains('\0') {
        return Err("its path holds a NUL byte");
    }
    if relative.starts_with('/') {
        return Err("its path is absolute");
    }
    let mut parts: Vec<&str> = Vec::new();
    for segment in relative.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err("its path leaves the repository");
                }
            }
            s => parts.push(s),
        }
    }
    if parts.is_empty() {
        return Err("its path is empty");
    }
    let mut path = String::with_capacity(repo.len() + 1 + relative.len());
    path.push_str(repo);
    for p in parts {
        path.push('/');
        path.push_str(p);
    }
    Ok(path)
}

/// The content hash of the source file of the document at `path` (`REPO/relative`) in the
/// checkout, if it is read there.
pub(crate) fn source_of(checkout: &Checkout, repo: &str, path: &str) -> Option<String> {
    let relative = path.strip_prefix(repo)?.strip_prefix('/')?;
    checkout.hash(relative)
}

/// Whether `name` may name a repository (`--repo`, or the last segment of a project root):
/// one path segment, so that no repository's documents (`REPO/...`) are under another's:
/// not empty, not `.` or `..`, no `/`, no NUL.
pub fn valid_repository(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// The repository a project root names: its last path segment, when that follows the rules
/// of `--repo` ([`valid_repository`]) and is not a URI's scheme (`file:`).
fn repository(project_root: &str) -> Option<String> {
    let root = project_root.trim_end_matches('/');
    let last = root.rsplit('/').next()?;
    (valid_repository(last) && !last.contains(':')).then(|| last.to_owned())
}
