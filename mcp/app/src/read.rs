//! The command line's reads: `strata query`, `explain`, `cypher`, `schema`, `look`,
//! `values`, `find`, `stats` and `ask`, each a [`Read`] (what its flags ask) answered as one
//! [`Reading`] (the text it prints, and what a byte budget cut). One function answers a
//! read ([`Read::answer`]): it opens the database itself, or, while a server holds it,
//! sends the read over the server's socket (`DB/strata.sock`, [`crate::ingest_socket`])
//! and the server answers it with the same code over its own application, viewed with the
//! read's limits ([`App::with_options`]). Either way the text, the errors and so the exit
//! status are the same.
//!
//! A read's byte budget is its `--max-bytes` only: without one, the whole page is printed
//! (up to the row limit); with one, the answer is fitted as an MCP answer is, and what was
//! left out is also said on a line of its own ([`Reading::cut`]) for standard error.
//!
//! Through a server, the evaluation's memory is the server's per-call cap, or the read's
//! `--max-memory` when lower, and a heavy read (`query`, `cypher`, `explain`, `ask`) takes
//! one of the server's heavy slots as an MCP call does; the page cache is the server's.
//!
//! `ask` is answered by the application's `ask` on either side, with the models its flags
//! name ([`AskModels`]): through a server, the server makes the model requests, with the
//! keys the command read from its own environment, sent over the owner-only socket (and
//! only to a socket this user owns).

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use strata_eval::{Answer, Cancel};
use strata_store::{OpenOptions, Store, StoreError};

use crate::app::App;
use crate::base::Call;
use crate::bind::{BindError, binds_from_flags};
use crate::error::{CallError, OpenError, OptionsError};
use crate::fit::Measure;
use crate::options::{Options, Page};
use crate::render::{AnswerPage, Render};
use crate::{
    AskOptions, AskRequest, CypherRequest, ExplainRequest, FindRequest, Language, LookRequest,
    Mode, Model, QueryRequest, SchemaRequest, ValuesRequest,
};

/// A read of the command line: what it reads, how it renders, and its limits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Read {
    /// What is read.
    pub what: What,
    /// Render as JSON (pretty) rather than text.
    pub json: bool,
    /// The limits its flags set.
    pub limits: Limits,
}

/// What a [`Read`] reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum What {
    /// `strata query`: a program's page of rows.
    Query {
        /// The program.
        program: String,
        /// The `--bind` flags, as written (`var=value`).
        binds: Vec<String>,
    },
    /// `strata explain`: where a program's work went.
    Explain {
        /// The program.
        program: String,
        /// The `--bind` flags, as written.
        binds: Vec<String>,
    },
    /// `strata cypher`: a Cypher query's page of rows.
    Cypher {
        /// The query.
        query: String,
        /// The `--param` flags, as written (`name=value`).
        params: Vec<String>,
    },
    /// `strata schema`: the card, or what a path names.
    Schema {
        /// The path (empty for the card).
        path: String,
    },
    /// `strata look`: a relation's or module's schema, with sample facts.
    Look {
        /// The relation or module.
        target: String,
    },
    /// `strata values`: the distinct values of one argument.
    Values {
        /// `relation.column` or `relation.N`.
        target: String,
    },
    /// `strata find`: what a name may stand for.
    Find {
        /// The name.
        name: String,
    },
    /// `strata stats`: the relations, their sizes and the bytes on disk.
    Stats {
        /// Also where the bytes go (`--space`).
        space: bool,
    },
    /// `strata ask`: a question a model translates into a program, run and answered.
    Ask {
        /// The question.
        question: String,
        /// Which models to ask.
        mode: Mode,
        /// The language the model writes (`None`: the pack's `ask_language`).
        language: Option<Language>,
        /// The models, as the command's flags set them up.
        models: AskModels,
    },
}

/// The models an `ask` read may use and how often each may try: the command line's
/// [`AskOptions`], keys included (read from the command's environment), so that a server
/// answering the read asks exactly the models the command would have. Its `Debug` shows no
/// key; on the wire a key travels only to a server of the same user
/// ([`Read::carries_key`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "WireModels", try_from = "WireModels")]
pub struct AskModels(pub AskOptions);

/// [`AskModels`] on the wire.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireModels {
    local: Option<WireModel>,
    fallback: Option<WireModel>,
    tries: u32,
}

/// A [`Model`] on the wire.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireModel {
    api: String,
    url: String,
    name: String,
    key: Option<String>,
    timeout_ms: u64,
}

impl From<AskModels> for WireModels {
    fn from(m: AskModels) -> Self {
        let wire = |m: Model| WireModel {
            api: m.api.name().to_owned(),
            url: m.url,
            name: m.name,
            key: m.key,
            timeout_ms: u64::try_from(m.timeout.as_millis()).unwrap_or(u64::MAX),
        };
        WireModels {
            local: m.0.local.map(wire),
            fallback: m.0.fallback.map(wire),
            tries: m.0.tries,
        }
    }
}

impl TryFrom<WireModels> for AskModels {
    type Error = crate::ModelError;

    fn try_from(w: WireModels) -> Result<Self, Self::Error> {
        let model = |w: Option<WireModel>| -> Result<Option<Model>, crate::ModelError> {
            let Some(w) = w else { return Ok(None) };
            let mut m = Model::new(crate::Api::parse(&w.api)?, &w.url, &w.name)?
                .timeout(Duration::from_millis(w.timeout_ms));
            m.key = w.key;
            Ok(Some(m))
        };
        Ok(AskModels(AskOptions {
            local: model(w.local)?,
            fallback: model(w.fallback)?,
            tries: w.tries.max(1),
        }))
    }
}

/// The limits a read's flags set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// The most rows (values, matches) to answer; 0: the read's own default (`values` 20,
    /// `find` 10). A query's 0 is refused, as `--limit 0` is.
    pub limit: u64,
    /// The page token to continue from (empty: the first page).
    pub page_token: String,
    /// The answer's byte budget (`--max-bytes`); `None`: no budget.
    pub max_bytes: Option<u64>,
    /// Answer just this row with its whole witness.
    pub witness_row: Option<u64>,
    /// The most work the evaluation may spend.
    pub max_work: Option<u64>,
    /// The longest the evaluation may take.
    pub timeout: Duration,
    /// Whether rows carry their witnesses.
    pub witnesses: bool,
    /// Worker threads (`None`: the engine's default).
    pub threads: Option<usize>,
    /// A try: at most this many rows, saying which literal matched nothing (0: no try).
    pub sample: u64,
    /// The most memory the evaluation may hold (`None`: half the memory available when
    /// opened directly; the server's per-call cap through a server).
    pub max_memory: Option<u64>,
    /// The page cache when the database is opened directly (`None`: sized by the file);
    /// through a server, its own cache serves.
    pub cache_bytes: Option<usize>,
    /// Lines of source shown either side of each cited site (`--context`; 0: none).
    #[serde(default)]
    pub context: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            limit: 0,
            page_token: String::new(),
            max_bytes: None,
            witness_row: None,
            max_work: None,
            timeout: Duration::from_secs(30),
            witnesses: true,
            threads: None,
            sample: 0,
            max_memory: None,
            cache_bytes: None,
            context: 0,
        }
    }
}

/// What a read answered: the text to print (the rendering asked for), and, when a byte
/// budget left something out, a line saying what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reading {
    /// The answer, text or pretty JSON.
    pub text: String,
    /// What `--max-bytes` cut, said plainly (for standard error); `None` when nothing was.
    pub cut: Option<String>,
}

/// Why a read got no answer.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The database did not open (or its pack or modules did not load).
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A `--bind` or `--param` flag is malformed.
    #[error(transparent)]
    Bind(#[from] BindError),
    /// The limits make no sense.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// The request got no answer (a program that does not check, a limit reached...).
    #[error(transparent)]
    Call(#[from] CallError),
    /// An error in what the user wrote, already rendered as the command prints it (`ask
    /// --json`'s failed tries as JSON, a module the program may not use).
    #[error("{0}")]
    Rendered(String),
    /// The server holding the database answered with this error (its text and sources,
    /// as a direct read would have printed them).
    #[error(transparent)]
    Served(#[from] ServedError),
    /// Talking to the server holding the database failed.
    #[error("{0}")]
    Socket(String),
}

impl ReadError {
    /// Whether the error is in what the user wrote (a program, a Cypher query), printed
    /// as the engine renders it (caret and fix) rather than as an error.
    pub fn is_program(&self) -> bool {
        use strata_eval::QueryError;
        match self {
            ReadError::Call(
                CallError::Query(QueryError::Program(_))
                | CallError::Cypher(_)
                | CallError::Graph(_)
                | CallError::Ask(_),
            ) => true,
            ReadError::Rendered(_) => true,
            ReadError::Served(s) => s.program,
            _ => false,
        }
    }
}

/// An error a server answered a read with, as a direct read prints it: for a program's
/// error the engine's text, for any other the error and its sources joined
/// ([`error_text`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(deny_unknown_fields)]
#[error("{message}")]
pub struct ServedError {
    /// Whether it is an error in what the user wrote.
    pub program: bool,
    /// What the command line prints.
    pub message: String,
}

impl ServedError {
    /// The wire form of `e`.
    pub fn of(e: &ReadError) -> ServedError {
        let program = e.is_program();
        ServedError {
            program,
            message: if program {
                e.to_string()
            } else {
                error_text(e)
            },
        }
    }
}

/// An error and its sources, joined with `: `, each once: an error whose message already
/// holds its source's (`query: {source}`) does not repeat it. The command line prints its
/// errors so.
pub fn error_text(e: &dyn std::error::Error) -> String {
    let mut text = String::new();
    let mut next = Some(e);
    while let Some(cause) = next {
        let message = cause.to_string();
        if !text.contains(&message) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&message);
        }
        next = cause.source();
    }
    text
}

impl Read {
    /// The application's limits this read runs under when it opens the database itself.
    fn direct_options(&self) -> Options {
        let l = &self.limits;
        let options = Options {
            limit: l.limit.max(Options::default().limit),
            max_work: l.max_work,
            timeout: l.timeout,
            threads: l.threads,
            max_bytes: l.max_bytes.unwrap_or(u64::MAX),
            max_memory: Some(
                l.max_memory
                    .unwrap_or_else(|| crate::machine::default_max_memory(1)),
            ),
            cache_bytes: l.cache_bytes,
            ..Options::default()
        };
        match &self.what {
            // `ask`'s limit is the answer's (its request asks for the application's), and
            // its answer is fitted to the MCP budget unless `--max-bytes` says otherwise.
            What::Ask { models, .. } => Options {
                limit: l.limit.max(1),
                max_bytes: l.max_bytes.unwrap_or(strata_eval::ANSWER_BYTES),
                ask: models.0.clone(),
                ..options
            },
            _ => options,
        }
    }

    /// Whether the read carries a model's key (an `ask` whose models have one), which is
    /// sent only to a server of the same user.
    pub fn carries_key(&self) -> bool {
        match &self.what {
            What::Ask { models, .. } => [&models.0.local, &models.0.fallback]
                .into_iter()
                .flatten()
                .any(|m| m.key.is_some()),
            _ => false,
        }
    }

    /// The limits this read runs under on `server`'s application: its own, with the
    /// server's memory cap (or its own when lower) and the server's gate and cache.
    fn served_options(&self, server: &Options) -> Options {
        let mut o = self.direct_options();
        o.max_memory = match (self.limits.max_memory, server.max_memory) {
            (Some(asked), Some(cap)) => Some(asked.min(cap)),
            (asked, cap) => cap.or(asked),
        };
        o.heavy_calls = server.heavy_calls;
        o.admission_wait = server.admission_wait;
        o.cache_bytes = server.cache_bytes;
        o
    }

    /// Answers the read over the database in `db`: opened here, or, while a server holds
    /// it, by that server (see the module's documentation).
    pub fn answer(&self, db: &Path) -> Result<Reading, ReadError> {
        match self.answer_here(db) {
            Err(e) if in_use(&e) => self.via_server(db, e),
            r => r,
        }
    }

    /// Opens the database in `db` and answers the read.
    fn answer_here(&self, db: &Path) -> Result<Reading, ReadError> {
        if let What::Stats { space } = &self.what {
            let store = Store::open(db, OpenOptions::default()).map_err(StoreError::from)?;
            return stats(&store, *space);
        }
        let app = App::open(db, self.direct_options())?;
        self.answer_on(&app, &Cancel::new())
    }

    #[cfg(unix)]
    fn via_server(&self, db: &Path, held: ReadError) -> Result<Reading, ReadError> {
        use crate::ingest_socket::ReadSendError;
        match crate::ingest_socket::send_read(db, self) {
            Ok(Ok(reading)) => Ok(reading),
            Ok(Err(served)) => Err(ReadError::Served(served)),
            // The server went away meanwhile: open the database here once more.
            Err(ReadSendError::NoServer(_)) => match self.answer_here(db) {
                Err(e) if in_use(&e) => Err(held),
                r => r,
            },
            Err(e) => Err(ReadError::Socket(e.to_string())),
        }
    }

    #[cfg(not(unix))]
    fn via_server(&self, _db: &Path, held: ReadError) -> Result<Reading, ReadError> {
        Err(held)
    }

    /// Answers the read on `served`, the application of the server holding the database,
    /// viewed with the read's limits; `cancel` stops it (its client went away).
    pub fn answer_served(&self, served: &App, cancel: &Cancel) -> Result<Reading, ReadError> {
        if let What::Stats { space } = &self.what {
            return stats(served.store(), *space);
        }
        let app = served.with_options(self.served_options(served.options()))?;
        self.answer_on(&app, cancel)
    }

    /// The page a query or Cypher read asks for.
    fn page(&self) -> Page {
        let l = &self.limits;
        Page {
            limit: Some(l.limit),
            max_work: 0,
            page_token: l.page_token.clone(),
            sample: l.sample,
            witnesses: l.witnesses,
            max_bytes: None,
            witness_row: l.witness_row,
            max_memory: None,
            context: l.context,
        }
    }

    /// Answers the read on `app`, whose limits are the read's.
    fn answer_on(&self, app: &App, cancel: &Cancel) -> Result<Reading, ReadError> {
        let json = self.json;
        let budget = self.limits.max_bytes;
        let measure = if json { Measure::Json } else { Measure::Text };
        match &self.what {
            What::Query { program, binds } => {
                let request = QueryRequest {
                    program: program.clone(),
                    binds: binds_from_flags("query", "--bind", binds)?,
                    page: self.page(),
                };
                let out = app.query(&Call::plain("query"), &request, cancel)?;
                Ok(paged(&out, &out.answer, json, budget, measure))
            }
            What::Cypher { query, params } => {
                let request = CypherRequest {
                    query: query.clone(),
                    params: binds_from_flags("cypher", "--param", params)?,
                    page: self.page(),
                };
                let out = app.cypher(&Call::plain("cypher"), &request, cancel)?;
                Ok(paged(&out, &out.answer, json, budget, measure))
            }
            What::Explain { program, binds } => {
                let request = ExplainRequest {
                    program: program.clone(),
                    binds: binds_from_flags("explain", "--bind", binds)?,
                    max_work: 0,
                    max_memory: None,
                };
                let out = app.explain(&Call::plain("explain"), &request, cancel)?;
                Ok(fitted(app, out, json, budget))
            }
            What::Schema { path } => {
                let request = SchemaRequest { path: path.clone() };
                let out = app.schema(&Call::plain("schema"), &request)?;
                Ok(fitted(app, out, json, budget))
            }
            What::Look { target } => {
                let request = LookRequest {
                    target: target.clone(),
                };
                let out = app.look(&Call::plain("look"), &request)?;
                Ok(fitted(app, out, json, budget))
            }
            What::Values { target } => {
                let request = ValuesRequest {
                    target: target.clone(),
                    limit: self.limits.limit,
                };
                let out = app.values(&Call::plain("values"), &request, cancel)?;
                // Its page of values is fitted to the budget first, as a query's rows are.
                let rows = budget.and_then(|b| rows_cut(&out.answer.shown(measure), b));
                let mut reading = fitted(app, out, json, budget);
                reading.cut = rows.or(reading.cut);
                Ok(reading)
            }
            What::Find { name } => {
                let request = FindRequest {
                    name: name.clone(),
                    limit: self.limits.limit,
                };
                let out = app.find(&Call::plain("find"), &request)?;
                Ok(fitted(app, out, json, budget))
            }
            What::Stats { space } => stats(app.store(), *space),
            What::Ask {
                question,
                mode,
                language,
                ..
            } => {
                let request = AskRequest {
                    question: question.clone(),
                    mode: *mode,
                    language: *language,
                    limit: 0,
                    max_work: 0,
                };
                match app.ask(&Call::plain(crate::ask::TOOL), &request, cancel) {
                    Ok(out) => Ok(Reading {
                        text: if json { out.json_text() } else { out.text() },
                        cut: None,
                    }),
                    // With --json, the tries that failed are answered as JSON.
                    Err(CallError::Ask(e)) if json && e.json().is_some() => {
                        let j = e.json().unwrap_or_default();
                        Err(ReadError::Rendered(
                            serde_json::to_string_pretty(&j).unwrap_or_else(|_| e.to_string()),
                        ))
                    }
                    Err(e @ CallError::ModuleRefused { .. }) => {
                        Err(ReadError::Rendered(e.to_string()))
                    }
                    Err(e) => Err(e.into()),
                }
            }
        }
    }
}

/// Whether `e` is the store's "in use by another process".
fn in_use(e: &ReadError) -> bool {
    matches!(
        e,
        ReadError::Open(OpenError::Store(StoreError::Open(
            strata_store::OpenError::InUse { .. }
        ))) | ReadError::Store(StoreError::Open(strata_store::OpenError::InUse { .. }))
    )
}

/// `strata stats` (with `--space`, also where the bytes go) of `store`.
fn stats(store: &Store, space: bool) -> Result<Reading, ReadError> {
    let mut text = store
        .stats()
        .map_err(StoreError::from)?
        .to_string()
        .trim_end()
        .to_owned();
    if space {
        text.push('\n');
        text.push_str(
            store
                .space()
                .map_err(StoreError::from)?
                .to_string()
                .trim_end(),
        );
    }
    Ok(Reading { text, cut: None })
}

/// A response that is a page of rows, rendered, with what `budget` cut of `page` said.
fn paged(
    response: &impl Render,
    page: &AnswerPage,
    json: bool,
    budget: Option<u64>,
    measure: Measure,
) -> Reading {
    let text = if json {
        response.json_text()
    } else {
        response.text()
    };
    let cut = budget.and_then(|b| rows_cut(&page.shown(measure), b));
    Reading { text, cut }
}

/// What fitting left out of `shown`, said for standard error.
fn rows_cut(shown: &Answer, budget: u64) -> Option<String> {
    let cut = shown.cut.as_ref()?;
    let mut said = format!("the answer was cut to fit --max-bytes {budget}");
    if cut.rows_left_out > 0 {
        let first = shown.offset + 1;
        let last = shown.offset + shown.rows.len() as u64;
        said.push_str(&format!(
            ": rows {first} to {last} of {} shown, {} more of this page left out",
            shown.total, cut.rows_left_out
        ));
        if let Some(token) = shown.token() {
            said.push_str(&format!("; continue with --page-token {token}"));
        }
    }
    for v in &cut.values {
        said.push_str(&format!(
            "; row {}, column {}: {} of {} {} shown",
            v.row,
            shown.columns.get(v.column).map_or("?", String::as_str),
            v.kept,
            v.total,
            v.unit
        ));
    }
    Some(said)
}

/// A response that is not a page of rows, fitted to the budget (none without one), with
/// what fitting did said.
fn fitted<R: Render>(app: &App, response: R, json: bool, budget: Option<u64>) -> Reading {
    let whole = |r: &R| {
        if json { r.json_text() } else { r.text() }
    };
    let Some(b) = budget else {
        return Reading {
            text: whole(&response),
            cut: None,
        };
    };
    let full = whole(&response).len();
    let fitted = app.fit(response);
    let text = whole(&fitted);
    let cut = (text.len() < full || (json && fitted.json().get("fitted").is_some())).then(|| {
        format!(
            "the answer was cut to fit --max-bytes {b}: {} of its {full} bytes shown",
            text.len()
        )
    });
    Reading { text, cut }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_ask_read_carries_its_models_keys_on_the_wire_but_never_in_debug() {
        let mut local = Model::new(crate::Api::OpenAi, "http://127.0.0.1:1/v1", "m")
            .unwrap()
            .timeout(Duration::from_millis(1500));
        local.key = Some("sekrit".to_owned());
        let fallback = Model::new(crate::Api::Anthropic, "https://a.example", "f").unwrap();
        let read = Read {
            what: What::Ask {
                question: "q".to_owned(),
                mode: Mode::Both,
                language: Some(Language::Cypher),
                models: AskModels(AskOptions {
                    local: Some(local),
                    fallback: Some(fallback),
                    tries: 2,
                }),
            },
            json: true,
            limits: Limits::default(),
        };
        assert!(read.carries_key());
        let wire = serde_json::to_string(&read).unwrap();
        assert!(wire.contains("\"key\":\"sekrit\""), "{wire}");
        assert_eq!(serde_json::from_str::<Read>(&wire).unwrap(), read);
        assert!(!format!("{read:?}").contains("sekrit"));
        // A model the command could not have set up is refused.
        let bad = wire.replace("http://127.0.0.1:1/v1", "ftp://x");
        assert!(serde_json::from_str::<Read>(&bad).is_err());
        let plain = Read {
            what: What::Stats { space: false },
            json: false,
            limits: Limits::default(),
        };
        assert!(!plain.carries_key());
    }
}
