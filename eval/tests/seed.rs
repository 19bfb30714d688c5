//! The seed's examples on the bundled example give the seed's answers, word for word.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use strata_eval::{Bind, FactSource, MemorySource, Value, Vocabulary};
use strata_eval::{Query, RunOptions};
use strata_fixtures::example;

/// The example's facts: imports, and pkg with one license absent and one stated empty.
fn source() -> MemorySource {
    let mut s = MemorySource::new();
    s.add_relation("imports", &["src", "dst"]);
    s.add_relation("pkg", &["name", "license"]);
    for line in example::IMPORTS_EDGES
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let f: Vec<&str> = line.split('\t').collect();
        s.insert("imports", &[Value::text(f[0]), Value::text(f[2])])
            .unwrap();
    }
    for line in example::PKG_FACTS.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        let license = if f[1] == "\\N" {
            Value::Absent
        } else {
            Value::text(f[1])
        };
        s.insert("pkg", &[Value::text(f[0]), license]).unwrap();
    }
    s
}

fn vocab(src: &MemorySource) -> Vocabulary {
    Vocabulary::from_sources(src.relations().unwrap(), &[("deps", example::DEPS_MODULE)]).unwrap()
}

fn answer(program: &str, binds: &[(String, Bind)], limit: u64) -> String {
    let src = source();
    let q = Query::prepare(&vocab(&src), program, binds).unwrap();
    let opts = RunOptions {
        limit,
        ..RunOptions::default()
    };
    // The same text at one thread and several, with demand and without.
    let mut texts = Vec::new();
    for (threads, demand) in [(1, true), (4, true), (1, false)] {
        let mut o = opts.clone();
        o.engine.threads = threads;
        o.demand = demand;
        texts.push(q.run(&src, &o).unwrap().answer.text());
    }
    assert!(texts.windows(2).all(|w| w[0] == w[1]), "{texts:#?}");
    texts.remove(0)
}

#[test]
fn depends_on_app_answers_the_seeds_page() {
    assert_eq!(
        answer(r#"deps.depends_on("app", ?d) => ?d"#, &[], 2),
        strata_fixtures::example::seed_page()
    );
}

#[test]
fn an_unknown_relation_says_what_was_meant() {
    let src = source();
    let err = Query::prepare(&vocab(&src), r#"depends_on("app", ?d) => ?d"#, &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"query: unknown relation "depends_on"; did you mean "deps.depends_on"?
line 1, column 1:
  depends_on("app", ?d) => ?d
  ^
fix: did you mean "deps.depends_on"?"#
    );
}

#[test]
fn the_pack_example_answers() {
    assert_eq!(
        answer(r#"imports("api", ?d) => ?d"#, &[], 100),
        "columns: d\n1. log\n   imports(\"api\", \"log\")\n2. util\n   imports(\"api\", \"util\")\n2 rows"
    );
}

#[test]
fn the_cypher_examples_program_with_a_bound_value() {
    let binds = [("to".to_owned(), Bind::One(Value::text("log")))];
    assert_eq!(
        answer(
            r#"pkg(?p, _), pkg(?to, _), imports(?p, ?to) => ?p"#,
            &binds,
            100
        ),
        r#"columns: p
1. api
   pkg("api", absent)
   pkg("log", "")
   imports("api", "log")
1 row"#
    );
}

#[test]
fn the_second_page_continues_where_the_first_ended() {
    let src = source();
    let q = Query::prepare(&vocab(&src), r#"deps.depends_on("app", ?d) => ?d"#, &[]).unwrap();
    let opts = RunOptions {
        offset: 2,
        limit: 2,
        ..RunOptions::default()
    };
    let text = q.run(&src, &opts).unwrap().answer.text();
    assert_eq!(
        text,
        "columns: d\n3. util\n   deps.depends_on(\"app\", \"util\")\n      deps.depends_on(\"app\", \"api\")\n         deps._step(\"app\", \"api\")\n            imports(\"app\", \"api\")\n      deps._step(\"api\", \"util\")\n         imports(\"api\", \"util\")\nrows 3 to 3 of 3"
    );
}

#[test]
fn aggregates_group_and_count() {
    assert_eq!(
        answer(r#"deps.depends_on(?p, ?d) => ?p, count(?d)"#, &[], 100),
        "columns: p, count(d)\n1. api, 2\n2. app, 3\n2 rows"
    );
    assert_eq!(
        answer(r#"deps.depends_on("util", ?d) => count(?d)"#, &[], 100),
        "columns: count(d)\n1. 0\n1 row"
    );
    // One group of every solution: aggregates read each solution's values.
    assert_eq!(
        answer(
            r#"deps.depends_on(?p, ?d) => count(?d), count(distinct ?d), min(?d), list(distinct ?p)"#,
            &[],
            100
        ),
        "columns: count(d), count(distinct d), min(d), list(distinct p)\n1. 5, 3, api, [\"api\", \"app\"]\n1 row"
    );
}

#[test]
fn a_goal_that_restates_a_relation_answers_the_same_from_it() {
    // `deps.depends_on(?a, ?d)` is answered from the relation itself (no copy); with `why`
    // the goal is evaluated as a rule. Same rows, same witnesses.
    let src = source();
    let q = Query::prepare(&vocab(&src), "deps.depends_on(?a, ?d)", &[]).unwrap();
    let plain = q.run(&src, &RunOptions::default()).unwrap().answer.text();
    let profiled = RunOptions {
        why: true,
        ..RunOptions::default()
    };
    assert_eq!(q.run(&src, &profiled).unwrap().answer.text(), plain);
    assert!(plain.starts_with(
        "columns: a, d\n1. api, log\n   deps.depends_on(\"api\", \"log\")\n      deps._step(\"api\", \"log\")\n         imports(\"api\", \"log\")\n"
    ), "{plain}");
    assert!(plain.ends_with("5 rows"), "{plain}");
}
