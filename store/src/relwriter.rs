//! Writing one relation's data within a write transaction: appending rows, removing a unit's
//! rows, and keeping postings, owners and counts in step.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use redb::{ReadableTable, Table, WriteTransaction};
use roaring::RoaringBitmap;

use crate::catalog::RelationMeta;
use crate::error::{Result, StoreError};
use crate::layout::{self, BLOCK_ROWS};
use crate::{column, index};

type Key3 = (u32, u16, u32);

/// A cached bitmap: its value, whether it was stored before, whether it changed.
struct Cached {
    bitmap: RoaringBitmap,
    stored: bool,
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
    block_cache: HashMap<(u16, u32), (Vec<u32>, bool)>,
    posting_cache: HashMap<(u16, u32), Cached>,
    owner_cache: HashMap<u32, Cached>,
    dead: Option<Cached>,
    /// Rows appended this batch, per column, as `term << 32 | row`.
    appended: Vec<Vec<u64>>,
    /// Whether the relation had any row (live or dead) before this batch.
    had_rows: bool,
}

impl<'t> RelWriter<'t> {
    pub(crate) fn new(txn: &'t WriteTransaction, meta: RelationMeta) -> Result<RelWriter<'t>> {
        let arity = meta.columns.len();
        Ok(RelWriter {
            had_rows: meta.next_row > 0,
            arity,
            blocks: txn.open_table(layout::BLOCKS)?,
            postings: txn.open_table(layout::POSTINGS)?,
            owners: txn.open_table(layout::OWNERS)?,
            shared: txn.open_table(layout::SHARED)?,
            dead_table: txn.open_table(layout::DEAD)?,
            block_cache: HashMap::new(),
            posting_cache: HashMap::new(),
            owner_cache: HashMap::new(),
            dead: None,
            appended: vec![Vec::new(); arity],
            meta,
        })
    }

    fn rel(&self) -> u32 {
        self.meta.id
    }

    fn posting(&mut self, col: u16, term: u32) -> Result<&mut Cached> {
        match self.posting_cache.entry((col, term)) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let stored = if self.had_rows {
                    self.postings
                        .get((self.meta.id, col, term))?
                        .map(|v| v.value().to_vec())
                } else {
                    None
                };
                let c = match stored {
                    Some(bytes) => Cached {
                        bitmap: index::decode(&bytes)?,
                        stored: true,
                        dirty: false,
                    },
                    None => Cached {
                        bitmap: RoaringBitmap::new(),
                        stored: false,
                        dirty: false,
                    },
                };
                Ok(e.insert(c))
            }
        }
    }

    fn owner(&mut self, unit: u32) -> Result<&mut Cached> {
        match self.owner_cache.entry(unit) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let stored = self
                    .owners
                    .get((self.meta.id, unit))?
                    .map(|v| v.value().to_vec());
                let c = match stored {
                    Some(bytes) => Cached {
                        bitmap: index::decode(&bytes)?,
                        stored: true,
                        dirty: false,
                    },
                    None => Cached {
                        bitmap: RoaringBitmap::new(),
                        stored: false,
                        dirty: false,
                    },
                };
                Ok(e.insert(c))
            }
        }
    }

    fn dead(&mut self) -> Result<&mut Cached> {
        if self.dead.is_none() {
            let stored = self
                .dead_table
                .get(self.meta.id)?
                .map(|v| v.value().to_vec());
            self.dead = Some(match stored {
                Some(bytes) => Cached {
                    bitmap: index::decode(&bytes)?,
                    stored: true,
                    dirty: false,
                },
                None => Cached {
                    bitmap: RoaringBitmap::new(),
                    stored: false,
                    dirty: false,
                },
            });
        }
        // Set just above.
        self.dead
            .as_mut()
            .ok_or_else(|| StoreError::Corrupt("dead-row bitmap vanished".to_owned()))
    }

    fn block(&mut self, col: u16, block: u32) -> Result<&mut (Vec<u32>, bool)> {
        match self.block_cache.entry((col, block)) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let terms = match self.blocks.get((self.meta.id, col, block))? {
                    Some(v) => column::decode(v.value())?,
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
                    StoreError::Corrupt(format!(
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
            let len = self.posting(c as u16, t)?.bitmap.len();
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
        let candidates: Vec<u32> = self.posting_cache[&(bc, tuple[bc as usize])]
            .bitmap
            .iter()
            .collect();
        'rows: for r in candidates {
            for (c, &t) in tuple.iter().enumerate() {
                if c as u16 != bc && !self.posting_cache[&(c as u16, t)].bitmap.contains(r) {
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
                        let p = self.posting(c as u16, t)?;
                        p.bitmap.remove(r);
                        p.dirty = true;
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
    /// Returns whether the tuple is a new fact, and how many of its statements were already
    /// stored.
    pub(crate) fn add(&mut self, tuple: &[u32], units: &[u32]) -> Result<(bool, u64)> {
        match self.find_row(tuple)? {
            Some(r) => {
                let mut added = 0u32;
                let mut dups = 0;
                for &u in units {
                    let o = self.owner(u)?;
                    if o.bitmap.insert(r) {
                        o.dirty = true;
                        added += 1;
                    } else {
                        dups += 1;
                    }
                }
                if added > 0 {
                    let key = (self.rel(), r);
                    let before = self.shared.get(key)?.map_or(1, |v| v.value());
                    self.shared.insert(key, before + added)?;
                }
                Ok((false, dups))
            }
            None => {
                let r = self.meta.next_row;
                self.meta.next_row = r
                    .checked_add(1)
                    .ok_or_else(|| StoreError::Full(format!("relation \"{}\"", self.meta.name)))?;
                self.meta.rows += 1;
                for (c, &t) in tuple.iter().enumerate() {
                    self.appended[c].push(u64::from(t) << 32 | u64::from(r));
                    let block = r / BLOCK_ROWS;
                    let entry = self.block(c as u16, block)?;
                    entry.0.push(t);
                    entry.1 = true;
                    if entry.0.len() == BLOCK_ROWS as usize {
                        // A full block is final for this batch: write it and free it.
                        let bytes = column::encode(&entry.0)?;
                        self.block_cache.remove(&(c as u16, block));
                        self.blocks
                            .insert((self.meta.id, c as u16, block), bytes.as_slice())?;
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
                Ok((true, 0))
            }
        }
    }

    /// Writes everything this batch changed and returns the updated catalog entry, with each
    /// unit whose rows changed and whether it still owns any row of the relation.
    pub(crate) fn finish(mut self) -> Result<(RelationMeta, Vec<(u32, bool)>)> {
        let rel = self.meta.id;
        for ((col, block), (terms, dirty)) in std::mem::take(&mut self.block_cache) {
            if dirty {
                self.blocks
                    .insert((rel, col, block), column::encode(&terms)?.as_slice())?;
            }
        }
        // Appended rows: merge each term's new rows into its posting.
        for col in 0..self.arity {
            let mut pairs = std::mem::take(&mut self.appended[col]);
            pairs.sort_unstable();
            let mut i = 0;
            while i < pairs.len() {
                let term = (pairs[i] >> 32) as u32;
                let mut j = i;
                while j < pairs.len() && (pairs[j] >> 32) as u32 == term {
                    j += 1;
                }
                let rows = pairs[i..j].iter().map(|p| *p as u32);
                let key = (col as u16, term);
                if self.had_rows || self.posting_cache.contains_key(&key) {
                    let p = self.posting(col as u16, term)?;
                    p.bitmap.extend(rows);
                    p.dirty = true;
                } else {
                    let mut b = RoaringBitmap::from_sorted_iter(rows).map_err(|e| {
                        StoreError::Corrupt(format!("appended rows out of order: {e}"))
                    })?;
                    self.postings
                        .insert((rel, col as u16, term), index::encode(&mut b).as_slice())?;
                    self.meta.distinct[col] += 1;
                }
                i = j;
            }
        }
        for ((col, term), mut c) in std::mem::take(&mut self.posting_cache) {
            if !c.dirty {
                continue;
            }
            if c.bitmap.is_empty() {
                if c.stored {
                    self.postings.remove((rel, col, term))?;
                    self.meta.distinct[col as usize] -= 1;
                }
            } else {
                self.postings
                    .insert((rel, col, term), index::encode(&mut c.bitmap).as_slice())?;
                if !c.stored {
                    self.meta.distinct[col as usize] += 1;
                }
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
                self.owners
                    .insert((rel, unit), index::encode(&mut c.bitmap).as_slice())?;
            }
        }
        if let Some(mut d) = self.dead.take()
            && d.dirty
        {
            self.dead_table
                .insert(rel, index::encode(&mut d.bitmap).as_slice())?;
        }
        units.sort_unstable();
        Ok((self.meta, units))
    }
}
