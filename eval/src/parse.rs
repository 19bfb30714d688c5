//! The lexer and recursive-descent parser of Strata's query language.
//!
//! [`parse_program`] reads a query program (rules, if any, then one goal) and [`parse_module`]
//! a module file (rules only). Both return the syntax tree of [`crate::ast`] or one
//! [`Diagnostic`] for the first error, with a precise message and, where there is one, a fix.
//! They never panic, whatever the input, and every diagnostic's span lies within the input.
//!
//! The grammar and the choices the language contract leaves open are written down in the
//! project's `docs/language.md`.
//!
//! ```
//! use strata_eval::parse::parse_program;
//!
//! let program = parse_program(r#"deps.depends_on("app", ?d) => ?d"#).unwrap();
//! assert_eq!(program.to_string(), r#"deps.depends_on("app", ?d) => ?d"#);
//!
//! let err = parse_program(r#"?- imports("api", ?d)"#).unwrap_err();
//! assert_eq!(
//!     err.render("query", r#"?- imports("api", ?d)"#),
//!     "query: there's no \"?-\" before a goal\nline 1, column 1:\n  ?- imports(\"api\", ?d)\n  ^\nfix: drop the \"?-\": imports(\"api\", ?d)",
//! );
//! ```

use crate::ast::{
    AggFunc, Aggregate, AggregateLiteral, Atom, CmpOp, Column, Comparison, Direction, Goal, Having,
    Head, HeadArg, Literal, Module, Name, OrderKey, Program, RowCount, Rule, Span, Term, Var,
    write_quoted,
};
use crate::error::Diagnostic;

/// How deeply aggregate literals may nest inside one another.
pub const MAX_NESTING: usize = 32;

/// Parses a query program: `{ rule ";" } goal`.
pub fn parse_program(source: &str) -> Result<Program, Diagnostic> {
    Parser::new(source, Mode::Query).program().map_err(one_line)
}

/// Parses a module file: rules only, no goal. Heads are bare names (no module path), and the
/// comment lines directly above a rule are kept as its [`Rule::doc`].
pub fn parse_module(source: &str) -> Result<Module, Diagnostic> {
    Parser::new(source, Mode::Module).module().map_err(one_line)
}

/// The diagnostic with line breaks in its message and fix (quoted from the source) shown as
/// `\n` and `\r`, so that each is one line.
fn one_line(mut d: Diagnostic) -> Diagnostic {
    let flat = |s: &str| s.replace('\r', "\\r").replace('\n', "\\n");
    if d.message.contains(['\n', '\r']) {
        d.message = flat(&d.message);
    }
    if let Some(fix) = &d.fix
        && fix.contains(['\n', '\r'])
    {
        d.fix = Some(flat(fix));
    }
    d
}

// ---------------------------------------------------------------------------------------------
// Lexer

/// A token's kind and payload.
#[derive(Clone, PartialEq, Debug)]
enum Tok {
    /// A relation name or a keyword: segments of `[A-Za-z_][A-Za-z0-9_-]*` joined by `.`.
    Name(String),
    /// `?name`, without the `?`.
    Var(String),
    /// `_`.
    Wildcard,
    /// A string, unescaped.
    Str(String),
    /// A number.
    Num(f64),
    LParen,
    RParen,
    LBrace,
    RBrace,
    Comma,
    Semi,
    Colon,
    /// `:-`
    Turnstile,
    /// `=>`
    Arrow,
    /// `?-`, which the language does not have; lexed to say so.
    QueryPrefix,
    /// A `.` that is not inside a name.
    Dot,
    Op(CmpOp),
    Eof,
    /// A lexical error; the diagnostic is the parser's `lex_error`.
    Error,
}

/// A token and where it is written.
#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    span: Span,
}

/// The lexer's output: the tokens, ending with `Eof` or with `Error`.
struct Lexed {
    tokens: Vec<Token>,
    error: Option<Diagnostic>,
    /// The comments that are alone on their line, in order.
    comment_lines: Vec<Span>,
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    comment_lines: Vec<Span>,
}

const ASCII_NAMES: &str = "names and variables use ASCII letters, digits and _";
const VAR_NAMES: &str = "a variable's name is ASCII letters, digits and _";

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn is_var_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn lex(src: &str) -> Lexed {
    let mut lexer = Lexer {
        src,
        pos: 0,
        comment_lines: Vec::new(),
    };
    let mut tokens = Vec::new();
    let mut last_end = 0;
    let error = loop {
        match lexer.token() {
            Ok(Some(token)) => {
                last_end = token.span.end;
                tokens.push(token);
            }
            Ok(None) => {
                tokens.push(Token {
                    tok: Tok::Eof,
                    span: Span::empty(last_end),
                });
                break None;
            }
            Err(d) => {
                tokens.push(Token {
                    tok: Tok::Error,
                    span: d.span,
                });
                break Some(d);
            }
        }
    };
    Lexed {
        tokens,
        error,
        comment_lines: lexer.comment_lines,
    }
}

impl Lexer<'_> {
    fn rest(&self) -> &str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek2(&self) -> Option<char> {
        self.rest().chars().nth(1)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn eat_while(&mut self, f: impl Fn(char) -> bool) {
        while let Some(c) = self.peek() {
            if !f(c) {
                break;
            }
            self.pos += c.len_utf8();
        }
    }

    fn text(&self, start: usize) -> &str {
        self.src.get(start..self.pos).unwrap_or("")
    }

    /// Skips whitespace and comments, recording the comments alone on their line.
    fn skip_trivia(&mut self) {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('#') => {
                    let start = self.pos;
                    self.eat_while(|c| c != '\n');
                    let line_start = self
                        .src
                        .get(..start)
                        .and_then(|s| s.rfind('\n'))
                        .map_or(0, |i| i + 1);
                    let before = self.src.get(line_start..start).unwrap_or("");
                    if before.chars().all(char::is_whitespace) {
                        self.comment_lines.push(Span::new(start, self.pos));
                    }
                }
                _ => return,
            }
        }
    }

    /// The next token, `None` at the end of the input.
    fn token(&mut self) -> Result<Option<Token>, Diagnostic> {
        self.skip_trivia();
        let start = self.pos;
        let Some(c) = self.peek() else {
            return Ok(None);
        };
        let tok = match c {
            '(' | ')' | '{' | '}' | ',' | ';' => {
                self.bump();
                match c {
                    '(' => Tok::LParen,
                    ')' => Tok::RParen,
                    '{' => Tok::LBrace,
                    '}' => Tok::RBrace,
                    ',' => Tok::Comma,
                    _ => Tok::Semi,
                }
            }
            '"' => self.string()?,
            '?' => self.var()?,
            '0'..='9' => self.number()?,
            '-' if self.peek2().is_some_and(|c| c.is_ascii_digit()) => self.number()?,
            c if is_name_start(c) => self.word()?,
            ':' => {
                self.bump();
                if self.eat('-') {
                    Tok::Turnstile
                } else {
                    Tok::Colon
                }
            }
            '<' => {
                self.bump();
                if self.eat('=') {
                    Tok::Op(CmpOp::Le)
                } else if self.eat('>') {
                    return Err(Diagnostic::new(
                        "there's no \"<>\" operator",
                        Span::new(start, self.pos),
                    )
                    .with_fix("write != for not equal"));
                } else {
                    Tok::Op(CmpOp::Lt)
                }
            }
            '>' => {
                self.bump();
                if self.eat('=') {
                    Tok::Op(CmpOp::Ge)
                } else {
                    Tok::Op(CmpOp::Gt)
                }
            }
            '=' => {
                self.bump();
                if self.eat('>') {
                    Tok::Arrow
                } else if self.eat('=') {
                    return Err(Diagnostic::new(
                        "there's no \"==\" operator",
                        Span::new(start, self.pos),
                    )
                    .with_fix("write = to compare"));
                } else if self.eat('<') {
                    return Err(Diagnostic::new(
                        "there's no \"=<\" operator",
                        Span::new(start, self.pos),
                    )
                    .with_fix("write <= for less than or equal"));
                } else {
                    Tok::Op(CmpOp::Eq)
                }
            }
            '!' => {
                self.bump();
                if self.eat('=') {
                    Tok::Op(CmpOp::Ne)
                } else {
                    return Err(
                        Diagnostic::new("unexpected \"!\"", Span::new(start, self.pos))
                            .with_fix("write != for not equal, or not before an atom to negate it"),
                    );
                }
            }
            '.' => {
                self.bump();
                if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.eat_while(|c| c.is_ascii_digit());
                    return Err(Diagnostic::new(
                        format!("\"{}\" is not a number", self.text(start)),
                        Span::new(start, self.pos),
                    )
                    .with_fix(format!(
                        "write a digit before the \".\": 0{}",
                        self.text(start)
                    )));
                }
                Tok::Dot
            }
            '+' if self.peek2().is_some_and(|c| c.is_ascii_digit()) => {
                self.bump();
                self.eat_while(|c| c.is_ascii_digit() || c == '.');
                return Err(Diagnostic::new(
                    "a number has no \"+\" sign",
                    Span::new(start, start + 1),
                )
                .with_fix(format!(
                    "write {}",
                    self.src.get(start + 1..self.pos).unwrap_or("")
                )));
            }
            '\'' => return Err(self.single_quoted()),
            '/' if matches!(self.peek2(), Some('/' | '*')) => {
                return Err(Diagnostic::new(
                    "comments start with \"#\"",
                    Span::new(start, start + 2),
                )
                .with_fix("write # before the comment; it runs to the end of the line"));
            }
            '%' => {
                return Err(Diagnostic::new(
                    "comments start with \"#\"",
                    Span::new(start, start + 1),
                )
                .with_fix("write # before the comment; it runs to the end of the line"));
            }
            c => {
                self.bump();
                let span = Span::new(start, self.pos);
                return Err(if c.is_alphanumeric() {
                    Diagnostic::new(format!("unexpected character \"{c}\": {ASCII_NAMES}"), span)
                        .with_fix("write non-ASCII text inside a \"string\"")
                } else {
                    Diagnostic::new(
                        format!("unexpected character \"{}\"", c.escape_default()),
                        span,
                    )
                });
            }
        };
        Ok(Some(Token {
            tok,
            span: Span::new(start, self.pos),
        }))
    }

    /// A string, from its opening quote.
    fn string(&mut self) -> Result<Tok, Diagnostic> {
        let start = self.pos;
        self.bump();
        let mut text = String::new();
        loop {
            let at = self.pos;
            match self.bump() {
                None => {
                    return Err(Diagnostic::new(
                        "unterminated string: it has no closing \"",
                        Span::new(start, start + 1),
                    )
                    .with_fix("close the string with \" (write \\\" for a quote inside it)"));
                }
                Some('"') => return Ok(Tok::Str(text)),
                Some('\\') => match self.bump() {
                    Some(c @ ('"' | '\\')) => text.push(c),
                    None => {
                        return Err(Diagnostic::new(
                            "unterminated string: it has no closing \"",
                            Span::new(start, start + 1),
                        )
                        .with_fix("close the string with \" (write \\\" for a quote inside it)"));
                    }
                    Some(c) => {
                        return Err(Diagnostic::new(
                            format!("unknown escape \"\\{}\" in a string", c.escape_default()),
                            Span::new(at, self.pos),
                        )
                        .with_fix(
                            "only \\\" and \\\\ escape in a string; write \\\\ for a backslash",
                        ));
                    }
                },
                Some(c) => text.push(c),
            }
        }
    }

    /// A string in single quotes, which the language does not have.
    fn single_quoted(&mut self) -> Diagnostic {
        let start = self.pos;
        self.bump();
        let body_start = self.pos;
        self.eat_while(|c| c != '\'' && c != '\n');
        let body = self.src.get(body_start..self.pos).unwrap_or("").to_owned();
        let d = Diagnostic::new(
            "strings are written in double quotes",
            Span::new(start, start + 1),
        );
        if self.eat('\'') {
            let mut fix = String::from("write ");
            let _ = write_quoted(&mut fix, &body);
            d.with_fix(fix)
        } else {
            d.with_fix("write the string in double quotes: \"text\"")
        }
    }

    /// A variable or `?-`, from the `?`.
    fn var(&mut self) -> Result<Tok, Diagnostic> {
        let start = self.pos;
        self.bump();
        if self.eat('-') {
            return Ok(Tok::QueryPrefix);
        }
        let name_start = self.pos;
        self.eat_while(is_var_char);
        let name = self.text(name_start).to_owned();
        let bad = match self.peek() {
            Some(c) if c.is_alphanumeric() && !c.is_ascii() => true,
            Some('-') => self
                .peek2()
                .is_some_and(|c| c.is_alphanumeric() || c == '_'),
            _ => false,
        };
        if bad {
            self.eat_while(|c| c.is_alphanumeric() || c == '_' || c == '-');
            let written = self.text(start).to_owned();
            let fixed: String = written
                .chars()
                .skip(1)
                .map(|c| if is_var_char(c) { c } else { '_' })
                .collect();
            return Err(Diagnostic::new(
                format!("\"{written}\" is not a variable: {VAR_NAMES}"),
                Span::new(start, self.pos),
            )
            .with_fix(format!("write ?{fixed}")));
        }
        if name.is_empty() {
            return Err(Diagnostic::new(
                "a variable needs a name after \"?\"",
                Span::new(start, self.pos),
            )
            .with_fix("write ?name, such as ?x"));
        }
        Ok(Tok::Var(name))
    }

    /// A number, from its `-` or first digit.
    fn number(&mut self) -> Result<Tok, Diagnostic> {
        let start = self.pos;
        self.eat('-');
        self.eat_while(|c| c.is_ascii_digit());
        if self.peek() == Some('.') && self.peek2().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
            self.eat_while(|c| c.is_ascii_digit());
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            let mark = self.pos;
            self.bump();
            if matches!(self.peek(), Some('+' | '-')) {
                self.bump();
            }
            if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.eat_while(|c| c.is_ascii_digit());
            } else {
                self.pos = mark;
            }
        }
        let runs_on = match self.peek() {
            Some(c) if c.is_alphanumeric() || c == '_' => true,
            Some('.') => self.peek2().is_some_and(|c| c.is_alphanumeric()),
            _ => false,
        };
        if runs_on {
            self.eat_while(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '-');
            let written = self.text(start).to_owned();
            let mut fix =
                String::from("a number is written like -12, 3.5 or 1e6; for the text, write ");
            let _ = write_quoted(&mut fix, &written);
            return Err(Diagnostic::new(
                format!("\"{written}\" is not a number"),
                Span::new(start, self.pos),
            )
            .with_fix(fix));
        }
        let written = self.text(start);
        match written.parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(Tok::Num(if n == 0.0 { 0.0 } else { n })),
            _ => Err(Diagnostic::new(
                format!("the number {written} is out of range"),
                Span::new(start, self.pos),
            )
            .with_fix("numbers are 64-bit floating point, at most about 1.8e308 in size")),
        }
    }

    /// A name, a keyword or `_`, from its first character.
    fn word(&mut self) -> Result<Tok, Diagnostic> {
        let start = self.pos;
        loop {
            self.bump();
            self.eat_while(is_name_char);
            if self.peek() == Some('.') && self.peek2().is_some_and(is_name_start) {
                self.bump();
            } else {
                break;
            }
        }
        if let Some(c) = self.peek()
            && c.is_alphanumeric()
            && !c.is_ascii()
        {
            self.eat_while(|c| c.is_alphanumeric() || is_name_char(c));
            let mut fix = String::from("write the text in a string: ");
            let _ = write_quoted(&mut fix, self.text(start));
            return Err(Diagnostic::new(
                format!(
                    "\"{}\" is not a name: names use ASCII letters, digits, _ and -",
                    self.text(start)
                ),
                Span::new(start, self.pos),
            )
            .with_fix(fix));
        }
        let text = self.text(start);
        Ok(if text == "_" {
            Tok::Wildcard
        } else {
            Tok::Name(text.to_owned())
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Parser

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Query,
    Module,
}

/// The clauses that may follow a goal's literals, in the order they must be written.
const CLAUSES: [&str; 4] = ["having", "order by", "limit", "offset"];

/// The rank of a goal clause keyword in [`CLAUSES`].
fn clause_rank(word: &str) -> Option<usize> {
    match word {
        "having" => Some(0),
        "order" => Some(1),
        "limit" => Some(2),
        "offset" => Some(3),
        _ => None,
    }
}

const TERM_IS: &str = "a term must be a ?variable, a \"string\" or a number";
const LITERAL_IS: &str = "a literal is an atom such as rel(?a, ?b), not followed by an atom, a comparison such as ?a != \"x\", or ?n = count(?b) : { rel(?a, ?b) }";
const GOAL_EXAMPLE: &str =
    "write a goal: literals, then => and the columns, such as rel(\"x\", ?y) => ?y";
const COMPARISON_IS: &str = "a comparison is term op term, with op one of < <= = != > >=";

type PResult<T> = Result<T, Diagnostic>;

/// What ends a list of literals.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ListEnd {
    /// A rule's body, ended by `;`.
    Rule,
    /// The goal's literals, ended by `=>`, a clause keyword or the end.
    Goal,
    /// An aggregate's literals, ended by `}`.
    Braces,
}

struct Parser<'a> {
    src: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    lex_error: Option<Diagnostic>,
    comment_lines: Vec<Span>,
    mode: Mode,
    eof: Token,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, mode: Mode) -> Parser<'a> {
        let lexed = lex(src);
        Parser {
            src,
            tokens: lexed.tokens,
            pos: 0,
            lex_error: lexed.error,
            comment_lines: lexed.comment_lines,
            mode,
            eof: Token {
                tok: Tok::Eof,
                span: Span::empty(src.len()),
            },
        }
    }

    // --- token access -------------------------------------------------------------------

    fn peek(&self) -> &Token {
        self.peek_at(0)
    }

    fn peek_at(&self, n: usize) -> &Token {
        let last = self.tokens.len().saturating_sub(1);
        self.tokens
            .get((self.pos + n).min(last))
            .unwrap_or(&self.eof)
    }

    fn at(&self, tok: &Tok) -> bool {
        &self.peek().tok == tok
    }

    /// Whether the current token is the single-segment word `word`.
    fn at_word(&self, word: &str) -> bool {
        matches!(&self.peek().tok, Tok::Name(n) if n == word)
    }

    fn advance(&mut self) -> Token {
        let token = self.peek().clone();
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        token
    }

    /// The end of the previous token: where a missing token goes.
    fn prev_end(&self) -> usize {
        match self.pos.checked_sub(1).and_then(|i| self.tokens.get(i)) {
            Some(t) => t.span.end,
            None => 0,
        }
    }

    fn slice(&self, span: Span) -> &'a str {
        self.src.get(span.start..span.end).unwrap_or("")
    }

    /// The source text in `span` as one line, runs of whitespace collapsed to one space.
    fn snippet(&self, span: Span) -> String {
        self.slice(span)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The lexer's error, if the current token is where it stopped.
    fn lex_error_here(&self) -> Option<Diagnostic> {
        if self.at(&Tok::Error) {
            self.lex_error.clone()
        } else {
            None
        }
    }

    /// `message` with `fix` at the current token, unless the current token is a lexical error.
    fn error_here_fix(&self, message: impl Into<String>, fix: impl Into<String>) -> Diagnostic {
        self.lex_error_here()
            .unwrap_or_else(|| Diagnostic::new(message, self.peek().span).with_fix(fix))
    }

    /// `message` at the current token, unless the current token is a lexical error.
    fn error_here(&self, message: impl Into<String>) -> Diagnostic {
        self.lex_error_here()
            .unwrap_or_else(|| Diagnostic::new(message, self.peek().span))
    }

    fn describe(&self, token: &Token) -> String {
        match &token.tok {
            Tok::Name(n) => format!("the word \"{n}\""),
            Tok::Var(v) => format!("?{v}"),
            Tok::Wildcard => "\"_\"".to_owned(),
            Tok::Str(s) => {
                let mut out = String::from("the string ");
                if s.chars().count() > 24 {
                    let short: String = s.chars().take(20).collect();
                    let _ = write_quoted(&mut out, &short);
                    out.insert_str(out.len() - 1, "...");
                } else {
                    let _ = write_quoted(&mut out, s);
                }
                out
            }
            Tok::Num(_) => format!("the number {}", self.slice(token.span)),
            Tok::LParen => "\"(\"".to_owned(),
            Tok::RParen => "\")\"".to_owned(),
            Tok::LBrace => "\"{\"".to_owned(),
            Tok::RBrace => "\"}\"".to_owned(),
            Tok::Comma => "\",\"".to_owned(),
            Tok::Semi => "\";\"".to_owned(),
            Tok::Colon => "\":\"".to_owned(),
            Tok::Turnstile => "\":-\"".to_owned(),
            Tok::Arrow => "\"=>\"".to_owned(),
            Tok::QueryPrefix => "\"?-\"".to_owned(),
            Tok::Dot => "\".\"".to_owned(),
            Tok::Op(op) => format!("\"{op}\""),
            Tok::Eof | Tok::Error => match self.mode {
                Mode::Query => "the end of the query".to_owned(),
                Mode::Module => "the end of the module".to_owned(),
            },
        }
    }

    fn found(&self) -> String {
        self.describe(self.peek())
    }

    // --- programs and modules -----------------------------------------------------------

    fn program(&mut self) -> PResult<Program> {
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
                Clause::Rule(rule) => rules.push(rule),
                Clause::Goal(goal) => return Ok(Program { rules, goal }),
            }
        }
    }

    fn module(&mut self) -> PResult<Module> {
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
    fn clause(&mut self) -> PResult<Clause> {
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
    fn not_a_module_rule(&self, head: &Head) -> Diagnostic {
        if self.at(&Tok::Semi) {
            return no_body(head, self.peek().span);
        }
        Diagnostic::new("a module holds rules only, never a goal", head.span).with_fix(format!(
            "write a rule, {}(...) :- body;, or ask the goal in a query",
            head.relation
        ))
    }

    /// A rule, from its `:-`.
    fn rule(&mut self, head: Head) -> PResult<Rule> {
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
    fn doc_above(&self, start: usize) -> Option<String> {
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

    /// The goal, after its first literal if already parsed.
    fn goal(&mut self, first: Option<Literal>) -> PResult<Goal> {
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
    fn missing_list_comma(&self, what: Option<&str>) -> Diagnostic {
        let what = what.unwrap_or("columns");
        Diagnostic::new(
            format!("missing \",\" between {what}"),
            Span::empty(self.prev_end()),
        )
        .with_fix(format!("separate the {what} with \",\""))
    }

    /// The columns after `=>`.
    fn columns(&mut self, arrow: Span, body: &[Literal]) -> PResult<Vec<Column>> {
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
    fn matching_paren(&self) -> Option<Span> {
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
    fn column(&mut self) -> PResult<Column> {
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
    fn having(&mut self) -> PResult<Vec<Having>> {
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
    fn order_keys(&mut self) -> PResult<Vec<OrderKey>> {
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
    fn row_count(&mut self, keyword: &str) -> PResult<RowCount> {
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

    /// A rule's head, or the goal's first atom while it is not yet known which it is.
    fn head(&mut self) -> PResult<Head> {
        let name_token = self.advance();
        let Tok::Name(text) = name_token.tok else {
            return Err(Diagnostic::new("expected a relation name", name_token.span));
        };
        let relation = Name {
            text,
            span: name_token.span,
        };
        let (args, end) = self.args(&relation, true)?;
        Ok(Head {
            span: relation.span.to(end),
            relation,
            args,
        })
    }

    /// An atom, from its name.
    fn atom(&mut self) -> PResult<Atom> {
        let name_token = self.advance();
        let Tok::Name(text) = name_token.tok else {
            return Err(Diagnostic::new("expected a relation name", name_token.span));
        };
        let relation = Name {
            text,
            span: name_token.span,
        };
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
    fn args(&mut self, relation: &Name, allow_aggregates: bool) -> PResult<(Vec<HeadArg>, Span)> {
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
    fn arg(&mut self, allow_aggregates: bool) -> PResult<HeadArg> {
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
    fn term(&mut self, after: &str) -> PResult<Term> {
        self.term_or(&format!("\"{after}\""))
    }

    /// A term; `what` names the place for the error when there is none.
    fn term_or(&mut self, what: &str) -> PResult<Term> {
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
    fn aggregate(&mut self) -> PResult<Aggregate> {
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

    /// Literals separated by `,`, up to (not including) what ends them; `first` is the first
    /// literal when already parsed.
    fn literals(
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
    fn after_literals(&self, end: ListEnd, literals: &[Literal]) -> PResult<()> {
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
    fn rule_follows(&self) -> bool {
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
    fn literal(&mut self, depth: usize) -> PResult<Literal> {
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
    fn negation(&mut self) -> PResult<Literal> {
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
    fn comparison(&mut self) -> PResult<Comparison> {
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
    fn aggregate_literal(&mut self, result: Var, depth: usize) -> PResult<AggregateLiteral> {
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

/// A parsed clause of a program.
enum Clause {
    Rule(Rule),
    Goal(Goal),
}

/// The keyword `word` is written in the wrong case for, if any: `NOT` for `not`.
fn keyword_case(word: &str) -> Option<&'static str> {
    const KEYWORDS: [&str; 15] = [
        "not", "absent", "count", "sum", "min", "max", "list", "distinct", "having", "order", "by",
        "asc", "desc", "limit", "offset",
    ];
    let lower = word.to_ascii_lowercase();
    if lower == word {
        return None;
    }
    KEYWORDS.into_iter().find(|k| *k == lower)
}

/// The error for a keyword written in the wrong case.
fn uppercase_keyword(word: &str, span: Span) -> Diagnostic {
    let keyword = keyword_case(word).unwrap_or("");
    Diagnostic::new(
        format!("keywords are lowercase: \"{word}\" should be \"{keyword}\""),
        span,
    )
    .with_fix(format!("write {keyword}"))
}

/// The error for a bare word where a term belongs.
fn bare_word(word: &str, span: Span) -> Diagnostic {
    let mut fix = String::from("write ");
    let _ = write_quoted(&mut fix, word);
    fix.push_str(" for the text");
    if word.chars().all(is_var_char) {
        fix.push_str(&format!(", or ?{word} for a variable"));
    }
    Diagnostic::new(format!("\"{word}\" is a bare word, but {TERM_IS}"), span).with_fix(fix)
}

/// The error for an aggregate as an atom's argument.
fn aggregate_in_atom(aggregate: &Aggregate) -> Diagnostic {
    Diagnostic::new(
        format!("an aggregate can't be an atom's argument: {aggregate}"),
        aggregate.span,
    )
    .with_fix(format!(
        "in a body write ?n = {aggregate} : {{ literals }}; in the goal write it after \"=>\""
    ))
}

/// The error for a head followed by `;` with no `:-`.
fn no_body(head: &Head, at: Span) -> Diagnostic {
    Diagnostic::new(
        format!(
            "the rule for \"{}\" has no \":-\" and no body",
            head.relation
        ),
        at,
    )
    .with_fix(format!(
        "a program holds no facts, only rules: write {} :- body;",
        example_head(head)
    ))
}

/// The head as an example: as written when it has no aggregates, else `name(...)`.
fn example_head(head: &Head) -> String {
    if head.args.iter().all(|a| matches!(a, HeadArg::Term(_))) {
        head.to_string()
    } else {
        format!("{}(...)", head.relation)
    }
}

/// A head read at the start of the goal, as the goal's first atom.
fn head_to_atom(head: Head) -> PResult<Atom> {
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

/// The variables of a goal's literals that could be its columns, in order of first
/// appearance: those of positive atoms and aggregate results.
fn goal_variables(body: &[Literal]) -> Vec<String> {
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
