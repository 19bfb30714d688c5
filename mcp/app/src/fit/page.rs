//! A page of rows fitted to a byte budget: the rows that fit, in order, and a [`Cut`] saying
//! what was left out (none when everything fits). The first row is kept, cut inside if it
//! does not fit on its own (a list to its first values, a text to its first bytes, a witness
//! to its first facts, each cut said so), so a page always moves on.
//!
//! The text ([`text`]) is measured in its own sizes as it writes them (a cell's text and
//! separator, each witness fact's line from [`witness_line_bytes`]), with room kept for each
//! row's number and line break and for the lines that say what was cut. The JSON ([`json`])
//! is measured by writing it: each candidate page is written pretty, as the response writes
//! it, by the caller's `fits`, so nothing about its layout is assumed here.

use strata_eval::witness::{bound, write_value};
use strata_eval::{Answer, ByteBudget, Cell, Cut, CutUnit, Row, Value, ValueCut};
use strata_eval::{Node, witness_line_bytes};

/// Bytes a text page keeps for a row past its cells and witness: its number, separators
/// and line break, with room to spare.
const TEXT_ROW: u64 = 36;

/// Bytes a text page keeps for the line saying a row's facts were left out.
const TEXT_FACTS_LEFT_OUT: u64 = 120;

/// Bytes a text list keeps past its values: its brackets, with room to spare.
const TEXT_LIST: u64 = 14;

/// `answer` with `rows` of it kept and `values` cut inside, its cut (if any) naming `budget`.
fn page(answer: &Answer, rows: Vec<Row>, values: Vec<ValueCut>, budget: u64) -> Answer {
    let rows_left_out = (answer.rows.len() - rows.len()) as u64;
    let cut = (rows_left_out > 0 || !values.is_empty()).then_some(Cut {
        max_bytes: budget,
        rows_left_out,
        values,
    });
    Answer {
        columns: answer.columns.clone(),
        rows,
        offset: answer.offset,
        total: answer.total,
        snapshot: answer.snapshot,
        witness_facts: answer.witness_facts,
        cut,
    }
}

/// `answer` fitted to `max_bytes` of its text ([`Answer::text`]), its cut naming `budget`.
pub(crate) fn text(answer: &Answer, max_bytes: u64, budget: u64) -> Answer {
    let mut room = ByteBudget::new(max_bytes);
    room.charge(text_frame(answer));
    let mut rows = Vec::new();
    let mut values = Vec::new();
    for (i, row) in answer.rows.iter().enumerate() {
        if let Some(size) = text_row(row, room.remaining())
            && room.try_charge(size)
        {
            rows.push(row.clone());
            continue;
        }
        if i == 0 {
            rows.push(text_cut_row(answer, row, &mut room, &mut values));
        }
        break;
    }
    page(answer, rows, values, budget)
}

/// The text's bytes for everything but the rows: the header, the last line, and a line per
/// column for a value cut inside.
fn text_frame(answer: &Answer) -> u64 {
    let names: u64 = answer.columns.iter().map(|c| c.len() as u64).sum();
    let columns = answer.columns.len() as u64;
    12 + names + 2 * columns + 200 + columns * 100 + names
}

/// The text's bytes of `row`, or `None` past `cap`.
fn text_row(row: &Row, cap: u64) -> Option<u64> {
    let mut size = TEXT_ROW;
    for cell in &row.cells {
        size += text_cell(cell, cap.saturating_sub(size))?;
        if size > cap {
            return None;
        }
    }
    size += witness_line_bytes(&row.witness).iter().sum::<u64>();
    if row.facts_left_out > 0 || row.facts_unbuilt > 0 {
        size += TEXT_FACTS_LEFT_OUT;
    }
    (size <= cap).then_some(size)
}

/// The first row, cut inside to what `room` has left: each cell whole while it fits, then a
/// list to its first values and a text to its first bytes; the witness to its first facts.
/// Each cut is added to `values` (the witness's to the row's facts left out).
fn text_cut_row(
    answer: &Answer,
    row: &Row,
    room: &mut ByteBudget,
    values: &mut Vec<ValueCut>,
) -> Row {
    let number = answer.offset + 1;
    room.charge(TEXT_ROW + TEXT_FACTS_LEFT_OUT);
    let mut cells = Vec::new();
    for (column, cell) in row.cells.iter().enumerate() {
        if let Some(size) = text_cell(cell, room.remaining())
            && room.try_charge(size)
        {
            cells.push(cell.clone());
            continue;
        }
        let (kept, total, unit, cell) = match cell {
            Cell::List(vs) => {
                let mut kept = Vec::new();
                for v in vs {
                    if !room.try_charge(text_listed(v)) {
                        break;
                    }
                    kept.push(v.clone());
                }
                let n = kept.len() as u64;
                (n, vs.len() as u64, CutUnit::Values, Cell::List(kept))
            }
            Cell::Value(Value::Text(s)) => {
                let prefix = text_prefix(s, room.remaining());
                let cell = Cell::Value(Value::text(prefix));
                room.charge(text_cell_value(&cell));
                (prefix.len() as u64, s.len() as u64, CutUnit::Bytes, cell)
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
    let mut facts = 0;
    for size in witness_line_bytes(&row.witness) {
        if !room.try_charge(size) {
            break;
        }
        facts += 1;
    }
    let (witness, left_out) = bound(row.witness.clone(), Some(facts));
    Row {
        cells,
        witness,
        facts_left_out: row.facts_left_out + left_out,
        facts_unbuilt: row.facts_unbuilt,
    }
}

/// The text's bytes of a cell, or `None` past `cap`.
fn text_cell(cell: &Cell, cap: u64) -> Option<u64> {
    let size = match cell {
        Cell::Value(_) => text_cell_value(cell),
        Cell::List(vs) => {
            let mut size = TEXT_LIST;
            for v in vs {
                size += text_listed(v);
                if size > cap {
                    return None;
                }
            }
            size
        }
    };
    (size <= cap).then_some(size)
}

/// The text's bytes of a one-value cell and its separator.
fn text_cell_value(cell: &Cell) -> u64 {
    let mut s = String::new();
    cell.write(&mut s);
    s.len() as u64 + 2
}

/// The text's bytes of a value in a list and its separator.
fn text_listed(v: &Value) -> u64 {
    let mut s = String::new();
    write_value(v, &mut s);
    s.len() as u64 + 2
}

/// A prefix of `s` whose cell fits `room` bytes: the longest within `room` bytes, halved
/// until its cell (quoted and escaped) fits.
fn text_prefix(s: &str, room: u64) -> &str {
    let mut end = s.len().min(usize::try_from(room).unwrap_or(usize::MAX));
    loop {
        end = floor_boundary(s, end);
        let prefix = &s[..end];
        if end == 0 || text_cell_value(&Cell::Value(Value::text(prefix))) <= room {
            return prefix;
        }
        end /= 2;
    }
}

/// The greatest character boundary of `s` at or before `end`.
fn floor_boundary(s: &str, mut end: usize) -> usize {
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// `answer` fitted to the JSON `fits` measures: the most rows whose page `fits`, its cut
/// naming `budget`. `fits` writes a candidate page as the response writes it and says
/// whether it is within the budget.
pub(crate) fn json(answer: &Answer, budget: u64, fits: &dyn Fn(&Answer) -> bool) -> Answer {
    let n = answer.rows.len();
    let kept = |k: usize| page(answer, answer.rows[..k].to_vec(), Vec::new(), budget);
    if answer.cut.is_none() && fits(answer) {
        return answer.clone();
    }
    if n == 0 || fits(&kept(1)) {
        // Double the rows while they fit, then halve the gap to the first that does not.
        let mut lo = n.min(1);
        while lo < n {
            let hi = (lo * 2).min(n);
            if fits(&kept(hi)) {
                lo = hi;
            } else {
                lo = largest(lo, hi - 1, &|k| fits(&kept(k)));
                break;
            }
        }
        return kept(lo);
    }
    json_cut_row(answer, budget, fits)
}

/// The page of `answer`'s first row alone, cut inside until it `fits`: each cell whole
/// while it fits, then a list to its first values and a text to its first bytes, the most
/// that fit with room left for the cells after it (each as small as it could be cut, and
/// said cut); then the witness to the most facts that fit.
fn json_cut_row(answer: &Answer, budget: u64, fits: &dyn Fn(&Answer) -> bool) -> Answer {
    let row = &answer.rows[0];
    let number = answer.offset + 1;
    let (_, facts) = bound(row.witness.clone(), Some(0));
    let cut = |column: usize, kept: usize, total: usize, unit| ValueCut {
        row: number,
        column,
        kept: kept as u64,
        total: total as u64,
        unit,
    };
    // The row as far as it is decided.
    let with = |cells: Vec<Cell>, values: Vec<ValueCut>, witness: Vec<Node>, left_out: u64| {
        let row = Row {
            cells,
            witness,
            facts_left_out: row.facts_left_out + left_out,
            facts_unbuilt: row.facts_unbuilt,
        };
        page(answer, vec![row], values, budget)
    };
    // Whether the cells decided and `cell` of `column` fit, every later cell as small as it
    // could be cut and said cut, the witness left out whole.
    let fits_with = |cells: &[Cell], values: &[ValueCut], column: usize, cell: Cell, value| {
        let mut c = cells.to_vec();
        c.push(cell);
        let mut v = values.to_vec();
        v.extend(value);
        for (j, later) in row.cells.iter().enumerate().skip(column + 1) {
            let (least, said) = match later {
                Cell::List(vs) => (
                    Cell::List(Vec::new()),
                    Some(cut(j, vs.len(), vs.len(), CutUnit::Values)),
                ),
                Cell::Value(Value::Text(s)) => (
                    Cell::Value(Value::text("")),
                    Some(cut(j, s.len(), s.len(), CutUnit::Bytes)),
                ),
                other => (other.clone(), None),
            };
            c.push(least);
            v.extend(said);
        }
        fits(&with(c, v, Vec::new(), facts))
    };
    let mut cells: Vec<Cell> = Vec::new();
    let mut values: Vec<ValueCut> = Vec::new();
    // No more values or bytes fit than the budget has bytes.
    let most = usize::try_from(budget).unwrap_or(usize::MAX);
    for (column, cell) in row.cells.iter().enumerate() {
        let (cell, value) = match cell {
            _ if fits_with(&cells, &values, column, cell.clone(), None) => (cell.clone(), None),
            Cell::List(vs) => {
                let list = |k: usize| Cell::List(vs[..k].to_vec());
                let said = |k: usize| cut(column, k, vs.len(), CutUnit::Values);
                let k = largest(0, vs.len().saturating_sub(1).min(most), &|k| {
                    fits_with(&cells, &values, column, list(k), Some(said(k)))
                });
                (list(k), Some(said(k)))
            }
            Cell::Value(Value::Text(s)) => {
                let text = |b: usize| Cell::Value(Value::text(&s[..b]));
                let said = |b: usize| cut(column, b, s.len(), CutUnit::Bytes);
                let b = largest(0, s.len().saturating_sub(1).min(most), &|b| {
                    let b = floor_boundary(s, b);
                    fits_with(&cells, &values, column, text(b), Some(said(b)))
                });
                let b = floor_boundary(s, b);
                (text(b), Some(said(b)))
            }
            // A number or absent is a few bytes: kept whatever the budget.
            Cell::Value(v) => (Cell::Value(v.clone()), None),
        };
        cells.push(cell);
        values.extend(value);
    }
    let witness = |room: u64| bound(row.witness.clone(), Some(room));
    let room = largest(0, usize::try_from(facts).unwrap_or(usize::MAX), &|r| {
        let (w, left_out) = witness(r as u64);
        fits(&with(cells.clone(), values.clone(), w, left_out))
    });
    let (w, left_out) = witness(room as u64);
    with(cells, values, w, left_out)
}

/// The greatest `k` in `lo ..= hi` for which `fits` holds (`fits` holding up to some `k` and
/// not past it), or `lo` when none does.
fn largest(mut lo: usize, mut hi: usize, fits: &dyn Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}
