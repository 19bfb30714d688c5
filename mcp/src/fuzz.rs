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
use strata_app::ingest::{DumpError, DumpFiles, IngestError, dump_specs, ingest};
use strata_app::{BatchOptions, Options};
use strata_eval::Cancel;

use crate::server::{Server, ServerError};

/// The tools the target calls, by the first byte of its input (`ask` is left out: it
/// calls models).
pub const TOOLS: [&str; 7] = [
    "query", "cypher", "explain", "schema", "look", "values", "find",
];

/// Why the fuzz server could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A file is not a dump the ingest can read.
    #[error("cannot read a file as a dump")]
    Dump(#[from] DumpError),
    /// The batch did not ingest or commit.
    #[error("cannot ingest the dumps")]
    Ingest(#[from] IngestError),
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
    let specs = dump_specs(&DumpFiles {
        files: files.to_vec(),
        ..DumpFiles::default()
    })?;
    ingest(dir, &specs, BatchOptions::default(), |_, _| {}, || {})?;
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
