//! The parser's diagnostics: how a token is described in a message, the error at the current
//! token (deferring to the lexer's error), and the messages and fixes shared by several
//! grammar rules (bare words, keywords in the wrong case, misplaced aggregates, bodiless rules).

use crate::front::ast::{Aggregate, Head, HeadArg, Span, write_quoted};
use crate::front::diagnostic::Diagnostic;

use super::lex::{Tok, Token, is_var_char};
use super::{Mode, Parser};

pub(super) const TERM_IS: &str = "a term must be a ?variable, a \"string\" or a number";
pub(super) const LITERAL_IS: &str = "a literal is an atom such as rel(?a, ?b), not followed by an atom, a comparison such as ?a != \"x\", or ?n = count(?b) : { rel(?a, ?b) }";
pub(super) const GOAL_EXAMPLE: &str =
    "write a goal: literals, then => and the columns, such as rel(\"x\", ?y) => ?y";
pub(super) const COMPARISON_IS: &str =
    "a comparison is term op term, with op one of < <= = != > >=";

impl Parser<'_> {
    /// The lexer's error, if the current token is where it stopped.
    pub(super) fn lex_error_here(&self) -> Option<Diagnostic> {
        if self.at(&Tok::Error) {
            self.lex_error.clone()
        } else {
            None
        }
    }

    /// `message` with `fix` at the current token, unless the current token is a lexical error.
    pub(super) fn error_here_fix(
        &self,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Diagnostic {
        self.lex_error_here()
            .unwrap_or_else(|| Diagnostic::new(message, self.peek().span).with_fix(fix))
    }

    /// `message` at the current token, unless the current token is a lexical error.
    pub(super) fn error_here(&self, message: impl Into<String>) -> Diagnostic {
        self.lex_error_here()
            .unwrap_or_else(|| Diagnostic::new(message, self.peek().span))
    }

    pub(super) fn describe(&self, token: &Token) -> String {
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

    pub(super) fn found(&self) -> String {
        self.describe(self.peek())
    }
}

/// The keyword `word` is written in the wrong case for, if any: `NOT` for `not`.
pub(super) fn keyword_case(word: &str) -> Option<&'static str> {
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
pub(super) fn uppercase_keyword(word: &str, span: Span) -> Diagnostic {
    let keyword = keyword_case(word).unwrap_or("");
    Diagnostic::new(
        format!("keywords are lowercase: \"{word}\" should be \"{keyword}\""),
        span,
    )
    .with_fix(format!("write {keyword}"))
}

/// The error for a bare word where a term belongs.
pub(super) fn bare_word(word: &str, span: Span) -> Diagnostic {
    let mut fix = String::from("write ");
    let _ = write_quoted(&mut fix, word);
    fix.push_str(" for the text");
    if word.chars().all(is_var_char) {
        fix.push_str(&format!(", or ?{word} for a variable"));
    }
    Diagnostic::new(format!("\"{word}\" is a bare word, but {TERM_IS}"), span).with_fix(fix)
}

/// The error for an aggregate as an atom's argument.
pub(super) fn aggregate_in_atom(aggregate: &Aggregate) -> Diagnostic {
    Diagnostic::new(
        format!("an aggregate can't be an atom's argument: {aggregate}"),
        aggregate.span,
    )
    .with_fix(format!(
        "in a body write ?n = {aggregate} : {{ literals }}; in the goal write it after \"=>\""
    ))
}

/// The error for a head followed by `;` with no `:-`.
pub(super) fn no_body(head: &Head, at: Span) -> Diagnostic {
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
pub(super) fn example_head(head: &Head) -> String {
    if head.args.iter().all(|a| matches!(a, HeadArg::Term(_))) {
        head.to_string()
    } else {
        format!("{}(...)", head.relation)
    }
}
