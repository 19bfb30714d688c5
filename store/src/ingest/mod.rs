//! Batches: everything one ingest (or retraction) writes, committed atomically.
//!
//! This module holds the public side ([`BatchOptions`], [`Batch`], [`BatchSummary`] and
//! [`Store::batch`]); the parts of a batch's work each have a module: `dictionary` (interning),
//! `pending` (gathered facts), `bloom`, `flush` (open transactions) and `commit`.

mod bloom;
mod commit;
mod dictionary;
mod flush;
mod pending;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

use redb::{ReadOnlyTable, ReadableDatabase};
use rustc_hash::FxHashMap;

use crate::catalog::Catalog;
use crate::db::Store;
use crate::dump::{self, DumpSpec, Fact, FactSink, Field, Origin};
use crate::error::{Result, StoreError};
use crate::layout::{self, DEFAULT_TIER};
use bloom::Bloom;
use flush::Writing;
use pending::Pending;

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
}

/// The default [`BatchOptions::buffer_facts`].
pub const BUFFER_FACTS: usize = 16 << 20;

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            tier: DEFAULT_TIER.to_owned(),
            replace: false,
            labels: BTreeMap::new(),
            batch_id: None,
            buffer_facts: BUFFER_FACTS,
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
    start_units: u32,
    /// Every text the batch has seen, with its id; ids past `start.texts` are new.
    texts: FxHashMap<Box<str>, u32>,
    new_texts: u32,
    numbers: FxHashMap<u64, u32>,
    new_numbers: Vec<u64>,
    units: FxHashMap<Box<str>, u32>,
    new_units: Vec<Box<str>>,
    rels: BTreeMap<String, Pending>,
    replace_units: BTreeSet<u32>,
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
    /// Tuples written by earlier flushes into relations that were empty when the batch
    /// began (so later flushes need not look them up in the store).
    seen: Option<Bloom>,
    /// What replacing reads of SCIP indexes did with their documents.
    documents: crate::scip::DocumentChanges,
}

impl Store {
    /// Starts a batch. Only one batch runs at a time in a process; this waits for the one
    /// running, if any. Readers are never blocked.
    pub fn batch(&self, options: BatchOptions) -> Result<Batch<'_>> {
        if !layout::valid_tier_name(&options.tier) {
            return Err(StoreError::Invalid(format!(
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
        if self
            .inner
            .poisoned
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return Err(StoreError::Invalid(format!(
                "{}: an earlier batch failed while committing; open the database again \
                 before writing to it",
                self.dir().display()
            )));
        }
        let txn = self.inner.base.begin_read()?;
        let start = Catalog::read(&txn)?;
        let start_units = {
            let meta = txn.open_table(layout::META)?;
            crate::catalog::meta_u32(&meta, "units")?
        };
        Ok(Batch {
            store: self,
            _writer: writer,
            id_by_text: txn.open_table(layout::ID_BY_TEXT)?,
            text_collisions: txn.open_table(layout::TEXT_COLLISIONS)?,
            text_by_id: txn.open_table(layout::TEXT_BY_ID)?,
            id_by_number: txn.open_table(layout::ID_BY_NUMBER)?,
            id_by_unit: txn.open_table(layout::UNIT_IDS)?,
            options,
            start,
            start_units,
            started: Instant::now(),
            texts: FxHashMap::default(),
            new_texts: 0,
            numbers: FxHashMap::default(),
            new_numbers: Vec::new(),
            units: FxHashMap::default(),
            new_units: Vec::new(),
            rels: BTreeMap::new(),
            replace_units: BTreeSet::new(),
            retract_units: BTreeSet::new(),
            unknown_units: Vec::new(),
            facts_read: 0,
            label: String::new(),
            progress: None,
            bytes_before: 0,
            pending_facts: 0,
            writing: None,
            seen: None,
            documents: Default::default(),
        })
    }

    /// Removes every fact each of `units` states (facts another unit also states stay), as
    /// one batch.
    pub fn retract(&self, units: &[String], options: BatchOptions) -> Result<BatchSummary> {
        let mut batch = self.batch(options)?;
        for u in units {
            batch.retract_unit(u)?;
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
    pub fn read_dump(&mut self, input: impl std::io::BufRead, spec: &DumpSpec) -> Result<u64> {
        self.label = spec.label.clone();
        let before = self.bytes_before;
        let mut sink = Sink {
            batch: self,
            bytes: 0,
        };
        let n = dump::read(input, spec, &mut sink)?;
        let bytes = sink.bytes;
        self.bytes_before = before + bytes;
        Ok(n)
    }

    /// Opens and reads a dump file (`-` for standard input), with its format from `spec`.
    pub fn read_file(&mut self, path: &Path, spec: &DumpSpec) -> Result<u64> {
        let input = dump::open(path)?;
        self.read_dump(input, spec)
    }

    /// Adds one fact of a `.facts`-style relation (columns `c1..cN`) stated by `unit`.
    pub fn add_fact(
        &mut self,
        relation: &str,
        fields: &[Field<'_>],
        unit: Option<&str>,
    ) -> Result<()> {
        if !dump::valid_name(relation) {
            return Err(StoreError::Invalid(format!(
                "\"{relation}\" cannot name a relation: use letters, digits, `_` and `-`"
            )));
        }
        let columns: Vec<String> = (1..=fields.len()).map(|i| format!("c{i}")).collect();
        self.label = "(api)".to_owned();
        self.fact(&Fact {
            spelled: relation,
            relation,
            origin: Origin::Facts,
            columns: &columns,
            doc: None,
            fields,
            unit,
            line: self.facts_read + 1,
        })
    }

    /// What the batch's replacing reads of SCIP indexes did with their documents so far
    /// (`N documents unchanged, M replaced, A added, K removed`): all zero unless the batch
    /// replaces and read an index.
    pub fn documents(&self) -> crate::scip::DocumentChanges {
        self.documents
    }

    /// Removes every fact `unit` states when the batch commits (before its own facts are
    /// added).
    pub fn retract_unit(&mut self, unit: &str) -> Result<()> {
        match self.id_by_unit.get(unit)? {
            Some(id) => {
                self.retract_units.insert(id.value());
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
    fn fact(&mut self, fact: &Fact<'_>) -> Result<()> {
        self.batch.fact(fact)
    }

    fn stored(&mut self) -> Result<Option<crate::Snapshot>> {
        if !self.batch.options.replace {
            return Ok(None);
        }
        self.batch.store.snapshot().map(Some)
    }

    fn retract_unit(&mut self, unit: &str) -> Result<()> {
        self.batch.retract_unit(unit)
    }

    fn documents(&mut self, changes: &crate::scip::DocumentChanges) {
        self.batch.documents.add(changes);
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
