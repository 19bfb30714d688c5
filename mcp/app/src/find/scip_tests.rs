//! `find` over a small SCIP-like database: symbols named by qualified name rank above the
//! doc comments that merely contain their words, and say their kind and definition.

#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::path::Path;

use crate::ingest::{DumpFiles, dump_specs, ingest};
use crate::pack::Pack;
use crate::render::Render;
use crate::{App, Call, FindRequest, Options};
use strata_store::{BatchOptions, OpenOptions, Store};

const SAVE: &str = "scip-python python django 5.1 `django.db.models.base`/Model#save().";
const MODEL: &str = "scip-python python django 5.1 `django.db.models.base`/Model#";
const FIELD_SAVE: &str = "scip-python python django 5.1 `django.db.models.fields`/Field#save().";
const FORM_SAVE: &str = "scip-python python django 5.1 `django.forms.models`/ModelForm#save().";

/// A database of four symbols, their definitions and owners, and doc comments (more than
/// one answer holds) that all contain `Model.save`, `Model#save` or `Model save`.
fn app(dir: &Path) -> App {
    let symbols = [
        (SAVE, "Method", "save", "django/db/models/base.py", 909),
        (MODEL, "Class", "Model", "django/db/models/base.py", 459),
        (
            FIELD_SAVE,
            "Method",
            "save",
            "django/db/models/fields.py",
            77,
        ),
        (FORM_SAVE, "Method", "save", "django/forms/models.py", 520),
    ];
    let mut sym = String::from("# columns: symbol, kind, display_name\n");
    let mut def = String::from("# columns: symbol, path, line\n");
    let mut member = String::from("# columns: symbol, owner\n");
    let mut doc = String::from("# columns: symbol, text\n");
    for (s, kind, name, path, line) in symbols {
        writeln!(sym, "{s}\t{kind}\t{name}").unwrap();
        writeln!(def, "{s}\t{path}\t{line}").unwrap();
    }
    writeln!(member, "{SAVE}\t{MODEL}").unwrap();
    for i in 0..12 {
        writeln!(
            doc,
            "{FORM_SAVE}\tCalls Model.save() and Model#save, then Model save step {i}."
        )
        .unwrap();
    }
    writeln!(doc, "{SAVE}\tSaves the current instance.").unwrap();
    let mut files = Vec::new();
    for (name, text) in [
        ("symbol", sym),
        ("definition_at", def),
        ("member_of", member),
        ("documentation", doc),
    ] {
        let path = dir.join(format!("{name}.facts"));
        std::fs::write(&path, text).unwrap();
        files.push(path);
    }
    let specs = dump_specs(&DumpFiles {
        files,
        ..DumpFiles::default()
    })
    .unwrap();
    ingest(dir, &specs, BatchOptions::default(), |_, _| {}, || {}).unwrap();
    let store = Store::open(dir, OpenOptions::default()).unwrap();
    App::new(store, Pack::load(dir).unwrap(), Options::default()).unwrap()
}

fn values(app: &App, name: &str) -> Vec<String> {
    let out = app
        .find(
            &Call::plain("find"),
            &FindRequest {
                name: name.to_owned(),
                limit: 0,
            },
        )
        .unwrap();
    out.matches.into_iter().map(|m| m.value).collect()
}

#[test]
fn every_form_of_a_qualified_name_ranks_the_symbol_first() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    for q in [
        "Model.save",
        "Model#save",
        "Model.save()",
        "Model save",
        "django.db.models.base.Model.save",
    ] {
        let got = values(&app, q);
        assert_eq!(got.first().map(String::as_str), Some(SAVE), "{q}: {got:?}");
        // Every other symbol named by the query comes before any doc comment.
        let docs = got.iter().position(|v| v.starts_with("Calls "));
        let symbols = got.iter().rposition(|v| v.starts_with("scip-python "));
        if let (Some(d), Some(s)) = (docs, symbols) {
            assert!(s < d, "{q}: {got:?}");
        }
    }
    // `save` alone names every method called so: all of them before the doc comments.
    let got = values(&app, "save");
    let mut first: Vec<&str> = got[..3].iter().map(String::as_str).collect();
    first.sort_unstable();
    let mut want = vec![SAVE, FIELD_SAVE, FORM_SAVE];
    want.sort_unstable();
    assert_eq!(first, want, "{got:?}");
    // Only the owner and name given: the other owners' `save` are not named.
    let got = values(&app, "Model.save");
    assert!(!got[..2].contains(&FIELD_SAVE.to_owned()), "{got:?}");
    assert_eq!(values(&app, "Model")[0], MODEL);
}

#[test]
fn a_symbol_says_its_kind_and_where_it_is_defined() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let out = app
        .find(
            &Call::plain("find"),
            &FindRequest {
                name: "Model.save".to_owned(),
                limit: 3,
            },
        )
        .unwrap();
    let first = &out.matches[0];
    assert_eq!(first.kind, "qualified name");
    assert_eq!(
        first.symbol.as_deref(),
        Some("Method, django/db/models/base.py:909")
    );
    let j = out.json();
    assert_eq!(
        j["matches"][0]["symbol"],
        "Method, django/db/models/base.py:909"
    );
    let text = out.text();
    assert!(
        text.contains("qualified name\n   Method, django/db/models/base.py:909; "),
        "{text}"
    );
    // A doc comment is no symbol: no kind, no place.
    let doc = out.matches.iter().find(|m| m.value.starts_with("Calls "));
    assert!(doc.is_none_or(|m| m.symbol.is_none()));
}
