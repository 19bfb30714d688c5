//! Indexes of in-memory relations: for a set of bound columns, the ascending ids of the
//! tuples holding each combination of values.
//!
//! A relation that still grows (one of the stratum being evaluated) keeps a hash map from
//! the packed key to a list of ids, appended to as tuples arrive. A settled relation (a
//! base relation read into memory, or one of a lower stratum) never changes again, so an
//! index on one of its columns whose terms fall in a dense range (graph node ids, the
//! dictionary's text ids) is laid out by counting sort: an offset per term and one array of
//! ids, found with one subtraction. Probes made in key order (a delta sorted by the joined
//! column) then read memory in order, as a merge join would.

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

/// A dense index is built when the column's terms span at most this many times the
/// tuples (plus a small constant): its offsets then cost at most that many words a tuple.
const DENSE_SPREAD: usize = 2;

/// The ids of one key in a hash index.
type Ids = SmallVec<[u32; 4]>;

/// An index on some bound columns of one relation.
#[derive(Debug)]
pub(crate) enum Index {
    /// Packed key to ascending ids; kept current as tuples are added.
    Hash {
        /// The key's columns.
        columns: Vec<usize>,
        /// The ids of each key (up to four held inline: most keys have few).
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
        /// The ids of each term, by its offset from `base`.
        slots: Vec<Ids>,
    },
    /// One column of a settled relation: the ids of term `lo + i` are
    /// `ids[offsets[i]..offsets[i + 1]]`, ascending.
    Dense {
        /// The smallest term of the column.
        lo: u32,
        /// Where each term's ids start (one more entry than terms in the range).
        offsets: Vec<u32>,
        /// Every id, grouped by term.
        ids: Vec<u32>,
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
                .push(id as u32);
        }
        Index::Hash { columns, map }
    }

    fn dense(tuples: &[Term], arity: usize, len: usize, c: usize) -> Option<Index> {
        let column = || tuples.chunks_exact(arity).map(|t| t[c].0);
        let lo = column().min()?;
        let hi = column().max()?;
        let span = (hi - lo) as usize + 1;
        if span > DENSE_SPREAD * len + 1024 {
            return None;
        }
        let mut offsets = vec![0u32; span + 1];
        for t in column() {
            offsets[(t - lo) as usize + 1] += 1;
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut next = offsets.clone();
        let mut ids = vec![0u32; len];
        for (id, t) in column().enumerate() {
            let slot = &mut next[(t - lo) as usize];
            ids[*slot as usize] = id as u32;
            *slot += 1;
        }
        Some(Index::Dense { lo, offsets, ids })
    }

    fn direct(tuples: &[Term], arity: usize, len: usize, c: usize) -> Option<Index> {
        let base = tuples.get(c).map_or(0, |t| kind_base(t.0));
        let mut slots: Vec<Ids> = Vec::new();
        for (id, t) in tuples.chunks_exact(arity).enumerate() {
            let t = t[c].0;
            if kind_base(t) != base || !direct_fits(t - base, len) {
                return None;
            }
            let i = (t - base) as usize;
            if slots.len() <= i {
                slots.resize_with(i + 1, Ids::new);
            }
            slots[i].push(id as u32);
        }
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

    /// Adds tuple `id` (the newest) to a hash or direct index.
    pub(crate) fn insert(&mut self, id: u32, tuple: &[Term]) {
        match self {
            Index::Hash { columns, map } => map
                .entry(pack(columns.iter().map(|&c| tuple[c])))
                .or_default()
                .push(id),
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
                    slots[i].push(id);
                    return;
                }
                // Too far out, or another kind: from now on a hash index.
                let mut map: FxHashMap<u128, Ids> = FxHashMap::default();
                for (i, ids) in std::mem::take(slots).into_iter().enumerate() {
                    if !ids.is_empty() {
                        map.insert(u128::from(*base + i as u32), ids);
                    }
                }
                map.entry(u128::from(t)).or_default().push(id);
                *self = Index::Hash {
                    columns: vec![*column],
                    map,
                };
            }
            Index::Dense { .. } => {}
        }
    }

    /// The ids of the tuples holding `key`, ascending.
    pub(crate) fn get(&self, key: u128) -> &[u32] {
        match self {
            Index::Hash { map, .. } => map.get(&key).map_or(&[], |ids| ids.as_slice()),
            Index::Direct { base, slots, .. } => u32::try_from(key)
                .ok()
                .and_then(|t| t.checked_sub(*base))
                .and_then(|i| slots.get(i as usize))
                .map_or(&[], |ids| ids.as_slice()),
            Index::Dense { lo, offsets, ids } => {
                let Ok(t) = u32::try_from(key) else {
                    return &[];
                };
                let Some(i) = t.checked_sub(*lo) else {
                    return &[];
                };
                match (offsets.get(i as usize), offsets.get(i as usize + 1)) {
                    (Some(&a), Some(&b)) => &ids[a as usize..b as usize],
                    _ => &[],
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(dense.get(u128::from(u32::MAX) + 5), &[] as &[u32]);
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
            assert_eq!(index.get(u128::from(0xC000_0000 | k)), expected.as_slice());
        }
        assert_eq!(index.get(5), &[] as &[u32]);
        // A text term in an integer column: the index becomes a hash index, same lists.
        index.insert(500, &[Term(7), Term(0)]);
        assert!(matches!(index, Index::Hash { .. }));
        assert_eq!(index.get(7), &[500]);
        assert_eq!(index.get(0xC000_0000 | 3).len(), 14);
    }

    #[test]
    fn sparse_terms_stay_hashed() {
        let tuples = flat(&[[1, 0], [1 << 30, 0]]);
        assert!(!Index::build(&tuples, 2, 0b01, true).is_dense());
        assert!(!Index::build(&tuples, 2, 0b11, true).is_dense());
        assert!(!Index::build(&[], 2, 0b01, true).is_dense());
    }
}
