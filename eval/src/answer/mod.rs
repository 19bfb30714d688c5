//! Answers: the goal's solutions projected, aggregated, filtered, ordered and paged, each row
//! with its witness, written as the seed writes them (text) or as JSON.
//!
//! Takes a finished [`Evaluation`] and the [`Shape`] the checker gave the goal; gives a page
//! of [`Answer`]. [`query`] is the whole pipeline a caller runs (prepare, rewrite, evaluate,
//! answer); [`explain`] reports where an evaluation's work went.

pub mod explain;
pub mod query;

use std::cmp::Ordering;
use std::fmt::Write as _;

use rustc_hash::FxHashMap;

use crate::data::value::{Term, Value};
use crate::data::value::{value_json, write_value};
use crate::exec::engine::{EvalError, Evaluation};
use crate::exec::witness::Premise;
use crate::front::ast::AggFunc;
use crate::ir::Ir;
pub use crate::ir::{ColumnSpec, HavingSpec, OrderSpec, Shape};
use crate::naive;
use crate::witness::{Fact, Node, node, premises_of};

/// A value in an answer: a value, or a list from `list(...)`.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// One value.
    Value(Value),
    /// A list, in answer order.
    List(Vec<Value>),
}

impl Cell {
    fn cmp(&self, other: &Cell) -> Ordering {
        match (self, other) {
            (Cell::Value(a), Cell::Value(b)) => a.cmp(b),
            (Cell::List(a), Cell::List(b)) => a.cmp(b),
            (Cell::Value(_), Cell::List(_)) => Ordering::Less,
            (Cell::List(_), Cell::Value(_)) => Ordering::Greater,
        }
    }

    /// Writes the cell as the text answer shows it: text bare, lists in brackets.
    pub fn write(&self, out: &mut String) {
        match self {
            Cell::Value(v) => out.push_str(&v.to_string()),
            Cell::List(vs) => {
                out.push('[');
                for (i, v) in vs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_value(v, out);
                }
                out.push(']');
            }
        }
    }
}

/// One row of an answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The cells, one per column.
    pub cells: Vec<Cell>,
    /// The facts the row was derived from: one tree per positive goal literal (none for an
    /// aggregate row, or when witnesses were off).
    pub witness: Vec<Node>,
}

/// A page of an answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// The columns' names.
    pub columns: Vec<String>,
    /// The rows of this page.
    pub rows: Vec<Row>,
    /// The offset of the page's first row.
    pub offset: u64,
    /// How many rows the whole answer has.
    pub total: u64,
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

/// One row before paging: its cells, and the goal tuple it was projected from.
struct Full {
    cells: Vec<Cell>,
    keys: Vec<Cell>,
    goal_tuple: Option<u32>,
}

impl Answer {
    /// Builds the page of `limit` rows starting at `offset` (on top of the program's own
    /// offset and limit) from a finished evaluation of `ir`.
    pub fn build(
        ir: &Ir,
        ev: &Evaluation<'_>,
        shape: &Shape,
        offset: u64,
        limit: u64,
    ) -> Result<Answer, EvalError> {
        Answer::build_from(ir, ev, shape, offset, limit, ir.goal, false)
    }

    /// As [`Answer::build`], reading the goal's solutions from relation `solutions`; with
    /// `alias`, that relation is the one the goal restates ([`Ir::goal_alias`]), so a row's
    /// witness is its tuple's own tree.
    pub fn build_from(
        ir: &Ir,
        ev: &Evaluation<'_>,
        shape: &Shape,
        offset: u64,
        limit: u64,
        solutions: usize,
        alias: bool,
    ) -> Result<Answer, EvalError> {
        let goal = &ev.relations[solutions];
        let value = |t: Term| ev.dict.value(t).map_err(EvalError::from);
        let grouped = shape
            .columns
            .iter()
            .any(|c| matches!(c, ColumnSpec::Agg { .. }))
            || !shape.having.is_empty()
            || shape
                .order
                .iter()
                .any(|o| matches!(o.column, ColumnSpec::Agg { .. }));
        let arity = ir.relations[solutions].arity;
        let mut rows: Vec<Full> = Vec::new();
        if grouped {
            // Group by terms (canonical: equal terms are equal values), decoding only each
            // group's key and what aggregates other than a plain count read.
            let group_vars: Vec<usize> = shape
                .columns
                .iter()
                .filter_map(|c| match c {
                    ColumnSpec::Var(v) => Some(*v),
                    ColumnSpec::Agg { .. } => None,
                })
                .collect();
            let mut by_terms: FxHashMap<Vec<Term>, Vec<u32>> = FxHashMap::default();
            // With no group variable, one group: every solution, not listed (no key to hash
            // per solution, and no list of every id to keep).
            if !group_vars.is_empty() {
                for (id, t) in goal.iter() {
                    let key: Vec<Term> = group_vars
                        .iter()
                        .map(|&v| t.get(v).copied().unwrap_or(Term::ABSENT))
                        .collect();
                    by_terms.entry(key).or_default().push(id);
                }
            }
            let mut groups: std::collections::BTreeMap<Vec<Value>, Members> =
                std::collections::BTreeMap::new();
            for (terms, members) in by_terms {
                let key = terms
                    .into_iter()
                    .map(value)
                    .collect::<Result<Vec<_>, _>>()?;
                match groups.entry(key).or_insert(Members::Ids(Vec::new())) {
                    Members::Ids(ids) => ids.extend(members),
                    Members::All(_) => {}
                }
            }
            if group_vars.is_empty() {
                groups.insert(Vec::new(), Members::All(goal.len()));
            }
            let member_values = |members: &Members, var: usize| -> Result<Vec<Value>, EvalError> {
                members
                    .ids()
                    .map(|id| value(goal.tuple(id).get(var).copied().unwrap_or(Term::ABSENT)))
                    .collect()
            };
            'groups: for (key, members) in groups {
                let cell = |c: &ColumnSpec,
                            key: &mut std::slice::Iter<'_, Value>|
                 -> Result<Cell, EvalError> {
                    Ok(match c {
                        ColumnSpec::Var(_) => {
                            Cell::Value(key.next().cloned().unwrap_or(Value::Absent))
                        }
                        ColumnSpec::Agg {
                            func,
                            distinct,
                            var: _,
                        } if *func == AggFunc::Count && !*distinct => {
                            // A count of solutions needs no value.
                            Cell::Value(Value::Number(members.len() as f64))
                        }
                        ColumnSpec::Agg {
                            func,
                            distinct,
                            var,
                        } => agg_cell(*func, *distinct, member_values(&members, *var)?)?,
                    })
                };
                for h in &shape.having {
                    let Cell::Value(v) = cell(&h.aggregate, &mut [].iter())? else {
                        continue 'groups;
                    };
                    if !naive::compare(h.op, &v, &h.value) {
                        continue 'groups;
                    }
                }
                let mut it = key.iter();
                let cells = shape
                    .columns
                    .iter()
                    .map(|c| cell(c, &mut it))
                    .collect::<Result<Vec<_>, _>>()?;
                let keys = shape
                    .order
                    .iter()
                    .map(|o| match &o.column {
                        ColumnSpec::Var(v) => {
                            let pos = shape.columns.iter().position(|c| c == &ColumnSpec::Var(*v));
                            Ok(pos.map_or(Cell::Value(Value::Absent), |p| cells[p].clone()))
                        }
                        agg => cell(agg, &mut [].iter()),
                    })
                    .collect::<Result<Vec<_>, EvalError>>()?;
                rows.push(Full {
                    cells,
                    keys,
                    goal_tuple: None,
                });
            }
        } else {
            // One flat array of values (no allocation per solution), then a slice per
            // solution, in default order, so each row keeps its least solution's witness.
            let mut flat: Vec<Value> = Vec::with_capacity(goal.len() as usize * arity);
            for (_, t) in goal.iter() {
                for &x in t {
                    flat.push(value(x)?);
                }
            }
            let mut sols: Vec<(u32, &[Value])> = if arity == 0 {
                goal.iter().map(|(id, _)| (id, &flat[..0])).collect()
            } else {
                flat.chunks(arity)
                    .zip(goal.iter())
                    .map(|(vals, (id, _))| (id, vals))
                    .collect()
            };
            sols.sort_by(|a, b| a.1.cmp(b.1));
            let mut seen = std::collections::BTreeSet::new();
            for (id, s) in &sols {
                let cells: Vec<Value> = shape
                    .columns
                    .iter()
                    .map(|c| match c {
                        ColumnSpec::Var(v) => s[*v].clone(),
                        ColumnSpec::Agg { .. } => Value::Absent,
                    })
                    .collect();
                if !seen.insert(cells.clone()) {
                    continue;
                }
                let keys = shape
                    .order
                    .iter()
                    .map(|o| match &o.column {
                        ColumnSpec::Var(v) => Cell::Value(s[*v].clone()),
                        ColumnSpec::Agg { .. } => Cell::Value(Value::Absent),
                    })
                    .collect();
                rows.push(Full {
                    cells: cells.into_iter().map(Cell::Value).collect(),
                    keys,
                    goal_tuple: Some(*id),
                });
            }
        }
        rows.sort_by(|a, b| {
            for (i, o) in shape.order.iter().enumerate() {
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
        // The program's own offset and limit, then the page's.
        let program_end = shape.limit.map_or(rows.len() as u64, |l| {
            (shape.offset + l).min(rows.len() as u64)
        });
        let program_start = shape.offset.min(program_end);
        let total = program_end - program_start;
        let start = (program_start + offset).min(program_end);
        let end = start.saturating_add(limit).min(program_end);
        let mut page = Vec::new();
        for full in rows.drain(start as usize..end as usize) {
            let witness = match (full.goal_tuple, ev.witnesses.as_ref()) {
                (Some(id), Some(w)) if alias => vec![node(
                    ir,
                    ev,
                    w,
                    Fact::Recorded(Premise::Tuple {
                        rel: solutions as u32,
                        id,
                    }),
                )?],
                (Some(id), Some(w)) => premises_of(ir, ev, w, ir.goal, id)?,
                _ => Vec::new(),
            };
            page.push(Row {
                cells: full.cells,
                witness,
            });
        }
        Ok(Answer {
            columns: shape.names.clone(),
            rows: page,
            offset: start - program_start,
            total,
        })
    }

    /// The offset to continue from, if rows follow this page.
    pub fn next(&self) -> Option<u64> {
        let end = self.offset + self.rows.len() as u64;
        (end < self.total).then_some(end)
    }

    /// The answer as the seed writes it: `columns: ...`, numbered rows with their witnesses
    /// indented beneath, and a last line with the count or the page and its continuation.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "columns: {}", self.columns.join(", "));
        for (i, row) in self.rows.iter().enumerate() {
            let _ = write!(out, "{}. ", self.offset + i as u64 + 1);
            for (j, c) in row.cells.iter().enumerate() {
                if j > 0 {
                    out.push_str(", ");
                }
                c.write(&mut out);
            }
            out.push('\n');
            for n in &row.witness {
                n.render(3, &mut out);
            }
        }
        match self.next() {
            Some(next) => {
                let _ = write!(
                    out,
                    "rows {} to {} of {}; continue with page_token \"{next}\"",
                    self.offset + 1,
                    self.offset + self.rows.len() as u64,
                    self.total
                );
            }
            None if self.offset > 0 && !self.rows.is_empty() => {
                let _ = write!(
                    out,
                    "rows {} to {} of {}",
                    self.offset + 1,
                    self.offset + self.rows.len() as u64,
                    self.total
                );
            }
            None if self.total == 1 => out.push_str("1 row"),
            None => {
                let _ = write!(out, "{} rows", self.total);
            }
        }
        out
    }
}

fn agg_cell(func: AggFunc, distinct: bool, mut values: Vec<Value>) -> Result<Cell, EvalError> {
    if func == AggFunc::List {
        values.sort();
        if distinct {
            values.dedup();
        }
        return Ok(Cell::List(values));
    }
    Ok(Cell::Value(naive::aggregate(func, distinct, values)?))
}

impl Cell {
    /// The cell as JSON (a list is an array).
    pub fn json(&self) -> serde_json::Value {
        match self {
            Cell::Value(v) => value_json(v),
            Cell::List(vs) => serde_json::Value::Array(vs.iter().map(value_json).collect()),
        }
    }
}

impl Answer {
    /// The answer as JSON: `columns`, `rows` (arrays of values), `witnesses` (per row, the
    /// trees of its premises), `total`, `offset` and `next` (the page token to continue
    /// with, or null).
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "columns": self.columns,
            "rows": self.rows.iter().map(|r| r.cells.iter().map(Cell::json).collect::<Vec<_>>()).collect::<Vec<_>>(),
            "witnesses": self.rows.iter().map(|r| r.witness.iter().map(Node::json).collect::<Vec<_>>()).collect::<Vec<_>>(),
            "total": self.total,
            "offset": self.offset,
            "next": self.next().map(|n| n.to_string()),
        })
    }
}
