//! The evaluator's stages depend only on the stages before them (issue 29): read from the
//! source itself, so a new import that reaches forward (or back into the front end from the
//! executor) fails here rather than in a review.
//!
//! The pipeline is `front` (syntax) → `link` (names, checks, lowering to `ir`) → `rewrite`
//! → `exec` → `witness` / `answer`. `data`, `ops` and `budget` are leaves every stage may
//! use; `ir` is the data `link` produces and the later stages read.

mod sources;

use std::path::Path;

use sources::files;

/// The modules a stage's code may not name, by the stage's folder or file.
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "front",
        &[
            "link", "ir", "rewrite", "exec", "witness", "answer", "plan", "naive",
        ],
    ),
    (
        "ops.rs",
        &[
            "front", "link", "ir", "rewrite", "exec", "witness", "answer",
        ],
    ),
    (
        "data",
        &[
            "front", "link", "ir", "rewrite", "exec", "witness", "answer",
        ],
    ),
    (
        "ir.rs",
        &[
            "front", "link", "rewrite", "exec", "witness", "answer", "naive",
        ],
    ),
    (
        "link",
        &["rewrite", "exec", "witness", "answer", "plan", "naive"],
    ),
    ("rewrite", &["front", "exec", "witness", "answer", "naive"]),
    ("exec", &["front", "witness", "answer", "naive"]),
    ("plan.rs", &["front", "witness", "answer", "naive"]),
    (
        "builtins.rs",
        &["front", "link", "rewrite", "exec", "witness", "answer"],
    ),
];

/// The modules of the crate a line of code names (`crate::exec::...`, or each of
/// `crate::{exec::a, front}`), comments left out.
fn named(line: &str) -> Vec<&str> {
    let code = line.split("//").next().unwrap_or("");
    let word = |s: &str| -> usize {
        s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len())
    };
    let mut out = Vec::new();
    for (i, m) in code.match_indices("crate::") {
        let rest = &code[i + m.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for part in group.split(',') {
                let part = part.trim();
                out.push(&part[..word(part)]);
            }
        } else {
            out.push(&rest[..word(rest)]);
        }
    }
    out.retain(|m| !m.is_empty());
    out
}

#[test]
fn issue_29_no_stage_reaches_a_later_one() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut broken = Vec::new();
    let mut read = 0;
    for (stage, forbidden) in FORBIDDEN {
        let mut found = Vec::new();
        files(&src.join(stage), &mut found);
        assert!(!found.is_empty(), "no source at src/{stage}");
        for f in found {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            read += 1;
            for (n, line) in text.lines().enumerate() {
                for m in named(line) {
                    if forbidden.contains(&m) {
                        broken.push(format!(
                            "{}:{}: {stage} names crate::{m}",
                            f.strip_prefix(&src).unwrap_or(&f).display(),
                            n + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(read > 20, "read only {read} files");
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}

#[test]
fn the_reader_sees_imports_and_skips_comments() {
    assert_eq!(named("use crate::front::ast::{A, B};"), vec!["front"]);
    assert_eq!(
        named("let x = crate::exec::f(); // crate::answer"),
        vec!["exec"]
    );
    assert_eq!(named("//! see [`crate::exec`]"), Vec::<&str>::new());
    assert_eq!(named("use crate::{exec::a, front};"), vec!["exec", "front"]);
}
