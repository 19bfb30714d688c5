//! The facts one SCIP document (or one external symbol) states, in the relations of
//! [`super::RELATIONS`].

use std::borrow::Cow;
use std::sync::Arc;

use protobuf::{Enum, EnumFull};
use rustc_hash::{FxHashMap, FxHashSet};
use scip::types::{
    Document, MultiLineRange, Occurrence, SingleLineRange, SymbolInformation, occurrence,
};

use super::Rel;
use super::symbol::{self, is_local};
use crate::dump::{Cell, FactGroup, GroupRelation};

/// The `Definition` bit of `Occurrence.symbol_roles`.
const DEFINITION: i32 = 1;

/// A position in a document: 0-based line and character, as SCIP gives them.
type Pos = (i32, i32);

/// The relations of [`super::RELATIONS`] as a [`FactGroup`] names them (by [`Rel`]).
pub(crate) fn group_relations() -> Arc<[GroupRelation]> {
    super::RELATIONS
        .iter()
        .map(|r| GroupRelation {
            name: r.name.to_owned(),
            columns: r.columns.iter().map(|c| (*c).to_owned()).collect(),
            doc: Some(r.doc.to_owned()),
        })
        .collect()
}

/// The texts of a group that borrow from the message being read, by their number in the
/// group, so that a symbol repeated in many occurrences is one text.
struct Texts<'d> {
    ids: FxHashMap<&'d str, u32>,
}

impl<'d> Texts<'d> {
    fn new() -> Self {
        Texts {
            ids: FxHashMap::default(),
        }
    }

    /// Room for `n` distinct texts without growing.
    fn with_capacity(n: usize) -> Self {
        Texts {
            ids: FxHashMap::with_capacity_and_hasher(n, Default::default()),
        }
    }

    /// The number of `s` in `group`.
    fn id(&mut self, group: &mut FactGroup, s: &'d str) -> u32 {
        *self.ids.entry(s).or_insert_with(|| group.add_text(s))
    }

    /// `s` as a cell of `group`.
    fn text(&mut self, group: &mut FactGroup, s: &'d str) -> Cell {
        Cell::Text(self.id(group, s))
    }

    /// A text that may borrow from the message or be made for it.
    fn cow(&mut self, group: &mut FactGroup, s: Cow<'d, str>) -> Cell {
        match s {
            Cow::Borrowed(b) => self.text(group, b),
            Cow::Owned(o) => Cell::Text(group.add_text(&o)),
        }
    }

    fn opt(&mut self, group: &mut FactGroup, s: &Option<Cow<'d, str>>) -> Cell {
        s.as_ref()
            .map_or(Cell::Absent, |s| self.cow(group, s.clone()))
    }
}

/// Gathers the facts of one document (or one external symbol) at a time into a
/// [`FactGroup`] (emptied first by each call).
#[derive(Default)]
pub(crate) struct Emitter {
    /// SCIP kind names by enum value, looked up once each.
    kinds: FxHashMap<i32, Option<Box<str>>>,
    /// What one document's facts are gathered with, kept (empty) for the next one so that
    /// its sets and lists do not grow from nothing again.
    scratch: Scratch,
}

/// A document's working sets, by the group's text numbers.
#[derive(Default)]
struct Scratch {
    /// Symbols the document defines, and refers to.
    defined: FxHashSet<u32>,
    referenced: FxHashSet<u32>,
    /// The (definition or not, symbol, line) of the occurrences written.
    at: FxHashSet<(bool, u32, i32)>,
    /// Symbols with a `SymbolInformation` in the document.
    described: FxHashSet<u32>,
    /// Global definitions' enclosing ranges: start, end, symbol, and whether the symbol
    /// can be a caller.
    enclosing: Vec<(Pos, Pos, u32, bool)>,
    refs: Vec<(Pos, u32)>,
    /// `uses` pairs written, and the definitions open at a reference.
    seen: FxHashSet<(u32, u32)>,
    /// `call_site` and `other_site` facts written: (symbol, holder or `u32::MAX`, line).
    sites: FxHashSet<(u32, u32, i32)>,
    open: Vec<(Pos, u32, bool)>,
}

impl Scratch {
    fn clear(&mut self) {
        self.defined.clear();
        self.referenced.clear();
        self.at.clear();
        self.described.clear();
        self.enclosing.clear();
        self.refs.clear();
        self.seen.clear();
        self.sites.clear();
        self.open.clear();
    }
}

impl Emitter {
    /// The facts of document number `number`, whose path (and unit) is `path`, content
    /// hash `hash` and source file's content hash `source`, if it was read.
    pub(crate) fn document(
        &mut self,
        g: &mut FactGroup,
        doc: &Document,
        path: &str,
        (hash, source): (&str, Option<&str>),
        number: u64,
    ) {
        let kinds = &mut self.kinds;
        let w = &mut self.scratch;
        w.clear();
        g.clear(path, number);
        let room = (doc.occurrences.len() / 2 + doc.symbols.len() * 4).min(1 << 14);
        let mut texts = Texts::with_capacity(room);
        let p = Cell::Text(g.add_text(path));
        let language = if doc.language.is_empty() {
            language_of(&doc.relative_path).map_or(Cell::Absent, |l| texts.text(g, l))
        } else {
            texts.text(g, &doc.language)
        };
        g.add(Rel::Document as usize, &[p, language]);
        if let Some((dir, _)) = path.rsplit_once('/') {
            let d = texts.text(g, dir);
            g.add(Rel::InDirectory as usize, &[p, d]);
        }
        let h = Cell::Text(g.add_text(hash));
        g.add(Rel::DocumentHash as usize, &[p, h]);
        if let Some(source) = source {
            let h = Cell::Text(g.add_text(source));
            g.add(Rel::SourceFile as usize, &[p, h]);
        }
        // Symbols by their number in the group: each occurrence's symbol is hashed once.
        let mut defined_symbols: Vec<(&str, u32)> = Vec::new();
        for occ in &doc.occurrences {
            let sym = occ.symbol.as_str();
            if sym.is_empty() || is_local(sym) {
                continue;
            }
            let Some((start, _)) = range(occ) else {
                continue;
            };
            let id = texts.id(g, sym);
            let s = Cell::Text(id);
            let line = Cell::Number(f64::from(start.0) + 1.0);
            if occ.symbol_roles & DEFINITION != 0 {
                if w.defined.insert(id) {
                    defined_symbols.push((sym, id));
                    g.add(Rel::Defines as usize, &[p, s]);
                }
                if w.at.insert((true, id, start.0)) {
                    g.add(Rel::DefinitionAt as usize, &[s, p, line]);
                }
                if let Some((s, e)) = enclosing_range(occ) {
                    w.enclosing.push((s, e, id, can_call(sym)));
                }
            } else {
                if w.referenced.insert(id) {
                    g.add(Rel::References as usize, &[p, s]);
                }
                if w.at.insert((false, id, start.0)) {
                    g.add(Rel::ReferenceAt as usize, &[p, s, line]);
                }
                w.refs.push((start, id));
            }
        }
        for info in &doc.symbols {
            if !info.symbol.is_empty() && !is_local(&info.symbol) {
                // The number the symbol's text has (or gets) in the group.
                w.described.insert(texts.id(g, &info.symbol));
                symbol(g, kinds, &mut texts, &info.symbol, Some(info));
            }
        }
        defined_symbols.retain(|(_, id)| !w.described.contains(id));
        defined_symbols.sort_unstable();
        for (sym, _) in defined_symbols {
            symbol(g, kinds, &mut texts, sym, None);
        }
        uses(g, w, p);
    }

    /// The facts of external symbol number `number`, owned by `unit`.
    pub(crate) fn external(
        &mut self,
        g: &mut FactGroup,
        info: &SymbolInformation,
        unit: &str,
        number: u64,
    ) {
        g.clear(unit, number);
        if info.symbol.is_empty() || is_local(&info.symbol) {
            return;
        }
        symbol(
            g,
            &mut self.kinds,
            &mut Texts::new(),
            &info.symbol,
            Some(info),
        );
    }
}

/// `symbol`, `documentation`, the relationships, `member_of` and `package` of one global
/// symbol.
fn symbol<'d>(
    g: &mut FactGroup,
    kinds: &mut FxHashMap<i32, Option<Box<str>>>,
    texts: &mut Texts<'d>,
    sym: &'d str,
    info: Option<&'d SymbolInformation>,
) {
    let parsed = symbol::parse(sym);
    let s = texts.text(g, sym);
    let kind = match info.and_then(|i| kind_name(kinds, i.kind.value())) {
        Some(k) => Cell::Text(g.add_text(k)),
        None => parsed
            .as_ref()
            .map_or(Cell::Absent, |p| texts.text(g, p.suffix.kind())),
    };
    let display = match info
        .map(|i| i.display_name.as_str())
        .filter(|d| !d.is_empty())
    {
        Some(d) => texts.text(g, d),
        None => parsed
            .as_ref()
            .map_or(Cell::Absent, |p| texts.cow(g, p.name.clone())),
    };
    g.add(Rel::Symbol as usize, &[s, kind, display]);
    if let Some(info) = info {
        if let Some(doc) = first_paragraph(&info.documentation) {
            let d = Cell::Text(g.add_text(&doc));
            g.add(Rel::Documentation as usize, &[s, d]);
        }
        for r in &info.relationships {
            if r.symbol.is_empty() || is_local(&r.symbol) {
                continue;
            }
            for (on, rel) in [
                (r.is_implementation, Rel::Implements),
                (r.is_type_definition, Rel::TypeDefinition),
                (r.is_reference, Rel::ReferencesSymbol),
                (r.is_definition, Rel::DefinitionOf),
            ] {
                if on {
                    let t = texts.text(g, &r.symbol);
                    g.add(rel as usize, &[s, t]);
                }
            }
        }
    }
    if let Some(p) = parsed {
        let d = texts.text(g, p.suffix.kind());
        g.add(Rel::Descriptor as usize, &[s, d]);
        if let Some(owner) = p.owner {
            let o = texts.text(g, owner);
            g.add(Rel::MemberOf as usize, &[s, o]);
        }
        let cells = [
            s,
            texts.opt(g, &p.manager),
            texts.opt(g, &p.package),
            texts.opt(g, &p.version),
        ];
        g.add(Rel::Package as usize, &cells);
    }
}

/// The SCIP name of a kind, looked up once per value.
fn kind_name(kinds: &mut FxHashMap<i32, Option<Box<str>>>, value: i32) -> Option<&str> {
    kinds
        .entry(value)
        .or_insert_with(|| {
            let kind = scip::types::symbol_information::Kind::from_i32(value)?;
            let name = kind.descriptor().name().into();
            (value != 0).then_some(name)
        })
        .as_deref()
}

/// Whether a symbol can be a caller, from its last descriptor alone: a method
/// (`name().`), a term (`name.`: a constant, variable, field or arrow function) or a macro
/// (`name!`); never a type (`#`), a namespace (`/`: module, package, file), a meta, a
/// parameter or a type parameter. Every indexer's symbols are read the same way.
pub(crate) fn can_call(sym: &str) -> bool {
    symbol::parse(sym).is_some_and(|p| {
        matches!(
            p.suffix,
            symbol::Suffix::Method | symbol::Suffix::Term | symbol::Suffix::Macro
        )
    })
}

/// Each reference's holder, the innermost global definition whose enclosing range holds it
/// (the latest to start; of two starting together, the shorter), and from it:
///
/// - `uses(holder, to)` for each distinct pair;
/// - `call_site(to, holder, path, line)` when the holder can be a caller ([`can_call`]);
/// - `other_site(to, holder, path, line)` when it cannot (a class body, a module's own
///   code), or `other_site(to, absent, path, line)` when no definition holds it (code at a
///   file's top level, where the indexer gives the file no range).
///
/// A reference whose holder is the symbol itself (a recursive call, a class naming itself
/// in its body) is `other_site(to, to, path, line)`: a definition is not its own caller,
/// and every reference stays answerable with its site.
fn uses(g: &mut FactGroup, w: &mut Scratch, path: Cell) {
    let Scratch {
        enclosing,
        refs,
        seen,
        sites,
        open,
        ..
    } = w;
    // Outer ranges before the ranges they contain; then sweep the references in order,
    // keeping the stack of ranges open at the reference.
    enclosing.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    refs.sort_unstable();
    let mut next = 0;
    for &(pos, to) in refs.iter() {
        while next < enclosing.len() && enclosing[next].0 <= pos {
            let (start, end, from, calls) = enclosing[next];
            while open.last().is_some_and(|&(e, ..)| e <= start) {
                open.pop();
            }
            open.push((end, from, calls));
            next += 1;
        }
        while open.last().is_some_and(|&(e, ..)| e <= pos) {
            open.pop();
        }
        let line = Cell::Number(f64::from(pos.0) + 1.0);
        let to_cell = Cell::Text(to);
        match open.last() {
            None => {
                if sites.insert((to, u32::MAX, pos.0)) {
                    g.add(
                        Rel::OtherSite as usize,
                        &[to_cell, Cell::Absent, path, line],
                    );
                }
            }
            Some(&(_, from, calls)) => {
                if seen.insert((from, to)) {
                    g.add(Rel::Uses as usize, &[Cell::Text(from), to_cell]);
                }
                if sites.insert((to, from, pos.0)) {
                    // A definition is not its own caller: a reference inside its own
                    // definition (recursion) is an other site held by itself.
                    let rel = if calls && from != to {
                        Rel::CallSite
                    } else {
                        Rel::OtherSite
                    };
                    g.add(rel as usize, &[to_cell, Cell::Text(from), path, line]);
                }
            }
        }
    }
}

/// What is out of range in a document's positions, if anything: an occurrence's range or
/// enclosing range with a negative number, ending before it starts, or not of the three or
/// four numbers SCIP allows. Such a document is left out, naming its first such occurrence.
pub(crate) fn out_of_range(doc: &Document) -> Option<String> {
    for (i, occ) in doc.occurrences.iter().enumerate() {
        let n = i + 1;
        for (what, ints, typed) in [
            ("range", &occ.range, range(occ)),
            (
                "enclosing range",
                &occ.enclosing_range,
                enclosing_range(occ),
            ),
        ] {
            let typed_given = match what {
                "range" => occ.typed_range.is_some(),
                _ => occ.typed_enclosing_range.is_some(),
            };
            if !typed_given && !ints.is_empty() && !matches!(ints.len(), 3 | 4) {
                return Some(format!(
                    "occurrence {n} has a {what} of {} numbers, not 3 or 4",
                    ints.len()
                ));
            }
            let Some((start, end)) = typed else {
                continue;
            };
            if start.0 < 0 || start.1 < 0 || end.0 < 0 || end.1 < 0 {
                return Some(format!(
                    "occurrence {n} has a negative position in its {what} \
                     (line {}, character {} to line {}, character {})",
                    start.0, start.1, end.0, end.1
                ));
            }
            if end < start {
                return Some(format!(
                    "occurrence {n}'s {what} ends (line {}, character {}) before it starts \
                     (line {}, character {})",
                    end.0, end.1, start.0, start.1
                ));
            }
        }
    }
    None
}

/// An occurrence's range: start and end positions (the typed range first, else the
/// `repeated int32` one of three or four elements).
fn range(occ: &Occurrence) -> Option<(Pos, Pos)> {
    match &occ.typed_range {
        Some(occurrence::Typed_range::SingleLineRange(r)) => Some(single(r)),
        Some(occurrence::Typed_range::MultiLineRange(r)) => Some(multi(r)),
        _ => int_range(&occ.range),
    }
}

/// An occurrence's enclosing range, read like [`range`].
fn enclosing_range(occ: &Occurrence) -> Option<(Pos, Pos)> {
    match &occ.typed_enclosing_range {
        Some(occurrence::Typed_enclosing_range::SingleLineEnclosingRange(r)) => Some(single(r)),
        Some(occurrence::Typed_enclosing_range::MultiLineEnclosingRange(r)) => Some(multi(r)),
        _ => int_range(&occ.enclosing_range),
    }
}

fn single(r: &SingleLineRange) -> (Pos, Pos) {
    ((r.line, r.start_character), (r.line, r.end_character))
}

fn multi(r: &MultiLineRange) -> (Pos, Pos) {
    (
        (r.start_line, r.start_character),
        (r.end_line, r.end_character),
    )
}

fn int_range(r: &[i32]) -> Option<(Pos, Pos)> {
    match *r {
        [line, start, end] => Some(((line, start), (line, end))),
        [line, start, end_line, end] => Some(((line, start), (end_line, end))),
        _ => None,
    }
}

/// The first paragraph of a symbol's documentation that is prose, not a fenced code block
/// (scip-typescript puts the signature in one first), its lines joined by spaces.
pub(crate) fn first_paragraph(docs: &[String]) -> Option<String> {
    for doc in docs {
        let mut fence = false;
        let mut lines: Vec<&str> = Vec::new();
        for line in doc.lines() {
            let trimmed = line.trim();
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                fence = !fence;
                if !lines.is_empty() {
                    break;
                }
                continue;
            }
            if fence {
                continue;
            }
            if trimmed.is_empty() {
                if lines.is_empty() {
                    continue;
                }
                break;
            }
            lines.push(trimmed);
        }
        if !lines.is_empty() {
            return Some(lines.join(" "));
        }
    }
    None
}

/// A language name (SCIP's `Language` enum spelling) from a file's extension, for indexers
/// that leave `Document.language` empty.
fn language_of(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.')?.1;
    Some(match ext {
        "ts" | "tsx" | "mts" | "cts" => "TypeScript",
        "js" | "jsx" | "mjs" | "cjs" => "JavaScript",
        "py" | "pyi" => "Python",
        "rs" => "Rust",
        "go" => "Go",
        "java" => "Java",
        "kt" => "Kotlin",
        "scala" => "Scala",
        "c" | "h" => "C",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "CPP",
        "cs" => "CSharp",
        "rb" => "Ruby",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_paragraph_skips_the_signature_block() {
        let docs = vec![
            "```ts\nfunction f(\n\nx: number)\n```".to_owned(),
            "\nMaps each value.\nLazily.\n\nMore.".to_owned(),
        ];
        assert_eq!(
            first_paragraph(&docs).as_deref(),
            Some("Maps each value. Lazily.")
        );
        assert_eq!(first_paragraph(&["```\nx\n```".to_owned()]), None);
    }
}
