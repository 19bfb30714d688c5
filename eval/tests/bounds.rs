//! Issue 20, item 6 and the text format: answers are bounded. A deep witness is written flat
//! and holds at most 64 facts unless its row is asked for whole; stored control characters
//! and the cell separator are escaped. Fitting an answer to a byte budget is the
//! application's (`mcp/app/tests/fit.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod chain;

use chain::{CLOSURE, chain, limit, run};
use strata_eval::{MemorySource, RunOptions, Value};

#[test]
fn issue20_deep_witness_is_flat() {
    let src = chain(4000);
    let program = format!("{CLOSURE}p(0, ?y) => ?y order by ?y desc");
    let answer = run(&src, &program, &limit(3));
    let text = answer.text();
    // Was 144 MB: each of 4,000 levels indented by its depth.
    assert_eq!(text.len(), 3_480, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[1], "1. 4000");
    assert_eq!(lines[2], "   p(0, 4000)");
    // Flat: the facts it rests on one level down, each after those it was derived from.
    assert_eq!(
        lines[3],
        "      (written flat, 4001 levels deep: each fact below follows those it was derived \
         from)"
    );
    assert_eq!(lines[4], "      e(0, 1)");
    assert_eq!(lines[5], "      p(0, 1)");
    assert_eq!(lines[6], "      e(1, 2)");
    assert_eq!(lines[7], "      p(0, 2)");
    assert!(
        lines[4..67]
            .iter()
            .all(|l| l.starts_with("      ") && !l.starts_with("       "))
    );
    assert_eq!(
        lines[67],
        "   ... 7936 more facts (witness_row 1 answers this row with its whole witness)"
    );
    assert_eq!(
        lines.last().copied(),
        Some("rows 1 to 3 of 4000; continue with page_token \"3\"")
    );
    // Its JSON (under 40,000 bytes) is the application's: mcp/app/tests/fit.rs.
    assert_eq!(answer.rows[0].facts_left_out, 7936);
}

#[test]
fn issue20_shallow_witness_keeps_its_tree() {
    let src = chain(3);
    let program = format!("{CLOSURE}p(0, ?y) => ?y order by ?y desc");
    let text = run(&src, &program, &limit(1)).text();
    assert_eq!(
        text,
        "columns: y\n1. 3\n   p(0, 3)\n      p(0, 2)\n         p(0, 1)\n            e(0, 1)\n\
         \x20        e(1, 2)\n      e(2, 3)\nrows 1 to 1 of 3; continue with page_token \"1\""
    );
}

#[test]
fn issue20_witness_row_answers_the_whole_witness() {
    let src = chain(100);
    let program = format!("{CLOSURE}p(0, ?y) => ?y order by ?y desc");
    let options = RunOptions {
        offset: 0,
        limit: 1,
        witness_facts: None,
        ..RunOptions::default()
    };
    let answer = run(&src, &program, &options);
    assert_eq!(answer.rows.len(), 1);
    assert_eq!(answer.rows[0].facts_left_out, 0);
    // The root and the 199 facts it rests on.
    assert_eq!(answer.rows[0].witness[0].facts(), 200);
    assert!(!answer.text().contains("more facts"));
}

#[test]
fn issue20_control_characters_and_separators_are_escaped() {
    let mut src = MemorySource::new();
    src.add_relation("v", &["a"]);
    for s in [
        "plain",
        "esc\u{1b}[31mred",
        "nul\0",
        "two\nlines",
        "a, b",
        "\"q\"",
    ] {
        src.insert("v", &[Value::text(s)]).unwrap();
    }
    let text = run(&src, "v(?a) => ?a", &limit(10)).text();
    assert_eq!(
        text,
        "columns: a\n\
         1. \"\\\"q\\\"\"\n   v(\"\\\"q\\\"\")\n\
         2. \"a, b\"\n   v(\"a, b\")\n\
         3. \"esc\\u{1b}[31mred\"\n   v(\"esc\\u{1b}[31mred\")\n\
         4. \"nul\\0\"\n   v(\"nul\\0\")\n\
         5. plain\n   v(\"plain\")\n\
         6. \"two\\nlines\"\n   v(\"two\\nlines\")\n\
         6 rows"
    );
}

#[test]
fn issue20_witness_building_is_bounded_per_page() {
    let src = chain(4000);
    let program = format!("{CLOSURE}p(0, ?y) => ?y order by ?y desc");
    let answer = run(&src, &program, &limit(100));
    // Each row's witness is about 8,000 facts: the page builds 200,000 of them, then each
    // row's premises only, counted as unbuilt.
    let built: u64 = answer
        .rows
        .iter()
        .map(|r| r.witness.iter().map(|n| n.facts()).sum::<u64>() + r.facts_left_out)
        .sum();
    assert!(built <= 200_000 + 100 * 2, "{built}");
    let last = answer.rows.last().unwrap();
    assert!(last.facts_unbuilt > 0);
    let text = answer.text();
    assert!(
        text.contains("   ... at least 2 more facts, past the 200000 a page's witnesses may build"),
        "{}",
        &text[text.len() - 500..]
    );
    assert_eq!(answer.rows[0].facts_unbuilt, 0);
}

#[test]
fn issue20_a_bounded_witness_keeps_whole_bodies() {
    use strata_eval::Node;
    use strata_eval::witness::bound;
    let fact = |r: &str, children: Vec<Node>| Node {
        relation: r.to_owned(),
        children,
        ..Node::default()
    };
    // a :- b, c;  b :- d, e.
    let tree = || {
        fact(
            "a",
            vec![
                fact("b", vec![fact("d", vec![]), fact("e", vec![])]),
                fact("c", vec![]),
            ],
        )
    };
    let shown = |trees: &[Node]| {
        let mut out = String::new();
        for t in trees {
            t.render(0, &mut out);
        }
        out
    };
    // Room for a, b, c, and one of d, e: b's body is left out whole.
    let (kept, left_out) = bound(vec![tree()], Some(4));
    assert_eq!(shown(&kept), "a()\n   b()\n   c()\n");
    assert_eq!(left_out, 2);
    let (kept, left_out) = bound(vec![tree()], Some(5));
    assert_eq!(shown(&kept), "a()\n   b()\n      d()\n      e()\n   c()\n");
    assert_eq!(left_out, 0);
    let (kept, left_out) = bound(vec![tree()], Some(2));
    assert_eq!(shown(&kept), "a()\n");
    assert_eq!(left_out, 4);
}
