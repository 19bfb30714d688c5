//! Preparing a round: the base relations it reads into memory (small ones, and those it
//! will probe heavily) and the indexes its steps probe, several of each at once on the
//! worker threads.

use std::ops::ControlFlow;
use std::sync::atomic::Ordering;

use rustc_hash::FxHashMap;

use super::{EAGER_ROWS, EvalError, Evaluator, PROBES_PER_READ, part_range};
use crate::exec::relation::{Mask, Relation};
use crate::ir::RelId;
use crate::plan::{Plan, Step};

impl Evaluator<'_, '_> {
    /// Builds the indexes the plans' steps probe that do not exist yet, several at once on
    /// the worker threads.
    pub(super) fn prepare(&mut self, plans: &[Plan]) {
        let mut wanted = Vec::new();
        for p in plans {
            each_lookup(&p.steps, &mut |rel, base, mask| {
                if !base || self.loaded[rel] {
                    wanted.push((rel, mask));
                }
            });
        }
        wanted.sort_unstable();
        wanted.dedup();
        wanted.retain(|&(rel, mask)| !self.relations[rel].has_index(mask));
        let threads = self.options.threads.max(1);
        if threads < 2 || wanted.len() < 2 {
            for (rel, mask) in wanted {
                self.relations[rel].ensure_index(mask);
            }
            return;
        }
        let relations = &self.relations;
        let built = crate::exec::pool::map(threads, wanted.clone(), |(rel, mask)| {
            relations[rel].missing_index(mask)
        });
        for ((rel, mask), index) in wanted.into_iter().zip(built) {
            if let Some(index) = index {
                self.relations[rel].add_index(mask, index);
            }
        }
    }

    /// Reads base relations `rels` into memory, so joins probe an index instead of the
    /// source: several at once on the worker threads.
    pub(super) fn materialize(&mut self, rels: &[RelId]) -> Result<(), EvalError> {
        let source = self.dict.source();
        let ir = self.ir;
        let read = |rel: RelId, r: &mut Relation| -> Result<u64, EvalError> {
            let mut work = 0u64;
            let mut rows = Vec::new();
            source.scan(&ir.relations[rel].name, &mut |row| {
                rows.extend_from_slice(row);
                work += 1;
                ControlFlow::Continue(())
            })?;
            r.load(rows, work as usize);
            Ok(work)
        };
        let jobs: Vec<(RelId, &mut Relation)> = self
            .relations
            .iter_mut()
            .enumerate()
            .filter(|(rel, _)| rels.contains(rel) && !self.loaded[*rel])
            .collect();
        let threads = if jobs.len() > 1 {
            self.options.threads.max(1)
        } else {
            1
        };
        let mut work = 0;
        for r in crate::exec::pool::map(threads, jobs, |(rel, r)| read(rel, r)) {
            work += r?;
        }
        for &rel in rels {
            self.loaded[rel] = true;
        }
        self.budget.charge(work)
    }

    /// Reads into memory the base relations the plans read that are small, or that were
    /// probed, or will be this round, more than their size over [`PROBES_PER_READ`].
    pub(super) fn load_hot(&mut self, plans: &[Plan]) -> Result<(), EvalError> {
        let mut rels = Vec::new();
        for p in plans {
            each_lookup(&p.steps, &mut |rel, base, _| {
                if base {
                    rels.push(rel);
                }
            });
        }
        rels.sort_unstable();
        rels.dedup();
        // The probes this round will make at least: a base relation joined right after the
        // first step is looked up once per tuple that step yields. A base relation scanned
        // whole as the first step of a join counts as probed whole too: read into memory,
        // its scan is cut into tasks the threads share.
        let mut expected: FxHashMap<RelId, u64> = FxHashMap::default();
        for p in plans {
            let [
                Step::Atom {
                    rel: first,
                    base,
                    part,
                    mask,
                    ..
                },
                second,
                ..,
            ] = &p.steps[..]
            else {
                continue;
            };
            let yields = if !*base || self.loaded[*first] {
                let range = part_range(&self.relations[*first], *part);
                u64::from(range.end - range.start)
            } else if *mask == 0 {
                let rows = self.base_info.get(first).map_or(0, |i| i.rows);
                *expected.entry(*first).or_default() += rows;
                rows
            } else {
                continue;
            };
            if let Step::Atom {
                rel, base: true, ..
            }
            | Step::Neg {
                rel, base: true, ..
            } = second
            {
                *expected.entry(*rel).or_default() += yields;
            }
        }
        rels.retain(|&rel| {
            let rows = self.base_info.get(&rel).map_or(0, |i| i.rows);
            let probes =
                self.probes[rel].load(Ordering::Relaxed) + expected.get(&rel).copied().unwrap_or(0);
            !self.loaded[rel] && (rows <= EAGER_ROWS || probes > rows / PROBES_PER_READ)
        });
        if rels.is_empty() {
            return Ok(());
        }
        self.materialize(&rels)
    }
}

/// Calls `visit(relation, base, bound columns)` for every atom and negated atom of `steps`,
/// an aggregate's inner steps included.
fn each_lookup(steps: &[Step], visit: &mut impl FnMut(RelId, bool, Mask)) {
    for s in steps {
        match s {
            Step::Atom {
                rel, base, mask, ..
            }
            | Step::Neg {
                rel, base, mask, ..
            } => visit(*rel, *base, *mask),
            Step::Agg { inner, .. } => each_lookup(inner, visit),
            _ => {}
        }
    }
}
