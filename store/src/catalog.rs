//! The catalog: what the base file records about relations and batches.

use std::collections::{BTreeMap, HashMap};

use redb::{ReadableDatabase, ReadableTable};
use serde::{Deserialize, Serialize};

use crate::dump::Origin;
use crate::error::{Damage, Result};
use crate::layout;

/// What the catalog records of one relation (stored as JSON in the `relations` table).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelationMeta {
    /// The relation id, the first element of every key of its data.
    pub id: u32,
    /// The name programs use (`imports`).
    pub name: String,
    /// The name as the first dump spelled it (`IMPORTS`).
    pub spelled: String,
    /// What kind of dump declares it.
    pub origin: Origin,
    /// Column names; their count is the arity.
    pub columns: Vec<String>,
    /// One line of documentation, empty when none was given.
    pub doc: String,
    /// The tier whose file holds the relation's data.
    pub tier: String,
    /// Row ids handed out so far (live and dead): the next new row gets this id.
    pub next_row: u32,
    /// Live facts.
    pub rows: u64,
    /// Distinct values per column among live facts. For a column without an index
    /// ([`RelationMeta::unindexed`]) it is an upper bound: exact after the relation's first
    /// batch, then raised by each batch's distinct new values (whether stored before or
    /// not) and never lowered by a removal, at most `rows`.
    pub distinct: Vec<u64>,
    /// The columns with no postings, ascending; never column 0, whose postings find a fact
    /// already stored. Fixed when the relation is first stored (`--index`); empty, and not
    /// written, for a relation whose every column is indexed. Format version 6 on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unindexed: Vec<u16>,
    /// Of [`RelationMeta::unindexed`], the columns whose postings are built when a query
    /// first looks the relation up by them alone ([`crate::Store::build_demanded`]): the
    /// later columns of a large `.facts` relation stored with no declaration
    /// ([`crate::BatchOptions::on_demand_rows`]). A declaration (`--index`) clears it.
    /// Empty, and not written, otherwise; a build that does not know it reads the columns
    /// as declared without postings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on_demand: Vec<u16>,
}

impl RelationMeta {
    /// The relation as the engine's [`strata_eval::RelationInfo`].
    pub fn info(&self) -> strata_eval::RelationInfo {
        strata_eval::RelationInfo {
            name: self.name.clone(),
            columns: self.columns.clone(),
            doc: self.doc.clone(),
            tier: self.tier.clone(),
            rows: self.rows,
            distinct: self.distinct.clone(),
            origin: match self.origin {
                Origin::Edges => strata_eval::Origin::Edges,
                Origin::Attrs => strata_eval::Origin::Attrs,
                Origin::Nodes => strata_eval::Origin::Nodes,
                Origin::Facts => strata_eval::Origin::Facts,
            },
            spelled: self.spelled.clone(),
            unindexed: self.unindexed.iter().map(|&c| usize::from(c)).collect(),
        }
    }

    /// Of columns `columns` (positions), those the relation keeps indexed on demand
    /// ([`RelationMeta::on_demand`]), ascending: the ones a query that looked the relation
    /// up by them alone gets postings built for.
    pub fn demanded(&self, columns: &[usize]) -> Vec<u16> {
        self.on_demand
            .iter()
            .copied()
            .filter(|&c| columns.contains(&usize::from(c)))
            .collect()
    }

    /// Whether column `c` has postings.
    pub fn indexed(&self, c: usize) -> bool {
        !self.unindexed.iter().any(|&u| usize::from(u) == c)
    }

    /// The columns left without postings when a relation of columns `columns` is declared
    /// to index `indexed` (names): ascending positions. An error says what is wrong with the
    /// declaration: a name that is no column, or the first column left out.
    pub(crate) fn unindexed_of(
        name: &str,
        columns: &[String],
        indexed: &[String],
    ) -> std::result::Result<Vec<u16>, String> {
        for c in indexed {
            if !columns.contains(c) {
                return Err(format!(
                    "relation \"{name}\" has no column \"{c}\"; its columns are {}",
                    columns.join(", ")
                ));
            }
        }
        if let Some(first) = columns.first()
            && !indexed.contains(first)
        {
            return Err(format!(
                "relation \"{name}\": its first column, \"{first}\", is always indexed (it \
                 finds a fact already stored); name it too: {name}={first}{}",
                indexed.iter().map(|c| format!(",{c}")).collect::<String>()
            ));
        }
        Ok((1..columns.len())
            .filter(|&c| !indexed.contains(&columns[c]))
            .map(|c| c as u16)
            .collect())
    }

    /// The names of the columns with postings.
    pub fn indexed_columns(&self) -> Vec<&str> {
        self.columns
            .iter()
            .enumerate()
            .filter(|&(c, _)| self.indexed(c))
            .map(|(_, n)| n.as_str())
            .collect()
    }

    /// Why the entry's [`RelationMeta::unindexed`] is not a set of its later columns,
    /// ascending; `None` when it is.
    pub(crate) fn unindexed_fault(&self) -> Option<String> {
        let arity = self.columns.len();
        let fine = self.unindexed.windows(2).all(|w| w[0] < w[1])
            && self
                .unindexed
                .iter()
                .all(|&c| c > 0 && usize::from(c) < arity);
        let on_demand = self.on_demand.windows(2).all(|w| w[0] < w[1])
            && self.on_demand.iter().all(|c| self.unindexed.contains(c));
        if !fine {
            return Some(format!(
                "relation {}: its unindexed columns {:?} are not later columns of its {arity}, \
                 ascending",
                self.name, self.unindexed
            ));
        }
        (!on_demand).then(|| {
            format!(
                "relation {}: its columns indexed on demand {:?} are not unindexed columns \
                 {:?}, ascending",
                self.name, self.on_demand, self.unindexed
            )
        })
    }
}

/// What the catalog records of one committed batch (JSON in the `batches` table).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct BatchRecord {
    /// The batch's sequence number: 1 for the first, then one more per committed batch.
    pub seq: u64,
    /// The id the client gave, which makes a retry of the batch a no-op.
    pub batch_id: Option<String>,
    /// Labels the client gave (`commit=abc123`).
    pub labels: BTreeMap<String, String>,
    /// When it committed, in seconds since the Unix epoch.
    pub committed_at: u64,
    /// Facts read from the batch's input.
    pub facts_read: u64,
    /// Facts that were not stored before.
    pub new: u64,
    /// Facts read that were stored already (or repeated within the batch).
    pub duplicates: u64,
    /// Facts removed (by `--replace` or a retraction).
    pub removed: u64,
    /// The relations the batch wrote to.
    pub relations: Vec<String>,
    /// The units the batch replaced or retracted.
    pub units_removed: Vec<String>,
}

/// A read-only copy of the catalog as of one snapshot.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    /// The last committed batch (0 for an empty database).
    pub seq: u64,
    /// That batch's record, if any batch committed.
    pub last_batch: Option<BatchRecord>,
    /// Every relation, by name.
    pub relations: BTreeMap<String, RelationMeta>,
    /// The last batch that wrote each tier.
    pub tier_seq: HashMap<String, u64>,
    /// Text ids handed out.
    pub texts: u32,
    /// Number ids handed out.
    pub numbers: u32,
}

/// Reads a JSON value stored in a table.
pub fn decode_json<T: for<'de> Deserialize<'de>>(bytes: &[u8], what: &str) -> Result<T, Damage> {
    serde_json::from_slice(bytes).map_err(|e| Damage::Format(format!("{what}: {e}")))
}

/// Writes a value as JSON for a table.
pub fn encode_json<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing these plain structs to a Vec cannot fail.
    serde_json::to_vec(value).unwrap_or_default()
}

/// Reads a u32 `meta` scalar (0 when unset).
pub(crate) fn meta_u32(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<u32> {
    match table.get(key)? {
        Some(v) => layout::get_u32(v.value())
            .ok_or_else(|| crate::error::damaged(format!("meta \"{key}\" is not a u32"))),
        None => Ok(0),
    }
}

/// Reads a u64 `meta` scalar (0 when unset).
pub(crate) fn meta_u64(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<u64> {
    match table.get(key)? {
        Some(v) => layout::get_u64(v.value())
            .ok_or_else(|| crate::error::damaged(format!("meta \"{key}\" is not a u64"))),
        None => Ok(0),
    }
}

impl Catalog {
    /// Reads the catalog through a read transaction of the base file.
    pub(crate) fn read(txn: &redb::ReadTransaction) -> Result<Catalog> {
        let meta = txn.open_table(layout::META)?;
        let seq = meta_u64(&meta, "seq")?;
        let texts = meta_u32(&meta, "texts")?;
        let numbers = meta_u32(&meta, "numbers")?;
        let mut relations = BTreeMap::new();
        for entry in txn.open_table(layout::RELATIONS)?.iter()? {
            let (_, v) = entry?;
            let m: RelationMeta = decode_json(v.value(), "a relation's catalog entry")?;
            if let Some(fault) = m.unindexed_fault() {
                return Err(Damage::Format(fault).into());
            }
            relations.insert(m.name.clone(), m);
        }
        let mut tier_seq = HashMap::new();
        for entry in txn.open_table(layout::TIER_SEQ)?.iter()? {
            let (k, v) = entry?;
            tier_seq.insert(k.value().to_owned(), v.value());
        }
        let last_batch = match txn.open_table(layout::BATCHES)?.get(seq)? {
            Some(v) => Some(decode_json(v.value(), "a batch record")?),
            None => None,
        };
        Ok(Catalog {
            seq,
            last_batch,
            relations,
            tier_seq,
            texts,
            numbers,
        })
    }

    /// Reads the catalog of a database as it is now.
    pub(crate) fn current(db: &redb::Database) -> Result<Catalog> {
        Catalog::read(&db.begin_read()?)
    }
}
