//! MCP sessions over HTTP under a cap: rmcp's in-memory session manager, refusing a new
//! session while the cap is reached. A session idle for its keep-alive ends, and rmcp
//! then removes it (and its memory) from the map.

use std::sync::Arc;
use std::time::Duration;

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::SessionId;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionManager,
};

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    /// The cap on sessions is reached.
    #[error(
        "the server holds {0} MCP sessions, its limit (--max-sessions): end one (HTTP DELETE) \
         or wait for an idle one to expire"
    )]
    Full(usize),
    /// rmcp's session manager failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// rmcp's local session manager with a cap on the sessions held.
#[derive(Debug)]
pub struct CappedSessions {
    inner: LocalSessionManager,
    max: usize,
}

impl CappedSessions {
    /// At most `max` sessions, each ended after `idle` without a request.
    pub fn new(max: usize, idle: Duration) -> CappedSessions {
        let mut inner = LocalSessionManager::default();
        let mut config = SessionConfig::default();
        config.keep_alive = Some(idle);
        inner.session_config = config;
        CappedSessions { inner, max }
    }

    /// The sessions held now.
    pub async fn len(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    /// Whether no session is held.
    pub async fn is_empty(&self) -> bool {
        self.len().await == 0
    }

    /// Whether a new session would pass the cap.
    pub async fn full(&self) -> bool {
        self.len().await >= self.max
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        if self.full().await {
            return Err(SessionsError::Full(self.max));
        }
        Ok(self.inner.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(self.inner.restore_session(id).await?)
    }

    fn event_store(
        &self,
    ) -> Option<Arc<dyn rmcp::transport::streamable_http_server::session::EventStore>> {
        self.inner.event_store()
    }
}
