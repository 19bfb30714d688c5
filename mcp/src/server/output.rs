//! What a tool call answers ([`ToolOutput`]): its text, its structured content and whether
//! it is an error, with the pieces of structured content every tool shares (the snapshot
//! read, the engine's error).

use strata_eval::query::QueryError;
use strata_store::Snapshot;

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

/// The engine's error as the agent reads it: a program error as rendered (caret and fix),
/// an evaluation error with what stopped it.
pub(super) fn query_error(e: QueryError) -> String {
    e.to_string()
}

/// The snapshot an answer was read from: the batch sequence number and its labels.
pub fn snapshot_json(snap: &Snapshot) -> serde_json::Value {
    serde_json::json!({
        "seq": snap.seq(),
        "labels": snap.last_batch().map(|b| b.labels.clone()).unwrap_or_default(),
    })
}
