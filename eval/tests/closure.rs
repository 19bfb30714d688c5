//! Closures by search (`exec/engine/closure.rs`): a stratum that only closes one binary
//! relation, evaluated without witnesses, is searched from each source instead of joined
//! round by round. Its pairs must be the oracle's, either way round, from base or derived
//! relations, at any thread count; its work is counted per pair started from and per edge
//! followed; and a work budget, a memory cap or a cancel stops it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use strata_eval::internals::naive;
use strata_eval::internals::{Options, evaluate};
use strata_eval::{Cancel, FactSource, MemorySource, Query, Value, Vocabulary};

fn value(i: u8) -> Value {
    if i.is_multiple_of(3) {
        Value::text(format!("n{i}"))
    } else {
        Value::Number(f64::from(i))
    }
}

/// The literal that reads as `value(i)`.
fn literal(i: u8) -> String {
    if i.is_multiple_of(3) {
        format!("\"n{i}\"")
    } else {
        i.to_string()
    }
}

/// Facts of `a`, `e`, `f` (binary) and `n` (unary: its first value only).
fn source(facts: &[(usize, u8, u8)]) -> MemorySource {
    let mut s = MemorySource::new();
    for r in ["a", "e", "f"] {
        s.add_relation(r, &["x", "y"]);
    }
    s.add_relation("n", &["x"]);
    for &(r, x, y) in facts {
        let added = match r % 4 {
            3 => s.insert("n", &[value(x)]),
            r => s.insert(["a", "e", "f"][r], &[value(x), value(y)]),
        };
        added.unwrap();
    }
    s
}

fn prepare(src: &MemorySource, text: &str) -> Query {
    let vocab = Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    Query::prepare(&vocab, text, &[]).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The closure programs: exit relation, edge relations, which way round, and guards.
const PROGRAMS: [&str; 10] = [
    "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z);",
    "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- e(?x, ?y), tc(?y, ?z);",
    "tc(?x, ?y) :- a(?x, ?y); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z); tc(?x, ?z) :- tc(?x, ?y), f(?y, ?z);",
    "tc(?x, ?y) :- a(?x, ?y); tc(?x, ?y) :- f(?x, ?y); tc(?x, ?z) :- e(?x, ?y), tc(?y, ?z);",
    // Starting from a derived relation of a lower stratum.
    "s(?x, ?y) :- a(?x, ?y), ?x != ?y; tc(?x, ?y) :- s(?x, ?y); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z);",
    // Over a derived edge relation.
    "g(?x, ?y) :- e(?x, ?y); g(?x, ?y) :- f(?y, ?x); tc(?x, ?y) :- a(?x, ?y); tc(?x, ?z) :- g(?x, ?y), tc(?y, ?z);",
    // Sources tested against a unary relation, as demand's magic relation tests them.
    "tc(?x, ?y) :- n(?x), e(?x, ?y); tc(?x, ?z) :- n(?x), tc(?x, ?y), e(?y, ?z);",
    // An exit tested and one not, the steps tested: an untested source keeps its own pairs.
    "tc(?x, ?y) :- n(?x), a(?x, ?y); tc(?x, ?y) :- f(?x, ?y); tc(?x, ?z) :- n(?x), tc(?x, ?y), e(?y, ?z);",
    // Exits the rounds compute (columns swapped, a join): searched from what they derived.
    "tc(?x, ?y) :- e(?y, ?x); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z);",
    "tc(?x, ?y) :- a(?x, ?z), f(?z, ?y); tc(?x, ?z) :- e(?x, ?y), tc(?y, ?z);",
];

/// Every derived relation of `q`'s program, evaluated at `threads` without witnesses, as
/// the oracle's facts; and the rounds it ran.
fn facts(q: &Query, src: &MemorySource, threads: usize) -> (Vec<naive::Facts>, u64) {
    let ir = &q.compiled.ir;
    let opts = Options {
        threads,
        witnesses: false,
        ..Options::default()
    };
    let ev = evaluate(ir, src, &opts).unwrap();
    let out = ev
        .relations
        .iter()
        .map(|r| {
            r.iter()
                .map(|(_, t)| t.iter().map(|&x| ev.dict.value(x).unwrap()).collect())
                .collect()
        })
        .collect();
    (out, ev.rounds)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_searched_closure_is_the_oracles(
        facts_in in prop::collection::vec((0usize..4, 0u8..12, 0u8..12), 0..48),
        program in 0..PROGRAMS.len(),
        bound in prop::option::of(0u8..12),
    ) {
        let src = source(&facts_in);
        // Bound, the goal asks by demand: the closure's sources are tested by a magic
        // relation.
        let text = match bound {
            Some(b) => format!("{} tc({}, ?b) => ?b", PROGRAMS[program], literal(b)),
            None => format!("{} tc(?a, ?b) => ?a, ?b", PROGRAMS[program]),
        };
        let q = prepare(&src, &text);
        let want = naive::evaluate(&q.compiled.ir, &src).unwrap();
        for threads in [1, 2, 3] {
            let (got, _) = facts(&q, &src, threads);
            for (r, decl) in q.compiled.ir.relations.iter().enumerate() {
                if decl.kind == strata_eval::internals::ir::RelKind::Derived {
                    prop_assert_eq!(&got[r], &want[r], "{} at {} threads: {}", decl.name, threads, text);
                }
            }
        }
    }
}

/// A chain of `n` nodes, `0 -> 1 -> ... -> n - 1`, in `e`.
fn chain(n: u32) -> MemorySource {
    let mut s = MemorySource::new();
    s.add_relation("e", &["x", "y"]);
    for i in 1..n {
        let (a, b) = (Value::Number(f64::from(i - 1)), Value::Number(f64::from(i)));
        s.insert("e", &[a, b]).unwrap();
    }
    s
}

const CHAIN: &str =
    "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z); tc(?a, ?b) => count(?b)";

#[test]
fn a_chain_is_one_search_not_a_round_a_link() {
    let src = chain(50);
    let q = prepare(&src, CHAIN);
    let (got, rounds) = facts(&q, &src, 2);
    assert_eq!(got.iter().map(|f| f.len()).max(), Some(49 * 50 / 2));
    assert_eq!(rounds, 1);
    // With witnesses, the same pairs take a round a link.
    let opts = Options {
        witnesses: true,
        ..Options::default()
    };
    let ev = evaluate(&q.compiled.ir, &src, &opts).unwrap();
    assert_eq!(ev.rounds, 49);
    // The work, deterministic: 49 rows of `e` read; from each source s (0 to 48) one pair
    // started from and 48 - s edges followed; and the goal's rule (not staged away here)
    // reading the 1,225 pairs.
    let opts = Options {
        witnesses: false,
        ..Options::default()
    };
    let ev = evaluate(&q.compiled.ir, &src, &opts).unwrap();
    let searched: u64 = (0..49u64).map(|s| 1 + (48 - s)).sum();
    assert_eq!(ev.work, 49 + searched + 1225);
}

#[test]
fn a_budget_a_memory_cap_and_a_cancel_stop_a_search() {
    let src = chain(3000);
    let q = prepare(&src, CHAIN);
    let opts = Options {
        witnesses: false,
        max_work: Some(100_000),
        ..Options::default()
    };
    let Err(e) = evaluate(&q.compiled.ir, &src, &opts) else {
        panic!("4.5M pairs within 100,000 units")
    };
    assert!(e.to_string().contains("work budget of 100000 units"), "{e}");
    assert!(
        e.to_string()
            .contains("tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z)"),
        "{e}"
    );
    // 4.5M pairs (36 MB) under a cap of 8 MB.
    let opts = Options {
        witnesses: false,
        max_memory: Some(8 << 20),
        ..Options::default()
    };
    let Err(e) = evaluate(&q.compiled.ir, &src, &opts) else {
        panic!("4.5M pairs within 8 MB")
    };
    assert!(
        matches!(e, strata_eval::EvalError::MemoryLimit { .. }),
        "{e}"
    );
    let cancel = Cancel::new();
    cancel.cancel();
    let opts = Options {
        witnesses: false,
        cancel,
        ..Options::default()
    };
    let Err(e) = evaluate(&q.compiled.ir, &src, &opts) else {
        panic!("cancelled")
    };
    assert!(matches!(e, strata_eval::EvalError::Cancelled), "{e}");
}

#[test]
fn explain_says_a_closure_was_searched() {
    let src = chain(50);
    let q = prepare(&src, CHAIN);
    let report = q
        .explain(&src, &strata_eval::RunOptions::default())
        .unwrap();
    let text = report.text();
    assert!(
        text.contains("tc: a closure, searched from each of its 49 sources, 1225 tuples"),
        "{text}"
    );
    assert_eq!(report.rounds, 1, "{text}");
    // The recursive rule ran once a source and followed 1,176 edges to the 1,225 pairs.
    let step = &report.rules[1];
    assert_eq!((step.runs, step.solutions), (49, 1225), "{text}");
}

#[test]
fn a_closure_asked_for_by_demand_is_searched_from_its_source() {
    let src = chain(50);
    let text = CHAIN.replace("tc(?a, ?b) => count(?b)", "tc(10, ?b) => count(?b)");
    let q = prepare(&src, &text);
    let report = q
        .explain(&src, &strata_eval::RunOptions::default())
        .unwrap();
    let text = report.text();
    assert!(
        text.contains(
            "tc: computed by demand for argument 1 (1 binding asked for), a closure searched from its 1 source, 39 tuples"
        ),
        "{text}"
    );
    // Rounds of joins until the closure holds a 32nd as many pairs as the edges (two),
    // then one search: not the 39 rounds of a walk.
    assert!(report.rounds <= 5, "{text}");
    // The search's profile replaces the rounds': one run over its one source.
    let step = &report.rules[2];
    assert_eq!((step.runs, step.solutions), (1, 39), "{text}");
    let page = q.run(&src, &strata_eval::RunOptions::default()).unwrap();
    assert_eq!(page.answer.rows.len(), 1);
    assert_eq!(
        page.answer.rows[0].cells,
        vec![strata_eval::Cell::Value(Value::Number(39.0))]
    );
}

/// The 50-node chain and its closure's pairs as a plain answer (witnesses by demand).
fn chain_pairs() -> (MemorySource, Query) {
    let src = chain(50);
    let q = prepare(
        &src,
        "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z); tc(?a, ?b) => ?a, ?b",
    );
    (src, q)
}

/// A page of a closure with witnesses: up to 10,000 rows, the closure is searched without
/// witnesses and the page's witnesses come by demand; a larger page records them in one
/// evaluation of rounds. The rows are the same either way.
#[test]
fn a_page_takes_its_witnesses_by_demand_up_to_ten_thousand_rows() {
    let (src, q) = chain_pairs();
    let run = |limit: u64| {
        let options = strata_eval::RunOptions {
            limit,
            ..strata_eval::RunOptions::default()
        };
        q.run(&src, &options).unwrap()
    };
    let small = run(20);
    assert_eq!(small.rounds, 1, "searched");
    let large = run(10_001);
    assert_eq!(large.rounds, 49, "rounds, recording witnesses");
    assert_eq!(small.answer.rows[..], large.answer.rows[..20]);
}

/// The page's witnesses by demand spend what the first evaluation left of the work budget,
/// and a budget they pass is named as the caller gave it.
#[test]
fn witnesses_by_demand_share_the_callers_work_budget() {
    let (src, q) = chain_pairs();
    let mut options = strata_eval::RunOptions {
        limit: 5,
        ..strata_eval::RunOptions::default()
    };
    options.engine.witnesses = false;
    let first = q.run(&src, &options).unwrap().work;
    options.engine.witnesses = true;
    let both = q.run(&src, &options).unwrap().work;
    assert!(both > first, "{both} <= {first}");
    options.engine.max_work = Some(first + 1);
    let Err(e) = q.run(&src, &options) else {
        panic!("the witnesses' evaluation within 1 unit")
    };
    let budget = format!("work budget of {} units", first + 1);
    assert!(e.to_string().contains(&budget), "{e}");
    options.engine.max_work = Some(both);
    assert!(q.run(&src, &options).is_ok());
}
