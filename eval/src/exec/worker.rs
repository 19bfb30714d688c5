//! Workers: the join loops that run one plan over one slice of its first step, and the
//! per-round task runner that spreads those over threads. Each worker reads the round's
//! relations (immutable while it runs) and writes only its own [`Output`].

use std::ops::{ControlFlow, Range};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::builtins::{self, BuiltinError};
use crate::data::dict::Dict;
use crate::data::value::{Term, TermKind, Value};
use crate::exec::budget::{BATCH, Budget};
use crate::exec::delta::{INLINE, Output};
use crate::exec::engine::{EvalError, Task, part_range};
use crate::exec::index::{Entry, paired_column};
use crate::exec::relation::{KEY_COLUMNS, Mask, Relation};
use crate::exec::witness::{Premise, Word};
use crate::ir::{AggFunc, Arg, Builtin, CmpOp, HeadArg, Ir, RelId};
use crate::plan::{Col, Operand, Plan, Step};

/// What the workers read: shared, immutable during a round.
pub(crate) struct Ctx<'a, 's> {
    pub(crate) ir: &'a Ir,
    pub(crate) dict: &'a Dict<'s>,
    pub(crate) constants: &'a [Term],
    pub(crate) relations: &'a [Relation],
    pub(crate) budget: &'a Budget,
    pub(crate) witnesses: bool,
    pub(crate) regexes: Mutex<FxHashMap<String, Result<regex::Regex, regex::Error>>>,
    /// Base relations read into memory (then read from `relations` like derived ones).
    pub(crate) loaded: &'a [bool],
    /// Lookups made into each base relation through the source.
    pub(crate) probes: &'a [AtomicU64],
    /// Whether workers count runs and candidates per step.
    pub(crate) profile: bool,
    /// Work spent per rule.
    pub(crate) rule_work: &'a [AtomicU64],
    /// Per relation: whether the round's merge, not each task, drops the candidates the
    /// relation holds already ([`crate::exec::engine`]'s `late` choice).
    pub(crate) late: &'a [bool],
}

pub(crate) fn run_tasks(
    ctx: &Ctx<'_, '_>,
    plans: &[Plan],
    tasks: &[Task],
    threads: usize,
) -> Result<Vec<Output>, EvalError> {
    let run_one = |t: &Task| -> Result<Output, EvalError> {
        let p = &plans[t.plan];
        let mut w = Worker::for_plan(ctx, p);
        w.chunk = t.chunk.clone();
        w.emit_plan(p)?;
        w.flush_work()?;
        // Sort here, on the worker thread: the merge is then a merge of sorted runs.
        crate::data::radix::sort_by_key(&mut w.out.keys, |&k| k);
        w.out.keys.dedup();
        crate::data::radix::sort_by_key(&mut w.out.sorted, |e| e.0);
        w.out.sorted.dedup_by_key(|e| e.0);
        // And drop what the head holds already, in parallel: the merge then sees only keys
        // that are new to the relation (which cannot change during the round). Unless the
        // merge does it, once for all the tasks' keys.
        let early = !ctx.late.get(w.out.head).copied().unwrap_or(false);
        if early && !w.out.keys.is_empty() {
            ctx.relations[w.out.head].retain_absent(&mut w.out.keys, |&k| k);
        }
        if !w.out.sorted.is_empty() {
            // With witnesses (`sorted`) the tasks always filter: the merge never does.
            ctx.relations[w.out.head].retain_absent(&mut w.out.sorted, |e| e.0);
            if ctx.witnesses {
                w.out.compact();
            }
        }
        w.out.plan = t.plan;
        w.out.stats = std::mem::take(&mut w.stats);
        Ok(w.out)
    };
    crate::exec::pool::try_map(threads, tasks.len(), |i| run_one(&tasks[i]))
}

/// One worker's state while it runs a plan.
pub(crate) struct Worker<'c, 'a, 's> {
    pub(crate) ctx: &'c Ctx<'a, 's>,
    pub(crate) env: Vec<Term>,
    /// The fact matched at each body position, for witnesses.
    pub(crate) premises: Vec<Premise>,
    /// The base facts matched at each body position.
    pub(crate) base_rows: Vec<Vec<Term>>,
    /// Whether to record premises (not inside aggregates).
    pub(crate) record: bool,
    /// The slice of the first step's part this task covers.
    pub(crate) chunk: Option<Range<u32>>,
    /// Whether the steps running are the plan's own (the chunk and the profile apply to
    /// these), not an aggregate's inner steps (cleared while those run).
    pub(crate) top: bool,
    /// Per top-level step (and one past the last, for solutions): runs and candidates
    /// reached (when profiling).
    pub(crate) stats: Vec<[u64; 2]>,
    pub(crate) work: u64,
    /// The rule whose plan the worker runs (its work is charged to it).
    pub(crate) rule: usize,
    pub(crate) out: Output,
    /// The bytes of `out` charged to the memory budget so far.
    pub(crate) billed: u64,
}

pub(crate) type Done<'d, 'c, 'a, 's> =
    dyn FnMut(&mut Worker<'c, 'a, 's>) -> Result<(), EvalError> + 'd;

impl<'c, 'a, 's> Worker<'c, 'a, 's> {
    pub(crate) fn new(ctx: &'c Ctx<'a, 's>, vars: usize, body: usize) -> Self {
        Worker {
            ctx,
            env: vec![Term::ABSENT; vars],
            premises: vec![Premise::None; body],
            base_rows: vec![Vec::new(); body],
            record: ctx.witnesses,
            chunk: None,
            top: true,
            stats: Vec::new(),
            work: 0,
            rule: 0,
            out: Output::default(),
            billed: 0,
        }
    }

    /// A worker set up to run plan `p`: its rule's slots, its work charged to the rule, and
    /// its profile counters when profiling.
    pub(crate) fn for_plan(ctx: &'c Ctx<'a, 's>, p: &Plan) -> Self {
        let rule = &ctx.ir.rules[p.rule];
        let mut w = Worker::new(ctx, rule.vars, rule.body.len());
        w.rule = p.rule;
        if ctx.profile {
            w.stats = vec![[0; 2]; p.steps.len() + 1];
        }
        w
    }

    pub(crate) fn tick(&mut self) -> Result<(), EvalError> {
        self.work += 1;
        if self.work >= BATCH {
            self.flush_work()?;
        }
        Ok(())
    }

    pub(crate) fn flush_work(&mut self) -> Result<(), EvalError> {
        let w = std::mem::take(&mut self.work);
        if let Some(r) = self.ctx.rule_work.get(self.rule) {
            r.fetch_add(w, Ordering::Relaxed);
        }
        self.ctx.budget.charge(w)?;
        if self.ctx.budget.caps_memory() {
            // Room for the next batch (which emits at most a tuple per unit of work), its
            // bytes charged before it is reserved: the output's vectors grow here, after
            // the check, not unchecked while the batch emits.
            let arity = self
                .ctx
                .ir
                .relations
                .get(self.out.head)
                .map_or(1, |r| r.arity);
            let (room, bytes) = self.out.room_ahead(BATCH as usize, arity);
            let grown = bytes.saturating_sub(self.billed);
            self.ctx.budget.grow(grown)?;
            self.billed = self.billed.max(bytes);
            self.out.take_room(&room);
        }
        Ok(())
    }

    pub(crate) fn operand(&self, o: Operand) -> Term {
        match o {
            Operand::Var(v) => self.env[v],
            Operand::Const(c) => self.ctx.constants.get(c).copied().unwrap_or(Term::ABSENT),
        }
    }

    pub(crate) fn emit_plan(&mut self, p: &Plan) -> Result<(), EvalError> {
        let rule = &self.ctx.ir.rules[p.rule];
        self.out.head = rule.head;
        self.out.rule = p.rule as u32;
        self.out.stride = p.premises.len();
        self.out.arities = p
            .premises
            .iter()
            .map(|&pos| match &rule.body[pos] {
                crate::ir::Lit::Pos { rel, .. } => self.ctx.ir.relations[*rel].arity,
                _ => 0,
            })
            .collect();
        if let Some(join) = crate::exec::pair::PairJoin::of(self.ctx, p) {
            return self.pair_join(&join, p);
        }
        self.run(&p.steps, 0, &mut |w| w.emit(p))
    }

    /// Emits the head tuple of plan `p` for the current bindings (and premises).
    pub(crate) fn emit(&mut self, p: &Plan) -> Result<(), EvalError> {
        let ctx = self.ctx;
        let rule = &ctx.ir.rules[p.rule];
        let narrow = rule.args.len() <= 2;
        // Duplicates are dropped when the output is merged: probing the head relation
        // here, once per candidate, costs more than carrying them. A narrow tuple is
        // carried as its packed key alone.
        let mut key = 0u64;
        for a in &rule.args {
            let t = match a {
                HeadArg::Arg(Arg::Var(v)) => self.env[*v],
                HeadArg::Arg(Arg::Const(c)) => ctx.constants[*c],
                _ => Term::ABSENT,
            };
            if narrow {
                key = key << 32 | u64::from(t.0);
            } else {
                self.out.terms.push(t);
            }
        }
        if narrow && !ctx.witnesses {
            self.out.keys.push(key);
        }
        let k = self.out.count;
        self.out.count += 1;
        if !ctx.witnesses {
            return Ok(());
        }
        let inline = narrow && self.out.inline();
        let mut words = [Word::MISSING.raw(); INLINE];
        for (i, &pos) in p.premises.iter().enumerate() {
            let premise = self.premises[pos];
            let at = self.out.base_terms.len();
            if let Premise::Base { .. } = premise {
                self.out.base_terms.extend_from_slice(&self.base_rows[pos]);
            }
            let word = Word::encode(premise, at);
            if inline {
                words[i] = word.raw();
            } else {
                self.out.premises.push(word);
            }
        }
        if narrow {
            if !inline {
                words[0] = k as u32;
            }
            self.out.sorted.push((key, words));
        }
        Ok(())
    }

    /// Runs `steps[i..]` for the current bindings, calling `done` for each solution.
    pub(crate) fn run(
        &mut self,
        steps: &[Step],
        i: usize,
        done: &mut Done<'_, 'c, 'a, 's>,
    ) -> Result<(), EvalError> {
        let ctx = self.ctx;
        let top = self.top;
        if top && ctx.profile {
            // Runs of step i; a step's candidates that passed are the runs of the next.
            self.stats[i][0] += 1;
        }
        let Some(step) = steps.get(i) else {
            return done(self);
        };
        match step {
            Step::Atom {
                pos,
                rel,
                base,
                part,
                cols,
                mask,
            } => {
                if *base && !ctx.loaded[*rel] {
                    ctx.probes[*rel].fetch_add(1, Ordering::Relaxed);
                    return self.base_atom(steps, i, *pos, *rel, cols, done);
                }
                let r = &ctx.relations[*rel];
                let mut range = part_range(r, *part);
                if top
                    && i == 0
                    && let Some(c) = &self.chunk
                {
                    range = range.start.max(c.start)..range.end.min(c.end);
                }
                let at = (steps, i, *pos, *rel, cols.as_slice());
                if *mask == 0 {
                    return self.join(at, r, range, done);
                }
                let key = self.key(cols, *mask);
                let other = paired_column(r.arity(), *mask);
                for entries in r.lookup(*mask, key, range) {
                    match other {
                        Some(other) => self.join_pairs(at, other, entries, done)?,
                        None => self.join(at, r, entries.iter().map(|e| e[0]), done)?,
                    }
                }
                Ok(())
            }
            Step::Neg {
                rel,
                base,
                cols,
                mask,
            } => {
                self.tick()?;
                if !self.exists(*rel, *base, cols, *mask)? {
                    self.run(steps, i + 1, done)?;
                }
                Ok(())
            }
            Step::OneOf { var, bound, values } => {
                for &c in values {
                    let t = ctx.constants[c];
                    if *bound {
                        if self.env[*var] == t {
                            return self.run(steps, i + 1, done);
                        }
                    } else {
                        self.env[*var] = t;
                        self.run(steps, i + 1, done)?;
                    }
                }
                Ok(())
            }
            Step::Cmp { op, left, right } => {
                if self.compare(*op, self.operand(*left), self.operand(*right))? {
                    self.run(steps, i + 1, done)?;
                }
                Ok(())
            }
            Step::Builtin { builtin, args } => {
                let terms: Vec<Term> = args.iter().map(|a| self.operand(*a)).collect();
                if self.builtin(builtin, &terms)? {
                    self.run(steps, i + 1, done)?;
                }
                Ok(())
            }
            Step::Agg {
                result,
                result_bound,
                func,
                distinct,
                over,
                inner,
                locals,
            } => {
                let mut sols: FxHashSet<Vec<Term>> = FxHashSet::default();
                let record = std::mem::replace(&mut self.record, false);
                let top = std::mem::replace(&mut self.top, false);
                let inner_run = self.run(inner, 0, &mut |w| {
                    let mut s: Vec<Term> = locals.iter().map(|&v| w.env[v]).collect();
                    s.push(w.env[*over]);
                    sols.insert(s);
                    Ok(())
                });
                self.top = top;
                inner_run?;
                self.record = record;
                let values: Vec<Term> = sols.into_iter().map(|s| s[s.len() - 1]).collect();
                let t = aggregate(ctx, *func, *distinct, values)?;
                if *result_bound {
                    if self.env[*result] == t {
                        self.run(steps, i + 1, done)?;
                    }
                } else {
                    self.env[*result] = t;
                    self.run(steps, i + 1, done)?;
                }
                Ok(())
            }
        }
    }

    /// Matches step `i` (an atom at body position `pos` over in-memory relation `rel`, read
    /// as `r`) against the tuples `ids`, running the steps after it for each that binds.
    fn join(
        &mut self,
        (steps, i, pos, rel, cols): (&[Step], usize, usize, RelId, &[Col]),
        r: &Relation,
        ids: impl Iterator<Item = u32>,
        done: &mut Done<'_, 'c, 'a, 's>,
    ) -> Result<(), EvalError> {
        for id in ids {
            self.tick()?;
            if self.top && self.ctx.profile {
                self.stats[i][1] += 1;
            }
            if self.bind(cols, r.tuple(id)) {
                if self.record {
                    self.note(pos, rel, id);
                }
                self.run(steps, i + 1, done)?;
            }
        }
        Ok(())
    }

    /// Like [`Worker::join`], for a binary relation probed on one column: each entry
    /// carries the other column's term, bound without reading the tuple.
    fn join_pairs(
        &mut self,
        (steps, i, pos, rel, cols): (&[Step], usize, usize, RelId, &[Col]),
        other: usize,
        entries: &[Entry],
        done: &mut Done<'_, 'c, 'a, 's>,
    ) -> Result<(), EvalError> {
        let col = cols[other];
        for &[id, term] in entries {
            self.tick()?;
            if self.top && self.ctx.profile {
                self.stats[i][1] += 1;
            }
            if !self.match_column(col, Term(term)) {
                continue;
            }
            if self.record {
                self.note(pos, rel, id);
            }
            self.run(steps, i + 1, done)?;
        }
        Ok(())
    }

    /// Matches `term` against column use `col`, binding it when `col` binds. Returns
    /// whether it matches.
    #[inline]
    pub(crate) fn match_column(&mut self, col: Col, term: Term) -> bool {
        match col {
            Col::Bind(v) => self.env[v] = term,
            Col::Same(v) | Col::Bound(v) => return self.env[v] == term,
            Col::Const(k) => return self.ctx.constants[k] == term,
            Col::Wild => {}
        }
        true
    }

    /// Records the fact matched at body position `pos`, for the witness: tuple `id` of the
    /// in-memory relation `rel` (derived, or a base relation read into memory).
    pub(crate) fn note(&mut self, pos: usize, rel: RelId, id: u32) {
        self.premises[pos] = Premise::Tuple {
            rel: rel as u32,
            id,
        };
    }

    /// The index key of the bound columns (the first [`KEY_COLUMNS`] of `mask`).
    pub(crate) fn key(&self, cols: &[Col], mask: Mask) -> u128 {
        let mut key = 0u128;
        let mut m = mask;
        let mut n = 0;
        while m != 0 && n < KEY_COLUMNS {
            let c = m.trailing_zeros() as usize;
            m &= m - 1;
            n += 1;
            let t = match cols[c] {
                Col::Const(k) => self.ctx.constants[k],
                Col::Bound(v) | Col::Same(v) => self.env[v],
                _ => Term::ABSENT,
            };
            key = key << 32 | u128::from(t.0);
        }
        key
    }

    /// Checks a tuple against the columns that are bound but not in the index key, and
    /// binds the free ones. Returns whether it matches.
    pub(crate) fn bind(&mut self, cols: &[Col], tuple: &[Term]) -> bool {
        let mut keyed = 0;
        for (c, col) in cols.iter().enumerate() {
            match *col {
                Col::Const(k) => {
                    keyed += 1;
                    if keyed > KEY_COLUMNS && tuple[c] != self.ctx.constants[k] {
                        return false;
                    }
                }
                Col::Bound(v) => {
                    keyed += 1;
                    if keyed > KEY_COLUMNS && tuple[c] != self.env[v] {
                        return false;
                    }
                }
                Col::Bind(v) => self.env[v] = tuple[c],
                Col::Same(v) => {
                    if tuple[c] != self.env[v] {
                        return false;
                    }
                }
                Col::Wild => {}
            }
        }
        true
    }

    pub(crate) fn bound_terms(&self, cols: &[Col]) -> Vec<(usize, Term)> {
        cols.iter()
            .enumerate()
            .filter_map(|(c, col)| match *col {
                Col::Const(k) => Some((c, self.ctx.constants[k])),
                Col::Bound(v) => Some((c, self.env[v])),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn base_atom(
        &mut self,
        steps: &[Step],
        i: usize,
        pos: usize,
        rel: RelId,
        cols: &[Col],
        done: &mut Done<'_, 'c, 'a, 's>,
    ) -> Result<(), EvalError> {
        let ctx = self.ctx;
        let bound = self.bound_terms(cols);
        let name = &ctx.ir.relations[rel].name;
        let mut failure = None;
        let top = self.top && ctx.profile;
        ctx.dict.source().lookup(name, &bound, &mut |row| {
            let r = (|| {
                self.tick()?;
                if top {
                    self.stats[i][1] += 1;
                }
                // Bound columns were matched by the lookup; check repeats and bind.
                for (c, col) in cols.iter().enumerate() {
                    match *col {
                        Col::Bind(v) => self.env[v] = row[c],
                        Col::Same(v) if row[c] != self.env[v] => return Ok(()),
                        _ => {}
                    }
                }
                if self.record {
                    self.premises[pos] = Premise::Base {
                        rel: rel as u32,
                        start: 0,
                    };
                    self.base_rows[pos].clear();
                    self.base_rows[pos].extend_from_slice(row);
                }
                self.run(steps, i + 1, done)
            })();
            match r {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    failure = Some(e);
                    ControlFlow::Break(())
                }
            }
        })?;
        failure.map_or(Ok(()), Err)
    }

    pub(crate) fn exists(
        &mut self,
        rel: RelId,
        base: bool,
        cols: &[Col],
        mask: Mask,
    ) -> Result<bool, EvalError> {
        let ctx = self.ctx;
        // Repeated existential variables: the matching tuple's columns must agree.
        let agree = |t: &[Term]| {
            cols.iter().enumerate().all(|(c, col)| match *col {
                Col::Same(v) => cols
                    .iter()
                    .position(|x| *x == Col::Bind(v))
                    .is_none_or(|first| t[first] == t[c]),
                _ => true,
            })
        };
        if base && !ctx.loaded[rel] {
            ctx.probes[rel].fetch_add(1, Ordering::Relaxed);
            let bound = self.bound_terms(cols);
            let mut found = false;
            ctx.dict
                .source()
                .lookup(&ctx.ir.relations[rel].name, &bound, &mut |row| {
                    if agree(row) {
                        found = true;
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                })?;
            return Ok(found);
        }
        let r = &ctx.relations[rel];
        let bound = self.bound_terms(cols);
        if mask == 0 {
            return Ok(r.iter().any(|(_, t)| agree(t)));
        }
        let key = self.key(cols, mask);
        Ok(r.lookup(mask, key, 0..r.len()).flatten().any(|e| {
            let t = r.tuple(e[0]);
            bound.iter().all(|&(c, x)| t[c] == x) && agree(t)
        }))
    }

    pub(crate) fn compare(&self, op: CmpOp, a: Term, b: Term) -> Result<bool, EvalError> {
        if a == Term::ABSENT || b == Term::ABSENT {
            return Ok(false);
        }
        if matches!(op, CmpOp::Eq | CmpOp::Ne) {
            return Ok((a == b) == (op == CmpOp::Eq));
        }
        Ok(match (a.kind(), b.kind()) {
            (TermKind::Integer(x), TermKind::Integer(y)) => builtins::holds(op, x.cmp(&y)),
            _ => {
                let (x, y) = (self.ctx.dict.value(a)?, self.ctx.dict.value(b)?);
                builtins::compare(op, &x, &y)
            }
        })
    }

    pub(crate) fn builtin(&self, b: &Builtin, args: &[Term]) -> Result<bool, EvalError> {
        if let Builtin::Absent = b {
            return Ok(args.first() == Some(&Term::ABSENT));
        }
        let text = |t: Term| -> Result<Option<String>, EvalError> {
            Ok(match self.ctx.dict.value(t)? {
                Value::Text(s) => Some(s),
                _ => None,
            })
        };
        let (Some(s), Some(p)) = (text(args[0])?, text(args[1])?) else {
            return Ok(false);
        };
        Ok(builtins::text_holds(b, &s, &p, |p| {
            let mut cache = self
                .ctx
                .regexes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let re = cache
                .entry(p.to_owned())
                .or_insert_with(|| regex::Regex::new(p));
            match re {
                Ok(re) => Ok(re.is_match(&s)),
                Err(e) => Err(BuiltinError::Regex(e.clone())),
            }
        })?)
    }
}

/// The aggregate of `values` (one per distinct solution), as a term.
pub(crate) fn aggregate(
    ctx: &Ctx<'_, '_>,
    func: AggFunc,
    distinct: bool,
    mut values: Vec<Term>,
) -> Result<Term, EvalError> {
    if distinct {
        values.sort_unstable();
        values.dedup();
    }
    let number = |n: f64| ctx.dict.term(&Value::Number(builtins::number(n)));
    Ok(match func {
        AggFunc::Count => number(values.len() as f64)?,
        AggFunc::Sum => {
            let values = values
                .into_iter()
                .map(|t| ctx.dict.value(t))
                .collect::<Result<Vec<_>, _>>()?;
            number(builtins::sum(values)?)?
        }
        AggFunc::Min | AggFunc::Max => {
            let items = values
                .into_iter()
                .map(|t| ctx.dict.value(t).map(|v| (v, t)));
            builtins::extreme(func == AggFunc::Min, items)?.map_or(Term::ABSENT, |(_, t)| t)
        }
        AggFunc::List => return Err(builtins::list_outside_goal().into()),
    })
}
