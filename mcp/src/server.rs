//! The server: the application ([`App`]) with the tool table written from its pack. A call
//! is decoded strictly into the application's typed request, answered, and rendered as a
//! [`ToolOutput`]; a program that does not parse, check or finish is an output with
//! `is_error` set, carrying the engine's text (caret and fix) and the error as data.
//!
//! This module owns the [`Server`] itself (building it, its accessors, dispatching a call);
//! the rest lives in its children: the tool table (`tools`), what a call answers
//! (`output`), the errors (`error`) and the builder (`builder`).

use std::path::Path;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use strata_app::host::HostOptions;
use strata_app::pack::Pack;
use strata_app::{App, Store};
use strata_eval::{Cancel, Progress};

mod builder;
mod error;
mod output;
mod tools;

pub use builder::ServerBuilder;
pub use error::ServerError;
pub use output::ToolOutput;
pub use strata_app::{FIND_LIMIT, FIND_MAX_CHARS, LOOK_SAMPLE, Options, VALUES_LIMIT};
use tools::TOOLS;
pub use tools::{MAX_RESULT_SIZE_CHARS, MAX_RESULT_SIZE_CHARS_CAP};

/// An MCP server over one database. Cheap to clone: clones share the application (the
/// store, the pack and the caches).
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
    /// What this session (this clone and its clones) was last shown, to tell it when a
    /// list changed (see [`Server::session`]).
    shown: Arc<std::sync::Mutex<Shown>>,
}

/// What one session was last shown: the pack its tools and prompts were written from, and
/// the pack and modules its resources were (each `None` until the session lists them).
#[derive(Default)]
struct Shown {
    tools: Option<Arc<Pack>>,
    prompts: Option<Arc<Pack>>,
    resources: Option<(Arc<Pack>, Vec<String>)>,
}

/// A list a session is told changed (`notifications/*/list_changed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Listing {
    /// `tools/list`: its descriptions are written from the pack.
    Tools,
    /// `resources/list`: the pack's resource and one per module.
    Resources,
    /// `prompts/list`: written from the pack.
    Prompts,
}

struct Inner {
    app: App,
    /// The tool table as last listed (its descriptions are written from the pack and the
    /// graph, which may change while the server runs).
    tools: std::sync::Mutex<Vec<Tool>>,
}

impl Server {
    /// Opens the database in `dir` and its pack (`strata.toml`), then builds the server.
    pub fn open(dir: &Path, options: Options) -> Result<Server, ServerError> {
        Server::over(App::open(dir, options)?)
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
        Server::over(App::with_host(store, pack, options, host)?)
    }

    /// A server over `app`: its tool table and instructions written from its pack. A
    /// server builds the indexes its calls want that the database keeps on demand, after
    /// the call ([`App::build_indexes_on_demand`]).
    pub fn over(app: App) -> Result<Server, ServerError> {
        let tools = Server::list(&app)?;
        app.build_indexes_on_demand();
        Ok(Server {
            inner: Arc::new(Inner {
                app,
                tools: std::sync::Mutex::new(tools),
            }),
            shown: Arc::default(),
        })
    }

    fn list(app: &App) -> Result<Vec<Tool>, ServerError> {
        tools::list(
            &app.pack(),
            app.options(),
            app.host(),
            app.graph_summary().as_deref(),
        )
    }

    /// The application the server answers from.
    pub fn app(&self) -> &App {
        &self.inner.app
    }

    /// The pack the server answers with: its `strata.toml` as last read (see
    /// [`App::pack`]).
    pub fn pack(&self) -> Arc<Pack> {
        self.inner.app.pack()
    }

    /// The server's limits.
    pub fn options(&self) -> &Options {
        self.inner.app.options()
    }

    /// The host's hooks the server was built with.
    pub fn host(&self) -> &HostOptions {
        self.inner.app.host()
    }

    /// The store the server reads.
    pub fn store(&self) -> &Store {
        self.inner.app.store()
    }

    /// The instructions an agent reads on connecting, written from the pack and the graph
    /// as they are now.
    pub fn instructions(&self) -> String {
        self.inner.app.instructions()
    }

    /// The line for an agent's own instructions.
    pub fn agent_line(&self) -> String {
        self.inner.app.agent_line()
    }

    /// Every tool, as `tools/list` answers them: written again from the pack and the graph
    /// as they are now (the previous table kept if that fails).
    pub fn tools(&self) -> Vec<Tool> {
        let mut kept = self.lock_tools();
        if let Ok(fresh) = Server::list(&self.inner.app) {
            *kept = fresh;
        }
        kept.clone()
    }

    /// A clone for one session: it shares the application, and keeps its own record of
    /// what its client was last shown, so that `Server::changed` tells each session once.
    pub fn session(&self) -> Server {
        Server {
            inner: Arc::clone(&self.inner),
            shown: Arc::default(),
        }
    }

    fn lock_shown(&self) -> std::sync::MutexGuard<'_, Shown> {
        self.shown
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The paths of the modules the resources list: one resource each.
    pub(crate) fn module_paths(&self) -> Vec<String> {
        match self.app().base_snapshot("resources") {
            Ok((_, vocab)) => vocab.modules().into_iter().map(str::to_owned).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Records that this session was shown `listing` as it is now (for resources, with
    /// `modules`, the module paths it listed).
    pub(crate) fn mark_listed(&self, listing: Listing, modules: Vec<String>) {
        let pack = self.pack();
        let mut shown = self.lock_shown();
        match listing {
            Listing::Tools => shown.tools = Some(pack),
            Listing::Prompts => shown.prompts = Some(pack),
            Listing::Resources => shown.resources = Some((pack, modules)),
        }
    }

    /// The lists this session was shown that changed since (the pack read again, a module
    /// added or removed), recorded as shown as they are now. Reads the store when the
    /// session has listed the resources: run it off the async threads.
    pub(crate) fn changed(&self) -> Vec<Listing> {
        let pack = self.pack();
        let listed_resources = self.lock_shown().resources.is_some();
        let modules = if listed_resources {
            self.module_paths()
        } else {
            Vec::new()
        };
        let mut shown = self.lock_shown();
        let mut out = Vec::new();
        let stale =
            |seen: &Option<Arc<Pack>>| seen.as_ref().is_some_and(|s| !Arc::ptr_eq(s, &pack));
        if stale(&shown.tools) {
            shown.tools = Some(Arc::clone(&pack));
            out.push(Listing::Tools);
        }
        if let Some((seen, paths)) = &shown.resources
            && (!Arc::ptr_eq(seen, &pack) || *paths != modules)
        {
            shown.resources = Some((Arc::clone(&pack), modules));
            out.push(Listing::Resources);
        }
        if stale(&shown.prompts) {
            shown.prompts = Some(pack);
            out.push(Listing::Prompts);
        }
        out
    }

    /// One tool by name, as last listed.
    pub fn tool(&self, name: &str) -> Option<Tool> {
        self.lock_tools().iter().find(|t| t.name == name).cloned()
    }

    fn lock_tools(&self) -> std::sync::MutexGuard<'_, Vec<Tool>> {
        self.inner
            .tools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reads the dictionary into memory for `find` ahead of its first call; `strata serve`
    /// does this on a thread of its own at startup, so no agent waits for it.
    pub fn warm_find(&self) -> Result<(), strata_app::CallError> {
        self.inner.app.warm_find()
    }

    /// Calls tool `name` with `arguments` (none: `{}`), stoppable through `cancel`. `None`
    /// when no tool has that name (a protocol error, not a tool error).
    pub fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        cancel: &Cancel,
    ) -> Option<ToolOutput> {
        self.call_counted(name, arguments, cancel, &Progress::new())
    }

    /// [`Server::call`], its evaluations counting their work, rounds and facts into
    /// `progress` as they go.
    pub fn call_counted(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        cancel: &Cancel,
        progress: &Progress,
    ) -> Option<ToolOutput> {
        let spec = TOOLS.iter().find(|t| t.name == name)?;
        let mut arguments = arguments.unwrap_or_default();
        let mut call = match self.inner.app.begin(spec.name, &mut arguments) {
            Ok(c) => c,
            Err(e) => return Some(ToolOutput::failure(&e, false)),
        };
        call.progress = progress.clone();
        Some((spec.run)(
            self,
            &call,
            serde_json::Value::Object(arguments),
            cancel,
        ))
    }

    /// Whether `name` is a tool this server answers when called: every listed tool, and
    /// `ask` even unlisted (to say how to configure a model).
    pub(crate) fn callable(&self, name: &str) -> bool {
        self.tool(name).is_some() || name == strata_app::ask::TOOL
    }

    /// How long a call of `tool` may take: the server's time limit, and for `ask` every
    /// model request and run it may make.
    pub(crate) fn call_time_limit(&self, tool: &str) -> std::time::Duration {
        let o = self.options();
        if tool == strata_app::ask::TOOL && o.ask.offered() {
            o.ask.time_limit(o.timeout)
        } else {
            o.timeout
        }
    }
}
