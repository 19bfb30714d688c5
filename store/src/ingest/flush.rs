//! Flushing: the batch's open transactions (the base file's and one per tier, each
//! guarded by a savepoint), and the writing of gathered facts into them, uncommitted, when the
//! buffer fills and at commit.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;

use redb::{ReadableTable, WriteTransaction};

use super::earlier::Earlier;
use super::gathered::{Sorter, add_sorted};
use super::pending::Pending;
use super::{Batch, BatchSummary};
use crate::catalog::RelationMeta;
use crate::error::{Result, damaged};
use crate::layout::{self, DEFAULT_TIER};
use crate::relwriter::{Encoded, Encoder, RelWriter, Runs};

/// A batch's open transactions and running state between flushes.
pub(super) struct Writing {
    pub(super) wtxn: WriteTransaction,
    pub(super) seq: u64,
    /// Set when the batch id was committed before: nothing is written.
    pub(super) already: Option<u64>,
    pub(super) next_rel: u32,
    pub(super) units_count: u32,
    /// Every relation written so far, as it stands in this batch.
    pub(super) metas: BTreeMap<String, RelationMeta>,
    /// Open tier files: their transaction and the savepoint taken before it.
    pub(super) tiers: TierTxns,
    /// Units whose stored facts were removed already.
    pub(super) removed_units: BTreeSet<u32>,
    pub(super) unit_rel_changes: Vec<(u32, u32, bool)>,
    pub(super) relations: BTreeSet<String>,
    pub(super) summary: BatchSummary,
    /// Relations that held no row when the batch began, each with the rows its flushes
    /// appended so far, a run a flush (see `earlier`); `None` once a flush's rows did not
    /// ascend (then later flushes look every tuple up).
    pub(super) fresh: BTreeMap<String, Option<Vec<Range<u32>>>>,
    /// How many flushes wrote their new postings as runs (`postings_runs`), to merge at the
    /// last flush.
    pub(super) runs: u32,
    /// The relations those runs hold postings of.
    pub(super) spilled: BTreeSet<String>,
}

/// A batch's open tier transactions, each with the savepoint taken before it.
#[derive(Default)]
pub(super) struct TierTxns(
    pub(super) BTreeMap<String, (std::sync::Arc<crate::db::File>, WriteTransaction, u64)>,
);

impl Drop for TierTxns {
    /// A batch dropped before its commit (an error, or never committed) leaves nothing: its
    /// transactions abort, and the savepoints it took in tier files are deleted.
    fn drop(&mut self) {
        for (_, (db, txn, sp)) in std::mem::take(&mut self.0) {
            // Best effort, and never a panic in a drop (redb may panic on damaged pages).
            let _ = crate::guard::faults(|| {
                drop(txn);
                let t = db.begin_write()?;
                t.delete_persistent_savepoint(sp)?;
                t.commit()?;
                Ok(())
            });
        }
    }
}

impl Writing {
    /// Opens the batch's transaction on the file of tier `tier` (not the default tier,
    /// whose relations are written in the base file's), taking its savepoint, unless open.
    pub(super) fn open_tier(&mut self, store: &crate::db::Store, tier: &str) -> Result<()> {
        if tier == DEFAULT_TIER || self.tiers.0.contains_key(tier) {
            return Ok(());
        }
        let db = store.tier_db(tier, true)?;
        let sp_txn = db.begin_write()?;
        let sp = sp_txn.persistent_savepoint()?;
        sp_txn.commit()?;
        let txn = db.begin_write()?;
        {
            let mut t = txn.open_table(layout::TIER_META)?;
            t.insert("applied_seq", self.seq.to_le_bytes().as_slice())?;
            t.insert("savepoint", sp.to_le_bytes().as_slice())?;
        }
        self.tiers.0.insert(tier.to_owned(), (db, txn, sp));
        Ok(())
    }
}

impl Batch<'_> {
    /// Opens the batch's transaction on the base file (once), checking the batch id.
    pub(super) fn begin(&mut self) -> Result<()> {
        if self.writing.is_some() {
            return Ok(());
        }
        let wtxn = self.store.inner.base()?.begin_write()?;
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
            .map(|m| (m.name.clone(), Some(Vec::new())))
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
            runs: 0,
            spilled: BTreeSet::new(),
        });
        Ok(())
    }

    /// Writes the facts gathered so far into the batch's transactions (uncommitted), and
    /// removes the stored facts of units named for the first time. `more` says more facts
    /// will follow.
    pub(super) fn flush(&mut self, more: bool) -> Result<()> {
        self.begin()?;
        self.pending_facts = 0;
        if self.writing.as_ref().is_some_and(|w| w.already.is_some()) {
            // A retried batch: nothing is written; drop what was read.
            self.rels.clear();
            return Ok(());
        }
        let mut w = self
            .writing
            .take()
            .ok_or_else(|| damaged("a batch's transaction vanished"))?;
        let result = self.flush_into(&mut w, more);
        self.writing = Some(w);
        result
    }

    /// Writes the gathered facts into `w`'s transactions; `more` says more flushes follow
    /// (then new postings are written as a run, else every run is merged into `postings`).
    pub(super) fn flush_into(&mut self, w: &mut Writing, more: bool) -> Result<()> {
        let mut metas = {
            let mut next_rel = w.next_rel;
            let resolved = self.resolve_into(&w.metas, &mut next_rel)?;
            w.next_rel = next_rel;
            resolved
        };
        for name in self.rels.keys() {
            if !w.metas.contains_key(name) && !self.start.relations.contains_key(name) {
                w.fresh
                    .entry(name.clone())
                    .or_insert_with(|| Some(Vec::new()));
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
                        damaged(format!("unit {u} owns facts of unknown relation {rel}"))
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
        if !more {
            // The last flush merges every run: each relation with one is written.
            for name in &w.spilled {
                if !metas.contains_key(name) {
                    let m = w.metas.get(name).ok_or_else(|| {
                        damaged(format!("relation {name} vanished during commit"))
                    })?;
                    metas.insert(name.clone(), m.clone());
                }
            }
        }
        let runs = Runs {
            earlier: w.runs,
            spill: more,
        };
        // Group by tier; the default tier's relations are written in the base transaction.
        let mut tiers: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for m in metas.values() {
            tiers
                .entry(m.tier.clone())
                .or_default()
                .push(m.name.clone());
        }
        for (tier, names) in &tiers {
            w.open_tier(self.store, tier)?;
            let (txn, seal) = if tier == DEFAULT_TIER {
                (&w.wtxn, self.store.inner.base_seal)
            } else {
                let (db, txn, _) = &w.tiers.0[tier];
                (txn, db.seal)
            };
            // Each relation's changes are encoded on a thread of their own (for a flush large
            // enough to pay for one) while the next relation's facts are added, and written
            // as they come back.
            let rows: usize = names
                .iter()
                .filter_map(|n| self.rels.get(n))
                .map(Pending::len)
                .sum();
            // The facts of each relation with any, in the order written, to sort.
            let mut jobs = Vec::new();
            for name in names {
                if let Some(p) = self.rels.get_mut(name) {
                    jobs.push(p.take_facts());
                }
            }
            // The last flush writes the batch's new texts into the base file beside its
            // relations, on a thread of its own.
            let texts = if tier == DEFAULT_TIER && !more && rows >= PARALLEL_ROWS {
                self.texts_job.take()
            } else {
                None
            };
            std::thread::scope(|scope| -> Result<()> {
                let parallel = (rows >= PARALLEL_ROWS).then_some(scope);
                let texts = texts.map(|job| scope.spawn(move || job.write(txn)));
                let mut encoder = Encoder::new(parallel);
                let mut sorter = Sorter::new(parallel, jobs);
                for name in names {
                    let meta = metas.remove(name).ok_or_else(|| {
                        damaged(format!("relation {name} vanished during commit"))
                    })?;
                    let mut rw = RelWriter::new(txn, seal, meta)?;
                    rw.set_runs(txn, runs)?;
                    if more {
                        w.spilled.insert(name.clone());
                    }
                    for &u in removals.get(name).map_or(&[][..], Vec::as_slice) {
                        w.summary.removed += rw.remove_unit(u)?;
                    }
                    if self.rels.contains_key(name) {
                        // A relation empty when the batch began holds only the runs its
                        // earlier flushes appended: a tuple none of them holds is new.
                        let arity = rw.meta().columns.len();
                        let earlier = match w.fresh.get(name) {
                            Some(Some(runs)) if arity > 0 => Earlier::new(runs, arity),
                            _ => None,
                        };
                        let first = rw.meta().next_row;
                        add_sorted(&mut rw, sorter.next()?, &mut w.summary, earlier)?;
                        // Its rows are walked only by later flushes.
                        if more && let Some(runs) = w.fresh.get_mut(name) {
                            let end = rw.meta().next_row;
                            match runs {
                                Some(r) if rw.appended_ascend() => r.push(first..end),
                                _ => *runs = None,
                            }
                        }
                        w.relations.insert(name.clone());
                    }
                    rw.hand_over(&mut encoder)?;
                    while let Some(encoded) = encoder.ready() {
                        write(encoded?, txn, &mut w.unit_rel_changes, &mut w.metas)?;
                    }
                }
                while let Some(encoded) = encoder.next() {
                    write(encoded?, txn, &mut w.unit_rel_changes, &mut w.metas)?;
                }
                match texts.map(|t| t.join()) {
                    Some(Ok(written)) => written,
                    // A panic (redb's, on a damaged page) goes on to the batch's guard.
                    Some(Err(panic)) => std::panic::resume_unwind(panic),
                    None => Ok(()),
                }
            })?;
        }
        if more {
            w.runs += 1;
        } else if w.runs > 0 {
            // Every run is merged (and emptied): the table goes with them.
            w.wtxn.delete_table(layout::POSTINGS_RUNS)?;
            for (_, txn, _) in w.tiers.0.values() {
                txn.delete_table(layout::POSTINGS_RUNS)?;
            }
        }
        self.rels.clear();
        Ok(())
    }
}

/// Below this many facts in a flush, relations are encoded on the flushing thread.
const PARALLEL_ROWS: usize = 1 << 14;

/// Writes a relation's encoded changes into `txn`, noting its units and catalog entry.
fn write(
    encoded: Encoded,
    txn: &WriteTransaction,
    unit_rel_changes: &mut Vec<(u32, u32, bool)>,
    metas: &mut BTreeMap<String, RelationMeta>,
) -> Result<()> {
    let (meta, units) = encoded.write(txn)?;
    let rel = meta.id;
    unit_rel_changes.extend(units.into_iter().map(|(u, owns)| (u, rel, owns)));
    metas.insert(meta.name.clone(), meta);
    Ok(())
}
