//! Golden tests: the exact rendered text of every parse error.

use strata_eval::{parse_module, parse_program};

/// Asserts that the query `source` fails with exactly `expected`, rendered with `query`.
#[track_caller]
fn query(source: &str, expected: &str) {
    match parse_program(source) {
        Ok(p) => panic!("{source:?} parsed as {p}"),
        Err(d) => assert_eq!(d.render("query", source), expected, "source: {source:?}"),
    }
}

/// Asserts that the module `source` fails with exactly `expected`, rendered with `deps.dl`.
#[track_caller]
fn module(source: &str, expected: &str) {
    match parse_module(source) {
        Ok(m) => panic!("{source:?} parsed as {m}"),
        Err(d) => assert_eq!(d.render("deps.dl", source), expected, "source: {source:?}"),
    }
}

#[test]
fn lexical_errors() {
    query(
        r##"a(?x), ?x <> 3"##,
        r##"query: there's no "<>" operator
line 1, column 11:
  a(?x), ?x <> 3
            ^
fix: write != for not equal"##,
    );
    query(
        r##"a(?x), ?x == 3"##,
        r##"query: there's no "==" operator
line 1, column 11:
  a(?x), ?x == 3
            ^
fix: write = to compare"##,
    );
    query(
        r##"a(?x), ?x =< 3"##,
        r##"query: there's no "=<" operator
line 1, column 11:
  a(?x), ?x =< 3
            ^
fix: write <= for less than or equal"##,
    );
    query(
        r##"a(?x), !b(?x)"##,
        r##"query: unexpected "!"
line 1, column 8:
  a(?x), !b(?x)
         ^
fix: write != for not equal, or not before an atom to negate it"##,
    );
    query(
        r##"a(.5)"##,
        r##"query: ".5" is not a number
line 1, column 3:
  a(.5)
    ^
fix: write a digit before the ".": 0.5"##,
    );
    query(
        r##"a(+5)"##,
        r##"query: a number has no "+" sign
line 1, column 3:
  a(+5)
    ^
fix: write 5"##,
    );
    query(
        r##"a(?x) // comment"##,
        r##"query: comments start with "#"
line 1, column 7:
  a(?x) // comment
        ^
fix: write # before the comment; it runs to the end of the line"##,
    );
    query(
        r##"a(?x) % comment"##,
        r##"query: comments start with "#"
line 1, column 7:
  a(?x) % comment
        ^
fix: write # before the comment; it runs to the end of the line"##,
    );
    query(
        r##"a(?x), ?x = ü"##,
        r##"query: unexpected character "ü": names and variables use ASCII letters, digits and _
line 1, column 13:
  a(?x), ?x = ü
              ^
fix: write non-ASCII text inside a "string""##,
    );
    query(
        r##"a(?x) @"##,
        r##"query: unexpected character "@"
line 1, column 7:
  a(?x) @
        ^"##,
    );
    query(
        r##"imports("api, ?d) => ?d"##,
        r##"query: unterminated string: it has no closing "
line 1, column 9:
  imports("api, ?d) => ?d
          ^
fix: close the string with " (write \" for a quote inside it)"##,
    );
    query(
        r##"a("x\"##,
        r##"query: unterminated string: it has no closing "
line 1, column 3:
  a("x\
    ^
fix: close the string with " (write \" for a quote inside it)"##,
    );
    query(
        r##"a("x\n")"##,
        r##"query: unknown escape "\n" in a string
line 1, column 5:
  a("x\n")
      ^
fix: only \" and \\ escape in a string; write \\ for a backslash"##,
    );
    query(
        r##"a('x')"##,
        r##"query: strings are written in double quotes
line 1, column 3:
  a('x')
    ^
fix: write "x""##,
    );
    query(
        r##"a('x)"##,
        r##"query: strings are written in double quotes
line 1, column 3:
  a('x)
    ^
fix: write the string in double quotes: "text""##,
    );
    query(
        r##"a(?a-b)"##,
        r##"query: "?a-b" is not a variable: a variable's name is ASCII letters, digits and _
line 1, column 3:
  a(?a-b)
    ^
fix: write ?a_b"##,
    );
    query(
        r##"a(?)"##,
        r##"query: a variable needs a name after "?"
line 1, column 3:
  a(?)
    ^
fix: write ?name, such as ?x"##,
    );
    query(
        r##"a(12abc)"##,
        r##"query: "12abc" is not a number
line 1, column 3:
  a(12abc)
    ^
fix: a number is written like -12, 3.5 or 1e6; for the text, write "12abc""##,
    );
    query(
        r##"a(1e999)"##,
        r##"query: the number 1e999 is out of range
line 1, column 3:
  a(1e999)
    ^
fix: numbers are 64-bit floating point, at most about 1.8e308 in size"##,
    );
    query(
        r##"café(?x)"##,
        r##"query: "café" is not a name: names use ASCII letters, digits, _ and -
line 1, column 1:
  café(?x)
  ^
fix: write the text in a string: "café""##,
    );
}

#[test]
fn programs_and_rules() {
    query(
        "",
        "query: the query is empty: it has no goal\nline 1, column 1:\n  \n  ^\nfix: write a goal: literals, then => and the columns, such as rel(\"x\", ?y) => ?y",
    );
    query(
        r##"# only a comment"##,
        r##"query: the query is empty: it has no goal
line 1, column 1:
  # only a comment
  ^
fix: write a goal: literals, then => and the columns, such as rel("x", ?y) => ?y"##,
    );
    query(
        r##"a(?x) :- b(?x);"##,
        r##"query: the query has no goal after its rules
line 1, column 16:
  a(?x) :- b(?x);
                 ^
fix: write the goal after the rules, such as a(?x)"##,
    );
    query(
        r##"total(count(?x)) :- b(?x);"##,
        r##"query: the query has no goal after its rules
line 1, column 27:
  total(count(?x)) :- b(?x);
                            ^
fix: write the goal after the rules"##,
    );
    module(
        r##"x(?a) => ?a"##,
        r##"deps.dl: a module holds rules only, never a goal
line 1, column 1:
  x(?a) => ?a
  ^
fix: write a rule, x(...) :- body;, or ask the goal in a query"##,
    );
    query(
        r##"?- imports("api", ?d) => ?d"##,
        r##"query: there's no "?-" before a goal
line 1, column 1:
  ?- imports("api", ?d) => ?d
  ^
fix: drop the "?-": imports("api", ?d) => ?d"##,
    );
    query(
        r##"a(?x), ?- b(?x)"##,
        r##"query: there's no "?-" before a goal
line 1, column 8:
  a(?x), ?- b(?x)
         ^
fix: drop the "?-""##,
    );
    query(
        r##":- a(?x)"##,
        r##"query: a rule needs a head before ":-"
line 1, column 1:
  :- a(?x)
  ^
fix: write the rule as head(?x) :- body(?x);"##,
    );
    query(
        r##"=> ?x"##,
        r##"query: the goal has no literals before "=>"
line 1, column 1:
  => ?x
  ^
fix: write the literals first, such as rel(?a, ?b) => ?a"##,
    );
    module(
        r##"?x < 3"##,
        r##"deps.dl: a module holds only rules; expected a rule's head, found ?x
line 1, column 1:
  ?x < 3
  ^
fix: write a rule: head(?x) :- body(?x);"##,
    );
    module(
        r##"deps.x(?a) :- b(?a);"##,
        r##"deps.dl: a module's rule defines a bare name, not "deps.x"
line 1, column 1:
  deps.x(?a) :- b(?a);
  ^
fix: write x(...) :- ... (the module's path is added to the name)"##,
    );
    query(
        r##"a(?x) :- ;"##,
        r##"query: the rule for "a" has no body after ":-"
line 1, column 9:
  a(?x) :- ;
          ^
fix: write the literals it follows from, such as a(?x) :- rel(...);"##,
    );
    query(
        r##"a(?x);
a(?x) => ?x"##,
        r##"query: the rule for "a" has no ":-" and no body
line 1, column 6:
  a(?x);
       ^
fix: a program holds no facts, only rules: write a(?x) :- body;"##,
    );
    module(
        r##"x(?a);"##,
        r##"deps.dl: the rule for "x" has no ":-" and no body
line 1, column 6:
  x(?a);
       ^
fix: a program holds no facts, only rules: write x(?a) :- body;"##,
    );
}

#[test]
fn goal_clauses_and_columns() {
    query(
        r##"a(?x) => ?x limit 5 limit 6"##,
        r##"query: the goal has a second "limit"
line 1, column 21:
  a(?x) => ?x limit 5 limit 6
                      ^
fix: give one "limit""##,
    );
    query(
        r##"a(?x) => ?x limit 5 order by ?x"##,
        r##"query: "order by" must come before "limit"
line 1, column 21:
  a(?x) => ?x limit 5 order by ?x
                      ^
fix: write the goal's clauses in the order having, order by, limit, offset"##,
    );
    query(
        r##"a(?x) => ?x order ?x"##,
        r##"query: expected "by" after "order", found ?x
line 1, column 19:
  a(?x) => ?x order ?x
                    ^
fix: write order by ?x"##,
    );
    query(
        r##"a(?x) => ?x;"##,
        r##"query: a goal doesn't end with ";"
line 1, column 12:
  a(?x) => ?x;
             ^
fix: drop the ";""##,
    );
    query(
        r##"a(?x) => ?x;
b(?x) :- c(?x);"##,
        r##"query: the goal must come last: only rules end with ";"
line 1, column 12:
  a(?x) => ?x;
             ^
fix: move the goal after the rules"##,
    );
    query(
        r##"a(?x) => ?x."##,
        r##"query: a goal doesn't end with "."
line 1, column 12:
  a(?x) => ?x.
             ^
fix: drop the ".""##,
    );
    query(
        r##"a(?x) => ?x ?y"##,
        r##"query: missing "," between columns
line 1, column 12:
  a(?x) => ?x ?y
             ^
fix: separate the columns with ",""##,
    );
    query(
        r##"a(?x) => ?x having count(?x) > 1 count(?x) < 3"##,
        r##"query: missing "," between having conditions
line 1, column 33:
  a(?x) => ?x having count(?x) > 1 count(?x) < 3
                                  ^
fix: separate the having conditions with ",""##,
    );
    query(
        r##"a(?x) => ?x order by ?x asc ?y"##,
        r##"query: missing "," between order keys
line 1, column 28:
  a(?x) => ?x order by ?x asc ?y
                             ^
fix: separate the order keys with ",""##,
    );
    query(
        r##"a(?x) => ?x limit 5 foo"##,
        r##"query: expected "offset" or the end of the query after the goal, found the word "foo"
line 1, column 21:
  a(?x) => ?x limit 5 foo
                      ^"##,
    );
    query(
        "a(?x) => ?x @ ",
        "query: unexpected character \"@\"\nline 1, column 13:\n  a(?x) => ?x @ \n              ^",
    );
    query(
        r##"a(?x) => ?x offset 1 2"##,
        r##"query: expected the end of the query after the goal, found the number 2
line 1, column 22:
  a(?x) => ?x offset 1 2
                       ^"##,
    );
    query(
        r##"a(?x) => ?x foo"##,
        r##"query: expected "having", "order by", "limit", "offset" or the end of the query after the goal, found the word "foo"
line 1, column 13:
  a(?x) => ?x foo
              ^"##,
    );
    query(
        r##"imports(?a, ?b) => (?a, ?b)"##,
        r##"query: the goal's columns follow "=>" without parentheses
line 1, column 20:
  imports(?a, ?b) => (?a, ?b)
                     ^
fix: write the columns without parentheses: => ?a, ?b"##,
    );
    query(
        r##"imports(?a, ?b) => (?a, ?b"##,
        r##"query: the goal's columns follow "=>" without parentheses
line 1, column 20:
  imports(?a, ?b) => (?a, ?b
                     ^
fix: drop the parentheses"##,
    );
    query(
        r##"imports(?a, ?b) =>"##,
        r##"query: "=>" has no columns after it
line 1, column 17:
  imports(?a, ?b) =>
                  ^
fix: write the columns after "=>", such as => ?a, ?b, or drop the "=>" to answer every variable"##,
    );
    query(
        r##"?x = 1 => limit 1"##,
        r##"query: "=>" has no columns after it
line 1, column 8:
  ?x = 1 => limit 1
         ^
fix: write the columns after "=>", such as => ?x, or drop the "=>""##,
    );
    query(
        r##"a(?x) => ?x,"##,
        r##"query: a "," with no column after it
line 1, column 12:
  a(?x) => ?x,
             ^
fix: drop the "," or write a column after it"##,
    );
    query(
        r##"a(?x) => x"##,
        r##"query: a column is a ?variable or an aggregate such as count(?x); found the word "x"
line 1, column 10:
  a(?x) => x
           ^
fix: write ?x"##,
    );
    query(
        r##"a(?x) => b(?x)"##,
        r##"query: a column is a ?variable or an aggregate such as count(?x); found the word "b"
line 1, column 10:
  a(?x) => b(?x)
           ^
fix: write the atom b(...) before "=>" and its variables after it"##,
    );
    query(
        r##"a(?x) => "x""##,
        r##"query: a column is a ?variable or an aggregate such as count(?x); found the string "x"
line 1, column 10:
  a(?x) => "x"
           ^"##,
    );
    query(
        r##"a(?x) having ?x > 3"##,
        r##"query: "having" tests an aggregate, such as having count(?d) > 1; found ?x
line 1, column 14:
  a(?x) having ?x > 3
               ^
fix: compare plain variables in the goal's literals, before "=>""##,
    );
    query(
        r##"a(?x) having 3"##,
        r##"query: "having" tests an aggregate, such as having count(?d) > 1; found the number 3
line 1, column 14:
  a(?x) having 3
               ^"##,
    );
    query(
        r##"a(?x) => ?x having count(?x)"##,
        r##"query: expected a comparison operator after count(?x), found the end of the query
line 1, column 29:
  a(?x) => ?x having count(?x)
                              ^
fix: write a condition such as having count(?d) > 1"##,
    );
    query(
        r##"a(?x) => ?x limit -1"##,
        r##"query: "limit" takes a whole number (how many rows to answer), found the number -1
line 1, column 19:
  a(?x) => ?x limit -1
                    ^
fix: write limit 10"##,
    );
    query(
        r##"a(?x) => ?x limit 2.5"##,
        r##"query: "limit" takes a whole number (how many rows to answer), found the number 2.5
line 1, column 19:
  a(?x) => ?x limit 2.5
                    ^
fix: write limit 10"##,
    );
    query(
        r##"a(?x) => ?x offset"##,
        r##"query: "offset" takes a whole number (how many rows to skip), found the end of the query
line 1, column 19:
  a(?x) => ?x offset
                    ^
fix: write offset 10"##,
    );
    query(
        r##"a(?x) => ?x limit 99999999999999999999999"##,
        r##"query: "limit" 99999999999999999999999 is too large
line 1, column 19:
  a(?x) => ?x limit 99999999999999999999999
                    ^
fix: give at most 18446744073709551615"##,
    );
}

#[test]
fn arguments_terms_and_aggregates() {
    query(
        r##"a(?x,)"##,
        r##"query: a "," with no argument after it
line 1, column 5:
  a(?x,)
      ^
fix: drop the "," or write an argument after it"##,
    );
    query(
        r##"a(?x ?y)"##,
        r##"query: missing "," between arguments
line 1, column 5:
  a(?x ?y)
      ^
fix: separate the arguments with ",""##,
    );
    query(
        r##"a(?x"##,
        r##"query: missing ")" to close the arguments of "a"
line 1, column 5:
  a(?x
      ^
fix: close the "(" at column 2 with ")""##,
    );
    query(
        r##"a(?x :- b(?x);"##,
        r##"query: missing ")" to close the arguments of "a"
line 1, column 5:
  a(?x :- b(?x);
      ^
fix: close the "(" at column 2 with ")""##,
    );
    query(
        r##"a(?x}"##,
        r##"query: missing ")" to close the arguments of "a"
line 1, column 5:
  a(?x}
      ^
fix: close the "(" at column 2 with ")""##,
    );
    query(
        r##"a(?x), ?x < count(?y)"##,
        r##"query: an aggregate can't be a term: count(...)
line 1, column 13:
  a(?x), ?x < count(?y)
              ^
fix: bind it in a body with ?n = count(?x) : { ... } and use ?n"##,
    );
    query(
        r##"a(b(?x))"##,
        r##"query: an atom can't be a term: b(...)
line 1, column 3:
  a(b(?x))
    ^
fix: write b(...) as a literal of its own and share a variable with it"##,
    );
    query(
        r##"imports(api, ?d) => ?d"##,
        r##"query: "api" is a bare word, but a term must be a ?variable, a "string" or a number
line 1, column 9:
  imports(api, ?d) => ?d
          ^
fix: write "api" for the text, or ?api for a variable"##,
    );
    query(
        r##"a(?x), ?x = deps.x"##,
        r##"query: "deps.x" is a bare word, but a term must be a ?variable, a "string" or a number
line 1, column 13:
  a(?x), ?x = deps.x
              ^
fix: write "deps.x" for the text"##,
    );
    query(
        r##"a(,)"##,
        r##"query: expected an argument, found ","
line 1, column 3:
  a(,)
    ^
fix: a term must be a ?variable, a "string" or a number"##,
    );
    query(
        r##"a(?x), ?x <"##,
        r##"query: expected a term after "<", found the end of the query
line 1, column 12:
  a(?x), ?x <
             ^
fix: a term must be a ?variable, a "string" or a number"##,
    );
    query(
        r##"a(?x) => count(_)"##,
        r##"query: "count" takes a ?variable, found "_"
line 1, column 16:
  a(?x) => count(_)
                 ^
fix: write count(?x)"##,
    );
    query(
        r##"a(?x) => count()"##,
        r##"query: "count" takes a ?variable, found ")"
line 1, column 16:
  a(?x) => count()
                 ^
fix: write count(?x)"##,
    );
    query(
        r##"a(?x) => count(distinct)"##,
        r##"query: "count" takes a ?variable, found ")"
line 1, column 24:
  a(?x) => count(distinct)
                         ^
fix: write count(distinct ?x)"##,
    );
    query(
        r##"a(?x) => count(?x, ?y)"##,
        r##"query: "count" takes one ?variable
line 1, column 18:
  a(?x) => count(?x, ?y)
                   ^
fix: write count(?x)"##,
    );
    query(
        r##"a(?x) => count(?x"##,
        r##"query: expected ")" after count(?x, found the end of the query
line 1, column 18:
  a(?x) => count(?x
                   ^
fix: write count(?x)"##,
    );
}

#[test]
fn literal_lists() {
    query(
        "a(?x), ",
        "query: a \",\" with no literal after it\nline 1, column 6:\n  a(?x), \n       ^\nfix: drop the \",\" or write a literal after it",
    );
    query(
        r##"a(?x), => ?x"##,
        r##"query: a "," with no literal after it
line 1, column 6:
  a(?x), => ?x
       ^
fix: drop the "," or write a literal after it"##,
    );
    query(
        r##"a(?x) :- b(?x),;"##,
        r##"query: a "," with no literal after it
line 1, column 15:
  a(?x) :- b(?x),;
                ^
fix: drop the "," or write a literal after it"##,
    );
    query(
        r##"a(?x) :- b(?x)"##,
        r##"query: missing ";" after the rule
line 1, column 15:
  a(?x) :- b(?x)
                ^
fix: end the rule with ";", then write the goal"##,
    );
    module(
        r##"x(?a) :- b(?a)"##,
        r##"deps.dl: missing ";" after the rule
line 1, column 15:
  x(?a) :- b(?a)
                ^
fix: end the rule with ";""##,
    );
    query(
        r##"a(?x) :- b(?x)
c(?x) :- a(?x);
c(?x) => ?x"##,
        r##"query: missing ";" after the rule
line 1, column 15:
  a(?x) :- b(?x)
                ^
fix: end each rule with ";""##,
    );
    query(
        r##"a(?x) :- b(?x)
c(?x) => ?x"##,
        r##"query: missing ";" after the rule
line 1, column 15:
  a(?x) :- b(?x)
                ^
fix: end each rule with ";""##,
    );
    query(
        r##"a(?x) :- b(?x) c(?x);
a(?x)"##,
        r##"query: missing "," between literals
line 1, column 15:
  a(?x) :- b(?x) c(?x);
                ^
fix: separate the literals with ",""##,
    );
    query(
        r##"a(?x), ?n = count(?y) : { b(?y) c(?y) }"##,
        r##"query: missing "," between literals
line 1, column 32:
  a(?x), ?n = count(?y) : { b(?y) c(?y) }
                                 ^
fix: separate the literals with ",""##,
    );
    query(
        r##"a(?x) b(?x)"##,
        r##"query: missing "," between literals
line 1, column 6:
  a(?x) b(?x)
       ^
fix: separate the literals with ",""##,
    );
    query(
        r##"a(?x) :- b(?x)."##,
        r##"query: a rule ends with ";", not "."
line 1, column 15:
  a(?x) :- b(?x).
                ^
fix: write ";" in place of ".""##,
    );
    query(
        r##"a(?x) :- b(?x) => ?x"##,
        r##"query: "=>" belongs to the goal, but this is a rule (it has ":-")
line 1, column 16:
  a(?x) :- b(?x) => ?x
                 ^
fix: end the rule with ";" and write the goal after it"##,
    );
    query(
        r##"a(?x) :- b(?x) :- c(?x);"##,
        r##"query: a second ":-" in one rule
line 1, column 16:
  a(?x) :- b(?x) :- c(?x);
                 ^
fix: end the rule with ";" before the next rule"##,
    );
    query(
        r##"a(?x) :- b(?x) );"##,
        r##"query: expected "," or ";" after a literal, found ")"
line 1, column 16:
  a(?x) :- b(?x) );
                 ^"##,
    );
    query(
        r##"a(?x), ?n = count(?y) : { b(?y) ; c(?y) }"##,
        r##"query: expected "," or "}" after a literal of the aggregate, found ";"
line 1, column 33:
  a(?x), ?n = count(?y) : { b(?y) ; c(?y) }
                                  ^
fix: close the aggregate's literals with "}""##,
    );
    query(
        r##"a(?x), b(?x) :- c(?x); a(?x)"##,
        r##"query: a rule has one head before ":-", but this has 2
line 1, column 1:
  a(?x), b(?x) :- c(?x); a(?x)
  ^
fix: write the rule as head(?x) :- body(?x), other(?x);"##,
    );
    query(
        r##"?x < 3 :- c(?x); a(?x)"##,
        r##"query: a rule's head must be an atom, such as a(?x)
line 1, column 1:
  ?x < 3 :- c(?x); a(?x)
  ^
fix: write the rule as head(?x) :- body(?x);"##,
    );
    query(
        r##"a(?x) )"##,
        r##"query: expected ",", "=>" or the end of the query after a literal, found ")"
line 1, column 7:
  a(?x) )
        ^"##,
    );
    query(
        r##"a(?x) LIMIT 1"##,
        r##"query: keywords are lowercase: "LIMIT" should be "limit"
line 1, column 7:
  a(?x) LIMIT 1
        ^
fix: write limit"##,
    );
    query(
        r##"a(?x), NOT b(?x)"##,
        r##"query: keywords are lowercase: "NOT" should be "not"
line 1, column 8:
  a(?x), NOT b(?x)
         ^
fix: write not"##,
    );
    query(
        r##"imports(?a, ?b), foo"##,
        r##"query: "foo" is a bare word: an atom needs parentheses, as in foo(...), and a term must be a ?variable, a "string" or a number
line 1, column 18:
  imports(?a, ?b), foo
                   ^
fix: write foo(...) for an atom, or "foo" for the text"##,
    );
}

#[test]
fn literals() {
    query(
        r##"(a(?x))"##,
        r##"query: a literal can't start with "(": parentheses only hold an atom's arguments
line 1, column 1:
  (a(?x))
  ^
fix: drop the parentheses; literals are joined with ",""##,
    );
    query(
        r##"a(?x), )"##,
        r##"query: expected a literal, found ")"
line 1, column 8:
  a(?x), )
         ^
fix: a literal is an atom such as rel(?a, ?b), not followed by an atom, a comparison such as ?a != "x", or ?n = count(?b) : { rel(?a, ?b) }"##,
    );
    query(
        r##"a(?x), not (b(?x))"##,
        r##"query: "not" takes an atom without parentheses around it
line 1, column 12:
  a(?x), not (b(?x))
             ^
fix: write not b(?x)"##,
    );
    query(
        r##"a(?x), not ?x = 3"##,
        r##"query: "not" negates an atom, not a comparison
line 1, column 8:
  a(?x), not ?x = 3
         ^
fix: write the opposite comparison: ?x != 3"##,
    );
    query(
        r##"a(?x), not not b(?x)"##,
        r##"query: "not" takes an atom, such as not rel(?a, ?b); found the word "not"
line 1, column 12:
  a(?x), not not b(?x)
             ^"##,
    );
    query(
        r##"a(?x), not b"##,
        r##"query: "not" takes an atom, such as not rel(?a, ?b); found the word "b"
line 1, column 12:
  a(?x), not b
             ^"##,
    );
    query(
        r##"a(?x), ?x"##,
        r##"query: expected a comparison operator after ?x, found the end of the query
line 1, column 10:
  a(?x), ?x
           ^
fix: a comparison is term op term, with op one of < <= = != > >="##,
    );
    query(
        r##"a(?x), ?x => ?x"##,
        r##"query: expected a comparison operator after ?x, found "=>"
line 1, column 11:
  a(?x), ?x => ?x
            ^
fix: a comparison is term op term, with op one of < <= = != > >="##,
    );
    query(
        r##"a(?x), 1 < ?x < 5"##,
        r##"query: comparisons don't chain
line 1, column 15:
  a(?x), 1 < ?x < 5
                ^
fix: write two comparisons joined by ",": 1 < ?x, ?x < ..."##,
    );
    query(
        r##"a(?x), ?n = count(?x)"##,
        r##"query: the aggregate count(?x) needs the literals it ranges over
line 1, column 22:
  a(?x), ?n = count(?x)
                       ^
fix: write ?n = count(?x) : { literals }"##,
    );
    query(
        r##"a(?x), ?n = count(?x) : b(?x)"##,
        r##"query: expected "{" after ":", found the word "b"
line 1, column 25:
  a(?x), ?n = count(?x) : b(?x)
                          ^
fix: write ?n = count(?x) : { literals }"##,
    );
    query(
        r##"a(?x), ?n = count(?x) : {}"##,
        r##"query: the aggregate's braces hold no literals
line 1, column 26:
  a(?x), ?n = count(?x) : {}
                           ^
fix: write the literals it ranges over, such as ?n = count(?x) : { rel(?x) }"##,
    );
    query(
        r##"a(?x), ?n = count(?x) : {"##,
        r##"query: the "{" here is never closed
line 1, column 25:
  a(?x), ?n = count(?x) : {
                          ^
fix: write the aggregate's literals, then "}""##,
    );
    query(
        r##"a(?x), ?n = count(?x) : { b(?x)"##,
        r##"query: expected "," or "}" after a literal of the aggregate, found the end of the query
line 1, column 32:
  a(?x), ?n = count(?x) : { b(?x)
                                 ^
fix: close the aggregate's literals with "}""##,
    );
    query(
        r##"a(count(?x))"##,
        r##"query: an aggregate can't be an atom's argument: count(?x)
line 1, column 3:
  a(count(?x))
    ^
fix: in a body write ?n = count(?x) : { literals }; in the goal write it after "=>""##,
    );
    query(
        r##"a(count(?x)) => ?x"##,
        r##"query: an aggregate can't be an atom's argument: count(?x)
line 1, column 3:
  a(count(?x)) => ?x
    ^
fix: in a body write ?n = count(?x) : { literals }; in the goal write it after "=>""##,
    );
}

#[test]
fn more_places() {
    query(
        r##"a(?x) => ?x count(?y)"##,
        r##"query: missing "," between columns
line 1, column 12:
  a(?x) => ?x count(?y)
             ^
fix: separate the columns with ",""##,
    );
    query(
        r##"pkg(?p, "é"),
	imports(?p, nope) => ?p"##,
        r##"query: "nope" is a bare word, but a term must be a ?variable, a "string" or a number
line 2, column 14:
  	imports(?p, nope) => ?p
  	            ^
fix: write "nope" for the text, or ?nope for a variable"##,
    );
    module(
        r##"x(?a) :- b(?a,"##,
        r##"deps.dl: expected an argument, found the end of the module
line 1, column 15:
  x(?a) :- b(?a,
                ^
fix: a term must be a ?variable, a "string" or a number"##,
    );
}

#[test]
fn inside_arguments() {
    query(
        "a(?x = 1)",
        r##"query: expected "," or ")" after an argument of "a", found "="
line 1, column 6:
  a(?x = 1)
       ^"##,
    );
}

#[test]
fn messages_and_fixes_are_one_line() {
    // Text quoted from the source shows its line breaks as \n.
    query(
        "a(?x), not ?x = \"two\nlines\"",
        r##"query: "not" negates an atom, not a comparison
line 1, column 8:
  a(?x), not ?x = "two
         ^
fix: write the opposite comparison: ?x != "two\nlines""##,
    );
    query(
        "a(?x) => (?x,\n   ?y)",
        r##"query: the goal's columns follow "=>" without parentheses
line 1, column 10:
  a(?x) => (?x,
           ^
fix: write the columns without parentheses: => ?x, ?y"##,
    );
    query(
        "imports(?a,\n  ?b\n=> ?a",
        r##"query: missing ")" to close the arguments of "imports"
line 2, column 5:
    ?b
      ^
fix: close the "(" at line 1, column 8 with ")""##,
    );
}

#[test]
fn nesting_is_bounded() {
    let source = format!("a(?x),\n{}", "?n = count(?x) : {\n".repeat(40));
    query(
        &source,
        r##"query: aggregates nest more than 32 deep
line 33, column 18:
  ?n = count(?x) : {
                   ^
fix: define the inner aggregate with a rule of its own"##,
    );
    // 31 levels are fine.
    let source = format!(
        "a(?x), {}b(?x){}",
        "?n = count(?x) : { ".repeat(31),
        " }".repeat(31)
    );
    assert!(parse_program(&source).is_ok());
}
