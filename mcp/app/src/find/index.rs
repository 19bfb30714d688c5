//! The [`Index`]: the dictionary in memory (each text and its lowercase form, back to back
//! in two buffers), extended as batches add texts, and the search over it: one linear pass,
//! split over threads for a large dictionary, marking the texts that hold the query and its
//! words before each is classified.

use std::ops::ControlFlow;

use strata_store::Snapshot;

use super::{FUZZY_UNKNOWN, Match, Query, Scratch};

/// Dictionaries of at least this many texts are searched on several threads.
const PARALLEL_TEXTS: usize = 100_000;

/// The most threads one search uses.
const MAX_THREADS: usize = 4;

/// The dictionary in memory: texts with ids `base + 1..=base + len` (`base` is 0 but for
/// the texts newer than a persistent index file), and their lowercase forms.
#[derive(Clone, Debug, Default)]
pub struct Index {
    /// The id before the first text held.
    base: u32,
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

    /// An empty index of the texts after id `base`.
    pub fn after(base: u32) -> Index {
        Index {
            base,
            ..Index::default()
        }
    }

    /// The id before the first text it holds (0 for a whole dictionary).
    pub fn base(&self) -> u32 {
        self.base
    }

    /// The last id it holds (or would, with no texts: [`Index::base`]).
    pub fn last_id(&self) -> u32 {
        self.base + self.len()
    }

    /// How many texts it holds (ids `base + 1..=base + len`).
    pub fn len(&self) -> u32 {
        self.text_ends.len() as u32
    }

    /// Whether it holds no text.
    pub fn is_empty(&self) -> bool {
        self.text_ends.is_empty()
    }

    /// Adds the next text (its id is [`Index::last_id`] after the call).
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
        let next = self.last_id() + 1;
        // Ids are dense from `next` (the walk reports a missing chunk as damage).
        snap.for_each_text(next, &mut |_, t| {
            self.push(t);
            ControlFlow::Continue(())
        })?;
        Ok(())
    }

    /// [`Index::extend_from`], reading no text with an id past `upto`.
    pub fn extend_to(
        &mut self,
        snap: &Snapshot,
        upto: u32,
    ) -> Result<(), strata_store::StoreError> {
        let next = self.last_id() + 1;
        if next > upto {
            return Ok(());
        }
        snap.for_each_text(next, &mut |id, t| {
            if id > upto {
                return ControlFlow::Break(());
            }
            self.push(t);
            ControlFlow::Continue(())
        })?;
        Ok(())
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
        let finder = memchr::memmem::Finder::new(needle);
        let hay = &self.lower.as_bytes()[..to];
        let (mut id, mut at) = (0, from);
        while let Some(p) = hay.get(at..).and_then(|h| finder.find(h)) {
            let pos = at + p;
            while id < ends.len() && ends[id] <= pos {
                id += 1;
            }
            let Some(&end) = ends.get(id) else {
                break;
            };
            // A hit across two texts is no hit; either way the next is looked for from the
            // next text on (a hit across texts must not hide one starting inside it).
            if pos + needle.len() <= end {
                flags[id] |= bit;
            }
            at = end;
        }
    }

    /// The text with id `id`.
    pub fn text(&self, id: u32) -> Option<&str> {
        slot(&self.text, &self.text_ends, id.checked_sub(self.base)?)
    }

    /// The best `keep` texts with an id up to `upto` matching `query`, ranked best first
    /// (ties go to the shorter text, then the text in byte order), and how many matched in
    /// all. An empty query matches nothing.
    pub fn search(&self, query: &str, upto: u32, keep: usize) -> (Vec<Match>, usize) {
        let Some(q) = Query::new(query) else {
            return (Vec::new(), 0);
        };
        let n = upto.saturating_sub(self.base).min(self.len()) as usize;
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
    pub(super) fn search_on(
        &self,
        q: &Query,
        n: usize,
        keep: usize,
        threads: usize,
    ) -> (Vec<Match>, usize) {
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
        (self.rank(found, keep), total)
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
                    id: self.base + i as u32 + 1,
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
    pub(super) fn lower_of(&self, id: u32) -> Option<&str> {
        slot(&self.lower, &self.lower_ends, id.checked_sub(self.base)?)
    }
}

fn slot<'a>(buf: &'a str, ends: &[usize], id: u32) -> Option<&'a str> {
    let i = (id as usize).checked_sub(1)?;
    let end = *ends.get(i)?;
    let start = if i == 0 { 0 } else { ends[i - 1] };
    buf.get(start..end)
}
