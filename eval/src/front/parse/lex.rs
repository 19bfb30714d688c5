//! The lexer: source text to [`Token`]s, the comment lines kept for rule docs, and the
//! diagnostic for the first lexical error (where the token stream ends in [`Tok::Error`]).

use crate::front::ast::{CmpOp, Span, write_quoted};
use crate::front::diagnostic::Diagnostic;

/// A token's kind and payload.
#[derive(Clone, PartialEq, Debug)]
pub(super) enum Tok {
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
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) span: Span,
}

/// The lexer's output: the tokens, ending with `Eof` or with `Error`.
pub(super) struct Lexed {
    pub(super) tokens: Vec<Token>,
    pub(super) error: Option<Diagnostic>,
    /// The comments that are alone on their line, in order.
    pub(super) comment_lines: Vec<Span>,
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

pub(super) fn is_var_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

pub(super) fn lex(src: &str) -> Lexed {
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
