//! The tests of `ask`: programs out of replies, the names a question grounds, options from
//! flags.

#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn programs_come_out_of_fences() {
    assert_eq!(
        extract_program("Here:\n```datalog\nimports(\"api\", ?d) => ?d\n```\nDone."),
        r#"imports("api", ?d) => ?d"#
    );
    assert_eq!(extract_program("  p(?x) => ?x \n"), "p(?x) => ?x");
    assert_eq!(extract_program("```\np(?x)\n```"), "p(?x)");
    assert_eq!(extract_program("?- p(?x)"), "p(?x)");
}

#[test]
fn names_are_quoted_phrases_then_uncommon_words() {
    assert_eq!(question_names("what does api import?"), ["api", "import"]);
    assert_eq!(
        question_names("who calls \"parse args\" in sym:src/cli.rs#main?"),
        ["parse args", "calls", "sym:src/cli.rs#main"]
    );
    assert_eq!(question_names("what is api's license?"), ["api", "license"]);
    assert!(question_names("what is it?").is_empty());
}

/// Flags from `--name value` pairs, with `tries`.
fn flags(pairs: &[(&str, &str)], tries: u32) -> ModelFlags {
    let mut f = ModelFlags {
        tries,
        ..ModelFlags::default()
    };
    for (k, v) in pairs {
        let slot = match *k {
            "model-url" => &mut f.model_url,
            "model-name" => &mut f.model_name,
            "fallback-url" => &mut f.fallback_url,
            "fallback-name" => &mut f.fallback_name,
            "fallback-kind" => &mut f.fallback_kind,
            other => panic!("no flag {other}"),
        };
        *slot = Some((*v).to_owned());
    }
    f
}

#[test]
fn flags_make_options() {
    let local = [
        ("model-url", "http://127.0.0.1:8080/v1"),
        ("model-name", "q"),
    ];
    let o = AskOptions::from_flags(&flags(&local, 2)).unwrap();
    assert!(o.offered() && o.fallback.is_none());
    assert_eq!(o.tries, 2);
    let o = AskOptions::from_flags(&flags(&[("fallback-name", "claude")], 1)).unwrap();
    assert_eq!(
        o.fallback.unwrap().endpoint(),
        "https://api.anthropic.com/v1/messages"
    );
    for (given, tries, missing) in [
        (&[("model-url", "http://h")][..], 1, "--model-name"),
        (&[("fallback-url", "http://h")][..], 1, "--fallback-name"),
        (
            &[("fallback-name", "m"), ("fallback-kind", "openai")][..],
            1,
            "--fallback-url",
        ),
        (&local[..], 0, "--tries"),
    ] {
        let e = AskOptions::from_flags(&flags(given, tries))
            .unwrap_err()
            .to_string();
        assert!(e.contains(missing), "{given:?}: {e}");
    }
    assert!(!AskOptions::default().offered());
}
