//! `strata`: the command line, thin over the application core (`strata-app`), through which
//! alone it reaches the store (`cli/tests/layering.rs`): it parses the flags into the application's typed requests, chooses the text or JSON
//! rendering of the responses, and sets the exit code. `serve` hands the application to
//! the MCP server (`strata-mcp`).
//!
//! This file holds the commands' table and what they share; each command lives in a module
//! of its own: `batch` (ingest, retract), `query` (query, explain, schema), `cypher`,
//! `lookup` (find, look, values), `ask`, `serve` and `demo`. Every reader (`ask` too) goes
//! through [`strata_app::read`], which answers directly or through the server holding the
//! database; while a server holds it, `ingest` and `retract` hand their batch to it.

// The argument structs' doc comments are clap's help texts, written for a terminal:
// brackets (`[:IMPORTS]`, `[:port]`) and URLs in them are not rustdoc links.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::bare_urls)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

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
    /// Build or drop the column indexes of stored relations, as one atomic batch:
    /// `strata index DB e=c1,c2` builds the postings of `e`'s second column from its stored
    /// rows; `strata index DB e=c1` drops them.
    Index(IndexArgs),
    /// Show the relations, their sizes and the bytes on disk per tier.
    Stats {
        /// The database directory.
        db: PathBuf,
        /// Also show where the bytes go: each file's tables, and bytes per fact (opens
        /// every tier file).
        #[arg(long)]
        space: bool,
    },
    /// Give back the disk pages earlier batches freed (retractions, replaced units) or left
    /// half empty (chunks rewritten by later batches): each table is rewritten packed and
    /// each file without the free pages. Needs the database to itself (stop `strata
    /// serve`).
    Compact {
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
    /// What a name may stand for: ranked matches of a partial or misspelled name among the
    /// stored values, with the relations and columns each appears in (the MCP tool `find`).
    Find(lookup::FindArgs),
    /// Describe a relation or module: its schema, and for a stored relation its size and
    /// a few facts (the MCP tool `look`).
    Look(lookup::LookArgs),
    /// The distinct values of one argument of a relation (the MCP tool `values`).
    Values(lookup::ValuesArgs),
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
    Serve(Box<ServeArgs>),
    /// Print the line for an agent's own instructions (a CLAUDE.md) saying when to use
    /// this database's MCP server, written from its pack (`strata.toml`).
    AgentLine {
        /// The database directory.
        db: PathBuf,
        /// The name the client registered the server under (`claude mcp add NAME ...`).
        #[arg(long, default_value = "strata")]
        name: String,
    },
    /// Keep a database fresh after every commit: a git post-commit hook that re-indexes
    /// the repository and ingests the SCIP index, labelled with the commit.
    Hook {
        #[command(subcommand)]
        command: hook::HookCommand,
    },
    /// Build the bundled example database (the seed's four Go packages) and show it.
    Demo {
        /// Where to build it (default: a `strata-demo` folder in the system's temp directory).
        dir: Option<PathBuf>,
    },
}

/// Writes a line to standard output, returning the error (a closed pipe, say) instead of
/// panicking as `println!` would.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}

mod ask;
mod batch;
mod cypher;
mod demo;
mod hook;
mod lookup;
mod query;
mod serve;

use ask::AskArgs;
use batch::{IndexArgs, IngestArgs, RetractArgs};
use query::QueryArgs;
use serve::ServeArgs;

fn main() -> ExitCode {
    // redb panics on some damaged pages; the store turns those into errors, which are what
    // the user sees.
    strata_app::quiet_caught_panics();
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
                None => eprintln!("error: {}", error_text(&e)),
            }
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Ingest(args) => batch::ingest(&args),
        Command::Retract(args) => batch::retract(&args),
        Command::Index(args) => batch::index(&args),
        Command::Stats { db, space } => stats(&db, space),
        Command::Compact { db } => {
            let compacted = match strata_app::maintain::compact(&db) {
                Err(e) if e.in_use() => {
                    return Err(held_alone(&db, e, "compact", "rewrites every file"));
                }
                r => r?,
            };
            for c in compacted {
                say!(
                    "{}: {} bytes before, {} after ({} given back)",
                    c.path.display(),
                    c.before,
                    c.after,
                    c.before.saturating_sub(c.after)
                )?;
            }
            Ok(())
        }
        Command::Check { db } => check(&db),
        Command::Query(args) => query::query(&args, false),
        Command::Explain(args) => query::query(&args, true),
        Command::Cypher(args) => cypher::cypher(&args),
        Command::Schema { db, path } => query::schema(&db, path.as_deref()),
        Command::Find(args) => lookup::find(&args),
        Command::Look(args) => lookup::look(&args),
        Command::Values(args) => lookup::values(&args),
        Command::Ask(args) => ask::ask(&args),
        Command::Serve(args) => serve::serve(&args),
        Command::AgentLine { db, name } => {
            let pack = strata_app::Pack::load(&db)?;
            // The line names the pack's server; the agent knows it by the registered name.
            let line = strata_app::instructions::agent_line(&pack).replacen(
                &format!("use the {} MCP server", pack.server_name()),
                &format!("use the {name} MCP server"),
                1,
            );
            say!("{}", strata_app::instructions::cypher_agent_line(&line))?;
            Ok(())
        }
        Command::Hook { command } => hook::hook(&command),
        Command::Demo { dir } => demo::demo(dir),
    }
}

/// Answers `request` over the database in `db` (directly, or through the server holding
/// it) and prints it; what `--max-bytes` cut is said on standard error too.
fn read(db: &Path, request: &strata_app::read::Read) -> Result<()> {
    let reading = request.answer(db).map_err(|e| {
        if e.is_program() {
            anyhow::Error::from(ProgramError(e.to_string()))
        } else {
            e.into()
        }
    })?;
    say!("{}", reading.text)?;
    if let Some(cut) = &reading.cut {
        eprintln!("strata: {cut}");
    }
    Ok(())
}

/// `strata stats` (with `--space`, where the bytes go).
fn stats(db: &Path, space: bool) -> Result<()> {
    let request = strata_app::read::Read {
        what: strata_app::read::What::Stats { space },
        json: false,
        limits: strata_app::read::Limits::default(),
    };
    read(db, &request)
}

/// `strata check`: it verifies every page of every file, which needs the database to
/// itself, so it is never sent to a server holding it: that is said, with the server.
fn check(db: &Path) -> Result<()> {
    let report = match strata_app::maintain::check(db) {
        Err(e) if e.in_use() => {
            return Err(held_alone(
                db,
                e,
                "check",
                "verifies every page of every file",
            ));
        }
        r => r?,
    };
    say!("{}", report.text)?;
    if !report.ok {
        bail!("{db}: the integrity check failed", db = db.display());
    }
    Ok(())
}

/// The error `strata COMMAND` (`check`, `compact`: it `does` something that needs the
/// database to itself) gives while another process holds the database: when that is
/// strata's server, it says so, and that the command is not sent to it.
fn held_alone(
    db: &Path,
    e: strata_app::maintain::MaintainError,
    command: &str,
    does: &str,
) -> anyhow::Error {
    #[cfg(unix)]
    if strata_app::ingest_socket::server_listens(db) {
        let pid =
            strata_mcp::serve::serving_pid(db).map_or_else(String::new, |p| format!(" (pid {p})"));
        return anyhow::anyhow!(
            "{e}. It is strata's server of this database{pid}: `strata {command}` {does}, \
             which needs the database to itself, so unlike the readers it is not sent to the \
             server. Stop the server (one a --stdio client started exits by itself \
             --idle-exit after its last client left), then run it again"
        );
    }
    e.into()
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

/// An error and its sources, joined with `: `, each source once, as the core joins a
/// server's errors ([`strata_app::read::error_text`]).
fn error_text(e: &anyhow::Error) -> String {
    strata_app::read::error_text(e.as_ref())
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
