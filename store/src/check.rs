//! `strata check`: rebuild every index and count from the columns and compare.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata, TableHandle};
use roaring::RoaringBitmap;
use strata_eval::{Term, TermKind};

use crate::catalog::{Catalog, RelationMeta};
use crate::db::Store;
use crate::error::{CheckError, Fault, Result};
use crate::layout::{self, BLOCK_ROWS, DEFAULT_TIER};
use crate::seal::Seal;
use crate::{column, index, intern};

/// What the integrity check found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckReport {
    /// Relations checked.
    pub relations: usize,
    /// Live facts checked.
    pub facts: u64,
    /// Each mismatch, as "relation R, column C: what differs".
    pub problems: Vec<String>,
}

impl CheckReport {
    /// Whether the database passed.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ok() {
            write!(
                f,
                "ok: {} relations, {} facts; every index and count matches the columns",
                self.relations, self.facts
            )
        } else {
            writeln!(f, "{} problems found:", self.problems.len())?;
            for p in &self.problems {
                writeln!(f, "  {p}")?;
            }
            Ok(())
        }
    }
}

impl Store {
    /// Rebuilds the postings, owners and counts of every relation from its column blocks and
    /// compares them with what is stored. Opens every tier. Open the store with
    /// [`OpenOptions::verify`](crate::OpenOptions::verify) to have redb verify every page's
    /// checksum too.
    ///
    /// After a storage failure the files are opened again first, as for a read (see
    /// `heal`), and a failed storage call marks the store so that the next call does.
    pub fn check(&self) -> Result<CheckReport, CheckError> {
        self.heal_for_read();
        let base = self.base_path();
        let fault = |f: Fault, path: &std::path::Path| {
            self.note(&f);
            f.check(path)
        };
        let catalog = crate::guard::faults(|| Catalog::current(&**self.inner.base()?))
            .map_err(|f| fault(f, &base))?;
        let mut report = CheckReport::default();
        for meta in catalog.relations.values() {
            report.relations += 1;
            let path = self.tier_path(&meta.tier);
            let mut one = || -> Result<()> {
                let (txn, seal) = if meta.tier == DEFAULT_TIER {
                    (self.inner.base()?.begin_read()?, self.inner.base_seal)
                } else {
                    let db = self.tier_db(&meta.tier, false)?;
                    (db.begin_read()?, db.seal)
                };
                check_relation(&txn, seal, &catalog, meta, &mut report)
            };
            crate::guard::faults(&mut one).map_err(|f| fault(f, &path))?;
        }
        let mut dictionary = || -> Result<()> {
            let txn = self.inner.base()?.begin_read()?;
            check_dictionary(&txn, self.inner.base_seal, &catalog, &mut report)
        };
        crate::guard::faults(&mut dictionary).map_err(|f| fault(f, &base))?;
        // A batch's runs never outlive its transaction.
        let mut tiers: std::collections::BTreeSet<&str> = catalog
            .relations
            .values()
            .map(|m| m.tier.as_str())
            .collect();
        tiers.insert(DEFAULT_TIER);
        for tier in tiers {
            let path = self.tier_path(tier);
            let runs = || -> Result<bool> {
                let txn = if tier == DEFAULT_TIER {
                    self.inner.base()?.begin_read()?
                } else {
                    self.tier_db(tier, false)?.begin_read()?
                };
                Ok(txn
                    .list_tables()?
                    .any(|t| t.name() == layout::POSTINGS_RUNS.name()))
            };
            if crate::guard::faults(runs).map_err(|f| fault(f, &path))? {
                report.problems.push(format!(
                    "{}: a batch's postings runs were committed",
                    path.display()
                ));
            }
        }
        Ok(report)
    }
}

fn check_relation(
    txn: &redb::ReadTransaction,
    seal: Seal,
    catalog: &Catalog,
    meta: &RelationMeta,
    report: &mut CheckReport,
) -> Result<()> {
    let name = &meta.name;
    let blocks = txn.open_table(layout::BLOCKS)?;
    let postings = txn.open_table(layout::POSTINGS)?;
    let dead = match txn.open_table(layout::DEAD)?.get(meta.id)? {
        Some(v) => index::decode(index::open_dead(seal, meta.id, v.value())?)?,
        None => RoaringBitmap::new(),
    };
    let arity = meta.columns.len();
    let mut live = RoaringBitmap::new();
    live.insert_range(0..meta.next_row);
    live -= &dead;
    report.facts += live.len();
    if live.len() != meta.rows {
        report.problems.push(format!(
            "relation {name}: the catalog says {} facts, the columns hold {}",
            meta.rows,
            live.len()
        ));
    }
    let nblocks = meta.next_row.div_ceil(BLOCK_ROWS);
    // Live tuples, column-major, to look for a tuple stored twice.
    let mut tuples: Vec<Vec<u32>> = vec![Vec::with_capacity(live.len() as usize); arity];
    for (c, col) in meta.columns.iter().enumerate() {
        let mut rebuilt: HashMap<u32, RoaringBitmap> = HashMap::new();
        for b in 0..nblocks {
            let Some(f) = crate::blocks::get(&blocks, seal, (meta.id, c as u16, b), name)? else {
                report.problems.push(format!(
                    "relation {name}, column {col}: block {b} is missing"
                ));
                continue;
            };
            let terms = column::decode(f.payload(seal, name)?)?;
            let expect = (meta.next_row - b * BLOCK_ROWS).min(BLOCK_ROWS) as usize;
            if terms.len() != expect {
                report.problems.push(format!(
                    "relation {name}, column {col}: block {b} holds {} terms, expected {expect}",
                    terms.len()
                ));
            }
            for (i, &t) in terms.iter().enumerate() {
                let r = b * BLOCK_ROWS + i as u32;
                if !live.contains(r) {
                    continue;
                }
                let known = match Term(t).kind() {
                    TermKind::Absent | TermKind::Integer(_) => true,
                    TermKind::Text(id) => id <= catalog.texts,
                    TermKind::Number(id) => id < catalog.numbers,
                };
                if !known {
                    report.problems.push(format!(
                        "relation {name}, column {col}: row {r} holds term {t}, which is not in \
                         the dictionary"
                    ));
                }
                rebuilt.entry(t).or_default().insert(r);
                tuples[c].push(t);
            }
        }
        let mut stored = 0u64;
        let mut differ = Vec::new();
        if !meta.indexed(c) {
            // No postings; `distinct` is an upper bound (see `RelationMeta::distinct`).
            let held = postings
                .range((meta.id, c as u16, 0)..=(meta.id, c as u16, u32::MAX))?
                .count();
            if held > 0 {
                report.problems.push(format!(
                    "relation {name}, column {col}: declared without an index, but {held} \
                     postings chunks are stored"
                ));
            }
            let counted = rebuilt.len() as u64;
            if meta.distinct[c] < counted || meta.distinct[c] > meta.rows {
                report.problems.push(format!(
                    "relation {name}, column {col}: the catalog says at most {} distinct \
                     values, the column holds {counted} in {} facts",
                    meta.distinct[c], meta.rows
                ));
            }
            continue;
        }
        for entry in postings.range((meta.id, c as u16, 0)..=(meta.id, c as u16, u32::MAX))? {
            let (k, v) = entry?;
            let chunk = k.value().2;
            let bytes = index::open_chunk(seal, k.value(), v.value(), name)?;
            let view = index::ChunkView::parse(bytes)?;
            for (low, p) in view.iter() {
                stored += 1;
                let term = chunk << index::CHUNK_BITS | u32::from(low);
                let bitmap = index::decode_posting(p)?;
                if rebuilt.remove(&term).as_ref() != Some(&bitmap) {
                    differ.push(term);
                }
            }
        }
        differ.extend(rebuilt.keys().copied());
        if !differ.is_empty() {
            differ.sort_unstable();
            report.problems.push(format!(
                "relation {name}, column {col}: {} postings differ from the column (first: term {})",
                differ.len(),
                differ[0]
            ));
        }
        if stored != meta.distinct[c] {
            report.problems.push(format!(
                "relation {name}, column {col}: the catalog says {} distinct values, the index holds {stored}",
                meta.distinct[c]
            ));
        }
    }
    if arity == 0 {
        return Ok(());
    }
    if tuples.iter().all(|t| t.len() as u64 == live.len()) {
        let mut order: Vec<u32> = (0..live.len() as u32).collect();
        let key = |i: u32| tuples.iter().map(move |t| t[i as usize]);
        order.sort_unstable_by(|&a, &b| key(a).cmp(key(b)));
        let dups = order.windows(2).filter(|w| key(w[0]).eq(key(w[1]))).count();
        if dups > 0 {
            report.problems.push(format!(
                "relation {name}: {dups} facts are stored more than once"
            ));
        }
    }
    drop(tuples);
    // Owners: every live row has at least one, and the shared counts agree.
    let owners = txn.open_table(layout::OWNERS)?;
    let shared = txn.open_table(layout::SHARED)?;
    let mut count: BTreeMap<u32, u32> = BTreeMap::new();
    let mut owned = RoaringBitmap::new();
    for entry in owners.range((meta.id, 0)..=(meta.id, u32::MAX))? {
        let (k, v) = entry?;
        let b = index::decode(index::open_owners(seal, k.value(), v.value())?)?;
        for r in &b {
            if owned.contains(r) {
                *count.entry(r).or_insert(1) += 1;
            }
        }
        owned |= b;
    }
    if owned != live {
        report.problems.push(format!(
            "relation {name}: {} live rows have no owner, {} owned rows are not live",
            (&live - &owned).len(),
            (&owned - &live).len()
        ));
    }
    let mut stored_shared: BTreeMap<u32, u32> = BTreeMap::new();
    for entry in shared.range((meta.id, 0)..=(meta.id, u32::MAX))? {
        let (k, v) = entry?;
        stored_shared.insert(k.value().1, v.value());
    }
    if stored_shared != count {
        report.problems.push(format!(
            "relation {name}: shared-row counts differ for {} rows",
            stored_shared
                .keys()
                .chain(count.keys())
                .filter(|r| stored_shared.get(r) != count.get(r))
                .count()
        ));
    }
    Ok(())
}

/// The dictionary: every text's id leads back to it, and the counts agree.
fn check_dictionary(
    txn: &redb::ReadTransaction,
    seal: Seal,
    catalog: &Catalog,
    report: &mut CheckReport,
) -> Result<()> {
    let by_id = txn.open_table(layout::TEXT_BY_ID)?;
    let by_hash = txn.open_table(layout::ID_BY_TEXT)?;
    let collisions = txn.open_table(layout::TEXT_COLLISIONS)?;
    let mut count = 0u32;
    let mut stored = intern::ChunkCache::default();
    for entry in by_id.iter()? {
        let (chunk, v) = entry?;
        let texts =
            intern::decode_text_chunk(intern::chunk_bytes(seal, chunk.value(), v.value())?)?;
        for (slot, text) in texts.iter().enumerate() {
            let id = chunk.value() << intern::TEXT_CHUNK_BITS | slot as u32;
            if id == 0 {
                continue;
            }
            count += 1;
            let found =
                stored.find_text(&by_hash, &collisions, &by_id, seal, catalog.texts, text)?;
            if found != Some(id) {
                report.problems.push(format!(
                    "dictionary: text {text:?} has id {id}, but looking it up finds {found:?}"
                ));
                return Ok(());
            }
        }
    }
    let indexed = by_hash.len()? + collisions.len()?;
    if count != catalog.texts || indexed != u64::from(catalog.texts) {
        report.problems.push(format!(
            "dictionary: {} texts recorded, {count} stored by id, {indexed} by hash",
            catalog.texts
        ));
    }
    Ok(())
}
