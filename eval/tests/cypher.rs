//! The Cypher front end, construct by construct: each query runs beside a hand-written Strata
//! program for the same question, on the small code graph (or the bundled example), and the
//! rows must be the same, in the same order.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod graphs;

use graphs::{code, example, params, same};
use strata_eval::{Bind, Value};

#[test]
fn the_seeds_example() {
    let g = example();
    let ran = same(
        &g,
        "MATCH (p:Package)-[:IMPORTS]->(:Package {name: $to}) RETURN p.name AS importer",
        &params(&[("to", "log")]),
        "pkg(?p, _), pkg(?to, _), imports(?p, ?to) => ?p",
        1,
    );
    assert_eq!(ran, "pkg(?p, _), pkg(?to, _), imports(?p, ?to) => ?p");
    let q = "MATCH (p:Package)-[:IMPORTS]->(:Package {name: $to}) RETURN p.name AS importer";
    let c = strata_eval::cypher::prepare(&g.1, &g.2, q, &params(&[("to", "log")])).unwrap();
    assert_eq!(c.cypher, q);
    assert_eq!(c.query.text, c.program);
    let out = c.run(&g.0, &strata_eval::RunOptions::default()).unwrap();
    assert_eq!(
        c.text(&out),
        "ran: pkg(?p, _), pkg(?to, _), imports(?p, ?to) => ?p\ncolumns: importer\n1. api\n   \
         pkg(\"api\", absent)\n   pkg(\"log\", \"\")\n   imports(\"api\", \"log\")\n1 row"
    );
    // Its JSON is the application's (`CypherResponse`); the data it is written from:
    assert_eq!(c.program, "pkg(?p, _), pkg(?to, _), imports(?p, ?to) => ?p");
    assert_eq!(out.answer.columns, ["importer"]);
}

#[test]
fn a_label() {
    let g = code();
    same(
        &g,
        "MATCH (p:Package) RETURN p.name",
        &[],
        "package(?p), name(?p, ?n) => ?n",
        5,
    );
    same(
        &g,
        "MATCH (p:Package) RETURN p",
        &[],
        "package(?p) => ?p",
        5,
    );
    same(
        &g,
        "MATCH (p:Package) RETURN id(p)",
        &[],
        "package(?p) => ?p",
        5,
    );
}

#[test]
fn a_mapped_label_reads_its_columns() {
    let g = example();
    same(
        &g,
        "MATCH (p:Package) RETURN p.name, p.license",
        &[],
        "pkg(?p, ?l) => ?p, ?l",
        4,
    );
    same(
        &g,
        "MATCH (p:Package {license: 'MIT'}) RETURN p.name",
        &[],
        "pkg(?p, \"MIT\") => ?p",
        1,
    );
}

#[test]
fn property_maps_of_literals_and_params() {
    let g = code();
    same(
        &g,
        "MATCH (f:File {lang: 'go'}) RETURN f.path",
        &[],
        "file(?f), lang(?f, \"go\"), path(?f, ?p) => ?p",
        1,
    );
    same(
        &g,
        "MATCH (f:File {lang: $l}) RETURN f.path",
        &params(&[("l", "python")]),
        "file(?f), lang(?f, ?l), path(?f, ?p) => ?p",
        3,
    );
    same(
        &g,
        "MATCH (f:File {lang: 'rust', lines: 120}) RETURN f.path",
        &[],
        "file(?f), lang(?f, \"rust\"), lines(?f, 120), path(?f, ?p) => ?p",
        1,
    );
    same(
        &g,
        "MATCH (f {path: 'net/http.rs'}) RETURN f",
        &[],
        "path(?f, \"net/http.rs\") => ?f",
        1,
    );
}

#[test]
fn directions() {
    let g = code();
    let right = "MATCH (a:File)-[:IMPORTS]->(b:File {path: 'core/error.rs'}) RETURN a.path";
    let left = "MATCH (b:File {path: 'core/error.rs'})<-[:IMPORTS]-(a:File) RETURN a.path";
    let p =
        "file(?a), file(?b), path(?b, \"core/error.rs\"), imports(?a, ?b), path(?a, ?ap) => ?ap";
    same(&g, right, &[], p, 3);
    same(&g, left, &[], p, 3);
    same(
        &g,
        "MATCH (a:File {path: 'net/lib.rs'})-[:IMPORTS]-(b) RETURN b.path",
        &[],
        "either(?a, ?b) :- imports(?a, ?b); either(?a, ?b) :- imports(?b, ?a);\n\
         path(?a, \"net/lib.rs\"), either(?a, ?b), path(?b, ?bp) => ?bp",
        4,
    );
}

#[test]
fn relationship_types() {
    let g = code();
    same(
        &g,
        "MATCH (s:Symbol {name: 'get'})-[:CALLS|REFERENCES]->(t) RETURN t.name",
        &[],
        "uses(?a, ?b) :- calls(?a, ?b); uses(?a, ?b) :- references(?a, ?b);\n\
         symbol(?s), name(?s, \"get\"), uses(?s, ?t), name(?t, ?n) => ?n",
        3,
    );
    same(
        &g,
        "MATCH (s:Symbol {name: 'parse_header'})-->(t) RETURN t.name",
        &[],
        "any(?a, ?b) :- calls(?a, ?b); any(?a, ?b) :- contains(?a, ?b); \
         any(?a, ?b) :- defines(?a, ?b); any(?a, ?b) :- imports(?a, ?b); \
         any(?a, ?b) :- references(?a, ?b);\n\
         symbol(?s), name(?s, \"parse_header\"), any(?s, ?t), name(?t, ?n) => ?n",
        4,
    );
    same(
        &g,
        "MATCH (f:File)-[r:DEFINES]->(s:Symbol {name: 'trim'}) RETURN f.path",
        &[],
        "file(?f), symbol(?s), name(?s, \"trim\"), defines(?f, ?s), path(?f, ?p) => ?p",
        1,
    );
}

const CLOSURE: &str =
    "reach(?a, ?b) :- imports(?a, ?b); reach(?a, ?c) :- reach(?a, ?b), imports(?b, ?c);\n";

#[test]
fn variable_length() {
    let g = code();
    let ran = same(
        &g,
        "MATCH (:File {path: $from})-[:IMPORTS*]->(t:File) RETURN t.path",
        &params(&[("from", "app/main.py")]),
        &format!("{CLOSURE}path(?a, ?from), reach(?a, ?t), file(?t), path(?t, ?p) => ?p"),
        10,
    );
    assert!(ran.contains("_path"), "{ran}");
    same(
        &g,
        "MATCH (a:File {path: 'app/main.py'})-[:IMPORTS*1..2]->(t) RETURN t.path",
        &[],
        "two(?a, ?c) :- imports(?a, ?b), imports(?b, ?c);\n\
         upto(?a, ?b) :- imports(?a, ?b); upto(?a, ?b) :- two(?a, ?b);\n\
         path(?a, \"app/main.py\"), upto(?a, ?t), path(?t, ?p) => ?p",
        6,
    );
    same(
        &g,
        "MATCH (a:File {path: 'app/main.py'})-[:IMPORTS*2]->(t) RETURN t.path",
        &[],
        "path(?a, \"app/main.py\"), imports(?a, ?b), imports(?b, ?t), path(?t, ?p) => ?p",
        4,
    );
    same(
        &g,
        "MATCH (a:File {path: 'app/main.py'})-[:IMPORTS*3..]->(t) RETURN t.path",
        &[],
        "three(?a, ?d) :- imports(?a, ?b), imports(?b, ?c), imports(?c, ?d);\n\
         far(?a, ?b) :- three(?a, ?b); far(?a, ?c) :- far(?a, ?b), imports(?b, ?c);\n\
         path(?a, \"app/main.py\"), far(?a, ?t), path(?t, ?p) => ?p",
        10,
    );
    same(
        &g,
        "MATCH (a:File)<-[:IMPORTS*]-(b:File {path: 'app/cli.py'}) RETURN a.path",
        &[],
        &format!("{CLOSURE}reach(\"file:app/cli.py\", ?a), file(?a), path(?a, ?p) => ?p"),
        10,
    );
}

#[test]
fn a_variable_length_path_from_a_bound_node_is_computed_by_demand() {
    let g = code();
    let c = strata_eval::cypher::prepare(
        &g.1,
        &g.2,
        "MATCH (:File {path: $from})-[:IMPORTS*]->(t:File) RETURN t",
        &[("from".into(), Bind::One(Value::text("file:legacy/old.py")))],
    );
    // The identity of a file is its id, so the path is not the identity: a join, no demand.
    assert!(c.is_ok());
    let c = strata_eval::cypher::prepare(
        &g.1,
        &g.2,
        "MATCH (:File {name: $from})-[:IMPORTS*]->(t:File) RETURN t",
        &[("from".into(), Bind::One(Value::text("file:net/tls.go")))],
    );
    // `name` is an attribute here (packages and symbols have one); files are named by id.
    assert!(c.is_ok());
    let g = example();
    let c = strata_eval::cypher::prepare(
        &g.1,
        &g.2,
        "MATCH (:Package {name: $from})-[:IMPORTS*]->(d:Package) RETURN d.name",
        &[("from".into(), Bind::One(Value::text("app")))],
    )
    .unwrap();
    let out = c.run(&g.0, &strata_eval::RunOptions::default()).unwrap();
    assert!(out.demand, "{}", c.program);
    assert_eq!(out.answer.total, 3);
    // Bound at its end, the path recurses on the right, so demand follows the end.
    let c = strata_eval::cypher::prepare(
        &g.1,
        &g.2,
        "MATCH (d:Package)-[:IMPORTS*]->(:Package {name: $to}) RETURN d.name",
        &[("to".into(), Bind::One(Value::text("log")))],
    )
    .unwrap();
    assert!(
        c.program
            .contains("_path1(?x, ?z) :- imports(?x, ?y), _path1(?y, ?z);"),
        "{}",
        c.program
    );
    let out = c.run(&g.0, &strata_eval::RunOptions::default()).unwrap();
    assert!(out.demand, "{}", c.program);
    assert_eq!(out.answer.total, 2);
    // A named node given by a literal: the equality is in the text, the value is bound too,
    // so demand applies and its column holds the value.
    let c = strata_eval::cypher::prepare(
        &g.1,
        &g.2,
        "MATCH (a:Package {name: 'app'})-[:IMPORTS*]->(d:Package) RETURN a.name, d.name",
        &[],
    )
    .unwrap();
    assert!(c.program.contains("?a = \"app\""), "{}", c.program);
    let out = c.run(&g.0, &strata_eval::RunOptions::default()).unwrap();
    assert!(out.demand, "{}", c.program);
    assert!(
        c.text(&out)
            .contains("columns: a.name, d.name\n1. app, api\n"),
        "{}",
        c.text(&out)
    );
    same(
        &g,
        "MATCH (a:Package {name: 'api'}) OPTIONAL MATCH (a)-[:IMPORTS]->(b:Package {license: 'BSD-3-Clause'}) RETURN a.name, b.name",
        &[],
        "pkg(?a, _), ?a = \"api\", imports(?a, ?b), pkg(?b, \"BSD-3-Clause\") => ?a, ?b",
        1,
    );
}

#[test]
fn several_patterns_and_several_matches() {
    let g = code();
    let p = "package(?p), file(?f), contains(?p, ?f), symbol(?s), defines(?f, ?s), \
             name(?p, ?pn), name(?s, ?sn) => ?pn, ?sn";
    same(
        &g,
        "MATCH (p:Package)-[:CONTAINS]->(f:File), (f)-[:DEFINES]->(s:Symbol) RETURN p.name, s.name",
        &[],
        p,
        16,
    );
    same(
        &g,
        "MATCH (p:Package)-[:CONTAINS]->(f:File) MATCH (f)-[:DEFINES]->(s:Symbol) RETURN p.name, s.name",
        &[],
        p,
        16,
    );
}

#[test]
fn optional_match() {
    let g = code();
    same(
        &g,
        "MATCH (f:File) OPTIONAL MATCH (f)<-[:IMPORTS]-(g) RETURN f.path, g.path",
        &[],
        "r(?fp, ?gp) :- file(?f), imports(?g, ?f), path(?f, ?fp), path(?g, ?gp);\n\
         r(?fp, absent) :- file(?f), not imports(_, ?f), path(?f, ?fp);\n\
         r(?fp, ?gp) => ?fp, ?gp",
        18,
    );
    same(
        &g,
        "MATCH (f:File) OPTIONAL MATCH (f)<-[:IMPORTS]-(g) WITH f, count(g) AS n RETURN f.path, n ORDER BY n DESC, f.path",
        &[],
        // count(g) skips nulls, as Cypher's does: a file nothing imports counts 0.
        "n(?f, ?c) :- file(?f), ?c = count(?g) : { imports(?g, ?f) };\n\
         file(?f), n(?f, ?n), path(?f, ?p) => ?p, ?n order by ?n desc, ?p",
        11,
    );
    same(
        &g,
        "MATCH (f:File) OPTIONAL MATCH (f)<-[:IMPORTS]-(g) RETURN f.path, count(DISTINCT g) AS n, count(*) AS rows ORDER BY n, f.path",
        &[],
        "n(?f, ?c) :- file(?f), ?c = count(?g) : { imports(?g, ?f) };\n\
         r(?f, count(?g)) :- file(?f), imports(?g, ?f);\n\
         r(?f, 1) :- file(?f), not imports(_, ?f);\n\
         n(?f, ?n), r(?f, ?r), path(?f, ?p) => ?p, ?n, ?r order by ?n, ?p",
        11,
    );
}

#[test]
fn comparisons_and_booleans() {
    let g = code();
    same(
        &g,
        "MATCH (f:File) WHERE f.lines > 100 RETURN f.path",
        &[],
        "file(?f), lines(?f, ?l), ?l > 100, path(?f, ?p) => ?p",
        4,
    );
    same(
        &g,
        "MATCH (f:File) WHERE f.lines >= 80 AND f.lang = 'rust' RETURN f.path",
        &[],
        "file(?f), lines(?f, ?l), ?l >= 80, lang(?f, \"rust\"), path(?f, ?p) => ?p",
        5,
    );
    same(
        &g,
        "MATCH (f:File) WHERE f.lang = 'go' OR f.lines < 40 RETURN f.path",
        &[],
        "small(?f) :- file(?f), lang(?f, \"go\"); small(?f) :- file(?f), lines(?f, ?l), ?l < 40;\n\
         small(?f), path(?f, ?p) => ?p",
        3,
    );
    same(
        &g,
        "MATCH (f:File) WHERE NOT f.lang = 'rust' RETURN f.path",
        &[],
        "file(?f), lang(?f, ?l), ?l != \"rust\", path(?f, ?p) => ?p",
        4,
    );
    same(
        &g,
        "MATCH (f:File) WHERE f.lines <> 120 AND f.lines <= 80 RETURN f.path",
        &[],
        "file(?f), lines(?f, ?l), ?l != 120, ?l <= 80, path(?f, ?p) => ?p",
        6,
    );
    same(
        &g,
        "MATCH (f:File) WHERE NOT (f.lang = 'rust' OR f.lang = 'go') RETURN f.path",
        &[],
        "file(?f), lang(?f, ?l), ?l != \"rust\", ?l != \"go\", path(?f, ?p) => ?p",
        3,
    );
}

#[test]
fn a_row_matching_both_sides_of_or_counts_once() {
    let g = code();
    same(
        &g,
        "MATCH (f:File) WHERE f.lang = 'rust' OR f.lines > 100 RETURN count(*)",
        &[],
        "pick(?f) :- file(?f), lang(?f, \"rust\"); pick(?f) :- file(?f), lines(?f, ?l), ?l > 100;\n\
         pick(?f) => count(?f)",
        1,
    );
    let (rows, _) = graphs::cypher_rows(
        &g,
        "MATCH (f:File) WHERE f.lang = 'rust' OR f.lines > 100 RETURN count(*)",
        &[],
    );
    assert_eq!(rows, [["Number(7.0)"]]);
}

#[test]
fn in_lists_and_list_params() {
    let g = code();
    let p = "file(?f), lang(?f, ?l), path(?f, ?p), ?l = ?langs => ?p";
    let langs = vec![(
        "langs".to_owned(),
        Bind::List(vec![Value::text("go"), Value::text("python")]),
    )];
    same(
        &g,
        "MATCH (f:File) WHERE f.lang IN ['go', 'python'] RETURN f.path",
        &langs,
        p,
        4,
    );
    same(
        &g,
        "MATCH (f:File) WHERE f.lang IN $langs RETURN f.path",
        &langs,
        p,
        4,
    );
    same(
        &g,
        "MATCH (f:File) WHERE NOT f.lang IN ['go', 'python'] RETURN f.path",
        &[],
        "file(?f), lang(?f, ?l), ?l != \"go\", ?l != \"python\", path(?f, ?p) => ?p",
        7,
    );
}

#[test]
fn string_tests() {
    let g = code();
    same(
        &g,
        "MATCH (f:File) WHERE f.path STARTS WITH 'net/' RETURN f.path",
        &[],
        "file(?f), path(?f, ?p), str.prefix(?p, \"net/\") => ?p",
        3,
    );
    same(
        &g,
        "MATCH (f:File) WHERE f.path ENDS WITH '.py' RETURN f.path",
        &[],
        "file(?f), path(?f, ?p), str.suffix(?p, \".py\") => ?p",
        3,
    );
    same(
        &g,
        "MATCH (s:Symbol) WHERE s.name CONTAINS 'parse' RETURN s.name",
        &[],
        "symbol(?s), name(?s, ?n), str.contains(?n, \"parse\") => ?n",
        2,
    );
    same(
        &g,
        "MATCH (s:Symbol) WHERE s.name =~ '[a-z]+_[a-z]+' RETURN s.name",
        &[],
        "symbol(?s), name(?s, ?n), str.match(?n, \"^[a-z]+_[a-z]+$\") => ?n",
        3,
    );
    graphs::same_with(
        &g,
        "MATCH (s:Symbol) WHERE s.name =~ $re RETURN s.name",
        &[("re".into(), Bind::One(Value::text("p.*")))],
        "symbol(?s), name(?s, ?n), str.match(?n, ?re) => ?n",
        &[("re".into(), Bind::One(Value::text("^(?:p.*)$")))],
        3,
    );
    same(
        &g,
        "MATCH (f:File) WHERE NOT f.path STARTS WITH 'net/' AND f.lang = 'rust' RETURN f.path",
        &[],
        "netfile(?f) :- path(?f, ?p), str.prefix(?p, \"net/\");\n\
         file(?f), lang(?f, \"rust\"), not netfile(?f), path(?f, ?p) => ?p",
        5,
    );
}

#[test]
fn null_tests() {
    let g = code();
    same(
        &g,
        "MATCH (n:File) WHERE n.name IS NULL RETURN n.path",
        &[],
        "file(?n), not name(?n, _), path(?n, ?p) => ?p",
        11,
    );
    same(
        &g,
        "MATCH (n:Symbol) WHERE n.kind IS NOT NULL AND n.name STARTS WITH 'p' RETURN n.name",
        &[],
        "symbol(?n), kind(?n, _), name(?n, ?m), str.prefix(?m, \"p\") => ?m",
        3,
    );
    let e = example();
    same(
        &e,
        "MATCH (p:Package) WHERE p.license IS NULL RETURN p.name",
        &[],
        "pkg(?p, ?l), absent(?l) => ?p",
        1,
    );
    same(
        &e,
        "MATCH (p:Package) WHERE p.license IS NOT NULL RETURN p.name",
        &[],
        "pkg(?p, ?l), not pkg(?p, absent) => ?p",
        3,
    );
}

#[test]
fn pattern_predicates() {
    let g = code();
    same(
        &g,
        "MATCH (a:File), (b:File) WHERE (a)-[:IMPORTS]->(b) AND (b)-[:IMPORTS]->(a) RETURN a.path, b.path",
        &[],
        "file(?a), file(?b), imports(?a, ?b), imports(?b, ?a), path(?a, ?ap), path(?b, ?bp) => ?ap, ?bp",
        4,
    );
    same(
        &g,
        "MATCH (s:Symbol) WHERE NOT (s)<-[:CALLS]-() RETURN s.name",
        &[],
        "symbol(?s), not calls(_, ?s), name(?s, ?n) => ?n",
        6,
    );
    same(
        &g,
        "MATCH (f:File) WHERE NOT (f)-[:IMPORTS]->(:File {lang: 'rust'}) RETURN f.path",
        &[],
        "rusty(?f) :- imports(?f, ?g), file(?g), lang(?g, \"rust\");\n\
         file(?f), not rusty(?f), path(?f, ?p) => ?p",
        2,
    );
    same(
        &g,
        "MATCH (f:File) WHERE (f)-[:DEFINES]->(:Symbol {kind: 'type'}) RETURN f.path",
        &[],
        "typed(?f) :- defines(?f, ?s), symbol(?s), kind(?s, \"type\");\n\
         file(?f), typed(?f), path(?f, ?p) => ?p",
        2,
    );
}

#[test]
fn return_aliases_and_distinct() {
    let g = code();
    same(
        &g,
        "MATCH (f:File)-[:IMPORTS]->(g:File) RETURN DISTINCT f.lang AS from, g.lang AS to",
        &[],
        "imports(?f, ?g), file(?f), file(?g), lang(?f, ?a), lang(?g, ?b) => ?a, ?b",
        5,
    );
    let (_, _) = graphs::cypher_rows(&g, "MATCH (f:File) RETURN f.lang AS language", &[]);
}

#[test]
fn aggregates() {
    let g = code();
    same(
        &g,
        "MATCH (f:File) RETURN count(*)",
        &[],
        "file(?f) => count(?f)",
        1,
    );
    same(
        &g,
        "MATCH (f:File) RETURN f.lang, count(f) ORDER BY f.lang",
        &[],
        "file(?f), lang(?f, ?l) => ?l, count(?f) order by ?l",
        3,
    );
    same(
        &g,
        "MATCH (a:File)-[:IMPORTS]->(b:File) RETURN count(DISTINCT b)",
        &[],
        "file(?a), file(?b), imports(?a, ?b) => count(distinct ?b)",
        1,
    );
    same(
        &g,
        "MATCH (p:Package)-[:CONTAINS]->(f:File) RETURN p.name, collect(f.path) AS files, sum(f.lines) AS lines, min(f.lines), max(f.lines)",
        &[],
        "package(?p), contains(?p, ?f), file(?f), name(?p, ?n), path(?f, ?fp), lines(?f, ?l) \
         => ?n, list(?fp), sum(?l), min(?l), max(?l)",
        5,
    );
}

#[test]
fn order_skip_limit() {
    let g = code();
    same(
        &g,
        "MATCH (f:File) RETURN f.path, f.lines ORDER BY f.lines DESC, f.path ASC SKIP 1 LIMIT 3",
        &[],
        "file(?f), path(?f, ?p), lines(?f, ?l) => ?p, ?l order by ?l desc, ?p limit 3 offset 1",
        3,
    );
    same(
        &g,
        "MATCH (f:File)<-[:IMPORTS]-(g) RETURN f.path AS file, count(g) AS fan_in ORDER BY fan_in DESC, file LIMIT 2",
        &[],
        "file(?f), imports(?g, ?f), path(?f, ?p) => ?p, count(?g) order by count(?g) desc, ?p limit 2",
        2,
    );
}

#[test]
fn one_with_stage() {
    let g = code();
    same(
        &g,
        "MATCH (f:File)<-[:IMPORTS]-(g:File) WITH f, count(g) AS n WHERE n >= 3 RETURN f.path, n ORDER BY n DESC, f.path",
        &[],
        "fan(?f, count(?g)) :- file(?f), file(?g), imports(?g, ?f);\n\
         fan(?f, ?n), ?n >= 3, path(?f, ?p) => ?p, ?n order by ?n desc, ?p",
        1,
    );
    same(
        &g,
        "MATCH (p:Package)-[:CONTAINS]->(f:File) WITH p, sum(f.lines) AS size MATCH (p)-[:CONTAINS]->(:File {lang: 'go'}) RETURN p.name, size",
        &[],
        "size(?p, sum(?l)) :- package(?p), contains(?p, ?f), file(?f), lines(?f, ?l);\n\
         size(?p, ?s), contains(?p, ?g), lang(?g, \"go\"), name(?p, ?n) => ?n, ?s",
        1,
    );
}

#[test]
fn params_reach_the_helper_rules_without_entering_the_text() {
    let g = code();
    let ran = same(
        &g,
        "MATCH (f:File) WHERE f.lang = $l OR f.lines > $n RETURN f.path",
        &[
            ("l".into(), Bind::One(Value::text("go"))),
            ("n".into(), Bind::One(Value::Number(300.0))),
        ],
        "pick(?f) :- file(?f), lang(?f, \"go\"); pick(?f) :- file(?f), lines(?f, ?x), ?x > 300;\n\
         pick(?f), path(?f, ?p), ?l = ?l, ?n = ?n => ?p",
        2,
    );
    assert!(
        ran.contains("?f_lang = ?l") && ran.contains("?f_lines > ?n"),
        "{ran}"
    );
    assert!(!ran.contains("go") && !ran.contains("300"), "{ran}");
    same(
        &g,
        "MATCH (f:File) WHERE NOT f.path STARTS WITH $dir RETURN f.path",
        &params(&[("dir", "net/")]),
        "under(?f) :- path(?f, ?p), str.prefix(?p, \"net/\");\n\
         file(?f), not under(?f), path(?f, ?p), ?dir = ?dir => ?p",
        8,
    );
    same(
        &g,
        "MATCH (p:Package) OPTIONAL MATCH (p)-[:CONTAINS]->(f:File {lang: $l}) RETURN p.name, f.path",
        &params(&[("l", "go")]),
        "go(?p, ?fp) :- contains(?p, ?f), lang(?f, \"go\"), path(?f, ?fp);\n\
         row(?n, ?fp) :- package(?p), name(?p, ?n), go(?p, ?fp);\n\
         row(?n, absent) :- package(?p), name(?p, ?n), not go(?p, _);\n\
         row(?n, ?fp), ?l = ?l => ?n, ?fp",
        5,
    );
}

#[test]
fn a_pack_maps_a_type_over_a_module_relation() {
    let (src, vocab, _) = example();
    let mapping = strata_eval::cypher::Mapping {
        labels: vec![("Package".into(), "pkg".into(), Some("name".into()))],
        types: vec![("DEPENDS_ON".into(), "deps.depends_on".into())],
    };
    let graph = strata_eval::cypher::Graph::derive(&vocab, &mapping).unwrap();
    assert!(
        graph
            .summary()
            .ends_with("Relationship types: DEPENDS_ON, IMPORTS.")
    );
    let g = (src, vocab, graph);
    let ran = same(
        &g,
        "MATCH (:Package {name: 'app'})-[:DEPENDS_ON]->(d:Package) RETURN d.name, d.license",
        &[],
        "deps.depends_on(\"app\", ?d), pkg(?d, ?l) => ?d, ?l",
        3,
    );
    assert!(ran.contains("deps.depends_on(\"app\", ?d)"), "{ran}");
    let bad = strata_eval::cypher::Mapping {
        labels: vec![("Package".into(), "pkg".into(), Some("nme".into()))],
        types: vec![],
    };
    assert_eq!(
        strata_eval::cypher::Graph::derive(&g.1, &bad)
            .unwrap_err()
            .to_string(),
        "cypher: label Package's id column \"nme\" is not a column of pkg(name, license)"
    );
}
