//! The relations a SCIP index is read into, on small indexes built with the `scip` crate:
//! each relation's rows exactly, local symbols left out, `uses` from the innermost enclosing
//! definition, and documents of two repositories kept apart (also by `--replace`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "scip/support.rs"]
mod support;

use protobuf::{EnumOrUnknown, Message, MessageField};
use scip::types::{
    Document, Index, Metadata, Occurrence, Relationship, SymbolInformation, symbol_information,
};
use support::*;

const FOO: &str = "scip-typescript npm lib 1.0.0 src/`foo.ts`/Foo#";
const BAR: &str = "scip-typescript npm lib 1.0.0 src/`foo.ts`/Foo#bar().";
const BAZ: &str = "scip-typescript npm lib 1.0.0 src/`foo.ts`/baz().";
const IFACE: &str = "scip-typescript npm lib 1.0.0 src/`api.ts`/Api#";
const EXT: &str = "scip-typescript npm dep 2.0.0 `index.d.ts`/helper().";

fn occ(range: &[i32], symbol: &str, roles: i32, enclosing: &[i32]) -> Occurrence {
    Occurrence {
        range: range.to_vec(),
        symbol: symbol.to_owned(),
        symbol_roles: roles,
        enclosing_range: enclosing.to_vec(),
        ..Default::default()
    }
}

fn info(symbol: &str, kind: symbol_information::Kind, docs: &[&str]) -> SymbolInformation {
    SymbolInformation {
        symbol: symbol.to_owned(),
        kind: EnumOrUnknown::new(kind),
        documentation: docs.iter().map(|d| (*d).to_owned()).collect(),
        ..Default::default()
    }
}

fn index(root: &str, docs: Vec<Document>, external: Vec<SymbolInformation>) -> Vec<u8> {
    Index {
        metadata: MessageField::some(Metadata {
            project_root: root.to_owned(),
            ..Default::default()
        }),
        documents: docs,
        external_symbols: external,
        ..Default::default()
    }
    .write_to_bytes()
    .unwrap()
}

fn foo_ts() -> Document {
    let mut foo_info = info(
        FOO,
        symbol_information::Kind::Class,
        &["```ts\nclass Foo\n```", "A foo.\n\nDetails."],
    );
    foo_info.relationships.push(Relationship {
        symbol: IFACE.to_owned(),
        is_implementation: true,
        ..Default::default()
    });
    foo_info.display_name = "Foo".to_owned();
    Document {
        relative_path: "src/foo.ts".to_owned(),
        language: "TypeScript".to_owned(),
        occurrences: vec![
            // class Foo implements Api { (lines 0..10)
            occ(&[0, 6, 9], FOO, 1, &[0, 0, 10, 1]),
            occ(&[0, 21, 24], IFACE, 0, &[]),
            //   bar() { helper(); baz(); local } (lines 1..4)
            occ(&[1, 2, 5], BAR, 1, &[1, 2, 4, 3]),
            occ(&[2, 4, 10], EXT, 0, &[]),
            occ(&[3, 4, 7], BAZ, 0, &[]),
            occ(&[3, 10, 11], "local 1", 0, &[]),
            occ(&[3, 10, 11], "local 1", 1, &[]),
            //   a second reference to baz on line 6, inside Foo but not bar
            occ(&[6, 4, 7], BAZ, 0, &[]),
            occ(&[6, 9, 12], BAZ, 0, &[]),
            // function baz() (line 12), no enclosing range
            occ(&[12, 9, 12], BAZ, 1, &[]),
        ],
        symbols: vec![
            foo_info,
            info("local 1", symbol_information::Kind::Variable, &[]),
        ],
        ..Default::default()
    }
}

fn api_ts() -> Document {
    Document {
        relative_path: "src/api.ts".to_owned(),
        language: String::new(),
        occurrences: vec![occ(&[0, 17, 20], IFACE, 1, &[])],
        ..Default::default()
    }
}

fn sorted(mut rows: Vec<Vec<String>>) -> Vec<Vec<String>> {
    rows.sort();
    rows
}

fn r(cols: &[&str]) -> Vec<String> {
    cols.iter().map(|c| (*c).to_owned()).collect()
}

#[test]
fn every_relation_holds_what_the_index_says() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let ext = info(EXT, symbol_information::Kind::UnspecifiedKind, &["Helps."]);
    let bytes = index("file:///home/me/lib/", vec![foo_ts(), api_ts()], vec![ext]);
    ingest(&store, &bytes, None, false).unwrap();

    let (foo, api) = ("lib/src/foo.ts", "lib/src/api.ts");
    assert_eq!(
        rows(&store, "document"),
        sorted(vec![r(&[api, "TypeScript"]), r(&[foo, "TypeScript"])])
    );
    assert_eq!(
        rows(&store, "defines"),
        sorted(vec![
            r(&[api, IFACE]),
            r(&[foo, BAZ]),
            r(&[foo, BAR]),
            r(&[foo, FOO])
        ])
    );
    assert_eq!(
        rows(&store, "references"),
        sorted(vec![r(&[foo, BAZ]), r(&[foo, EXT]), r(&[foo, IFACE])])
    );
    assert_eq!(
        rows(&store, "definition_at"),
        sorted(vec![
            r(&[BAZ, foo, "13"]),
            r(&[BAR, foo, "2"]),
            r(&[FOO, foo, "1"]),
            r(&[IFACE, api, "1"])
        ])
    );
    assert_eq!(
        rows(&store, "reference_at"),
        sorted(vec![
            r(&[foo, BAZ, "4"]),
            r(&[foo, BAZ, "7"]),
            r(&[foo, EXT, "3"]),
            r(&[foo, IFACE, "1"])
        ])
    );
    assert_eq!(
        rows(&store, "symbol"),
        sorted(vec![
            r(&[BAZ, "Method", "baz"]),
            r(&[BAR, "Method", "bar"]),
            r(&[FOO, "Class", "Foo"]),
            r(&[IFACE, "Type", "Api"]),
            r(&[EXT, "Method", "helper"]),
        ])
    );
    assert_eq!(
        rows(&store, "documentation"),
        sorted(vec![r(&[FOO, "A foo."]), r(&[EXT, "Helps."])])
    );
    assert_eq!(rows(&store, "implements"), vec![r(&[FOO, IFACE])]);
    let (foo_ns, api_ns) = (
        "scip-typescript npm lib 1.0.0 src/`foo.ts`/",
        "scip-typescript npm lib 1.0.0 src/`api.ts`/",
    );
    assert_eq!(
        rows(&store, "member_of"),
        sorted(vec![
            r(&[BAR, FOO]),
            r(&[FOO, foo_ns]),
            r(&[BAZ, foo_ns]),
            r(&[IFACE, api_ns]),
            r(&[EXT, "scip-typescript npm dep 2.0.0 `index.d.ts`/"]),
        ])
    );
    assert_eq!(
        rows(&store, "package"),
        sorted(vec![
            r(&[BAZ, "npm", "lib", "1.0.0"]),
            r(&[BAR, "npm", "lib", "1.0.0"]),
            r(&[FOO, "npm", "lib", "1.0.0"]),
            r(&[IFACE, "npm", "lib", "1.0.0"]),
            r(&[EXT, "npm", "dep", "2.0.0"]),
        ])
    );
    // helper and baz on lines 2-3 are inside bar (innermost); baz on line 6 inside Foo;
    // IFACE on line 0 inside Foo's range too.
    assert_eq!(
        rows(&store, "uses"),
        sorted(vec![
            r(&[BAR, BAZ]),
            r(&[BAR, EXT]),
            r(&[FOO, BAZ]),
            r(&[FOO, IFACE])
        ])
    );
    for rel in ["defines", "references", "symbol", "uses"] {
        assert!(
            rows(&store, rel)
                .iter()
                .flatten()
                .all(|v| !v.starts_with("local")),
            "{rel} holds a local symbol"
        );
    }
}

#[test]
fn two_repositories_keep_their_documents_apart() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    // Both have src/foo.ts; one named by its project root, one by --unit.
    let a = index("file:///x/alpha", vec![foo_ts()], vec![]);
    let b = index("file:///x/whatever", vec![foo_ts(), api_ts()], vec![]);
    ingest(&store, &a, None, false).unwrap();
    ingest(&store, &b, Some("beta"), false).unwrap();
    let docs: Vec<String> = rows(&store, "document")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(
        docs,
        ["alpha/src/foo.ts", "beta/src/api.ts", "beta/src/foo.ts"]
    );

    // Replacing beta with an index that no longer references Api leaves alpha's facts.
    let mut changed = foo_ts();
    changed.occurrences.retain(|o| o.symbol != IFACE);
    let b2 = index("file:///x/whatever", vec![changed], vec![]);
    let summary = ingest(&store, &b2, Some("beta"), true).unwrap();
    assert!(summary.removed > 0);
    assert_eq!(
        rows(&store, "references")
            .into_iter()
            .filter(|r| r[1] == IFACE)
            .map(|r| r[0].clone())
            .collect::<Vec<_>>(),
        ["alpha/src/foo.ts"]
    );
    // beta's new index lacks src/api.ts: the replacing read retracted it.
    let docs: Vec<String> = rows(&store, "document")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(docs, ["alpha/src/foo.ts", "beta/src/foo.ts"]);
    // Retracting one document's unit removes what only it said.
    let summary = store
        .retract(&["alpha/src/foo.ts".to_owned()], Default::default())
        .unwrap();
    assert!(summary.unknown_units.is_empty());
    let docs: Vec<String> = rows(&store, "document")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(docs, ["beta/src/foo.ts"]);
    assert!(
        rows(&store, "references")
            .iter()
            .all(|r| r[0] == "beta/src/foo.ts")
    );
}

#[test]
fn gzip_index_reads_as_the_plain_one() {
    use std::io::Write;
    let bytes = index("file:///x/lib", vec![foo_ts(), api_ts()], vec![]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.scip.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&bytes).unwrap();
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    assert_eq!(
        strata_store::dump::Format::from_path(&path),
        Some(strata_store::dump::Format::Scip)
    );
    let store = create(&dir.path().join("db"));
    let mut batch = store.batch(Default::default()).unwrap();
    batch
        .read_file(&path, &spec("index.scip.gz", None))
        .unwrap();
    batch.commit().unwrap();
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = create(plain_dir.path());
    ingest(&plain, &bytes, None, false).unwrap();
    for rel in ["document", "defines", "references", "uses", "symbol"] {
        assert_eq!(rows(&store, rel), rows(&plain, rel), "{rel}");
    }
}

#[test]
fn code_module_checks_against_the_scip_relations() {
    use strata_eval::{RelationInfo, Vocabulary};
    use strata_store::scip::{CODE_MODULE, RELATIONS};
    let base: Vec<RelationInfo> = RELATIONS
        .iter()
        .map(|r| RelationInfo {
            name: r.name.to_owned(),
            columns: r.columns.iter().map(|c| (*c).to_owned()).collect(),
            doc: r.doc.to_owned(),
            tier: "default".to_owned(),
            rows: 0,
            distinct: vec![0; r.columns.len()],
            origin: Default::default(),
            spelled: r.name.to_owned(),
            unindexed: Vec::new(),
        })
        .collect();
    let vocab = Vocabulary::from_sources(base, &[("code", CODE_MODULE)])
        .unwrap_or_else(|e| panic!("code.dl: {e}"));
    let schema = vocab.module_schema("code").unwrap();
    for (relation, columns) in [
        ("depends_on", "a, b"),
        ("dependents", "b, a"),
        ("call_sites", "callee, caller, path, line"),
        ("callers", "callee, caller"),
        ("all_callers", "callee, caller"),
        ("callees", "caller, callee"),
        ("all_callees", "caller, callee"),
        ("other_sites", "symbol, holder, path, line"),
        ("outline", "path, symbol, kind, line, owner"),
        ("unreferenced", "symbol, path, line"),
        ("symbol_impact", "symbol, caller, path, role"),
        ("dir_deps", "a, b"),
        ("dir_depends_on", "a, b"),
        ("dir_cycles", "a, b"),
        ("implementations", "t, s"),
        ("defined_in", "symbol, path"),
        ("impact", "path, p"),
    ] {
        let line = schema
            .lines()
            .find(|l| l.starts_with(&format!("code.{relation}(")))
            .unwrap_or_else(|| panic!("no code.{relation} in\n{schema}"));
        assert!(
            line.starts_with(&format!("code.{relation}({columns}) # ")),
            "code.{relation} lacks its columns or its doc: {line}"
        );
    }
    for private in [
        "_step",
        "_owner_here",
        "_field",
        "_entry_point",
        "_test_file",
        "_role",
    ] {
        assert!(!schema.contains(private), "a private rule is in the schema");
    }
}

#[test]
fn every_relation_exists_even_when_the_index_gives_none_of_its_facts() {
    use strata_eval::{FactSource, Vocabulary};
    use strata_store::scip::{CODE_MODULE, RELATIONS};
    // One document, one definition: no enclosing ranges, relationships or documentation.
    let doc = Document {
        relative_path: "src/a.ts".to_owned(),
        occurrences: vec![occ(&[0, 0, 3], BAZ, 1, &[])],
        ..Default::default()
    };
    let bytes = index("file:///x/lib", vec![doc], vec![]);
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let summary = ingest(&store, &bytes, None, false).unwrap();
    assert_eq!(summary.documents.map(|d| d.read), Some(1));
    let snap = store.snapshot().unwrap();
    let stored: Vec<String> = snap
        .relations()
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    for r in RELATIONS {
        assert!(
            stored.iter().any(|s| s == r.name),
            "{} missing: {stored:?}",
            r.name
        );
    }
    assert!(rows(&store, "uses").is_empty() && rows(&store, "implements").is_empty());
    assert_eq!(rows(&store, "defines").len(), 1);
    // So the bundled module loads over it.
    let modules = tempfile::tempdir().unwrap();
    std::fs::write(modules.path().join("code.dl"), CODE_MODULE).unwrap();
    Vocabulary::load(&snap, Some(modules.path())).unwrap_or_else(|e| panic!("{e}"));
    // And a store check finds nothing wrong with the empty relations.
    drop(snap);
    let report = store.check().unwrap();
    assert!(report.ok(), "{report}");
}
