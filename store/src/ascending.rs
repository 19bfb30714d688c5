//! Writing many entries, ascending by key, into a redb table at once.

use std::borrow::Borrow;
use std::ops::Bound;

use redb::{CursorError, Key, Table, Value};

use crate::error::{Fault, Result};

/// After a run through a cursor ends this short, this many entries go in one at a time
/// before a cursor is tried again: entries that mostly replace stored ones (a batch
/// rewriting the chunks it grew) would otherwise pay a seek each on top of their insert.
const ALONE_AFTER_SHORT_RUN: usize = 16;

/// Inserts `entries`, ascending by key, into `table` (replacing the value of a key stored
/// already), as [`Table::insert`] would one at a time.
///
/// The entries go in through a cursor, which buffers a run of inserts into the gap between
/// two stored entries and splices it in at once, where each `insert` descends the tree on
/// its own. An entry whose key is stored, or lies past the next stored entry, ends the run:
/// it is inserted alone and a new run starts after it (after a few more alone when the run
/// was short).
pub(crate) fn insert_ascending<'k, 'v, K: Key + 'static, V: Value + 'static>(
    table: &mut Table<'_, K, V>,
    entries: impl IntoIterator<Item = (impl Borrow<K::SelfType<'k>>, impl Borrow<V::SelfType<'v>>)>,
) -> Result<()> {
    let mut entries = entries.into_iter().peekable();
    let mut alone = 0;
    while let Some((key, value)) = entries.next() {
        table.insert(key.borrow(), value.borrow())?;
        if alone > 0 {
            alone -= 1;
            continue;
        }
        let mut cursor = table.lower_bound_mut(Bound::Excluded(key.borrow()))?;
        let mut run = 0;
        while let Some((k, v)) = entries.peek() {
            match cursor.insert_before(k.borrow(), v.borrow()) {
                Ok(()) => {
                    entries.next();
                    run += 1;
                }
                Err(CursorError::UnorderedKey) => break,
                Err(CursorError::Storage(e)) => return Err(Fault::from(e)),
                Err(e) => return Err(Fault::from(redb::Error::from(e))),
            }
        }
        cursor.close()?;
        if run < 2 {
            alone = ALONE_AFTER_SHORT_RUN;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

    use super::insert_ascending;

    const T: TableDefinition<'static, u32, u32> = TableDefinition::new("t");

    #[test]
    fn inserts_as_one_insert_at_a_time_does() {
        let tmp = tempfile::tempdir().unwrap();
        let db = Database::create(tmp.path().join("t.redb")).unwrap();
        // Stored: every third key. Written: runs between them, stored keys replaced, and a
        // stretch of replacements alone.
        let stored: Vec<u32> = (0..3000).step_by(3).collect();
        let written: Vec<u32> = (0..1000)
            .chain((1000..2000).step_by(3))
            .chain(2000..3500)
            .collect();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(T).unwrap();
            for &k in &stored {
                t.insert(k, 0).unwrap();
            }
            insert_ascending(&mut t, written.iter().map(|&k| (k, k + 1))).unwrap();
        }
        txn.commit().unwrap();
        let mut want: std::collections::BTreeMap<u32, u32> =
            stored.iter().map(|&k| (k, 0)).collect();
        want.extend(written.iter().map(|&k| (k, k + 1)));
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(T).unwrap();
        let got: std::collections::BTreeMap<u32, u32> = t
            .iter()
            .unwrap()
            .map(|e| {
                let (k, v) = e.unwrap();
                (k.value(), v.value())
            })
            .collect();
        assert_eq!(got, want);
    }
}
