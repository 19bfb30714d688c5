//! `strata query`, `strata explain` and `strata schema`: a program run over the database
//! (its rows with witnesses, or where its work went), and the relations and modules a
//! program may use; with the `--bind` flags and the database's vocabulary they share.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use strata_app::read::{Limits, Read, What};

use super::{duration, read};

#[derive(Args)]
pub(crate) struct QueryArgs {
    /// The database directory.
    pub(crate) db: PathBuf,
    /// The program, e.g. 'deps.depends_on("app", ?d) => ?d'.
    pub(crate) program: String,
    /// Give a variable a value, as var=value (repeat a variable for a list of values). A
    /// value that reads as JSON (42, "42", ["a","b"]) is taken as such; anything else is text.
    #[arg(long = "bind", value_name = "VAR=VALUE")]
    pub(crate) binds: Vec<String>,
    /// Answer as JSON: columns, rows, witnesses, total, next page token, snapshot.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) run: RunFlags,
}

/// The limits an evaluation runs under, for `strata query`, `explain`, `cypher` and `serve`
/// alike (for `serve`, each call's: a call may ask for less).
#[derive(Args)]
pub(crate) struct LimitFlags {
    /// The most rows to answer, from 1 (serve: a call may ask for fewer).
    #[arg(long, default_value_t = 100)]
    pub(crate) limit: u64,
    /// The most work (candidate tuples examined) an evaluation may spend (serve: a call
    /// may ask for less).
    #[arg(long)]
    pub(crate) max_work: Option<u64>,
    /// The longest an evaluation (serve: a call) may take: 500ms, 30s, 2m.
    #[arg(long, default_value = "30s")]
    pub(crate) timeout: String,
}

impl LimitFlags {
    /// The read's limits these flags set (rows, work, time); the rest as by default.
    pub(crate) fn limits(&self) -> Result<Limits> {
        Ok(Limits {
            limit: self.limit,
            max_work: self.max_work,
            timeout: duration(&self.timeout)?,
            ..Limits::default()
        })
    }
}

/// The flags `strata query`, `explain` and `cypher` share: the page and the evaluation's
/// limits.
#[derive(Args)]
pub(crate) struct RunFlags {
    #[command(flatten)]
    pub(crate) limits: LimitFlags,
    /// Continue from this page token (the one the last page ended with).
    #[arg(long)]
    pub(crate) page_token: Option<String>,
    /// The most bytes of the answer, text or JSON (at least 1024): rows past it are left
    /// out, said so (on standard error too), with the page token to go on. Without it, the
    /// whole page is printed, up to --limit rows.
    #[arg(long, value_name = "N")]
    pub(crate) max_bytes: Option<u64>,
    /// Answer just this row (numbered from 1, as the answer numbers them) with its whole
    /// witness, which a page bounds to 64 facts.
    #[arg(long, value_name = "N")]
    pub(crate) witness_row: Option<u64>,
    /// Leave out the witnesses (faster on large answers).
    #[arg(long)]
    pub(crate) no_witnesses: bool,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    pub(crate) threads: Option<usize>,
    /// A try: answer at most this many rows, and when none come back, say which literal
    /// matched nothing.
    #[arg(long)]
    pub(crate) sample: Option<u64>,
    /// The most memory the evaluation may hold (its relations, indexes and witnesses):
    /// bytes, or a size with a binary unit, 512M, 2G. Past it the run stops with an error
    /// saying where the memory went. Default: a third of what the memory available and the
    /// process's limits (RLIMIT_AS, cgroup) allow, less room for the process.
    #[arg(long, value_name = "SIZE")]
    pub(crate) max_memory: Option<strata_eval::ByteSize>,
    /// The store's page cache: bytes, or a size with a binary unit, 64M, 1G. It holds the
    /// pages read most lately, on top of the evaluation's memory. Default: a sixteenth of
    /// the database's file, from 8M to 64M.
    #[arg(long, value_name = "SIZE")]
    pub(crate) cache: Option<strata_eval::ByteSize>,
    /// Show N lines of source either side of each site the answer cites (path:line), read
    /// from the repository's checkout while the file is as it was at ingest (0 to 20).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) context: u32,
}

impl RunFlags {
    /// The limits these flags set, for a read.
    pub(crate) fn limits(&self) -> Result<Limits> {
        Ok(Limits {
            page_token: self.page_token.clone().unwrap_or_default(),
            max_bytes: self.max_bytes,
            witness_row: self.witness_row,
            witnesses: !self.no_witnesses,
            threads: self.threads,
            sample: self.sample.unwrap_or(0),
            max_memory: self.max_memory.map(|s| s.0),
            cache_bytes: cache_bytes(self.cache),
            context: self.context,
            ..self.limits.limits()?
        })
    }
}

/// The page cache `--cache` asks for; `None`, the store's default (sized by the file).
pub(crate) fn cache_bytes(cache: Option<strata_eval::ByteSize>) -> Option<usize> {
    cache.map(|s| usize::try_from(s.0).unwrap_or(usize::MAX))
}

pub(crate) fn query(args: &QueryArgs, explain: bool) -> Result<()> {
    let what = if explain {
        What::Explain {
            program: args.program.clone(),
            binds: args.binds.clone(),
        }
    } else {
        What::Query {
            program: args.program.clone(),
            binds: args.binds.clone(),
        }
    };
    read(
        &args.db,
        &Read {
            what,
            json: args.json,
            limits: args.run.limits()?,
        },
    )
}

pub(crate) fn schema(db: &Path, path: Option<&str>) -> Result<()> {
    let what = What::Schema {
        path: path.unwrap_or_default().to_owned(),
    };
    read(
        db,
        &Read {
            what,
            json: false,
            limits: Limits::default(),
        },
    )
}
