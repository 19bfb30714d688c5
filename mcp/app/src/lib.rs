//! Strata's application core: one database directory (the store, its pack `strata.toml`,
//! its `modules/`) answering typed requests, for the command line and the MCP server
//! alike, which only parse arguments and choose a rendering.
//!
//! An [`App`] holds the store (shared: clones are cheap), the pack, the [`Options`] (row
//! limit, work cap, timeout; a request may lower them, never raise them) and the host's
//! hooks ([`host`]). Each request reads one snapshot, opening only the tiers holding the
//! relations its program reads (BaseFor), checked against the vocabulary of a snapshot of
//! the same batch (see [`App::base_snapshot`]). The requests, each answering a typed, serialisable
//! response with one text and one JSON rendering ([`Render`]):
//!
//! | request | method | response |
//! |---|---|---|
//! | [`QueryRequest`] | [`App::query`] | [`QueryResponse`] |
//! | [`CypherRequest`] | [`App::cypher`] | [`CypherResponse`] |
//! | [`ExplainRequest`] | [`App::explain`] | [`ExplainResponse`] |
//! | [`SchemaRequest`] | [`App::schema`] | [`SchemaResponse`] |
//! | [`LookRequest`] | [`App::look`] | [`LookResponse`] |
//! | [`ValuesRequest`] | [`App::values`] | [`ValuesResponse`] |
//! | [`FindRequest`] | [`App::find`] | [`FindResponse`] |
//! | [`AskRequest`] | [`App::ask`] | [`AskResponse`] |
//!
//! A request that gets no answer is a [`CallError`]: its text is what the agent or user
//! reads (the engine's caret and fix for a program), [`CallError::json`] the same as data.
//! Binds are parsed by one set of rules ([`binds_from_flags`], [`binds_from_json`]). Dumps are loaded by [`ingest`]; while
//! a server holds a database, [`ingest_socket`] (Unix) carries batches to it.
//!
//! ```
//! use strata_app::{App, Call, Options, Page, QueryRequest, Render};
//! use strata_app::pack::Pack;
//! use strata_eval::Cancel;
//! use strata_store::dump::{DumpSpec, Format};
//! use strata_store::{BatchOptions, OpenOptions, Store};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), OpenOptions { create: true, ..Default::default() }).unwrap();
//! let mut batch = store.batch(BatchOptions::default()).unwrap();
//! let spec = DumpSpec { label: "x.edges.tsv".into(), format: Format::Edges, relation: None, unit: None, checkout: None };
//! batch.read_dump("app\tIMPORTS\tapi\n".as_bytes(), &spec).unwrap();
//! batch.commit().unwrap();
//!
//! let app = App::new(store, Pack::default(), Options::default()).unwrap();
//! let request = QueryRequest {
//!     program: "imports(?a, ?b) => ?b".into(),
//!     binds: Vec::new(),
//!     page: Page::default(),
//! };
//! let out = app.query(&Call::plain("query"), &request, &Cancel::new()).unwrap();
//! assert_eq!(out.answer.answer.total, 1);
//! assert!(out.text().starts_with("columns: b\n1. api\n"));
//! assert_eq!(out.json()["total"], 1);
//! ```

pub mod admission;
mod app;
pub mod ask;
mod base;
mod bind;
pub mod code_pack;
mod cypher;
pub mod deadline;
mod demand;
mod error;
pub mod find;
mod fit;
#[doc(hidden)]
pub mod fuzz;
pub mod host;
pub mod ingest;
#[cfg(unix)]
pub mod ingest_socket;
pub mod instructions;
mod links;
mod machine;
pub mod maintain;
pub mod model;
mod modules;
mod names;
mod options;
pub mod pack;
mod query;
pub mod read;
mod regular;
mod render;
mod resources;
mod schema;
mod source;
mod suggest;
mod values;

pub use app::App;
pub use ask::{AskError, AskOptions, AskRequest, AskResponse, Language, Mode, ModelFlags};
pub use base::Call;
pub use bind::{BindError, binds_from_flags, binds_from_json};
pub use cypher::{CypherRequest, CypherResponse};
pub use error::{CallError, OpenError, OptionsError};
pub use find::{FIND_LIMIT, FIND_MAX_CHARS, FindError, FindRequest, FindResponse};
pub use fit::{Fitted, Measure};
pub use host::{CallContext, HostArguments, HostError, HostOptions, Run, Source};
pub use machine::{
    BUDGET_MIN, MEMORY_UNKNOWN, MemoryReadings, RESIDENT_ROOM, VIRTUAL_ROOM, available_memory,
    default_max_memory, memory_budget,
};
pub use model::{Api, Model, ModelError};
pub use options::{Options, Page};
pub use pack::{CypherExample, Example, Pack, PackError};
pub use query::{ExplainRequest, ExplainResponse, QueryRequest, QueryResponse, RunInfo};
pub use render::{AnswerPage, Render, SnapshotInfo};
pub use resources::{
    MODULE_URI_PREFIX, PACK_URI, Prompts, ResourceError, ResourceInfo, ResourceText, SCHEMA_URI,
};
pub use schema::{LOOK_SAMPLE, LookRequest, LookResponse, SchemaRequest, SchemaResponse};
pub use values::{VALUES_LIMIT, ValuesError, ValuesRequest, ValuesResponse};

// What the adapters' flags set and the server is built over, from the store, so that an
// adapter names only the core (`cli/tests/layering.rs`).
pub use strata_store::layout::BASE_FILE;
pub use strata_store::{BUFFER_FACTS, BatchOptions, Store, quiet_caught_panics};
