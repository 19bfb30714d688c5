//! Fitting an answer to a byte budget ([`Answer::fit`]): rows are kept while their
//! rendering fits, and the rest of the page is left out, said so ([`Cut`]) with the page
//! token to go on from; a first row too big on its own is cut inside, a list to its first
//! values, a text to its first bytes, a witness to its first facts, each cut said so.
//! Sizes are measured as the chosen rendering writes them ([`Measure`]), JSON as it is
//! written pretty inside a response, so what is measured is an upper bound of what is sent.

use std::fmt;

use super::{Answer, Cell, Row};
use crate::budget::ByteBudget;
use crate::data::value::{Value, value_json, write_cell_value, write_value};
use crate::witness::Node;

/// Which rendering of an answer a budget is measured in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// The text rendering ([`Answer::text`]).
    Text,
    /// The JSON rendering, pretty-printed.
    Json,
}

/// What fitting an answer to a byte budget left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The budget, in bytes.
    pub max_bytes: u64,
    /// The rows of the page left out, from the first one the page token continues with.
    pub rows_left_out: u64,
    /// The values cut inside (of the page's first row, when it did not fit on its own).
    pub values: Vec<ValueCut>,
}

/// A value cut to fit a budget: the first `kept` of its `total` values or bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueCut {
    /// The row's number, as the text numbers it (from 1, across pages).
    pub row: u64,
    /// The column's index.
    pub column: usize,
    /// The values (of a list) or bytes (of a text) kept.
    pub kept: u64,
    /// The values or bytes the cell has.
    pub total: u64,
    /// What `kept` and `total` count.
    pub unit: CutUnit,
}

/// What a [`ValueCut`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutUnit {
    /// The values of a list.
    Values,
    /// The bytes of a text.
    Bytes,
}

impl fmt::Display for CutUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CutUnit::Values => "values",
            CutUnit::Bytes => "bytes",
        })
    }
}

impl Cut {
    /// The cut as JSON: `{"max_bytes", "rows_left_out", "values": [{"row", "column",
    /// "kept", "total", "unit"}]}`, columns by name.
    pub fn json(&self, columns: &[String]) -> serde_json::Value {
        serde_json::json!({
            "max_bytes": self.max_bytes,
            "rows_left_out": self.rows_left_out,
            "values": self.values.iter().map(|v| serde_json::json!({
                "row": v.row,
                "column": columns.get(v.column),
                "kept": v.kept,
                "total": v.total,
                "unit": v.unit.to_string(),
            })).collect::<Vec<_>>(),
        })
    }
}

/// Bytes a pretty JSON line adds inside a response: its newline and indent.
const JSON_LINE: u64 = 12;

impl Answer {
    /// The answer fitted to `max_bytes` of the `measure` rendering: the rows that fit, in
    /// order, and a [`Cut`] saying what was left out (none when everything fits). The
    /// first row is kept, cut inside if it does not fit on its own, so a page always
    /// moves on.
    pub fn fit(&self, max_bytes: u64, measure: Measure) -> Answer {
        let mut budget = ByteBudget::new(max_bytes);
        budget.charge(self.frame_size(measure));
        let mut rows = Vec::new();
        let mut values = Vec::new();
        for (i, row) in self.rows.iter().enumerate() {
            if let Some(size) = self.row_size(row, measure, budget.remaining())
                && budget.try_charge(size)
            {
                rows.push(row.clone());
                continue;
            }
            if i == 0 {
                rows.push(self.cut_row(row, measure, &mut budget, &mut values));
            }
            break;
        }
        let rows_left_out = (self.rows.len() - rows.len()) as u64;
        let cut = (rows_left_out > 0 || !values.is_empty()).then_some(Cut {
            max_bytes,
            rows_left_out,
            values,
        });
        Answer {
            columns: self.columns.clone(),
            rows,
            offset: self.offset,
            total: self.total,
            snapshot: self.snapshot,
            witness_facts: self.witness_facts,
            cut,
        }
    }

    /// The bytes of everything but the rows: the header, the last line, and room for the
    /// lines that say what was cut.
    fn frame_size(&self, measure: Measure) -> u64 {
        let names: u64 = self.columns.iter().map(|c| c.len() as u64).sum();
        let columns = self.columns.len() as u64;
        match measure {
            // The header, the last line, and a line per column for a value cut inside.
            Measure::Text => 12 + names + 2 * columns + 200 + columns * 100 + names,
            Measure::Json => 300 + 2 * names + columns * (JSON_LINE + 4 + 140),
        }
    }

    /// The bytes of `row` in `measure`, or `None` past `cap`.
    fn row_size(&self, row: &Row, measure: Measure, cap: u64) -> Option<u64> {
        let mut size = 24 + JSON_LINE;
        for cell in &row.cells {
            size += cell_size(cell, measure, cap.saturating_sub(size))?;
            if size > cap {
                return None;
            }
        }
        size += fact_sizes(&row.witness, measure).iter().sum::<u64>();
        if row.facts_left_out > 0 || row.facts_unbuilt > 0 {
            size += 120;
        }
        (size <= cap).then_some(size)
    }

    /// The first row, cut inside to what `budget` has room for: each cell whole while it
    /// fits, then a list to its first values and a text to its first bytes; the witness to
    /// its first facts. Each cut is added to `values` (the witness's to the row's facts
    /// left out).
    fn cut_row(
        &self,
        row: &Row,
        measure: Measure,
        budget: &mut ByteBudget,
        values: &mut Vec<ValueCut>,
    ) -> Row {
        let number = self.offset + 1;
        budget.charge(24 + JSON_LINE + 120);
        let mut cells = Vec::new();
        for (column, cell) in row.cells.iter().enumerate() {
            if let Some(size) = cell_size(cell, measure, budget.remaining())
                && budget.try_charge(size)
            {
                cells.push(cell.clone());
                continue;
            }
            let (kept, total, unit, cell) = match cell {
                Cell::List(vs) => {
                    let mut kept = Vec::new();
                    for v in vs {
                        if !budget.try_charge(value_size(v, measure, true)) {
                            break;
                        }
                        kept.push(v.clone());
                    }
                    (
                        kept.len() as u64,
                        vs.len() as u64,
                        CutUnit::Values,
                        Cell::List(kept),
                    )
                }
                Cell::Value(Value::Text(s)) => {
                    let prefix = text_prefix(s, measure, budget.remaining());
                    budget.charge(value_size(&Value::text(prefix), measure, false));
                    (
                        prefix.len() as u64,
                        s.len() as u64,
                        CutUnit::Bytes,
                        Cell::Value(Value::text(prefix)),
                    )
                }
                // A number or absent is a few bytes: kept whatever the budget.
                Cell::Value(v) => {
                    cells.push(Cell::Value(v.clone()));
                    continue;
                }
            };
            values.push(ValueCut {
                row: number,
                column,
                kept,
                total,
                unit,
            });
            cells.push(cell);
        }
        let mut room = 0;
        for size in fact_sizes(&row.witness, measure) {
            if !budget.try_charge(size) {
                break;
            }
            room += 1;
        }
        let (witness, left_out) = crate::witness::bound(row.witness.clone(), Some(room));
        Row {
            cells,
            witness,
            facts_left_out: row.facts_left_out + left_out,
            facts_unbuilt: row.facts_unbuilt,
        }
    }
}

/// The bytes of a cell in `measure`, or `None` past `cap`.
fn cell_size(cell: &Cell, measure: Measure, cap: u64) -> Option<u64> {
    let size = match cell {
        Cell::Value(v) => value_size(v, measure, false),
        Cell::List(vs) => {
            let mut size = 2 + JSON_LINE;
            for v in vs {
                size += value_size(v, measure, true);
                if size > cap {
                    return None;
                }
            }
            size
        }
    };
    (size <= cap).then_some(size)
}

/// The bytes of a value in `measure`: as a row's cell shows it, or in a list (`listed`).
fn value_size(v: &Value, measure: Measure, listed: bool) -> u64 {
    match measure {
        Measure::Text => {
            let mut s = String::new();
            if listed {
                write_value(v, &mut s);
            } else {
                write_cell_value(v, &mut s);
            }
            s.len() as u64 + 2
        }
        Measure::Json => value_json(v).to_string().len() as u64 + JSON_LINE,
    }
}

/// The longest prefix of `s` whose rendering as a cell fits `room` bytes.
fn text_prefix(s: &str, measure: Measure, room: u64) -> &str {
    let mut end = s.len().min(usize::try_from(room).unwrap_or(usize::MAX));
    loop {
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let prefix = &s[..end];
        if end == 0 || value_size(&Value::text(prefix), measure, false) <= room {
            return prefix;
        }
        end /= 2;
    }
}

/// The bytes of each fact of `trees` in the order the text shows them (a fact, then its
/// premises), as `measure` writes it.
fn fact_sizes(trees: &[Node], measure: Measure) -> Vec<u64> {
    let mut sizes = Vec::new();
    let mut stack: Vec<(&Node, u64)> = trees.iter().rev().map(|n| (n, 1)).collect();
    while let Some((n, level)) = stack.pop() {
        let mut fact = String::new();
        n.write_fact(&mut fact);
        let bytes = fact.len() as u64;
        sizes.push(match measure {
            Measure::Text => {
                let note = n.flat.map_or(0, |l| {
                    crate::witness::flat_note(l).len() as u64 + 3 * level + 4
                });
                3 * level + bytes + 1 + note
            }
            Measure::Json => {
                // The node alone, pretty, each line indented as deep as it sits in a
                // response (a row's witnesses sit three levels down, and each level of
                // premises two more).
                let alone = Node {
                    relation: n.relation.clone(),
                    values: n.values.clone(),
                    children: Vec::new(),
                    flat: n.flat,
                }
                .json();
                let pretty = serde_json::to_string_pretty(&alone).unwrap_or_default();
                let lines = pretty.lines().count() as u64;
                pretty.len() as u64 + lines * (6 + 4 * level) + 2
            }
        });
        stack.extend(n.children.iter().rev().map(|c| (c, level + 1)));
    }
    sizes
}
