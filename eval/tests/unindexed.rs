//! A relation declared with columns no index serves (`RelationInfo::unindexed`) is read
//! into memory when a program looks it up by those columns alone, never probed by them: a
//! store answers such a probe by reading the whole relation.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicU64, Ordering};

use strata_eval::{
    FactSource, MemorySource, Query, RelationInfo, RunOptions, SourceError, Term, Value, Visit,
    Vocabulary,
};

/// A source that counts the lookups of `e` that bind its second column and not its first.
struct Counting {
    inner: MemorySource,
    unserved: AtomicU64,
}

impl FactSource for Counting {
    fn relations(&self) -> Result<Vec<RelationInfo>, SourceError> {
        self.inner.relations()
    }
    fn relation(&self, name: &str) -> Result<Option<RelationInfo>, SourceError> {
        self.inner.relation(name)
    }
    fn scan(
        &self,
        relation: &str,
        visit: &mut dyn FnMut(&[Term]) -> Visit,
    ) -> Result<(), SourceError> {
        self.inner.scan(relation, visit)
    }
    fn lookup(
        &self,
        relation: &str,
        bound: &[(usize, Term)],
        visit: &mut dyn FnMut(&[Term]) -> Visit,
    ) -> Result<(), SourceError> {
        if relation == "e" && !bound.is_empty() && bound.iter().all(|&(c, _)| c == 1) {
            self.unserved.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.lookup(relation, bound, visit)
    }
    fn estimate(&self, relation: &str, bound: &[(usize, Term)]) -> Result<u64, SourceError> {
        self.inner.estimate(relation, bound)
    }
    fn term(&self, value: &Value) -> Result<Option<Term>, SourceError> {
        self.inner.term(value)
    }
    fn value(&self, term: Term) -> Result<Value, SourceError> {
        self.inner.value(term)
    }
}

/// A relation too large to be read into memory for its size alone (over `EAGER_ROWS`), its
/// second column declared unindexed or not.
fn source(unindexed: bool) -> Counting {
    let mut s = MemorySource::new();
    s.add_relation("e", &["a", "b"]);
    s.add_relation("start", &["b"]);
    for i in 0..100_000u32 {
        let (a, b) = (f64::from(i), f64::from(i.wrapping_mul(7919) % 50_000));
        s.insert("e", &[Value::Number(a), Value::Number(b)])
            .unwrap();
    }
    for b in [3.0, 77.0] {
        s.insert("start", &[Value::Number(b)]).unwrap();
    }
    if unindexed {
        s.set_unindexed("e", &[1]);
    }
    Counting {
        inner: s,
        unserved: AtomicU64::new(0),
    }
}

fn rows(src: &Counting, program: &str) -> Vec<Vec<strata_eval::Cell>> {
    let vocab = Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let q = Query::prepare(&vocab, program, &[]).unwrap();
    let options = RunOptions {
        limit: u64::MAX,
        ..RunOptions::default()
    };
    let mut rows: Vec<_> = q
        .run(src, &options)
        .unwrap()
        .answer
        .rows
        .into_iter()
        .map(|r| r.cells)
        .collect();
    rows.sort_by_key(|r| format!("{r:?}"));
    rows
}

#[test]
fn a_lookup_by_an_unindexed_column_reads_the_relation_instead() {
    let programs = [
        // A join binding it.
        "q(?a) :- start(?b), e(?a, ?b); q(?a)",
        // A negation binding it.
        "q(?b) :- start(?b), not e(_, ?b); q(?b)",
        // A join binding it after a lookup by a constant in it.
        "q(?c) :- e(?a, 3), e(?a, ?b), e(?c, ?b); q(?c)",
    ];
    for program in programs {
        let indexed = source(false);
        let expected = rows(&indexed, program);
        assert!(
            indexed.unserved.load(Ordering::Relaxed) > 0,
            "{program}: with every column indexed, the store is probed by the second"
        );
        let declared = source(true);
        assert_eq!(rows(&declared, program), expected, "{program}");
        assert_eq!(
            declared.unserved.load(Ordering::Relaxed),
            0,
            "{program}: probed by a column no index serves"
        );
    }
}

#[test]
fn a_first_step_by_an_unindexed_column_is_one_lookup() {
    // Looked up once: the store reads the relation and keeps what matches, rather than the
    // engine reading it whole and indexing the column.
    let program = "q(?a) :- e(?a, 3); q(?a)";
    let indexed = source(false);
    let expected = rows(&indexed, program);
    let declared = source(true);
    assert_eq!(rows(&declared, program), expected);
    assert_eq!(declared.unserved.load(Ordering::Relaxed), 1);
}

#[test]
fn a_lookup_by_an_indexed_column_still_probes() {
    // The first column is indexed: one probe, and the relation stays out of memory.
    let src = source(true);
    let got = rows(&src, "q(?b) :- e(5, ?b); q(?b)");
    assert_eq!(got.len(), 1);
    assert_eq!(src.unserved.load(Ordering::Relaxed), 0);
    let info = src.relation("e").unwrap().unwrap();
    assert!(info.indexed(0) && !info.indexed(1));
}

/// What `Outcome::unindexed` says of `program` run over `src`.
fn unindexed(src: &Counting, program: &str) -> Vec<(String, Vec<usize>)> {
    let vocab = Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let q = Query::prepare(&vocab, program, &[]).unwrap();
    q.run(src, &RunOptions::default()).unwrap().unindexed
}

#[test]
fn issue31_an_outcome_names_the_columns_it_read_a_relation_whole_for() {
    let declared = source(true);
    let e_b = vec![("e".to_owned(), vec![1])];
    // By the unindexed column: as a first step, in a join, in a negation; once each.
    assert_eq!(unindexed(&declared, "q(?a) :- e(?a, 3); q(?a)"), e_b);
    assert_eq!(
        unindexed(&declared, "q(?a) :- start(?b), e(?a, ?b); q(?a)"),
        e_b
    );
    assert_eq!(
        unindexed(&declared, "q(?b) :- start(?b), not e(_, ?b); q(?b)"),
        e_b
    );
    assert_eq!(
        unindexed(&declared, "q(?c) :- e(?a, 3), e(?a, ?b), e(?c, ?b); q(?c)"),
        e_b
    );
    // By an indexed column, or by nothing: none.
    assert!(unindexed(&declared, "q(?b) :- e(5, ?b); q(?b)").is_empty());
    assert!(unindexed(&declared, "e(?a, ?b) => count(?a)").is_empty());
    // Every column indexed: none.
    let indexed = source(false);
    assert!(unindexed(&indexed, "q(?a) :- start(?b), e(?a, ?b); q(?a)").is_empty());
}
