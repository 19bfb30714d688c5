//! Fuzz targets: what a caller hands the engine as text, each a function of arbitrary bytes
//! that must answer or refuse, never panic, hang or grow without bound.
//!
//! Both runners call these: the cargo-fuzz targets of `fixtures/fuzz` on nightly and the
//! bounded property runs of `eval/tests/parse_fuzz.rs` and `eval/tests/cypher_fuzz.rs` on
//! stable (see `docs/testing.md`).

use std::sync::OnceLock;

use crate::cypher::{Graph, Mapping};
use crate::{Bind, FactSource, MemorySource, Origin, Query, Value, Vocabulary};

/// The module the fuzz vocabulary holds, as a module file spells it.
pub const DEPS_MODULE: &str = "# Everything a package depends on.
depends_on(?a, ?b) :- _step(?a, ?b);
depends_on(?a, ?c) :- depends_on(?a, ?b), _step(?b, ?c);

# One import step.
_step(?a, ?b) :- imports(?a, ?b);
";

/// A small source: `imports` edges, `file` and `package` nodes, `contains` edges, `path`
/// and `name` attributes and a plain `pkg(name, license)`.
fn source() -> MemorySource {
    let mut s = MemorySource::new();
    s.add_dump_relation("imports", &["src", "dst"], Origin::Edges, "IMPORTS");
    s.add_dump_relation("contains", &["src", "dst"], Origin::Edges, "CONTAINS");
    s.add_dump_relation("file", &["id"], Origin::Nodes, "File");
    s.add_dump_relation("package", &["id"], Origin::Nodes, "Package");
    s.add_dump_relation("path", &["node", "value"], Origin::Attrs, "path");
    s.add_dump_relation("name", &["node", "value"], Origin::Attrs, "name");
    s.add_relation("pkg", &["name", "license"]);
    s
}

/// The vocabulary and graph the targets check against, built once.
fn fixture() -> Option<&'static (Vocabulary, Graph)> {
    static FIXTURE: OnceLock<Option<(Vocabulary, Graph)>> = OnceLock::new();
    FIXTURE
        .get_or_init(|| {
            let base = source().relations().ok()?;
            let vocab = Vocabulary::from_sources(base, &[("deps", DEPS_MODULE)]).ok()?;
            let graph = Graph::derive(&vocab, &Mapping::default()).ok()?;
            Some((vocab, graph))
        })
        .as_ref()
}

/// Binds for the variables `text` may name (an unused bind is an error that would hide
/// the rest): `?x` and `$x` a text, `?n` and `$n` a list.
fn binds(text: &str) -> Vec<(String, Bind)> {
    let all = [
        ("x".to_owned(), Bind::One(Value::text("api"))),
        (
            "n".to_owned(),
            Bind::List(vec![Value::Number(1.0), Value::text("b")]),
        ),
    ];
    all.into_iter()
        .filter(|(name, _)| {
            text.contains(&format!("?{name}")) || text.contains(&format!("${name}"))
        })
        .collect()
}

/// The Datalog front end and checker: `data` (as UTF-8, invalid sequences replaced) parsed
/// as a program and as a module, prepared as a query against the fuzz vocabulary, and
/// checked as a module beside `deps`.
pub fn datalog(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = crate::parse_module(&text);
    let Some((vocab, _)) = fixture() else {
        return;
    };
    let _ = Query::prepare(vocab, &text, &binds(&text));
    if let Ok(base) = source().relations() {
        let _ = Vocabulary::from_sources(base, &[("deps", DEPS_MODULE), ("fz", &text)]);
    }
}

/// The Cypher compiler: `data` (as UTF-8, invalid sequences replaced) compiled over the fuzz
/// graph and checked against its vocabulary. An error must open with `cypher: `.
pub fn cypher(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Some((vocab, graph)) = fixture() else {
        return;
    };
    if let Err(e) = crate::cypher::prepare(vocab, graph, &text, &binds(&text)) {
        assert!(e.to_string().starts_with("cypher: "), "{e}");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_fixture_checks_valid_input() {
        let (vocab, graph) = fixture().unwrap();
        let datalog = "deps.depends_on(?x, ?d), path(?d, ?p), ?p = ?n => ?d, ?p";
        Query::prepare(vocab, datalog, &binds(datalog)).unwrap();
        let cypher = "MATCH (f:File)-[:IMPORTS]->(g:File {path: $x}) RETURN f.name";
        crate::cypher::prepare(vocab, graph, cypher, &binds(cypher)).unwrap();
    }
}
