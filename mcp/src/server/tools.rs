//! The tool table: every tool's name, title, description, input schema and runner (the
//! step from a call's JSON arguments to its handler), and the `tools/list` entries built
//! from it, with the host's own arguments added to each schema.

use std::sync::Arc;

use rmcp::model::{JsonObject, MetaObject, Tool, ToolAnnotations};
use serde::de::DeserializeOwned;
use strata_eval::Cancel;

use strata_app::host::{HostArguments, HostOptions};
use strata_app::pack::Pack;
use strata_app::{Call, CallError, Options, OptionsError, instructions};

use super::{Server, ServerError, ToolOutput};
use crate::args::{
    AskArgs, CypherArgs, ExplainArgs, FindArgs, LookArgs, QueryArgs, SchemaArgs, ValuesArgs,
};

/// One tool: its name, title, description (from the pack), input schema and handler.
/// Adding a tool (such as `cypher`) is one more entry of [`TOOLS`].
pub(super) struct ToolSpec {
    pub(super) name: &'static str,
    title: &'static str,
    description: fn(&Pack) -> String,
    schema: fn() -> Result<Arc<JsonObject>, String>,
    pub(super) run: fn(&Server, &Call, serde_json::Value, &Cancel) -> ToolOutput,
}

pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "query",
        title: "Run a Datalog program",
        description: instructions::query_description,
        schema: rmcp::handler::server::common::schema_for_input::<QueryArgs>,
        run: run_query,
    },
    ToolSpec {
        name: "schema",
        title: "Relations and modules",
        description: instructions::schema_description,
        schema: rmcp::handler::server::common::schema_for_input::<SchemaArgs>,
        run: run_schema,
    },
    ToolSpec {
        name: "explain",
        title: "Where a program's work went",
        description: instructions::explain_description,
        schema: rmcp::handler::server::common::schema_for_input::<ExplainArgs>,
        run: run_explain,
    },
    ToolSpec {
        name: "look",
        title: "Describe a relation or module",
        description: instructions::look_description,
        schema: rmcp::handler::server::common::schema_for_input::<LookArgs>,
        run: run_look,
    },
    ToolSpec {
        name: "values",
        title: "Distinct values of an argument",
        description: instructions::values_description,
        schema: rmcp::handler::server::common::schema_for_input::<ValuesArgs>,
        run: run_values,
    },
    ToolSpec {
        name: "find",
        title: "What a name may stand for",
        description: instructions::find_description,
        schema: rmcp::handler::server::common::schema_for_input::<FindArgs>,
        run: run_find,
    },
    ToolSpec {
        name: "cypher",
        title: "Ask in Cypher",
        description: |p| instructions::cypher_description(p, None),
        schema: rmcp::handler::server::common::schema_for_input::<CypherArgs>,
        run: run_cypher,
    },
    ToolSpec {
        name: strata_app::ask::TOOL,
        title: "Answer a question in plain language",
        description: strata_app::ask::description,
        schema: rmcp::handler::server::common::schema_for_input::<AskArgs>,
        run: run_ask,
    },
];

fn run_query(s: &Server, k: &Call, v: serde_json::Value, c: &Cancel) -> ToolOutput {
    with_args("query", v, |a: QueryArgs| {
        let r = a.request().map_err(CallError::from);
        ToolOutput::of(r.and_then(|r| s.app().query(k, &r, c)), a.json)
    })
}

fn run_cypher(s: &Server, k: &Call, v: serde_json::Value, c: &Cancel) -> ToolOutput {
    with_args("cypher", v, |a: CypherArgs| {
        let r = a.request().map_err(CallError::from);
        ToolOutput::of(r.and_then(|r| s.app().cypher(k, &r, c)), a.json)
    })
}

fn run_explain(s: &Server, k: &Call, v: serde_json::Value, c: &Cancel) -> ToolOutput {
    with_args("explain", v, |a: ExplainArgs| {
        let r = a.request().map_err(CallError::from);
        ToolOutput::of(
            r.and_then(|r| s.app().explain(k, &r, c))
                .map(|r| s.app().fit(r)),
            false,
        )
    })
}

fn run_schema(s: &Server, k: &Call, v: serde_json::Value, _: &Cancel) -> ToolOutput {
    with_args("schema", v, |a: SchemaArgs| {
        match s.app().schema(k, &a.request()) {
            Ok(r) => ToolOutput::plain(&s.app().fit(r)),
            Err(e) => ToolOutput::failure(&e, false),
        }
    })
}

fn run_look(s: &Server, k: &Call, v: serde_json::Value, _: &Cancel) -> ToolOutput {
    with_args("look", v, |a: LookArgs| {
        match s.app().look(k, &a.request()) {
            Ok(r) => ToolOutput::plain(&s.app().fit(r)),
            Err(e) => ToolOutput::failure(&e, false),
        }
    })
}

fn run_values(s: &Server, k: &Call, v: serde_json::Value, c: &Cancel) -> ToolOutput {
    with_args("values", v, |a: ValuesArgs| {
        ToolOutput::of(
            s.app().values(k, &a.request(), c).map(|r| s.app().fit(r)),
            false,
        )
    })
}

fn run_find(s: &Server, k: &Call, v: serde_json::Value, _: &Cancel) -> ToolOutput {
    with_args("find", v, |a: FindArgs| {
        ToolOutput::of(s.app().find(k, &a.request()).map(|r| s.app().fit(r)), false)
    })
}

fn run_ask(s: &Server, k: &Call, v: serde_json::Value, c: &Cancel) -> ToolOutput {
    with_args(strata_app::ask::TOOL, v, |a: AskArgs| {
        ToolOutput::of(s.app().ask(k, &a.request(), c), a.json)
    })
}

/// Decodes a call's arguments strictly; what does not fit the schema is a tool error.
fn with_args<A: DeserializeOwned>(
    tool: &str,
    value: serde_json::Value,
    f: impl FnOnce(A) -> ToolOutput,
) -> ToolOutput {
    match serde_json::from_value::<A>(value) {
        Ok(a) => f(a),
        Err(e) => ToolOutput::error(format!(
            "{tool}: the arguments do not fit the tool's schema: {e}"
        )),
    }
}

/// The tools `tools/list` answers, from [`TOOLS`]: `ask` only with a model to ask, each
/// schema's descriptions on one line and the host's arguments added, `cypher`'s
/// description with the `graph` summary when it is known.
pub(super) fn list(
    pack: &Pack,
    options: &Options,
    host: &HostOptions,
    graph: Option<&str>,
) -> Result<Vec<Tool>, ServerError> {
    let mut tools = Vec::with_capacity(TOOLS.len());
    for t in TOOLS {
        // `ask` is listed only with a model to ask.
        if t.name == strata_app::ask::TOOL && !options.ask.offered() {
            continue;
        }
        let mut schema = (t.schema)().map_err(|reason| OptionsError::Schema {
            tool: t.name.to_owned(),
            reason,
        })?;
        one_line_descriptions(Arc::make_mut(&mut schema));
        if let Some(h) = &host.arguments {
            add_host_arguments(t.name, Arc::make_mut(&mut schema), h)?;
        }
        let description = match t.name {
            "cypher" => instructions::cypher_description(pack, graph),
            _ => (t.description)(pack),
        };
        tools.push(
            Tool::new(t.name, description, schema)
                .with_title(t.title)
                .with_annotations(
                    ToolAnnotations::with_title(t.title)
                        .read_only(true)
                        .destructive(false)
                        .idempotent(true)
                        // `ask` reaches a model outside the database.
                        .open_world(t.name == strata_app::ask::TOOL),
                )
                .with_meta(result_size_meta(options.max_bytes)),
        );
    }
    Ok(tools)
}

/// The key of the `_meta` entry with which Claude Code shows a tool's result whole up to
/// that many characters (past 50,000 without it, it writes the result to a file and shows
/// the model a preview).
pub const MAX_RESULT_SIZE_CHARS: &str = "anthropic/maxResultSizeChars";

/// The most Claude Code accepts for [`MAX_RESULT_SIZE_CHARS`].
pub const MAX_RESULT_SIZE_CHARS_CAP: u64 = 500_000;

/// A tool's `_meta`: the answer budget (`max_bytes`, bytes, so never fewer characters) as
/// the result size its client is to show whole.
fn result_size_meta(max_bytes: u64) -> MetaObject {
    let mut meta = JsonObject::new();
    meta.insert(
        MAX_RESULT_SIZE_CHARS.to_owned(),
        max_bytes.min(MAX_RESULT_SIZE_CHARS_CAP).into(),
    );
    MetaObject(meta)
}

/// Adds the host's arguments to `tool`'s input schema, beside its own; a name that is one
/// of the tool's own is refused.
fn add_host_arguments(
    tool: &str,
    schema: &mut JsonObject,
    host: &HostArguments,
) -> Result<(), OptionsError> {
    let own: std::collections::BTreeSet<String> = schema
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    host.check(tool, &own)?;
    let properties = schema
        .entry("properties")
        .or_insert_with(|| serde_json::Value::Object(JsonObject::new()));
    let Some(properties) = properties.as_object_mut() else {
        return Err(OptionsError::Schema {
            tool: tool.to_owned(),
            reason: "it has no properties object".to_owned(),
        });
    };
    for (name, value) in &host.properties {
        properties.insert(name.clone(), value.clone());
    }
    if !host.required.is_empty() {
        let required = schema
            .entry("required")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        let Some(required) = required.as_array_mut() else {
            return Err(OptionsError::Schema {
                tool: tool.to_owned(),
                reason: "its required list is malformed".to_owned(),
            });
        };
        for name in &host.required {
            required.push(name.clone().into());
        }
    }
    Ok(())
}

/// Joins the lines of every `description` in a schema (doc comments wrap) into one line.
fn one_line_descriptions(object: &mut JsonObject) {
    for (key, value) in object.iter_mut() {
        match value {
            serde_json::Value::String(s) if key == "description" && s.contains('\n') => {
                *s = s.split('\n').map(str::trim).collect::<Vec<_>>().join(" ");
            }
            serde_json::Value::Object(o) => one_line_descriptions(o),
            serde_json::Value::Array(items) => {
                for item in items {
                    if let serde_json::Value::Object(o) = item {
                        one_line_descriptions(o);
                    }
                }
            }
            _ => {}
        }
    }
}
