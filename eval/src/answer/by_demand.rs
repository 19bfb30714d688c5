//! Witnesses by demand: a page's witnesses found by a second evaluation, of the program with
//! its goal bound to the page's values, when the first could not be evaluated by demand.
//!
//! Keeping a derivation for every derived tuple costs memory and time in proportion to all
//! of them, and a goal that binds nothing (`tc(?x, ?y) => ?x, ?y`) derives millions to show
//! twenty. So [`Query::run`](super::query::Query::run) evaluates such a query without
//! witnesses, answers its page, and then evaluates the program once more with each column
//! variable ranging over the page's values (`?x in [...]`, [`bind_goal`]): the demand
//! rewrites ([`crate::rewrite::linear`], [`crate::rewrite::magic`]) make that evaluation
//! compute only what the page's values reach, with witnesses, and each row takes the witness
//! of its least solution there ([`super::Input::witnesses_of`]). The bound program has the same
//! solutions for the page's values as the original, so the row and its least solution are
//! the same; the derivation shown may differ from the one an evaluation of everything would
//! have found first, and it re-derives the row all the same.
//!
//! [`applies`] decides beforehand: only for a plain answer (no aggregate), a page of at most
//! [`MOST_ROWS`] rows, a goal the demand rewrites cannot already restrict, and a program they
//! can once the goal is bound.

use crate::answer::query::{Staged, stage};
use crate::answer::{Answer, Cell, Window};
use crate::data::source::FactSource;
use crate::data::value::Value;
use crate::exec::engine::{self, EvalError};
use crate::ir::{Arg, ColumnSpec, HeadArg, Ir, Lit, Shape};

/// The most rows a page may ask for to take its witnesses by demand. The bound evaluation
/// computes what the page's values reach; for a page of most of a large answer that is most
/// of the program again, after the first evaluation, so such a page records its witnesses in
/// the one evaluation instead.
pub(crate) const MOST_ROWS: u64 = 10_000;

/// Whether a query whose goal the demand rewrites left unrestricted answers its page's
/// witnesses by demand: a plain answer, a page of at most [`MOST_ROWS`] rows (`limit`), and
/// a program the rewrites restrict once each column variable of the goal is bound.
pub(crate) fn applies(ir: &Ir, shape: &Shape, limit: u64) -> bool {
    if super::build::grouped(shape) || limit > MOST_ROWS {
        return false;
    }
    let lists = vec![vec![Value::Absent]; shape.columns.len()];
    bind_goal(ir, shape, &lists).is_some_and(|bound| stage(&bound, true, false).demand)
}

/// The program with each column variable of its goal ranging over the values of `lists` (one
/// list per column, in column order): a `OneOf` literal first in the body of each rule of
/// the goal. `None` when a column is not a variable of the goal, or a rule of the goal
/// aggregates.
pub(crate) fn bind_goal(ir: &Ir, shape: &Shape, lists: &[Vec<Value>]) -> Option<Ir> {
    let mut out = ir.clone();
    let mut by_var: Vec<(usize, Vec<usize>)> = Vec::new();
    for (c, list) in shape.columns.iter().zip(lists) {
        let ColumnSpec::Var(g) = c else {
            return None;
        };
        if by_var.iter().any(|(v, _)| v == g) {
            continue;
        }
        let mut list = list.clone();
        list.sort();
        list.dedup();
        let first = out.constants.len();
        let values = (first..first + list.len()).collect();
        out.constants.extend(list);
        by_var.push((*g, values));
    }
    let goal = out.goal;
    let mut any = false;
    for rule in out.rules.iter_mut().filter(|r| r.head == goal) {
        if rule.aggregates() || rule.body.iter().any(|l| matches!(l, Lit::Agg { .. })) {
            return None;
        }
        let mut lits = Vec::with_capacity(by_var.len());
        for (g, values) in &by_var {
            match rule.args.get(*g)? {
                HeadArg::Arg(Arg::Var(slot)) => lits.push(Lit::OneOf {
                    var: *slot,
                    values: values.clone(),
                }),
                HeadArg::Arg(Arg::Const(_) | Arg::Wild) => {}
                HeadArg::Agg { .. } => return None,
            }
        }
        any |= !lits.is_empty();
        rule.body.splice(0..0, lits);
    }
    any.then_some(out)
}

/// What finding a page's witnesses by demand cost.
pub(crate) struct Spent {
    /// Work units of the bound evaluation.
    pub(crate) work: u64,
}

/// Gives each row of `answer` (a page that an evaluation of `ir` without witnesses answered)
/// its witness, from an evaluation of `ir` with its goal bound to the page's values, under
/// `options` (witnesses on; its work budget what the first evaluation left).
pub(crate) fn fill(
    ir: &Ir,
    shape: &Shape,
    base: &dyn FactSource,
    answer: &mut Answer,
    window: Window,
    options: &engine::Options,
) -> Result<Spent, EvalError> {
    if answer.rows.is_empty() {
        return Ok(Spent { work: 0 });
    }
    let lists: Vec<Vec<Value>> = (0..shape.columns.len())
        .map(|c| {
            answer
                .rows
                .iter()
                .filter_map(|r| match r.cells.get(c) {
                    Some(Cell::Value(v)) => Some(v.clone()),
                    _ => None,
                })
                .collect()
        })
        .collect();
    let Some(bound) = bind_goal(ir, shape, &lists) else {
        return Ok(Spent { work: 0 });
    };
    let staged: Staged<'_> = stage(&bound, true, false);
    let ev = engine::evaluate(&staged.ir, base, options)?;
    let cells: Vec<Vec<Cell>> = answer.rows.iter().map(|r| r.cells.clone()).collect();
    let found = staged.read(&ev, shape, options, |input| {
        input.witnesses_of(&cells, window.witness_facts)
    })?;
    for (row, w) in answer.rows.iter_mut().zip(found) {
        if let Some(w) = w {
            row.witness = w.witness;
            row.facts_left_out = w.facts_left_out;
            row.facts_unbuilt = w.facts_unbuilt;
        }
    }
    Ok(Spent { work: ev.work })
}
