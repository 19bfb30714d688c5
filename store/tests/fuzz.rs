//! The stable run of the store's fuzz targets (`strata_store::fuzz`): random bytes and
//! random edits of valid dumps, SCIP indexes, column blocks, postings and chunks, each read
//! or decoded to an answer or an error, never a panic. `STRATA_FUZZ_CASES=N` runs N cases a
//! test instead of CI's few hundred; the cargo-fuzz targets of `fixtures/fuzz` run the same
//! functions on nightly (see `docs/testing.md`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use protobuf::{Message, MessageField};
use roaring::RoaringBitmap;
use scip::types::{Document, Index, Metadata, Occurrence, SymbolInformation};
use strata_fixtures::example::{IMPORTS_EDGES, PACKAGES_NODES, PKG_FACTS};
use strata_fixtures::mutate::{self, Edit};
use strata_store::dump::Format;
use strata_store::layout::{Codec, Payload};
use strata_store::{column, fuzz, index, intern};

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

/// Valid encodings, plain (format versions 1 and 2): a column block, raw and bitmap
/// postings, a row bitmap and a chunk; then compact (version 3): blocks of both forms,
/// postings of each form, a chunk and a dictionary chunk.
fn block_seeds() -> Vec<Vec<u8>> {
    let mut small: RoaringBitmap = [1, 5, 9].into_iter().collect();
    let mut large: RoaringBitmap = (0..5000).step_by(3).collect();
    let mut runs: RoaringBitmap = (10..40).chain(90..95).collect();
    let (mut raw, mut rich) = (Vec::new(), Vec::new());
    index::encode_posting(Codec::Plain, &mut small, &mut raw);
    index::encode_posting(Codec::Plain, &mut large, &mut rich);
    let mut a = small.clone();
    let mut b = large.clone();
    let (mut c, mut d) = (small.clone(), runs.clone());
    let texts = ["file:a/b.rs", "sym:a/b.rs#f", "", "ünï"];
    vec![
        column::encode(Codec::Plain, &[3, 1, 4, 1, 5, 0x8000_0009]).unwrap(),
        column::stored((1, 0, 0), &[7, 7, 7]).unwrap(),
        raw,
        rich,
        index::encode(Codec::Plain, &mut large),
        index::encode_chunk(Codec::Plain, [(2u8, &mut a), (7u8, &mut b)].into_iter()),
        column::encode(Codec::Compact, &[3, 1, 4, 1, 5, 0x8000_0009]).unwrap(),
        column::encode(Codec::Compact, &[7, 7, 7, 7, 9, 9, 9, 9, 9, 2]).unwrap(),
        index::encode(Codec::Compact, &mut small),
        index::encode(Codec::Compact, &mut runs),
        index::encode(Codec::Compact, &mut large),
        index::encode_chunk(Codec::Compact, [(2u8, &mut c), (7u8, &mut d)].into_iter()),
        intern::encode_text_chunk(Codec::Compact, texts.into_iter()),
    ]
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
        fuzz::blocks(&mutate::apply(&block_seeds()[seed], &e));
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
    let seeds = block_seeds();
    assert_eq!(column::decode(&seeds[0]).unwrap().len(), 6);
    assert!(index::decode_posting(&seeds[3]).is_ok());
    assert_eq!(index::ChunkView::parse(&seeds[5]).unwrap().len(), 2);
    let compact = |i: usize| Payload::new(Codec::Compact, &seeds[i]);
    assert_eq!(column::decode(compact(6)).unwrap().len(), 6);
    assert_eq!(column::decode(compact(7)).unwrap().len(), 10);
    assert_eq!(index::decode(compact(8)).unwrap().len(), 3);
    assert_eq!(index::decode(compact(9)).unwrap().len(), 35);
    assert_eq!(index::decode(compact(10)).unwrap().len(), 1667);
    assert_eq!(index::ChunkView::parse(compact(11)).unwrap().len(), 2);
    assert_eq!(intern::decode_text_chunk(compact(12)).unwrap().len(), 4);
}
