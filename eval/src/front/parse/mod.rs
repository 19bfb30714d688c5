//! The lexer and recursive-descent parser of Strata's query language.
//!
//! [`parse_program`] reads a query program (rules, if any, then one goal) and [`parse_module`]
//! a module file (rules only). Both return the syntax tree of [`crate::front::ast`] or one
//! [`Diagnostic`] for the first error, with a precise message and, where there is one, a fix.
//! They never panic, whatever the input, and every diagnostic's span lies within the input.
//!
//! The grammar and the choices the language contract leaves open are written down in the
//! project's `docs/language.md`.
//!
//! The parser is split by what each part reads: `lex` the tokens, `rule` programs, modules
//! and rules, `goal` the goal and its clauses, `literal` literals, `term` atoms, terms and
//! aggregates, and `diagnostic` the errors they share.
//!
//! ```
//! use strata_eval::parse_program;
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

mod diagnostic;
mod goal;
mod lex;
mod literal;
mod rule;
mod term;

use crate::front::ast::{Module, Program, Span};
use crate::front::diagnostic::Diagnostic;
use lex::{Tok, Token, lex};

/// How deeply aggregate literals may nest inside one another.
pub const MAX_NESTING: usize = 32;

/// The most bytes a query program may be. A module (a file under `DB/modules/`, written by
/// the database's owner) has no such limit.
pub const MAX_PROGRAM_BYTES: usize = 1 << 20;

/// The most rules a query program may have.
pub const MAX_PROGRAM_RULES: usize = 10_000;

/// The fix for a program past [`MAX_PROGRAM_BYTES`] or [`MAX_PROGRAM_RULES`].
const MODULE_FIX: &str =
    "put the rules in a module under DB/modules/ and call them from a short program";

/// Parses a query program: `{ rule ";" } goal`. A program of more than
/// [`MAX_PROGRAM_BYTES`] bytes or [`MAX_PROGRAM_RULES`] rules is refused.
pub fn parse_program(source: &str) -> Result<Program, Diagnostic> {
    if source.len() > MAX_PROGRAM_BYTES {
        return Err(Diagnostic::new(
            format!(
                "the program is {} bytes, more than the {MAX_PROGRAM_BYTES} a query may have",
                source.len()
            ),
            Span::new(0, 0),
        )
        .with_fix(MODULE_FIX));
    }
    Parser::new(source, Mode::Query).program().map_err(one_line)
}

/// Parses a module file: rules only, no goal. Heads are bare names (no module path), and the
/// comment lines directly above a rule are kept as its [`Rule::doc`](crate::front::ast::Rule::doc).
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
}
