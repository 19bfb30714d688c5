//! Column blocks: up to [`BLOCK_ROWS`](crate::layout::BLOCK_ROWS) terms of one column, stored
//! as an rkyv-archived `Vec<u32>`.
//!
//! The workspace builds rkyv with its `unaligned` and `little_endian` features, so an archived
//! block can be read in place from the unaligned byte slices redb hands back, and checked
//! access validates it before use.

use rkyv::rancor;
use rkyv::vec::ArchivedVec;

use crate::error::Damage;
use crate::seal::{Key, Seal, Table};

/// The archived form of a block, read in place from stored bytes.
pub type ArchivedBlock = ArchivedVec<rkyv::Archived<u32>>;

/// Archives a block of terms.
pub fn encode(terms: &[u32]) -> Result<Vec<u8>, Damage> {
    let v: Vec<u32> = terms.to_vec();
    let bytes = rkyv::to_bytes::<rancor::Error>(&v)
        .map_err(|e| Damage::Format(format!("cannot archive a column block: {e}")))?;
    Ok(bytes.into_vec())
}

/// The payload of the `blocks` entry `key` of relation `name`, its checksum verified.
pub(crate) fn open<'a>(
    seal: Seal,
    key: (u32, u16, u32),
    stored: &'a [u8],
    name: &str,
) -> Result<&'a [u8], Damage> {
    seal.open(&Key::column(Table::Blocks, key), stored, || {
        format!("relation {name}, column {}: block {}", key.1, key.2)
    })
}

/// The value to store for the `blocks` entry `key`.
pub(crate) fn seal(seal: Seal, key: (u32, u16, u32), bytes: Vec<u8>) -> Vec<u8> {
    seal.close(&Key::column(Table::Blocks, key), bytes)
}

/// The value a new database stores for the block `key` (relation, column, block) holding
/// `terms`: the archive and its checksum (what tests that damage a database write).
pub fn stored(key: (u32, u16, u32), terms: &[u32]) -> Result<Vec<u8>, Damage> {
    Ok(seal(Seal { on: true }, key, encode(terms)?))
}

/// The terms of the block `key` as a new database stores it (see [`stored`]).
pub fn from_stored(key: (u32, u16, u32), bytes: &[u8]) -> Result<Vec<u32>, Damage> {
    decode(open(Seal { on: true }, key, bytes, "?")?)
}

/// Checks and views stored bytes as a block.
pub fn view(bytes: &[u8]) -> Result<&ArchivedBlock, Damage> {
    rkyv::access::<ArchivedBlock, rancor::Error>(bytes)
        .map_err(|e| Damage::Format(format!("a column block does not validate: {e}")))
}

/// Decodes stored bytes into an owned block.
pub fn decode(bytes: &[u8]) -> Result<Vec<u32>, Damage> {
    Ok(view(bytes)?.iter().map(|t| t.to_native()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_at_every_alignment() {
        let terms: Vec<u32> = (0..1000).map(|i| i * 7 + 0x8000_0000 * (i % 2)).collect();
        let bytes = encode(&terms).unwrap();
        for shift in 0..8 {
            let mut buf = vec![0u8; shift];
            buf.extend_from_slice(&bytes);
            assert_eq!(decode(&buf[shift..]).unwrap(), terms, "shift {shift}");
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode(&[1, 2, 3]).is_err());
        assert!(decode(&[0xff; 64]).is_err());
    }
}
