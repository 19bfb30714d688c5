//! The loop of tries: each model in the request's [`Mode`] turn by turn, each writing a
//! program, run as its language's tool runs it, its error going back to the model for
//! another try; each [`Try`] recorded.

use serde::Serialize;
use strata_eval::Cancel;

use super::{Answered, AskError, AskResponse, Language, Mode, extract_program};
use crate::app::App;
use crate::base::Call;
use crate::cypher::CypherRequest;
use crate::error::CallError;
use crate::model::{Message, Model, Role};
use crate::options::Page;
use crate::query::QueryRequest;
use crate::render::Render;

/// A question to answer in plain language.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AskRequest {
    /// The question: "what does api depend on?".
    pub question: String,
    /// Which models to ask.
    pub mode: Mode,
    /// The language the model writes (`None`: the pack's `ask_language`).
    pub language: Option<Language>,
    /// The most rows (0: the application's limit).
    pub limit: u64,
    /// The most work the program may spend (0: the application's cap).
    pub max_work: u64,
}

/// One try: the model asked, the program it wrote and what became of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Try {
    /// `local` or `frontier`.
    #[serde(rename = "model")]
    pub role: &'static str,
    /// The model, as [`Model::label`] writes it.
    #[serde(rename = "name")]
    pub model: String,
    /// The program it wrote; `None` when it gave no reply.
    pub program: Option<String>,
    /// Why the program (or the request) failed; `None` for the program that ran.
    pub error: Option<String>,
}

impl App {
    /// `ask`: translates a question into a program with the configured models, runs it and
    /// answers the program, its rows and each try.
    pub fn ask(
        &self,
        call: &Call,
        r: &AskRequest,
        cancel: &Cancel,
    ) -> Result<AskResponse, CallError> {
        let o = &self.options().ask;
        if !o.offered() {
            return Err(AskError::NotConfigured.into());
        }
        let question = r.question.trim();
        if question.is_empty() {
            return Err(AskError::NoQuestion.into());
        }
        let _slot = self.admit(call, "ask", cancel)?;
        let models: Vec<(&'static str, &Model)> = match r.mode {
            Mode::Local => match &o.local {
                Some(m) => vec![("local", m)],
                None => return Err(AskError::NoLocal.into()),
            },
            Mode::Frontier => match &o.fallback {
                Some(m) => vec![("frontier", m)],
                None => return Err(AskError::NoFallback.into()),
            },
            Mode::Both => [("local", &o.local), ("frontier", &o.fallback)]
                .into_iter()
                .filter_map(|(r, m)| m.as_ref().map(|m| (r, m)))
                .collect(),
        };
        let language = r.language.unwrap_or(self.pack().ask_language);
        let system = self.system_prompt(call, language)?;
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
                let error = match self.run_try(call, r, language, &program, cancel) {
                    Ok(answer) => {
                        tries.push(Try {
                            role,
                            model: model.label(),
                            program: Some(program.clone()),
                            error: None,
                        });
                        return Ok(AskResponse {
                            question: question.to_owned(),
                            language,
                            mode: r.mode,
                            program,
                            answered_by: role,
                            tries,
                            answer,
                        });
                    }
                    Err(e) => e.to_string(),
                };
                messages.push(Message {
                    role: Role::Assistant,
                    content: reply,
                });
                messages.push(Message {
                    role: Role::User,
                    content: format!(
                        "That {noun} fails:\n{error}\n\nWrite the whole corrected {noun}, \
                         alone, in a ```{} block.",
                        language.name(),
                        noun = language.noun(),
                    ),
                });
                tries.push(Try {
                    role,
                    model: model.label(),
                    program: Some(program),
                    error: Some(error),
                });
            }
        }
        Err(AskError::NoProgram {
            question: question.to_owned(),
            language,
            mode: r.mode,
            tries,
            cancelled: cancel.is_cancelled(),
        }
        .into())
    }

    /// Runs one try's program as the tool of its language runs it.
    fn run_try(
        &self,
        call: &Call,
        r: &AskRequest,
        language: Language,
        program: &str,
        cancel: &Cancel,
    ) -> Result<Answered, CallError> {
        let page = Page {
            limit: (r.limit > 0).then_some(r.limit),
            max_work: r.max_work,
            ..Page::default()
        };
        Ok(match language {
            Language::Datalog => {
                let request = QueryRequest {
                    program: program.to_owned(),
                    binds: Vec::new(),
                    page,
                };
                Answered::Datalog(self.query_admitted(call, &request, cancel)?)
            }
            Language::Cypher => {
                let request = CypherRequest {
                    query: program.to_owned(),
                    params: Vec::new(),
                    page,
                };
                Answered::Cypher(self.cypher_admitted(call, &request, cancel)?)
            }
        })
    }
}

/// Each try on its lines: `1. local NAME: PROGRAM`, then its error indented, or `ok`.
pub(super) fn tries_text(tries: &[Try]) -> String {
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

impl Answered {
    /// The answer's text, as its tool writes it.
    pub(super) fn text(&self) -> String {
        match self {
            Answered::Datalog(q) => q.text(),
            Answered::Cypher(c) => c.text(),
        }
    }

    /// The answer's JSON, as its tool writes it.
    pub(super) fn json(&self) -> serde_json::Value {
        match self {
            Answered::Datalog(q) => q.json(),
            Answered::Cypher(c) => c.json(),
        }
    }
}
