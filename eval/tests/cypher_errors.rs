//! Golden errors of the Cypher front end: every refused construct and every mistake a query
//! can make gets one message in Cypher's terms, the line with a caret under the place, and
//! the fix. The texts are exact.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod graphs;

use strata_eval::RunOptions;

/// Each query and its error, word for word.
const CASES: &[(&str, &str)] = &[
    (
        r#"MATCH (p:Package) CREATE (q:Package {name: 'x'}) RETURN p"#,
        r#"cypher: CREATE writes to the graph, and the cypher tool only reads
line 1, column 19:
  MATCH (p:Package) CREATE (q:Package {name: 'x'}) RETURN p
                    ^
fix: ask with MATCH ... RETURN; facts are added with `strata ingest`"#,
    ),
    (
        r#"MERGE (p:Package {name: 'x'}) RETURN p"#,
        r#"cypher: MERGE writes to the graph, and the cypher tool only reads
line 1, column 1:
  MERGE (p:Package {name: 'x'}) RETURN p
  ^
fix: ask with MATCH ... RETURN; facts are added with `strata ingest`"#,
    ),
    (
        r#"MATCH (p:Package) SET p.name = 'x' RETURN p"#,
        r#"cypher: SET writes to the graph, and the cypher tool only reads
line 1, column 19:
  MATCH (p:Package) SET p.name = 'x' RETURN p
                    ^
fix: ask with MATCH ... RETURN; facts are changed with `strata ingest --replace`"#,
    ),
    (
        r#"MATCH (p:Package) DELETE p"#,
        r#"cypher: DELETE writes to the graph, and the cypher tool only reads
line 1, column 19:
  MATCH (p:Package) DELETE p
                    ^
fix: ask with MATCH ... RETURN; facts are removed with `strata retract`"#,
    ),
    (
        r#"MATCH (p:Package) DETACH DELETE p"#,
        r#"cypher: DETACH DELETE writes to the graph, and the cypher tool only reads
line 1, column 19:
  MATCH (p:Package) DETACH DELETE p
                    ^
fix: ask with MATCH ... RETURN; facts are removed with `strata retract`"#,
    ),
    (
        r#"MATCH (p:Package) REMOVE p.name RETURN p"#,
        r#"cypher: REMOVE writes to the graph, and the cypher tool only reads
line 1, column 19:
  MATCH (p:Package) REMOVE p.name RETURN p
                    ^
fix: ask with MATCH ... RETURN; facts are changed with `strata ingest --replace`"#,
    ),
    (
        r#"MATCH (p:Package) FOREACH (x IN [1] | SET p.n = x)"#,
        r#"cypher: FOREACH writes to the graph, and the cypher tool only reads
line 1, column 19:
  MATCH (p:Package) FOREACH (x IN [1] | SET p.n = x)
                    ^
fix: ask with MATCH ... RETURN"#,
    ),
    (
        r#"CALL db.labels()"#,
        r#"cypher: CALL (procedures and subqueries) is not supported
line 1, column 1:
  CALL db.labels()
  ^
fix: write the question as MATCH ... WHERE ... RETURN"#,
    ),
    (
        r#"UNWIND ['a', 'b'] AS x MATCH (p:Package {name: x}) RETURN p"#,
        r#"cypher: UNWIND is not supported
line 1, column 1:
  UNWIND ['a', 'b'] AS x MATCH (p:Package {name: x}) RETURN p
  ^
fix: match the values with WHERE x IN [...] or WHERE x IN $list instead"#,
    ),
    (
        r#"MATCH (p:Package) RETURN p UNION MATCH (f:File) RETURN f"#,
        r#"cypher: UNION is not supported
line 1, column 28:
  MATCH (p:Package) RETURN p UNION MATCH (f:File) RETURN f
                             ^
fix: ask each part as its own query, or join the conditions with OR in WHERE"#,
    ),
    (
        r#"LOAD CSV FROM 'x.csv' AS row RETURN row"#,
        r#"cypher: LOAD CSV is not supported
line 1, column 1:
  LOAD CSV FROM 'x.csv' AS row RETURN row
  ^
fix: ingest the file with `strata ingest`, then MATCH it"#,
    ),
    (
        r#"USE other MATCH (p:Package) RETURN p"#,
        r#"cypher: USE is not supported: there is one graph
line 1, column 1:
  USE other MATCH (p:Package) RETURN p
  ^
fix: drop the USE clause"#,
    ),
    (
        r#"MATCH (p:Package) WITH p WITH p RETURN p"#,
        r#"cypher: only one WITH stage is supported
line 1, column 26:
  MATCH (p:Package) WITH p WITH p RETURN p
                           ^
fix: fold the stages into one WITH, or ask in two queries"#,
    ),
    (
        r#"MATCH (p:Package) WITH p ORDER BY p.name RETURN p"#,
        r#"cypher: ORDER after WITH is not supported
line 1, column 26:
  MATCH (p:Package) WITH p ORDER BY p.name RETURN p
                           ^
fix: put ORDER BY, SKIP and LIMIT after RETURN"#,
    ),
    (
        r#"MATCH path = (a:File)-[:IMPORTS]->(b) RETURN a"#,
        r#"cypher: path variables (p = ...) are not supported
line 1, column 7:
  MATCH path = (a:File)-[:IMPORTS]->(b) RETURN a
        ^
fix: drop "p =" and return the nodes of the path by their variables"#,
    ),
    (
        r#"MATCH shortestPath((a:File)-[:IMPORTS*]->(b:File)) RETURN a"#,
        r#"cypher: shortestPath is not supported
line 1, column 7:
  MATCH shortestPath((a:File)-[:IMPORTS*]->(b:File)) RETURN a
        ^
fix: match a variable-length relationship instead: (a)-[:TYPE*]->(b)"#,
    ),
    (
        r#"MATCH (a:File)-[:IMPORTS*0..2]->(b) RETURN b"#,
        r#"cypher: a path of zero hops is not supported
line 1, column 25:
  MATCH (a:File)-[:IMPORTS*0..2]->(b) RETURN b
                          ^
fix: start at one hop (*1..) and match the start node on its own for zero"#,
    ),
    (
        r#"MATCH (a:File)-[:IMPORTS*1..40]->(b) RETURN b"#,
        r#"cypher: at most 16 hops may be bounded
line 1, column 25:
  MATCH (a:File)-[:IMPORTS*1..40]->(b) RETURN b
                          ^
fix: leave the bound open (*1..) to follow any number of hops"#,
    ),
    (
        r#"MATCH (a:File)-[:IMPORTS {since: 2020}]->(b) RETURN b"#,
        r#"cypher: relationships have no properties here
line 1, column 26:
  MATCH (a:File)-[:IMPORTS {since: 2020}]->(b) RETURN b
                           ^
fix: drop the property map; properties belong to nodes"#,
    ),
    (
        r#"MATCH (f:File) RETURN f.lines + 1"#,
        r#"cypher: arithmetic is not supported
line 1, column 31:
  MATCH (f:File) RETURN f.lines + 1
                                ^
fix: compare stored values directly, or aggregate with count, sum, min or max"#,
    ),
    (
        r#"MATCH (f:File) RETURN CASE WHEN f.lines > 1 THEN 'big' END"#,
        r#"cypher: CASE is not supported
line 1, column 23:
  MATCH (f:File) RETURN CASE WHEN f.lines > 1 THEN 'big' END
                        ^
fix: split the cases with OR in WHERE, or ask one query per case"#,
    ),
    (
        r#"MATCH (f:File) WHERE EXISTS { (f)-[:IMPORTS]->() } RETURN f"#,
        r#"cypher: EXISTS { ... } subqueries are not supported
line 1, column 22:
  MATCH (f:File) WHERE EXISTS { (f)-[:IMPORTS]->() } RETURN f
                       ^
fix: write the pattern itself as the condition: WHERE (a)-[:TYPE]->(b)"#,
    ),
    (
        r#"MATCH (f:File) WHERE f.lines > 1 XOR f.lines < 9 RETURN f"#,
        r#"cypher: XOR is not supported
line 1, column 34:
  MATCH (f:File) WHERE f.lines > 1 XOR f.lines < 9 RETURN f
                                   ^
fix: write (a AND NOT b) OR (NOT a AND b)"#,
    ),
    (
        r#"MATCH (f) WHERE f:File RETURN f"#,
        r#"cypher: label tests in WHERE are not supported
line 1, column 18:
  MATCH (f) WHERE f:File RETURN f
                   ^
fix: put the label in the pattern: MATCH (n:Label)"#,
    ),
    (
        r#"MATCH (f:File) RETURN *"#,
        r#"cypher: * as a list of items is not supported
line 1, column 23:
  MATCH (f:File) RETURN *
                        ^
fix: name what to answer: RETURN a, b.name"#,
    ),
    (
        r#"MATCH (f:File) RETURN f LIMIT $n"#,
        r#"cypher: LIMIT takes a number written in the query, not a parameter
line 1, column 31:
  MATCH (f:File) RETURN f LIMIT $n
                                ^
fix: write the number: LIMIT 10 (or use the tool's limit)"#,
    ),
    (
        r#"MATCH (f:File) RETURN avg(f.lines)"#,
        r#"cypher: avg is not supported
line 1, column 23:
  MATCH (f:File) RETURN avg(f.lines)
                        ^
fix: answer sum(x) and count(x) and divide"#,
    ),
    (
        r#"MATCH (f:File) RETURN toUpper(f.path)"#,
        r#"cypher: the function toUpper is not supported
line 1, column 23:
  MATCH (f:File) RETURN toUpper(f.path)
                        ^
fix: the functions are id, count, collect, min, max and sum; compare stored values directly"#,
    ),
    (
        r#"MATCH (f:Flie) RETURN f"#,
        r#"cypher: unknown label :Flie
line 1, column 10:
  MATCH (f:Flie) RETURN f
           ^
fix: the labels are File, Package, Symbol"#,
    ),
    (
        r#"MATCH (f:file) RETURN f"#,
        r#"cypher: unknown label :file
line 1, column 10:
  MATCH (f:file) RETURN f
           ^
fix: did you mean :File?"#,
    ),
    (
        r#"MATCH (f:File)-[:IMPORT]->(g) RETURN g"#,
        r#"cypher: unknown relationship type :IMPORT
line 1, column 18:
  MATCH (f:File)-[:IMPORT]->(g) RETURN g
                   ^
fix: did you mean :IMPORTS?"#,
    ),
    (
        r#"MATCH (f:File)-[:OWNS]->(g) RETURN g"#,
        r#"cypher: unknown relationship type :OWNS
line 1, column 18:
  MATCH (f:File)-[:OWNS]->(g) RETURN g
                   ^
fix: the relationship types are CALLS, CONTAINS, DEFINES, IMPORTS, REFERENCES"#,
    ),
    (
        r#"MATCH (f:File) RETURN f.size"#,
        r#"cypher: unknown property size
line 1, column 25:
  MATCH (f:File) RETURN f.size
                          ^
fix: the properties are kind, lang, lines, name, path"#,
    ),
    (
        r#"MATCH (f:File) RETURN g"#,
        r#"cypher: variable g is not defined
line 1, column 23:
  MATCH (f:File) RETURN g
                        ^
fix: the variables are f"#,
    ),
    (
        r#"MATCH (f:File) WHERE f.lines != 3 RETURN f"#,
        r#"cypher: Cypher writes "not equal" as <>
line 1, column 30:
  MATCH (f:File) WHERE f.lines != 3 RETURN f
                               ^
fix: write <>"#,
    ),
    (
        r#"MATCH (f:File)"#,
        r#"cypher: a query ends with RETURN
line 1, column 15:
  MATCH (f:File)
                ^
fix: add RETURN and what to answer, e.g. RETURN n.name"#,
    ),
    (
        r#"RETURN 1"#,
        r#"cypher: a query needs a MATCH before RETURN
line 1, column 1:
  RETURN 1
  ^
fix: MATCH (n:Label) RETURN n.name"#,
    ),
    (
        r#"MATCH (f:File) WHERE f.lang = $missing RETURN f"#,
        r#"cypher: $missing has no value
line 1, column 31:
  MATCH (f:File) WHERE f.lang = $missing RETURN f
                                ^
fix: give it one in params: {"missing": ...}"#,
    ),
    (
        r#"MATCH (f:File) WHERE f.path = 'a RETURN f"#,
        r#"cypher: a string is never closed
line 1, column 31:
  MATCH (f:File) WHERE f.path = 'a RETURN f
                                ^
fix: end the string with '"#,
    ),
    (
        r#"MATCH (f) RETURN f"#,
        r#"cypher: a node on its own needs a label or a property to match
line 1, column 7:
  MATCH (f) RETURN f
        ^
fix: write (f:Label), one of: File, Package, Symbol"#,
    ),
    (
        r#"MATCH (f:File)<-[:IMPORTS]->(g) RETURN g"#,
        r#"cypher: a relationship can't point both ways
line 1, column 15:
  MATCH (f:File)<-[:IMPORTS]->(g) RETURN g
                ^
fix: write <-[...]- , -[...]-> or -[...]- (either way)"#,
    ),
    (
        r#"MATCH (f:File) RETURN f, 'x'"#,
        r#"cypher: RETURN answers variables and properties, not constants
line 1, column 26:
  MATCH (f:File) RETURN f, 'x'
                           ^
fix: drop the constant; the query's text already says it"#,
    ),
    (
        r#"MATCH (f:File) WHERE count(f) > 1 RETURN f"#,
        r#"cypher: count aggregates, so it belongs in RETURN or WITH
line 1, column 22:
  MATCH (f:File) WHERE count(f) > 1 RETURN f
                       ^
fix: aggregate in WITH ... AS n, then test n in WHERE"#,
    ),
    (
        r#"MATCH (f:File) RETURN f ORDER BY f.lines"#,
        r#"cypher: ORDER BY sorts by a column RETURN answers
line 1, column 34:
  MATCH (f:File) RETURN f ORDER BY f.lines
                                   ^
fix: add the value to RETURN (with AS name) and order by that name"#,
    ),
    (
        r#"MATCH (f:File)-[r:IMPORTS]->(g) RETURN r"#,
        r#"cypher: r is a relationship, which has no value here
line 1, column 40:
  MATCH (f:File)-[r:IMPORTS]->(g) RETURN r
                                         ^
fix: answer the nodes at its ends instead"#,
    ),
];

#[test]
fn every_refused_construct_and_mistake_has_its_golden_error() {
    let g = graphs::code();
    for (q, want) in CASES {
        assert_eq!(&graphs::error(&g, q), want, "\n{q}");
    }
}

#[test]
fn a_query_that_compiles_to_a_program_that_does_not_check_shows_the_program() {
    let g = graphs::code();
    // A list parameter read inside OR lands in a helper rule, where only single values are
    // put in place: the checker refuses the program, and the error shows it.
    let e = match strata_eval::cypher::prepare(
        &g.1,
        &g.2,
        "MATCH (f:File) WHERE f.lang IN $x OR f.lines > 100 RETURN f.path",
        &[(
            "x".into(),
            strata_eval::Bind::List(vec![strata_eval::Value::text("go")]),
        )],
    ) {
        Ok(q) => panic!("{}", q.program),
        Err(e) => e.to_string(),
    };
    assert!(
        e.starts_with("cypher: the query compiled to a program that doesn't check"),
        "{e}"
    );
    assert!(e.contains("\nprogram:\n  _row1("), "{e}");
    assert!(e.contains("\nquery: "), "{e}");
}

#[test]
fn an_error_from_running_the_program_shows_the_program() {
    let g = graphs::code();
    let q = strata_eval::cypher::prepare(
        &g.1,
        &g.2,
        "MATCH (a:File)-[:IMPORTS*]->(b:File) RETURN a, b",
        &[],
    )
    .unwrap();
    let mut options = RunOptions::default();
    options.engine.max_work = Some(10);
    let e = q.run(&g.0, &options).unwrap_err().to_string();
    assert!(e.starts_with("cypher: query: "), "{e}");
    assert!(
        e.contains("\nran: _path1(?x, ?y) :- imports(?x, ?y);\n"),
        "{e}"
    );
}

/// Issue 20, crash 1: `WHERE` followed by 700 nested `(` (or 3,000 `NOT `) overflowed a
/// server worker's stack and aborted the process. Deep input is refused with a message naming
/// the limit, on a thread with half a tokio worker's 2 MiB of stack, in a debug build.
#[test]
fn issue20_deep_cypher_nesting_is_refused_not_a_stack_overflow() {
    let deep = |n: usize, open: &str, close: &str| {
        format!(
            "MATCH (f:File) WHERE {}f.lines > 1{} RETURN f.path",
            open.repeat(n),
            close.repeat(n)
        )
    };
    let inputs = [
        deep(700, "(", ")"),
        deep(100_000, "(", ")"),
        deep(3_000, "NOT ", ""),
        deep(50_000, "NOT (", ")"),
        format!(
            "MATCH (f:File) WHERE f.path IN {}'a'{} RETURN f.path",
            "[".repeat(5_000),
            "]".repeat(5_000)
        ),
    ];
    let g = graphs::code();
    let errors = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn_scoped(scope, || {
                inputs
                    .iter()
                    .map(|q| graphs::error(&g, q))
                    .collect::<Vec<_>>()
            })
            .unwrap()
            .join()
            .unwrap()
    });
    for e in errors {
        let first = e.lines().next().unwrap_or_default();
        assert_eq!(
            first,
            format!(
                "cypher: the expression nests more than {} deep",
                strata_eval::cypher::MAX_DEPTH
            )
        );
        assert!(e.len() < 2_000, "a bounded message: {} bytes", e.len());
    }
    // Nesting within the limit still answers.
    let ok = format!(
        "MATCH (f:File) WHERE {}f.lines > 1{} RETURN f.path",
        "(".repeat(20),
        ")".repeat(20)
    );
    assert!(strata_eval::cypher::prepare(&g.1, &g.2, &ok, &[]).is_ok());
}
