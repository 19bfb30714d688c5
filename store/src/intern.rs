//! The dictionary's encoding: texts by id in chunks, ids by a stable hash of the text.
//!
//! `text_by_id` maps `id >> TEXT_CHUNK_BITS` to a chunk of up to 256 consecutive texts:
//! `n` (u16 LE), `n` end offsets (u32 LE) into the UTF-8 bytes that follow, then the bytes.
//! Slot 0 of chunk 0 is id 0, which no text has (it is `absent`): it holds the empty string.
//! `id_by_text` maps [`text_hash`] of a text to its id; a text whose hash another text took
//! first is found in `text_collisions` by the text itself.

use redb::ReadableTable;

use crate::error::{Damage, Result};
use crate::seal::{Key, Seal, Table};

/// log2 of the texts per chunk.
pub const TEXT_CHUNK_BITS: u32 = 8;

/// A stable 64-bit hash of a text (FNV-1a): part of the format, never to change.
pub fn text_hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Encodes a chunk of texts.
pub fn encode_text_chunk<'a>(texts: impl ExactSizeIterator<Item = &'a str> + Clone) -> Vec<u8> {
    let n = texts.len();
    let total: usize = texts.clone().map(str::len).sum();
    let mut out = Vec::with_capacity(2 + n * 4 + total);
    out.extend_from_slice(&(n as u16).to_le_bytes());
    let mut end = 0u32;
    for t in texts.clone() {
        end += t.len() as u32;
        out.extend_from_slice(&end.to_le_bytes());
    }
    for t in texts {
        out.extend_from_slice(t.as_bytes());
    }
    out
}

fn corrupt() -> Damage {
    Damage::Format("a dictionary chunk is malformed".to_owned())
}

/// The texts of a chunk.
pub fn decode_text_chunk(bytes: &[u8]) -> Result<Vec<String>, Damage> {
    let n = chunk_len(bytes)?;
    (0..n)
        .map(|i| text_in_chunk(bytes, i).map(str::to_owned))
        .collect()
}

fn chunk_len(bytes: &[u8]) -> Result<usize, Damage> {
    let n = bytes.get(..2).ok_or_else(corrupt)?;
    let n = u16::from_le_bytes([n[0], n[1]]) as usize;
    if bytes.len() < 2 + n * 4 {
        return Err(corrupt());
    }
    Ok(n)
}

/// Slot `i` of a chunk.
pub fn text_in_chunk(bytes: &[u8], i: usize) -> Result<&str, Damage> {
    let n = chunk_len(bytes)?;
    if i >= n {
        return Err(corrupt());
    }
    let end_at = |j: usize| {
        let e = &bytes[2 + j * 4..2 + j * 4 + 4];
        u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as usize
    };
    let data = &bytes[2 + n * 4..];
    let start = if i == 0 { 0 } else { end_at(i - 1) };
    let end = end_at(i);
    let slice = data.get(start..end).ok_or_else(corrupt)?;
    std::str::from_utf8(slice).map_err(|_| corrupt())
}

/// The value stored for chunk `chunk` of `text_by_id`, its checksum verified (`seal`: the
/// base file's).
pub(crate) fn chunk_bytes(seal: Seal, chunk: u32, stored: &[u8]) -> Result<&[u8], Damage> {
    seal.open(&Key::one(Table::Texts, chunk), stored, || {
        format!("dictionary chunk {chunk}")
    })
}

/// The value to store for chunk `chunk` of `text_by_id`.
pub(crate) fn seal_chunk(seal: Seal, chunk: u32, bytes: Vec<u8>) -> Vec<u8> {
    seal.close(&Key::one(Table::Texts, chunk), bytes)
}

/// The text with id `id`, if the dictionary has it.
pub(crate) fn read_text(
    by_id: &impl ReadableTable<u32, &'static [u8]>,
    seal: Seal,
    count: u32,
    id: u32,
) -> Result<Option<String>> {
    if id == 0 || id > count {
        return Ok(None);
    }
    let chunk = id >> TEXT_CHUNK_BITS;
    match by_id.get(chunk)? {
        Some(v) => {
            let bytes = chunk_bytes(seal, chunk, v.value())?;
            let slot = (id & ((1 << TEXT_CHUNK_BITS) - 1)) as usize;
            Ok(Some(text_in_chunk(bytes, slot)?.to_owned()))
        }
        None => Err(corrupt().into()),
    }
}

/// The texts with ids `ids` (ascending), each chunk read and verified once: `None` for an
/// id the dictionary does not have.
pub(crate) fn read_texts(
    by_id: &impl ReadableTable<u32, &'static [u8]>,
    seal: Seal,
    count: u32,
    ids: &[u32],
) -> Result<Vec<Option<String>>> {
    let mut out = Vec::with_capacity(ids.len());
    let mut i = 0;
    while i < ids.len() {
        let chunk = ids[i] >> TEXT_CHUNK_BITS;
        let known = |id: u32| id != 0 && id <= count && id >> TEXT_CHUNK_BITS == chunk;
        if !known(ids[i]) {
            out.push(None);
            i += 1;
            continue;
        }
        let Some(v) = by_id.get(chunk)? else {
            return Err(corrupt().into());
        };
        let bytes = chunk_bytes(seal, chunk, v.value())?;
        while i < ids.len() && known(ids[i]) {
            let slot = (ids[i] & ((1 << TEXT_CHUNK_BITS) - 1)) as usize;
            out.push(Some(text_in_chunk(bytes, slot)?.to_owned()));
            i += 1;
        }
    }
    Ok(out)
}

/// The id of `text`, if the dictionary has it.
pub(crate) fn find_text(
    by_hash: &impl ReadableTable<u64, u32>,
    collisions: &impl ReadableTable<&'static str, u32>,
    by_id: &impl ReadableTable<u32, &'static [u8]>,
    seal: Seal,
    count: u32,
    text: &str,
) -> Result<Option<u32>> {
    let Some(id) = by_hash.get(text_hash(text))?.map(|v| v.value()) else {
        return Ok(None);
    };
    if read_text(by_id, seal, count, id)?.as_deref() == Some(text) {
        return Ok(Some(id));
    }
    Ok(collisions.get(text)?.map(|v| v.value()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_round_trip() {
        let texts = ["", "app", "ünïcode", "x\ty"];
        let bytes = encode_text_chunk(texts.iter().copied());
        assert_eq!(decode_text_chunk(&bytes).unwrap(), texts);
        assert_eq!(text_in_chunk(&bytes, 2).unwrap(), "ünïcode");
        assert!(text_in_chunk(&bytes, 4).is_err());
        for cut in 0..bytes.len() {
            let _ = decode_text_chunk(&bytes[..cut]);
        }
    }

    #[test]
    fn the_hash_is_stable() {
        assert_eq!(text_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(text_hash("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
