//! Compiling patterns: nodes to label atoms and property tests, relationships to edge atoms
//! or helper relations (several types, either direction, variable length as recursive rules,
//! so the demand rewrite applies when an end is bound).

use super::ast::{Dir, Expr, Ident, Lit, NodePat, Pattern, RelPat};
use super::compile::{Binding, Compiler};
use super::graph::NodeLabel;
use super::program::{Conj, L, T};
use crate::front::diagnostic::Diagnostic;
use crate::front::suggest::{alternatives, did_you_mean};

type R<T> = Result<T, Diagnostic>;

impl Compiler<'_> {
    /// Adds the literals of pattern `p` to `c`. With `new_vars` false (a pattern predicate),
    /// a named variable must already be bound.
    pub(super) fn pattern(&mut self, p: &Pattern, c: &mut Conj, new_vars: bool) -> R<()> {
        if p.steps.is_empty() && p.start.labels.is_empty() && p.start.props.is_empty() {
            let known = p
                .start
                .var
                .as_ref()
                .is_some_and(|v| self.scope.contains_key(&v.name));
            if !known {
                return Err(Diagnostic::new(
                    "a node on its own needs a label or a property to match",
                    p.start.span,
                )
                .with_fix(format!(
                    "write ({}:Label), one of: {}",
                    p.start.var.as_ref().map_or("n", |v| v.name.as_str()),
                    self.label_names()
                )));
            }
        }
        let mut prev = self.node(&p.start, c, new_vars)?;
        for (rel, node) in &p.steps {
            let next = self.node(node, c, new_vars)?;
            self.rel(rel, prev, next.clone(), c, new_vars)?;
            prev = next;
        }
        Ok(())
    }

    fn label_names(&self) -> String {
        let names: Vec<&str> = self.graph.labels.iter().map(|l| l.name.as_str()).collect();
        if names.is_empty() {
            "the graph has no labels".to_owned()
        } else {
            names.join(", ")
        }
    }

    fn type_names(&self) -> String {
        let names: Vec<&str> = self.graph.types.iter().map(|t| t.name.as_str()).collect();
        if names.is_empty() {
            "the graph has no relationship types".to_owned()
        } else {
            names.join(", ")
        }
    }

    fn resolve_label(&self, l: &Ident) -> R<usize> {
        if let Some(i) = self.graph.labels.iter().position(|x| x.name == l.name) {
            return Ok(i);
        }
        let names = self.graph.labels.iter().map(|x| x.name.as_str());
        let mut near = did_you_mean(&l.name, names);
        if near.is_empty() {
            // The relation a label stands for, written in its place.
            let by_relation = self.graph.labels.iter().find(|x| x.relation == l.name);
            near.extend(by_relation.map(|x| x.name.clone()));
        }
        let fix = if near.is_empty() {
            format!("the labels are {}", self.label_names())
        } else {
            format!("did you mean {}?", alternatives(&near, |n| format!(":{n}")))
        };
        Err(Diagnostic::new(format!("unknown label :{}", l.name), l.span).with_fix(fix))
    }

    /// The term of a literal or parameter in a property map.
    fn value(&mut self, e: &Expr) -> R<T> {
        match e {
            Expr::Lit(Lit::Str(s), _) => Ok(T::Str(s.clone())),
            Expr::Lit(Lit::Num(n), _) => Ok(T::Num(*n)),
            Expr::Param(p) => self.param(p),
            e => Err(
                Diagnostic::new("a property map takes literals and $parameters", e.span())
                    .with_fix("compare other values in WHERE"),
            ),
        }
    }

    /// Whether `key` is a node's identity for a node with `labels`.
    pub(super) fn is_identity(&self, labels: &[usize], key: &str) -> bool {
        let ls: Vec<&NodeLabel> = labels
            .iter()
            .filter_map(|i| self.graph.labels.get(*i))
            .collect();
        if ls
            .iter()
            .any(|l| l.columns.len() > 1 && l.columns[l.id] == key)
        {
            return true;
        }
        (key == "name" || key == "id")
            && self.graph.attr(key).is_none()
            && !ls
                .iter()
                .any(|l| l.columns.len() > 1 && l.columns.iter().any(|c| c == key))
    }

    fn node(&mut self, n: &NodePat, c: &mut Conj, new_vars: bool) -> R<T> {
        let labels: Vec<usize> = n
            .labels
            .iter()
            .map(|l| self.resolve_label(l))
            .collect::<R<_>>()?;
        let known = n
            .var
            .as_ref()
            .and_then(|v| self.scope.get(&v.name))
            .cloned();
        let (t, mut all_labels) = match (&n.var, known) {
            (Some(_), Some(Binding::Node(t, ls))) => (t, ls),
            (Some(v), Some(_)) => {
                return Err(
                    Diagnostic::new(format!("{} is not a node here", v.name), v.span)
                        .with_fix("use another name for the node"),
                );
            }
            (Some(v), None) if !new_vars => {
                return Err(Diagnostic::new(
                    format!(
                        "{} is not bound: a pattern in WHERE can't introduce variables",
                        v.name
                    ),
                    v.span,
                )
                .with_fix("match it in MATCH first, or leave the node unnamed"));
            }
            (var, _) => {
                // The identity comes from the property map when it gives one to an unnamed
                // node (so a constant lands in the atoms and demand can use it).
                let id = n
                    .props
                    .iter()
                    .find(|(k, _)| self.is_identity(&labels, &k.name));
                let t = match (var, id) {
                    (None, Some((_, e))) => self.value(e)?,
                    (Some(_), Some((_, Expr::Param(p)))) => self.param(p)?,
                    (Some(v), Some((_, e))) => {
                        // A named node given by a literal keeps its variable (a column may
                        // hold it) and an equality in the text; the value is bound too, so
                        // the constant lands in the atoms and demand applies.
                        let var = self.fresh(&v.name);
                        let value = match self.value(e)? {
                            T::Str(s) => crate::data::value::Value::Text(s),
                            T::Num(n) => crate::data::value::Value::Number(n),
                            _ => crate::data::value::Value::Absent,
                        };
                        self.literal_binds
                            .push((var.clone(), crate::link::compile::Bind::One(value)));
                        T::Var(var)
                    }
                    (Some(v), None) => T::Var(self.fresh(&v.name)),
                    (None, None) => {
                        self.anonymous += 1;
                        let base = format!("_n{}", self.anonymous);
                        T::Var(self.fresh(&base))
                    }
                };
                (t, Vec::new())
            }
        };
        for l in &labels {
            let rel = &self.graph.labels[*l].relation;
            let present = c
                .labels
                .iter()
                .any(|(r, args)| r == rel && args.get(self.graph.labels[*l].id) == Some(&t));
            if !present {
                let label = &self.graph.labels[*l];
                let mut args = vec![T::Wild; label.columns.len()];
                args[label.id] = t.clone();
                c.labels.push((label.relation.clone(), args));
                c.lits.push(L::Label(c.labels.len() - 1));
            }
            if !all_labels.contains(l) {
                all_labels.push(*l);
            }
        }
        if let Some(v) = &n.var {
            self.scope
                .insert(v.name.clone(), Binding::Node(t.clone(), all_labels.clone()));
        }
        for (k, e) in &n.props {
            let value = self.value(e)?;
            if self.is_identity(&all_labels, &k.name) {
                if value != t {
                    c.lits.push(L::Cmp("=", t.clone(), value));
                }
                continue;
            }
            let slot = self.column(&t, &all_labels, &k.name, c);
            match slot {
                Some((i, col)) => {
                    let arg = &mut c.labels[i].1[col];
                    if *arg == T::Wild {
                        *arg = value;
                    } else {
                        let cur = arg.clone();
                        c.lits.push(L::Cmp("=", cur, value));
                    }
                }
                None => match self.graph.attr(&k.name) {
                    Some(a) => c.lits.push(L::Atom {
                        rel: a.relation.clone(),
                        args: vec![t.clone(), value],
                        neg: false,
                    }),
                    None => return Err(self.unknown_property(&all_labels, k)),
                },
            }
        }
        Ok(t)
    }

    /// The label atom of `c` and column holding property `key` of the node `t` with
    /// `labels`, adding the atom when the conjunction has none yet (after `WITH`).
    pub(super) fn column(
        &self,
        t: &T,
        labels: &[usize],
        key: &str,
        c: &mut Conj,
    ) -> Option<(usize, usize)> {
        for l in labels {
            let label = &self.graph.labels[*l];
            let Some(col) = label.columns.iter().position(|x| x == key) else {
                continue;
            };
            if label.columns.len() < 2 {
                continue;
            }
            let found = c
                .labels
                .iter()
                .position(|(rel, args)| *rel == label.relation && args[label.id] == *t);
            let i = match found {
                Some(i) => i,
                None => {
                    let mut args = vec![T::Wild; label.columns.len()];
                    args[label.id] = t.clone();
                    c.labels.push((label.relation.clone(), args));
                    c.lits.push(L::Label(c.labels.len() - 1));
                    c.labels.len() - 1
                }
            };
            return Some((i, col));
        }
        None
    }

    pub(super) fn unknown_property(&self, labels: &[usize], k: &Ident) -> Diagnostic {
        let mut props = std::collections::BTreeSet::new();
        for l in labels {
            props.extend(self.graph.properties(&self.graph.labels[*l]));
        }
        if labels.is_empty() {
            props.insert("name".to_owned());
            props.extend(self.graph.attrs.iter().map(|a| a.key.clone()));
        }
        let props: Vec<String> = props.into_iter().collect();
        Diagnostic::new(format!("unknown property {}", k.name), k.span).with_fix(format!(
            "the properties are {}",
            if props.is_empty() {
                "none".to_owned()
            } else {
                props.join(", ")
            }
        ))
    }

    fn rel(&mut self, r: &RelPat, a: T, b: T, c: &mut Conj, new_vars: bool) -> R<()> {
        if let Some(v) = &r.var {
            if !new_vars || self.scope.contains_key(&v.name) {
                return Err(Diagnostic::new(
                    format!(
                        "{} is already bound; a relationship is matched once",
                        v.name
                    ),
                    v.span,
                )
                .with_fix("use a new name for the relationship, or none"));
            }
            self.scope.insert(v.name.clone(), Binding::Rel);
        }
        let mut rels = Vec::new();
        for t in &r.types {
            match self.graph.rel_type(&t.name) {
                Some(x) => rels.push(x.relation.clone()),
                None => {
                    let names = self.graph.types.iter().map(|x| x.name.as_str());
                    let near = did_you_mean(&t.name, names);
                    let fix = if near.is_empty() {
                        format!("the relationship types are {}", self.type_names())
                    } else {
                        format!("did you mean {}?", alternatives(&near, |n| format!(":{n}")))
                    };
                    return Err(Diagnostic::new(
                        format!("unknown relationship type :{}", t.name),
                        t.span,
                    )
                    .with_fix(fix));
                }
            }
        }
        if r.types.is_empty() {
            if self.graph.types.is_empty() {
                return Err(Diagnostic::new(
                    "the graph has no relationship types",
                    r.span,
                ));
            }
            rels = self
                .graph
                .types
                .iter()
                .map(|t| t.relation.clone())
                .collect();
        }
        rels.sort();
        rels.dedup();
        // The one-step relation, read left to right.
        let (step, both) = (rels, r.dir == Dir::Both);
        let step_rel = if step.len() == 1 && !both {
            step[0].clone()
        } else {
            let key = format!("step {step:?} {both}");
            match self.cache.get(&key) {
                Some(h) => h.clone(),
                None => {
                    let h = self.helper("e");
                    let (x, y) = (T::Var("x".into()), T::Var("y".into()));
                    for s in &step {
                        self.rules.push(format!(
                            "{} :- {}",
                            super::program::atom(&h, &[x.clone(), y.clone()]),
                            super::program::atom(s, &[x.clone(), y.clone()])
                        ));
                        if both {
                            self.rules.push(format!(
                                "{} :- {}",
                                super::program::atom(&h, &[x.clone(), y.clone()]),
                                super::program::atom(s, &[y.clone(), x.clone()])
                            ));
                        }
                    }
                    self.cache.insert(key, h.clone());
                    h
                }
            }
        };
        let args = if r.dir == Dir::Left {
            vec![b, a]
        } else {
            vec![a, b]
        };
        // An open path recurses from its bound end, so demand follows the binding.
        let from_end = self.is_bound(&args[1]) && !self.is_bound(&args[0]);
        let path_rel = match r.length {
            None => step_rel,
            Some((min, max)) => self.path(&step_rel, min, max, from_end),
        };
        c.lits.push(L::Atom {
            rel: path_rel,
            args,
            neg: false,
        });
        Ok(())
    }

    /// Whether a term is known before the run: a constant, or a variable a bind gives.
    fn is_bound(&self, t: &T) -> bool {
        match t {
            T::Var(v) => {
                self.params.contains_key(v) || self.literal_binds.iter().any(|(n, _)| n == v)
            }
            _ => true,
        }
    }

    /// The relation of paths of `min` to `max` (or any number of) steps of `step`, written
    /// as rules: exact lengths by chaining, an open end by recursion, on the left or, when
    /// only the path's end is bound (`from_end`), on the right.
    fn path(&mut self, step: &str, min: u32, max: Option<u32>, from_end: bool) -> String {
        let key = format!("path {step} {min} {max:?} {from_end}");
        if let Some(h) = self.cache.get(&key) {
            return h.clone();
        }
        let (x, y, z) = (T::Var("x".into()), T::Var("y".into()), T::Var("z".into()));
        let at = |rel: &str, p: &T, q: &T| super::program::atom(rel, &[p.clone(), q.clone()]);
        // exact[k] holds paths of exactly k + 1 steps.
        let upto = max.unwrap_or(min);
        let mut exact = vec![step.to_owned()];
        for _ in 1..upto {
            let prev = exact.last().cloned().unwrap_or_default();
            let h = self.helper("len");
            self.rules.push(format!(
                "{} :- {}, {}",
                at(&h, &x, &z),
                at(&prev, &x, &y),
                at(step, &y, &z)
            ));
            exact.push(h);
        }
        let h = self.helper("path");
        match max {
            None => {
                let first = &exact[(min as usize).saturating_sub(1)];
                self.rules
                    .push(format!("{} :- {}", at(&h, &x, &y), at(first, &x, &y)));
                let (head, one, rest) = if from_end {
                    (at(&h, &x, &z), at(step, &x, &y), at(&h, &y, &z))
                } else {
                    (at(&h, &x, &z), at(&h, &x, &y), at(step, &y, &z))
                };
                self.rules.push(format!("{head} :- {one}, {rest}"));
            }
            Some(max) => {
                for k in min..=max {
                    let e = &exact[(k as usize).saturating_sub(1)];
                    self.rules
                        .push(format!("{} :- {}", at(&h, &x, &y), at(e, &x, &y)));
                }
            }
        }
        self.cache.insert(key, h.clone());
        h
    }
}
