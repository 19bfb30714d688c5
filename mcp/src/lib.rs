//! Strata's MCP facade, on rmcp: the seed's tools (`query`, `schema`, `explain`, `look`,
//! `values`, `find`, and `ask` when a model is configured), resources (the schema card, the pack, each module's source) and
//! prompts (`explore`, `depends_on`, `used_by`) over a Strata database, with the instructions and tool descriptions written
//! from the database's pack (`strata.toml`), served over stdio or streamable HTTP.
//!
//! A [`Server`] holds the store (shared: clones are cheap), the pack and the [`Options`]
//! (row limit, work cap, timeout; a call may lower them, never raise them). Each call reads
//! one snapshot, opening only the tiers holding the relations its program reads. A program
//! that does not parse, check or finish is a tool error carrying the engine's text; only
//! a malformed request or an unknown tool is a protocol error.
//!
//! While a server runs, [`ingest_socket`] (Unix) takes batches from `strata ingest` over
//! `DB/strata.sock` and commits them into the store the server holds.
//!
//! ```
//! use strata_eval::budget::Cancel;
//! use strata_mcp::{Options, Pack, Server};
//! use strata_store::dump::{DumpSpec, Format};
//! use strata_store::{BatchOptions, OpenOptions, Store};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), OpenOptions { create: true, ..Default::default() }).unwrap();
//! let mut batch = store.batch(BatchOptions::default()).unwrap();
//! let spec = DumpSpec { label: "x.edges.tsv".into(), format: Format::Edges, relation: None, unit: None };
//! batch.read_dump("app\tIMPORTS\tapi\n".as_bytes(), &spec).unwrap();
//! batch.commit().unwrap();
//!
//! let server = Server::new(store, Pack::default(), Options::default()).unwrap();
//! let args = serde_json::json!({ "program": "imports(?a, ?b) => ?b" });
//! let out = server.call("query", args.as_object().cloned(), &Cancel::new()).unwrap();
//! assert!(!out.is_error);
//! assert!(out.text.starts_with("columns: b\n1. api\n"));
//! ```

pub mod args;
pub mod ask;
pub mod find;
mod handler;
pub mod host;
#[cfg(unix)]
pub mod ingest_socket;
pub mod instructions;
pub mod model;
pub mod pack;
pub mod resources;
pub mod serve;
pub mod server;

pub use ask::{AskOptions, Language, Mode, ModelFlags};
pub use host::{CallContext, HostArguments, HostOptions, Run, Source};
pub use instructions::{agent_line, instructions};
pub use model::{Api, Model, ModelError};
pub use pack::{CypherExample, Example, Pack, PackError};
pub use serve::{HttpOptions, ServeError, run_http, run_stdio, serve_http, serve_stdio};
pub use server::{Options, Server, ServerBuilder, ServerError, ToolOutput};
