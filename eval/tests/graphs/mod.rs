//! Helpers for the Cypher tests: the small code graph and the bundled example as in-memory
//! sources, and running a Cypher query and a Strata program side by side.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use strata_eval::Cell;
use strata_eval::cypher::{self, Graph, Mapping};
use strata_eval::{Bind, FactSource, MemorySource, Origin, Value, Vocabulary};
use strata_eval::{Query, RunOptions};

/// A source, its vocabulary and its graph.
pub type Graph3 = (MemorySource, Vocabulary, Graph);

/// The small code graph of `strata_fixtures::small`.
pub fn code() -> (MemorySource, Vocabulary, Graph) {
    let mut src = MemorySource::new();
    for (file, f) in strata_fixtures::small::facts() {
        if file.ends_with(".nodes.tsv") {
            let rel = f[1].to_lowercase();
            src.add_dump_relation(&rel, &["id"], Origin::Nodes, f[1]);
            src.insert(&rel, &[Value::from_field(f[0])]).unwrap();
        } else if file.ends_with(".edges.tsv") {
            let rel = f[1].to_lowercase();
            src.add_dump_relation(&rel, &["src", "dst"], Origin::Edges, f[1]);
            src.insert(&rel, &[Value::from_field(f[0]), Value::from_field(f[2])])
                .unwrap();
        } else {
            let rel = f[1].to_lowercase();
            src.add_dump_relation(&rel, &["node", "value"], Origin::Attrs, f[1]);
            src.insert(&rel, &[Value::from_field(f[0]), Value::from_field(f[2])])
                .unwrap();
        }
    }
    let vocab = Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let graph = Graph::derive(&vocab, &Mapping::default()).unwrap();
    (src, vocab, graph)
}

/// The bundled example: `imports` edges, `package` nodes, `pkg(name, license)` facts and the
/// `deps` module, with the pack's mapping of `Package` over `pkg`.
pub fn example() -> (MemorySource, Vocabulary, Graph) {
    let mut src = MemorySource::new();
    src.add_dump_relation("imports", &["src", "dst"], Origin::Edges, "IMPORTS");
    src.add_dump_relation("package", &["id"], Origin::Nodes, "Package");
    src.add_relation("pkg", &["name", "license"]);
    for l in strata_fixtures::example::IMPORTS_EDGES
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let f: Vec<&str> = l.split('\t').collect();
        src.insert("imports", &[Value::text(f[0]), Value::text(f[2])])
            .unwrap();
    }
    for l in strata_fixtures::example::PACKAGES_NODES
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let f: Vec<&str> = l.split('\t').collect();
        src.insert("package", &[Value::text(f[0])]).unwrap();
    }
    for l in strata_fixtures::example::PKG_FACTS
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let f: Vec<&str> = l.split('\t').collect();
        let license = if f[1] == "\\N" {
            Value::Absent
        } else {
            Value::from_field(f[1])
        };
        src.insert("pkg", &[Value::text(f[0]), license]).unwrap();
    }
    let vocab = Vocabulary::from_sources(
        src.relations().unwrap(),
        &[("deps", strata_fixtures::example::DEPS_MODULE)],
    )
    .unwrap();
    let mapping = Mapping {
        labels: vec![("Package".into(), "pkg".into(), Some("name".into()))],
        types: vec![],
    };
    let graph = Graph::derive(&vocab, &mapping).unwrap();
    (src, vocab, graph)
}

/// Params from `(name, text)` pairs.
pub fn params(ps: &[(&str, &str)]) -> Vec<(String, Bind)> {
    ps.iter()
        .map(|(k, v)| ((*k).to_owned(), Bind::One(Value::text(*v))))
        .collect()
}

/// The rows of an answer, as text cells.
fn rows(answer: &strata_eval::Answer) -> Vec<Vec<String>> {
    answer
        .rows
        .iter()
        .map(|r| {
            r.cells
                .iter()
                .map(|c| {
                    let mut s = String::new();
                    match c {
                        Cell::Value(v) => s.push_str(&format!("{v:?}")),
                        Cell::List(vs) => s.push_str(&format!("{vs:?}")),
                    }
                    s
                })
                .collect()
        })
        .collect()
}

fn options() -> RunOptions {
    RunOptions {
        limit: 10_000,
        ..RunOptions::default()
    }
}

/// Runs a Cypher query; answers its rows and the program it ran.
pub fn cypher_rows(
    g: &(MemorySource, Vocabulary, Graph),
    q: &str,
    ps: &[(String, Bind)],
) -> (Vec<Vec<String>>, String) {
    let c = cypher::prepare(&g.1, &g.2, q, ps).unwrap_or_else(|e| panic!("{q}:\n{e}"));
    let out = c
        .run(&g.0, &options())
        .unwrap_or_else(|e| panic!("{q}:\n{e}"));
    (rows(&out.answer), c.program)
}

/// Runs a Strata program; answers its rows.
pub fn datalog_rows(
    g: &(MemorySource, Vocabulary, Graph),
    p: &str,
    binds: &[(String, Bind)],
) -> Vec<Vec<String>> {
    let q = Query::prepare(&g.1, p, binds).unwrap_or_else(|e| panic!("{p}:\n{e}"));
    let out = q
        .run(&g.0, &options())
        .unwrap_or_else(|e| panic!("{p}:\n{e}"));
    rows(&out.answer)
}

/// Asserts that the Cypher query and the program answer the same rows, and that there are
/// `n` of them; answers the program the query compiled to.
pub fn same(
    g: &(MemorySource, Vocabulary, Graph),
    cypher: &str,
    ps: &[(String, Bind)],
    program: &str,
    n: usize,
) -> String {
    let (c, ran) = cypher_rows(g, cypher, ps);
    let d = datalog_rows(g, program, ps);
    assert_eq!(c, d, "\ncypher: {cypher}\nran: {ran}\nprogram: {program}");
    assert_eq!(c.len(), n, "\ncypher: {cypher}\nran: {ran}\nrows: {c:?}");
    ran
}

/// [`same`], with the program given its own binds.
pub fn same_with(
    g: &(MemorySource, Vocabulary, Graph),
    cypher: &str,
    ps: &[(String, Bind)],
    program: &str,
    binds: &[(String, Bind)],
    n: usize,
) {
    let (c, ran) = cypher_rows(g, cypher, ps);
    let d = datalog_rows(g, program, binds);
    assert_eq!(c, d, "\ncypher: {cypher}\nran: {ran}\nprogram: {program}");
    assert_eq!(c.len(), n, "\ncypher: {cypher}\nran: {ran}\nrows: {c:?}");
}

/// The rendered error of a Cypher query that must fail.
pub fn error(g: &(MemorySource, Vocabulary, Graph), q: &str) -> String {
    match cypher::prepare(&g.1, &g.2, q, &params(&[("x", "v")])) {
        Ok(c) => panic!("{q} compiled to {}", c.program),
        Err(e) => e.to_string(),
    }
}
