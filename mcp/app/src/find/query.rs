//! A [`Query`] prepared once per search (its lowercase form, words, characters, word
//! finders and byte counts), and how a text matches it: equality, prefix, substring, all
//! its words, an edit distance, or some of its words.

use super::words::{
    boundary_after, boundary_before, eq_ignore_case, has_ascii_word, significant,
    starts_with_ignore_case,
};
use super::{FUZZY_NONE, FUZZY_UNKNOWN, Kind, Scratch, words};

/// Queries longer than this (in characters) get no edit-distance matches.
const FUZZY_MAX_CHARS: usize = 64;

/// A query, prepared once per search.
pub(super) struct Query {
    /// The query as given, trimmed.
    pub(super) raw: String,
    /// Lowercase.
    pub(super) lower: String,
    /// Its words, lowercase.
    pub(super) words: Vec<String>,
    /// Its characters, lowercase, for edit distances.
    pub(super) chars: Vec<char>,
    /// The most edits a fuzzy match may take (0: no fuzzy matches).
    pub(super) max_edits: usize,
    /// The flag bits of every word (0 when the query has more words than flags).
    pub(super) all_words: u8,
    /// The flag bits of the words that count toward a partial match (queries of two
    /// words or more).
    pub(super) significant: u8,
    /// Which words (bit i: word i, of the first 64) count toward a partial match.
    pub(super) significant_words: u64,
    /// A substring finder for each of the first 64 words.
    pub(super) finders: Vec<memchr::memmem::Finder<'static>>,
    /// How often each byte (by its low six bits) occurs in the query, for the bag
    /// distance, and which occur; `None` when the query is not ASCII.
    pub(super) bag: Option<([i16; 64], u64)>,
}

impl Query {
    pub(super) fn new(query: &str) -> Option<Query> {
        let raw = query.trim();
        if raw.is_empty() {
            return None;
        }
        let lower = raw.to_lowercase();
        let words: Vec<String> = words(raw).map(|w| w.to_lowercase()).collect();
        let chars: Vec<char> = lower.chars().collect();
        let max_edits = match chars.len() {
            0..=2 => 0,
            3..=5 => 1,
            6..=11 => 2,
            n if n <= FUZZY_MAX_CHARS => 3,
            _ => 0,
        };
        let all_words = if words.len() <= 7 {
            ((1u16 << (words.len() + 1)) - 2) as u8
        } else {
            0
        };
        let mut significant_bits = 0u8;
        if words.len() >= 2 {
            for (i, w) in words.iter().take(7).enumerate() {
                if significant(w) {
                    significant_bits |= 1 << (i + 1);
                }
            }
        }
        let significant_words = words
            .iter()
            .take(64)
            .enumerate()
            .filter(|(_, w)| significant(w))
            .fold(0u64, |m, (i, _)| m | 1 << i);
        let finders = words
            .iter()
            .take(64)
            .map(|w| memchr::memmem::Finder::new(w.as_bytes()).into_owned())
            .collect();
        let bag = lower.is_ascii().then(|| {
            let mut h = [0i16; 64];
            let mut m = 0u64;
            for b in lower.bytes() {
                h[usize::from(b & 63)] += 1;
                m |= 1 << (b & 63);
            }
            (h, m)
        });
        Some(Query {
            raw: raw.to_owned(),
            lower,
            words,
            chars,
            max_edits,
            all_words,
            significant: significant_bits,
            significant_words,
            finders,
            bag,
        })
    }

    /// The flags [`Query::classify`] takes for one text, as the scan marks them: bit 0
    /// when `lower` contains the query, bit i + 1 when it contains word i (of the first
    /// seven); a word of one or two bytes beside a longer word is set unmarked.
    pub(super) fn flags(&self, lower: &str) -> u8 {
        let mut flags = u8::from(lower.contains(self.lower.as_str()));
        let shown = &self.words[..self.words.len().min(7)];
        let some_long = shown.iter().any(|w| w.len() >= 3);
        for (i, w) in shown.iter().enumerate() {
            if (w.len() < 3 && some_long) || (!w.is_empty() && lower.contains(w.as_str())) {
                flags |= 1 << (i + 1);
            }
        }
        flags
    }

    /// How `text` (whose lowercase form is `lower`, its last part `tail`) matches, if it
    /// does; `flags` say whether `lower` contains the query (bit 0) and each word (bit
    /// i + 1).
    pub(super) fn classify(
        &self,
        text: &str,
        lower: &str,
        tail: &str,
        flags: u8,
        scratch: &mut Scratch,
    ) -> Option<(Kind, u32, bool)> {
        let q = self.lower.as_str();
        if flags & 1 != 0 {
            if lower == q {
                return Some((Kind::Exact, 0, text == self.raw));
            }
            if tail == q {
                let same_case = text.len() == lower.len() && text.ends_with(self.raw.as_str());
                return Some((Kind::LastPart, 0, same_case));
            }
            if lower.starts_with(q) {
                return Some((Kind::Prefix, 0, boundary_after(lower, q.len())));
            }
            let aligned = lower
                .match_indices(q)
                .any(|(i, _)| boundary_before(lower, i) && boundary_after(lower, i + q.len()));
            return Some((Kind::Substring, 0, aligned));
        }
        if flags & self.all_words == self.all_words
            && self.all_words != 0
            && self.all_words(text, lower)
        {
            return Some((Kind::Token, 0, true));
        }
        if let Some(d) = self.fuzzy(lower, tail, scratch) {
            return Some((Kind::Fuzzy, d, false));
        }
        if flags & self.significant != 0 {
            let have = self.words_in(text, lower);
            if have > 0 {
                return Some((Kind::SomeWords, (self.words.len() - have) as u32, false));
            }
        }
        None
    }

    /// Whether every query word is a word of `text` (the last may be a word's prefix).
    pub(super) fn all_words(&self, text: &str, lower: &str) -> bool {
        if text.len() == lower.len() && text.is_ascii() {
            let last = self.words.len() - 1;
            return self
                .finders
                .iter()
                .enumerate()
                .all(|(i, f)| has_ascii_word(text.as_bytes(), lower.as_bytes(), f, i == last));
        }
        let n = self.words.len().min(64);
        let last = self.words.len() - 1;
        let all = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        let mut seen = 0u64;
        for t in words(text) {
            for (i, w) in self.words.iter().enumerate().take(64) {
                if seen & (1 << i) == 0
                    && if i == last {
                        starts_with_ignore_case(t, w)
                    } else {
                        eq_ignore_case(t, w)
                    }
                {
                    seen |= 1 << i;
                }
            }
            if seen == all {
                return true;
            }
        }
        false
    }

    /// How many significant query words are words of `text`.
    pub(super) fn words_in(&self, text: &str, lower: &str) -> usize {
        if text.len() == lower.len() && text.is_ascii() {
            return self
                .finders
                .iter()
                .enumerate()
                .filter(|(i, f)| {
                    self.significant_words & (1 << i) != 0
                        && has_ascii_word(text.as_bytes(), lower.as_bytes(), f, false)
                })
                .count();
        }
        let mut seen = 0u64;
        for t in words(text) {
            let mut left = self.significant_words & !seen;
            while left != 0 {
                let i = left.trailing_zeros() as usize;
                left &= left - 1;
                if eq_ignore_case(t, &self.words[i]) {
                    seen |= 1 << i;
                }
            }
        }
        seen.count_ones() as usize
    }

    /// The edit distance from the query to the last part `tail` of `lower` (or `lower`
    /// when it has none), if within the limit. Length and bag distance (a lower bound of
    /// the edit distance) filter first.
    pub(super) fn fuzzy(&self, lower: &str, tail: &str, scratch: &mut Scratch) -> Option<u32> {
        let k = self.max_edits;
        if k == 0 {
            return None;
        }
        let slot = scratch.cand as usize;
        match scratch.fuzzy.get(slot).copied() {
            Some(FUZZY_NONE) => return None,
            Some(FUZZY_UNKNOWN) | None => {}
            Some(d) => return Some(u32::from(d)),
        }
        let d = self.fuzzy_uncached(lower, tail, scratch);
        if let Some(memo) = scratch.fuzzy.get_mut(slot) {
            *memo = d.map_or(FUZZY_NONE, |d| d as u8);
        }
        d
    }

    /// [`Query::fuzzy`], computed.
    pub(super) fn fuzzy_uncached(
        &self,
        lower: &str,
        tail: &str,
        scratch: &mut Scratch,
    ) -> Option<u32> {
        let k = self.max_edits;
        // A value with a last part is compared by it alone (`pkg:sync_0` by `sync_0`): an
        // agent misspells a name, rarely its prefix.
        let cand = if tail.is_empty() { lower } else { tail };
        // Characters are at most bytes: too few bytes is too few characters.
        if cand.len() + k < self.chars.len()
            || cand.len() > self.chars.len() + 4 * k
            || (cand.len() > self.chars.len() + k && cand.is_ascii())
        {
            return None;
        }
        if let Some((bag, mask)) = &self.bag {
            // Each byte one string has and the other lacks takes an edit: first by which
            // bytes occur, then by how often.
            let mut m = 0u64;
            for b in cand.bytes() {
                m |= 1 << (b & 63);
            }
            let missing = (m & !mask).count_ones().max((mask & !m).count_ones());
            if missing as usize > k || bag_distance(bag, cand).is_some_and(|d| d > k) {
                return None;
            }
        }
        scratch.edit.within(&self.chars, cand, k).map(|d| d as u32)
    }
}

/// The bag distance between an ASCII query (its byte counts `bag`) and `cand`: a lower
/// bound of their edit distance; `None` when `cand` is not ASCII.
pub(super) fn bag_distance(bag: &[i16; 64], cand: &str) -> Option<usize> {
    let mut h = *bag;
    for b in cand.bytes() {
        if b >= 128 {
            return None;
        }
        h[usize::from(b & 63)] -= 1;
    }
    let (mut more, mut fewer) = (0usize, 0usize);
    for v in h {
        if v > 0 {
            more += v as usize;
        } else {
            fewer += v.unsigned_abs() as usize;
        }
    }
    Some(more.max(fewer))
}
