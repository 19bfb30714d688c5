//! What fitting an answer to a byte budget left out ([`Cut`]), as data: the application
//! fits a page to its budget (`strata_app`'s `fit`), sets [`Answer::cut`](super::Answer)
//! to say what it left out, and [`Answer::text`](super::Answer::text) writes it; the
//! engine itself measures nothing.

use std::fmt;

/// What fitting an answer to a byte budget left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The budget, in bytes.
    pub max_bytes: u64,
    /// The rows of the page left out, from the first one the page token continues with.
    pub rows_left_out: u64,
    /// The values cut inside (of the page's first row, when it did not fit on its own).
    pub values: Vec<ValueCut>,
}

/// A value cut to fit a budget: the first `kept` of its `total` values or bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueCut {
    /// The row's number, as the text numbers it (from 1, across pages).
    pub row: u64,
    /// The column's index.
    pub column: usize,
    /// The values (of a list) or bytes (of a text) kept.
    pub kept: u64,
    /// The values or bytes the cell has.
    pub total: u64,
    /// What `kept` and `total` count.
    pub unit: CutUnit,
}

/// What a [`ValueCut`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutUnit {
    /// The values of a list.
    Values,
    /// The bytes of a text.
    Bytes,
}

impl fmt::Display for CutUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CutUnit::Values => "values",
            CutUnit::Bytes => "bytes",
        })
    }
}
