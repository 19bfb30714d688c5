//! The tools' arguments: strict (an unknown or misspelled argument is refused), with no
//! `null` unions in their schemas (an argument left out takes its default).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use strata_eval::{Bind, Value};

/// A value of `bind`: a string, a number, or a list the variable ranges over.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum BindValue {
    /// A text value.
    Text(String),
    /// A number.
    Number(f64),
    /// A list of values the variable ranges over.
    List(Vec<BindScalar>),
}

/// One value of a `bind` list.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum BindScalar {
    /// A text value.
    Text(String),
    /// A number.
    Number(f64),
}

/// `query`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryArgs {
    /// The program: rules, if any, then one goal, e.g. `deps.depends_on("app", ?d) => ?d`.
    pub program: String,
    /// Values for the program's variables by name (with or without the `?`): a string, a
    /// number, or a list of them the variable ranges over.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, BindValue>")]
    pub bind: serde_json::Map<String, serde_json::Value>,
    /// The most rows to answer (0: the server's limit; never more than it).
    #[serde(default)]
    pub limit: u64,
    /// The most work (candidate tuples examined) to spend (0: the server's cap; never more
    /// than it).
    #[serde(default)]
    pub max_work: u64,
    /// The page_token the previous page ended with, to continue from it.
    #[serde(default)]
    pub page_token: String,
    /// Answer as JSON: columns, rows, witnesses, total, next and the snapshot read.
    #[serde(default)]
    pub json: bool,
    /// A try: answer at most this many rows and, when none come, say which literal matched
    /// nothing (0: not a try).
    #[serde(default)]
    pub sample: u64,
}

/// `cypher`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CypherArgs {
    /// The Cypher read query, e.g. `MATCH (p:Package)-[:IMPORTS]->(:Package {name: $to})
    /// RETURN p.name AS importer`.
    pub query: String,
    /// Values for the query's $parameters by name (without the $): a string, a number, or a
    /// list of them.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, BindValue>")]
    pub params: serde_json::Map<String, serde_json::Value>,
    /// The most rows to answer (0: the server's limit; never more than it).
    #[serde(default)]
    pub limit: u64,
    /// The most work (candidate tuples examined) to spend (0: the server's cap; never more
    /// than it).
    #[serde(default)]
    pub max_work: u64,
    /// The page_token the previous page ended with, to continue from it.
    #[serde(default)]
    pub page_token: String,
    /// Answer as JSON: the Cypher text, the program, columns, rows, witnesses, total, next.
    #[serde(default)]
    pub json: bool,
    /// A try: answer at most this many rows and, when none come, say which literal matched
    /// nothing (0: not a try).
    #[serde(default)]
    pub sample: u64,
}

/// `schema`'s arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchemaArgs {
    /// A module (`deps`) or relation (`deps.depends_on`, `imports`) to describe, or `data`
    /// for the pack; empty for every relation and module.
    #[serde(default)]
    pub path: String,
}

/// `explain`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainArgs {
    /// The program to run and report on.
    pub program: String,
    /// Values for the program's variables by name, as query takes them.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, BindValue>")]
    pub bind: serde_json::Map<String, serde_json::Value>,
    /// The most work to spend (0: the server's cap; never more than it).
    #[serde(default)]
    pub max_work: u64,
}

/// `look`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LookArgs {
    /// A relation (`pkg`, `deps.depends_on`) or module (`deps`) to describe.
    pub target: String,
}

/// `values`' arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValuesArgs {
    /// The argument to list: `relation.column` (`pkg.license`) or `relation.N`, N counting
    /// from 1 (`imports.2`).
    pub target: String,
    /// The most values to answer (0: 20; never more than the server's limit).
    #[serde(default)]
    pub limit: u64,
}

/// `find`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindArgs {
    /// The name to ground: partial, misspelled or in words (`parse args`, `the parser`).
    pub name: String,
    /// The most matches to answer (0: 10; never more than the server's limit).
    #[serde(default)]
    pub limit: u64,
}

/// Turns a call's `bind` object into the engine's binds, refusing what is not a string, a
/// number or a list of them, with the variable's name.
pub fn binds(
    tool: &str,
    bind: &serde_json::Map<String, serde_json::Value>,
) -> Result<Vec<(String, Bind)>, String> {
    let scalar = |var: &str, v: &serde_json::Value| -> Result<Value, String> {
        match v {
            serde_json::Value::String(s) => Ok(Value::Text(s.clone())),
            serde_json::Value::Number(n) => n
                .as_f64()
                .map(Value::Number)
                .ok_or_else(|| format!("{tool}: bind \"{var}\": the number {n} is out of range")),
            other => Err(format!(
                "{tool}: bind \"{var}\": give a string, a number or a list of them, not {}",
                kind(other)
            )),
        }
    };
    let mut out = Vec::with_capacity(bind.len());
    for (var, v) in bind {
        let name = var.trim_start_matches('?').to_owned();
        let b = match v {
            serde_json::Value::Array(items) => Bind::List(
                items
                    .iter()
                    .map(|i| scalar(var, i))
                    .collect::<Result<_, _>>()?,
            ),
            other => Bind::One(scalar(var, other)?),
        };
        out.push((name, b));
    }
    Ok(out)
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list of lists",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn binds_take_strings_numbers_and_lists() {
        let m: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(r#"{"?a": "x", "b": 2, "c": ["y", 3]}"#).unwrap();
        let b = binds("query", &m).unwrap();
        assert_eq!(b[0], ("a".to_owned(), Bind::One(Value::text("x"))));
        assert_eq!(b[1], ("b".to_owned(), Bind::One(Value::Number(2.0))));
        assert_eq!(
            b[2],
            (
                "c".to_owned(),
                Bind::List(vec![Value::text("y"), Value::Number(3.0)])
            )
        );
    }

    #[test]
    fn a_bad_bind_names_its_variable() {
        let m: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(r#"{"a": null}"#).unwrap();
        assert_eq!(
            binds("query", &m).unwrap_err(),
            "query: bind \"a\": give a string, a number or a list of them, not null"
        );
        let m: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(r#"{"a": [[1]]}"#).unwrap();
        assert!(
            binds("query", &m)
                .unwrap_err()
                .contains("not a list of lists")
        );
    }

    #[test]
    fn unknown_arguments_are_refused() {
        let err = serde_json::from_str::<QueryArgs>(r#"{"program": "p(?x)", "limt": 2}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `limt`"), "{err}");
    }
}
