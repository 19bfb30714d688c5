//! Safety: every variable a rule or goal needs a value for gets one from a positive literal.
//!
//! A body's positive literals are its atoms of relations, an aggregate literal (which binds
//! its result) and a bound list (a goal's `bind`). Comparisons and builtins test and never
//! bind: each of their variables must be bound by a positive literal of the same body (inside
//! an aggregate's `{ }`, or by the enclosing body for a variable the `{ }` shares with it).
//! `not atom` must share a variable with the positive part; its other variables are
//! existential (`not imports(?p, ?any)`: no import at all), so they may appear nowhere else.
//! Every head variable, and the variable a head aggregate aggregates, must be bound by a
//! positive literal of the body.

use std::collections::{HashMap, HashSet};

use crate::front::ast::Span;
use crate::front::diagnostic::Diagnostic;
use crate::link::linked::{LHead, LLit, LRule, LTerm, occurrences};
use crate::link::vocab::BuiltinSig;

/// Which body a check is about, for messages.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// A rule's body.
    Rule,
    /// A goal.
    Goal,
    /// An aggregate literal's `{ }`.
    Aggregate,
}

impl Place {
    fn body(self) -> &'static str {
        match self {
            Place::Rule => "the body",
            Place::Goal => "the goal",
            Place::Aggregate => "the aggregate's { }",
        }
    }
}

/// What a checked body binds.
pub(crate) struct Level {
    /// The variables its positive literals bind.
    pub pos: HashSet<usize>,
    /// Its existential variables (only under `not`), with where each is written.
    pub existential: HashMap<usize, Span>,
}

/// The variables the positive literals of `body` bind (not inside aggregates' `{ }`).
fn positives(body: &[LLit]) -> HashSet<usize> {
    let mut out = HashSet::new();
    for lit in body {
        match lit {
            LLit::Pos { args, .. } => {
                out.extend(args.iter().filter_map(|t| match t {
                    LTerm::Var(s, _) => Some(*s),
                    _ => None,
                }));
            }
            LLit::OneOf { slot, .. } => {
                out.insert(*slot);
            }
            LLit::Agg { result, .. } => {
                out.insert(*result);
            }
            LLit::Neg { .. } | LLit::Builtin { .. } | LLit::Cmp { .. } => {}
        }
    }
    out
}

/// Whether `slot` is written under a `not` of `body` (outside aggregates).
fn under_not(body: &[LLit], slot: usize) -> bool {
    body.iter().any(|l| {
        matches!(l, LLit::Neg { args, .. }
            if args.iter().any(|t| matches!(t, LTerm::Var(s, _) if *s == slot)))
    })
}

/// Whether `slot` is written inside an aggregate literal's `{ }` of `body`.
fn in_aggregate(body: &[LLit], slot: usize) -> bool {
    body.iter().any(|l| match l {
        LLit::Agg { body, .. } => {
            let mut occ = Vec::new();
            occurrences(body, &mut occ);
            occ.iter().any(|(s, _)| *s == slot)
        }
        _ => false,
    })
}

/// Checks a rule: its head, then its body.
pub(crate) fn check_rule(rule: &LRule) -> Result<(), Diagnostic> {
    let pos = positives(&rule.body);
    let name = |s: usize| rule.names.get(s).map_or("?", String::as_str);
    for arg in &rule.args {
        let (slot, span) = match arg {
            LHead::Term(LTerm::Var(s, span)) => (*s, *span),
            LHead::Agg { over, span, .. } => (*over, *span),
            LHead::Term(LTerm::Const(_)) => continue,
            LHead::Term(LTerm::Wild(span)) => {
                return Err(Diagnostic::new(
                    "a head can't hold _: each of its arguments needs a value",
                    *span,
                )
                .with_fix("write a ?variable that the body binds, or a constant"));
            }
        };
        if pos.contains(&slot) {
            continue;
        }
        let v = name(slot);
        let (message, fix) = if under_not(&rule.body, slot) {
            (
                format!(
                    "?{v} in the head appears in the body only under \"not\", so it has no value"
                ),
                format!("use ?{v} in a positive atom of the body, or drop it from the head"),
            )
        } else if in_aggregate(&rule.body, slot) {
            (
                format!("?{v} in the head is bound only inside an aggregate's {{ }}"),
                format!(
                    "use ?{v} in a positive atom outside the {{ }} too, or aggregate in the \
                     head instead, grouped by ?{v}: head(?{v}, count(?x)) :- ..."
                ),
            )
        } else {
            (
                format!("?{v} in the head is not bound by the body"),
                format!("use ?{v} in a positive atom of the body, or drop it from the head"),
            )
        };
        return Err(Diagnostic::new(message, span).with_fix(fix));
    }
    check_body(&rule.body, &HashSet::new(), Place::Rule, &rule.names)?;
    Ok(())
}

/// Checks a goal's body; returns what it binds.
pub(crate) fn check_goal(body: &[LLit], names: &[String]) -> Result<Level, Diagnostic> {
    check_body(body, &HashSet::new(), Place::Goal, names)
}

/// Checks a body whose variables `outer` are bound by the enclosing body.
fn check_body(
    body: &[LLit],
    outer: &HashSet<usize>,
    place: Place,
    names: &[String],
) -> Result<Level, Diagnostic> {
    let pos = positives(body);
    let bound: HashSet<usize> = pos.union(outer).copied().collect();
    let b = Body {
        bound: &bound,
        place,
        names,
    };
    let mut existential: HashMap<usize, (Span, usize)> = HashMap::new();
    for (i, lit) in body.iter().enumerate() {
        match lit {
            LLit::Pos { .. } | LLit::OneOf { .. } => {}
            LLit::Cmp { left, right, .. } => b.comparison(left, right)?,
            LLit::Builtin { sig, args, .. } => b.builtin(sig, args)?,
            LLit::Neg { args, span, .. } => b.negation(i, args, *span, &mut existential)?,
            LLit::Agg {
                over,
                over_span,
                body: inner,
                shared,
                ..
            } => b.aggregate(*over, *over_span, inner, shared)?,
        }
    }
    Ok(Level {
        pos,
        existential: existential
            .into_iter()
            .map(|(s, (sp, _))| (s, sp))
            .collect(),
    })
}

/// A body being checked: the variables bound in it (by its positive literals, or from
/// outside), where it is written, and the variables' names.
struct Body<'a> {
    bound: &'a HashSet<usize>,
    place: Place,
    names: &'a [String],
}

impl Body<'_> {
    fn name(&self, s: usize) -> &str {
        self.names.get(s).map_or("?", String::as_str)
    }

    /// A comparison tests bound variables and constants, never `_`.
    fn comparison(&self, left: &LTerm, right: &LTerm) -> Result<(), Diagnostic> {
        let (bound, place) = (self.bound, self.place);
        let name = |s: usize| self.name(s);
        for t in [left, right] {
            match t {
                LTerm::Var(s, span) if !bound.contains(s) => {
                    let v = name(*s);
                    return Err(Diagnostic::new(
                        format!(
                            "?{v} in a comparison is not bound by a positive atom of {}",
                            place.body()
                        ),
                        *span,
                    )
                    .with_fix(format!(
                        "a comparison tests and never binds: use ?{v} in a positive \
                         atom of {} too",
                        place.body()
                    )));
                }
                LTerm::Wild(span) => {
                    return Err(Diagnostic::new(
                        "a comparison can't test _, which stands for no value",
                        *span,
                    )
                    .with_fix("compare a ?variable bound by a positive atom, or a constant"));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A builtin tests bound variables and constants, never `_`.
    fn builtin(&self, sig: &BuiltinSig, args: &[LTerm]) -> Result<(), Diagnostic> {
        let (bound, place) = (self.bound, self.place);
        let name = |s: usize| self.name(s);
        let b = sig.builtin.name();
        for (t, param) in args.iter().zip(sig.params) {
            match t {
                LTerm::Var(s, span) if !bound.contains(s) => {
                    let v = name(*s);
                    return Err(Diagnostic::new(
                        format!(
                            "{b} tests its argument {param}, but ?{v} is not bound by a \
                             positive atom of {}",
                            place.body()
                        ),
                        *span,
                    )
                    .with_fix(format!(
                        "builtins test values and never bind: use ?{v} in a positive \
                         atom of {} too",
                        place.body()
                    )));
                }
                LTerm::Wild(span) => {
                    return Err(Diagnostic::new(
                        format!("{b} can't take _ as its argument {param}"),
                        *span,
                    )
                    .with_fix("give it a ?variable bound by a positive atom, or a constant"));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// `not` (literal `i`) shares a variable with the positive part; its other variables are
    /// existential, each in one negation only.
    fn negation(
        &self,
        i: usize,
        args: &[LTerm],
        span: Span,
        existential: &mut HashMap<usize, (Span, usize)>,
    ) -> Result<(), Diagnostic> {
        let (bound, place) = (self.bound, self.place);
        let name = |s: usize| self.name(s);
        let span = &span;
        let vars: Vec<(usize, Span)> = args
            .iter()
            .filter_map(|t| match t {
                LTerm::Var(s, sp) => Some((*s, *sp)),
                _ => None,
            })
            .collect();
        if !vars.is_empty() && vars.iter().all(|(s, _)| !bound.contains(s)) {
            let mut listed: Vec<String> = Vec::new();
            for (s, _) in &vars {
                let v = format!("?{}", name(*s));
                if !listed.contains(&v) {
                    listed.push(v);
                }
            }
            let which = match listed.as_slice() {
                [one] => one.clone(),
                _ => format!("one of {}", listed.join(", ")),
            };
            return Err(Diagnostic::new(
                format!(
                    "\"not\" shares no variable with the positive atoms of {}",
                    place.body()
                ),
                *span,
            )
            .with_fix(format!(
                "\"not\" tests values bound elsewhere: use {which} in a positive atom \
                 of {} too, or write _ for a value that may be anything",
                place.body()
            )));
        }
        for (s, sp) in vars {
            if bound.contains(&s) {
                continue;
            }
            match existential.get(&s) {
                Some(&(_, at)) if at != i => {
                    let v = name(s);
                    return Err(Diagnostic::new(
                        format!(
                            "?{v} appears only under \"not\", in two negations; each \
                             would read it apart"
                        ),
                        sp,
                    )
                    .with_fix(format!(
                        "bind ?{v} with a positive atom, or give each \"not\" a variable \
                         of its own (or _)"
                    )));
                }
                Some(_) => {}
                None => {
                    existential.insert(s, (sp, i));
                }
            }
        }
        Ok(())
    }

    /// An aggregate's shared variables are bound outside it, and what it aggregates inside.
    fn aggregate(
        &self,
        over: usize,
        over_span: Span,
        inner: &[LLit],
        shared: &[usize],
    ) -> Result<(), Diagnostic> {
        let (bound, place, names) = (self.bound, self.place, self.names);
        let name = |s: usize| self.name(s);
        let (over, over_span) = (&over, &over_span);
        for &s in shared {
            if bound.contains(&s) {
                continue;
            }
            let mut occ = Vec::new();
            occurrences(inner, &mut occ);
            let span = occ
                .iter()
                .find(|(x, _)| *x == s)
                .map_or(*over_span, |(_, sp)| *sp);
            let v = name(s);
            return Err(Diagnostic::new(
                format!(
                    "?{v} is used inside the aggregate's {{ }} and outside it, but no \
                     positive atom outside binds it"
                ),
                span,
            )
            .with_fix(format!(
                "use ?{v} in a positive atom of {} outside the {{ }}, or rename it \
                 inside to make it the aggregate's own",
                place.body()
            )));
        }
        let shared: HashSet<usize> = shared.iter().copied().collect();
        let level = check_body(inner, &shared, Place::Aggregate, names)?;
        if !level.pos.contains(over) && !shared.contains(over) {
            let v = name(*over);
            return Err(Diagnostic::new(
                format!("?{v} is not bound by a positive atom of the aggregate's {{ }}"),
                *over_span,
            )
            .with_fix(format!(
                "aggregate a variable that an atom inside the {{ }} binds, or use ?{v} \
                 in one"
            )));
        }
        Ok(())
    }
}
