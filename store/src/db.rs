//! The database: a directory of redb files, one per tier, opened lazily.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use redb::{Database, ReadableDatabase};

use crate::catalog::{Catalog, meta_u32, meta_u64};
use crate::error::{Fault, OpenError, ReadError, Result, damaged};
use crate::guard::{faults, guarded};
use crate::layout::{self, DEFAULT_TIER, FORMAT_VERSION};
use crate::reclaim::Reclaim;
use crate::seal::Seal;
use crate::stamp::{Stamp, Stamper, Verify};

/// The most page cache a file gets by default ([`OpenOptions::cache_bytes`]): 64 MiB, what
/// a new file (an ingest's dirty pages) and a file of 1 GiB or more get.
///
/// Measured on the generator's 50M-edge graph (a 3.6 GB file, `store/examples/speed.rs
/// --db`): a random lookup takes 3.1 µs with 256 MiB, 5.2 µs with 64 MiB and 6.4 µs with
/// 32 MiB, while the 256 MiB cache alone made a query's peak RSS 334 MiB against 90. A
/// closure's first page reads every distinct value's text to order them, which fills the
/// cache a count never fills: with 256 MiB the page took 1.75x the count's memory, with 64
/// MiB 1.50x, at 1.20x its CPU (32 MiB doubled the count's time).
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

/// The least page cache a file gets by default: 8 MiB.
pub const MIN_CACHE_BYTES: usize = 8 << 20;

/// The page cache a file of `len` bytes gets by default: a sixteenth of its size, at least
/// [`MIN_CACHE_BYTES`] and at most [`DEFAULT_CACHE_BYTES`]; a file not yet made (`None`)
/// gets the most, for the ingest that fills it.
///
/// What a query's lookups revisit (branch pages, the postings and blocks of the relations
/// it reads) grows with the file, and what a cache larger than that holds is the pages of
/// a scan it will not read again, at the process's memory: on the generator's 10M-edge
/// graph (a 285 MB file), the count of who reaches `lib.rs` takes the same CPU with 64, 16
/// or 4 MiB of cache and peaks at 55 MiB with each, while its first page peaks at 140 MiB
/// with 64 MiB of cache and 98 MiB with 16.
///
/// ```
/// use strata_store::{DEFAULT_CACHE_BYTES, MIN_CACHE_BYTES, scaled_cache_bytes};
///
/// assert_eq!(scaled_cache_bytes(None), DEFAULT_CACHE_BYTES);
/// assert_eq!(scaled_cache_bytes(Some(20 << 20)), MIN_CACHE_BYTES);
/// assert_eq!(scaled_cache_bytes(Some(256 << 20)), 16 << 20);
/// assert_eq!(scaled_cache_bytes(Some(4 << 30)), DEFAULT_CACHE_BYTES);
/// ```
pub fn scaled_cache_bytes(len: Option<u64>) -> usize {
    scaled_cache_bytes_from(len, MIN_CACHE_BYTES)
}

/// [`scaled_cache_bytes`] with another least size (at most [`DEFAULT_CACHE_BYTES`]).
pub(crate) fn scaled_cache_bytes_from(len: Option<u64>, min: usize) -> usize {
    let min = min.min(DEFAULT_CACHE_BYTES);
    match len {
        None => DEFAULT_CACHE_BYTES,
        Some(len) => usize::try_from(len / 16)
            .unwrap_or(usize::MAX)
            .clamp(min, DEFAULT_CACHE_BYTES),
    }
}

/// The page cache a file at `path` gets when it is opened now with `options` (`create`: a
/// file not yet made).
pub(crate) fn cache_bytes_for(path: &Path, options: &OpenOptions, create: bool) -> usize {
    options.cache_bytes.unwrap_or_else(|| {
        let len = if create {
            None
        } else {
            std::fs::metadata(path).ok().map(|m| m.len())
        };
        scaled_cache_bytes_from(len, options.min_cache_bytes)
    })
}

/// How to open a database.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// Create the directory and the base file when they do not exist.
    pub create: bool,
    /// redb's page cache per file, in bytes; `None`, the default, sizes it by the file as
    /// it is opened ([`scaled_cache_bytes`]: 8 to 64 MiB; redb's own default is 1 GiB). It
    /// holds the pages read most lately, and an ingest's dirty pages, so it is memory a
    /// process holds on top of its queries' own.
    pub cache_bytes: Option<usize>,
    /// When to verify the checksum of every page of a file as it is opened (redb's
    /// `set_check_integrity_on_open`): a file damaged outside redb then fails to open with
    /// [`OpenError::Damaged`] instead of being read. It reads the file whole, so the default,
    /// [`Verify::Changed`], does it only for a file that is not as this database last left
    /// it (see [`Verify`]); `strata check` verifies always. Unverified, damage redb trips over
    /// while reading is still an error, never a panic (see the `guard` module), and Strata's
    /// own values carry checksums, but a byte changed in redb's keys or branch pages may be
    /// read as it is.
    pub verify: Verify,
    /// Makes the storage backend of each file opened (tests put faulty backends under the
    /// store with it); `None`, the default, opens each file by path with redb's own.
    #[doc(hidden)]
    pub backends: Option<crate::backend::Backends>,
    /// The format version of the files this open creates (the base file, and tier files
    /// created later): [`layout::FORMAT_VERSION`], the newest, by default; a value outside
    /// [`layout::OLDEST_VERSION`] ..= [`layout::FORMAT_VERSION`] is taken as the nearest of
    /// them. Files that exist keep their own version, whatever this says.
    pub format_version: u32,
    /// When the store gives back, by itself, the space its batches leave unused in its
    /// files (free pages, half-empty leaves), and where: after a commit, in the committing
    /// thread, by default (see [`Reclaim`]); `None` never (only `strata compact` does).
    pub reclaim: Option<Reclaim>,
    /// The least page cache [`OpenOptions::cache_bytes`]' default gives a file (normally
    /// [`MIN_CACHE_BYTES`]); tests lower it to see a small file's cache follow its size.
    #[doc(hidden)]
    pub min_cache_bytes: usize,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            create: false,
            cache_bytes: None,
            verify: Verify::default(),
            backends: None,
            format_version: FORMAT_VERSION,
            reclaim: Some(Reclaim::default()),
            min_cache_bytes: MIN_CACHE_BYTES,
        }
    }
}

/// An open redb file of the database, with what its format version says about its values.
///
/// Closing a file is guarded as every other call into redb is (see `guard`): redb's close
/// commits its allocator state, which walks the freed-pages tree and can panic on a damaged
/// page of it. Such a close is caught, and the file left unstamped, so the next open
/// verifies it and reports the damage.
pub(crate) struct File {
    /// The redb database: `Some` until the file is closed (by its drop, or by
    /// `Inner::compact_new_file`, which closes it itself).
    db: Option<Database>,
    /// Whether its values carry checksums (format version 2 and later) and how they are
    /// encoded (format version 3 and later: compactly).
    pub(crate) seal: Seal,
    /// The page cache it was opened with, in bytes.
    pub(crate) cache_bytes: usize,
    /// Stamps the file when it is closed. It must stay the last field: fields are dropped in
    /// order, and the stamp must see the file after redb's close has written it.
    pub(crate) stamper: Stamper,
}

impl std::ops::Deref for File {
    type Target = Database;

    fn deref(&self) -> &Database {
        self.db
            .as_ref()
            .expect("a file's database is taken only as it closes")
    }
}

impl std::ops::DerefMut for File {
    fn deref_mut(&mut self) -> &mut Database {
        self.db
            .as_mut()
            .expect("a file's database is taken only as it closes")
    }
}

impl Drop for File {
    /// Closes the database under the guard; a close that panics leaves the file unstamped.
    /// The stamper, a field, is dropped after this, so the stamp sees the file as the close
    /// left it.
    fn drop(&mut self) {
        if let Some(db) = self.db.take() {
            let closed = crate::guard::faults(|| {
                drop(db);
                Ok(())
            });
            if closed.is_err() {
                self.stamper.distrust();
            }
        }
    }
}

/// An open database. Cheap to clone; every clone shares the open files.
#[derive(Clone)]
pub struct Store {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) dir: PathBuf,
    /// The database's identity, which its tier files carry (see `identity`).
    pub(crate) identity: crate::identity::Identity,
    /// The base file; replaced when the store reopens it after a storage failure (see
    /// `heal`), and `None` while reopening it failed.
    pub(crate) base: RwLock<Option<Arc<File>>>,
    /// The base file's seal (its format version does not change when it is reopened).
    pub(crate) base_seal: Seal,
    pub(crate) options: OpenOptions,
    /// Tier files opened so far, by tier name (never the default tier).
    tiers: Mutex<HashMap<String, Arc<File>>>,
    /// Writers hold it exclusively from their first tier commit to their base commit;
    /// snapshots hold it shared while they begin their transactions, so they never see a
    /// tier file ahead of the base file.
    pub(crate) commit_lock: RwLock<()>,
    /// Serializes batches within this process.
    pub(crate) writer: Mutex<()>,
    /// Set when a storage call failed (a commit, a flush, a read): redb refuses every later
    /// call on that file, so the store opens its files again before the next batch or
    /// snapshot (see `heal`).
    pub(crate) poisoned: std::sync::atomic::AtomicBool,
    /// What reopening the files after a failure has done so far (see `heal`).
    pub(crate) heal: Mutex<crate::heal::HealState>,
    /// The catalog of the last committed batch a snapshot read, shared by later snapshots.
    pub(crate) catalog_cache: Mutex<Option<Arc<crate::catalog::Catalog>>>,
    /// What this open created (the base file, and the directory when `Some(true)`).
    created: Option<bool>,
    /// Set when a batch of this process failed (reading its input, or committing).
    pub(crate) batch_failed: std::sync::atomic::AtomicBool,
    /// What giving back unused space has yet to do (see `reclaim`).
    pub(crate) reclaim: Mutex<crate::reclaim::ReclaimState>,
}

impl Drop for Inner {
    /// A database this process created, whose first batch failed and which holds no batch,
    /// is removed again (its files, and the directory if it was created too), so a failed
    /// first ingest leaves nothing behind. The files are removed while this process still
    /// holds their locks, so no other process can have begun using them.
    fn drop(&mut self) {
        if self.poisoned.load(std::sync::atomic::Ordering::SeqCst) {
            // A commit failed part way: the files are checked when next opened.
            if let Some(base) = self.base_file() {
                base.stamper.distrust();
            }
            for file in self
                .tiers
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .values()
            {
                file.stamper.distrust();
            }
        }
        let Some(dir_created) = self.created else {
            return;
        };
        if !self.batch_failed.load(std::sync::atomic::Ordering::SeqCst) {
            if !self.poisoned.load(std::sync::atomic::Ordering::SeqCst) {
                self.compact_new_file();
            }
            return;
        }
        let Some(base) = self.base_file() else {
            return;
        };
        let empty = crate::guard::faults(|| Catalog::current(&base))
            .is_ok_and(|c| c.seq == 0 && c.relations.is_empty());
        if !empty {
            return;
        }
        let tiers = self
            .tiers
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (tier, file) in tiers.iter() {
            file.stamper.distrust();
            let _ = std::fs::remove_file(self.dir.join(layout::tier_file(tier)));
        }
        base.stamper.distrust();
        drop(base);
        let _ = std::fs::remove_file(self.dir.join(layout::BASE_FILE));
        if dir_created {
            // Only when nothing else was put there meanwhile.
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// The largest base file that closing the open that created it compacts (see
/// [`Inner::compact_new_file`]).
pub(crate) const COMPACT_NEW_FILE_BYTES: u64 = 256 << 20;

impl Inner {
    /// The base file as it is open now, or `None` while reopening it after a failure failed.
    pub(crate) fn base_file(&self) -> Option<Arc<File>> {
        self.base
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The base file, or the fault that it is closed (reopening it after a storage failure
    /// failed: see `heal`).
    pub(crate) fn base(&self) -> Result<Arc<File>> {
        self.base_file()
            .ok_or_else(|| crate::heal::closed_fault(self))
    }

    /// Gives back the free pages a base file this open created and wrote one batch into was
    /// left with (redb leaves some within a file it grew in one transaction: 12.6 MB of a
    /// 34.6 MB file for the 1M-edge code graph, 2.7 MB of 1.14 GB for the 50M-edge one), when
    /// the file is small enough for redb's compaction to be cheap beside the ingest that
    /// wrote it. Best effort: a failure leaves the file as its last commit left it, to be
    /// verified when next opened.
    fn compact_new_file(&mut self) {
        let path = self.dir.join(layout::BASE_FILE);
        let Ok(len) = std::fs::metadata(&path).map(|m| m.len()) else {
            return;
        };
        if len > COMPACT_NEW_FILE_BYTES || self.options.backends.is_some() {
            return;
        }
        let slot = self
            .base
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(file) = slot.as_mut().and_then(Arc::get_mut) else {
            return;
        };
        let first = crate::guard::faults(|| Catalog::current(file)).is_ok_and(|c| c.seq == 1);
        if !first {
            return;
        }
        let Some(mut file) = slot.take().and_then(Arc::into_inner) else {
            return;
        };
        let Some(db) = file.db.take() else {
            return;
        };
        // redb's compaction walks every page of every table in each of its passes (it repeats
        // them until nothing moves). Through the ingest's small page cache each pass reads the
        // whole file again; reopened with a cache the file's size, only the first does (10M
        // integer pairs' 142.6 MB file: 0.58-0.63 s with 8 MiB, 0.31-0.33 s with its size).
        // The cache takes memory the batch let go of (`relwriter::appended::AddedChunks` says
        // why it can), so the ingest's peak does not grow: 161 MB for the 10M pairs.
        let options = OpenOptions {
            cache_bytes: Some(usize::try_from(len).unwrap_or(usize::MAX)),
            ..self.options.clone()
        };
        let done = crate::guard::faults(|| {
            db.close()?;
            let cache = cache_bytes_for(&path, &options, false);
            let mut db = open_redb(&path, &options, false, false, cache)?;
            // One call: redb's `compact` repeats its passes until nothing moves (another call
            // would read every page once more to find that out).
            db.compact()?;
            db.close()?;
            Ok(())
        });
        if done.is_err() {
            file.stamper.distrust();
        }
        // Dropped last: the stamp records the file as the last close left it.
        drop(file);
    }
}

/// Opens (or creates) one redb file with a page cache of `cache` bytes; `verify` has redb
/// check every page as it opens it.
fn open_redb(
    path: &Path,
    options: &OpenOptions,
    create: bool,
    verify: bool,
    cache: usize,
) -> Result<Database, OpenError> {
    let mut builder = Database::builder();
    builder.set_cache_size(cache);
    builder.set_check_integrity_on_open(verify && !create);
    if !create {
        crate::regular::check(path)?;
    }
    let result = if let Some(backends) = &options.backends {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)
            .and_then(|f| (backends.0)(path, f))
            .map_err(|source| OpenError::Io {
                path: path.to_owned(),
                source,
            })?;
        builder.create_with_backend(crate::backend::Boxed(file))
    } else if create {
        builder.create(path)
    } else {
        builder.open(path)
    };
    result.map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => OpenError::InUse {
            path: path.to_owned(),
        },
        other => Fault::from(other).open(path),
    })
}

/// Opens a database file, or creates it atomically: a new file is initialized (tables and
/// format version) under a temporary name and renamed into place, so a crash while creating
/// it never leaves a half-made file where the database is looked for. A tier file (`tier`
/// holding the database's identity) is checked to be this database's before anything is
/// written into it, and a new one is given the identity before it is renamed into place.
pub(crate) fn open_file(
    path: &Path,
    options: &OpenOptions,
    create: bool,
    tier: Option<&crate::identity::Identity>,
) -> Result<File, OpenError> {
    let base = tier.is_none();
    let claim = |db: &Database, path: &Path| match tier {
        Some(id) => crate::identity::claim_tier(db, path, id).map_err(|f| f.open(path)),
        None => Ok(()),
    };
    if path.exists() || !create {
        let verify = match options.verify {
            Verify::Always => true,
            Verify::Changed => !Stamp::matches(path),
            Verify::Never => false,
        };
        let cache = cache_bytes_for(path, options, false);
        let db = open_redb(path, options, false, verify, cache)?;
        claim(&db, path)?;
        let version = init_file(&db, path, base, options).map_err(|f| f.open(path))?;
        // A file verified now, or found as it was stamped, is trusted until it is closed.
        let trusted = verify || options.verify == Verify::Changed;
        return Ok(File::new(db, version, path, trusted, cache));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!("{name}.creating"));
    // A file not made yet gets the cache of one, for the ingest that fills it: its dirty
    // pages then stay in the cache until the commit, where 8 MiB wrote them out as the batch
    // went, and synced them each time redb grew the file (10M integer pairs: the write
    // phase 0.34 s against 0.42).
    let cache = cache_bytes_for(path, options, true);
    let made = match open_redb(&tmp, options, true, false, cache) {
        Ok(db) => Ok(db),
        // Another process is creating it right now.
        Err(e @ OpenError::InUse { .. }) => return Err(e),
        // A leftover from a crash while creating: start again.
        Err(_) => {
            std::fs::remove_file(&tmp).map_err(|source| OpenError::Io {
                path: tmp.clone(),
                source,
            })?;
            open_redb(&tmp, options, true, false, cache)
        }
    }?;
    init_file(&made, &tmp, base, options).map_err(|f| f.open(&tmp))?;
    claim(&made, &tmp)?;
    drop(made);
    std::fs::rename(&tmp, path).map_err(|source| OpenError::Io {
        path: path.to_owned(),
        source,
    })?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|source| OpenError::Io {
                path: dir.to_owned(),
                source,
            })?;
    }
    // Made by this process just now: trusted.
    let db = open_redb(path, options, false, false, cache)?;
    let version = init_file(&db, path, base, options).map_err(|f| f.open(path))?;
    Ok(File::new(db, version, path, true, cache))
}

impl File {
    fn new(db: Database, version: u32, path: &Path, trusted: bool, cache_bytes: usize) -> File {
        File {
            db: Some(db),
            seal: Seal::of_version(version),
            cache_bytes,
            stamper: Stamper::new(path, trusted),
        }
    }
}

/// Creates the tables every file has, and the base file's own when `base`, and stamps the
/// format version (`options.format_version` for a new file); refuses a file of a newer
/// version. Returns the file's format version: a file of an older version keeps it (and is
/// written in its format).
fn init_file(db: &Database, path: &Path, base: bool, options: &OpenOptions) -> Result<u32> {
    let version_table = if base {
        layout::META
    } else {
        layout::TIER_META
    };
    {
        let txn = db.begin_read()?;
        if let Ok(t) = txn.open_table(version_table) {
            let found = meta_u32(&t, "format_version")?;
            if found < layout::OLDEST_VERSION && t.get("format_version")?.is_some() {
                return Err(Fault::Open(OpenError::UnknownFormat {
                    path: path.to_owned(),
                    found,
                    oldest: layout::OLDEST_VERSION,
                    supported: FORMAT_VERSION,
                }));
            }
            if found > FORMAT_VERSION {
                return Err(Fault::Open(OpenError::NewerFormat {
                    path: path.to_owned(),
                    found,
                    supported: FORMAT_VERSION,
                }));
            }
            if found >= layout::OLDEST_VERSION {
                return Ok(found);
            }
        }
    }
    let version = options
        .format_version
        .clamp(layout::OLDEST_VERSION, FORMAT_VERSION);
    let txn = db.begin_write()?;
    {
        txn.open_table(layout::BLOCKS)?;
        txn.open_table(layout::POSTINGS)?;
        txn.open_table(layout::DEAD)?;
        txn.open_table(layout::OWNERS)?;
        txn.open_table(layout::SHARED)?;
        txn.open_table(layout::TIER_META)?;
        if base {
            txn.open_table(layout::TEXT_BY_ID)?;
            txn.open_table(layout::ID_BY_TEXT)?;
            txn.open_table(layout::TEXT_COLLISIONS)?;
            txn.open_table(layout::NUMBER_BY_ID)?;
            txn.open_table(layout::ID_BY_NUMBER)?;
            txn.open_table(layout::RELATIONS)?;
            txn.open_table(layout::RELATION_IDS)?;
            txn.open_table(layout::BATCHES)?;
            txn.open_table(layout::BATCH_IDS)?;
            txn.open_table(layout::UNIT_IDS)?;
            txn.open_table(layout::UNIT_NAMES)?;
            txn.open_table(layout::UNIT_RELATIONS)?;
            txn.open_table(layout::TIER_SEQ)?;
        }
        let mut t = txn.open_table(version_table)?;
        t.insert("format_version", version.to_le_bytes().as_slice())?;
    }
    txn.commit()?;
    Ok(version)
}

impl Store {
    /// Opens the database in `dir` (creating it when `options.create` is set).
    ///
    /// Fails with [`OpenError::InUse`] when another process holds it, with
    /// [`OpenError::NotADatabase`] when `dir` holds none and may not be created, and with
    /// [`OpenError::NewerFormat`] when a newer Strata wrote it. No tier file is opened.
    pub fn open(dir: impl AsRef<Path>, options: OpenOptions) -> Result<Store, OpenError> {
        let dir = dir.as_ref().to_owned();
        if std::fs::metadata(&dir).is_ok_and(|m| !m.is_dir()) {
            return Err(OpenError::NotADirectory { path: dir });
        }
        let base_path = dir.join(layout::BASE_FILE);
        let created = (options.create && !base_path.exists()).then(|| !dir.exists());
        if !base_path.exists() {
            if !options.create {
                return Err(OpenError::NotADatabase { path: dir });
            }
            std::fs::create_dir_all(&dir).map_err(|source| OpenError::Io {
                path: dir.clone(),
                source,
            })?;
        }
        let base = guarded(
            || open_file(&base_path, &options, options.create, None),
            |source| OpenError::Damaged {
                path: base_path.clone(),
                source,
            },
        )?;
        let identity = guarded(
            || crate::identity::of_base(&base).map_err(|f| f.open(&base_path)),
            |source| OpenError::Damaged {
                path: base_path.clone(),
                source,
            },
        )?;
        let base_seal = base.seal;
        Ok(Store {
            inner: Arc::new(Inner {
                dir,
                identity,
                base: RwLock::new(Some(Arc::new(base))),
                base_seal,
                options,
                tiers: Mutex::new(HashMap::new()),
                commit_lock: RwLock::new(()),
                writer: Mutex::new(()),
                poisoned: std::sync::atomic::AtomicBool::new(false),
                heal: Mutex::new(crate::heal::HealState::default()),
                catalog_cache: Mutex::new(None),
                created,
                batch_failed: std::sync::atomic::AtomicBool::new(false),
                reclaim: Mutex::new(crate::reclaim::ReclaimState::default()),
            }),
        })
    }

    /// The database's directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The catalog as it is now.
    pub fn catalog(&self) -> Result<Catalog, ReadError> {
        self.heal_for_read();
        faults(|| Catalog::current(&**self.inner.base()?)).map_err(|f| self.read_fault(f))
    }

    /// The base file's path (`DIR/strata.redb`).
    pub(crate) fn base_path(&self) -> PathBuf {
        self.inner.dir.join(layout::BASE_FILE)
    }

    /// The file of a tier (the base file for `default`).
    pub(crate) fn tier_path(&self, tier: &str) -> PathBuf {
        if tier == DEFAULT_TIER {
            self.base_path()
        } else {
            self.inner.dir.join(layout::tier_file(tier))
        }
    }

    /// The tiers holding the given relations, sorted and without duplicates: what the
    /// default BaseFor hook opens for a program reading them (pass the result to
    /// [`Store::snapshot_with_tiers`]). A relation the catalog does not hold is skipped.
    pub fn tiers_for(&self, relations: &[String]) -> Result<Vec<String>, ReadError> {
        let catalog = self.catalog()?;
        let tiers: BTreeSet<String> = relations
            .iter()
            .filter_map(|r| catalog.relations.get(r).map(|m| m.tier.clone()))
            .collect();
        Ok(tiers.into_iter().collect())
    }

    /// The tiers whose files this process has opened so far, sorted (`default` is always open
    /// and always listed).
    pub fn opened_tiers(&self) -> Vec<String> {
        let mut v: BTreeSet<String> = self.lock_tiers().keys().cloned().collect();
        v.insert(DEFAULT_TIER.to_owned());
        v.into_iter().collect()
    }

    pub(crate) fn lock_tiers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<File>>> {
        // A panic while holding this lock leaves the map itself intact.
        self.inner
            .tiers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The open file of a non-default tier, opening (and, with `create`, creating) it on the
    /// first call. Opening finishes or undoes a batch a crash interrupted (see
    /// `docs/design.md`, "Tiers and atomicity").
    pub(crate) fn tier_db(&self, tier: &str, create: bool) -> Result<Arc<File>, OpenError> {
        debug_assert_ne!(tier, DEFAULT_TIER);
        if let Some(db) = self.lock_tiers().get(tier) {
            return Ok(db.clone());
        }
        let path = self.inner.dir.join(layout::tier_file(tier));
        if !path.exists() && !create {
            return Err(damaged(format!(
                "the catalog places relations in tier \"{tier}\" but the file is missing"
            ))
            .open(path));
        }
        let open = || {
            guarded(
                || {
                    let id = Some(&self.inner.identity);
                    let db = open_file(&path, &self.inner.options, true, id)?;
                    self.recover_tier(&db, tier).map_err(|f| f.open(&path))?;
                    Ok(db)
                },
                |source| OpenError::Damaged {
                    path: path.clone(),
                    source,
                },
            )
        };
        let start = std::time::Instant::now();
        let db = loop {
            match open() {
                // The file this process closed after a storage failure (see `heal`) is
                // still held by a snapshot begun before: it lets go when that call ends.
                Err(OpenError::InUse { .. })
                    if self.reopened() > 0 && start.elapsed() < crate::heal::RETRY * 4 =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                other => break other?,
            }
        };
        let db = Arc::new(db);
        self.lock_tiers().insert(tier.to_owned(), db.clone());
        Ok(db)
    }

    /// Closes the tier's file if it is open (the fuzz targets replace it between cases).
    pub(crate) fn forget_tier(&self, tier: &str) {
        self.lock_tiers().remove(tier);
    }

    /// Undoes a tier's batch the base file never acknowledged, and drops leftover savepoints.
    pub(crate) fn recover_tier(&self, db: &Database, tier: &str) -> Result<()> {
        let acknowledged = Catalog::current(&**self.inner.base()?)?
            .tier_seq
            .get(tier)
            .copied()
            .unwrap_or(0);
        let (applied, savepoint) = {
            let txn = db.begin_read()?;
            let t = txn.open_table(layout::TIER_META)?;
            let sp = t.get("savepoint")?.and_then(|v| layout::get_u64(v.value()));
            (meta_u64(&t, "applied_seq")?, sp)
        };
        let mut txn = db.begin_write()?;
        let leftovers: Vec<u64> = txn.list_persistent_savepoints()?.collect();
        if applied <= acknowledged && leftovers.is_empty() {
            txn.abort()?;
            return Ok(());
        }
        if applied > acknowledged {
            let id = savepoint.ok_or_else(|| {
                damaged(format!(
                    "tier \"{tier}\" holds batch {applied} the base file never acknowledged, \
                     and no savepoint to undo it"
                ))
            })?;
            let sp = txn.get_persistent_savepoint(id)?;
            txn.restore_savepoint(&sp)?;
        }
        for id in leftovers {
            txn.delete_persistent_savepoint(id)?;
        }
        {
            let mut t = txn.open_table(layout::TIER_META)?;
            t.remove("savepoint")?;
        }
        txn.commit()?;
        Ok(())
    }

    /// Bytes on disk of each tier's file that exists, `default` first.
    pub fn tier_files(&self) -> Result<Vec<(String, PathBuf, u64)>, ReadError> {
        let mut out = Vec::new();
        let base = self.base_path();
        let len = std::fs::metadata(&base)
            .map_err(|source| ReadError::Io {
                path: base.clone(),
                source,
            })?
            .len();
        out.push((DEFAULT_TIER.to_owned(), base, len));
        let mut tiers: BTreeSet<String> = self
            .catalog()?
            .relations
            .values()
            .map(|r| r.tier.clone())
            .collect();
        tiers.remove(DEFAULT_TIER);
        for tier in tiers {
            let path = self.inner.dir.join(layout::tier_file(&tier));
            if let Ok(m) = std::fs::metadata(&path) {
                out.push((tier, path, m.len()));
            }
        }
        Ok(out)
    }
}
