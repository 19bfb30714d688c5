//! Binds: values for a program's variables (or a Cypher query's `$parameters`), by name.
//!
//! One rule for every adapter: a value is a string (text), a number, or a list of them the
//! variable ranges over; anything else is refused, naming the variable. A name may carry
//! its `?`; a name given twice ranges over every value given. The MCP tools hand a JSON
//! object ([`binds_from_json`]); the command line hands `var=value` flags
//! ([`binds_from_flags`]), whose value is read as JSON when it reads as a string, a number
//! or an array, and is text otherwise.

use strata_eval::{Bind, Value};

/// A bind that is not a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// The value is not a string, a number or a list of them.
    #[error("{tool}: bind \"{variable}\": give a string, a number or a list of them, not {got}")]
    NotAValue {
        /// The tool (or command) the bind was given to.
        tool: String,
        /// The variable, as given.
        variable: String,
        /// What was given instead (`null`, `a boolean`, `a list of lists`, ...).
        got: &'static str,
    },
    /// A number JSON holds that no value can.
    #[error("{tool}: bind \"{variable}\": the number {number} is out of range")]
    OutOfRange {
        /// The tool (or command) the bind was given to.
        tool: String,
        /// The variable, as given.
        variable: String,
        /// The number, as written.
        number: String,
    },
    /// A command-line bind without `=`.
    #[error("{flag} {given}: write var=value, e.g. {flag} from=app")]
    NoEquals {
        /// The flag (`--bind`, `--param`).
        flag: String,
        /// The flag's argument, as given.
        given: String,
    },
}

impl BindError {
    /// The variable the error is about (the whole flag for a flag without `=`).
    pub fn variable(&self) -> &str {
        match self {
            BindError::NotAValue { variable, .. } | BindError::OutOfRange { variable, .. } => {
                variable
            }
            BindError::NoEquals { given, .. } => given,
        }
    }
}

/// Binds gathered one at a time: a name given twice ranges over every value given.
#[derive(Debug, Default)]
struct Gathered(Vec<(String, Vec<Value>, bool)>);

impl Gathered {
    fn push(&mut self, var: &str, values: Vec<Value>, list: bool) {
        let var = var.trim_start_matches('?');
        match self.0.iter_mut().find(|(v, _, _)| v == var) {
            Some((_, vs, l)) => {
                vs.extend(values);
                *l = true;
            }
            None => self.0.push((var.to_owned(), values, list)),
        }
    }

    fn finish(self) -> Vec<(String, Bind)> {
        self.0
            .into_iter()
            .map(|(var, mut vs, list)| {
                let bind = if list || vs.len() != 1 {
                    Bind::List(vs)
                } else {
                    Bind::One(vs.remove(0))
                };
                (var, bind)
            })
            .collect()
    }
}

/// One JSON value of a bind as the engine's values, and whether it is a list.
fn json_values(
    tool: &str,
    var: &str,
    v: &serde_json::Value,
) -> Result<(Vec<Value>, bool), BindError> {
    let scalar = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => Ok(Value::Text(s.clone())),
        serde_json::Value::Number(n) => {
            n.as_f64()
                .map(Value::Number)
                .ok_or_else(|| BindError::OutOfRange {
                    tool: tool.to_owned(),
                    variable: var.to_owned(),
                    number: n.to_string(),
                })
        }
        other => Err(BindError::NotAValue {
            tool: tool.to_owned(),
            variable: var.to_owned(),
            got: kind(other),
        }),
    };
    match v {
        serde_json::Value::Array(items) => {
            Ok((items.iter().map(scalar).collect::<Result<_, _>>()?, true))
        }
        other => Ok((vec![scalar(other)?], false)),
    }
}

/// The binds of a JSON object (an MCP tool's `bind` or `params`): each value a string, a
/// number or a list of them.
pub fn binds_from_json(
    tool: &str,
    bind: &serde_json::Map<String, serde_json::Value>,
) -> Result<Vec<(String, Bind)>, BindError> {
    let mut out = Gathered::default();
    for (var, v) in bind {
        let (values, list) = json_values(tool, var, v)?;
        out.push(var, values, list);
    }
    Ok(out.finish())
}

/// The binds of `var=value` flags (`strata query --bind`, `strata cypher --param`): a value
/// that reads as a JSON string, number or array is taken as such, anything else is text
/// (or a number, written as a dump writes one); a variable repeated, or an array, is a
/// list.
pub fn binds_from_flags(
    command: &str,
    flag: &str,
    flags: &[String],
) -> Result<Vec<(String, Bind)>, BindError> {
    let mut out = Gathered::default();
    for f in flags {
        let Some((var, raw)) = f.split_once('=') else {
            return Err(BindError::NoEquals {
                flag: flag.to_owned(),
                given: f.clone(),
            });
        };
        let (values, list) = match serde_json::from_str::<serde_json::Value>(raw) {
            Ok(
                v @ (serde_json::Value::String(_)
                | serde_json::Value::Number(_)
                | serde_json::Value::Array(_)),
            ) => json_values(command, var, &v)?,
            _ => (vec![Value::from_field(raw)], false),
        };
        out.push(var, values, list);
    }
    Ok(out.finish())
}

/// What a value that is not a bind is: an array inside a bind's list is a list of lists.
fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Array(_) => "a list of lists",
        other => crate::host::kind(other),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn object(s: &str) -> serde_json::Map<String, serde_json::Value> {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn json_binds_take_strings_numbers_and_lists() {
        let b = binds_from_json("query", &object(r#"{"?a": "x", "b": 2, "c": ["y", 3]}"#));
        let b = b.unwrap();
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
    fn a_bad_json_bind_names_its_variable() {
        let e = binds_from_json("query", &object(r#"{"a": null}"#)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "query: bind \"a\": give a string, a number or a list of them, not null"
        );
        assert_eq!(e.variable(), "a");
        let e = binds_from_json("query", &object(r#"{"a": [[1]]}"#)).unwrap_err();
        assert!(e.to_string().contains("not a list of lists"));
    }

    #[test]
    fn flags_read_json_else_text_and_repeats_are_lists() {
        let flags: Vec<String> = ["?from=app", "n=42", "s=\"42\"", "w=true", "l=a", "l=b"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let b = binds_from_flags("query", "--bind", &flags).unwrap();
        assert_eq!(b[0], ("from".to_owned(), Bind::One(Value::text("app"))));
        assert_eq!(b[1], ("n".to_owned(), Bind::One(Value::Number(42.0))));
        assert_eq!(b[2], ("s".to_owned(), Bind::One(Value::text("42"))));
        assert_eq!(b[3], ("w".to_owned(), Bind::One(Value::text("true"))));
        assert_eq!(
            b[4],
            (
                "l".to_owned(),
                Bind::List(vec![Value::text("a"), Value::text("b")])
            )
        );
        let b = binds_from_flags("query", "--bind", &["x=[\"a\",1]".to_owned()]).unwrap();
        assert_eq!(
            b[0],
            (
                "x".to_owned(),
                Bind::List(vec![Value::text("a"), Value::Number(1.0)])
            )
        );
    }

    #[test]
    fn a_flag_without_equals_or_with_a_nested_list_is_refused() {
        let e = binds_from_flags("query", "--bind", &["from".to_owned()]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--bind from: write var=value, e.g. --bind from=app"
        );
        let e = binds_from_flags("query", "--bind", &["x=[[1]]".to_owned()]).unwrap_err();
        assert_eq!(e.variable(), "x");
    }
}
