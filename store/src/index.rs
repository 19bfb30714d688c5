//! Postings: for each (relation, column, term), the rows whose column holds the term.
//!
//! Postings are grouped in chunks of [`CHUNK_TERMS`] consecutive terms, one redb entry per
//! chunk, keyed by `(relation, column, term >> CHUNK_BITS)`; most terms of a code graph occur
//! in a handful of rows, and an entry per term would cost a B-tree insert per distinct value.
//!
//! A chunk's bytes: `n` (u8, 1 to 64), then `n` low bytes of the terms (`term & 63`,
//! ascending), then `n` end offsets (u32 LE) of each posting within the data that follows,
//! then the postings back to back. A posting is a tag byte and its rows: tag 0, up to
//! [`RAW_MAX`] row ids as u32 LE, ascending; tag 1, a serialized roaring bitmap.

use roaring::RoaringBitmap;

use crate::error::Damage;
use crate::seal::{Key, Seal, Table};

/// log2 of the terms per chunk.
pub const CHUNK_BITS: u32 = 6;
/// Terms per chunk.
pub const CHUNK_TERMS: u32 = 1 << CHUNK_BITS;
/// The most rows a posting stores as a plain list rather than as a roaring bitmap.
pub const RAW_MAX: u64 = 8;

/// The payload of the `postings` entry `key` of relation `name`, its checksum verified.
pub(crate) fn open_chunk<'a>(
    seal: Seal,
    key: (u32, u16, u32),
    stored: &'a [u8],
    name: &str,
) -> Result<&'a [u8], Damage> {
    seal.open(&Key::column(Table::Postings, key), stored, || {
        format!(
            "relation {name}, column {}: postings chunk {}",
            key.1, key.2
        )
    })
}

/// The value to store for the `postings` entry `key`.
pub(crate) fn seal_chunk(seal: Seal, key: (u32, u16, u32), bytes: Vec<u8>) -> Vec<u8> {
    seal.close(&Key::column(Table::Postings, key), bytes)
}

/// The payload of the `dead` entry of relation `rel`, its checksum verified.
pub(crate) fn open_dead(seal: Seal, rel: u32, stored: &[u8]) -> Result<&[u8], Damage> {
    seal.open(&Key::one(Table::Dead, rel), stored, || {
        format!("relation {rel}: the bitmap of removed rows")
    })
}

/// The value to store for the `dead` entry of relation `rel`.
pub(crate) fn seal_dead(seal: Seal, rel: u32, bytes: Vec<u8>) -> Vec<u8> {
    seal.close(&Key::one(Table::Dead, rel), bytes)
}

/// The payload of the `owners` entry (relation, unit), its checksum verified.
pub(crate) fn open_owners(seal: Seal, key: (u32, u32), stored: &[u8]) -> Result<&[u8], Damage> {
    seal.open(&Key::two(Table::Owners, key), stored, || {
        format!("relation {}: the rows of unit {}", key.0, key.1)
    })
}

/// The value to store for the `owners` entry (relation, unit).
pub(crate) fn seal_owners(seal: Seal, key: (u32, u32), bytes: Vec<u8>) -> Vec<u8> {
    seal.close(&Key::two(Table::Owners, key), bytes)
}

/// The value a new database stores for the postings chunk `key` (relation, column, chunk)
/// holding `postings`: [`encode_chunk`] and its checksum (what tests that damage a database
/// write).
pub fn stored_chunk<'a>(
    key: (u32, u16, u32),
    postings: impl Iterator<Item = (u8, &'a mut RoaringBitmap)>,
) -> Vec<u8> {
    seal_chunk(Seal { on: true }, key, encode_chunk(postings))
}

/// The chunk a term's posting lives in, and its low byte within the chunk.
pub fn chunk_of(term: u32) -> (u32, u8) {
    (term >> CHUNK_BITS, (term & (CHUNK_TERMS - 1)) as u8)
}

/// Appends one posting's encoding to `out`.
pub fn encode_posting(bitmap: &mut RoaringBitmap, out: &mut Vec<u8>) {
    if bitmap.len() <= RAW_MAX {
        out.push(0);
        for r in bitmap.iter() {
            out.extend_from_slice(&r.to_le_bytes());
        }
    } else {
        out.push(1);
        bitmap.optimize();
        // Writing into a Vec cannot fail.
        let _ = bitmap.serialize_into(&mut *out);
    }
}

/// Decodes one posting.
pub fn decode_posting(bytes: &[u8]) -> Result<RoaringBitmap, Damage> {
    match bytes.split_first() {
        Some((0, rows)) if rows.len() % 4 == 0 => {
            let it = rows
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
            RoaringBitmap::from_sorted_iter(it)
                .map_err(|_| Damage::Format("a posting's rows are out of order".to_owned()))
        }
        Some((1, rest)) => decode(rest),
        _ => Err(Damage::Format(
            "a posting has an unknown encoding".to_owned(),
        )),
    }
}

/// Serializes a bitmap on its own (dead rows, owners).
pub fn encode(bitmap: &mut RoaringBitmap) -> Vec<u8> {
    bitmap.optimize();
    let mut out = Vec::with_capacity(bitmap.serialized_size());
    // Writing into a Vec cannot fail.
    let _ = bitmap.serialize_into(&mut out);
    out
}

/// Deserializes and validates a bitmap written by [`encode`].
pub fn decode(bytes: &[u8]) -> Result<RoaringBitmap, Damage> {
    RoaringBitmap::deserialize_from(bytes)
        .map_err(|e| Damage::Format(format!("a row bitmap does not validate: {e}")))
}

/// A chunk of postings read in place.
pub struct ChunkView<'a> {
    lows: &'a [u8],
    ends: &'a [u8],
    data: &'a [u8],
}

impl<'a> ChunkView<'a> {
    /// Checks a chunk's directory.
    pub fn parse(bytes: &'a [u8]) -> Result<ChunkView<'a>, Damage> {
        let bad = || Damage::Format("a postings chunk is malformed".to_owned());
        let (&n, rest) = bytes.split_first().ok_or_else(bad)?;
        let n = n as usize;
        if n == 0 || n > CHUNK_TERMS as usize || rest.len() < n * 5 {
            return Err(bad());
        }
        let (lows, rest) = rest.split_at(n);
        let (ends, data) = rest.split_at(n * 4);
        let view = ChunkView { lows, ends, data };
        let mut prev_end = 0;
        for i in 0..n {
            let end = view.end(i);
            if end < prev_end || end > data.len() || (i > 0 && lows[i] <= lows[i - 1]) {
                return Err(bad());
            }
            prev_end = end;
        }
        Ok(view)
    }

    fn end(&self, i: usize) -> usize {
        let e = &self.ends[i * 4..i * 4 + 4];
        u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as usize
    }

    fn posting(&self, i: usize) -> &'a [u8] {
        let start = if i == 0 { 0 } else { self.end(i - 1) };
        &self.data[start..self.end(i)]
    }

    /// The encoded posting of the term with low byte `low`, if the chunk holds it.
    pub fn get(&self, low: u8) -> Option<&'a [u8]> {
        self.lows.binary_search(&low).ok().map(|i| self.posting(i))
    }

    /// Each term's low byte with its encoded posting, ascending.
    pub fn iter(&self) -> impl Iterator<Item = (u8, &'a [u8])> + '_ {
        (0..self.lows.len()).map(|i| (self.lows[i], self.posting(i)))
    }

    /// How many terms the chunk holds.
    pub fn len(&self) -> usize {
        self.lows.len()
    }

    /// Whether the chunk is empty (a stored chunk never is).
    pub fn is_empty(&self) -> bool {
        self.lows.is_empty()
    }
}

/// Encodes a chunk from its non-empty postings, ascending by low byte.
pub fn encode_chunk<'b>(entries: impl Iterator<Item = (u8, &'b mut RoaringBitmap)>) -> Vec<u8> {
    let mut lows = Vec::new();
    let mut ends = Vec::new();
    let mut data = Vec::new();
    for (low, bitmap) in entries {
        lows.push(low);
        encode_posting(bitmap, &mut data);
        ends.extend_from_slice(&(data.len() as u32).to_le_bytes());
    }
    let mut out = Vec::with_capacity(1 + lows.len() * 5 + data.len());
    out.push(lows.len() as u8);
    out.extend_from_slice(&lows);
    out.extend_from_slice(&ends);
    out.extend_from_slice(&data);
    out
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

    #[test]
    fn chunks_round_trip() {
        let mut small: RoaringBitmap = [3, 9, 4000].into_iter().collect();
        let mut big: RoaringBitmap = (0..1000).collect();
        let mut one: RoaringBitmap = [7].into_iter().collect();
        let (s, b, o) = (small.clone(), big.clone(), one.clone());
        let bytes = encode_chunk([(0, &mut small), (5, &mut big), (63, &mut one)].into_iter());
        let view = ChunkView::parse(&bytes).unwrap();
        assert_eq!(view.len(), 3);
        assert_eq!(decode_posting(view.get(0).unwrap()).unwrap(), s);
        assert_eq!(decode_posting(view.get(5).unwrap()).unwrap(), b);
        assert_eq!(decode_posting(view.get(63).unwrap()).unwrap(), o);
        assert!(view.get(6).is_none());
        assert_eq!(view.iter().map(|(l, _)| l).collect::<Vec<_>>(), [0, 5, 63]);
        for cut in 0..bytes.len() {
            // Any truncation is an error or a view whose postings fail to decode; no panic.
            if let Ok(v) = ChunkView::parse(&bytes[..cut]) {
                for (_, p) in v.iter() {
                    let _ = decode_posting(p);
                }
            }
        }
        assert_eq!(chunk_of(0x8000_0041), (0x8000_0041 >> 6, 1));
    }
}
