//! Terms and values: how a fact's field is represented, stored and printed.

use std::cmp::Ordering;
use std::fmt;

/// A fact's field as stored: a plain `u32`, so that columns are integer arrays.
///
/// The encoding is fixed (it is part of the on-disk format):
/// - `0` is `absent`, a field the source did not state;
/// - `1 ..= 0x7FFF_FFFF` is the text with that dictionary id;
/// - `0x8000_0000 | n` (`n < 2^30`) is the number with dictionary id `n`;
/// - `0xC000_0000 | n` (`n < 2^30`) is the integer `n` itself. Every integer in
///   `0 .. 2^30` is encoded this way and never through the dictionary, so equal values always
///   have equal terms, and numeric dumps of node numbers need no dictionary at all.
///
/// Ids are dense and assigned in order of first appearance, so they say nothing about the
/// order of the values: compare [`Value`]s, not terms, when order matters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct Term(pub u32);

/// The three kinds of [`Term`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TermKind {
    /// The term is `absent`.
    Absent,
    /// The term is a text; the payload is its dictionary id.
    Text(u32),
    /// The term is a number; the payload is its dictionary id.
    Number(u32),
    /// The term is the integer in its payload (`0 .. 2^30`).
    Integer(u32),
}

impl Term {
    /// The `absent` term.
    pub const ABSENT: Term = Term(0);
    /// The bit that marks a number term.
    pub const NUMBER_BIT: u32 = 0x8000_0000;
    /// With [`Term::NUMBER_BIT`], the bit that marks an integer held in the term itself.
    pub const INTEGER_BIT: u32 = 0x4000_0000;
    /// The largest dictionary id a text may have.
    pub const MAX_ID: u32 = 0x7FFF_FFFF;
    /// The largest dictionary id a number may have, and the largest integer held directly.
    pub const MAX_NUMBER_ID: u32 = 0x3FFF_FFFF;

    /// The term of the text with dictionary id `id` (`1 ..= MAX_ID`).
    pub fn text(id: u32) -> Term {
        debug_assert!(id != 0 && id <= Self::MAX_ID);
        Term(id)
    }

    /// The term of the number with dictionary id `id` (`0 ..= MAX_NUMBER_ID`).
    pub fn number(id: u32) -> Term {
        debug_assert!(id <= Self::MAX_NUMBER_ID);
        Term(Self::NUMBER_BIT | id)
    }

    /// The term that holds `n` itself, when `n` is an integer in `0 ..= MAX_NUMBER_ID`
    /// (such a number must always be encoded so); `None` for any other number.
    pub fn integer(n: f64) -> Option<Term> {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let i = n as u32;
        (n >= 0.0 && n <= f64::from(Self::MAX_NUMBER_ID) && f64::from(i) == n)
            .then_some(Term(Self::NUMBER_BIT | Self::INTEGER_BIT | i))
    }

    /// Which kind of term this is, with its dictionary id (or integer).
    pub fn kind(self) -> TermKind {
        if self.0 == 0 {
            TermKind::Absent
        } else if self.0 & Self::NUMBER_BIT == 0 {
            TermKind::Text(self.0)
        } else if self.0 & Self::INTEGER_BIT != 0 {
            TermKind::Integer(self.0 & Self::MAX_NUMBER_ID)
        } else {
            TermKind::Number(self.0 & Self::MAX_NUMBER_ID)
        }
    }
}

/// A value as a user sees it: a text, a number, or `absent`.
#[derive(Clone, Debug)]
pub enum Value {
    /// A field the source did not state. It is not the empty text.
    Absent,
    /// A number (an `f64`, never NaN or infinite).
    Number(f64),
    /// A text.
    Text(String),
}

impl Value {
    /// A text value.
    pub fn text(s: impl Into<String>) -> Value {
        Value::Text(s.into())
    }

    /// The rank of the value's kind in the default order: absent < numbers < text.
    fn rank(&self) -> u8 {
        match self {
            Value::Absent => 0,
            Value::Number(_) => 1,
            Value::Text(_) => 2,
        }
    }

    /// Reads a dump field the way Strata's TSV formats do: a field is a number exactly when it
    /// is the shortest printing of a finite number (`42`, `-3`, `3.5`), so reading and printing
    /// it loses nothing; anything else (`007`, `1.50`, `1e6`, `-0`, `NaN`) is text.
    pub fn from_field(field: &str) -> Value {
        match canonical_number(field) {
            Some(n) => Value::Number(n),
            None => Value::Text(field.to_owned()),
        }
    }
}

/// The number `field` is the shortest printing of, if any (see [`Value::from_field`]).
pub fn canonical_number(field: &str) -> Option<f64> {
    let bytes = field.as_bytes();
    let first = *bytes.first()?;
    if !(first.is_ascii_digit() || first == b'-') {
        return None;
    }
    let digits = if first == b'-' { &bytes[1..] } else { bytes };
    if digits.is_empty() || field == "-0" {
        return None;
    }
    // Fast path: a plain integer of at most 15 digits without a leading zero, read in one
    // pass (a dump of integer pairs reads two a line).
    if digits.len() <= 15 {
        let mut n: i64 = 0;
        let mut all_digits = true;
        for &d in digits {
            let v = d.wrapping_sub(b'0');
            all_digits &= v < 10;
            n = n * 10 + i64::from(v);
        }
        if all_digits {
            if digits.len() > 1 && digits[0] == b'0' {
                return None;
            }
            let n = if first == b'-' { -n } else { n };
            #[allow(clippy::cast_precision_loss)] // at most 15 digits: exact in f64
            return Some(n as f64);
        }
    }
    let n: f64 = field.parse().ok()?;
    if !n.is_finite() {
        return None;
    }
    (format_number(n) == field).then_some(n)
}

/// Prints a number in its shortest form: `1.5`, `100`, `-3`.
pub fn format_number(n: f64) -> String {
    format!("{n}")
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Value {
    /// The default total order: absent < numbers (by value) < text (bytewise).
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Value::Number(a), Value::Number(b)) => a.total_cmp(b),
            (Value::Text(a), Value::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl fmt::Display for Value {
    /// Prints the value as answers show it: text bare, numbers in shortest form, `absent`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Absent => f.write_str("absent"),
            Value::Number(n) => write!(f, "{n}"),
            Value::Text(s) => f.write_str(s),
        }
    }
}

/// Writes a value as a program would: text quoted (with `\"` and `\\`), numbers bare,
/// `absent`. A character a terminal would act on rather than show (a control character
/// such as ESC, NUL, a newline or a tab, or one that breaks or reorders lines) is written
/// escaped, `\n`, `\t`, `\r`, `\0` or `\u{1b}`, so a stored value cannot forge lines of
/// an answer or drive the reader's terminal.
pub fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Text(s) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    c if unprintable(c) => push_escaped(c, out),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Writes a value as an answer's row shows it: text bare, unless bare it would be
/// ambiguous or unsafe (it holds the cell separator `, `, starts with a quote, or holds a
/// character [`write_value`] escapes), when it is written quoted as [`write_value`] writes
/// it; numbers bare, `absent`.
pub fn write_cell_value(v: &Value, out: &mut String) {
    match v {
        Value::Text(s) if s.contains(", ") || s.starts_with('"') || s.chars().any(unprintable) => {
            write_value(v, out);
        }
        Value::Text(s) => out.push_str(s),
        other => out.push_str(&other.to_string()),
    }
}

/// Whether answers write `c` escaped: a control character, or one that breaks or reorders
/// lines on a terminal (the Unicode line and paragraph separators, the bidirectional
/// marks, embeddings, overrides and isolates).
fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// Writes `c` as an escape: `\n`, `\t`, `\r`, `\0`, else `\u{hex}`.
fn push_escaped(c: char, out: &mut String) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        '\0' => out.push_str("\\0"),
        c => {
            use std::fmt::Write as _;
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_numbers_round_trip() {
        for s in [
            "0",
            "42",
            "-3",
            "3.5",
            "123456789012345",
            "9007199254740992",
        ] {
            let n = canonical_number(s).unwrap_or_else(|| panic!("{s} should be a number"));
            assert_eq!(format_number(n), s);
        }
        for s in [
            "",
            "-",
            "007",
            "1.50",
            "1e6",
            "-0",
            "NaN",
            "inf",
            "1.",
            ".5",
            "12a",
            "+1",
            "1234567890123456789",
        ] {
            assert_eq!(canonical_number(s), None, "{s} should stay text");
        }
    }

    #[test]
    fn term_kinds() {
        assert_eq!(Term::ABSENT.kind(), TermKind::Absent);
        assert_eq!(Term::text(7).kind(), TermKind::Text(7));
        assert_eq!(Term::number(0).kind(), TermKind::Number(0));
        assert_eq!(
            Term::number(Term::MAX_NUMBER_ID).kind(),
            TermKind::Number(Term::MAX_NUMBER_ID)
        );
        assert_eq!(Term::integer(0.0).unwrap().kind(), TermKind::Integer(0));
        assert_eq!(
            Term::integer(1e9).unwrap().kind(),
            TermKind::Integer(1_000_000_000)
        );
        for n in [-1.0, 0.5, 2f64.powi(30), f64::NAN] {
            assert_eq!(Term::integer(n), None, "{n}");
        }
    }

    #[test]
    fn default_order() {
        let mut v = [
            Value::text("b"),
            Value::Number(10.0),
            Value::Absent,
            Value::text("a"),
            Value::Number(-1.0),
        ];
        v.sort();
        let shown: Vec<String> = v.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["absent", "-1", "10", "a", "b"]);
        assert_ne!(Value::Number(1.0), Value::text("1"));
    }
}
