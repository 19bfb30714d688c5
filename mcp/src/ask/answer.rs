//! What `ask` answers: the program out of a model's reply, the answer of the program that
//! ran (`ran:`, its rows, each try), or the tool error listing every try when none did.

use super::{AskArgs, Language, Try};
use crate::server::ToolOutput;

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

/// The answer of a program that ran: `ran:` and the program, the rows as `query` writes
/// them, then each try.
pub(super) fn answer(
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
pub(super) fn failure(
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
