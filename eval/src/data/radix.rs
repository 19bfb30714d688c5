//! A stable least-significant-digit radix sort of packed keys, for the candidates a round
//! derives.
//!
//! Derived tuples of one or two columns travel as `u64` keys (two 32-bit terms). Terms of
//! one kind share their top bits and a graph's ids are small, so most of the eight bytes of
//! a key are the same in every candidate: a pass whose byte never varies is skipped, and a
//! typical round sorts in three or four passes over the data where a comparison sort makes
//! `log n`. Being stable, the sort keeps candidates with equal keys in emission order, so
//! the first of each is the one a deduplication keeps. The store sorts the statements a
//! batch writes with it too, packed as `u128` keys (up to three terms and a unit).

/// Below this many items a comparison sort is as fast and needs no buffer.
const SMALL: usize = 1 << 10;

/// A key the sort orders by, a byte at a time: `u64` (two 32-bit terms) or `u128` (up to
/// four).
pub trait RadixKey: Copy + Ord {
    /// How many bytes a key has.
    const BYTES: usize;
    /// Byte `i` of the key, byte 0 the least significant.
    fn byte(self, i: usize) -> u8;
}

impl RadixKey for u64 {
    const BYTES: usize = 8;
    #[inline]
    fn byte(self, i: usize) -> u8 {
        (self >> (8 * i)) as u8
    }
}

impl RadixKey for u128 {
    const BYTES: usize = 16;
    #[inline]
    fn byte(self, i: usize) -> u8 {
        (self >> (8 * i)) as u8
    }
}

/// Sorts `items` by `key(item)`, stably; items already in order (a scan of a sorted
/// relation yields them so) cost one read.
///
/// ```
/// # use strata_eval::internals::radix::sort_by_key;
/// let mut v: Vec<(u64, u32)> = (0..5000u32).map(|i| (u64::from(i % 7) << 32, i)).collect();
/// sort_by_key(&mut v, |e| e.0);
/// assert!(v.windows(2).all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1)));
/// ```
pub fn sort_by_key<T: Copy + Default, K: RadixKey>(items: &mut Vec<T>, key: impl Fn(&T) -> K) {
    if items.len() < SMALL {
        items.sort_by_key(|e| key(e));
        return;
    }
    if items.is_sorted_by_key(&key) {
        return;
    }
    // One histogram per byte, all in one read of the data.
    let mut counts = vec![[0usize; 256]; K::BYTES];
    for item in items.iter() {
        let k = key(item);
        for (b, hist) in counts.iter_mut().enumerate() {
            hist[k.byte(b) as usize] += 1;
        }
    }
    let n = items.len();
    let mut from = std::mem::take(items);
    let mut to = vec![T::default(); n];
    for (b, hist) in counts.iter().enumerate() {
        // Every key has the same byte here: the pass would move nothing.
        if hist.contains(&n) {
            continue;
        }
        let mut offsets = [0usize; 256];
        let mut sum = 0;
        for (o, &c) in offsets.iter_mut().zip(hist.iter()) {
            *o = sum;
            sum += c;
        }
        for item in &from {
            let d = key(item).byte(b) as usize;
            to[offsets[d]] = *item;
            offsets[d] += 1;
        }
        std::mem::swap(&mut from, &mut to);
    }
    *items = from;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_stably_like_the_standard_sort() {
        let mut x: u64 = 7;
        let mut v: Vec<(u64, u32)> = (0..20_000u32)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Few distinct high bytes, many equal keys.
                (((0xC000_0000u64 | (x % 300)) << 32) | ((x >> 40) % 50), i)
            })
            .collect();
        let mut expected = v.clone();
        expected.sort_by_key(|e| e.0);
        sort_by_key(&mut v, |e| e.0);
        assert_eq!(v, expected);
    }

    #[test]
    fn small_and_uniform_inputs() {
        let mut v: Vec<(u64, u32)> = vec![(5, 0), (1, 1), (5, 2)];
        sort_by_key(&mut v, |e| e.0);
        assert_eq!(v, vec![(1, 1), (5, 0), (5, 2)]);
        let mut same: Vec<(u64, u32)> = (0..5000).map(|i| (42, i)).collect();
        let expected = same.clone();
        sort_by_key(&mut same, |e| e.0);
        assert_eq!(same, expected);
    }

    #[test]
    fn sorts_u128_keys_like_the_standard_sort() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut v: Vec<u128> = (0..20_000)
            .map(|_| {
                let k = u128::from(next() % 50) << 96 | u128::from(next() % 3) << 64 | 7;
                k | u128::from(next() as u32)
            })
            .collect();
        let mut expected = v.clone();
        expected.sort_unstable();
        sort_by_key(&mut v, |&k| k);
        assert_eq!(v, expected);
    }
}
