//! `strata`: the command line, thin over the `strata-store` and `strata-eval` libraries.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use strata_store::dump::{self, DumpSpec, Format};
use strata_store::{BatchOptions, BatchSummary, OpenOptions, Store, StoreError};

/// Strata: a persistent, indexed fact store for code graphs, with a Datalog engine.
#[derive(Parser)]
#[command(name = "strata", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load dump files into a database (creating it if needed), as one atomic batch.
    Ingest(IngestArgs),
    /// Remove every fact the named units state, as one atomic batch.
    Retract(RetractArgs),
    /// Show the relations, their sizes and the bytes on disk per tier.
    Stats {
        /// The database directory.
        db: PathBuf,
    },
    /// Rebuild every index and count from the columns and compare with what is stored.
    Check {
        /// The database directory.
        db: PathBuf,
    },
    /// Run a program: rules, if any, then one goal; answers a page of rows with witnesses.
    Query(QueryArgs),
    /// Run a program and report where its work went instead of its rows.
    Explain(QueryArgs),
    /// Ask in Cypher: the query is compiled to a program, which runs as `query` runs one.
    Cypher(cypher::CypherArgs),
    /// Show the relations and modules a program may use: the card, or one module's or
    /// relation's schema.
    Schema {
        /// The database directory.
        db: PathBuf,
        /// A module (`deps`) or relation (`deps.depends_on`, `imports`) to describe.
        path: Option<String>,
    },
    /// Answer a question in plain language: a model (over HTTP, never bundled) writes the
    /// program, the engine checks and runs it, and its errors go back to the model.
    Ask(AskArgs),
    /// Serve the database to agents over MCP: `--stdio` for a client that starts the
    /// server itself, `--http ADDR` for a daemon at http://ADDR/mcp.
    Serve(ServeArgs),
    /// Print the line for an agent's own instructions (a CLAUDE.md) saying when to use
    /// this database's MCP server, written from its pack (`strata.toml`).
    AgentLine {
        /// The database directory.
        db: PathBuf,
    },
    /// Build the bundled example database (the seed's four Go packages) and show it.
    Demo {
        /// Where to build it (default: a `strata-demo` folder in the system's temp directory).
        dir: Option<PathBuf>,
    },
}

#[derive(Args)]
struct BatchArgs {
    /// A label recorded with the batch, as key=value (repeatable): `--label commit=abc123`.
    #[arg(long = "label", value_name = "K=V")]
    labels: Vec<String>,
    /// An id for the batch: a batch whose id was committed before is skipped, so a retry
    /// after a failure is safe.
    #[arg(long)]
    batch_id: Option<String>,
}

#[derive(Args)]
struct IngestArgs {
    /// The database directory.
    db: PathBuf,
    /// Dump files (`-` for standard input); the format comes from each name
    /// (`*.edges.tsv`, `*.attrs.tsv`, `*.nodes.tsv`, `NAME.facts`, `*.jsonl`, each maybe `.gz`).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The tier new relations go to; a tier other than `default` is a file of its own,
    /// opened only by queries that read its relations.
    #[arg(long, default_value = "default")]
    tier: String,
    /// The format of every file, overriding their names: edges, attrs, nodes, facts, jsonl.
    #[arg(long)]
    format: Option<String>,
    /// For `--format facts` on standard input: the relation the lines belong to.
    #[arg(long)]
    relation: Option<String>,
    /// The unit that owns every fact that names none itself.
    #[arg(long)]
    unit: Option<String>,
    /// Replace, in the same batch, every stored fact of each unit the batch names.
    #[arg(long)]
    replace: bool,
    /// Facts gathered in memory before they are written into the batch's (uncommitted)
    /// transaction: bounds the memory of a large ingest.
    #[arg(long, default_value_t = strata_store::BUFFER_FACTS)]
    buffer: usize,
    #[command(flatten)]
    batch: BatchArgs,
}

#[derive(Args)]
struct QueryArgs {
    /// The database directory.
    db: PathBuf,
    /// The program, e.g. 'deps.depends_on("app", ?d) => ?d'.
    program: String,
    /// Give a variable a value, as var=value (repeat a variable for a list of values). A
    /// value that reads as JSON (42, "42", ["a","b"]) is taken as such; anything else is text.
    #[arg(long = "bind", value_name = "VAR=VALUE")]
    binds: Vec<String>,
    /// The most rows to answer.
    #[arg(long, default_value_t = 100)]
    limit: u64,
    /// Continue from this page token (the offset the last page gave).
    #[arg(long)]
    page_token: Option<String>,
    /// The most work (candidate tuples examined) the evaluation may spend.
    #[arg(long)]
    max_work: Option<u64>,
    /// The longest the evaluation may take: 500ms, 30s, 2m.
    #[arg(long, default_value = "30s")]
    timeout: String,
    /// Answer as JSON: columns, rows, witnesses, total, next page token, snapshot.
    #[arg(long)]
    json: bool,
    /// Leave out the witnesses (faster on large answers).
    #[arg(long)]
    no_witnesses: bool,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    threads: Option<usize>,
    /// A try: answer at most this many rows, and when none come back, say which literal
    /// matched nothing.
    #[arg(long)]
    sample: Option<u64>,
}

/// The models `ask` translates questions with (`strata ask`, and the `ask` tool of
/// `strata serve`).
#[derive(Args)]
struct ModelArgs {
    /// The local model: an OpenAI-compatible chat completions endpoint (llama.cpp's server,
    /// Ollama, vLLM), by its base URL, e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL", help_heading = "Models (ask)")]
    model_url: Option<String>,
    /// The local model's name, as its endpoint knows it.
    #[arg(long, value_name = "NAME", help_heading = "Models (ask)")]
    model_name: Option<String>,
    /// The environment variable holding the local model's key (sent as a bearer token).
    #[arg(long, value_name = "VAR", help_heading = "Models (ask)")]
    model_key_env: Option<String>,
    /// The frontier fallback's model name; setting it sets the fallback up.
    #[arg(long, value_name = "NAME", help_heading = "Models (ask)")]
    fallback_name: Option<String>,
    /// The fallback's API: anthropic (the Messages API, the default) or openai.
    #[arg(long, value_name = "KIND", value_parser = ["anthropic", "openai"], help_heading = "Models (ask)")]
    fallback_kind: Option<String>,
    /// The fallback's base URL (default for anthropic: https://api.anthropic.com).
    #[arg(long, value_name = "URL", help_heading = "Models (ask)")]
    fallback_url: Option<String>,
    /// The environment variable holding the fallback's key.
    #[arg(long, value_name = "VAR", help_heading = "Models (ask)")]
    fallback_key_env: Option<String>,
    /// The longest one model request may take: 500ms, 30s, 2m.
    #[arg(long, default_value = "60s", help_heading = "Models (ask)")]
    model_timeout: String,
    /// How many programs each model may write for one question.
    #[arg(long, default_value_t = strata_mcp::ask::DEFAULT_TRIES, help_heading = "Models (ask)")]
    tries: u32,
}

impl ModelArgs {
    fn options(&self) -> Result<strata_mcp::AskOptions> {
        Ok(strata_mcp::AskOptions::from_flags(
            &strata_mcp::ModelFlags {
                model_url: self.model_url.clone(),
                model_name: self.model_name.clone(),
                model_key_env: self.model_key_env.clone(),
                fallback_url: self.fallback_url.clone(),
                fallback_name: self.fallback_name.clone(),
                fallback_kind: self.fallback_kind.clone(),
                fallback_key_env: self.fallback_key_env.clone(),
                timeout: Some(duration(&self.model_timeout).context("--model-timeout")?),
                tries: self.tries,
            },
        )?)
    }
}

#[derive(Args)]
struct AskArgs {
    /// The database directory.
    db: PathBuf,
    /// The question, e.g. "what does app depend on?".
    question: String,
    /// Which models to ask: local, frontier, or both (local first, the fallback when it fails).
    #[arg(long, default_value = "both", value_parser = ["local", "frontier", "both"])]
    mode: String,
    /// The language the model writes: datalog, or cypher for a database with a Cypher graph
    /// (default: the pack's ask_language, else datalog).
    #[arg(long, value_parser = ["datalog", "cypher"])]
    language: Option<String>,
    /// The most rows to answer.
    #[arg(long, default_value_t = 100)]
    limit: u64,
    /// The most work (candidate tuples examined) the program may spend.
    #[arg(long)]
    max_work: Option<u64>,
    /// The longest the program's evaluation may take: 500ms, 30s, 2m.
    #[arg(long, default_value = "30s")]
    timeout: String,
    /// Answer as JSON: the program, columns, rows, witnesses, total and every try.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    models: ModelArgs,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("transport").required(true).args(["stdio", "http"])))]
struct ServeArgs {
    /// The database directory.
    db: PathBuf,
    /// Speak MCP over standard input and output (only JSON-RPC on stdout; exits at the end
    /// of input).
    #[arg(long)]
    stdio: bool,
    /// Serve streamable HTTP at http://ADDR/mcp, e.g. 127.0.0.1:7411.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// A file holding the bearer token every HTTP request must carry (required to bind a
    /// non-loopback address).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Also accept this Host (name or name:port) besides the loopback names (repeatable).
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// Also accept this Origin (scheme://host[:port]) besides loopback ones (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// The most rows a call answers (a call may ask for fewer).
    #[arg(long, default_value_t = 100)]
    limit: u64,
    /// The most work a call may spend (a call may ask for less).
    #[arg(long)]
    max_work: Option<u64>,
    /// The longest a call may take: 500ms, 30s, 2m.
    #[arg(long, default_value = "30s")]
    timeout: String,
    /// The largest HTTP request body accepted, in bytes.
    #[arg(long, default_value_t = strata_mcp::serve::DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
    #[command(flatten)]
    models: ModelArgs,
}

#[derive(Args)]
struct RetractArgs {
    /// The database directory.
    db: PathBuf,
    /// A unit whose facts to remove (repeatable).
    #[arg(long = "unit", required = true)]
    units: Vec<String>,
    #[command(flatten)]
    batch: BatchArgs,
}

/// Writes a line to standard output, returning the error (a closed pipe, say) instead of
/// panicking as `println!` would.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}

mod cypher;

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of our output went away (`strata stats DB | head`): nothing to report.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            match e.downcast_ref::<ProgramError>() {
                Some(p) => eprintln!("{p}"),
                None => eprintln!("error: {e:#}"),
            }
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Ingest(args) => ingest(&args),
        Command::Retract(args) => retract(&args),
        Command::Stats { db } => {
            say!("{}", open(&db)?.stats()?.to_string().trim_end())?;
            Ok(())
        }
        Command::Check { db } => check(&db),
        Command::Query(args) => query(&args, false),
        Command::Explain(args) => query(&args, true),
        Command::Cypher(args) => cypher::cypher(&args),
        Command::Schema { db, path } => schema(&db, path.as_deref()),
        Command::Ask(args) => ask(&args),
        Command::Serve(args) => serve(&args),
        Command::AgentLine { db } => {
            let pack = strata_mcp::Pack::load(&db)?;
            let line = strata_mcp::agent_line(&pack);
            say!("{}", strata_mcp::instructions::cypher_agent_line(&line))?;
            Ok(())
        }
        Command::Demo { dir } => demo(dir),
    }
}

fn open(db: &Path) -> Result<Store> {
    Ok(Store::open(db, OpenOptions::default())?)
}

fn batch_options(args: &BatchArgs, tier: &str, replace: bool) -> Result<BatchOptions> {
    let mut labels = BTreeMap::new();
    for l in &args.labels {
        let Some((k, v)) = l.split_once('=') else {
            bail!("--label {l}: write a label as key=value, e.g. --label commit=abc123");
        };
        if k.is_empty() {
            bail!("--label {l}: the key before `=` is empty");
        }
        labels.insert(k.to_owned(), v.to_owned());
    }
    Ok(BatchOptions {
        tier: tier.to_owned(),
        replace,
        labels,
        batch_id: args.batch_id.clone(),
        ..BatchOptions::default()
    })
}

/// How to read each file: its format, and the relation of a `.facts` file.
fn dump_specs(args: &IngestArgs) -> Result<Vec<(PathBuf, DumpSpec)>> {
    let forced = match &args.format {
        Some(f) => Some(Format::parse(f).with_context(|| {
            format!("--format {f}: use one of edges, attrs, nodes, facts, jsonl")
        })?),
        None => None,
    };
    let mut specs = Vec::new();
    for path in &args.files {
        let label = path.display().to_string();
        let format = match forced.or_else(|| Format::from_path(path)) {
            Some(f) => f,
            None => bail!(
                "{label}: cannot tell the format from the name; name it *.edges.tsv, \
                 *.attrs.tsv, *.nodes.tsv, NAME.facts or *.jsonl (maybe .gz), or pass --format"
            ),
        };
        let relation = if format == Format::Facts {
            let r = args
                .relation
                .clone()
                .or_else(|| dump::facts_relation(path))
                .with_context(|| {
                    format!("{label}: a .facts dump needs a relation: name the file NAME.facts or pass --relation")
                })?;
            if !dump::valid_name(&r) {
                bail!("{label}: \"{r}\" cannot name a relation: use letters, digits, `_` and `-`");
            }
            Some(r)
        } else {
            None
        };
        specs.push((
            path.clone(),
            DumpSpec {
                label,
                format,
                relation,
                unit: args.unit.clone(),
            },
        ));
    }
    Ok(specs)
}

fn progress_bar() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn ingest(args: &IngestArgs) -> Result<()> {
    let specs = dump_specs(args)?;
    let store = match Store::open(
        &args.db,
        OpenOptions {
            create: true,
            ..OpenOptions::default()
        },
    ) {
        Ok(store) => store,
        // A running `strata serve` holds it: hand the batch to it.
        Err(in_use @ StoreError::InUse { .. }) => return ingest_via_server(args, &specs, in_use),
        Err(e) => return Err(e.into()),
    };
    // This process holds the database: a socket left there by a killed server is stale.
    #[cfg(unix)]
    strata_mcp::ingest_socket::remove_stale_socket(&args.db);
    let bar = progress_bar();
    let started = std::time::Instant::now();
    let mut batch = store.batch(BatchOptions {
        buffer_facts: args.buffer,
        ..batch_options(&args.batch, &args.tier, args.replace)?
    })?;
    {
        let bar = bar.clone();
        batch.on_progress(move |bytes, facts| {
            let secs = started.elapsed().as_secs_f64().max(1e-3);
            bar.set_message(format!(
                "{:.1} MiB read, {facts} facts ({:.0} facts/s, {:.1} MiB/s)",
                bytes as f64 / 1048576.0,
                facts as f64 / secs,
                bytes as f64 / 1048576.0 / secs
            ));
        });
    }
    for (path, spec) in &specs {
        batch.read_file(path, spec)?;
    }
    bar.set_message("committing");
    let summary = batch.commit()?;
    bar.finish_and_clear();
    report(&summary, specs.len(), "")
}

/// Sends the batch over `DB/strata.sock` to the server holding the database; without one
/// listening, answers `in_use`.
#[cfg(unix)]
fn ingest_via_server(
    args: &IngestArgs,
    specs: &[(PathBuf, DumpSpec)],
    in_use: StoreError,
) -> Result<()> {
    use strata_mcp::ingest_socket::{self, SendError};
    let options = BatchOptions {
        buffer_facts: args.buffer,
        ..batch_options(&args.batch, &args.tier, args.replace)?
    };
    match ingest_socket::send_batch(&args.db, &options, specs) {
        Ok(summary) => report(&summary, specs.len(), " (via the running server)"),
        Err(SendError::NoServer(_)) => Err(in_use.into()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(unix))]
fn ingest_via_server(
    _args: &IngestArgs,
    _specs: &[(PathBuf, DumpSpec)],
    in_use: StoreError,
) -> Result<()> {
    Err(in_use.into())
}

fn report(s: &BatchSummary, files: usize, suffix: &str) -> Result<()> {
    if s.already_committed {
        say!(
            "batch already committed as batch {}: nothing written ({} facts read){suffix}",
            s.seq,
            s.facts_read
        )?;
        return Ok(());
    }
    let rels = if s.relations.is_empty() {
        "none".to_owned()
    } else {
        s.relations.join(", ")
    };
    say!(
        "batch {}: {} facts read from {} file{}, {} new, {} duplicates, {} removed; relations: {}; \
         {:.2}s (read {:.2}s, write {:.2}s, sync {:.2}s){suffix}",
        s.seq,
        s.facts_read,
        files,
        if files == 1 { "" } else { "s" },
        s.new,
        s.duplicates,
        s.removed,
        rels,
        s.elapsed.as_secs_f64(),
        s.read_time.as_secs_f64(),
        s.write_time.as_secs_f64(),
        s.sync_time.as_secs_f64()
    )?;
    for u in &s.unknown_units {
        eprintln!("warning: unit \"{u}\" owns no facts in this database");
    }
    Ok(())
}

fn retract(args: &RetractArgs) -> Result<()> {
    let store = open(&args.db)?;
    let summary = store.retract(&args.units, batch_options(&args.batch, "default", false)?)?;
    report(&summary, 0, "")
}

fn check(db: &Path) -> Result<()> {
    let report = open(db)?.check()?;
    say!("{}", report.to_string().trim_end())?;
    if !report.ok() {
        bail!("{db}: the integrity check failed", db = db.display());
    }
    Ok(())
}

/// Parses `500ms`, `30s`, `2m`, `1h` (a bare number is seconds).
fn duration(s: &str) -> Result<Duration> {
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((s, "s"), |i| s.split_at(i));
    let n: f64 = num
        .parse()
        .with_context(|| format!("\"{s}\" is not a duration; write 500ms, 30s or 2m"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => bail!("\"{s}\" is not a duration; write 500ms, 30s or 2m"),
    };
    if !secs.is_finite() || secs <= 0.0 {
        bail!("\"{s}\" is not a positive duration");
    }
    Ok(Duration::from_secs_f64(secs))
}

fn bind_value(raw: &str) -> strata_eval::Value {
    use strata_eval::Value;
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::String(s)) => Value::Text(s),
        Ok(serde_json::Value::Number(n)) => {
            n.as_f64().map_or_else(|| Value::text(raw), Value::Number)
        }
        _ => Value::from_field(raw),
    }
}

/// Turns `--bind var=value` flags into binds: a repeated variable, or a JSON array, is a list.
fn binds(flags: &[String]) -> Result<Vec<(String, strata_eval::Bind)>> {
    use strata_eval::Bind;
    let mut out: Vec<(String, Vec<strata_eval::Value>, bool)> = Vec::new();
    for f in flags {
        let Some((var, raw)) = f.split_once('=') else {
            bail!("--bind {f}: write var=value, e.g. --bind from=app");
        };
        let var = var.trim_start_matches('?').to_owned();
        let (values, list) = match serde_json::from_str::<serde_json::Value>(raw) {
            Ok(serde_json::Value::Array(items)) => (
                items
                    .iter()
                    .map(|i| bind_value(&i.to_string()))
                    .collect::<Vec<_>>(),
                true,
            ),
            _ => (vec![bind_value(raw)], false),
        };
        match out.iter_mut().find(|(v, _, _)| *v == var) {
            Some((_, vs, l)) => {
                vs.extend(values);
                *l = true;
            }
            None => out.push((var, values, list)),
        }
    }
    Ok(out
        .into_iter()
        .map(|(var, mut vs, list)| {
            let bind = if list || vs.len() != 1 {
                Bind::List(vs)
            } else {
                Bind::One(vs.remove(0))
            };
            (var, bind)
        })
        .collect())
}

/// The vocabulary of a database: its catalog (no tier is opened) and its `modules/` folder.
fn vocabulary(store: &Store) -> Result<strata_eval::Vocabulary> {
    let snap = store.snapshot()?;
    let modules = store.dir().join("modules");
    let dir = modules.is_dir().then_some(modules.as_path());
    Ok(strata_eval::Vocabulary::load(&snap, dir)?)
}

/// A program error prints as the engine renders it, caret and fix, and exits 1.
#[derive(Debug)]
struct ProgramError(String);

impl std::fmt::Display for ProgramError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProgramError {}

fn query(args: &QueryArgs, explain: bool) -> Result<()> {
    use strata_eval::query::{Query, QueryError, RunOptions};
    let store = open(&args.db)?;
    let vocab = vocabulary(&store)?;
    let q = match Query::prepare(&vocab, &args.program, &binds(&args.binds)?) {
        Ok(q) => q,
        Err(QueryError::Program(text)) => return Err(ProgramError(text).into()),
        Err(e) => return Err(e.into()),
    };
    // BaseFor: open exactly the tiers holding the relations the program reads.
    let tiers = store.tiers_for(q.base_relations())?;
    let tiers: Vec<&str> = tiers.iter().map(String::as_str).collect();
    let snap = store.snapshot_with_tiers(&tiers)?;
    let offset = match &args.page_token {
        Some(t) => t.parse().with_context(|| {
            format!("--page-token {t}: a page token is the number the last page gave")
        })?,
        None => 0,
    };
    let mut options = RunOptions {
        offset,
        limit: args.sample.map_or(args.limit, |s| s.min(args.limit)),
        why: args.sample.is_some(),
        ..RunOptions::default()
    };
    options.engine.witnesses = !args.no_witnesses;
    options.engine.max_work = args.max_work;
    options.engine.timeout = Some(duration(&args.timeout)?);
    if let Some(t) = args.threads {
        options.engine.threads = t.max(1);
    }
    if explain {
        let mut report = q.explain(&snap, &options)?;
        report.tiers = store.opened_tiers();
        if args.json {
            let mut j = report.json();
            j["snapshot"] = serde_json::json!({ "seq": snap.seq() });
            say!("{}", serde_json::to_string_pretty(&j)?)?;
        } else {
            say!("{}", report.text())?;
        }
        return Ok(());
    }
    let out = q.run(&snap, &options)?;
    if args.json {
        let mut j = out.answer.json();
        let last = snap.last_batch();
        j["snapshot"] = serde_json::json!({
            "seq": snap.seq(),
            "labels": last.map(|b| b.labels.clone()).unwrap_or_default(),
        });
        j["work"] = out.work.into();
        j["tiers"] = serde_json::json!(store.opened_tiers());
        if let Some(why) = &out.why {
            j["why"] = format!("{why} matched nothing").into();
        }
        say!("{}", serde_json::to_string_pretty(&j)?)?;
    } else {
        say!("{}", out.answer.text())?;
        if let Some(why) = &out.why {
            say!("why: {why} matched nothing")?;
        }
    }
    Ok(())
}

fn schema(db: &Path, path: Option<&str>) -> Result<()> {
    let store = open(db)?;
    let vocab = vocabulary(&store)?;
    let text = match path {
        None => strata_eval::schema::card(&vocab),
        Some("cypher") if strata_eval::schema::describe(&vocab, "cypher").is_none() => {
            let pack = strata_mcp::Pack::load(db)?;
            strata_eval::cypher::Graph::derive(&vocab, &pack.cypher.mapping())
                .map_err(ProgramError)?
                .describe()
        }
        Some(p) => strata_eval::schema::describe(&vocab, p).with_context(|| {
            format!("schema: nothing is named \"{p}\"; run `strata schema DB` for every relation and module")
        })?,
    };
    say!("{text}")?;
    Ok(())
}

/// A server's limits and models from the flags.
fn server_options(
    limit: u64,
    max_work: Option<u64>,
    timeout: &str,
    models: &ModelArgs,
) -> Result<strata_mcp::Options> {
    Ok(strata_mcp::Options {
        limit: limit.max(1),
        max_work,
        timeout: duration(timeout)?,
        threads: None,
        ask: models.options()?,
    })
}

/// `strata ask`: the `ask` tool of a server over the database, called once.
fn ask(args: &AskArgs) -> Result<()> {
    let options = server_options(args.limit, args.max_work, &args.timeout, &args.models)?;
    let server = strata_mcp::Server::open(&args.db, options)?;
    let mut call = serde_json::json!({
        "question": args.question,
        "mode": args.mode,
        "json": args.json,
    });
    if let Some(language) = &args.language {
        call["language"] = language.as_str().into();
    }
    let out = server
        .call(
            strata_mcp::ask::TOOL,
            call.as_object().cloned(),
            &strata_eval::budget::Cancel::new(),
        )
        .context("this build has no ask tool")?;
    if out.is_error {
        return Err(ProgramError(out.text).into());
    }
    say!("{}", out.text)?;
    Ok(())
}

fn serve(args: &ServeArgs) -> Result<()> {
    let options = server_options(args.limit, args.max_work, &args.timeout, &args.models)?;
    let token = match &args.token_file {
        Some(f) => {
            let t = std::fs::read_to_string(f)
                .with_context(|| format!("--token-file {}: cannot read it", f.display()))?;
            let t = t.trim().to_owned();
            if t.is_empty() {
                bail!("--token-file {}: the file is empty", f.display());
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
            // Refuse a bad bind before opening the database.
            o.validate()?;
            Some(o)
        }
        None => None,
    };
    let server = strata_mcp::Server::open(&args.db, options)?;
    // Read the dictionary for `find` (and `ask`'s grounding) before the first call needs it.
    {
        let server = server.clone();
        std::thread::spawn(move || {
            if let Err(e) = server.warm_find() {
                eprintln!("strata: warning: {e}");
            }
        });
    }
    // `strata ingest DB` hands its batches over DB/strata.sock while this runs.
    #[cfg(unix)]
    let _socket = match strata_mcp::ingest_socket::IngestListener::bind(server.store().clone()) {
        Ok(l) => Some(l),
        Err(e) => {
            eprintln!(
                "strata: warning: cannot listen on {} ({e}); `strata ingest` cannot reach this \
                 server",
                strata_mcp::ingest_socket::socket_path(&args.db).display()
            );
            None
        }
    };
    match http {
        Some(o) => strata_mcp::run_http(server, o)?,
        None => {
            eprintln!("strata: serving {} over stdio", args.db.display());
            strata_mcp::run_stdio(server)?;
        }
    }
    Ok(())
}

fn demo(dir: Option<PathBuf>) -> Result<()> {
    let dir = dir.unwrap_or_else(|| std::env::temp_dir().join("strata-demo"));
    if dir.join(strata_store::layout::BASE_FILE).exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot clear the old demo database {}", dir.display()))?;
    }
    let files = strata_fixtures::example::write_example(&dir)
        .with_context(|| format!("cannot write the example into {}", dir.display()))?;
    let args = IngestArgs {
        db: dir.clone(),
        files,
        tier: "default".to_owned(),
        format: None,
        relation: None,
        unit: None,
        replace: false,
        buffer: strata_store::BUFFER_FACTS,
        batch: BatchArgs {
            labels: vec!["source=strata-demo".to_owned()],
            batch_id: None,
        },
    };
    say!("$ strata ingest {} <the example's dumps>", dir.display())?;
    ingest(&args)?;
    say!("\n$ strata stats {}", dir.display())?;
    say!("{}", open(&dir)?.stats()?.to_string().trim_end())?;
    say!("\n$ strata check {}", dir.display())?;
    check(&dir)?;
    let program = r#"deps.depends_on("app", ?d) => ?d"#;
    say!("\n$ strata query {} '{program}' --limit 2", dir.display())?;
    query(
        &QueryArgs {
            db: dir.clone(),
            program: program.to_owned(),
            binds: Vec::new(),
            limit: 2,
            page_token: None,
            max_work: None,
            timeout: "30s".to_owned(),
            json: false,
            no_witnesses: false,
            threads: None,
            sample: None,
        },
        false,
    )?;
    say!("\n$ strata schema {} deps", dir.display())?;
    schema(&dir, Some("deps"))
}
