//! Dump formats: reading edge, attribute, node, Soufflé `.facts` and JSON-lines dumps.
//!
//! Every format is UTF-8, one fact a line. In the tab-separated formats, `#` comment lines
//! and blank lines are skipped, `\t`, `\n`, `\r` and `\\` escape inside a field, and a field
//! that is exactly `\N` is `absent`. A field is a number when it is the shortest printing of
//! one (see [`strata_eval::Value::from_field`]), text otherwise. In JSON lines, strings are
//! text, numbers are numbers and `null` is absent. A `.gz` file (or any input starting with
//! the gzip magic bytes) is decompressed as it is read.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use smallvec::SmallVec;
use strata_eval::canonical_number;

use crate::error::IngestError;
use fields::{plain_fields, tab_fields};
use json::{JsonObject, json_number};
use lines::Line;

mod block;
mod fields;
mod group;
mod json;
mod lines;
mod recorded;
mod run;
#[cfg(test)]
mod seen;
mod slot;
pub use group::{Cell, FactGroup, GroupRelation};
pub use run::FactRun;

type Result<T, E = IngestError> = std::result::Result<T, E>;

/// The format of a dump file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `src<TAB>kind<TAB>dst[<TAB>unit]`: relation `kind(src, dst)`, kind lower-cased.
    Edges,
    /// `node<TAB>key<TAB>value[<TAB>unit]`: relation `key(node, value)`, key lower-cased.
    Attrs,
    /// `id<TAB>label[<TAB>unit]`: relation `label(id)`, label lower-cased.
    Nodes,
    /// Soufflé's fact files: each line one tuple of the relation the file is named after.
    Facts,
    /// JSON objects `{"src","kind","dst"}`, `{"node","key","value"}` or `{"id","label"}`,
    /// each with an optional `"unit"`.
    Jsonl,
    /// A SCIP index (`index.scip`), the protobuf code indexers write: see [`crate::scip`].
    Scip,
}

/// Where a relation's facts came from, which decides its column names and which other
/// relations it may clash with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// An edge kind.
    Edges,
    /// An attribute key.
    Attrs,
    /// A node label.
    Nodes,
    /// A Soufflé fact file.
    Facts,
}

impl Origin {
    /// The noun for messages: "an edge kind", "an attribute key"...
    pub fn noun(self) -> &'static str {
        match self {
            Origin::Edges => "an edge kind",
            Origin::Attrs => "an attribute key",
            Origin::Nodes => "a node label",
            Origin::Facts => "a .facts file",
        }
    }
}

impl Format {
    /// Parses a `--format` argument.
    pub fn parse(s: &str) -> Option<Format> {
        Some(match s {
            "edges" => Format::Edges,
            "attrs" => Format::Attrs,
            "nodes" => Format::Nodes,
            "facts" => Format::Facts,
            "jsonl" => Format::Jsonl,
            "scip" => Format::Scip,
            _ => return None,
        })
    }

    /// The name [`Format::parse`] reads back.
    pub fn name(self) -> &'static str {
        match self {
            Format::Edges => "edges",
            Format::Attrs => "attrs",
            Format::Nodes => "nodes",
            Format::Facts => "facts",
            Format::Jsonl => "jsonl",
            Format::Scip => "scip",
        }
    }

    /// The format a file name implies (`x.edges.tsv`, `NAME.facts`, `x.jsonl`, `x.scip`, each with an
    /// optional `.gz`).
    pub fn from_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?;
        let name = name.strip_suffix(".gz").unwrap_or(name);
        [
            (".edges.tsv", Format::Edges),
            (".attrs.tsv", Format::Attrs),
            (".nodes.tsv", Format::Nodes),
            (".facts", Format::Facts),
            (".jsonl", Format::Jsonl),
            (".scip", Format::Scip),
        ]
        .into_iter()
        .find(|(suffix, _)| name.ends_with(suffix))
        .map(|(_, f)| f)
    }
}

/// The relation a `.facts` file holds: its file name without `.facts` (and `.gz`).
pub fn facts_relation(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let name = name.strip_suffix(".gz").unwrap_or(name);
    name.strip_suffix(".facts").map(str::to_owned)
}

/// One field of a fact as read from a dump.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Field<'a> {
    /// `\N` in TSV, `null` in JSON.
    #[default]
    Absent,
    /// A number.
    Number(f64),
    /// A text.
    Text(Cow<'a, str>),
}

impl Field<'_> {
    fn from_tsv(s: Cow<'_, str>) -> Field<'_> {
        if s == "\\N" {
            return Field::Absent;
        }
        match canonical_number(&s) {
            Some(n) => Field::Number(n),
            None => Field::Text(s),
        }
    }
}

/// One fact read from a dump, handed to a [`FactSink`].
#[derive(Debug)]
pub struct Fact<'a> {
    /// The relation's name as the dump spells it (`IMPORTS`), before lower-casing.
    pub spelled: &'a str,
    /// The relation's name as stored (`imports`).
    pub relation: &'a str,
    /// Where the relation comes from.
    pub origin: Origin,
    /// The columns' names.
    pub columns: &'a [String],
    /// The relation's doc line, if the dump gave one.
    pub doc: Option<&'a str>,
    /// The columns to index, if the dump declared them (a `.facts` file's `# index:`
    /// line; see [`crate::BatchOptions::indexes`]).
    pub indexed: Option<&'a [String]>,
    /// The fields, one per column.
    pub fields: &'a [Field<'a>],
    /// The unit that states the fact, if any.
    pub unit: Option<&'a str>,
    /// The 1-based line the fact was read from.
    pub line: u64,
}

/// Whatever consumes the facts of a dump.
pub trait FactSink {
    /// Takes one fact; an error stops the read.
    fn fact(&mut self, fact: &Fact<'_>) -> Result<()>;
    /// Takes the facts of one unit at once (a SCIP document's); an error stops the read.
    /// The default hands each to [`FactSink::fact`].
    fn group(&mut self, group: &FactGroup) -> Result<()> {
        group.each(&mut |f| self.fact(f))
    }
    /// Takes facts of one relation read one after another; an error stops the read. The
    /// default hands each to [`FactSink::fact`].
    fn facts(&mut self, run: &FactRun<'_>) -> Result<()> {
        run.each(&mut |f| self.fact(f))
    }
    /// Told every few thousand lines how many bytes and facts were read so far.
    fn progress(&mut self, _bytes: u64, _facts: u64) {}
    /// For a reader that skips units whose content is unchanged (a SCIP index read while the
    /// batch replaces): the store as the batch began. `None` (the default): read everything.
    fn stored(&mut self) -> std::result::Result<Option<crate::Snapshot>, crate::ReadError> {
        Ok(None)
    }
    /// Removes, in this batch, every fact `unit` states: a unit the new input no longer has.
    fn retract_unit(&mut self, _unit: &str) -> Result<()> {
        Ok(())
    }
    /// Keeps, in a batch that replaces, every stored fact of `unit`: the facts read for it
    /// afterwards add to them (a SCIP document whose stored copy is current, merged with
    /// another document of the same path). Called before any fact of the unit is read.
    fn keep_unit(&mut self, _unit: &str) -> Result<()> {
        Ok(())
    }
    /// Whether a replacing read of a SCIP index that holds no document may retract every
    /// stored document of its repository ([`crate::BatchOptions::allow_empty`]).
    fn allow_empty(&self) -> bool {
        false
    }
    /// Declares the relation of `fact` (its fields are ignored), so that it exists once the
    /// batch commits even when no fact of it was read: a module that reads it then finds
    /// an empty relation, not an unknown one.
    fn declare(&mut self, _fact: &Fact<'_>) -> Result<()> {
        Ok(())
    }
    /// Told, at the end of a SCIP index, how many documents it had and what a replacing read
    /// did with them.
    fn documents(&mut self, _changes: &crate::scip::DocumentChanges) {}
}

/// How to read one dump.
#[derive(Clone, Debug)]
pub struct DumpSpec {
    /// The name used in messages (`-` for standard input).
    pub label: String,
    /// The format.
    pub format: Format,
    /// For [`Format::Facts`]: the relation the file holds.
    pub relation: Option<String>,
    /// A unit for every fact of the file that names none itself.
    pub unit: Option<String>,
    /// For a SCIP index: the directory its repository is checked out in, whose source
    /// files are hashed (`source_file`), instead of a local `metadata.project_root`.
    pub checkout: Option<PathBuf>,
}

/// Opens a dump file (or standard input for `-`), decompressing gzip when the name ends in
/// `.gz` or the bytes start with gzip's magic.
pub fn open(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let raw: Box<dyn Read + Send> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(File::open(path).map_err(|source| IngestError::Open {
            path: path.to_owned(),
            source,
        })?)
    };
    let mut buf = BufReader::with_capacity(1 << 16, raw);
    let head = buf.fill_buf().map_err(|source| IngestError::Open {
        path: path.to_owned(),
        source,
    })?;
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            MultiGzDecoder::new(buf),
        )))
    } else {
        Ok(Box::new(buf))
    }
}

/// The longest line a dump may hold, in bytes (its line break not counted): 1 MiB. A longer
/// line is refused with `FILE:LINE: line longer than 1048576 bytes`, and is never held in
/// memory whole, so neither a line without a line break (`/dev/zero`) nor a gzip bomb can
/// make an ingest grow past it.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Relation names the query language cannot name as an atom (`not(...)` is negation,
/// `absent` a value): a dump's relation may not take them.
pub const RESERVED_NAMES: [&str; 2] = ["not", "absent"];

/// Whether `name` is refused as a relation name because the query language could not name
/// it (see [`RESERVED_NAMES`]).
pub fn reserved_name(name: &str) -> bool {
    RESERVED_NAMES.iter().any(|r| r.eq_ignore_ascii_case(name))
}

/// Reads every fact of a dump into `sink`; returns the number of facts read.
///
/// Stops at the first malformed line with [`IngestError::Malformed`] naming the file and line.
/// A line is at most [`MAX_LINE_BYTES`] long; a UTF-8 byte order mark opening the input is
/// skipped.
///
/// The lines of a text dump are read and parsed on a thread of their own, and handed to
/// `sink` on this one.
pub fn read(input: impl BufRead + Send, spec: &DumpSpec, sink: &mut dyn FactSink) -> Result<u64> {
    read_limited(input, spec, sink, MAX_LINE_BYTES)
}

/// [`read`] with another limit on the length of a line, in bytes.
pub fn read_limited(
    input: impl BufRead + Send,
    spec: &DumpSpec,
    sink: &mut dyn FactSink,
    max_line: usize,
) -> Result<u64> {
    check_spec(spec)?;
    if spec.format == Format::Scip {
        return crate::scip::read(input, spec, sink);
    }
    recorded::read_on_thread(sink, |sink| read_lines(input, spec, sink, max_line))
}

/// How many lines a text dump's reader reads between two progress reports.
const PROGRESS_LINES: u64 = 8192;

/// Reads every line of a text dump into `sink`.
fn read_lines(
    mut input: impl BufRead,
    spec: &DumpSpec,
    sink: &mut recorded::Recorder,
    max_line: usize,
) -> Result<u64> {
    let mut reader = LineReader {
        spec,
        line_no: 0,
        bytes: 0,
        facts: 0,
        facts_arity: None,
        facts_columns: Vec::new(),
        facts_doc: None,
        facts_index: None,
        columns_line: None,
        fixed_columns: fixed_columns(),
        names: rustc_hash::FxHashMap::default(),
    };
    let label = &spec.label;
    lines::each_line(
        &mut input,
        max_line,
        |line| {
            if let Line::Lines(block) = line {
                return reader.lines(block, sink);
            }
            reader.line_no += 1;
            let first = reader.line_no == 1;
            let text = match line {
                Line::TooLong => {
                    return Err(reader.err(format!("line longer than {max_line} bytes")));
                }
                // Handed to `lines` above.
                Line::Lines(_) => return Ok(()),
                Line::Valid(line) => reader.valid_text(line),
                Line::Text(mut line) => {
                    reader.bytes += line.len() as u64;
                    if first && line.starts_with(BOM) {
                        line = &line[BOM.len()..];
                    }
                    if let Some(l) = line.strip_suffix(b"\n") {
                        line = l.strip_suffix(b"\r").unwrap_or(l);
                    }
                    std::str::from_utf8(line).map_err(|e| {
                        reader.err(format!(
                            "invalid UTF-8 at byte {} of the line",
                            e.valid_up_to() + 1
                        ))
                    })?
                }
            };
            reader.line(text, sink)?;
            if reader.line_no.is_multiple_of(PROGRESS_LINES) {
                sink.progress(reader.bytes, reader.facts);
            }
            Ok(())
        },
        |source, lines| IngestError::Read {
            file: label.clone(),
            line: lines + 1,
            source,
        },
    )?;
    sink.progress(reader.bytes, reader.facts);
    Ok(reader.facts)
}

/// The column names a `# columns:` or `# index:` line lists (separated by commas, spaces
/// or tabs); `None` when it lists none, or a name that is not one.
fn column_names(list: &str) -> Option<Vec<String>> {
    let cols: Vec<String> = list
        .split([',', ' ', '\t'])
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect();
    (!cols.is_empty() && cols.iter().all(|c| valid_name(c))).then_some(cols)
}

/// Whether `text` opens with a printing ASCII character other than `#`: a line that is not
/// blank, has no space to trim and is not a comment.
fn opens_plainly(text: &str) -> bool {
    text.as_bytes()
        .first()
        .is_some_and(|&b| b.is_ascii_graphic() && b != b'#')
}

/// The UTF-8 byte order mark, skipped where it opens a dump.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Checks what a dump's spec names: a `.facts` relation's name, a unit.
fn check_spec(spec: &DumpSpec) -> Result<()> {
    if let Some(r) = &spec.relation {
        if !valid_name(r) {
            return Err(IngestError::Invalid(format!(
                "{}: \"{r}\" cannot name a relation: use letters, digits, `_` and `-`",
                spec.label
            )));
        }
        if reserved_name(r) {
            return Err(IngestError::Invalid(format!(
                "{}: \"{r}\" cannot name a relation: it is a word of the query language, so \
                 no query could read it; rename the file",
                spec.label
            )));
        }
    }
    if spec.unit.as_deref() == Some("") {
        return Err(IngestError::Invalid(format!(
            "{}: the unit is empty; name a unit or give none",
            spec.label
        )));
    }
    Ok(())
}

struct LineReader<'s> {
    spec: &'s DumpSpec,
    line_no: u64,
    bytes: u64,
    facts: u64,
    facts_arity: Option<usize>,
    facts_columns: Vec<String>,
    facts_doc: Option<String>,
    /// The columns a `# index:` line names, once one was read.
    facts_index: Option<Vec<String>>,
    /// The line of the `# columns:` line, once one was read.
    columns_line: Option<u64>,
    /// Column names of the edge, attribute and node formats.
    fixed_columns: [Vec<String>; 3],
    /// Relation names already lower-cased and checked, by spelling.
    names: rustc_hash::FxHashMap<String, String>,
}

/// The column names of the edge, attribute and node formats, in that order.
fn fixed_columns() -> [Vec<String>; 3] {
    let v = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
    [v(&["src", "dst"]), v(&["node", "value"]), v(&["id"])]
}

/// The most fields a line of a fixed format may have (a unit column included).
const MAX_FIXED_FIELDS: usize = 4;

impl LineReader<'_> {
    fn err(&self, message: String) -> IngestError {
        IngestError::Malformed {
            file: self.spec.label.clone(),
            line: self.line_no,
            message,
        }
    }

    /// Counts the bytes of `line`, read whole and found valid UTF-8 (its line break included),
    /// and answers its text: without its line break (and a `\r` before it), and on the first
    /// line without the byte order mark that may open the dump.
    fn valid_text<'a>(&mut self, line: &'a str) -> &'a str {
        self.bytes += line.len() as u64;
        let mut text = line;
        if self.line_no == 1
            && let Some(t) = text.strip_prefix('\u{feff}')
        {
            text = t;
        }
        if let Some(t) = text.strip_suffix('\n') {
            text = t.strip_suffix('\r').unwrap_or(t);
        }
        text
    }

    fn line(&mut self, text: &str, sink: &mut dyn FactSink) -> Result<()> {
        // A line that opens plainly (most do) has nothing to trim.
        let trimmed = if opens_plainly(text) {
            text
        } else {
            text.trim_start()
        };
        if trimmed.is_empty() {
            if text.contains('\t') {
                return Err(self.err(
                    "the line holds only tabs and spaces: write its fields, or leave it empty"
                        .to_owned(),
                ));
            }
            return Ok(());
        }
        if let Some(comment) = trimmed.strip_prefix('#') {
            if self.spec.format == Format::Facts {
                let comment = comment.trim();
                if comment.starts_with("columns:")
                    && let Some(first) = self.columns_line
                {
                    return Err(self.err(format!(
                        "a second `# columns:` line (the first is line {first}); a file names \
                         its columns once"
                    )));
                }
                if self.facts == 0 {
                    self.facts_header(comment)?;
                }
            }
            return Ok(());
        }
        match self.spec.format {
            Format::Jsonl => self.json_line(text, sink),
            Format::Facts => self.facts_line(text, sink),
            f => self.tsv_line(f, text, sink),
        }
    }

    fn facts_header(&mut self, comment: &str) -> Result<()> {
        if let Some(cols) = comment.strip_prefix("columns:") {
            let Some(cols) = column_names(cols) else {
                return Err(self.err(
                    "a `# columns:` line names columns with letters, digits and `_`, \
                     separated by commas"
                        .to_owned(),
                ));
            };
            if let Some((i, c)) = cols
                .iter()
                .enumerate()
                .find(|(i, c)| cols[..*i].contains(c))
            {
                return Err(self.err(format!(
                    "column \"{c}\" is named twice in the `# columns:` line (columns {} and {})",
                    cols.iter().position(|x| x == c).map_or(0, |p| p + 1),
                    i + 1
                )));
            }
            self.columns_line = Some(self.line_no);
            self.facts_arity = Some(cols.len());
            self.facts_columns = cols;
        } else if let Some(doc) = comment.strip_prefix("doc:") {
            self.facts_doc = Some(doc.trim().to_owned());
        } else if let Some(cols) = comment.strip_prefix("index:") {
            let Some(cols) = column_names(cols) else {
                return Err(self.err(
                    "an `# index:` line names the columns to index (the first among them), \
                     with letters, digits and `_`, separated by commas"
                        .to_owned(),
                ));
            };
            self.facts_index = Some(cols);
        }
        Ok(())
    }

    fn tsv_line(&mut self, format: Format, text: &str, sink: &mut dyn FactSink) -> Result<()> {
        let (names, origin, which): (&[&str], Origin, usize) = match format {
            Format::Edges => (&["src", "kind", "dst"], Origin::Edges, 0),
            Format::Attrs => (&["node", "key", "value"], Origin::Attrs, 1),
            _ => (&["id", "label"], Origin::Nodes, 2),
        };
        let n = names.len();
        let mut raw = [""; MAX_FIXED_FIELDS];
        let mut count = 0;
        for f in tab_fields(text) {
            if count < MAX_FIXED_FIELDS {
                raw[count] = f;
            }
            count += 1;
        }
        if count != n && count != n + 1 {
            return Err(self.err(format!(
                "expected {} or {} tab-separated fields ({}[, unit]), found {}",
                n,
                n + 1,
                names.join(", "),
                count
            )));
        }
        let mut fields: [Cow<'_, str>; MAX_FIXED_FIELDS] = Default::default();
        // A line without a backslash has no escape in any field.
        let plain = memchr::memchr(b'\\', text.as_bytes()).is_none();
        for i in 0..count {
            fields[i] = if plain {
                Cow::Borrowed(raw[i])
            } else {
                unescape(raw[i]).map_err(|m| self.err(format!("field {}: {m}", i + 1)))?
            };
        }
        for (i, name) in names.iter().enumerate() {
            if fields[i].is_empty() && *name != "value" {
                return Err(self.err(format!("field {} ({name}) is empty", i + 1)));
            }
        }
        let spec = self.spec;
        let unit = if count > n {
            if fields[n].is_empty() {
                return Err(self.err("the unit field is empty; leave it out instead".to_owned()));
            }
            Some(fields[n].as_ref())
        } else {
            spec.unit.as_deref()
        };
        let spelled = fields[1].as_ref();
        self.relation_name(spelled, names[1])?;
        let mut values = [Field::Absent, Field::Absent];
        let mut nv = 0;
        for i in (0..n).filter(|&i| i != 1) {
            let v = Field::from_tsv(Cow::Borrowed(fields[i].as_ref()));
            if v == Field::Absent && names[i] != "value" {
                return Err(self.err(format!(
                    "field {} ({}) is \\N (absent); an id must be stated",
                    i + 1,
                    names[i]
                )));
            }
            values[nv] = v;
            nv += 1;
        }
        self.facts += 1;
        sink.fact(&Fact {
            spelled,
            relation: &self.names[spelled],
            origin,
            columns: &self.fixed_columns[which],
            doc: None,
            indexed: None,
            fields: &values[..nv],
            unit,
            line: self.line_no,
        })
    }

    /// Lower-cases and checks a relation name given by an edge kind, attribute key or node
    /// label, remembering it in `self.names`.
    fn relation_name(&mut self, spelled: &str, what: &str) -> Result<()> {
        if self.names.contains_key(spelled) {
            return Ok(());
        }
        let lower = spelled.to_lowercase();
        if !valid_name(&lower) {
            return Err(self.err(format!(
                "{what} \"{spelled}\" cannot name a relation: use letters, digits, `_` and `-`"
            )));
        }
        if reserved_name(&lower) {
            return Err(self.err(format!(
                "{what} \"{spelled}\" cannot name a relation: \"{lower}\" is a word of the \
                 query language, so no query could read it; rename it"
            )));
        }
        self.names.insert(spelled.to_owned(), lower);
        Ok(())
    }

    fn facts_line(&mut self, text: &str, sink: &mut dyn FactSink) -> Result<()> {
        // Up to eight fields on the stack: no allocation per line, and only the fields read
        // are made (and dropped).
        let mut values: SmallVec<[Field<'_>; 8]> = SmallVec::new();
        // A line without a backslash has no escape in any field.
        if !plain_fields(text, |f| values.push(f)) {
            values.clear();
            for (i, f) in tab_fields(text).enumerate() {
                let f = unescape(f).map_err(|m| self.err(format!("field {}: {m}", i + 1)))?;
                values.push(Field::from_tsv(f));
            }
        }
        let count = values.len();
        let arity = *self.facts_arity.get_or_insert(count);
        if count != arity {
            return Err(self.err(format!(
                "expected {arity} tab-separated fields like the lines before, found {count}"
            )));
        }
        if self.facts_columns.len() != arity {
            self.facts_columns = (1..=arity).map(|i| format!("c{i}")).collect();
        }
        self.facts += 1;
        sink.fact(&self.facts_fact(&values))
    }

    /// The fact of the `.facts` file's current line, with `fields`.
    fn facts_fact<'f>(&'f self, fields: &'f [Field<'f>]) -> Fact<'f> {
        let relation = self.spec.relation.as_deref().unwrap_or_default();
        Fact {
            spelled: relation,
            relation,
            origin: Origin::Facts,
            columns: &self.facts_columns,
            doc: self.facts_doc.as_deref(),
            indexed: self.facts_index.as_deref(),
            fields,
            unit: self.spec.unit.as_deref(),
            line: self.line_no,
        }
    }

    fn json_line(&mut self, text: &str, sink: &mut dyn FactSink) -> Result<()> {
        if !text.trim_start().starts_with('{') {
            // Still say what is wrong with what is not JSON at all.
            serde_json::from_str::<serde::de::IgnoredAny>(text)
                .map_err(|e| self.err(format!("invalid JSON: {e}")))?;
            return Err(self.err("expected a JSON object".to_owned()));
        }
        let JsonObject(obj) =
            serde_json::from_str(text).map_err(|e| self.err(format!("invalid JSON: {e}")))?;
        let has = |k: &str| obj.contains_key(k);
        let (format, keys): (Format, &[&str]) = if has("src") || has("kind") || has("dst") {
            (Format::Edges, &["src", "kind", "dst"])
        } else if has("node") || has("key") || has("value") {
            (Format::Attrs, &["node", "key", "value"])
        } else if has("id") || has("label") {
            (Format::Nodes, &["id", "label"])
        } else {
            return Err(self.err(
                "expected an object with \"src\", \"kind\", \"dst\" (an edge), \"node\", \
                 \"key\", \"value\" (an attribute) or \"id\", \"label\" (a node)"
                    .to_owned(),
            ));
        };
        for k in obj.keys() {
            if !keys.contains(&k.as_str()) && k != "unit" {
                return Err(self.err(format!(
                    "unexpected key \"{k}\"; this object takes {} and \"unit\"",
                    keys.iter()
                        .map(|k| format!("\"{k}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        let mut fields = Vec::with_capacity(keys.len());
        for &k in keys {
            let v = obj
                .get(k)
                .ok_or_else(|| self.err(format!("missing key \"{k}\"")))?;
            let is_name = matches!(k, "kind" | "key" | "label");
            let f = match v {
                serde_json::Value::String(s) if s.is_empty() && k != "value" => {
                    return Err(self.err(format!("\"{k}\" is empty")));
                }
                serde_json::Value::String(s) => Field::Text(Cow::Borrowed(s.as_str())),
                serde_json::Value::Number(n) if !is_name => match json_number(n) {
                    Some(f) => f,
                    None => return Err(self.err(format!("\"{k}\" is not a finite number"))),
                },
                serde_json::Value::Null if k == "value" => Field::Absent,
                _ => {
                    return Err(self.err(format!(
                        "\"{k}\" must be {}",
                        if is_name {
                            "a non-empty string"
                        } else if k == "value" {
                            "a string, a number or null"
                        } else {
                            "a non-empty string or a number"
                        }
                    )));
                }
            };
            fields.push(f);
        }
        let unit = match obj.get("unit") {
            None | Some(serde_json::Value::Null) => self.spec.unit.as_deref(),
            Some(serde_json::Value::String(s)) if !s.is_empty() => Some(s.as_str()),
            Some(_) => return Err(self.err("\"unit\" must be a non-empty string".to_owned())),
        };
        let Field::Text(spelled) = fields.remove(1) else {
            return Err(self.err(format!("\"{}\" must be a non-empty string", keys[1])));
        };
        self.relation_name(&spelled, keys[1])?;
        let (origin, which) = match format {
            Format::Edges => (Origin::Edges, 0),
            Format::Attrs => (Origin::Attrs, 1),
            _ => (Origin::Nodes, 2),
        };
        self.facts += 1;
        sink.fact(&Fact {
            spelled: &spelled,
            relation: &self.names[spelled.as_ref()],
            origin,
            columns: &self.fixed_columns[which],
            doc: None,
            indexed: None,
            fields: &fields,
            unit,
            line: self.line_no,
        })
    }
}

/// Whether `s` may name a relation or a column: letters, digits, `_` and `-`, starting with
/// a letter or `_`.
pub fn valid_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Undoes the escapes of a TSV field; `\N` is left for the caller to read as absent.
fn unescape(field: &str) -> std::result::Result<Cow<'_, str>, String> {
    if !field.contains('\\') {
        return Ok(Cow::Borrowed(field));
    }
    if field == "\\N" {
        return Ok(Cow::Borrowed(field));
    }
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                return Err(format!(
                    "bad escape \"\\{other}\" (write \\t, \\n, \\r or \\\\; a field that is \
                     exactly \\N is absent)"
                ));
            }
            None => return Err("a field ends with a lone backslash (write \\\\)".to_owned()),
        }
    }
    Ok(Cow::Owned(out))
}
