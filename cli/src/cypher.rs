//! `strata cypher DB QUERY`: a Cypher read query compiled to a program over the graph the
//! dumps and the pack's `[cypher]` give, run as `strata query` runs a program.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use strata_app::read::{Read, What};

use super::query::RunFlags;
use super::read;

#[derive(Args)]
pub(crate) struct CypherArgs {
    /// The database directory.
    db: PathBuf,
    /// The query, e.g. 'MATCH (p:Package)-[:IMPORTS]->(:Package {name: $to}) RETURN p.name'.
    query: String,
    /// Give a $parameter a value, as name=value (repeat a name, or give a JSON array, for a
    /// list). A value that reads as JSON (42, "42") is taken as such; anything else is text.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// Answer as JSON: the Cypher text, the program, columns, rows, witnesses, total, next.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    run: RunFlags,
}

pub(crate) fn cypher(args: &CypherArgs) -> Result<()> {
    let what = What::Cypher {
        query: args.query.clone(),
        params: args.params.clone(),
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
