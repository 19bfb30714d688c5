//! Issue 20, item 6 and the text format: answers are bounded. A deep witness is written flat
//! and holds at most 64 facts unless its row is asked for whole; an answer fitted to a byte
//! budget leaves rows out (saying how many, with the token to go on from) and cuts a value
//! too big on its own; stored control characters and the cell separator are escaped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use strata_eval::{FactSource, Measure, MemorySource, Query, RunOptions, Value, Vocabulary};

/// A chain `e(0, 1), e(1, 2), ..., e(n - 1, n)`.
fn chain(n: u32) -> MemorySource {
    let mut s = MemorySource::new();
    s.add_relation("e", &["src", "dst"]);
    for i in 0..n {
        s.insert(
            "e",
            &[Value::Number(f64::from(i)), Value::Number(f64::from(i + 1))],
        )
        .unwrap();
    }
    s
}

const CLOSURE: &str = "p(?x, ?y) :- e(?x, ?y);\np(?x, ?z) :- p(?x, ?y), e(?y, ?z);\n";

fn run(src: &MemorySource, program: &str, options: &RunOptions) -> strata_eval::Answer {
    let vocab = Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let q = Query::prepare(&vocab, program, &[]).unwrap();
    q.run(src, options).unwrap().answer
}

fn limit(n: u64) -> RunOptions {
    RunOptions {
        limit: n,
        ..RunOptions::default()
    }
}

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
    let json = answer.json().to_string();
    assert!(json.len() < 40_000, "{}", json.len());
    assert_eq!(answer.json()["facts_left_out"][0], 7936);
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
fn issue20_answer_budget_leaves_rows_out_and_says_so() {
    let src = chain(4000);
    let program = format!("{CLOSURE}p(0, ?y) => ?y order by ?y desc");
    let answer = run(&src, &program, &limit(100));
    let fitted = answer.fit(20_000, Measure::Text);
    let text = fitted.text();
    assert!(text.len() <= 20_000, "{}", text.len());
    let kept = fitted.rows.len() as u64;
    assert!(kept > 0 && kept < 100, "{kept}");
    assert!(
        text.ends_with(&format!(
            "rows 1 to {kept} of 4000; {} more rows of this page left out to keep the answer \
             under 20000 bytes; continue with page_token \"{kept}\"",
            100 - kept
        )),
        "{text}"
    );
    let json = answer.fit(20_000, Measure::Json).json();
    let pretty = serde_json::to_string_pretty(&json).unwrap();
    assert!(pretty.len() <= 20_000, "{}", pretty.len());
    assert_eq!(json["cut"]["max_bytes"], 20_000);
    assert!(json["cut"]["rows_left_out"].as_u64().unwrap() > 0);
    // An answer that fits is left as it is.
    let small = run(&src, &program, &limit(2));
    assert_eq!(small.fit(80_000, Measure::Text), small);
}

#[test]
fn issue20_a_huge_list_is_cut_inside() {
    let mut src = MemorySource::new();
    src.add_relation("uses", &["a", "b"]);
    for i in 0..50_000 {
        src.insert(
            "uses",
            &[
                Value::text(format!("pkg/{i:06}")),
                Value::Number(f64::from(i)),
            ],
        )
        .unwrap();
    }
    let answer = run(&src, "uses(?a, ?b) => list(?a), list(?b)", &limit(100));
    for (measure, max) in [(Measure::Text, 5_000), (Measure::Json, 5_000)] {
        let fitted = answer.fit(max, measure);
        let out = match measure {
            Measure::Text => fitted.text(),
            Measure::Json => serde_json::to_string_pretty(&fitted.json()).unwrap(),
        };
        assert!(out.len() <= max as usize, "{measure:?}: {}", out.len());
        let cut = fitted.cut.as_ref().unwrap();
        assert_eq!(cut.values[0].total, 50_000);
        assert!(cut.values[0].kept > 0);
        if measure == Measure::Text {
            assert!(out.contains(", ...]"), "{out}");
            assert!(
                out.contains(&format!(
                    "row 1, column list(a): {} of 50000 values shown, to keep the answer under \
                     5000 bytes",
                    cut.values[0].kept
                )),
                "{out}"
            );
        } else {
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(v["cut"]["values"][0]["unit"], "values");
        }
    }
    // A single text value too big on its own is cut to its first bytes.
    let mut src = MemorySource::new();
    src.add_relation("blob", &["text"]);
    src.insert("blob", &[Value::text("x".repeat(100_000))])
        .unwrap();
    let fitted = run(&src, "blob(?t) => ?t", &limit(1)).fit(4_000, Measure::Text);
    let text = fitted.text();
    assert!(text.len() <= 4_000, "{}", text.len());
    assert!(text.contains("of 100000 bytes shown"), "{text}");
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
