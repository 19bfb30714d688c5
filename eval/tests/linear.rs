//! Linear recursion by binding: a goal binding the arguments a linear recursion moves is
//! answered by a walk from the bound values, whichever way the rules are written. Every
//! answer must be the oracle's, every witness must re-derive its row in the program's own
//! rules, and `explain` must name the plan.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod graphs;

use common::rederive::rederives;
use proptest::prelude::*;
use strata_eval::internals::naive;
use strata_eval::{FactSource, MemorySource, Query, RunOptions, Value, Vocabulary};

fn v(i: u32) -> Value {
    Value::text(format!("v{i}"))
}

/// Base relations e(a, b), f(a, b), n(a).
fn source(e: &[(u32, u32)], f: &[(u32, u32)], n: &[u32]) -> MemorySource {
    let mut s = MemorySource::new();
    s.add_relation("e", &["a", "b"]);
    s.add_relation("f", &["a", "b"]);
    s.add_relation("n", &["a"]);
    for &(a, b) in e {
        s.insert("e", &[v(a), v(b)]).unwrap();
    }
    for &(a, b) in f {
        s.insert("f", &[v(a), v(b)]).unwrap();
    }
    for &a in n {
        s.insert("n", &[v(a)]).unwrap();
    }
    s
}

fn prepare(src: &MemorySource, text: &str) -> Query {
    let vocab = Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    Query::prepare(&vocab, text, &[]).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Runs `text` over `src` with witnesses at 1 and 2 threads: the rows must be the oracle's
/// and every witness must re-derive its row. Answers the explain text.
fn check(src: &MemorySource, text: &str) -> String {
    check_query(src, &prepare(src, text), text)
}

/// [`check`] for a prepared query (`text` names it in failures).
fn check_query(src: &MemorySource, q: &Query, text: &str) -> String {
    let ir = &q.compiled.ir;
    let facts = naive::evaluate(ir, src).unwrap();
    let want = naive::answer(&facts[ir.goal], &q.compiled.shape, 0, u64::MAX).unwrap();
    for threads in [1, 2] {
        let mut options = RunOptions {
            limit: u64::MAX,
            // Whole witnesses: a bounded one stops its list before the facts the row
            // follows from.
            witness_facts: None,
            ..RunOptions::default()
        };
        options.engine.threads = threads;
        let got = q.run(src, &options).unwrap();
        let rows: Vec<Vec<naive::Cell>> = got
            .answer
            .rows
            .iter()
            .map(|r| common::oracle_cells(&r.cells))
            .collect();
        assert_eq!(rows, want.rows, "{text} at {threads} threads");
        for row in &got.answer.rows {
            assert!(!row.witness.is_empty(), "{text}: a row without witness");
            for w in &row.witness {
                rederives(ir, &facts, w);
            }
        }
    }
    q.explain(src, &RunOptions::default()).unwrap().text()
}

const LEFT: &str = "r(?a, ?c) :- e(?a, ?c);\nr(?a, ?c) :- r(?a, ?b), e(?b, ?c);\n";
const RIGHT: &str = "r(?a, ?c) :- e(?a, ?c);\nr(?a, ?c) :- e(?a, ?b), r(?b, ?c);\n";

#[test]
fn issue18_left_recursive_reverse_reach() {
    // A chain 0 -> 1 -> ... -> 9 and a side branch 20 -> 5; who reaches 7?
    let mut e: Vec<(u32, u32)> = (0..9).map(|i| (i, i + 1)).collect();
    e.push((20, 5));
    e.push((7, 30));
    let src = source(&e, &[], &[]);
    let text = check(&src, &format!("{LEFT}r(?x, \"v7\") => ?x"));
    assert!(
        text.contains(
            "r: linear recursion bound on argument 2, a walk from the bound value \
             (left-linear rules, reverse direction)"
        ),
        "{text}"
    );
    // The walk reached 0..=7 and 20 (the bound value included), and nothing past 7.
    assert!(text.contains("9 values reached"), "{text}");
    // Right-linear rules bound on the first argument walk forwards.
    let text = check(&src, &format!("{RIGHT}r(\"v2\", ?y) => ?y"));
    assert!(
        text.contains("(right-linear rules, forward direction), 9 values reached"),
        "{text}"
    );
    // A row's witness is the path, in the rules as written.
    let q = prepare(&src, &format!("{LEFT}r(?x, \"v7\") => ?x"));
    let out = q.run(&src, &RunOptions::default()).unwrap();
    let row = out
        .answer
        .rows
        .iter()
        .find(|r| r.cells == vec![strata_eval::Cell::Value(v(5))])
        .unwrap();
    let mut shown = String::new();
    for w in &row.witness {
        w.render(0, &mut shown);
    }
    assert_eq!(
        shown,
        "r(\"v5\", \"v7\")\n   r(\"v5\", \"v6\")\n      e(\"v5\", \"v6\")\n   e(\"v6\", \"v7\")\n"
    );
}

#[test]
fn issue18_an_equality_to_a_constant_binds_the_goal() {
    // Cypher's `WHERE id(t) = $node` compiles to `r(?x, ?t), ?t = "..."`: the same walk as
    // the constant written in the atom, the same rows, the same work.
    let mut e: Vec<(u32, u32)> = (0..9).map(|i| (i, i + 1)).collect();
    e.push((20, 5));
    e.push((7, 30));
    let src = source(&e, &[], &[]);
    for (stated, inline) in [
        (
            format!("{LEFT}r(?x, ?t), ?t = \"v7\" => ?x"),
            format!("{LEFT}r(?x, \"v7\") => ?x"),
        ),
        (
            format!("{RIGHT}r(?f, ?y), \"v2\" = ?f => ?y"),
            format!("{RIGHT}r(\"v2\", ?y) => ?y"),
        ),
    ] {
        let text = check(&src, &stated);
        assert!(text.contains("values reached"), "{stated}: {text}");
        let run = |p: &str| prepare(&src, p).run(&src, &RunOptions::default()).unwrap();
        let (a, b) = (run(&stated), run(&inline));
        let cells = |o: &strata_eval::Outcome| -> Vec<Vec<strata_eval::Cell>> {
            o.answer.rows.iter().map(|r| r.cells.clone()).collect()
        };
        assert_eq!(cells(&a), cells(&b), "{stated}");
        assert_eq!(a.work, b.work, "{stated}");
    }
    // The substituted variable may be an answer column: it holds the constant.
    check(&src, &format!("{RIGHT}r(?f, ?y), ?f = \"v2\" => ?f, ?y"));
}

#[derive(Clone, Copy, Debug)]
enum Rules {
    /// `r(?a, ?c) :- r(?a, ?b), E(?b, ?c)`.
    Left,
    /// `r(?a, ?c) :- E(?a, ?b), r(?b, ?c)`.
    Right,
}

#[derive(Clone, Copy, Debug)]
enum Edges {
    /// `e` alone.
    One,
    /// `e` and `f`, a recursive rule and an exit rule each.
    Several,
    /// A derived step, `s` the union of `e` and `f` (as `deps._step` and Cypher's helpers).
    Step,
}

#[derive(Clone, Copy, Debug)]
enum Goal {
    /// `r("vc", ?y)`.
    First,
    /// `r(?x, "vc")`.
    Second,
    /// Both bound.
    Both,
    /// The second bound by the goal's own literal: `n(?y), r(?x, ?y)` (several seeds).
    Seeded,
}

fn program(rules: Rules, edges: Edges, filter: u8, exit: u8, goal: Goal, c: u32) -> String {
    let filter = match filter {
        0 => "",
        1 => ", n(?b)",
        2 => ", not n(?b)",
        _ => ", ?b != \"v3\"",
    }
    .to_owned();
    // The exit rules: one step (the walk folds them into its steps), two steps (a walk
    // that joins them), or one step with the recursive rules' filter on its kept argument
    // (folded too, when the filter is the steps').
    let exit_filter = match rules {
        Rules::Left => filter.replace("?b", "?a"),
        Rules::Right => filter.replace("?b", "?c"),
    };
    let steps: &[&str] = match edges {
        Edges::One => &["e"],
        Edges::Several => &["e", "f"],
        Edges::Step => &["s"],
    };
    let mut text = String::new();
    if matches!(edges, Edges::Step) {
        text.push_str("s(?a, ?b) :- e(?a, ?b);\ns(?a, ?b) :- f(?a, ?b);\n");
    }
    for e in steps {
        match exit {
            0 => text.push_str(&format!("r(?a, ?c) :- {e}(?a, ?c);\n")),
            1 => text.push_str(&format!("r(?a, ?c) :- {e}(?a, ?m), {e}(?m, ?c);\n")),
            _ => text.push_str(&format!("r(?a, ?c) :- {e}(?a, ?c){exit_filter};\n")),
        }
        match rules {
            Rules::Left => {
                text.push_str(&format!("r(?a, ?c) :- r(?a, ?b), {e}(?b, ?c){filter};\n"))
            }
            Rules::Right => {
                text.push_str(&format!("r(?a, ?c) :- {e}(?a, ?b), r(?b, ?c){filter};\n"))
            }
        }
    }
    text.push_str(&match goal {
        Goal::First => format!("r(\"v{c}\", ?y) => ?y"),
        Goal::Second => format!("r(?x, \"v{c}\") => ?x"),
        Goal::Both => format!("r(\"v{c}\", \"v{}\"), n(?z) => ?z", (c + 3) % 8),
        Goal::Seeded => "n(?y), r(?x, ?y) => ?x, ?y".to_owned(),
    });
    text
}

fn rules() -> impl Strategy<Value = Rules> {
    prop_oneof![Just(Rules::Left), Just(Rules::Right)]
}

fn edges() -> impl Strategy<Value = Edges> {
    prop_oneof![Just(Edges::One), Just(Edges::Several), Just(Edges::Step)]
}

fn goal() -> impl Strategy<Value = Goal> {
    prop_oneof![
        Just(Goal::First),
        Just(Goal::Second),
        Just(Goal::Both),
        Just(Goal::Seeded)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Both rule forms, both binding sides (and both, and seeds from the goal), one and
    /// several edge relations, an extra filter: the oracle's rows, witnesses that
    /// re-derive, and the walk whenever the goal binds the argument the rules move.
    #[test]
    fn a_bound_linear_recursion_answers_like_the_oracle(
        rules in rules(),
        edges in edges(),
        filter in 0u8..4,
        exit in 0u8..3,
        goal in goal(),
        c in 0u32..8,
        e in prop::collection::vec((0u32..8, 0u32..8), 0..16),
        f in prop::collection::vec((0u32..8, 0u32..8), 0..10),
        n in prop::collection::vec(0u32..8, 0..5),
    ) {
        let text = program(rules, edges, filter, exit, goal, c);
        let src = source(&e, &f, &n);
        let explain = check(&src, &text);
        let walked = matches!(
            (rules, goal),
            (Rules::Left, Goal::Second | Goal::Both | Goal::Seeded) | (Rules::Right, Goal::First | Goal::Both)
        );
        prop_assert_eq!(explain.contains("linear recursion bound on argument"), walked, "{}\n{}", text, explain);
        // The walk folds the exit rules into its steps exactly when they are its steps.
        let folded = walked && (exit == 2 || (exit == 0 && filter == 0));
        let plus = explain.contains("@linear.left+.") || explain.contains("@linear.right+.");
        prop_assert_eq!(plus, folded, "{}\n{}", text, explain);
    }
}

/// A code graph for Cypher: `File` nodes with a `name`, `IMPORTS` and `CALLS` edges.
fn graph(
    imports: &[(u32, u32)],
    calls: &[(u32, u32)],
) -> (MemorySource, Vocabulary, strata_eval::Graph) {
    use strata_eval::Origin;
    let mut src = MemorySource::new();
    src.add_dump_relation("file", &["id"], Origin::Nodes, "File");
    src.add_dump_relation("name", &["node", "value"], Origin::Attrs, "name");
    src.add_dump_relation("imports", &["src", "dst"], Origin::Edges, "IMPORTS");
    src.add_dump_relation("calls", &["src", "dst"], Origin::Edges, "CALLS");
    for i in 0..8 {
        src.insert("file", &[v(i)]).unwrap();
        src.insert("name", &[v(i), Value::text(format!("n{i}"))])
            .unwrap();
    }
    for &(a, b) in imports {
        src.insert("imports", &[v(a), v(b)]).unwrap();
    }
    for &(a, b) in calls {
        src.insert("calls", &[v(a), v(b)]).unwrap();
    }
    let vocab = Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let graph = strata_eval::Graph::derive(&vocab, &strata_eval::Mapping::default()).unwrap();
    (src, vocab, graph)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// Cypher's variable-length paths (`*`, `*1..3`, `*2..`, one type or two), bound at
    /// either end, in either direction: the oracle's rows and witnesses that re-derive; an
    /// open path bound at its end by a property walks from it.
    #[test]
    fn cypher_variable_length_paths_answer_like_the_oracle(
        length in prop_oneof![Just("*"), Just("*1..3"), Just("*2..")],
        types in prop_oneof![Just("IMPORTS"), Just("IMPORTS|CALLS")],
        pattern in 0usize..4,
        c in 0u32..8,
        imports in prop::collection::vec((0u32..8, 0u32..8), 0..16),
        calls in prop::collection::vec((0u32..8, 0u32..8), 0..8),
    ) {
        let q = match pattern {
            0 => format!("MATCH (a:File {{name: $n}})-[:{types}{length}]->(b:File) RETURN b.name"),
            1 => format!("MATCH (a:File)-[:{types}{length}]->(b:File {{name: $n}}) RETURN a.name"),
            2 => format!("MATCH (a:File)<-[:{types}{length}]-(b:File {{name: $n}}) RETURN a.name"),
            _ => format!("MATCH (a:File {{name: $n}})<-[:{types}{length}]-(b:File) RETURN b.name"),
        };
        let (src, vocab, g) = graph(&imports, &calls);
        let params = [("n".to_owned(), strata_eval::Bind::One(Value::text(format!("n{c}"))))];
        let cq = strata_eval::cypher::prepare(&vocab, &g, &q, &params)
            .unwrap_or_else(|e| panic!("{q}: {e}"));
        let explain = check_query(&src, &cq.query, &format!("{q}\n{}", cq.program));
        // The end of the path bound, the rules recursing on the left: a walk backwards.
        let reverse = length != "*1..3" && matches!(pattern, 1 | 3);
        prop_assert_eq!(
            explain.contains("linear recursion bound on argument 2"),
            reverse,
            "{}\n{}\n{}", q, cq.program, explain
        );
    }
}

#[test]
fn the_seeds_deps_module_walks_from_a_bound_dependency() {
    // `deps.depends_on` is left-recursive over a derived step: "what depends on X" walks
    // backwards from X, and the step is read by demand from the walk.
    let (mut src, vocab, _) = graphs::example();
    for i in 0..50 {
        src.insert("imports", &[v(i + 1), v(i)]).unwrap();
    }
    src.insert("imports", &[v(0), Value::text("log")]).unwrap();
    let text = "deps.depends_on(?x, \"log\") => ?x";
    let q = Query::prepare(&vocab, text, &[]).unwrap();
    let explain = check_query(&src, &q, text);
    assert!(
        explain.contains("deps.depends_on: linear recursion bound on argument 2"),
        "{explain}"
    );
    assert!(
        explain.contains("deps._step: computed by demand"),
        "{explain}"
    );
    let text = "deps.depends_on(\"v50\", ?d) => ?d";
    let q = Query::prepare(&vocab, text, &[]).unwrap();
    let explain = check_query(&src, &q, text);
    assert!(
        explain.contains("deps.depends_on: computed by demand for argument 1"),
        "{explain}"
    );
}

/// The bound reaches of issue 18 on the generator's code graph (`STRATA_LINEAR_EDGES`
/// edges, default 1M: its `IMPORTS` edges in memory), each rule form and side, with magic
/// sets alone (the pipeline before the walk) and with the walk: work units, answers and
/// wall time, printed. Run by hand: `cargo test -p strata-eval --test linear -- --ignored
/// --nocapture`.
#[test]
#[ignore = "a measurement, printed; minutes in a debug build"]
fn issue18_figures_on_the_code_graph() {
    use strata_eval::internals::{Options, evaluate, linear, magic};
    let edges: u64 = std::env::var("STRATA_LINEAR_EDGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let mut dump = Vec::new();
    strata_fixtures::codegraph::write_edges(
        &strata_fixtures::codegraph::Config::with_edges(edges),
        &mut dump,
    )
    .unwrap();
    let mut src = MemorySource::new();
    src.add_relation("imports", &["src", "dst"]);
    let mut into: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    let mut out: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    let mut n = 0;
    for line in String::from_utf8(dump).unwrap().lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f[1] == "IMPORTS" {
            src.insert("imports", &[Value::text(f[0]), Value::text(f[2])])
                .unwrap();
            *into.entry(f[2].to_owned()).or_default() += 1;
            *out.entry(f[0].to_owned()).or_default() += 1;
            n += 1;
        }
    }
    // The most imported file, and the file importing the most.
    let target = into
        .iter()
        .max_by_key(|(k, v)| (**v, (*k).clone()))
        .unwrap()
        .0;
    let source = out
        .iter()
        .max_by_key(|(k, v)| (**v, (*k).clone()))
        .unwrap()
        .0;
    println!("{edges} edges: {n} imports; target {target}, source {source}");
    let vocab = Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let budget = 50_000_000;
    for (form, rules) in [("left", LEFT), ("right", RIGHT)] {
        let rules = rules.replace("e(", "imports(");
        for (side, goal) in [
            ("forward", format!("r(\"{source}\", ?y) => count(?y)")),
            ("reverse", format!("r(?x, \"{target}\") => count(?x)")),
        ] {
            let q = Query::prepare(&vocab, &format!("{rules}{goal}"), &[]).unwrap();
            let ir = &q.compiled.ir;
            let plans = [
                ("magic sets alone", magic::rewrite(ir)),
                (
                    "walk, then magic",
                    linear::rewrite(ir).map(|l| magic::rewrite(&l).unwrap_or(l)),
                ),
            ];
            for (plan, rewritten) in plans {
                let Some(rewritten) = rewritten else {
                    println!("  {form} {side}, {plan}: does not apply");
                    continue;
                };
                let started = std::time::Instant::now();
                let options = Options {
                    witnesses: false,
                    max_work: Some(budget),
                    ..Options::default()
                };
                match evaluate(&rewritten, &src, &options) {
                    Ok(ev) => println!(
                        "  {form} {side}, {plan}: {} answers, work {}, {:.2} s",
                        ev.relations[rewritten.goal].len(),
                        ev.work,
                        started.elapsed().as_secs_f64()
                    ),
                    Err(e) => println!(
                        "  {form} {side}, {plan}: stopped after {:.2} s: {e}",
                        started.elapsed().as_secs_f64()
                    ),
                }
            }
        }
    }
}
