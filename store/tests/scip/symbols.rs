//! An independent answer to the `code` module's `outline` and `implementations`: from a
//! reading of a SCIP index (`reading.rs`, not the store's decoder) and a reading of SCIP
//! symbol strings by the grammar of `scip.proto` (written here, not the store's), each
//! file's outline and each type's implementations, transitively.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use crate::calls::{ABSENT, global, repo};
use crate::reading::Reading;

/// A symbol's last descriptor: its kind (as the `descriptor` relation names it) and the
/// symbol it is a member of (the same string without it), when a descriptor precedes it.
#[derive(Debug, PartialEq, Eq)]
pub struct Last<'a> {
    pub kind: &'static str,
    pub owner: Option<&'a str>,
}

/// Reads a global symbol by the grammar of `scip.proto`: four space-terminated header fields
/// (a space inside one written as two), then descriptors, each a name (simple, or escaped in
/// backticks with a backtick doubled) and a suffix. `None` when it does not follow it.
pub fn last_descriptor(symbol: &str) -> Option<Last<'_>> {
    if !global(symbol) {
        return None;
    }
    let b = symbol.as_bytes();
    let mut i = 0;
    for _ in 0..4 {
        loop {
            match b.get(i)? {
                b' ' if b.get(i + 1) == Some(&b' ') => i += 2,
                b' ' => {
                    i += 1;
                    break;
                }
                _ => i += 1,
            }
        }
    }
    let mut last: Option<(usize, &'static str)> = None;
    let mut before = None;
    while i < b.len() {
        let start = i;
        let kind = match b[i] {
            b'[' => {
                i = name(b, i + 1)?;
                expect(b, &mut i, b']')?;
                "TypeParameter"
            }
            b'(' => {
                i = name(b, i + 1)?;
                expect(b, &mut i, b')')?;
                "Parameter"
            }
            _ => {
                i = name(b, i)?;
                match b.get(i)? {
                    b'/' => "Namespace",
                    b'#' => "Type",
                    b'.' => "Term",
                    b':' => "Meta",
                    b'!' => "Macro",
                    b'(' => {
                        i += 1;
                        while b.get(i).is_some_and(|&c| simple(c)) {
                            i += 1;
                        }
                        expect(b, &mut i, b')')?;
                        if b.get(i) != Some(&b'.') {
                            return None;
                        }
                        "Method"
                    }
                    _ => return None,
                }
            }
        };
        if kind != "TypeParameter" && kind != "Parameter" {
            i += 1;
        }
        before = last.map(|(s, _)| s);
        last = Some((start, kind));
    }
    let (start, kind) = last?;
    Some(Last {
        kind,
        owner: before.map(|_| &symbol[..start]),
    })
}

fn simple(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'+' | b'-' | b'$')
}

/// The end of the name starting at `i`: simple characters, or a backtick-escaped name.
fn name(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i) == Some(&b'`') {
        i += 1;
        loop {
            match b.get(i)? {
                b'`' if b.get(i + 1) == Some(&b'`') => i += 2,
                b'`' => return Some(i + 1),
                _ => i += 1,
            }
        }
    }
    let start = i;
    while b.get(i).is_some_and(|&c| simple(c)) {
        i += 1;
    }
    (i > start).then_some(i)
}

fn expect(b: &[u8], i: &mut usize, c: u8) -> Option<()> {
    (b.get(*i) == Some(&c)).then(|| *i += 1)
}

/// The name of SCIP's `SymbolInformation.Kind` number, `None` for 0 (unspecified) or a
/// number the enum lacks.
fn kind_name(k: i32) -> Option<String> {
    use protobuf::Enum as _;
    let kind = scip::types::symbol_information::Kind::from_i32(k)?;
    (k != 0).then(|| format!("{kind:?}"))
}

/// The kinds each global symbol is given (`symbol(symbol, kind, _)`): the indexer's kind of
/// each SymbolInformation (a document's or an external one), else its last descriptor's;
/// and the last descriptor's for a symbol a document defines without describing it.
pub fn kinds(r: &Reading) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut add = |sym: &str, k: i32| {
        let kind = kind_name(k).or_else(|| last_descriptor(sym).map(|l| l.kind.to_owned()));
        if let Some(kind) = kind {
            out.entry(sym.to_owned()).or_default().insert(kind);
        }
    };
    for doc in &r.docs {
        let described: BTreeSet<&str> = doc.infos.iter().map(|(s, _)| s.as_str()).collect();
        for (s, k) in doc.infos.iter().filter(|(s, _)| global(s)) {
            add(s, *k);
        }
        for o in &doc.occs {
            if global(&o.symbol) && o.roles & 1 != 0 && !described.contains(o.symbol.as_str()) {
                add(&o.symbol, 0);
            }
        }
    }
    for (s, k) in r.external_infos.iter().filter(|(s, _)| global(s)) {
        add(s, *k);
    }
    out
}

/// (path, symbol, kind, line, owner or `absent`).
pub type OutlineRow = (String, String, String, i64, String);

/// Every file's outline: each definition of a type, term, method or macro, with each kind
/// the symbol is given and its definition's line, and its owner when that is a type (or
/// anything but a namespace) defined in the same file, else `absent`.
pub fn outlines(r: &Reading) -> BTreeSet<OutlineRow> {
    let repo = repo(r);
    let kinds = kinds(r);
    let mut out = BTreeSet::new();
    for doc in &r.docs {
        let path = format!("{repo}/{}", doc.path);
        let defined: BTreeSet<&str> = doc
            .occs
            .iter()
            .filter(|o| global(&o.symbol) && o.roles & 1 != 0)
            .map(|o| o.symbol.as_str())
            .collect();
        for o in doc
            .occs
            .iter()
            .filter(|o| global(&o.symbol) && o.roles & 1 != 0)
        {
            let Some(last) = last_descriptor(&o.symbol) else {
                continue;
            };
            if !matches!(last.kind, "Type" | "Term" | "Method" | "Macro") {
                continue;
            }
            let owner = last
                .owner
                .filter(|w| defined.contains(w))
                .filter(|w| last_descriptor(w).is_some_and(|l| l.kind != "Namespace"))
                .unwrap_or(ABSENT);
            for kind in kinds.get(&o.symbol).into_iter().flatten() {
                out.insert((
                    path.clone(),
                    o.symbol.clone(),
                    kind.clone(),
                    o.start.0 + 1,
                    owner.to_owned(),
                ));
            }
        }
    }
    out
}

/// The `implements(symbol, target)` pairs of global symbols, from documents' and external
/// SymbolInformation.
pub fn implements(r: &Reading) -> BTreeSet<(String, String)> {
    r.docs
        .iter()
        .flat_map(|d| &d.implements)
        .chain(&r.external_implements)
        .filter(|(s, t)| global(s) && global(t))
        .cloned()
        .collect()
}

/// Each type's implementations, directly or through a type that implements it: type to
/// the symbols that reach it through `implements`.
pub fn implementations(r: &Reading) -> BTreeMap<String, BTreeSet<String>> {
    let mut by_target: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let pairs = implements(r);
    for (s, t) in &pairs {
        by_target.entry(t).or_default().push(s);
    }
    let mut out = BTreeMap::new();
    for &t in by_target.keys() {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut todo: Vec<&str> = by_target[t].clone();
        while let Some(s) = todo.pop() {
            if seen.insert(s) {
                todo.extend(by_target.get(s).into_iter().flatten());
            }
        }
        out.insert(
            t.to_owned(),
            seen.into_iter().map(str::to_owned).collect::<BTreeSet<_>>(),
        );
    }
    out
}
