//! The rows of a plain answer (no aggregate) kept as terms until a page is rendered: the
//! goal's solutions projected onto the columns and deduplicated by their terms (equal terms
//! are equal values), and only the rows a page shows selected and resolved.
//!
//! The cost is one pass over the solutions (a hash of each row, none when the columns are
//! every goal variable), the values of the distinct terms the order must compare (each read once, none kept per row), and a
//! selection that is linear whatever the page: no sort of every row or every term, and no
//! text held per row. The selection goes component by component of the order: it counts
//! the rows of each distinct value of the first component, selects by weight the values
//! whose rows hold the page's positions, and takes only those values' rows on to the next
//! component, whose terms are resolved only then.

use std::cmp::Ordering;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};
use smallvec::SmallVec;

use super::build::check_at;
use crate::data::dict::Dict;
use crate::data::source::SourceError;
use crate::data::value::{Term, TermKind, Value};
use crate::exec::budget::Budget;
use crate::exec::engine::EvalError;
use crate::exec::relation::Relation;

/// Below this many candidate rows (or a few times the page), a selection sorts them.
const SORT_BELOW: usize = 4096;

/// A row's terms, as projected from one solution.
type Row = SmallVec<[Term; 4]>;

/// The distinct projections of a goal's solutions, as terms.
pub(crate) struct Table<'g> {
    /// The goal position each column reads.
    columns: Vec<usize>,
    /// Whether the columns read every position of the goal, so that each solution is its
    /// own row (the goal holds no tuple twice) and row `i` is goal tuple `i`.
    whole: bool,
    /// The goal itself, when the columns read its positions in order: its tuples are the
    /// rows, and none is copied (a closure's millions of pairs stay where they are).
    same: Option<&'g Relation>,
    /// The rows, `columns.len()` terms each (empty when `same`).
    cells: Vec<Term>,
    /// How many rows.
    len: usize,
}

impl<'g> Table<'g> {
    /// The distinct projections of `goal`'s tuples onto `columns` (goal positions).
    /// `stop`'s limits are checked as the solutions are read.
    pub(crate) fn project(
        goal: &'g Relation,
        columns: &[usize],
        stop: Option<&Budget>,
    ) -> Result<Table<'g>, EvalError> {
        let width = columns.len();
        let whole = (0..goal.arity()).all(|p| columns.contains(&p));
        if columns.iter().copied().eq(0..goal.arity()) {
            check_at(stop, 0)?;
            return Ok(Table {
                columns: columns.to_vec(),
                whole,
                same: Some(goal),
                cells: Vec::new(),
                len: goal.len() as usize,
            });
        }
        let mut table = Table {
            columns: columns.to_vec(),
            whole,
            same: None,
            cells: Vec::with_capacity(if whole {
                goal.len() as usize * width
            } else {
                0
            }),
            len: 0,
        };
        let hasher = FxBuildHasher;
        let mut seen: HashTable<u32> = HashTable::new();
        let mut one: FxHashSet<Term> = FxHashSet::default();
        let mut row = Row::new();
        for (id, t) in goal.iter() {
            check_at(stop, id)?;
            table.project_row(t, &mut row);
            if !whole && width == 1 {
                // One column: a row is new exactly when its term is.
                if !one.insert(row[0]) {
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
        Ok(table)
    }

    /// Fills `row` with the terms of tuple `t`'s columns.
    fn project_row(&self, t: &[Term], row: &mut Row) {
        row.clear();
        row.extend(
            self.columns
                .iter()
                .map(|&c| t.get(c).copied().unwrap_or(Term::ABSENT)),
        );
    }

    /// When the rows are the goal's own tuples sorted by their first term (as a closure
    /// searched from each source, or a relation read from the store, holds them): each
    /// distinct first term with the range of rows holding it, in term order. `None` as
    /// soon as a term is less than the one before.
    fn first_term_runs(&self) -> Option<Vec<(Term, std::ops::Range<u32>)>> {
        let goal = self.same?;
        let arity = goal.arity();
        if arity == 0 {
            return None;
        }
        let firsts = goal.terms();
        let first = |i: usize| firsts[i * arity];
        let n = goal.len() as usize;
        // In order: one pass over the first terms, comparing neighbours and nothing else.
        let mut before = Term(0);
        for tuple in firsts.chunks_exact(arity) {
            if tuple[0] < before {
                return None;
            }
            before = tuple[0];
        }
        // Each run's end found by doubling steps, then halving (few runs of many rows: a
        // closure's sources).
        let mut runs: Vec<(Term, std::ops::Range<u32>)> = Vec::new();
        let mut start = 0;
        while start < n {
            let t = first(start);
            // `first(lo) == t`; `hi` is past the run or `n`.
            let (mut lo, mut step) = (start, 1);
            while lo + step < n && first(lo + step) == t {
                lo += step;
                step *= 2;
            }
            let mut hi = (lo + step).min(n);
            lo += 1;
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if first(mid) == t {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            // Ids are u32: `n` is a relation's length.
            #[allow(clippy::cast_possible_truncation)]
            runs.push((t, start as u32..lo as u32));
            start = lo;
        }
        Some(runs)
    }

    /// How many distinct rows.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The terms of row `r`, one per column.
    pub(crate) fn row(&self, r: u32) -> &[Term] {
        if let Some(goal) = self.same {
            return goal.tuple(r);
        }
        let w = self.columns.len();
        &self.cells[r as usize * w..(r as usize + 1) * w]
    }

    /// The rows at positions `start..end` of the order `keys` give (each a column and
    /// whether it is descending), then the columns ascending: the rows a page shows, in
    /// order. Resolves only the terms the order compares: the distinct terms of the first
    /// component's column, then, within the values that hold the page, the next
    /// component's, and so on.
    pub(crate) fn select(
        &self,
        dict: &Dict<'_>,
        keys: &[(usize, bool)],
        start: usize,
        end: usize,
    ) -> Result<Vec<u32>, SourceError> {
        let end = end.min(self.len);
        let mut out = Vec::new();
        if start < end {
            let mut sort = Sort::new(self, dict, keys);
            sort.select(None, 0, start, end, &mut out)?;
        }
        Ok(out)
    }

    /// The goal tuple each of `rows` was projected from: for a row of several solutions,
    /// the least in the default order of their values, position by position (the solution
    /// whose witness the row shows).
    pub(crate) fn least_solutions(
        &self,
        goal: &Relation,
        rows: &[u32],
        dict: &Dict<'_>,
        stop: Option<&Budget>,
    ) -> Result<Vec<u32>, EvalError> {
        if self.whole {
            return Ok(rows.to_vec());
        }
        let wanted: FxHashMap<Row, usize> = rows
            .iter()
            .enumerate()
            .map(|(i, &r)| (Row::from_slice(self.row(r)), i))
            .collect();
        let mut best: Vec<Option<u32>> = vec![None; rows.len()];
        let mut values: FxHashMap<Term, Value> = FxHashMap::default();
        let mut row = Row::new();
        for (id, t) in goal.iter() {
            check_at(stop, id)?;
            self.project_row(t, &mut row);
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
/// descending key reversed) then every column ascending, compared by the values of their
/// terms, each resolved when an order first needs it.
struct Sort<'t, 'g, 'd> {
    table: &'t Table<'g>,
    dict: &'t Dict<'d>,
    /// For each component, the column it reads and whether it is reversed.
    components: Vec<(usize, bool)>,
    /// The values resolved so far, by term.
    values: FxHashMap<Term, Value>,
}

impl<'t, 'g, 'd> Sort<'t, 'g, 'd> {
    fn new(table: &'t Table<'g>, dict: &'t Dict<'d>, keys: &[(usize, bool)]) -> Sort<'t, 'g, 'd> {
        let mut components = keys.to_vec();
        components.extend((0..table.columns.len()).map(|c| (c, false)));
        Sort {
            table,
            dict,
            components,
            values: FxHashMap::default(),
        }
    }

    /// Resolves the terms `terms` not resolved yet, each once.
    fn resolve(&mut self, terms: impl Iterator<Item = Term>) -> Result<(), SourceError> {
        let mut new: Vec<Term> = terms.filter(|t| !self.values.contains_key(t)).collect();
        new.sort_unstable();
        new.dedup();
        let values = self.values_of(&new)?;
        self.values.extend(new.into_iter().zip(values));
        Ok(())
    }

    /// The values of `terms`, in order: the source's together
    /// ([`FactSource::values`](crate::FactSource::values), so the evaluation's dictionary
    /// keeps no copy of them), those the evaluation made from its dictionary.
    fn values_of(&self, terms: &[Term]) -> Result<Vec<Value>, SourceError> {
        let mut out = Vec::with_capacity(terms.len());
        let mut stored = Vec::new();
        let mut at = Vec::new();
        for &t in terms {
            out.push(match t.kind() {
                TermKind::Absent => Value::Absent,
                TermKind::Integer(n) => Value::Number(f64::from(n)),
                TermKind::Text(_) | TermKind::Number(_) if self.dict.made(t) => {
                    self.dict.value(t)?
                }
                TermKind::Text(_) | TermKind::Number(_) => {
                    stored.push(t);
                    at.push(out.len());
                    Value::Absent
                }
            });
        }
        for (i, v) in at.into_iter().zip(self.dict.source().values(&stored)?) {
            out[i] = v;
        }
        Ok(out)
    }

    /// Terms `a` and `b` (resolved) in the order of component `k`.
    fn cmp_terms(&self, k: usize, a: Term, b: Term) -> Ordering {
        if a == b {
            return Ordering::Equal;
        }
        let ord = self.values[&a].cmp(&self.values[&b]);
        if self.components[k].1 {
            ord.reverse()
        } else {
            ord
        }
    }

    /// Rows `a` and `b` by their components from `level` on (resolved).
    fn cmp(&self, a: u32, b: u32, level: usize) -> Ordering {
        let (ra, rb) = (self.table.row(a), self.table.row(b));
        (level..self.components.len())
            .map(|k| {
                let c = self.components[k].0;
                self.cmp_terms(k, ra[c], rb[c])
            })
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }

    /// Appends to `out` the rows at positions `start..end` (`start < end <=` the
    /// candidates) among `rows` (`None`: every row), all of which agree on the components
    /// before `level`. The distinct values of component `level` are weighed by their rows;
    /// a selection by weight finds the values that hold the positions, and only their
    /// rows are kept, each value's taken deeper by the next component, until few enough
    /// are left to sort.
    fn select(
        &mut self,
        rows: Option<&[u32]>,
        level: usize,
        start: usize,
        end: usize,
        out: &mut Vec<u32>,
    ) -> Result<(), SourceError> {
        let n = rows.map_or(self.table.len, <[u32]>::len);
        #[allow(clippy::cast_possible_truncation)] // rows <= goal tuples
        let each = |f: &mut dyn FnMut(u32)| match rows {
            Some(rows) => rows.iter().for_each(|&r| f(r)),
            None => (0..n as u32).for_each(f),
        };
        if level == self.components.len() || n <= SORT_BELOW.max(8 * (end - start)) {
            let mut all = Vec::with_capacity(n);
            each(&mut |r| all.push(r));
            let table = self.table;
            let columns: Vec<usize> = self.components[level..].iter().map(|c| c.0).collect();
            self.resolve(
                all.iter()
                    .flat_map(|&r| columns.iter().map(move |&c| table.row(r)[c])),
            )?;
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
            return Ok(());
        }
        let c = self.components[level].0;
        // Rows sorted by the component's term (the whole goal, by its first column) are
        // counted and kept by runs, with no hash of each row.
        let runs = if rows.is_none() && c == 0 {
            self.table.first_term_runs()
        } else {
            None
        };
        // Each distinct value of the component, with its rows: from the runs when the rows
        // are sorted by it (no table of millions of terms), else counted.
        let (terms, weights): (Vec<Term>, Vec<u32>) = match &runs {
            Some(runs) => runs.iter().map(|(t, r)| (*t, r.end - r.start)).unzip(),
            None => {
                let mut counts: FxHashMap<Term, u32> = FxHashMap::default();
                each(&mut |r| *counts.entry(self.table.row(r)[c]).or_insert(0) += 1);
                counts.into_iter().unzip()
            }
        };
        let values = self.values_of(&terms)?;
        let desc = self.components[level].1;
        let mut items: Vec<Item> = terms
            .into_iter()
            .zip(values)
            .zip(weights)
            .map(|((term, value), weight)| Item {
                value,
                term,
                weight,
            })
            .collect();
        let by = |a: &Item, b: &Item| {
            let ord = a.value.cmp(&b.value);
            if desc { ord.reverse() } else { ord }
        };
        // Each value holds a row at least, so the values holding positions below `end`
        // are among the `end` least.
        least(&mut items, end, &by);
        // The values holding positions start..end: from the one holding `start` (after
        // `before` rows) to the one holding `end - 1`, in order.
        let (first, before) = weighted_nth(&mut items, start, &by);
        let (last, _) = weighted_nth(&mut items[first..], end - 1 - before, &by);
        items[first..=first + last].sort_unstable_by(by);
        let held: Vec<(Term, u32)> = items[first..=first + last]
            .iter()
            .map(|i| (i.term, i.weight))
            .collect();
        // The kept rows grouped by their value, in order (a counting sort of the few).
        let mut offsets: Vec<usize> = Vec::with_capacity(held.len() + 1);
        let mut group: FxHashMap<Term, usize> = FxHashMap::default();
        let mut sum = 0;
        for (g, &(term, weight)) in held.iter().enumerate() {
            offsets.push(sum);
            group.insert(term, g);
            sum += weight as usize;
        }
        offsets.push(sum);
        let mut kept = vec![0u32; sum];
        match &runs {
            Some(runs) => {
                for (g, &(term, _)) in held.iter().enumerate() {
                    if let Ok(i) = runs.binary_search_by_key(&term, |(t, _)| *t) {
                        for (k, r) in runs[i].1.clone().enumerate() {
                            kept[offsets[g] + k] = r;
                        }
                    }
                }
            }
            None => {
                let mut next = offsets.clone();
                each(&mut |r| {
                    if let Some(&g) = group.get(&self.table.row(r)[c]) {
                        kept[next[g]] = r;
                        next[g] += 1;
                    }
                });
            }
        }
        // The values the next components compare that this one resolved, kept so that no
        // term is read twice.
        let deeper: FxHashSet<Term> = kept
            .iter()
            .flat_map(|&r| {
                let row = self.table.row(r);
                self.components[level + 1..]
                    .iter()
                    .map(move |&(c, _)| row[c])
            })
            .collect();
        for item in items {
            if deeper.contains(&item.term) {
                self.values.insert(item.term, item.value);
            }
        }
        for g in 0..held.len() {
            let (first, last) = (before + offsets[g], before + offsets[g + 1]);
            let (s, e) = (start.max(first), end.min(last));
            if s < e {
                let rows = &kept[offsets[g]..offsets[g + 1]];
                self.select(Some(rows), level + 1, s - first, e - first, out)?;
            }
        }
        Ok(())
    }
}

/// A distinct value of a component, with its term and its weight in rows.
struct Item {
    value: Value,
    term: Term,
    weight: u32,
}

/// Keeps of `items` the `k` least in the order `cmp` gives (all when fewer), in no order:
/// a scan beside the least `k` so far when `k` is small, a selection otherwise.
fn least(items: &mut Vec<Item>, k: usize, cmp: &impl Fn(&Item, &Item) -> Ordering) {
    if k >= items.len() {
        return;
    }
    if k <= 64 {
        // The least `k` so far, in order, at the front; an item enters when it is less
        // than the greatest of them.
        let head = &mut items[..];
        head[..k].sort_unstable_by(cmp);
        for i in k..head.len() {
            if cmp(&head[i], &head[k - 1]).is_lt() {
                head.swap(i, k - 1);
                let mut j = k - 1;
                while j > 0 && cmp(&head[j], &head[j - 1]).is_lt() {
                    head.swap(j, j - 1);
                    j -= 1;
                }
            }
        }
    } else {
        items.select_nth_unstable_by(k - 1, cmp);
    }
    items.truncate(k);
}

/// Reorders `items` (values, each with its weight in rows) around the one holding
/// position `pos` (`pos <` their total weight) in the order `cmp` gives, and answers its
/// index and the weight before it: every item before the index is less than it, every
/// item after greater. Linear in the items, as a selection is.
fn weighted_nth(
    items: &mut [Item],
    pos: usize,
    cmp: &impl Fn(&Item, &Item) -> Ordering,
) -> (usize, usize) {
    // Items[..lo] are less than items[lo..hi], which are less than items[hi..]; `before`
    // weighs items[..lo], and position `pos` falls within items[lo..hi].
    let (mut lo, mut hi, mut before) = (0, items.len(), 0usize);
    loop {
        if hi - lo <= 16 {
            let rest = &mut items[lo..hi];
            rest.sort_unstable_by(cmp);
            for (i, item) in rest.iter().enumerate() {
                if pos < before + item.weight as usize {
                    return (lo + i, before);
                }
                before += item.weight as usize;
            }
            // Not reached while `pos` is below the total weight, as callers keep it.
            let last = hi.saturating_sub(1);
            let w = items.get(last).map_or(0, |item| item.weight as usize);
            return (last, before.saturating_sub(w));
        }
        let mid = lo + (hi - lo) / 2;
        items[lo..hi].select_nth_unstable_by(mid - lo, cmp);
        let left: usize = items[lo..mid].iter().map(|i| i.weight as usize).sum();
        let here = items[mid].weight as usize;
        if pos < before + left {
            hi = mid;
        } else if pos < before + left + here {
            return (mid, before + left);
        } else {
            before += left + here;
            lo = mid + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs as one pass over every tuple finds them, `None` when a first term drops.
    fn runs_one_by_one(goal: &Relation) -> Option<Vec<(Term, std::ops::Range<u32>)>> {
        let mut runs: Vec<(Term, std::ops::Range<u32>)> = Vec::new();
        for (id, t) in goal.iter() {
            match runs.last_mut() {
                Some((last, range)) if *last == t[0] => range.end = id + 1,
                Some((last, _)) if *last > t[0] => return None,
                _ => runs.push((t[0], id..id + 1)),
            }
        }
        Some(runs)
    }

    #[test]
    fn first_term_runs_are_found_by_steps_as_by_a_pass() {
        let mut seed = 7u64;
        let mut next = |m: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % u64::from(m)) as u32
        };
        for case in 0..300 {
            let arity = 1 + case % 3;
            let n = next(200) as usize;
            // Runs of 1 to 40 rows of ascending first terms; every third case has a term
            // out of order somewhere.
            let mut firsts = Vec::with_capacity(n);
            let mut t = 0;
            while firsts.len() < n {
                t += 1 + next(3);
                let len = 1 + next(40) as usize;
                firsts.extend(std::iter::repeat_n(t, len.min(n - firsts.len())));
            }
            if case % 3 == 2 && n > 1 {
                let i = 1 + next(n as u32 - 1) as usize;
                firsts[i] = firsts[i - 1].saturating_sub(1 + next(2));
            }
            let mut goal = Relation::new(arity);
            for (i, &f) in firsts.iter().enumerate() {
                let mut tuple = vec![Term(f)];
                tuple.extend((1..arity).map(|c| Term((i * 3 + c) as u32)));
                goal.insert(&tuple);
            }
            let table = Table::project(&goal, &(0..arity).collect::<Vec<_>>(), None).unwrap();
            assert_eq!(
                table.first_term_runs(),
                runs_one_by_one(&goal),
                "case {case}: {firsts:?}"
            );
        }
    }
}
