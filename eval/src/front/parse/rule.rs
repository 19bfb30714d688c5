//! Programs, modules and their rules: the top-level loop that tells a rule from the goal,
//! rule heads and bodies, and the comment lines kept as a module rule's doc.

use crate::front::ast::{Atom, Goal, Head, HeadArg, Literal, Module, Program, Rule, Span, Term};
use crate::front::diagnostic::Diagnostic;

use super::diagnostic::{GOAL_EXAMPLE, aggregate_in_atom, example_head, no_body};
use super::lex::Tok;
use super::{ListEnd, MAX_PROGRAM_RULES, MODULE_FIX, Mode, PResult, Parser};

impl Parser<'_> {
    pub(super) fn program(&mut self) -> PResult<Program> {
        let mut rules: Vec<Rule> = Vec::new();
        loop {
            let token = self.peek().clone();
            match &token.tok {
                Tok::Error => return Err(self.error_here("")),
                Tok::Eof => {
                    return Err(match rules.last() {
                        None => Diagnostic::new("the query is empty: it has no goal", token.span)
                            .with_fix(GOAL_EXAMPLE),
                        Some(rule) => {
                            let fix =
                                if rule.head.args.iter().all(|a| matches!(a, HeadArg::Term(_))) {
                                    format!("write the goal after the rules, such as {}", rule.head)
                                } else {
                                    "write the goal after the rules".to_owned()
                                };
                            Diagnostic::new("the query has no goal after its rules", token.span)
                                .with_fix(fix)
                        }
                    });
                }
                _ => {}
            }
            match self.clause()? {
                Clause::Rule(rule) if rules.len() == MAX_PROGRAM_RULES => {
                    return Err(Diagnostic::new(
                        format!("the program has more than {MAX_PROGRAM_RULES} rules"),
                        rule.span,
                    )
                    .with_fix(MODULE_FIX));
                }
                Clause::Rule(rule) => rules.push(rule),
                Clause::Goal(goal) => return Ok(Program { rules, goal }),
            }
        }
    }

    pub(super) fn module(&mut self) -> PResult<Module> {
        let mut rules = Vec::new();
        loop {
            match self.peek().tok {
                Tok::Error => return Err(self.error_here("")),
                Tok::Eof => return Ok(Module { rules }),
                _ => match self.clause()? {
                    Clause::Rule(rule) => rules.push(rule),
                    // `clause` refuses a goal in a module.
                    Clause::Goal(goal) => {
                        return Err(Diagnostic::new(
                            "a module holds rules only, never a goal",
                            goal.span,
                        ));
                    }
                },
            }
        }
    }

    /// A rule or the goal.
    pub(super) fn clause(&mut self) -> PResult<Clause> {
        let token = self.peek().clone();
        match &token.tok {
            Tok::QueryPrefix => {
                let rest = self.slice(Span::new(token.span.end, self.src.len())).trim();
                let fix = if rest.is_empty() || rest.contains('\n') {
                    "drop the \"?-\"".to_owned()
                } else {
                    format!("drop the \"?-\": {rest}")
                };
                Err(Diagnostic::new("there's no \"?-\" before a goal", token.span).with_fix(fix))
            }
            Tok::Turnstile => Err(
                Diagnostic::new("a rule needs a head before \":-\"", token.span)
                    .with_fix("write the rule as head(?x) :- body(?x);"),
            ),
            Tok::Arrow if self.mode == Mode::Query => Err(Diagnostic::new(
                "the goal has no literals before \"=>\"",
                token.span,
            )
            .with_fix("write the literals first, such as rel(?a, ?b) => ?a")),
            Tok::Name(n) if n != "not" && self.peek_at(1).tok == Tok::LParen => {
                let head = self.head()?;
                if self.at(&Tok::Turnstile) {
                    return self.rule(head).map(Clause::Rule);
                }
                if let Some(d) = self.lex_error_here() {
                    return Err(d);
                }
                if self.mode == Mode::Module {
                    return Err(self.not_a_module_rule(&head));
                }
                if self.at(&Tok::Semi) && !matches!(self.peek_at(1).tok, Tok::Eof) {
                    return Err(no_body(&head, self.peek().span));
                }
                let atom = head_to_atom(head)?;
                self.goal(Some(Literal::Atom(atom))).map(Clause::Goal)
            }
            _ if self.mode == Mode::Module => Err(self.error_here_fix(
                format!(
                    "a module holds only rules; expected a rule's head, found {}",
                    self.found()
                ),
                "write a rule: head(?x) :- body(?x);",
            )),
            _ => self.goal(None).map(Clause::Goal),
        }
    }

    /// The error for a module clause with a head but no `:-`.
    pub(super) fn not_a_module_rule(&self, head: &Head) -> Diagnostic {
        if self.at(&Tok::Semi) {
            return no_body(head, self.peek().span);
        }
        Diagnostic::new("a module holds rules only, never a goal", head.span).with_fix(format!(
            "write a rule, {}(...) :- body;, or ask the goal in a query",
            head.relation
        ))
    }

    /// A rule, from its `:-`.
    pub(super) fn rule(&mut self, head: Head) -> PResult<Rule> {
        if self.mode == Mode::Module && head.relation.is_qualified() {
            return Err(Diagnostic::new(
                format!(
                    "a module's rule defines a bare name, not \"{}\"",
                    head.relation
                ),
                head.relation.span,
            )
            .with_fix(format!(
                "write {}(...) :- ... (the module's path is added to the name)",
                head.relation.last_segment()
            )));
        }
        let doc = self.doc_above(head.span.start);
        let turnstile = self.advance();
        if matches!(self.peek().tok, Tok::Semi | Tok::Eof) {
            return Err(Diagnostic::new(
                format!(
                    "the rule for \"{}\" has no body after \":-\"",
                    head.relation
                ),
                Span::empty(turnstile.span.end),
            )
            .with_fix(format!(
                "write the literals it follows from, such as {} :- rel(...);",
                example_head(&head)
            )));
        }
        let body = self.literals(ListEnd::Rule, 0, None)?;
        let semi = self.advance();
        Ok(Rule {
            doc,
            span: head.span.to(semi.span),
            head,
            body,
        })
    }

    /// The comment lines directly above the line where a rule starting at `start` is written,
    /// when the rule is the first thing on its line.
    pub(super) fn doc_above(&self, start: usize) -> Option<String> {
        let line_start = self
            .src
            .get(..start)
            .and_then(|s| s.rfind('\n'))
            .map_or(0, |i| i + 1);
        if !self
            .src
            .get(line_start..start)
            .unwrap_or("")
            .chars()
            .all(char::is_whitespace)
        {
            return None;
        }
        let mut lines = Vec::new();
        let mut cur = line_start;
        while cur > 0 {
            let newline = cur - 1;
            let prev_start = self
                .src
                .get(..newline)
                .and_then(|s| s.rfind('\n'))
                .map_or(0, |i| i + 1);
            let idx = self.comment_lines.partition_point(|c| c.start < prev_start);
            match self.comment_lines.get(idx) {
                Some(c) if c.start < newline => {
                    let text = self.slice(Span::new(c.start + 1, c.end));
                    let text = text.strip_prefix(' ').unwrap_or(text);
                    lines.push(text.trim_end().to_owned());
                }
                _ => break,
            }
            cur = prev_start;
        }
        if lines.is_empty() {
            return None;
        }
        lines.reverse();
        Some(lines.join("\n"))
    }

    /// A rule's head, or the goal's first atom while it is not yet known which it is.
    pub(super) fn head(&mut self) -> PResult<Head> {
        let relation = self.relation_name()?;
        let (args, end) = self.args(&relation, true)?;
        Ok(Head {
            span: relation.span.to(end),
            relation,
            args,
        })
    }
}

/// A parsed clause of a program.
pub(super) enum Clause {
    Rule(Rule),
    Goal(Goal),
}

/// A head read at the start of the goal, as the goal's first atom.
pub(super) fn head_to_atom(head: Head) -> PResult<Atom> {
    let args = head
        .args
        .into_iter()
        .map(|a| match a {
            HeadArg::Term(t) => Ok(t),
            HeadArg::Aggregate(a) => Err(aggregate_in_atom(&a)),
        })
        .collect::<PResult<Vec<Term>>>()?;
    Ok(Atom {
        relation: head.relation,
        args,
        span: head.span,
    })
}
