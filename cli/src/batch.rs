//! `strata ingest`, `strata retract` and `strata index`: the commands that write a batch
//! (dump files read into one, the facts of named units removed in one, or stored relations'
//! indexes built or dropped in one), with its labels and id, and the summary each prints. While a server holds the database, the core hands the batch to it.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use strata_app::BatchOptions;
use strata_app::code_pack::CodePack;
use strata_app::ingest::{self, DumpFiles, Ingested};

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
    /// (`*.edges.tsv`, `*.attrs.tsv`, `*.nodes.tsv`, `NAME.facts`, `*.jsonl`, `*.scip`, each
    /// maybe `.gz`).
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// The tier new relations go to; a tier other than `default` is a file of its own,
    /// opened only by queries that read its relations.
    #[arg(long, default_value = "default")]
    pub(crate) tier: String,
    /// The format of every file, overriding their names: edges, attrs, nodes, facts, jsonl, scip.
    #[arg(long)]
    pub(crate) format: Option<String>,
    /// For `--format facts` on standard input: the relation the lines belong to.
    #[arg(long)]
    pub(crate) relation: Option<String>,
    /// The unit that owns every fact that names none itself. For a SCIP index: the
    /// repository, as --repo (which wins when both are given).
    #[arg(long)]
    pub(crate) unit: Option<String>,
    /// For SCIP indexes: the repository their documents belong to (paths and units are
    /// REPO/relative_path); by default the last segment of the index's project_root.
    #[arg(long, value_name = "NAME")]
    pub(crate) repo: Option<String>,
    /// For SCIP indexes: the directory the repository is checked out in, whose source files
    /// are hashed so that answers can show their lines (--context); by default the index's
    /// project_root when it is a local file:// directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) checkout: Option<PathBuf>,
    /// Replace, in the same batch, every stored fact of each unit the batch names.
    #[arg(long)]
    pub(crate) replace: bool,
    /// With --replace: let a SCIP index that holds no document retract every stored
    /// document of its repository (refused without it, so that an indexer that wrote
    /// nothing never wipes a repository).
    #[arg(long, requires = "replace")]
    pub(crate) allow_empty: bool,
    /// Facts gathered in memory before they are written into the batch's (uncommitted)
    /// transaction: bounds the memory of a large ingest.
    #[arg(long, default_value_t = strata_app::BUFFER_FACTS)]
    pub(crate) buffer: usize,
    /// Index only some columns of a relation, as REL=COL,COL (repeatable): the relation's
    /// first column and those named get postings, the rest none (a smaller file and a faster
    /// ingest; a query binding only those columns reads the relation whole). `--index
    /// e=src` for `e(src, dst)`. For a stored relation, the batch builds or drops postings
    /// to match, as `strata index` does.
    #[arg(long = "index", value_name = "REL=COLS")]
    pub(crate) indexes: Vec<String>,
    #[command(flatten)]
    pub(crate) batch: BatchArgs,
}

#[derive(Args)]
pub(crate) struct IndexArgs {
    /// The database directory.
    pub(crate) db: PathBuf,
    /// A stored relation and the columns to index, as REL=COL,COL (repeatable): its first
    /// column and those named get postings (built from the stored rows where missing), its
    /// other columns none (dropped where stored). `e=c1,c2` for `e(c1, c2)`.
    #[arg(required = true, value_name = "REL=COLS")]
    pub(crate) indexes: Vec<String>,
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

/// `REL=COL,COL` arguments (of `--index`, named `flag`, or of `strata index`, when `flag`
/// is empty), by relation (the columns of a relation named twice are joined).
fn declared_indexes(args: &[String], flag: &str) -> Result<BTreeMap<String, Vec<String>>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let flag = if flag.is_empty() {
        String::new()
    } else {
        format!("{flag} ")
    };
    for a in args {
        let Some((rel, cols)) = a.split_once('=') else {
            bail!("{flag}{a}: write it as REL=COL,COL, e.g. {flag}e=src");
        };
        let cols: Vec<String> = cols
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect();
        if rel.is_empty() || cols.is_empty() {
            bail!("{flag}{a}: name the relation and at least its first column, e.g. {flag}e=src");
        }
        let entry = out.entry(rel.to_owned()).or_default();
        for c in cols {
            if !entry.contains(&c) {
                entry.push(c);
            }
        }
    }
    Ok(out)
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
    let specs = ingest::dump_specs(&DumpFiles {
        files: args.files.clone(),
        format: args.format.clone(),
        relation: args.relation.clone(),
        unit: args.unit.clone(),
        repo: args.repo.clone(),
        checkout: args.checkout.clone(),
    })?;
    let options = BatchOptions {
        buffer_facts: args.buffer,
        allow_empty: args.allow_empty,
        indexes: declared_indexes(&args.indexes, "--index")?,
        ..batch_options(&args.batch, &args.tier, args.replace)?
    };
    let bar = progress_bar();
    let started = std::time::Instant::now();
    let shown = bar.clone();
    let progress = move |bytes: u64, facts: u64| {
        let secs = started.elapsed().as_secs_f64().max(1e-3);
        shown.set_message(format!(
            "{:.1} MiB read, {facts} facts ({:.0} facts/s, {:.1} MiB/s)",
            bytes as f64 / 1048576.0,
            facts as f64 / secs,
            bytes as f64 / 1048576.0 / secs
        ));
    };
    let committing = || bar.set_message("committing");
    let done = ingest::ingest(&args.db, &specs, options, progress, committing)?;
    bar.finish_and_clear();
    report(&done)
}

pub(crate) fn report(done: &Ingested) -> Result<()> {
    say!("{}", done.text())?;
    if let CodePack::Failed(e) = &done.code_pack {
        eprintln!("warning: {e}");
    }
    for u in &done.summary.unknown_units {
        eprintln!("warning: unit \"{u}\" owns no facts in this database");
    }
    Ok(())
}

pub(crate) fn index(args: &IndexArgs) -> Result<()> {
    let options = BatchOptions {
        indexes: declared_indexes(&args.indexes, "")?,
        ..batch_options(&args.batch, "default", false)?
    };
    let done = ingest::reindex(&args.db, options)?;
    if done.summary.indexes.is_empty() && !done.summary.already_committed {
        say!(
            "batch {}: every relation named is indexed as declared already; nothing built or \
             dropped",
            done.summary.seq
        )?;
        return Ok(());
    }
    report(&done)
}

pub(crate) fn retract(args: &RetractArgs) -> Result<()> {
    let options = batch_options(&args.batch, "default", false)?;
    report(&ingest::retract(&args.db, &args.units, options)?)
}
