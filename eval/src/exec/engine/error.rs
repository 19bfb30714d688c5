//! Why an evaluation stops without an answer.

use std::time::Duration;

use crate::data::source::SourceError;

/// Why an evaluation stopped without an answer.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The work budget ran out.
    #[error("the program passed its work budget of {max} units{}", went(spent))]
    WorkLimit {
        /// The budget.
        max: u64,
        /// Where the work went: the rules that spent most, with their units.
        spent: Vec<(String, u64)>,
    },
    /// The deadline passed.
    #[error("the program ran past its time limit of {limit:?}{}", went(spent))]
    Deadline {
        /// The limit.
        limit: Duration,
        /// Where the work went: the rules that spent most, with their units.
        spent: Vec<(String, u64)>,
    },
    /// The cancellation token was cancelled.
    #[error("the evaluation was cancelled")]
    Cancelled,
    /// A relation depends on itself through negation or an aggregate.
    #[error("relations {cycle:?} depend on each other through {}", if *.negation { "negation" } else { "an aggregate" })]
    Unstratifiable {
        /// The relations on the cycle.
        cycle: Vec<String>,
        /// Negation (else an aggregate).
        negation: bool,
    },
    /// An aggregate met a value it cannot take (`sum` of a text).
    #[error("{0}")]
    Aggregate(String),
    /// `str.match` was given a pattern that is not a regular expression.
    #[error("str.match: {0}")]
    Regex(String),
    /// The fact source failed.
    #[error(transparent)]
    Source(#[from] SourceError),
}

impl From<crate::builtins::BuiltinError> for EvalError {
    fn from(e: crate::builtins::BuiltinError) -> Self {
        match e {
            crate::builtins::BuiltinError::Aggregate(m) => EvalError::Aggregate(m),
            crate::builtins::BuiltinError::Regex(m) => EvalError::Regex(m),
        }
    }
}

/// "; the work went to: rule (N units), ..." for a budget error's message.
fn went(spent: &[(String, u64)]) -> String {
    if spent.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = spent
        .iter()
        .map(|(rule, units)| format!("{rule} ({units} units)"))
        .collect();
    format!("; the work went to: {}", parts.join(", "))
}
