//! `values`: the distinct values of one argument of a relation, answered by the program it
//! writes for `relation.column` or `relation.N` and runs as `query` would.

use serde::Serialize;
use strata_eval::Cancel;
use strata_eval::Vocabulary;

use crate::app::App;
use crate::base::Call;
use crate::error::CallError;
use crate::render::{AnswerPage, Render, SnapshotInfo};
use crate::suggest::{did_you_mean, did_you_mean_text};

/// How many values `values` answers when the request does not say.
pub const VALUES_LIMIT: u64 = 20;

/// What `values` lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValuesRequest {
    /// `relation.column` (`pkg.license`) or `relation.N`, N counting from 1 (`imports.2`).
    pub target: String,
    /// The most values (0: [`VALUES_LIMIT`]; never more than the application's limit).
    pub limit: u64,
}

/// The distinct values of one argument, and the program that listed them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ValuesResponse {
    /// The program run: `pkg(_, ?license) => ?license`.
    pub program: String,
    /// The values (one column), the total and the token to continue with.
    #[serde(flatten)]
    pub answer: AnswerPage,
    /// The snapshot read (none for a host's base).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotInfo>,
}

impl Render for ValuesResponse {
    fn text(&self) -> String {
        format!("ran: {}\n{}", self.program, self.answer.text())
    }
}

/// Why a `values` target names no argument.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValuesError {
    /// The target is a relation, with no argument named.
    #[error("values: \"{target}\" is a relation; name one of its arguments: {columns}")]
    Relation {
        /// The target.
        target: String,
        /// Its arguments, each as `rel.column (rel.N)`.
        columns: String,
    },
    /// The target has no `.`.
    #[error("values: \"{target}\" names no argument; {USAGE}")]
    NoArgument {
        /// The target.
        target: String,
    },
    /// The relation is unknown.
    #[error("values: unknown relation \"{relation}\"{}; {USAGE}", did_you_mean_text(suggestion.as_deref()))]
    UnknownRelation {
        /// The relation named.
        relation: String,
        /// The one relation or module it nearly names.
        suggestion: Option<String>,
    },
    /// A position past the relation's arity.
    #[error("values: {relation} has {arity} argument{}; N counts from 1 to {arity}", if *arity == 1 { "" } else { "s" })]
    Position {
        /// The relation.
        relation: String,
        /// Its arity.
        arity: usize,
    },
    /// No argument of that name.
    #[error("values: {relation} has no argument \"{column}\"; name one of {columns}")]
    Column {
        /// The relation.
        relation: String,
        /// The argument named.
        column: String,
        /// Its arguments, each as `rel.column (rel.N)`.
        columns: String,
    },
}

const USAGE: &str =
    "give relation.column (pkg.license) or relation.N, N counting from 1 (imports.2)";

impl App {
    /// `values`: the distinct values of one argument of a relation, through a query.
    pub fn values(
        &self,
        call: &Call,
        r: &ValuesRequest,
        cancel: &Cancel,
    ) -> Result<ValuesResponse, CallError> {
        let vocab = self.vocabulary(call, "values")?;
        let program = values_program(&vocab, r.target.trim())?;
        let p = self.prepare(call, "values", &program, &[])?;
        let limit = if r.limit == 0 { VALUES_LIMIT } else { r.limit };
        let mut options = self.run_options(call, limit, 0, None, cancel);
        options.engine.witnesses = false;
        let out = p.query.run(p.base.source(), &options)?;
        let snapshot = p.base.snapshot();
        let answer = AnswerPage::new(out.answer, self.options().max_bytes, &(&program, &snapshot));
        Ok(ValuesResponse {
            program,
            answer,
            snapshot,
        })
    }
}

/// The program `values` runs for `relation.column` or `relation.N`:
/// `pkg(_, ?license) => ?license`.
fn values_program(vocab: &Vocabulary, target: &str) -> Result<String, ValuesError> {
    let relation_error = |r: &strata_eval::RelationSchema| ValuesError::Relation {
        target: target.to_owned(),
        columns: columns_hint(&r.name, &r.columns),
    };
    let Some((rel, col)) = target.rsplit_once('.') else {
        return Err(match vocab.relation(target) {
            Some(r) => relation_error(&r),
            None => ValuesError::NoArgument {
                target: target.to_owned(),
            },
        });
    };
    let Some(r) = vocab.relation(rel) else {
        if let Some(r) = vocab.relation(target) {
            return Err(relation_error(&r));
        }
        return Err(ValuesError::UnknownRelation {
            relation: rel.to_owned(),
            suggestion: did_you_mean(vocab, rel),
        });
    };
    let arity = r.columns.len();
    let position = if !col.is_empty() && col.bytes().all(|b| b.is_ascii_digit()) {
        match col.parse::<usize>() {
            Ok(n) if (1..=arity).contains(&n) => n - 1,
            _ => {
                return Err(ValuesError::Position {
                    relation: rel.to_owned(),
                    arity,
                });
            }
        }
    } else {
        match r.columns.iter().position(|c| c == col) {
            Some(i) => i,
            None => {
                return Err(ValuesError::Column {
                    relation: rel.to_owned(),
                    column: col.to_owned(),
                    columns: columns_hint(&r.name, &r.columns),
                });
            }
        }
    };
    let name = &r.columns[position];
    let var = if !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        name.clone()
    } else {
        "v".to_owned()
    };
    let args: Vec<String> = (0..arity)
        .map(|i| {
            if i == position {
                format!("?{var}")
            } else {
                "_".to_owned()
            }
        })
        .collect();
    Ok(format!("{}({}) => ?{var}", r.name, args.join(", ")))
}

fn columns_hint(rel: &str, columns: &[String]) -> String {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{rel}.{c} ({rel}.{})", i + 1))
        .collect::<Vec<_>>()
        .join(", ")
}
