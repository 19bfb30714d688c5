//! The protocol's edges, in one place: the MCP revisions the server speaks, the JSON-RPC
//! errors it answers for what rmcp cannot read (a method it lacks, params that do not fit
//! their method), and the checks of a request before rmcp sees it: its params
//! ([`invalid_params`]), and the methods of extensions the server does not declare, which
//! rmcp would answer with a bare name ([`undeclared_method`]).
//!
//! rmcp reads a request whose params do not fit its method as an unknown method (so
//! `"name": 5` on `tools/call` would answer -32601 "tools/call"), and a request whose params
//! are not an object not at all (answered with no id). [`invalid_params`] catches both
//! first, on stdio and over HTTP, and names the member at fault.

use rmcp::ErrorData as McpError;
use rmcp::model::{ErrorCode, ProtocolVersion};
use serde_json::{Value, json};

/// Every MCP revision the server speaks, oldest first. Up to 2025-11-25 a session starts
/// with `initialize`, which answers the revision asked for when it is one of these (else
/// the newest that has `initialize`, 2025-11-25); 2026-07-28 has no `initialize`: a client
/// opens with `server/discover` and names the revision in each request's `_meta`
/// (`io.modelcontextprotocol/protocolVersion`), which rmcp 3.11 serves.
pub const PROTOCOL_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// JSON-RPC's "Method not found" (-32601), the method named in `data`.
pub fn method_not_found(method: &str) -> McpError {
    McpError::new(
        ErrorCode::METHOD_NOT_FOUND,
        "Method not found",
        Some(json!({ "method": method })),
    )
}

/// The prefixes of the methods of extensions the server does not declare: tasks
/// (`tasks/get`, `tasks/update`, `tasks/cancel`...) and skills (`skills/list`,
/// `skills/get`, and `resources/directory/read`, which skills' `directoryRead` gates).
/// rmcp answers the ones it knows itself, before the handler sees them, with -32601 and
/// the bare method name as the message and no `data`.
const UNDECLARED: &[&str] = &["tasks/", "skills/", "resources/directory/read"];

/// For a request of a method of an extension the server does not declare
/// (tasks, skills, directory reads), the answer every method the server lacks gets: [`method_not_found`],
/// the method in `data`, whatever its params. `None` for any other message, and for a
/// notification (it has no id to answer).
pub fn undeclared_method(message: &Value) -> Option<McpError> {
    message.get("id")?;
    let method = message.get("method").and_then(Value::as_str)?;
    UNDECLARED
        .iter()
        .any(|p| method.starts_with(p))
        .then(|| method_not_found(method))
}

/// What a member of a method's params must be.
#[derive(Clone, Copy)]
enum Kind {
    String,
    Object,
    /// An object, or null.
    ObjectOrNull,
}

impl Kind {
    fn fits(self, v: &Value) -> bool {
        match self {
            Kind::String => v.is_string(),
            Kind::Object => v.is_object(),
            Kind::ObjectOrNull => v.is_object() || v.is_null(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::String => "a string",
            Kind::Object => "an object",
            Kind::ObjectOrNull => "an object",
        }
    }
}

/// One member of a method's params: its name, kind and whether it must be there.
type Member = (&'static str, Kind, bool);

/// The methods whose params are checked, and their members (what rmcp needs to read them).
const METHODS: &[(&str, &[Member])] = &[
    (
        "initialize",
        &[
            ("protocolVersion", Kind::String, true),
            ("capabilities", Kind::Object, true),
            ("clientInfo", Kind::Object, true),
        ],
    ),
    (
        "tools/call",
        &[
            ("name", Kind::String, true),
            ("arguments", Kind::ObjectOrNull, false),
        ],
    ),
    (
        "prompts/get",
        &[
            ("name", Kind::String, true),
            ("arguments", Kind::ObjectOrNull, false),
        ],
    ),
    ("resources/read", &[("uri", Kind::String, true)]),
    (
        "completion/complete",
        &[
            ("ref", Kind::Object, true),
            ("argument", Kind::Object, true),
        ],
    ),
    ("tools/list", &[("cursor", Kind::String, false)]),
    ("resources/list", &[("cursor", Kind::String, false)]),
    (
        "resources/templates/list",
        &[("cursor", Kind::String, false)],
    ),
    ("prompts/list", &[("cursor", Kind::String, false)]),
    ("ping", &[]),
    ("server/discover", &[]),
];

/// Why a request's params do not fit its method, naming the member at fault: params that
/// are not an object, a required member missing, a member of the wrong kind, and within
/// `completion/complete` the reference's `type` and the argument's `name` and `value`.
/// `None` when they fit, for a method not checked here, and for a notification (it has no
/// id to answer).
pub fn invalid_params(message: &Value) -> Option<String> {
    message.get("id")?;
    let method = message.get("method").and_then(Value::as_str)?;
    let (_, members) = METHODS.iter().find(|(m, _)| *m == method)?;
    let bad = |why: String| Some(format!("Invalid params: {method}: {why}"));
    let params = match message.get("params") {
        None | Some(Value::Null) => {
            return match members.iter().find(|(_, _, required)| *required) {
                Some((name, ..)) => bad(format!("the params are missing (\"{name}\" is required)")),
                None => None,
            };
        }
        Some(Value::Object(p)) => p,
        Some(other) => {
            return bad(format!(
                "the params must be an object, not {}",
                described(other)
            ));
        }
    };
    if let Some(meta) = params.get("_meta")
        && !meta.is_object()
    {
        return bad(format!(
            "\"_meta\" must be an object, not {}",
            described(meta)
        ));
    }
    for (name, kind, required) in *members {
        match params.get(*name) {
            None if *required => return bad(format!("\"{name}\" is missing")),
            None => {}
            Some(v) if !kind.fits(v) => {
                return bad(format!(
                    "\"{name}\" must be {}, not {}",
                    kind.name(),
                    described(v)
                ));
            }
            Some(_) => {}
        }
    }
    if method == "completion/complete" {
        return completion_params(params).and_then(bad);
    }
    if method == "prompts/get"
        && let Some(Value::Object(args)) = params.get("arguments")
        && let Some((k, v)) = args.iter().find(|(_, v)| !v.is_string())
    {
        return bad(format!(
            "the argument \"{k}\" must be a string, not {}",
            described(v)
        ));
    }
    None
}

/// What is wrong inside `completion/complete`'s `ref` and `argument`.
fn completion_params(params: &serde_json::Map<String, Value>) -> Option<String> {
    let reference = params.get("ref")?;
    match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            if !reference.get("name").is_some_and(Value::is_string) {
                return Some("\"ref.name\" must be a string (the prompt's name)".to_owned());
            }
        }
        Some("ref/resource") => {
            if !reference.get("uri").is_some_and(Value::is_string) {
                return Some("\"ref.uri\" must be a string (the resource's URI)".to_owned());
            }
        }
        _ => {
            return Some("\"ref.type\" must be \"ref/prompt\" or \"ref/resource\"".to_owned());
        }
    }
    let argument = params.get("argument")?;
    for member in ["name", "value"] {
        if !argument.get(member).is_some_and(Value::is_string) {
            return Some(format!("\"argument.{member}\" must be a string"));
        }
    }
    None
}

/// A JSON value's kind, and the value when it is short, for an error message.
fn described(v: &Value) -> String {
    let kind = match v {
        Value::Null => return "null".to_owned(),
        Value::Bool(_) => "the boolean",
        Value::Number(_) => "the number",
        Value::String(_) => "the string",
        Value::Array(_) => return "an array".to_owned(),
        Value::Object(_) => return "an object".to_owned(),
    };
    let text = v.to_string();
    if text.chars().count() > 40 {
        format!("{kind} {}...", text.chars().take(40).collect::<String>())
    } else {
        format!("{kind} {text}")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn check(v: Value) -> Option<String> {
        invalid_params(&v)
    }

    #[test]
    fn issue_30_invalid_params_name_the_member() {
        let call = |params: Value| {
            check(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": params}))
        };
        assert_eq!(
            call(json!({"name": 5})).unwrap(),
            "Invalid params: tools/call: \"name\" must be a string, not the number 5"
        );
        assert_eq!(
            call(json!([1, 2])).unwrap(),
            "Invalid params: tools/call: the params must be an object, not an array"
        );
        assert_eq!(
            call(json!({})).unwrap(),
            "Invalid params: tools/call: \"name\" is missing"
        );
        assert_eq!(
            call(json!({"name": "q", "arguments": "x"})).unwrap(),
            "Invalid params: tools/call: \"arguments\" must be an object, not the string \"x\""
        );
        assert!(call(json!({"name": "q", "arguments": {"a": 1}})).is_none());
        assert!(call(json!({"name": "q", "arguments": null})).is_none());
        assert_eq!(
            check(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"})).unwrap(),
            "Invalid params: tools/call: the params are missing (\"name\" is required)"
        );
        // A notification has no id to answer; a method not checked here is rmcp's.
        assert!(check(json!({"jsonrpc": "2.0", "method": "tools/call", "params": 1})).is_none());
        assert!(check(json!({"jsonrpc": "2.0", "id": 1, "method": "x/y", "params": 1})).is_none());
        assert!(check(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).is_none());
    }

    #[test]
    fn completion_and_prompt_params_are_checked_inside() {
        let complete = |params: Value| {
            check(
                json!({"jsonrpc": "2.0", "id": 1, "method": "completion/complete",
                         "params": params}),
            )
        };
        assert!(
            complete(json!({"ref": {"type": "ref/prompt", "name": "p"},
                            "argument": {"name": "a", "value": ""}}))
            .is_none()
        );
        assert!(
            complete(json!({"ref": {"type": "ref/x"}, "argument": {"name": "a", "value": ""}}))
                .unwrap()
                .contains("\"ref.type\"")
        );
        assert!(
            complete(json!({"ref": {"type": "ref/prompt", "name": "p"},
                            "argument": {"name": "a"}}))
            .unwrap()
            .contains("\"argument.value\"")
        );
        let got = check(json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get",
            "params": {"name": "used_by", "arguments": {"target": 3}}}))
        .unwrap();
        assert_eq!(
            got,
            "Invalid params: prompts/get: the argument \"target\" must be a string, not the \
             number 3"
        );
        assert!(
            check(
                json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                         "params": {"uri": 7, "_meta": {}}})
            )
            .unwrap()
            .contains("\"uri\" must be a string")
        );
    }

    #[test]
    fn issue_28_undeclared_extensions_methods_are_not_found_with_the_method() {
        for method in [
            "tasks/get",
            "tasks/list",
            "tasks/cancel",
            "tasks/update",
            "tasks/result",
            "skills/list",
            "skills/get",
            "resources/directory/read",
        ] {
            let e = undeclared_method(&json!({"jsonrpc": "2.0", "id": 1, "method": method,
                "params": {"taskId": "t"}}))
            .unwrap();
            assert_eq!(e, method_not_found(method));
        }
        // A notification, and the methods the server serves, are not answered here.
        assert!(undeclared_method(&json!({"jsonrpc": "2.0", "method": "tasks/get"})).is_none());
        for method in [
            "tools/list",
            "resources/read",
            "resources/list",
            "ping",
            "task",
        ] {
            assert!(
                undeclared_method(&json!({"jsonrpc": "2.0", "id": 1, "method": method})).is_none()
            );
        }
    }

    #[test]
    fn the_revisions_are_rmcps_known_ones() {
        assert_eq!(PROTOCOL_VERSIONS, ProtocolVersion::KNOWN_VERSIONS);
        let e = method_not_found("completion/x");
        assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
        assert_eq!(e.message, "Method not found");
        assert_eq!(e.data, Some(json!({"method": "completion/x"})));
    }
}
