//! Read snapshots: one consistent view of the database, implementing the engine's
//! [`FactSource`].

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use redb::{ReadOnlyTable, ReadTransaction, ReadableDatabase};
use roaring::RoaringBitmap;
use strata_eval::{FactSource, RelationInfo, SourceError, Term, TermKind, Value, Visit};

use crate::catalog::{BatchRecord, Catalog, RelationMeta, meta_u64};
use crate::db::Store;
use crate::error::{Fault, ReadError, Result, damaged};
use crate::guard::faults;
use crate::intern::TEXT_CHUNK_BITS;
use crate::layout::{self, BLOCK_ROWS, DEFAULT_TIER};
use crate::seal::Seal;
use crate::{blocks, column, index, intern};

mod parts;

type Key3 = (u32, u16, u32);

/// Rows of one block from which a read unpacks the block whole rather than row by row
/// (and reads all its parts, where fewer rows read only the parts holding them).
const WHOLE_BLOCK_ROWS: usize = 64;

/// The data tables of one tier, as of the snapshot.
struct TierRead {
    blocks: ReadOnlyTable<Key3, &'static [u8]>,
    postings: ReadOnlyTable<Key3, &'static [u8]>,
    dead: ReadOnlyTable<u32, &'static [u8]>,
    /// Whether the file's values carry checksums.
    seal: Seal,
    /// The tier's file, for messages.
    path: PathBuf,
    /// The store, which a failed storage call marks for reopening.
    store: Store,
}

impl TierRead {
    fn new(
        store: &Store,
        txn: &ReadTransaction,
        seal: Seal,
        path: PathBuf,
    ) -> Result<TierRead, ReadError> {
        let open = || -> Result<_> {
            Ok((
                txn.open_table(layout::BLOCKS)?,
                txn.open_table(layout::POSTINGS)?,
                txn.open_table(layout::DEAD)?,
            ))
        };
        let (blocks, postings, dead) = faults(open).map_err(|f| store.read_fault_at(f, &path))?;
        Ok(TierRead {
            blocks,
            postings,
            dead,
            seal,
            path,
            store: store.clone(),
        })
    }

    /// A failure reading this tier, as a read error naming its file.
    fn err(&self, e: impl Into<Fault>) -> ReadError {
        self.store.read_fault_at(e.into(), &self.path)
    }
}

/// A consistent read view of the database: the facts of the batches committed before it
/// began, and nothing of any batch after. Ingest never waits for it.
pub struct Snapshot {
    store: Store,
    catalog: Arc<Catalog>,
    text_by_id: ReadOnlyTable<u32, &'static [u8]>,
    id_by_text: ReadOnlyTable<u64, u32>,
    text_collisions: ReadOnlyTable<&'static str, u32>,
    number_by_id: ReadOnlyTable<u32, u64>,
    id_by_number: ReadOnlyTable<u64, u32>,
    tiers: Mutex<HashMap<String, Arc<TierRead>>>,
}

impl Store {
    /// A snapshot that opens tier files only when a read needs them.
    pub fn snapshot(&self) -> Result<Snapshot, ReadError> {
        self.snapshot_with_tiers(&[])
    }

    /// A snapshot that opens the given tiers' files at once (what a query that reads them
    /// wants: they are then read at exactly the snapshot's batch).
    pub fn snapshot_with_tiers(&self, tiers: &[&str]) -> Result<Snapshot, ReadError> {
        self.heal_for_read();
        // Opening a tier may recover it, which writes: do it before taking the lock.
        let dbs = tiers
            .iter()
            .filter(|t| **t != DEFAULT_TIER)
            .map(|t| Ok(((*t).to_owned(), self.tier_db(t, false)?)))
            .collect::<Result<Vec<_>, crate::error::OpenError>>()
            .map_err(ReadError::Tier)?;
        let _guard = self
            .inner
            .commit_lock
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let base_path = self.base_path();
        let (base, catalog) = faults(|| {
            let base = self.inner.base()?.begin_read()?;
            let catalog = self.cached_catalog(&base)?;
            Ok((base, catalog))
        })
        .map_err(|f| self.read_fault_at(f, &base_path))?;
        let mut map = HashMap::new();
        map.insert(
            DEFAULT_TIER.to_owned(),
            Arc::new(TierRead::new(
                self,
                &base,
                self.inner.base_seal,
                base_path.clone(),
            )?),
        );
        for (name, db) in dbs {
            let path = self.tier_path(&name);
            let txn = faults(|| Ok(db.begin_read()?)).map_err(|f| self.read_fault_at(f, &path))?;
            map.insert(name, Arc::new(TierRead::new(self, &txn, db.seal, path)?));
        }
        let tables = || -> Result<_> {
            Ok((
                base.open_table(layout::TEXT_BY_ID)?,
                base.open_table(layout::ID_BY_TEXT)?,
                base.open_table(layout::TEXT_COLLISIONS)?,
                base.open_table(layout::NUMBER_BY_ID)?,
                base.open_table(layout::ID_BY_NUMBER)?,
            ))
        };
        let (text_by_id, id_by_text, text_collisions, number_by_id, id_by_number) =
            faults(tables).map_err(|f| self.read_fault_at(f, &base_path))?;
        Ok(Snapshot {
            store: self.clone(),
            text_by_id,
            id_by_text,
            text_collisions,
            number_by_id,
            id_by_number,
            catalog,
            tiers: Mutex::new(map),
        })
    }
}

impl Store {
    /// The catalog as of `txn`, decoded once per committed batch and shared after that.
    fn cached_catalog(&self, txn: &ReadTransaction) -> Result<Arc<Catalog>> {
        let seq = meta_u64(&txn.open_table(layout::META)?, "seq")?;
        let mut cache = self
            .inner
            .catalog_cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = cache.as_ref()
            && c.seq == seq
        {
            return Ok(c.clone());
        }
        let c = Arc::new(Catalog::read(txn)?);
        *cache = Some(c.clone());
        Ok(c)
    }
}

impl Snapshot {
    /// The sequence number of the last batch this snapshot sees (0: none).
    pub fn seq(&self) -> u64 {
        self.catalog.seq
    }

    /// The record of the last batch this snapshot sees, with its labels.
    pub fn last_batch(&self) -> Option<&BatchRecord> {
        self.catalog.last_batch.as_ref()
    }

    /// The catalog as of this snapshot.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// One relation's catalog entry.
    pub fn meta(&self, relation: &str) -> Result<&RelationMeta, ReadError> {
        self.catalog
            .relations
            .get(relation)
            .ok_or_else(|| ReadError::UnknownRelation(relation.to_owned()))
    }

    fn tier(&self, tier: &str) -> Result<Arc<TierRead>, ReadError> {
        let mut map = self
            .tiers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(t) = map.get(tier) {
            return Ok(t.clone());
        }
        let db = self.store.tier_db(tier, false).map_err(ReadError::Tier)?;
        let path = self.store.tier_path(tier);
        let begin = || -> Result<_> {
            let txn = db.begin_read()?;
            let applied = meta_u64(&txn.open_table(layout::TIER_META)?, "applied_seq")?;
            Ok((txn, applied))
        };
        let (txn, applied) = faults(begin).map_err(|f| self.store.read_fault_at(f, &path))?;
        if applied != self.catalog.tier_seq.get(tier).copied().unwrap_or(0) {
            return Err(ReadError::SnapshotMoved(tier.to_owned()));
        }
        let t = Arc::new(TierRead::new(&self.store, &txn, db.seal, path)?);
        map.insert(tier.to_owned(), t.clone());
        Ok(t)
    }

    fn dead(&self, tier: &TierRead, rel: u32) -> Result<RoaringBitmap, ReadError> {
        faults(|| match tier.dead.get(rel)? {
            Some(v) => Ok(index::decode(index::open_dead(tier.seal, rel, v.value())?)?),
            None => Ok(RoaringBitmap::new()),
        })
        .map_err(|f| tier.err(f))
    }

    /// The live rows of a relation whose columns hold the bound terms: every bound column
    /// has postings (see [`Snapshot::lookup_rel`] for those without).
    fn rows_in(
        &self,
        tier: &TierRead,
        meta: &RelationMeta,
        bound: &[(usize, Term)],
    ) -> Result<RoaringBitmap, ReadError> {
        let mut maps = Vec::with_capacity(bound.len());
        for &(c, t) in bound {
            match Self::posting(tier, meta, c, t)? {
                Some(b) => maps.push(b),
                None => return Ok(RoaringBitmap::new()),
            }
        }
        maps.sort_by_key(RoaringBitmap::len);
        let mut it = maps.into_iter();
        let mut acc = it.next().unwrap_or_default();
        for m in it {
            acc &= m;
            if acc.is_empty() {
                break;
            }
        }
        Ok(acc)
    }

    /// The posting of one (column, term), if the term occurs in the column.
    fn posting(
        tier: &TierRead,
        meta: &RelationMeta,
        col: usize,
        term: Term,
    ) -> Result<Option<RoaringBitmap>, ReadError> {
        let (chunk, low) = index::chunk_of(term.0);
        let read = || -> Result<_> {
            let key = (meta.id, col as u16, chunk);
            let Some(v) = tier.postings.get(key)? else {
                return Ok(None);
            };
            let bytes = index::open_chunk(tier.seal, key, v.value(), &meta.name)?;
            Ok(index::find_posting(bytes, low)?
                .map(index::decode_posting)
                .transpose()?)
        };
        faults(read).map_err(|f| tier.err(f))
    }

    fn check_columns(meta: &RelationMeta, bound: &[(usize, Term)]) -> Result<(), SourceError> {
        for &(c, _) in bound {
            if c >= meta.columns.len() {
                return Err(SourceError::NoSuchColumn {
                    relation: meta.name.clone(),
                    arity: meta.columns.len(),
                    column: c,
                });
            }
        }
        Ok(())
    }

    /// Visits the rows `rows` (ascending) of a relation, reading only the unbound columns'
    /// blocks, and of each block only the rows asked for.
    fn visit_rows(
        &self,
        tier: &TierRead,
        meta: &RelationMeta,
        rows: impl Iterator<Item = u32>,
        bound: &[(usize, Term)],
        visit: &mut dyn FnMut(&[Term]) -> Visit,
    ) -> Result<(), ReadError> {
        let arity = meta.columns.len();
        let mut row = vec![Term::ABSENT; arity];
        let mut fixed = vec![false; arity];
        for &(c, t) in bound {
            row[c] = t;
            fixed[c] = true;
        }
        let free: Vec<usize> = (0..arity).filter(|&c| !fixed[c]).collect();
        // The rows of one block, and their values column by column.
        let mut pending: Vec<u32> = Vec::new();
        let mut in_block: Vec<u32> = Vec::new();
        let mut values: Vec<Vec<u32>> = vec![Vec::new(); arity];
        let mut rows = rows.peekable();
        while let Some(first) = rows.next() {
            let b = first / BLOCK_ROWS;
            pending.clear();
            pending.push(first);
            while let Some(&r) = rows.peek() {
                if r / BLOCK_ROWS != b {
                    break;
                }
                pending.push(r);
                rows.next();
            }
            for &c in &free {
                // The value is sliced under the guard too: a damaged page's lengths can make
                // redb's slicing panic.
                let fetched = faults(|| {
                    let key = (meta.id, c as u16, b);
                    // A few rows: only the parts holding them (see `blocks::get_rows`).
                    let f = if pending.len() < WHOLE_BLOCK_ROWS {
                        in_block.clear();
                        in_block.extend(pending.iter().map(|r| r % BLOCK_ROWS));
                        blocks::get_rows(&tier.blocks, tier.seal, key, &meta.name, &in_block)?
                    } else {
                        blocks::get(&tier.blocks, tier.seal, key, &meta.name)?
                    };
                    if let Some(blocks::Fetched::One { value, .. }) = &f {
                        std::hint::black_box(value.value());
                    }
                    Ok(f)
                })
                .map_err(|f| tier.err(f))?
                .ok_or_else(|| {
                    tier.err(damaged(format!(
                        "relation {}: block {b} of column {c} is missing",
                        meta.name
                    )))
                })?;
                let block = fetched
                    .payload(tier.seal, &meta.name)
                    .and_then(column::view)
                    .map_err(|e| tier.err(e))?;
                values[c].clear();
                // Many rows of a block: unpack it whole, once.
                let whole = if pending.len() >= WHOLE_BLOCK_ROWS {
                    Some(block.to_vec().map_err(|e| tier.err(e))?)
                } else {
                    None
                };
                for &r in &pending {
                    let i = (r % BLOCK_ROWS) as usize;
                    let t = match &whole {
                        Some(all) => all.get(i).copied(),
                        None => block.get(i),
                    };
                    let t = t.ok_or_else(|| {
                        tier.err(damaged(format!(
                            "relation {}: row {r} is past the end of its block",
                            meta.name
                        )))
                    })?;
                    values[c].push(t);
                }
            }
            for (k, _) in pending.iter().enumerate() {
                for &c in &free {
                    row[c] = Term(values[c][k]);
                }
                if visit(&row) == ControlFlow::Break(()) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    pub(crate) fn scan_rel(
        &self,
        meta: &RelationMeta,
        visit: &mut dyn FnMut(&[Term]) -> Visit,
    ) -> Result<(), ReadError> {
        let tier = self.tier(&meta.tier)?;
        let dead = self.dead(&tier, meta.id)?;
        let live = (0..meta.next_row).filter(|r| !dead.contains(*r));
        self.visit_rows(&tier, meta, live, &[], visit)
    }

    fn lookup_rel(
        &self,
        meta: &RelationMeta,
        bound: &[(usize, Term)],
        visit: &mut dyn FnMut(&[Term]) -> Visit,
    ) -> Result<(), ReadError> {
        if meta.unindexed.is_empty() {
            return self.lookup_indexed(meta, bound, visit);
        }
        // Columns without postings are matched in the rows the others give (or, when
        // only such columns are bound, in every live row).
        let (indexed, filter): (Vec<_>, Vec<_>) =
            bound.iter().partition(|&&(c, _)| meta.indexed(c));
        if !filter.is_empty() {
            let mut matching = |row: &[Term]| {
                if filter.iter().all(|&(c, t)| row[c] == t) {
                    visit(row)
                } else {
                    ControlFlow::Continue(())
                }
            };
            return self.lookup_indexed(meta, &indexed, &mut matching);
        }
        self.lookup_indexed(meta, bound, visit)
    }

    /// [`Snapshot::lookup_rel`] of columns that all have postings.
    fn lookup_indexed(
        &self,
        meta: &RelationMeta,
        bound: &[(usize, Term)],
        visit: &mut dyn FnMut(&[Term]) -> Visit,
    ) -> Result<(), ReadError> {
        if bound.is_empty() {
            return self.scan_rel(meta, visit);
        }
        let tier = self.tier(&meta.tier)?;
        let rows = self.rows_in(&tier, meta, bound)?;
        self.visit_rows(&tier, meta, rows.iter(), bound, visit)
    }
}

/// How many live rows of one relation hold a term in one column (see
/// [`Snapshot::term_uses`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TermUse {
    /// The relation's name.
    pub relation: String,
    /// The column's position, from 0.
    pub column: usize,
    /// The column's name.
    pub column_name: String,
    /// Live rows whose column holds the term.
    pub rows: u64,
}

impl Snapshot {
    /// The store this snapshot reads (a handle: cloning it shares the open files).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// How many texts the dictionary holds as of this snapshot: their ids run from 1 to
    /// this count, dense, in order of first appearance (the dictionary only grows).
    pub fn text_count(&self) -> u32 {
        self.catalog.texts
    }

    /// Visits the dictionary's texts with ids from `first` (1 at the least) up to
    /// [`Snapshot::text_count`], ascending, each with its id, reading the `text_by_id`
    /// chunks in order; `visit` breaking stops the walk. A text may no longer occur in any
    /// live row (the dictionary keeps texts whose facts were removed).
    pub fn for_each_text(
        &self,
        first: u32,
        visit: &mut dyn FnMut(u32, &str) -> ControlFlow<()>,
    ) -> Result<(), ReadError> {
        self.walk_texts(first, visit)
            .map_err(|f| self.store.read_fault(f))
    }

    fn walk_texts(
        &self,
        first: u32,
        visit: &mut dyn FnMut(u32, &str) -> ControlFlow<()>,
    ) -> Result<()> {
        let count = self.catalog.texts;
        let first = first.max(1);
        if first > count {
            return Ok(());
        }
        let mask = (1u32 << TEXT_CHUNK_BITS) - 1;
        let (lo, hi) = (first >> TEXT_CHUNK_BITS, count >> TEXT_CHUNK_BITS);
        let mut expect = lo;
        let mut range = faults(|| Ok(self.text_by_id.range(lo..=hi)?))?;
        // Each step of the walk reads redb under the guard; `visit` runs outside it.
        while let Some((k, v)) = faults(|| {
            let item = range.next().transpose()?;
            if let Some((k, v)) = &item {
                std::hint::black_box((k.value(), v.value()));
            }
            Ok(item)
        })? {
            let chunk = k.value();
            if chunk != expect {
                return Err(damaged(format!("dictionary chunk {expect} is missing")));
            }
            expect += 1;
            let bytes = intern::chunk_bytes(self.store.inner.base_seal, chunk, v.value())?;
            let mut texts = intern::TextChunk::parse(bytes)?;
            for slot in 0..texts.len() {
                let id = (chunk << TEXT_CHUNK_BITS) | (slot as u32 & mask);
                if id < first {
                    continue;
                }
                if id > count {
                    return Ok(());
                }
                if visit(id, texts.text(slot)?) == ControlFlow::Break(()) {
                    return Ok(());
                }
            }
        }
        if expect <= hi {
            return Err(damaged(format!("dictionary chunk {expect} is missing")));
        }
        Ok(())
    }

    /// Where `term` occurs: for every relation and column holding it in a live row, how
    /// many rows, from the postings (relations by name, columns in order). Opens the tiers
    /// of relations it reads.
    pub fn term_uses(&self, term: Term) -> Result<Vec<TermUse>, ReadError> {
        let mut out = Vec::new();
        for meta in self.catalog.relations.values() {
            let tier = self.tier(&meta.tier)?;
            for (c, name) in meta.columns.iter().enumerate() {
                let rows = if meta.indexed(c) {
                    Self::posting(&tier, meta, c, term)?.map_or(0, |b| b.len())
                } else {
                    // No postings: the column's rows are read and counted.
                    let mut n = 0u64;
                    self.lookup_rel(meta, &[(c, term)], &mut |_| {
                        n += 1;
                        ControlFlow::Continue(())
                    })?;
                    n
                };
                if rows > 0 {
                    out.push(TermUse {
                        relation: meta.name.clone(),
                        column: c,
                        column_name: name.clone(),
                        rows,
                    });
                }
            }
        }
        Ok(out)
    }
}

impl FactSource for Snapshot {
    fn relations(&self) -> Result<Vec<RelationInfo>, SourceError> {
        Ok(self
            .catalog
            .relations
            .values()
            .map(RelationMeta::info)
            .collect())
    }

    fn relation(&self, name: &str) -> Result<Option<RelationInfo>, SourceError> {
        Ok(self.catalog.relations.get(name).map(RelationMeta::info))
    }

    fn scan(
        &self,
        relation: &str,
        visit: &mut dyn FnMut(&[Term]) -> Visit,
    ) -> Result<(), SourceError> {
        let meta = self.meta(relation)?;
        Ok(self.scan_rel(meta, visit)?)
    }

    fn read_part(
        &self,
        relation: &str,
        part: usize,
        parts: usize,
    ) -> Result<Vec<Term>, SourceError> {
        let meta = self.meta(relation)?;
        Ok(self.read_part_rel(meta, part, parts)?)
    }

    fn lookup(
        &self,
        relation: &str,
        bound: &[(usize, Term)],
        visit: &mut dyn FnMut(&[Term]) -> Visit,
    ) -> Result<(), SourceError> {
        let meta = self.meta(relation)?;
        Self::check_columns(meta, bound)?;
        Ok(self.lookup_rel(meta, bound, visit)?)
    }

    fn estimate(&self, relation: &str, bound: &[(usize, Term)]) -> Result<u64, SourceError> {
        let meta = self.meta(relation)?;
        Self::check_columns(meta, bound)?;
        if bound.is_empty() {
            return Ok(meta.rows);
        }
        let tier = self.tier(&meta.tier)?;
        let mut best = meta.rows;
        // A column without postings bounds nothing below the relation's size.
        for &(c, t) in bound.iter().filter(|&&(c, _)| meta.indexed(c)) {
            let n = Self::posting(&tier, meta, c, t)?.map_or(0, |b| b.len());
            best = best.min(n);
        }
        Ok(best)
    }

    fn term(&self, value: &Value) -> Result<Option<Term>, SourceError> {
        let r: Result<Option<Term>> = faults(|| {
            Ok(match value {
                Value::Absent => Some(Term::ABSENT),
                // One text: read through its frame alone, no chunk decoded whole.
                Value::Text(s) => {
                    crate::intern::find_by_hash(&self.id_by_text, &self.text_collisions, s, |id| {
                        let stored = crate::intern::read_text(
                            &self.text_by_id,
                            self.store.inner.base_seal,
                            self.catalog.texts,
                            id,
                        )?;
                        Ok(stored.as_deref() == Some(s.as_str()))
                    })?
                    .map(Term::text)
                }
                Value::Number(n) => {
                    let n = if *n == 0.0 { 0.0 } else { *n };
                    match Term::integer(n) {
                        Some(t) => Some(t),
                        None => self
                            .id_by_number
                            .get(n.to_bits())?
                            .map(|v| Term::number(v.value())),
                    }
                }
            })
        });
        Ok(r.map_err(|f| self.store.read_fault(f))?)
    }

    fn value(&self, term: Term) -> Result<Value, SourceError> {
        let r: Result<Option<Value>> = faults(|| {
            Ok(match term.kind() {
                TermKind::Absent => Some(Value::Absent),
                TermKind::Text(id) => crate::intern::read_text(
                    &self.text_by_id,
                    self.store.inner.base_seal,
                    self.catalog.texts,
                    id,
                )?
                .map(Value::Text),
                TermKind::Integer(n) => Some(Value::Number(f64::from(n))),
                TermKind::Number(id) => self
                    .number_by_id
                    .get(id)?
                    .map(|v| Value::Number(f64::from_bits(v.value()))),
            })
        });
        r.map_err(|f| self.store.read_fault(f))?
            .ok_or(SourceError::UnknownTerm(term.0))
    }

    /// Texts by id, so each chunk of the dictionary is read and verified once; any other
    /// term as [`FactSource::value`] reads it.
    fn values(&self, terms: &[Term]) -> Result<Vec<Value>, SourceError> {
        let mut texts: Vec<(u32, usize)> = terms
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match t.kind() {
                TermKind::Text(id) => Some((id, i)),
                _ => None,
            })
            .collect();
        texts.sort_unstable();
        let ids: Vec<u32> = texts.iter().map(|&(id, _)| id).collect();
        let read: Result<Vec<Option<String>>> = faults(|| {
            intern::read_texts(
                &self.text_by_id,
                self.store.inner.base_seal,
                self.catalog.texts,
                &ids,
            )
        });
        let read = read.map_err(|f| self.store.read_fault(f))?;
        let mut out: Vec<Option<Value>> = vec![None; terms.len()];
        for ((id, i), text) in texts.into_iter().zip(read) {
            out[i] = Some(Value::Text(text.ok_or(SourceError::UnknownTerm(id))?));
        }
        terms
            .iter()
            .zip(out)
            .map(|(&t, v)| v.map_or_else(|| self.value(t), Ok))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::dump::{DumpSpec, Format};
    use crate::{BatchOptions, OpenOptions};

    fn ingest(store: &Store, dump: &str) {
        let mut batch = store.batch(BatchOptions::default()).unwrap();
        let spec = DumpSpec {
            label: "x.edges.tsv".into(),
            format: Format::Edges,
            relation: None,
            unit: None,
            checkout: None,
        };
        batch.read_dump(dump.as_bytes(), &spec).unwrap();
        batch.commit().unwrap();
    }

    #[test]
    fn the_dictionary_is_walked_in_order_and_terms_counted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            dir.path(),
            OpenOptions {
                create: true,
                ..OpenOptions::default()
            },
        )
        .unwrap();
        // More than one chunk of 256 texts.
        let mut dump = String::new();
        for i in 0..300 {
            dump.push_str(&format!("n{i}\tCALLS\tn{}\n", i + 1));
        }
        dump.push_str("n0\tIMPORTS\thub\nn1\tIMPORTS\thub\n");
        ingest(&store, &dump);
        let snap = store.snapshot().unwrap();
        assert_eq!(snap.text_count(), 302);
        let mut seen = Vec::new();
        snap.for_each_text(1, &mut |id, t| {
            seen.push((id, t.to_owned()));
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(seen.len(), 302);
        assert!(
            seen.iter()
                .enumerate()
                .all(|(i, (id, _))| *id == i as u32 + 1)
        );
        assert_eq!(seen[0].1, "n0");
        for (id, t) in &seen {
            assert_eq!(snap.value(Term::text(*id)).unwrap(), Value::text(t.clone()));
        }
        // Read together, out of order, across chunks, with other kinds of term among them.
        let mut terms: Vec<Term> = seen.iter().rev().map(|(id, _)| Term::text(*id)).collect();
        terms.insert(7, Term::ABSENT);
        terms.insert(300, Term::integer(12.0).unwrap());
        terms.push(Term::text(5));
        let each: Vec<Value> = terms.iter().map(|&t| snap.value(t).unwrap()).collect();
        assert_eq!(snap.values(&terms).unwrap(), each);
        assert!(snap.values(&[Term::text(303)]).is_err());
        let mut tail = Vec::new();
        snap.for_each_text(255, &mut |id, _| {
            tail.push(id);
            if tail.len() == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        assert_eq!(tail, [255, 256, 257]);

        let n1 = snap.term(&Value::text("n1")).unwrap().unwrap();
        let uses = snap.term_uses(n1).unwrap();
        let got: Vec<(&str, &str, u64)> = uses
            .iter()
            .map(|u| (u.relation.as_str(), u.column_name.as_str(), u.rows))
            .collect();
        assert_eq!(
            got,
            [
                ("calls", "src", 1),
                ("calls", "dst", 1),
                ("imports", "src", 1)
            ]
        );
        let hub = snap.term(&Value::text("hub")).unwrap().unwrap();
        assert_eq!(snap.term_uses(hub).unwrap()[0].rows, 2);
    }
}
