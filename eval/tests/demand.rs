//! Demand is used only where it saves work: a relation some call needs whole is computed
//! once, whole, and every other call of it reads that computation.

#![allow(clippy::unwrap_used)]

mod common;

use strata_eval::{FactSource, Vocabulary};
use strata_eval::{Query, RunOptions};
use strata_fixtures::workloads;

fn explain(w: &workloads::Workload) -> String {
    let src = common::workload_source(w);
    let vocab = Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let q = Query::prepare(&vocab, &w.program, &[]).unwrap();
    q.explain(&src, &RunOptions::default()).unwrap().text()
}

#[test]
fn a_relation_needed_whole_is_not_also_computed_by_demand() {
    // The goal reads all of pt; heap is read with its first argument bound.
    let text = explain(&workloads::points_to(2000, 13));
    assert!(text.contains("pt: computed whole"), "{text}");
    assert!(!text.contains("pt: computed by demand"), "{text}");
    // heap is on a cycle with pt: everything its calls ask for feeds pt, so it is computed
    // whole too, with no magic relation (which cost more than it saved).
    assert!(text.contains("heap: computed whole"), "{text}");
    assert!(!text.contains("@magic"), "{text}");
    // same_generation's goal is unbound: no demand at all.
    let text = explain(&workloads::same_generation(500, 3, 12));
    assert!(!text.contains("by demand"), "{text}");
    assert!(!text.contains("@magic"), "{text}");
}

#[test]
fn a_bound_goal_still_runs_by_demand() {
    let text = explain(&workloads::reach(2000, 2, 14));
    assert!(text.contains("reach: computed by demand"), "{text}");
}

#[test]
fn a_bound_call_from_another_component_still_runs_by_demand() {
    // `hub` is computed whole; it calls `reach` with the start bound, and `reach` does not
    // depend back on `hub`, so `reach` is computed by demand from the hub's starts.
    let w = workloads::Workload {
        name: "hub".to_owned(),
        relations: vec![
            ("e".to_owned(), workloads::random_graph(2000, 2, 14)),
            ("start".to_owned(), vec![(0, 0), (7, 7)]),
        ],
        program: "reach(?x, ?y) :- e(?x, ?y);\n\
                  reach(?x, ?z) :- reach(?x, ?y), e(?y, ?z);\n\
                  hub(?x, ?y) :- start(?x, ?x), reach(?x, ?y);\n\
                  hub(?x, ?y) => count(?y)"
            .to_owned(),
    };
    let text = explain(&w);
    assert!(text.contains("reach: computed by demand"), "{text}");
    assert!(text.contains("hub: computed whole"), "{text}");
}
