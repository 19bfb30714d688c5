//! Why an application could not be opened ([`OpenError`], with the limits it refuses,
//! [`OptionsError`]) and why one request got no answer ([`CallError`]). Every message is
//! the one an agent or a user reads; [`CallError::json`] gives the same as data.

use strata_eval::QueryError;
use strata_eval::SourceError;
use strata_eval::cypher::CypherError;
use strata_store::StoreError;

use crate::ask::AskError;
use crate::bind::BindError;
use crate::find::FindError;
use crate::host::HostArgumentError;
use crate::pack::PackError;
use crate::values::ValuesError;

/// Why an application (or a server over one) could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The database could not be opened or read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The pack could not be read.
    #[error(transparent)]
    Pack(#[from] PackError),
    /// The modules do not load or check.
    #[error(transparent)]
    Vocab(#[from] strata_eval::VocabError),
    /// A module is a link that leads outside the database directory.
    #[error(transparent)]
    Link(#[from] crate::links::LinkError),
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
    /// The limits, the pack's Cypher mapping or the host's arguments make no sense.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// The database could not be read to check a changed `strata.toml` against it.
    #[error("the database could not be read to check strata.toml against it: {0}")]
    PackCheck(#[source] Box<CallError>),
}

/// What is wrong with the limits, the pack's Cypher mapping or the host's arguments.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    /// A row limit of 0.
    #[error("the row limit must be at least 1")]
    ZeroLimit,
    /// An answer byte budget too small to say what it left out.
    #[error("the answer budget of {asked} bytes is below the least, {min} bytes")]
    MaxBytes {
        /// The budget asked for.
        asked: u64,
        /// The least budget.
        min: u64,
    },
    /// A timeout of 0.
    #[error("the timeout must be longer than zero")]
    ZeroTimeout,
    /// A gate of 0 heavy calls.
    #[error("the number of heavy calls at once must be at least 1")]
    ZeroHeavyCalls,
    /// A memory cap of 0 bytes.
    #[error("the memory limit must be more than zero bytes")]
    ZeroMemory,
    /// The pack's `[cypher]` mapping does not fit the database.
    #[error(transparent)]
    Mapping(strata_eval::MappingError),
    /// The host's arguments are malformed or clash with a tool's own.
    #[error(transparent)]
    HostArguments(#[from] HostArgumentError),
    /// An adapter could not write a tool's input schema.
    #[error("the {tool} tool's schema: {reason}")]
    Schema {
        /// The tool.
        tool: String,
        /// What went wrong.
        reason: String,
    },
}

/// Why a request got no answer: the error the agent (or the user) reads and fixes.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The program does not parse or check (caret and fix), or its run stopped.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The Cypher query does not parse or compile, or the program it compiled to failed.
    #[error(transparent)]
    Cypher(#[from] CypherError),
    /// The store could not be read.
    #[error("{tool}: {source}")]
    Store {
        /// The request's tool.
        tool: &'static str,
        /// What the store said (its own error, by operation).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The base could not be read.
    #[error("{tool}: {source}")]
    Source {
        /// The request's tool.
        tool: &'static str,
        /// What the fact source said.
        #[source]
        source: SourceError,
    },
    /// The modules do not load or check against the newest snapshot.
    #[error("{tool}: {source}")]
    Vocabulary {
        /// The request's tool.
        tool: &'static str,
        /// What the modules' loader said.
        #[source]
        source: Box<strata_eval::VocabError>,
    },
    /// The program's error, where it names a module that does not load (left out): the
    /// module's own error said beside it.
    #[error("{program}\n{}", notes.join("\n"))]
    ModuleRefused {
        /// The program's error.
        program: Box<CallError>,
        /// What each refused module it names says (its file, its error, line and caret).
        notes: Vec<String>,
    },
    /// A module is a link that leads outside the database directory.
    #[error("{tool}: {source}")]
    ModuleLink {
        /// The request's tool.
        tool: &'static str,
        /// The link refused.
        #[source]
        source: crate::links::LinkError,
    },
    /// A host hook refused the call.
    #[error("{tool}: {source}")]
    Host {
        /// The request's tool.
        tool: String,
        /// The hook's error.
        #[source]
        source: crate::host::HostError,
    },
    /// The host's arguments of the call are missing or malformed.
    #[error(transparent)]
    HostArguments(#[from] HostArgumentError),
    /// The host's vocabulary did not resolve.
    #[error("{tool}: the vocabulary: {source}")]
    HostVocabulary {
        /// The request's tool.
        tool: &'static str,
        /// The hook's error.
        #[source]
        source: crate::host::HostError,
    },
    /// The host's vocabulary resolved, but the pack's examples do not check against it.
    #[error("{tool}: {source}")]
    HostExamples {
        /// The request's tool.
        tool: &'static str,
        /// The example that does not check.
        #[source]
        source: Box<OpenError>,
    },
    /// A bind (or Cypher parameter) is not a value.
    #[error(transparent)]
    Bind(#[from] BindError),
    /// A page token this application did not give.
    #[error(
        "{tool}: page_token \"{token}\" is not one this server gave (OFFSET or \
         OFFSET@SNAPSHOT); pass the page_token the last page ended with, or none for the first \
         page"
    )]
    PageToken {
        /// The request's tool.
        tool: &'static str,
        /// The token, trimmed.
        token: String,
    },
    /// A row limit of 0: it would answer no rows, and a page of none cannot continue.
    #[error(
        "{tool}: limit 0 asks for no rows; pass a limit from 1 to {max} (the server's limit), \
         or leave it out for {max}"
    )]
    ZeroLimit {
        /// The request's tool.
        tool: &'static str,
        /// The application's row limit.
        max: u64,
    },
    /// An answer byte budget out of range.
    #[error(
        "{tool}: max_bytes {asked} is out of range; pass from {min} to {max} (the server's \
         answer budget), or leave it out for {max}"
    )]
    MaxBytes {
        /// The request's tool.
        tool: &'static str,
        /// The budget asked for.
        asked: u64,
        /// The least budget.
        min: u64,
        /// The application's budget.
        max: u64,
    },
    /// The server ran as many heavy calls as it admits at once, and none gave its slot back
    /// while this one waited ([`crate::admission`]).
    #[error(
        "{tool}: the server is busy: it runs at most {limit} heavy call{} (query, cypher, \
         explain, ask) at once, and none finished in the {:.1} s this call waited; try again \
         shortly (schema, look, values and find answer meanwhile)",
        if *limit == 1 { "" } else { "s" },
        waited.as_secs_f64()
    )]
    Busy {
        /// The request's tool.
        tool: &'static str,
        /// The most heavy calls at once.
        limit: usize,
        /// How long the call waited.
        waited: std::time::Duration,
    },
    /// A `witness_row` of 0: rows are numbered from 1.
    #[error("{tool}: witness_row counts rows from 1, as the answer numbers them")]
    WitnessRow {
        /// The request's tool.
        tool: &'static str,
    },
    /// A `witness_row` past the answer's last row.
    #[error(
        "{tool}: witness_row {row} is past the last row: the answer has {total} row{}; pass \
         a row from 1 to {total}",
        if *total == 1 { "" } else { "s" }
    )]
    WitnessRowPast {
        /// The request's tool.
        tool: &'static str,
        /// The row asked for.
        row: u64,
        /// The rows the answer has.
        total: u64,
    },
    /// A `context` past 20 lines.
    #[error(
        "{tool}: context {asked} is out of range; pass from 0 to {max} (lines of source shown \
         either side of each cited site), or leave it out for none"
    )]
    Context {
        /// The request's tool.
        tool: &'static str,
        /// The lines asked for.
        asked: u32,
        /// The most allowed.
        max: u32,
    },
    /// The pack's Cypher mapping does not fit the vocabulary.
    #[error(transparent)]
    Graph(strata_eval::MappingError),
    /// `schema` or `look` named nothing the vocabulary has.
    #[error(
        "{tool}: nothing is named \"{}\"{}; call schema with no path for every relation \
         and module",
        echo(name),
        crate::suggest::did_you_mean_text(suggestion.as_deref())
    )]
    Unknown {
        /// The request's tool.
        tool: &'static str,
        /// The name asked for.
        name: String,
        /// The one relation or module it nearly names.
        suggestion: Option<String>,
    },
    /// `values` named no argument of a relation.
    #[error(transparent)]
    Values(#[from] ValuesError),
    /// `find` was asked wrongly, or over a host's facts.
    #[error(transparent)]
    Find(#[from] FindError),
    /// `ask` could not ask, or no try gave a program that ran.
    #[error(transparent)]
    Ask(#[from] AskError),
}

/// The most bytes of a name an error echoes back.
pub(crate) const ECHO_BYTES: usize = 200;

/// `name` as an error echoes it: whole up to [`ECHO_BYTES`], else its first bytes (cut at
/// a character) and how long it was, so a 1 MB argument does not make a 2 MB error.
pub(crate) fn echo(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() <= ECHO_BYTES {
        return name.into();
    }
    let mut end = ECHO_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &name[..end], name.len()).into()
}

impl CallError {
    /// The store's error `source`, met answering `tool`.
    pub fn store<E>(tool: &'static str) -> impl FnOnce(E) -> CallError
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        move |source| CallError::Store {
            tool,
            source: Box::new(source),
        }
    }

    /// The error's kind, one word: `program`, `cypher`, `store`, `host`, `bind`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::ModuleRefused { program, .. } => program.kind(),
            CallError::Query(QueryError::Program(_)) => "program",
            CallError::Query(_) => "evaluation",
            CallError::Cypher(CypherError::Query(_)) => "cypher",
            CallError::Cypher(_) => "program",
            CallError::Store { .. } | CallError::Source { .. } => "store",
            CallError::Vocabulary { .. } | CallError::ModuleLink { .. } => "vocabulary",
            CallError::Host { .. }
            | CallError::HostArguments(_)
            | CallError::HostVocabulary { .. }
            | CallError::HostExamples { .. } => "host",
            CallError::Bind(_) => "bind",
            CallError::PageToken { .. } => "page_token",
            CallError::ZeroLimit { .. } => "limit",
            CallError::MaxBytes { .. } => "max_bytes",
            CallError::WitnessRow { .. } | CallError::WitnessRowPast { .. } => "witness_row",
            CallError::Context { .. } => "context",
            CallError::Busy { .. } => "busy",
            CallError::Graph(_) => "graph",
            CallError::Unknown { .. } => "unknown_name",
            CallError::Values(_) => "values",
            CallError::Find(_) => "find",
            CallError::Ask(_) => "ask",
        }
    }

    /// The error as data: `ask`'s failure is its question, language, mode and every try;
    /// any other is `{"error": {"kind", "message"}}`, with `diagnostic` for a program or
    /// Cypher query that does not parse or check (its context and each diagnostic's
    /// message, span, line, column, source line and fix), `suggestion` where one name was
    /// nearly right and `variable` for a bind.
    pub fn json(&self) -> serde_json::Value {
        if let CallError::Ask(a) = self
            && let Some(j) = a.json()
        {
            return j;
        }
        if let CallError::ModuleRefused { program, notes } = self {
            let mut j = program.json();
            j["error"]["message"] = self.to_string().into();
            j["error"]["modules_refused"] = notes.clone().into();
            return j;
        }
        let mut e = serde_json::json!({ "kind": self.kind(), "message": self.to_string() });
        match self {
            CallError::Unknown {
                suggestion: Some(s),
                ..
            } => e["suggestion"] = s.clone().into(),
            CallError::Bind(b) => e["variable"] = b.variable().into(),
            CallError::Query(QueryError::Program(p)) | CallError::Cypher(CypherError::Query(p)) => {
                e["diagnostic"] = serde_json::to_value(p).unwrap_or_default();
            }
            _ => {}
        }
        serde_json::json!({ "error": e })
    }
}
