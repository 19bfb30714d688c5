//! Issue 28, fit the clients: Claude Code cuts tool descriptions and server instructions at
//! 2 KB, and writes a tool result over 50,000 characters to a file unless the tool's
//! `_meta["anthropic/maxResultSizeChars"]` raises it. For every pack (none, the bundled
//! example's, the bundled `code` pack written after a SCIP ingest), with `ask` offered so
//! its description is listed too: every description and the instructions fit in 2 KB, and
//! every tool declares a result size that holds the default answer budget whole.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../store/tests/scip/support.rs"]
mod support;

use std::path::Path;

use strata_mcp::server::{MAX_RESULT_SIZE_CHARS, MAX_RESULT_SIZE_CHARS_CAP};
use strata_mcp::{Api, AskOptions, Model, Options, Server};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};

/// What Claude Code shows of a tool description or the instructions, in bytes.
const CLIENT_CUT_BYTES: usize = 2048;

/// Past this many characters Claude Code spills a result without the `_meta` entry.
const SPILL_CHARS: u64 = 50_000;

fn options() -> Options {
    Options {
        ask: AskOptions {
            // Never asked here: `ask` is listed, so its description is measured too.
            local: Some(Model::new(Api::OpenAi, "http://127.0.0.1:9/v1", "local").unwrap()),
            ..AskOptions::default()
        },
        ..Options::default()
    }
}

fn create(dir: &Path) -> Store {
    Store::open(
        dir,
        OpenOptions {
            create: true,
            ..OpenOptions::default()
        },
    )
    .unwrap()
}

/// A database with no pack: the default instructions.
fn no_pack(dir: &Path) {
    let store = create(dir);
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    let spec = DumpSpec {
        label: "x.edges.tsv".into(),
        format: Format::Edges,
        relation: None,
        unit: None,
        checkout: None,
    };
    batch
        .read_dump("app\tIMPORTS\tapi\n".as_bytes(), &spec)
        .unwrap();
    batch.commit().unwrap();
}

/// The bundled example: its pack, module and dumps.
fn example(dir: &Path) {
    let store = create(dir);
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    for f in strata_fixtures::example::write_example(dir).unwrap() {
        let format = Format::from_path(&f).unwrap();
        let relation = (format == Format::Facts)
            .then(|| f.file_stem().unwrap().to_string_lossy().into_owned());
        let spec = DumpSpec {
            label: f.display().to_string(),
            format,
            relation,
            unit: None,
            checkout: None,
        };
        batch.read_file(&f, &spec).unwrap();
    }
    batch.commit().unwrap();
}

/// A SCIP index of two files, then the bundled `code` pack and module written from it, as
/// `strata ingest` does.
fn code(dir: &Path) {
    const RUN: &str = "t npm demo 1 src/`a.ts`/A#run().";
    const HELPER: &str = "t npm demo 1 src/`b.ts`/helper().";
    let a = support::document(
        "src/a.ts",
        &[
            support::occurrence(1, RUN, 1),
            support::occurrence(2, HELPER, 0),
        ],
    );
    let b = support::document("src/b.ts", &[support::occurrence(0, HELPER, 1)]);
    let mut index = support::metadata("file:///home/me/demo");
    for d in [a, b] {
        index.extend(support::documents_field(&d));
    }
    let store = create(dir);
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    let spec = DumpSpec {
        label: "index.scip".into(),
        format: Format::Scip,
        relation: None,
        unit: None,
        checkout: None,
    };
    batch.read_dump(index.as_slice(), &spec).unwrap();
    batch.commit().unwrap();
    let snap = store.snapshot().unwrap();
    let written = strata_app::code_pack::write(dir, &snap).unwrap();
    assert!(
        matches!(written, strata_app::code_pack::CodePack::Written),
        "{written:?}"
    );
}

fn check(what: &str, make: fn(&Path)) {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    let s = Server::open(dir.path(), options()).unwrap();
    let instructions = s.instructions();
    assert!(
        instructions.len() <= CLIENT_CUT_BYTES,
        "{what}: the instructions have {} bytes:\n{instructions}",
        instructions.len()
    );
    let tools = s.tools();
    assert!(
        tools.iter().any(|t| t.name == "ask"),
        "{what}: ask unlisted"
    );
    let default_budget = Options::default().max_bytes;
    for t in &tools {
        let d = t.description.as_deref().unwrap_or("");
        assert!(
            d.len() <= CLIENT_CUT_BYTES,
            "{what}: {}'s description has {} bytes:\n{d}",
            t.name,
            d.len()
        );
        let declared = t
            .meta
            .as_ref()
            .and_then(|m| m.0.get(MAX_RESULT_SIZE_CHARS))
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(SPILL_CHARS);
        // A page of at most `default_budget` bytes has at most as many characters.
        assert!(
            declared >= default_budget && declared <= MAX_RESULT_SIZE_CHARS_CAP,
            "{what}: {} declares {declared} characters, the budget is {default_budget} bytes",
            t.name
        );
    }
    let longest = tools
        .iter()
        .map(|t| {
            (
                t.description.as_deref().unwrap_or("").len(),
                t.name.as_ref(),
            )
        })
        .max()
        .unwrap();
    eprintln!(
        "{what}: instructions {} bytes, longest description {} ({} bytes), {} tools",
        instructions.len(),
        longest.1,
        longest.0,
        tools.len()
    );
}

#[test]
fn issue28_descriptions_and_instructions_fit_in_2kb_for_every_pack() {
    check("no pack", no_pack);
    check("example pack", example);
    check("code pack", code);
}
