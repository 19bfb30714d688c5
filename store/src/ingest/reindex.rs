//! Indexes a batch declares anew for relations already stored (`--index REL=COLS` naming a
//! stored relation, `strata index`): the postings of a column that gains an index are built
//! from its blocks, those of a column that loses one are dropped, in the batch's own
//! transactions, after its last flush and before its commit. So the change lands with the
//! batch, or not at all, and covers the rows the batch itself appended.

use redb::{ReadableTable, WriteTransaction};
use roaring::RoaringBitmap;

use super::Batch;
use super::flush::Writing;
use crate::ascending::insert_ascending;
use crate::catalog::RelationMeta;
use crate::error::{Fault, IngestError, Result, damaged};
use crate::layout::{self, BLOCK_ROWS, DEFAULT_TIER};
use crate::relwriter::{AddedChunks, rebuilt_postings};
use crate::seal::Seal;
use crate::{blocks, column, index};

/// One column whose index a batch built or dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexChange {
    /// The relation.
    pub relation: String,
    /// The column's name.
    pub column: String,
    /// Whether the column's postings were built (else dropped).
    pub built: bool,
    /// The column's distinct values among live facts: counted as its postings were built;
    /// for a dropped index, the count it had (from then on an upper bound).
    pub values: u64,
}

impl Batch<'_> {
    /// Applies each `--index` declaration of the batch to its relation, stored or written by
    /// the batch: builds the postings of each column it names that has none, and drops
    /// those of each later column it leaves out; the relation keeps no column on demand
    /// after it. Then builds the postings of each column demanded
    /// ([`super::BatchOptions::demanded`]) that its relation keeps on demand. A relation
    /// whose indexes are as declared is left as it is. An error names a relation neither
    /// stored nor written, or a declaration that is no set of the relation's columns with
    /// its first.
    pub(super) fn reindex(&self, w: &mut Writing) -> Result<Vec<IndexChange>> {
        let mut changes = Vec::new();
        for (name, indexed) in &self.options.indexes {
            let Some(m) = w.metas.get(name).or_else(|| self.start.relations.get(name)) else {
                return Err(IngestError::Invalid(format!(
                    "indexes are declared for relation \"{name}\", which this batch does not \
                     hold and the database does not store"
                ))
                .into());
            };
            let declared = RelationMeta::unindexed_of(name, &m.columns, indexed)
                .map_err(|message| Fault::from(IngestError::Invalid(message)))?;
            if declared == m.unindexed && m.on_demand.is_empty() {
                continue;
            }
            let mut m = m.clone();
            m.on_demand.clear();
            self.set_indexes(w, m, declared, &mut changes)?;
        }
        for (name, columns) in &self.options.demanded {
            let Some(m) = w.metas.get(name).or_else(|| self.start.relations.get(name)) else {
                continue;
            };
            let wanted = m.demanded(columns);
            if wanted.is_empty() {
                continue;
            }
            let mut m = m.clone();
            m.on_demand.retain(|c| !wanted.contains(c));
            let unindexed = m
                .unindexed
                .iter()
                .copied()
                .filter(|c| !wanted.contains(c))
                .collect();
            self.set_indexes(w, m, unindexed, &mut changes)?;
        }
        Ok(changes)
    }

    /// Gives relation `m` the columns without postings `unindexed`, building and dropping
    /// postings to match, and notes the catalog entry; each column built or dropped goes
    /// into `changes`.
    fn set_indexes(
        &self,
        w: &mut Writing,
        mut m: RelationMeta,
        unindexed: Vec<u16>,
        changes: &mut Vec<IndexChange>,
    ) -> Result<()> {
        w.open_tier(self.store, &m.tier)?;
        let (txn, seal) = if m.tier == DEFAULT_TIER {
            (&w.wtxn, self.store.inner.base_seal)
        } else {
            let (db, txn, _) = &w.tiers.0[m.tier.as_str()];
            (txn, db.seal)
        };
        for c in 1..m.columns.len() {
            let col = c as u16;
            let will = !unindexed.contains(&col);
            if m.indexed(c) == will {
                continue;
            }
            let values = if will {
                let values = build(txn, seal, &m, col)?;
                m.distinct[c] = values;
                values
            } else {
                drop_postings(txn, &m, col)?;
                m.distinct[c]
            };
            changes.push(IndexChange {
                relation: m.name.clone(),
                column: m.columns[c].clone(),
                built: will,
                values,
            });
        }
        m.unindexed = unindexed;
        w.metas.insert(m.name.clone(), m);
        Ok(())
    }
}

/// Builds the postings of column `col` of relation `m`, which has none, from its blocks;
/// answers how many postings (distinct values among live rows) it wrote.
fn build(txn: &WriteTransaction, seal: Seal, m: &RelationMeta, col: u16) -> Result<u64> {
    let dead = match txn.open_table(layout::DEAD)?.get(m.id)? {
        Some(v) => index::decode(index::open_dead(seal, m.id, v.value())?)?,
        None => RoaringBitmap::new(),
    };
    let mut terms = Vec::with_capacity(m.next_row as usize);
    {
        let blocks = txn.open_table(layout::BLOCKS)?;
        for b in 0..m.next_row.div_ceil(BLOCK_ROWS) {
            let Some(f) = blocks::get(&blocks, seal, (m.id, col, b), &m.name)? else {
                return Err(damaged(format!(
                    "relation {}, column {}: block {b} is missing",
                    m.name,
                    m.columns[usize::from(col)]
                )));
            };
            terms.extend(column::decode(f.payload(seal, &m.name)?)?);
        }
    }
    if terms.len() != m.next_row as usize {
        return Err(damaged(format!(
            "relation {}, column {}: its blocks hold {} rows, the catalog {}",
            m.name,
            m.columns[usize::from(col)],
            terms.len(),
            m.next_row
        )));
    }
    // A column without an index holds no postings (`check`), so every chunk is new.
    let parts = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let chunks = rebuilt_postings(seal, (m.id, col), terms, &dead, parts)?;
    let mut postings = txn.open_table(layout::POSTINGS)?;
    let mut values = 0u64;
    let written = chunks
        .iter()
        .flat_map(AddedChunks::iter)
        .map(|(key, bytes, n)| {
            values += n as u64;
            (key, bytes)
        });
    insert_ascending(&mut postings, written)?;
    Ok(values)
}

/// Removes every postings chunk of column `col` of relation `m`.
fn drop_postings(txn: &WriteTransaction, m: &RelationMeta, col: u16) -> Result<()> {
    txn.open_table(layout::POSTINGS)?
        .retain_in((m.id, col, 0)..=(m.id, col, u32::MAX), |_, _| false)?;
    Ok(())
}

impl crate::db::Store {
    /// Builds, as one batch, the postings of the columns queries looked up alone
    /// (`demanded`: relation names and column positions, as
    /// [`strata_eval::Outcome::unindexed`] lists them) that their relation keeps on demand
    /// ([`RelationMeta::on_demand`]); answers the columns built. When none of them is kept
    /// on demand (a relation declared without them, or built already), no batch is
    /// committed and the answer is empty. Waits for a batch running, as
    /// [`crate::db::Store::batch`] does.
    pub fn build_demanded(
        &self,
        demanded: &[(String, Vec<usize>)],
    ) -> std::result::Result<Vec<IndexChange>, crate::error::CommitError> {
        let mut wanted: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
        for (name, columns) in demanded {
            wanted.entry(name.clone()).or_default().extend(columns);
        }
        let options = super::BatchOptions {
            demanded: wanted,
            ..super::BatchOptions::default()
        };
        let batch = self.batch(options)?;
        let any = batch.options.demanded.iter().any(|(name, columns)| {
            batch
                .start
                .relations
                .get(name)
                .is_some_and(|m| !m.demanded(columns).is_empty())
        });
        if !any {
            // Dropped uncommitted: nothing is written.
            return Ok(Vec::new());
        }
        Ok(batch.commit()?.indexes)
    }
}
