//! Fuzz targets: what the store reads from bytes it did not write (dumps, SCIP indexes) or
//! may find damaged (column blocks, postings, bitmaps), each a function of arbitrary bytes
//! that must answer or refuse, never panic, hang or grow without bound.
//!
//! Both runners call these: the cargo-fuzz targets of `fixtures/fuzz` on nightly and the
//! bounded property runs of `store/tests/fuzz.rs` on stable (see `docs/testing.md`).

use crate::dump::{self, DumpSpec, Fact, FactSink, Format};
use crate::error::IngestError;
use crate::layout::{Codec, Payload};
use crate::{column, index, intern};
use roaring::RoaringBitmap;

/// The formats [`dump`] reads, by the first byte of its input.
pub const DUMP_FORMATS: [Format; 5] = [
    Format::Edges,
    Format::Attrs,
    Format::Nodes,
    Format::Facts,
    Format::Jsonl,
];

/// A sink that checks what each fact holds and keeps nothing.
struct Checking {
    facts: u64,
}

impl FactSink for Checking {
    fn fact(&mut self, fact: &Fact<'_>) -> Result<(), IngestError> {
        assert_eq!(
            fact.fields.len(),
            fact.columns.len(),
            "relation {}",
            fact.relation
        );
        assert!(!fact.relation.is_empty());
        self.facts += 1;
        Ok(())
    }

    fn declare(&mut self, fact: &Fact<'_>) -> Result<(), IngestError> {
        assert!(!fact.relation.is_empty());
        Ok(())
    }
}

/// Reads `data` as a dump of `format` (a `.facts` file of relation `r`, with a unit
/// when `unit`): the facts read, or the error that stopped the read.
pub fn read_dump(format: Format, data: &[u8], unit: bool) -> Result<u64, IngestError> {
    let spec = DumpSpec {
        label: "fuzz".to_owned(),
        format,
        relation: (format == Format::Facts).then(|| "r".to_owned()),
        unit: unit.then(|| "u".to_owned()),
        checkout: None,
    };
    let mut sink = Checking { facts: 0 };
    let n = dump::read_limited(data, &spec, &mut sink, 1 << 12)?;
    assert_eq!(n, sink.facts);
    Ok(n)
}

/// The dump readers: the first byte picks the format (of [`DUMP_FORMATS`]) and whether
/// the file names a unit, the rest is the file.
pub fn dump(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let format = DUMP_FORMATS[usize::from(pick) % DUMP_FORMATS.len()];
    let _ = read_dump(format, rest, pick & 0x80 != 0);
}

/// The SCIP reader: `data` as an `index.scip`, with a repository given or not by the
/// parity of its length.
pub fn scip(data: &[u8]) {
    let _ = read_dump(Format::Scip, data, data.len().is_multiple_of(2));
}

/// The block, bitmap and dictionary decoders, in both encodings ([`Codec`]): `data` as a
/// column block (and as one archived and sealed), a posting, a row set, a postings chunk
/// and a dictionary chunk. Whatever decodes as a block encodes back to the same terms, and
/// reads the same row by row.
pub fn blocks(data: &[u8]) {
    for codec in [Codec::Plain, Codec::Compact, Codec::Compact4] {
        let p = Payload::new(codec, data);
        // The head alone says how long a block is (what a version 5 lookup reads to find
        // the parts its rows lie in): for a block that views, its whole length.
        let extent = codec.is_compact().then(|| column::extent(codec, data));
        if codec.is_compact() && column::view(p).is_ok() {
            assert!(matches!(extent, Some(Ok(e)) if e.len == data.len()));
        }
        if let Ok(view) = column::view(p) {
            // Rows read one by one never panic; a block that decodes whole reads the same.
            for i in 0..=view.len() {
                let _ = view.get(i);
            }
            if let Ok(terms) = view.to_vec() {
                assert_eq!(terms.len(), view.len());
                for (i, &t) in terms.iter().enumerate() {
                    assert_eq!(view.get(i), Some(t));
                }
                assert_eq!(view.get(terms.len()), None);
                if let Ok(bytes) = column::encode(codec, &terms) {
                    let again = column::decode(Payload::new(codec, &bytes));
                    assert_eq!(again.ok().as_ref(), Some(&terms));
                }
            }
        }
        let _ = index::decode(p);
        let _ = index::decode_posting(p);
        if let Ok(chunk) = index::ChunkView::parse(p) {
            for (low, posting) in chunk.iter() {
                assert_eq!(chunk.get(low), Some(posting));
                let _ = index::decode_posting(posting);
            }
            // A lookup of one term finds what the whole chunk read gives.
            for low in 0..=u8::MAX {
                assert_eq!(index::find_posting(p, low).ok(), Some(chunk.get(low)));
            }
        } else {
            for low in 0..=u8::MAX {
                let _ = index::find_posting(p, low);
            }
        }
        let _ = intern::decode_text_chunk(p);
    }
    let _ = column::from_stored((1, 0, 0), data);
}

/// Valid encodings, the seeds of [`blocks`]' runs, plain (format versions 1 and 2): a column block, raw and bitmap
/// postings, a row bitmap and a chunk; then compact (version 3): blocks of both forms,
/// postings of each form, a chunk and a dictionary chunk; then version 4's forms: a block
/// on a line, a chunk of postings that follow on and a packed chunk.
pub fn block_seeds() -> Vec<Vec<u8>> {
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
    let sorted: Vec<u32> = (0..40).map(|i| 0xC000_0000 + i / 2 + i % 3).collect();
    let (mut e, mut f, mut g) = (
        (4..6).collect::<RoaringBitmap>(),
        (6..9).collect::<RoaringBitmap>(),
        (9..10).collect::<RoaringBitmap>(),
    );
    let mut spread: Vec<(u8, RoaringBitmap)> = (0..8u32)
        .map(|i| {
            let rows = (0..3).map(|k| (i * 1_234_567 + k * 3_333_331) % 10_000_000);
            (i as u8 * 3, rows.collect())
        })
        .collect();
    vec![
        column::encode(Codec::Plain, &[3, 1, 4, 1, 5, 0x8000_0009]).unwrap_or_default(),
        column::stored((1, 0, 0), &[7, 7, 7]).unwrap_or_default(),
        raw,
        rich,
        index::encode(Codec::Plain, &mut large),
        index::encode_chunk(Codec::Plain, [(2u8, &mut a), (7u8, &mut b)].into_iter()),
        column::encode(Codec::Compact, &[3, 1, 4, 1, 5, 0x8000_0009]).unwrap_or_default(),
        column::encode(Codec::Compact, &[7, 7, 7, 7, 9, 9, 9, 9, 9, 2]).unwrap_or_default(),
        index::encode(Codec::Compact, &mut small),
        index::encode(Codec::Compact, &mut runs),
        index::encode(Codec::Compact, &mut large),
        index::encode_chunk(Codec::Compact, [(2u8, &mut c), (7u8, &mut d)].into_iter()),
        intern::encode_text_chunk(Codec::Compact, texts.into_iter()),
        column::encode(Codec::Compact4, &sorted).unwrap_or_default(),
        index::encode_chunk(
            Codec::Compact4,
            [(0u8, &mut e), (1u8, &mut f), (5u8, &mut g)].into_iter(),
        ),
        index::encode_chunk(Codec::Compact4, spread.iter_mut().map(|(l, b)| (*l, b))),
    ]
}

/// The tier the file targets put their relation in.
pub const TIER: &str = "fuzz";

/// The keys the metadata targets write, by a byte (a byte past them names a key of its own).
pub const META_KEYS: [&str; 8] = [
    "format_version",
    "identity",
    "database",
    "applied_seq",
    "savepoint",
    "seq",
    "texts",
    "relations",
];

/// A database for the file targets ([`stamp`], [`tier_file`]): in `DIR/db`,
/// relation `pkg` in the base file and `hot` in tier [`TIER`], with the bytes of both files
/// as this database wrote them. Targets that replace its tier file take turns.
pub struct Files {
    dir: std::path::PathBuf,
    store: crate::Store,
    base: Vec<u8>,
    tier: Vec<u8>,
    stamped: std::path::PathBuf,
    /// The rows of `pkg` and `hot` as the batches stored them.
    rows: [Vec<Vec<strata_eval::Term>>; 2],
    turn: std::sync::Mutex<()>,
}

/// Files written by the targets so far (for unique names).
static WRITTEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn unique() -> u64 {
    WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Why [`Files::new`] could not build its database.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// A batch failed.
    #[error(transparent)]
    Ingest(#[from] crate::IngestError),
    /// A commit failed.
    #[error(transparent)]
    Commit(#[from] crate::CommitError),
    /// Opening failed.
    #[error(transparent)]
    Open(#[from] crate::OpenError),
    /// A file could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The database could not be read back.
    #[error(transparent)]
    Read(#[from] crate::ReadError),
}

/// What became of a file's bytes in a target.
#[derive(Debug, PartialEq, Eq)]
pub enum FileOutcome {
    /// Refused: the message (which names the file).
    Refused(String),
    /// Opened and read: the live rows of the relation it holds.
    Read(u64),
}

impl Files {
    /// Builds the database in `dir` (which it keeps using).
    pub fn new(dir: &std::path::Path) -> Result<Files, FilesError> {
        let db = dir.join("db");
        let store = crate::Store::open(
            &db,
            crate::OpenOptions {
                create: true,
                ..Default::default()
            },
        )?;
        for (tier, text) in [
            ("default", "app\tpkg\tlib\n"),
            (TIER, "a\thot\tb\nb\thot\tc\n"),
        ] {
            let mut batch = store.batch(crate::BatchOptions {
                tier: tier.to_owned(),
                ..Default::default()
            })?;
            let spec = DumpSpec {
                label: "x.edges.tsv".to_owned(),
                format: Format::Edges,
                relation: None,
                unit: None,
                checkout: None,
            };
            batch.read_dump(text.as_bytes(), &spec)?;
            batch.commit()?;
        }
        drop(store);
        let base = std::fs::read(db.join(crate::layout::BASE_FILE))?;
        let tier = std::fs::read(db.join(crate::layout::tier_file(TIER)))?;
        let store = crate::Store::open(&db, crate::OpenOptions::default())?;
        let stamped = db.join("stamped");
        std::fs::write(&stamped, b"a file of the directory")?;
        let snap = store.snapshot_with_tiers(&[TIER])?;
        let rows = [live_rows(&snap, "pkg")?, live_rows(&snap, "hot")?];
        drop(snap);
        store.forget_tier(TIER);
        Ok(Files {
            dir: db,
            store,
            base,
            tier,
            stamped,
            rows,
            turn: std::sync::Mutex::new(()),
        })
    }

    /// The stamp the database writes for the file the stamp target stamps, as it is now.
    pub fn stamp_seed(&self) -> Vec<u8> {
        crate::stamp::Stamp::of(&self.stamped)
            .map(|s| s.render().into_bytes())
            .unwrap_or_default()
    }

    /// The tier file as the database wrote it.
    pub fn tier_seed(&self) -> &[u8] {
        &self.tier
    }

    /// The base file as the database wrote it.
    pub fn base_seed(&self) -> &[u8] {
        &self.base
    }

    /// The database's directory.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

/// Whether `message` names the file `name`.
fn names(message: &str, name: &str) -> bool {
    message.contains(name)
}

/// The live rows of `relation` in `snap`, in order.
fn live_rows(
    snap: &crate::Snapshot,
    relation: &str,
) -> Result<Vec<Vec<strata_eval::Term>>, crate::ReadError> {
    let mut rows = Vec::new();
    snap.scan_rel(snap.meta(relation)?, &mut |row| {
        rows.push(row.to_vec());
        std::ops::ControlFlow::Continue(())
    })?;
    Ok(rows)
}

/// Writes `data` as the database's tier file (no stamp beside it: it is verified) and reads
/// relation `hot` from it: refused naming the file, or read. The database's base file is
/// never harmed: it reads on after every case.
pub fn tier_outcome(files: &Files, data: &[u8]) -> FileOutcome {
    let _turn = files
        .turn
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let name = crate::layout::tier_file(TIER);
    let path = files.dir.join(&name);
    files.store.forget_tier(TIER);
    crate::stamp::Stamp::remove(&path);
    if let Err(e) = std::fs::write(&path, data) {
        return FileOutcome::Refused(format!("(not written: {e})"));
    }
    let outcome = match files
        .store
        .snapshot_with_tiers(&[TIER])
        .and_then(|snap| live_rows(&snap, "hot"))
    {
        // What reads at all reads right: the relation's rows as stored, never others.
        Ok(rows) => {
            assert_eq!(rows, files.rows[1], "a tier file read otherwise");
            FileOutcome::Read(rows.len() as u64)
        }
        Err(e) => {
            let message = crate::error::chain(&e);
            assert!(names(&message, &name), "{message}");
            FileOutcome::Refused(message)
        }
    };
    files.store.forget_tier(TIER);
    crate::stamp::Stamp::remove(&path);
    let base = files.store.snapshot().and_then(|s| live_rows(&s, "pkg"));
    assert_eq!(
        base.ok().as_ref(),
        Some(&files.rows[0]),
        "the base file harmed"
    );
    outcome
}

/// Metadata entries from bytes: a key (a byte picking one of [`META_KEYS`], or one past
/// them followed by a length and the key's bytes) and a value (a length up to 32, then that
/// many bytes), over and over.
pub fn meta_entries(mut data: &[u8]) -> Vec<(String, Vec<u8>)> {
    let take = |n: usize, data: &mut &[u8]| {
        let (a, b) = data.split_at(n.min(data.len()));
        *data = b;
        a.to_vec()
    };
    let mut out = Vec::new();
    while let Some((&k, rest)) = data.split_first() {
        data = rest;
        let key = match META_KEYS.get(usize::from(k)) {
            Some(key) => (*key).to_owned(),
            None => {
                let n = take(1, &mut data)
                    .first()
                    .map_or(0, |&n| usize::from(n % 24));
                String::from_utf8_lossy(&take(n, &mut data)).into_owned()
            }
        };
        let n = take(1, &mut data)
            .first()
            .map_or(0, |&n| usize::from(n % 33));
        out.push((key, take(n, &mut data)));
    }
    out
}

/// Writes `entries` into `table` of the redb file at `path`.
fn write_meta(
    path: &std::path::Path,
    table: redb::TableDefinition<'_, &str, &[u8]>,
    entries: &[(String, Vec<u8>)],
) -> Result<(), redb::Error> {
    let db = redb::Database::open(path)?;
    let txn = db.begin_write()?;
    {
        let mut t = txn.open_table(table)?;
        for (k, v) in entries {
            t.insert(k.as_str(), v.as_slice())?;
        }
    }
    txn.commit()?;
    Ok(())
}

/// The database's own tier file with `entries` written into its `tier_meta` (its format
/// version, owner, applied batch, savepoint), then read as [`tier_outcome`] reads.
pub fn tier_meta_outcome(files: &Files, entries: &[(String, Vec<u8>)]) -> FileOutcome {
    let n = unique();
    let tmp = files.dir.join(format!(".fuzz-tier-{n}"));
    let made = std::fs::write(&tmp, &files.tier)
        .map_err(redb::Error::from)
        .and_then(|()| write_meta(&tmp, crate::layout::TIER_META, entries));
    let bytes = std::fs::read(&tmp);
    let _ = std::fs::remove_file(&tmp);
    match (made, bytes) {
        (Ok(()), Ok(bytes)) => tier_outcome(files, &bytes),
        (Err(e), _) => FileOutcome::Refused(format!("(not written: {e})")),
        (_, Err(e)) => FileOutcome::Refused(format!("(not written: {e})")),
    }
}

/// The database's base file with `entries` written into its `meta` (format version,
/// identity, counters), opened as a database and read: refused naming the file, or read.
pub fn base_meta_outcome(files: &Files, entries: &[(String, Vec<u8>)]) -> FileOutcome {
    let name = crate::layout::BASE_FILE;
    let dir = files.dir.with_file_name(format!("base-{}", unique()));
    let outcome = (|| {
        std::fs::create_dir_all(&dir).map_err(|e| format!("(not written: {e})"))?;
        let path = dir.join(name);
        std::fs::write(&path, &files.base).map_err(|e| format!("(not written: {e})"))?;
        write_meta(&path, crate::layout::META, entries)
            .map_err(|e| format!("(not written: {e})"))?;
        let refused = |message: String| {
            assert!(names(&message, name), "{message}");
            message
        };
        let store = crate::Store::open(&dir, crate::OpenOptions::default())
            .map_err(|e| refused(crate::error::chain(&e)))?;
        let snap = store
            .snapshot()
            .map_err(|e| refused(crate::error::chain(&e)))?;
        live_rows(&snap, "pkg").map_err(|e| refused(crate::error::chain(&e)))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    match outcome {
        Ok(rows) => {
            assert_eq!(rows, files.rows[0], "a base file read otherwise");
            FileOutcome::Read(rows.len() as u64)
        }
        Err(m) => FileOutcome::Refused(m),
    }
}

/// The tier file and database identity target: the first byte picks what the rest is, by
/// its value modulo 3: the bytes of the tier file, entries for the tier file's metadata, or
/// entries for the base file's ([`meta_entries`]).
pub fn tier_file(files: &Files, data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let _ = match pick % 3 {
        0 => tier_outcome(files, rest),
        1 => tier_meta_outcome(files, &meta_entries(rest)),
        _ => base_meta_outcome(files, &meta_entries(rest)),
    };
}

/// The stamp target: `data` as the stamp of a file of the database directory. A stamp is
/// trusted only when it is, token for token, the one this database writes for that file
/// as it is now; anything else (garbage, another file's, a number spelled otherwise) only
/// makes the file be verified.
pub fn stamp(files: &Files, data: &[u8]) -> bool {
    let _turn = files
        .turn
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let stamp = crate::stamp::Stamp::path_for(&files.stamped);
    if std::fs::write(&stamp, data).is_err() {
        return false;
    }
    let trusted = crate::stamp::Stamp::matches(&files.stamped);
    if trusted {
        let tokens = |b: &[u8]| {
            String::from_utf8_lossy(b)
                .split_ascii_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            tokens(data),
            tokens(&files.stamp_seed()),
            "a stamp trusted otherwise"
        );
    }
    let _ = std::fs::remove_file(&stamp);
    trusted
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_block_seeds_decode() {
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
        // Version 4's seeds take its forms, which a version 3 file may not hold.
        let v4 = |i: usize| Payload::new(Codec::Compact4, &seeds[i]);
        assert_eq!(seeds[13][2], 2, "a block on a line");
        assert_eq!(column::decode(v4(13)).unwrap().len(), 40);
        assert!(column::decode(compact(13)).is_err());
        let chunk = index::ChunkView::parse(v4(14)).unwrap();
        let rows: Vec<Vec<u32>> = chunk
            .iter()
            .map(|(_, p)| index::decode_posting(p).unwrap().iter().collect())
            .collect();
        assert_eq!(rows, [vec![4, 5], vec![6, 7, 8], vec![9]]);
        assert!(index::ChunkView::parse(compact(14)).is_err());
        assert_eq!(seeds[15][0], 0x80 | 8, "a packed chunk");
        let chunk = index::ChunkView::parse(v4(15)).unwrap();
        let rows: usize = chunk
            .iter()
            .map(|(_, p)| index::decode_posting(p).unwrap().len() as usize)
            .sum();
        assert_eq!(rows, 24);
        assert!(index::ChunkView::parse(compact(15)).is_err());
    }
}
