//! Answers: the goal's solutions projected, aggregated, filtered, ordered and paged, each row
//! with its witness, written as the seed writes them (text) or as JSON.
//!
//! Takes a finished [`Evaluation`] and the [`Shape`] the checker gave the goal; gives a page
//! of [`Answer`]. [`query`] is the whole pipeline a caller runs (prepare, rewrite, evaluate,
//! answer); [`explain`] reports where an evaluation's work went.

mod build;
pub mod explain;
pub mod query;

pub use build::{Input, Window};

use std::cmp::Ordering;
use std::fmt::Write as _;

use crate::data::value::Value;
use crate::data::value::{value_json, write_value};
use crate::exec::engine::{EvalError, Evaluation};
use crate::ir::Ir;
pub use crate::ir::{ColumnSpec, HavingSpec, OrderSpec, Shape};
use crate::witness::Node;

/// A value in an answer: a value, or a list from `list(...)`.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// One value.
    Value(Value),
    /// A list, in answer order.
    List(Vec<Value>),
}

impl Cell {
    pub(crate) fn cmp(&self, other: &Cell) -> Ordering {
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
        let input = Input {
            ir,
            ev,
            shape,
            solutions: ir.goal,
            alias: false,
        };
        input.answer(Window { offset, limit })
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
