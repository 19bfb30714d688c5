//! `find` over the application: the [`Finder`] it keeps (the database's index file,
//! built once, and the texts newer than it in memory, extended as batches add texts), and
//! the ranked matches it answers ([`FindResponse`]) with the relations and columns each
//! appears in.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use serde::Serialize;
use strata_eval::FactSource;
use strata_store::Snapshot;
use strata_store::layout::DEFAULT_TIER;

use super::{Finder, FinderAnswer, FinderError, Kind};
use crate::app::App;
use crate::base::Call;
use crate::error::CallError;
use crate::options::lower;
use crate::render::{Render, SnapshotInfo, plural};

/// How many matches `find` answers when the request does not say.
pub const FIND_LIMIT: u64 = 10;

/// The longest name `find` takes, in characters.
pub const FIND_MAX_CHARS: usize = 1000;

/// A name to ground.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FindRequest {
    /// The name: partial, misspelled or in words (`parse args`, `the parser`).
    pub name: String,
    /// The most matches (0: [`FIND_LIMIT`]; never more than the application's limit).
    pub limit: u64,
}

/// The stored texts a name may stand for, ranked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FindResponse {
    /// The name, trimmed.
    pub name: String,
    /// The matches, best first.
    pub matches: Vec<FindMatch>,
    /// How many texts matched in all (some may be held by no live row any more).
    pub total: usize,
    /// The snapshot read.
    pub snapshot: SnapshotInfo,
    /// How many stored texts were not searched: a server builds `find`'s index in the
    /// background, and until it is ready the newest texts past what it covers are left
    /// out (0, and absent from the JSON, once it is).
    #[serde(skip_serializing_if = "is_zero")]
    pub unsearched: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl FindResponse {
    /// The note saying how many texts were not searched yet, if any were left out.
    fn unsearched_note(&self) -> Option<String> {
        (self.unsearched > 0).then(|| {
            format!(
                "{} newer stored text{} not searched yet: find's index is being built in the \
                 background; ask again in a while",
                self.unsearched,
                plural(self.unsearched)
            )
        })
    }
}

/// One stored text a name may stand for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FindMatch {
    /// The text.
    pub value: String,
    /// How it matched: `exact`, `case`, `words`, ..., `fuzzy`.
    #[serde(rename = "match")]
    pub kind: &'static str,
    /// For a fuzzy match, the edits between the name and the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edits: Option<u32>,
    /// For a SCIP symbol, its kind and where it is defined: `Method,
    /// django/db/models/base.py:909`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// Where it appears.
    pub uses: Vec<FindUse>,
}

impl FindMatch {
    /// Where the text appears, one use after another: `imports.src 1 row, imports.dst 2
    /// rows`.
    pub fn uses_text(&self) -> String {
        let uses: Vec<String> = self.uses.iter().map(FindUse::to_string).collect();
        uses.join(", ")
    }
}

/// Where a text appears: one argument of one relation, and in how many rows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FindUse {
    /// The relation.
    pub relation: String,
    /// The argument's name.
    pub column: String,
    /// The argument's position, counting from 1.
    pub position: usize,
    /// The rows holding the text there.
    pub rows: u64,
}

impl std::fmt::Display for FindUse {
    /// `imports.dst 2 rows`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (relation, column, rows) = (&self.relation, &self.column, self.rows);
        write!(f, "{relation}.{column} {rows} row{}", plural(rows))
    }
}

impl Render for FindResponse {
    fn text(&self) -> String {
        let note = self.unsearched_note().map(|n| format!("\n({n})"));
        if self.matches.is_empty() {
            return format!(
                "no stored text matches \"{}\"; values shows what one argument of a relation \
                 holds{}",
                self.name,
                note.unwrap_or_default()
            );
        }
        let mut text = String::new();
        for (i, m) in self.matches.iter().enumerate() {
            let mut quoted = String::new();
            strata_eval::write_value(&strata_eval::Value::text(&*m.value), &mut quoted);
            let how = match m.edits {
                Some(d) => format!("{} ({d} edit{})", m.kind, plural(d.into())),
                None => m.kind.to_owned(),
            };
            text.push_str(&format!("{}. {quoted} {how}\n   ", i + 1));
            if let Some(sym) = &m.symbol {
                text.push_str(sym);
                text.push_str("; ");
            }
            text.push_str(&m.uses_text());
            text.push('\n');
        }
        text.push_str(&format!(
            "{} of {} match{}",
            self.matches.len(),
            self.total,
            if self.total == 1 { "" } else { "es" }
        ));
        text.push_str(&note.unwrap_or_default());
        text
    }
}

/// Why `find` gave no matches.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FindError {
    /// The facts come from a host, and `find` reads a store's dictionary.
    #[error(
        "find: this server's facts come from its host, and find reads only a Strata store's \
         dictionary; use values to list what an argument holds"
    )]
    HostBase,
    /// No name.
    #[error("find: give a name (a part of one, a misspelled one or its words will do)")]
    Empty,
    /// A name longer than [`FIND_MAX_CHARS`].
    #[error("find: the name is longer than {FIND_MAX_CHARS} characters; give a part of it")]
    TooLong,
}

impl App {
    /// The finder as of `snap`: opened (or built) once, then extended with what later
    /// batches added (the dictionary only grows).
    fn find_index(&self, snap: &Snapshot) -> Result<Arc<Finder>, CallError> {
        let mut cached = self
            .finder_cache()
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let finder = match cached.as_mut() {
            Some(f) => f,
            None => {
                let dir = self.store().dir();
                let opened = if self.find_deferred().load(Ordering::SeqCst) {
                    Finder::open_deferred(dir, snap)
                } else {
                    Finder::open(dir, snap)
                };
                cached.insert(Arc::new(opened.map_err(CallError::store("find"))?))
            }
        };
        // Newer texts to read, or a rebuild of the index file that may have finished.
        if finder.len() < snap.text_count() || finder.rebuilding() {
            Arc::make_mut(finder)
                .extend_from(snap)
                .map_err(CallError::store("find"))?;
        }
        Ok(finder.clone())
    }

    /// Searches the finder; an index file failing mid-search is removed and rebuilt once.
    fn find_search(
        &self,
        snap: &Snapshot,
        name: &str,
        keep: usize,
    ) -> Result<FinderAnswer, CallError> {
        let finder = self.find_index(snap)?;
        match finder.search(name, snap.text_count(), keep) {
            Err(FinderError::File(_)) => {
                if let Some(path) = finder.file_path() {
                    let _ = std::fs::remove_file(path);
                }
                *self
                    .finder_cache()
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = None;
                self.find_index(snap)?
                    .search(name, snap.text_count(), keep)
                    .map_err(CallError::store("find"))
            }
            r => r.map_err(CallError::store("find")),
        }
    }

    /// Makes `find`'s index one no call waits for, and opens it ahead of the first
    /// request: from now on a missing index file, or one too far behind the dictionary, is
    /// built on a thread of its own while calls search what it covers and the texts past it
    /// up to the delta limit (their answers say how many names are not searched yet).
    /// `strata serve` calls this as it starts.
    pub fn warm_find(&self) -> Result<(), CallError> {
        self.find_deferred().store(true, Ordering::SeqCst);
        let snap = self.store().snapshot().map_err(CallError::store("find"))?;
        self.find_index(&snap).map(|_| ())
    }

    /// `find`: the stored text values a name may stand for, ranked, each with the
    /// relations and columns it appears in and how many rows.
    pub fn find(&self, call: &Call, r: &FindRequest) -> Result<FindResponse, CallError> {
        if self.host_base(call) {
            return Err(FindError::HostBase.into());
        }
        let name = r.name.trim();
        if name.is_empty() {
            return Err(FindError::Empty.into());
        }
        if name.chars().count() > FIND_MAX_CHARS {
            return Err(FindError::TooLong.into());
        }
        let snap = self.store().snapshot().map_err(CallError::store("find"))?;
        // Count rows in every tier at the snapshot's batch.
        let mut tiers: Vec<String> = snap
            .catalog()
            .relations
            .values()
            .map(|m| m.tier.clone())
            .filter(|t| t != DEFAULT_TIER)
            .collect();
        tiers.sort_unstable();
        tiers.dedup();
        let snap = if tiers.is_empty() {
            snap
        } else {
            let names: Vec<&str> = tiers.iter().map(String::as_str).collect();
            self.store()
                .snapshot_with_tiers(&names)
                .map_err(CallError::store("find"))?
        };
        let limit = lower(
            if r.limit == 0 { FIND_LIMIT } else { r.limit },
            self.options().limit,
        );
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        // Keep spares for texts no live row holds any more.
        let keep = limit.saturating_mul(4).saturating_add(32);
        let found = self.find_search(&snap, name, keep)?;
        let total = found.total;
        let mut matches = Vec::new();
        for (id, kind, edits) in ranked(&snap, name, &found, keep)? {
            if matches.len() >= limit {
                break;
            }
            let term = strata_eval::Term::text(id);
            let uses = snap.term_uses(term).map_err(CallError::store("find"))?;
            if uses.is_empty() {
                continue;
            }
            let value = match found.text(id) {
                Some(t) => t.to_owned(),
                None => text_of(&snap, term).unwrap_or_default(),
            };
            matches.push(FindMatch {
                value,
                kind,
                edits,
                symbol: symbol_info(&snap, term),
                uses: uses
                    .iter()
                    .map(|u| FindUse {
                        relation: u.relation.clone(),
                        column: u.column_name.clone(),
                        position: u.column + 1,
                        rows: u.rows,
                    })
                    .collect(),
            });
        }
        Ok(FindResponse {
            name: name.to_owned(),
            matches,
            total,
            snapshot: SnapshotInfo::of(&snap),
            unsearched: found.unsearched.into(),
        })
    }
}

/// The most `symbol` rows read for the symbols a query's last segment names.
const SYMBOL_CANDIDATES: usize = 1000;

/// What a match is ranked as: a SCIP symbol whose qualified name the query names.
const QUALIFIED: &str = "qualified name";

/// A match in answer order: its text's id, how it matched and, for a fuzzy match, its
/// edits.
type Ranked = (u32, &'static str, Option<u32>);

/// The matches in answer order: first the SCIP symbols (texts in the first column of a
/// `symbol(symbol, kind, display_name)` relation) whose qualified name the query names
/// (`Model.save`, `Model#save`, `Model save`, `django.db.models.base.Model.save`: see
/// [`super::scip`]), whole names before tails, then as the finder ranked the rest.
/// Candidates are the finder's matches and the symbols whose `display_name` is the query's
/// last segment.
fn ranked(
    snap: &Snapshot,
    name: &str,
    found: &FinderAnswer,
    keep: usize,
) -> Result<Vec<Ranked>, CallError> {
    let rest = found.matches.iter().map(|m| {
        let edits = (m.kind == Kind::Fuzzy).then_some(m.distance);
        (m.id, m.kind.name(), edits)
    });
    let has_symbols = snap
        .relation("symbol")
        .ok()
        .flatten()
        .is_some_and(|r| r.columns.len() == 3);
    let Some(segs) = super::scip::query_segments(name).filter(|_| has_symbols) else {
        return Ok(rest.collect());
    };
    let mut ids: Vec<u32> = found.matches.iter().map(|m| m.id).collect();
    let last = segs.last().map(String::as_str).unwrap_or_default();
    if let Ok(Some(t)) = snap.term(&strata_eval::Value::text(last)) {
        let mut n = 0;
        let _ = snap.lookup("symbol", &[(2, t)], &mut |row| {
            if let Some(strata_eval::TermKind::Text(id)) = row.first().map(|t| t.kind()) {
                ids.push(id);
            }
            n += 1;
            if n >= SYMBOL_CANDIDATES {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        });
    }
    let mut named: Vec<((bool, bool, usize), String, u32)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for id in ids {
        if !seen.insert(id) {
            continue;
        }
        let term = strata_eval::Term::text(id);
        let text = match found.text(id) {
            Some(t) => t.to_owned(),
            None => text_of(snap, term).unwrap_or_default(),
        };
        let Some(parts) = super::scip::qualified(&text) else {
            continue;
        };
        let Some(key) = super::scip::name_rank(&segs, &parts) else {
            continue;
        };
        if !is_symbol(snap, term) {
            continue;
        }
        named.push((key, text, id));
    }
    named.sort_unstable();
    named.truncate(keep);
    let first: std::collections::HashSet<u32> = named.iter().map(|n| n.2).collect();
    Ok(named
        .into_iter()
        .map(|(_, _, id)| (id, QUALIFIED, None))
        .chain(rest.filter(|m| !first.contains(&m.0)))
        .collect())
}

/// The text a term stands for, if it is one.
fn text_of(snap: &Snapshot, term: strata_eval::Term) -> Option<String> {
    match snap.value(term).ok()? {
        strata_eval::Value::Text(s) => Some(s),
        _ => None,
    }
}

/// Whether `term` is a symbol of the `symbol` relation.
fn is_symbol(snap: &Snapshot, term: strata_eval::Term) -> bool {
    snap.estimate("symbol", &[(0, term)]).is_ok_and(|n| n > 0)
}

/// For a SCIP symbol, its kind (`symbol(symbol, kind, display_name)`) and where it is
/// defined (`definition_at(symbol, path, line)`): `Method, django/db/models/base.py:909`;
/// `None` for any other text.
fn symbol_info(snap: &Snapshot, term: strata_eval::Term) -> Option<String> {
    let mut kind = None;
    snap.lookup("symbol", &[(0, term)], &mut |row| {
        kind = row.get(1).copied();
        std::ops::ControlFlow::Break(())
    })
    .ok()?;
    let kind = kind?;
    let mut out = match snap.value(kind).ok()? {
        strata_eval::Value::Text(k) => k,
        _ => String::new(),
    };
    let mut at = None;
    let _ = snap.lookup("definition_at", &[(0, term)], &mut |row| {
        at = Some((row.get(1).copied(), row.get(2).copied()));
        std::ops::ControlFlow::Break(())
    });
    if let Some((Some(path), line)) = at {
        let path = text_of(snap, path).unwrap_or_default();
        let line = line.and_then(|l| match snap.value(l).ok()? {
            strata_eval::Value::Number(n) => Some(n.to_string()),
            strata_eval::Value::Text(t) => Some(t),
            strata_eval::Value::Absent => None,
        });
        if !out.is_empty() {
            out.push_str(", ");
        }
        out.push_str(&path);
        if let Some(n) = line {
            out.push_str(&format!(":{n}"));
        }
    }
    (!out.is_empty()).then_some(out)
}
