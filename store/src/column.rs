//! Column blocks: up to [`BLOCK_ROWS`](crate::layout::BLOCK_ROWS) terms of one column, stored
//! as an rkyv-archived `Vec<u32>`.
//!
//! The workspace builds rkyv with its `unaligned` and `little_endian` features, so an archived
//! block can be read in place from the unaligned byte slices redb hands back, and checked
//! access validates it before use.

use rkyv::rancor;
use rkyv::vec::ArchivedVec;

use crate::error::Damage;

/// The archived form of a block, read in place from stored bytes.
pub type ArchivedBlock = ArchivedVec<rkyv::Archived<u32>>;

/// Archives a block of terms.
pub fn encode(terms: &[u32]) -> Result<Vec<u8>, Damage> {
    let v: Vec<u32> = terms.to_vec();
    let bytes = rkyv::to_bytes::<rancor::Error>(&v)
        .map_err(|e| Damage::Format(format!("cannot archive a column block: {e}")))?;
    Ok(bytes.into_vec())
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
