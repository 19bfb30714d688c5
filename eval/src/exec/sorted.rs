//! Sorted runs of packed keys: the set a relation of one or two columns keeps for
//! membership, in the manner of datafrog's batches.
//!
//! Each tuple packs into a `u64`; the set is a list of sorted runs whose sizes shrink
//! geometrically (a run is merged into the one before it once it grows to half that one's
//! size), so adding a round's new keys costs a merge of similar-sized runs and there are
//! `log n` runs. Checking a round's candidates (sorted) against a run walks both in order.
//!
//! A large run is read through a fence: every [`BLOCK`]th key, in a separate array 1/16th
//! the size. A candidate is first placed among the fences (an array small enough to stay in
//! cache), then looked up in the one block of sixteen keys that can hold it (two cache
//! lines). Galloping through the run itself would touch a new cache line at each of its
//! `log gap` steps when candidates are sparse, as they are in a long chain's rounds.

/// Keys per fence entry.
pub const BLOCK: usize = 16;

/// Merges at least this large run on two threads.
const PARALLEL_MERGE: usize = 1 << 16;

/// How many fence entries point into the first `half` keys.
fn fence_low_len(half: usize) -> usize {
    half.div_ceil(BLOCK)
}

/// Merges `b` into `a`, whose first `na` keys hold a sorted run and whose length is
/// `na + b.len()`, writing from the back.
///
/// Without a branch on which side a key comes from: the keys of two runs interleave at
/// random (a closure's round against what it knew), so such a branch would be
/// mispredicted about every other key. The larger key is selected and both positions move
/// by what the comparison gave.
fn merge_back(a: &mut [u64], na: usize, b: &[u64]) {
    let (mut i, mut j) = (na, b.len());
    while i > 0 && j > 0 {
        let (x, y) = (a[i - 1], b[j - 1]);
        let take_a = x > y;
        a[i + j - 1] = if take_a { x } else { y };
        i -= usize::from(take_a);
        j -= usize::from(!take_a);
    }
    // What is left of `a` is in place already; what is left of `b` goes below it.
    a[..j].copy_from_slice(&b[..j]);
}

/// Merges `a` and `b` into `out` (of their summed length), writing from the front,
/// without a branch on which side a key comes from (as [`merge_back`]).
fn merge_forward(out: &mut [u64], a: &[u64], b: &[u64]) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        let take_a = x < y;
        out[i + j] = if take_a { x } else { y };
        i += usize::from(take_a);
        j += usize::from(!take_a);
    }
    let rest = if i < a.len() { &a[i..] } else { &b[j..] };
    out[i + j..].copy_from_slice(rest);
}

/// Merges `b` into `out`, whose last `out.len() - b.len()` keys hold a sorted run,
/// writing from the front. A write never passes the next key of the run still to be read
/// (it lands `b.len() - j` places below it, `j` being how many of `b` are written), so
/// nothing unread is overwritten; once `b` is done the rest of the run is in place.
fn merge_front(out: &mut [u64], b: &[u64]) {
    let off = b.len();
    let (mut i, mut j) = (off, 0);
    while i < out.len() && j < b.len() {
        let (x, y) = (out[i], b[j]);
        let take_a = x < y;
        out[i - off + j] = if take_a { x } else { y };
        i += usize::from(take_a);
        j += usize::from(!take_a);
    }
    let k = i - off + j;
    out[k..k + b.len() - j].copy_from_slice(&b[j..]);
}

/// Runs `low` on `keys[..half]` and `high` on `keys[half..]` at once, then each fills the
/// entries of `fence` (one every [`BLOCK`] keys) of the keys it wrote.
fn in_halves(
    keys: &mut [u64],
    fence: &mut [u64],
    half: usize,
    low: impl FnOnce(&mut [u64]) + Send,
    high: impl FnOnce(&mut [u64]) + Send,
) {
    let (keys_low, keys_high) = keys.split_at_mut(half);
    let first = fence_low_len(half);
    let (fence_low, fence_high) = fence.split_at_mut(first);
    crate::exec::pool::join(
        || {
            low(keys_low);
            for (f, slot) in fence_low.iter_mut().enumerate() {
                *slot = keys_low[f * BLOCK];
            }
        },
        || {
            high(keys_high);
            for (f, slot) in fence_high.iter_mut().enumerate() {
                *slot = keys_high[(first + f) * BLOCK - half];
            }
        },
    );
}

/// One sorted run of distinct keys, with its fence.
#[derive(Debug, Default)]
pub struct Run {
    keys: Vec<u64>,
    /// `keys[i * BLOCK]` for every block.
    fence: Vec<u64>,
}

/// The first index `i >= from` with `keys[i] >= k` (galloping, then binary search).
pub fn gallop(keys: &[u64], from: usize, k: u64) -> usize {
    let mut step = 1;
    let mut lo = from;
    let mut hi = from;
    while hi < keys.len() && keys[hi] < k {
        lo = hi + 1;
        hi += step;
        step *= 2;
    }
    let hi = hi.min(keys.len());
    lo + keys[lo..hi].partition_point(|&x| x < k)
}

impl Run {
    /// A run of `keys` (sorted, distinct).
    pub fn new(keys: Vec<u64>) -> Run {
        debug_assert!(keys.windows(2).all(|w| w[0] < w[1]));
        let mut run = Run {
            keys,
            fence: Vec::new(),
        };
        run.build_fence();
        run
    }

    fn build_fence(&mut self) {
        self.fence.clear();
        self.fence.extend(self.keys.iter().step_by(BLOCK).copied());
    }

    /// How many keys the run holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the run holds `k`.
    pub fn contains(&self, k: u64) -> bool {
        self.keys.binary_search(&k).is_ok()
    }

    /// Merges `b` (sorted keys disjoint from this run's) into this run, in place: the keys
    /// grow by `b`'s length and the merge writes from the back, so no third buffer is
    /// needed (a large vector grows by remapping its pages, not by copying them). With two
    /// threads or more and a large merge, the output is cut in two at the merge path and
    /// the halves are merged at once, still in place (`Run::merge_halves`).
    pub fn merge(&mut self, b: &[u64], threads: usize) {
        let (na, nb) = (self.keys.len(), b.len());
        if threads < 2 || na + nb < PARALLEL_MERGE || na == 0 || nb == 0 {
            crate::exec::buffer::make_room(&mut self.keys, nb);
            self.keys.resize(na + nb, 0);
            merge_back(&mut self.keys, na, b);
            self.build_fence();
            return;
        }
        self.merge_halves(b);
    }

    /// [`Run::merge`] on two threads. The `half` smallest keys are `i` of this run's and
    /// `half - i` of `b`'s (found by binary search on the merge path). The buffer grows by
    /// `b`'s length, its new pages first touched on both threads and room reserved so that
    /// a large run grows without a copy ([`crate::exec::buffer::grow`]; a page fault costs about
    /// 2 us on the machine measured, and a 4.26M-key merge grows by 3,000 pages); this
    /// run's keys from `i` on move up by that length, to the top of the buffer. Then the
    /// low half merges from the back (its keys of this run are in place below `half`) while
    /// the high half merges from the front (its keys of this run sit above where it
    /// writes), and each fills the fence entries of its own keys. The closure's 4.26M-key
    /// merge: 16.3 ms on one thread, 9.7 on two (copying the high half aside instead, into
    /// fresh pages, made it slower than one thread).
    ///
    /// When growing the buffer would move it by copying (out of room, and in the heap:
    /// [`crate::exec::buffer::would_move`]), each half is merged from the front into a new
    /// buffer instead, its pages first written on both threads: no copy of the run, and no
    /// move of its upper keys.
    fn merge_halves(&mut self, b: &[u64]) {
        let (na, nb) = (self.keys.len(), b.len());
        let half = (na + nb) / 2;
        let a = &self.keys;
        let (mut lo, mut hi) = (half.saturating_sub(nb), half.min(na));
        while lo < hi {
            let i = lo + (hi - lo) / 2;
            if a[i] < b[half - i - 1] {
                lo = i + 1;
            } else {
                hi = i;
            }
        }
        let (i, j) = (lo, half - lo);
        self.fence.clear();
        self.fence.resize((na + nb).div_ceil(BLOCK), 0);
        let (b_low, b_high) = b.split_at(j);
        if crate::exec::buffer::would_move(&self.keys, nb) {
            // Moving would copy every key on one thread: both halves are merged into a
            // new buffer instead (its pages first written on both threads).
            let mut out = Vec::new();
            crate::exec::buffer::grow(&mut out, na + nb);
            let (a_low, a_high) = self.keys.split_at(i);
            in_halves(
                &mut out,
                &mut self.fence,
                half,
                |low| merge_forward(low, a_low, b_low),
                |high| merge_forward(high, a_high, b_high),
            );
            self.keys = out;
            return;
        }
        crate::exec::buffer::grow(&mut self.keys, nb);
        self.keys.copy_within(i..na, i + nb);
        in_halves(
            &mut self.keys,
            &mut self.fence,
            half,
            |low| merge_back(low, i, b_low),
            |high| merge_front(high, b_high),
        );
    }

    /// Keeps the candidates (sorted by key, distinct) whose key the run does not hold.
    pub fn retain_absent<T>(&self, cands: &mut Vec<T>, key: &impl Fn(&T) -> u64) {
        let (Some(first), Some(last)) = (cands.first(), cands.last()) else {
            return;
        };
        let (first, last) = (key(first), key(last));
        match (self.keys.first(), self.keys.last()) {
            (Some(&lo), Some(&hi)) if first <= hi && last >= lo => {}
            _ => return,
        }
        // Fence position: the first fence entry >= the candidate's key.
        let mut f = 0;
        cands.retain(|c| {
            let k = key(c);
            f = gallop(&self.fence, f, k);
            if f < self.fence.len() && self.fence[f] == k {
                return false;
            }
            if f == 0 {
                // Below the run's first key.
                return true;
            }
            let start = (f - 1) * BLOCK;
            let end = (start + BLOCK).min(self.keys.len());
            // No early exit: the compares run side by side and no branch is mispredicted,
            // so the next candidates' blocks are read while this one is compared.
            !self.keys[start..end]
                .iter()
                .fold(false, |seen, &x| seen | (x == k))
        });
    }
}

/// A set of keys as runs of geometrically shrinking sizes.
#[derive(Debug, Default)]
pub struct Runs {
    runs: Vec<Run>,
}

impl Runs {
    /// Bytes held: every run's keys and fence.
    pub fn bytes(&self) -> usize {
        self.runs
            .iter()
            .map(|r| (r.keys.len() + r.fence.len()) * size_of::<u64>())
            .sum()
    }

    /// Each run's keys (sorted, distinct), largest run first.
    pub fn slices(&self) -> impl Iterator<Item = &[u64]> {
        self.runs.iter().map(|r| &r.keys[..])
    }

    /// Whether some run holds `k`.
    pub fn contains(&self, k: u64) -> bool {
        self.runs.iter().any(|r| r.contains(k))
    }

    /// Keeps the candidates (sorted by key, distinct) that no run holds. Reads only:
    /// several threads may filter disjoint candidates at once.
    pub fn retain_absent<T>(&self, cands: &mut Vec<T>, key: impl Fn(&T) -> u64) {
        for run in &self.runs {
            if cands.is_empty() {
                return;
            }
            run.retain_absent(cands, &key);
        }
    }

    /// Adds a run of keys (sorted, distinct, absent from every run), merging runs so their
    /// sizes stay geometric (large merges on up to `threads` threads).
    pub fn push(&mut self, keys: Vec<u64>, threads: usize) {
        if keys.is_empty() || self.merge_in(&keys, threads) {
            return;
        }
        self.runs.push(Run::new(keys));
    }

    /// Adds `keys` (sorted, distinct, absent from every run) by merging them into the last
    /// run, when they are at least half its size (then merging runs on so their sizes stay
    /// geometric); returns whether it took them. When it did not, [`Runs::push`] adds them as
    /// a run of their own, with no merge. Reading `keys` only, this can run while another
    /// thread reads them too.
    pub fn merge_in(&mut self, keys: &[u64], threads: usize) -> bool {
        match self.runs.last_mut() {
            Some(last) if keys.len() * 2 >= last.len() => last.merge(keys, threads),
            _ => return false,
        }
        while self.runs.len() >= 2 {
            let last = self.runs.len() - 1;
            if self.runs[last].len() * 2 < self.runs[last - 1].len() {
                break;
            }
            let b = self.runs.pop().unwrap_or_default();
            if let Some(a) = self.runs.last_mut() {
                a.merge(&b.keys, threads);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retain_absent_matches_a_set() {
        let mut runs = Runs::default();
        let mut all = std::collections::BTreeSet::new();
        let mut x: u64 = 99;
        for round in 0..40u64 {
            let mut keys: Vec<u64> = (0..(round * 37 % 500 + 1))
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % 20_000
                })
                .filter(|k| !all.contains(k))
                .collect();
            keys.sort_unstable();
            keys.dedup();
            all.extend(keys.iter().copied());
            runs.push(keys, 1 + round as usize % 2);
            let mut cands: Vec<u64> = (0..20_000).step_by((round as usize % 7) + 1).collect();
            let expected: Vec<u64> = cands.iter().copied().filter(|k| !all.contains(k)).collect();
            runs.retain_absent(&mut cands, |&k| k);
            assert_eq!(cands, expected, "round {round}");
            assert!(all.iter().all(|&k| runs.contains(k)));
        }
        // Sizes stay geometric.
        assert!(runs.runs.windows(2).all(|w| w[1].len() * 2 < w[0].len()));
    }

    #[test]
    fn merges_keep_every_key_however_the_runs_overlap() {
        let cases: [(Vec<u64>, Vec<u64>); 6] = [
            (vec![], vec![1, 2, 3]),
            (vec![1, 2, 3], vec![]),
            (vec![10, 20, 30], vec![1, 2, 3]),
            (vec![1, 2, 3], vec![10, 20, 30]),
            (vec![1, 5, 9, 40], vec![2, 3, 10, 50, 60]),
            (vec![7], vec![3, 9]),
        ];
        for (a, b) in cases {
            let mut all: Vec<u64> = a.iter().chain(&b).copied().collect();
            all.sort_unstable();
            let mut back = a.clone();
            back.resize(a.len() + b.len(), 0);
            merge_back(&mut back, a.len(), &b);
            assert_eq!(back, all, "back {a:?} {b:?}");
            let mut front = b.clone();
            front.extend_from_slice(&a);
            merge_front(&mut front, &b);
            assert_eq!(front, all, "front {a:?} {b:?}");
            let mut forward = vec![0; a.len() + b.len()];
            merge_forward(&mut forward, &a, &b);
            assert_eq!(forward, all, "forward {a:?} {b:?}");
        }
    }

    #[test]
    fn parallel_merge_equals_serial_merge() {
        let mut x: u64 = 5;
        let mut all: Vec<u64> = (0..(PARALLEL_MERGE * 3))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect();
        all.sort_unstable();
        all.dedup();
        let n = all.len();
        // Which keys go to `b`: interleaved every 3rd, 2nd or 7th; all of `b` below or
        // above the run's keys; `b` one key, or all but one.
        let cases: [&dyn Fn(usize) -> bool; 7] = [
            &|k| k % 3 == 0,
            &|k| k % 2 == 0,
            &|k| k % 7 == 0,
            &|k| k < n / 3,
            &|k| k >= n / 3,
            &|k| k == n / 2,
            &|k| k != n / 2,
        ];
        let fence: Vec<u64> = all.iter().step_by(BLOCK).copied().collect();
        for (c, in_b) in cases.iter().enumerate() {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for (k, &key) in all.iter().enumerate() {
                if in_b(k) { b.push(key) } else { a.push(key) }
            }
            // With room for `b` the run merges in place; without, into a new buffer.
            for room in [true, false] {
                let mut a = a.clone();
                if room {
                    a.reserve_exact(b.len());
                } else {
                    a.shrink_to_fit();
                }
                assert_eq!(
                    crate::exec::buffer::would_move(&a, b.len()),
                    !room,
                    "case {c}"
                );
                let mut run = Run::new(a);
                run.merge(&b, 2);
                assert!(run.keys == all, "case {c}, room {room}");
                assert!(run.fence == fence, "case {c}, room {room}");
            }
        }
    }
}
