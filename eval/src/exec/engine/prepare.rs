//! Preparing a round: the base relations it reads into memory (small ones, and those it
//! will probe heavily) and the indexes its steps probe, several of each at once on the
//! worker threads.

use std::ops::ControlFlow;
use std::sync::atomic::Ordering;

use rustc_hash::FxHashMap;

use super::{EAGER_ROWS, EvalError, Evaluator, PROBES_PER_READ, part_range};
use crate::data::value::Term;
use crate::exec::relation::Mask;
use crate::ir::RelId;
use crate::plan::{Plan, Step};

/// A base relation of at least this many facts is read in parts, one a thread.
const SPLIT_ROWS: u64 = 1 << 17;

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
    /// source: several at once on the worker threads, and a large one in as many parts as
    /// there are threads.
    pub(super) fn materialize(&mut self, rels: &[RelId]) -> Result<(), EvalError> {
        let source = self.dict.source();
        let ir = self.ir;
        let threads = self.options.threads.max(1);
        let mut todo: Vec<RelId> = rels
            .iter()
            .copied()
            .filter(|&rel| !self.loaded[rel])
            .collect();
        todo.sort_unstable();
        todo.dedup();
        let mut jobs: Vec<(RelId, usize, usize)> = Vec::new();
        for &rel in &todo {
            let rows = self.base_info.get(&rel).map_or(0, |i| i.rows);
            let parts = if rows >= SPLIT_ROWS { threads } else { 1 };
            jobs.extend((0..parts).map(|part| (rel, part, parts)));
        }
        let helpers = threads.min(jobs.len()).max(1);
        // A part's facts, and how many (a relation of no columns has facts but no terms).
        let read = |(rel, part, parts): (RelId, usize, usize)| -> Result<_, EvalError> {
            let name = &ir.relations[rel].name;
            match ir.relations[rel].arity {
                0 => {
                    let mut n = 0usize;
                    source.scan(name, &mut |_| {
                        n += 1;
                        ControlFlow::Continue(())
                    })?;
                    Ok((Vec::new(), n))
                }
                arity => {
                    let t = source.read_part(name, part, parts)?;
                    let n = t.len() / arity;
                    Ok((t, n))
                }
            }
        };
        let read = crate::exec::pool::map(helpers, jobs.clone(), read);
        let mut tuples: FxHashMap<RelId, (Vec<Term>, usize)> = FxHashMap::default();
        let mut work = 0u64;
        for ((rel, _, _), part) in jobs.into_iter().zip(read) {
            let (part, n) = part?;
            work += n as u64;
            let whole = tuples.entry(rel).or_default();
            if whole.0.is_empty() {
                whole.0 = part;
            } else {
                whole.0.extend_from_slice(&part);
            }
            whole.1 += n;
        }
        for rel in todo {
            let (t, n) = tuples.remove(&rel).unwrap_or_default();
            self.relations[rel].load(t, n);
            self.loaded[rel] = true;
        }
        self.budget.charge(work)
    }

    /// Reads into memory the base relations the plans read that are small, or that were
    /// probed, or will be this round, more than their size over [`PROBES_PER_READ`].
    pub(super) fn load_hot(&mut self, plans: &[Plan]) -> Result<(), EvalError> {
        self.note_unindexed(plans);
        let rels = self.hot(plans);
        if rels.is_empty() {
            return Ok(());
        }
        self.materialize(&rels)
    }

    /// The base relations [`Evaluator::load_hot`] reads into memory before a round of
    /// `plans`.
    pub(super) fn hot(&self, plans: &[Plan]) -> Vec<RelId> {
        let mut rels = Vec::new();
        for p in plans {
            each_lookup(&p.steps, &mut |rel, base, _| {
                if base {
                    rels.push(rel);
                }
            });
        }
        // Base relations looked up, once for each tuple of a step before, by columns no
        // index serves: each such lookup reads the whole relation, so it is read into
        // memory once instead. A plan's first step looks up once: the store reads the
        // relation and keeps the rows that match (10M integer pairs: 0.37 s, where reading
        // them into memory and indexing the column took 0.89 s).
        let mut unserved = Vec::new();
        for p in plans {
            let Some((first, rest)) = p.steps.split_first() else {
                continue;
            };
            // A first step that is an aggregate looks up once for each tuple of its inner
            // steps.
            let inner: &[Step] = match first {
                Step::Agg { inner, .. } => inner,
                _ => &[],
            };
            for steps in [inner, rest] {
                each_lookup(steps, &mut |rel, base, mask| {
                    if base && mask != 0 && !self.serves(rel, mask) {
                        unserved.push(rel);
                    }
                });
            }
        }
        rels.sort_unstable();
        rels.dedup();
        // The probes this round will make at least: a base relation joined right after the
        // first step, or after tests of what it bound (a demand's magic relation, a
        // comparison), is looked up once per tuple that step yields (the tests taken to
        // pass). A base relation scanned
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
                rest @ ..,
            ] = &p.steps[..]
            else {
                continue;
            };
            let Some(second) = rest.iter().find(|s| !is_test(s)) else {
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
            !self.loaded[rel]
                && (rows <= EAGER_ROWS
                    || probes > rows / PROBES_PER_READ
                    || unserved.contains(&rel))
        });
        rels
    }

    /// Notes each lookup of a base relation in `plans` that binds columns none of which
    /// is indexed ([`super::Evaluation::unindexed`]): the relation is read whole for it.
    fn note_unindexed(&mut self, plans: &[Plan]) {
        let mut found = Vec::new();
        for p in plans {
            each_lookup(&p.steps, &mut |rel, base, mask| {
                if base && mask != 0 && !self.serves(rel, mask) {
                    found.push((rel, mask));
                }
            });
        }
        for f in found {
            if !self.unindexed.contains(&f) {
                self.unindexed.push(f);
            }
        }
    }

    /// Whether an index of base relation `rel` serves a lookup binding the columns of
    /// `mask`: one of them is indexed ([`crate::RelationInfo::unindexed`]).
    fn serves(&self, rel: RelId, mask: Mask) -> bool {
        let Some(info) = self.base_info.get(&rel) else {
            return true;
        };
        (0..info.arity()).any(|c| mask & (1 << c) != 0 && info.indexed(c))
    }
}

/// Whether a step only tests what the steps before it bound, reading nothing from the
/// source: an in-memory atom whose columns are all bound, a comparison, a builtin.
fn is_test(step: &Step) -> bool {
    match step {
        Step::Atom {
            base: false,
            cols,
            mask,
            ..
        } => mask.count_ones() as usize == cols.len(),
        Step::Cmp { .. } | Step::Builtin { .. } | Step::OneOf { bound: true, .. } => true,
        _ => false,
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
