//! Join intermediates: a rule joining three relations or more, two of them on a cycle with
//! its head, reads the join of its first two literals as a relation of its own.
//!
//! Andersen points-to writes `pt(?a, ?o) :- load(?a, ?b), pt(?b, ?p), heap(?p, ?o)`. Its
//! variant driven by a new `heap` tuple must find every `pt(?b, ?p)` with the tuple's `?p`
//! (many: an object is pointed to by many variables), then probe `load` for each `?b`, of
//! which few are loaded from: most of that work finds nothing, every round. Semi-naive
//! evaluation maintains the join of the first two literals just as well as the rule
//! itself: with `@join.pt.0(?a, ?p) :- load(?a, ?b), pt(?b, ?p)` the rule becomes
//! `pt(?a, ?o) :- @join.pt.0(?a, ?p), heap(?p, ?o)`, and a new `heap` tuple probes the
//! (small) intermediate instead. This is how datafrog's points-to is written by hand.
//!
//! The rewrite applies to a rule whose body is positive literals only (no magic guard), at
//! least three, whose first two share a variable, with a literal on a cycle with the head
//! both among the first two and among the rest. The intermediate keeps the variables of
//! the first two literals that the rest or the head use, in order of appearance, and shares
//! the rule's variable slots, so [`Ir::written`] restores the rule as written. Witnesses
//! show an intermediate's premises in its place, and `explain` reports the rule as written.

use crate::ir::{Arg, HeadArg, Ir, Lit, RelDecl, RelKind, Rule, VarId};

pub use crate::ir::JOIN_PREFIX as PREFIX;

/// Rewrites `ir`'s qualifying rules to read join intermediates; `None` when no rule
/// qualifies.
pub fn rewrite(ir: &Ir) -> Option<Ir> {
    let mut out = ir.clone();
    let mut changed = false;
    // A rule of four literals or more may be split again: its intermediate is one of the
    // rest's first two literals next time.
    loop {
        let cycles = crate::link::strata::cycles(&out);
        let on_cycle =
            |head: usize, rel: usize| cycles[head].is_some() && cycles[head] == cycles[rel];
        let Some(ri) = (0..out.rules.len()).find(|&ri| qualifies(&out, &out.rules[ri], &on_cycle))
        else {
            break;
        };
        split(&mut out, ri);
        changed = true;
    }
    changed.then_some(out)
}

fn atom(l: &Lit) -> Option<(usize, &[Arg])> {
    match l {
        Lit::Pos { rel, args } => Some((*rel, args)),
        _ => None,
    }
}

fn vars(args: &[Arg]) -> impl Iterator<Item = VarId> + '_ {
    args.iter().filter_map(|a| match a {
        Arg::Var(v) => Some(*v),
        _ => None,
    })
}

fn qualifies(ir: &Ir, rule: &Rule, on_cycle: &impl Fn(usize, usize) -> bool) -> bool {
    if rule.aggregates() || rule.body.len() < 3 {
        return false;
    }
    let Some(atoms) = rule.body.iter().map(atom).collect::<Option<Vec<_>>>() else {
        return false;
    };
    let magic = atoms
        .iter()
        .any(|(rel, _)| ir.relations[*rel].name.starts_with('@') && !ir.is_join(*rel));
    if magic || ir.relations[rule.head].name.starts_with('@') {
        return false;
    }
    let shared = vars(atoms[0].1).any(|v| vars(atoms[1].1).any(|w| w == v));
    let cyclic = |s: &[(usize, &[Arg])]| s.iter().any(|(rel, _)| on_cycle(rule.head, *rel));
    shared && cyclic(&atoms[..2]) && cyclic(&atoms[2..])
}

/// Replaces rule `ri`'s first two literals by a new intermediate relation and its rule.
fn split(ir: &mut Ir, ri: usize) {
    let rule = ir.rules[ri].clone();
    let (first, rest) = rule.body.split_at(2);
    let mut later: Vec<VarId> = rest
        .iter()
        .filter_map(atom)
        .flat_map(|a| vars(a.1))
        .collect();
    later.extend(rule.args.iter().filter_map(|a| match a {
        HeadArg::Arg(Arg::Var(v)) => Some(*v),
        _ => None,
    }));
    let mut kept: Vec<VarId> = Vec::new();
    for v in first.iter().filter_map(atom).flat_map(|a| vars(a.1)) {
        if later.contains(&v) && !kept.contains(&v) {
            kept.push(v);
        }
    }
    let head_name = &ir.relations[rule.head].name;
    let n = ir
        .relations
        .iter()
        .filter(|r| r.name.starts_with(&format!("{PREFIX}{head_name}.")))
        .count();
    let rel = ir.relations.len();
    ir.relations.push(RelDecl {
        name: format!("{PREFIX}{head_name}.{n}"),
        arity: kept.len(),
        kind: RelKind::Derived,
    });
    let args: Vec<Arg> = kept.iter().map(|&v| Arg::Var(v)).collect();
    ir.rules.push(Rule {
        head: rel,
        args: args.iter().map(|&a| HeadArg::Arg(a)).collect(),
        body: first.to_vec(),
        vars: rule.vars,
        names: rule.names.clone(),
    });
    let mut body = vec![Lit::Pos { rel, args }];
    body.extend(rest.iter().cloned());
    ir.rules[ri].body = body;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::RelId;

    fn rel(name: &str, arity: usize, kind: RelKind) -> RelDecl {
        RelDecl {
            name: name.to_owned(),
            arity,
            kind,
        }
    }

    fn pos(rel: RelId, vs: &[VarId]) -> Lit {
        Lit::Pos {
            rel,
            args: vs.iter().map(|&v| Arg::Var(v)).collect(),
        }
    }

    fn rule(head: RelId, hs: &[VarId], body: Vec<Lit>) -> Rule {
        Rule {
            head,
            args: hs.iter().map(|&v| HeadArg::Arg(Arg::Var(v))).collect(),
            body,
            vars: 4,
            names: ["a", "b", "p", "o"].map(str::to_owned).to_vec(),
        }
    }

    /// pt, heap derived (0, 1); load, store base (2, 3); goal 4.
    fn points_to() -> Ir {
        let (pt, heap, load, store, goal) = (0, 1, 2, 3, 4);
        let (a, b, p, o) = (0, 1, 2, 3);
        Ir {
            relations: vec![
                rel("pt", 2, RelKind::Derived),
                rel("heap", 2, RelKind::Derived),
                rel("load", 2, RelKind::Base),
                rel("store", 2, RelKind::Base),
                rel("goal", 2, RelKind::Derived),
            ],
            constants: Vec::new(),
            rules: vec![
                rule(
                    pt,
                    &[a, o],
                    vec![pos(load, &[a, b]), pos(pt, &[b, p]), pos(heap, &[p, o])],
                ),
                rule(
                    heap,
                    &[p, o],
                    vec![pos(store, &[a, b]), pos(pt, &[a, p]), pos(pt, &[b, o])],
                ),
                rule(pt, &[a, o], vec![pos(store, &[a, o])]),
                rule(
                    goal,
                    &[a, o],
                    vec![pos(pt, &[a, o]), pos(pt, &[o, b]), pos(load, &[b, p])],
                ),
            ],
            goal,
        }
    }

    #[test]
    fn points_to_rules_read_their_first_join() {
        let ir = points_to();
        let out = rewrite(&ir).unwrap();
        assert_eq!(out.relations.len(), 7);
        assert_eq!(out.relations[5].name, "@join.pt.0");
        assert_eq!(out.relations[6].name, "@join.heap.0");
        // pt(?a, ?o) :- @join.pt.0(?a, ?p), heap(?p, ?o), and the intermediate's rule.
        assert_eq!(
            out.rule_text(&out.rules[0]),
            "pt(?a, ?o) :- @join.pt.0(?a, ?p), heap(?p, ?o)"
        );
        assert_eq!(
            out.rule_text(&out.rules[4]),
            "@join.pt.0(?a, ?p) :- load(?a, ?b), pt(?b, ?p)"
        );
        assert_eq!(
            out.rule_text(&out.rules[1]),
            "heap(?p, ?o) :- @join.heap.0(?b, ?p), pt(?b, ?o)"
        );
        // Written, each reads as before; the goal (on no cycle) and the short rule are kept.
        for ri in 0..4 {
            assert_eq!(
                out.rule_text(&out.written(&out.rules[ri])),
                ir.rule_text(&ir.rules[ri])
            );
        }
        assert_eq!(out.rules[3].body.len(), 3);
        assert_eq!(out.owner(4), 0);
        assert_eq!(out.owner(5), 1);
        assert_eq!(out.owner(1), 1);
    }

    #[test]
    fn one_growing_literal_is_left_alone() {
        // sg(?x, ?y) :- par(?x, ?a), sg(?a, ?b), par(?y, ?b): one literal on the cycle.
        let (sg, par) = (0, 1);
        let ir = Ir {
            relations: vec![rel("sg", 2, RelKind::Derived), rel("par", 2, RelKind::Base)],
            constants: Vec::new(),
            rules: vec![rule(
                sg,
                &[0, 3],
                vec![pos(par, &[0, 1]), pos(sg, &[1, 2]), pos(par, &[3, 2])],
            )],
            goal: sg,
        };
        assert!(rewrite(&ir).is_none());
    }
}
