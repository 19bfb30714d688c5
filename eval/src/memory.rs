//! An in-memory [`FactSource`], for tests, examples, benchmarks and the engine's oracle.
//!
//! A relation keeps its rows in insertion order and a hash set of them (for inserts). An
//! index per column is built on the first lookup that binds the column, as one sorted
//! array (the distinct terms, where each one's rows start, the row numbers), about 4
//! bytes a row, and dropped by the next insert.

use std::ops::ControlFlow;
use std::sync::OnceLock;

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap as HashMap};

use crate::source::{FactSource, RelationInfo, SourceError, Visit};
use crate::value::{Term, TermKind, Value};

/// One relation's rows, in insertion order, with an index per column.
#[derive(Default, Debug, Clone)]
struct Rows {
    /// Every row's terms, `arity` a row, in insertion order.
    rows: Vec<Term>,
    /// The set of rows, by row number (hashed by their terms).
    set: HashTable<u32>,
    /// Per column, its index, built when first needed.
    by_column: Vec<OnceLock<Column>>,
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
        crate::radix::sort_by_key(&mut pairs, |&p| p);
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
    /// The index of column `c`, building it if needed.
    fn column(&self, arity: usize, c: usize) -> &Column {
        self.by_column[c].get_or_init(|| Column::build(&self.rows, arity, c))
    }
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
            origin: crate::source::Origin::Facts,
            spelled: String::new(),
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
        origin: crate::source::Origin,
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
        if rows
            .set
            .find(h, |&i| row_of(i) == terms.as_slice())
            .is_some()
        {
            return Ok(false);
        }
        rows.rows.extend_from_slice(&terms);
        let stored = &rows.rows;
        rows.set.insert_unique(h, at, |&i| {
            hash_row(&stored[i as usize * arity..(i as usize + 1) * arity])
        });
        for column in &mut rows.by_column {
            if column.get().is_some() {
                *column = OnceLock::new();
            }
        }
        info.rows += 1;
        Ok(true)
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
            for (c, d) in info.distinct.iter_mut().enumerate() {
                *d = rows.column(arity, c).terms.len() as u64;
            }
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
            Value::Number(n) => self
                .number_ids
                .get(&n.to_bits())
                .map(|&id| Term::number(id)),
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
