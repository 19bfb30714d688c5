//! Equalities with a constant made bindings: a goal `r(?f, ?t), ?f = "x" => ?t` reads as
//! `r("x", ?t) => ?t`, so the demand rewrites ([`super::linear`], [`super::magic`]) see the
//! bound argument. Cypher's `WHERE id(f) = $node` compiles to such an equality, as does a
//! program that states its constant apart from the atom.
//!
//! Only the goal's rule is rewritten, and only a top-level positive `?x = c` (or `c = ?x`) of
//! a variable that no aggregate reads or defines: the variable is replaced by the constant in
//! every literal of the body and in the head, and the equality dropped. Values are equal
//! exactly when their terms are (one encoding per value), so the constant matches the same
//! facts the variable did and the goal keeps its tuples.

use crate::ir::CmpOp;
use crate::ir::{Arg, HeadArg, Ir, Lit, VarId};

/// The program with its goal's equalities to constants substituted, or `None` when it has
/// none that qualifies.
pub fn rewrite(ir: &Ir) -> Option<Ir> {
    let gi = ir.rules.iter().position(|r| r.head == ir.goal)?;
    // A body with no atom stays as written (the equality is then what binds the variable).
    if !ir.rules[gi]
        .body
        .iter()
        .any(|l| matches!(l, Lit::Pos { .. }))
    {
        return None;
    }
    // One rule defines the goal; a goal of several rules (a disjunction) is left as is.
    if ir.rules.iter().filter(|r| r.head == ir.goal).count() != 1 {
        return None;
    }
    let mut out = ir.clone();
    let mut changed = false;
    loop {
        let rule = &out.rules[gi];
        let found = rule.body.iter().enumerate().find_map(|(i, l)| match l {
            Lit::Cmp {
                op: CmpOp::Eq,
                left: Arg::Var(v),
                right: Arg::Const(c),
            }
            | Lit::Cmp {
                op: CmpOp::Eq,
                left: Arg::Const(c),
                right: Arg::Var(v),
            } if substitutable(&rule.body, &rule.args, *v) => Some((i, *v, *c)),
            _ => None,
        });
        let Some((at, var, constant)) = found else {
            break;
        };
        let rule = &mut out.rules[gi];
        rule.body.remove(at);
        let put = |a: &mut Arg| {
            if *a == Arg::Var(var) {
                *a = Arg::Const(constant);
            }
        };
        for l in &mut rule.body {
            match l {
                Lit::Pos { args, .. } | Lit::Neg { args, .. } | Lit::Builtin { args, .. } => {
                    args.iter_mut().for_each(put);
                }
                Lit::Cmp { left, right, .. } => {
                    put(left);
                    put(right);
                }
                Lit::OneOf { .. } | Lit::Agg { .. } => {}
            }
        }
        for a in &mut rule.args {
            if let HeadArg::Arg(a) = a {
                put(a);
            }
        }
        changed = true;
    }
    changed.then_some(out)
}

/// Whether `var` may be replaced by a constant: no aggregate (in the head or the body) reads
/// or defines it, and no `OneOf` ranges over it (its list would then be the equality's to
/// check).
fn substitutable(body: &[Lit], head: &[HeadArg], var: VarId) -> bool {
    let in_head_agg = head
        .iter()
        .any(|a| matches!(a, HeadArg::Agg { over, .. } if *over == var));
    let in_body = body.iter().any(|l| match l {
        Lit::Agg { .. } => l.vars().contains(&var),
        Lit::OneOf { var: v, .. } => *v == var,
        _ => false,
    });
    !in_head_agg && !in_body
}
