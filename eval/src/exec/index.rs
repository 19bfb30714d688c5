//! Indexes of in-memory relations: for a set of bound columns, the tuples holding each
//! combination of values, as entries ascending by id (for a binary relation keyed on one
//! column, an entry also carries the other column's term).
//!
//! An index on one column keeps its entries grouped by term in term order
//! (module `grouped`): a settled relation (a base relation read into memory, or one of a
//! lower stratum) in one grouping, a growing one (of the stratum being evaluated) in layers,
//! a round's new tuples becoming a layer and layers of similar sizes merging, as datafrog
//! keeps its batches. Either way a probe reads arrays in term order, so probes made in key
//! order (a delta sorted by the joined column) read memory front to back, as a merge join
//! would, and a layer costs about 8 bytes an entry where a slot per term cost 24 bytes a
//! term. An index on several columns, or on a settled column whose terms are too sparse to
//! rank, is a hash map from the packed key.

use std::ops::Range;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::data::value::Term;
use crate::exec::grouped::Grouped;

/// The most columns an index key packs; further bound columns are checked tuple by tuple.
pub const KEY_COLUMNS: usize = 4;

pub use crate::plan::Mask;

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

/// One tuple in an index's list: its id, and for a relation of two columns keyed on one,
/// the other column's term (0 otherwise). A join over a binary relation then binds from
/// the index alone and never fetches the tuple, which would be a cache miss per candidate.
pub(crate) type Entry = [u32; 2];

/// The entries of one key in a hash index (two held inline: most keys have few).
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
    /// One column of a growing relation: layers of entries grouped by term, each layer
    /// holding the tuples from its first id to the next layer's. A round's new tuples
    /// become a layer; a layer at least half the size of the one before it is merged into
    /// it, so there are `log n` layers, and an entry is copied `log n` times in all.
    Layered {
        /// The key's column.
        column: usize,
        /// Each layer's first id, and its entries.
        layers: Vec<(u32, Grouped)>,
    },
    /// One column of a settled relation, its terms dense enough to be ranked.
    Dense(Grouped),
}

/// The entries a lookup finds: one slice per layer that holds some, in id order.
pub(crate) struct Lookup<'a> {
    /// The one slice of a hash or dense index (trimmed to the range).
    one: Option<&'a [Entry]>,
    /// The layers not yet read.
    layers: &'a [(u32, Grouped)],
    term: u32,
    range: Range<u32>,
}

impl Lookup<'_> {
    /// Finds nothing.
    pub(crate) fn empty() -> Self {
        Lookup {
            one: None,
            layers: &[],
            term: 0,
            range: 0..0,
        }
    }
}

/// The entries of `ids` (ascending by id) within `range`.
pub(crate) fn trim<'a>(ids: &'a [Entry], range: &Range<u32>) -> &'a [Entry] {
    let (Some(first), Some(last)) = (ids.first(), ids.last()) else {
        return ids;
    };
    if first[0] >= range.start && last[0] < range.end {
        return ids;
    }
    let lo = ids.partition_point(|e| e[0] < range.start);
    let hi = ids.partition_point(|e| e[0] < range.end);
    &ids[lo..hi]
}

impl<'a> Iterator for Lookup<'a> {
    type Item = &'a [Entry];

    fn next(&mut self) -> Option<&'a [Entry]> {
        if let Some(one) = self.one.take() {
            return Some(one);
        }
        while let Some(((first, layer), rest)) = self.layers.split_first() {
            // A layer holds ids up to the next layer's first (the last one, to the end).
            let end = rest.first().map_or(u32::MAX, |l| l.0);
            self.layers = rest;
            if *first >= self.range.end {
                self.layers = &[];
                return None;
            }
            if end <= self.range.start {
                continue;
            }
            let ids = layer.get(self.term);
            let ids = if *first >= self.range.start && end <= self.range.end {
                ids
            } else {
                trim(ids, &self.range)
            };
            if !ids.is_empty() {
                return Some(ids);
            }
        }
        None
    }
}

/// Sorts `(term, entry)` pairs by term, stably (a term's ids stay ascending), with a radix
/// sort that reads and writes memory in order; pairs already in order (a column often is)
/// are left as they are.
fn sort_by_term(order: &mut Vec<(u32, Entry)>) {
    if !order.is_sorted_by_key(|e| e.0) {
        crate::data::radix::sort_by_key(order, |e| u64::from(e.0));
    }
}

impl Index {
    /// Bytes held, for an index over `tuples` tuples. A hash index's entries past the two
    /// a key holds inline are estimated from the count (a spilled key holds all of its own
    /// on the heap), not summed key by key: the memory budget asks after every round.
    pub(crate) fn bytes(&self, tuples: usize) -> usize {
        match self {
            Index::Hash { map, .. } => {
                let inline = 2 * map.len();
                map.capacity() * (size_of::<(u128, Ids)>() + 1)
                    + tuples.saturating_sub(inline) * size_of::<Entry>()
            }
            Index::Layered { layers, .. } => layers.iter().map(|(_, g)| g.bytes()).sum(),
            Index::Dense(g) => g.bytes(),
        }
    }

    /// The index on `mask` over `tuples` (`arity` terms each): on one column, dense when
    /// the relation is `settled` and the column's terms are dense, layered when it grows.
    pub(crate) fn build(tuples: &[Term], arity: usize, mask: Mask, settled: bool) -> Index {
        let columns = key_columns(mask);
        let len = tuples.len().checked_div(arity).unwrap_or(0);
        if let [c] = columns[..] {
            if !settled {
                let mut index = Index::Layered {
                    column: c,
                    layers: Vec::new(),
                };
                index.insert_all(0..len as u32, tuples, arity, 1);
                return index;
            }
            let order = term_order(0..len as u32, tuples, arity, c);
            if let Some(grouped) = Grouped::build(&order, false) {
                return Index::Dense(grouped);
            }
        }
        let mut index = Index::Hash {
            columns,
            map: FxHashMap::default(),
        };
        index.insert_all(0..len as u32, tuples, arity, 1);
        index
    }

    /// For an index on one column: its entries and the terms they are grouped under,
    /// summed over its layers (a term in two layers counts twice).
    pub(crate) fn groups(&self) -> Option<(usize, usize)> {
        match self {
            Index::Layered { layers, .. } => Some(
                layers
                    .iter()
                    .fold((0, 0), |(n, t), (_, g)| (n + g.len(), t + g.terms())),
            ),
            Index::Dense(g) => Some((g.len(), g.terms())),
            Index::Hash { .. } => None,
        }
    }

    /// For an index on one column of a binary relation (entries carrying the other
    /// column): whether some tuple holds `term` in the key column and `other` in the other.
    pub(crate) fn holds(&self, term: u32, other: u32) -> bool {
        let held = |g: &Grouped| g.get(term).iter().any(|e| e[1] == other);
        match self {
            Index::Layered { layers, .. } => layers.iter().any(|(_, g)| held(g)),
            Index::Dense(g) => held(g),
            Index::Hash { map, .. } => map
                .get(&u128::from(term))
                .is_some_and(|ids| ids.iter().any(|e| e[1] == other)),
        }
    }

    /// Whether the index takes new tuples (a dense one must be rebuilt instead).
    pub(crate) fn is_dense(&self) -> bool {
        matches!(self, Index::Dense(_))
    }

    /// Its one grouping, when it is dense.
    pub(crate) fn dense(&self) -> Option<&Grouped> {
        match self {
            Index::Dense(g) => Some(g),
            _ => None,
        }
    }

    /// Adds the tuples `ids` (the newest; `tuples` holds every tuple, `arity` terms each) to
    /// a hash or layered index. A layered index takes them as a new layer, merging layers
    /// of similar sizes (a large merge on two threads when `threads` allows).
    pub(crate) fn insert_all(
        &mut self,
        ids: Range<u32>,
        tuples: &[Term],
        arity: usize,
        threads: usize,
    ) {
        match self {
            Index::Hash { columns, map } => {
                for id in ids {
                    let t = &tuples[id as usize * arity..(id as usize + 1) * arity];
                    map.entry(pack(columns.iter().map(|&c| t[c])))
                        .or_default()
                        .push(entry(id, t, columns));
                }
            }
            Index::Layered { column, layers } => {
                if ids.is_empty() {
                    return;
                }
                let first = ids.start;
                let order = term_order(ids, tuples, arity, *column);
                let Some(layer) = Grouped::build(&order, true) else {
                    return;
                };
                drop(order);
                layers.push((first, layer));
                while let [.., (_, older), (_, newer)] = &layers[..]
                    && newer.len() * 2 >= older.len()
                {
                    let merged = older.merge_on(newer, threads);
                    layers.pop();
                    if let Some(last) = layers.last_mut() {
                        last.1 = merged;
                    }
                }
            }
            Index::Dense(_) => {}
        }
    }

    /// The entries within `range` of the tuples holding `key`, ascending by id.
    pub(crate) fn lookup(&self, key: u128, range: Range<u32>) -> Lookup<'_> {
        fn one<'a>(ids: &'a [Entry], range: &Range<u32>) -> Option<&'a [Entry]> {
            let ids = trim(ids, range);
            (!ids.is_empty()).then_some(ids)
        }
        match self {
            Index::Hash { map, .. } => Lookup {
                one: map.get(&key).and_then(|ids| one(ids, &range)),
                ..Lookup::empty()
            },
            Index::Dense(g) => Lookup {
                one: u32::try_from(key).ok().and_then(|t| one(g.get(t), &range)),
                ..Lookup::empty()
            },
            Index::Layered { layers, .. } => match u32::try_from(key) {
                Ok(term) => Lookup {
                    one: None,
                    layers,
                    term,
                    range,
                },
                Err(_) => Lookup::empty(),
            },
        }
    }
}

/// The `(term, entry)` pairs of tuples `ids` keyed on column `c`, sorted by term (stably:
/// a term's ids stay ascending).
fn term_order(ids: Range<u32>, tuples: &[Term], arity: usize, c: usize) -> Vec<(u32, Entry)> {
    let mut order: Vec<(u32, Entry)> = ids
        .map(|id| {
            let t = &tuples[id as usize * arity..(id as usize + 1) * arity];
            (t[c].0, entry(id, t, &[c]))
        })
        .collect();
    sort_by_term(&mut order);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(index: &Index, key: u128, range: Range<u32>) -> Vec<Entry> {
        index.lookup(key, range).flatten().copied().collect()
    }

    fn flat(rows: &[[u32; 2]]) -> Vec<Term> {
        rows.iter().flatten().map(|&x| Term(x)).collect()
    }

    #[test]
    fn dense_layered_and_hash_agree() {
        let rows: Vec<[u32; 2]> = (0..3000u32).map(|i| [i % 97 + 10, i * 7 % 1000]).collect();
        let tuples = flat(&rows);
        for mask in [0b01, 0b10] {
            let dense = Index::build(&tuples, 2, mask, true);
            let layered = Index::build(&tuples, 2, mask, false);
            let mut hash = Index::Hash {
                columns: key_columns(mask),
                map: FxHashMap::default(),
            };
            hash.insert_all(0..3000, &tuples, 2, 1);
            assert!(dense.is_dense());
            assert!(matches!(layered, Index::Layered { .. }));
            for key in 0..1100u128 {
                for range in [0..3000, 5..2000, 2999..3000] {
                    let expected = all(&hash, key, range.clone());
                    assert_eq!(all(&dense, key, range.clone()), expected, "{mask} {key}");
                    assert_eq!(all(&layered, key, range), expected, "{mask} {key}");
                }
            }
            assert!(all(&dense, u128::from(u32::MAX) + 5, 0..3000).is_empty());
        }
    }

    #[test]
    fn layers_merge_as_they_grow_and_ranges_cut_across_them() {
        // Rounds of shrinking then growing sizes, over dense and far-apart terms.
        let rows: Vec<[u32; 2]> = (0..5000u32)
            .map(|i| {
                let term = if i % 11 == 0 { 0xC000_0000 | i } else { i % 37 };
                [term, i]
            })
            .collect();
        let tuples = flat(&rows);
        let mut index = Index::build(&tuples[..2], 2, 0b01, false);
        let mut hash = Index::Hash {
            columns: vec![0],
            map: FxHashMap::default(),
        };
        hash.insert_all(0..1, &tuples, 2, 1);
        let mut at = 1u32;
        for size in [900, 400, 100, 1, 1, 50, 1500, 7, 2040] {
            index.insert_all(at..at + size, &tuples, 2, 1);
            hash.insert_all(at..at + size, &tuples, 2, 1);
            at += size;
            let Index::Layered { layers, .. } = &index else {
                panic!("not layered");
            };
            // Sizes halve from layer to layer, and the first ids ascend.
            assert!(layers.windows(2).all(|w| w[1].1.len() * 2 < w[0].1.len()));
            assert!(layers.windows(2).all(|w| w[0].0 < w[1].0));
            for key in (0..40u128).chain([u128::from(0xC000_0000u32 | 990), 1 << 40]) {
                for range in [0..at, 0..at / 2, at / 3..at, 17..18] {
                    assert_eq!(
                        all(&index, key, range.clone()),
                        all(&hash, key, range),
                        "key {key}"
                    );
                }
            }
        }
        assert_eq!(at, 5000);
    }

    #[test]
    fn sparse_settled_terms_stay_hashed() {
        let tuples = flat(&[[1, 0], [1 << 30, 0]]);
        assert!(!Index::build(&tuples, 2, 0b01, true).is_dense());
        assert!(!Index::build(&tuples, 2, 0b11, true).is_dense());
        assert!(Index::build(&[], 2, 0b01, true).is_dense());
    }
}
