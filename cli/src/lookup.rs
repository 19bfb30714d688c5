//! `strata find`, `strata look` and `strata values`: the MCP tools of the same names, with
//! their arguments as flags and their answers, read directly or through the server
//! holding the database.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use strata_app::read::{Limits, Read, What};

use super::read;

/// What the three share: the rendering and the byte budget.
#[derive(Args)]
pub(crate) struct LookupFlags {
    /// Answer as JSON.
    #[arg(long)]
    json: bool,
    /// The most bytes of the answer, text or JSON (at least 1024): long lines are clipped,
    /// then the last left out, said so (on standard error too). Without it, the whole
    /// answer is printed.
    #[arg(long, value_name = "N")]
    max_bytes: Option<u64>,
}

#[derive(Args)]
pub(crate) struct FindArgs {
    /// The database directory.
    db: PathBuf,
    /// The name to ground: partial, misspelled or in words (`parse args`, `the parser`).
    name: String,
    /// The most matches to answer (0: 10).
    #[arg(long, default_value_t = 0)]
    limit: u64,
    #[command(flatten)]
    flags: LookupFlags,
}

#[derive(Args)]
pub(crate) struct LookArgs {
    /// The database directory.
    db: PathBuf,
    /// A relation (`pkg`, `deps.depends_on`) or module (`deps`) to describe.
    target: String,
    #[command(flatten)]
    flags: LookupFlags,
}

#[derive(Args)]
pub(crate) struct ValuesArgs {
    /// The database directory.
    db: PathBuf,
    /// The argument to list: `relation.column` (`pkg.license`) or `relation.N`, N counting
    /// from 1 (`imports.2`).
    target: String,
    /// The most values to answer (0: 20).
    #[arg(long, default_value_t = 0)]
    limit: u64,
    #[command(flatten)]
    flags: LookupFlags,
}

fn lookup(db: &std::path::Path, what: What, limit: u64, flags: &LookupFlags) -> Result<()> {
    let limits = Limits {
        limit,
        max_bytes: flags.max_bytes,
        ..Limits::default()
    };
    read(
        db,
        &Read {
            what,
            json: flags.json,
            limits,
        },
    )
}

pub(crate) fn find(args: &FindArgs) -> Result<()> {
    let what = What::Find {
        name: args.name.clone(),
    };
    lookup(&args.db, what, args.limit, &args.flags)
}

pub(crate) fn look(args: &LookArgs) -> Result<()> {
    let what = What::Look {
        target: args.target.clone(),
    };
    lookup(&args.db, what, 0, &args.flags)
}

pub(crate) fn values(args: &ValuesArgs) -> Result<()> {
    let what = What::Values {
        target: args.target.clone(),
    };
    lookup(&args.db, what, args.limit, &args.flags)
}
