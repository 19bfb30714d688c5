//! The stable run of the application core's fuzz targets (`strata_app::fuzz`): the ingest
//! socket's header line and frames, and the find index file, on random bytes, random edits
//! of valid inputs and hand-made hostile ones. Every case answers or refuses with a clear
//! error, never panics, and allocates no more than a bounded multiple of what it was sent
//! (a counting allocator measures each case's peak on its own thread). A find index that is
//! damaged is rebuilt by its finder, which answers as the in-memory scan does.
//! `STRATA_FUZZ_CASES=N` runs N cases a test instead of CI's; the cargo-fuzz targets
//! `ingest_socket` and `find_index` of `fixtures/fuzz` run the same functions on nightly
//! (see `docs/testing.md`).

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::OnceLock;

use proptest::prelude::*;
use strata_app::find::Finder;
use strata_app::fuzz::{self, FindOutcome, Received, frames};
use strata_app::ingest::{self as load, DumpFiles, dump_specs};
use strata_app::ingest_socket::{Header, MAX_FRAME_BYTES, MAX_HEADER_BYTES};
use strata_app::read::{Limits, Read, What};
use strata_fixtures::mutate::{self, Edit};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};

/// The system allocator, counting each thread's bytes held and their peak.
struct Counting;

thread_local! {
    static HELD: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn add(n: usize) {
    let _ = HELD.try_with(|h| {
        let now = h.get().saturating_add(n);
        h.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

fn sub(n: usize) {
    let _ = HELD.try_with(|h| h.set(h.get().saturating_sub(n)));
}

// SAFETY: every call is passed on to `System` as it came; the counters only add up sizes.
// (A global allocator cannot be written without `unsafe`; this one is the test's alone.)
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size());
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        sub(layout.size());
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size);
        sub(layout.size());
        // SAFETY: as `GlobalAlloc::realloc` requires, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f`, answering its result and the most it held at once beyond what was held before.
fn peak<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = HELD.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    (out, PEAK.with(Cell::get).saturating_sub(base))
}

/// The most a connection's bytes may make the daemon hold: its reading buffer and a copy
/// of the header line (1 MiB at most), parsed, and what the files' bytes fill (here kept,
/// by the daemon spooled), never what a frame's length claims.
fn ingest_bound(data: &[u8]) -> usize {
    (1 << 20) + 24 * data.len()
}

/// Runs the ingest target on `data`, checking its allocation.
fn ingest(data: &[u8]) {
    let ((), held) = peak(|| fuzz::ingest_request(data));
    assert!(
        held <= ingest_bound(data),
        "{held} bytes held for {} bytes sent",
        data.len()
    );
}

fn header(files: &[(&str, Format)]) -> Vec<u8> {
    let specs: Vec<DumpSpec> = files
        .iter()
        .map(|(label, format)| DumpSpec {
            label: (*label).to_owned(),
            format: *format,
            relation: (*format == Format::Facts).then(|| "r".to_owned()),
            unit: None,
            checkout: None,
        })
        .collect();
    let mut line = serde_json::to_vec(&Header::new(
        fuzz::database(),
        &BatchOptions::default(),
        &specs,
    ))
    .unwrap();
    line.push(b'\n');
    line
}

/// Valid requests: batches of one and two files, an empty file, and a read.
fn ingest_seeds() -> Vec<Vec<u8>> {
    let mut one = header(&[("x.edges.tsv", Format::Edges)]);
    one.extend(frames(&[b"a\tIMPORTS\tb\n", b"b\tIMPORTS\tc\n"]));
    let mut two = header(&[("p.facts", Format::Facts), ("n.jsonl", Format::Jsonl)]);
    two.extend(frames(&[b"x\ty\n"]));
    two.extend(frames(&[br#"{"id":"a","label":"L"}"#, b"\n"]));
    let mut empty = header(&[("e.nodes.tsv", Format::Nodes)]);
    empty.extend(frames(&[]));
    let read = serde_json::json!({
        "database": fuzz::database(),
        "read": Read {
            what: What::Query { program: "imports(?a, ?b) => ?b".into(), binds: vec![] },
            json: false,
            limits: Limits::default(),
        },
    });
    let mut read = serde_json::to_vec(&read).unwrap();
    read.push(b'\n');
    let retract = serde_json::json!({"database": fuzz::database(), "retract": ["src/a.rs"]});
    let mut retract = serde_json::to_vec(&retract).unwrap();
    retract.push(b'\n');
    vec![one, two, empty, read, retract]
}

/// Bytes the header and frames give meaning to.
const INGEST_TOKENS: &[&[u8]] = &[
    b"\n",
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"null",
    b"\"files\":[],",
    b"\"read\":1,",
    b"\"retract\":[\"u\"],",
    b"\"buffer\":18446744073709551615,",
    b"\"format\":\"facts\",",
    b"\"relation\":\"a b\",",
    b"\"ino\":3,",
    b"\x00\x00\x00\x00\x00\x00\x00\x00",
    b"\xff\xff\xff\xff\xff\xff\xff\xff",
    b"\x00\x00\x00\x01\x00\x00\x00\x00",
    b"\x01\x00\x00\x00\x00\x00\x00\x00",
    b"\xff",
];

fn edits(tokens: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<Edit>> {
    let bytes = prop_oneof![
        3 => (0..tokens.len()).prop_map(move |i| tokens[i].to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..8),
    ];
    prop::collection::vec((any::<usize>(), any::<u8>(), bytes), 1..6)
}

/// The error the daemon answers `data`, as the client reads it.
fn refusal(data: &[u8]) -> String {
    ingest(data);
    match fuzz::ingest_outcome(data) {
        Ok(r) => panic!("taken: {r:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_ingest_seeds_are_taken() {
    let seeds = ingest_seeds();
    for (i, seed) in seeds.iter().enumerate() {
        ingest(seed);
        match fuzz::ingest_outcome(seed).unwrap() {
            Received::Batch { files, .. } => assert!(i < 3 && !files.is_empty(), "{i}"),
            Received::Read => assert_eq!(i, 3),
            Received::Retract(units) => {
                assert_eq!((i, &units[..]), (4, &["src/a.rs".to_owned()][..]))
            }
        }
    }
    let Received::Batch { files, .. } = fuzz::ingest_outcome(&seeds[1]).unwrap() else {
        panic!("a batch");
    };
    assert_eq!(
        files,
        [
            b"x\ty\n".to_vec(),
            b"{\"id\":\"a\",\"label\":\"L\"}\n".to_vec()
        ]
    );
}

#[test]
fn issue_30_hostile_ingest_requests_are_refused_clearly() {
    let head = header(&[("x.edges.tsv", Format::Edges)]);
    let with = |tail: &[u8]| [head.as_slice(), tail].concat();
    // A frame claiming the most a u64 holds, and one just past the limit: refused before
    // anything is allocated for them.
    for len in [u64::MAX, MAX_FRAME_BYTES + 1] {
        let data = with(&len.to_le_bytes());
        let (e, held) = peak(|| refusal(&data));
        assert!(
            e.contains(&format!(
                "x.edges.tsv: reading the request: a frame of {len} bytes is larger than the \
                 {MAX_FRAME_BYTES} allowed"
            )),
            "{e}"
        );
        assert!(held < 4 << 20, "{held}");
    }
    // A frame of the largest size claimed, a few bytes sent: the request ended inside it.
    let mut data = with(&MAX_FRAME_BYTES.to_le_bytes());
    data.extend_from_slice(b"a\tIMPORTS\tb\n");
    let (e, held) = peak(|| refusal(&data));
    assert!(e.contains("the request ended inside a frame"), "{e}");
    assert!(held < 4 << 20, "{held}");
    // Truncated: inside a length, and before the file's last frame.
    let e = refusal(&with(&[5, 0, 0]));
    assert!(
        e.contains("x.edges.tsv: reading the request: the request ended inside a frame's length"),
        "{e}"
    );
    let e = refusal(&with(&frames(&[b"a\tIMPORTS\tb\n"])[..20]));
    assert!(
        e.contains(
            "the request ended before the file did (its last frame, of length 0, never came)"
        ),
        "{e}"
    );
    // Another database's id.
    let other = String::from_utf8(head.clone())
        .unwrap()
        .replace("\"ino\":2", "\"ino\":3");
    let e = refusal(other.as_bytes());
    assert!(
        e.contains("this socket belongs to the server of /fuzz/db"),
        "{e}"
    );
    // Not JSON, JSON of another shape, a read that is not one.
    for bad in [&b"{nope\n"[..], b"[1,2]\n", b"{\"read\": 5}\n", b"\n"] {
        let e = refusal(bad);
        assert!(e.starts_with("the request's header is not valid: "), "{e}");
    }
    // A header line past the maximum, and one never ended.
    let long = vec![b' '; MAX_HEADER_BYTES as usize + 10];
    let (e, held) = peak(|| refusal(&long));
    assert_eq!(
        e,
        format!("the request's header line is longer than {MAX_HEADER_BYTES} bytes")
    );
    assert!(held < 8 << 20, "{held}");
    let e = refusal(b"{\"database\":");
    assert_eq!(e, "the request ended before its header line did");
    // A header line at the maximum, nested as deep as JSON goes: refused, bounded.
    let mut deep = vec![b'['; MAX_HEADER_BYTES as usize - 1];
    deep.push(b'\n');
    let (e, held) = peak(|| refusal(&deep));
    assert!(e.starts_with("the request's header is not valid: "), "{e}");
    assert!(held < 8 << 20, "{held}");
    // A header of as many files as a line holds: bounded by the line.
    let file = r#"{"label":"","format":"edges"},"#;
    let files = file.repeat((MAX_HEADER_BYTES as usize - 200) / file.len());
    let db = serde_json::to_string(&fuzz::database()).unwrap();
    let many = format!(
        "{{\"database\":{db},\"tier\":\"default\",\"files\":[{}]}}\n",
        files.trim_end_matches(',')
    );
    assert!(many.len() as u64 <= MAX_HEADER_BYTES);
    let (outcome, held) = peak(|| fuzz::ingest_outcome(many.as_bytes()));
    // Taken: each of its files ended before its last frame.
    let e = outcome.unwrap_err().to_string();
    assert!(e.contains("the request ended before the file did"), "{e}");
    assert!(held < 32 << 20, "{held}");
    // A file with a bad format or relation; too large a buffer is capped.
    let text = String::from_utf8(head).unwrap();
    let e = refusal(text.replace("\"edges\"", "\"csv\"").as_bytes());
    assert!(e.contains("x.edges.tsv: unknown format \"csv\""), "{e}");
    let e = refusal(
        text.replace(
            "\"format\":\"edges\",\"relation\":null",
            "\"format\":\"facts\",\"relation\":\"a b\"",
        )
        .as_bytes(),
    );
    assert!(e.contains("\"a b\" cannot name a relation"), "{e}");
    let buffered = text.replacen("\"buffer\":", "\"buffer\":1000000000000,\"x\":", 1);
    let e = refusal(buffered.as_bytes());
    assert!(e.contains("unknown field `x`"), "{e}");
    let re = regex_free_buffer(&text, "1000000000000");
    let mut data = re.into_bytes();
    data.extend(frames(&[]));
    ingest(&data);
    match fuzz::ingest_outcome(&data).unwrap() {
        Received::Batch { options, .. } => {
            assert_eq!(
                options.buffer_facts,
                strata_app::ingest_socket::MAX_BUFFER_FACTS
            );
        }
        Received::Read | Received::Retract(_) => panic!("not a batch"),
    }
}

/// `line` (a header) with its buffer set to `n`.
fn regex_free_buffer(line: &str, n: &str) -> String {
    let at = line.find("\"buffer\":").unwrap() + "\"buffer\":".len();
    let end = at + line[at..].find([',', '}']).unwrap();
    format!("{}{n}{}", &line[..at], &line[end..])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(mutate::cases(1000)))]

    #[test]
    fn ingest_random_bytes(data in prop::collection::vec(any::<u8>(), 0..512)) {
        ingest(&data);
    }

    #[test]
    fn ingest_random_frames(seed in 0usize..3, tail in prop::collection::vec(any::<u8>(), 0..256)) {
        let line_end = ingest_seeds()[seed].iter().position(|&b| b == b'\n').unwrap() + 1;
        let mut data = ingest_seeds()[seed][..line_end].to_vec();
        data.extend(tail);
        ingest(&data);
    }

    #[test]
    fn ingest_mutated(seed in 0usize..4, e in edits(INGEST_TOKENS)) {
        ingest(&mutate::apply(&ingest_seeds()[seed], &e));
    }
}

/// The texts of the find index seed: one of each kind of match [`fuzz::QUERIES`] makes.
const TEXTS: &[&str] = &[
    "alpha",
    "beta_gamma",
    "sym:a/b.rs#delta",
    "Delta",
    "ünï",
    "parse_args",
    "cli/parse.rs#args",
    "alphabet",
    "gamma-ray",
    "x/y/z",
];

/// A database of [`TEXTS`] (kept for the test process's life), and its find index file's
/// bytes as its finder wrote them.
fn find_db() -> &'static (tempfile::TempDir, Store, Vec<u8>) {
    static DB: OnceLock<(tempfile::TempDir, Store, Vec<u8>)> = OnceLock::new();
    DB.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let dump = dir.path().join("t.nodes.tsv");
        let nodes: String = TEXTS.iter().map(|t| format!("{t}\tThing\n")).collect();
        std::fs::write(&dump, nodes).unwrap();
        let specs = dump_specs(&DumpFiles {
            files: vec![dump],
            ..DumpFiles::default()
        })
        .unwrap();
        load::ingest(
            dir.path(),
            &specs,
            BatchOptions::default(),
            |_, _| {},
            || {},
        )
        .unwrap();
        let store = Store::open(dir.path(), OpenOptions::default()).unwrap();
        let finder = Finder::open(dir.path(), &store.snapshot().unwrap()).unwrap();
        let bytes = std::fs::read(finder.file_path().unwrap()).unwrap();
        (dir, store, bytes)
    })
}

/// What the finder answers each query with: ids and texts of the best 5, and the total.
fn finder_answers(finder: &Finder, upto: u32) -> Vec<(Vec<(u32, String)>, usize)> {
    fuzz::QUERIES
        .iter()
        .map(|q| {
            let a = finder.search(q, upto, 5).unwrap();
            let m = a
                .matches
                .iter()
                .map(|m| (m.id, a.text(m.id).unwrap().to_owned()))
                .collect();
            (m, a.total)
        })
        .collect()
}

/// Puts `data` as the database's find index and opens its finder: whatever the file held,
/// it answers as the in-memory scan (a damaged file is refused and rebuilt).
fn finder_rebuilds(data: &[u8]) {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (dir, store, seed) = find_db();
    let snap = store.snapshot().unwrap();
    let n = snap.text_count();
    let path = dir.path().join(format!("find-{n}.idx"));
    std::fs::write(&path, data).unwrap();
    let finder = Finder::open(dir.path(), &snap).unwrap();
    let mut scan = Finder::in_memory();
    scan.extend_from(&snap).unwrap();
    assert_eq!(finder_answers(&finder, n), finder_answers(&scan, n));
    assert_eq!(std::fs::read(&path).unwrap(), *seed, "the file rebuilt");
}

fn find_tokens() -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec(
        (
            any::<usize>(),
            any::<u8>(),
            prop::collection::vec(any::<u8>(), 0..6),
        ),
        1..5,
    )
}

#[test]
fn the_find_seed_opens_and_answers_as_the_scan() {
    let (_, store, seed) = find_db();
    let n = store.snapshot().unwrap().text_count();
    let FindOutcome::Opened(texts, answers) = fuzz::find_outcome(seed, false) else {
        panic!("the seed refused");
    };
    assert_eq!(texts, n);
    assert!(answers.iter().all(Result::is_ok), "{answers:?}");
    assert_eq!(
        fuzz::find_outcome(seed, true),
        FindOutcome::Opened(texts, answers)
    );
    finder_rebuilds(seed);
}

#[test]
fn issue_30_a_damaged_find_index_is_refused_naming_it() {
    let (_, _, seed) = find_db();
    for (data, what) in [
        (&seed[..0], "shorter than its header"),
        (&seed[..63], "shorter than its header"),
        (&seed[..seed.len() - 1], "truncated or of the wrong length"),
        (
            &seed[..4096.min(seed.len() - 8)],
            "truncated or of the wrong length",
        ),
    ] {
        let FindOutcome::Refused(m) = fuzz::find_outcome(data, false) else {
            panic!("{what}: opened");
        };
        assert!(m.starts_with("find index ") && m.ends_with(what), "{m}");
        finder_rebuilds(data);
    }
    let mut flipped = seed.clone();
    *flipped.last_mut().unwrap() ^= 1;
    let FindOutcome::Refused(m) = fuzz::find_outcome(&flipped, false) else {
        panic!("opened");
    };
    assert!(m.ends_with("its checksum does not match"), "{m}");
    let mut other = seed.clone();
    other[8] = 9;
    let FindOutcome::Refused(m) = fuzz::find_outcome(&other, false) else {
        panic!("opened");
    };
    assert!(m.ends_with("of another layout version"), "{m}");
    finder_rebuilds(b"random bytes, not an index at all: \x00\xff");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(mutate::cases(300)))]

    /// A damaged file (the checksum left as it was): refused, or answering as the seed.
    #[test]
    fn find_index_mutated(e in find_tokens()) {
        let (_, _, seed) = find_db();
        let data = mutate::apply(seed, &e);
        let (outcome, held) = peak(|| fuzz::find_outcome(&data, false));
        prop_assert!(held <= (1 << 20) + 8 * data.len(), "{} held", held);
        if let FindOutcome::Opened(..) = outcome {
            prop_assert_eq!(outcome, fuzz::find_outcome(seed, false));
        }
    }

    /// A file written wrong (its header made to match its body): refused or answering only
    /// matches the scan makes of their texts (checked by the target).
    #[test]
    fn find_index_sealed(e in find_tokens()) {
        let (_, _, seed) = find_db();
        let data = mutate::apply(seed, &e);
        let (_, held) = peak(|| fuzz::find_outcome(&data, true));
        prop_assert!(held <= (1 << 20) + 8 * data.len(), "{} held", held);
    }

    #[test]
    fn find_index_random_bytes(sealed in any::<bool>(), data in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = fuzz::find_outcome(&data, sealed);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(mutate::cases(40)))]

    /// The finder over a damaged file answers as the scan, the file rebuilt.
    #[test]
    fn find_index_mutated_is_rebuilt(e in find_tokens()) {
        let (_, _, seed) = find_db();
        let data = mutate::apply(seed, &e);
        if !matches!(fuzz::find_outcome(&data, false), FindOutcome::Opened(..)) {
            finder_rebuilds(&data);
        }
    }
}

/// Section `i` of a find index file (the table after the 64-byte header: 15 offset and
/// length pairs).
fn section(file: &[u8], i: usize) -> std::ops::Range<usize> {
    let at = 64 + i * 16;
    let word = |a: usize| u64::from_le_bytes(file[a..a + 8].try_into().unwrap()) as usize;
    word(at)..word(at) + word(at + 8)
}

/// Found by `find_index_sealed`: `fst` panicked (index out of bounds in its node decoding)
/// on a malformed map of fuzzy candidates behind a checksum that holds. Every byte of the
/// map replaced in turn: refused or answered, never a panic.
#[test]
fn fuzz_find_index_malformed_fuzzy_candidates_are_damage() {
    let (_, _, seed) = find_db();
    let cands = section(seed, 13);
    assert!(cands.len() > 16, "{cands:?}");
    let mut refused = 0;
    for i in cands {
        for x in [0xff, 0x80, 0x01] {
            let mut data = seed.clone();
            data[i] ^= x;
            if let FindOutcome::Opened(_, answers) = fuzz::find_outcome(&data, true) {
                refused += answers.iter().filter(|a| a.is_err()).count();
            } else {
                refused += 1;
            }
        }
    }
    assert!(refused > 0);
}

/// Found by `find_index_sealed`: segment key offsets going backwards made the position of
/// a match inside its key underflow. Refused as damage.
#[test]
fn fuzz_find_index_backward_segment_offsets_are_damage() {
    let (_, _, seed) = find_db();
    let offs = section(seed, 5);
    let mut data = seed.clone();
    // Every key said to start at the end of the keys: each occurrence lies before its key.
    let end = data[offs.end - 8..offs.end].to_vec();
    for at in (offs.start..offs.end).step_by(8) {
        data[at..at + 8].copy_from_slice(&end);
    }
    let FindOutcome::Opened(_, answers) = fuzz::find_outcome(&data, true) else {
        panic!("refused at open");
    };
    let alpha = &answers[0];
    assert!(
        alpha
            .as_ref()
            .is_err_and(|e| e.ends_with("a segment key is malformed")),
        "{alpha:?}"
    );
}
