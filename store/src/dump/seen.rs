//! A sink for tests: it takes facts as lines of text.

use super::{Fact, FactSink, Result};
use crate::error::IngestError;

/// Takes facts as lines of text, refusing the fact of line `refuse`.
#[derive(Default, Debug, PartialEq)]
pub(super) struct Lines {
    /// Each fact taken, as text.
    pub(super) seen: Vec<String>,
    /// Each progress report.
    pub(super) progress: Vec<(u64, u64)>,
    /// The line whose fact is refused (none: 0).
    pub(super) refuse: u64,
}

impl FactSink for Lines {
    fn fact(&mut self, fact: &Fact<'_>) -> Result<()> {
        if fact.line == self.refuse {
            return Err(IngestError::Invalid(format!("refused line {}", fact.line)));
        }
        let fields: Vec<String> = fact.fields.iter().map(|f| format!("{f:?}")).collect();
        self.seen.push(format!(
            "{}:{} {}({}) {:?} {} {:?}",
            fact.line,
            fact.spelled,
            fact.relation,
            fact.columns.join(","),
            fact.doc,
            fields.join(" "),
            fact.unit
        ));
        Ok(())
    }

    fn progress(&mut self, bytes: u64, facts: u64) {
        self.progress.push((bytes, facts));
    }
}
