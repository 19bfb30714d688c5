//! Issue 20, item 6, and issue 29: a page of rows fitted to a byte budget (moved here from
//! eval's `tests/bounds.rs` with their assertions, since fitting is the application's). The
//! text leaves rows out, saying how many, with the token to go on from, and cuts a value too
//! big on its own; the JSON does the same measured by writing it, so a big JSON page holds
//! as many rows as fit, and every count in it is an integer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../eval/tests/chain/mod.rs"]
mod chain;

use chain::{CLOSURE, chain, limit, run};
use strata_app::{AnswerPage, Measure};
use strata_eval::{MemorySource, Value};

/// The page `answer` within `budget` bytes, nothing around it.
fn page(answer: strata_eval::Answer, budget: u64) -> AnswerPage {
    AnswerPage::new(answer, budget, &())
}

fn pretty(page: &AnswerPage) -> String {
    serde_json::to_string_pretty(page).unwrap()
}

#[test]
fn issue20_deep_witness_json_is_bounded() {
    let src = chain(4000);
    let program = format!("{CLOSURE}p(0, ?y) => ?y order by ?y desc");
    let answer = run(&src, &program, &limit(3));
    let j = serde_json::to_value(page(answer, u64::MAX)).unwrap();
    let json = j.to_string();
    assert!(json.len() < 40_000, "{}", json.len());
    assert_eq!(j["facts_left_out"][0], 7936);
}

#[test]
fn issue20_answer_budget_leaves_rows_out_and_says_so() {
    let src = chain(4000);
    let program = format!("{CLOSURE}p(0, ?y) => ?y order by ?y desc");
    let answer = run(&src, &program, &limit(100));
    let fitted = page(answer.clone(), 20_000);
    let text = fitted.text();
    assert!(text.len() <= 20_000, "{}", text.len());
    let kept = fitted.shown(Measure::Text).rows.len() as u64;
    assert!(kept > 0 && kept < 100, "{kept}");
    assert!(
        text.ends_with(&format!(
            "rows 1 to {kept} of 4000; {} more rows of this page left out to keep the answer \
             under 20000 bytes; continue with page_token \"{kept}\"",
            100 - kept
        )),
        "{text}"
    );
    let pretty = pretty(&fitted);
    assert!(pretty.len() <= 20_000, "{}", pretty.len());
    let json: serde_json::Value = serde_json::from_str(&pretty).unwrap();
    assert_eq!(json["cut"]["max_bytes"], 20_000);
    assert!(json["cut"]["rows_left_out"].as_u64().unwrap() > 0);
    // An answer that fits is left as it is.
    let small = run(&src, &program, &limit(2));
    assert_eq!(page(small.clone(), 80_000).shown(Measure::Text), small);
    assert_eq!(page(small.clone(), 80_000).shown(Measure::Json), small);
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
        let fitted = page(answer.clone(), max);
        let out = match measure {
            Measure::Text => fitted.text(),
            Measure::Json => pretty(&fitted),
        };
        assert!(out.len() <= max as usize, "{measure:?}: {}", out.len());
        let shown = fitted.shown(measure);
        let cut = shown.cut.as_ref().unwrap();
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
            // Measured by writing it: the kept values fill the budget, less one value.
            assert!(out.len() > max as usize - 300, "{}", out.len());
        }
    }
    // A single text value too big on its own is cut to its first bytes.
    let mut src = MemorySource::new();
    src.add_relation("blob", &["text"]);
    src.insert("blob", &[Value::text("x".repeat(100_000))])
        .unwrap();
    let fitted = page(run(&src, "blob(?t) => ?t", &limit(1)), 4_000);
    let text = fitted.text();
    assert!(text.len() <= 4_000, "{}", text.len());
    assert!(text.contains("of 100000 bytes shown"), "{text}");
    let json = pretty(&fitted);
    assert!(json.len() <= 4_000, "{}", json.len());
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["cut"]["values"][0]["unit"], "bytes");
    assert_eq!(v["cut"]["values"][0]["total"], 100_000);
}

#[test]
fn issue29_a_big_json_page_holds_as_many_rows_as_fit() {
    let src = chain(4000);
    let program = format!("{CLOSURE}p(0, ?y) => ?y order by ?y desc");
    let answer = run(&src, &program, &limit(1000));
    let fitted = page(answer, 80_000);
    let json = pretty(&fitted);
    assert!(json.len() as u64 <= fitted.max_bytes, "{}", json.len());
    let shown = fitted.shown(Measure::Json);
    let kept = shown.rows.len();
    assert!(kept < 1000, "{kept}");
    // One more row would not fit: the page is cut where its JSON reaches the budget.
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let row = serde_json::to_string_pretty(&v["witnesses"][kept - 1])
        .unwrap()
        .len()
        + serde_json::to_string_pretty(&v["rows"][kept - 1])
            .unwrap()
            .len();
    assert!(
        json.len() + row > fitted.max_bytes as usize,
        "{} bytes, a row {row}, room {}",
        json.len(),
        fitted.max_bytes
    );
}

#[test]
fn issue29_counts_are_integers() {
    let src = chain(12_812);
    let answer = run(&src, "e(?a, ?b) => count(?b)", &limit(1));
    let j = serde_json::to_value(page(answer, 80_000)).unwrap();
    assert!(j["rows"][0][0].is_i64(), "{}", j["rows"]);
    assert_eq!(j["rows"][0][0], 12_812);
    assert!(serde_json::to_string(&j).unwrap().contains("[[12812]]"));
}
