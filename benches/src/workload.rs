//! The engine workloads of the benches and of `compare`, in one place: seeded, deterministic,
//! sized by one number, written to and read from Soufflé-style fact files so every engine
//! reads the same input.
//!
//! The generators are `strata_fixtures::workloads` (random sparse graphs, chains,
//! same-generation trees, Andersen points-to) and `strata_fixtures::codegraph` (code-graph
//! dumps: imports, contains, defines, references, calls; see [`crate::dumps`]); this module
//! adds balanced trees and picks the size of each workload for a [`Scale`].
//!
//! ```
//! use strata_benches::workload::{Kind, Scale};
//!
//! let w = Kind::Closure.make(Scale::Smoke, 0);
//! assert_eq!(w.relations[0].0, "e");
//! assert_eq!(w, Kind::Closure.make(Scale::Smoke, 0));
//! ```

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;

pub use strata_fixtures::workloads::{
    Workload, chain, closure, points_to, random_graph, reach, same_generation,
};

/// The closure program over `e`, every pair counted.
pub const CLOSURE_PROGRAM: &str =
    "tc(?x, ?y) :- e(?x, ?y);\ntc(?x, ?z) :- tc(?x, ?y), e(?y, ?z);\ntc(?x, ?y) => count(?y)";

/// The workloads `compare` and the engine benches run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Transitive closure of a random sparse graph (`e`), every pair.
    Closure,
    /// Same generation over a random tree (`par(child, parent)`).
    SameGeneration,
    /// Andersen points-to (`new`, `assign`, `load`, `store`).
    PointsTo,
    /// Transitive closure of a chain (`e(i, i+1)`), every pair: one round per link, the
    /// per-round overhead.
    Chain,
    /// Bound reachability `reach(0, ?y)` over a random sparse graph (`e`).
    Reach,
}

/// How big to make a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Tiny: a CI test in a debug build, milliseconds.
    Smoke,
    /// `compare --quick`: a tenth of a second or so each, release build.
    Quick,
    /// The default: about a second each for the fastest engine, release build.
    Default,
}

impl Kind {
    /// Every workload, in table order.
    pub const ALL: [Kind; 5] = [
        Kind::Closure,
        Kind::SameGeneration,
        Kind::PointsTo,
        Kind::Chain,
        Kind::Reach,
    ];

    /// Its name (the workload's `name`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Closure => "closure",
            Kind::SameGeneration => "same_generation",
            Kind::PointsTo => "points_to",
            Kind::Chain => "chain",
            Kind::Reach => "reach",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The size parameter at `scale`: nodes (closure, reach, same generation), variables
    /// (points-to) or links (chain).
    pub fn size(self, scale: Scale) -> u32 {
        match (self, scale) {
            (Kind::Closure, Scale::Smoke) => 120,
            (Kind::Closure, Scale::Quick) => 1_000,
            (Kind::Closure, Scale::Default) => 2_500,
            (Kind::SameGeneration, Scale::Smoke) => 300,
            (Kind::SameGeneration, Scale::Quick) => 50_000,
            (Kind::SameGeneration, Scale::Default) => 500_000,
            (Kind::PointsTo, Scale::Smoke) => 300,
            (Kind::PointsTo, Scale::Quick) => 400_000,
            (Kind::PointsTo, Scale::Default) => 4_000_000,
            (Kind::Chain, Scale::Smoke) => 60,
            (Kind::Chain, Scale::Quick) => 1_000,
            (Kind::Chain, Scale::Default) => 4_000,
            (Kind::Reach, Scale::Smoke) => 500,
            (Kind::Reach, Scale::Quick) => 500_000,
            (Kind::Reach, Scale::Default) => 5_000_000,
        }
    }

    /// The Strata program of the workload (the same at every size).
    pub fn program(self) -> String {
        self.make_sized(2, 0).program
    }

    /// The workload at `scale` with `seed`.
    pub fn make(self, scale: Scale, seed: u64) -> Workload {
        self.make_sized(self.size(scale), seed)
    }

    /// The workload of size `n` (see [`Kind::size`]) with `seed`.
    pub fn make_sized(self, n: u32, seed: u64) -> Workload {
        match self {
            Kind::Closure => closure(n, 2, seed),
            Kind::SameGeneration => same_generation(n, 3, seed),
            Kind::PointsTo => points_to(n, seed),
            Kind::Chain => Workload {
                program: CLOSURE_PROGRAM.to_owned(),
                ..chain(n)
            },
            Kind::Reach => reach(n, 2, seed),
        }
    }
}

/// A balanced tree of `nodes` nodes, `fanout` children each, as `(child, parent)` pairs
/// (node 0 is the root; node `i`'s parent is `(i - 1) / fanout`).
pub fn tree(nodes: u32, fanout: u32) -> Vec<(u32, u32)> {
    let f = fanout.max(1);
    (1..nodes).map(|c| (c, (c - 1) / f)).collect()
}

/// Writes each base relation of `w` to `dir/NAME.facts` (`a<TAB>b` lines, Soufflé's input
/// format), creating `dir`.
pub fn write_facts(w: &Workload, dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    for (name, pairs) in &w.relations {
        let mut out = BufWriter::new(File::create(dir.join(format!("{name}.facts")))?);
        for (a, b) in pairs {
            writeln!(out, "{a}\t{b}")?;
        }
        out.into_inner().map_err(io::IntoInnerError::into_error)?;
    }
    Ok(())
}

/// The relation names `kind` reads.
pub fn relation_names(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Closure | Kind::Chain | Kind::Reach => &["e"],
        Kind::SameGeneration => &["par"],
        Kind::PointsTo => &["new", "assign", "load", "store"],
    }
}

/// Reads the workload of `kind` back from the fact files [`write_facts`] wrote in `dir`.
pub fn read_facts(kind: Kind, dir: &Path) -> io::Result<Workload> {
    let mut relations = Vec::new();
    for name in relation_names(kind) {
        let pairs = crate::read_pairs(&dir.join(format!("{name}.facts")))?;
        relations.push(((*name).to_owned(), pairs));
    }
    let program = kind.program();
    Ok(Workload {
        name: kind.name().to_owned(),
        relations,
        program,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_round_trip_and_trees() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        for k in Kind::ALL {
            let w = k.make(Scale::Smoke, 3);
            assert_eq!(Kind::parse(k.name()), Some(k));
            assert_eq!(w.name, k.name());
            write_facts(&w, dir.path())?;
            assert_eq!(read_facts(k, dir.path())?, w);
        }
        let t = tree(13, 3);
        assert_eq!(t.len(), 12);
        assert_eq!(t[0], (1, 0));
        assert_eq!(t[11], (12, 3));
        Ok(())
    }
}
