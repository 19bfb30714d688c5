//! Batches: everything one ingest (or retraction) writes, committed atomically.
//!
//! This module holds the public side ([`BatchOptions`], [`Batch`], [`BatchSummary`] and
//! [`Store::batch`]); the parts of a batch's work each have a module: `dictionary` (interning),
//! `pending` (each relation's facts, checked), `gathered` (the facts
//! themselves, kept compact, and their sort), `earlier` (what earlier flushes wrote), `flush`
//! (open transactions) and `commit`.

mod commit;
mod dictionary;
mod earlier;
mod flush;
mod gathered;
mod pending;
mod reindex;
mod texts;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

use redb::{ReadOnlyTable, ReadableDatabase};
use rustc_hash::FxHashMap;

use crate::catalog::Catalog;
use crate::db::Store;
use crate::dump::{
    self, DumpSpec, Fact, FactGroup, FactRun, FactSink, Field, Origin, reserved_name,
};
use crate::error::{CommitError, IngestError, Result};
use crate::layout::{self, DEFAULT_TIER};
use flush::Writing;
use pending::Pending;
pub use reindex::IndexChange;

/// How a batch is committed.
#[derive(Clone, Debug)]
pub struct BatchOptions {
    /// The tier new relations go to (`default` unless given).
    pub tier: String,
    /// Replace every fact of each unit the batch names (`--replace`).
    pub replace: bool,
    /// Labels recorded with the batch (`commit=abc123`).
    pub labels: BTreeMap<String, String>,
    /// An id that makes a retry of this batch a no-op.
    pub batch_id: Option<String>,
    /// How many facts a batch gathers in memory before writing them into its (still
    /// uncommitted) transaction: the memory of an ingest is bounded by this and the
    /// dictionary, not by the size of the dump.
    pub buffer_facts: usize,
    /// Lets a replacing read of a SCIP index that holds no document retract every stored
    /// document of its repository (`--allow-empty`); without it such a read is refused, so
    /// that an indexer that wrote nothing never wipes a repository.
    pub allow_empty: bool,
    /// Relations to store with postings for some of their columns only (`--index
    /// REL=COL,...`): each relation's name, and the names of the columns to index, its first
    /// column among them. The rest have no postings: a smaller file and a faster ingest, for
    /// a relation never looked up by those columns alone (a query that does reads the
    /// relation whole). For a relation already stored, the batch builds the postings of
    /// each named column that has none, from its stored rows, and drops those of each later
    /// column left out, as it commits ([`BatchSummary::indexes`]). Naming a relation the
    /// batch neither holds nor finds stored is an error. Needs a database of format version
    /// 6 or later.
    pub indexes: BTreeMap<String, Vec<String>>,
    /// A `.facts` relation the batch creates with at least this many facts, and no
    /// declaration (`--index`, `# index:`), gets postings for its first column only; each
    /// later column gets its own when a query first looks the relation up by it alone
    /// ([`RelationMeta::on_demand`](crate::RelationMeta::on_demand),
    /// [`Store::build_demanded`]). Default [`ON_DEMAND_ROWS`].
    pub on_demand_rows: u64,
    /// Columns queries looked up alone, by relation name and column positions: the batch
    /// builds the postings of each that the relation keeps on demand, and ignores the
    /// others ([`Store::build_demanded`] sets it).
    pub demanded: BTreeMap<String, Vec<usize>>,
}

/// The default [`BatchOptions::on_demand_rows`]: 1M facts (1,048,576).
///
/// A later column's postings cost about what the column does when its values are spread
/// over the relation: the 10M integer pairs of the side-by-side suite take 79.6 MB and 1.19
/// to 2.47 s to ingest with both columns indexed, 39.7 MB and 0.92 to 1.24 s with the first
/// alone; `strata index` builds the second's in 0.97 s. A smaller relation is indexed on
/// every column at once: its later postings cost little, and a query never waits for them.
pub const ON_DEMAND_ROWS: u64 = 1 << 20;

/// The default [`BatchOptions::buffer_facts`]: 64M facts (67,108,864).
///
/// A batch over it flushes more than once, and every later flush costs: its new postings go
/// into runs merged at the commit (on one thread), and the runs' pages are freed for the
/// reclaim to give back. At 16M, 50M integer pairs (four flushes) took 25.4 s and peaked at
/// 668 MB; at 64M (one flush) 11.8 s and 657 MB. The 50M-edge generated code graph: 42.3 s
/// and 1.26 GB at 16M, 29.5 s and 1.36 GB at 64M. Wider facts cost more memory a fact: 30M
/// facts of four columns took 25.1 s and 726 MB at 16M, 18.4 s and 1.19 GB at 64M. Inputs
/// of up to 16M facts flush once either way.
pub const BUFFER_FACTS: usize = 64 << 20;

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            tier: DEFAULT_TIER.to_owned(),
            replace: false,
            labels: BTreeMap::new(),
            batch_id: None,
            buffer_facts: BUFFER_FACTS,
            allow_empty: false,
            indexes: BTreeMap::new(),
            on_demand_rows: ON_DEMAND_ROWS,
            demanded: BTreeMap::new(),
        }
    }
}

/// What a committed batch did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BatchSummary {
    /// The sequence number it committed as (for a retried batch: the original's).
    pub seq: u64,
    /// Set when the batch id was committed before, so nothing was written.
    pub already_committed: bool,
    /// Facts read from the input.
    pub facts_read: u64,
    /// Facts the store did not hold before.
    pub new: u64,
    /// Facts read that the store held already, or that the batch repeated.
    pub duplicates: u64,
    /// Facts removed by `--replace` or a retraction.
    pub removed: u64,
    /// Relations written to.
    pub relations: Vec<String>,
    /// Units named for retraction that own nothing in the store.
    pub unknown_units: Vec<String>,
    /// For a batch that read SCIP indexes: their documents, and what a replacing read did
    /// with each (`N documents unchanged, M replaced, A added, K removed`).
    pub documents: Option<crate::scip::DocumentChanges>,
    /// The columns of stored relations whose index the batch built or dropped, as its
    /// `--index` declarations asked ([`BatchOptions::indexes`]).
    pub indexes: Vec<IndexChange>,
    /// Time from the batch's start to its commit.
    pub elapsed: Duration,
    /// Of that, reading and interning the input.
    pub read_time: Duration,
    /// Of that, writing columns, indexes and the catalog.
    pub write_time: Duration,
    /// Of that, committing the transactions durably.
    pub sync_time: Duration,
}

/// One atomic batch: gather facts, then [`Batch::commit`]. Dropping it without committing
/// stores nothing.
pub struct Batch<'s> {
    store: &'s Store,
    _writer: MutexGuard<'s, ()>,
    options: BatchOptions,
    start: Catalog,
    started: Instant,
    id_by_text: ReadOnlyTable<u64, u32>,
    text_collisions: ReadOnlyTable<&'static str, u32>,
    text_by_id: ReadOnlyTable<u32, &'static [u8]>,
    id_by_number: ReadOnlyTable<u64, u32>,
    id_by_unit: ReadOnlyTable<&'static str, u32>,
    /// Which relations each unit owns facts of, as the batch began.
    unit_relations: ReadOnlyTable<(u32, u32), ()>,
    start_units: u32,
    /// Every text the batch has seen, with its id; ids past `start.texts` are new.
    texts: texts::Texts,
    /// The stored dictionary's chunks read to find the batch's texts, kept decoded.
    stored_texts: crate::intern::ChunkCache,
    /// The new texts to write, once the batch commits (see [`dictionary::NewTexts`]).
    texts_job: Option<dictionary::NewTexts>,
    new_texts: u32,
    numbers: FxHashMap<u64, u32>,
    new_numbers: Vec<u64>,
    units: FxHashMap<Box<str>, u32>,
    new_units: Vec<Box<str>>,
    rels: BTreeMap<String, Pending>,
    replace_units: BTreeSet<u32>,
    /// Units a replacing batch adds facts to without replacing them (see
    /// [`FactSink::keep_unit`]).
    keep_units: BTreeSet<u32>,
    retract_units: BTreeSet<u32>,
    unknown_units: Vec<String>,
    facts_read: u64,
    label: String,
    progress: Option<Box<dyn FnMut(u64, u64) + 's>>,
    bytes_before: u64,
    /// Facts gathered since the last flush.
    pending_facts: usize,
    /// The open transactions and what was written so far, once the first flush began.
    writing: Option<Writing>,
    /// What the SCIP indexes read held and what replacing reads did with their documents;
    /// `None` while the batch read no index.
    documents: Option<crate::scip::DocumentChanges>,
    /// Scratch for [`FactGroup`]s: their texts' terms, and one relation's terms.
    group_texts: Vec<u32>,
    group_row: Vec<u32>,
}

impl Store {
    /// Starts a batch. Only one batch runs at a time in a process; this waits for the one
    /// running, if any. Readers are never blocked.
    pub fn batch(&self, options: BatchOptions) -> Result<Batch<'_>, IngestError> {
        if options.batch_id.as_deref() == Some("") {
            return Err(IngestError::Invalid(
                "the batch id is empty; give a non-empty id, or none".to_owned(),
            ));
        }
        if !layout::valid_tier_name(&options.tier) {
            return Err(IngestError::Invalid(format!(
                "\"{}\" cannot name a tier: use 1 to 64 of a-z, 0-9, `_` and `-`, starting \
                 with a letter",
                options.tier
            )));
        }
        let writer = self
            .inner
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // After a storage failure, the files are opened again first (see `heal`).
        self.heal_locked(&writer)
            .map_err(|source| IngestError::Poisoned {
                dir: self.dir().to_owned(),
                source: Box::new(source),
            })?;
        let opened = crate::guard::faults(|| -> Result<_> {
            let base = self.inner.base()?;
            if !options.indexes.is_empty() && !base.seal.declared_indexes {
                return Err(IngestError::Invalid(
                    "--index needs a database of format version 6 or later, and this one is \
                     older: ingest its dumps into a new database to declare indexes"
                        .to_owned(),
                )
                .into());
            }
            let txn = base.begin_read()?;
            let start = Catalog::read(&txn)?;
            let start_units = {
                let meta = txn.open_table(layout::META)?;
                crate::catalog::meta_u32(&meta, "units")?
            };
            let texts = (
                txn.open_table(layout::ID_BY_TEXT)?,
                txn.open_table(layout::TEXT_COLLISIONS)?,
                txn.open_table(layout::TEXT_BY_ID)?,
            );
            let others = (
                txn.open_table(layout::ID_BY_NUMBER)?,
                txn.open_table(layout::UNIT_IDS)?,
                txn.open_table(layout::UNIT_RELATIONS)?,
            );
            Ok((start, start_units, texts, others))
        });
        // A failed storage call marks the store, so that the next call opens the files again.
        let (start, start_units, texts, others) = opened.map_err(|f| {
            self.note(&f);
            f.ingest(self.base_path())
        })?;
        Ok(Batch {
            store: self,
            _writer: writer,
            id_by_text: texts.0,
            text_collisions: texts.1,
            text_by_id: texts.2,
            id_by_number: others.0,
            id_by_unit: others.1,
            unit_relations: others.2,
            options,
            start,
            start_units,
            started: Instant::now(),
            texts: texts::Texts::default(),
            stored_texts: crate::intern::ChunkCache::default(),
            texts_job: None,
            new_texts: 0,
            numbers: FxHashMap::default(),
            new_numbers: Vec::new(),
            units: FxHashMap::default(),
            new_units: Vec::new(),
            rels: BTreeMap::new(),
            replace_units: BTreeSet::new(),
            keep_units: BTreeSet::new(),
            retract_units: BTreeSet::new(),
            unknown_units: Vec::new(),
            facts_read: 0,
            label: String::new(),
            progress: None,
            bytes_before: 0,
            pending_facts: 0,
            writing: None,
            documents: Default::default(),
            group_texts: Vec::new(),
            group_row: Vec::new(),
        })
    }

    /// Removes every fact each of `units` states (facts another unit also states stay), as
    /// one batch. When none of `units` states any fact and the batch has no id, nothing is
    /// committed and the error is [`IngestError::UnknownUnits`] (inside
    /// [`CommitError::Batch`]); with an id, the (empty) batch is committed, so that a retry of
    /// it is recognised. Units that state nothing are listed in
    /// [`BatchSummary::unknown_units`].
    pub fn retract(
        &self,
        units: &[String],
        options: BatchOptions,
    ) -> Result<BatchSummary, CommitError> {
        if units.is_empty() {
            return Err(IngestError::Invalid("no unit given to retract".to_owned()).into());
        }
        let mut batch = self.batch(options)?;
        for u in units {
            batch.retract_unit(u)?;
        }
        if batch.retract_units.is_empty() && batch.options.batch_id.is_none() {
            return Err(IngestError::UnknownUnits {
                units: units.to_vec(),
            }
            .into());
        }
        batch.commit()
    }
}

impl<'s> Batch<'s> {
    /// Calls `f(bytes, facts)` as dumps are read, for a progress display; the counts run
    /// across all the batch's files.
    pub fn on_progress(&mut self, f: impl FnMut(u64, u64) + 's) {
        self.progress = Some(Box::new(f));
    }

    /// Reads a whole dump into the batch.
    pub fn read_dump(
        &mut self,
        input: impl std::io::BufRead + Send,
        spec: &DumpSpec,
    ) -> Result<u64, IngestError> {
        self.label = spec.label.clone();
        let before = self.bytes_before;
        let mut sink = Sink {
            batch: self,
            bytes: 0,
        };
        let read = dump::read(input, spec, &mut sink);
        let bytes = sink.bytes;
        if read.is_err() {
            self.failed();
        }
        let n = read?;
        self.bytes_before = before + bytes;
        Ok(n)
    }

    /// Opens and reads a dump file (`-` for standard input), with its format from `spec`.
    pub fn read_file(&mut self, path: &Path, spec: &DumpSpec) -> Result<u64, IngestError> {
        let input = dump::open(path).inspect_err(|_| self.failed())?;
        self.read_dump(input, spec)
    }

    /// Adds one fact of a `.facts`-style relation (columns `c1..cN`) stated by `unit`.
    pub fn add_fact(
        &mut self,
        relation: &str,
        fields: &[Field<'_>],
        unit: Option<&str>,
    ) -> Result<(), IngestError> {
        if !dump::valid_name(relation) {
            return Err(IngestError::Invalid(format!(
                "\"{relation}\" cannot name a relation: use letters, digits, `_` and `-`"
            )));
        }
        if reserved_name(relation) {
            return Err(IngestError::Invalid(format!(
                "\"{relation}\" cannot name a relation: it is a word of the query language, so \
                 no query could read it"
            )));
        }
        if unit == Some("") {
            return Err(IngestError::Invalid(
                "the unit is empty; name a unit or give none".to_owned(),
            ));
        }
        let columns: Vec<String> = (1..=fields.len()).map(|i| format!("c{i}")).collect();
        self.label = "(api)".to_owned();
        let fact = Fact {
            spelled: relation,
            relation,
            origin: Origin::Facts,
            columns: &columns,
            doc: None,
            indexed: None,
            fields,
            unit,
            line: self.facts_read + 1,
        };
        crate::guard::faults(|| self.fact(&fact)).map_err(|f| self.fault(f))
    }

    /// A fault of this batch as its error; a failed storage call, or a panic redb stopped at
    /// (see the `guard` module), also has the store open its files again before the next
    /// batch or snapshot (see `heal`).
    fn fault(&self, f: crate::error::Fault) -> IngestError {
        self.store.note(&f);
        self.failed();
        f.ingest(self.store.dir())
    }

    /// Records that this batch failed, for [`Store`]'s clean-up of a database whose first
    /// batch failed.
    fn failed(&self) {
        self.store
            .inner
            .batch_failed
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// What the batch's reads of SCIP indexes did with their documents so far (`N documents
    /// unchanged, M replaced, A added, K removed`): all zero but `read` unless the batch
    /// replaces, all zero unless it read an index.
    pub fn documents(&self) -> crate::scip::DocumentChanges {
        self.documents.clone().unwrap_or_default()
    }

    /// Removes every fact `unit` states when the batch commits (before its own facts are
    /// added).
    pub fn retract_unit(&mut self, unit: &str) -> Result<(), IngestError> {
        if unit.is_empty() {
            return Err(IngestError::Invalid(
                "the unit to retract is empty; name a unit".to_owned(),
            ));
        }
        // A unit is retracted when it owns facts; one never seen, or whose facts are all
        // gone, is listed in the summary's `unknown_units`.
        let owning = crate::guard::faults(|| {
            let Some(id) = self.id_by_unit.get(unit)?.map(|v| v.value()) else {
                return Ok(None);
            };
            let owns = self
                .unit_relations
                .range((id, 0)..=(id, u32::MAX))?
                .next()
                .is_some();
            Ok(owns.then_some(id))
        })
        .map_err(|f| {
            self.store.note(&f);
            f.ingest(self.store.base_path())
        })?;
        match owning {
            Some(id) => {
                self.retract_units.insert(id);
            }
            None => self.unknown_units.push(unit.to_owned()),
        }
        Ok(())
    }
}

/// Adapts a batch to [`FactSink`], tracking bytes for progress.
struct Sink<'b, 's> {
    batch: &'b mut Batch<'s>,
    bytes: u64,
}

impl FactSink for Sink<'_, '_> {
    fn fact(&mut self, fact: &Fact<'_>) -> Result<(), IngestError> {
        crate::guard::faults(|| self.batch.fact(fact)).map_err(|f| self.batch.fault(f))
    }

    fn facts(&mut self, run: &FactRun<'_>) -> Result<(), IngestError> {
        crate::guard::faults(|| self.batch.facts(run)).map_err(|f| self.batch.fault(f))
    }

    fn group(&mut self, group: &FactGroup) -> Result<(), IngestError> {
        crate::guard::faults(|| self.batch.group(group)).map_err(|f| self.batch.fault(f))
    }

    fn declare(&mut self, fact: &Fact<'_>) -> Result<(), IngestError> {
        crate::guard::faults(|| self.batch.declare(fact)).map_err(|f| self.batch.fault(f))
    }

    fn stored(&mut self) -> std::result::Result<Option<crate::Snapshot>, crate::ReadError> {
        if !self.batch.options.replace {
            return Ok(None);
        }
        self.batch.store.snapshot().map(Some)
    }

    fn retract_unit(&mut self, unit: &str) -> std::result::Result<(), IngestError> {
        self.batch.retract_unit(unit)
    }

    fn keep_unit(&mut self, unit: &str) -> std::result::Result<(), IngestError> {
        crate::guard::faults(|| self.batch.keep_unit(unit)).map_err(|f| self.batch.fault(f))
    }

    fn allow_empty(&self) -> bool {
        self.batch.options.allow_empty
    }

    fn documents(&mut self, changes: &crate::scip::DocumentChanges) {
        self.batch
            .documents
            .get_or_insert_with(Default::default)
            .add(changes);
    }

    fn progress(&mut self, bytes: u64, _facts: u64) {
        self.bytes = bytes;
        let total_bytes = self.batch.bytes_before + bytes;
        let facts = self.batch.facts_read;
        if let Some(f) = self.batch.progress.as_mut() {
            f(total_bytes, facts);
        }
    }
}
