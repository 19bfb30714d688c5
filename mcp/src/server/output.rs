//! What a tool call answers ([`ToolOutput`]): its text, its structured content and whether
//! it is an error; built from the application's response in the rendering the call chose,
//! or from its error, carried as data in the structured content.

use strata_app::{CallError, Render};

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

    /// A response: its JSON as the structured content, and as the text its JSON (compact:
    /// an agent pays for every indentation byte) when the call asked for `json`, else its
    /// text rendering.
    pub fn answer(response: &impl Render, json: bool) -> ToolOutput {
        let structured = response.json();
        let text = if json {
            serde_json::to_string(&structured).unwrap_or_default()
        } else {
            response.text()
        };
        ToolOutput {
            text,
            structured: Some(structured),
            is_error: false,
        }
    }

    /// A response whose text alone is the answer (no structured content).
    pub fn plain(response: &impl Render) -> ToolOutput {
        ToolOutput::text(response.text())
    }

    /// A tool error: the error's text (its JSON, compact, when the call asked for `json`
    /// and the error is `ask`'s failure with every try), and the error as data.
    pub fn failure(e: &CallError, json: bool) -> ToolOutput {
        let structured = e.json();
        let text = match e {
            CallError::Ask(a) if json && a.json().is_some() => {
                serde_json::to_string(&structured).unwrap_or_else(|_| e.to_string())
            }
            _ => e.to_string(),
        };
        ToolOutput {
            text,
            structured: Some(structured),
            is_error: true,
        }
    }

    /// The answer of a request: [`ToolOutput::answer`] or [`ToolOutput::failure`].
    pub fn of<R: Render>(result: Result<R, CallError>, json: bool) -> ToolOutput {
        match result {
            Ok(r) => ToolOutput::answer(&r, json),
            Err(e) => ToolOutput::failure(&e, json),
        }
    }
}
