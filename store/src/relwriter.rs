//! Writing one relation's data within a write transaction: appending rows, removing a unit's
//! rows, and keeping postings, owners and counts in step.

use std::collections::hash_map::Entry;

use redb::{ReadableTable, Table, WriteTransaction};
use roaring::RoaringBitmap;
use rustc_hash::FxHashMap;

use crate::catalog::RelationMeta;
use crate::error::{Fault, Result, damaged};
use crate::layout::{self, BLOCK_ROWS};
use crate::seal::Seal;
use crate::{column, index};

type Key3 = (u32, u16, u32);

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

/// A postings chunk being changed: each term's rows by low byte, how many terms it held
/// when read, whether it changed.
#[derive(Default)]
struct ChunkCache {
    postings: std::collections::BTreeMap<u8, RoaringBitmap>,
    before: usize,
    dirty: bool,
}

/// One relation's writer within one tier's write transaction.
pub(crate) struct RelWriter<'t> {
    pub(crate) meta: RelationMeta,
    arity: usize,
    blocks: Table<'t, Key3, &'static [u8]>,
    postings: Table<'t, Key3, &'static [u8]>,
    owners: Table<'t, (u32, u32), &'static [u8]>,
    shared: Table<'t, (u32, u32), u32>,
    dead_table: Table<'t, u32, &'static [u8]>,
    /// Blocks read or written this batch, by (column, block), with a dirty flag.
    block_cache: FxHashMap<(u16, u32), (Vec<u32>, bool)>,
    /// Postings chunks read or changed this batch, by (column, chunk).
    chunks: FxHashMap<(u16, u32), ChunkCache>,
    owner_cache: FxHashMap<u32, Cached>,
    dead: Option<Cached>,
    /// Rows appended this batch, per column, as `term << 32 | row`.
    appended: Vec<Vec<u64>>,
    /// Whether the relation had any row (live or dead) before this batch.
    had_rows: bool,
    /// Whether the file's values carry checksums.
    seal: Seal,
}

impl<'t> RelWriter<'t> {
    pub(crate) fn new(
        txn: &'t WriteTransaction,
        seal: Seal,
        meta: RelationMeta,
    ) -> Result<RelWriter<'t>> {
        let arity = meta.columns.len();
        Ok(RelWriter {
            seal,
            had_rows: meta.next_row > 0,
            arity,
            blocks: txn.open_table(layout::BLOCKS)?,
            postings: txn.open_table(layout::POSTINGS)?,
            owners: txn.open_table(layout::OWNERS)?,
            shared: txn.open_table(layout::SHARED)?,
            dead_table: txn.open_table(layout::DEAD)?,
            block_cache: FxHashMap::default(),
            chunks: FxHashMap::default(),
            owner_cache: FxHashMap::default(),
            dead: None,
            appended: vec![Vec::new(); arity],
            meta,
        })
    }

    fn rel(&self) -> u32 {
        self.meta.id
    }

    fn chunk(&mut self, col: u16, chunk: u32) -> Result<&mut ChunkCache> {
        match self.chunks.entry((col, chunk)) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let mut c = ChunkCache::default();
                let key = (self.meta.id, col, chunk);
                if self.had_rows
                    && let Some(v) = self.postings.get(key)?
                {
                    let bytes = index::open_chunk(self.seal, key, v.value(), &self.meta.name)?;
                    let view = index::ChunkView::parse(bytes)?;
                    for (low, p) in view.iter() {
                        c.postings.insert(low, index::decode_posting(p)?);
                    }
                    c.before = c.postings.len();
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
        self.chunks
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
        match self.owner_cache.entry(unit) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let key = (self.meta.id, unit);
                let stored = match self.owners.get(key)? {
                    Some(v) => Some(index::decode(index::open_owners(
                        self.seal,
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
        if self.dead.is_none() {
            let rel = self.meta.id;
            let stored = match self.dead_table.get(rel)? {
                Some(v) => Some(index::decode(index::open_dead(self.seal, rel, v.value())?)?),
                None => None,
            };
            self.dead = Some(Cached::load(stored));
        }
        // Set just above.
        self.dead
            .as_mut()
            .ok_or_else(|| damaged("dead-row bitmap vanished"))
    }

    fn block(&mut self, col: u16, block: u32) -> Result<&mut (Vec<u32>, bool)> {
        match self.block_cache.entry((col, block)) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let key = (self.meta.id, col, block);
                let terms = match self.blocks.get(key)? {
                    Some(v) => {
                        column::decode(column::open(self.seal, key, v.value(), &self.meta.name)?)?
                    }
                    None => Vec::with_capacity(BLOCK_ROWS as usize),
                };
                Ok(e.insert((terms, false)))
            }
        }
    }

    /// The terms of a stored row.
    fn read_row(&mut self, row: u32) -> Result<Vec<u32>> {
        let mut out = Vec::with_capacity(self.arity);
        for col in 0..self.arity as u16 {
            let (terms, _) = self.block(col, row / BLOCK_ROWS)?;
            let t = terms
                .get((row % BLOCK_ROWS) as usize)
                .copied()
                .ok_or_else(|| {
                    damaged(format!(
                        "relation {}: row {row} is past the end of its block",
                        self.meta.name
                    ))
                })?;
            out.push(t);
        }
        Ok(out)
    }

    /// The live row holding `tuple`, if the relation held it before this batch (or this batch
    /// re-added it... it never does: batches add each distinct tuple once).
    fn find_row(&mut self, tuple: &[u32]) -> Result<Option<u32>> {
        if !self.had_rows {
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
        let candidates: Vec<u32> = self.chunks[&(bc, chunk)].postings[&low].iter().collect();
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
        self.meta.rows -= removed;
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
                let r = self.meta.next_row;
                self.meta.next_row = r
                    .checked_add(1)
                    .ok_or_else(|| Fault::Full(format!("relation \"{}\"", self.meta.name)))?;
                self.meta.rows += 1;
                let (rel, seal) = (self.meta.id, self.seal);
                for (c, &t) in tuple.iter().enumerate() {
                    self.appended[c].push(u64::from(t) << 32 | u64::from(r));
                    let block = r / BLOCK_ROWS;
                    let entry = self.block(c as u16, block)?;
                    entry.0.push(t);
                    entry.1 = true;
                    if entry.0.len() == BLOCK_ROWS as usize {
                        // A full block is final for this batch: write it and free it.
                        let key = (rel, c as u16, block);
                        let bytes = column::seal(seal, key, column::encode(seal.codec, &entry.0)?);
                        self.block_cache.remove(&(c as u16, block));
                        self.blocks.insert(key, bytes.as_slice())?;
                    }
                }
                for &u in units {
                    let o = self.owner(u)?;
                    o.bitmap.insert(r);
                    o.dirty = true;
                }
                if units.len() > 1 {
                    self.shared.insert((self.rel(), r), units.len() as u32)?;
                }
                Ok(true)
            }
        }
    }

    /// Writes a changed postings chunk (or removes it when empty), keeping `distinct` true.
    fn write_chunk(&mut self, col: u16, chunk: u32, mut c: ChunkCache) -> Result<()> {
        let rel = self.meta.id;
        c.postings.retain(|_, b| !b.is_empty());
        let d = &mut self.meta.distinct[col as usize];
        *d = (*d + c.postings.len() as u64)
            .checked_sub(c.before as u64)
            .ok_or_else(|| {
                damaged(format!(
                    "relation {}: distinct count underflow",
                    self.meta.name
                ))
            })?;
        if c.postings.is_empty() {
            if c.before > 0 {
                self.postings.remove((rel, col, chunk))?;
            }
        } else {
            let bytes =
                index::encode_chunk(self.seal.codec, c.postings.iter_mut().map(|(l, b)| (*l, b)));
            let bytes = index::seal_chunk(self.seal, (rel, col, chunk), bytes);
            self.postings.insert((rel, col, chunk), bytes.as_slice())?;
        }
        Ok(())
    }

    /// Writes everything this batch changed and returns the updated catalog entry, with each
    /// unit whose rows changed and whether it still owns any row of the relation.
    pub(crate) fn finish(mut self) -> Result<(RelationMeta, Vec<(u32, bool)>)> {
        let rel = self.meta.id;
        for ((col, block), (terms, dirty)) in std::mem::take(&mut self.block_cache) {
            if dirty {
                let key = (rel, col, block);
                let bytes = column::seal(self.seal, key, column::encode(self.seal.codec, &terms)?);
                self.blocks.insert(key, bytes.as_slice())?;
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
                let fresh = !self.had_rows && !self.chunks.contains_key(&(c16, chunk));
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
                    self.meta.distinct[col] += postings.len() as u64;
                    let bytes = index::encode_chunk(
                        self.seal.codec,
                        postings.iter_mut().map(|(l, b)| (*l, b)),
                    );
                    let bytes = index::seal_chunk(self.seal, (rel, c16, chunk), bytes);
                    self.postings.insert((rel, c16, chunk), bytes.as_slice())?;
                } else {
                    self.chunk(c16, chunk)?;
                    // Merge, write and let go of the chunk at once: holding every decoded
                    // chunk of a large relation until the end would cost more memory than
                    // the facts themselves.
                    if let Some(mut c) = self.chunks.remove(&(c16, chunk)) {
                        c.dirty = true;
                        for (low, rows) in postings {
                            *c.postings.entry(low).or_default() |= rows;
                        }
                        self.write_chunk(c16, chunk, c)?;
                    }
                }
                i = j;
            }
        }
        for ((col, chunk), c) in std::mem::take(&mut self.chunks) {
            if c.dirty {
                self.write_chunk(col, chunk, c)?;
            }
        }
        let mut units = Vec::new();
        for (unit, mut c) in std::mem::take(&mut self.owner_cache) {
            if !c.dirty {
                continue;
            }
            units.push((unit, !c.bitmap.is_empty()));
            if c.bitmap.is_empty() {
                if c.stored {
                    self.owners.remove((rel, unit))?;
                }
            } else {
                let bytes = index::seal_owners(
                    self.seal,
                    (rel, unit),
                    index::encode(self.seal.codec, &mut c.bitmap),
                );
                self.owners.insert((rel, unit), bytes.as_slice())?;
            }
        }
        if let Some(mut d) = self.dead.take()
            && d.dirty
        {
            let bytes = index::seal_dead(
                self.seal,
                rel,
                index::encode(self.seal.codec, &mut d.bitmap),
            );
            self.dead_table.insert(rel, bytes.as_slice())?;
        }
        units.sort_unstable();
        Ok((self.meta, units))
    }
}
