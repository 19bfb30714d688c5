//! Strings that are not UTF-8, repaired: real indexers write them (scip-typescript 0.4.0
//! writes JavaScript strings as WTF-8, so a lone UTF-16 surrogate in a doc comment comes out
//! as bytes `ED B0 80`), and a strict protobuf decoder refuses the whole message for one.
//!
//! [`repair`] rewrites a message's bytes with every string field, at any depth, made valid
//! UTF-8 (a WTF-8 surrogate's three bytes replaced by one U+FFFD, any other invalid sequence
//! as [`String::from_utf8_lossy`] replaces it), the
//! message's schema read from the `scip` crate's descriptors, so a string is told from a
//! nested message or packed numbers by its field, never guessed. It runs only after a decode
//! failed, so an index of valid strings pays nothing for it.

use protobuf::reflect::{MessageDescriptor, RuntimeFieldType, RuntimeType};

use super::wire::{FIXED32, FIXED64, LEN, VARINT, slice_varint};

/// Messages nested deeper than this are left as they are (the decode error then stands):
/// SCIP nests a few levels (a document's symbol's signature is a document), so this is far
/// past any real index and keeps a hostile one from exhausting the stack.
const MAX_DEPTH: usize = 32;

/// `bytes` (a message of type `md`) with every string field made valid UTF-8, and the number
/// of strings repaired; `None` when the bytes are not a well-framed message or none of its
/// strings needed repair (the caller's decode error then stands as it was).
pub(crate) fn repair(bytes: &[u8], md: &MessageDescriptor) -> Option<(Vec<u8>, u64)> {
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let mut repaired = 0;
    message(bytes, md, &mut out, &mut repaired, 0)?;
    (repaired > 0).then_some((out, repaired))
}

/// `bytes` as UTF-8: each WTF-8 encoded surrogate (`ED A0..BF 80..BF`) becomes one U+FFFD,
/// as the UTF-16 code unit it stood for would, and any other invalid sequence is replaced as
/// [`String::from_utf8_lossy`] replaces it.
fn lossy(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                // `good` was just checked to be UTF-8.
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                out.push('\u{FFFD}');
                let skip = match bad {
                    [0xED, 0xA0..=0xBF, 0x80..=0xBF, ..] => 3,
                    _ => e.error_len().unwrap_or(bad.len()),
                };
                rest = &bad[skip..];
            }
        }
    }
    out
}

/// Copies the message `bytes` of type `md` into `out`, repairing its strings.
fn message(
    bytes: &[u8],
    md: &MessageDescriptor,
    out: &mut Vec<u8>,
    repaired: &mut u64,
    depth: usize,
) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut at = 0;
    while at < bytes.len() {
        let field_start = at;
        let (tag, n) = slice_varint(&bytes[at..])?;
        at += n;
        let wire_type = (tag & 7) as u8;
        match wire_type {
            VARINT => {
                let (_, n) = slice_varint(&bytes[at..])?;
                at += n;
            }
            FIXED64 => at = at.checked_add(8).filter(|&e| e <= bytes.len())?,
            FIXED32 => at = at.checked_add(4).filter(|&e| e <= bytes.len())?,
            LEN => {
                let (len, n) = slice_varint(&bytes[at..])?;
                let start = at + n;
                let end = start
                    .checked_add(usize::try_from(len).ok()?)
                    .filter(|&e| e <= bytes.len())?;
                let payload = &bytes[start..end];
                at = end;
                let number = u32::try_from(tag >> 3).ok()?;
                match md.field_by_number(number).map(|f| f.runtime_field_type()) {
                    Some(
                        RuntimeFieldType::Singular(RuntimeType::String)
                        | RuntimeFieldType::Repeated(RuntimeType::String),
                    ) if std::str::from_utf8(payload).is_err() => {
                        let fixed = lossy(payload);
                        *repaired += 1;
                        put_len(out, tag, fixed.as_bytes());
                        continue;
                    }
                    Some(
                        RuntimeFieldType::Singular(RuntimeType::Message(inner))
                        | RuntimeFieldType::Repeated(RuntimeType::Message(inner)),
                    ) => {
                        let mut nested = Vec::with_capacity(payload.len());
                        message(payload, &inner, &mut nested, repaired, depth + 1)?;
                        put_len(out, tag, &nested);
                        continue;
                    }
                    _ => {}
                }
            }
            _ => return None,
        }
        out.extend_from_slice(&bytes[field_start..at]);
    }
    Some(())
}

/// Writes a length-delimited field: its tag, the payload's length, the payload.
fn put_len(out: &mut Vec<u8>, tag: u64, payload: &[u8]) {
    put_varint(out, tag);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use protobuf::{Message, MessageFull};
    use scip::types::{Document, Occurrence, SymbolInformation};

    use super::*;

    /// A document whose symbol's documentation holds `ED B0 80` (a lone surrogate, WTF-8),
    /// written by hand: the `scip` crate cannot write a string that is not UTF-8.
    fn broken() -> Vec<u8> {
        let mut info = SymbolInformation::new();
        info.symbol = "scip-typescript npm p 1 a/f().".into();
        info.documentation = vec!["MARK".into()];
        info.display_name = "f".into();
        let mut occ = Occurrence::new();
        occ.symbol = info.symbol.clone();
        occ.range = vec![1, 2, 3];
        let mut doc = Document::new();
        doc.relative_path = "a.ts".into();
        doc.symbols.push(info);
        doc.occurrences.push(occ);
        let bytes = doc.write_to_bytes().unwrap_or_default();
        // "MARK" and "\xED\xB0\x80!" have the same length, 4: the framing stays right.
        let at = bytes.windows(4).position(|w| w == b"MARK").unwrap_or(0);
        let mut out = bytes;
        out[at..at + 4].copy_from_slice(b"\xED\xB0\x80!");
        out
    }

    #[test]
    fn a_lone_surrogate_in_a_nested_string_is_replaced() {
        let bytes = broken();
        assert!(
            Document::parse_from_bytes(&bytes).is_err(),
            "strict decode fails"
        );
        let (fixed, n) = repair(&bytes, &Document::descriptor()).expect("repaired");
        assert_eq!(n, 1);
        let doc = Document::parse_from_bytes(&fixed).expect("decodes");
        assert_eq!(doc.relative_path, "a.ts");
        assert_eq!(doc.occurrences[0].range, vec![1, 2, 3]);
        assert_eq!(doc.symbols[0].display_name, "f");
        assert_eq!(doc.symbols[0].documentation, vec!["\u{FFFD}!".to_owned()]);
    }

    #[test]
    fn valid_or_malformed_bytes_are_left_alone() {
        let mut doc = Document::new();
        doc.relative_path = "ok.py".into();
        let ok = doc.write_to_bytes().unwrap_or_default();
        assert_eq!(repair(&ok, &Document::descriptor()), None);
        assert_eq!(repair(&[0x0a, 0x7f], &Document::descriptor()), None);
        assert_eq!(repair(&[0x0b], &Document::descriptor()), None);
    }
}
