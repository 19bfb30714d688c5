//! `strata stats`: what the database holds, per relation and per tier.

use std::collections::BTreeMap;
use std::fmt;

use crate::catalog::BatchRecord;
use crate::db::Store;
use crate::error::ReadError;

/// One relation's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct RelationStats {
    /// Its name.
    pub name: String,
    /// Its tier.
    pub tier: String,
    /// Its column names (the arity is their count).
    pub columns: Vec<String>,
    /// Live facts.
    pub rows: u64,
    /// Distinct values per column (an upper bound for a column without an index).
    pub distinct: Vec<u64>,
    /// The columns without an index (postings), by position; empty for most relations.
    pub unindexed: Vec<usize>,
    /// Of those, the columns indexed when a query first looks the relation up by them
    /// alone ([`crate::RelationMeta::on_demand`]).
    pub on_demand: Vec<usize>,
    /// Rows removed but not yet reclaimed.
    pub dead_rows: u64,
}

/// The whole database's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// The last committed batch, if any.
    pub last_batch: Option<BatchRecord>,
    /// Every relation, by name.
    pub relations: Vec<RelationStats>,
    /// Bytes on disk per tier file that exists.
    pub tier_bytes: BTreeMap<String, u64>,
    /// Distinct texts and numbers in the dictionary.
    pub dictionary: (u32, u32),
}

impl Store {
    /// The database's figures, read from the catalog (no tier file is opened).
    pub fn stats(&self) -> Result<Stats, ReadError> {
        let catalog = self.catalog()?;
        let relations = catalog
            .relations
            .values()
            .map(|m| RelationStats {
                name: m.name.clone(),
                tier: m.tier.clone(),
                columns: m.columns.clone(),
                rows: m.rows,
                distinct: m.distinct.clone(),
                unindexed: m.unindexed.iter().map(|&c| usize::from(c)).collect(),
                on_demand: m.on_demand.iter().map(|&c| usize::from(c)).collect(),
                dead_rows: u64::from(m.next_row) - m.rows,
            })
            .collect();
        let tier_bytes = self
            .tier_files()?
            .into_iter()
            .map(|(t, _, n)| (t, n))
            .collect();
        Ok(Stats {
            last_batch: catalog.last_batch,
            relations,
            tier_bytes,
            dictionary: (catalog.texts, catalog.numbers),
        })
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.last_batch {
            Some(b) => {
                write!(f, "batch {}", b.seq)?;
                for (k, v) in &b.labels {
                    write!(f, " {k}={v}")?;
                }
                writeln!(f)?;
            }
            None => writeln!(f, "empty database: no batch committed yet")?,
        }
        writeln!(
            f,
            "dictionary: {} texts, {} numbers",
            self.dictionary.0, self.dictionary.1
        )?;
        writeln!(f, "relations: {}", self.relations.len())?;
        for r in &self.relations {
            let cols: Vec<String> = r
                .columns
                .iter()
                .zip(&r.distinct)
                .enumerate()
                .map(|(i, (c, d))| {
                    if r.on_demand.contains(&i) {
                        format!("{c} (at most {d} distinct; indexed when first looked up)")
                    } else if r.unindexed.contains(&i) {
                        format!("{c} (at most {d} distinct; no index)")
                    } else {
                        format!("{c} ({d} distinct)")
                    }
                })
                .collect();
            write!(
                f,
                "  {}/{} [{}] rows {}: {}",
                r.name,
                r.columns.len(),
                r.tier,
                r.rows,
                cols.join(", ")
            )?;
            if r.dead_rows > 0 {
                write!(f, "; {} removed rows not reclaimed", r.dead_rows)?;
            }
            writeln!(f)?;
        }
        writeln!(f, "tiers:")?;
        for (t, n) in &self.tier_bytes {
            writeln!(f, "  {t}: {n} bytes")?;
        }
        Ok(())
    }
}
