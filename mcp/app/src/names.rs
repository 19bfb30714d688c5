//! Symbols by the names a person uses: a text answer over SCIP data writes
//! `Model.save()` where the value is
//! `` scip-python python django 5.1 `django.db.models.base`/Model#save(). ``, the qualified
//! `django.db.models.base.Model.save()` where two symbols of one answer share the short
//! name, and ends with where each symbol of its rows is defined (`path:line`). The values
//! themselves do not change: JSON carries every symbol whole, and a program binds it.

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;

use strata_eval::{Answer, Cell, FactSource, Node, Value};

/// How many definition sites the `defined at` lines name.
const SITES_SHOWN: usize = 40;

/// A SCIP symbol read for showing: its short and its qualified name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Name {
    /// The owners' and the symbol's own names: `Model.save()`.
    pub short: String,
    /// Namespaces too: `django.db.models.base.Model.save()`.
    pub qualified: String,
}

/// Reads a global SCIP symbol (`scheme manager package version descriptors`); `None` for
/// anything else, a local symbol included.
pub(crate) fn name(symbol: &str) -> Option<Name> {
    let descriptors = descriptors(symbol)?;
    let mut short = String::new();
    let mut space = String::new();
    for (name, kind) in &descriptors {
        match kind {
            Kind::Namespace => {
                if !space.is_empty() && !space.ends_with('/') {
                    space.push('/');
                }
                space.push_str(name);
            }
            Kind::Type | Kind::Term | Kind::Method | Kind::Macro => {
                if !short.is_empty() {
                    short.push('.');
                }
                short.push_str(name);
                match kind {
                    Kind::Method => short.push_str("()"),
                    Kind::Macro => short.push('!'),
                    _ => {}
                }
            }
            Kind::Parameter | Kind::TypeParameter | Kind::Meta => {
                short.push_str(&format!("[{name}]"));
            }
        }
    }
    if short.is_empty() {
        // A namespace alone: a module, a package, a file.
        return (!space.is_empty()).then(|| Name {
            short: space.clone(),
            qualified: space,
        });
    }
    let qualified = if space.is_empty() {
        short.clone()
    } else if space.contains('/') || space.ends_with(".ts") {
        format!("{space}:{short}")
    } else {
        format!("{space}.{short}")
    };
    Some(Name { short, qualified })
}

/// The descriptors of a global SCIP symbol (after its scheme, manager, package and version),
/// each name unescaped, with its kind; `None` for a local symbol or other text. The one
/// reading of a symbol's descriptors that answers and `find` share.
pub(crate) fn descriptors(symbol: &str) -> Option<Vec<(String, Kind)>> {
    // Four space-separated fields before the descriptors; a space inside a field is doubled.
    let mut rest = symbol;
    for _ in 0..4 {
        let at = field_end(rest)?;
        rest = &rest[at + 1..];
    }
    parse(rest)
}

/// The byte offset of the space ending the field at the start of `s` (a doubled space is
/// part of the field).
fn field_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b' ' {
            if b.get(i + 1) == Some(&b' ') {
                i += 2;
                continue;
            }
            return (i > 0).then_some(i);
        }
        i += 1;
    }
    None
}

/// What a SCIP descriptor's suffix says a name is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `name/`: a package, module, namespace or file.
    Namespace,
    /// `name#`: a class, interface, struct, trait, impl.
    Type,
    /// `name.`: a constant, variable, field.
    Term,
    /// `name(disambiguator).`: a function or method.
    Method,
    /// `name!`.
    Macro,
    /// `(name)`.
    Parameter,
    /// `[name]`.
    TypeParameter,
    /// `name:`.
    Meta,
}

/// The descriptors of a symbol, names unescaped (backticks dropped).
fn parse(mut s: &str) -> Option<Vec<(String, Kind)>> {
    let mut out = Vec::new();
    while !s.is_empty() {
        let (name, rest) = match s.strip_prefix('(') {
            Some(r) => {
                let (n, r) = r.split_once(')')?;
                out.push((n.trim_matches('`').to_owned(), Kind::Parameter));
                s = r;
                continue;
            }
            None => match s.strip_prefix('[') {
                Some(r) => {
                    let (n, r) = r.split_once(']')?;
                    out.push((n.trim_matches('`').to_owned(), Kind::TypeParameter));
                    s = r;
                    continue;
                }
                None => ident(s)?,
            },
        };
        let mut chars = rest.chars();
        let kind = match chars.next()? {
            '/' => Kind::Namespace,
            '#' => Kind::Type,
            '.' => Kind::Term,
            ':' => Kind::Meta,
            '!' => Kind::Macro,
            '(' => {
                let (_, r) = rest[1..].split_once(')')?;
                s = r.strip_prefix('.')?;
                out.push((name, Kind::Method));
                continue;
            }
            _ => return None,
        };
        out.push((name, kind));
        s = chars.as_str();
    }
    (!out.is_empty()).then_some(out)
}

/// A name at the start of `s`: simple (letters, digits, `_`, `+`, `-`, `$`) or backticked
/// (a doubled backtick stands for one).
fn ident(s: &str) -> Option<(String, &str)> {
    if let Some(r) = s.strip_prefix('`') {
        let mut name = String::new();
        let mut it = r.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            if c == '`' {
                if let Some(&(_, '`')) = it.peek() {
                    it.next();
                    name.push('`');
                    continue;
                }
                return Some((name, &r[i + 1..]));
            }
            name.push(c);
        }
        return None;
    }
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '+' | '-' | '$')))
        .unwrap_or(s.len());
    (end > 0).then(|| (s[..end].to_owned(), &s[end..]))
}

/// An answer written with names: the answer with each SCIP symbol replaced by its name (for
/// the text rendering only), and the definition sites of the symbols its rows show.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Named {
    /// The answer, symbols by name.
    pub answer: Answer,
    /// `Model.save() django/db/models/base.py:909`, one per symbol of the rows' cells
    /// defined in the data, in row order.
    pub sites: Vec<String>,
    /// How many more row symbols have a site than [`Named::sites`] names.
    pub sites_left_out: usize,
    /// Each symbol of the answer and the name the text shows for it.
    pub shown: HashMap<String, String>,
}

/// Names `answer`'s symbols, or `None` when it shows none.
pub(crate) fn named<'a>(answer: &'a Answer, source: &dyn FactSource) -> Option<Named> {
    // Every distinct symbol, and which short names two of them share.
    let mut names: BTreeMap<&str, Name> = BTreeMap::new();
    let mut visit = |v: &'a Value| {
        if let Value::Text(s) = v
            && !names.contains_key(&**s)
            && let Some(n) = name(s)
        {
            names.insert(s, n);
        }
    };
    for row in &answer.rows {
        for c in &row.cells {
            match c {
                Cell::Value(v) => visit(v),
                Cell::List(vs) => vs.iter().for_each(&mut visit),
            }
        }
        let mut stack: Vec<&Node> = row.witness.iter().collect();
        while let Some(n) = stack.pop() {
            n.values.iter().for_each(&mut visit);
            stack.extend(&n.children);
        }
    }
    if names.is_empty() {
        return None;
    }
    let mut by_short: HashMap<&str, usize> = HashMap::new();
    for n in names.values() {
        *by_short.entry(n.short.as_str()).or_default() += 1;
    }
    let mut shown: HashMap<String, String> = names
        .iter()
        .map(|(s, n)| {
            let text = if by_short[n.short.as_str()] > 1 {
                n.qualified.clone()
            } else {
                n.short.clone()
            };
            ((*s).to_owned(), text)
        })
        .collect();
    keep_names_unique(&mut shown);
    let swap = |v: &Value| -> Value {
        match v {
            Value::Text(s) => match shown.get(s) {
                Some(n) => Value::Text(n.as_str().into()),
                None => v.clone(),
            },
            v => v.clone(),
        }
    };
    let mut out = answer.clone();
    let mut sites = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut sites_left_out = 0;
    for row in &mut out.rows {
        for c in &mut row.cells {
            match c {
                Cell::Value(v) => {
                    if let Value::Text(s) = &*v
                        && shown.contains_key(s)
                        && seen.insert(s.clone())
                        && let Some(site) = site(source, v)
                    {
                        if sites.len() < SITES_SHOWN {
                            sites.push(format!("{} {site}", shown[s]));
                        } else {
                            sites_left_out += 1;
                        }
                    }
                    *v = swap(v);
                }
                Cell::List(vs) => vs.iter_mut().for_each(|v| *v = swap(v)),
            }
        }
        let mut stack: Vec<&mut Node> = row.witness.iter_mut().collect();
        while let Some(n) = stack.pop() {
            n.values.iter_mut().for_each(|v| *v = swap(v));
            stack.extend(n.children.iter_mut());
        }
    }
    Some(Named {
        answer: out,
        sites,
        sites_left_out,
        shown,
    })
}

/// Leaves a symbol whole where its name would not say which symbol it is: two symbols of
/// the answer whose names (even qualified) are the same. So every name shown stands for
/// one symbol, and a JSON page's `symbols` table maps each name back to it. (A name may
/// still equal a plain text value, such as a type's display name `Deferred` beside the
/// type `Deferred`: the rows keep both whole, and a witness reads as the text does.)
fn keep_names_unique(shown: &mut HashMap<String, String>) {
    let mut count: HashMap<&str, usize> = HashMap::new();
    for n in shown.values() {
        *count.entry(n.as_str()).or_default() += 1;
    }
    let clash: std::collections::HashSet<String> = count
        .into_iter()
        .filter(|&(_, k)| k > 1)
        .map(|(n, _)| n.to_owned())
        .collect();
    if !clash.is_empty() {
        shown.retain(|_, n| !clash.contains(n));
    }
}

/// The first definition site of `symbol` (`path:line`), by path and line, if the data has
/// a `definition_at` relation holding one.
fn site(source: &dyn FactSource, symbol: &Value) -> Option<String> {
    source.relation("definition_at").ok()??;
    let term = source.term(symbol).ok()??;
    let mut best: Option<(Value, Value)> = None;
    let _ = source.lookup("definition_at", &[(0, term)], &mut |r| {
        if let (Ok(p), Ok(l)) = (source.value(r[1]), source.value(r[2]))
            && best.as_ref().is_none_or(|b| (&p, &l) < (&b.0, &b.1))
        {
            best = Some((p, l));
        }
        ControlFlow::Continue(())
    });
    let (path, line) = best?;
    match (path, line) {
        (Value::Text(p), Value::Number(l)) => Some(format!("{p}:{l}")),
        _ => None,
    }
}

/// The lines a text answer ends with: where its rows' symbols are defined.
pub(crate) fn write_sites(named: &Named, out: &mut String) {
    if named.sites.is_empty() {
        return;
    }
    out.push_str("\ndefined at:");
    for s in &named.sites {
        out.push_str("\n  ");
        out.push_str(s);
    }
    if named.sites_left_out > 0 {
        out.push_str(&format!("\n  ... {} more", named.sites_left_out));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short(s: &str) -> (String, String) {
        let n = name(s).unwrap_or_else(|| panic!("not read: {s}"));
        (n.short, n.qualified)
    }

    #[test]
    fn names_read_as_a_person_writes_them() {
        assert_eq!(
            short("scip-python python django 5.1 `django.db.models.base`/Model#save()."),
            (
                "Model.save()".into(),
                "django.db.models.base.Model.save()".into()
            )
        );
        assert_eq!(
            short("scip-typescript npm rxjs 7.8.2 src/internal/`Observable.ts`/Observable#pipe()."),
            (
                "Observable.pipe()".into(),
                "src/internal/Observable.ts:Observable.pipe()".into()
            )
        );
        assert_eq!(
            short("rust-analyzer cargo semver 1.0.23 version/Version#parse()."),
            ("Version.parse()".into(), "version.Version.parse()".into())
        );
        assert_eq!(
            short("rust-analyzer cargo std 1.0 macros/println!"),
            ("println!".into(), "macros.println!".into())
        );
        assert_eq!(
            short("scip-python python pkg 1 `a.b`/f().(x)"),
            ("f()[x]".into(), "a.b.f()[x]".into())
        );
        assert_eq!(
            short("scip-go gomod github.com/x/y  z v1 `github.com/x/y`/"),
            ("github.com/x/y".into(), "github.com/x/y".into())
        );
        assert_eq!(
            short("scip-python python p 1 `a`/C#m(+1)."),
            ("C.m()".into(), "a.C.m()".into())
        );
        assert_eq!(name("local 12"), None);
        assert_eq!(name("api"), None);
        assert_eq!(name("a b c d"), None);
    }
}
