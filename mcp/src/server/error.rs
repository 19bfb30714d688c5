//! Why a server could not be built ([`ServerError`]).

use crate::pack::PackError;

/// Why a server could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The database could not be opened or read.
    #[error(transparent)]
    Store(#[from] strata_store::StoreError),
    /// The pack could not be read.
    #[error(transparent)]
    Pack(#[from] PackError),
    /// The modules do not load or check.
    #[error(transparent)]
    Vocab(#[from] strata_eval::VocabError),
    /// An example of the pack does not check against the database.
    #[error("strata.toml: the example \"{question}\" does not check:\n{message}")]
    Example {
        /// The example's question.
        question: String,
        /// The engine's error, caret and fix.
        message: String,
    },
    /// A Cypher example of the pack does not compile against the database's graph.
    #[error("strata.toml: the Cypher example \"{question}\" does not compile:\n{message}")]
    CypherExample {
        /// The example's question.
        question: String,
        /// The Cypher front end's error, caret and fix.
        message: String,
    },
    /// The limits make no sense.
    #[error("{0}")]
    Options(String),
}
