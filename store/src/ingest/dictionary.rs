//! The batch's dictionary: texts, numbers and units interned to ids (those already stored
//! are found, new ones numbered after them), and the new texts written to the dictionary
//! tables at commit.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use redb::{ReadableTable, WriteTransaction};
use rustc_hash::FxBuildHasher;

use super::Batch;
use crate::dump::Field;
use crate::error::{Fault, Result, damaged};
use crate::layout;
use strata_eval::Term;

/// The texts a batch has seen, each with its id: their bytes back to back in one buffer, in
/// the order they were first seen (so the new ones, numbered as they come, are in id order),
/// found by a table of (hash, id, slot).
#[derive(Default)]
pub(super) struct TextMap {
    table: HashTable<(u64, u32, u32)>,
    bytes: String,
    /// Where each slot's text ends in `bytes`.
    ends: Vec<usize>,
    /// Each slot's id.
    ids: Vec<u32>,
}

impl TextMap {
    fn hash(s: &str) -> u64 {
        FxBuildHasher.hash_one(s)
    }

    fn text(&self, slot: u32) -> &str {
        let slot = slot as usize;
        let start = if slot == 0 { 0 } else { self.ends[slot - 1] };
        &self.bytes[start..self.ends[slot]]
    }

    /// The id of `s`, whose [`TextMap::hash`] is `h`.
    fn get(&self, h: u64, s: &str) -> Option<u32> {
        self.table
            .find(h, |&(eh, _, slot)| eh == h && self.text(slot) == s)
            .map(|&(_, id, _)| id)
    }

    /// Adds `s` (not in the map), whose hash is `h`, with its id.
    fn insert(&mut self, h: u64, s: &str, id: u32) {
        let slot = self.ids.len() as u32;
        self.bytes.push_str(s);
        self.ends.push(self.bytes.len());
        self.ids.push(id);
        self.table.insert_unique(h, (h, id, slot), |e| e.0);
    }

    /// The texts with an id after `after`, in id order.
    fn after(&self, after: u32) -> impl Iterator<Item = (u32, &str)> {
        self.ids
            .iter()
            .enumerate()
            .filter(move |&(_, &id)| id > after)
            .map(|(slot, &id)| (id, self.text(slot as u32)))
    }
}

impl Batch<'_> {
    pub(super) fn intern_text(&mut self, s: &str) -> Result<u32> {
        let h = TextMap::hash(s);
        if let Some(id) = self.texts.get(h, s) {
            return Ok(id);
        }
        let stored = if self.start.texts > 0 {
            crate::intern::find_text(
                &self.id_by_text,
                &self.text_collisions,
                &self.text_by_id,
                self.store.inner.base.seal,
                self.start.texts,
                s,
            )?
        } else {
            None
        };
        let id = match stored {
            Some(id) => id,
            None => {
                let id = self.start.texts + 1 + self.new_texts;
                if id > Term::MAX_ID {
                    return Err(Fault::Full("the text dictionary".to_owned()));
                }
                self.new_texts += 1;
                id
            }
        };
        self.texts.insert(h, s, id);
        Ok(id)
    }

    pub(super) fn intern_number(&mut self, n: f64) -> Result<u32> {
        let bits = n.to_bits();
        if let Some(&id) = self.numbers.get(&bits) {
            return Ok(id);
        }
        let stored = if self.start.numbers > 0 {
            self.id_by_number.get(bits)?.map(|v| v.value())
        } else {
            None
        };
        let id = match stored {
            Some(id) => id,
            None => {
                let id = self.start.numbers + self.new_numbers.len() as u32;
                if id > Term::MAX_NUMBER_ID {
                    return Err(Fault::Full("the number dictionary".to_owned()));
                }
                self.new_numbers.push(bits);
                id
            }
        };
        self.numbers.insert(bits, id);
        Ok(id)
    }

    pub(super) fn intern_unit(&mut self, s: &str) -> Result<u32> {
        if let Some(&id) = self.units.get(s) {
            return Ok(id);
        }
        let id = match self.id_by_unit.get(s)?.map(|v| v.value()) {
            Some(id) => id,
            None => {
                self.new_units.push(s.into());
                self.start_units + self.new_units.len() as u32
            }
        };
        self.units.insert(s.into(), id);
        Ok(id)
    }

    pub(super) fn term(&mut self, field: &Field<'_>) -> Result<u32> {
        Ok(match field {
            Field::Absent => Term::ABSENT.0,
            Field::Text(s) => Term::text(self.intern_text(s)?).0,
            Field::Number(n) => match Term::integer(*n) {
                Some(t) => t.0,
                None => Term::number(self.intern_number(*n)?).0,
            },
        })
    }

    /// Writes the batch's new texts into the dictionary tables.
    pub(super) fn write_texts(&self, wtxn: &WriteTransaction) -> Result<()> {
        use crate::intern::{
            TEXT_CHUNK_BITS, chunk_bytes, decode_text_chunk, encode_text_chunk, seal_chunk,
            text_hash,
        };
        let seal = self.store.inner.base.seal;
        // In id order: new ids are handed out in the order texts are first seen.
        let new: Vec<(u32, &str)> = self.texts.after(self.start.texts).collect();
        if new.is_empty() {
            return Ok(());
        }
        let mut by_id = wtxn.open_table(layout::TEXT_BY_ID)?;
        let mut i = 0;
        while i < new.len() {
            let chunk = new[i].0 >> TEXT_CHUNK_BITS;
            let mut j = i;
            while j < new.len() && new[j].0 >> TEXT_CHUNK_BITS == chunk {
                j += 1;
            }
            // The chunk holds the ids before this batch's first (the empty slot 0 included).
            let stored = match by_id.get(chunk)? {
                Some(v) => decode_text_chunk(chunk_bytes(seal, chunk, v.value())?)?,
                None if chunk == 0 => vec![String::new()],
                None => Vec::new(),
            };
            if stored.len() as u32 != new[i].0 - (chunk << TEXT_CHUNK_BITS) {
                return Err(damaged(format!(
                    "dictionary chunk {chunk} holds {} texts; expected {}",
                    stored.len(),
                    new[i].0 - (chunk << TEXT_CHUNK_BITS)
                )));
            }
            let texts: Vec<&str> = stored
                .iter()
                .map(String::as_str)
                .chain(new[i..j].iter().map(|(_, s)| *s))
                .collect();
            let bytes = encode_text_chunk(seal.codec, texts.iter().copied());
            by_id.insert(chunk, seal_chunk(seal, chunk, bytes).as_slice())?;
            i = j;
        }
        let mut hashed: Vec<(u64, u32, &str)> =
            new.iter().map(|&(id, s)| (text_hash(s), id, s)).collect();
        hashed.sort_unstable();
        let mut by_hash = wtxn.open_table(layout::ID_BY_TEXT)?;
        let mut collisions = wtxn.open_table(layout::TEXT_COLLISIONS)?;
        let mut prev = None;
        for (h, id, s) in hashed {
            let taken = prev == Some(h) || (self.start.texts > 0 && by_hash.get(h)?.is_some());
            if taken {
                collisions.insert(s, id)?;
            } else {
                by_hash.insert(h, id)?;
            }
            prev = Some(h);
        }
        Ok(())
    }
}
