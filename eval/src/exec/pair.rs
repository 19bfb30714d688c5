//! The pair join: a fast path for the commonest plan of a recursive program, a scan of one
//! binary relation whose every tuple probes another binary relation's index on one column
//! (`tc(?x, ?y), e(?y, ?z)`, and each of Andersen points-to's rules once split into join
//! intermediates).
//!
//! [`Worker::run`] interprets a plan one step at a time, recursing into the next step and
//! ending each solution in a callback. For this plan shape the pair join does the same work
//! in one loop: it binds the scanned tuple's terms, probes, and emits, without the
//! recursion, the callback or the per-probe search for the index. And it looks a key up
//! once for a stretch of scanned tuples sharing it (a delta sorted by its first column and
//! probing on that column meets each key in one stretch).
//!
//! Nothing observable differs from the generic path: the same candidates in the same
//! order, the same work units ticked at the same points (so a budget stops at the same
//! place), the same profile counts and the same premises for witnesses. The engine's
//! property tests against the naive oracle and the golden work counts run through it.

use crate::data::value::Term;
use crate::exec::delta::INLINE;
use crate::exec::engine::{EvalError, part_range};
use crate::exec::index::{Entry, paired_column, trim};
use crate::exec::relation::Mask;
use crate::exec::witness::Word;
use crate::exec::worker::{Ctx, Worker};
use crate::ir::{Arg, HeadArg, RelId, VarId};
use crate::plan::{Col, Part, Plan, Step};

/// A plan of the pair join's shape, taken apart.
#[derive(Debug)]
pub(crate) struct PairJoin {
    /// The scanned literal: its body position, relation and part.
    scan: (usize, RelId, Part),
    /// The variable each of the scanned tuple's two columns binds (`None`: a wildcard).
    binds: [Option<VarId>; 2],
    /// The probed literal: its body position, relation and part.
    probe: (usize, RelId, Part),
    /// The probed index (one column bound).
    mask: Mask,
    /// The variable (bound by the scan) whose term is the probe's key.
    key: VarId,
    /// How the probed relation's other column is used.
    other: Col,
    /// The head's arguments, when the head has at most two and each is a variable or a
    /// constant: its packed key is then made here ([`Worker::emit`] makes the same).
    head: Option<Vec<Source>>,
}

/// Where a head argument's term comes from.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// A variable's binding.
    Var(VarId),
    /// A constant.
    Term(Term),
}

impl PairJoin {
    /// The pair join of plan `p`, when `p` has its shape: two steps over in-memory
    /// relations of two columns, the first scanned whole (each column binding its own
    /// variable or a wildcard), the second probed on one column with a variable the first
    /// bound.
    pub(crate) fn of(ctx: &Ctx<'_, '_>, p: &Plan) -> Option<PairJoin> {
        let [first, second] = p.steps.as_slice() else {
            return None;
        };
        let in_memory = |rel: RelId, base: bool| {
            (!base || ctx.loaded.get(rel).copied().unwrap_or(false))
                && ctx.relations.get(rel).is_some_and(|r| r.arity() == 2)
        };
        let (scan_pos, scan_rel, scan_base, scan_part, scan_cols, 0) = atom(first)? else {
            return None;
        };
        if !in_memory(scan_rel, scan_base) {
            return None;
        }
        let mut binds = [None; 2];
        for (slot, col) in binds.iter_mut().zip(scan_cols) {
            *slot = match *col {
                Col::Bind(v) => Some(v),
                Col::Wild => None,
                _ => return None,
            };
        }
        let (pos, rel, base, part, cols, mask) = atom(second)?;
        if !in_memory(rel, base) {
            return None;
        }
        let other = paired_column(2, mask)?;
        let key = match cols.get(1 - other) {
            Some(&Col::Bound(v)) if binds.contains(&Some(v)) => v,
            _ => return None,
        };
        let rule = &ctx.ir.rules[p.rule];
        let head = (rule.args.len() <= 2)
            .then(|| {
                rule.args
                    .iter()
                    .map(|a| match a {
                        HeadArg::Arg(Arg::Var(v)) => Some(Source::Var(*v)),
                        HeadArg::Arg(Arg::Const(c)) => {
                            ctx.constants.get(*c).map(|&t| Source::Term(t))
                        }
                        _ => None,
                    })
                    .collect::<Option<Vec<Source>>>()
            })
            .flatten();
        Some(PairJoin {
            head,
            scan: (scan_pos, scan_rel, scan_part),
            binds,
            probe: (pos, rel, part),
            mask,
            key,
            other: *cols.get(other)?,
        })
    }
}

/// An atom step's body position, relation, whether it is a base relation, part, columns
/// and mask.
type AtomParts<'p> = (usize, RelId, bool, Part, &'p [Col], Mask);

/// The parts of `step`, when it is an atom.
fn atom(step: &Step) -> Option<AtomParts<'_>> {
    match step {
        Step::Atom {
            pos,
            rel,
            base,
            part,
            cols,
            mask,
        } => Some((*pos, *rel, *base, *part, cols, *mask)),
        _ => None,
    }
}

impl Worker<'_, '_, '_> {
    /// The packed key of a narrow head whose arguments come from `sources`.
    fn pack(&self, sources: &[Source]) -> u64 {
        sources.iter().fold(0u64, |k, s| {
            let t = match *s {
                Source::Var(v) => self.env[v],
                Source::Term(t) => t,
            };
            k << 32 | u64::from(t.0)
        })
    }

    /// Runs plan `p`, of the shape `join` took apart, emitting each solution: what
    /// [`Worker::run`] would do, step for step.
    pub(crate) fn pair_join(&mut self, join: &PairJoin, p: &Plan) -> Result<(), EvalError> {
        let ctx = self.ctx;
        let profile = ctx.profile;
        let (scan_pos, scan_rel, scan_part) = join.scan;
        let (probe_pos, probe_rel, probe_part) = join.probe;
        let scanned = &ctx.relations[scan_rel];
        let probed = &ctx.relations[probe_rel];
        let mut range = part_range(scanned, scan_part);
        if let Some(c) = &self.chunk {
            range = range.start.max(c.start)..range.end.min(c.end);
        }
        let probe_range = part_range(probed, probe_part);
        let Some(index) = probed.index(join.mask) else {
            // Every planned probe has its index; without one, the step interpreter.
            return self.run(&p.steps, 0, &mut |w| w.emit(p));
        };
        // A settled index is one grouping: its slice is read directly.
        let dense = index.dense();
        // Without witnesses, a narrow head's key is packed here from its sources.
        let head = join.head.as_deref().filter(|_| !ctx.witnesses);
        // With witnesses, a narrow head of a rule whose premises are the two literals
        // carries their tuple ids inline ([`Worker::emit`] makes the same words).
        let inline = join.head.as_deref().filter(|_| {
            self.record
                && p.premises.len() <= INLINE
                && p.premises.iter().all(|&q| q == scan_pos || q == probe_pos)
        });
        if profile {
            self.stats[0][0] += 1;
        }
        // The entries of the last key looked up, one slice per index layer.
        let mut last = None;
        let mut found: Vec<&[Entry]> = Vec::new();
        for id in range {
            self.tick()?;
            let tuple = scanned.tuple(id);
            for (bind, &term) in join.binds.iter().zip(tuple) {
                if let Some(v) = *bind {
                    self.env[v] = term;
                }
            }
            if self.record {
                self.note(scan_pos, scan_rel, id);
            }
            if profile {
                self.stats[0][1] += 1;
                self.stats[1][0] += 1;
            }
            let key = self.env[join.key];
            if last != Some(key) {
                found.clear();
                match dense {
                    Some(g) => {
                        let entries = trim(g.get(key.0), &probe_range);
                        if !entries.is_empty() {
                            found.push(entries);
                        }
                    }
                    None => found.extend(index.lookup(u128::from(key.0), probe_range.clone())),
                }
                last = Some(key);
            }
            for entries in &found {
                for &[probed_id, term] in *entries {
                    self.tick()?;
                    if profile {
                        self.stats[1][1] += 1;
                    }
                    if !self.match_column(join.other, Term(term)) {
                        continue;
                    }
                    if self.record {
                        self.note(probe_pos, probe_rel, probed_id);
                    }
                    if profile {
                        self.stats[2][0] += 1;
                    }
                    if let Some(sources) = head {
                        let key = self.pack(sources);
                        self.out.keys.push(key);
                        self.out.count += 1;
                    } else if let Some(sources) = inline {
                        let key = self.pack(sources);
                        let mut words = [Word::MISSING.raw(); INLINE];
                        for (word, &q) in words.iter_mut().zip(&p.premises) {
                            let premise = if q == scan_pos { id } else { probed_id };
                            *word = Word::tuple(premise).raw();
                        }
                        self.out.sorted.push((key, words));
                        self.out.count += 1;
                    } else {
                        self.emit(p)?;
                    }
                }
            }
        }
        Ok(())
    }
}
