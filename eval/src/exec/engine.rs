//! The evaluator: strata in order, semi-naive rounds for recursive ones, each round's work
//! split into tasks that worker threads run, with results independent of the thread count.
//!
//! Like datafrog, each derived relation has stable, recent and newest tuples
//! ([`crate::exec::relation`]). A round runs every rule once per body literal of its own stratum,
//! that literal reading only the recent tuples (the delta), literals written before it every
//! visible tuple and literals after it only the stable ones; what the round derives becomes
//! the next delta. The delta of the first step is cut into fixed-size chunks, one task each;
//! tasks' outputs are merged in task order, so tuple ids, witnesses and work are the same
//! with one thread or many.

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::data::dict::Dict;
use crate::data::source::FactSource;
use crate::data::value::Term;
use crate::exec::budget::{BATCH, Budget, Cancel, Progress};
use crate::exec::delta::{Candidate, INLINE, Output};
use crate::exec::relation::{Mask, Relation};
use crate::exec::witness::{Witnesses, Word};
use crate::exec::worker::{Ctx, Worker, aggregate, run_tasks};
use crate::ir::{Arg, HeadArg, Ir, RelId, RelKind};
use crate::link::strata::{Stratum, Unstratifiable, stratify};
use crate::plan::{Part, Plan, Sizes, Step, plan};

mod closure;
mod error;
mod prepare;

pub use error::{EvalError, MemoryUse, RelationUse};

/// The fewest tuples of the first step's part per task.
pub const CHUNK: u32 = 2048;

/// How to evaluate.
#[derive(Clone, Debug)]
pub struct Options {
    /// Worker threads (at least 1).
    pub threads: usize,
    /// Record a derivation per derived tuple, for witnesses.
    pub witnesses: bool,
    /// The most work units the evaluation may spend.
    pub max_work: Option<u64>,
    /// The longest the evaluation may take.
    pub timeout: Option<Duration>,
    /// When the call began: the timeout counts from it, so that parsing, checking and
    /// rewriting the program spend the same time as evaluating it. `None`: from when the
    /// evaluation begins.
    pub started: Option<Instant>,
    /// Stops the evaluation when cancelled: checked where the deadline is, at every batch
    /// of a worker's work and between rounds.
    pub cancel: Cancel,
    /// Counts the work, rounds and facts as the evaluation goes (for progress reports).
    pub progress: Progress,
    /// The most bytes the evaluation may hold in its derived relations, their indexes, the
    /// witnesses' derivations and the tuples a round derived but has not merged yet; past
    /// it the evaluation stops with [`EvalError::MemoryLimit`] and drops all of them.
    /// Checked where the work budget is (each batch of a worker's work) and after every
    /// round. `None`: no cap (the library's default; the application sets one).
    pub max_memory: Option<u64>,
    /// Count, per rule and literal, runs and candidates (for `explain`).
    pub profile: bool,
    /// Compute a closure wanted without witnesses by a search from its sources (the
    /// default; see `exec/engine/closure.rs`). Off, every closure runs in rounds of joins,
    /// as it does with witnesses: the two can then be compared.
    pub search: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
            witnesses: true,
            max_work: None,
            timeout: None,
            started: None,
            cancel: Cancel::new(),
            progress: Progress::new(),
            max_memory: None,
            profile: false,
            search: true,
        }
    }
}

/// A finished evaluation: every derived relation, with derivations when asked for.
pub struct Evaluation<'s> {
    /// The derived relations, by [`RelId`] (base relations have an empty placeholder).
    pub relations: Vec<Relation>,
    /// Derivations, when [`Options::witnesses`] was set.
    pub witnesses: Option<Witnesses>,
    /// Work spent.
    pub work: u64,
    /// The dictionary the evaluation used (values of the terms in its relations).
    pub dict: Dict<'s>,
    /// Constants as terms.
    pub constants: Vec<Term>,
    /// Rounds run, over all strata.
    pub rounds: u64,
    /// Per (rule, body position), what the literal did (empty unless profiling).
    pub profile: Vec<((usize, usize), LiteralProfile)>,
    /// Which base relations were read into memory whole.
    pub loaded: Vec<bool>,
    /// Lookups made through the source, per base relation.
    pub probes: Vec<u64>,
    /// Per relation, the sources searched when it was computed as a closure by search
    /// (`None`: not searched).
    pub searched: Vec<Option<u64>>,
    /// Each lookup of a base relation that bound columns none of which has an index
    /// ([`crate::RelationInfo::unindexed`]), so read the relation whole: the relation and
    /// the columns it bound, ascending, once each.
    pub unindexed: Vec<(RelId, Vec<usize>)>,
}

/// Evaluates every rule of `ir` against `source`.
pub fn evaluate<'s>(
    ir: &Ir,
    source: &'s dyn FactSource,
    options: &Options,
) -> Result<Evaluation<'s>, EvalError> {
    let strata =
        stratify(ir).map_err(
            |Unstratifiable { cycle, negation }| EvalError::Unstratifiable {
                cycle: cycle
                    .iter()
                    .map(|&r| ir.relations[r].name.clone())
                    .collect(),
                negation,
            },
        )?;
    let dict = Dict::new(source);
    let constants = ir
        .constants
        .iter()
        .map(|v| dict.term(v))
        .collect::<Result<Vec<_>, _>>()?;
    let budget = Budget::new(
        options.max_work,
        options.timeout,
        options.started,
        options.cancel.clone(),
        options.max_memory,
        options.progress.clone(),
    );
    // A call whose time went to checking and rewriting stops before it evaluates.
    budget.check_time()?;
    let mut base_info = FxHashMap::default();
    for (i, r) in ir.relations.iter().enumerate() {
        if r.kind == RelKind::Base
            && let Some(info) = source.relation(&r.name)?
        {
            base_info.insert(i, info);
        }
    }
    let mut ev = Evaluator {
        ir,
        dict: &dict,
        constants: &constants,
        budget: &budget,
        options,
        relations: ir
            .relations
            .iter()
            .map(|r| {
                let relation = Relation::new(r.arity);
                if options.witnesses {
                    relation.keeping_runs()
                } else {
                    relation
                }
            })
            .collect(),
        witnesses: options.witnesses.then(|| Witnesses::new(ir)),
        base_info,
        rounds: 0,
        loaded: vec![false; ir.relations.len()],
        probes: (0..ir.relations.len()).map(|_| AtomicU64::new(0)).collect(),
        profile: FxHashMap::default(),
        rule_work: (0..ir.rules.len()).map(|_| AtomicU64::new(0)).collect(),
        late: vec![false; ir.relations.len()],
        searched: vec![None; ir.relations.len()],
        unindexed: Vec::new(),
    };
    for stratum in &strata {
        if let Err(e) = ev.stratum(stratum) {
            return Err(ev.annotate(e));
        }
    }
    let Evaluator {
        relations,
        witnesses,
        rounds,
        loaded,
        probes,
        profile,
        searched,
        unindexed,
        ..
    } = ev;
    let mut profile: Vec<((usize, usize), LiteralProfile)> = profile.into_iter().collect();
    profile.sort_unstable_by_key(|(k, _)| *k);
    Ok(Evaluation {
        relations,
        witnesses,
        work: budget.spent(),
        dict,
        constants,
        rounds,
        profile,
        loaded,
        probes: probes.into_iter().map(AtomicU64::into_inner).collect(),
        searched,
        unindexed: unindexed
            .into_iter()
            .map(|(rel, mask)| (rel, (0..64).filter(|c| mask & (1 << c) != 0).collect()))
            .collect(),
    })
}

struct Evaluator<'a, 's> {
    ir: &'a Ir,
    dict: &'a Dict<'s>,
    constants: &'a [Term],
    budget: &'a Budget,
    options: &'a Options,
    relations: Vec<Relation>,
    witnesses: Option<Witnesses>,
    base_info: FxHashMap<RelId, crate::data::source::RelationInfo>,
    rounds: u64,
    loaded: Vec<bool>,
    probes: Vec<AtomicU64>,
    profile: FxHashMap<(usize, usize), LiteralProfile>,
    /// Work spent per rule, for budget errors.
    rule_work: Vec<AtomicU64>,
    /// Per relation: whether this round's merge, not its tasks, drops the candidates the
    /// relation holds already ([`late_next`]).
    late: Vec<bool>,
    /// Per relation, the sources searched if it was a closure by search.
    searched: Vec<Option<u64>>,
    /// Lookups of base relations no index served, by relation and columns bound.
    unindexed: Vec<(RelId, crate::plan::Mask)>,
}

/// What one literal of one rule did, over every variant and round (with
/// [`Options::profile`]). The entry at position `usize::MAX` is the rule itself: its runs
/// are the plans run, its `passed` the solutions found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiteralProfile {
    /// Times the literal was reached with a binding of the literals before it.
    pub runs: u64,
    /// Candidate tuples it examined (for a filter: its runs).
    pub reached: u64,
    /// Candidates that passed it.
    pub passed: u64,
}

/// Base relations this small are read into memory before a stratum that reads them.
pub const EAGER_ROWS: u64 = 1 << 16;

/// A base relation probed (or about to be) more than its rows over this is read into
/// memory. A probe of the store costs what reading some 15 to 50 of its rows in a scan
/// does (3 to 10 µs a probe against 0.2 µs a row, `imports` of the generator's graph at 1M
/// and 10M edges); reading the relation once the probes have cost about what the read
/// will (ski rental), a walk that goes on to probe most of it pays at most about twice
/// the cheaper of the two. An eighth, as before, let a reverse reach probe the store
/// until it had cost several reads, then read it anyway.
pub const PROBES_PER_READ: u64 = 512;

impl Sizes for Evaluator<'_, '_> {
    fn estimate(&self, rel: RelId, mask: Mask) -> Option<u64> {
        if let Some(info) = self.base_info.get(&rel) {
            let d = (0..info.arity())
                .filter(|c| mask & (1 << c) != 0)
                .map(|c| info.distinct.get(c).copied().unwrap_or(1).max(1))
                .max()
                .unwrap_or(1);
            return Some(info.rows / d);
        }
        let r = &self.relations[rel];
        if r.is_empty() {
            return None;
        }
        Some(if mask == 0 { u64::from(r.len()) } else { 1 })
    }
}

/// One task: a plan, and the slice of its first step's part it covers.
pub(crate) struct Task {
    pub(crate) plan: usize,
    pub(crate) chunk: Option<Range<u32>>,
}

impl Evaluator<'_, '_> {
    fn stratum(&mut self, stratum: &Stratum) -> Result<(), EvalError> {
        // A closure wanted without witnesses is searched, not joined round by round; one
        // asked for by demand once the search pays (`search_pays`), which a walk that stays
        // small never reaches.
        let search = self.options.search && !self.options.witnesses;
        let guarded = match closure::recognize(self.ir, stratum) {
            Some(c) if search && !c.guarded() => return self.closure(&c),
            Some(c) if search => Some(c),
            _ => None,
        };
        let members = &stratum.relations;
        let in_stratum = |r: RelId| members.contains(&r);
        let rules: Vec<usize> = (0..self.ir.rules.len())
            .filter(|&i| members.contains(&self.ir.rules[i].head))
            .collect();
        // Head aggregates (never recursive: stratification puts their body below).
        for &ri in &rules {
            if self.ir.rules[ri].aggregates() {
                let p = plan(self.ir, ri, None, &in_stratum, self);
                self.head_aggregate(&p)?;
            }
        }
        let is_exit = |ri: usize| {
            !self.ir.rules[ri]
                .body
                .iter()
                .any(|l| matches!(l, crate::ir::Lit::Pos { rel, .. } if in_stratum(*rel)))
        };
        let plans: Vec<Plan> = rules
            .iter()
            .filter(|&&ri| !self.ir.rules[ri].aggregates() && is_exit(ri))
            .map(|&ri| plan(self.ir, ri, None, &in_stratum, self))
            .collect();
        self.run_round(&plans)?;
        for &r in members {
            self.relations[r].advance();
        }
        if stratum.recursive {
            let mut variants = Vec::new();
            for &ri in &rules {
                if self.ir.rules[ri].aggregates() || is_exit(ri) {
                    continue;
                }
                for (pos, lit) in self.ir.rules[ri].body.iter().enumerate() {
                    if matches!(lit, crate::ir::Lit::Pos { rel, .. } if in_stratum(*rel)) {
                        variants.push(plan(self.ir, ri, Some(pos), &in_stratum, self));
                    }
                }
            }
            loop {
                if let Some(c) = &guarded
                    && self.search_pays(c, &variants)
                {
                    return self.closure(c);
                }
                self.rounds += 1;
                self.budget.progress().round();
                self.budget.check_time()?;
                self.run_round(&variants)?;
                let mut changed = false;
                for &r in members {
                    changed |= self.relations[r].advance();
                }
                if !changed {
                    break;
                }
            }
        }
        for &r in members {
            self.relations[r].settle();
        }
        Ok(())
    }

    /// What the workers of a round read.
    fn ctx(&self, witnesses: bool) -> Ctx<'_, '_> {
        Ctx {
            ir: self.ir,
            dict: self.dict,
            constants: self.constants,
            relations: &self.relations,
            budget: self.budget,
            witnesses,
            regexes: Mutex::new(FxHashMap::default()),
            loaded: &self.loaded,
            probes: &self.probes,
            profile: self.options.profile,
            rule_work: &self.rule_work,
            late: &self.late,
        }
    }

    /// The bytes the relations (with their indexes) and the witnesses hold now.
    fn held(&self) -> u64 {
        let relations: u64 = self.relations.iter().map(|r| r.bytes().total()).sum();
        relations + self.witnesses.as_ref().map_or(0, |w| w.bytes() as u64)
    }

    /// Counts afresh what the evaluation holds and checks it against the memory cap (when
    /// there is one): between rounds, when no task output is held.
    fn hold(&self) -> Result<(), EvalError> {
        if self.budget.caps_memory() {
            self.budget.hold(self.held())?;
        }
        Ok(())
    }

    /// Where the memory went: the three relations holding most, every index, the
    /// witnesses, and what the budget counted past them (the round's unmerged tuples), of
    /// `total` held, having asked for `asked` more.
    fn memory_use(&self, total: u64, asked: u64) -> MemoryUse {
        let mut relations: Vec<RelationUse> = self
            .relations
            .iter()
            .enumerate()
            .map(|(r, rel)| {
                let b = rel.bytes();
                RelationUse {
                    name: self.ir.relations[r].name.clone(),
                    tuples: b.tuples,
                    indexes: b.indexes,
                }
            })
            .filter(|r| r.tuples + r.indexes > 0)
            .collect();
        let indexes = relations.iter().map(|r| r.indexes).sum();
        relations.sort_by_key(|r| std::cmp::Reverse(r.tuples + r.indexes));
        relations.truncate(3);
        let witnesses = self.witnesses.as_ref().map_or(0, |w| w.bytes() as u64);
        MemoryUse {
            total,
            asked,
            pending: total.saturating_sub(self.held()),
            relations,
            indexes,
            witnesses,
        }
    }

    /// Adds to a budget error the rules that spent most of the work, or where the memory
    /// went.
    fn annotate(&self, e: EvalError) -> EvalError {
        let top = || {
            // A join intermediate's work is its reader's, as written.
            let mut spent = vec![0u64; self.rule_work.len()];
            for (r, w) in self.rule_work.iter().enumerate() {
                spent[self.ir.owner(r)] += w.load(Ordering::Relaxed);
            }
            let mut by: Vec<(usize, u64)> = spent
                .into_iter()
                .enumerate()
                .filter(|(_, w)| *w > 0)
                .collect();
            by.sort_by_key(|&(r, w)| (std::cmp::Reverse(w), r));
            by.into_iter()
                .take(3)
                .map(|(r, w)| (self.ir.rule_text(&self.ir.written(&self.ir.rules[r])), w))
                .collect()
        };
        match e {
            EvalError::WorkLimit { max, .. } => EvalError::WorkLimit { max, spent: top() },
            EvalError::Deadline { limit, .. } => EvalError::Deadline {
                limit,
                spent: top(),
            },
            EvalError::MemoryLimit { max, used } => EvalError::MemoryLimit {
                max,
                used: self.memory_use(used.total, used.asked),
            },
            other => other,
        }
    }

    fn tasks(&self, plans: &[Plan]) -> Vec<Task> {
        let mut tasks = Vec::new();
        for (pi, p) in plans.iter().enumerate() {
            match p.steps.first() {
                Some(Step::Atom {
                    rel, base, part, ..
                }) if !*base || self.loaded[*rel] => {
                    let range = part_range(&self.relations[*rel], *part);
                    // Eight tasks per thread: smaller tasks sort and filter their output in
                    // cache and balance better. The chunk size changes nothing else: outputs
                    // are merged in task order, which is the same sequence however the range
                    // is cut.
                    let threads = self.options.threads.max(1) as u32;
                    let chunk = CHUNK.max((range.end - range.start).div_ceil(threads * 8));
                    let mut start = range.start;
                    while start < range.end {
                        let end = (start + chunk).min(range.end);
                        tasks.push(Task {
                            plan: pi,
                            chunk: Some(start..end),
                        });
                        start = end;
                    }
                }
                _ => tasks.push(Task {
                    plan: pi,
                    chunk: None,
                }),
            }
        }
        tasks
    }

    /// Runs every plan once, then adds what they derived.
    fn run_round(&mut self, plans: &[Plan]) -> Result<(), EvalError> {
        self.load_hot(plans)?;
        self.prepare(plans);
        // Base relations read into memory and indexes built count before the round runs.
        self.hold()?;
        let tasks = self.tasks(plans);
        let outputs = {
            let ctx = self.ctx(self.witnesses.is_some());
            run_tasks(&ctx, plans, &tasks, self.options.threads)?
        };
        for out in &outputs {
            if !out.stats.is_empty() {
                self.record_profile(&plans[out.plan], &out.stats);
            }
        }
        let before = self.facts();
        self.merge(&outputs)?;
        drop(outputs);
        self.budget
            .progress()
            .facts(self.facts().saturating_sub(before));
        self.hold()
    }

    /// The tuples the derived relations hold (for progress reports).
    fn facts(&self) -> u64 {
        self.relations.iter().map(|r| u64::from(r.len())).sum()
    }

    fn record_profile(&mut self, plan: &Plan, stats: &[[u64; 2]]) {
        for (k, &pos) in plan.positions.iter().enumerate() {
            let reached = match plan.steps[k] {
                Step::Atom { .. } => stats[k][1],
                _ => stats[k][0],
            };
            let e = self.profile.entry((plan.rule, pos)).or_default();
            e.runs += stats[k][0];
            e.reached += reached;
            e.passed += stats[k + 1][0];
        }
        let e = self.profile.entry((plan.rule, usize::MAX)).or_default();
        e.runs += 1;
        e.passed += stats[plan.steps.len()][0];
    }

    /// Adds the round's derived tuples, relation by relation; each new tuple keeps the
    /// derivation of its first occurrence in task order.
    ///
    /// A large round's merge is the longest stretch of an evaluation that checks no token
    /// (a recursive closure's took 250 to 420 ms on an idle machine, 1.5 s at load 4), so
    /// the cancellation token and the deadline are checked between its steps (before each
    /// relation, after its new keys are found, before they are appended): a cancelled call
    /// stops after the step running, not after the whole merge. Stopped midway, the
    /// relations are left half merged, which is harmless: the evaluation ends with the
    /// error and nothing reads them again.
    fn merge(&mut self, outputs: &[Output]) -> Result<(), EvalError> {
        let mut heads: Vec<RelId> = outputs
            .iter()
            .filter(|o| o.count > 0)
            .map(|o| o.head)
            .collect();
        heads.sort_unstable();
        heads.dedup();
        for rel in heads {
            self.budget.check_time()?;
            let arity = self.ir.relations[rel].arity;
            let outs: Vec<usize> = (0..outputs.len())
                .filter(|&o| outputs[o].count > 0 && outputs[o].head == rel)
                .collect();
            let threads = self.options.threads.max(1);
            let late = self.late[rel];
            let emitted: usize = outs.iter().map(|&o| outputs[o].count).sum();
            if arity <= 2 {
                let Some(w) = self.witnesses.as_mut() else {
                    // Keys alone: no origin to carry.
                    let runs: Vec<(usize, &[u64])> =
                        outs.iter().map(|&o| (o, &outputs[o].keys[..])).collect();
                    let filter = late.then_some(&self.relations[rel]);
                    let pieces = new_keys(
                        &runs,
                        |&k| (k, 0),
                        threads,
                        filter,
                        self.budget,
                        |k, _| k,
                        |&k| k,
                    );
                    self.budget.check_time()?;
                    let keys = concat(pieces);
                    self.late[rel] = late_next(keys.len(), emitted);
                    self.relations[rel].append_keys(keys, threads);
                    continue;
                };
                let runs: Vec<(usize, &[Candidate])> =
                    outs.iter().map(|&o| (o, &outputs[o].sorted[..])).collect();
                // With witnesses the tasks always filter (see `late_next`).
                let fresh = new_keys(
                    &runs,
                    |&e| e,
                    threads,
                    None,
                    self.budget,
                    |k, o| (k, o),
                    |e| e.0,
                );
                self.budget.check_time()?;
                let count: usize = fresh.iter().map(Vec::len).sum();
                // The new tuples' ids follow the relation's length, in key order: their
                // derivations are recorded while the relation takes them (on two threads
                // when there are two). The relation, whose buffers are the larger, grows on
                // the calling thread, which allocates the rest of the evaluation (a helper
                // thread allocates from an arena of its own): growing it on the helper left
                // points-to with witnesses at two threads 22 MB higher at its peak (531
                // against 509 MB, a mean of six runs). A round of more than [`PIECE_KEYS`]
                // new tuples is taken a group of pieces at a time, the token and the
                // deadline checked before each: taken whole, the closure's rounds of 7 to 10M
                // new tuples ran 55 to 102 ms with no check.
                let starts = adopt_blocks(w, rel, self.relations[rel].len(), count, outputs, &outs);
                let mut at = 0;
                while at < fresh.len() {
                    let mut end = at + 1;
                    let mut n = fresh[at].len();
                    while end < fresh.len() && n + fresh[end].len() <= PIECE_KEYS {
                        n += fresh[end].len();
                        end += 1;
                    }
                    if at > 0 {
                        self.budget.check_time()?;
                    }
                    let group = &fresh[at..end];
                    at = end;
                    let mut keys: Vec<u64> = Vec::with_capacity(n);
                    keys.extend(group.iter().flatten().map(|(k, _)| *k));
                    let relation = &mut self.relations[rel];
                    let first = relation.len();
                    let record = |w: &mut Witnesses| {
                        record_fresh(w, rel, first, group, outputs, &outs, &starts);
                    };
                    if threads < 2 || n < PARALLEL_RECORD {
                        relation.append_keys(keys, threads);
                        record(w);
                        continue;
                    }
                    crate::exec::pool::join(
                        || {
                            relation.append_keys(keys, 1);
                        },
                        || record(w),
                    );
                }
                continue;
            }
            let mut flat = Vec::new();
            let mut refs = Vec::new();
            for &o in &outs {
                for k in 0..outputs[o].count {
                    flat.extend_from_slice(&outputs[o].terms[k * arity..(k + 1) * arity]);
                    refs.push((o, k as u32));
                }
            }
            self.budget.check_time()?;
            let added = self.relations[rel].insert_all(&flat, refs.len());
            if let Some(w) = self.witnesses.as_mut() {
                for (pos, id) in added {
                    let (o, k) = refs[pos];
                    let out = &outputs[o];
                    let premises = out.premises_of(k as usize);
                    w.record(rel, id, out.rule, premises, &out.base_terms);
                }
            }
        }
        Ok(())
    }

    fn head_aggregate(&mut self, p: &Plan) -> Result<(), EvalError> {
        self.load_hot(std::slice::from_ref(p))?;
        self.prepare(std::slice::from_ref(p));
        let rule = &self.ir.rules[p.rule];
        let ctx = self.ctx(false);
        let mut w = Worker::for_plan(&ctx, p);
        let mut groups: FxHashMap<Vec<Term>, FxHashSet<Vec<Term>>> = FxHashMap::default();
        // The groups' solutions count against the memory cap a batch at a time: a
        // solution is its terms and its set's slot (the vector's pointer, length and
        // capacity, and the table's control byte).
        let budget = self.budget;
        let solution = (rule.vars * size_of::<Term>() + size_of::<Vec<Term>>() + 1) as u64;
        let mut unbilled = 0u64;
        let key_of = |env: &[Term]| -> Vec<Term> {
            rule.args
                .iter()
                .filter_map(|a| match a {
                    HeadArg::Arg(Arg::Var(v)) => Some(env[*v]),
                    HeadArg::Arg(Arg::Const(c)) => Some(ctx.constants[*c]),
                    _ => None,
                })
                .collect()
        };
        w.run(&p.steps, 0, &mut |w| {
            if groups
                .entry(key_of(&w.env))
                .or_default()
                .insert(w.env.clone())
                && budget.caps_memory()
            {
                unbilled += 1;
                if unbilled == BATCH {
                    unbilled = 0;
                    budget.grow(BATCH * solution)?;
                }
            }
            Ok(())
        })?;
        w.flush_work()?;
        let stats = std::mem::take(&mut w.stats);
        let mut out = Vec::new();
        let mut keys: Vec<&Vec<Term>> = groups.keys().collect();
        keys.sort();
        for key in keys {
            let sols = &groups[key];
            let mut k = key.iter();
            let mut tuple = Vec::with_capacity(rule.args.len());
            for a in &rule.args {
                match a {
                    HeadArg::Agg {
                        func,
                        distinct,
                        over,
                    } => {
                        let values: Vec<Term> = sols.iter().map(|s| s[*over]).collect();
                        tuple.push(aggregate(&ctx, *func, *distinct, values)?);
                    }
                    _ => tuple.push(k.next().copied().unwrap_or(Term::ABSENT)),
                }
            }
            out.push(tuple);
        }
        drop(ctx);
        if !stats.is_empty() {
            self.record_profile(p, &stats);
        }
        let n = out.len();
        let flat: Vec<Term> = out.into_iter().flatten().collect();
        self.relations[rule.head].insert_all(&flat, n);
        Ok(())
    }
}

/// At least this many new tuples of a round have their derivations recorded on a thread
/// of their own while the relation takes them.
const PARALLEL_RECORD: usize = 1 << 14;

/// A new key with witnesses: the key, and the task output and premise words of its first
/// derivation.
type Fresh = (u64, (u32, [u32; INLINE]));

/// Makes room for the derivations of a round's `count` new tuples of `rel`, ids from
/// `first` on, and keeps the premise words of the tasks' outputs `outs` whose candidates
/// point into a block of them (a rule of many literals): where each output's block starts,
/// by output, for [`record_fresh`]. Once a round, however many groups record it.
fn adopt_blocks(
    w: &mut Witnesses,
    rel: RelId,
    first: u32,
    count: usize,
    outputs: &[Output],
    outs: &[usize],
) -> Vec<usize> {
    w.reserve(rel, first + count as u32);
    let mut starts = vec![0usize; outputs.len()];
    for &o in outs {
        let out = &outputs[o];
        if !out.inline() && !out.sorted.is_empty() {
            starts[o] = w.adopt(&out.premises, &out.base_terms);
        }
    }
    starts
}

/// Records the derivations of new tuples of `rel`, `fresh` (pieces in key order, ids from
/// `first` on), from the tasks' outputs `outs`. A candidate of a rule of few literals
/// carries its premise words, recorded in order; otherwise each task's premise words are
/// kept as a block ([`adopt_blocks`], whose `starts` say where), and a tuple points into
/// its origin's block.
fn record_fresh(
    w: &mut Witnesses,
    rel: RelId,
    first: u32,
    fresh: &[Vec<Fresh>],
    outputs: &[Output],
    outs: &[usize],
    starts: &[usize],
) {
    let count: usize = fresh.iter().map(Vec::len).sum();
    if outs
        .iter()
        .all(|&o| outputs[o].inline() && outputs[o].base_terms.is_empty())
    {
        // Tuple ids alone: recorded in one pass, the words past each rule's stride
        // cleared.
        let width = outs.iter().map(|&o| outputs[o].stride).max().unwrap_or(0);
        let items = fresh.iter().flatten().map(|&(_, (o, words))| {
            let out = &outputs[o as usize];
            // Word by word (a loop over the unused ones compiles to a `memset` call).
            let words = std::array::from_fn(|k| {
                if k < out.stride {
                    Word::from_raw(words[k])
                } else {
                    Word::MISSING
                }
            });
            (out.rule, words)
        });
        if w.record_words(rel, first, count, width, items) {
            return;
        }
    }
    for (i, &(_, (o, words))) in fresh.iter().flatten().enumerate() {
        let out = &outputs[o as usize];
        let id = first + i as u32;
        if out.inline() {
            let words = words.map(Word::from_raw);
            w.record(rel, id, out.rule, &words[..out.stride], &out.base_terms);
        } else {
            let at = starts[o as usize] + words[0] as usize * out.stride;
            w.derived_at(rel, id, out.rule, at);
        }
    }
}

/// Whether the next round leaves dropping known candidates of a relation to the merge,
/// given that this round's merge found `new` new tuples among the `emitted` candidates.
///
/// A task drops the candidates its head holds already as soon as it has sorted them
/// ([`run_tasks`]), which shrinks what the merge sorts when many are known (the closure's
/// later rounds, where half are). When nearly all are new there is little to shrink, and
/// checking each task's keys on its own reads the relation's runs once per task, a cache
/// miss per key into each large run; the merge checks the round's keys at once instead,
/// in key order, so neighbouring keys share the runs' blocks (points-to, 97% new: 0.95 to
/// 0.87 s at one thread). Three quarters new decides, in a round of at least
/// [`PARALLEL_KEYS`] candidates: a smaller round is filtered by its tasks on every thread,
/// where the merge would filter it on one (the chain's 2,000-key rounds took 1.18 s at
/// two threads that way, against 1.05 at one). Only without witnesses: with them a
/// candidate is 24 bytes in the merge, and carrying the known ones that far cost the
/// closure 15 MB more resident memory (the same live bytes, laid out worse).
fn late_next(new: usize, emitted: usize) -> bool {
    emitted >= PARALLEL_KEYS && 4 * new >= 3 * emitted
}

/// At least this many keys of one relation are merged in a round on several threads.
const PARALLEL_KEYS: usize = 1 << 16;

/// The keys the tasks emitted for one narrow relation, sorted and distinct, each with the
/// (task, index) of its first occurrence in task order: `runs` holds each task's output
/// (its index among the round's outputs, and its entries, of which `parts` reads the key
/// and index). The tasks dropped the keys the relation held already ([`run_tasks`]), or,
/// with `filter`, the keys that relation holds are dropped here; so these are all new.
/// With several threads and enough keys, the key space is cut into ranges merged (and
/// filtered) in parallel; the result is the same. Returned as pieces in key order (one
/// per range), laid end to end only where one vector is needed: with witnesses a
/// candidate is 24 bytes, and copying a round's into one vector took the closure 26 ms of
/// its 54 at two threads.
fn new_keys<E: Copy + Sync, P, T: Copy + Send>(
    runs: &[(usize, &[E])],
    parts: impl Fn(&E) -> (u64, P) + Sync,
    threads: usize,
    filter: Option<&Relation>,
    budget: &Budget,
    item: impl Fn(u64, (u32, P)) -> T + Sync,
    key: impl Fn(&T) -> u64 + Sync,
) -> Vec<Vec<T>> {
    let total: usize = runs.iter().map(|r| r.1.len()).sum();
    let parallel = if threads > 1 && total >= PARALLEL_KEYS {
        threads * 2
    } else {
        1
    };
    let ranges = parallel.max(total / PIECE_KEYS);
    if ranges == 1 {
        return vec![merge_sorted(
            runs,
            &parts,
            (0, u64::MAX, true),
            filter,
            &item,
            &key,
        )];
    }
    let mut bounds = split_points(runs, &parts, total, ranges);
    bounds.dedup();
    let mut pieces: Vec<(u64, u64, bool)> = Vec::new();
    let mut lo = 0u64;
    for &b in &bounds {
        pieces.push((lo, b, false));
        lo = b;
    }
    pieces.push((lo, u64::MAX, true));
    // A cancelled call stops after the pieces under way: the caller's next check ends it.
    crate::exec::pool::map(threads, pieces, |piece| {
        if budget.check_time().is_err() {
            return Vec::new();
        }
        merge_sorted(runs, &parts, piece, filter, &item, &key)
    })
}

/// The most keys one piece of [`new_keys`] merges, sorts and filters between two checks of
/// the cancellation token and the deadline: a larger round is cut into more pieces than
/// its threads need. A piece of 2^20 keys takes about 30 to 60 ms; a closure's largest
/// round (10M keys) as four pieces took up to 183 ms with no check.
const PIECE_KEYS: usize = 1 << 20;

/// The pieces [`new_keys`] returns, laid end to end in one vector: taken whole when there
/// is one, else copied once into a vector of the exact size (`slice::concat`; a flattening
/// collect would grow it by doubling).
fn concat<T: Copy>(mut pieces: Vec<Vec<T>>) -> Vec<T> {
    match pieces.len() {
        1 => pieces.pop().unwrap_or_default(),
        _ => pieces.concat(),
    }
}

/// Keys per split point sampled from the tasks' runs (at least one sample a run).
const SAMPLES_PER_RANGE: usize = 64;

/// `ranges - 1` ascending keys that cut the keys of `runs` (`total` in all) into ranges of
/// about equal size: quantiles of a sample drawn from every run in proportion to its
/// length. A task's run covers only the keys its chunk of the delta reaches, so the
/// quantiles of any one run (the largest, say) can leave most keys in one range.
fn split_points<E, P>(
    runs: &[(usize, &[E])],
    parts: &impl Fn(&E) -> (u64, P),
    total: usize,
    ranges: usize,
) -> Vec<u64> {
    let want = SAMPLES_PER_RANGE * ranges;
    let mut sample: Vec<u64> = Vec::with_capacity(want + runs.len());
    for &(_, run) in runs {
        // Each sample stands for about `total / want` keys of its run.
        let n = (run.len() * want).div_ceil(total.max(1)).min(run.len());
        sample.extend((0..n).map(|i| parts(&run[i * run.len() / n]).0));
    }
    sample.sort_unstable();
    (1..ranges)
        .filter_map(|i| sample.get(i * sample.len() / ranges).copied())
        .collect()
}

/// Merges the tasks' sorted runs (each sorted and distinct), restricted to keys in
/// `lo .. hi` (`..= hi` when `last`), into one: keys ascending and distinct, each made an
/// item with the (task, index) it came from (or not, when no witness needs it); on equal
/// keys the earlier task wins, so the first occurrence in task order is kept. With
/// `filter`, the keys that relation holds are dropped.
///
/// The runs are laid end to end in task order and sorted by key with the standard library's
/// stable sort, which finds the runs already there and merges them; being stable, it keeps
/// equal keys in task order, so the first of each is the earliest.
fn merge_sorted<E: Copy, P, T: Copy>(
    runs: &[(usize, &[E])],
    parts: &impl Fn(&E) -> (u64, P),
    (lo, hi, last): (u64, u64, bool),
    filter: Option<&Relation>,
    item: &impl Fn(u64, (u32, P)) -> T,
    key: &impl Fn(&T) -> u64,
) -> Vec<T> {
    let slice = |run: &'_ [E]| -> std::ops::Range<usize> {
        let a = run.partition_point(|e| parts(e).0 < lo);
        let b = if last {
            run.len()
        } else {
            run.partition_point(|e| parts(e).0 < hi)
        };
        a..b
    };
    let total: usize = runs.iter().map(|r| slice(r.1).len()).sum();
    let mut merged = Vec::with_capacity(total);
    for &(o, run) in runs {
        merged.extend(run[slice(run)].iter().map(|e| {
            let (k, i) = parts(e);
            item(k, (o as u32, i))
        }));
    }
    if runs.len() > 1 {
        merged.sort_by_key(key);
        merged.dedup_by_key(|e| key(e));
    }
    if let Some(relation) = filter {
        relation.retain_absent(&mut merged, key);
    }
    merged
}

pub(crate) fn part_range(rel: &Relation, part: Part) -> Range<u32> {
    match part {
        Part::All => 0..rel.len(),
        Part::Recent => rel.recent(),
        Part::Visible => rel.visible(),
        Part::Stable => rel.stable(),
    }
}

#[cfg(test)]
mod tests;
