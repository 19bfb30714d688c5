//! The engines `compare` runs, each workload written in the engine's own API over the same
//! input pairs: Strata (a `MemorySource` and the workload's program), datafrog, ascent and
//! crepe (each program written out below), a hand-written BFS for bound reachability, and
//! Soufflé (a `.dl` program over the same `.facts` files) when `souffle` is on `PATH`.
//!
//! Every engine answers a count: the pairs of the closure, same generation and points-to
//! relations, or the nodes node 0 reaches.
//!
//! ```
//! use strata_benches::engines::{Engine, Prepared};
//! use strata_benches::workload::{Kind, Scale};
//!
//! let w = Kind::Chain.make(Scale::Smoke, 0);
//! let n = Prepared::new(Engine::Datafrog, Kind::Chain, &w).unwrap().run().unwrap();
//! assert_eq!(n, 60 * 61 / 2);
//! let s = Prepared::new(Engine::strata(1, false), Kind::Chain, &w).unwrap();
//! assert_eq!(s.run().unwrap(), n);
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

use rustc_hash::FxHashSet;
use strata_eval::Cell;
use strata_eval::{FactSource, MemorySource, Value, Vocabulary};
use strata_eval::{Query, RunOptions};

use crate::workload::{Kind, Workload};
use crate::{BenchError, BenchResult};

/// One engine (and for Strata, its options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Strata's engine over a `MemorySource`.
    Strata {
        /// Worker threads.
        threads: usize,
        /// Whether witnesses are kept.
        witnesses: bool,
    },
    /// datafrog 2.
    Datafrog,
    /// ascent 0.8, serial (without its `par` feature).
    Ascent,
    /// crepe 0.2.
    Crepe,
    /// A hand-written breadth-first search (bound reachability only).
    Bfs,
    /// Soufflé's interpreter, when `souffle` is on `PATH`.
    Souffle,
}

impl Engine {
    /// Strata with `threads` threads, witnesses on or off.
    pub fn strata(threads: usize, witnesses: bool) -> Engine {
        Engine::Strata { threads, witnesses }
    }

    /// The engines `compare` runs on `kind`, in table order.
    pub fn for_kind(kind: Kind) -> Vec<Engine> {
        let mut v = vec![
            Engine::strata(1, false),
            Engine::strata(2, false),
            Engine::strata(1, true),
            Engine::strata(2, true),
            Engine::Datafrog,
            Engine::Ascent,
            Engine::Crepe,
        ];
        if kind == Kind::Reach {
            v.push(Engine::Bfs);
        }
        v.push(Engine::Souffle);
        v
    }

    /// Its name in the table and on the `--child` command line.
    pub fn name(self) -> String {
        match self {
            Engine::Strata { threads, witnesses } => format!(
                "strata-{threads}t-{}",
                if witnesses { "witnesses" } else { "plain" }
            ),
            Engine::Datafrog => "datafrog".to_owned(),
            Engine::Ascent => "ascent".to_owned(),
            Engine::Crepe => "crepe".to_owned(),
            Engine::Bfs => "bfs".to_owned(),
            Engine::Souffle => "souffle".to_owned(),
        }
    }

    /// The engine [`Engine::name`] names.
    pub fn parse(name: &str) -> Option<Engine> {
        if let Some(rest) = name.strip_prefix("strata-") {
            let (t, w) = rest.split_once("t-")?;
            let witnesses = match w {
                "witnesses" => true,
                "plain" => false,
                _ => return None,
            };
            return Some(Engine::strata(t.parse().ok()?, witnesses));
        }
        Some(match name {
            "datafrog" => Engine::Datafrog,
            "ascent" => Engine::Ascent,
            "crepe" => Engine::Crepe,
            "bfs" => Engine::Bfs,
            "souffle" => Engine::Souffle,
            _ => return None,
        })
    }

    /// Whether this is one of Strata's runs.
    pub fn is_strata(self) -> bool {
        matches!(self, Engine::Strata { .. })
    }
}

/// Whether `souffle` is on `PATH` (runs `souffle --version`).
pub fn souffle_available() -> bool {
    Command::new("souffle")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// An engine with its input loaded, ready to run: what is outside the timed part.
pub enum Prepared {
    /// Strata: the source, the prepared query and its options.
    Strata(Box<(MemorySource, Query, RunOptions)>),
    /// A Rust engine or the BFS: the input pairs.
    Native(Engine, Kind, Box<Workload>),
    /// Soufflé: the program file and the facts directory.
    Souffle(Kind, PathBuf, PathBuf),
}

impl Prepared {
    /// Loads `w` (of `kind`) for `engine`. Soufflé needs [`Prepared::souffle`] instead.
    pub fn new(engine: Engine, kind: Kind, w: &Workload) -> BenchResult<Prepared> {
        match engine {
            Engine::Strata { threads, witnesses } => {
                let src = memory_source(w)?;
                let vocab = Vocabulary::from_sources(src.relations()?, &[])?;
                let q = Query::prepare(&vocab, &w.program, &[])?;
                let mut opts = RunOptions::default();
                opts.engine.threads = threads;
                opts.engine.witnesses = witnesses;
                Ok(Prepared::Strata(Box::new((src, q, opts))))
            }
            Engine::Bfs if kind != Kind::Reach => {
                Err("the BFS answers bound reachability only".into())
            }
            Engine::Souffle => Err("Soufflé reads files: use Prepared::souffle".into()),
            _ => Ok(Prepared::Native(engine, kind, Box::new(w.clone()))),
        }
    }

    /// Soufflé on the `.facts` files in `facts` (as [`crate::workload::write_facts`] wrote
    /// them), writing its program into `work`.
    pub fn souffle(kind: Kind, facts: &Path, work: &Path) -> BenchResult<Prepared> {
        std::fs::create_dir_all(work)?;
        let dl = work.join(format!("{}.dl", kind.name()));
        std::fs::write(&dl, souffle_program(kind))?;
        Ok(Prepared::Souffle(kind, dl, facts.to_owned()))
    }

    /// Runs the program once and answers its count.
    pub fn run(&self) -> BenchResult<u64> {
        match self {
            Prepared::Strata(s) => {
                let (src, q, opts) = &**s;
                let out = q.run(src, opts)?;
                match out.answer.rows.first().and_then(|r| r.cells.first()) {
                    Some(Cell::Value(Value::Number(n))) => Ok(*n as u64),
                    other => Err(format!("strata: expected a count, got {other:?}").into()),
                }
            }
            Prepared::Native(engine, kind, w) => run_native(*engine, *kind, w),
            Prepared::Souffle(kind, dl, facts) => run_souffle(*kind, dl, facts),
        }
    }
}

/// The workload's relations as a `MemorySource` of numbers, columns `a` and `b`.
pub fn memory_source(w: &Workload) -> BenchResult<MemorySource> {
    let mut src = MemorySource::new();
    for (name, pairs) in &w.relations {
        src.add_relation(name, &["a", "b"]);
        src.extend(
            name,
            pairs
                .iter()
                .map(|&(a, b)| [Value::Number(f64::from(a)), Value::Number(f64::from(b))]),
        )?;
    }
    Ok(src)
}

fn rel<'a>(w: &'a Workload, name: &str) -> BenchResult<&'a [(u32, u32)]> {
    w.relations
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, p)| p.as_slice())
        .ok_or_else(|| BenchError::from(format!("{}: no relation {name}", w.name)))
}

/// Runs `kind`'s program over `w` in one of the Rust engines (datafrog, ascent, crepe) or
/// the BFS (reachability only) and answers its count, with no copy of the input made first.
pub fn run_native(engine: Engine, kind: Kind, w: &Workload) -> BenchResult<u64> {
    match engine {
        Engine::Datafrog => anchor::<df::Datafrog>(kind, w),
        Engine::Ascent => anchor::<asc::Ascent>(kind, w),
        Engine::Crepe => anchor::<crp::Crepe>(kind, w),
        Engine::Bfs if kind == Kind::Reach => Ok(bfs_pairs(rel(w, "e")?, 0)),
        e => Err(format!("{} does not run {}", e.name(), kind.name()).into()),
    }
}

/// The four programs, written in one engine's API.
trait Anchor {
    /// Pairs of the transitive closure of `edges`.
    fn closure(edges: &[(u32, u32)]) -> u64;
    /// Nodes reachable from `start` by one or more edges.
    fn reach(edges: &[(u32, u32)], start: u32) -> u64;
    /// Pairs of same generation over `par(child, parent)`.
    fn same_generation(par: &[(u32, u32)]) -> u64;
    /// Pairs of `pt` of Andersen points-to.
    fn points_to(pt: PointsToInput<'_>) -> u64;
}

/// The base relations of points-to: `new`, `assign`, `load`, `store`.
type PointsToInput<'a> = [&'a [(u32, u32)]; 4];

fn anchor<A: Anchor>(kind: Kind, w: &Workload) -> BenchResult<u64> {
    Ok(match kind {
        Kind::Closure | Kind::Chain => A::closure(rel(w, "e")?),
        Kind::Reach => A::reach(rel(w, "e")?, 0),
        Kind::SameGeneration => A::same_generation(rel(w, "par")?),
        Kind::PointsTo => A::points_to([
            rel(w, "new")?,
            rel(w, "assign")?,
            rel(w, "load")?,
            rel(w, "store")?,
        ]),
    })
}

/// Nodes reachable from `start` over `edges` by one or more steps: a CSR adjacency and a
/// bitset breadth-first search.
pub fn bfs_pairs(edges: &[(u32, u32)], start: u32) -> u64 {
    let (offsets, targets) = csr(edges, start as usize + 1);
    let mut seen = vec![false; offsets.len() - 1];
    let mut queue = vec![start];
    let mut count = 0u64;
    while let Some(x) = queue.pop() {
        for &y in &targets[offsets[x as usize] as usize..offsets[x as usize + 1] as usize] {
            if !seen[y as usize] {
                seen[y as usize] = true;
                count += 1;
                queue.push(y);
            }
        }
    }
    count
}

/// The adjacency of `edges` in compressed sparse rows over at least `nodes` nodes (every
/// node an edge names): node `x`'s targets are `targets[offsets[x]..offsets[x + 1]]`, in
/// the order `edges` gives them.
pub fn csr(edges: &[(u32, u32)], nodes: usize) -> (Vec<u32>, Vec<u32>) {
    let n = edges
        .iter()
        .map(|&(a, b)| a.max(b) as usize + 1)
        .max()
        .unwrap_or(0)
        .max(nodes);
    let mut offsets = vec![0u32; n + 1];
    for &(a, _) in edges {
        offsets[a as usize + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut targets = vec![0u32; edges.len()];
    for &(a, b) in edges {
        targets[fill[a as usize] as usize] = b;
        fill[a as usize] += 1;
    }
    (offsets, targets)
}

/// Bound reachability over a store's binary relation, read through its public lookup API:
/// the terms reachable from `start` by one or more `relation` steps (a depth-first walk with
/// a hash set of terms visited; one `lookup` per node reached).
pub fn bfs_store(
    snap: &impl FactSource,
    relation: &str,
    start: strata_eval::Term,
) -> BenchResult<u64> {
    let mut seen: FxHashSet<strata_eval::Term> = FxHashSet::default();
    let mut stack = vec![start];
    let mut next = Vec::new();
    while let Some(x) = stack.pop() {
        next.clear();
        snap.lookup(relation, &[(0, x)], &mut |row| {
            next.push(row[1]);
            std::ops::ControlFlow::Continue(())
        })?;
        for &y in &next {
            if seen.insert(y) {
                stack.push(y);
            }
        }
    }
    Ok(seen.len() as u64)
}

/// The Soufflé program of `kind`, reading `NAME.facts` and printing its answer's size.
pub fn souffle_program(kind: Kind) -> String {
    let decl = |names: &[&str]| -> String {
        names
            .iter()
            .map(|n| format!(".decl {n}(a: number, b: number)\n.input {n}\n"))
            .collect()
    };
    match kind {
        Kind::Closure | Kind::Chain => format!(
            "{}.decl tc(a: number, b: number)\ntc(x, y) :- e(x, y).\n\
             tc(x, z) :- tc(x, y), e(y, z).\n.printsize tc\n",
            decl(&["e"])
        ),
        Kind::Reach => format!(
            "{}.decl reach(b: number)\nreach(y) :- e(0, y).\n\
             reach(z) :- reach(y), e(y, z).\n.printsize reach\n",
            decl(&["e"])
        ),
        Kind::SameGeneration => format!(
            "{}.decl sg(a: number, b: number)\nsg(x, y) :- par(x, p), par(y, p), x != y.\n\
             sg(x, y) :- par(x, a), sg(a, b), par(y, b).\n.printsize sg\n",
            decl(&["par"])
        ),
        Kind::PointsTo => format!(
            "{}.decl pt(a: number, b: number)\n.decl heap(a: number, b: number)\n\
             pt(v, o) :- new(v, o).\npt(a, o) :- assign(a, b), pt(b, o).\n\
             pt(a, o) :- load(a, b), pt(b, p), heap(p, o).\n\
             heap(p, o) :- store(a, b), pt(a, p), pt(b, o).\n.printsize pt\n",
            decl(&["new", "assign", "load", "store"])
        ),
    }
}

fn run_souffle(kind: Kind, dl: &Path, facts: &Path) -> BenchResult<u64> {
    let out = Command::new("souffle")
        .arg("-F")
        .arg(facts)
        .arg("-D")
        .arg(dl.parent().unwrap_or(Path::new(".")))
        .arg(dl)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "souffle failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let name = match kind {
        Kind::Closure | Kind::Chain => "tc",
        Kind::Reach => "reach",
        Kind::SameGeneration => "sg",
        Kind::PointsTo => "pt",
    };
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .find(|(n, _)| n.trim() == name)
        .and_then(|(_, v)| v.trim().parse().ok())
        .ok_or_else(|| format!("souffle: no size of {name} in {text:?}").into())
}

/// The workloads in datafrog.
mod df {
    use datafrog::{Iteration, Relation};

    use super::{Anchor, PointsToInput};

    pub struct Datafrog;

    impl Anchor for Datafrog {
        fn closure(edges: &[(u32, u32)]) -> u64 {
            let mut it = Iteration::new();
            let e: Relation<(u32, u32)> = edges.iter().copied().collect();
            // tc keyed by its second column: (y, x).
            let tc = it.variable::<(u32, u32)>("tc");
            tc.extend(edges.iter().map(|&(a, b)| (b, a)));
            while it.changed() {
                tc.from_join(&tc, &e, |_y, &x, &z| (z, x));
            }
            tc.complete().len() as u64
        }

        fn reach(edges: &[(u32, u32)], start: u32) -> u64 {
            let mut it = Iteration::new();
            let e: Relation<(u32, u32)> = edges.iter().copied().collect();
            let reach = it.variable::<(u32, ())>("reach");
            reach.extend(
                edges
                    .iter()
                    .filter(|&&(a, _)| a == start)
                    .map(|&(_, b)| (b, ())),
            );
            while it.changed() {
                reach.from_join(&reach, &e, |_y, _, &z| (z, ()));
            }
            reach.complete().len() as u64
        }

        fn same_generation(par: &[(u32, u32)]) -> u64 {
            let mut it = Iteration::new();
            // par by parent: (p, child).
            let by_parent: Relation<(u32, u32)> = par.iter().map(|&(c, p)| (p, c)).collect();
            let siblings = Relation::from_join(&by_parent, &by_parent, |_p, &x, &y| (x, y));
            let sg = it.variable::<(u32, u32)>("sg");
            let up = it.variable::<(u32, u32)>("up");
            sg.extend(siblings.iter().copied().filter(|&(x, y)| x != y));
            while it.changed() {
                // sg(x, y) :- par(x, a), sg(a, b), par(y, b).
                up.from_join(&sg, &by_parent, |_a, &b, &x| (b, x));
                sg.from_join(&up, &by_parent, |_b, &x, &y| (x, y));
            }
            sg.complete().len() as u64
        }

        fn points_to([new, assign, load, store]: PointsToInput<'_>) -> u64 {
            let mut it = Iteration::new();
            let assign_by_b: Relation<(u32, u32)> = assign.iter().map(|&(a, b)| (b, a)).collect();
            let load_by_b: Relation<(u32, u32)> = load.iter().map(|&(a, b)| (b, a)).collect();
            let store_by_a: Relation<(u32, u32)> = store.iter().copied().collect();
            let pt = it.variable::<(u32, u32)>("pt");
            let heap = it.variable::<(u32, u32)>("heap");
            let loaded = it.variable::<(u32, u32)>("loaded");
            let stored = it.variable::<(u32, u32)>("stored");
            pt.extend(new.iter().copied());
            while it.changed() {
                // pt(a, o) :- assign(a, b), pt(b, o).
                pt.from_join(&pt, &assign_by_b, |_b, &o, &a| (a, o));
                // pt(a, o) :- load(a, b), pt(b, p), heap(p, o).
                loaded.from_join(&pt, &load_by_b, |_b, &p, &a| (p, a));
                pt.from_join(&loaded, &heap, |_p, &a, &o| (a, o));
                // heap(p, o) :- store(a, b), pt(a, p), pt(b, o).
                stored.from_join(&pt, &store_by_a, |_a, &p, &b| (b, p));
                heap.from_join(&stored, &pt, |_b, &p, &o| (p, o));
            }
            pt.complete().len() as u64
        }
    }
}

/// The workloads in ascent (serial).
#[allow(missing_docs, clippy::all)]
mod asc {
    use ascent::ascent;

    ascent! {
        struct Closure;
        relation e(u32, u32);
        relation tc(u32, u32);
        tc(x, y) <-- e(x, y);
        tc(x, z) <-- tc(x, y), e(y, z);
    }

    ascent! {
        struct Reach;
        relation start(u32);
        relation e(u32, u32);
        relation reach(u32);
        reach(y) <-- start(x), e(x, y);
        reach(z) <-- reach(y), e(y, z);
    }

    ascent! {
        struct SameGeneration;
        relation par(u32, u32);
        relation sg(u32, u32);
        sg(x, y) <-- par(x, p), par(y, p), if x != y;
        sg(x, y) <-- par(x, a), sg(a, b), par(y, b);
    }

    ascent! {
        struct PointsTo;
        relation new(u32, u32);
        relation assign(u32, u32);
        relation load(u32, u32);
        relation store(u32, u32);
        relation pt(u32, u32);
        relation heap(u32, u32);
        pt(v, o) <-- new(v, o);
        pt(a, o) <-- assign(a, b), pt(b, o);
        pt(a, o) <-- load(a, b), pt(b, p), heap(p, o);
        heap(p, o) <-- store(a, b), pt(a, p), pt(b, o);
    }

    pub struct Ascent;

    impl super::Anchor for Ascent {
        fn closure(edges: &[(u32, u32)]) -> u64 {
            let mut p = Closure::default();
            p.e = edges.to_vec();
            p.run();
            p.tc.len() as u64
        }

        fn reach(edges: &[(u32, u32)], start: u32) -> u64 {
            let mut p = Reach::default();
            p.start = vec![(start,)];
            p.e = edges.to_vec();
            p.run();
            p.reach.len() as u64
        }

        fn same_generation(par: &[(u32, u32)]) -> u64 {
            let mut p = SameGeneration::default();
            p.par = par.to_vec();
            p.run();
            p.sg.len() as u64
        }

        fn points_to([new, assign, load, store]: super::PointsToInput<'_>) -> u64 {
            let mut p = PointsTo::default();
            p.new = new.to_vec();
            p.assign = assign.to_vec();
            p.load = load.to_vec();
            p.store = store.to_vec();
            p.run();
            p.pt.len() as u64
        }
    }
}

/// The workloads in crepe (one module per program: crepe names its runtime `Crepe`).
#[allow(missing_docs, clippy::all)]
mod crp {
    mod closure {
        use crepe::crepe;
        crepe! {
            @input
            struct E(u32, u32);
            @output
            struct Tc(u32, u32);
            Tc(x, y) <- E(x, y);
            Tc(x, z) <- Tc(x, y), E(y, z);
        }
        pub fn run(edges: &[(u32, u32)]) -> u64 {
            let mut rt = Crepe::new();
            rt.extend(edges.iter().map(|&(a, b)| E(a, b)));
            let (tc,) = rt.run();
            tc.len() as u64
        }
    }

    mod reach {
        use crepe::crepe;
        crepe! {
            @input
            struct Start(u32);
            @input
            struct E(u32, u32);
            @output
            struct Reach(u32);
            Reach(y) <- Start(x), E(x, y);
            Reach(z) <- Reach(y), E(y, z);
        }
        pub fn run(edges: &[(u32, u32)], start: u32) -> u64 {
            let mut rt = Crepe::new();
            rt.extend([Start(start)]);
            rt.extend(edges.iter().map(|&(a, b)| E(a, b)));
            let (reach,) = rt.run();
            reach.len() as u64
        }
    }

    mod same_generation {
        use crepe::crepe;
        crepe! {
            @input
            struct Par(u32, u32);
            @output
            struct Sg(u32, u32);
            Sg(x, y) <- Par(x, p), Par(y, p), (x != y);
            Sg(x, y) <- Par(x, a), Sg(a, b), Par(y, b);
        }
        pub fn run(par: &[(u32, u32)]) -> u64 {
            let mut rt = Crepe::new();
            rt.extend(par.iter().map(|&(a, b)| Par(a, b)));
            let (sg,) = rt.run();
            sg.len() as u64
        }
    }

    mod points_to {
        use crepe::crepe;
        crepe! {
            @input
            struct New(u32, u32);
            @input
            struct Assign(u32, u32);
            @input
            struct Load(u32, u32);
            @input
            struct Store(u32, u32);
            @output
            struct Pt(u32, u32);
            struct Heap(u32, u32);
            Pt(v, o) <- New(v, o);
            Pt(a, o) <- Assign(a, b), Pt(b, o);
            Pt(a, o) <- Load(a, b), Pt(b, p), Heap(p, o);
            Heap(p, o) <- Store(a, b), Pt(a, p), Pt(b, o);
        }
        pub fn run([new, assign, load, store]: super::super::PointsToInput<'_>) -> u64 {
            let mut rt = Crepe::new();
            rt.extend(new.iter().map(|&(a, b)| New(a, b)));
            rt.extend(assign.iter().map(|&(a, b)| Assign(a, b)));
            rt.extend(load.iter().map(|&(a, b)| Load(a, b)));
            rt.extend(store.iter().map(|&(a, b)| Store(a, b)));
            let (pt,) = rt.run();
            pt.len() as u64
        }
    }

    pub struct Crepe;

    impl super::Anchor for Crepe {
        fn closure(edges: &[(u32, u32)]) -> u64 {
            closure::run(edges)
        }
        fn reach(edges: &[(u32, u32)], start: u32) -> u64 {
            reach::run(edges, start)
        }
        fn same_generation(par: &[(u32, u32)]) -> u64 {
            same_generation::run(par)
        }
        fn points_to(input: super::PointsToInput<'_>) -> u64 {
            points_to::run(input)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Scale;

    #[test]
    fn names_round_trip() {
        for k in Kind::ALL {
            for e in Engine::for_kind(k) {
                assert_eq!(Engine::parse(&e.name()), Some(e));
            }
        }
        assert!(souffle_program(Kind::PointsTo).contains(".printsize pt"));
        assert_eq!(bfs_pairs(&[(0, 1), (1, 2), (2, 0), (3, 4)], 0), 3);
    }

    #[test]
    fn datafrog_matches_bfs_on_reach() {
        let w = Kind::Reach.make(Scale::Smoke, 1);
        let e = &w.relations[0].1;
        assert_eq!(<df::Datafrog as Anchor>::reach(e, 0), bfs_pairs(e, 0));
    }
}
