//! Property tests: the parser never panics, every error points inside the input, and whatever
//! parses prints back to text that parses to the same tree. Each input also goes through the
//! Datalog fuzz target (`strata_eval::fuzz::datalog`: parse, then check as a query and as a
//! module); `STRATA_FUZZ_CASES=N` runs N cases a test (see `docs/testing.md`).

mod common;

use common::{strip_module, strip_program};
use proptest::prelude::*;
use strata_eval::{Diagnostic, parse_module, parse_program};

/// Valid programs and modules, to mutate.
const SEEDS: &[&str] = &[
    r#"deps.depends_on("app", ?d) => ?d"#,
    r#"imports("api", ?d) => ?d"#,
    r#"pkg(?p, _), pkg(?to, _), imports(?p, ?to) => ?p"#,
    "# Everything a package depends on, directly or through others.
depends_on(?a, ?b) :- _step(?a, ?b);
depends_on(?a, ?c) :- depends_on(?a, ?b), _step(?b, ?c);

# One import step.
_step(?a, ?b) :- imports(?a, ?b);
",
    r#"fan(?p, count(distinct ?d)) :- imports(?p, ?d), not skip(?d), ?d != "x";
fan(?p, ?n), ?n >= 2, ?m = max(?n) : { fan(_, ?n) } => ?p, sum(?n), list(?p)
  having count(?p) > 1.5e3 order by ?p desc, sum(?n) limit 10 offset 2"#,
    "r(\"esc \\\" \\\\ é\", -12, 3.5, 1e6, absent), absent(?x), str.contains(?x, \"a\") # c\n",
];

/// Checks what `parse_program` and `parse_module` make of `input`.
fn check(input: &str) -> Result<(), TestCaseError> {
    strata_eval::fuzz::datalog(input.as_bytes());
    match parse_program(input) {
        Ok(p) => {
            let printed = p.to_string();
            let q = parse_program(&printed);
            prop_assert!(
                q.is_ok(),
                "{printed:?} (printed from {input:?}) does not parse"
            );
            if let Ok(q) = q {
                prop_assert_eq!(
                    strip_program(&p),
                    strip_program(&q),
                    "printed: {:?}",
                    printed
                );
            }
        }
        Err(d) => check_diagnostic(input, &d)?,
    }
    match parse_module(input) {
        Ok(m) => {
            let printed = m.to_string();
            let n = parse_module(&printed);
            prop_assert!(
                n.is_ok(),
                "{printed:?} (printed from {input:?}) does not parse"
            );
            if let Ok(n) = n {
                prop_assert_eq!(strip_module(&m), strip_module(&n), "printed: {:?}", printed);
            }
        }
        Err(d) => check_diagnostic(input, &d)?,
    }
    Ok(())
}

fn check_diagnostic(input: &str, d: &Diagnostic) -> Result<(), TestCaseError> {
    prop_assert!(d.span.start <= d.span.end, "{d:?}");
    prop_assert!(d.span.end <= input.len(), "{d:?} for {input:?}");
    prop_assert!(input.is_char_boundary(d.span.start), "{d:?} for {input:?}");
    prop_assert!(input.is_char_boundary(d.span.end), "{d:?} for {input:?}");
    prop_assert!(!d.message.is_empty());
    prop_assert!(!d.message.contains(['\n', '\r']), "{d:?}");
    prop_assert!(
        !d.fix.as_deref().unwrap_or("").contains(['\n', '\r']),
        "{d:?}"
    );
    let text = d.render("query", input);
    prop_assert!(text.starts_with("query: "));
    let (line, _) = d.span.line_col(input);
    let expected = format!("\nline {line}, column ");
    prop_assert!(text.contains(&expected), "{}", text);
    Ok(())
}

/// Text made mostly of the language's own characters.
fn soup() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("?x".to_owned()),
        Just("?".to_owned()),
        Just("_".to_owned()),
        Just("\"s\"".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("a".to_owned()),
        Just("deps.r".to_owned()),
        Just("not ".to_owned()),
        Just("count".to_owned()),
        Just("distinct ".to_owned()),
        Just("absent".to_owned()),
        Just(" having ".to_owned()),
        Just(" order by ".to_owned()),
        Just(" limit ".to_owned()),
        Just(" offset ".to_owned()),
        Just(" desc".to_owned()),
        Just("(".to_owned()),
        Just(")".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just(",".to_owned()),
        Just(";".to_owned()),
        Just(":".to_owned()),
        Just(":-".to_owned()),
        Just("=>".to_owned()),
        Just("?-".to_owned()),
        Just(".".to_owned()),
        Just("-".to_owned()),
        Just("<".to_owned()),
        Just("=".to_owned()),
        Just("!=".to_owned()),
        Just(">=".to_owned()),
        Just("#c\n".to_owned()),
        Just("\n".to_owned()),
        Just(" ".to_owned()),
        Just("\t".to_owned()),
        Just("é".to_owned()),
        Just("'".to_owned()),
        "-?[0-9]{1,3}(\\.[0-9]{1,2})?([eE][-+]?[0-9]{1,3})?",
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(pieces, 0..24).prop_map(|v| v.concat())
}

/// A random edit of `seed`, at character boundaries.
fn mutate(seed: &str, edits: &[(usize, u8, String)]) -> String {
    let mut s = seed.to_owned();
    for (at, op, text) in edits {
        let bounds: Vec<usize> = s
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(s.len()))
            .collect();
        let i = bounds[at % bounds.len()];
        let j = bounds[(at % bounds.len() + 1 + usize::from(*op % 4)).min(bounds.len() - 1)];
        match op % 4 {
            0 => s.insert_str(i, text),
            1 => s.replace_range(i..j, ""),
            2 => s.replace_range(i..j, text),
            _ => s.truncate(i),
        }
    }
    s
}

/// The text of a valid program (when `goal`) or module, built from the grammar.
fn program_text(goal: bool) -> impl Strategy<Value = String> {
    let var = "\\?[a-zA-Z_][a-zA-Z0-9_]{0,3}";
    let text = prop::collection::vec(
        prop_oneof![
            Just('"'),
            Just('\\'),
            Just('#'),
            Just('\n'),
            Just('é'),
            any::<char>(),
            prop::char::range('a', 'z')
        ],
        0..6,
    )
    .prop_map(|cs| {
        let mut out = String::from("\"");
        for c in cs {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
        out
    });
    let number = prop_oneof![
        any::<i32>().prop_map(|n| n.to_string()),
        (-1e9..1e9f64).prop_map(|n| format!("{n}")),
        any::<f64>()
            .prop_filter("finite", |n| n.is_finite())
            .prop_map(|n| format!("{n:e}")),
    ];
    let term = prop_oneof![
        var.prop_map(|s| s.to_owned()),
        Just("_".to_owned()),
        Just("absent".to_owned()),
        text,
        number,
    ];
    let name = "[a-z_][a-z0-9_-]{0,4}(\\.[a-z_][a-z0-9_]{0,3}){0,2}"
        .prop_filter("not a keyword or a wildcard", |n| n != "not" && n != "_");
    let atom = (name.clone(), prop::collection::vec(term.clone(), 0..4))
        .prop_map(|(n, args)| format!("{n}({})", args.join(", ")));
    let func = prop_oneof![
        Just("count"),
        Just("sum"),
        Just("min"),
        Just("max"),
        Just("list")
    ];
    let aggregate = (func, any::<bool>(), var)
        .prop_map(|(f, d, v)| format!("{f}({}{v})", if d { "distinct " } else { "" }));
    let op = prop_oneof![
        Just("<"),
        Just("<="),
        Just("="),
        Just("!="),
        Just(">"),
        Just(">=")
    ];
    let simple = prop_oneof![
        3 => atom.clone(),
        1 => atom.clone().prop_map(|a| format!("not {a}")),
        1 => (term.clone(), op.clone(), term.clone()).prop_map(|(l, o, r)| format!("{l} {o} {r}")),
    ];
    let agg = aggregate.clone();
    let literal = simple.prop_recursive(3, 12, 3, move |inner| {
        (var, agg.clone(), prop::collection::vec(inner, 1..3))
            .prop_map(|(v, a, body)| format!("{v} = {a} : {{ {} }}", body.join(", ")))
    });
    let literals = prop::collection::vec(literal, 1..4).prop_map(|l| l.join(", "));
    let head_arg = prop_oneof![3 => term.clone(), 1 => aggregate.clone()];
    let doc = prop::option::of("[a-z #\"]{0,8}").prop_map(|d| match d {
        Some(d) => format!("# {d}\n"),
        None => String::new(),
    });
    // A module's heads are bare names.
    let head_name = if goal {
        name.clone().boxed()
    } else {
        "[a-z_][a-z0-9_-]{0,4}"
            .prop_filter("not a keyword or a wildcard", |n| n != "not" && n != "_")
            .boxed()
    };
    let rule = (
        doc,
        head_name,
        prop::collection::vec(head_arg, 0..3),
        literals.clone(),
    )
        .prop_map(|(doc, n, args, body)| format!("{doc}{n}({}) :- {body};", args.join(", ")));
    let column = prop_oneof![var.prop_map(|s| s.to_owned()), aggregate.clone()];
    let columns = prop::option::of(prop::collection::vec(column.clone(), 1..3));
    let having = prop::collection::vec((aggregate, op, term), 0..2);
    let order = prop::collection::vec((column, any::<bool>()), 0..2);
    let counts = (
        prop::option::of(any::<u32>()),
        prop::option::of(any::<u32>()),
    );
    let goal_text = (literals, columns, having, order, counts).prop_map(
        |(body, columns, having, order, (limit, offset))| {
            let mut g = body;
            if let Some(c) = columns {
                g.push_str(&format!(" => {}", c.join(", ")));
            }
            if !having.is_empty() {
                let h: Vec<String> = having
                    .into_iter()
                    .map(|(a, o, t)| format!("{a} {o} {t}"))
                    .collect();
                g.push_str(&format!(" having {}", h.join(", ")));
            }
            if !order.is_empty() {
                let k: Vec<String> = order
                    .into_iter()
                    .map(|(c, d)| format!("{c}{}", if d { " desc" } else { " asc" }))
                    .collect();
                g.push_str(&format!(" order by {}", k.join(", ")));
            }
            if let Some(l) = limit {
                g.push_str(&format!(" limit {l}"));
            }
            if let Some(o) = offset {
                g.push_str(&format!(" offset {o}"));
            }
            g
        },
    );
    let rules = prop::collection::vec(rule, 0..3);
    if goal {
        (rules, goal_text)
            .prop_map(|(r, g)| format!("{}\n{g}", r.join("\n")))
            .boxed()
    } else {
        rules.prop_map(|r| r.join("\n")).boxed()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(strata_fixtures::mutate::cases(2000)))]

    #[test]
    fn any_string(input in any::<String>()) {
        check(&input)?;
    }

    #[test]
    fn any_bytes(input in prop::collection::vec(any::<u8>(), 0..256)) {
        strata_eval::fuzz::datalog(&input);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(strata_fixtures::mutate::cases(500)))]

    #[test]
    fn language_soup(input in soup()) {
        check(&input)?;
    }

    #[test]
    fn mutated_seeds(
        seed in 0..SEEDS.len(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), soup()), 1..3),
    ) {
        check(&mutate(SEEDS[seed], &edits))?;
    }

    #[test]
    fn generated_programs_parse_and_round_trip(source in program_text(true)) {
        let parsed = parse_program(&source);
        prop_assert!(parsed.is_ok(), "{}", parsed.err().map(|d| d.render("query", &source)).unwrap_or_default());
        check(&source)?;
    }

    #[test]
    fn generated_modules_parse_and_round_trip(source in program_text(false)) {
        let parsed = parse_module(&source);
        prop_assert!(parsed.is_ok(), "{}", parsed.err().map(|d| d.render("module", &source)).unwrap_or_default());
        check(&source)?;
    }
}

#[test]
fn seeds_are_valid() {
    for (i, seed) in SEEDS.iter().enumerate() {
        if i == 3 {
            parse_module(seed).unwrap();
        } else {
            parse_program(seed).unwrap_or_else(|d| panic!("{}", d.render("query", seed)));
        }
    }
}

#[test]
fn deep_inputs_do_not_overflow() {
    // Each input is refused (the program comment-only one aside, which is an empty module),
    // with a short message that says what is wrong: no stack overflow, no error that grows
    // with the input.
    let cases: [(String, &str, Option<&str>); 8] = [
        (
            "(".repeat(100_000),
            "can't start with \"(\"",
            Some("expected a rule's head"),
        ),
        (
            "a(".repeat(100_000),
            "an atom can't be a term",
            Some("an atom can't be a term"),
        ),
        (
            "{".repeat(100_000),
            "expected a literal",
            Some("expected a rule's head"),
        ),
        (
            "?n = count(?x) : { ".repeat(10_000),
            "nest more than 32 deep",
            Some("expected a rule's head"),
        ),
        (
            "not ".repeat(100_000),
            "\"not\" takes an atom",
            Some("expected a rule's head"),
        ),
        (
            "a(?x), ".repeat(100_000),
            "with no literal after it",
            Some("never a goal"),
        ),
        (
            "\"".repeat(100_001),
            "expected a comparison operator",
            Some("expected a rule's head"),
        ),
        ("#".repeat(100_000), "the query is empty", None),
    ];
    for (input, program_error, module_error) in cases {
        let head = &input[..10];
        let err = parse_program(&input).expect_err(head).to_string();
        assert!(err.contains(program_error), "{head}...: {err}");
        assert!(
            err.len() < 200,
            "{head}...: an error of {} bytes",
            err.len()
        );
        match (parse_module(&input), module_error) {
            (Err(e), Some(want)) => {
                let e = e.to_string();
                assert!(e.contains(want), "{head}... as a module: {e}");
                assert!(
                    e.len() < 200,
                    "{head}... as a module: an error of {} bytes",
                    e.len()
                );
            }
            (Ok(m), None) => assert!(m.rules.is_empty(), "{head}... as a module: {m:?}"),
            (got, want) => panic!("{head}... as a module: {got:?}, expected {want:?}"),
        }
    }
}
