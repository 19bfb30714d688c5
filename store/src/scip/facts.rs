//! The facts one SCIP document (or one external symbol) states, in the relations of
//! [`super::RELATIONS`].

use std::borrow::Cow;

use protobuf::{Enum, EnumFull};
use rustc_hash::{FxHashMap, FxHashSet};
use scip::types::{
    Document, MultiLineRange, Occurrence, SingleLineRange, SymbolInformation, occurrence,
};

use super::Rel;
use super::symbol::{self, is_local};
use crate::dump::{Fact, FactSink, Field, Origin};
use crate::error::IngestError;

type Result<T, E = IngestError> = std::result::Result<T, E>;

/// The `Definition` bit of `Occurrence.symbol_roles`.
const DEFINITION: i32 = 1;

/// A position in a document: 0-based line and character, as SCIP gives them.
type Pos = (i32, i32);

/// Writes facts into a sink, with the relations' column names and docs.
pub(crate) struct Emitter<'k> {
    pub(crate) sink: &'k mut dyn FactSink,
    columns: Vec<Vec<String>>,
    /// SCIP kind names by enum value, looked up once each.
    kinds: FxHashMap<i32, Option<String>>,
    /// Facts emitted so far.
    pub(crate) facts: u64,
    /// The number of the document (or external symbol) being read, the "line" of its facts.
    pub(crate) line: u64,
}

impl<'k> Emitter<'k> {
    /// Emits into `sink`.
    pub(crate) fn new(sink: &'k mut dyn FactSink) -> Self {
        Emitter {
            sink,
            columns: super::RELATIONS
                .iter()
                .map(|r| r.columns.iter().map(|c| (*c).to_owned()).collect())
                .collect(),
            kinds: FxHashMap::default(),
            facts: 0,
            line: 0,
        }
    }

    fn emit(&mut self, rel: Rel, fields: &[Field<'_>], unit: &str) -> Result<()> {
        let def = &super::RELATIONS[rel as usize];
        self.facts += 1;
        self.sink.fact(&Fact {
            spelled: def.name,
            relation: def.name,
            origin: Origin::Facts,
            columns: &self.columns[rel as usize],
            doc: Some(def.doc),
            fields,
            unit: Some(unit),
            line: self.line,
        })
    }

    /// Declares every relation of [`super::RELATIONS`], so that each exists (maybe empty)
    /// once the batch commits: the `code` module reads `uses` and `implements`, which an
    /// indexer without enclosing ranges or relationships gives no fact of.
    pub(crate) fn declare_all(&mut self) -> Result<()> {
        for (i, def) in super::RELATIONS.iter().enumerate() {
            self.sink.declare(&Fact {
                spelled: def.name,
                relation: def.name,
                origin: Origin::Facts,
                columns: &self.columns[i],
                doc: Some(def.doc),
                fields: &[],
                unit: None,
                line: self.line,
            })?;
        }
        Ok(())
    }

    /// The facts of one document whose path (and unit) is `path` and content hash `hash`.
    pub(crate) fn document(&mut self, doc: &Document, path: &str, hash: &str) -> Result<()> {
        let language = if doc.language.is_empty() {
            language_of(&doc.relative_path).map(Cow::Borrowed)
        } else {
            Some(Cow::Borrowed(doc.language.as_str()))
        };
        self.emit(
            Rel::Document,
            &[text(path), language.map_or(Field::Absent, Field::Text)],
            path,
        )?;
        self.emit(Rel::DocumentHash, &[text(path), text(hash)], path)?;
        let mut defined: FxHashSet<&str> = FxHashSet::default();
        let mut referenced: FxHashSet<&str> = FxHashSet::default();
        let mut at: FxHashSet<(bool, &str, i32)> = FxHashSet::default();
        let mut enclosing: Vec<(Pos, Pos, &str)> = Vec::new();
        let mut refs: Vec<(Pos, &str)> = Vec::new();
        for occ in &doc.occurrences {
            let sym = occ.symbol.as_str();
            if sym.is_empty() || is_local(sym) {
                continue;
            }
            let Some((start, _)) = range(occ) else {
                continue;
            };
            let line = Field::Number(f64::from(start.0) + 1.0);
            if occ.symbol_roles & DEFINITION != 0 {
                if defined.insert(sym) {
                    self.emit(Rel::Defines, &[text(path), text(sym)], path)?;
                }
                if at.insert((true, sym, start.0)) {
                    self.emit(Rel::DefinitionAt, &[text(sym), text(path), line], path)?;
                }
                if let Some((s, e)) = enclosing_range(occ) {
                    enclosing.push((s, e, sym));
                }
            } else {
                if referenced.insert(sym) {
                    self.emit(Rel::References, &[text(path), text(sym)], path)?;
                }
                if at.insert((false, sym, start.0)) {
                    self.emit(Rel::ReferenceAt, &[text(path), text(sym), line], path)?;
                }
                refs.push((start, sym));
            }
        }
        let mut described: FxHashSet<&str> = FxHashSet::default();
        for info in &doc.symbols {
            if !info.symbol.is_empty() && !is_local(&info.symbol) {
                described.insert(&info.symbol);
                self.symbol(&info.symbol, Some(info), path)?;
            }
        }
        let mut undescribed: Vec<&str> = defined.difference(&described).copied().collect();
        undescribed.sort_unstable();
        for sym in undescribed {
            self.symbol(sym, None, path)?;
        }
        self.uses(&mut enclosing, &mut refs, path)
    }

    /// An external symbol's facts, owned by `unit`.
    pub(crate) fn external(&mut self, info: &SymbolInformation, unit: &str) -> Result<()> {
        if info.symbol.is_empty() || is_local(&info.symbol) {
            return Ok(());
        }
        self.symbol(&info.symbol, Some(info), unit)
    }

    /// `symbol`, `documentation`, the relationships, `member_of` and `package` of one global
    /// symbol.
    fn symbol(&mut self, sym: &str, info: Option<&SymbolInformation>, unit: &str) -> Result<()> {
        let parsed = symbol::parse(sym);
        let given_kind = info.and_then(|i| self.kind_name(i.kind.value()));
        let kind = given_kind
            .map(Cow::Owned)
            .or_else(|| parsed.as_ref().map(|p| Cow::Borrowed(p.suffix.kind())));
        let display = info
            .map(|i| i.display_name.as_str())
            .filter(|d| !d.is_empty())
            .map(Cow::Borrowed)
            .or_else(|| parsed.as_ref().map(|p| p.name.clone()));
        self.emit(
            Rel::Symbol,
            &[
                text(sym),
                kind.map_or(Field::Absent, Field::Text),
                display.map_or(Field::Absent, Field::Text),
            ],
            unit,
        )?;
        if let Some(info) = info {
            if let Some(doc) = first_paragraph(&info.documentation) {
                self.emit(
                    Rel::Documentation,
                    &[text(sym), Field::Text(doc.into())],
                    unit,
                )?;
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
                        self.emit(rel, &[text(sym), text(&r.symbol)], unit)?;
                    }
                }
            }
        }
        if let Some(p) = parsed {
            if let Some(owner) = p.owner {
                self.emit(Rel::MemberOf, &[text(sym), text(owner)], unit)?;
            }
            self.emit(
                Rel::Package,
                &[text(sym), opt(p.manager), opt(p.package), opt(p.version)],
                unit,
            )?;
        }
        Ok(())
    }

    /// `uses(from, to)`: each reference inside the enclosing range of a definition, the
    /// innermost enclosing definition of a global symbol winning.
    fn uses(
        &mut self,
        enclosing: &mut [(Pos, Pos, &str)],
        refs: &mut [(Pos, &str)],
        path: &str,
    ) -> Result<()> {
        if enclosing.is_empty() {
            return Ok(());
        }
        // Outer ranges before the ranges they contain; then sweep the references in order,
        // keeping the stack of ranges open at the reference.
        enclosing.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        refs.sort_unstable();
        let mut seen: FxHashSet<(&str, &str)> = FxHashSet::default();
        let mut open: Vec<(Pos, &str)> = Vec::new();
        let mut next = 0;
        for &(pos, to) in refs.iter() {
            while next < enclosing.len() && enclosing[next].0 <= pos {
                let (start, end, from) = enclosing[next];
                while open.last().is_some_and(|&(e, _)| e <= start) {
                    open.pop();
                }
                open.push((end, from));
                next += 1;
            }
            while open.last().is_some_and(|&(e, _)| e <= pos) {
                open.pop();
            }
            if let Some(&(_, from)) = open.last()
                && seen.insert((from, to))
            {
                self.emit(Rel::Uses, &[text(from), text(to)], path)?;
            }
        }
        Ok(())
    }

    fn kind_name(&mut self, value: i32) -> Option<String> {
        self.kinds
            .entry(value)
            .or_insert_with(|| {
                let kind = scip::types::symbol_information::Kind::from_i32(value)?;
                let name = kind.descriptor().name().to_owned();
                (value != 0).then_some(name)
            })
            .clone()
    }
}

fn opt(v: Option<Cow<'_, str>>) -> Field<'_> {
    v.map_or(Field::Absent, Field::Text)
}

fn text(s: &str) -> Field<'_> {
    Field::Text(Cow::Borrowed(s))
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
