//! Linear recursion by binding: a goal that binds the arguments a linear recursion changes
//! is answered by a reachability from the bound values, whichever way the rules are written.
//!
//! `r(?a, ?c) :- r(?a, ?b), imports(?b, ?c)` (left-linear) asked `r(?x, "f")` needs every
//! `?x` that reaches `"f"`. Magic sets ask `r` for the pairs ending at each value that
//! reaches `"f"`: the demand is right, but each of those values drags in every pair ending at
//! it, so the work grows with the square of the reach. The rules of a linear recursion keep
//! some arguments unchanged from the recursive literal to the head (here the first: the
//! *kept* columns) and change the others (the *moved* columns). A derivation of a fact is a
//! chain: an exit rule gives `r(k, t0)`, and each recursive rule moves `t0` to `t1`, ..., to
//! the fact's moved values, without looking at the kept ones. So when the goal binds every
//! moved column to `s`, the answer is the exit facts whose moved values reach `s`:
//!
//! ```text
//! @linear.left.1.r(?s, ?s)  :- ?s in ["f"]                       (the seed)
//! @linear.left.1.r(?b, ?s)  :- @linear.left.1.r(?c, ?s), imports(?b, ?c)   (each recursive rule)
//! r'(?a, ?s)                :- imports(?a, ?c), @linear.left.1.r(?c, ?s)   (each exit rule)
//! ```
//!
//! The `@linear` relation holds `(t, s)`: a fact with moved values `t` leads to one with `s`.
//! Its rules are the recursive rules read backwards (head and recursive literal swapped, the
//! kept columns dropped); the seeds are the goal's bindings, so it holds what the bound values
//! reach and nothing else (one seed: a unary reachability, the last columns constant). This
//! is Naughton, Ramakrishnan, Sagiv and Ullman's rewrite of left- and right-linear rules
//! (SIGMOD 1989) in one form: for right-linear rules bound on the first argument the walk
//! goes forward, for left-linear ones bound on the last it goes backward.
//!
//! When the exit rules are the recursive rules' steps (a transitive closure: `r(?a, ?b) :-
//! imports(?a, ?b)` beside `r(?a, ?c) :- r(?a, ?b), imports(?b, ?c)`), the exit join above
//! looks up again the very edges the walk just followed. The walk then holds what the seeds
//! reach by one step or more (`@linear.left+...`, stepping from the seeds kept in
//! `@linear.seed...` and from itself), and the answer is that relation: each reached value's
//! edges are looked up once, as a breadth-first search does (`fuses`).
//!
//! A relation qualifies when it is recursive through itself only (no other relation on its
//! cycle), no rule of it aggregates, each recursive rule reads it once, and some columns
//! are kept by every recursive rule (same variable at the same place in the head and the
//! recursive literal, used nowhere else). The goal's call must bind every other column, by
//! constants or by the goal's literals before it (in the order magic sets pass bindings);
//! those literals seed the walk. The call reads `r'`, named as `r`; the rest of the program
//! is unchanged, and [`crate::rewrite::magic`] may rewrite the result further (demand on
//! the edge relations). Rules the goal no longer reaches are dropped.
//!
//! Witnesses: an `r'` fact's derivation is an exit rule's premises and a chain of
//! `@linear` facts, each with the premises of one recursive rule. `witness::linear::reshape` rebuilds from
//! it the derivation in `r`'s own rules: the exit rule's fact `r(k, t0)`, then one fact per
//! link, `r(k, t(i+1))` from `r(k, ti)` and the link's premises in the rule's order. Each of
//! those facts holds (it is derived by `r`'s rules from true premises), so the witness is
//! exact and reads as the program wrote it. A folded walk's answer has one premise, the
//! walk's fact, whose step stands for the exit rule (the same literals in the same order).

use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::{Arg, HeadArg, Ir, Lit, RelDecl, RelId, RelKind, Rule, VarId};
use crate::rewrite::magic::{is_bound, next_binding};

/// The name prefix of the reachability relations this rewrite adds: internal (`@`), kept in
/// witnesses only until `witness::linear::reshape` rewrites them in the recursive relation's rules.
pub const PREFIX: &str = "@linear.";

/// How a linear recursion's rules are written, by where the kept columns are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// The kept columns come first (`r(?x, ?z) :- r(?x, ?y), e(?y, ?z)`): bound on the last
    /// argument, the walk follows the edges backwards.
    Left,
    /// The kept columns come last (`r(?x, ?z) :- e(?x, ?y), r(?y, ?z)`): bound on the first
    /// argument, the walk follows the edges forwards.
    Right,
    /// Anything else (no kept column, or kept and moved columns interleaved).
    Other,
}

impl Form {
    fn as_str(self) -> &'static str {
        match self {
            Form::Left => "left",
            Form::Right => "right",
            Form::Other => "other",
        }
    }

    fn parse(s: &str) -> Option<Form> {
        Some(match s {
            "left" => Form::Left,
            "right" => Form::Right,
            "other" => Form::Other,
            _ => return None,
        })
    }
}

/// What a `@linear` relation's name says: the recursion it walks and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Walk {
    /// How the rules are written.
    pub form: Form,
    /// The moved columns, which the goal binds (0-based).
    pub moved: Vec<usize>,
    /// The recursive relation's name.
    pub relation: String,
    /// The walk holds what the seeds reach by one step or more, and the answer is the walk
    /// itself: the exit rules are the recursive rules' steps (see `fuses`).
    pub plus: bool,
}

impl Walk {
    /// The walk a relation name describes, when it is one of this rewrite's.
    pub fn of_name(name: &str) -> Option<Walk> {
        let rest = name.strip_prefix(PREFIX)?;
        let (form, rest) = rest.split_once('.')?;
        let (form, plus) = match form.strip_suffix('+') {
            Some(f) => (f, true),
            None => (form, false),
        };
        let (cols, relation) = rest.split_once('.')?;
        let moved = cols
            .split(',')
            .map(str::parse)
            .collect::<Result<Vec<usize>, _>>()
            .ok()?;
        Some(Walk {
            form: Form::parse(form)?,
            moved,
            relation: relation.to_owned(),
            plus,
        })
    }

    fn cols(&self) -> String {
        let cols: Vec<String> = self.moved.iter().map(ToString::to_string).collect();
        cols.join(",")
    }

    fn name(&self) -> String {
        format!(
            "{PREFIX}{}{}.{}.{}",
            self.form.as_str(),
            if self.plus { "+" } else { "" },
            self.cols(),
            self.relation
        )
    }

    /// The name of a fused walk's seeds (not itself a walk's name: `seed` is no form).
    pub(crate) fn seed_name(&self) -> String {
        format!("{PREFIX}seed.{}.{}", self.cols(), self.relation)
    }
}

/// A linear recursion's columns, when the relation qualifies.
struct Columns {
    /// Kept by every recursive rule.
    kept: Vec<usize>,
    /// Changed by some recursive rule: the columns a goal must bind.
    moved: Vec<usize>,
}

impl Columns {
    fn form(&self) -> Form {
        match (self.kept.iter().max(), self.moved.iter().min()) {
            (Some(k), Some(m)) if k < m => Form::Left,
            (Some(_), Some(_)) if self.moved.iter().max() < self.kept.iter().min() => Form::Right,
            _ => Form::Other,
        }
    }
}

/// The position of the one literal of `rule` reading `rel`, when it reads it exactly once.
fn recursive_literal(rule: &Rule, rel: RelId) -> Option<Option<usize>> {
    let mut found = None;
    for (i, l) in rule.body.iter().enumerate() {
        match l {
            Lit::Pos { rel: r, .. } | Lit::Neg { rel: r, .. } if *r == rel => {
                if found.is_some() || matches!(l, Lit::Neg { .. }) {
                    return None;
                }
                found = Some(i);
            }
            _ => {}
        }
    }
    Some(found)
}

/// How many times variable `v` occurs in `rule`, head and body (aggregate bodies included).
fn occurrences(rule: &Rule, v: VarId) -> usize {
    let head = rule
        .args
        .iter()
        .filter(|a| matches!(a, HeadArg::Arg(Arg::Var(x)) if *x == v))
        .count();
    head + rule
        .body
        .iter()
        .map(|l| l.vars().iter().filter(|&&x| x == v).count())
        .sum::<usize>()
}

/// The variables that the positive literals and lists of `body` bind.
fn binders(body: &[Lit]) -> FxHashSet<VarId> {
    let mut out = FxHashSet::default();
    for l in body {
        match l {
            Lit::Pos { .. } | Lit::OneOf { .. } => out.extend(l.vars()),
            _ => {}
        }
    }
    out
}

/// The columns of `rel` when it is a linear recursion this rewrite handles.
fn columns(ir: &Ir, rel: RelId, cycles: &[Option<usize>]) -> Option<Columns> {
    let cycle = cycles[rel]?;
    if cycles
        .iter()
        .enumerate()
        .any(|(q, c)| q != rel && *c == Some(cycle))
    {
        return None;
    }
    let arity = ir.relations[rel].arity;
    let mut kept = vec![true; arity];
    let mut recursive = 0;
    for (_, rule) in ir.rules_of(rel) {
        if rule.aggregates() || rule.body.iter().any(|l| matches!(l, Lit::Agg { .. })) {
            return None;
        }
        let Some(at) = recursive_literal(rule, rel)? else {
            continue;
        };
        recursive += 1;
        let Lit::Pos { args, .. } = &rule.body[at] else {
            return None;
        };
        for (c, k) in kept.iter_mut().enumerate() {
            *k &= match (&rule.args[c], args[c]) {
                (HeadArg::Arg(Arg::Var(h)), Arg::Var(b)) => *h == b && occurrences(rule, b) == 2,
                _ => false,
            };
        }
    }
    let moved: Vec<usize> = (0..arity).filter(|&c| !kept[c]).collect();
    if recursive == 0 || moved.is_empty() {
        return None;
    }
    // Each recursive rule read backwards must be safe: the recursive literal's moved
    // variables must be bound by the rest of the body or by the head's moved arguments.
    for (_, rule) in ir.rules_of(rel) {
        let Some(at) = recursive_literal(rule, rel)? else {
            continue;
        };
        let Lit::Pos { args, .. } = &rule.body[at] else {
            return None;
        };
        let mut rest: Vec<Lit> = rule.body.clone();
        rest.remove(at);
        let mut bound = binders(&rest);
        for &c in &moved {
            match rule.args[c] {
                HeadArg::Arg(Arg::Var(v)) => {
                    bound.insert(v);
                }
                HeadArg::Arg(_) => {}
                HeadArg::Agg { .. } => return None,
            }
        }
        let safe = moved.iter().all(|&c| match args[c] {
            Arg::Var(v) => bound.contains(&v),
            Arg::Const(_) => true,
            Arg::Wild => false,
        });
        if !safe {
            return None;
        }
    }
    Some(Columns {
        kept: (0..arity).filter(|&c| kept[c]).collect(),
        moved,
    })
}

/// Whether a call binding `args` (with `bound` variables) is answered by a walk: every
/// moved column bound, and no kept one, unless only by constants (one seed). A call whose
/// kept columns are bound by other literals' values is left to magic sets, which follow
/// those values forward rather than walking from every seed.
fn walks(cols: &Columns, args: &[Arg], bound: &[bool]) -> bool {
    cols.moved.iter().all(|&c| is_bound(&args[c], bound))
        && (cols.kept.iter().all(|&c| !is_bound(&args[c], bound))
            || args.iter().all(|a| !matches!(a, Arg::Var(v) if bound[*v])))
}

/// Rewrites the goal's calls of linear recursions that bind every moved column; `None` when
/// no call qualifies.
pub fn rewrite(ir: &Ir) -> Option<Ir> {
    let cycles = crate::link::strata::cycles(ir);
    let mut out = ir.clone();
    let mut changed = false;
    for gi in 0..ir.rules.len() {
        if ir.rules[gi].head != ir.goal {
            continue;
        }
        let goal = ir.rules[gi].clone();
        let mut bound = vec![false; goal.vars];
        let mut prefix: Vec<Lit> = Vec::new();
        let mut done = vec![false; goal.body.len()];
        // In the order magic sets pass bindings in.
        while let Some(i) = next_binding(&goal.body, &bound, &done) {
            done[i] = true;
            let mut lit = goal.body[i].clone();
            if let Lit::Pos { rel, args } = &lit
                && ir.relations[*rel].kind == RelKind::Derived
                && let Some(cols) = columns(ir, *rel, &cycles)
                && walks(&cols, args, &bound)
            {
                let walked = walk(&mut out, *rel, &cols, args, &prefix, &goal);
                lit = Lit::Pos {
                    rel: walked,
                    args: args.clone(),
                };
                out.rules[gi].body[i] = lit.clone();
                changed = true;
            }
            for v in lit.vars() {
                bound[v] = true;
            }
            prefix.push(lit);
        }
    }
    if !changed {
        return None;
    }
    prune(&mut out);
    Some(out)
}

/// Whether a relation's exit rules are its recursive rules' steps, so that what its walk
/// reaches by one step or more is the answer itself: each exit rule's body is, in the same
/// order, the rest of some recursive rule's body (the recursive literal left out), and each
/// recursive rule's rest is some exit rule's body, with the exit head's kept variables in
/// place of the recursive literal's moved ones and its moved variables in place of the
/// head's (as `r(?a, ?b) :- e(?a, ?b)` is to `r(?a, ?c) :- r(?a, ?b), e(?b, ?c)`).
///
/// Then the walk follows each bound value's steps once: the plain walk would follow them
/// twice, once to reach each value and once more through the exit rules to answer.
fn fuses(ir: &Ir, rel: RelId, cols: &Columns) -> bool {
    if cols.kept.len() != cols.moved.len() {
        return false;
    }
    let mut exits = Vec::new();
    let mut steps = Vec::new();
    for (_, rule) in ir.rules_of(rel) {
        match recursive_literal(rule, rel).flatten() {
            Some(at) => steps.push((rule, at)),
            None => exits.push(rule),
        }
    }
    !exits.is_empty()
        && exits
            .iter()
            .all(|e| steps.iter().any(|(r, at)| is_step(e, r, *at, cols)))
        && steps
            .iter()
            .all(|(r, at)| exits.iter().any(|e| is_step(e, r, *at, cols)))
}

/// Whether exit rule `exit` is recursive rule `rule`'s step (see [`fuses`]): a renaming of
/// the exit's variables onto the rule's, one to one, makes the exit's body the rule's body
/// without its recursive literal (at `at`).
fn is_step(exit: &Rule, rule: &Rule, at: usize, cols: &Columns) -> bool {
    let Lit::Pos { args: rec, .. } = &rule.body[at] else {
        return false;
    };
    let mut to: FxHashMap<VarId, VarId> = FxHashMap::default();
    let mut taken: FxHashSet<VarId> = FxHashSet::default();
    let mut var = |e: VarId, r: VarId| match to.get(&e) {
        Some(&x) => x == r,
        None => taken.insert(r) && to.insert(e, r).is_none(),
    };
    let head_var = |a: &HeadArg| match a {
        HeadArg::Arg(Arg::Var(v)) => Some(*v),
        _ => None,
    };
    for (&k, &m) in cols.kept.iter().zip(&cols.moved) {
        let (Some(ek), Arg::Var(rk)) = (head_var(&exit.args[k]), rec[m]) else {
            return false;
        };
        let (Some(em), Some(rm)) = (head_var(&exit.args[m]), head_var(&rule.args[m])) else {
            return false;
        };
        if !var(ek, rk) || !var(em, rm) {
            return false;
        }
    }
    let rest = rule
        .body
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != at)
        .map(|(_, l)| l);
    if exit.body.len() + 1 != rule.body.len() {
        return false;
    }
    let mut args = |a: &[Arg], b: &[Arg]| {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| match (x, y) {
                (Arg::Var(x), Arg::Var(y)) => var(*x, *y),
                (x, y) => x == y,
            })
    };
    exit.body.iter().zip(rest).all(|(e, r)| match (e, r) {
        (Lit::Pos { rel: a, args: x }, Lit::Pos { rel: b, args: y })
        | (Lit::Neg { rel: a, args: x }, Lit::Neg { rel: b, args: y }) => a == b && args(x, y),
        (
            Lit::Cmp {
                op: a,
                left: l1,
                right: r1,
            },
            Lit::Cmp {
                op: b,
                left: l2,
                right: r2,
            },
        ) => a == b && args(&[*l1, *r1], &[*l2, *r2]),
        (
            Lit::Builtin {
                builtin: a,
                args: x,
            },
            Lit::Builtin {
                builtin: b,
                args: y,
            },
        ) => a.name() == b.name() && args(x, y),
        (Lit::OneOf { var: a, values: x }, Lit::OneOf { var: b, values: y }) => {
            x == y && args(&[Arg::Var(*a)], &[Arg::Var(*b)])
        }
        _ => false,
    })
}

/// Adds the reachability relation and the answering relation for one call `rel(args)` of
/// the goal, seeded by `prefix` (the goal's literals placed before it); returns the
/// answering relation.
///
/// When the exit rules are the recursive rules' steps ([`fuses`]), the walk holds what the
/// seeds reach by one step or more and the answer copies it: the seeds go into a relation of
/// their own, each recursive rule read backwards steps from a seed or from the walk, and no
/// exit rule is joined (`@linear.seed...(?s, ?s) :- ?s in ["f"]`, `@linear.left+...(?b, ?s)
/// :- @linear.seed...(?c, ?s), imports(?b, ?c)`, the same from `@linear.left+...(?c, ?s)`,
/// and `r'(?a, ?s) :- @linear.left+...(?a, ?s)`).
fn walk(
    out: &mut Ir,
    rel: RelId,
    cols: &Columns,
    args: &[Arg],
    prefix: &[Lit],
    goal: &Rule,
) -> RelId {
    let decl = out.relations[rel].clone();
    let m = cols.moved.len();
    let fused = fuses(out, rel, cols);
    let walk = Walk {
        form: cols.form(),
        moved: cols.moved.clone(),
        relation: decl.name.clone(),
        plus: fused,
    };
    let reach = out.relations.len();
    out.relations.push(RelDecl {
        name: walk.name(),
        arity: 2 * m,
        kind: RelKind::Derived,
    });
    let seeds = if fused {
        out.relations.push(RelDecl {
            name: walk.seed_name(),
            arity: 2 * m,
            kind: RelKind::Derived,
        });
        out.relations.len() - 1
    } else {
        reach
    };
    let answer = out.relations.len();
    out.relations.push(RelDecl {
        name: decl.name.clone(),
        arity: decl.arity,
        kind: RelKind::Derived,
    });
    // The seed: seeds(s, s) for each binding of the moved columns.
    let mut body = prefix.to_vec();
    let mut vars = goal.vars;
    let mut seed = Vec::with_capacity(m);
    for &c in &cols.moved {
        match args[c] {
            Arg::Const(k) => {
                body.push(Lit::OneOf {
                    var: vars,
                    values: vec![k],
                });
                seed.push(Arg::Var(vars));
                vars += 1;
            }
            a => seed.push(a),
        }
    }
    let head: Vec<HeadArg> = seed.iter().chain(&seed).map(|a| HeadArg::Arg(*a)).collect();
    out.rules.push(Rule {
        head: seeds,
        args: head,
        body,
        vars,
        names: goal.names.clone(),
    });
    if fused {
        // The answer: the walk, its values in the kept columns and the seeds in the moved.
        let mut args = vec![HeadArg::Arg(Arg::Wild); decl.arity];
        for (i, (&k, &c)) in cols.kept.iter().zip(&cols.moved).enumerate() {
            args[k] = HeadArg::Arg(Arg::Var(i));
            args[c] = HeadArg::Arg(Arg::Var(m + i));
        }
        out.rules.push(Rule {
            head: answer,
            args,
            body: vec![Lit::Pos {
                rel: reach,
                args: (0..2 * m).map(Arg::Var).collect(),
            }],
            vars: 2 * m,
            names: Vec::new(),
        });
    }
    let originals: Vec<Rule> = out.rules_of(rel).map(|(_, r)| r.clone()).collect();
    for rule in originals {
        let s: Vec<Arg> = (0..m).map(|j| Arg::Var(rule.vars + j)).collect();
        let moved_head: Vec<Arg> = cols
            .moved
            .iter()
            .map(|&c| match rule.args[c] {
                HeadArg::Arg(a) => a,
                HeadArg::Agg { .. } => Arg::Wild,
            })
            .collect();
        let from = |rel: RelId, moved: &[Arg]| Lit::Pos {
            rel,
            args: moved.iter().chain(&s).copied().collect(),
        };
        let mut push = |head, args, body| {
            out.rules.push(Rule {
                head,
                args,
                body,
                vars: rule.vars + m,
                names: rule.names.clone(),
            });
        };
        match recursive_literal(&rule, rel).flatten() {
            // A recursive rule read backwards: reach(body's moved, s) :- reach(head's moved,
            // s), rest; when fused, from the seeds too.
            Some(at) => {
                let Lit::Pos { args: rec, .. } = &rule.body[at] else {
                    continue;
                };
                let args: Vec<HeadArg> = cols
                    .moved
                    .iter()
                    .map(|&c| HeadArg::Arg(rec[c]))
                    .chain(s.iter().map(|a| HeadArg::Arg(*a)))
                    .collect();
                let sources = if fused {
                    vec![seeds, reach]
                } else {
                    vec![reach]
                };
                for source in sources {
                    let mut body = rule.body.clone();
                    body[at] = from(source, &moved_head);
                    push(reach, args.clone(), body);
                }
            }
            // An exit rule, for the exit facts whose moved values reach a seed (when fused,
            // the walk's steps answer instead).
            None if fused => {}
            None => {
                let mut args = rule.args.clone();
                for (j, &c) in cols.moved.iter().enumerate() {
                    args[c] = HeadArg::Arg(s[j]);
                }
                let mut body = rule.body.clone();
                body.push(from(reach, &moved_head));
                push(answer, args, body);
            }
        }
    }
    answer
}

/// Drops the rules the goal no longer reaches (the recursion's own, now read only through
/// the walk), so they are not computed.
fn prune(ir: &mut Ir) {
    let mut reached = vec![false; ir.relations.len()];
    reached[ir.goal] = true;
    let mut stack = vec![ir.goal];
    while let Some(rel) = stack.pop() {
        for (_, rule) in ir.rules_of(rel) {
            let mut lits: Vec<&Lit> = rule.body.iter().collect();
            while let Some(l) = lits.pop() {
                match l {
                    Lit::Pos { rel, .. } | Lit::Neg { rel, .. } if !reached[*rel] => {
                        reached[*rel] = true;
                        stack.push(*rel);
                    }
                    Lit::Agg { body, .. } => lits.extend(body.iter()),
                    _ => {}
                }
            }
        }
    }
    ir.rules.retain(|r| reached[r.head]);
}
