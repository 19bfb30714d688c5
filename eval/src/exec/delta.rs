//! A task's output: the tuples one plan derived over one slice of its first step, with
//! their derivations, as the round's merge reads them.

use crate::data::value::Term;
use crate::exec::witness::{Word, copy_words};
use crate::ir::RelId;

/// Premise words a narrow candidate carries inline (two: a 16-byte entry, as a key and an
/// index take with alignment).
pub(crate) const INLINE: usize = 2;

/// A narrow candidate with witnesses: its packed key, and its premise words (or its index
/// among the task's derivations, see [`Output::sorted`]).
pub(crate) type Candidate = (u64, [u32; INLINE]);

/// The capacities [`Output::room_ahead`] plans for the vectors of emitted tuples.
pub(crate) struct Room {
    terms: usize,
    keys: usize,
    sorted: usize,
    premises: usize,
}

/// A task's output: derived tuples in order, with their derivations.
#[derive(Default)]
pub(crate) struct Output {
    /// The relation the task's rule derives (a task runs one rule).
    pub(crate) head: RelId,
    /// How many tuples it emitted (with duplicates).
    pub(crate) count: usize,
    /// The emitted tuples, for a head wider than two columns.
    pub(crate) terms: Vec<Term>,
    /// With witnesses, for a head of arity 2 or less: each emitted tuple packed in a u64,
    /// sorted (so the merge of a round is a merge of sorted runs, and the sorting happens on
    /// the worker threads), with its derivation: when the rule has at most [`INLINE`]
    /// positive literals, the premise words themselves (no separate list to keep in step,
    /// and the merge reads them in order), else its index among the task's derivations.
    pub(crate) sorted: Vec<Candidate>,
    /// Without witnesses, the emitted tuples of a head of arity 2 or less as keys alone
    /// (then sorted, distinct and new, as `sorted` is): no index to carry, so half the
    /// bytes to sort, filter and merge.
    pub(crate) keys: Vec<u64>,
    /// With witnesses: the premises of each emitted tuple, `stride` (the rule's positive
    /// literals) a tuple, in emission order.
    pub(crate) premises: Vec<Word>,
    /// The arity of each premise's relation.
    pub(crate) arities: Vec<usize>,
    /// The rule the task ran.
    pub(crate) rule: u32,
    /// Premises per emitted tuple.
    pub(crate) stride: usize,
    /// The terms of the premises that are base facts read through the source.
    pub(crate) base_terms: Vec<Term>,
    /// The plan run, and its steps' counts (when profiling).
    pub(crate) plan: usize,
    pub(crate) stats: Vec<[u64; 2]>,
}

impl Output {
    /// The room the vectors of emitted tuples would have once ready for `n` more tuples of
    /// `arity` terms: a vector in use (not empty) short of that room doubles (or grows by
    /// as much, if more), as it would on its own while they are emitted; and the bytes
    /// they would reserve then. The memory budget charges those bytes before the vectors
    /// grow ([`Output::take_room`]), so a task never asks the allocator for a doubling past
    /// the cap (where an address-space limit would refuse it and abort the process).
    pub(crate) fn room_ahead(&self, n: usize, arity: usize) -> (Room, u64) {
        fn ahead<T>(v: &Vec<T>, need: usize) -> usize {
            if v.is_empty() || v.capacity() - v.len() >= need {
                v.capacity()
            } else {
                (v.capacity() * 2).max(v.len() + need)
            }
        }
        let room = Room {
            terms: ahead(&self.terms, n * arity),
            keys: ahead(&self.keys, n),
            sorted: ahead(&self.sorted, n),
            premises: ahead(&self.premises, n * self.stride),
        };
        let bytes = (room.terms + room.premises + self.base_terms.capacity()) * size_of::<Term>()
            + room.keys * size_of::<u64>()
            + room.sorted * size_of::<Candidate>();
        (room, bytes as u64)
    }

    /// Grows the vectors to `room` ([`Output::room_ahead`]).
    pub(crate) fn take_room(&mut self, room: &Room) {
        fn grow<T>(v: &mut Vec<T>, capacity: usize) {
            if capacity > v.capacity() {
                v.reserve_exact(capacity - v.len());
            }
        }
        grow(&mut self.terms, room.terms);
        grow(&mut self.keys, room.keys);
        grow(&mut self.sorted, room.sorted);
        grow(&mut self.premises, room.premises);
    }

    /// Whether the candidates carry their premise words inline.
    pub(crate) fn inline(&self) -> bool {
        self.stride <= INLINE
    }

    /// Keeps only the derivations of the candidates left in `sorted` (the rest were
    /// duplicates or already held), renumbering them: a task holds on to the derivations
    /// the merge can use, not one per candidate. Inline words stay where they are; only
    /// the base facts' terms they point to are kept, renumbered.
    pub(crate) fn compact(&mut self) {
        let stride = self.stride;
        if self.inline() {
            if self.base_terms.is_empty() {
                return;
            }
            let mut base_terms = Vec::new();
            for e in &mut self.sorted {
                for (slot, &arity) in e.1[..stride].iter_mut().zip(&self.arities) {
                    let Some(s) = Word::from_raw(*slot).arena_offset() else {
                        continue;
                    };
                    *slot = match self.base_terms.get(s..s + arity) {
                        Some(t) => {
                            let at = base_terms.len();
                            base_terms.extend_from_slice(t);
                            Word::arena(at).raw()
                        }
                        None => Word::MISSING.raw(),
                    };
                }
            }
            self.base_terms = base_terms;
            return;
        }
        let mut keep = vec![u32::MAX; self.count];
        for e in &self.sorted {
            keep[e.1[0] as usize] = 0;
        }
        let mut premises = Vec::with_capacity(self.sorted.len() * stride);
        let mut base_terms = Vec::new();
        let mut n = 0;
        for (k, slot) in keep.iter_mut().enumerate() {
            if *slot == u32::MAX {
                continue;
            }
            *slot = n;
            n += 1;
            copy_words(
                &self.premises[k * stride..(k + 1) * stride],
                self.arities.iter().copied(),
                &self.base_terms,
                &mut base_terms,
                |w| premises.push(w),
            );
        }
        for e in &mut self.sorted {
            e.1[0] = keep[e.1[0] as usize];
        }
        self.premises = premises;
        self.base_terms = base_terms;
    }

    /// The premises of emitted tuple `k`.
    pub(crate) fn premises_of(&self, k: usize) -> &[Word] {
        &self.premises[k * self.stride..(k + 1) * self.stride]
    }
}
