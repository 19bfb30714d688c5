//! The loop of tries: each model in the call's [`Mode`] turn by turn, each writing a
//! program, run as its language's tool runs it, its error going back to the model for
//! another try; each [`Try`] recorded.

use strata_eval::budget::Cancel;

use super::{AskArgs, Language, Mode, NOT_CONFIGURED, TOOL, answer, extract_program, failure};
use crate::args::{CypherArgs, QueryArgs};
use crate::model::{Message, Model, Role};
use crate::server::{Call, Server, ToolOutput};

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
    pub(super) fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "model": self.role,
            "name": self.model,
            "program": self.program,
            "error": self.error,
        })
    }
}

impl Server {
    /// `ask`: translates a question into a program with the configured models, runs it and
    /// answers the program, its rows and each try.
    pub fn ask(&self, a: &AskArgs, cancel: &Cancel) -> ToolOutput {
        self.ask_in(&Call::plain(TOOL), a, cancel)
    }

    pub(super) fn ask_in(&self, call: &Call, a: &AskArgs, cancel: &Cancel) -> ToolOutput {
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
}
