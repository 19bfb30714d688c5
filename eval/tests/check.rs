//! The checker and the vocabulary: golden tests of every error's exact rendered text, and
//! lowering tests that evaluate the compiled program (with the engine and the naive oracle).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use strata_eval::Answer;
use strata_eval::internals::ast::AggFunc;
use strata_eval::internals::{ColumnSpec, OrderSpec};
use strata_eval::internals::{Options, evaluate};
use strata_eval::internals::{magic, naive};
use strata_eval::{
    Bind, Compiled, FactSource, MemorySource, RelationKind, Value, VocabError, Vocabulary, compile,
    parse_program,
};

const DEPS: &str = include_str!("../../fixtures/example/modules/deps.dl");

/// The seed's example: imports app -> api -> {log, util}; pkg with a license each (api's is
/// absent, log's is empty).
fn source() -> MemorySource {
    let mut s = MemorySource::new();
    s.add_relation("imports", &["src", "dst"]);
    s.add_relation("pkg", &["name", "license"]);
    for (a, b) in [("app", "api"), ("api", "log"), ("api", "util")] {
        s.insert("imports", &[Value::text(a), Value::text(b)])
            .unwrap();
    }
    for (p, l) in [
        ("app", Value::text("MIT")),
        ("api", Value::Absent),
        ("log", Value::text("")),
        ("util", Value::text("BSD-3-Clause")),
    ] {
        s.insert("pkg", &[Value::text(p), l]).unwrap();
    }
    s
}

fn vocab_with(modules: &[(&str, &str)]) -> Vocabulary {
    Vocabulary::from_sources(source().relations().unwrap(), modules).unwrap()
}

fn vocab() -> Vocabulary {
    vocab_with(&[("deps", DEPS)])
}

fn one(name: &str, v: &str) -> (String, Bind) {
    (name.to_owned(), Bind::One(Value::text(v)))
}

/// Asserts that `text` fails to compile against the example vocabulary with exactly
/// `expected`, rendered with `query`.
#[track_caller]
fn fails(text: &str, expected: &str) {
    fails_with(text, &[], expected);
}

#[track_caller]
fn fails_with(text: &str, binds: &[(String, Bind)], expected: &str) {
    let program = parse_program(text).unwrap();
    match compile(&vocab(), &program, binds) {
        Ok(c) => panic!("{text:?} compiled: {:?}", c.ir),
        Err(d) => assert_eq!(d.render("query", text), expected, "program: {text:?}"),
    }
}

/// Asserts that the modules fail to load with exactly `expected`.
#[track_caller]
fn module_fails(modules: &[(&str, &str)], expected: &str) {
    match Vocabulary::from_sources(source().relations().unwrap(), modules) {
        Ok(_) => panic!("{modules:?} loaded"),
        Err(e) => assert_eq!(e.to_string(), expected),
    }
}

/// Compiles and evaluates `text`; returns the compiled program and the goal relation's
/// tuples, checked against the naive oracle and against the demand rewrite.
fn run(v: &Vocabulary, text: &str, binds: &[(String, Bind)]) -> (Compiled, BTreeSet<Vec<Value>>) {
    let src = source();
    let c = compile(v, &parse_program(text).unwrap(), binds).unwrap();
    let goal = goal_tuples(&c.ir, &src);
    let oracle = naive::evaluate(&c.ir, &src).unwrap();
    assert_eq!(oracle[c.ir.goal], goal, "naive oracle disagrees on {text}");
    if let Some(rewritten) = magic::rewrite(&c.ir) {
        assert_eq!(
            goal_tuples(&rewritten, &src),
            goal,
            "demand rewrite disagrees on {text}"
        );
    }
    (c, goal)
}

fn goal_tuples(ir: &strata_eval::internals::ir::Ir, src: &MemorySource) -> BTreeSet<Vec<Value>> {
    let ev = evaluate(ir, src, &Options::default()).unwrap();
    ev.relations[ir.goal]
        .iter()
        .map(|(_, t)| t.iter().map(|&x| ev.dict.value(x).unwrap()).collect())
        .collect()
}

fn rows(rows: &[&[&str]]) -> BTreeSet<Vec<Value>> {
    rows.iter()
        .map(|r| r.iter().map(|v| Value::text(*v)).collect())
        .collect()
}

// --- names -------------------------------------------------------------------------------

#[test]
fn unknown_relation_with_a_suggestion() {
    fails(
        r#"depends_on("app", ?d) => ?d"#,
        r#"query: unknown relation "depends_on"; did you mean "deps.depends_on"?
line 1, column 1:
  depends_on("app", ?d) => ?d
  ^
fix: did you mean "deps.depends_on"?"#,
    );
    fails(
        r#"imports(?a, ?b), not pkgs(?b, _)"#,
        r#"query: unknown relation "pkgs"; did you mean "pkg"?
line 1, column 22:
  imports(?a, ?b), not pkgs(?b, _)
                       ^
fix: did you mean "pkg"?"#,
    );
    fails(
        r#"pkg(?p, ?l), contains(?l, "BSD")"#,
        r#"query: unknown relation "contains"; did you mean "str.contains"?
line 1, column 14:
  pkg(?p, ?l), contains(?l, "BSD")
               ^
fix: did you mean "str.contains"?"#,
    );
    fails(
        r#"deps.depend_on("app", ?d)"#,
        r#"query: unknown relation "deps.depend_on"; did you mean "deps.depends_on"?
line 1, column 1:
  deps.depend_on("app", ?d)
  ^
fix: did you mean "deps.depends_on"?"#,
    );
}

#[test]
fn unknown_relation_without_a_suggestion() {
    fails(
        r#"frobnicate("app", ?d) => ?d"#,
        r#"query: unknown relation "frobnicate"
line 1, column 1:
  frobnicate("app", ?d) => ?d
  ^
fix: call schema for every relation and module a program can name"#,
    );
    fails(
        r#"deps.xyz("app", ?d) => ?d"#,
        r#"query: unknown relation "deps.xyz"
line 1, column 1:
  deps.xyz("app", ?d) => ?d
  ^
fix: module "deps" has deps.depends_on"#,
    );
}

#[test]
fn suggestions_rank_the_same_module_first_and_list_ties() {
    // `a.x` reads a bare `step`, which is neither its own member nor a root name.
    module_fails(
        &[
            ("a", "x(?p) :- step(?p, _);"),
            ("b", "step(?a, ?b) :- imports(?a, ?b);"),
            ("c", "step(?a, ?b) :- imports(?a, ?b);"),
        ],
        r#"modules/a.dl: unknown relation "step"; did you mean "b.step" or "c.step"?
line 1, column 10:
  x(?p) :- step(?p, _);
           ^
fix: did you mean "b.step" or "c.step"?"#,
    );
    // Inside module b, its own member ranks first.
    module_fails(
        &[
            (
                "b",
                "step(?a, ?b) :- imports(?a, ?b);\nx(?a) :- stepp(?a, _);",
            ),
            ("c", "step(?a, ?b) :- imports(?a, ?b);"),
        ],
        r#"modules/b.dl: unknown relation "stepp"; did you mean "step"?
line 2, column 10:
  x(?a) :- stepp(?a, _);
           ^
fix: did you mean "step"?"#,
    );
}

#[test]
fn private_member_from_a_query() {
    fails(
        r#"deps._step("app", ?d) => ?d"#,
        r#"query: "deps._step" is private to module "deps"
line 1, column 1:
  deps._step("app", ?d) => ?d
  ^
fix: use a public relation of module "deps": deps.depends_on"#,
    );
}

#[test]
fn private_member_from_another_module() {
    module_fails(
        &[
            ("a", "x(?a) :- b._y(?a);"),
            ("b", "_y(?a) :- imports(?a, _);"),
        ],
        r#"modules/a.dl: "b._y" is private to module "b"
line 1, column 10:
  x(?a) :- b._y(?a);
           ^
fix: only the rules of module "b" can use it"#,
    );
}

// --- arity ----------------------------------------------------------------------------------

#[test]
fn arity() {
    fails(
        r#"imports("app", ?d, ?e) => ?d"#,
        r#"query: imports(src, dst) takes 2 arguments, not 3
line 1, column 20:
  imports("app", ?d, ?e) => ?d
                     ^
fix: give it 2 arguments: imports(src, dst)"#,
    );
    fails(
        r#"deps.depends_on("app") => ?d"#,
        r#"query: deps.depends_on(a, b) takes 2 arguments, not 1
line 1, column 22:
  deps.depends_on("app") => ?d
                       ^
fix: give it 2 arguments: deps.depends_on(a, b)"#,
    );
    fails(
        r#"pkg(?p, ?l), str.contains(?l)"#,
        r#"query: str.contains(s, sub) takes 2 arguments, not 1
line 1, column 29:
  pkg(?p, ?l), str.contains(?l)
                              ^
fix: give it 2 arguments: str.contains(s, sub)"#,
    );
    fails(
        r#"r(?a) :- pkg(?a, _); r(?a, ?b) :- imports(?a, ?b); r(?x)"#,
        r#"query: r(a) takes 1 argument, not 2
line 1, column 28:
  r(?a) :- pkg(?a, _); r(?a, ?b) :- imports(?a, ?b); r(?x)
                             ^
fix: give it 1 argument: r(a)"#,
    );
    module_fails(
        &[(
            "deps",
            "d(?a) :- imports(?a, _);\nd(?a, ?b) :- imports(?a, ?b);",
        )],
        r#"modules/deps.dl: d(a) takes 1 argument, not 2
line 2, column 7:
  d(?a, ?b) :- imports(?a, ?b);
        ^
fix: give it 1 argument: d(a)"#,
    );
}

// --- safety -------------------------------------------------------------------------------

#[test]
fn unsafe_head_variable() {
    fails(
        r#"r(?a, ?b) :- imports(?a, _); r(?x, ?y) => ?x"#,
        r#"query: ?b in the head is not bound by the body
line 1, column 7:
  r(?a, ?b) :- imports(?a, _); r(?x, ?y) => ?x
        ^
fix: use ?b in a positive atom of the body, or drop it from the head"#,
    );
    fails(
        r#"r(?e) :- imports(?a, _), not pkg(?a, ?e); r(?x)"#,
        r#"query: ?e in the head appears in the body only under "not", so it has no value
line 1, column 3:
  r(?e) :- imports(?a, _), not pkg(?a, ?e); r(?x)
    ^
fix: use ?e in a positive atom of the body, or drop it from the head"#,
    );
    fails(
        r#"r(?p, ?n) :- ?n = count(?d) : { imports(?p, ?d) }; r(?a, ?b)"#,
        r#"query: ?p in the head is bound only inside an aggregate's { }
line 1, column 3:
  r(?p, ?n) :- ?n = count(?d) : { imports(?p, ?d) }; r(?a, ?b)
    ^
fix: use ?p in a positive atom outside the { } too, or aggregate in the head instead, grouped by ?p: head(?p, count(?x)) :- ..."#,
    );
    fails(
        r#"r(?a, _) :- imports(?a, _); r(?a, ?b)"#,
        r#"query: a head can't hold _: each of its arguments needs a value
line 1, column 7:
  r(?a, _) :- imports(?a, _); r(?a, ?b)
        ^
fix: write a ?variable that the body binds, or a constant"#,
    );
}

#[test]
fn unsafe_comparison() {
    fails(
        r#"imports(?a, ?b), ?c > 3"#,
        r#"query: ?c in a comparison is not bound by a positive atom of the goal
line 1, column 18:
  imports(?a, ?b), ?c > 3
                   ^
fix: a comparison tests and never binds: use ?c in a positive atom of the goal too"#,
    );
    fails(
        r#"pkg(?p, _), ?n = count(?d) : { imports(?p, ?d), ?l > 1 }"#,
        r#"query: ?l in a comparison is not bound by a positive atom of the aggregate's { }
line 1, column 49:
  pkg(?p, _), ?n = count(?d) : { imports(?p, ?d), ?l > 1 }
                                                  ^
fix: a comparison tests and never binds: use ?l in a positive atom of the aggregate's { } too"#,
    );
    fails(
        r#"imports(?a, ?b), ?a = _"#,
        r#"query: a comparison can't test _, which stands for no value
line 1, column 23:
  imports(?a, ?b), ?a = _
                        ^
fix: compare a ?variable bound by a positive atom, or a constant"#,
    );
}

#[test]
fn unbound_builtin_argument() {
    fails(
        r#"imports(?a, ?b), str.contains(?a, ?z)"#,
        r#"query: str.contains tests its argument sub, but ?z is not bound by a positive atom of the goal
line 1, column 35:
  imports(?a, ?b), str.contains(?a, ?z)
                                    ^
fix: builtins test values and never bind: use ?z in a positive atom of the goal too"#,
    );
    fails(
        r#"imports(?a, _), str.prefix(?a, _)"#,
        r#"query: str.prefix can't take _ as its argument p
line 1, column 32:
  imports(?a, _), str.prefix(?a, _)
                                 ^
fix: give it a ?variable bound by a positive atom, or a constant"#,
    );
    fails(
        r#"imports(?a, ?b), not str.contains(?a, "x")"#,
        r#"query: "not" can't negate the builtin "str.contains"
line 1, column 18:
  imports(?a, ?b), not str.contains(?a, "x")
                   ^
fix: "not" applies to a relation's atom; test the opposite with a comparison, or negate a relation that holds what the builtin tests"#,
    );
}

#[test]
fn unsafe_negation() {
    fails(
        r#"imports(?a, ?b), not pkg(?c, _)"#,
        r#"query: "not" shares no variable with the positive atoms of the goal
line 1, column 18:
  imports(?a, ?b), not pkg(?c, _)
                   ^
fix: "not" tests values bound elsewhere: use ?c in a positive atom of the goal too, or write _ for a value that may be anything"#,
    );
    fails(
        r#"imports(?a, _), not pkg(?e, ?a), not imports(?a, ?e)"#,
        r#"query: ?e appears only under "not", in two negations; each would read it apart
line 1, column 50:
  imports(?a, _), not pkg(?e, ?a), not imports(?a, ?e)
                                                   ^
fix: bind ?e with a positive atom, or give each "not" a variable of its own (or _)"#,
    );
}

#[test]
fn projecting_an_existential() {
    fails(
        r#"imports(?a, _), not pkg(?a, ?l) => ?l"#,
        r#"query: ?l appears only under "not", so the goal has no value to show for it
line 1, column 36:
  imports(?a, _), not pkg(?a, ?l) => ?l
                                     ^
fix: bind ?l with a positive atom of the goal, or drop it here"#,
    );
    fails(
        r#"?n = count(?d) : { imports(?p, ?d) } => ?d"#,
        r#"query: ?d is local to an aggregate's { }, so the goal has no value to show for it
line 1, column 41:
  ?n = count(?d) : { imports(?p, ?d) } => ?d
                                          ^
fix: use ?d outside the { } too, or drop it here"#,
    );
}

#[test]
fn aggregate_literals() {
    fails(
        r#"pkg(?p, _), ?n = count(?z) : { imports(?p, ?d) }"#,
        r#"query: ?z does not appear in the aggregate's { }
line 1, column 24:
  pkg(?p, _), ?n = count(?z) : { imports(?p, ?d) }
                         ^
fix: aggregate a variable that an atom inside the { } binds, or use ?z there"#,
    );
    fails(
        r#"pkg(?p, _), ?n = count(?d) : { imports(?p, ?d), ?n > 1 }"#,
        r#"query: ?n receives the aggregate's value, so it can't appear inside its { }
line 1, column 49:
  pkg(?p, _), ?n = count(?d) : { imports(?p, ?d), ?n > 1 }
                                                  ^
fix: give the result a name of its own, such as ?count_d"#,
    );
    fails(
        r#"imports(?x, _), not pkg(?p, ?x), ?n = count(?d) : { imports(?p, ?d) }"#,
        r#"query: ?p is used inside the aggregate's { } and outside it, but no positive atom outside binds it
line 1, column 61:
  imports(?x, _), not pkg(?p, ?x), ?n = count(?d) : { imports(?p, ?d) }
                                                              ^
fix: use ?p in a positive atom of the goal outside the { }, or rename it inside to make it the aggregate's own"#,
    );
    fails(
        r#"imports(?a, ?b), ?n = list(?b) : { imports(?a, ?b) }"#,
        r#"query: list(...) makes a list, which only a goal's columns can hold
line 1, column 23:
  imports(?a, ?b), ?n = list(?b) : { imports(?a, ?b) }
                        ^
fix: use count, sum, min or max here, or list(...) after the goal's =>"#,
    );
}

// --- heads and redefinitions ---------------------------------------------------------------

#[test]
fn redefinitions() {
    fails(
        r#"imports(?a, ?b) :- pkg(?a, ?b); imports(?a, ?b)"#,
        r#"query: "imports" is a base relation; a query's rules can't redefine it
line 1, column 1:
  imports(?a, ?b) :- pkg(?a, ?b); imports(?a, ?b)
  ^
fix: give the rule's relation a name of its own, such as my_imports"#,
    );
    fails(
        r#"absent(?a) :- pkg(?a, _); pkg(?a, _)"#,
        r#"query: "absent" is a builtin; a query's rules can't redefine it
line 1, column 1:
  absent(?a) :- pkg(?a, _); pkg(?a, _)
  ^
fix: give the rule's relation a name of its own, such as my_absent"#,
    );
    fails(
        r#"str.glob(?a, ?b) :- imports(?a, ?b); pkg(?a, _)"#,
        r#"query: "str.glob" is a builtin; a query's rules can't redefine it
line 1, column 1:
  str.glob(?a, ?b) :- imports(?a, ?b); pkg(?a, _)
  ^
fix: give the rule's relation a name of its own, such as my_glob"#,
    );
    fails(
        r#"deps.depends_on(?a, ?b) :- pkg(?a, ?b); pkg(?a, _)"#,
        r#"query: "deps.depends_on" is defined by module "deps"; a query's rules can't redefine it
line 1, column 1:
  deps.depends_on(?a, ?b) :- pkg(?a, ?b); pkg(?a, _)
  ^
fix: give the rule's relation a name of its own, such as my_depends_on"#,
    );
    module_fails(
        &[("str", "contains(?a, ?b) :- imports(?a, ?b);")],
        r#"modules/str.dl: module "str" defines "str.contains", which is a builtin
line 1, column 1:
  contains(?a, ?b) :- imports(?a, ?b);
  ^
fix: give the relation another name, such as my_contains"#,
    );
}

#[test]
fn dotted_head_in_a_query() {
    fails(
        r#"my.rel(?a) :- pkg(?a, _); pkg(?a, _)"#,
        r#"query: a query's rule defines a bare name, not "my.rel"
line 1, column 1:
  my.rel(?a) :- pkg(?a, _); pkg(?a, _)
  ^
fix: write rel(...) :- ... (dotted names belong to modules' files)"#,
    );
}

#[test]
fn list_in_a_rule_head() {
    fails(
        r#"p(?a, list(?b)) :- imports(?a, ?b); p(?a, ?l)"#,
        r#"query: list(...) makes a list, which only a goal's columns can hold
line 1, column 7:
  p(?a, list(?b)) :- imports(?a, ?b); p(?a, ?l)
        ^
fix: use count, sum, min or max here, or list(...) after the goal's =>"#,
    );
}

// --- stratification -------------------------------------------------------------------------

#[test]
fn cycle_through_not() {
    fails(
        r#"p(?x) :- pkg(?x, _), not q(?x); q(?x) :- pkg(?x, _), not p(?x); p(?x)"#,
        r#"query: a cycle through "not" can't be computed: p -> q -> p
line 1, column 22:
  p(?x) :- pkg(?x, _), not q(?x); q(?x) :- pkg(?x, _), not p(?x); p(?x)
                       ^
fix: "not" reads a relation computed before this one: define "q" without reading "p""#,
    );
    fails(
        r#"win(?x) :- imports(?x, ?y), not win(?y); win(?x)"#,
        r#"query: a cycle through "not" can't be computed: win -> win
line 1, column 29:
  win(?x) :- imports(?x, ?y), not win(?y); win(?x)
                              ^
fix: a relation can't depend on its own negation: define "win" without "not win(...)""#,
    );
    module_fails(
        &[
            ("a", "x(?a) :- imports(?a, _), not b.y(?a);"),
            ("b", "y(?a) :- a.x(?a);"),
        ],
        r#"modules/a.dl: a cycle through "not" can't be computed: a.x -> b.y -> a.x
line 1, column 26:
  x(?a) :- imports(?a, _), not b.y(?a);
                           ^
fix: "not" reads a relation computed before this one: define "b.y" without reading "a.x""#,
    );
}

#[test]
fn cycle_through_an_aggregate() {
    fails(
        r#"p(?x, ?n) :- pkg(?x, _), ?n = count(?y) : { p(?x, ?y) }; p(?x, ?n)"#,
        r#"query: a cycle through an aggregate can't be computed: p -> p
line 1, column 45:
  p(?x, ?n) :- pkg(?x, _), ?n = count(?y) : { p(?x, ?y) }; p(?x, ?n)
                                              ^
fix: a relation can't aggregate over itself: aggregate over another relation"#,
    );
    fails(
        r#"c(?x, count(?y)) :- d(?x, ?y); d(?x, ?y) :- c(?x, ?y); d(?a, ?b)"#,
        r#"query: a cycle through an aggregate can't be computed: c -> d -> c
line 1, column 21:
  c(?x, count(?y)) :- d(?x, ?y); d(?x, ?y) :- c(?x, ?y); d(?a, ?b)
                      ^
fix: an aggregate reads a relation computed before this one: define "d" without reading "c""#,
    );
}

// --- binds and the goal's clauses -----------------------------------------------------------

#[test]
fn bind_errors() {
    fails_with(
        r#"imports(?a, ?b) => ?a"#,
        &[one("x", "app")],
        r#"query: bind gives a value to ?x, but the goal doesn't use ?x
line 1, column 1:
  imports(?a, ?b) => ?a
  ^
fix: the goal's variables are ?a, ?b"#,
    );
    fails_with(
        r#"pkg("x", _)"#,
        &[one("?a", "app")],
        r#"query: bind gives a value to ?a, but the goal doesn't use ?a
line 1, column 1:
  pkg("x", _)
  ^
fix: the goal has no variables; drop the bind"#,
    );
    fails_with(
        r#"imports(?a, ?b)"#,
        &[one("a", "x"), one("?a", "y")],
        r#"query: bind gives ?a a value twice
line 1, column 1:
  imports(?a, ?b)
  ^
fix: give ?a one value, or one list of values"#,
    );
    fails_with(
        r#"imports(?a, ?b)"#,
        &[("a".to_owned(), Bind::One(Value::Number(f64::NAN)))],
        r#"query: bind gives ?a a number that isn't finite
line 1, column 1:
  imports(?a, ?b)
  ^
fix: give a finite number, a text or a list of them"#,
    );
}

#[test]
fn goal_clause_errors() {
    fails(
        r#"imports(?a, ?b) => ?c"#,
        r#"query: ?c is not a variable of the goal
line 1, column 20:
  imports(?a, ?b) => ?c
                     ^
fix: the goal's variables are ?a, ?b"#,
    );
    fails(
        r#"imports(?a, ?b) => ?a having count(?c) > 1"#,
        r#"query: ?c is not a variable of the goal
line 1, column 36:
  imports(?a, ?b) => ?a having count(?c) > 1
                                     ^
fix: the goal's variables are ?a, ?b"#,
    );
    fails(
        r#"imports(?a, ?b) => ?a having count(?b) > ?z"#,
        r#"query: having compares an aggregate with a constant, not ?z
line 1, column 42:
  imports(?a, ?b) => ?a having count(?b) > ?z
                                           ^
fix: write a number or a "text", or give ?z a value with bind"#,
    );
    fails(
        r#"imports(?a, ?b) => ?a order by ?b"#,
        r#"query: order by ?b, which is not a column
line 1, column 32:
  imports(?a, ?b) => ?a order by ?b
                                 ^
fix: add ?b to the columns after =>, or order by one of them"#,
    );
    fails(
        r#"imports(?a, ?b) => ?a, list(?b) order by list(?b)"#,
        r#"query: list(...) makes a list, which only a goal's columns can hold
line 1, column 42:
  imports(?a, ?b) => ?a, list(?b) order by list(?b)
                                           ^
fix: use count, sum, min or max here, or list(...) after the goal's =>"#,
    );
}

// --- modules --------------------------------------------------------------------------------

#[test]
fn module_errors_render_against_their_file() {
    module_fails(
        &[("deps", "d(?a) :- import(?a, _);")],
        r#"modules/deps.dl: unknown relation "import"; did you mean "imports"?
line 1, column 10:
  d(?a) :- import(?a, _);
           ^
fix: did you mean "imports"?"#,
    );
    module_fails(
        &[("net.pin", "x(?a) :- imports(?a, ?b) ?c > 1;")],
        r#"modules/net/pin.dl: missing "," between literals
line 1, column 25:
  x(?a) :- imports(?a, ?b) ?c > 1;
                          ^
fix: separate the literals with ",""#,
    );
    module_fails(
        &[("a", "x(?a) :- imports(?a, ?b), ?c > 1;")],
        r#"modules/a.dl: ?c in a comparison is not bound by a positive atom of the body
line 1, column 27:
  x(?a) :- imports(?a, ?b), ?c > 1;
                            ^
fix: a comparison tests and never binds: use ?c in a positive atom of the body too"#,
    );
    module_fails(
        &[("a b", "x(?a) :- imports(?a, ?b);")],
        r#"a b: "a b" is not a module path: each segment is an ASCII letter or _ followed by ASCII letters, digits, _ and -"#,
    );
}

#[test]
fn schema() {
    let v = vocab();
    assert_eq!(
        v.module_schema("deps").unwrap(),
        "module deps\ndeps.depends_on(a, b) # Everything a package depends on, directly or through others."
    );
    assert_eq!(v.modules(), ["deps"]);
    assert!(v.relation("deps._step").is_none());
    let d = v.relation("deps.depends_on").unwrap();
    assert_eq!(d.kind, RelationKind::Derived);
    assert_eq!(d.module.as_deref(), Some("deps"));
    assert_eq!(
        d.rules,
        [
            "depends_on(?a, ?b) :- _step(?a, ?b);",
            "depends_on(?a, ?c) :- depends_on(?a, ?b), _step(?b, ?c);"
        ]
    );
    let names: Vec<String> = v.relations().into_iter().map(|r| r.signature()).collect();
    assert_eq!(
        names,
        [
            "imports(src, dst)",
            "pkg(name, license)",
            "deps.depends_on(a, b)"
        ]
    );
    assert_eq!(
        v.relation("str.match").unwrap().signature(),
        "str.match(s, regex)"
    );
    assert_eq!(Vocabulary::builtins().len(), 6);
}

/// A fresh directory under the system's temporary directory.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("strata-check-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn loads_modules_from_a_directory() {
    let src = source();
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/example/modules");
    let v = Vocabulary::load(&src, Some(&fixture)).unwrap();
    assert_eq!(v.modules(), ["deps"]);

    let root = temp_dir("load");
    let modules = root.join("modules");
    std::fs::create_dir_all(modules.join("net")).unwrap();
    std::fs::write(modules.join("deps.dl"), DEPS).unwrap();
    std::fs::write(
        modules.join("net/pin.dl"),
        "# Packages that import nothing.\nleaf(?p) :- pkg(?p, _), not imports(?p, _);\n",
    )
    .unwrap();
    std::fs::write(modules.join("notes.txt"), "not a module").unwrap();
    let v = Vocabulary::load(&src, Some(&modules)).unwrap();
    assert_eq!(v.modules(), ["deps", "net.pin"]);
    assert_eq!(
        v.module_schema("net.pin").unwrap(),
        "module net.pin\nnet.pin.leaf(p) # Packages that import nothing."
    );
    let (_, leaves) = run(&v, "net.pin.leaf(?p)", &[]);
    assert_eq!(leaves, rows(&[&["log"], &["util"]]));

    std::fs::write(
        modules.join("net/pin.dl"),
        "leaf(?p) :- pkg(?p, _), not imprts(?p, _);\n",
    )
    .unwrap();
    let err = Vocabulary::load(&src, Some(&modules)).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"modules/net/pin.dl: unknown relation "imprts"; did you mean "imports"?
line 1, column 29:
  leaf(?p) :- pkg(?p, _), not imprts(?p, _);
                              ^
fix: did you mean "imports"?"#
    );
    assert!(matches!(err, VocabError::Module { .. }));

    let missing = root.join("nowhere");
    let err = Vocabulary::load(&src, Some(&missing)).unwrap_err();
    assert!(matches!(err, VocabError::Io { .. }), "{err}");
    assert!(err.to_string().starts_with(&missing.display().to_string()));
    let _ = std::fs::remove_dir_all(&root);
}

// --- lowering -------------------------------------------------------------------------------

#[test]
fn lowers_the_seed_example() {
    let v = vocab();
    let src = source();
    let c = compile(
        &v,
        &parse_program(r#"deps.depends_on("app", ?d) => ?d"#).unwrap(),
        &[],
    )
    .unwrap();
    assert_eq!(c.goal_vars, ["d"]);
    assert_eq!(c.shape.names, ["d"]);
    assert_eq!(c.shape.columns, [ColumnSpec::Var(0)]);
    assert_eq!(c.base_relations, ["imports"]);
    let names: Vec<&str> = c.ir.relations.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["deps.depends_on", "deps._step", "imports", "goal"]);
    assert_eq!(c.ir.rules.len(), 4);

    let ev = evaluate(&c.ir, &src, &Options::default()).unwrap();
    let value = |t| ev.dict.value(t).unwrap();
    let goal: BTreeSet<Vec<Value>> = ev.relations[c.ir.goal]
        .iter()
        .map(|(_, t)| t.iter().map(|&x| value(x)).collect())
        .collect();
    assert_eq!(goal, rows(&[&["api"], &["log"], &["util"]]));
    let depends_on: BTreeSet<Vec<Value>> = ev.relations[0]
        .iter()
        .map(|(_, t)| t.iter().map(|&x| value(x)).collect())
        .filter(|t: &Vec<Value>| t[0] == Value::text("app"))
        .collect();
    assert_eq!(
        depends_on,
        rows(&[&["app", "api"], &["app", "log"], &["app", "util"]])
    );

    // The answer as the seed prints it, private members named in full.
    let answer = Answer::build(&c.ir, &ev, &c.shape, 0, 2).unwrap();
    assert_eq!(answer.text(), strata_fixtures::example::seed_page());
}

#[test]
fn lowers_only_what_the_goal_reaches() {
    let (c, goal) = run(&vocab(), "pkg(?p, _), not imports(?p, _)", &[]);
    assert_eq!(goal, rows(&[&["log"], &["util"]]));
    assert_eq!(c.ir.rules.len(), 1);
    assert_eq!(c.base_relations, ["pkg", "imports"]);
    let (c, _) = run(
        &vocab(),
        "unused(?x) :- deps.depends_on(?x, _); pkg(?p, _)",
        &[],
    );
    assert_eq!(c.ir.rules.len(), 1);
}

#[test]
fn binds_replace_variables_by_values() {
    let v = vocab();
    let (c, goal) = run(&v, "imports(?from, ?d) => ?d", &[one("from", "api")]);
    assert_eq!(goal, rows(&[&["api", "log"], &["api", "util"]]));
    assert_eq!(c.goal_vars, ["from", "d"]);
    assert_eq!(c.shape.columns, [ColumnSpec::Var(1)]);
    // The value is a constant in the program, never text spliced into it.
    assert!(c.ir.constants.contains(&Value::text("api")));
    assert_eq!(c.program, "imports(?from, ?d) => ?d");

    let (c, goal) = run(
        &v,
        "deps.depends_on(?from, ?d)",
        &[(
            "?from".to_owned(),
            Bind::List(vec![
                Value::text("api"),
                Value::text("log"),
                Value::text("nope"),
            ]),
        )],
    );
    assert_eq!(goal, rows(&[&["api", "log"], &["api", "util"]]));
    assert_eq!(c.shape.names, ["from", "d"]);

    // A bound variable counts as bound for safety: here it is only in a comparison.
    let (_, goal) = run(&v, "imports(?a, ?b), ?a = ?x => ?b", &[one("x", "app")]);
    assert_eq!(goal, rows(&[&["app", "api", "app"]]));

    // A value with a quote and a backslash stays a value.
    let (_, goal) = run(&v, "pkg(?p, ?l)", &[one("p", "a\"b\\c")]);
    assert!(goal.is_empty());
}

#[test]
fn binds_in_aggregates_negations_and_having() {
    let v = vocab();
    let num = Value::Number;
    // The aggregated variable bound to one value: counted as a list of one.
    let (_, goal) = run(
        &v,
        "pkg(?p, _), ?n = count(?d) : { imports(?p, ?d) } => ?p, ?n",
        &[one("d", "log")],
    );
    assert!(goal.contains(&vec![Value::text("api"), num(1.0)]));
    assert!(goal.contains(&vec![Value::text("app"), num(0.0)]));
    // The result bound: the aggregate must equal it.
    let (_, goal) = run(
        &v,
        "pkg(?p, _), ?n = count(?d) : { imports(?p, ?d) } => ?p",
        &[("n".to_owned(), Bind::One(num(2.0)))],
    );
    assert_eq!(
        goal,
        [vec![Value::text("api"), num(2.0)]].into_iter().collect()
    );
    // A list local to an aggregate ranges inside its { }.
    let (c, goal) = run(
        &v,
        "pkg(?p, _), ?n = count(?d) : { imports(?p, ?d) } => ?p, ?n",
        &[(
            "d".to_owned(),
            Bind::List(vec![Value::text("log"), Value::text("util")]),
        )],
    );
    assert_eq!(c.goal_vars, ["p", "n"]);
    assert!(goal.contains(&vec![Value::text("api"), num(2.0)]));
    // A list under `not` makes the variable a goal variable.
    let (c, goal) = run(
        &v,
        "pkg(?p, _), not imports(?p, ?d)",
        &[(
            "d".to_owned(),
            Bind::List(vec![Value::text("log"), Value::text("api")]),
        )],
    );
    assert_eq!(c.goal_vars, ["p", "d"]);
    assert!(!goal.contains(&vec![Value::text("api"), Value::text("log")]));
    assert!(goal.contains(&vec![Value::text("api"), Value::text("api")]));
    // One value under `not`: a constant there.
    let (_, goal) = run(
        &v,
        "pkg(?p, _), not imports(?p, ?d) => ?p",
        &[one("d", "log")],
    );
    assert_eq!(goal.len(), 3);
    // `having` with a bound value.
    let (c, _) = run(
        &v,
        "imports(?a, ?b) => ?a having count(?b) >= ?k",
        &[("k".to_owned(), Bind::One(num(2.0)))],
    );
    assert_eq!(c.shape.having[0].value, num(2.0));
}

#[test]
fn lowers_rules_negation_and_builtins() {
    let v = vocab();
    let (_, goal) = run(
        &v,
        "leaf(?p) :- pkg(?p, _), not imports(?p, ?any); leaf(?p)",
        &[],
    );
    assert_eq!(goal, rows(&[&["log"], &["util"]]));
    let (_, goal) = run(&v, r#"pkg(?p, ?l), str.prefix(?l, "BSD") => ?p"#, &[]);
    assert_eq!(goal, rows(&[&["util", "BSD-3-Clause"]]));
    let (_, goal) = run(&v, "pkg(?p, ?l), absent(?l) => ?p", &[]);
    assert_eq!(goal.len(), 1);
    let (_, goal) = run(&v, r#"pkg(?p, ?l), ?l != "" => ?p"#, &[]);
    assert_eq!(goal.len(), 2);
    let (_, goal) = run(&v, r#"pkg(?p, _), not imports("app", "zzz")"#, &[]);
    assert_eq!(goal.len(), 4);
    let (_, goal) = run(&v, r#"pkg(?p, absent)"#, &[]);
    assert_eq!(goal, rows(&[&["api"]]));
    let (c, goal) = run(&v, r#"imports("app", "api")"#, &[]);
    assert_eq!(c.goal_vars, Vec::<String>::new());
    assert_eq!(goal, [vec![]].into_iter().collect());
}

#[test]
fn lowers_aggregates() {
    let v = vocab();
    let num = |n: f64| Value::Number(n);
    let (c, goal) = run(
        &v,
        "pkg(?p, _), ?n = count(?d) : { imports(?p, ?d) } => ?p, ?n",
        &[],
    );
    assert_eq!(c.goal_vars, ["p", "n"]);
    let expect: BTreeSet<Vec<Value>> = [("api", 2.0), ("app", 1.0), ("log", 0.0), ("util", 0.0)]
        .into_iter()
        .map(|(p, n)| vec![Value::text(p), num(n)])
        .collect();
    assert_eq!(goal, expect);

    let (_, goal) = run(
        &v,
        "fan(?p, count(?d)) :- imports(?p, ?d); fan(?p, ?n)",
        &[],
    );
    let expect: BTreeSet<Vec<Value>> = [("api", 2.0), ("app", 1.0)]
        .into_iter()
        .map(|(p, n)| vec![Value::text(p), num(n)])
        .collect();
    assert_eq!(goal, expect);

    // The same local name in two aggregates: local to each.
    let (_, goal) = run(
        &v,
        "pkg(?p, _), ?out = count(?d) : { imports(?p, ?d) }, ?in = count(?d) : { imports(?d, ?p) } => ?p, ?out, ?in",
        &[],
    );
    assert!(goal.contains(&vec![Value::text("api"), num(2.0), num(1.0)]));

    let (c, _) = run(
        &v,
        "imports(?a, ?b) => ?a, count(?b) having count(?b) > 1 order by count(?b) desc limit 5 offset 1",
        &[],
    );
    let agg = ColumnSpec::Agg {
        func: AggFunc::Count,
        distinct: false,
        var: 1,
    };
    assert_eq!(c.shape.columns, [ColumnSpec::Var(0), agg.clone()]);
    assert_eq!(c.shape.names, ["a", "count(b)"]);
    assert_eq!(c.shape.having[0].aggregate, agg);
    assert_eq!(c.shape.having[0].value, num(1.0));
    assert_eq!(
        c.shape.order,
        [OrderSpec {
            column: agg,
            desc: true
        }]
    );
    assert_eq!((c.shape.limit, c.shape.offset), (Some(5), 1));
}

#[test]
fn lowers_nested_aggregates() {
    let v = vocab();
    // For each package, how many of its imports import something.
    let (_, goal) = run(
        &v,
        "pkg(?p, _), ?n = count(?d) : { imports(?p, ?d), ?k = count(?e) : { imports(?d, ?e) }, ?k > 0 } => ?p, ?n",
        &[],
    );
    assert!(goal.contains(&vec![Value::text("app"), Value::Number(1.0)]));
    assert!(goal.contains(&vec![Value::text("api"), Value::Number(0.0)]));
}

#[test]
fn repeated_existential_under_not() {
    let v = vocab();
    // t holds (app, api, log) and (app, api, util): no tuple repeats its last two values,
    // so every package passes.
    let (_, goal) = run(
        &v,
        "t(?a, ?b, ?c) :- imports(?a, ?b), imports(?b, ?c); pkg(?p, _), not t(?p, ?e, ?e)",
        &[],
    );
    assert_eq!(goal.len(), 4);
}

// --- random programs ------------------------------------------------------------------------

mod random {
    use super::*;
    use proptest::prelude::*;
    use strata_eval::Cell;
    use strata_eval::Diagnostic;
    use strata_eval::internals::EvalError;

    const VARS: [&str; 4] = ["?a", "?b", "?c", "?d"];
    const CONSTS: [&str; 6] = ["\"app\"", "\"api\"", "\"log\"", "1", "absent", "_"];
    /// Relations (name, arity, weight): base, module members (one private), the query's own,
    /// builtins and one unknown name.
    const RELS: [(&str, usize, u32); 9] = [
        ("imports", 2, 15),
        ("pkg", 2, 15),
        ("deps.depends_on", 2, 10),
        ("r", 1, 5),
        ("s", 2, 5),
        ("str.contains", 2, 4),
        ("absent", 1, 4),
        ("deps._step", 2, 1),
        ("nope", 1, 1),
    ];
    /// Relations an anchor atom (the first of a body) reads.
    const ANCHORS: [&str; 3] = ["imports", "pkg", "deps.depends_on"];
    const OPS: [&str; 4] = ["=", "!=", "<", ">="];
    const AGGS: [&str; 5] = ["count", "sum", "min", "max", "count(distinct"];

    fn term() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => (0..VARS.len()).prop_map(|i| VARS[i].to_owned()),
            1 => (0..CONSTS.len()).prop_map(|i| CONSTS[i].to_owned()),
        ]
    }

    fn relation() -> impl Strategy<Value = (&'static str, usize)> {
        let weighted: Vec<(u32, BoxedStrategy<(&'static str, usize)>)> = RELS
            .iter()
            .map(|&(n, a, w)| (w, Just((n, a)).boxed()))
            .collect();
        proptest::strategy::Union::new_weighted(weighted)
    }

    fn atom() -> impl Strategy<Value = String> {
        (
            relation(),
            prop::collection::vec(term(), 3),
            prop::bool::weighted(0.03),
        )
            .prop_map(|((name, arity), terms, extra)| {
                let n = if extra { arity + 1 } else { arity };
                format!("{name}({})", terms[..n].join(", "))
            })
    }

    /// A first literal: a positive atom of a relation that binds its variables.
    fn anchor() -> impl Strategy<Value = String> {
        (0..ANCHORS.len(), term(), term()).prop_map(|(r, a, b)| format!("{}({a}, {b})", ANCHORS[r]))
    }

    fn aggregate() -> impl Strategy<Value = String> {
        (0..AGGS.len(), 0..VARS.len()).prop_map(|(f, v)| {
            let var = VARS[v];
            match AGGS[f].split_once('(') {
                Some((f, _)) => format!("{f}(distinct {var})"),
                None => format!("{}({var})", AGGS[f]),
            }
        })
    }

    fn literal(depth: u32) -> BoxedStrategy<String> {
        let plain = prop_oneof![
            6 => atom(),
            2 => anchor().prop_map(|a| format!("not {a}")),
            2 => (term(), 0..OPS.len(), term()).prop_map(|(l, o, r)| format!("{l} {} {r}", OPS[o])),
        ];
        if depth == 0 {
            return plain.boxed();
        }
        prop_oneof![
            8 => plain,
            2 => (
                prop::sample::select(&["?n", "?m"][..]),
                aggregate(),
                anchor(),
                prop::collection::vec(literal(depth - 1), 0..2),
            )
                .prop_map(|(v, agg, first, rest)| {
                    let mut body = vec![first];
                    body.extend(rest);
                    format!("{v} = {agg} : {{ {} }}", body.join(", "))
                }),
        ]
        .boxed()
    }

    fn body() -> impl Strategy<Value = String> {
        (
            prop_oneof![
                3 => (0..ANCHORS.len()).prop_map(|r| format!("{}(?a, ?b)", ANCHORS[r])),
                1 => anchor(),
            ],
            prop::collection::vec(literal(1), 0..3),
        )
            .prop_map(|(first, rest)| {
                let mut body = vec![first];
                body.extend(rest);
                body.join(", ")
            })
    }

    fn program() -> impl Strategy<Value = String> {
        (
            body(),
            prop_oneof![
                2 => Just("s(?a, ?b)".to_owned()),
                1 => aggregate().prop_map(|a| format!("s(?a, {a})")),
            ],
            body(),
            prop::collection::vec(body(), 0..2),
            body(),
            prop::option::of(prop::collection::vec(
                prop_oneof![
                    3 => (0..VARS.len()).prop_map(|i| VARS[i].to_owned()),
                    1 => aggregate(),
                ],
                1..3,
            )),
            prop::option::weighted(0.15, aggregate()),
            prop::option::weighted(0.15, (0..VARS.len(), any::<bool>())),
        )
            .prop_map(
                |(r_body, s_head, s_body, more, goal, columns, having, order)| {
                    let mut text = format!("r(?a) :- {r_body};\n{s_head} :- {s_body};\n");
                    for b in more {
                        text.push_str(&format!("r(?b) :- {b};\n"));
                    }
                    text.push_str(&goal);
                    if let Some(c) = columns {
                        text.push_str(" => ");
                        text.push_str(&c.join(", "));
                    }
                    if let Some(h) = having {
                        text.push_str(&format!(" having {h} >= 1"));
                    }
                    if let Some((v, desc)) = order {
                        let dir = if desc { " desc" } else { "" };
                        text.push_str(&format!(" order by {}{dir} limit 3", VARS[v]));
                    }
                    text
                },
            )
    }

    /// Binds of `?a`, sometimes.
    fn binds() -> impl Strategy<Value = Vec<(String, Bind)>> {
        prop_oneof![
            3 => Just(Vec::new()),
            1 => Just(vec![one("a", "api")]),
            1 => Just(vec![(
                "?a".to_owned(),
                Bind::List(vec![Value::text("app"), Value::text("api"), Value::Number(1.0)]),
            )]),
        ]
    }

    fn check_diagnostic(text: &str, d: &Diagnostic) -> Result<(), TestCaseError> {
        prop_assert!(d.span.end <= text.len(), "{d:?}");
        prop_assert!(text.is_char_boundary(d.span.start) && text.is_char_boundary(d.span.end));
        prop_assert!(!d.message.is_empty() && !d.message.contains('\n'), "{d:?}");
        prop_assert!(d.fix.as_deref().is_some_and(|f| !f.contains('\n')), "{d:?}");
        Ok(())
    }

    fn check(v: &Vocabulary, text: &str, binds: &[(String, Bind)]) -> Result<(), TestCaseError> {
        let Ok(program) = parse_program(text) else {
            return Ok(());
        };
        let c = match compile(v, &program, binds) {
            Ok(c) => c,
            Err(d) => return check_diagnostic(text, &d),
        };
        let src = source();
        let options = Options {
            threads: 2,
            ..Options::default()
        };
        let ev = match evaluate(&c.ir, &src, &options) {
            Ok(ev) => ev,
            // Summing a text is an error only evaluation can find.
            Err(EvalError::Aggregate(_)) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{text}: {e}"))),
        };
        let goal: BTreeSet<Vec<Value>> = ev.relations[c.ir.goal]
            .iter()
            .map(|(_, t)| t.iter().map(|&x| ev.dict.value(x).unwrap()).collect())
            .collect();
        let oracle = match naive::evaluate(&c.ir, &src) {
            Ok(o) => o,
            // The oracle computes aggregates before filters the engine places first, so it may
            // meet a text to sum that the engine never reaches.
            Err(naive::OracleError::Aggregate(_)) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{text}: naive: {e}"))),
        };
        prop_assert_eq!(&oracle[c.ir.goal], &goal, "{}", text);
        if let Some(rewritten) = magic::rewrite(&c.ir) {
            match evaluate(&rewritten, &src, &options) {
                Ok(ev) => {
                    let demand: BTreeSet<Vec<Value>> = ev.relations[rewritten.goal]
                        .iter()
                        .map(|(_, t)| t.iter().map(|&x| ev.dict.value(x).unwrap()).collect())
                        .collect();
                    prop_assert_eq!(&demand, &goal, "demand rewrite of {}", text);
                }
                Err(EvalError::Aggregate(_)) => {}
                Err(e) => return Err(TestCaseError::fail(format!("{text}: demand: {e}"))),
            }
        }
        prop_assert_eq!(c.goal_vars.len(), c.ir.relations[c.ir.goal].arity);
        match Answer::build(&c.ir, &ev, &c.shape, 0, 10) {
            Ok(answer) => {
                // The answer the oracle makes of the oracle's solutions.
                match naive::answer(&oracle[c.ir.goal], &c.shape, 0, 10) {
                    Ok(want) => {
                        let rows: Vec<Vec<naive::Cell>> = answer
                            .rows
                            .iter()
                            .map(|r| {
                                r.cells
                                    .iter()
                                    .map(|c| match c {
                                        Cell::Value(v) => naive::Cell::Value(v.clone()),
                                        Cell::List(vs) => naive::Cell::List(vs.clone()),
                                    })
                                    .collect()
                            })
                            .collect();
                        prop_assert_eq!(&rows, &want.rows, "answer of {}", text);
                        prop_assert_eq!(answer.total, want.total, "total of {}", text);
                        Ok(())
                    }
                    Err(e) => Err(TestCaseError::fail(format!("{text}: naive answer: {e}"))),
                }
            }
            Err(EvalError::Aggregate(_)) => Ok(()),
            Err(e) => Err(TestCaseError::fail(format!("{text}: answer: {e}"))),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 512,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn random_programs_check_or_evaluate_like_the_oracle(text in program(), binds in binds()) {
            check(&vocab(), &text, &binds)?;
        }
    }

    /// How many random programs compile: the generator must reach the evaluator often.
    #[test]
    fn random_programs_often_compile() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let v = vocab();
        let mut runner = TestRunner::deterministic();
        let (mut ok, total) = (0, 400);
        for _ in 0..total {
            let text = program().new_tree(&mut runner).unwrap().current();
            if let Ok(p) = parse_program(&text)
                && compile(&v, &p, &[]).is_ok()
            {
                ok += 1;
            }
        }
        eprintln!("{ok} of {total} compiled");
        assert!(ok * 10 >= total, "only {ok} of {total} compiled");
    }
}

#[test]
fn a_comparison_may_precede_the_aggregate_binding_its_variable() {
    let (_, goal) = run(
        &vocab(),
        "pkg(?p, _), ?k > 1, ?k = count(?e) : { imports(?p, ?e) } => ?p",
        &[],
    );
    assert_eq!(
        goal,
        [vec![Value::text("api"), Value::Number(2.0)]]
            .into_iter()
            .collect()
    );
}

#[test]
fn nested_aggregate_after_a_comparison_on_its_result() {
    let (_, goal) = run(
        &vocab(),
        "pkg(?p, _), ?n = count(?d) : { imports(?p, ?d), ?k > 0, ?k = count(?e) : { imports(?d, ?e) } } => ?p, ?n",
        &[],
    );
    assert!(goal.contains(&vec![Value::text("app"), Value::Number(1.0)]));
}
