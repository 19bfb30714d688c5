//! `strata cypher DB QUERY`: a Cypher read query compiled to a program over the graph the
//! dumps and the pack's `[cypher]` give, run as `strata query` runs a program.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use strata_app::{Call, CypherRequest, binds_from_flags};
use strata_eval::Cancel;

use super::query::RunFlags;
use super::{print, program_error};

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
    let app = args.run.app(&args.db)?;
    let request = CypherRequest {
        query: args.query.clone(),
        params: binds_from_flags("cypher", "--param", &args.params)?,
        page: args.run.page(),
    };
    let out = app
        .cypher(&Call::plain("cypher"), &request, &Cancel::new())
        .map_err(program_error)?;
    print(&out, args.json)
}
