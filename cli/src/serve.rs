//! `strata serve`: the database served to agents over MCP, on stdio or streamable HTTP,
//! with the ingest socket and the MCP socket open beside it. `--stdio` relays to the
//! process serving the database, starting a `--daemon` when none does.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;

use super::ask::{ModelArgs, app_options};
use super::duration;
use super::query::LimitFlags;

#[derive(Args)]
#[command(group(clap::ArgGroup::new("transport").required(true).args(["stdio", "http", "daemon"])))]
pub(crate) struct ServeArgs {
    /// The database directory.
    pub(crate) db: PathBuf,
    /// Speak MCP over standard input and output (only JSON-RPC on stdout; exits at the end
    /// of input), relayed to the process serving the database (started with --daemon when
    /// none does).
    #[arg(long)]
    pub(crate) stdio: bool,
    /// With --stdio: hold the database in this process and serve this client from it (no
    /// relay, no daemon); fails while another process holds the database.
    #[arg(long, requires = "stdio")]
    pub(crate) in_process: bool,
    /// Hold the database and serve MCP sessions on DB/strata-mcp.sock, the process
    /// --stdio starts and relays to; exits --idle-exit after its last client left.
    #[arg(long)]
    pub(crate) daemon: bool,
    /// How long a daemon started by --stdio (or --daemon) waits after its last client
    /// left before it exits: 60s, 10m, or never.
    #[arg(long, default_value = "60s", value_name = "DURATION")]
    pub(crate) idle_exit: String,
    /// Serve streamable HTTP at http://ADDR/mcp, e.g. 127.0.0.1:7411.
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<std::net::SocketAddr>,
    /// A file holding the bearer token every HTTP request must carry (required to bind a
    /// non-loopback address).
    #[arg(long, value_name = "FILE")]
    pub(crate) token_file: Option<PathBuf>,
    /// Also accept this Host (name or name:port) besides the loopback names (repeatable).
    #[arg(long = "allow-host", value_name = "HOST")]
    pub(crate) allow_hosts: Vec<String>,
    /// Also accept this Origin (scheme://host[:port]) besides loopback ones (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub(crate) allow_origins: Vec<String>,
    #[command(flatten)]
    pub(crate) limits: LimitFlags,
    /// The most bytes of a call's answer, text or JSON (a call may ask for less with
    /// max_bytes); rows past it are left out, said so, with the page_token to go on.
    #[arg(long, default_value_t = strata_eval::ANSWER_BYTES)]
    pub(crate) max_bytes: u64,
    /// The most memory one call's evaluation may hold: bytes, or a size with a binary unit,
    /// 512M, 2G (a call may ask for less with max_memory). Default: the least of the memory
    /// available and the process's limits (RLIMIT_AS, cgroup), less room for the process,
    /// over twice the heavy calls plus one, so every heavy call at once still fits.
    #[arg(long, value_name = "SIZE")]
    pub(crate) max_memory: Option<strata_eval::ByteSize>,
    /// The store's page cache, shared by every call: bytes, or a size with a binary unit,
    /// 64M, 1G. It holds the pages read most lately, on top of the calls' own memory.
    /// Default: a sixteenth of the database's file, from 8M to 64M.
    #[arg(long, value_name = "SIZE")]
    pub(crate) cache: Option<strata_eval::ByteSize>,
    /// The most heavy calls (query, cypher, explain, ask) evaluated at once; the rest wait
    /// (--admission-wait) and are then refused; schema, look, values and find never wait.
    /// Default: one fewer than the machine's cores, at least 2.
    #[arg(long, value_name = "N")]
    pub(crate) heavy_calls: Option<usize>,
    /// How long a heavy call waits for a slot before it is refused (never past its own
    /// time limit).
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    pub(crate) admission_wait: String,
    /// The largest HTTP request body accepted, in bytes.
    #[arg(long, default_value_t = strata_mcp::serve::DEFAULT_MAX_BODY_BYTES)]
    pub(crate) max_body_bytes: usize,
    /// The most HTTP connections open at once; more are answered 503 and closed.
    #[arg(long, default_value_t = strata_mcp::serve::DEFAULT_MAX_CONNECTIONS)]
    pub(crate) max_connections: usize,
    /// How long an HTTP connection may take to send a request's whole header (then it is
    /// closed); also how long an idle connection stays open.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub(crate) header_timeout: String,
    /// How long an HTTP request may take to send its whole body (408 past it).
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub(crate) body_timeout: String,
    /// The most MCP sessions held at once over HTTP (`initialize` is answered 503 past it).
    #[arg(long, default_value_t = strata_mcp::serve::DEFAULT_MAX_SESSIONS)]
    pub(crate) max_sessions: usize,
    /// How long an HTTP session may go without a request before it ends.
    #[arg(long, default_value = "5m", value_name = "DURATION")]
    pub(crate) session_idle: String,
    /// How long `strata ingest` may send nothing while the server receives its batch
    /// before the batch is dropped.
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub(crate) ingest_idle: String,
    /// Read the source lines `context` shows for repository REPO from DIR, instead of the
    /// checkout recorded at ingest (repeatable).
    #[arg(long = "checkout", value_name = "REPO=DIR")]
    pub(crate) checkouts: Vec<String>,
    #[command(flatten)]
    pub(crate) models: ModelArgs,
}

pub(crate) fn serve(args: &ServeArgs) -> Result<()> {
    let idle_exit = match args.idle_exit.as_str() {
        "never" => None,
        d => Some(duration(d).context("--idle-exit")?),
    };
    #[cfg(unix)]
    if args.stdio && !args.in_process {
        // The daemon gets this command line, --daemon for --stdio.
        let exe = std::env::current_exe().context("finding the strata binary")?;
        let argv: Vec<std::ffi::OsString> = std::env::args_os()
            .skip(1)
            .map(|a| if a == "--stdio" { "--daemon".into() } else { a })
            .collect();
        let daemon = || {
            let mut c = std::process::Command::new(&exe);
            c.args(&argv);
            c
        };
        if strata_mcp::serve::relay_stdio(&args.db, daemon)? == strata_mcp::serve::Relayed::Done {
            return Ok(());
        }
    }
    let mut options = app_options(&args.limits, &args.models)?;
    options.max_bytes = args.max_bytes;
    let heavy = args
        .heavy_calls
        .unwrap_or_else(strata_app::admission::default_heavy_calls);
    options.heavy_calls = Some(heavy);
    options.max_memory = Some(
        args.max_memory
            .map_or_else(|| strata_app::default_max_memory(heavy), |s| s.0),
    );
    options.admission_wait = duration(&args.admission_wait).context("--admission-wait")?;
    options.cache_bytes = crate::query::cache_bytes(args.cache);
    for c in &args.checkouts {
        let Some((repo, dir)) = c
            .split_once('=')
            .filter(|(r, d)| !r.is_empty() && !d.is_empty())
        else {
            bail!("--checkout {c:?}: give it as REPO=DIR");
        };
        let dir = std::path::Path::new(dir)
            .canonicalize()
            .with_context(|| format!("--checkout {c}: {dir} cannot be opened"))?;
        if !dir.is_dir() {
            bail!("--checkout {c}: {} is not a directory", dir.display());
        }
        options.checkouts.insert(repo.to_owned(), dir);
    }
    let token = match &args.token_file {
        Some(f) => {
            let t = std::fs::read_to_string(f)
                .with_context(|| format!("--token-file {}: cannot read it", f.display()))?;
            let t = t.trim().to_owned();
            if t.is_empty() {
                bail!("--token-file {}: the file is empty", f.display());
            }
            let n = t.chars().count();
            if n < strata_mcp::serve::MIN_TOKEN_CHARS {
                bail!(
                    "--token-file {}: the token has {n} characters; a token needs at least {} \
                     (make one with `openssl rand -hex 32`)",
                    f.display(),
                    strata_mcp::serve::MIN_TOKEN_CHARS
                );
            }
            Some(t)
        }
        None => None,
    };
    let http = match args.http {
        Some(addr) => {
            let mut o = strata_mcp::HttpOptions::new(addr);
            o.token = token;
            o.allowed_hosts = args.allow_hosts.clone();
            o.allowed_origins = args.allow_origins.clone();
            o.max_body_bytes = args.max_body_bytes;
            o.max_connections = args.max_connections;
            o.header_timeout = duration(&args.header_timeout).context("--header-timeout")?;
            o.body_timeout = duration(&args.body_timeout).context("--body-timeout")?;
            o.max_sessions = args.max_sessions;
            o.session_idle = duration(&args.session_idle).context("--session-idle")?;
            // Refuse a bad bind before opening the database.
            o.validate()?;
            Some(o)
        }
        None => None,
    };
    let server = if args.daemon {
        open_waiting(&args.db, options)?
    } else {
        match strata_mcp::Server::open(&args.db, options) {
            Ok(s) => s,
            Err(e) => return Err(held_by_server(&args.db, e.into())),
        }
    };
    // Read the dictionary for `find` (and `ask`'s grounding) before the first call needs it.
    {
        let server = server.clone();
        std::thread::spawn(move || {
            if let Err(e) = server.warm_find() {
                eprintln!("strata: warning: {e}");
            }
        });
    }
    // `strata ingest DB` hands its batches over DB/strata.sock while this runs. The socket
    // is bound once signals are handled, so a signal after it appears stops us cleanly.
    #[cfg(unix)]
    let ingest = strata_app::ingest_socket::ListenerOptions {
        idle_timeout: duration(&args.ingest_idle).context("--ingest-idle")?,
        // A cancelled read's memory goes back to the system at once, as a cancelled MCP
        // call's does.
        after_cancel: Some(strata_mcp::serve::give_back),
        ..Default::default()
    };
    // The same socket answers the command line's reads (`strata query`, `stats`, `find`...)
    // over this server's application.
    let app = server.app().clone();
    let ingest_socket =
        || match strata_app::ingest_socket::IngestListener::bind_serving(app, ingest) {
            Ok(l) => Some(l),
            Err(e) => {
                eprintln!(
                    "strata: warning: cannot listen on {} ({e}); `strata ingest` cannot reach this \
                 server",
                    strata_app::ingest_socket::socket_path(&args.db).display()
                );
                None
            }
        };
    if args.daemon {
        strata_mcp::serve::run_daemon(server, &args.db, idle_exit, ingest_socket)?;
        return Ok(());
    }
    // Relays (`strata serve DB --stdio`) reach this process on DB/strata-mcp.sock.
    let mcp_server = server.clone();
    let socket = || {
        let mcp = match strata_mcp::serve::McpListener::bind(mcp_server, &args.db) {
            Ok(l) => Some(l),
            Err(e) => {
                eprintln!(
                    "strata: warning: cannot listen on {} ({e}); other MCP clients cannot \
                     share this server",
                    strata_mcp::serve::mcp_socket_path(&args.db).display()
                );
                None
            }
        };
        (ingest_socket(), mcp)
    };
    match http {
        Some(o) => strata_mcp::run_http(server, o, socket)?,
        None => {
            eprintln!("strata: serving {} over stdio", args.db.display());
            strata_mcp::run_stdio(server, socket)?;
        }
    }
    Ok(())
}

/// Opens the database for a daemon, waiting (a while) while it is in use: a daemon that
/// just went idle may still be closing it.
fn open_waiting(db: &std::path::Path, options: strata_mcp::Options) -> Result<strata_mcp::Server> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match strata_mcp::Server::open(db, options.clone()) {
            Err(e)
                if e.to_string().contains("is in use by another process")
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            r => return Ok(r?),
        }
    }
}

/// `e`, naming the server that holds the database when one listens on its MCP socket.
fn held_by_server(db: &std::path::Path, e: anyhow::Error) -> anyhow::Error {
    #[cfg(unix)]
    if e.to_string().contains("is in use by another process")
        && let Some(pid) = strata_mcp::serve::serving_pid(db)
    {
        return anyhow::anyhow!(
            "{e}. That process is strata's server of this database (pid {pid}), serving MCP \
             clients on {}: `strata serve DB --stdio` clients relay to it. One started by a \
             --stdio client exits its --idle-exit (60s by default) after its last client \
             left: wait for that, or stop it (kill {pid}), then start this one",
            strata_mcp::serve::mcp_socket_path(db).display()
        );
    }
    e
}
