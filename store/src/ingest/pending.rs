//! Pending facts: a relation's facts as a batch gathers them, checked against the relation's
//! earlier facts and the stored catalog, then added to its relation writer, each distinct
//! tuple once.

use std::collections::BTreeMap;

use super::Batch;
use super::gathered::Gathered;
use crate::catalog::RelationMeta;
use crate::dump::{Cell, Fact, FactGroup, FactRun, Field, Origin};
use crate::error::{Fault, IngestError, Result};
use strata_eval::Term;

/// A relation's facts gathered by a batch, as terms.
pub(super) struct Pending {
    spelled: String,
    origin: Origin,
    columns: Vec<String>,
    doc: Option<String>,
    /// The columns to index, if the dump declared them.
    indexed: Option<Vec<String>>,
    file: String,
    line: u64,
    facts: Gathered,
}

impl Pending {
    /// How many facts it holds.
    pub(super) fn len(&self) -> usize {
        self.facts.len()
    }

    /// Takes the gathered facts out, to sort ([`super::gathered::Sorted::of`]).
    pub(super) fn take_facts(&mut self) -> Gathered {
        self.facts.take()
    }

    /// The relation of `fact`, first seen in `file`, with no facts yet.
    fn of(fact: &Fact<'_>, file: &str) -> Pending {
        Pending {
            spelled: fact.spelled.to_owned(),
            origin: fact.origin,
            columns: fact.columns.to_vec(),
            doc: fact.doc.map(str::to_owned),
            indexed: fact.indexed.map(<[String]>::to_vec),
            file: file.to_owned(),
            line: fact.line,
            facts: Gathered::new(fact.columns.len()),
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

    /// Facts of one relation read one after another: what [`Batch::fact`] does for each,
    /// with their relation found and checked once for every slice of them up to where the
    /// batch flushes (at a fact it would flush after one at a time).
    pub(super) fn facts(&mut self, run: &FactRun<'_>) -> Result<()> {
        let arity = run.arity;
        // A run of one (an edge among edges of other kinds) is a fact.
        if arity == 0 || run.len() == 1 {
            for i in 0..run.len() {
                self.fact(&run.fact(i))?;
            }
            return Ok(());
        }
        let mut terms = std::mem::take(&mut self.group_row);
        let unit = self.fact_unit(run.head.unit)?;
        let buffer = self.options.buffer_facts.max(1);
        let mut i = 0;
        while i < run.len() {
            // The fact that adds a relation never flushes: it goes alone.
            let k = if self.rels.contains_key(run.head.relation) {
                buffer
                    .saturating_sub(self.pending_facts)
                    .clamp(1, run.len() - i)
            } else {
                1
            };
            terms.clear();
            for f in &run.fields[i * arity..(i + k) * arity] {
                terms.push(self.term(f)?);
            }
            self.facts_read += k as u64;
            if self.gather(&run.fact(i), &terms, arity, unit)? && self.pending_facts >= buffer {
                self.flush(true)?;
            }
            i += k;
        }
        self.group_row = terms;
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
                p.facts.push(terms, n, unit);
                true
            }
            None => {
                let mut p = Pending::of(fact, label);
                if p.columns.len() != arity {
                    let msg = format!(
                        "relation \"{}\" is given {} columns, but {} fields",
                        fact.relation,
                        p.columns.len(),
                        arity
                    );
                    return Err(self.clash(&label.clone(), fact.line, msg));
                }
                p.facts.push(terms, n, unit);
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

    /// The columns relation `name` (gathered as `p`) is declared to index: by `--index` or
    /// by its dump (a `.facts` file's `# index:` line); an error when both declare it, and
    /// not alike.
    fn declared<'a>(&'a self, name: &str, p: &'a Pending) -> Result<Option<&'a [String]>> {
        let flag = self.options.indexes.get(name).map(Vec::as_slice);
        match (flag, p.indexed.as_deref()) {
            (Some(a), Some(b))
                if !(a.iter().all(|c| b.contains(c)) && b.iter().all(|c| a.contains(c))) =>
            {
                Err(self.clash(
                    &p.file,
                    p.line,
                    format!(
                        "relation \"{name}\": --index declares {} and the dump's `# index:` \
                         line {}; give one, or the same",
                        a.join(", "),
                        b.join(", ")
                    ),
                ))
            }
            (flag, file) => Ok(flag.or(file)),
        }
    }

    /// Whether stored relation `m` may take the facts gathered for it (`p`) as declared:
    /// `--index` may name any columns (the batch builds or drops their postings before it
    /// commits, `reindex`); a dump's `# index:` line, which says what the relation needs,
    /// must name columns the relation has an index on. The error says what differs, and
    /// how to index the rest.
    fn check_declared(&self, m: &RelationMeta, p: &Pending) -> std::result::Result<(), String> {
        if let Some(indexed) = self.options.indexes.get(&m.name) {
            return RelationMeta::unindexed_of(&m.name, &m.columns, indexed).map(|_| ());
        }
        let Some(line) = p.indexed.as_deref() else {
            return Ok(());
        };
        let declared = RelationMeta::unindexed_of(&m.name, &m.columns, line)?;
        let missing: Vec<&str> = m
            .unindexed
            .iter()
            .filter(|c| !declared.contains(c))
            .map(|&c| m.columns[usize::from(c)].as_str())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(format!(
            "relation \"{}\" is stored with an index on {} only, and the dump's `# index:` line \
             names {}; give the batch --index {}={} to build the index of {} as it commits",
            m.name,
            m.indexed_columns().join(", "),
            line.join(", "),
            m.name,
            line.join(","),
            missing.join(", ")
        ))
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
                    self.declared(name, p)?;
                    self.check_declared(m, p)
                        .map_err(|message| self.clash(&p.file, p.line, message))?;
                    let mut m = m.clone();
                    if let Some(doc) = &p.doc {
                        m.doc.clone_from(doc);
                    }
                    m
                }
                None => {
                    let declared = self.declared(name, p)?;
                    let unindexed = match declared {
                        Some(indexed) => RelationMeta::unindexed_of(name, &p.columns, indexed)
                            .map_err(|message| self.clash(&p.file, p.line, message))?,
                        None => Vec::new(),
                    };
                    // A large `.facts` relation nothing declares: its later columns get their
                    // postings when a query first looks it up by them alone.
                    let on_demand: Vec<u16> = if declared.is_none()
                        && p.origin == Origin::Facts
                        && p.len() as u64 >= self.options.on_demand_rows
                        && self.store.inner.base_seal.declared_indexes
                    {
                        (1..p.columns.len() as u16).collect()
                    } else {
                        Vec::new()
                    };
                    let unindexed = if on_demand.is_empty() {
                        unindexed
                    } else {
                        on_demand.clone()
                    };
                    if !unindexed.is_empty() && !self.store.inner.base_seal.declared_indexes {
                        return Err(self.clash(
                            &p.file,
                            p.line,
                            format!(
                                "relation \"{name}\" is declared with columns without an \
                                 index, which needs a database of format version 6 or later, \
                                 and this one is older: ingest its dumps into a new database"
                            ),
                        ));
                    }
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
                        unindexed,
                        on_demand,
                    }
                }
            };
            out.insert(name.clone(), meta);
        }
        Ok(out)
    }
}
