//! Postings: for each (relation, column, term), the rows whose column holds the term.
//!
//! Postings are grouped in chunks of [`CHUNK_TERMS`] consecutive terms, one redb entry per
//! chunk, keyed by `(relation, column, term >> CHUNK_BITS)`; most terms of a code graph occur
//! in a handful of rows, and an entry per term would cost a B-tree insert per distinct value.
//!
//! [`Codec::Plain`] (format versions 1 and 2): a chunk's bytes are `n` (u8, 1 to 64), then
//! `n` low bytes of the terms (`term & 63`, ascending), then `n` end offsets (u32 LE) of each
//! posting within the data that follows, then the postings back to back. A posting is a tag
//! byte and its rows: tag 0, up to [`RAW_MAX`] row ids as u32 LE, ascending; tag 1, a
//! serialized roaring bitmap. `dead` and `owners` hold a serialized roaring bitmap.
//!
//! [`Codec::Compact`] (format version 3): a chunk's bytes are `n` (u8, 1 to 64), then the
//! low bytes: `n` bytes, ascending, when `n < 8`, else a u64 LE mask with bit `low` set for
//! each; then the postings back to back, each found by stepping over those before it. A
//! posting (and a `dead` or `owners` value) is a varint `count << 2 | form`, then:
//! form 0, `count` rows as varints, the first as "first row" below, each next as its
//! distance from the one before less 1; form 1, `count` runs of consecutive rows, each as two
//! varints: its first row (the first run's as "first row" below; a later run's less the
//! previous run's last row less 2) and its length less 1; form 2, `count` bytes of a
//! serialized roaring bitmap. The encoder takes the smallest. The first row: in a chunk, the
//! zigzag-coded difference from the first row of the posting before (from 0 for the chunk's
//! first posting; a roaring posting passes on the row it was written against); in `dead`
//! and `owners`, the row as it is.
//!
//! [`Codec::Compact4`] (format version 4) adds, in chunks only, form 3: the rows
//! `after .. after + count`, where `after` is the row right after the last row of the
//! posting before (a sorted column's postings are such runs, one after the other: a byte
//! each). There is no `after` for a chunk's first posting, nor after an empty posting or a
//! roaring one, and a form 3 posting passes on `after` as its first row.
//!
//! A version 4 chunk may instead be packed, when that is smaller (rows spread over the
//! relation, whose varints take 3 or 4 bytes each): its first byte is `0x80 | n`, then the
//! low bytes as above, then `base` (varint), `width` (u8), each posting's row count
//! (`n` varints, each at least 1), then every posting's rows, posting by posting, each
//! ascending, as `row - base` at `width` bits (see `crate::bits`).

use roaring::RoaringBitmap;

use crate::bits::{self, Reader};
use crate::error::Damage;
use crate::layout::{Codec, Payload};
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
) -> Result<Payload<'a>, Damage> {
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
pub(crate) fn open_dead(seal: Seal, rel: u32, stored: &[u8]) -> Result<Payload<'_>, Damage> {
    seal.open(&Key::one(Table::Dead, rel), stored, || {
        format!("relation {rel}: the bitmap of removed rows")
    })
}

/// The value to store for the `dead` entry of relation `rel`.
pub(crate) fn seal_dead(seal: Seal, rel: u32, bytes: Vec<u8>) -> Vec<u8> {
    seal.close(&Key::one(Table::Dead, rel), bytes)
}

/// The payload of the `owners` entry (relation, unit), its checksum verified.
pub(crate) fn open_owners(
    seal: Seal,
    key: (u32, u32),
    stored: &[u8],
) -> Result<Payload<'_>, Damage> {
    seal.open(&Key::two(Table::Owners, key), stored, || {
        format!("relation {}: the rows of unit {}", key.0, key.1)
    })
}

/// The value to store for the `owners` entry (relation, unit).
pub(crate) fn seal_owners(seal: Seal, key: (u32, u32), bytes: Vec<u8>) -> Vec<u8> {
    seal.close(&Key::two(Table::Owners, key), bytes)
}

/// The value a new database stores for the postings chunk `key` (relation, column, chunk)
/// holding `postings`: `encode_chunk` and its checksum (what tests that damage a database
/// write).
pub fn stored_chunk<'a>(
    key: (u32, u16, u32),
    postings: impl Iterator<Item = (u8, &'a mut RoaringBitmap)>,
) -> Vec<u8> {
    let s = Seal::newest();
    seal_chunk(s, key, encode_chunk(s.codec, postings))
}

/// The chunk a term's posting lives in, and its low byte within the chunk.
pub fn chunk_of(term: u32) -> (u32, u8) {
    (term >> CHUNK_BITS, (term & (CHUNK_TERMS - 1)) as u8)
}

/// Appends one posting's encoding in `codec` to `out`.
pub fn encode_posting(codec: Codec, bitmap: &mut RoaringBitmap, out: &mut Vec<u8>) {
    match codec {
        Codec::Plain if bitmap.len() <= RAW_MAX => {
            out.push(0);
            for r in bitmap.iter() {
                out.extend_from_slice(&r.to_le_bytes());
            }
        }
        Codec::Plain => {
            out.push(1);
            bitmap.optimize();
            // Writing into a Vec cannot fail.
            let _ = bitmap.serialize_into(&mut *out);
        }
        Codec::Compact | Codec::Compact4 => {
            encode_rows(bitmap, out, First::Plain, false);
        }
    }
}

/// Bytes of `v` as a varint.
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// How the first row of a compact set is written: as it is (a set on its own), or, in a
/// chunk, as its zigzag-coded distance from the first row of the posting before (0 for the
/// first): the postings of neighbouring terms start at neighbouring rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum First {
    /// As it is.
    Plain,
    /// In a chunk, after the posting [`Prior`] describes.
    From(Prior),
    /// In a packed chunk (version 4): `count` rows from value `from` of the chunk's packed
    /// rows, each `base` plus its `width` bits.
    Packed {
        /// Added to each packed value.
        base: u32,
        /// Bits a row.
        width: u8,
        /// The posting's first value among the chunk's.
        from: u32,
        /// How many rows the posting holds.
        count: u32,
    },
}

/// What the posting before a compact chunk's posting passes on to it: its first row (the
/// chunk's first posting gets 0) and, in version 4, the row right after its last, where a
/// posting of form 3 starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Prior {
    first: u32,
    after: Option<u32>,
}

impl Prior {
    /// What a posting whose rows run from `first` to `last` passes on: `after` only where
    /// the chunk's codec has form 3 (`follow`) and a row follows `last`.
    fn of(first: u32, last: u32, follow: bool) -> Prior {
        Prior {
            first,
            after: if follow { last.checked_add(1) } else { None },
        }
    }

    /// What a posting that writes no first row of its own (an empty or a roaring one)
    /// passes on.
    fn kept(self) -> Prior {
        Prior {
            first: self.first,
            after: None,
        }
    }
}

impl First {
    /// The prior of a posting written as `self` says, or the default one on its own.
    fn prior(self) -> Prior {
        match self {
            First::Plain | First::Packed { .. } => Prior::default(),
            First::From(p) => p,
        }
    }

    fn put(self, row: u32) -> u64 {
        match self {
            First::Plain | First::Packed { .. } => u64::from(row),
            First::From(Prior { first: base, .. }) => {
                let d = i64::from(row) - i64::from(base);
                ((d << 1) ^ (d >> 63)) as u64
            }
        }
    }

    fn get(self, v: u64) -> Option<u32> {
        match self {
            First::Plain | First::Packed { .. } => u32::try_from(v).ok(),
            First::From(Prior { first: base, .. }) => {
                let d = (v >> 1) as i64 ^ -((v & 1) as i64);
                u32::try_from(i64::from(base).checked_add(d)?).ok()
            }
        }
    }
}

/// The compact encoding of a set of rows: the smallest of a list, runs and roaring (and,
/// where `first` gives an `after` and the rows are one run starting there, form 3). Returns
/// what it passes on to the next posting of a chunk (`after` only when `follow`).
fn encode_rows(bitmap: &RoaringBitmap, out: &mut Vec<u8>, first: First, follow: bool) -> Prior {
    let rows: Vec<u32> = bitmap.iter().collect();
    encode_sorted(&rows, out, first, follow)
}

/// [`encode_rows`] of the rows `rows` (ascending, distinct), with no bitmap unless roaring
/// may be the smallest form.
fn encode_sorted(rows: &[u32], out: &mut Vec<u8>, first: First, follow: bool) -> Prior {
    let prior = first.prior();
    if let (Some(after), Some(&head), Some(&last)) = (prior.after, rows.first(), rows.last())
        && head == after
        && (last - head) as usize == rows.len() - 1
    {
        bits::put_varint(out, (rows.len() as u64) << 2 | 3);
        return Prior::of(head, last, follow);
    }
    let lead = |r: u32| varint_len(first.put(r));
    // Sizes of the list and of the runs, in one pass.
    let (mut list, mut runs_len, mut nruns) = (0usize, 0usize, 0u64);
    let mut run_start = 0usize;
    for (i, &r) in rows.iter().enumerate() {
        let gap = if i == 0 { 0 } else { r - rows[i - 1] - 1 };
        list += if i == 0 {
            lead(r)
        } else {
            varint_len(u64::from(gap))
        };
        if i == 0 || gap > 0 {
            if i > 0 {
                runs_len += varint_len(u64::from(rows[i - 1] - rows[run_start]));
            }
            nruns += 1;
            // A new run's first row, less the previous run's last row less 2.
            runs_len += if i == 0 {
                lead(r)
            } else {
                varint_len(u64::from(gap - 1))
            };
            run_start = i;
        }
    }
    if let Some(&last) = rows.last() {
        runs_len += varint_len(u64::from(last - rows[run_start]));
    }
    list += varint_len((rows.len() as u64) << 2);
    runs_len += varint_len(nruns << 2 | 1);
    // Roaring is weighed only for sets large enough for it to have a chance.
    if list.min(runs_len) > 64 {
        // Ascending rows push on at the end; out of order ones would not (they never are).
        let mut bitmap = RoaringBitmap::from_sorted_iter(rows.iter().copied())
            .unwrap_or_else(|_| rows.iter().copied().collect());
        bitmap.optimize();
        let size = bitmap.serialized_size();
        let roaring = size + varint_len((size as u64) << 2 | 2);
        if roaring < list.min(runs_len) {
            bits::put_varint(out, (size as u64) << 2 | 2);
            // Writing into a Vec cannot fail.
            let _ = bitmap.serialize_into(&mut *out);
            return prior.kept();
        }
    }
    let put_first = |out: &mut Vec<u8>, r: u32| bits::put_varint(out, first.put(r));
    if runs_len < list {
        bits::put_varint(out, nruns << 2 | 1);
        let mut i = 0;
        while i < rows.len() {
            let mut j = i;
            while j + 1 < rows.len() && rows[j + 1] == rows[j] + 1 {
                j += 1;
            }
            if i == 0 {
                put_first(out, rows[0]);
            } else {
                bits::put_varint(out, u64::from(rows[i] - rows[i - 1] - 2));
            }
            bits::put_varint(out, u64::from(rows[j] - rows[i]));
            i = j + 1;
        }
    } else {
        bits::put_varint(out, (rows.len() as u64) << 2);
        for (i, &r) in rows.iter().enumerate() {
            if i == 0 {
                put_first(out, r);
            } else {
                bits::put_varint(out, u64::from(r - rows[i - 1] - 1));
            }
        }
    }
    match (rows.first(), rows.last()) {
        (Some(&head), Some(&last)) => Prior::of(head, last, follow),
        _ => prior.kept(),
    }
}

/// Steps over one compact posting whose first row is written as `first` says; returns what
/// it passes on to the next posting (`after` only when `follow`, which reads every row of
/// a list or runs to find its last).
fn skip_rows(r: &mut Reader<'_>, first: First, follow: bool) -> Result<Prior, Damage> {
    let h = r.varint()?;
    let count = h >> 2;
    let prior = first.prior();
    match h & 3 {
        0 | 1 if count == 0 => Ok(prior.kept()),
        0 | 1 if !follow => {
            let row = first.get(r.varint()?).ok_or_else(|| r.bad())?;
            let rest = if h & 3 == 0 {
                count - 1
            } else {
                count.checked_mul(2).ok_or_else(|| r.bad())? - 1
            };
            r.skip_varints(rest)?;
            Ok(Prior::of(row, row, false))
        }
        form @ (0 | 1) => {
            let head = first.get(r.varint()?).ok_or_else(|| r.bad())?;
            let mut last = u64::from(head);
            for i in 0..count {
                if form == 0 {
                    if i > 0 {
                        last += 1 + u64::from(r.varint_u32()?);
                    }
                } else {
                    if i > 0 {
                        last += 2 + u64::from(r.varint_u32()?);
                    }
                    last += u64::from(r.varint_u32()?);
                }
                if last > u64::from(u32::MAX) {
                    return Err(r.bad());
                }
            }
            Ok(Prior::of(head, last as u32, true))
        }
        2 => r
            .take(usize::try_from(count).map_err(|_| r.bad())?)
            .map(|_| prior.kept()),
        _ => {
            let (start, last) = follow_on(prior, count).ok_or_else(|| r.bad())?;
            Ok(Prior::of(start, last, true))
        }
    }
}

/// The first and last rows of a form 3 posting of `count` rows after `prior`; `None` when
/// `prior` gives no `after`, `count` is 0, or the rows would pass `u32::MAX`.
fn follow_on(prior: Prior, count: u64) -> Option<(u32, u32)> {
    let start = prior.after?;
    let last = start.checked_add(u32::try_from(count.checked_sub(1)?).ok()?)?;
    Some((start, last))
}

/// What a posting's rows are decoded into: a bitmap, or a list rows are appended to.
pub(crate) trait RowSet {
    /// Adds `rows`, ascending; `Err` when they do not all come after the rows it holds.
    fn add_sorted(&mut self, rows: Vec<u32>) -> Result<(), ()>;
    /// Adds the rows `first..=last`, as [`RowSet::add_sorted`].
    fn add_range(&mut self, first: u32, last: u32) -> Result<(), ()>;
    /// Adds the rows of `set`, as [`RowSet::add_sorted`].
    fn add_set(&mut self, set: RoaringBitmap) -> Result<(), ()>;
}

impl RowSet for RoaringBitmap {
    fn add_sorted(&mut self, rows: Vec<u32>) -> Result<(), ()> {
        if self.is_empty() {
            *self = RoaringBitmap::from_sorted_iter(rows).map_err(|_| ())?;
            return Ok(());
        }
        self.append(rows).map(|_| ()).map_err(|_| ())
    }

    fn add_range(&mut self, first: u32, last: u32) -> Result<(), ()> {
        if self.max().is_some_and(|m| m >= first) {
            return Err(());
        }
        self.insert_range(first..=last);
        Ok(())
    }

    fn add_set(&mut self, set: RoaringBitmap) -> Result<(), ()> {
        if self.is_empty() {
            *self = set;
            return Ok(());
        }
        if let (Some(m), Some(f)) = (self.max(), set.min())
            && m >= f
        {
            return Err(());
        }
        *self |= set;
        Ok(())
    }
}

impl RowSet for Vec<u32> {
    fn add_sorted(&mut self, rows: Vec<u32>) -> Result<(), ()> {
        // Ascending as given (the decoder makes each row from the one before); only where
        // they start is checked.
        debug_assert!(rows.is_sorted_by(|a, b| a < b));
        if let (Some(&m), Some(&f)) = (self.last(), rows.first())
            && m >= f
        {
            return Err(());
        }
        if self.is_empty() {
            *self = rows;
        } else {
            self.extend_from_slice(&rows);
        }
        Ok(())
    }

    fn add_range(&mut self, first: u32, last: u32) -> Result<(), ()> {
        if self.last().is_some_and(|&m| m >= first) || first > last {
            return Err(());
        }
        self.extend(first..=last);
        Ok(())
    }

    fn add_set(&mut self, set: RoaringBitmap) -> Result<(), ()> {
        if let (Some(&m), Some(f)) = (self.last(), set.min())
            && m >= f
        {
            return Err(());
        }
        self.extend(set.iter());
        Ok(())
    }
}

/// Decodes one compact posting, which must take all of `bytes`.
fn decode_rows(bytes: &[u8], first: First) -> Result<RoaringBitmap, Damage> {
    let mut out = RoaringBitmap::new();
    decode_rows_into(bytes, first, &mut out)?;
    Ok(out)
}

/// Decodes one compact posting, which must take all of `bytes`, into `out`, whose rows it
/// must come after.
fn decode_rows_into(bytes: &[u8], first: First, out: &mut impl RowSet) -> Result<(), Damage> {
    if let First::Packed {
        base,
        width,
        from,
        count,
    } = first
    {
        return decode_packed(bytes, base, width, from, count, out);
    }
    let mut r = Reader::new(bytes, "a set of rows");
    let h = r.varint()?;
    let count = h >> 2;
    match h & 3 {
        0 => {
            let mut rows = Vec::with_capacity((count as usize).min(bytes.len()));
            let mut next = 0u32;
            for i in 0..count {
                let row = if i == 0 {
                    first.get(r.varint()?)
                } else {
                    next.checked_add(r.varint_u32()?)
                };
                let row = row.ok_or_else(|| r.bad())?;
                rows.push(row);
                next = row.saturating_add(1);
                if row == u32::MAX && i + 1 < count {
                    return Err(r.bad());
                }
            }
            out.add_sorted(rows).map_err(|()| r.bad())?;
        }
        1 => {
            let mut end = 0u64;
            for i in 0..count {
                let start = if i == 0 {
                    u64::from(first.get(r.varint()?).ok_or_else(|| r.bad())?)
                } else {
                    end + u64::from(r.varint_u32()?)
                };
                let last = start + u64::from(r.varint_u32()?);
                if last > u64::from(u32::MAX) {
                    return Err(r.bad());
                }
                out.add_range(start as u32, last as u32)
                    .map_err(|()| r.bad())?;
                end = last + 2;
            }
        }
        2 => {
            let n = usize::try_from(count).map_err(|_| r.bad())?;
            out.add_set(decode_roaring(r.take(n)?)?)
                .map_err(|()| r.bad())?;
        }
        _ => {
            let (start, last) = follow_on(first.prior(), count).ok_or_else(|| r.bad())?;
            out.add_range(start, last).map_err(|()| r.bad())?;
        }
    }
    if !r.is_done() {
        return Err(r.bad());
    }
    Ok(())
}

/// Decodes the posting of a packed chunk whose rows are values `from .. from + count` of
/// `packed` (each `base` plus `width` bits) into `out`, whose rows they must come after.
fn decode_packed(
    packed: &[u8],
    base: u32,
    width: u8,
    from: u32,
    count: u32,
    out: &mut impl RowSet,
) -> Result<(), Damage> {
    let bad = || Damage::Format("a packed postings chunk is malformed".to_owned());
    let end = from.checked_add(count).ok_or_else(bad)? as usize;
    if width > 32 || bits::packed_len(end, width) > packed.len() {
        return Err(bad());
    }
    let mut rows = Vec::with_capacity(count as usize);
    for i in from as usize..end {
        let row = base
            .checked_add(bits::unpack(packed, width, i))
            .ok_or_else(bad)?;
        if rows.last().is_some_and(|&r| r >= row) {
            return Err(bad());
        }
        rows.push(row);
    }
    out.add_sorted(rows).map_err(|()| bad())
}

/// The head of a packed chunk's data (after its low bytes): `base`, `width`, and each
/// posting's first value among the packed rows (`starts[..=n]`, the last the total); then
/// the packed rows, checked to be all there is.
fn packed_head<'a>(
    data: &'a [u8],
    n: usize,
    starts: &mut [u32; CHUNK_TERMS as usize + 1],
) -> Result<(u32, u8, &'a [u8]), Damage> {
    let mut r = Reader::new(data, "a packed postings chunk");
    let base = r.varint_u32()?;
    let width = r.u8()?;
    if width > 32 {
        return Err(r.bad());
    }
    starts[0] = 0;
    for i in 0..n {
        let count = r.varint_u32()?;
        if count == 0 {
            return Err(r.bad());
        }
        starts[i + 1] = starts[i].checked_add(count).ok_or_else(|| r.bad())?;
    }
    let packed = r.take(bits::packed_len(starts[n] as usize, width))?;
    if !r.is_done() {
        return Err(r.bad());
    }
    Ok((base, width, packed))
}

/// Posting `i` of a packed chunk whose packed rows are `rows` (`starts` as [`packed_head`]
/// gives them).
fn packed_posting<'a>(
    rows: Payload<'a>,
    base: u32,
    width: u8,
    starts: &[u32; CHUNK_TERMS as usize + 1],
    i: usize,
) -> Posting<'a> {
    Posting {
        payload: rows,
        first: First::Packed {
            base,
            width,
            from: starts[i],
            count: starts[i + 1] - starts[i],
        },
    }
}

/// The packed form of a version 4 chunk of `lows` and their postings (each not empty), if
/// it is smaller than `than` bytes (the chunk with varint postings): see the module's docs.
fn packed_chunk(lows: &[u8], postings: &[&[u32]], than: usize) -> Option<Vec<u8>> {
    if postings.iter().any(|p| p.is_empty()) {
        return None;
    }
    let base = postings.iter().filter_map(|p| p.first()).min().copied()?;
    let max = postings.iter().filter_map(|p| p.last()).max().copied()?;
    let width = bits::width(max - base);
    let total: usize = postings.iter().map(|p| p.len()).sum();
    let head = if lows.len() < 8 { lows.len() } else { 8 };
    let counts: usize = postings.iter().map(|p| varint_len(p.len() as u64)).sum();
    let size = 1 + head + varint_len(u64::from(base)) + 1 + counts + bits::packed_len(total, width);
    if size >= than {
        return None;
    }
    let mut out = Vec::with_capacity(size);
    compact_head(lows, &mut out);
    out[0] |= 0x80;
    bits::put_varint(&mut out, u64::from(base));
    out.push(width);
    for p in postings {
        bits::put_varint(&mut out, p.len() as u64);
    }
    bits::pack(
        &mut out,
        postings.iter().flat_map(|p| p.iter().map(|&r| r - base)),
        width,
    );
    debug_assert_eq!(out.len(), size);
    Some(out)
}

/// One posting's bytes as a chunk holds them: its payload, and for a compact chunk the row
/// its first row is written against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Posting<'a> {
    payload: Payload<'a>,
    first: First,
}

impl<'a> From<Payload<'a>> for Posting<'a> {
    fn from(payload: Payload<'a>) -> Posting<'a> {
        Posting {
            payload,
            first: First::Plain,
        }
    }
}

impl<'a> From<&'a [u8]> for Posting<'a> {
    fn from(bytes: &'a [u8]) -> Posting<'a> {
        Payload::from(bytes).into()
    }
}

impl<'a> From<&'a Vec<u8>> for Posting<'a> {
    fn from(bytes: &'a Vec<u8>) -> Posting<'a> {
        Payload::from(bytes).into()
    }
}

/// Decodes one posting (a posting's bytes on their own: a compact one's first row as it is).
pub fn decode_posting<'a>(posting: impl Into<Posting<'a>>) -> Result<RoaringBitmap, Damage> {
    let Posting { payload, first } = posting.into();
    if payload.codec.is_compact() {
        return decode_rows(payload.bytes, first);
    }
    match payload.bytes.split_first() {
        Some((0, rows)) if rows.len() % 4 == 0 => {
            let it = rows
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
            RoaringBitmap::from_sorted_iter(it)
                .map_err(|_| Damage::Format("a posting's rows are out of order".to_owned()))
        }
        Some((1, rest)) => decode_roaring(rest),
        _ => Err(Damage::Format(
            "a posting has an unknown encoding".to_owned(),
        )),
    }
}

/// Decodes one posting (as [`decode_posting`]) onto the end of `rows`, whose rows it must
/// all come after: what merging a chunk with the rows a batch appended needs, without a
/// bitmap for each posting.
pub(crate) fn decode_posting_onto<'a>(
    posting: impl Into<Posting<'a>>,
    rows: &mut Vec<u32>,
) -> Result<(), Damage> {
    let Posting { payload, first } = posting.into();
    if payload.codec.is_compact() {
        return decode_rows_into(payload.bytes, first, rows);
    }
    let set = decode_posting(Posting { payload, first })?;
    rows.add_set(set)
        .map_err(|()| Damage::Format("a posting's rows are out of order".to_owned()))
}

/// Encodes a set of rows on its own (dead rows, owners) in `codec`.
pub fn encode(codec: Codec, bitmap: &mut RoaringBitmap) -> Vec<u8> {
    let mut out = Vec::new();
    match codec {
        Codec::Plain => {
            bitmap.optimize();
            out.reserve(bitmap.serialized_size());
            // Writing into a Vec cannot fail.
            let _ = bitmap.serialize_into(&mut out);
        }
        Codec::Compact | Codec::Compact4 => {
            if let Some(runs) = few_runs(bitmap) {
                return encode_sorted_runs(codec, &runs);
            }
            encode_rows(bitmap, &mut out, First::Plain, false);
        }
    }
    out
}

/// The most runs [`few_runs`] gathers: each takes at least two bytes in the runs form, and
/// a set whose runs take over 64 bytes is written from its rows ([`encode_sorted_runs`]).
const FEW_RUNS: usize = 32;

/// The runs `(first, count)` of `bitmap` when it has at most [`FEW_RUNS`] of them (a unit
/// that owns the 10M rows appended for it is one run). Gathered run by run, without listing
/// the rows: a small batch into a relation of 10M rows used to list them all to write its
/// owner again (43% of a one-fact ingest into 80 MB).
fn few_runs(bitmap: &RoaringBitmap) -> Option<Vec<(u32, u32)>> {
    let mut runs = Vec::new();
    let mut iter = bitmap.iter();
    while let Some(r) = iter.next_range() {
        if runs.len() == FEW_RUNS {
            return None;
        }
        // A run's rows are counted up to its end, exclusive: a set holding `u32::MAX`
        // (never a row: a relation's rows stop below it) is written from its rows.
        let end = r.end().checked_add(1)?;
        runs.push((*r.start(), end - *r.start()));
    }
    Some(runs)
}

/// Decodes and validates a set of rows written by [`encode`].
pub fn decode<'a>(payload: impl Into<Payload<'a>>) -> Result<RoaringBitmap, Damage> {
    let payload = payload.into();
    match payload.codec {
        Codec::Plain => decode_roaring(payload.bytes),
        Codec::Compact | Codec::Compact4 => decode_rows(payload.bytes, First::Plain),
    }
}

fn decode_roaring(bytes: &[u8]) -> Result<RoaringBitmap, Damage> {
    RoaringBitmap::deserialize_from(bytes)
        .map_err(|e| Damage::Format(format!("a row bitmap does not validate: {e}")))
}

/// A chunk of postings read in place.
pub struct ChunkView<'a> {
    codec: Codec,
    n: usize,
    lows: [u8; CHUNK_TERMS as usize],
    /// Where each posting starts in `data`, and where the last ends (in a packed chunk, the
    /// value each starts at among the packed rows).
    starts: [u32; CHUNK_TERMS as usize + 1],
    /// What each compact posting is written against.
    priors: [Prior; CHUNK_TERMS as usize],
    /// A packed chunk's `base` and `width`.
    packed: Option<(u32, u8)>,
    data: &'a [u8],
}

/// A chunk's count of postings from its first byte, and whether it is packed (a version 4
/// chunk's first byte may be `0x80 | n`).
fn chunk_count(first: u8, codec: Codec) -> Option<(usize, bool)> {
    let packed = codec.has_version_4_forms() && first & 0x80 != 0;
    let n = usize::from(if packed { first & 0x7f } else { first });
    (n != 0 && n <= CHUNK_TERMS as usize).then_some((n, packed))
}

impl<'a> ChunkView<'a> {
    /// Checks a chunk's directory.
    pub fn parse(payload: impl Into<Payload<'a>>) -> Result<ChunkView<'a>, Damage> {
        let payload = payload.into();
        let bad = || Damage::Format("a postings chunk is malformed".to_owned());
        let bytes = payload.bytes;
        let (&n, rest) = bytes.split_first().ok_or_else(bad)?;
        let (n, packed) = chunk_count(n, payload.codec).ok_or_else(bad)?;
        let mut view = ChunkView {
            codec: payload.codec,
            n,
            lows: [0; CHUNK_TERMS as usize],
            starts: [0; CHUNK_TERMS as usize + 1],
            priors: [Prior::default(); CHUNK_TERMS as usize],
            packed: None,
            data: &[],
        };
        match payload.codec {
            Codec::Plain => {
                if rest.len() < n * 5 {
                    return Err(bad());
                }
                let (lows, rest) = rest.split_at(n);
                let (ends, data) = rest.split_at(n * 4);
                view.data = data;
                view.lows[..n].copy_from_slice(lows);
                for i in 0..n {
                    let e = &ends[i * 4..i * 4 + 4];
                    let end = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
                    if end < view.starts[i]
                        || end as usize > data.len()
                        || (i > 0 && lows[i] <= lows[i - 1])
                    {
                        return Err(bad());
                    }
                    view.starts[i + 1] = end;
                }
            }
            Codec::Compact | Codec::Compact4 => {
                let data = if n < 8 {
                    let lows = rest.get(..n).ok_or_else(bad)?;
                    if lows.windows(2).any(|w| w[0] >= w[1]) || lows[n - 1] >= 64 {
                        return Err(bad());
                    }
                    view.lows[..n].copy_from_slice(lows);
                    &rest[n..]
                } else {
                    let m = rest.get(..8).ok_or_else(bad)?;
                    let mask = u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]]);
                    if mask.count_ones() as usize != n {
                        return Err(bad());
                    }
                    let mut k = 0;
                    for low in 0..64u8 {
                        if mask >> low & 1 == 1 {
                            view.lows[k] = low;
                            k += 1;
                        }
                    }
                    &rest[8..]
                };
                if packed {
                    let (base, width, rows) = packed_head(data, n, &mut view.starts)?;
                    view.packed = Some((base, width));
                    view.data = rows;
                    return Ok(view);
                }
                view.data = data;
                let mut r = Reader::new(data, "a postings chunk");
                let follow = payload.codec.has_version_4_forms();
                let mut prior = Prior::default();
                for i in 0..n {
                    view.priors[i] = prior;
                    prior = skip_rows(&mut r, First::From(prior), follow)?;
                    view.starts[i + 1] = r.position() as u32;
                }
                if !r.is_done() {
                    return Err(bad());
                }
            }
        }
        Ok(view)
    }

    fn posting(&self, i: usize) -> Posting<'a> {
        if let Some((base, width)) = self.packed {
            return packed_posting(
                Payload::new(self.codec, self.data),
                base,
                width,
                &self.starts,
                i,
            );
        }
        let bytes = &self.data[self.starts[i] as usize..self.starts[i + 1] as usize];
        Posting {
            payload: Payload::new(self.codec, bytes),
            first: match self.codec {
                Codec::Plain => First::Plain,
                Codec::Compact | Codec::Compact4 => First::From(self.priors[i]),
            },
        }
    }

    /// The encoded posting of the term with low byte `low`, if the chunk holds it.
    pub fn get(&self, low: u8) -> Option<Posting<'a>> {
        self.lows[..self.n]
            .binary_search(&low)
            .ok()
            .map(|i| self.posting(i))
    }

    /// Each term's low byte with its encoded posting, ascending.
    pub fn iter(&self) -> impl Iterator<Item = (u8, Posting<'a>)> + '_ {
        (0..self.n).map(|i| (self.lows[i], self.posting(i)))
    }

    /// How many terms the chunk holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.n
    }
}

/// The encoded posting of the term with low byte `low` in a chunk, if it holds one: what
/// [`ChunkView::parse`] and then [`ChunkView::get`] give, but stepping over only the
/// postings before it (none when the chunk lacks the term). A lookup of one term reads no
/// further; the chunk's checksum covers the rest, and [`ChunkView::parse`] checks it whole
/// where every posting is read.
pub fn find_posting<'a>(
    payload: impl Into<Payload<'a>>,
    low: u8,
) -> Result<Option<Posting<'a>>, Damage> {
    let payload = payload.into();
    if payload.codec == Codec::Plain {
        return Ok(ChunkView::parse(payload)?.get(low));
    }
    let bad = || Damage::Format("a postings chunk is malformed".to_owned());
    let (&n, rest) = payload.bytes.split_first().ok_or_else(bad)?;
    let (n, packed) = chunk_count(n, payload.codec).ok_or_else(bad)?;
    // The term's place among the chunk's, and where the postings begin.
    let (at, data) = if n < 8 {
        let lows = rest.get(..n).ok_or_else(bad)?;
        if lows.windows(2).any(|w| w[0] >= w[1]) || lows[n - 1] >= 64 {
            return Err(bad());
        }
        match lows.binary_search(&low) {
            Ok(i) => (i, &rest[n..]),
            Err(_) => return Ok(None),
        }
    } else {
        let m = rest.get(..8).ok_or_else(bad)?;
        let mask = u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]]);
        if mask.count_ones() as usize != n {
            return Err(bad());
        }
        if low >= 64 || mask >> low & 1 == 0 {
            return Ok(None);
        }
        (
            (mask & ((1u64 << low) - 1)).count_ones() as usize,
            &rest[8..],
        )
    };
    if packed {
        let mut starts = [0; CHUNK_TERMS as usize + 1];
        let (base, width, rows) = packed_head(data, n, &mut starts)?;
        let rows = Payload::new(payload.codec, rows);
        return Ok(Some(packed_posting(rows, base, width, &starts, at)));
    }
    let mut r = Reader::new(data, "a postings chunk");
    let follow = payload.codec.has_version_4_forms();
    let mut prior = Prior::default();
    for _ in 0..at {
        prior = skip_rows(&mut r, First::From(prior), follow)?;
    }
    let start = r.position();
    skip_rows(&mut r, First::From(prior), follow)?;
    Ok(Some(Posting {
        payload: Payload::new(payload.codec, &data[start..r.position()]),
        first: First::From(prior),
    }))
}

/// Encodes a chunk in `codec` from its non-empty postings, ascending by low byte.
pub fn encode_chunk<'b>(
    codec: Codec,
    entries: impl Iterator<Item = (u8, &'b mut RoaringBitmap)>,
) -> Vec<u8> {
    if codec.has_version_4_forms() {
        let sets: Vec<(u8, Vec<u32>)> = entries.map(|(l, b)| (l, b.iter().collect())).collect();
        let lows: Vec<u8> = sets.iter().map(|(l, _)| *l).collect();
        let rows: Vec<&[u32]> = sets.iter().map(|(_, r)| r.as_slice()).collect();
        return encode_compact_chunk(codec, &lows, &rows, &mut Vec::new());
    }
    let mut lows = Vec::new();
    let mut ends = Vec::new();
    let mut data = Vec::new();
    // Version 3 from here on (version 4's chunks went above): no posting follows on.
    let mut prior = Prior::default();
    for (low, bitmap) in entries {
        lows.push(low);
        match codec {
            Codec::Plain => encode_posting(codec, bitmap, &mut data),
            Codec::Compact | Codec::Compact4 => {
                prior = encode_rows(bitmap, &mut data, First::From(prior), false);
            }
        }
        ends.extend_from_slice(&(data.len() as u32).to_le_bytes());
    }
    let mut out = Vec::with_capacity(9 + lows.len() * 5 + data.len());
    match codec {
        Codec::Plain => {
            out.push(lows.len() as u8);
            out.extend_from_slice(&lows);
            out.extend_from_slice(&ends);
        }
        Codec::Compact | Codec::Compact4 => compact_head(&lows, &mut out),
    }
    out.extend_from_slice(&data);
    out
}

/// A compact chunk's head: how many postings it holds, then their low bytes (fewer than 8)
/// or the mask of them.
fn compact_head(lows: &[u8], out: &mut Vec<u8>) {
    out.push(lows.len() as u8);
    if lows.len() < 8 {
        out.extend_from_slice(lows);
    } else {
        let mask = lows.iter().fold(0u64, |m, &l| m | 1 << (l & 63));
        out.extend_from_slice(&mask.to_le_bytes());
    }
}

/// [`encode`] of the rows `rows` (ascending, distinct), with no bitmap in the compact codec
/// unless roaring may be the smallest form.
pub(crate) fn encode_sorted_set(codec: Codec, rows: &[u32]) -> Vec<u8> {
    match codec {
        Codec::Plain => encode(codec, &mut rows.iter().copied().collect()),
        Codec::Compact | Codec::Compact4 => {
            let mut out = Vec::new();
            encode_sorted(rows, &mut out, First::Plain, false);
            out
        }
    }
}

/// [`encode_sorted_set`] of the rows of `runs`, each `(first, count)` (ascending, apart,
/// not empty): the same bytes, written from the runs when they are few, without listing
/// their rows (a unit that owns 10M appended rows is one run, not a 40 MB list).
pub(crate) fn encode_sorted_runs(codec: Codec, runs: &[(u32, u32)]) -> Vec<u8> {
    let rows = || runs.iter().flat_map(|&(first, n)| first..first + n);
    if codec == Codec::Plain || runs.iter().any(|&(_, n)| n == 0) {
        let rows: Vec<u32> = rows().collect();
        return encode_sorted_set(codec, &rows);
    }
    // The sizes `encode_sorted` weighs: the runs form and the list (a byte for each row
    // right after the one before it).
    let (mut runs_len, mut list, mut total) = (0usize, 0usize, 0u64);
    let mut last: Option<u32> = None;
    for &(first, n) in runs {
        let end = first + (n - 1);
        match last {
            None => {
                runs_len += varint_len(u64::from(first));
                list += varint_len(u64::from(first));
            }
            Some(l) => {
                runs_len += varint_len(u64::from(first - l - 2));
                list += varint_len(u64::from(first - l - 1));
            }
        }
        runs_len += varint_len(u64::from(n - 1));
        list += (n - 1) as usize;
        total += u64::from(n);
        last = Some(end);
    }
    runs_len += varint_len((runs.len() as u64) << 2 | 1);
    list += varint_len(total << 2);
    let mut out = Vec::new();
    // Roaring is weighed only above 64 bytes, and needs the rows: listed then.
    if runs_len >= list || runs_len > 64 {
        let rows: Vec<u32> = rows().collect();
        encode_sorted(&rows, &mut out, First::Plain, false);
        return out;
    }
    bits::put_varint(&mut out, (runs.len() as u64) << 2 | 1);
    let mut last: Option<u32> = None;
    for &(first, n) in runs {
        match last {
            None => bits::put_varint(&mut out, u64::from(first)),
            Some(l) => bits::put_varint(&mut out, u64::from(first - l - 2)),
        }
        bits::put_varint(&mut out, u64::from(n - 1));
        last = Some(first + (n - 1));
    }
    out
}

/// [`encode_chunk`] of postings given as `(low, rows)` (ascending by low byte; each posting's
/// rows ascending, distinct, not empty), with no bitmap in the compact codec unless roaring
/// may be a posting's smallest form. `data` is scratch.
pub(crate) fn encode_sorted_chunk<'r>(
    codec: Codec,
    entries: impl Iterator<Item = (u8, &'r [u32])>,
    data: &mut Vec<u8>,
) -> Vec<u8> {
    if codec == Codec::Plain {
        let mut sets: Vec<(u8, RoaringBitmap)> = entries
            .map(|(low, rows)| (low, rows.iter().copied().collect()))
            .collect();
        return encode_chunk(codec, sets.iter_mut().map(|(l, b)| (*l, b)));
    }
    let mut lows = [0u8; CHUNK_TERMS as usize];
    let mut sets = [&[][..]; CHUNK_TERMS as usize];
    let mut n = 0;
    for (low, rows) in entries {
        lows[n] = low;
        sets[n] = rows;
        n += 1;
    }
    encode_compact_chunk(codec, &lows[..n], &sets[..n], data)
}

/// A compact chunk of the postings `sets` of the terms with low bytes `lows` (ascending;
/// each posting ascending, distinct, not empty); `data` is scratch.
fn encode_compact_chunk(codec: Codec, lows: &[u8], sets: &[&[u32]], data: &mut Vec<u8>) -> Vec<u8> {
    data.clear();
    let follow = codec.has_version_4_forms();
    let mut prior = Prior::default();
    for rows in sets {
        prior = encode_sorted(rows, data, First::From(prior), follow);
    }
    let mut out = Vec::with_capacity(9 + data.len());
    compact_head(lows, &mut out);
    out.extend_from_slice(data);
    if follow && let Some(packed) = packed_chunk(lows, sets, out.len()) {
        return packed;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut b: RoaringBitmap = (0..100_000).step_by(3).chain(200_000..300_000).collect();
        let bytes = encode(Codec::Plain, &mut b);
        assert_eq!(decode(&bytes).unwrap(), b);
        assert!(decode(&bytes[..bytes.len() / 2]).is_err());
    }

    #[test]
    fn finding_one_posting_gives_what_reading_the_chunk_does() {
        // Chunks of 1 to 64 terms (the lows listed, then as a mask), postings of every form.
        for n in [1usize, 5, 7, 8, 30, 64] {
            let mut sets: Vec<(u8, RoaringBitmap)> = (0..n)
                .map(|i| {
                    let low = (i * 64 / n) as u8;
                    let base = (i as u32) * 1000;
                    let set: RoaringBitmap = match i % 3 {
                        0 => [base, base + 7].into_iter().collect(),
                        1 => (base..base + 300).collect(),
                        _ => (base..base + 5000).step_by(2).collect(),
                    };
                    (low, set)
                })
                .collect();
            for codec in [Codec::Plain, Codec::Compact, Codec::Compact4] {
                let bytes = encode_chunk(codec, sets.iter_mut().map(|(l, b)| (*l, b)));
                let p = Payload::new(codec, &bytes);
                let view = ChunkView::parse(p).unwrap();
                for low in 0..=u8::MAX {
                    assert_eq!(
                        find_posting(p, low).unwrap(),
                        view.get(low),
                        "n {n}, low {low}"
                    );
                }
                for (low, set) in &sets {
                    let found = find_posting(p, *low).unwrap().unwrap();
                    assert_eq!(&decode_posting(found).unwrap(), set);
                }
            }
        }
    }

    #[test]
    fn compact_sets_take_the_smallest_form_and_round_trip() {
        let shapes: Vec<(RoaringBitmap, u64)> = vec![
            (RoaringBitmap::new(), 0),
            ([7].into_iter().collect(), 0),
            ([3, 9, 4000, 4001, u32::MAX].into_iter().collect(), 0),
            ((100..5000).chain(9000..9100).collect(), 1),
            ((0..200_000).step_by(2).collect(), 2),
            ([0, 1, 2, u32::MAX - 1, u32::MAX].into_iter().collect(), 1),
        ];
        for (mut b, form) in shapes {
            let want = b.clone();
            let bytes = encode(Codec::Compact, &mut b);
            assert_eq!(u64::from(bytes[0] & 3), form, "{want:?}");
            let p = Payload::new(Codec::Compact, &bytes);
            assert_eq!(decode(p).unwrap(), want);
            assert_eq!(decode_posting(p).unwrap(), want);
            // Never more than roaring and its header.
            let plain = encode(Codec::Plain, &mut want.clone());
            assert!(bytes.len() <= plain.len() + 4, "{want:?}");
            for cut in 0..bytes.len() {
                assert!(decode(Payload::new(Codec::Compact, &bytes[..cut])).is_err());
            }
        }
    }

    #[test]
    fn a_set_written_from_its_runs_is_the_set_written_from_its_rows() {
        let shapes: Vec<Vec<(u32, u32)>> = vec![
            vec![],
            vec![(0, 1)],
            vec![(0, 1_000_000)],
            vec![(5, 3), (10, 1), (300, 4096)],
            vec![(0, 1), (2, 1), (4, 1)],
            // Many short runs: listed (or roaring) rather than runs.
            (0..500).map(|i| (i * 5, 2)).collect(),
            (0..40).map(|i| (i * 70_000, 60_000)).collect(),
            vec![(u32::MAX - 11, 11)],
            vec![(1, 0), (3, 2)],
        ];
        for runs in shapes {
            let rows: Vec<u32> = runs.iter().flat_map(|&(f, n)| f..f + n).collect();
            for codec in [Codec::Plain, Codec::Compact, Codec::Compact4] {
                assert_eq!(
                    encode_sorted_runs(codec, &runs),
                    encode_sorted_set(codec, &rows),
                    "{codec:?} {:?}",
                    &runs[..runs.len().min(4)]
                );
            }
        }
    }

    /// An owner or dead-row set of at most `FEW_RUNS` runs is written from its runs
    /// (`few_runs`), into the bytes its rows give; a set of more, from its rows.
    #[test]
    fn a_bitmap_of_few_runs_is_written_as_its_rows_are() {
        let shapes: Vec<Vec<(u32, u32)>> = vec![
            vec![],
            vec![(7, 1)],
            vec![(0, 10_000_000)],
            // A run across containers (65,536 rows each) is one run.
            vec![(65_530, 20), (200_000, 70_000)],
            (0..FEW_RUNS as u32).map(|i| (i * 100, 50)).collect(),
            (0..=FEW_RUNS as u32).map(|i| (i * 100, 50)).collect(),
            (0..300).map(|i| (i * 7, 1)).collect(),
            vec![(u32::MAX - 11, 12)],
        ];
        for runs in shapes {
            let mut bitmap = RoaringBitmap::new();
            for &(f, n) in &runs {
                bitmap.insert_range(f..=f + (n - 1));
            }
            let rows: Vec<u32> = bitmap.iter().collect();
            let gathered = few_runs(&bitmap);
            let to_max = bitmap.contains(u32::MAX);
            assert_eq!(
                gathered.is_some(),
                runs.len() <= FEW_RUNS && !to_max,
                "{runs:?}"
            );
            if let Some(g) = gathered {
                assert_eq!(g, runs);
            }
            for codec in [Codec::Compact, Codec::Compact4] {
                let bytes = encode(codec, &mut bitmap.clone());
                assert_eq!(bytes, encode_sorted_set(codec, &rows), "{runs:?}");
                assert_eq!(decode(Payload::new(codec, &bytes)).unwrap(), bitmap);
            }
        }
    }
    #[test]
    fn postings_decode_onto_the_rows_before_them_in_every_form() {
        // Each form (a list, ranges, roaring) after rows already held, in both codecs; a
        // posting whose rows do not all come after them is refused.
        let shapes: Vec<RoaringBitmap> = vec![
            [7000, 7009, 9000].into_iter().collect(),
            (10_000..15_000).chain(19_000..19_100).collect(),
            (20_000..220_000).step_by(2).collect(),
        ];
        for codec in [Codec::Plain, Codec::Compact, Codec::Compact4] {
            for set in &shapes {
                let mut chunk = [(3u8, set.clone())];
                let bytes = encode_chunk(codec, chunk.iter_mut().map(|(l, b)| (*l, b)));
                let posting = find_posting(Payload::new(codec, &bytes), 3)
                    .unwrap()
                    .unwrap();
                let mut rows = vec![1, 5, 6999];
                decode_posting_onto(posting, &mut rows).unwrap();
                let want: Vec<u32> = [1, 5, 6999].into_iter().chain(set.iter()).collect();
                assert_eq!(rows, want, "{codec:?}");
                let mut after = vec![set.max().unwrap()];
                assert!(
                    decode_posting_onto(posting, &mut after).is_err(),
                    "{codec:?}"
                );
            }
        }
    }

    #[test]
    fn compact_chunks_round_trip() {
        for n in [1u8, 7, 8, 64] {
            let mut sets: Vec<(u8, RoaringBitmap)> = (0..n)
                .map(|i| (i * (64 / n), (u32::from(i)..u32::from(i) * 3 + 1).collect()))
                .collect();
            let want = sets.clone();
            let bytes = encode_chunk(Codec::Compact, sets.iter_mut().map(|(l, b)| (*l, b)));
            let view = ChunkView::parse(Payload::new(Codec::Compact, &bytes)).unwrap();
            assert_eq!(view.len(), n as usize);
            for (low, b) in &want {
                assert_eq!(decode_posting(view.get(*low).unwrap()).unwrap(), *b);
            }
            let lows: Vec<u8> = view.iter().map(|(l, _)| l).collect();
            assert_eq!(lows, want.iter().map(|(l, _)| *l).collect::<Vec<_>>());
            for cut in 0..bytes.len() {
                assert!(ChunkView::parse(Payload::new(Codec::Compact, &bytes[..cut])).is_err());
            }
        }
    }

    #[test]
    fn version_4_postings_follow_on_in_a_byte_and_version_3_refuses_them() {
        // A sorted column's chunk: each term's rows are one run right after the term
        // before's. Then runs that do not follow on, a list, a roaring posting, and runs
        // after each.
        let mut follows: Vec<(u8, RoaringBitmap)> = (0..64u32)
            .map(|i| (i as u8, (1000 + i * 2..1000 + i * 2 + 2).collect()))
            .collect();
        let mut mixed: Vec<(u8, RoaringBitmap)> = vec![
            (0, (7..9).collect()),
            (1, (9..10).collect()),
            (2, [12, 40].into_iter().collect()),
            (3, (41..50).collect()),
            (4, (50..200_050).step_by(2).collect()),
            (5, (200_050..200_060).collect()),
            (6, (200_060..200_061).collect()),
            (7, [u32::MAX].into_iter().collect()),
            (8, (5..6).collect()),
        ];
        for (sets, form3) in [(&mut follows, 63), (&mut mixed, 3)] {
            let want = sets.clone();
            let bytes = encode_chunk(Codec::Compact4, sets.iter_mut().map(|(l, b)| (*l, b)));
            let p = Payload::new(Codec::Compact4, &bytes);
            let view = ChunkView::parse(p).unwrap();
            let mut found = 0;
            for (low, set) in &want {
                let posting = view.get(*low).unwrap();
                assert_eq!(find_posting(p, *low).unwrap(), Some(posting));
                assert_eq!(&decode_posting(posting).unwrap(), set, "low {low}");
                let mut onto = vec![0];
                decode_posting_onto(posting, &mut onto).unwrap();
                assert_eq!(onto[1..], set.iter().collect::<Vec<_>>());
                found += usize::from(posting.payload.bytes[0] & 3 == 3);
            }
            assert_eq!(found, form3);
            for cut in 0..bytes.len() {
                assert!(ChunkView::parse(Payload::new(Codec::Compact4, &bytes[..cut])).is_err());
            }
            // A version 3 file may not hold form 3, and writes the chunk without it.
            assert!(ChunkView::parse(Payload::new(Codec::Compact, &bytes)).is_err());
            let mut again = want.clone();
            let v3 = encode_chunk(Codec::Compact, again.iter_mut().map(|(l, b)| (*l, b)));
            let v3 = ChunkView::parse(Payload::new(Codec::Compact, &v3)).unwrap();
            assert!(v3.iter().all(|(_, p)| p.payload.bytes[0] & 3 != 3));
        }
        // 64 postings that follow on: the mask, the first posting (3 bytes), then a byte each.
        let bytes = encode_chunk(Codec::Compact4, follows.iter_mut().map(|(l, b)| (*l, b)));
        assert_eq!(bytes.len(), 1 + 8 + 4 + 63);
        // The sorted encoder gives the same bytes.
        let rows: Vec<(u8, Vec<u32>)> = follows
            .iter()
            .map(|(l, b)| (*l, b.iter().collect()))
            .collect();
        let sorted = encode_sorted_chunk(
            Codec::Compact4,
            rows.iter().map(|(l, r)| (*l, r.as_slice())),
            &mut Vec::new(),
        );
        assert_eq!(sorted, bytes);
        // Form 3 needs a posting before it: on its own, or first in a chunk, it is damage.
        assert!(decode(Payload::new(Codec::Compact4, &[2 << 2 | 3])).is_err());
        assert!(ChunkView::parse(Payload::new(Codec::Compact4, &[1, 0, 2 << 2 | 3])).is_err());
    }

    #[test]
    fn version_4_chunks_of_spread_rows_are_packed_and_read_as_the_varints_would_be() {
        // 64 terms, each in 1 to 4 rows spread over 10M (the integer pairs' targets).
        let mut sets: Vec<(u8, RoaringBitmap)> = (0..64u32)
            .map(|i| {
                let rows = (0..1 + i % 4).map(|k| (i * 7_919 + k * 2_750_159) % 10_000_000);
                (i as u8, rows.collect())
            })
            .collect();
        let want = sets.clone();
        let bytes = encode_chunk(Codec::Compact4, sets.iter_mut().map(|(l, b)| (*l, b)));
        assert_eq!(bytes[0], 0x80 | 64, "packed");
        let v3 = encode_chunk(Codec::Compact, sets.iter_mut().map(|(l, b)| (*l, b)));
        assert!(
            bytes.len() < v3.len(),
            "{} against {}",
            bytes.len(),
            v3.len()
        );
        let rows: Vec<(u8, Vec<u32>)> =
            want.iter().map(|(l, b)| (*l, b.iter().collect())).collect();
        let sorted = encode_sorted_chunk(
            Codec::Compact4,
            rows.iter().map(|(l, r)| (*l, r.as_slice())),
            &mut Vec::new(),
        );
        assert_eq!(sorted, bytes);
        let p = Payload::new(Codec::Compact4, &bytes);
        let view = ChunkView::parse(p).unwrap();
        assert_eq!(view.len(), 64);
        for low in 0..=u8::MAX {
            assert_eq!(find_posting(p, low).unwrap(), view.get(low), "low {low}");
        }
        for (low, set) in &want {
            let posting = view.get(*low).unwrap();
            assert_eq!(&decode_posting(posting).unwrap(), set);
            let mut onto = Vec::new();
            decode_posting_onto(posting, &mut onto).unwrap();
            assert_eq!(onto, set.iter().collect::<Vec<_>>());
        }
        for cut in 0..bytes.len() {
            assert!(ChunkView::parse(Payload::new(Codec::Compact4, &bytes[..cut])).is_err());
        }
        // A version 3 file may not hold a packed chunk.
        assert!(ChunkView::parse(Payload::new(Codec::Compact, &bytes)).is_err());
        // Rows out of order within a posting, or a count of 0, are damage, never a panic.
        let mut bad = bytes.clone();
        let at = 1 + 8 + 4;
        bad[at] = 0;
        assert!(ChunkView::parse(Payload::new(Codec::Compact4, &bad)).is_err());
        // One posting (low 0), base 0, 8 bits a row, 2 rows: 5 then 3.
        let swapped = [0x80 | 1, 0, 0, 8, 2, 5, 3];
        let view = ChunkView::parse(Payload::new(Codec::Compact4, &swapped)).unwrap();
        assert!(decode_posting(view.get(0).unwrap()).is_err());
        let sorted = [0x80 | 1, 0, 0, 8, 2, 3, 5];
        let view = ChunkView::parse(Payload::new(Codec::Compact4, &sorted)).unwrap();
        let rows: Vec<u32> = decode_posting(view.get(0).unwrap())
            .unwrap()
            .iter()
            .collect();
        assert_eq!(rows, [3, 5]);
        // A base that overflows with its rows.
        let high = [0x80 | 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 8, 1, 9];
        let view = ChunkView::parse(Payload::new(Codec::Compact4, &high)).unwrap();
        assert!(decode_posting(view.get(0).unwrap()).is_err());
        // Runs stay varints: a chunk packs only where that is smaller.
        let mut runs: Vec<(u8, RoaringBitmap)> = (0..64u32)
            .map(|i| (i as u8, (i * 10..i * 10 + 9).collect()))
            .collect();
        let bytes = encode_chunk(Codec::Compact4, runs.iter_mut().map(|(l, b)| (*l, b)));
        assert_eq!(bytes[0], 64);
    }

    #[test]
    fn chunks_round_trip() {
        let mut small: RoaringBitmap = [3, 9, 4000].into_iter().collect();
        let mut big: RoaringBitmap = (0..1000).collect();
        let mut one: RoaringBitmap = [7].into_iter().collect();
        let (s, b, o) = (small.clone(), big.clone(), one.clone());
        let bytes = encode_chunk(
            Codec::Plain,
            [(0, &mut small), (5, &mut big), (63, &mut one)].into_iter(),
        );
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
