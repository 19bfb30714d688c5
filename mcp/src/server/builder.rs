//! [`ServerBuilder`]: a server's limits and the host's hooks, set one at a time.

use std::sync::Arc;
use std::time::Duration;

use strata_eval::Vocabulary;

use strata_app::Store;
use strata_app::host::{
    BaseFn, BaseForFn, CallContext, HostArguments, HostError, HostOptions, Source, VocabularyFn,
};
use strata_app::pack::Pack;

use super::{Options, Server, ServerError};

/// Builds a [`Server`] with the host's hooks: `Server::builder(store, pack)`, then the
/// limits and hooks, then [`ServerBuilder::build`].
pub struct ServerBuilder {
    pub(super) store: Store,
    pub(super) pack: Pack,
    pub(super) options: Options,
    pub(super) host: HostOptions,
}

impl ServerBuilder {
    /// Every limit at once.
    pub fn options(mut self, options: Options) -> ServerBuilder {
        self.options = options;
        self
    }

    /// The most rows a call answers (default 100).
    pub fn limit(mut self, limit: u64) -> ServerBuilder {
        self.options.limit = limit;
        self
    }

    /// The most work a call may spend (default: no cap).
    pub fn max_work(mut self, max_work: u64) -> ServerBuilder {
        self.options.max_work = Some(max_work);
        self
    }

    /// The most bytes one call's evaluation may hold (default: no cap; `strata serve` sets
    /// one from the machine's memory, see [`strata_app::default_max_memory`]).
    pub fn max_memory(mut self, max_memory: u64) -> ServerBuilder {
        self.options.max_memory = Some(max_memory);
        self
    }

    /// The most heavy calls (query, cypher, explain, ask) evaluated at once; the rest wait
    /// and are then refused (default: no gate; `strata serve` sets one).
    pub fn heavy_calls(mut self, heavy_calls: usize) -> ServerBuilder {
        self.options.heavy_calls = Some(heavy_calls);
        self
    }

    /// The longest a call may take (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> ServerBuilder {
        self.options.timeout = timeout;
        self
    }

    /// Every host hook at once.
    pub fn host(mut self, host: HostOptions) -> ServerBuilder {
        self.host = host;
        self
    }

    /// The base each call reads, asked once per call.
    pub fn base(
        mut self,
        base: impl Fn(&CallContext) -> Result<Source, HostError> + Send + Sync + 'static,
    ) -> ServerBuilder {
        let f: BaseFn = Arc::new(base);
        self.host.base = Some(f);
        self
    }

    /// The base a program runs on, asked with the base relations it reads.
    pub fn base_for(
        mut self,
        base_for: impl Fn(&CallContext, &[String]) -> Result<Source, HostError> + Send + Sync + 'static,
    ) -> ServerBuilder {
        let f: BaseForFn = Arc::new(base_for);
        self.host.base_for = Some(f);
        self
    }

    /// The vocabulary, resolved on the first call that needs it.
    pub fn vocabulary(
        mut self,
        vocabulary: impl Fn() -> Result<Vocabulary, HostError> + Send + Sync + 'static,
    ) -> ServerBuilder {
        let f: VocabularyFn = Arc::new(vocabulary);
        self.host.vocabulary = Some(f);
        self
    }

    /// The host's own arguments on every tool, and the hook asked with them per call.
    pub fn arguments(mut self, arguments: HostArguments) -> ServerBuilder {
        self.host.arguments = Some(arguments);
        self
    }

    /// Builds the server, as [`Server::with_host`] does.
    pub fn build(self) -> Result<Server, ServerError> {
        Server::with_host(self.store, self.pack, self.options, self.host)
    }
}
