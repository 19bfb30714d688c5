//! Compiling `WHERE` conditions and the values they compare. A condition becomes a set of
//! conjunctions (its disjunctive form): `OR` adds conjunctions, `NOT` is pushed down to the
//! comparisons (the opposite operator), tests (`not` of a helper relation) and patterns.

use super::ast::{Cmp, Expr, Lit, Pattern, StrOp};
use super::compile::{Binding, Compiler};
use super::program::{Conj, L, T, atom};
use crate::front::diagnostic::Diagnostic;

type R<T> = Result<T, Diagnostic>;

/// Conjunctions over this many are refused (a condition whose disjunctive form explodes).
const MAX_CONJS: usize = 256;

impl Compiler<'_> {
    /// The conjunctions in which `e` (or, with `neg`, its negation) holds, each extending `c`.
    pub(super) fn cond(&mut self, e: &Expr, c: Conj, neg: bool) -> R<Vec<Conj>> {
        let out = match e {
            Expr::And(a, b) | Expr::Or(a, b) => {
                let conjunction = matches!(e, Expr::And(..)) != neg;
                if conjunction {
                    let mut out = Vec::new();
                    for c2 in self.cond(a, c, neg)? {
                        out.extend(self.cond(b, c2, neg)?);
                    }
                    out
                } else {
                    let mut out = self.cond(a, c.clone(), neg)?;
                    out.extend(self.cond(b, c, neg)?);
                    out
                }
            }
            Expr::Not(x, _) => self.cond(x, c, !neg)?,
            Expr::Lit(Lit::Bool(b), _) => {
                if *b != neg {
                    vec![c]
                } else {
                    vec![]
                }
            }
            Expr::Lit(Lit::Null, _) => vec![],
            Expr::Cmp(op, a, b, _) => {
                let mut c = c;
                let ta = self.term(a, &mut c)?;
                let tb = self.term(b, &mut c)?;
                if ta == T::Absent || tb == T::Absent {
                    return Ok(vec![]);
                }
                let op = if neg { opposite(*op) } else { *op };
                c.lits.push(L::Cmp(op_text(op), ta, tb));
                vec![c]
            }
            Expr::Str(op, a, b, _) => {
                let mut c = c;
                let ta = self.term(a, &mut c)?;
                let tb = match (op, &**b) {
                    (StrOp::Regex, Expr::Lit(Lit::Str(s), _)) => T::Str(format!("^(?:{s})$")),
                    (StrOp::Regex, Expr::Param(p)) => {
                        self.regex_params.insert(p.name.clone());
                        self.term(b, &mut c)?
                    }
                    _ => self.term(b, &mut c)?,
                };
                if ta == T::Absent || tb == T::Absent {
                    return Ok(vec![]);
                }
                let name = match op {
                    StrOp::Starts => "str.prefix",
                    StrOp::Ends => "str.suffix",
                    StrOp::Contains => "str.contains",
                    StrOp::Regex => "str.match",
                };
                let test = L::Test(name, vec![ta, tb]);
                if neg {
                    self.negate(c, test)?
                } else {
                    c.lits.push(test);
                    vec![c]
                }
            }
            Expr::In(a, list, span) => match &**list {
                Expr::List(items, _) => {
                    let mut out = Vec::new();
                    if neg {
                        let mut cur = vec![c];
                        for i in items {
                            let eq = Expr::Cmp(Cmp::Eq, a.clone(), Box::new(i.clone()), *span);
                            let mut next = Vec::new();
                            for c2 in cur {
                                next.extend(self.cond(&eq, c2, true)?);
                            }
                            cur = next;
                        }
                        out = cur;
                    } else {
                        for i in items {
                            let eq = Expr::Cmp(Cmp::Eq, a.clone(), Box::new(i.clone()), *span);
                            out.extend(self.cond(&eq, c.clone(), false)?);
                        }
                    }
                    out
                }
                Expr::Param(p) => {
                    if neg {
                        return Err(Diagnostic::new("NOT ... IN $list is not supported", *span)
                            .with_fix("write the values in the query: NOT x IN ['a', 'b']"));
                    }
                    let mut c = c;
                    let ta = self.term(a, &mut c)?;
                    let tp = self.param(p)?;
                    c.lits.push(L::Cmp("=", ta, tp));
                    vec![c]
                }
                other => {
                    return Err(Diagnostic::new(
                        "IN takes a list: [a, b] or a $parameter",
                        other.span(),
                    )
                    .with_fix("write x IN ['a', 'b']"));
                }
            },
            Expr::IsNull(a, not, _) => {
                let null = *not == neg;
                self.is_null(a, c, null)?
            }
            Expr::Pattern(p) => self.pattern_pred(p, c, neg)?,
            e => {
                return Err(Diagnostic::new(
                    "WHERE takes a condition: a comparison, a string test, IN, IS NULL or a pattern",
                    e.span(),
                )
                .with_fix("compare the value: WHERE n.name = 'x'"));
            }
        };
        if out.len() > MAX_CONJS {
            return Err(Diagnostic::new(
                format!("the condition has more than {MAX_CONJS} alternatives"),
                e.span(),
            )
            .with_fix("simplify the ORs, or use IN [...]"));
        }
        Ok(out)
    }

    /// `e IS NULL` (or, with `null` false, `IS NOT NULL`) in `c`.
    fn is_null(&mut self, e: &Expr, mut c: Conj, null: bool) -> R<Vec<Conj>> {
        if let Expr::Prop(v, k) = e
            && let Some(Binding::Node(t, labels)) = self.scope.get(&v.name).cloned()
            && !c.absent.contains(&v.name)
            && !self.is_identity(&labels, &k.name)
            && self.column(&t, &labels, &k.name, &mut c.clone()).is_none()
            && let Some(a) = self.graph.attr(&k.name)
        {
            c.lits.push(L::Atom {
                rel: a.relation.clone(),
                args: vec![t, T::Wild],
                neg: null,
            });
            return Ok(vec![c]);
        }
        let t = self.term(e, &mut c)?;
        match t {
            T::Absent => Ok(if null { vec![c] } else { vec![] }),
            T::Var(_) => {
                if null {
                    c.lits.push(L::Test("absent", vec![t]));
                } else {
                    c.lits.push(L::Cmp("=", t.clone(), t));
                }
                Ok(vec![c])
            }
            _ => Ok(if null { vec![] } else { vec![c] }),
        }
    }

    /// A pattern as a condition: a helper relation over the bound variables it reads (or
    /// the one atom it is), positive or under `not`.
    fn pattern_pred(&mut self, p: &Pattern, mut c: Conj, neg: bool) -> R<Vec<Conj>> {
        let mut pc = Conj::default();
        let outer: Vec<String> = c.bound();
        self.pattern(p, &mut pc, false)?;
        // Unnamed nodes that appear once are wildcards.
        let mut counts = std::collections::HashMap::new();
        for l in &pc.lits {
            let args: &[T] = match l {
                L::Atom { args, .. } | L::Test(_, args) => args,
                L::Label(i) => &pc.labels[*i].1,
                L::Cmp(..) | L::Count { .. } => &[],
            };
            for a in args {
                if let T::Var(v) = a {
                    *counts.entry(v.clone()).or_insert(0) += 1;
                }
            }
        }
        let shared: Vec<String> = pc
            .vars()
            .into_iter()
            .filter(|v| outer.contains(v) && !self.params.contains_key(v))
            .collect();
        let atoms = pc.lits.len();
        if atoms == 1
            && let Some(L::Atom { rel, args, .. }) = pc.lits.first()
        {
            {
                let args = args
                    .iter()
                    .map(|a| match a {
                        T::Var(v) if !shared.contains(v) && counts.get(v) == Some(&1) => T::Wild,
                        a => a.clone(),
                    })
                    .collect();
                c.lits.push(L::Atom {
                    rel: rel.clone(),
                    args,
                    neg,
                });
                return Ok(vec![c]);
            }
        }
        let rel = self.helper("pp");
        let head: Vec<T> = shared.iter().map(|v| T::Var(v.clone())).collect();
        self.rule(&rel, &head, &pc);
        c.lits.push(L::Atom {
            rel,
            args: head,
            neg,
        });
        Ok(vec![c])
    }

    /// `c` where `test` does not hold: a helper relation over the test's variables, bound by
    /// the positive literals of `c`, under `not`.
    fn negate(&mut self, mut c: Conj, test: L) -> R<Vec<Conj>> {
        let L::Test(_, args) = &test else {
            return Ok(vec![c]);
        };
        let vars: Vec<T> = args
            .iter()
            .filter(|a| matches!(a, T::Var(_)))
            .cloned()
            .collect();
        let mut body = Conj {
            lits: c
                .lits
                .iter()
                .filter(|l| matches!(l, L::Atom { neg: false, .. } | L::Label(_)))
                .cloned()
                .collect(),
            labels: c.labels.clone(),
            absent: Default::default(),
        };
        body.lits.push(test.clone());
        let rel = self.helper("not");
        self.rules
            .push(format!("{} :- {}", atom(&rel, &vars), body.render()));
        c.lits.push(L::Atom {
            rel,
            args: vars,
            neg: true,
        });
        Ok(vec![c])
    }

    /// The term of a value in `c`: a literal, a parameter, a node, a property (adding the
    /// attribute atom it needs), or a `WITH` value.
    pub(super) fn term(&mut self, e: &Expr, c: &mut Conj) -> R<T> {
        match e {
            Expr::Lit(Lit::Str(s), _) => Ok(T::Str(s.clone())),
            Expr::Lit(Lit::Num(n), _) => Ok(T::Num(*n)),
            Expr::Lit(Lit::Null, _) => Ok(T::Absent),
            Expr::Lit(Lit::Bool(_), s) => Err(Diagnostic::new(
                "true and false are not values the store holds",
                *s,
            )
            .with_fix("compare with the text 'true' or 'false' if that is what was stored")),
            Expr::Param(p) => self.param(p),
            Expr::Var(v) => match self.scope.get(&v.name) {
                _ if c.absent.contains(&v.name) => Ok(T::Absent),
                Some(Binding::Node(t, _) | Binding::Value(t)) => Ok(t.clone()),
                Some(Binding::Rel) => Err(Diagnostic::new(
                    format!("{} is a relationship, which has no value here", v.name),
                    v.span,
                )
                .with_fix("answer the nodes at its ends instead")),
                None => Err(self.unbound(&v.name, v.span)),
            },
            Expr::Prop(v, k) => {
                if c.absent.contains(&v.name) {
                    return Ok(T::Absent);
                }
                let (t, labels) = match self.scope.get(&v.name) {
                    Some(Binding::Node(t, l)) => (t.clone(), l.clone()),
                    Some(_) => {
                        return Err(Diagnostic::new(
                            format!("{} is not a node, so it has no properties", v.name),
                            v.span,
                        ));
                    }
                    None => return Err(self.unbound(&v.name, v.span)),
                };
                if let Some((i, col)) = self.column(&t, &labels, &k.name, c) {
                    let label = &self.graph.labels[labels.iter().copied().find(|l| self.graph.labels[*l].relation == c.labels[i].0).unwrap_or(0)];
                    if col == label.id {
                        return Ok(t);
                    }
                    if let T::Wild = c.labels[i].1[col] {
                        let name = format!("{}_{}", t.var().unwrap_or("n"), k.name);
                        let var = match self.attr_vars.get(&(term_key(&t), k.name.clone())) {
                            Some(v) => v.clone(),
                            None => {
                                let v = self.fresh(&name);
                                self.attr_vars.insert((term_key(&t), k.name.clone()), v.clone());
                                self.prop_vars.insert(v.clone());
                                v
                            }
                        };
                        c.labels[i].1[col] = T::Var(var);
                    }
                    return Ok(c.labels[i].1[col].clone());
                }
                if self.is_identity(&labels, &k.name) {
                    return Ok(t);
                }
                let Some(a) = self.graph.attr(&k.name) else {
                    return Err(self.unknown_property(&labels, k));
                };
                let rel = a.relation.clone();
                let key = (term_key(&t), k.name.clone());
                let var = match self.attr_vars.get(&key) {
                    Some(v) => v.clone(),
                    None => {
                        let base = format!("{}_{}", t.var().unwrap_or("n"), k.name);
                        let v = self.fresh(&base);
                        self.attr_vars.insert(key, v.clone());
                        self.prop_vars.insert(v.clone());
                        v
                    }
                };
                let present = c.lits.iter().any(|l| {
                    matches!(l, L::Atom { rel: r, args, neg: false } if *r == rel && args.first() == Some(&t) && args.get(1) == Some(&T::Var(var.clone())))
                });
                if !present {
                    c.lits.push(L::Atom {
                        rel,
                        args: vec![t, T::Var(var.clone())],
                        neg: false,
                    });
                }
                Ok(T::Var(var))
            }
            Expr::Call { name, args, .. } if name.name.eq_ignore_ascii_case("id") => {
                match args.as_slice() {
                    [Expr::Var(v)] => match self.scope.get(&v.name) {
                        Some(Binding::Node(..)) => self.term(&args[0], c),
                        _ => Err(Diagnostic::new("id takes a node", v.span)),
                    },
                    _ => Err(Diagnostic::new("id takes one node variable", name.span)),
                }
            }
            Expr::Call { name, .. } if super::compile::is_aggregate(e) => Err(Diagnostic::new(
                format!("{} aggregates, so it belongs in RETURN or WITH", name.name),
                name.span,
            )
            .with_fix("aggregate in WITH ... AS n, then test n in WHERE")),
            Expr::Call { name, .. } => Err(Diagnostic::new(
                format!("the function {} is not supported", name.name),
                name.span,
            )
            .with_fix("the functions are id, count, collect, min, max and sum; compare stored values directly")),
            e => Err(Diagnostic::new("this is not a value", e.span())
                .with_fix("write a variable, a property, a literal or a $parameter")),
        }
    }

    fn unbound(&self, name: &str, span: crate::front::ast::Span) -> Diagnostic {
        let mut names: Vec<&str> = self.scope.keys().map(String::as_str).collect();
        names.sort_unstable();
        Diagnostic::new(format!("variable {name} is not defined"), span).with_fix(
            if names.is_empty() {
                "match it first: MATCH (n:Label)".to_owned()
            } else {
                format!("the variables are {}", names.join(", "))
            },
        )
    }
}

fn term_key(t: &T) -> String {
    super::program::term(t)
}

fn opposite(op: Cmp) -> Cmp {
    match op {
        Cmp::Eq => Cmp::Ne,
        Cmp::Ne => Cmp::Eq,
        Cmp::Lt => Cmp::Ge,
        Cmp::Le => Cmp::Gt,
        Cmp::Gt => Cmp::Le,
        Cmp::Ge => Cmp::Lt,
    }
}

fn op_text(op: Cmp) -> &'static str {
    match op {
        Cmp::Eq => "=",
        Cmp::Ne => "!=",
        Cmp::Lt => "<",
        Cmp::Le => "<=",
        Cmp::Gt => ">",
        Cmp::Ge => ">=",
    }
}
