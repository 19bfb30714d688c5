//! Diagnostics: the errors a user can cause, each saying what is wrong, where, and how to fix
//! it.
//!
//! A [`Diagnostic`] is produced by the parser (and later the checker) and rendered against the
//! program's source with [`Diagnostic::render`]:
//!
//! ```text
//! query: unknown relation "depends_on"; did you mean "deps.depends_on"?
//! line 1, column 1:
//!   depends_on("app", ?d) => ?d
//!   ^
//! fix: did you mean "deps.depends_on"?
//! ```

use std::fmt;

use crate::front::ast::{Span, floor_boundary};

/// A user error in a program or a module: a message, the place it refers to, and a fix.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Diagnostic {
    /// What is wrong, in one line (no trailing period).
    pub message: String,
    /// Where: the caret goes under the span's start.
    pub span: Span,
    /// How to fix it, when there is something to suggest.
    pub fix: Option<String>,
}

impl Diagnostic {
    /// A diagnostic with no fix.
    pub fn new(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            span,
            fix: None,
        }
    }

    /// The same diagnostic with `fix` as its fix.
    #[must_use]
    pub fn with_fix(mut self, fix: impl Into<String>) -> Diagnostic {
        self.fix = Some(fix.into());
        self
    }

    /// Renders the diagnostic against the `source` it refers to, prefixed by `context` (the
    /// tool or file name, such as `query`; no prefix when empty):
    ///
    /// ```text
    /// {context}: {message}
    /// line {L}, column {C}:
    ///   {the source line}
    ///   {spaces, tabs kept}^
    /// fix: {fix}
    /// ```
    ///
    /// Lines and columns are 1-based and columns count characters. The caret line copies the
    /// tabs of the source line before the column, so the caret lines up however tabs are shown.
    /// The `fix:` line is there only when there is a fix. There is no trailing newline.
    pub fn render(&self, context: &str, source: &str) -> String {
        self.locate(source).render(context)
    }

    /// The diagnostic placed in the `source` it refers to: its line, column and source line,
    /// as data (what [`Diagnostic::render`] shows).
    pub fn locate(&self, source: &str) -> Located {
        let (line, column) = self.span.line_col(source);
        let at = floor_boundary(source, self.span.start);
        let line_start = source
            .get(..at)
            .and_then(|s| s.rfind('\n'))
            .map_or(0, |i| i + 1);
        let rest = source.get(line_start..).unwrap_or("");
        let text = rest.split('\n').next().unwrap_or("");
        let text = text.strip_suffix('\r').unwrap_or(text);
        let (source_line, clipped_before) = clip(text, column);
        Located {
            message: self.message.clone(),
            start: self.span.start,
            end: self.span.end,
            line,
            column,
            source_line,
            clipped_before,
            fix: self.fix.clone(),
        }
    }
}

/// The most characters of a source line a diagnostic shows: a longer line is shown as a
/// window around the column, with `…` where it was cut, so an error stays short however long
/// the line it points into.
pub const MAX_SOURCE_LINE: usize = 160;

/// The line `text` as a diagnostic at `column` shows it, and how many characters were cut
/// before what it shows.
fn clip(text: &str, column: usize) -> (String, usize) {
    let len = text.chars().count();
    if len <= MAX_SOURCE_LINE {
        return (text.to_owned(), 0);
    }
    let at = column.saturating_sub(1).min(len);
    let start = at.saturating_sub(MAX_SOURCE_LINE / 2);
    let end = (start + MAX_SOURCE_LINE).min(len);
    let start = end.saturating_sub(MAX_SOURCE_LINE).min(start);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(text.chars().skip(start).take(end - start));
    if end < len {
        out.push('…');
    }
    (out, start)
}

/// A diagnostic placed in the text it refers to, as data a client can show or act on.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub struct Located {
    /// What is wrong, in one line.
    pub message: String,
    /// Where it starts: a byte offset into the text.
    pub start: usize,
    /// Where it ends: a byte offset into the text.
    pub end: usize,
    /// Its line, 1-based.
    pub line: usize,
    /// Its column on the line, 1-based, in characters.
    pub column: usize,
    /// The text of the line (without its line break); past 160 characters, the window of it
    /// around the column, with `…` where it was cut.
    pub source_line: String,
    /// How many characters of the line were cut before `source_line` (0 when it starts the
    /// line; then `source_line` starts with `…`).
    #[serde(default)]
    pub clipped_before: usize,
    /// How to fix it, when there is something to suggest.
    pub fix: Option<String>,
}

impl Located {
    /// The diagnostic as text, prefixed by `context` (none when empty); see
    /// [`Diagnostic::render`].
    pub fn render(&self, context: &str) -> String {
        let shown_before = match self.clipped_before {
            0 => self.column.saturating_sub(1),
            cut => self.column.saturating_sub(1).saturating_sub(cut) + 1,
        };
        let pad: String = self
            .source_line
            .chars()
            .take(shown_before)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let mut out = String::new();
        if !context.is_empty() {
            out.push_str(context);
            out.push_str(": ");
        }
        out.push_str(&self.message);
        out.push_str(&format!(
            "\nline {}, column {}:\n  {}\n  {pad}^",
            self.line, self.column, self.source_line
        ));
        if let Some(fix) = &self.fix {
            out.push_str("\nfix: ");
            out.push_str(fix);
        }
        out
    }
}

/// A program or query that does not parse or check: its diagnostics (the first is the one
/// that stopped it), each placed in the text, and the context they are shown in (`query`,
/// `cypher`, a module's file). Shown as text by [`fmt::Display`], exactly as
/// [`Diagnostic::render`] renders each; serialisable, for a client that wants the data.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub struct ProgramError {
    /// The context, such as `query`.
    pub context: String,
    /// The diagnostics, at least one.
    pub diagnostics: Vec<Located>,
}

impl ProgramError {
    /// `diagnostics`, placed in `source`, shown with `context`.
    pub fn new(
        context: &str,
        source: &str,
        diagnostics: impl IntoIterator<Item = Diagnostic>,
    ) -> ProgramError {
        ProgramError {
            context: context.to_owned(),
            diagnostics: diagnostics.into_iter().map(|d| d.locate(source)).collect(),
        }
    }
}

impl fmt::Display for ProgramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            f.write_str(&d.render(&self.context))?;
        }
        Ok(())
    }
}

impl std::error::Error for ProgramError {}

impl fmt::Display for Diagnostic {
    /// Prints the message alone; use [`Diagnostic::render`] for the full text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_shown_as_a_window_around_the_caret() {
        let line = format!("{}bad{}", "a".repeat(1_000), "b".repeat(1_000));
        let d = Diagnostic::new("here", Span::new(1_000, 1_003));
        let text = d.render("query", &line);
        let mut lines = text.lines().skip(2);
        let (shown, caret) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
        assert_eq!(shown.chars().count(), 2 + MAX_SOURCE_LINE + 2);
        assert!(
            shown.starts_with("  …a") && shown.ends_with("b…"),
            "{shown}"
        );
        let at = caret.chars().count() - 1;
        assert_eq!(shown.chars().skip(at).take(3).collect::<String>(), "bad");
        assert!(text.contains("line 1, column 1001:"), "{text}");
        // At the start of a long line, nothing is cut before.
        let d = Diagnostic::new("here", Span::new(0, 1));
        let located = d.locate(&line);
        assert_eq!(located.clipped_before, 0);
        assert!(located.source_line.starts_with("aaa") && located.source_line.ends_with('…'));
    }

    #[test]
    fn renders_the_contract_example() {
        let source = r#"depends_on("app", ?d) => ?d"#;
        let d = Diagnostic::new(
            r#"unknown relation "depends_on"; did you mean "deps.depends_on"?"#,
            Span::new(0, 10),
        )
        .with_fix(r#"did you mean "deps.depends_on"?"#);
        assert_eq!(
            d.render("query", source),
            r#"query: unknown relation "depends_on"; did you mean "deps.depends_on"?
line 1, column 1:
  depends_on("app", ?d) => ?d
  ^
fix: did you mean "deps.depends_on"?"#
        );
    }

    #[test]
    fn counts_characters_and_keeps_tabs() {
        let source = "a(?x) :- b(?x);\n\tc(\"é\", ?y) => x";
        let at = source.rfind('x').unwrap();
        let d = Diagnostic::new("oops", Span::new(at, at + 1));
        assert_eq!(
            d.render("", source),
            "oops\nline 2, column 16:\n  \tc(\"é\", ?y) => x\n  \t              ^"
        );
    }

    #[test]
    fn tolerates_any_span() {
        let source = "ab\r\né";
        for start in 0..12 {
            let d = Diagnostic::new("x", Span::new(start, start + 3));
            let text = d.render("q", source);
            assert!(text.starts_with("q: x\nline "));
        }
        let d = Diagnostic::new("x", Span::new(2, 2));
        assert_eq!(
            d.render("q", source),
            "q: x\nline 1, column 3:\n  ab\n    ^"
        );
        let d = Diagnostic::new("x", Span::empty(0));
        assert_eq!(d.render("q", ""), "q: x\nline 1, column 1:\n  \n  ^");
    }

    #[test]
    fn a_program_error_keeps_the_place_as_data_and_shows_the_same_text() {
        let source = "a(?x) :- b(?x);\n\tc(?y) => x";
        let at = source.rfind('x').unwrap();
        let d = Diagnostic::new("oops", Span::new(at, at + 1)).with_fix("write ?x");
        let e = ProgramError::new("query", source, [d.clone()]);
        assert_eq!(e.to_string(), d.render("query", source));
        let l = &e.diagnostics[0];
        assert_eq!((l.line, l.column, l.start), (2, 11, at));
        assert_eq!(l.source_line, "\tc(?y) => x");
        assert_eq!(l.fix.as_deref(), Some("write ?x"));
    }
}
