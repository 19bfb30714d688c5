//! Literals and lists of them: atoms, `not` atoms, comparisons and aggregate literals, and
//! the recovery that says what is missing where a list does not end as it should.

use crate::front::ast::{
    AggFunc, AggregateLiteral, CmpOp, Comparison, Literal, Span, Var, write_quoted,
};
use crate::front::diagnostic::Diagnostic;

use super::diagnostic::{
    COMPARISON_IS, LITERAL_IS, TERM_IS, bare_word, keyword_case, uppercase_keyword,
};
use super::lex::Tok;
use super::{ListEnd, MAX_NESTING, Mode, PResult, Parser, clause_rank};

impl Parser<'_> {
    /// Literals separated by `,`, up to (not including) what ends them; `first` is the first
    /// literal when already parsed.
    pub(super) fn literals(
        &mut self,
        end: ListEnd,
        depth: usize,
        first: Option<Literal>,
    ) -> PResult<Vec<Literal>> {
        let mut out = Vec::new();
        match first {
            Some(literal) => out.push(literal),
            None => out.push(self.literal(depth)?),
        }
        loop {
            let token = self.peek().clone();
            match &token.tok {
                Tok::Comma => {
                    self.advance();
                    let dangling = match &self.peek().tok {
                        Tok::Semi | Tok::Eof | Tok::Arrow | Tok::RBrace => true,
                        Tok::Name(w) => {
                            end == ListEnd::Goal
                                && clause_rank(w).is_some()
                                && self.peek_at(1).tok != Tok::LParen
                        }
                        _ => false,
                    };
                    if dangling {
                        return Err(Diagnostic::new(
                            "a \",\" with no literal after it",
                            token.span,
                        )
                        .with_fix("drop the \",\" or write a literal after it"));
                    }
                    out.push(self.literal(depth)?);
                }
                _ => {
                    self.after_literals(end, &out)?;
                    return Ok(out);
                }
            }
        }
    }

    /// Checks what follows a list of literals: returns `Ok` at a token that ends the list
    /// (not consumed), and the right error otherwise.
    pub(super) fn after_literals(&self, end: ListEnd, literals: &[Literal]) -> PResult<()> {
        let token = self.peek();
        if let Some(d) = self.lex_error_here() {
            return Err(d);
        }
        if let Tok::Name(w) = &token.tok
            && end == ListEnd::Goal
            && keyword_case(w).and_then(clause_rank).is_some()
        {
            return Err(uppercase_keyword(w, token.span));
        }
        let missing = |what: &str, fix: &str| {
            Diagnostic::new(
                format!(
                    "missing \"{what}\" {}",
                    match what {
                        ";" => "after the rule",
                        _ => "between literals",
                    }
                ),
                Span::empty(self.prev_end()),
            )
            .with_fix(fix.to_owned())
        };
        let starts_literal = matches!(
            token.tok,
            Tok::Name(_) | Tok::Var(_) | Tok::Wildcard | Tok::Str(_) | Tok::Num(_)
        );
        match end {
            ListEnd::Rule => match &token.tok {
                Tok::Semi => Ok(()),
                Tok::Eof => Err(match self.mode {
                    Mode::Query => missing(";", "end the rule with \";\", then write the goal"),
                    Mode::Module => missing(";", "end the rule with \";\""),
                }),
                Tok::Dot => Err(
                    Diagnostic::new("a rule ends with \";\", not \".\"", token.span)
                        .with_fix("write \";\" in place of \".\""),
                ),
                Tok::Arrow => Err(Diagnostic::new(
                    "\"=>\" belongs to the goal, but this is a rule (it has \":-\")",
                    token.span,
                )
                .with_fix("end the rule with \";\" and write the goal after it")),
                Tok::Turnstile => Err(Diagnostic::new("a second \":-\" in one rule", token.span)
                    .with_fix("end the rule with \";\" before the next rule")),
                _ if starts_literal => {
                    if self.rule_follows() {
                        Err(missing(";", "end each rule with \";\""))
                    } else {
                        Err(missing(",", "separate the literals with \",\""))
                    }
                }
                _ => Err(self.error_here(format!(
                    "expected \",\" or \";\" after a literal, found {}",
                    self.found()
                ))),
            },
            ListEnd::Braces => match &token.tok {
                Tok::RBrace => Ok(()),
                _ if starts_literal => Err(missing(",", "separate the literals with \",\"")),
                _ => Err(self.error_here_fix(
                    format!(
                        "expected \",\" or \"}}\" after a literal of the aggregate, found {}",
                        self.found()
                    ),
                    "close the aggregate's literals with \"}\"",
                )),
            },
            ListEnd::Goal => match &token.tok {
                Tok::Eof | Tok::Arrow | Tok::Semi | Tok::Dot => Ok(()),
                Tok::Name(w) if clause_rank(w).is_some() => Ok(()),
                Tok::Turnstile => {
                    let first = literals.first().map_or(token.span, Literal::span);
                    Err(if literals.len() > 1 {
                        Diagnostic::new(
                            format!(
                                "a rule has one head before \":-\", but this has {}",
                                literals.len()
                            ),
                            first,
                        )
                        .with_fix("write the rule as head(?x) :- body(?x), other(?x);")
                    } else {
                        Diagnostic::new("a rule's head must be an atom, such as a(?x)", first)
                            .with_fix("write the rule as head(?x) :- body(?x);")
                    })
                }
                _ if starts_literal => Err(missing(",", "separate the literals with \",\"")),
                _ => Err(self.error_here(format!(
                    "expected \",\", \"=>\" or the end of the query after a literal, found {}",
                    self.found()
                ))),
            },
        }
    }

    /// Whether the tokens from the current one read as a new rule (a `:-` comes before any
    /// `;`) or as the goal (the input ends first): that is, whether a `;` is missing rather
    /// than a `,`.
    pub(super) fn rule_follows(&self) -> bool {
        let mut depth = 0usize;
        for token in self.tokens.get(self.pos..).unwrap_or(&[]) {
            match token.tok {
                Tok::LParen | Tok::LBrace => depth += 1,
                Tok::RParen | Tok::RBrace => depth = depth.saturating_sub(1),
                Tok::Turnstile | Tok::Arrow if depth == 0 => return true,
                Tok::Semi if depth == 0 => return false,
                Tok::Eof => return self.mode == Mode::Query,
                Tok::Error => return false,
                _ => {}
            }
        }
        false
    }

    /// One literal.
    pub(super) fn literal(&mut self, depth: usize) -> PResult<Literal> {
        let token = self.peek().clone();
        match &token.tok {
            Tok::Name(w) if w == "not" => self.negation(),
            Tok::Name(w)
                if matches!(keyword_case(w), Some("not" | "absent"))
                    && self.peek_at(1).tok != Tok::LParen =>
            {
                Err(uppercase_keyword(w, token.span))
            }
            Tok::Name(_) if self.peek_at(1).tok == Tok::LParen => self.atom().map(Literal::Atom),
            Tok::Name(w) if w != "absent" => {
                if matches!(self.peek_at(1).tok, Tok::Op(_)) {
                    return Err(bare_word(w, token.span));
                }
                let mut fix = format!("write {w}(...) for an atom, or ");
                let _ = write_quoted(&mut fix, w);
                fix.push_str(" for the text");
                Err(Diagnostic::new(
                    format!(
                        "\"{w}\" is a bare word: an atom needs parentheses, as in {w}(...), and {TERM_IS}"
                    ),
                    token.span,
                )
                .with_fix(fix))
            }
            Tok::Var(name)
                if self.peek_at(1).tok == Tok::Op(CmpOp::Eq)
                    && matches!(&self.peek_at(2).tok, Tok::Name(w) if AggFunc::from_keyword(w).is_some())
                    && self.peek_at(3).tok == Tok::LParen =>
            {
                let result = Var {
                    name: name.clone(),
                    span: token.span,
                };
                self.advance();
                self.advance();
                self.aggregate_literal(result, depth)
                    .map(Literal::Aggregate)
            }
            Tok::Var(_) | Tok::Wildcard | Tok::Str(_) | Tok::Num(_) | Tok::Name(_) => {
                self.comparison().map(Literal::Compare)
            }
            Tok::QueryPrefix => Err(
                Diagnostic::new("there's no \"?-\" before a goal", token.span)
                    .with_fix("drop the \"?-\""),
            ),
            Tok::LParen => Err(Diagnostic::new(
                "a literal can't start with \"(\": parentheses only hold an atom's arguments",
                token.span,
            )
            .with_fix("drop the parentheses; literals are joined with \",\"")),
            _ => Err(self.error_here_fix(
                format!("expected a literal, found {}", self.found()),
                LITERAL_IS,
            )),
        }
    }

    /// `not atom`, from `not`.
    pub(super) fn negation(&mut self) -> PResult<Literal> {
        let not = self.advance();
        let token = self.peek().clone();
        match &token.tok {
            Tok::Name(w) if w != "not" && self.peek_at(1).tok == Tok::LParen => {
                let atom = self.atom()?;
                Ok(Literal::Not {
                    span: not.span.to(atom.span),
                    atom,
                })
            }
            Tok::LParen => {
                let fix = match self.matching_paren() {
                    Some(close) => format!(
                        "write not {}",
                        self.snippet(Span::new(token.span.end, close.start))
                    ),
                    None => "write not rel(?a, ?b)".to_owned(),
                };
                Err(Diagnostic::new(
                    "\"not\" takes an atom without parentheses around it",
                    token.span,
                )
                .with_fix(fix))
            }
            Tok::Var(_) | Tok::Wildcard | Tok::Str(_) | Tok::Num(_) => {
                let d = Diagnostic::new("\"not\" negates an atom, not a comparison", not.span);
                Err(match self.comparison() {
                    Ok(c) => d.with_fix(format!(
                        "write the opposite comparison: {} {} {}",
                        c.left,
                        c.op.negated(),
                        c.right
                    )),
                    Err(_) => d.with_fix("write the opposite comparison, such as ?x != ?y"),
                })
            }
            _ => Err(self.error_here(format!(
                "\"not\" takes an atom, such as not rel(?a, ?b); found {}",
                self.found()
            ))),
        }
    }

    /// A comparison, `term op term`.
    pub(super) fn comparison(&mut self) -> PResult<Comparison> {
        let left = self.term_or("a literal")?;
        let Tok::Op(op) = self.peek().tok else {
            return Err(self.error_here_fix(
                format!(
                    "expected a comparison operator after {left}, found {}",
                    self.found()
                ),
                COMPARISON_IS,
            ));
        };
        let op_span = self.advance().span;
        let right = self.term(op.as_str())?;
        if let Tok::Op(next) = self.peek().tok {
            return Err(
                Diagnostic::new("comparisons don't chain", self.peek().span).with_fix(format!(
                    "write two comparisons joined by \",\": {left} {op} {right}, {right} {next} ..."
                )),
            );
        }
        Ok(Comparison {
            span: left.span().to(right.span()),
            left,
            op,
            op_span,
            right,
        })
    }

    /// An aggregate literal, after `?v =`.
    pub(super) fn aggregate_literal(
        &mut self,
        result: Var,
        depth: usize,
    ) -> PResult<AggregateLiteral> {
        let aggregate = self.aggregate()?;
        if !self.at(&Tok::Colon) {
            return Err(self.lex_error_here().unwrap_or_else(|| {
                Diagnostic::new(
                    format!("the aggregate {aggregate} needs the literals it ranges over"),
                    Span::empty(self.prev_end()),
                )
                .with_fix(format!("write {result} = {aggregate} : {{ literals }}"))
            }));
        }
        self.advance();
        let open = self.peek().clone();
        if open.tok != Tok::LBrace {
            return Err(self.error_here_fix(
                format!("expected \"{{\" after \":\", found {}", self.found()),
                format!("write {result} = {aggregate} : {{ literals }}"),
            ));
        }
        if depth + 1 >= MAX_NESTING {
            return Err(Diagnostic::new(
                format!("aggregates nest more than {MAX_NESTING} deep"),
                open.span,
            )
            .with_fix("define the inner aggregate with a rule of its own"));
        }
        self.advance();
        if self.at(&Tok::RBrace) {
            return Err(Diagnostic::new(
                "the aggregate's braces hold no literals",
                self.peek().span,
            )
            .with_fix(format!(
                "write the literals it ranges over, such as {result} = {aggregate} : {{ rel({}) }}",
                aggregate.var
            )));
        }
        if self.at(&Tok::Eof) {
            return Err(Diagnostic::new("the \"{\" here is never closed", open.span)
                .with_fix("write the aggregate's literals, then \"}\""));
        }
        let body = self.literals(ListEnd::Braces, depth + 1, None)?;
        let close = self.advance();
        Ok(AggregateLiteral {
            span: result.span.to(close.span),
            result,
            aggregate,
            body,
        })
    }
}
