//! Derived relations in memory: an append-only set of tuples with indexes on bound columns,
//! split into the stable, recent and newest parts semi-naive evaluation reads.
//!
//! Tuples get dense ids in insertion order. After each round, [`Relation::advance`] makes the
//! tuples added during the round the `recent` ones (the delta) and the previous recent ones
//! `stable`. Indexes map the values of a set of columns to the ascending ids of the tuples
//! holding them, so a range of ids (stable, recent, all) is a slice of each list.
//!
//! Set membership: a relation of one or two columns packs each tuple into a `u64` and keeps
//! the keys (not the ids: membership is all they ask) in sorted runs ([`crate::exec::sorted`]); a
//! round's candidates are sorted once and checked against each run in order, which reads
//! memory in order where a hash table would miss the cache on every probe. Once the keys
//! are dense (a closure's pairs from one source crowding together) they are kept as words
//! of 64 bits instead, one probe a candidate ([`crate::exec::keyset`]). A binary
//! relation with an index on one column whose terms hold few entries each answers
//! membership from that index instead (its entries carry the other column) and keeps no
//! runs, going back to runs if the terms come to hold many. Wider relations use a hash
//! table of tuple ids.

use std::hash::BuildHasher;
use std::ops::Range;

use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::data::value::Term;
use crate::exec::index::{Index, Lookup};
use crate::exec::keyset::KeySet;

pub(crate) use crate::exec::index::{KEY_COLUMNS, Mask};

/// At least this many tuples added at once update a relation's indexes on several threads.
const PARALLEL_INDEX: usize = 1 << 14;

/// A binary relation answers membership from an index on one column instead of runs when
/// its entries average at most this many a term (per layer)...
const INDEX_MEMBERSHIP_ENTER: usize = 2;
/// ...and goes back to runs when they average more than this many (a probe scans a
/// term's entries for the other column).
const INDEX_MEMBERSHIP_LEAVE: usize = 4;

/// The bytes one relation holds ([`Relation::bytes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelationBytes {
    /// The tuples and what answers membership (runs of keys, or a hash set of ids).
    pub tuples: u64,
    /// The indexes on bound columns.
    pub indexes: u64,
}

impl RelationBytes {
    /// Both together.
    pub fn total(&self) -> u64 {
        self.tuples + self.indexes
    }
}

/// A derived relation.
pub struct Relation {
    arity: usize,
    tuples: Vec<Term>,
    len: u32,
    /// The set of tuples, by id (arity above 2).
    set: HashTable<u32>,
    /// Arity 2 or less: the tuples packed into u64 keys, in sorted runs or, once dense,
    /// words of bits ([`crate::exec::keyset`]; empty while `membership` is set).
    members: KeySet,
    /// A binary relation whose index on one column holds few entries a term answers
    /// membership from that index (its entries carry the other column), and keeps no runs:
    /// points-to's `pt`, a variable pointing to one or two objects a round, saves the 8
    /// bytes a tuple its runs cost. The index's mask.
    membership: Option<Mask>,
    /// Whether membership may move to an index ([`Relation::keeping_runs`]).
    index_membership: bool,
    indexes: FxHashMap<Mask, Index>,
    stable: u32,
    recent: u32,
    /// Settled: computed whole and never to change (indexes may be dense).
    settled: bool,
    /// Filled by [`Relation::load`]: tuples sorted by key, distinct, with no runs.
    loaded: bool,
}

fn hash_tuple(t: &[Term]) -> u64 {
    FxBuildHasher.hash_one(t)
}

/// Whether `index`, on the column of a binary relation `mask` names, holds the tuple
/// packed in `k`.
fn holds_key(index: &Index, mask: Mask, k: u64) -> bool {
    let (a, b) = ((k >> 32) as u32, k as u32);
    match mask {
        0b01 => index.holds(a, b),
        _ => index.holds(b, a),
    }
}

/// A tuple of at most two terms as one u64.
fn pack_small(t: &[Term]) -> u64 {
    t.iter().fold(0u64, |k, x| k << 32 | u64::from(x.0))
}

impl Relation {
    /// An empty relation of `arity` columns.
    pub fn new(arity: usize) -> Relation {
        Relation {
            arity,
            tuples: Vec::new(),
            len: 0,
            set: HashTable::new(),
            members: KeySet::default(),
            membership: None,
            index_membership: true,
            indexes: FxHashMap::default(),
            stable: 0,
            recent: 0,
            settled: false,
            loaded: false,
        }
    }

    /// The same relation, answering membership from its own keys (runs or words) always,
    /// never from an index. The engine asks it with witnesses on: a task then drops its own known
    /// candidates (the merge never does, see `late_next` in the engine), so the relation is
    /// probed once per task, and through an index rather than runs that made points-to 12%
    /// slower at one thread (1.05-1.16 s to 1.18-1.30).
    pub fn keeping_runs(mut self) -> Relation {
        self.index_membership = false;
        self
    }

    /// Bytes held, by the tuples and membership (runs or hash set) and by the indexes,
    /// as a memory budget counts them: what the arrays hold, not the addresses reserved
    /// past it (untouched, they are not resident; see `buffer::make_room`).
    pub fn bytes(&self) -> RelationBytes {
        let set = self.set.capacity() * (size_of::<u32>() + 1);
        RelationBytes {
            tuples: (self.tuples.len() * size_of::<Term>() + set + self.members.bytes()) as u64,
            indexes: self
                .indexes
                .values()
                .map(|i| i.bytes(self.len as usize))
                .sum::<usize>() as u64,
        }
    }

    /// The number of columns.
    pub fn arity(&self) -> usize {
        self.arity
    }

    /// The number of tuples (in every part).
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the relation has no tuple.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The tuple with id `id`.
    pub fn tuple(&self, id: u32) -> &[Term] {
        let a = self.arity;
        &self.tuples[id as usize * a..(id as usize + 1) * a]
    }

    /// Every tuple's terms, back to back in id order.
    pub(crate) fn terms(&self) -> &[Term] {
        &self.tuples[..self.len as usize * self.arity]
    }

    /// The ids of the tuples known before the last round (`stable`).
    pub fn stable(&self) -> Range<u32> {
        0..self.stable
    }

    /// The ids of the tuples the last round added (`recent`, the delta).
    pub fn recent(&self) -> Range<u32> {
        self.stable..self.recent
    }

    /// The ids of every tuple visible to the current round (stable and recent).
    pub fn visible(&self) -> Range<u32> {
        0..self.recent
    }

    /// Whether the relation holds `tuple` (in any part, including the newest; a relation
    /// filled by [`Relation::load`] answers from its tuples).
    pub fn contains(&self, tuple: &[Term]) -> bool {
        if self.arity <= 2 {
            let k = pack_small(tuple);
            if self.loaded {
                // Sorted by key; a loaded relation has one or two columns.
                let tuples = &self.tuples[..];
                let found = match self.arity {
                    2 => tuples
                        .as_chunks::<2>()
                        .0
                        .binary_search_by_key(&k, |t| pack_small(t)),
                    _ => tuples.binary_search_by_key(&k, |t| pack_small(std::slice::from_ref(t))),
                };
                return found.is_ok();
            }
            if let Some((mask, index)) = self.membership_index() {
                return holds_key(index, mask, k);
            }
            return self.members.contains(k);
        }
        let h = hash_tuple(tuple);
        self.set.find(h, |&id| self.tuple(id) == tuple).is_some()
    }

    /// Adds `tuple` unless it is there; returns its id when it is new. New tuples become
    /// visible at the next [`Relation::advance`].
    pub fn insert(&mut self, tuple: &[Term]) -> Option<u32> {
        self.insert_all(tuple, 1).first().map(|&(_, id)| id)
    }

    /// Adds tuples of arity 2 or less given as packed keys, sorted and distinct, each with a
    /// position; returns the position and id of each one that was new.
    pub fn insert_sorted(&mut self, mut cands: Vec<(u64, u32)>) -> Vec<(usize, u32)> {
        debug_assert!(self.arity <= 2);
        debug_assert!(
            !self.loaded,
            "a loaded base relation never takes new tuples"
        );
        debug_assert!(cands.windows(2).all(|w| w[0].0 < w[1].0));
        self.retain_absent(&mut cands, |c| c.0);
        let first = self.append_keys(cands.iter().map(|c| c.0).collect(), 1);
        cands
            .iter()
            .enumerate()
            .map(|(i, &(_, pos))| (pos as usize, first + i as u32))
            .collect()
    }

    /// Keeps the candidates (sorted by key, distinct, arity 2 or less) whose packed key the
    /// relation does not hold. Reads only: several threads may filter disjoint key ranges.
    pub fn retain_absent<T>(&self, cands: &mut Vec<T>, key: impl Fn(&T) -> u64) {
        match self.membership_index() {
            Some((mask, index)) => cands.retain(|c| !holds_key(index, mask, key(c))),
            None => self.members.retain_absent(cands, key),
        }
    }

    /// The index that answers membership instead of the runs, and its mask, if any.
    fn membership_index(&self) -> Option<(Mask, &Index)> {
        let mask = self.membership?;
        Some((mask, self.indexes.get(&mask)?))
    }

    /// Moves membership between the runs and an index on one column as the index's terms
    /// hold few entries or many ([`INDEX_MEMBERSHIP_ENTER`], [`INDEX_MEMBERSHIP_LEAVE`]).
    fn update_membership(&mut self, threads: usize) {
        if self.arity != 2 || self.loaded || !self.index_membership {
            return;
        }
        let groups = |mask: Mask| self.indexes.get(&mask).and_then(Index::groups);
        match self.membership {
            Some(mask) => {
                let Some((n, terms)) = groups(mask) else {
                    return;
                };
                if n > INDEX_MEMBERSHIP_LEAVE * terms {
                    // The runs again, from every tuple.
                    let mut keys: Vec<u64> = self
                        .tuples
                        .as_chunks::<2>()
                        .0
                        .iter()
                        .map(|t| pack_small(t))
                        .collect();
                    crate::data::radix::sort_by_key(&mut keys, |&k| k);
                    self.members = KeySet::default();
                    self.members.push(keys, threads);
                    self.membership = None;
                }
            }
            None => {
                let small = [0b01, 0b10].into_iter().find(|&mask| {
                    groups(mask).is_some_and(|(n, terms)| n <= INDEX_MEMBERSHIP_ENTER * terms)
                });
                if let Some(mask) = small {
                    self.members = KeySet::default();
                    self.membership = Some(mask);
                }
            }
        }
    }

    /// Appends tuples given by packed keys (sorted, distinct, absent from the relation) as a
    /// run; returns the id of the first (the others follow in order).
    pub fn append_keys(&mut self, keys: Vec<u64>, threads: usize) -> u32 {
        let first = self.len;
        if keys.is_empty() {
            return first;
        }
        if self.membership.is_some() {
            self.push_keys(&keys, threads);
            self.index_new(first..self.len, threads);
            self.update_membership(threads);
            return first;
        }
        self.append_keys_to_runs(keys, threads);
        self.update_membership(threads);
        first
    }

    /// [`Relation::append_keys`] for a relation keeping runs.
    fn append_keys_to_runs(&mut self, keys: Vec<u64>, threads: usize) {
        let first = self.len;
        if threads < 2 || keys.len() < PARALLEL_INDEX {
            self.push_keys(&keys, 1);
            self.members.push(keys, threads);
            self.index_new(first..self.len, threads);
            return;
        }
        let mut runs = std::mem::take(&mut self.members);
        if self.indexes.is_empty() {
            // The tuples take the keys, then the runs merge them in, each merge on two
            // threads ([`crate::exec::sorted::Run::merge`]). Taking the keys on one thread while
            // the runs merged on the other left that one idle most of the merge: the
            // closure's largest merges took 18 to 30 ms that way at two threads.
            self.push_keys(&keys, threads);
            runs.push(keys, threads);
            // No index to update; growing, it is no longer settled.
            self.settled = false;
        } else {
            // The runs take the keys on one thread while the indexes take the new tuples on
            // another (each may still split a large merge of its own in two).
            self.push_keys(&keys, threads);
            let ids = first..self.len;
            crate::exec::pool::join(|| runs.push(keys, 1), || self.index_new(ids, 1));
        }
        self.members = runs;
    }

    /// Appends the tuples packed in `keys` (arity 2 or less) to the tuples, without
    /// touching the runs or the indexes: on two threads, when `threads` allows and there
    /// are at least [`PARALLEL_INDEX`] keys (the tuples' new pages faulted in halves,
    /// [`crate::exec::buffer::grow`]: the closure's rounds took 31 ms on one, 23 on two).
    fn push_keys(&mut self, keys: &[u64], threads: usize) {
        let arity = self.arity;
        self.len += keys.len() as u32;
        if arity == 0 {
            return;
        }
        debug_assert!(
            arity <= 2,
            "push_keys takes packed keys of two terms at most"
        );
        let first = self.tuples.len();
        if threads < 2 || keys.len() < PARALLEL_INDEX {
            // Extended as the keys are read: a `resize` first and then the same writes as
            // on two threads took the closure at one thread from 0.405 to 0.418 s.
            crate::exec::buffer::make_room(&mut self.tuples, keys.len() * arity);
            for &k in keys {
                match arity {
                    2 => self
                        .tuples
                        .extend_from_slice(&[Term((k >> 32) as u32), Term(k as u32)]),
                    1 => self.tuples.push(Term(k as u32)),
                    _ => {}
                }
            }
            return;
        }
        let write = |out: &mut [Term], keys: &[u64]| {
            for (t, &k) in out.chunks_exact_mut(arity).zip(keys) {
                match t {
                    [a, b] => (*a, *b) = (Term((k >> 32) as u32), Term(k as u32)),
                    [a] => *a = Term(k as u32),
                    _ => {}
                }
            }
        };
        crate::exec::buffer::grow(&mut self.tuples, keys.len() * arity);
        let half = keys.len() / 2;
        let (x, y) = self.tuples[first..].split_at_mut(half * arity);
        let (kx, ky) = keys.split_at(half);
        crate::exec::pool::join(|| write(x, kx), || write(y, ky));
    }

    /// Adds the tuples just appended (`ids`) to every index, on up to `threads`
    /// threads when there are several indexes and many tuples (each index on one); a dense
    /// index (built when the relation was settled) is rebuilt as a growing relation's.
    fn index_new(&mut self, ids: Range<u32>, threads: usize) {
        self.settled = false;
        let arity = self.arity;
        let tuples = &self.tuples[..self.len as usize * arity];
        let update = |mask: Mask, index: &mut Index, threads: usize| {
            if index.is_dense() {
                *index = Index::build(tuples, arity, mask, false);
            } else {
                index.insert_all(ids.clone(), tuples, arity, threads);
            }
        };
        if threads < 2 || self.indexes.len() < 2 || ids.len() < PARALLEL_INDEX {
            // One index (or few tuples): its own large merges may use the threads.
            for (&mask, index) in self.indexes.iter_mut() {
                update(mask, index, threads);
            }
            return;
        }
        let jobs: Vec<(&Mask, &mut Index)> = self.indexes.iter_mut().collect();
        crate::exec::pool::map(threads, jobs, |(&mask, index)| update(mask, index, 1));
    }

    /// Adds the distinct new tuples among the `n` tuples of `tuples` (a flat array, `arity`
    /// terms each); returns, for each tuple that was new, its position among them (its first
    /// occurrence) and its id. The ids are deterministic: they depend only on the input and
    /// the relation's contents.
    pub fn insert_all(&mut self, tuples: &[Term], n: usize) -> Vec<(usize, u32)> {
        let arity = self.arity;
        debug_assert_eq!(tuples.len(), n * arity);
        if arity <= 2 {
            // Sort (key, position): equal keys keep their first position.
            let mut cands: Vec<(u64, u32)> = (0..n)
                .map(|i| (pack_small(&tuples[i * arity..(i + 1) * arity]), i as u32))
                .collect();
            // Often sorted already (a base relation read from the store, in key order).
            if !cands.is_sorted_by_key(|c| c.0) {
                crate::data::radix::sort_by_key(&mut cands, |c| c.0);
            }
            cands.dedup_by_key(|c| c.0);
            return self.insert_sorted(cands);
        }
        let first = self.len;
        let mut added = Vec::new();
        {
            for pos in 0..n {
                let tuple = &tuples[pos * arity..(pos + 1) * arity];
                let h = hash_tuple(tuple);
                let stored = &self.tuples;
                let eq = |&i: &u32| &stored[i as usize * arity..(i as usize + 1) * arity] == tuple;
                if self.set.find(h, eq).is_some() {
                    continue;
                }
                let id = self.len;
                self.tuples.extend_from_slice(tuple);
                self.len += 1;
                let stored = &self.tuples;
                self.set.insert_unique(h, id, |&i| {
                    hash_tuple(&stored[i as usize * arity..(i as usize + 1) * arity])
                });
                added.push((pos, id));
            }
        }
        // New tuples take the next ids, so those added are the ids from `first` on.
        self.index_new(first..self.len, 1);
        added
    }

    /// Fills an empty relation with the `n` facts of a base relation in `tuples` (`arity`
    /// terms each) and settles it. Nothing is ever added to it afterwards, so a relation of
    /// one or two columns keeps no membership runs: its facts are sorted by key and made
    /// distinct once (a wider one goes through [`Relation::insert_all`]).
    pub fn load(&mut self, tuples: Vec<Term>, n: usize) {
        debug_assert!(self.is_empty());
        let arity = self.arity;
        if arity == 0 || arity > 2 || !self.is_empty() {
            self.insert_all(&tuples, n);
            self.settle();
            return;
        }
        let rows = || tuples.chunks_exact(arity).map(pack_small);
        // Already sorted and distinct (as a store yields them): taken as they are.
        if rows().is_sorted_by(|a, b| a < b) {
            self.tuples = tuples;
            self.len = n as u32;
        } else {
            let mut keys: Vec<u64> = rows().collect();
            drop(tuples);
            crate::data::radix::sort_by_key(&mut keys, |&k| k);
            keys.dedup();
            self.push_keys(&keys, 1);
        }
        self.loaded = true;
        self.settle();
    }

    /// Ends a round: the tuples added since the last call become recent, the recent ones
    /// stable. Returns whether any tuple was added.
    pub fn advance(&mut self) -> bool {
        self.stable = self.recent;
        self.recent = self.len;
        self.stable != self.recent
    }

    /// Makes every tuple stable and visible: the relation is computed whole and will not
    /// change again (its indexes built from now on may be dense).
    pub fn settle(&mut self) {
        self.stable = self.len;
        self.recent = self.len;
        self.settled = true;
    }

    /// Builds the index on `mask` if it does not exist.
    pub fn ensure_index(&mut self, mask: Mask) {
        if let Some(index) = self.missing_index(mask) {
            self.indexes.insert(mask, index);
            self.update_membership(1);
        }
    }

    /// Whether the relation has the index on `mask` (or needs none: `mask` 0).
    pub(crate) fn has_index(&self, mask: Mask) -> bool {
        mask == 0 || self.indexes.contains_key(&mask)
    }

    /// The index on `mask`, built, when the relation needs one and has none; reads only,
    /// so several threads may build indexes at once ([`Relation::add_index`] adds it).
    pub(crate) fn missing_index(&self, mask: Mask) -> Option<Index> {
        if mask == 0 || self.indexes.contains_key(&mask) {
            return None;
        }
        let tuples = &self.tuples[..self.len as usize * self.arity];
        Some(Index::build(tuples, self.arity, mask, self.settled))
    }

    /// Adds an index built by [`Relation::missing_index`] (unless one exists by now).
    pub(crate) fn add_index(&mut self, mask: Mask, index: Index) {
        self.indexes.entry(mask).or_insert(index);
        self.update_membership(1);
    }

    /// Its index on `mask`, when it has one ([`Relation::ensure_index`]).
    pub(crate) fn index(&self, mask: Mask) -> Option<&Index> {
        self.indexes.get(&mask)
    }

    /// The entries (id, and for a binary relation keyed on one column the other column's
    /// term) within `range` of the tuples whose columns in `mask` hold `key` (packed by
    /// [`pack`] over [`key_columns`]), as one slice per index layer holding some, in id
    /// order; columns of `mask` past the key are not checked here. The index on `mask`
    /// must exist ([`Relation::ensure_index`]).
    pub(crate) fn lookup(&self, mask: Mask, key: u128, range: Range<u32>) -> Lookup<'_> {
        match self.indexes.get(&mask) {
            Some(index) => index.lookup(key, range),
            None => Lookup::empty(),
        }
    }

    /// Every tuple id in insertion order, with the tuple, over all parts.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[Term])> {
        (0..self.len).map(|id| (id, self.tuple(id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::index::Entry;
    use crate::exec::index::pack;

    fn found(r: &Relation, mask: Mask, key: u128, range: Range<u32>) -> Vec<Entry> {
        r.lookup(mask, key, range).flatten().copied().collect()
    }

    fn t(v: &[u32]) -> Vec<Term> {
        v.iter().map(|&x| Term(x)).collect()
    }

    #[test]
    fn set_semantics_and_parts() {
        let mut r = Relation::new(2);
        assert_eq!(r.insert(&t(&[1, 2])), Some(0));
        assert_eq!(r.insert(&t(&[1, 2])), None);
        assert_eq!(r.insert(&t(&[1, 3])), Some(1));
        assert_eq!(r.visible(), 0..0);
        assert!(r.advance());
        assert_eq!((r.stable(), r.recent()), (0..0, 0..2));
        r.insert(&t(&[2, 3]));
        assert!(r.advance());
        assert_eq!((r.stable(), r.recent()), (0..2, 2..3));
        assert!(!r.advance());
        assert!(r.contains(&t(&[2, 3])));
        assert!(!r.contains(&t(&[3, 3])));
    }

    #[test]
    fn a_loaded_relation_is_sorted_distinct_and_answers_membership() {
        let mut r = Relation::new(2);
        r.load(t(&[5, 1, 2, 9, 5, 1, 2, 3]), 4);
        assert_eq!(r.len(), 3);
        assert_eq!(r.visible(), 0..3);
        assert_eq!(r.tuple(0), &t(&[2, 3])[..]);
        assert_eq!(r.tuple(2), &t(&[5, 1])[..]);
        for (tuple, held) in [
            ([2, 9], true),
            ([5, 1], true),
            ([2, 3], true),
            ([5, 2], false),
        ] {
            assert_eq!(r.contains(&t(&tuple)), held, "{tuple:?}");
        }
        r.ensure_index(0b01);
        assert_eq!(found(&r, 0b01, 2, 0..3), [[0, 3], [1, 9]]);
        // Sorted and distinct already: the same relation.
        let mut sorted = Relation::new(2);
        sorted.load(t(&[2, 3, 2, 9, 5, 1]), 3);
        assert_eq!(sorted.len(), 3);
        assert!((0..3).all(|id| sorted.tuple(id) == r.tuple(id)));
        assert!(sorted.contains(&t(&[2, 9])) && !sorted.contains(&t(&[2, 4])));
    }

    #[test]
    fn indexes_follow_inserts_and_ranges() {
        let mut r = Relation::new(2);
        r.insert(&t(&[1, 2]));
        r.ensure_index(0b01);
        r.insert(&t(&[1, 3]));
        r.insert(&t(&[2, 3]));
        r.insert(&t(&[1, 4]));
        let k = pack([Term(1)].into_iter());
        assert_eq!(found(&r, 0b01, k, 0..4), [[0, 2], [1, 3], [3, 4]]);
        assert_eq!(found(&r, 0b01, k, 1..3), [[1, 3]]);
        r.ensure_index(0b11);
        let k = pack([Term(2), Term(3)].into_iter());
        assert_eq!(found(&r, 0b11, k, 0..4), [[2, 0]]);
    }

    /// A relation of `arity` given each of `rounds` (less the keys it holds) as a round,
    /// at one thread and at two: both hold the same tuples in the same order, every one
    /// of them and no other.
    fn append_alike(arity: usize, rounds: &[Vec<u64>], absent: &[u32]) {
        let build = |threads: usize| {
            let mut r = Relation::new(arity);
            for round in rounds {
                let mut keys = round.clone();
                keys.sort_unstable();
                keys.dedup();
                r.retain_absent(&mut keys, |&k| k);
                r.append_keys(keys, threads);
                assert!(r.advance());
            }
            r
        };
        let (one, two) = (build(1), build(2));
        assert_eq!(one.len(), two.len());
        assert!(one.iter().zip(two.iter()).all(|(a, b)| a == b));
        for (_, t) in two.iter() {
            assert!(two.contains(t));
        }
        assert!(!two.contains(&t(absent)));
    }

    #[test]
    fn a_relation_without_indexes_takes_large_rounds_alike_on_two_threads() {
        // Rounds past PARALLEL_INDEX keys: the tuples and the runs take them on two
        // threads; the third round is under half the runs' size, so it is not merged in.
        let sizes = [
            PARALLEL_INDEX * 2,
            PARALLEL_INDEX * 3,
            PARALLEL_INDEX + 9,
            40,
        ];
        let rounds: Vec<Vec<u64>> = (0..sizes.len() as u64)
            .map(|n| {
                (0..sizes[n as usize] as u64)
                    .map(|i| ((i * 7 + n) % 100_003) << 32 | ((i * 13 + 5) % 1_009))
                    .collect()
            })
            .collect();
        append_alike(2, &rounds, &[100_004, 0]);
    }

    #[test]
    fn a_unary_relation_takes_large_rounds_alike_on_two_threads() {
        // The tuples take a round past PARALLEL_INDEX keys in two halves, a term a key.
        let rounds: Vec<Vec<u64>> = (0..3u64)
            .map(|n| {
                (0..PARALLEL_INDEX as u64 * 2 + 3)
                    .map(|i| (i * 5 + n) % 300_007)
                    .collect()
            })
            .collect();
        append_alike(1, &rounds, &[300_008]);
    }

    #[test]
    fn membership_moves_to_a_small_grouped_index_and_back_to_runs() {
        let mut r = Relation::new(2);
        let mut held = std::collections::BTreeSet::new();
        let add = |r: &mut Relation,
                   held: &mut std::collections::BTreeSet<u64>,
                   keys: Vec<u64>,
                   threads: usize| {
            let mut keys: Vec<u64> = keys.into_iter().filter(|k| !held.contains(k)).collect();
            keys.sort_unstable();
            keys.dedup();
            let mut cands = keys.clone();
            r.retain_absent(&mut cands, |&k| k);
            assert_eq!(cands, keys, "new keys are absent");
            held.extend(keys.iter().copied());
            r.append_keys(keys, threads);
            r.advance();
        };
        let check = |r: &Relation, held: &std::collections::BTreeSet<u64>| {
            for a in 0..60u64 {
                for b in 0..60u64 {
                    let k = a << 32 | b;
                    let tuple = t(&[a as u32, b as u32]);
                    assert_eq!(r.contains(&tuple), held.contains(&k), "{a} {b}");
                    let mut cands = vec![k];
                    r.retain_absent(&mut cands, |&k| k);
                    assert_eq!(cands.is_empty(), held.contains(&k), "{a} {b}");
                }
            }
        };
        // One object a variable: the index on the first column takes over, and the runs go.
        add(
            &mut r,
            &mut held,
            (0..50u64).map(|a| a << 32 | (a + 1)).collect(),
            1,
        );
        assert_eq!(r.membership, None, "no index yet");
        r.ensure_index(0b01);
        assert_eq!(r.membership, Some(0b01));
        assert_eq!(r.members.len(), 0);
        add(
            &mut r,
            &mut held,
            (0..50u64).map(|a| a << 32 | (a + 2)).collect(),
            2,
        );
        assert_eq!(r.membership, Some(0b01), "two a term");
        check(&r, &held);
        // Fifty objects each: past four entries a term, the runs come back, whole.
        for round in 0..3u64 {
            let keys = (0..50u64)
                .flat_map(|a| (0..20u64).map(move |b| (a << 32) | ((b * 3 + round) % 60)))
                .collect();
            add(&mut r, &mut held, keys, 1);
        }
        assert_eq!(r.membership, None);
        assert_eq!(r.members.len(), held.len());
        check(&r, &held);
    }

    #[test]
    fn indexes_updated_on_several_threads_match_one_thread() {
        // Rounds large enough that each index takes its new tuples on a thread of its own,
        // with a dense column (ranked layers) and a sparse one (sparse layers).
        let round = |r: usize| -> Vec<u64> {
            let mut keys: Vec<u64> = (0..PARALLEL_INDEX as u64 + 500)
                .map(|i| {
                    let a = (i * 7919 + r as u64 * 104_729) % 50_000;
                    let b = if r == 2 { i * 1_000_003 } else { i % 977 };
                    a << 32 | b
                })
                .collect();
            keys.sort_unstable();
            keys.dedup();
            keys
        };
        let build = |threads: usize| {
            let mut r = Relation::new(2);
            r.append_keys(round(0), threads);
            r.ensure_index(0b01);
            r.ensure_index(0b10);
            for n in 1..4 {
                let mut keys = round(n);
                r.retain_absent(&mut keys, |&k| k);
                r.append_keys(keys, threads);
            }
            r
        };
        let (one, two) = (build(1), build(2));
        assert_eq!(one.len(), two.len());
        // Every tuple is in both indexes (the runs and the indexes take a round's tuples
        // on two threads at once).
        for r in [&one, &two] {
            for (id, t) in r.iter() {
                let (a, b) = (u128::from(t[0].0), u128::from(t[1].0));
                assert!(found(r, 0b01, a, 0..r.len()).contains(&[id, t[1].0]));
                assert!(found(r, 0b10, b, 0..r.len()).contains(&[id, t[0].0]));
            }
        }
        for t in (0..50_000u32).step_by(37).chain([5, 976, 1_000_003]) {
            for mask in [0b01, 0b10] {
                let k = u128::from(t);
                assert_eq!(
                    found(&one, mask, k, 0..one.len()),
                    found(&two, mask, k, 0..two.len())
                );
            }
        }
    }
}
