//! Facts of one relation read one after another, handed to a sink at once.

use super::{Fact, Field, Result};

/// Facts of one relation read one after another, handed to [`super::FactSink::facts`] at
/// once: each is `head` with its own fields and line. A reader that reads many facts of one
/// relation (a `.facts` file, a run of edges of one kind) hands them over by the thousand,
/// so that the sink finds and checks their relation once, not once a fact.
#[derive(Debug)]
pub struct FactRun<'a> {
    /// What every fact of the run shares: its relation, columns, doc line and unit. Its
    /// fields and line are the first fact's.
    pub head: Fact<'a>,
    /// How many fields each fact has (at least one).
    pub arity: usize,
    /// The facts' fields, `arity` a fact, one fact after another.
    pub fields: &'a [Field<'a>],
    /// The line each fact was read from.
    pub lines: &'a [u64],
}

impl FactRun<'_> {
    /// How many facts the run holds.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether the run holds no fact.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The run's `i`th fact (from 0); the head when there is none.
    pub fn fact(&self, i: usize) -> Fact<'_> {
        let h = &self.head;
        let fields = i
            .checked_mul(self.arity)
            .and_then(|from| self.fields.get(from..from.checked_add(self.arity)?));
        Fact {
            spelled: h.spelled,
            relation: h.relation,
            origin: h.origin,
            columns: h.columns,
            doc: h.doc,
            indexed: h.indexed,
            fields: fields.unwrap_or(h.fields),
            unit: h.unit,
            line: self.lines.get(i).copied().unwrap_or(h.line),
        }
    }

    /// Calls `f` with each fact of the run in order, until it answers an error.
    ///
    /// ```
    /// use strata_store::dump::{Fact, FactRun, Field, Origin};
    ///
    /// let columns = ["c1".to_owned(), "c2".to_owned()];
    /// let fields = [1.0, 2.0, 3.0, 4.0].map(Field::Number);
    /// let head = Fact {
    ///     spelled: "e",
    ///     relation: "e",
    ///     origin: Origin::Facts,
    ///     columns: &columns,
    ///     doc: None,
    ///     indexed: None,
    ///     fields: &fields[..2],
    ///     unit: None,
    ///     line: 1,
    /// };
    /// let run = FactRun { head, arity: 2, fields: &fields, lines: &[1, 3] };
    /// let mut seen = Vec::new();
    /// run.each(&mut |f| {
    ///     seen.push((f.line, f.fields == [Field::Number(3.0), Field::Number(4.0)]));
    ///     Ok(())
    /// })?;
    /// assert_eq!(seen, [(1, false), (3, true)]);
    /// # Ok::<(), strata_store::IngestError>(())
    /// ```
    pub fn each(&self, f: &mut dyn FnMut(&Fact<'_>) -> Result<()>) -> Result<()> {
        for i in 0..self.len() {
            f(&self.fact(i))?;
        }
        Ok(())
    }
}
