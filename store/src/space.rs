//! Space on disk: where a database's bytes go ([`Store::space`], `strata stats --space`), and
//! giving back the pages redb freed ([`compact`], `strata compact`).
//!
//! redb never shrinks a file on its own: pages a batch frees (a retraction, a block or
//! postings chunk rewritten) are reused by later batches but stay in the file. And a value
//! rewritten in place of a smaller one (a postings chunk a later flush or batch grows)
//! leaves its B-tree leaves mostly empty. Compaction first rewrites each of the store's
//! tables in key order into a fresh one (packed leaves) in one transaction, then moves the
//! live pages towards the start and cuts the file after them.

use std::fmt;
use std::path::{Path, PathBuf};

use redb::{
    Key, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition, TableHandle,
    Value, WriteTransaction,
};

use crate::db::{OpenOptions, Store};
use crate::error::{CompactError, Fault, OpenError, ReadError};
use crate::guard::faults;
use crate::layout;
use crate::stamp::Stamp;

/// One table's bytes in one file, as redb counts them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSpace {
    /// The table's name (see `docs/design.md`, "Tables and key encodings").
    pub name: String,
    /// Bytes of keys and values.
    pub stored: u64,
    /// Bytes of the B-tree's own structure (page headers, offsets, branch pages).
    pub metadata: u64,
    /// Bytes of the table's pages that hold nothing.
    pub fragmented: u64,
}

impl TableSpace {
    /// Every byte of the table's pages.
    pub fn total(&self) -> u64 {
        self.stored + self.metadata + self.fragmented
    }
}

/// One file's bytes: its length, and each table's share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSpace {
    /// The tier the file holds (`default` for the base file).
    pub tier: String,
    /// Its path.
    pub path: PathBuf,
    /// Its length on disk.
    pub bytes: u64,
    /// Its tables, largest first.
    pub tables: Vec<TableSpace>,
}

impl FileSpace {
    /// Bytes of the file no table uses: free pages (which [`compact`] gives back) and redb's
    /// own bookkeeping.
    pub fn unused(&self) -> u64 {
        let used: u64 = self.tables.iter().map(TableSpace::total).sum();
        self.bytes.saturating_sub(used)
    }
}

/// Where a database's bytes go: every file (every tier file is opened), and the facts they
/// hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Space {
    /// The files, the base file first.
    pub files: Vec<FileSpace>,
    /// Live facts over every relation.
    pub facts: u64,
}

impl Space {
    /// Bytes on disk, every file.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }

    /// Bytes on disk per live fact (every index and the dictionary included); 0 for a
    /// database without facts.
    pub fn bytes_per_fact(&self) -> f64 {
        if self.facts == 0 {
            return 0.0;
        }
        self.bytes() as f64 / self.facts as f64
    }
}

impl fmt::Display for Space {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} bytes on disk for {} facts: {:.1} bytes per fact",
            self.bytes(),
            self.facts,
            self.bytes_per_fact()
        )?;
        for file in &self.files {
            writeln!(
                f,
                "{} ({}): {} bytes, {} unused",
                file.path.display(),
                file.tier,
                file.bytes,
                file.unused()
            )?;
            for t in file.tables.iter().filter(|t| t.total() > 0) {
                writeln!(
                    f,
                    "  {}: {} bytes ({} stored, {} structure, {} fragmented)",
                    t.name,
                    t.total(),
                    t.stored,
                    t.metadata,
                    t.fragmented
                )?;
            }
        }
        Ok(())
    }
}

/// The space of each table of `db`: every table the file holds (a tier file has none of
/// the base file's own).
fn table_space(db: &redb::Database) -> crate::error::Result<Vec<TableSpace>> {
    let txn = db.begin_read()?;
    let mut out = Vec::new();
    for handle in txn.list_tables()? {
        // Its statistics do not depend on its types: open it untyped.
        let name = handle.name().to_owned();
        let def: TableDefinition<'_, &str, &[u8]> = TableDefinition::new(&name);
        let stats = txn.open_untyped_table(def)?.stats()?;
        out.push(TableSpace {
            name,
            stored: stats.stored_bytes(),
            metadata: stats.metadata_bytes(),
            fragmented: stats.fragmented_bytes(),
        });
    }
    out.sort_by(|a, b| b.total().cmp(&a.total()).then(a.name.cmp(&b.name)));
    Ok(out)
}

impl Store {
    /// Where the database's bytes go, per file and table, and its bytes per fact. Opens
    /// every tier file.
    pub fn space(&self) -> Result<Space, ReadError> {
        let catalog = self.catalog()?;
        let facts = catalog.relations.values().map(|m| m.rows).sum();
        let mut files = Vec::new();
        for (tier, path, bytes) in self.tier_files()? {
            let tables = if tier == layout::DEFAULT_TIER {
                faults(|| table_space(&**self.inner.base()?))
            } else {
                let file = self.tier_db(&tier, false).map_err(ReadError::Tier)?;
                faults(|| table_space(&file))
            }
            .map_err(|f| self.read_fault_at(f, &path))?;
            files.push(FileSpace {
                tier,
                path,
                bytes,
                tables,
            });
        }
        Ok(Space { files, facts })
    }
}

/// What [`compact`] did to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compacted {
    /// The file.
    pub path: PathBuf,
    /// Its length before.
    pub before: u64,
    /// Its length after.
    pub after: u64,
}

/// Gives back the pages redb freed in every file of the database in `dir`: each file is
/// compacted (redb's `Database::compact`) until nothing more moves, and its length before
/// and after is returned. The database is opened first as any command opens it (recovering
/// an interrupted batch, verifying a changed file), so a damaged file is refused before it
/// is rewritten. Needs the database to itself: a running `strata serve` holds it
/// ([`OpenError::InUse`]).
pub fn compact(dir: &Path) -> Result<Vec<Compacted>, CompactError> {
    let files: Vec<PathBuf> = {
        let store = Store::open(dir, OpenOptions::default())?;
        let files = store.tier_files()?;
        // Every tier file opened once, so each is recovered and stamped on close.
        for (tier, _, _) in &files {
            if tier != layout::DEFAULT_TIER {
                store.tier_db(tier, false)?;
            }
        }
        files.into_iter().map(|(_, p, _)| p).collect()
    };
    let mut out = Vec::new();
    for path in files {
        let before = len(&path)?;
        let mut db = redb::Database::builder().open(&path).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => OpenError::InUse { path: path.clone() },
            other => Fault::from(other).open(&path),
        })?;
        match faults(|| repack_file(&db, None)) {
            Ok(()) => {}
            Err(Fault::Engine(source)) => {
                return Err(CompactError::Engine {
                    path,
                    source: Box::new(source),
                });
            }
            Err(f) => return Err(f.open(&path).into()),
        }
        // One call: redb's `compact` repeats its passes until nothing moves.
        match faults(|| Ok(db.compact()?)) {
            Ok(_) => {}
            Err(Fault::Engine(source)) => {
                return Err(CompactError::Engine {
                    path,
                    source: Box::new(source),
                });
            }
            Err(f) => return Err(f.open(&path).into()),
        }
        drop(db);
        // Rewritten by this process from a file it had just verified or found as stamped.
        Stamp::record(&path);
        out.push(Compacted {
            before,
            after: len(&path)?,
            path,
        });
    }
    Ok(out)
}

/// Rewrites every table of the store's layout that `db` holds (or, given `only`, those of
/// them it names), each in key order into a fresh table that then takes its name, in one
/// write transaction: all of them or, if it fails, none. Keys appended in order fill each leaf before the next, where rewrites of
/// grown values leave leaves mostly empty (the 1M-edge graph ingested as four batches:
/// 3.5 MB of postings in 23.1 MB of pages).
pub(crate) fn repack_file(db: &redb::Database, only: Option<&[String]>) -> Result<(), Fault> {
    let txn = db.begin_write()?;
    let names: Vec<String> = txn.list_tables()?.map(|t| t.name().to_owned()).collect();
    let has = |name: &str| {
        names.iter().any(|n| n == name) && only.is_none_or(|o| o.iter().any(|n| n == name))
    };
    macro_rules! repack_tables {
        ($($def:expr),* $(,)?) => {$(
            if has($def.name()) {
                repack(&txn, $def)?;
            }
        )*};
    }
    repack_tables!(
        layout::META,
        layout::TEXT_BY_ID,
        layout::ID_BY_TEXT,
        layout::TEXT_COLLISIONS,
        layout::NUMBER_BY_ID,
        layout::ID_BY_NUMBER,
        layout::RELATIONS,
        layout::RELATION_IDS,
        layout::BATCHES,
        layout::BATCH_IDS,
        layout::UNIT_IDS,
        layout::UNIT_NAMES,
        layout::UNIT_RELATIONS,
        layout::TIER_SEQ,
        layout::BLOCKS,
        layout::POSTINGS,
        layout::DEAD,
        layout::OWNERS,
        layout::SHARED,
        layout::TIER_META,
    );
    txn.commit()?;
    Ok(())
}

/// Copies `def`'s table in key order into a fresh table, drops the old one and gives the
/// fresh one its name.
fn repack<K: Key + 'static, V: Value + 'static>(
    txn: &WriteTransaction,
    def: TableDefinition<'_, K, V>,
) -> Result<(), Fault> {
    let fresh_name = format!("{}.repack", def.name());
    let fresh_def: TableDefinition<'_, K, V> = TableDefinition::new(&fresh_name);
    // A table left by nothing (the transaction is all or none), but be sure it is empty.
    txn.delete_table(fresh_def)?;
    {
        let old = txn.open_table(def)?;
        let mut fresh = txn.open_table(fresh_def)?;
        for entry in old.iter()? {
            let (k, v) = entry?;
            fresh.insert(k.value(), v.value())?;
        }
    }
    txn.delete_table(def)?;
    txn.rename_table(fresh_def, def)?;
    Ok(())
}

fn len(path: &Path) -> Result<u64, OpenError> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|source| OpenError::Io {
            path: path.to_owned(),
            source,
        })
}
