//! Golden tests: every way a SCIP index can be malformed gives its message
//! (`FILE: document N (path): what is wrong`), and nothing of the batch is stored.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "scip/support.rs"]
mod support;

use support::*;

/// A valid first document, so errors in the second say `document 2`.
fn good_start() -> Vec<u8> {
    let mut out = metadata("file:///src/repo");
    out.extend(documents_field(&document(
        "src/a.ts",
        &[occurrence(0, "t npm p 1 a/f().", 1)],
    )));
    out
}

/// Reads `bytes` in a batch and answers the error's message; checks nothing was stored.
fn error_of(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let err = ingest(&store, bytes, None, false).expect_err("malformed index accepted");
    for rel in ["document", "defines", "definition_at", "symbol"] {
        assert_eq!(rows(&store, rel), Vec::<Vec<String>>::new(), "{rel} stored");
    }
    assert_eq!(store.snapshot().unwrap().seq(), 0, "a batch was committed");
    err.to_string()
}

fn with_start(tail: &[u8]) -> Vec<u8> {
    let mut bytes = good_start();
    bytes.extend_from_slice(tail);
    bytes
}

#[test]
fn truncated_varint_in_a_documents_length() {
    // Tag of field 2 (documents), then a length whose varint never ends.
    assert_eq!(
        error_of(&with_start(&[0x12, 0x85])),
        "idx.scip: document 2 (no path): truncated: the input ends inside a varint at byte 60"
    );
}

#[test]
fn truncated_varint_in_a_tag() {
    let bytes = with_start(&[0x92]);
    assert_eq!(
        error_of(&bytes),
        "idx.scip: byte 59: truncated: the input ends inside a varint at byte 59"
    );
}

#[test]
fn varint_longer_than_ten_bytes() {
    let mut tail = vec![0x12];
    tail.extend([0xff; 11]);
    assert_eq!(
        error_of(&with_start(&tail)),
        "idx.scip: document 2 (no path): malformed varint at byte 60: longer than ten bytes"
    );
}

#[test]
fn truncated_length_delimited_document() {
    let doc = document("src/b.ts", &[occurrence(3, "t npm p 1 b/g().", 1)]);
    let mut tail = documents_field(&doc);
    tail.truncate(tail.len() - 7);
    assert_eq!(
        error_of(&with_start(&tail)),
        format!(
            "idx.scip: document 2 (src/b.ts): truncated: field 2 declares {} bytes but only {} \
             follow",
            doc.len(),
            doc.len() - 7
        )
    );
}

#[test]
fn truncated_message_inside_a_document() {
    // The occurrence inside declares more bytes than the document holds.
    let mut doc = len_field(1, b"src/c.ts");
    doc.extend([0x12, 0x40, 0x0a]);
    assert_eq!(
        error_of(&with_start(&documents_field(&doc))),
        "idx.scip: document 2 (src/c.ts): truncated: field 2 declares 64 bytes but only 1 follow"
    );
}

#[test]
fn truncated_message_nested_deeper() {
    // The occurrence's range declares more bytes than the occurrence holds.
    let mut doc = len_field(1, b"src/c.ts");
    doc.extend(len_field(2, &[0x0a, 0x09, 0x01]));
    assert_eq!(
        error_of(&with_start(&documents_field(&doc))),
        "idx.scip: document 2 (src/c.ts): not a valid SCIP Document: truncated: a nested \
         message declares more bytes than the message holding it"
    );
}

#[test]
fn wrong_wire_type_for_documents() {
    assert_eq!(
        error_of(&with_start(&varint_field(2, 7))),
        "idx.scip: document 2 (no path): field 2 has wire type 0, expected 2 \
         (Index.documents, a message)"
    );
}

#[test]
fn wrong_wire_type_inside_a_document() {
    // relative_path (field 1) as a varint.
    let mut doc = varint_field(1, 3);
    doc.extend(len_field(4, b"TypeScript"));
    assert_eq!(
        error_of(&with_start(&documents_field(&doc))),
        "idx.scip: document 2 (no path): field 1 has wire type 0, expected 2 \
         (Document.relative_path, a string)"
    );
}

/// Ingests `bytes` (which must be accepted) and answers the batch's document summary, as
/// the CLI prints it after `documents`.
fn accepted(bytes: &[u8]) -> (tempfile::TempDir, strata_store::Store, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let summary = ingest(&store, bytes, None, false).expect("index refused");
    let docs = summary
        .documents
        .expect("a SCIP batch summarises its documents");
    (dir, store, docs.to_string())
}

// Issue 32: scip-typescript writes lone UTF-16 surrogates into doc comments; one bad
// string must not refuse a whole index.
#[test]
fn invalid_utf8_in_a_symbol_is_repaired() {
    let mut occ = len_field(1, &[1, 0, 4]);
    occ.extend(len_field(2, b"t npm p 1 \xff/"));
    let doc = document("src/d.ts", &[occ]);
    let (_dir, store, summary) = accepted(&with_start(&documents_field(&doc)));
    assert!(summary.contains("1 string repaired"), "{summary}");
    let docs = rows(&store, "document");
    assert_eq!(docs.len(), 2, "{docs:?}");
    let symbols: Vec<String> = rows(&store, "references")
        .into_iter()
        .map(|r| r[1].clone())
        .collect();
    assert!(
        symbols.iter().any(|s| s == "t npm p 1 \u{fffd}/"),
        "repaired symbol not stored: {symbols:?}"
    );
}

#[test]
fn invalid_utf8_in_a_path_is_repaired() {
    let doc = len_field(1, b"src/\xfe.ts");
    let (_dir, store, summary) = accepted(&with_start(&documents_field(&doc)));
    assert!(summary.contains("1 string repaired"), "{summary}");
    let paths: Vec<String> = rows(&store, "document")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert!(
        paths.iter().any(|p| p.contains("src/\u{fffd}.ts")),
        "repaired path not stored: {paths:?}"
    );
}

#[test]
fn document_missing_its_path_is_skipped() {
    let doc = len_field(4, b"TypeScript");
    let (_dir, store, summary) = accepted(&with_start(&documents_field(&doc)));
    assert!(
        summary.contains("skipped document 2 (\"\"): "),
        "skip not named: {summary}"
    );
    // The first document is stored all the same.
    assert_eq!(rows(&store, "document").len(), 1);
}

#[test]
fn document_leaving_the_repository_is_skipped() {
    let doc = document("../etc/passwd", &[occurrence(1, "t npm p 1 x/y().", 1)]);
    let (_dir, store, summary) = accepted(&with_start(&documents_field(&doc)));
    assert!(
        summary.contains("skipped document 2 (\"../etc/passwd\")"),
        "{summary}"
    );
    let paths: Vec<String> = rows(&store, "document")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert!(paths.iter().all(|p| !p.contains("..")), "{paths:?}");
}

#[test]
fn invalid_tag() {
    // Field number 0.
    assert_eq!(
        error_of(&with_start(&[0x02, 0x00])),
        "idx.scip: byte 59: invalid tag 0x2 (field 0, wire type 2)"
    );
    // Wire type 7 does not exist.
    assert_eq!(
        error_of(&with_start(&[0x0f])),
        "idx.scip: byte 59: invalid tag 0xf (field 1, wire type 7)"
    );
}

#[test]
fn malformed_metadata() {
    let mut bytes = len_field(1, &[0x1a, 0x09, b'x']);
    bytes.extend(documents_field(&document("a.ts", &[])));
    assert_eq!(
        error_of(&bytes),
        "idx.scip: metadata: not a valid SCIP Metadata: truncated: a nested message ends \
         before its last field does"
    );
}

#[test]
fn malformed_external_symbol() {
    let tail = len_field(3, &[0x0a, 0x05, b'a']);
    assert_eq!(
        error_of(&with_start(&tail)),
        "idx.scip: external symbol 1: not a valid SCIP SymbolInformation: truncated: a \
         nested message ends before its last field does"
    );
}

#[test]
fn no_repository_to_qualify_paths() {
    let bytes = documents_field(&document("src/a.ts", &[]));
    assert_eq!(
        error_of(&bytes),
        "idx.scip: document 1 (src/a.ts): the index names no repository (its \
         metadata.project_root is empty or comes after the documents); name it with --unit REPO"
    );
}

#[test]
fn unknown_fields_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut bytes = good_start();
    bytes.extend(varint_field(9, 300));
    bytes.extend(len_field(10, b"later versions"));
    bytes.extend([0x5d, 1, 2, 3, 4]); // field 11, fixed32
    bytes.extend([0x61, 1, 2, 3, 4, 5, 6, 7, 8]); // field 12, fixed64
    ingest(&store, &bytes, None, false).unwrap();
    assert_eq!(
        rows(&store, "document"),
        vec![vec!["repo/src/a.ts".to_owned(), "TypeScript".to_owned()]]
    );
    // A skipped field cut short is still an error.
    assert_eq!(
        error_of(&with_start(&[0x5a, 0x10, b'x'])),
        "idx.scip: byte 59: truncated: field 11 declares 16 bytes but only 1 follow"
    );
}
