//! The Cypher parser: tokens to a [`Query`], refusing what the front end cannot compile with
//! an error that names the construct, points at it and says what to write instead.

use super::ast::{
    Clause, Cmp, Dir, Expr, Ident, Item, Lit, Match, NodePat, Pattern, Query, RelPat, Return,
    StrOp, With,
};
use super::lex::{Tok, Token, lex};
use crate::front::ast::Span;
use crate::front::diagnostic::Diagnostic;

/// The most hops a bounded variable-length relationship may have (`*1..16`).
pub const MAX_HOPS: u32 = 16;

/// The deepest an expression may nest: parentheses, `NOT`s, lists and patterns inside a
/// condition, counted together. Deeper input is refused before it can exhaust the stack of
/// the thread parsing it (a server's worker thread has 2 MiB).
pub const MAX_DEPTH: usize = 32;

/// Parses a read query.
pub fn parse(text: &str) -> Result<Query, Diagnostic> {
    let toks = lex(text)?;
    let mut p = Parser {
        text,
        toks,
        at: 0,
        depth: 0,
    };
    p.query()
}

/// The clauses Cypher has that this front end refuses, each with its message and fix.
const REFUSED: &[(&str, &str, &str)] = &[
    (
        "CREATE",
        "CREATE writes to the graph, and the cypher tool only reads",
        "ask with MATCH ... RETURN; facts are added with `strata ingest`",
    ),
    (
        "MERGE",
        "MERGE writes to the graph, and the cypher tool only reads",
        "ask with MATCH ... RETURN; facts are added with `strata ingest`",
    ),
    (
        "SET",
        "SET writes to the graph, and the cypher tool only reads",
        "ask with MATCH ... RETURN; facts are changed with `strata ingest --replace`",
    ),
    (
        "DELETE",
        "DELETE writes to the graph, and the cypher tool only reads",
        "ask with MATCH ... RETURN; facts are removed with `strata retract`",
    ),
    (
        "DETACH",
        "DETACH DELETE writes to the graph, and the cypher tool only reads",
        "ask with MATCH ... RETURN; facts are removed with `strata retract`",
    ),
    (
        "REMOVE",
        "REMOVE writes to the graph, and the cypher tool only reads",
        "ask with MATCH ... RETURN; facts are changed with `strata ingest --replace`",
    ),
    (
        "FOREACH",
        "FOREACH writes to the graph, and the cypher tool only reads",
        "ask with MATCH ... RETURN",
    ),
    (
        "CALL",
        "CALL (procedures and subqueries) is not supported",
        "write the question as MATCH ... WHERE ... RETURN",
    ),
    (
        "UNWIND",
        "UNWIND is not supported",
        "match the values with WHERE x IN [...] or WHERE x IN $list instead",
    ),
    (
        "UNION",
        "UNION is not supported",
        "ask each part as its own query, or join the conditions with OR in WHERE",
    ),
    (
        "LOAD",
        "LOAD CSV is not supported",
        "ingest the file with `strata ingest`, then MATCH it",
    ),
    (
        "USE",
        "USE is not supported: there is one graph",
        "drop the USE clause",
    ),
];

struct Parser<'a> {
    text: &'a str,
    toks: Vec<Token>,
    at: usize,
    /// How many expressions the one being parsed is nested in.
    depth: usize,
}

type R<T> = Result<T, Diagnostic>;

impl Parser<'_> {
    fn peek(&self) -> &Token {
        let last = self.toks.len().saturating_sub(1);
        &self.toks[self.at.min(last)]
    }

    fn peek_at(&self, k: usize) -> &Token {
        let last = self.toks.len().saturating_sub(1);
        &self.toks[(self.at + k).min(last)]
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.at < self.toks.len() {
            self.at += 1;
        }
        t
    }

    fn kw(&mut self, kw: &str) -> bool {
        if self.peek().is_kw(kw) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn sym(&mut self, s: &str) -> bool {
        if self.peek().is_sym(s) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect_sym(&mut self, s: &str, what: &str) -> R<Span> {
        if self.peek().is_sym(s) {
            return Ok(self.bump().span);
        }
        Err(self.unexpected(&format!("expected \"{s}\" {what}")))
    }

    fn unexpected(&self, message: &str) -> Diagnostic {
        let t = self.peek();
        let found = match &t.tok {
            Tok::End => "the end of the query".to_owned(),
            _ => format!("\"{}\"", &self.text[t.span.start..t.span.end]),
        };
        Diagnostic::new(format!("{message}, found {found}"), t.span)
    }

    fn refuse_clause(&self) -> Option<Diagnostic> {
        let t = self.peek();
        REFUSED
            .iter()
            .find(|(kw, _, _)| t.is_kw(kw))
            .map(|(_, m, f)| Diagnostic::new(*m, t.span).with_fix(*f))
    }

    fn query(&mut self) -> R<Query> {
        let mut clauses = Vec::new();
        let mut withs = 0;
        loop {
            if let Some(d) = self.refuse_clause() {
                return Err(d);
            }
            let t = self.peek().clone();
            if t.is_kw("MATCH") || t.is_kw("OPTIONAL") {
                clauses.push(Clause::Match(self.match_clause()?));
            } else if t.is_kw("WITH") {
                withs += 1;
                if withs > 1 {
                    return Err(Diagnostic::new("only one WITH stage is supported", t.span)
                        .with_fix("fold the stages into one WITH, or ask in two queries"));
                }
                clauses.push(Clause::With(self.with_clause()?));
            } else if t.is_kw("RETURN") {
                if !clauses.iter().any(|c| matches!(c, Clause::Match(_))) {
                    return Err(
                        Diagnostic::new("a query needs a MATCH before RETURN", t.span)
                            .with_fix("MATCH (n:Label) RETURN n.name"),
                    );
                }
                let ret = self.return_clause()?;
                self.sym(";");
                if let Some(d) = self.refuse_clause() {
                    return Err(d);
                }
                if !matches!(self.peek().tok, Tok::End) {
                    return Err(self.unexpected("expected the end of the query after RETURN"));
                }
                return Ok(Query { clauses, ret });
            } else if matches!(t.tok, Tok::End) {
                return Err(Diagnostic::new("a query ends with RETURN", t.span)
                    .with_fix("add RETURN and what to answer, e.g. RETURN n.name"));
            } else {
                return Err(self.unexpected("expected MATCH, OPTIONAL MATCH, WITH or RETURN"));
            }
        }
    }

    fn match_clause(&mut self) -> R<Match> {
        let span = self.peek().span;
        let optional = self.kw("OPTIONAL");
        if !self.kw("MATCH") {
            return Err(self.unexpected("expected MATCH after OPTIONAL"));
        }
        let mut patterns = vec![self.pattern()?];
        while self.sym(",") {
            patterns.push(self.pattern()?);
        }
        let cond = if self.kw("WHERE") {
            Some(self.expr()?)
        } else {
            None
        };
        Ok(Match {
            optional,
            patterns,
            cond,
            span,
        })
    }

    fn with_clause(&mut self) -> R<With> {
        let span = self.bump().span;
        if self.peek().is_kw("DISTINCT") {
            self.bump();
        }
        let items = self.items()?;
        for kw in ["ORDER", "SKIP", "LIMIT"] {
            if self.peek().is_kw(kw) {
                return Err(Diagnostic::new(
                    format!("{kw} after WITH is not supported"),
                    self.peek().span,
                )
                .with_fix("put ORDER BY, SKIP and LIMIT after RETURN"));
            }
        }
        let cond = if self.kw("WHERE") {
            Some(self.expr()?)
        } else {
            None
        };
        Ok(With { items, cond, span })
    }

    fn return_clause(&mut self) -> R<Return> {
        let span = self.bump().span;
        let distinct = self.kw("DISTINCT");
        let items = self.items()?;
        let mut order = Vec::new();
        if self.kw("ORDER") {
            if !self.kw("BY") {
                return Err(self.unexpected("expected BY after ORDER"));
            }
            loop {
                let e = self.expr()?;
                let desc = if self.kw("DESC") || self.kw("DESCENDING") {
                    true
                } else {
                    let _ = self.kw("ASC") || self.kw("ASCENDING");
                    false
                };
                order.push((e, desc));
                if !self.sym(",") {
                    break;
                }
            }
        }
        let skip = if self.kw("SKIP") || self.kw("OFFSET") {
            Some(self.count("SKIP")?)
        } else {
            None
        };
        let limit = if self.kw("LIMIT") {
            Some(self.count("LIMIT")?)
        } else {
            None
        };
        Ok(Return {
            distinct,
            items,
            order,
            skip,
            limit,
            span,
        })
    }

    fn count(&mut self, what: &str) -> R<u64> {
        let t = self.peek().clone();
        match t.tok {
            Tok::Num(n) if n >= 0.0 && n.fract() == 0.0 && n < 1e18 => {
                self.bump();
                Ok(n as u64)
            }
            Tok::Param(_) => Err(Diagnostic::new(
                format!("{what} takes a number written in the query, not a parameter"),
                t.span,
            )
            .with_fix(format!(
                "write the number: {what} 10 (or use the tool's limit)"
            ))),
            _ => Err(self.unexpected(&format!("expected a whole number after {what}"))),
        }
    }

    fn items(&mut self) -> R<Vec<Item>> {
        if self.peek().is_sym("*") {
            return Err(
                Diagnostic::new("* as a list of items is not supported", self.peek().span)
                    .with_fix("name what to answer: RETURN a, b.name"),
            );
        }
        let mut items = Vec::new();
        loop {
            let start = self.peek().span.start;
            let expr = self.expr()?;
            let end = self.toks[self.at.saturating_sub(1)].span.end;
            let text = self.text[start..end.max(start)]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let alias = if self.kw("AS") {
                Some(self.ident("a name after AS")?)
            } else {
                None
            };
            items.push(Item { expr, alias, text });
            if !self.sym(",") {
                return Ok(items);
            }
        }
    }

    fn ident(&mut self, what: &str) -> R<Ident> {
        let t = self.peek().clone();
        match t.tok {
            Tok::Ident(name) | Tok::Quoted(name) => {
                self.bump();
                Ok(Ident { name, span: t.span })
            }
            _ => Err(self.unexpected(&format!("expected {what}"))),
        }
    }

    fn pattern(&mut self) -> R<Pattern> {
        let start = self.peek().span;
        if matches!(self.peek().tok, Tok::Ident(_)) && self.peek_at(1).is_sym("=") {
            return Err(
                Diagnostic::new("path variables (p = ...) are not supported", start)
                    .with_fix("drop \"p =\" and return the nodes of the path by their variables"),
            );
        }
        if self.peek().is_kw("shortestPath") || self.peek().is_kw("allShortestPaths") {
            return Err(Diagnostic::new(
                format!("{} is not supported", &self.text[start.start..start.end]),
                start,
            )
            .with_fix("match a variable-length relationship instead: (a)-[:TYPE*]->(b)"));
        }
        let first = self.node()?;
        let mut steps = Vec::new();
        while self.peek().is_sym("-") || self.peek().is_sym("<-") {
            let rel = self.rel()?;
            let node = self.node()?;
            steps.push((rel, node));
        }
        let end = self.toks[self.at.saturating_sub(1)].span.end;
        Ok(Pattern {
            start: first,
            steps,
            span: Span::new(start.start, end),
        })
    }

    fn node(&mut self) -> R<NodePat> {
        let open = self.expect_sym("(", "to open a node pattern")?;
        let var = match self.peek().tok {
            Tok::Ident(_) | Tok::Quoted(_) => Some(self.ident("a variable")?),
            _ => None,
        };
        let mut labels = Vec::new();
        while self.sym(":") {
            labels.push(self.ident("a label after \":\"")?);
            if self.peek().is_sym("|") {
                return Err(Diagnostic::new("a node pattern takes labels that all hold, not alternatives", self.peek().span)
                    .with_fix("match each label in its own query, or write WHERE n:A OR n:B is not supported either: ask twice"));
            }
        }
        let props = if self.peek().is_sym("{") {
            self.props()?
        } else {
            Vec::new()
        };
        let close = self.expect_sym(")", "to close the node pattern")?;
        Ok(NodePat {
            var,
            labels,
            props,
            span: Span::new(open.start, close.end),
        })
    }

    fn props(&mut self) -> R<Vec<(Ident, Expr)>> {
        self.bump();
        let mut out = Vec::new();
        if self.sym("}") {
            return Ok(out);
        }
        loop {
            let key = self.ident("a property name")?;
            self.expect_sym(":", "after the property name")?;
            let value = self.expr()?;
            out.push((key, value));
            if !self.sym(",") {
                break;
            }
        }
        self.expect_sym("}", "to close the property map")?;
        Ok(out)
    }

    fn rel(&mut self) -> R<RelPat> {
        let start = self.peek().span;
        let left = self.bump().is_sym("<-");
        let mut var = None;
        let mut types = Vec::new();
        let mut length = None;
        let mut props = Vec::new();
        if self.sym("[") {
            if matches!(self.peek().tok, Tok::Ident(_) | Tok::Quoted(_)) {
                var = Some(self.ident("a variable")?);
            }
            if self.sym(":") {
                types.push(self.ident("a relationship type after \":\"")?);
                while self.sym("|") {
                    self.sym(":");
                    types.push(self.ident("a relationship type after \"|\"")?);
                }
            }
            if self.peek().is_sym("*") {
                length = Some(self.length()?);
            }
            if self.peek().is_sym("{") {
                let at = self.peek().span;
                props = self.props()?;
                if !props.is_empty() {
                    return Err(Diagnostic::new("relationships have no properties here", at)
                        .with_fix("drop the property map; properties belong to nodes"));
                }
            }
            self.expect_sym("]", "to close the relationship pattern")?;
        }
        let right = if self.sym("->") {
            true
        } else if self.sym("-") {
            false
        } else {
            return Err(self.unexpected("expected \"-\" or \"->\" to end the relationship"));
        };
        let dir = match (left, right) {
            (true, true) => {
                return Err(
                    Diagnostic::new("a relationship can't point both ways", start)
                        .with_fix("write <-[...]- , -[...]-> or -[...]- (either way)"),
                );
            }
            (true, false) => Dir::Left,
            (false, true) => Dir::Right,
            (false, false) => Dir::Both,
        };
        let end = self.toks[self.at.saturating_sub(1)].span.end;
        Ok(RelPat {
            var,
            types,
            dir,
            length,
            props,
            span: Span::new(start.start, end),
        })
    }

    fn length(&mut self) -> R<(u32, Option<u32>)> {
        let star = self.bump().span;
        let num = |p: &mut Parser<'_>| -> R<Option<u32>> {
            match p.peek().tok {
                Tok::Num(n) if n >= 0.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX) => {
                    p.bump();
                    Ok(Some(n as u32))
                }
                Tok::Num(_) => Err(p.unexpected("expected a whole number of hops")),
                _ => Ok(None),
            }
        };
        let lo = num(self)?;
        let (min, max) = if self.sym("..") {
            (lo.unwrap_or(1), num(self)?)
        } else {
            match lo {
                Some(n) => (n, Some(n)),
                None => (1, None),
            }
        };
        let end = self.toks[self.at.saturating_sub(1)].span.end;
        let span = Span::new(star.start, end);
        if min == 0 {
            return Err(
                Diagnostic::new("a path of zero hops is not supported", span).with_fix(
                    "start at one hop (*1..) and match the start node on its own for zero",
                ),
            );
        }
        if let Some(max) = max {
            if max < min {
                return Err(Diagnostic::new(
                    format!("*{min}..{max} has fewer hops at most than at least"),
                    span,
                )
                .with_fix(format!("write *{max}..{min}")));
            }
            if max > MAX_HOPS {
                return Err(Diagnostic::new(
                    format!("at most {MAX_HOPS} hops may be bounded"),
                    span,
                )
                .with_fix(format!(
                    "leave the bound open (*{min}..) to follow any number of hops"
                )));
            }
        }
        if min > MAX_HOPS {
            return Err(Diagnostic::new(
                format!("at least {MAX_HOPS} hops at most may be asked for"),
                span,
            )
            .with_fix(format!("ask for *{MAX_HOPS}.. or fewer")));
        }
        Ok((min, max))
    }

    // Expressions, loosest first: OR, XOR, AND, NOT, comparison, then terms.

    fn expr(&mut self) -> R<Expr> {
        self.nested(|p| {
            let mut left = p.xor()?;
            while p.kw("OR") {
                let right = p.xor()?;
                left = Expr::Or(Box::new(left), Box::new(right));
            }
            Ok(left)
        })
    }

    /// Runs `parse` one level deeper, refusing past [`MAX_DEPTH`].
    fn nested<T>(&mut self, parse: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        if self.depth >= MAX_DEPTH {
            return Err(Diagnostic::new(
                format!("the expression nests more than {MAX_DEPTH} deep"),
                self.peek().span,
            )
            .with_fix("drop redundant parentheses and NOTs, or split the condition into WITH ... WHERE steps"));
        }
        self.depth += 1;
        let out = parse(self);
        self.depth -= 1;
        out
    }

    fn xor(&mut self) -> R<Expr> {
        let left = self.and()?;
        if self.peek().is_kw("XOR") {
            return Err(Diagnostic::new("XOR is not supported", self.peek().span)
                .with_fix("write (a AND NOT b) OR (NOT a AND b)"));
        }
        Ok(left)
    }

    fn and(&mut self) -> R<Expr> {
        let mut left = self.not()?;
        while self.kw("AND") {
            let right = self.not()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn not(&mut self) -> R<Expr> {
        if self.peek().is_kw("NOT") {
            let span = self.bump().span;
            let e = self.nested(Self::not)?;
            return Ok(Expr::Not(Box::new(e), span));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> R<Expr> {
        let left = self.term()?;
        let t = self.peek().clone();
        let cmp = match &t.tok {
            Tok::Sym("=") => Some(Cmp::Eq),
            Tok::Sym("<>") => Some(Cmp::Ne),
            Tok::Sym("!=") => {
                return Err(Diagnostic::new("Cypher writes \"not equal\" as <>", t.span)
                    .with_fix("write <>"));
            }
            Tok::Sym("<") => Some(Cmp::Lt),
            Tok::Sym("<=") => Some(Cmp::Le),
            Tok::Sym(">") => Some(Cmp::Gt),
            Tok::Sym(">=") => Some(Cmp::Ge),
            _ => None,
        };
        if let Some(op) = cmp {
            self.bump();
            let right = self.term()?;
            if matches!(
                self.peek().tok,
                Tok::Sym("=" | "<>" | "<" | "<=" | ">" | ">=")
            ) {
                return Err(Diagnostic::new("comparisons don't chain", self.peek().span)
                    .with_fix("join them with AND: a < b AND b < c"));
            }
            return Ok(Expr::Cmp(op, Box::new(left), Box::new(right), t.span));
        }
        let str_op = if t.is_sym("=~") {
            self.bump();
            Some(StrOp::Regex)
        } else if t.is_kw("STARTS") || t.is_kw("ENDS") {
            self.bump();
            if !self.kw("WITH") {
                return Err(self.unexpected("expected WITH"));
            }
            Some(if t.is_kw("STARTS") {
                StrOp::Starts
            } else {
                StrOp::Ends
            })
        } else if t.is_kw("CONTAINS") {
            self.bump();
            Some(StrOp::Contains)
        } else {
            None
        };
        if let Some(op) = str_op {
            let right = self.term()?;
            return Ok(Expr::Str(op, Box::new(left), Box::new(right), t.span));
        }
        if t.is_kw("IN") {
            self.bump();
            let right = self.term()?;
            return Ok(Expr::In(Box::new(left), Box::new(right), t.span));
        }
        if t.is_kw("IS") {
            self.bump();
            let not = self.kw("NOT");
            if !self.kw("NULL") {
                return Err(self.unexpected("expected NULL after IS"));
            }
            return Ok(Expr::IsNull(Box::new(left), not, t.span));
        }
        Ok(left)
    }

    fn term(&mut self) -> R<Expr> {
        let e = self.atom()?;
        let t = self.peek().clone();
        if matches!(t.tok, Tok::Sym("+" | "-" | "*" | "/" | "%" | "^")) {
            return Err(
                Diagnostic::new("arithmetic is not supported", t.span).with_fix(
                    "compare stored values directly, or aggregate with count, sum, min or max",
                ),
            );
        }
        if t.is_sym("[") {
            return Err(
                Diagnostic::new("indexing and slicing are not supported", t.span)
                    .with_fix("compare the value itself"),
            );
        }
        Ok(e)
    }

    fn atom(&mut self) -> R<Expr> {
        let t = self.peek().clone();
        match &t.tok {
            Tok::Str(s) => {
                self.bump();
                Ok(Expr::Lit(Lit::Str(s.clone()), t.span))
            }
            Tok::Num(n) => {
                self.bump();
                Ok(Expr::Lit(Lit::Num(*n), t.span))
            }
            Tok::Sym("-") if matches!(self.peek_at(1).tok, Tok::Num(_)) => {
                self.bump();
                let n = match self.bump().tok {
                    Tok::Num(n) => n,
                    _ => 0.0,
                };
                Ok(Expr::Lit(Lit::Num(-n), t.span))
            }
            Tok::Param(name) => {
                self.bump();
                Ok(Expr::Param(Ident {
                    name: name.clone(),
                    span: t.span,
                }))
            }
            Tok::Sym("[") => {
                self.bump();
                let mut items = Vec::new();
                if !self.sym("]") {
                    loop {
                        items.push(self.nested(Self::term)?);
                        if !self.sym(",") {
                            break;
                        }
                    }
                    self.expect_sym("]", "to close the list")?;
                }
                Ok(Expr::List(items, t.span))
            }
            Tok::Sym("{") => Err(Diagnostic::new("maps are not supported as values", t.span)
                .with_fix("compare properties one by one")),
            Tok::Sym("(") => self.paren_or_pattern(),
            Tok::Ident(_) | Tok::Quoted(_) => self.name_expr(),
            _ => Err(self.unexpected("expected a value, a variable or a property")),
        }
    }

    fn paren_or_pattern(&mut self) -> R<Expr> {
        let save = self.at;
        if let Ok(p) = self.pattern()
            && !p.steps.is_empty()
        {
            return Ok(Expr::Pattern(p));
        }
        self.at = save;
        self.bump();
        let e = self.expr()?;
        self.expect_sym(")", "to close the parenthesis")?;
        Ok(e)
    }

    fn name_expr(&mut self) -> R<Expr> {
        let t = self.peek().clone();
        if let Tok::Ident(word) = &t.tok {
            let lower = word.to_ascii_lowercase();
            match lower.as_str() {
                "true" | "false" => {
                    self.bump();
                    return Ok(Expr::Lit(Lit::Bool(lower == "true"), t.span));
                }
                "null" => {
                    self.bump();
                    return Ok(Expr::Lit(Lit::Null, t.span));
                }
                "case" => {
                    return Err(Diagnostic::new("CASE is not supported", t.span)
                        .with_fix("split the cases with OR in WHERE, or ask one query per case"));
                }
                "exists" if self.peek_at(1).is_sym("{") => {
                    return Err(Diagnostic::new(
                        "EXISTS { ... } subqueries are not supported",
                        t.span,
                    )
                    .with_fix(
                        "write the pattern itself as the condition: WHERE (a)-[:TYPE]->(b)",
                    ));
                }
                _ => {}
            }
        }
        let name = self.ident("a name")?;
        if self.peek().is_sym("(") {
            self.bump();
            let distinct = self.kw("DISTINCT");
            let mut star = false;
            let mut args = Vec::new();
            if self.sym("*") {
                star = true;
            } else if !self.peek().is_sym(")") {
                loop {
                    args.push(self.expr()?);
                    if !self.sym(",") {
                        break;
                    }
                }
            }
            self.expect_sym(")", "to close the call")?;
            return Ok(Expr::Call {
                name,
                distinct,
                star,
                args,
            });
        }
        if self.sym(".") {
            let key = self.ident("a property name after \".\"")?;
            if self.peek().is_sym(".") {
                return Err(
                    Diagnostic::new("a property has no properties", self.peek().span)
                        .with_fix("write variable.property"),
                );
            }
            return Ok(Expr::Prop(name, key));
        }
        if self.peek().is_sym(":") {
            return Err(Diagnostic::new(
                "label tests in WHERE are not supported",
                self.peek().span,
            )
            .with_fix("put the label in the pattern: MATCH (n:Label)"));
        }
        Ok(Expr::Var(name))
    }
}
