//! The HTTP connections: accepted under a cap that applies before anything is read (so
//! before authentication), each given a time limit to send a request's whole header, and
//! drained at shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tower::ServiceExt;

/// How long a clean shutdown waits for open connections to finish their calls.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the server spends telling a connection past the cap that it is refused.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(1);

/// The limits on connections.
#[derive(Clone, Copy, Debug)]
pub(super) struct ConnectionLimits {
    /// The most connections open at once; more are answered 503 and closed at once.
    pub(super) max_connections: usize,
    /// How long a connection may take to send a request's whole header, counted from when
    /// the server waits for it (the connection opened, or the previous answer was sent).
    pub(super) header_timeout: Duration,
}

/// Serves `app` on the connections `listener` accepts until `shutdown` resolves, then
/// calls `stop` (which ends the MCP sessions), closes idle connections and waits (a while)
/// for the others.
pub(super) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send,
    stop: impl FnOnce(),
) {
    let max = limits.max_connections.max(1);
    let permits = Arc::new(Semaphore::new(max));
    let (closing, closed) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            r = listener.accept() => match r {
                Ok((tcp, _)) => tcp,
                // Out of descriptors or a connection reset before it was accepted: wait a
                // little rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Answers go out in several small writes: without TCP_NODELAY, Nagle's algorithm
        // meets the client's delayed acknowledgement and every call waits about 40 ms.
        let _ = tcp.set_nodelay(true);
        let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
            tokio::spawn(refuse(tcp, max));
            continue;
        };
        let app = app.clone();
        let mut closed = closed.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |r: hyper::Request<Incoming>| {
                app.clone().oneshot(r.map(Body::new))
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout);
            let conn = builder.serve_connection(TokioIo::new(tcp), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                () = async { let _ = closed.wait_for(|c| *c).await; } => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    stop();
    let _ = closing.send(true);
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, permits.acquire_many(all)).await;
}

/// Answers a connection past the cap with 503 and closes it.
async fn refuse(mut tcp: TcpStream, max: usize) {
    let body = format!(
        "Service Unavailable: the server has {max} connections open, its limit \
         (--max-connections); retry shortly\n"
    );
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_TIMEOUT, async {
        let _ = tcp.write_all(answer.as_bytes()).await;
        let _ = tcp.shutdown().await;
        // Read what the client sent, so closing does not reset the connection before it
        // reads the answer.
        let mut sink = [0u8; 4096];
        while matches!(tcp.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}
