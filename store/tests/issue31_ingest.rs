//! Issue 31: a batch keeps its facts compact (two columns in 8 bytes a fact, units as runs),
//! lets go of them as their rows go in, and encodes a large flush's columns on threads of
//! their own. These batches are large enough for that (over 64K rows a relation), in every
//! form the facts are sorted in: one or two columns without units, three columns, two
//! columns with many units; then grown by a later batch and partly replaced. What the store
//! answers is compared with a model, and `check` rebuilds every index from the columns. A
//! later batch that restates stored tuples finds each (and nothing it should not).

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use strata_eval::{FactSource, Term, Value};
use strata_store::dump::{Field, Format};
use strata_store::{BatchOptions, Store};

mod common;

use common::{commit_dump, create};

/// Every fact of `rel`, as numbers.
fn facts(store: &Store, rel: &str) -> BTreeSet<Vec<i64>> {
    let snap = store.snapshot().unwrap();
    let mut out = BTreeSet::new();
    snap.scan(rel, &mut |row: &[Term]| {
        let fact = row
            .iter()
            .map(|t| match snap.value(*t).unwrap() {
                Value::Number(n) => n as i64,
                v => panic!("{v:?} is not a number"),
            })
            .collect();
        assert!(out.insert(fact), "a fact stored twice");
        ControlFlow::Continue(())
    })
    .unwrap();
    out
}

/// Checks every value of column `col` of `rel` that `model` holds (a sample of them) by
/// lookup: the facts found are the model's facts with that value.
fn lookups(store: &Store, rel: &str, col: usize, model: &BTreeSet<Vec<i64>>) {
    let snap = store.snapshot().unwrap();
    let mut by_value: BTreeMap<i64, BTreeSet<Vec<i64>>> = BTreeMap::new();
    for f in model {
        by_value.entry(f[col]).or_default().insert(f.clone());
    }
    for (v, want) in by_value.iter().step_by(97) {
        #[allow(clippy::cast_precision_loss)]
        let term = snap.term(&Value::Number(*v as f64)).unwrap().unwrap();
        let mut got = BTreeSet::new();
        snap.lookup(rel, &[(col, term)], &mut |row: &[Term]| {
            got.insert(
                row.iter()
                    .map(|t| match snap.value(*t).unwrap() {
                        Value::Number(n) => n as i64,
                        v => panic!("{v:?}"),
                    })
                    .collect::<Vec<i64>>(),
            );
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(&got, want, "{rel}, column {col} = {v}");
    }
}

/// A `.facts` dump of `n` facts of `arity` columns from `from`, each column a different
/// spread (the first clustered), every seventh line repeating one before it.
fn dump(arity: usize, from: u64, n: u64, model: &mut BTreeSet<Vec<i64>>) -> String {
    let mut out = String::new();
    for i in from..from + n {
        let j = if i % 7 == 6 { i / 2 } else { i };
        let fact: Vec<i64> = (0..arity as u64)
            .map(|c| match c {
                0 => (j / 3) as i64,
                1 => ((j * 7919) % 50_021) as i64,
                _ => ((j * 104_729 + c) % 90_001) as i64,
            })
            .collect();
        let line: Vec<String> = fact.iter().map(i64::to_string).collect();
        out.push_str(&line.join("\t"));
        out.push('\n');
        model.insert(fact);
    }
    out
}

fn ingest(store: &Store, label: &str, format: Format, text: &str, replace: bool) {
    let options = BatchOptions {
        replace,
        ..BatchOptions::default()
    };
    commit_dump(store, options, label, format, text);
}

#[test]
fn issue31_large_batches_in_every_sorted_form_answer_as_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut models: Vec<(String, usize, BTreeSet<Vec<i64>>)> = Vec::new();
    // One batch of each: 1, 2 and 3 columns, no units, 100,000 lines each.
    for arity in 1..=3 {
        let mut model = BTreeSet::new();
        let text = dump(arity, 0, 100_000, &mut model);
        let rel = format!("r{arity}");
        ingest(&store, &format!("{rel}.facts"), Format::Facts, &text, false);
        models.push((rel, arity, model));
    }
    // A later batch grows each (its first new row not at a block's start).
    for (rel, arity, model) in &mut models {
        let text = dump(*arity, 90_000, 80_000, model);
        ingest(&store, &format!("{rel}.facts"), Format::Facts, &text, false);
    }
    for (rel, arity, model) in &models {
        assert_eq!(&facts(&store, rel), model, "{rel}");
        for col in 0..*arity {
            lookups(&store, rel, col, model);
        }
    }
    assert!(store.check().unwrap().ok());
}

#[test]
fn issue31_a_large_replacing_batch_merges_into_the_chunks_it_changed() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    // Edges stated by 200 units, 500 lines each; then a replacing batch for every other unit
    // with 80,000 new lines: the removals change chunks its new rows also reach.
    let mut model: BTreeMap<u64, BTreeSet<Vec<i64>>> = BTreeMap::new();
    // Line `i` of the dump, stated by `unit`, into `text` and the model.
    let mut add = |i: u64, unit: u64, text: &mut String| {
        let (src, dst) = (i / 4, (i * 7919) % 60_013);
        text.push_str(&format!("{src}\tCALLS\t{dst}\tu{unit}\n"));
        let fact = vec![src as i64, dst as i64];
        model.entry(unit).or_default().insert(fact);
    };
    let mut text = String::new();
    for i in 0..100_000u64 {
        add(i, i / 500, &mut text);
    }
    ingest(&store, "e.edges.tsv", Format::Edges, &text, false);
    let mut text = String::new();
    for k in 0..80_000u64 {
        add(1_000_000 + k * 3, (k % 100) * 2, &mut text);
    }
    ingest(&store, "e.edges.tsv", Format::Edges, &text, true);
    // The replaced units' first facts are gone.
    for unit in (0..200u64).step_by(2) {
        let first = (unit * 500..(unit + 1) * 500)
            .map(|i| vec![(i / 4) as i64, ((i * 7919) % 60_013) as i64])
            .collect::<BTreeSet<_>>();
        let facts = model.get_mut(&unit).unwrap();
        facts.retain(|f| !first.contains(f));
    }
    let want: BTreeSet<Vec<i64>> = model.values().flatten().cloned().collect();
    assert_eq!(facts(&store, "calls"), want);
    lookups(&store, "calls", 0, &want);
    lookups(&store, "calls", 1, &want);
    assert!(store.check().unwrap().ok());
}

/// The fact of line `i` of [`restated`]'s dumps: a third of the lines are of one hub term
/// (whose rows grow by each batch, so they span many blocks), the rest of terms with 2 rows.
fn hub_fact(arity: usize, i: u64) -> Vec<i64> {
    let (first, second) = if i.is_multiple_of(3) {
        (0, i as i64)
    } else {
        ((i / 2 + 1) as i64, ((i * 7919) % 70_001) as i64)
    };
    let mut fact = vec![first, second];
    if arity == 3 {
        fact.push(second % 11);
    }
    fact
}

/// Ingests lines `lines` of [`hub_fact`] as one batch of `buffer` facts a flush; checks
/// the batch's counts of new and restated facts against the model.
fn restated(
    store: &Store,
    arity: usize,
    lines: &[u64],
    buffer: usize,
    model: &mut BTreeSet<Vec<i64>>,
) {
    let mut text = String::new();
    let mut new = 0;
    for &i in lines {
        let fact = hub_fact(arity, i);
        let line: Vec<String> = fact.iter().map(i64::to_string).collect();
        text.push_str(&line.join("\t"));
        text.push('\n');
        if model.insert(fact) {
            new += 1;
        }
    }
    let options = BatchOptions {
        buffer_facts: buffer,
        ..BatchOptions::default()
    };
    let label = format!("h{arity}.facts");
    let summary = commit_dump(store, options, &label, Format::Facts, &text);
    assert_eq!(summary.new, new, "new facts, arity {arity}");
    assert_eq!(summary.facts_read, lines.len() as u64);
}

#[test]
fn issue31_a_later_batch_finds_the_tuples_it_restates() {
    // A later batch looks each tuple up: by the rows of its first term checked in their
    // blocks when they are few, else by the postings of its other terms. The hub term's
    // rows are many and span batches; the other terms' are two, side by side.
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    for arity in [2, 3] {
        let mut model = BTreeSet::new();
        let first: Vec<u64> = (0..60_000).collect();
        restated(&store, arity, &first, 1 << 20, &mut model);
        let second: Vec<u64> = (60_000..90_000).collect();
        restated(&store, arity, &second, 1 << 20, &mut model);
        // Stored lines from both batches, new ones, and lines repeated within the batch,
        // over several flushes (so later flushes find what earlier ones added).
        let mut third: Vec<u64> = (40_000..75_000).step_by(3).collect();
        third.extend((88_000..130_000).step_by(2));
        third.extend((100_000..110_000).step_by(5));
        third.extend((0..5_000).step_by(7));
        restated(&store, arity, &third, 20_000, &mut model);
        let rel = format!("h{arity}");
        assert_eq!(facts(&store, &rel), model, "{rel}");
        for col in 0..arity {
            lookups(&store, &rel, col, &model);
        }
    }
    assert!(store.check().unwrap().ok());
}

/// Relations empty when their batch began, written in many flushes (997 facts each): a
/// later flush walks the rows its earlier flushes appended (`ingest::earlier`) and looks up
/// only the tuples they hold. Every sorted form (one, two and three columns; without units,
/// and with eleven) restates, under other units, facts of earlier flushes: the batch counts
/// each distinct fact once, and what is stored answers as the model: its rows, lookups by
/// each column, and each unit's facts, retracted one unit at a time.
#[test]
fn issue31_a_fresh_relation_in_many_flushes_finds_what_its_earlier_flushes_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    for arity in 1..=3usize {
        for units in [false, true] {
            let rel = format!("fresh{arity}{}", if units { "u" } else { "" });
            let mut model: BTreeMap<Vec<i64>, BTreeSet<String>> = BTreeMap::new();
            let options = BatchOptions {
                buffer_facts: 997,
                ..BatchOptions::default()
            };
            let mut batch = store.batch(options).unwrap();
            for i in 0..20_000u64 {
                // Every fifth line restates a line read flushes before, under its own unit.
                let j = if i % 5 == 4 { i / 3 } else { i };
                let fact: Vec<i64> = (0..arity)
                    .map(|c| match c {
                        0 => ((j * 7919) % 4_001) as i64,
                        1 => (j % 13) as i64,
                        _ => (j / 7) as i64,
                    })
                    .collect();
                let unit = units.then(|| format!("u{}", i % 11));
                #[allow(clippy::cast_precision_loss)]
                let fields: Vec<Field<'_>> =
                    fact.iter().map(|&v| Field::Number(v as f64)).collect();
                batch.add_fact(&rel, &fields, unit.as_deref()).unwrap();
                model
                    .entry(fact)
                    .or_default()
                    .insert(unit.unwrap_or_default());
            }
            let summary = batch.commit().unwrap();
            assert_eq!(summary.new, model.len() as u64, "{rel}: new facts");
            assert_eq!(summary.facts_read, 20_000, "{rel}");
            let want = |model: &BTreeMap<Vec<i64>, BTreeSet<String>>| -> BTreeSet<Vec<i64>> {
                model.keys().cloned().collect()
            };
            assert_eq!(facts(&store, &rel), want(&model), "{rel}");
            for col in 0..arity {
                lookups(&store, &rel, col, &want(&model));
            }
            if units {
                for u in 0..11 {
                    let unit = format!("u{u}");
                    store
                        .retract(std::slice::from_ref(&unit), BatchOptions::default())
                        .unwrap();
                    model.retain(|_, owners| {
                        owners.remove(&unit);
                        !owners.is_empty()
                    });
                    assert_eq!(facts(&store, &rel), want(&model), "{rel} without u0..={u}");
                }
                assert!(model.is_empty());
            }
        }
    }
    assert!(store.check().unwrap().ok());
}

/// A relation new in the batch, of more than a million rows (`RelWriter::stream_postings`):
/// its first column's postings are encoded on a thread of their own as the rows are
/// appended, and must answer as those encoded after.
#[test]
fn issue31_a_fresh_relation_of_a_million_rows_answers_as_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut model = BTreeSet::new();
    let text = dump(2, 0, 1_200_000, &mut model);
    ingest(&store, "big.facts", Format::Facts, &text, false);
    assert_eq!(facts(&store, "big"), model);
    for col in 0..2 {
        lookups(&store, "big", col, &model);
    }
    assert!(store.check().unwrap().ok());
}
