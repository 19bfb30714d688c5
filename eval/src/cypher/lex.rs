//! The Cypher lexer: the query's text as tokens, each with its span.

use crate::front::ast::Span;
use crate::front::diagnostic::Diagnostic;

/// One token of a Cypher query.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// A name: a keyword, a variable, a label, a property or a function (`MATCH`, `p`).
    Ident(String),
    /// A name in backticks (`` `my label` ``): never a keyword.
    Quoted(String),
    /// A string literal, in single or double quotes, escapes resolved.
    Str(String),
    /// A number literal.
    Num(f64),
    /// A parameter, `$name`.
    Param(String),
    /// Punctuation or an operator, as written (`(`, `->`, `<>`, `=~`, `..`).
    Sym(&'static str),
    /// The end of the query.
    End,
}

/// A token and where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Its place in the query's text.
    pub span: Span,
}

impl Token {
    /// Whether the token is the keyword `kw` (compared without case).
    pub fn is_kw(&self, kw: &str) -> bool {
        matches!(&self.tok, Tok::Ident(s) if s.eq_ignore_ascii_case(kw))
    }

    /// Whether the token is the symbol `sym`.
    pub fn is_sym(&self, sym: &str) -> bool {
        matches!(&self.tok, Tok::Sym(s) if *s == sym)
    }
}

const SYMBOLS: &[&str] = &[
    "<>", "<=", ">=", "=~", "->", "<-", "..", "!=", "(", ")", "[", "]", "{", "}", ",", ":", ".",
    "|", "*", "-", "<", ">", "=", "+", "/", "%", "^", ";",
];

/// Splits `text` into tokens, ending with [`Tok::End`]; an unknown character, an unclosed
/// string or comment, or a bad number is an error at its place.
pub fn lex(text: &str) -> Result<Vec<Token>, Diagnostic> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(text.len(), |n| i + n);
            continue;
        }
        if text[i..].starts_with("/*") {
            match text[i + 2..].find("*/") {
                Some(n) => i = i + 2 + n + 2,
                None => {
                    return Err(
                        Diagnostic::new("a comment is never closed", Span::new(i, i + 2))
                            .with_fix("end the comment with */"),
                    );
                }
            }
            continue;
        }
        let start = i;
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident(text[start..i].to_owned()),
                span: Span::new(start, i),
            });
            continue;
        }
        if c == b'$' {
            i += 1;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            if i == start + 1 {
                return Err(Diagnostic::new(
                    "a parameter needs a name after $",
                    Span::new(start, i + 1),
                )
                .with_fix("write $name and give name a value in params"));
            }
            out.push(Token {
                tok: Tok::Param(text[start + 1..i].to_owned()),
                span: Span::new(start, i),
            });
            continue;
        }
        if c == b'`' {
            match text[i + 1..].find('`') {
                Some(n) => {
                    out.push(Token {
                        tok: Tok::Quoted(text[i + 1..i + 1 + n].to_owned()),
                        span: Span::new(start, i + n + 2),
                    });
                    i += n + 2;
                }
                None => {
                    return Err(
                        Diagnostic::new("a `name` is never closed", Span::new(i, i + 1))
                            .with_fix("end the name with `"),
                    );
                }
            }
            continue;
        }
        if c == b'\'' || c == b'"' {
            let (s, end) = string(text, i)?;
            out.push(Token {
                tok: Tok::Str(s),
                span: Span::new(start, end),
            });
            i = end;
            continue;
        }
        if c.is_ascii_digit() {
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    i = j;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            if i < bytes.len() && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') {
                return Err(
                    Diagnostic::new("a number runs into letters", Span::new(start, i + 1))
                        .with_fix("put a space after the number"),
                );
            }
            let n: f64 = text[start..i]
                .parse()
                .map_err(|_| Diagnostic::new("this number can't be read", Span::new(start, i)))?;
            out.push(Token {
                tok: Tok::Num(n),
                span: Span::new(start, i),
            });
            continue;
        }
        match SYMBOLS.iter().find(|s| text[i..].starts_with(**s)) {
            Some(s) => {
                out.push(Token {
                    tok: Tok::Sym(s),
                    span: Span::new(i, i + s.len()),
                });
                i += s.len();
            }
            None => {
                let ch = text[i..].chars().next().unwrap_or(' ');
                return Err(Diagnostic::new(
                    format!("the character {ch:?} has no meaning in Cypher here"),
                    Span::new(i, i + ch.len_utf8()),
                )
                .with_fix(
                    "names are ASCII letters, digits and _ (or `quoted`); text is 'quoted'",
                ));
            }
        }
    }
    out.push(Token {
        tok: Tok::End,
        span: Span::new(text.len(), text.len()),
    });
    Ok(out)
}

/// Reads the string starting at byte `at` (its quote); answers its text and the byte after it.
fn string(text: &str, at: usize) -> Result<(String, usize), Diagnostic> {
    let quote = text.as_bytes()[at] as char;
    let mut out = String::new();
    let mut chars = text[at + 1..].char_indices();
    while let Some((k, ch)) = chars.next() {
        let pos = at + 1 + k;
        if ch == quote {
            return Ok((out, pos + 1));
        }
        if ch == '\\' {
            let Some((_, e)) = chars.next() else { break };
            out.push(match e {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                '\\' | '\'' | '"' => e,
                _ => {
                    return Err(Diagnostic::new(
                        format!("\\{e} is not an escape in a Cypher string"),
                        Span::new(pos, pos + 1 + e.len_utf8()),
                    )
                    .with_fix("write \\\\ for a backslash, \\' or \\\" for a quote"));
                }
            });
            continue;
        }
        out.push(ch);
    }
    Err(
        Diagnostic::new("a string is never closed", Span::new(at, at + 1))
            .with_fix(format!("end the string with {quote}")),
    )
}
