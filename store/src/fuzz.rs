//! Fuzz targets: what the store reads from bytes it did not write (dumps, SCIP indexes) or
//! may find damaged (column blocks, postings, bitmaps), each a function of arbitrary bytes
//! that must answer or refuse, never panic, hang or grow without bound.
//!
//! Both runners call these: the cargo-fuzz targets of `fixtures/fuzz` on nightly and the
//! bounded property runs of `store/tests/fuzz.rs` on stable (see `docs/testing.md`).

use crate::dump::{self, DumpSpec, Fact, FactSink, Format};
use crate::error::IngestError;
use crate::layout::{Codec, Payload};
use crate::{column, index, intern};
use roaring::RoaringBitmap;

/// The formats [`dump`] reads, by the first byte of its input.
pub const DUMP_FORMATS: [Format; 5] = [
    Format::Edges,
    Format::Attrs,
    Format::Nodes,
    Format::Facts,
    Format::Jsonl,
];

/// A sink that checks what each fact holds and keeps nothing.
struct Checking {
    facts: u64,
}

impl FactSink for Checking {
    fn fact(&mut self, fact: &Fact<'_>) -> Result<(), IngestError> {
        assert_eq!(
            fact.fields.len(),
            fact.columns.len(),
            "relation {}",
            fact.relation
        );
        assert!(!fact.relation.is_empty());
        self.facts += 1;
        Ok(())
    }

    fn declare(&mut self, fact: &Fact<'_>) -> Result<(), IngestError> {
        assert!(!fact.relation.is_empty());
        Ok(())
    }
}

/// Reads `data` as a dump of `format` (a `.facts` file of relation `r`, with a unit
/// when `unit`): the facts read, or the error that stopped the read.
pub fn read_dump(format: Format, data: &[u8], unit: bool) -> Result<u64, IngestError> {
    let spec = DumpSpec {
        label: "fuzz".to_owned(),
        format,
        relation: (format == Format::Facts).then(|| "r".to_owned()),
        unit: unit.then(|| "u".to_owned()),
        checkout: None,
    };
    let mut sink = Checking { facts: 0 };
    let n = dump::read_limited(data, &spec, &mut sink, 1 << 12)?;
    assert_eq!(n, sink.facts);
    Ok(n)
}

/// The dump readers: the first byte picks the format (of [`DUMP_FORMATS`]) and whether
/// the file names a unit, the rest is the file.
pub fn dump(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let format = DUMP_FORMATS[usize::from(pick) % DUMP_FORMATS.len()];
    let _ = read_dump(format, rest, pick & 0x80 != 0);
}

/// The SCIP reader: `data` as an `index.scip`, with a repository given or not by the
/// parity of its length.
pub fn scip(data: &[u8]) {
    let _ = read_dump(Format::Scip, data, data.len().is_multiple_of(2));
}

/// The block, bitmap and dictionary decoders, in both encodings ([`Codec`]): `data` as a
/// column block (and as one archived and sealed), a posting, a row set, a postings chunk
/// and a dictionary chunk. Whatever decodes as a block encodes back to the same terms, and
/// reads the same row by row.
pub fn blocks(data: &[u8]) {
    for codec in [Codec::Plain, Codec::Compact] {
        let p = Payload::new(codec, data);
        if let Ok(view) = column::view(p) {
            // Rows read one by one never panic; a block that decodes whole reads the same.
            for i in 0..=view.len() {
                let _ = view.get(i);
            }
            if let Ok(terms) = view.to_vec() {
                assert_eq!(terms.len(), view.len());
                for (i, &t) in terms.iter().enumerate() {
                    assert_eq!(view.get(i), Some(t));
                }
                assert_eq!(view.get(terms.len()), None);
                if let Ok(bytes) = column::encode(codec, &terms) {
                    let again = column::decode(Payload::new(codec, &bytes));
                    assert_eq!(again.ok().as_ref(), Some(&terms));
                }
            }
        }
        let _ = index::decode(p);
        let _ = index::decode_posting(p);
        if let Ok(chunk) = index::ChunkView::parse(p) {
            for (low, posting) in chunk.iter() {
                assert_eq!(chunk.get(low), Some(posting));
                let _ = index::decode_posting(posting);
            }
        }
        let _ = intern::decode_text_chunk(p);
    }
    let _ = column::from_stored((1, 0, 0), data);
}

/// Valid encodings, the seeds of [`blocks`]' runs, plain (format versions 1 and 2): a column block, raw and bitmap
/// postings, a row bitmap and a chunk; then compact (version 3): blocks of both forms,
/// postings of each form, a chunk and a dictionary chunk.
pub fn block_seeds() -> Vec<Vec<u8>> {
    let mut small: RoaringBitmap = [1, 5, 9].into_iter().collect();
    let mut large: RoaringBitmap = (0..5000).step_by(3).collect();
    let mut runs: RoaringBitmap = (10..40).chain(90..95).collect();
    let (mut raw, mut rich) = (Vec::new(), Vec::new());
    index::encode_posting(Codec::Plain, &mut small, &mut raw);
    index::encode_posting(Codec::Plain, &mut large, &mut rich);
    let mut a = small.clone();
    let mut b = large.clone();
    let (mut c, mut d) = (small.clone(), runs.clone());
    let texts = ["file:a/b.rs", "sym:a/b.rs#f", "", "ünï"];
    vec![
        column::encode(Codec::Plain, &[3, 1, 4, 1, 5, 0x8000_0009]).unwrap_or_default(),
        column::stored((1, 0, 0), &[7, 7, 7]).unwrap_or_default(),
        raw,
        rich,
        index::encode(Codec::Plain, &mut large),
        index::encode_chunk(Codec::Plain, [(2u8, &mut a), (7u8, &mut b)].into_iter()),
        column::encode(Codec::Compact, &[3, 1, 4, 1, 5, 0x8000_0009]).unwrap_or_default(),
        column::encode(Codec::Compact, &[7, 7, 7, 7, 9, 9, 9, 9, 9, 2]).unwrap_or_default(),
        index::encode(Codec::Compact, &mut small),
        index::encode(Codec::Compact, &mut runs),
        index::encode(Codec::Compact, &mut large),
        index::encode_chunk(Codec::Compact, [(2u8, &mut c), (7u8, &mut d)].into_iter()),
        intern::encode_text_chunk(Codec::Compact, texts.into_iter()),
    ]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_block_seeds_decode() {
        let seeds = block_seeds();
        assert_eq!(column::decode(&seeds[0]).unwrap().len(), 6);
        assert!(index::decode_posting(&seeds[3]).is_ok());
        assert_eq!(index::ChunkView::parse(&seeds[5]).unwrap().len(), 2);
        let compact = |i: usize| Payload::new(Codec::Compact, &seeds[i]);
        assert_eq!(column::decode(compact(6)).unwrap().len(), 6);
        assert_eq!(column::decode(compact(7)).unwrap().len(), 10);
        assert_eq!(index::decode(compact(8)).unwrap().len(), 3);
        assert_eq!(index::decode(compact(9)).unwrap().len(), 35);
        assert_eq!(index::decode(compact(10)).unwrap().len(), 1667);
        assert_eq!(index::ChunkView::parse(compact(11)).unwrap().len(), 2);
        assert_eq!(intern::decode_text_chunk(compact(12)).unwrap().len(), 4);
    }
}
