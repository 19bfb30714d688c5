//! The application: one database directory (the store, its pack and modules), its limits
//! and the host's hooks, with the caches every request shares (the vocabulary by batch,
//! the host's vocabulary, the `find` index). Cheap to clone: clones share all of it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use strata_eval::Query;
use strata_eval::Vocabulary;
use strata_eval::cypher::Graph;
use strata_store::{OpenOptions, Store, StoreError};

use crate::admission::{Admission, Permit};
use crate::base::Call;
use crate::error::{CallError, OpenError, OptionsError};
use crate::find;
use crate::host::HostOptions;
use crate::options::Options;
use crate::pack::Pack;

/// An application over one database. Cheap to clone: clones share the store, the pack and
/// the caches.
#[derive(Clone)]
pub struct App {
    inner: Arc<Inner>,
    /// The limits: the application's own, or a view's ([`App::with_options`]).
    options: Arc<Options>,
}

struct Inner {
    store: Store,
    /// The pack, and the state of `strata.toml` it was read from: read again when the file
    /// changes (see [`App::pack`]).
    pack: RwLock<PackState>,
    /// The database's `modules/` folder, whether or not it exists (yet).
    modules_dir: PathBuf,
    host: HostOptions,
    /// The host's vocabulary, once resolved.
    host_vocab: Mutex<Option<Arc<Vocabulary>>>,
    /// The vocabulary of the last snapshot seen, by its batch sequence number and the state
    /// of the modules folder.
    vocab: Mutex<Option<CachedVocab>>,
    /// Each module's last version that loaded, served in place of one that does not.
    last_good: Mutex<crate::modules::LastGood>,
    /// The dictionary index for `find`, opened on the first request and extended with
    /// the texts later batches add.
    finder: Mutex<Option<Arc<find::Finder>>>,
    /// Whether `find`'s index is never built inside a call (set by `App::warm_find`, which
    /// a server calls as it starts).
    find_deferred: std::sync::atomic::AtomicBool,
    /// The indexes built after calls that wanted them (`demand`).
    pub(crate) demand: crate::demand::Demand,
    /// The gate of heavy calls, when [`Options::heavy_calls`] sets one.
    admission: Option<Admission>,
}

impl App {
    /// Opens the database in `dir` (with [`Options::cache_bytes`] of page cache) and its
    /// pack (`strata.toml`).
    pub fn open(dir: &Path, options: Options) -> Result<App, OpenError> {
        let open = OpenOptions {
            cache_bytes: options.cache_bytes,
            // A server's batches (over the ingest socket) are answered once committed; the
            // space they leave unused is given back, and the page cache resized, on the
            // store's own thread at a quiet moment.
            reclaim: Some(strata_store::Reclaim {
                background: true,
                ..strata_store::Reclaim::default()
            }),
            ..OpenOptions::default()
        };
        let store = Store::open(dir, open).map_err(StoreError::from)?;
        let pack = Pack::load(dir)?;
        App::new(store, pack, options)
    }

    /// An application over `store` with `pack` and `options`. Loads the modules under the
    /// database's `modules/` folder, and refuses a pack whose examples do not check.
    pub fn new(store: Store, pack: Pack, options: Options) -> Result<App, OpenError> {
        App::with_host(store, pack, options, HostOptions::default())
    }

    /// An application over `store` with `pack`, `options` and the host's hooks. Without a
    /// host vocabulary, loads the modules under the database's `modules/` folder and
    /// refuses a pack whose examples do not check; with one, both wait for the first
    /// request that needs the vocabulary.
    pub fn with_host(
        store: Store,
        pack: Pack,
        options: Options,
        host: HostOptions,
    ) -> Result<App, OpenError> {
        check_options(&options)?;
        let admission = options
            .heavy_calls
            .map(|n| Admission::new(n, options.admission_wait));
        let modules_dir = store.dir().join("modules");
        let mut last_good = crate::modules::LastGood::default();
        let vocab = if host.vocabulary.is_none() {
            let snap = store.snapshot().map_err(StoreError::from)?;
            let modules = modules_stamp(&modules_dir);
            let present = modules_dir.is_dir().then_some(modules_dir.as_path());
            if let Some(m) = present {
                crate::links::check_modules(store.dir(), m)?;
            }
            let loaded = crate::modules::load(&snap, present, &mut last_good)?;
            let vocab = Arc::new(loaded.vocab);
            check_examples(&pack, &vocab)?;
            Some(CachedVocab {
                seq: snap.seq(),
                modules,
                vocab,
                refused: Arc::new(loaded.refused),
            })
        } else {
            None
        };
        // The Cypher graph, when the vocabulary is known now: a pack mapping that doesn't
        // fit it is refused here, as examples that don't check are.
        if let Some(c) = &vocab {
            Graph::derive(&c.vocab, &pack.cypher.mapping()).map_err(OptionsError::Mapping)?;
        }
        let pack = PackState {
            stamp: pack_stamp(store.dir()),
            pack: Arc::new(pack),
            refused: None,
        };
        Ok(App {
            inner: Arc::new(Inner {
                store,
                pack: RwLock::new(pack),
                modules_dir,
                host,
                host_vocab: Mutex::new(None),
                vocab: Mutex::new(vocab),
                last_good: Mutex::new(last_good),
                finder: Mutex::new(None),
                find_deferred: std::sync::atomic::AtomicBool::new(false),
                demand: crate::demand::Demand::default(),
                admission,
            }),
            options: Arc::new(options),
        })
    }

    /// A view of this application with other limits: the same store, pack, modules,
    /// caches and gate of heavy calls (the gate stays this application's, whatever
    /// `options.heavy_calls` says), answering as an application opened with `options`
    /// would. A server answers `strata query` and the other readers of the command line
    /// so, with the limits their flags give.
    pub fn with_options(&self, options: Options) -> Result<App, OptionsError> {
        check_options(&options)?;
        Ok(App {
            inner: Arc::clone(&self.inner),
            options: Arc::new(options),
        })
    }

    /// The pack: the one the application was opened with, or, once the database's
    /// `strata.toml` changed since (a user edited it, or the first SCIP ingest wrote the
    /// `code` pack), that file read again. A changed file is read at the next request; one
    /// that does not parse or whose examples do not check is refused (said once on standard
    /// error, and by [`App::pack_refused`]) and the previous pack kept.
    pub fn pack(&self) -> Arc<Pack> {
        let stamp = pack_stamp(self.inner.store.dir());
        {
            let state = self.read_pack();
            if state.stamp == stamp {
                return state.pack.clone();
            }
        }
        let mut state = self
            .inner
            .pack
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if state.stamp != stamp {
            state.stamp = stamp;
            match self.load_pack() {
                Ok(pack) => {
                    state.pack = Arc::new(pack);
                    state.refused = None;
                }
                Err(e) => {
                    eprintln!(
                        "strata: {}: not loaded, the previous pack still serves: {e}",
                        self.inner.store.dir().join("strata.toml").display()
                    );
                    state.refused = Some(e.to_string());
                }
            }
        }
        state.pack.clone()
    }

    /// Why the database's `strata.toml`, changed since it was last read, was refused (the
    /// previous pack serving meanwhile), if it was.
    pub fn pack_refused(&self) -> Option<String> {
        self.pack();
        self.read_pack().refused.clone()
    }

    fn read_pack(&self) -> std::sync::RwLockReadGuard<'_, PackState> {
        self.inner
            .pack
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reads `strata.toml` again and checks it as opening does: its examples and its Cypher
    /// mapping against the vocabulary as it is now (unless a host gives the vocabulary).
    fn load_pack(&self) -> Result<Pack, OpenError> {
        let pack = Pack::load(self.inner.store.dir())?;
        if self.inner.host.vocabulary.is_none() {
            let (_, vocab) = self
                .base_snapshot("schema")
                .map_err(|e| OpenError::PackCheck(Box::new(e)))?;
            check_examples(&pack, &vocab)?;
            Graph::derive(&vocab, &pack.cypher.mapping()).map_err(OptionsError::Mapping)?;
        }
        Ok(pack)
    }

    /// Runs a `query` or `cypher` call through the light lane (see
    /// [`crate::admission`]): first without a slot under the light limits (`run(true)`),
    /// then, when it reached them, with a slot under its own (`run(false)`). Without a gate,
    /// just `run(false)`.
    pub(crate) fn lightly<T>(
        &self,
        call: &Call,
        tool: &'static str,
        cancel: &strata_eval::Cancel,
        run: &dyn Fn(bool) -> Result<T, CallError>,
    ) -> Result<T, CallError> {
        if self.admission().is_none() {
            return run(false);
        }
        match run(true) {
            Err(e) if crate::admission::light_limit(&e) => {
                let _slot = self.admit(call, tool, cancel)?;
                run(false)
            }
            other => other,
        }
    }

    /// The gate of heavy calls, when the options set one.
    pub fn admission(&self) -> Option<&Admission> {
        self.inner.admission.as_ref()
    }

    /// Admits heavy call `tool` through the gate (when there is one): a slot, held until
    /// the permit is dropped, or [`CallError::Busy`] once the call has waited as long as
    /// it may (the gate's wait, never past the call's deadline).
    pub(crate) fn admit(
        &self,
        call: &Call,
        tool: &'static str,
        cancel: &strata_eval::Cancel,
    ) -> Result<Option<Permit<'_>>, CallError> {
        let Some(gate) = self.admission() else {
            return Ok(None);
        };
        let deadline = call.started.map(|s| s + self.call_timeout(call));
        gate.admit(deadline, cancel)
            .map(Some)
            .map_err(|r| CallError::Busy {
                tool,
                limit: r.limit,
                waited: r.waited,
            })
    }

    /// The application's limits.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// `response` (schema, look, values, find or explain: a response that is not a page of
    /// rows) bounded by the answer budget ([`Options::max_bytes`]), as a tool answers it:
    /// see [`Fitted`](crate::Fitted).
    pub fn fit<R>(&self, response: R) -> crate::Fitted<R> {
        crate::Fitted {
            response,
            max_bytes: self.options.max_bytes,
        }
    }

    /// The host's hooks.
    pub fn host(&self) -> &HostOptions {
        &self.inner.host
    }

    /// The store the application reads.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The database's `modules/` folder, when it has one now: a folder created while the
    /// application runs (by `strata ingest` writing the bundled `code` module) counts from
    /// the next request on.
    pub fn modules_dir(&self) -> Option<&Path> {
        let dir = self.inner.modules_dir.as_path();
        dir.is_dir().then_some(dir)
    }

    /// A fingerprint of the modules folder's files (their paths, sizes and times), which
    /// changes when a module is added, removed or edited.
    pub(crate) fn modules_stamp(&self) -> u64 {
        modules_stamp(&self.inner.modules_dir)
    }

    /// The summary of the Cypher graph (its labels and types) over the database as it is
    /// now, with the pack's mapping; `None` when a host gives the vocabulary, or when the
    /// database cannot be read.
    pub fn graph_summary(&self) -> Option<String> {
        if self.inner.host.vocabulary.is_some() {
            return None;
        }
        let (_, vocab) = self.base_snapshot("schema").ok()?;
        self.graph(&vocab).ok().map(|g| g.summary())
    }

    /// The pack's hint, when it has one: said after an empty answer.
    pub fn hint(&self) -> Option<String> {
        let hint = self.pack().hint.trim().to_owned();
        (!hint.is_empty()).then_some(hint)
    }

    /// The instructions an agent reads on connecting, written from the pack and the graph.
    pub fn instructions(&self) -> String {
        crate::instructions::with_cypher(
            &crate::instructions::instructions(&self.pack()),
            self.graph_summary().as_deref(),
        )
    }

    /// The line for an agent's own instructions, written from the pack.
    pub fn agent_line(&self) -> String {
        crate::instructions::cypher_agent_line(&crate::instructions::agent_line(&self.pack()))
    }

    /// The Cypher graph over `vocab`, with the pack's labels and types.
    pub fn graph(&self, vocab: &Vocabulary) -> Result<Graph, crate::error::CallError> {
        Graph::derive(vocab, &self.pack().cypher.mapping()).map_err(crate::error::CallError::Graph)
    }

    pub(crate) fn host_vocab_cache(&self) -> &Mutex<Option<Arc<Vocabulary>>> {
        &self.inner.host_vocab
    }

    pub(crate) fn vocab_cache(&self) -> &Mutex<Option<CachedVocab>> {
        &self.inner.vocab
    }

    pub(crate) fn last_good(&self) -> &Mutex<crate::modules::LastGood> {
        &self.inner.last_good
    }

    pub(crate) fn finder_cache(&self) -> &Mutex<Option<Arc<find::Finder>>> {
        &self.inner.finder
    }

    pub(crate) fn demand(&self) -> &crate::demand::Demand {
        &self.inner.demand
    }

    pub(crate) fn find_deferred(&self) -> &std::sync::atomic::AtomicBool {
        &self.inner.find_deferred
    }
}

/// Refuses limits that make no sense: a row limit, a timeout, heavy calls or a memory cap
/// of 0, and an answer budget under [`strata_eval::ANSWER_BYTES_MIN`].
fn check_options(options: &Options) -> Result<(), OptionsError> {
    if options.limit == 0 {
        return Err(OptionsError::ZeroLimit);
    }
    if options.max_bytes < strata_eval::ANSWER_BYTES_MIN {
        return Err(OptionsError::MaxBytes {
            asked: options.max_bytes,
            min: strata_eval::ANSWER_BYTES_MIN,
        });
    }
    if options.timeout.is_zero() {
        return Err(OptionsError::ZeroTimeout);
    }
    if options.heavy_calls == Some(0) {
        return Err(OptionsError::ZeroHeavyCalls);
    }
    if options.max_memory == Some(0) {
        return Err(OptionsError::ZeroMemory);
    }
    Ok(())
}

/// The pack being served, the state of `strata.toml` it was read from, and why a later
/// state of the file was refused, if it was.
struct PackState {
    stamp: u64,
    pack: Arc<Pack>,
    refused: Option<String>,
}

/// A fingerprint of the database's `strata.toml` (its length, modification time and
/// inode); the same while the file is absent.
fn pack_stamp(dir: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    let mut h = std::hash::DefaultHasher::new();
    if let Ok(m) = std::fs::metadata(dir.join("strata.toml")) {
        (m.len(), m.mtime(), m.mtime_nsec(), m.ino(), m.ctime_nsec()).hash(&mut h);
    }
    h.finish()
}

/// A vocabulary, and the batch and the modules folder's state it was loaded from.
pub(crate) struct CachedVocab {
    /// The batch sequence number of the snapshot.
    pub(crate) seq: u64,
    /// The modules folder's [`modules_stamp`].
    pub(crate) modules: u64,
    /// The vocabulary.
    pub(crate) vocab: Arc<Vocabulary>,
    /// The modules refused loading it (each left out or served from its last good
    /// version).
    pub(crate) refused: Arc<Vec<crate::modules::Refused>>,
}

/// A fingerprint of the files under `dir` (their paths, sizes and modification times); the
/// same for a folder that does not exist as for an empty one.
fn modules_stamp(dir: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    fn walk(dir: &Path, h: &mut std::hash::DefaultHasher, depth: usize) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for e in entries {
            let path = e.path();
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            e.file_name().hash(h);
            if meta.is_dir() {
                // Deeper than modules may nest is refused by the loader anyway.
                if depth < 16 {
                    walk(&path, h, depth + 1);
                }
            } else {
                meta.len().hash(h);
                meta.modified().ok().hash(h);
            }
        }
    }
    let mut h = std::hash::DefaultHasher::new();
    walk(dir, &mut h, 0);
    h.finish()
}

/// Checks every example of `pack` against `vocab`, and compiles every Cypher example over
/// the graph the pack maps on it.
pub(crate) fn check_examples(pack: &Pack, vocab: &Vocabulary) -> Result<(), OpenError> {
    for e in &pack.examples {
        if let Err(err) = Query::prepare(vocab, &e.program, &[]) {
            return Err(OpenError::Example {
                question: e.question.clone(),
                message: err.to_string(),
            });
        }
    }
    if pack.cypher_examples.is_empty() {
        return Ok(());
    }
    let graph = Graph::derive(vocab, &pack.cypher.mapping()).map_err(OptionsError::Mapping)?;
    for e in &pack.cypher_examples {
        let refused = |message: String| OpenError::CypherExample {
            question: e.question.clone(),
            message,
        };
        if graph.is_empty() {
            return Err(refused(
                "the database has no Cypher graph (no node labels and no relationship types); \
                 map one with [[cypher.labels]] and [[cypher.types]], or ingest nodes and edges \
                 dumps"
                    .to_owned(),
            ));
        }
        strata_eval::cypher::prepare(vocab, &graph, &e.query, &[])
            .map_err(|err| refused(err.to_string()))?;
    }
    Ok(())
}
