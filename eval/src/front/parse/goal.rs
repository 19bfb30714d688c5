//! The goal: its literals, then the columns after `=>` and the `having`, `order by`, `limit`
//! and `offset` clauses, with the errors for a clause out of order or a column left out.

use crate::front::ast::{
    AggFunc, Column, Direction, Goal, Having, Literal, OrderKey, RowCount, Span, Term, Var,
};
use crate::front::diagnostic::Diagnostic;

use super::diagnostic::{keyword_case, uppercase_keyword};
use super::lex::{Tok, is_var_char};
use super::{CLAUSES, ListEnd, PResult, Parser, clause_rank};

impl Parser<'_> {
    /// The goal, after its first literal if already parsed.
    pub(super) fn goal(&mut self, first: Option<Literal>) -> PResult<Goal> {
        let body = self.literals(ListEnd::Goal, 0, first)?;
        let start = body.first().map_or(self.peek().span, Literal::span);
        let mut goal = Goal {
            span: start,
            body,
            columns: None,
            having: Vec::new(),
            order_by: Vec::new(),
            limit: None,
            offset: None,
        };
        if self.at(&Tok::Arrow) {
            let arrow = self.advance();
            goal.columns = Some(self.columns(arrow.span, &goal.body)?);
        }
        // The list parsed last, if the goal ends with one, for "missing ," errors.
        let mut last_list = goal.columns.as_ref().map(|_| "columns");
        // Which of CLAUSES have been given.
        let mut seen = [false; 4];
        loop {
            let token = self.peek().clone();
            match &token.tok {
                Tok::Name(word) if clause_rank(word).is_some() => {
                    let rank = clause_rank(word).unwrap_or(0);
                    if let Some(name) = CLAUSES.get(rank)
                        && seen.get(rank) == Some(&true)
                    {
                        return Err(Diagnostic::new(
                            format!("the goal has a second \"{name}\""),
                            token.span,
                        )
                        .with_fix(format!("give one \"{name}\"")));
                    }
                    if let Some(later) = (rank + 1..4)
                        .find(|&r| seen.get(r) == Some(&true))
                        .and_then(|r| CLAUSES.get(r))
                        && let Some(name) = CLAUSES.get(rank)
                    {
                        return Err(Diagnostic::new(
                            format!("\"{name}\" must come before \"{later}\""),
                            token.span,
                        )
                        .with_fix(
                            "write the goal's clauses in the order having, order by, limit, offset",
                        ));
                    }
                    if let Some(slot) = seen.get_mut(rank) {
                        *slot = true;
                    }
                    match rank {
                        0 => {
                            self.advance();
                            goal.having = self.having()?;
                            last_list = Some("having conditions");
                        }
                        1 => {
                            self.advance();
                            if !self.at_word("by") {
                                return Err(self.error_here_fix(
                                    format!(
                                        "expected \"by\" after \"order\", found {}",
                                        self.found()
                                    ),
                                    "write order by ?x",
                                ));
                            }
                            self.advance();
                            goal.order_by = self.order_keys()?;
                            last_list = Some("order keys");
                        }
                        2 => {
                            self.advance();
                            goal.limit = Some(self.row_count("limit")?);
                            last_list = None;
                        }
                        _ => {
                            self.advance();
                            goal.offset = Some(self.row_count("offset")?);
                            last_list = None;
                        }
                    }
                }
                Tok::Eof => break,
                Tok::Error => return Err(self.error_here("")),
                Tok::Semi => {
                    return Err(if matches!(self.peek_at(1).tok, Tok::Eof) {
                        Diagnostic::new("a goal doesn't end with \";\"", token.span)
                            .with_fix("drop the \";\"")
                    } else {
                        Diagnostic::new(
                            "the goal must come last: only rules end with \";\"",
                            token.span,
                        )
                        .with_fix("move the goal after the rules")
                    });
                }
                Tok::Dot => {
                    return Err(Diagnostic::new("a goal doesn't end with \".\"", token.span)
                        .with_fix("drop the \".\""));
                }
                Tok::Name(w) if keyword_case(w).and_then(clause_rank).is_some() => {
                    return Err(uppercase_keyword(w, token.span));
                }
                Tok::Var(_) if last_list.is_some() => {
                    return Err(self.missing_list_comma(last_list));
                }
                Tok::Name(w)
                    if last_list.is_some()
                        && AggFunc::from_keyword(w).is_some()
                        && self.peek_at(1).tok == Tok::LParen =>
                {
                    return Err(self.missing_list_comma(last_list));
                }
                _ => {
                    let next = seen.iter().rposition(|&s| s).map_or(0, |r| r + 1);
                    let mut expected: String = CLAUSES
                        .get(next..)
                        .unwrap_or(&[])
                        .iter()
                        .map(|c| format!("\"{c}\", "))
                        .collect();
                    if let Some(stripped) = expected.strip_suffix(", ") {
                        expected = format!("{stripped} or ");
                    }
                    return Err(self.error_here(format!(
                        "expected {expected}the end of the query after the goal, found {}",
                        self.found()
                    )));
                }
            }
        }
        goal.span = goal.span.to(Span::empty(self.prev_end()));
        Ok(goal)
    }

    /// The error for a missing `,` in the goal's list of `what`.
    pub(super) fn missing_list_comma(&self, what: Option<&str>) -> Diagnostic {
        let what = what.unwrap_or("columns");
        Diagnostic::new(
            format!("missing \",\" between {what}"),
            Span::empty(self.prev_end()),
        )
        .with_fix(format!("separate the {what} with \",\""))
    }

    /// The columns after `=>`.
    pub(super) fn columns(&mut self, arrow: Span, body: &[Literal]) -> PResult<Vec<Column>> {
        let token = self.peek().clone();
        if token.tok == Tok::LParen {
            let fix = match self.matching_paren() {
                Some(close) => format!(
                    "write the columns without parentheses: => {}",
                    self.snippet(Span::new(token.span.end, close.start))
                ),
                None => "drop the parentheses".to_owned(),
            };
            return Err(Diagnostic::new(
                "the goal's columns follow \"=>\" without parentheses",
                token.span,
            )
            .with_fix(fix));
        }
        let ends = match &token.tok {
            Tok::Eof | Tok::Semi | Tok::Dot => true,
            Tok::Name(w) => clause_rank(w).is_some(),
            _ => false,
        };
        if ends {
            let vars = goal_variables(body);
            let fix = if vars.is_empty() {
                "write the columns after \"=>\", such as => ?x, or drop the \"=>\"".to_owned()
            } else {
                format!(
                    "write the columns after \"=>\", such as => {}, or drop the \"=>\" to answer every variable",
                    vars.join(", ")
                )
            };
            return Err(Diagnostic::new("\"=>\" has no columns after it", arrow).with_fix(fix));
        }
        let mut columns = vec![self.column()?];
        while self.at(&Tok::Comma) {
            let comma = self.advance();
            let ends = match &self.peek().tok {
                Tok::Eof | Tok::Semi => true,
                Tok::Name(w) => clause_rank(w).is_some(),
                _ => false,
            };
            if ends {
                return Err(
                    Diagnostic::new("a \",\" with no column after it", comma.span)
                        .with_fix("drop the \",\" or write a column after it"),
                );
            }
            columns.push(self.column()?);
        }
        Ok(columns)
    }

    /// The span of the `)` matching the `(` at the current token, if any.
    pub(super) fn matching_paren(&self) -> Option<Span> {
        let mut depth = 0usize;
        for token in self.tokens.get(self.pos..)? {
            match token.tok {
                Tok::LParen => depth += 1,
                Tok::RParen => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Some(token.span);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// A column: `?v` or an aggregate.
    pub(super) fn column(&mut self) -> PResult<Column> {
        let token = self.peek().clone();
        match &token.tok {
            Tok::Var(name) => {
                self.advance();
                Ok(Column::Var(Var {
                    name: name.clone(),
                    span: token.span,
                }))
            }
            Tok::Name(w)
                if AggFunc::from_keyword(w).is_some() && self.peek_at(1).tok == Tok::LParen =>
            {
                Ok(Column::Aggregate(self.aggregate()?))
            }
            _ => {
                let d = self.error_here(format!(
                    "a column is a ?variable or an aggregate such as count(?x); found {}",
                    self.found()
                ));
                Err(match &token.tok {
                    Tok::Name(w) if self.peek_at(1).tok == Tok::LParen => d.with_fix(format!(
                        "write the atom {w}(...) before \"=>\" and its variables after it"
                    )),
                    Tok::Name(w) if w.chars().all(is_var_char) => d.with_fix(format!("write ?{w}")),
                    _ => d,
                })
            }
        }
    }

    /// The conditions after `having`.
    pub(super) fn having(&mut self) -> PResult<Vec<Having>> {
        let mut out = Vec::new();
        loop {
            let token = self.peek().clone();
            let is_agg = matches!(&token.tok, Tok::Name(w) if AggFunc::from_keyword(w).is_some())
                && self.peek_at(1).tok == Tok::LParen;
            if !is_agg {
                let d = self.error_here(format!(
                    "\"having\" tests an aggregate, such as having count(?d) > 1; found {}",
                    self.found()
                ));
                return Err(if matches!(token.tok, Tok::Var(_)) {
                    d.with_fix("compare plain variables in the goal's literals, before \"=>\"")
                } else {
                    d
                });
            }
            let aggregate = self.aggregate()?;
            let Tok::Op(op) = self.peek().tok else {
                return Err(self.error_here_fix(
                    format!(
                        "expected a comparison operator after {aggregate}, found {}",
                        self.found()
                    ),
                    "write a condition such as having count(?d) > 1",
                ));
            };
            let op_span = self.advance().span;
            let value = self.term(op.as_str())?;
            out.push(Having {
                span: aggregate.span.to(value.span()),
                aggregate,
                op,
                op_span,
                value,
            });
            if !self.at(&Tok::Comma) {
                return Ok(out);
            }
            self.advance();
        }
    }

    /// The keys after `order by`.
    pub(super) fn order_keys(&mut self) -> PResult<Vec<OrderKey>> {
        let mut out = Vec::new();
        loop {
            let column = self.column()?;
            let mut span = column.span();
            let mut direction = Direction::Asc;
            if self.at_word("asc") || self.at_word("desc") {
                let token = self.advance();
                if self.slice(token.span) == "desc" {
                    direction = Direction::Desc;
                }
                span = span.to(token.span);
            }
            out.push(OrderKey {
                column,
                direction,
                span,
            });
            if !self.at(&Tok::Comma) {
                return Ok(out);
            }
            self.advance();
        }
    }

    /// The whole number after `limit` or `offset`.
    pub(super) fn row_count(&mut self, keyword: &str) -> PResult<RowCount> {
        let token = self.peek().clone();
        let what = if keyword == "limit" {
            "how many rows to answer"
        } else {
            "how many rows to skip"
        };
        if let Tok::Num(_) = token.tok {
            let written = self.slice(token.span);
            if written.bytes().all(|b| b.is_ascii_digit()) {
                self.advance();
                return match written.parse::<u64>() {
                    Ok(value) => Ok(RowCount {
                        value,
                        span: token.span,
                    }),
                    Err(_) => Err(Diagnostic::new(
                        format!("\"{keyword}\" {written} is too large"),
                        token.span,
                    )
                    .with_fix(format!("give at most {}", u64::MAX))),
                };
            }
        }
        Err(self.error_here_fix(
            format!(
                "\"{keyword}\" takes a whole number ({what}), found {}",
                self.found()
            ),
            format!("write {keyword} 10"),
        ))
    }
}

/// The variables of a goal's literals that could be its columns, in order of first
/// appearance: those of positive atoms and aggregate results.
pub(super) fn goal_variables(body: &[Literal]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |v: &Var| {
        let shown = v.to_string();
        if !out.contains(&shown) {
            out.push(shown);
        }
    };
    for literal in body {
        match literal {
            Literal::Atom(atom) => atom.args.iter().filter_map(Term::as_var).for_each(&mut add),
            Literal::Aggregate(a) => add(&a.result),
            Literal::Not { .. } | Literal::Compare(_) => {}
        }
    }
    out
}
