//! Writing one relation's data within a write transaction: appending rows, removing a unit's
//! rows, and keeping postings, owners and counts in step.

use std::collections::VecDeque;
use std::collections::hash_map::Entry;
use std::sync::mpsc::{Receiver, Sender};

use redb::{ReadableTable, Table, WriteTransaction};
use roaring::RoaringBitmap;
use rustc_hash::FxHashMap;

use crate::catalog::RelationMeta;
use crate::error::{Fault, Result, damaged};
use crate::layout::{self, BLOCK_ROWS};
use crate::seal::Seal;
use crate::{column, index};

type Key3 = (u32, u16, u32);

/// A `postings_runs` key: (flush, relation, column, chunk).
type RunKey = (u32, u32, u16, u32);

/// Where a flush's new postings go. A batch that flushes more than once writes each earlier
/// flush's new postings as a run (`postings_runs`) and merges the runs into `postings` at its
/// last flush, so each chunk is written once per batch (a chunk rewritten by each flush
/// leaves its B-tree leaves mostly empty).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Runs {
    /// How many flushes of the batch came before this one and wrote runs (numbered from 0).
    pub(crate) earlier: u32,
    /// Set when more flushes follow: this flush's new postings go to run `earlier`.
    pub(crate) spill: bool,
}

/// A value to write at a key, or `None` to remove the key.
type Change<K> = (K, Option<Vec<u8>>);

/// A cached bitmap: its value, whether it was stored before, whether it changed.
struct Cached {
    bitmap: RoaringBitmap,
    stored: bool,
    dirty: bool,
}

impl Cached {
    /// The bitmap decoded from its stored bytes, or an empty one when none are stored.
    fn load(stored: Option<RoaringBitmap>) -> Cached {
        Cached {
            stored: stored.is_some(),
            bitmap: stored.unwrap_or_default(),
            dirty: false,
        }
    }
}

/// A postings chunk being changed: each term's rows by low byte (what `postings` holds and
/// the batch's runs added), how many terms `postings` held when read, whether it changed.
#[derive(Default)]
struct ChunkCache {
    postings: std::collections::BTreeMap<u8, RoaringBitmap>,
    before: usize,
    dirty: bool,
}

/// One relation's writer within one tier's write transaction: the tables it reads and
/// writes, and the changes it gathers ([`Encode`]), which [`RelWriter::prepare`] hands over
/// to be encoded.
pub(crate) struct RelWriter<'t> {
    blocks: Table<'t, Key3, &'static [u8]>,
    postings: Table<'t, Key3, &'static [u8]>,
    owners: Table<'t, (u32, u32), &'static [u8]>,
    shared: Table<'t, (u32, u32), u32>,
    dead_table: Table<'t, u32, &'static [u8]>,
    /// The table holding the batch's runs, once there are any.
    run_table: Option<Table<'t, RunKey, &'static [u8]>>,
    /// What the batch changes in the relation.
    changes: Encode,
}

impl<'t> RelWriter<'t> {
    /// Sets where this flush's postings go, and which runs of earlier flushes the postings
    /// read here include.
    pub(crate) fn set_runs(&mut self, txn: &'t WriteTransaction, runs: Runs) -> Result<()> {
        if runs.earlier > 0 {
            self.run_table = Some(txn.open_table(layout::POSTINGS_RUNS)?);
        }
        self.changes.runs = runs;
        Ok(())
    }

    pub(crate) fn new(
        txn: &'t WriteTransaction,
        seal: Seal,
        meta: RelationMeta,
    ) -> Result<RelWriter<'t>> {
        let arity = meta.columns.len();
        Ok(RelWriter {
            blocks: txn.open_table(layout::BLOCKS)?,
            postings: txn.open_table(layout::POSTINGS)?,
            owners: txn.open_table(layout::OWNERS)?,
            shared: txn.open_table(layout::SHARED)?,
            dead_table: txn.open_table(layout::DEAD)?,
            run_table: None,
            changes: Encode {
                seal,
                had_rows: meta.next_row > 0,
                arity,
                block_cache: FxHashMap::default(),
                chunks: FxHashMap::default(),
                owner_cache: FxHashMap::default(),
                new_owners: Vec::new(),
                dead: None,
                appended: vec![Vec::new(); arity],
                meta,
                runs: Runs::default(),
            },
        })
    }

    /// The relation as the batch has changed it so far.
    pub(crate) fn meta(&self) -> &RelationMeta {
        &self.changes.meta
    }

    fn rel(&self) -> u32 {
        self.changes.meta.id
    }

    fn chunk(&mut self, col: u16, chunk: u32) -> Result<&mut ChunkCache> {
        match self.changes.chunks.entry((col, chunk)) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let mut c = ChunkCache::default();
                let key = (self.changes.meta.id, col, chunk);
                if self.changes.had_rows
                    && let Some(v) = self.postings.get(key)?
                {
                    let (seal, name) = (self.changes.seal, &self.changes.meta.name);
                    merge_chunk(seal, key, v.value(), name, &mut c)?;
                    c.before = c.postings.len();
                }
                if let Some(runs) = &self.run_table {
                    for f in 0..self.changes.runs.earlier {
                        if let Some(v) = runs.get((f, key.0, key.1, key.2))? {
                            let (seal, name) = (self.changes.seal, &self.changes.meta.name);
                            merge_chunk(seal, key, v.value(), name, &mut c)?;
                        }
                    }
                }
                Ok(e.insert(c))
            }
        }
    }

    /// The rows of (column, term) as stored plus this batch's changes so far.
    fn posting_len(&mut self, col: u16, term: u32) -> Result<u64> {
        let (chunk, low) = index::chunk_of(term);
        Ok(self
            .chunk(col, chunk)?
            .postings
            .get(&low)
            .map_or(0, RoaringBitmap::len))
    }

    fn posting_contains(&self, col: u16, term: u32, row: u32) -> bool {
        let (chunk, low) = index::chunk_of(term);
        self.changes
            .chunks
            .get(&(col, chunk))
            .and_then(|c| c.postings.get(&low))
            .is_some_and(|b| b.contains(row))
    }

    /// The posting of (column, term), to change.
    fn posting_mut(&mut self, col: u16, term: u32) -> Result<&mut RoaringBitmap> {
        let (chunk, low) = index::chunk_of(term);
        let c = self.chunk(col, chunk)?;
        c.dirty = true;
        Ok(c.postings.entry(low).or_default())
    }

    fn owner(&mut self, unit: u32) -> Result<&mut Cached> {
        match self.changes.owner_cache.entry(unit) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let key = (self.changes.meta.id, unit);
                // A relation that never held a row has no owners stored.
                let found = if self.changes.had_rows {
                    self.owners.get(key)?
                } else {
                    None
                };
                let stored = match found {
                    Some(v) => Some(index::decode(index::open_owners(
                        self.changes.seal,
                        key,
                        v.value(),
                    )?)?),
                    None => None,
                };
                let c = Cached::load(stored);
                Ok(e.insert(c))
            }
        }
    }

    fn dead(&mut self) -> Result<&mut Cached> {
        if self.changes.dead.is_none() {
            let rel = self.changes.meta.id;
            let stored = match self.dead_table.get(rel)? {
                Some(v) => Some(index::decode(index::open_dead(
                    self.changes.seal,
                    rel,
                    v.value(),
                )?)?),
                None => None,
            };
            self.changes.dead = Some(Cached::load(stored));
        }
        // Set just above.
        self.changes
            .dead
            .as_mut()
            .ok_or_else(|| damaged("dead-row bitmap vanished"))
    }

    fn block(&mut self, col: u16, block: u32) -> Result<&mut (Vec<u32>, bool)> {
        match self.changes.block_cache.entry((col, block)) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let key = (self.changes.meta.id, col, block);
                // A relation that never held a row has no blocks stored.
                let found = if self.changes.had_rows {
                    self.blocks.get(key)?
                } else {
                    None
                };
                let terms = match found {
                    Some(v) => column::decode(column::open(
                        self.changes.seal,
                        key,
                        v.value(),
                        &self.changes.meta.name,
                    )?)?,
                    None => Vec::with_capacity(BLOCK_ROWS as usize),
                };
                Ok(e.insert((terms, false)))
            }
        }
    }

    /// The terms of a stored row.
    fn read_row(&mut self, row: u32) -> Result<Vec<u32>> {
        let mut out = Vec::with_capacity(self.changes.arity);
        for col in 0..self.changes.arity as u16 {
            let (terms, _) = self.block(col, row / BLOCK_ROWS)?;
            let t = terms
                .get((row % BLOCK_ROWS) as usize)
                .copied()
                .ok_or_else(|| {
                    damaged(format!(
                        "relation {}: row {row} is past the end of its block",
                        self.changes.meta.name
                    ))
                })?;
            out.push(t);
        }
        Ok(out)
    }

    /// The live row holding `tuple`, if the relation held it before this batch (or this batch
    /// re-added it... it never does: batches add each distinct tuple once).
    fn find_row(&mut self, tuple: &[u32]) -> Result<Option<u32>> {
        if !self.changes.had_rows {
            return Ok(None);
        }
        let mut best: Option<(u64, u16)> = None;
        for (c, &t) in tuple.iter().enumerate() {
            let len = self.posting_len(c as u16, t)?;
            if len == 0 {
                return Ok(None);
            }
            if best.is_none_or(|(l, _)| len < l) {
                best = Some((len, c as u16));
            }
        }
        let Some((_, bc)) = best else {
            return Ok(None);
        };
        let (chunk, low) = index::chunk_of(tuple[bc as usize]);
        let candidates: Vec<u32> = self.changes.chunks[&(bc, chunk)].postings[&low]
            .iter()
            .collect();
        'rows: for r in candidates {
            for (c, &t) in tuple.iter().enumerate() {
                if c as u16 != bc && !self.posting_contains(c as u16, t, r) {
                    continue 'rows;
                }
            }
            return Ok(Some(r));
        }
        Ok(None)
    }

    /// Removes `unit` as an owner of each row it states; rows no other owner states die.
    /// Returns how many facts were removed.
    pub(crate) fn remove_unit(&mut self, unit: u32) -> Result<u64> {
        let rows = std::mem::take(&mut self.owner(unit)?.bitmap);
        self.owner(unit)?.dirty = true;
        let mut removed = 0;
        for r in &rows {
            let key = (self.rel(), r);
            let count = self.shared.get(key)?.map(|v| v.value());
            match count {
                Some(n) if n > 2 => {
                    self.shared.insert(key, n - 1)?;
                }
                Some(_) => {
                    self.shared.remove(key)?;
                }
                None => {
                    let terms = self.read_row(r)?;
                    for (c, t) in terms.into_iter().enumerate() {
                        self.posting_mut(c as u16, t)?.remove(r);
                    }
                    let d = self.dead()?;
                    d.bitmap.insert(r);
                    d.dirty = true;
                    removed += 1;
                }
            }
        }
        self.changes.meta.rows -= removed;
        Ok(removed)
    }

    /// Adds one distinct tuple stated by each of `units` (sorted, distinct; 0 = no unit).
    /// Returns whether the tuple is a new fact.
    pub(crate) fn add(&mut self, tuple: &[u32], units: &[u32]) -> Result<bool> {
        self.add_known(tuple, units, false)
    }

    /// As [`RelWriter::add`]; `absent` says the tuple is known not to be stored (so it is
    /// not looked up).
    pub(crate) fn add_known(&mut self, tuple: &[u32], units: &[u32], absent: bool) -> Result<bool> {
        let found = if absent { None } else { self.find_row(tuple)? };
        match found {
            Some(r) => {
                let mut added = 0u32;
                for &u in units {
                    let o = self.owner(u)?;
                    if o.bitmap.insert(r) {
                        o.dirty = true;
                        added += 1;
                    }
                }
                if added > 0 {
                    let key = (self.rel(), r);
                    let before = self.shared.get(key)?.map_or(1, |v| v.value());
                    self.shared.insert(key, before + added)?;
                }
                Ok(false)
            }
            None => {
                let r = self.changes.meta.next_row;
                self.changes.meta.next_row = r.checked_add(1).ok_or_else(|| {
                    Fault::Full(format!("relation \"{}\"", self.changes.meta.name))
                })?;
                self.changes.meta.rows += 1;
                let (rel, seal) = (self.changes.meta.id, self.changes.seal);
                for (c, &t) in tuple.iter().enumerate() {
                    self.changes.appended[c].push(u64::from(t) << 32 | u64::from(r));
                    let block = r / BLOCK_ROWS;
                    let entry = self.block(c as u16, block)?;
                    entry.0.push(t);
                    entry.1 = true;
                    if entry.0.len() == BLOCK_ROWS as usize {
                        // A full block is final for this batch: write it and free it.
                        let key = (rel, c as u16, block);
                        let bytes = column::seal(seal, key, column::encode(seal.codec, &entry.0)?);
                        self.changes.block_cache.remove(&(c as u16, block));
                        self.blocks.insert(key, bytes.as_slice())?;
                    }
                }
                for &u in units {
                    if self.changes.had_rows || self.changes.owner_cache.contains_key(&u) {
                        let o = self.owner(u)?;
                        o.bitmap.insert(r);
                        o.dirty = true;
                    } else {
                        self.changes
                            .new_owners
                            .push(u64::from(u) << 32 | u64::from(r));
                    }
                }
                if units.len() > 1 {
                    self.shared.insert((self.rel(), r), units.len() as u32)?;
                }
                Ok(true)
            }
        }
    }

    /// Ends the relation's writing in the transaction and hands its changes to an
    /// [`Encode`], which needs no transaction (so it can run on another thread);
    /// [`Encoded::write`] then writes the result, merging the new postings with the stored
    /// chunks and the batch's runs.
    pub(crate) fn prepare(self) -> Result<Encode> {
        Ok(self.changes)
    }
}

/// Keeps `meta.distinct[col]` true as chunk `c` is written: its postings now, less those
/// `postings` held.
fn recount(meta: &mut RelationMeta, col: u16, c: &ChunkCache) -> Result<()> {
    let d = &mut meta.distinct[col as usize];
    *d = (*d + c.postings.len() as u64)
        .checked_sub(c.before as u64)
        .ok_or_else(|| damaged(format!("relation {}: distinct count underflow", meta.name)))?;
    Ok(())
}

/// Adds the postings of the stored chunk `bytes` (at `postings` key `key`) to `c`.
fn merge_chunk(seal: Seal, key: Key3, bytes: &[u8], name: &str, c: &mut ChunkCache) -> Result<()> {
    let view = index::ChunkView::parse(index::open_chunk(seal, key, bytes, name)?)?;
    for (low, p) in view.iter() {
        *c.postings.entry(low).or_default() |= index::decode_posting(p)?;
    }
    Ok(())
}

/// A relation's changes in a batch: gathered by its [`RelWriter`], then encoded (on the
/// encoder's thread) by [`Encode::run`].
pub(crate) struct Encode {
    /// The relation, its counts kept true as rows are added and removed.
    pub(crate) meta: RelationMeta,
    arity: usize,
    /// Blocks read or written this batch, by (column, block), with a dirty flag.
    block_cache: FxHashMap<(u16, u32), (Vec<u32>, bool)>,
    /// Postings chunks read or changed this batch, by (column, chunk).
    chunks: FxHashMap<(u16, u32), ChunkCache>,
    owner_cache: FxHashMap<u32, Cached>,
    /// The owners of rows appended to a relation that held none before this batch (so no
    /// unit has owners stored), as `unit << 32 | row`: gathered flat and grouped by unit
    /// once, in [`Encode::run`], rather than a bitmap looked up for each row.
    new_owners: Vec<u64>,
    dead: Option<Cached>,
    /// Rows appended this batch, per column, as `term << 32 | row`.
    appended: Vec<Vec<u64>>,
    /// Whether the relation had any row (live or dead) before this batch.
    had_rows: bool,
    /// Whether the file's values carry checksums.
    seal: Seal,
    /// The batch's runs.
    runs: Runs,
}

/// A relation's changes encoded, to write into its transaction: values to insert (`None`:
/// to remove) by key.
pub(crate) struct Encoded {
    meta: RelationMeta,
    blocks: Vec<(Key3, Vec<u8>)>,
    /// Whole chunks, merged with what is stored and the runs (their runs are dropped).
    postings: Vec<Change<Key3>>,
    /// The new rows of chunks not read: each chunk's sealed bytes and how many postings it
    /// holds, ascending by key, to merge with what is stored and the runs, or to write as a
    /// run.
    added: Vec<(Key3, Vec<u8>, usize)>,
    had_rows: bool,
    seal: Seal,
    runs: Runs,
    owners: Vec<Change<(u32, u32)>>,
    dead: Option<Vec<u8>>,
    units: Vec<(u32, bool)>,
}

/// What [`Encode::run`] gathers, before the catalog entry is final.
#[derive(Default)]
struct Parts {
    blocks: Vec<(Key3, Vec<u8>)>,
    postings: Vec<Change<Key3>>,
    added: Vec<(Key3, Vec<u8>, usize)>,
    owners: Vec<Change<(u32, u32)>>,
    dead: Option<Vec<u8>>,
    units: Vec<(u32, bool)>,
}

impl Encode {
    /// Encodes a changed postings chunk (or removes it when empty), keeping `distinct` true.
    fn write_chunk(
        &mut self,
        out: &mut Parts,
        col: u16,
        chunk: u32,
        mut c: ChunkCache,
    ) -> Result<()> {
        let rel = self.meta.id;
        c.postings.retain(|_, b| !b.is_empty());
        recount(&mut self.meta, col, &c)?;
        if c.postings.is_empty() {
            // (An empty chunk read with runs drops them.)
            if c.before > 0 || self.runs.earlier > 0 {
                out.postings.push(((rel, col, chunk), None));
            }
        } else {
            let bytes =
                index::encode_chunk(self.seal.codec, c.postings.iter_mut().map(|(l, b)| (*l, b)));
            let bytes = index::seal_chunk(self.seal, (rel, col, chunk), bytes);
            out.postings.push(((rel, col, chunk), Some(bytes)));
        }
        Ok(())
    }

    /// Encodes the owners of appended rows gathered flat ([`RelWriter`]'s `new_owners`):
    /// each unit's rows at once, into its cached bitmap when it has one.
    fn new_owners(&mut self, out: &mut Parts) -> Result<()> {
        let rel = self.meta.id;
        let mut pairs = std::mem::take(&mut self.new_owners);
        // Rows are appended in order, so each unit's rows come out ascending.
        pairs.sort_unstable();
        for group in pairs.chunk_by(|a, b| a >> 32 == b >> 32) {
            let unit = (group[0] >> 32) as u32;
            let rows = group.iter().map(|p| *p as u32);
            if let Some(c) = self.owner_cache.get_mut(&unit) {
                c.bitmap.extend(rows);
                c.dirty = true;
                continue;
            }
            let mut bitmap = RoaringBitmap::from_sorted_iter(rows)
                .map_err(|e| damaged(format!("appended rows out of order: {e}")))?;
            let bytes = index::seal_owners(
                self.seal,
                (rel, unit),
                index::encode(self.seal.codec, &mut bitmap),
            );
            out.owners.push(((rel, unit), Some(bytes)));
            out.units.push((unit, true));
        }
        Ok(())
    }

    /// Encodes everything this batch changed, with the updated catalog entry and each unit
    /// whose rows changed and whether it still owns any row of the relation.
    pub(crate) fn run(mut self) -> Result<Encoded> {
        let rel = self.meta.id;
        let mut out = Parts::default();
        for ((col, block), (terms, dirty)) in std::mem::take(&mut self.block_cache) {
            if dirty {
                let key = (rel, col, block);
                let bytes = column::seal(self.seal, key, column::encode(self.seal.codec, &terms)?);
                out.blocks.push((key, bytes));
            }
        }
        // Appended rows: merge each chunk's new rows into its postings.
        for col in 0..self.arity {
            let mut pairs = std::mem::take(&mut self.appended[col]);
            pairs.sort_unstable();
            let c16 = col as u16;
            let mut i = 0;
            while i < pairs.len() {
                let chunk = index::chunk_of((pairs[i] >> 32) as u32).0;
                let mut j = i;
                while j < pairs.len() && index::chunk_of((pairs[j] >> 32) as u32).0 == chunk {
                    j += 1;
                }
                // A chunk this flush only adds to (read for lookups, maybe, but not changed)
                // gets its new postings alone; one a removal changed, whole.
                let fresh = !self.chunks.get(&(c16, chunk)).is_some_and(|c| c.dirty);
                let mut postings: Vec<(u8, RoaringBitmap)> = Vec::new();
                let mut k = i;
                while k < j {
                    let term = (pairs[k] >> 32) as u32;
                    let mut l = k;
                    while l < j && (pairs[l] >> 32) as u32 == term {
                        l += 1;
                    }
                    let rows =
                        RoaringBitmap::from_sorted_iter(pairs[k..l].iter().map(|p| *p as u32))
                            .map_err(|e| damaged(format!("appended rows out of order: {e}")))?;
                    postings.push((index::chunk_of(term).1, rows));
                    k = l;
                }
                if fresh {
                    // Its new postings, to merge with what is stored when written
                    // ([`Encoded::write`]).
                    let bytes = index::encode_chunk(
                        self.seal.codec,
                        postings.iter_mut().map(|(l, b)| (*l, b)),
                    );
                    let bytes = index::seal_chunk(self.seal, (rel, c16, chunk), bytes);
                    out.added.push(((rel, c16, chunk), bytes, postings.len()));
                } else {
                    // Merge, encode and let go of the chunk at once.
                    let mut c = self.chunks.remove(&(c16, chunk)).unwrap_or_default();
                    c.dirty = true;
                    for (low, rows) in postings {
                        *c.postings.entry(low).or_default() |= rows;
                    }
                    self.write_chunk(&mut out, c16, chunk, c)?;
                }
                i = j;
            }
        }
        for ((col, chunk), c) in std::mem::take(&mut self.chunks) {
            if c.dirty {
                self.write_chunk(&mut out, col, chunk, c)?;
            }
        }
        self.new_owners(&mut out)?;
        for (unit, mut c) in std::mem::take(&mut self.owner_cache) {
            if !c.dirty {
                continue;
            }
            out.units.push((unit, !c.bitmap.is_empty()));
            if c.bitmap.is_empty() {
                if c.stored {
                    out.owners.push(((rel, unit), None));
                }
            } else {
                let bytes = index::seal_owners(
                    self.seal,
                    (rel, unit),
                    index::encode(self.seal.codec, &mut c.bitmap),
                );
                out.owners.push(((rel, unit), Some(bytes)));
            }
        }
        if let Some(mut d) = self.dead.take()
            && d.dirty
        {
            out.dead = Some(index::seal_dead(
                self.seal,
                rel,
                index::encode(self.seal.codec, &mut d.bitmap),
            ));
        }
        out.units.sort_unstable();
        // In key order, redb's inserts walk its tree once.
        out.owners.sort_unstable_by_key(|(key, _)| *key);
        Ok(Encoded {
            meta: self.meta,
            blocks: out.blocks,
            postings: out.postings,
            added: out.added,
            had_rows: self.had_rows,
            seal: self.seal,
            runs: self.runs,
            owners: out.owners,
            dead: out.dead,
            units: out.units,
        })
    }
}

impl Encoded {
    /// Writes the encoded changes into `txn`; answers the updated catalog entry and each unit
    /// whose rows changed and whether it still owns any row of the relation.
    pub(crate) fn write(
        mut self,
        txn: &WriteTransaction,
    ) -> Result<(RelationMeta, Vec<(u32, bool)>)> {
        let rel = self.meta.id;
        let mut blocks = txn.open_table(layout::BLOCKS)?;
        for (key, bytes) in &self.blocks {
            blocks.insert(*key, bytes.as_slice())?;
        }
        let mut postings = txn.open_table(layout::POSTINGS)?;
        let mut runs = if self.runs.earlier > 0 || self.runs.spill {
            Some(txn.open_table(layout::POSTINGS_RUNS)?)
        } else {
            None
        };
        for (key, bytes) in &self.postings {
            match bytes {
                Some(b) => postings.insert(*key, b.as_slice())?,
                None => postings.remove(*key)?,
            };
            // The chunk was read with the runs: they are in it now.
            if let Some(runs) = runs.as_mut() {
                for f in 0..self.runs.earlier {
                    runs.remove((f, key.0, key.1, key.2))?;
                }
            }
        }
        self.write_added(&mut postings, runs.as_mut())?;
        let mut owners = txn.open_table(layout::OWNERS)?;
        for (key, bytes) in &self.owners {
            match bytes {
                Some(b) => owners.insert(*key, b.as_slice())?,
                None => owners.remove(*key)?,
            };
        }
        if let Some(bytes) = &self.dead {
            txn.open_table(layout::DEAD)?
                .insert(rel, bytes.as_slice())?;
        }
        Ok((self.meta, self.units))
    }
}

impl Encoded {
    /// Writes the new postings of chunks the flush did not read: as this flush's run when
    /// more flushes follow; else merged with what `postings` holds and the earlier runs (a
    /// chunk nothing else holds is written as it is), each chunk with a run included, keeping
    /// `distinct` true; then drops the relation's runs.
    fn write_added(
        &mut self,
        postings: &mut Table<'_, Key3, &'static [u8]>,
        runs: Option<&mut Table<'_, RunKey, &'static [u8]>>,
    ) -> Result<()> {
        let added = std::mem::take(&mut self.added);
        if self.runs.spill {
            let runs = runs.ok_or_else(|| damaged("a batch's runs table vanished"))?;
            let f = self.runs.earlier;
            for (key, bytes, _) in &added {
                runs.insert((f, key.0, key.1, key.2), bytes.as_slice())?;
            }
            return Ok(());
        }
        let rel = self.meta.id;
        let earlier = self.runs.earlier;
        // Every chunk the runs or this flush add to, ascending.
        let mut keys: Vec<(u16, u32)> = added.iter().map(|(k, _, _)| (k.1, k.2)).collect();
        if let Some(runs) = runs.as_deref() {
            for f in 0..earlier {
                for entry in runs.range((f, rel, 0, 0)..=(f, rel, u16::MAX, u32::MAX))? {
                    let k = entry?.0.value();
                    keys.push((k.2, k.3));
                }
            }
        }
        keys.sort_unstable();
        keys.dedup();
        let mut added = added.into_iter().peekable();
        for (col, chunk) in keys {
            let key = (rel, col, chunk);
            let new = added.next_if(|(k, _, _)| *k == key);
            let mut c = ChunkCache::default();
            if self.had_rows
                && let Some(v) = postings.get(key)?
            {
                merge_chunk(self.seal, key, v.value(), &self.meta.name, &mut c)?;
                c.before = c.postings.len();
            }
            let mut merged = c.before > 0;
            if let Some(runs) = runs.as_deref() {
                for f in 0..earlier {
                    if let Some(v) = runs.get((f, rel, col, chunk))? {
                        merge_chunk(self.seal, key, v.value(), &self.meta.name, &mut c)?;
                        merged = true;
                    }
                }
            }
            match new {
                Some((_, bytes, n)) if !merged => {
                    self.meta.distinct[col as usize] += n as u64;
                    postings.insert(key, bytes.as_slice())?;
                }
                new => {
                    if let Some((_, bytes, _)) = new {
                        merge_chunk(self.seal, key, &bytes, &self.meta.name, &mut c)?;
                    }
                    recount(&mut self.meta, col, &c)?;
                    let bytes = index::encode_chunk(
                        self.seal.codec,
                        c.postings.iter_mut().map(|(l, b)| (*l, b)),
                    );
                    postings.insert(key, index::seal_chunk(self.seal, key, bytes).as_slice())?;
                }
            }
        }
        if let Some(runs) = runs {
            for f in 0..earlier {
                runs.retain_in((f, rel, 0, 0)..=(f, rel, u16::MAX, u32::MAX), |_, _| false)?;
            }
        }
        Ok(())
    }
}

/// Encodes relations' changes ([`Encode::run`]), on a thread of its own when given a scope
/// to run one in (then the caller gathers the next relation meanwhile), else at once.
pub(crate) struct Encoder {
    thread: Option<(Sender<Encode>, Receiver<Result<Encoded>>)>,
    in_flight: usize,
    ready: VecDeque<Result<Encoded>>,
}

impl Encoder {
    /// An encoder with a thread in `scope`, or without one.
    pub(crate) fn new<'scope>(scope: Option<&'scope std::thread::Scope<'scope, '_>>) -> Encoder {
        let thread = scope.map(|s| {
            let (jobs, jobs_rx) = std::sync::mpsc::channel::<Encode>();
            let (done_tx, done) = std::sync::mpsc::channel();
            s.spawn(move || {
                for job in jobs_rx {
                    if done_tx.send(job.run()).is_err() {
                        return;
                    }
                }
            });
            (jobs, done)
        });
        Encoder {
            thread,
            in_flight: 0,
            ready: VecDeque::new(),
        }
    }

    /// Hands over a relation's changes.
    pub(crate) fn send(&mut self, job: Encode) {
        if let Some((jobs, _)) = &self.thread {
            match jobs.send(job) {
                Ok(()) => self.in_flight += 1,
                // Only a panic stops the thread; the scope passes it on.
                Err(e) => self.ready.push_back(e.0.run()),
            }
        } else {
            self.ready.push_back(job.run());
        }
    }

    /// An encoding done, if one is (without waiting).
    pub(crate) fn ready(&mut self) -> Option<Result<Encoded>> {
        if let Some(r) = self.ready.pop_front() {
            return Some(r);
        }
        let (_, done) = self.thread.as_ref()?;
        let r = done.try_recv().ok()?;
        self.in_flight -= 1;
        Some(r)
    }

    /// The next encoding, waiting for it; `None` when all are answered.
    pub(crate) fn next(&mut self) -> Option<Result<Encoded>> {
        if let Some(r) = self.ready.pop_front() {
            return Some(r);
        }
        if self.in_flight == 0 {
            return None;
        }
        let (_, done) = self.thread.as_ref()?;
        self.in_flight -= 1;
        Some(
            done.recv()
                .unwrap_or_else(|_| Err(damaged("the encoding thread stopped"))),
        )
    }
}
