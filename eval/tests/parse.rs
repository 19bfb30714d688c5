//! The parser on every construct of the language, the seed's programs, module docs, and the
//! printer's round trip.

mod common;

use common::{round_trip, strip_module};
use strata_eval::internals::ast::{
    AggFunc, CmpOp, Column, Direction, HeadArg, Literal, Program, Span, Term,
};
use strata_eval::{Value, parse_module, parse_program};

fn parse(source: &str) -> Program {
    parse_program(source).unwrap_or_else(|d| panic!("{}", d.render("query", source)))
}

fn goal_literal(source: &str, i: usize) -> Literal {
    parse(source).goal.body[i].clone()
}

fn text(source: &str, span: Span) -> &str {
    &source[span.start..span.end]
}

// --- the seed's programs --------------------------------------------------------------------

#[test]
fn seed_queries_parse() {
    for source in [
        r#"deps.depends_on("app", ?d) => ?d"#,
        r#"imports("api", ?d) => ?d"#,
        r#"pkg(?p, _), pkg(?to, _), imports(?p, ?to) => ?p"#,
        r#"depends_on("app", ?d) => ?d"#,
    ] {
        let p = parse(source);
        assert!(p.rules.is_empty());
        assert_eq!(p.to_string(), source);
    }
    let source = r#"deps.depends_on("app", ?d) => ?d"#;
    let p = parse(source);
    let Literal::Atom(atom) = &p.goal.body[0] else {
        panic!("not an atom")
    };
    assert_eq!(atom.relation.text, "deps.depends_on");
    assert_eq!(
        atom.relation.segments().collect::<Vec<_>>(),
        ["deps", "depends_on"]
    );
    assert_eq!(text(source, atom.relation.span), "deps.depends_on");
    assert_eq!(text(source, atom.span), r#"deps.depends_on("app", ?d)"#);
    assert_eq!(atom.args[0].constant(), Some(Value::text("app")));
    assert_eq!(text(source, atom.args[1].span()), "?d");
    let columns = p.goal.columns.as_ref().unwrap();
    assert!(matches!(&columns[0], Column::Var(v) if v.name == "d"));
    assert_eq!(text(source, p.goal.span), source);
}

const SEED_MODULE: &str = "# Everything a package depends on, directly or through others.
depends_on(?a, ?b) :- _step(?a, ?b);
depends_on(?a, ?c) :- depends_on(?a, ?b), _step(?b, ?c);

# One import step.
_step(?a, ?b) :- imports(?a, ?b);
";

#[test]
fn seed_module_parses_with_docs() {
    let m = parse_module(SEED_MODULE).unwrap();
    assert_eq!(m.rules.len(), 3);
    assert_eq!(
        m.doc("depends_on"),
        Some("Everything a package depends on, directly or through others.")
    );
    assert_eq!(m.doc("_step"), Some("One import step."));
    assert_eq!(m.rules[1].doc, None);
    assert!(m.rules[2].head.relation.is_private());
    assert_eq!(m.doc("imports"), None);
    let rule = &m.rules[1];
    assert_eq!(
        text(SEED_MODULE, rule.span),
        "depends_on(?a, ?c) :- depends_on(?a, ?b), _step(?b, ?c);"
    );
    assert_eq!(rule.body.len(), 2);
    // The printed module parses back to the same module, docs included.
    let printed = m.to_string();
    assert_eq!(
        printed,
        "# Everything a package depends on, directly or through others.
depends_on(?a, ?b) :- _step(?a, ?b);
depends_on(?a, ?c) :- depends_on(?a, ?b), _step(?b, ?c);
# One import step.
_step(?a, ?b) :- imports(?a, ?b);
"
    );
    assert_eq!(
        strip_module(&parse_module(&printed).unwrap()),
        strip_module(&m)
    );
}

#[test]
fn docs_are_the_comment_lines_directly_above() {
    let source = "# not a doc: a blank line follows

#   first line
#
# third line
a(?x) :- b(?x); # trailing, not a doc
b(?x) :- c(?x);
x(?y) :- c(?y); c(?z) :- d(?z);
  # indented comment
  d(?x) :- e(?x);
# \"a string\" # with a hash
e(?x) :- f(?x);
";
    let m = parse_module(source).unwrap();
    assert_eq!(m.doc("a"), Some("  first line\n\nthird line"));
    assert_eq!(m.doc("b"), None);
    assert_eq!(m.doc("x"), None);
    assert_eq!(
        m.doc("c"),
        None,
        "a rule that doesn't start its line has no doc"
    );
    assert_eq!(m.doc("d"), Some("indented comment"));
    assert_eq!(m.doc("e"), Some("\"a string\" # with a hash"));
    assert_eq!(
        strip_module(&parse_module(&m.to_string()).unwrap()),
        strip_module(&m)
    );

    // A '#' inside a string is not a comment, and a comment line inside a multi-line string
    // is not a doc.
    let source = "a(?x) :- b(?x, \"\n# inside\n\");\nc(?x) :- a(?x);";
    let m = parse_module(source).unwrap();
    assert_eq!(m.doc("c"), None);
    let Literal::Atom(atom) = &m.rules[0].body[0] else {
        panic!()
    };
    assert_eq!(atom.args[1].constant(), Some(Value::text("\n# inside\n")));

    // Only a relation's first rule gives its doc.
    let m = parse_module("a(?x) :- b(?x);\n# late\na(?x) :- c(?x);").unwrap();
    assert_eq!(m.doc("a"), None);
    assert_eq!(m.rules[1].doc.as_deref(), Some("late"));

    // Windows line ends.
    let m = parse_module("# one\r\n# two\r\na(?x) :- b(?x);\r\n").unwrap();
    assert_eq!(m.doc("a"), Some("one\ntwo"));
}

#[test]
fn empty_module() {
    assert!(parse_module("").unwrap().rules.is_empty());
    assert!(
        parse_module("# only a comment\n\n")
            .unwrap()
            .rules
            .is_empty()
    );
}

// --- terms ----------------------------------------------------------------------------------

fn args(source: &str) -> Vec<Term> {
    match goal_literal(source, 0) {
        Literal::Atom(atom) => atom.args,
        other => panic!("not an atom: {other:?}"),
    }
}

#[test]
fn terms() {
    let source =
        r#"r(?x, ?Long_name9, ?_, _, "text", "", -12, 3.5, 1e6, 2.5E-3, 1e+2, 0, -0, absent)"#;
    let a = args(source);
    assert!(matches!(&a[0], Term::Var(v) if v.name == "x"));
    assert!(matches!(&a[1], Term::Var(v) if v.name == "Long_name9"));
    assert!(matches!(&a[2], Term::Var(v) if v.name == "_"));
    assert!(matches!(&a[3], Term::Wildcard(_)));
    let values: Vec<Option<Value>> = a[4..].iter().map(Term::constant).collect();
    assert_eq!(
        values,
        [
            Some(Value::text("text")),
            Some(Value::text("")),
            Some(Value::Number(-12.0)),
            Some(Value::Number(3.5)),
            Some(Value::Number(1e6)),
            Some(Value::Number(2.5e-3)),
            Some(Value::Number(100.0)),
            Some(Value::Number(0.0)),
            Some(Value::Number(0.0)),
            Some(Value::Absent),
        ]
    );
    let spans: Vec<&str> = a.iter().map(|t| text(source, t.span())).collect();
    assert_eq!(
        spans,
        [
            "?x",
            "?Long_name9",
            "?_",
            "_",
            "\"text\"",
            "\"\"",
            "-12",
            "3.5",
            "1e6",
            "2.5E-3",
            "1e+2",
            "0",
            "-0",
            "absent"
        ]
    );
    // -0 reads as 0, so it prints as 0.
    assert!(matches!(a[12], Term::Number { value, .. } if value.is_sign_positive()));
}

#[test]
fn string_escapes() {
    let source = r#"r("say \"hi\"", "back\\slash", "tab	and é", "multi
line")"#;
    let a = args(source);
    assert_eq!(a[0].constant(), Some(Value::text("say \"hi\"")));
    assert_eq!(a[1].constant(), Some(Value::text("back\\slash")));
    assert_eq!(a[2].constant(), Some(Value::text("tab\tand é")));
    assert_eq!(a[3].constant(), Some(Value::text("multi\nline")));
    round_trip(source);
}

#[test]
fn comments_and_whitespace() {
    let source = "# leading comment\n  r( ?x ,\t\"a # not a comment\" ) # trailing\n\n => ?x # end";
    let a = args(source);
    assert_eq!(a[1].constant(), Some(Value::text("a # not a comment")));
    assert_eq!(
        parse(source).to_string(),
        "r(?x, \"a # not a comment\") => ?x"
    );
}

#[test]
fn relation_names() {
    for name in [
        "imports",
        "deps.depends_on",
        "str.contains",
        "net.max_voltage",
        "a-b.c-d",
        "_private",
        "deps._step",
        "x1.y2.z3",
        "count",
        "limit",
        "absent",
    ] {
        let source = format!("{name}(?x) => ?x");
        let Literal::Atom(atom) = goal_literal(&source, 0) else {
            panic!("{name}: not an atom")
        };
        assert_eq!(atom.relation.text, name);
    }
    let Literal::Atom(atom) = goal_literal("a.b.c(?x)", 0) else {
        panic!()
    };
    assert_eq!(atom.relation.last_segment(), "c");
    assert!(atom.relation.is_qualified());
    assert!(!atom.relation.is_private());
}

#[test]
fn absent_is_a_constant_and_a_predicate() {
    let p = parse("pkg(?p, absent), absent(?p), ?p != absent => ?p");
    assert!(matches!(&p.goal.body[0], Literal::Atom(a) if matches!(a.args[1], Term::Absent(_))));
    assert!(matches!(&p.goal.body[1], Literal::Atom(a) if a.relation.text == "absent"));
    assert!(matches!(&p.goal.body[2], Literal::Compare(c) if matches!(c.right, Term::Absent(_))));
    round_trip("pkg(?p, absent), absent(?p), ?p != absent => ?p");
    round_trip("absent = ?x, pkg(?x, _)");
}

// --- literals -------------------------------------------------------------------------------

#[test]
fn atoms() {
    let p = parse("zero(), one(?x), two(?x, \"y\")");
    let arities: Vec<usize> = p
        .goal
        .body
        .iter()
        .map(|l| match l {
            Literal::Atom(a) => a.args.len(),
            _ => panic!(),
        })
        .collect();
    assert_eq!(arities, [0, 1, 2]);
}

#[test]
fn negation() {
    let source = "pkg(?p, _), not imports(?p, \"log\")";
    let Literal::Not { atom, span } = goal_literal(source, 1) else {
        panic!()
    };
    assert_eq!(atom.relation.text, "imports");
    assert_eq!(text(source, span), "not imports(?p, \"log\")");
    round_trip(source);
}

#[test]
fn comparisons() {
    let source = "n(?a, ?b), ?a < ?b, ?a <= 3, ?a = \"x\", ?a != -1.5, ?a > ?b, ?b >= 1e3, 3 < ?a";
    let p = parse(source);
    let ops: Vec<CmpOp> = p.goal.body[1..]
        .iter()
        .map(|l| match l {
            Literal::Compare(c) => c.op,
            _ => panic!(),
        })
        .collect();
    use CmpOp::*;
    assert_eq!(ops, [Lt, Le, Eq, Ne, Gt, Ge, Lt]);
    let Literal::Compare(c) = &p.goal.body[4] else {
        panic!()
    };
    assert_eq!(text(source, c.span), "?a != -1.5");
    assert_eq!(text(source, c.op_span), "!=");
    // No spaces needed.
    let p = parse("n(?a),?a<=3,?a>-1,?a!=2=>?a");
    assert_eq!(p.to_string(), "n(?a), ?a <= 3, ?a > -1, ?a != 2 => ?a");
    round_trip(source);
}

#[test]
fn aggregate_literals() {
    let source =
        "pkg(?p, _), ?n = count(distinct ?d) : { imports(?p, ?d), not skip(?d) }, ?n > 2 => ?p, ?n";
    let Literal::Aggregate(a) = goal_literal(source, 1) else {
        panic!()
    };
    assert_eq!(a.result.name, "n");
    assert_eq!(a.aggregate.func, AggFunc::Count);
    assert!(a.aggregate.distinct);
    assert_eq!(a.aggregate.var.name, "d");
    assert_eq!(a.body.len(), 2);
    assert_eq!(text(source, a.aggregate.span), "count(distinct ?d)");
    assert!(text(source, a.span).starts_with("?n = count"));
    assert!(text(source, a.span).ends_with("not skip(?d) }"));
    round_trip(source);
    // Nested, and every function.
    for f in ["count", "sum", "min", "max", "list"] {
        round_trip(&format!(
            "p(?p), ?s = {f}(?x) : {{ q(?p, ?x), ?c = count(?y) : {{ r(?x, ?y) }}, ?c > 1 }} => ?p, ?s"
        ));
    }
}

// --- rules ----------------------------------------------------------------------------------

#[test]
fn rules_with_aggregate_heads() {
    let source = "fan_out(?p, count(?d)) :- imports(?p, ?d);
total(sum(distinct ?n), max(?n), \"k\", 1, absent, _) :- size(?p, ?n);
fan_out(?p, ?n) => ?p, ?n";
    let p = parse(source);
    assert_eq!(p.rules.len(), 2);
    let head = &p.rules[0].head;
    assert_eq!(head.relation.text, "fan_out");
    assert!(matches!(&head.args[0], HeadArg::Term(Term::Var(v)) if v.name == "p"));
    assert!(matches!(&head.args[1], HeadArg::Aggregate(a) if a.func == AggFunc::Count));
    assert_eq!(text(source, head.args[1].span()), "count(?d)");
    let head = &p.rules[1].head;
    assert!(matches!(&head.args[0], HeadArg::Aggregate(a) if a.func == AggFunc::Sum && a.distinct));
    assert!(matches!(&head.args[1], HeadArg::Aggregate(a) if a.func == AggFunc::Max));
    assert_eq!(head.args.len(), 6);
    assert_eq!(
        text(source, p.rules[0].span),
        "fan_out(?p, count(?d)) :- imports(?p, ?d);"
    );
    round_trip(source);
}

#[test]
fn rules_before_a_goal() {
    let source = "reach(?a, ?b) :- edge(?a, ?b);
reach(?a, ?c) :- reach(?a, ?b), edge(?b, ?c);
reach(\"app\", ?x)";
    let p = parse(source);
    assert_eq!(p.rules.len(), 2);
    assert!(p.goal.columns.is_none());
    assert_eq!(round_trip(source), source);
    // Dotted heads parse in a query (the checker decides what they may define).
    round_trip("x.y(?a) :- b(?a); x.y(?a)");
    // Zero-arity heads.
    round_trip("flag() :- b(?a); flag()");
}

// --- goals ----------------------------------------------------------------------------------

#[test]
fn goal_clauses() {
    let source = "imports(?p, ?d) => ?p, count(?d), list(distinct ?d)
        having count(?d) > 2, min(?d) != \"a\"
        order by count(?d) desc, ?p asc, list(distinct ?d)
        limit 10 offset 20";
    let g = parse(source).goal;
    let columns = g.columns.as_ref().unwrap();
    assert_eq!(columns.len(), 3);
    assert!(matches!(&columns[2], Column::Aggregate(a) if a.func == AggFunc::List && a.distinct));
    assert_eq!(g.having.len(), 2);
    assert_eq!(g.having[0].op, CmpOp::Gt);
    assert_eq!(g.having[1].aggregate.func, AggFunc::Min);
    assert_eq!(text(source, g.having[1].span), "min(?d) != \"a\"");
    let dirs: Vec<Direction> = g.order_by.iter().map(|k| k.direction).collect();
    assert_eq!(dirs, [Direction::Desc, Direction::Asc, Direction::Asc]);
    assert_eq!(text(source, g.order_by[0].span), "count(?d) desc");
    assert_eq!(g.limit.map(|l| l.value), Some(10));
    assert_eq!(g.offset.map(|l| l.value), Some(20));
    assert_eq!(text(source, g.offset.unwrap().span), "20");
    assert!(text(source, g.span).ends_with("offset 20"));
    assert_eq!(
        round_trip(source),
        "imports(?p, ?d) => ?p, count(?d), list(distinct ?d) having count(?d) > 2, min(?d) != \"a\" order by count(?d) desc, ?p, list(distinct ?d) limit 10 offset 20"
    );
}

#[test]
fn clauses_without_columns() {
    let g = parse("imports(?a, ?b) order by ?b desc limit 5 offset 1").goal;
    assert!(g.columns.is_none());
    assert_eq!(g.order_by.len(), 1);
    assert_eq!(g.limit.map(|l| l.value), Some(5));
    round_trip("imports(?a, ?b) limit 5");
    round_trip("imports(?a, ?b) offset 5");
    round_trip("imports(?a, ?b) having count(?b) >= 2");
    round_trip("imports(?a, ?b) => ?a limit 0");
}

#[test]
fn goal_of_comparisons_and_negations_only() {
    round_trip("1 < 2");
    round_trip("not a(\"x\")");
    round_trip("?x = 1");
}

#[test]
fn keywords_are_contextual() {
    // Clause keywords and aggregate names can be relation names where an atom belongs.
    round_trip("limit(?x), order(?x), having(?x), count(?x) => ?x");
    round_trip("a(?x), by(?x), asc(?x), desc(?x), distinct(?x)");
    // ... and variable names.
    round_trip("a(?not, ?limit, ?count, ?absent) => ?not");
}

#[test]
fn large_numbers_round_trip() {
    round_trip("a(1e300, -1e-300, 5e-324, 123456789.123456789, 0.1)");
    round_trip("a(?x) limit 18446744073709551615");
}
