//! The memory budget (issue 18): an evaluation whose relations, indexes, witnesses and
//! unmerged round outputs pass `max_memory` stops with [`EvalError::MemoryLimit`], which
//! names the limit and where the memory went; under a cap it does not reach, it answers
//! exactly as without one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use strata_eval::{
    EvalError, FactSource, MemorySource, Query, QueryError, RunOptions, Value, Vocabulary,
};

/// A generated call graph: `n` functions, each calling the next three (mod `n`).
fn calls(n: u32) -> MemorySource {
    let mut src = MemorySource::new();
    src.add_relation("calls", &["caller", "callee"]);
    for (a, b) in strata_fixtures::runaway::calls(n) {
        src.insert("calls", &[Value::text(a), Value::text(b)])
            .unwrap();
    }
    src
}

fn run(src: &MemorySource, program: &str, options: &RunOptions) -> Result<u64, QueryError> {
    answer(src, program, options).map(|a| a.total)
}

fn answer(
    src: &MemorySource,
    program: &str,
    options: &RunOptions,
) -> Result<strata_eval::Answer, QueryError> {
    let vocab = Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let q = Query::prepare(&vocab, program, &[]).unwrap();
    q.run(src, options).map(|out| out.answer)
}

fn capped(max_memory: u64, threads: usize, witnesses: bool) -> RunOptions {
    let mut o = RunOptions::default();
    o.engine.max_memory = Some(max_memory);
    o.engine.threads = threads;
    o.engine.witnesses = witnesses;
    o
}

// The issue's runaway: the call graph crossed with itself.
use strata_fixtures::runaway::CROSS;

const CLOSURE: &str = "r(?a, ?c) :- calls(?a, ?c); r(?a, ?c) :- r(?a, ?b), calls(?b, ?c); \
                       r(?a, ?b) => ?a, count(?b)";

fn memory_error(result: Result<u64, QueryError>) -> (u64, strata_eval::MemoryUse, String) {
    match result {
        Err(QueryError::Eval(e @ EvalError::MemoryLimit { .. })) => {
            let text = e.to_string();
            let EvalError::MemoryLimit { max, used } = e else {
                unreachable!()
            };
            (max, used, text)
        }
        other => panic!("expected the memory limit, got {other:?}"),
    }
}

#[test]
fn issue18_the_cross_product_is_stopped_by_the_memory_cap() {
    // 1,800 edges: 3.2M candidate pairs over 600 x 600 distinct ones, several MiB.
    let src = calls(600);
    for threads in [1, 2] {
        for witnesses in [true, false] {
            let (max, used, text) =
                memory_error(run(&src, CROSS, &capped(1 << 20, threads, witnesses)));
            assert_eq!(max, 1 << 20);
            // Stopped within a batch or a round of the cap, not grown without bound.
            assert!(used.total + used.asked > max, "{used:?}");
            assert!(used.total < 64 << 20, "{used:?}");
            assert!(
                text.starts_with(
                    "the program passed its memory limit of 1.0 MiB (1048576 bytes); it held "
                ),
                "{text}"
            );
            assert!(text.contains("indexes"), "{text}");
            assert!(
                text.contains("the round's new tuples not yet merged") || text.contains("p "),
                "{text}"
            );
        }
    }
}

#[test]
fn a_recursive_relation_past_the_cap_is_named_with_its_share() {
    let src = calls(600);
    // The closure is 360,000 pairs: well past 2 MiB once merged, with witnesses.
    let (_, used, text) = memory_error(run(&src, CLOSURE, &capped(2 << 20, 1, true)));
    let names: Vec<&str> = used.relations.iter().map(|r| r.name.as_str()).collect();
    assert!(names.contains(&"r") || used.pending > 0, "{used:?}");
    assert!(used.relations.len() <= 3);
    assert!(text.contains("memory limit of 2.0 MiB"), "{text}");
}

#[test]
fn a_cap_not_reached_changes_no_answer() {
    let src = calls(300);
    for program in [CROSS, CLOSURE] {
        for threads in [1, 2] {
            for witnesses in [true, false] {
                let mut free = RunOptions::default();
                free.engine.threads = threads;
                free.engine.witnesses = witnesses;
                let want = answer(&src, program, &free).unwrap();
                let got = answer(&src, program, &capped(1 << 34, threads, witnesses)).unwrap();
                assert_eq!(got.total, want.total, "{program} at {threads} threads");
                assert_eq!(
                    format!("{:?}", got.rows),
                    format!("{:?}", want.rows),
                    "{program} at {threads} threads"
                );
            }
        }
    }
    // The closure reaches every function from each of the 300.
    assert_eq!(run(&src, CLOSURE, &RunOptions::default()).unwrap(), 300);
}

#[test]
fn a_head_aggregate_counts_its_groups_against_the_cap() {
    let src = calls(600);
    let program = "n(?a, count(?d)) :- calls(?a, ?b), calls(?c, ?d); n(?a, ?k) => ?a, ?k";
    let (max, _, text) = memory_error(run(&src, program, &capped(1 << 20, 1, false)));
    assert_eq!(max, 1 << 20);
    assert!(text.contains("not yet merged"), "{text}");
    // Room enough, it answers.
    assert_eq!(run(&src, program, &capped(1 << 34, 1, false)).unwrap(), 600);
}
