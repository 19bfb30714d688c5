//! The keys a persistent index files each lowercase text under: its segments (split at
//! `/ # : .` and spaces), its first segment, its words and its fuzzy candidate, and the
//! [`Postings`] (sorted text numbers) each key points to, encoded as delta varints or,
//! for long lists, as a roaring bitmap.

use roaring::RoaringBitmap;

use super::words;

/// Whether `b` ends a segment: `/ # : .`, a space or a control byte. A query holding
/// none of these lies, wherever it occurs in a text, inside one of the text's segments.
pub(super) fn is_segment_break(b: u8) -> bool {
    matches!(b, b'/' | b'#' | b':' | b'.' | 0x7f) || b <= b' '
}

/// The key filed (among the words, which never start with byte 1) for the texts holding the
/// segment break `b`: `\x01` then `b`, or `\x01\x02` for any control byte.
pub(super) fn break_key(b: u8) -> [u8; 2] {
    match b {
        b'/' | b'#' | b':' | b'.' | b' ' => [1, b],
        _ => [1, 2],
    }
}

/// The distinct [`break_key`]s of the segment breaks `lower` holds.
pub(super) fn break_keys(lower: &str) -> Vec<[u8; 2]> {
    let mut keys: Vec<[u8; 2]> = lower
        .bytes()
        .filter(|&b| is_segment_break(b))
        .map(break_key)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The segments of a lowercase text, in order (empty ones too).
pub(super) fn segments(lower: &str) -> impl Iterator<Item = &str> {
    lower.split(|c: char| c.is_ascii() && is_segment_break(c as u8))
}

/// The fuzzy candidate of a lowercase text: its last part (after its last `/`, `#` or
/// `:`), or the whole text when that is empty.
pub(super) fn cand(lower: &str) -> &str {
    let tail = lower.rfind(['/', '#', ':']).map_or(0, |i| i + 1);
    if tail < lower.len() {
        &lower[tail..]
    } else {
        lower
    }
}

/// The distinct lowercase words of an ASCII text, as [`words`] splits it.
pub(super) fn lower_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = words(text).map(str::to_ascii_lowercase).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Lists of text numbers at most this long are stored as delta varints, longer ones as
/// roaring bitmaps.
const SHORT_LIST: usize = 32;

/// The encodings of a posting list: its first byte.
const TAG_VARINT: u8 = 0;
const TAG_ROARING: u8 = 1;

/// Appends the encoding of the ascending `list` to `out`.
pub(super) fn encode_postings(list: &[u32], out: &mut Vec<u8>) {
    if list.len() <= SHORT_LIST {
        out.push(TAG_VARINT);
        varint(list.len() as u64, out);
        let mut prev = 0u32;
        for &x in list {
            varint(u64::from(x - prev), out);
            prev = x;
        }
        return;
    }
    out.push(TAG_ROARING);
    let bitmap = RoaringBitmap::from_sorted_iter(list.iter().copied()).unwrap_or_default();
    let mut bytes = Vec::with_capacity(bitmap.serialized_size());
    // Writing to a Vec cannot fail.
    let _ = bitmap.serialize_into(&mut bytes);
    varint(bytes.len() as u64, out);
    out.extend_from_slice(&bytes);
}

/// The posting list encoded at the start of `bytes`; `None` when it is malformed.
pub(super) fn decode_postings(bytes: &[u8]) -> Option<RoaringBitmap> {
    let (&tag, rest) = bytes.split_first()?;
    let mut pos = 0;
    let n = read_varint(rest, &mut pos)?;
    match tag {
        TAG_VARINT => {
            let mut prev = 0u32;
            let mut list = Vec::with_capacity(usize::try_from(n).ok()?.min(SHORT_LIST));
            for _ in 0..n {
                let d = u32::try_from(read_varint(rest, &mut pos)?).ok()?;
                prev = prev.checked_add(d)?;
                list.push(prev);
            }
            RoaringBitmap::from_sorted_iter(list).ok()
        }
        TAG_ROARING => {
            let end = pos.checked_add(usize::try_from(n).ok()?)?;
            RoaringBitmap::deserialize_from(rest.get(pos..end)?).ok()
        }
        _ => None,
    }
}

fn varint(mut x: u64, out: &mut Vec<u8>) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

fn read_varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut x = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        x |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(x);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn postings_round_trip_in_both_encodings() {
        for list in [
            vec![],
            vec![0],
            vec![3, 9, 4_000_000_000],
            (0..1000).map(|i| i * 7).collect::<Vec<u32>>(),
        ] {
            let mut bytes = Vec::new();
            encode_postings(&list, &mut bytes);
            let got: Vec<u32> = decode_postings(&bytes).unwrap().iter().collect();
            assert_eq!(got, list);
        }
        assert!(decode_postings(&[7, 1, 1]).is_none());
        assert!(decode_postings(&[TAG_VARINT, 3, 1]).is_none());
    }

    #[test]
    fn segments_and_candidates() {
        let s: Vec<&str> = segments("sym:src/cli.rs#parse_args").collect();
        assert_eq!(s, ["sym", "src", "cli", "rs", "parse_args"]);
        assert_eq!(cand("sym:src/cli.rs#parse_args"), "parse_args");
        assert_eq!(cand("a/"), "a/");
        assert_eq!(lower_words("parseArgs_parse"), ["args", "parse"]);
    }
}
