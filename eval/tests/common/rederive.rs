//! Checking a witness against the oracle: every fact it shows holds, and each follows from
//! the facts below it by one of the program's own rules.

use strata_eval::internals::ir::{Arg, HeadArg, Ir, Lit, RelKind};
use strata_eval::internals::naive;
use strata_eval::{Node, Value};

/// Checks that `node` holds and follows from its children by one of the program's own
/// rules: base facts are stored, derived ones are the oracle's, and some rule of the
/// relation, its positive literals matched to the children in order, gives the node's
/// values with its comparisons and negations true. A witness written flat (issue 20) is a
/// proof read in order: each fact it lists, and then the node, follows by a rule from facts
/// listed before it.
pub fn rederives(ir: &Ir, facts: &[naive::Facts], node: &Node) {
    let rel = holds(ir, facts, node);
    if ir.relations[rel].kind == RelKind::Base {
        assert!(node.children.is_empty());
        return;
    }
    if node.flat.is_some() {
        for (i, c) in node.children.iter().enumerate() {
            let crel = holds(ir, facts, c);
            assert!(
                c.children.is_empty(),
                "a flat witness lists facts, not trees"
            );
            if ir.relations[crel].kind != RelKind::Base {
                let earlier: Vec<&Node> = node.children[..i].iter().collect();
                assert!(
                    follows(ir, facts, crel, &c.values, &earlier, false),
                    "{}{:?} does not follow from the facts listed before it",
                    c.relation,
                    c.values
                );
            }
        }
        let all: Vec<&Node> = node.children.iter().collect();
        assert!(
            follows(ir, facts, rel, &node.values, &all, false),
            "{}{:?} does not follow from its flat witness {:?}",
            node.relation,
            node.values,
            facts_of(&node.children)
        );
        return;
    }
    let children: Vec<&Node> = node.children.iter().collect();
    assert!(
        follows(ir, facts, rel, &node.values, &children, true),
        "{}{:?} does not follow from {:?} by a rule of the program",
        node.relation,
        node.values,
        facts_of(&node.children)
    );
    for c in &node.children {
        rederives(ir, facts, c);
    }
}

/// The facts `nodes` hold, as failures show them.
fn facts_of(nodes: &[Node]) -> Vec<String> {
    nodes
        .iter()
        .map(|c| format!("{}{:?}", c.relation, c.values))
        .collect()
}

/// The relation of `node`, checked to hold: stored, or the oracle's.
fn holds(ir: &Ir, facts: &[naive::Facts], node: &Node) -> usize {
    let rel = ir
        .relations
        .iter()
        .position(|r| r.name == node.relation)
        .unwrap_or_else(|| panic!("{} is not the program's", node.relation));
    assert!(
        facts[rel].contains(&node.values) || ir.relations[rel].kind == RelKind::Base,
        "{}{:?} does not hold",
        node.relation,
        node.values
    );
    rel
}

/// Whether some rule of `rel` gives `values` from `premises`: matched to its positive
/// literals in order and one each (`in_order`), or each literal to any of them.
fn follows(
    ir: &Ir,
    facts: &[naive::Facts],
    rel: usize,
    values: &[Value],
    premises: &[&Node],
    in_order: bool,
) -> bool {
    ir.rules_of(rel).any(|(_, rule)| {
        let positives: Vec<(&usize, &Vec<Arg>)> = rule
            .body
            .iter()
            .filter_map(|l| match l {
                Lit::Pos { rel, args } => Some((rel, args)),
                _ => None,
            })
            .collect();
        if in_order && positives.len() != premises.len() {
            return false;
        }
        let env: Vec<Option<Value>> = vec![None; rule.vars];
        matches(
            ir, facts, rule, values, &positives, premises, in_order, 0, env,
        )
    })
}

/// Matches positive literal `i` on (a premise for each), then the head and the rule's
/// comparisons and negations, backtracking over the premises when not `in_order`.
#[allow(clippy::too_many_arguments)]
fn matches(
    ir: &Ir,
    facts: &[naive::Facts],
    rule: &strata_eval::internals::ir::Rule,
    values: &[Value],
    positives: &[(&usize, &Vec<Arg>)],
    premises: &[&Node],
    in_order: bool,
    i: usize,
    env: Vec<Option<Value>>,
) -> bool {
    let unify = |a: &Arg, x: &Value, env: &mut Vec<Option<Value>>| match a {
        Arg::Var(v) => match &env[*v] {
            Some(b) => b == x,
            None => {
                env[*v] = Some(x.clone());
                true
            }
        },
        Arg::Const(c) => ir.constants[*c] == *x,
        Arg::Wild => true,
    };
    if let Some((lr, args)) = positives.get(i) {
        let candidates: Vec<&Node> = if in_order {
            premises.get(i).copied().into_iter().collect()
        } else {
            premises.to_vec()
        };
        return candidates.into_iter().any(|child| {
            if ir.relations[**lr].name != child.relation {
                return false;
            }
            let mut env = env.clone();
            args.iter()
                .zip(&child.values)
                .all(|(a, x)| unify(a, x, &mut env))
                && matches(
                    ir,
                    facts,
                    rule,
                    values,
                    positives,
                    premises,
                    in_order,
                    i + 1,
                    env,
                )
        });
    }
    let mut env = env;
    for (h, x) in rule.args.iter().zip(values) {
        let HeadArg::Arg(a) = h else { return false };
        if !unify(a, x, &mut env) {
            return false;
        }
    }
    let value = |a: &Arg, env: &Vec<Option<Value>>| match a {
        Arg::Var(v) => env[*v].clone(),
        Arg::Const(c) => Some(ir.constants[*c].clone()),
        Arg::Wild => None,
    };
    rule.body.iter().all(|l| match l {
        Lit::Cmp { op, left, right } => match (value(left, &env), value(right, &env)) {
            (Some(a), Some(b)) => naive::compare(*op, &a, &b),
            _ => false,
        },
        Lit::Neg { rel, args } => {
            let vals: Option<Vec<Value>> = args.iter().map(|a| value(a, &env)).collect();
            vals.is_some_and(|vals| !facts[*rel].contains(&vals))
        }
        _ => true,
    })
}
