//! Stratification, once for every form of the program: the dependency graph of derived
//! relations, its strongly connected components in dependency order, and the check that no
//! relation depends on itself through `not` or an aggregate.
//!
//! A rule's head depends on every derived relation its body reads; the dependency is strict
//! when it is read under `not`, inside an aggregate literal's `{ }`, or by a rule with an
//! aggregate in its head. A strict dependency on a relation that depends back on the head
//! (through any path) cannot be computed. The same [`Graph`] is built from the linked rules
//! (where the checker refuses such a cycle at the literal that reads it, naming the relations
//! on it in order: [`check_linked`]) and from the [`Ir`] (where the engine orders its strata:
//! [`stratify`], and the rewrites ask which relations share a cycle: [`cycles`]).

use std::collections::{HashMap, VecDeque};

use crate::front::ast::Span;
use crate::front::diagnostic::Diagnostic;
use crate::ir::{HeadArg, Ir, Lit, RelId, RelKind};
use crate::link::linked::{LHead, LLit, LRule};
use crate::link::resolve::Target;

/// What a literal reads, as the dependency graph sees it.
pub(crate) enum Reads<'a, L, R> {
    /// A positive atom of this relation.
    Atom(R),
    /// `not` an atom of this relation.
    Not(R),
    /// An aggregate's `{ }` body.
    Aggregate(&'a [L]),
    /// Nothing (a comparison, a builtin, a bound list).
    Nothing,
}

/// A literal of some form of the program (linked, or lowered).
pub(crate) trait Literal: Sized {
    /// How the form names a relation.
    type Rel: Copy + Eq + std::hash::Hash;
    /// What the literal reads.
    fn reads(&self) -> Reads<'_, Self, Self::Rel>;
}

impl Literal for Lit {
    type Rel = RelId;
    fn reads(&self) -> Reads<'_, Lit, RelId> {
        match self {
            Lit::Pos { rel, .. } => Reads::Atom(*rel),
            Lit::Neg { rel, .. } => Reads::Not(*rel),
            Lit::Agg { body, .. } => Reads::Aggregate(body),
            Lit::Cmp { .. } | Lit::Builtin { .. } | Lit::OneOf { .. } => Reads::Nothing,
        }
    }
}

impl Literal for LLit {
    type Rel = Target;
    fn reads(&self) -> Reads<'_, LLit, Target> {
        match self {
            LLit::Pos { rel, .. } => Reads::Atom(*rel),
            LLit::Neg { rel, .. } => Reads::Not(*rel),
            LLit::Agg { body, .. } => Reads::Aggregate(body),
            LLit::Builtin { .. } | LLit::Cmp { .. } | LLit::OneOf { .. } => Reads::Nothing,
        }
    }
}

/// A dependency: rule `rule`'s head `head` reads `on` at literal `lit`.
pub(crate) struct Edge<'a, L: Literal> {
    /// The rule (its index in the list the graph was built from).
    pub(crate) rule: usize,
    /// The head (a node).
    pub(crate) head: usize,
    /// The relation read (a node).
    pub(crate) on: usize,
    /// Under `not`, in an aggregate's `{ }`, or by an aggregating head.
    pub(crate) strict: bool,
    /// Under `not`.
    pub(crate) negation: bool,
    /// The literal that reads it.
    pub(crate) lit: &'a L,
}

/// The dependency graph between derived relations, on nodes `0..n`.
pub(crate) struct Graph<'a, L: Literal> {
    /// Each node's successors (the relations it reads), each once, in the order first read.
    succ: Vec<Vec<usize>>,
    /// Every dependency, rule by rule, each rule's literals in the order written.
    edges: Vec<Edge<'a, L>>,
}

/// A cycle through a strict dependency.
pub(crate) struct Cycle {
    /// The offending dependency (an index into the graph's edges).
    pub(crate) edge: usize,
    /// The relations on the cycle: the head, the relation it reads strictly, and on to the
    /// last before the head again.
    pub(crate) nodes: Vec<usize>,
}

impl<'a, L: Literal> Graph<'a, L> {
    /// The graph of `rules` (each a head, whether the head aggregates, and a body), over
    /// `n` nodes numbered by `node`; only relations `derived` says are derived are read.
    pub(crate) fn new(
        n: usize,
        rules: impl IntoIterator<Item = (L::Rel, bool, &'a [L])>,
        node: &mut dyn FnMut(L::Rel) -> usize,
        derived: &dyn Fn(L::Rel) -> bool,
    ) -> Self {
        fn walk<'a, L: Literal>(
            rule: usize,
            head: usize,
            body: &'a [L],
            strict: bool,
            node: &mut dyn FnMut(L::Rel) -> usize,
            derived: &dyn Fn(L::Rel) -> bool,
            out: &mut Vec<Edge<'a, L>>,
        ) {
            for lit in body {
                let (on, strict, negation) = match lit.reads() {
                    Reads::Atom(r) => (r, strict, false),
                    Reads::Not(r) => (r, true, true),
                    Reads::Aggregate(inner) => {
                        walk(rule, head, inner, true, node, derived, out);
                        continue;
                    }
                    Reads::Nothing => continue,
                };
                if derived(on) {
                    out.push(Edge {
                        rule,
                        head,
                        on: node(on),
                        strict,
                        negation,
                        lit,
                    });
                }
            }
        }
        let mut edges = Vec::new();
        for (i, (head, aggregating, body)) in rules.into_iter().enumerate() {
            let h = node(head);
            walk(i, h, body, aggregating, node, derived, &mut edges);
        }
        let n = edges
            .iter()
            .map(|e| e.head.max(e.on) + 1)
            .max()
            .unwrap_or(0)
            .max(n);
        let mut succ = vec![Vec::new(); n];
        for e in &edges {
            if !succ[e.head].contains(&e.on) {
                succ[e.head].push(e.on);
            }
        }
        Graph { succ, edges }
    }

    /// The dependencies.
    pub(crate) fn edges(&self) -> &[Edge<'a, L>] {
        &self.edges
    }

    /// The strongly connected components, each after the ones it depends on.
    pub(crate) fn components(&self) -> Vec<Vec<usize>> {
        tarjan(self.succ.len(), &self.succ)
    }

    /// Whether node `r` reads itself directly.
    fn reads_itself(&self, r: usize) -> bool {
        self.succ[r].contains(&r)
    }

    /// The first strict dependency (in rule and literal order) whose relation depends back
    /// on the head, with the shortest cycle through it.
    pub(crate) fn strict_cycle(&self) -> Option<Cycle> {
        self.edges.iter().enumerate().find_map(|(i, e)| {
            if !e.strict {
                return None;
            }
            let mut nodes = vec![e.head];
            let path = self.path(e.on, e.head)?;
            nodes.extend(&path[..path.len() - 1]);
            Some(Cycle { edge: i, nodes })
        })
    }

    /// The shortest path `from` ... `to` (both included), if `to` is reachable; breadth
    /// first, successors in the order first read.
    fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        let mut prev = vec![usize::MAX; self.succ.len()];
        let mut queue = VecDeque::from([from]);
        prev[from] = from;
        while let Some(x) = queue.pop_front() {
            if x == to {
                let mut out = vec![to];
                let mut at = to;
                while at != from {
                    at = prev[at];
                    out.push(at);
                }
                out.reverse();
                return Some(out);
            }
            for &y in &self.succ[x] {
                if prev[y] == usize::MAX {
                    prev[y] = x;
                    queue.push_back(y);
                }
            }
        }
        None
    }
}

/// The dependency graph of `ir`'s rules, on relation ids.
fn ir_graph(ir: &Ir) -> Graph<'_, Lit> {
    Graph::new(
        ir.relations.len(),
        ir.rules.iter().map(|r| {
            let aggregating = r.args.iter().any(|a| matches!(a, HeadArg::Agg { .. }));
            (r.head, aggregating, &r.body[..])
        }),
        &mut |r| r,
        &|r| ir.relations[r].kind == RelKind::Derived,
    )
}

/// One strongly connected component of the dependency graph: relations computed together.
#[derive(Clone, Debug, PartialEq)]
pub struct Stratum {
    /// Its relations.
    pub relations: Vec<RelId>,
    /// Whether they depend on themselves (computed by rounds to a fixpoint).
    pub recursive: bool,
}

/// A cycle through negation or an aggregate: the relations on it, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Unstratifiable {
    /// The relations on the cycle.
    pub cycle: Vec<RelId>,
    /// Whether the offending edge is a negation (else an aggregate).
    pub negation: bool,
}

/// For each relation, the recursive component it is on (an index), if any: two relations
/// are on a cycle together when they share one (a relation alone on one reads itself).
pub fn cycles(ir: &Ir) -> Vec<Option<usize>> {
    let g = ir_graph(ir);
    let mut out = vec![None; ir.relations.len()];
    for (i, comp) in g.components().into_iter().enumerate() {
        if comp.len() > 1 || g.reads_itself(comp[0]) {
            for r in comp {
                out[r] = Some(i);
            }
        }
    }
    out
}

/// The strata of the derived relations, dependencies first; or the first cycle through
/// negation or an aggregate.
pub fn stratify(ir: &Ir) -> Result<Vec<Stratum>, Unstratifiable> {
    let g = ir_graph(ir);
    if let Some(c) = g.strict_cycle() {
        return Err(Unstratifiable {
            cycle: c.nodes,
            negation: g.edges()[c.edge].negation,
        });
    }
    Ok(g.components()
        .into_iter()
        .filter(|c| c.iter().all(|&r| ir.relations[r].kind == RelKind::Derived))
        .map(|relations| Stratum {
            recursive: relations.len() > 1 || g.reads_itself(relations[0]),
            relations,
        })
        .collect())
}

/// Checks that the linked `rules` (each with a tag saying where it is written) can be
/// stratified. On a cycle, returns the tag of the rule holding the offending literal, and
/// the error at that literal. `name` gives a relation's name.
pub(crate) fn check_linked<T: Copy>(
    rules: &[(&LRule, T)],
    name: &dyn Fn(Target) -> String,
) -> Result<(), (T, Diagnostic)> {
    let mut ids: HashMap<Target, usize> = HashMap::new();
    let mut targets: Vec<Target> = Vec::new();
    let mut node = |t: Target| {
        *ids.entry(t).or_insert_with(|| {
            targets.push(t);
            targets.len() - 1
        })
    };
    let g = Graph::new(
        0,
        rules.iter().map(|(r, _)| {
            let aggregating = r.args.iter().any(|a| matches!(a, LHead::Agg { .. }));
            (r.head, aggregating, &r.body[..])
        }),
        &mut node,
        &|t| matches!(t, Target::Member(_) | Target::Local(_)),
    );
    let Some(c) = g.strict_cycle() else {
        return Ok(());
    };
    let e = &g.edges()[c.edge];
    let name = |n: usize| name(targets[n]);
    let mut cycle: Vec<String> = c.nodes.iter().map(|&n| name(n)).collect();
    cycle.push(name(e.head));
    let (h, b) = (name(e.head), name(e.on));
    let (message, fix) = if e.negation {
        (
            format!(
                "a cycle through \"not\" can't be computed: {}",
                cycle.join(" -> ")
            ),
            if e.head == e.on {
                format!(
                    "a relation can't depend on its own negation: define \"{h}\" without \
                     \"not {h}(...)\""
                )
            } else {
                format!(
                    "\"not\" reads a relation computed before this one: define \"{b}\" \
                     without reading \"{h}\""
                )
            },
        )
    } else {
        (
            format!(
                "a cycle through an aggregate can't be computed: {}",
                cycle.join(" -> ")
            ),
            if e.head == e.on {
                "a relation can't aggregate over itself: aggregate over another relation".to_owned()
            } else {
                format!(
                    "an aggregate reads a relation computed before this one: define \"{b}\" \
                     without reading \"{h}\""
                )
            },
        )
    };
    let span = match e.lit {
        LLit::Pos { span, .. } | LLit::Neg { span, .. } => *span,
        _ => Span::default(),
    };
    Err((
        rules[e.rule].1,
        Diagnostic::new(message, span).with_fix(fix),
    ))
}

/// Tarjan's strongly connected components, each listed after the ones it depends on.
fn tarjan(n: usize, succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        succ: &'a [Vec<usize>],
        index: Vec<usize>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    // Iterative, so deep dependency chains cannot overflow the stack.
    fn visit(s: &mut State<'_>, root: usize) {
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        s.index[root] = s.next;
        s.low[root] = s.next;
        s.next += 1;
        s.stack.push(root);
        s.on_stack[root] = true;
        while let Some(&mut (v, ref mut i)) = work.last_mut() {
            if let Some(&w) = s.succ[v].get(*i) {
                *i += 1;
                if s.index[w] == usize::MAX {
                    s.index[w] = s.next;
                    s.low[w] = s.next;
                    s.next += 1;
                    s.stack.push(w);
                    s.on_stack[w] = true;
                    work.push((w, 0));
                } else if s.on_stack[w] {
                    s.low[v] = s.low[v].min(s.index[w]);
                }
            } else {
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    s.low[parent] = s.low[parent].min(s.low[v]);
                }
                if s.low[v] == s.index[v] {
                    let mut comp = Vec::new();
                    while let Some(w) = s.stack.pop() {
                        s.on_stack[w] = false;
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    comp.sort_unstable();
                    s.out.push(comp);
                }
            }
        }
    }
    let mut s = State {
        succ,
        index: vec![usize::MAX; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v] == usize::MAX {
            visit(&mut s, v);
        }
    }
    s.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_come_after_their_dependencies() {
        // 0 -> 1 -> 2 -> 1, 3 -> 0
        let succ = vec![vec![1], vec![2], vec![1], vec![0]];
        let comps = tarjan(4, &succ);
        assert_eq!(comps, vec![vec![1, 2], vec![0], vec![3]]);
    }
}
