//! An HTTP request's answer stream, watched: when the client closes the stream its request
//! is answered on (or the connection), the call it carried is cancelled like one cancelled
//! with `notifications/cancelled`. rmcp keeps a call running when its POST's stream closes
//! (it only fails to send the answer at the end); this tells the handler instead.
//!
//! The HTTP check hands each POST a [`StreamClosed`] in its request's extensions (rmcp passes
//! the request's parts on to the handler) and wraps the answer's body with the other end:
//! the body dropped (its client gone, or the answer sent whole) or the request itself
//! dropped before it was answered resolves [`StreamClosed::closed`].

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::response::Response;
use futures_core::Stream;
use tokio::sync::watch;

/// The watch on one request's answer stream, in its HTTP request's extensions.
#[derive(Clone, Debug)]
pub struct StreamClosed(watch::Receiver<bool>);

impl StreamClosed {
    /// Resolves when the answer stream is gone (closed by the client, or ended).
    pub async fn closed(mut self) {
        let _ = self.0.wait_for(|closed| *closed).await;
    }

    /// The watch in `context`'s HTTP request, when the request came over HTTP.
    pub fn of(extensions: &rmcp::model::Extensions) -> Option<StreamClosed> {
        extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<StreamClosed>())
            .cloned()
    }
}

/// Sets the watch when dropped.
struct Closer(watch::Sender<bool>);

impl Drop for Closer {
    fn drop(&mut self) {
        let _ = self.0.send(true);
    }
}

/// Gives `request` a [`StreamClosed`]; the closer returned is to go with its answer
/// ([`watched`]), and closes the watch if dropped first.
pub(super) fn watch(request: &mut Request) -> impl Send + 'static {
    let (tx, rx) = watch::channel(false);
    request.extensions_mut().insert(StreamClosed(rx));
    Closer(tx)
}

/// `response` with `closer` riding on its body: dropping the body closes the watch.
pub(super) fn watched(response: Response, closer: impl Send + 'static) -> Response {
    let (parts, body) = response.into_parts();
    let body = Body::from_stream(Watched {
        inner: Box::pin(body.into_data_stream()),
        _closer: Box::new(closer),
    });
    Response::from_parts(parts, body)
}

type DataStream = Pin<Box<dyn Stream<Item = Result<Bytes, axum::Error>> + Send>>;

/// An answer's body and the closer it carries.
struct Watched {
    inner: DataStream,
    _closer: Box<dyn Send>,
}

impl Stream for Watched {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}
