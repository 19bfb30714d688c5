//! `find`: what a name may stand for. A partial or misspelled name is matched against the
//! dictionary of stored text values and the matches are ranked: exact, prefix, substring,
//! token (the name split on `/ _ . : # -`, other punctuation, spaces and case changes, so
//! `parse args` finds `sym:src/cli.rs#parse_args`), edit distance, then names sharing only
//! some of the query's words.
//!
//! The [`Index`] is an in-memory copy of the dictionary (each text and its lowercase form,
//! back to back in two buffers), read once and then extended with the texts each new batch
//! adds: the dictionary only grows, its ids dense and in order of first appearance. A search
//! is one linear pass with cheap filters first (equality, prefix, substring, then word and
//! length filters before any edit distance is computed).

use std::ops::ControlFlow;

use strata_store::Snapshot;

/// Dictionaries of at least this many texts are searched on several threads.
const PARALLEL_TEXTS: usize = 100_000;

/// The most threads one search uses.
const MAX_THREADS: usize = 4;

/// Queries longer than this (in characters) get no edit-distance matches.
const FUZZY_MAX_CHARS: usize = 64;

/// How a value matched the query, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// The whole value, ignoring case.
    Exact,
    /// The value's last part, after its last `/`, `#` or `:` (`pkg:parser`,
    /// `sym:src/cli.rs#parse_args`), ignoring case.
    LastPart,
    /// The value starts with the query.
    Prefix,
    /// The query occurs inside the value.
    Substring,
    /// Every word of the query is a word of the value.
    Token,
    /// The value's last part (after `/`, `#` or `:`), or the value when it has none, is
    /// within a few edits (1 for a query of 3 to 5 characters, 2 up to 11, then 3).
    Fuzzy,
    /// Some, not all, of the query's words are words of the value.
    SomeWords,
}

impl Kind {
    /// The kind's name, as answers show it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Exact => "exact",
            Kind::LastPart => "last part",
            Kind::Prefix => "prefix",
            Kind::Substring => "substring",
            Kind::Token => "token",
            Kind::Fuzzy => "fuzzy",
            Kind::SomeWords => "some words",
        }
    }
}

/// One match: the value's dictionary id and how it matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    /// The text's dictionary id.
    pub id: u32,
    /// How it matched.
    pub kind: Kind,
    /// For [`Kind::Fuzzy`], the edit distance; for [`Kind::SomeWords`], the query's words
    /// it lacks; 0 otherwise.
    pub distance: u32,
    /// Whether the match sits on word boundaries (or, for an exact match, has the query's
    /// case too): such matches rank first within their kind.
    pub aligned: bool,
}

/// The dictionary in memory: texts with ids `1..=len`, and their lowercase forms.
#[derive(Clone, Debug, Default)]
pub struct Index {
    text: String,
    text_ends: Vec<usize>,
    lower: String,
    lower_ends: Vec<usize>,
    /// Where each lowercase text's last part starts (after its last `/`, `#` or `:`).
    tails: Vec<u32>,
    /// For each text, the number of its fuzzy candidate (its last part, or the whole text
    /// without one): texts sharing one (`pkg:a#parse`, `file:b#parse`, `parse`) share an
    /// edit distance, computed once per search.
    cand_of: Vec<u32>,
    /// The number of each distinct fuzzy candidate.
    cands: std::collections::HashMap<Box<str>, u32>,
}

impl Index {
    /// An empty index.
    pub fn new() -> Index {
        Index::default()
    }

    /// How many texts it holds (ids `1..=len`).
    pub fn len(&self) -> u32 {
        self.text_ends.len() as u32
    }

    /// Whether it holds no text.
    pub fn is_empty(&self) -> bool {
        self.text_ends.is_empty()
    }

    /// Adds the next text (its id is [`Index::len`] after the call).
    pub fn push(&mut self, text: &str) {
        self.text.push_str(text);
        self.text_ends.push(self.text.len());
        if text.is_ascii() {
            self.lower
                .extend(text.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            self.lower.push_str(&text.to_lowercase());
        }
        let start = self.lower_ends.last().copied().unwrap_or(0);
        let lower = &self.lower[start..];
        let tail = lower.rfind(['/', '#', ':']).map_or(0, |i| i + 1);
        self.tails.push(u32::try_from(tail).unwrap_or(0));
        let cand = if tail < lower.len() {
            &lower[tail..]
        } else {
            lower
        };
        let next = self.cands.len() as u32;
        let id = match self.cands.get(cand) {
            Some(&id) => id,
            None => {
                self.cands.insert(cand.into(), next);
                next
            }
        };
        self.cand_of.push(id);
        self.lower_ends.push(self.lower.len());
    }

    /// Reads the texts `snap` has and the index does not yet.
    pub fn extend_from(&mut self, snap: &Snapshot) -> Result<(), strata_store::StoreError> {
        let next = self.len() + 1;
        // Ids are dense from `next` (the walk reports a missing chunk as damage).
        snap.for_each_text(next, &mut |_, t| {
            self.push(t);
            ControlFlow::Continue(())
        })
    }

    /// Sets `bit` in the flags of every text containing `needle`, of the texts with
    /// (0-based) numbers `lo..lo + flags.len()`.
    fn mark(&self, lo: usize, needle: &[u8], bit: u8, flags: &mut [u8]) {
        if needle.is_empty() || flags.is_empty() {
            return;
        }
        let from = lo.checked_sub(1).map_or(0, |i| self.lower_ends[i]);
        let to = self.lower_ends[lo + flags.len() - 1];
        let ends = &self.lower_ends[lo..lo + flags.len()];
        let mut id = 0;
        for pos in memchr::memmem::find_iter(&self.lower.as_bytes()[from..to], needle) {
            let pos = pos + from;
            while id < ends.len() && ends[id] <= pos {
                id += 1;
            }
            // A hit across two texts is no hit.
            if id < ends.len() && pos + needle.len() <= ends[id] {
                flags[id] |= bit;
            }
        }
    }

    /// The text with id `id`.
    pub fn text(&self, id: u32) -> Option<&str> {
        slot(&self.text, &self.text_ends, id)
    }

    /// The best `keep` texts with an id up to `upto` matching `query`, ranked best first
    /// (ties go to the shorter text, then the text in byte order), and how many matched in
    /// all. An empty query matches nothing.
    pub fn search(&self, query: &str, upto: u32, keep: usize) -> (Vec<Match>, usize) {
        let Some(q) = Query::new(query) else {
            return (Vec::new(), 0);
        };
        let n = upto.min(self.len()) as usize;
        // Large dictionaries are searched in parts, one thread each.
        let threads = if n >= PARALLEL_TEXTS {
            std::thread::available_parallelism()
                .map_or(1, usize::from)
                .clamp(1, MAX_THREADS)
        } else {
            1
        };
        self.search_on(&q, n, keep, threads)
    }

    /// [`Index::search`] of the first `n` texts on `threads` threads.
    fn search_on(&self, q: &Query, n: usize, keep: usize, threads: usize) -> (Vec<Match>, usize) {
        let part = n.div_ceil(threads.max(1)).max(1);
        let found = if threads <= 1 {
            self.scan(q, 0, n)
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..n)
                    .step_by(part)
                    .skip(1)
                    .map(|lo| scope.spawn(move || self.scan(q, lo, (lo + part).min(n))))
                    .collect();
                let mut found = self.scan(q, 0, part.min(n));
                for h in handles {
                    // A part whose thread panicked is searched again here.
                    match h.join() {
                        Ok(f) => found.extend(f),
                        Err(_) => return None,
                    }
                }
                Some(found)
            })
            .unwrap_or_else(|| self.scan(q, 0, n))
        };
        let total = found.len();
        if keep == 0 {
            return (Vec::new(), total);
        }
        // Rank by one packed key (kind, alignment, distance, length), then the text on ties.
        let mut keyed: Vec<(u64, Match)> = found
            .into_iter()
            .map(|m| {
                let len = self.text(m.id).map_or(0, str::len) as u64;
                let key = (m.kind as u64) << 60
                    | u64::from(!m.aligned) << 59
                    | u64::from(m.distance.min(0x7ff)) << 48
                    | len.min(0xffff_ffff_ffff);
                (key, m)
            })
            .collect();
        let order = |a: &(u64, Match), b: &(u64, Match)| {
            a.0.cmp(&b.0).then_with(|| {
                self.text(a.1.id)
                    .unwrap_or("")
                    .cmp(self.text(b.1.id).unwrap_or(""))
            })
        };
        if keep < keyed.len() {
            keyed.select_nth_unstable_by(keep - 1, order);
            keyed.truncate(keep);
        }
        keyed.sort_unstable_by(order);
        (keyed.into_iter().map(|(_, m)| m).collect(), total)
    }

    /// The matches among the texts with (0-based) numbers `lo..hi`, unranked. One pass of
    /// memmem over their lowercase forms per needle (the query, then each of its first seven
    /// words) marks the texts holding it (bit 0 the query, bit i + 1 word i); then each text
    /// is classified.
    fn scan(&self, q: &Query, lo: usize, hi: usize) -> Vec<Match> {
        let mut flags = vec![0u8; hi.saturating_sub(lo)];
        self.mark(lo, q.lower.as_bytes(), 1, &mut flags);
        // A word of one or two bytes (`0`, `rs`) is in most texts: beside a longer word it
        // is not marked, only checked word by word in the texts holding every other word.
        // A word given twice is marked once, with both bits.
        let mut short = 0u8;
        let shown: Vec<&String> = q.words.iter().take(7).collect();
        let some_long = shown.iter().any(|w| w.len() >= 3);
        for (i, w) in shown.iter().enumerate() {
            if w.len() < 3 && some_long {
                short |= 1 << (i + 1);
                continue;
            }
            if shown[..i].contains(w) {
                continue;
            }
            let bits = shown
                .iter()
                .enumerate()
                .filter(|(_, x)| x == &w)
                .fold(0u8, |b, (j, _)| b | 1 << (j + 1));
            self.mark(lo, w.as_bytes(), bits, &mut flags);
        }
        if short != 0 {
            flags.iter_mut().for_each(|f| *f |= short);
        }
        let mut found = Vec::new();
        let mut scratch = Scratch {
            fuzzy: vec![FUZZY_UNKNOWN; self.cands.len()],
            ..Scratch::default()
        };
        let mut start_t = lo.checked_sub(1).map_or(0, |i| self.text_ends[i]);
        let mut start_l = lo.checked_sub(1).map_or(0, |i| self.lower_ends[i]);
        for (k, &f) in flags.iter().enumerate() {
            let i = lo + k;
            let (end_t, end_l) = (self.text_ends[i], self.lower_ends[i]);
            let text = &self.text[start_t..end_t];
            let lower = &self.lower[start_l..end_l];
            start_t = end_t;
            start_l = end_l;
            let tail = lower.get(self.tails[i] as usize..).unwrap_or(lower);
            scratch.cand = self.cand_of[i];
            if let Some((kind, distance, aligned)) = q.classify(text, lower, tail, f, &mut scratch)
            {
                found.push(Match {
                    id: i as u32 + 1,
                    kind,
                    distance,
                    aligned,
                });
            }
        }
        found
    }

    /// The lowercase form of a text (for tests).
    #[cfg(test)]
    fn lower_of(&self, id: u32) -> Option<&str> {
        slot(&self.lower, &self.lower_ends, id)
    }
}

fn slot<'a>(buf: &'a str, ends: &[usize], id: u32) -> Option<&'a str> {
    let i = (id as usize).checked_sub(1)?;
    let end = *ends.get(i)?;
    let start = if i == 0 { 0 } else { ends[i - 1] };
    buf.get(start..end)
}

/// A query, prepared once per search.
struct Query {
    /// The query as given, trimmed.
    raw: String,
    /// Lowercase.
    lower: String,
    /// Its words, lowercase.
    words: Vec<String>,
    /// Its characters, lowercase, for edit distances.
    chars: Vec<char>,
    /// The most edits a fuzzy match may take (0: no fuzzy matches).
    max_edits: usize,
    /// The flag bits of every word (0 when the query has more words than flags).
    all_words: u8,
    /// The flag bits of the words that count toward a partial match (queries of two
    /// words or more).
    significant: u8,
    /// Which words (bit i: word i, of the first 64) count toward a partial match.
    significant_words: u64,
    /// A substring finder for each of the first 64 words.
    finders: Vec<memchr::memmem::Finder<'static>>,
    /// How often each byte (by its low six bits) occurs in the query, for the bag
    /// distance, and which occur; `None` when the query is not ASCII.
    bag: Option<([i16; 64], u64)>,
}

impl Query {
    fn new(query: &str) -> Option<Query> {
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

    /// How `text` (whose lowercase form is `lower`, its last part `tail`) matches, if it
    /// does; `flags` say whether `lower` contains the query (bit 0) and each word (bit
    /// i + 1).
    fn classify(
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
    fn all_words(&self, text: &str, lower: &str) -> bool {
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
    fn words_in(&self, text: &str, lower: &str) -> usize {
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
    fn fuzzy(&self, lower: &str, tail: &str, scratch: &mut Scratch) -> Option<u32> {
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
    fn fuzzy_uncached(&self, lower: &str, tail: &str, scratch: &mut Scratch) -> Option<u32> {
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
        bounded_levenshtein(&self.chars, cand, k, scratch).map(|d| d as u32)
    }
}

/// The bag distance between an ASCII query (its byte counts `bag`) and `cand`: a lower
/// bound of their edit distance; `None` when `cand` is not ASCII.
fn bag_distance(bag: &[i16; 64], cand: &str) -> Option<usize> {
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

/// Whether a query word counts on its own toward a partial match: three characters or more,
/// not only digits (`0` and `rs` would match half the dictionary).
fn significant(word: &str) -> bool {
    word.chars().count() >= 3 && !word.chars().all(|c| c.is_ascii_digit())
}

/// Whether the lowercase word `finder` looks for is a word of the ASCII `text` (lowercase
/// `lower`), or with `prefix` the start of one: an occurrence starting where [`words`]
/// starts a word, with no word break inside it and, unless `prefix`, one right after it.
fn has_ascii_word(
    text: &[u8],
    lower: &[u8],
    finder: &memchr::memmem::Finder<'_>,
    prefix: bool,
) -> bool {
    let n = finder.needle().len();
    finder.find_iter(lower).any(|i| {
        let end = i + n;
        word_starts(text, i)
            && (i + 1..end).all(|j| !word_starts(text, j))
            && (prefix
                || end == text.len()
                || word_starts(text, end)
                || !text[end].is_ascii_alphanumeric())
    })
}

/// Whether a word of the ASCII `text` starts at `i` as [`words`] splits it: after a
/// character that is not a letter or digit, at a change from lower case (or a digit) to upper
/// case, or at the last capital of a run followed by a lower-case letter (`HTTPServer`).
fn word_starts(text: &[u8], i: usize) -> bool {
    let Some(&c) = text.get(i) else {
        return false;
    };
    if !c.is_ascii_alphanumeric() {
        return false;
    }
    let Some(&p) = i.checked_sub(1).and_then(|j| text.get(j)) else {
        return true;
    };
    !p.is_ascii_alphanumeric()
        || ((p.is_ascii_lowercase() || p.is_ascii_digit()) && c.is_ascii_uppercase())
        || (p.is_ascii_uppercase()
            && c.is_ascii_uppercase()
            && text.get(i + 1).is_some_and(u8::is_ascii_lowercase))
}

/// Whether position `i` of `s` starts a word (the start, or after a separator).
fn boundary_before(s: &str, i: usize) -> bool {
    i == 0 || s.as_bytes().get(i - 1).is_some_and(|&b| is_separator(b))
}

/// Whether position `i` of `s` ends a word (the end, or before a separator).
fn boundary_after(s: &str, i: usize) -> bool {
    i >= s.len() || s.as_bytes().get(i).is_some_and(|&b| is_separator(b))
}

fn is_separator(b: u8) -> bool {
    b.is_ascii() && !b.is_ascii_alphanumeric()
}

fn eq_ignore_case(word: &str, lower: &str) -> bool {
    if word.is_ascii() {
        word.eq_ignore_ascii_case(lower)
    } else {
        word.to_lowercase() == lower
    }
}

fn starts_with_ignore_case(word: &str, lower: &str) -> bool {
    if word.is_ascii() {
        word.len() >= lower.len()
            && word.as_bytes()[..lower.len()].eq_ignore_ascii_case(lower.as_bytes())
    } else {
        word.to_lowercase().starts_with(lower)
    }
}

/// The words of `s`: runs of letters and digits, split at every other character and where
/// the case changes (`parseArgs` is `parse`, `Args`; `HTTPServer` is `HTTP`, `Server`).
pub fn words(s: &str) -> impl Iterator<Item = &str> + '_ {
    let ascii = s.is_ascii();
    let mut rest = s;
    std::iter::from_fn(move || {
        if ascii {
            let (word, tail) = ascii_word(rest)?;
            rest = tail;
            return Some(word);
        }
        let start = rest.find(char::is_alphanumeric)?;
        rest = &rest[start..];
        let mut chars = rest.char_indices().peekable();
        let mut end = rest.len();
        let mut prev: Option<char> = None;
        while let Some((i, c)) = chars.next() {
            if !c.is_alphanumeric() {
                end = i;
                break;
            }
            if let Some(p) = prev {
                let next = chars.peek().map(|&(_, n)| n);
                let lower_to_upper = (p.is_lowercase() || p.is_ascii_digit()) && c.is_uppercase();
                let acronym_end =
                    p.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase);
                if lower_to_upper || acronym_end {
                    end = i;
                    break;
                }
            }
            prev = Some(c);
        }
        let (word, tail) = rest.split_at(end);
        rest = tail;
        Some(word)
    })
}

/// The first word of an ASCII `s` and what follows it, as [`words`] splits.
fn ascii_word(s: &str) -> Option<(&str, &str)> {
    let b = s.as_bytes();
    let start = b.iter().position(u8::is_ascii_alphanumeric)?;
    let mut end = b.len();
    for i in start + 1..b.len() {
        let (p, c) = (b[i - 1], b[i]);
        if !c.is_ascii_alphanumeric() {
            end = i;
            break;
        }
        let lower_to_upper =
            (p.is_ascii_lowercase() || p.is_ascii_digit()) && c.is_ascii_uppercase();
        let acronym_end = p.is_ascii_uppercase()
            && c.is_ascii_uppercase()
            && b.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        if lower_to_upper || acronym_end {
            end = i;
            break;
        }
    }
    Some((&s[start..end], &s[end..]))
}

/// A fuzzy candidate whose distance this search has not computed yet.
const FUZZY_UNKNOWN: u8 = u8::MAX;

/// A fuzzy candidate too far from the query.
const FUZZY_NONE: u8 = u8::MAX - 1;

/// Buffers reused across one search.
#[derive(Default)]
struct Scratch {
    /// The fuzzy candidate of the text being classified.
    cand: u32,
    /// Per fuzzy candidate: its edit distance, [`FUZZY_NONE`] or [`FUZZY_UNKNOWN`].
    fuzzy: Vec<u8>,
    chars: Vec<char>,
    prev: Vec<usize>,
    cur: Vec<usize>,
}

/// The Levenshtein distance between `a` and `b` if it is at most `k`, computed in a band
/// of width `2k + 1` and abandoned as soon as every cell of a row exceeds `k`.
fn bounded_levenshtein(a: &[char], b: &str, k: usize, s: &mut Scratch) -> Option<usize> {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn index(texts: &[&str]) -> Index {
        let mut ix = Index::new();
        for t in texts {
            ix.push(t);
        }
        ix
    }

    fn found<'a>(ix: &'a Index, q: &str) -> Vec<(&'a str, Kind)> {
        ix.search(q, u32::MAX, usize::MAX)
            .0
            .into_iter()
            .map(|m| (ix.text(m.id).unwrap(), m.kind))
            .collect()
    }

    /// The names of a small generated code graph: nodes and attribute values.
    fn codegraph() -> Index {
        let cfg = strata_fixtures::codegraph::Config::with_edges(20_000);
        let mut edges = Vec::new();
        strata_fixtures::codegraph::write_edges(&cfg, &mut edges).unwrap();
        let mut attrs = Vec::new();
        strata_fixtures::codegraph::write_attrs(&cfg, &mut attrs).unwrap();
        let mut seen = std::collections::HashSet::new();
        let mut ix = Index::new();
        for line in String::from_utf8(edges)
            .unwrap()
            .lines()
            .chain(String::from_utf8(attrs).unwrap().lines())
        {
            let f: Vec<&str> = line.split('\t').collect();
            for v in [f[0], f[2]] {
                if v.parse::<f64>().is_err() && seen.insert(v.to_owned()) {
                    ix.push(v);
                }
            }
        }
        ix
    }

    #[test]
    fn words_split_on_separators_and_case() {
        let w: Vec<&str> = words("sym:src/cli.rs#parse_args").collect();
        assert_eq!(w, ["sym", "src", "cli", "rs", "parse", "args"]);
        let w: Vec<&str> = words("HTTPServer.parseArgs-v2 x").collect();
        assert_eq!(w, ["HTTP", "Server", "parse", "Args", "v2", "x"]);
        assert_eq!(words("").count(), 0);
        assert_eq!(words("::/#").count(), 0);
        let w: Vec<&str> = words("ünïCode_Ök").collect();
        assert_eq!(w, ["ünï", "Code", "Ök"]);
    }

    #[test]
    fn the_kinds_rank_in_order() {
        let ix = index(&[
            "sym:src/cli.rs#parse_args",
            "parse_args_all",
            "Parse_Args",
            "parse_args",
            "sym:src/cli.rs#prase_args",
            "file:src/args.rs",
            "reparse_args",
        ]);
        assert_eq!(
            found(&ix, "parse_args"),
            [
                ("parse_args", Kind::Exact),
                ("Parse_Args", Kind::Exact),
                ("sym:src/cli.rs#parse_args", Kind::LastPart),
                ("parse_args_all", Kind::Prefix),
                ("reparse_args", Kind::Substring),
                ("sym:src/cli.rs#prase_args", Kind::Fuzzy),
                ("file:src/args.rs", Kind::SomeWords),
            ]
        );
        assert_eq!(
            found(&ix, "parse args"),
            [
                ("Parse_Args", Kind::Token),
                ("parse_args", Kind::Token),
                ("parse_args_all", Kind::Token),
                ("sym:src/cli.rs#parse_args", Kind::Token),
                ("reparse_args", Kind::SomeWords),
                ("file:src/args.rs", Kind::SomeWords),
                ("sym:src/cli.rs#prase_args", Kind::SomeWords),
            ]
        );
        // A misspelling: a swap is two edits.
        let got = found(&ix, "prase_args");
        assert_eq!(got[0], ("sym:src/cli.rs#prase_args", Kind::LastPart));
        assert_eq!(
            &got[1..4],
            [
                ("Parse_Args", Kind::Fuzzy),
                ("parse_args", Kind::Fuzzy),
                ("sym:src/cli.rs#parse_args", Kind::Fuzzy),
            ]
        );
        assert!(found(&ix, "").is_empty());
        assert!(found(&ix, "   ").is_empty());
        assert!(found(&ix, "zzzzzz").is_empty());
    }

    #[test]
    fn case_changes_are_word_breaks() {
        let ix = index(&[
            "sym:lib.rs#parseArgs",
            "sym:lib.rs#HTTPServer",
            "parsearguments",
        ]);
        assert_eq!(
            found(&ix, "parse args")[0],
            ("sym:lib.rs#parseArgs", Kind::Token)
        );
        assert_eq!(
            found(&ix, "http server")[0],
            ("sym:lib.rs#HTTPServer", Kind::Token)
        );
        // The last word may be a prefix of a word.
        assert_eq!(
            found(&ix, "parse arg")[0],
            ("sym:lib.rs#parseArgs", Kind::Token)
        );
        assert_eq!(found(&ix, "parseArgs")[0].1, Kind::LastPart);
    }

    #[test]
    fn the_ascii_word_test_agrees_with_the_split() {
        let texts = [
            "sym:lib.rs#parseArgs",
            "sym:lib.rs#HTTPServer",
            "HTTPServer2Go",
            "parsearguments",
            "file:src/http/client_16.py",
            "ParseArgsAll",
            "a__b--c",
            "v2x_V2X",
            "XMLHttpRequest",
            "",
        ];
        let queries = [
            "parse args",
            "parse arg",
            "http server",
            "server",
            "args",
            "arg",
            "client 16",
            "16",
            "b c",
            "v2x",
            "xml http request",
            "http",
            "go",
            "arguments",
            "a",
        ];
        for t in texts {
            let lower = t.to_ascii_lowercase();
            for q in queries {
                let query = Query::new(q).unwrap();
                let last = query.words.len() - 1;
                let split_all = query.words.iter().enumerate().all(|(i, w)| {
                    words(t).any(|x| {
                        if i == last {
                            starts_with_ignore_case(x, w)
                        } else {
                            eq_ignore_case(x, w)
                        }
                    })
                });
                assert_eq!(query.all_words(t, &lower), split_all, "{t} / {q}");
                let split_some = query
                    .words
                    .iter()
                    .filter(|w| significant(w) && words(t).any(|x| eq_ignore_case(x, w)))
                    .count();
                assert_eq!(query.words_in(t, &lower), split_some, "{t} / {q}");
            }
        }
    }

    #[test]
    fn edit_distance_bounds() {
        let mut s = Scratch::default();
        let q: Vec<char> = "kitten".chars().collect();
        assert_eq!(bounded_levenshtein(&q, "sitting", 3, &mut s), Some(3));
        assert_eq!(bounded_levenshtein(&q, "sitting", 2, &mut s), None);
        assert_eq!(bounded_levenshtein(&q, "kitten", 1, &mut s), Some(0));
        assert_eq!(bounded_levenshtein(&q, "", 3, &mut s), None);
        assert_eq!(bounded_levenshtein(&[], "ab", 2, &mut s), Some(2));
        let u: Vec<char> = "ünï".chars().collect();
        assert_eq!(bounded_levenshtein(&u, "uni", 2, &mut s), Some(2));
        // Against the textbook distance on small strings.
        let words = [
            "", "a", "ab", "ba", "abc", "acb", "parse", "prase", "pars", "sparse",
        ];
        for x in words {
            for y in words {
                let xs: Vec<char> = x.chars().collect();
                let full = textbook(x, y);
                for k in 0..4 {
                    let got = bounded_levenshtein(&xs, y, k, &mut s);
                    assert_eq!(got, (full <= k).then_some(full), "{x} {y} {k}");
                }
            }
        }
    }

    fn textbook(a: &str, b: &str) -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut d: Vec<Vec<usize>> = (0..=a.len()).map(|i| vec![i; b.len() + 1]).collect();
        for (j, cell) in d[0].iter_mut().enumerate() {
            *cell = j;
        }
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                let c = usize::from(a[i - 1] != b[j - 1]);
                d[i][j] = (d[i - 1][j - 1] + c)
                    .min(d[i - 1][j] + 1)
                    .min(d[i][j - 1] + 1);
            }
        }
        d[a.len()][b.len()]
    }

    #[test]
    fn generated_code_graph_names_are_grounded() {
        let ix = codegraph();
        assert!(ix.len() > 1000, "{}", ix.len());
        // A package by its name: the package node, then its name attribute, first.
        let pkg = (1..=ix.len())
            .filter_map(|id| ix.text(id))
            .find(|t| t.starts_with("pkg:"))
            .unwrap()
            .to_owned();
        let name = pkg.trim_start_matches("pkg:");
        let got = found(&ix, name);
        assert_eq!(got[0], (name, Kind::Exact), "{got:?}");
        assert_eq!(got[1], (pkg.as_str(), Kind::LastPart), "{got:?}");

        // A symbol by its words: every symbol of that name, as tokens.
        let sym = (1..=ix.len())
            .filter_map(|id| ix.text(id))
            .find(|t| t.starts_with("sym:") && t.contains('#'))
            .unwrap()
            .to_owned();
        let short = sym.rsplit('#').next().unwrap().to_owned();
        let spaced = short.replace('_', " ");
        let got = found(&ix, &spaced);
        // The shortest values with every word come first: the name and its symbols.
        assert!(
            got.iter()
                .take(3)
                .any(|(t, k)| *t == sym.as_str() && *k == Kind::Token),
            "{spaced}: {got:?}"
        );
        assert_eq!(got[0], (short.as_str(), Kind::Token), "{got:?}");

        // A misspelled symbol name: one swap away.
        let mut chars: Vec<char> = short.chars().collect();
        chars.swap(1, 2);
        let typo: String = chars.into_iter().collect();
        if !ix
            .search(&typo, u32::MAX, usize::MAX)
            .0
            .iter()
            .any(|m| m.kind < Kind::Fuzzy)
        {
            let got = found(&ix, &typo);
            assert!(
                got.iter()
                    .any(|(t, k)| *t == sym.as_str() && *k == Kind::Fuzzy),
                "{typo}: {got:?}"
            );
        }

        // A file by a directory and a word of its name.
        let file = (1..=ix.len())
            .filter_map(|id| ix.text(id))
            .find(|t| t.starts_with("file:") && t.matches('/').count() >= 3)
            .unwrap()
            .to_owned();
        let parts: Vec<&str> = file.split('/').collect();
        let q = format!("{} {}", parts[parts.len() - 2], parts[parts.len() - 1]);
        let got = found(&ix, &q);
        assert!(
            got.iter()
                .any(|(t, k)| *t == file.as_str() && *k == Kind::Token),
            "{q}: {got:?}"
        );
        // Lowercase forms line up with their texts.
        assert_eq!(ix.lower_of(1).unwrap(), ix.text(1).unwrap().to_lowercase());
    }

    #[test]
    fn a_search_in_parts_finds_what_one_pass_finds() {
        let ix = codegraph();
        let n = ix.len() as usize;
        for q in [
            "parse entry",
            "prase_entry",
            "src",
            "lexer table 3",
            "zq",
            "sync_0/src/http",
        ] {
            let q = Query::new(q).unwrap();
            let one = ix.search_on(&q, n, 50, 1);
            for threads in [2, 3, 7] {
                assert_eq!(ix.search_on(&q, n, 50, threads), one, "{threads}");
            }
        }
    }

    #[test]
    fn upto_hides_newer_texts() {
        let ix = index(&["alpha", "alphabet"]);
        assert_eq!(ix.search("alpha", 1, 10).1, 1);
        assert_eq!(ix.search("alpha", 2, 10).1, 2);
        // Keeping fewer keeps the best.
        let ix = index(&["parse_args_all", "x#parse_args", "parse_args", "parse_argz"]);
        let (best, total) = ix.search("parse_args", u32::MAX, 2);
        assert_eq!(total, 4);
        let best: Vec<&str> = best.iter().map(|m| ix.text(m.id).unwrap()).collect();
        assert_eq!(best, ["parse_args", "x#parse_args"]);
    }

    /// Measures a search on 360,000 generated names:
    /// `cargo test --release -p strata-mcp --lib find::tests::timing -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn timing() {
        let cfg = strata_fixtures::codegraph::Config::with_edges(2_000_000);
        let mut edges = Vec::new();
        strata_fixtures::codegraph::write_edges(&cfg, &mut edges).unwrap();
        let mut attrs = Vec::new();
        strata_fixtures::codegraph::write_attrs(&cfg, &mut attrs).unwrap();
        let mut seen = std::collections::HashSet::new();
        let mut ix = Index::new();
        let edges = String::from_utf8(edges).unwrap();
        let attrs = String::from_utf8(attrs).unwrap();
        for line in edges.lines().chain(attrs.lines()) {
            let f: Vec<&str> = line.split('\t').collect();
            for v in [f[0], f[2]] {
                if ix.len() < 360_000 && seen.insert(v) {
                    ix.push(v);
                }
            }
        }
        println!("{} names", ix.len());
        for q in [
            "parse args",
            "http_1",
            "lexer",
            "prase_token",
            "the parser crate",
            "zq",
        ] {
            let mut best = std::time::Duration::MAX;
            let mut n = 0;
            let runs: usize = std::env::var("FIND_RUNS")
                .ok()
                .and_then(|r| r.parse().ok())
                .unwrap_or(5);
            for _ in 0..runs {
                let t = std::time::Instant::now();
                n = ix.search(q, u32::MAX, 40).1;
                best = best.min(t.elapsed());
            }
            println!("{q:>20}: {n} matches, best of {runs} {best:?}");
        }
    }
}
