//! Edit distance: a bounded Levenshtein distance computed in a band, with the buffers
//! ([`Scratch`]) reused across one search and the markers of its per-candidate cache.

/// A fuzzy candidate whose distance this search has not computed yet.
pub(super) const FUZZY_UNKNOWN: u8 = u8::MAX;

/// A fuzzy candidate too far from the query.
pub(super) const FUZZY_NONE: u8 = u8::MAX - 1;

/// Buffers reused across one search.
#[derive(Default)]
pub(super) struct Scratch {
    /// The fuzzy candidate of the text being classified.
    pub(super) cand: u32,
    /// Per fuzzy candidate: its edit distance, [`FUZZY_NONE`] or [`FUZZY_UNKNOWN`].
    pub(super) fuzzy: Vec<u8>,
    pub(super) chars: Vec<char>,
    pub(super) prev: Vec<usize>,
    pub(super) cur: Vec<usize>,
}

/// The Levenshtein distance between `a` and `b` if it is at most `k`, computed in a band
/// of width `2k + 1` and abandoned as soon as every cell of a row exceeds `k`.
pub(super) fn bounded_levenshtein(a: &[char], b: &str, k: usize, s: &mut Scratch) -> Option<usize> {
    s.chars.clear();
    s.chars.extend(b.chars());
    let b = &s.chars;
    let (n, m) = (a.len(), b.len());
    if n.abs_diff(m) > k {
        return None;
    }
    let big = k + 1;
    s.prev.clear();
    s.prev.extend((0..=m).map(|j| j.min(big)));
    s.cur.clear();
    s.cur.resize(m + 1, big);
    for i in 1..=n {
        let lo = i.saturating_sub(k).max(1);
        let hi = (i + k).min(m);
        s.cur.iter_mut().for_each(|c| *c = big);
        s.cur[0] = i.min(big);
        let mut row_min = s.cur[0];
        for j in lo..=hi {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let v = (s.prev[j - 1] + cost)
                .min(s.prev[j] + 1)
                .min(s.cur[j - 1] + 1)
                .min(big);
            s.cur[j] = v;
            row_min = row_min.min(v);
        }
        if row_min > k {
            return None;
        }
        std::mem::swap(&mut s.prev, &mut s.cur);
    }
    let d = s.prev[m];
    (d <= k).then_some(d)
}
