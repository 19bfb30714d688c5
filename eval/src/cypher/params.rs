//! Giving `$params` their values in the compiled program: the goal's through the bind
//! mechanism (as `query` binds a program's variables), and the compiled program's own rules
//! (helpers for `OR`, `OPTIONAL MATCH`, pattern predicates) by putting each value in place of
//! its variable in the parsed rules. Either way the value never enters the program's text.

use std::collections::{BTreeSet, HashMap};

use crate::data::value::Value;
use crate::front::ast::{HeadArg, Literal, Program, Term, Var};
use crate::link::compile::Bind;

/// Splits `binds` between the goal and the rules of `program`: puts each single value in
/// place of its variable in the rules, and answers the binds of the variables the goal uses.
pub fn bind(program: &mut Program, binds: &[(String, Bind)]) -> Vec<(String, Bind)> {
    let one: HashMap<&str, &Value> = binds
        .iter()
        .filter_map(|(k, b)| match b {
            Bind::One(v) => Some((k.as_str(), v)),
            Bind::List(_) => None,
        })
        .collect();
    for rule in &mut program.rules {
        for a in &mut rule.head.args {
            if let HeadArg::Term(t) = a {
                put(t, &one);
            }
        }
        literals(&mut rule.body, &mut |t| put(t, &one));
    }
    let mut used = BTreeSet::new();
    let mut goal = program.goal.body.clone();
    literals(&mut goal, &mut |t| {
        if let Term::Var(Var { name, .. }) = t {
            used.insert(name.clone());
        }
    });
    binds
        .iter()
        .filter(|(k, _)| used.contains(k))
        .cloned()
        .collect()
}

/// `t`, or the value its variable is given.
fn put(t: &mut Term, one: &HashMap<&str, &Value>) {
    let Term::Var(v) = t else { return };
    let Some(value) = one.get(v.name.as_str()) else {
        return;
    };
    let span = v.span;
    *t = match value {
        Value::Text(s) => Term::Text {
            value: s.clone(),
            span,
        },
        Value::Number(n) => Term::Number { value: *n, span },
        Value::Absent => Term::Absent(span),
    };
}

/// Visits every term of `body`, aggregate literals' bodies included.
fn literals(body: &mut [Literal], f: &mut dyn FnMut(&mut Term)) {
    for l in body {
        match l {
            Literal::Atom(a) | Literal::Not { atom: a, .. } => a.args.iter_mut().for_each(&mut *f),
            Literal::Compare(c) => {
                f(&mut c.left);
                f(&mut c.right);
            }
            Literal::Aggregate(a) => literals(&mut a.body, f),
        }
    }
}
