//! SCIP's symbol strings: `scheme manager name version descriptors...`, read for the package a
//! symbol belongs to, the kind its last descriptor implies and the symbol it is a member of.
//!
//! The grammar is SCIP's (`scip.proto`, message `Symbol`): the four header fields are
//! separated by single spaces (a double space is a space inside a field, `.` an empty field);
//! each descriptor is a name followed by its suffix (`/` namespace, `#` type, `.` term,
//! `:` meta, `!` macro, `(disambiguator).` method), or `[name]` (type parameter) or `(name)`
//! (parameter); a name is `[_+$a-zA-Z0-9-]+` or backquoted with doubled backquotes.

use std::borrow::Cow;

/// Whether `symbol` is document-local (`local N`).
pub(crate) fn is_local(symbol: &str) -> bool {
    symbol.starts_with("local ")
}

/// The kind of a descriptor, from its suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Suffix {
    /// `name/`
    Namespace,
    /// `name#`
    Type,
    /// `name.`
    Term,
    /// `name(disambiguator).`
    Method,
    /// `[name]`
    TypeParameter,
    /// `(name)`
    Parameter,
    /// `name!`
    Macro,
    /// `name:`
    Meta,
}

impl Suffix {
    /// The name stored as a symbol's kind when the indexer gives none.
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Suffix::Namespace => "Namespace",
            Suffix::Type => "Type",
            Suffix::Term => "Term",
            Suffix::Method => "Method",
            Suffix::TypeParameter => "TypeParameter",
            Suffix::Parameter => "Parameter",
            Suffix::Macro => "Macro",
            Suffix::Meta => "Meta",
        }
    }
}

/// What a global symbol's string says about it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Parsed<'a> {
    /// The package manager (`npm`, `python`...), `None` for `.`.
    pub(crate) manager: Option<Cow<'a, str>>,
    /// The package name, `None` for `.`.
    pub(crate) package: Option<Cow<'a, str>>,
    /// The package version, `None` for `.`.
    pub(crate) version: Option<Cow<'a, str>>,
    /// The last descriptor's suffix.
    pub(crate) suffix: Suffix,
    /// The last descriptor's name.
    pub(crate) name: Cow<'a, str>,
    /// The symbol the last descriptor is a member of (the same string without it), when
    /// there is a descriptor before it.
    pub(crate) owner: Option<&'a str>,
}

/// Reads a global symbol; `None` when it does not follow the grammar (or is local).
pub(crate) fn parse(symbol: &str) -> Option<Parsed<'_>> {
    if is_local(symbol) {
        return None;
    }
    let mut rest = symbol;
    let mut header: [Option<Cow<'_, str>>; 4] = Default::default();
    for field in &mut header {
        let (value, after) = header_field(rest)?;
        *field = value;
        rest = after;
    }
    let [_scheme, manager, package, version] = header;
    let descriptors_at = symbol.len() - rest.len();
    let mut at = descriptors_at;
    let mut last: Option<(usize, Suffix, Cow<'_, str>)> = None;
    let mut before_last: Option<usize> = None;
    while at < symbol.len() {
        let (suffix, name, end) = descriptor(symbol, at)?;
        before_last = last.as_ref().map(|(start, ..)| *start);
        last = Some((at, suffix, name));
        at = end;
    }
    let (start, suffix, name) = last?;
    Some(Parsed {
        manager,
        package,
        version,
        suffix,
        name,
        owner: before_last.map(|_| &symbol[..start]),
    })
}

/// One space-terminated header field (`.` is empty, `  ` a space) and the rest after it.
fn header_field(s: &str) -> Option<(Option<Cow<'_, str>>, &str)> {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut escaped = false;
    while i < bytes.len() {
        if bytes[i] == b' ' {
            if bytes.get(i + 1) == Some(&b' ') {
                escaped = true;
                i += 2;
                continue;
            }
            let raw = &s[..i];
            let value = if raw == "." || raw.is_empty() {
                None
            } else if escaped {
                Some(Cow::Owned(raw.replace("  ", " ")))
            } else {
                Some(Cow::Borrowed(raw))
            };
            return Some((value, &s[i + 1..]));
        }
        i += 1;
    }
    None
}

/// The descriptor starting at byte `at` of `symbol`: its suffix, name and end.
fn descriptor(symbol: &str, at: usize) -> Option<(Suffix, Cow<'_, str>, usize)> {
    let bytes = symbol.as_bytes();
    match bytes[at] {
        b'[' => {
            let (name, end) = name(symbol, at + 1)?;
            (bytes.get(end) == Some(&b']')).then_some((Suffix::TypeParameter, name, end + 1))
        }
        b'(' => {
            let (name, end) = name(symbol, at + 1)?;
            (bytes.get(end) == Some(&b')')).then_some((Suffix::Parameter, name, end + 1))
        }
        _ => {
            let (name, end) = name(symbol, at)?;
            let suffix = match bytes.get(end)? {
                b'/' => Suffix::Namespace,
                b'#' => Suffix::Type,
                b'.' => Suffix::Term,
                b':' => Suffix::Meta,
                b'!' => Suffix::Macro,
                b'(' => {
                    let close = end + 1 + symbol[end + 1..].find(')')?;
                    return (bytes.get(close + 1) == Some(&b'.')).then_some((
                        Suffix::Method,
                        name,
                        close + 2,
                    ));
                }
                _ => return None,
            };
            Some((suffix, name, end + 1))
        }
    }
}

/// A simple or backquoted name starting at byte `at`, and where it ends.
fn name(symbol: &str, at: usize) -> Option<(Cow<'_, str>, usize)> {
    let bytes = symbol.as_bytes();
    if bytes.get(at) == Some(&b'`') {
        let mut i = at + 1;
        let mut escaped = false;
        loop {
            match bytes.get(i)? {
                b'`' if bytes.get(i + 1) == Some(&b'`') => {
                    escaped = true;
                    i += 2;
                }
                b'`' => break,
                _ => i += 1,
            }
        }
        let raw = &symbol[at + 1..i];
        let name = if escaped {
            Cow::Owned(raw.replace("``", "`"))
        } else {
            Cow::Borrowed(raw)
        };
        return (!raw.is_empty()).then_some((name, i + 1));
    }
    let len = bytes[at..]
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'-' | b'$'))
        .count();
    (len > 0).then_some((Cow::Borrowed(&symbol[at..at + len]), at + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_is_a_member_of_its_type() {
        let p = parse("scip-typescript npm rxjs 7.8.2 src/`Observable.ts`/Observable#pipe().")
            .expect("parses");
        assert_eq!(p.suffix, Suffix::Method);
        assert_eq!(p.name, "pipe");
        assert_eq!(
            p.owner,
            Some("scip-typescript npm rxjs 7.8.2 src/`Observable.ts`/Observable#")
        );
        assert_eq!(p.manager.as_deref(), Some("npm"));
        assert_eq!(p.package.as_deref(), Some("rxjs"));
        assert_eq!(p.version.as_deref(), Some("7.8.2"));
    }

    #[test]
    fn kinds_escapes_and_empty_fields() {
        let p = parse("rust-analyzer cargo . . a/`b``c`#[T]").expect("parses");
        assert_eq!((p.suffix, p.name.as_ref()), (Suffix::TypeParameter, "T"));
        assert_eq!(p.owner, Some("rust-analyzer cargo . . a/`b``c`#"));
        assert_eq!(p.package, None);
        let p = parse("s m n v f(+1).(x)").expect("parses");
        assert_eq!((p.suffix, p.name.as_ref()), (Suffix::Parameter, "x"));
        let p = parse("s  x m n v top/").expect("parses");
        assert_eq!((p.suffix, p.owner), (Suffix::Namespace, None));
        assert_eq!(p.manager.as_deref(), Some("m"));
        let p = parse("s m n v `b``c`:").expect("parses");
        assert_eq!((p.suffix, p.name.as_ref()), (Suffix::Meta, "b`c"));
        assert_eq!(parse("s m n v M!").map(|p| p.suffix), Some(Suffix::Macro));
        assert_eq!(parse("s m n v x.").map(|p| p.suffix), Some(Suffix::Term));
        assert_eq!(parse("local 4"), None);
        assert_eq!(parse("s m n v"), None);
        assert_eq!(parse("s m n v a/b"), None);
    }
}
