//! Loading dumps: how each file is read ([`dump_specs`]: its format from its name or as
//! given, the relation of a `.facts` file), and one batch of them committed into a
//! database ([`ingest`]), created if needed; while a server holds the database, the batch
//! is handed to it over [`crate::ingest_socket`]; so is a retraction ([`retract`]). What
//! a batch did renders as the line `strata ingest` (or `strata retract`) prints
//! ([`Ingested`]).

use std::path::{Path, PathBuf};

use strata_store::dump::{self, DumpSpec, Format};
use strata_store::{BatchOptions, BatchSummary, OpenError, OpenOptions, Store, StoreError};

use crate::code_pack::{CODE_MODULE_FILE, CodePack};
use crate::pack::PACK_FILE;

/// How the files of a batch are to be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpFiles {
    /// The files (`-` for standard input).
    pub files: Vec<PathBuf>,
    /// The format of every file, overriding their names: edges, attrs, nodes, facts, jsonl, scip.
    pub format: Option<String>,
    /// For `facts` without a `NAME.facts` name: the relation the lines belong to.
    pub relation: Option<String>,
    /// The unit that owns every fact that names none itself; for a SCIP index, the
    /// repository (as `repo`) unless `repo` is given.
    pub unit: Option<String>,
    /// For SCIP indexes: the repository their documents belong to (`REPO/relative_path`),
    /// instead of the last segment of the index's `metadata.project_root`.
    pub repo: Option<String>,
    /// For SCIP indexes: the directory the repository is checked out in, whose source files
    /// are hashed so that answers can show their lines (instead of a local
    /// `metadata.project_root`).
    pub checkout: Option<PathBuf>,
}

/// Why a file cannot be read as a dump.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DumpError {
    /// An unknown format.
    #[error("--format {0}: use one of edges, attrs, nodes, facts, jsonl, scip")]
    Format(String),
    /// No format in the file's name, and none given.
    #[error(
        "{0}: cannot tell the format from the name; name it *.edges.tsv, *.attrs.tsv, \
         *.nodes.tsv, NAME.facts, *.jsonl or *.scip (maybe .gz), or pass --format"
    )]
    Unnamed(String),
    /// A `.facts` file with no relation.
    #[error("{0}: a .facts dump needs a relation: name the file NAME.facts or pass --relation")]
    NoRelation(String),
    /// A relation name no relation may have.
    #[error("{label}: \"{relation}\" cannot name a relation: use letters, digits, `_` and `-`")]
    RelationName {
        /// The file.
        label: String,
        /// The name.
        relation: String,
    },
    /// `--repo` given for a file that is not a SCIP index.
    #[error("{0}: --repo names the repository of a SCIP index, and this file is not one")]
    RepoNotScip(String),
    /// `--checkout` given for a file that is not a SCIP index.
    #[error(
        "{0}: --checkout names the checkout of a SCIP index's repository, and this file is not one"
    )]
    CheckoutNotScip(String),
    /// `--checkout` names no directory.
    #[error("--checkout {dir}: not a directory ({why})")]
    Checkout {
        /// The directory, as given.
        dir: String,
        /// What the operating system said.
        why: String,
    },
    /// A repository name that would mix its documents with another repository's.
    #[error(
        "--repo {0:?}: a repository's name is one path segment (no `/`, not empty, not `.` \
         or `..`), as its documents are named REPO/relative_path"
    )]
    RepoName(String),
}

/// How to read each file: its format, and the relation of a `.facts` file.
pub fn dump_specs(d: &DumpFiles) -> Result<Vec<(PathBuf, DumpSpec)>, DumpError> {
    let forced = match &d.format {
        Some(f) => Some(Format::parse(f).ok_or_else(|| DumpError::Format(f.clone()))?),
        None => None,
    };
    let checkout = match &d.checkout {
        None => None,
        Some(dir) => Some(
            strata_store::scip::Checkout::open(dir)
                .map_err(|e| DumpError::Checkout {
                    dir: dir.display().to_string(),
                    why: e.to_string(),
                })?
                .dir()
                .to_owned(),
        ),
    };
    let mut specs = Vec::new();
    for path in &d.files {
        let label = path.display().to_string();
        let Some(format) = forced.or_else(|| Format::from_path(path)) else {
            return Err(DumpError::Unnamed(label));
        };
        let relation = if format == Format::Facts {
            let Some(r) = d.relation.clone().or_else(|| dump::facts_relation(path)) else {
                return Err(DumpError::NoRelation(label));
            };
            if !dump::valid_name(&r) {
                return Err(DumpError::RelationName { label, relation: r });
            }
            Some(r)
        } else {
            None
        };
        let unit = if format == Format::Scip {
            let repo = d.repo.clone().or_else(|| d.unit.clone());
            if let Some(r) = &repo
                && !repository_name(r)
            {
                return Err(DumpError::RepoName(r.clone()));
            }
            repo
        } else if d.repo.is_some() {
            return Err(DumpError::RepoNotScip(label));
        } else if d.checkout.is_some() {
            return Err(DumpError::CheckoutNotScip(label));
        } else {
            d.unit.clone()
        };
        specs.push((
            path.clone(),
            DumpSpec {
                label,
                format,
                relation,
                unit,
                checkout: checkout.clone().filter(|_| format == Format::Scip),
            },
        ));
    }
    Ok(specs)
}

/// Whether `name` may name a repository: one path segment, so that no repository's
/// documents (`REPO/...`) are under another's.
fn repository_name(name: &str) -> bool {
    strata_store::scip::valid_repository(name)
}

/// What a batch did, and whether a running server committed it.
#[derive(Debug)]
pub struct Ingested {
    /// The batch's summary.
    pub summary: BatchSummary,
    /// How many files it read.
    pub files: usize,
    /// Whether the batch went to the server holding the database.
    pub via_server: bool,
    /// Whether the bundled `code` pack was written (after a SCIP index, into a database
    /// without a pack).
    pub code_pack: CodePack,
}

/// Why a batch was not committed.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The store refused (a malformed line, a full disk, a database in use with no server
    /// listening, ...); nothing of the batch was stored.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Handing the batch to the server holding the database failed.
    #[cfg(unix)]
    #[error(transparent)]
    Send(#[from] crate::ingest_socket::SendError),
}

/// Reads the files of `specs` into one batch of `db` (created if needed) with `options`
/// and commits it; `progress` hears the bytes and facts read so far, `committing` when
/// the commit starts. While a server holds the database, the batch goes to it over its
/// socket instead. After a batch that read a SCIP index, a database without a pack gets
/// the bundled `code` pack ([`crate::code_pack`]).
pub fn ingest(
    db: &Path,
    specs: &[(PathBuf, DumpSpec)],
    options: BatchOptions,
    progress: impl FnMut(u64, u64),
    committing: impl FnOnce(),
) -> Result<Ingested, IngestError> {
    ingest_batch(db, specs, options, progress, committing)
}

/// After a committed batch that read a SCIP index, writes or refreshes the bundled `code`
/// pack from what `store` holds now ([`crate::code_pack::write`]).
pub(crate) fn write_code_pack(store: &Store, specs: impl IntoIterator<Item = Format>) -> CodePack {
    if !specs.into_iter().any(|f| f == Format::Scip) {
        return CodePack::Untouched;
    }
    let written = store
        .snapshot()
        .map_err(|e| crate::code_pack::CodePackError::Read(e.into()))
        .and_then(|snap| crate::code_pack::write(store.dir(), &snap));
    written.unwrap_or_else(CodePack::Failed)
}

/// The page cache a batch's own open of the database gets, whatever the file's size: an
/// ingest's dirty pages share it (a query's open sizes it by the file), and a later batch
/// reads the stored postings its tuples are looked up in through it.
///
/// The batch that creates the database gets it too. With the least cache
/// ([`strata_store::MIN_CACHE_BYTES`]) redb writes the batch's pages out as it goes and
/// syncs them each time it grows the file: 10M integer pairs into a new database took
/// 0.42 s to write against 0.34 s, at a peak of 104 MB against 128.
const INGEST_CACHE_BYTES: usize = strata_store::DEFAULT_CACHE_BYTES;

fn ingest_batch(
    db: &Path,
    specs: &[(PathBuf, DumpSpec)],
    options: BatchOptions,
    progress: impl FnMut(u64, u64),
    committing: impl FnOnce(),
) -> Result<Ingested, IngestError> {
    let open = OpenOptions {
        create: true,
        cache_bytes: Some(INGEST_CACHE_BYTES),
        ..OpenOptions::default()
    };
    let store = match Store::open(db, open) {
        Ok(store) => store,
        // A running `strata serve` holds it: hand the batch to it.
        Err(in_use @ OpenError::InUse { .. }) => return via_server(db, specs, &options, in_use),
        Err(e) => return Err(StoreError::from(e).into()),
    };
    // This process holds the database: a socket left there by a killed server is stale.
    #[cfg(unix)]
    crate::ingest_socket::remove_stale_socket(db);
    let mut batch = store.batch(options).map_err(StoreError::from)?;
    batch.on_progress(progress);
    for (path, spec) in specs {
        batch.read_file(path, spec).map_err(StoreError::from)?;
    }
    committing();
    let summary = batch.commit().map_err(StoreError::from)?;
    Ok(Ingested {
        summary,
        files: specs.len(),
        via_server: false,
        code_pack: write_code_pack(&store, specs.iter().map(|(_, s)| s.format)),
    })
}

/// Sends the batch over `DB/strata.sock` to the server holding the database; without one
/// listening, answers `in_use`.
#[cfg(unix)]
fn via_server(
    db: &Path,
    specs: &[(PathBuf, DumpSpec)],
    options: &BatchOptions,
    in_use: OpenError,
) -> Result<Ingested, IngestError> {
    use crate::ingest_socket::{SendError, send_batch};
    // The server writes the bundled pack after its commit; say so when it did.
    let had_pack = db.join(PACK_FILE).exists();
    match send_batch(db, options, specs) {
        Ok(summary) => Ok(Ingested {
            summary,
            files: specs.len(),
            via_server: true,
            code_pack: if !had_pack && db.join(PACK_FILE).exists() {
                CodePack::Written
            } else {
                CodePack::Untouched
            },
        }),
        Err(SendError::NoServer(_)) => Err(StoreError::from(in_use).into()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(unix))]
fn via_server(
    _db: &Path,
    _specs: &[(PathBuf, DumpSpec)],
    _options: &BatchOptions,
    in_use: OpenError,
) -> Result<Ingested, IngestError> {
    Err(StoreError::from(in_use).into())
}

impl Ingested {
    /// The line `strata ingest` prints: the batch, its counts, relations and times (or
    /// that it was committed before), and that the server committed it.
    pub fn text(&self) -> String {
        let s = &self.summary;
        let suffix = if self.via_server {
            " (via the running server)"
        } else {
            ""
        };
        if s.already_committed {
            return format!(
                "batch already committed as batch {}: nothing written ({} facts read){suffix}",
                s.seq, s.facts_read
            );
        }
        let rels = if s.relations.is_empty() {
            "none".to_owned()
        } else {
            s.relations.join(", ")
        };
        let files = self.files;
        let built = |c: &strata_store::IndexChange| {
            if c.built {
                format!(
                    "\nbuilt the index of {}.{}: {} values",
                    c.relation, c.column, c.values
                )
            } else {
                format!("\ndropped the index of {}.{}", c.relation, c.column)
            }
        };
        let indexes: String = s.indexes.iter().map(built).collect();
        if files == 0 && s.facts_read == 0 && s.removed == 0 && !indexes.is_empty() {
            // A batch that only changed indexes (`strata index`).
            return format!(
                "batch {}: {:.2}s (write {:.2}s, sync {:.2}s){suffix}{indexes}",
                s.seq,
                s.elapsed.as_secs_f64(),
                s.write_time.as_secs_f64(),
                s.sync_time.as_secs_f64()
            );
        }
        let documents = s
            .documents
            .as_ref()
            .map(|d| format!("; {d}"))
            .unwrap_or_default();
        let mut text = format!(
            "batch {}: {} facts read from {files} file{}, {} new, {} duplicates, {} \
             removed{documents}; relations: {rels}; {:.2}s (read {:.2}s, write {:.2}s, sync \
             {:.2}s){suffix}",
            s.seq,
            s.facts_read,
            if files == 1 { "" } else { "s" },
            s.new,
            s.duplicates,
            s.removed,
            s.elapsed.as_secs_f64(),
            s.read_time.as_secs_f64(),
            s.write_time.as_secs_f64(),
            s.sync_time.as_secs_f64()
        );
        text.push_str(&indexes);
        if let CodePack::Refreshed = self.code_pack {
            text.push_str(&format!(
                "\nrefreshed the bundled code pack's examples from the code stored now \
                 ({PACK_FILE} and {CODE_MODULE_FILE}; once you edit them they are never \
                 rewritten)"
            ));
        }
        if let CodePack::Written = self.code_pack {
            text.push_str(&format!(
                "\nwrote the bundled code pack, its examples from this code: {PACK_FILE} and \
                 {CODE_MODULE_FILE} (edit them freely; once edited they are never rewritten)"
            ));
            if self.via_server {
                text.push_str(
                    "; the running server answers with the code.* rules from its next call, \
                     and speaks about code in its instructions once restarted",
                );
            }
        }
        text
    }
}

/// Builds or drops, as one batch that reads no file, the indexes `options.indexes`
/// declares for relations `db` stores ([`strata_store::BatchOptions::indexes`]); the
/// summary's `indexes` says what it built and dropped. While a server holds the database,
/// the batch goes to it over its socket and it commits the batch.
pub fn reindex(db: &Path, options: BatchOptions) -> Result<Ingested, IngestError> {
    let open = OpenOptions {
        cache_bytes: Some(INGEST_CACHE_BYTES),
        ..OpenOptions::default()
    };
    let store = match Store::open(db, open) {
        Ok(store) => store,
        Err(in_use @ OpenError::InUse { .. }) => return via_server(db, &[], &options, in_use),
        Err(e) => return Err(StoreError::from(e).into()),
    };
    #[cfg(unix)]
    crate::ingest_socket::remove_stale_socket(db);
    let batch = store.batch(options).map_err(StoreError::from)?;
    Ok(Ingested {
        summary: batch.commit().map_err(StoreError::from)?,
        files: 0,
        via_server: false,
        code_pack: CodePack::Untouched,
    })
}

/// Removes every fact the units `units` state from `db`, as one batch with `options`.
/// While a server holds the database, the retraction goes to it over its socket and it
/// commits the batch; the summary is the same either way.
pub fn retract(
    db: &Path,
    units: &[String],
    options: BatchOptions,
) -> Result<Ingested, IngestError> {
    let open = OpenOptions {
        cache_bytes: Some(INGEST_CACHE_BYTES),
        ..OpenOptions::default()
    };
    let store = match Store::open(db, open) {
        Ok(store) => store,
        // A running `strata serve` holds it: hand the retraction to it.
        Err(in_use @ OpenError::InUse { .. }) => {
            return retract_via_server(db, units, &options, in_use);
        }
        Err(e) => return Err(StoreError::from(e).into()),
    };
    // This process holds the database: a socket left there by a killed server is stale.
    #[cfg(unix)]
    crate::ingest_socket::remove_stale_socket(db);
    Ok(retracted(
        store.retract(units, options).map_err(StoreError::from)?,
    ))
}

/// What a retraction did: its line is the same whichever process committed it.
fn retracted(summary: BatchSummary) -> Ingested {
    Ingested {
        summary,
        files: 0,
        via_server: false,
        code_pack: CodePack::Untouched,
    }
}

/// Sends the retraction over `DB/strata.sock` to the server holding the database; without
/// one listening, answers `in_use`.
#[cfg(unix)]
fn retract_via_server(
    db: &Path,
    units: &[String],
    options: &BatchOptions,
    in_use: OpenError,
) -> Result<Ingested, IngestError> {
    use crate::ingest_socket::{SendError, send_retract};
    match send_retract(db, units, options) {
        Ok(summary) => Ok(retracted(summary)),
        Err(SendError::NoServer(_)) => Err(StoreError::from(in_use).into()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(unix))]
fn retract_via_server(
    _db: &Path,
    _units: &[String],
    _options: &BatchOptions,
    in_use: OpenError,
) -> Result<Ingested, IngestError> {
    Err(StoreError::from(in_use).into())
}
