//! Pages of answers: every page is the slice of the whole answer at its offset (rows, the
//! facts their witnesses start from, totals; every witness re-derives its row), on random
//! goals against the naive oracle and on a closure of tens of
//! thousands of rows; a row's witness is its least solution's; and a page resolves the
//! distinct values of its columns once each, not a value per row.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};

use proptest::prelude::*;
use strata_eval::internals::naive;
use strata_eval::{
    Answer, FactSource, MemorySource, Query, RelationInfo, RunOptions, SourceError, Term, Value,
    Visit,
};

fn value(i: u8) -> Value {
    match i % 4 {
        0 => Value::Number(f64::from(i)),
        1 => Value::Number(f64::from(i) + 0.5),
        _ => Value::text(format!("v{i}")),
    }
}

fn source(facts: &[(usize, u8, u8)]) -> MemorySource {
    let mut s = MemorySource::new();
    s.add_relation("e", &["a", "b"]);
    s.add_relation("f", &["a", "b"]);
    for &(r, a, b) in facts {
        let rel = if r == 0 { "e" } else { "f" };
        s.insert(rel, &[value(a), value(b)]).unwrap();
    }
    s
}

/// A source that counts the values it resolves.
struct Counting {
    inner: MemorySource,
    values: AtomicU64,
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
        self.inner.lookup(relation, bound, visit)
    }
    fn estimate(&self, relation: &str, bound: &[(usize, Term)]) -> Result<u64, SourceError> {
        self.inner.estimate(relation, bound)
    }
    fn term(&self, value: &Value) -> Result<Option<Term>, SourceError> {
        self.inner.term(value)
    }
    fn value(&self, term: Term) -> Result<Value, SourceError> {
        self.values.fetch_add(1, Ordering::Relaxed);
        self.inner.value(term)
    }
}

/// Every page of `limit` rows from the first, following each page's `next`.
fn pages(q: &Query, src: &dyn FactSource, limit: u64, witnesses: bool) -> Vec<Answer> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let mut options = RunOptions {
            offset,
            limit,
            ..RunOptions::default()
        };
        options.engine.witnesses = witnesses;
        let page = q.run(src, &options).unwrap().answer;
        let next = page.next();
        out.push(page);
        match next {
            Some(n) => offset = n,
            None => return out,
        }
    }
}

/// The whole answer in one page.
fn whole(q: &Query, src: &dyn FactSource, witnesses: bool) -> Answer {
    let mut options = RunOptions {
        limit: u64::MAX,
        ..RunOptions::default()
    };
    options.engine.witnesses = witnesses;
    q.run(src, &options).unwrap().answer
}

/// The pages of `q` of `limit` rows are the whole answer's slices: the rows, and with
/// witnesses the facts each row's witness starts from (its least solution's). What lies below
/// them may differ from page to page: a plain answer's witnesses come from an evaluation bound
/// to the page's values, so each must re-derive its row against the oracle's `facts`.
fn pages_are_slices(
    q: &Query,
    src: &dyn FactSource,
    facts: &[naive::Facts],
    limit: u64,
    witnesses: bool,
) -> Answer {
    let all = whole(q, src, witnesses);
    let pages = pages(q, src, limit, witnesses);
    let mut at = 0;
    let roots = |rows: &[strata_eval::Row]| -> Vec<Vec<(String, Vec<Value>)>> {
        rows.iter()
            .map(|r| {
                r.witness
                    .iter()
                    .map(|n| (n.relation.clone(), n.values.clone()))
                    .collect()
            })
            .collect()
    };
    for p in &pages {
        assert_eq!(p.total, all.total, "{}", q.text);
        assert_eq!(p.offset, at as u64, "{}", q.text);
        let cells = |rows: &[strata_eval::Row]| -> Vec<Vec<strata_eval::Cell>> {
            rows.iter().map(|r| r.cells.clone()).collect()
        };
        let slice = &all.rows[at..at + p.rows.len()];
        assert_eq!(cells(&p.rows), cells(slice), "{} at {at}", q.text);
        assert_eq!(roots(&p.rows), roots(slice), "{} at {at}", q.text);
        for row in &p.rows {
            assert_eq!(row.witness.is_empty(), !witnesses, "{}", q.text);
            for node in &row.witness {
                common::rederive::rederives(&q.compiled.ir, facts, node);
            }
        }
        at += p.rows.len();
    }
    assert_eq!(at, all.rows.len(), "{}", q.text);
    all
}

const BODIES: [&str; 6] = [
    "e(?a, ?b)",
    "e(?a, ?c), f(?c, ?b)",
    "t(?a, ?b)",
    // Witnesses by demand with a filter, a negation and a join of the recursion.
    "t(?a, ?b), ?a != ?b",
    "t(?a, ?b), not f(?b, ?a)",
    "t(?a, ?c), t(?c, ?b)",
];
const RULES: &str = "t(?x, ?y) :- e(?x, ?y);\nt(?x, ?z) :- t(?x, ?y), f(?y, ?z);\n";
const COLUMNS: [&str; 5] = ["?a", "?b", "?a, ?b", "?b, ?a", "?c, ?a"];

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Pages of plain answers (projection, deduplication, `order by` either way, the
    /// program's own window) are the slices of the whole answer, which is the oracle's; a
    /// row's witness is its least solution's.
    #[test]
    fn pages_are_slices_of_the_oracles_answer(
        facts in prop::collection::vec((0usize..2, 0u8..10, 0u8..10), 0..40),
        body in 0..BODIES.len(),
        columns in 0..COLUMNS.len(),
        order in prop::option::of((0usize..2, any::<bool>())),
        own in prop::option::weighted(0.3, (0u8..4, 1u8..9)),
        limit in 1u64..5,
    ) {
        let columns = COLUMNS[columns];
        if columns.contains("?c") && !BODIES[body].contains("?c") {
            return Ok(());
        }
        let mut text = format!("{RULES}{} => {columns}", BODIES[body]);
        if let Some((k, desc)) = order {
            let key = columns.split(", ").nth(k).unwrap_or("?a");
            text.push_str(&format!(" order by {key}{}", if desc { " desc" } else { "" }));
        }
        if let Some((offset, limit)) = own {
            text.push_str(&format!(" limit {limit} offset {offset}"));
        }
        let src = source(&facts);
        let vocab = strata_eval::Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
        let Ok(q) = Query::prepare(&vocab, &text, &[]) else { return Ok(()) };
        let oracle = naive::evaluate(&q.compiled.ir, &src).unwrap();
        let want = naive::answer(&oracle[q.compiled.ir.goal], &q.compiled.shape, 0, u64::MAX).unwrap();
        for witnesses in [false, true] {
            let all = pages_are_slices(&q, &src, &oracle, limit, witnesses);
            let rows: Vec<_> = all.rows.iter().map(|r| common::oracle_cells(&r.cells)).collect();
            prop_assert_eq!(&rows, &want.rows, "{}", text);
            prop_assert_eq!(all.total, want.total, "{}", text);
            if witnesses && body == 1 && columns != "?c, ?a" {
                // The goal's solutions are (a, c, b): a row's witness is e(a, c), f(c, b) of
                // the least solution projecting to it.
                for row in &all.rows {
                    let least = oracle[q.compiled.ir.goal]
                        .iter()
                        .find(|s| {
                            let (a, b) = (&s[0], &s[2]);
                            match columns {
                                "?a" => row.cells == [strata_eval::Cell::Value(a.clone())],
                                "?b" => row.cells == [strata_eval::Cell::Value(b.clone())],
                                "?a, ?b" => row.cells == [strata_eval::Cell::Value(a.clone()), strata_eval::Cell::Value(b.clone())],
                                _ => row.cells == [strata_eval::Cell::Value(b.clone()), strata_eval::Cell::Value(a.clone())],
                            }
                        })
                        .unwrap();
                    prop_assert_eq!(&row.witness[0].values, &vec![least[0].clone(), least[1].clone()], "{}", text);
                    prop_assert_eq!(&row.witness[1].values, &vec![least[1].clone(), least[2].clone()], "{}", text);
                }
            }
        }
    }
}

/// A closure of some thousands of pairs over texts: pages at the start, the middle and the end
/// are the whole answer's slices, in either order and projected to one column.
fn closure_source() -> Counting {
    let w = strata_fixtures::workloads::closure(150, 3, 7);
    let mut inner = MemorySource::new();
    inner.add_relation("e", &["a", "b"]);
    for (_, pairs) in &w.relations {
        for &(a, b) in pairs {
            // Names whose byte order is not their number's, nor their first appearance.
            let name = |n: u32| Value::text(format!("{}n{n}", (n * 7919) % 97));
            inner.insert("e", &[name(a), name(b)]).unwrap();
        }
    }
    Counting {
        inner,
        values: AtomicU64::new(0),
    }
}

const CLOSURE: &str = "tc(?x, ?y) :- e(?x, ?y);\ntc(?x, ?z) :- tc(?x, ?y), e(?y, ?z);\n";

#[test]
fn pages_of_a_closure_are_slices_of_its_whole_answer() {
    let src = closure_source();
    let vocab = strata_eval::Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    for goal in [
        "tc(?x, ?y) => ?x, ?y",
        "tc(?x, ?y) => ?y, ?x order by ?x desc",
        "tc(?x, ?y) => ?x",
        "tc(?x, ?y) => ?y order by ?y desc limit 50 offset 3",
    ] {
        let q = Query::prepare(&vocab, &format!("{CLOSURE}{goal}"), &[]).unwrap();
        let all = whole(&q, &src, false);
        assert!(
            all.total > 10 || goal.contains("limit"),
            "{goal}: {}",
            all.total
        );
        let total = all.rows.len() as u64;
        for offset in [0, 1, total / 2, total.saturating_sub(7), total] {
            for limit in [1, 10, 1000] {
                let options = RunOptions {
                    offset,
                    limit,
                    ..RunOptions::default()
                };
                let mut options = options;
                options.engine.witnesses = false;
                let page = q.run(&src, &options).unwrap().answer;
                let at = offset.min(total) as usize;
                let end = (offset.saturating_add(limit)).min(total) as usize;
                assert_eq!(page.total, all.total, "{goal}");
                assert_eq!(
                    page.rows[..],
                    all.rows[at..end],
                    "{goal} at {offset}, {limit} rows"
                );
            }
        }
    }
}

/// The page of 10 rows at `offset`, without witnesses, and how many values it resolved.
fn counted_page(q: &Query, src: &Counting, offset: u64) -> (Answer, u64) {
    let mut options = RunOptions {
        offset,
        limit: 10,
        ..RunOptions::default()
    };
    options.engine.witnesses = false;
    src.values.store(0, Ordering::Relaxed);
    let page = q.run(src, &options).unwrap().answer;
    (page, src.values.load(Ordering::Relaxed))
}

#[test]
fn a_page_resolves_each_distinct_value_once_not_a_value_per_row() {
    let src = closure_source();
    let vocab = strata_eval::Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let q = Query::prepare(&vocab, &format!("{CLOSURE}tc(?x, ?y) => ?x, ?y"), &[]).unwrap();
    let (page, resolved) = counted_page(&q, &src, 2000);
    assert!(page.total > 5_000, "{}", page.total);
    // At most 150 nodes' names to rank, and the page's 20 cells.
    assert!(
        resolved <= 150 + 20,
        "{resolved} values resolved for {} rows",
        page.total
    );
}

/// Issue 18: the first page of a two-column answer resolves the first column's distinct
/// values and, of the second column's, only those in the rows of the values the page
/// shows; not every distinct term of the answer.
#[test]
fn issue18_a_page_resolves_the_second_column_only_where_the_page_is() {
    let mut inner = MemorySource::new();
    inner.add_relation("e", &["a", "b"]);
    // 1,000 sources, each with 10 of 1,000 targets: 10,000 rows, 2,000 distinct texts.
    for i in 0..1000u32 {
        for k in 0..10u32 {
            let b = (i * 7 + k * 101) % 1000;
            let (a, b) = (
                Value::text(format!("a{:04}", (i * 7919) % 1000)),
                Value::text(format!("b{b:04}")),
            );
            inner.insert("e", &[a, b]).unwrap();
        }
    }
    let src = Counting {
        inner,
        values: AtomicU64::new(0),
    };
    let vocab = strata_eval::Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    for (goal, offset) in [("e(?x, ?y) => ?x, ?y", 0), ("e(?x, ?y) => ?x, ?y", 9_000)] {
        let q = Query::prepare(&vocab, goal, &[]).unwrap();
        let all = whole(&q, &src, false);
        let (page, resolved) = counted_page(&q, &src, offset);
        assert_eq!(page.total, 10_000);
        assert_eq!(
            page.rows[..],
            all.rows[offset as usize..offset as usize + 10]
        );
        // The 1,000 sources, the 10 targets of the one or two sources the page shows, and
        // the page's 20 cells; ranking every distinct term would resolve 2,000 and more.
        assert!(
            resolved <= 1000 + 20 + 20,
            "{goal} at {offset}: {resolved} resolved"
        );
    }
}
