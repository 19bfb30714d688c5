//! Strata: the order in which derived relations are computed, and the check that no
//! relation depends on itself through negation or an aggregate.

use crate::ir::{HeadArg, Ir, Lit, RelId, RelKind};

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

/// The edges of the dependency graph: (head, body relation, through negation or aggregate).
fn edges(ir: &Ir) -> Vec<(RelId, RelId, bool)> {
    let mut out = Vec::new();
    fn lits(head: RelId, body: &[Lit], strict: bool, out: &mut Vec<(RelId, RelId, bool)>) {
        for l in body {
            match l {
                Lit::Pos { rel, .. } => out.push((head, *rel, strict)),
                Lit::Neg { rel, .. } => out.push((head, *rel, true)),
                Lit::Agg { body, .. } => lits(head, body, true, out),
                Lit::Cmp { .. } | Lit::Builtin { .. } | Lit::OneOf { .. } => {}
            }
        }
    }
    for r in &ir.rules {
        let strict = r.args.iter().any(|a| matches!(a, HeadArg::Agg { .. }));
        lits(r.head, &r.body, strict, &mut out);
    }
    out.retain(|&(_, b, _)| ir.relations[b].kind == RelKind::Derived);
    out
}

/// For each relation, the recursive component it is on (an index), if any: two relations
/// are on a cycle together when they share one (a relation alone on one reads itself).
pub fn cycles(ir: &Ir) -> Vec<Option<usize>> {
    let n = ir.relations.len();
    let mut succ = vec![Vec::new(); n];
    for (h, b, _) in edges(ir) {
        succ[h].push(b);
    }
    let mut out = vec![None; n];
    for (i, comp) in tarjan(n, &succ).into_iter().enumerate() {
        if comp.len() > 1 || succ[comp[0]].contains(&comp[0]) {
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
    let n = ir.relations.len();
    let edges = edges(ir);
    let mut succ = vec![Vec::new(); n];
    for &(h, b, _) in &edges {
        succ[h].push(b);
    }
    let comps = tarjan(n, &succ);
    let mut comp_of = vec![usize::MAX; n];
    for (i, c) in comps.iter().enumerate() {
        for &r in c {
            comp_of[r] = i;
        }
    }
    for &(h, b, strict) in &edges {
        if strict && comp_of[h] == comp_of[b] {
            return Err(Unstratifiable {
                cycle: cycle_through(&succ, &comp_of, b, h),
                negation: ir.rules.iter().any(|r| {
                    r.head == h
                        && r.body
                            .iter()
                            .any(|l| matches!(l, Lit::Neg { rel, .. } if *rel == b))
                }),
            });
        }
    }
    Ok(comps
        .into_iter()
        .filter(|c| c.iter().all(|&r| ir.relations[r].kind == RelKind::Derived))
        .map(|relations| {
            let recursive = relations.len() > 1
                || edges
                    .iter()
                    .any(|&(h, b, _)| h == relations[0] && b == relations[0]);
            Stratum {
                relations,
                recursive,
            }
        })
        .collect())
}

/// A path from `from` back to `to` within one component, then the edge `to -> from`: the
/// relations on the cycle, starting at `to`.
fn cycle_through(succ: &[Vec<RelId>], comp_of: &[usize], from: RelId, to: RelId) -> Vec<RelId> {
    // Breadth-first from `from` to `to`, staying in the component.
    let comp = comp_of[from];
    let mut prev = vec![usize::MAX; succ.len()];
    let mut queue = std::collections::VecDeque::from([from]);
    prev[from] = from;
    while let Some(x) = queue.pop_front() {
        if x == to {
            break;
        }
        for &y in &succ[x] {
            if comp_of[y] == comp && prev[y] == usize::MAX {
                prev[y] = x;
                queue.push_back(y);
            }
        }
    }
    let mut path = vec![to];
    let mut x = to;
    while x != from && prev[x] != usize::MAX && prev[x] != x {
        x = prev[x];
        path.push(x);
    }
    path.reverse();
    path.rotate_right(1);
    path.dedup();
    path
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
