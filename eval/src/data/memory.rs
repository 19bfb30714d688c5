//! An in-memory [`FactSource`], for tests, examples, benchmarks and the engine's oracle.
//!
//! A relation keeps its rows in insertion order and a hash set of them (for inserts), or,
//! after a bulk [`MemorySource::extend`], in sorted order with no hash set until the next
//! single insert needs one. An index per column is built on the first lookup that binds the column, as one sorted
//! array (the distinct terms, where each one's rows start, the row numbers), about 4
//! bytes a row, and dropped by the next insert. The catalog's count of each column's
//! distinct terms is computed on the first catalog read and kept (until the next insert)
//! without building the index: a relation only ever scanned holds no index.

use std::ops::ControlFlow;
use std::sync::OnceLock;

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap as HashMap};

use crate::data::source::{FactSource, RelationInfo, SourceError, Visit};
use crate::data::value::{Term, TermKind, Value};

/// One relation's rows, in insertion order, with an index per column.
#[derive(Default, Debug, Clone)]
struct Rows {
    /// Every row's terms, `arity` a row, in insertion order.
    rows: Vec<Term>,
    /// The set of rows, by row number (hashed by their terms); `None` after a bulk load
    /// until an insert needs it.
    set: Option<HashTable<u32>>,
    /// Per column, its index, built when first needed.
    by_column: Vec<OnceLock<Column>>,
    /// Per column, how many distinct terms it holds, counted when first asked.
    distinct: OnceLock<Vec<u64>>,
}

/// The rows holding each term of one column.
#[derive(Default, Debug, Clone)]
struct Column {
    /// The distinct terms, ascending.
    terms: Vec<Term>,
    /// Where each term's row numbers start in `rows` (one more entry than terms).
    starts: Vec<u32>,
    /// Row numbers, grouped by term, ascending within each.
    rows: Vec<u32>,
}

impl Column {
    /// The index of column `c` of `rows` (`arity` terms a row).
    fn build(rows: &[Term], arity: usize, c: usize) -> Column {
        let mut pairs: Vec<u64> = rows
            .chunks_exact(arity)
            .enumerate()
            .map(|(i, r)| u64::from(r[c].0) << 32 | i as u64)
            .collect();
        crate::data::radix::sort_by_key(&mut pairs, |&p| p);
        let mut col = Column {
            terms: Vec::new(),
            starts: Vec::new(),
            rows: Vec::with_capacity(pairs.len()),
        };
        for (i, p) in pairs.into_iter().enumerate() {
            let t = Term((p >> 32) as u32);
            if col.terms.last() != Some(&t) {
                col.terms.push(t);
                col.starts.push(i as u32);
            }
            col.rows.push(p as u32);
        }
        col.starts.push(col.rows.len() as u32);
        col
    }

    /// The numbers of the rows holding `t`, ascending.
    fn get(&self, t: Term) -> &[u32] {
        match self.terms.binary_search(&t) {
            Ok(k) => &self.rows[self.starts[k] as usize..self.starts[k + 1] as usize],
            Err(_) => &[],
        }
    }
}

impl Rows {
    /// Forgets what was computed from the rows (indexes, distinct counts): they changed.
    fn changed(&mut self) {
        for column in &mut self.by_column {
            if column.get().is_some() {
                *column = OnceLock::new();
            }
        }
        if self.distinct.get().is_some() {
            self.distinct = OnceLock::new();
        }
    }

    /// The index of column `c`, building it if needed.
    fn column(&self, arity: usize, c: usize) -> &Column {
        self.by_column[c].get_or_init(|| Column::build(&self.rows, arity, c))
    }

    /// How many distinct terms each column holds: from the column's index when it is
    /// built, else counted over a sorted copy of the column's terms (4 bytes a row, freed
    /// at once).
    fn distinct(&self, arity: usize) -> &[u64] {
        self.distinct.get_or_init(|| {
            (0..arity)
                .map(|c| {
                    if let Some(col) = self.by_column[c].get() {
                        return col.terms.len() as u64;
                    }
                    let mut terms: Vec<u32> = self
                        .rows
                        .iter()
                        .skip(c)
                        .step_by(arity)
                        .map(|t| t.0)
                        .collect();
                    crate::data::radix::sort_by_key(&mut terms, |&t| u64::from(t));
                    terms.dedup();
                    terms.len() as u64
                })
                .collect()
        })
    }
}

/// The rows of `rows` (`arity` terms each) sorted by their terms and made distinct.
fn sorted_distinct(mut rows: Vec<Term>, arity: usize) -> Vec<Term> {
    if arity <= 2 {
        // Packed into a u64 each, sorted by radix.
        let mut keys: Vec<u64> = rows
            .chunks_exact(arity)
            .map(|r| r.iter().fold(0u64, |k, t| k << 32 | u64::from(t.0)))
            .collect();
        crate::data::radix::sort_by_key(&mut keys, |&k| k);
        keys.dedup();
        rows.clear();
        rows.shrink_to(keys.len() * arity);
        for k in keys {
            if arity == 2 {
                rows.push(Term((k >> 32) as u32));
            }
            rows.push(Term(k as u32));
        }
        return rows;
    }
    let mut order: Vec<&[Term]> = rows.chunks_exact(arity).collect();
    order.sort_unstable();
    order.dedup();
    order.concat()
}

fn hash_row(row: &[Term]) -> u64 {
    FxBuildHasher.hash_one(row)
}

/// A fact source held in memory: a dictionary and, per relation, a set of rows.
#[derive(Default, Debug, Clone)]
pub struct MemorySource {
    texts: Vec<String>,
    text_ids: HashMap<String, u32>,
    numbers: Vec<f64>,
    number_ids: HashMap<u64, u32>,
    relations: Vec<(RelationInfo, Rows)>,
    by_name: HashMap<String, usize>,
}

impl MemorySource {
    /// An empty source.
    pub fn new() -> MemorySource {
        MemorySource::default()
    }

    /// Adds an empty relation with the given column names (in the `default` tier); adding
    /// one that exists already changes nothing.
    pub fn add_relation(&mut self, name: &str, columns: &[&str]) {
        if self.by_name.contains_key(name) {
            return;
        }
        let info = RelationInfo {
            name: name.to_owned(),
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            doc: String::new(),
            tier: "default".to_owned(),
            rows: 0,
            distinct: vec![0; columns.len()],
            origin: crate::data::source::Origin::Facts,
            spelled: String::new(),
            unindexed: Vec::new(),
        };
        self.by_name.insert(name.to_owned(), self.relations.len());
        let rows = Rows {
            by_column: vec![OnceLock::new(); columns.len()],
            ..Rows::default()
        };
        self.relations.push((info, rows));
    }

    /// Adds an empty relation as a dump of `origin` declares it, spelled `spelled`
    /// (`IMPORTS` for relation `imports`); adding one that exists already changes nothing.
    pub fn add_dump_relation(
        &mut self,
        name: &str,
        columns: &[&str],
        origin: crate::data::source::Origin,
        spelled: &str,
    ) {
        if self.by_name.contains_key(name) {
            return;
        }
        self.add_relation(name, columns);
        if let Some((info, _)) = self.relations.last_mut() {
            info.origin = origin;
            info.spelled = spelled.to_owned();
        }
    }

    /// Declares that no index serves columns `columns` of relation `name`
    /// ([`RelationInfo::unindexed`]), as a store does for a relation declared so: the engine
    /// then reads the relation into memory rather than look it up by those columns alone.
    /// This source still answers such lookups from its own in-memory index. Unknown names
    /// change nothing.
    pub fn set_unindexed(&mut self, name: &str, columns: &[usize]) {
        if let Some(&i) = self.by_name.get(name) {
            let info = &mut self.relations[i].0;
            let mut cols: Vec<usize> = columns
                .iter()
                .copied()
                .filter(|&c| c < info.arity())
                .collect();
            cols.sort_unstable();
            cols.dedup();
            info.unindexed = cols;
        }
    }

    /// The term for `value`, interning it if it is new.
    pub fn intern(&mut self, value: &Value) -> Term {
        match value {
            Value::Absent => Term::ABSENT,
            Value::Text(s) => {
                if let Some(&id) = self.text_ids.get(s) {
                    return Term::text(id);
                }
                self.texts.push(s.clone());
                let id = u32::try_from(self.texts.len()).unwrap_or(Term::MAX_ID);
                self.text_ids.insert(s.clone(), id);
                Term::text(id)
            }
            Value::Number(n) => {
                if let Some(t) = Term::integer(*n) {
                    return t;
                }
                let bits = n.to_bits();
                if let Some(&id) = self.number_ids.get(&bits) {
                    return Term::number(id);
                }
                let id = u32::try_from(self.numbers.len()).unwrap_or(Term::MAX_NUMBER_ID);
                self.numbers.push(*n);
                self.number_ids.insert(bits, id);
                Term::number(id)
            }
        }
    }

    /// Inserts a fact; returns whether it was new. The relation must exist and the row must
    /// have its arity.
    pub fn insert(&mut self, relation: &str, row: &[Value]) -> Result<bool, SourceError> {
        let idx = *self
            .by_name
            .get(relation)
            .ok_or_else(|| SourceError::UnknownRelation(relation.to_owned()))?;
        let arity = self.relations[idx].0.arity();
        if row.len() != arity {
            return Err(SourceError::NoSuchColumn {
                relation: relation.to_owned(),
                arity,
                column: row.len().saturating_sub(1),
            });
        }
        let terms: Vec<Term> = row.iter().map(|v| self.intern(v)).collect();
        let (info, rows) = &mut self.relations[idx];
        if arity == 0 {
            // A relation of no columns holds the empty row or nothing.
            let new = info.rows == 0;
            info.rows = 1;
            return Ok(new);
        }
        let at = u32::try_from(info.rows).map_err(|_| {
            SourceError::Storage(format!(
                "relation \"{relation}\" is full: an in-memory relation holds at most 2^32 rows"
            ))
        })?;
        let h = hash_row(&terms);
        let stored = &rows.rows;
        let row_of = |i: u32| &stored[i as usize * arity..(i as usize + 1) * arity];
        let set = rows.set.get_or_insert_with(|| {
            let mut set = HashTable::with_capacity(stored.len() / arity);
            for i in 0..(stored.len() / arity) as u32 {
                set.insert_unique(hash_row(row_of(i)), i, |&j| hash_row(row_of(j)));
            }
            set
        });
        if set.find(h, |&i| row_of(i) == terms.as_slice()).is_some() {
            return Ok(false);
        }
        rows.rows.extend_from_slice(&terms);
        let stored = &rows.rows;
        set.insert_unique(h, at, |&i| {
            hash_row(&stored[i as usize * arity..(i as usize + 1) * arity])
        });
        rows.changed();
        info.rows += 1;
        Ok(true)
    }

    /// Adds many facts to `relation` at once; returns how many were new. Faster and
    /// lighter than [`MemorySource::insert`] one by one: the relation's rows are sorted and
    /// made distinct, and no hash set of them is kept (the next single insert builds one).
    /// Afterwards the relation's rows are in sorted order (of their terms), not in
    /// insertion order. A row of the wrong arity is an error naming it, and then nothing
    /// is added.
    ///
    /// ```
    /// use strata_eval::{FactSource, MemorySource, Value};
    ///
    /// let mut src = MemorySource::new();
    /// src.add_relation("edge", &["a", "b"]);
    /// let rows = [[1.0, 2.0], [0.0, 1.0], [1.0, 2.0]]
    ///     .map(|r| r.map(Value::Number));
    /// assert_eq!(src.extend("edge", &rows).unwrap(), 2);
    /// assert_eq!(src.relation("edge").unwrap().unwrap().rows, 2);
    /// ```
    pub fn extend<R: AsRef<[Value]>>(
        &mut self,
        relation: &str,
        rows: impl IntoIterator<Item = R>,
    ) -> Result<u64, SourceError> {
        let idx = *self
            .by_name
            .get(relation)
            .ok_or_else(|| SourceError::UnknownRelation(relation.to_owned()))?;
        let arity = self.relations[idx].0.arity();
        let mut terms = Vec::new();
        let mut given = 0u64;
        for row in rows {
            let row = row.as_ref();
            if row.len() != arity {
                return Err(SourceError::NoSuchColumn {
                    relation: relation.to_owned(),
                    arity,
                    column: row.len().saturating_sub(1),
                });
            }
            terms.extend(row.iter().map(|v| self.intern(v)));
            given += 1;
        }
        let (info, stored) = &mut self.relations[idx];
        let before = info.rows;
        if arity == 0 {
            info.rows = u64::from(given > 0 || before > 0);
            return Ok(info.rows - before);
        }
        if given == 0 {
            return Ok(0);
        }
        let mut all = std::mem::take(&mut stored.rows);
        all.extend_from_slice(&terms);
        drop(terms);
        let all = sorted_distinct(all, arity);
        let n = (all.len() / arity) as u64;
        if u32::try_from(n).is_err() {
            return Err(SourceError::Storage(format!(
                "relation \"{relation}\" is full: an in-memory relation holds at most 2^32 rows"
            )));
        }
        stored.rows = all;
        stored.set = None;
        stored.changed();
        info.rows = n;
        Ok(n - before)
    }

    fn rel(&self, name: &str) -> Result<&(RelationInfo, Rows), SourceError> {
        self.by_name
            .get(name)
            .map(|&i| &self.relations[i])
            .ok_or_else(|| SourceError::UnknownRelation(name.to_owned()))
    }

    /// The relation's description, with the distinct terms of each column counted.
    fn info(&self, i: usize) -> RelationInfo {
        let (info, rows) = &self.relations[i];
        let mut info = info.clone();
        let arity = info.arity();
        if arity > 0 {
            info.distinct = rows.distinct(arity).to_vec();
        }
        info
    }
}

fn check_bound(info: &RelationInfo, bound: &[(usize, Term)]) -> Result<(), SourceError> {
    for &(c, _) in bound {
        if c >= info.arity() {
            return Err(SourceError::NoSuchColumn {
                relation: info.name.clone(),
                arity: info.arity(),
                column: c,
            });
        }
    }
    Ok(())
}

impl FactSource for MemorySource {
    fn relations(&self) -> Result<Vec<RelationInfo>, SourceError> {
        Ok((0..self.relations.len()).map(|i| self.info(i)).collect())
    }

    fn relation(&self, name: &str) -> Result<Option<RelationInfo>, SourceError> {
        Ok(self.by_name.get(name).map(|&i| self.info(i)))
    }

    fn scan(
        &self,
        relation: &str,
        visit: &mut dyn FnMut(&[Term]) -> Visit,
    ) -> Result<(), SourceError> {
        self.lookup(relation, &[], visit)
    }

    fn lookup(
        &self,
        relation: &str,
        bound: &[(usize, Term)],
        visit: &mut dyn FnMut(&[Term]) -> Visit,
    ) -> Result<(), SourceError> {
        let (info, rows) = self.rel(relation)?;
        check_bound(info, bound)?;
        let arity = info.arity();
        let row = |i: usize| &rows.rows[i * arity..(i + 1) * arity];
        match bound.first() {
            Some(&(c, t)) => {
                for &i in rows.column(arity, c).get(t) {
                    let row = row(i as usize);
                    if bound.iter().all(|&(c, t)| row[c] == t)
                        && visit(row) == ControlFlow::Break(())
                    {
                        break;
                    }
                }
            }
            None if arity == 0 => {
                if info.rows > 0 {
                    let _ = visit(&[]);
                }
            }
            None => {
                for row in rows.rows.chunks_exact(arity) {
                    if visit(row) == ControlFlow::Break(()) {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    fn estimate(&self, relation: &str, bound: &[(usize, Term)]) -> Result<u64, SourceError> {
        let mut n = 0;
        self.lookup(relation, bound, &mut |_| {
            n += 1;
            ControlFlow::Continue(())
        })?;
        Ok(n)
    }

    fn term(&self, value: &Value) -> Result<Option<Term>, SourceError> {
        Ok(match value {
            Value::Absent => Some(Term::ABSENT),
            Value::Text(s) => self.text_ids.get(s).map(|&id| Term::text(id)),
            // A whole number is stored inline (as `intern` makes it), not in the table.
            Value::Number(n) => Term::integer(*n).or_else(|| {
                self.number_ids
                    .get(&n.to_bits())
                    .map(|&id| Term::number(id))
            }),
        })
    }

    fn value(&self, term: Term) -> Result<Value, SourceError> {
        match term.kind() {
            TermKind::Absent => Ok(Value::Absent),
            TermKind::Text(id) => self
                .texts
                .get(id as usize - 1)
                .map(|s| Value::Text(s.clone()))
                .ok_or(SourceError::UnknownTerm(term.0)),
            TermKind::Number(id) => self
                .numbers
                .get(id as usize)
                .map(|n| Value::Number(*n))
                .ok_or(SourceError::UnknownTerm(term.0)),
            TermKind::Integer(n) => Ok(Value::Number(f64::from(n))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(n: f64) -> Value {
        Value::Number(n)
    }

    fn rows(src: &MemorySource, name: &str) -> Vec<Vec<Term>> {
        let mut out = Vec::new();
        src.scan(name, &mut |r| {
            out.push(r.to_vec());
            ControlFlow::Continue(())
        })
        .unwrap();
        out
    }

    #[test]
    fn a_bulk_load_is_distinct_sorted_and_takes_single_inserts_after() {
        let mut src = MemorySource::new();
        src.add_relation("e", &["a", "b"]);
        assert_eq!(src.insert("e", &[num(9.0), num(1.0)]).ok(), Some(true));
        let given = [[3.0, 4.0], [1.0, 2.0], [9.0, 1.0], [3.0, 4.0], [1.0, 5.0]];
        assert_eq!(src.extend("e", given.map(|r| r.map(num))).ok(), Some(3));
        let info = src.relation("e").unwrap().unwrap();
        assert_eq!(info.rows, 4);
        assert_eq!(info.distinct, vec![3, 4]);
        let sorted = rows(&src, "e");
        assert!(sorted.windows(2).all(|w| w[0] < w[1]));
        // The set is rebuilt for the next insert: a held row is not new, a new one is.
        assert_eq!(src.insert("e", &[num(1.0), num(2.0)]).ok(), Some(false));
        assert_eq!(src.insert("e", &[num(7.0), num(7.0)]).ok(), Some(true));
        let info = src.relation("e").unwrap().unwrap();
        assert_eq!((info.rows, info.distinct.clone()), (5, vec![4, 5]));
        // Lookups by a column see every row.
        let three = src.term(&num(3.0)).unwrap().unwrap();
        let mut found = 0;
        src.lookup("e", &[(0, three)], &mut |_| {
            found += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(found, 1);
        // A number not stored inline is found through the table.
        assert_eq!(src.insert("e", &[num(0.5), num(1.0)]).ok(), Some(true));
        assert!(src.term(&num(0.5)).unwrap().is_some());
        assert!(src.term(&num(0.25)).unwrap().is_none());
    }

    #[test]
    fn a_bulk_load_of_a_wrong_row_adds_nothing() {
        let mut src = MemorySource::new();
        src.add_relation("t", &["a", "b", "c"]);
        assert_eq!(
            src.extend("t", [vec![num(1.0), num(2.0), num(3.0)]]).ok(),
            Some(1)
        );
        let bad = [vec![num(4.0), num(5.0), num(6.0)], vec![num(1.0)]];
        assert!(matches!(
            src.extend("t", bad),
            Err(SourceError::NoSuchColumn { arity: 3, .. })
        ));
        assert_eq!(rows(&src, "t").len(), 1);
        assert!(matches!(
            src.extend("nope", [[num(1.0)]]),
            Err(SourceError::UnknownRelation(_))
        ));
        // Wider rows are sorted and made distinct too.
        let more = [[2.0, 0.0, 0.0], [1.0, 2.0, 3.0], [0.0, 9.0, 9.0]].map(|r| r.map(num));
        assert_eq!(src.extend("t", more).ok(), Some(2));
        let all = rows(&src, "t");
        assert_eq!(all.len(), 3);
        assert!(all.windows(2).all(|w| w[0] < w[1]));
    }
}
