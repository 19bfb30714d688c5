//! Fuzz target: MCP tool arguments. Arbitrary bytes decoded as a call's JSON arguments the
//! way the server decodes them (strictly, into the tool's argument struct, then the
//! application's typed request) and answered over a small database: an output or an error
//! output, never a panic, a hang or unbounded growth.
//!
//! Both runners call this: the cargo-fuzz target of `fixtures/fuzz` on nightly and the
//! bounded property run of `mcp/tests/fuzz.rs` on stable (see `docs/testing.md`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::JsonObject;
use strata_app::Options;
use strata_eval::Cancel;
use strata_store::dump::{self, DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};

use crate::server::{Server, ServerError};

/// The tools the target calls, by the first byte of its input (`ask` is left out: it
/// calls models).
pub const TOOLS: [&str; 7] = [
    "query", "cypher", "explain", "schema", "look", "values", "find",
];

/// Why the fuzz server could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The database did not open.
    #[error("cannot open the database")]
    Open(#[from] strata_store::OpenError),
    /// A dump did not ingest.
    #[error("cannot ingest a dump")]
    Ingest(#[from] strata_store::IngestError),
    /// The batch did not commit.
    #[error("cannot commit the batch")]
    Commit(#[from] strata_store::CommitError),
    /// A dump's format is not known from its name.
    #[error("{0}: not a dump")]
    NotADump(PathBuf),
    /// The server did not build.
    #[error("cannot build the server")]
    Server(#[from] ServerError),
}

/// The limits of the fuzz server: small enough that no call runs long.
pub fn options() -> Options {
    Options {
        limit: 20,
        max_work: Some(200_000),
        timeout: Duration::from_secs(2),
        threads: Some(1),
        ..Options::default()
    }
}

/// A server over a database created in `dir` from the dumps `files` (in `dir`, beside the
/// pack, as `strata_fixtures::example::write_example` writes them), with [`options`].
pub fn server(dir: &Path, files: &[PathBuf]) -> Result<Server, SetupError> {
    let store = Store::open(
        dir,
        OpenOptions {
            create: true,
            ..OpenOptions::default()
        },
    )?;
    let mut batch = store.batch(BatchOptions::default())?;
    for f in files {
        let format = Format::from_path(f).ok_or_else(|| SetupError::NotADump(f.clone()))?;
        let spec = DumpSpec {
            label: f.display().to_string(),
            format,
            relation: dump::facts_relation(f).filter(|_| format == Format::Facts),
            unit: None,
        };
        batch.read_file(f, &spec)?;
    }
    batch.commit()?;
    drop(store);
    Ok(Server::open(dir, options())?)
}

/// Calls the tool the first byte of `data` picks (of [`TOOLS`]) with the rest as its JSON
/// arguments; input that is not a JSON object is no call.
pub fn tool_call(server: &Server, data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(arguments) = serde_json::from_slice::<JsonObject>(rest) else {
        return;
    };
    let name = TOOLS[usize::from(pick) % TOOLS.len()];
    if let Some(out) = server.call(name, Some(arguments), &Cancel::new()) {
        assert!(!out.text.is_empty(), "{name}: an empty output");
    }
}
