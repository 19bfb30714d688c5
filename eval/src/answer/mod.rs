//! Answers: the goal's solutions projected, aggregated, filtered, ordered and paged, each row
//! with its witness, as data ([`Answer`]), and written as the seed writes them
//! ([`Answer::text`]). Its JSON, and fitting a page to a byte budget, are the application's
//! (`strata_app`'s `render` and `fit`): the engine measures nothing; [`Cut`] is what a fit
//! left out, which the text says.
//!
//! Takes a finished [`Evaluation`] and the [`Shape`] the checker gave the goal; gives a page
//! of [`Answer`]. [`query`] is the whole pipeline a caller runs (prepare, rewrite, evaluate,
//! answer); [`explain`] reports where an evaluation's work went.

mod build;
mod by_demand;
mod cut;
pub mod explain;
pub mod query;
mod table;
pub mod token;

pub use build::{Input, Window};
pub use cut::{Cut, CutUnit, ValueCut};
pub use token::{PageToken, PageTokenError};

use std::cmp::Ordering;
use std::fmt::Write as _;

use crate::data::value::Value;
use crate::data::value::{write_cell_value, write_value};
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

    /// Writes the cell as the text answer shows it: text bare (quoted and escaped where bare
    /// it would be ambiguous or unsafe: holding `, `, starting with `"`, or holding a control
    /// character), lists in brackets with their text quoted.
    pub fn write(&self, out: &mut String) {
        match self {
            Cell::Value(v) => write_cell_value(v, out),
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

/// How far [`Answer::text`] indents a row's witness: three spaces, and three more per level.
const WITNESS_INDENT: usize = 3;

/// One row of an answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The cells, one per column.
    pub cells: Vec<Cell>,
    /// The facts the row was derived from: one tree per positive goal literal (none for an
    /// aggregate row, or when witnesses were off), each deeper than
    /// [`crate::witness::FLAT_DEPTH`] levels written flat, at most the answer's
    /// [`Answer::witness_facts`] facts in all.
    pub witness: Vec<Node>,
    /// The facts of the row's witness left out (past [`Answer::witness_facts`], or to fit
    /// a byte budget).
    pub facts_left_out: u64,
    /// Premises of the row's witness not built at all, past the page's
    /// [`crate::witness::WITNESS_BUILD`] facts: each stands for one fact or more, so the
    /// facts left out are at least `facts_left_out + facts_unbuilt`.
    pub facts_unbuilt: u64,
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
    /// The snapshot the answer was read at (its batch sequence number), which the page
    /// token names; `None` for a base without snapshots.
    pub snapshot: Option<u64>,
    /// The most facts a row's witness shows (`None`: whole witnesses, as `witness_row`
    /// asks).
    pub witness_facts: Option<u64>,
    /// What fitting the page to a byte budget left out, if anything (set by the
    /// application, which fits; [`Answer::text`] says it).
    pub cut: Option<Cut>,
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
            stop: None,
        };
        input.answer(Window {
            offset,
            limit,
            witness_facts: Some(crate::witness::WITNESS_FACTS),
        })
    }

    /// The offset to continue from, if rows follow this page (never after a page of no
    /// rows: continuing from it would answer it again).
    pub fn next(&self) -> Option<u64> {
        let end = self.offset + self.rows.len() as u64;
        (end < self.total && !self.rows.is_empty()).then_some(end)
    }

    /// The page token to continue with, if rows follow this page: the offset of the next
    /// row and the snapshot read.
    pub fn token(&self) -> Option<PageToken> {
        self.next().map(|n| PageToken::new(n, self.snapshot))
    }

    /// The answer as the seed writes it: `columns: ...`, numbered rows with their witnesses
    /// indented beneath, and a last line with the count or the page and its continuation;
    /// before it, what was cut to fit a byte budget.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "columns: {}", self.columns.join(", "));
        for (i, row) in self.rows.iter().enumerate() {
            self.write_row(i, row, &mut out);
        }
        if let Some(cut) = &self.cut {
            for v in &cut.values {
                let _ = writeln!(
                    out,
                    "row {}, column {}: {} of {} {} shown, to keep the answer under {} bytes",
                    v.row,
                    self.columns.get(v.column).map_or("?", String::as_str),
                    v.kept,
                    v.total,
                    v.unit,
                    cut.max_bytes
                );
            }
        }
        let left_out = self.cut.as_ref().map_or(0, |c| c.rows_left_out);
        match self.token() {
            Some(token) if left_out > 0 => {
                let _ = write!(
                    out,
                    "rows {} to {} of {}; {left_out} more row{} of this page left out to keep the \
                     answer under {} bytes; continue with page_token \"{token}\"",
                    self.offset + 1,
                    self.offset + self.rows.len() as u64,
                    self.total,
                    if left_out == 1 { "" } else { "s" },
                    self.cut.as_ref().map_or(0, |c| c.max_bytes),
                );
            }
            Some(token) => {
                let _ = write!(
                    out,
                    "rows {} to {} of {}; continue with page_token \"{token}\"",
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

    /// Writes row `i` of the page: its number and cells (a value cut to fit a budget ends
    /// in `...`), its witness beneath, and how many facts of it were left out.
    pub(crate) fn write_row(&self, i: usize, row: &Row, out: &mut String) {
        let number = self.offset + i as u64 + 1;
        let _ = write!(out, "{number}. ");
        for (j, c) in row.cells.iter().enumerate() {
            if j > 0 {
                out.push_str(", ");
            }
            let cut = self
                .cut
                .as_ref()
                .is_some_and(|cut| cut.values.iter().any(|v| v.row == number && v.column == j));
            match c {
                Cell::List(vs) if cut => {
                    out.push('[');
                    for v in vs {
                        write_value(v, out);
                        out.push_str(", ");
                    }
                    out.push_str("...]");
                }
                c => {
                    c.write(out);
                    if cut {
                        out.push_str("...");
                    }
                }
            }
        }
        out.push('\n');
        for n in &row.witness {
            n.render(WITNESS_INDENT, out);
        }
        if row.facts_unbuilt > 0 {
            let _ = writeln!(
                out,
                "   ... at least {} more facts, past the {} a page's witnesses may build",
                row.facts_left_out + row.facts_unbuilt,
                crate::witness::WITNESS_BUILD
            );
        } else if row.facts_left_out > 0 {
            let s = if row.facts_left_out == 1 { "" } else { "s" };
            let _ = match self.witness_facts {
                Some(_) => writeln!(
                    out,
                    "   ... {} more fact{s} (witness_row {number} answers this row with its whole \
                     witness)",
                    row.facts_left_out
                ),
                None => writeln!(
                    out,
                    "   ... {} more fact{s}, left out to keep the answer under its byte budget",
                    row.facts_left_out
                ),
            };
        }
    }
}

/// The bytes of each fact of a row's witness `trees` as [`Answer::text`] writes it (its line,
/// and a flat tree's note), in the order written: a fact, then its premises. What a text
/// page fitted to a budget measures its witnesses by.
pub fn witness_line_bytes(trees: &[Node]) -> Vec<u64> {
    let mut sizes = Vec::new();
    let mut line = String::new();
    let mut stack: Vec<(&Node, usize)> = trees.iter().rev().map(|n| (n, WITNESS_INDENT)).collect();
    while let Some((n, depth)) = stack.pop() {
        line.clear();
        n.write_line(depth, &mut line);
        sizes.push(line.len() as u64);
        stack.extend(n.children.iter().rev().map(|c| (c, depth + 3)));
    }
    sizes
}
