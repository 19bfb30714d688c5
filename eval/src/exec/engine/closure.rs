//! Closures by search: a stratum that only closes one binary relation under edge relations,
//!
//! ```text
//! r(?x, ?y) :- a(?x, ?y);
//! r(?x, ?z) :- r(?x, ?y), e(?y, ?z);      (or, right-linear: r(?x, ?z) :- e(?x, ?y), r(?y, ?z);)
//! ```
//!
//! evaluated without witnesses as a search from each source instead of rounds of joins. The
//! pairs a round of semi-naive evaluation derives are those one step further from each
//! source; a search from one source reaches the same nodes with no join, no sort of
//! candidates and no set to merge them into: each node is marked once per source, and a
//! source's pairs come out in order. A 4,000-node chain, 4,000 rounds of evaluation, is 4,000
//! searches; the closure of a random graph of 5,000 nodes, 16M pairs, costs a walk over the
//! edges per source.
//!
//! The relation's pairs are `a`'s pairs closed under the edges: from each source `x` of `a`,
//! every node its `a` pairs reach and every node the edges reach from those. A right-linear
//! closure is the same read backwards: from each target `z` of `a`, the nodes with an `a` pair
//! to it and every node with an edge path to those. The nodes get dense numbers in the order
//! of their terms, so a source's pairs are sorted by marking them and reading them out in
//! number order, and the relation takes them sorted, as a store's scan is.
//!
//! Profiled (for `explain`), the first exit rule shows one run over the pairs started from,
//! the first recursive rule a run per source, the edges followed and the pairs found.
//!
//! Work: a unit per pair a source starts from and per edge followed, as a join would examine
//! them; the budget, deadline and cancellation are checked every [`CHECK_EVERY`] units, and
//! the memory cap as the pairs grow. Sources are searched on the evaluation's threads, in
//! chunks whose pairs are joined in source order: the result is the same at any thread count.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::{FxHashMap, FxHashSet};

use super::{EvalError, Evaluator, LiteralProfile};
use crate::data::value::Term;
use crate::ir::{Arg, HeadArg, Ir, Lit, RelId, RelKind, Rule};
use crate::link::strata::Stratum;

/// Work units a search spends between checks of the budget and the deadline.
const CHECK_EVERY: u64 = 1 << 16;

/// Sources a chunk of the search holds at most (per thread, several chunks each).
const CHUNK_SOURCES: usize = 1 << 12;

/// A guarded closure is finished by a search once it holds this fraction of the pairs its
/// edges and exits hold: rounds of joins cost some 100 to 200 ns a pair derived, the
/// search's numbering and adjacency some 5 to 10 ns a pair read.
const SEARCH_SHARE: u64 = 32;

/// A search over this many nodes or more takes each level's nodes in number order.
const SORTED_LEVELS: usize = 1 << 16;

/// A stratum recognized as a closure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Closure {
    /// The relation closed.
    rel: RelId,
    /// The exit rules: each relation whose pairs the closure starts from, with the unary
    /// relations (guards) a pair's source must be in to start from it.
    starts: Vec<(RelId, Vec<RelId>)>,
    /// Whether some exit rule is not such a copy (a join, a constant, a test of the
    /// target): the rounds compute it, and the search starts from what they derived too.
    exits_run: bool,
    /// The recursive rules' edge relations.
    edges: Vec<RelId>,
    /// The unary relations a source must be in for the edges to be followed from it: the
    /// demand's magic relation, when the closure is asked for by demand; none for a whole
    /// closure.
    guards: Vec<RelId>,
    /// Left-linear (`r(?x, ?y), e(?y, ?z)`): searched forward from each source. Otherwise
    /// right-linear, searched backward from each target.
    left: bool,
    /// The first exit rule and the first recursive rule, which a budget error names: the
    /// pairs the search starts from are the first's work, the edges it follows the second's.
    rules: [usize; 2],
}

impl Closure {
    /// Whether the rounds start it: a guard restricts its sources (a closure asked for by
    /// demand, from the sources the demand names, and not over every pair of its exit
    /// relations), or an exit rule is computed by the rounds.
    pub(crate) fn guarded(&self) -> bool {
        self.exits_run || !self.guards.is_empty() || self.starts.iter().any(|(_, g)| !g.is_empty())
    }

    /// The relations whose pairs it starts from and follows.
    pub(crate) fn pairs(&self) -> impl Iterator<Item = RelId> + '_ {
        self.starts
            .iter()
            .map(|(r, _)| *r)
            .chain(self.edges.iter().copied())
    }

    /// Every relation it reads: pairs and guards.
    fn reads(&self) -> impl Iterator<Item = RelId> + '_ {
        let guards = self.starts.iter().flat_map(|(_, g)| g.iter().copied());
        self.pairs()
            .chain(guards)
            .chain(self.guards.iter().copied())
    }
}

/// The closure `stratum` computes, when it computes nothing else: one derived binary
/// relation whose rules are copies of other binary relations (`r(?x, ?y) :- a(?x, ?y)`) and
/// linear steps over other binary relations, all the same way round, with distinct
/// variables. Besides those, a rule may test its source (`?x` of a left-linear closure,
/// `?y` of a right-linear one) against unary relations, as the rules demand rewrites to
/// are (`r(?x, ?z) :- @magic.r.bf(?x), r(?x, ?y), e(?y, ?z)`), provided every recursive
/// rule tests the same ones.
pub(crate) fn recognize(ir: &Ir, stratum: &Stratum) -> Option<Closure> {
    let [rel] = stratum.relations[..] else {
        return None;
    };
    if !stratum.recursive || ir.relations[rel].arity != 2 {
        return None;
    }
    let binary = |r: RelId| r != rel && ir.relations[r].arity == 2;
    // A rule's tests of its head's variables, as (relation, which head argument).
    let tested = |tests: &[(RelId, usize)], x: usize, z: usize| {
        let mut guards = tests
            .iter()
            .map(|&(g, v)| match v {
                v if v == x => Some((g, 0)),
                v if v == z => Some((g, 1)),
                _ => None,
            })
            .collect::<Option<Vec<(RelId, usize)>>>()?;
        guards.sort_unstable();
        guards.dedup();
        Some(guards)
    };
    // Exit rules and steps, each with its guards.
    let (mut starts, mut edges, mut sides) = (Vec::new(), Vec::new(), Vec::new());
    let mut step_guards: Vec<Vec<(RelId, usize)>> = Vec::new();
    let (mut exit_rule, mut step_rule, mut exits_run) = (None, None, false);
    for (ri, rule) in ir.rules_of(rel) {
        if rule.aggregates() {
            return None;
        }
        let vars = match rule.args[..] {
            [HeadArg::Arg(Arg::Var(x)), HeadArg::Arg(Arg::Var(z))] if x != z => Some((x, z)),
            _ => None,
        };
        let reads_itself = rule.body.iter().any(|l| match l {
            Lit::Pos { rel: r, .. } | Lit::Neg { rel: r, .. } => *r == rel,
            _ => false,
        });
        if !reads_itself {
            // An exit rule: a copy of a binary relation, or anything else, which the rounds
            // compute before the search starts from what they derived.
            let copy = vars.and_then(|(x, z)| {
                let (pairs, tests) = atoms(ir, rule)?;
                match pairs[..] {
                    [(a, [p, q])] if binary(a) && (p, q) == (x, z) => {
                        Some((a, tested(&tests, x, z)?))
                    }
                    _ => None,
                }
            });
            match copy {
                Some(start) => starts.push(start),
                None => exits_run = true,
            }
            exit_rule.get_or_insert(ri);
            continue;
        }
        let (x, z) = vars?;
        let (pairs, tests) = atoms(ir, rule)?;
        let guards = tested(&tests, x, z)?;
        // The recursive atom and the edge, in whichever order the body has them.
        let ([rp, rq], (e, [ep, eq])) = match pairs[..] {
            [(ra, a), (rb, b)] if ra == rel && binary(rb) => (a, (rb, b)),
            [(ra, a), (rb, b)] if rb == rel && binary(ra) => (b, (ra, a)),
            _ => return None,
        };
        if (rp, rq, ep, eq) == (x, ep, rq, z) && rq != x && rq != z {
            // Left-linear: r(?x, ?y), e(?y, ?z).
            sides.push(true);
        } else if (ep, eq, rp, rq) == (x, rp, eq, z) && eq != x && eq != z {
            // Right-linear: e(?x, ?y), r(?y, ?z).
            sides.push(false);
        } else {
            return None;
        }
        edges.push(e);
        step_guards.push(guards);
        step_rule.get_or_insert(ri);
    }
    let left = *sides.first()?;
    if (starts.is_empty() && !exits_run) || sides.iter().any(|&s| s != left) {
        return None;
    }
    // Guards test the source: the head's first argument searching forward, else its second.
    let source = usize::from(!left);
    let on_source = |gs: Vec<(RelId, usize)>| -> Option<Vec<RelId>> {
        gs.into_iter()
            .map(|(g, side)| (side == source).then_some(g))
            .collect()
    };
    let guards = on_source(step_guards.first().cloned().unwrap_or_default())?;
    if step_guards
        .iter()
        .any(|g| on_source(g.clone()).as_ref() != Some(&guards))
    {
        return None;
    }
    // A copy tested on its target is an exit like any other, run in rounds.
    let mut starts: Vec<(RelId, Vec<RelId>)> = starts
        .into_iter()
        .filter_map(|(a, gs)| {
            let guards = on_source(gs);
            exits_run |= guards.is_none();
            Some((a, guards?))
        })
        .collect();
    starts.sort_unstable();
    starts.dedup();
    edges.sort_unstable();
    edges.dedup();
    Some(Closure {
        rel,
        starts,
        exits_run,
        edges,
        guards,
        left,
        rules: [exit_rule?, step_rule?],
    })
}

/// A rule body's atoms of two distinct plain variables, as (relation, the variables), and
/// of one, as (relation, the variable), when it holds nothing else.
#[allow(clippy::type_complexity)]
fn atoms(ir: &Ir, rule: &Rule) -> Option<(Vec<(RelId, [usize; 2])>, Vec<(RelId, usize)>)> {
    let (mut pairs, mut tests) = (Vec::new(), Vec::new());
    for l in &rule.body {
        let Lit::Pos { rel, args } = l else {
            return None;
        };
        match args[..] {
            [Arg::Var(a), Arg::Var(b)] if a != b => pairs.push((*rel, [a, b])),
            [Arg::Var(a)] if ir.relations[*rel].arity == 1 => tests.push((*rel, a)),
            _ => return None,
        }
    }
    Some((pairs, tests))
}

/// Pairs as adjacency arrays over dense node numbers: the targets of node `i` are
/// `targets[offsets[i]..offsets[i + 1]]`.
struct Adjacency {
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl Adjacency {
    /// The adjacency of the pairs `pairs()` yields (node numbers, each below `nodes`); it is
    /// called twice, to count and to place.
    fn new<I: Iterator<Item = (u32, u32)>>(nodes: usize, pairs: impl Fn() -> I) -> Adjacency {
        // Counted into `offsets[a + 1]`, summed so that `offsets[a]` is where `a`'s targets
        // begin, which placing moves on to where they end: then shifted back by one.
        let mut offsets = vec![0u32; nodes + 1];
        pairs().for_each(|(a, _)| offsets[a as usize + 1] += 1);
        for i in 0..nodes {
            offsets[i + 1] += offsets[i];
        }
        let mut targets = vec![0u32; offsets[nodes] as usize];
        pairs().for_each(|(a, b)| {
            let at = &mut offsets[a as usize];
            targets[*at as usize] = b;
            *at += 1;
        });
        offsets.copy_within(0..nodes, 1);
        offsets[0] = 0;
        Adjacency { offsets, targets }
    }

    fn of(&self, node: u32) -> &[u32] {
        let i = node as usize;
        &self.targets[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    fn bytes(&self) -> u64 {
        ((self.offsets.len() + self.targets.len()) * 4) as u64
    }
}

/// Where the searches start: the sources in number order, and the nodes each starts from.
enum Starts {
    /// A source's edges (a whole closure of its edge relations' pairs): the sources are the
    /// nodes with an edge.
    Edges(Vec<u32>),
    /// Adjacency arrays over every node, and the nodes with a pair.
    Dense(Adjacency, Vec<u32>),
    /// Few pairs (a closure asked for by demand): source `k` starts from
    /// `targets[ends[k - 1]..ends[k]]`.
    Few {
        sources: Vec<u32>,
        ends: Vec<u32>,
        targets: Vec<u32>,
    },
}

impl Starts {
    /// Starts of `pairs` (node numbers).
    fn few(mut pairs: Vec<(u32, u32)>) -> Starts {
        pairs.sort_unstable();
        let (mut sources, mut ends, mut targets) = (Vec::new(), Vec::new(), Vec::new());
        for (a, b) in pairs {
            if sources.last() != Some(&a) {
                sources.push(a);
                ends.push(targets.len() as u32);
            }
            targets.push(b);
        }
        ends.push(targets.len() as u32);
        ends.remove(0);
        Starts::Few {
            sources,
            ends,
            targets,
        }
    }

    fn sources(&self) -> &[u32] {
        match self {
            Starts::Edges(sources) | Starts::Dense(_, sources) | Starts::Few { sources, .. } => {
                sources
            }
        }
    }

    /// The nodes the `k`th source starts from.
    fn of<'a>(&'a self, k: usize, edges: &'a Adjacency) -> &'a [u32] {
        match self {
            Starts::Edges(sources) => edges.of(sources[k]),
            Starts::Dense(adjacency, sources) => adjacency.of(sources[k]),
            Starts::Few { ends, targets, .. } => {
                let from = if k == 0 { 0 } else { ends[k - 1] as usize };
                &targets[from..ends[k] as usize]
            }
        }
    }

    fn bytes(&self) -> u64 {
        let words = match self {
            Starts::Edges(sources) => sources.len(),
            Starts::Dense(adjacency, sources) => {
                adjacency.offsets.len() + adjacency.targets.len() + sources.len()
            }
            Starts::Few {
                sources,
                ends,
                targets,
            } => sources.len() + ends.len() + targets.len(),
        };
        words as u64 * 4
    }
}

/// Node numbers, dense and in the order of the nodes' terms, so that numbers sort as terms
/// do: a term less the least when the terms span few more values than there are pairs
/// (integers, or texts interned together), else a term's rank among the nodes.
enum Numbering {
    /// Node `v` is the term `least + v`.
    Span { least: u32, nodes: usize },
    /// Node `v` is `nodes[v]`.
    Ranks {
        nodes: Vec<Term>,
        number: FxHashMap<Term, u32>,
    },
}

impl Numbering {
    /// The numbering of the terms `terms()` yields (called once or twice), `pairs` pairs'.
    fn new<I: Iterator<Item = Term>>(pairs: usize, terms: impl Fn() -> I) -> Numbering {
        let (least, most) = terms().fold((u32::MAX, 0), |(l, m), t| (l.min(t.0), m.max(t.0)));
        if least > most {
            return Numbering::Span { least: 0, nodes: 0 };
        }
        let span = u64::from(most - least) + 1;
        if span <= 2 * pairs as u64 + (1 << 16) {
            return Numbering::Span {
                least,
                nodes: span as usize,
            };
        }
        let mut nodes: Vec<Term> = terms().collect();
        nodes.sort_unstable();
        nodes.dedup();
        let number = (0u32..)
            .zip(nodes.iter().copied())
            .map(|(i, t)| (t, i))
            .collect();
        Numbering::Ranks { nodes, number }
    }

    fn len(&self) -> usize {
        match self {
            Numbering::Span { nodes, .. } => *nodes,
            Numbering::Ranks { nodes, .. } => nodes.len(),
        }
    }

    /// The number of a node's term (a term of the pairs numbered).
    fn number(&self, t: Term) -> u32 {
        match self {
            Numbering::Span { least, .. } => t.0 - least,
            Numbering::Ranks { number, .. } => number[&t],
        }
    }

    /// The term of node `v`.
    fn term(&self, v: u32) -> Term {
        match self {
            Numbering::Span { least, .. } => Term(least + v),
            Numbering::Ranks { nodes, .. } => nodes[v as usize],
        }
    }

    fn bytes(&self) -> u64 {
        match self {
            Numbering::Span { .. } => 0,
            Numbering::Ranks { nodes, .. } => nodes.len() as u64 * 24,
        }
    }
}

/// Marks node `v` in `seen`; whether it was unmarked.
fn mark(seen: &mut [u64], v: u32) -> bool {
    let (w, bit) = (v as usize / 64, 1u64 << (v % 64));
    let new = seen[w] & bit == 0;
    seen[w] |= bit;
    new
}

/// Puts `level` (distinct node numbers) in number order: a level of many nodes through
/// `bits` (a bit a node, all clear before and after), a smaller one by sorting.
fn in_order(level: &mut [u32], bits: &mut Vec<u64>) {
    let most = level.iter().copied().max().unwrap_or(0) as usize;
    if level.len() * 64 < most {
        level.sort_unstable();
        return;
    }
    if bits.len() <= most / 64 {
        bits.resize(most / 64 + 1, 0);
    }
    for &v in level.iter() {
        bits[v as usize / 64] |= 1 << (v % 64);
    }
    let mut k = 0;
    for (w, word) in (0u32..).zip(bits.iter_mut()) {
        let mut b = std::mem::take(word);
        while b != 0 {
            level[k] = w * 64 + b.trailing_zeros();
            k += 1;
            b &= b - 1;
        }
    }
}

/// Levels of at least this many nodes are shared among the threads of a wide search.
const WIDE_LEVEL: usize = 1 << 12;

/// A search from one source, whose pairs start from `first`, over a large graph: a level at
/// a time, in number order, each level of [`WIDE_LEVEL`] nodes or more cut into a part a
/// thread, which mark what they reach in one shared set of bits. The nodes reached (in
/// number order, those started from included) and the edges followed; `charge` is given
/// the edges followed as they are, at least every [`CHECK_EVERY`] a part.
fn search_wide(
    threads: usize,
    first: &[u32],
    edges: &Adjacency,
    follow: bool,
    nodes: usize,
    charge: &(dyn Fn(u64) -> Result<(), EvalError> + Sync),
) -> Result<(Vec<u32>, u64), EvalError> {
    let seen: Vec<AtomicU64> = (0..nodes.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
    let mark = |v: u32| {
        let (word, bit) = (&seen[v as usize / 64], 1u64 << (v % 64));
        word.load(Ordering::Relaxed) & bit == 0 && word.fetch_or(bit, Ordering::Relaxed) & bit == 0
    };
    let mut level: Vec<u32> = first.iter().copied().filter(|&v| mark(v)).collect();
    let (mut level_bits, mut followed) = (Vec::new(), 0u64);
    while follow && !level.is_empty() {
        in_order(&mut level, &mut level_bits);
        let parts = if level.len() >= WIDE_LEVEL {
            threads
        } else {
            1
        };
        let slices: Vec<&[u32]> = level.chunks(level.len().div_ceil(parts)).collect();
        let expand = |slice: &[u32]| -> Result<(Vec<u32>, u64), EvalError> {
            let (mut next, mut work, mut unpaid) = (Vec::new(), 0u64, 0u64);
            for &u in slice {
                let out = edges.of(u);
                work += out.len() as u64;
                unpaid += out.len() as u64;
                next.extend(out.iter().copied().filter(|&v| mark(v)));
                if unpaid >= CHECK_EVERY {
                    charge(std::mem::take(&mut unpaid))?;
                }
            }
            charge(unpaid)?;
            Ok((next, work))
        };
        let mut next = Vec::new();
        for part in crate::exec::pool::map(slices.len(), slices, expand) {
            let (found, work) = part?;
            next.extend_from_slice(&found);
            followed += work;
        }
        level = next;
    }
    let mut reached = Vec::new();
    for (w, word) in (0u32..).zip(&seen) {
        let mut b = word.load(Ordering::Relaxed);
        while b != 0 {
            reached.push(w * 64 + b.trailing_zeros());
            b &= b - 1;
        }
    }
    Ok((reached, followed))
}

/// One chunk's search: its sources' pairs (terms, two a pair, sorted), and the edges it
/// followed.
type Found = Result<(Vec<Term>, u64), EvalError>;

impl Evaluator<'_, '_> {
    /// Whether guarded closure `c`, which the rounds compute so far, is better finished by
    /// a search: when its pairs' relations are in memory or about to be read into it for
    /// the next round of `plans` (the probes of the store have cost what reading them
    /// will), and either one is about to be read or the closure holds a [`SEARCH_SHARE`]th
    /// as many pairs as they do (the rounds have cost what the search's arrays will).
    pub(super) fn search_pays(&self, c: &Closure, plans: &[crate::plan::Plan]) -> bool {
        let hot = self.hot(plans);
        let base = |r: RelId| self.ir.relations[r].kind == RelKind::Base;
        if !c
            .pairs()
            .all(|r| !base(r) || self.loaded[r] || hot.contains(&r))
        {
            return false;
        }
        let pairs: u64 = c
            .pairs()
            .map(|r| match self.base_info.get(&r) {
                Some(info) if base(r) => info.rows,
                _ => u64::from(self.relations[r].len()),
            })
            .sum();
        c.pairs().any(|r| hot.contains(&r))
            || u64::from(self.relations[c.rel].len()) * SEARCH_SHARE >= pairs
    }

    /// Computes closure `c` by a search from each source, and settles its relation. What
    /// the rounds derived of it so far, if any, is derived again.
    pub(super) fn closure(&mut self, c: &Closure) -> Result<(), EvalError> {
        let base: Vec<RelId> = c
            .reads()
            .filter(|&r| self.ir.relations[r].kind == RelKind::Base && !self.loaded[r])
            .collect();
        if !base.is_empty() {
            self.materialize(&base)?;
        }
        let rels = &self.relations;
        // The terms a unary relation holds.
        let set = |g: &RelId| -> FxHashSet<Term> { rels[*g].terms().iter().copied().collect() };
        let start_guards: Vec<Vec<FxHashSet<Term>>> = c
            .starts
            .iter()
            .map(|(_, gs)| gs.iter().map(set).collect())
            .collect();
        let step_guards: Vec<FxHashSet<Term>> = c.guards.iter().map(set).collect();
        // The pairs of `r` in search order: a right-linear closure read backwards is a
        // left-linear one.
        let left = c.left;
        let pairs_of = |r: RelId| {
            rels[r]
                .terms()
                .chunks_exact(2)
                .map(move |t| if left { (t[0], t[1]) } else { (t[1], t[0]) })
        };
        // The pairs started from, those of guarded exits picked once; and, when the rounds
        // computed some exit, every pair they derived.
        let mut picked: Vec<(Term, Term)> = c
            .starts
            .iter()
            .zip(&start_guards)
            .filter(|(_, gs)| !gs.is_empty())
            .flat_map(|((r, _), gs)| {
                pairs_of(*r).filter(move |(a, _)| gs.iter().all(|g| g.contains(a)))
            })
            .collect();
        if c.exits_run {
            picked.extend(pairs_of(c.rel));
        }
        let starts = || {
            c.starts
                .iter()
                .zip(&start_guards)
                .filter(|(_, gs)| gs.is_empty())
                .flat_map(move |((r, _), _)| pairs_of(*r))
                .chain(picked.iter().copied())
        };
        let edges = || c.edges.iter().flat_map(move |&r| pairs_of(r));
        // A whole closure of some relations' pairs under themselves starts from its edges.
        let same = !c.exits_run
            && c.starts.iter().all(|(_, gs)| gs.is_empty())
            && c.starts.iter().map(|(r, _)| *r).eq(c.edges.iter().copied());
        let started = starts().count();
        let edge_pairs: usize = c.edges.iter().map(|&r| rels[r].len() as usize).sum();
        let numbering = if same {
            Numbering::new(edge_pairs, || edges().flat_map(|(a, b)| [a, b]))
        } else {
            Numbering::new(started + edge_pairs, || {
                starts().chain(edges()).flat_map(|(a, b)| [a, b])
            })
        };
        let n = numbering.len();
        let numbered = |(a, b): (Term, Term)| (numbering.number(a), numbering.number(b));
        let edges = Adjacency::new(n, || edges().map(numbered));
        let starts = if same {
            Starts::Edges((0..n as u32).filter(|&s| !edges.of(s).is_empty()).collect())
        } else if started * 8 >= n {
            let adjacency = Adjacency::new(n, || starts().map(numbered));
            let sources = (0..n as u32)
                .filter(|&s| !adjacency.of(s).is_empty())
                .collect();
            Starts::Dense(adjacency, sources)
        } else {
            Starts::few(starts().map(numbered).collect())
        };
        let threads = self.options.threads.max(1);
        // The search's own arrays count against the memory cap while it runs: the
        // numbering, the adjacency and each thread's bits, and (below) the pairs found.
        self.budget
            .grow(numbering.bytes() + starts.bytes() + edges.bytes() + (threads * n / 8) as u64)?;
        let sources = starts.sources();
        let size = CHUNK_SOURCES
            .min(sources.len().div_ceil(threads * 8))
            .max(1);
        let chunks: Vec<Range<usize>> = (0..sources.len())
            .step_by(size)
            .map(|k| k..(k + size).min(sources.len()))
            .collect();
        let budget = self.budget;
        let rule_work = &self.rule_work;
        let charge = |followed: u64, started: u64| {
            rule_work[c.rules[0]].fetch_add(started, Ordering::Relaxed);
            rule_work[c.rules[1]].fetch_add(followed, Ordering::Relaxed);
            budget.charge(followed + started)
        };
        let search = |chunk: Range<usize>| -> Found {
            // The nodes reached from the source searched, a bit each: a graph of millions of
            // nodes still keeps them in the cache.
            let mut seen = vec![0u64; n.div_ceil(64)];
            let mut level_bits = Vec::new();
            let mut queue: Vec<u32> = Vec::new();
            let mut out: Vec<Term> = Vec::new();
            let (mut work, mut started, mut followed) = (0u64, 0u64, 0u64);
            for k in chunk {
                let s = sources[k];
                queue.clear();
                for &v in starts.of(k, &edges) {
                    started += 1;
                    if mark(&mut seen, v) {
                        queue.push(v);
                    }
                }
                // The edges are followed from a source in every guard, a level at a time.
                let from = numbering.term(s);
                let mut head = if step_guards.iter().all(|g| g.contains(&from)) {
                    0
                } else {
                    queue.len()
                };
                while head < queue.len() {
                    let level = head..queue.len();
                    // Over arrays larger than the cache, a level in number order reads the
                    // adjacency in order.
                    if n >= SORTED_LEVELS && level.len() >= 64 {
                        in_order(&mut queue[level.clone()], &mut level_bits);
                    }
                    for i in level.clone() {
                        let next = edges.of(queue[i]);
                        work += next.len() as u64;
                        for &v in next {
                            if mark(&mut seen, v) {
                                queue.push(v);
                            }
                        }
                        if work + started >= CHECK_EVERY {
                            charge(work, started)?;
                            followed += work;
                            (work, started) = (0, 0);
                        }
                    }
                    head = level.end;
                }
                let before = out.capacity();
                out.reserve(queue.len() * 2);
                // In number order, unmarked for the next source: sorted when few, else read
                // off the bits.
                if queue.len() * 64 < n {
                    queue.sort_unstable();
                    for &v in &queue {
                        out.extend_from_slice(&[from, numbering.term(v)]);
                        seen[v as usize / 64] = 0;
                    }
                } else {
                    for (w, bits) in (0u32..).zip(seen.iter_mut()) {
                        let mut b = std::mem::take(bits);
                        while b != 0 {
                            let v = w * 64 + b.trailing_zeros();
                            out.extend_from_slice(&[from, numbering.term(v)]);
                            b &= b - 1;
                        }
                    }
                }
                if out.capacity() > before {
                    let grown = (out.capacity() - before) * std::mem::size_of::<Term>();
                    budget.grow(grown as u64)?;
                }
            }
            charge(work, started)?;
            Ok((out, followed + work))
        };
        // A source or two over a large graph: each level's nodes shared among the threads.
        let wide = threads > 1 && n >= SORTED_LEVELS && sources.len() < threads;
        let found: Vec<Found> = if wide {
            let one = |k: usize| -> Found {
                let first = starts.of(k, &edges);
                charge(0, first.len() as u64)?;
                let from = numbering.term(sources[k]);
                let follow = step_guards.iter().all(|g| g.contains(&from));
                let each = |w: u64| charge(w, 0);
                let (reached, followed) = search_wide(threads, first, &edges, follow, n, &each)?;
                budget.grow((reached.len() * 2 * std::mem::size_of::<Term>()) as u64)?;
                let mut out = Vec::with_capacity(reached.len() * 2);
                for v in reached {
                    out.extend_from_slice(&[from, numbering.term(v)]);
                }
                Ok((out, followed))
            };
            (0..sources.len()).map(one).collect()
        } else {
            crate::exec::pool::map(threads.min(chunks.len()).max(1), chunks, search)
        };
        let searched = sources.len() as u64;
        drop((starts, edges, numbering, start_guards, step_guards, picked));
        let total: usize = found
            .iter()
            .map(|f| f.as_ref().map_or(0, |(t, _)| t.len()))
            .sum();
        self.budget
            .grow((total * std::mem::size_of::<Term>()) as u64)?;
        let mut tuples: Vec<Term> = Vec::new();
        let mut followed = 0;
        for f in found {
            let (t, w) = f?;
            if tuples.is_empty() {
                tuples = t;
                tuples.reserve_exact(total - tuples.len());
            } else {
                tuples.extend_from_slice(&t);
            }
            followed += w;
        }
        if !c.left {
            for pair in tuples.chunks_exact_mut(2) {
                pair.swap(0, 1);
            }
        }
        let pairs = tuples.len() / 2;
        self.searched[c.rel] = Some(searched);
        if self.options.profile {
            // For `explain`: the exit rule read its pairs once; the recursive rule ran once
            // a source, following the edges to the closure's pairs. Nothing the rounds
            // before the search counted is kept.
            let mine: Vec<usize> = self.ir.rules_of(c.rel).map(|(ri, _)| ri).collect();
            self.profile.retain(|(ri, _), _| !mine.contains(ri));
            let own = |runs, reached, passed| LiteralProfile {
                runs,
                reached,
                passed,
            };
            let started = started as u64;
            self.profile
                .insert((c.rules[0], usize::MAX), own(1, started, started));
            self.profile.insert(
                (c.rules[1], usize::MAX),
                own(searched, followed, pairs as u64),
            );
        }
        self.budget.progress().facts(pairs as u64);
        self.rounds += 1;
        self.budget.progress().round();
        // Sorted and distinct when left-linear (taken as they are), sorted when not.
        let arity = self.relations[c.rel].arity();
        self.relations[c.rel] = crate::exec::relation::Relation::new(arity);
        self.relations[c.rel].load(tuples, pairs);
        self.hold()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::strata::stratify;

    /// The closure the first recursive stratum of `ir` recognized as one computes.
    fn recognized(ir: &Ir) -> Option<Closure> {
        let strata = stratify(ir).ok()?;
        strata
            .iter()
            .filter(|s| s.recursive)
            .find_map(|s| recognize(ir, s))
    }

    fn ir(text: &str) -> Ir {
        let mut src = crate::MemorySource::new();
        for r in ["e", "f", "a"] {
            src.add_relation(r, &["x", "y"]);
        }
        src.add_relation("n", &["x"]);
        let vocab = crate::Vocabulary::from_sources(
            crate::FactSource::relations(&src).unwrap_or_default(),
            &[],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        crate::Query::prepare(&vocab, text, &[])
            .unwrap_or_else(|e| panic!("{e}"))
            .compiled
            .ir
    }

    #[test]
    fn closures_are_recognized_either_way_round() {
        let left = ir(
            "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z); tc(?a, ?b) => count(?b)",
        );
        let c = recognized(&left).unwrap_or_else(|| panic!("left-linear"));
        assert!(c.left && !c.guarded());
        assert!(c.starts.iter().map(|(r, _)| *r).eq(c.edges.iter().copied()));
        let right = ir(
            "tc(?x, ?y) :- a(?x, ?y); tc(?x, ?z) :- e(?x, ?y), tc(?y, ?z); tc(?x, ?z) :- f(?x, ?y), tc(?y, ?z); tc(?a, ?b) => ?a",
        );
        let c = recognized(&right).unwrap_or_else(|| panic!("right-linear"));
        assert!(!c.left);
        assert_eq!((c.starts.len(), c.edges.len()), (1, 2));
        // The edge and the recursive atom in either order in the body.
        for (text, left) in [
            (
                "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- e(?y, ?z), tc(?x, ?y); tc(?a, ?b) => ?a",
                true,
            ),
            (
                "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- tc(?y, ?z), e(?x, ?y); tc(?a, ?b) => ?a",
                false,
            ),
        ] {
            assert!(
                recognized(&ir(text)).is_some_and(|c| c.left == left),
                "{text}"
            );
        }
    }

    #[test]
    fn sources_tested_by_unary_relations_are_guards() {
        let guarded = ir(
            "tc(?x, ?y) :- n(?x), e(?x, ?y); tc(?x, ?z) :- n(?x), tc(?x, ?y), e(?y, ?z); tc(?a, ?b) => ?a",
        );
        let c = recognized(&guarded).unwrap_or_else(|| panic!("guarded"));
        assert!(c.guarded());
        assert_eq!((c.guards.len(), c.starts[0].1.len()), (1, 1));
        // Right-linear, the source is the second argument.
        let right = ir(
            "tc(?x, ?y) :- n(?y), e(?x, ?y); tc(?x, ?z) :- n(?z), e(?x, ?y), tc(?y, ?z); tc(?a, ?b) => ?a",
        );
        assert!(recognized(&right).is_some_and(|c| c.guarded() && !c.left));
        // Demand's own rewriting of a bound goal.
        let demand =
            ir("tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z); tc(3, ?b) => ?b");
        let magic = crate::rewrite::magic::rewrite(&demand).unwrap_or_else(|| panic!("demand"));
        assert!(recognized(&magic).is_some_and(|c| c.guarded()));
    }

    #[test]
    fn any_exit_rule_is_taken_and_left_to_the_rounds() {
        for text in [
            // Columns swapped.
            "tc(?x, ?y) :- e(?y, ?x); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z); tc(?a, ?b) => ?a",
            // A join, as the walk of a bound linear recursion starts.
            "tc(?x, ?y) :- n(?x), e(?x, ?z), f(?z, ?y); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z); tc(?a, ?b) => ?a",
            // A constant and a filter.
            "tc(?x, 3) :- e(?x, ?y), ?y != 2; tc(?x, ?z) :- e(?x, ?y), tc(?y, ?z); tc(?a, ?b) => ?a",
        ] {
            let c = recognized(&ir(text)).unwrap_or_else(|| panic!("{text}"));
            assert!(c.exits_run && c.guarded(), "{text}");
        }
    }

    #[test]
    fn anything_else_is_left_to_the_rounds() {
        for text in [
            // Nonlinear.
            "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- tc(?x, ?y), tc(?y, ?z); tc(?a, ?b) => ?a",
            // Both ways round.
            "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z); tc(?x, ?z) :- e(?x, ?y), tc(?y, ?z); tc(?a, ?b) => ?a",
            // A filter.
            "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z), ?z != 3; tc(?a, ?b) => ?a",
            // A constant.
            "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- tc(?x, ?y), e(?y, 3), e(?y, ?z); tc(?a, ?b) => ?a",
            // Columns swapped in a step.
            "tc(?x, ?y) :- e(?x, ?y); tc(?z, ?x) :- tc(?x, ?y), e(?y, ?z); tc(?a, ?b) => ?a",
            // No exit.
            "tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z); tc(?a, ?b) => ?a",
            // A test of the target, not the source.
            "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- n(?z), tc(?x, ?y), e(?y, ?z); tc(?a, ?b) => ?a",
            // Steps tested differently.
            "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- n(?x), tc(?x, ?y), e(?y, ?z); tc(?x, ?z) :- tc(?x, ?y), f(?y, ?z); tc(?a, ?b) => ?a",
            // Same generation.
            "sg(?x, ?y) :- e(?x, ?y); sg(?x, ?y) :- e(?a, ?x), sg(?a, ?b), e(?b, ?y); sg(?a, ?b) => ?a",
        ] {
            assert_eq!(recognized(&ir(text)), None, "{text}");
        }
    }
}
