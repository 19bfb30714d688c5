//! The naive evaluator: the test oracle.
//!
//! It works on values, not terms, reads every base relation whole, and evaluates each rule by
//! trying every combination of facts for its positive atoms in the order written, then
//! filtering; strata are repeated until nothing changes. It is slow and obviously right, and
//! the property tests compare the engine with it.
//!
//! It shares no code with the engine or the answer stage: its own stratification (levels
//! raised until they settle), its own comparisons, text tests and aggregates, and its own
//! errors. Only the input (the [`Ir`], a [`FactSource`]) and the values are common. The
//! answer-level oracle ([`answer`]) groups, filters, orders and pages those facts as the
//! language defines it, for the property tests to compare with [`crate::answer::Answer`].

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use crate::data::source::{FactSource, SourceError};
use crate::data::value::Value;
use crate::front::ast::{AggFunc, CmpOp};
use crate::ir::{Arg, Builtin, HeadArg, Ir, Lit, RelKind, Rule};

/// Why the oracle gave no facts.
#[derive(Debug, thiserror::Error)]
pub enum OracleError {
    /// A relation depends on itself through negation or an aggregate.
    #[error("relations {0:?} depend on each other through negation or an aggregate")]
    Unstratifiable(Vec<String>),
    /// An aggregate met a value it cannot take (`sum` of a text).
    #[error("{0}")]
    Aggregate(String),
    /// `str.match` was given a pattern that is not a regular expression.
    #[error("str.match: {0}")]
    Regex(String),
    /// The fact source failed.
    #[error(transparent)]
    Source(#[from] SourceError),
}

/// A relation's facts, as values.
pub type Facts = BTreeSet<Vec<Value>>;

/// Evaluates `ir` naively; returns every relation's facts by [`crate::ir::RelId`] (base
/// relations' too).
pub fn evaluate(ir: &Ir, source: &dyn FactSource) -> Result<Vec<Facts>, OracleError> {
    let levels = levels(ir)?;
    let mut facts: Vec<Facts> = vec![Facts::new(); ir.relations.len()];
    for (i, r) in ir.relations.iter().enumerate() {
        if r.kind == RelKind::Base {
            let mut terms = Vec::new();
            source.scan(&r.name, &mut |row| {
                terms.push(row.to_vec());
                ControlFlow::Continue(())
            })?;
            for t in terms {
                let row = t
                    .into_iter()
                    .map(|x| source.value(x))
                    .collect::<Result<Vec<_>, _>>()?;
                facts[i].insert(row);
            }
        }
    }
    // Level by level, every rule of the level repeated until nothing changes.
    let top = levels.iter().copied().max().unwrap_or(0);
    for level in 0..=top {
        loop {
            let mut changed = false;
            for rule in ir.rules.iter().filter(|r| levels[r.head] == level) {
                for tuple in rule_facts(ir, rule, &facts)? {
                    changed |= facts[rule.head].insert(tuple);
                }
            }
            if !changed {
                break;
            }
        }
    }
    Ok(facts)
}

/// Each relation's level: at least that of every relation its rules read, and above that of
/// every relation they read under `not`, in an aggregate's `{ }` or through a head aggregate.
/// Raised until they settle; a level past the number of relations is a cycle through a
/// strict read.
fn levels(ir: &Ir) -> Result<Vec<usize>, OracleError> {
    fn reads(body: &[Lit], strict: bool, out: &mut Vec<(usize, bool)>) {
        for l in body {
            match l {
                Lit::Pos { rel, .. } => out.push((*rel, strict)),
                Lit::Neg { rel, .. } => out.push((*rel, true)),
                Lit::Agg { body, .. } => reads(body, true, out),
                _ => {}
            }
        }
    }
    let n = ir.relations.len();
    let mut level = vec![0usize; n];
    loop {
        let mut changed = false;
        for r in &ir.rules {
            let mut read = Vec::new();
            let aggregating = r.args.iter().any(|a| matches!(a, HeadArg::Agg { .. }));
            reads(&r.body, aggregating, &mut read);
            for (rel, strict) in read {
                let need = level[rel] + usize::from(strict);
                if level[r.head] < need {
                    level[r.head] = need;
                    changed = true;
                    if need > n {
                        return Err(OracleError::Unstratifiable(vec![
                            ir.relations[r.head].name.clone(),
                            ir.relations[rel].name.clone(),
                        ]));
                    }
                }
            }
        }
        if !changed {
            return Ok(level);
        }
    }
}

type Env = Vec<Option<Value>>;

fn arg(ir: &Ir, env: &Env, a: Arg) -> Option<Value> {
    match a {
        Arg::Var(v) => env[v].clone(),
        Arg::Const(c) => Some(ir.constants[c].clone()),
        Arg::Wild => None,
    }
}

/// Every binding of `body`'s variables extending `env`.
fn solutions(ir: &Ir, body: &[Lit], env: Env, facts: &[Facts]) -> Result<Vec<Env>, OracleError> {
    let mut envs = vec![env];
    // Generators first, in written order: atoms and lists.
    for lit in body {
        match lit {
            Lit::Pos { rel, args } => {
                let mut next = Vec::new();
                for env in &envs {
                    'facts: for f in &facts[*rel] {
                        let mut e = env.clone();
                        for (a, v) in args.iter().zip(f) {
                            match *a {
                                Arg::Wild => {}
                                Arg::Const(c) => {
                                    if ir.constants[c] != *v {
                                        continue 'facts;
                                    }
                                }
                                Arg::Var(x) => match &e[x] {
                                    Some(b) if !same(b, v) => continue 'facts,
                                    Some(_) => {}
                                    None => e[x] = Some(v.clone()),
                                },
                            }
                        }
                        next.push(e);
                    }
                }
                envs = next;
            }
            Lit::OneOf { var, values } => {
                let mut next = Vec::new();
                for env in &envs {
                    for &c in values {
                        let v = &ir.constants[c];
                        match &env[*var] {
                            Some(b) if !same(b, v) => {}
                            Some(_) => next.push(env.clone()),
                            None => {
                                let mut e = env.clone();
                                e[*var] = Some(v.clone());
                                next.push(e);
                            }
                        }
                    }
                }
                envs = next;
            }
            _ => {}
        }
    }
    // Aggregates bind their result; then every filter.
    for lit in body {
        if let Lit::Agg {
            result,
            func,
            distinct,
            over,
            body: inner,
        } = lit
        {
            let mut next = Vec::new();
            for env in envs {
                let sols = solutions(ir, inner, env.clone(), facts)?;
                let distinct_sols: BTreeSet<Vec<Option<Value>>> = sols.into_iter().collect();
                let values: Vec<Value> = distinct_sols
                    .iter()
                    .filter_map(|s| s[*over].clone())
                    .collect();
                let r = aggregate(*func, *distinct, values)?;
                match &env[*result] {
                    Some(b) if !same(b, &r) => {}
                    _ => {
                        let mut e = env;
                        e[*result] = Some(r);
                        next.push(e);
                    }
                }
            }
            envs = next;
        }
    }
    let mut out = Vec::new();
    'envs: for env in envs {
        for lit in body {
            let ok = match lit {
                Lit::Neg { rel, args } => !facts[*rel].iter().any(|f| {
                    // Unbound variables are existential: repeated, they must agree.
                    let mut local: Vec<(usize, &Value)> = Vec::new();
                    args.iter()
                        .zip(f)
                        .all(|(a, v)| match (arg(ir, &env, *a), a) {
                            (Some(b), _) => same(&b, v),
                            (None, Arg::Var(x)) => match local.iter().find(|(y, _)| y == x) {
                                Some((_, w)) => same(w, v),
                                None => {
                                    local.push((*x, v));
                                    true
                                }
                            },
                            (None, _) => true,
                        })
                }),
                Lit::Cmp { op, left, right } => {
                    match (arg(ir, &env, *left), arg(ir, &env, *right)) {
                        (Some(a), Some(b)) => compare(*op, &a, &b),
                        _ => false,
                    }
                }
                Lit::Builtin { builtin, args } => {
                    let vals: Vec<Option<Value>> = args.iter().map(|a| arg(ir, &env, *a)).collect();
                    builtin_holds(builtin, &vals)?
                }
                _ => true,
            };
            if !ok {
                continue 'envs;
            }
        }
        out.push(env);
    }
    Ok(out)
}

/// Term equality as the engine has it: equal values, and absent equals absent when matching
/// facts (not in comparisons).
fn same(a: &Value, b: &Value) -> bool {
    a == b
}

/// A comparison of two values as the language defines it: numbers by value, text bytewise,
/// a number never equal or ordered against a text, anything against `absent` false.
pub fn compare(op: CmpOp, a: &Value, b: &Value) -> bool {
    if *a == Value::Absent || *b == Value::Absent {
        return false;
    }
    let mixed = matches!(
        (a, b),
        (Value::Number(_), Value::Text(_)) | (Value::Text(_), Value::Number(_))
    );
    match op {
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
        _ if mixed => false,
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
    }
}

/// Glob matching by recursion on the pattern: `*` any run, `?` any one character.
fn glob_matches(s: &[char], p: &[char]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some(('*', rest)) => (0..=s.len()).any(|i| glob_matches(&s[i..], rest)),
        Some((&c, rest)) => match s.split_first() {
            Some((&d, tail)) if c == '?' || c == d => glob_matches(tail, rest),
            _ => false,
        },
    }
}

fn builtin_holds(b: &Builtin, vals: &[Option<Value>]) -> Result<bool, OracleError> {
    if let Builtin::Absent = b {
        return Ok(matches!(vals.first(), Some(Some(Value::Absent))));
    }
    let (Some(Some(Value::Text(s))), Some(Some(Value::Text(p)))) = (vals.first(), vals.get(1))
    else {
        return Ok(false);
    };
    Ok(match b {
        Builtin::Contains => s.contains(p.as_str()),
        Builtin::Prefix => s.starts_with(p.as_str()),
        Builtin::Suffix => s.ends_with(p.as_str()),
        Builtin::Glob => glob_matches(
            &s.chars().collect::<Vec<_>>(),
            &p.chars().collect::<Vec<_>>(),
        ),
        Builtin::Match => regex::Regex::new(p)
            .map_err(|e| OracleError::Regex(e.to_string()))?
            .is_match(s),
        Builtin::Absent => false,
    })
}

/// An aggregate of values (one per distinct solution).
pub fn aggregate(
    func: AggFunc,
    distinct: bool,
    mut values: Vec<Value>,
) -> Result<Value, OracleError> {
    if distinct {
        values.sort();
        values.dedup();
    }
    Ok(match func {
        AggFunc::Count => Value::Number(values.len() as f64),
        AggFunc::Sum => {
            let mut nums = Vec::new();
            for v in values {
                match v {
                    Value::Number(n) => nums.push(n),
                    Value::Absent => {}
                    Value::Text(s) => {
                        return Err(OracleError::Aggregate(format!(
                            "sum adds numbers, but one value is the text {s:?}"
                        )));
                    }
                }
            }
            nums.sort_by(f64::total_cmp);
            let s: f64 = nums.iter().sum();
            Value::Number(if s == 0.0 { 0.0 } else { s })
        }
        AggFunc::Min => values
            .into_iter()
            .filter(|v| *v != Value::Absent)
            .min()
            .unwrap_or(Value::Absent),
        AggFunc::Max => values
            .into_iter()
            .filter(|v| *v != Value::Absent)
            .max()
            .unwrap_or(Value::Absent),
        AggFunc::List => {
            return Err(OracleError::Aggregate(
                "list(...) makes a list, which only a goal's columns can hold".to_owned(),
            ));
        }
    })
}

fn rule_facts(ir: &Ir, rule: &Rule, facts: &[Facts]) -> Result<Vec<Vec<Value>>, OracleError> {
    let sols = solutions(ir, &rule.body, vec![None; rule.vars], facts)?;
    let head = |env: &Env, a: &HeadArg| match a {
        HeadArg::Arg(a) => arg(ir, env, *a).unwrap_or(Value::Absent),
        HeadArg::Agg { .. } => Value::Absent,
    };
    if !rule.aggregates() {
        return Ok(sols
            .iter()
            .map(|env| rule.args.iter().map(|a| head(env, a)).collect())
            .collect());
    }
    let distinct: BTreeSet<Vec<Option<Value>>> = sols.into_iter().collect();
    let mut groups: BTreeMap<Vec<Value>, Vec<&Env>> = BTreeMap::new();
    for env in &distinct {
        let key = rule
            .args
            .iter()
            .filter(|a| matches!(a, HeadArg::Arg(_)))
            .map(|a| head(env, a))
            .collect();
        groups.entry(key).or_default().push(env);
    }
    let mut out = Vec::new();
    for (key, envs) in groups {
        let mut k = key.into_iter();
        let mut tuple = Vec::new();
        for a in &rule.args {
            match a {
                HeadArg::Agg {
                    func,
                    distinct,
                    over,
                } => {
                    let values = envs.iter().filter_map(|e| e[*over].clone()).collect();
                    tuple.push(aggregate(*func, *distinct, values)?);
                }
                HeadArg::Arg(_) => tuple.push(k.next().unwrap_or(Value::Absent)),
            }
        }
        out.push(tuple);
    }
    Ok(out)
}

/// A cell of the oracle's answer: a value, or a list from `list(...)`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cell {
    /// One value.
    Value(Value),
    /// A list, ascending.
    List(Vec<Value>),
}

/// A page of the oracle's answer: the rows' cells, and how many rows the whole answer has.
#[derive(Clone, Debug, PartialEq)]
pub struct Page {
    /// The rows of the page.
    pub rows: Vec<Vec<Cell>>,
    /// Rows in the whole answer (after the program's own offset and limit).
    pub total: u64,
}

/// The answer the goal's solutions `goal` make under `shape`, as the language defines it:
/// without aggregates, the distinct projections; with them (or `having`, or an aggregate
/// to order by), one row per distinct value of the column variables (one row in all when
/// there is none), aggregates over the group's solutions, `having` dropping groups; rows
/// in `order by` order then ascending by their cells; the program's offset and limit, then
/// the page at `offset` of at most `limit` rows.
pub fn answer(
    goal: &Facts,
    shape: &crate::ir::Shape,
    offset: u64,
    limit: u64,
) -> Result<Page, OracleError> {
    use crate::ir::ColumnSpec;
    let aggregates = |c: &ColumnSpec| matches!(c, ColumnSpec::Agg { .. });
    let grouped = shape.columns.iter().any(aggregates)
        || !shape.having.is_empty()
        || shape.order.iter().any(|o| aggregates(&o.column));
    let mut rows = if grouped {
        grouped_rows(goal, shape)?
    } else {
        projected_rows(goal, shape)
    };
    rows.sort_by(|(ka, ca), (kb, cb)| {
        for (i, o) in shape.order.iter().enumerate() {
            let ord = ka[i].cmp(&kb[i]);
            let ord = if o.desc { ord.reverse() } else { ord };
            if ord.is_ne() {
                return ord;
            }
        }
        ca.cmp(cb)
    });
    let rows: Vec<Vec<Cell>> = rows.into_iter().map(|(_, c)| c).collect();
    // The program's own window, then the page.
    let whole = window(rows, shape.offset, shape.limit);
    let total = whole.len() as u64;
    Ok(Page {
        rows: window(whole, offset, Some(limit)),
        total,
    })
}

/// `rows` past the first `offset`, at most `limit` of them.
fn window(rows: Vec<Vec<Cell>>, offset: u64, limit: Option<u64>) -> Vec<Vec<Cell>> {
    let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    rows.into_iter()
        .skip(count(offset))
        .take(limit.map_or(usize::MAX, count))
        .collect()
}

/// An answer's row before ordering: its order keys, then its cells.
type KeyedRow = (Vec<Cell>, Vec<Cell>);

/// The rows of an answer without aggregates: each distinct projection, ordered by the values
/// of its least solution.
fn projected_rows(goal: &Facts, shape: &crate::ir::Shape) -> Vec<KeyedRow> {
    use crate::ir::ColumnSpec;
    let mut seen = BTreeSet::new();
    let mut rows = Vec::new();
    for s in goal {
        let cells: Vec<Cell> = shape
            .columns
            .iter()
            .map(|c| match c {
                ColumnSpec::Var(v) => Cell::Value(s[*v].clone()),
                ColumnSpec::Agg { .. } => Cell::Value(Value::Absent),
            })
            .collect();
        if seen.insert(cells.clone()) {
            let keys = shape
                .order
                .iter()
                .map(|o| match o.column {
                    ColumnSpec::Var(v) => Cell::Value(s[v].clone()),
                    ColumnSpec::Agg { .. } => Cell::Value(Value::Absent),
                })
                .collect();
            rows.push((keys, cells));
        }
    }
    rows
}

/// The rows of an aggregating answer: one per distinct value of the column variables (one
/// in all when there is none) that passes `having`.
fn grouped_rows(goal: &Facts, shape: &crate::ir::Shape) -> Result<Vec<KeyedRow>, OracleError> {
    use crate::ir::ColumnSpec;
    let vars: Vec<usize> = shape
        .columns
        .iter()
        .filter_map(|c| match c {
            ColumnSpec::Var(v) => Some(*v),
            ColumnSpec::Agg { .. } => None,
        })
        .collect();
    let mut groups: BTreeMap<Vec<Value>, Vec<&Vec<Value>>> = BTreeMap::new();
    if vars.is_empty() {
        groups.insert(Vec::new(), goal.iter().collect());
    } else {
        for s in goal {
            let key = vars.iter().map(|&v| s[v].clone()).collect();
            groups.entry(key).or_default().push(s);
        }
    }
    let cell = |c: &ColumnSpec, key: &[Value], sols: &[&Vec<Value>]| -> Result<Cell, OracleError> {
        let values = |var: usize| sols.iter().map(|s| s[var].clone()).collect::<Vec<_>>();
        Ok(match *c {
            ColumnSpec::Var(v) => {
                let at = vars.iter().position(|&x| x == v);
                Cell::Value(at.map_or(Value::Absent, |i| key[i].clone()))
            }
            ColumnSpec::Agg {
                func: AggFunc::List,
                distinct,
                var,
            } => {
                let mut values = values(var);
                values.sort();
                if distinct {
                    values.dedup();
                }
                Cell::List(values)
            }
            ColumnSpec::Agg {
                func,
                distinct,
                var,
            } => Cell::Value(aggregate(func, distinct, values(var))?),
        })
    };
    let mut rows = Vec::new();
    'groups: for (key, sols) in &groups {
        for h in &shape.having {
            match cell(&h.aggregate, key, sols)? {
                Cell::Value(v) if compare(h.op, &v, &h.value) => {}
                _ => continue 'groups,
            }
        }
        let cells = shape
            .columns
            .iter()
            .map(|c| cell(c, key, sols))
            .collect::<Result<Vec<_>, _>>()?;
        let keys = shape
            .order
            .iter()
            .map(|o| match o.column {
                // Ordered by a column variable: its value; by another, absent.
                ColumnSpec::Var(v) if !shape.columns.contains(&ColumnSpec::Var(v)) => {
                    Ok(Cell::Value(Value::Absent))
                }
                ref c => cell(c, key, sols),
            })
            .collect::<Result<Vec<_>, _>>()?;
        rows.push((keys, cells));
    }
    Ok(rows)
}
