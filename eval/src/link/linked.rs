//! Linked rules: the syntax tree with names resolved, arities checked, variables numbered
//! and a goal's bound variables given their values. Safety is checked on this form
//! ([`crate::link::safety`]), and it lowers to the IR ([`crate::link::lower`]).
//!
//! Variables are numbered per rule (or goal). A variable of an aggregate literal's `{ }` that
//! occurs outside it (in the head, or in the enclosing body outside any other aggregate) is
//! the same variable there: the aggregate is computed for each of its values. Any other
//! variable of the `{ }` is local to that aggregate, with a number of its own.

use std::collections::{HashMap, HashSet};

use crate::data::value::Value;
use crate::front::ast::{self, AggFunc, CmpOp, Span};
use crate::front::diagnostic::Diagnostic;
use crate::link::compile::Bind;
use crate::link::resolve::{Resolved, Resolver, Target, arity_error};
use crate::link::vocab::BuiltinSig;

/// A term: a numbered variable (and where it is written), a constant, or `_`.
#[derive(Clone, Debug)]
pub(crate) enum LTerm {
    /// A variable.
    Var(usize, Span),
    /// A constant.
    Const(Value),
    /// `_`.
    Wild(Span),
}

/// A linked literal.
#[derive(Clone, Debug)]
pub(crate) enum LLit {
    /// A positive atom.
    Pos {
        rel: Target,
        args: Vec<LTerm>,
        span: Span,
    },
    /// `not atom`.
    Neg {
        rel: Target,
        args: Vec<LTerm>,
        span: Span,
    },
    /// A builtin test.
    Builtin {
        sig: &'static BuiltinSig,
        args: Vec<LTerm>,
    },
    /// A comparison.
    Cmp {
        op: CmpOp,
        left: LTerm,
        right: LTerm,
    },
    /// A bound variable ranging over values (from a goal's binds).
    OneOf { slot: usize, values: Vec<Value> },
    /// `?result = func(?over) : { body }`; `shared` are the variables of `body` that occur
    /// outside it.
    Agg {
        result: usize,
        func: AggFunc,
        distinct: bool,
        over: usize,
        over_span: Span,
        body: Vec<LLit>,
        shared: Vec<usize>,
    },
}

/// A linked head argument.
#[derive(Clone, Debug)]
pub(crate) enum LHead {
    /// A variable, a constant or `_`.
    Term(LTerm),
    /// An aggregate over the rule's solutions.
    Agg {
        func: AggFunc,
        distinct: bool,
        over: usize,
        span: Span,
    },
}

/// A linked rule.
#[derive(Clone, Debug)]
pub(crate) struct LRule {
    /// The relation it defines.
    pub head: Target,
    /// The head's arguments.
    pub args: Vec<LHead>,
    /// The body.
    pub body: Vec<LLit>,
    /// Each variable's name, by number.
    pub names: Vec<String>,
}

/// A linked goal.
#[derive(Clone, Debug)]
pub(crate) struct LGoal {
    /// The body.
    pub body: Vec<LLit>,
    /// Each variable's name, by number.
    pub names: Vec<String>,
    /// The numbers of the variables outside any aggregate's `{ }`, by name.
    pub top: HashMap<String, usize>,
}

/// The error for `list` where only a goal's columns may hold it.
pub(crate) fn list_error(span: Span) -> Diagnostic {
    Diagnostic::new(
        "list(...) makes a list, which only a goal's columns can hold",
        span,
    )
    .with_fix("use count, sum, min or max here, or list(...) after the goal's =>")
}

/// Links a rule that defines `head` (already resolved).
pub(crate) fn link_rule(
    res: &Resolver<'_>,
    rule: &ast::Rule,
    head: Target,
) -> Result<LRule, Diagnostic> {
    let mut l = Linker::new(res);
    let mut here = HashMap::new();
    for a in &rule.head.args {
        let name = match a {
            ast::HeadArg::Term(ast::Term::Var(v)) => &v.name,
            ast::HeadArg::Aggregate(agg) => &agg.var.name,
            ast::HeadArg::Term(_) => continue,
        };
        if !here.contains_key(name) {
            let slot = l.slot(name);
            here.insert(name.clone(), slot);
        }
    }
    let mut args = Vec::with_capacity(rule.head.args.len());
    for a in &rule.head.args {
        args.push(match a {
            ast::HeadArg::Term(t) => LHead::Term(l.term(t, &here)),
            ast::HeadArg::Aggregate(agg) => {
                if agg.func == AggFunc::List {
                    return Err(list_error(agg.span));
                }
                LHead::Agg {
                    func: agg.func,
                    distinct: agg.distinct,
                    over: here.get(&agg.var.name).copied().unwrap_or(0),
                    span: agg.var.span,
                }
            }
        });
    }
    let (body, _) = l.body(&rule.body, &here)?;
    Ok(LRule {
        head,
        args,
        body,
        names: l.names,
    })
}

/// Links a goal, giving the variables of `binds` their values: a single value replaces the
/// variable by a constant (except where the language needs a variable, an aggregate
/// literal's result or aggregated variable: there, as for a list, the variable ranges over
/// the values, bound where it is introduced).
pub(crate) fn link_goal(
    res: &Resolver<'_>,
    goal: &ast::Goal,
    binds: &HashMap<String, Bind>,
) -> Result<LGoal, Diagnostic> {
    let mut needs_var = HashSet::new();
    aggregate_vars(&goal.body, &mut needs_var);
    let mut l = Linker::new(res);
    for (name, b) in binds {
        match b {
            Bind::One(v) if !needs_var.contains(name.as_str()) => {
                l.ones.insert(name.clone(), v.clone());
            }
            Bind::One(v) => {
                l.lists.insert(name.clone(), vec![v.clone()]);
            }
            Bind::List(vs) => {
                l.lists.insert(name.clone(), vs.clone());
            }
        }
    }
    let (body, top) = l.body(&goal.body, &HashMap::new())?;
    Ok(LGoal {
        body,
        names: l.names,
        top,
    })
}

/// The names of aggregate literals' result and aggregated variables, at any depth.
fn aggregate_vars<'a>(body: &'a [ast::Literal], out: &mut HashSet<&'a str>) {
    for lit in body {
        if let ast::Literal::Aggregate(a) = lit {
            out.insert(&a.result.name);
            out.insert(&a.aggregate.var.name);
            aggregate_vars(&a.body, out);
        }
    }
}

/// The variables written in a body outside any aggregate's `{ }` (an aggregate literal's
/// result included), in order of first appearance, with repeats.
pub(crate) fn top_vars(body: &[ast::Literal]) -> Vec<&ast::Var> {
    let mut out = Vec::new();
    for lit in body {
        match lit {
            ast::Literal::Atom(a) | ast::Literal::Not { atom: a, .. } => {
                out.extend(a.args.iter().filter_map(ast::Term::as_var));
            }
            ast::Literal::Compare(c) => {
                out.extend([&c.left, &c.right].into_iter().filter_map(|t| t.as_var()));
            }
            ast::Literal::Aggregate(a) => out.push(&a.result),
        }
    }
    out
}

/// Every variable written in a body, at any depth, in order of first appearance, with
/// repeats.
pub(crate) fn all_vars(body: &[ast::Literal]) -> Vec<&ast::Var> {
    let mut out = Vec::new();
    for lit in body {
        match lit {
            ast::Literal::Aggregate(a) => {
                out.push(&a.result);
                out.push(&a.aggregate.var);
                out.extend(all_vars(&a.body));
            }
            other => out.extend(top_vars(std::slice::from_ref(other))),
        }
    }
    out
}

/// Every occurrence of a variable in a linked body, at any depth, with where it is written.
pub(crate) fn occurrences(body: &[LLit], out: &mut Vec<(usize, Span)>) {
    let term = |t: &LTerm, out: &mut Vec<(usize, Span)>| {
        if let LTerm::Var(s, span) = t {
            out.push((*s, *span));
        }
    };
    for lit in body {
        match lit {
            LLit::Pos { args, .. } | LLit::Neg { args, .. } | LLit::Builtin { args, .. } => {
                args.iter().for_each(|t| term(t, out));
            }
            LLit::Cmp { left, right, .. } => {
                term(left, out);
                term(right, out);
            }
            LLit::OneOf { .. } => {}
            LLit::Agg {
                over,
                over_span,
                body,
                ..
            } => {
                out.push((*over, *over_span));
                occurrences(body, out);
            }
        }
    }
}

struct Linker<'a, 'r> {
    res: &'a Resolver<'r>,
    /// Variables replaced by a constant.
    ones: HashMap<String, Value>,
    /// Variables ranging over values.
    lists: HashMap<String, Vec<Value>>,
    names: Vec<String>,
}

impl<'a, 'r> Linker<'a, 'r> {
    fn new(res: &'a Resolver<'r>) -> Self {
        Linker {
            res,
            ones: HashMap::new(),
            lists: HashMap::new(),
            names: Vec::new(),
        }
    }

    fn slot(&mut self, name: &str) -> usize {
        self.names.push(name.to_owned());
        self.names.len() - 1
    }

    /// Links a body; `visible` are the variables of the enclosing scopes. Returns the
    /// literals and the variables visible in this body.
    fn body(
        &mut self,
        body: &[ast::Literal],
        visible: &HashMap<String, usize>,
    ) -> Result<(Vec<LLit>, HashMap<String, usize>), Diagnostic> {
        let mut here = visible.clone();
        let mut lits = Vec::with_capacity(body.len());
        for v in top_vars(body) {
            if self.ones.contains_key(&v.name) || here.contains_key(&v.name) {
                continue;
            }
            let slot = self.slot(&v.name);
            here.insert(v.name.clone(), slot);
            if let Some(values) = self.lists.get(&v.name) {
                lits.push(LLit::OneOf {
                    slot,
                    values: values.clone(),
                });
            }
        }
        for lit in body {
            lits.push(self.literal(lit, &here)?);
        }
        Ok((lits, here))
    }

    fn term(&mut self, t: &ast::Term, here: &HashMap<String, usize>) -> LTerm {
        match t {
            ast::Term::Var(v) => {
                if let Some(value) = self.ones.get(&v.name) {
                    return LTerm::Const(value.clone());
                }
                let slot = match here.get(&v.name) {
                    Some(&s) => s,
                    None => self.slot(&v.name),
                };
                LTerm::Var(slot, v.span)
            }
            ast::Term::Wildcard(span) => LTerm::Wild(*span),
            other => LTerm::Const(other.constant().unwrap_or(Value::Absent)),
        }
    }

    fn terms(&mut self, ts: &[ast::Term], here: &HashMap<String, usize>) -> Vec<LTerm> {
        ts.iter().map(|t| self.term(t, here)).collect()
    }

    /// Resolves an atom's relation and checks its arity.
    fn atom(&self, a: &ast::Atom) -> Result<Resolved, Diagnostic> {
        let r = self.res.resolve(&a.relation)?;
        let columns: Vec<&str> = match r {
            Resolved::Rel(t) => self.res.columns(t).iter().map(String::as_str).collect(),
            Resolved::Builtin(b) => b.params.to_vec(),
        };
        if columns.len() != a.args.len() {
            let sig = format!("{}({})", a.relation.text, columns.join(", "));
            let spans: Vec<Span> = a.args.iter().map(ast::Term::span).collect();
            return Err(arity_error(&sig, columns.len(), &spans, a.span));
        }
        Ok(r)
    }

    fn literal(
        &mut self,
        lit: &ast::Literal,
        here: &HashMap<String, usize>,
    ) -> Result<LLit, Diagnostic> {
        Ok(match lit {
            ast::Literal::Atom(a) => {
                let args = self.terms(&a.args, here);
                match self.atom(a)? {
                    Resolved::Rel(rel) => LLit::Pos {
                        rel,
                        args,
                        span: a.span,
                    },
                    Resolved::Builtin(sig) => LLit::Builtin { sig, args },
                }
            }
            ast::Literal::Not { atom, span } => {
                let args = self.terms(&atom.args, here);
                match self.atom(atom)? {
                    Resolved::Rel(rel) => LLit::Neg {
                        rel,
                        args,
                        span: *span,
                    },
                    Resolved::Builtin(sig) => {
                        return Err(Diagnostic::new(
                            format!(
                                "\"not\" can't negate the builtin \"{}\"",
                                sig.builtin.name()
                            ),
                            *span,
                        )
                        .with_fix(
                            "\"not\" applies to a relation's atom; test the opposite with a \
                             comparison, or negate a relation that holds what the builtin tests",
                        ));
                    }
                }
            }
            ast::Literal::Compare(c) => LLit::Cmp {
                op: c.op,
                left: self.term(&c.left, here),
                right: self.term(&c.right, here),
            },
            ast::Literal::Aggregate(a) => self.aggregate(a, here)?,
        })
    }

    fn aggregate(
        &mut self,
        a: &ast::AggregateLiteral,
        here: &HashMap<String, usize>,
    ) -> Result<LLit, Diagnostic> {
        let agg = &a.aggregate;
        if agg.func == AggFunc::List {
            return Err(list_error(agg.span));
        }
        if let Some(inside) = all_vars(&a.body)
            .into_iter()
            .find(|v| v.name == a.result.name)
        {
            return Err(Diagnostic::new(
                format!(
                    "{} receives the aggregate's value, so it can't appear inside its {{ }}",
                    a.result
                ),
                inside.span,
            )
            .with_fix(format!(
                "give the result a name of its own, such as ?{}_{}",
                agg.func, agg.var.name
            )));
        }
        let (body, inner) = self.body(&a.body, here)?;
        let Some(&over) = inner.get(&agg.var.name) else {
            return Err(Diagnostic::new(
                format!("{} does not appear in the aggregate's {{ }}", agg.var),
                agg.var.span,
            )
            .with_fix(format!(
                "aggregate a variable that an atom inside the {{ }} binds, or use {} there",
                agg.var
            )));
        };
        let result = match here.get(&a.result.name) {
            Some(&s) => s,
            None => self.slot(&a.result.name),
        };
        let outer: HashSet<usize> = here.values().copied().collect();
        let mut occ = Vec::new();
        occurrences(&body, &mut occ);
        let mut shared: Vec<usize> = occ
            .into_iter()
            .map(|(s, _)| s)
            .filter(|s| outer.contains(s))
            .collect();
        shared.sort_unstable();
        shared.dedup();
        Ok(LLit::Agg {
            result,
            func: agg.func,
            distinct: agg.distinct,
            over,
            over_span: agg.var.span,
            body,
            shared,
        })
    }
}
