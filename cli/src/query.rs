//! `strata query`, `strata explain` and `strata schema`: a program run over the database
//! (its rows with witnesses, or where its work went), and the relations and modules a
//! program may use; with the `--bind` flags and the database's vocabulary they share.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use strata_app::{
    App, Call, ExplainRequest, Options, Page, QueryRequest, SchemaRequest, binds_from_flags,
};
use strata_eval::Cancel;

use super::{duration, print, program_error};

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

/// The flags `strata query`, `explain` and `cypher` share: the page and the evaluation's
/// limits.
#[derive(Args)]
pub(crate) struct RunFlags {
    /// The most rows to answer, from 1.
    #[arg(long, default_value_t = 100)]
    pub(crate) limit: u64,
    /// Continue from this page token (the one the last page ended with).
    #[arg(long)]
    pub(crate) page_token: Option<String>,
    /// The most bytes of the answer, text or JSON: rows past it are left out, said so, with
    /// the page token to go on.
    #[arg(long, default_value_t = strata_eval::ANSWER_BYTES)]
    pub(crate) max_bytes: u64,
    /// Answer just this row (numbered from 1, as the answer numbers them) with its whole
    /// witness, which a page bounds to 64 facts.
    #[arg(long, value_name = "N")]
    pub(crate) witness_row: Option<u64>,
    /// The most work (candidate tuples examined) the evaluation may spend.
    #[arg(long)]
    pub(crate) max_work: Option<u64>,
    /// The longest the evaluation may take: 500ms, 30s, 2m.
    #[arg(long, default_value = "30s")]
    pub(crate) timeout: String,
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
    /// saying where the memory went. Default: half the memory available when it starts.
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
    /// The application over `db` with these flags' limits.
    pub(crate) fn app(&self, db: &Path) -> Result<App> {
        // The row limit is the page's, refused in the core when 0 as a server refuses it;
        // the application's is the default or above.
        let options = Options {
            limit: self.limit.max(Options::default().limit),
            max_work: self.max_work,
            timeout: duration(&self.timeout)?,
            threads: self.threads,
            max_bytes: self.max_bytes,
            max_memory: Some(
                self.max_memory
                    .map_or_else(|| strata_app::default_max_memory(1), |s| s.0),
            ),
            cache_bytes: cache_bytes(self.cache),
            ..Options::default()
        };
        Ok(App::open(db, options)?)
    }

    /// The page these flags ask for (the work cap and the byte budget are the
    /// application's).
    pub(crate) fn page(&self) -> Page {
        Page {
            limit: Some(self.limit),
            max_work: 0,
            page_token: self.page_token.clone().unwrap_or_default(),
            sample: self.sample.unwrap_or(0),
            witnesses: !self.no_witnesses,
            max_bytes: None,
            witness_row: self.witness_row,
            max_memory: None,
            context: self.context,
        }
    }
}

/// The page cache `--cache` asks for; `None`, the store's default (sized by the file).
pub(crate) fn cache_bytes(cache: Option<strata_eval::ByteSize>) -> Option<usize> {
    cache.map(|s| usize::try_from(s.0).unwrap_or(usize::MAX))
}

pub(crate) fn query(args: &QueryArgs, explain: bool) -> Result<()> {
    let app = args.run.app(&args.db)?;
    let command = if explain { "explain" } else { "query" };
    let binds = binds_from_flags(command, "--bind", &args.binds)?;
    let call = Call::plain(command);
    if explain {
        let request = ExplainRequest {
            program: args.program.clone(),
            binds,
            max_work: 0,
            max_memory: None,
        };
        let report = app
            .explain(&call, &request, &Cancel::new())
            .map_err(program_error)?;
        return print(&report, args.json);
    }
    let request = QueryRequest {
        program: args.program.clone(),
        binds,
        page: args.run.page(),
    };
    let out = app
        .query(&call, &request, &Cancel::new())
        .map_err(program_error)?;
    print(&out, args.json)
}

pub(crate) fn schema(db: &Path, path: Option<&str>) -> Result<()> {
    let app = App::open(db, Options::default())?;
    let request = SchemaRequest {
        path: path.unwrap_or_default().to_owned(),
    };
    let out = app
        .schema(&Call::plain("schema"), &request)
        .map_err(program_error)?;
    print(&out, false)
}
