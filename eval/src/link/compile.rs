//! The checker: a parsed program, linked against a [`Vocabulary`], checked and lowered to the
//! [`Ir`] the evaluator runs, with what the answer layer needs to project, aggregate, filter,
//! order and page the goal's solutions.
//!
//! [`compile`] resolves every name (with "did you mean" for an unknown one), checks arities,
//! safety (module `safety`), stratification (module `cycles`), the query's rule heads,
//! the goal's columns, `having` and `order by`, and gives the goal's variables the values of
//! `binds`. Every error is one [`Diagnostic`], rendered against the program's text:
//!
//! ```
//! use strata_eval::compile;
//! use strata_eval::Vocabulary;
//! use strata_eval::{RelationInfo, parse_program};
//!
//! let imports = RelationInfo {
//!     name: "imports".into(),
//!     columns: vec!["src".into(), "dst".into()],
//!     doc: String::new(),
//!     tier: "default".into(),
//!     rows: 0,
//!     distinct: vec![0, 0],
//!     origin: Default::default(),
//!     spelled: String::new(),
//!     unindexed: Vec::new(),
//! };
//! let deps = "depends_on(?a, ?b) :- imports(?a, ?b);";
//! let vocab = Vocabulary::from_sources(vec![imports], &[("deps", deps)]).unwrap();
//!
//! let text = r#"deps.depends_on("app", ?d) => ?d"#;
//! let compiled = compile(&vocab, &parse_program(text).unwrap(), &[]).unwrap();
//! assert_eq!(compiled.shape.names, ["d"]);
//!
//! let text = r#"depends_on("app", ?d) => ?d"#;
//! let err = compile(&vocab, &parse_program(text).unwrap(), &[]).unwrap_err();
//! assert_eq!(
//!     err.render("query", text),
//!     "query: unknown relation \"depends_on\"; did you mean \"deps.depends_on\"?\n\
//!      line 1, column 1:\n  depends_on(\"app\", ?d) => ?d\n  ^\n\
//!      fix: did you mean \"deps.depends_on\"?"
//! );
//! ```

use std::collections::{HashMap, HashSet};

use crate::data::value::Value;
use crate::front::ast::{self, AggFunc, Column, Direction, Program, Span};
use crate::front::diagnostic::Diagnostic;
use crate::ir::Ir;
use crate::ir::{ColumnSpec, HavingSpec, OrderSpec, Shape};
use crate::link::linked::{
    LGoal, LRule, LTerm, all_vars, link_goal, link_rule, list_error, top_vars,
};
use crate::link::lower::Lowering;
use crate::link::resolve::{LocalRel, Resolver, Target, arity_error, target_name};
use crate::link::safety::{Level, check_goal, check_rule};
use crate::link::strata::check_linked;
use crate::link::vocab::{Vocabulary, builtin, head_columns};

/// A value given to a goal's variable by name, never spliced into the program's text.
#[derive(Clone, Debug, PartialEq)]
pub enum Bind {
    /// The variable is this value: it is replaced by the constant.
    One(Value),
    /// The variable ranges over these values.
    List(Vec<Value>),
}

/// A checked program, lowered, with everything the answer layer needs.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The program to evaluate. [`Ir::goal`] holds one tuple per solution of the goal: the
    /// values of [`Compiled::goal_vars`], in order.
    pub ir: Ir,
    /// The goal's variables (names without `?`), in order of first appearance; not `_`, not
    /// the existential variables of `not`, not the variables local to an aggregate's `{ }`.
    /// A variable `bind` gave one value is among them, its column holding that value.
    pub goal_vars: Vec<String>,
    /// How the goal's solutions become the answer, for [`crate::answer::Answer::build`]:
    /// the columns (those after `=>`, or else every goal variable), their names (a
    /// variable's name without `?`, `d`; an aggregate as written without `?`, `count(d)`,
    /// `count(distinct d)`), `having`, `order by`, `limit` and `offset`.
    pub shape: Shape,
    /// The base relations the program reads (their stored names).
    pub base_relations: Vec<String>,
    /// The program as text, in canonical form (binds are not spliced in).
    pub program: String,
}

/// Checks `program` against `vocab`, gives the goal's variables the values of `binds` (by
/// name, with or without the `?`), and lowers it.
pub fn compile(
    vocab: &Vocabulary,
    program: &Program,
    binds: &[(String, Bind)],
) -> Result<Compiled, Diagnostic> {
    let locals = declare(vocab, &program.rules)?;
    let res = Resolver {
        vocab,
        module: None,
        locals: &locals,
    };
    let mut rules = Vec::with_capacity(program.rules.len());
    for r in &program.rules {
        let i = locals
            .iter()
            .position(|l| l.name == r.head.relation.text)
            .unwrap_or(0);
        let linked = link_rule(&res, r, Target::Local(i))?;
        check_rule(&linked)?;
        rules.push(linked);
    }
    let tagged: Vec<(&LRule, ())> = rules.iter().map(|r| (r, ())).collect();
    check_linked(&tagged, &|t| target_name(vocab, &locals, t)).map_err(|(_, d)| d)?;

    let goal = &program.goal;
    let binds = normalize_binds(binds, goal)?;
    let linked = link_goal(&res, goal, &binds)?;
    let level = check_goal(&linked.body, &linked.names)?;
    let goal = Goal::new(goal, &linked, &level, &binds);
    let (columns, names) = goal.columns()?;
    let having = goal.having()?;
    let order = goal.order_by(&columns)?;
    let shape = Shape {
        names,
        columns,
        having,
        order,
        limit: program.goal.limit.map(|l| l.value),
        offset: program.goal.offset.map_or(0, |o| o.value),
    };

    let ir = Lowering {
        vocab,
        locals: &locals,
        query_rules: &rules,
    }
    .lower(&linked.body, &goal.head, &linked.names);
    let base_relations = ir.base_relations().into_iter().map(str::to_owned).collect();
    Ok(Compiled {
        ir,
        goal_vars: goal.vars,
        shape,
        base_relations,
        program: program.to_string(),
    })
}

/// The relations the query's rules define, after checking their heads: bare names, not
/// naming a base relation, a builtin or a module member, each with one arity.
fn declare(vocab: &Vocabulary, rules: &[ast::Rule]) -> Result<Vec<LocalRel>, Diagnostic> {
    let mut locals: Vec<LocalRel> = Vec::new();
    for rule in rules {
        let name = &rule.head.relation;
        let text = name.text.as_str();
        let what = if builtin(text).is_some() {
            Some("a builtin".to_owned())
        } else if vocab.base_index.contains_key(text) {
            Some("a base relation".to_owned())
        } else {
            vocab.member_index.get(text).map(|&i| {
                let m = &vocab.members[i];
                format!("defined by module \"{}\"", vocab.modules[m.module].path)
            })
        };
        if let Some(what) = what {
            return Err(Diagnostic::new(
                format!("\"{text}\" is {what}; a query's rules can't redefine it"),
                name.span,
            )
            .with_fix(format!(
                "give the rule's relation a name of its own, such as my_{}",
                name.last_segment().trim_start_matches('_')
            )));
        }
        if name.is_qualified() {
            return Err(Diagnostic::new(
                format!("a query's rule defines a bare name, not \"{text}\""),
                name.span,
            )
            .with_fix(format!(
                "write {}(...) :- ... (dotted names belong to modules' files)",
                name.last_segment()
            )));
        }
        match locals.iter().find(|l| l.name == text) {
            Some(l) if l.columns.len() != rule.head.args.len() => {
                let sig = format!("{text}({})", l.columns.join(", "));
                let spans: Vec<Span> = rule.head.args.iter().map(ast::HeadArg::span).collect();
                return Err(arity_error(&sig, l.columns.len(), &spans, rule.head.span));
            }
            Some(_) => {}
            None => locals.push(LocalRel {
                name: text.to_owned(),
                columns: head_columns(&rule.head.args),
            }),
        }
    }
    Ok(locals)
}

/// `?a, ?d`: the variables written in the goal, for fixes.
fn listed(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("?{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The binds by name without `?`, each checked: the goal uses the variable (in its body, or as
/// the value a `having` compares with), it is bound once, its numbers are finite.
fn normalize_binds(
    binds: &[(String, Bind)],
    goal: &ast::Goal,
) -> Result<HashMap<String, Bind>, Diagnostic> {
    let mut written: Vec<&str> = Vec::new();
    let having = goal.having.iter().filter_map(|h| h.value.as_var());
    for v in all_vars(&goal.body).into_iter().chain(having) {
        if !written.contains(&v.name.as_str()) {
            written.push(&v.name);
        }
    }
    let mut out = HashMap::new();
    for (name, bind) in binds {
        let name = name.strip_prefix('?').unwrap_or(name);
        if !written.contains(&name) {
            let fix = if written.is_empty() {
                "the goal has no variables; drop the bind".to_owned()
            } else {
                format!("the goal's variables are {}", listed(&written))
            };
            return Err(Diagnostic::new(
                format!("bind gives a value to ?{name}, but the goal doesn't use ?{name}"),
                goal.span,
            )
            .with_fix(fix));
        }
        let values: &[Value] = match bind {
            Bind::One(v) => std::slice::from_ref(v),
            Bind::List(vs) => vs,
        };
        if values
            .iter()
            .any(|v| matches!(v, Value::Number(n) if !n.is_finite()))
        {
            return Err(Diagnostic::new(
                format!("bind gives ?{name} a number that isn't finite"),
                goal.span,
            )
            .with_fix("give a finite number, a text or a list of them"));
        }
        let zero = |v: &Value| match v {
            Value::Number(n) if *n == 0.0 => Value::Number(0.0),
            other => other.clone(),
        };
        let bind = match bind {
            Bind::One(v) => Bind::One(zero(v)),
            Bind::List(vs) => Bind::List(vs.iter().map(zero).collect()),
        };
        if out.insert(name.to_owned(), bind).is_some() {
            return Err(
                Diagnostic::new(format!("bind gives ?{name} a value twice"), goal.span)
                    .with_fix(format!("give ?{name} one value, or one list of values")),
            );
        }
    }
    Ok(out)
}

/// A goal being checked: its variables, and how its columns refer to them.
struct Goal<'a> {
    ast: &'a ast::Goal,
    /// The goal variables' names.
    vars: Vec<String>,
    /// The goal relation's arguments: a variable, or the constant a bind replaced it by.
    head: Vec<LTerm>,
    /// The variables outside aggregates' `{ }` that only `not` holds.
    existential: HashSet<String>,
    /// Every variable written in the goal.
    written: Vec<String>,
    binds: &'a HashMap<String, Bind>,
}

impl<'a> Goal<'a> {
    fn new(
        ast: &'a ast::Goal,
        linked: &LGoal,
        level: &Level,
        binds: &'a HashMap<String, Bind>,
    ) -> Goal<'a> {
        let top: HashSet<&str> = top_vars(&ast.body)
            .into_iter()
            .map(|v| v.name.as_str())
            .collect();
        let mut g = Goal {
            ast,
            vars: Vec::new(),
            head: Vec::new(),
            existential: HashSet::new(),
            written: Vec::new(),
            binds,
        };
        for v in all_vars(&ast.body) {
            if g.written.contains(&v.name) {
                continue;
            }
            g.written.push(v.name.clone());
            if let Some(&slot) = linked.top.get(&v.name) {
                if level.existential.contains_key(&slot) {
                    g.existential.insert(v.name.clone());
                } else {
                    g.vars.push(v.name.clone());
                    g.head.push(LTerm::Var(slot, v.span));
                }
            } else if let (true, Some(Bind::One(value))) =
                (top.contains(v.name.as_str()), binds.get(&v.name))
            {
                g.vars.push(v.name.clone());
                g.head.push(LTerm::Const(value.clone()));
            }
        }
        g
    }

    /// The index of the goal variable `v`, or the error saying why it is not one.
    fn var(&self, v: &ast::Var) -> Result<usize, Diagnostic> {
        if let Some(i) = self.vars.iter().position(|n| *n == v.name) {
            return Ok(i);
        }
        let (message, fix) = if self.existential.contains(&v.name) {
            (
                format!("{v} appears only under \"not\", so the goal has no value to show for it"),
                format!("bind {v} with a positive atom of the goal, or drop it here"),
            )
        } else if self.written.contains(&v.name) {
            (
                format!(
                    "{v} is local to an aggregate's {{ }}, so the goal has no value to show for it"
                ),
                format!("use {v} outside the {{ }} too, or drop it here"),
            )
        } else {
            let vars: Vec<&str> = self.vars.iter().map(String::as_str).collect();
            (
                format!("{v} is not a variable of the goal"),
                if vars.is_empty() {
                    "the goal has no variables to show".to_owned()
                } else {
                    format!("the goal's variables are {}", listed(&vars))
                },
            )
        };
        Err(Diagnostic::new(message, v.span).with_fix(fix))
    }

    fn agg(&self, a: &ast::Aggregate) -> Result<ColumnSpec, Diagnostic> {
        Ok(ColumnSpec::Agg {
            func: a.func,
            distinct: a.distinct,
            var: self.var(&a.var)?,
        })
    }

    /// The columns and their names.
    fn columns(&self) -> Result<(Vec<ColumnSpec>, Vec<String>), Diagnostic> {
        let Some(cols) = &self.ast.columns else {
            return Ok((
                (0..self.vars.len()).map(ColumnSpec::Var).collect(),
                self.vars.clone(),
            ));
        };
        let mut specs = Vec::with_capacity(cols.len());
        let mut names = Vec::with_capacity(cols.len());
        for c in cols {
            match c {
                Column::Var(v) => {
                    specs.push(ColumnSpec::Var(self.var(v)?));
                    names.push(v.name.clone());
                }
                Column::Aggregate(a) => {
                    specs.push(self.agg(a)?);
                    names.push(aggregate_name(a));
                }
            }
        }
        Ok((specs, names))
    }

    fn having(&self) -> Result<Vec<HavingSpec>, Diagnostic> {
        let mut out = Vec::with_capacity(self.ast.having.len());
        for h in &self.ast.having {
            if h.aggregate.func == AggFunc::List {
                return Err(list_error(h.aggregate.span));
            }
            let agg = self.agg(&h.aggregate)?;
            let value = match &h.value {
                ast::Term::Var(v) => match self.binds.get(&v.name) {
                    Some(Bind::One(value)) => value.clone(),
                    _ => {
                        return Err(Diagnostic::new(
                            format!("having compares an aggregate with a constant, not {v}"),
                            v.span,
                        )
                        .with_fix(format!(
                            "write a number or a \"text\", or give {v} a value with bind"
                        )));
                    }
                },
                ast::Term::Wildcard(span) => {
                    return Err(Diagnostic::new(
                        "having compares an aggregate with a constant, not _",
                        *span,
                    )
                    .with_fix("write a number or a \"text\""));
                }
                other => other.constant().unwrap_or(Value::Absent),
            };
            out.push(HavingSpec {
                aggregate: agg,
                op: h.op,
                value,
            });
        }
        Ok(out)
    }

    fn order_by(&self, columns: &[ColumnSpec]) -> Result<Vec<OrderSpec>, Diagnostic> {
        let mut out = Vec::with_capacity(self.ast.order_by.len());
        for k in &self.ast.order_by {
            let spec = match &k.column {
                Column::Var(v) => ColumnSpec::Var(self.var(v)?),
                Column::Aggregate(a) => {
                    if a.func == AggFunc::List {
                        return Err(list_error(a.span));
                    }
                    self.agg(a)?
                }
            };
            if matches!(spec, ColumnSpec::Var(_)) && !columns.contains(&spec) {
                return Err(Diagnostic::new(
                    format!("order by {}, which is not a column", k.column),
                    k.column.span(),
                )
                .with_fix(format!(
                    "add {} to the columns after =>, or order by one of them",
                    k.column
                )));
            }
            out.push(OrderSpec {
                column: spec,
                desc: k.direction == Direction::Desc,
            });
        }
        Ok(out)
    }
}

/// `count(d)`, `count(distinct d)`.
fn aggregate_name(a: &ast::Aggregate) -> String {
    let distinct = if a.distinct { "distinct " } else { "" };
    format!("{}({distinct}{})", a.func, a.var.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::source::RelationInfo;
    use crate::front::parse::parse_program;

    fn vocab() -> Vocabulary {
        let rel = |name: &str, columns: &[&str]| RelationInfo {
            name: name.to_owned(),
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            doc: String::new(),
            tier: "default".to_owned(),
            rows: 0,
            distinct: vec![0; columns.len()],
            origin: Default::default(),
            spelled: String::new(),
            unindexed: Vec::new(),
        };
        Vocabulary::from_sources(vec![rel("e", &["a", "b"])], &[]).unwrap()
    }

    #[test]
    fn binds_are_normalized() {
        let goal = parse_program("e(?x, ?y)").unwrap().goal;
        let b = normalize_binds(
            &[
                ("?x".to_owned(), Bind::One(Value::Number(-0.0))),
                ("y".to_owned(), Bind::List(vec![Value::text("a")])),
            ],
            &goal,
        )
        .unwrap();
        assert_eq!(b.get("x"), Some(&Bind::One(Value::Number(0.0))));
        assert!(matches!(b.get("x"), Some(Bind::One(Value::Number(n))) if n.is_sign_positive()));
        assert_eq!(b.get("y"), Some(&Bind::List(vec![Value::text("a")])));
    }

    #[test]
    fn goal_variables_skip_wildcards_existentials_and_locals() {
        let v = vocab();
        let p = parse_program(
            "?n = count(?l) : { e(?y, ?l) }, e(?x, _), e(?y, ?x), not e(?x, ?gone) => ?x, ?n, ?y",
        )
        .unwrap();
        let c = compile(&v, &p, &[]).unwrap();
        assert_eq!(c.goal_vars, ["n", "y", "x"]);
        assert_eq!(
            c.shape.columns,
            [ColumnSpec::Var(2), ColumnSpec::Var(0), ColumnSpec::Var(1)]
        );
        assert_eq!(c.ir.relations[c.ir.goal].arity, 3);
    }

    #[test]
    fn a_bound_variable_stays_a_column() {
        let v = vocab();
        let p = parse_program("e(?x, ?y)").unwrap();
        let c = compile(&v, &p, &[("x".to_owned(), Bind::One(Value::text("k")))]).unwrap();
        assert_eq!(c.shape.names, ["x", "y"]);
        let goal = &c.ir.rules[c.ir.rules.len() - 1];
        assert!(matches!(
            goal.args[0],
            crate::ir::HeadArg::Arg(crate::ir::Arg::Const(_))
        ));
    }
}
