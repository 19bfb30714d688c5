//! Demand: the magic-sets rewrite, so a goal that binds an argument of a derived relation
//! computes only what that binding reaches.
//!
//! `deps.depends_on("app", ?d)` asks for the pairs starting at `app`. The rewrite gives each
//! derived relation an adornment per call pattern (which arguments arrive bound), adds a
//! magic relation holding the bound arguments each call pattern is asked for, guards every
//! rule of an adorned relation with its magic relation, and derives the magic facts from the
//! bindings that flow left to right through the rule bodies (sideways information passing,
//! in the order the planner would join them). Relations read under `not` or inside an
//! aggregate are computed whole, so stratification is unchanged.
//!
//! Adorned relations keep their name, so witnesses print as written; magic relations are
//! named `@magic...` and witnesses leave them out (see [`is_internal`]).

use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::{Arg, HeadArg, Ir, Lit, RelDecl, RelId, RelKind, Rule, VarId};

/// Whether a relation is the rewrite's own (its facts are never shown as premises).
pub fn is_internal(name: &str) -> bool {
    name.starts_with('@')
}

type Adornment = Vec<bool>;

struct Rewriter<'a> {
    ir: &'a Ir,
    out: Ir,
    adorned: FxHashMap<(RelId, Adornment), RelId>,
    magic: FxHashMap<(RelId, Adornment), RelId>,
    /// Relations whose original rules are in the output as written.
    full_done: Vec<bool>,
    queue: Vec<(RelId, Adornment, RelId)>,
    /// Relations that may be computed by demand: none of the rules they depend on (their
    /// own included) uses negation or an aggregate.
    eligible: Vec<bool>,
    /// Relations some call asks for with every argument free: computed whole anyway, so
    /// every call of theirs reads that one computation instead of a demand variant.
    free: Vec<bool>,
    /// Per relation, the indexes of the rules that define it (so each lookup costs the
    /// relation's rules, not the program's).
    by_head: Vec<Vec<usize>>,
}

/// Per relation, the indexes of the rules whose head it is.
fn by_head(ir: &Ir) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); ir.relations.len()];
    for (i, r) in ir.rules.iter().enumerate() {
        out[r.head].push(i);
    }
    out
}

/// The derived relations whose whole dependency closure is positive.
fn eligible(ir: &Ir) -> Vec<bool> {
    let n = ir.relations.len();
    let mut ok = vec![true; n];
    for r in &ir.rules {
        let impure = r.aggregates()
            || r.body.iter().any(|l| match l {
                Lit::Neg { rel, .. } => ir.relations[*rel].kind == RelKind::Derived,
                Lit::Agg { .. } => true,
                _ => false,
            });
        if impure {
            ok[r.head] = false;
        }
    }
    // Propagate: a relation using an ineligible one is ineligible. A worklist over the
    // rules that read each relation keeps this linear in the program's size.
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, r) in ir.rules.iter().enumerate() {
        for l in &r.body {
            if let Lit::Pos { rel, .. } = l {
                readers[*rel].push(i);
            }
        }
    }
    let mut stack: Vec<usize> = (0..n).filter(|&rel| !ok[rel]).collect();
    while let Some(rel) = stack.pop() {
        for &i in &readers[rel] {
            let head = ir.rules[i].head;
            if ok[head] {
                ok[head] = false;
                stack.push(head);
            }
        }
    }
    ok
}

/// Rewrites `ir` for demand when its goal binds an argument of a derived relation; returns
/// `None` when there is nothing to gain (the program is then run as it is).
pub fn rewrite(ir: &Ir) -> Option<Ir> {
    // First pass: which relations are called with every argument free somewhere.
    let first = Rewriter::run(ir, vec![false; ir.relations.len()]);
    let mut free = vec![false; ir.relations.len()];
    for (rel, adornment) in first.adorned.keys() {
        if adornment.iter().all(|&b| !b) {
            free[*rel] = true;
        }
    }
    if !free.contains(&true) {
        return (!first.magic.is_empty()).then_some(first.out);
    }
    // A relation on a cycle with one computed whole is computed whole too: everything the
    // cycle's calls ask of it feeds the whole computation, so demand would trim only what
    // nothing asks for, at the price of a magic relation as large as the calls (Andersen
    // points-to: `heap` called with its object bound from `pt`, which is asked for whole).
    let cycles = crate::link::strata::cycles(ir);
    let whole: FxHashSet<usize> = (0..free.len())
        .filter(|&b| free[b])
        .filter_map(|b| cycles[b])
        .collect();
    for (f, c) in free.iter_mut().zip(&cycles) {
        *f |= c.is_some_and(|c| whole.contains(&c));
    }
    let second = Rewriter::run(ir, free);
    (!second.magic.is_empty()).then_some(second.out)
}

impl<'a> Rewriter<'a> {
    /// Rewrites every rule the goal reaches, relations in `free` computed whole.
    fn run(ir: &'a Ir, free: Vec<bool>) -> Rewriter<'a> {
        let mut r = Rewriter {
            ir,
            out: Ir {
                relations: ir.relations.clone(),
                constants: ir.constants.clone(),
                rules: Vec::new(),
                goal: ir.goal,
            },
            adorned: FxHashMap::default(),
            magic: FxHashMap::default(),
            full_done: vec![false; ir.relations.len()],
            queue: Vec::new(),
            eligible: eligible(ir),
            free,
            by_head: by_head(ir),
        };
        for i in r.by_head[ir.goal].clone() {
            let rule = &ir.rules[i];
            let rewritten = r.rule(rule, ir.goal, &vec![false; rule.args.len()], None);
            r.out.rules.push(rewritten);
        }
        while let Some((rel, adornment, new)) = r.queue.pop() {
            r.adorn_rules(rel, &adornment, new);
        }
        r
    }

    /// Makes sure `rel`'s original rules, and those of every relation they read, are in the
    /// output as written, under their own ids: computed whole, and never by demand, so
    /// nothing they feed (through `not` or an aggregate) can depend on a magic relation.
    fn verbatim(&mut self, rel: RelId) {
        let mut stack = vec![rel];
        while let Some(rel) = stack.pop() {
            if self.full_done[rel] || self.ir.relations[rel].kind == RelKind::Base {
                continue;
            }
            self.full_done[rel] = true;
            for &i in &self.by_head[rel] {
                let rule = &self.ir.rules[i];
                self.out.rules.push(rule.clone());
                let mut lits: Vec<&Lit> = rule.body.iter().collect();
                while let Some(l) = lits.pop() {
                    match l {
                        Lit::Pos { rel, .. } | Lit::Neg { rel, .. } => stack.push(*rel),
                        Lit::Agg { body, .. } => lits.extend(body.iter()),
                        _ => {}
                    }
                }
            }
        }
    }

    /// The relation for `rel` called with `adornment`, queued for rewriting if new. A
    /// relation that may not be computed by demand is computed whole, as written.
    fn adorned(&mut self, rel: RelId, adornment: &Adornment) -> RelId {
        if !self.eligible[rel] {
            self.verbatim(rel);
            return rel;
        }
        if let Some(&id) = self.adorned.get(&(rel, adornment.clone())) {
            return id;
        }
        let decl = &self.ir.relations[rel];
        let id = self.out.relations.len();
        self.out.relations.push(RelDecl {
            name: decl.name.clone(),
            arity: decl.arity,
            kind: RelKind::Derived,
        });
        self.adorned.insert((rel, adornment.clone()), id);
        self.queue.push((rel, adornment.clone(), id));
        id
    }

    fn magic_rel(&mut self, rel: RelId, adornment: &Adornment) -> RelId {
        if let Some(&id) = self.magic.get(&(rel, adornment.clone())) {
            return id;
        }
        let pattern: String = adornment
            .iter()
            .map(|&b| if b { 'b' } else { 'f' })
            .collect();
        let id = self.out.relations.len();
        self.out.relations.push(RelDecl {
            name: format!("@magic.{}.{pattern}", self.ir.relations[rel].name),
            arity: adornment.iter().filter(|&&b| b).count(),
            kind: RelKind::Derived,
        });
        self.magic.insert((rel, adornment.clone()), id);
        id
    }

    fn adorn_rules(&mut self, rel: RelId, adornment: &Adornment, new: RelId) {
        let ir = self.ir;
        let guard = adornment.iter().any(|&b| b).then_some(rel);
        for i in self.by_head[rel].clone() {
            let mut rewritten = self.rule(&ir.rules[i], new, adornment, guard);
            rewritten.head = new;
            self.out.rules.push(rewritten);
        }
    }

    /// Rewrites one rule for a head called with `adornment` (all free: no magic guard).
    fn rule(
        &mut self,
        rule: &Rule,
        head: RelId,
        adornment: &Adornment,
        orig: Option<RelId>,
    ) -> Rule {
        let mut bound = vec![false; rule.vars];
        let mut prefix: Vec<Lit> = Vec::new();
        if let Some(orig) = orig {
            let args: Vec<Arg> = rule
                .args
                .iter()
                .zip(adornment)
                .filter(|(_, b)| **b)
                .map(|(a, _)| match a {
                    HeadArg::Arg(a) => *a,
                    HeadArg::Agg { .. } => Arg::Wild,
                })
                .collect();
            for a in &args {
                if let Arg::Var(v) = a {
                    bound[*v] = true;
                }
            }
            let m = self.magic_rel(orig, adornment);
            prefix.push(Lit::Pos { rel: m, args });
        }
        // Sideways information passing: positive literals and lists, most bound first.
        let mut body: Vec<Option<Lit>> = rule.body.iter().cloned().map(Some).collect();
        let mut done = vec![false; body.len()];
        while let Some(i) = next_binding(&rule.body, &bound, &done) {
            done[i] = true;
            match &rule.body[i] {
                Lit::Pos { rel, args } if self.ir.relations[*rel].kind == RelKind::Derived => {
                    let beta: Adornment = args
                        .iter()
                        .map(|a| !self.free[*rel] && is_bound(a, &bound))
                        .collect();
                    let target = self.adorned(*rel, &beta);
                    if target != *rel && beta.iter().any(|&b| b) {
                        let m = self.magic_rel(*rel, &beta);
                        let margs: Vec<Arg> = args
                            .iter()
                            .zip(&beta)
                            .filter(|(_, b)| **b)
                            .map(|(a, _)| *a)
                            .collect();
                        self.out.rules.push(Rule {
                            head: m,
                            args: margs.into_iter().map(HeadArg::Arg).collect(),
                            body: prefix.clone(),
                            vars: rule.vars,
                            names: rule.names.clone(),
                        });
                    }
                    let lit = Lit::Pos {
                        rel: target,
                        args: args.clone(),
                    };
                    prefix.push(lit.clone());
                    body[i] = Some(lit);
                    bind(args, &mut bound);
                }
                lit @ Lit::Pos { args, .. } => {
                    prefix.push(lit.clone());
                    bind(args, &mut bound);
                }
                lit @ Lit::OneOf { var, .. } => {
                    prefix.push(lit.clone());
                    bound[*var] = true;
                }
                _ => {}
            }
        }
        // Negated and aggregated relations are computed whole.
        for l in body.iter_mut().flatten() {
            self.whole(l);
        }
        let mut out_body: Vec<Lit> = prefix
            .into_iter()
            .take(usize::from(orig.is_some()))
            .collect();
        out_body.extend(body.into_iter().flatten());
        Rule {
            head,
            args: rule.args.clone(),
            body: out_body,
            vars: rule.vars,
            names: rule.names.clone(),
        }
    }

    fn whole(&mut self, lit: &Lit) {
        match lit {
            Lit::Neg { rel, .. } => self.verbatim(*rel),
            Lit::Agg { body, .. } => {
                for l in body {
                    match l {
                        Lit::Pos { rel, .. } | Lit::Neg { rel, .. } => self.verbatim(*rel),
                        other => self.whole(other),
                    }
                }
            }
            _ => {}
        }
    }
}

/// The next literal of `body` to pass bindings through (sideways information passing): a
/// list first, then the positive literal with an argument bound (a constant or a variable
/// bound before) and the fewest free ones, then one with none bound; in written order
/// among equals. `None` when every positive literal and list is `done`.
///
/// A literal with nothing bound (a node's type, `file(?a)`) comes after those reached
/// from the bound values: placed first, it would bind its variable to every value and
/// make every later call bound by all of them.
pub(crate) fn next_binding(body: &[Lit], bound: &[bool], done: &[bool]) -> Option<usize> {
    (0..body.len())
        .filter(|&i| !done[i])
        .filter_map(|i| match &body[i] {
            Lit::OneOf { .. } => Some((false, 0usize, i)),
            Lit::Pos { args, .. } => {
                let nb = args.iter().filter(|a| is_bound(a, bound)).count();
                Some((nb == 0, 1 + args.len() - nb, i))
            }
            _ => None,
        })
        .min()
        .map(|(_, _, i)| i)
}

pub(crate) fn is_bound(a: &Arg, bound: &[bool]) -> bool {
    match a {
        Arg::Const(_) => true,
        Arg::Var(v) => bound[*v],
        Arg::Wild => false,
    }
}

fn bind(args: &[Arg], bound: &mut [bool]) {
    for a in args {
        if let Arg::Var(v) = a {
            bound[*v as VarId] = true;
        }
    }
}
