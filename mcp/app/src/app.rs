//! The application: one database directory (the store, its pack and modules), its limits
//! and the host's hooks, with the caches every request shares (the vocabulary by batch,
//! the host's vocabulary, the `find` index). Cheap to clone: clones share all of it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
}

struct Inner {
    store: Store,
    pack: Pack,
    options: Options,
    /// The database's `modules/` folder, whether or not it exists (yet).
    modules_dir: PathBuf,
    host: HostOptions,
    /// The Cypher graph's summary, when the vocabulary was known at opening.
    graph_summary: Option<String>,
    /// The host's vocabulary, once resolved.
    host_vocab: Mutex<Option<Arc<Vocabulary>>>,
    /// The vocabulary of the last snapshot seen, by its batch sequence number and the state
    /// of the modules folder.
    vocab: Mutex<Option<CachedVocab>>,
    /// The dictionary in memory for `find`, read on the first request and extended with
    /// the texts later batches add.
    finder: Mutex<Option<Arc<find::Index>>>,
    /// The gate of heavy calls, when [`Options::heavy_calls`] sets one.
    admission: Option<Admission>,
}

impl App {
    /// Opens the database in `dir` and its pack (`strata.toml`).
    pub fn open(dir: &Path, options: Options) -> Result<App, OpenError> {
        let store = Store::open(dir, OpenOptions::default()).map_err(StoreError::from)?;
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
        if options.limit == 0 {
            return Err(OptionsError::ZeroLimit.into());
        }
        if options.max_bytes < strata_eval::ANSWER_BYTES_MIN {
            return Err(OptionsError::MaxBytes {
                asked: options.max_bytes,
                min: strata_eval::ANSWER_BYTES_MIN,
            }
            .into());
        }
        if options.timeout.is_zero() {
            return Err(OptionsError::ZeroTimeout.into());
        }
        if options.heavy_calls == Some(0) {
            return Err(OptionsError::ZeroHeavyCalls.into());
        }
        if options.max_memory == Some(0) {
            return Err(OptionsError::ZeroMemory.into());
        }
        let admission = options
            .heavy_calls
            .map(|n| Admission::new(n, options.admission_wait));
        let modules_dir = store.dir().join("modules");
        let vocab = if host.vocabulary.is_none() {
            let snap = store.snapshot().map_err(StoreError::from)?;
            let modules = modules_stamp(&modules_dir);
            let present = modules_dir.is_dir().then_some(modules_dir.as_path());
            if let Some(m) = present {
                crate::links::check_modules(store.dir(), m)?;
            }
            let vocab = Arc::new(Vocabulary::load(&snap, present)?);
            check_examples(&pack, &vocab)?;
            Some(CachedVocab {
                seq: snap.seq(),
                modules,
                vocab,
            })
        } else {
            None
        };
        // The Cypher graph, when the vocabulary is known now: a pack mapping that doesn't
        // fit it is refused here, as examples that don't check are.
        let graph_summary = match &vocab {
            Some(c) => Some(
                Graph::derive(&c.vocab, &pack.cypher.mapping())
                    .map_err(OptionsError::Mapping)?
                    .summary(),
            ),
            None => None,
        };
        Ok(App {
            inner: Arc::new(Inner {
                store,
                pack,
                options,
                modules_dir,
                host,
                graph_summary,
                host_vocab: Mutex::new(None),
                vocab: Mutex::new(vocab),
                finder: Mutex::new(None),
                admission,
            }),
        })
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

    /// The pack the application was opened with.
    pub fn pack(&self) -> &Pack {
        &self.inner.pack
    }

    /// The application's limits.
    pub fn options(&self) -> &Options {
        &self.inner.options
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

    /// The summary of the Cypher graph (its labels and types), when the vocabulary was
    /// known at opening (no host vocabulary).
    pub fn graph_summary(&self) -> Option<&str> {
        self.inner.graph_summary.as_deref()
    }

    /// The pack's hint, when it has one: said after an empty answer.
    pub fn hint(&self) -> Option<&str> {
        let hint = self.inner.pack.hint.trim();
        (!hint.is_empty()).then_some(hint)
    }

    /// The instructions an agent reads on connecting, written from the pack and the graph.
    pub fn instructions(&self) -> String {
        crate::instructions::with_cypher(
            &crate::instructions::instructions(&self.inner.pack),
            self.graph_summary(),
        )
    }

    /// The line for an agent's own instructions, written from the pack.
    pub fn agent_line(&self) -> String {
        crate::instructions::cypher_agent_line(&crate::instructions::agent_line(&self.inner.pack))
    }

    /// The Cypher graph over `vocab`, with the pack's labels and types.
    pub fn graph(&self, vocab: &Vocabulary) -> Result<Graph, crate::error::CallError> {
        Graph::derive(vocab, &self.inner.pack.cypher.mapping())
            .map_err(crate::error::CallError::Graph)
    }

    pub(crate) fn host_vocab_cache(&self) -> &Mutex<Option<Arc<Vocabulary>>> {
        &self.inner.host_vocab
    }

    pub(crate) fn vocab_cache(&self) -> &Mutex<Option<CachedVocab>> {
        &self.inner.vocab
    }

    pub(crate) fn finder_cache(&self) -> &Mutex<Option<Arc<find::Index>>> {
        &self.inner.finder
    }
}

/// A vocabulary, and the batch and the modules folder's state it was loaded from.
pub(crate) struct CachedVocab {
    /// The batch sequence number of the snapshot.
    pub(crate) seq: u64,
    /// The modules folder's [`modules_stamp`].
    pub(crate) modules: u64,
    /// The vocabulary.
    pub(crate) vocab: Arc<Vocabulary>,
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
