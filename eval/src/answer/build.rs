//! Building a page of answer from a finished evaluation, in named steps: the goal's
//! solutions are [`Input::group`]ed (with `having` applied to each group) and [`order`]ed,
//! or, for a plain answer, kept as terms and only the page's rows selected in order
//! ([`Input::plain`], [`Table`]); then [`Input::page`]d (the program's own offset and limit,
//! then the caller's window), each row of the page with its witness.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::table::Table;
use super::{Answer, Cell, Row};
use crate::data::value::{Term, Value};
use crate::exec::budget::Budget;
use crate::exec::engine::{EvalError, Evaluation};
use crate::exec::relation::Relation;
use crate::exec::witness::Premise;
use crate::ir::AggFunc;
use crate::ir::{ColumnSpec, Ir, OrderSpec, RelId, Shape};
use crate::witness::{Fact, Room, WITNESS_BUILD, node, premises_of};

/// What an answer is built from.
#[derive(Clone, Copy)]
pub struct Input<'a, 's> {
    /// The program that ran.
    pub ir: &'a Ir,
    /// Its evaluation.
    pub ev: &'a Evaluation<'s>,
    /// How the goal's solutions become the answer.
    pub shape: &'a Shape,
    /// The relation holding the goal's solutions: the goal, or the relation it restates.
    pub solutions: RelId,
    /// Whether `solutions` is the relation the goal restates ([`Ir::goal_alias`]): a row's
    /// witness is then its tuple's own tree.
    pub alias: bool,
    /// The evaluation's cancellation and deadline, checked as the answer is built (every
    /// 65,536 solutions it reads, and between its stages); `None`: never stopped.
    pub stop: Option<&'a Budget>,
}

/// How many solutions the answer stage reads between checks of its [`Input::stop`].
pub(crate) const STOP_EVERY: u32 = 1 << 16;

/// Whether to check the limits at solution `i`.
pub(crate) fn check_at(stop: Option<&Budget>, i: u32) -> Result<(), EvalError> {
    match stop {
        Some(b) if i.is_multiple_of(STOP_EVERY) => b.check_time(),
        _ => Ok(()),
    }
}

/// The caller's window on the answer, on top of the program's own offset and limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The first row (a page token).
    pub offset: u64,
    /// The most rows.
    pub limit: u64,
    /// The most facts a row's witness shows (`None`: every fact).
    pub witness_facts: Option<u64>,
}

/// The solutions of one group of an aggregating answer, by goal tuple id.
enum Members {
    /// Every solution (no group variable): ids `0..n`.
    All(u32),
    /// These.
    Ids(Vec<u32>),
}

impl Members {
    fn len(&self) -> usize {
        match self {
            Members::All(n) => *n as usize,
            Members::Ids(ids) => ids.len(),
        }
    }

    fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        let (all, ids) = match self {
            Members::All(n) => (0..*n, &[][..]),
            Members::Ids(ids) => (0..0, &ids[..]),
        };
        all.chain(ids.iter().copied())
    }
}

/// Where a page falls among an answer's rows: the program's own offset and limit, then the
/// window's.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    /// The position of the program's first row.
    program_start: u64,
    /// The rows of the answer (within the program's own offset and limit).
    total: u64,
    /// The position of the page's first row.
    start: u64,
    /// The position past the page's last row.
    end: u64,
}

impl Bounds {
    /// The bounds of `window` on an answer of `rows` rows under `shape`.
    fn new(shape: &Shape, rows: u64, window: Window) -> Bounds {
        let program_end = shape.limit.map_or(rows, |l| (shape.offset + l).min(rows));
        let program_start = shape.offset.min(program_end);
        let start = (program_start + window.offset).min(program_end);
        Bounds {
            program_start,
            total: program_end - program_start,
            start,
            end: start.saturating_add(window.limit).min(program_end),
        }
    }
}

/// One row of an aggregating answer before paging: its cells and its `order by` keys.
pub(crate) struct Full {
    cells: Vec<Cell>,
    keys: Vec<Cell>,
}

impl Input<'_, '_> {
    /// The page of the answer in `window`.
    pub fn answer(&self, window: Window) -> Result<Answer, EvalError> {
        if !self.grouped() {
            return self.plain(window);
        }
        let mut rows = self.group()?;
        order(&mut rows, &self.shape.order);
        let bounds = Bounds::new(self.shape, rows.len() as u64, window);
        #[allow(clippy::cast_possible_truncation)] // positions <= rows
        let page = rows
            .drain(bounds.start as usize..bounds.end as usize)
            .map(|full| (full.cells, None))
            .collect();
        self.page(page, bounds, window)
    }

    fn goal(&self) -> &Relation {
        &self.ev.relations[self.solutions]
    }

    fn value(&self, t: Term) -> Result<Value, EvalError> {
        self.ev.dict.value(t).map_err(EvalError::from)
    }

    /// Whether the answer aggregates: an aggregate column, `having`, or an `order by` key
    /// that aggregates.
    fn grouped(&self) -> bool {
        grouped(self.shape)
    }

    /// The groups of an aggregating answer, by their key's values: the solutions sharing
    /// the values of the column variables. Grouped by terms first (canonical: equal terms
    /// are equal values), decoding only each group's key.
    fn groups(&self) -> Result<BTreeMap<Vec<Value>, Members>, EvalError> {
        let goal = self.goal();
        let group_vars: Vec<usize> = self
            .shape
            .columns
            .iter()
            .filter_map(|c| match c {
                ColumnSpec::Var(v) => Some(*v),
                ColumnSpec::Agg { .. } => None,
            })
            .collect();
        let mut groups = BTreeMap::new();
        // With no group variable, one group: every solution, not listed (no key to hash
        // per solution, and no list of every id to keep).
        if group_vars.is_empty() {
            groups.insert(Vec::new(), Members::All(goal.len()));
            return Ok(groups);
        }
        // Keys of a few terms inline: no allocation per solution.
        let mut by_terms: FxHashMap<SmallVec<[Term; 4]>, Vec<u32>> = FxHashMap::default();
        for (id, t) in goal.iter() {
            check_at(self.stop, id)?;
            let key: SmallVec<[Term; 4]> = group_vars
                .iter()
                .map(|&v| t.get(v).copied().unwrap_or(Term::ABSENT))
                .collect();
            by_terms.entry(key).or_default().push(id);
        }
        for (i, (terms, members)) in (0u32..).zip(by_terms) {
            check_at(self.stop, i)?;
            let key = terms
                .into_iter()
                .map(|t| self.value(t))
                .collect::<Result<Vec<_>, _>>()?;
            match groups.entry(key).or_insert(Members::Ids(Vec::new())) {
                Members::Ids(ids) => ids.extend(members),
                Members::All(_) => {}
            }
        }
        Ok(groups)
    }

    /// The values of goal variable `var` over a group's solutions.
    fn member_values(&self, members: &Members, var: usize) -> Result<Vec<Value>, EvalError> {
        let goal = self.goal();
        members
            .ids()
            .map(|id| self.value(goal.tuple(id).get(var).copied().unwrap_or(Term::ABSENT)))
            .collect()
    }

    /// The cell of column `c` for a group: the next value of its key, or an aggregate of its
    /// solutions.
    fn group_cell(
        &self,
        members: &Members,
        c: &ColumnSpec,
        key: &mut std::slice::Iter<'_, Value>,
    ) -> Result<Cell, EvalError> {
        Ok(match c {
            ColumnSpec::Var(_) => Cell::Value(key.next().cloned().unwrap_or(Value::Absent)),
            ColumnSpec::Agg {
                func,
                distinct: false,
                var: _,
            } if *func == AggFunc::Count => {
                // A count of solutions needs no value.
                Cell::Value(Value::Number(members.len() as f64))
            }
            ColumnSpec::Agg {
                func,
                distinct,
                var,
            } => aggregate_cell(*func, *distinct, self.member_values(members, *var)?)?,
        })
    }

    /// Whether a group passes every `having` condition.
    fn having(&self, members: &Members) -> Result<bool, EvalError> {
        for h in &self.shape.having {
            let Cell::Value(v) = self.group_cell(members, &h.aggregate, &mut [].iter())? else {
                return Ok(false);
            };
            if !crate::builtins::compare(h.op, &v, &h.value) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Step one of an aggregating answer: a row per group that passes `having`.
    fn group(&self) -> Result<Vec<Full>, EvalError> {
        let shape = self.shape;
        let mut rows = Vec::new();
        for (i, (key, members)) in (0u32..).zip(self.groups()?) {
            check_at(self.stop, i)?;
            if !self.having(&members)? {
                continue;
            }
            let mut it = key.iter();
            let cells = shape
                .columns
                .iter()
                .map(|c| self.group_cell(&members, c, &mut it))
                .collect::<Result<Vec<_>, _>>()?;
            let keys = shape
                .order
                .iter()
                .map(|o| match &o.column {
                    ColumnSpec::Var(v) => {
                        let pos = shape.columns.iter().position(|c| c == &ColumnSpec::Var(*v));
                        Ok(pos.map_or(Cell::Value(Value::Absent), |p| cells[p].clone()))
                    }
                    agg => self.group_cell(&members, agg, &mut [].iter()),
                })
                .collect::<Result<Vec<_>, EvalError>>()?;
            rows.push(Full { cells, keys });
        }
        Ok(rows)
    }

    /// A plain answer: the distinct projections of the solutions as terms ([`Table`]),
    /// ranked, and only the page's rows selected in order and resolved; each row keeps its
    /// least solution's witness.
    fn plain(&self, window: Window) -> Result<Answer, EvalError> {
        let shape = self.shape;
        let columns: Vec<usize> = shape
            .columns
            .iter()
            .map(|c| match c {
                ColumnSpec::Var(v) => *v,
                // Not a plain answer; no such column reaches here.
                ColumnSpec::Agg { var, .. } => *var,
            })
            .collect();
        // A variable key is one of the columns (the checker says so).
        let keys: Vec<(usize, bool)> = shape
            .order
            .iter()
            .filter_map(|o| {
                let pos = shape.columns.iter().position(|c| c == &o.column)?;
                Some((pos, o.desc))
            })
            .collect();
        let goal = self.goal();
        let table = Table::project(goal, &columns, self.stop)?;
        let bounds = Bounds::new(shape, table.len() as u64, window);
        #[allow(clippy::cast_possible_truncation)] // positions <= rows
        let (start, end) = (bounds.start as usize, bounds.end as usize);
        let selected = if start < end {
            table.select(&self.ev.dict, &keys, start, end)?
        } else {
            Vec::new()
        };
        check_at(self.stop, 0)?;
        let tuples = match self.ev.witnesses {
            Some(_) => table
                .least_solutions(goal, &selected, &self.ev.dict, self.stop)?
                .into_iter()
                .map(Some)
                .collect(),
            None => vec![None; selected.len()],
        };
        let mut rows = Vec::with_capacity(selected.len());
        for (&r, goal_tuple) in selected.iter().zip(tuples) {
            let cells = table
                .row(r)
                .iter()
                .map(|&t| self.value(t).map(Cell::Value))
                .collect::<Result<Vec<_>, _>>()?;
            rows.push((cells, goal_tuple));
        }
        self.page(rows, bounds, window)
    }

    /// The witnesses of `rows`, the cells of a plain answer's page that another evaluation
    /// of the program answered without witnesses, found in this one (the program with its
    /// goal bound to the page's values, [`super::by_demand`]): each row's least solution's,
    /// as [`Input::plain`] would give it. A row this evaluation lacks gets `None`.
    pub(crate) fn witnesses_of(
        &self,
        rows: &[Vec<Cell>],
        witness_facts: Option<u64>,
    ) -> Result<Vec<Option<RowWitness>>, EvalError> {
        let columns: Vec<usize> = self
            .shape
            .columns
            .iter()
            .map(|c| match c {
                ColumnSpec::Var(v) | ColumnSpec::Agg { var: v, .. } => *v,
            })
            .collect();
        let goal = self.goal();
        let table = Table::project(goal, &columns, self.stop)?;
        let mut wanted: BTreeMap<Vec<Value>, Vec<usize>> = BTreeMap::new();
        for (i, cells) in rows.iter().enumerate() {
            let values = cells
                .iter()
                .map(|c| match c {
                    Cell::Value(v) => Some(v.clone()),
                    Cell::List(_) => None,
                })
                .collect::<Option<Vec<_>>>();
            if let Some(values) = values {
                wanted.entry(values).or_default().push(i);
            }
        }
        // The bound program's table holds the page's rows and few others: each is resolved.
        let mut selected: Vec<u32> = Vec::new();
        let mut of_row: Vec<usize> = Vec::new();
        #[allow(clippy::cast_possible_truncation)] // a table's rows are tuple ids
        for r in 0..table.len() as u32 {
            check_at(self.stop, r)?;
            let values = table
                .row(r)
                .iter()
                .map(|&t| self.value(t))
                .collect::<Result<Vec<_>, _>>()?;
            if let Some(at) = wanted.remove(&values) {
                for i in at {
                    selected.push(r);
                    of_row.push(i);
                }
            }
        }
        let mut out: Vec<Option<RowWitness>> = vec![None; rows.len()];
        let (Some(_), false) = (self.ev.witnesses.as_ref(), selected.is_empty()) else {
            return Ok(out);
        };
        let tuples = table.least_solutions(goal, &selected, &self.ev.dict, self.stop)?;
        // In page order, so the room for building trees goes to the first rows first.
        let mut order: Vec<(usize, u32)> = of_row.into_iter().zip(tuples).collect();
        order.sort_unstable_by_key(|&(i, _)| i);
        let mut room = Room::new(WITNESS_BUILD);
        for (i, id) in order {
            let unbuilt = room.unbuilt;
            let tree = self.witness(Some(id), &mut room)?;
            let (witness, facts_left_out) = crate::witness::bound(tree, witness_facts);
            out[i] = Some(RowWitness {
                witness,
                facts_left_out,
                facts_unbuilt: room.unbuilt - unbuilt,
            });
        }
        Ok(out)
    }

    /// The last step: the page's rows (cells and the goal tuple each was projected from),
    /// each with its witness.
    fn page(
        &self,
        rows: Vec<(Vec<Cell>, Option<u32>)>,
        bounds: Bounds,
        window: Window,
    ) -> Result<Answer, EvalError> {
        let mut page = Vec::new();
        let mut room = Room::new(WITNESS_BUILD);
        for (cells, goal_tuple) in rows {
            let unbuilt = room.unbuilt;
            let tree = self.witness(goal_tuple, &mut room)?;
            let (witness, facts_left_out) = crate::witness::bound(tree, window.witness_facts);
            page.push(Row {
                witness,
                facts_left_out,
                facts_unbuilt: room.unbuilt - unbuilt,
                cells,
            });
        }
        Ok(Answer {
            columns: self.shape.names.clone(),
            rows: page,
            offset: bounds.start - bounds.program_start,
            total: bounds.total,
            snapshot: None,
            witness_facts: window.witness_facts,
            cut: None,
        })
    }

    /// The witness of a row projected from goal tuple `goal_tuple` (none for a group, or
    /// when witnesses were off).
    fn witness(
        &self,
        goal_tuple: Option<u32>,
        room: &mut Room,
    ) -> Result<Vec<crate::witness::Node>, EvalError> {
        let (ir, ev) = (self.ir, self.ev);
        Ok(match (goal_tuple, ev.witnesses.as_ref()) {
            (Some(id), Some(w)) if self.alias => vec![node(
                ir,
                ev,
                w,
                Fact::Recorded(Premise::Tuple {
                    rel: self.solutions as u32,
                    id,
                }),
                room,
            )?],
            (Some(id), Some(w)) => premises_of(ir, ev, w, ir.goal, id, room)?,
            _ => Vec::new(),
        })
    }
}

/// Whether an answer of `shape` aggregates: an aggregate column, `having`, or an `order by`
/// key that aggregates. Its rows have no witness.
pub(crate) fn grouped(shape: &Shape) -> bool {
    shape
        .columns
        .iter()
        .any(|c| matches!(c, ColumnSpec::Agg { .. }))
        || !shape.having.is_empty()
        || shape
            .order
            .iter()
            .any(|o| matches!(o.column, ColumnSpec::Agg { .. }))
}

/// A row's witness, built apart from its cells ([`Input::witnesses_of`]).
#[derive(Clone, Debug)]
pub(crate) struct RowWitness {
    /// The trees, as [`Row::witness`].
    pub(crate) witness: Vec<crate::witness::Node>,
    /// As [`Row::facts_left_out`].
    pub(crate) facts_left_out: u64,
    /// As [`Row::facts_unbuilt`].
    pub(crate) facts_unbuilt: u64,
}

/// Step two: rows by their `order by` keys, then the default order of their cells.
pub(crate) fn order(rows: &mut [Full], order: &[OrderSpec]) {
    rows.sort_by(|a, b| {
        for (i, o) in order.iter().enumerate() {
            let ord = a.keys[i].cmp(&b.keys[i]);
            let ord = if o.desc { ord.reverse() } else { ord };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        a.cells
            .iter()
            .zip(&b.cells)
            .map(|(x, y)| x.cmp(y))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(Ordering::Equal)
    });
}

/// An aggregate column's cell: a list for `list(...)`, else the aggregate's value.
fn aggregate_cell(
    func: AggFunc,
    distinct: bool,
    mut values: Vec<Value>,
) -> Result<Cell, EvalError> {
    if func == AggFunc::List {
        values.sort();
        if distinct {
            values.dedup();
        }
        return Ok(Cell::List(values));
    }
    Ok(Cell::Value(crate::builtins::aggregate(
        func, distinct, values,
    )?))
}
