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
//!
//! The pieces: the configuration (`options`), what the model is shown (`prompt`), the loop
//! of tries (`tries`) and what the call answers (`answer`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::pack::Pack;

mod answer;
mod options;
mod prompt;
#[cfg(test)]
mod tests;
mod tries;

pub use answer::{Answered, AskError, AskResponse, extract_program};
pub use options::{AskOptions, ModelFlags};
pub use prompt::{GROUND_NAMES, GROUND_VALUES, NO_GRAPH, question_names};
pub use tries::{AskRequest, Try};

/// The tool's name.
pub const TOOL: &str = "ask";

/// How many programs each model may write for one question when the configuration does not
/// say.
pub const DEFAULT_TRIES: u32 = 3;

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
