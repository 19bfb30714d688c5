//! `find`: what a name may stand for. A partial or misspelled name is matched against the
//! dictionary of stored text values and the matches are ranked: exact, prefix, substring,
//! token (the name split on `/ _ . : # -`, other punctuation, spaces and case changes, so
//! `parse args` finds `sym:src/cli.rs#parse_args`), edit distance, then names sharing only
//! some of the query's words.
//!
//! The [`Finder`] searches the database's persistent name index (`DB/find-N.idx`, built on
//! first use, memory-mapped; `file`, searched by `indexed`): each kind of match is a set of
//! posting lists over the texts numbered by rank, so the total is set arithmetic and the best
//! of a kind are its first members. Texts newer than the file are held by an [`Index`], an
//! in-memory copy scanned in one linear pass with cheap filters first (equality, prefix,
//! substring, then word and length filters before any edit distance is computed); the index
//! answers exactly as that scan does.
//!
//! The pieces: the scan (`index`), the index file (`file`, its keys and posting lists in
//! `keys`) and its search (`indexed`), the finder over both (`finder`), a prepared query and
//! how a text matches it (`query`), word splits (`words`), edit distance (`distance`), the
//! ranking of matches (`rank`), and the request over the application (`lookup`).

mod distance;
mod file;
#[cfg(test)]
mod file_tests;
mod finder;
#[doc(hidden)]
pub(crate) mod fuzzing;
mod index;
mod indexed;
mod keys;
mod lookup;
mod query;
mod rank;
mod scip;
#[cfg(test)]
mod scip_tests;
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
