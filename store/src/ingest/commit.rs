//! Committing: the dictionary, units, catalog and batch record written to the base file, then
//! the commit protocol (tier files first, the base file last, which acknowledges the batch) and
//! what a write failure leaves behind.

use std::collections::BTreeSet;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use redb::{ReadableTable, WriteTransaction};

use super::{Batch, BatchSummary};
use crate::ascending::insert_ascending;
use crate::catalog::{BatchRecord, encode_json};
use crate::error::{CommitError, Fault, Result, damaged};
use crate::layout;

impl Batch<'_> {
    /// Writes the batch atomically: all of it lands, or (on any error) none of it.
    ///
    /// A storage failure (a full disk, say) is [`CommitError::Write`], which says whether
    /// the batch may have landed: only a failure of the final durable commit leaves that open,
    /// and running the same batch again is then safe (facts already stored are not stored
    /// twice; a batch id already committed is skipped).
    pub fn commit(self) -> Result<BatchSummary, CommitError> {
        let dir = self.store.dir().to_owned();
        let seq = self.start.seq + 1;
        let mut committing = false;
        let store = self.store;
        // The tiers no batch wrote before (every tier, for a database's first batch).
        let written_before: Vec<String> = if self.start.seq == 0 {
            Vec::new()
        } else {
            let mut tiers: Vec<String> = self.start.tier_seq.keys().cloned().collect();
            tiers.push(layout::DEFAULT_TIER.to_owned());
            tiers
        };
        crate::guard::faults(|| self.commit_inner(&mut committing))
            .map(|(summary, tiers)| {
                // Acknowledged: now give back what the batches left unused, when it is much.
                if !summary.already_committed {
                    let first: Vec<bool> =
                        tiers.iter().map(|t| !written_before.contains(t)).collect();
                    store.after_commit(&tiers, &first, summary.removed > 0);
                }
                summary
            })
            .map_err(|f| {
                store
                    .inner
                    .batch_failed
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                // A failed storage call (or a panic redb stopped at part way through a write):
                // nothing more is built on these files as they are open; they are opened again
                // (see `heal`), at once, so that readers read the last committed batch.
                store.note(&f);
                f.commit(dir, seq, committing)
            })
            .inspect_err(|_| store.heal_after_batch())
    }

    /// Commits; returns what the batch did and the tiers whose files it wrote.
    pub(super) fn commit_inner(
        mut self,
        committing: &mut bool,
    ) -> Result<(BatchSummary, Vec<String>)> {
        let t0 = Instant::now();
        self.texts_job = Some(self.new_texts());
        // Nothing is interned from here on: the stored texts' lookups (`id_by_text` read
        // into memory by a large batch, 12 bytes a text) are let go of before the last
        // flush, whose encoding is the batch's peak.
        self.stored_texts = crate::intern::ChunkCache::default();
        self.flush(false)?;
        let Some(mut w) = self.writing.take() else {
            return Err(damaged("a batch's transaction vanished"));
        };
        if let Some(seq) = w.already {
            let summary = BatchSummary {
                seq,
                already_committed: true,
                facts_read: self.facts_read,
                elapsed: self.started.elapsed(),
                ..BatchSummary::default()
            };
            return Ok((summary, Vec::new()));
        }
        // Every relation `--index` names is one the batch wrote or the database stores; a
        // stored one declared with other columns gets (or loses) their postings now.
        let indexes = self.reindex(&mut w)?;
        let seq = w.seq;
        let units_count = w.units_count;
        let next_rel = w.next_rel;
        let metas = std::mem::take(&mut w.metas);
        let unit_rel_changes = std::mem::take(&mut w.unit_rel_changes);
        let mut tiers: BTreeSet<String> = metas.values().map(|m| m.tier.clone()).collect();
        tiers.extend(w.tiers.0.keys().cloned());
        let tier_txns: Vec<(
            String,
            std::sync::Arc<crate::db::File>,
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
            documents: self.documents,
            indexes,
            ..BatchSummary::default()
        };

        // The base file: dictionary, units, catalog, batch record.
        {
            // Unless the last flush wrote them.
            if let Some(texts) = self.texts_job.take() {
                texts.write(&wtxn)?;
            }
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
            // In key order, so redb's inserts walk its tree once; a stable sort keeps a later
            // flush's change of a pair after an earlier one.
            let mut unit_rel_changes = unit_rel_changes;
            unit_rel_changes.sort_by_key(|&(u, rel, _)| (u, rel));
            // The last change of each pair stands.
            let last = unit_rel_changes
                .chunk_by(|a, b| (a.0, a.1) == (b.0, b.1))
                .filter_map(|changes| changes.last())
                .filter(|&&(u, _, _)| u != 0);
            for &(u, rel, owns) in last.clone() {
                if !owns {
                    ur.remove((u, rel))?;
                }
            }
            let owned = last.filter(|c| c.2).map(|&(u, rel, _)| ((u, rel), ()));
            insert_ascending(&mut ur, owned)?;
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
                    Err(e) => failed = Some(Fault::from(e)),
                }
            }
            if failed.is_none() {
                *committing = true;
                if let Err(e) = wtxn.commit() {
                    failed = Some(e.into());
                }
            }
            if let Some(e) = failed {
                // When a tier's commit failed, the base file did not acknowledge the batch:
                // undo it in the tiers it reached, now, so this process never builds on it.
                // When the base file's own commit failed, the batch may have landed there
                // (redb wrote its header but could not sync it, say), and what this process
                // reads of the base file may not be what is on disk: leave the tiers as they
                // are, savepoints and all, and refuse further batches until the database is
                // opened again, whose recovery compares each tier with the base file on disk.
                self.store
                    .inner
                    .poisoned
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                let undone = !*committing
                    && cleanup
                        .iter()
                        .all(|(tier, db, _)| self.store.recover_tier(db, tier).is_ok());
                if undone {
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
        let mut files = vec![layout::DEFAULT_TIER.to_owned()];
        files.extend(tiers.into_iter().filter(|t| t != layout::DEFAULT_TIER));
        Ok((summary, files))
    }
}
