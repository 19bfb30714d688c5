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
