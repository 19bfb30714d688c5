//! A radix sort of the statements a batch writes, each packed as one `u128` (up to three
//! terms and a unit). A least-significant-digit sort by bytes takes a pass per byte that
//! differs among the keys (a term's tag byte, the high bytes of small ids, the columns a
//! relation does not have are the same for all and skipped), where a comparison sort of a
//! million keys takes about twenty. (Keys of 64 bits, as the (term, row) pairs of postings,
//! sort with `strata_eval`'s `radix::sort_by_key`.)

/// Below this many keys a comparison sort is as quick.
const SMALL: usize = 256;

/// Above this many keys, a comparison sort in place: the radix sort's second buffer (16
/// bytes a key) would add 64 MiB or more to the peak of a large flush.
const LARGE: usize = 1 << 22;

/// Sorts `v` ascending. `scratch` is working memory.
pub(crate) fn sort_u128(v: &mut Vec<u128>, scratch: &mut Vec<u128>) {
    if v.len() < SMALL || v.len() > LARGE {
        v.sort_unstable();
        return;
    }
    lsd(v, scratch, 0..16, |x, i| (x >> (8 * i)) as u8);
}

/// A stable sort of `v` by the bytes `digits` of each key (`byte(key, i)`, byte 0 the least
/// significant), one pass per byte that is not the same in every key.
fn lsd<T: Copy>(
    v: &mut Vec<T>,
    scratch: &mut Vec<T>,
    digits: std::ops::Range<usize>,
    byte: impl Fn(T, usize) -> u8,
) {
    let n = v.len();
    let mut counts = vec![[0usize; 256]; digits.len()];
    for &x in v.iter() {
        for (d, c) in digits.clone().zip(counts.iter_mut()) {
            c[byte(x, d) as usize] += 1;
        }
    }
    for (d, c) in digits.zip(counts.iter_mut()) {
        if c.contains(&n) {
            // Every key has the same byte here.
            continue;
        }
        let mut at = 0;
        for slot in c.iter_mut() {
            let k = *slot;
            *slot = at;
            at += k;
        }
        if scratch.len() != n {
            // Each slot is written once below before any is read; any values will do.
            scratch.clear();
            scratch.extend_from_slice(v);
        }
        for &x in v.iter() {
            let b = byte(x, d) as usize;
            scratch[c[b]] = x;
            c[b] += 1;
        }
        std::mem::swap(v, scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_as_a_comparison_sort_does() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for n in [0usize, 1, 5, 255, 256, 1000, 20_000] {
            let mut keys: Vec<u128> = (0..n)
                .map(|_| {
                    let k = u128::from(next() % 50) << 96 | u128::from(next() % 3) << 64 | 7;
                    k | u128::from(next() as u32)
                })
                .collect();
            let mut want = keys.clone();
            want.sort_unstable();
            sort_u128(&mut keys, &mut Vec::new());
            assert_eq!(keys, want);
        }
    }
}
