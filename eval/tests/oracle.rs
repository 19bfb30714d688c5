//! The engine against the naive oracle: random programs (recursion, negation, comparisons,
//! aggregates, lists) over random facts; every derived relation must be equal at one thread
//! and at several, with witnesses on and off, and every witness must re-derive its tuple.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use proptest::prelude::*;
use strata_eval::internals::Premise;
use strata_eval::internals::ast::{AggFunc, CmpOp};
use strata_eval::internals::ir::{Arg, HeadArg, Ir, Lit, RelDecl, RelKind, Rule};
use strata_eval::internals::naive;
use strata_eval::internals::{Options, evaluate};
use strata_eval::{FactSource, MemorySource, Value};

/// Base relations: e(2), f(2), n(1). Derived: d0..d3, each of arity 2 (aggregates: arity 2).
const BASE: [(&str, usize); 3] = [("e", 2), ("f", 2), ("n", 1)];
const DERIVED: usize = 4;

fn value(i: u8) -> Value {
    match i % 4 {
        0 => Value::Number(f64::from(i)),
        1 => Value::Number(f64::from(i) + 0.5),
        _ => Value::text(format!("v{i}")),
    }
}

#[derive(Clone, Debug)]
struct GenRule {
    head: usize,
    atoms: Vec<(usize, [u8; 2])>,
    neg: Option<(usize, [u8; 2])>,
    cmp: Option<(u8, u8, u8)>,
    agg: Option<u8>,
    one_of: Option<(u8, Vec<u8>)>,
    body_agg: Option<(usize, u8, u8)>,
}

fn gen_rule() -> impl Strategy<Value = GenRule> {
    (
        0..DERIVED,
        prop::collection::vec((0..BASE.len() + DERIVED, [0u8..4, 0u8..4]), 1..4),
        prop::option::weighted(0.3, (0..BASE.len() + DERIVED, [0u8..4, 0u8..4])),
        prop::option::weighted(0.3, (0u8..6, 0u8..4, 0u8..4)),
        prop::option::weighted(0.15, 0u8..4),
        prop::option::weighted(0.15, (0u8..4, prop::collection::vec(0u8..8, 1..4))),
        prop::option::weighted(0.25, (0..BASE.len() + DERIVED, 0u8..4, 0u8..4)),
    )
        .prop_map(|(head, atoms, neg, cmp, agg, one_of, body_agg)| GenRule {
            head,
            atoms,
            neg,
            cmp,
            agg,
            one_of,
            body_agg,
        })
}

/// A rule of three or four positive literals and nothing else: most such rules of a
/// recursive program read a join intermediate.
fn positive_rule() -> impl Strategy<Value = GenRule> {
    (
        0..DERIVED,
        prop::collection::vec((0..BASE.len() + DERIVED, [0u8..4, 0u8..4]), 3..5),
    )
        .prop_map(|(head, atoms)| GenRule {
            head,
            atoms,
            neg: None,
            cmp: None,
            agg: None,
            one_of: None,
            body_agg: None,
        })
}

/// Relation ids: base first, then derived, then the goal.
fn rel_of(i: usize) -> usize {
    i
}

/// Builds an IR from generated rules, dropping what would be unsafe or unstratified: a
/// derived relation may only use derived relations of a lower index under `not` or in an
/// aggregate rule; positive recursion is free.
fn build(rules: &[GenRule]) -> Ir {
    build_with_goal(rules, None, false)
}

/// As [`build`], with a goal that binds the first argument of `d3` (the second when
/// `second`) to a constant, when given.
fn build_with_goal(rules: &[GenRule], bound: Option<u8>, second: bool) -> Ir {
    let mut relations: Vec<RelDecl> = BASE
        .iter()
        .map(|(n, a)| RelDecl {
            name: (*n).to_owned(),
            arity: *a,
            kind: RelKind::Base,
        })
        .collect();
    for d in 0..DERIVED {
        relations.push(RelDecl {
            name: format!("d{d}"),
            arity: 2,
            kind: RelKind::Derived,
        });
    }
    let mut constants: Vec<Value> = (0..8).map(value).collect();
    constants.push(Value::Absent);
    let mut out = Vec::new();
    for g in rules {
        let head = BASE.len() + g.head;
        let is_agg = g.agg.is_some();
        let mut body = Vec::new();
        let mut bound = BTreeSet::new();
        for (r, vars) in &g.atoms {
            let rel = rel_of(*r);
            let arity = relations[rel].arity;
            // Aggregate rules may only read lower derived relations (stratification).
            if is_agg && relations[rel].kind == RelKind::Derived && rel >= head {
                continue;
            }
            let args: Vec<Arg> = vars[..arity]
                .iter()
                .map(|&v| Arg::Var(v as usize))
                .collect();
            bound.extend(vars[..arity].iter().copied());
            body.push(Lit::Pos { rel, args });
        }
        if body.is_empty() {
            continue;
        }
        if let Some((r, vars)) = &g.neg {
            let rel = rel_of(*r);
            let arity = relations[rel].arity;
            let lower = relations[rel].kind == RelKind::Base || rel < head;
            let args: Vec<Arg> = vars[..arity]
                .iter()
                .map(|&v| {
                    if bound.contains(&v) {
                        Arg::Var(v as usize)
                    } else {
                        Arg::Wild
                    }
                })
                .collect();
            if lower && args.iter().any(|a| matches!(a, Arg::Var(_))) {
                body.push(Lit::Neg { rel, args });
            }
        }
        if let Some((op, a, b)) = g.cmp
            && bound.contains(&a)
        {
            let op = [
                CmpOp::Lt,
                CmpOp::Le,
                CmpOp::Eq,
                CmpOp::Ne,
                CmpOp::Gt,
                CmpOp::Ge,
            ][op as usize];
            let right = if bound.contains(&b) {
                Arg::Var(b as usize)
            } else {
                Arg::Const(b as usize)
            };
            body.push(Lit::Cmp {
                op,
                left: Arg::Var(a as usize),
                right,
            });
        }
        if let Some((v, values)) = &g.one_of
            && bound.contains(v)
        {
            body.push(Lit::OneOf {
                var: *v as usize,
                values: values.iter().map(|&c| c as usize).collect(),
            });
        }
        // ?5 = func(?4) : { rel(?a, ?4) }, correlated by ?a, over a lower relation.
        if let Some((r, f, a)) = g.body_agg
            && bound.contains(&a)
        {
            let rel = rel_of(r);
            if relations[rel].kind == RelKind::Base || rel < head {
                let func = [AggFunc::Count, AggFunc::Min, AggFunc::Max, AggFunc::Count][f as usize];
                let args = if relations[rel].arity == 2 {
                    vec![Arg::Var(a as usize), Arg::Var(4)]
                } else {
                    vec![Arg::Var(4)]
                };
                body.push(Lit::Agg {
                    result: 5,
                    func,
                    distinct: f == 3,
                    over: 4,
                    body: vec![Lit::Pos { rel, args }],
                });
                bound.insert(5);
            }
        }
        let vars: Vec<u8> = bound.iter().copied().collect();
        let args = if let Some(f) = g.agg {
            let func = [AggFunc::Count, AggFunc::Sum, AggFunc::Min, AggFunc::Max][f as usize];
            // Sum only over a column that holds numbers: count instead when unsure.
            let func = if func == AggFunc::Sum {
                AggFunc::Count
            } else {
                func
            };
            vec![
                HeadArg::Arg(Arg::Var(vars[0] as usize)),
                HeadArg::Agg {
                    func,
                    distinct: f % 2 == 0,
                    over: *vars.last().unwrap() as usize,
                },
            ]
        } else {
            vec![
                HeadArg::Arg(Arg::Var(vars[0] as usize)),
                HeadArg::Arg(Arg::Var(*vars.last().unwrap() as usize)),
            ]
        };
        out.push(Rule {
            head,
            args,
            body,
            vars: 6,
            names: Vec::new(),
        });
    }
    // The goal: everything of d0..d3 side by side is too big; ask for d3 joined with e.
    let goal = relations.len();
    relations.push(RelDecl {
        name: "goal".into(),
        arity: 2,
        kind: RelKind::Derived,
    });
    let first = bound.map_or(Arg::Var(0), |c| Arg::Const(c as usize));
    let mut args = vec![first, Arg::Var(1)];
    if second {
        args.reverse();
    }
    out.push(Rule {
        head: goal,
        args: args.iter().map(|a| HeadArg::Arg(*a)).collect(),
        body: vec![Lit::Pos {
            rel: BASE.len() + DERIVED - 1,
            args,
        }],
        vars: 2,
        names: Vec::new(),
    });
    Ir {
        relations,
        constants,
        rules: out,
        goal,
    }
}

fn source(facts: &[(usize, u8, u8)]) -> MemorySource {
    let mut s = MemorySource::new();
    s.add_relation("e", &["a", "b"]);
    s.add_relation("f", &["a", "b"]);
    s.add_relation("n", &["a"]);
    for &(r, a, b) in facts {
        match r {
            0 => s.insert("e", &[value(a), value(b)]).unwrap(),
            1 => s.insert("f", &[value(a), value(b)]).unwrap(),
            _ => s.insert("n", &[value(a)]).unwrap(),
        };
    }
    s
}

fn engine_facts(ir: &Ir, src: &MemorySource, threads: usize, witnesses: bool) -> Vec<naive::Facts> {
    // Several threads run under a memory cap no program here reaches: counting the bytes
    // changes nothing.
    let opts = Options {
        threads,
        witnesses,
        max_memory: (threads > 1).then_some(1 << 40),
        ..Options::default()
    };
    let ev = evaluate(ir, src, &opts).unwrap();
    let mut out = Vec::new();
    for (i, r) in ev.relations.iter().enumerate() {
        if ir.relations[i].kind == RelKind::Base {
            out.push(naive::Facts::new());
            continue;
        }
        let facts = r
            .iter()
            .map(|(_, t)| t.iter().map(|&x| ev.dict.value(x).unwrap()).collect())
            .collect();
        out.push(facts);
    }
    if witnesses {
        check_witnesses(ir, src, &ev);
    }
    out
}

/// Every derived tuple with a derivation must follow from its premises by its rule: the
/// premises are facts (stored, or derived), and evaluating the rule's body with the premises
/// as the only facts of their positive literals yields the tuple.
fn check_witnesses(ir: &Ir, src: &MemorySource, ev: &strata_eval::internals::Evaluation<'_>) {
    let w = ev.witnesses.as_ref().unwrap();
    // Asserts that `terms` are a fact stored in base relation `rel`.
    let stored = |rel: u32, terms: &[strata_eval::Term]| {
        let bound: Vec<(usize, strata_eval::Term)> = terms.iter().copied().enumerate().collect();
        let name = &ir.relations[rel as usize].name;
        assert_eq!(
            src.estimate(name, &bound).unwrap(),
            1,
            "{name}{terms:?} is not stored"
        );
    };
    for (rel, r) in ev.relations.iter().enumerate() {
        if ir.relations[rel].kind == RelKind::Base {
            // Read into memory by the engine; not derived.
            continue;
        }
        for (id, tuple) in r.iter() {
            let Some(d) = w.derivation(rel, id, &ev.relations, &ev.constants) else {
                assert!(
                    ir.rules.iter().any(|x| x.head == rel && x.aggregates()),
                    "tuple without derivation"
                );
                continue;
            };
            let rule = &ir.rules[d.rule as usize];
            assert_eq!(rule.head, rel);
            // Bind the rule's variables from the premises, positive literal by literal.
            let mut env = vec![None; rule.vars];
            let positives: Vec<&Lit> = rule
                .body
                .iter()
                .filter(|l| matches!(l, Lit::Pos { .. }))
                .collect();
            assert_eq!(positives.len(), d.premises.len());
            for (lit, &p) in positives.iter().zip(&d.premises) {
                let Lit::Pos { rel: lr, args } = lit else {
                    unreachable!()
                };
                let fact: Vec<strata_eval::Term> = match p {
                    Premise::Tuple { rel, id } => {
                        assert_eq!(rel as usize, *lr);
                        let t = ev.relations[rel as usize].tuple(id).to_vec();
                        if ir.relations[rel as usize].kind == RelKind::Base {
                            // A base relation read into memory: still a stored fact.
                            stored(rel, &t);
                        }
                        t
                    }
                    Premise::Base { rel, start } => {
                        assert_eq!(rel as usize, *lr);
                        let t = w
                            .base_terms(start, ir.relations[rel as usize].arity)
                            .to_vec();
                        // A base premise is a stored fact.
                        stored(rel, &t);
                        t
                    }
                    Premise::Implied { rel, start } => {
                        assert_eq!(rel as usize, *lr);
                        assert_eq!(ir.relations[rel as usize].kind, RelKind::Base);
                        let t = d
                            .implied_terms(start, ir.relations[rel as usize].arity)
                            .to_vec();
                        // Rebuilt from the others: still a stored fact.
                        stored(rel, &t);
                        t
                    }
                    Premise::None => panic!("missing premise"),
                };
                for (a, t) in args.iter().zip(&fact) {
                    match *a {
                        Arg::Var(v) => {
                            if let Some(b) = env[v] {
                                assert_eq!(b, *t, "premises disagree on a variable");
                            }
                            env[v] = Some(*t);
                        }
                        Arg::Const(c) => assert_eq!(ev.constants[c], *t),
                        Arg::Wild => {}
                    }
                }
            }
            for (a, t) in rule.args.iter().zip(tuple) {
                if let HeadArg::Arg(Arg::Var(v)) = a
                    && let Some(b) = env[*v]
                {
                    assert_eq!(b, *t, "the head does not follow from the premises");
                }
            }
        }
    }
}

fn compare(rules: &[GenRule], facts: &[(usize, u8, u8)]) {
    let ir = build(rules);
    let src = source(facts);
    let want = match naive::evaluate(&ir, &src) {
        Ok(f) => f,
        Err(e) => {
            // The engine must refuse the same programs.
            assert!(
                evaluate(&ir, &src, &Options::default()).is_err(),
                "naive refused: {e}"
            );
            return;
        }
    };
    for (threads, witnesses) in [(1, true), (4, true), (1, false), (3, false)] {
        let got = engine_facts(&ir, &src, threads, witnesses);
        for (i, r) in ir.relations.iter().enumerate() {
            if r.kind == RelKind::Derived {
                assert_eq!(got[i], want[i], "relation {} at {threads} threads", r.name);
            }
        }
    }
    // With join intermediates (when a rule qualifies): the same relations, naive and fast,
    // every witness re-deriving its tuple through the intermediates' rules.
    if let Some(split) = strata_eval::internals::split::rewrite(&ir) {
        let naive_split = naive::evaluate(&split, &src).unwrap();
        for threads in [1, 3] {
            let got = engine_facts(&split, &src, threads, true);
            for (i, r) in ir.relations.iter().enumerate() {
                if r.kind == RelKind::Derived {
                    assert_eq!(naive_split[i], want[i], "naive, relation {} split", r.name);
                    assert_eq!(
                        got[i], want[i],
                        "relation {} split, {threads} threads",
                        r.name
                    );
                }
            }
        }
    }
}

/// With a goal binding a constant, the demand rewrite gives the same goal relation.
fn compare_demand(rules: &[GenRule], facts: &[(usize, u8, u8)], c: u8, second: bool) {
    let ir = build_with_goal(rules, Some(c), second);
    let src = source(facts);
    let Ok(want) = naive::evaluate(&ir, &src) else {
        return;
    };
    // A linear recursion bound on the argument it moves: a walk, then magic sets.
    if let Some(linear) = strata_eval::internals::linear::rewrite(&ir) {
        let naive_linear = naive::evaluate(&linear, &src).unwrap();
        assert_eq!(
            naive_linear[linear.goal], want[ir.goal],
            "naive on the linear walk"
        );
        let both = strata_eval::internals::magic::rewrite(&linear).unwrap_or(linear);
        for threads in [1, 2] {
            let got = engine_facts(&both, &src, threads, true);
            assert_eq!(got[both.goal], want[ir.goal], "engine on the linear walk");
        }
    }
    let Some(magic) = strata_eval::internals::magic::rewrite(&ir) else {
        return;
    };
    let naive_magic = naive::evaluate(&magic, &src).unwrap();
    assert_eq!(
        naive_magic[magic.goal], want[ir.goal],
        "naive on the rewritten program"
    );
    for threads in [1, 2] {
        let got = engine_facts(&magic, &src, threads, true);
        assert_eq!(
            got[magic.goal], want[ir.goal],
            "engine on the rewritten program"
        );
    }
    if let Some(split) = strata_eval::internals::split::rewrite(&magic) {
        let got = engine_facts(&split, &src, 2, true);
        assert_eq!(got[split.goal], want[ir.goal], "engine, magic and split");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn demand_gives_the_same_answers(
        rules in prop::collection::vec(gen_rule(), 1..7),
        facts in prop::collection::vec((0usize..3, 0u8..8, 0u8..8), 0..40),
        c in 0u8..8,
        second in any::<bool>(),
    ) {
        compare_demand(&rules, &facts, c, second);
    }

    #[test]
    fn join_intermediates_agree_with_naive(
        rules in prop::collection::vec(positive_rule(), 1..6),
        facts in prop::collection::vec((0usize..3, 0u8..8, 0u8..8), 0..40),
    ) {
        compare(&rules, &facts);
    }

    #[test]
    fn engine_agrees_with_naive(
        rules in prop::collection::vec(gen_rule(), 1..7),
        facts in prop::collection::vec((0usize..3, 0u8..8, 0u8..8), 0..40),
    ) {
        compare(&rules, &facts);
    }
}

#[test]
fn transitive_closure_over_a_long_chain_is_complete() {
    // d0(x, y) :- e(x, y); d0(x, z) :- d0(x, y), e(y, z); chain of 3,000 links, in chunks.
    let n = 3000u32;
    let mut src = MemorySource::new();
    src.add_relation("e", &["a", "b"]);
    for i in 0..n {
        src.insert(
            "e",
            &[Value::Number(f64::from(i)), Value::Number(f64::from(i + 1))],
        )
        .unwrap();
    }
    let relations = vec![
        RelDecl {
            name: "e".into(),
            arity: 2,
            kind: RelKind::Base,
        },
        RelDecl {
            name: "reach".into(),
            arity: 2,
            kind: RelKind::Derived,
        },
    ];
    let v = |i| Arg::Var(i);
    let ir = Ir {
        relations,
        constants: vec![Value::Number(0.0)],
        rules: vec![
            Rule {
                head: 1,
                args: vec![HeadArg::Arg(v(0)), HeadArg::Arg(v(1))],
                body: vec![
                    Lit::Pos {
                        rel: 0,
                        args: vec![Arg::Const(0), v(1)],
                    },
                    Lit::OneOf {
                        var: 0,
                        values: vec![0],
                    },
                ],
                vars: 3,
                names: Vec::new(),
            },
            Rule {
                head: 1,
                args: vec![HeadArg::Arg(v(0)), HeadArg::Arg(v(2))],
                body: vec![
                    Lit::Pos {
                        rel: 1,
                        args: vec![v(0), v(1)],
                    },
                    Lit::Pos {
                        rel: 0,
                        args: vec![v(1), v(2)],
                    },
                ],
                vars: 3,
                names: Vec::new(),
            },
        ],
        goal: 1,
    };
    for threads in [1, 2] {
        let ev = evaluate(
            &ir,
            &src,
            &Options {
                threads,
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(ev.relations[1].len(), n);
        assert_eq!(ev.rounds, u64::from(n));
        // The last tuple's witness goes all the way down the chain.
        let w = ev.witnesses.as_ref().unwrap();
        let mut depth = 0;
        let (mut rel, mut id) = (1usize, n - 1);
        while let Some(d) = w.derivation(rel, id, &ev.relations, &ev.constants) {
            depth += 1;
            match d.premises[0] {
                Premise::Tuple { rel: r, id: i } => (rel, id) = (r as usize, i),
                _ => break,
            }
        }
        assert_eq!(depth, n);
    }
}

#[test]
fn work_is_the_same_at_any_thread_count_and_the_budget_stops_it() {
    let facts: Vec<(usize, u8, u8)> = (0..8)
        .flat_map(|a| (0..8).map(move |b| (0, a, b)))
        .collect();
    let rules = vec![GenRule {
        head: 3,
        atoms: vec![(0, [0, 1]), (0, [1, 2])],
        neg: None,
        cmp: None,
        agg: None,
        one_of: None,
        body_agg: None,
    }];
    let ir = build(&rules);
    let src = source(&facts);
    let w1 = evaluate(
        &ir,
        &src,
        &Options {
            threads: 1,
            ..Options::default()
        },
    )
    .unwrap()
    .work;
    let w2 = evaluate(
        &ir,
        &src,
        &Options {
            threads: 2,
            ..Options::default()
        },
    )
    .unwrap()
    .work;
    assert_eq!(w1, w2);
    assert!(w1 > 64);
    let err = evaluate(
        &ir,
        &src,
        &Options {
            max_work: Some(10),
            ..Options::default()
        },
    )
    .err()
    .unwrap();
    assert_eq!(
        err.to_string(),
        "the program passed its work budget of 10 units"
    );
}

#[test]
fn demand_computes_only_what_the_bound_argument_reaches() {
    // 40 disjoint chains of 60 links; reach(x, z) :- e(x, z); reach(x, z) :- reach(x, y), e(y, z).
    let mut src = MemorySource::new();
    src.add_relation("e", &["a", "b"]);
    let node = |c: u32, i: u32| Value::text(format!("c{c}n{i}"));
    for c in 0..40 {
        for i in 0..60 {
            src.insert("e", &[node(c, i), node(c, i + 1)]).unwrap();
        }
    }
    let v = Arg::Var;
    let relations = vec![
        RelDecl {
            name: "e".into(),
            arity: 2,
            kind: RelKind::Base,
        },
        RelDecl {
            name: "reach".into(),
            arity: 2,
            kind: RelKind::Derived,
        },
        RelDecl {
            name: "goal".into(),
            arity: 1,
            kind: RelKind::Derived,
        },
    ];
    let ir = Ir {
        relations,
        constants: vec![node(7, 0)],
        rules: vec![
            Rule {
                head: 1,
                args: vec![HeadArg::Arg(v(0)), HeadArg::Arg(v(1))],
                body: vec![Lit::Pos {
                    rel: 0,
                    args: vec![v(0), v(1)],
                }],
                vars: 2,
                names: Vec::new(),
            },
            Rule {
                head: 1,
                args: vec![HeadArg::Arg(v(0)), HeadArg::Arg(v(2))],
                body: vec![
                    Lit::Pos {
                        rel: 1,
                        args: vec![v(0), v(1)],
                    },
                    Lit::Pos {
                        rel: 0,
                        args: vec![v(1), v(2)],
                    },
                ],
                vars: 3,
                names: Vec::new(),
            },
            Rule {
                head: 2,
                args: vec![HeadArg::Arg(v(0))],
                body: vec![Lit::Pos {
                    rel: 1,
                    args: vec![Arg::Const(0), v(0)],
                }],
                vars: 1,
                names: Vec::new(),
            },
        ],
        goal: 2,
    };
    let whole = evaluate(&ir, &src, &Options::default()).unwrap();
    let magic = strata_eval::internals::magic::rewrite(&ir).expect("the goal binds an argument");
    let demand = evaluate(&magic, &src, &Options::default()).unwrap();
    assert_eq!(whole.relations[ir.goal].len(), 60);
    assert_eq!(demand.relations[magic.goal].len(), 60);
    let derived = |ev: &strata_eval::internals::Evaluation<'_>, ir: &Ir| -> u32 {
        (0..ir.relations.len())
            .filter(|&r| ir.relations[r].kind == RelKind::Derived)
            .map(|r| ev.relations[r].len())
            .sum()
    };
    // The whole closure is 40 * (60 * 61 / 2) pairs; by demand only chain 7's 60 pairs, the
    // 60 answers and one magic fact.
    assert_eq!(derived(&whole, &ir), 40 * 1830 + 60);
    assert_eq!(derived(&demand, &magic), 60 + 60 + 1);
    assert!(
        demand.work * 20 < whole.work,
        "{} vs {}",
        demand.work,
        whole.work
    );
}

#[test]
fn an_aggregate_inside_a_chunked_task_sees_its_whole_relation() {
    // d(?x, ?c) :- n(?x), ?c = count(?y) : { e(?z, ?y) }: the task's chunk is of n's tuples;
    // the aggregate's inner atom must still read all 5,000 facts of e.
    let mut src = MemorySource::new();
    src.add_relation("e", &["a", "b"]);
    src.add_relation("n", &["a"]);
    for i in 0..5000u32 {
        src.insert(
            "e",
            &[Value::Number(f64::from(i)), Value::Number(f64::from(i + 1))],
        )
        .unwrap();
    }
    src.insert("n", &[Value::text("x")]).unwrap();
    src.insert("n", &[Value::text("y")]).unwrap();
    let v = Arg::Var;
    let ir = Ir {
        relations: vec![
            RelDecl {
                name: "e".into(),
                arity: 2,
                kind: RelKind::Base,
            },
            RelDecl {
                name: "n".into(),
                arity: 1,
                kind: RelKind::Base,
            },
            RelDecl {
                name: "d".into(),
                arity: 2,
                kind: RelKind::Derived,
            },
        ],
        constants: vec![],
        rules: vec![Rule {
            head: 2,
            args: vec![HeadArg::Arg(v(0)), HeadArg::Arg(v(1))],
            body: vec![
                Lit::Pos {
                    rel: 1,
                    args: vec![v(0)],
                },
                Lit::Agg {
                    result: 1,
                    func: AggFunc::Count,
                    distinct: false,
                    over: 2,
                    body: vec![Lit::Pos {
                        rel: 0,
                        args: vec![v(3), v(2)],
                    }],
                },
            ],
            vars: 4,
            names: Vec::new(),
        }],
        goal: 2,
    };
    let want = naive::evaluate(&ir, &src).unwrap();
    for threads in [1, 2] {
        let got = engine_facts(&ir, &src, threads, true);
        assert_eq!(got[2], want[2]);
    }
    assert!(want[2].contains(&vec![Value::text("x"), Value::Number(5000.0)]));
}

#[test]
fn a_budget_error_says_where_the_work_went() {
    use strata_eval::{Query, RunOptions};
    let w = strata_fixtures::workloads::closure(300, 2, 11);
    let src = common::workload_source(&w);
    let vocab = strata_eval::Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let q = Query::prepare(&vocab, &w.program, &[]).unwrap();
    let mut opts = RunOptions::default();
    opts.engine.max_work = Some(20_000);
    let err = q.run(&src, &opts).unwrap_err().to_string();
    assert!(
        err.starts_with(
            "query: the program passed its work budget of 20000 units; the work went to: \
             tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z) ("
        ),
        "{err}"
    );
}

/// Runs `program` over workload `w` at 1, 2 and 3 threads: the page at `offset` (witnesses
/// included), the work and the total must agree, the total exceed `at_least`, and every
/// witness of a 3-thread evaluation re-derive its tuple.
fn same_at_any_thread_count(
    w: &strata_fixtures::workloads::Workload,
    program: &str,
    offset: u64,
    at_least: u64,
) {
    use strata_eval::{Query, RunOptions};
    let src = common::workload_source(w);
    let vocab = strata_eval::Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let q = Query::prepare(&vocab, program, &[]).unwrap();
    let page = |threads: usize| {
        let mut o = RunOptions {
            offset,
            limit: 40,
            ..RunOptions::default()
        };
        o.engine.threads = threads;
        let out = q.run(&src, &o).unwrap();
        (out.answer.text(), out.work, out.answer.total)
    };
    let one = page(1);
    assert!(one.2 > at_least, "{}: {} rows, too few", w.name, one.2);
    for threads in [2, 3] {
        assert_eq!(page(threads), one, "{} at {threads} threads", w.name);
    }
    let ir = &q.compiled.ir;
    let opts = Options {
        threads: 3,
        ..Options::default()
    };
    let ev = evaluate(ir, &src, &opts).unwrap();
    check_witnesses(ir, &src, &ev);
}

#[test]
fn large_rounds_merged_in_parallel_give_the_same_answer_and_witnesses() {
    // Rounds of well over 2^16 candidates, so several threads merge key ranges in parallel.
    let w = strata_fixtures::workloads::closure(500, 3, 21);
    let program =
        "tc(?x, ?y) :- e(?x, ?y);\ntc(?x, ?z) :- tc(?x, ?y), e(?y, ?z);\ntc(?x, ?y) => ?x, ?y";
    same_at_any_thread_count(&w, program, 1000, 100_000);
}

/// Issue 28: a round of more than 2^20 new tuples is taken (appended, its derivations
/// recorded) a group of pieces at a time, the cancellation token checked between: the same
/// answer, work and witnesses at any thread count, and every witness re-derives.
#[test]
fn issue_28_rounds_of_millions_taken_in_groups_keep_their_witnesses() {
    // 2,000 nodes of out-degree 3: 4M pairs, its largest rounds well past 2^20 new tuples.
    let w = strata_fixtures::workloads::closure(2000, 3, 5);
    let program =
        "tc(?x, ?y) :- e(?x, ?y);\ntc(?x, ?z) :- tc(?x, ?y), e(?y, ?z);\ntc(?x, ?y) => ?x, ?y";
    same_at_any_thread_count(&w, program, 3_000_000, 3_000_000);
}

#[test]
fn points_to_gives_the_same_answer_witnesses_and_work_at_any_thread_count() {
    // Large enough that the base relations are read into memory at once, pt's two indexes
    // are built and take each round's new tuples on threads of their own.
    let w = strata_fixtures::workloads::points_to(40_000, 9);
    let rules = w.program.rsplit_once('\n').unwrap().0;
    let program = format!("{rules}\npt(?v, ?o) => ?v, ?o");
    same_at_any_thread_count(&w, &program, 20_000, 40_000);
}

#[test]
fn points_to_witnesses_show_the_rules_as_written() {
    // pt and heap read join intermediates; a witness shows each rule's literals as the
    // program writes them, never an intermediate.
    use strata_eval::{Query, RunOptions};
    let w = strata_fixtures::workloads::points_to(3000, 13);
    let src = common::workload_source(&w);
    let vocab = strata_eval::Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let rules = w.program.rsplit_once('\n').unwrap().0;
    let q = Query::prepare(&vocab, &format!("{rules}\npt(?v, ?o) => ?v, ?o"), &[]).unwrap();
    let out = q
        .run(
            &src,
            &RunOptions {
                limit: 100_000,
                // Whole witnesses: a bounded one keeps whole bodies, but fewer of them.
                witness_facts: None,
                ..RunOptions::default()
            },
        )
        .unwrap();
    let text = out.answer.text();
    assert!(!text.contains('@'), "{text}");
    // Each fact line with children: the children's relations follow one rule's body. A
    // witness deeper than 4 levels is written flat (issue 20): its lines under the note are
    // every fact it rests on, not a body, and are left out of this check.
    let mut flat_under: Option<usize> = None;
    let lines: Vec<(usize, &str)> = text
        .lines()
        .filter(|l| l.starts_with(' '))
        .filter_map(|l| {
            let t = l.trim_start();
            let indent = l.len() - t.len();
            if flat_under.is_some_and(|root| indent > root) {
                return None;
            }
            flat_under = None;
            if t.starts_with("(written flat, ") {
                flat_under = Some(indent - 3);
                return None;
            }
            t.contains('(')
                .then(|| (indent, t.split('(').next().unwrap_or("")))
        })
        .collect();
    let mut by_rule = std::collections::BTreeMap::new();
    for (i, &(depth, rel)) in lines.iter().enumerate() {
        let children: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|(d, _)| *d > depth)
            .filter(|(d, _)| *d == depth + 3)
            .map(|(_, r)| *r)
            .collect();
        if children.is_empty() {
            continue;
        }
        let body = children.join(", ");
        let known = [
            ("pt", "new"),
            ("pt", "assign, pt"),
            ("pt", "load, pt, heap"),
            ("heap", "store, pt, pt"),
        ];
        assert!(known.contains(&(rel, body.as_str())), "{rel} from {body}");
        *by_rule.entry((rel, body)).or_insert(0) += 1;
    }
    // The rules through intermediates are among those shown.
    assert!(
        by_rule.keys().any(|(_, b)| b == "load, pt, heap"),
        "{by_rule:?}"
    );
    assert!(
        by_rule.keys().any(|(_, b)| b == "store, pt, pt"),
        "{by_rule:?}"
    );
}

#[test]
fn witnesses_of_facts_read_through_the_source_rederive() {
    // e is large and probed ten times: it is read through lookups, so the rule's premises
    // include base facts whose terms the tasks carry; every witness must still re-derive.
    let e: Vec<(u32, u32)> = (0..70_000u32).map(|i| (i % 7000, i)).collect();
    let w = strata_fixtures::workloads::Workload {
        name: "through the source".to_owned(),
        relations: vec![
            ("e".to_owned(), e),
            ("s".to_owned(), (0..10u32).map(|i| (i, i)).collect()),
        ],
        program: String::new(),
    };
    let program = "r(?x, ?y) :- s(?x, ?x), e(?x, ?y);\nr(?x, ?y) => ?x, ?y";
    same_at_any_thread_count(&w, program, 0, 99);
    // The witness text names the base facts as stored.
    let src = common::workload_source(&w);
    let vocab = strata_eval::Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let q = strata_eval::Query::prepare(&vocab, program, &[]).unwrap();
    let text = q
        .run(&src, &strata_eval::RunOptions::default())
        .unwrap()
        .answer
        .text();
    assert!(text.contains("   e(3, 7003)"), "{text}");
}

/// Answers at the answer level: a goal over random facts with columns, aggregates,
/// `having`, `order by`, the program's own `limit` and `offset`, and a caller's page; the
/// engine's page (through `Query::run`, so with its rewrites) must be the oracle's.
mod answers {
    use super::*;
    use strata_eval::Cell;
    use strata_eval::{Query, RunOptions};

    const BODIES: [&str; 4] = [
        "e(?a, ?b)",
        "e(?a, ?c), f(?c, ?b)",
        "t(?a, ?b)",
        "e(?a, ?b), not n(?b)",
    ];
    const RULES: &str = "t(?x, ?y) :- e(?x, ?y);\nt(?x, ?z) :- t(?x, ?y), f(?y, ?z);\n";
    const AGGREGATES: [&str; 7] = [
        "count(?b)",
        "count(distinct ?b)",
        "sum(?b)",
        "min(?b)",
        "max(?a)",
        "list(?b)",
        "list(distinct ?a)",
    ];

    #[derive(Clone, Debug)]
    struct Goal {
        body: usize,
        vars: (bool, bool),
        aggregates: Vec<usize>,
        having: Option<(usize, u8)>,
        order: Vec<(usize, bool)>,
        own: Option<(u8, u8)>,
        page: (u64, u64),
    }

    fn goal() -> impl Strategy<Value = Goal> {
        (
            0..BODIES.len(),
            (any::<bool>(), any::<bool>()),
            prop::collection::vec(0..AGGREGATES.len(), 0..3),
            prop::option::weighted(0.3, (0..5usize, 0u8..3)),
            prop::collection::vec((0..4usize, any::<bool>()), 0..3),
            prop::option::weighted(0.3, (0u8..3, 1u8..5)),
            (0u64..4, 1u64..6),
        )
            .prop_map(|(body, vars, aggregates, having, order, own, page)| Goal {
                body,
                vars,
                aggregates,
                having,
                order,
                own,
                page,
            })
    }

    impl Goal {
        /// The program, or none when it would have no column.
        fn text(&self) -> Option<String> {
            let mut columns: Vec<String> = Vec::new();
            if self.vars.0 {
                columns.push("?a".to_owned());
            }
            if self.vars.1 {
                columns.push("?b".to_owned());
            }
            for &a in &self.aggregates {
                let a = AGGREGATES[a].to_owned();
                if !columns.contains(&a) {
                    columns.push(a);
                }
            }
            if columns.is_empty() {
                return None;
            }
            let mut text = format!("{RULES}{} => {}", BODIES[self.body], columns.join(", "));
            if let Some((a, k)) = self.having {
                // Aggregates that give a value (not `list`).
                text.push_str(&format!(" having {} >= {k}", AGGREGATES[a]));
            }
            // Order by columns, or an aggregate of a number-valued variable.
            let keys: Vec<String> = self
                .order
                .iter()
                .map(|&(k, desc)| {
                    let key = columns
                        .get(k)
                        .cloned()
                        .unwrap_or_else(|| "count(?b)".to_owned());
                    if desc { format!("{key} desc") } else { key }
                })
                .filter(|k| !k.starts_with("list("))
                .collect();
            if !keys.is_empty() {
                text.push_str(&format!(" order by {}", keys.join(", ")));
            }
            if let Some((offset, limit)) = self.own {
                text.push_str(&format!(" limit {limit} offset {offset}"));
            }
            Some(text)
        }
    }

    fn cells(row: &[Cell]) -> Vec<naive::Cell> {
        row.iter()
            .map(|c| match c {
                Cell::Value(v) => naive::Cell::Value(v.clone()),
                Cell::List(vs) => naive::Cell::List(vs.clone()),
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 384,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn answers_group_filter_order_and_page_like_the_oracle(
            facts in prop::collection::vec((0usize..3, 0u8..8, 0u8..8), 0..24),
            goal in goal(),
        ) {
            let Some(text) = goal.text() else { return Ok(()) };
            let src = source(&facts);
            let vocab = strata_eval::Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
            let q = match Query::prepare(&vocab, &text, &[]) {
                Ok(q) => q,
                // A goal the checker refuses (a duplicate column, an order key it rejects).
                Err(_) => return Ok(()),
            };
            let (offset, limit) = goal.page;
            let facts = naive::evaluate(&q.compiled.ir, &src).unwrap();
            let want = naive::answer(&facts[q.compiled.ir.goal], &q.compiled.shape, offset, limit);
            for threads in [1, 3] {
                let mut options = RunOptions { offset, limit, ..RunOptions::default() };
                options.engine.threads = threads;
                let got = q.run(&src, &options);
                match (&got, &want) {
                    (Ok(got), Ok(want)) => {
                        let rows: Vec<Vec<naive::Cell>> =
                            got.answer.rows.iter().map(|r| cells(&r.cells)).collect();
                        prop_assert_eq!(&rows, &want.rows, "{} at {} threads", text, threads);
                        prop_assert_eq!(got.answer.total, want.total, "{}", text);
                    }
                    // Summing a text: both refuse.
                    (Err(e), Err(naive::OracleError::Aggregate(_))) => {
                        prop_assert!(e.to_string().contains("sum adds numbers"), "{}: {}", text, e);
                    }
                    (got, want) => {
                        prop_assert!(false, "{}: engine {:?}, oracle {:?}", text, got.as_ref().map(|o| o.answer.total), want);
                    }
                }
            }
        }
    }
}
