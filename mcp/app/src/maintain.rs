//! `strata check` and `strata compact`: what needs the database to itself, so it opens the
//! directory here and is never sent to a server holding it. While another process holds
//! the database, the error says so ([`MaintainError::in_use`]) and an adapter may add who.

use std::path::Path;

use strata_store::{CheckError, CompactError, OpenError, OpenOptions, Store, Verify};

pub use strata_store::Compacted;

/// What `strata check` found: the report, and whether every index and count agreed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// The report, as `strata check` prints it.
    pub text: String,
    /// Whether the database passed.
    pub ok: bool,
}

/// Why a check or a compaction did not run to its end.
#[derive(Debug, thiserror::Error)]
pub enum MaintainError {
    /// The database did not open (absent, damaged, or held by another process).
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The check could not read past some damage.
    #[error(transparent)]
    Check(#[from] CheckError),
    /// The compaction failed.
    #[error(transparent)]
    Compact(#[from] CompactError),
}

impl MaintainError {
    /// Whether another process (a server, most likely) holds the database.
    pub fn in_use(&self) -> bool {
        matches!(
            self,
            MaintainError::Open(OpenError::InUse { .. })
                | MaintainError::Compact(CompactError::Open(OpenError::InUse { .. }))
        )
    }
}

/// Checks the database in `db`: every page of every file verified, every index and count
/// rebuilt from the columns and compared.
pub fn check(db: &Path) -> Result<Checked, MaintainError> {
    let verified = OpenOptions {
        verify: Verify::Always,
        ..OpenOptions::default()
    };
    let store = Store::open(db, verified)?;
    let report = store.check()?;
    Ok(Checked {
        text: report.to_string().trim_end().to_owned(),
        ok: report.ok(),
    })
}

/// Compacts every file of the database in `db`, giving back the space freed pages hold.
pub fn compact(db: &Path) -> Result<Vec<Compacted>, MaintainError> {
    Ok(strata_store::compact(db)?)
}
