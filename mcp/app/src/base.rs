//! What a request reads: its context and the host's run for it ([`Call`]), the vocabulary
//! it checks against, the base its program reads (a snapshot of the store with exactly
//! the tiers holding the relations it reads open, or the host's source), and the rule
//! that keeps the two together: a program is checked against the vocabulary of a
//! snapshot, and runs on a snapshot of the same batch; when a batch lands in between, it
//! is checked again against the newer one.

use std::sync::{Arc, PoisonError};

use strata_eval::Query;
use strata_eval::{Bind, FactSource, Vocabulary};
use strata_store::Snapshot;
use strata_store::layout::DEFAULT_TIER;

use crate::app::{App, check_examples};
use crate::error::CallError;
use crate::host::{CallContext, HostError, Run, Source, VocabularyFn};
use crate::modules::Refused;
use crate::render::SnapshotInfo;

/// The modules refused building a vocabulary, shared with its cache.
type RefusedModules = Arc<Vec<Refused>>;

/// How many times a program is checked against a newer snapshot's vocabulary when batches
/// keep landing between the check and the snapshot it runs on.
pub const ATTEMPTS: u32 = 3;

/// One request as the host's hooks see it: its context and what the host's `prepare`
/// answered for it.
#[derive(Clone, Debug, Default)]
pub struct Call {
    /// The tool (or command) and the host arguments given.
    pub ctx: CallContext,
    /// What the host's `prepare` answered (empty without host arguments).
    pub run: Run,
    /// When the request arrived: its time limit counts from here, so checking and
    /// rewriting the program spend the same time as evaluating it (`None`: from when the
    /// evaluation begins).
    pub started: Option<std::time::Instant>,
    /// Counters the call's evaluations report their work, rounds and facts to, for an
    /// adapter to read while the call runs (progress notifications).
    pub progress: strata_eval::Progress,
}

impl Call {
    /// A request of `tool` with no host arguments.
    pub fn plain(tool: &str) -> Call {
        Call {
            ctx: CallContext {
                tool: tool.to_owned(),
                host_args: serde_json::Map::new(),
            },
            run: Run::default(),
            started: Some(std::time::Instant::now()),
            progress: strata_eval::Progress::new(),
        }
    }
}

/// The base a program runs on: a snapshot of the store, or a host's source.
pub(crate) enum Base {
    Store(Box<Snapshot>),
    Host(Source),
}

impl Base {
    pub(crate) fn source(&self) -> &dyn FactSource {
        match self {
            Base::Store(s) => s.as_ref(),
            Base::Host(h) => h.as_ref(),
        }
    }

    /// The snapshot the answer read, for a store's base.
    pub(crate) fn snapshot(&self) -> Option<SnapshotInfo> {
        match self {
            Base::Store(s) => Some(SnapshotInfo::of(s)),
            Base::Host(_) => None,
        }
    }
}

/// What reads base relations once checked: a program, or a compiled Cypher query.
pub(crate) trait Reads {
    /// The base relations it reads, sorted, each once.
    fn reads(&self) -> &[String];

    /// The derived relations it reads (modules' members among them), by full name.
    fn derived(&self) -> Vec<&str> {
        Vec::new()
    }
}

impl Reads for Query {
    fn reads(&self) -> &[String] {
        self.base_relations()
    }

    fn derived(&self) -> Vec<&str> {
        self.compiled
            .ir
            .relations
            .iter()
            .filter(|r| r.kind == strata_eval::internals::ir::RelKind::Derived)
            .map(|r| r.name.as_str())
            .collect()
    }
}

impl Reads for strata_eval::cypher::CypherQuery {
    fn reads(&self) -> &[String] {
        self.base_relations()
    }
}

/// A checked program (or Cypher query), the base it runs on and the tiers that base
/// opened.
pub(crate) struct Prepared<Q = Query> {
    pub(crate) query: Q,
    pub(crate) base: Base,
    pub(crate) tiers: Vec<String>,
    /// What the answer says of the refused modules the program uses (see
    /// [`crate::modules`]).
    pub(crate) refused: Vec<String>,
}

impl<Q> Prepared<Q> {
    /// The tiers opened, for a store's base.
    pub(crate) fn store_tiers(&self) -> Option<Vec<String>> {
        matches!(self.base, Base::Store(_)).then(|| self.tiers.clone())
    }
}

impl App {
    /// A request of `tool` whose host arguments are taken out of `arguments` and handed
    /// to the host's `prepare` for its run; without host arguments, a plain request.
    pub fn begin(
        &self,
        tool: &str,
        arguments: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<Call, CallError> {
        let mut call = Call::plain(tool);
        if let Some(h) = &self.host().arguments {
            call.ctx.host_args = h.take(tool, arguments)?;
            call.run = (h.prepare)(&call.ctx).map_err(|source| CallError::Host {
                tool: tool.to_owned(),
                source,
            })?;
        }
        Ok(call)
    }

    /// Whether a request reads anything the host gives (a base or a vocabulary).
    pub fn hosted(&self, call: &Call) -> bool {
        self.host_base(call) || call.run.vocabulary.is_some() || self.host().vocabulary.is_some()
    }

    /// Whether a request's base is the host's rather than the store's.
    pub fn host_base(&self, call: &Call) -> bool {
        let h = self.host();
        call.run.base.is_some()
            || call.run.base_for.is_some()
            || h.base.is_some()
            || h.base_for.is_some()
    }

    /// The host's vocabulary: resolved on the first request, kept once it resolves and
    /// its pack's examples check against it, asked again after a failure.
    fn host_vocabulary(
        &self,
        tool: &'static str,
        resolve: &VocabularyFn,
    ) -> Result<Arc<Vocabulary>, CallError> {
        let mut cached = self
            .host_vocab_cache()
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = cached.as_ref() {
            return Ok(v.clone());
        }
        let v = Arc::new(resolve().map_err(|source| CallError::HostVocabulary { tool, source })?);
        check_examples(&self.pack(), &v).map_err(|e| CallError::HostExamples {
            tool,
            source: Box::new(e),
        })?;
        *cached = Some(v.clone());
        Ok(v)
    }

    /// The vocabulary a request reads: its run's, the host's, or the store's newest.
    pub fn vocabulary(
        &self,
        call: &Call,
        tool: &'static str,
    ) -> Result<Arc<Vocabulary>, CallError> {
        if let Some(v) = &call.run.vocabulary {
            return Ok(v.clone());
        }
        if let Some(f) = &self.host().vocabulary {
            return self.host_vocabulary(tool, f);
        }
        self.base_snapshot(tool).map(|(_, v)| v)
    }

    /// The base a request reads for a program reading `relations`: the run's `base_for`,
    /// then its `base`, then the host's `base_for`, then its `base`, else a snapshot of
    /// the store with the tiers holding them open.
    pub(crate) fn base(
        &self,
        call: &Call,
        tool: &'static str,
        relations: &[String],
    ) -> Result<(Base, Vec<String>), CallError> {
        let hook = |source: HostError| CallError::Host {
            tool: tool.to_owned(),
            source,
        };
        let h = self.host();
        let host = |s: Source| Ok((Base::Host(s), Vec::new()));
        if let Some(f) = &call.run.base_for {
            return host(f(&call.ctx, relations).map_err(hook)?);
        }
        if let Some(s) = &call.run.base {
            return host(s.clone());
        }
        if let Some(f) = &h.base_for {
            return host(f(&call.ctx, relations).map_err(hook)?);
        }
        if let Some(f) = &h.base {
            return host(f(&call.ctx).map_err(hook)?);
        }
        let tiers = self.tiers_for(tool, relations)?;
        let snap = self.snapshot_with(tool, &tiers)?;
        Ok((Base::Store(Box::new(snap)), tiers))
    }

    /// The tiers holding `relations`, the default one always among them, first.
    pub(crate) fn tiers_for(
        &self,
        tool: &'static str,
        relations: &[String],
    ) -> Result<Vec<String>, CallError> {
        let mut tiers = self
            .store()
            .tiers_for(relations)
            .map_err(CallError::store(tool))?;
        if !tiers.iter().any(|t| t == DEFAULT_TIER) {
            tiers.insert(0, DEFAULT_TIER.to_owned());
        }
        Ok(tiers)
    }

    /// A snapshot of the store with `tiers` open (the default tier alone: a plain one).
    pub(crate) fn snapshot_with(
        &self,
        tool: &'static str,
        tiers: &[String],
    ) -> Result<Snapshot, CallError> {
        let store = self.store();
        if tiers.len() == 1 && tiers[0] == DEFAULT_TIER {
            store.snapshot()
        } else {
            let names: Vec<&str> = tiers.iter().map(String::as_str).collect();
            store.snapshot_with_tiers(&names)
        }
        .map_err(CallError::store(tool))
    }

    /// The vocabulary of `snap` and the modules refused building it: cached while no batch
    /// has landed and no module changed since. A module that does not load fails alone
    /// (see [`crate::modules`]).
    fn snapshot_vocabulary(
        &self,
        tool: &'static str,
        snap: &Snapshot,
    ) -> Result<(Arc<Vocabulary>, RefusedModules), CallError> {
        let modules = self.modules_stamp();
        let mut cached = self
            .vocab_cache()
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = cached.as_ref()
            && c.seq == snap.seq()
            && c.modules == modules
        {
            return Ok((c.vocab.clone(), c.refused.clone()));
        }
        if let Some(m) = self.modules_dir() {
            crate::links::check_modules(self.store().dir(), m)
                .map_err(|source| CallError::ModuleLink { tool, source })?;
        }
        let mut last = self
            .last_good()
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let loaded =
            crate::modules::load(snap, self.modules_dir(), &mut last).map_err(|source| {
                CallError::Vocabulary {
                    tool,
                    source: Box::new(source),
                }
            })?;
        let vocab = Arc::new(loaded.vocab);
        let refused = Arc::new(loaded.refused);
        *cached = Some(crate::app::CachedVocab {
            seq: snap.seq(),
            modules,
            vocab: vocab.clone(),
            refused: refused.clone(),
        });
        Ok((vocab, refused))
    }

    /// A snapshot of the default tier with its vocabulary (the host's, when it gives one).
    pub fn base_snapshot(
        &self,
        tool: &'static str,
    ) -> Result<(Snapshot, Arc<Vocabulary>), CallError> {
        let (snap, vocab, _) = self.base_snapshot_refused(tool)?;
        Ok((snap, vocab))
    }

    /// [`App::base_snapshot`], with the modules refused loading its vocabulary.
    fn base_snapshot_refused(
        &self,
        tool: &'static str,
    ) -> Result<(Snapshot, Arc<Vocabulary>, RefusedModules), CallError> {
        let snap = self.store().snapshot().map_err(CallError::store(tool))?;
        let (vocab, refused) = match &self.host().vocabulary {
            Some(f) => (self.host_vocabulary(tool, f)?, Arc::new(Vec::new())),
            None => self.snapshot_vocabulary(tool, &snap)?,
        };
        Ok((snap, vocab, refused))
    }

    /// Parses and checks `program`, then takes the one snapshot it runs on, with exactly
    /// the tiers holding the relations it reads open (BaseFor); see
    /// [`App::prepare_with`].
    pub(crate) fn prepare(
        &self,
        call: &Call,
        tool: &'static str,
        program: &str,
        binds: &[(String, Bind)],
    ) -> Result<Prepared, CallError> {
        let check = |vocab: &Vocabulary| Ok(Query::prepare(vocab, program, binds)?);
        self.prepare_with(call, tool, &check, &mut || {})
    }

    /// Checks what `check` checks against a vocabulary, then takes the one snapshot it
    /// runs on, with exactly the tiers holding the relations it reads open (BaseFor). It
    /// is checked against the vocabulary of the default tier's snapshot; when the snapshot
    /// with its tiers is of a later batch (one landed in between), it is checked again
    /// against that batch's vocabulary, at most [`ATTEMPTS`] times. `between` is called
    /// after each check, before the snapshot is taken (where a test lands a batch).
    pub(crate) fn prepare_with<Q: Reads>(
        &self,
        call: &Call,
        tool: &'static str,
        check: &dyn Fn(&Vocabulary) -> Result<Q, CallError>,
        between: &mut dyn FnMut(),
    ) -> Result<Prepared<Q>, CallError> {
        if self.hosted(call) {
            let vocab = self.vocabulary(call, tool)?;
            let query = check(&vocab)?;
            let (base, tiers) = self.base(call, tool, query.reads())?;
            return Ok(Prepared {
                query,
                base,
                tiers,
                refused: Vec::new(),
            });
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (first, vocab, refused) = self.base_snapshot_refused(tool)?;
            let query = check(&vocab).map_err(|e| crate::modules::beside(e, &refused))?;
            let notes = crate::modules::used(&query.derived(), &refused);
            let tiers = self.tiers_for(tool, query.reads())?;
            between();
            if tiers.len() == 1 {
                return Ok(Prepared {
                    query,
                    base: Base::Store(Box::new(first)),
                    tiers,
                    refused: notes,
                });
            }
            let snap = self.snapshot_with(tool, &tiers)?;
            // A batch landed between the two: check again against the newer snapshot.
            if snap.seq() == first.seq() || attempt >= ATTEMPTS {
                return Ok(Prepared {
                    query,
                    base: Base::Store(Box::new(snap)),
                    tiers,
                    refused: notes,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::cell::Cell;

    use strata_store::dump::{DumpSpec, Format};
    use strata_store::{BatchOptions, OpenOptions, Store};

    use super::*;
    use crate::options::Options;
    use crate::pack::Pack;

    /// Commits `edges` (one `a\tTYPE\tb` a line) into `tier` as one batch.
    fn commit(store: &Store, tier: &str, edges: &str) {
        let mut batch = store
            .batch(BatchOptions {
                tier: tier.to_owned(),
                ..BatchOptions::default()
            })
            .unwrap();
        let spec = DumpSpec {
            label: format!("{tier}.edges.tsv"),
            format: Format::Edges,
            relation: None,
            unit: None,
            checkout: None,
        };
        batch.read_dump(edges.as_bytes(), &spec).unwrap();
        batch.commit().unwrap();
    }

    /// An application over a store with `imports` in the default tier (batch 1) and
    /// `references` in tier `refs` (batch 2).
    fn app(dir: &std::path::Path) -> (App, Store) {
        let store = Store::open(
            dir,
            OpenOptions {
                create: true,
                ..OpenOptions::default()
            },
        )
        .unwrap();
        commit(&store, DEFAULT_TIER, "app\tIMPORTS\tapi\n");
        commit(&store, "refs", "app\tREFERENCES\tlog\n");
        let app = App::new(store.clone(), Pack::default(), Options::default()).unwrap();
        (app, store)
    }

    fn check(vocab: &Vocabulary) -> Result<Query, CallError> {
        Ok(Query::prepare(vocab, "references(?a, ?b) => ?b", &[])?)
    }

    #[test]
    fn a_batch_between_the_check_and_the_snapshot_is_checked_again() {
        let tmp = tempfile::tempdir().unwrap();
        let (app, store) = app(tmp.path());
        let calls = Cell::new(0);
        let p = app
            .prepare_with(&Call::plain("query"), "query", &check, &mut || {
                calls.set(calls.get() + 1);
                if calls.get() == 1 {
                    commit(&store, "refs", "api\tREFERENCES\tutil\n");
                }
            })
            .unwrap();
        // Checked twice: against batch 2's vocabulary, then against batch 3's.
        assert_eq!(calls.get(), 2);
        assert_eq!(p.tiers, ["default", "refs"]);
        let Base::Store(snap) = &p.base else {
            panic!("a store's base");
        };
        assert_eq!(snap.seq(), 3);
        let cached = app.vocab_cache().lock().unwrap().as_ref().map(|c| c.seq);
        assert_eq!(cached, Some(3), "the program was checked against batch 3");
        // It runs on batch 3: the reference the batch added is there.
        let out = p
            .query
            .run(p.base.source(), &strata_eval::RunOptions::default())
            .unwrap();
        assert_eq!(out.answer.total, 2);
    }

    #[test]
    fn without_a_batch_in_between_one_check_is_enough() {
        let tmp = tempfile::tempdir().unwrap();
        let (app, _store) = app(tmp.path());
        let calls = Cell::new(0);
        let p = app
            .prepare_with(&Call::plain("query"), "query", &check, &mut || {
                calls.set(calls.get() + 1);
            })
            .unwrap();
        assert_eq!(calls.get(), 1);
        assert_eq!(p.base.snapshot().unwrap().seq, 2);
    }

    #[test]
    fn batches_landing_every_time_stop_the_checks_after_the_attempts() {
        let tmp = tempfile::tempdir().unwrap();
        let (app, store) = app(tmp.path());
        let calls = Cell::new(0);
        let p = app
            .prepare_with(&Call::plain("query"), "query", &check, &mut || {
                calls.set(calls.get() + 1);
                let edge = format!("n{}\tREFERENCES\tlog\n", calls.get());
                commit(&store, "refs", &edge);
            })
            .unwrap();
        assert_eq!(calls.get(), ATTEMPTS);
        // The last snapshot, taken after the last batch: 2 + ATTEMPTS batches.
        assert_eq!(p.base.snapshot().unwrap().seq, 2 + u64::from(ATTEMPTS));
    }
}
