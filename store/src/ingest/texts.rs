//! The texts a batch has seen, with their ids: one arena of bytes and a hash table of slots
//! into it, where a map of boxed strings would cost an allocation (and its allocator's
//! overhead) and a 24-byte entry per text. At 8.2M texts (the 50M-edge code graph) this
//! holds about 0.5 GB where the map held about 0.9 GB (and 33 MB more since each text keeps
//! its hash's tag, below).

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// Texts by slot (in the order first seen), each with its id, and a hash index over them.
///
/// Each slot keeps the high half of its text's hash (its tag, 4 bytes), from which the
/// index's own hash is made: growing the index moves its slots without reading their texts
/// again, and a lookup compares a text only with the slots of its tag. Before, each growth
/// read and hashed every text (random reads of the arena); that and the comparisons took
/// 12% of a second batch of 2M attributes into a 10M-edge code graph. With tags, that batch
/// took 0.92x the time (whole process, median of 8) and the 10M edges as a first batch
/// 0.95x, at 1.02x the peak memory.
#[derive(Default)]
pub(super) struct Texts {
    /// The texts back to back.
    bytes: String,
    /// Where each slot's text ends in `bytes` (it starts where the one before ends).
    ends: Vec<u64>,
    /// Each slot's id.
    ids: Vec<u32>,
    /// Each slot's text's [`tag`].
    tags: Vec<u32>,
    /// Slots, by their tag's [`spread`].
    index: HashTable<u32>,
}

/// The high half of the hash of `s` (Fx's best mixed bits).
fn tag(s: &str) -> u32 {
    (FxBuildHasher.hash_one(s) >> 32) as u32
}

/// The index's hash of a tag: spread over 64 bits (the index takes its buckets from the low
/// bits and its control bytes from the top seven).
fn spread(tag: u32) -> u64 {
    u64::from(tag).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl Texts {
    /// The text of `slot`.
    pub(super) fn str(&self, slot: u32) -> &str {
        let i = slot as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }

    /// The id of `s`, when seen.
    pub(super) fn get(&self, s: &str) -> Option<u32> {
        let t = tag(s);
        self.index
            .find(spread(t), |&slot| {
                self.tags[slot as usize] == t && self.str(slot) == s
            })
            .map(|&slot| self.ids[slot as usize])
    }

    /// Records `s` (not seen before) with `id`.
    pub(super) fn insert(&mut self, s: &str, id: u32) {
        let slot = self.ids.len() as u32;
        self.bytes.push_str(s);
        self.ends.push(self.bytes.len() as u64);
        self.ids.push(id);
        let t = tag(s);
        self.tags.push(t);
        let tags = &self.tags;
        self.index
            .insert_unique(spread(t), slot, |&k| spread(tags[k as usize]));
    }

    /// The slot and id of every text with an id over `after`, in the order seen (so
    /// ascending by id: new ids are handed out in that order).
    pub(super) fn after(&self, after: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        (0..self.ids.len() as u32).filter_map(move |slot| {
            let id = self.ids[slot as usize];
            (id > after).then_some((slot, id))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Texts, tag};

    /// Two texts of one tag (found among 200K: a 32-bit tag repeats after about 77K) are
    /// told apart by their bytes.
    #[test]
    fn texts_of_one_tag_keep_their_own_ids() {
        let mut seen = std::collections::HashMap::new();
        let pair = (0..200_000u32)
            .map(|i| format!("sym:t{i}"))
            .find_map(|s| seen.insert(tag(&s), s.clone()).map(|other| (other, s)));
        let Some((a, b)) = pair else {
            panic!("no two of 200K texts share a tag");
        };
        assert_ne!(a, b);
        let mut t = Texts::default();
        t.insert(&a, 1);
        assert_eq!(t.get(&b), None);
        t.insert(&b, 2);
        // Past several growths of the index.
        for i in 0..50_000u32 {
            t.insert(&format!("other:{i}"), 10 + i);
        }
        assert_eq!((t.get(&a), t.get(&b)), (Some(1), Some(2)));
    }

    #[test]
    fn finds_each_text_and_lists_the_new_in_order() {
        let mut t = Texts::default();
        for i in 0..10_000u32 {
            let s = format!("sym:a/b{}.rs#f{}", i % 97, i);
            assert_eq!(t.get(&s), None);
            // Every third text as if stored before the batch (ids up to 100).
            let id = if i % 3 == 0 { i % 100 } else { 1000 + i };
            t.insert(&s, id);
        }
        t.insert("", 5);
        for i in 0..10_000u32 {
            let s = format!("sym:a/b{}.rs#f{}", i % 97, i);
            let id = if i % 3 == 0 { i % 100 } else { 1000 + i };
            assert_eq!(t.get(&s), Some(id));
        }
        assert_eq!(t.get(""), Some(5));
        assert_eq!(t.get("sym:a/b1.rs#f"), None);
        let new: Vec<(u32, u32)> = t.after(999).collect();
        assert_eq!(new.len(), 6_666);
        assert!(new.windows(2).all(|w| w[0].1 < w[1].1));
        assert_eq!((new[0].1, t.str(new[0].0)), (1001, "sym:a/b1.rs#f1"));
    }
}
