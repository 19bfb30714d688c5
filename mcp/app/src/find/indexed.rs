//! The search over an [`IndexFile`]: each kind of match as a set of text numbers, from the
//! keys' posting lists, so the count of all matches is set arithmetic and the best of a
//! kind are its lowest numbers.
//!
//! A query with no segment break (`/ # : .`, spaces) occurs in a text only inside one of
//! its segments: the segments holding it (one memmem pass over the segment keys) give the
//! texts holding it, exactly, and whether it sits on word breaks there. A query with
//! breaks is a chain of segments (one ending with its first part, whole middle parts, one
//! starting with its last part): the texts holding all of them are read and checked. Non-ASCII
//! texts are filed under no key: each is read and classified as the scan does.

use std::collections::HashMap;

use roaring::{MultiOps, RoaringBitmap};

use super::file::{IndexFile, IndexFileError, KeyList};
use super::keys::{break_keys, is_segment_break};
use super::words::{boundary_after, boundary_before, is_separator};
use super::{Kind, Match, Query, Scratch, rank::rank};

/// What a search found: the best matches, how many matched in all, and the texts of the
/// matches kept.
#[derive(Debug, Default)]
pub(super) struct Found {
    /// The best matches, ranked.
    pub(super) matches: Vec<Match>,
    /// How many texts matched in all.
    pub(super) total: usize,
    /// The text of each match kept, by id.
    pub(super) texts: HashMap<u32, String>,
}

/// A text number found, with how it matched.
type Hit = (u32, Kind, u32, bool);

impl IndexFile {
    fn damaged(&self, what: &'static str) -> IndexFileError {
        IndexFileError::Damaged {
            path: self.path().to_owned(),
            what,
        }
    }

    /// Where the posting list of the fuzzy candidate `key` is, if it is one (read under a
    /// guard, as in [`IndexFile::fuzzy`]).
    fn candidate(&self, key: &[u8]) -> Result<Option<u64>, IndexFileError> {
        strata_store::catch_damage(|| self.cands().get(key))
            .map_err(|_| self.damaged("its fuzzy candidates are malformed"))
    }

    fn posting_of(&self, at: Option<u64>) -> Result<RoaringBitmap, IndexFileError> {
        at.and_then(|at| self.postings(at))
            .ok_or_else(|| self.damaged("a posting list is malformed"))
    }

    /// The union of the posting lists of keys `keys` of `list`.
    fn union(
        &self,
        list: KeyList<'_>,
        keys: impl IntoIterator<Item = usize>,
    ) -> Result<RoaringBitmap, IndexFileError> {
        // One union of all (not one at a time, which merges sorted arrays over and over).
        keys.into_iter()
            .map(|i| self.posting_of(list.posting(i)))
            .union()
    }

    /// The segments holding `needle` (which holds no segment break): each key's number,
    /// and whether an occurrence there sits on word breaks.
    fn segments_holding(&self, needle: &[u8]) -> Result<Vec<(usize, bool)>, IndexFileError> {
        let segs = self.segments();
        let mut out: Vec<(usize, bool)> = Vec::new();
        for pos in memchr::memmem::find_iter(segs.keys, needle) {
            let i = segs
                .key_at(pos)
                .ok_or_else(|| self.damaged("a segment key is malformed"))?;
            // The key holds the occurrence, unless the file's offsets are wrong.
            let found = segs.start(i).zip(segs.key(i)).and_then(|(start, key)| {
                let at = pos.checked_sub(start)?;
                let key = std::str::from_utf8(key).ok()?;
                (at + needle.len() <= key.len()).then_some((key, at))
            });
            let (key, at) = found.ok_or_else(|| self.damaged("a segment key is malformed"))?;
            let aligned = boundary_before(key, at) && boundary_after(key, at + needle.len());
            match out.last_mut() {
                Some((j, a)) if *j == i => *a |= aligned,
                _ => out.push((i, aligned)),
            }
        }
        Ok(out)
    }

    /// The texts holding `needle` (which holds no segment break) inside a segment.
    fn holding(&self, needle: &[u8]) -> Result<RoaringBitmap, IndexFileError> {
        let keys = self.segments_holding(needle)?;
        self.union(self.segments(), keys.into_iter().map(|(i, _)| i))
    }

    /// The texts with `word` as a word, through `seen` (the words one search looked up).
    fn with_word_cached<'q>(
        &self,
        word: &'q str,
        seen: &mut HashMap<&'q str, RoaringBitmap>,
    ) -> Result<RoaringBitmap, IndexFileError> {
        if let Some(set) = seen.get(word) {
            return Ok(set.clone());
        }
        let set = self.with_word(word, false)?;
        seen.insert(word, set.clone());
        Ok(set)
    }

    /// The texts with `word` as a word (or with `prefix`, a word starting with it).
    fn with_word(&self, word: &str, prefix: bool) -> Result<RoaringBitmap, IndexFileError> {
        let words = self.words();
        let bad = || self.damaged("a word key is malformed");
        if prefix {
            let range = words.prefixed(word.as_bytes()).ok_or_else(bad)?;
            return self.union(words, range);
        }
        match words.find(word.as_bytes()).ok_or_else(bad)? {
            Some(i) => self.union(words, [i]),
            None => Ok(RoaringBitmap::new()),
        }
    }

    /// The numbers of the texts of byte length `len`, as a range (numbers run shorter
    /// first).
    fn of_length(&self, len: usize) -> Result<std::ops::Range<u32>, IndexFileError> {
        let first_at_least = |len: usize| -> Result<u32, IndexFileError> {
            let (mut lo, mut hi) = (0u32, self.texts());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let l = self
                    .text_len(mid)
                    .ok_or_else(|| self.damaged("a text offset is malformed"))?;
                if l < len {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            Ok(lo)
        };
        Ok(first_at_least(len)?..first_at_least(len + 1)?)
    }

    fn text_of(&self, ord: u32) -> Result<&str, IndexFileError> {
        self.text(ord)
            .ok_or_else(|| self.damaged("a text is malformed"))
    }

    /// The best `keep` texts with an id up to `upto` matching `q`, ranked as
    /// [`super::Index::search`] ranks them, and how many matched in all.
    pub(super) fn search(
        &self,
        q: &Query,
        upto: u32,
        keep: usize,
    ) -> Result<Found, IndexFileError> {
        let mut excluded: RoaringBitmap = self.non_ascii().collect();
        if upto < self.texts() {
            for ord in 0..self.texts() {
                if self.id(ord).is_none_or(|id| id > upto) {
                    excluded.insert(ord);
                }
            }
        }
        let mut classes: Vec<(Kind, u32, bool, RoaringBitmap)> = Vec::new();
        let mut hits: Vec<Hit> = Vec::new();
        let mut contains;
        let raw_len = q.lower.len();
        if q.lower.bytes().any(is_segment_break) {
            contains = self.chain(q, &excluded, &mut hits)?;
        } else {
            let segs = self.holding_split(q.lower.as_bytes())?;
            contains = segs.0 - &excluded;
            let aligned = segs.1;
            let len = self.of_length(raw_len)?;
            let mut exact = contains.clone();
            exact.remove_range(..len.start);
            exact.remove_range(len.end..);
            for ord in &exact {
                hits.push((ord, Kind::Exact, 0, self.text_of(ord)? == q.raw));
            }
            let last = match self.candidate(q.lower.as_bytes())? {
                Some(at) => (self.posting_of(Some(at))? - &exact) - &excluded,
                None => RoaringBitmap::new(),
            };
            // The last-part matches in the query's case first: read until enough are found.
            let (mut al, mut other) = (0, 0);
            for ord in &last {
                let a = self.text_of(ord)?.ends_with(q.raw.as_str());
                if a {
                    al += 1;
                } else if other >= keep {
                    continue;
                } else {
                    other += 1;
                }
                hits.push((ord, Kind::LastPart, 0, a));
                if al >= keep {
                    break;
                }
            }
            let firsts = self.firsts();
            let range = firsts
                .prefixed(q.lower.as_bytes())
                .ok_or_else(|| self.damaged("a first-segment key is malformed"))?;
            let aligned_keys: Vec<usize> = range
                .clone()
                .filter(|&i| {
                    let key = firsts.key(i).unwrap_or_default();
                    key.get(raw_len).is_none_or(|&b| is_separator(b))
                })
                .collect();
            let prefix = self.union(firsts, range)?;
            let prefix_al = self.union(firsts, aligned_keys)?;
            let earlier = &exact | &last;
            let prefix = (prefix - &earlier) - &excluded;
            let prefix_al = prefix_al & &prefix;
            let sub = (&contains - &earlier) - &prefix;
            let sub_al = &aligned & &sub;
            classes.push((Kind::Prefix, 0, true, prefix_al.clone()));
            classes.push((Kind::Prefix, 0, false, prefix - prefix_al));
            classes.push((Kind::Substring, 0, true, sub_al.clone()));
            classes.push((Kind::Substring, 0, false, sub - sub_al));
        }
        hits.sort_unstable_by_key(|&(ord, kind, _, aligned)| (kind, !aligned, ord));
        // Every text holding the query matches (exact, last part, prefix or substring).
        let mut total = contains.len() as usize;
        let mut seen: HashMap<&str, RoaringBitmap> = HashMap::new();
        contains |= &excluded;
        // Every word, the last as a prefix: not in texts holding the query.
        if q.all_words != 0 {
            let last = q.words.len() - 1;
            let mut token: Option<RoaringBitmap> = None;
            for (i, w) in q.words.iter().enumerate() {
                let has = if i == last {
                    self.with_word(w, true)?
                } else {
                    self.with_word_cached(w, &mut seen)?
                };
                token = Some(match token {
                    Some(t) => t & has,
                    None => has,
                });
            }
            let token = token.unwrap_or_default() - &contains;
            contains |= &token;
            classes.push((Kind::Token, 0, true, token));
        }
        for (d, set) in self.fuzzy(q)? {
            let set = set - &contains;
            classes.push((Kind::Fuzzy, d, false, set));
        }
        for c in &classes {
            if c.0 == Kind::Fuzzy {
                contains |= &c.3;
            }
        }
        for (d, set) in self.some_words(q, &mut seen)? {
            classes.push((Kind::SomeWords, d, false, set - &contains));
        }
        total += classes
            .iter()
            .filter(|c| c.0 >= Kind::Token)
            .map(|c| c.3.len() as usize)
            .sum::<usize>();
        // Sets of one kind follow in rank order; the hits of the earlier kinds first.
        let mut kept: Vec<Hit> = hits.into_iter().take(keep).collect();
        let mut order: Vec<&(Kind, u32, bool, RoaringBitmap)> = classes.iter().collect();
        order.sort_by_key(|c| (c.0, !c.2, c.1));
        for c in order {
            if kept.len() >= keep {
                break;
            }
            let need = keep - kept.len();
            kept.extend(c.3.iter().take(need).map(|ord| (ord, c.0, c.1, c.2)));
        }
        kept.sort_unstable_by_key(|&(ord, kind, d, aligned)| (kind, !aligned, d, ord));
        kept.truncate(keep);
        let mut found = Found::default();
        let mut scratch = Scratch::default();
        for (ord, kind, distance, aligned) in kept {
            let id = self
                .id(ord)
                .filter(|&id| id != 0 && id <= upto)
                .ok_or_else(|| self.damaged("a text id is malformed"))?;
            let text = self.text_of(ord)?;
            let m = Match {
                id,
                kind,
                distance,
                aligned,
            };
            // A match kept is one the scan makes of its text: a file whose keys or posting
            // lists lead elsewhere (written wrong, not merely damaged: the checksum holds) is
            // refused, and rebuilt, rather than answered.
            if classify(q, id, text, &mut scratch).as_ref() != Some(&m) {
                return Err(self.damaged("its posting lists name texts that do not match"));
            }
            if found.texts.insert(id, text.to_owned()).is_some() {
                return Err(self.damaged("it lists a text id twice"));
            }
            found.matches.push(m);
        }
        // The non-ASCII texts, as the scan classifies them.
        for ord in self.non_ascii() {
            let Some(id) = self.id(ord).filter(|&id| id <= upto) else {
                continue;
            };
            if id == 0 {
                return Err(self.damaged("a text id is malformed"));
            }
            let text = self.text_of(ord)?;
            if let Some(m) = classify(q, id, text, &mut scratch) {
                total += 1;
                if found.texts.insert(id, text.to_owned()).is_some() {
                    return Err(self.damaged("it lists a text id twice"));
                }
                found.matches.push(m);
            }
        }
        found.total = total;
        if keep == 0 {
            found.matches.clear();
            found.texts.clear();
            return Ok(found);
        }
        let texts = &found.texts;
        found.matches = rank(std::mem::take(&mut found.matches), keep, |id| {
            texts.get(&id).map_or("", String::as_str)
        });
        Ok(found)
    }

    /// The texts holding `needle` inside a segment, and those where it sits on word
    /// breaks.
    fn holding_split(
        &self,
        needle: &[u8],
    ) -> Result<(RoaringBitmap, RoaringBitmap), IndexFileError> {
        let keys = self.segments_holding(needle)?;
        let segs = self.segments();
        let all = self.union(segs, keys.iter().map(|&(i, _)| i))?;
        let aligned = self.union(segs, keys.iter().filter(|k| k.1).map(|&(i, _)| i))?;
        Ok((all, aligned))
    }

    /// A query with segment breaks: the texts holding every segment of its chain, read and
    /// checked; pushes each match (exact, last part, prefix or substring) to `hits` and
    /// returns the texts holding the query.
    fn chain(
        &self,
        q: &Query,
        excluded: &RoaringBitmap,
        hits: &mut Vec<Hit>,
    ) -> Result<RoaringBitmap, IndexFileError> {
        let parts: Vec<&str> = q
            .lower
            .split(|c: char| c.is_ascii() && is_segment_break(c as u8))
            .collect();
        let segs = self.segments();
        let bad = || self.damaged("a segment key is malformed");
        let mut cands: Option<RoaringBitmap> = None;
        let mut narrow = |set: RoaringBitmap| {
            cands = Some(match cands.take() {
                Some(c) => c & set,
                None => set,
            });
        };
        // The texts holding each break of the query.
        let words = self.words();
        for k in break_keys(&q.lower) {
            let bad = || self.damaged("a word key is malformed");
            narrow(match words.find(&k).ok_or_else(bad)? {
                Some(i) => self.union(words, [i])?,
                None => RoaringBitmap::new(),
            });
        }
        let n = parts.len();
        for (i, part) in parts.iter().enumerate() {
            if part.is_empty() {
                continue;
            }
            let set = if i == 0 {
                // A segment ending with the first part.
                let mut keys = Vec::new();
                for pos in memchr::memmem::find_iter(segs.keys, part.as_bytes()) {
                    let k = segs.key_at(pos).ok_or_else(bad)?;
                    let end = segs.start(k + 1).ok_or_else(bad)? - 1;
                    if pos + part.len() == end {
                        keys.push(k);
                    }
                }
                self.union(segs, keys)?
            } else if i == n - 1 {
                let range = segs.prefixed(part.as_bytes()).ok_or_else(bad)?;
                self.union(segs, range)?
            } else {
                match segs.find(part.as_bytes()).ok_or_else(bad)? {
                    Some(k) => self.union(segs, [k])?,
                    None => RoaringBitmap::new(),
                }
            };
            narrow(set);
        }
        let mut cands = cands.unwrap_or_else(|| (0..self.texts()).collect());
        cands -= excluded;
        let mut contains = RoaringBitmap::new();
        let mut scratch = Scratch::default();
        let mut lower = String::new();
        for ord in &cands {
            let text = self.text_of(ord)?;
            lower.clear();
            lower.push_str(text);
            lower.make_ascii_lowercase();
            if !lower.contains(q.lower.as_str()) {
                continue;
            }
            contains.insert(ord);
            let tail = &lower[lower.rfind(['/', '#', ':']).map_or(0, |i| i + 1)..];
            scratch.cand = u32::MAX;
            if let Some((kind, d, aligned)) = q.classify(text, &lower, tail, 1, &mut scratch) {
                hits.push((ord, kind, d, aligned));
            }
        }
        Ok(contains)
    }

    /// The texts whose fuzzy candidate is within the query's edits, by distance.
    fn fuzzy(&self, q: &Query) -> Result<Vec<(u32, RoaringBitmap)>, IndexFileError> {
        use fst::{IntoStreamer, Streamer};
        if q.max_edits == 0 {
            return Ok(Vec::new());
        }
        let mut by: Vec<(u32, Vec<RoaringBitmap>)> = Vec::new();
        let mut scratch = Scratch::default();
        let aut = Edits {
            query: &q.chars,
            max: q.max_edits as u32,
        };
        // The candidates within reach, read under a guard: `fst` panics on some malformed
        // maps (a file written wrong: a damaged one fails its checksum).
        let found = strata_store::catch_damage(|| {
            let mut found = Vec::new();
            let mut stream = self.cands().search(aut).into_stream();
            while let Some((key, at)) = stream.next() {
                found.push((key.to_vec(), at));
            }
            found
        })
        .map_err(|_| self.damaged("its fuzzy candidates are malformed"))?;
        for (key, at) in found {
            let Ok(key) = std::str::from_utf8(&key) else {
                return Err(self.damaged("a fuzzy candidate is malformed"));
            };
            if let Some(d) = q.fuzzy_uncached(key, key, &mut scratch) {
                let set = self.posting_of(Some(at))?;
                match by.iter_mut().find(|(e, _)| *e == d) {
                    Some((_, s)) => s.push(set),
                    None => by.push((d, vec![set])),
                }
            }
        }
        by.sort_unstable_by_key(|(d, _)| *d);
        Ok(by.into_iter().map(|(d, sets)| (d, sets.union())).collect())
    }

    /// The texts with some of the query's significant words as words (and one of its first
    /// seven inside), by the words they lack.
    fn some_words<'q>(
        &self,
        q: &'q Query,
        seen: &mut HashMap<&'q str, RoaringBitmap>,
    ) -> Result<Vec<(u32, RoaringBitmap)>, IndexFileError> {
        if q.words.len() < 2 || q.significant == 0 {
            return Ok(Vec::new());
        }
        let mut any_first = RoaringBitmap::new();
        let mut any_later = RoaringBitmap::new();
        // have[j]: the texts with at least j + 1 of the words.
        let mut have: Vec<RoaringBitmap> = Vec::new();
        for (i, w) in q.words.iter().enumerate().take(64) {
            if q.significant_words & (1 << i) == 0 {
                continue;
            }
            let set = &self.with_word_cached(w, seen)?;
            if i < 7 {
                any_first |= set;
            } else {
                any_later |= set;
            }
            have.push(RoaringBitmap::new());
            for j in (1..have.len()).rev() {
                let more = &have[j - 1] & set;
                have[j] |= more;
            }
            have[0] |= set;
        }
        if !any_later.is_empty() {
            // A later word counts only in a text holding one of the first seven.
            let mut inside = RoaringBitmap::new();
            for (i, w) in q.words.iter().enumerate().take(7) {
                if q.significant_words & (1 << i) != 0 {
                    inside |= self.holding(w.as_bytes())?;
                }
            }
            any_first |= any_later & inside;
        }
        let mut out = Vec::new();
        for h in (1..=have.len()).rev() {
            let exactly = &have[h - 1] - have.get(h).cloned().unwrap_or_default();
            let set = exactly & &any_first;
            out.push(((q.words.len() - h) as u32, set));
        }
        Ok(out)
    }
}

/// How the scan classifies the text `text` with id `id`.
pub(super) fn classify(q: &Query, id: u32, text: &str, scratch: &mut Scratch) -> Option<Match> {
    let lower = text.to_lowercase();
    let tail = &lower[lower.rfind(['/', '#', ':']).map_or(0, |i| i + 1)..];
    scratch.cand = u32::MAX;
    let (kind, distance, aligned) = q.classify(text, &lower, tail, q.flags(&lower), scratch)?;
    Some(Match {
        id,
        kind,
        distance,
        aligned,
    })
}

/// An automaton accepting the keys within `max` edits of `query` (a character is a byte
/// here: keys are ASCII; a non-ASCII byte costs nothing, so such keys pass to the exact
/// test).
struct Edits<'a> {
    query: &'a [char],
    max: u32,
}

impl fst::Automaton for Edits<'_> {
    type State = Option<Vec<u32>>;

    fn start(&self) -> Self::State {
        Some((0..=self.query.len() as u32).collect())
    }

    fn is_match(&self, state: &Self::State) -> bool {
        state
            .as_ref()
            .and_then(|row| row.last())
            .is_some_and(|&d| d <= self.max)
    }

    fn can_match(&self, state: &Self::State) -> bool {
        state.is_some()
    }

    fn accept(&self, state: &Self::State, byte: u8) -> Self::State {
        let row = state.as_ref()?;
        if byte >= 0x80 {
            return Some(row.clone());
        }
        let c = char::from(byte);
        let mut next = Vec::with_capacity(row.len());
        next.push(row[0] + 1);
        for (j, &qc) in self.query.iter().enumerate() {
            let sub = row[j] + u32::from(qc != c);
            next.push(sub.min(row[j + 1] + 1).min(next[j] + 1));
        }
        next.iter().any(|&d| d <= self.max).then_some(next)
    }
}
