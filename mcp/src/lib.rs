//! Strata's MCP facade, on rmcp: the seed's tools (`query`, `schema`, `explain`, `look`,
//! `values`, `find`, and `ask` when a model is configured), resources (the schema card, the pack, each module's source) and
//! prompts (`explore`, `depends_on`, `used_by`) over a Strata database, with the instructions and tool descriptions written
//! from the database's pack (`strata.toml`), served over stdio or streamable HTTP.
//!
//! The application itself (the store, the pack, the modules, the limits, the snapshot a
//! call reads, every tool's answer) is [`strata_app`]'s [`App`]; this
//! crate is the MCP adapter over it: the rmcp handler, the tool table and the arguments'
//! schemas, each call's arguments decoded into the application's typed request, the
//! answers rendered as tool outputs, resources and prompts, and the transports (stdio,
//! streamable HTTP with its guard). A program that does not parse, check or finish is a
//! tool error carrying the engine's text, and the error as data in its structured content;
//! only a malformed request or an unknown tool is a protocol error.
//!
//! What embedders used from here before the application core moved out is re-exported:
//! the pack, the host's hooks, the models, the instructions and the ingest socket.
//!
//! ```
//! use strata_app::BatchOptions;
//! use strata_app::ingest::{DumpFiles, dump_specs, ingest};
//! use strata_eval::Cancel;
//! use strata_mcp::{Options, Server};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let dump = dir.path().join("x.edges.tsv");
//! std::fs::write(&dump, "app\tIMPORTS\tapi\n").unwrap();
//! let db = dir.path().join("db");
//! let specs = dump_specs(&DumpFiles { files: vec![dump], ..DumpFiles::default() }).unwrap();
//! ingest(&db, &specs, BatchOptions::default(), |_, _| {}, || {}).unwrap();
//!
//! let server = Server::open(&db, Options::default()).unwrap();
//! let args = serde_json::json!({ "program": "imports(?a, ?b) => ?b" });
//! let out = server.call("query", args.as_object().cloned(), &Cancel::new()).unwrap();
//! assert!(!out.is_error);
//! assert!(out.text.starts_with("columns: b\n1. api\n"));
//! ```

pub mod args;
mod completion;
#[doc(hidden)]
pub mod fuzz;
mod handler;
pub mod protocol;
pub mod resources;
pub mod serve;
pub mod server;

#[cfg(unix)]
pub use strata_app::ingest_socket;
pub use strata_app::{ask, find, host, instructions, model, pack};

pub use handler::{Called, PROGRESS_EVERY, ProgressSink};
pub use serve::{HttpOptions, ServeError, run_http, run_stdio, serve_http, serve_stdio};
pub use server::{Options, Server, ServerBuilder, ServerError, ToolOutput};
pub use strata_app::ask::{AskOptions, Language, Mode, ModelFlags};
pub use strata_app::host::{CallContext, HostArguments, HostError, HostOptions, Run, Source};
pub use strata_app::instructions::{agent_line, instructions};
pub use strata_app::model::{Api, Model, ModelError};
pub use strata_app::pack::{CypherExample, Example, Pack, PackError};
pub use strata_app::{App, CallError};
