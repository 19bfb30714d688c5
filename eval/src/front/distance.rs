//! Edit distance between names: a Levenshtein distance computed in a band and abandoned as
//! soon as it must exceed its bound, with buffers reused across many comparisons. The
//! "did you mean" of the language ([`crate::front::suggest`]) and the `find` tool of the
//! application core both measure with it.

/// A reusable Levenshtein distance: the buffers of one comparison, kept for the next.
///
/// ```
/// use strata_eval::EditDistance;
///
/// let mut d = EditDistance::new();
/// let kitten: Vec<char> = "kitten".chars().collect();
/// assert_eq!(d.within(&kitten, "sitting", 3), Some(3));
/// assert_eq!(d.within(&kitten, "sitting", 2), None);
/// assert_eq!(d.between("imports", "imprts"), 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct EditDistance {
    chars: Vec<char>,
    prev: Vec<usize>,
    cur: Vec<usize>,
}

impl EditDistance {
    /// A distance with empty buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// The Levenshtein distance between `a` and `b`, in characters, if it is at most `k`:
    /// computed in a band of width `2k + 1` and abandoned as soon as every cell of a row
    /// exceeds `k`.
    pub fn within(&mut self, a: &[char], b: &str, k: usize) -> Option<usize> {
        self.chars.clear();
        self.chars.extend(b.chars());
        let b = &self.chars;
        let (n, m) = (a.len(), b.len());
        if n.abs_diff(m) > k {
            return None;
        }
        let big = k.saturating_add(1);
        self.prev.clear();
        self.prev.extend((0..=m).map(|j| j.min(big)));
        self.cur.clear();
        self.cur.resize(m + 1, big);
        for i in 1..=n {
            let lo = i.saturating_sub(k).max(1);
            let hi = i.saturating_add(k).min(m);
            self.cur.iter_mut().for_each(|c| *c = big);
            self.cur[0] = i.min(big);
            let mut row_min = self.cur[0];
            for j in lo..=hi {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                let v = (self.prev[j - 1] + cost)
                    .min(self.prev[j] + 1)
                    .min(self.cur[j - 1] + 1)
                    .min(big);
                self.cur[j] = v;
                row_min = row_min.min(v);
            }
            if row_min > k {
                return None;
            }
            std::mem::swap(&mut self.prev, &mut self.cur);
        }
        let d = self.prev[m];
        (d <= k).then_some(d)
    }

    /// The whole Levenshtein distance between `a` and `b`, in characters.
    pub fn between(&mut self, a: &str, b: &str) -> usize {
        let a: Vec<char> = a.chars().collect();
        let most = a.len().max(b.chars().count());
        self.within(&a, b, most).unwrap_or(most)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook distance, for comparison.
    fn plain(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1; b.len() + 1];
            for (j, &cb) in b.iter().enumerate() {
                cur[j + 1] = (prev[j] + usize::from(ca != cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1);
            }
            prev = cur;
        }
        prev[b.len()]
    }

    #[test]
    fn distances() {
        let mut d = EditDistance::new();
        assert_eq!(d.between("", ""), 0);
        assert_eq!(d.between("abc", ""), 3);
        assert_eq!(d.between("", "ab"), 2);
        assert_eq!(d.between("kitten", "sitting"), 3);
        assert_eq!(d.between("é", "e"), 1);
        let q: Vec<char> = "kitten".chars().collect();
        assert_eq!(d.within(&q, "kitten", 1), Some(0));
        assert_eq!(d.within(&q, "", 3), None);
        let u: Vec<char> = "üñî".chars().collect();
        assert_eq!(d.within(&u, "uni", 2), None);
        assert_eq!(d.within(&u, "uni", 3), Some(3));
    }

    #[test]
    fn band_agrees_with_the_textbook() {
        let words = [
            "", "a", "ab", "ba", "abc", "acb", "imports", "imprts", "exports", "xyz",
        ];
        let mut d = EditDistance::new();
        for x in words {
            let xs: Vec<char> = x.chars().collect();
            for y in words {
                let want = plain(x, y);
                assert_eq!(d.between(x, y), want, "{x} {y}");
                for k in 0..5 {
                    assert_eq!(
                        d.within(&xs, y, k),
                        (want <= k).then_some(want),
                        "{x} {y} {k}"
                    );
                }
            }
        }
    }
}
