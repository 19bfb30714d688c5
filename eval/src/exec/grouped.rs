//! Index entries grouped by term, in term order: the layout of a settled relation's index
//! on one column, and of each layer of a growing relation's.
//!
//! The entries of every term sit together in one array, ascending by id within a term, and
//! a term's group is found in one of two ways:
//! - **ranked**, when the terms are dense enough: term `lo + i` is present when bit `i % 64`
//!   of `words[i / 64].0` is set, and its rank `r` (the terms present before it) is
//!   `words[i / 64].1` plus the bits set below it in that word; its entries are
//!   `ids[offsets[r]..offsets[r + 1]]`. A probe reads one bitmap word and two offsets.
//! - **sparse** otherwise: the present terms ascending in `terms`, found by binary search.
//!
//! Probes made in term order (a delta sorted on the joined column) read all three arrays
//! front to back, as a merge join would.

use crate::exec::index::Entry;

/// A ranked layout is used when the terms span at most this many times the entries (plus a
/// small constant): its bitmap and ranks (16 bytes per 64 terms) then cost at most 8 bytes
/// an entry.
pub(crate) const RANK_SPREAD: usize = 32;

/// At least this many entries merged are merged on two threads (when there are two).
const PARALLEL_MERGE: usize = 1 << 18;

/// Entries grouped by term in term order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Grouped {
    /// The smallest term.
    lo: u32,
    /// The largest term.
    hi: u32,
    /// Ranked layout: per 64 terms from `lo`, which are present and how many are present
    /// before them. Empty in the sparse layout.
    words: Vec<(u64, u32)>,
    /// Sparse layout: the present terms, ascending. Empty in the ranked layout.
    terms: Vec<u32>,
    /// Where each present term's entries start, in term order (one more than the terms).
    offsets: Vec<u32>,
    /// Every entry, grouped by term in term order.
    ids: Vec<Entry>,
}

/// Whether terms from `lo` to `hi` are dense enough among `n` entries to be ranked.
pub(crate) fn rankable(lo: u32, hi: u32, n: usize) -> bool {
    ((hi - lo) as usize) < RANK_SPREAD * n + (1 << 16)
}

/// Builds a [`Grouped`] from groups given in ascending term order.
struct Builder {
    g: Grouped,
    ranked: bool,
}

impl Builder {
    /// For terms from `lo` to `hi` and `n` entries in all; ranked when `ranked`.
    fn new(lo: u32, hi: u32, n: usize, ranked: bool) -> Builder {
        let words = if ranked {
            vec![(0u64, 0u32); ((hi - lo) as usize + 1).div_ceil(64)]
        } else {
            Vec::new()
        };
        Builder {
            g: Grouped {
                lo,
                hi,
                words,
                terms: Vec::new(),
                offsets: Vec::new(),
                ids: Vec::with_capacity(n),
            },
            ranked,
        }
    }

    /// Starts the group of `term` (greater than every term so far).
    fn start(&mut self, term: u32) {
        let g = &mut self.g;
        if self.ranked {
            let i = (term - g.lo) as usize;
            g.words[i / 64].0 |= 1 << (i % 64);
        } else {
            g.terms.push(term);
        }
        g.offsets.push(g.ids.len() as u32);
    }

    fn finish(mut self) -> Grouped {
        let g = &mut self.g;
        g.offsets.push(g.ids.len() as u32);
        let mut present = 0u32;
        for w in &mut g.words {
            w.1 = present;
            present += w.0.count_ones();
        }
        self.g
    }
}

impl Grouped {
    /// Bytes held: the ranks or terms, the offsets and the entries.
    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * size_of::<(u64, u32)>()
            + (self.terms.len() + self.offsets.len()) * size_of::<u32>()
            + self.ids.len() * size_of::<Entry>()
    }

    /// The grouping of `order`, `(term, entry)` pairs sorted by term (stably: a term's ids
    /// ascending); ranked when the terms are dense enough, or when `sparse_ok` is false and
    /// they are not (then None).
    pub(crate) fn build(order: &[(u32, Entry)], sparse_ok: bool) -> Option<Grouped> {
        let (Some(&(lo, _)), Some(&(hi, _))) = (order.first(), order.last()) else {
            return Some(Grouped::default());
        };
        let ranked = rankable(lo, hi, order.len());
        if !ranked && !sparse_ok {
            return None;
        }
        let mut b = Builder::new(lo, hi, order.len(), ranked);
        let mut last = None;
        for &(t, e) in order {
            if last != Some(t) {
                b.start(t);
                last = Some(t);
            }
            b.g.ids.push(e);
        }
        Some(b.finish())
    }

    /// How many terms it holds entries of.
    pub(crate) fn terms(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// How many entries it holds.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// The entries of `term`, ascending by id.
    pub(crate) fn get(&self, term: u32) -> &[Entry] {
        if self.ids.is_empty() || term < self.lo || term > self.hi {
            return &[];
        }
        let r = if self.words.is_empty() {
            match self.terms.binary_search(&term) {
                Ok(r) => r,
                Err(_) => return &[],
            }
        } else {
            let i = (term - self.lo) as usize;
            let (bits, before) = self.words[i / 64];
            let bit = 1u64 << (i % 64);
            if bits & bit == 0 {
                return &[];
            }
            before as usize + (bits & (bit - 1)).count_ones() as usize
        };
        &self.ids[self.offsets[r] as usize..self.offsets[r + 1] as usize]
    }

    /// How many terms are present below `term`.
    fn rank_of(&self, term: u32) -> usize {
        if self.ids.is_empty() || term <= self.lo {
            return 0;
        }
        if term > self.hi {
            return self.offsets.len() - 1;
        }
        if self.words.is_empty() {
            return self.terms.partition_point(|&t| t < term);
        }
        let i = (term - self.lo) as usize;
        let (bits, before) = self.words[i / 64];
        before as usize + (bits & ((1u64 << (i % 64)) - 1)).count_ones() as usize
    }

    /// The present terms from `from` on, in order, each with its entries.
    fn groups_from(&self, from: u32) -> impl Iterator<Item = (u32, &[Entry])> + '_ {
        let first = self.rank_of(from);
        let skip = (from.max(self.lo) - self.lo) as usize;
        let ranked =
            self.words
                .iter()
                .enumerate()
                .skip(skip / 64)
                .flat_map(move |(w, &(bits, _))| {
                    let base = self.lo + (w as u32) * 64;
                    // In the first word, only the terms from `from` on.
                    let mut bits = if w == skip / 64 {
                        bits & !((1u64 << (skip % 64)) - 1)
                    } else {
                        bits
                    };
                    std::iter::from_fn(move || {
                        (bits != 0).then(|| {
                            let b = bits.trailing_zeros();
                            bits &= bits - 1;
                            base + b
                        })
                    })
                });
        let terms = ranked.chain(self.terms[self.terms.len().min(first)..].iter().copied());
        terms.enumerate().map(move |(r, t)| {
            let r = first + r;
            (
                t,
                &self.ids[self.offsets[r] as usize..self.offsets[r + 1] as usize],
            )
        })
    }

    /// `self` and `newer` (whose ids all follow this one's) as one grouping; a large merge
    /// is cut in two term ranges merged on two threads when `threads` allows.
    pub(crate) fn merge_on(&self, newer: &Grouped, threads: usize) -> Grouped {
        if newer.ids.is_empty() {
            return self.clone();
        }
        if self.ids.is_empty() {
            return newer.clone();
        }
        let (lo, hi) = (self.lo.min(newer.lo), self.hi.max(newer.hi));
        let n = self.len() + newer.len();
        let ranked = rankable(lo, hi, n);
        // The middle of the span, on a word boundary so the halves' bitmaps join.
        let split = lo + (hi - lo) / 2 / 64 * 64;
        if threads < 2 || n < PARALLEL_MERGE || split <= lo {
            return self.merge_range(newer, (lo, hi), lo, None, ranked);
        }
        let (mut low, mut high) = (Grouped::default(), Grouped::default());
        crate::exec::pool::join(
            || low = self.merge_range(newer, (lo, split - 1), lo, Some(split), ranked),
            || high = self.merge_range(newer, (split, hi), split, None, ranked),
        );
        // The upper half's ranks and offsets count on from the lower half's.
        let terms = (low.offsets.len() - 1) as u32;
        let entries = low.ids.len() as u32;
        low.offsets.pop();
        low.offsets
            .extend(high.offsets.iter().map(|&o| o + entries));
        low.words
            .extend(high.words.iter().map(|&(bits, r)| (bits, r + terms)));
        low.terms.extend_from_slice(&high.terms);
        low.ids.extend_from_slice(&high.ids);
        low.hi = hi;
        low
    }

    /// The merge of the groups of terms from `from` up to `to` (excluded; None: the last),
    /// laid out for terms from `span.0` to `span.1`.
    fn merge_range(
        &self,
        newer: &Grouped,
        span: (u32, u32),
        from: u32,
        to: Option<u32>,
        ranked: bool,
    ) -> Grouped {
        if ranked && span.0 == from && self.is_ranked() && newer.is_ranked() {
            return self.merge_words(newer, span, to);
        }
        let below = |g: &(u32, &[Entry])| to.is_none_or(|to| g.0 < to);
        let mut b = Builder::new(span.0, span.1, self.len() + newer.len(), ranked);
        let mut a = self.groups_from(from).take_while(below).peekable();
        let mut c = newer.groups_from(from).take_while(below).peekable();
        loop {
            let t = match (a.peek(), c.peek()) {
                (Some(&(x, _)), Some(&(y, _))) => x.min(y),
                (Some(&(x, _)), None) => x,
                (None, Some(&(y, _))) => y,
                (None, None) => break,
            };
            b.start(t);
            // The older layer's entries first: ids stay ascending.
            if let Some((_, ids)) = a.next_if(|g| g.0 == t) {
                b.g.ids.extend_from_slice(ids);
            }
            if let Some((_, ids)) = c.next_if(|g| g.0 == t) {
                b.g.ids.extend_from_slice(ids);
            }
        }
        b.finish()
    }
}

impl Grouped {
    /// Whether it is laid out ranked (an empty grouping counts as ranked).
    fn is_ranked(&self) -> bool {
        self.ids.is_empty() || !self.words.is_empty()
    }

    /// The presence bits of terms `base` to `base + 63` (ranked layout): bit `i` is set
    /// when term `base + i` has entries.
    fn window(&self, base: u64) -> u64 {
        let (lo, hi) = (u64::from(self.lo), u64::from(self.hi));
        if self.ids.is_empty() || base > hi || base + 63 < lo {
            return 0;
        }
        if base < lo {
            return self.words[0].0 << (lo - base);
        }
        let off = (base - lo) as usize;
        let (w, s) = (off / 64, off % 64);
        let low = self.words[w].0 >> s;
        match self.words.get(w + 1) {
            Some(&(next, _)) if s > 0 => low | next << (64 - s),
            _ => low,
        }
    }

    /// [`Grouped::merge_range`] of two ranked groupings into a ranked one starting at
    /// `span.0`: the output's bitmap is the union of the inputs' a word at a time, and
    /// each input's groups are read in order (their ranks count up), with no search.
    fn merge_words(&self, newer: &Grouped, span: (u32, u32), to: Option<u32>) -> Grouped {
        let from = span.0;
        let (mut ra, mut rc) = (self.rank_of(from), newer.rank_of(from));
        let (ea, ec) = match to {
            Some(to) => (self.rank_of(to), newer.rank_of(to)),
            None => (self.offsets.len() - 1, newer.offsets.len() - 1),
        };
        let entries = |g: &Grouped, r: usize, e: usize| {
            g.offsets
                .get(e)
                .zip(g.offsets.get(r))
                .map_or(0, |(e, r)| (e - r) as usize)
        };
        let n = entries(self, ra, ea) + entries(newer, rc, ec);
        let mut b = Builder::new(span.0, span.1, n, true);
        b.g.offsets.reserve(ea - ra + ec - rc + 1);
        for w in 0..b.g.words.len() {
            let base = u64::from(from) + 64 * w as u64;
            let (x, y) = (self.window(base), newer.window(base));
            let mut bits = x | y;
            b.g.words[w].0 = bits;
            while bits != 0 {
                let bit = bits & bits.wrapping_neg();
                bits ^= bit;
                b.g.offsets.push(b.g.ids.len() as u32);
                // The older layer's entries first: ids stay ascending.
                if x & bit != 0 {
                    let (s, e) = (self.offsets[ra] as usize, self.offsets[ra + 1] as usize);
                    b.g.ids.extend_from_slice(&self.ids[s..e]);
                    ra += 1;
                }
                if y & bit != 0 {
                    let (s, e) = (newer.offsets[rc] as usize, newer.offsets[rc + 1] as usize);
                    b.g.ids.extend_from_slice(&newer.ids[s..e]);
                    rc += 1;
                }
            }
        }
        b.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(pairs: &[(u32, u32)]) -> Vec<(u32, Entry)> {
        let mut o: Vec<(u32, Entry)> = pairs
            .iter()
            .enumerate()
            .map(|(id, &(t, x))| (t, [id as u32, x]))
            .collect();
        o.sort_by_key(|e| e.0);
        o
    }

    #[test]
    fn ranked_and_sparse_find_the_same_groups() {
        let pairs: Vec<(u32, u32)> = (0..500u32).map(|i| ((i % 60) * 7 + 3, i)).collect();
        let o = order(&pairs);
        let ranked = Grouped::build(&o, false).unwrap();
        assert!(!ranked.words.is_empty());
        let mut sparse = Grouped::build(&o, true).unwrap();
        // The same entries in the sparse layout.
        sparse.words.clear();
        sparse.terms = o.iter().map(|e| e.0).collect();
        sparse.terms.dedup();
        for t in 0..500 {
            let expected: Vec<Entry> = o.iter().filter(|e| e.0 == t).map(|e| e.1).collect();
            assert_eq!(ranked.get(t), &expected[..], "term {t}");
            assert_eq!(sparse.get(t), &expected[..], "term {t}");
        }
        let groups: Vec<u32> = ranked.groups_from(0).map(|g| g.0).collect();
        assert_eq!(groups, sparse.terms);
    }

    #[test]
    fn far_apart_terms_are_sparse_or_refused() {
        let o = order(&[(1, 0), (1 << 30, 1), (1 << 30, 2)]);
        assert!(Grouped::build(&o, false).is_none());
        let g = Grouped::build(&o, true).unwrap();
        assert!(g.words.is_empty());
        assert_eq!(g.get(1 << 30), &[[1, 1], [2, 2]]);
        assert_eq!(g.get(1), &[[0, 0]]);
        assert!(g.get(2).is_empty());
        assert!(Grouped::build(&[], false).unwrap().get(0).is_empty());
    }

    #[test]
    fn merge_keeps_ids_ascending_within_a_term() {
        let older = order(&[(5, 0), (9, 1), (5, 2), (700_000, 3)]);
        let newer: Vec<(u32, Entry)> = vec![(2, [4, 0]), (5, [5, 0]), (9, [6, 0])];
        let a = Grouped::build(&older, true).unwrap();
        let b = Grouped::build(&newer, true).unwrap();
        let m = a.merge_on(&b, 1);
        assert_eq!(m.len(), 7);
        assert_eq!(m.get(5), &[[0, 0], [2, 2], [5, 0]]);
        assert_eq!(m.get(9), &[[1, 1], [6, 0]]);
        assert_eq!(m.get(2), &[[4, 0]]);
        assert_eq!(m.get(700_000), &[[3, 3]]);
        assert!(m.get(6).is_empty());
    }

    #[test]
    fn a_merge_on_two_threads_equals_one_on_one() {
        // Past PARALLEL_MERGE entries: dense terms (ranked) and terms spread far (sparse).
        let mut x: u64 = 7;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for spread in [3u64, 1 << 30] {
            let n = PARALLEL_MERGE as u32;
            let mut older: Vec<(u32, Entry)> = (0..n)
                .map(|id| {
                    (
                        (next() % (u64::from(n) * spread / 4 + 1)) as u32 + 9,
                        [id, id],
                    )
                })
                .collect();
            older.sort_by_key(|e| e.0);
            let mut newer: Vec<(u32, Entry)> = (n..n + 1000)
                .map(|id| ((next() % (u64::from(n) * spread / 4 + 1)) as u32, [id, 0]))
                .collect();
            newer.sort_by_key(|e| e.0);
            let (a, b) = (
                Grouped::build(&older, true).unwrap(),
                Grouped::build(&newer, true).unwrap(),
            );
            let (one, two) = (a.merge_on(&b, 1), a.merge_on(&b, 2));
            assert_eq!(one.words.is_empty(), spread > 3);
            assert_eq!(one.len(), two.len());
            assert_eq!((one.lo, one.hi), (two.lo, two.hi));
            assert_eq!(one.words.len(), two.words.len());
            assert!(one.words.iter().zip(&two.words).all(|(p, q)| p == q));
            assert_eq!(one.terms, two.terms);
            assert_eq!(one.offsets, two.offsets);
            assert_eq!(one.ids, two.ids);
            for e in newer.iter().chain(&older).step_by(97) {
                assert_eq!(one.get(e.0), two.get(e.0));
                assert!(one.get(e.0).contains(&e.1));
            }
        }
    }

    #[test]
    fn ranked_layers_merged_word_by_word_hold_every_group() {
        // Layers whose first terms fall anywhere in a word, below, inside and above each
        // other, merged on one thread and (past PARALLEL_MERGE) on two.
        let mut x: u64 = 11;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        // (older entries, newer entries, newer's offset, older's spread): the layers' first
        // terms 0, 1, 63 and 95 apart modulo a word.
        let sizes = [
            (40, 300, 0, 5),
            (3, 300, 100, 7),
            (2000, 500, 6, 2),
            (2000, 500, 68, 2),
            (PARALLEL_MERGE as u32, 2000, 37, 1),
        ];
        for (n, m, shift, span) in sizes {
            let mut older: Vec<(u32, Entry)> = (0..n)
                .map(|id| ((next(u64::from(n) * span) as u32) + 5, [id, id]))
                .collect();
            older.sort_by_key(|e| e.0);
            let mut newer: Vec<(u32, Entry)> = (n..n + m)
                .map(|id| (next(u64::from(m) * 3) as u32 + shift, [id, 1]))
                .collect();
            newer.sort_by_key(|e| e.0);
            let (a, b) = (
                Grouped::build(&older, false).unwrap(),
                Grouped::build(&newer, false).unwrap(),
            );
            for (merged, threads) in [(a.merge_on(&b, 1), 1), (b.merge_on(&a, 2), 2)] {
                assert!(!merged.words.is_empty());
                assert_eq!(merged.len(), (n + m) as usize);
                let (first, second) = if threads == 1 {
                    (&older, &newer)
                } else {
                    (&newer, &older)
                };
                let mut expected: std::collections::BTreeMap<u32, Vec<Entry>> =
                    std::collections::BTreeMap::new();
                for e in first.iter().chain(second.iter()) {
                    expected.entry(e.0).or_default().push(e.1);
                }
                let hi = expected.keys().last().copied().unwrap_or(0);
                for t in 0..=hi + 70 {
                    let expected = expected.get(&t).map_or(&[][..], |v| &v[..]);
                    assert_eq!(merged.get(t), expected, "term {t}, {threads} threads");
                }
            }
        }
    }
}
