//! The server: a store, its pack and limits, and the tools' handlers. Each handler reads one
//! snapshot and answers a [`ToolOutput`]; a program that does not parse, check or finish is
//! an output with `is_error` set, carrying the engine's text (caret and fix).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde::de::DeserializeOwned;
use strata_eval::budget::Cancel;
use strata_eval::query::{Query, QueryError, RunOptions};
use strata_eval::witness::Node;
use strata_eval::{Bind, FactSource, RelationKind, Vocabulary};
use strata_store::layout::DEFAULT_TIER;
use strata_store::{OpenOptions, Snapshot, Store};

use crate::args::{self, ExplainArgs, FindArgs, LookArgs, QueryArgs, SchemaArgs, ValuesArgs};
use crate::find;
use crate::host::{
    BaseFn, BaseForFn, CallContext, HostArguments, HostOptions, Run, Source, VocabularyFn,
};
use crate::instructions;
use crate::pack::{Pack, PackError};

/// How many values `values` answers when the call does not say.
pub const VALUES_LIMIT: u64 = 20;

/// How many matches `find` answers when the call does not say.
pub const FIND_LIMIT: u64 = 10;

/// The longest name `find` takes, in characters.
pub const FIND_MAX_CHARS: usize = 1000;

/// How many sample facts `look` shows of a stored relation.
pub const LOOK_SAMPLE: usize = 5;

/// The server's limits: a call may ask for less, never more.
#[derive(Clone, Debug)]
pub struct Options {
    /// The most rows a call answers.
    pub limit: u64,
    /// The most work (candidate tuples examined) a call may spend; `None`: no cap.
    pub max_work: Option<u64>,
    /// The longest a call may take.
    pub timeout: Duration,
    /// Worker threads per evaluation (`None`: the engine's default).
    pub threads: Option<usize>,
    /// The models `ask` translates questions with; without one the tool is not listed.
    pub ask: crate::ask::AskOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            limit: 100,
            max_work: None,
            timeout: Duration::from_secs(30),
            threads: None,
            ask: crate::ask::AskOptions::default(),
        }
    }
}

/// Why a server could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The database could not be opened or read.
    #[error(transparent)]
    Store(#[from] strata_store::StoreError),
    /// The pack could not be read.
    #[error(transparent)]
    Pack(#[from] PackError),
    /// The modules do not load or check.
    #[error(transparent)]
    Vocab(#[from] strata_eval::VocabError),
    /// An example of the pack does not check against the database.
    #[error("strata.toml: the example \"{question}\" does not check:\n{message}")]
    Example {
        /// The example's question.
        question: String,
        /// The engine's error, caret and fix.
        message: String,
    },
    /// A Cypher example of the pack does not compile against the database's graph.
    #[error("strata.toml: the Cypher example \"{question}\" does not compile:\n{message}")]
    CypherExample {
        /// The example's question.
        question: String,
        /// The Cypher front end's error, caret and fix.
        message: String,
    },
    /// The limits make no sense.
    #[error("{0}")]
    Options(String),
}

/// What a tool call answers: text, maybe structured content, and whether it is an error
/// the agent should read and fix.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    /// The text content.
    pub text: String,
    /// The structured content (a JSON object), when the tool gives one.
    pub structured: Option<serde_json::Value>,
    /// Whether this is a tool error (`isError: true`).
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful answer of text alone.
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            structured: None,
            is_error: false,
        }
    }

    /// A tool error carrying `text`.
    pub fn error(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            structured: None,
            is_error: true,
        }
    }
}

/// One tool: its name, title, description (from the pack), input schema and handler.
/// Adding a tool (such as `cypher`) is one more entry of [`TOOLS`].
struct ToolSpec {
    name: &'static str,
    title: &'static str,
    description: fn(&Pack) -> String,
    schema: fn() -> Result<Arc<JsonObject>, String>,
    run: fn(&Server, &Call, serde_json::Value, &Cancel) -> ToolOutput,
}

/// One call as the host hooks see it: its context and what `prepare` answered.
#[derive(Default)]
pub(crate) struct Call {
    ctx: CallContext,
    run: Run,
}

impl Call {
    /// A call of `tool` with no host arguments.
    pub(crate) fn plain(tool: &str) -> Call {
        Call {
            ctx: CallContext {
                tool: tool.to_owned(),
                host_args: JsonObject::new(),
            },
            run: Run::default(),
        }
    }
}

/// The base a program runs on: a snapshot of the store, or a host's source.
enum Base {
    Store(Box<Snapshot>),
    Host(Source),
}

impl Base {
    fn source(&self) -> &dyn FactSource {
        match self {
            Base::Store(s) => s.as_ref(),
            Base::Host(h) => h.as_ref(),
        }
    }

    /// The snapshot the answer read, for a store's base.
    fn snapshot_json(&self) -> Option<serde_json::Value> {
        match self {
            Base::Store(s) => Some(snapshot_json(s)),
            Base::Host(_) => None,
        }
    }
}

mod cypher_tool;

const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "query",
        title: "Run a Datalog program",
        description: instructions::query_description,
        schema: rmcp::handler::server::common::schema_for_input::<QueryArgs>,
        run: run_query,
    },
    ToolSpec {
        name: "schema",
        title: "Relations and modules",
        description: instructions::schema_description,
        schema: rmcp::handler::server::common::schema_for_input::<SchemaArgs>,
        run: run_schema,
    },
    ToolSpec {
        name: "explain",
        title: "Where a program's work went",
        description: instructions::explain_description,
        schema: rmcp::handler::server::common::schema_for_input::<ExplainArgs>,
        run: run_explain,
    },
    ToolSpec {
        name: "look",
        title: "Describe a relation or module",
        description: instructions::look_description,
        schema: rmcp::handler::server::common::schema_for_input::<LookArgs>,
        run: run_look,
    },
    ToolSpec {
        name: "values",
        title: "Distinct values of an argument",
        description: instructions::values_description,
        schema: rmcp::handler::server::common::schema_for_input::<ValuesArgs>,
        run: run_values,
    },
    ToolSpec {
        name: "find",
        title: "What a name may stand for",
        description: instructions::find_description,
        schema: rmcp::handler::server::common::schema_for_input::<FindArgs>,
        run: run_find,
    },
    ToolSpec {
        name: "cypher",
        title: "Ask in Cypher",
        description: |p| instructions::cypher_description(p, None),
        schema: rmcp::handler::server::common::schema_for_input::<crate::args::CypherArgs>,
        run: run_cypher,
    },
    ToolSpec {
        name: crate::ask::TOOL,
        title: "Answer a question in plain language",
        description: crate::ask::description,
        schema: rmcp::handler::server::common::schema_for_input::<crate::ask::AskArgs>,
        run: crate::ask::run,
    },
];

fn run_cypher(s: &Server, k: &Call, v: serde_json::Value, c: &Cancel) -> ToolOutput {
    with_args("cypher", v, |a| s.cypher_in(k, &a, c))
}

fn run_query(s: &Server, k: &Call, v: serde_json::Value, c: &Cancel) -> ToolOutput {
    with_args("query", v, |a| s.query_in(k, &a, c))
}

fn run_schema(s: &Server, k: &Call, v: serde_json::Value, _: &Cancel) -> ToolOutput {
    with_args("schema", v, |a| s.schema_in(k, &a))
}

fn run_explain(s: &Server, k: &Call, v: serde_json::Value, c: &Cancel) -> ToolOutput {
    with_args("explain", v, |a| s.explain_in(k, &a, c))
}

fn run_look(s: &Server, k: &Call, v: serde_json::Value, _: &Cancel) -> ToolOutput {
    with_args("look", v, |a| s.look_in(k, &a))
}

fn run_values(s: &Server, k: &Call, v: serde_json::Value, c: &Cancel) -> ToolOutput {
    with_args("values", v, |a| s.values_in(k, &a, c))
}

fn run_find(s: &Server, k: &Call, v: serde_json::Value, _: &Cancel) -> ToolOutput {
    with_args("find", v, |a| s.find_in(k, &a))
}

/// Decodes a call's arguments strictly; what does not fit the schema is a tool error.
fn with_args<A: DeserializeOwned>(
    tool: &str,
    value: serde_json::Value,
    f: impl FnOnce(A) -> ToolOutput,
) -> ToolOutput {
    match serde_json::from_value::<A>(value) {
        Ok(a) => f(a),
        Err(e) => ToolOutput::error(format!(
            "{tool}: the arguments do not fit the tool's schema: {e}"
        )),
    }
}

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

/// A prepared program and the snapshot it runs on.
struct Prepared {
    query: Query,
    base: Base,
    tiers: Vec<String>,
}

impl Server {
    /// Opens the database in `dir` and its pack (`strata.toml`), then builds the server.
    pub fn open(dir: &Path, options: Options) -> Result<Server, ServerError> {
        let store = Store::open(dir, OpenOptions::default())?;
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
            let snap = store.snapshot()?;
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
        let mut tools = Vec::with_capacity(TOOLS.len());
        for t in TOOLS {
            // `ask` is listed only with a model to ask.
            if t.name == crate::ask::TOOL && !options.ask.offered() {
                continue;
            }
            let mut schema = (t.schema)()
                .map_err(|e| ServerError::Options(format!("the {} tool's schema: {e}", t.name)))?;
            one_line_descriptions(Arc::make_mut(&mut schema));
            if let Some(h) = &host.arguments {
                add_host_arguments(t.name, Arc::make_mut(&mut schema), h)
                    .map_err(ServerError::Options)?;
            }
            let description = match t.name {
                "cypher" => instructions::cypher_description(&pack, graph.as_deref()),
                _ => (t.description)(&pack),
            };
            tools.push(
                Tool::new(t.name, description, schema)
                    .with_title(t.title)
                    .with_annotations(
                        ToolAnnotations::with_title(t.title)
                            .read_only(true)
                            .destructive(false)
                            .idempotent(true)
                            // `ask` reaches a model outside the database.
                            .open_world(t.name == crate::ask::TOOL),
                    ),
            );
        }
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

    /// Takes the host arguments out of a call's and asks the host's `prepare` for its run.
    fn begin(&self, tool: &str, arguments: &mut JsonObject) -> Result<Call, String> {
        let mut call = Call::plain(tool);
        if let Some(h) = &self.inner.host.arguments {
            call.ctx.host_args = h.take(tool, arguments)?;
            call.run = (h.prepare)(&call.ctx).map_err(|e| format!("{tool}: {e}"))?;
        }
        Ok(call)
    }

    /// Whether a call reads anything the host gives (a base or a vocabulary).
    fn hosted(&self, call: &Call) -> bool {
        let h = &self.inner.host;
        call.run.base.is_some()
            || call.run.base_for.is_some()
            || call.run.vocabulary.is_some()
            || h.base.is_some()
            || h.base_for.is_some()
            || h.vocabulary.is_some()
    }

    /// Whether a call's base is the host's rather than the store's.
    fn host_base(&self, call: &Call) -> bool {
        let h = &self.inner.host;
        call.run.base.is_some()
            || call.run.base_for.is_some()
            || h.base.is_some()
            || h.base_for.is_some()
    }

    /// The host's vocabulary: resolved on the first call, kept once it resolves and its
    /// pack's examples check against it, asked again after a failure.
    fn host_vocabulary(&self, resolve: &VocabularyFn) -> Result<Arc<Vocabulary>, String> {
        let mut cached = self
            .inner
            .host_vocab
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(v) = cached.as_ref() {
            return Ok(v.clone());
        }
        let v = Arc::new(resolve().map_err(|e| format!("the vocabulary: {e}"))?);
        check_examples(&self.inner.pack, &v).map_err(|e| e.to_string())?;
        *cached = Some(v.clone());
        Ok(v)
    }

    /// The vocabulary a call reads: its run's, the host's, or the store's.
    pub(crate) fn call_vocabulary(
        &self,
        call: &Call,
        tool: &str,
    ) -> Result<Arc<Vocabulary>, String> {
        if let Some(v) = &call.run.vocabulary {
            return Ok(v.clone());
        }
        if let Some(f) = &self.inner.host.vocabulary {
            return self.host_vocabulary(f).map_err(|e| format!("{tool}: {e}"));
        }
        self.base_snapshot(tool).map(|(_, v)| v)
    }

    /// The base a call reads for a program reading `relations`: the run's `base_for`, then
    /// its `base`, then the host's `base_for`, then its `base`, else a snapshot of the
    /// store with the tiers holding them open.
    fn call_base(
        &self,
        call: &Call,
        tool: &str,
        relations: &[String],
    ) -> Result<(Base, Vec<String>), String> {
        let err = |e: String| format!("{tool}: {e}");
        let h = &self.inner.host;
        let host = |s: Source| Ok((Base::Host(s), Vec::new()));
        if let Some(f) = &call.run.base_for {
            return host(f(&call.ctx, relations).map_err(err)?);
        }
        if let Some(s) = &call.run.base {
            return host(s.clone());
        }
        if let Some(f) = &h.base_for {
            return host(f(&call.ctx, relations).map_err(err)?);
        }
        if let Some(f) = &h.base {
            return host(f(&call.ctx).map_err(err)?);
        }
        let store = &self.inner.store;
        let mut tiers = store
            .tiers_for(relations)
            .map_err(|e| format!("{tool}: {e}"))?;
        if !tiers.iter().any(|t| t == DEFAULT_TIER) {
            tiers.insert(0, DEFAULT_TIER.to_owned());
        }
        let snap = if tiers.len() == 1 {
            store.snapshot()
        } else {
            let names: Vec<&str> = tiers.iter().map(String::as_str).collect();
            store.snapshot_with_tiers(&names)
        }
        .map_err(|e| format!("{tool}: {e}"))?;
        Ok((Base::Store(Box::new(snap)), tiers))
    }

    /// The vocabulary of `snap`: cached while no batch has landed since.
    fn vocabulary(&self, snap: &Snapshot) -> Result<Arc<Vocabulary>, String> {
        let mut cached = self
            .inner
            .vocab
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((seq, v)) = cached.as_ref()
            && *seq == snap.seq()
        {
            return Ok(v.clone());
        }
        let v = Arc::new(
            Vocabulary::load(snap, self.inner.modules_dir.as_deref()).map_err(|e| e.to_string())?,
        );
        *cached = Some((snap.seq(), v.clone()));
        Ok(v)
    }

    /// A snapshot of the base tier with its vocabulary.
    pub(crate) fn base_snapshot(&self, tool: &str) -> Result<(Snapshot, Arc<Vocabulary>), String> {
        let snap = self
            .inner
            .store
            .snapshot()
            .map_err(|e| format!("{tool}: {e}"))?;
        let vocab = match &self.inner.host.vocabulary {
            Some(f) => self.host_vocabulary(f),
            None => self.vocabulary(&snap),
        }
        .map_err(|e| format!("{tool}: {e}"))?;
        Ok((snap, vocab))
    }

    /// Parses and checks `program`, then takes the one snapshot it runs on, with exactly the
    /// tiers holding the relations it reads open (BaseFor).
    fn prepare(
        &self,
        call: &Call,
        tool: &str,
        program: &str,
        binds: &[(String, Bind)],
    ) -> Result<Prepared, String> {
        if self.hosted(call) {
            let vocab = self.call_vocabulary(call, tool)?;
            let query = Query::prepare(&vocab, program, binds).map_err(|e| e.to_string())?;
            let (base, tiers) = self.call_base(call, tool, query.base_relations())?;
            return Ok(Prepared { query, base, tiers });
        }
        let store = &self.inner.store;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (base, vocab) = self.base_snapshot(tool)?;
            let query = Query::prepare(&vocab, program, binds).map_err(|e| e.to_string())?;
            let mut tiers = store
                .tiers_for(query.base_relations())
                .map_err(|e| format!("{tool}: {e}"))?;
            if !tiers.iter().any(|t| t == DEFAULT_TIER) {
                tiers.insert(0, DEFAULT_TIER.to_owned());
            }
            if tiers.len() == 1 {
                return Ok(Prepared {
                    query,
                    base: Base::Store(Box::new(base)),
                    tiers,
                });
            }
            let names: Vec<&str> = tiers.iter().map(String::as_str).collect();
            let snap = store
                .snapshot_with_tiers(&names)
                .map_err(|e| format!("{tool}: {e}"))?;
            // A batch landed between the two: check again against the newer snapshot.
            if snap.seq() == base.seq() || attempt >= 3 {
                return Ok(Prepared {
                    query,
                    base: Base::Store(Box::new(snap)),
                    tiers,
                });
            }
        }
    }

    /// The run options of a call: the server's limits, lowered by the call's.
    fn run_options(&self, call: &Call, limit: u64, max_work: u64, cancel: &Cancel) -> RunOptions {
        let o = &self.inner.options;
        let mut r = RunOptions {
            limit: lower(limit, o.limit),
            ..RunOptions::default()
        };
        r.engine.max_work = match (max_work, o.max_work) {
            (0, cap) => cap,
            (asked, Some(cap)) => Some(asked.min(cap)),
            (asked, None) => Some(asked),
        };
        r.engine.timeout = Some(call.run.timeout.map_or(o.timeout, |t| t.min(o.timeout)));
        r.engine.cancel = cancel.clone();
        if let Some(t) = o.threads {
            r.engine.threads = t.max(1);
        }
        r
    }

    /// `query`: runs a program and answers a page of rows with their witnesses.
    pub fn query(&self, a: &QueryArgs, cancel: &Cancel) -> ToolOutput {
        self.query_in(&Call::plain("query"), a, cancel)
    }

    pub(crate) fn query_in(&self, call: &Call, a: &QueryArgs, cancel: &Cancel) -> ToolOutput {
        let binds = match args::binds("query", &a.bind) {
            Ok(b) => b,
            Err(e) => return ToolOutput::error(e),
        };
        let offset = match a.page_token.trim() {
            "" => 0,
            t => match t.parse::<u64>() {
                Ok(n) => n,
                Err(_) => {
                    return ToolOutput::error(format!(
                        "query: page_token \"{t}\" is not one this server gave; pass the \
                         page_token the last page ended with, or none for the first page"
                    ));
                }
            },
        };
        let p = match self.prepare(call, "query", &a.program, &binds) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e),
        };
        let hint = self.inner.pack.hint.trim();
        let mut options = self.run_options(call, a.limit, a.max_work, cancel);
        options.offset = offset;
        if a.sample > 0 {
            options.limit = options.limit.min(a.sample);
        }
        options.why = a.sample > 0 || !hint.is_empty();
        let out = match p.query.run(p.base.source(), &options) {
            Ok(o) => o,
            Err(e) => return ToolOutput::error(query_error(e)),
        };
        let mut j = out.answer.json();
        if let Some(s) = p.base.snapshot_json() {
            j["snapshot"] = s;
        }
        j["work"] = out.work.into();
        if let Base::Store(_) = p.base {
            j["tiers"] = serde_json::json!(p.tiers);
        }
        if let Some(why) = &out.why {
            j["why"] = format!("{why} matched nothing").into();
        }
        let empty = out.answer.total == 0;
        if empty && !hint.is_empty() {
            j["hint"] = hint.into();
        }
        let text = if a.json {
            serde_json::to_string_pretty(&j).unwrap_or_default()
        } else {
            let mut t = out.answer.text();
            if let Some(why) = &out.why {
                t.push_str(&format!("\nwhy: {why} matched nothing"));
            }
            if empty && !hint.is_empty() {
                t.push_str(&format!("\nhint: {hint}"));
            }
            t
        };
        ToolOutput {
            text,
            structured: Some(j),
            is_error: false,
        }
    }

    /// `explain`: runs a program and answers where its work went.
    pub fn explain(&self, a: &ExplainArgs, cancel: &Cancel) -> ToolOutput {
        self.explain_in(&Call::plain("explain"), a, cancel)
    }

    fn explain_in(&self, call: &Call, a: &ExplainArgs, cancel: &Cancel) -> ToolOutput {
        let binds = match args::binds("explain", &a.bind) {
            Ok(b) => b,
            Err(e) => return ToolOutput::error(e),
        };
        let p = match self.prepare(call, "explain", &a.program, &binds) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e),
        };
        let options = self.run_options(call, 0, a.max_work, cancel);
        let mut report = match p.query.explain(p.base.source(), &options) {
            Ok(r) => r,
            Err(e) => return ToolOutput::error(query_error(e)),
        };
        report.tiers = p.tiers.clone();
        let mut j = report.json();
        if let Some(s) = p.base.snapshot_json() {
            j["snapshot"] = s;
        }
        let mut text = report.text();
        let hint = self.inner.pack.hint.trim();
        if report.rows == 0 && !hint.is_empty() {
            text.push_str(&format!("\nhint: {hint}"));
            j["hint"] = hint.into();
        }
        ToolOutput {
            text,
            structured: Some(j),
            is_error: false,
        }
    }

    /// `schema`: the card, one module's members, one relation's schema, or the pack.
    pub fn schema(&self, a: &SchemaArgs) -> ToolOutput {
        self.schema_in(&Call::plain("schema"), a)
    }

    fn schema_in(&self, call: &Call, a: &SchemaArgs) -> ToolOutput {
        let vocab = match self.call_vocabulary(call, "schema") {
            Ok(v) => v,
            Err(e) => return ToolOutput::error(e),
        };
        let path = a.path.trim();
        if path.is_empty() {
            return ToolOutput::text(strata_eval::schema::card(&vocab));
        }
        if let Some(text) = strata_eval::schema::describe(&vocab, path) {
            return ToolOutput::text(text);
        }
        if path == "data" {
            return ToolOutput::text(self.inner.pack.card());
        }
        if path == "cypher" {
            return self.graph_schema(&vocab);
        }
        ToolOutput::error(format!(
            "schema: nothing is named \"{path}\"{}; call schema with no path for every \
             relation and module",
            did_you_mean(&vocab, path)
        ))
    }

    /// `look`: a relation's or module's schema, and for a stored relation its size and a
    /// few sample facts.
    pub fn look(&self, a: &LookArgs) -> ToolOutput {
        self.look_in(&Call::plain("look"), a)
    }

    fn look_in(&self, call: &Call, a: &LookArgs) -> ToolOutput {
        let hosted = self.hosted(call);
        let (snap, vocab) = if hosted {
            match self.call_vocabulary(call, "look") {
                Ok(v) => (None, v),
                Err(e) => return ToolOutput::error(e),
            }
        } else {
            match self.base_snapshot("look") {
                Ok((s, v)) => (Some(s), v),
                Err(e) => return ToolOutput::error(e),
            }
        };
        let target = a.target.trim();
        let Some(mut text) = strata_eval::schema::describe(&vocab, target) else {
            return ToolOutput::error(format!(
                "look: nothing is named \"{target}\"{}; call schema with no path for every \
                 relation and module",
                did_you_mean(&vocab, target)
            ));
        };
        let is_base = vocab.module_schema(target).is_none()
            && vocab
                .relation(target)
                .is_some_and(|r| r.kind == RelationKind::Base);
        if !is_base {
            return ToolOutput::text(text);
        }
        let base = match snap {
            Some(snap) => match self.look_snapshot(snap, target) {
                Ok(s) => Base::Store(Box::new(s)),
                Err(e) => return ToolOutput::error(e),
            },
            None => match self.call_base(call, "look", &[target.to_owned()]) {
                Ok((b, _)) => b,
                Err(e) => return ToolOutput::error(e),
            },
        };
        match sample_facts(base.source(), target, LOOK_SAMPLE) {
            Ok(facts) if facts.is_empty() => text.push_str("\nno facts"),
            Ok(facts) => {
                text.push_str("\nsample facts:");
                for f in facts {
                    text.push_str("\n  ");
                    text.push_str(&f);
                }
            }
            Err(e) => return ToolOutput::error(format!("look: {e}")),
        }
        ToolOutput::text(text)
    }

    /// `snap`, reopened with the tier holding `target` if it is not the default one.
    fn look_snapshot(&self, snap: Snapshot, target: &str) -> Result<Snapshot, String> {
        let tiers = self
            .inner
            .store
            .tiers_for(&[target.to_owned()])
            .map_err(|e| format!("look: {e}"))?;
        // Read the sample at the same batch as the schema: reopen with the tier if needed.
        if tiers.iter().all(|t| t == DEFAULT_TIER) {
            Ok(snap)
        } else {
            let names: Vec<&str> = tiers.iter().map(String::as_str).collect();
            self.inner
                .store
                .snapshot_with_tiers(&names)
                .map_err(|e| format!("look: {e}"))
        }
    }

    /// `values`: the distinct values of one argument of a relation, through a query.
    pub fn values(&self, a: &ValuesArgs, cancel: &Cancel) -> ToolOutput {
        self.values_in(&Call::plain("values"), a, cancel)
    }

    fn values_in(&self, call: &Call, a: &ValuesArgs, cancel: &Cancel) -> ToolOutput {
        let vocab = match self.call_vocabulary(call, "values") {
            Ok(v) => v,
            Err(e) => return ToolOutput::error(e),
        };
        let program = match values_program(&vocab, a.target.trim()) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e),
        };
        let p = match self.prepare(call, "values", &program, &[]) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e),
        };
        let limit = if a.limit == 0 { VALUES_LIMIT } else { a.limit };
        let mut options = self.run_options(call, limit, 0, cancel);
        options.engine.witnesses = false;
        let out = match p.query.run(p.base.source(), &options) {
            Ok(o) => o,
            Err(e) => return ToolOutput::error(query_error(e)),
        };
        let mut j = out.answer.json();
        j["program"] = program.clone().into();
        if let Some(s) = p.base.snapshot_json() {
            j["snapshot"] = s;
        }
        ToolOutput {
            text: format!("ran: {program}\n{}", out.answer.text()),
            structured: Some(j),
            is_error: false,
        }
    }
}

impl Server {
    /// The dictionary index as of `snap`: read once, then extended with what later batches
    /// added (the dictionary only grows).
    fn find_index(&self, snap: &Snapshot) -> Result<Arc<find::Index>, String> {
        let mut cached = self
            .inner
            .finder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let index = cached.get_or_insert_with(Default::default);
        if index.len() < snap.text_count() {
            Arc::make_mut(index)
                .extend_from(snap)
                .map_err(|e| format!("find: {e}"))?;
        }
        Ok(index.clone())
    }

    /// Reads the dictionary into memory for `find` ahead of its first call; `strata serve`
    /// does this on a thread of its own at startup, so no agent waits for it.
    pub fn warm_find(&self) -> Result<(), String> {
        let snap = self
            .inner
            .store
            .snapshot()
            .map_err(|e| format!("find: {e}"))?;
        self.find_index(&snap).map(|_| ())
    }

    /// `find`: the stored text values a name may stand for, ranked, each with the
    /// relations and columns it appears in and how many rows.
    pub fn find(&self, a: &FindArgs) -> ToolOutput {
        self.find_in(&Call::plain("find"), a)
    }

    fn find_in(&self, call: &Call, a: &FindArgs) -> ToolOutput {
        if self.host_base(call) {
            return ToolOutput::error(
                "find: this server's facts come from its host, and find reads only a Strata \
                 store's dictionary; use values to list what an argument holds",
            );
        }
        let name = a.name.trim();
        if name.is_empty() {
            return ToolOutput::error(
                "find: give a name (a part of one, a misspelled one or its words will do)",
            );
        }
        if name.chars().count() > FIND_MAX_CHARS {
            return ToolOutput::error(format!(
                "find: the name is longer than {FIND_MAX_CHARS} characters; give a part of it"
            ));
        }
        let store = &self.inner.store;
        let snap = match store.snapshot() {
            Ok(s) => s,
            Err(e) => return ToolOutput::error(format!("find: {e}")),
        };
        // Count rows in every tier at the snapshot's batch.
        let mut tiers: Vec<&str> = snap
            .catalog()
            .relations
            .values()
            .map(|m| m.tier.as_str())
            .filter(|t| *t != DEFAULT_TIER)
            .collect();
        tiers.sort_unstable();
        tiers.dedup();
        let snap = if tiers.is_empty() {
            snap
        } else {
            let tiers: Vec<String> = tiers.into_iter().map(str::to_owned).collect();
            let names: Vec<&str> = tiers.iter().map(String::as_str).collect();
            match store.snapshot_with_tiers(&names) {
                Ok(s) => s,
                Err(e) => return ToolOutput::error(format!("find: {e}")),
            }
        };
        let index = match self.find_index(&snap) {
            Ok(i) => i,
            Err(e) => return ToolOutput::error(e),
        };
        let limit = lower(
            if a.limit == 0 { FIND_LIMIT } else { a.limit },
            self.inner.options.limit,
        );
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        // Keep spares for texts no live row holds any more.
        let keep = limit.saturating_mul(4).saturating_add(32);
        let (ranked, total) = index.search(name, snap.text_count(), keep);
        let mut matches = Vec::new();
        let mut text = String::new();
        for m in ranked {
            if matches.len() >= limit {
                break;
            }
            let uses = match snap.term_uses(strata_eval::Term::text(m.id)) {
                Ok(u) => u,
                Err(e) => return ToolOutput::error(format!("find: {e}")),
            };
            if uses.is_empty() {
                continue;
            }
            let value = index.text(m.id).unwrap_or_default();
            let mut quoted = String::new();
            strata_eval::witness::write_value(&strata_eval::Value::text(value), &mut quoted);
            let how = if m.kind == find::Kind::Fuzzy {
                format!(
                    "{} ({} edit{})",
                    m.kind.name(),
                    m.distance,
                    plural(m.distance.into())
                )
            } else {
                m.kind.name().to_owned()
            };
            text.push_str(&format!("{}. {quoted} {how}\n   ", matches.len() + 1));
            text.push_str(
                &uses
                    .iter()
                    .map(|u| {
                        format!(
                            "{}.{} {} row{}",
                            u.relation,
                            u.column_name,
                            u.rows,
                            plural(u.rows)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            text.push('\n');
            let mut j = serde_json::json!({
                "value": value,
                "match": m.kind.name(),
                "uses": uses
                    .iter()
                    .map(|u| serde_json::json!({
                        "relation": u.relation,
                        "column": u.column_name,
                        "position": u.column + 1,
                        "rows": u.rows,
                    }))
                    .collect::<Vec<_>>(),
            });
            if m.kind == find::Kind::Fuzzy {
                j["edits"] = m.distance.into();
            }
            matches.push(j);
        }
        if matches.is_empty() {
            text = format!(
                "no stored text matches \"{name}\"; values shows what one argument of a \
                 relation holds"
            );
        } else {
            text.push_str(&format!(
                "{} of {total} match{}",
                matches.len(),
                if total == 1 { "" } else { "es" }
            ));
        }
        let j = serde_json::json!({
            "name": name,
            "matches": matches,
            "total": total,
            "snapshot": snapshot_json(&snap),
        });
        ToolOutput {
            text,
            structured: Some(j),
            is_error: false,
        }
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
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

/// Adds the host's arguments to `tool`'s input schema, beside its own; a name that is one
/// of the tool's own is refused.
fn add_host_arguments(
    tool: &str,
    schema: &mut JsonObject,
    host: &HostArguments,
) -> Result<(), String> {
    let own: std::collections::BTreeSet<String> = schema
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    host.check(tool, &own)?;
    let properties = schema
        .entry("properties")
        .or_insert_with(|| serde_json::Value::Object(JsonObject::new()));
    let Some(properties) = properties.as_object_mut() else {
        return Err(format!("the {tool} tool's schema has no properties object"));
    };
    for (name, value) in &host.properties {
        properties.insert(name.clone(), value.clone());
    }
    if !host.required.is_empty() {
        let required = schema
            .entry("required")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        let Some(required) = required.as_array_mut() else {
            return Err(format!(
                "the {tool} tool's schema has a malformed required list"
            ));
        };
        for name in &host.required {
            required.push(name.clone().into());
        }
    }
    Ok(())
}

/// Joins the lines of every `description` in a schema (doc comments wrap) into one line.
fn one_line_descriptions(object: &mut JsonObject) {
    for (key, value) in object.iter_mut() {
        match value {
            serde_json::Value::String(s) if key == "description" && s.contains('\n') => {
                *s = s.split('\n').map(str::trim).collect::<Vec<_>>().join(" ");
            }
            serde_json::Value::Object(o) => one_line_descriptions(o),
            serde_json::Value::Array(items) => {
                for item in items {
                    if let serde_json::Value::Object(o) = item {
                        one_line_descriptions(o);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `asked` if the call asked for less than `cap` (0: did not ask), else `cap`.
fn lower(asked: u64, cap: u64) -> u64 {
    if asked == 0 { cap } else { asked.min(cap) }
}

/// The engine's error as the agent reads it: a program error as rendered (caret and fix),
/// an evaluation error with what stopped it.
fn query_error(e: QueryError) -> String {
    e.to_string()
}

/// The snapshot an answer was read from: the batch sequence number and its labels.
pub fn snapshot_json(snap: &Snapshot) -> serde_json::Value {
    serde_json::json!({
        "seq": snap.seq(),
        "labels": snap.last_batch().map(|b| b.labels.clone()).unwrap_or_default(),
    })
}

/// `; did you mean "deps.depends_on"?` for a name whose last part, or whose case, matches
/// one relation or module; empty otherwise.
fn did_you_mean(vocab: &Vocabulary, name: &str) -> String {
    let lower = name.to_lowercase();
    let suffix = format!(".{lower}");
    let mut names: Vec<String> = vocab.relations().into_iter().map(|r| r.name).collect();
    names.extend(vocab.modules().into_iter().map(str::to_owned));
    let found: Vec<&String> = names
        .iter()
        .filter(|n| {
            let n = n.to_lowercase();
            n == lower || n.ends_with(&suffix)
        })
        .collect();
    match found.as_slice() {
        [one] => format!("; did you mean \"{one}\"?"),
        _ => String::new(),
    }
}

/// Up to `n` facts of `relation`, written as a program would write them.
fn sample_facts(snap: &dyn FactSource, relation: &str, n: usize) -> Result<Vec<String>, String> {
    let mut rows = Vec::new();
    snap.scan(relation, &mut |row| {
        rows.push(row.to_vec());
        if rows.len() >= n {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    })
    .map_err(|e| e.to_string())?;
    rows.into_iter()
        .map(|row| {
            let values = row
                .into_iter()
                .map(|t| snap.value(t))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            let node = Node {
                relation: relation.to_owned(),
                values,
                children: Vec::new(),
            };
            let mut out = String::new();
            node.write_fact(&mut out);
            Ok(out)
        })
        .collect()
}

/// The program `values` runs for `relation.column` or `relation.N`:
/// `pkg(_, ?license) => ?license`.
fn values_program(vocab: &Vocabulary, target: &str) -> Result<String, String> {
    let usage = "give relation.column (pkg.license) or relation.N, N counting from 1 (imports.2)";
    let Some((rel, col)) = target.rsplit_once('.') else {
        return Err(match vocab.relation(target) {
            Some(r) => format!(
                "values: \"{target}\" is a relation; name one of its arguments: {}",
                columns_hint(&r.name, &r.columns)
            ),
            None => format!("values: \"{target}\" names no argument; {usage}"),
        });
    };
    let Some(r) = vocab.relation(rel) else {
        if let Some(r) = vocab.relation(target) {
            return Err(format!(
                "values: \"{target}\" is a relation; name one of its arguments: {}",
                columns_hint(&r.name, &r.columns)
            ));
        }
        return Err(format!(
            "values: unknown relation \"{rel}\"{}; {usage}",
            did_you_mean(vocab, rel)
        ));
    };
    let arity = r.columns.len();
    let position = if !col.is_empty() && col.bytes().all(|b| b.is_ascii_digit()) {
        match col.parse::<usize>() {
            Ok(n) if (1..=arity).contains(&n) => n - 1,
            _ => {
                return Err(format!(
                    "values: {rel} has {arity} argument{}; N counts from 1 to {arity}",
                    if arity == 1 { "" } else { "s" }
                ));
            }
        }
    } else {
        match r.columns.iter().position(|c| c == col) {
            Some(i) => i,
            None => {
                return Err(format!(
                    "values: {rel} has no argument \"{col}\"; name one of {}",
                    columns_hint(&r.name, &r.columns)
                ));
            }
        }
    };
    let name = &r.columns[position];
    let var = if !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        name.clone()
    } else {
        "v".to_owned()
    };
    let args: Vec<String> = (0..arity)
        .map(|i| {
            if i == position {
                format!("?{var}")
            } else {
                "_".to_owned()
            }
        })
        .collect();
    Ok(format!("{}({}) => ?{var}", r.name, args.join(", ")))
}

fn columns_hint(rel: &str, columns: &[String]) -> String {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{rel}.{c} ({rel}.{})", i + 1))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Builds a [`Server`] with the host's hooks: `Server::builder(store, pack)`, then the
/// limits and hooks, then [`ServerBuilder::build`].
pub struct ServerBuilder {
    store: Store,
    pack: Pack,
    options: Options,
    host: HostOptions,
}

impl ServerBuilder {
    /// Every limit at once.
    pub fn options(mut self, options: Options) -> ServerBuilder {
        self.options = options;
        self
    }

    /// The most rows a call answers (default 100).
    pub fn limit(mut self, limit: u64) -> ServerBuilder {
        self.options.limit = limit;
        self
    }

    /// The most work a call may spend (default: no cap).
    pub fn max_work(mut self, max_work: u64) -> ServerBuilder {
        self.options.max_work = Some(max_work);
        self
    }

    /// The longest a call may take (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> ServerBuilder {
        self.options.timeout = timeout;
        self
    }

    /// Every host hook at once.
    pub fn host(mut self, host: HostOptions) -> ServerBuilder {
        self.host = host;
        self
    }

    /// The base each call reads, asked once per call.
    pub fn base(
        mut self,
        base: impl Fn(&CallContext) -> Result<Source, String> + Send + Sync + 'static,
    ) -> ServerBuilder {
        let f: BaseFn = Arc::new(base);
        self.host.base = Some(f);
        self
    }

    /// The base a program runs on, asked with the base relations it reads.
    pub fn base_for(
        mut self,
        base_for: impl Fn(&CallContext, &[String]) -> Result<Source, String> + Send + Sync + 'static,
    ) -> ServerBuilder {
        let f: BaseForFn = Arc::new(base_for);
        self.host.base_for = Some(f);
        self
    }

    /// The vocabulary, resolved on the first call that needs it.
    pub fn vocabulary(
        mut self,
        vocabulary: impl Fn() -> Result<Vocabulary, String> + Send + Sync + 'static,
    ) -> ServerBuilder {
        let f: VocabularyFn = Arc::new(vocabulary);
        self.host.vocabulary = Some(f);
        self
    }

    /// The host's own arguments on every tool, and the hook asked with them per call.
    pub fn arguments(mut self, arguments: HostArguments) -> ServerBuilder {
        self.host.arguments = Some(arguments);
        self
    }

    /// Builds the server, as [`Server::with_host`] does.
    pub fn build(self) -> Result<Server, ServerError> {
        Server::with_host(self.store, self.pack, self.options, self.host)
    }
}
