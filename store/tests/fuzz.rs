//! The stable run of the store's fuzz targets (`strata_store::fuzz`): random bytes and
//! random edits of valid dumps, SCIP indexes, column blocks, postings and chunks, each read
//! or decoded to an answer or an error, never a panic. `STRATA_FUZZ_CASES=N` runs N cases a
//! test instead of CI's few hundred; the cargo-fuzz targets of `fixtures/fuzz` run the same
//! functions on nightly (see `docs/testing.md`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use protobuf::{Message, MessageField};
use scip::types::{Document, Index, Metadata, Occurrence, SymbolInformation};
use strata_fixtures::example::{IMPORTS_EDGES, PACKAGES_NODES, PKG_FACTS};
use strata_fixtures::mutate::{self, Edit};
use strata_store::dump::Format;
use strata_store::fuzz;

/// Valid dumps, each with the first byte [`fuzz::dump`] picks its format by.
fn dump_seeds() -> Vec<Vec<u8>> {
    let with = |format: Format, text: &str| {
        let pick = fuzz::DUMP_FORMATS
            .iter()
            .position(|f| *f == format)
            .unwrap() as u8;
        let mut v = vec![pick];
        v.extend_from_slice(text.as_bytes());
        v
    };
    vec![
        with(Format::Edges, IMPORTS_EDGES),
        with(Format::Nodes, PACKAGES_NODES),
        with(Format::Facts, PKG_FACTS),
        with(
            Format::Attrs,
            "# attrs\napp\tname\tThe app\tunit-a\napi\tLINES\t12\nlog\tscore\t-1.5e3\n",
        ),
        with(
            Format::Jsonl,
            "{\"src\":\"app\",\"kind\":\"IMPORTS\",\"dst\":\"api\"}\n\
             {\"node\":\"api\",\"key\":\"lines\",\"value\":12,\"unit\":\"u\"}\n\
             {\"id\":\"log\",\"label\":\"Package\"}\n{\"node\":\"x\",\"key\":\"k\",\"value\":null}\n",
        ),
    ]
}

/// Bytes the dump formats give meaning to.
const DUMP_TOKENS: &[&[u8]] = &[
    b"\t",
    b"\n",
    b"\r",
    b"\\",
    b"\\N",
    b"\\t",
    b"\"",
    b"{",
    b"}",
    b":",
    b",",
    b"[",
    b"#",
    b"# columns: a, b\n",
    b"# doc: d\n",
    b"\xEF\xBB\xBF",
    b"\xff",
    b"\xc3",
    b"1e999",
    b"-0",
    b"0x10",
    b"null",
    b"true",
    b"not",
    b"\"unit\":",
    b"\"src\":",
    b"[[[[[[[[[[[[[[[[",
];

/// Edits whose inserted bytes are mostly the formats' own.
fn edits(tokens: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<Edit>> {
    let bytes = prop_oneof![
        3 => (0..tokens.len()).prop_map(move |i| tokens[i].to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..8),
    ];
    prop::collection::vec((any::<usize>(), any::<u8>(), bytes), 1..6)
}

/// A small SCIP index of one document with a definition, a reference and a symbol.
fn scip_seed() -> Vec<u8> {
    let sym = "scip-typescript npm lib 1.0.0 src/`foo.ts`/Foo#";
    let occ = |roles: i32| Occurrence {
        range: vec![1, 2, 5],
        symbol: sym.to_owned(),
        symbol_roles: roles,
        ..Default::default()
    };
    Index {
        metadata: MessageField::some(Metadata {
            project_root: "file:///repo/lib".to_owned(),
            ..Default::default()
        }),
        documents: vec![Document {
            relative_path: "src/foo.ts".to_owned(),
            language: "typescript".to_owned(),
            occurrences: vec![occ(1), occ(0)],
            symbols: vec![SymbolInformation {
                symbol: sym.to_owned(),
                documentation: vec!["A foo.".to_owned()],
                ..Default::default()
            }],
            ..Default::default()
        }],
        external_symbols: vec![SymbolInformation {
            symbol: "scip-typescript npm dep 2.0.0 `index.d.ts`/helper().".to_owned(),
            ..Default::default()
        }],
        ..Default::default()
    }
    .write_to_bytes()
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(strata_fixtures::mutate::cases(1000)))]

    #[test]
    fn dump_random_bytes(data in prop::collection::vec(any::<u8>(), 0..512)) {
        fuzz::dump(&data);
    }

    #[test]
    fn dump_mutated(seed in 0usize..5, e in edits(DUMP_TOKENS)) {
        fuzz::dump(&mutate::apply(&dump_seeds()[seed], &e));
    }

    #[test]
    fn scip_random_bytes(data in prop::collection::vec(any::<u8>(), 0..512)) {
        fuzz::scip(&data);
    }

    #[test]
    fn scip_mutated(e in prop::collection::vec((any::<usize>(), any::<u8>(), prop::collection::vec(any::<u8>(), 0..6)), 1..5)) {
        fuzz::scip(&mutate::apply(&scip_seed(), &e));
    }

    #[test]
    fn blocks_random_bytes(data in prop::collection::vec(any::<u8>(), 0..512)) {
        fuzz::blocks(&data);
    }

    #[test]
    fn blocks_mutated(seed in 0usize..13, e in prop::collection::vec((any::<usize>(), any::<u8>(), prop::collection::vec(any::<u8>(), 0..6)), 1..4)) {
        fuzz::blocks(&mutate::apply(&fuzz::block_seeds()[seed], &e));
    }
}

#[test]
fn the_seeds_read() {
    for seed in dump_seeds() {
        let format = fuzz::DUMP_FORMATS[usize::from(seed[0])];
        let n = fuzz::read_dump(format, &seed[1..], false)
            .unwrap_or_else(|e| panic!("{format:?}: {e}"));
        assert!(n >= 3, "{format:?}: {n} facts");
    }
    let n = fuzz::read_dump(Format::Scip, &scip_seed(), false).unwrap();
    assert!(n > 0);
    // The block seeds' decoding: `store/src/fuzz.rs`'s unit tests.
    assert_eq!(fuzz::block_seeds().len(), 13);
}
