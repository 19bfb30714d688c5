//! The rows of a plain answer (no aggregate) kept as terms until a page is rendered: the
//! goal's solutions projected onto the columns and deduplicated by their terms (equal terms
//! are equal values), each distinct term resolved once to rank it in the default order, and
//! only the rows a page shows selected, by their ranks, and resolved.
//!
//! The cost is one pass over the solutions (a hash of each column's term), the distinct
//! terms' values (each once, none kept per row), and a selection over the distinct rows
//! that is linear whatever the page: no sort of every row, and no text held per row.

use std::cmp::Ordering;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap};
use smallvec::SmallVec;

use crate::data::dict::Dict;
use crate::data::source::SourceError;
use crate::data::value::{Term, TermKind, Value};
use crate::exec::relation::Relation;

/// Below this many candidate rows (or a few times the page), a selection sorts them.
const SORT_BELOW: usize = 4096;

/// A row of local term numbers, as built from one solution.
type Local = SmallVec<[u32; 4]>;

/// The distinct projections of a goal's solutions, as local term numbers.
pub(crate) struct Table {
    /// The goal position each column reads.
    columns: Vec<usize>,
    /// Whether the columns read every position of the goal, so that each solution is its
    /// own row (the goal holds no tuple twice) and row `i` is goal tuple `i`.
    whole: bool,
    /// The rows, `columns.len()` local numbers each.
    cells: Vec<u32>,
    /// How many rows.
    len: usize,
    /// The term of each local number, in order of first appearance.
    terms: Vec<Term>,
    /// The local number of each term.
    local: FxHashMap<Term, u32>,
    /// The rank of each local number's value in the default order (equal values are equal
    /// terms, so ranks are distinct).
    rank: Vec<u32>,
}

impl Table {
    /// The distinct projections of `goal`'s tuples onto `columns` (goal positions).
    pub(crate) fn project(goal: &Relation, columns: &[usize]) -> Table {
        let width = columns.len();
        let whole = (0..goal.arity()).all(|p| columns.contains(&p));
        let mut table = Table {
            columns: columns.to_vec(),
            whole,
            cells: Vec::with_capacity(if whole {
                goal.len() as usize * width
            } else {
                0
            }),
            len: 0,
            terms: Vec::new(),
            local: FxHashMap::default(),
            rank: Vec::new(),
        };
        let hasher = FxBuildHasher;
        let mut seen: HashTable<u32> = HashTable::new();
        let mut row = Local::new();
        for (_, t) in goal.iter() {
            let known = table.terms.len();
            table.local_row(t, &mut row);
            if !whole && width == 1 {
                // One column: a row is new exactly when its term is.
                if table.terms.len() == known {
                    continue;
                }
            } else if !whole {
                let cells = &table.cells;
                let hash = hasher.hash_one(&row[..]);
                let entry = seen.entry(
                    hash,
                    |&r| cells[r as usize * width..(r as usize + 1) * width] == row[..],
                    |&r| hasher.hash_one(&cells[r as usize * width..(r as usize + 1) * width]),
                );
                match entry {
                    hashbrown::hash_table::Entry::Occupied(_) => continue,
                    hashbrown::hash_table::Entry::Vacant(v) => {
                        #[allow(clippy::cast_possible_truncation)] // rows <= goal tuples
                        v.insert(table.len as u32);
                    }
                }
            }
            table.cells.extend_from_slice(&row);
            table.len += 1;
        }
        table
    }

    /// Fills `row` with the local numbers of tuple `t`'s columns, numbering new terms.
    fn local_row(&mut self, t: &[Term], row: &mut Local) {
        row.clear();
        for &c in &self.columns {
            let term = t.get(c).copied().unwrap_or(Term::ABSENT);
            let terms = &mut self.terms;
            #[allow(clippy::cast_possible_truncation)] // terms <= goal tuples * width
            let id = *self.local.entry(term).or_insert_with(|| {
                terms.push(term);
                (terms.len() - 1) as u32
            });
            row.push(id);
        }
    }

    /// How many distinct rows.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Ranks the distinct terms in the default order, resolving each once: the source's
    /// together ([`FactSource::values`](crate::FactSource::values), so the evaluation's
    /// dictionary keeps no copy of them), those the evaluation made from its dictionary.
    pub(crate) fn rank(&mut self, dict: &Dict<'_>) -> Result<(), SourceError> {
        let mut values = vec![Value::Absent; self.terms.len()];
        let mut stored = Vec::new();
        let mut at = Vec::new();
        for (i, &t) in self.terms.iter().enumerate() {
            match t.kind() {
                TermKind::Absent => {}
                TermKind::Integer(n) => values[i] = Value::Number(f64::from(n)),
                TermKind::Text(_) | TermKind::Number(_) if dict.made(t) => {
                    values[i] = dict.value(t)?;
                }
                TermKind::Text(_) | TermKind::Number(_) => {
                    stored.push(t);
                    at.push(i);
                }
            }
        }
        for (i, v) in at.into_iter().zip(dict.source().values(&stored)?) {
            values[i] = v;
        }
        #[allow(clippy::cast_possible_truncation)] // terms <= goal tuples * width
        let mut order: Vec<u32> = (0..values.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| values[a as usize].cmp(&values[b as usize]));
        self.rank = vec![0; order.len()];
        for (r, &l) in order.iter().enumerate() {
            #[allow(clippy::cast_possible_truncation)]
            {
                self.rank[l as usize] = r as u32;
            }
        }
        Ok(())
    }

    /// The terms of row `r`, one per column.
    pub(crate) fn terms(&self, r: u32) -> impl Iterator<Item = Term> + '_ {
        let w = self.columns.len();
        self.cells[r as usize * w..(r as usize + 1) * w]
            .iter()
            .map(|&l| self.terms[l as usize])
    }

    /// The rows at positions `start..end` of the order `keys` give (each a column and
    /// whether it is descending), then the columns ascending: the rows a page shows, in
    /// order. Needs [`Table::rank`] first.
    pub(crate) fn select(&self, keys: &[(usize, bool)], start: usize, end: usize) -> Vec<u32> {
        let end = end.min(self.len);
        let mut out = Vec::new();
        if start < end {
            let sort = Sort::new(self, keys);
            sort.select(None, 0, start, end, &mut out);
        }
        out
    }

    /// The goal tuple each of `rows` was projected from: for a row of several solutions,
    /// the least in the default order of their values, position by position (the solution
    /// whose witness the row shows).
    pub(crate) fn least_solutions(
        &mut self,
        goal: &Relation,
        rows: &[u32],
        dict: &Dict<'_>,
    ) -> Result<Vec<u32>, SourceError> {
        if self.whole {
            return Ok(rows.to_vec());
        }
        let w = self.columns.len();
        let wanted: FxHashMap<Local, usize> = rows
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let cells = &self.cells[r as usize * w..(r as usize + 1) * w];
                (Local::from_slice(cells), i)
            })
            .collect();
        let mut best: Vec<Option<u32>> = vec![None; rows.len()];
        let mut values: FxHashMap<Term, Value> = FxHashMap::default();
        let mut row = Local::new();
        for (id, t) in goal.iter() {
            self.local_row(t, &mut row);
            let Some(&i) = wanted.get(&row) else {
                continue;
            };
            let less = match best[i] {
                None => true,
                Some(b) => least_first(t, goal.tuple(b), dict, &mut values)? == Ordering::Less,
            };
            if less {
                best[i] = Some(id);
            }
        }
        Ok(best.into_iter().map(|b| b.unwrap_or(0)).collect())
    }
}

/// Two solutions in the default order of their values, position by position, resolving
/// only the positions whose terms differ (each term once, into `values`).
fn least_first(
    a: &[Term],
    b: &[Term],
    dict: &Dict<'_>,
    values: &mut FxHashMap<Term, Value>,
) -> Result<Ordering, SourceError> {
    for (&x, &y) in a.iter().zip(b) {
        if x == y {
            continue;
        }
        for t in [x, y] {
            if let std::collections::hash_map::Entry::Vacant(e) = values.entry(t) {
                e.insert(resolve(dict, t)?);
            }
        }
        let ord = values[&x].cmp(&values[&y]);
        if ord != Ordering::Equal {
            return Ok(ord);
        }
    }
    Ok(Ordering::Equal)
}

/// The value of `t`: a stored term read from the source itself (not kept in the
/// dictionary's cache), a term the evaluation made from its dictionary.
fn resolve(dict: &Dict<'_>, t: Term) -> Result<Value, SourceError> {
    match t.kind() {
        TermKind::Absent => Ok(Value::Absent),
        TermKind::Integer(n) => Ok(Value::Number(f64::from(n))),
        TermKind::Text(_) | TermKind::Number(_) => match dict.source().value(t) {
            Ok(v) => Ok(v),
            Err(_) => dict.value(t),
        },
    }
}

/// The order of a table's rows: each row's key components, the `order by` keys (a
/// descending key's rank reversed) then every column's rank.
struct Sort<'t> {
    table: &'t Table,
    /// For each component, the column it reads and whether it is reversed.
    components: Vec<(usize, bool)>,
    /// The number of distinct terms: ranks run from 0 below it.
    ranks: u32,
}

impl<'t> Sort<'t> {
    fn new(table: &'t Table, keys: &[(usize, bool)]) -> Sort<'t> {
        let mut components = keys.to_vec();
        components.extend((0..table.columns.len()).map(|c| (c, false)));
        #[allow(clippy::cast_possible_truncation)]
        let ranks = table.rank.len() as u32;
        Sort {
            table,
            components,
            ranks,
        }
    }

    /// Component `k` of row `r`.
    fn component(&self, r: u32, k: usize) -> u32 {
        let (c, desc) = self.components[k];
        let w = self.table.columns.len();
        let rank = self.table.rank[self.table.cells[r as usize * w + c] as usize];
        if desc { self.ranks - 1 - rank } else { rank }
    }

    /// Rows `a` and `b` by their components from `level` on.
    fn cmp(&self, a: u32, b: u32, level: usize) -> Ordering {
        (level..self.components.len())
            .map(|k| self.component(a, k).cmp(&self.component(b, k)))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }

    /// Appends to `out` the rows at positions `start..end` (`start < end <=` the
    /// candidates) among `rows` (`None`: every row), all of which agree on the components
    /// before `level`. A histogram of component `level` says which of its values hold the
    /// positions; only those rows are kept, a value's rows taken deeper by the next
    /// component, until few enough are left to sort.
    fn select(
        &self,
        rows: Option<&[u32]>,
        level: usize,
        start: usize,
        end: usize,
        out: &mut Vec<u32>,
    ) {
        let n = rows.map_or(self.table.len, <[u32]>::len);
        if level == self.components.len() || n <= SORT_BELOW.max(8 * (end - start)) {
            #[allow(clippy::cast_possible_truncation)] // rows <= goal tuples
            let mut all: Vec<u32> = match rows {
                Some(rows) => rows.to_vec(),
                None => (0..n as u32).collect(),
            };
            if end < all.len() {
                all.select_nth_unstable_by(end, |&a, &b| self.cmp(a, b, level));
                all.truncate(end);
            }
            if start > 0 {
                all.select_nth_unstable_by(start, |&a, &b| self.cmp(a, b, level));
            }
            let page = &mut all[start..];
            page.sort_unstable_by(|&a, &b| self.cmp(a, b, level));
            out.extend_from_slice(page);
            return;
        }
        #[allow(clippy::cast_possible_truncation)]
        let each = |f: &mut dyn FnMut(u32)| match rows {
            Some(rows) => rows.iter().for_each(|&r| f(r)),
            None => (0..n as u32).for_each(f),
        };
        let mut counts = vec![0usize; self.ranks as usize];
        each(&mut |r| counts[self.component(r, level) as usize] += 1);
        // The values whose rows hold positions start..end, and the rows before the first.
        let mut before = 0;
        let mut lo = None;
        let mut hi = 0;
        let mut at = 0;
        for (v, &c) in counts.iter().enumerate() {
            if lo.is_none() && at + c > start {
                lo = Some(v);
                before = at;
            }
            at += c;
            if at >= end {
                hi = v;
                break;
            }
        }
        let lo = lo.unwrap_or(hi);
        #[allow(clippy::cast_possible_truncation)]
        let wanted = |v: u32| (lo as u32..=hi as u32).contains(&v);
        // The kept rows grouped by their value, in order (a counting sort of the few).
        let mut offsets: Vec<usize> = Vec::with_capacity(hi - lo + 2);
        let mut sum = 0;
        for &c in &counts[lo..=hi] {
            offsets.push(sum);
            sum += c;
        }
        offsets.push(sum);
        drop(counts);
        let mut kept = vec![0u32; sum];
        let mut next = offsets.clone();
        each(&mut |r| {
            let v = self.component(r, level);
            if wanted(v) {
                let slot = &mut next[v as usize - lo];
                kept[*slot] = r;
                *slot += 1;
            }
        });
        for v in 0..=hi - lo {
            let (first, last) = (before + offsets[v], before + offsets[v + 1]);
            let (s, e) = (start.max(first), end.min(last));
            if s < e {
                let group = &kept[offsets[v]..offsets[v + 1]];
                self.select(Some(group), level + 1, s - first, e - first, out);
            }
        }
    }
}
