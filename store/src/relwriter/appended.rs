//! The rows a batch appends to a relation, as its writer gathers them and [`Encode::run`]
//! turns them into postings: each column's terms in row order ([`Appended`]; the rows are
//! consecutive, so a row is its place in the list), and the units that state them
//! ([`NewOwners`]).
//!
//! [`Encode::run`]: super::Encode::run

use rustc_hash::FxHashMap;

use super::{ChunkCache, Key3};
use crate::error::{Result, damaged};
use crate::index;
use crate::seal::Seal;
use crate::shrinking::Shrinking;

/// The owners of rows appended to a relation that held none before this batch (so no unit
/// has owners stored), as runs of consecutive rows, `(unit, first row, rows)`: a run grows
/// while its unit's rows come one after another (a dump without units is one run). Grouped
/// by unit once, in [`super::Encode::run`], rather than a bitmap looked up for each row.
#[derive(Default)]
pub(crate) struct NewOwners {
    runs: Vec<(u32, u32, u32)>,
    /// Each unit's last run, by its place in `runs`.
    last: FxHashMap<u32, usize>,
}

impl NewOwners {
    /// Notes that `unit` states `row`, appended after every row noted before.
    pub(crate) fn push(&mut self, unit: u32, row: u32) {
        let at = match self.runs.last() {
            Some(&(u, _, _)) if u == unit => Some(self.runs.len() - 1),
            _ => self.last.get(&unit).copied(),
        };
        if let Some(i) = at {
            let run = &mut self.runs[i];
            if u64::from(run.1) + u64::from(run.2) == u64::from(row) {
                run.2 += 1;
                return;
            }
        }
        self.last.insert(unit, self.runs.len());
        self.runs.push((unit, row, 1));
    }

    /// Notes that `unit` states the `n` rows from `first` on, appended after every row noted
    /// before.
    pub(crate) fn push_run(&mut self, unit: u32, first: u32, n: u32) {
        if n == 0 {
            return;
        }
        self.push(unit, first);
        if let Some(i) = self.last.get(&unit).copied() {
            self.runs[i].2 += n - 1;
        }
    }

    /// Each unit with its rows as runs `(first, count)`, ascending by unit; `each` takes the
    /// unit and its runs (ascending, apart: runs that touch are joined).
    pub(crate) fn each_unit(
        self,
        mut each: impl FnMut(u32, &[(u32, u32)]) -> Result<()>,
    ) -> Result<()> {
        let mut runs = self.runs;
        // Stable: each unit's runs stay in the order its rows were appended.
        runs.sort_by_key(|&(u, _, _)| u);
        let mut joined: Vec<(u32, u32)> = Vec::new();
        for group in runs.chunk_by(|a, b| a.0 == b.0) {
            joined.clear();
            for &(_, first, n) in group {
                match joined.last_mut() {
                    Some((f, m)) if u64::from(*f) + u64::from(*m) == u64::from(first) => *m += n,
                    Some((f, m)) if u64::from(*f) + u64::from(*m) > u64::from(first) => {
                        return Err(damaged("appended rows out of order"));
                    }
                    _ => joined.push((first, n)),
                }
            }
            each(group[0].0, &joined)?;
        }
        Ok(())
    }
}

/// One column's appended rows as postings: the new postings of each chunk the flush changed
/// no other way, encoded, with how many terms each holds, in pieces ascending by key; and,
/// for chunks a removal changed (cached, `dirty`), the new rows of each term, to merge into
/// the cached chunk, ascending by chunk.
pub(crate) struct ColumnPostings {
    pub(crate) added: Vec<AddedChunks>,
    pub(crate) merge: Vec<(u32, NewRows)>,
}

/// Chunks of new postings, each sealed, ascending by key, their bytes back to back in one
/// buffer. One allocation, not one a chunk: the chunks are encoded on the columns' threads and
/// let go of on the writer's, and glibc keeps small blocks freed that way in the encoding
/// thread's arena, where nothing later in the process reuses them (10M integer pairs left
/// 87 MB so, against a few MB as one buffer, which is given back whole).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct AddedChunks {
    bytes: Vec<u8>,
    /// Each chunk's key, where its bytes end, and how many postings it holds.
    chunks: Vec<(Key3, usize, usize)>,
}

impl AddedChunks {
    /// Adds a chunk after every one added before (its key larger than theirs).
    pub(crate) fn push(&mut self, key: Key3, sealed: &[u8], terms: usize) {
        debug_assert!(self.chunks.last().is_none_or(|&(k, _, _)| k < key));
        self.bytes.extend_from_slice(sealed);
        self.chunks.push((key, self.bytes.len(), terms));
    }

    /// Each chunk, ascending by key: its key, sealed bytes and how many postings it holds.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Key3, &[u8], usize)> {
        let starts = std::iter::once(0).chain(self.chunks.iter().map(|&(_, end, _)| end));
        self.chunks
            .iter()
            .zip(starts)
            .map(|(&(key, end, terms), start)| (key, &self.bytes[start..end], terms))
    }
}

/// A chunk's new rows: each term's, by its low byte.
pub(crate) type NewRows = Vec<(u8, Vec<u32>)>;

/// The postings of the rows appended to column `col` of relation `rel`: `terms` holds the
/// column's term of each row, the first row being `first`. `chunks` holds the chunks read or
/// changed this batch. A column out of order is sorted and encoded in `parts` ranges of
/// chunks, a thread each when more than one.
pub(crate) fn column_postings(
    seal: Seal,
    (rel, col): (u32, u16),
    terms: Vec<u32>,
    first: u32,
    chunks: &FxHashMap<(u16, u32), ChunkCache>,
    parts: usize,
) -> Result<ColumnPostings> {
    let row = |i: usize| -> Result<u64> {
        u32::try_from(i)
            .ok()
            .and_then(|i| first.checked_add(i))
            .map(u64::from)
            .ok_or_else(|| damaged("an appended row is past the last row id"))
    };
    // Each term's rows ascending: the pairs `term << 32 | row` ascending.
    let parts = parts.max(1);
    if terms.is_sorted() {
        // A clustered column (an edge dump's sources, sorted): in order as it is, cut into
        // `parts` ranges of whole chunks, a thread each when more than one.
        let ranges = sorted_ranges(&terms, parts);
        let one = |range: std::ops::Range<usize>| {
            let mut i = range.start;
            let next = || {
                if i == range.end {
                    return Ok(None);
                }
                let p = u64::from(terms[i]) << 32 | row(i)?;
                i += 1;
                Ok(Some(p))
            };
            postings_of(seal, rel, col, next, chunks)
        };
        let done: Vec<Result<ColumnPostings>> = if ranges.len() == 1 {
            ranges.into_iter().map(one).collect()
        } else {
            super::on_threads(ranges, one)
        };
        return joined(done);
    }
    // Each part's first term (a chunk's first), for parts 1 ..
    let bounds = split_terms(&terms, parts);
    // Taken from the end, giving memory back as the pairs grow (the terms and their pairs
    // are never both held whole).
    // Room for each part's share, and a sixteenth more where a sample set the shares.
    let room = match parts {
        1 => terms.len(),
        _ => terms.len() / parts + terms.len() / 16,
    };
    let mut pieces: Vec<Vec<u64>> = (0..parts).map(|_| Vec::with_capacity(room)).collect();
    let mut terms = Shrinking::new(terms);
    while let Some(t) = terms.pop() {
        let part = bounds.partition_point(|&b| b <= t);
        pieces[part].push(u64::from(t) << 32 | row(terms.len())?);
    }
    drop(terms);
    let one = |mut pairs: Vec<u64>| {
        // Descending, to be taken from the end (ascending) while the postings grow, giving
        // memory back as they do.
        sort_pairs_descending(&mut pairs, parts);
        let mut pairs = Shrinking::new(pairs);
        let next = || Ok(pairs.pop());
        postings_of(seal, rel, col, next, chunks)
    };
    let done: Vec<Result<ColumnPostings>> = if parts == 1 {
        pieces.into_iter().map(one).collect()
    } else {
        super::on_threads(pieces, one)
    };
    joined(done)
}

/// The postings of a stored column built anew, for an index declared on a relation stored
/// without it: `terms` holds the column's term of each row from row 0, `dead` the rows no
/// longer live, which get none. Encoded in `parts` ranges of chunks, a thread each when more
/// than one; the chunks ascend by key.
pub(crate) fn rebuilt_postings(
    seal: Seal,
    (rel, col): (u32, u16),
    terms: Vec<u32>,
    dead: &roaring::RoaringBitmap,
    parts: usize,
) -> Result<Vec<AddedChunks>> {
    let none = FxHashMap::default();
    if dead.is_empty() {
        return Ok(column_postings(seal, (rel, col), terms, 0, &none, parts)?.added);
    }
    // Each live row's pair, `term << 32 | row`, ascending.
    let mut pairs: Vec<u64> = (0u32..)
        .zip(terms)
        .filter(|&(row, _)| !dead.contains(row))
        .map(|(row, t)| u64::from(t) << 32 | u64::from(row))
        .collect();
    pairs.sort_unstable();
    let mut pairs = pairs.into_iter();
    let next = || Ok(pairs.next());
    Ok(postings_of(seal, rel, col, next, &none)?.added)
}

/// A first column's postings encoded on a thread of its own as its terms are appended, for
/// a relation that held no row before the flush and whose rows all come in ascending
/// order through [`super::RelWriter::append_new`]: the encoding uses the core the append
/// leaves idle, instead of following it.
pub(crate) struct Streamed {
    terms: std::sync::mpsc::Sender<Vec<u32>>,
    done: std::thread::JoinHandle<Result<ColumnPostings>>,
    /// The last term sent.
    last: Option<u32>,
    /// How many rows were sent.
    rows: usize,
}

impl Streamed {
    /// Starts the thread, for rows from `first` on of column 0 of relation `rel`.
    pub(crate) fn start(seal: Seal, rel: u32, first: u32) -> Option<Streamed> {
        let (terms, slices) = std::sync::mpsc::channel::<Vec<u32>>();
        let done = std::thread::Builder::new()
            .name("strata-postings".to_owned())
            .spawn(move || {
                let none = FxHashMap::default();
                let (mut slice, mut i, mut row) = (Vec::new(), 0usize, u64::from(first));
                let next = || loop {
                    if let Some(&t) = slice.get(i) {
                        let p = u64::from(t) << 32 | row;
                        (i, row) = (i + 1, row + 1);
                        return Ok(Some(p));
                    }
                    match slices.recv() {
                        Ok(s) => (slice, i) = (s, 0),
                        Err(_) => return Ok(None),
                    }
                };
                postings_of(seal, rel, 0, next, &none)
            })
            .ok()?;
        Some(Streamed {
            terms,
            done,
            last: None,
            rows: 0,
        })
    }

    /// Sends the next appended rows' terms; false (nothing sent) when they do not ascend
    /// from those sent before.
    pub(crate) fn send(&mut self, terms: &[u32]) -> bool {
        let ascends = terms
            .first()
            .is_none_or(|&t| self.last.is_none_or(|l| l <= t))
            && terms.is_sorted();
        if !ascends || self.terms.send(terms.to_vec()).is_err() {
            return false;
        }
        self.last = terms.last().copied().or(self.last);
        self.rows += terms.len();
        true
    }

    /// The postings, once every one of the column's `rows` appended rows was sent; `None`
    /// when not all were (they are encoded from the column's terms instead).
    pub(crate) fn finish(self, rows: usize) -> Option<Result<ColumnPostings>> {
        let complete = self.rows == rows;
        drop(self.terms);
        let done = self
            .done
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        complete.then_some(done)
    }
}

/// The postings of ranges of chunks, ascending, as one.
fn joined(done: Vec<Result<ColumnPostings>>) -> Result<ColumnPostings> {
    let mut out = ColumnPostings {
        added: Vec::new(),
        merge: Vec::new(),
    };
    for piece in done {
        let piece = piece?;
        out.added.extend(piece.added);
        out.merge.extend(piece.merge);
    }
    Ok(out)
}

/// `terms`, ascending, cut into at most `parts` ranges of about as many rows, each of whole
/// chunks (a chunk's terms are never in two).
fn sorted_ranges(terms: &[u32], parts: usize) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::with_capacity(parts);
    let mut start = 0;
    for k in 1..parts {
        let mut cut = (k * terms.len() / parts).max(start);
        // On to the first term of the next chunk.
        let chunk = |i: usize| terms.get(i).map(|&t| index::chunk_of(t).0);
        while cut > 0 && cut < terms.len() && chunk(cut) == chunk(cut - 1) {
            cut += 1;
        }
        if cut > start && cut < terms.len() {
            ranges.push(start..cut);
            start = cut;
        }
    }
    ranges.push(start..terms.len());
    ranges
}

/// Where to split `terms` into `parts` ranges of about as many rows, each of whole chunks:
/// the first term of each range after the first, ascending (from a sample of the terms).
fn split_terms(terms: &[u32], parts: usize) -> Vec<u32> {
    if parts <= 1 || terms.is_empty() {
        return Vec::new();
    }
    let step = (terms.len() / 4096).max(1);
    let mut sample: Vec<u32> = terms.iter().step_by(step).copied().collect();
    sample.sort_unstable();
    let mut bounds: Vec<u32> = (1..parts)
        .map(|k| sample[k * sample.len() / parts] & !(index::CHUNK_TERMS - 1))
        .collect();
    bounds.dedup();
    bounds
}

/// [`column_postings`] of the pairs `next` hands out, `term << 32 | row`, ascending.
fn postings_of(
    seal: Seal,
    rel: u32,
    col: u16,
    mut next: impl FnMut() -> Result<Option<u64>>,
    chunks: &FxHashMap<(u16, u32), ChunkCache>,
) -> Result<ColumnPostings> {
    let mut added = AddedChunks::default();
    let mut merge = Vec::new();
    let (mut rows, mut data) = (Vec::new(), Vec::new());
    let mut terms: Vec<(u8, usize, usize)> = Vec::new();
    let mut first = next()?;
    while let Some(p) = first {
        let chunk = index::chunk_of((p >> 32) as u32).0;
        // Each term's rows of the chunk, one after another in `rows`: (low byte, start, end).
        rows.clear();
        terms.clear();
        let mut current = Some(p);
        while let Some(p) = current {
            let term = (p >> 32) as u32;
            if index::chunk_of(term).0 != chunk {
                break;
            }
            let start = rows.len();
            while let Some(q) = current {
                if (q >> 32) as u32 != term {
                    break;
                }
                rows.push(q as u32);
                current = next()?;
            }
            if !rows[start..].is_sorted_by(|a, b| a < b) {
                return Err(damaged("appended rows out of order"));
            }
            terms.push((index::chunk_of(term).1, start, rows.len()));
        }
        first = current;
        let postings = terms.iter().map(|&(low, a, b)| (low, &rows[a..b]));
        if chunks.get(&(col, chunk)).is_some_and(|c| c.dirty) {
            // A chunk a removal changed: merged into it, whole, by the caller.
            merge.push((chunk, postings.map(|(l, r)| (l, r.to_vec())).collect()));
        } else {
            // Its new postings, to merge with what is stored when written
            // ([`super::Encoded::write`]).
            let bytes = index::encode_sorted_chunk(seal.codec, postings, &mut data);
            let bytes = index::seal_chunk(seal, (rel, col, chunk), bytes);
            added.push((rel, col, chunk), &bytes, terms.len());
        }
    }
    Ok(ColumnPostings {
        added: vec![added],
        merge,
    })
}

/// Above this many pairs in all, they are sorted in place: the radix sort's second buffer (8
/// bytes a pair) would add 64 MiB or more to the peak of a large flush.
const RADIX_PAIRS_MAX: usize = 1 << 23;

/// Sorts pairs `key << 32 | row`, given in descending order of row, descending: so that
/// taken from the end, the keys ascend and each key's rows ascend. `pairs` is one of `parts`
/// sorted at once, of about as many pairs each.
fn sort_pairs_descending(pairs: &mut Vec<u64>, parts: usize) {
    if pairs.len().saturating_mul(parts) > RADIX_PAIRS_MAX {
        pairs.sort_unstable_by(|a, b| b.cmp(a));
    } else {
        // Stable, by key descending: each key's rows stay in their (descending) order.
        strata_eval::internals::radix::sort_by_key(pairs, |p| !p >> 32);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::layout::Codec;

    const SEAL: Seal = Seal {
        on: true,
        codec: Codec::Compact,
        parted: false,
        declared_indexes: false,
    };

    /// Each term's rows, from a column's encoded postings.
    fn decoded(p: &ColumnPostings, col: u16) -> BTreeMap<u32, Vec<u32>> {
        assert!(p.merge.is_empty());
        let added = || p.added.iter().flat_map(AddedChunks::iter);
        assert!(added().is_sorted_by_key(|(k, _, _)| k));
        let mut out = BTreeMap::new();
        for (key, bytes, n) in added() {
            assert_eq!(key.1, col);
            let view =
                index::ChunkView::parse(index::open_chunk(SEAL, key, bytes, "r").unwrap()).unwrap();
            let mut terms = 0;
            for (low, posting) in view.iter() {
                let rows = index::decode_posting(posting).unwrap();
                out.insert(key.2 << 6 | u32::from(low), rows.iter().collect());
                terms += 1;
            }
            assert_eq!(terms, n);
        }
        out
    }

    /// Every chunk of a column's new postings, in order: its key, sealed bytes and how many
    /// postings it holds.
    fn chunks(p: &ColumnPostings) -> Vec<(Key3, Vec<u8>, usize)> {
        let added = p.added.iter().flat_map(AddedChunks::iter);
        added.map(|(k, b, n)| (k, b.to_vec(), n)).collect()
    }

    /// `n` terms below `modulo`, in no order.
    fn spread(n: usize, modulo: u32, mut x: u32) -> Vec<u32> {
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 6) % modulo
            })
            .collect()
    }

    #[test]
    fn a_columns_postings_are_its_terms_rows_in_order_or_not() {
        let first = 4090;
        let spread = spread(20_000, 3000, 12345);
        let mut sorted = spread.clone();
        sorted.sort_unstable();
        for terms in [spread, sorted, Vec::new()] {
            let mut want: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            for (i, &t) in terms.iter().enumerate() {
                want.entry(t).or_default().push(first + i as u32);
            }
            let got = column_postings(SEAL, (7, 1), terms, first, &FxHashMap::default(), 2);
            assert_eq!(decoded(&got.unwrap(), 1), want);
        }
    }

    #[test]
    fn a_column_encoded_in_parts_gives_the_chunks_it_does_whole() {
        let terms = spread(200_000, 70_000, 99);
        let none = FxHashMap::default();
        let whole = column_postings(SEAL, (7, 1), terms.clone(), 3, &none, 1).unwrap();
        assert_eq!(whole.added.len(), 1);
        for parts in [2, 3] {
            let split = column_postings(SEAL, (7, 1), terms.clone(), 3, &none, parts).unwrap();
            assert_eq!(split.added.len(), parts);
            assert_eq!(chunks(&split), chunks(&whole));
        }
        // A term that splits lies on a chunk's first term: no chunk is in two parts.
        for parts in 2..6 {
            let bounds = split_terms(&terms, parts);
            assert!(bounds.iter().all(|b| b % index::CHUNK_TERMS == 0));
            assert!(bounds.is_sorted_by(|a, b| a < b));
        }
    }

    #[test]
    fn a_sorted_column_encoded_in_parts_gives_the_chunks_it_does_whole() {
        // Ascending terms, one of them (1000) with 50,000 rows across where a cut would fall.
        let mut terms = spread(100_000, 5_000, 7);
        terms.extend(std::iter::repeat_n(1000, 50_000));
        terms.sort_unstable();
        let none = FxHashMap::default();
        let whole = column_postings(SEAL, (7, 0), terms.clone(), 11, &none, 1).unwrap();
        assert_eq!(whole.added.len(), 1);
        for parts in [2, 3, 7] {
            let split = column_postings(SEAL, (7, 0), terms.clone(), 11, &none, parts).unwrap();
            assert!(split.added.len() > 1, "{parts}");
            assert_eq!(chunks(&split), chunks(&whole), "{parts}");
        }
        // Every range is of whole chunks, and together they cover the terms once.
        for (terms, parts) in [
            (terms, 4),
            (vec![5; 1000], 3),
            (Vec::new(), 2),
            (vec![1, 70], 5),
        ] {
            let ranges = sorted_ranges(&terms, parts);
            assert!(ranges.len() <= parts);
            assert_eq!(ranges.first().map(|r| r.start), Some(0));
            assert_eq!(ranges.last().map(|r| r.end), Some(terms.len()));
            for w in ranges.windows(2) {
                assert_eq!(w[0].end, w[1].start);
                let (a, b) = (terms[w[0].end - 1], terms[w[1].start]);
                assert_ne!(index::chunk_of(a).0, index::chunk_of(b).0);
            }
        }
    }

    #[test]
    fn a_chunk_a_removal_changed_gets_its_new_rows_to_merge() {
        let mut chunks = FxHashMap::default();
        let dirty = ChunkCache {
            dirty: true,
            ..ChunkCache::default()
        };
        chunks.insert((0u16, 1u32), dirty);
        let terms = vec![64, 3, 65, 64];
        let got = column_postings(SEAL, (7, 0), terms, 10, &chunks, 2).unwrap();
        assert_eq!(got.merge, vec![(1, vec![(0, vec![10, 13]), (1, vec![12])])]);
        let added: Vec<Key3> = got
            .added
            .iter()
            .flat_map(AddedChunks::iter)
            .map(|(k, _, _)| k)
            .collect();
        assert_eq!(added, vec![(7, 0, 0)]);
    }

    #[test]
    fn new_owners_keep_each_units_rows_as_runs() {
        let mut owners = NewOwners::default();
        // Unit 0 holds rows 0..1000 and 1500..2000; unit 5 every third row of 1000..1500,
        // unit 2 the rest of them.
        for r in 0..1000 {
            owners.push(0, r);
        }
        for r in 1000..1500 {
            owners.push(if r % 3 == 0 { 5 } else { 2 }, r);
        }
        for r in 1500..2000 {
            owners.push(0, r);
        }
        assert!(owners.runs.len() < 700, "{} runs", owners.runs.len());
        // Runs noted whole join the run they follow.
        owners.push_run(0, 2000, 100);
        owners.push_run(5, 2100, 0);
        owners.push_run(0, 2100, 50);
        assert_eq!(owners.runs.last(), Some(&(0, 1500, 650)));
        let mut got = Vec::new();
        owners
            .each_unit(|u, runs| {
                let rows: Vec<u32> = runs.iter().flat_map(|&(f, n)| f..f + n).collect();
                got.push((u, rows));
                Ok(())
            })
            .unwrap();
        let zero: Vec<u32> = (0..1000).chain(1500..2150).collect();
        let five: Vec<u32> = (1000..1500).filter(|r| r % 3 == 0).collect();
        let two: Vec<u32> = (1000..1500).filter(|r| r % 3 != 0).collect();
        assert_eq!(got, vec![(0, zero), (2, two), (5, five)]);
    }
}
