//! A call as the server runs it: its context and the host's run for it ([`Call`]), the
//! base its program reads (a snapshot of the store or the host's source), the vocabulary
//! it checks against, and the prepared program with the one snapshot it runs on.

use std::sync::Arc;

use rmcp::model::JsonObject;
use strata_eval::query::Query;
use strata_eval::{Bind, FactSource, Vocabulary};
use strata_store::Snapshot;
use strata_store::layout::DEFAULT_TIER;

use super::{Server, check_examples, snapshot_json};
use crate::host::{CallContext, Run, Source, VocabularyFn};

/// One call as the host hooks see it: its context and what `prepare` answered.
#[derive(Default)]
pub(crate) struct Call {
    pub(super) ctx: CallContext,
    pub(super) run: Run,
}

impl Call {
    /// A call of `tool` with no host arguments.
    pub(crate) fn plain(tool: &str) -> Call {
        Call {
            ctx: CallContext {
                tool: tool.to_owned(),
                host_args: JsonObject::new(),
            },
            run: Run::default(),
        }
    }
}

/// The base a program runs on: a snapshot of the store, or a host's source.
pub(super) enum Base {
    Store(Box<Snapshot>),
    Host(Source),
}

impl Base {
    pub(super) fn source(&self) -> &dyn FactSource {
        match self {
            Base::Store(s) => s.as_ref(),
            Base::Host(h) => h.as_ref(),
        }
    }

    /// The snapshot the answer read, for a store's base.
    pub(super) fn snapshot_json(&self) -> Option<serde_json::Value> {
        match self {
            Base::Store(s) => Some(snapshot_json(s)),
            Base::Host(_) => None,
        }
    }
}

/// A prepared program and the snapshot it runs on.
pub(super) struct Prepared {
    pub(super) query: Query,
    pub(super) base: Base,
    pub(super) tiers: Vec<String>,
}

impl Server {
    /// Takes the host arguments out of a call's and asks the host's `prepare` for its run.
    pub(super) fn begin(&self, tool: &str, arguments: &mut JsonObject) -> Result<Call, String> {
        let mut call = Call::plain(tool);
        if let Some(h) = &self.inner.host.arguments {
            call.ctx.host_args = h.take(tool, arguments)?;
            call.run = (h.prepare)(&call.ctx).map_err(|e| format!("{tool}: {e}"))?;
        }
        Ok(call)
    }

    /// Whether a call reads anything the host gives (a base or a vocabulary).
    pub(super) fn hosted(&self, call: &Call) -> bool {
        let h = &self.inner.host;
        call.run.base.is_some()
            || call.run.base_for.is_some()
            || call.run.vocabulary.is_some()
            || h.base.is_some()
            || h.base_for.is_some()
            || h.vocabulary.is_some()
    }

    /// Whether a call's base is the host's rather than the store's.
    pub(super) fn host_base(&self, call: &Call) -> bool {
        let h = &self.inner.host;
        call.run.base.is_some()
            || call.run.base_for.is_some()
            || h.base.is_some()
            || h.base_for.is_some()
    }

    /// The host's vocabulary: resolved on the first call, kept once it resolves and its
    /// pack's examples check against it, asked again after a failure.
    fn host_vocabulary(&self, resolve: &VocabularyFn) -> Result<Arc<Vocabulary>, String> {
        let mut cached = self
            .inner
            .host_vocab
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(v) = cached.as_ref() {
            return Ok(v.clone());
        }
        let v = Arc::new(resolve().map_err(|e| format!("the vocabulary: {e}"))?);
        check_examples(&self.inner.pack, &v).map_err(|e| e.to_string())?;
        *cached = Some(v.clone());
        Ok(v)
    }

    /// The vocabulary a call reads: its run's, the host's, or the store's.
    pub(crate) fn call_vocabulary(
        &self,
        call: &Call,
        tool: &str,
    ) -> Result<Arc<Vocabulary>, String> {
        if let Some(v) = &call.run.vocabulary {
            return Ok(v.clone());
        }
        if let Some(f) = &self.inner.host.vocabulary {
            return self.host_vocabulary(f).map_err(|e| format!("{tool}: {e}"));
        }
        self.base_snapshot(tool).map(|(_, v)| v)
    }

    /// The base a call reads for a program reading `relations`: the run's `base_for`, then
    /// its `base`, then the host's `base_for`, then its `base`, else a snapshot of the
    /// store with the tiers holding them open.
    pub(super) fn call_base(
        &self,
        call: &Call,
        tool: &str,
        relations: &[String],
    ) -> Result<(Base, Vec<String>), String> {
        let err = |e: String| format!("{tool}: {e}");
        let h = &self.inner.host;
        let host = |s: Source| Ok((Base::Host(s), Vec::new()));
        if let Some(f) = &call.run.base_for {
            return host(f(&call.ctx, relations).map_err(err)?);
        }
        if let Some(s) = &call.run.base {
            return host(s.clone());
        }
        if let Some(f) = &h.base_for {
            return host(f(&call.ctx, relations).map_err(err)?);
        }
        if let Some(f) = &h.base {
            return host(f(&call.ctx).map_err(err)?);
        }
        let store = &self.inner.store;
        let mut tiers = store
            .tiers_for(relations)
            .map_err(|e| format!("{tool}: {e}"))?;
        if !tiers.iter().any(|t| t == DEFAULT_TIER) {
            tiers.insert(0, DEFAULT_TIER.to_owned());
        }
        let snap = if tiers.len() == 1 {
            store.snapshot()
        } else {
            let names: Vec<&str> = tiers.iter().map(String::as_str).collect();
            store.snapshot_with_tiers(&names)
        }
        .map_err(|e| format!("{tool}: {e}"))?;
        Ok((Base::Store(Box::new(snap)), tiers))
    }

    /// The vocabulary of `snap`: cached while no batch has landed since.
    fn vocabulary(&self, snap: &Snapshot) -> Result<Arc<Vocabulary>, String> {
        let mut cached = self
            .inner
            .vocab
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((seq, v)) = cached.as_ref()
            && *seq == snap.seq()
        {
            return Ok(v.clone());
        }
        let v = Arc::new(
            Vocabulary::load(snap, self.inner.modules_dir.as_deref()).map_err(|e| e.to_string())?,
        );
        *cached = Some((snap.seq(), v.clone()));
        Ok(v)
    }

    /// A snapshot of the base tier with its vocabulary.
    pub(crate) fn base_snapshot(&self, tool: &str) -> Result<(Snapshot, Arc<Vocabulary>), String> {
        let snap = self
            .inner
            .store
            .snapshot()
            .map_err(|e| format!("{tool}: {e}"))?;
        let vocab = match &self.inner.host.vocabulary {
            Some(f) => self.host_vocabulary(f),
            None => self.vocabulary(&snap),
        }
        .map_err(|e| format!("{tool}: {e}"))?;
        Ok((snap, vocab))
    }

    /// Parses and checks `program`, then takes the one snapshot it runs on, with exactly the
    /// tiers holding the relations it reads open (BaseFor).
    pub(super) fn prepare(
        &self,
        call: &Call,
        tool: &str,
        program: &str,
        binds: &[(String, Bind)],
    ) -> Result<Prepared, String> {
        if self.hosted(call) {
            let vocab = self.call_vocabulary(call, tool)?;
            let query = Query::prepare(&vocab, program, binds).map_err(|e| e.to_string())?;
            let (base, tiers) = self.call_base(call, tool, query.base_relations())?;
            return Ok(Prepared { query, base, tiers });
        }
        let store = &self.inner.store;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (base, vocab) = self.base_snapshot(tool)?;
            let query = Query::prepare(&vocab, program, binds).map_err(|e| e.to_string())?;
            let mut tiers = store
                .tiers_for(query.base_relations())
                .map_err(|e| format!("{tool}: {e}"))?;
            if !tiers.iter().any(|t| t == DEFAULT_TIER) {
                tiers.insert(0, DEFAULT_TIER.to_owned());
            }
            if tiers.len() == 1 {
                return Ok(Prepared {
                    query,
                    base: Base::Store(Box::new(base)),
                    tiers,
                });
            }
            let names: Vec<&str> = tiers.iter().map(String::as_str).collect();
            let snap = store
                .snapshot_with_tiers(&names)
                .map_err(|e| format!("{tool}: {e}"))?;
            // A batch landed between the two: check again against the newer snapshot.
            if snap.seq() == base.seq() || attempt >= 3 {
                return Ok(Prepared {
                    query,
                    base: Base::Store(Box::new(snap)),
                    tiers,
                });
            }
        }
    }
}
