//! The batch's dictionary: texts, numbers and units interned to ids (those already stored
//! are found, new ones numbered after them), and the new texts written to the dictionary
//! tables at commit.

use redb::{ReadableTable, WriteTransaction};

use super::Batch;
use crate::ascending::insert_ascending;
use crate::dump::Field;
use crate::error::{Fault, Result, damaged};
use crate::layout;
use strata_eval::Term;

impl Batch<'_> {
    pub(super) fn intern_text(&mut self, s: &str) -> Result<u32> {
        if let Some(id) = self.texts.get(s) {
            return Ok(id);
        }
        let stored = if self.start.texts > 0 {
            self.stored_texts.find_text(
                &self.id_by_text,
                &self.text_collisions,
                &self.text_by_id,
                self.store.inner.base_seal,
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
        self.texts.insert(s, id);
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

    /// What [`NewTexts::write`] writes at commit: the batch's texts, which it takes (no text
    /// is interned after its last flush began).
    pub(super) fn new_texts(&mut self) -> NewTexts {
        NewTexts {
            texts: std::mem::take(&mut self.texts),
            seal: self.store.inner.base_seal,
            start: self.start.texts,
            new: self.new_texts,
        }
    }
}

/// The batch's texts, to write into the dictionary tables at commit: on a thread of their
/// own while the last flush writes the relations of the base file, which is where they go.
pub(super) struct NewTexts {
    texts: super::texts::Texts,
    seal: crate::seal::Seal,
    /// How many texts the store held before the batch; how many the batch added.
    start: u32,
    new: u32,
}

impl NewTexts {
    /// Writes the batch's new texts into the dictionary tables.
    pub(super) fn write(&self, wtxn: &WriteTransaction) -> Result<()> {
        use crate::intern::{
            TEXT_CHUNK_BITS, chunk_bytes, decode_text_chunk, encode_text_chunk, seal_chunk,
            text_hash,
        };
        let seal = self.seal;
        // The new texts, ascending by id: (slot, id).
        let mut new = self.texts.after(self.start).peekable();
        if new.peek().is_none() {
            return Ok(());
        }
        let mut by_id = wtxn.open_table(layout::TEXT_BY_ID)?;
        let mut hashed: Vec<(u64, u32, u32)> = Vec::with_capacity(self.new as usize);
        while let Some((slot, first)) = new.next() {
            let chunk = first >> TEXT_CHUNK_BITS;
            // The chunk holds the ids before this batch's first (the empty slot 0 included).
            let stored = match by_id.get(chunk)? {
                Some(v) => decode_text_chunk(chunk_bytes(seal, chunk, v.value())?)?,
                None if chunk == 0 => vec![String::new()],
                None => Vec::new(),
            };
            if stored.len() as u32 != first - (chunk << TEXT_CHUNK_BITS) {
                return Err(damaged(format!(
                    "dictionary chunk {chunk} holds {} texts; expected {}",
                    stored.len(),
                    first - (chunk << TEXT_CHUNK_BITS)
                )));
            }
            // The stored texts, then the batch's, borrowed where they are held.
            let mut texts: Vec<&str> = stored.iter().map(String::as_str).collect();
            let mut add = |slot: u32, id: u32| {
                let s = self.texts.str(slot);
                hashed.push((text_hash(s), id, slot));
                texts.push(s);
            };
            add(slot, first);
            while let Some((slot, id)) = new.next_if(|&(_, id)| id >> TEXT_CHUNK_BITS == chunk) {
                add(slot, id);
            }
            let bytes = encode_text_chunk(seal.codec, texts.iter().copied());
            by_id.insert(chunk, seal_chunk(seal, chunk, bytes).as_slice())?;
        }
        hashed.sort_unstable();
        let mut by_hash = wtxn.open_table(layout::ID_BY_TEXT)?;
        let mut collisions = wtxn.open_table(layout::TEXT_COLLISIONS)?;
        // A hash stored before, or the batch's own again, sends its text to `collisions`.
        let mut first = Vec::with_capacity(hashed.len());
        let mut prev = None;
        for (h, id, slot) in hashed {
            let taken = prev == Some(h) || (self.start > 0 && by_hash.get(h)?.is_some());
            if taken {
                collisions.insert(self.texts.str(slot), id)?;
            } else {
                first.push((h, id));
            }
            prev = Some(h);
        }
        insert_ascending(&mut by_hash, first)?;
        Ok(())
    }
}
