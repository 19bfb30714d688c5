//! `strata ingest` and `strata retract`: the commands that write a batch (dump files read
//! into one, or the facts of named units removed in one), with its labels and id, and the
//! summary each prints. While a server holds the database, `ingest` hands its batch to it.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use strata_store::dump::{self, DumpSpec, Format};
use strata_store::{BatchOptions, BatchSummary, OpenError, OpenOptions, Store};

use super::open;

#[derive(Args)]
pub(crate) struct BatchArgs {
    /// A label recorded with the batch, as key=value (repeatable): `--label commit=abc123`.
    #[arg(long = "label", value_name = "K=V")]
    pub(crate) labels: Vec<String>,
    /// An id for the batch: a batch whose id was committed before is skipped, so a retry
    /// after a failure is safe.
    #[arg(long)]
    pub(crate) batch_id: Option<String>,
}

#[derive(Args)]
pub(crate) struct IngestArgs {
    /// The database directory.
    pub(crate) db: PathBuf,
    /// Dump files (`-` for standard input); the format comes from each name
    /// (`*.edges.tsv`, `*.attrs.tsv`, `*.nodes.tsv`, `NAME.facts`, `*.jsonl`, each maybe `.gz`).
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// The tier new relations go to; a tier other than `default` is a file of its own,
    /// opened only by queries that read its relations.
    #[arg(long, default_value = "default")]
    pub(crate) tier: String,
    /// The format of every file, overriding their names: edges, attrs, nodes, facts, jsonl.
    #[arg(long)]
    pub(crate) format: Option<String>,
    /// For `--format facts` on standard input: the relation the lines belong to.
    #[arg(long)]
    pub(crate) relation: Option<String>,
    /// The unit that owns every fact that names none itself.
    #[arg(long)]
    pub(crate) unit: Option<String>,
    /// Replace, in the same batch, every stored fact of each unit the batch names.
    #[arg(long)]
    pub(crate) replace: bool,
    /// Facts gathered in memory before they are written into the batch's (uncommitted)
    /// transaction: bounds the memory of a large ingest.
    #[arg(long, default_value_t = strata_store::BUFFER_FACTS)]
    pub(crate) buffer: usize,
    #[command(flatten)]
    pub(crate) batch: BatchArgs,
}

#[derive(Args)]
pub(crate) struct RetractArgs {
    /// The database directory.
    pub(crate) db: PathBuf,
    /// A unit whose facts to remove (repeatable).
    #[arg(long = "unit", required = true)]
    pub(crate) units: Vec<String>,
    #[command(flatten)]
    pub(crate) batch: BatchArgs,
}

pub(crate) fn batch_options(args: &BatchArgs, tier: &str, replace: bool) -> Result<BatchOptions> {
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
pub(crate) fn dump_specs(args: &IngestArgs) -> Result<Vec<(PathBuf, DumpSpec)>> {
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

pub(crate) fn progress_bar() -> ProgressBar {
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

pub(crate) fn ingest(args: &IngestArgs) -> Result<()> {
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
        Err(in_use @ OpenError::InUse { .. }) => return ingest_via_server(args, &specs, in_use),
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
pub(crate) fn ingest_via_server(
    args: &IngestArgs,
    specs: &[(PathBuf, DumpSpec)],
    in_use: OpenError,
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
pub(crate) fn ingest_via_server(
    _args: &IngestArgs,
    _specs: &[(PathBuf, DumpSpec)],
    in_use: OpenError,
) -> Result<()> {
    Err(in_use.into())
}

pub(crate) fn report(s: &BatchSummary, files: usize, suffix: &str) -> Result<()> {
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

pub(crate) fn retract(args: &RetractArgs) -> Result<()> {
    let store = open(&args.db)?;
    let summary = store.retract(&args.units, batch_options(&args.batch, "default", false)?)?;
    report(&summary, 0, "")
}
