//! What `ask` answers: the program out of a model's reply, the answer of the program that
//! ran ([`AskResponse`]: `ran:`, its rows, each try), or the error listing every try when
//! none did ([`AskError::NoProgram`]).

use serde::Serialize;

use super::tries::tries_text;
use super::{Language, Mode, NO_GRAPH, NOT_CONFIGURED, Try};
use crate::cypher::CypherResponse;
use crate::query::QueryResponse;
use crate::render::Render;

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

/// The answer of the program that ran, as its language's tool answered it.
#[derive(Clone, Debug, PartialEq)]
pub enum Answered {
    /// A Datalog program, run as `query` runs one.
    Datalog(QueryResponse),
    /// A Cypher query, run as `cypher` runs one.
    Cypher(CypherResponse),
}

/// A question answered: the program that ran, its answer and every try.
#[derive(Clone, Debug, PartialEq)]
pub struct AskResponse {
    /// The question, trimmed.
    pub question: String,
    /// The language the model wrote.
    pub language: Language,
    /// The models asked.
    pub mode: Mode,
    /// The program (or Cypher query) that ran.
    pub program: String,
    /// The model that wrote it: `local` or `frontier`.
    pub answered_by: &'static str,
    /// Every try, the one that ran last.
    pub tries: Vec<Try>,
    /// What it answered.
    pub answer: Answered,
}

impl Serialize for AskResponse {
    /// The answer's JSON with `question`, `language`, `mode`, `answered_by`, `tries`, and
    /// the program (`program` for Datalog; `cypher` for Cypher, beside the `program` it
    /// compiled to).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut j = self.answer.json();
        j["question"] = self.question.clone().into();
        j["language"] = self.language.name().into();
        j["mode"] = self.mode.name().into();
        match self.language {
            Language::Datalog => j["program"] = self.program.clone().into(),
            Language::Cypher => j["cypher"] = self.program.clone().into(),
        }
        j["answered_by"] = self.answered_by.into();
        j["tries"] = serde_json::to_value(&self.tries).map_err(serde::ser::Error::custom)?;
        j.serialize(s)
    }
}

impl Render for AskResponse {
    fn text(&self) -> String {
        match self.language {
            Language::Datalog => format!(
                "ran: {}\n{}\n\n{}",
                self.program,
                self.answer.text(),
                tries_text(&self.tries)
            ),
            // The cypher answer opens with `ran:` and the program it compiled to.
            Language::Cypher => format!("{}\n\n{}", self.answer.text(), tries_text(&self.tries)),
        }
    }
}

/// Why `ask` gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// No model is configured.
    #[error("{NOT_CONFIGURED}")]
    NotConfigured,
    /// No question.
    #[error("ask: give a question, in plain language: \"what does api depend on?\"")]
    NoQuestion,
    /// Mode `local` without a local model.
    #[error(
        "ask: mode local needs a local model, and this server has none; start it with \
         --model-url URL --model-name NAME, or ask with mode frontier"
    )]
    NoLocal,
    /// Mode `frontier` without a fallback.
    #[error(
        "ask: mode frontier needs a fallback model, and this server has none; start it with \
         --fallback-name NAME (--fallback-kind, --fallback-url, --fallback-key-env), or ask \
         with mode local"
    )]
    NoFallback,
    /// Language `cypher` over a database without a Cypher graph.
    #[error("{NO_GRAPH}")]
    NoGraph,
    /// The pack's Cypher mapping does not fit the vocabulary.
    #[error("ask: {0}")]
    Graph(strata_eval::MappingError),
    /// No try gave a program that checks and runs (or the request was stopped first).
    #[error("{}", failure_text(*.language, .tries, *.cancelled))]
    NoProgram {
        /// The question, trimmed.
        question: String,
        /// The language the models wrote.
        language: Language,
        /// The models asked.
        mode: Mode,
        /// Every try, with its error.
        tries: Vec<Try>,
        /// Whether the request was stopped (past its time limit).
        cancelled: bool,
    },
}

impl AskError {
    /// For [`AskError::NoProgram`], the failure as data: the question, language and mode,
    /// `program: null` (and `cypher: null`) and every try.
    pub fn json(&self) -> Option<serde_json::Value> {
        let AskError::NoProgram {
            question,
            language,
            mode,
            tries,
            ..
        } = self
        else {
            return None;
        };
        let mut j = serde_json::json!({
            "question": question,
            "language": language.name(),
            "mode": mode.name(),
            "program": null,
            "tries": serde_json::to_value(tries).unwrap_or_default(),
        });
        if *language == Language::Cypher {
            j["cypher"] = serde_json::Value::Null;
        }
        Some(j)
    }
}

/// The message when no try produced a program that checks and runs.
fn failure_text(language: Language, tries: &[Try], cancelled: bool) -> String {
    let why = if cancelled {
        "ask: the call was stopped (past the server's time limit) before a program ran".to_owned()
    } else {
        format!(
            "ask: no program that checks and runs after {} tr{}",
            tries.len(),
            if tries.len() == 1 { "y" } else { "ies" }
        )
    };
    let yourself = match language {
        Language::Datalog => "the program yourself with schema, find and query",
        Language::Cypher => "the query yourself with schema (path cypher), find and cypher",
    };
    format!(
        "{why}; write {yourself} (the last error says what to fix)\n\n{}",
        tries_text(tries)
    )
}
