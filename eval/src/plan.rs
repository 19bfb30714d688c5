//! Plans: the order in which a rule's literals are joined, and how each argument is used.
//!
//! A rule is planned once per variant: as written for non-recursive evaluation, and once per
//! body literal of its own stratum for semi-naive rounds, with that literal reading only the
//! delta and placed first. The remaining literals are ordered greedily: next the positive
//! atom with the most bound arguments (then the smallest estimated size), and every filter
//! (negation, comparison, builtin, aggregate) as soon as its variables are bound.

use crate::ir::CmpOp;
use crate::ir::{Arg, Builtin, HeadArg, Ir, Lit, RelId, RelKind, Rule, VarId};

/// A set of bound columns, as a bit mask (bit `c` for column `c`).
pub type Mask = u64;

/// Which tuples of a derived relation a literal reads in a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Every tuple (a relation of a lower stratum, complete).
    All,
    /// The delta: tuples the last round added.
    Recent,
    /// Stable and recent: every tuple known when the round began.
    Visible,
    /// Tuples known before the last round.
    Stable,
}

/// How one column of an atom is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Col {
    /// Must equal this constant (an index into the program's constants).
    Const(usize),
    /// Must equal this variable, bound before.
    Bound(VarId),
    /// Binds this variable.
    Bind(VarId),
    /// Must equal the variable this atom binds at an earlier column.
    Same(VarId),
    /// Anything.
    Wild,
}

/// An operand of a filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// A bound variable.
    Var(VarId),
    /// A constant.
    Const(usize),
}

/// One step of a plan.
#[derive(Clone, Debug)]
pub enum Step {
    /// Join with the facts of a relation.
    Atom {
        /// The literal's position in the body as written.
        pos: usize,
        /// The relation.
        rel: RelId,
        /// Whether it is a base relation (read from the source).
        base: bool,
        /// For a derived relation, which part is read.
        part: Part,
        /// How each column is used.
        cols: Vec<Col>,
        /// The columns known before the step (constants and bound variables).
        mask: Mask,
    },
    /// No fact of the relation matches.
    Neg {
        /// The relation.
        rel: RelId,
        /// Whether it is a base relation.
        base: bool,
        /// How each column is used (`Bind` and `Same` never occur: unbound means existential).
        cols: Vec<Col>,
        /// The bound columns.
        mask: Mask,
    },
    /// A comparison of bound values.
    Cmp {
        /// The operator.
        op: CmpOp,
        /// Left.
        left: Operand,
        /// Right.
        right: Operand,
    },
    /// A builtin test of bound values.
    Builtin {
        /// Which.
        builtin: Builtin,
        /// Its operands.
        args: Vec<Operand>,
    },
    /// Binds a variable to each constant in turn (or, bound, checks it is one of them).
    OneOf {
        /// The variable.
        var: VarId,
        /// Whether it is bound before.
        bound: bool,
        /// The constants.
        values: Vec<usize>,
    },
    /// An aggregate over an inner plan, correlated by the variables bound before it.
    Agg {
        /// The variable receiving the result.
        result: VarId,
        /// Whether `result` is bound before (then the step compares).
        result_bound: bool,
        /// The function.
        func: crate::ir::AggFunc,
        /// Whether duplicates count once.
        distinct: bool,
        /// The variable aggregated.
        over: VarId,
        /// The inner steps.
        inner: Vec<Step>,
        /// The variables the inner steps bind (a solution is their values).
        locals: Vec<VarId>,
    },
}

/// A planned rule variant.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The rule's index in [`Ir::rules`].
    pub rule: usize,
    /// The steps in join order.
    pub steps: Vec<Step>,
    /// The body position of each step, as written.
    pub positions: Vec<usize>,
    /// The body positions of the positive atoms whose facts a witness records, as written
    /// ([`recorded`]).
    pub premises: Vec<usize>,
}

/// What the planner knows of relation sizes: an estimate of the facts matching a bound
/// pattern (None: unknown, treated as large).
pub trait Sizes {
    /// The estimated number of facts of `rel` with the columns of `mask` bound.
    fn estimate(&self, rel: RelId, mask: Mask) -> Option<u64>;
}

fn arg_operand(a: Arg) -> Option<Operand> {
    match a {
        Arg::Var(v) => Some(Operand::Var(v)),
        Arg::Const(c) => Some(Operand::Const(c)),
        Arg::Wild => None,
    }
}

fn bound_mask(args: &[Arg], bound: &[bool]) -> Mask {
    let mut m = 0;
    for (c, a) in args.iter().enumerate() {
        match a {
            Arg::Const(_) => m |= 1 << c,
            Arg::Var(v) if bound[*v] => m |= 1 << c,
            _ => {}
        }
    }
    m
}

fn cols(args: &[Arg], bound: &mut [bool]) -> Vec<Col> {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        out.push(match *a {
            Arg::Const(c) => Col::Const(c),
            Arg::Wild => Col::Wild,
            Arg::Var(v) if bound[v] => {
                if out.contains(&Col::Bind(v)) {
                    Col::Same(v)
                } else {
                    Col::Bound(v)
                }
            }
            Arg::Var(v) => {
                bound[v] = true;
                Col::Bind(v)
            }
        });
    }
    out
}

/// Whether a filter literal's variables are all bound (an aggregate's: those it shares with
/// the rest of the rule, which `outer` lists).
fn ready(lit: &Lit, bound: &[bool], outer: &[VarId]) -> bool {
    match lit {
        Lit::Pos { .. } => false,
        // A list of values is small: binding from it first is always good.
        Lit::OneOf { .. } => true,
        Lit::Neg { args, .. } => {
            // Variables under `not` that are not bound elsewhere are existential.
            args.iter()
                .all(|a| !matches!(a, Arg::Var(v) if outer.contains(v) && !bound[*v]))
        }
        Lit::Agg { result, body, .. } => body
            .iter()
            .flat_map(Lit::vars)
            .filter(|v| outer.contains(v) && v != result)
            .all(|v| bound[v]),
        other => other.vars().iter().all(|&v| bound[v]),
    }
}

/// Plans a body: `first` (a body position) goes first, then greedily.
fn order(
    ir: &Ir,
    body: &[Lit],
    bound: &mut [bool],
    first: Option<usize>,
    part_of: &dyn Fn(usize) -> Part,
    sizes: &dyn Sizes,
    outer: &[VarId],
) -> (Vec<Step>, Vec<usize>) {
    let mut done = vec![false; body.len()];
    let mut steps = Vec::new();
    let place = |i: usize, done: &mut [bool], bound: &mut [bool], steps: &mut Vec<Step>| {
        done[i] = true;
        steps.push(step(ir, body, i, bound, part_of, sizes));
    };
    let mut order_of: Vec<usize> = Vec::new();
    if let Some(f) = first {
        place(f, &mut done, bound, &mut steps);
        order_of.push(f);
    }
    loop {
        // Filters whose variables are bound, in written order.
        let mut placed = false;
        for i in 0..body.len() {
            if !done[i] && !matches!(body[i], Lit::Pos { .. }) && ready(&body[i], bound, outer) {
                place(i, &mut done, bound, &mut steps);
                order_of.push(i);
                placed = true;
            }
        }
        if placed {
            continue;
        }
        // The next atom: most bound columns, then smallest estimate, then written order.
        let best = (0..body.len())
            .filter(|&i| !done[i])
            .filter_map(|i| match &body[i] {
                Lit::Pos { rel, args } => {
                    let mask = bound_mask(args, bound);
                    let est = sizes.estimate(*rel, mask).unwrap_or(u64::MAX);
                    Some((std::cmp::Reverse(mask.count_ones()), est, i))
                }
                _ => None,
            })
            .min();
        match best {
            Some((_, _, i)) => {
                place(i, &mut done, bound, &mut steps);
                order_of.push(i);
            }
            None => break,
        }
    }
    // Anything left (unsafe programs are refused before planning; this keeps the plan total).
    for (i, d) in done.iter().enumerate() {
        if !d {
            steps.push(step(ir, body, i, bound, part_of, sizes));
            order_of.push(i);
        }
    }
    (steps, order_of)
}

fn step(
    ir: &Ir,
    body: &[Lit],
    i: usize,
    bound: &mut [bool],
    part_of: &dyn Fn(usize) -> Part,
    sizes: &dyn Sizes,
) -> Step {
    match &body[i] {
        Lit::Pos { rel, args } => {
            let mask = bound_mask(args, bound);
            Step::Atom {
                pos: i,
                rel: *rel,
                base: ir.relations[*rel].kind == RelKind::Base,
                part: part_of(i),
                cols: cols(args, bound),
                mask,
            }
        }
        Lit::Neg { rel, args } => {
            let mask = bound_mask(args, bound);
            // An unbound variable is existential; repeated, its columns must agree.
            let mut seen: Vec<VarId> = Vec::new();
            let cols = args
                .iter()
                .enumerate()
                .map(|(c, a)| match *a {
                    Arg::Const(k) => Col::Const(k),
                    Arg::Var(v) if mask & (1 << c) != 0 => Col::Bound(v),
                    Arg::Var(v) if seen.contains(&v) => Col::Same(v),
                    Arg::Var(v) if args.iter().filter(|x| **x == Arg::Var(v)).count() > 1 => {
                        seen.push(v);
                        Col::Bind(v)
                    }
                    _ => Col::Wild,
                })
                .collect();
            Step::Neg {
                rel: *rel,
                base: ir.relations[*rel].kind == RelKind::Base,
                cols,
                mask,
            }
        }
        Lit::OneOf { var, values } => {
            let was = bound[*var];
            bound[*var] = true;
            Step::OneOf {
                var: *var,
                bound: was,
                values: values.clone(),
            }
        }
        Lit::Cmp { op, left, right } => Step::Cmp {
            op: *op,
            left: arg_operand(*left).unwrap_or(Operand::Const(usize::MAX)),
            right: arg_operand(*right).unwrap_or(Operand::Const(usize::MAX)),
        },
        Lit::Builtin { builtin, args } => Step::Builtin {
            builtin: builtin.clone(),
            args: args
                .iter()
                .map(|a| arg_operand(*a).unwrap_or(Operand::Const(usize::MAX)))
                .collect(),
        },
        Lit::Agg {
            result,
            func,
            distinct,
            over,
            body: inner,
        } => {
            let result_bound = bound[*result];
            let before: Vec<bool> = bound.to_vec();
            let mut inner_bound = bound.to_vec();
            let (steps, _) = order(
                ir,
                inner,
                &mut inner_bound,
                None,
                &|_| Part::All,
                sizes,
                &body_vars(inner),
            );
            let locals = (0..bound.len())
                .filter(|&v| inner_bound[v] && !before[v])
                .collect();
            bound[*result] = true;
            Step::Agg {
                result: *result,
                result_bound,
                func: *func,
                distinct: *distinct,
                over: *over,
                inner: steps,
                locals,
            }
        }
    }
}

/// The variables of a body that occur outside its nested aggregates' bodies (a nested
/// aggregate's own variables are local to it unless they occur here too).
fn body_vars(body: &[Lit]) -> Vec<VarId> {
    let mut out = Vec::new();
    for l in body {
        match l {
            Lit::Agg { result, .. } => out.push(*result),
            other => out.extend(other.vars()),
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The variables of a rule that occur outside aggregate bodies (an aggregate body's own
/// variables are local to it unless they occur here too).
fn outer_vars(rule: &Rule) -> Vec<VarId> {
    let mut out = Vec::new();
    for l in &rule.body {
        match l {
            Lit::Agg { result, .. } => out.push(*result),
            other => out.extend(other.vars()),
        }
    }
    for a in &rule.args {
        match a {
            crate::ir::HeadArg::Arg(Arg::Var(v)) => out.push(*v),
            crate::ir::HeadArg::Agg { over, .. } => out.push(*over),
            _ => {}
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Plans a rule: `delta` is the body position reading the delta (placed first), and
/// `in_stratum` says which relations belong to the stratum being computed.
pub fn plan(
    ir: &Ir,
    rule_index: usize,
    delta: Option<usize>,
    in_stratum: &dyn Fn(RelId) -> bool,
    sizes: &dyn Sizes,
) -> Plan {
    let rule = &ir.rules[rule_index];
    let mut bound = vec![false; rule.vars];
    let part_of = |i: usize| -> Part {
        let Lit::Pos { rel, .. } = &rule.body[i] else {
            return Part::All;
        };
        if !in_stratum(*rel) {
            return Part::All;
        }
        match delta {
            Some(d) if i == d => Part::Recent,
            Some(d) if i < d => Part::Visible,
            Some(_) => Part::Stable,
            None => Part::Visible,
        }
    };
    let outer = outer_vars(rule);
    let (steps, positions) = order(ir, &rule.body, &mut bound, delta, &part_of, sizes, &outer);
    let premises = recorded(ir, rule);
    Plan {
        rule: rule_index,
        steps,
        positions,
        premises,
    }
}

/// The body positions of `rule`'s positive literals whose facts a derivation records, in
/// the order written. A literal over a base relation whose every argument is a constant or
/// a variable that the head or a recorded literal binds is left out: the rule matched a
/// stored fact there, and that fact holds exactly those terms, so
/// [`crate::exec::witness::Witnesses::derivation`] rebuilds it from the derived tuple and the recorded premises.
/// Literals of derived relations are always recorded (their own derivations hang below).
///
/// In `tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z)` only `tc(?x, ?y)` (position 0) is recorded;
/// in `tc(?x, ?y) :- e(?x, ?y)`, nothing.
pub fn recorded(ir: &Ir, rule: &Rule) -> Vec<usize> {
    let positives: Vec<(usize, bool, &[Arg])> = rule
        .body
        .iter()
        .enumerate()
        .filter_map(|(i, l)| match l {
            Lit::Pos { rel, args } => Some((
                i,
                ir.relations
                    .get(*rel)
                    .is_some_and(|r| r.kind == RelKind::Base),
                &args[..],
            )),
            _ => None,
        })
        .collect();
    let mut bound = vec![false; rule.vars];
    let bind = |args: &[Arg], bound: &mut Vec<bool>| {
        for a in args {
            if let Arg::Var(v) = a
                && let Some(b) = bound.get_mut(*v)
            {
                *b = true;
            }
        }
    };
    let head: Vec<Arg> = rule
        .args
        .iter()
        .filter_map(|a| match a {
            HeadArg::Arg(a) => Some(*a),
            HeadArg::Agg { .. } => None,
        })
        .collect();
    bind(&head, &mut bound);
    let mut kept: Vec<bool> = positives.iter().map(|&(_, base, _)| !base).collect();
    for (&(_, _, args), _) in positives.iter().zip(&kept).filter(|(_, k)| **k) {
        bind(args, &mut bound);
    }
    // A base literal with an argument nothing binds is recorded, which may bind the
    // arguments of others; until every unrecorded one is pinned down.
    loop {
        let pinned = |args: &[Arg], bound: &[bool]| {
            args.iter().all(|a| match a {
                Arg::Var(v) => bound.get(*v).copied().unwrap_or(false),
                Arg::Const(_) => true,
                Arg::Wild => false,
            })
        };
        let next = positives
            .iter()
            .zip(&kept)
            .position(|(&(_, _, args), &k)| !k && !pinned(args, &bound));
        let Some(i) = next else { break };
        kept[i] = true;
        bind(positives[i].2, &mut bound);
    }
    positives
        .iter()
        .zip(kept)
        .filter(|(_, k)| *k)
        .map(|(&(i, _, _), _)| i)
        .collect()
}
