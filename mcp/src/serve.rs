//! Transports: stdio (only JSON-RPC on stdout, exits at the end of stdin) and streamable
//! HTTP at `/mcp` (loopback by default, Host and Origin checked, an optional bearer token,
//! a body cap, caps on connections and sessions, time limits on a request's header and
//! body). SIGINT and SIGTERM stop either cleanly. Every limit is listed in `docs/limits.md`.

mod connections;
mod memory;
pub use memory::give_back;
#[cfg(unix)]
mod relay;
mod sessions;
#[cfg(unix)]
mod socket;
mod stdio;
mod stream;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

#[cfg(unix)]
pub use self::relay::{Relayed, relay_stdio, serving_pid};
pub use self::sessions::{CappedSessions, SessionsError};
#[cfg(unix)]
pub use self::socket::{
    DEFAULT_FRAME_TIMEOUT, DEFAULT_IDLE_EXIT, GREETING_METHOD, MCP_LOCK_FILE, MCP_LOG_FILE,
    MCP_SOCKET_FILE, McpListener, SocketOptions, mcp_socket_path, run_daemon,
};
pub use self::stdio::MAX_STDIO_MESSAGE_BYTES;
pub use self::stream::StreamClosed;
use crate::server::Server;

/// The largest request body the HTTP transport accepts by default (1 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;

/// The most HTTP connections open at once by default: twice the sessions, as each session
/// may hold an event stream open besides its requests, and well under the usual limit of
/// 1,024 open files.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// How long a connection may take to send a request's whole header by default.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a request may take to send its whole body by default.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The most MCP sessions held at once by default.
pub const DEFAULT_MAX_SESSIONS: usize = 256;

/// How long a session may go without a request before it ends, by default.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);

/// The fewest characters a bearer token may have.
pub const MIN_TOKEN_CHARS: usize = 16;

/// The names a loopback client reaches the server by.
const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address, token or options are refused.
    #[error("{0}")]
    Config(String),
    /// Binding, accepting or the runtime failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The MCP session failed.
    #[error("{0}")]
    Session(String),
}

/// How to serve over HTTP.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// The address to bind (loopback unless a token is given).
    pub addr: SocketAddr,
    /// The bearer token every request must carry; required for a non-loopback bind.
    pub token: Option<String>,
    /// Host names (or `host:port`) accepted besides the loopback names.
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`) accepted besides loopback ones.
    pub allowed_origins: Vec<String>,
    /// The largest request body accepted (413 past it).
    pub max_body_bytes: usize,
    /// The most connections open at once (checked before anything is read; more are
    /// answered 503 and closed).
    pub max_connections: usize,
    /// How long a connection may take to send a request's whole header (the connection
    /// is closed past it).
    pub header_timeout: Duration,
    /// How long a request may take to send its whole body (408 past it).
    pub body_timeout: Duration,
    /// The most MCP sessions held at once (`initialize` is answered 503 past it).
    pub max_sessions: usize,
    /// How long a session may go without a request before it ends.
    pub session_idle: Duration,
}

impl HttpOptions {
    /// Loopback options for `addr`: no token, no extra hosts or origins, the default cap.
    pub fn new(addr: SocketAddr) -> HttpOptions {
        HttpOptions {
            addr,
            token: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle: DEFAULT_SESSION_IDLE,
        }
    }

    /// Refuses a non-loopback bind without a token, a token shorter than
    /// [`MIN_TOKEN_CHARS`], and zero caps or time limits.
    pub fn validate(&self) -> Result<(), ServeError> {
        if let Some(t) = &self.token {
            let n = t.trim().chars().count();
            if n < MIN_TOKEN_CHARS {
                return Err(ServeError::Config(format!(
                    "the token has {n} characters; a token needs at least {MIN_TOKEN_CHARS} \
                     (make one with `openssl rand -hex 32`)"
                )));
            }
        }
        let zero = |what: &str| Err(ServeError::Config(format!("{what} must be above zero")));
        if self.max_connections == 0 {
            return zero("--max-connections");
        }
        if self.max_sessions == 0 {
            return zero("--max-sessions");
        }
        if self.header_timeout.is_zero() {
            return zero("--header-timeout");
        }
        if self.body_timeout.is_zero() {
            return zero("--body-timeout");
        }
        if self.session_idle.is_zero() {
            return zero("--session-idle");
        }
        if !self.addr.ip().is_loopback() && self.token.is_none() {
            return Err(ServeError::Config(format!(
                "refusing to serve on {} without a token: a non-loopback address needs \
                 --token-file, or bind 127.0.0.1",
                self.addr
            )));
        }
        Ok(())
    }

    /// Every host name accepted: the loopback names, the bound address when it is a
    /// specific one, and the extra ones.
    fn hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
        let ip = self.addr.ip();
        if !ip.is_unspecified() && !ip.is_loopback() {
            hosts.push(ip.to_string());
        }
        hosts.extend(self.allowed_hosts.iter().map(|h| h.to_ascii_lowercase()));
        hosts
    }
}

/// Resolves when the process gets SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    registered_shutdown().await;
}

/// Registers for SIGINT and SIGTERM now (from then on neither kills the process), and
/// returns what resolves when one comes. Must be called inside a runtime.
fn registered_shutdown() -> impl Future<Output = ()> + Send {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let int = signal(SignalKind::interrupt()).ok();
        let term = signal(SignalKind::terminate()).ok();
        async move {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = wait(int) => {}
                () = wait(term) => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Serves `server` over this process's stdin and stdout until stdin ends or `shutdown`
/// resolves. Nothing but JSON-RPC is written to stdout; a line that is not JSON, or a
/// message past [`MAX_STDIO_MESSAGE_BYTES`], is answered with a JSON-RPC error.
pub async fn serve_stdio(
    server: Server,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let (input, output) = rmcp::transport::stdio_pipes();
    serve_lines(
        server,
        tokio::io::BufReader::new(input),
        output,
        MAX_STDIO_MESSAGE_BYTES,
        shutdown,
    )
    .await
}

/// Serves `server` over `input` and `output`, one JSON-RPC message a line, as on stdio:
/// until `input` ends or `shutdown` resolves; lines that are not JSON or pass `max` bytes
/// are answered with a JSON-RPC error.
pub async fn serve_lines<R, W>(
    server: Server,
    input: R,
    output: W,
    max: usize,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError>
where
    R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    serve_framed(server, input, output, (max, None), shutdown).await
}

/// [`serve_lines`] with a message limit of `max` bytes and, with `deadline`, a frame
/// deadline for each message (the MCP socket's, see [`socket`]).
async fn serve_framed<R, W>(
    server: Server,
    input: R,
    output: W,
    (max, deadline): (usize, Option<Duration>),
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError>
where
    R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let framed = stdio::frame(input, output, max, deadline);
    // The framing enforces the limit; rmcp's own (which drops silently) is set above it.
    let transport = rmcp::transport::async_rw::AsyncRwTransport::<rmcp::RoleServer, _, _>::new(
        framed.to_rmcp,
        framed.from_rmcp,
    )
    .with_max_line_length(max.saturating_add(2));
    tokio::pin!(shutdown);
    let result = async {
        let running = tokio::select! {
            r = server.serve(transport) => match r {
                Ok(r) => r,
                // The client went away before initializing: nothing to serve.
                Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
                Err(e) => return Err(ServeError::Session(e.to_string())),
            },
            () = &mut shutdown => return Ok(()),
        };
        let ct = running.cancellation_token();
        tokio::select! {
            r = running.waiting() => {
                r.map_err(|e| ServeError::Session(e.to_string()))?;
            }
            () = &mut shutdown => ct.cancel(),
        }
        Ok(())
    }
    .await;
    // Let the last answers out.
    let _ = tokio::time::timeout(Duration::from_secs(1), framed.writer).await;
    result
}

/// The axum router serving `server` at `/mcp` with `options`' checks, and a function that
/// ends every session (call it when shutting down, so open streams close).
pub fn router(
    server: Server,
    options: &HttpOptions,
) -> (axum::Router, impl Fn() + Clone + Send + 'static + use<>) {
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.hosts())
        .with_max_request_body_bytes(options.max_body_bytes);
    let ct = config.cancellation_token.clone();
    let sessions = Arc::new(CappedSessions::new(
        options.max_sessions,
        options.session_idle,
    ));
    let service =
        StreamableHttpService::new(move || Ok(server.session()), Arc::clone(&sessions), config);
    let guard = Arc::new(Guard {
        hosts: options.hosts(),
        origins: options
            .allowed_origins
            .iter()
            .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
            .collect(),
        token: options.token.clone(),
        max_body: options.max_body_bytes,
        body_timeout: options.body_timeout,
        sessions,
    });
    let app = axum::Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(guard, check_request));
    (app, move || ct.cancel())
}

/// Serves `server` over streamable HTTP at `http://ADDR/mcp` until `shutdown` resolves,
/// then ends every session and waits (a while) for calls in flight.
pub async fn serve_http(
    server: Server,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    options.validate()?;
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    eprintln!(
        "strata: serving MCP at http://{}/mcp{}",
        listener.local_addr()?,
        if options.token.is_some() {
            " (bearer token required)"
        } else {
            ""
        }
    );
    serve_listener(server, &options, listener, shutdown).await;
    Ok(())
}

/// Serves `server` over streamable HTTP on the connections of `listener` (already bound)
/// until `shutdown` resolves.
pub async fn serve_listener(
    server: Server,
    options: &HttpOptions,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) {
    let (app, stop) = router(server, options);
    let limits = connections::ConnectionLimits {
        max_connections: options.max_connections,
        header_timeout: options.header_timeout,
    };
    connections::serve(listener, app, limits, shutdown, stop).await;
}

/// Runs `serve_stdio` on a runtime of its own until stdin ends or a signal comes. `ready`
/// runs once SIGINT and SIGTERM are handled (so a signal from then on stops the server
/// cleanly), before serving; what it returns is kept until the server stops (the CLI binds
/// the ingest socket there, so the socket's presence means signals are handled).
pub fn run_stdio<G>(server: Server, ready: impl FnOnce() -> G) -> Result<(), ServeError> {
    let _trimmer = memory::Trimmer::start();
    let rt = runtime()?;
    let shutdown = {
        let _in = rt.enter();
        registered_shutdown()
    };
    let _kept = ready();
    let r = rt.block_on(serve_stdio(server, shutdown));
    // A blocking read of stdin cannot be interrupted: do not wait for it.
    rt.shutdown_timeout(Duration::from_millis(200));
    r
}

/// Runs `serve_http` on a runtime of its own until a signal comes; `ready` as for
/// [`run_stdio`].
pub fn run_http<G>(
    server: Server,
    options: HttpOptions,
    ready: impl FnOnce() -> G,
) -> Result<(), ServeError> {
    options.validate()?;
    let _trimmer = memory::Trimmer::start();
    let rt = runtime()?;
    let shutdown = {
        let _in = rt.enter();
        registered_shutdown()
    };
    let _kept = ready();
    let r = rt.block_on(serve_http(server, options, shutdown));
    rt.shutdown_timeout(Duration::from_secs(5));
    r
}

fn runtime() -> Result<tokio::runtime::Runtime, ServeError> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// What every HTTP request is checked against before it reaches the MCP service.
struct Guard {
    hosts: Vec<String>,
    origins: Vec<String>,
    token: Option<String>,
    max_body: usize,
    body_timeout: Duration,
    sessions: Arc<CappedSessions>,
}

async fn check_request(
    State(guard): State<Arc<Guard>>,
    request: Request<Body>,
    next: Next,
) -> Response {
    if let Err((status, message)) = guard.check(request.headers()) {
        let mut r = (status, message).into_response();
        if status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        return r;
    }
    let delete = request.method() == Method::DELETE;
    // A body declared as something else than JSON is rmcp's to refuse (415).
    let json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| {
            let essence = h.split_once(';').map_or(h, |(e, _)| e);
            essence.trim().eq_ignore_ascii_case("application/json")
        });
    let mut request = if request.method() == Method::POST && json {
        match guard.read_message(request).await {
            Ok(r) => r,
            Err(refused) => return refused,
        }
    } else {
        request
    };
    // A call whose answer stream closes is cancelled (see `stream`).
    let closer = (request.method() == Method::POST).then(|| stream::watch(&mut request));
    let mut response = next.run(request).await;
    if let Some(closer) = closer {
        response = stream::watched(response, closer);
    }
    // rmcp answers a DELETE 202; clients expect 200 or 204.
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

/// A JSON-RPC error answer with HTTP `status`.
fn jsonrpc_error(status: StatusCode, id: Value, code: i32, message: String) -> Response {
    let error = rmcp::ErrorData::new(rmcp::model::ErrorCode(code), message, None);
    jsonrpc_answer(status, id, &error)
}

/// A JSON-RPC error answer holding `error` (its `data` too), with `status`.
fn jsonrpc_answer(status: StatusCode, id: Value, error: &rmcp::ErrorData) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
    let mut r = (status, body.to_string()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

impl Guard {
    /// Host, then Origin (403), then the token (401), then a declared body size (413).
    fn check(&self, headers: &HeaderMap) -> Result<(), (StatusCode, &'static str)> {
        let forbidden = |m| Err((StatusCode::FORBIDDEN, m));
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
            return forbidden("Forbidden: a Host header is required");
        };
        if !self.host_allowed(host) {
            return forbidden("Forbidden: Host header is not allowed");
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let allowed = origin.to_str().is_ok_and(|o| self.origin_allowed(o));
            if !allowed {
                return forbidden("Forbidden: Origin header is not allowed");
            }
        }
        if let Some(token) = &self.token {
            // The scheme is case-insensitive (RFC 9110).
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|h| h.to_str().ok())
                .and_then(|h| h.trim().split_once(' '))
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                .map(|(_, t)| t.trim());
            if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), token.as_bytes())) {
                return Err((
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized: send Authorization: Bearer <token>",
                ));
            }
        }
        if let Some(len) = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.parse::<u64>().ok())
            && len > self.max_body as u64
        {
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                "Payload Too Large: the request body passes the server's limit",
            ));
        }
        Ok(())
    }

    /// Reads a POST's body (within the body cap and time limit) and checks it is one
    /// JSON-RPC message: malformed JSON is answered -32700, other JSON -32600 (HTTP 400),
    /// an `initialize` past the session cap 503; a message that passes is handed on.
    async fn read_message(&self, request: Request<Body>) -> Result<Request<Body>, Response> {
        let (parts, body) = request.into_parts();
        let bytes = match tokio::time::timeout(
            self.body_timeout,
            axum::body::to_bytes(body, self.max_body),
        )
        .await
        {
            Err(_) => {
                return Err((
                    StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "Request Timeout: the body took longer than {} s (--body-timeout)",
                        self.body_timeout.as_secs()
                    ),
                )
                    .into_response());
            }
            Ok(Err(_)) => {
                return Err((
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "Payload Too Large: the request body passes the server's limit of {} \
                         bytes (--max-body-bytes)",
                        self.max_body
                    ),
                )
                    .into_response());
            }
            Ok(Ok(b)) => b,
        };
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
            jsonrpc_error(
                StatusCode::BAD_REQUEST,
                Value::Null,
                -32700,
                format!("Parse error: the body is not JSON ({e})"),
            )
        })?;
        let id = value.get("id").cloned().unwrap_or(Value::Null);
        if let Some(message) = crate::protocol::invalid_params(&value) {
            return Err(jsonrpc_error(StatusCode::OK, id, -32602, message));
        }
        if let Some(error) = crate::protocol::undeclared_method(&value) {
            return Err(jsonrpc_answer(StatusCode::OK, id, &error));
        }
        if let Err(e) = serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(value.clone()) {
            return Err(jsonrpc_error(
                StatusCode::BAD_REQUEST,
                id,
                -32600,
                format!("Invalid Request: not a JSON-RPC message this server reads ({e})"),
            ));
        }
        let initialize = value.get("method").and_then(Value::as_str) == Some("initialize");
        if initialize && self.sessions.full().await {
            return Err(jsonrpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                id,
                -32000,
                SessionsError::Full(self.sessions.max()).to_string(),
            ));
        }
        Ok(Request::from_parts(parts, Body::from(bytes)))
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let (name, _) = split_host_port(&host);
        self.hosts.iter().any(|h| *h == host || *h == name)
    }

    /// An Origin passes when its host is a loopback name (http or https, any port) or it is
    /// one of the allowed origins exactly.
    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        if self.origins.contains(&origin) {
            return true;
        }
        let Some(rest) = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
        else {
            return false;
        };
        let (name, port) = split_host_port(rest);
        port.is_none_or(|p| p.parse::<u16>().is_ok()) && LOOPBACK_HOSTS.contains(&name)
    }
}

/// Splits `host[:port]` and `[v6]:port` into the name (without brackets) and the port.
fn split_host_port(s: &str) -> (&str, Option<&str>) {
    if let Some(rest) = s.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((name, tail)) => (name, tail.strip_prefix(':')),
            None => (s, None),
        };
    }
    match s.rsplit_once(':') {
        // A bare IPv6 address has several colons and no port.
        Some((name, port)) if !name.contains(':') => (name, Some(port)),
        _ => (s, None),
    }
}

/// Compares two byte strings in time that depends only on their lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= x ^ y;
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn guard(token: Option<&str>) -> Guard {
        let o = HttpOptions::new("127.0.0.1:7411".parse().unwrap());
        Guard {
            hosts: o.hosts(),
            origins: vec!["https://app.example.com".to_owned()],
            token: token.map(str::to_owned),
            max_body: 100,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            sessions: Arc::new(CappedSessions::new(2, DEFAULT_SESSION_IDLE)),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn hosts_are_loopback_names_with_any_port() {
        let g = guard(None);
        for ok in ["127.0.0.1:7411", "localhost", "LOCALHOST:1", "[::1]:7411"] {
            assert!(g.check(&headers(&[("host", ok)])).is_ok(), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:7411",
            "127.0.0.2",
            "localhost.evil",
        ] {
            assert_eq!(
                g.check(&headers(&[("host", bad)])).unwrap_err().0,
                StatusCode::FORBIDDEN,
                "{bad}"
            );
        }
        assert_eq!(
            g.check(&HeaderMap::new()).unwrap_err().0,
            StatusCode::FORBIDDEN
        );
    }

    #[test]
    fn origins_are_loopback_or_listed() {
        let g = guard(None);
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://[::1]:8443",
            "https://app.example.com",
        ] {
            assert!(
                g.check(&headers(&[("host", "localhost"), ("origin", ok)]))
                    .is_ok(),
                "{ok}"
            );
        }
        for bad in [
            "http://evil.example",
            "null",
            "http://localhost.evil:80",
            "file://",
        ] {
            assert_eq!(
                g.check(&headers(&[("host", "localhost"), ("origin", bad)]))
                    .unwrap_err()
                    .0,
                StatusCode::FORBIDDEN,
                "{bad}"
            );
        }
    }

    #[test]
    fn the_token_is_required_when_set() {
        let g = guard(Some("s3cret"));
        let h = |auth: Option<&str>| {
            let mut v = vec![("host", "localhost")];
            if let Some(a) = auth {
                v.push(("authorization", a));
            }
            g.check(&headers(&v))
        };
        assert_eq!(h(None).unwrap_err().0, StatusCode::UNAUTHORIZED);
        assert_eq!(
            h(Some("Bearer nope")).unwrap_err().0,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(h(Some("s3cret")).unwrap_err().0, StatusCode::UNAUTHORIZED);
        assert!(h(Some("Bearer s3cret")).is_ok());
        // The scheme is case-insensitive.
        assert!(h(Some("bearer s3cret")).is_ok());
        assert!(h(Some("BEARER  s3cret")).is_ok());
        assert_eq!(
            h(Some("Basic s3cret")).unwrap_err().0,
            StatusCode::UNAUTHORIZED
        );
        // A wrong Host is refused before the token is looked at.
        assert_eq!(
            g.check(&headers(&[("host", "evil.example")]))
                .unwrap_err()
                .0,
            StatusCode::FORBIDDEN
        );
    }

    #[test]
    fn a_declared_large_body_is_refused() {
        let g = guard(None);
        assert_eq!(
            g.check(&headers(&[
                ("host", "localhost"),
                ("content-length", "101")
            ]))
            .unwrap_err()
            .0,
            StatusCode::PAYLOAD_TOO_LARGE
        );
    }

    #[test]
    fn a_public_bind_needs_a_token() {
        let mut o = HttpOptions::new("0.0.0.0:7411".parse().unwrap());
        assert!(o.validate().is_err());
        o.token = Some("a-token-of-sixteen".to_owned());
        assert!(o.validate().is_ok());
        // Too short a token is refused, naming the limit.
        o.token = Some("t".to_owned());
        assert!(
            o.validate()
                .unwrap_err()
                .to_string()
                .contains("at least 16")
        );
        o.token = Some("  ".to_owned());
        assert!(o.validate().is_err());
        assert!(
            HttpOptions::new("127.0.0.1:0".parse().unwrap())
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn constant_time_eq_compares() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
    }
}
