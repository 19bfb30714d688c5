//! The set of packed keys a derived relation of one or two columns keeps for membership:
//! sorted runs while its keys are sparse, rows of bit words once they are dense.
//!
//! Runs ([`crate::exec::sorted`]) cost 8 bytes a key, and checking a candidate reads each of
//! their `log n` runs: a long chain's closure, whose every round's candidates are all new,
//! spent more than half its time there, each candidate checked against a dozen runs, and
//! another eighth merging them. A relation whose keys crowd together (a closure's pairs
//! from one source, `(x, z)` for many nearby `z`) keeps them instead as rows: one per first
//! term, found through a hash table, holding 64-bit words from the row's least second term
//! to its greatest, bit `z & 63` of word `z / 64` saying whether `(x, z)` is held. A check
//! is a row found (once for the neighbouring candidates of one row) and a bit read, whatever
//! the relation's size; an append sets bits where the runs merged keys; and at [`DENSE`]
//! keys a word the rows hold a quarter of what the runs did. The keys' spans are summed at
//! sizes that double (each run's, so at least the rows'), which costs a scan of the keys
//! now and then; an append that would leave fewer than [`SPARSE`] keys a word (a row
//! stretched far for a few keys) sends the keys back to runs first. Which one holds the keys
//! changes no answer, id or work count: both hold the same set.

use hashbrown::HashTable;

use crate::exec::sorted::Runs;

/// Keys a word, on average, from which the keys are kept as words.
const DENSE: usize = 2;
/// Keys a word under which words go back to runs.
const SPARSE: usize = 1;
/// The fewest keys counted for density: below it, runs.
const FIRST_CHECK: usize = 1 << 12;

/// A key's row: its first term (the top 32 bits).
fn row_of(k: u64) -> u32 {
    (k >> 32) as u32
}

/// A key's word within its row: the second term over 64.
fn word_of(k: u64) -> u32 {
    (k as u32) >> 6
}

/// A key's bit within its word.
fn bit_of(k: u64) -> u64 {
    1 << (k & 63)
}

/// The table's hash of a row: a 128-bit product folded, so that the low bits (the
/// bucket) and the top ones (the control byte) both depend on every bit of the term.
fn hash(row: u32) -> u64 {
    let p = u128::from(row) * 0x9E37_79B9_7F4A_7C15;
    (p as u64) ^ ((p >> 64) as u64)
}

/// One row's bits: the words from word `base` on.
#[derive(Debug, Default)]
struct Row {
    base: u32,
    words: Vec<u64>,
}

impl Row {
    /// Whether the row holds the key whose word and bit these are.
    fn holds(&self, word: u32, bit: u64) -> bool {
        word.checked_sub(self.base)
            .and_then(|i| self.words.get(i as usize))
            .is_some_and(|&w| w & bit != 0)
    }

    /// The base and length the row takes to span words `lo ..= hi`. Growing down, it
    /// adds at least as many words as it has (down to word 0), so that keys arriving in
    /// descending order cost amortized constant time, as ascending ones do.
    fn spanned(&self, lo: u32, hi: u32) -> (u32, usize) {
        if self.words.is_empty() {
            return (lo, (hi - lo) as usize + 1);
        }
        let base = if lo < self.base {
            let room = (self.base - lo).max(self.words.len() as u32).min(self.base);
            self.base - room
        } else {
            self.base
        };
        let end = (self.base as usize + self.words.len()).max(hi as usize + 1);
        (base, end - base as usize)
    }

    /// Makes the row span words `lo ..= hi` ([`Row::spanned`]); returns the words added.
    fn cover(&mut self, lo: u32, hi: u32) -> usize {
        let before = self.words.len();
        let (base, len) = self.spanned(lo, hi);
        if base < self.base && !self.words.is_empty() {
            let room = (self.base - base) as usize;
            self.words.splice(0..0, std::iter::repeat_n(0, room));
        }
        self.base = base;
        self.words.resize(len, 0);
        len - before
    }
}

/// Keys as rows of bit words, one row per first term: a table from the term to its row.
#[derive(Debug, Default)]
struct Rows {
    table: HashTable<(u32, u32)>,
    rows: Vec<Row>,
    /// Words the rows hold.
    words: usize,
}

impl Rows {
    fn bytes(&self) -> usize {
        self.table.capacity() * (size_of::<(u32, u32)>() + 1)
            + self.rows.capacity() * size_of::<Row>()
            + self.words * size_of::<u64>()
    }

    /// The row of first term `r`, if any.
    fn row(&self, r: u32) -> Option<&Row> {
        let &(_, i) = self.table.find(hash(r), |e| e.0 == r)?;
        self.rows.get(i as usize)
    }

    /// The words adding `keys` (ascending) would add to the rows.
    fn growth(&self, keys: &[u64]) -> usize {
        keys.chunk_by(|a, b| row_of(*a) == row_of(*b))
            .map(|g| {
                let (Some(&first), Some(&last)) = (g.first(), g.last()) else {
                    return 0;
                };
                let (lo, hi) = (word_of(first), word_of(last));
                match self.row(row_of(first)) {
                    Some(row) => row.spanned(lo, hi).1 - row.words.len(),
                    None => (hi - lo) as usize + 1,
                }
            })
            .sum()
    }

    /// Adds `keys` (ascending), one table probe per row they reach.
    fn insert(&mut self, keys: &[u64]) {
        for group in keys.chunk_by(|a, b| row_of(*a) == row_of(*b)) {
            let (Some(&first), Some(&last)) = (group.first(), group.last()) else {
                continue;
            };
            let r = row_of(first);
            let i = match self.table.find(hash(r), |e| e.0 == r) {
                Some(&(_, i)) => i as usize,
                None => {
                    let i = self.rows.len();
                    self.rows.push(Row::default());
                    self.table
                        .insert_unique(hash(r), (r, i as u32), |e| hash(e.0));
                    i
                }
            };
            let row = &mut self.rows[i];
            self.words += row.cover(word_of(first), word_of(last));
            for &k in group {
                row.words[(word_of(k) - row.base) as usize] |= bit_of(k);
            }
        }
    }

    /// Every key, ascending.
    fn keys(&self) -> Vec<u64> {
        let mut order: Vec<(u32, u32)> = self.table.iter().copied().collect();
        order.sort_unstable();
        let mut keys = Vec::new();
        for (r, i) in order {
            let row = &self.rows[i as usize];
            for (w, &bits) in row.words.iter().enumerate() {
                let mut bits = bits;
                let at = u64::from(r) << 32 | u64::from(row.base + w as u32) << 6;
                while bits != 0 {
                    keys.push(at | u64::from(bits.trailing_zeros()));
                    bits &= bits - 1;
                }
            }
        }
        keys
    }
}

/// The words `keys` (sorted) would fill as rows: each row from its least word to its
/// greatest.
fn span_words(keys: &[u64]) -> usize {
    keys.chunk_by(|a, b| row_of(*a) == row_of(*b))
        .map(|g| match (g.first(), g.last()) {
            (Some(&a), Some(&b)) => (word_of(b) - word_of(a)) as usize + 1,
            _ => 0,
        })
        .sum()
}

/// The keys of a relation, for membership: in runs or in rows of words.
#[derive(Debug, Default)]
pub struct KeySet {
    /// The keys while sparse (empty while `dense`).
    runs: Runs,
    /// The keys while dense (empty otherwise).
    rows: Rows,
    dense: bool,
    /// Keys held.
    len: usize,
    /// The size at which the density is next counted.
    check_at: usize,
}

impl KeySet {
    /// Bytes held: the runs' keys and fences, or the rows.
    pub fn bytes(&self) -> usize {
        self.runs.bytes() + self.rows.bytes()
    }

    /// How many keys the set holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether the keys are kept as rows of words.
    #[cfg(test)]
    pub(crate) fn dense(&self) -> bool {
        self.dense
    }

    /// Whether the set holds `k`.
    pub fn contains(&self, k: u64) -> bool {
        if self.dense {
            return self
                .rows
                .row(row_of(k))
                .is_some_and(|row| row.holds(word_of(k), bit_of(k)));
        }
        self.runs.contains(k)
    }

    /// Keeps the candidates (sorted by key, distinct) the set does not hold. Reads only:
    /// several threads may filter disjoint candidates at once.
    pub fn retain_absent<T>(&self, cands: &mut Vec<T>, key: impl Fn(&T) -> u64) {
        if !self.dense {
            self.runs.retain_absent(cands, key);
            return;
        }
        // Candidates of one row are neighbours: the row is looked up once for them.
        let mut last: Option<(u32, Option<&Row>)> = None;
        cands.retain(|c| {
            let k = key(c);
            let r = row_of(k);
            let row = match last {
                Some((at, row)) if at == r => row,
                _ => {
                    let row = self.rows.row(r);
                    last = Some((r, row));
                    row
                }
            };
            !row.is_some_and(|row| row.holds(word_of(k), bit_of(k)))
        });
    }

    /// Adds `keys` (sorted, distinct, absent from the set): merged into the runs (large
    /// merges on up to `threads` threads) or set in the rows, then, at sizes that double,
    /// moved to the other kind when the density says so.
    pub fn push(&mut self, keys: Vec<u64>, threads: usize) {
        if keys.is_empty() {
            return;
        }
        self.len += keys.len();
        if self.dense {
            // Words the keys would spread over thinly (a row stretched far for a few keys)
            // send every key back to runs before a word is added.
            if self.len >= SPARSE * (self.rows.words + self.rows.growth(&keys)) {
                self.rows.insert(&keys);
                return;
            }
            let held = self.rows.keys();
            self.rows = Rows::default();
            self.dense = false;
            self.check_at = self.len * 2;
            self.runs.push(held, threads);
            self.runs.push(keys, threads);
            return;
        }
        self.runs.push(keys, threads);
        if self.len < self.check_at.max(FIRST_CHECK) {
            return;
        }
        self.check_at = self.len * 2;
        // Each run's spans, summed: at least the words the rows would hold.
        let words: usize = self.runs.slices().map(span_words).sum();
        if self.len >= DENSE * words {
            let mut rows = Rows::default();
            for run in self.runs.slices() {
                rows.insert(run);
            }
            self.runs = Runs::default();
            self.rows = rows;
            self.dense = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Pushes `rounds` (less what the set holds) and checks membership against a
    /// `BTreeSet` after each; returns whether the set ended dense.
    fn follow(rounds: &[Vec<u64>], probes: &[u64]) -> bool {
        let mut set = KeySet::default();
        let mut all = BTreeSet::new();
        for (n, round) in rounds.iter().enumerate() {
            let mut keys = round.clone();
            keys.sort_unstable();
            keys.dedup();
            let mut fresh = keys.clone();
            set.retain_absent(&mut fresh, |&k| k);
            let expected: Vec<u64> = keys.iter().copied().filter(|k| !all.contains(k)).collect();
            assert_eq!(fresh, expected, "round {n}");
            all.extend(fresh.iter().copied());
            set.push(fresh, 1 + n % 2);
            assert_eq!(set.len(), all.len());
            for &k in probes.iter().chain(all.iter().step_by(7)) {
                assert_eq!(set.contains(k), all.contains(&k), "round {n}, key {k}");
            }
        }
        set.dense()
    }

    #[test]
    fn a_dense_closure_moves_to_words_and_answers_alike() {
        // A chain's closure: round r adds (x, x + r) for every x.
        let rounds: Vec<Vec<u64>> = (1..200u64)
            .map(|r| (0..300u64).map(|x| x << 32 | (x + r)).collect())
            .collect();
        let probes: Vec<u64> = (0..300u64)
            .flat_map(|x| [x << 32, x << 32 | (x + 250), x << 32 | (x + 64)])
            .collect();
        assert!(follow(&rounds, &probes));
    }

    #[test]
    fn sparse_keys_stay_in_runs_and_thinning_words_go_back() {
        let mut x: u64 = 7;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let sparse: Vec<Vec<u64>> = (0..6)
            .map(|_| (0..3000).map(|_| next() % (1 << 40)).collect())
            .collect();
        assert!(!follow(&sparse, &[0, 1, u64::MAX]));
        // Dense first (words), then many keys one to a word: back to runs.
        let mut rounds: Vec<Vec<u64>> = vec![(0..20_000u64).collect()];
        rounds.extend((0..4).map(|r| (0..40_000u64).map(|i| (i + r * 40_000 + 1) << 12).collect()));
        let mut set = KeySet::default();
        set.push(rounds[0].clone(), 1);
        assert!(set.dense());
        assert!(!follow(&rounds, &[5, 20_000, 1 << 12, 3 << 12]));
    }
}
