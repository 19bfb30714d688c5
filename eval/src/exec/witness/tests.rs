//! The witness store's tests: recorded premises and the layouts.

use super::*;
use crate::ir::{RelDecl, RelKind};

/// Relations `e` (base), `tc` (derived) and `f3` (base, three columns).
fn ir(rules: Vec<Rule>) -> Ir {
    let rel = |name: &str, arity, kind| RelDecl {
        name: name.to_owned(),
        arity,
        kind,
    };
    Ir {
        relations: vec![
            rel("e", 2, RelKind::Base),
            rel("tc", 2, RelKind::Derived),
            rel("f3", 3, RelKind::Base),
        ],
        constants: Vec::new(),
        rules,
        goal: 1,
    }
}

fn rule(head: &[usize], body: &[(usize, &[Arg])]) -> Rule {
    Rule {
        head: 1,
        args: head.iter().map(|&v| HeadArg::Arg(Arg::Var(v))).collect(),
        body: body
            .iter()
            .map(|&(rel, args)| Lit::Pos {
                rel,
                args: args.to_vec(),
            })
            .collect(),
        vars: 6,
        names: Vec::new(),
    }
}

#[test]
fn base_facts_the_rest_pins_down_are_not_recorded() {
    let (v, c, w) = (Arg::Var, Arg::Const, Arg::Wild);
    let cases: Vec<(Rule, Vec<usize>)> = vec![
        // tc(x, y) :- e(x, y): the head pins e down.
        (rule(&[0, 1], &[(0, &[v(0), v(1)])]), vec![]),
        // tc(x, z) :- tc(x, y), e(y, z): a derived premise is always recorded.
        (
            rule(&[0, 2], &[(1, &[v(0), v(1)]), (0, &[v(1), v(2)])]),
            vec![0],
        ),
        // tc(x, y) :- e(x, p), tc(p, q), e(y, q): same generation's shape.
        (
            rule(
                &[0, 1],
                &[(0, &[v(0), v(2)]), (1, &[v(2), v(3)]), (0, &[v(1), v(3)])],
            ),
            vec![1],
        ),
        // A wildcard or a variable nothing else binds must be recorded.
        (rule(&[0, 1], &[(2, &[v(0), v(1), w])]), vec![0]),
        (rule(&[0, 1], &[(2, &[v(0), v(1), v(4)])]), vec![0]),
        // A constant is pinned.
        (rule(&[0, 1], &[(2, &[v(0), c(0), v(1)])]), vec![]),
        // Recording the first base literal binds the second's arguments.
        (
            rule(&[0, 1], &[(2, &[v(0), v(1), v(4)]), (0, &[v(4), v(0)])]),
            vec![0],
        ),
    ];
    for (i, (r, want)) in cases.into_iter().enumerate() {
        let ir = ir(vec![r.clone()]);
        assert_eq!(recorded(&ir, &r), want, "case {i}");
    }
}

#[test]
fn packed_derivations_read_back_and_widen_when_one_does_not_fit() {
    let words = |w: Word| At::Words([w, Word::MISSING]);
    let cases = [
        (7, words(Word::tuple(0))),
        (3, words(Word::MISSING)),
        (7, words(Word::arena(12))),
        (9, words(Word::tuple(PACKED_VALUE - 1))),
        (3, words(Word::arena(PACKED_VALUE as usize - 1))),
    ];
    let check = |d: &Derivs, upto: usize| {
        for (id, (rule, at)) in cases.iter().take(upto).enumerate() {
            let Some((r, At::Words(got))) = d.get(id as u32) else {
                panic!("{id}: {:?}", d.get(id as u32));
            };
            let At::Words(want) = at else { unreachable!() };
            assert_eq!((r, got), (*rule, *want), "id {id}");
        }
        assert!(d.get(upto as u32 + 100).is_none());
    };
    let mut d = Derivs::for_width(1);
    for (id, (rule, at)) in cases.iter().enumerate() {
        d.set(id as u32, *rule, *at);
    }
    d.grow(cases.len() + 1);
    assert!(d.get(cases.len() as u32).is_none(), "not recorded");
    assert!(matches!(d, Derivs::Packed(_)));
    assert_eq!(d.bytes(), 4 * (cases.len() + 1));
    check(&d, cases.len());
    // A fourth rule does not fit in two bits: every entry widens to 8 bytes.
    let mut fourth = d.clone();
    fourth.set(6, 11, words(Word::tuple(5)));
    assert!(matches!(fourth, Derivs::One(_)));
    check(&fourth, cases.len());
    assert_eq!(fourth.get(6).map(|(r, _)| r), Some(11));
    // Nor does a tuple id of 2^29.
    let mut wide = d.clone();
    wide.set(6, 7, words(Word::tuple(PACKED_VALUE)));
    assert!(matches!(wide, Derivs::One(_)));
    check(&wide, cases.len());
    let Some((7, At::Words([w, _]))) = wide.get(6) else {
        panic!("{:?}", wide.get(6));
    };
    assert_eq!(w, Word::tuple(PACKED_VALUE));
}

#[test]
fn derivations_recorded_in_one_pass_match_those_recorded_one_by_one() {
    let v = Arg::Var;
    // Five rules of the closure's shape, one word each.
    let tc = rule(&[0, 2], &[(1, &[v(0), v(1)]), (0, &[v(1), v(2)])]);
    let ir = ir(vec![tc; 5]);
    let words = |w: Word| [w, Word::MISSING];
    let runs: [Vec<(u32, [Word; 2])>; 3] = [
        // Fits in 4 bytes throughout; rule 9 is not the program's and is skipped.
        vec![
            (0, words(Word::tuple(4))),
            (1, words(Word::MISSING)),
            (9, words(Word::tuple(1))),
            (2, words(Word::tuple(PACKED_VALUE - 1))),
        ],
        // A fourth rule widens the entries midway.
        vec![
            (0, words(Word::tuple(4))),
            (1, words(Word::tuple(2))),
            (2, words(Word::tuple(3))),
            (3, words(Word::tuple(5))),
            (0, words(Word::tuple(6))),
        ],
        // So does a tuple id of 2^29.
        vec![
            (2, words(Word::tuple(7))),
            (2, words(Word::tuple(PACKED_VALUE))),
            (1, words(Word::tuple(8))),
        ],
    ];
    for (n, items) in runs.iter().enumerate() {
        let first = 3;
        let mut one = Witnesses::new(&ir);
        for (i, &(rule, words)) in items.iter().enumerate() {
            one.record(1, first + i as u32, rule, &words[..1], &[]);
        }
        let mut pass = Witnesses::new(&ir);
        assert!(pass.record_words(1, first, items.len(), 1, items.iter().copied()));
        for id in 0..first + items.len() as u32 + 2 {
            assert_eq!(
                format!("{:?}", pass.derivs[1].get(id)),
                format!("{:?}", one.derivs[1].get(id)),
                "run {n}, id {id}"
            );
        }
        assert_eq!(pass.derivs[1].bytes(), one.derivs[1].bytes(), "run {n}");
    }
    // Two words do not fit a relation whose rules record one: nothing is recorded.
    let mut w = Witnesses::new(&ir);
    let two = [(0, [Word::tuple(1), Word::tuple(2)])];
    assert!(!w.record_words(1, 0, 1, 2, two.into_iter()));
    assert!(w.derivs[1].get(0).is_none());
}

#[test]
fn a_derivation_rebuilds_the_premises_it_did_not_record() {
    // tc(x, z) :- tc(x, y), e(y, z), with tc = {(1, 2), (1, 3)}.
    let (v, t) = (Arg::Var, Term);
    let r = rule(&[0, 2], &[(1, &[v(0), v(1)]), (0, &[v(1), v(2)])]);
    let ir = ir(vec![r]);
    let mut relations: Vec<Relation> = ir
        .relations
        .iter()
        .map(|d| Relation::new(d.arity))
        .collect();
    relations[1].insert(&[t(1), t(2)]);
    relations[1].insert(&[t(1), t(3)]);
    let mut w = Witnesses::new(&ir);
    assert!(matches!(w.derivs[1], Derivs::Packed(_)), "one word a tuple");
    assert_eq!((size_of::<Deriv<1>>(), size_of::<Deriv<2>>()), (8, 12));
    // tc(1, 3) from tc(1, 2) (id 0) and e(2, 3).
    w.record(1, 1, 0, &[Word::tuple(0)], &[]);
    let d = w.derivation(1, 1, &relations, &[]).expect("recorded");
    assert_eq!(d.rule, 0);
    assert_eq!(d.premises[0], Premise::Tuple { rel: 1, id: 0 });
    let Premise::Implied { rel: 0, start } = d.premises[1] else {
        panic!("{:?}", d.premises[1]);
    };
    assert_eq!(d.implied_terms(start, 2), [t(2), t(3)]);
    assert!(w.derivation(1, 0, &relations, &[]).is_none());
}
