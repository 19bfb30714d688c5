//! Postings: roaring bitmaps of row ids, stored per (relation, column, term).

use roaring::RoaringBitmap;

use crate::error::{Result, StoreError};

/// Serializes a bitmap (after optimizing its containers into runs where that is smaller).
pub fn encode(bitmap: &mut RoaringBitmap) -> Vec<u8> {
    bitmap.optimize();
    let mut out = Vec::with_capacity(bitmap.serialized_size());
    // Writing into a Vec cannot fail.
    let _ = bitmap.serialize_into(&mut out);
    out
}

/// Deserializes and validates a stored bitmap.
pub fn decode(bytes: &[u8]) -> Result<RoaringBitmap> {
    RoaringBitmap::deserialize_from(bytes)
        .map_err(|e| StoreError::Corrupt(format!("a row bitmap does not validate: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut b: RoaringBitmap = (0..100_000).step_by(3).chain(200_000..300_000).collect();
        let bytes = encode(&mut b);
        assert_eq!(decode(&bytes).unwrap(), b);
        assert!(decode(&bytes[..bytes.len() / 2]).is_err());
    }
}
