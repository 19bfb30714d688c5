//! The limits a program's author controls (issue 20): the size of a query program, its
//! number of rules, and a time limit that counts from when the call began, so that checking
//! and rewriting a huge program cannot outrun it. Every refusal names its limit.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use strata_eval::{
    EvalError, MAX_PROGRAM_BYTES, MAX_PROGRAM_RULES, MemorySource, Query, QueryError, RunOptions,
    Value, Vocabulary,
};

fn source() -> MemorySource {
    let mut src = MemorySource::new();
    src.add_relation("imports", &["src", "dst"]);
    src.insert("imports", &[Value::text("a"), Value::text("b")])
        .unwrap();
    src
}

/// `r0(?x) :- imports(?x, _); r1(?x) :- r0(?x); ...`, `n` rules, and a goal on the last.
fn chain(n: usize) -> String {
    let mut text = "r0(?x) :- imports(?x, _);\n".to_owned();
    for i in 1..n {
        text.push_str(&format!("r{i}(?x) :- r{}(?x);\n", i - 1));
    }
    text.push_str(&format!("r{}(?x) => count(?x)", n - 1));
    text
}

fn vocab(src: &MemorySource) -> Vocabulary {
    use strata_eval::FactSource;
    Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap()
}

#[test]
fn issue20_a_program_past_the_rule_limit_is_refused_naming_it() {
    let src = source();
    let err = match Query::prepare(&vocab(&src), &chain(MAX_PROGRAM_RULES + 2), &[]) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a program of too many rules was accepted"),
    };
    let first = err.lines().next().unwrap();
    assert_eq!(
        first,
        format!("query: the program has more than {MAX_PROGRAM_RULES} rules")
    );
    assert!(err.contains("fix: put the rules in a module"), "{err}");
    assert!(err.len() < 1_000, "{} bytes", err.len());
}

#[test]
fn issue20_a_program_past_the_byte_limit_is_refused_naming_it() {
    let src = source();
    let text = format!("imports(?x, _) => ?x {}", " ".repeat(MAX_PROGRAM_BYTES));
    let err = match Query::prepare(&vocab(&src), &text, &[]) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a program past the byte limit was accepted"),
    };
    assert!(
        err.starts_with(&format!(
            "query: the program is {} bytes, more than the {MAX_PROGRAM_BYTES} a query may have",
            text.len()
        )),
        "{err}"
    );
    assert!(err.len() < 1_000, "{} bytes", err.len());
}

#[test]
fn a_program_within_the_limits_runs() {
    let src = source();
    let q = Query::prepare(&vocab(&src), &chain(2_000), &[]).unwrap();
    let out = q.run(&src, &RunOptions::default()).unwrap();
    assert_eq!(out.answer.total, 1);
}

/// Issue 20, resources 4: the deadline did not cover compiling and planning. The time limit
/// now counts from when the call began: a call whose time went before evaluation stops with
/// the deadline error, having evaluated nothing.
#[test]
fn issue20_the_time_limit_counts_from_when_the_call_began() {
    let src = source();
    let q = Query::prepare(&vocab(&src), &chain(100), &[]).unwrap();
    let mut options = RunOptions::default();
    options.engine.timeout = Some(Duration::from_secs(1));
    options.engine.started = Instant::now().checked_sub(Duration::from_secs(2));
    assert!(options.engine.started.is_some());
    match q.run(&src, &options) {
        Err(QueryError::Eval(EvalError::Deadline { limit, .. })) => {
            assert_eq!(limit, Duration::from_secs(1));
        }
        other => panic!("expected the deadline error, got {other:?}"),
    }
    // Counted from now, the same call answers.
    options.engine.started = Some(Instant::now());
    assert_eq!(q.run(&src, &options).unwrap().answer.total, 1);
}
