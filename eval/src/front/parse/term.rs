//! Atoms and their arguments: terms (variables, strings, numbers, `_`) and aggregates such as
//! `count(?x)`.

use crate::front::ast::{AggFunc, Aggregate, Atom, HeadArg, Name, Span, Term, Var};
use crate::front::diagnostic::Diagnostic;

use super::diagnostic::{TERM_IS, aggregate_in_atom, bare_word};
use super::lex::Tok;
use super::{PResult, Parser};

impl Parser<'_> {
    /// The relation name an atom or head starts with.
    pub(super) fn relation_name(&mut self) -> PResult<Name> {
        let name_token = self.advance();
        let Tok::Name(text) = name_token.tok else {
            return Err(Diagnostic::new("expected a relation name", name_token.span));
        };
        Ok(Name {
            text,
            span: name_token.span,
        })
    }

    /// An atom, from its name.
    pub(super) fn atom(&mut self) -> PResult<Atom> {
        let relation = self.relation_name()?;
        let (args, end) = self.args(&relation, false)?;
        let args = args
            .into_iter()
            .map(|a| match a {
                HeadArg::Term(t) => Ok(t),
                HeadArg::Aggregate(a) => Err(aggregate_in_atom(&a)),
            })
            .collect::<PResult<Vec<Term>>>()?;
        Ok(Atom {
            span: relation.span.to(end),
            relation,
            args,
        })
    }

    /// The parenthesised arguments of an atom or head, from the `(`; returns them and the
    /// span of the `)`.
    pub(super) fn args(
        &mut self,
        relation: &Name,
        allow_aggregates: bool,
    ) -> PResult<(Vec<HeadArg>, Span)> {
        let open = self.advance();
        let mut args = Vec::new();
        if self.at(&Tok::RParen) {
            return Ok((args, self.advance().span));
        }
        loop {
            args.push(self.arg(allow_aggregates)?);
            let token = self.peek().clone();
            match &token.tok {
                Tok::Comma => {
                    self.advance();
                    if self.at(&Tok::RParen) {
                        return Err(Diagnostic::new(
                            "a \",\" with no argument after it",
                            token.span,
                        )
                        .with_fix("drop the \",\" or write an argument after it"));
                    }
                }
                Tok::RParen => return Ok((args, self.advance().span)),
                Tok::Var(_) | Tok::Wildcard | Tok::Str(_) | Tok::Num(_) | Tok::Name(_) => {
                    return Err(Diagnostic::new(
                        "missing \",\" between arguments",
                        Span::empty(self.prev_end()),
                    )
                    .with_fix("separate the arguments with \",\""));
                }
                Tok::Error => return Err(self.error_here("")),
                Tok::Eof
                | Tok::Semi
                | Tok::Arrow
                | Tok::Turnstile
                | Tok::RBrace
                | Tok::LBrace
                | Tok::Dot => {
                    let at = Span::empty(self.prev_end());
                    let (line, column) = open.span.line_col(self.src);
                    let place = if line == at.line_col(self.src).0 {
                        format!("column {column}")
                    } else {
                        format!("line {line}, column {column}")
                    };
                    return Err(Diagnostic::new(
                        format!("missing \")\" to close the arguments of \"{relation}\""),
                        at,
                    )
                    .with_fix(format!("close the \"(\" at {place} with \")\"")));
                }
                _ => {
                    return Err(Diagnostic::new(
                        format!(
                            "expected \",\" or \")\" after an argument of \"{relation}\", found {}",
                            self.found()
                        ),
                        token.span,
                    ));
                }
            }
        }
    }

    /// An argument: a term, or (where `allow_aggregates`, and otherwise to say it is not
    /// allowed) an aggregate.
    pub(super) fn arg(&mut self, allow_aggregates: bool) -> PResult<HeadArg> {
        let token = self.peek().clone();
        if let Tok::Name(w) = &token.tok
            && AggFunc::from_keyword(w).is_some()
            && self.peek_at(1).tok == Tok::LParen
        {
            let aggregate = self.aggregate()?;
            if !allow_aggregates {
                return Err(aggregate_in_atom(&aggregate));
            }
            return Ok(HeadArg::Aggregate(aggregate));
        }
        self.term_or("an argument").map(HeadArg::Term)
    }

    /// A term after `after` (an operator).
    pub(super) fn term(&mut self, after: &str) -> PResult<Term> {
        self.term_or(&format!("\"{after}\""))
    }

    /// A term; `what` names the place for the error when there is none.
    pub(super) fn term_or(&mut self, what: &str) -> PResult<Term> {
        let token = self.peek().clone();
        let term = match &token.tok {
            Tok::Var(name) => Term::Var(Var {
                name: name.clone(),
                span: token.span,
            }),
            Tok::Wildcard => Term::Wildcard(token.span),
            Tok::Str(s) => Term::Text {
                value: s.clone(),
                span: token.span,
            },
            Tok::Num(n) => Term::Number {
                value: *n,
                span: token.span,
            },
            Tok::Name(w) if w == "absent" && self.peek_at(1).tok != Tok::LParen => {
                Term::Absent(token.span)
            }
            Tok::Name(w) if self.peek_at(1).tok == Tok::LParen => {
                return Err(if AggFunc::from_keyword(w).is_some() {
                    Diagnostic::new(
                        format!("an aggregate can't be a term: {w}(...)"),
                        token.span,
                    )
                    .with_fix(format!(
                        "bind it in a body with ?n = {w}(?x) : {{ ... }} and use ?n"
                    ))
                } else {
                    Diagnostic::new(format!("an atom can't be a term: {w}(...)"), token.span)
                        .with_fix(format!(
                            "write {w}(...) as a literal of its own and share a variable with it"
                        ))
                });
            }
            Tok::Name(w) => return Err(bare_word(w, token.span)),
            _ => {
                let message = if what == "an argument" {
                    format!("expected an argument, found {}", self.found())
                } else {
                    format!("expected a term after {what}, found {}", self.found())
                };
                return Err(self.error_here_fix(message, TERM_IS));
            }
        };
        self.advance();
        Ok(term)
    }

    /// An aggregate, from its keyword (followed by `(`).
    pub(super) fn aggregate(&mut self) -> PResult<Aggregate> {
        let keyword = self.advance();
        let func = match &keyword.tok {
            Tok::Name(w) => AggFunc::from_keyword(w),
            _ => None,
        };
        let Some(func) = func else {
            return Err(Diagnostic::new("expected an aggregate", keyword.span));
        };
        self.advance(); // the `(`
        let mut distinct = false;
        if self.at_word("distinct") {
            self.advance();
            distinct = true;
        }
        let token = self.peek().clone();
        let Tok::Var(name) = &token.tok else {
            let example = if distinct {
                format!("{func}(distinct ?x)")
            } else {
                format!("{func}(?x)")
            };
            return Err(self.error_here_fix(
                format!("\"{func}\" takes a ?variable, found {}", self.found()),
                format!("write {example}"),
            ));
        };
        let var = Var {
            name: name.clone(),
            span: token.span,
        };
        self.advance();
        let close = self.peek().clone();
        match close.tok {
            Tok::RParen => {
                self.advance();
                Ok(Aggregate {
                    func,
                    distinct,
                    var,
                    span: keyword.span.to(close.span),
                })
            }
            Tok::Comma => Err(Diagnostic::new(
                format!("\"{func}\" takes one ?variable"),
                close.span,
            )
            .with_fix(format!("write {func}({var})"))),
            _ => Err(self.error_here_fix(
                format!("expected \")\" after {func}({var}, found {}", self.found()),
                format!("write {func}({var})"),
            )),
        }
    }
}
