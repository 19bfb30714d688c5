//! Helpers shared by the tests: the parser's tree comparisons, and workloads as sources.

#![allow(dead_code)]

pub mod rederive;

use strata_eval::internals::ast::{
    Aggregate, Atom, Column, Goal, Having, Head, HeadArg, Literal, Module, Name, OrderKey, Program,
    RowCount, Rule, Span, Term, Var,
};

/// The tree with every span set to `0..0`, so trees compare modulo spans.
pub fn strip_program(p: &Program) -> Program {
    let mut p = p.clone();
    p.rules.iter_mut().for_each(rule);
    goal(&mut p.goal);
    p
}

/// [`strip_program`] for a module.
pub fn strip_module(m: &Module) -> Module {
    let mut m = m.clone();
    m.rules.iter_mut().for_each(rule);
    m
}

fn rule(r: &mut Rule) {
    r.span = Span::default();
    head(&mut r.head);
    r.body.iter_mut().for_each(literal);
}

fn head(h: &mut Head) {
    h.span = Span::default();
    name(&mut h.relation);
    for arg in &mut h.args {
        match arg {
            HeadArg::Term(t) => term(t),
            HeadArg::Aggregate(a) => aggregate(a),
        }
    }
}

fn goal(g: &mut Goal) {
    g.span = Span::default();
    g.body.iter_mut().for_each(literal);
    if let Some(columns) = &mut g.columns {
        columns.iter_mut().for_each(column);
    }
    for h in &mut g.having {
        having(h);
    }
    for k in &mut g.order_by {
        order_key(k);
    }
    for c in [&mut g.limit, &mut g.offset].into_iter().flatten() {
        row_count(c);
    }
}

fn row_count(c: &mut RowCount) {
    c.span = Span::default();
}

fn having(h: &mut Having) {
    h.span = Span::default();
    h.op_span = Span::default();
    aggregate(&mut h.aggregate);
    term(&mut h.value);
}

fn order_key(k: &mut OrderKey) {
    k.span = Span::default();
    column(&mut k.column);
}

fn column(c: &mut Column) {
    match c {
        Column::Var(v) => var(v),
        Column::Aggregate(a) => aggregate(a),
    }
}

fn literal(l: &mut Literal) {
    match l {
        Literal::Atom(a) => atom(a),
        Literal::Not { atom: a, span } => {
            *span = Span::default();
            atom(a);
        }
        Literal::Compare(c) => {
            c.span = Span::default();
            c.op_span = Span::default();
            term(&mut c.left);
            term(&mut c.right);
        }
        Literal::Aggregate(a) => {
            a.span = Span::default();
            var(&mut a.result);
            aggregate(&mut a.aggregate);
            a.body.iter_mut().for_each(literal);
        }
    }
}

fn atom(a: &mut Atom) {
    a.span = Span::default();
    name(&mut a.relation);
    a.args.iter_mut().for_each(term);
}

fn aggregate(a: &mut Aggregate) {
    a.span = Span::default();
    var(&mut a.var);
}

fn name(n: &mut Name) {
    n.span = Span::default();
}

fn var(v: &mut Var) {
    v.span = Span::default();
}

fn term(t: &mut Term) {
    match t {
        Term::Var(v) => var(v),
        Term::Wildcard(span)
        | Term::Text { span, .. }
        | Term::Number { span, .. }
        | Term::Absent(span) => *span = Span::default(),
    }
}

/// Checks that `source` parses, prints, and parses back to the same tree modulo spans; returns
/// the printed text.
pub fn round_trip(source: &str) -> String {
    let p = strata_eval::parse_program(source)
        .unwrap_or_else(|d| panic!("{}", d.render("query", source)));
    let printed = p.to_string();
    let q = strata_eval::parse_program(&printed).unwrap_or_else(|d| {
        panic!(
            "the printed program does not parse:\n{}",
            d.render("query", &printed)
        )
    });
    assert_eq!(strip_program(&p), strip_program(&q), "printed: {printed}");
    printed
}

/// A workload's relations (pairs of node numbers) as an in-memory fact source.
pub fn workload_source(w: &strata_fixtures::workloads::Workload) -> strata_eval::MemorySource {
    use strata_eval::Value;
    let mut src = strata_eval::MemorySource::new();
    for (name, pairs) in &w.relations {
        src.add_relation(name, &["a", "b"]);
        for &(a, b) in pairs {
            src.insert(
                name,
                &[Value::Number(f64::from(a)), Value::Number(f64::from(b))],
            )
            .expect("a workload relation has two columns");
        }
    }
    src
}

/// An answer row's cells as the oracle writes them.
pub fn oracle_cells(row: &[strata_eval::Cell]) -> Vec<strata_eval::internals::naive::Cell> {
    use strata_eval::internals::naive::Cell;
    row.iter()
        .map(|c| match c {
            strata_eval::Cell::Value(v) => Cell::Value(v.clone()),
            strata_eval::Cell::List(vs) => Cell::List(vs.clone()),
        })
        .collect()
}
