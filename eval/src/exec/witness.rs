//! Witnesses: for each derived tuple, the first derivation found (a rule and its premises),
//! recorded compactly during evaluation; trees are built only for the rows answered.
//!
//! A derivation records only the premises it cannot do without ([`recorded`]): a fact of a
//! base relation that the derived tuple and the other premises pin down whole is rebuilt
//! from them when a tree is built, so `tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z)` keeps one
//! word a tuple, not two.
//!
//! # The layout
//!
//! Per derived tuple, the derivation of its first occurrence in task order. A derivation
//! records a premise only for the positive literals it cannot do without (`witness::recorded`,
//! which is also a plan's `premises`): every literal of a derived relation, and a literal of a
//! base relation unless each of its arguments is a constant or a variable the head or a
//! recorded literal binds. Such a base fact is pinned down by the derived tuple and the
//! recorded premises, so it is rebuilt from them when a tree is built (`Premise::Implied`) and
//! nothing of it is kept: the closure's `tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z)` records `tc(?x,
//! ?y)` alone, same generation's three-literal rule its one `sg` premise, and `tc(?x, ?y) :-
//! e(?x, ?y)` nothing. Per relation, the layout fits the most premises any of its rules
//! records: one, 4 bytes a tuple (`Packed`: the rule's place among the relation's first three
//! rules plus one in the top 2 bits, 0 for no derivation; then the word's arena flag and a
//! 29-bit value, all ones for no premise), widened once to 8 bytes (the rule and the word) when
//! a derivation does not fit (a fourth rule, a value of 2^29 or more); two, 12 bytes; more, 8
//! bytes (rule, where its words start) and 4 bytes a premise in a shared list. A word is a
//! tuple id of the in-memory relation the rule's literal names (derived, or a base relation
//! read into memory), or with the top bit set the offset of a base fact's terms read through
//! the source, in an arena. A narrow candidate of a rule recording at most two premises carries
//! its premise words inline, in its 16-byte entry (key and words), so they are sorted, filtered
//! and merged with it and recorded in id order. Otherwise a task keeps the premises of the
//! candidates that survive its filter only, and the merge appends each task's block of premise
//! words whole (in order, no gather), each new tuple pointing into its origin's block; a key
//! two tasks of a round both kept leaves the later one's words unused. A round's inline
//! derivations of one relation are recorded in one pass (`Witnesses::record_words`): the layout
//! is matched once, not once a tuple. Trees are built only for the rows of the page answered.

use crate::data::value::Term;
use crate::exec::relation::Relation;
use crate::ir::{Arg, HeadArg, Ir, Lit, Rule, VarId};
use crate::plan::recorded;

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
    /// A base fact of `rel` not recorded but rebuilt (`recorded`), its terms at `start`
    /// of `Derivation::terms`.
    Implied {
        /// The relation.
        rel: u32,
        /// Where its terms start.
        start: u32,
    },
}

/// One tuple's derivation: its rule and a premise for each positive literal of the rule,
/// in the order written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derivation {
    /// The rule.
    pub rule: u32,
    /// The premises.
    pub premises: Vec<Premise>,
    /// The terms of the [`Premise::Implied`] premises.
    pub terms: Vec<Term>,
}

impl Derivation {
    /// The terms of an implied premise of a relation of `arity` columns.
    pub fn implied_terms(&self, start: u32, arity: usize) -> &[Term] {
        self.terms
            .get(start as usize..start as usize + arity)
            .unwrap_or(&[])
    }
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
            Premise::Implied { .. } | Premise::None => Word::MISSING,
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

/// Every derivation of one evaluation, packed: per derived tuple its rule and, when the
/// rules deriving its relation record at most two premises each, the premise words
/// themselves (4 bytes a tuple for one word, 12 for two); otherwise where its words start
/// in a shared list (8 bytes, and 4 a premise in the list). A premise's relation is the one
/// its rule's literal names, so only the tuple's id is kept; a base fact read through the
/// source (not held in memory) keeps its terms in an arena, and its premise word holds the
/// offset with the top bit set. Base facts the rest of a derivation pins down are not
/// recorded at all ([`recorded`]).
#[derive(Debug, Default)]
pub struct Witnesses {
    /// Per relation, per tuple id.
    derivs: Vec<Derivs>,
    /// Per rule, what its derivations record and how the rest is rebuilt.
    rules: Vec<Shape>,
    premises: Vec<Word>,
    base_terms: Vec<Term>,
}

/// What a derivation by one rule records, and how its unrecorded premises are rebuilt.
#[derive(Debug, Default)]
struct Shape {
    /// Each head argument's variable, if it is one.
    head: Vec<Option<VarId>>,
    /// The positive literals, in the order written.
    literals: Vec<Literal>,
    /// The rule's variable slots.
    vars: usize,
}

/// A positive literal of a rule, as [`Shape`] keeps it.
#[derive(Debug)]
struct Literal {
    rel: u32,
    arity: usize,
    args: Vec<Arg>,
    /// Whether its premise is recorded (else rebuilt from the others).
    recorded: bool,
}

impl Shape {
    fn of(ir: &Ir, rule: &Rule) -> Shape {
        let kept = recorded(ir, rule);
        let literals: Vec<Literal> = rule
            .body
            .iter()
            .enumerate()
            .filter_map(|(i, l)| match l {
                Lit::Pos { rel, args } => Some(Literal {
                    rel: *rel as u32,
                    arity: ir.relations.get(*rel).map_or(0, |r| r.arity),
                    args: args.clone(),
                    recorded: kept.contains(&i),
                }),
                _ => None,
            })
            .collect();
        Shape {
            head: rule
                .args
                .iter()
                .map(|a| match a {
                    HeadArg::Arg(Arg::Var(v)) => Some(*v),
                    _ => None,
                })
                .collect(),
            literals,
            vars: rule.vars,
        }
    }

    /// The recorded literals, in order: a derivation's premise words are theirs.
    fn recorded(&self) -> impl Iterator<Item = &Literal> {
        self.literals.iter().filter(|l| l.recorded)
    }
}

/// The derivations of one relation's tuples, by id, laid out for the most premises any of
/// its rules records: an entry holds the rule and one or two premise words, or (for wider
/// rules) the rule and where its words start in the shared list.
#[derive(Clone, Debug)]
enum Derivs {
    /// Entries of 4 bytes, for rules recording at most one premise: see [`Packed`]. A
    /// derivation that does not fit (a fourth rule, a premise past 2^29) turns the
    /// relation's entries into [`Derivs::One`] first.
    Packed(Packed),
    /// Entries with one word inline (8 bytes).
    One(Vec<Deriv<1>>),
    /// Entries with two words inline (12 bytes).
    Two(Vec<Deriv<2>>),
    /// `rule << 32 | start`, or [`NONE_BLOCK`].
    Block(Vec<u64>),
}

/// One tuple's derivation, inline.
#[derive(Clone, Copy, Debug)]
struct Deriv<const N: usize> {
    /// The rule, with [`BLOCK`] set when the words are in the shared list; [`NONE`] when no
    /// derivation was recorded.
    rule: u32,
    /// The premise words (unused ones [`Word::MISSING`]), or with [`BLOCK`] the start of
    /// the words in the shared list (low half, then high half when there is room).
    words: [Word; N],
}

/// No derivation recorded (inline).
const NONE: u32 = u32::MAX;
/// No derivation recorded (by block).
const NONE_BLOCK: u64 = u64::MAX;
/// A derivation's flag: its premise words are in the shared list.
const BLOCK: u32 = 1 << 31;
/// A premise word's flag: the premise is a base fact whose terms are in the arena.
const ARENA: u32 = 1 << 31;

impl<const N: usize> Deriv<N> {
    const EMPTY: Deriv<N> = Deriv {
        rule: NONE,
        words: [Word::MISSING; N],
    };

    /// The entry of a derivation by `rule`, its words `at`; `None` when the words do not
    /// fit (more than `N`, or a start past what `N` words hold).
    fn new(rule: u32, at: At) -> Option<Deriv<N>> {
        let mut words = [Word::MISSING; N];
        match at {
            At::Words(given) => {
                let (fits, rest) = given.split_at(N.min(2));
                if rest.iter().any(|&w| w != Word::MISSING) {
                    return None;
                }
                words[..fits.len()].copy_from_slice(fits);
                Some(Deriv { rule, words })
            }
            At::Start(start) => {
                let halves = [start as u32, (start >> 32) as u32];
                if N < 2 && halves[1] != 0 {
                    return None;
                }
                for (w, h) in words.iter_mut().zip(halves) {
                    *w = Word(h);
                }
                Some(Deriv {
                    rule: rule | BLOCK,
                    words,
                })
            }
        }
    }

    /// The rule and where the words are, unless none was recorded.
    fn get(&self) -> Option<(u32, At)> {
        if self.rule == NONE {
            return None;
        }
        let word = |i: usize| self.words.get(i).copied().unwrap_or(Word::MISSING);
        if self.rule & BLOCK != 0 {
            let high = self.words.get(1).map_or(0, |w| w.0 as usize);
            let start = word(0).0 as usize | high << 32;
            return Some((self.rule & !BLOCK, At::Start(start)));
        }
        Some((self.rule, At::Words([word(0), word(1)])))
    }
}

/// Bits of a packed entry that name its rule.
const PACKED_RULE_BITS: u32 = 2;
/// Where a packed entry's rule starts.
const PACKED_SHIFT: u32 = 32 - PACKED_RULE_BITS;
/// A packed entry's flag: its premise is a base fact whose terms are in the arena.
const PACKED_ARENA: u32 = 1 << (PACKED_SHIFT - 1);
/// A packed entry's premise value, all ones for a missing premise (so values stop below it).
const PACKED_VALUE: u32 = PACKED_ARENA - 1;

/// The derivations of a relation whose rules record at most one premise each, 4 bytes a
/// tuple: the rule's place among `rules` plus one in the top [`PACKED_RULE_BITS`] bits (0
/// when none was recorded), then the premise word's arena flag and its value (a tuple id
/// or an arena offset, below 2^29), or [`PACKED_VALUE`] for no premise. The closure's,
/// same generation's, the chain's and points-to's derived relations have two or three
/// rules each.
#[derive(Clone, Debug, Default)]
struct Packed {
    /// The rules recorded so far, in the order first seen (at most three).
    rules: Vec<u32>,
    /// Per tuple id.
    entries: Vec<u32>,
}

impl Packed {
    /// The entry of a derivation by `rule`, its words `at`; `None` when it does not fit.
    fn pack(&mut self, rule: u32, at: At) -> Option<u32> {
        let At::Words([word, rest]) = at else {
            return None;
        };
        if rest != Word::MISSING {
            return None;
        }
        let low = if word == Word::MISSING {
            PACKED_VALUE
        } else {
            let value = word.0 & !ARENA;
            if value >= PACKED_VALUE {
                return None;
            }
            value | if word.0 & ARENA != 0 { PACKED_ARENA } else { 0 }
        };
        let place = match self.rules.iter().position(|&r| r == rule) {
            Some(place) => place,
            None if self.rules.len() + 1 < 1 << PACKED_RULE_BITS => {
                self.rules.push(rule);
                self.rules.len() - 1
            }
            None => return None,
        };
        Some((place as u32 + 1) << PACKED_SHIFT | low)
    }

    /// The rule and words of `entry`, unless none was recorded.
    fn unpack(&self, entry: u32) -> Option<(u32, At)> {
        let place = (entry >> PACKED_SHIFT) as usize;
        let rule = *self.rules.get(place.checked_sub(1)?)?;
        let low = entry & ((1 << PACKED_SHIFT) - 1);
        let word = if low & PACKED_VALUE == PACKED_VALUE {
            Word::MISSING
        } else {
            Word(low & PACKED_VALUE | if low & PACKED_ARENA != 0 { ARENA } else { 0 })
        };
        Some((rule, At::Words([word, Word::MISSING])))
    }

    /// The same derivations, 8 bytes each.
    fn widen(&self) -> Vec<Deriv<1>> {
        self.entries
            .iter()
            .map(|&e| {
                self.unpack(e)
                    .and_then(|(rule, at)| Deriv::new(rule, at))
                    .unwrap_or(Deriv::EMPTY)
            })
            .collect()
    }
}

impl Derivs {
    /// The layout for rules recording at most `widest` premises.
    fn for_width(widest: usize) -> Derivs {
        match widest {
            0 | 1 => Derivs::Packed(Packed::default()),
            2 => Derivs::Two(Vec::new()),
            _ => Derivs::Block(Vec::new()),
        }
    }

    /// Whether an entry holds `n` premise words inline.
    fn holds_inline(&self, n: usize) -> bool {
        match self {
            Derivs::Packed(_) | Derivs::One(_) => n <= 1,
            Derivs::Two(_) => n <= 2,
            Derivs::Block(_) => false,
        }
    }

    /// Room for ids below `n` (grown as [`crate::exec::buffer::make_room`] grows a buffer).
    fn grow(&mut self, n: usize) {
        fn fill<T: Clone>(d: &mut Vec<T>, n: usize, empty: T) {
            if d.len() < n {
                crate::exec::buffer::make_room(d, n - d.len());
                d.resize(n, empty);
            }
        }
        match self {
            Derivs::Packed(p) => fill(&mut p.entries, n, 0),
            Derivs::One(d) => fill(d, n, Deriv::EMPTY),
            Derivs::Two(d) => fill(d, n, Deriv::EMPTY),
            Derivs::Block(d) => fill(d, n, NONE_BLOCK),
        }
    }

    /// Records tuple `id`'s derivation by `rule`, its words `at`. Words that do not fit
    /// the layout are never handed to it (its callers keep them in the shared list).
    fn set(&mut self, id: u32, rule: u32, at: At) {
        let i = id as usize;
        self.grow(i + 1);
        match self {
            Derivs::Packed(p) => match p.pack(rule, at) {
                Some(entry) => p.entries[i] = entry,
                None => {
                    *self = Derivs::One(p.widen());
                    self.set(id, rule, at);
                }
            },
            Derivs::One(d) => d[i] = Deriv::new(rule, at).unwrap_or(Deriv::EMPTY),
            Derivs::Two(d) => d[i] = Deriv::new(rule, at).unwrap_or(Deriv::EMPTY),
            Derivs::Block(d) => {
                if let At::Start(start) = at {
                    d[i] = u64::from(rule) << 32 | start as u64;
                }
            }
        }
    }

    /// Tuple `id`'s rule, and where its words are.
    fn get(&self, id: u32) -> Option<(u32, At)> {
        match self {
            Derivs::Packed(p) => p.unpack(*p.entries.get(id as usize)?),
            Derivs::One(d) => d.get(id as usize)?.get(),
            Derivs::Two(d) => d.get(id as usize)?.get(),
            Derivs::Block(d) => {
                let w = *d.get(id as usize)?;
                (w != NONE_BLOCK).then_some(((w >> 32) as u32, At::Start(w as u32 as usize)))
            }
        }
    }

    /// Bytes held.
    fn bytes(&self) -> usize {
        match self {
            Derivs::Packed(p) => p.entries.len() * 4,
            Derivs::One(v) => v.len() * size_of::<Deriv<1>>(),
            Derivs::Two(v) => v.len() * size_of::<Deriv<2>>(),
            Derivs::Block(v) => v.len() * 8,
        }
    }
}

impl Witnesses {
    /// Room for the relations and rules of `ir`.
    pub fn new(ir: &Ir) -> Witnesses {
        let rules: Vec<Shape> = ir.rules.iter().map(|r| Shape::of(ir, r)).collect();
        let mut widest = vec![0usize; ir.relations.len()];
        for (r, shape) in ir.rules.iter().zip(&rules) {
            if let Some(w) = widest.get_mut(r.head) {
                *w = (*w).max(shape.recorded().count());
            }
        }
        Witnesses {
            derivs: widest.into_iter().map(Derivs::for_width).collect(),
            rules,
            ..Witnesses::default()
        }
    }

    /// Records the derivation of tuple `id` of `rel` by `rule`: its premise words in the
    /// order of the rule's recorded literals ([`recorded`]), base facts' terms read from
    /// `base_terms` (the deriving task's arena).
    pub fn record(&mut self, rel: usize, id: u32, rule: u32, words: &[Word], base_terms: &[Term]) {
        let Some(shape) = self.rules.get(rule as usize) else {
            return;
        };
        let arities = shape.recorded().map(|l| l.arity);
        let Some(d) = self.derivs.get_mut(rel) else {
            return;
        };
        if d.holds_inline(words.len()) {
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

    /// Records the derivations of tuples `first`, `first + 1`, ... of `rel` (`count` of
    /// them), one an item in id order: its rule and its premise words, at most `width`
    /// (the unused ones [`Word::MISSING`]), each a tuple id or missing: no base fact's terms
    /// to copy. What [`Witnesses::record`] does for each, with the layout matched once for
    /// them all; a packed relation packs them in a loop (the closure's 4.9M derivations
    /// took 70 ms one by one, a `memcpy` call and a check of the layout each). Returns
    /// false, recording nothing, when the relation's entries do not hold `width` words:
    /// then [`Witnesses::record`] each.
    pub fn record_words(
        &mut self,
        rel: usize,
        first: u32,
        count: usize,
        width: usize,
        items: impl Iterator<Item = (u32, [Word; 2])>,
    ) -> bool {
        let Some(d) = self.derivs.get_mut(rel) else {
            return true;
        };
        if !d.holds_inline(width) {
            return false;
        }
        d.grow(first as usize + count);
        let known = self.rules.len();
        let mut items = items.enumerate();
        if let Derivs::Packed(p) = d {
            let mut widened = None;
            for (i, (rule, words)) in items.by_ref() {
                if rule as usize >= known {
                    continue;
                }
                let id = first as usize + i;
                match p.pack(rule, At::Words(words)) {
                    Some(entry) => p.entries[id] = entry,
                    None => {
                        // Past what 4 bytes hold: 8 bytes a tuple from here on.
                        widened = Some((id as u32, rule, words));
                        break;
                    }
                }
            }
            let Some((id, rule, words)) = widened else {
                return true;
            };
            *d = Derivs::One(p.widen());
            d.set(id, rule, At::Words(words));
        }
        for (i, (rule, words)) in items {
            if (rule as usize) < known {
                d.set(first + i as u32, rule, At::Words(words));
            }
        }
        true
    }

    /// Appends a block of premise words as a task left them (a derivation's words in a
    /// row, base facts' terms in `base_terms`), for derivations recorded with
    /// [`Witnesses::derived_at`]; returns where the block starts. Copying a task's block
    /// whole reads and writes memory in order, where recording each derivation in the
    /// order of its tuple's id would gather its words from the tasks at random.
    pub fn adopt(&mut self, words: &[Word], base_terms: &[Term]) -> usize {
        let start = self.premises.len();
        let shift = self.base_terms.len();
        crate::exec::buffer::make_room(&mut self.premises, words.len());
        crate::exec::buffer::make_room(&mut self.base_terms, base_terms.len());
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

    /// The derivation of tuple `id` of `rel`, if one was recorded: its rule, and a premise
    /// for each of the rule's positive literals, in the order written. `relations` are the
    /// evaluation's (the tuple and its recorded premises are read there), `constants` its
    /// constants' terms; the premises not recorded are rebuilt from them
    /// ([`Premise::Implied`]).
    pub fn derivation(
        &self,
        rel: usize,
        id: u32,
        relations: &[Relation],
        constants: &[Term],
    ) -> Option<Derivation> {
        let (rule, at) = self.derivs.get(rel)?.get(id)?;
        let shape = self.rules.get(rule as usize)?;
        let n = shape.recorded().count();
        let inline;
        let words = match at {
            At::Words(pair) => {
                inline = pair;
                inline.get(..n)?
            }
            At::Start(start) => self.premises.get(start..start + n)?,
        };
        let mut recorded = shape.recorded().zip(words).map(|(l, w)| w.decode(l.rel));
        if shape.literals.iter().all(|l| l.recorded) {
            return Some(Derivation {
                rule,
                premises: recorded.collect(),
                terms: Vec::new(),
            });
        }
        // Bind the rule's variables from the tuple and the recorded premises, then read
        // the other premises' terms off their arguments.
        let mut env: Vec<Option<Term>> = vec![None; shape.vars];
        let mut bind = |v: VarId, t: Term| {
            if let Some(slot) = env.get_mut(v) {
                *slot = Some(t);
            }
        };
        let tuple = |rel: usize, id: u32| {
            let r = relations.get(rel).filter(|r| id < r.len());
            r.map_or(&[][..], |r| r.tuple(id))
        };
        for (v, &t) in shape.head.iter().zip(tuple(rel, id)) {
            if let Some(v) = v {
                bind(*v, t);
            }
        }
        let mut premises = Vec::with_capacity(shape.literals.len());
        for l in &shape.literals {
            if !l.recorded {
                premises.push(Premise::None);
                continue;
            }
            let p = recorded.next().unwrap_or(Premise::None);
            let terms = match p {
                Premise::Tuple { rel, id } => tuple(rel as usize, id),
                Premise::Base { start, .. } => self.base_terms(start, l.arity),
                Premise::Implied { .. } | Premise::None => &[],
            };
            for (a, &t) in l.args.iter().zip(terms) {
                if let Arg::Var(v) = a {
                    bind(*v, t);
                }
            }
            premises.push(p);
        }
        let mut terms = Vec::new();
        for (l, p) in shape.literals.iter().zip(premises.iter_mut()) {
            if l.recorded {
                continue;
            }
            let start = terms.len();
            let implied = l.args.iter().map(|a| match *a {
                Arg::Var(v) => env.get(v).copied().flatten(),
                Arg::Const(c) => constants.get(c).copied(),
                Arg::Wild => None,
            });
            let Some(fact) = implied.collect::<Option<Vec<Term>>>() else {
                continue;
            };
            terms.extend(fact);
            *p = Premise::Implied {
                rel: l.rel,
                start: start as u32,
            };
        }
        Some(Derivation {
            rule,
            premises,
            terms,
        })
    }

    /// The terms of a base premise.
    pub fn base_terms(&self, start: u32, arity: usize) -> &[Term] {
        self.base_terms
            .get(start as usize..start as usize + arity)
            .unwrap_or(&[])
    }

    /// Bytes held, roughly.
    pub fn bytes(&self) -> usize {
        self.derivs.iter().map(Derivs::bytes).sum::<usize>()
            + self.premises.len() * 4
            + self.base_terms.len() * 4
    }
}

#[cfg(test)]
mod tests;
