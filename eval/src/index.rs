//! Indexes of in-memory relations: for a set of bound columns, the tuples holding each
//! combination of values, as entries ascending by id (for a binary relation keyed on one
//! column, an entry also carries the other column's term).
//!
//! A relation that still grows (one of the stratum being evaluated) keeps, per key, a list
//! of entries appended to as tuples arrive: in a slot per term when the column's terms are
//! dense, else in a hash map from the packed key. A settled relation (a base relation read
//! into memory, or one of a lower stratum) never changes again, so an index on one of its
//! columns is laid out in term order (radix-sorted): the entries grouped by term, found
//! through a bitmap of the terms present with a running count every 64 terms (a rank), so a
//! term costs one read of its bitmap word and one of its offsets whether the terms are dense
//! (graph node ids) or sparse (one variable in ten). Probes made in key order (a delta
//! sorted by the joined column) then read memory in order, as a merge join would.

use std::ops::Range;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::value::Term;

/// The most columns an index key packs; further bound columns are checked tuple by tuple.
pub const KEY_COLUMNS: usize = 4;

/// A set of bound columns, as a bit mask (bit `c` for column `c`).
pub type Mask = u64;

/// The bound columns an index on `mask` keys on: the first [`KEY_COLUMNS`] of them.
pub fn key_columns(mask: Mask) -> Vec<usize> {
    (0..64)
        .filter(|c| mask & (1 << c) != 0)
        .take(KEY_COLUMNS)
        .collect()
}

/// Packs the values of up to four columns into one key.
pub fn pack(values: impl Iterator<Item = Term>) -> u128 {
    values.fold(0u128, |k, t| k << 32 | u128::from(t.0))
}

/// A growing relation's direct index may span this many times its tuples (plus a small
/// constant): its slots then cost at most a few words a tuple.
const DENSE_SPREAD: usize = 2;

/// At least this many tuples added to a direct index at once are added in term order.
const SORTED_INSERT: usize = 1 << 12;

/// A settled relation's ranked index is built when the column's terms span at most this
/// many times the tuples (plus a small constant): its bitmap and ranks (12 bytes per 64
/// terms) then cost at most 6 bytes a tuple, less than a hash map's entry.
const RANK_SPREAD: usize = 32;

/// One tuple in an index's list: its id, and for a relation of two columns keyed on one,
/// the other column's term (0 otherwise). A join over a binary relation then binds from
/// the index alone and never fetches the tuple, which would be a cache miss per candidate.
pub(crate) type Entry = [u32; 2];

/// The entries of one key in a hash or direct index (two held inline: most keys have few).
type Ids = SmallVec<[Entry; 2]>;

/// The entry of tuple `id` (`tuple`) in an index keyed on `columns`.
fn entry(id: u32, tuple: &[Term], columns: &[usize]) -> Entry {
    match (tuple, columns) {
        ([_, b], [0]) => [id, b.0],
        ([a, _], [1]) => [id, a.0],
        _ => [id, 0],
    }
}

/// For a relation of `arity` columns and an index on `mask`: the column whose term each
/// entry carries, if any.
pub(crate) fn paired_column(arity: usize, mask: Mask) -> Option<usize> {
    match (arity, mask) {
        (2, 0b01) => Some(1),
        (2, 0b10) => Some(0),
        _ => None,
    }
}

/// An index on some bound columns of one relation.
#[derive(Debug)]
pub(crate) enum Index {
    /// Packed key to ascending ids; kept current as tuples are added.
    Hash {
        /// The key's columns.
        columns: Vec<usize>,
        /// The entries of each key.
        map: FxHashMap<u128, Ids>,
    },
    /// One column of a growing relation whose terms are dense: the ids of term `base + i`
    /// are `slots[i]`, the slots growing as terms arrive; a term too far past the others,
    /// or of another kind, turns the index into a hash one.
    Direct {
        /// The key's column.
        column: usize,
        /// The first term of the kind the column holds (see [`kind_base`]).
        base: u32,
        /// The entries of each term, by its offset from `base`.
        slots: Vec<Ids>,
    },
    /// One column of a settled relation: term `lo + i` is present when bit `i % 64` of
    /// `words[i / 64].0` is set; its rank `r` (the terms present before it) is
    /// `words[i / 64].1` plus the bits set below it in that word, and its entries are
    /// `ids[offsets[r]..offsets[r + 1]]`, ascending.
    Dense {
        /// The smallest term of the column.
        lo: u32,
        /// Per 64 terms: which are present, and how many are present before them.
        words: Vec<(u64, u32)>,
        /// Where each present term's ids start, in term order (one more entry than terms).
        offsets: Vec<u32>,
        /// Every entry, grouped by term in term order.
        ids: Vec<Entry>,
    },
}

/// The first term of `t`'s kind: texts, numbers and integers each fill a range of their
/// own from there, densely (dictionary ids, graph node numbers).
fn kind_base(t: u32) -> u32 {
    match t >> 30 {
        0 | 1 => 0,
        2 => 0x8000_0000,
        _ => 0xC000_0000,
    }
}

/// Whether a direct index over `tuples` tuples may reach offset `i`: its slots then cost at
/// most a few words a tuple.
fn direct_fits(i: u32, tuples: usize) -> bool {
    (i as usize) < DENSE_SPREAD * 2 * tuples + (1 << 16)
}

/// The direct-index entries of tuples `ids` keyed on column `c`, each with its term's
/// offset from `base`, or None when a term is of another kind or too far out (a tuple's
/// `reach`: the tuples the index would then hold, by which [`direct_fits`] judges it).
fn direct_entries<'t>(
    ids: impl Iterator<Item = u32>,
    tuple: impl Fn(u32) -> &'t [Term],
    c: usize,
    base: u32,
    reach: impl Fn(u32) -> usize,
) -> Option<Vec<(u32, Entry)>> {
    ids.map(|id| {
        let t = tuple(id)[c].0;
        (kind_base(t) == base && direct_fits(t - base, reach(id)))
            .then(|| (t - base, entry(id, tuple(id), &[c])))
    })
    .collect()
}

/// Sorts `(term, entry)` pairs by term, stably (a term's ids stay ascending), with a radix
/// sort that reads and writes memory in order; pairs already in order (a column often is)
/// are left as they are.
fn sort_by_term(order: &mut Vec<(u32, Entry)>) {
    if !order.is_sorted_by_key(|e| e.0) {
        crate::radix::sort_by_key(order, |e| u64::from(e.0));
    }
}

/// Appends each `(offset, entry)` of `order` to slot `offset`, in offset order, so the slots
/// are written front to back rather than at random.
fn fill_slots(slots: &mut Vec<Ids>, mut order: Vec<(u32, Entry)>) {
    sort_by_term(&mut order);
    if let Some(&(last, _)) = order.last()
        && slots.len() <= last as usize
    {
        slots.resize_with(last as usize + 1, Ids::new);
    }
    for (i, e) in order {
        slots[i as usize].push(e);
    }
}

impl Index {
    /// The index on `mask` over `tuples` (`arity` terms each); dense
    /// when the relation is `settled`, the key is one column and its terms are dense.
    pub(crate) fn build(tuples: &[Term], arity: usize, mask: Mask, settled: bool) -> Index {
        let columns = key_columns(mask);
        let len = tuples.len().checked_div(arity).unwrap_or(0);
        if let [c] = columns[..] {
            let index = if settled {
                Index::dense(tuples, arity, len, c)
            } else {
                Index::direct(tuples, arity, len, c)
            };
            if let Some(index) = index {
                return index;
            }
        }
        let mut map: FxHashMap<u128, Ids> = FxHashMap::default();
        for (id, t) in tuples.chunks_exact(arity.max(1)).enumerate() {
            map.entry(pack(columns.iter().map(|&c| t[c])))
                .or_default()
                .push(entry(id as u32, t, &columns));
        }
        Index::Hash { columns, map }
    }

    fn dense(tuples: &[Term], arity: usize, len: usize, c: usize) -> Option<Index> {
        let column = || tuples.chunks_exact(arity).map(|t| t[c].0);
        let lo = column().min()?;
        let hi = column().max()?;
        let span = (hi - lo) as usize + 1;
        if span > RANK_SPREAD * len + (1 << 16) {
            return None;
        }
        let mut order: Vec<(u32, Entry)> = tuples
            .chunks_exact(arity)
            .enumerate()
            .map(|(id, t)| (t[c].0 - lo, entry(id as u32, t, &[c])))
            .collect();
        sort_by_term(&mut order);
        let mut words = vec![(0u64, 0u32); span.div_ceil(64)];
        let mut offsets = Vec::new();
        let mut ids = Vec::with_capacity(len);
        for (k, (i, e)) in order.into_iter().enumerate() {
            let i = i as usize;
            let bit = 1u64 << (i % 64);
            if words[i / 64].0 & bit == 0 {
                words[i / 64].0 |= bit;
                offsets.push(k as u32);
            }
            ids.push(e);
        }
        offsets.push(len as u32);
        let mut present = 0u32;
        for w in &mut words {
            w.1 = present;
            present += w.0.count_ones();
        }
        Some(Index::Dense {
            lo,
            words,
            offsets,
            ids,
        })
    }

    fn direct(tuples: &[Term], arity: usize, len: usize, c: usize) -> Option<Index> {
        let base = tuples.get(c).map_or(0, |t| kind_base(t.0));
        let tuple = |id: u32| &tuples[id as usize * arity..(id as usize + 1) * arity];
        let order = direct_entries(0..len as u32, tuple, c, base, |_| len)?;
        let mut slots = Vec::new();
        fill_slots(&mut slots, order);
        Some(Index::Direct {
            column: c,
            base,
            slots,
        })
    }

    /// Whether the index takes new tuples (a dense one must be rebuilt instead).
    pub(crate) fn is_dense(&self) -> bool {
        matches!(self, Index::Dense { .. })
    }

    /// Adds the tuples `ids` (the newest; `tuples` holds every tuple, `arity` terms each) to
    /// a hash or direct index. Many added to a direct index are added in term order, so its
    /// slots are written front to back rather than at random.
    pub(crate) fn insert_all(&mut self, ids: Range<u32>, tuples: &[Term], arity: usize) {
        let tuple = |id: u32| &tuples[id as usize * arity..(id as usize + 1) * arity];
        if let Index::Direct {
            column,
            base,
            slots,
        } = self
            && ids.len() >= SORTED_INSERT
            && let Some(order) =
                direct_entries(ids.clone(), tuple, *column, *base, |id| id as usize + 1)
        {
            fill_slots(slots, order);
            return;
        }
        for id in ids {
            self.insert(id, tuple(id));
        }
    }

    /// Adds tuple `id` (the newest) to a hash or direct index.
    pub(crate) fn insert(&mut self, id: u32, tuple: &[Term]) {
        match self {
            Index::Hash { columns, map } => map
                .entry(pack(columns.iter().map(|&c| tuple[c])))
                .or_default()
                .push(entry(id, tuple, columns)),
            Index::Direct {
                column,
                base,
                slots,
            } => {
                let t = tuple[*column].0;
                if kind_base(t) == *base && direct_fits(t - *base, id as usize + 1) {
                    let i = (t - *base) as usize;
                    if slots.len() <= i {
                        slots.resize_with(i + 1, Ids::new);
                    }
                    slots[i].push(entry(id, tuple, &[*column]));
                    return;
                }
                // Too far out, or another kind: from now on a hash index.
                let mut map: FxHashMap<u128, Ids> = FxHashMap::default();
                for (i, ids) in std::mem::take(slots).into_iter().enumerate() {
                    if !ids.is_empty() {
                        map.insert(u128::from(*base + i as u32), ids);
                    }
                }
                map.entry(u128::from(t))
                    .or_default()
                    .push(entry(id, tuple, &[*column]));
                *self = Index::Hash {
                    columns: vec![*column],
                    map,
                };
            }
            Index::Dense { .. } => {}
        }
    }

    /// The entries of the tuples holding `key`, ascending by id.
    pub(crate) fn get(&self, key: u128) -> &[Entry] {
        match self {
            Index::Hash { map, .. } => map.get(&key).map_or(&[], |ids| ids.as_slice()),
            Index::Direct { base, slots, .. } => u32::try_from(key)
                .ok()
                .and_then(|t| t.checked_sub(*base))
                .and_then(|i| slots.get(i as usize))
                .map_or(&[], |ids| ids.as_slice()),
            Index::Dense {
                lo,
                words,
                offsets,
                ids,
            } => {
                let Some(i) = u32::try_from(key).ok().and_then(|t| t.checked_sub(*lo)) else {
                    return &[];
                };
                let i = i as usize;
                let Some(&(bits, before)) = words.get(i / 64) else {
                    return &[];
                };
                let bit = 1u64 << (i % 64);
                if bits & bit == 0 {
                    return &[];
                }
                let r = before as usize + (bits & (bit - 1)).count_ones() as usize;
                &ids[offsets[r] as usize..offsets[r + 1] as usize]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(entries: &[Entry]) -> Vec<u32> {
        entries.iter().map(|e| e[0]).collect()
    }

    fn flat(rows: &[[u32; 2]]) -> Vec<Term> {
        rows.iter().flatten().map(|&x| Term(x)).collect()
    }

    #[test]
    fn dense_and_hash_agree() {
        let rows: Vec<[u32; 2]> = (0..3000u32).map(|i| [i % 97 + 10, i * 7 % 1000]).collect();
        let tuples = flat(&rows);
        for mask in [0b01, 0b10] {
            let dense = Index::build(&tuples, 2, mask, true);
            let hash = Index::build(&tuples, 2, mask, false);
            assert!(dense.is_dense());
            assert!(!hash.is_dense());
            for key in 0..1100u128 {
                assert_eq!(dense.get(key), hash.get(key), "mask {mask} key {key}");
            }
            assert!(dense.get(u128::from(u32::MAX) + 5).is_empty());
        }
    }

    #[test]
    fn direct_grows_and_turns_into_hash() {
        let rows: Vec<[u32; 2]> = (0..500u32).map(|i| [0xC000_0000 | (i % 37), i]).collect();
        let tuples = flat(&rows);
        let mut index = Index::build(&tuples[..2], 2, 0b01, false);
        assert!(matches!(index, Index::Direct { .. }));
        for (id, t) in tuples.chunks_exact(2).enumerate().skip(1) {
            index.insert(id as u32, t);
        }
        assert!(matches!(index, Index::Direct { .. }));
        for k in 0..40u32 {
            let expected: Vec<u32> = (0..500u32).filter(|i| i % 37 == k).collect();
            assert_eq!(ids(index.get(u128::from(0xC000_0000 | k))), expected);
        }
        assert!(index.get(5).is_empty());
        // A text term in an integer column: the index becomes a hash index, same lists.
        index.insert(500, &[Term(7), Term(0)]);
        assert!(matches!(index, Index::Hash { .. }));
        assert_eq!(index.get(7), &[[500, 0]]);
        assert_eq!(index.get(0xC000_0000 | 3).len(), 14);
    }

    #[test]
    fn sparse_terms_are_ranked() {
        // One term in 300 present, some repeated, across many bitmap words.
        let rows: Vec<[u32; 2]> = (0..400u32).map(|i| [(i % 150) * 300 + 7, i]).collect();
        let tuples = flat(&rows);
        let dense = Index::build(&tuples, 2, 0b01, true);
        let hash = Index::build(&tuples, 2, 0b01, false);
        assert!(dense.is_dense());
        for key in (0..50_000u128).step_by(7).chain([6, 7, 8, 44_707, 44_708]) {
            assert_eq!(dense.get(key), hash.get(key), "key {key}");
        }
        assert_eq!(dense.get(307), &[[1, 1], [151, 151], [301, 301]]);
    }

    #[test]
    fn sparse_terms_stay_hashed() {
        let tuples = flat(&[[1, 0], [1 << 30, 0]]);
        assert!(!Index::build(&tuples, 2, 0b01, true).is_dense());
        assert!(!Index::build(&tuples, 2, 0b11, true).is_dense());
        assert!(!Index::build(&[], 2, 0b01, true).is_dense());
    }
}
