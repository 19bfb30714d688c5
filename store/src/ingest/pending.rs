//! Pending facts: a relation's facts as a batch gathers them, checked against the relation's
//! earlier facts and the stored catalog, then added to its relation writer, each distinct
//! tuple once.

use std::collections::BTreeMap;

use super::bloom::Bloom;
use super::{Batch, BatchSummary};
use crate::catalog::RelationMeta;
use crate::dump::{Cell, Fact, FactGroup, Field, Origin};
use crate::error::{Fault, IngestError, Result};
use crate::relwriter::RelWriter;
use strata_eval::Term;

/// A relation's facts gathered by a batch, as terms.
pub(super) struct Pending {
    spelled: String,
    origin: Origin,
    columns: Vec<String>,
    doc: Option<String>,
    file: String,
    line: u64,
    tuples: Vec<u32>,
    units: Vec<u32>,
}

impl Pending {
    /// How many facts it holds.
    pub(super) fn len(&self) -> usize {
        self.units.len()
    }

    /// The relation of `fact`, first seen in `file`, with no facts yet.
    fn of(fact: &Fact<'_>, file: &str) -> Pending {
        Pending {
            spelled: fact.spelled.to_owned(),
            origin: fact.origin,
            columns: fact.columns.to_vec(),
            doc: fact.doc.map(str::to_owned),
            file: file.to_owned(),
            line: fact.line,
            tuples: Vec::new(),
            units: Vec::new(),
        }
    }
}

impl Batch<'_> {
    pub(super) fn clash(&self, file: &str, line: u64, message: String) -> Fault {
        IngestError::Clash {
            file: file.to_owned(),
            line,
            message,
        }
        .into()
    }

    pub(super) fn fact(&mut self, fact: &Fact<'_>) -> Result<()> {
        self.facts_read += 1;
        let mut terms = [0u32; 8];
        let mut long = Vec::new();
        let terms: &[u32] = if fact.fields.len() <= 8 {
            for (i, f) in fact.fields.iter().enumerate() {
                terms[i] = self.term(f)?;
            }
            &terms[..fact.fields.len()]
        } else {
            for f in fact.fields {
                long.push(self.term(f)?);
            }
            &long
        };
        let unit = self.fact_unit(fact.unit)?;
        if self.gather(fact, terms, terms.len(), unit)?
            && self.pending_facts >= self.options.buffer_facts.max(1)
        {
            self.flush(true)?;
        }
        Ok(())
    }

    /// The facts of one unit at once: each distinct text interned once, each relation found
    /// once.
    pub(super) fn group(&mut self, group: &FactGroup) -> Result<()> {
        let mut texts = std::mem::take(&mut self.group_texts);
        let mut row = std::mem::take(&mut self.group_row);
        texts.clear();
        for s in group.texts() {
            texts.push(Term::text(self.intern_text(s)?).0);
        }
        let unit = self.fact_unit(Some(group.unit()))?;
        for (r, rel) in group.relations().iter().enumerate() {
            let cells = group.rows(r);
            if cells.is_empty() {
                continue;
            }
            row.clear();
            for c in cells {
                row.push(match *c {
                    Cell::Absent => Term::ABSENT.0,
                    Cell::Text(i) => texts[i as usize],
                    Cell::Number(n) => self.term(&Field::Number(n))?,
                });
            }
            let arity = rel.columns.len().max(1);
            self.facts_read += (cells.len() / arity) as u64;
            self.gather(&group.fact(r, &[]), &row, rel.columns.len(), unit)?;
        }
        self.group_texts = texts;
        self.group_row = row;
        if self.pending_facts >= self.options.buffer_facts.max(1) {
            self.flush(true)?;
        }
        Ok(())
    }

    /// Marks `unit` as one whose stored facts stay though the batch replaces: the facts
    /// the batch states for it are added to them.
    pub(super) fn keep_unit(&mut self, unit: &str) -> Result<()> {
        let id = self.intern_unit(unit)?;
        self.keep_units.insert(id);
        Ok(())
    }

    /// The id of a fact's unit (0 for none), which the batch replaces when it replaces
    /// (unless it keeps it).
    fn fact_unit(&mut self, unit: Option<&str>) -> Result<u32> {
        Ok(match unit {
            Some(u) => {
                let id = self.intern_unit(u)?;
                if self.options.replace && !self.keep_units.contains(&id) {
                    self.replace_units.insert(id);
                }
                id
            }
            None => 0,
        })
    }

    /// Gathers facts of `fact`'s relation stated by `unit`: `terms` holds their terms one
    /// after another, `arity` a fact. Answers whether the batch had gathered the relation
    /// before.
    fn gather(&mut self, fact: &Fact<'_>, terms: &[u32], arity: usize, unit: u32) -> Result<bool> {
        let n = terms.len().checked_div(arity).unwrap_or(1);
        let label = &self.label;
        let existed = match self.rels.get_mut(fact.relation) {
            Some(p) => {
                // Spellings that lower-case alike (`IMPORTS`, `imports`) name one relation,
                // which keeps the first; only the origin must agree.
                if p.origin != fact.origin {
                    let (file, line) = (label.clone(), fact.line);
                    let msg = format!(
                        "\"{}\" ({}) names the same relation \"{}\" as \"{}\" ({}) at {}:{}; \
                         rename one of them",
                        fact.spelled,
                        fact.origin.noun(),
                        fact.relation,
                        p.spelled,
                        p.origin.noun(),
                        p.file,
                        p.line
                    );
                    return Err(self.clash(&file, line, msg));
                }
                if p.columns.len() != arity {
                    let msg = format!(
                        "relation \"{}\" has {} columns at {}:{}, but {} here",
                        fact.relation,
                        p.columns.len(),
                        p.file,
                        p.line,
                        arity
                    );
                    return Err(self.clash(&label.clone(), fact.line, msg));
                }
                p.tuples.extend_from_slice(terms);
                p.units.extend(std::iter::repeat_n(unit, n));
                true
            }
            None => {
                let mut p = Pending::of(fact, label);
                p.tuples.extend_from_slice(terms);
                p.units.extend(std::iter::repeat_n(unit, n));
                self.rels.insert(fact.relation.to_owned(), p);
                false
            }
        };
        self.pending_facts += n;
        Ok(existed)
    }

    /// Declares the relation of `fact` with no facts, unless the batch gathered some or the
    /// store holds it: it is created (empty) when the batch commits.
    pub(super) fn declare(&mut self, fact: &Fact<'_>) -> Result<()> {
        if self.rels.contains_key(fact.relation) || self.start.relations.contains_key(fact.relation)
        {
            return Ok(());
        }
        let p = Pending::of(fact, &self.label);
        self.rels.insert(fact.relation.to_owned(), p);
        Ok(())
    }

    /// Checks each gathered relation against the catalog; returns the catalog entries to
    /// write to (new ones with fresh ids).
    pub(super) fn resolve_into(
        &self,
        written: &BTreeMap<String, RelationMeta>,
        next_rel: &mut u32,
    ) -> Result<BTreeMap<String, RelationMeta>> {
        let mut out = BTreeMap::new();
        for (name, p) in &self.rels {
            let stored = written.get(name).or_else(|| self.start.relations.get(name));
            let meta = match stored {
                Some(m) => {
                    if m.origin != p.origin {
                        return Err(self.clash(
                            &p.file,
                            p.line,
                            format!(
                                "\"{}\" ({}) names the same relation \"{name}\" as the stored \
                                 \"{}\" ({}); rename one of them",
                                p.spelled,
                                p.origin.noun(),
                                m.spelled,
                                m.origin.noun()
                            ),
                        ));
                    }
                    if m.columns.len() != p.columns.len() {
                        return Err(self.clash(
                            &p.file,
                            p.line,
                            format!(
                                "relation \"{name}\" is stored with {} columns ({}), but this \
                                 dump gives it {}",
                                m.columns.len(),
                                m.columns.join(", "),
                                p.columns.len()
                            ),
                        ));
                    }
                    if m.tier != self.options.tier {
                        return Err(self.clash(
                            &p.file,
                            p.line,
                            format!(
                                "relation \"{name}\" lives in tier \"{}\", not \"{}\"; ingest \
                                 it with --tier {}",
                                m.tier, self.options.tier, m.tier
                            ),
                        ));
                    }
                    let mut m = m.clone();
                    if let Some(doc) = &p.doc {
                        m.doc.clone_from(doc);
                    }
                    m
                }
                None => {
                    let id = *next_rel;
                    *next_rel += 1;
                    RelationMeta {
                        id,
                        name: name.clone(),
                        spelled: p.spelled.clone(),
                        origin: p.origin,
                        columns: p.columns.clone(),
                        doc: p.doc.clone().unwrap_or_default(),
                        tier: self.options.tier.clone(),
                        next_row: 0,
                        rows: 0,
                        distinct: vec![0; p.columns.len()],
                    }
                }
            };
            out.insert(name.clone(), meta);
        }
        Ok(out)
    }
}

impl Pending {
    /// Takes the gathered facts out, to sort ([`Sorted::of`]).
    pub(super) fn take_facts(&mut self) -> Facts {
        Facts {
            arity: self.columns.len(),
            tuples: std::mem::take(&mut self.tuples),
            units: std::mem::take(&mut self.units),
        }
    }
}

/// A relation's gathered facts: their terms one after another, `arity` a fact, and the
/// unit of each.
pub(super) struct Facts {
    arity: usize,
    tuples: Vec<u32>,
    units: Vec<u32>,
}

/// A relation's gathered facts in order of tuple then unit, as [`add_sorted`] adds them.
pub(super) enum Sorted {
    /// Relations of at most 3 columns: each statement packed as one `u128` (columns from
    /// the top, then the unit), sorted.
    Packed { arity: usize, keys: Vec<u128> },
    /// Wider relations: the statements and their order.
    Wide { facts: Facts, order: Vec<u32> },
}

impl Sorted {
    /// Sorts `facts`.
    pub(super) fn of(facts: Facts) -> Sorted {
        let Facts {
            arity,
            tuples,
            units,
        } = facts;
        if arity <= 3 {
            let mut keys: Vec<u128> = (0..units.len())
                .map(|i| {
                    let t = &tuples[i * arity..(i + 1) * arity];
                    let mut key = 0u128;
                    for (c, &x) in t.iter().enumerate() {
                        key |= u128::from(x) << (96 - 32 * c);
                    }
                    key | u128::from(units[i])
                })
                .collect();
            drop(tuples);
            drop(units);
            sort_packed(&mut keys);
            return Sorted::Packed { arity, keys };
        }
        let tuple = |i: usize| &tuples[i * arity..(i + 1) * arity];
        let mut order: Vec<u32> = (0..units.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            tuple(a as usize)
                .cmp(tuple(b as usize))
                .then(units[a as usize].cmp(&units[b as usize]))
        });
        Sorted::Wide {
            facts: Facts {
                arity,
                tuples,
                units,
            },
            order,
        }
    }
}

/// Above this many statements, a comparison sort in place: the radix sort's second buffer
/// (16 bytes a statement) would add 64 MiB or more to the peak of a large flush.
const RADIX_STATEMENTS_MAX: usize = 1 << 22;

/// Sorts packed statements ascending: by bytes (`strata_eval`'s radix sort, a pass per byte
/// that differs among the keys) unless there are too many for its second buffer.
fn sort_packed(keys: &mut Vec<u128>) {
    if keys.len() > RADIX_STATEMENTS_MAX {
        keys.sort_unstable();
    } else {
        strata_eval::internals::radix::sort_by_key(keys, |&k| k);
    }
}

/// Sorts relations' facts ([`Sorted::of`]) in the order given, on a thread of its own when
/// given a scope to run one in (then the sorting of the next relations overlaps the adding
/// of this one), else when asked.
pub(super) struct Sorter {
    thread: Option<std::sync::mpsc::Receiver<Sorted>>,
    jobs: std::vec::IntoIter<Facts>,
}

impl Sorter {
    /// A sorter of `jobs`, with a thread in `scope`, or without one.
    pub(super) fn new<'scope>(
        scope: Option<&'scope std::thread::Scope<'scope, '_>>,
        jobs: Vec<Facts>,
    ) -> Sorter {
        match scope {
            Some(s) => {
                // One relation sorted ahead (handed over when the one before is taken): memory
                // holds at most two sorted at a time.
                let (tx, rx) = std::sync::mpsc::sync_channel(0);
                s.spawn(move || {
                    for job in jobs {
                        if tx.send(Sorted::of(job)).is_err() {
                            return;
                        }
                    }
                });
                Sorter {
                    thread: Some(rx),
                    jobs: Vec::new().into_iter(),
                }
            }
            None => Sorter {
                thread: None,
                jobs: jobs.into_iter(),
            },
        }
    }

    /// The next relation's facts, sorted.
    pub(super) fn next(&mut self) -> Result<Sorted> {
        let next = match &self.thread {
            Some(rx) => rx.recv().ok(),
            None => self.jobs.next().map(Sorted::of),
        };
        next.ok_or_else(|| crate::error::damaged("the sorting of a batch's facts stopped"))
    }
}

/// Adds a relation's gathered facts, sorted: each distinct tuple once, with its distinct
/// units.
pub(super) fn add_sorted(
    w: &mut RelWriter<'_>,
    sorted: Sorted,
    summary: &mut BatchSummary,
    mut seen: Option<&mut Bloom>,
) -> Result<()> {
    let rel = w.meta().id;
    // With a filter (a relation empty when the batch began, written in several flushes):
    // a tuple the filter never saw is certainly not stored.
    let mut add = |w: &mut RelWriter<'_>, t: &[u32], us: &[u32]| -> Result<bool> {
        match seen.as_deref_mut() {
            Some(b) => {
                let absent = !b.may_contain(rel, t);
                let new = w.add_known(t, us, absent)?;
                b.insert(rel, t);
                Ok(new)
            }
            None => w.add(t, us),
        }
    };
    let mut us = Vec::new();
    let (facts, order) = match sorted {
        Sorted::Packed { arity, keys } => {
            w.reserve(keys.len());
            let mut i = 0;
            let mut tuple = [0u32; 3];
            while i < keys.len() {
                let key = keys[i] >> 32;
                for (c, x) in tuple.iter_mut().enumerate() {
                    *x = (key >> (64 - 32 * c)) as u32;
                }
                us.clear();
                let mut j = i;
                while j < keys.len() && keys[j] >> 32 == key {
                    let u = keys[j] as u32;
                    if us.last() != Some(&u) {
                        us.push(u);
                    }
                    j += 1;
                }
                record(add(w, &tuple[..arity], &us)?, (j - i) as u64, summary);
                i = j;
            }
            return Ok(());
        }
        Sorted::Wide { facts, order } => (facts, order),
    };
    let (arity, tuples, units) = (facts.arity, facts.tuples, facts.units);
    let n = units.len();
    w.reserve(n);
    let tuple = |i: usize| &tuples[i * arity..(i + 1) * arity];
    let mut i = 0;
    while i < n {
        let t = tuple(order[i] as usize);
        us.clear();
        let mut j = i;
        while j < n && tuple(order[j] as usize) == t {
            let u = units[order[j] as usize];
            if us.last() != Some(&u) {
                us.push(u);
            }
            j += 1;
        }
        record(add(w, t, &us)?, (j - i) as u64, summary);
        i = j;
    }
    Ok(())
}

/// Counts a distinct tuple that `occurrences` statements of the batch gave.
pub(super) fn record(new: bool, occurrences: u64, summary: &mut BatchSummary) {
    if new {
        summary.new += 1;
        summary.duplicates += occurrences - 1;
    } else {
        summary.duplicates += occurrences;
    }
}
