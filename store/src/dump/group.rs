//! Fact groups: the facts one unit states, handed to a sink at once (a SCIP document's), so
//! that the sink interns each distinct text and finds each relation once per group rather
//! than once per fact.

use std::sync::Arc;

use super::{Fact, Field, Origin};
use crate::error::IngestError;

/// One relation facts of a [`FactGroup`] belong to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupRelation {
    /// Its name, as stored and as spelled.
    pub name: String,
    /// Its columns' names.
    pub columns: Vec<String>,
    /// Its doc line.
    pub doc: Option<String>,
}

/// One field of a fact in a [`FactGroup`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell {
    /// No value.
    Absent,
    /// The group's text of this number (see [`FactGroup::text`]).
    Text(u32),
    /// A number.
    Number(f64),
}

/// The facts one unit states, each distinct text stored once, grouped by relation.
///
/// A group is reused: [`FactGroup::clear`] empties it for the next unit and keeps its
/// memory.
#[derive(Clone, Debug)]
pub struct FactGroup {
    relations: Arc<[GroupRelation]>,
    unit: String,
    line: u64,
    text: String,
    ends: Vec<usize>,
    rows: Vec<Vec<Cell>>,
    facts: u64,
}

impl FactGroup {
    /// An empty group whose facts are of `relations` (a fact names its relation by its index).
    pub fn new(relations: Arc<[GroupRelation]>) -> FactGroup {
        let rows = vec![Vec::new(); relations.len()];
        FactGroup {
            relations,
            unit: String::new(),
            line: 0,
            text: String::new(),
            ends: Vec::new(),
            rows,
            facts: 0,
        }
    }

    /// Empties the group for the facts of `unit`, read at `line` (the number of the record
    /// they come from, for messages).
    pub fn clear(&mut self, unit: &str, line: u64) {
        self.unit.clear();
        self.unit.push_str(unit);
        self.line = line;
        self.text.clear();
        self.ends.clear();
        for r in &mut self.rows {
            r.clear();
        }
        self.facts = 0;
    }

    /// Adds a text; answers its number in the group. A caller that sees a text repeat passes
    /// the number it got the first time (a text added twice is two numbers for one text,
    /// which costs only a second lookup in the sink).
    pub fn add_text(&mut self, s: &str) -> u32 {
        self.text.push_str(s);
        self.ends.push(self.text.len());
        (self.ends.len() - 1) as u32
    }

    /// The text numbered `i` ([`FactGroup::add_text`]).
    ///
    /// # Panics
    /// When `i` is not a number [`FactGroup::add_text`] gave.
    pub fn text(&self, i: u32) -> &str {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    /// The group's texts in the order of their numbers.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let s = &self.text[start..end];
            start = end;
            s
        })
    }

    /// Adds a fact of relation number `relation`, one cell per column.
    ///
    /// # Panics
    /// When `relation` is not an index of the group's relations.
    pub fn add(&mut self, relation: usize, cells: &[Cell]) {
        debug_assert_eq!(cells.len(), self.relations[relation].columns.len());
        self.rows[relation].extend_from_slice(cells);
        self.facts += 1;
    }

    /// The relations the group's facts belong to.
    pub fn relations(&self) -> &[GroupRelation] {
        &self.relations
    }

    /// The facts of relation number `relation`: their cells one after another, as many per
    /// fact as the relation has columns.
    pub fn rows(&self, relation: usize) -> &[Cell] {
        &self.rows[relation]
    }

    /// The unit that states every fact of the group.
    pub fn unit(&self) -> &str {
        &self.unit
    }

    /// The number of the record the facts come from.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// How many facts the group holds.
    pub fn facts(&self) -> u64 {
        self.facts
    }

    /// The fact of `relation` as a sink takes it, with the given fields.
    pub fn fact<'a>(&'a self, relation: usize, fields: &'a [Field<'a>]) -> Fact<'a> {
        let r = &self.relations[relation];
        Fact {
            spelled: &r.name,
            relation: &r.name,
            origin: Origin::Facts,
            columns: &r.columns,
            doc: r.doc.as_deref(),
            indexed: None,
            fields,
            unit: Some(&self.unit),
            line: self.line,
        }
    }

    /// Hands each fact to `f`, one at a time (what a sink without a faster way does).
    pub fn each(
        &self,
        f: &mut dyn FnMut(&Fact<'_>) -> Result<(), IngestError>,
    ) -> Result<(), IngestError> {
        let mut fields = Vec::new();
        for (r, rel) in self.relations.iter().enumerate() {
            let arity = rel.columns.len().max(1);
            for row in self.rows[r].chunks(arity) {
                fields.clear();
                fields.extend(row.iter().map(|c| match *c {
                    Cell::Absent => Field::Absent,
                    Cell::Number(n) => Field::Number(n),
                    Cell::Text(i) => Field::Text(self.text(i).into()),
                }));
                f(&self.fact(r, &fields))?;
            }
        }
        Ok(())
    }
}
