//! Checksums on stored values (format version 2).
//!
//! redb verifies its pages' checksums only in `Database::check_integrity`; its ordinary reads
//! hand back whatever bytes a page holds. So each value the store decodes into facts (column
//! blocks, postings chunks, `dead` and `owners` bitmaps, dictionary text chunks) ends, in a
//! file of format version 2, with a CRC-32 (IEEE, `crc32fast`) of a tag naming its table, its
//! key's bytes and its payload, and every read verifies it before decoding: a flipped byte (or
//! a value found under another key) is [`Damage`], never a wrong answer. Files of version 1
//! hold values without the trailer, and are read (and written) as they are. Version 3 keeps
//! the scheme; only the payloads' encoding changed (see [`Codec`]).

use crate::error::Damage;
use crate::layout::{self, Codec, Payload};

/// Bytes of the checksum at the end of a sealed value.
pub(crate) const SUM_BYTES: usize = 4;

/// Whether a file's values carry checksums, and how their payloads are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seal {
    /// Set for files of format version 2 and later.
    pub(crate) on: bool,
    /// The payloads' encoding: [`Codec::Compact`] from format version 3.
    pub(crate) codec: Codec,
    /// Set for files of format version 5 and later, which store column blocks in parts
    /// (`crate::blocks`).
    pub(crate) parted: bool,
    /// Set for files of format version 6 and later, whose catalog may declare columns
    /// without postings (read in a base file only).
    pub(crate) declared_indexes: bool,
}

/// The table a value is stored in, as the first byte its checksum covers.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Table {
    /// `blocks`.
    Blocks = b'B' as isize,
    /// `postings`.
    Postings = b'P' as isize,
    /// `dead`.
    Dead = b'D' as isize,
    /// `owners`.
    Owners = b'O' as isize,
    /// `text_by_id`.
    Texts = b'T' as isize,
}

/// A key's bytes as a checksum covers them: the table's tag, then each key element
/// little-endian.
pub(crate) struct Key {
    bytes: [u8; 11],
    len: usize,
}

impl Key {
    /// The key of a `blocks` or `postings` entry: (relation, column, block or chunk).
    pub(crate) fn column(table: Table, (rel, col, n): (u32, u16, u32)) -> Key {
        let mut k = Key::new(table);
        k.push(&rel.to_le_bytes());
        k.push(&col.to_le_bytes());
        k.push(&n.to_le_bytes());
        k
    }

    /// The key of a `dead` entry (a relation) or a `text_by_id` entry (a chunk).
    pub(crate) fn one(table: Table, n: u32) -> Key {
        let mut k = Key::new(table);
        k.push(&n.to_le_bytes());
        k
    }

    /// The key of an `owners` entry: (relation, unit).
    pub(crate) fn two(table: Table, (a, b): (u32, u32)) -> Key {
        let mut k = Key::new(table);
        k.push(&a.to_le_bytes());
        k.push(&b.to_le_bytes());
        k
    }

    fn new(table: Table) -> Key {
        Key {
            bytes: [table as u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            len: 1,
        }
    }

    fn push(&mut self, b: &[u8]) {
        self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    fn sum(&self, payload: &[u8]) -> u32 {
        let mut h = crc32fast::Hasher::new();
        h.update(&self.bytes[..self.len]);
        h.update(payload);
        h.finalize()
    }
}

impl Seal {
    /// What a file of format version `version` stores.
    pub(crate) fn of_version(version: u32) -> Seal {
        Seal {
            on: version >= layout::SEALED_VERSION,
            codec: Codec::of_version(version),
            parted: version >= layout::PARTED_VERSION,
            declared_indexes: version >= layout::DECLARED_INDEX_VERSION,
        }
    }

    /// What a new file stores.
    pub(crate) fn newest() -> Seal {
        Seal::of_version(layout::FORMAT_VERSION)
    }

    /// The value to store for `payload` under `key`.
    pub(crate) fn close(self, key: &Key, mut payload: Vec<u8>) -> Vec<u8> {
        if self.on {
            let sum = key.sum(&payload);
            payload.extend_from_slice(&sum.to_le_bytes());
        }
        payload
    }

    /// The payload of a value stored under `key`, once its checksum is verified; `what`
    /// names the value (relation, column, block) for the error.
    pub(crate) fn open<'a>(
        self,
        key: &Key,
        stored: &'a [u8],
        what: impl FnOnce() -> String,
    ) -> Result<Payload<'a>, Damage> {
        if !self.on {
            return Ok(Payload::new(self.codec, stored));
        }
        let Some(split) = stored.len().checked_sub(SUM_BYTES) else {
            return Err(Damage::Format(format!(
                "{}: shorter than its checksum",
                what()
            )));
        };
        let (payload, sum) = stored.split_at(split);
        if key.sum(payload).to_le_bytes() != sum {
            return Err(Damage::Format(format!(
                "{}: its checksum does not match its bytes",
                what()
            )));
        }
        Ok(Payload::new(self.codec, payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flip_anywhere_or_another_key_is_caught() {
        let seal = Seal::newest();
        let key = Key::column(Table::Blocks, (3, 1, 7));
        let stored = seal.close(&key, b"payload bytes".to_vec());
        assert_eq!(
            seal.open(&key, &stored, String::new).unwrap().bytes,
            b"payload bytes"
        );
        for i in 0..stored.len() {
            let mut bad = stored.clone();
            bad[i] ^= 0x10;
            assert!(seal.open(&key, &bad, String::new).is_err(), "byte {i}");
        }
        let other = Key::column(Table::Blocks, (3, 1, 8));
        assert!(seal.open(&other, &stored, String::new).is_err());
        let posting = Key::column(Table::Postings, (3, 1, 7));
        assert!(seal.open(&posting, &stored, String::new).is_err());
        assert!(seal.open(&key, &stored[..3], String::new).is_err());
    }

    #[test]
    fn version_one_values_are_read_as_they_are() {
        let seal = Seal::of_version(1);
        let key = Key::one(Table::Dead, 1);
        assert_eq!(seal.close(&key, vec![1, 2]), vec![1, 2]);
        assert_eq!(
            seal.open(&key, &[1, 2], String::new).unwrap().bytes,
            &[1, 2]
        );
    }
}
