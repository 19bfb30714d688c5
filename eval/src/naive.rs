//! The naive evaluator: the test oracle.
//!
//! It works on values, not terms, reads every base relation whole, and evaluates each rule by
//! trying every combination of facts for its positive atoms in the order written, then
//! filtering; strata are repeated until nothing changes. It is slow and obviously right, and
//! the property tests compare the engine with it.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use crate::data::source::FactSource;
use crate::data::value::Value;
use crate::exec::engine::{EvalError, glob};
use crate::front::ast::{AggFunc, CmpOp};
use crate::ir::{Arg, Builtin, HeadArg, Ir, Lit, RelKind, Rule};
use crate::link::strata::stratify;

/// A relation's facts, as values.
pub type Facts = BTreeSet<Vec<Value>>;

/// Evaluates `ir` naively; returns every relation's facts by [`crate::ir::RelId`] (base
/// relations' too).
pub fn evaluate(ir: &Ir, source: &dyn FactSource) -> Result<Vec<Facts>, EvalError> {
    let strata = stratify(ir).map_err(|u| EvalError::Unstratifiable {
        cycle: u
            .cycle
            .iter()
            .map(|&r| ir.relations[r].name.clone())
            .collect(),
        negation: u.negation,
    })?;
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
    for stratum in strata {
        loop {
            let mut changed = false;
            for rule in ir
                .rules
                .iter()
                .filter(|r| stratum.relations.contains(&r.head))
            {
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

type Env = Vec<Option<Value>>;

fn arg(ir: &Ir, env: &Env, a: Arg) -> Option<Value> {
    match a {
        Arg::Var(v) => env[v].clone(),
        Arg::Const(c) => Some(ir.constants[c].clone()),
        Arg::Wild => None,
    }
}

/// Every binding of `body`'s variables extending `env`.
fn solutions(ir: &Ir, body: &[Lit], env: Env, facts: &[Facts]) -> Result<Vec<Env>, EvalError> {
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

fn builtin_holds(b: &Builtin, vals: &[Option<Value>]) -> Result<bool, EvalError> {
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
        Builtin::Glob => glob(s, p),
        Builtin::Match => regex::Regex::new(p)
            .map_err(|e| EvalError::Regex(e.to_string()))?
            .is_match(s),
        Builtin::Absent => false,
    })
}

/// An aggregate of values (one per distinct solution).
pub fn aggregate(
    func: AggFunc,
    distinct: bool,
    mut values: Vec<Value>,
) -> Result<Value, EvalError> {
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
                        return Err(EvalError::Aggregate(format!(
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
            return Err(EvalError::Aggregate(
                "list(...) makes a list, which only a goal's columns can hold".to_owned(),
            ));
        }
    })
}

fn rule_facts(ir: &Ir, rule: &Rule, facts: &[Facts]) -> Result<Vec<Vec<Value>>, EvalError> {
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
