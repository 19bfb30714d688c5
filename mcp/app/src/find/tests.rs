//! The tests of `find`: word splits, ranking, edit distances and the generated code graph's
//! names.

#![allow(clippy::unwrap_used)]

use super::words::{eq_ignore_case, significant, starts_with_ignore_case};
use super::*;

fn index(texts: &[&str]) -> Index {
    let mut ix = Index::new();
    for t in texts {
        ix.push(t);
    }
    ix
}

fn found<'a>(ix: &'a Index, q: &str) -> Vec<(&'a str, Kind)> {
    ix.search(q, u32::MAX, usize::MAX)
        .0
        .into_iter()
        .map(|m| (ix.text(m.id).unwrap(), m.kind))
        .collect()
}

/// The names of a small generated code graph: nodes and attribute values.
pub(super) fn codegraph() -> Index {
    let cfg = strata_fixtures::codegraph::Config::with_edges(20_000);
    let mut edges = Vec::new();
    strata_fixtures::codegraph::write_edges(&cfg, &mut edges).unwrap();
    let mut attrs = Vec::new();
    strata_fixtures::codegraph::write_attrs(&cfg, &mut attrs).unwrap();
    let mut seen = std::collections::HashSet::new();
    let mut ix = Index::new();
    for line in String::from_utf8(edges)
        .unwrap()
        .lines()
        .chain(String::from_utf8(attrs).unwrap().lines())
    {
        let f: Vec<&str> = line.split('\t').collect();
        for v in [f[0], f[2]] {
            if v.parse::<f64>().is_err() && seen.insert(v.to_owned()) {
                ix.push(v);
            }
        }
    }
    ix
}

#[test]
fn words_split_on_separators_and_case() {
    let w: Vec<&str> = words("sym:src/cli.rs#parse_args").collect();
    assert_eq!(w, ["sym", "src", "cli", "rs", "parse", "args"]);
    let w: Vec<&str> = words("HTTPServer.parseArgs-v2 x").collect();
    assert_eq!(w, ["HTTP", "Server", "parse", "Args", "v2", "x"]);
    assert_eq!(words("").count(), 0);
    assert_eq!(words("::/#").count(), 0);
    let w: Vec<&str> = words("ünïCode_Ök").collect();
    assert_eq!(w, ["ünï", "Code", "Ök"]);
}

#[test]
fn the_kinds_rank_in_order() {
    let ix = index(&[
        "sym:src/cli.rs#parse_args",
        "parse_args_all",
        "Parse_Args",
        "parse_args",
        "sym:src/cli.rs#prase_args",
        "file:src/args.rs",
        "reparse_args",
    ]);
    assert_eq!(
        found(&ix, "parse_args"),
        [
            ("parse_args", Kind::Exact),
            ("Parse_Args", Kind::Exact),
            ("sym:src/cli.rs#parse_args", Kind::LastPart),
            ("parse_args_all", Kind::Prefix),
            ("reparse_args", Kind::Substring),
            ("sym:src/cli.rs#prase_args", Kind::Fuzzy),
            ("file:src/args.rs", Kind::SomeWords),
        ]
    );
    assert_eq!(
        found(&ix, "parse args"),
        [
            ("Parse_Args", Kind::Token),
            ("parse_args", Kind::Token),
            ("parse_args_all", Kind::Token),
            ("sym:src/cli.rs#parse_args", Kind::Token),
            ("reparse_args", Kind::SomeWords),
            ("file:src/args.rs", Kind::SomeWords),
            ("sym:src/cli.rs#prase_args", Kind::SomeWords),
        ]
    );
    // A misspelling: a swap is two edits.
    let got = found(&ix, "prase_args");
    assert_eq!(got[0], ("sym:src/cli.rs#prase_args", Kind::LastPart));
    assert_eq!(
        &got[1..4],
        [
            ("Parse_Args", Kind::Fuzzy),
            ("parse_args", Kind::Fuzzy),
            ("sym:src/cli.rs#parse_args", Kind::Fuzzy),
        ]
    );
    assert!(found(&ix, "").is_empty());
    assert!(found(&ix, "   ").is_empty());
    assert!(found(&ix, "zzzzzz").is_empty());
}

#[test]
fn case_changes_are_word_breaks() {
    let ix = index(&[
        "sym:lib.rs#parseArgs",
        "sym:lib.rs#HTTPServer",
        "parsearguments",
    ]);
    assert_eq!(
        found(&ix, "parse args")[0],
        ("sym:lib.rs#parseArgs", Kind::Token)
    );
    assert_eq!(
        found(&ix, "http server")[0],
        ("sym:lib.rs#HTTPServer", Kind::Token)
    );
    // The last word may be a prefix of a word.
    assert_eq!(
        found(&ix, "parse arg")[0],
        ("sym:lib.rs#parseArgs", Kind::Token)
    );
    assert_eq!(found(&ix, "parseArgs")[0].1, Kind::LastPart);
}

#[test]
fn the_ascii_word_test_agrees_with_the_split() {
    let texts = [
        "sym:lib.rs#parseArgs",
        "sym:lib.rs#HTTPServer",
        "HTTPServer2Go",
        "parsearguments",
        "file:src/http/client_16.py",
        "ParseArgsAll",
        "a__b--c",
        "v2x_V2X",
        "XMLHttpRequest",
        "",
    ];
    let queries = [
        "parse args",
        "parse arg",
        "http server",
        "server",
        "args",
        "arg",
        "client 16",
        "16",
        "b c",
        "v2x",
        "xml http request",
        "http",
        "go",
        "arguments",
        "a",
    ];
    for t in texts {
        let lower = t.to_ascii_lowercase();
        for q in queries {
            let query = Query::new(q).unwrap();
            let last = query.words.len() - 1;
            let split_all = query.words.iter().enumerate().all(|(i, w)| {
                words(t).any(|x| {
                    if i == last {
                        starts_with_ignore_case(x, w)
                    } else {
                        eq_ignore_case(x, w)
                    }
                })
            });
            assert_eq!(query.all_words(t, &lower), split_all, "{t} / {q}");
            let split_some = query
                .words
                .iter()
                .filter(|w| significant(w) && words(t).any(|x| eq_ignore_case(x, w)))
                .count();
            assert_eq!(query.words_in(t, &lower), split_some, "{t} / {q}");
        }
    }
}

#[test]
fn generated_code_graph_names_are_grounded() {
    let ix = codegraph();
    assert!(ix.len() > 1000, "{}", ix.len());
    // A package by its name: the package node, then its name attribute, first.
    let pkg = (1..=ix.len())
        .filter_map(|id| ix.text(id))
        .find(|t| t.starts_with("pkg:"))
        .unwrap()
        .to_owned();
    let name = pkg.trim_start_matches("pkg:");
    let got = found(&ix, name);
    assert_eq!(got[0], (name, Kind::Exact), "{got:?}");
    assert_eq!(got[1], (pkg.as_str(), Kind::LastPart), "{got:?}");

    // A symbol by its words: every symbol of that name, as tokens.
    let sym = (1..=ix.len())
        .filter_map(|id| ix.text(id))
        .find(|t| t.starts_with("sym:") && t.contains('#'))
        .unwrap()
        .to_owned();
    let short = sym.rsplit('#').next().unwrap().to_owned();
    let spaced = short.replace('_', " ");
    let got = found(&ix, &spaced);
    // The shortest values with every word come first: the name and its symbols.
    assert!(
        got.iter()
            .take(3)
            .any(|(t, k)| *t == sym.as_str() && *k == Kind::Token),
        "{spaced}: {got:?}"
    );
    assert_eq!(got[0], (short.as_str(), Kind::Token), "{got:?}");

    // A misspelled symbol name: one swap away.
    let mut chars: Vec<char> = short.chars().collect();
    chars.swap(1, 2);
    let typo: String = chars.into_iter().collect();
    if !ix
        .search(&typo, u32::MAX, usize::MAX)
        .0
        .iter()
        .any(|m| m.kind < Kind::Fuzzy)
    {
        let got = found(&ix, &typo);
        assert!(
            got.iter()
                .any(|(t, k)| *t == sym.as_str() && *k == Kind::Fuzzy),
            "{typo}: {got:?}"
        );
    }

    // A file by a directory and a word of its name.
    let file = (1..=ix.len())
        .filter_map(|id| ix.text(id))
        .find(|t| t.starts_with("file:") && t.matches('/').count() >= 3)
        .unwrap()
        .to_owned();
    let parts: Vec<&str> = file.split('/').collect();
    let q = format!("{} {}", parts[parts.len() - 2], parts[parts.len() - 1]);
    let got = found(&ix, &q);
    assert!(
        got.iter()
            .any(|(t, k)| *t == file.as_str() && *k == Kind::Token),
        "{q}: {got:?}"
    );
    // Lowercase forms line up with their texts.
    assert_eq!(ix.lower_of(1).unwrap(), ix.text(1).unwrap().to_lowercase());
}

#[test]
fn a_search_in_parts_finds_what_one_pass_finds() {
    let ix = codegraph();
    let n = ix.len() as usize;
    for q in [
        "parse entry",
        "prase_entry",
        "src",
        "lexer table 3",
        "zq",
        "sync_0/src/http",
    ] {
        let q = Query::new(q).unwrap();
        let one = ix.search_on(&q, n, 50, 1);
        for threads in [2, 3, 7] {
            assert_eq!(ix.search_on(&q, n, 50, threads), one, "{threads}");
        }
    }
}

#[test]
fn upto_hides_newer_texts() {
    let ix = index(&["alpha", "alphabet"]);
    assert_eq!(ix.search("alpha", 1, 10).1, 1);
    assert_eq!(ix.search("alpha", 2, 10).1, 2);
    // Keeping fewer keeps the best.
    let ix = index(&["parse_args_all", "x#parse_args", "parse_args", "parse_argz"]);
    let (best, total) = ix.search("parse_args", u32::MAX, 2);
    assert_eq!(total, 4);
    let best: Vec<&str> = best.iter().map(|m| ix.text(m.id).unwrap()).collect();
    assert_eq!(best, ["parse_args", "x#parse_args"]);
}

#[test]
fn a_hit_across_two_texts_hides_none_inside_the_next() {
    // `args:` then `args:args`: the hit of `gs:arg` across the two must not hide the one
    // inside the second.
    let ix = index(&["ARGS:", "ARGS:args"]);
    assert_eq!(found(&ix, "GS:ARG"), [("ARGS:args", Kind::Substring)]);
}

/// Measures a search on 360,000 generated names:
/// `cargo test --release -p strata-mcp --lib find::tests::timing -- --ignored --nocapture`.
#[test]
#[ignore]
fn timing() {
    let cfg = strata_fixtures::codegraph::Config::with_edges(2_000_000);
    let mut edges = Vec::new();
    strata_fixtures::codegraph::write_edges(&cfg, &mut edges).unwrap();
    let mut attrs = Vec::new();
    strata_fixtures::codegraph::write_attrs(&cfg, &mut attrs).unwrap();
    let mut seen = std::collections::HashSet::new();
    let mut ix = Index::new();
    let edges = String::from_utf8(edges).unwrap();
    let attrs = String::from_utf8(attrs).unwrap();
    for line in edges.lines().chain(attrs.lines()) {
        let f: Vec<&str> = line.split('\t').collect();
        for v in [f[0], f[2]] {
            if ix.len() < 360_000 && seen.insert(v) {
                ix.push(v);
            }
        }
    }
    println!("{} names", ix.len());
    for q in [
        "parse args",
        "http_1",
        "lexer",
        "prase_token",
        "the parser crate",
        "zq",
    ] {
        let mut best = std::time::Duration::MAX;
        let mut n = 0;
        let runs: usize = std::env::var("FIND_RUNS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(5);
        for _ in 0..runs {
            let t = std::time::Instant::now();
            n = ix.search(q, u32::MAX, 40).1;
            best = best.min(t.elapsed());
        }
        println!("{q:>20}: {n} matches, best of {runs} {best:?}");
    }
}
