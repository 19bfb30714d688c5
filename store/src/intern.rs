//! The dictionary's encoding: texts by id in chunks, ids by a stable hash of the text.
//!
//! `text_by_id` maps `id >> TEXT_CHUNK_BITS` to a chunk of up to 256 consecutive texts. Plain
//! (format versions 1 and 2): `n` (u16 LE), `n` end offsets (u32 LE) into the UTF-8 bytes
//! that follow, then the bytes. Compact (version 3): `n` (u16 LE), then for each frame of
//! [`TEXT_FRAME`] texts its length in bytes as a varint, then the frames back to back; a
//! frame front-codes its texts, each as two varints, the bytes it shares with the text
//! before in the frame (0 for the first) and the length of the rest, then the rest. Ids are
//! handed out in order of first appearance, so neighbours share paths (`sym:a/b.rs#f`).
//! Slot 0 of chunk 0 is id 0, which no text has (it is `absent`): it holds the empty string.
//! `id_by_text` maps [`text_hash`] of a text to its id; a text whose hash another text took
//! first is found in `text_collisions` by the text itself.

use redb::ReadableTable;

use crate::bits::{self, Reader};
use crate::error::{Damage, Result};
use crate::layout::{Codec, Payload};
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

/// Texts per frame of a compact chunk: reading a text expands at most this many.
pub const TEXT_FRAME: usize = 16;

/// Encodes a chunk of texts in `codec`.
pub fn encode_text_chunk<'a>(
    codec: Codec,
    texts: impl ExactSizeIterator<Item = &'a str> + Clone,
) -> Vec<u8> {
    let n = texts.len();
    match codec {
        Codec::Plain => {
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
        Codec::Compact | Codec::Compact4 => {
            let texts: Vec<&str> = texts.collect();
            let mut dir = Vec::new();
            let mut frames = Vec::new();
            dir.extend_from_slice(&(n as u16).to_le_bytes());
            for frame in texts.chunks(TEXT_FRAME) {
                let start = frames.len();
                let mut prev: &[u8] = &[];
                for t in frame {
                    let t = t.as_bytes();
                    let shared = prev.iter().zip(t).take_while(|(a, b)| a == b).count();
                    bits::put_varint(&mut frames, shared as u64);
                    bits::put_varint(&mut frames, (t.len() - shared) as u64);
                    frames.extend_from_slice(&t[shared..]);
                    prev = t;
                }
                bits::put_varint(&mut dir, (frames.len() - start) as u64);
            }
            dir.extend_from_slice(&frames);
            dir
        }
    }
}

fn corrupt() -> Damage {
    Damage::Format("a dictionary chunk is malformed".to_owned())
}

/// The texts of a chunk.
pub fn decode_text_chunk<'a>(payload: impl Into<Payload<'a>>) -> Result<Vec<String>, Damage> {
    let mut chunk = TextChunk::parse(payload)?;
    (0..chunk.len())
        .map(|i| chunk.text(i).map(str::to_owned))
        .collect()
}

/// A chunk of texts read in place; a compact chunk's frames are expanded as texts in them
/// are asked for, the last one kept.
pub struct TextChunk<'a> {
    n: usize,
    body: Body<'a>,
}

enum Body<'a> {
    /// End offsets (u32 LE) and the bytes.
    Plain { ends: &'a [u8], data: &'a [u8] },
    Compact {
        /// Each frame's front-coded bytes.
        frames: Vec<&'a [u8]>,
        /// The expanded frame held, by number.
        held: Option<usize>,
        raw: Vec<u8>,
        /// Where each text of the held frame starts and ends in `raw`.
        spans: Vec<(usize, usize)>,
    },
}

impl<'a> TextChunk<'a> {
    /// Checks a chunk's directory.
    pub fn parse(payload: impl Into<Payload<'a>>) -> Result<TextChunk<'a>, Damage> {
        let payload = payload.into();
        let bytes = payload.bytes;
        let n = bytes.get(..2).ok_or_else(corrupt)?;
        let n = u16::from_le_bytes([n[0], n[1]]) as usize;
        let body = match payload.codec {
            Codec::Plain => {
                if bytes.len() < 2 + n * 4 {
                    return Err(corrupt());
                }
                let (ends, data) = bytes[2..].split_at(n * 4);
                Body::Plain { ends, data }
            }
            Codec::Compact | Codec::Compact4 => {
                let mut r = Reader::new(&bytes[2..], "a dictionary chunk");
                let mut sizes = Vec::new();
                for _ in 0..n.div_ceil(TEXT_FRAME) {
                    sizes.push(usize::try_from(r.varint()?).map_err(|_| corrupt())?);
                }
                let mut frames = Vec::with_capacity(sizes.len());
                for len in sizes {
                    frames.push(r.take(len)?);
                }
                if !r.is_done() {
                    return Err(corrupt());
                }
                Body::Compact {
                    frames,
                    held: None,
                    raw: Vec::new(),
                    spans: Vec::new(),
                }
            }
        };
        Ok(TextChunk { n, body })
    }

    /// How many texts the chunk holds.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Slot `i` of the chunk.
    pub fn text(&mut self, i: usize) -> Result<&str, Damage> {
        if i >= self.n {
            return Err(corrupt());
        }
        let slice = match &mut self.body {
            Body::Plain { ends, data } => {
                let end_at = |j: usize| {
                    let e = &ends[j * 4..j * 4 + 4];
                    u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as usize
                };
                let start = if i == 0 { 0 } else { end_at(i - 1) };
                data.get(start..end_at(i)).ok_or_else(corrupt)?
            }
            Body::Compact {
                frames,
                held,
                raw,
                spans,
            } => {
                let f = i / TEXT_FRAME;
                if *held != Some(f) {
                    *held = None;
                    let count = TEXT_FRAME.min(self.n - f * TEXT_FRAME);
                    expand(frames[f], count, raw, spans)?;
                    *held = Some(f);
                }
                let (a, b) = spans[i % TEXT_FRAME];
                &raw[a..b]
            }
        };
        std::str::from_utf8(slice).map_err(|_| corrupt())
    }
}

/// Expands a front-coded frame of `count` texts into `raw`, each text's span in `spans`.
fn expand(
    frame: &[u8],
    count: usize,
    raw: &mut Vec<u8>,
    spans: &mut Vec<(usize, usize)>,
) -> Result<(), Damage> {
    raw.clear();
    spans.clear();
    let mut r = Reader::new(frame, "a dictionary chunk");
    let mut prev = (0, 0);
    for _ in 0..count {
        let shared = usize::try_from(r.varint()?).map_err(|_| corrupt())?;
        let len = usize::try_from(r.varint()?).map_err(|_| corrupt())?;
        if shared > prev.1 - prev.0 {
            return Err(corrupt());
        }
        let start = raw.len();
        raw.extend_from_within(prev.0..prev.0 + shared);
        raw.extend_from_slice(r.take(len)?);
        prev = (start, raw.len());
        spans.push(prev);
    }
    if !r.is_done() {
        return Err(corrupt());
    }
    Ok(())
}

/// The value stored for chunk `chunk` of `text_by_id`, its checksum verified (`seal`: the
/// base file's).
pub(crate) fn chunk_bytes(seal: Seal, chunk: u32, stored: &[u8]) -> Result<Payload<'_>, Damage> {
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
            let mut texts = TextChunk::parse(chunk_bytes(seal, chunk, v.value())?)?;
            let slot = (id & ((1 << TEXT_CHUNK_BITS) - 1)) as usize;
            Ok(Some(texts.text(slot)?.to_owned()))
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
        let mut texts = TextChunk::parse(chunk_bytes(seal, chunk, v.value())?)?;
        while i < ids.len() && known(ids[i]) {
            let slot = (ids[i] & ((1 << TEXT_CHUNK_BITS) - 1)) as usize;
            out.push(Some(texts.text(slot)?.to_owned()));
            i += 1;
        }
    }
    Ok(out)
}

/// The id of `text`: the one its hash names when `holds` says that id's text is `text`,
/// else the one `collisions` has for it, if any.
pub(crate) fn find_by_hash(
    by_hash: &impl ReadableTable<u64, u32>,
    collisions: &impl ReadableTable<&'static str, u32>,
    text: &str,
    holds: impl FnOnce(u32) -> Result<bool>,
) -> Result<Option<u32>> {
    let named = by_hash.get(text_hash(text))?.map(|v| v.value());
    confirm(named, collisions, text, holds)
}

/// The id of `text`, given the id its hash `named` in `id_by_text`: that one when `holds`
/// says its text is `text`, else the one `collisions` has for it, if any.
fn confirm(
    named: Option<u32>,
    collisions: &impl ReadableTable<&'static str, u32>,
    text: &str,
    holds: impl FnOnce(u32) -> Result<bool>,
) -> Result<Option<u32>> {
    let Some(id) = named else {
        return Ok(None);
    };
    if holds(id)? {
        return Ok(Some(id));
    }
    Ok(collisions.get(text)?.map(|v| v.value()))
}

/// Chunks a [`ChunkCache`] keeps decoded at most (64k texts), before it starts afresh.
const CACHED_CHUNKS: usize = 256;

/// Stored texts found by their text, each dictionary chunk read, verified and decoded once
/// rather than once a text: a batch names its texts in about the order they were numbered
/// (a nodes file after its edges), and a check reads them in that order, so a text's chunk
/// is mostly the last one read. Holds up to [`CACHED_CHUNKS`] chunks, then starts afresh.
///
/// A batch that looks up many texts reads `id_by_text` once into a [`HashIndex`] and finds
/// ids there ([`LOAD_SHARE`]).
#[derive(Default)]
pub(crate) struct ChunkCache {
    chunks: rustc_hash::FxHashMap<u32, Vec<String>>,
    /// `id_by_text` in memory, once loaded.
    index: Option<HashIndex>,
    /// Lookups so far.
    lookups: u64,
}

/// A batch loads `id_by_text` into memory once its lookups pass the dictionary's texts
/// divided by this (and [`MIN_LOAD_LOOKUPS`]): a lookup in redb's tree costs about what
/// reading 10 to 15 of its entries in key order does, and a large batch looks up a text
/// of every fact (a second batch of 2M attributes into a 10M-edge code graph: a third of
/// its reading went to the tree's pages).
const LOAD_SHARE: u64 = 8;

/// A batch of fewer lookups never loads `id_by_text`.
const MIN_LOAD_LOOKUPS: u64 = 4096;

/// `id_by_text` read into memory (12 bytes a text): its hashes ascending, each with its id,
/// and where each value of a hash's top 16 bits starts, so that a lookup searches about
/// texts / 65,536 hashes.
struct HashIndex {
    hashes: Vec<u64>,
    ids: Vec<u32>,
    /// `starts[b]`: the first hash whose top 16 bits are at least `b` (65,537 entries).
    starts: Vec<u32>,
}

impl HashIndex {
    /// Reads the whole table, in key order.
    fn load(by_hash: &impl ReadableTable<u64, u32>) -> Result<HashIndex> {
        let n = usize::try_from(by_hash.len()?).unwrap_or(0);
        let (mut hashes, mut ids) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for entry in by_hash.range::<u64>(..)? {
            let (k, v) = entry?;
            hashes.push(k.value());
            ids.push(v.value());
        }
        HashIndex::from_sorted(hashes, ids).ok_or_else(|| corrupt().into())
    }

    /// The index of `hashes` (ascending, distinct) and their `ids`; `None` when they are
    /// not ascending or too many.
    fn from_sorted(hashes: Vec<u64>, ids: Vec<u32>) -> Option<HashIndex> {
        if hashes.len() != ids.len()
            || hashes.len() > u32::MAX as usize
            || hashes.windows(2).any(|w| w[0] >= w[1])
        {
            return None;
        }
        let mut starts = Vec::with_capacity(65_537);
        let mut at = 0usize;
        for b in 0..=65_536u64 {
            while at < hashes.len() && hashes[at] >> 48 < b {
                at += 1;
            }
            starts.push(at as u32);
        }
        Some(HashIndex {
            hashes,
            ids,
            starts,
        })
    }

    /// The id stored for `hash`, if any. (Starting the search where `hash` would lie if the
    /// run's hashes were even, instead of halving it, gained 3% of a second batch's reading
    /// at 8.2M texts: left out.)
    fn get(&self, hash: u64) -> Option<u32> {
        let b = (hash >> 48) as usize;
        let (from, to) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        let run = self.hashes.get(from..to)?;
        run.binary_search(&hash).ok().map(|i| self.ids[from + i])
    }
}

impl ChunkCache {
    /// The id of `text`, if the dictionary has it.
    pub(crate) fn find_text(
        &mut self,
        by_hash: &impl ReadableTable<u64, u32>,
        collisions: &impl ReadableTable<&'static str, u32>,
        by_id: &impl ReadableTable<u32, &'static [u8]>,
        seal: Seal,
        count: u32,
        text: &str,
    ) -> Result<Option<u32>> {
        self.lookups += 1;
        if self.index.is_none()
            && self.lookups >= MIN_LOAD_LOOKUPS
            && self.lookups >= u64::from(count) / LOAD_SHARE
        {
            self.index = Some(HashIndex::load(by_hash)?);
        }
        let hash = text_hash(text);
        let named = match &self.index {
            Some(index) => index.get(hash),
            None => by_hash.get(hash)?.map(|v| v.value()),
        };
        confirm(named, collisions, text, |id| {
            self.holds(by_id, seal, count, id, text)
        })
    }

    /// Whether the stored text with id `id` is `text`.
    fn holds(
        &mut self,
        by_id: &impl ReadableTable<u32, &'static [u8]>,
        seal: Seal,
        count: u32,
        id: u32,
        text: &str,
    ) -> Result<bool> {
        if id == 0 || id > count {
            return Ok(false);
        }
        let chunk = id >> TEXT_CHUNK_BITS;
        if !self.chunks.contains_key(&chunk) {
            let Some(v) = by_id.get(chunk)? else {
                return Err(corrupt().into());
            };
            let texts = decode_text_chunk(chunk_bytes(seal, chunk, v.value())?)?;
            if self.chunks.len() >= CACHED_CHUNKS {
                self.chunks.clear();
            }
            self.chunks.insert(chunk, texts);
        }
        let slot = (id & ((1 << TEXT_CHUNK_BITS) - 1)) as usize;
        match self.chunks.get(&chunk).and_then(|t| t.get(slot)) {
            Some(t) => Ok(t == text),
            None => Err(corrupt().into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dictionary's ids found through `id_by_text` in memory are those found through the
    /// table: every text, texts it lacks, a text whose hash another took first (found in
    /// `text_collisions`), and hashes at the ends of the top-16-bit ranges.
    #[test]
    fn texts_found_in_the_loaded_index_are_those_found_in_the_table() {
        use redb::{ReadableDatabase, TableDefinition};
        let by_hash_def: TableDefinition<'_, u64, u32> = TableDefinition::new("by_hash");
        let coll_def: TableDefinition<'_, &str, u32> = TableDefinition::new("collisions");
        let by_id_def: TableDefinition<'_, u32, &[u8]> = TableDefinition::new("by_id");
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("d.redb")).unwrap();
        let seal = Seal::newest();
        // Ids 1 to 3000; 3001 is "impostor", whose hash names id 5 (as if "t5" had taken
        // it first), so it is kept in the collisions table.
        let mut texts: Vec<String> = vec![String::new()];
        texts.extend((1..=3000).map(|i| format!("t{i}")));
        texts.push("impostor".to_owned());
        let txn = db.begin_write().unwrap();
        {
            let mut by_hash = txn.open_table(by_hash_def).unwrap();
            let mut by_id = txn.open_table(by_id_def).unwrap();
            let mut coll = txn.open_table(coll_def).unwrap();
            for (c, chunk) in texts.chunks(1 << TEXT_CHUNK_BITS).enumerate() {
                let bytes = encode_text_chunk(seal.codec, chunk.iter().map(String::as_str));
                let c = c as u32;
                by_id
                    .insert(c, seal_chunk(seal, c, bytes).as_slice())
                    .unwrap();
            }
            for (id, t) in texts.iter().enumerate().skip(1).take(3000) {
                by_hash.insert(text_hash(t), id as u32).unwrap();
            }
            by_hash.insert(text_hash("impostor"), 5).unwrap();
            coll.insert("impostor", 3001).unwrap();
            // Hashes at both ends of the first and the last top-16-bit ranges.
            for h in [0, 0xFFFF_FFFF_FFFF, 0xFFFF_0000_0000_0000, u64::MAX] {
                by_hash.insert(h, 7).unwrap();
            }
        }
        txn.commit().unwrap();
        let txn = db.begin_read().unwrap();
        let by_hash = txn.open_table(by_hash_def).unwrap();
        let coll = txn.open_table(coll_def).unwrap();
        let by_id = txn.open_table(by_id_def).unwrap();
        let index = HashIndex::load(&by_hash).unwrap();
        for h in [0, 0xFFFF_FFFF_FFFF, 0xFFFF_0000_0000_0000, u64::MAX] {
            assert_eq!(index.get(h), Some(7), "{h:x}");
        }
        assert_eq!(index.get(1), None);
        let mut table = ChunkCache::default();
        let mut loaded = ChunkCache {
            index: Some(index),
            ..ChunkCache::default()
        };
        let mut queries: Vec<String> = texts[1..].to_vec();
        queries.extend(["absent".to_owned(), String::new(), "t30001".to_owned()]);
        for q in &queries {
            let a = table
                .find_text(&by_hash, &coll, &by_id, seal, 3001, q)
                .unwrap();
            let b = loaded
                .find_text(&by_hash, &coll, &by_id, seal, 3001, q)
                .unwrap();
            assert_eq!(a, b, "{q:?}");
        }
        let find = |c: &mut ChunkCache, q: &str| {
            c.find_text(&by_hash, &coll, &by_id, seal, 3001, q).unwrap()
        };
        assert_eq!(find(&mut loaded, "t1234"), Some(1234));
        assert_eq!(find(&mut loaded, "impostor"), Some(3001));
        assert_eq!(find(&mut loaded, "absent"), None);
        // 3,004 lookups without the index: under the 4,096 that load it.
        assert!(table.index.is_none());
    }

    /// The index finds each hash it holds and no other: spread hashes, runs crowded into a
    /// few top-16-bit values, and hashes at the runs' ends.
    #[test]
    fn the_index_finds_each_hash_it_holds_and_no_other() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut hashes: Vec<u64> = (0..20_000).map(|_| next()).collect();
        // Crowded: 3,000 hashes under one top-16-bit value, bunched at its low end.
        hashes.extend((0..3_000u64).map(|i| 0x1234_0000_0000_0000 | (i * 7)));
        hashes.extend((0..100u64).map(|i| 0xFFFF_FFFF_FFFF_FF00 | i));
        hashes.sort_unstable();
        hashes.dedup();
        let ids: Vec<u32> = (0..hashes.len() as u32).map(|i| i * 3 + 1).collect();
        let index = HashIndex::from_sorted(hashes.clone(), ids).unwrap();
        for (i, &h) in hashes.iter().enumerate() {
            assert_eq!(index.get(h), Some(i as u32 * 3 + 1), "{h:x}");
        }
        let absent = (0..20_000)
            .map(|_| next())
            .chain((0..3_000u64).map(|i| 0x1234_0000_0000_0000 | (i * 7 + 3)))
            .chain([
                0,
                0x1234_0000_0000_0000 - 1,
                0x1234_FFFF_FFFF_FFFF,
                u64::MAX - 0x100,
            ]);
        for h in absent {
            assert_eq!(
                index.get(h).is_some(),
                hashes.binary_search(&h).is_ok(),
                "{h:x}"
            );
        }
        assert!(HashIndex::from_sorted(vec![2, 1], vec![1, 2]).is_none());
    }

    #[test]
    fn chunks_round_trip() {
        let texts = ["", "app", "ünïcode", "x\ty"];
        let bytes = encode_text_chunk(Codec::Plain, texts.iter().copied());
        assert_eq!(decode_text_chunk(&bytes).unwrap(), texts);
        let mut chunk = TextChunk::parse(&bytes).unwrap();
        assert_eq!(chunk.text(2).unwrap(), "ünïcode");
        assert!(chunk.text(4).is_err());
        for cut in 0..bytes.len() {
            let _ = decode_text_chunk(&bytes[..cut]);
        }
    }

    #[test]
    fn compact_chunks_round_trip_and_refuse_damage() {
        let texts: Vec<String> = (0..256)
            .map(|i| format!("sym:net_{}/src/plan/router_{i}.rs#update_file_{i}", i / 40))
            .collect();
        let bytes = encode_text_chunk(Codec::Compact, texts.iter().map(String::as_str));
        let plain = encode_text_chunk(Codec::Plain, texts.iter().map(String::as_str));
        assert!(
            bytes.len() * 2 < plain.len(),
            "{} vs {}",
            bytes.len(),
            plain.len()
        );
        let p = Payload::new(Codec::Compact, &bytes);
        assert_eq!(decode_text_chunk(p).unwrap(), texts);
        let mut chunk = TextChunk::parse(p).unwrap();
        for i in [200, 3, 255, 31, 32, 0] {
            assert_eq!(chunk.text(i).unwrap(), texts[i]);
        }
        assert!(chunk.text(256).is_err());
        for cut in 0..bytes.len() {
            assert!(decode_text_chunk(Payload::new(Codec::Compact, &bytes[..cut])).is_err());
        }
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x20;
            // A flip is an error or other texts; never a panic.
            let _ = decode_text_chunk(Payload::new(Codec::Compact, &bad));
        }
    }

    #[test]
    fn the_hash_is_stable() {
        assert_eq!(text_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(text_hash("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
