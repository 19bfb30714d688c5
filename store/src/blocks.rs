//! The `blocks` table: where each column block's value is stored.
//!
//! Files of format versions 1 to 4 store a block as one value under (relation, column,
//! block). redb gives a value too large to share a 4 KiB leaf a page of its own, rounded up
//! to a power of two: a block of 4,096 terms of 23 bits (11.8 KB) took 16 KiB, and the
//! 1.42M-edge code graph's blocks 6.26 MB of pages for 3.68 MB of bytes.
//!
//! From format version 5 a block is cut into parts of at most [`PART_BYTES`] bytes, all of
//! about one size, each sealed under its own key (relation, column, `block << PART_BITS |
//! part`), parts numbered from 0. redb packs such parts three or four to a leaf: the same
//! blocks take 4.19 MB of pages. A block is its parts' payloads joined, in order; a part
//! missing before the last is damage, and one missing at the end leaves the block short,
//! which decoding it finds.

use std::iter::Peekable;
use std::ops::Range;

use redb::{AccessGuard, ReadableTable, Table};

use crate::column;
use crate::error::{Damage, Fault, damaged};
use crate::layout::Payload;
use crate::seal::{SUM_BYTES, Seal};

/// A `blocks` key: (relation, column, block), or from format version 5 (relation, column,
/// `block << PART_BITS | part`).
pub(crate) type Key3 = (u32, u16, u32);

/// Bits of a version 5 key's last element that number a block's part.
pub(crate) const PART_BITS: u32 = 5;

/// The most payload bytes a part holds. A block holds at most 16,394 bytes (4,096 terms of
/// 32 bits and its head), so 17 parts; [`PART_BITS`] leave room for 32.
pub(crate) const PART_BYTES: usize = 1024;

/// The most parts a block takes.
const MAX_PARTS: usize = 17;

/// The stored keys of block `key` (relation, column, block) in a file sealed with `seal`.
pub(crate) fn stored_keys(seal: Seal, (rel, col, b): Key3) -> Range<Key3> {
    if seal.parted {
        (rel, col, b << PART_BITS)..(rel, col, (b + 1) << PART_BITS)
    } else {
        (rel, col, b)..(rel, col, b + 1)
    }
}

/// The stored keys of blocks `blocks` of a column.
pub(crate) fn stored_keys_of(
    seal: Seal,
    (rel, col): (u32, u16),
    blocks: Range<u32>,
) -> Range<Key3> {
    let start = stored_keys(seal, (rel, col, blocks.start)).start;
    let end = stored_keys(seal, (rel, col, blocks.end)).start;
    start..end
}

/// The block (relation, column, block) and part a stored key names.
fn block_of(seal: Seal, (rel, col, n): Key3) -> (Key3, u32) {
    if seal.parted {
        ((rel, col, n >> PART_BITS), n & ((1 << PART_BITS) - 1))
    } else {
        ((rel, col, n), 0)
    }
}

/// A block as read: the one value it is stored as (its checksum verified when it is
/// opened), or the payloads of its parts, verified and joined.
pub(crate) enum Fetched<'a> {
    /// A block stored as one value, under `key`.
    One {
        key: Key3,
        value: AccessGuard<'a, &'static [u8]>,
    },
    /// A block stored in two parts or more: their payloads, joined.
    Joined(Vec<u8>),
}

impl Fetched<'_> {
    /// The block's payload (its checksums verified); `name` names the relation for an error.
    pub(crate) fn payload(&self, seal: Seal, name: &str) -> Result<Payload<'_>, Damage> {
        match self {
            Fetched::One { key, value } => column::open(seal, *key, value.value(), name),
            Fetched::Joined(bytes) => Ok(Payload::new(seal.codec, bytes)),
        }
    }
}

/// Block `key` (relation, column, block) of `table`, when stored.
pub(crate) fn get<'t, T: ReadableTable<Key3, &'static [u8]>>(
    table: &'t T,
    seal: Seal,
    key: Key3,
    name: &str,
) -> Result<Option<Fetched<'t>>, Fault> {
    if !seal.parted {
        return Ok(table.get(key)?.map(|value| Fetched::One { key, value }));
    }
    let mut parts = Scan::new(table.range(stored_keys(seal, key))?, seal);
    Ok(parts.next_block(name)?.map(|(_, fetched)| fetched))
}

/// Block `key` of `table`, when stored, with at least the terms of rows `rows` (indices
/// in the block) readable. A block of several parts whose rows are packed in order (the
/// frame of reference, the line) is read from part 0, which holds its head, and the parts
/// those rows' bits lie in: its other bytes are left 0, so only those rows may be read from
/// it. Any other block is read as [`get`] reads it.
pub(crate) fn get_rows<'t, T: ReadableTable<Key3, &'static [u8]>>(
    table: &'t T,
    seal: Seal,
    key: Key3,
    name: &str,
    rows: &[u32],
) -> Result<Option<Fetched<'t>>, Fault> {
    if !seal.parted {
        return get(table, seal, key, name);
    }
    let first = stored_keys(seal, key).start;
    let Some(value) = table.get(first)? else {
        return Ok(None);
    };
    // The head read before its checksum is verified: a block of one part is verified once,
    // when its payload is opened; part 0 of a longer one just below.
    let stored = value.value();
    let unverified = &stored[..stored.len().saturating_sub(SUM_BYTES)];
    // A head that does not parse is left to opening the payload, which names the damage.
    let extent = match column::extent(seal.codec, unverified) {
        Ok(e) if e.len > unverified.len() => e,
        _ => return Ok(Some(Fetched::One { key: first, value })),
    };
    let Some((at, width)) = extent.packed else {
        return get(table, seal, key, name);
    };
    let head = column::open(seal, first, stored, name)?.bytes;
    let count = extent.len.div_ceil(PART_BYTES);
    let each = extent.len.div_ceil(count);
    let size = |part: usize| each.min(extent.len - part * each);
    let wrong = |part: usize, found: usize| {
        damaged(format!(
            "relation {name}, column {}: block {}: part {part} holds {found} bytes, not {}",
            key.1,
            key.2,
            size(part)
        ))
    };
    if head.len() != each {
        return Err(wrong(0, head.len()));
    }
    let mut bytes = vec![0u8; extent.len];
    bytes[..each].copy_from_slice(head);
    let mut read = 1u64;
    let width = usize::from(width);
    for &row in rows {
        if width == 0 {
            break;
        }
        let bit = at * 8 + row as usize * width;
        let last = ((bit + width).div_ceil(8) - 1).min(extent.len - 1);
        for part in (bit / 8).min(extent.len - 1) / each..=last / each {
            if read & (1 << part) != 0 {
                continue;
            }
            let stored = (first.0, first.1, first.2 | part as u32);
            let value = table
                .get(stored)?
                .ok_or_else(|| missing_part(name, key, part as u32))?;
            let payload = column::open(seal, stored, value.value(), name)?.bytes;
            if payload.len() != size(part) {
                return Err(wrong(part, payload.len()));
            }
            bytes[part * each..][..payload.len()].copy_from_slice(payload);
            read |= 1 << part;
        }
    }
    Ok(Some(Fetched::Joined(bytes)))
}

/// Part `part` of block `key` (relation, column, block) of relation `name` is not stored.
fn missing_part(name: &str, (_, col, block): Key3, part: u32) -> Fault {
    damaged(format!(
        "relation {name}, column {col}: block {block}: part {part} is missing"
    ))
}

/// The blocks stored under a range of keys, block by block.
pub(crate) struct Scan<'a> {
    range: Peekable<redb::Range<'a, Key3, &'static [u8]>>,
    seal: Seal,
}

impl<'a> Scan<'a> {
    /// Reads the blocks `range` (from [`stored_keys_of`]) holds.
    pub(crate) fn new(range: redb::Range<'a, Key3, &'static [u8]>, seal: Seal) -> Scan<'a> {
        Scan {
            range: range.peekable(),
            seal,
        }
    }

    /// The next block stored, with its key (relation, column, block); `name` names the
    /// relation for an error.
    pub(crate) fn next_block(&mut self, name: &str) -> Result<Option<(Key3, Fetched<'a>)>, Fault> {
        let Some(first) = self.range.next() else {
            return Ok(None);
        };
        let (k, value) = first?;
        let stored = k.value();
        let (block, part) = block_of(self.seal, stored);
        if part != 0 {
            return Err(missing_part(name, block, 0));
        }
        let same =
            |r: &Result<
                (AccessGuard<'a, Key3>, AccessGuard<'a, &'static [u8]>),
                redb::StorageError,
            >| { matches!(r, Ok((k, _)) if block_of(self.seal, k.value()).0 == block) };
        if !self.seal.parted || !self.range.peek().is_some_and(same) {
            return Ok(Some((block, Fetched::One { key: stored, value })));
        }
        let head = column::open(self.seal, stored, value.value(), name)?.bytes;
        let mut joined = Vec::with_capacity(MAX_PARTS * head.len());
        joined.extend_from_slice(head);
        let mut expect = 1;
        while let Some((k, value)) = self.range.next_if(same).transpose()? {
            let stored = k.value();
            let (_, part) = block_of(self.seal, stored);
            if part != expect {
                return Err(missing_part(name, block, expect));
            }
            joined.extend_from_slice(column::open(self.seal, stored, value.value(), name)?.bytes);
            expect += 1;
        }
        Ok(Some((block, Fetched::Joined(joined))))
    }
}

/// A block's values to store: its payload sealed, whole or in parts as its file stores them.
pub(crate) struct Sealed {
    key: Key3,
    parts: Vec<Vec<u8>>,
}

impl Sealed {
    /// Seals `payload`, the encoding of block `key` (relation, column, block), for a file
    /// sealed with `seal`.
    pub(crate) fn new(seal: Seal, key: Key3, payload: Vec<u8>) -> Sealed {
        if !seal.parted || payload.len() <= PART_BYTES {
            let at = stored_keys(seal, key).start;
            return Sealed {
                key,
                parts: vec![column::seal(seal, at, payload)],
            };
        }
        let count = payload.len().div_ceil(PART_BYTES);
        let each = payload.len().div_ceil(count);
        let first = stored_keys(seal, key).start;
        let parts = payload
            .chunks(each)
            .enumerate()
            .map(|(i, part)| {
                let at = (first.0, first.1, first.2 | i as u32);
                column::seal(seal, at, part.to_vec())
            })
            .collect();
        Sealed { key, parts }
    }

    /// The block's key (relation, column, block).
    pub(crate) fn key(&self) -> Key3 {
        self.key
    }

    /// Writes the block into `table`, in place of what it stored before.
    pub(crate) fn write(
        &self,
        seal: Seal,
        table: &mut Table<'_, Key3, &'static [u8]>,
    ) -> Result<(), Fault> {
        let keys = stored_keys(seal, self.key);
        for (i, part) in self.parts.iter().enumerate() {
            table.insert(
                (keys.start.0, keys.start.1, keys.start.2 | i as u32),
                part.as_slice(),
            )?;
        }
        // A block rewritten may take fewer parts than it did: the rest go.
        if seal.parted {
            let stale = (
                keys.start.0,
                keys.start.1,
                keys.start.2 | self.parts.len() as u32,
            )..keys.end;
            if table.range(stale.clone())?.next().is_some() {
                table.retain_in(stale, |_, _| false)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use redb::backends::InMemoryBackend;
    use redb::{Database, ReadableDatabase, TableDefinition};

    use super::*;
    use crate::layout;

    const T: TableDefinition<'static, Key3, &'static [u8]> = TableDefinition::new("blocks");

    type Stored<'t> = redb::Table<'t, Key3, &'static [u8]>;

    fn db() -> Database {
        Database::builder()
            .create_with_backend(InMemoryBackend::new())
            .unwrap()
    }

    fn bytes(n: usize, salt: u8) -> Vec<u8> {
        (0..n).map(|i| (i * 31 + usize::from(salt)) as u8).collect()
    }

    /// Writes `blocks` (block, payload) of relation 1, column 0, in one transaction.
    fn write(db: &Database, seal: Seal, blocks: &[(u32, Vec<u8>)]) {
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(T).unwrap();
            for (b, payload) in blocks {
                Sealed::new(seal, (1, 0, *b), payload.clone())
                    .write(seal, &mut t)
                    .unwrap();
            }
        }
        txn.commit().unwrap();
    }

    /// Changes `db`'s blocks table with `f`, in one transaction.
    fn edit(db: &Database, f: &dyn Fn(&mut Stored<'_>)) {
        let txn = db.begin_write().unwrap();
        f(&mut txn.open_table(T).unwrap());
        txn.commit().unwrap();
    }

    fn read(db: &Database, seal: Seal, b: u32) -> Result<Option<Vec<u8>>, Fault> {
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(T).unwrap();
        Ok(match get(&t, seal, (1, 0, b), "r")? {
            Some(f) => Some(f.payload(seal, "r")?.bytes.to_vec()),
            None => None,
        })
    }

    #[test]
    fn blocks_of_every_size_read_back_whole_alone_and_in_a_scan() {
        let seal = Seal::of_version(layout::PARTED_VERSION);
        let sizes = [0, 1, 1024, 1025, 2048, 2049, 11_780, 16_394];
        let blocks: Vec<(u32, Vec<u8>)> = sizes
            .iter()
            .enumerate()
            .map(|(b, &n)| (b as u32, bytes(n, b as u8)))
            .collect();
        let db = db();
        write(&db, seal, &blocks);
        for (b, payload) in &blocks {
            assert_eq!(read(&db, seal, *b).unwrap().as_ref(), Some(payload));
        }
        assert_eq!(read(&db, seal, 99).unwrap(), None);
        // Parts of about one size, none over the limit: 16,394 bytes in 17 of 965.
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(T).unwrap();
        let last = stored_keys(seal, (1, 0, 7));
        let parts: Vec<usize> = t
            .range(last)
            .unwrap()
            .map(|e| e.unwrap().1.value().len() - crate::seal::SUM_BYTES)
            .collect();
        assert_eq!(
            parts,
            [965; 16].iter().copied().chain([954]).collect::<Vec<_>>()
        );
        // A scan over blocks 2 ..= 6 gives each once, in order.
        let mut scan = Scan::new(t.range(stored_keys_of(seal, (1, 0), 2..7)).unwrap(), seal);
        for (b, payload) in &blocks[2..7] {
            let (key, f) = scan.next_block("r").unwrap().unwrap();
            assert_eq!(key, (1, 0, *b));
            assert_eq!(f.payload(seal, "r").unwrap().bytes, payload.as_slice());
        }
        assert!(scan.next_block("r").unwrap().is_none());
    }

    #[test]
    fn a_block_rewritten_in_fewer_parts_leaves_none_behind() {
        let seal = Seal::of_version(layout::PARTED_VERSION);
        let db = db();
        write(&db, seal, &[(3, bytes(5_000, 1)), (4, bytes(3_000, 2))]);
        write(&db, seal, &[(3, bytes(100, 3))]);
        assert_eq!(read(&db, seal, 3).unwrap(), Some(bytes(100, 3)));
        assert_eq!(read(&db, seal, 4).unwrap(), Some(bytes(3_000, 2)));
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(T).unwrap();
        assert_eq!(t.range(stored_keys(seal, (1, 0, 3))).unwrap().count(), 1);
    }

    #[test]
    fn a_missing_or_foreign_part_is_damage_naming_block_and_part() {
        let seal = Seal::of_version(layout::PARTED_VERSION);
        let db = db();
        write(&db, seal, &[(2, bytes(3_000, 1))]);
        let first = stored_keys(seal, (1, 0, 2)).start;
        // Part 1 of 3 gone.
        let part1 = t_get(&db, (first.0, first.1, first.2 | 1));
        edit(&db, &|t| {
            t.remove((first.0, first.1, first.2 | 1)).unwrap();
        });
        let err = format!("{:?}", read(&db, seal, 2).unwrap_err());
        assert!(
            err.contains("column 0: block 2: part 1 is missing"),
            "{err}"
        );
        // Part 1 back under part 0's key: its checksum names another key.
        edit(&db, &|t| {
            t.insert(first, part1.as_slice()).unwrap();
        });
        let err = format!("{:?}", read(&db, seal, 2).unwrap_err());
        assert!(
            err.contains("block 2 (part 0)") && err.contains("checksum"),
            "{err}"
        );
        // Part 0 gone: the block starts at part 2.
        edit(&db, &|t| {
            t.remove(first).unwrap();
        });
        let err = format!("{:?}", read(&db, seal, 2).unwrap_err());
        assert!(err.contains("block 2: part 0 is missing"), "{err}");
    }

    /// Terms of 23 bits in no order: a frame of reference block of 11.8 KB, 12 parts.
    fn spread() -> Vec<u32> {
        (0..4096u32)
            .map(|i| i.wrapping_mul(2_654_435_761) >> 9)
            .collect()
    }

    fn rows_of(db: &Database, seal: Seal, b: u32, rows: &[u32]) -> Result<Vec<u32>, Fault> {
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(T).unwrap();
        let f = get_rows(&t, seal, (1, 0, b), "r", rows)?.unwrap();
        let view = column::view(f.payload(seal, "r")?)?;
        Ok(rows
            .iter()
            .map(|&i| view.get(i as usize).unwrap())
            .collect())
    }

    #[test]
    fn a_lookup_reads_only_the_parts_holding_its_rows() {
        let seal = Seal::of_version(layout::PARTED_VERSION);
        let terms = spread();
        let payload = column::encode(seal.codec, &terms).unwrap();
        assert!(
            column::extent(seal.codec, &payload)
                .unwrap()
                .packed
                .is_some()
        );
        assert_eq!(payload.len().div_ceil(PART_BYTES), 12);
        let db = db();
        write(&db, seal, &[(0, payload.clone())]);
        let rows = [0, 1, 355, 356, 2500, 4095];
        let want: Vec<u32> = rows.iter().map(|&i| terms[i as usize]).collect();
        assert_eq!(rows_of(&db, seal, 0, &rows).unwrap(), want);
        // Part 5 (rows near 1,780) gone: reading the block whole is damage; reading rows
        // that lie elsewhere still answers, and a row in it names the part.
        let first = stored_keys(seal, (1, 0, 0)).start;
        edit(&db, &|t| {
            t.remove((first.0, first.1, first.2 | 5)).unwrap();
        });
        let err = format!("{:?}", read(&db, seal, 0).unwrap_err());
        assert!(err.contains("block 0: part 5 is missing"), "{err}");
        assert_eq!(rows_of(&db, seal, 0, &rows).unwrap(), want);
        let err = format!("{:?}", rows_of(&db, seal, 0, &[1780]).unwrap_err());
        assert!(err.contains("block 0: part 5 is missing"), "{err}");
    }

    #[test]
    fn a_part_of_the_wrong_length_is_damage() {
        let seal = Seal::of_version(layout::PARTED_VERSION);
        let payload = column::encode(seal.codec, &spread()).unwrap();
        let db = db();
        write(&db, seal, &[(0, payload.clone())]);
        // Part 3 sealed again one byte short.
        let first = stored_keys(seal, (1, 0, 0)).start;
        let at = (first.0, first.1, first.2 | 3);
        let each = payload.len().div_ceil(12);
        let short = column::seal(seal, at, payload[3 * each..4 * each - 1].to_vec());
        edit(&db, &|t| {
            t.insert(at, short.as_slice()).unwrap();
        });
        let row = (3 * each * 8 / 23) as u32 + 1;
        let err = format!("{:?}", rows_of(&db, seal, 0, &[row]).unwrap_err());
        assert!(err.contains("block 0: part 3 holds"), "{err}");
        // Read whole, the block comes out a byte short, which decoding it finds.
        let whole = read(&db, seal, 0).unwrap().unwrap();
        assert_eq!(whole.len(), payload.len() - 1);
        assert!(column::view(crate::layout::Payload::new(seal.codec, &whole)).is_err());
    }

    #[test]
    fn a_block_of_runs_in_parts_is_read_whole_for_a_lookup() {
        let seal = Seal::of_version(layout::PARTED_VERSION);
        // Runs of three rows, terms of 30 bits: runs are smaller than a frame here.
        let terms: Vec<u32> = (0..4096u32)
            .map(|i| (i / 3).wrapping_mul(2_654_435_761) >> 2)
            .collect();
        let payload = column::encode(seal.codec, &terms).unwrap();
        assert!(
            column::extent(seal.codec, &payload)
                .unwrap()
                .packed
                .is_none()
        );
        assert!(payload.len() > 2 * PART_BYTES);
        let db = db();
        write(&db, seal, &[(0, payload)]);
        assert_eq!(
            rows_of(&db, seal, 0, &[7, 4000]).unwrap(),
            [terms[7], terms[4000]]
        );
    }

    fn t_get(db: &Database, key: Key3) -> Vec<u8> {
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(T).unwrap();
        t.get(key).unwrap().unwrap().value().to_vec()
    }

    #[test]
    fn a_version_4_file_stores_each_block_as_one_value_under_its_own_key() {
        let seal = Seal::of_version(4);
        let db = db();
        write(&db, seal, &[(5, bytes(11_780, 1)), (6, bytes(10, 2))]);
        assert_eq!(t_get(&db, (1, 0, 5)).len(), 11_780 + crate::seal::SUM_BYTES);
        assert_eq!(read(&db, seal, 5).unwrap(), Some(bytes(11_780, 1)));
        assert_eq!(read(&db, seal, 6).unwrap(), Some(bytes(10, 2)));
    }
}
