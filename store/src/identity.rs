//! The database's identity: 16 random bytes in the base file's `meta` table (`identity`),
//! written when the base file is created (or, for a database made before identities, on its
//! first open), and copied into every tier file's `tier_meta` (`database`). A tier file is
//! opened only when it carries this database's identity, so another database's file copied
//! in as `tier-NAME.redb` (its base file, or one of its tiers) is refused with its name
//! instead of adopted. A tier file without one (made before identities) is given this
//! database's on its first open.

use std::hash::{BuildHasher, Hasher};
use std::path::Path;

use redb::{Database, ReadableDatabase, TableError};

use crate::error::{Fault, OpenError, Result};
use crate::layout;

/// The key of the identity in `meta` (base file) and of the owner's in `tier_meta`.
const BASE_KEY: &str = "identity";
const TIER_KEY: &str = "database";

/// A database's identity.
pub(crate) type Identity = [u8; 16];

/// The base file's identity, written first when it has none.
pub(crate) fn of_base(db: &Database) -> Result<Identity> {
    {
        let txn = db.begin_read()?;
        let t = txn.open_table(layout::META)?;
        if let Some(v) = t.get(BASE_KEY)? {
            return v
                .value()
                .try_into()
                .map_err(|_| crate::error::damaged("meta \"identity\" is not 16 bytes"));
        }
    }
    let id = fresh();
    let txn = db.begin_write()?;
    txn.open_table(layout::META)?
        .insert(BASE_KEY, id.as_slice())?;
    txn.commit()?;
    Ok(id)
}

/// Checks that the tier file `db` at `path` belongs to the database `id` (giving it `id`
/// when it carries none and is no base file).
pub(crate) fn claim_tier(db: &Database, path: &Path, id: &Identity) -> Result<()> {
    let refuse = |why: &str| {
        Err(Fault::Open(OpenError::ForeignTier {
            path: path.to_owned(),
            why: why.to_owned(),
        }))
    };
    {
        let txn = db.begin_read()?;
        match txn.open_table(layout::META) {
            Ok(_) => return refuse("it is a database's base file (strata.redb), not a tier file"),
            Err(TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(e.into()),
        }
        match txn.open_table(layout::TIER_META) {
            Ok(t) => match t.get(TIER_KEY)? {
                Some(v) if v.value() == id.as_slice() => return Ok(()),
                Some(_) => return refuse("it belongs to another database"),
                None => {}
            },
            Err(TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let txn = db.begin_write()?;
    txn.open_table(layout::TIER_META)?
        .insert(TIER_KEY, id.as_slice())?;
    txn.commit()?;
    Ok(())
}

/// 16 bytes no other database has: std's randomly keyed hasher, over the time and the
/// process id.
fn fresh() -> Identity {
    let mut out = [0u8; 16];
    for (i, half) in out.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u32(std::process::id());
        if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            h.write_u128(t.as_nanos());
        }
        half.copy_from_slice(&h.finish().to_le_bytes());
    }
    out
}
