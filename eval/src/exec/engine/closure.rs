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

use std::sync::atomic::Ordering;

use rustc_hash::FxHashMap;

use super::{EvalError, Evaluator, LiteralProfile};
use crate::data::value::Term;
use crate::ir::{Arg, HeadArg, Ir, Lit, RelId, RelKind, Rule};
use crate::link::strata::Stratum;

/// Work units a search spends between checks of the budget and the deadline.
const CHECK_EVERY: u64 = 1 << 16;

/// Sources a chunk of the search holds at most (per thread, several chunks each).
const CHUNK_SOURCES: usize = 1 << 12;

/// A stratum recognized as a closure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Closure {
    /// The relation closed.
    rel: RelId,
    /// The exit rules' relations, whose pairs the closure starts from.
    starts: Vec<RelId>,
    /// The recursive rules' edge relations.
    edges: Vec<RelId>,
    /// Left-linear (`r(?x, ?y), e(?y, ?z)`): searched forward from each source. Otherwise
    /// right-linear, searched backward from each target.
    left: bool,
    /// The first exit rule and the first recursive rule, which a budget error names: the
    /// pairs the search starts from are the first's work, the edges it follows the second's.
    rules: [usize; 2],
}

/// The closure `stratum` computes, when it computes nothing else: one derived binary
/// relation whose rules are copies of other binary relations (`r(?x, ?y) :- a(?x, ?y)`) and
/// linear steps over other binary relations, all the same way round, with distinct
/// variables and nothing else in their bodies.
pub(crate) fn recognize(ir: &Ir, stratum: &Stratum) -> Option<Closure> {
    let [rel] = stratum.relations[..] else {
        return None;
    };
    if !stratum.recursive || ir.relations[rel].arity != 2 {
        return None;
    }
    let binary = |r: RelId| r != rel && ir.relations[r].arity == 2;
    let (mut starts, mut edges, mut sides) = (Vec::new(), Vec::new(), Vec::new());
    let (mut exit_rule, mut step_rule) = (None, None);
    for (ri, rule) in ir.rules_of(rel) {
        let [HeadArg::Arg(Arg::Var(x)), HeadArg::Arg(Arg::Var(z))] = rule.args[..] else {
            return None;
        };
        if x == z || rule.aggregates() {
            return None;
        }
        match atoms(rule)?[..] {
            [(a, [p, q])] if binary(a) && (p, q) == (x, z) => {
                starts.push(a);
                exit_rule.get_or_insert(ri);
            }
            [(r1, [p1, q1]), (r2, [p2, q2])] => {
                let distinct = x != q1 && z != q1 && q1 == p2;
                if r1 == rel && binary(r2) && distinct && (p1, q2) == (x, z) {
                    edges.push(r2);
                    sides.push(true);
                } else if r2 == rel && binary(r1) && distinct && (p1, q2) == (x, z) {
                    edges.push(r1);
                    sides.push(false);
                } else {
                    return None;
                }
                step_rule.get_or_insert(ri);
            }
            _ => return None,
        }
    }
    let left = *sides.first()?;
    if starts.is_empty() || sides.iter().any(|&s| s != left) {
        return None;
    }
    for list in [&mut starts, &mut edges] {
        list.sort_unstable();
        list.dedup();
    }
    Some(Closure {
        rel,
        starts,
        edges,
        left,
        rules: [exit_rule?, step_rule?],
    })
}

/// A rule body's atoms as (relation, the two variables), when it holds only positive atoms
/// of two plain variables.
fn atoms(rule: &Rule) -> Option<Vec<(RelId, [usize; 2])>> {
    rule.body
        .iter()
        .map(|l| match l {
            Lit::Pos { rel, args } => match args[..] {
                [Arg::Var(a), Arg::Var(b)] if a != b => Some((*rel, [a, b])),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Pairs as adjacency arrays over dense node numbers: the targets of node `i` are
/// `targets[offsets[i]..offsets[i + 1]]`.
struct Adjacency {
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl Adjacency {
    /// The adjacency of `pairs` (node numbers), over `nodes` nodes.
    fn new(nodes: usize, pairs: &[(u32, u32)]) -> Adjacency {
        let mut offsets = vec![0u32; nodes + 1];
        for &(a, _) in pairs {
            offsets[a as usize + 1] += 1;
        }
        for i in 0..nodes {
            offsets[i + 1] += offsets[i];
        }
        let mut next = offsets.clone();
        let mut targets = vec![0u32; pairs.len()];
        for &(a, b) in pairs {
            targets[next[a as usize] as usize] = b;
            next[a as usize] += 1;
        }
        Adjacency { offsets, targets }
    }

    fn of(&self, node: u32) -> &[u32] {
        let i = node as usize;
        &self.targets[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

/// One chunk's search: its sources' pairs (terms, two a pair, sorted), and the edges it
/// followed.
type Found = Result<(Vec<Term>, u64), EvalError>;

impl Evaluator<'_, '_> {
    /// Computes closure `c` by a search from each source, and settles its relation.
    pub(super) fn closure(&mut self, c: &Closure) -> Result<(), EvalError> {
        let base: Vec<RelId> = c
            .starts
            .iter()
            .chain(&c.edges)
            .copied()
            .filter(|&r| self.ir.relations[r].kind == RelKind::Base && !self.loaded[r])
            .collect();
        if !base.is_empty() {
            self.materialize(&base)?;
        }
        // Read backwards, a right-linear closure is a left-linear one.
        let read = |rels: &[RelId]| -> Vec<(Term, Term)> {
            let mut out = Vec::new();
            for &r in rels {
                for (_, t) in self.relations[r].iter() {
                    let (a, b) = (t[0], t[1]);
                    out.push(if c.left { (a, b) } else { (b, a) });
                }
            }
            out
        };
        let (starts, edges) = (read(&c.starts), read(&c.edges));
        // Nodes numbered in the order of their terms, so that numbers sort as terms do.
        let mut nodes: Vec<Term> = starts
            .iter()
            .chain(&edges)
            .flat_map(|&(a, b)| [a, b])
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        let number: FxHashMap<Term, u32> = (0u32..)
            .zip(nodes.iter().copied())
            .map(|(i, t)| (t, i))
            .collect();
        // The search's own arrays count against the memory cap while it runs: the pairs
        // read (twice, as terms and as numbers), the nodes and their numbers, and (below)
        // the pairs found; the count afresh after it keeps only the relation.
        let pairs_read = (starts.len() + edges.len()) as u64;
        self.budget
            .grow(pairs_read * 16 + nodes.len() as u64 * 24)?;
        let numbered = |pairs: Vec<(Term, Term)>| -> Vec<(u32, u32)> {
            pairs
                .into_iter()
                .map(|(a, b)| (number[&a], number[&b]))
                .collect()
        };
        let (starts, edges) = (numbered(starts), numbered(edges));
        drop(number);
        let n = nodes.len();
        let (starts, edges) = (Adjacency::new(n, &starts), Adjacency::new(n, &edges));
        let sources: Vec<u32> = (0..n as u32)
            .filter(|&s| !starts.of(s).is_empty())
            .collect();
        let threads = self.options.threads.max(1);
        let chunks: Vec<&[u32]> = sources
            .chunks(
                CHUNK_SOURCES
                    .min(sources.len().div_ceil(threads * 8))
                    .max(1),
            )
            .collect();
        let budget = self.budget;
        let rule_work = &self.rule_work;
        let charge = |followed: u64, started: u64| {
            rule_work[c.rules[0]].fetch_add(started, Ordering::Relaxed);
            rule_work[c.rules[1]].fetch_add(followed, Ordering::Relaxed);
            budget.charge(followed + started)
        };
        let search = |chunk: &[u32]| -> Found {
            let mut mark = vec![u32::MAX; n];
            let mut queue: Vec<u32> = Vec::new();
            let mut out: Vec<Term> = Vec::new();
            let (mut work, mut started, mut followed) = (0u64, 0u64, 0u64);
            for &s in chunk {
                queue.clear();
                for &v in starts.of(s) {
                    started += 1;
                    if mark[v as usize] != s {
                        mark[v as usize] = s;
                        queue.push(v);
                    }
                }
                let mut head = 0;
                while let Some(&u) = queue.get(head) {
                    head += 1;
                    let next = edges.of(u);
                    work += next.len() as u64;
                    for &v in next {
                        if mark[v as usize] != s {
                            mark[v as usize] = s;
                            queue.push(v);
                        }
                    }
                    if work + started >= CHECK_EVERY {
                        charge(work, started)?;
                        followed += work;
                        (work, started) = (0, 0);
                    }
                }
                // In number order: sorted when few, else read off the marks.
                if queue.len() * 16 < n {
                    queue.sort_unstable();
                } else {
                    queue.clear();
                    queue.extend((0..n as u32).filter(|&v| mark[v as usize] == s));
                }
                let before = out.capacity();
                out.reserve(queue.len() * 2);
                for &v in &queue {
                    out.extend_from_slice(&[nodes[s as usize], nodes[v as usize]]);
                }
                if out.capacity() > before {
                    let grown = (out.capacity() - before) * std::mem::size_of::<Term>();
                    budget.grow(grown as u64)?;
                }
            }
            charge(work, started)?;
            Ok((out, followed + work))
        };
        let found = crate::exec::pool::map(threads.min(chunks.len()).max(1), chunks, search);
        // Every source starts from all its pairs.
        let started = starts.targets.len() as u64;
        drop((starts, edges));
        let total: usize = found
            .iter()
            .map(|f| f.as_ref().map_or(0, |(t, _)| t.len()))
            .sum();
        self.budget
            .grow((total * std::mem::size_of::<Term>()) as u64)?;
        let mut tuples: Vec<Term> = Vec::with_capacity(total);
        let mut followed = 0;
        for f in found {
            let (t, w) = f?;
            tuples.extend_from_slice(&t);
            followed += w;
        }
        if !c.left {
            for pair in tuples.chunks_exact_mut(2) {
                pair.swap(0, 1);
            }
        }
        let pairs = tuples.len() / 2;
        self.searched[c.rel] = Some(sources.len() as u64);
        if self.options.profile {
            // For `explain`: the exit rule read its pairs once; the recursive rule ran once
            // a source, following the edges to the closure's pairs.
            let own = |runs, reached, passed| LiteralProfile {
                runs,
                reached,
                passed,
            };
            let exit = self.profile.entry((c.rules[0], usize::MAX)).or_default();
            *exit = own(1, started, started);
            let step = self.profile.entry((c.rules[1], usize::MAX)).or_default();
            *step = own(sources.len() as u64, followed, pairs as u64);
        }
        self.budget.progress().facts(pairs as u64);
        self.rounds += 1;
        self.budget.progress().round();
        // Sorted and distinct when left-linear (taken as they are), sorted when not.
        self.relations[c.rel].load(tuples, pairs);
        self.hold()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::strata::stratify;

    /// The closure the first recursive stratum of `ir` computes, if recognized.
    fn recognized(ir: &Ir) -> Option<Closure> {
        let strata = stratify(ir).ok()?;
        strata
            .iter()
            .find(|s| s.recursive)
            .and_then(|s| recognize(ir, s))
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
        assert!(c.left);
        assert_eq!(c.starts, c.edges);
        let right = ir(
            "tc(?x, ?y) :- a(?x, ?y); tc(?x, ?z) :- e(?x, ?y), tc(?y, ?z); tc(?x, ?z) :- f(?x, ?y), tc(?y, ?z); tc(?a, ?b) => ?a",
        );
        let c = recognized(&right).unwrap_or_else(|| panic!("right-linear"));
        assert!(!c.left);
        assert_eq!((c.starts.len(), c.edges.len()), (1, 2));
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
            // Columns swapped.
            "tc(?x, ?y) :- e(?y, ?x); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z); tc(?a, ?b) => ?a",
            "tc(?x, ?y) :- e(?x, ?y); tc(?z, ?x) :- tc(?x, ?y), e(?y, ?z); tc(?a, ?b) => ?a",
            // No exit.
            "tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z); tc(?a, ?b) => ?a",
            // Same generation.
            "sg(?x, ?y) :- e(?x, ?y); sg(?x, ?y) :- e(?a, ?x), sg(?a, ?b), e(?b, ?y); sg(?a, ?b) => ?a",
        ] {
            assert_eq!(recognized(&ir(text)), None, "{text}");
        }
    }
}
