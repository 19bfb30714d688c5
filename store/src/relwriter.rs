//! Writing one relation's data within a write transaction: appending rows, removing a unit's
//! rows, and keeping postings, owners and counts in step.

mod appended;
mod encoder;
mod probe;

use std::collections::hash_map::Entry;

use redb::{ReadableTable, Table, WriteTransaction};
use roaring::RoaringBitmap;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::blocks::{self, Sealed};
use crate::catalog::RelationMeta;
use crate::error::{Fault, Result, damaged};
use crate::layout::{self, BLOCK_ROWS, Payload};
use crate::seal::Seal;
use crate::{column, index};

pub(crate) use appended::{AddedChunks, rebuilt_postings};
use appended::{NewOwners, Streamed};
pub(crate) use encoder::{Encode, Encoded, Encoder};
pub(crate) use probe::LastBlock;
use probe::{Part, Probes, Stored};

type Key3 = (u32, u16, u32);

/// The most rows holding a tuple's first term that [`RelWriter::find_row`] checks in their
/// blocks rather than in the postings of the tuple's other terms.
const BY_BLOCKS: usize = 16;

/// The fewest new rows a flush appends for [`RelWriter::stream_postings`] to pay for its
/// thread.
const STREAMED_ROWS: usize = 1 << 20;

/// A column block's terms, and whether the batch changed them.
type Block = (Vec<u32>, bool);

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
    /// The blocks, postings and runs tables.
    stored: Stored<'t>,
    owners: Table<'t, (u32, u32), &'static [u8]>,
    shared: Table<'t, (u32, u32), u32>,
    dead_table: Table<'t, u32, &'static [u8]>,
    /// What the batch changes in the relation.
    changes: Encode,
    /// The stored postings and blocks last read to look tuples up.
    probes: Probes,
    /// The rows of a term no chunk in the batch's cache holds.
    empty: RoaringBitmap,
}

impl<'t> RelWriter<'t> {
    /// Sets where this flush's postings go, and which runs of earlier flushes the postings
    /// read here include.
    pub(crate) fn set_runs(&mut self, txn: &'t WriteTransaction, runs: Runs) -> Result<()> {
        if runs.earlier > 0 {
            self.stored.runs = Some(txn.open_table(layout::POSTINGS_RUNS)?);
        }
        self.stored.earlier = runs.earlier;
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
            stored: Stored {
                seal,
                rel: meta.id,
                name: meta.name.clone(),
                postings: txn.open_table(layout::POSTINGS)?,
                blocks: txn.open_table(layout::BLOCKS)?,
                runs: None,
                earlier: 0,
            },
            owners: txn.open_table(layout::OWNERS)?,
            shared: txn.open_table(layout::SHARED)?,
            dead_table: txn.open_table(layout::DEAD)?,
            probes: Probes::new(arity),
            empty: RoaringBitmap::new(),
            changes: Encode {
                seal,
                had_rows: meta.next_row > 0,
                arity,
                block_cache: FxHashMap::default(),
                tails: vec![None; arity],
                filled: Vec::new(),
                chunks: FxHashMap::default(),
                owner_cache: FxHashMap::default(),
                new_owners: NewOwners::default(),
                dead: None,
                first_appended: meta.next_row,
                appended: vec![Vec::new(); arity],
                coming: Vec::new(),
                streamed: None,
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
                // A relation that never held a row has nothing stored, nor runs.
                if self.changes.had_rows {
                    let (stored, runs) = self.stored.chunk_parts(col, chunk)?;
                    if let Some(part) = stored {
                        merge_part(&part, &mut c)?;
                        c.before = c.postings.len();
                    }
                    for part in &runs {
                        merge_part(part, &mut c)?;
                    }
                }
                Ok(e.insert(c))
            }
        }
    }

    /// The rows of (column, term) as stored plus this batch's changes so far: from the
    /// batch's chunk cache when it holds the chunk, else read ([`Probes::posting`]).
    fn posting(&mut self, col: u16, term: u32) -> Result<&RoaringBitmap> {
        let (chunk, low) = index::chunk_of(term);
        if self.changes.chunks.contains_key(&(col, chunk)) {
            let cached = self.changes.chunks[&(col, chunk)].postings.get(&low);
            return Ok(cached.unwrap_or(&self.empty));
        }
        self.probes.posting(&self.stored, col, term)
    }

    /// The term of stored row `row` in column `col`: from the batch's blocks when they
    /// hold it, else read ([`Probes::term`]).
    fn stored_term(&mut self, col: u16, row: u32) -> Result<Option<u32>> {
        let (block, at) = (row / BLOCK_ROWS, (row % BLOCK_ROWS) as usize);
        if let Some((b, (terms, _))) = &self.changes.tails[col as usize]
            && *b == block
        {
            return Ok(terms.get(at).copied());
        }
        if let Some((terms, _)) = self.changes.block_cache.get(&(col, block)) {
            return Ok(terms.get(at).copied());
        }
        self.probes.term(&self.stored, col, row)
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

    fn block(&mut self, col: u16, block: u32) -> Result<&mut Block> {
        if let Some((b, tail)) = self.changes.tails[col as usize].as_mut()
            && *b == block
        {
            return Ok(tail);
        }
        match self.changes.block_cache.entry((col, block)) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let key = (self.changes.meta.id, col, block);
                let (seal, name) = (self.changes.seal, &self.changes.meta.name);
                // A relation that never held a row has no blocks stored.
                let found = if self.changes.had_rows {
                    blocks::get(&self.stored.blocks, seal, key, name)?
                } else {
                    None
                };
                let terms = match found {
                    Some(f) => column::decode(f.payload(seal, name)?)?,
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

    /// The live row holding `tuple`, if the relation held it before this batch or an
    /// earlier flush of the batch added it (a flush adds each distinct tuple once).
    ///
    /// The candidates are the rows holding its first term. A few of them, in blocks already
    /// read or in one more, are checked against the other terms in their blocks (the tuples
    /// come sorted by their first column, and rows stored together share blocks); else the
    /// other terms' postings are read and intersected, fewest rows first.
    fn find_row(&mut self, tuple: &[u32]) -> Result<Option<u32>> {
        let Some(&first) = tuple.first() else {
            return Ok(None);
        };
        if !self.changes.had_rows {
            return Ok(None);
        }
        let candidates: SmallVec<[u32; BY_BLOCKS]> = {
            let rows = self.posting(0, first)?;
            if rows.is_empty() {
                return Ok(None);
            }
            if tuple.len() == 1 {
                return Ok(rows.min());
            }
            if rows.len() > BY_BLOCKS as u64 {
                SmallVec::new()
            } else {
                rows.iter().collect()
            }
        };
        if !candidates.is_empty() && self.probes.blocks_to_read(&candidates) <= 1 {
            'rows: for r in candidates {
                for (c, &t) in tuple.iter().enumerate().skip(1) {
                    if self.stored_term(c as u16, r)? != Some(t) {
                        continue 'rows;
                    }
                }
                return Ok(Some(r));
            }
            return Ok(None);
        }
        let mut lens: SmallVec<[(u64, u16); 4]> = SmallVec::new();
        for (c, &t) in tuple.iter().enumerate() {
            if !self.changes.meta.indexed(c) {
                continue;
            }
            let n = self.posting(c as u16, t)?.len();
            if n == 0 {
                return Ok(None);
            }
            lens.push((n, c as u16));
        }
        lens.sort_unstable();
        let mut rows: Vec<u32> = self
            .posting(lens[0].1, tuple[lens[0].1 as usize])?
            .iter()
            .collect();
        for &(_, c) in &lens[1..] {
            let other = self.posting(c, tuple[c as usize])?;
            rows.retain(|r| other.contains(*r));
            if rows.is_empty() {
                return Ok(None);
            }
        }
        // Columns without postings are checked in the candidates' blocks.
        'rows: for r in rows {
            for (c, &t) in tuple.iter().enumerate() {
                if !self.changes.meta.indexed(c) && self.stored_term(c as u16, r)? != Some(t) {
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
                        if self.changes.meta.indexed(c) {
                            self.posting_mut(c as u16, t)?.remove(r);
                        }
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

    /// Makes room for `n` more appended rows (at most), so that their lists grow once.
    pub(crate) fn reserve(&mut self, n: usize) {
        for terms in &mut self.changes.appended {
            terms.reserve(n);
        }
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
                // A row appended alone: the first column's postings are encoded from its
                // terms after all.
                self.changes.streamed = None;
                let r = self.next_rows(1)?;
                for (c, &t) in tuple.iter().enumerate() {
                    self.changes.appended[c].push(t);
                    self.put_terms(c, r, &[t])?;
                }
                for &u in units {
                    if self.changes.had_rows || self.changes.owner_cache.contains_key(&u) {
                        let o = self.owner(u)?;
                        o.bitmap.insert(r);
                        o.dirty = true;
                    } else {
                        self.changes.new_owners.push(u, r);
                    }
                }
                if units.len() > 1 {
                    self.shared.insert((self.rel(), r), units.len() as u32)?;
                }
                Ok(true)
            }
        }
    }

    /// The term of row `row` in column `col` as the batch's transaction holds it (the rows
    /// of its earlier flushes, not this flush's changes), read through `last`, the column's
    /// block last read; `None` when no such row is stored.
    pub(crate) fn earlier_term(
        &self,
        last: &mut LastBlock,
        col: u16,
        row: u32,
    ) -> Result<Option<u32>> {
        last.term(&self.stored, col, row)
    }

    /// Whether the rows this flush appended ascend, tuple by tuple, as a flush appends
    /// the new ones of its sorted tuples (see `ingest::earlier`).
    pub(crate) fn appended_ascend(&self) -> bool {
        let columns = &self.changes.appended;
        let n = columns.first().map_or(0, Vec::len);
        (1..n).all(|i| {
            for terms in columns {
                match terms[i - 1].cmp(&terms[i]) {
                    std::cmp::Ordering::Less => return true,
                    std::cmp::Ordering::Greater => return false,
                    std::cmp::Ordering::Equal => {}
                }
            }
            false
        })
    }

    /// Whether the relation held no row when the flush began: then every distinct tuple it
    /// is given is new, and [`RelWriter::append_new`] may add them.
    pub(crate) fn was_empty(&self) -> bool {
        !self.changes.had_rows
    }

    /// Appends distinct tuples none of which is stored, in rows one after another, stated by
    /// `unit` (0 = no unit): `columns[c]` holds column `c`'s terms, a tuple a place. What
    /// [`RelWriter::add`] does for each, a block at a time rather than a row: for a relation
    /// that held no row before the flush ([`RelWriter::was_empty`]), whose tuples need no
    /// lookup.
    pub(crate) fn append_new(&mut self, columns: &[&[u32]], unit: u32) -> Result<()> {
        let n = columns.first().map_or(0, |c| c.len());
        if columns.len() != self.changes.arity || columns.iter().any(|c| c.len() != n) {
            return Err(damaged("tuples to append of unequal columns"));
        }
        if n == 0 {
            return Ok(());
        }
        let first = self.next_rows(n)?;
        if let Some(s) = self.changes.streamed.as_mut()
            && !s.send(columns[0])
        {
            self.changes.streamed = None;
        }
        for (c, terms) in columns.iter().enumerate() {
            self.changes.appended[c].extend_from_slice(terms);
            let mut at = 0;
            while at < n {
                let r = first + at as u32;
                let room = (BLOCK_ROWS - r % BLOCK_ROWS) as usize;
                let take = room.min(n - at);
                self.put_terms(c, r, &terms[at..at + take])?;
                at += take;
            }
        }
        if self.changes.had_rows || self.changes.owner_cache.contains_key(&unit) {
            let o = self.owner(unit)?;
            o.bitmap.insert_range(first..first + n as u32);
            o.dirty = true;
        } else {
            self.changes.new_owners.push_run(unit, first, n as u32);
        }
        Ok(())
    }

    /// Has the first column's postings encoded on a thread of its own as rows are appended
    /// ([`Streamed`]), for a flush about to append `rows` new rows (at least
    /// [`STREAMED_ROWS`]) through [`RelWriter::append_new`] to a relation that held none,
    /// with more than one core to do it on.
    pub(crate) fn stream_postings(&mut self, rows: usize) {
        let c = &self.changes;
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        if rows < STREAMED_ROWS
            || cores < 2
            || c.had_rows
            || c.streamed.is_some()
            || !c.meta.indexed(0)
            || c.appended.first().is_none_or(|a| !a.is_empty())
        {
            return;
        }
        self.changes.streamed = Streamed::start(c.seal, c.meta.id, c.meta.next_row);
    }

    /// Takes the next `n` row ids for new rows; answers the first.
    fn next_rows(&mut self, n: usize) -> Result<u32> {
        let meta = &mut self.changes.meta;
        let first = meta.next_row;
        meta.next_row = u32::try_from(n)
            .ok()
            .and_then(|n| first.checked_add(n))
            .ok_or_else(|| Fault::Full(format!("relation \"{}\"", meta.name)))?;
        meta.rows += n as u64;
        Ok(first)
    }

    /// Puts `terms` into column `c` at rows `first ..`, all in one block; a block they fill
    /// is final for this batch: it is encoded, to be written with the rest, and freed.
    fn put_terms(&mut self, c: usize, first: u32, terms: &[u32]) -> Result<()> {
        let (rel, seal) = (self.changes.meta.id, self.changes.seal);
        let from_appended = first / BLOCK_ROWS * BLOCK_ROWS >= self.changes.first_appended;
        let block = first / BLOCK_ROWS;
        let entry = self.tail(c, block)?;
        entry.0.extend_from_slice(terms);
        entry.1 = true;
        if entry.0.len() >= BLOCK_ROWS as usize {
            let key = (rel, c as u16, block);
            // A later column's block of appended rows is encoded from them when written.
            let sealed = if c == 0 || !from_appended {
                Some(Sealed::new(
                    seal,
                    key,
                    column::encode(seal.codec, &entry.0)?,
                ))
            } else {
                None
            };
            self.changes.tails[c] = None;
            match sealed {
                // The first column's blocks go in at once, after the relation's others.
                Some(sealed) if c == 0 => sealed.write(seal, &mut self.stored.blocks)?,
                sealed => self.changes.filled.push((key, sealed)),
            }
        }
        Ok(())
    }

    /// Ends the relation's writing in the transaction and hands its changes to `encoder`
    /// ([`Encode::run`], which needs no transaction, so it can run on another thread);
    /// [`Encoded::write`] then writes the result, merging the new postings with the stored
    /// chunks and the batch's runs.
    ///
    /// The later columns' blocks that appended rows filled are encoded and written here, in
    /// key order, after the changes are handed over: the encoding thread works on the
    /// postings meanwhile (10M integer pairs: the first column's postings, 0.1 s on two
    /// threads, beside these blocks' 0.15 s). A column's appended terms, which both need,
    /// go to the encoder once its blocks are written.
    pub(crate) fn hand_over(mut self, encoder: &mut Encoder) -> Result<()> {
        self.park_tails();
        // The later columns' filled blocks, after the first's.
        let mut filled = std::mem::take(&mut self.changes.filled);
        filled.sort_unstable_by_key(|(key, _)| *key);
        // The columns whose blocks are encoded from their appended terms: those terms stay
        // here until the blocks are written.
        let mut held: Vec<(u16, Vec<u32>, std::sync::mpsc::Sender<Vec<u32>>)> = Vec::new();
        for (key, sealed) in &filled {
            if sealed.is_none() && held.last().is_none_or(|(c, _, _)| *c != key.1) {
                let terms = std::mem::take(&mut self.changes.appended[key.1 as usize]);
                let (tx, rx) = std::sync::mpsc::channel();
                self.changes.coming.push((key.1, rx));
                held.push((key.1, terms, tx));
            }
        }
        let first_appended = self.changes.first_appended;
        let left = encoder.send(self.changes);
        let seal = self.stored.seal;
        let mut held = held.into_iter().peekable();
        let mut filled = filled.into_iter().peekable();
        while let Some((key, sealed)) = filled.next() {
            let sealed = match sealed {
                Some(s) => s,
                None => {
                    let terms = match held.peek() {
                        Some((c, terms, _)) if *c == key.1 => terms,
                        _ => return Err(damaged("a filled block's column was not held")),
                    };
                    let from = (key.2 * BLOCK_ROWS - first_appended) as usize;
                    let terms = terms
                        .get(from..from + BLOCK_ROWS as usize)
                        .ok_or_else(|| damaged("a filled block's rows were not appended"))?;
                    Sealed::new(seal, key, column::encode(seal.codec, terms)?)
                }
            };
            sealed.write(seal, &mut self.stored.blocks)?;
            let column_done = filled.peek().is_none_or(|(next, _)| next.1 != key.1);
            if column_done
                && held.peek().is_some_and(|(c, _, _)| *c == key.1)
                && let Some((_, terms, tx)) = held.next()
            {
                // The encoder may have stopped; its error is the one answered.
                let _ = tx.send(terms);
            }
        }
        if let Some(job) = left {
            // No thread took the changes: they are encoded here, now that their terms are
            // handed over.
            encoder.run_here(job);
        }
        Ok(())
    }

    /// The block of column `col` rows are appended to, `block`: kept out of the block cache
    /// (the block before goes back into it), so that appending a row finds it without a
    /// lookup.
    fn tail(&mut self, col: usize, block: u32) -> Result<&mut Block> {
        if !matches!(&self.changes.tails[col], Some((b, _)) if *b == block) {
            if let Some((b, before)) = self.changes.tails[col].take() {
                self.changes.block_cache.insert((col as u16, b), before);
            }
            self.block(col as u16, block)?;
            let opened = self
                .changes
                .block_cache
                .remove(&(col as u16, block))
                .ok_or_else(|| damaged("a column block vanished from the cache"))?;
            self.changes.tails[col] = Some((block, opened));
        }
        match self.changes.tails[col].as_mut() {
            Some((_, tail)) => Ok(tail),
            None => Err(damaged("a column's last block vanished")),
        }
    }

    /// Puts the blocks rows were appended to back into the block cache.
    fn park_tails(&mut self) {
        for (col, tail) in self.changes.tails.iter_mut().enumerate() {
            if let Some((b, t)) = tail.take() {
                self.changes.block_cache.insert((col as u16, b), t);
            }
        }
    }
}

/// Adds the postings of a chunk's stored part (its verified payload) to `c`.
fn merge_part((codec, bytes): &Part, c: &mut ChunkCache) -> Result<()> {
    let view = index::ChunkView::parse(Payload::new(*codec, bytes))?;
    for (low, p) in view.iter() {
        *c.postings.entry(low).or_default() |= index::decode_posting(p)?;
    }
    Ok(())
}

/// Runs each of `jobs` on a thread of its own, answering their results in order (a panic in
/// one is resumed here).
fn on_threads<J: Send, R: Send>(jobs: Vec<J>, run: impl Fn(J) -> R + Sync) -> Vec<R> {
    let run = &run;
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|job| s.spawn(move || run(job)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}
