//! `find`: what a name may stand for. A partial or misspelled name is matched against the
//! dictionary of stored text values and the matches are ranked: exact, prefix, substring,
//! token (the name split on `/ _ . : # -`, other punctuation, spaces and case changes, so
//! `parse args` finds `sym:src/cli.rs#parse_args`), edit distance, then names sharing only
//! some of the query's words.
//!
//! The [`Index`] is an in-memory copy of the dictionary (each text and its lowercase form,
//! back to back in two buffers), read once and then extended with the texts each new batch
//! adds: the dictionary only grows, its ids dense and in order of first appearance. A search
//! is one linear pass with cheap filters first (equality, prefix, substring, then word and
//! length filters before any edit distance is computed).
//!
//! The pieces: the index and its search (`index`), a prepared query and how a text
//! matches it (`query`), word splits (`words`), edit distance (`distance`), the
//! ranking of matches (`rank`), and the request over the application (`lookup`).

mod distance;
mod file;
#[cfg(test)]
mod file_tests;
mod finder;
mod index;
mod indexed;
mod keys;
mod lookup;
mod query;
mod rank;
#[cfg(test)]
mod tests;
mod words;

use distance::{FUZZY_NONE, FUZZY_UNKNOWN, Scratch};
pub use file::IndexFileError;
pub use finder::{Finder, FinderAnswer, FinderError, delta_limit};
pub use index::Index;
pub use lookup::{
    FIND_LIMIT, FIND_MAX_CHARS, FindError, FindMatch, FindRequest, FindResponse, FindUse,
};
use query::Query;
pub use rank::{Kind, Match};
pub use words::words;
