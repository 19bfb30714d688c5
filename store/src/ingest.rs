//! Batches: everything one ingest (or retraction) writes, committed atomically.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::MutexGuard;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redb::{ReadOnlyTable, ReadableDatabase, ReadableTable, WriteTransaction};
use rustc_hash::FxHashMap;

use crate::catalog::{BatchRecord, Catalog, RelationMeta, encode_json};
use crate::db::Store;
use crate::dump::{self, DumpSpec, Fact, FactSink, Field, Origin};
use crate::error::{Result, StoreError};
use crate::layout::{self, DEFAULT_TIER};
use crate::relwriter::RelWriter;
use strata_eval::Term;

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

/// A relation's facts gathered by a batch, as terms.
struct Pending {
    spelled: String,
    origin: Origin,
    columns: Vec<String>,
    doc: Option<String>,
    file: String,
    line: u64,
    tuples: Vec<u32>,
    units: Vec<u32>,
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
}

/// A batch's open transactions and running state between flushes.
struct Writing {
    wtxn: WriteTransaction,
    seq: u64,
    /// Set when the batch id was committed before: nothing is written.
    already: Option<u64>,
    next_rel: u32,
    units_count: u32,
    /// Every relation written so far, as it stands in this batch.
    metas: BTreeMap<String, RelationMeta>,
    /// Open tier files: their transaction and the savepoint taken before it.
    tiers: TierTxns,
    /// Units whose stored facts were removed already.
    removed_units: BTreeSet<u32>,
    unit_rel_changes: Vec<(u32, u32, bool)>,
    relations: BTreeSet<String>,
    summary: BatchSummary,
    /// Relations that held no row when the batch began.
    fresh: BTreeSet<String>,
}

/// A batch's open tier transactions, each with the savepoint taken before it.
#[derive(Default)]
struct TierTxns(BTreeMap<String, (std::sync::Arc<redb::Database>, WriteTransaction, u64)>);

impl Drop for TierTxns {
    /// A batch dropped before its commit (an error, or never committed) leaves nothing: its
    /// transactions abort, and the savepoints it took in tier files are deleted.
    fn drop(&mut self) {
        for (_, (db, txn, sp)) in std::mem::take(&mut self.0) {
            drop(txn);
            if let Ok(t) = db.begin_write()
                && t.delete_persistent_savepoint(sp).is_ok()
            {
                let _ = t.commit();
            }
        }
    }
}

/// A fixed-size Bloom filter of (relation, tuple): a "no" is certain.
struct Bloom {
    bits: Vec<u64>,
}

impl Bloom {
    const BITS: usize = 1 << 27;

    fn new() -> Bloom {
        Bloom {
            bits: vec![0; Self::BITS / 64],
        }
    }

    fn hashes(rel: u32, tuple: &[u32]) -> [usize; 2] {
        use std::hash::BuildHasher;
        let h = rustc_hash::FxBuildHasher.hash_one((rel, tuple));
        let h2 = h.rotate_left(32) ^ 0x9e37_79b9_7f4a_7c15;
        [(h as usize) % Self::BITS, (h2 as usize) % Self::BITS]
    }

    fn insert(&mut self, rel: u32, tuple: &[u32]) {
        for i in Self::hashes(rel, tuple) {
            self.bits[i / 64] |= 1 << (i % 64);
        }
    }

    fn may_contain(&self, rel: u32, tuple: &[u32]) -> bool {
        Self::hashes(rel, tuple)
            .iter()
            .all(|&i| self.bits[i / 64] & (1 << (i % 64)) != 0)
    }
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

    fn intern_text(&mut self, s: &str) -> Result<u32> {
        if let Some(&id) = self.texts.get(s) {
            return Ok(id);
        }
        let stored = if self.start.texts > 0 {
            crate::intern::find_text(
                &self.id_by_text,
                &self.text_collisions,
                &self.text_by_id,
                self.start.texts,
                s,
            )?
        } else {
            None
        };
        let id = match stored {
            Some(id) => id,
            None => {
                let id = self.start.texts + 1 + self.new_texts;
                if id > Term::MAX_ID {
                    return Err(StoreError::Full("the text dictionary".to_owned()));
                }
                self.new_texts += 1;
                id
            }
        };
        self.texts.insert(s.into(), id);
        Ok(id)
    }

    fn intern_number(&mut self, n: f64) -> Result<u32> {
        let bits = n.to_bits();
        if let Some(&id) = self.numbers.get(&bits) {
            return Ok(id);
        }
        let stored = if self.start.numbers > 0 {
            self.id_by_number.get(bits)?.map(|v| v.value())
        } else {
            None
        };
        let id = match stored {
            Some(id) => id,
            None => {
                let id = self.start.numbers + self.new_numbers.len() as u32;
                if id > Term::MAX_NUMBER_ID {
                    return Err(StoreError::Full("the number dictionary".to_owned()));
                }
                self.new_numbers.push(bits);
                id
            }
        };
        self.numbers.insert(bits, id);
        Ok(id)
    }

    fn intern_unit(&mut self, s: &str) -> Result<u32> {
        if let Some(&id) = self.units.get(s) {
            return Ok(id);
        }
        let id = match self.id_by_unit.get(s)?.map(|v| v.value()) {
            Some(id) => id,
            None => {
                self.new_units.push(s.into());
                self.start_units + self.new_units.len() as u32
            }
        };
        self.units.insert(s.into(), id);
        Ok(id)
    }

    fn term(&mut self, field: &Field<'_>) -> Result<u32> {
        Ok(match field {
            Field::Absent => Term::ABSENT.0,
            Field::Text(s) => Term::text(self.intern_text(s)?).0,
            Field::Number(n) => match Term::integer(*n) {
                Some(t) => t.0,
                None => Term::number(self.intern_number(*n)?).0,
            },
        })
    }

    fn clash(&self, file: &str, line: u64, message: String) -> StoreError {
        StoreError::Clash {
            file: file.to_owned(),
            line,
            message,
        }
    }

    fn fact(&mut self, fact: &Fact<'_>) -> Result<()> {
        self.facts_read += 1;
        let mut terms = [0u32; 8];
        let mut long = Vec::new();
        let terms: &[u32] = if fact.fields.len() <= 8 {
            for (i, f) in fact.fields.iter().enumerate() {
                terms[i] = self.term(f)?;
            }
            &terms[..fact.fields.len()]
        } else {
            for f in fact.fields {
                long.push(self.term(f)?);
            }
            &long
        };
        let unit = match fact.unit {
            Some(u) => {
                let id = self.intern_unit(u)?;
                if self.options.replace {
                    self.replace_units.insert(id);
                }
                id
            }
            None => 0,
        };
        let label = &self.label;
        match self.rels.get_mut(fact.relation) {
            Some(p) => {
                if p.origin != fact.origin || p.spelled != fact.spelled {
                    let (file, line) = (label.clone(), fact.line);
                    let msg = format!(
                        "\"{}\" ({}) names the same relation \"{}\" as \"{}\" ({}) at {}:{}; \
                         rename one of them",
                        fact.spelled,
                        fact.origin.noun(),
                        fact.relation,
                        p.spelled,
                        p.origin.noun(),
                        p.file,
                        p.line
                    );
                    return Err(self.clash(&file, line, msg));
                }
                if p.columns.len() != terms.len() {
                    let msg = format!(
                        "relation \"{}\" has {} columns at {}:{}, but {} here",
                        fact.relation,
                        p.columns.len(),
                        p.file,
                        p.line,
                        terms.len()
                    );
                    return Err(self.clash(&label.clone(), fact.line, msg));
                }
                p.tuples.extend_from_slice(terms);
                p.units.push(unit);
                self.pending_facts += 1;
                if self.pending_facts >= self.options.buffer_facts.max(1) {
                    self.flush(true)?;
                }
            }
            None => {
                self.rels.insert(
                    fact.relation.to_owned(),
                    Pending {
                        spelled: fact.spelled.to_owned(),
                        origin: fact.origin,
                        columns: fact.columns.to_vec(),
                        doc: fact.doc.map(str::to_owned),
                        file: label.clone(),
                        line: fact.line,
                        tuples: terms.to_vec(),
                        units: vec![unit],
                    },
                );
                self.pending_facts += 1;
            }
        }
        Ok(())
    }

    /// Checks each gathered relation against the catalog; returns the catalog entries to
    /// write to (new ones with fresh ids).
    fn resolve_into(
        &self,
        written: &BTreeMap<String, RelationMeta>,
        next_rel: &mut u32,
    ) -> Result<BTreeMap<String, RelationMeta>> {
        let mut out = BTreeMap::new();
        for (name, p) in &self.rels {
            let stored = written.get(name).or_else(|| self.start.relations.get(name));
            let meta = match stored {
                Some(m) => {
                    if m.origin != p.origin || m.spelled != p.spelled {
                        return Err(self.clash(
                            &p.file,
                            p.line,
                            format!(
                                "\"{}\" ({}) names the same relation \"{name}\" as the stored \
                                 \"{}\" ({}); rename one of them",
                                p.spelled,
                                p.origin.noun(),
                                m.spelled,
                                m.origin.noun()
                            ),
                        ));
                    }
                    if m.columns.len() != p.columns.len() {
                        return Err(self.clash(
                            &p.file,
                            p.line,
                            format!(
                                "relation \"{name}\" is stored with {} columns ({}), but this \
                                 dump gives it {}",
                                m.columns.len(),
                                m.columns.join(", "),
                                p.columns.len()
                            ),
                        ));
                    }
                    if m.tier != self.options.tier {
                        return Err(self.clash(
                            &p.file,
                            p.line,
                            format!(
                                "relation \"{name}\" lives in tier \"{}\", not \"{}\"; ingest \
                                 it with --tier {}",
                                m.tier, self.options.tier, m.tier
                            ),
                        ));
                    }
                    let mut m = m.clone();
                    if let Some(doc) = &p.doc {
                        m.doc.clone_from(doc);
                    }
                    m
                }
                None => {
                    let id = *next_rel;
                    *next_rel += 1;
                    RelationMeta {
                        id,
                        name: name.clone(),
                        spelled: p.spelled.clone(),
                        origin: p.origin,
                        columns: p.columns.clone(),
                        doc: p.doc.clone().unwrap_or_default(),
                        tier: self.options.tier.clone(),
                        next_row: 0,
                        rows: 0,
                        distinct: vec![0; p.columns.len()],
                    }
                }
            };
            out.insert(name.clone(), meta);
        }
        Ok(out)
    }

    /// Writes the batch's new texts into the dictionary tables.
    fn write_texts(&self, wtxn: &WriteTransaction) -> Result<()> {
        use crate::intern::{TEXT_CHUNK_BITS, decode_text_chunk, encode_text_chunk, text_hash};
        let mut new: Vec<(u32, &str)> = self
            .texts
            .iter()
            .filter(|(_, id)| **id > self.start.texts)
            .map(|(s, id)| (*id, &**s))
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        new.sort_unstable_by_key(|(id, _)| *id);
        let mut by_id = wtxn.open_table(layout::TEXT_BY_ID)?;
        let mut i = 0;
        while i < new.len() {
            let chunk = new[i].0 >> TEXT_CHUNK_BITS;
            let mut j = i;
            while j < new.len() && new[j].0 >> TEXT_CHUNK_BITS == chunk {
                j += 1;
            }
            // The chunk holds the ids before this batch's first (the empty slot 0 included).
            let mut texts = match by_id.get(chunk)? {
                Some(v) => decode_text_chunk(v.value())?,
                None if chunk == 0 => vec![String::new()],
                None => Vec::new(),
            };
            if texts.len() as u32 != new[i].0 - (chunk << TEXT_CHUNK_BITS) {
                return Err(StoreError::Corrupt(format!(
                    "dictionary chunk {chunk} holds {} texts; expected {}",
                    texts.len(),
                    new[i].0 - (chunk << TEXT_CHUNK_BITS)
                )));
            }
            texts.extend(new[i..j].iter().map(|(_, s)| (*s).to_owned()));
            by_id.insert(
                chunk,
                encode_text_chunk(texts.iter().map(String::as_str)).as_slice(),
            )?;
            i = j;
        }
        let mut hashed: Vec<(u64, u32, &str)> =
            new.iter().map(|&(id, s)| (text_hash(s), id, s)).collect();
        hashed.sort_unstable();
        let mut by_hash = wtxn.open_table(layout::ID_BY_TEXT)?;
        let mut collisions = wtxn.open_table(layout::TEXT_COLLISIONS)?;
        let mut prev = None;
        for (h, id, s) in hashed {
            let taken = prev == Some(h) || (self.start.texts > 0 && by_hash.get(h)?.is_some());
            if taken {
                collisions.insert(s, id)?;
            } else {
                by_hash.insert(h, id)?;
            }
            prev = Some(h);
        }
        Ok(())
    }

    /// Writes the batch atomically: all of it lands, or (on any error) none of it.
    ///
    /// A storage failure (a full disk, say) is [`StoreError::WriteFailed`], which says whether
    /// the batch may have landed: only a failure of the final durable commit leaves that open,
    /// and running the same batch again is then safe (facts already stored are not stored
    /// twice; a batch id already committed is skipped).
    pub fn commit(self) -> Result<BatchSummary> {
        let dir = self.store.dir().to_owned();
        let seq = self.start.seq + 1;
        let mut committing = false;
        self.commit_inner(&mut committing).map_err(|e| match e {
            StoreError::Engine(e) => StoreError::WriteFailed {
                dir,
                seq,
                message: e.to_string(),
                outcome: if committing {
                    "the batch may or may not have been stored: run it again (a fact already \
                     stored is not stored twice, a committed --batch-id is skipped)"
                } else {
                    "nothing of the batch was stored"
                },
            },
            other => other,
        })
    }

    /// Opens the batch's transaction on the base file (once), checking the batch id.
    fn begin(&mut self) -> Result<()> {
        if self.writing.is_some() {
            return Ok(());
        }
        let wtxn = self.store.inner.base.begin_write()?;
        let already = match &self.options.batch_id {
            Some(id) => wtxn
                .open_table(layout::BATCH_IDS)?
                .get(id.as_str())?
                .map(|v| v.value()),
            None => None,
        };
        let (next_rel, units_count) = {
            let meta = wtxn.open_table(layout::META)?;
            (
                crate::catalog::meta_u32(&meta, "relations")?,
                crate::catalog::meta_u32(&meta, "units")?,
            )
        };
        let fresh = self
            .start
            .relations
            .values()
            .filter(|m| m.next_row == 0)
            .map(|m| m.name.clone())
            .collect();
        self.writing = Some(Writing {
            wtxn,
            seq: self.start.seq + 1,
            already,
            next_rel,
            units_count,
            metas: BTreeMap::new(),
            tiers: TierTxns::default(),
            removed_units: BTreeSet::new(),
            unit_rel_changes: Vec::new(),
            relations: BTreeSet::new(),
            summary: BatchSummary::default(),
            fresh,
        });
        Ok(())
    }

    /// Writes the facts gathered so far into the batch's transactions (uncommitted), and
    /// removes the stored facts of units named for the first time. `more` says more facts
    /// will follow (then a filter remembers what was written, so later flushes skip
    /// looking it up).
    fn flush(&mut self, more: bool) -> Result<()> {
        self.begin()?;
        self.pending_facts = 0;
        if self.writing.as_ref().is_some_and(|w| w.already.is_some()) {
            // A retried batch: nothing is written; drop what was read.
            self.rels.clear();
            return Ok(());
        }
        if more && self.seen.is_none() {
            self.seen = Some(Bloom::new());
        }
        let mut w = self
            .writing
            .take()
            .ok_or_else(|| StoreError::Corrupt("a batch's transaction vanished".to_owned()))?;
        let result = self.flush_into(&mut w);
        self.writing = Some(w);
        result
    }

    fn flush_into(&mut self, w: &mut Writing) -> Result<()> {
        let seq = w.seq;
        let mut metas = {
            let mut next_rel = w.next_rel;
            let resolved = self.resolve_into(&w.metas, &mut next_rel)?;
            w.next_rel = next_rel;
            resolved
        };
        for name in self.rels.keys() {
            if !w.metas.contains_key(name) && !self.start.relations.contains_key(name) {
                w.fresh.insert(name.clone());
            }
        }
        // Units named for the first time lose their stored facts now, before this flush's
        // facts are added (facts this batch wrote for them earlier cannot exist: the unit
        // was not named before).
        let removing: BTreeSet<u32> = self
            .replace_units
            .union(&self.retract_units)
            .copied()
            .filter(|&u| u <= self.start_units && !w.removed_units.contains(&u))
            .collect();
        let mut removals: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        {
            let ur = w.wtxn.open_table(layout::UNIT_RELATIONS)?;
            let by_id: HashMap<u32, &RelationMeta> =
                self.start.relations.values().map(|m| (m.id, m)).collect();
            for &u in &removing {
                for entry in ur.range((u, 0)..=(u, u32::MAX))? {
                    let (k, _) = entry?;
                    let rel = k.value().1;
                    let m = by_id.get(&rel).ok_or_else(|| {
                        StoreError::Corrupt(format!(
                            "unit {u} owns facts of unknown relation {rel}"
                        ))
                    })?;
                    removals.entry(m.name.clone()).or_default().push(u);
                    if !metas.contains_key(&m.name) {
                        let current = w.metas.get(&m.name).unwrap_or(m);
                        metas.insert(m.name.clone(), current.clone());
                    }
                }
            }
        }
        w.removed_units.extend(removing);
        // Group by tier; the default tier's relations are written in the base transaction.
        let mut tiers: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for m in metas.values() {
            tiers
                .entry(m.tier.clone())
                .or_default()
                .push(m.name.clone());
        }
        for (tier, names) in &tiers {
            if tier != DEFAULT_TIER && !w.tiers.0.contains_key(tier) {
                let db = self.store.tier_db(tier, true)?;
                let sp_txn = db.begin_write()?;
                let sp = sp_txn.persistent_savepoint()?;
                sp_txn.commit()?;
                let txn = db.begin_write()?;
                {
                    let mut t = txn.open_table(layout::TIER_META)?;
                    t.insert("applied_seq", seq.to_le_bytes().as_slice())?;
                    t.insert("savepoint", sp.to_le_bytes().as_slice())?;
                }
                w.tiers.0.insert(tier.clone(), (db, txn, sp));
            }
            let txn = if tier == DEFAULT_TIER {
                &w.wtxn
            } else {
                &w.tiers.0[tier].1
            };
            for name in names {
                let meta = metas.remove(name).ok_or_else(|| {
                    StoreError::Corrupt(format!("relation {name} vanished during commit"))
                })?;
                let rel = meta.id;
                let fresh = w.fresh.contains(name);
                let mut rw = RelWriter::new(txn, meta)?;
                for &u in removals.get(name).map_or(&[][..], Vec::as_slice) {
                    w.summary.removed += rw.remove_unit(u)?;
                }
                if let Some(p) = self.rels.get_mut(name) {
                    let seen = if fresh { self.seen.as_mut() } else { None };
                    add_pending(&mut rw, p, &mut w.summary, seen)?;
                    w.relations.insert(name.clone());
                }
                let (meta, units) = rw.finish()?;
                w.unit_rel_changes
                    .extend(units.into_iter().map(|(u, owns)| (u, rel, owns)));
                w.metas.insert(name.clone(), meta);
            }
        }
        self.rels.clear();
        Ok(())
    }

    fn commit_inner(mut self, committing: &mut bool) -> Result<BatchSummary> {
        let t0 = Instant::now();
        self.flush(false)?;
        let Some(mut w) = self.writing.take() else {
            return Err(StoreError::Corrupt(
                "a batch's transaction vanished".to_owned(),
            ));
        };
        if let Some(seq) = w.already {
            return Ok(BatchSummary {
                seq,
                already_committed: true,
                facts_read: self.facts_read,
                elapsed: self.started.elapsed(),
                ..BatchSummary::default()
            });
        }
        let seq = w.seq;
        let units_count = w.units_count;
        let next_rel = w.next_rel;
        let metas = std::mem::take(&mut w.metas);
        let unit_rel_changes = std::mem::take(&mut w.unit_rel_changes);
        let mut tiers: BTreeSet<String> = metas.values().map(|m| m.tier.clone()).collect();
        tiers.extend(w.tiers.0.keys().cloned());
        let tier_txns: Vec<(
            String,
            std::sync::Arc<redb::Database>,
            WriteTransaction,
            u64,
        )> = std::mem::take(&mut w.tiers.0)
            .into_iter()
            .map(|(t, (db, txn, sp))| (t, db, txn, sp))
            .collect();
        let wtxn = w.wtxn;
        let units_removed = {
            let names = wtxn.open_table(layout::UNIT_NAMES)?;
            let mut v = Vec::new();
            for &u in &w.removed_units {
                if let Some(n) = names.get(u)? {
                    v.push(n.value().to_owned());
                }
            }
            v
        };
        let mut summary = BatchSummary {
            seq,
            facts_read: self.facts_read,
            relations: w.relations.iter().cloned().collect(),
            unknown_units: std::mem::take(&mut self.unknown_units),
            new: w.summary.new,
            duplicates: w.summary.duplicates,
            removed: w.summary.removed,
            ..BatchSummary::default()
        };

        // The base file: dictionary, units, catalog, batch record.
        {
            self.write_texts(&wtxn)?;
            let mut t = wtxn.open_table(layout::NUMBER_BY_ID)?;
            let mut r = wtxn.open_table(layout::ID_BY_NUMBER)?;
            for (i, &bits) in self.new_numbers.iter().enumerate() {
                let id = self.start.numbers + i as u32;
                t.insert(id, bits)?;
                r.insert(bits, id)?;
            }
            let mut t = wtxn.open_table(layout::UNIT_NAMES)?;
            let mut r = wtxn.open_table(layout::UNIT_IDS)?;
            for (i, s) in self.new_units.iter().enumerate() {
                let id = units_count + 1 + i as u32;
                t.insert(id, &**s)?;
                r.insert(&**s, id)?;
            }
            let mut ur = wtxn.open_table(layout::UNIT_RELATIONS)?;
            for (u, rel, owns) in unit_rel_changes {
                if u == 0 {
                    continue;
                }
                if owns {
                    ur.insert((u, rel), ())?;
                } else {
                    ur.remove((u, rel))?;
                }
            }
            let mut rels = wtxn.open_table(layout::RELATIONS)?;
            let mut ids = wtxn.open_table(layout::RELATION_IDS)?;
            for m in metas.values() {
                rels.insert(m.id, encode_json(m).as_slice())?;
                ids.insert(m.name.as_str(), m.id)?;
            }
            let record = BatchRecord {
                seq,
                batch_id: self.options.batch_id.clone(),
                labels: self.options.labels.clone(),
                committed_at: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
                facts_read: summary.facts_read,
                new: summary.new,
                duplicates: summary.duplicates,
                removed: summary.removed,
                relations: summary.relations.clone(),
                units_removed,
            };
            wtxn.open_table(layout::BATCHES)?
                .insert(seq, encode_json(&record).as_slice())?;
            if let Some(id) = &self.options.batch_id {
                wtxn.open_table(layout::BATCH_IDS)?
                    .insert(id.as_str(), seq)?;
            }
            let mut ts = wtxn.open_table(layout::TIER_SEQ)?;
            for tier in &tiers {
                ts.insert(tier.as_str(), seq)?;
            }
            let mut meta = wtxn.open_table(layout::META)?;
            meta.insert("seq", seq.to_le_bytes().as_slice())?;
            let texts = self.start.texts + self.new_texts;
            meta.insert("texts", texts.to_le_bytes().as_slice())?;
            let numbers = self.start.numbers + self.new_numbers.len() as u32;
            meta.insert("numbers", numbers.to_le_bytes().as_slice())?;
            let units = units_count + self.new_units.len() as u32;
            meta.insert("units", units.to_le_bytes().as_slice())?;
            meta.insert("relations", next_rel.to_le_bytes().as_slice())?;
        }

        let t1 = Instant::now();
        // Commit: tier files first, then the base file, which acknowledges the batch.
        {
            let _guard = self
                .store
                .inner
                .commit_lock
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut cleanup = Vec::new();
            let mut failed = None;
            for (tier, db, txn, sp) in tier_txns {
                if failed.is_some() {
                    break;
                }
                match txn.commit() {
                    Ok(()) => cleanup.push((tier, db, sp)),
                    Err(e) => failed = Some(StoreError::from(e)),
                }
            }
            if failed.is_none() {
                *committing = true;
                if let Err(e) = wtxn.commit() {
                    failed = Some(e.into());
                }
            }
            if let Some(e) = failed {
                // The base file did not acknowledge the batch (or may not have): undo it in
                // the tiers it reached, now, so this process never builds on it; if that
                // fails too, refuse further batches until the database is opened again.
                self.store
                    .inner
                    .poisoned
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                let undone = cleanup
                    .iter()
                    .all(|(tier, db, _)| self.store.recover_tier(db, tier).is_ok());
                if undone && !*committing {
                    self.store
                        .inner
                        .poisoned
                        .store(false, std::sync::atomic::Ordering::SeqCst);
                }
                return Err(e);
            }
            for (_, db, sp) in cleanup {
                let txn = db.begin_write()?;
                txn.delete_persistent_savepoint(sp)?;
                txn.open_table(layout::TIER_META)?.remove("savepoint")?;
                txn.commit()?;
            }
        }
        summary.elapsed = self.started.elapsed();
        summary.read_time = t0 - self.started;
        summary.write_time = t1 - t0;
        summary.sync_time = t1.elapsed();
        Ok(summary)
    }
}

/// Adds a relation's gathered facts: each distinct tuple once, with its distinct units.
fn add_pending(
    w: &mut RelWriter<'_>,
    p: &mut Pending,
    summary: &mut BatchSummary,
    mut seen: Option<&mut Bloom>,
) -> Result<()> {
    let rel = w.meta.id;
    // With a filter (a relation empty when the batch began, written in several flushes):
    // a tuple the filter never saw is certainly not stored.
    let mut add = |w: &mut RelWriter<'_>, t: &[u32], us: &[u32]| -> Result<bool> {
        match seen.as_deref_mut() {
            Some(b) => {
                let absent = !b.may_contain(rel, t);
                let new = w.add_known(t, us, absent)?;
                b.insert(rel, t);
                Ok(new)
            }
            None => w.add(t, us),
        }
    };
    let arity = p.columns.len();
    let tuples = std::mem::take(&mut p.tuples);
    let units = std::mem::take(&mut p.units);
    if arity <= 2 {
        // Pack each statement as one u128 (columns, then unit) and sort those.
        let mut packed: Vec<u128> = (0..units.len())
            .map(|i| {
                let t = &tuples[i * arity..(i + 1) * arity];
                let a = t.first().map_or(0, |&x| u128::from(x));
                let b = t.get(1).map_or(0, |&x| u128::from(x));
                a << 96 | b << 64 | u128::from(units[i])
            })
            .collect();
        drop(tuples);
        drop(units);
        packed.sort_unstable();
        let mut i = 0;
        let mut us = Vec::new();
        let mut tuple = [0u32; 2];
        while i < packed.len() {
            let key = packed[i] >> 64;
            tuple[0] = (key >> 32) as u32;
            tuple[1] = key as u32;
            us.clear();
            let mut j = i;
            while j < packed.len() && packed[j] >> 64 == key {
                let u = packed[j] as u32;
                if us.last() != Some(&u) {
                    us.push(u);
                }
                j += 1;
            }
            record(add(w, &tuple[..arity], &us)?, (j - i) as u64, summary);
            i = j;
        }
        return Ok(());
    }
    let n = units.len();
    let tuple = |i: usize| &tuples[i * arity..(i + 1) * arity];
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by(|&a, &b| {
        tuple(a as usize)
            .cmp(tuple(b as usize))
            .then(units[a as usize].cmp(&units[b as usize]))
    });
    let mut i = 0;
    let mut us = Vec::new();
    while i < n {
        let t = tuple(order[i] as usize);
        us.clear();
        let mut j = i;
        while j < n && tuple(order[j] as usize) == t {
            let u = units[order[j] as usize];
            if us.last() != Some(&u) {
                us.push(u);
            }
            j += 1;
        }
        record(add(w, t, &us)?, (j - i) as u64, summary);
        i = j;
    }
    Ok(())
}

/// Counts a distinct tuple that `occurrences` statements of the batch gave.
fn record(new: bool, occurrences: u64, summary: &mut BatchSummary) {
    if new {
        summary.new += 1;
        summary.duplicates += occurrences - 1;
    } else {
        summary.duplicates += occurrences;
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

    fn progress(&mut self, bytes: u64, _facts: u64) {
        self.bytes = bytes;
        let total_bytes = self.batch.bytes_before + bytes;
        let facts = self.batch.facts_read;
        if let Some(f) = self.batch.progress.as_mut() {
            f(total_bytes, facts);
        }
    }
}
