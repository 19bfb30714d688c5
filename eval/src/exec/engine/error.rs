//! Why an evaluation stops without an answer.

use std::time::Duration;

use crate::budget::ByteSize;
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
    /// The memory budget ran out: the evaluation's relations, indexes, witnesses and the
    /// round's derived tuples not yet merged held more than [`super::Options::max_memory`]
    /// bytes. Everything it held is dropped before this is returned.
    #[error(
        "the program passed its memory limit of {} ({max} bytes){used}",
        ByteSize(*max)
    )]
    MemoryLimit {
        /// The limit, in bytes.
        max: u64,
        /// Where the memory went when it stopped.
        used: MemoryUse,
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
    Regex(regex::Error),
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

/// Where an evaluation's memory went when it passed its limit ([`EvalError::MemoryLimit`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryUse {
    /// The bytes counted as held when it stopped.
    pub total: u64,
    /// The growth it asked for and was refused (0 when what it held, counted after a
    /// round, was past the limit).
    pub asked: u64,
    /// The relations holding most (at most three), largest first.
    pub relations: Vec<RelationUse>,
    /// Held by every relation's indexes (a part of the relations' bytes).
    pub indexes: u64,
    /// Held by the derivations recorded for witnesses.
    pub witnesses: u64,
    /// Held by the tuples the round in progress derived and had not merged yet (and by a
    /// head aggregate's groups).
    pub pending: u64,
}

/// One relation's share of an evaluation's memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelationUse {
    /// The relation, as written.
    pub name: String,
    /// Its tuples and what answers membership.
    pub tuples: u64,
    /// Its indexes.
    pub indexes: u64,
}

impl std::fmt::Display for MemoryUse {
    /// "; it held N: the round's new tuples not yet merged N, r N (tuples N, indexes N),
    /// witnesses N; indexes N in all", leaving out what held nothing.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.total == 0 {
            return Ok(());
        }
        let mut parts = Vec::new();
        if self.pending > 0 {
            parts.push(format!(
                "the round's new tuples not yet merged {}",
                ByteSize(self.pending)
            ));
        }
        for r in &self.relations {
            parts.push(format!(
                "{} {} (tuples {}, indexes {})",
                r.name,
                ByteSize(r.tuples + r.indexes),
                ByteSize(r.tuples),
                ByteSize(r.indexes)
            ));
        }
        if self.witnesses > 0 {
            parts.push(format!("witnesses {}", ByteSize(self.witnesses)));
        }
        write!(f, "; it held {}", ByteSize(self.total))?;
        if self.asked > 0 {
            write!(f, " and asked for {} more", ByteSize(self.asked))?;
        }
        if !parts.is_empty() {
            write!(f, ": {}", parts.join(", "))?;
        }
        write!(f, "; indexes {} in all", ByteSize(self.indexes))
    }
}
