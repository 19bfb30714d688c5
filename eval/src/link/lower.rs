//! Lowering: linked, checked rules to the [`Ir`] the evaluator runs.
//!
//! Only the rules the goal reaches are lowered: the module rules and the query's own rules
//! of every derived relation the goal reads, transitively, in the order they are reached
//! (breadth first from the goal), each relation's rules in the order written. The goal is
//! one more rule, last, defining the relation [`GOAL`].

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use crate::data::value::Value;
use crate::ir::{self, Arg, Ir, Lit, RelDecl, RelId, RelKind};
use crate::link::linked::{LHead, LLit, LRule, LTerm};
use crate::link::resolve::{LocalRel, Target, target_name};
use crate::link::vocab::Vocabulary;

/// The name of the relation holding a goal's solutions (never printed in answers).
pub(crate) const GOAL: &str = "goal";

/// What lowering needs: the vocabulary, the query's relations and rules.
pub(crate) struct Lowering<'a> {
    pub vocab: &'a Vocabulary,
    pub locals: &'a [LocalRel],
    pub query_rules: &'a [LRule],
}

struct State {
    relations: Vec<RelDecl>,
    ids: HashMap<Target, RelId>,
    constants: Vec<Value>,
    constant_ids: BTreeMap<Value, usize>,
}

impl Lowering<'_> {
    /// Lowers the goal `body`, whose relation's arguments are `head` and whose variables
    /// are named `names` (by number), with every rule it reaches.
    pub fn lower(&self, body: &[LLit], head: &[LTerm], names: &[String]) -> Ir {
        let vars = names.len();
        let goal_names = names.to_vec();
        let mut st = State {
            relations: Vec::new(),
            ids: HashMap::new(),
            constants: Vec::new(),
            constant_ids: BTreeMap::new(),
        };
        let mut rules = Vec::new();
        for r in self.reached(body) {
            let ir_rule = self.rule(&mut st, r);
            rules.push(ir_rule);
        }
        let goal_body = self.body(&mut st, body);
        let args = head
            .iter()
            .map(|t| ir::HeadArg::Arg(self.arg(&mut st, t)))
            .collect();
        let goal = st.relations.len();
        st.relations.push(RelDecl {
            name: GOAL.to_owned(),
            arity: head.len(),
            kind: RelKind::Derived,
        });
        rules.push(ir::Rule {
            head: goal,
            args,
            body: goal_body,
            vars,
            names: goal_names,
        });
        Ir {
            relations: st.relations,
            constants: st.constants,
            rules,
            goal,
        }
    }

    /// The rules of every derived relation `body` reaches, in the order reached.
    fn reached(&self, body: &[LLit]) -> Vec<&LRule> {
        let mut local: HashMap<Target, Vec<&LRule>> = HashMap::new();
        for r in self.query_rules {
            local.entry(r.head).or_default().push(r);
        }
        let mut seen: HashSet<Target> = HashSet::new();
        let mut queue: VecDeque<Target> = VecDeque::new();
        let push = |body: &[LLit], seen: &mut HashSet<Target>, queue: &mut VecDeque<Target>| {
            let mut found = Vec::new();
            targets(body, &mut found);
            for t in found {
                if matches!(t, Target::Member(_) | Target::Local(_)) && seen.insert(t) {
                    queue.push_back(t);
                }
            }
        };
        push(body, &mut seen, &mut queue);
        let mut out = Vec::new();
        while let Some(t) = queue.pop_front() {
            let rules: Vec<&LRule> = match t {
                Target::Member(i) => self
                    .vocab
                    .members
                    .get(i)
                    .map(|m| m.linked.iter().collect())
                    .unwrap_or_default(),
                Target::Local(_) => local.get(&t).cloned().unwrap_or_default(),
                Target::Base(_) => Vec::new(),
            };
            for r in rules {
                push(&r.body, &mut seen, &mut queue);
                out.push(r);
            }
        }
        out
    }

    fn rel(&self, st: &mut State, t: Target) -> RelId {
        if let Some(&id) = st.ids.get(&t) {
            return id;
        }
        let (arity, kind) = match t {
            Target::Base(i) => (
                self.vocab.base.get(i).map_or(0, |r| r.columns.len()),
                RelKind::Base,
            ),
            Target::Member(i) => (
                self.vocab.members.get(i).map_or(0, |m| m.columns.len()),
                RelKind::Derived,
            ),
            Target::Local(i) => (
                self.locals.get(i).map_or(0, |l| l.columns.len()),
                RelKind::Derived,
            ),
        };
        let id = st.relations.len();
        st.relations.push(RelDecl {
            name: target_name(self.vocab, self.locals, t),
            arity,
            kind,
        });
        st.ids.insert(t, id);
        id
    }

    fn constant(st: &mut State, v: &Value) -> usize {
        if let Some(&i) = st.constant_ids.get(v) {
            return i;
        }
        let i = st.constants.len();
        st.constants.push(v.clone());
        st.constant_ids.insert(v.clone(), i);
        i
    }

    fn arg(&self, st: &mut State, t: &LTerm) -> Arg {
        match t {
            LTerm::Var(s, _) => Arg::Var(*s),
            LTerm::Const(v) => Arg::Const(Self::constant(st, v)),
            LTerm::Wild(_) => Arg::Wild,
        }
    }

    fn args(&self, st: &mut State, ts: &[LTerm]) -> Vec<Arg> {
        ts.iter().map(|t| self.arg(st, t)).collect()
    }

    fn rule(&self, st: &mut State, r: &LRule) -> ir::Rule {
        let head = self.rel(st, r.head);
        let args = r
            .args
            .iter()
            .map(|a| match a {
                LHead::Term(t) => ir::HeadArg::Arg(self.arg(st, t)),
                LHead::Agg {
                    func,
                    distinct,
                    over,
                    ..
                } => ir::HeadArg::Agg {
                    func: *func,
                    distinct: *distinct,
                    over: *over,
                },
            })
            .collect();
        let body = self.body(st, &r.body);
        ir::Rule {
            head,
            args,
            body,
            vars: r.names.len(),
            names: r.names.clone(),
        }
    }

    fn body(&self, st: &mut State, body: &[LLit]) -> Vec<Lit> {
        body.iter()
            .map(|lit| match lit {
                LLit::Pos { rel, args, .. } => Lit::Pos {
                    rel: self.rel(st, *rel),
                    args: self.args(st, args),
                },
                LLit::Neg { rel, args, .. } => Lit::Neg {
                    rel: self.rel(st, *rel),
                    args: self.args(st, args),
                },
                LLit::Builtin { sig, args, .. } => Lit::Builtin {
                    builtin: sig.builtin.clone(),
                    args: self.args(st, args),
                },
                LLit::Cmp { op, left, right } => Lit::Cmp {
                    op: *op,
                    left: self.arg(st, left),
                    right: self.arg(st, right),
                },
                LLit::OneOf { slot, values } => Lit::OneOf {
                    var: *slot,
                    values: values.iter().map(|v| Self::constant(st, v)).collect(),
                },
                LLit::Agg {
                    result,
                    func,
                    distinct,
                    over,
                    body,
                    ..
                } => Lit::Agg {
                    result: *result,
                    func: *func,
                    distinct: *distinct,
                    over: *over,
                    body: self.body(st, body),
                },
            })
            .collect()
    }
}

/// The relations a body reads, at any depth, in the order written.
fn targets(body: &[LLit], out: &mut Vec<Target>) {
    for lit in body {
        match lit {
            LLit::Pos { rel, .. } | LLit::Neg { rel, .. } => out.push(*rel),
            LLit::Agg { body, .. } => targets(body, out),
            _ => {}
        }
    }
}
