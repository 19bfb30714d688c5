//! The server: a store, its pack and limits, and the tools' handlers. Each handler reads one
//! snapshot and answers a [`ToolOutput`]; a program that does not parse, check or finish is
//! an output with `is_error` set, carrying the engine's text (caret and fix).
//!
//! This module owns the [`Server`] itself (building it, its accessors, dispatching a call);
//! the rest lives in its children: the tool table (`tools`), a call's context, base and
//! prepared program (`call`), the limits (`limits`), what a call answers (`output`),
//! the errors (`error`), the builder (`builder`), and one module per tool's handler.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::model::{JsonObject, Tool};
use strata_eval::Vocabulary;
use strata_eval::budget::Cancel;
use strata_eval::query::Query;
use strata_store::{OpenOptions, Store, StoreError};

use crate::find;
use crate::host::HostOptions;
use crate::instructions;
use crate::pack::Pack;

mod builder;
mod call;
mod cypher_tool;
mod error;
mod find_tool;
mod limits;
mod output;
mod query_tool;
mod schema_tool;
mod tools;
mod values_tool;

pub use builder::ServerBuilder;
use call::Base;
pub(crate) use call::Call;
pub use error::ServerError;
pub use find_tool::{FIND_LIMIT, FIND_MAX_CHARS};
pub use limits::Options;
use limits::lower;
use output::query_error;
pub use output::{ToolOutput, snapshot_json};
pub use schema_tool::LOOK_SAMPLE;
use schema_tool::did_you_mean;
use tools::TOOLS;
pub use values_tool::VALUES_LIMIT;

/// An MCP server over one database. Cheap to clone: clones share the store, the pack and
/// the cached vocabulary.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    pack: Pack,
    options: Options,
    modules_dir: Option<PathBuf>,
    instructions: String,
    tools: Vec<Tool>,
    host: HostOptions,
    /// The host's vocabulary, once resolved.
    host_vocab: Mutex<Option<Arc<Vocabulary>>>,
    /// The vocabulary of the last snapshot seen, by its batch sequence number.
    vocab: Mutex<Option<(u64, Arc<Vocabulary>)>>,
    /// The dictionary in memory for `find`, read on the first call and extended with the
    /// texts later batches add.
    finder: Mutex<Option<Arc<find::Index>>>,
}

impl Server {
    /// Opens the database in `dir` and its pack (`strata.toml`), then builds the server.
    pub fn open(dir: &Path, options: Options) -> Result<Server, ServerError> {
        let store = Store::open(dir, OpenOptions::default()).map_err(StoreError::from)?;
        let pack = Pack::load(dir)?;
        Server::new(store, pack, options)
    }

    /// Builds a server over `store` with `pack` and `options`. Loads the modules under
    /// the database's `modules/` folder, and refuses a pack whose examples do not check.
    pub fn new(store: Store, pack: Pack, options: Options) -> Result<Server, ServerError> {
        Server::with_host(store, pack, options, HostOptions::default())
    }

    /// A builder for a server over `store` with `pack`: the limits and the host's hooks
    /// ([`HostOptions`]).
    pub fn builder(store: Store, pack: Pack) -> ServerBuilder {
        ServerBuilder {
            store,
            pack,
            options: Options::default(),
            host: HostOptions::default(),
        }
    }

    /// Builds a server over `store` with `pack`, `options` and the host's hooks. Without
    /// a host vocabulary, loads the modules under the database's `modules/` folder and
    /// refuses a pack whose examples do not check; with one, both wait for the first call
    /// that needs the vocabulary. Refuses host arguments whose names clash with a tool's
    /// own.
    pub fn with_host(
        store: Store,
        pack: Pack,
        options: Options,
        host: HostOptions,
    ) -> Result<Server, ServerError> {
        if options.limit == 0 {
            return Err(ServerError::Options(
                "the row limit must be at least 1".to_owned(),
            ));
        }
        if options.timeout.is_zero() {
            return Err(ServerError::Options(
                "the timeout must be longer than zero".to_owned(),
            ));
        }
        let modules = store.dir().join("modules");
        let modules_dir = modules.is_dir().then_some(modules);
        let vocab = if host.vocabulary.is_none() {
            let snap = store.snapshot().map_err(StoreError::from)?;
            let vocab = Arc::new(Vocabulary::load(&snap, modules_dir.as_deref())?);
            check_examples(&pack, &vocab)?;
            Some((snap.seq(), vocab))
        } else {
            None
        };
        // The Cypher graph, when the vocabulary is known now: a pack mapping that doesn't
        // fit it is refused here, as examples that don't check are.
        let graph = match &vocab {
            Some((_, v)) => Some(
                strata_eval::cypher::Graph::derive(v, &pack.cypher.mapping())
                    .map_err(ServerError::Options)?
                    .summary(),
            ),
            None => None,
        };
        let tools = tools::list(&pack, &options, &host, graph.as_deref())?;
        Ok(Server {
            inner: Arc::new(Inner {
                instructions: instructions::with_cypher(
                    &instructions::instructions(&pack),
                    graph.as_deref(),
                ),
                store,
                pack,
                options,
                modules_dir,
                tools,
                host,
                host_vocab: Mutex::new(None),
                vocab: Mutex::new(vocab),
                finder: Mutex::new(None),
            }),
        })
    }

    /// The pack the server was built with.
    pub fn pack(&self) -> &Pack {
        &self.inner.pack
    }

    /// The server's limits.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// The host's hooks the server was built with.
    pub fn host(&self) -> &HostOptions {
        &self.inner.host
    }

    /// The store the server reads.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The instructions an agent reads on connecting.
    pub fn instructions(&self) -> &str {
        &self.inner.instructions
    }

    /// The line for an agent's own instructions.
    pub fn agent_line(&self) -> String {
        instructions::cypher_agent_line(&instructions::agent_line(&self.inner.pack))
    }

    /// Every tool, as `tools/list` answers them.
    pub fn tools(&self) -> &[Tool] {
        &self.inner.tools
    }

    /// One tool by name.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.inner.tools.iter().find(|t| t.name == name)
    }

    /// Calls tool `name` with `arguments` (none: `{}`), stoppable through `cancel`. `None`
    /// when no tool has that name (a protocol error, not a tool error).
    pub fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        cancel: &Cancel,
    ) -> Option<ToolOutput> {
        let spec = TOOLS.iter().find(|t| t.name == name)?;
        let mut arguments = arguments.unwrap_or_default();
        let call = match self.begin(spec.name, &mut arguments) {
            Ok(c) => c,
            Err(e) => return Some(ToolOutput::error(e)),
        };
        Some((spec.run)(
            self,
            &call,
            serde_json::Value::Object(arguments),
            cancel,
        ))
    }
}

/// Checks every example of `pack` against `vocab`, and compiles every Cypher example over
/// the graph the pack maps on it.
fn check_examples(pack: &Pack, vocab: &Vocabulary) -> Result<(), ServerError> {
    for e in &pack.examples {
        if let Err(err) = Query::prepare(vocab, &e.program, &[]) {
            return Err(ServerError::Example {
                question: e.question.clone(),
                message: err.to_string(),
            });
        }
    }
    if pack.cypher_examples.is_empty() {
        return Ok(());
    }
    let graph = strata_eval::cypher::Graph::derive(vocab, &pack.cypher.mapping())
        .map_err(ServerError::Options)?;
    for e in &pack.cypher_examples {
        let refused = |message: String| ServerError::CypherExample {
            question: e.question.clone(),
            message,
        };
        if graph.is_empty() {
            return Err(refused(
                "the database has no Cypher graph (no node labels and no relationship types); \
                 map one with [[cypher.labels]] and [[cypher.types]], or ingest nodes and edges \
                 dumps"
                    .to_owned(),
            ));
        }
        strata_eval::cypher::prepare(vocab, &graph, &e.query, &[])
            .map_err(|err| refused(err.to_string()))?;
    }
    Ok(())
}
