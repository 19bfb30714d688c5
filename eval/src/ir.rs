//! The program as the evaluator runs it: relations by number, rules over variable slots.
//!
//! The checker lowers a linked, checked [`crate::front::ast::Program`] to an [`Ir`]; the evaluators
//! ([`crate::naive`] and `crate::exec::engine`) run it. Nothing here refers to source text except
//! the names kept for witnesses and reports.

use crate::data::value::Value;
pub use crate::ops::{AggFunc, CmpOp};

/// The name prefix of join intermediates: internal (`@`), never shown.
pub const JOIN_PREFIX: &str = "@join.";

/// A relation's number within one [`Ir`].
pub type RelId = usize;

/// A variable's slot within one rule (or one goal).
pub type VarId = usize;

/// Where a relation's facts come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelKind {
    /// Stored facts, read through the [`crate::FactSource`].
    Base,
    /// Computed by rules.
    Derived,
}

/// A relation the program reads or defines.
#[derive(Clone, Debug, PartialEq)]
pub struct RelDecl {
    /// Its full name, as witnesses print it (`deps._step`).
    pub name: String,
    /// Its number of arguments.
    pub arity: usize,
    /// Base or derived.
    pub kind: RelKind,
}

/// An argument of an atom, a comparison or a builtin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arg {
    /// A variable slot.
    Var(VarId),
    /// A constant: an index into [`Ir::constants`].
    Const(usize),
    /// `_`: matches anything, binds nothing.
    Wild,
}

/// A builtin predicate. Each tests bound arguments.
#[derive(Clone, Debug)]
pub enum Builtin {
    /// `str.contains(s, sub)`.
    Contains,
    /// `str.prefix(s, p)`.
    Prefix,
    /// `str.suffix(s, x)`.
    Suffix,
    /// `str.glob(s, pattern)`: `*` any run, `?` any one character.
    Glob,
    /// `str.match(s, regex)`, unanchored.
    Match,
    /// `absent(x)`: holds only for absent.
    Absent,
}

impl Builtin {
    /// The builtin's name as programs write it.
    pub fn name(&self) -> &'static str {
        match self {
            Builtin::Contains => "str.contains",
            Builtin::Prefix => "str.prefix",
            Builtin::Suffix => "str.suffix",
            Builtin::Glob => "str.glob",
            Builtin::Match => "str.match",
            Builtin::Absent => "absent",
        }
    }

    /// Its number of arguments.
    pub fn arity(&self) -> usize {
        match self {
            Builtin::Absent => 1,
            _ => 2,
        }
    }
}

/// A body literal.
#[derive(Clone, Debug)]
pub enum Lit {
    /// `rel(args)`: a fact of `rel` matches.
    Pos {
        /// The relation.
        rel: RelId,
        /// Its arguments.
        args: Vec<Arg>,
    },
    /// `not rel(args)`: no fact of `rel` matches (its variables are bound, or existential).
    Neg {
        /// The relation.
        rel: RelId,
        /// Its arguments.
        args: Vec<Arg>,
    },
    /// `left op right`, on bound values.
    Cmp {
        /// The operator.
        op: CmpOp,
        /// Left side.
        left: Arg,
        /// Right side.
        right: Arg,
    },
    /// A builtin test.
    Builtin {
        /// Which.
        builtin: Builtin,
        /// Its arguments.
        args: Vec<Arg>,
    },
    /// The variable takes each of the constants in turn (a bound list), or, bound before,
    /// must equal one of them.
    OneOf {
        /// The variable.
        var: VarId,
        /// The constants (indexes into [`Ir::constants`]).
        values: Vec<usize>,
    },
    /// `?result = func(?over) : { body }`: the aggregate of `over` across the solutions of
    /// `body`, for the bindings of the variables `body` shares with the rest of the rule.
    Agg {
        /// The variable receiving the aggregate.
        result: VarId,
        /// The function.
        func: AggFunc,
        /// Whether duplicates of `over` count once.
        distinct: bool,
        /// The variable aggregated.
        over: VarId,
        /// The inner literals (positive atoms, negations, comparisons, builtins).
        body: Vec<Lit>,
    },
}

impl Lit {
    /// The variables the literal mentions (inner ones included, for aggregates).
    pub fn vars(&self) -> Vec<VarId> {
        let mut out = Vec::new();
        let args = |args: &[Arg], out: &mut Vec<VarId>| {
            for a in args {
                if let Arg::Var(v) = a {
                    out.push(*v);
                }
            }
        };
        match self {
            Lit::Pos { args: a, .. } | Lit::Neg { args: a, .. } | Lit::Builtin { args: a, .. } => {
                args(a, &mut out);
            }
            Lit::Cmp { left, right, .. } => args(&[*left, *right], &mut out),
            Lit::OneOf { var, .. } => out.push(*var),
            Lit::Agg {
                result, over, body, ..
            } => {
                out.push(*result);
                out.push(*over);
                for l in body {
                    out.extend(l.vars());
                }
            }
        }
        out
    }
}

/// A head argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadArg {
    /// A variable or constant.
    Arg(Arg),
    /// An aggregate over the rule's solutions, grouped by the head's other arguments.
    Agg {
        /// The function.
        func: AggFunc,
        /// Whether duplicates count once.
        distinct: bool,
        /// The variable aggregated.
        over: VarId,
    },
}

/// A rule: `head(args) :- body`.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The relation it defines.
    pub head: RelId,
    /// The head's arguments.
    pub args: Vec<HeadArg>,
    /// The body, in the order written (witnesses list premises in this order).
    pub body: Vec<Lit>,
    /// How many variable slots the rule uses.
    pub vars: usize,
    /// The variables' names by slot, for reports (empty when unknown: `?v0`, `?v1`...).
    pub names: Vec<String>,
}

impl Rule {
    /// Whether a head argument is an aggregate.
    pub fn aggregates(&self) -> bool {
        self.args.iter().any(|a| matches!(a, HeadArg::Agg { .. }))
    }
}

/// A linked program ready to run: its relations, constants and rules. The goal is a rule
/// like the others, defining the relation [`Ir::goal`], whose arguments are the goal's
/// variables in order of first appearance.
#[derive(Clone, Debug)]
pub struct Ir {
    /// Every relation read or defined, base ones included.
    pub relations: Vec<RelDecl>,
    /// The constants the program mentions.
    pub constants: Vec<Value>,
    /// Every rule, the goal's included.
    pub rules: Vec<Rule>,
    /// The relation holding the goal's solutions.
    pub goal: RelId,
}

impl Ir {
    /// The rules defining `rel`.
    pub fn rules_of(&self, rel: RelId) -> impl Iterator<Item = (usize, &Rule)> {
        self.rules
            .iter()
            .enumerate()
            .filter(move |(_, r)| r.head == rel)
    }

    /// When the goal only restates a derived relation (`tc(?x, ?y)` with its variables in
    /// order, nothing else), that relation: its tuples are the goal's solutions, so it can be
    /// answered from directly instead of being copied.
    pub fn goal_alias(&self) -> Option<RelId> {
        let mut rules = self.rules.iter().filter(|r| r.head == self.goal);
        let rule = rules.next()?;
        if rules.next().is_some() {
            return None;
        }
        let [Lit::Pos { rel, args }] = rule.body.as_slice() else {
            return None;
        };
        let simple = self.relations[*rel].kind == RelKind::Derived
            && args.len() == rule.args.len()
            && args
                .iter()
                .zip(&rule.args)
                .enumerate()
                .all(|(i, (a, h))| *a == Arg::Var(i) && *h == HeadArg::Arg(Arg::Var(i)));
        simple.then_some(*rel)
    }

    /// Whether `rel` is a join intermediate ([`crate::rewrite::split`]).
    pub fn is_join(&self, rel: RelId) -> bool {
        self.relations[rel].name.starts_with(JOIN_PREFIX)
    }

    /// `rule` as written: each join intermediate it reads replaced by the literals it joins
    /// (the variables are shared, so the rule reads as the program wrote it).
    pub fn written(&self, rule: &Rule) -> Rule {
        let mut body = Vec::new();
        for l in &rule.body {
            match l {
                Lit::Pos { rel, .. } if self.is_join(*rel) => {
                    if let Some((_, inner)) = self.rules_of(*rel).next() {
                        body.extend(self.written(inner).body);
                    }
                }
                other => body.push(other.clone()),
            }
        }
        Rule {
            body,
            ..rule.clone()
        }
    }

    /// The rule whose work rule `r` does, as written: the rule reading a join
    /// intermediate for the intermediate's rule, else `r` itself.
    pub fn owner(&self, r: usize) -> usize {
        let head = self.rules[r].head;
        if !self.is_join(head) {
            return r;
        }
        let reader = self.rules.iter().position(|x| {
            x.body
                .iter()
                .any(|l| matches!(l, Lit::Pos { rel, .. } if *rel == head))
        });
        reader.map_or(r, |x| self.owner(x))
    }

    /// The base relations the program reads.
    pub fn base_relations(&self) -> Vec<&str> {
        self.relations
            .iter()
            .filter(|r| r.kind == RelKind::Base)
            .map(|r| r.name.as_str())
            .collect()
    }
}

impl Ir {
    fn var_name(&self, rule: &Rule, v: VarId) -> String {
        match rule.names.get(v) {
            Some(n) => format!("?{n}"),
            None => format!("?v{v}"),
        }
    }

    fn arg_text(&self, rule: &Rule, a: Arg) -> String {
        match a {
            Arg::Var(v) => self.var_name(rule, v),
            Arg::Wild => "_".to_owned(),
            Arg::Const(c) => {
                let mut out = String::new();
                crate::data::value::write_value(&self.constants[c], &mut out);
                out
            }
        }
    }

    /// A body literal as a program would write it: `deps._step(?a, ?b)`, `not p(?x)`,
    /// `?n > 2`, `?n = count(?d) : { ... }`.
    pub fn literal_text(&self, rule: &Rule, lit: &Lit) -> String {
        let atom = |rel: RelId, args: &[Arg]| {
            let args: Vec<String> = args.iter().map(|a| self.arg_text(rule, *a)).collect();
            format!("{}({})", self.relations[rel].name, args.join(", "))
        };
        match lit {
            Lit::Pos { rel, args } => atom(*rel, args),
            Lit::Neg { rel, args } => format!("not {}", atom(*rel, args)),
            Lit::Cmp { op, left, right } => format!(
                "{} {} {}",
                self.arg_text(rule, *left),
                op.as_str(),
                self.arg_text(rule, *right)
            ),
            Lit::Builtin { builtin, args } => {
                let args: Vec<String> = args.iter().map(|a| self.arg_text(rule, *a)).collect();
                format!("{}({})", builtin.name(), args.join(", "))
            }
            Lit::OneOf { var, values } => {
                let vals: Vec<String> = values
                    .iter()
                    .map(|c| self.arg_text(rule, Arg::Const(*c)))
                    .collect();
                format!("{} in [{}]", self.var_name(rule, *var), vals.join(", "))
            }
            Lit::Agg {
                result,
                func,
                distinct,
                over,
                body,
            } => {
                let inner: Vec<String> = body.iter().map(|l| self.literal_text(rule, l)).collect();
                format!(
                    "{} = {}({}{}) : {{ {} }}",
                    self.var_name(rule, *result),
                    func.as_str(),
                    if *distinct { "distinct " } else { "" },
                    self.var_name(rule, *over),
                    inner.join(", ")
                )
            }
        }
    }

    /// A rule as a program would write it (the goal's rule shows its head as `goal`).
    pub fn rule_text(&self, rule: &Rule) -> String {
        let head: Vec<String> = rule
            .args
            .iter()
            .map(|a| match a {
                HeadArg::Arg(a) => self.arg_text(rule, *a),
                HeadArg::Agg {
                    func,
                    distinct,
                    over,
                } => format!(
                    "{}({}{})",
                    func.as_str(),
                    if *distinct { "distinct " } else { "" },
                    self.var_name(rule, *over)
                ),
            })
            .collect();
        let body: Vec<String> = rule
            .body
            .iter()
            .map(|l| self.literal_text(rule, l))
            .collect();
        format!(
            "{}({}) :- {}",
            self.relations[rule.head].name,
            head.join(", "),
            body.join(", ")
        )
    }
}

/// A column of the answer.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnSpec {
    /// A goal variable (its index among the goal's variables).
    Var(usize),
    /// An aggregate of a goal variable over the goal's distinct solutions, per group.
    Agg {
        /// The function.
        func: AggFunc,
        /// Whether duplicate values count once.
        distinct: bool,
        /// The goal variable.
        var: usize,
    },
}

/// A `having` condition: an aggregate compared with a value.
#[derive(Clone, Debug, PartialEq)]
pub struct HavingSpec {
    /// The aggregate (a [`ColumnSpec::Agg`]).
    pub aggregate: ColumnSpec,
    /// The comparison.
    pub op: CmpOp,
    /// The value compared with.
    pub value: Value,
}

/// An `order by` key.
#[derive(Clone, Debug, PartialEq)]
pub struct OrderSpec {
    /// The column or aggregate ordered by.
    pub column: ColumnSpec,
    /// Descending.
    pub desc: bool,
}

/// How the goal's solutions become the answer.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Shape {
    /// The columns' names, as the answer prints them.
    pub names: Vec<String>,
    /// The columns.
    pub columns: Vec<ColumnSpec>,
    /// `having` conditions.
    pub having: Vec<HavingSpec>,
    /// `order by` keys (then the default order of the columns).
    pub order: Vec<OrderSpec>,
    /// The program's own `limit`.
    pub limit: Option<u64>,
    /// The program's own `offset`.
    pub offset: u64,
}
