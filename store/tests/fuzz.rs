//! The stable run of the store's fuzz targets (`strata_store::fuzz`): random bytes and
//! random edits of valid dumps, SCIP indexes, column blocks, postings and chunks, each read
//! or decoded to an answer or an error, never a panic; and the files of a database
//! directory (a tier file, the metadata of a tier and of the base file, a stamp), each
//! refused naming the file or read right. `STRATA_FUZZ_CASES=N` runs N cases a
//! test instead of CI's few hundred; the cargo-fuzz targets of `fixtures/fuzz` run the same
//! functions on nightly (see `docs/testing.md`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use protobuf::{Message, MessageField};
use scip::types::{Document, Index, Metadata, Occurrence, SymbolInformation};
use strata_fixtures::example::{IMPORTS_EDGES, PACKAGES_NODES, PKG_FACTS};
use strata_fixtures::mutate::{self, Edit};
use strata_store::dump::Format;
use strata_store::fuzz::{self, FileOutcome, Files};

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
    fn blocks_mutated(seed in 0usize..16, e in prop::collection::vec((any::<usize>(), any::<u8>(), prop::collection::vec(any::<u8>(), 0..6)), 1..4)) {
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
    assert_eq!(fuzz::block_seeds().len(), 16);
}

/// The file targets' database, kept for the test process's life.
fn files() -> &'static Files {
    static FILES: std::sync::OnceLock<(tempfile::TempDir, Files)> = std::sync::OnceLock::new();
    &FILES
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let files = Files::new(dir.path()).unwrap();
            (dir, files)
        })
        .1
}

fn refused(outcome: FileOutcome) -> String {
    match outcome {
        FileOutcome::Refused(m) => m,
        FileOutcome::Read(n) => panic!("read {n} rows"),
    }
}

/// Metadata entries as [`fuzz::meta_entries`] reads them: a key of [`fuzz::META_KEYS`] and
/// its value.
fn entry(key: &str, value: &[u8]) -> Vec<u8> {
    let k = fuzz::META_KEYS.iter().position(|k| *k == key).unwrap() as u8;
    let mut out = vec![k, value.len() as u8];
    out.extend_from_slice(value);
    out
}

#[test]
fn the_file_seeds_read() {
    let f = files();
    assert_eq!(fuzz::tier_outcome(f, f.tier_seed()), FileOutcome::Read(2));
    assert_eq!(fuzz::tier_meta_outcome(f, &[]), FileOutcome::Read(2));
    assert_eq!(fuzz::base_meta_outcome(f, &[]), FileOutcome::Read(1));
    assert!(fuzz::stamp(f, &f.stamp_seed()));
    assert_eq!(
        fuzz::meta_entries(&entry("seq", b"\x01\x02")),
        [("seq".to_owned(), b"\x01\x02".to_vec())]
    );
}

#[test]
fn issue_30_hostile_tier_files_are_refused_naming_them() {
    let f = files();
    let seed = f.tier_seed();
    let name = "tier-fuzz.redb";
    for (data, what) in [
        (&b""[..], "empty"),
        (&seed[..4096], "cut to a page"),
        (&seed[..seed.len() / 2], "cut in half"),
        (&vec![0u8; seed.len()][..], "zeros"),
        (f.base_seed(), "the base file"),
    ] {
        let m = refused(fuzz::tier_outcome(f, data));
        assert!(m.contains(name), "{what}: {m}");
    }
    let m = refused(fuzz::tier_outcome(f, f.base_seed()));
    assert!(m.contains("it is a database's base file"), "{m}");
    // Its metadata: another database's identity, a version no strata writes, a batch the
    // base file never acknowledged.
    let m = refused(fuzz::tier_meta_outcome(
        f,
        &fuzz::meta_entries(&entry("database", &[7; 16])),
    ));
    assert!(
        m.contains("not a tier file of this database: it belongs to another database"),
        "{m}"
    );
    let m = refused(fuzz::tier_meta_outcome(
        f,
        &fuzz::meta_entries(&entry("format_version", &99u32.to_le_bytes())),
    ));
    assert!(m.contains(name) && m.contains("format version 99"), "{m}");
    let m = refused(fuzz::tier_meta_outcome(
        f,
        &fuzz::meta_entries(&entry("format_version", &0u32.to_le_bytes())),
    ));
    assert!(m.contains(name) && m.contains("format version 0"), "{m}");
    let m = refused(fuzz::tier_meta_outcome(
        f,
        &fuzz::meta_entries(&entry("format_version", b"\x01")),
    ));
    assert!(m.contains(name), "{m}");
    let mut late = entry("applied_seq", &999u64.to_le_bytes());
    let m = refused(fuzz::tier_meta_outcome(f, &fuzz::meta_entries(&late)));
    assert!(
        m.contains("holds batch 999 the base file never acknowledged"),
        "{m}"
    );
    late.extend(entry("savepoint", &12345u64.to_le_bytes()));
    let m = refused(fuzz::tier_meta_outcome(f, &fuzz::meta_entries(&late)));
    assert!(m.contains(name), "{m}");
}

#[test]
fn issue_30_hostile_base_metadata_is_refused_naming_the_file() {
    let f = files();
    let name = "strata.redb";
    let m = refused(fuzz::base_meta_outcome(
        f,
        &fuzz::meta_entries(&entry("identity", &[1; 15])),
    ));
    assert!(
        m.contains(name) && m.contains("meta \"identity\" is not 16 bytes"),
        "{m}"
    );
    for version in [0u32, 99] {
        let m = refused(fuzz::base_meta_outcome(
            f,
            &fuzz::meta_entries(&entry("format_version", &version.to_le_bytes())),
        ));
        assert!(
            m.contains(name) && m.contains(&format!("format version {version}")),
            "{m}"
        );
    }
    let m = refused(fuzz::base_meta_outcome(
        f,
        &fuzz::meta_entries(&entry("seq", b"\x01\x02\x03")),
    ));
    assert!(m.contains(name), "{m}");
}

#[test]
fn issue_30_a_stamp_is_trusted_only_as_written() {
    let f = files();
    let seed = String::from_utf8(f.stamp_seed()).unwrap();
    assert!(fuzz::stamp(f, seed.as_bytes()));
    assert!(fuzz::stamp(f, seed.replace(' ', "\t\n").as_bytes()));
    for other in [
        seed.replace(" ino ", " ino +"),
        seed.replace(" len ", " len 0"),
        seed.replace("strata-stamp 1", "strata-stamp 2"),
        seed.trim_end().rsplit_once(' ').unwrap().0.to_owned(),
        format!("{seed} extra"),
        seed.repeat(200),
        String::new(),
    ] {
        assert!(!fuzz::stamp(f, other.as_bytes()), "{other:?}");
    }
    assert!(!fuzz::stamp(f, b"\xff\xfe"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(strata_fixtures::mutate::cases(100)))]

    #[test]
    fn tier_random_bytes(data in prop::collection::vec(any::<u8>(), 0..8192)) {
        let m = refused(fuzz::tier_outcome(files(), &data));
        prop_assert!(m.contains("tier-fuzz.redb"), "{}", m);
    }

    #[test]
    fn tier_mutated(e in prop::collection::vec((any::<usize>(), any::<u8>(), prop::collection::vec(any::<u8>(), 0..6)), 1..4)) {
        let _ = fuzz::tier_outcome(files(), &mutate::apply(files().tier_seed(), &e));
    }

    #[test]
    fn tier_meta_random(data in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = fuzz::tier_meta_outcome(files(), &fuzz::meta_entries(&data));
    }

    #[test]
    fn base_meta_random(data in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = fuzz::base_meta_outcome(files(), &fuzz::meta_entries(&data));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(strata_fixtures::mutate::cases(500)))]

    #[test]
    fn stamp_random_bytes(data in prop::collection::vec(any::<u8>(), 0..128)) {
        fuzz::stamp(files(), &data);
    }

    #[test]
    fn stamp_mutated(e in prop::collection::vec((any::<usize>(), any::<u8>(), prop::collection::vec(prop::sample::select(b"0123456789 +-\tx".to_vec()), 0..4)), 1..4)) {
        fuzz::stamp(files(), &mutate::apply(&files().stamp_seed(), &e));
    }
}
