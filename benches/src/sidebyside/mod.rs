//! The side-by-side suite's inputs and engines (the `sidebyside` binary): each workload of
//! issue 31 generated once (seeded), written as TSV, and answered by whole processes, each
//! parsing its input itself: a breadth-first search (the floor), datafrog, ascent, DuckDB (a
//! recursive CTE over `read_csv`) and `strata query` over a store `strata ingest` made.
//!
//! - [`Case`]: the workloads. A random Go-like dependency graph (the code-graph generator's
//!   `IMPORTS` edges between files, numbered), the closure of G(n, m) random graphs, the
//!   closure of a chain, same generation over G(n, m), and what node 0 reaches in a random
//!   graph of 10M edges.
//! - [`bfs_closure_pairs`]: the closure's floor, a search from every node.
//! - [`measure`]: a child process timed and its peak RSS read as it is reaped.
//! - [`duck`]: DuckDB's Python package, found or installed, and its scripts.
//! - [`write_nodes`]: a `*.nodes.tsv` of a string edge dump's nodes, for the two-batch file.
//!
//! ```
//! use strata_benches::sidebyside::{Case, Size, bfs_closure_pairs};
//!
//! let input = Case::Chain.input(Size::Smoke, 0);
//! assert_eq!(input.pairs.len(), 60);
//! assert_eq!(bfs_closure_pairs(&input.pairs), 60 * 61 / 2);
//! ```

pub mod duck;
pub mod measure;

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use rustc_hash::{FxHashMap, FxHashSet};
use strata_fixtures::codegraph::{self, Config};
pub use strata_fixtures::workloads::gnm;

use crate::engines;
use crate::workload::Kind;

/// How big to make the inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// Tiny: doc tests and unit tests.
    Smoke,
    /// `--quick`: the whole suite in well under a minute (release), and CI's count check.
    Quick,
    /// Issue 31's sizes.
    Full,
}

/// One workload of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// Closure of a random Go-like dependency graph: the code-graph generator's `IMPORTS`
    /// edges between files (packages import lower-numbered packages only, a DAG; files
    /// import mostly within their package, towards its hub files).
    GoDeps,
    /// Closure of a G(n, m) random directed graph (m distinct edges, no loops).
    Random,
    /// Closure of a chain `e(i, i+1)`: one round per link.
    Chain,
    /// Same generation over a G(n, m) random graph read as `par(child, parent)`.
    SameGeneration,
    /// What node 0 reaches in a random graph of 2 out-edges a node.
    Reach,
}

/// A workload's input and what each engine runs on it.
#[derive(Clone, Debug)]
pub struct Input {
    /// The table's label of it: what and how big.
    pub label: String,
    /// The relation: `e` (edges) or `par` (child, parent).
    pub relation: &'static str,
    /// Its pairs.
    pub pairs: Vec<(u32, u32)>,
}

impl Case {
    /// Every case, in table order.
    pub const ALL: [Case; 5] = [
        Case::Reach,
        Case::GoDeps,
        Case::Random,
        Case::Chain,
        Case::SameGeneration,
    ];

    /// Its name (`--only`, the data directory).
    pub fn name(self) -> &'static str {
        match self {
            Case::GoDeps => "go_deps",
            Case::Random => "random",
            Case::Chain => "chain",
            Case::SameGeneration => "same_generation",
            Case::Reach => "reach",
        }
    }

    /// The case named `name`.
    pub fn parse(name: &str) -> Option<Case> {
        Case::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether it is a whole closure (every pair), which the first-page rows and the 4x
    /// floor target are about.
    pub fn is_closure(self) -> bool {
        matches!(self, Case::GoDeps | Case::Random | Case::Chain)
    }

    /// The program of `compare`'s engines that answers it (datafrog and ascent written in
    /// their own APIs, `engines::run_native`).
    pub fn kind(self) -> Kind {
        match self {
            Case::GoDeps | Case::Random | Case::Chain => Kind::Closure,
            Case::SameGeneration => Kind::SameGeneration,
            Case::Reach => Kind::Reach,
        }
    }

    /// The relation its input is: `e` (edges) or `par` (child, parent).
    pub fn relation(self) -> &'static str {
        match self {
            Case::SameGeneration => "par",
            _ => "e",
        }
    }

    /// Its Strata rules, without a goal.
    pub fn rules(self) -> &'static str {
        match self {
            Case::GoDeps | Case::Random | Case::Chain => {
                "tc(?x, ?y) :- e(?x, ?y); tc(?x, ?z) :- tc(?x, ?y), e(?y, ?z);"
            }
            Case::SameGeneration => {
                "sg(?x, ?y) :- par(?x, ?p), par(?y, ?p), ?x != ?y; \
                 sg(?x, ?y) :- par(?x, ?a), sg(?a, ?b), par(?y, ?b);"
            }
            Case::Reach => "reach(?x, ?y) :- e(?x, ?y); reach(?x, ?z) :- reach(?x, ?y), e(?y, ?z);",
        }
    }

    /// Its Strata program answering the count.
    pub fn count_program(self) -> String {
        let goal = match self {
            Case::GoDeps | Case::Random | Case::Chain => "tc(?x, ?y) => count(?y)",
            Case::SameGeneration => "sg(?x, ?y) => count(?y)",
            Case::Reach => "reach(0, ?y) => count(?y)",
        };
        format!("{} {goal}", self.rules())
    }

    /// Its Strata program answering the first page of pairs (closures).
    pub fn page_program(self, rows: u32) -> String {
        format!("{} tc(?x, ?y) => ?x, ?y limit {rows}", self.rules())
    }

    /// DuckDB's recursive query answering the count.
    pub fn sql(self) -> &'static str {
        match self {
            Case::GoDeps | Case::Random | Case::Chain => duck::CLOSURE_SQL,
            Case::SameGeneration => duck::SAME_GENERATION_SQL,
            Case::Reach => duck::REACH_SQL,
        }
    }

    /// DuckDB's column names of the relation.
    pub fn columns(self) -> [&'static str; 2] {
        match self {
            Case::SameGeneration => ["c", "p"],
            _ => ["a", "b"],
        }
    }

    /// Its input at `size`, generated with `seed`.
    pub fn input(self, size: Size, seed: u64) -> Input {
        let (label, relation, pairs) = match self {
            Case::GoDeps => {
                let edges = match size {
                    Size::Smoke => 30_000,
                    Size::Quick => 60_000,
                    Size::Full => 600_000,
                };
                let pairs = go_like(edges, seed);
                let label = format!(
                    "closure of a Go-like dependency graph ({} imports)",
                    thousands(pairs.len() as u64)
                );
                (label, "e", pairs)
            }
            Case::Random => {
                let (n, m) = match size {
                    Size::Smoke => (100, 200),
                    Size::Quick => (1_000, 2_000),
                    Size::Full => (5_000, 10_000),
                };
                (
                    format!("closure of G({n}, {m})"),
                    "e",
                    gnm(n, m as usize, seed),
                )
            }
            Case::Chain => {
                let links = match size {
                    Size::Smoke => 60,
                    Size::Quick => 1_000,
                    Size::Full => 4_000,
                };
                (
                    format!("closure of a {}-node chain", thousands(u64::from(links))),
                    "e",
                    (0..links).map(|i| (i, i + 1)).collect(),
                )
            }
            Case::SameGeneration => {
                let (n, m) = match size {
                    Size::Smoke => (100, 150),
                    Size::Quick => (1_000, 1_500),
                    Size::Full => (4_000, 6_000),
                };
                (
                    format!("same generation, G({n}, {m})"),
                    "par",
                    gnm(n, m as usize, seed),
                )
            }
            Case::Reach => {
                let nodes = match size {
                    Size::Smoke => 500,
                    Size::Quick => 250_000,
                    Size::Full => 5_000_000,
                };
                let pairs = crate::workload::random_graph(nodes, 2, seed);
                let label = format!(
                    "reach from node 0 ({} edges)",
                    thousands(pairs.len() as u64)
                );
                (label, "e", pairs)
            }
        };
        Input {
            label,
            relation,
            pairs,
        }
    }

    /// The answer of the BFS floor, where there is one (closures and reach; none for same
    /// generation).
    pub fn floor(self, pairs: &[(u32, u32)]) -> Option<u64> {
        match self {
            Case::GoDeps | Case::Random | Case::Chain => Some(bfs_closure_pairs(pairs)),
            Case::Reach => Some(engines::bfs_pairs(pairs, 0)),
            Case::SameGeneration => None,
        }
    }
}

/// `n` with thousands separators: `6,283,220`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A [`Write`] that hands each complete line (without its newline) to a closure.
struct Lines<F: FnMut(&[u8])> {
    partial: Vec<u8>,
    each: F,
}

impl<F: FnMut(&[u8])> Write for Lines<F> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            if self.partial.is_empty() {
                (self.each)(&rest[..i]);
            } else {
                self.partial.extend_from_slice(&rest[..i]);
                (self.each)(&self.partial);
                self.partial.clear();
            }
            rest = &rest[i + 1..];
        }
        self.partial.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The share of a Go-like graph's imports that leave their package: with it, the generator's
/// graph of 600,000 edges has 65,559 imports among 10,897 files and a closure of 6,006,515
/// pairs, near the real Go module graph of issue 31 (65,327 edges, 6.08M pairs); the
/// generator's default, a quarter, gives 42.9M.
pub const GO_CROSS_PACKAGE: f64 = 0.0148;

/// A random Go-like dependency graph: the `IMPORTS` edges of the code-graph generator's
/// graph of `edges` edges (all kinds) with `seed` and [`GO_CROSS_PACKAGE`], each file
/// numbered in the order it first appears, deduplicated and sorted.
pub fn go_like(edges: u64, seed: u64) -> Vec<(u32, u32)> {
    let mut cfg = Config::with_edges(edges).seed(seed);
    cfg.cross_package = GO_CROSS_PACKAGE;
    let mut ids: FxHashMap<Vec<u8>, u32> = FxHashMap::default();
    let mut pairs = Vec::new();
    let mut number = |s: &[u8]| -> u32 {
        if let Some(&id) = ids.get(s) {
            return id;
        }
        let id = ids.len() as u32;
        ids.insert(s.to_vec(), id);
        id
    };
    let mut sink = Lines {
        partial: Vec::new(),
        each: |line: &[u8]| {
            let mut f = line.split(|&b| b == b'\t');
            if let (Some(src), Some(b"IMPORTS"), Some(dst)) = (f.next(), f.next(), f.next()) {
                let a = number(src);
                let b = number(dst);
                pairs.push((a, b));
            }
        },
    };
    // Writing into memory through `Lines` cannot fail.
    let _ = codegraph::write_edges(&cfg, &mut sink);
    drop(sink);
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// Pairs of the transitive closure of `edges` (`(a, b)` with `b` reachable from `a` in one
/// or more steps): a CSR adjacency and a depth-first search from every node, a visited
/// array stamped with the source so it is never cleared. The floor of the closures.
pub fn bfs_closure_pairs(edges: &[(u32, u32)]) -> u64 {
    let (offsets, targets) = engines::csr(edges, 0);
    let n = offsets.len() - 1;
    let mut stamp = vec![u32::MAX; n];
    let mut stack = Vec::new();
    let mut count = 0u64;
    for s in 0..n as u32 {
        stack.push(s);
        while let Some(x) = stack.pop() {
            for &y in &targets[offsets[x as usize] as usize..offsets[x as usize + 1] as usize] {
                if stamp[y as usize] != s {
                    stamp[y as usize] = s;
                    count += 1;
                    stack.push(y);
                }
            }
        }
    }
    count
}

/// Reads a two-column TSV of u32s (`a<TAB>b` lines, as [`write_pairs`] writes them) into
/// pairs, in file order: 1 MiB blocks parsed a byte at a time, no line buffer, no UTF-8
/// check; the floor's parse, and the Rust engines'. Blank lines are skipped; anything else
/// but digits, one tab and a newline is an error.
pub fn read_tsv_pairs(path: &Path) -> io::Result<Vec<(u32, u32)>> {
    let mut input = File::open(path)?;
    let mut pairs = Vec::new();
    let mut block = vec![0u8; 1 << 20];
    let (mut a, mut b, mut second, mut digits) = (0u64, 0u64, false, false);
    let bad = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {what}", path.display()),
        )
    };
    loop {
        let n = io::Read::read(&mut input, &mut block)?;
        if n == 0 {
            break;
        }
        for &c in &block[..n] {
            match c {
                b'0'..=b'9' => {
                    let v = if second { &mut b } else { &mut a };
                    *v = *v * 10 + u64::from(c - b'0');
                    if *v > u64::from(u32::MAX) {
                        return Err(bad("a number past u32"));
                    }
                    digits = true;
                }
                b'\t' if !second && digits => {
                    second = true;
                    digits = false;
                }
                b'\n' => {
                    if second && digits {
                        pairs.push((a as u32, b as u32));
                    } else if second || digits {
                        return Err(bad("a line without two numbers"));
                    }
                    (a, b, second, digits) = (0, 0, false, false);
                }
                b'\r' => {}
                _ => return Err(bad("not a line of two tab-separated numbers")),
            }
        }
    }
    if second && digits {
        pairs.push((a as u32, b as u32));
    } else if second || digits {
        return Err(bad("a last line without two numbers"));
    }
    Ok(pairs)
}

/// Writes `pairs` to `path` as `a<TAB>b` lines (a Soufflé `.facts` file, DuckDB's TSV).
pub fn write_pairs(pairs: &[(u32, u32)], path: &Path) -> io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    for (a, b) in pairs {
        writeln!(out, "{a}\t{b}")?;
    }
    out.into_inner().map_err(io::IntoInnerError::into_error)?;
    Ok(())
}

/// Writes the nodes of a string edge dump (`src<TAB>KIND<TAB>dst` lines) to `nodes` as a
/// `*.nodes.tsv` (`id<TAB>label`), each node once in the order it first appears, labelled
/// by its prefix: `pkg:` `Package`, `file:` `File`, `sym:` `Symbol`, anything else `Node`.
/// Answers the nodes written.
pub fn write_nodes(edges: &Path, nodes: &Path) -> io::Result<u64> {
    let input = BufReader::with_capacity(1 << 16, File::open(edges)?);
    let mut out = BufWriter::new(File::create(nodes)?);
    let mut seen: FxHashSet<Vec<u8>> = FxHashSet::default();
    for line in input.split(b'\n') {
        let line = line?;
        let mut f = line.split(|&b| b == b'\t');
        let (Some(src), Some(_), Some(dst)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        for id in [src, dst] {
            if seen.contains(id) {
                continue;
            }
            seen.insert(id.to_vec());
            let label: &[u8] = if id.starts_with(b"pkg:") {
                b"Package"
            } else if id.starts_with(b"file:") {
                b"File"
            } else if id.starts_with(b"sym:") {
                b"Symbol"
            } else {
                b"Node"
            };
            out.write_all(id)?;
            out.write_all(b"\t")?;
            out.write_all(label)?;
            out.write_all(b"\n")?;
        }
    }
    out.into_inner().map_err(io::IntoInnerError::into_error)?;
    Ok(seen.len() as u64)
}

/// The bytes of the files under `path` (a file's own size), 0 when it is missing.
pub fn bytes_under(path: &Path) -> u64 {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::read_dir(path).map_or(0, |entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| bytes_under(&e.path()))
                .sum()
        }),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Workload;

    #[test]
    fn every_engine_in_process_agrees_at_smoke_size() -> crate::BenchResult<()> {
        for case in Case::ALL {
            let input = case.input(Size::Smoke, 0);
            assert_eq!(Case::parse(case.name()), Some(case));
            let w = Workload {
                name: case.name().to_owned(),
                relations: vec![(input.relation.to_owned(), input.pairs.clone())],
                program: String::new(),
            };
            let frog = engines::run_native(engines::Engine::Datafrog, case.kind(), &w)?;
            let asc = engines::run_native(engines::Engine::Ascent, case.kind(), &w)?;
            assert_eq!(frog, asc, "{}", case.name());
            assert!(frog > 0, "{}", case.name());
            if let Some(f) = case.floor(&input.pairs) {
                assert_eq!(f, frog, "{}", case.name());
            }
        }
        Ok(())
    }

    #[test]
    fn gnm_draws_distinct_edges_and_nodes_are_labelled() -> io::Result<()> {
        let g = gnm(50, 120, 3);
        assert_eq!(g.len(), 120);
        assert!(g.windows(2).all(|w| w[0] < w[1]) && g.iter().all(|&(a, b)| a != b));
        assert_eq!(gnm(3, 100, 1).len(), 6);
        assert_eq!(thousands(6_283_220), "6,283,220");
        assert_eq!(thousands(999), "999");
        let dir = tempfile::tempdir()?;
        let tsv = dir.path().join("e.facts");
        write_pairs(&g, &tsv)?;
        assert_eq!(read_tsv_pairs(&tsv)?, g);
        std::fs::write(&tsv, "1\t2\n\n3\t4")?;
        assert_eq!(read_tsv_pairs(&tsv)?, vec![(1, 2), (3, 4)]);
        std::fs::write(&tsv, "1\t2\n3\n")?;
        assert!(read_tsv_pairs(&tsv).is_err());
        std::fs::write(&tsv, "1 2\n")?;
        assert!(read_tsv_pairs(&tsv).is_err());
        let edges = dir.path().join("x.edges.tsv");
        std::fs::write(
            &edges,
            "pkg:a\tCONTAINS\tfile:a/b\nfile:a/b\tIMPORTS\tfile:a/c\n",
        )?;
        let nodes = dir.path().join("x.nodes.tsv");
        assert_eq!(write_nodes(&edges, &nodes)?, 3);
        assert_eq!(
            std::fs::read_to_string(&nodes)?,
            "pkg:a\tPackage\nfile:a/b\tFile\nfile:a/c\tFile\n"
        );
        Ok(())
    }
}
