//! Column blocks: up to [`BLOCK_ROWS`] terms of one column.
//!
//! In files of format versions 1 and 2 ([`Codec::Plain`]) a block is an rkyv-archived
//! `Vec<u32>`. The workspace builds rkyv with its `unaligned` and `little_endian` features, so
//! an archived block can be read in place from the unaligned byte slices redb hands back, and
//! checked access validates it before use.
//!
//! From format version 3 ([`Codec::Compact`]) a block is bit-packed, in whichever of two
//! forms is smaller, and read in place too:
//!
//! ```text
//! n: u16 (rows) | form: u8
//! form 0, frame of reference: base: u32 | width: u8 | n × (term - base), width bits each
//! form 1, runs:  r: u16 (1 ..= n) | base: u32 | width: u8 | r × (term - base), width bits
//!                | (r - 1) × the first row of runs 2 ..= r, ascending, width(n - 1) bits
//! ```
//!
//! A run is a stretch of rows holding the same term (a clustered column's runs are long).
//!
//! Format version 4 ([`Codec::Compact4`]) adds a third form, for terms that grow along the
//! rows (a sorted column's: each row's term is its predecessor's or a little more):
//!
//! ```text
//! form 2, on a line: base: u32 | slope: u32 | width: u8
//!                  | n × (term - base - (i × slope >> 16)), width bits each, wrapping
//! ```
//!
//! `slope` is the line's rise per row in 16.16 fixed point; the term of row `i` is
//! `base + (i × slope >> 16) + residual(i)`, all modulo 2^32, still a shift and a mask.

use rkyv::rancor;
use rkyv::vec::ArchivedVec;

use crate::bits::{self, Reader};
use crate::blocks::PART_BITS;
use crate::error::Damage;
use crate::layout::{BLOCK_ROWS, Codec, Payload};
use crate::seal::{Key, Seal, Table};

/// The archived form of a plain block, read in place from stored bytes.
pub type ArchivedBlock = ArchivedVec<rkyv::Archived<u32>>;

/// Encodes a block of terms in `codec`.
pub fn encode(codec: Codec, terms: &[u32]) -> Result<Vec<u8>, Damage> {
    match codec {
        Codec::Plain => {
            let v: Vec<u32> = terms.to_vec();
            let bytes = rkyv::to_bytes::<rancor::Error>(&v)
                .map_err(|e| Damage::Format(format!("cannot archive a column block: {e}")))?;
            Ok(bytes.into_vec())
        }
        Codec::Compact => encode_compact(terms, false),
        Codec::Compact4 => encode_compact(terms, true),
    }
}

/// The line through a block's first and last terms, as (slope, base, residual width), when
/// they ascend by less than 2^16 a row.
fn line_of(terms: &[u32]) -> Option<(u32, u32, u8)> {
    let (&first, &last) = (terms.first()?, terms.last()?);
    if terms.len() < 2 || last < first {
        return None;
    }
    let slope = u32::try_from((u64::from(last - first) << 16) / (terms.len() as u64 - 1)).ok()?;
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for (i, &t) in terms.iter().enumerate() {
        let r = i64::from(t) - i64::from(on_line(slope, i));
        lo = lo.min(r);
        hi = hi.max(r);
    }
    let span = u32::try_from(hi - lo).ok()?;
    // The base is the smallest residual, modulo 2^32 (it may be below 0).
    Some((slope, lo as u32, bits::width(span)))
}

/// The rise of a line of slope `slope` (16.16 fixed point) at row `i` of a block.
fn on_line(slope: u32, i: usize) -> u32 {
    ((i as u64 * u64::from(slope)) >> 16) as u32
}

fn encode_compact(terms: &[u32], line: bool) -> Result<Vec<u8>, Damage> {
    let n = u16::try_from(terms.len())
        .ok()
        .filter(|&n| u32::from(n) <= BLOCK_ROWS)
        .ok_or_else(|| Damage::Format(format!("a block of {} rows", terms.len())))?;
    let base = terms.iter().copied().min().unwrap_or(0);
    let max = terms.iter().copied().max().unwrap_or(0);
    let w = bits::width(max - base);
    let starts: Vec<u32> = (1..terms.len())
        .filter(|&i| terms[i] != terms[i - 1])
        .map(|i| i as u32)
        .collect();
    let runs = starts.len() + usize::from(!terms.is_empty());
    let sw = bits::width(u32::from(n).saturating_sub(1));
    let for_len = 8 + bits::packed_len(terms.len(), w);
    let runs_len = 10 + bits::packed_len(runs, w) + bits::packed_len(starts.len(), sw);
    let line = if line { line_of(terms) } else { None }
        .map(|(slope, base, lw)| (slope, base, lw, 12 + bits::packed_len(terms.len(), lw)))
        .filter(|l| l.3 < for_len.min(runs_len));
    let mut out = Vec::with_capacity(for_len.min(runs_len));
    out.extend_from_slice(&n.to_le_bytes());
    if let Some((slope, base, lw, _)) = line {
        out.push(2);
        out.extend_from_slice(&base.to_le_bytes());
        out.extend_from_slice(&slope.to_le_bytes());
        out.push(lw);
        let residuals = terms.iter().enumerate();
        bits::pack(
            &mut out,
            residuals.map(|(i, t)| t.wrapping_sub(base).wrapping_sub(on_line(slope, i))),
            lw,
        );
    } else if runs_len < for_len {
        out.push(1);
        out.extend_from_slice(&(runs as u16).to_le_bytes());
        out.extend_from_slice(&base.to_le_bytes());
        out.push(w);
        let firsts = std::iter::once(0).chain(starts.iter().copied());
        bits::pack(&mut out, firsts.map(|i| terms[i as usize] - base), w);
        bits::pack(&mut out, starts.iter().copied(), sw);
    } else {
        out.push(0);
        out.extend_from_slice(&base.to_le_bytes());
        out.push(w);
        bits::pack(&mut out, terms.iter().map(|t| t - base), w);
    }
    Ok(out)
}

/// The payload of the `blocks` entry `key` of relation `name`, its checksum verified.
pub(crate) fn open<'a>(
    seal: Seal,
    key: (u32, u16, u32),
    stored: &'a [u8],
    name: &str,
) -> Result<Payload<'a>, Damage> {
    seal.open(&Key::column(Table::Blocks, key), stored, || {
        if seal.parted {
            let part = key.2 & ((1 << PART_BITS) - 1);
            let block = key.2 >> PART_BITS;
            format!(
                "relation {name}, column {}: block {block} (part {part})",
                key.1
            )
        } else {
            format!("relation {name}, column {}: block {}", key.1, key.2)
        }
    })
}

/// The value to store for the `blocks` entry `key`.
pub(crate) fn seal(seal: Seal, key: (u32, u16, u32), bytes: Vec<u8>) -> Vec<u8> {
    seal.close(&Key::column(Table::Blocks, key), bytes)
}

/// The value a new database stores for the block `key` (relation, column, block) holding
/// `terms`: the encoding and its checksum (what tests that damage a database write).
pub fn stored(key: (u32, u16, u32), terms: &[u32]) -> Result<Vec<u8>, Damage> {
    let s = Seal::newest();
    Ok(seal(s, key, encode(s.codec, terms)?))
}

/// The terms of the block `key` as a new database stores it (see [`stored`]).
pub fn from_stored(key: (u32, u16, u32), bytes: &[u8]) -> Result<Vec<u32>, Damage> {
    decode(open(Seal::newest(), key, bytes, "?")?)
}

/// Values packed at one width, each plus a base.
#[derive(Clone, Copy)]
pub struct Packed<'a> {
    n: usize,
    base: u32,
    width: u8,
    bytes: &'a [u8],
}

impl Packed<'_> {
    /// Value `i` (`i < n`).
    fn get(&self, i: usize) -> u32 {
        self.base
            .wrapping_add(bits::unpack(self.bytes, self.width, i))
    }
}

/// A block read in place.
pub enum BlockView<'a> {
    /// A plain block's archive.
    Plain(&'a ArchivedBlock),
    /// A compact block, frame of reference: each row's term.
    Frame(Packed<'a>),
    /// A version 4 block on a line: each row's residual from it.
    Line {
        /// Each row's term less its rise on the line.
        residuals: Packed<'a>,
        /// The line's rise per row, 16.16 fixed point.
        slope: u32,
    },
    /// A compact block, runs.
    Runs {
        /// Rows.
        rows: usize,
        /// Each run's term.
        terms: Packed<'a>,
        /// The first row of each run but the first.
        starts: Packed<'a>,
    },
}

impl BlockView<'_> {
    /// How many rows the block holds.
    pub fn len(&self) -> usize {
        match self {
            BlockView::Plain(a) => a.len(),
            BlockView::Frame(p) => p.n,
            BlockView::Line { residuals, .. } => residuals.n,
            BlockView::Runs { rows, .. } => *rows,
        }
    }

    /// The term of row `i` of the block, if it holds that many.
    pub fn get(&self, i: usize) -> Option<u32> {
        match self {
            BlockView::Plain(a) => a.get(i).map(|t| t.to_native()),
            BlockView::Frame(p) => (i < p.n).then(|| p.get(i)),
            BlockView::Line { residuals, slope } => {
                (i < residuals.n).then(|| residuals.get(i).wrapping_add(on_line(*slope, i)))
            }
            BlockView::Runs {
                rows,
                terms,
                starts,
            } => {
                if i >= *rows {
                    return None;
                }
                // The run holding row i: the number of run starts at or before it.
                let (mut lo, mut hi) = (0, starts.n);
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    if starts.get(mid) as usize <= i {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                Some(terms.get(lo))
            }
        }
    }

    /// Every term, in row order; a runs block whose run starts are out of order is damage
    /// (a view checks only what reading one row needs).
    pub fn to_vec(&self) -> Result<Vec<u32>, Damage> {
        let mut out = Vec::new();
        self.append_to(&mut out)?;
        Ok(out)
    }

    /// Appends every term, in row order, to `out` (what [`BlockView::to_vec`] returns).
    pub fn append_to(&self, out: &mut Vec<u32>) -> Result<(), Damage> {
        match self {
            BlockView::Plain(a) => out.extend(a.iter().map(|t| t.to_native())),
            BlockView::Frame(p) => bits::unpack_all(p.bytes, p.width, p.n, p.base, out),
            BlockView::Line {
                residuals: p,
                slope,
            } => {
                let from = out.len();
                bits::unpack_all(p.bytes, p.width, p.n, p.base, out);
                for (i, t) in out[from..].iter_mut().enumerate() {
                    *t = t.wrapping_add(on_line(*slope, i));
                }
            }
            BlockView::Runs {
                rows,
                terms,
                starts,
            } => {
                let from = out.len();
                out.reserve(*rows);
                for r in 0..terms.n {
                    let end = if r < starts.n {
                        starts.get(r) as usize
                    } else {
                        *rows
                    };
                    if end <= out.len() - from || end > *rows {
                        return Err(Damage::Format(
                            "a column block's runs are out of order".to_owned(),
                        ));
                    }
                    out.resize(from + end, terms.get(r));
                }
            }
        }
        Ok(())
    }
}

/// Checks and views stored bytes as a block.
pub fn view<'a>(payload: impl Into<Payload<'a>>) -> Result<BlockView<'a>, Damage> {
    let payload = payload.into();
    match payload.codec {
        Codec::Plain => rkyv::access::<ArchivedBlock, rancor::Error>(payload.bytes)
            .map(BlockView::Plain)
            .map_err(|e| Damage::Format(format!("a column block does not validate: {e}"))),
        Codec::Compact => view_compact(payload.bytes, false),
        Codec::Compact4 => view_compact(payload.bytes, true),
    }
}

/// Views a compact block; `line` says whether the file's version has the form on a line.
fn view_compact(bytes: &[u8], line: bool) -> Result<BlockView<'_>, Damage> {
    let mut r = Reader::new(bytes, "a column block");
    let n = usize::from(r.u16()?);
    if n > BLOCK_ROWS as usize {
        return Err(r.bad());
    }
    let form = r.u8()?;
    let view = match form {
        0 => {
            let base = r.u32()?;
            let width = r.u8()?;
            if width > 32 {
                return Err(r.bad());
            }
            let bytes = r.take(bits::packed_len(n, width))?;
            BlockView::Frame(Packed {
                n,
                base,
                width,
                bytes,
            })
        }
        1 => {
            let runs = usize::from(r.u16()?);
            let base = r.u32()?;
            let width = r.u8()?;
            if width > 32 || runs == 0 || runs > n {
                return Err(r.bad());
            }
            let terms = Packed {
                n: runs,
                base,
                width,
                bytes: r.take(bits::packed_len(runs, width))?,
            };
            let start_width = bits::width(n as u32 - 1);
            let starts = Packed {
                n: runs - 1,
                base: 0,
                width: start_width,
                bytes: r.take(bits::packed_len(runs - 1, start_width))?,
            };
            BlockView::Runs {
                rows: n,
                terms,
                starts,
            }
        }
        2 if line => {
            let base = r.u32()?;
            let slope = r.u32()?;
            let width = r.u8()?;
            if width > 32 || n == 0 {
                return Err(r.bad());
            }
            let bytes = r.take(bits::packed_len(n, width))?;
            BlockView::Line {
                residuals: Packed {
                    n,
                    base,
                    width,
                    bytes,
                },
                slope,
            }
        }
        _ => return Err(r.bad()),
    };
    if !r.is_done() {
        return Err(r.bad());
    }
    Ok(view)
}

/// Where a compact block's bytes lie, read from its first bytes (at least its head).
pub(crate) struct Extent {
    /// The block's length in bytes.
    pub(crate) len: usize,
    /// For the frame of reference and the line, whose rows are packed in order: the offset
    /// of the packed terms and their width, so row `i` lies in bits `i × width ..` from
    /// there. `None` for runs, found by a search over the whole block.
    pub(crate) packed: Option<(usize, u8)>,
}

/// The [`Extent`] of the compact block (`codec` a compact codec) whose bytes begin `head`.
pub(crate) fn extent(codec: Codec, head: &[u8]) -> Result<Extent, Damage> {
    let mut r = Reader::new(head, "a column block");
    let n = usize::from(r.u16()?);
    if n > BLOCK_ROWS as usize || !codec.is_compact() {
        return Err(r.bad());
    }
    let (len, packed) = match r.u8()? {
        0 => {
            r.u32()?;
            let width = r.u8()?;
            (8 + bits::packed_len(n, width), Some((8, width)))
        }
        1 => {
            let runs = usize::from(r.u16()?);
            r.u32()?;
            let width = r.u8()?;
            if runs == 0 || runs > n {
                return Err(r.bad());
            }
            let start_width = bits::width(n as u32 - 1);
            let len = 10 + bits::packed_len(runs, width) + bits::packed_len(runs - 1, start_width);
            (len, None)
        }
        2 if codec.has_version_4_forms() => {
            r.u32()?;
            r.u32()?;
            let width = r.u8()?;
            (12 + bits::packed_len(n, width), Some((12, width)))
        }
        _ => return Err(r.bad()),
    };
    if packed.is_some_and(|(_, w)| w > 32) {
        return Err(r.bad());
    }
    Ok(Extent { len, packed })
}

/// Decodes stored bytes into an owned block.
pub fn decode<'a>(payload: impl Into<Payload<'a>>) -> Result<Vec<u32>, Damage> {
    view(payload)?.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes `terms` in `codec` and checks that they read back whole and row by row, and
    /// that every truncation is refused; answers the bytes.
    fn reads_back(codec: Codec, terms: &[u32]) -> Vec<u8> {
        let bytes = encode(codec, terms).unwrap();
        let v = view(Payload::new(codec, &bytes)).unwrap();
        assert_eq!(v.len(), terms.len());
        assert_eq!(v.to_vec().unwrap(), terms);
        for (i, &t) in terms.iter().enumerate() {
            assert_eq!(v.get(i), Some(t));
        }
        assert_eq!(v.get(terms.len()), None);
        for cut in 0..bytes.len() {
            assert!(view(Payload::new(codec, &bytes[..cut])).is_err());
        }
        bytes
    }

    #[test]
    fn compact_blocks_round_trip_in_both_forms() {
        let spread: Vec<u32> = (0..4096)
            .map(|i| i * 7919 % 100_003 + 0x4000_0000)
            .collect();
        let runs: Vec<u32> = (0..4096).map(|i| 0x4000_0000 + i / 9 * 3).collect();
        let cases: [&[u32]; 6] = [&spread, &runs, &[], &[5], &[u32::MAX, 0, 7], &[9, 9, 9]];
        for terms in cases {
            reads_back(Codec::Compact, terms);
        }
        // Runs out of order: a view reads rows without a panic; decoding it whole refuses.
        let mut bad = encode(Codec::Compact, &runs).unwrap();
        let at = bad.len() - 2;
        bad[at] ^= 0xff;
        let p = Payload::new(Codec::Compact, &bad);
        let v = view(p).unwrap();
        for i in 0..=v.len() {
            let _ = v.get(i);
        }
        assert!(decode(p).is_err());
        // The clustered block takes the runs form, and both beat the archive.
        let plain = encode(Codec::Plain, &runs).unwrap().len();
        let packed = encode(Codec::Compact, &runs).unwrap();
        assert_eq!(packed[2], 1);
        assert!(packed.len() * 10 < plain, "{} vs {plain}", packed.len());
        assert_eq!(encode(Codec::Compact, &spread).unwrap()[2], 0);
        assert!(encode(Codec::Compact, &spread).unwrap().len() * 3 / 2 < plain);
    }

    #[test]
    fn version_4_blocks_on_a_line_round_trip_and_version_3_refuses_them() {
        let int = 0xC000_0000u32;
        // A sorted column two rows a term (the integer pairs' sources), one with noise, one
        // climbing steeply, one that dips below its line's start, a descending one, one
        // whose slope overflows 16.16, and a spread one.
        let halves: Vec<u32> = (0..4096).map(|i| int + 1_000_000 + i / 2).collect();
        let noisy: Vec<u32> = (0..4096).map(|i| int + i * 3 + (i * 7919) % 5).collect();
        let steep: Vec<u32> = (0..4096).map(|i| i * 60_000).collect();
        let dips: Vec<u32> = (0..100).map(|i| if i == 50 { 0 } else { 10 + i }).collect();
        let down: Vec<u32> = (0..4096).map(|i| int + 5000 - i).collect();
        let wide: Vec<u32> = vec![0, 5, u32::MAX];
        let spread: Vec<u32> = (0..4096).map(|i| int + i * 7919 % 100_003).collect();
        let cases: [(&[u32], bool); 9] = [
            (&halves, true),
            (&noisy, true),
            (&steep, true),
            (&dips, true),
            (&down, false),
            (&wide, false),
            (&spread, false),
            (&[], false),
            (&[u32::MAX, u32::MAX], false),
        ];
        for (terms, on_line) in cases {
            let bytes = reads_back(Codec::Compact4, terms);
            assert_eq!(
                bytes.get(2) == Some(&2),
                on_line,
                "{:?}",
                &terms[..terms.len().min(4)]
            );
            // A version 3 file never gets the form, and refuses it as damage.
            assert_ne!(encode(Codec::Compact, terms).unwrap().get(2), Some(&2));
            if on_line {
                assert!(view(Payload::new(Codec::Compact, &bytes)).is_err());
            }
        }
        // The sorted column two rows a term: a bit a row, against 11 in version 3.
        let v4 = encode(Codec::Compact4, &halves).unwrap().len();
        let v3 = encode(Codec::Compact, &halves).unwrap().len();
        assert!(
            v4 <= 12 + 4096 / 8 && v3 >= 4096 * 11 / 8,
            "{v4} against {v3}"
        );
    }

    #[test]
    fn round_trip_at_every_alignment() {
        let terms: Vec<u32> = (0..1000).map(|i| i * 7 + 0x8000_0000 * (i % 2)).collect();
        let bytes = encode(Codec::Plain, &terms).unwrap();
        for shift in 0..8 {
            let mut buf = vec![0u8; shift];
            buf.extend_from_slice(&bytes);
            assert_eq!(decode(&buf[shift..]).unwrap(), terms, "shift {shift}");
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode(&[1u8, 2, 3][..]).is_err());
        assert!(decode(&[0xffu8; 64][..]).is_err());
    }
}
