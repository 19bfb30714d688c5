//! The values an evaluation sees: the source's dictionary, and an overlay for values the
//! program itself makes (aggregate results, constants no stored fact holds).
//!
//! Overlay terms are handed out from the top of the text and number id spaces downward, and
//! each is checked to be unknown to the source, so they never collide with stored terms.

use std::sync::Mutex;

use rustc_hash::FxHashMap;

use crate::data::source::{FactSource, SourceError};
use crate::data::value::{Term, TermKind, Value};

#[derive(Default)]
struct Overlay {
    values: FxHashMap<Term, Value>,
    texts: FxHashMap<String, Term>,
    numbers: FxHashMap<u64, Term>,
    next_text: u32,
    next_number: u32,
    cache: FxHashMap<Term, Value>,
}

/// Terms and values for one evaluation.
pub struct Dict<'s> {
    source: &'s dyn FactSource,
    overlay: Mutex<Overlay>,
}

impl<'s> Dict<'s> {
    /// A dictionary over `source` with an empty overlay.
    pub fn new(source: &'s dyn FactSource) -> Dict<'s> {
        Dict {
            source,
            overlay: Mutex::new(Overlay {
                next_text: Term::MAX_ID,
                next_number: Term::MAX_NUMBER_ID,
                ..Overlay::default()
            }),
        }
    }

    /// The source underneath.
    pub fn source(&self) -> &'s dyn FactSource {
        self.source
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Overlay> {
        self.overlay
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The term of `value`: the source's when it has one, else an overlay term.
    pub fn term(&self, value: &Value) -> Result<Term, SourceError> {
        if let Value::Number(n) = value
            && let Some(t) = Term::integer(*n)
        {
            return Ok(t);
        }
        if let Value::Absent = value {
            return Ok(Term::ABSENT);
        }
        {
            let o = self.lock();
            let known = match value {
                Value::Text(s) => o.texts.get(s).copied(),
                Value::Number(n) => o.numbers.get(&n.to_bits()).copied(),
                Value::Absent => None,
            };
            if let Some(t) = known {
                return Ok(t);
            }
        }
        if let Some(t) = self.source.term(value)? {
            return Ok(t);
        }
        let mut o = self.lock();
        loop {
            let t = match value {
                Value::Text(_) => {
                    let t = Term::text(o.next_text);
                    o.next_text -= 1;
                    t
                }
                _ => {
                    let t = Term::number(o.next_number);
                    o.next_number -= 1;
                    t
                }
            };
            if self.source.value(t).is_err() {
                match value {
                    Value::Text(s) => o.texts.insert(s.clone(), t),
                    Value::Number(n) => o.numbers.insert(n.to_bits(), t),
                    Value::Absent => None,
                };
                o.values.insert(t, value.clone());
                return Ok(t);
            }
        }
    }

    /// Whether `term` is one the evaluation made (not the source's).
    pub fn made(&self, term: Term) -> bool {
        self.lock().values.contains_key(&term)
    }

    /// The value of `term`.
    pub fn value(&self, term: Term) -> Result<Value, SourceError> {
        match term.kind() {
            TermKind::Absent => return Ok(Value::Absent),
            TermKind::Integer(n) => return Ok(Value::Number(f64::from(n))),
            _ => {}
        }
        {
            let o = self.lock();
            if let Some(v) = o.values.get(&term).or_else(|| o.cache.get(&term)) {
                return Ok(v.clone());
            }
        }
        let v = self.source.value(term)?;
        self.lock().cache.insert(term, v.clone());
        Ok(v)
    }
}
