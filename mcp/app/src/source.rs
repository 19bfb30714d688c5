//! Source lines of an answer's cited sites (`context: N` on `query` and `cypher`,
//! `--context N` on the command line): each `path:line` an answer cites (a witness leaf of
//! `call_site`, `other_site`, `definition_at` or `reference_at`, a row's path and line, a
//! `defined at:` site) shows N lines either side of it, read from the repository's
//! checkout.
//!
//! A line is shown only while its file still has the content hash recorded at ingest
//! (`source_file(path, hash)`); otherwise the answer says why not: `stale: file changed
//! since ingest`, `no checkout` (no directory known for the repository), `not hashed at
//! ingest` (the file could not be read then), or why the file is refused now. The checkout
//! is a directory given at serve (`strata serve --checkout REPO=DIR`), else the one
//! recorded at ingest (`checkout(repo, dir)`); reading never leaves it
//! ([`strata_store::scip::Checkout::read`]). Each file is read and hashed once an answer.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::path::PathBuf;

use serde::Serialize;
use strata_eval::{Answer, Cell, FactSource, Node, Value};
use strata_store::scip::{Checkout, SourceRefusal, source_hash};

/// The most lines either side of a site a request may ask for.
pub const CONTEXT_MAX: u32 = 20;

/// How many sites an answer shows the lines of; the rest are counted.
const SITES_SHOWN: usize = 40;

/// The most characters of one source line shown; the rest is cut, marked `…`.
const LINE_CHARS: usize = 240;

/// The relations whose facts cite a site, and the columns of their path and line.
const SITE_COLUMNS: &[(&str, usize, usize)] = &[
    ("call_site", 2, 3),
    ("other_site", 2, 3),
    ("definition_at", 1, 2),
    ("reference_at", 0, 2),
];

/// What a request asks to see of the sources: how many lines either side of a site, and
/// the checkouts given at serve, by repository, which win over the recorded ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ContextPlan {
    /// Lines either side of each site (1 to [`CONTEXT_MAX`]).
    pub lines: u32,
    /// Checkout directories by repository name.
    pub checkouts: BTreeMap<String, PathBuf>,
}

/// The lines of an answer's cited sites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Excerpts {
    lines: u32,
    sites: Vec<Excerpt>,
    /// Sites cited past [`SITES_SHOWN`] or the byte share, not shown.
    left_out: usize,
}

/// One cited site and what is shown of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
struct Excerpt {
    path: String,
    line: u64,
    /// The number of the first line shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    first: Option<u64>,
    /// The lines from `first`, the site's among them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    lines: Vec<String>,
    /// Why nothing is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<String>,
}

/// What an answer read of one file.
enum File {
    /// Its lines, the file unchanged since ingest.
    Lines(Vec<String>),
    /// Why it is not shown.
    Not(String),
}

/// The lines of `answer`'s cited sites, each file read once, the text within `max_bytes`
/// (a site past it is counted, not shown); `None` when it cites none.
pub(crate) fn excerpts(
    answer: &Answer,
    source: &dyn FactSource,
    plan: &ContextPlan,
    max_bytes: u64,
) -> Option<Excerpts> {
    let sites = cited(answer, source);
    if sites.is_empty() {
        return None;
    }
    let mut reader = Reader {
        source,
        plan,
        checkouts: HashMap::new(),
        files: HashMap::new(),
    };
    let mut out = Excerpts {
        lines: plan.lines,
        sites: Vec::new(),
        left_out: 0,
    };
    let mut bytes = 0u64;
    for (path, line) in sites {
        if out.sites.len() >= SITES_SHOWN {
            out.left_out += 1;
            continue;
        }
        let e = reader.excerpt(&path, line);
        let mut t = String::new();
        e.write(&mut t);
        if bytes + t.len() as u64 > max_bytes {
            out.left_out += 1;
            continue;
        }
        bytes += t.len() as u64;
        out.sites.push(e);
    }
    Some(out)
}

impl Excerpts {
    /// The text an answer ends with: `context (N lines either side):`, then each site and
    /// its numbered lines (`>` marks the site's own), or why they are not shown.
    pub(crate) fn text(&self) -> String {
        let mut t = format!(
            "\ncontext ({} line{} either side):",
            self.lines,
            crate::render::plural(u64::from(self.lines))
        );
        for e in &self.sites {
            e.write(&mut t);
        }
        if self.left_out > 0 {
            let _ = write!(t, "\n  ... {} more site", self.left_out);
            t.push_str(crate::render::plural(self.left_out as u64));
        }
        t
    }

    /// The JSON an answer carries as `context`: per site `path`, `line` and either `first`
    /// and `lines` or `status`; `left_out` when sites were not shown.
    pub(crate) fn json(&self) -> serde_json::Value {
        let mut j = serde_json::json!({ "lines_either_side": self.lines, "sites": self.sites });
        if self.left_out > 0 {
            j["left_out"] = self.left_out.into();
        }
        j
    }
}

impl Excerpt {
    fn write(&self, t: &mut String) {
        let _ = write!(t, "\n  {}:{}", self.path, self.line);
        if let Some(s) = &self.status {
            let _ = write!(t, " ({s})");
            return;
        }
        let first = self.first.unwrap_or(1);
        let width = (first + self.lines.len() as u64).to_string().len();
        for (i, l) in self.lines.iter().enumerate() {
            let n = first + i as u64;
            let mark = if n == self.line { '>' } else { ' ' };
            let _ = write!(t, "\n  {mark} {n:>width$} |");
            if !l.is_empty() {
                t.push(' ');
                t.push_str(l);
            }
        }
    }
}

/// Reads the files of one answer, each once.
struct Reader<'a> {
    source: &'a dyn FactSource,
    plan: &'a ContextPlan,
    /// The checkout of each repository met (`None`: none known or openable).
    checkouts: HashMap<String, Option<Checkout>>,
    files: HashMap<String, File>,
}

impl Reader<'_> {
    fn excerpt(&mut self, path: &str, line: u64) -> Excerpt {
        let mut e = Excerpt {
            path: path.to_owned(),
            line,
            first: None,
            lines: Vec::new(),
            status: None,
        };
        if !self.files.contains_key(path) {
            let f = self.file(path);
            self.files.insert(path.to_owned(), f);
        }
        match &self.files[path] {
            File::Not(why) => e.status = Some(why.clone()),
            File::Lines(lines) => {
                let n = u64::from(self.plan.lines);
                if line == 0 || line > lines.len() as u64 {
                    e.status = Some(format!(
                        "no line {line}: the file has {} lines",
                        lines.len()
                    ));
                    return e;
                }
                let first = line.saturating_sub(n).max(1);
                let last = (line + n).min(lines.len() as u64);
                e.first = Some(first);
                e.lines = lines[(first - 1) as usize..last as usize].to_vec();
            }
        }
        e
    }

    /// Reads the file at `path` (`REPO/relative`) from its repository's checkout, if it
    /// still has a content hash recorded at ingest.
    fn file(&mut self, path: &str) -> File {
        let Some((repo, relative)) = path.split_once('/') else {
            return File::Not("no checkout".to_owned());
        };
        if !self.checkouts.contains_key(repo) {
            let c = self.checkout(repo);
            self.checkouts.insert(repo.to_owned(), c);
        }
        let Some(checkout) = &self.checkouts[repo] else {
            return File::Not("no checkout".to_owned());
        };
        let recorded = texts(self.source, "source_file", 0, path, 1);
        if recorded.is_empty() {
            return File::Not("not hashed at ingest: the file could not be read then".to_owned());
        }
        let bytes = match checkout.read(relative) {
            Ok(b) => b,
            Err(SourceRefusal::Missing) => {
                return File::Not("stale: file removed since ingest".to_owned());
            }
            Err(r) => return File::Not(format!("not shown: {r}")),
        };
        if !recorded.contains(&source_hash(&bytes)) {
            return File::Not("stale: file changed since ingest".to_owned());
        }
        let text = String::from_utf8_lossy(&bytes);
        File::Lines(text.lines().map(shown_line).collect())
    }

    /// The checkout of `repo`: the one given at serve, else the first recorded one that
    /// opens.
    fn checkout(&self, repo: &str) -> Option<Checkout> {
        if let Some(dir) = self.plan.checkouts.get(repo) {
            return Checkout::open(dir).ok();
        }
        texts(self.source, "checkout", 0, repo, 1)
            .iter()
            .find_map(|d| Checkout::open(std::path::Path::new(d)).ok())
    }
}

/// A source line as shown: at most [`LINE_CHARS`] characters, control characters but tabs
/// replaced by `?`.
fn shown_line(l: &str) -> String {
    let mut s: String = l
        .chars()
        .take(LINE_CHARS)
        .map(|c| if c.is_control() && c != '\t' { '?' } else { c })
        .collect();
    if l.chars().nth(LINE_CHARS).is_some() {
        s.push('…');
    }
    s
}

/// The texts in column `want` of the facts of `relation` whose column `at` is `key`,
/// sorted; empty when the data has no such relation.
fn texts(
    source: &dyn FactSource,
    relation: &str,
    at: usize,
    key: &str,
    want: usize,
) -> Vec<String> {
    let Ok(Some(_)) = source.relation(relation) else {
        return Vec::new();
    };
    let Ok(Some(term)) = source.term(&Value::text(key)) else {
        return Vec::new();
    };
    let mut terms = Vec::new();
    let _ = source.lookup(relation, &[(at, term)], &mut |r| {
        if let Some(t) = r.get(want) {
            terms.push(*t);
        }
        ControlFlow::Continue(())
    });
    let mut out: Vec<String> = terms
        .into_iter()
        .filter_map(|t| match source.value(t) {
            Ok(Value::Text(s)) => Some(s.to_string()),
            _ => None,
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The sites `answer` cites, each once, in order: per row, a path and line next to each
/// other in its cells, the sites of its witness facts, then where its cells' symbols are
/// defined.
fn cited(answer: &Answer, source: &dyn FactSource) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut add = |path: &str, line: f64| {
        if line.fract() == 0.0 && line >= 1.0 && seen.insert((path.to_owned(), line as u64)) {
            out.push((path.to_owned(), line as u64));
        }
    };
    let mut documents: HashMap<String, bool> = HashMap::new();
    let mut defined = Vec::new();
    for row in &answer.rows {
        let values: Vec<&Value> = row
            .cells
            .iter()
            .filter_map(|c| match c {
                Cell::Value(v) => Some(v),
                Cell::List(_) => None,
            })
            .collect();
        for pair in values.windows(2) {
            if let (Value::Text(p), Value::Number(l)) = (pair[0], pair[1]) {
                let known = *documents
                    .entry(p.to_string())
                    .or_insert_with(|| !texts(source, "document", 0, p, 0).is_empty());
                if known {
                    add(p, *l);
                }
            }
        }
        let mut stack: Vec<&Node> = row.witness.iter().rev().collect();
        while let Some(n) = stack.pop() {
            if let Some((_, pc, lc)) = SITE_COLUMNS.iter().find(|(r, ..)| *r == n.relation)
                && let (Some(Value::Text(p)), Some(Value::Number(l))) =
                    (n.values.get(*pc), n.values.get(*lc))
            {
                add(p, *l);
            }
            stack.extend(n.children.iter().rev());
        }
        for v in &values {
            if let Value::Text(s) = v
                && crate::names::name(s).is_some()
            {
                defined.push(s.to_string());
            }
        }
    }
    for s in defined {
        if let Some((p, l)) = definition(source, &s) {
            add(&p, l);
        }
    }
    out
}

/// The first definition site of `symbol` by path and line, if the data has one.
fn definition(source: &dyn FactSource, symbol: &str) -> Option<(String, f64)> {
    source.relation("definition_at").ok()??;
    let term = source.term(&Value::text(symbol)).ok()??;
    let mut best: Option<(String, f64)> = None;
    let _ = source.lookup("definition_at", &[(0, term)], &mut |r| {
        if let (Ok(Value::Text(p)), Ok(Value::Number(l))) = (source.value(r[1]), source.value(r[2]))
            && best
                .as_ref()
                .is_none_or(|b| (p.as_ref(), l) < (b.0.as_str(), b.1))
        {
            best = Some((p.to_string(), l));
        }
        ControlFlow::Continue(())
    });
    best
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn long_lines_and_control_characters_are_cut() {
        assert_eq!(shown_line("a\tb\u{1b}[0m"), "a\tb?[0m");
        let long = "x".repeat(LINE_CHARS + 5);
        let shown = shown_line(&long);
        assert_eq!(shown.chars().count(), LINE_CHARS + 1);
        assert!(shown.ends_with('…'));
    }
}
