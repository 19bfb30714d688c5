//! The tools' arguments: strict (an unknown or misspelled argument is refused), with no
//! `null` unions in their schemas (an argument left out takes its default), each turned
//! into the application's typed request.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use strata_app::{
    AskRequest, BindError, CypherRequest, ExplainRequest, FindRequest, Language, LookRequest, Mode,
    Page, QueryRequest, SchemaRequest, ValuesRequest, binds_from_json,
};

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

/// A size in bytes, as `max_memory` takes it: a number of bytes, or a text with a unit.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SizeArg {
    /// Bytes.
    Bytes(u64),
    /// A number with a binary unit: "512M", "2G", "1.5GiB".
    Text(String),
}

/// Reads a [`SizeArg`] as bytes; a text that is no size is refused, saying how to write one.
fn size<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match SizeArg::deserialize(d)? {
        SizeArg::Bytes(b) => Ok(Some(b)),
        SizeArg::Text(t) => t
            .parse::<strata_eval::ByteSize>()
            .map(|b| Some(b.0))
            .map_err(serde::de::Error::custom),
    }
}

/// Declares the arguments of a tool that answers a page of rows (`query`, `cypher`): its
/// own leading fields, then the page's limits both share (written once, here), with `json`
/// described as the tool gives it; and the [`Page`] they ask for. A macro rather than a
/// flattened struct, so that an unknown argument is still refused naming every argument the
/// tool takes, and the schema is a plain object.
macro_rules! page_args {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$field_meta:meta])* pub $field:ident: $ty:ty,)*
        }
        json = $json:literal;
    ) => {
        $(#[$meta])*
        pub struct $name {
            $($(#[$field_meta])* pub $field: $ty,)*
            /// The most rows to answer, from 1 (left out: the server's limit; never more than it).
            #[serde(default)]
            #[schemars(with = "u64")]
            pub limit: Option<u64>,
            /// The most work (candidate tuples examined) to spend (0: the server's cap; never more
            /// than it).
            #[serde(default)]
            pub max_work: u64,
            /// The most memory the evaluation may hold: bytes, or a size such as "512M" or "2G"
            /// (binary units). Left out: the server's cap; a larger value is lowered to it. Past it
            /// the call stops with an error saying where the memory went.
            #[serde(default, deserialize_with = "size")]
            #[schemars(with = "SizeArg")]
            pub max_memory: Option<u64>,
            /// The page_token the previous page ended with, to continue from it.
            #[serde(default)]
            pub page_token: String,
            /// The most bytes of the answer (left out: the server's budget, 80000 by default; never
            /// more than it). Rows past it are left out, said so, with the page_token to go on.
            #[serde(default)]
            #[schemars(with = "u64")]
            pub max_bytes: Option<u64>,
            /// Answer just this row (numbered from 1, as the answer numbers them) with its whole
            /// witness, which a page bounds to 64 facts.
            #[serde(default)]
            #[schemars(with = "u64")]
            pub witness_row: Option<u64>,
            #[doc = $json]
            #[serde(default)]
            pub json: bool,
            /// A try: answer at most this many rows and, when none come, say which literal matched
            /// nothing (0: not a try).
            #[serde(default)]
            pub sample: u64,
            /// Lines of source to show either side of each site the answer cites (path:line), from
            /// the repository's checkout, only while the file is as it was at ingest (else it says
            /// stale); 0 to 20, left out: none.
            #[serde(default)]
            pub context: u32,
        }

        impl $name {
            /// The page the arguments ask for, with witnesses.
            fn page(&self) -> Page {
                Page {
                    limit: self.limit,
                    max_work: self.max_work,
                    page_token: self.page_token.clone(),
                    sample: self.sample,
                    witnesses: true,
                    max_bytes: self.max_bytes,
                    witness_row: self.witness_row,
                    max_memory: self.max_memory,
                    context: self.context,
                }
            }
        }
    };
}

page_args! {
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
    }
    json = " Answer as JSON: columns, rows, witnesses, total, next and the snapshot read.";
}

page_args! {
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
    }
    json = " Answer as JSON: the Cypher text, the program, columns, rows, witnesses, total, next.";
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
    /// The most memory the evaluation may hold: bytes, or a size such as "512M" or "2G"
    /// (binary units). Left out: the server's cap; a larger value is lowered to it. Past it
    /// the call stops with an error saying where the memory went.
    #[serde(default, deserialize_with = "size")]
    #[schemars(with = "SizeArg")]
    pub max_memory: Option<u64>,
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

/// `ask`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskArgs {
    /// The question, in plain language: "what does api depend on?".
    pub question: String,
    /// Which models to ask: local, frontier, or both (the default: local first, the
    /// fallback when the local model fails within its tries).
    #[serde(default)]
    pub mode: Mode,
    /// The language the model writes: datalog, or cypher for a database with a Cypher graph
    /// (the default: the pack's ask_language, else datalog).
    #[serde(default)]
    #[schemars(with = "Language")]
    pub language: Option<Language>,
    /// The most rows to answer (0: the server's limit; never more than it).
    #[serde(default)]
    pub limit: u64,
    /// The most work the program may spend (0: the server's cap; never more than it).
    #[serde(default)]
    pub max_work: u64,
    /// Answer as JSON: the program, its columns, rows, witnesses and total, and every try.
    #[serde(default)]
    pub json: bool,
}

impl QueryArgs {
    /// The application's request.
    pub fn request(&self) -> Result<QueryRequest, BindError> {
        Ok(QueryRequest {
            program: self.program.clone(),
            binds: binds_from_json("query", &self.bind)?,
            page: self.page(),
        })
    }
}

impl CypherArgs {
    /// The application's request.
    pub fn request(&self) -> Result<CypherRequest, BindError> {
        Ok(CypherRequest {
            query: self.query.clone(),
            params: binds_from_json("cypher", &self.params)?,
            page: self.page(),
        })
    }
}

impl ExplainArgs {
    /// The application's request.
    pub fn request(&self) -> Result<ExplainRequest, BindError> {
        Ok(ExplainRequest {
            program: self.program.clone(),
            binds: binds_from_json("explain", &self.bind)?,
            max_work: self.max_work,
            max_memory: self.max_memory,
        })
    }
}

impl SchemaArgs {
    /// The application's request.
    pub fn request(&self) -> SchemaRequest {
        SchemaRequest {
            path: self.path.clone(),
        }
    }
}

impl LookArgs {
    /// The application's request.
    pub fn request(&self) -> LookRequest {
        LookRequest {
            target: self.target.clone(),
        }
    }
}

impl ValuesArgs {
    /// The application's request.
    pub fn request(&self) -> ValuesRequest {
        ValuesRequest {
            target: self.target.clone(),
            limit: self.limit,
        }
    }
}

impl FindArgs {
    /// The application's request.
    pub fn request(&self) -> FindRequest {
        FindRequest {
            name: self.name.clone(),
            limit: self.limit,
        }
    }
}

impl AskArgs {
    /// The application's request.
    pub fn request(&self) -> AskRequest {
        AskRequest {
            question: self.question.clone(),
            mode: self.mode,
            language: self.language,
            limit: self.limit,
            max_work: self.max_work,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn unknown_arguments_are_refused() {
        let err = serde_json::from_str::<QueryArgs>(r#"{"program": "p(?x)", "limt": 2}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `limt`"), "{err}");
    }

    #[test]
    fn max_memory_takes_bytes_or_a_size() {
        let read = |v: &str| {
            serde_json::from_str::<QueryArgs>(&format!(
                r#"{{"program": "p(?x)", "max_memory": {v}}}"#
            ))
            .map(|a| a.max_memory)
            .map_err(|e| e.to_string())
        };
        assert_eq!(read("1048576"), Ok(Some(1 << 20)));
        assert_eq!(read(r#""512M""#), Ok(Some(512 << 20)));
        let err = read(r#""lots""#).unwrap_err();
        assert!(err.contains("\"lots\" is not a size"), "{err}");
        let none = serde_json::from_str::<QueryArgs>(r#"{"program": "p(?x)"}"#).unwrap();
        assert_eq!(none.max_memory, None);
    }
}
