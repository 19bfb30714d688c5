//! An in-memory [`FactSource`], for tests, examples and the engine's oracle.

use std::ops::ControlFlow;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::source::{FactSource, RelationInfo, SourceError, Visit};
use crate::value::{Term, TermKind, Value};

/// One relation's rows, in insertion order, with an index per column.
#[derive(Default, Debug, Clone)]
struct Rows {
    /// Every row's terms, `arity` a row, in insertion order.
    rows: Vec<Term>,
    set: HashSet<Vec<Term>>,
    by_column: Vec<HashMap<Term, Vec<usize>>>,
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
            by_column: vec![HashMap::default(); columns.len()],
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
        if !rows.set.insert(terms.clone()) {
            return Ok(false);
        }
        let at = rows.rows.len() / arity.max(1);
        for (c, t) in terms.iter().enumerate() {
            rows.by_column[c].entry(*t).or_default().push(at);
        }
        rows.rows.extend_from_slice(&terms);
        info.rows += 1;
        for (c, d) in info.distinct.iter_mut().enumerate() {
            *d = rows.by_column[c].len() as u64;
        }
        Ok(true)
    }

    fn rel(&self, name: &str) -> Result<&(RelationInfo, Rows), SourceError> {
        self.by_name
            .get(name)
            .map(|&i| &self.relations[i])
            .ok_or_else(|| SourceError::UnknownRelation(name.to_owned()))
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
        Ok(self.relations.iter().map(|(i, _)| i.clone()).collect())
    }

    fn relation(&self, name: &str) -> Result<Option<RelationInfo>, SourceError> {
        Ok(self.by_name.get(name).map(|&i| self.relations[i].0.clone()))
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
                for &i in rows.by_column[c].get(&t).map_or(&[][..], Vec::as_slice) {
                    let row = row(i);
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
