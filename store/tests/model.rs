//! The store against a model: random batches (facts with and without units, `--replace`,
//! retractions) applied to the store and to an in-memory model of the semantics; after each,
//! every scan and lookup must agree with the model and `check` must pass. `r1` is declared
//! without an index on its second column (`--index r1=c1,c3`), the others indexed whole.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use proptest::prelude::*;
use strata_eval::{FactSource, Term, Value};
use strata_store::dump::Field;
use strata_store::{BatchOptions, CommitError, IngestError, OpenOptions, Store};

/// A fact: relation index and a 2- or 3-tuple of small values.
type Tuple = Vec<i64>;

#[derive(Clone, Debug)]
enum Op {
    Add {
        facts: Vec<(usize, Tuple, Option<u8>)>,
        replace: bool,
        tier: bool,
    },
    Retract(Vec<u8>),
}

const RELS: [(&str, usize); 3] = [("r0", 2), ("r1", 3), ("r2", 1)];

/// Values of every kind of term: integers held in the term, numbers and texts in the
/// dictionary (spread over several postings chunks).
fn value(v: i64) -> Value {
    match v % 5 {
        0 => Value::Number(v as f64),
        1 => Value::Number(v as f64 + 0.5),
        2 => Value::Number(2f64.powi(31) + v as f64),
        _ => Value::text(format!("v{v}")),
    }
}

fn field(v: i64) -> Field<'static> {
    match value(v) {
        Value::Number(n) => Field::Number(n),
        Value::Text(s) => Field::Text(s.into()),
        Value::Absent => Field::Absent,
    }
}

fn op() -> impl Strategy<Value = Op> {
    let fact = (
        0..RELS.len(),
        prop::collection::vec(prop_oneof![0i64..6, 0i64..400], 3),
        prop::option::of(0u8..4),
    )
        .prop_map(|(r, mut t, u)| {
            t.truncate(RELS[r].1);
            (r, t, u)
        });
    prop_oneof![
        4 => (prop::collection::vec(fact, 0..30), any::<bool>(), any::<bool>())
            .prop_map(|(facts, replace, tier)| Op::Add { facts, replace, tier }),
        1 => prop::collection::vec(0u8..4, 1..3).prop_map(Op::Retract),
    ]
}

/// The model: per relation, each tuple with the set of its owners (None = no unit).
type Model = BTreeMap<usize, BTreeMap<Tuple, BTreeSet<Option<u8>>>>;

fn apply(model: &mut Model, op: &Op) {
    let remove = |model: &mut Model, units: &BTreeSet<u8>| {
        for rel in model.values_mut() {
            rel.retain(|_, owners| {
                owners.retain(|o| !matches!(o, Some(u) if units.contains(u)));
                !owners.is_empty()
            });
        }
    };
    match op {
        Op::Add { facts, replace, .. } => {
            if *replace {
                let units: BTreeSet<u8> = facts.iter().filter_map(|f| f.2).collect();
                remove(model, &units);
            }
            for (r, t, u) in facts {
                model
                    .entry(*r)
                    .or_default()
                    .entry(t.clone())
                    .or_default()
                    .insert(*u);
            }
        }
        Op::Retract(units) => remove(model, &units.iter().copied().collect()),
    }
}

fn rows(snap: &impl FactSource, rel: &str, bound: &[(usize, Term)]) -> BTreeSet<Vec<Value>> {
    let mut out = BTreeSet::new();
    let mut terms = Vec::new();
    snap.lookup(rel, bound, &mut |row| {
        terms.push(row.to_vec());
        ControlFlow::Continue(())
    })
    .unwrap();
    for t in terms {
        out.insert(t.into_iter().map(|x| snap.value(x).unwrap()).collect());
    }
    out
}

fn run(ops: &[Op]) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path(),
        OpenOptions {
            create: true,
            ..Default::default()
        },
    )
    .unwrap();
    let mut model = Model::new();
    // A relation's tier is fixed by the first batch that creates it.
    let mut tier_of: BTreeMap<usize, &str> = BTreeMap::new();
    for op in ops {
        match op {
            Op::Add {
                facts,
                replace,
                tier,
            } => {
                let tier_name = if *tier { "side" } else { "default" };
                // Facts of relations that live in another tier go to a batch of their own.
                let (here, elsewhere): (Vec<_>, Vec<_>) = facts
                    .iter()
                    .cloned()
                    .partition(|f| *tier_of.entry(f.0).or_insert(tier_name) == tier_name);
                for (tier, part) in [
                    (tier_name, here),
                    (if *tier { "default" } else { "side" }, elsewhere),
                ] {
                    if part.is_empty() {
                        continue;
                    }
                    // Small buffers make a batch write in several flushes before it commits.
                    let buffer_facts = if part.len() % 2 == 0 { 3 } else { 1 << 20 };
                    // `r1`'s declaration, in every batch that holds it or once it is stored.
                    let declare = part.iter().any(|f| f.0 == 1)
                        || store.catalog().unwrap().relations.contains_key("r1");
                    let indexes = if declare {
                        BTreeMap::from([("r1".to_owned(), vec!["c1".to_owned(), "c3".to_owned()])])
                    } else {
                        BTreeMap::new()
                    };
                    let options = BatchOptions {
                        tier: tier.to_owned(),
                        replace: *replace,
                        buffer_facts,
                        indexes,
                        ..Default::default()
                    };
                    let mut batch = store.batch(options).unwrap();
                    for (r, t, u) in &part {
                        let fields: Vec<Field<'_>> = t.iter().map(|&v| field(v)).collect();
                        let unit = u.map(|u| format!("unit{u}"));
                        batch
                            .add_fact(RELS[*r].0, &fields, unit.as_deref())
                            .unwrap();
                    }
                    batch.commit().unwrap();
                    apply(
                        &mut model,
                        &Op::Add {
                            facts: part,
                            replace: *replace,
                            tier: false,
                        },
                    );
                }
            }
            Op::Retract(units) => {
                let names: Vec<String> = units.iter().map(|u| format!("unit{u}")).collect();
                match store.retract(&names, BatchOptions::default()) {
                    Ok(_) => {}
                    // None of the units owns a fact: nothing is committed (issue 20).
                    Err(CommitError::Batch(IngestError::UnknownUnits { .. })) => {
                        let owned = model.values().flat_map(|rel| rel.values()).any(|owners| {
                            owners
                                .iter()
                                .any(|o| matches!(o, Some(u) if units.contains(u)))
                        });
                        assert!(!owned, "units {units:?} own facts, but retract found none");
                    }
                    Err(e) => panic!("{e}"),
                }
                apply(&mut model, op);
            }
        }
        let snap = store.snapshot().unwrap();
        for (r, (name, arity)) in RELS.iter().enumerate() {
            let expected: BTreeSet<Vec<Value>> = model
                .get(&r)
                .map(|m| {
                    m.keys()
                        .map(|t| t.iter().map(|&v| value(v)).collect())
                        .collect()
                })
                .unwrap_or_default();
            if snap.relation(name).unwrap().is_none() {
                assert!(
                    expected.is_empty(),
                    "{name} missing but expected {expected:?}"
                );
                continue;
            }
            assert_eq!(rows(&snap, name, &[]), expected, "scan of {name}");
            // Read in parts and joined in order, the facts are the scan's, in its order.
            let mut scanned: Vec<Term> = Vec::new();
            snap.scan(name, &mut |row| {
                scanned.extend_from_slice(row);
                ControlFlow::Continue(())
            })
            .unwrap();
            for parts in 1..=3 {
                let joined: Vec<Term> = (0..parts)
                    .flat_map(|p| snap.read_part(name, p, parts).unwrap())
                    .collect();
                assert_eq!(joined, scanned, "{name} read in {parts} parts");
            }
            let info = snap.relation(name).unwrap().unwrap();
            assert_eq!(info.rows, expected.len() as u64, "row count of {name}");
            for c in 0..*arity {
                let distinct: BTreeSet<&Value> = expected.iter().map(|t| &t[c]).collect();
                if info.indexed(c) {
                    assert_eq!(
                        info.distinct[c],
                        distinct.len() as u64,
                        "distinct {name}.{c}"
                    );
                } else {
                    // Without postings, an upper bound no larger than the rows.
                    assert!(
                        info.distinct[c] >= distinct.len() as u64 && info.distinct[c] <= info.rows,
                        "distinct {name}.{c}: {} for {}",
                        info.distinct[c],
                        distinct.len()
                    );
                }
            }
            assert_eq!(info.unindexed, if *name == "r1" { vec![1] } else { vec![] });
            // Every lookup by one column, and by all columns, for each value 0..6.
            let present: BTreeSet<i64> = model
                .values()
                .flat_map(|m| m.keys().flatten().copied())
                .collect();
            for v in present.iter().copied().chain([7, 401]) {
                let found = snap.term(&value(v)).unwrap();
                assert!(
                    found.is_some() || !present.contains(&v),
                    "no term for stored {v}"
                );
                let Some(term) = found else { continue };
                for c in 0..*arity {
                    let want: BTreeSet<Vec<Value>> = expected
                        .iter()
                        .filter(|t| t[c] == value(v))
                        .cloned()
                        .collect();
                    assert_eq!(
                        rows(&snap, name, &[(c, term)]),
                        want,
                        "{name} col {c} = {v}"
                    );
                    assert!(snap.estimate(name, &[(c, term)]).unwrap() >= want.len() as u64);
                }
            }
            for t in &expected {
                let bound: Vec<(usize, Term)> = t
                    .iter()
                    .enumerate()
                    .map(|(c, v)| (c, snap.term(v).unwrap().unwrap()))
                    .collect();
                assert_eq!(
                    rows(&snap, name, &bound).len(),
                    1,
                    "{name} point lookup {t:?}"
                );
            }
        }
        let report = store.check().unwrap();
        assert!(report.ok(), "{report}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn store_agrees_with_the_model(ops in prop::collection::vec(op(), 1..8)) {
        run(&ops);
    }
}

#[test]
fn shared_fact_survives_one_owner_leaving() {
    let f = |r: usize, t: &[i64], u: Option<u8>| (r, t.to_vec(), u);
    run(&[
        Op::Add {
            facts: vec![
                f(0, &[1, 2], Some(0)),
                f(0, &[1, 2], Some(1)),
                f(0, &[1, 2], None),
            ],
            replace: false,
            tier: false,
        },
        Op::Retract(vec![0]),
        Op::Retract(vec![1]),
        Op::Add {
            facts: vec![f(0, &[1, 2], Some(2)), f(0, &[2, 2], Some(2))],
            replace: true,
            tier: false,
        },
        Op::Add {
            facts: vec![f(0, &[3, 3], Some(2))],
            replace: true,
            tier: true,
        },
    ]);
}
