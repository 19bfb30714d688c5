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

/// Copies the premise words of one derivation from a task's arena: each word is handed to
/// `out`, and each base fact's terms (of `arities[i]` terms) are moved along into `terms`.
pub fn copy_words(
    words: &[Word],
    arities: impl Iterator<Item = usize>,
    from: &[Term],
    terms: &mut Vec<Term>,
    mut out: impl FnMut(Word),
) {
    for (w, arity) in words.iter().zip(arities) {
        match w.arena_offset() {
            Some(s) => match from.get(s..s + arity) {
                Some(t) => {
                    out(Word::arena(terms.len()));
                    terms.extend_from_slice(t);
                }
                None => out(Word::MISSING),
            },
            None => out(*w),
        }
    }
}

/// Where a derivation's premise words are.
#[derive(Clone, Copy, Debug)]
enum At {
    /// In its entry (unused ones [`Word::MISSING`]).
    Words([Word; 2]),
    /// From this position of the shared list.
    Start(usize),
}

/// Every derivation of one evaluation, packed: per derived tuple 12 bytes, its rule and,
/// for a rule of at most two positive literals, its premise words themselves (else where
/// its words start in a shared list, 4 bytes a premise). A premise's relation is the one
/// its rule's positive literal names, so only the tuple's id is kept; a base fact read
/// through the source (not held in memory) keeps its terms in an arena, and its premise
/// word holds the offset with the top bit set.
#[derive(Debug, Default)]
pub struct Witnesses {
    /// Per relation, per tuple id.
    derivs: Vec<Derivs>,
    /// Per rule, the relation of each positive body literal (its premises' relations).
    rules: Vec<Vec<u32>>,
    premises: Vec<Word>,
    base_terms: Vec<Term>,
}

/// The derivations of one relation's tuples, by id. When every rule deriving the relation
/// has at most two positive literals, an entry holds the rule and the premise words (12
/// bytes, one array); otherwise the rule and where its words start in the shared list
/// (8 bytes).
#[derive(Clone, Debug)]
enum Derivs {
    /// Entries with their words inline.
    Inline(Vec<Deriv>),
    /// `rule << 32 | start`, or [`NONE_BLOCK`].
    Block(Vec<u64>),
}

/// One tuple's derivation, inline.
#[derive(Clone, Copy, Debug)]
struct Deriv {
    /// The rule, with [`BLOCK`] set when the words are in the shared list; [`NONE`] when no
    /// derivation was recorded.
    rule: u32,
    /// The premise words (unused ones [`Word::MISSING`]), or with [`BLOCK`] the start of
    /// the words in the shared list (low half, high half).
    words: [Word; 2],
}

/// No derivation recorded (inline).
const NONE: u32 = u32::MAX;
/// No derivation recorded (by block).
const NONE_BLOCK: u64 = u64::MAX;
/// A derivation's flag: its premise words are in the shared list.
const BLOCK: u32 = 1 << 31;
/// A premise word's flag: the premise is a base fact whose terms are in the arena.
const ARENA: u32 = 1 << 31;

impl Derivs {
    /// Room for ids below `n`.
    fn grow(&mut self, n: usize) {
        match self {
            Derivs::Inline(d) if d.len() < n => {
                let none = Deriv {
                    rule: NONE,
                    words: [Word::MISSING; 2],
                };
                d.resize(n, none);
            }
            Derivs::Block(d) if d.len() < n => d.resize(n, NONE_BLOCK),
            _ => {}
        }
    }

    /// Records tuple `id`'s derivation by `rule`, its words `at`. A block relation holds
    /// only starts (its callers never hand it words).
    fn set(&mut self, id: u32, rule: u32, at: At) {
        let i = id as usize;
        self.grow(i + 1);
        match (self, at) {
            (Derivs::Inline(d), At::Words(words)) => d[i] = Deriv { rule, words },
            (Derivs::Inline(d), At::Start(start)) => {
                let words = [Word(start as u32), Word((start >> 32) as u32)];
                d[i] = Deriv {
                    rule: rule | BLOCK,
                    words,
                };
            }
            (Derivs::Block(d), At::Start(start)) => d[i] = u64::from(rule) << 32 | start as u64,
            (Derivs::Block(_), At::Words(_)) => {}
        }
    }

    /// Tuple `id`'s rule, and where its words are.
    fn get(&self, id: u32) -> Option<(u32, At)> {
        match self {
            Derivs::Inline(d) => {
                let e = d.get(id as usize)?;
                if e.rule == NONE {
                    return None;
                }
                if e.rule & BLOCK != 0 {
                    let start = e.words[0].0 as usize | (e.words[1].0 as usize) << 32;
                    return Some((e.rule & !BLOCK, At::Start(start)));
                }
                Some((e.rule, At::Words(e.words)))
            }
            Derivs::Block(d) => {
                let w = *d.get(id as usize)?;
                (w != NONE_BLOCK).then_some(((w >> 32) as u32, At::Start(w as u32 as usize)))
            }
        }
    }
}

impl Witnesses {
    /// Room for the relations and rules of `ir`.
    pub fn new(ir: &Ir) -> Witnesses {
        let mut widest = vec![0usize; ir.relations.len()];
        for r in &ir.rules {
            let n = r
                .body
                .iter()
                .filter(|l| matches!(l, crate::ir::Lit::Pos { .. }))
                .count();
            if let Some(w) = widest.get_mut(r.head) {
                *w = (*w).max(n);
            }
        }
        Witnesses {
            derivs: widest
                .into_iter()
                .map(|n| {
                    if n <= 2 {
                        Derivs::Inline(Vec::new())
                    } else {
                        Derivs::Block(Vec::new())
                    }
                })
                .collect(),
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
        let arities = self
            .rules
            .get(rule as usize)
            .into_iter()
            .flatten()
            .map(|&r| ir.relations[r as usize].arity);
        let Some(d) = self.derivs.get_mut(rel) else {
            return;
        };
        if words.len() <= 2 && matches!(d, Derivs::Inline(_)) {
            let mut inline = [Word::MISSING; 2];
            if base_terms.is_empty() {
                // No base fact's terms to copy: every word is a tuple id (or missing).
                inline[..words.len()].copy_from_slice(words);
            } else {
                let mut at = 0;
                copy_words(words, arities, base_terms, &mut self.base_terms, |w| {
                    inline[at] = w;
                    at += 1;
                });
            }
            d.set(id, rule, At::Words(inline));
            return;
        }
        let start = self.premises.len();
        let premises = &mut self.premises;
        copy_words(words, arities, base_terms, &mut self.base_terms, |w| {
            premises.push(w);
        });
        d.set(id, rule, At::Start(start));
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

    /// Makes room for the derivations of `rel`'s tuples up to id `ids` (excluded): a
    /// round's new tuples are then recorded without growing the list tuple by tuple.
    pub fn reserve(&mut self, rel: usize, ids: u32) {
        if let Some(d) = self.derivs.get_mut(rel) {
            d.grow(ids as usize);
        }
    }

    /// Records the derivation of tuple `id` of `rel` by `rule`, its premise words at
    /// `start` of a block added by [`Witnesses::adopt`].
    pub fn derived_at(&mut self, rel: usize, id: u32, rule: u32, start: usize) {
        if let Some(d) = self.derivs.get_mut(rel) {
            d.set(id, rule, At::Start(start));
        }
    }

    /// The derivation of tuple `id` of `rel`, if one was recorded: its rule, and its
    /// premises in the order of the rule's positive literals.
    pub fn derivation(&self, rel: usize, id: u32) -> Option<(u32, Vec<Premise>)> {
        let (rule, at) = self.derivs.get(rel)?.get(id)?;
        let rels = self.rules.get(rule as usize)?;
        let inline;
        let words = match at {
            At::Words(pair) => {
                inline = pair;
                inline.get(..rels.len())?
            }
            At::Start(start) => self.premises.get(start..start + rels.len())?,
        };
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
        self.derivs
            .iter()
            .map(|d| match d {
                Derivs::Inline(v) => v.len() * 12,
                Derivs::Block(v) => v.len() * 8,
            })
            .sum::<usize>()
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
