//! A corpus of realistic questions about a code graph (imports, dependents, cycles, fan-in,
//! files defining a symbol, unused symbols), each asked in Cypher and in Strata's Datalog
//! on the small code graph of `strata_fixtures::small`: the rows must be the same.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod graphs;

use strata_eval::{Bind, Value};

/// One question: its words, the Cypher query, the Strata program, and the `$params` (also the
/// program's binds).
struct Case {
    question: &'static str,
    cypher: &'static str,
    datalog: &'static str,
    params: &'static [(&'static str, &'static str)],
}

const REACH: &str =
    "reach(?a, ?b) :- imports(?a, ?b);\nreach(?a, ?c) :- reach(?a, ?b), imports(?b, ?c);\n";
const CALLED: &str =
    "calls_(?a, ?b) :- calls(?a, ?b);\ncalls_(?a, ?c) :- calls_(?a, ?b), calls(?b, ?c);\n";

const CASES: &[Case] = &[
    Case {
        question: "which files does net/http.rs import?",
        cypher: "MATCH (f:File {path: 'net/http.rs'})-[:IMPORTS]->(g:File) RETURN g.path ORDER BY g.path",
        datalog: r#"path(?f, "net/http.rs"), imports(?f, ?g), path(?g, ?p) => ?p order by ?p"#,
        params: &[],
    },
    Case {
        question: "which files import core/error.rs?",
        cypher: "MATCH (f:File)-[:IMPORTS]->(:File {path: $target}) RETURN f.path AS importer",
        datalog: "path(?t, ?target), imports(?f, ?t), path(?f, ?p) => ?p",
        params: &[("target", "core/error.rs")],
    },
    Case {
        question: "what does app/main.py depend on, directly or not?",
        cypher: "MATCH (:File {path: $from})-[:IMPORTS*]->(d:File) RETURN d.path",
        datalog: "#REACH path(?a, ?from), reach(?a, ?d), path(?d, ?p) => ?p",
        params: &[("from", "app/main.py")],
    },
    Case {
        question: "what depends on core/error.rs, directly or not?",
        cypher: "MATCH (d:File)-[:IMPORTS*]->(:File {path: 'core/error.rs'}) RETURN d.path",
        datalog: r#"#REACH path(?t, "core/error.rs"), reach(?d, ?t), path(?d, ?p) => ?p"#,
        params: &[],
    },
    Case {
        question: "which files are on an import cycle?",
        cypher: "MATCH (f:File)-[:IMPORTS*]->(f) RETURN f.path",
        datalog: "#REACH reach(?f, ?f), file(?f), path(?f, ?p) => ?p",
        params: &[],
    },
    Case {
        question: "which pairs of files import each other?",
        cypher: "MATCH (a:File)-[:IMPORTS]->(b:File)-[:IMPORTS]->(a) RETURN a.path, b.path",
        datalog: "imports(?a, ?b), imports(?b, ?a), path(?a, ?ap), path(?b, ?bp) => ?ap, ?bp",
        params: &[],
    },
    Case {
        question: "which three files are imported the most?",
        cypher: "MATCH (f:File)<-[:IMPORTS]-(g:File) RETURN f.path AS file, count(g) AS importers ORDER BY importers DESC, file LIMIT 3",
        datalog: "imports(?g, ?f), path(?f, ?p) => ?p, count(?g) order by count(?g) desc, ?p limit 3",
        params: &[],
    },
    Case {
        question: "how many files does each file import?",
        cypher: "MATCH (f:File)-[:IMPORTS]->(g:File) RETURN f.path, count(DISTINCT g) AS fan_out",
        datalog: "imports(?f, ?g), path(?f, ?p) => ?p, count(distinct ?g)",
        params: &[],
    },
    Case {
        question: "which file defines parse_header?",
        cypher: "MATCH (f:File)-[:DEFINES]->(s:Symbol {name: 'parse_header'}) RETURN f.path",
        datalog: r#"defines(?f, ?s), name(?s, "parse_header"), path(?f, ?p) => ?p"#,
        params: &[],
    },
    Case {
        question: "which files define a symbol named like the user said?",
        cypher: "MATCH (f:File)-[:DEFINES]->(s:Symbol) WHERE s.name = $name RETURN f.path, s",
        datalog: "defines(?f, ?s), name(?s, ?name), path(?f, ?p) => ?p, ?s",
        params: &[("name", "Error")],
    },
    Case {
        question: "which symbols are never called nor referenced?",
        cypher: "MATCH (s:Symbol) WHERE NOT (s)<-[:CALLS]-() AND NOT (s)<-[:REFERENCES]-() RETURN s.name",
        datalog: "symbol(?s), not calls(_, ?s), not references(_, ?s), name(?s, ?n) => ?n",
        params: &[],
    },
    Case {
        question: "which functions are never called?",
        cypher: "MATCH (s:Symbol {kind: 'function'}) WHERE NOT ()-[:CALLS]->(s) RETURN s.name ORDER BY s.name",
        datalog: r#"kind(?s, "function"), not calls(_, ?s), name(?s, ?n) => ?n order by ?n"#,
        params: &[],
    },
    Case {
        question: "what does main call, directly or not?",
        cypher: "MATCH (:Symbol {name: 'main'})-[:CALLS*]->(t:Symbol) RETURN t.name",
        datalog: r#"#CALLED name(?m, "main"), symbol(?m), calls_(?m, ?t), symbol(?t), name(?t, ?n) => ?n"#,
        params: &[],
    },
    Case {
        question: "who calls trim directly?",
        cypher: "MATCH (c:Symbol)-[:CALLS]->(:Symbol {name: 'trim'}) RETURN c.name",
        datalog: r#"name(?t, "trim"), calls(?c, ?t), symbol(?c), name(?c, ?n) => ?n"#,
        params: &[],
    },
    Case {
        question: "which package's symbols call Error?",
        cypher: "MATCH (p:Package)-[:CONTAINS]->(:File)-[:DEFINES]->(s:Symbol)-[:CALLS]->(:Symbol {name: 'Error'}) RETURN p.name, s.name",
        datalog: r#"contains(?p, ?f), defines(?f, ?s), calls(?s, ?e), name(?e, "Error"), name(?p, ?pn), name(?s, ?sn) => ?pn, ?sn"#,
        params: &[],
    },
    Case {
        question: "which packages does each package depend on?",
        cypher: "MATCH (p:Package)-[:CONTAINS]->(:File)-[:IMPORTS]->(:File)<-[:CONTAINS]-(q:Package) WHERE p <> q RETURN DISTINCT p.name, q.name",
        datalog: "contains(?p, ?f), imports(?f, ?g), contains(?q, ?g), ?p != ?q, name(?p, ?pn), name(?q, ?qn) => ?pn, ?qn",
        params: &[],
    },
    Case {
        question: "which packages does no other package depend on?",
        cypher: "MATCH (q:Package) WHERE NOT (q)-[:CONTAINS]->(:File)<-[:IMPORTS]-(:File)<-[:CONTAINS]-(:Package) RETURN q.name",
        datalog: "used(?q) :- contains(?q, ?g), imports(?f, ?g), contains(?p, ?f), package(?p);\n\
                  package(?q), not used(?q), name(?q, ?n) => ?n",
        params: &[],
    },
    Case {
        question: "which files import nothing?",
        cypher: "MATCH (f:File) WHERE NOT (f)-[:IMPORTS]->() RETURN f.path",
        datalog: "file(?f), not imports(?f, _), path(?f, ?p) => ?p",
        params: &[],
    },
    Case {
        question: "which files does nothing import?",
        cypher: "MATCH (f:File) WHERE NOT ()-[:IMPORTS]->(f) RETURN f.path",
        datalog: "file(?f), not imports(_, ?f), path(?f, ?p) => ?p",
        params: &[],
    },
    Case {
        question: "how many files are there per language?",
        cypher: "MATCH (f:File) RETURN f.lang AS lang, count(*) AS files ORDER BY files DESC, lang",
        datalog: "file(?f), lang(?f, ?l) => ?l, count(?f) order by count(?f) desc, ?l",
        params: &[],
    },
    Case {
        question: "how many lines does each package hold?",
        cypher: "MATCH (p:Package)-[:CONTAINS]->(f:File) RETURN p.name, sum(f.lines) AS lines ORDER BY lines DESC",
        datalog: "contains(?p, ?f), lines(?f, ?l), name(?p, ?n) => ?n, sum(?l) order by sum(?l) desc",
        params: &[],
    },
    Case {
        question: "what is the largest and the smallest file of each package?",
        cypher: "MATCH (p:Package)-[:CONTAINS]->(f:File) RETURN p.name, max(f.lines), min(f.lines)",
        datalog: "contains(?p, ?f), lines(?f, ?l), name(?p, ?n) => ?n, max(?l), min(?l)",
        params: &[],
    },
    Case {
        question: "which Python files import Rust files?",
        cypher: "MATCH (a:File {lang: 'python'})-[:IMPORTS]->(b:File {lang: 'rust'}) RETURN a.path, b.path",
        datalog: r#"lang(?a, "python"), imports(?a, ?b), lang(?b, "rust"), path(?a, ?ap), path(?b, ?bp) => ?ap, ?bp"#,
        params: &[],
    },
    Case {
        question: "which files import a file of another package?",
        cypher: "MATCH (p:Package)-[:CONTAINS]->(f:File)-[:IMPORTS]->(g:File) WHERE NOT (p)-[:CONTAINS]->(g) RETURN DISTINCT f.path",
        datalog: "contains(?p, ?f), imports(?f, ?g), not contains(?p, ?g), path(?f, ?fp) => ?fp",
        params: &[],
    },
    Case {
        question: "which symbols live in files over 100 lines?",
        cypher: "MATCH (f:File)-[:DEFINES]->(s:Symbol) WHERE f.lines > 100 RETURN s.name, f.path",
        datalog: "defines(?f, ?s), lines(?f, ?l), ?l > 100, name(?s, ?n), path(?f, ?p) => ?n, ?p",
        params: &[],
    },
    Case {
        question: "which types does parse_header reference?",
        cypher: "MATCH (:Symbol {name: 'parse_header'})-[:REFERENCES]->(t:Symbol {kind: 'type'}) RETURN t.name",
        datalog: r#"name(?s, "parse_header"), references(?s, ?t), kind(?t, "type"), name(?t, ?n) => ?n"#,
        params: &[],
    },
    Case {
        question: "which functions reference a type?",
        cypher: "MATCH (f:Symbol {kind: 'function'})-[:REFERENCES]->(:Symbol {kind: 'type'}) RETURN DISTINCT f.name",
        datalog: r#"kind(?f, "function"), references(?f, ?t), kind(?t, "type"), name(?f, ?n) => ?n"#,
        params: &[],
    },
    Case {
        question: "which five files define the most symbols?",
        cypher: "MATCH (f:File)-[:DEFINES]->(s:Symbol) RETURN f.path, count(s) AS symbols ORDER BY symbols DESC, f.path LIMIT 5",
        datalog: "defines(?f, ?s), path(?f, ?p) => ?p, count(?s) order by count(?s) desc, ?p limit 5",
        params: &[],
    },
    Case {
        question: "which files are under app/?",
        cypher: "MATCH (f:File) WHERE f.path STARTS WITH 'app/' RETURN f.path",
        datalog: r#"file(?f), path(?f, ?p), str.prefix(?p, "app/") => ?p"#,
        params: &[],
    },
    Case {
        question: "which Rust files import core/lib.rs?",
        cypher: "MATCH (f:File)-[:IMPORTS]->(:File {path: 'core/lib.rs'}) WHERE f.path ENDS WITH '.rs' RETURN f.path",
        datalog: r#"path(?t, "core/lib.rs"), imports(?f, ?t), path(?f, ?p), str.suffix(?p, ".rs") => ?p"#,
        params: &[],
    },
    Case {
        question: "which symbols are named like types (capitalised)?",
        cypher: "MATCH (s:Symbol) WHERE s.name =~ '[A-Z].*' RETURN s.name",
        datalog: r#"symbol(?s), name(?s, ?n), str.match(?n, "^[A-Z]") => ?n"#,
        params: &[],
    },
    Case {
        question: "where are the symbols about parsing defined?",
        cypher: "MATCH (f:File)-[:DEFINES]->(s:Symbol) WHERE s.name CONTAINS 'parse' RETURN s.name, f.path",
        datalog: r#"defines(?f, ?s), name(?s, ?n), str.contains(?n, "parse"), path(?f, ?p) => ?n, ?p"#,
        params: &[],
    },
    Case {
        question: "which files does a package contain?",
        cypher: "MATCH (p:Package {name: $pkg})-[:CONTAINS]->(f:File) RETURN f.path",
        datalog: "name(?p, ?pkg), package(?p), contains(?p, ?f), path(?f, ?fp) => ?fp",
        params: &[("pkg", "net")],
    },
    Case {
        question: "what is at most two imports away from app/main.py?",
        cypher: "MATCH (:File {path: 'app/main.py'})-[:IMPORTS*1..2]->(g:File) RETURN g.path",
        datalog: r#"near(?a, ?b) :- imports(?a, ?b); near(?a, ?c) :- imports(?a, ?b), imports(?b, ?c);
                   path(?a, "app/main.py"), near(?a, ?g), path(?g, ?p) => ?p"#,
        params: &[],
    },
    Case {
        question: "what is exactly two imports away from app/main.py?",
        cypher: "MATCH (:File {path: 'app/main.py'})-[:IMPORTS*2]->(g:File) RETURN g.path",
        datalog: r#"path(?a, "app/main.py"), imports(?a, ?b), imports(?b, ?g), path(?g, ?p) => ?p"#,
        params: &[],
    },
    Case {
        question: "what does handshake reach within three calls?",
        cypher: "MATCH (:Symbol {name: 'handshake'})-[:CALLS*1..3]->(t) RETURN t.name",
        datalog: r#"c3(?a, ?b) :- calls(?a, ?b); c3(?a, ?c) :- calls(?a, ?b), calls(?b, ?c);
                   c3(?a, ?d) :- calls(?a, ?b), calls(?b, ?c), calls(?c, ?d);
                   name(?h, "handshake"), c3(?h, ?t), name(?t, ?n) => ?n"#,
        params: &[],
    },
    Case {
        question: "which symbols both call and are called?",
        cypher: "MATCH (a:Symbol)-[:CALLS]->(s:Symbol)-[:CALLS]->(b:Symbol) RETURN DISTINCT s.name",
        datalog: "calls(?a, ?s), calls(?s, ?b), name(?s, ?n) => ?n",
        params: &[],
    },
    Case {
        question: "which Go file does each package hold, if any?",
        cypher: "MATCH (p:Package) OPTIONAL MATCH (p)-[:CONTAINS]->(f:File {lang: 'go'}) RETURN p.name, f.path",
        datalog: r#"go(?p, ?fp) :- contains(?p, ?f), lang(?f, "go"), path(?f, ?fp);
                   row(?n, ?fp) :- package(?p), name(?p, ?n), go(?p, ?fp);
                   row(?n, absent) :- package(?p), name(?p, ?n), not go(?p, _);
                   row(?n, ?fp) => ?n, ?fp"#,
        params: &[],
    },
    Case {
        question: "which files have between 50 and 150 lines?",
        cypher: "MATCH (f:File) WHERE f.lines >= 50 AND f.lines <= 150 RETURN f.path, f.lines",
        datalog: "file(?f), lines(?f, ?l), ?l >= 50, ?l <= 150, path(?f, ?p) => ?p, ?l",
        params: &[],
    },
    Case {
        question: "which files are in Go or Python?",
        cypher: "MATCH (f:File) WHERE f.lang IN ['go', 'python'] RETURN f.path",
        datalog: r#"gp(?f) :- lang(?f, "go"); gp(?f) :- lang(?f, "python");
                   file(?f), gp(?f), path(?f, ?p) => ?p"#,
        params: &[],
    },
    Case {
        question: "which files does each package hold, as a list?",
        cypher: "MATCH (p:Package)-[:CONTAINS]->(f:File) RETURN p.name, collect(f.path) AS files",
        datalog: "contains(?p, ?f), name(?p, ?n), path(?f, ?fp) => ?n, list(?fp)",
        params: &[],
    },
    Case {
        question: "which symbols are referenced but never called?",
        cypher: "MATCH (s:Symbol) WHERE ()-[:REFERENCES]->(s) AND NOT ()-[:CALLS]->(s) RETURN s.name",
        datalog: "references(_, ?s), not calls(_, ?s), name(?s, ?n) => ?n",
        params: &[],
    },
    Case {
        question: "how many files does each Python file reach?",
        cypher: "MATCH (f:File {lang: 'python'})-[:IMPORTS*]->(g:File) RETURN f.path, count(DISTINCT g) AS reached",
        datalog: r#"#REACH lang(?f, "python"), reach(?f, ?g), file(?g), path(?f, ?p) => ?p, count(distinct ?g)"#,
        params: &[],
    },
    Case {
        question: "which packages hold more than two files?",
        cypher: "MATCH (p:Package)-[:CONTAINS]->(f:File) WITH p, count(f) AS files WHERE files > 2 RETURN p.name, files",
        datalog: "n(?p, count(?f)) :- package(?p), contains(?p, ?f), file(?f);\n\
                  n(?p, ?c), ?c > 2, name(?p, ?pn) => ?pn, ?c",
        params: &[],
    },
    Case {
        question: "which files are imported by at least two files, and by how many?",
        cypher: "MATCH (f:File)<-[:IMPORTS]-(g:File) WITH f, count(g) AS n WHERE n >= 2 RETURN f.path, n ORDER BY n DESC, f.path",
        datalog: "fan(?f, count(?g)) :- file(?f), imports(?g, ?f), file(?g);\n\
                  fan(?f, ?n), ?n >= 2, path(?f, ?p) => ?p, ?n order by ?n desc, ?p",
        params: &[],
    },
    Case {
        question: "which symbols of the net package call into core?",
        cypher: "MATCH (:Package {name: 'net'})-[:CONTAINS]->(:File)-[:DEFINES]->(s:Symbol)-[:CALLS*]->(t:Symbol)<-[:DEFINES]-(:File)<-[:CONTAINS]-(:Package {name: 'core'}) RETURN DISTINCT s.name, t.name",
        datalog: r#"#CALLED name(?n, "net"), package(?n), contains(?n, ?f), defines(?f, ?s), calls_(?s, ?t),
                   defines(?g, ?t), contains(?c, ?g), name(?c, "core"), package(?c), name(?s, ?sn), name(?t, ?tn) => ?sn, ?tn"#,
        params: &[],
    },
    Case {
        question: "which files either import nothing or are written in Go?",
        cypher: "MATCH (f:File) WHERE NOT (f)-[:IMPORTS]->() OR f.lang = 'go' RETURN f.path",
        datalog: r#"pick(?f) :- file(?f), not imports(?f, _); pick(?f) :- file(?f), lang(?f, "go");
                   pick(?f), path(?f, ?p) => ?p"#,
        params: &[],
    },
    Case {
        question: "which files outside net/ are over 50 lines?",
        cypher: "MATCH (f:File) WHERE NOT f.path STARTS WITH 'net/' AND f.lines > 50 RETURN f.path",
        datalog: r#"net(?f) :- path(?f, ?p), str.prefix(?p, "net/");
                   file(?f), not net(?f), lines(?f, ?l), ?l > 50, path(?f, ?p) => ?p"#,
        params: &[],
    },
    Case {
        question: "which files and symbols connect in either direction through DEFINES with core/types.rs?",
        cypher: "MATCH (:File {path: 'core/types.rs'})-[:DEFINES]-(s) RETURN s.name",
        datalog: r#"path(?f, "core/types.rs"), defines(?f, ?s), name(?s, ?n) => ?n"#,
        params: &[],
    },
];

fn binds(ps: &[(&str, &str)]) -> Vec<(String, Bind)> {
    ps.iter()
        .map(|(k, v)| ((*k).to_owned(), Bind::One(Value::text(*v))))
        .collect()
}

#[test]
fn every_question_answers_the_same_in_cypher_and_in_datalog() {
    let g = graphs::code();
    assert!(CASES.len() >= 40, "{} questions", CASES.len());
    let mut empty = Vec::new();
    for c in CASES {
        let program = c
            .datalog
            .replace("#REACH ", REACH)
            .replace("#CALLED ", CALLED);
        let ps = binds(c.params);
        let (rows, ran) = graphs::cypher_rows(&g, c.cypher, &ps);
        let want = graphs::datalog_rows(&g, &program, &ps);
        assert_eq!(
            rows, want,
            "\n{}\ncypher: {}\nran: {ran}\nprogram: {program}",
            c.question, c.cypher
        );
        if rows.is_empty() {
            empty.push(c.question);
        }
    }
    assert!(empty.is_empty(), "no rows: {empty:?}");
}
