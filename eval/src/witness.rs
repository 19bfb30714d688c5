//! Witnesses: for each derived tuple, the first derivation found (a rule and its premises),
//! recorded compactly during evaluation; trees are built only for the rows answered.

use crate::ir::Ir;
use crate::value::{Term, Value};

/// A premise of a derivation: the fact a positive body literal matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Premise {
    /// Nothing recorded (a placeholder).
    None,
    /// Tuple `id` of in-memory relation `rel`: a derived relation, or a base relation the
    /// evaluation read whole into memory (whose tuples then have ids too).
    Tuple {
        /// The relation.
        rel: u32,
        /// The tuple's id.
        id: u32,
    },
    /// A base fact of `rel` read through the source (not held in memory), whose terms are
    /// copied into the base-terms arena at `start`.
    Base {
        /// The relation.
        rel: u32,
        /// Where its terms start.
        start: u32,
    },
}

/// A premise packed in 4 bytes, its relation left to the rule's literal: a tuple id of an
/// in-memory relation, or (top bit set) the offset of a base fact's terms in an arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word(u32);

impl Word {
    /// No premise recorded.
    pub const MISSING: Word = Word(u32::MAX);

    /// Tuple `id` of an in-memory relation (missing past 2^31 tuples).
    pub fn tuple(id: u32) -> Word {
        if id < ARENA { Word(id) } else { Word::MISSING }
    }

    /// A base fact whose terms start at `at` in an arena (missing past 2^31 - 1 terms).
    pub fn arena(at: usize) -> Word {
        if at < (ARENA - 1) as usize {
            Word(ARENA | at as u32)
        } else {
            Word::MISSING
        }
    }

    /// The word's bits, to carry it in a plain `u32`.
    pub fn raw(self) -> u32 {
        self.0
    }

    /// The word whose bits [`Word::raw`] gave.
    pub fn from_raw(bits: u32) -> Word {
        Word(bits)
    }

    /// Where the base fact's terms start, for an arena word.
    pub fn arena_offset(self) -> Option<usize> {
        (self != Word::MISSING && self.0 & ARENA != 0).then_some((self.0 & !ARENA) as usize)
    }

    /// The premise, given the relation of the rule's literal.
    pub fn decode(self, rel: u32) -> Premise {
        if self == Word::MISSING {
            Premise::None
        } else if let Some(at) = self.arena_offset() {
            Premise::Base {
                rel,
                start: at as u32,
            }
        } else {
            Premise::Tuple { rel, id: self.0 }
        }
    }

    /// The word for `premise`, whose base terms (if any) are at `at`.
    pub fn encode(premise: Premise, at: usize) -> Word {
        match premise {
            Premise::Tuple { id, .. } => Word::tuple(id),
            Premise::Base { .. } => Word::arena(at),
            Premise::None => Word::MISSING,
        }
    }
}

/// Copies the premise words of one derivation from a task's arena into `terms`, moving each
/// base fact's terms (of `arities[i]` terms) along.
pub fn copy_words(
    words: &[Word],
    arities: impl Iterator<Item = usize>,
    from: &[Term],
    to_words: &mut Vec<Word>,
    terms: &mut Vec<Term>,
) {
    for (w, arity) in words.iter().zip(arities) {
        match w.arena_offset() {
            Some(s) => match from.get(s..s + arity) {
                Some(t) => {
                    to_words.push(Word::arena(terms.len()));
                    terms.extend_from_slice(t);
                }
                None => to_words.push(Word::MISSING),
            },
            None => to_words.push(*w),
        }
    }
}

/// Every derivation of one evaluation, packed: per derived tuple 8 bytes (its rule and
/// where its premises start) and 4 bytes a premise. A premise's relation is the one its
/// rule's positive literal names, so only the tuple's id is kept; a base fact read through
/// the source (not held in memory) keeps its terms in an arena, and its premise word holds
/// the offset with the top bit set.
#[derive(Debug, Default)]
pub struct Witnesses {
    /// Per relation, per tuple id: `rule << 32 | start`, or [`NONE`] when none was recorded.
    derivs: Vec<Vec<u64>>,
    /// Per rule, the relation of each positive body literal (its premises' relations).
    rules: Vec<Vec<u32>>,
    premises: Vec<Word>,
    base_terms: Vec<Term>,
}

/// No derivation recorded.
const NONE: u64 = u64::MAX;
/// A premise word's flag: the premise is a base fact whose terms are in the arena.
const ARENA: u32 = 1 << 31;

impl Witnesses {
    /// Room for the relations and rules of `ir`.
    pub fn new(ir: &Ir) -> Witnesses {
        Witnesses {
            derivs: vec![Vec::new(); ir.relations.len()],
            rules: ir
                .rules
                .iter()
                .map(|r| {
                    r.body
                        .iter()
                        .filter_map(|l| match l {
                            crate::ir::Lit::Pos { rel, .. } => Some(*rel as u32),
                            _ => None,
                        })
                        .collect()
                })
                .collect(),
            ..Witnesses::default()
        }
    }

    /// Records the derivation of tuple `id` of `rel` by `rule`: its premise words in the
    /// order of the rule's positive literals, base facts' terms read from `base_terms` (the
    /// deriving task's arena).
    pub fn record(
        &mut self,
        rel: usize,
        id: u32,
        rule: u32,
        words: &[Word],
        base_terms: &[Term],
        ir: &Ir,
    ) {
        let start = self.premises.len();
        if base_terms.is_empty() {
            // No base fact's terms to copy: every word is a tuple id (or missing).
            self.premises.extend_from_slice(words);
            self.derived_at(rel, id, rule, start);
            return;
        }
        let arities = self
            .rules
            .get(rule as usize)
            .into_iter()
            .flatten()
            .map(|&r| ir.relations[r as usize].arity);
        copy_words(
            words,
            arities,
            base_terms,
            &mut self.premises,
            &mut self.base_terms,
        );
        self.derived_at(rel, id, rule, start);
    }

    /// Appends a block of premise words as a task left them (a derivation's words in a
    /// row, base facts' terms in `base_terms`), for derivations recorded with
    /// [`Witnesses::derived_at`]; returns where the block starts. Copying a task's block
    /// whole reads and writes memory in order, where recording each derivation in the
    /// order of its tuple's id would gather its words from the tasks at random.
    pub fn adopt(&mut self, words: &[Word], base_terms: &[Term]) -> usize {
        let start = self.premises.len();
        let shift = self.base_terms.len();
        self.premises
            .extend(words.iter().map(|&w| match w.arena_offset() {
                Some(s) => Word::arena(s + shift),
                None => w,
            }));
        self.base_terms.extend_from_slice(base_terms);
        start
    }

    /// Makes room for the derivations of `rel`'s tuples up to id `ids` (excluded) and
    /// `words` more premise words: a round's new tuples are then recorded without growing
    /// either list tuple by tuple.
    pub fn reserve(&mut self, rel: usize, ids: u32, words: usize) {
        if let Some(d) = self.derivs.get_mut(rel)
            && d.len() < ids as usize
        {
            d.resize(ids as usize, NONE);
        }
        self.premises.reserve(words);
    }

    /// Records the derivation of tuple `id` of `rel` by `rule`, its premise words at
    /// `start` of a block added by [`Witnesses::adopt`].
    pub fn derived_at(&mut self, rel: usize, id: u32, rule: u32, start: usize) {
        let d = &mut self.derivs[rel];
        if d.len() <= id as usize {
            d.resize(id as usize + 1, NONE);
        }
        d[id as usize] = u64::from(rule) << 32 | start as u64;
    }

    /// The derivation of tuple `id` of `rel`, if one was recorded: its rule, and its
    /// premises in the order of the rule's positive literals.
    pub fn derivation(&self, rel: usize, id: u32) -> Option<(u32, Vec<Premise>)> {
        let word = *self.derivs.get(rel)?.get(id as usize)?;
        if word == NONE {
            return None;
        }
        let (rule, start) = ((word >> 32) as u32, word as u32 as usize);
        let rels = self.rules.get(rule as usize)?;
        let words = self.premises.get(start..start + rels.len())?;
        let premises = rels
            .iter()
            .zip(words)
            .map(|(&rel, w)| w.decode(rel))
            .collect();
        Some((rule, premises))
    }

    /// The terms of a base premise.
    pub fn base_terms(&self, start: u32, arity: usize) -> &[Term] {
        self.base_terms
            .get(start as usize..start as usize + arity)
            .unwrap_or(&[])
    }

    /// Bytes held, roughly.
    pub fn bytes(&self) -> usize {
        self.derivs.iter().map(|d| d.len() * 8).sum::<usize>()
            + self.premises.len() * 4
            + self.base_terms.len() * 4
    }
}

/// One node of a witness tree: a fact, and the facts it was derived from.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Node {
    /// The relation's name.
    pub relation: String,
    /// The fact's values.
    pub values: Vec<Value>,
    /// The premises, in the order the rule writes them (empty for a base fact).
    pub children: Vec<Node>,
}

impl Node {
    /// Renders the tree one node a line, each indented three spaces per level past `indent`.
    pub fn render(&self, indent: usize, out: &mut String) {
        // Iterative: a derivation through a long chain is deep.
        let mut stack: Vec<(&Node, usize)> = vec![(self, indent)];
        while let Some((n, depth)) = stack.pop() {
            out.push_str(&" ".repeat(depth));
            n.write_fact(out);
            out.push('\n');
            for c in n.children.iter().rev() {
                stack.push((c, depth + 3));
            }
        }
    }

    /// Writes `relation("a", 1, absent)`.
    pub fn write_fact(&self, out: &mut String) {
        out.push_str(&self.relation);
        out.push('(');
        for (i, v) in self.values.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            write_value(v, out);
        }
        out.push(')');
    }
}

/// Writes a value as a program would: text quoted (with `\"` and `\\`), numbers bare,
/// `absent`.
pub fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Text(s) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        other => out.push_str(&other.to_string()),
    }
}
