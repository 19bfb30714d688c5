//! `ask`: a question in plain language, translated into a program by a model, checked, run
//! and answered with the program, its rows and each try.
//!
//! The loop, per model (the local one, then the fallback, as the call's [`Mode`] says):
//!
//! 1. The model is shown a system prompt (the pack's about, how to write a program in the
//!    call's [`Language`], the schema card, the pack's examples) and the question with the
//!    stored values `find` grounds its names to (quoted names and the words that are not
//!    common English, each with the relations and columns it appears in).
//! 2. It writes one program (the first fenced block of its reply, or the whole reply).
//! 3. The program runs exactly as the `query` tool runs it, under the call's limits
//!    (`limit`, `max_work`, the server's deadline): parsed, checked, then evaluated.
//! 4. On an error, the engine's full text (what, where with a caret, and the fix) goes back
//!    to the model as the next message, and it tries again, up to [`AskOptions::tries`].
//!
//! A model that gives no reply (a timeout, an HTTP error, a reply without text) ends its
//! turn at once: retrying would not tell it anything new. In mode `both` the fallback then
//! takes over, with a fresh conversation. The first program that checks and runs is the
//! answer; when none does, the call is a tool error listing every try and its error, never
//! a made-up answer. Without a configured model the tool is not listed, and a call says how
//! to configure one.
//!
//! Languages: the call's `language`, else the pack's `ask_language`, else Datalog. With
//! Datalog the model is shown the schema card and the pack's `examples`, and its program runs
//! as `query` runs one. With Cypher (for a database with a Cypher graph) it is shown the graph
//! as `schema` shows it at path `cypher` and the pack's `cypher_examples`; its reply is a read
//! query that the Cypher front end compiles and checks (an error's caret and fix, and the
//! compiled program where the error shows one, go back to the model), and the query runs as
//! the `cypher` tool runs it, so the answer is that tool's (`ran:` and the program it compiled
//! to, then the rows) with the tries after it.

use std::collections::HashSet;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_eval::budget::Cancel;

use crate::args::{CypherArgs, FindArgs, QueryArgs};
use crate::model::{Api, Message, Model, ModelError, Role};
use crate::pack::Pack;
use crate::server::{Call, Server, ToolOutput};

/// The tool's name.
pub const TOOL: &str = "ask";

/// How many programs each model may write for one question when the configuration does not
/// say.
pub const DEFAULT_TRIES: u32 = 3;

/// The most names of a question grounded through `find`.
pub const GROUND_NAMES: usize = 8;

/// The most stored values shown per grounded name.
pub const GROUND_VALUES: u64 = 3;

/// What a call without a configured model answers.
pub const NOT_CONFIGURED: &str = "ask: no model is configured for this server, so it cannot \
translate a question (and never makes an answer up). Start the server with a local model, \
--model-url URL --model-name NAME (an OpenAI-compatible chat completions endpoint such as \
llama.cpp's server, Ollama or vLLM; --model-key-env VAR for a key), and/or a frontier \
fallback, --fallback-name NAME (--fallback-kind anthropic, the default, or openai with \
--fallback-url URL; --fallback-key-env VAR for its key). Meanwhile, write the program \
yourself: schema shows the relations, find grounds a name, query runs it.";

/// Which models a call asks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The local model alone.
    Local,
    /// The fallback (frontier) model alone.
    Frontier,
    /// The local model first, the fallback when the local one fails to produce a program
    /// that checks and runs within its tries.
    #[default]
    Both,
}

impl Mode {
    /// The mode's name: `local`, `frontier` or `both`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Local => "local",
            Mode::Frontier => "frontier",
            Mode::Both => "both",
        }
    }
}

/// The language the model writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// Strata's Datalog, run as the `query` tool runs a program.
    #[default]
    Datalog,
    /// A Cypher read query over the database's graph, run as the `cypher` tool runs one.
    Cypher,
}

impl Language {
    /// The language's name, as answers and fenced blocks write it.
    pub fn name(self) -> &'static str {
        match self {
            Language::Datalog => "datalog",
            Language::Cypher => "cypher",
        }
    }

    /// How to write a program in the language, for the system prompt.
    pub fn how_to_write(self) -> &'static str {
        match self {
            Language::Datalog => HOW_TO_WRITE_DATALOG,
            Language::Cypher => HOW_TO_WRITE_CYPHER,
        }
    }

    /// What the model writes, as the prompt and the feedback call it.
    fn noun(self) -> &'static str {
        match self {
            Language::Datalog => "program",
            Language::Cypher => "query",
        }
    }
}

/// The Datalog paragraph of the system prompt: the grammar and meaning in short.
const HOW_TO_WRITE_DATALOG: &str = "A program is rules, if any, each ending in \";\", then one \
goal: 'rule(?a, ?b) :- body; ... body => ?a, ?b'. Variables are ?name, \"text\" is quoted, \
numbers are bare, _ matches anything. A body is atoms (relation(args)), \"not atom\", \
comparisons (?x < 3, ?a != ?b) and aggregates (?n = count(?d) : { atoms }). The goal's \
columns follow => without parentheses and may end with 'order by ?x desc', 'limit N'; \
aggregates in columns group by the plain variables (=> ?a, count(?d)). Relation names are \
exactly as the schema lists them, module members with their module (deps.depends_on). \
Builtins: str.contains(s, sub), str.prefix(s, p), str.suffix(s, x), str.glob(s, pattern), \
str.match(s, regex), absent(?x). There is no \"?-\" before a goal.";

/// The Cypher paragraph of the system prompt: what a read query may say.
const HOW_TO_WRITE_CYPHER: &str = "A query is one Cypher read query: MATCH patterns (nodes \
(p:Label {property: \"value\"}), relationships -[:TYPE]-> in either direction, types :A|B, \
variable length -[:TYPE*1..3]->), OPTIONAL MATCH, WHERE (comparisons, AND, OR, NOT, IN, \
STARTS WITH, ENDS WITH, CONTAINS, =~, IS NULL, patterns), one WITH stage, and RETURN \
(aliases with AS, DISTINCT, count, collect, min, max, sum, ORDER BY, SKIP, LIMIT). Labels, \
properties and relationship types are exactly as the graph lists them; \"text\" is quoted, \
numbers are bare. Write values as literals, not $parameters. Read only: CREATE, MERGE, SET \
and DELETE are refused.";

/// The models `ask` may use and how often each may try: part of the server's
/// [`crate::Options`]. The tool is offered when at least one model is set.
#[derive(Clone, Debug)]
pub struct AskOptions {
    /// The local model, asked first.
    pub local: Option<Model>,
    /// The frontier fallback, asked when the local model fails (or alone).
    pub fallback: Option<Model>,
    /// How many programs each model may write for one question (at least 1).
    pub tries: u32,
}

impl Default for AskOptions {
    fn default() -> Self {
        AskOptions {
            local: None,
            fallback: None,
            tries: DEFAULT_TRIES,
        }
    }
}

impl AskOptions {
    /// Whether any model is configured (the tool is listed).
    pub fn offered(&self) -> bool {
        self.local.is_some() || self.fallback.is_some()
    }

    /// Builds the options from the command line's flags, reading keys from the environment
    /// variables the flags name.
    pub fn from_flags(f: &ModelFlags) -> Result<AskOptions, ModelError> {
        let timeout = f.timeout.unwrap_or(crate::model::DEFAULT_REQUEST_TIMEOUT);
        if timeout.is_zero() {
            return Err(ModelError::Config(
                "--model-timeout must be longer than zero".to_owned(),
            ));
        }
        if f.tries == 0 {
            return Err(ModelError::Config("--tries must be at least 1".to_owned()));
        }
        let local = match (&f.model_url, &f.model_name) {
            (Some(url), Some(name)) => {
                let mut m = Model::new(Api::OpenAi, url, name)
                    .map_err(|e| flag_error("--model-url/--model-name", e))?
                    .timeout(timeout);
                if let Some(var) = &f.model_key_env {
                    m = m.key_from_env("--model-key-env", var)?;
                }
                Some(m)
            }
            (Some(_), None) => return Err(needs("--model-url", "--model-name NAME")),
            (None, Some(_)) => return Err(needs("--model-name", "--model-url URL")),
            (None, None) if f.model_key_env.is_some() => {
                return Err(needs(
                    "--model-key-env",
                    "--model-url URL --model-name NAME",
                ));
            }
            (None, None) => None,
        };
        let api = match &f.fallback_kind {
            Some(k) => Api::parse(k).map_err(|e| flag_error("--fallback-kind", e))?,
            None => Api::Anthropic,
        };
        let fallback = match &f.fallback_name {
            Some(name) => {
                let url = match (&f.fallback_url, api) {
                    (Some(u), _) => u.clone(),
                    (None, Api::Anthropic) => crate::model::ANTHROPIC_URL.to_owned(),
                    (None, Api::OpenAi) => {
                        return Err(needs("--fallback-kind openai", "--fallback-url URL"));
                    }
                };
                let mut m = Model::new(api, &url, name)
                    .map_err(|e| flag_error("--fallback-url/--fallback-name", e))?
                    .timeout(timeout);
                if let Some(var) = &f.fallback_key_env {
                    m = m.key_from_env("--fallback-key-env", var)?;
                }
                Some(m)
            }
            None => {
                for (flag, set) in [
                    ("--fallback-url", f.fallback_url.is_some()),
                    ("--fallback-kind", f.fallback_kind.is_some()),
                    ("--fallback-key-env", f.fallback_key_env.is_some()),
                ] {
                    if set {
                        return Err(needs(flag, "--fallback-name NAME"));
                    }
                }
                None
            }
        };
        Ok(AskOptions {
            local,
            fallback,
            tries: f.tries,
        })
    }

    /// The longest an `ask` call may take: every try of every model, each a request and a
    /// run, plus one more run's time for grounding; `run` is the server's time limit for
    /// one evaluation.
    pub fn time_limit(&self, run: Duration) -> Duration {
        let per_try: Duration = [&self.local, &self.fallback]
            .into_iter()
            .flatten()
            .map(|m| m.timeout + run)
            .sum();
        per_try * self.tries.max(1) + run
    }
}

fn needs(flag: &str, other: &str) -> ModelError {
    ModelError::Config(format!("{flag} needs {other} as well"))
}

fn flag_error(flags: &str, e: ModelError) -> ModelError {
    ModelError::Config(format!("{flags}: {e}"))
}

/// The model flags of `strata serve` and `strata ask`, as given (keys by the name of the
/// environment variable holding them).
#[derive(Clone, Debug, Default)]
pub struct ModelFlags {
    /// `--model-url`: the local model's OpenAI-compatible base URL.
    pub model_url: Option<String>,
    /// `--model-name`: the local model's name.
    pub model_name: Option<String>,
    /// `--model-key-env`: the variable holding the local model's key.
    pub model_key_env: Option<String>,
    /// `--fallback-url`: the fallback's base URL (default: Anthropic's).
    pub fallback_url: Option<String>,
    /// `--fallback-name`: the fallback's model name; sets the fallback up.
    pub fallback_name: Option<String>,
    /// `--fallback-kind`: `anthropic` (the default) or `openai`.
    pub fallback_kind: Option<String>,
    /// `--fallback-key-env`: the variable holding the fallback's key.
    pub fallback_key_env: Option<String>,
    /// `--model-timeout`: the longest one model request may take.
    pub timeout: Option<Duration>,
    /// `--tries`: programs per model per question.
    pub tries: u32,
}

/// `ask`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskArgs {
    /// The question, in plain language: "what does api depend on?".
    pub question: String,
    /// Which models to ask: local, frontier, or both (the default: local first, the
    /// fallback when the local model fails within its tries).
    #[serde(default)]
    pub mode: Mode,
    /// The language the model writes: datalog, or cypher for a database with a Cypher graph
    /// (the default: the pack's ask_language, else datalog).
    #[serde(default)]
    #[schemars(with = "Language")]
    pub language: Option<Language>,
    /// The most rows to answer (0: the server's limit; never more than it).
    #[serde(default)]
    pub limit: u64,
    /// The most work the program may spend (0: the server's cap; never more than it).
    #[serde(default)]
    pub max_work: u64,
    /// Answer as JSON: the program, its columns, rows, witnesses and total, and every try.
    #[serde(default)]
    pub json: bool,
}

/// One try: the model asked, the program it wrote and what became of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Try {
    /// `local` or `frontier`.
    pub role: &'static str,
    /// The model, as [`Model::label`] writes it.
    pub model: String,
    /// The program it wrote; `None` when it gave no reply.
    pub program: Option<String>,
    /// Why the program (or the request) failed; `None` for the program that ran.
    pub error: Option<String>,
}

impl Try {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "model": self.role,
            "name": self.model,
            "program": self.program,
            "error": self.error,
        })
    }
}

/// The `ask` tool's description.
pub fn description(pack: &Pack) -> String {
    format!(
        "Answer a question about {} in plain language: a model translates it into a program \
         (shown the schema, the pack's examples and the stored values find grounds the \
         question's names to), the program is checked and run as query runs it, and an \
         error goes back to the model with its caret and fix for another try. Answers the \
         program that ran (ran: ...), its rows with their witnesses, and each try with its \
         error. mode: local, frontier or both (the default: local first, the fallback when \
         it fails). language: datalog, or cypher to have the model write a Cypher query \
         over the graph (shown the graph and the pack's Cypher examples), which runs as the \
         cypher tool runs it; the pack's ask_language when left out. limit, max_work and \
         json as query takes them. Prefer writing the \
         program yourself with schema and query when you can: ask is for when you cannot.",
        pack.about_or_default()
    )
}

/// The `ask` entry of the tool table: decodes the arguments strictly and asks.
pub(crate) fn run(s: &Server, k: &Call, v: serde_json::Value, c: &Cancel) -> ToolOutput {
    match serde_json::from_value::<AskArgs>(v) {
        Ok(a) => s.ask_in(k, &a, c),
        Err(e) => ToolOutput::error(format!(
            "{TOOL}: the arguments do not fit the tool's schema: {e}"
        )),
    }
}

/// The program in a model's reply: the first fenced block's body, else the whole reply,
/// trimmed; a `?-` before the goal is dropped.
pub fn extract_program(reply: &str) -> String {
    let body = match reply.find("```") {
        Some(start) => {
            let after = &reply[start + 3..];
            // Skip the info string (```datalog).
            let after = after.split_once('\n').map_or(after, |(_, rest)| rest);
            after.split("```").next().unwrap_or(after)
        }
        None => reply,
    };
    let body = body.trim();
    body.strip_prefix("?-")
        .map_or(body, str::trim_start)
        .to_owned()
}

/// What a call asking in Cypher answers over a database without a Cypher graph.
pub const NO_GRAPH: &str = "ask: language cypher needs a Cypher graph, and this database has \
none (no node labels and no relationship types). Ask with language datalog, or give the \
database a graph: nodes and edges dumps, or [[cypher.labels]] and [[cypher.types]] in its \
strata.toml.";

/// Words never worth grounding: question words, articles, common verbs.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "by", "can", "count", "data",
    "depend", "depends", "did", "do", "does", "each", "every", "find", "for", "from", "give",
    "has", "have", "how", "i", "in", "into", "is", "it", "its", "list", "many", "me", "most",
    "much", "my", "name", "names", "not", "number", "of", "on", "one", "or", "other", "show",
    "some", "than", "that", "the", "their", "them", "there", "these", "they", "this", "those",
    "to", "uses", "use", "used", "using", "what", "when", "where", "which", "who", "whose", "why",
    "with", "without",
];

/// The names of a question worth grounding: quoted phrases first, then the words that are
/// not common English, at most [`GROUND_NAMES`], each once.
pub fn question_names(question: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    let mut push = |n: &str, names: &mut Vec<String>| {
        let n = n.trim();
        if !n.is_empty() && seen.insert(n.to_lowercase()) {
            names.push(n.to_owned());
        }
    };
    let mut unquoted = String::new();
    let mut rest = question;
    while let Some(open) = rest.find(['"', '\'', '`', '“']) {
        let q = rest[open..].chars().next().unwrap_or('"');
        let close_char = if q == '“' { '”' } else { q };
        let body_start = open + q.len_utf8();
        // An apostrophe inside a word (api's) opens no quote.
        let inside_word = q == '\''
            && rest[..open]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric);
        match rest[body_start..].find(close_char) {
            Some(len) if !inside_word => {
                unquoted.push_str(&rest[..open]);
                unquoted.push(' ');
                push(&rest[body_start..body_start + len], &mut names);
                rest = &rest[body_start + len + close_char.len_utf8()..];
            }
            _ => {
                unquoted.push_str(&rest[..body_start]);
                rest = &rest[body_start..];
            }
        }
    }
    unquoted.push_str(rest);
    for raw in unquoted.split_whitespace() {
        let w = raw.trim_matches(|c: char| !(c.is_alphanumeric() || "_/#:.-".contains(c)));
        let w = w.trim_end_matches(['.', ':', '-']);
        let w = w.strip_suffix("'s").unwrap_or(w);
        if w.chars().count() < 2
            || w.chars().all(|c| c.is_ascii_digit())
            || STOPWORDS.contains(&w.to_lowercase().as_str())
        {
            continue;
        }
        push(w, &mut names);
    }
    names.truncate(GROUND_NAMES);
    names
}

impl Server {
    /// Whether `name` is a tool this server answers when called: every listed tool, and
    /// `ask` even unlisted (to say how to configure a model).
    pub(crate) fn callable(&self, name: &str) -> bool {
        self.tool(name).is_some() || name == TOOL
    }

    /// How long a call of `tool` may take: the server's time limit, and for `ask` every
    /// model request and run it may make.
    pub(crate) fn call_time_limit(&self, tool: &str) -> Duration {
        let o = self.options();
        if tool == TOOL && o.ask.offered() {
            o.ask.time_limit(o.timeout)
        } else {
            o.timeout
        }
    }

    /// `ask`: translates a question into a program with the configured models, runs it and
    /// answers the program, its rows and each try.
    pub fn ask(&self, a: &AskArgs, cancel: &Cancel) -> ToolOutput {
        self.ask_in(&Call::plain(TOOL), a, cancel)
    }

    fn ask_in(&self, call: &Call, a: &AskArgs, cancel: &Cancel) -> ToolOutput {
        let o = &self.options().ask;
        if !o.offered() {
            return ToolOutput::error(NOT_CONFIGURED);
        }
        let question = a.question.trim();
        if question.is_empty() {
            return ToolOutput::error(
                "ask: give a question, in plain language: \"what does api depend on?\"",
            );
        }
        let models: Vec<(&'static str, &Model)> = match a.mode {
            Mode::Local => match &o.local {
                Some(m) => vec![("local", m)],
                None => {
                    return ToolOutput::error(
                        "ask: mode local needs a local model, and this server has none; start \
                         it with --model-url URL --model-name NAME, or ask with mode frontier",
                    );
                }
            },
            Mode::Frontier => match &o.fallback {
                Some(m) => vec![("frontier", m)],
                None => {
                    return ToolOutput::error(
                        "ask: mode frontier needs a fallback model, and this server has none; \
                         start it with --fallback-name NAME (--fallback-kind, --fallback-url, \
                         --fallback-key-env), or ask with mode local",
                    );
                }
            },
            Mode::Both => [("local", &o.local), ("frontier", &o.fallback)]
                .into_iter()
                .filter_map(|(r, m)| m.as_ref().map(|m| (r, m)))
                .collect(),
        };
        let language = a.language.unwrap_or(self.pack().ask_language);
        let system = match self.system_prompt(call, language) {
            Ok(s) => s,
            Err(e) => return ToolOutput::error(e),
        };
        let first = self.question_message(question);
        let mut tries: Vec<Try> = Vec::new();
        for (role, model) in models {
            let mut messages = vec![Message {
                role: Role::User,
                content: first.clone(),
            }];
            for _ in 0..o.tries.max(1) {
                if cancel.is_cancelled() {
                    break;
                }
                let reply = match model.complete(&system, &messages, cancel) {
                    Ok(r) => r,
                    Err(e) => {
                        tries.push(Try {
                            role,
                            model: model.label(),
                            program: None,
                            error: Some(e.to_string()),
                        });
                        // No reply: this model's turn is over.
                        break;
                    }
                };
                let program = extract_program(&reply);
                let out = self.run_try(call, a, language, &program, cancel);
                if !out.is_error {
                    tries.push(Try {
                        role,
                        model: model.label(),
                        program: Some(program.clone()),
                        error: None,
                    });
                    return answer(question, a, language, role, &program, out, &tries);
                }
                messages.push(Message {
                    role: Role::Assistant,
                    content: reply,
                });
                messages.push(Message {
                    role: Role::User,
                    content: format!(
                        "That {noun} fails:\n{}\n\nWrite the whole corrected {noun}, alone, \
                         in a ```{} block.",
                        out.text,
                        language.name(),
                        noun = language.noun(),
                    ),
                });
                tries.push(Try {
                    role,
                    model: model.label(),
                    program: Some(program),
                    error: Some(out.text),
                });
            }
        }
        failure(question, a, language, &tries, cancel.is_cancelled())
    }

    /// Runs one try's program as the tool of its language runs it.
    fn run_try(
        &self,
        call: &Call,
        a: &AskArgs,
        language: Language,
        program: &str,
        cancel: &Cancel,
    ) -> ToolOutput {
        match language {
            Language::Datalog => {
                let args = QueryArgs {
                    program: program.to_owned(),
                    bind: serde_json::Map::new(),
                    limit: a.limit,
                    max_work: a.max_work,
                    page_token: String::new(),
                    json: false,
                    sample: 0,
                };
                self.query_in(call, &args, cancel)
            }
            Language::Cypher => {
                let args = CypherArgs {
                    query: program.to_owned(),
                    params: serde_json::Map::new(),
                    limit: a.limit,
                    max_work: a.max_work,
                    page_token: String::new(),
                    json: false,
                    sample: 0,
                };
                self.cypher_in(call, &args, cancel)
            }
        }
    }

    /// What the model is told before the question: the pack's about, how to write a
    /// program, what it may read (the schema card, or the Cypher graph), the pack's examples
    /// in the language and how to reply. Cypher without a graph is refused here.
    fn system_prompt(&self, call: &Call, language: Language) -> Result<String, String> {
        let pack = self.pack();
        let vocab = self.call_vocabulary(call, TOOL)?;
        let mut s = match language {
            Language::Datalog => format!(
                "You translate questions about {} into one program in Strata's Datalog, which \
                 a store of facts answers exactly.\n\n{}\n\nThe relations and modules a \
                 program may use:\n{}\n",
                pack.about_or_default(),
                language.how_to_write(),
                strata_eval::schema::card(&vocab),
            ),
            Language::Cypher => {
                let graph = self.graph(&vocab).map_err(|e| format!("{TOOL}: {e}"))?;
                if graph.is_empty() {
                    return Err(NO_GRAPH.to_owned());
                }
                format!(
                    "You translate questions about {} into one read query in Cypher, which \
                     Strata compiles to a program that a store of facts answers exactly.\n\n\
                     {}\n\nThe graph a query may match (each label with the relation its \
                     nodes come from, the relation's columns and the node's identity):\n{}\n",
                    pack.about_or_default(),
                    language.how_to_write(),
                    graph.describe(),
                )
            }
        };
        let examples: Vec<(&str, &str)> = match language {
            Language::Datalog => pack
                .examples
                .iter()
                .map(|e| (e.question.trim(), e.program.trim()))
                .collect(),
            Language::Cypher => pack
                .cypher_examples
                .iter()
                .map(|e| (e.question.trim(), e.query.trim()))
                .collect(),
        };
        if !examples.is_empty() {
            s.push_str("\nExamples:\n");
            for (question, program) in examples {
                s.push_str(&format!("# {question}\n{program}\n"));
            }
        }
        s.push_str(&format!(
            "\nReply with one {} and nothing else, in a ```{} block. Write stored values \
             exactly as the store holds them: the question comes with the stored values \
             found for its names.",
            language.noun(),
            language.name()
        ));
        Ok(s)
    }

    /// The first message: the question and the stored values its names ground to.
    fn question_message(&self, question: &str) -> String {
        let mut s = format!("Question: {question}\n");
        let grounded = self.ground(question);
        if grounded.is_empty() {
            s.push_str("\nNo stored value matched the names in the question.");
        } else {
            s.push_str("\nStored values found for the names in the question:");
            for line in grounded {
                s.push_str("\n- ");
                s.push_str(&line);
            }
        }
        s
    }

    /// The stored values `find` grounds each name of `question` to, one line each:
    /// `"api" (exact for api): imports.src 1 row, imports.dst 2 rows`.
    pub fn ground(&self, question: &str) -> Vec<String> {
        let mut lines = Vec::new();
        let mut shown = HashSet::new();
        for name in question_names(question) {
            let out = self.find(&FindArgs {
                name: name.clone(),
                limit: GROUND_VALUES,
            });
            if out.is_error {
                continue;
            }
            let Some(matches) = out
                .structured
                .as_ref()
                .and_then(|j| j.get("matches"))
                .and_then(|m| m.as_array())
            else {
                continue;
            };
            let kind_of = |m: &serde_json::Value| {
                m.get("match")
                    .and_then(|k| k.as_str())
                    .unwrap_or("")
                    .to_owned()
            };
            // A misspelling is worth showing only when nothing closer matched.
            let close = matches
                .iter()
                .any(|m| !matches!(kind_of(m).as_str(), "fuzzy" | "some words"));
            for m in matches {
                let kind = kind_of(m);
                let Some(value) = m.get("value").and_then(|v| v.as_str()) else {
                    continue;
                };
                // A value sharing only some words with the name says little.
                if kind == "some words"
                    || (close && kind == "fuzzy")
                    || !shown.insert(value.to_owned())
                {
                    continue;
                }
                let uses: Vec<String> = m
                    .get("uses")
                    .and_then(|u| u.as_array())
                    .map(|u| {
                        u.iter()
                            .map(|u| {
                                let rows = u.get("rows").and_then(|r| r.as_u64()).unwrap_or(0);
                                format!(
                                    "{}.{} {rows} row{}",
                                    u.get("relation").and_then(|r| r.as_str()).unwrap_or("?"),
                                    u.get("column").and_then(|r| r.as_str()).unwrap_or("?"),
                                    if rows == 1 { "" } else { "s" }
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let mut quoted = String::new();
                strata_eval::witness::write_value(&strata_eval::Value::text(value), &mut quoted);
                lines.push(format!("{quoted} ({kind} for {name}): {}", uses.join(", ")));
            }
        }
        lines
    }
}

/// The answer of a program that ran: `ran:` and the program, the rows as `query` writes
/// them, then each try.
fn answer(
    question: &str,
    a: &AskArgs,
    language: Language,
    role: &str,
    program: &str,
    out: ToolOutput,
    tries: &[Try],
) -> ToolOutput {
    let mut j = out.structured.unwrap_or_else(|| serde_json::json!({}));
    j["question"] = question.into();
    j["language"] = language.name().into();
    j["mode"] = a.mode.name().into();
    match language {
        Language::Datalog => j["program"] = program.into(),
        // The cypher tool's JSON holds the query (`cypher`) and the program it compiled to.
        Language::Cypher => j["cypher"] = program.into(),
    }
    j["answered_by"] = role.into();
    j["tries"] = tries.iter().map(Try::json).collect::<Vec<_>>().into();
    let text = if a.json {
        serde_json::to_string_pretty(&j).unwrap_or_default()
    } else {
        match language {
            Language::Datalog => {
                format!("ran: {program}\n{}\n\n{}", out.text, tries_text(tries))
            }
            // The cypher tool's answer opens with `ran:` and the program it compiled to.
            Language::Cypher => format!("{}\n\n{}", out.text, tries_text(tries)),
        }
    };
    ToolOutput {
        text,
        structured: Some(j),
        is_error: false,
    }
}

/// The tool error when no try produced a program that checks and runs.
fn failure(
    question: &str,
    a: &AskArgs,
    language: Language,
    tries: &[Try],
    cancelled: bool,
) -> ToolOutput {
    let why = if cancelled {
        "ask: the call was stopped (past the server's time limit) before a program ran".to_owned()
    } else {
        format!(
            "ask: no program that checks and runs after {} tr{}",
            tries.len(),
            if tries.len() == 1 { "y" } else { "ies" }
        )
    };
    let mut j = serde_json::json!({
        "question": question,
        "language": language.name(),
        "mode": a.mode.name(),
        "program": null,
        "tries": tries.iter().map(Try::json).collect::<Vec<_>>(),
    });
    let yourself = match language {
        Language::Datalog => "the program yourself with schema, find and query",
        Language::Cypher => {
            j["cypher"] = serde_json::Value::Null;
            "the query yourself with schema (path cypher), find and cypher"
        }
    };
    let text = format!(
        "{why}; write {yourself} (the last error says what to fix)\n\n{}",
        tries_text(tries)
    );
    ToolOutput {
        text: if a.json {
            serde_json::to_string_pretty(&j).unwrap_or(text)
        } else {
            text
        },
        structured: Some(j),
        is_error: true,
    }
}

/// Each try on its lines: `1. local NAME: PROGRAM`, then its error indented, or `ok`.
fn tries_text(tries: &[Try]) -> String {
    let mut s = String::from("tries:");
    for (i, t) in tries.iter().enumerate() {
        let program = match &t.program {
            Some(p) => p.lines().collect::<Vec<_>>().join("\n   "),
            None => "no reply".to_owned(),
        };
        s.push_str(&format!("\n{}. {} {}: {program}", i + 1, t.role, t.model));
        match &t.error {
            Some(e) => {
                for line in e.lines() {
                    s.push_str("\n   ");
                    s.push_str(line);
                }
            }
            None => s.push_str("\n   ok"),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn programs_come_out_of_fences() {
        assert_eq!(
            extract_program("Here:\n```datalog\nimports(\"api\", ?d) => ?d\n```\nDone."),
            r#"imports("api", ?d) => ?d"#
        );
        assert_eq!(extract_program("  p(?x) => ?x \n"), "p(?x) => ?x");
        assert_eq!(extract_program("```\np(?x)\n```"), "p(?x)");
        assert_eq!(extract_program("?- p(?x)"), "p(?x)");
    }

    #[test]
    fn names_are_quoted_phrases_then_uncommon_words() {
        assert_eq!(question_names("what does api import?"), ["api", "import"]);
        assert_eq!(
            question_names("who calls \"parse args\" in sym:src/cli.rs#main?"),
            ["parse args", "calls", "sym:src/cli.rs#main"]
        );
        assert_eq!(question_names("what is api's license?"), ["api", "license"]);
        assert!(question_names("what is it?").is_empty());
    }

    /// Flags from `--name value` pairs, with `tries`.
    fn flags(pairs: &[(&str, &str)], tries: u32) -> ModelFlags {
        let mut f = ModelFlags {
            tries,
            ..ModelFlags::default()
        };
        for (k, v) in pairs {
            let slot = match *k {
                "model-url" => &mut f.model_url,
                "model-name" => &mut f.model_name,
                "fallback-url" => &mut f.fallback_url,
                "fallback-name" => &mut f.fallback_name,
                "fallback-kind" => &mut f.fallback_kind,
                other => panic!("no flag {other}"),
            };
            *slot = Some((*v).to_owned());
        }
        f
    }

    #[test]
    fn flags_make_options() {
        let local = [
            ("model-url", "http://127.0.0.1:8080/v1"),
            ("model-name", "q"),
        ];
        let o = AskOptions::from_flags(&flags(&local, 2)).unwrap();
        assert!(o.offered() && o.fallback.is_none());
        assert_eq!(o.tries, 2);
        let o = AskOptions::from_flags(&flags(&[("fallback-name", "claude")], 1)).unwrap();
        assert_eq!(
            o.fallback.unwrap().endpoint(),
            "https://api.anthropic.com/v1/messages"
        );
        for (given, tries, missing) in [
            (&[("model-url", "http://h")][..], 1, "--model-name"),
            (&[("fallback-url", "http://h")][..], 1, "--fallback-name"),
            (
                &[("fallback-name", "m"), ("fallback-kind", "openai")][..],
                1,
                "--fallback-url",
            ),
            (&local[..], 0, "--tries"),
        ] {
            let e = AskOptions::from_flags(&flags(given, tries))
                .unwrap_err()
                .to_string();
            assert!(e.contains(missing), "{given:?}: {e}");
        }
        assert!(!AskOptions::default().offered());
    }
}
