//! Running a query end to end: parse, check and link against a vocabulary, choose the base
//! (the host's BaseFor hook sees the base relations the program reads), rewrite for demand,
//! evaluate, and answer a page.
//!
//! ```
//! use strata_eval::{Query, RunOptions};
//! use strata_eval::{FactSource, MemorySource, Value, Vocabulary};
//!
//! let mut src = MemorySource::new();
//! src.add_relation("imports", &["src", "dst"]);
//! for (a, b) in [("app", "api"), ("api", "log"), ("api", "util")] {
//!     src.insert("imports", &[Value::text(a), Value::text(b)]).unwrap();
//! }
//! let deps = "depends_on(?a, ?b) :- imports(?a, ?b);\n\
//!             depends_on(?a, ?c) :- depends_on(?a, ?b), imports(?b, ?c);";
//! let vocab = Vocabulary::from_sources(src.relations().unwrap(), &[("deps", deps)]).unwrap();
//! let q = Query::prepare(&vocab, r#"deps.depends_on("app", ?d) => ?d"#, &[]).unwrap();
//! let out = q.run(&src, &RunOptions::default()).unwrap();
//! assert_eq!(out.answer.total, 3);
//! assert!(out.answer.text().starts_with("columns: d\n1. api\n   deps.depends_on(\"app\", \"api\")"));
//! ```

use std::borrow::Cow;
use std::time::{Duration, Instant};

use crate::answer::by_demand;
use crate::answer::explain::Report;
use crate::answer::{Answer, Input, Window};
use crate::data::source::FactSource;
use crate::exec::budget::{Budget, Progress};
use crate::exec::engine::{self, EvalError, Evaluation};
use crate::front::diagnostic::{Diagnostic, ProgramError};
use crate::front::parse::parse_program;
use crate::ir::{Ir, RelId, Shape};
use crate::link::compile::{Bind, Compiled, compile};
use crate::link::vocab::Vocabulary;

/// A query that parsed and checked, ready to run on any base with its vocabulary.
#[derive(Clone, Debug)]
pub struct Query {
    /// The program's text.
    pub text: String,
    /// The checked, lowered program.
    pub compiled: Compiled,
}

/// Why a query gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The program does not parse or check: the diagnostics as data (message, place, fix),
    /// shown with their line, caret and fix.
    #[error("{0}")]
    Program(ProgramError),
    /// The evaluation stopped: a budget, the deadline, cancellation, or the source failed.
    #[error("query: {0}")]
    Eval(#[from] EvalError),
}

impl QueryError {
    /// The error of diagnostic `d` in program `text`.
    fn program(text: &str, d: Diagnostic) -> QueryError {
        QueryError::Program(ProgramError::new("query", text, [d]))
    }

    /// The diagnostics, when the program does not parse or check.
    pub fn diagnostics(&self) -> Option<&ProgramError> {
        match self {
            QueryError::Program(p) => Some(p),
            QueryError::Eval(_) => None,
        }
    }
}

/// How to run a query.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The first row of the page (a page token).
    pub offset: u64,
    /// The most rows of the page.
    pub limit: u64,
    /// Evaluate by demand when the goal binds an argument of a derived relation.
    pub demand: bool,
    /// Threads, witnesses, work budget, deadline, cancellation.
    pub engine: engine::Options,
    /// Profile the run, so an empty answer says which literal matched nothing.
    pub why: bool,
    /// The most facts a row's witness shows (`None`: every fact, for one row asked for
    /// whole).
    pub witness_facts: Option<u64>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            offset: 0,
            limit: 100,
            demand: true,
            engine: engine::Options::default(),
            why: false,
            witness_facts: Some(crate::witness::WITNESS_FACTS),
        }
    }
}

/// A page of answer and what it cost.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The page.
    pub answer: Answer,
    /// Work spent (candidate tuples examined).
    pub work: u64,
    /// Semi-naive rounds run.
    pub rounds: u64,
    /// Wall time of the evaluation and the answer.
    pub elapsed: Duration,
    /// Whether the demand rewrite was used.
    pub demand: bool,
    /// Derived tuples computed, over all relations.
    pub derived: u64,
    /// For an empty answer run with [`RunOptions::why`]: the first literal of the goal
    /// that matched nothing.
    pub why: Option<String>,
    /// The stored relations a lookup read whole because none of the columns it bound has
    /// an index ([`crate::RelationInfo::unindexed`]): each relation's name and those
    /// columns (positions, ascending), once each.
    pub unindexed: Vec<(String, Vec<usize>)>,
}

impl Query {
    /// Parses and checks `text` against `vocab`, with `binds` giving variables values.
    /// Errors are rendered as LANGUAGE.md shows them, with the context `query`.
    pub fn prepare(
        vocab: &Vocabulary,
        text: &str,
        binds: &[(String, Bind)],
    ) -> Result<Query, QueryError> {
        let program = parse_program(text).map_err(|d| QueryError::program(text, d))?;
        let compiled = compile(vocab, &program, binds).map_err(|d| QueryError::program(text, d))?;
        Ok(Query {
            text: text.to_owned(),
            compiled,
        })
    }

    /// The base relations the program reads: what a BaseFor hook decides the base by.
    pub fn base_relations(&self) -> &[String] {
        &self.compiled.base_relations
    }

    /// Runs the query against `base` and answers one page.
    ///
    /// An answer that aggregates shows no witness, so its evaluation records none. A plain
    /// answer whose goal the demand rewrites cannot restrict (`tc(?x, ?y) => ?x, ?y`) is
    /// evaluated without witnesses too, and its page's witnesses come from a second
    /// evaluation of the program with the goal bound to the page's values
    /// (`answer/by_demand.rs`), which computes only what they reach.
    pub fn run(&self, base: &dyn FactSource, options: &RunOptions) -> Result<Outcome, QueryError> {
        let started = Instant::now();
        let staged = stage(&self.compiled.ir, options.demand, options.why);
        let shape = &self.compiled.shape;
        let mut engine_options = options.engine.clone();
        engine_options.profile |= options.why;
        // The answer stage's deadline counts from the same start as the evaluation's.
        engine_options.started.get_or_insert(started);
        let by_demand = engine_options.witnesses
            && options.demand
            && !options.why
            && !staged.demand
            && by_demand::applies(&self.compiled.ir, shape, options.limit);
        if by_demand || super::build::grouped(shape) {
            engine_options.witnesses = false;
        }
        let ev = engine::evaluate(&staged.ir, base, &engine_options)?;
        let window = Window {
            offset: options.offset,
            limit: options.limit,
            witness_facts: options.witness_facts,
        };
        let mut answer = staged.answer(&ev, shape, window, &engine_options)?;
        let derived = ev
            .relations
            .iter()
            .enumerate()
            .filter(|(i, _)| staged.ir.relations[*i].kind == crate::ir::RelKind::Derived)
            .map(|(_, r)| u64::from(r.len()))
            .sum();
        let why = if options.why && answer.total == 0 {
            Report::build(&self.text, &staged.ir, &ev, 0, started.elapsed()).empty_at
        } else {
            None
        };
        let (mut work, rounds) = (ev.work, ev.rounds);
        let unindexed: Vec<(String, Vec<usize>)> = ev
            .unindexed
            .iter()
            .map(|(rel, cols)| (staged.ir.relations[*rel].name.clone(), cols.clone()))
            .collect();
        drop(ev);
        if by_demand {
            // The second evaluation gets what the first left of the work budget.
            let mut bound_options = engine_options.clone();
            bound_options.witnesses = true;
            bound_options.max_work = options.engine.max_work.map(|m| m.saturating_sub(work));
            let spent = by_demand::fill(
                &self.compiled.ir,
                shape,
                base,
                &mut answer,
                window,
                &bound_options,
            )
            .map_err(|e| match (e, options.engine.max_work) {
                // The budget the caller gave, not what the first evaluation left of it.
                (EvalError::WorkLimit { spent, .. }, Some(max)) => {
                    EvalError::WorkLimit { max, spent }
                }
                (e, _) => e,
            })?;
            work += spent.work;
        }
        Ok(Outcome {
            answer,
            work,
            rounds,
            elapsed: started.elapsed(),
            demand: staged.demand,
            derived,
            why,
            unindexed,
        })
    }

    /// Runs the query as [`Query::run`] does, with profiling and without witnesses, and
    /// answers where the work went instead of rows.
    pub fn explain(
        &self,
        base: &dyn FactSource,
        options: &RunOptions,
    ) -> Result<Report, QueryError> {
        let started = Instant::now();
        let staged = stage(&self.compiled.ir, options.demand, true);
        let mut engine_options = options.engine.clone();
        engine_options.profile = true;
        engine_options.started.get_or_insert(started);
        engine_options.witnesses = false;
        let ev = engine::evaluate(&staged.ir, base, &engine_options)?;
        let window = Window {
            offset: 0,
            limit: 0,
            witness_facts: Some(0),
        };
        let answer = staged.answer(&ev, &self.compiled.shape, window, &engine_options)?;
        Ok(Report::build(
            &self.text,
            &staged.ir,
            &ev,
            answer.total,
            started.elapsed(),
        ))
    }
}

/// The program as a run with `options` runs it: demand (when asked for and the goal
/// binds an argument of a derived relation: a walk from the bound values for a linear
/// recursion, then magic sets), join splits, and the goal answered from
/// the relation it restates (unless profiling, which must see the goal's own rule).
pub(crate) fn stage(ir: &Ir, demand: bool, profile: bool) -> Staged<'_> {
    let rewritten = if demand {
        // The goal's equalities to constants become bound arguments; a bound linear
        // recursion walks from the bound values; magic sets then give the rest (the
        // walk's edge relations among it) demand.
        let equated = crate::rewrite::equate::rewrite(ir);
        let ir = equated.as_ref().unwrap_or(ir);
        match crate::rewrite::linear::rewrite(ir) {
            Some(linear) => Some((
                crate::rewrite::magic::rewrite(&linear).unwrap_or(linear),
                true,
            )),
            None => match crate::rewrite::magic::rewrite(ir) {
                Some(magic) => Some((magic, true)),
                None => equated.map(|e| (e, false)),
            },
        }
    } else {
        None
    };
    let demand = rewritten.as_ref().is_some_and(|(_, d)| *d);
    let rewritten = rewritten.map(|(ir, _)| ir);
    let ir = rewritten.map_or(Cow::Borrowed(ir), Cow::Owned);
    let ir = match crate::rewrite::split::rewrite(&ir) {
        Some(split) => Cow::Owned(split),
        None => ir,
    };
    // A goal that only restates a derived relation is answered from it, not copied.
    let alias = if profile { None } else { ir.goal_alias() };
    let ir = match alias {
        Some(_) => {
            let mut plain = ir.into_owned();
            let goal = plain.goal;
            plain.rules.retain(|r| r.head != goal);
            Cow::Owned(plain)
        }
        None => ir,
    };
    Staged { ir, demand, alias }
}

/// The program as it runs: after the rewrites, and where the goal's solutions are read.
pub(crate) struct Staged<'q> {
    /// The program the engine evaluates.
    pub(crate) ir: Cow<'q, Ir>,
    /// Whether the demand rewrite applied.
    pub(crate) demand: bool,
    /// The relation the goal restates, answered from directly (the goal's rule dropped).
    alias: Option<RelId>,
}

impl Staged<'_> {
    /// The page of the answer in `window`, stopped by `engine`'s cancellation and deadline
    /// as the evaluation was (the answer stage of a large goal takes seconds).
    fn answer(
        &self,
        ev: &Evaluation<'_>,
        shape: &Shape,
        window: Window,
        engine: &engine::Options,
    ) -> Result<Answer, EvalError> {
        self.read(ev, shape, engine, |input| input.answer(window))
    }

    /// What `f` reads of evaluation `ev` through the answer stage's [`Input`], stopped by
    /// `engine`'s cancellation and deadline.
    pub(crate) fn read<T>(
        &self,
        ev: &Evaluation<'_>,
        shape: &Shape,
        engine: &engine::Options,
        f: impl FnOnce(&Input<'_, '_>) -> Result<T, EvalError>,
    ) -> Result<T, EvalError> {
        let stop = Budget::new(
            None,
            engine.timeout,
            engine.started,
            engine.cancel.clone(),
            None,
            Progress::new(),
        );
        f(&Input {
            ir: &self.ir,
            ev,
            shape,
            solutions: self.alias.unwrap_or(self.ir.goal),
            alias: self.alias.is_some(),
            stop: Some(&stop),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FactSource, MemorySource, Value};

    #[test]
    fn a_program_error_carries_its_diagnostic_as_data() {
        let mut src = MemorySource::new();
        src.add_relation("imports", &["src", "dst"]);
        let vocab = Vocabulary::from_sources(src.relations().unwrap_or_default(), &[])
            .unwrap_or_else(|e| panic!("{e}"));
        let text = "imports(?a, ?b) => ?a\n  , ?c";
        let Err(e) = Query::prepare(&vocab, text, &[]) else {
            panic!("?c is not bound")
        };
        let p = e.diagnostics().unwrap_or_else(|| panic!("{e}"));
        assert_eq!(p.context, "query");
        assert_eq!(p.diagnostics.len(), 1);
        let d = &p.diagnostics[0];
        assert_eq!((d.line, d.column), (2, 5));
        assert_eq!(d.source_line, "  , ?c");
        assert!(e.to_string().starts_with("query: "), "{e}");
        assert!(
            e.to_string()
                .contains("line 2, column 5:\n    , ?c\n      ^"),
            "{e}"
        );
        let json = serde_json::to_value(p).unwrap_or_default();
        assert_eq!(json["diagnostics"][0]["line"], 2);
    }

    #[test]
    fn issue_28_a_cancel_after_the_evaluation_stops_the_answer_stage() {
        let mut src = MemorySource::new();
        src.add_relation("imports", &["src", "dst"]);
        for i in 0..10 {
            let row = [Value::text(format!("m{i}")), Value::text(format!("n{i}"))];
            src.insert("imports", &row)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let vocab = Vocabulary::from_sources(src.relations().unwrap_or_default(), &[])
            .unwrap_or_else(|e| panic!("{e}"));
        let q = Query::prepare(&vocab, "imports(?a, ?b) => ?a, ?b", &[])
            .unwrap_or_else(|e| panic!("{e}"));
        let staged = stage(&q.compiled.ir, false, false);
        let options = engine::Options::default();
        let ev = engine::evaluate(&staged.ir, &src, &options).unwrap_or_else(|e| panic!("{e}"));
        let window = Window {
            offset: 0,
            limit: 100,
            witness_facts: Some(4),
        };
        let page = staged.answer(&ev, &q.compiled.shape, window, &options);
        assert_eq!(page.map(|a| a.total).ok(), Some(10));
        // The client gives up once the evaluation is done: the answer stage stops too.
        options.cancel.cancel();
        let page = staged.answer(&ev, &q.compiled.shape, window, &options);
        assert!(matches!(page, Err(EvalError::Cancelled)), "{page:?}");
    }
}
