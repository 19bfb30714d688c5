//! The trait through which the engine reads facts.

use std::ops::ControlFlow;

use crate::data::value::{Term, Value};

/// What a visitor returns: `Continue` for the next row, `Break` to stop the scan early.
pub type Visit = ControlFlow<()>;

/// A base relation as a fact source describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct RelationInfo {
    /// The relation's name as programs write it (`imports`).
    pub name: String,
    /// The columns' names, one per argument position.
    pub columns: Vec<String>,
    /// A one-line description, empty when none was given.
    pub doc: String,
    /// The tier holding the relation's facts (`default` for the database's own file).
    pub tier: String,
    /// How many facts the relation holds.
    pub rows: u64,
    /// How many distinct values each column holds, in column order.
    pub distinct: Vec<u64>,
    /// What kind of dump declared the relation: the Cypher graph reads node labels, edge
    /// kinds and attribute keys from it.
    pub origin: Origin,
    /// The name as the dump spelled it (`IMPORTS`, `Package`); empty when it is the name.
    pub spelled: String,
    /// The columns no index serves, ascending (empty for most relations: every column is
    /// indexed unless the relation was declared otherwise). A lookup that binds only such
    /// columns reads the whole relation, so the engine reads it into memory instead.
    pub unindexed: Vec<usize>,
}

/// What kind of dump declared a base relation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Origin {
    /// An edge kind (`*.edges.tsv`): `kind(src, dst)`, a relationship type.
    Edges,
    /// An attribute key (`*.attrs.tsv`): `key(node, value)`, a node property.
    Attrs,
    /// A node label (`*.nodes.tsv`): `label(id)`.
    Nodes,
    /// Any other relation (a `.facts` file, or a source that does not say).
    #[default]
    Facts,
}

impl RelationInfo {
    /// The number of arguments of the relation.
    pub fn arity(&self) -> usize {
        self.columns.len()
    }

    /// Whether an index serves lookups that bind column `c`.
    pub fn indexed(&self, c: usize) -> bool {
        !self.unindexed.contains(&c)
    }

    /// The name as the dump spelled it, or the name.
    pub fn spelling(&self) -> &str {
        if self.spelled.is_empty() {
            &self.name
        } else {
            &self.spelled
        }
    }
}

/// An error a fact source reports: storage failed, or the data is not what it should be.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The relation is not in the source.
    #[error("unknown relation \"{0}\"")]
    UnknownRelation(String),
    /// A column position is past the relation's arity.
    #[error("relation \"{relation}\" has {arity} columns; column {column} does not exist")]
    NoSuchColumn {
        /// The relation named.
        relation: String,
        /// Its arity.
        arity: usize,
        /// The column position asked for (0-based).
        column: usize,
    },
    /// A term is not in the source's dictionary.
    #[error("term {0} is not in the dictionary")]
    UnknownTerm(u32),
    /// The storage underneath failed; the message says how.
    #[error("{0}")]
    Storage(String),
    /// The store underneath failed: its own error, kept whole with its source chain.
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync>),
}

/// Read access to base facts: what the engine needs of a store, and all it needs.
///
/// Implementations answer from one consistent snapshot: every call on the same value sees
/// the same facts. Rows are passed to visitors as slices of [`Term`]s, one per column.
pub trait FactSource: Send + Sync {
    /// Every relation the source holds.
    fn relations(&self) -> Result<Vec<RelationInfo>, SourceError>;

    /// One relation, or `None` when the source has no relation of that name.
    fn relation(&self, name: &str) -> Result<Option<RelationInfo>, SourceError>;

    /// Visits every fact of `relation`.
    fn scan(
        &self,
        relation: &str,
        visit: &mut dyn FnMut(&[Term]) -> Visit,
    ) -> Result<(), SourceError>;

    /// The facts of part `part` of `parts` of `relation`, row-major (as many terms a fact
    /// as it has columns): reading parts `0 .. parts` and joining them in order gives what
    /// [`FactSource::scan`] visits, in its order. A reader splits a large relation's read
    /// across threads this way. The default reads the whole relation as part 0 and nothing
    /// as the others.
    fn read_part(
        &self,
        relation: &str,
        part: usize,
        parts: usize,
    ) -> Result<Vec<Term>, SourceError> {
        let _ = parts;
        let mut out = Vec::new();
        if part == 0 {
            self.scan(relation, &mut |row| {
                out.extend_from_slice(row);
                ControlFlow::Continue(())
            })?;
        }
        Ok(out)
    }

    /// Visits every fact of `relation` whose column `c` holds `t` for each `(c, t)` in
    /// `bound`. With nothing bound it is a scan.
    fn lookup(
        &self,
        relation: &str,
        bound: &[(usize, Term)],
        visit: &mut dyn FnMut(&[Term]) -> Visit,
    ) -> Result<(), SourceError>;

    /// How many facts of `relation` match `bound` (an exact count or an estimate no lower
    /// than it), for planning. Without a bound column it is the relation's size.
    fn estimate(&self, relation: &str, bound: &[(usize, Term)]) -> Result<u64, SourceError>;

    /// The term that stands for `value` in this source, or `None` when no stored fact holds
    /// it (so no fact can match it).
    fn term(&self, value: &Value) -> Result<Option<Term>, SourceError>;

    /// The value a term stands for.
    fn value(&self, term: Term) -> Result<Value, SourceError>;

    /// The values of `terms`, in their order: what [`FactSource::value`] gives each, asked
    /// together so that a source can read each stored block of its dictionary once (an
    /// answer ranks its distinct values this way).
    fn values(&self, terms: &[Term]) -> Result<Vec<Value>, SourceError> {
        terms.iter().map(|&t| self.value(t)).collect()
    }
}
