//! Compiling a parsed Cypher query to a Strata program: the clauses in order, the `WITH`
//! stage, `RETURN` and its aggregates, `ORDER BY`, `SKIP` and `LIMIT`. Patterns are compiled
//! in `pattern.rs` and conditions in `cond.rs`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::ast::{Clause, Expr, Ident, Item, Lit, Match, Query, Return, With};
use super::graph::Graph;
use super::program::{Conj, L, T, atom, term};
use crate::front::diagnostic::Diagnostic;
use crate::link::compile::Bind;

/// What a Cypher variable stands for.
#[derive(Clone, Debug)]
pub(super) enum Binding {
    /// A node: its identity's term and the labels (indexes into the graph's) it was matched
    /// with.
    Node(T, Vec<usize>),
    /// A relationship (it can't be returned).
    Rel,
    /// A value a `WITH` passed on.
    Value(T),
}

/// The program a query compiled to.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The program's text: rules, then the goal.
    pub program: String,
    /// The values of the `$params` the program uses, by variable name.
    pub binds: Vec<(String, Bind)>,
    /// The columns' names, as the query named them.
    pub columns: Vec<String>,
}

/// The compiler's state.
pub(super) struct Compiler<'a> {
    pub(super) graph: &'a Graph,
    pub(super) scope: HashMap<String, Binding>,
    used: BTreeSet<String>,
    pub(super) params: BTreeMap<String, Bind>,
    pub(super) params_used: BTreeSet<String>,
    /// Regex parameters: their values are anchored before they are bound.
    pub(super) regex_params: BTreeSet<String>,
    pub(super) rules: Vec<String>,
    helpers: usize,
    /// The values of named nodes given by a literal identity, bound as the params are.
    pub(super) literal_binds: Vec<(String, Bind)>,
    /// Unnamed nodes so far (`?_n1`, `?_n2`...).
    pub(super) anonymous: usize,
    /// Helper relations already written, by what they compute.
    pub(super) cache: HashMap<String, String>,
    /// The variable holding a node's attribute, by node term and key.
    pub(super) attr_vars: HashMap<(String, String), String>,
    /// Every variable that holds a property: helper relations leave them out (a property
    /// is a function of its node, so it would only split one row into several).
    pub(super) prop_vars: BTreeSet<String>,
    /// Variables of helper relations that are absent in some rows (an OPTIONAL MATCH that
    /// found nothing): `count` of one skips those rows.
    nullable: BTreeSet<String>,
}

type R<T> = Result<T, Diagnostic>;

/// Compiles `query` over `graph`, with `params` the values of its `$params`.
pub fn compile(graph: &Graph, query: &Query, params: &[(String, Bind)]) -> R<Compiled> {
    let mut c = Compiler {
        graph,
        scope: HashMap::new(),
        used: BTreeSet::new(),
        params: params
            .iter()
            .map(|(k, v)| (k.trim_start_matches('$').to_owned(), v.clone()))
            .collect(),
        params_used: BTreeSet::new(),
        regex_params: BTreeSet::new(),
        rules: Vec::new(),
        helpers: 0,
        anonymous: 0,
        literal_binds: Vec::new(),
        cache: HashMap::new(),
        attr_vars: HashMap::new(),
        prop_vars: BTreeSet::new(),
        nullable: BTreeSet::new(),
    };
    c.used.extend(c.params.keys().cloned());
    let mut conjs = vec![Conj::default()];
    for clause in &query.clauses {
        conjs = match clause {
            Clause::Match(m) if m.optional => c.optional(m, conjs)?,
            Clause::Match(m) => c.match_clause(m, conjs)?,
            Clause::With(w) => c.with(w, conjs)?,
        };
    }
    let (goal, columns) = c.ret(&query.ret, conjs)?;
    let mut program = String::new();
    for r in &c.rules {
        program.push_str(r);
        program.push_str(";\n");
    }
    program.push_str(&goal);
    let mut binds: Vec<(String, Bind)> = c
        .params_used
        .iter()
        .filter_map(|p| {
            let b = c.params.get(p)?.clone();
            let b = if c.regex_params.contains(p) {
                anchor(b)
            } else {
                b
            };
            Some((p.clone(), b))
        })
        .collect();
    binds.append(&mut c.literal_binds);
    Ok(Compiled {
        program,
        binds,
        columns,
    })
}

/// A regex parameter's value, anchored as `=~` matches the whole text.
fn anchor(b: Bind) -> Bind {
    let a = |v: crate::data::value::Value| match v {
        crate::data::value::Value::Text(s) => crate::data::value::Value::Text(format!("^(?:{s})$")),
        v => v,
    };
    match b {
        Bind::One(v) => Bind::One(a(v)),
        Bind::List(vs) => Bind::List(vs.into_iter().map(a).collect()),
    }
}

impl Compiler<'_> {
    /// A variable name not used yet, made from `base`.
    pub(super) fn fresh(&mut self, base: &str) -> String {
        let mut clean: String = base
            .chars()
            .map(|ch| {
                if ch.is_ascii_alphanumeric() || ch == '_' {
                    ch
                } else {
                    '_'
                }
            })
            .collect();
        if clean.is_empty() {
            clean.push('v');
        }
        let mut name = clean.clone();
        let mut k = 2;
        while self.used.contains(&name) {
            name = format!("{clean}_{k}");
            k += 1;
        }
        self.used.insert(name.clone());
        name
    }

    /// A new helper relation's name: `_` and what it is for, numbered.
    pub(super) fn helper(&mut self, what: &str) -> String {
        self.helpers += 1;
        format!("_{what}{}", self.helpers)
    }

    /// Adds rule `head :- body`.
    pub(super) fn rule(&mut self, rel: &str, head: &[T], body: &Conj) {
        self.rules
            .push(format!("{} :- {}", atom(rel, head), body.render()));
    }

    /// The term of `$name`, which must have a value.
    pub(super) fn param(&mut self, p: &Ident) -> R<T> {
        if !self.params.contains_key(&p.name) {
            return Err(Diagnostic::new(format!("${} has no value", p.name), p.span)
                .with_fix(format!("give it one in params: {{\"{}\": ...}}", p.name)));
        }
        self.params_used.insert(p.name.clone());
        Ok(T::Var(p.name.clone()))
    }

    fn match_clause(&mut self, m: &Match, conjs: Vec<Conj>) -> R<Vec<Conj>> {
        let mut pc = Conj::default();
        for p in &m.patterns {
            self.pattern(p, &mut pc, true)?;
        }
        let mut out = Vec::new();
        for mut c in conjs {
            c.merge(&pc);
            match &m.cond {
                Some(e) => out.extend(self.cond(e, c, false)?),
                None => out.push(c),
            }
        }
        Ok(out)
    }

    /// `OPTIONAL MATCH`: the rows where it matches, and the others with its new variables
    /// null, through a helper relation over the variables it shares with what came before.
    fn optional(&mut self, m: &Match, conjs: Vec<Conj>) -> R<Vec<Conj>> {
        let before: BTreeSet<String> = self.scope.keys().cloned().collect();
        let outer: BTreeSet<String> = conjs.iter().flat_map(Conj::bound).collect();
        let mut pc = Conj::default();
        for p in &m.patterns {
            self.pattern(p, &mut pc, true)?;
        }
        let subs = match &m.cond {
            Some(e) => self.cond(e, pc, false)?,
            None => vec![pc],
        };
        let new: Vec<String> = self
            .scope
            .keys()
            .filter(|k| !before.contains(*k))
            .cloned()
            .collect();
        let mut shared: Vec<String> = Vec::new();
        for s in &subs {
            for v in s.vars() {
                if outer.contains(&v) && !self.params.contains_key(&v) && !shared.contains(&v) {
                    shared.push(v);
                }
            }
        }
        let head: Vec<T> = shared.iter().map(|v| T::Var(v.clone())).collect();
        let rel = self.helper("opt");
        for s in &subs {
            self.rule(&rel, &head, s);
        }
        let mut out = Vec::new();
        for c in conjs {
            for s in &subs {
                let mut with = c.clone();
                with.merge(s);
                out.push(with);
            }
            let mut without = c;
            without.lits.push(L::Atom {
                rel: rel.clone(),
                args: head.clone(),
                neg: true,
            });
            without.absent.extend(new.iter().cloned());
            out.push(without);
        }
        Ok(out)
    }

    /// Several conjunctions as one: a helper relation with a rule per conjunction, over every
    /// variable any of them binds (absent where one doesn't) and the parameters.
    fn collapse(&mut self, conjs: Vec<Conj>) -> Conj {
        if conjs.len() == 1 {
            return conjs.into_iter().next().unwrap_or_default();
        }
        let vars = self.row_vars(&conjs);
        let rel = self.helper("row");
        for c in &conjs {
            let head = row_head(&vars, c);
            self.note_nulls(&vars, &head);
            self.rule(&rel, &head, c);
        }
        Conj {
            lits: vec![L::Atom {
                rel,
                args: vars.iter().map(|v| T::Var(v.clone())).collect(),
                neg: false,
            }],
            labels: Vec::new(),
            absent: BTreeSet::new(),
        }
    }

    /// The columns of a helper relation over `conjs`: every variable one of them binds, but
    /// parameters (their values are put in place) and properties (functions of their nodes).
    fn row_vars(&self, conjs: &[Conj]) -> Vec<String> {
        let mut vars: Vec<String> = Vec::new();
        for c in conjs {
            for v in c.bound() {
                if !vars.contains(&v)
                    && !self.params.contains_key(&v)
                    && !self.prop_vars.contains(&v)
                {
                    vars.push(v);
                }
            }
        }
        vars
    }

    /// Notes the variables a helper relation's rule leaves absent.
    fn note_nulls(&mut self, names: &[String], head: &[T]) {
        for (v, t) in names.iter().zip(head) {
            if *t == T::Absent {
                self.nullable.insert(v.clone());
            }
        }
    }

    /// `count(x)` skips nulls, as Cypher's does: where `x` may be absent (an OPTIONAL MATCH
    /// that found nothing) and `c` reads one helper relation, the count becomes an aggregate
    /// literal over that relation's rows with `x` present, per value of the plain items, so a
    /// group of null rows counts 0 rather than 1.
    fn counts_skip_nulls(&mut self, items: &[Item], c: &mut Conj, row: &mut [Col]) {
        let [
            L::Atom {
                rel,
                args,
                neg: false,
            },
        ] = c.lits.as_slice()
        else {
            return;
        };
        let (rel, args) = (rel.clone(), args.clone());
        let keys: Vec<String> = row
            .iter()
            .filter(|(agg, _)| agg.is_none())
            .filter_map(|(_, t)| t.var().map(str::to_owned))
            .collect();
        for (item, col) in items.iter().zip(row.iter_mut()) {
            let star = matches!(item.expr, Expr::Call { star: true, .. });
            let (Some(("count", distinct)), T::Var(x)) = (col.0, &col.1) else {
                continue;
            };
            if star || !self.nullable.contains(x) {
                continue;
            }
            let inner = |v: &str| {
                if keys.iter().any(|k| k == v) {
                    v.to_owned()
                } else {
                    format!("{v}_in")
                }
            };
            let renamed: Vec<T> = args
                .iter()
                .map(|a| match a {
                    T::Var(v) => T::Var(inner(v)),
                    a => a.clone(),
                })
                .collect();
            let x_in = T::Var(inner(x));
            let result = self.fresh(&format!("count_{x}"));
            c.lits.push(L::Count {
                result: result.clone(),
                distinct,
                var: inner(x),
                body: vec![
                    L::Atom {
                        rel: rel.clone(),
                        args: renamed,
                        neg: false,
                    },
                    L::Cmp("=", x_in.clone(), x_in),
                ],
            });
            *col = (None, T::Var(result));
        }
    }

    /// Whether any conjunction marks a Cypher variable null.
    fn any_absent(conjs: &[Conj]) -> bool {
        conjs.iter().any(|c| !c.absent.is_empty())
    }

    /// The term of an item in `c`, and the aggregate around it (`count`, `list`...) if any.
    fn item(&mut self, item: &Item, c: &mut Conj) -> R<Col> {
        if let Expr::Call {
            name,
            distinct,
            star,
            args,
        } = &item.expr
        {
            let f = name.name.to_ascii_lowercase();
            let func = match f.as_str() {
                "count" => Some("count"),
                "collect" => Some("list"),
                "min" => Some("min"),
                "max" => Some("max"),
                "sum" => Some("sum"),
                "avg" => {
                    return Err(Diagnostic::new("avg is not supported", name.span)
                        .with_fix("answer sum(x) and count(x) and divide"));
                }
                _ => None,
            };
            if let Some(func) = func {
                if *star {
                    if func != "count" {
                        return Err(Diagnostic::new(
                            format!("{f}(*) is not a function"),
                            name.span,
                        )
                        .with_fix(format!("write {f}(x) with a variable or property")));
                    }
                    let v = c.bound().into_iter().next().ok_or_else(|| {
                        Diagnostic::new("count(*) needs something matched to count", name.span)
                    })?;
                    return Ok((Some(("count", false)), T::Var(v)));
                }
                let [arg] = args.as_slice() else {
                    return Err(Diagnostic::new(
                        format!("{f} takes one argument"),
                        name.span,
                    ));
                };
                let t = self.term(arg, c)?;
                return match t {
                    T::Var(_) | T::Absent => Ok((Some((func, *distinct)), t)),
                    _ => Err(Diagnostic::new(
                        format!("{f} aggregates a variable or a property, not a constant"),
                        arg.span(),
                    )),
                };
            }
        }
        match &item.expr {
            Expr::Lit(_, s) | Expr::List(_, s) => Err(Diagnostic::new(
                "RETURN answers variables and properties, not constants",
                *s,
            )
            .with_fix("drop the constant; the query's text already says it")),
            Expr::Param(p) => Err(Diagnostic::new(
                "RETURN answers variables and properties, not parameters",
                p.span,
            )
            .with_fix("drop it; you gave its value")),
            e @ (Expr::Var(_) | Expr::Prop(..) | Expr::Call { .. }) => Ok((None, self.term(e, c)?)),
            e => Err(Diagnostic::new(
                "RETURN and WITH answer variables, properties and aggregates, not conditions",
                e.span(),
            )
            .with_fix("put the condition in WHERE")),
        }
    }

    /// `WITH`: one aggregation stage, a rule of a helper relation; what follows sees only
    /// the items.
    fn with(&mut self, w: &With, conjs: Vec<Conj>) -> R<Vec<Conj>> {
        let aggregates = w.items.iter().any(|i| is_aggregate(&i.expr));
        let conjs = if aggregates || Self::any_absent(&conjs) {
            vec![self.collapse(conjs)]
        } else {
            conjs
        };
        let rel = self.helper("with");
        let mut new_scope = HashMap::new();
        let mut names: Vec<(String, Option<Vec<usize>>)> = Vec::new();
        for item in &w.items {
            let name = match (&item.alias, &item.expr) {
                (Some(a), _) => a.name.clone(),
                (None, Expr::Var(v)) => v.name.clone(),
                (None, e) => {
                    return Err(
                        Diagnostic::new("an expression in WITH needs a name", e.span())
                            .with_fix(format!("write {} AS name", item.text)),
                    );
                }
            };
            let labels = match &item.expr {
                Expr::Var(v) => match self.scope.get(&v.name) {
                    Some(Binding::Node(_, l)) => Some(l.clone()),
                    _ => None,
                },
                _ => None,
            };
            names.push((name, labels));
        }
        let outs: Vec<String> = names.iter().map(|(n, _)| self.fresh(n)).collect();
        for mut c in conjs {
            let mut row = Vec::new();
            for item in &w.items {
                row.push(self.item(item, &mut c)?);
            }
            self.counts_skip_nulls(&w.items, &mut c, &mut row);
            let head: Vec<HeadArg> = row
                .into_iter()
                .map(|(agg, t)| match agg {
                    Some((f, d)) => HeadArg::Agg(f, d, t),
                    None => HeadArg::Term(t),
                })
                .collect();
            let args: Vec<String> = head.iter().map(HeadArg::render).collect();
            self.rules
                .push(format!("{rel}({}) :- {}", args.join(", "), c.render()));
        }
        for ((name, labels), out) in names.into_iter().zip(&outs) {
            let b = match labels {
                Some(l) => Binding::Node(T::Var(out.clone()), l),
                None => Binding::Value(T::Var(out.clone())),
            };
            new_scope.insert(name, b);
        }
        self.scope = new_scope;
        self.attr_vars.clear();
        let c = Conj {
            lits: vec![L::Atom {
                rel,
                args: outs.iter().map(|o| T::Var(o.clone())).collect(),
                neg: false,
            }],
            ..Conj::default()
        };
        match &w.cond {
            Some(e) => self.cond(e, c, false),
            None => Ok(vec![c]),
        }
    }

    /// `RETURN`: the goal, its columns and their names.
    fn ret(&mut self, r: &Return, conjs: Vec<Conj>) -> R<(String, Vec<String>)> {
        let mut conjs = conjs;
        if conjs.is_empty() {
            // Every branch of the condition was false: a goal that matches nothing.
            return Err(Diagnostic::new("the condition can never hold", r.span)
                .with_fix("a comparison with null is never true: test IS NULL instead"));
        }
        // Compile the items in every conjunction; several conjunctions, or a null item,
        // go through a helper relation.
        let mut cols: Vec<Vec<Col>> = Vec::new();
        for c in &mut conjs {
            let mut row = Vec::new();
            for item in &r.items {
                row.push(self.item(item, c)?);
            }
            cols.push(row);
        }
        let simple = conjs.len() == 1 && cols[0].iter().all(|(_, t)| matches!(t, T::Var(_)));
        let (mut body, mut row) = if simple {
            (conjs.remove(0), cols.remove(0))
        } else {
            // The helper relation's columns: every variable a rule binds (absent where one
            // doesn't), then a variable of its own for each item that is not one of them.
            let vars = self.row_vars(&conjs);
            // The goal is a scope of its own: an item's variable keeps its name where the
            // helper's columns leave it free.
            let mut outs: Vec<Option<String>> = Vec::new();
            for (k, item) in r.items.iter().enumerate() {
                let same = shared_var(&conjs, &cols, k);
                outs.push(match same {
                    Some(v) if vars.contains(&v) => None,
                    same => {
                        let base = same.unwrap_or_else(|| column_var(item));
                        let mut name = base.clone();
                        let mut n = 2;
                        while vars.contains(&name) || outs.iter().flatten().any(|o| *o == name) {
                            name = format!("{base}_{n}");
                            n += 1;
                        }
                        Some(name)
                    }
                });
            }
            let rel = self.helper("row");
            for (c, row) in conjs.iter_mut().zip(&cols) {
                let mut head = row_head(&vars, c);
                for ((_, t), o) in row.iter().zip(&outs) {
                    if o.is_some() {
                        head.push(t.clone());
                    }
                }
                let names: Vec<String> =
                    vars.iter().chain(outs.iter().flatten()).cloned().collect();
                self.note_nulls(&names, &head);
                self.rule(&rel, &head, c);
            }
            let mut args: Vec<T> = vars.iter().map(|v| T::Var(v.clone())).collect();
            args.extend(outs.iter().flatten().map(|o| T::Var(o.clone())));
            let body = Conj {
                lits: vec![L::Atom {
                    rel,
                    args,
                    neg: false,
                }],
                ..Conj::default()
            };
            let row = cols[0]
                .iter()
                .zip(&outs)
                .map(|((agg, t), o)| {
                    (
                        *agg,
                        o.as_ref().map_or_else(|| t.clone(), |o| T::Var(o.clone())),
                    )
                })
                .collect();
            (body, row)
        };
        self.counts_skip_nulls(&r.items, &mut body, &mut row);
        let columns: Vec<String> = row
            .iter()
            .map(|(agg, t)| match agg {
                Some((f, d)) => format!("{f}({}{})", if *d { "distinct " } else { "" }, term(t)),
                None => term(t),
            })
            .collect();
        let mut goal = body.render();
        goal.push_str(" => ");
        goal.push_str(&columns.join(", "));
        if !r.order.is_empty() {
            let mut keys = Vec::new();
            for (e, desc) in &r.order {
                let k = order_key(e, &r.items).ok_or_else(|| {
                    Diagnostic::new("ORDER BY sorts by a column RETURN answers", e.span())
                        .with_fix("add the value to RETURN (with AS name) and order by that name")
                })?;
                keys.push(format!(
                    "{}{}",
                    columns[k],
                    if *desc { " desc" } else { "" }
                ));
            }
            goal.push_str(" order by ");
            goal.push_str(&keys.join(", "));
        }
        if let Some(n) = r.limit {
            goal.push_str(&format!(" limit {n}"));
        }
        if let Some(n) = r.skip
            && n > 0
        {
            goal.push_str(&format!(" offset {n}"));
        }
        let names = r.items.iter().map(|i| i.name().to_owned()).collect();
        Ok((goal, names))
    }
}

/// An item compiled: the aggregate around it (`count`, `list`...), if any, and its term.
type Col = (Option<(&'static str, bool)>, T);

/// The head of `c`'s rule of a helper relation with columns `vars`: each variable, or
/// absent where `c` doesn't bind it.
fn row_head(vars: &[String], c: &Conj) -> Vec<T> {
    let bound = c.bound();
    vars.iter()
        .map(|v| {
            if bound.contains(v) {
                T::Var(v.clone())
            } else {
                T::Absent
            }
        })
        .collect()
}

/// A head argument: a term or an aggregate of a variable.
enum HeadArg {
    Term(T),
    Agg(&'static str, bool, T),
}

impl HeadArg {
    fn render(&self) -> String {
        match self {
            HeadArg::Term(t) => term(t),
            HeadArg::Agg(f, d, t) => {
                format!("{f}({}{})", if *d { "distinct " } else { "" }, term(t))
            }
        }
    }
}

/// Whether `e` is an aggregate call.
pub(super) fn is_aggregate(e: &Expr) -> bool {
    matches!(e, Expr::Call { name, .. } if matches!(
        name.name.to_ascii_lowercase().as_str(),
        "count" | "collect" | "min" | "max" | "sum" | "avg"
    ))
}

/// The variable item `k` is in every conjunction, if it is one variable throughout (or null
/// where a conjunction doesn't bind it).
fn shared_var(conjs: &[Conj], cols: &[Vec<Col>], k: usize) -> Option<String> {
    let mut found: Option<String> = None;
    for row in cols {
        match &row[k].1 {
            T::Var(v) => match &found {
                Some(f) if f != v => return None,
                _ => found = Some(v.clone()),
            },
            T::Absent => {}
            _ => return None,
        }
    }
    let v = found?;
    let consistent = conjs.iter().zip(cols).all(|(c, row)| match &row[k].1 {
        T::Absent => !c.bound().contains(&v),
        _ => c.bound().contains(&v),
    });
    consistent.then_some(v)
}

/// A variable name for an item's column: its alias, or its text made a name.
fn column_var(i: &Item) -> String {
    match (&i.alias, &i.expr) {
        (Some(a), _) => a.name.clone(),
        (None, Expr::Var(v)) => v.name.clone(),
        (None, Expr::Prop(v, k)) => format!("{}_{}", v.name, k.name),
        _ => "c".to_owned(),
    }
}

/// Which item an `ORDER BY` key names: by alias, or by being the same expression.
fn order_key(e: &Expr, items: &[Item]) -> Option<usize> {
    if let Expr::Var(v) = e
        && let Some(k) = items
            .iter()
            .position(|i| i.alias.as_ref().is_some_and(|a| a.name == v.name))
    {
        return Some(k);
    }
    let key = shape(e);
    items.iter().position(|i| shape(&i.expr) == key)
}

/// An expression's shape without its places, to compare two.
fn shape(e: &Expr) -> String {
    match e {
        Expr::Var(v) => v.name.clone(),
        Expr::Prop(v, k) => format!("{}.{}", v.name, k.name),
        Expr::Param(p) => format!("${}", p.name),
        Expr::Lit(Lit::Str(s), _) => format!("{s:?}"),
        Expr::Lit(l, _) => format!("{l:?}"),
        Expr::Call {
            name,
            distinct,
            star,
            args,
        } => format!(
            "{}({}{}{})",
            name.name.to_ascii_lowercase(),
            if *distinct { "distinct " } else { "" },
            if *star { "*" } else { "" },
            args.iter().map(shape).collect::<Vec<_>>().join(",")
        ),
        _ => format!("{:?}", std::ptr::from_ref(e)),
    }
}
